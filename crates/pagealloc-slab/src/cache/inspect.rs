//! Lookup by address, statistics (`/proc/slabinfo`) and the validator.

#[allow(clippy::wildcard_imports)]
use super::*;

impl<'a, E: EventSink, L: RawLock> KmemCache<'a, E, L> {
    /// The object at physical address `addr` (kernel `kfree`'s way from a pointer to its slab
    /// and index, with `check_valid_pointer`'s checks): refused when no slab of this cache
    /// holds the address, when it is not the start of an object, or when it lies in the
    /// leftover after the last object. The object may be free: freeing it tells.
    pub fn object_at(&self, addr: u64) -> Result<SlabObject, SlabError> {
        let pfn = Pfn(addr >> PAGE_SHIFT);
        // A slab is a buddy block, aligned to its order, and is of one of two orders: its
        // first frame is the address's frame aligned down to one of them.
        let slab = [self.layout.oo.order, self.layout.min.order]
            .into_iter()
            .find_map(|order| {
                let head = pfn.align_down(order);
                let slab = self.dir(head).lock().get(&head.0).cloned()?;
                (pfn.0 < slab.pfn.0 + (1u64 << slab.order.0)).then_some(slab)
            })
            .ok_or(SlabError::NotSlab { pfn })?;
        let offset = addr - slab.pfn.phys();
        let size = u64::from(self.layout.size);
        if offset % size != 0 {
            return Err(SlabError::Misaligned { slab: slab.pfn, offset, size: self.layout.size });
        }
        let index = offset / size;
        if index >= u64::from(slab.objects) {
            return Err(SlabError::BadIndex { slab: slab.pfn, index, objects: slab.objects });
        }
        Ok(SlabObject { slab: slab.pfn, index: index as u32, cache: self.id, serial: slab.serial })
    }

    /// The cache's `/proc/slabinfo` row and the exact counts beside it. A snapshot: exact
    /// when no call runs on the cache meanwhile.
    pub fn slabinfo(&self) -> SlabInfo {
        let l = &self.layout;
        let num_slabs: u64 = self.node.iter().map(|n| n.nr_slabs.load(Relaxed)).sum();
        let num_objs: u64 = self.node.iter().map(|n| n.total_objects.load(Relaxed)).sum();
        let free_on_nodes: u64 = self.node.iter().map(count_partial_free).sum();
        let slabs_on_cpus = self
            .cpu_slab
            .iter()
            .map(|c| {
                let c = c.slabs.lock();
                u64::from(c.slab.is_some()) + c.partial.len() as u64
            })
            .sum();
        let all = self.all_slabs();
        let objects_in_use = all.iter().map(|s| u64::from(s.state.lock().inuse)).sum();
        let pages = all.iter().map(|s| 1u64 << s.order.0).sum();
        SlabInfo {
            name: l.name.clone(),
            active_objs: num_objs.saturating_sub(free_on_nodes),
            num_objs,
            objsize: l.size,
            objperslab: l.oo.objects,
            pagesperslab: 1 << l.oo.order.0,
            active_slabs: num_slabs,
            num_slabs,
            objects_in_use,
            slabs_on_cpus,
            pages,
        }
    }

    /// Check every invariant of the cache's lists and slabs (for tests): each slab is where
    /// its `place` says and nowhere else, its freelists hold exactly its free objects, and the
    /// node counts match. Takes every lock, so it sees a consistent state even while other
    /// threads run.
    ///
    /// A slab marked `Discarded` may still be in the directory: it left its list under the
    /// list's lock, and leaves the directory and the node's counts (together, under the
    /// directory lock) once its discarder holds no list lock. The validator takes the
    /// directory and the counts in one snapshot, so such a slab is in both or in neither.
    pub fn validate(&self) -> Result<(), String> {
        let cpus: Vec<_> = self.cpu_slab.iter().map(|c| c.slabs.lock()).collect();
        let nodes: Vec<_> = self.node.iter().map(|n| n.list_lock.lock()).collect();
        let dir: Vec<_> = self.slabs.iter().map(|d| d.0.lock()).collect();
        let counts: Vec<(u64, u64)> = self
            .node
            .iter()
            .map(|n| (n.nr_slabs.load(Relaxed), n.total_objects.load(Relaxed)))
            .collect();
        let all: Vec<Arc<Slab<L>>> = dir.iter().flat_map(|d| d.values().cloned()).collect();
        drop(dir);
        let mut per_node = alloc::vec![(0u64, 0u64); self.node.len()];
        let mut listed = 0usize;
        for slab in &all {
            let st = slab.state.lock();
            check_slab(slab, &st)?;
            let entry = &mut per_node[slab.node.index()];
            entry.0 += 1;
            entry.1 += u64::from(slab.objects);
            let on_list = match st.place {
                Place::CpuSlab(c) => {
                    cpus[c.index()].slab.as_ref().is_some_and(|s| Arc::ptr_eq(s, slab))
                }
                Place::CpuPartial(c) => {
                    cpus[c.index()].partial.iter().any(|s| Arc::ptr_eq(s, slab))
                }
                Place::NodePartial(key) => {
                    nodes[slab.node.index()].list.get(&key).is_some_and(|s| Arc::ptr_eq(s, slab))
                }
                Place::Full => st.inuse == slab.objects,
                // On its way out (see above): on no list, and empty.
                Place::Discarded => st.inuse == 0,
            };
            if !on_list {
                return Err(format!("slab {} is not where it says: {:?}", slab.pfn, st.place));
            }
            listed += usize::from(!matches!(st.place, Place::Full | Place::Discarded));
            if matches!(st.place, Place::CpuPartial(_) | Place::NodePartial(_)) && st.nr_free() == 0
            {
                return Err(format!("slab {} is listed as partial but full", slab.pfn));
            }
        }
        let on_lists =
            cpus.iter().map(|c| usize::from(c.slab.is_some()) + c.partial.len()).sum::<usize>()
                + nodes.iter().map(|n| n.list.len()).sum::<usize>();
        if on_lists != listed {
            return Err(format!("{on_lists} list entries for {listed} listed slabs"));
        }
        for (i, &counted) in counts.iter().enumerate() {
            if counted != per_node[i] {
                return Err(format!("node {i}: counts {counted:?}, slabs hold {:?}", per_node[i]));
            }
        }
        Ok(())
    }

    /// Is `cpu` a CPU of this cache's page allocator?
    pub(super) fn check_cpu(&self, cpu: Cpu) -> Result<(), SlabError> {
        if self.pa.cpu(cpu.id()) == Some(cpu) {
            Ok(())
        } else {
            Err(SlabError::InvalidCpu(cpu.id()))
        }
    }
}

/// Free objects on a node's partial list (kernel `count_partial(n, count_free)`).
pub(super) fn count_partial_free<L: RawLock>(n: &KmemCacheNode<L>) -> u64 {
    let lists = n.list_lock.lock();
    lists.list.values().map(|s| s.state.lock().nr_free() as u64).sum()
}

/// One slab's own invariants: counts agree with the bitmap and the freelists hold each free
/// object once.
pub(super) fn check_slab<L: RawLock>(slab: &Slab<L>, st: &SlabState) -> Result<(), String> {
    let mut seen = alloc::vec![false; slab.objects as usize];
    for &i in st.freelist.iter().chain(st.cpu_freelist.iter()) {
        let Some(s) = seen.get_mut(i as usize) else {
            return Err(format!("slab {}: free object {i} out of range", slab.pfn));
        };
        if *s || st.is_allocated(i) {
            return Err(format!("slab {}: object {i} listed twice or allocated", slab.pfn));
        }
        *s = true;
    }
    if st.inuse as usize + st.nr_free() != slab.objects as usize {
        return Err(format!(
            "slab {}: {} in use + {} free != {} objects",
            slab.pfn,
            st.inuse,
            st.nr_free(),
            slab.objects
        ));
    }
    if !st.cpu_freelist.is_empty() && !matches!(st.place, Place::CpuSlab(_)) {
        return Err(format!("slab {}: a CPU freelist while {:?}", slab.pfn, st.place));
    }
    Ok(())
}

//! Free: the fast path into the CPU's active slab, full slabs onto the CPU's partial list,
//! empty ones off the node lists and back to the page allocator.

#[allow(clippy::wildcard_imports)]
use super::*;

impl<'a, E: EventSink, L: RawLock> KmemCache<'a, E, L> {
    /// Free an object on `cpu` (kernel `kmem_cache_free`). A refused free changes nothing.
    pub fn free(&self, cpu: Cpu, obj: SlabObject) -> Result<(), SlabError> {
        self.check_cpu(cpu)?;
        let slab = self.lookup(obj)?;
        loop {
            let next = self.free_quick(cpu, &slab, obj)?;
            let done = match next {
                FreeNext::Done => return Ok(()),
                FreeNext::ToCpuPartial => self.free_to_cpu_partial(cpu, &slab, obj)?,
                FreeNext::NodeList => self.free_on_node(cpu, &slab, obj)?,
            };
            if done {
                return Ok(());
            }
            // The slab moved between the two looks: look again.
        }
    }

    /// The slab of a handle, checked to be this cache's and still the same slab.
    pub(super) fn lookup(&self, obj: SlabObject) -> Result<Arc<Slab<L>>, SlabError> {
        if obj.cache != self.id {
            return Err(SlabError::ForeignObject { slab: obj.slab, index: obj.index });
        }
        let slab = self.dir(obj.slab).lock().get(&obj.slab.0).cloned();
        match slab {
            Some(slab) if slab.serial == obj.serial => {
                if obj.index >= slab.objects {
                    return Err(SlabError::BadIndex {
                        slab: obj.slab,
                        index: u64::from(obj.index),
                        objects: slab.objects,
                    });
                }
                Ok(slab)
            }
            // This cache's handle to a slab given back: it was empty then, so this object had
            // been freed.
            _ => Err(SlabError::DoubleFree { slab: obj.slab, index: obj.index }),
        }
    }

    /// The free as far as it goes with the slab lock alone.
    pub(super) fn free_quick(
        &self,
        cpu: Cpu,
        slab: &Slab<L>,
        obj: SlabObject,
    ) -> Result<FreeNext, SlabError> {
        let mut st = slab.state.lock();
        check_allocated(&st, obj)?;
        match st.place {
            Place::CpuSlab(c) if c == cpu.id() => {
                st.set_free(obj.index);
                st.cpu_freelist.push(obj.index);
                self.count(cpu.id(), SlabStat::FreeFastpath);
                Ok(FreeNext::Done)
            }
            Place::CpuSlab(_) | Place::CpuPartial(_) => {
                st.set_free(obj.index);
                st.freelist.push(obj.index);
                self.touch_slab_page(cpu.id(), obj.slab);
                self.count(cpu.id(), SlabStat::FreeSlowpath);
                self.count(cpu.id(), SlabStat::FreeFrozen);
                Ok(FreeNext::Done)
            }
            Place::NodePartial(_) if st.inuse > 1 => {
                st.set_free(obj.index);
                st.freelist.push(obj.index);
                self.touch_slab_page(cpu.id(), obj.slab);
                self.count(cpu.id(), SlabStat::FreeSlowpath);
                Ok(FreeNext::Done)
            }
            Place::Full if self.layout.has_cpu_partial => Ok(FreeNext::ToCpuPartial),
            Place::NodePartial(_) | Place::Full => Ok(FreeNext::NodeList),
            Place::Discarded => Err(SlabError::DoubleFree { slab: obj.slab, index: obj.index }),
        }
    }

    /// Free into a full slab and put it on the freeing CPU's partial list (kernel
    /// `put_cpu_partial` with drain), moving a full list to the node lists first. `false` if
    /// the slab is no longer full.
    pub(super) fn free_to_cpu_partial(
        &self,
        cpu: Cpu,
        slab: &Arc<Slab<L>>,
        obj: SlabObject,
    ) -> Result<bool, SlabError> {
        let mut discards = Discards::new();
        {
            let mut c = self.cpu_slab[cpu.id().index()].slabs.lock();
            {
                let mut st = slab.state.lock();
                check_allocated(&st, obj)?;
                if st.place != Place::Full {
                    return Ok(false);
                }
                st.set_free(obj.index);
                st.freelist.push(obj.index);
                st.place = Place::CpuPartial(cpu.id());
                self.touch_slab_page(cpu.id(), obj.slab);
            }
            if c.partial.len() as u32 >= self.layout.cpu_partial_slabs {
                let old = core::mem::take(&mut c.partial);
                self.put_partials(cpu.id(), old, &mut discards);
                self.count(cpu.id(), SlabStat::CpuPartialDrain);
            }
            c.partial.push(Arc::clone(slab));
        }
        self.count(cpu.id(), SlabStat::FreeSlowpath);
        self.count(cpu.id(), SlabStat::CpuPartialFree);
        self.discard_all(cpu, discards)?;
        Ok(true)
    }

    /// Free into a slab on its node's partial list that becomes empty, or into a full slab
    /// with per-CPU partial lists off (kernel `__slab_free`'s list work). `false` if the slab
    /// moved meanwhile.
    pub(super) fn free_on_node(
        &self,
        cpu: Cpu,
        slab: &Arc<Slab<L>>,
        obj: SlabObject,
    ) -> Result<bool, SlabError> {
        let n = &self.node[slab.node.index()];
        let discard = {
            let mut lists = n.list_lock.lock();
            let mut st = slab.state.lock();
            check_allocated(&st, obj)?;
            let key = match st.place {
                Place::NodePartial(key) => Some(key),
                Place::Full if !self.layout.has_cpu_partial => None,
                _ => return Ok(false),
            };
            st.set_free(obj.index);
            st.freelist.push(obj.index);
            self.touch_slab_page(cpu.id(), obj.slab);
            self.count(cpu.id(), SlabStat::FreeSlowpath);
            if st.inuse == 0 && lists.nr_partial() >= self.layout.min_partial {
                if let Some(key) = key {
                    lists.remove(key);
                    self.count(cpu.id(), SlabStat::FreeRemovePartial);
                }
                st.place = Place::Discarded;
                true
            } else {
                if key.is_none() {
                    lists.add(slab, &mut st, true);
                    self.count(cpu.id(), SlabStat::FreeAddPartial);
                }
                false
            }
        };
        if discard {
            self.discard_all(cpu, alloc::vec![Arc::clone(slab)])?;
        }
        Ok(true)
    }

    /// Move slabs taken off a per-CPU partial list to their nodes' lists, keeping aside the
    /// empty ones a node has enough of (kernel `__put_partials`). The list's head goes first.
    pub(super) fn put_partials(
        &self,
        cpu: CpuId,
        slabs: Vec<Arc<Slab<L>>>,
        discards: &mut Discards<L>,
    ) {
        for slab in slabs.into_iter().rev() {
            let mut lists = self.node[slab.node.index()].list_lock.lock();
            let mut st = slab.state.lock();
            self.touch_slab_page(cpu, slab.pfn);
            if st.inuse == 0 && lists.nr_partial() >= self.layout.min_partial {
                st.place = Place::Discarded;
                drop(st);
                self.count(cpu, SlabStat::DeactivateEmpty);
                discards.push(slab);
            } else {
                lists.add(&slab, &mut st, true);
                self.count(cpu, SlabStat::FreeAddPartial);
            }
        }
    }

    /// Take a CPU's active slab back to its node (kernel `deactivate_slab`): discarded if empty
    /// and the node has enough, listed if it has free objects (at the tail if other CPUs
    /// freed into it, so the node hands out the emptier ones later), else on no list.
    pub(super) fn deactivate_slab(
        &self,
        cpu: CpuId,
        slab: Arc<Slab<L>>,
        discards: &mut Discards<L>,
    ) {
        let mut lists = self.node[slab.node.index()].list_lock.lock();
        let mut st = slab.state.lock();
        self.touch_slab_page(cpu, slab.pfn);
        let remote_frees = st.unfreeze();
        if remote_frees {
            self.count(cpu, SlabStat::DeactivateRemoteFrees);
        }
        if st.inuse == 0 && lists.nr_partial() >= self.layout.min_partial {
            st.place = Place::Discarded;
            drop(st);
            self.count(cpu, SlabStat::DeactivateEmpty);
            discards.push(slab);
        } else if st.nr_free() > 0 {
            lists.add(&slab, &mut st, remote_frees);
            self.count(
                cpu,
                if remote_frees { SlabStat::DeactivateToTail } else { SlabStat::DeactivateToHead },
            );
        } else {
            st.place = Place::Full;
            self.count(cpu, SlabStat::DeactivateFull);
        }
    }

    /// Give slabs already marked `Discarded` back to the page allocator on `cpu` (kernel
    /// `discard_slab`): out of the directory and the node's counts, then `free_pages`. Called
    /// with no lock held.
    pub(super) fn discard_all(&self, cpu: Cpu, discards: Discards<L>) -> Result<(), SlabError> {
        let mut result = Ok(());
        for slab in discards {
            let n = &self.node[slab.node.index()];
            // Out of the directory and the node's counts together (see `new_slab`).
            let mut dir = self.dir(slab.pfn).lock();
            dir.remove(&slab.pfn.0);
            n.nr_slabs.fetch_sub(1, Relaxed);
            n.total_objects.fetch_sub(u64::from(slab.objects), Relaxed);
            drop(dir);
            self.count(cpu.id(), SlabStat::FreeSlab);
            if let Err(e) = self.pa.free_pages(cpu, slab.pfn, slab.order) {
                result = Err(SlabError::PageFree(e));
            }
        }
        result
    }
}

/// Refuse a free of an object that is not allocated now.
pub(super) fn check_allocated(st: &SlabState, obj: SlabObject) -> Result<(), SlabError> {
    if st.place == Place::Discarded || !st.is_allocated(obj.index) {
        return Err(SlabError::DoubleFree { slab: obj.slab, index: obj.index });
    }
    Ok(())
}

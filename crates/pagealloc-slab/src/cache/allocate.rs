//! Allocation: the active slab, the CPU's and the nodes' partial lists, a new slab.

#[allow(clippy::wildcard_imports)]
use super::*;

impl<'a, E: EventSink, L: RawLock> KmemCache<'a, E, L> {
    /// Allocate an object on `cpu` (kernel `kmem_cache_alloc`). The caller's zone and
    /// mobility bits are replaced by the cache's; the rest (reclaim, `__GFP_HIGH`, …) goes to
    /// the page allocator when a new slab is needed.
    pub fn alloc(&self, cpu: Cpu, gfp: Gfp) -> Result<SlabObject, SlabError> {
        self.alloc_mpol(cpu, gfp, None)
    }

    /// [`alloc`](Self::alloc) for a task whose memory policy binds it to `bind` (`numactl
    /// -m`): a new slab's pages come from that node's zonelist, as the kernel's
    /// `alloc_slab_page` → `alloc_pages` follows the calling task's `MPOL_BIND` policy (not
    /// in interrupt context, no `__GFP_THISNODE`). The partial lists are searched as for any
    /// allocation, the CPU's own node first. `None`: the CPU's node, as `alloc`.
    pub fn alloc_mpol(
        &self,
        cpu: Cpu,
        gfp: Gfp,
        bind: Option<NodeId>,
    ) -> Result<SlabObject, SlabError> {
        self.check_cpu(cpu)?;
        let mut c = self.cpu_slab[cpu.id().index()].slabs.lock();
        if let Some(slab) = &c.slab {
            if let Some(i) = slab.state.lock().take_cpu_object() {
                self.count(cpu.id(), SlabStat::AllocFastpath);
                return Ok(self.handle(slab, i));
            }
        }
        self.count(cpu.id(), SlabStat::AllocSlowpath);
        let (slab, i) = self.slab_alloc_slow(cpu, &mut c, gfp, bind)?;
        Ok(self.handle(&slab, i))
    }

    /// The slow path (kernel `___slab_alloc`): refill from remote frees, else replace the
    /// active slab. Called with the CPU lock held.
    pub(super) fn slab_alloc_slow(
        &self,
        cpu: Cpu,
        c: &mut KmemCacheCpu<L>,
        gfp: Gfp,
        bind: Option<NodeId>,
    ) -> Result<(Arc<Slab<L>>, u32), SlabError> {
        if let Some(slab) = c.slab.take() {
            let mut st = slab.state.lock();
            self.touch_slab_page(cpu.id(), slab.pfn);
            st.refill_cpu_freelist();
            if let Some(i) = st.take_cpu_object() {
                drop(st);
                self.count(cpu.id(), SlabStat::AllocRefill);
                c.slab = Some(Arc::clone(&slab));
                return Ok((slab, i));
            }
            // Nothing free: the slab joins no list until an object comes back.
            st.place = Place::Full;
            self.count(cpu.id(), SlabStat::DeactivateBypass);
        }
        let slab = match self.take_cpu_partial(cpu.id(), c) {
            Some(slab) => slab,
            None => match self.get_partial(cpu, c) {
                Some(slab) => slab,
                None => self.new_slab(cpu, gfp, bind)?,
            },
        };
        let mut st = slab.state.lock();
        self.touch_slab_page(cpu.id(), slab.pfn);
        st.freeze(cpu.id());
        let i = st.take_cpu_object();
        drop(st);
        c.slab = Some(Arc::clone(&slab));
        // Every slab reaching this point has a free object: a new slab is empty, and a
        // listed slab was listed with one and frees only add. Were it otherwise, the next
        // allocation would find this slab full and move on; this one reports no memory
        // rather than panic.
        i.map(|i| (slab, i)).ok_or(SlabError::Alloc(pagealloc::AllocError::OutOfMemory {
            order: self.layout.oo.order,
        }))
    }

    /// The head of the CPU's partial list, if any.
    pub(super) fn take_cpu_partial(
        &self,
        cpu: CpuId,
        c: &mut KmemCacheCpu<L>,
    ) -> Option<Arc<Slab<L>>> {
        let slab = c.partial.pop()?;
        self.count(cpu, SlabStat::CpuPartialAlloc);
        Some(slab)
    }

    /// A slab from the CPU's node's partial list, else from another node's if that node has
    /// more than `min_partial` (kernel `get_partial`, `get_any_partial` without its random
    /// `remote_node_defrag_ratio` skip).
    pub(super) fn get_partial(&self, cpu: Cpu, c: &mut KmemCacheCpu<L>) -> Option<Arc<Slab<L>>> {
        let local = cpu.node().index();
        if let Some(slab) = self.get_partial_node(cpu, c, local, 0) {
            return Some(slab);
        }
        (0..self.node.len())
            .filter(|&n| n != local)
            .find_map(|n| self.get_partial_node(cpu, c, n, self.layout.min_partial + 1))
    }

    /// Take the head of node `n`'s partial list for the CPU and, with per-CPU partial lists
    /// on, more slabs onto the CPU's list until it holds over half its cap (kernel
    /// `get_partial_node`). Nothing when the list holds fewer than `at_least` slabs.
    pub(super) fn get_partial_node(
        &self,
        cpu: Cpu,
        c: &mut KmemCacheCpu<L>,
        n: usize,
        at_least: u32,
    ) -> Option<Arc<Slab<L>>> {
        let mut lists = self.node[n].list_lock.lock();
        if lists.nr_partial() == 0 || lists.nr_partial() < at_least {
            return None;
        }
        let first = lists.pop_head()?;
        first.state.lock().place = Place::CpuSlab(cpu.id());
        self.count(cpu.id(), SlabStat::AllocFromPartial);
        let mut moved = 0;
        while self.layout.has_cpu_partial && moved <= self.layout.cpu_partial_slabs / 2 {
            let Some(slab) = lists.pop_head() else { break };
            slab.state.lock().place = Place::CpuPartial(cpu.id());
            self.touch_slab_page(cpu.id(), slab.pfn);
            c.partial.push(slab);
            self.count(cpu.id(), SlabStat::CpuPartialNode);
            moved += 1;
        }
        Some(first)
    }

    /// Allocate and register a new slab (kernel `allocate_slab`): the preferred order without
    /// warning (and without direct reclaim above the fallback order), then the fallback order
    /// with the caller's flags.
    pub(super) fn new_slab(
        &self,
        cpu: Cpu,
        gfp: Gfp,
        bind: Option<NodeId>,
    ) -> Result<Arc<Slab<L>>, SlabError> {
        let l = &self.layout;
        let flags = (gfp & !Gfp(CALLER_MASKED)) | l.allocflags;
        let mut first = flags | Gfp::NOWARN;
        if first.contains(Gfp::DIRECT_RECLAIM) && l.oo.order > l.min.order {
            first = (first | Gfp::NOMEMALLOC) & !Gfp::RECLAIM;
        }
        let pages = |gfp: Gfp, order| match bind {
            Some(node) => self.pa.alloc_pages_node(cpu, node, gfp, order),
            None => self.pa.alloc_pages(cpu, gfp, order),
        };
        let (pfn, oo) = match pages(comp(first, l.oo), l.oo.order) {
            Ok(pfn) => (pfn, l.oo),
            Err(_) => {
                let pfn = pages(comp(flags, l.min), l.min.order)?;
                self.count(cpu.id(), SlabStat::OrderFallback);
                (pfn, l.min)
            }
        };
        let node = self.pa.zone_of(pfn).map_or(cpu.node(), |z| z.node());
        let serial = self.next_serial.fetch_add(1, Relaxed);
        let slab = Arc::new(Slab::new(pfn, oo.order, oo.objects, node, serial));
        let n = &self.node[node.index()];
        // Into the directory and the node's counts together, under the directory lock, so a
        // validator's snapshot of the two agrees.
        let mut dir = self.dir(pfn).lock();
        n.nr_slabs.fetch_add(1, Relaxed);
        n.total_objects.fetch_add(u64::from(oo.objects), Relaxed);
        dir.insert(pfn.0, Arc::clone(&slab));
        drop(dir);
        self.count(cpu.id(), SlabStat::AllocSlab);
        Ok(slab)
    }

    pub(super) fn handle(&self, slab: &Slab<L>, index: u32) -> SlabObject {
        SlabObject { slab: slab.pfn, index, cache: self.id, serial: slab.serial }
    }
}

/// Caller GFP bits a slab allocation replaces with the cache's: zones, mobility and
/// `__GFP_COMP` (the kernel strips `__GFP_DMA32 | __GFP_HIGHMEM` from slab requests and sets
/// the rest from the cache).
pub(super) const CALLER_MASKED: u32 =
    Gfp::DMA.0 | Gfp::DMA32.0 | Gfp::HIGHMEM.0 | Gfp::MOVABLE.0 | Gfp::RECLAIMABLE.0 | Gfp::COMP.0;

/// `gfp` with `__GFP_COMP` for a slab above order 0 (slabs are compound pages).
pub(super) fn comp(gfp: Gfp, oo: OrderObjects) -> Gfp {
    if oo.order.0 > 0 {
        gfp | Gfp::COMP
    } else {
        gfp
    }
}

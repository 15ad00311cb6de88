//! Flushing a CPU's slabs to the nodes, shrinking and shutting a cache down.

#[allow(clippy::wildcard_imports)]
use super::*;

impl<'a, E: EventSink, L: RawLock> KmemCache<'a, E, L> {
    /// Take CPU `id`'s active slab and partial list back to the node lists (kernel
    /// `flush_cpu_slab`, what a CPU going offline or a shrink does); empty slabs beyond
    /// `min_partial` are given back through that CPU's pageset, as the kernel's per-CPU flush
    /// work would.
    pub fn flush_cpu(&self, id: CpuId) -> Result<(), SlabError> {
        let cpu = self.pa.cpu(id).ok_or(SlabError::InvalidCpu(id))?;
        let mut discards = Discards::new();
        {
            let mut c = self.cpu_slab[id.index()].slabs.lock();
            if let Some(slab) = c.slab.take() {
                self.deactivate_slab(id, slab, &mut discards);
                self.count(id, SlabStat::CpuslabFlush);
            }
            let partial = core::mem::take(&mut c.partial);
            self.put_partials(id, partial, &mut discards);
        }
        self.discard_all(cpu, discards)
    }

    /// Give back every empty slab (kernel `kmem_cache_shrink`): flush every CPU, then discard
    /// the empty slabs on each node's partial list whatever `min_partial` says, and order the
    /// rest fullest first, so allocations fill them and the emptiest may drain. The node
    /// lists' discards go through `caller`'s pageset.
    pub fn shrink(&self, caller: Cpu) -> Result<(), SlabError> {
        self.check_cpu(caller)?;
        for c in 0..self.cpu_slab.len() {
            self.flush_cpu(CpuId(c as u32))?;
        }
        for n in self.node.iter() {
            let discards = self.shrink_node(n);
            self.discard_all(caller, discards)?;
        }
        Ok(())
    }

    /// Take the empty slabs off a node's partial list and sort the rest by free objects
    /// (at most [`SHRINK_PROMOTE_MAX`] told apart; the order within a count is kept).
    pub(super) fn shrink_node(&self, n: &KmemCacheNode<L>) -> Discards<L> {
        let mut lists = n.list_lock.lock();
        let mut keep = Vec::new();
        let mut discards = Discards::new();
        while let Some(slab) = lists.pop_head() {
            let mut st = slab.state.lock();
            if st.inuse == 0 {
                st.place = Place::Discarded;
                drop(st);
                discards.push(slab);
            } else {
                let rank = st.nr_free().min(SHRINK_PROMOTE_MAX + 1);
                drop(st);
                keep.push((rank, slab));
            }
        }
        keep.sort_by_key(|&(rank, _)| rank);
        for (_, slab) in keep {
            let mut st = slab.state.lock();
            lists.add(&slab, &mut st, true);
        }
        discards
    }

    /// Shrink, then report whether anything is still allocated (kernel `kmem_cache_destroy`'s
    /// check, without destroying: the cache stays usable).
    pub fn shutdown(&self, caller: Cpu) -> Result<(), SlabError> {
        self.shrink(caller)?;
        let objects = self.slabinfo().objects_in_use;
        if objects > 0 {
            return Err(SlabError::Busy { objects });
        }
        Ok(())
    }
}

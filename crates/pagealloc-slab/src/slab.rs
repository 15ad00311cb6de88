//! One slab (kernel `struct slab`): a block of 2^order frames from the page allocator cut into
//! equal objects, its freelist, and where it is (a CPU's active slab, a per-CPU partial
//! list, a node partial list, no list because it is full, or given back).
//!
//! Where it is and its freelist while it is not active are behind the slab's own lock
//! ([`Slab::state`]), which plays the part of the kernel's `cmpxchg_double` on `freelist` +
//! `counters` on the slow paths: `place` changes only with it held, so a thread holding it
//! knows which list the slab is on and that it stays there. The fast paths do not take it:
//! they use the slab's slot (`slot.rs`), its allocation bits and remote freelist.

use alloc::vec::Vec;

use pagealloc::lock_api::Mutex;
use pagealloc::RawLock;
use pagealloc::{CpuId, NodeId, Order, Pfn};

use crate::slot::{Held, SlotSlab};

/// Where a slab is. The lock of the list it is on is needed to change this, besides the
/// slab's own lock (see the lock order in `cache/mod.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// The CPU's active slab (kernel `c->slab`, "frozen").
    CpuSlab(CpuId),
    /// On the CPU's partial list — or just taken off it by a drain that is moving it to the
    /// node lists: frees into it change no list either way.
    CpuPartial(CpuId),
    /// On its node's partial list, under this key of the list's order.
    NodePartial(i64),
    /// Every object allocated and not active on any CPU: on no list (SLUB keeps no full list
    /// without debugging).
    Full,
    /// Given back to the page allocator; a stale reference only.
    Discarded,
}

/// What a slab's lock guards. While a CPU holds the slab (as its active slab or on its
/// partial list) frees go onto the slot's remote freelist ([`SlotSlab`]) and `inuse` is set
/// again when the CPU lets go; while it is the active slab, its other free objects are on the
/// CPU's freelist ([`KmemCacheCpu`](crate::cache)) and `freelist` is empty.
#[derive(Debug)]
pub(crate) struct SlabState {
    pub(crate) place: Place,
    /// Objects not on `freelist` (exact while no CPU holds the slab: allocated, or being
    /// freed by a free that has cleared the object's bit and waits for this lock).
    pub(crate) inuse: u32,
    /// Free objects (kernel `slab->freelist`) but those freed while a CPU holds the slab.
    pub(crate) freelist: Vec<u32>,
}

impl SlabState {
    /// Put object `i`, whose bit a free has cleared, on the freelist.
    pub(crate) fn list_free(&mut self, i: u32) {
        self.freelist.push(i);
        self.inuse -= 1;
    }

    /// Make the slab `cpu`'s active slab (kernel: freezing moves `slab->freelist` to
    /// `c->freelist`); returns the CPU's new freelist.
    pub(crate) fn freeze(&mut self, cpu: CpuId, slot: &SlotSlab) -> Vec<u32> {
        self.place = Place::CpuSlab(cpu);
        let mut list = core::mem::take(&mut self.freelist);
        slot.hold(cpu, Held::Active, &mut list);
        list
    }

    /// Put the slab on `cpu`'s partial list: frees push onto the slot's remote freelist from
    /// now on, with no lock (SLUB since 6.8 leaves such a slab unfrozen; its frees are a
    /// `cmpxchg` on `slab->freelist` all the same).
    pub(crate) fn hold_partial(&mut self, cpu: CpuId, slot: &SlotSlab) {
        self.place = Place::CpuPartial(cpu);
        slot.hold(cpu, Held::Partial, &mut self.freelist);
    }

    /// Take the slab off a CPU's partial list: the objects freed meanwhile join the freelist
    /// after the others, as they would have one by one, and `inuse` is exact again.
    pub(crate) fn release_partial(&mut self, slot: &SlotSlab, objects: u32) {
        slot.release(&mut self.freelist);
        self.inuse = objects - self.freelist.len() as u32;
    }

    /// Take the slab off its CPU with the CPU's freelist `cpu_freelist` (deactivation): the
    /// remote frees first, then the CPU's list, so the CPU's most recent free is the next
    /// object out. Returns whether other CPUs freed into the slab meanwhile.
    pub(crate) fn unfreeze(
        &mut self,
        slot: &SlotSlab,
        cpu_freelist: Vec<u32>,
        objects: u32,
    ) -> bool {
        slot.release(&mut self.freelist);
        let remote_frees = !self.freelist.is_empty();
        self.freelist.extend(cpu_freelist);
        self.inuse = objects - self.freelist.len() as u32;
        remote_frees
    }

    /// Free objects on the freelist (all of them unless the slab is active).
    pub(crate) fn nr_free(&self) -> usize {
        self.freelist.len()
    }
}

/// One slab. The fields outside `state` never change.
#[derive(Debug)]
pub(crate) struct Slab<L: RawLock> {
    /// First frame.
    pub(crate) pfn: Pfn,
    /// Its order (the cache's preferred order, or the fallback one).
    pub(crate) order: Order,
    /// Objects it holds.
    pub(crate) objects: u32,
    /// The node its frames are on: whose partial list it joins.
    pub(crate) node: NodeId,
    /// Unique in its cache: tells a handle to this slab from one to an earlier slab at the
    /// same frames or in the same slot.
    pub(crate) serial: u64,
    /// Its slot in the cache's [`SlotTable`](crate::slot::SlotTable).
    pub(crate) slot: u32,
    pub(crate) state: Mutex<L, SlabState>,
}

impl<L: RawLock> Slab<L> {
    /// A new slab with every object free, in index order (object 0 is handed out first).
    pub(crate) fn new(
        pfn: Pfn,
        order: Order,
        objects: u32,
        node: NodeId,
        serial: u64,
        slot: u32,
    ) -> Slab<L> {
        let state =
            SlabState { place: Place::Full, inuse: 0, freelist: (0..objects).rev().collect() };
        Slab { pfn, order, objects, node, serial, slot, state: Mutex::new(state) }
    }

    /// The tag its slot's words carry (see `slot.rs`).
    pub(crate) fn tag(&self) -> u32 {
        self.serial as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slot::{Push, SlotTable};

    #[test]
    fn objects_go_out_in_index_order_and_come_back() {
        let slots = SlotTable::new(70);
        let slot = slots.make(0);
        slot.init(1, 70);
        let slab = Slab::<pagealloc::RawSpinLock>::new(Pfn(8), Order(1), 70, NodeId(0), 1, 0);
        let mut st = slab.state.lock();
        let mut cpu_list = st.freeze(CpuId(0), slot);
        assert_eq!(st.place, Place::CpuSlab(CpuId(0)));
        let (a, b) = (cpu_list.pop().unwrap(), cpu_list.pop().unwrap());
        assert_eq!((a, b), (0, 1));
        slot.mark_allocated(a);
        slot.mark_allocated(b);
        assert!(slot.is_allocated(1) && !slot.is_allocated(69));
        assert!(slot.claim(slab.tag(), 1));
        assert!(matches!(slot.push_remote(1, CpuId(1)), Push::Done));
        assert!(st.unfreeze(slot, cpu_list, 70));
        assert_eq!((st.inuse, st.nr_free()), (1, 69));
        assert_eq!(st.freelist[0], 1, "the remote free comes first, then the CPU's list");
    }
}

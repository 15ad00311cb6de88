//! One slab (kernel `struct slab`): a block of 2^order frames from the page allocator cut into
//! equal objects, its two freelists, and where it is (a CPU's active slab, a per-CPU partial
//! list, a node partial list, no list because it is full, or given back).
//!
//! Everything that changes is behind the slab's own lock ([`Slab::state`]), which plays the
//! part of the kernel's `cmpxchg_double` on `freelist` + `counters`: `place` changes only with
//! it held, so a thread holding it knows which list the slab is on and that it stays there.

use alloc::boxed::Box;
use alloc::vec::Vec;

use pagealloc::lock_api::Mutex;
use pagealloc::RawLock;
use pagealloc::{CpuId, NodeId, Order, Pfn};

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

/// What a slab's lock guards.
#[derive(Debug)]
pub(crate) struct SlabState {
    pub(crate) place: Place,
    /// Objects allocated (kernel `inuse` counts the CPU freelist too while frozen; this is the
    /// exact count).
    pub(crate) inuse: u32,
    /// One bit per object, set while it is allocated: what makes a double free visible.
    allocated: Box<[u64]>,
    /// Free objects the active CPU takes without touching `freelist` (kernel `c->freelist`).
    /// Empty unless `place` is `CpuSlab`.
    pub(crate) cpu_freelist: Vec<u32>,
    /// Free objects (kernel `slab->freelist`): all of them when the slab is on a list, the
    /// ones other CPUs freed when it is active.
    pub(crate) freelist: Vec<u32>,
}

impl SlabState {
    /// Is object `i` allocated?
    pub(crate) fn is_allocated(&self, i: u32) -> bool {
        self.allocated[(i / 64) as usize] & (1 << (i % 64)) != 0
    }

    /// Mark object `i` allocated (it was just taken off a freelist).
    pub(crate) fn set_allocated(&mut self, i: u32) {
        self.allocated[(i / 64) as usize] |= 1 << (i % 64);
        self.inuse += 1;
    }

    /// Mark object `i` free; the caller puts it on a freelist.
    pub(crate) fn set_free(&mut self, i: u32) {
        self.allocated[(i / 64) as usize] &= !(1 << (i % 64));
        self.inuse -= 1;
    }

    /// Take an object from the CPU freelist.
    pub(crate) fn take_cpu_object(&mut self) -> Option<u32> {
        let i = self.cpu_freelist.pop()?;
        self.set_allocated(i);
        Some(i)
    }

    /// Make the slab `cpu`'s active slab: its free objects become the CPU's freelist
    /// (kernel: freezing moves `slab->freelist` to `c->freelist`).
    pub(crate) fn freeze(&mut self, cpu: CpuId) {
        self.place = Place::CpuSlab(cpu);
        self.refill_cpu_freelist();
    }

    /// Move the objects other CPUs freed to the CPU freelist (kernel `get_freelist`).
    pub(crate) fn refill_cpu_freelist(&mut self) {
        if self.cpu_freelist.is_empty() {
            core::mem::swap(&mut self.cpu_freelist, &mut self.freelist);
        } else {
            self.cpu_freelist.append(&mut self.freelist);
        }
    }

    /// Give the CPU freelist back to the slab (deactivation); returns whether the slab had
    /// objects freed by other CPUs meanwhile.
    pub(crate) fn unfreeze(&mut self) -> bool {
        let remote_frees = !self.freelist.is_empty();
        self.freelist.append(&mut self.cpu_freelist);
        remote_frees
    }

    /// Free objects.
    pub(crate) fn nr_free(&self) -> usize {
        self.freelist.len() + self.cpu_freelist.len()
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
    /// same frames.
    pub(crate) serial: u64,
    pub(crate) state: Mutex<L, SlabState>,
}

impl<L: RawLock> Slab<L> {
    /// A new slab with every object free, in index order (object 0 is handed out first).
    pub(crate) fn new(pfn: Pfn, order: Order, objects: u32, node: NodeId, serial: u64) -> Slab<L> {
        let words = objects.div_ceil(64) as usize;
        let state = SlabState {
            place: Place::Full,
            inuse: 0,
            allocated: alloc::vec![0u64; words].into_boxed_slice(),
            cpu_freelist: Vec::new(),
            freelist: (0..objects).rev().collect(),
        };
        Slab { pfn, order, objects, node, serial, state: Mutex::new(state) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_go_out_in_index_order_and_come_back() {
        let slab = Slab::<pagealloc::RawSpinLock>::new(Pfn(8), Order(1), 70, NodeId(0), 1);
        let mut st = slab.state.lock();
        st.freeze(CpuId(0));
        assert_eq!(st.place, Place::CpuSlab(CpuId(0)));
        let a = st.take_cpu_object().unwrap();
        let b = st.take_cpu_object().unwrap();
        assert_eq!((a, b), (0, 1));
        assert!(st.is_allocated(1) && !st.is_allocated(69));
        st.set_free(1);
        st.freelist.push(1);
        assert!(st.unfreeze());
        assert_eq!((st.inuse, st.nr_free()), (1, 69));
    }
}

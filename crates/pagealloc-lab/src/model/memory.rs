//! Each node's memory as a resource that every CPU's cold page writes share.
//!
//! A core writes a cold page at its own streaming rate (`write_dram_gbps`), but a node's
//! memory controllers move only so many bytes a second for all its cores together
//! (`node_rw_gbps`). This is a calendar of that capacity per node: virtual time cut into
//! buckets of [`BUCKET_PS`], each able to take [`BUCKET_PS`] of memory time; a write of cold
//! pages at time `t` takes what it needs from `t`'s bucket on, spilling into later buckets
//! when earlier writes filled them, and is done when its last part is. The model steps its
//! CPUs in clock order but a step runs its CPU's clock ahead, so writes are booked a little
//! out of time order: a calendar lets a write use the capacity at its own time even when a
//! later one was booked first, which a single "free at" clock does not (it made every early
//! write queue behind the latest booking: a what-if with a bandwidth ten times any machine's
//! still lost 18 % of page_fault1's faults at 12 processes).
//!
//! Buckets live in a ring of [`BUCKETS`] (65 ms of virtual time); a write at a time whose
//! bucket the ring has already reused for a later one (more than that behind the latest
//! booking) takes no capacity. State is in atomics used with `Relaxed` loads and stores only,
//! as the rest of the sink's (the model drives the allocator from one thread).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One bucket of the calendar: 1 µs of virtual time.
pub const BUCKET_PS: u64 = 1_000_000;
/// Buckets in the ring.
pub const BUCKETS: u64 = 1 << 16;
/// Bits of a bucket's word that hold the memory time booked in it (up to [`BUCKET_PS`]).
const USED_BITS: u32 = 20;
const USED_MASK: u64 = (1 << USED_BITS) - 1;

/// One node's calendar.
#[derive(Debug)]
pub struct NodeMemory {
    /// Per bucket: `(its number + 1) << USED_BITS | memory time booked in it (ps)`; a word
    /// whose number is not the bucket's is an older bucket's, and counts as empty.
    buckets: Box<[AtomicU64]>,
    /// The latest bucket any write reached.
    newest: AtomicU64,
}

impl Default for NodeMemory {
    fn default() -> NodeMemory {
        NodeMemory { buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(), newest: 0.into() }
    }
}

impl NodeMemory {
    /// A write that needs `need` ps of this node's memory, issued at `t` (ps): when it is
    /// done (at least `t + need`).
    pub fn book(&self, t: u64, need: u64) -> u64 {
        let mut k = t / BUCKET_PS;
        let newest = self.newest.load(Relaxed);
        if k + BUCKETS <= newest {
            return t + need;
        }
        let mut left = need;
        loop {
            let slot = &self.buckets[(k % BUCKETS) as usize];
            let word = slot.load(Relaxed);
            let used = if word >> USED_BITS == k + 1 { word & USED_MASK } else { 0 };
            let take = left.min(BUCKET_PS - used);
            slot.store((k + 1) << USED_BITS | (used + take), Relaxed);
            left -= take;
            if left == 0 {
                self.newest.store(newest.max(k), Relaxed);
                return (t + need).max(k * BUCKET_PS + used + take);
            }
            k += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_memory_takes_a_write_in_its_own_time() {
        let m = NodeMemory::default();
        assert_eq!(m.book(5_000_000, 80_000), 5_080_000);
        // Another write in the same microsecond finds room beside it.
        assert_eq!(m.book(5_100_000, 80_000), 5_180_000);
    }

    #[test]
    fn writes_beyond_the_capacity_spill_into_later_buckets() {
        let m = NodeMemory::default();
        // Thirteen writes of 80 ns at the start of one microsecond: 1 040 ns of memory time,
        // 40 ns more than the bucket holds, so the last one is done 40 ns into the next.
        let done: Vec<u64> = (0..13).map(|_| m.book(0, 80_000)).collect();
        assert_eq!(done[11], 960_000);
        assert_eq!(done[12], 1_040_000);
        // A write that arrives later in the second microsecond queues behind the spill only
        // if the bucket is full: it is not.
        assert_eq!(m.book(1_500_000, 80_000), 1_580_000);
    }

    #[test]
    fn an_early_write_booked_late_uses_the_capacity_of_its_own_time() {
        let m = NodeMemory::default();
        // A CPU ran ahead and booked a full bucket at 10 µs.
        m.book(10_000_000, BUCKET_PS);
        // One still at 2 µs is not held behind it.
        assert_eq!(m.book(2_000_000, 80_000), 2_080_000);
        // One at 10 µs waits for the next bucket.
        assert_eq!(m.book(10_000_000, 80_000), 11_080_000);
    }

    #[test]
    fn a_write_older_than_the_ring_takes_no_capacity_and_disturbs_nothing() {
        let m = NodeMemory::default();
        let far = (BUCKETS + 10) * BUCKET_PS;
        m.book(far, 80_000);
        // Bucket 9 shares its slot with a bucket the ring has moved past: ignored.
        assert_eq!(m.book(9 * BUCKET_PS, BUCKET_PS), 10 * BUCKET_PS);
        assert_eq!(m.book(far, 80_000), far + 160_000, "the later bucket kept its booking");
    }
}

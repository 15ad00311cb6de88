//! Figures several CPUs' steps update, kept per CPU so that real threads do not share them.
//!
//! On the real runner two threads adding to one atomic counter, or raising one atomic
//! maximum, on every step move that counter's cache line between the host's cores each time:
//! a cost of the lab's own bookkeeping, not of anything a kernel does, which showed up in the
//! real steps' time beyond their allocator calls and touches. Each CPU here updates its own
//! slot, on lines of its own; readers (progress, metrics) combine the slots. The model, which
//! runs one step at a time, gets the same sums and maxima.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A value alone on a 128-byte pair of cache lines. Intel cores fetch lines in aligned pairs
/// (the L2 "spatial prefetcher" completes the 128-byte pair of every line it fetches: Intel
/// 64 and IA-32 Architectures Optimization Reference Manual, "Data Prefetch to the L2"), so
/// two threads writing neighbouring 64-byte lines still contend.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct Padded<T>(pub T);

/// Slots of a [`Tally`] or [`Latest`]: CPU `c` uses slot `c % SLOTS`. More real threads than
/// this only share slots (still correct); the model uses one thread whatever its CPU count.
const SLOTS: usize = 64;

/// One slot per CPU, each on lines of its own.
#[derive(Debug)]
struct Slots(Box<[Padded<AtomicU64>]>);

impl Default for Slots {
    fn default() -> Slots {
        Slots((0..SLOTS).map(|_| Padded(AtomicU64::new(0))).collect())
    }
}

impl Slots {
    fn slot(&self, cpu: u32) -> &AtomicU64 {
        &self.0[cpu as usize % SLOTS].0
    }

    fn slot_mut(&mut self, cpu: u32) -> &mut u64 {
        self.0[cpu as usize % SLOTS].0.get_mut()
    }

    fn values(&self) -> impl Iterator<Item = u64> + '_ {
        self.0.iter().map(|s| s.0.load(Relaxed))
    }
}

/// A count several CPUs add to (messages, packets, faults): their sum when read.
#[derive(Debug, Default)]
pub struct Tally(Slots);

impl Tally {
    /// Count `n` on `cpu`'s slot.
    pub fn add(&self, cpu: u32, n: u64) {
        self.0.slot(cpu).fetch_add(n, Relaxed);
    }

    /// The count over every CPU. Exact once the steps have stopped; during a run, a sum of
    /// slots read one after another, as a kernel's per-CPU counters are.
    pub fn get(&self) -> u64 {
        self.0.values().sum()
    }
}

/// The latest virtual time any CPU's step reached (for `Workload::progress`).
#[derive(Debug, Default)]
pub struct Latest(Slots);

impl Latest {
    /// `cpu`'s step is at `now`.
    pub fn note(&self, cpu: u32, now: u64) {
        self.0.slot(cpu).fetch_max(now, Relaxed);
    }

    /// [`note`](Self::note) for a caller that owns the workload (the model's step).
    pub fn note_mut(&mut self, cpu: u32, now: u64) {
        let slot = self.0.slot_mut(cpu);
        *slot = (*slot).max(now);
    }

    /// The latest time over every CPU.
    pub fn get(&self) -> u64 {
        self.0.values().max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_sum_and_latest_is_the_maximum_over_cpus() {
        let t = Tally::default();
        t.add(0, 3);
        t.add(1, 4);
        t.add(SLOTS as u32 + 1, 5); // shares CPU 1's slot
        assert_eq!(t.get(), 12);
        let mut l = Latest::default();
        l.note(0, 10);
        l.note(1, 7);
        l.note(0, 9); // another CPU sharing slot 0 behind it: the maximum stays
        l.note_mut(2, 8);
        assert_eq!(l.get(), 10);
        assert_eq!(Latest::default().get(), 0);
    }

    #[test]
    fn each_slot_is_on_lines_of_its_own() {
        let t = Tally::default();
        let a = t.0.slot(0) as *const AtomicU64 as usize;
        let b = t.0.slot(1) as *const AtomicU64 as usize;
        assert_eq!((b - a, a % 128), (128, 0));
    }
}

//! The lines a call has prefetched, with when each arrives, in prefetch order.
//!
//! A bulk free prefetches one buddy frame per page it frees and then touches them in about
//! the same order, so a touch's search from the oldest entry ends at once. The first
//! [`SLOTS`] entries of a call sit in a fixed array of atomics used with `Relaxed` loads and
//! stores, as the rest of the sink's state is (the model drives the allocator from one thread;
//! an `EventSink` must be `Sync`): the list behind a `Mutex` it replaces spent two atomic
//! read-modify-writes per prefetch, per search and per call's reset. A call that prefetches
//! more spills the rest, in order, to such a list, so the answers are those of one list.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// Entries kept in the array; a call that prefetches more spills to the list.
pub const SLOTS: usize = 512;
/// The key of an entry already taken (no line's key: see [`Prefetches::push`]).
const TAKEN: u64 = u64::MAX;

/// One entry: a line's key and when it arrives (ps).
#[derive(Debug, Default)]
struct Slot {
    key: AtomicU64,
    ready: AtomicU64,
}

/// The running call's prefetched lines, oldest first.
#[derive(Debug)]
pub struct Prefetches {
    slots: Box<[Slot]>,
    /// Slots used in this call (`0..used`).
    used: AtomicU32,
    /// Every slot before this one is taken: a search starts here.
    head: AtomicU32,
    /// Entries not yet taken, in the slots and the spill list together.
    live: AtomicU32,
    /// Entries past the slots, oldest first.
    spill: Mutex<VecDeque<(u64, u64)>>,
    /// 1 once this call has spilled, so a search that misses the slots knows to look there.
    spilled: AtomicU32,
}

impl Default for Prefetches {
    fn default() -> Prefetches {
        Prefetches {
            slots: (0..SLOTS).map(|_| Slot::default()).collect(),
            used: AtomicU32::new(0),
            head: AtomicU32::new(0),
            live: AtomicU32::new(0),
            spill: Mutex::new(VecDeque::new()),
            spilled: AtomicU32::new(0),
        }
    }
}

impl Prefetches {
    /// Entries not yet taken.
    #[inline]
    pub fn len(&self) -> u32 {
        self.live.load(Relaxed)
    }

    /// Add the line whose key is `key` (any value but `u64::MAX`), arriving at `ready`, as the
    /// newest entry.
    #[inline]
    pub fn push(&self, key: u64, ready: u64) {
        let used = self.used.load(Relaxed) as usize;
        match self.slots.get(used) {
            Some(s) => {
                s.key.store(key, Relaxed);
                s.ready.store(ready, Relaxed);
                self.used.store(used as u32 + 1, Relaxed);
            }
            None => self.push_spilled(key, ready),
        }
        self.live.store(self.live.load(Relaxed) + 1, Relaxed);
    }

    /// [`push`](Self::push) once the slots are full.
    #[cold]
    fn push_spilled(&self, key: u64, ready: u64) {
        self.spill.lock().expect("no panics while held").push_back((key, ready));
        self.spilled.store(1, Relaxed);
    }

    /// Take the oldest entry for `key`, returning when it arrives; `None` if there is none.
    #[inline]
    pub fn take(&self, key: u64) -> Option<u64> {
        let (head, used) = (self.head.load(Relaxed) as usize, self.used.load(Relaxed) as usize);
        let slots = &self.slots[head.min(used)..used];
        match slots.iter().position(|s| s.key.load(Relaxed) == key) {
            Some(i) => Some(self.take_slot(head + i)),
            None if self.spilled.load(Relaxed) != 0 => self.take_spilled(key),
            None => None,
        }
    }

    /// Take slot `i`, which holds a live entry: its arrival time. The head moves past the
    /// taken slots at the front, so the next search starts at the oldest live one.
    #[inline]
    fn take_slot(&self, i: usize) -> u64 {
        let s = &self.slots[i];
        s.key.store(TAKEN, Relaxed);
        let used = self.used.load(Relaxed) as usize;
        let mut head = self.head.load(Relaxed) as usize;
        while head < used && self.slots[head].key.load(Relaxed) == TAKEN {
            head += 1;
        }
        self.head.store(head as u32, Relaxed);
        self.live.store(self.live.load(Relaxed) - 1, Relaxed);
        s.ready.load(Relaxed)
    }

    /// [`take`](Self::take) from the spill list.
    #[cold]
    fn take_spilled(&self, key: u64) -> Option<u64> {
        let mut list = self.spill.lock().expect("no panics while held");
        let i = list.iter().position(|&(k, _)| k == key)?;
        let (_, ready) = list.remove(i)?;
        self.live.store(self.live.load(Relaxed) - 1, Relaxed);
        Some(ready)
    }

    /// Forget every entry.
    #[inline]
    pub fn clear(&self) {
        self.used.store(0, Relaxed);
        self.head.store(0, Relaxed);
        self.live.store(0, Relaxed);
        if self.spilled.load(Relaxed) != 0 {
            self.spill.lock().expect("no panics while held").clear();
            self.spilled.store(0, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pagealloc_testkit::rng::Rng;

    /// The list the array replaces: a search from the front, the match removed.
    #[derive(Default)]
    struct List(VecDeque<(u64, u64)>);

    impl List {
        fn take(&mut self, key: u64) -> Option<u64> {
            let i = self.0.iter().position(|&(k, _)| k == key)?;
            self.0.remove(i).map(|(_, r)| r)
        }
    }

    #[test]
    fn entries_come_back_oldest_first_once_each() {
        let p = Prefetches::default();
        p.push(7, 100);
        p.push(9, 200);
        p.push(7, 300);
        assert_eq!(p.len(), 3);
        assert_eq!(p.take(7), Some(100));
        assert_eq!(p.take(7), Some(300));
        assert_eq!(p.take(7), None);
        assert_eq!(p.take(9), Some(200));
        assert_eq!(p.len(), 0);
        p.push(5, 1);
        p.clear();
        assert_eq!((p.len(), p.take(5)), (0, None));
    }

    /// Random calls, some far past the slots: every answer is the old list's, in calls of
    /// every size, touched in about prefetch order or at random.
    #[test]
    fn answers_are_those_of_one_list_through_spills_and_clears() {
        let p = Prefetches::default();
        let mut rng = Rng::new(11);
        let (mut spills, mut hits) = (0, 0);
        for call in 0..400 {
            let mut list = List::default();
            p.clear();
            let n = match call % 4 {
                0 => rng.below(8),
                1 => rng.below(SLOTS as u64),
                _ => SLOTS as u64 / 2 + rng.below(2 * SLOTS as u64),
            };
            spills += u32::from(n > SLOTS as u64);
            // Keys from a small range, so lines repeat within a call.
            let keys: Vec<u64> = (0..n).map(|_| rng.below(600)).collect();
            for (i, &k) in keys.iter().enumerate() {
                let ready = i as u64 * 3 + rng.below(5);
                p.push(k, ready);
                list.0.push_back((k, ready));
            }
            for (i, &k) in keys.iter().enumerate() {
                let key = if call % 3 == 0 { rng.below(700) } else { k };
                let want = list.take(key);
                hits += u32::from(want.is_some());
                assert_eq!(p.take(key), want, "call {call}, search {i} for {key}");
                assert_eq!(p.len() as usize, list.0.len());
            }
        }
        assert!(spills > 50 && hits > 10_000, "{spills} spilling calls, {hits} hits");
    }
}

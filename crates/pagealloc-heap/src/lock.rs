//! [`YieldLock`], the spin-then-yield raw lock a [`PageHeap`](crate::PageHeap)'s allocator
//! takes.

use pagealloc::lock_api::{GuardSend, RawMutex};
use pagealloc::RawSpinLock;

/// Spins a waiter makes on the lock word before it yields its CPU: about a microsecond, longer
/// than most holds (a pageset hit or a buddy operation), shorter than a time slice.
const YIELD_LOCK_SPINS: u32 = 128;

/// A spin-then-yield raw lock for user space: the core's [`RawSpinLock`] (test-and-test-and-set)
/// for the fast path and for 128 polls of a held lock, then `std::thread::yield_now` between
/// rounds of polls, so a waiter gives its CPU to the (possibly preempted) holder instead of
/// spinning out its time slice. Uncontended it costs what the spin lock costs: one
/// compare-exchange to take, one store to release.
///
/// Any `lock_api` type takes it:
///
/// ```
/// use pagealloc::lock_api::Mutex;
/// use pagealloc_heap::YieldLock;
///
/// let m = Mutex::<YieldLock, u32>::new(1);
/// *m.lock() += 1;
/// assert_eq!(m.into_inner(), 2);
/// ```
#[derive(Debug)]
pub struct YieldLock(RawSpinLock);

impl YieldLock {
    /// The contended path, out of line so the fast path stays small.
    #[cold]
    fn lock_contended(&self) {
        loop {
            for _ in 0..YIELD_LOCK_SPINS {
                if !self.0.is_locked() && self.0.try_lock() {
                    return;
                }
                std::hint::spin_loop();
            }
            std::thread::yield_now();
        }
    }
}

// SAFETY: every acquisition is a successful `try_lock` of the inner spin lock and every
// release its `unlock`, called only by the holder (lock_api's guards guarantee that), so the
// inner lock's mutual exclusion is this lock's.
unsafe impl RawMutex for YieldLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: YieldLock = YieldLock(RawSpinLock::INIT);

    type GuardMarker = GuardSend;

    #[inline]
    fn lock(&self) {
        if !self.0.try_lock() {
            self.lock_contended();
        }
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.0.try_lock()
    }

    #[inline]
    unsafe fn unlock(&self) {
        // SAFETY: the caller holds this lock, hence the inner one.
        unsafe { self.0.unlock() }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.0.is_locked()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// More threads than CPUs bump a counter behind a `YieldLock`, each holding it across a
    /// yield now and then (a holder preempted): no update is lost, and the run ends.
    #[test]
    fn the_yield_lock_excludes_oversubscribed() {
        let m = pagealloc::lock_api::Mutex::<YieldLock, u64>::new(0);
        std::thread::scope(|s| {
            for _ in 0..32 {
                s.spawn(|| {
                    for i in 0..2000 {
                        let mut g = m.lock();
                        let v = *g;
                        if i % 100 == 0 {
                            std::thread::yield_now();
                        }
                        *g = v + 1;
                    }
                });
            }
        });
        assert_eq!(m.into_inner(), 32 * 2000);
    }
}

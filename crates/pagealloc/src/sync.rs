//! The one door to locks. Everything that blocks goes through here, so a different lock (or a
//! model checker's) can be swapped in at one place.
//!
//! The lock is a test-and-test-and-set spin lock implementing `lock_api::RawMutex`: the kernel's
//! zone and pcp locks are spin locks too, and a `no_std` user has nothing else. With the `std`
//! feature absent there is no way to yield; hold times are bounded by the allocator's own work
//! (one bulk refill or drain), never by a caller.

use core::sync::atomic::{AtomicBool, Ordering};

/// A raw test-and-test-and-set spin lock.
#[derive(Debug)]
pub struct RawSpinLock {
    locked: AtomicBool,
}

#[allow(unsafe_code)]
// SAFETY: mutual exclusion holds because the only transition to `locked == true` is a
// successful compare-exchange from `false` (Acquire), and `unlock` (Release) is only called by
// the holder, as lock_api guarantees for its guards.
unsafe impl lock_api::RawMutex for RawSpinLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawSpinLock = RawSpinLock { locked: AtomicBool::new(false) };

    type GuardMarker = lock_api::GuardSend;

    #[inline]
    fn lock(&self) {
        while !self.try_lock() {
            // Spin on a plain load so waiters share the line instead of bouncing it.
            while self.locked.load(Ordering::Relaxed) {
                core::hint::spin_loop();
            }
        }
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.locked.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    #[inline]
    #[allow(unsafe_code)]
    unsafe fn unlock(&self) {
        self.locked.store(false, Ordering::Release);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Relaxed)
    }
}

/// A spin-lock protected value.
pub type Mutex<T> = lock_api::Mutex<RawSpinLock, T>;
/// The guard of a [`Mutex`].
pub type MutexGuard<'a, T> = lock_api::MutexGuard<'a, RawSpinLock, T>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn try_lock_fails_while_held() {
        let m = Mutex::new(5u32);
        let g = m.lock();
        assert!(m.try_lock().is_none());
        drop(g);
        assert_eq!(*m.try_lock().expect("free lock"), 5);
    }
}

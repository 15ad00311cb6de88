//! [`CountingLock`]: a lock type for the allocator's lock parameter that counts each
//! acquisition, so a test can show that every zone, pageset or slab lock is taken through the
//! type it was given (the core's and the slab layer's `lock_type` tests).

// Implementing a lock is `unsafe` (it promises mutual exclusion); this one only wraps the
// core's spin lock.
#![allow(unsafe_code)]

use std::cell::Cell;

use pagealloc::lock_api::{GuardSend, RawMutex};
use pagealloc::RawSpinLock;

thread_local! {
    /// Acquisitions of a `CountingLock` by this thread (`lock` and successful `try_lock`).
    static TAKEN: Cell<u64> = const { Cell::new(0) };
}

/// Acquisitions of any [`CountingLock`] by the calling thread so far. Per thread, so tests
/// running side by side do not count each other's.
pub fn taken() -> u64 {
    TAKEN.with(Cell::get)
}

/// The core's spin lock, counting each acquisition in the acquiring thread.
#[derive(Debug)]
pub struct CountingLock(RawSpinLock);

// SAFETY: every acquisition and release is the inner spin lock's.
unsafe impl RawMutex for CountingLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: CountingLock = CountingLock(RawSpinLock::INIT);
    type GuardMarker = GuardSend;

    fn lock(&self) {
        self.0.lock();
        TAKEN.with(|t| t.set(t.get() + 1));
    }

    fn try_lock(&self) -> bool {
        let ok = self.0.try_lock();
        if ok {
            TAKEN.with(|t| t.set(t.get() + 1));
        }
        ok
    }

    unsafe fn unlock(&self) {
        // SAFETY: the caller holds the lock.
        unsafe { self.0.unlock() }
    }
}

//! The one door to locks and atomics. Everything that blocks, and every atomic the crate
//! touches (per-frame state, pageblock bits, zone summaries, counters), comes from here, so a
//! different lock — or a model checker's atomics — can be swapped in at one place.
//!
//! The lock is a type parameter: every zone lock, pageset lock and the drain lock of a
//! `PageAllocator<E, L>` is a `Mutex<L, _>`, with `L` any `lock_api::RawMutex` (the bound is
//! named [`RawLock`] here so the loom build can swap it). The default, [`RawSpinLock`], is a
//! test-and-test-and-set spin lock: the kernel's zone and pcp locks are spin locks too, and a
//! `no_std` user has nothing else. It never yields; hold times are bounded by the allocator's
//! own work (one bulk refill or drain), never by a caller — but a holder preempted by the OS
//! (more threads than CPUs in user space) makes every waiter spin out its time slice, so user
//! space oversubscribed wants a lock that yields (the lab's `YieldLock`), and a kernel one
//! that saves and disables interrupts (the example in the crate docs).
//!
//! Under `--cfg loom` (the models in `tests/loom.rs`) the atomics and the spin hint are loom's,
//! so every load, store and compare-exchange of the real allocator is a point where loom may
//! switch threads, and a relaxed load may return any value the memory model allows. The spin
//! lock stays the same code over loom's `AtomicBool`; only the cell holding the protected value
//! becomes loom's `UnsafeCell`, so loom also checks that the lock really excludes (two
//! unordered accesses to a guarded value are reported as a causality violation). `lock_api`
//! cannot carry that: it needs a `const` lock initialiser, and loom's atomics are created at
//! run time, inside the model — so under loom the bound [`RawLock`] is a trait of this module
//! with a run-time constructor, which only [`RawSpinLock`] implements.

pub use core::sync::atomic::Ordering;
#[cfg(not(loom))]
pub use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8};
#[cfg(loom)]
pub use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8};

#[cfg(not(loom))]
use core::hint::spin_loop;
#[cfg(loom)]
use loom::hint::spin_loop;

/// A raw test-and-test-and-set spin lock.
#[derive(Debug)]
pub struct RawSpinLock {
    locked: AtomicBool,
}

impl RawSpinLock {
    /// Wait until the lock is ours.
    #[inline]
    fn acquire(&self) {
        while !self.try_acquire() {
            // Spin on a plain load so waiters share the line instead of bouncing it.
            while self.locked.load(Ordering::Relaxed) {
                spin_loop();
            }
        }
    }

    /// Take the lock if it is free; never waits.
    #[inline]
    fn try_acquire(&self) -> bool {
        self.locked.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    /// Give the lock back; only its holder calls this.
    #[inline]
    fn release(&self) {
        self.locked.store(false, Ordering::Release);
    }
}

#[cfg(not(loom))]
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
        self.acquire();
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.try_acquire()
    }

    #[inline]
    #[allow(unsafe_code)]
    unsafe fn unlock(&self) {
        self.release();
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Relaxed)
    }
}

/// The bound of the allocator's lock type parameter: `lock_api::RawMutex`.
#[cfg(not(loom))]
pub use lock_api::RawMutex as RawLock;

/// The bound of the allocator's lock type parameter under loom: a raw lock built at run time
/// (loom's atomics have no `const` constructor, which `lock_api::RawMutex::INIT` needs).
///
/// # Safety
///
/// As `lock_api::RawMutex`: `lock` and a successful `try_lock` exclude every other holder
/// until `unlock`, which only the holder calls.
#[cfg(loom)]
#[allow(unsafe_code)]
pub unsafe trait RawLock {
    /// A new, unlocked lock.
    fn new() -> Self;
    /// Wait until the lock is ours.
    fn lock(&self);
    /// Take the lock if it is free; never waits.
    fn try_lock(&self) -> bool;
    /// Give the lock back.
    ///
    /// # Safety
    ///
    /// Only the holder calls this.
    unsafe fn unlock(&self);
}

#[cfg(loom)]
#[allow(unsafe_code)]
// SAFETY: as for the `lock_api::RawMutex` implementation of the normal build: the same code.
unsafe impl RawLock for RawSpinLock {
    fn new() -> RawSpinLock {
        RawSpinLock { locked: AtomicBool::new(false) }
    }
    fn lock(&self) {
        self.acquire();
    }
    fn try_lock(&self) -> bool {
        self.try_acquire()
    }
    unsafe fn unlock(&self) {
        self.release();
    }
}

/// A value protected by a lock of type `L`.
#[cfg(not(loom))]
pub type Mutex<L, T> = lock_api::Mutex<L, T>;
/// The guard of a [`Mutex`].
#[cfg(not(loom))]
pub type MutexGuard<'a, L, T> = lock_api::MutexGuard<'a, L, T>;

#[cfg(loom)]
pub use self::model::{Mutex, MutexGuard};

/// A spin-lock protected value (the slab layer's locks and the lab's calibration use it).
pub type SpinMutex<T> = Mutex<RawSpinLock, T>;
/// The guard of a [`SpinMutex`].
pub type SpinMutexGuard<'a, T> = MutexGuard<'a, RawSpinLock, T>;

/// The lock over loom's cell: the subset of `lock_api::Mutex` the crate uses.
#[cfg(loom)]
mod model {
    use super::RawLock;
    use loom::cell::{MutPtr, UnsafeCell};

    /// A lock-protected value, its accesses tracked by loom.
    pub struct Mutex<L, T> {
        raw: L,
        data: UnsafeCell<T>,
    }

    #[allow(unsafe_code)]
    // SAFETY: the value is reached only through a guard, and a guard exists only while `raw`
    // is held, so sharing the mutex across threads shares no unguarded `T`; `T: Send` because
    // the holder may be any thread.
    unsafe impl<L: RawLock + Sync, T: Send> Sync for Mutex<L, T> {}

    impl<L: RawLock, T> Mutex<L, T> {
        /// A new, unlocked mutex holding `value`.
        pub fn new(value: T) -> Mutex<L, T> {
            Mutex { raw: L::new(), data: UnsafeCell::new(value) }
        }

        /// Wait for the lock.
        pub fn lock(&self) -> MutexGuard<'_, L, T> {
            self.raw.lock();
            MutexGuard { lock: self, data: Some(self.data.get_mut()) }
        }

        /// Take the lock if it is free.
        pub fn try_lock(&self) -> Option<MutexGuard<'_, L, T>> {
            self.raw.try_lock().then(|| MutexGuard { lock: self, data: Some(self.data.get_mut()) })
        }

        /// The value, consuming the mutex.
        pub fn into_inner(self) -> T {
            self.data.into_inner()
        }
    }

    impl<L, T> core::fmt::Debug for Mutex<L, T> {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            // Reading the value would be an access loom tracks; nothing else is shown.
            f.debug_struct("Mutex").finish_non_exhaustive()
        }
    }

    /// The lock held. `data` is loom's record of the exclusive access; it ends (is dropped)
    /// before the lock is released.
    pub struct MutexGuard<'a, L: RawLock, T> {
        lock: &'a Mutex<L, T>,
        data: Option<MutPtr<T>>,
    }

    impl<L: RawLock, T> core::ops::Deref for MutexGuard<'_, L, T> {
        type Target = T;
        fn deref(&self) -> &T {
            let Some(p) = &self.data else { unreachable!("a live guard holds its access") };
            #[allow(unsafe_code)]
            // SAFETY: the guard holds the lock, so no other guard of this mutex exists; the
            // returned borrow is tied to `&self`, so `deref_mut` cannot run while it lives.
            unsafe {
                p.deref()
            }
        }
    }

    impl<L: RawLock, T> core::ops::DerefMut for MutexGuard<'_, L, T> {
        fn deref_mut(&mut self) -> &mut T {
            let Some(p) = &self.data else { unreachable!("a live guard holds its access") };
            #[allow(unsafe_code)]
            // SAFETY: as for `deref`, and `&mut self` makes this the only borrow of the value.
            unsafe {
                p.deref()
            }
        }
    }

    impl<L: RawLock, T> Drop for MutexGuard<'_, L, T> {
        fn drop(&mut self) {
            self.data = None;
            #[allow(unsafe_code)]
            // SAFETY: a live guard means this thread holds the lock.
            unsafe {
                self.lock.raw.unlock();
            }
        }
    }

    impl<L: RawLock, T> core::fmt::Debug for MutexGuard<'_, L, T> {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.debug_struct("MutexGuard").finish_non_exhaustive()
        }
    }
}

/// Start loading the cache line holding `*p` into the cache (a hint: it changes nothing a
/// program can observe). x86-64 only; elsewhere, and under miri and loom, it does nothing.
#[inline(always)]
#[allow(unsafe_code)]
pub fn prefetch<T>(p: &T) {
    #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
    // SAFETY: `_mm_prefetch` only hints the cache; `p` is a valid reference, so the address
    // is mapped, and the instruction never faults or writes memory.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((p as *const T).cast::<i8>());
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri), not(loom))))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn try_lock_fails_while_held() {
        let m = SpinMutex::new(5u32);
        let g = m.lock();
        assert!(m.try_lock().is_none());
        drop(g);
        assert_eq!(*m.try_lock().expect("free lock"), 5);
    }

    /// Two threads bump a counter under the lock: no update is lost, and under miri its race
    /// detector checks that the lock's acquire and release order the plain accesses.
    #[test]
    fn the_lock_excludes_across_threads() {
        let per_thread = if cfg!(miri) { 50 } else { 20_000 };
        let m = SpinMutex::new(0u64);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..per_thread {
                        *m.lock() += 1;
                    }
                });
            }
        });
        assert_eq!(m.into_inner(), 2 * per_thread);
    }
}

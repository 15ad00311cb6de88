//! The allocator as Rust's global allocator (feature `global-alloc`): [`GlobalPages`], a
//! `#[global_allocator]` that serves every allocation with a block of whole pages from a
//! [`PageAllocator`] over memory the caller names.
//!
//! Page-granular: a 24-byte `Box` takes a 4 KiB page, and one allocation is at most a
//! 4 MiB block (order 10). That suits a kernel's early heap, a hypervisor's, a test harness's;
//! small objects belong in a slab layer over the allocator (the `pagealloc-slab` crate).
//!
//! A global allocator must exist before the first allocation, so the allocator behind it is
//! built without a heap ([`PageAllocator::with_lock_in`]), either by the caller at boot
//! ([`GlobalPages::init`]) or lazily by the first allocation ([`GlobalPages::lazy`]). An
//! allocation made while the build runs (by the build itself, or by another thread) gets null:
//! a build that touched the heap would fail loudly, not recurse.
#![allow(unsafe_code)]

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicU8, Ordering};

use crate::events::NoEvents;
use crate::gfp::Gfp;
use crate::page_alloc::PageAllocator;
use crate::sync::{RawLock, RawSpinLock};
use crate::types::{CpuId, Order, Pfn, MAX_PAGE_ORDER, PAGE_SHIFT, PAGE_SIZE};

/// A [`PageAllocator`] and where its frames are in memory: what [`GlobalPages`] serves from.
#[derive(Debug)]
pub struct PageMemory<L: RawLock = RawSpinLock> {
    pa: PageAllocator<NoEvents, L>,
    /// The address of frame `base_pfn`.
    base: usize,
    base_pfn: Pfn,
    /// The calling CPU (a kernel's `smp_processor_id`, a user space thread's number).
    cpu: fn() -> CpuId,
}

impl<L: RawLock> PageMemory<L> {
    /// A heap handing out the frames of `pa` as memory: frame `pfn` is the page at
    /// `base + (pfn - base_pfn) × PAGE_SIZE`. `cpu` names the calling CPU; a number beyond
    /// the allocator's CPUs is taken modulo their count.
    ///
    /// # Safety
    /// Every frame `pa` manages must be such a page: valid for reads and writes, used by
    /// nothing but this heap for as long as it serves allocations. Blocks are aligned as their
    /// size only if `base - base_pfn × PAGE_SIZE` is aligned to the largest block (4 MiB);
    /// otherwise an allocation asking for more than page alignment may get null (never a
    /// misaligned block).
    pub unsafe fn new(
        pa: PageAllocator<NoEvents, L>,
        base: *mut u8,
        base_pfn: Pfn,
        cpu: fn() -> CpuId,
    ) -> PageMemory<L> {
        PageMemory { pa, base: base as usize, base_pfn, cpu }
    }

    /// The allocator behind the heap: its counters, zones and pagesets.
    pub fn allocator(&self) -> &PageAllocator<NoEvents, L> {
        &self.pa
    }

    /// The block order that serves `layout`: the smallest whose size covers both the size and
    /// the alignment. `None` above the largest block.
    fn order_of(layout: Layout) -> Option<Order> {
        let bytes = layout.size().max(layout.align()).max(1);
        let pages = bytes.div_ceil(PAGE_SIZE as usize);
        let order = pages.next_power_of_two().trailing_zeros();
        (order <= u32::from(MAX_PAGE_ORDER)).then_some(Order(order as u8))
    }

    fn cpu(&self) -> crate::page_alloc::Cpu {
        let id = (self.cpu)().0 % self.pa.nr_cpus();
        self.pa.cpu(CpuId(id)).expect("a CPU below nr_cpus exists")
    }

    fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(order) = PageMemory::<L>::order_of(layout) else { return core::ptr::null_mut() };
        let cpu = self.cpu();
        let Ok(pfn) = self.pa.alloc_pages(cpu, Gfp::KERNEL, order) else {
            return core::ptr::null_mut();
        };
        let addr = self.base + ((pfn.0 - self.base_pfn.0) << PAGE_SHIFT) as usize;
        if addr % layout.align() != 0 {
            // Only with a base not aligned to the largest block (see `new`).
            let _ = self.pa.free_pages(cpu, pfn, order);
            return core::ptr::null_mut();
        }
        addr as *mut u8
    }

    fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let Some(order) = PageMemory::<L>::order_of(layout) else { return };
        let pfn = Pfn(self.base_pfn.0 + ((ptr as usize - self.base) >> PAGE_SHIFT) as u64);
        let freed = self.pa.free_pages(self.cpu(), pfn, order);
        debug_assert!(freed.is_ok(), "dealloc of a block this heap did not hand out: {freed:?}");
    }
}

/// No heap yet, and no build running.
const EMPTY: u8 = 0;
/// A build is running (lazy or `init`).
const BUILDING: u8 = 1;
/// The heap is there.
const READY: u8 = 2;
/// The lazy build returned nothing: every allocation gets null.
const FAILED: u8 = 3;

/// A [`PageMemory`] as `#[global_allocator]`: empty until [`init`](Self::init) or, made with
/// [`lazy`](Self::lazy), until the first allocation builds it. While it is empty (or being
/// built) every allocation gets null, which Rust's collections turn into an abort.
///
/// ```
/// use pagealloc::global::{GlobalPages, PageMemory};
///
/// // In a kernel: `#[global_allocator] static HEAP: GlobalPages = GlobalPages::new();`,
/// // then at boot `HEAP.init(heap)` with a heap built by `PageAllocator::with_lock_in`.
/// static HEAP: GlobalPages = GlobalPages::new();
/// assert!(HEAP.heap().is_none());
/// ```
pub struct GlobalPages<L: RawLock = RawSpinLock> {
    state: AtomicU8,
    build: Option<fn() -> Option<PageMemory<L>>>,
    heap: UnsafeCell<MaybeUninit<PageMemory<L>>>,
}

// SAFETY: the heap is written once, by the thread that moved `state` from EMPTY to BUILDING,
// and read only after `state` is READY (a release store after the write, acquire loads before
// each read); `PageMemory` itself is shared by reference as a `PageAllocator` is (`Sync`).
unsafe impl<L: RawLock> Sync for GlobalPages<L> where PageMemory<L>: Sync {}

impl<L: RawLock> GlobalPages<L> {
    /// An empty global heap, to be given its heap by [`init`](Self::init).
    pub const fn new() -> GlobalPages<L> {
        GlobalPages {
            state: AtomicU8::new(EMPTY),
            build: None,
            heap: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// A global heap that `build` makes on the first allocation: for a program that allocates
    /// before it could call `init` (a Rust program with `std` does, before `main`). `build`
    /// must not allocate (its allocations get null); returning `None` leaves the heap failed.
    pub const fn lazy(build: fn() -> Option<PageMemory<L>>) -> GlobalPages<L> {
        GlobalPages {
            state: AtomicU8::new(EMPTY),
            build: Some(build),
            heap: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// Give the global heap its heap.
    ///
    /// # Errors
    /// The heap back if it has one already (or one is being built).
    // Handing the heap back is the point, and a kernel without a heap cannot box it.
    #[allow(clippy::result_large_err)]
    pub fn init(&self, heap: PageMemory<L>) -> Result<(), PageMemory<L>> {
        if self
            .state
            .compare_exchange(EMPTY, BUILDING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Err(heap);
        }
        self.publish(heap);
        Ok(())
    }

    /// Store `heap` and make it visible. The caller moved `state` to BUILDING.
    fn publish(&self, heap: PageMemory<L>) {
        // SAFETY: this thread moved `state` to BUILDING, so no one else writes the cell and no
        // one reads it before the READY store below.
        unsafe { (*self.heap.get()).write(heap) };
        self.state.store(READY, Ordering::Release);
    }

    /// The heap, once it is there.
    pub fn heap(&self) -> Option<&PageMemory<L>> {
        if self.state.load(Ordering::Acquire) != READY {
            return None;
        }
        // SAFETY: READY is stored (with release) only after the heap was written, and the
        // heap is never written again.
        Some(unsafe { (*self.heap.get()).assume_init_ref() })
    }

    /// The heap, building it first if this global heap is lazy and empty.
    fn heap_or_build(&self) -> Option<&PageMemory<L>> {
        if let Some(h) = self.heap() {
            return Some(h);
        }
        let build = self.build?;
        if self
            .state
            .compare_exchange(EMPTY, BUILDING, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            match build() {
                Some(heap) => self.publish(heap),
                None => self.state.store(FAILED, Ordering::Release),
            }
        }
        self.heap()
    }
}

impl<L: RawLock> core::fmt::Debug for GlobalPages<L> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let state = match self.state.load(Ordering::Acquire) {
            EMPTY => "empty",
            BUILDING => "building",
            READY => "ready",
            _ => "failed",
        };
        f.debug_struct("GlobalPages").field("state", &state).finish_non_exhaustive()
    }
}

impl<L: RawLock> Default for GlobalPages<L> {
    fn default() -> GlobalPages<L> {
        GlobalPages::new()
    }
}

impl<L: RawLock> Drop for GlobalPages<L> {
    fn drop(&mut self) {
        if *self.state.get_mut() == READY {
            // SAFETY: READY means the heap was written; `&mut self` means no one holds it.
            unsafe { self.heap.get_mut().assume_init_drop() };
        }
    }
}

// SAFETY: `alloc` returns null or a block of whole pages, at least `layout.size()` bytes,
// aligned to `layout.align()` (checked), which the allocator hands to no one else until it is
// freed; `dealloc` frees the block of the same order (the layout gives the order back).
unsafe impl<L: RawLock> GlobalAlloc for GlobalPages<L>
where
    PageMemory<L>: Sync,
{
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match self.heap_or_build() {
            Some(h) => h.alloc(layout),
            None => core::ptr::null_mut(),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // A pointer this allocator returned exists only once the heap does.
        if let Some(h) = self.heap() {
            h.dealloc(ptr, layout);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Ok(new) = Layout::from_size_align(new_size, layout.align()) else {
            return core::ptr::null_mut();
        };
        // The block already holds the new size if the order is the same: nothing to move.
        if PageMemory::<L>::order_of(new) == PageMemory::<L>::order_of(layout) {
            return ptr;
        }
        // SAFETY: as `alloc`; the caller's `ptr` is a live block of `layout` (the contract
        // of `realloc`), copied up to the smaller size before it is freed.
        unsafe {
            let p = self.alloc(new);
            if !p.is_null() {
                core::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            p
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_covers_size_and_alignment() {
        let order = |size, align| {
            PageMemory::<RawSpinLock>::order_of(Layout::from_size_align(size, align).unwrap())
        };
        assert_eq!(order(0, 1), Some(Order(0)));
        assert_eq!(order(4096, 8), Some(Order(0)));
        assert_eq!(order(4097, 8), Some(Order(1)));
        assert_eq!(order(64, 65536), Some(Order(4)));
        assert_eq!(order(4 << 20, 8), Some(Order(10)));
        assert_eq!(order((4 << 20) + 1, 8), None);
    }
}

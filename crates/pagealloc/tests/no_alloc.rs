//! The allocator never allocates heap memory once it is built: not on an allocation, a free, a
//! drain or a tick, under any preset. A kernel whose heap sits on this allocator depends on it.
//!
//! This test binary counts every call into the global allocator that the measuring thread
//! makes while its counting is on; building the allocator runs with it off, and other threads
//! (the test harness, which may print a "running for over 60 seconds" note on a loaded
//! machine) are never counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};

use pagealloc::policy::PRESET_NAMES;
use pagealloc::{CpuId, Gfp, MemoryMap, Order, PageAllocator, Pfn, Policy, Tunables};

struct Counting;

thread_local! {
    /// Is this thread's heap use being counted? A const-initialised `Cell` needs no
    /// allocation to reach, so the allocator may read it.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}
static CALLS: AtomicU64 = AtomicU64::new(0);

/// Count one heap call if this thread is counting.
fn note() {
    if COUNTING.with(Cell::get) {
        CALLS.fetch_add(1, SeqCst);
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; counting
// only adds an atomic increment.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: forwarded as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note();
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: forwarded as is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Heap calls made by `f`.
fn heap_calls(f: impl FnOnce()) -> u64 {
    CALLS.store(0, SeqCst);
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    CALLS.load(SeqCst)
}

/// A fixed mix of orders 0..=10 and GFP types, live blocks held in a fixed array.
fn workout(pa: &PageAllocator) {
    let c0 = pa.cpu(CpuId(0)).unwrap();
    let c1 = pa.cpu(CpuId(1)).unwrap();
    let mut live: [Option<(Pfn, Order)>; 256] = [None; 256];
    let gfps = [Gfp::KERNEL, Gfp::HIGHUSER_MOVABLE, Gfp::KERNEL_RECLAIMABLE, Gfp::ATOMIC];
    let mut x: u32 = 0x9e37_79b9;
    for round in 0..20_000u32 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let slot = (x % 256) as usize;
        let cpu = if round % 3 == 0 { c1 } else { c0 };
        match live[slot].take() {
            // Frees alternate CPUs, so pagesets fill on one and drain on the other.
            Some((pfn, order)) => pa.free_pages(cpu, pfn, order).unwrap(),
            None => {
                let order = Order([0, 0, 0, 0, 1, 2, 3, 9, 10, 0][(x >> 8) as usize % 10]);
                let gfp = gfps[(x >> 16) as usize % gfps.len()];
                if let Ok(pfn) = pa.alloc_pages(cpu, gfp, order) {
                    live[slot] = Some((pfn, order));
                }
            }
        }
        if round % 1000 == 0 {
            pa.tick(c0);
            pa.tick(c1);
        }
        if round % 5000 == 0 {
            pa.drain_pages(c0, CpuId(1));
        }
    }
    for (pfn, order) in live.iter().flatten() {
        pa.free_pages(c0, *pfn, *order).unwrap();
    }
    pa.drain_all_pages(c0, None);
}

#[test]
fn allocation_free_drain_and_tick_never_touch_the_heap() {
    for name in PRESET_NAMES {
        let policy = Policy::preset(name).unwrap();
        let map = MemoryMap::single_node(2, 64 << 20).unwrap();
        let pa = PageAllocator::new(map, Tunables::default(), policy).unwrap();
        let managed = pa.managed_pages();
        let calls = heap_calls(|| workout(&pa));
        assert_eq!(calls, 0, "preset {name}: {calls} heap calls");
        assert_eq!(pa.nr_free_pages(), managed, "preset {name}: pages missing");
    }
}

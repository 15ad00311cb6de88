//! The allocator never allocates heap memory once it is built: not on an allocation, a free, a
//! drain, a tick or a compaction, under any preset. A kernel whose heap sits on this allocator depends on it.
//!
//! Built over a caller's region ([`PageAllocator::with_lock_in`]) it does not touch the heap at
//! all: not to describe the machine, size the metadata, build, run or drop.
//!
//! This test binary counts every call into the global allocator that the measuring thread
//! makes while its counting is on; building the allocator runs with it off, and other threads
//! (the test harness, which may print a "running for over 60 seconds" note on a loaded
//! machine) are never counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use pagealloc::policy::PRESET_NAMES;
use std::mem::MaybeUninit;

use pagealloc::compaction::{Migrate, Target};
use pagealloc::{
    CpuId, Gfp, MemoryMap, NoEvents, NodeId, Order, PageAllocator, Pfn, Policy, Tunables,
};

struct Counting;

thread_local! {
    /// Is this thread's heap use being counted? A const-initialised `Cell` needs no
    /// allocation to reach, so the allocator may read it.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    /// Heap calls this thread made while counting: per thread, so tests running in parallel
    /// do not count each other's.
    static CALLS: Cell<u64> = const { Cell::new(0) };
}

/// Count one heap call if this thread is counting.
fn note() {
    if COUNTING.with(Cell::get) {
        CALLS.with(|c| c.set(c.get() + 1));
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
    CALLS.with(|c| c.set(0));
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    CALLS.with(Cell::get)
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

/// An owner of movable pages that lets every one move, keeping its blocks in a fixed array.
struct Mover<'a>(&'a mut [Option<(Pfn, Order)>]);

impl Migrate for Mover<'_> {
    fn migrate(&mut self, from: Pfn, to: Target<'_>, order: Order) -> bool {
        let Some(slot) = self.0.iter_mut().find(|s| **s == Some((from, order))) else {
            return false;
        };
        *slot = Some((to.pfn(), order));
        true
    }
}

/// Fragment a range with movable pages, then compact: a node whole, an order-9 allocation's
/// direct compaction and a kcompactd wakeup.
fn compaction_workout(pa: &PageAllocator) {
    let cpu = pa.cpu(CpuId(0)).unwrap();
    let mut held: [Option<(Pfn, Order)>; 4096] = [None; 4096];
    for slot in held.iter_mut() {
        *slot = pa.alloc_pages(cpu, Gfp::HIGHUSER_MOVABLE, Order(0)).ok().map(|p| (p, Order(0)));
    }
    for slot in held.iter_mut().step_by(2) {
        let (pfn, order) = slot.take().unwrap();
        pa.free_pages(cpu, pfn, order).unwrap();
    }
    pa.drain_all_pages(cpu, None);
    let mut mover = Mover(&mut held);
    let out = pa.compact_node(cpu, NodeId(0), &mut mover).unwrap();
    assert!(out.stats.migrated > 0, "the workout must move pages to exercise compaction");
    let huge = pa.alloc_pages_compacting(cpu, Gfp::TRANSHUGE, Order(9), &mut mover);
    pa.kcompactd(cpu, NodeId(0), &mut mover).unwrap();
    for (pfn, order) in
        huge.ok().map(|p| (p, Order(9))).into_iter().chain(held.iter().flatten().copied())
    {
        pa.free_pages(cpu, pfn, order).unwrap();
    }
    pa.drain_all_pages(cpu, None);
}

#[test]
fn allocation_free_drain_and_tick_never_touch_the_heap() {
    for name in PRESET_NAMES {
        let policy = Policy::preset(name).unwrap();
        let map = MemoryMap::single_node(2, 64 << 20).unwrap();
        let pa = PageAllocator::new(map, Tunables::default(), policy).unwrap();
        let managed = pa.managed_pages();
        let calls = heap_calls(|| {
            workout(&pa);
            compaction_workout(&pa);
        });
        assert_eq!(calls, 0, "preset {name}: {calls} heap calls");
        assert_eq!(pa.nr_free_pages(), managed, "preset {name}: pages missing");
    }
}

#[test]
fn a_region_built_allocator_never_touches_the_heap() {
    // The region is the one thing made with the heap, before counting starts, standing in for
    // memory a kernel set aside at boot. 4 MiB holds the metadata of 64 MiB on 2 CPUs.
    let region: &'static mut [MaybeUninit<u8>] =
        Box::leak(vec![MaybeUninit::uninit(); 4 << 20].into_boxed_slice());
    let mut region = Some(region);
    let calls = heap_calls(|| {
        let map = MemoryMap::single_node(2, 64 << 20).unwrap();
        let needed = PageAllocator::<NoEvents>::metadata_bytes(&map).unwrap();
        let region = region.take().unwrap();
        assert!(needed <= region.len(), "{needed} bytes needed");
        let pa: PageAllocator = PageAllocator::with_lock_in(
            &map,
            Tunables::default(),
            Policy::modern(),
            NoEvents,
            region,
        )
        .unwrap();
        let managed = pa.managed_pages();
        workout(&pa);
        compaction_workout(&pa);
        assert_eq!(pa.nr_free_pages(), managed, "pages missing");
        drop(pa);
    });
    assert_eq!(calls, 0, "{calls} heap calls");
}

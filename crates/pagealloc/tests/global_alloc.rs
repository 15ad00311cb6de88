//! This test binary's global allocator is the page allocator: every allocation of the program,
//! the test harness's included, is a block of pages of a 64 MiB static area, as a kernel's heap
//! sits on its page allocator. The first allocation builds the allocator with no heap, the way
//! a kernel would at boot: the machine is described in fixed arrays and the allocator's
//! metadata is carved from the start of the same area (where Linux places its memmap). A heap
//! call during that build would get null and abort the binary, so that it runs at all is the
//! first check.
#![cfg(feature = "global-alloc")]
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::cell::{Cell, UnsafeCell};
use std::collections::{BTreeMap, HashMap};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use pagealloc::global::{GlobalPages, PageMemory};
use pagealloc::{
    CpuId, MemoryMap, NoEvents, NodeId, PageAllocator, Pfn, Policy, Tunables, ZoneLimits,
};

/// The "physical memory": frame 0 is its first page.
const MEMORY: usize = 64 << 20;

/// Aligned to the largest block (4 MiB), so every block is aligned to its size.
#[repr(C, align(4194304))]
struct Memory(UnsafeCell<[u8; MEMORY]>);

// SAFETY: the area is handed to the allocator once (the lazy build runs once) and reached only
// through it afterwards.
unsafe impl Sync for Memory {}

static AREA: Memory = Memory(UnsafeCell::new([0; MEMORY]));

#[global_allocator]
static HEAP: GlobalPages = GlobalPages::lazy(boot);

/// The calling thread's CPU: threads numbered as they first allocate (a kernel would read its
/// CPU number). A const thread-local needs no heap to reach.
fn current_cpu() -> CpuId {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    thread_local! {
        static CPU: Cell<u32> = const { Cell::new(u32::MAX) };
    }
    CpuId(CPU.with(|c| {
        if c.get() == u32::MAX {
            c.set(NEXT.fetch_add(1, Relaxed));
        }
        c.get()
    }))
}

/// Describe the machine, carve the metadata from the area's first pages and build: no heap.
fn boot() -> Option<PageMemory> {
    let machine = |first_byte: u64| {
        let mut map = MemoryMap::new();
        map.with_zone_limits(ZoneLimits::NORMAL_ONLY);
        map.add_range(NodeId(0), first_byte..MEMORY as u64).ok()?.set_cpus(NodeId(0), 2).ok()?;
        Some(map)
    };
    // The whole area's metadata is an upper bound of what the area less that needs.
    let meta = PageAllocator::<NoEvents>::metadata_bytes(&machine(0)?).ok()?;
    let meta = meta.next_multiple_of(4096);
    let map = machine(meta as u64)?;
    let base = AREA.0.get().cast::<u8>();
    // SAFETY: the first `meta` bytes of the area are given to the allocator, once; the frames
    // of `map` start after them.
    let region = unsafe { std::slice::from_raw_parts_mut(base.cast::<MaybeUninit<u8>>(), meta) };
    let pa =
        PageAllocator::with_lock_in(&map, Tunables::default(), Policy::modern(), NoEvents, region)
            .ok()?;
    // SAFETY: frame n is the area's page n; the allocator manages only pages after the
    // metadata, which nothing else touches.
    Some(unsafe { PageMemory::new(pa, base, Pfn(0), current_cpu) })
}

fn in_area(p: *const u8) -> bool {
    let base = AREA.0.get() as usize;
    (base..base + MEMORY).contains(&(p as usize))
}

#[test]
fn the_programs_collections_live_in_the_page_allocators_memory() {
    let heap = HEAP.heap().expect("the first allocation built the heap");
    let v: Vec<u64> = (0..100_000).collect();
    let s = "page ".repeat(1000);
    let m: HashMap<u32, String> = (0..2000).map(|i| (i, i.to_string())).collect();
    let b: BTreeMap<u32, u32> = (0..2000).map(|i| (i, i * 2)).collect();
    assert!(in_area(v.as_ptr().cast()) && in_area(s.as_ptr()));
    assert!(m.values().all(|v| in_area(v.as_ptr())));
    assert_eq!((v.iter().sum::<u64>(), b[&1999], m[&7].as_str()), (4_999_950_000, 3998, "7"));
    let pa = heap.allocator();
    assert!(pa.nr_free_pages().0 < pa.managed_pages().0);
}

#[test]
fn blocks_are_aligned_as_asked_and_too_large_is_null() {
    for (size, align) in [(1, 1), (64, 65536), (5000, 8), (4 << 20, 4 << 20)] {
        let layout = Layout::from_size_align(size, align).unwrap();
        // SAFETY: a non-zero layout; the block is freed with the same layout.
        unsafe {
            let p = HEAP.alloc(layout);
            assert!(!p.is_null() && in_area(p) && p as usize % align == 0, "{layout:?}");
            p.write_bytes(0xa5, size);
            HEAP.dealloc(p, layout);
        }
    }
    let too_large = Layout::from_size_align((4 << 20) + 1, 8).unwrap();
    // SAFETY: a non-zero layout; null is the answer checked.
    assert!(unsafe { HEAP.alloc(too_large) }.is_null());
}

#[test]
fn threads_allocate_on_their_own_cpus() {
    let handles: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || (0..500).map(|i| vec![t; i]).map(|v| v.len()).sum::<usize>())
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 499 * 500 / 2);
    }
}

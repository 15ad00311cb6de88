//! Once an allocator is built, its successful allocations, frees, drains and counter reads
//! through the C API take nothing from the host's heap: the boundary adds no allocation to
//! the core's heap-free paths. A counting global allocator proves it.
#![allow(unsafe_code)] // A global allocator and the C API are both `unsafe` to use.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use pagealloc_ffi::*;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call goes to `System`, which upholds `GlobalAlloc`'s contract; counting adds
// no requirement.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn allocating_and_freeing_pages_allocates_nothing() {
    unsafe {
        let map = pagealloc_map_new();
        assert_eq!(pagealloc_map_add_range(map, 0, 0, 64 << 20), PAGEALLOC_OK);
        assert_eq!(pagealloc_map_set_cpus(map, 0, 2), PAGEALLOC_OK);
        let mut pa = null_mut();
        assert_eq!(pagealloc_new(map, c"modern".as_ptr(), &mut pa), PAGEALLOC_OK);
        pagealloc_map_free(map);

        let mut pfns = [0u64; 64];
        let before = ALLOCATIONS.load(Relaxed);
        for round in 0..4u32 {
            for (i, pfn) in pfns.iter_mut().enumerate() {
                let order = (i as u32 + round) % 4;
                assert_eq!(pagealloc_alloc(pa, round % 2, PAGEALLOC_GFP_KERNEL, order, pfn), 0);
            }
            for (i, &pfn) in pfns.iter().enumerate() {
                let order = (i as u32 + round) % 4;
                assert_eq!(pagealloc_free(pa, (round + 1) % 2, pfn, order), PAGEALLOC_OK);
            }
            let (mut free, mut v) = (0, 0);
            assert_eq!(pagealloc_drain_cpu(pa, 0), PAGEALLOC_OK);
            assert_eq!(pagealloc_drain_all(pa, 1), PAGEALLOC_OK);
            assert_eq!(pagealloc_nr_free_pages(pa, &mut free), PAGEALLOC_OK);
            assert_eq!(pagealloc_counter(pa, c"pgfree".as_ptr(), &mut v), PAGEALLOC_OK);
        }
        assert_eq!(ALLOCATIONS.load(Relaxed) - before, 0);
        pagealloc_destroy(pa);
    }
}

//! allocator-api2's `Allocator` on `PageHeap`, through the public API only: containers of
//! both trait versions grow, shrink and give every page back, and a hashbrown map runs on it.
#![cfg(feature = "allocator-api2")]
// `Allocator::deallocate` and `PageHeap::dealloc` are unsafe calls.
#![allow(unsafe_code)]

use std::alloc::Layout;

use pagealloc::debug::validate;
use pagealloc::types::MAX_PAGE_ORDER;
use pagealloc::{CpuId, Order};
use pagealloc_heap::{block_bytes, HeapOptions, PageHeap};

fn heap(mib: usize) -> PageHeap {
    PageHeap::new(&HeapOptions { cpus: Some(2), ..HeapOptions::new(mib << 20) }).expect("heap")
}

fn drained_and_valid(h: &PageHeap) {
    let pa = h.allocator();
    pa.drain_all_pages(pa.cpu(CpuId(0)).unwrap(), None);
    assert_eq!(pa.nr_free_pages(), pa.managed_pages());
    validate(pa).expect("invariants");
}

/// Pages the heap's pagesets hold.
fn pcp_held(h: &PageHeap) -> u64 {
    h.allocator().zones().iter().map(|z| z.pcp_pages()).sum()
}

#[test]
fn vec_in_the_heap_grows_over_several_pages() {
    use allocator_api2::vec::Vec as ApiVec;
    let h = heap(16);
    let mut v: ApiVec<u64, &PageHeap> = ApiVec::new_in(&h);
    for i in 0..5_000u64 {
        v.push(i);
    }
    assert!(v.capacity() * 8 >= 4 * 4096);
    assert_eq!(v.as_ptr() as usize % 4096, 0);
    assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    v.truncate(10);
    v.shrink_to_fit();
    assert_eq!(v.iter().sum::<u64>(), 45);
    drop(v);
    drained_and_valid(&h);
}

/// The 0.4 trait: the same container test, through the other version's `Vec`.
#[cfg(feature = "allocator-api2-04")]
#[test]
fn vec_of_allocator_api2_04_in_the_heap() {
    use allocator_api2_04::vec::Vec as ApiVec;
    let h = heap(16);
    let mut v: ApiVec<u64, &PageHeap> = ApiVec::new_in(&h);
    v.extend(0..5_000u64);
    assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    v.truncate(10);
    v.shrink_to_fit();
    assert_eq!(v.iter().sum::<u64>(), 45);
    drop(v);
    drained_and_valid(&h);
}

#[test]
fn allocator_trait_refuses_what_no_block_serves() {
    use allocator_api2::alloc::{AllocError, Allocator};
    let h = heap(16);
    let too_big = Layout::from_size_align(block_bytes(MAX_PAGE_ORDER) + 1, 4096).unwrap();
    assert_eq!(h.allocate(too_big), Err(AllocError));
    let too_aligned = Layout::from_size_align(4096, 8 << 20).unwrap();
    assert_eq!(h.allocate(too_aligned), Err(AllocError));
    // Alignment up to the block size is served by rounding the block up.
    let l = Layout::from_size_align(4096, 64 << 10).unwrap();
    let b = h.allocate(l).unwrap();
    assert_eq!(b.len(), 64 << 10);
    assert_eq!(b.cast::<u8>().as_ptr() as usize % (64 << 10), 0);
    // SAFETY: `b` was allocated above with `l` and is not used again.
    unsafe { h.deallocate(b.cast(), l) };
    assert_eq!(PageHeap::order_for(Layout::new::<u8>()), Some(Order(0)));
    assert_eq!(PageHeap::order_for(Layout::array::<u8>(4097).unwrap()), Some(Order(1)));
    assert_eq!(PageHeap::order_for(Layout::array::<u8>(3 << 20).unwrap()), Some(Order(10)));
    drained_and_valid(&h);
}

#[test]
fn an_exhausted_heap_refuses_allocate() {
    use allocator_api2::alloc::{AllocError, Allocator};
    let h = heap(8);
    let mut held = Vec::new();
    while let Ok(p) = h.alloc_pages(Order(0)) {
        held.push(p);
    }
    let page = Layout::from_size_align(4096, 4096).unwrap();
    assert_eq!(h.allocate(page), Err(AllocError));
    for p in held {
        // SAFETY: every held block is live and unused.
        unsafe { h.dealloc(p, Order(0)) }.unwrap();
    }
    drained_and_valid(&h);
}

/// A hashbrown map (allocator-api2 0.2, as the ecosystem's containers take it) lives on
/// the heap: its tables are blocks of the allocator, and they all come back.
#[test]
fn a_hashbrown_map_runs_on_the_page_heap() {
    let h = heap(64);
    let free_at_start = h.allocator().nr_free_pages().0 + pcp_held(&h);
    {
        let mut map = hashbrown::HashMap::with_capacity_in(16, &h);
        for i in 0..20_000u64 {
            map.insert(i, i * 3);
        }
        assert!((0..20_000u64).all(|i| map.get(&i) == Some(&(i * 3))));
        let used = free_at_start - (h.allocator().nr_free_pages().0 + pcp_held(&h));
        assert!(used > 0, "the table's pages came from the heap");
        map.retain(|k, _| k % 2 == 0);
        map.shrink_to_fit();
        assert_eq!(map.len(), 10_000);
    }
    assert_eq!(h.allocator().nr_free_pages().0 + pcp_held(&h), free_at_start);
    validate(h.allocator()).unwrap();
}

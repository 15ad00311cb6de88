//! The lock type parameter: an allocator built with another lock takes every zone and pageset
//! lock through it, and works.

use pagealloc::{Counter, CpuId, Gfp, MemoryMap, NoEvents, Order, PageAllocator, Policy, Tunables};
use pagealloc_testkit::lock::{taken, CountingLock};

fn counting() -> PageAllocator<NoEvents, CountingLock> {
    let map = MemoryMap::single_node(2, 64 << 20).expect("map");
    PageAllocator::with_lock(map, Tunables::default(), Policy::modern(), NoEvents).expect("build")
}

/// A block too large for the pagesets takes the zone lock and nothing else: every zone-lock
/// acquisition the allocator counts is one of the type parameter's.
#[test]
fn the_zone_lock_is_the_type_parameter() {
    let pa = counting();
    let cpu = pa.cpu(CpuId(0)).expect("cpu 0");
    let before = (taken(), pa.vm_events());
    let pfn = pa.alloc_pages(cpu, Gfp::KERNEL, Order(5)).expect("order 5");
    pa.free_pages(cpu, pfn, Order(5)).expect("free");
    let zone_locks = pa.vm_events().since(&before.1).get(Counter::ZoneLockAcquire);
    assert_eq!(zone_locks, 2, "one zone lock to allocate, one to free");
    assert_eq!(taken() - before.0, zone_locks);
}

/// An order-0 allocation served from a filled pageset takes the pageset lock and no zone
/// lock: that one acquisition is the type parameter's too.
#[test]
fn the_pageset_lock_is_the_type_parameter() {
    let pa = counting();
    let cpu = pa.cpu(CpuId(1)).expect("cpu 1");
    // The first allocation refills the pageset under the zone lock.
    let first = pa.alloc_pages(cpu, Gfp::KERNEL, Order(0)).expect("order 0");
    let before = (taken(), pa.vm_events());
    let second = pa.alloc_pages(cpu, Gfp::KERNEL, Order(0)).expect("order 0 from the pageset");
    let d = pa.vm_events().since(&before.1);
    assert_eq!(d.get(Counter::ZoneLockAcquire), 0, "a pageset hit");
    assert_eq!(taken() - before.0, 1, "the pageset lock");
    for pfn in [first, second] {
        pa.free_pages(cpu, pfn, Order(0)).expect("free");
    }
    pa.drain_all_pages(cpu, None);
    assert_eq!(pa.nr_free_pages(), pa.managed_pages());
    pagealloc::debug::validate(&pa).expect("valid");
}

/// Threads on both CPUs through the counting lock: nothing is lost.
#[test]
fn an_allocator_with_another_lock_works_across_threads() {
    let pa = counting();
    std::thread::scope(|s| {
        for c in 0..2 {
            let pa = &pa;
            s.spawn(move || {
                let cpu = pa.cpu(CpuId(c)).expect("cpu");
                for i in 0..2000u32 {
                    let order = Order((i % 4) as u8);
                    let pfn = pa.alloc_pages(cpu, Gfp::KERNEL, order).expect("alloc");
                    pa.free_pages(cpu, pfn, order).expect("free");
                }
                assert!(taken() >= 4000, "every call took a lock of the type parameter");
            });
        }
    });
    pa.drain_all_pages(pa.cpu(CpuId(0)).expect("cpu 0"), None);
    assert_eq!(pa.nr_free_pages(), pa.managed_pages());
    pagealloc::debug::validate(&pa).expect("valid");
}

//! `zone_pcp_disable` / `zone_pcp_enable` (5.11, ec6e8c7e0314, "mm, page_alloc: disable
//! pcplists during memory offline"): while a zone's pagesets are disabled they have high 0
//! and batch 1, frees reach the buddy lists at once, size recomputations keep them so, and
//! calls nest. Before 5.11 offlining could only drain, and the pagesets filled up again in
//! between: [`draining_alone_lets_frees_refill_the_pageset`] shows the difference.

use pagealloc::debug::validate;
use pagealloc::{
    CpuId, Gfp, MemoryMap, NodeId, Order, PageAllocator, PcpDisableError, Pfn, Policy, Tunables,
    ZoneIdx, ZoneType,
};

const GIB: u64 = 1 << 30;

/// 1 node, 2 CPUs, a 512 MiB Normal zone (batch 31, high 3520..=8192 with default tunables).
fn machine() -> PageAllocator {
    let mut map = MemoryMap::new();
    map.add_range(NodeId(0), 4 * GIB..4 * GIB + 512 * (1 << 20))
        .unwrap()
        .set_cpus(NodeId(0), 2)
        .unwrap();
    PageAllocator::new(map, Tunables::default(), Policy::modern()).expect("valid allocator")
}

fn normal(pa: &PageAllocator) -> ZoneIdx {
    pa.zone_by_type(NodeId(0), ZoneType::Normal).expect("a Normal zone").idx()
}

/// (count, high, batch, high_min, high_max) of CPU `cpu`'s Normal pageset.
fn sizes(pa: &PageAllocator, cpu: u32) -> (i32, i32, i32, i32, i32) {
    let s = pa.zone(normal(pa)).unwrap().pcp(CpuId(cpu)).unwrap();
    (s.count, s.high, s.batch, s.high_min, s.high_max)
}

/// `n` order-0 pages allocated on CPU 1.
fn pages(pa: &PageAllocator, n: usize) -> Vec<Pfn> {
    let c1 = pa.cpu(CpuId(1)).unwrap();
    (0..n).map(|_| pa.alloc_pages(c1, Gfp::KERNEL, Order(0)).unwrap()).collect()
}

fn free_pages_of(pa: &PageAllocator) -> u64 {
    pa.zone(normal(pa)).unwrap().free_pages().0
}

#[test]
fn a_disabled_pageset_sends_every_free_to_the_buddy_lists() {
    let pa = machine();
    let (c0, z) = (pa.cpu(CpuId(0)).unwrap(), normal(&pa));
    let held = pages(&pa, 100);
    for &p in &held[..50] {
        pa.free_pages(c0, p, Order(0)).unwrap();
    }
    assert_eq!(sizes(&pa, 0).0, 50, "cached before the disable");
    pa.zone_pcp_disable(c0, z).unwrap();
    assert!(pa.zone_pcp_disabled(z));
    assert_eq!(sizes(&pa, 0), (0, 0, 1, 0, 0), "drained once, high 0 and batch 1");
    for &p in &held[50..] {
        let before = free_pages_of(&pa);
        pa.free_pages(c0, p, Order(0)).unwrap();
        assert_eq!(free_pages_of(&pa), before + 1, "the free is on a buddy list");
        assert_eq!(sizes(&pa, 0).0, 0);
    }
    // Allocations still work and leave nothing behind on the pageset.
    let again: Vec<Pfn> =
        (0..20).map(|_| pa.alloc_pages(c0, Gfp::KERNEL, Order(0)).unwrap()).collect();
    assert_eq!(sizes(&pa, 0).0, 0);
    for p in again {
        pa.free_pages(c0, p, Order(0)).unwrap();
    }
    validate(&pa).unwrap();
}

#[test]
fn draining_alone_lets_frees_refill_the_pageset() {
    // The pre-5.11 offline: drain_all_pages, and frees come back to the pagesets.
    let pa = machine();
    let (c0, z) = (pa.cpu(CpuId(0)).unwrap(), normal(&pa));
    let held = pages(&pa, 100);
    for &p in &held[..50] {
        pa.free_pages(c0, p, Order(0)).unwrap();
    }
    pa.drain_all_pages(c0, Some(z));
    assert_eq!(sizes(&pa, 0).0, 0);
    for &p in &held[50..] {
        pa.free_pages(c0, p, Order(0)).unwrap();
    }
    assert_eq!(sizes(&pa, 0).0, 50, "without the disable the frees are cached again");
    validate(&pa).unwrap();
}

#[test]
fn disable_nests_and_the_last_enable_restores_the_computed_sizes() {
    let pa = machine();
    let (c0, z) = (pa.cpu(CpuId(0)).unwrap(), normal(&pa));
    let before = sizes(&pa, 1);
    assert_eq!((before.2, before.3, before.4), (31, 3520, 8192));
    pa.zone_pcp_disable(c0, z).unwrap();
    pa.zone_pcp_disable(c0, z).unwrap();
    pa.zone_pcp_enable(c0, z).unwrap();
    assert!(pa.zone_pcp_disabled(z), "one disable is still in force");
    assert_eq!(sizes(&pa, 1), (0, 0, 1, 0, 0));
    pa.zone_pcp_enable(c0, z).unwrap();
    assert!(!pa.zone_pcp_disabled(z));
    let after = sizes(&pa, 1);
    assert_eq!((after.2, after.3, after.4), (before.2, before.3, before.4));
    assert_eq!(pa.zone_pcp_enable(c0, z), Err(PcpDisableError::NotDisabled(z)));
    // Frees are cached again.
    let held = pages(&pa, 10);
    for &p in &held {
        pa.free_pages(c0, p, Order(0)).unwrap();
    }
    assert_eq!(sizes(&pa, 0).0, 10);
    validate(&pa).unwrap();
}

#[test]
fn a_size_recomputation_while_disabled_keeps_high_0_and_batch_1() {
    let pa = machine();
    let (c0, z) = (pa.cpu(CpuId(0)).unwrap(), normal(&pa));
    pa.zone_pcp_disable(c0, z).unwrap();
    // A watermark change recomputes every pageset's sizes (zone_pcp_update).
    pa.set_min_free_kbytes(4 * pa.min_free_kbytes()).unwrap();
    assert_eq!(sizes(&pa, 0), (0, 0, 1, 0, 0));
    // A tick (auto-tuning's decay) raises nothing either.
    pa.tick(c0);
    assert_eq!(sizes(&pa, 0), (0, 0, 1, 0, 0));
    pa.zone_pcp_enable(c0, z).unwrap();
    // Enable gives the sizes computed for the new watermarks, as the update would have.
    let reference = machine();
    reference.set_min_free_kbytes(pa.min_free_kbytes()).unwrap();
    let (got, want) = (sizes(&pa, 0), sizes(&reference, 0));
    assert_eq!((got.2, got.3, got.4), (want.2, want.3, want.4));
    validate(&pa).unwrap();
}

#[test]
fn bad_zones_and_foreign_cpus_are_refused() {
    let (pa, other) = (machine(), machine());
    let c0 = pa.cpu(CpuId(0)).unwrap();
    let bad = ZoneIdx(99);
    assert_eq!(pa.zone_pcp_disable(c0, bad), Err(PcpDisableError::InvalidZone(bad)));
    assert_eq!(pa.zone_pcp_enable(c0, bad), Err(PcpDisableError::InvalidZone(bad)));
    let foreign = other.cpu(CpuId(0)).unwrap();
    let z = normal(&pa);
    assert_eq!(pa.zone_pcp_disable(foreign, z), Err(PcpDisableError::InvalidCpu(CpuId(0))));
    assert!(!pa.zone_pcp_disabled(z));
}

//! Hostile input on the public API: every case is refused with a typed error (or answered
//! correctly) and leaves the allocator as it was — same free pages, same pages on the per-CPU
//! lists, validator passing. One test per kind of input (docs/reliability.md lists them).

use pagealloc::debug::validate;
use pagealloc::page_alloc::MAX_MIN_FREE_KBYTES;
use pagealloc::zone::{WMARK_HIGH, WMARK_MIN};
use pagealloc::{
    AllocError, CpuId, FreeError, Gfp, IsolateError, MemoryMap, MigrateType, NodeId, Order,
    PageAllocator, Pfn, Policy, SettingError, Tunables,
};

const MIB: u64 = 1 << 20;

/// One node, two CPUs, `bytes` from physical address 0 (DMA and DMA32 zones).
fn machine(bytes: u64) -> PageAllocator {
    let map = MemoryMap::single_node(2, bytes).expect("valid map");
    PageAllocator::new(map, Tunables::default(), Policy::modern()).expect("valid allocator")
}

/// What a refused call must leave unchanged: free pages in the buddy lists and on every
/// per-CPU list.
fn footprint(pa: &PageAllocator) -> (u64, u64) {
    (pa.nr_free_pages().0, pa.zones().iter().map(|z| z.pcp_pages()).sum())
}

/// Assert the allocator is intact: same footprint as `before`, validator passing.
fn unchanged(pa: &PageAllocator, before: (u64, u64)) {
    assert_eq!(footprint(pa), before, "a refused call changed the allocator");
    if let Err(v) = validate(pa) {
        panic!("invariant broken: {v}");
    }
}

#[test]
fn impossible_gfp_zone_combinations_are_refused() {
    let pa = machine(64 * MIB);
    let cpu = pa.cpu(CpuId(0)).unwrap();
    let before = footprint(&pa);
    for zones in [
        Gfp::DMA | Gfp::DMA32,
        Gfp::DMA | Gfp::HIGHMEM,
        Gfp::DMA32 | Gfp::HIGHMEM,
        Gfp::DMA | Gfp::DMA32 | Gfp::HIGHMEM | Gfp::MOVABLE,
    ] {
        let gfp = Gfp::KERNEL | zones;
        assert_eq!(pa.alloc_pages(cpu, gfp, Order(0)), Err(AllocError::ImpossibleZones(gfp)));
        assert_eq!(
            pa.alloc_pages_node(cpu, NodeId(0), gfp, Order(3)),
            Err(AllocError::ImpossibleZones(gfp))
        );
        unchanged(&pa, before);
    }
    // Each zone modifier alone, and MOVABLE with DMA32, still allocates.
    for gfp in [Gfp::DMA, Gfp::DMA32, Gfp::HIGHMEM, Gfp::DMA32 | Gfp::MOVABLE] {
        let p = pa.alloc_pages(cpu, Gfp::KERNEL | gfp, Order(0)).unwrap();
        pa.free_pages(cpu, p, Order(0)).unwrap();
    }
    let msg = AllocError::ImpossibleZones(Gfp::DMA | Gfp::DMA32).to_string();
    assert!(msg.contains("more than one of DMA, DMA32 and HIGHMEM"), "{msg}");
}

#[test]
fn min_free_kbytes_above_the_sysctl_range_is_refused() {
    let pa = machine(64 * MIB);
    let marks = |pa: &PageAllocator| -> Vec<(u64, u64)> {
        pa.zones().iter().map(|z| (z.wmark_pages(WMARK_MIN), z.wmark_pages(WMARK_HIGH))).collect()
    };
    let (kb, wm, before) = (pa.min_free_kbytes(), marks(&pa), footprint(&pa));
    for bad in [u64::MAX, MAX_MIN_FREE_KBYTES + 1] {
        assert_eq!(
            pa.set_min_free_kbytes(bad),
            Err(SettingError::OutOfRange { key: "min_free_kbytes", got: bad, max: 2_147_483_647 })
        );
        assert_eq!((pa.min_free_kbytes(), marks(&pa)), (kb, wm.clone()));
        unchanged(&pa, before);
    }
    // The largest value the sysctl takes is applied, and only reserve-using requests remain.
    pa.set_min_free_kbytes(MAX_MIN_FREE_KBYTES).unwrap();
    assert_eq!(pa.min_free_kbytes(), MAX_MIN_FREE_KBYTES);
    let cpu = pa.cpu(CpuId(0)).unwrap();
    assert!(pa.alloc_pages(cpu, Gfp::KERNEL, Order(0)).is_err());
    pa.set_min_free_kbytes(kb).unwrap();
    assert_eq!(marks(&pa), wm);
    unchanged(&pa, before);
}

/// Every entry point that takes a `Cpu` refuses one made by another allocator — of the same
/// shape (so the CPU number exists here too) or larger — and changes nothing.
#[test]
fn a_cpu_of_another_allocator_is_refused_everywhere() {
    let pa = machine(64 * MIB);
    let own = pa.cpu(CpuId(0)).unwrap();
    let twin = machine(64 * MIB);
    let big = PageAllocator::new(
        MemoryMap::single_node(8, 64 * MIB).unwrap(),
        Tunables::default(),
        Policy::modern(),
    )
    .unwrap();
    // Something on CPU 0's pageset, a live block, a live page_frag page.
    let cached = pa.alloc_pages(own, Gfp::KERNEL, Order(0)).unwrap();
    pa.free_pages(own, cached, Order(0)).unwrap();
    let live = pa.alloc_pages(own, Gfp::HIGHUSER_MOVABLE, Order(2)).unwrap();
    let frag = pa.alloc_pages(own, Gfp::ATOMIC, Order(0)).unwrap();
    let block_type = pa.zone_of(live).unwrap().pageblock_type(live);
    let before = footprint(&pa);
    assert!(before.1 > 0, "the pageset holds pages the drains could take");
    for other in [twin.cpu(CpuId(0)).unwrap(), big.cpu(CpuId(7)).unwrap()] {
        let id = other.id();
        assert_eq!(pa.alloc_pages(other, Gfp::KERNEL, Order(0)), Err(AllocError::InvalidCpu(id)));
        assert_eq!(
            pa.alloc_pages_node(other, NodeId(0), Gfp::KERNEL, Order(0)),
            Err(AllocError::InvalidCpu(id))
        );
        assert_eq!(pa.free_pages(other, live, Order(2)), Err(FreeError::InvalidCpu(id)));
        assert_eq!(pa.page_frag_free(other, frag), Err(FreeError::InvalidCpu(id)));
        assert_eq!(pa.isolate_pageblock(other, live), Err(IsolateError::InvalidCpu(id)));
        assert_eq!(
            pa.unisolate_pageblock(other, live, MigrateType::Movable),
            Err(IsolateError::InvalidCpu(id))
        );
        assert_eq!(pa.tick(other), 0);
        pa.drain_all_pages(other, None);
        pa.drain_pages(other, CpuId(0));
        pa.drain_pages_zone(other, CpuId(0), pa.zone_of(cached).unwrap().idx());
        assert_eq!(pa.zone_of(live).unwrap().pageblock_type(live), block_type);
        unchanged(&pa, before);
    }
    // The refused calls left the blocks live: their owners free them.
    pa.free_pages(own, live, Order(2)).unwrap();
    pa.page_frag_free(own, frag).unwrap();
    pa.drain_all_pages(own, None);
    assert_eq!(pa.nr_free_pages(), pa.managed_pages());
}

#[test]
fn pageblock_isolation_errors_are_typed() {
    // 65 MiB: DMA32 ends 1 MiB into a pageblock, which is not wholly inside the zone.
    let pa = machine(65 * MIB);
    let cpu = pa.cpu(CpuId(0)).unwrap();
    let before = footprint(&pa);
    let partial = Pfn(((64 * MIB) >> 12) + 3);
    let whole = Pfn(5000);
    let far = Pfn(1 << 40);
    assert_eq!(pa.isolate_pageblock(cpu, far), Err(IsolateError::ForeignFrame(far)));
    assert_eq!(pa.isolate_pageblock(cpu, partial), Err(IsolateError::PartialBlock(partial)));
    assert_eq!(
        pa.unisolate_pageblock(cpu, whole, MigrateType::Movable),
        Err(IsolateError::NotIsolated(whole))
    );
    unchanged(&pa, before);
    assert_eq!(pa.isolate_pageblock(cpu, whole), Ok(MigrateType::Movable));
    let isolated = footprint(&pa);
    assert_eq!(pa.isolate_pageblock(cpu, whole), Err(IsolateError::AlreadyIsolated(whole)));
    assert_eq!(
        pa.unisolate_pageblock(cpu, whole, MigrateType::Isolate),
        Err(IsolateError::IsolateTarget(MigrateType::Isolate))
    );
    unchanged(&pa, isolated);
    assert_eq!(pa.unisolate_pageblock(cpu, whole, MigrateType::Movable), Ok(()));
    unchanged(&pa, before);
}

//! Hostile input on the public API: every case is refused with a typed error (or answered
//! correctly) and leaves the allocator as it was — same free pages, same pages on the per-CPU
//! lists, validator passing. One test per kind of input (docs/reliability.md lists them).

use pagealloc::debug::{census, validate, validate_zone};
use pagealloc::page_alloc::MAX_MIN_FREE_KBYTES;
use pagealloc::page_frag::{MIN_BIAS, PAGE_FRAG_CACHE_MAX_SIZE};
use pagealloc::{
    AllocError, AllocFlags, CpuId, FreeError, Gfp, IsolateError, MemoryMap, MigrateType, NodeId,
    Order, PageAllocator, PageFragCache, Pfn, Policy, SettingError, Tunables, ZoneType,
};
use pagealloc::{WMARK_HIGH, WMARK_MIN};

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

/// An alignment that is not a power of two in 1..=4096, or a fragment above 32 KiB, is
/// refused before the cache changes. Alignments above 2^31 used to panic (rounding up to a
/// power of two wrapped to 0, then a division by zero).
#[test]
fn page_frag_alignment_and_size_are_checked_first() {
    let pa = machine(64 * MIB);
    let cpu = pa.cpu(CpuId(0)).unwrap();
    let mut nc = PageFragCache::new();
    let first = nc.alloc(&pa, cpu, 100, Gfp::ATOMIC, 1).unwrap();
    let (page, before) = (nc.page(), footprint(&pa));
    for align in [0, 3, 4097, 8192, 1 << 31, (1 << 31) + 1, u32::MAX] {
        assert_eq!(
            nc.alloc(&pa, cpu, 64, Gfp::ATOMIC, align),
            Err(AllocError::InvalidAlign(align))
        );
    }
    for size in [PAGE_FRAG_CACHE_MAX_SIZE + 1, u32::MAX] {
        assert_eq!(
            nc.alloc(&pa, cpu, size, Gfp::ATOMIC, 1),
            Err(AllocError::FragTooLarge { size })
        );
    }
    assert_eq!(nc.page(), page);
    unchanged(&pa, before);
    // The cache carries on where it was: the refused requests took nothing.
    let next = nc.alloc(&pa, cpu, 100, Gfp::ATOMIC, 4096).unwrap();
    assert_eq!((next.page, next.offset), (first.page, 4096));
    nc.drain(&pa, cpu).unwrap();
    // The largest fragment accepted takes a whole fresh page.
    let whole = nc.alloc(&pa, cpu, PAGE_FRAG_CACHE_MAX_SIZE, Gfp::ATOMIC, 1).unwrap();
    assert_eq!(whole.offset, 0);
    nc.drain(&pa, cpu).unwrap();
    for f in [first, next, whole] {
        pa.page_frag_free(cpu, f.page).unwrap();
    }
    pa.drain_all_pages(cpu, None);
    assert_eq!(pa.nr_free_pages(), pa.managed_pages());
}

/// Zero-byte fragments take a reference each without using up the page. The 32 770th used
/// to wrap the cache's bias (a panic in debug builds; in release the page was freed while the
/// cache still carved it). A page is now full once its bias is down to `MIN_BIAS`, and every
/// reference is accounted for: each fragment frees once, the last frees the page.
#[test]
fn zero_byte_fragments_never_wrap_the_reference_bias() {
    let pa = machine(64 * MIB);
    let cpu = pa.cpu(CpuId(0)).unwrap();
    let mut nc = PageFragCache::new();
    let frags: Vec<_> =
        (0..70_000).map(|_| nc.alloc(&pa, cpu, 0, Gfp::ATOMIC, 1).unwrap()).collect();
    let mut per_page = std::collections::BTreeMap::new();
    for f in &frags {
        *per_page.entry(f.page).or_insert(0u32) += 1;
    }
    let counts: Vec<u32> = per_page.values().copied().collect();
    let most = PAGE_FRAG_CACHE_MAX_SIZE + 1 - MIN_BIAS;
    assert_eq!(counts.iter().sum::<u32>(), 70_000);
    assert!(counts.iter().all(|&n| n <= most), "{counts:?}");
    assert_eq!(counts.iter().filter(|&&n| n == most).count(), 2, "{counts:?}");
    // Every page is still allocated: none was freed under its fragments or the cache.
    assert_eq!(census(&pa).allocated, per_page.len() as u64 * 8);
    for f in &frags {
        pa.page_frag_free(cpu, f.page).unwrap();
    }
    nc.drain(&pa, cpu).unwrap();
    assert_eq!(census(&pa).allocated, 0);
    validate(&pa).unwrap();
}

/// A cache serves the allocator whose page it carves, with that allocator's CPUs: anything
/// else is refused and the cache keeps its page.
#[test]
fn a_frag_cache_serves_one_allocator() {
    let pa = machine(64 * MIB);
    let other = machine(64 * MIB);
    let (cpu, foreign) = (pa.cpu(CpuId(0)).unwrap(), other.cpu(CpuId(0)).unwrap());
    let mut nc = PageFragCache::new();
    let f = nc.alloc(&pa, cpu, 100, Gfp::ATOMIC, 1).unwrap();
    let (page, before, other_before) = (nc.page(), footprint(&pa), footprint(&other));
    assert_eq!(nc.alloc(&other, foreign, 100, Gfp::ATOMIC, 1), Err(AllocError::ForeignFragCache));
    assert_eq!(nc.alloc(&pa, foreign, 100, Gfp::ATOMIC, 1), Err(AllocError::InvalidCpu(CpuId(0))));
    assert_eq!(nc.drain(&other, foreign), Err(FreeError::ForeignFrame(f.page)));
    assert_eq!(nc.drain(&pa, foreign), Err(FreeError::InvalidCpu(CpuId(0))));
    assert_eq!(nc.page(), page);
    unchanged(&pa, before);
    unchanged(&other, other_before);
    assert_eq!(nc.alloc(&pa, cpu, 100, Gfp::ATOMIC, 1).unwrap().offset, 100);
    pa.page_frag_free(cpu, f.page).unwrap();
    pa.page_frag_free(cpu, f.page).unwrap();
    nc.drain(&pa, cpu).unwrap();
    assert_eq!(census(&pa).allocated, 0);
    // Drained, the cache may serve another allocator.
    let g = nc.alloc(&other, foreign, 100, Gfp::ATOMIC, 1).unwrap();
    other.page_frag_free(foreign, g.page).unwrap();
    nc.drain(&other, foreign).unwrap();
    assert_eq!(census(&other).allocated, 0);
}

/// A full order-0 fallback page is reused once its fragments are back, but never for a
/// fragment larger than itself.
#[test]
fn a_reused_order0_frag_page_never_holds_more_than_a_page() {
    let pa = PageAllocator::new(
        MemoryMap::single_node(2, 16 * MIB).unwrap(),
        Tunables::default(),
        Policy::modern(),
    )
    .unwrap();
    let cpu = pa.cpu(CpuId(0)).unwrap();
    // Hold every other page, so no free block above order 0 remains.
    let mut held = Vec::new();
    while let Ok(p) = pa.alloc_pages(cpu, Gfp::KERNEL | Gfp::MEMALLOC, Order(0)) {
        held.push(p);
    }
    for p in held.iter().filter(|p| p.0 % 2 == 0) {
        pa.free_pages(cpu, *p, Order(0)).unwrap();
    }
    pa.drain_all_pages(cpu, None);
    let mut nc = PageFragCache::new();
    let most = PAGE_FRAG_CACHE_MAX_SIZE + 1 - MIN_BIAS;
    let frags: Vec<_> = (0..most).map(|_| nc.alloc(&pa, cpu, 0, Gfp::ATOMIC, 1).unwrap()).collect();
    let (page, order) = nc.page().unwrap();
    assert_eq!(order, Order(0));
    for f in &frags {
        pa.page_frag_free(cpu, f.page).unwrap();
    }
    // Full by its bias, every fragment back: the page is reused, but 5000 bytes do not fit.
    assert_eq!(
        nc.alloc(&pa, cpu, 5000, Gfp::ATOMIC, 1),
        Err(AllocError::OutOfMemory { order: Order(0) })
    );
    assert_eq!(nc.alloc(&pa, cpu, 4096, Gfp::ATOMIC, 1), Ok(pagealloc::Frag { page, offset: 0 }));
    pa.page_frag_free(cpu, page).unwrap();
    nc.drain(&pa, cpu).unwrap();
    for p in held.iter().filter(|p| p.0 % 2 == 1) {
        pa.free_pages(cpu, *p, Order(0)).unwrap();
    }
    pa.drain_all_pages(cpu, None);
    assert_eq!(pa.nr_free_pages(), pa.managed_pages());
}

/// `free_pages` of a page_frag page refuses while its cache carves it or more than one
/// fragment is out (it used to free the page under them, and the next allocation handed the
/// fragments' memory to someone else); with one fragment left it frees, as dropping that
/// last reference does.
#[test]
fn free_pages_refuses_a_page_frag_page_others_hold() {
    let pa = machine(64 * MIB);
    let cpu = pa.cpu(CpuId(0)).unwrap();
    let mut nc = PageFragCache::new();
    let frags: Vec<_> = (0..3).map(|_| nc.alloc(&pa, cpu, 1000, Gfp::ATOMIC, 1).unwrap()).collect();
    let (page, order) = nc.page().unwrap();
    let before = footprint(&pa);
    // The cache's bias plus three fragments: the count set at refill.
    let refs = PAGE_FRAG_CACHE_MAX_SIZE + 1;
    assert_eq!(
        pa.free_pages(cpu, page, order),
        Err(FreeError::StillReferenced { pfn: page, refs })
    );
    unchanged(&pa, before);
    // Two fragments back; the cache still holds the page.
    for f in &frags[..2] {
        pa.page_frag_free(cpu, f.page).unwrap();
    }
    let refs = PAGE_FRAG_CACHE_MAX_SIZE + 1 - 2;
    assert_eq!(
        pa.free_pages(cpu, page, order),
        Err(FreeError::StillReferenced { pfn: page, refs })
    );
    // Drained with two fragments out: two references.
    let more = nc.alloc(&pa, cpu, 1000, Gfp::ATOMIC, 1).unwrap();
    nc.drain(&pa, cpu).unwrap();
    assert_eq!(
        pa.free_pages(cpu, page, order),
        Err(FreeError::StillReferenced { pfn: page, refs: 2 })
    );
    let msg = FreeError::StillReferenced { pfn: page, refs: 2 }.to_string();
    assert!(msg.contains("page_frag page with 2 references held"), "{msg}");
    unchanged(&pa, before);
    // A wrong order is still named as such.
    assert!(matches!(pa.free_pages(cpu, page, Order(0)), Err(FreeError::WrongOrder { .. })));
    // One reference left: free_pages drops it and frees the page.
    pa.page_frag_free(cpu, frags[2].page).unwrap();
    pa.free_pages(cpu, more.page, order).unwrap();
    assert_eq!(pa.page_frag_free(cpu, page), Err(FreeError::NotAllocated { pfn: page }));
    assert_eq!(census(&pa).allocated, 0);
    validate(&pa).unwrap();
}

/// The zone's public accessors and watermark checks answer any order, index, mark or count:
/// orders above 10 and watermark index 4 used to index past their tables (a panic), a mark
/// above `i64::MAX` wrapped negative (and passed), and the sums overflowed.
#[test]
fn zone_accessors_and_watermark_checks_answer_any_argument() {
    let pa = machine(64 * MIB);
    let before = footprint(&pa);
    let normal = ZoneType::Normal;
    for z in pa.zones() {
        for order in [Order(11), Order(64), Order(255)] {
            assert_eq!(z.nr_free(order), 0);
            assert!(!z.has_free(order, MigrateType::Movable));
            assert!(!z.watermark_ok(order, 0, normal, AllocFlags::default()));
            assert!(!z.watermark_fast(order, 0, normal, AllocFlags::default()));
        }
        for w in [4, usize::MAX] {
            assert_eq!(z.wmark_pages(w), u64::MAX);
        }
        for flags in [AllocFlags::default(), AllocFlags::RESERVES, AllocFlags::NO_WATERMARKS] {
            assert!(!z.watermark_ok(Order(0), u64::MAX, normal, flags));
            assert!(!z.watermark_fast(Order(0), u64::MAX, normal, flags));
            assert!(!z.watermark_ok_with_free(Order(3), 0, normal, flags, i64::MIN));
        }
        // Ordinary arguments still pass: a fresh zone is far above a mark of 0.
        assert!(z.watermark_ok(Order(0), 0, normal, AllocFlags::default()));
        assert_eq!(z.nr_free(Order(10)), z.free_pages().0 >> 10);
    }
    unchanged(&pa, before);
}

/// The validator checks a zone against the allocator it belongs to; another allocator's
/// zone is a violation, not a walk of the wrong metadata.
#[test]
fn validating_a_zone_of_another_allocator_is_a_violation() {
    let pa = machine(64 * MIB);
    let other = machine(64 * MIB);
    let z = &other.zones()[0];
    let v = validate_zone(&pa, z).unwrap_err();
    assert!(v.to_string().contains("not one of this allocator's"), "{v}");
    validate_zone(&other, z).unwrap();
}

/// A prepared request: impossible flags are refused when it is prepared; a request another
/// allocator prepared is refused (even one of the same flags and shape) and changes nothing;
/// a bad order is refused as `alloc_pages` refuses it.
#[test]
fn prepared_requests_are_checked() {
    let pa = machine(64 * MIB);
    let cpu = pa.cpu(CpuId(0)).unwrap();
    let gfp = Gfp::KERNEL | Gfp::DMA | Gfp::DMA32;
    assert_eq!(pa.prepare(gfp), Err(AllocError::ImpossibleZones(gfp)));
    let own = pa.prepare(Gfp::KERNEL).unwrap();
    assert_eq!(own.gfp(), Gfp::KERNEL);
    let cached = pa.alloc_prepared(cpu, &own, Order(0)).unwrap();
    pa.free_pages(cpu, cached, Order(0)).unwrap();
    let before = footprint(&pa);
    let twin = machine(64 * MIB);
    let foreign = twin.prepare(Gfp::KERNEL).unwrap();
    for order in [Order(0), Order(3)] {
        assert_eq!(pa.alloc_prepared(cpu, &foreign, order), Err(AllocError::ForeignRequest));
    }
    assert_eq!(
        pa.alloc_prepared(twin.cpu(CpuId(0)).unwrap(), &own, Order(0)),
        Err(AllocError::InvalidCpu(CpuId(0)))
    );
    assert_eq!(pa.alloc_prepared(cpu, &own, Order(11)), Err(AllocError::InvalidOrder(Order(11))));
    unchanged(&pa, before);
    assert!(AllocError::ForeignRequest.to_string().contains("another allocator"));
}

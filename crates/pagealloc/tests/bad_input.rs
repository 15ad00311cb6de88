//! Hostile input on the public API: every case is refused with a typed error (or answered
//! correctly) and leaves the allocator as it was — same free pages, same pages on the per-CPU
//! lists, validator passing. One test per kind of input (docs/reliability.md lists them).

use pagealloc::debug::validate;
use pagealloc::{AllocError, CpuId, Gfp, MemoryMap, Order, PageAllocator, Policy, Tunables};

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
        let node = pagealloc::NodeId(0);
        assert_eq!(
            pa.alloc_pages_node(cpu, node, gfp, Order(3)),
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

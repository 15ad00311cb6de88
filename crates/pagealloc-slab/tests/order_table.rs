//! Objects per slab and slab order for a table of object sizes and CPU counts, as SLUB
//! computes them (`calculate_order`), each expected value worked out by hand from the rule.
//!
//! Notation: `min_objects = 4 * (fls(nr_cpus) + 1)` unless set; the search starts at the order
//! holding `min_objects` objects (capped at what order 3 holds) and accepts the first order
//! whose leftover `slab % size` is at most 1/16 of the slab, then 1/8, 1/4, 1/2 (6.7+).
//! The 64-CPU rows are what real `/proc/slabinfo` files of 64-CPU (and 33..=127-CPU)
//! machines show for the kmalloc caches: kmalloc-256 `32 2`, -512 `32 4`, -1k `32 8`,
//! -2k `16 8`, -4k `8 8`, -8k `4 8` (objperslab, pagesperslab).

use pagealloc::{CpuId, MemoryMap, PageAllocator, Policy, Tunables};
use pagealloc_slab::order::{calculate_order, order_objects, OrderRule, SlubConfig};
use pagealloc_slab::{KmemCache, SlabFlags};

/// (object size, CPUs, expected objects per slab, expected order).
const TABLE: &[(u32, u32, u32, u8)] = &[
    // 64 CPUs: min_objects = 4 * (fls(64) + 1) = 4 * (7 + 1) = 32.
    // 32 * 8 = 256 B → order 0; 4096 / 8 = 512 objects, no leftover.
    (8, 64, 512, 0),
    // 32 * 64 = 2 KiB → order 0; 4096 / 64 = 64.
    (64, 64, 64, 0),
    // 32 * 96 = 3 KiB → order 0; 4096 % 96 = 64 <= 4096 / 16 = 256 → 42 objects.
    (96, 64, 42, 0),
    // 32 * 128 = 4 KiB exactly → order 0, 32 objects.
    (128, 64, 32, 0),
    // 32 * 192 = 6 KiB → order 1; 8192 % 192 = 128 <= 512 → 42 objects.
    (192, 64, 42, 1),
    // 32 * 256 = 8 KiB → order 1, 32 objects.
    (256, 64, 32, 1),
    // 32 * 512 = 16 KiB → order 2, 32 objects.
    (512, 64, 32, 2),
    // 32 * 1 KiB = 32 KiB → order 3, 32 objects.
    (1024, 64, 32, 3),
    // Order 3 holds only 32 KiB / 2 KiB = 16, so min_objects = 16: 32 KiB → order 3.
    (2048, 64, 16, 3),
    // Capped at 32 KiB / 4 KiB = 8 → order 3, 8 objects.
    (4096, 64, 8, 3),
    // Capped at 32 KiB / 8 KiB = 4 → order 3, 4 objects.
    (8192, 64, 4, 3),
    // 8 CPUs: min_objects = 4 * (fls(8) + 1) = 4 * (4 + 1) = 20.
    // 20 * 192 = 3840 B → order 0; 4096 % 192 = 64 <= 256 → 21 objects.
    (192, 8, 21, 0),
    // 20 * 256 = 5 KiB → order 1, 32 objects.
    (256, 8, 32, 1),
    // 20 * 512 = 10 KiB → order 2, 32 objects.
    (512, 8, 32, 2),
    // 20 * 1 KiB = 20 KiB → order 3, 32 objects.
    (1024, 8, 32, 3),
    // 4 CPUs: min_objects = 4 * (fls(4) + 1) = 4 * (3 + 1) = 16.
    // 16 * 256 = 4 KiB → order 0, 16 objects.
    (256, 4, 16, 0),
    // 16 * 512 = 8 KiB → order 1, 16 objects.
    (512, 4, 16, 1),
    // 16 * 1 KiB = 16 KiB → order 2, 16 objects.
    (1024, 4, 16, 2),
    // Capped at 16; 16 * 2 KiB = 32 KiB → order 3.
    (2048, 4, 16, 3),
    // Cap 32768 / 3000 = 10 → 30000 B → order 3; leftover 2768 > 2048 (1/16) but
    // <= 4096 (1/8) → order 3, 10 objects.
    (3000, 4, 10, 3),
    // 1 CPU: min_objects = 4 * (fls(1) + 1) = 8.
    // 8 * 256 = 2 KiB → order 0, 16 objects.
    (256, 1, 16, 0),
    // 8 * 1 KiB = 8 KiB → order 1, 8 objects.
    (1024, 1, 8, 1),
    // 8 * 1500 = 12000 B → order 2, but 16384 % 1500 = 1384 > 1024 (1/16); order 3:
    // 32768 % 1500 = 1268 <= 2048 → order 3, 21 objects.
    (1500, 1, 21, 3),
    // 224 CPUs: min_objects = 4 * (fls(224) + 1) = 4 * (8 + 1) = 36.
    // 36 * 128 = 4608 B → order 1; 8192 / 128 = 64 objects.
    (128, 224, 64, 1),
    // One object above slub_max_order: cap max(32768 / 40000, 1) = 1; no order <= 3 holds
    // it → get_order(40000) = 4, 1 object.
    (40000, 64, 1, 4),
];

fn check(cfg: &SlubConfig, size: u32, cpus: u32, objects: u32, order: u8) {
    let got = calculate_order(size, cpus, cfg).expect("an order exists");
    assert_eq!(
        (order_objects(got.0, size), got.0),
        (objects, order),
        "size {size} on {cpus} CPUs ({:?})",
        cfg.order_rule
    );
}

#[test]
fn slub_orders_match_the_table() {
    let cfg = SlubConfig::default();
    for &(size, cpus, objects, order) in TABLE {
        check(&cfg, size, cpus, objects, order);
    }
}

/// Every row above comes out the same under the pre-6.7 search: there the first
/// `min_objects` that succeeds does so at the same order.
#[test]
fn the_old_rule_agrees_on_the_table() {
    let cfg = SlubConfig::default().with(|c| c.order_rule = OrderRule::Pre6_7);
    for &(size, cpus, objects, order) in TABLE {
        check(&cfg, size, cpus, objects, order);
    }
}

/// Where the two rules part: 11000-byte objects. Order 3 holds 2 (cap 2), leaving 32768 -
/// 22000 = 10768 bytes, more than 1/4 of the slab (8192).
/// - 6.7+: the 1/2 bound accepts it (10768 <= 16384) → order 3, 2 objects.
/// - before: 1/16..1/4 fail for min_objects 2; one object with any leftover, from
///   get_order(11000) = 2 → order 2, 1 object.
#[test]
fn the_rules_differ_where_the_series_says() {
    let new = SlubConfig::default();
    let old = new.with(|c| c.order_rule = OrderRule::Pre6_7);
    check(&new, 11000, 64, 2, 3);
    check(&old, 11000, 64, 1, 2);
}

/// Boot parameters move the result as the kernel's do.
#[test]
fn boot_parameters() {
    // slub_min_order=2: 64-byte objects start at order 2 → 16384 / 64 = 256 objects.
    let c = SlubConfig::default().with(|c| c.min_order = 2).checked().unwrap();
    check(&c, 64, 64, 256, 2);
    // slub_max_order=1: 1 KiB objects are capped at 8192 / 1024 = 8 → order 1.
    let c = SlubConfig::default().with(|c| c.max_order = 1);
    check(&c, 1024, 64, 8, 1);
    // slub_min_objects=4: 4 * 1 KiB = 4 KiB → order 0, 4 objects.
    let c = SlubConfig::default().with(|c| c.min_objects = 4);
    check(&c, 1024, 64, 4, 0);
    // slub_min_order=10 with 8-byte objects: 4 MiB / 8 would exceed 32767 objects, so the
    // largest order below get_order(8 * 32767) = 6 is taken: order 5, 16384 objects.
    let c = SlubConfig::default().with(|c| c.min_order = 10).checked().unwrap();
    check(&c, 8, 64, 16384, 5);
}

/// A cache built on an allocator of N CPUs takes its order from N, and its stride from the
/// alignment: a 200-byte cache-line-aligned object strides 256 bytes.
#[test]
fn caches_take_the_machine_cpu_count_and_alignment() {
    let pa = PageAllocator::new(
        MemoryMap::single_node(8, 32 << 20).unwrap(),
        Tunables::default(),
        Policy::modern(),
    )
    .unwrap();
    assert!(pa.cpu(CpuId(7)).is_some());
    let cfg = SlubConfig::default();
    let c = KmemCache::new(&pa, "t", 200, 0, SlabFlags::HWCACHE_ALIGN, &cfg).unwrap();
    // Stride 256 on 8 CPUs: 20 * 256 = 5 KiB → order 1, 32 objects.
    assert_eq!((c.size(), c.oo().objects, c.oo().order.0), (256, 32, 1));
    // The fallback is one object's order, 0.
    assert_eq!((c.min().order.0, c.min().objects), (0, 16));
    // min_partial = clamp(ilog2(256) / 2, 5, 10) = 5; cpu_partial 52 (>= 256 bytes) →
    // ceil(104 / 32) = 4 slabs.
    assert_eq!((c.min_partial(), c.cpu_partial(), c.cpu_partial_slabs()), (5, 52, 4));
}

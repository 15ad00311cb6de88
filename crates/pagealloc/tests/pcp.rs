//! Per-CPU pagesets through the public API: the docs/kernel-reference.md §2.9 machine and its §5.5
//! reference traces, then one behavioural test per `Policy` switch, each comparing policies
//! that differ in that switch alone. Every scenario ends with the validator.
//! Section numbers (§) in this file are those of `docs/kernel-reference.md` unless another
//! document is named.

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Barrier, Mutex};

use pagealloc::debug::validate;
use pagealloc::policy::{
    BatchCap, BuddyPrefetch, BulkFree, BulkFreeCallers, FreeBatchSizing, FreeHigh, FreeHighBatch,
    FreeHighDrain, FreeHighThreshold, HighDecay, NoFragment, PageFragFree, PcpHigh, PcpLists,
    PcpLocking, PgfreeUnit, ReclaimActiveLimit, RefillSizing,
};
use pagealloc::zone_flags::BELOW_HIGH;
use pagealloc::PCPF_FREE_HIGH_BATCH;
use pagealloc::{
    CacheInfo, Counter, Cpu, CpuId, EventSink, FreeError, Gfp, MemoryMap, MigrateType, NodeId,
    Order, PageAllocator, PageFragCache, PcpSnapshot, Pfn, Policy, TraceEvent, Tunables, VmEvents,
    Zone, ZoneType,
};

const PAGE: u64 = 4096;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

// ---------------------------------------------------------------------------------------------
// Machines and helpers

/// The docs/kernel-reference.md §2.9 machine: 1 node, 2 CPUs; DMA 3976 pages from 4 KiB, DMA32 772
/// 864 pages from 16 MiB, Normal 327 680 pages (1.25 GiB) from 4 GiB, so lowmem L = 1 104 520;
/// min_free_kbytes 67584; the modern policy.
fn spec_machine() -> PageAllocator {
    PageAllocator::new(spec_machine_map(), spec_tunables(), Policy::modern())
        .expect("valid allocator")
}

/// The memory map of [`spec_machine`].
fn spec_machine_map() -> MemoryMap {
    let mut map = MemoryMap::new();
    map.add_range(NodeId(0), 0x1000..0x1000 + 3976 * PAGE)
        .unwrap()
        .add_range(NodeId(0), 16 * MIB..16 * MIB + 772_864 * PAGE)
        .unwrap()
        .add_range(NodeId(0), 4 * GIB..4 * GIB + 1280 * MIB)
        .unwrap()
        .set_cpus(NodeId(0), 2)
        .unwrap();
    map
}

/// The tunables of [`spec_machine`].
fn spec_tunables() -> Tunables {
    Tunables::default().with(|t| t.min_free_kbytes = Some(67_584))
}

/// 1 node, 2 CPUs, `mib` MiB from 4 GiB up: a Normal zone and nothing else. With default
/// tunables, 64 MiB gives batch 3, high 500..=1024, watermarks 800/1000/1200; 512 MiB gives
/// batch 31, high 3520..=8192, watermarks 5632/7040/8448.
fn normal_machine_with<E: EventSink>(
    policy: Policy,
    mib: u64,
    tunables: Tunables,
    events: E,
) -> PageAllocator<E> {
    let mut map = MemoryMap::new();
    map.add_range(NodeId(0), 4 * GIB..4 * GIB + mib * MIB).unwrap().set_cpus(NodeId(0), 2).unwrap();
    PageAllocator::with_events(map, tunables, policy, events).expect("valid allocator")
}

fn normal_machine(policy: Policy, mib: u64) -> PageAllocator {
    normal_machine_with(policy, mib, Tunables::default(), pagealloc::NoEvents)
}

/// 1 node, 2 CPUs: DMA32 64 MiB (from 16 MiB) below a Normal zone of `normal_mib` MiB.
fn dma32_normal_machine(policy: Policy, normal_mib: u64) -> PageAllocator {
    let mut map = MemoryMap::new();
    map.add_range(NodeId(0), 16 * MIB..80 * MIB)
        .unwrap()
        .add_range(NodeId(0), 4 * GIB..4 * GIB + normal_mib * MIB)
        .unwrap()
        .set_cpus(NodeId(0), 2)
        .unwrap();
    PageAllocator::new(map, Tunables::default(), policy).expect("valid allocator")
}

fn normal<E: EventSink>(pa: &PageAllocator<E>) -> &Zone {
    pa.zone_by_type(NodeId(0), ZoneType::Normal).expect("a Normal zone")
}

fn cpu<E: EventSink>(pa: &PageAllocator<E>, id: u32) -> Cpu {
    pa.cpu(CpuId(id)).expect("the CPU exists")
}

/// CPU `id`'s pageset for the Normal zone.
fn pcp<E: EventSink>(pa: &PageAllocator<E>, id: u32) -> PcpSnapshot {
    normal(pa).pcp(CpuId(id)).expect("the pageset exists")
}

fn alloc_n<E: EventSink>(
    pa: &PageAllocator<E>,
    cpu: Cpu,
    gfp: Gfp,
    order: Order,
    n: usize,
) -> Vec<Pfn> {
    (0..n).map(|_| pa.alloc_pages(cpu, gfp, order).expect("memory left")).collect()
}

fn free_all<E: EventSink>(pa: &PageAllocator<E>, cpu: Cpu, pages: &[Pfn], order: Order) {
    for &p in pages {
        pa.free_pages(cpu, p, order).expect("a valid free");
    }
}

/// How much counter `c` moved since `before`.
fn moved<E: EventSink>(pa: &PageAllocator<E>, before: &VmEvents, c: Counter) -> u64 {
    pa.vm_events().since(before).get(c)
}

/// Free `pages` one by one on `cpu`, returning how much `c` moved on each free.
fn per_free<E: EventSink>(
    pa: &PageAllocator<E>,
    cpu: Cpu,
    pages: &[Pfn],
    order: Order,
    c: Counter,
) -> Vec<u64> {
    pages
        .iter()
        .map(|&p| {
            let before = pa.vm_events();
            pa.free_pages(cpu, p, order).expect("a valid free");
            moved(pa, &before, c)
        })
        .collect()
}

/// `(1-based index, value)` of the non-zero entries.
fn nonzero(v: &[u64]) -> Vec<(usize, u64)> {
    v.iter().enumerate().filter(|(_, &d)| d > 0).map(|(i, &d)| (i + 1, d)).collect()
}

fn check<E: EventSink>(pa: &PageAllocator<E>) {
    validate(pa).unwrap_or_else(|v| panic!("invariant broken: {v}"));
}

/// An event sink that keeps every `mm_page_pcpu_drain` record.
#[derive(Debug, Default)]
struct DrainLog(Mutex<Vec<(Pfn, Order, MigrateType)>>);

impl EventSink for DrainLog {
    fn record(&self, event: &TraceEvent) {
        if let TraceEvent::PagePcpuDrain { pfn, order, migratetype, .. } = *event {
            self.0.lock().unwrap().push((pfn, order, migratetype));
        }
    }
}

impl DrainLog {
    fn take(&self) -> Vec<(Pfn, Order, MigrateType)> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

// ---------------------------------------------------------------------------------------------
// docs/kernel-reference.md §2.9 and §5.5

/// docs/kernel-reference.md §2.9: the worked sizes of the Normal zone's pagesets and watermarks.
#[test]
fn spec_machine_has_the_reference_pageset_sizes_and_watermarks() {
    let pa = spec_machine();
    let lowmem: u64 = [ZoneType::Dma, ZoneType::Dma32, ZoneType::Normal]
        .iter()
        .map(|&zt| pa.zone_by_type(NodeId(0), zt).unwrap().managed_pages().0)
        .sum();
    assert!((1_104_425..=1_104_645).contains(&lowmem), "L = {lowmem}");
    let z = normal(&pa);
    assert_eq!(z.managed_pages().0, 327_680);
    assert_eq!(pa.min_free_kbytes(), 67_584);
    assert_eq!([0, 1, 2, 3].map(|w| z.wmark_pages(w)), [5012, 6265, 7518, 8771]);
    for id in 0..2 {
        let s = pcp(&pa, id);
        assert_eq!((s.batch, s.high_min, s.high_max), (63, 3132, 20480), "CPU {id}");
        assert_eq!((s.count, s.high), (0, 0), "unused pagesets start at high 0");
    }
    // The derived values of §2.9.
    assert_eq!(pa.stat_threshold(z), 20);
    assert_eq!(z.lowmem_reserve(ZoneType::Normal), 0);
    let dma32 = pa.zone_by_type(NodeId(0), ZoneType::Dma32).unwrap();
    assert_eq!(dma32.lowmem_reserve(ZoneType::Normal), 1280);
    check(&pa);
}

/// docs/kernel-reference.md §5.5, first trace (§3.5): refills double up to batch << S and each
/// grows high.
#[test]
fn order0_allocation_refills_double_to_2016_and_grow_high_to_high_max() {
    let pa = spec_machine();
    let c0 = cpu(&pa, 0);
    let (mut sizes, mut highs, mut factors) = (Vec::new(), Vec::new(), Vec::new());
    while sizes.len() < 15 {
        let before = pa.vm_events();
        let p = pa.alloc_pages(c0, Gfp::KERNEL, Order(0)).unwrap();
        assert_eq!(pa.zone_of(p).unwrap().zone_type(), ZoneType::Normal);
        let refilled = moved(&pa, &before, Counter::PcpRefillPages);
        if refilled > 0 {
            assert_eq!(moved(&pa, &before, Counter::PcpRefill), 1);
            let s = pcp(&pa, 0);
            assert_eq!(s.count as u64, refilled - 1, "each refill happens on an empty list");
            sizes.push(refilled);
            highs.push(s.high);
            factors.push(s.alloc_factor);
        }
    }
    assert_eq!(
        sizes,
        [63, 126, 252, 504, 1008, 2016, 2016, 2016, 2016, 2016, 2016, 2016, 2016, 2016, 2016]
    );
    assert_eq!(
        highs,
        [
            3195, 3321, 3573, 4077, 5085, 7101, 9117, 11133, 13149, 15165, 17181, 19197, 20480,
            20480, 20480
        ]
    );
    assert_eq!(factors[..7], [1, 2, 3, 4, 5, 5, 5]);
    check(&pa);
}

/// docs/kernel-reference.md §5.5 "fresh pcp, pure order-0 frees" (§4.2–4.4).
#[test]
fn order0_frees_on_a_fresh_pageset_drain_2016_from_the_3132nd_free() {
    let pa = spec_machine();
    let pages = alloc_n(&pa, cpu(&pa, 1), Gfp::KERNEL, Order(0), 3132 + 3 * 2016);
    let c0 = cpu(&pa, 0);
    let mut drains = Vec::new();
    for (i, &p) in pages.iter().enumerate() {
        let before = pa.vm_events();
        pa.free_pages(c0, p, Order(0)).unwrap();
        let drained = moved(&pa, &before, Counter::DrainHighPages);
        let s = pcp(&pa, 0);
        assert_eq!(s.high, 3132, "free {}", i + 1);
        if drained > 0 {
            assert_eq!(moved(&pa, &before, Counter::DrainHigh), 1);
            assert_eq!(s.count, 1116, "free {}", i + 1);
            drains.push((i + 1, drained));
        }
    }
    assert_eq!(drains, [(3132, 2016), (5148, 2016), (7164, 2016), (9180, 2016)]);
    check(&pa);
}

/// Order-3 frees on a fresh CPU 0 pageset; the drain of each free (free_high pages).
fn order3_free_high_trace(llc_slice_bytes: u64) -> (PageAllocator, Vec<u64>) {
    let pa = spec_machine();
    pa.set_cpu_cache(CpuId(0), CacheInfo { llc_slice_bytes, data_slices_bytes: 0 });
    let pages = alloc_n(&pa, cpu(&pa, 1), Gfp::KERNEL, Order(3), 40);
    let drains = per_free(&pa, cpu(&pa, 0), &pages, Order(3), Counter::DrainFreeHighPages);
    assert_eq!(pcp(&pa, 0).high, 3132, "free_high never lowers high below high_min");
    (pa, drains)
}

/// docs/kernel-reference.md §5.5, order-3 frees with FREE_HIGH_BATCH (§2.7, §4.2 step 3).
#[test]
fn order3_frees_with_free_high_batch_keep_a_batch_cached() {
    let (pa, drains) = order3_free_high_trace(2 << 20);
    assert_ne!(pcp(&pa, 0).flags & PCPF_FREE_HIGH_BATCH, 0);
    assert_eq!(nonzero(&drains), [(9, 72), (17, 64), (25, 64), (33, 64)]);
    assert_eq!(pcp(&pa, 0).count, 7 * 8, "frees 34..=40 are cached");
    check(&pa);
}

/// docs/kernel-reference.md §5.5, order-3 frees without FREE_HIGH_BATCH (§4.2 step 3, §4.4).
#[test]
fn order3_frees_without_free_high_batch_drain_every_block() {
    let (pa, drains) = order3_free_high_trace(0);
    assert_eq!(pcp(&pa, 0).flags & PCPF_FREE_HIGH_BATCH, 0);
    let mut want = vec![0; 8];
    want.push(72);
    want.resize(40, 8);
    assert_eq!(drains, want);
    assert_eq!(pcp(&pa, 0).count, 0);
    check(&pa);
}

// ---------------------------------------------------------------------------------------------
// One test per policy switch

/// Every switch has a test below; a new switch must get one too.
#[test]
fn every_policy_switch_has_a_behavioural_test() {
    assert_eq!(
        Policy::KEYS,
        [
            "pcp_lists",
            "batch_cap",
            "pcp_locking",
            "pcp_high",
            "reclaim_active_limit",
            "zone_below_high",
            "high_decay",
            "free_batch_sizing",
            "free_high",
            "free_high_threshold",
            "free_high_batch",
            "free_high_drain",
            "refill_sizing",
            "bulk_free",
            "bulk_free_callers",
            "bulk_free_prefetch",
            "drain_pages_chunked",
            "pgfree_unit",
            "page_frag_free",
            "alloc_nofragment",
            "watermark_boost",
            "migratetype_hygiene",
            "lowmem_reserve_empty_zone_zero",
            "remote_free",
        ]
    );
}

/// remote_free (beyond the kernel): pages CPU 0 allocated and CPU 1 frees go back to CPU 0's
/// pageset through its remote-free list, not to CPU 1's (which would overflow to the zone
/// while CPU 0 refills from it). Off, the same traffic goes through the zone lock.
#[test]
fn remote_free_sends_pages_home_instead_of_through_the_zone() {
    let run = |remote_free: bool| {
        let pa = normal_machine(Policy::modern().with(|p| p.remote_free = remote_free), 64);
        let (c0, c1) = (cpu(&pa, 0), cpu(&pa, 1));
        // Warm up: CPU 0's pageset holds a batch or more.
        let warm = alloc_n(&pa, c0, Gfp::KERNEL, Order(0), 8);
        free_all(&pa, c0, &warm, Order(0));
        let before = pa.vm_events();
        // A producer-consumer loop: CPU 0 allocates 32, CPU 1 frees them, 200 times.
        for _ in 0..200 {
            let pages = alloc_n(&pa, c0, Gfp::KERNEL, Order(0), 32);
            free_all(&pa, c1, &pages, Order(0));
            check(&pa);
        }
        let held_by_cpu1 = pcp(&pa, 1).count;
        // CPU 1's tick sends its last, partial chain home; the last round's blocks wait on
        // CPU 0's list until the drain takes them back.
        pa.tick(c1);
        pa.drain_all_pages(c0, None);
        let d = pa.vm_events().since(&before);
        assert_eq!(pa.nr_free_pages(), pa.managed_pages(), "nothing stranded after the drain");
        check(&pa);
        (d, held_by_cpu1)
    };
    let (off, off_cpu1) = run(false);
    assert_eq!(off.get(Counter::PcpRemoteFree), 0);
    assert!(off.get(Counter::ZoneLockAcquire) > 100, "{}", off.get(Counter::ZoneLockAcquire));
    assert!(off_cpu1 > 0, "off: CPU 1's pageset caches what it frees");
    let (on, on_cpu1) = run(true);
    assert_eq!(on.get(Counter::PcpRemoteFree), 6400, "every free went home");
    assert_eq!(on.get(Counter::PcpRemoteCollect), 6400, "and was taken back");
    assert_eq!(on_cpu1, 0, "on: CPU 1's pageset never sees them");
    assert!(
        on.get(Counter::ZoneLockAcquire) * 10 < off.get(Counter::ZoneLockAcquire),
        "zone lock {} on against {} off",
        on.get(Counter::ZoneLockAcquire),
        off.get(Counter::ZoneLockAcquire)
    );
}

/// remote_free: the list holds at most REMOTE_FREE_MAX pages (a chain that does not fit is
/// freed locally), a second free of a block waiting on it is a double free, and the owner's
/// tick takes the list back even when it allocates nothing; the freeing CPU's tick sends its
/// last, partial chain.
#[test]
fn remote_free_is_bounded_refuses_double_frees_and_is_collected_by_the_tick() {
    use pagealloc::policy::{REMOTE_FREE_BATCH_MAX, REMOTE_FREE_MAX};
    let pa = normal_machine(Policy::modern().with(|p| p.remote_free = true), 64);
    let (c0, c1) = (cpu(&pa, 0), cpu(&pa, 1));
    // Chains of `b` pages: as many as fit on CPU 0's list go there, the rest are freed on
    // CPU 1, and the last `pending` wait on CPU 1's chain.
    let b = (pcp(&pa, 1).batch as u32).min(REMOTE_FREE_BATCH_MAX) as usize;
    assert_eq!(b, 3, "the 64 MiB machine's batch");
    let n = REMOTE_FREE_MAX as usize + 89;
    let (published, pending) = (REMOTE_FREE_MAX as usize / b * b, n % b);
    let local = n - published - pending;
    let pages = alloc_n(&pa, c0, Gfp::KERNEL, Order(0), n);
    let before = pa.vm_events();
    let held = normal(&pa).pcp_pages();
    free_all(&pa, c1, &pages, Order(0));
    let d = pa.vm_events().since(&before);
    assert_eq!(d.get(Counter::PcpRemoteFree), published as u64);
    assert_eq!(pcp(&pa, 1).count, local as i32, "the chains that did not fit freed on CPU 1");
    assert_eq!(pagealloc::debug::census(&pa).remote, (published + pending) as u64);
    assert_eq!(normal(&pa).pcp_pages(), held + n as u64, "waiting pages count as held");
    check(&pa);
    assert_eq!(
        pa.free_pages(c1, pages[0], Order(0)),
        Err(FreeError::DoubleFree { pfn: pages[0] }),
        "the first block waits on CPU 0's list"
    );
    assert_eq!(
        pa.free_pages(c0, pages[n - 1], Order(0)),
        Err(FreeError::DoubleFree { pfn: pages[n - 1] }),
        "the last block waits on CPU 1's chain"
    );
    check(&pa);
    // A free of CPU 0's own block on CPU 0 is local, as without the switch.
    let own = pa.alloc_pages(c0, Gfp::KERNEL, Order(0)).unwrap();
    let before = pa.vm_events();
    pa.free_pages(c0, own, Order(0)).unwrap();
    assert_eq!(pa.vm_events().since(&before).get(Counter::PcpRemoteFree), 0);
    let count0 = pcp(&pa, 0).count;
    pa.tick(c0);
    assert_eq!(pcp(&pa, 0).count, count0 + published as i32, "the tick took them back");
    assert_eq!(pagealloc::debug::census(&pa).remote, pending as u64, "still on CPU 1's chain");
    check(&pa);
    pa.tick(c1);
    pa.tick(c0);
    assert_eq!(pcp(&pa, 0).count, count0 + (published + pending) as i32, "the chain came home");
    assert_eq!(pagealloc::debug::census(&pa).remote, 0);
    check(&pa);
}

/// 1 node, 3 CPUs, 512 MiB of Normal memory from 4 GiB (batch 31), `remote_free` on.
fn remote_free_machine() -> PageAllocator {
    let mut map = MemoryMap::new();
    map.add_range(NodeId(0), 4 * GIB..4 * GIB + 512 * MIB).unwrap().set_cpus(NodeId(0), 3).unwrap();
    let policy = Policy::modern().with(|p| p.remote_free = true);
    PageAllocator::new(map, Tunables::default(), policy).expect("valid allocator")
}

/// remote_free batches: CPU 1's frees of CPU 0's blocks wait on CPU 1's pending chain (held,
/// not yet on CPU 0's list, so CPU 0's tick finds nothing) until the chain holds `batch`
/// pages, when all go in one push; a free for another owner (CPU 2) sends the chain first,
/// CPU 1's tick sends the last one, and each owner's tick takes its own blocks back.
#[test]
fn remote_free_batches_go_home_at_the_bound_another_owner_and_the_tick() {
    let pa = remote_free_machine();
    let (c0, c1, c2) = (cpu(&pa, 0), cpu(&pa, 1), cpu(&pa, 2));
    let b = pcp(&pa, 1).batch as usize;
    assert_eq!(b, 31, "the 512 MiB machine's batch, below REMOTE_FREE_BATCH_MAX");
    let a = alloc_n(&pa, c0, Gfp::KERNEL, Order(0), b + 5);
    let other = alloc_n(&pa, c2, Gfp::KERNEL, Order(0), 1);
    let before = pa.vm_events();
    let since = |c: Counter| pa.vm_events().since(&before).get(c);
    let held = normal(&pa).pcp_pages();
    free_all(&pa, c1, &a[..b - 1], Order(0));
    assert_eq!(since(Counter::PcpRemoteFree), 0, "below the bound nothing is sent");
    assert_eq!(pcp(&pa, 1).count, 0, "nor freed on CPU 1");
    assert_eq!(normal(&pa).pcp_pages(), held + b as u64 - 1, "pending pages count as held");
    pa.tick(c0);
    assert_eq!(since(Counter::PcpRemoteCollect), 0, "CPU 0 cannot see a pending chain");
    check(&pa);
    pa.free_pages(c1, a[b - 1], Order(0)).unwrap();
    assert_eq!(since(Counter::PcpRemoteFree), b as u64, "the bound sends the chain");
    assert_eq!(pagealloc::debug::census(&pa).remote, b as u64);
    check(&pa);
    free_all(&pa, c1, &a[b..], Order(0));
    assert_eq!(since(Counter::PcpRemoteFree), b as u64);
    pa.free_pages(c1, other[0], Order(0)).unwrap();
    assert_eq!(since(Counter::PcpRemoteFree), b as u64 + 5, "another owner sends the chain");
    check(&pa);
    pa.tick(c1);
    assert_eq!(since(Counter::PcpRemoteFree), b as u64 + 6, "the tick sends the last chain");
    let count0 = pcp(&pa, 0).count;
    pa.tick(c0);
    pa.tick(c2);
    assert_eq!(since(Counter::PcpRemoteCollect), b as u64 + 6, "each owner took its own back");
    assert_eq!(pcp(&pa, 0).count, count0 + b as i32 + 5);
    assert_eq!(pagealloc::debug::census(&pa).remote, 0);
    assert_eq!(normal(&pa).pcp_pages(), held + b as u64 + 6);
    check(&pa);
}

/// remote_free: a drain of the freeing CPU's pageset frees its pending chain through that
/// pageset (it reaches no owner's list, so `drain_all_pages` leaves nothing waiting); a
/// block on the chain, freed again on any CPU, is a double free that changes nothing.
#[test]
fn remote_free_pending_chains_are_drained_and_refuse_double_frees() {
    let pa = remote_free_machine();
    let (c0, c1, c2) = (cpu(&pa, 0), cpu(&pa, 1), cpu(&pa, 2));
    let a = alloc_n(&pa, c0, Gfp::KERNEL, Order(0), 4);
    let big = pa.alloc_pages(c0, Gfp::KERNEL, Order(2)).unwrap();
    free_all(&pa, c1, &a, Order(0));
    pa.free_pages(c1, big, Order(2)).unwrap();
    assert_eq!(pagealloc::debug::census(&pa).remote, 8, "four pages and an order-2 block wait");
    let before = pa.vm_events();
    for c in [c0, c1, c2] {
        assert_eq!(pa.free_pages(c, a[2], Order(0)), Err(FreeError::DoubleFree { pfn: a[2] }));
        assert_eq!(pa.free_pages(c, big, Order(2)), Err(FreeError::DoubleFree { pfn: big }));
        check(&pa);
    }
    assert_eq!(pa.vm_events().since(&before), VmEvents::default(), "the refusals changed nothing");
    assert_eq!(pagealloc::debug::census(&pa).remote, 8);
    pa.drain_pages(c2, CpuId(1));
    let d = pa.vm_events().since(&before);
    assert_eq!(d.get(Counter::PcpRemoteFree), 0, "drained, not sent");
    assert_eq!(pagealloc::debug::census(&pa).remote, 0);
    check(&pa);
    // Again, drained by drain_all_pages this time: every page comes back.
    let a = alloc_n(&pa, c0, Gfp::KERNEL, Order(0), 4);
    free_all(&pa, c1, &a, Order(0));
    pa.drain_all_pages(c2, None);
    assert_eq!(pa.nr_free_pages(), pa.managed_pages(), "nothing stranded after the drain");
    check(&pa);
}

/// pcp_lists: docs/preset-history.md §1.3 (44042b449872 reverted) vs docs/kernel-reference.md §1.6.
#[test]
fn pcp_lists_order0_only_sends_order1_blocks_to_the_zone() {
    let modern = Policy::modern();
    let order0 = modern.with(|p| p.pcp_lists = PcpLists::Order0Only);
    for (policy, cached) in [(modern, true), (order0, false)] {
        let pa = normal_machine(policy, 64);
        let c0 = cpu(&pa, 0);
        let before = pa.vm_events();
        let p = pa.alloc_pages(c0, Gfp::KERNEL, Order(1)).unwrap();
        pa.free_pages(c0, p, Order(1)).unwrap();
        let d = pa.vm_events().since(&before);
        let count = pcp(&pa, 0).count as u64;
        if cached {
            assert_eq!((d.get(Counter::PcpAlloc), d.get(Counter::PcpFree)), (1, 1));
            // A refill of batch 3 at order 1 takes max(3 >> 1, 2) = 2 blocks.
            assert_eq!(d.get(Counter::PcpRefillPages), 4);
            assert_eq!(count, 4, "both blocks are back on the list");
        } else {
            assert_eq!((d.get(Counter::PcpAlloc), d.get(Counter::PcpFree)), (0, 0));
            assert_eq!(d.get(Counter::PcpRefill), 0);
            assert_eq!(count, 0);
            assert_eq!(pa.nr_free_pages(), pa.managed_pages(), "the block went straight back");
        }
        check(&pa);
    }
}

/// pcp_lists: one THP list (6.0) vs two (6.10, bf14ed81f571; docs/kernel-reference.md §1.6).
#[test]
fn pcp_lists_thp_split_keeps_movable_and_unmovable_thps_apart() {
    let split = Policy::modern();
    let shared = split.with(|p| p.pcp_lists = PcpLists::ThpShared);
    for (policy, is_shared) in [(split, false), (shared, true)] {
        let pa = normal_machine(policy, 64);
        let c0 = cpu(&pa, 0);
        let kernel_thp = pa.alloc_pages(c0, Gfp::KERNEL, Order(9)).unwrap();
        assert_eq!(pcp(&pa, 0).count, 512, "a THP refill takes two blocks");
        let before = pa.vm_events();
        let movable_thp = pa.alloc_pages(c0, Gfp::TRANSHUGE, Order(9)).unwrap();
        let refills = moved(&pa, &before, Counter::PcpRefill);
        let block_type = normal(&pa).pageblock_type(movable_thp).unwrap();
        if is_shared {
            assert_eq!(refills, 0, "hit on the shared list");
            assert_eq!(block_type, MigrateType::Unmovable);
        } else {
            assert_eq!(refills, 1, "the movable THP list was empty");
            assert_eq!(block_type, MigrateType::Movable);
        }
        free_all(&pa, c0, &[kernel_thp, movable_thp], Order(9));
        check(&pa);
    }
}

/// Sink that parks the first pageset drain (pageset and zone locks held) until released.
#[derive(Debug)]
struct Gate {
    armed: AtomicBool,
    entered: Barrier,
    release: Barrier,
}

impl EventSink for Gate {
    fn record(&self, event: &TraceEvent) {
        if matches!(event, TraceEvent::PagePcpuDrain { .. }) && self.armed.swap(false, SeqCst) {
            self.entered.wait();
            self.release.wait();
        }
    }
}

/// Free a page on CPU 0 while another thread drains CPU 0's pageset; returns the
/// (PcpTrylockFail, PcpFree) counts of that free.
fn free_while_pageset_busy(locking: PcpLocking) -> (u64, u64) {
    let policy = Policy::modern().with(|p| p.pcp_locking = locking);
    let gate =
        Gate { armed: AtomicBool::new(true), entered: Barrier::new(2), release: Barrier::new(2) };
    let pa = normal_machine_with(policy, 64, Tunables::default(), gate);
    let (c0, c1) = (cpu(&pa, 0), cpu(&pa, 1));
    let pages = alloc_n(&pa, c1, Gfp::KERNEL, Order(0), 11);
    free_all(&pa, c0, &pages[..10], Order(0));
    let zone = normal(&pa).idx();
    let before = pa.vm_events();
    std::thread::scope(|s| {
        let drainer = s.spawn(|| pa.drain_pages_zone(c1, CpuId(0), zone));
        pa.events().entered.wait();
        // The drainer now holds CPU 0's pageset lock and the zone lock.
        let freer = s.spawn(|| pa.free_pages(c0, pages[10], Order(0)).unwrap());
        if locking == PcpLocking::SpinlockTrylock {
            // The free must find the pageset busy before the drain may finish (bounded, in
            // case it never does: the assertions below then report it).
            for _ in 0..10_000_000u64 {
                if moved(&pa, &before, Counter::PcpTrylockFail) > 0 {
                    break;
                }
                std::thread::yield_now();
            }
        }
        pa.events().release.wait();
        drainer.join().unwrap();
        freer.join().unwrap();
    });
    let d = pa.vm_events().since(&before);
    check(&pa);
    (d.get(Counter::PcpTrylockFail), d.get(Counter::PcpFree))
}

/// batch_cap: before 4.19 vs d8a759b57035 (4.19); docs/kernel-reference.md §2.4. On a 1 GiB
/// zone the 4.19 batch is 63 (high 6·63); the older cap gives 31 (high 186), so a run of
/// order-0 frees overflows sooner and drains smaller batches.
#[test]
fn batch_cap_halves_the_batch_of_a_large_zone() {
    for (cap, batch, high, want) in [
        (BatchCap::HalfMib, 31, 186, vec![(186, 31), (217, 31), (248, 31), (279, 31)]),
        (BatchCap::OneMib, 63, 378, vec![]),
    ] {
        let frag = Policy::preset("frag-vanilla").unwrap().with(|p| p.batch_cap = cap);
        let pa = normal_machine(frag, 1024);
        let s = pcp(&pa, 0);
        assert_eq!((s.batch, s.high_min, s.high_max), (batch, high, high), "{cap}");
        let pages = alloc_n(&pa, cpu(&pa, 1), Gfp::KERNEL, Order(0), 300);
        let drains = per_free(&pa, cpu(&pa, 0), &pages, Order(0), Counter::DrainHighPages);
        assert_eq!(nonzero(&drains), want, "{cap}");
        check(&pa);
        // Auto-tuned kernels never had the old cap; the combination still caps the batch.
        let pa = normal_machine(Policy::modern().with(|p| p.batch_cap = cap), 1024);
        assert_eq!(pcp(&pa, 0).batch, batch, "{cap}");
    }
}

/// pcp_locking: 6.0 spinlock + trylock (docs/kernel-reference.md §4.1) vs ≤ 5.19 IRQs off.
#[test]
fn pcp_locking_trylock_sends_a_free_on_a_busy_pageset_to_the_zone() {
    assert_eq!(free_while_pageset_busy(PcpLocking::SpinlockTrylock), (1, 0));
    assert_eq!(free_while_pageset_busy(PcpLocking::LocalIrqOff), (0, 1));
}

/// pcp_high: docs/preset-history.md §1.1, §1.2b; docs/kernel-reference.md §2.5, §5.4 (6.7
/// auto-tuning).
#[test]
fn pcp_high_is_six_batches_or_static_low_wmark_or_grows_on_refill() {
    for variant in [PcpHigh::SixTimesBatch, PcpHigh::StaticLowWmark, PcpHigh::AutoTune] {
        let pa = normal_machine(Policy::modern().with(|p| p.pcp_high = variant), 512);
        let c0 = cpu(&pa, 0);
        assert_eq!(normal(&pa).wmark_pages(1), 7040);
        let first = pa.alloc_pages(c0, Gfp::KERNEL, Order(0)).unwrap();
        let s = pcp(&pa, 0);
        assert_eq!(s.batch, 31);
        let rest = alloc_n(&pa, c0, Gfp::KERNEL, Order(0), 2000);
        let later = pcp(&pa, 0);
        match variant {
            PcpHigh::SixTimesBatch => {
                assert_eq!((s.high_min, s.high_max, s.high), (186, 186, 186));
                assert_eq!(later.high, 186);
            }
            PcpHigh::StaticLowWmark => {
                // max(LOW / 2 CPUs, 4·batch) = 3520.
                assert_eq!((s.high_min, s.high_max, s.high), (3520, 3520, 3520));
                assert_eq!(later.high, 3520);
            }
            PcpHigh::AutoTune => {
                // high_max = max(managed / 8 / 2, 4·batch) = 8192; the first refill adds batch.
                assert_eq!((s.high_min, s.high_max, s.high), (3520, 8192, 3551));
                assert!(later.high > 6000, "refills keep growing high: {}", later.high);
            }
        }
        free_all(&pa, c0, &[first], Order(0));
        free_all(&pa, c0, &rest, Order(0));
        check(&pa);
    }
}

/// Grow CPU 0's high by allocating 2000 pages there (refills 31, 62, …, 992, 992: high
/// 3520 → 6465, 945 pages left cached); returns the pages.
fn grow_high_on_cpu0<E: EventSink>(pa: &PageAllocator<E>) -> Vec<Pfn> {
    let pages = alloc_n(pa, cpu(pa, 0), Gfp::KERNEL, Order(0), 2000);
    let s = pcp(pa, 0);
    assert_eq!((s.high, s.count), (6465, 945));
    pages
}

/// reclaim_active_limit: docs/preset-history.md §1.2d (5.14) and §3.7; docs/kernel-reference.md
/// §4.3 step 3.
#[test]
fn reclaim_active_limit_caps_the_pageset_and_shrinks_high() {
    for variant in
        [ReclaimActiveLimit::Off, ReclaimActiveLimit::Cap, ReclaimActiveLimit::CapAndShrink]
    {
        let pa = normal_machine(Policy::modern().with(|p| p.reclaim_active_limit = variant), 512);
        let pages = grow_high_on_cpu0(&pa);
        pa.set_reclaim_active(normal(&pa).idx(), true);
        let before = pa.vm_events();
        free_all(&pa, cpu(&pa, 0), &pages[..200], Order(0));
        let reclaim_drains = moved(&pa, &before, Counter::DrainReclaim);
        let s = pcp(&pa, 0);
        match variant {
            ReclaimActiveLimit::Off => {
                assert_eq!(reclaim_drains, 0);
                assert_eq!((s.count, s.high), (945 + 200, 6465));
            }
            ReclaimActiveLimit::Cap => {
                assert!(reclaim_drains > 0);
                assert!(s.count < 4 * 31, "count {}", s.count);
                assert_eq!(s.high, 6465, "the cap leaves high alone");
            }
            ReclaimActiveLimit::CapAndShrink => {
                assert!(reclaim_drains > 0);
                assert!(s.count < 4 * 31, "count {}", s.count);
                assert_eq!(s.high, s.high_min, "every free lowered high");
            }
        }
        pa.set_reclaim_active(normal(&pa).idx(), false);
        free_all(&pa, cpu(&pa, 0), &pages[200..], Order(0));
        check(&pa);
    }
}

/// zone_below_high: 57c0419c5f0e (6.7); docs/kernel-reference.md §3.5 step 4, §4.2 step 6, §4.3
/// step 5.
#[test]
fn zone_below_high_stops_refill_growth_and_drains_frees() {
    for on in [true, false] {
        let pa = normal_machine(Policy::modern().with(|p| p.zone_below_high = on), 64);
        let z = normal(&pa);
        let (c0, c1) = (cpu(&pa, 0), cpu(&pa, 1));
        let mut taken = Vec::new();
        while !z.test_flag(BELOW_HIGH) {
            taken.push(pa.alloc_pages(c1, Gfp::KERNEL, Order(0)).unwrap());
        }
        assert!(z.free_pages().0 < z.wmark_pages(2));
        // A refill on the fresh CPU 0 pageset.
        taken.push(pa.alloc_pages(c0, Gfp::KERNEL, Order(0)).unwrap());
        let s = pcp(&pa, 0);
        let grown = if on { 0 } else { s.batch };
        assert_eq!(s.high, s.high_min + grown, "zone_below_high = {on}");
        let before = pa.vm_events();
        free_all(&pa, c0, &taken, Order(0));
        let below_high_drains = moved(&pa, &before, Counter::DrainBelowHigh);
        if on {
            assert!(below_high_drains > 0);
            assert!(!z.test_flag(BELOW_HIGH), "a drain that lifted the zone cleared it");
        } else {
            assert_eq!(below_high_drains, 0);
            assert!(moved(&pa, &before, Counter::DrainHigh) > 0);
        }
        check(&pa);
    }
}

/// high_decay: docs/kernel-reference.md §5.1 (6.7 one-eighth); docs/preset-history.md §3.7, §3.9
/// (v1 forms).
#[test]
fn high_decay_lowers_high_on_tick_by_its_rule() {
    for variant in
        [HighDecay::Off, HighDecay::FourFifths, HighDecay::CountMinLimited, HighDecay::SevenEighths]
    {
        let pa = normal_machine(Policy::modern().with(|p| p.high_decay = variant), 512);
        let c0 = cpu(&pa, 0);
        let pages = grow_high_on_cpu0(&pa);
        free_all(&pa, c0, &pages, Order(0));
        let s = pcp(&pa, 0);
        assert_eq!((s.count, s.high), (2945, 6465));
        let before = pa.vm_events();
        let work = pa.tick(c0);
        let after_one = pcp(&pa, 0).high;
        pa.tick(c0);
        let after_two = pcp(&pa, 0).high;
        assert_eq!(moved(&pa, &before, Counter::DrainDecay), 0, "count stays below high");
        match variant {
            HighDecay::Off => {
                assert_eq!(work, 0);
                assert_eq!((after_one, after_two), (6465, 6465));
            }
            HighDecay::FourFifths => assert_eq!((after_one, after_two), (5172, 4137)),
            // count_min was 0 (allocations emptied the list), then 2945 from the first tick.
            HighDecay::CountMinLimited => assert_eq!((after_one, after_two), (6465, 5172)),
            HighDecay::SevenEighths => assert_eq!((after_one, after_two), (5657, 4950)),
        }
        if variant != HighDecay::Off {
            assert!(work > 0, "decay re-arms while high is above high_min");
        }
        check(&pa);
    }
}

/// Overflow drain sizes of order-0 frees on a fresh CPU 0 pageset with static high 3520.
fn overflow_drains(
    sizing: FreeBatchSizing,
    tunables: Tunables,
    n: usize,
) -> (Vec<u64>, PcpSnapshot) {
    let base = Policy::preset("tune-base").unwrap();
    let policy = base.with(|p| p.free_batch_sizing = sizing);
    let pa = normal_machine_with(policy, 512, tunables, pagealloc::NoEvents);
    let pages = alloc_n(&pa, cpu(&pa, 1), Gfp::KERNEL, Order(0), n);
    let drains = per_free(&pa, cpu(&pa, 0), &pages, Order(0), Counter::DrainHighPages);
    check(&pa);
    let drains = nonzero(&drains).into_iter().map(|(_, d)| d).collect();
    (drains, pcp(&pa, 0))
}

/// free_batch_sizing: docs/preset-history.md §1.2c, §3.4, §3.7, §3.10; docs/kernel-reference.md
/// §4.4.
#[test]
fn free_batch_sizing_sets_the_size_of_successive_overflow_drains() {
    let t = Tunables::default();
    let n = 3520 + 31 + 62 + 124 + 248 + 496 + 992 + 1984 + 3489;
    let (batch, _) = overflow_drains(FreeBatchSizing::Batch, t, 3520 + 5 * 31);
    assert_eq!(batch, [31; 6]);
    let (factor, s) = overflow_drains(FreeBatchSizing::FreeFactor, t, n);
    assert_eq!(factor, [31, 62, 124, 248, 496, 992, 1984, 3489, 3489]);
    assert_eq!(s.free_factor, 7);
    let (capped, s) = overflow_drains(FreeBatchSizing::FreeFactorCapped, t, 3520 + 1953 + 992);
    assert_eq!(capped, [31, 62, 124, 248, 496, 992, 992, 992]);
    assert_eq!(s.free_factor, 5);
    let (count, s) = overflow_drains(FreeBatchSizing::FreeCount, t, 3520 + 2 * 992);
    assert_eq!(count, [992, 992, 992]);
    assert_eq!(s.free_count, 992);
    let (count_v1, _) = overflow_drains(FreeBatchSizing::FreeCountV1, t, 3520 + 2 * 992);
    assert_eq!(count_v1, [992, 992, 992]);

    // high = 527 = 17·batch, so batch << 4 == high − batch exactly: the strict test stops
    // free_factor at 4, the v1 patch 7 inclusive test takes it to 5 (same drain sizes).
    let t = Tunables::default().with(|t| t.min_free_kbytes = Some(3376));
    let n = 527 + 31 + 62 + 124 + 248 + 496;
    let (strict, s) = overflow_drains(FreeBatchSizing::FreeFactorCapped, t, n);
    assert_eq!(s.high, 527);
    assert_eq!((strict, s.free_factor), (vec![31, 62, 124, 248, 496, 496], 4));
    let (inclusive, s) = overflow_drains(FreeBatchSizing::FreeFactorCappedInclusive, t, n);
    assert_eq!((inclusive, s.free_factor), (vec![31, 62, 124, 248, 496, 496], 5));
}

/// free_batch_sizing: v1 patch 10 vs v3 9/9 (6ccdcb6d3a74); docs/kernel-reference.md §4.3 step 3.
#[test]
fn free_count_v1_lowers_high_by_free_count_and_merged_by_at_least_a_batch() {
    for (sizing, step) in [(FreeBatchSizing::FreeCountV1, 1), (FreeBatchSizing::FreeCount, 31)] {
        let pa = normal_machine(Policy::modern().with(|p| p.free_batch_sizing = sizing), 512);
        let pages = grow_high_on_cpu0(&pa);
        assert_eq!(pcp(&pa, 0).free_count, 0, "allocations halved it away");
        pa.set_reclaim_active(normal(&pa).idx(), true);
        free_all(&pa, cpu(&pa, 0), &pages[..1], Order(0));
        assert_eq!(pcp(&pa, 0).high, 6465 - step, "{sizing}");
        pa.set_reclaim_active(normal(&pa).idx(), false);
        free_all(&pa, cpu(&pa, 0), &pages[1..], Order(0));
        check(&pa);
    }
}

/// free_high: f26b3fa04611 (5.18) vs ca71fe1ad922 (6.7); docs/kernel-reference.md §4.2 step 3.
#[test]
fn free_high_drains_on_high_order_frees_any_or_consecutive() {
    for variant in [FreeHigh::Off, FreeHigh::AnyHighOrder, FreeHigh::Consecutive] {
        let pa = normal_machine(Policy::modern().with(|p| p.free_high = variant), 512);
        let (c0, c1) = (cpu(&pa, 0), cpu(&pa, 1));
        let small = alloc_n(&pa, c1, Gfp::KERNEL, Order(0), 41);
        let big = alloc_n(&pa, c1, Gfp::KERNEL, Order(1), 3);
        free_all(&pa, c0, &small[..40], Order(0));
        assert!(pcp(&pa, 0).free_count >= 31, "the burst set the signal");
        // order 1, order 0, order 1, order 1
        let steps = [(big[0], 1), (small[40], 0), (big[1], 1), (big[2], 1)];
        let drains: Vec<u64> = steps
            .iter()
            .map(|&(p, o)| {
                let before = pa.vm_events();
                pa.free_pages(c0, p, Order(o)).unwrap();
                moved(&pa, &before, Counter::DrainFreeHigh)
            })
            .collect();
        let want = match variant {
            FreeHigh::Off => [0, 0, 0, 0],
            FreeHigh::AnyHighOrder => [1, 0, 1, 1],
            FreeHigh::Consecutive => [0, 0, 0, 1],
        };
        assert_eq!(drains, want, "{variant}");
        check(&pa);
    }
}

/// First free_high drain (1-based free, pages drained) while CPU 0 frees `n` order-1 blocks
/// that CPU 1 allocated, with no FREE_HIGH_BATCH flag; `None` if none drained.
fn first_order1_free_high(pa: &PageAllocator, n: usize) -> Option<(usize, u64)> {
    pa.set_cpu_cache(CpuId(0), CacheInfo { llc_slice_bytes: 0, data_slices_bytes: 0 });
    let pages = alloc_n(pa, cpu(pa, 1), Gfp::KERNEL, Order(1), n);
    let drains = per_free(pa, cpu(pa, 0), &pages, Order(1), Counter::DrainFreeHighPages);
    check(pa);
    nonzero(&drains).first().copied()
}

/// free_high_threshold: 6ccdcb6d3a74 (6.7) vs Nikhil Dhama's -V2 of March 2025 (unmerged) vs
/// c544a952ba61 (6.16). Each order-1 free adds 2 to free_count (read before the free), so the
/// first free_high comes at the first free whose predecessors freed the threshold, and takes
/// the whole pageset (2 pages per free so far, under `b << S`).
#[test]
fn free_high_threshold_delays_the_first_free_high_drain() {
    let with = |t: FreeHighThreshold| Policy::modern().with(|p| p.free_high_threshold = t);
    for (variant, want) in [
        // §2.9 machine: batch 63, high_min 3132; thresholds 63, 315, 63 + 1566.
        (FreeHighThreshold::Batch, (33, 66)),
        (FreeHighThreshold::FiveBatches, (159, 318)),
        (FreeHighThreshold::BatchPlusHalfHighMin, (816, 1632)),
    ] {
        let pa = PageAllocator::new(spec_machine_map(), spec_tunables(), with(variant))
            .expect("valid allocator");
        assert_eq!((pcp(&pa, 0).batch, pcp(&pa, 0).high_min), (63, 3132));
        assert_eq!(first_order1_free_high(&pa, 900), Some(want), "{variant}");
    }
    // 512 MiB: batch 31, high_min 3520. free_count stops growing at 31 << 5 = 992, below
    // 31 + 1760, so under the 6.16 rule order-1 frees alone never trigger free_high here.
    let pa = normal_machine(with(FreeHighThreshold::BatchPlusHalfHighMin), 512);
    assert_eq!(first_order1_free_high(&pa, 1500), None);
    assert_eq!(pcp(&pa, 0).free_count, 992);
    let pa = normal_machine(with(FreeHighThreshold::Batch), 512);
    assert_eq!(first_order1_free_high(&pa, 1500), Some((17, 34)));
    // The free_factor forms signal on free_factor ≠ 0 and never read the threshold.
    let ff = |t| with(t).with(|p| p.free_batch_sizing = FreeBatchSizing::FreeFactorCapped);
    let runs: Vec<_> = [FreeHighThreshold::Batch, FreeHighThreshold::BatchPlusHalfHighMin]
        .map(|t| first_order1_free_high(&normal_machine(ff(t), 512), 1500))
        .into();
    assert_eq!(runs[0], runs[1]);
}

/// free_high_batch: v1 patches 2–3 vs v3 94a3bfe4073c; docs/kernel-reference.md §2.7, §4.2 step 3.
#[test]
fn free_high_batch_flag_follows_its_cache_rule_and_keeps_a_batch() {
    let llc = CacheInfo { llc_slice_bytes: 2 << 20, data_slices_bytes: 0 };
    let data = CacheInfo { llc_slice_bytes: 0, data_slices_bytes: 2 << 20 };
    let cases = [
        (FreeHighBatch::Off, llc, false),
        (FreeHighBatch::Off, data, false),
        (FreeHighBatch::LlcSliceOver3Batch, llc, true),
        (FreeHighBatch::LlcSliceOver3Batch, data, false),
        (FreeHighBatch::DataSlicesOver4Batch, llc, false),
        (FreeHighBatch::DataSlicesOver4Batch, data, true),
    ];
    for (variant, cache, flagged) in cases {
        let pa = normal_machine(Policy::modern().with(|p| p.free_high_batch = variant), 512);
        pa.set_cpu_cache(CpuId(0), cache);
        assert_eq!(pcp(&pa, 0).flags & PCPF_FREE_HIGH_BATCH != 0, flagged, "{variant} {cache:?}");
        let pages = alloc_n(&pa, cpu(&pa, 1), Gfp::KERNEL, Order(3), 13);
        let drains = per_free(&pa, cpu(&pa, 0), &pages, Order(3), Counter::DrainFreeHighPages);
        // batch 31: free_count reaches 32 ≥ 31 before the 5th free.
        let want: &[u64] = if flagged {
            &[0, 0, 0, 0, 40, 0, 0, 0, 32, 0, 0, 0, 32]
        } else {
            &[0, 0, 0, 0, 40, 8, 8, 8, 8, 8, 8, 8, 8]
        };
        assert_eq!(drains, want, "{variant} {cache:?}");
        check(&pa);
    }
}

/// free_high_drain: f26b3fa04611 (5.18) vs 51a755c56dc0 (6.7); docs/kernel-reference.md §4.3, §4.4.
#[test]
fn free_high_drain_takes_everything_or_batch_shl_s_and_shrinks_high() {
    for variant in [FreeHighDrain::All, FreeHighDrain::CappedShrinkHigh] {
        let pa = normal_machine(Policy::modern().with(|p| p.free_high_drain = variant), 512);
        let (c0, c1) = (cpu(&pa, 0), cpu(&pa, 1));
        let grown = grow_high_on_cpu0(&pa);
        let big = alloc_n(&pa, c1, Gfp::KERNEL, Order(1), 2);
        free_all(&pa, c0, &grown[..1500], Order(0));
        free_all(&pa, c0, &big[..1], Order(1));
        let s = pcp(&pa, 0);
        assert_eq!((s.count, s.high, s.free_count), (945 + 1500 + 2, 6465, 992));
        let before = pa.vm_events();
        free_all(&pa, c0, &big[1..], Order(1));
        let drained = moved(&pa, &before, Counter::DrainFreeHighPages);
        let after = pcp(&pa, 0);
        match variant {
            FreeHighDrain::All => {
                assert_eq!(drained, 2449);
                assert_eq!((after.count, after.high), (0, 6465));
            }
            FreeHighDrain::CappedShrinkHigh => {
                assert_eq!(drained, 992);
                assert_eq!((after.count, after.high), (2449 - 992, 6465 - 992));
            }
        }
        free_all(&pa, c0, &grown[1500..], Order(0));
        check(&pa);
    }
}

/// refill_sizing: c0a242394cb9 (6.7); docs/kernel-reference.md §3.5 steps 3–5.
#[test]
fn refill_sizing_batch_or_doubling_alloc_factor() {
    for variant in [RefillSizing::Batch, RefillSizing::AllocFactor] {
        let pa = normal_machine(Policy::modern().with(|p| p.refill_sizing = variant), 512);
        let c0 = cpu(&pa, 0);
        let mut sizes = Vec::new();
        let mut pages = Vec::new();
        while sizes.len() < 8 {
            let before = pa.vm_events();
            pages.push(pa.alloc_pages(c0, Gfp::KERNEL, Order(0)).unwrap());
            let refilled = moved(&pa, &before, Counter::PcpRefillPages);
            if refilled > 0 {
                sizes.push(refilled);
            }
        }
        let want: &[u64] = match variant {
            RefillSizing::Batch => &[31; 8],
            RefillSizing::AllocFactor => &[31, 62, 124, 248, 496, 992, 992, 992],
        };
        assert_eq!(sizes, want, "{variant}");
        free_all(&pa, c0, &pages, Order(0));
        check(&pa);
    }
}

/// Put 20 unmovable, 20 movable and 20 reclaimable order-0 pages on CPU 0's pageset (lists
/// 0, 1, 2), drain it, and return the drained blocks' types in drain order, with the
/// allocator for further inspection.
fn drain_three_lists(policy: Policy) -> (Vec<MigrateType>, PageAllocator<DrainLog>) {
    let pa = normal_machine_with(policy, 64, Tunables::default(), DrainLog::default());
    let (c0, c1) = (cpu(&pa, 0), cpu(&pa, 1));
    let mut pages = Vec::new();
    for gfp in [Gfp::KERNEL, Gfp::HIGHUSER_MOVABLE, Gfp::KERNEL_RECLAIMABLE] {
        pages.extend(alloc_n(&pa, c1, gfp, Order(0), 20));
    }
    pa.drain_pages_zone(c1, CpuId(1), normal(&pa).idx());
    pa.events().take();
    free_all(&pa, c0, &pages, Order(0));
    assert_eq!(pcp(&pa, 0).count, 60);
    pa.drain_pages_zone(c0, CpuId(0), normal(&pa).idx());
    let types = pa.events().take().into_iter().map(|(_, _, mt)| mt).collect();
    check(&pa);
    (types, pa)
}

/// bulk_free: docs/preset-history.md §1.2f (two-pass), §2.3 (v1 single pass), §2.4 (v2).
#[test]
fn bulk_free_chooses_the_list_order_of_a_drain() {
    use MigrateType::{Movable as M, Reclaimable as R, Unmovable as U};
    let run = |bulk_free| drain_three_lists(Policy::modern().with(|p| p.bulk_free = bulk_free)).0;
    let seq = |parts: &[(MigrateType, usize)]| -> Vec<MigrateType> {
        parts.iter().flat_map(|&(mt, n)| std::iter::repeat_n(mt, n)).collect()
    };
    assert_eq!(run(BulkFree::SinglePassAtStart), seq(&[(U, 20), (M, 20), (R, 20)]));
    assert_eq!(run(BulkFree::SinglePassAfterStart), seq(&[(M, 20), (R, 20), (U, 20)]));
    // 14 lists: list 1 and list 2 give one block each, list 0 (after 11 empty lists) twelve.
    let two_pass = run(BulkFree::TwoPassRoundRobin);
    assert_eq!(two_pass.len(), 60);
    assert_eq!(two_pass[..14], seq(&[(M, 1), (R, 1), (U, 12)])[..]);
}

/// bulk_free_prefetch: docs/preset-history.md §2.1; a cache effect only, so nothing differs.
#[test]
fn bulk_free_prefetch_changes_no_visible_state() {
    let base = Policy::preset("hpc-vanilla").unwrap();
    let observe = |bulk_free_prefetch| {
        let (types, pa) =
            drain_three_lists(base.with(|p| p.bulk_free_prefetch = bulk_free_prefetch));
        let z = normal(&pa);
        (types, pa.vm_events(), z.free_list_counts(), z.pcp(CpuId(0)), z.pcp(CpuId(1)))
    };
    let off = observe(BuddyPrefetch::Off);
    assert_eq!(observe(BuddyPrefetch::Order0Buddy), off);
    assert_eq!(observe(BuddyPrefetch::OrderBuddy), off);
}

/// drain_pages_chunked: "control latency caused by zone PCP draining" (6.10), §5.3.
#[test]
fn drain_pages_chunked_drains_in_batch_shl_s_chunks() {
    for chunked in [true, false] {
        let pa = normal_machine(Policy::modern().with(|p| p.drain_pages_chunked = chunked), 512);
        let (c0, c1) = (cpu(&pa, 0), cpu(&pa, 1));
        let pages = alloc_n(&pa, c1, Gfp::KERNEL, Order(0), 2500);
        free_all(&pa, c0, &pages, Order(0));
        assert_eq!(pcp(&pa, 0).count, 2500);
        let before = pa.vm_events();
        pa.drain_pages_zone(c1, CpuId(0), normal(&pa).idx());
        let d = pa.vm_events().since(&before);
        assert_eq!(d.get(Counter::DrainExplicitPages), 2500);
        assert_eq!(d.get(Counter::DrainExplicit), if chunked { 3 } else { 1 });
        assert_eq!(pcp(&pa, 0).count, 0);
        check(&pa);
    }
}

/// Counts zone-lock acquisitions and the yields between the chunks of a batched bulk free.
#[derive(Debug, Default)]
struct YieldCount {
    taken: std::sync::atomic::AtomicU64,
    yields: std::sync::atomic::AtomicU64,
}

impl EventSink for YieldCount {
    fn record(&self, _event: &TraceEvent) {}
    fn zone_lock_taken(&self, _cpu: CpuId, _zone: pagealloc::ZoneIdx) {
        self.taken.fetch_add(1, SeqCst);
    }
    fn zone_lock_yield(&self, _cpu: CpuId, _zone: pagealloc::ZoneIdx) {
        self.yields.fetch_add(1, SeqCst);
    }
}

/// What the 3132nd order-0 free on a fresh CPU 0 pageset of the §2.9 machine does under
/// `form` (the §5.5 flush: 2016 pages, batch 63): zone-lock acquisitions and yields during
/// that free, pages drained, the pageset's count after it, and the counters of the whole run
/// but the lock's.
fn flush_under(form: BulkFreeCallers) -> (u64, u64, u64, i32, VmEvents, Vec<u64>) {
    let policy = Policy::modern().with(|p| p.bulk_free_callers = form);
    let sink = YieldCount::default();
    let pa = PageAllocator::with_events(spec_machine_map(), spec_tunables(), policy, &sink)
        .expect("valid allocator");
    let pages = alloc_n(&pa, cpu(&pa, 1), Gfp::KERNEL, Order(0), 3132);
    let c0 = cpu(&pa, 0);
    free_all(&pa, c0, &pages[..3131], Order(0));
    let (taken, yields, before) =
        (sink.taken.load(SeqCst), sink.yields.load(SeqCst), pa.vm_events());
    pa.free_pages(c0, pages[3131], Order(0)).unwrap();
    let taken = sink.taken.load(SeqCst) - taken;
    let yields = sink.yields.load(SeqCst) - yields;
    let drained = moved(&pa, &before, Counter::DrainHighPages);
    assert_eq!(moved(&pa, &before, Counter::DrainHigh), 1, "one drain, however many chunks");
    check(&pa);
    let free: Vec<u64> = (0..=10).map(|o| normal(&pa).nr_free(Order(o))).collect();
    (taken, yields, drained, pcp(&pa, 0).count, pa.vm_events(), free)
}

/// bulk_free_callers: Joshua Hahn's 2025 series. A flush of N·batch pages takes the zone lock
/// N times (yielding between chunks) instead of once, and frees the same pages into the same
/// free lists; v4 stopped as soon as the pageset was below high, freeing one batch.
#[test]
fn bulk_free_callers_flush_in_batches_with_the_lock_released_between() {
    let (taken, yields, drained, count, whole_ev, whole_free) = flush_under(BulkFreeCallers::Whole);
    assert_eq!((taken, yields, drained, count), (1, 0, 2016, 1116));
    let (taken, yields, drained, count, ev, free) = flush_under(BulkFreeCallers::Batched);
    assert_eq!((taken, yields, drained, count), (32, 31, 2016, 1116), "2016 = 32 × 63");
    assert_eq!(free, whole_free, "the same pages reach the same free lists");
    let d = |e: &VmEvents| {
        let mut v: Vec<(Counter, u64)> = Counter::ALL.iter().map(|&c| (c, e.get(c))).collect();
        v.retain(|(c, _)| *c != Counter::ZoneLockAcquire);
        v
    };
    assert_eq!(d(&ev), d(&whole_ev), "every counter but the lock's is unchanged");
    assert_eq!(ev.get(Counter::ZoneLockAcquire), whole_ev.get(Counter::ZoneLockAcquire) + 31);
    // v4 (and v1–v3, whose recomputed threshold is still 3132 here) stop below high.
    for form in [
        BulkFreeCallers::BatchedStopBelowHigh,
        BulkFreeCallers::BatchedRecheckHigh,
        BulkFreeCallers::BatchedRecheckHighBatchDrains,
    ] {
        let (taken, yields, drained, count, _, _) = flush_under(form);
        assert_eq!((taken, yields, drained, count), (1, 0, 63, 3069), "{form}");
    }
}

/// bulk_free_callers: the decay of high frees `count − high` in chunks of batch in every
/// batched form, the same pages as one bulk free.
#[test]
fn bulk_free_callers_decay_in_batches() {
    let run = |form: BulkFreeCallers| {
        let sink = YieldCount::default();
        let policy = Policy::modern().with(|p| p.bulk_free_callers = form);
        let pa = normal_machine_with(policy, 512, Tunables::default(), &sink);
        let c0 = cpu(&pa, 0);
        let mut pages = grow_high_on_cpu0(&pa);
        pages.extend(alloc_n(&pa, cpu(&pa, 1), Gfp::KERNEL, Order(0), 3400));
        free_all(&pa, c0, &pages, Order(0));
        let s = pcp(&pa, 0);
        assert_eq!((s.count, s.high, s.batch), (6345, 6465, 31));
        let (taken, before) = (sink.taken.load(SeqCst), pa.vm_events());
        pa.tick(c0);
        let taken = sink.taken.load(SeqCst) - taken;
        let drained = moved(&pa, &before, Counter::DrainDecayPages);
        assert_eq!(moved(&pa, &before, Counter::DrainDecay), 1);
        check(&pa);
        (taken, sink.yields.load(SeqCst), drained, pcp(&pa, 0).count)
    };
    // high 6465 → 5657: 688 pages above it, 23 chunks (22 × 31 + 6).
    assert_eq!(run(BulkFreeCallers::Whole), (1, 0, 688, 5657));
    for form in &BulkFreeCallers::ALL[1..] {
        assert_eq!(run(*form), (23, 22, 688, 5657), "{form}");
    }
}

/// bulk_free_callers: v1 and v2 also cut explicit drains to chunks of batch (31 here) instead
/// of batch << S (992); later versions left drain_pages_zone alone.
#[test]
fn bulk_free_callers_v1_drains_in_chunks_of_batch() {
    for (form, chunks) in [
        (BulkFreeCallers::BatchedRecheckHighBatchDrains, 81),
        (BulkFreeCallers::BatchedRecheckHigh, 3),
        (BulkFreeCallers::Batched, 3),
    ] {
        let pa = normal_machine(Policy::modern().with(|p| p.bulk_free_callers = form), 512);
        let (c0, c1) = (cpu(&pa, 0), cpu(&pa, 1));
        let pages = alloc_n(&pa, c1, Gfp::KERNEL, Order(0), 2500);
        free_all(&pa, c0, &pages, Order(0));
        let before = pa.vm_events();
        pa.drain_pages_zone(c1, CpuId(0), normal(&pa).idx());
        let d = pa.vm_events().since(&before);
        assert_eq!(d.get(Counter::DrainExplicitPages), 2500, "{form}");
        assert_eq!(d.get(Counter::DrainExplicit), chunks, "{form}: ⌈2500 / chunk⌉");
        check(&pa);
    }
}

/// pgfree_unit: docs/preset-history.md §1.2a (5.14–6.0 blocks) vs §1.4 (6.6 pages).
#[test]
fn pgfree_unit_counts_pcp_frees_in_blocks_or_pages() {
    for (unit, pcp_order2) in [(PgfreeUnit::Pages, 4), (PgfreeUnit::Blocks, 1)] {
        let pa = normal_machine(Policy::modern().with(|p| p.pgfree_unit = unit), 64);
        let c0 = cpu(&pa, 0);
        let order2 = pa.alloc_pages(c0, Gfp::KERNEL, Order(2)).unwrap();
        let order4 = pa.alloc_pages(c0, Gfp::KERNEL, Order(4)).unwrap();
        let before = pa.vm_events();
        pa.free_pages(c0, order2, Order(2)).unwrap();
        assert_eq!(moved(&pa, &before, Counter::Pgfree), pcp_order2, "{unit}");
        let before = pa.vm_events();
        pa.free_pages(c0, order4, Order(4)).unwrap();
        assert_eq!(moved(&pa, &before, Counter::Pgfree), 16, "{unit}");
        check(&pa);
    }
}

/// Carve one fragment from a fresh page_frag cache, drain the cache and free the fragment;
/// returns the page's order and whether its free went to the pageset.
fn frag_page_free<E: EventSink>(pa: &PageAllocator<E>, gfp: Gfp) -> (Order, bool) {
    let c0 = cpu(pa, 0);
    let mut cache = PageFragCache::new();
    let frag = cache.alloc(pa, c0, 256, gfp, 64).unwrap();
    let (_, order) = cache.page().unwrap();
    cache.drain(pa, c0).unwrap();
    let before = pa.vm_events();
    pa.page_frag_free(c0, frag.page).unwrap();
    (order, moved(pa, &before, Counter::PcpFree) == 1)
}

/// page_frag_free: 65895b67ad27 (order 0 via PCP) and docs/kernel-reference.md §4.8 (every PCP
/// order).
#[test]
fn page_frag_free_routes_order0_and_order3_pages_by_policy() {
    for (variant, order0_pcp, order3_pcp) in [
        (PageFragFree::Buddy, false, false),
        (PageFragFree::PcpOrder0, true, false),
        (PageFragFree::Pcp, true, true),
    ] {
        let policy = Policy::modern().with(|p| p.page_frag_free = variant);
        // A fresh machine has order-3 blocks: the cache gets a 32 KiB page.
        let pa = normal_machine(policy, 64);
        assert_eq!(frag_page_free(&pa, Gfp::ATOMIC), (Order(3), order3_pcp), "{variant}");
        check(&pa);
        // With only isolated free pages left, the cache falls back to an order-0 page.
        let pa = normal_machine(policy, 64);
        let c1 = cpu(&pa, 1);
        let mut all = Vec::new();
        while let Ok(p) = pa.alloc_pages(c1, Gfp::KERNEL | Gfp::MEMALLOC, Order(0)) {
            all.push(p);
        }
        let odd: Vec<Pfn> = all.iter().copied().filter(|p| p.0 % 2 == 1).collect();
        free_all(&pa, c1, &odd, Order(0));
        pa.drain_all_pages(c1, None);
        assert_eq!(normal(&pa).nr_free(Order(1)), 0);
        assert_eq!(
            frag_page_free(&pa, Gfp::KERNEL | Gfp::MEMALLOC),
            (Order(0), order0_pcp),
            "{variant}"
        );
        check(&pa);
    }
}

/// Allocate movable pages on CPU 1 until they spill out of Normal, then give back every
/// odd-numbered Normal page: Normal is left with small movable fragments only.
fn fragment_normal<E: EventSink>(pa: &PageAllocator<E>) {
    let c1 = cpu(pa, 1);
    let mut normal_pages = Vec::new();
    loop {
        let p = pa.alloc_pages(c1, Gfp::HIGHUSER_MOVABLE | Gfp::MEMALLOC, Order(0)).unwrap();
        if pa.zone_of(p).unwrap().zone_type() != ZoneType::Normal {
            pa.free_pages(c1, p, Order(0)).unwrap();
            break;
        }
        normal_pages.push(p);
    }
    let odd: Vec<Pfn> = normal_pages.into_iter().filter(|p| p.0 % 2 == 1).collect();
    free_all(pa, c1, &odd, Order(0));
    pa.drain_all_pages(c1, None);
    let z = normal(pa);
    assert!((Order::PAGEBLOCK.0..=Order::MAX.0).all(|o| z.nr_free(Order(o)) == 0));
    assert!(z.free_pages().0 > z.wmark_pages(2), "fragments enough to pass the watermarks");
}

/// alloc_nofragment: 6bb154504f8b (5.0, seed 002); docs/preset-history.md §4.1.
#[test]
fn alloc_nofragment_spreads_to_dma32_before_fragmenting_normal() {
    let vanilla = Policy::preset("frag-vanilla").unwrap();
    let lowzone = Policy::preset("frag-lowzone").unwrap();
    assert_eq!(vanilla.differing_keys(&lowzone), ["alloc_nofragment"]);
    let modern = Policy::modern();
    let modern_off = modern.with(|p| p.alloc_nofragment = NoFragment::Off);
    for (policy, spreads) in
        [(vanilla, false), (lowzone, true), (modern_off, false), (modern, true)]
    {
        let pa = dma32_normal_machine(policy, 8);
        fragment_normal(&pa);
        let before = pa.vm_events();
        let p = pa.alloc_pages(cpu(&pa, 0), Gfp::KERNEL, Order(0)).unwrap();
        let d = pa.vm_events().since(&before);
        let zone = pa.zone_of(p).unwrap().zone_type();
        let name = policy.alloc_nofragment;
        if spreads {
            assert_eq!(zone, ZoneType::Dma32, "{name}");
            assert_eq!(d.get(Counter::NofragmentLowerZone), 1, "{name}");
            assert_eq!(d.get(Counter::ExtfragFragmentingUnmovable), 0, "{name}");
        } else {
            assert_eq!(zone, ZoneType::Normal, "{name}");
            assert_eq!(d.get(Counter::NofragmentLowerZone), 0, "{name}");
            assert!(d.get(Counter::ExtfragFragmentingUnmovable) > 0, "{name}");
        }
        check(&pa);
    }
}

/// watermark_boost: 1c30844d2dfe (5.0); docs/kernel-reference.md §2.3.
#[test]
fn watermark_boost_follows_a_fragmenting_fallback() {
    for on in [true, false] {
        let pa = normal_machine(Policy::modern().with(|p| p.watermark_boost = on), 64);
        let c1 = cpu(&pa, 1);
        let mut all = Vec::new();
        while let Ok(p) = pa.alloc_pages(c1, Gfp::HIGHUSER_MOVABLE | Gfp::MEMALLOC, Order(0)) {
            all.push(p);
        }
        let odd: Vec<Pfn> = all.iter().copied().filter(|p| p.0 % 2 == 1).collect();
        free_all(&pa, c1, &odd, Order(0));
        pa.drain_all_pages(c1, None);
        let z = normal(&pa);
        assert_eq!(z.watermark_boost(), 0);
        let before = pa.vm_events();
        pa.alloc_pages(cpu(&pa, 0), Gfp::KERNEL, Order(0)).unwrap();
        assert!(moved(&pa, &before, Counter::ExtfragFragmentingUnmovable) > 0);
        if on {
            assert!(z.watermark_boost() >= 512, "boost {}", z.watermark_boost());
            assert!(moved(&pa, &before, Counter::WatermarkBoost) > 0);
        } else {
            assert_eq!(z.watermark_boost(), 0);
            assert_eq!(moved(&pa, &before, Counter::WatermarkBoost), 0);
        }
        check(&pa);
    }
}

/// migratetype_hygiene: docs/kernel-reference.md §4.6 (6.10 relabels the buddy's block; 6.7 does
/// not).
#[test]
fn migratetype_hygiene_relabels_the_buddy_block_on_merge() {
    for hygiene in [true, false] {
        let pa = normal_machine(Policy::modern().with(|p| p.migratetype_hygiene = hygiene), 64);
        let c0 = cpu(&pa, 0);
        let z = normal(&pa);
        let a = z.start_pfn();
        let b = a.add(Order::PAGEBLOCK.nr_pages());
        assert_eq!(pa.isolate_pageblock(c0, a), Ok(MigrateType::Movable));
        assert_eq!(pa.unisolate_pageblock(c0, a, MigrateType::Unmovable), Ok(()));
        assert_eq!(z.pageblock_type(a), Some(MigrateType::Unmovable));
        let want = if hygiene { MigrateType::Unmovable } else { MigrateType::Movable };
        assert_eq!(z.pageblock_type(b), Some(want), "hygiene = {hygiene}");
        assert_eq!(z.free_list_counts()[10][MigrateType::Unmovable as usize], 1);
        check(&pa);
    }
}

/// One unmovable page freed to CPU 0's pageset; its pageblock relabelled Movable either
/// before the free (`before_free`) or while the page sits on the pageset; then a drain.
/// Returns the type the drain freed it as.
fn drained_type_after_relabel(hygiene: bool, before_free: bool) -> MigrateType {
    let policy = Policy::modern().with(|p| p.migratetype_hygiene = hygiene);
    let pa = normal_machine_with(policy, 64, Tunables::default(), DrainLog::default());
    let (c0, c1) = (cpu(&pa, 0), cpu(&pa, 1));
    let p = pa.alloc_pages(c1, Gfp::KERNEL, Order(0)).unwrap();
    pa.drain_pages(c1, CpuId(1));
    let z = normal(&pa);
    assert_eq!(z.pageblock_type(p), Some(MigrateType::Unmovable));
    let relabel = || {
        assert_eq!(pa.isolate_pageblock(c0, p), Ok(MigrateType::Unmovable));
        assert_eq!(pa.unisolate_pageblock(c0, p, MigrateType::Movable), Ok(()));
    };
    if before_free {
        relabel();
    }
    pa.free_pages(c0, p, Order(0)).unwrap();
    if !before_free {
        relabel();
    }
    pa.events().take();
    pa.drain_pages(c0, CpuId(0));
    let drained = pa.events().take();
    assert_eq!(drained.len(), 1);
    assert_eq!(drained[0].0, p);
    check(&pa);
    drained[0].2
}

/// migratetype_hygiene: docs/kernel-reference.md §4.1, §4.5 (6.10 looks the type up again at
/// drain).
#[test]
fn migratetype_hygiene_drains_by_current_or_cached_type() {
    assert_eq!(drained_type_after_relabel(true, false), MigrateType::Movable);
    assert_eq!(drained_type_after_relabel(false, false), MigrateType::Unmovable);
}

/// docs/kernel-reference.md §4.1: 6.7 caches the pageblock type at free time for the later drain.
#[test]
fn migratetype_hygiene_off_caches_the_type_at_free_time() {
    // The pageblock became Movable while the page was allocated, so the page joined the
    // pageset as Movable and must drain as Movable, not as the Unmovable of its last refill.
    assert_eq!(drained_type_after_relabel(true, true), MigrateType::Movable);
    assert_eq!(drained_type_after_relabel(false, true), MigrateType::Movable);
}

/// lowmem_reserve_empty_zone_zero: 96a5c186efff (6.10), reverted in 6.14; docs/kernel-reference.md
/// §2.2.
#[test]
fn lowmem_reserve_against_an_empty_zone_is_zero_or_cumulative() {
    for zero in [true, false] {
        let policy = Policy::modern().with(|p| p.lowmem_reserve_empty_zone_zero = zero);
        let pa = dma32_normal_machine(policy, 256);
        let dma32 = pa.zone_by_type(NodeId(0), ZoneType::Dma32).unwrap();
        assert!(pa.zone_by_type(NodeId(0), ZoneType::Movable).is_none_or(|z| !z.is_populated()));
        // Normal: 65536 pages / ratio 256.
        assert_eq!(dma32.lowmem_reserve(ZoneType::Normal), 256);
        assert_eq!(dma32.lowmem_reserve(ZoneType::Movable), if zero { 0 } else { 256 });
        check(&pa);
    }
}

/// `alloc_prepared` makes the decisions `alloc_pages` makes: two allocators built alike, one
/// allocating with the flags, the other with them prepared, run the same random program
/// (flags of every migratetype and zone limit, orders 0..=10, both CPUs, frees in random
/// order, running the zones low) and hand out the same blocks with the same counters, under
/// the modern preset and the oldest one (4.18, before the seed mechanisms), on one node
/// (where a request carries its preferred zone) and on two (where each CPU's node decides).
#[test]
fn prepared_requests_hand_out_what_alloc_pages_hands_out() {
    for policy in [Policy::modern(), Policy::preset("legacy-4.18").unwrap()] {
        prepared_and_plain_agree(|| dma32_normal_machine(policy, 64));
        prepared_and_plain_agree(|| two_node_machine(policy));
    }
}

/// 2 nodes of one CPU each: node 0 with DMA32 64 MiB (from 16 MiB) and Normal 64 MiB from
/// 4 GiB, node 1 with Normal 64 MiB above it.
fn two_node_machine(policy: Policy) -> PageAllocator {
    let mut map = MemoryMap::new();
    map.add_range(NodeId(0), 16 * MIB..80 * MIB)
        .unwrap()
        .add_range(NodeId(0), 4 * GIB..4 * GIB + 64 * MIB)
        .unwrap()
        .add_range(NodeId(1), 4 * GIB + 64 * MIB..4 * GIB + 128 * MIB)
        .unwrap()
        .set_cpus(NodeId(0), 1)
        .unwrap()
        .set_cpus(NodeId(1), 1)
        .unwrap();
    PageAllocator::new(map, Tunables::default(), policy).expect("valid allocator")
}

/// The random program of `prepared_requests_hand_out_what_alloc_pages_hands_out` on two
/// allocators that `machine` builds alike.
fn prepared_and_plain_agree(machine: impl Fn() -> PageAllocator) {
    let flags = [Gfp::KERNEL, Gfp::HIGHUSER_MOVABLE, Gfp::ATOMIC, Gfp::KERNEL | Gfp::DMA32];
    let plain = machine();
    let prepared = machine();
    let reqs: Vec<_> = flags.iter().map(|&g| prepared.prepare(g).unwrap()).collect();
    let mut live: Vec<(Pfn, Order, u32)> = Vec::new();
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    let mut failed = 0;
    for step in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let c = (x >> 8) as u32 & 1;
        if x % 5 < 3 {
            let g = (x >> 16) as usize % flags.len();
            // Mostly order 0, as in use; now and then any order up to 10.
            let order = Order(if x >> 40 & 7 == 0 { (x >> 20) as u8 % 11 } else { 0 });
            let a = plain.alloc_pages(cpu(&plain, c), flags[g], order);
            let b = prepared.alloc_prepared(cpu(&prepared, c), &reqs[g], order);
            assert_eq!(a, b, "step {step}: {:?} order {}", flags[g], order.0);
            match a {
                Ok(p) => live.push((p, order, c)),
                Err(_) => failed += 1,
            }
        } else if !live.is_empty() {
            let (p, order, _) = live.swap_remove((x >> 24) as usize % live.len());
            plain.free_pages(cpu(&plain, c), p, order).unwrap();
            prepared.free_pages(cpu(&prepared, c), p, order).unwrap();
        }
    }
    assert_eq!(plain.vm_events(), prepared.vm_events());
    // The program reached the paths beyond a pageset hit: refills, drains, failures.
    let e = prepared.vm_events();
    assert!(e.get(Counter::PcpRefill) > 0 && e.get(Counter::DrainHigh) > 0, "{e:?}");
    assert!(failed > 0, "no allocation failed: the zones never ran low");
    check(&prepared);
}

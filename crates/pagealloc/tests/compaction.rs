//! Compaction: the scanners, skip hints, deferral, the fragmentation indices, direct
//! compaction in the slow path, kcompactd, and the owner's `Migrate` deciding what moves.

use std::collections::{BTreeMap, BTreeSet};

use pagealloc::compaction::{proactive_wmarks, COMPACT_MAX_DEFER_SHIFT};
use pagealloc::{
    debug, CompactError, CompactMode, CompactResult, Counter, Cpu, CpuId, Gfp, MemoryMap, Migrate,
    NodeId, Order, PageAllocator, Pfn, Policy, Target, Tunables, Zone, ZoneIdx, ZoneType,
};

/// The owner of every block a test allocates: what each holds (a number standing for its
/// contents), which are pinned, and every migration it was asked for.
#[derive(Debug, Default)]
struct Owner {
    /// First frame → (order, contents).
    blocks: BTreeMap<u64, (u8, u64)>,
    pinned: BTreeSet<u64>,
    asked: Vec<(Pfn, Pfn, Order)>,
}

impl Migrate for Owner {
    fn migrate(&mut self, from: Pfn, to: Target<'_>, order: Order) -> bool {
        let to = to.pfn();
        self.asked.push((from, to, order));
        if self.pinned.contains(&from.0) {
            return false;
        }
        let Some(b) = self.blocks.remove(&from.0) else { return false };
        assert_eq!(b.0, order.0, "asked to move {from} at the wrong order");
        assert!(!self.blocks.contains_key(&to.0), "target {to} is a block the owner holds");
        self.blocks.insert(to.0, b);
        true
    }
}

/// One CPU, one node, 64 MiB: a DMA zone (16 MiB) and a DMA32 zone (48 MiB).
fn machine(tunables: Tunables) -> (PageAllocator, Cpu) {
    let map = MemoryMap::single_node(1, 64 << 20).unwrap();
    let pa = PageAllocator::new(map, tunables, Policy::modern()).unwrap();
    let cpu = pa.cpu(CpuId(0)).unwrap();
    (pa, cpu)
}

fn dma32(pa: &PageAllocator) -> &Zone {
    pa.zones().iter().find(|z| z.zone_type() == ZoneType::Dma32).expect("a DMA32 zone")
}

/// Fill memory with order-0 blocks (`gfp`; the last ones past the watermarks, as
/// `__GFP_MEMALLOC` may), then free every other one of them so that no two free pages are
/// buddies: half of each zone free, none of it above order 0. Returns the owner of the blocks
/// kept.
fn fragment(pa: &PageAllocator, cpu: Cpu, gfp: Gfp) -> Owner {
    let mut owner = Owner::default();
    let mut n = 0;
    for gfp in [gfp, gfp | Gfp::MEMALLOC] {
        while let Ok(p) = pa.alloc_pages(cpu, gfp, Order(0)) {
            owner.blocks.insert(p.0, (0, n));
            n += 1;
        }
    }
    let freed: Vec<u64> = owner.blocks.keys().copied().filter(|&p| p % 2 == 0).collect();
    for p in freed {
        owner.blocks.remove(&p);
        pa.free_pages(cpu, Pfn(p), Order(0)).unwrap();
    }
    pa.drain_all_pages(cpu, None);
    owner
}

/// Every block the owner holds is allocated at its order: freeing them all must succeed and
/// leave every managed page free.
fn give_everything_back(pa: &PageAllocator, cpu: Cpu, owner: &Owner) {
    for (&p, &(o, _)) in &owner.blocks {
        pa.free_pages(cpu, Pfn(p), Order(o)).unwrap_or_else(|e| panic!("free of {p}: {e}"));
    }
    pa.drain_all_pages(cpu, None);
    debug::validate(pa).unwrap();
    assert_eq!(pa.nr_free_pages(), pa.managed_pages());
}

fn contents(owner: &Owner) -> BTreeSet<u64> {
    owner.blocks.values().map(|b| b.1).collect()
}

#[test]
fn a_fragmented_zone_yields_a_pageblock_after_compact_zone() {
    let (pa, cpu) = machine(Tunables::default());
    let mut owner = fragment(&pa, cpu, Gfp::HIGHUSER_MOVABLE);
    let z = dma32(&pa);
    assert_eq!((9..=10).map(|o| z.nr_free(Order(o))).sum::<u64>(), 0);
    assert!(z.free_pages().0 > 4096, "half the zone is free");
    let before = contents(&owner);
    let free_before = pa.nr_free_pages();

    let out = pa.compact_zone(cpu, z.idx(), Some(Order(9)), CompactMode::SyncLight, &mut owner);
    let out = out.unwrap();
    assert_eq!(out.result, CompactResult::Success, "{out:?}");
    assert!(z.nr_free(Order(9)) + z.nr_free(Order(10)) > 0, "an order-9 block formed");
    assert!(out.stats.migrated >= 256, "half a pageblock moved: {out:?}");
    assert_eq!(out.stats.failed, 0);
    // Contents travel with the blocks; moving neither creates nor loses free memory.
    assert_eq!(contents(&owner), before);
    assert_eq!(pa.nr_free_pages(), free_before);
    debug::validate(&pa).unwrap();
    let ev = pa.vm_events();
    assert_eq!(ev.get(Counter::PgmigrateSuccess), out.stats.migrated);
    assert_eq!(ev.get(Counter::CompactMigrateScanned), out.stats.migrate_scanned);
    assert_eq!(ev.get(Counter::CompactFreeScanned), out.stats.free_scanned);
    assert_eq!(
        ev.get(Counter::CompactIsolated),
        out.stats.isolated_migrate + out.stats.isolated_free
    );
    // Moved blocks are allocated where the owner now says they are.
    let huge = pa.alloc_pages(cpu, Gfp::HIGHUSER_MOVABLE, Order(9)).expect("the new block");
    pa.free_pages(cpu, huge, Order(9)).unwrap();
    give_everything_back(&pa, cpu, &owner);
}

#[test]
fn unmovable_and_pinned_blocks_are_never_moved() {
    let (pa, cpu) = machine(Tunables::default());
    // Interleave: movable pages, and every fourth page of the zone unmovable.
    let mut owner = Owner::default();
    let mut unmovable = BTreeSet::new();
    let mut n = 0u64;
    loop {
        let gfp = if n % 4 == 3 { Gfp::KERNEL } else { Gfp::HIGHUSER_MOVABLE };
        let Ok(p) = pa.alloc_pages(cpu, gfp, Order(0)) else { break };
        if gfp == Gfp::KERNEL {
            unmovable.insert(p.0);
        }
        owner.blocks.insert(p.0, (0, n));
        n += 1;
    }
    let z = dma32(&pa);
    let freed: Vec<u64> = owner
        .blocks
        .keys()
        .copied()
        .filter(|&p| z.spans(Pfn(p)) && p % 2 == 0 && !unmovable.contains(&p))
        .collect();
    for p in freed {
        owner.blocks.remove(&p);
        pa.free_pages(cpu, Pfn(p), Order(0)).unwrap();
    }
    pa.drain_all_pages(cpu, None);
    // Pin a third of the movable pages that are left.
    owner.pinned =
        owner.blocks.keys().copied().filter(|p| !unmovable.contains(p)).step_by(3).collect();

    let out = pa.compact_zone(cpu, z.idx(), None, CompactMode::Sync, &mut owner).unwrap();
    assert!(out.stats.migrated > 0, "{out:?}");
    assert!(out.stats.failed > 0, "pinned pages were asked and refused: {out:?}");
    for &(from, _, _) in &owner.asked {
        assert!(!unmovable.contains(&from.0), "asked to move unmovable {from}");
    }
    for p in &owner.pinned {
        assert!(owner.blocks.contains_key(p), "pinned {p} moved");
    }
    for p in &unmovable {
        assert!(owner.blocks.contains_key(p), "unmovable {p} moved");
    }
    assert_eq!(pa.vm_events().get(Counter::PgmigrateFail), out.stats.failed);
    debug::validate(&pa).unwrap();
    give_everything_back(&pa, cpu, &owner);
}

#[test]
fn scanners_meet_and_stop_and_skip_hints_are_honoured() {
    let (pa, cpu) = machine(Tunables::default());
    // Nothing movable: the zone cannot be compacted.
    let mut owner = fragment(&pa, cpu, Gfp::KERNEL);
    let z = dma32(&pa);
    let span = z.spanned_pages().0;

    let first =
        pa.compact_zone(cpu, z.idx(), Some(Order(9)), CompactMode::SyncLight, &mut owner).unwrap();
    assert_eq!(first.result, CompactResult::Complete, "{first:?}");
    assert!(owner.asked.is_empty(), "nothing movable was offered");
    // The scanners met: between them they looked at most of the zone, no frame twice over.
    let scanned = first.stats.migrate_scanned + first.stats.free_scanned;
    assert!(scanned > span / 4 && scanned <= span, "{first:?} over {span} frames");
    let skipped = (0..span)
        .step_by(512)
        .filter(|&i| z.pageblock_skip(Pfn(z.start_pfn().0 + i)) == Some(true))
        .count();
    assert!(skipped > 0, "pageblocks with nothing to take get the skip hint");

    // The next run skips them; one over the whole zone on request does not.
    let second =
        pa.compact_zone(cpu, z.idx(), Some(Order(9)), CompactMode::SyncLight, &mut owner).unwrap();
    assert_eq!(second.result, CompactResult::Complete);
    assert!(
        second.stats.migrate_scanned < first.stats.migrate_scanned,
        "skip hints honoured: {second:?} after {first:?}"
    );
    let whole = pa.compact_zone(cpu, z.idx(), None, CompactMode::Sync, &mut owner).unwrap();
    assert!(whole.stats.migrate_scanned > second.stats.migrate_scanned, "{whole:?}");
    give_everything_back(&pa, cpu, &owner);
}

#[test]
fn deferral_doubles_and_resets() {
    let (pa, _) = machine(Tunables::default());
    let z = dma32(&pa);
    let o = Order(9);
    assert!(!z.compaction_deferred(o), "nothing failed yet");
    z.defer_compaction(o);
    assert_eq!(z.compact_defer_state(), (0, 1, 9));
    // Shift 1: the first attempt after the failure is skipped, the second runs.
    assert!(z.compaction_deferred(o));
    assert!(!z.compaction_deferred(o));
    assert!(!z.compaction_deferred(Order(8)), "orders below the failed one are not deferred");
    for _ in 0..10 {
        z.defer_compaction(o);
    }
    let (_, shift, _) = z.compact_defer_state();
    assert_eq!(shift, COMPACT_MAX_DEFER_SHIFT, "the shift stops at its maximum");
    let skipped = (0..100).take_while(|_| z.compaction_deferred(o)).count();
    assert_eq!(skipped, (1 << COMPACT_MAX_DEFER_SHIFT) - 1);
    // Success of compaction alone raises the failed order; the allocation's resets the shift.
    z.compaction_defer_reset(o, false);
    assert_eq!(z.compact_defer_state().2, 10);
    assert!(!z.compaction_deferred(o));
    z.compaction_defer_reset(o, true);
    assert_eq!(z.compact_defer_state(), (0, 0, 10));
}

#[test]
fn fragmentation_and_unusable_indices_follow_the_kernels_formulas() {
    let (pa, cpu) = machine(Tunables::default());
    let z = dma32(&pa);
    // Fresh: everything free in large blocks.
    assert_eq!(z.fragmentation_index(Order(9)), -1000);
    assert_eq!(z.unusable_index(Order(9)), 0);
    assert_eq!(z.fragmentation_score(), 0);
    let owner = fragment(&pa, cpu, Gfp::HIGHUSER_MOVABLE);
    let counts = z.free_list_counts();
    let blocks: u64 = counts.iter().map(|per_mt| per_mt.iter().sum::<u64>()).sum();
    let pages: u64 =
        counts.iter().enumerate().map(|(o, per_mt)| per_mt.iter().sum::<u64>() << o).sum();
    assert_eq!(blocks, pages, "only order-0 blocks are free");
    // 1000 - (1000 + free_pages * 1000 / 512) / free_blocks.
    let want = 1000 - ((1000 + pages * 1000 / 512) / blocks) as i32;
    assert_eq!(z.fragmentation_index(Order(9)), want);
    assert!(want > 990);
    assert_eq!(z.unusable_index(Order(9)), 1000);
    assert_eq!(z.unusable_index(Order(0)), 0);
    assert_eq!(z.fragmentation_score(), 100);
    give_everything_back(&pa, cpu, &owner);
    assert_eq!(z.fragmentation_index(Order(9)), -1000);
}

#[test]
fn direct_compaction_serves_a_huge_page_the_plain_call_cannot() {
    let (pa, cpu) = machine(Tunables::default());
    let mut owner = fragment(&pa, cpu, Gfp::HIGHUSER_MOVABLE);
    let gfp = Gfp::TRANSHUGE;
    assert!(pa.alloc_pages(cpu, gfp, Order(9)).is_err(), "no order-9 block without compaction");
    assert_eq!(pa.vm_events().get(Counter::CompactStall), 0);

    let huge = pa.alloc_pages_compacting(cpu, gfp, Order(9), &mut owner).expect("compacted");
    let ev = pa.vm_events();
    assert_eq!((ev.get(Counter::CompactStall), ev.get(Counter::CompactSuccess)), (1, 1));
    assert_eq!(ev.get(Counter::CompactFail), 0);
    assert!(ev.get(Counter::PgmigrateSuccess) > 0);
    assert!(!owner.blocks.contains_key(&huge.0));
    pa.free_pages(cpu, huge, Order(9)).unwrap();
    give_everything_back(&pa, cpu, &owner);
}

#[test]
fn a_failed_direct_compaction_counts_a_failure_and_only_sync_passes_defer() {
    // A THP: an async pass, then a sync-light one, which fails over the whole zone and
    // defers later attempts.
    let (pa, cpu) = machine(Tunables::default());
    let mut owner = fragment(&pa, cpu, Gfp::KERNEL);
    let r = pa.alloc_pages_compacting(cpu, Gfp::TRANSHUGE, Order(9), &mut owner);
    assert!(r.is_err());
    let ev = pa.vm_events();
    assert_eq!(ev.get(Counter::CompactStall), 2, "one stall per pass");
    assert_eq!(ev.get(Counter::CompactFail), 2);
    assert_eq!(ev.get(Counter::CompactSuccess), 0);
    let (_, shift, failed) = dma32(&pa).compact_defer_state();
    assert!(shift >= 1 && failed == 9, "defer shift {shift}, order failed {failed}");
    give_everything_back(&pa, cpu, &owner);

    // A costly NORETRY request: both passes async, and async compaction never defers.
    let (pa, cpu) = machine(Tunables::default());
    let mut owner = fragment(&pa, cpu, Gfp::KERNEL);
    let gfp = Gfp::TRANSHUGE | Gfp::NORETRY;
    assert!(pa.alloc_pages_compacting(cpu, gfp, Order(9), &mut owner).is_err());
    assert_eq!(pa.vm_events().get(Counter::CompactStall), 2);
    assert_eq!(dma32(&pa).compact_defer_state().1, 0, "async passes do not defer");
    give_everything_back(&pa, cpu, &owner);
}

#[test]
fn one_compaction_pass_on_request_serves_the_block_or_says_why_not() {
    let (pa, cpu) = machine(Tunables::default());
    let mut owner = fragment(&pa, cpu, Gfp::HIGHUSER_MOVABLE);
    let (page, result) = pa
        .compact_and_alloc(cpu, Gfp::TRANSHUGE, Order(9), CompactMode::Async, &mut owner)
        .unwrap();
    let huge = page.expect("the pass made an order-9 block");
    assert_eq!(result, CompactResult::Success);
    let ev = pa.vm_events();
    assert_eq!((ev.get(Counter::CompactStall), ev.get(Counter::CompactSuccess)), (1, 1));
    pa.free_pages(cpu, huge, Order(9)).unwrap();
    give_everything_back(&pa, cpu, &owner);

    // Nothing movable: no block, and the reason.
    let (pa, cpu) = machine(Tunables::default());
    let mut owner = fragment(&pa, cpu, Gfp::KERNEL);
    let (page, result) = pa
        .compact_and_alloc(cpu, Gfp::TRANSHUGE, Order(9), CompactMode::Async, &mut owner)
        .unwrap();
    assert_eq!((page, result), (None, CompactResult::Complete));
    assert_eq!(
        pa.compact_and_alloc(cpu, Gfp::TRANSHUGE, Order(11), CompactMode::Async, &mut owner),
        Err(pagealloc::AllocError::InvalidOrder(Order(11)))
    );
    give_everything_back(&pa, cpu, &owner);
}

#[test]
fn kcompactd_runs_for_a_woken_order_and_proactively() {
    let (pa, cpu) = machine(Tunables::default());
    let mut owner = fragment(&pa, cpu, Gfp::HIGHUSER_MOVABLE);
    let node = NodeId(0);
    // A failed THP allocation (with kswapd reclaim allowed) wakes kcompactd for order 9.
    assert!(pa.alloc_pages(cpu, Gfp::TRANSHUGE | Gfp::KSWAPD_RECLAIM, Order(9)).is_err());
    assert_eq!(pa.kcompactd_pending(node), Some(Order(9)));
    let out = pa.kcompactd(cpu, node, &mut owner).unwrap().expect("work to do");
    assert_eq!(out.result, CompactResult::Success, "{out:?}");
    assert_eq!(pa.kcompactd_pending(node), None);
    let ev = pa.vm_events();
    assert_eq!(ev.get(Counter::CompactDaemonWake), 1);
    assert_eq!(ev.get(Counter::CompactDaemonMigrateScanned), out.stats.migrate_scanned);
    give_everything_back(&pa, cpu, &owner);

    // Proactive: a fragmented node above the high mark is compacted down to the low one.
    let (pa, cpu) = machine(Tunables::default());
    let mut owner = fragment(&pa, cpu, Gfp::HIGHUSER_MOVABLE);
    let (low, high) = proactive_wmarks(20);
    assert_eq!((low, high), (80, 90));
    assert!(pa.fragmentation_score_node(node) > high);
    let out = pa.kcompactd(cpu, node, &mut owner).unwrap().expect("proactive work");
    assert_eq!(out.result, CompactResult::Success, "{out:?}");
    assert!(out.stats.migrated > 0, "{out:?}");
    assert!(pa.fragmentation_score_node(node) <= low, "compacted down to the low mark");
    give_everything_back(&pa, cpu, &owner);

    // Proactiveness 0 turns it off.
    let off = Tunables::default().with(|t| t.compaction_proactiveness = 0);
    let (pa, cpu) = machine(off);
    let mut owner = fragment(&pa, cpu, Gfp::HIGHUSER_MOVABLE);
    assert_eq!(pa.kcompactd(cpu, node, &mut owner).unwrap(), None);
    give_everything_back(&pa, cpu, &owner);
}

#[test]
fn bad_requests_are_refused_and_change_nothing() {
    let (pa, cpu) = machine(Tunables::default());
    let (other, other_cpu) = machine(Tunables::default());
    let mut owner = Owner::default();
    let z = dma32(&pa).idx();
    assert_eq!(
        pa.compact_zone(other_cpu, z, None, CompactMode::Sync, &mut owner),
        Err(CompactError::InvalidCpu(CpuId(0)))
    );
    assert_eq!(
        pa.compact_zone(cpu, ZoneIdx(99), None, CompactMode::Sync, &mut owner),
        Err(CompactError::InvalidZone(ZoneIdx(99)))
    );
    assert_eq!(
        pa.compact_zone(cpu, z, Some(Order(11)), CompactMode::Sync, &mut owner),
        Err(CompactError::InvalidOrder(Order(11)))
    );
    assert_eq!(pa.kcompactd(cpu, NodeId(7), &mut owner), Err(CompactError::InvalidNode(NodeId(7))));
    assert_eq!(
        pa.compact_node(cpu, NodeId(7), &mut owner),
        Err(CompactError::InvalidNode(NodeId(7)))
    );
    assert_eq!(pa.vm_events().get(Counter::CompactMigrateScanned), 0);
    drop(other);
}

/// A seeded generator (SplitMix64) for the random programs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn random_programs_with_compaction_mixed_in_keep_every_invariant() {
    for seed in 0..6 {
        let (pa, cpu) = machine(Tunables::default());
        let mut rng = Rng(seed);
        let mut owner = Owner::default();
        let mut unmovable: BTreeMap<u64, u8> = BTreeMap::new();
        let mut n = 0;
        for step in 0..4000 {
            match rng.below(20) {
                0..=8 => {
                    let order = Order(rng.below(4) as u8);
                    if let Ok(p) = pa.alloc_pages(cpu, Gfp::HIGHUSER_MOVABLE, order) {
                        owner.blocks.insert(p.0, (order.0, n));
                        n += 1;
                    }
                }
                9..=10 => {
                    let order = Order(rng.below(3) as u8);
                    if let Ok(p) = pa.alloc_pages(cpu, Gfp::KERNEL, order) {
                        unmovable.insert(p.0, order.0);
                    }
                }
                11..=16 => {
                    if let Some((&p, &(o, _))) = owner
                        .blocks
                        .iter()
                        .nth(rng.below(owner.blocks.len().max(1) as u64) as usize)
                    {
                        owner.blocks.remove(&p);
                        owner.pinned.remove(&p);
                        pa.free_pages(cpu, Pfn(p), Order(o)).unwrap();
                    }
                }
                17 => {
                    if let Some((&p, &o)) = unmovable.iter().next() {
                        unmovable.remove(&p);
                        pa.free_pages(cpu, Pfn(p), Order(o)).unwrap();
                    }
                }
                18 => {
                    if let Some(&p) = owner.blocks.keys().nth(rng.below(8) as usize) {
                        owner.pinned.insert(p);
                    }
                }
                _ => {
                    let zones = pa.zones().len() as u64;
                    let z = ZoneIdx(rng.below(zones) as u16);
                    let order = match rng.below(4) {
                        0 => None,
                        k => Some(Order([0, 3, 9, 10][k as usize])),
                    };
                    let mode = [CompactMode::Async, CompactMode::SyncLight, CompactMode::Sync]
                        [rng.below(3) as usize];
                    let before = contents(&owner);
                    pa.compact_zone(cpu, z, order, mode, &mut owner).unwrap();
                    assert_eq!(contents(&owner), before, "seed {seed} step {step}");
                    debug::validate(&pa).unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
                }
            }
            if step % 250 == 0 {
                debug::validate(&pa).unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
            }
        }
        assert!(pa.vm_events().get(Counter::PgmigrateSuccess) > 0, "seed {seed} moved nothing");
        for (&p, &o) in &unmovable {
            pa.free_pages(cpu, Pfn(p), Order(o)).unwrap();
        }
        give_everything_back(&pa, cpu, &owner);
    }
}

#[test]
fn refused_moves_give_every_target_back_whole() {
    let (pa, cpu) = machine(Tunables::default());
    let mut owner = Owner::default();
    for gfp in [Gfp::HIGHUSER_MOVABLE, Gfp::HIGHUSER_MOVABLE | Gfp::MEMALLOC] {
        while let Ok(p) = pa.alloc_pages(cpu, gfp, Order(0)) {
            owner.blocks.insert(p.0, (0, p.0));
        }
    }
    let z = dma32(&pa);
    // Free order-3 runs near the zone's end (targets the free scanner splits), and every
    // other page of its first pageblocks (what the migrate scanner would empty).
    let end = z.start_pfn().0 + z.spanned_pages().0;
    let runs: Vec<u64> = (1..=8).map(|k| end - k * 64).collect();
    for &r in &runs {
        for p in r..r + 8 {
            owner.blocks.remove(&p);
            pa.free_pages(cpu, Pfn(p), Order(0)).unwrap();
        }
    }
    for p in (z.start_pfn().0..z.start_pfn().0 + 2048).step_by(2) {
        owner.blocks.remove(&p);
        pa.free_pages(cpu, Pfn(p), Order(0)).unwrap();
    }
    pa.drain_all_pages(cpu, None);
    assert!(runs.iter().all(|&r| z.free_list_counts()[3].iter().sum::<u64>() > 0 && r % 8 == 0));
    owner.pinned = owner.blocks.keys().copied().collect();
    let free = pa.nr_free_pages();

    let out = pa.compact_zone(cpu, z.idx(), None, CompactMode::Sync, &mut owner).unwrap();
    assert!(out.stats.failed > 0 && out.stats.migrated == 0, "{out:?}");
    assert!(out.stats.isolated_free > 0, "targets were taken: {out:?}");
    debug::validate(&pa).unwrap();
    assert_eq!(pa.nr_free_pages(), free, "every target given back");
    assert_eq!(z.free_list_counts()[3].iter().sum::<u64>(), 8, "and merged again");
    give_everything_back(&pa, cpu, &owner);
}

/// DMA32 filled with movable pages, one unmovable page (stolen from a movable pageblock,
/// which keeps its type) at the start of every 16 frames, and half of the zone free.
/// Returns the owner and the unmovable pages.
fn movable_blocks_each_with_an_unmovable_page(pa: &PageAllocator, cpu: Cpu) -> (Owner, Vec<u64>) {
    let mut owner = Owner::default();
    for gfp in [Gfp::HIGHUSER_MOVABLE, Gfp::HIGHUSER_MOVABLE | Gfp::MEMALLOC] {
        while let Ok(p) = pa.alloc_pages(cpu, gfp, Order(0)) {
            owner.blocks.insert(p.0, (0, p.0));
        }
    }
    let z = dma32(pa);
    let (start, end) = (z.start_pfn().0, z.start_pfn().0 + z.spanned_pages().0);
    let holes: Vec<u64> =
        (start..end).step_by(16).filter(|p| owner.blocks.contains_key(p)).collect();
    for &p in &holes {
        owner.blocks.remove(&p);
        pa.free_pages(cpu, Pfn(p), Order(0)).unwrap();
    }
    pa.drain_all_pages(cpu, None);
    let mut unmovable = Vec::new();
    while unmovable.len() < holes.len() {
        let p = pa.alloc_pages(cpu, Gfp::KERNEL | Gfp::MEMALLOC, Order(0)).expect("a hole");
        unmovable.push(p.0);
    }
    pa.drain_all_pages(cpu, None);
    // Every pageblock of the zone is still movable, each with unmovable pages in it.
    assert!(unmovable.iter().all(|&p| p % 16 == 0 && z.spans(Pfn(p))), "{unmovable:?}");
    for b in (start..end).step_by(512) {
        assert_eq!(z.pageblock_type(Pfn(b)), Some(pagealloc::MigrateType::Movable));
    }
    // Room for compaction: every odd page free (no two of them buddies).
    let freed: Vec<u64> =
        owner.blocks.keys().copied().filter(|&p| z.spans(Pfn(p)) && p % 2 == 1).collect();
    for p in freed {
        owner.blocks.remove(&p);
        pa.free_pages(cpu, Pfn(p), Order(0)).unwrap();
    }
    pa.drain_all_pages(cpu, None);
    (owner, unmovable)
}

#[test]
fn async_direct_compaction_gives_up_on_a_block_that_cannot_be_freed() {
    // Kernel `isolate_migratepages_block` with `skip_on_failure`: an unmovable page in every
    // pageblock means no order-9 block can form, and async direct compaction moves nothing.
    let (pa, cpu) = machine(Tunables::default());
    let (mut owner, unmovable) = movable_blocks_each_with_an_unmovable_page(&pa, cpu);
    let z = dma32(&pa);
    let (page, result) = pa
        .compact_and_alloc(cpu, Gfp::TRANSHUGE, Order(9), CompactMode::Async, &mut owner)
        .unwrap();
    assert_eq!(page, None);
    assert!(
        matches!(result, CompactResult::Complete | CompactResult::PartialSkipped),
        "{result:?}: free {} low {} fragindex {}",
        z.free_pages().0,
        z.wmark_pages(pagealloc::WMARK_LOW),
        z.fragmentation_index(Order(9))
    );
    let asked_in_dma32 = owner.asked.iter().filter(|a| z.spans(a.0)).count();
    assert_eq!(asked_in_dma32, 0, "moved pages out of blocks that cannot be freed");
    debug::validate(&pa).unwrap();

    // Sync compaction has no such rule: it empties what it can around the unmovable pages
    // (over the whole zone, as the skip hints the async pass left would stop it otherwise).
    let out = pa.compact_zone(cpu, z.idx(), None, CompactMode::Sync, &mut owner);
    assert!(out.unwrap().stats.migrated > 0);
    for p in &unmovable {
        pa.free_pages(cpu, Pfn(*p), Order(0)).unwrap();
    }
    give_everything_back(&pa, cpu, &owner);
}

#[test]
fn async_direct_compaction_skips_the_rest_of_a_block_with_a_pinned_page() {
    // Kernel `compact_zone`: after a page of the order-aligned block failed to migrate,
    // async direct compaction moves on to the next block.
    let (pa, cpu) = machine(Tunables::default());
    let mut owner = fragment(&pa, cpu, Gfp::HIGHUSER_MOVABLE);
    let z = dma32(&pa);
    // The first page kept in every pageblock is pinned.
    owner.pinned = owner.blocks.keys().copied().filter(|p| p % 512 == 1).collect();
    let (page, _) = pa
        .compact_and_alloc(cpu, Gfp::TRANSHUGE, Order(9), CompactMode::Async, &mut owner)
        .unwrap();
    assert_eq!(page, None, "no pageblock can be emptied");
    let mut per_block: BTreeMap<u64, usize> = BTreeMap::new();
    for a in owner.asked.iter().filter(|a| z.spans(a.0)) {
        *per_block.entry(a.0 .0 / 512).or_default() += 1;
    }
    assert!(!per_block.is_empty());
    // One batch of isolated pages per pageblock at most, not the pageblock's 256.
    assert!(per_block.values().all(|&n| n <= 32), "{per_block:?}");
    debug::validate(&pa).unwrap();
    give_everything_back(&pa, cpu, &owner);
}

#[test]
fn a_movable_request_stops_at_its_block_without_finishing_the_pageblock() {
    // Kernel `__compact_finished`: movable pages are fine in any pageblock, so a movable
    // request succeeds as soon as its block is free; a non-movable one that would take it
    // from another type's list first empties the pageblock it is in (`finishing_block`).
    let (pa, cpu) = machine(Tunables::default());
    let mut owner = fragment(&pa, cpu, Gfp::HIGHUSER_MOVABLE);
    let gfp = Gfp::HIGHUSER_MOVABLE;
    let (page, result) =
        pa.compact_and_alloc(cpu, gfp, Order(4), CompactMode::SyncLight, &mut owner).unwrap();
    assert_eq!(result, CompactResult::Success);
    let moved = pa.vm_events().get(Counter::PgmigrateSuccess);
    assert!((8..=32).contains(&moved), "one batch frees an order-4 block: {moved} moved");
    pa.free_pages(cpu, page.expect("the order-4 block"), Order(4)).unwrap();
    give_everything_back(&pa, cpu, &owner);

    let (pa, cpu) = machine(Tunables::default());
    let mut owner = fragment(&pa, cpu, Gfp::HIGHUSER_MOVABLE);
    let z = dma32(&pa);
    let out = pa.compact_zone(cpu, z.idx(), Some(Order(4)), CompactMode::SyncLight, &mut owner);
    let out = out.unwrap();
    assert_eq!(out.result, CompactResult::Success);
    assert_eq!(out.stats.migrated, 256, "the unmovable request emptied the whole pageblock");
    give_everything_back(&pa, cpu, &owner);
}

//! Loom models of the pageset/zone interplay, on the real allocator: every atomic and lock of
//! the crate is loom's under `--cfg loom` (see `src/sync.rs`), so loom runs the real
//! `free_pages`, `alloc_pages`, `drain_pages_zone` and `drain_all_pages` under every
//! interleaving its bounds allow, and checks that the spin lock excludes.
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p pagealloc --test loom --release
//! ```
//!
//! The machine is one Normal zone of 64 frames and 2 CPUs with default tunables: the smallest
//! that can still allocate (the boot min watermark is 32 pages), and small enough that the
//! validator's walk of every frame, run in every execution, stays cheap. Its pagesets have
//! batch 1 and high 4, so a few frees reach the free path's own bulk drain.
//!
//! Each model checks, in every execution: the validator passes, the census agrees with what
//! the threads hold (conservation), no two live blocks overlap (nothing handed out twice), and
//! after freeing everything and draining every pageset all 64 pages are free again. Counters
//! of outcomes across executions show that the race each model is about was really explored.

#![cfg(loom)]

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use loom::thread;
use pagealloc::debug::{census, validate};
use pagealloc::policy::PcpLocking;
use pagealloc::{
    Counter, Cpu, CpuId, FreeError, Gfp, MemoryMap, NodeId, Order, PageAllocator, Pfn, Policy,
    Tunables, VmEvents,
};

/// Frames of the model machine's only zone.
const FRAMES: u64 = 64;

/// Preemptions per execution when `LOOM_MAX_PREEMPTIONS` is not set: the CI's bound.
const DEFAULT_PREEMPTIONS: usize = 2;

/// Run `f` under loom with this file's bounds, and print how many executions loom explored
/// (`--nocapture` shows it).
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    // Every atomic access is a branch point; the validator walks every frame, so an execution
    // has a few thousand (loom's default allows 1000).
    b.max_branches = 200_000;
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(DEFAULT_PREEMPTIONS);
    }
    let executions = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&executions);
    let start = std::time::Instant::now();
    let f = Arc::new(f);
    b.check(move || {
        counted.fetch_add(1, Relaxed);
        // Loom runs the model's first thread on a 32 KiB stack, less than a `MemoryMap`
        // (held inline, ~29 KiB) and the build beside it: the body runs on a thread of its
        // own with room, and the first thread only waits for it.
        let f = Arc::clone(&f);
        thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || f())
            .expect("spawn the model's body")
            .join()
            .expect("the model's body");
    });
    eprintln!(
        "{}: {} executions in {:.1} s (at most {} preemptions)",
        std::thread::current().name().unwrap_or("model"),
        executions.load(Relaxed),
        start.elapsed().as_secs_f64(),
        b.preemption_bound.unwrap_or(0),
    );
}

/// The model machine (see the file comment), with `locking` as the pagesets' local lock.
fn machine(locking: PcpLocking) -> Arc<PageAllocator> {
    machine_with(Policy::modern().with(|p| p.pcp_locking = locking))
}

/// The model machine under `policy`.
fn machine_with(policy: Policy) -> Arc<PageAllocator> {
    let base = Pfn(4 << 18); // 4 GiB: above DMA32, so the only zone is Normal.
    let mut map = MemoryMap::new();
    map.add_pfn_range(NodeId(0), base..Pfn(base.0 + FRAMES))
        .expect("a valid range")
        .set_cpus(NodeId(0), 2)
        .unwrap();
    let pa = PageAllocator::new(map, Tunables::default(), policy).expect("the model machine");
    assert_eq!(pa.managed_pages().0, FRAMES);
    Arc::new(pa)
}

/// Run `a` and `b` on two new loom threads sharing the allocator, and wait for both.
fn race<A: Send + 'static, B: Send + 'static>(
    pa: &Arc<PageAllocator>,
    a: impl FnOnce(&PageAllocator) -> A + Send + 'static,
    b: impl FnOnce(&PageAllocator) -> B + Send + 'static,
) -> (A, B) {
    let (pa_a, pa_b) = (Arc::clone(pa), Arc::clone(pa));
    let a = thread::spawn(move || a(&pa_a));
    let b = thread::spawn(move || b(&pa_b));
    (a.join().expect("thread a"), b.join().expect("thread b"))
}

/// Executions in which an outcome held, and in which it did not: kept across the executions
/// of one model, to show that loom reached both sides of a race.
struct Outcomes {
    held: AtomicUsize,
    not: AtomicUsize,
}

impl Outcomes {
    const fn new() -> Outcomes {
        Outcomes { held: AtomicUsize::new(0), not: AtomicUsize::new(0) }
    }

    fn record(&self, outcome: bool) {
        if outcome { &self.held } else { &self.not }.fetch_add(1, Relaxed);
    }

    /// (held, not).
    fn counts(&self) -> (usize, usize) {
        (self.held.load(Relaxed), self.not.load(Relaxed))
    }
}

fn cpu(pa: &PageAllocator, id: u32) -> Cpu {
    pa.cpu(CpuId(id)).expect("the model machine has 2 CPUs")
}

fn alloc(pa: &PageAllocator, on: u32) -> Pfn {
    pa.alloc_pages(cpu(pa, on), Gfp::KERNEL, Order(0)).expect("the model machine has room")
}

fn free(pa: &PageAllocator, on: u32, pfn: Pfn) -> Result<(), FreeError> {
    pa.free_pages(cpu(pa, on), pfn, Order(0))
}

fn pcp_pages(pa: &PageAllocator) -> u64 {
    pa.zones().iter().map(|z| z.pcp_pages()).sum()
}

fn since(pa: &PageAllocator, before: &VmEvents, c: Counter) -> u64 {
    pa.vm_events().since(before).get(c)
}

/// What every model checks once its threads are joined: `live` (order-0 blocks) are the only
/// allocated pages and no two are the same; every invariant holds; and once they are freed and
/// every pageset drained, every page is free.
fn check_and_release(pa: &PageAllocator, live: &[Pfn]) {
    let mut sorted = live.to_vec();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), live.len(), "a page handed out twice: {live:?}");
    validate(pa).unwrap_or_else(|v| panic!("{v}"));
    let c = census(pa);
    assert_eq!(c.allocated, live.len() as u64, "allocated pages vs. what the threads hold");
    // pcp_pages counts the pages waiting on remote-free lists too (their pagesets hold them).
    assert_eq!(pa.nr_free_pages().0 + pcp_pages(pa) + c.allocated, FRAMES, "pages lost");
    for &p in live {
        free(pa, 0, p).expect("a live page frees");
    }
    pa.drain_all_pages(cpu(pa, 0), None);
    validate(pa).unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(pa.nr_free_pages().0, FRAMES, "every page back after the final drain");
}

/// The zone of the model machine.
fn zone(pa: &PageAllocator) -> pagealloc::ZoneIdx {
    pa.zones()[0].idx()
}

/// (a) A free on CPU 0 while CPU 1 drains CPU 0's pageset (holding its lock). Under the
/// try-lock form the free either gets the pageset or finds it busy and goes to the zone —
/// both must happen in some execution, and in neither is a page lost; under the IRQ-off form
/// the free waits and always lands on the pageset.
fn free_against_remote_drain(locking: PcpLocking, to_zone: &'static Outcomes) {
    model(move || {
        let pa = machine(locking);
        let (a, b, x) = (alloc(&pa, 0), alloc(&pa, 0), alloc(&pa, 0));
        free(&pa, 0, a).unwrap();
        free(&pa, 0, b).unwrap();
        let before = pa.vm_events();
        let (freed, ()) = race(
            &pa,
            move |pa| free(pa, 0, x),
            |pa| pa.drain_pages_zone(cpu(pa, 1), CpuId(0), zone(pa)),
        );
        assert_eq!(freed, Ok(()));
        let busy = since(&pa, &before, Counter::PcpTrylockFail);
        let on_pcp = since(&pa, &before, Counter::PcpFree);
        assert_eq!(busy + on_pcp, 1, "the free took exactly one path");
        if busy == 1 {
            assert_eq!(locking, PcpLocking::SpinlockTrylock, "only the try-lock form falls back");
            // It went to the zone, and the drain emptied the pageset: nothing is cached.
            assert_eq!(pcp_pages(&pa), 0);
        }
        to_zone.record(busy == 1);
        check_and_release(&pa, &[]);
    });
}

#[test]
fn trylock_free_on_a_busy_pageset_goes_to_the_zone() {
    static TO_ZONE: Outcomes = Outcomes::new();
    free_against_remote_drain(PcpLocking::SpinlockTrylock, &TO_ZONE);
    let (z, p) = TO_ZONE.counts();
    assert!(z > 0 && p > 0, "both outcomes explored: {z} to the zone, {p} to the pageset");
}

#[test]
fn irq_off_free_waits_for_a_busy_pageset() {
    static TO_ZONE: Outcomes = Outcomes::new();
    free_against_remote_drain(PcpLocking::LocalIrqOff, &TO_ZONE);
    let (z, p) = TO_ZONE.counts();
    assert!(z == 0 && p > 0, "{z} frees went to the zone, {p} to the pageset");
}

/// (b) CPU 0 frees two pages locally (undisturbed, the first brings its pageset to `high`, 4,
/// and drains three pages to the zone: the free path's own bulk free) and then allocates,
/// while CPU 1 runs `drain_all_pages` and then allocates. Some executions must have a free or
/// the allocation find CPU 0's pageset held by the drain (and go to the zone), others not.
#[test]
fn drain_all_pages_races_a_local_free() {
    static BUSY: Outcomes = Outcomes::new();
    model(|| {
        let pa = machine(PcpLocking::SpinlockTrylock);
        let (a, b, x, y) = (alloc(&pa, 0), alloc(&pa, 0), alloc(&pa, 0), alloc(&pa, 0));
        free(&pa, 0, a).unwrap();
        free(&pa, 0, b).unwrap();
        let before = pa.vm_events();
        let (p, q) = race(
            &pa,
            move |pa| {
                free(pa, 0, x).unwrap();
                free(pa, 0, y).unwrap();
                alloc(pa, 0)
            },
            |pa| {
                pa.drain_all_pages(cpu(pa, 1), None);
                alloc(pa, 1)
            },
        );
        BUSY.record(since(&pa, &before, Counter::PcpTrylockFail) > 0);
        check_and_release(&pa, &[p, q]);
    });
    let (b, n) = BUSY.counts();
    assert!(b > 0 && n > 0, "CPU 0 found its pageset busy in {b} executions, free in {n}");
}

/// (c) CPU 0 allocates from its empty pageset (a refill under its lock and the zone lock)
/// while CPU 1 drains CPU 0's pageset and then allocates through its own refill.
#[test]
fn refill_races_drain() {
    static DRAIN_AFTER_REFILL: Outcomes = Outcomes::new();
    model(|| {
        let pa = machine(PcpLocking::SpinlockTrylock);
        let before = pa.vm_events();
        let (p, q) = race(
            &pa,
            |pa| alloc(pa, 0),
            |pa| {
                pa.drain_pages_zone(cpu(pa, 1), CpuId(0), zone(pa));
                alloc(pa, 1)
            },
        );
        DRAIN_AFTER_REFILL.record(since(&pa, &before, Counter::DrainExplicitPages) > 0);
        check_and_release(&pa, &[p, q]);
    });
    let (a, b) = DRAIN_AFTER_REFILL.counts();
    assert!(a > 0 && b > 0, "drain after the refill {a} times, before it {b} times");
}

/// Two CPUs free the same page at once: exactly one free succeeds (the head frame's
/// `Allocated → Freeing` compare-exchange), the other is refused, and nothing else changes.
#[test]
fn racing_double_free_succeeds_once() {
    model(|| {
        let pa = machine(PcpLocking::SpinlockTrylock);
        let x = alloc(&pa, 0);
        let (r0, r1) = race(&pa, move |pa| free(pa, 0, x), move |pa| free(pa, 1, x));
        let results = [r0, r1];
        let ok = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(ok, 1, "{results:?}");
        for r in results {
            assert!(
                matches!(
                    r,
                    Ok(()) | Err(FreeError::DoubleFree { .. } | FreeError::NotAllocated { .. })
                ),
                "{r:?}"
            );
        }
        check_and_release(&pa, &[]);
    });
}

/// The same race under a 6.6 policy, on a page of a CMA pageblock: the winning free caches the
/// block's type (CMA, 4) in the frame's reference word as it lists the page, and the losing
/// free, whose reference check may read that word after the win, must still be refused as a
/// double free, never as a page with 4 references. (A machine of one pageblock, all CMA: a CMA
/// area is whole pageblocks.)
#[test]
fn racing_double_free_of_a_cma_page_under_6_6_is_a_double_free() {
    model(|| {
        let base = Pfn(4 << 18);
        let end = Pfn(base.0 + 512);
        let mut map = MemoryMap::new();
        map.add_pfn_range(NodeId(0), base..end).expect("a valid range");
        map.set_cpus(NodeId(0), 2).unwrap();
        map.add_cma_range(base..end).expect("one pageblock");
        let policy = Policy::preset("hpc-vanilla").expect("a preset");
        let pa = Arc::new(PageAllocator::new(map, Tunables::default(), policy).expect("machine"));
        let x = pa
            .alloc_pages(cpu(&pa, 0), Gfp::HIGHUSER_MOVABLE, Order(0))
            .expect("the CMA pageblock has room");
        let (r0, r1) = race(&pa, move |pa| free(pa, 0, x), move |pa| free(pa, 1, x));
        let results = [r0, r1];
        assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1, "{results:?}");
        for r in results {
            assert!(
                matches!(
                    r,
                    Ok(()) | Err(FreeError::DoubleFree { .. } | FreeError::NotAllocated { .. })
                ),
                "{r:?}"
            );
        }
        validate(&pa).expect("the validator");
    });
}

/// (d) Remote frees (`Policy::remote_free`): CPU 1 frees two pages CPU 0's pageset handed out
/// — two lock-free pushes onto CPU 0's remote-free list — while CPU 0 allocates, taking the
/// list back when its own list is empty. Some executions must collect a pushed page, others
/// refill from the zone before any push; in every one each page is allocated, on a list or
/// free exactly once.
#[test]
fn remote_frees_race_the_owners_collect() {
    static COLLECTED: Outcomes = Outcomes::new();
    model(|| {
        let pa = machine_with(Policy::modern().with(|p| p.remote_free = true));
        let (x, y) = (alloc(&pa, 0), alloc(&pa, 0));
        // CPU 0's own list is empty now (batch 1: each allocation refilled one page).
        let before = pa.vm_events();
        let ((), p) = race(
            &pa,
            move |pa| {
                free(pa, 1, x).unwrap();
                free(pa, 1, y).unwrap();
            },
            |pa| alloc(pa, 0),
        );
        assert_eq!(since(&pa, &before, Counter::PcpRemoteFree), 2, "both frees went home");
        COLLECTED.record(since(&pa, &before, Counter::PcpRemoteCollect) > 0);
        check_and_release(&pa, &[p]);
    });
    let (c, n) = COLLECTED.counts();
    assert!(c > 0 && n > 0, "the allocation collected in {c} executions, not in {n}");
}

/// (e) Remote frees against a drain of the freeing CPU's pageset: CPU 1 frees a page CPU 0's
/// pageset handed out while CPU 0 drains CPU 1's pageset (holding its lock). The free either
/// gets CPU 1's pageset, puts the page on its pending chain and (batch 1) publishes it at
/// once, or finds the pageset busy and pushes the page alone. Both must happen in some
/// execution; in every one the page goes home to CPU 0's remote-free list, and none is lost.
#[test]
fn remote_frees_race_a_drain_of_the_freeing_pageset() {
    static ALONE: Outcomes = Outcomes::new();
    model(|| {
        let pa = machine_with(Policy::modern().with(|p| p.remote_free = true));
        let x = alloc(&pa, 0);
        let before = pa.vm_events();
        let (freed, ()) = race(
            &pa,
            move |pa| free(pa, 1, x),
            |pa| pa.drain_pages_zone(cpu(pa, 0), CpuId(1), zone(pa)),
        );
        assert_eq!(freed, Ok(()));
        assert_eq!(since(&pa, &before, Counter::PcpRemoteFree), 1, "the page went home");
        assert_eq!(census(&pa).remote, 1, "and waits on CPU 0's list");
        ALONE.record(since(&pa, &before, Counter::PcpTrylockFail) == 1);
        check_and_release(&pa, &[]);
    });
    let (alone, chained) = ALONE.counts();
    assert!(alone > 0 && chained > 0, "pushed alone in {alone} executions, chained in {chained}");
}

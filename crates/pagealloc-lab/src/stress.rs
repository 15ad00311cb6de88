//! `pagealloc stress`: real threads on real memory through [`PageHeap`], checking that no page
//! is lost and none is handed to two owners.
//!
//! # What the workers do
//!
//! Each worker runs a random mix on whatever CPU it is on (the heap asks `sched_getcpu`, so
//! with more threads than CPUs several threads share a pageset, which its lock allows):
//! allocations of every order 0..=10 with GFP flags of every migratetype (unmovable, movable,
//! reclaimable, atomic high-order for the highatomic reserve, THP-style movable, memalloc),
//! frees, handoffs (the block goes to another worker, which checks it, owns it, and frees or
//! hands it on: cross-CPU frees), page_frag fragments, ticks and `drain_all_pages`. Each
//! worker owns at most its share of half the memory (blocks it holds, blocks handed to it,
//! page_frag pages) and allocates only up to half its share, keeping the rest for handoffs,
//! so that normal traffic mostly succeeds: running out is what the exhaustion cycles are for.
//! The coordinating thread ticks every CPU every 10 ms and drains every pageset every 50 ms
//! meanwhile.
//!
//! Every quarter of the run (at least 0.25 s, at most 5 s apart) comes an exhaustion cycle,
//! the threads meeting at a barrier between its steps: every worker allocates until an order-0
//! GFP_ATOMIC and then an order-0 GFP_KERNEL allocation fail (the watermark floor; the
//! coordinator notes the free pages), then takes the reserves with `__GFP_MEMALLOC` until that
//! fails too; everyone frees everything; the coordinator drains the pagesets and checks that
//! every page is free (conservation), that the validator passes, and that allocations of every
//! migratetype at orders 0 and 10 succeed again. The run ends the same way.
//!
//! # How ownership is checked
//!
//! Two independent checks, either of which catches a page handed to two owners:
//!
//! - the [`Ledger`]: one word per frame of the arena naming its owner (a *tag*: the owner's id
//!   and a serial number). An owner claims every frame of a block the moment the allocator
//!   returns it, by compare-exchange from "nobody"; a frame that someone else holds is a
//!   **double allocation**. Handoffs pass the frames to the new owner's tag and frees give them
//!   back *before* the block goes back to the allocator, each by compare-exchange from the
//!   owner's own tag, so a frame that changed hands behind an owner's back is caught too;
//! - stamps in the memory itself: the owner writes its tag into the first and last word of
//!   every 4 KiB page of the block (page_frag fragments: their first and last word), and
//!   checks them on free and when the block changes owner, so anyone else writing into the
//!   block — a second owner, a writer after a free or a handoff — is caught.
//!
//! Every detected fault is a **violation**, counted by kind with the first few described.
//! At the end every page must be free again (`pages_lost` = managed − free) and the library's
//! validator ([`pagealloc::debug::validate`]) must pass.
//!
//! Fragments are freed by the worker that carved them: it mirrors the page's reference count
//! to know which free is the page's last, and so when to give the page's frames back in the
//! ledger; a remote free would race that mirror.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Barrier, Mutex, PoisonError};
use std::time::{Duration, Instant};

use pagealloc::types::MAX_PAGE_ORDER;
use pagealloc::{AllocError, CpuId, Gfp, Order, PageFragCache, Pfn, Policy, Tunables};
use pagealloc_testkit::rng::Rng;
use serde::Serialize;

#[cfg(test)]
use crate::heap::AliasForTests;
use crate::heap::{FragToken, HeapError, HeapOptions, PageBlock, PageHeap};

/// What a run is asked to do.
#[derive(Clone, Debug)]
pub struct Options {
    /// Worker threads.
    pub threads: u32,
    /// How long the workers run (at least one exhaustion cycle runs however short this is).
    pub duration: Duration,
    /// Seed of the workers' generators (the interleaving is the scheduler's, not seeded).
    pub seed: u64,
    /// Policy of the heap's allocator.
    pub policy: Policy,
    /// Its tunables.
    pub tunables: Tunables,
    /// Arena size, bytes.
    pub arena_bytes: usize,
    /// Faults injected on purpose, to show the checks fire (tests only).
    #[cfg(test)]
    pub faults: Faults,
}

/// Faults the tests inject to show that the checks catch them.
#[cfg(test)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Faults {
    /// Every this many allocations (0: never), also take a second token for one of the
    /// worker's live blocks and treat it as a fresh allocation: the double allocation of a
    /// broken allocator.
    pub alias_every: u64,
    /// Every this many handoffs (0: never), keep writing into the block after handing it on.
    pub scribble_every: u64,
    /// Worker 1 panics at this allocation (0: never): a bug of the stress test itself.
    pub panic_at: u64,
}

/// The kinds of violation, in report order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// A frame claimed by an owner was already held by another.
    DoubleAllocation,
    /// A block's or fragment's memory did not hold its owner's stamp.
    Stamp,
    /// A frame was not held by the owner giving it back or on.
    Ledger,
    /// The allocator refused a free of a block or fragment its owner held.
    RefusedFree,
    /// An allocation failed with something else than `OutOfMemory`.
    UnexpectedError,
    /// After everything was freed, an allocation failed.
    NoRecovery,
    /// After everything was freed and the pagesets drained, free pages != managed pages.
    Conservation,
    /// The validator found a broken invariant.
    Validator,
    /// A worker panicked (a bug of the stress test itself).
    WorkerPanic,
}

const FAULTS: [(Fault, &str); 9] = [
    (Fault::DoubleAllocation, "double_allocations"),
    (Fault::Stamp, "stamp_mismatches"),
    (Fault::Ledger, "ledger_mismatches"),
    (Fault::RefusedFree, "refused_frees"),
    (Fault::UnexpectedError, "unexpected_errors"),
    (Fault::NoRecovery, "failed_recoveries"),
    (Fault::Conservation, "conservation_failures"),
    (Fault::Validator, "validator_failures"),
    (Fault::WorkerPanic, "worker_panics"),
];

/// How many violations are described in the report (all are counted).
const SAMPLES: usize = 20;

/// Violations seen so far, by kind, with the first few described.
#[derive(Debug, Default)]
struct Tally {
    counts: [AtomicU64; FAULTS.len()],
    samples: Mutex<Vec<String>>,
}

impl Tally {
    fn fault(&self, kind: Fault, what: impl FnOnce() -> String) {
        let i = FAULTS.iter().position(|(k, _)| *k == kind).expect("every kind is listed");
        self.counts[i].fetch_add(1, Relaxed);
        let mut s = self.samples.lock().unwrap_or_else(PoisonError::into_inner);
        if s.len() < SAMPLES {
            s.push(what());
        }
    }

    fn count(&self, kind: Fault) -> u64 {
        let i = FAULTS.iter().position(|(k, _)| *k == kind).expect("every kind is listed");
        self.counts[i].load(Relaxed)
    }
}

// ---------------------------------------------------------------------------------------------
// The ledger

/// An owner's tag: its id (1-based; 0 is "nobody") in the top 16 bits and a serial number, new
/// for every block or fragment it takes, below.
fn tag(owner: u32, serial: u64) -> u64 {
    (u64::from(owner) << 48) | (serial & ((1 << 48) - 1))
}

/// The owner a tag names.
fn owner_of(tag: u64) -> u64 {
    tag >> 48
}

/// The stamp of page `i` of a block owned under `tag`: the tag itself (so a wrong stamp
/// names who wrote it) and a word that also depends on the page, so a block overlapping
/// another at an offset cannot match by accident.
fn page_stamp(tag: u64) -> impl Fn(u64) -> [u64; 2] {
    move |i| [tag, !tag ^ i]
}

/// Who owns each frame of the arena: one word per frame, a [`tag`] or 0.
#[derive(Debug)]
pub struct Ledger {
    first: Pfn,
    frames: Box<[AtomicU64]>,
}

/// A frame the ledger found held by someone else than expected: the frame and the tag it
/// held (`u64::MAX`: a frame outside the arena).
pub type Conflict = (Pfn, u64);

impl Ledger {
    /// A ledger of `n` frames from `first`, every one owned by nobody.
    pub fn new(first: Pfn, n: usize) -> Ledger {
        Ledger { first, frames: (0..n).map(|_| AtomicU64::new(0)).collect() }
    }

    fn slot(&self, pfn: Pfn) -> Option<&AtomicU64> {
        let i = usize::try_from(pfn.0.checked_sub(self.first.0)?).ok()?;
        self.frames.get(i)
    }

    /// Claim every frame of the block of `order` at `pfn` for `tag` (nonzero). If one is held
    /// already, give back the ones just claimed and return it: the block was handed to two
    /// owners.
    pub fn claim(&self, pfn: Pfn, order: u8, tag: u64) -> Result<(), Conflict> {
        for i in 0..1u64 << order {
            let f = Pfn(pfn.0 + i);
            let held = match self.slot(f) {
                None => Some(u64::MAX),
                Some(s) => s.compare_exchange(0, tag, Relaxed, Relaxed).err(),
            };
            if let Some(other) = held {
                for j in 0..i {
                    if let Some(s) = self.slot(Pfn(pfn.0 + j)) {
                        let _ = s.compare_exchange(tag, 0, Relaxed, Relaxed);
                    }
                }
                return Err((f, other));
            }
        }
        Ok(())
    }

    /// Pass every frame of the block from `from` to `to` (0: give it back). Frames `from` does
    /// not hold are left alone; the first one is returned.
    pub fn pass(&self, pfn: Pfn, order: u8, from: u64, to: u64) -> Result<(), Conflict> {
        let mut first_bad = None;
        for i in 0..1u64 << order {
            let f = Pfn(pfn.0 + i);
            let held = match self.slot(f) {
                None => Some(u64::MAX),
                Some(s) => s.compare_exchange(from, to, Relaxed, Relaxed).err(),
            };
            if let (Some(other), None) = (held, first_bad) {
                first_bad = Some((f, other));
            }
        }
        first_bad.map_or(Ok(()), Err)
    }
}

// ---------------------------------------------------------------------------------------------
// The run

/// What a run did and found. `violations` counts every fault of every kind;
/// `double_allocations` is one of those kinds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// Worker operations: allocations tried, frees, handoffs, fragment allocations and frees,
    /// cache drains, ticks and drains of every pageset.
    pub ops: u64,
    /// Worker threads.
    pub threads: u32,
    /// Wall time of the run, seconds.
    pub seconds: f64,
    /// Every fault found (all kinds below).
    pub violations: u64,
    /// Managed pages minus free pages at the end, everything freed and drained (negative:
    /// more pages free than managed).
    pub pages_lost: i64,
    /// Frames claimed by an owner while another held them.
    pub double_allocations: u64,
    /// Free pages at the end.
    pub final_free_pages: u64,
    /// Pages the allocator manages.
    pub managed_pages: u64,
    /// `ops / seconds`.
    pub ops_per_sec: f64,
    /// CPUs of the allocator (the CPUs `sched_getcpu` may report).
    pub allocator_cpus: u32,
    /// Arena, MiB.
    pub arena_mib: usize,
    /// Seed of the workers' generators.
    pub seed: u64,
    /// Worker counters.
    pub counts: Counts,
    /// Exhaustion cycles run (each ends with a conservation check, the validator and a
    /// recovery check).
    pub exhaustion_cycles: u64,
    /// Fewest and most free pages when no worker could get an order-0 page with GFP_ATOMIC
    /// or GFP_KERNEL: what the watermarks keep back.
    pub free_at_floor: [u64; 2],
    /// Fewest and most free pages when every worker had also taken the reserves
    /// (`__GFP_MEMALLOC`) until that failed too.
    pub free_at_exhaustion: [u64; 2],
    /// Violations by kind.
    pub by_kind: std::collections::BTreeMap<&'static str, u64>,
    /// The first violations, described.
    pub samples: Vec<String>,
}

/// What the workers did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Counts {
    /// Allocations tried.
    pub allocs: u64,
    /// Of which refused with `OutOfMemory` (blocks and fragments).
    pub alloc_failures: u64,
    /// Of those, refused in exhaustion cycles (where failing is the point).
    pub failures_at_exhaustion: u64,
    /// Blocks allocated, by order.
    pub blocks_by_order: [u64; MAX_PAGE_ORDER as usize + 1],
    /// Block allocations refused outside exhaustion cycles, by order (fragments not counted).
    pub failures_by_order: [u64; MAX_PAGE_ORDER as usize + 1],
    /// Blocks freed.
    pub frees: u64,
    /// Of which by another worker than the one that allocated them.
    pub cross_thread_frees: u64,
    /// Blocks handed to another worker.
    pub handoffs: u64,
    /// Fragments carved.
    pub frag_allocs: u64,
    /// Fragments freed.
    pub frag_frees: u64,
    /// page_frag pages the workers' caches took.
    pub frag_pages: u64,
    /// Fragment cache drains.
    pub frag_drains: u64,
    /// Ticks run by workers.
    pub ticks: u64,
    /// `drain_all_pages` calls by workers.
    pub drains: u64,
    /// Pages stamped (4 KiB pages of blocks, counted at every stamping).
    pub pages_stamped: u64,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.allocs += o.allocs;
        self.alloc_failures += o.alloc_failures;
        self.failures_at_exhaustion += o.failures_at_exhaustion;
        for (a, b) in self.failures_by_order.iter_mut().zip(o.failures_by_order) {
            *a += b;
        }
        for (a, b) in self.blocks_by_order.iter_mut().zip(o.blocks_by_order) {
            *a += b;
        }
        self.frees += o.frees;
        self.cross_thread_frees += o.cross_thread_frees;
        self.handoffs += o.handoffs;
        self.frag_allocs += o.frag_allocs;
        self.frag_frees += o.frag_frees;
        self.frag_pages += o.frag_pages;
        self.frag_drains += o.frag_drains;
        self.ticks += o.ticks;
        self.drains += o.drains;
        self.pages_stamped += o.pages_stamped;
    }

    fn ops(&self) -> u64 {
        self.allocs
            + self.frees
            + self.handoffs
            + self.frag_allocs
            + self.frag_frees
            + self.frag_drains
            + self.ticks
            + self.drains
    }
}

/// Barrier waits of a worker in one exhaustion cycle (F, F', A, A', B, C) and at the finish.
const CYCLE_WAITS: u32 = 6;
const FINISH_WAITS: u32 = 2;

/// What the workers should be doing.
const NORMAL: u8 = 0;
const EXHAUST: u8 = 1;
const FINISH: u8 = 2;

/// A block on its way to another worker, stamped and ledgered under `tag`.
struct Handoff<'h> {
    block: PageBlock<'h>,
    tag: u64,
    ledgered: bool,
}

/// Everything the threads share.
struct Shared<'h> {
    heap: &'h PageHeap,
    ledger: Ledger,
    tally: Tally,
    inboxes: Vec<Mutex<Vec<Handoff<'h>>>>,
    phase: AtomicU8,
    /// Workers and the coordinator meet here around each exhaustion cycle.
    barrier: Barrier,
    /// Each worker's operations so far (published every few operations, for the progress
    /// bar).
    progress: Vec<AtomicU64>,
    /// Pages a worker may own in the normal phase: half the memory, shared out, but at least
    /// two order-10 blocks (with a small arena and many threads, normal traffic then runs
    /// out of memory too: more refused allocations, nothing wrong). It allocates up to half
    /// of that (at least one order-10 block) and takes handoffs up to all of it.
    budget_pages: u64,
    /// Pages each worker owns: blocks it holds, blocks handed to it not yet received, and the
    /// page_frag pages its cache took that are not freed yet.
    owned: Vec<AtomicU64>,
    #[cfg(test)]
    faults: Faults,
}

/// Run the stress test; `progress(elapsed fraction, ops)` is called about every 10 ms.
pub fn run(opts: &Options, progress: &mut dyn FnMut(f64, u64)) -> Result<Report, HeapError> {
    let mut hopts = HeapOptions::new(opts.arena_bytes);
    hopts.policy = opts.policy;
    hopts.tunables = opts.tunables;
    let heap = PageHeap::new(&hopts)?;
    let pa = heap.allocator();
    let zone = &pa.zones()[0];
    let (first, frames) = (zone.start_pfn(), zone.spanned_pages().0 as usize);
    let threads = opts.threads.max(1);
    let shared = Shared {
        heap: &heap,
        ledger: Ledger::new(first, frames),
        tally: Tally::default(),
        inboxes: (0..threads).map(|_| Mutex::new(Vec::new())).collect(),
        phase: AtomicU8::new(NORMAL),
        barrier: Barrier::new(threads as usize + 1),
        progress: (0..threads).map(|_| AtomicU64::new(0)).collect(),
        owned: (0..threads).map(|_| AtomicU64::new(0)).collect(),
        budget_pages: (pa.managed_pages().0 / 2 / u64::from(threads)).max(2 << MAX_PAGE_ORDER),
        #[cfg(test)]
        faults: opts.faults,
    };
    let started = Instant::now();
    let mut cycles = 0;
    let (mut floor, mut last) = ([u64::MAX, 0], [u64::MAX, 0]);
    let mut counts = Counts::default();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|i| {
                let shared = &shared;
                let seed = opts.seed;
                s.spawn(move || {
                    let mut w = Worker::new(i, seed, shared);
                    match std::panic::catch_unwind(AssertUnwindSafe(|| w.run())) {
                        Ok(counts) => counts,
                        Err(p) => {
                            let why = p
                                .downcast_ref::<&str>()
                                .map(|s| (*s).to_owned())
                                .or_else(|| p.downcast_ref::<String>().cloned())
                                .unwrap_or_default();
                            shared.tally.fault(Fault::WorkerPanic, || {
                                format!("worker {} panicked: {why}", i + 1)
                            });
                            w.limp()
                        }
                    }
                })
            })
            .collect();
        let coord = Coordinator { shared: &shared, id: threads + 1 };
        // A round of normal traffic, then an exhaustion cycle; at least one of each.
        let round = (opts.duration / 4).clamp(Duration::from_millis(250), Duration::from_secs(5));
        let mut next_cycle = started + round;
        let mut step = 0u64;
        loop {
            std::thread::sleep(Duration::from_millis(10));
            step += 1;
            coord.housekeeping(step);
            let now = Instant::now();
            let ops: u64 = shared.progress.iter().map(|p| p.load(Relaxed)).sum();
            progress(now.duration_since(started).as_secs_f64() / opts.duration.as_secs_f64(), ops);
            let over = now.duration_since(started) >= opts.duration;
            if over && cycles > 0 {
                break;
            }
            if now >= next_cycle || over {
                let (at_floor, at_last) = coord.exhaustion_cycle();
                floor = [floor[0].min(at_floor), floor[1].max(at_floor)];
                last = [last[0].min(at_last), last[1].max(at_last)];
                cycles += 1;
                next_cycle = Instant::now() + round;
            }
        }
        shared.phase.store(FINISH, Relaxed);
        shared.barrier.wait(); // every worker stopped its traffic
        shared.barrier.wait(); // every worker freed everything
        for w in workers {
            // A worker's panic is caught in the worker (and counted).
            counts.add(&w.join().unwrap_or_default());
        }
    });
    let seconds = started.elapsed().as_secs_f64();
    let coord = Coordinator { shared: &shared, id: threads + 1 };
    coord.check_idle("at the end");
    let managed = pa.managed_pages().0;
    let free = pa.nr_free_pages().0;
    let tally = &shared.tally;
    let by_kind = FAULTS.iter().map(|&(k, name)| (name, tally.count(k))).collect();
    let samples =
        std::mem::take(&mut *tally.samples.lock().unwrap_or_else(PoisonError::into_inner));
    let ops = counts.ops();
    Ok(Report {
        ops,
        threads,
        seconds,
        violations: FAULTS.iter().map(|&(k, _)| tally.count(k)).sum(),
        pages_lost: managed as i64 - free as i64,
        double_allocations: tally.count(Fault::DoubleAllocation),
        final_free_pages: free,
        managed_pages: managed,
        ops_per_sec: ops as f64 / seconds.max(1e-9),
        allocator_cpus: pa.nr_cpus(),
        arena_mib: opts.arena_bytes >> 20,
        seed: opts.seed,
        counts,
        exhaustion_cycles: cycles,
        free_at_floor: if cycles > 0 { floor } else { [0, 0] },
        free_at_exhaustion: if cycles > 0 { last } else { [0, 0] },
        by_kind,
        samples,
    })
}

/// The GFP flags the workers allocate with, by weight: every migratetype a GFP flag selects,
/// with and without reserves.
const GFPS: [(Gfp, u32); 7] = [
    (Gfp::KERNEL, 30),
    (Gfp::HIGHUSER_MOVABLE, 30),
    (Gfp::KERNEL_RECLAIMABLE, 15),
    // High-order atomic allocations build the highatomic reserve.
    (Gfp::ATOMIC, 12),
    (Gfp::NOWAIT, 6),
    (Gfp::TRANSHUGE_LIGHT, 6),
    // Ignores watermarks: reaches the last free page in exhaustion cycles.
    (MEMALLOC, 1),
];

/// GFP_KERNEL with access to every reserve (a memory-freeing path's flags).
const MEMALLOC: Gfp = Gfp(Gfp::KERNEL.0 | Gfp::MEMALLOC.0);

/// Orders by weight: mostly small blocks (the pagesets' orders 0..=3), every order up to
/// [`MAX_PAGE_ORDER`], the THP order 9 a little more often.
const ORDERS: [(u8, u32); MAX_PAGE_ORDER as usize + 1] =
    [(0, 40), (1, 12), (2, 10), (3, 10), (4, 4), (5, 4), (6, 4), (7, 4), (8, 4), (9, 5), (10, 3)];

fn pick<T: Copy>(rng: &mut Rng, table: &[(T, u32)]) -> T {
    let total: u32 = table.iter().map(|(_, w)| w).sum();
    let mut r = rng.below(u64::from(total)) as u32;
    for &(v, w) in table {
        if r < w {
            return v;
        }
        r -= w;
    }
    table[0].0
}

/// A block a worker owns.
struct Held<'h> {
    block: PageBlock<'h>,
    tag: u64,
    /// Its frames are in the ledger under `tag` (not so for the second owner of a doubly
    /// allocated block, whose claim was refused).
    ledgered: bool,
    /// Allocated by another worker and handed over.
    from_other: bool,
}

/// A page_frag page a worker's cache took: how many of its fragments are out, and whether
/// the cache still holds it (then the page cannot be freed by a fragment free).
struct FragPage {
    order: u8,
    tag: u64,
    ledgered: bool,
    out: u32,
    cached: bool,
}

struct Worker<'h> {
    /// Index (0-based); its owner id is `index + 1`.
    index: u32,
    shared: &'h Shared<'h>,
    rng: Rng,
    serial: u64,
    held: Vec<Held<'h>>,
    frags: Vec<(FragToken<'h>, u64)>,
    frag_pages: HashMap<u64, FragPage>,
    cache: PageFragCache,
    counts: Counts,
    /// Barrier waits made so far in the current exhaustion cycle or finish.
    waited: u32,
    /// In the allocating part of an exhaustion cycle.
    exhausting: bool,
    /// An allocation waiting for room in the worker's share.
    pending: Option<(Gfp, u8)>,
}

/// Fragments a worker keeps out at most.
const MAX_FRAGS: usize = 256;

impl<'h> Worker<'h> {
    fn new(index: u32, seed: u64, shared: &'h Shared<'h>) -> Worker<'h> {
        let mut seeder = Rng::new(seed);
        for _ in 0..=index {
            seeder.next_u64();
        }
        Worker {
            index,
            shared,
            rng: Rng::new(seeder.next_u64()),
            serial: 0,
            held: Vec::new(),
            frags: Vec::new(),
            frag_pages: HashMap::new(),
            cache: PageFragCache::new(),
            counts: Counts::default(),
            waited: 0,
            exhausting: false,
            pending: None,
        }
    }

    fn owner(&self) -> u32 {
        self.index + 1
    }

    /// Pages this worker answers for: blocks it holds or that are on their way to it, and its
    /// page_frag pages.
    fn owned(&self) -> &AtomicU64 {
        &self.shared.owned[self.index as usize]
    }

    fn next_tag(&mut self) -> u64 {
        self.serial += 1;
        tag(self.owner(), self.serial)
    }

    /// Run until the coordinator says finish; the counts.
    fn run(&mut self) -> Counts {
        let mut i = 0u64;
        loop {
            match self.shared.phase.load(Relaxed) {
                NORMAL => {
                    self.step(i);
                    i += 1;
                    if i % 64 == 0 {
                        self.shared.progress[self.index as usize].store(self.counts.ops(), Relaxed);
                    }
                }
                EXHAUST => {
                    self.exhaust(); // waits at F and F'
                    self.wait(); // A: every worker took the reserves too
                    self.wait(); // A': the coordinator has looked
                    self.release_all();
                    self.wait(); // B: everything freed
                    self.wait(); // C: the coordinator checked
                    self.waited = 0;
                }
                _ => {
                    self.wait(); // every worker stopped its traffic
                    self.release_all();
                    self.wait(); // everything freed
                    self.shared.progress[self.index as usize].store(self.counts.ops(), Relaxed);
                    return std::mem::take(&mut self.counts);
                }
            }
        }
    }

    fn wait(&mut self) {
        self.shared.barrier.wait();
        self.waited += 1;
    }

    /// After a panic (a bug of this module): keep meeting the others at the barriers, doing
    /// nothing else, so the run ends and reports instead of hanging.
    fn limp(&mut self) -> Counts {
        loop {
            match self.shared.phase.load(Relaxed) {
                NORMAL => std::thread::sleep(Duration::from_millis(1)),
                EXHAUST => {
                    while self.waited < CYCLE_WAITS {
                        self.wait();
                    }
                    self.waited = 0;
                }
                _ => {
                    while self.waited < FINISH_WAITS {
                        self.wait();
                    }
                    return std::mem::take(&mut self.counts);
                }
            }
        }
    }

    /// One operation of the normal mix.
    fn step(&mut self, i: u64) {
        if i % 16 == 0 {
            self.receive();
        }
        let threads = self.shared.inboxes.len();
        if self.owned().load(Relaxed) > self.shared.budget_pages {
            self.shed();
            return;
        }
        match self.rng.below(1000) {
            0..450 => {
                // Allocate up to half the share; the other half is room for handoffs. A
                // request that does not fit waits while blocks are freed, so the orders
                // allocated keep the weights of ORDERS.
                let (gfp, order) = self
                    .pending
                    .take()
                    .unwrap_or_else(|| (pick(&mut self.rng, &GFPS), pick(&mut self.rng, &ORDERS)));
                let limit = (self.shared.budget_pages / 2).max(1 << MAX_PAGE_ORDER);
                if self.owned().load(Relaxed) + (1 << order) <= limit {
                    self.alloc(gfp, order);
                } else {
                    self.pending = Some((gfp, order));
                    self.shed();
                }
            }
            450..800 => self.free_one(),
            800..880 if threads > 1 => self.handoff(),
            800..880 => self.free_one(),
            880..940 if self.frags.len() < MAX_FRAGS => self.frag_alloc(),
            880..990 => self.frag_free(),
            990..996 => {
                self.shared.heap.allocator().tick(self.shared.heap.current_cpu());
                self.counts.ticks += 1;
            }
            996..998 => {
                self.shared.heap.allocator().drain_all_pages(self.shared.heap.current_cpu(), None);
                self.counts.drains += 1;
            }
            _ => self.frag_drain(),
        }
    }

    /// Allocate until an order-0 allocation fails with the flags that dig deepest short of
    /// the emergency reserves (GFP_ATOMIC), and then with the flags that drain the pagesets
    /// first (GFP_KERNEL): the watermark floor. Once every worker is there (the coordinator
    /// notes the free pages), take the reserves too (`__GFP_MEMALLOC`), to the last page.
    fn exhaust(&mut self) {
        self.exhausting = true;
        loop {
            let (gfp, order) = (pick(&mut self.rng, &GFPS), pick(&mut self.rng, &ORDERS));
            if self.alloc(gfp, order) {
                continue;
            }
            if !self.alloc(Gfp::ATOMIC, 0) && !self.alloc(Gfp::KERNEL, 0) {
                break;
            }
        }
        self.wait(); // F: every worker at the watermark floor
        self.wait(); // F': the coordinator has looked
        while self.alloc(MEMALLOC, 0) {}
        self.exhausting = false;
    }

    /// Allocate a block; true if it came.
    fn alloc(&mut self, gfp: Gfp, order: u8) -> bool {
        self.counts.allocs += 1;
        #[cfg(test)]
        if self.index == 0 && self.counts.allocs == self.shared.faults.panic_at {
            panic!("injected");
        }
        match self.shared.heap.alloc_block_with(gfp, Order(order)) {
            Ok(block) => {
                self.counts.blocks_by_order[usize::from(order)] += 1;
                #[cfg(test)]
                let alias = self.injected_alias();
                self.adopt(block, false);
                #[cfg(test)]
                if let Some(alias) = alias {
                    self.adopt(alias, false);
                }
                true
            }
            Err(AllocError::OutOfMemory { .. }) => {
                self.counts.alloc_failures += 1;
                if self.exhausting {
                    self.counts.failures_at_exhaustion += 1;
                } else {
                    self.counts.failures_by_order[usize::from(order)] += 1;
                }
                false
            }
            Err(e) => {
                self.shared.tally.fault(Fault::UnexpectedError, || {
                    format!("order-{order} allocation with {gfp:?} failed with `{e}`")
                });
                false
            }
        }
    }

    /// A second token for one of the worker's live blocks, on the allocations the fault plan
    /// says.
    #[cfg(test)]
    fn injected_alias(&mut self) -> Option<PageBlock<'h>> {
        let n = self.shared.faults.alias_every;
        if n == 0 || self.counts.allocs % n != 0 || self.held.is_empty() {
            return None;
        }
        let i = self.rng.below(self.held.len() as u64) as usize;
        Some(self.held[i].block.alias())
    }

    /// Take ownership of a block the allocator just returned: claim its frames, stamp it.
    fn adopt(&mut self, mut block: PageBlock<'h>, from_other: bool) {
        let tag = self.next_tag();
        let ledgered = match self.shared.ledger.claim(block.pfn(), block.order(), tag) {
            Ok(()) => true,
            Err((frame, other)) => {
                self.shared.tally.fault(Fault::DoubleAllocation, || {
                    format!(
                        "thread {} got the order-{} block at pfn {:#x} from the allocator, but \
                         its frame {:#x} is held by {}",
                        self.owner(),
                        block.order(),
                        block.pfn().0,
                        frame.0,
                        holder(other)
                    )
                });
                false
            }
        };
        block.stamp_pages(page_stamp(tag));
        self.counts.pages_stamped += 1 << block.order();
        self.owned().fetch_add(1 << block.order(), Relaxed);
        self.held.push(Held { block, tag, ledgered, from_other });
    }

    /// Check a block's stamps under `tag`; a mismatch is a violation.
    fn check(&self, block: &PageBlock<'_>, tag: u64, when: &str) {
        if let Some((page, found)) = block.check_pages(page_stamp(tag)) {
            self.shared.tally.fault(Fault::Stamp, || {
                format!(
                    "{when}: page {page} of the order-{} block at pfn {:#x} owned by thread {} \
                     holds {:#x}/{:#x} (the first word names {}), not its owner's stamp",
                    block.order(),
                    block.pfn().0,
                    owner_of(tag),
                    found[0],
                    found[1],
                    holder(found[0])
                )
            });
        }
    }

    /// Give something back to make room: a block, else a fragment, else the cache's page,
    /// else take in what was handed over (it counts already).
    fn shed(&mut self) {
        if !self.held.is_empty() {
            self.free_one();
        } else if !self.frags.is_empty() {
            self.frag_free();
        } else if self.cache.page().is_some() {
            self.frag_drain();
        } else {
            self.receive();
        }
    }

    fn free_one(&mut self) {
        if self.held.is_empty() {
            return;
        }
        let i = self.rng.below(self.held.len() as u64) as usize;
        let h = self.held.swap_remove(i);
        self.free(h);
    }

    /// Check, give the frames back in the ledger, then free (in that order: once freed, the
    /// block may be someone else's at once).
    fn free(&mut self, h: Held<'h>) {
        self.check(&h.block, h.tag, "free");
        let (pfn, order) = (h.block.pfn(), h.block.order());
        self.owned().fetch_sub(1 << order, Relaxed);
        if h.ledgered {
            if let Err(c) = self.shared.ledger.pass(pfn, order, h.tag, 0) {
                self.ledger_fault("free", pfn, order, h.tag, c);
            }
        }
        self.counts.frees += 1;
        match self.shared.heap.free_block(h.block) {
            Ok(()) => self.counts.cross_thread_frees += u64::from(h.from_other),
            Err(e) => self.shared.tally.fault(Fault::RefusedFree, || {
                format!(
                    "thread {} freeing its order-{order} block at pfn {:#x}: {e}",
                    self.owner(),
                    pfn.0
                )
            }),
        }
    }

    fn ledger_fault(&self, when: &str, pfn: Pfn, order: u8, tag: u64, (frame, other): Conflict) {
        self.shared.tally.fault(Fault::Ledger, || {
            format!(
                "{when}: frame {:#x} of the order-{order} block at pfn {:#x} owned by thread {} \
                 is held by {}",
                frame.0,
                pfn.0,
                owner_of(tag),
                holder(other)
            )
        });
    }

    /// Hand a held block to another worker, checked first; free it instead if the block
    /// would take that worker over its share (a worker the scheduler starves must not end up
    /// owning all the memory).
    fn handoff(&mut self) {
        if self.held.is_empty() {
            return;
        }
        let n = self.shared.inboxes.len() as u64;
        let to = ((u64::from(self.index) + 1 + self.rng.below(n - 1)) % n) as usize;
        let i = self.rng.below(self.held.len() as u64) as usize;
        let pages = 1 << self.held[i].block.order();
        if self.shared.owned[to].load(Relaxed) + pages > self.shared.budget_pages {
            let h = self.held.swap_remove(i);
            self.free(h);
            return;
        }
        let h = self.held.swap_remove(i);
        self.check(&h.block, h.tag, "handoff");
        self.owned().fetch_sub(pages, Relaxed);
        self.shared.owned[to].fetch_add(pages, Relaxed);
        #[cfg(test)]
        let scribble = {
            let every = self.shared.faults.scribble_every;
            (every > 0 && (self.counts.handoffs + 1) % every == 0)
                .then(|| (h.block.alias(), h.tag ^ 1))
        };
        self.counts.handoffs += 1;
        let item = Handoff { block: h.block, tag: h.tag, ledgered: h.ledgered };
        self.shared.inboxes[to].lock().expect("no panics while held").push(item);
        #[cfg(test)]
        if let Some((mut alias, wrong)) = scribble {
            // Written after the block left: it belongs to the receiver now.
            alias.stamp_pages(page_stamp(wrong));
        }
    }

    /// Take the blocks other workers handed over: check the sender's stamps, pass the frames
    /// to a new tag, stamp them as ours.
    fn receive(&mut self) {
        let items = std::mem::take(
            &mut *self.shared.inboxes[self.index as usize].lock().expect("no panics while held"),
        );
        for Handoff { mut block, tag: sent, ledgered } in items {
            self.check(&block, sent, "handoff received");
            let tag = self.next_tag();
            if ledgered {
                if let Err(c) = self.shared.ledger.pass(block.pfn(), block.order(), sent, tag) {
                    self.ledger_fault("handoff received", block.pfn(), block.order(), sent, c);
                }
            }
            block.stamp_pages(page_stamp(tag));
            self.counts.pages_stamped += 1 << block.order();
            self.held.push(Held { block, tag, ledgered, from_other: true });
        }
    }

    fn frag_alloc(&mut self) {
        let len = 16 + 8 * self.rng.below(510) as u32;
        let gfp = if self.rng.below(4) == 0 { Gfp::ATOMIC } else { Gfp::KERNEL };
        let before = self.cache.page();
        self.counts.frag_allocs += 1;
        let r = self.shared.heap.frag_alloc(&mut self.cache, len, gfp);
        self.sync_cache(before);
        match r {
            Ok(mut f) => {
                let tag = self.next_tag();
                f.stamp([tag, !tag]);
                if let Some(p) = self.frag_pages.get_mut(&f.page().0) {
                    p.out += 1;
                }
                self.frags.push((f, tag));
            }
            Err(AllocError::OutOfMemory { .. }) => self.counts.alloc_failures += 1,
            Err(e) => self.shared.tally.fault(Fault::UnexpectedError, || {
                format!("a {len}-byte fragment with {gfp:?} failed with `{e}`")
            }),
        }
    }

    /// After a fragment allocation: if the cache let go of its page or took a new one, update
    /// the mirror and the ledger.
    fn sync_cache(&mut self, before: Option<(Pfn, Order)>) {
        let after = self.cache.page();
        if before == after {
            return;
        }
        if let Some((old, _)) = before {
            // The cache moves on only while fragments of its page are out (else it reuses
            // the page), so the page is still allocated.
            if let Some(p) = self.frag_pages.get_mut(&old.0) {
                p.cached = false;
                if p.out == 0 {
                    self.shared.tally.fault(Fault::Ledger, || {
                        format!(
                            "the fragment cache let go of pfn {:#x} with no fragment out",
                            old.0
                        )
                    });
                }
            }
        }
        if let Some((new, order)) = after {
            let tag = self.next_tag();
            let ledgered = match self.shared.ledger.claim(new, order.0, tag) {
                Ok(()) => true,
                Err((frame, other)) => {
                    self.shared.tally.fault(Fault::DoubleAllocation, || {
                        format!(
                            "thread {}'s fragment cache got the order-{} page at pfn {:#x}, but \
                             its frame {:#x} is held by {}",
                            self.owner(),
                            order.0,
                            new.0,
                            frame.0,
                            holder(other)
                        )
                    });
                    false
                }
            };
            self.counts.frag_pages += 1;
            self.owned().fetch_add(1 << order.0, Relaxed);
            self.frag_pages
                .insert(new.0, FragPage { order: order.0, tag, ledgered, out: 0, cached: true });
        }
    }

    fn frag_free(&mut self) {
        if self.frags.is_empty() {
            return;
        }
        let i = self.rng.below(self.frags.len() as u64) as usize;
        let (f, tag) = self.frags.swap_remove(i);
        self.free_frag(f, tag);
    }

    /// Check a fragment's stamp and free it; before the page's last reference goes, give its
    /// frames back in the ledger.
    fn free_frag(&mut self, f: FragToken<'h>, tag: u64) {
        let found = f.read_stamp();
        if found != [tag, !tag] {
            self.shared.tally.fault(Fault::Stamp, || {
                format!(
                    "a {}-byte fragment of pfn {:#x} owned by thread {} holds {:#x}/{:#x} (the \
                     first word names {})",
                    f.len(),
                    f.page().0,
                    owner_of(tag),
                    found[0],
                    found[1],
                    holder(found[0])
                )
            });
        }
        let page = f.page();
        if let Some(p) = self.frag_pages.get_mut(&page.0) {
            p.out = p.out.saturating_sub(1);
            if p.out == 0 && !p.cached {
                self.forget_frag_page(page);
            }
        }
        self.counts.frag_frees += 1;
        if let Err(e) = self.shared.heap.frag_free(f) {
            self.shared.tally.fault(Fault::RefusedFree, || {
                format!("thread {} freeing a fragment of pfn {:#x}: {e}", self.owner(), page.0)
            });
        }
    }

    /// The page is about to go back to the allocator: give its frames back in the ledger.
    fn forget_frag_page(&mut self, page: Pfn) {
        if let Some(p) = self.frag_pages.remove(&page.0) {
            self.owned().fetch_sub(1 << p.order, Relaxed);
            if p.ledgered {
                if let Err(c) = self.shared.ledger.pass(page, p.order, p.tag, 0) {
                    self.ledger_fault("page_frag page freed", page, p.order, p.tag, c);
                }
            }
        }
    }

    fn frag_drain(&mut self) {
        if let Some((page, _)) = self.cache.page() {
            if let Some(p) = self.frag_pages.get_mut(&page.0) {
                p.cached = false;
                if p.out == 0 {
                    self.forget_frag_page(page);
                }
            }
        }
        self.counts.frag_drains += 1;
        if let Err(e) = self.shared.heap.frag_drain(&mut self.cache) {
            self.shared.tally.fault(Fault::RefusedFree, || {
                format!("thread {} draining its page_frag cache: {e}", self.owner())
            });
        }
    }

    /// Free everything: blocks handed over, blocks held, fragments, the cache's page.
    fn release_all(&mut self) {
        self.receive();
        while let Some(h) = self.held.pop() {
            self.free(h);
        }
        while let Some((f, tag)) = self.frags.pop() {
            self.free_frag(f, tag);
        }
        self.frag_drain();
        if !self.frag_pages.is_empty() {
            let pages: Vec<u64> = self.frag_pages.keys().copied().collect();
            self.shared.tally.fault(Fault::Ledger, || {
                format!("page_frag pages {pages:x?} still held after every fragment was freed")
            });
        }
    }
}

/// "thread N" or "nobody" for a tag read from the ledger or a stamp.
fn holder(tag: u64) -> String {
    match tag {
        0 => "nobody".to_owned(),
        u64::MAX => "no frame of the arena".to_owned(),
        t => format!("thread {} (tag {t:#x})", owner_of(t)),
    }
}

/// The coordinating thread: ticks, drains, exhaustion cycles and the checks between them.
struct Coordinator<'s, 'h> {
    shared: &'s Shared<'h>,
    /// Its owner id in the ledger (after the workers').
    id: u32,
}

impl Coordinator<'_, '_> {
    /// Every 10 ms a tick of every CPU (the kernel's vmstat work is once a second; more often
    /// here to race it against the workers); every 50 ms a drain of every pageset.
    fn housekeeping(&self, step: u64) {
        let pa = self.shared.heap.allocator();
        for c in 0..pa.nr_cpus() {
            if let Some(cpu) = pa.cpu(CpuId(c)) {
                pa.tick(cpu);
            }
        }
        if step % 5 == 0 {
            pa.drain_all_pages(self.shared.heap.current_cpu(), None);
        }
    }

    /// Drive one exhaustion cycle; returns the free pages when every worker hit the
    /// watermark floor, and when the reserves had gone too.
    fn exhaustion_cycle(&self) -> (u64, u64) {
        let s = self.shared;
        s.phase.store(EXHAUST, Relaxed);
        s.barrier.wait(); // F
        let floor = s.heap.allocator().nr_free_pages().0;
        s.barrier.wait(); // F'
        s.barrier.wait(); // A
        let free = s.heap.allocator().nr_free_pages().0;
        s.phase.store(NORMAL, Relaxed);
        s.barrier.wait(); // A'
        s.barrier.wait(); // B
        self.check_idle("after an exhaustion cycle");
        s.barrier.wait(); // C
        (floor, free)
    }

    /// With every block freed: drain the pagesets, check conservation and the validator, and
    /// that blocks of every migratetype up to order 10 can be had again.
    fn check_idle(&self, when: &str) {
        let s = self.shared;
        let pa = s.heap.allocator();
        let Some(cpu) = pa.cpu(CpuId(0)) else { return };
        pa.drain_all_pages(cpu, None);
        let (free, managed) = (pa.nr_free_pages().0, pa.managed_pages().0);
        if free != managed {
            s.tally.fault(Fault::Conservation, || {
                format!("{when}: {free} pages free of {managed} managed, everything freed")
            });
        }
        if let Err(v) = pagealloc::debug::validate(pa) {
            s.tally.fault(Fault::Validator, || format!("{when}: {v}"));
        }
        let mut serial = 0;
        for gfp in [Gfp::KERNEL, Gfp::HIGHUSER_MOVABLE, Gfp::KERNEL_RECLAIMABLE] {
            for order in [MAX_PAGE_ORDER, 0] {
                serial += 1;
                match s.heap.alloc_block_with(gfp, Order(order)) {
                    Ok(mut b) => {
                        let t = tag(self.id, serial);
                        let (pfn, o) = (b.pfn(), b.order());
                        let claimed = s.ledger.claim(pfn, o, t).is_ok();
                        if !claimed {
                            s.tally.fault(Fault::DoubleAllocation, || {
                                format!("{when}: the recovery block at pfn {:#x} is held", pfn.0)
                            });
                        }
                        b.stamp_pages(page_stamp(t));
                        if b.check_pages(page_stamp(t)).is_some() {
                            s.tally.fault(Fault::Stamp, || {
                                format!("{when}: the recovery block at pfn {:#x}", pfn.0)
                            });
                        }
                        if claimed {
                            let _ = s.ledger.pass(pfn, o, t, 0);
                        }
                        if let Err(e) = s.heap.free_block(b) {
                            s.tally.fault(Fault::RefusedFree, || {
                                format!("{when}: freeing the recovery block: {e}")
                            });
                        }
                    }
                    Err(e) => s.tally.fault(Fault::NoRecovery, || {
                        format!("{when}: an order-{order} allocation with {gfp:?} failed: {e}")
                    }),
                }
            }
        }
        pa.drain_all_pages(cpu, None);
    }
}

/// The report as text.
pub fn render(r: &Report, machine: &str, preset: &str) -> String {
    let mut s = String::new();
    let c = &r.counts;
    let _ = writeln!(
        s,
        "pagealloc stress: {} threads on {} allocator CPUs (sched_getcpu), preset {preset}, \
         {} MiB arena, seed {}; {machine}",
        r.threads, r.allocator_cpus, r.arena_mib, r.seed
    );
    let _ = writeln!(
        s,
        "{} ops in {:.1} s ({:.0} ops/s): {} allocations ({} refused, {} of them in exhaustion \
         cycles), {} frees ({} by another thread than the allocating one), {} handoffs, {} \
         fragments carved and {} freed ({} page_frag pages), {} ticks, {} drains by workers",
        r.ops,
        r.seconds,
        r.ops_per_sec,
        c.allocs,
        c.alloc_failures,
        c.failures_at_exhaustion,
        c.frees,
        c.cross_thread_frees,
        c.handoffs,
        c.frag_allocs,
        c.frag_frees,
        c.frag_pages,
        c.ticks,
        c.drains
    );
    let orders = |v: &[u64]| -> Vec<String> {
        v.iter().enumerate().filter(|(_, n)| **n > 0).map(|(o, n)| format!("{o}: {n}")).collect()
    };
    let _ = writeln!(s, "blocks allocated by order: {}", orders(&c.blocks_by_order).join(", "));
    let by_order = orders(&c.failures_by_order);
    if !by_order.is_empty() {
        let _ = writeln!(
            s,
            "block allocations refused outside exhaustion cycles, by order: {}",
            by_order.join(", ")
        );
    }
    let _ = writeln!(
        s,
        "{} exhaustion cycles (free pages when GFP_ATOMIC and GFP_KERNEL failed: {}..{}; after \
         the reserves went too: {}..{}), each ending with every page free, the validator and \
         fresh allocations up to order 10",
        r.exhaustion_cycles,
        r.free_at_floor[0],
        r.free_at_floor[1],
        r.free_at_exhaustion[0],
        r.free_at_exhaustion[1]
    );
    let _ = writeln!(
        s,
        "{} pages stamped; at the end {} of {} pages free (pages lost: {})",
        c.pages_stamped, r.final_free_pages, r.managed_pages, r.pages_lost
    );
    let _ = write!(s, "violations: {}", r.violations);
    let kinds: Vec<String> =
        r.by_kind.iter().filter(|(_, n)| **n > 0).map(|(k, n)| format!("{k} {n}")).collect();
    if !kinds.is_empty() {
        let _ = write!(s, " ({})", kinds.join(", "));
    }
    s.push('\n');
    for v in &r.samples {
        let _ = writeln!(s, "  {v}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(threads: u32, ms: u64) -> Options {
        Options {
            threads,
            duration: Duration::from_millis(ms),
            seed: 7,
            policy: Policy::modern(),
            tunables: Tunables::default(),
            arena_bytes: 32 << 20,
            faults: Faults::default(),
        }
    }

    #[test]
    fn the_ledger_refuses_a_frame_held_by_another_owner() {
        let l = Ledger::new(Pfn(100), 64);
        let (a, b) = (tag(1, 1), tag(2, 1));
        l.claim(Pfn(104), 2, a).unwrap();
        // An overlapping block of another order: refused at the shared frame, nothing kept.
        assert_eq!(l.claim(Pfn(100), 3, b), Err((Pfn(104), a)));
        assert_eq!(l.claim(Pfn(100), 2, b), Ok(()), "the frames before the conflict were undone");
        // Giving back or passing on frames one does not hold is refused frame by frame.
        assert_eq!(l.pass(Pfn(104), 2, b, 0), Err((Pfn(104), a)));
        l.pass(Pfn(104), 2, a, b).unwrap();
        assert_eq!(l.pass(Pfn(104), 2, a, 0), Err((Pfn(104), b)));
        l.pass(Pfn(104), 2, b, 0).unwrap();
        l.pass(Pfn(100), 2, b, 0).unwrap();
        assert_eq!(l.claim(Pfn(160), 3, a), Err((Pfn(164), u64::MAX)), "outside the arena");
        l.claim(Pfn(100), 6, a).unwrap();
    }

    #[test]
    fn stamps_catch_a_write_by_another_owner() {
        let heap = PageHeap::new(&HeapOptions::new(16 << 20)).unwrap();
        let mut b = heap.alloc_block_with(Gfp::KERNEL, Order(2)).unwrap();
        let t = tag(1, 9);
        b.stamp_pages(page_stamp(t));
        assert_eq!(b.check_pages(page_stamp(t)), None);
        // A second owner of the same memory writes its own stamp into page 0 only.
        let mut other = b.alias();
        other.stamp_pages(|i| if i == 0 { [tag(2, 1), 0] } else { page_stamp(t)(i) });
        assert_eq!(b.check_pages(page_stamp(t)), Some((0, [tag(2, 1), 0])));
        // A block laid over at an offset: page 1 of one is page 0 of the other.
        b.stamp_pages(|i| page_stamp(t)(i + 1));
        assert_eq!(b.check_pages(page_stamp(t)).map(|(i, _)| i), Some(0));
        heap.free_block(b).unwrap();
    }

    #[test]
    fn a_clean_run_finds_nothing_and_gives_every_page_back() {
        let r = run(&opts(3, 300), &mut |_, _| {}).unwrap();
        assert_eq!(r.violations, 0, "{:?}", r.samples);
        assert_eq!(r.final_free_pages, r.managed_pages);
        assert!(r.exhaustion_cycles >= 1);
        let c = &r.counts;
        assert!(c.allocs > 0 && c.frees > 0 && c.handoffs > 0 && c.cross_thread_frees > 0);
        assert!(c.frag_allocs > 0 && c.frag_frees > 0 && c.frag_pages > 0);
        // The floors: GFP_ATOMIC stops short of the min watermark's last pages, and
        // __GFP_MEMALLOC takes those too.
        assert!(r.free_at_floor[0] > 0 && r.free_at_floor[1] < r.managed_pages / 10, "{r:?}");
        assert_eq!(r.free_at_exhaustion, [0, 0], "{r:?}");
    }

    #[test]
    fn a_block_handed_to_two_owners_is_caught() {
        let mut o = opts(2, 300);
        o.faults.alias_every = 500;
        let r = run(&o, &mut |_, _| {}).unwrap();
        assert!(r.double_allocations > 0, "{r:?}");
        // The second owner's stamps overwrite the first's, and one of the two frees is
        // refused by the allocator.
        assert!(r.by_kind["stamp_mismatches"] > 0, "{r:?}");
        assert!(r.by_kind["refused_frees"] > 0, "{r:?}");
        assert_eq!(r.violations, r.by_kind.values().sum::<u64>());
        // The allocator itself did nothing wrong: every page is back.
        assert_eq!(r.final_free_pages, r.managed_pages, "{:?}", r.samples);
        assert_eq!(r.by_kind["conservation_failures"], 0, "{:?}", r.samples);
    }

    #[test]
    fn a_worker_that_panics_is_reported_and_the_run_still_ends() {
        let mut o = opts(3, 300);
        o.faults.panic_at = 200;
        let r = run(&o, &mut |_, _| {}).unwrap();
        assert_eq!(r.by_kind["worker_panics"], 1, "{r:?}");
        assert!(r.samples.iter().any(|s| s == "worker 1 panicked: injected"), "{r:?}");
        // What the dead worker held is never freed.
        assert!(r.pages_lost > 0 && r.by_kind["conservation_failures"] > 0, "{r:?}");
    }

    #[test]
    fn a_write_into_a_block_after_handing_it_on_is_caught() {
        let mut o = opts(2, 300);
        o.faults.scribble_every = 50;
        let r = run(&o, &mut |_, _| {}).unwrap();
        assert!(r.by_kind["stamp_mismatches"] > 0, "{r:?}");
        assert_eq!(r.double_allocations, 0);
        assert_eq!(r.by_kind["refused_frees"], 0, "{:?}", r.samples);
        assert_eq!(r.final_free_pages, r.managed_pages);
    }
}

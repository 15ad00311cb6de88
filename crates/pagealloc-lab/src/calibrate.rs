//! The measurements behind `pagealloc calibrate`: what each primitive the model charges costs
//! on this machine, timed on the real library with real threads — the fixed work of the
//! allocator's calls (the fields of [`CostProfile`](crate::model::cost::CostProfile)) and the
//! figures of this machine's memory hierarchy it can measure (load latencies by cache level,
//! a line moving between two cores, a lock handed over, page write rates). Rendering and
//! storing are in `cmd/calibrate.rs`.
//!
//! Every figure is the median of many timed windows, kept with its p10..p90 spread. A window
//! covers at least 16 operations between two clock reads, and the cost of one clock read
//! (measured the same way, as the gap between two back-to-back reads) is taken off it. Each
//! measurement checks that it timed what it meant to: the pageset loop that no zone lock was
//! taken, the ping-pong that its two threads ran on two CPUs, the page writes that the cold
//! pages cost more than the hot ones.

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Barrier, Condvar, Mutex as StdMutex};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use pagealloc::SpinMutex;
use pagealloc::{
    Counter, CpuId, EventSink, Gfp, MemoryMap, NodeId, Order, PageAllocator, Pfn, Policy,
    TraceEvent, Tunables, ZoneIdx, ZoneLimits,
};
use pagealloc_slab::{KmemCache, SlabFlags, SlabObject, SlabStat, SlubConfig, StatSnapshot};
use pagealloc_testkit::rng::Rng;
use serde::Serialize;

/// Operations per timed window: enough that one clock read (~20 ns) is a small part of the
/// window and can be subtracted, few enough that the pageset loop stays below `batch`.
pub const WINDOW: usize = 16;

/// Bytes in a page the model touches.
const PAGE: usize = 4096;

/// How much to measure. Every measurement runs a share of its work in each of `rounds`
/// rounds, one after the other, so each figure's samples come from the whole run: this
/// virtual machine's speed drifts by up to 2x within minutes, and figures taken at different
/// moments would not belong together. The counts below are per round.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Plan {
    /// A short run for tests: figures are rough.
    pub quick: bool,
    /// Rounds.
    pub rounds: usize,
    /// Back-to-back clock-read pairs for the timer overhead.
    pub timer_pairs: usize,
    /// Timed windows of `WINDOW` allocations and `WINDOW` frees on the pageset.
    pub pcp_windows: usize,
    /// Timed windows of `WINDOW` slab object allocations and `WINDOW` frees.
    pub slab_windows: usize,
    /// Timed windows of `WINDOW` uncontended lock+unlock pairs.
    pub lock_windows: usize,
    /// Passes of the zone-lock hold program (every configuration and size once per pass).
    pub hold_passes: usize,
    /// Repetitions of the two-thread handoff measurement.
    pub handoff_reps: usize,
    /// Round trips of the flag-only ping-pong per repetition.
    pub handoff_round_trips: usize,
    /// Timed walks of the lock chain per repetition (as many untimed ones by the partner).
    pub handoff_walks: usize,
    /// Passes over the hot region.
    pub hot_passes: usize,
    /// Passes over the cold region (each after an eviction).
    pub cold_passes: usize,
    /// The cold region's size in LLCs.
    pub cold_llc_multiple: u64,
    /// Timed windows of [`CHASE_WINDOW`] dependent loads per cache level.
    pub chase_windows: usize,
    /// Round trips of the blocking (condition variable) ping-pong, one repetition a round.
    pub wake_round_trips: usize,
    /// The LLC-share sweep runs in every round whose number is a multiple of this.
    pub share_every: usize,
    /// The sweep's largest region, bytes (the LLC sysfs reports, if smaller).
    pub share_max_bytes: u64,
}

impl Plan {
    /// The real calibration (about 10 s on a quiet 2-CPU machine with a 32 MiB LLC, half of
    /// it writing the cold region; 90 s with a 260 MiB one, whose regions are eight times
    /// larger): 128 short rounds, so the samples cover the run evenly.
    pub const FULL: Plan = Plan {
        quick: false,
        rounds: 128,
        timer_pairs: 8_000,
        pcp_windows: 8_000,
        slab_windows: 8_000,
        lock_windows: 2_000,
        hold_passes: 1,
        handoff_reps: 4,
        handoff_round_trips: 1_000,
        handoff_walks: 200,
        hot_passes: 2,
        cold_passes: 1,
        cold_llc_multiple: 8,
        chase_windows: 64,
        wake_round_trips: 50,
        share_every: 16,
        share_max_bytes: u64::MAX,
    };

    /// A smoke run for tests (well under a second in a release build): every step runs and
    /// checks itself.
    pub const QUICK: Plan = Plan {
        quick: true,
        rounds: 2,
        timer_pairs: 2_000,
        pcp_windows: 1_000,
        slab_windows: 1_000,
        lock_windows: 1_000,
        hold_passes: 1,
        handoff_reps: 4,
        handoff_round_trips: 200,
        handoff_walks: 20,
        hot_passes: 2,
        cold_passes: 1,
        cold_llc_multiple: 2,
        chase_windows: 8,
        wake_round_trips: 20,
        share_every: 1,
        share_max_bytes: 64 << 20,
    };
}

// ---------------------------------------------------------------------------------------------
// Statistics

/// Median and spread of a sample.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// The median.
    pub median: f64,
    /// 10th percentile.
    pub p10: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Sample size.
    pub n: usize,
}

impl Summary {
    /// Summarise `xs` (sorted in place). An empty sample gives NaNs.
    pub fn of(xs: &mut [f64]) -> Summary {
        xs.sort_by(f64::total_cmp);
        Summary {
            median: percentile(xs, 0.5),
            p10: percentile(xs, 0.1),
            p90: percentile(xs, 0.9),
            n: xs.len(),
        }
    }

    /// The same figures shifted by `d` (a constant correction).
    pub fn shifted(self, d: f64) -> Summary {
        Summary { median: self.median + d, p10: self.p10 + d, p90: self.p90 + d, n: self.n }
    }
}

/// The `q` quantile of sorted `v`, interpolating between neighbours.
/// How many quantiles of a wake figure a machine file keeps: the 5th, 10th, …, 95th
/// percentiles, enough for the model to draw wakes with the measured spread and its skew,
/// short of the extreme tail a few hundred samples do not pin down.
pub const WAKE_QUANTILES: usize = 19;

/// `n` quantiles of a sorted sample, the i-th (from 1) its i/(n+1) quantile (the form a
/// machine file's `quantiles` take).
pub fn quantiles(sorted: &[f64], n: usize) -> Vec<f64> {
    (1..=n).map(|i| percentile(sorted, i as f64 / (n + 1) as f64)).collect()
}

/// The mean of `v` (sorted in place) between its 10th and 90th percentiles (inclusive): what
/// a clock that reads in steps measures between the steps. Back-to-back reads of a clock
/// that ticks every 10 ns come out as 20 or 30 ns; their median is one of the two, and which
/// one turns on a few per cent of the sample, while the mean of many reads, each landing at a
/// random phase of the tick, is the read's cost. The trim drops preempted outliers.
pub fn trimmed_mean(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let (lo, hi) = (percentile(v, 0.1), percentile(v, 0.9));
    let kept: Vec<f64> = v.iter().copied().filter(|x| (lo..=hi).contains(x)).collect();
    crate::mmtests::amean(&kept)
}

fn percentile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let pos = q * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = (lo + 1).min(v.len() - 1);
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// Least squares `y = a + b·x` with relative residuals (each point weighted by 1/y²):
/// (a, b, R²), R² in the same weighting. Relative, because the model charges the line to
/// holds of every size and most are short: plain residuals would let the few long drains
/// (tens of µs, noisy by whole µs) fix the intercept, which short holds live on. Needs two
/// distinct x.
pub fn linear_fit(points: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    if points.len() < 2 {
        return None;
    }
    let w = |y: f64| 1.0 / (y.abs().max(1.0) * y.abs().max(1.0));
    let sw: f64 = points.iter().map(|p| w(p.1)).sum();
    let mx = points.iter().map(|p| w(p.1) * p.0).sum::<f64>() / sw;
    let my = points.iter().map(|p| w(p.1) * p.1).sum::<f64>() / sw;
    let sxx: f64 = points.iter().map(|p| w(p.1) * (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = points.iter().map(|p| w(p.1) * (p.0 - mx) * (p.1 - my)).sum();
    let syy: f64 = points.iter().map(|p| w(p.1) * (p.1 - my) * (p.1 - my)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let b = sxy / sxx;
    let a = my - b * mx;
    let ss_res: f64 = points.iter().map(|p| w(p.1) * (p.1 - a - b * p.0).powi(2)).sum();
    let r2 = if syy > 0.0 { 1.0 - ss_res / syy } else { 1.0 };
    Some((a, b, r2))
}

/// The bucket of a hold with `ops` list operations: one per value up to 16, then buckets
/// 15 % wide, so long drains (thousands of operations, rare) still form buckets.
pub fn bucket_key(ops: u32) -> u32 {
    if ops <= 16 {
        ops
    } else {
        16 + ((f64::from(ops) / 16.0).ln() / 1.15f64.ln()).floor() as u32 + 1
    }
}

/// (median list ops, median held ns) of every bucket with at least `min_n` holds, in bucket
/// order.
pub fn bucket_medians(holds: &[(u32, f64)], min_n: usize) -> Vec<(f64, f64)> {
    let mut by: std::collections::BTreeMap<u32, (Vec<f64>, Vec<f64>)> = Default::default();
    for &(ops, ns) in holds {
        let e = by.entry(bucket_key(ops)).or_default();
        e.0.push(f64::from(ops));
        e.1.push(ns);
    }
    by.into_values()
        .filter(|(x, _)| x.len() >= min_n)
        .map(|(mut x, mut y)| (Summary::of(&mut x).median, Summary::of(&mut y).median))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The clock

/// Nanoseconds since the clock was made, from `Instant` (CLOCK_MONOTONIC through the vDSO on
/// Linux: no system call).
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    base: Instant,
}

impl Clock {
    /// A clock starting now.
    pub fn new() -> Clock {
        Clock { base: Instant::now() }
    }

    /// Nanoseconds since [`Clock::new`].
    #[inline]
    pub fn ns(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }
}

/// The gaps between two back-to-back reads of `clk`, ns: what one read adds to a window.
pub fn timer_overhead(clk: &Clock, pairs: usize, out: &mut Vec<f64>) {
    for _ in 0..pairs {
        let a = clk.ns();
        let b = clk.ns();
        out.push((b - a) as f64);
    }
}

// ---------------------------------------------------------------------------------------------
// 1. The pageset fast path

/// `windows` timed windows of `alloc` (`WINDOW` calls) then `free` (as many) on `state`, as
/// (count, clock, one clock read in ns); each window's time less the clock read, per call, is
/// pushed to `times` (alloc, free). Returns this round's medians.
fn timed_windows<S>(
    mut state: S,
    (windows, clk, overhead): (usize, &Clock, f64),
    times: (&mut Vec<f64>, &mut Vec<f64>),
    mut alloc: impl FnMut(&mut S) -> Result<()>,
    mut free: impl FnMut(&mut S) -> Result<()>,
) -> Result<(f64, f64)> {
    let (allocs, frees) = times;
    let (a0, f0) = (allocs.len(), frees.len());
    for _ in 0..windows {
        let t0 = clk.ns();
        alloc(&mut state)?;
        let t1 = clk.ns();
        free(&mut state)?;
        let t2 = clk.ns();
        allocs.push(((t1 - t0) as f64 - overhead) / WINDOW as f64);
        frees.push(((t2 - t1) as f64 - overhead) / WINDOW as f64);
    }
    Ok((
        Summary::of(&mut allocs[a0..].to_vec()).median,
        Summary::of(&mut frees[f0..].to_vec()).median,
    ))
}

/// One zone of `mib` MiB on one node with `cpus` CPUs (no DMA zones, so every hold is on
/// the one zone).
fn normal_only_map(mib: u64, cpus: u32) -> Result<MemoryMap> {
    let mut map = MemoryMap::new();
    map.with_zone_limits(ZoneLimits::NORMAL_ONLY);
    map.add_range(NodeId(0), 0..mib << 20)?.set_cpus(NodeId(0), cpus)?;
    Ok(map)
}

/// `pcp_alloc_ns` and `pcp_free_ns`, with the regime they were measured in.
#[derive(Clone, Debug, Serialize)]
pub struct PcpFigures {
    /// ns per order-0 allocation served by the pageset.
    pub alloc: Summary,
    /// ns per order-0 free that ends on the pageset.
    pub free: Summary,
    /// The pageset's batch and high during the timed loop.
    pub batch: i32,
    /// See `batch`.
    pub high: i32,
    /// Zone-lock acquisitions during the timed loop (checked to be 0).
    pub zone_locks_taken: u64,
}

/// Times rounds of `WINDOW` order-0 allocations then `WINDOW` frees on CPU 0 of a 1 GiB
/// zone, after a warm-up that stocks the pageset: every call is served by the pageset
/// (checked on the counters), so the figures are the calls' cost outside any zone lock.
#[derive(Debug)]
pub struct PcpBench {
    pa: PageAllocator,
    pfns: [Pfn; WINDOW],
    /// Counters after the warm-up.
    before: pagealloc::VmEvents,
    alloc: Vec<f64>,
    free: Vec<f64>,
}

impl PcpBench {
    /// Build the allocator and warm its pageset up.
    pub fn new() -> Result<PcpBench> {
        let pa =
            PageAllocator::new(normal_only_map(1024, 2)?, Tunables::default(), Policy::modern())?;
        let cpu = pa.cpu(CpuId(0)).context("CPU 0")?;
        let mut pfns = [Pfn(0); WINDOW];
        // The first round refills the pageset from the zone; after it the count cycles
        // between `c` and `c - WINDOW`, far from empty and from high.
        for _ in 0..256 {
            for p in pfns.iter_mut() {
                *p = pa.alloc_pages(cpu, Gfp::KERNEL, Order(0))?;
            }
            for &p in &pfns {
                pa.free_pages(cpu, p, Order(0))?;
            }
        }
        let before = pa.vm_events();
        Ok(PcpBench { pa, pfns, before, alloc: Vec::new(), free: Vec::new() })
    }

    /// `windows` timed windows; returns this round's median alloc and free.
    pub fn round(&mut self, windows: usize, clk: &Clock, overhead: f64) -> Result<(f64, f64)> {
        let cpu = self.pa.cpu(CpuId(0)).context("CPU 0")?;
        timed_windows(
            (&self.pa, &mut self.pfns),
            (windows, clk, overhead),
            (&mut self.alloc, &mut self.free),
            |(pa, pfns)| {
                for p in pfns.iter_mut() {
                    *p = pa.alloc_pages(cpu, Gfp::KERNEL, Order(0))?;
                }
                Ok(())
            },
            |(pa, pfns)| {
                for &p in pfns.iter() {
                    pa.free_pages(cpu, p, Order(0))?;
                }
                Ok(())
            },
        )
    }

    /// Check that every timed call stayed on the pageset and summarise.
    pub fn finish(mut self) -> Result<PcpFigures> {
        let d = self.pa.vm_events().since(&self.before);
        let calls = (self.alloc.len() * WINDOW) as u64;
        let zone_locks_taken = d.get(Counter::ZoneLockAcquire);
        if zone_locks_taken != 0 {
            bail!(
                "pageset timing: the zone lock was taken {zone_locks_taken} times in the timed \
                 loop, so it did not time the pageset alone"
            );
        }
        if d.get(Counter::PcpAlloc) != calls || d.get(Counter::PcpFree) != calls {
            bail!(
                "pageset timing: {} of {calls} allocations and {} of {calls} frees went \
                 through the pageset",
                d.get(Counter::PcpAlloc),
                d.get(Counter::PcpFree)
            );
        }
        let snap = self.pa.zones()[0].pcp(CpuId(0)).context("CPU 0's pageset")?;
        Ok(PcpFigures {
            alloc: Summary::of(&mut self.alloc),
            free: Summary::of(&mut self.free),
            batch: snap.batch,
            high: snap.high,
            zone_locks_taken,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// 1b. The slab fast path

/// Object size of the slab timing's cache: `vm_area_struct`'s (192 bytes, 21 to an order-0
/// slab), so a window of [`WINDOW`] objects stays inside one active slab.
pub const SLAB_BENCH_SIZE: u32 = 192;

/// `slab_alloc_ns` and `slab_free_ns`, with the check that they timed the fast path.
#[derive(Clone, Debug, Serialize)]
pub struct SlabFigures {
    /// ns per object allocation served by the CPU's active slab.
    pub alloc: Summary,
    /// ns per object free into the CPU's active slab.
    pub free: Summary,
    /// Objects per slab of the timed cache.
    pub objects_per_slab: u32,
    /// Slabs taken from or given to the page allocator during the timed loop (checked to
    /// be 0).
    pub slab_page_calls: u64,
}

/// Times rounds of `WINDOW` object allocations then `WINDOW` frees on CPU 0 from a warm
/// [`SLAB_BENCH_SIZE`]-byte cache: every call is the slab layer's fast path (checked on
/// SLUB's counters), so the figures are its fixed work with its lines hot — no page
/// allocator call is timed.
#[derive(Debug)]
pub struct SlabBench<'a> {
    cache: KmemCache<'a>,
    objs: Vec<SlabObject>,
    before: StatSnapshot,
    alloc: Vec<f64>,
    free: Vec<f64>,
}

impl<'a> SlabBench<'a> {
    /// The page allocator the cache sits on (the caller keeps it: the cache borrows it).
    pub fn allocator() -> Result<PageAllocator> {
        Ok(PageAllocator::new(normal_only_map(64, 2)?, Tunables::default(), Policy::modern())?)
    }

    /// The cache, warmed up: its active slab on CPU 0 holds every object free.
    pub fn new(pa: &'a PageAllocator) -> Result<SlabBench<'a>> {
        let cache = KmemCache::new(
            pa,
            "vm_area_struct",
            SLAB_BENCH_SIZE,
            0,
            SlabFlags::HWCACHE_ALIGN,
            &SlubConfig::default(),
        )
        .map_err(|e| anyhow!("slab timing cache: {e}"))?;
        if (cache.oo().objects as usize) < WINDOW {
            bail!("slab timing: {} objects per slab, fewer than a window", cache.oo().objects);
        }
        let mut bench = SlabBench {
            cache,
            objs: Vec::with_capacity(WINDOW),
            before: StatSnapshot::default(),
            alloc: Vec::new(),
            free: Vec::new(),
        };
        let cpu = pa.cpu(CpuId(0)).context("CPU 0")?;
        for _ in 0..256 {
            bench.window(cpu)?;
        }
        bench.before = bench.cache.stats();
        Ok(bench)
    }

    /// One untimed window.
    fn window(&mut self, cpu: pagealloc::Cpu) -> Result<()> {
        for _ in 0..WINDOW {
            let o = self.cache.alloc(cpu, Gfp::KERNEL).map_err(|e| anyhow!("{e}"))?;
            self.objs.push(o);
        }
        for o in self.objs.drain(..) {
            self.cache.free(cpu, o).map_err(|e| anyhow!("{e}"))?;
        }
        Ok(())
    }

    /// `windows` timed windows; returns this round's median alloc and free.
    pub fn round(&mut self, windows: usize, clk: &Clock, overhead: f64) -> Result<(f64, f64)> {
        let cpu = self.cache.page_allocator().cpu(CpuId(0)).context("CPU 0")?;
        timed_windows(
            (&self.cache, &mut self.objs),
            (windows, clk, overhead),
            (&mut self.alloc, &mut self.free),
            |(cache, objs)| {
                for _ in 0..WINDOW {
                    objs.push(cache.alloc(cpu, Gfp::KERNEL).map_err(|e| anyhow!("{e}"))?);
                }
                Ok(())
            },
            |(cache, objs)| {
                for o in objs.drain(..) {
                    cache.free(cpu, o).map_err(|e| anyhow!("{e}"))?;
                }
                Ok(())
            },
        )
    }

    /// Check that every timed call took the fast path and no slab came or went; summarise.
    pub fn finish(mut self) -> Result<SlabFigures> {
        let d = |s: SlabStat| self.cache.stats().get(s) - self.before.get(s);
        let calls = (self.alloc.len() * WINDOW) as u64;
        let slab_page_calls = d(SlabStat::AllocSlab) + d(SlabStat::FreeSlab);
        if slab_page_calls != 0 {
            bail!("slab timing: {slab_page_calls} slabs came or went in the timed loop");
        }
        if d(SlabStat::AllocFastpath) != calls || d(SlabStat::FreeFastpath) != calls {
            bail!(
                "slab timing: {} of {calls} allocations and {} of {calls} frees took the fast \
                 path",
                d(SlabStat::AllocFastpath),
                d(SlabStat::FreeFastpath)
            );
        }
        Ok(SlabFigures {
            alloc: Summary::of(&mut self.alloc),
            free: Summary::of(&mut self.free),
            objects_per_slab: self.cache.oo().objects,
            slab_page_calls,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// 2. The zone lock

/// One uncontended lock+unlock of the project's spin lock (`pagealloc::SpinMutex`), ns:
/// the part of a zone-lock hold the event hooks cannot see (they run after the lock is
/// taken and before it is released).
pub fn spin_lock_uncontended(windows: usize, clk: &Clock, overhead: f64, out: &mut Vec<f64>) {
    let m = SpinMutex::new(0u64);
    for _ in 0..windows {
        let t0 = clk.ns();
        for _ in 0..WINDOW {
            *black_box(&m).lock() += 1;
        }
        let t1 = clk.ns();
        out.push(((t1 - t0) as f64 - overhead) / WINDOW as f64);
    }
    black_box(*m.lock());
}

/// What a zone-lock hold was for (the driver says before each call).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HoldKind {
    /// An order-0 allocation that refilled the pageset (`rmqueue_bulk`).
    Refill,
    /// An order-0 free that took the pageset to high and drained part of it.
    HighDrain,
    /// `drain_all_pages` emptying a pageset.
    Drain,
    /// An order-4..6 allocation straight from the buddy lists.
    BuddyAlloc,
    /// An order-4..6 free straight to the buddy lists.
    BuddyFree,
}

impl HoldKind {
    const ALL: [HoldKind; 5] = [
        HoldKind::Refill,
        HoldKind::HighDrain,
        HoldKind::Drain,
        HoldKind::BuddyAlloc,
        HoldKind::BuddyFree,
    ];

    /// Its name in the output.
    pub fn name(self) -> &'static str {
        match self {
            HoldKind::Refill => "refill",
            HoldKind::HighDrain => "high-drain",
            HoldKind::Drain => "drain",
            HoldKind::BuddyAlloc => "buddy-alloc",
            HoldKind::BuddyFree => "buddy-free",
        }
    }
}

/// One timed hold.
#[derive(Clone, Copy, Debug)]
struct Hold {
    list_ops: u32,
    /// From the clock read in `zone_lock_taken` to the one in `zone_lock_released`, ns.
    held_ns: u64,
    kind: u8,
    /// The pass of the program.
    round: u32,
}

/// The event sink that times every zone-lock hold. The driver is one thread; the atomics
/// are there because a sink must be `Sync`.
#[derive(Debug)]
pub struct HoldTimer {
    clk: Clock,
    /// Clock at the last `zone_lock_taken`.
    since: AtomicU64,
    kind: AtomicU8,
    round: AtomicU32,
    holds: StdMutex<Vec<Hold>>,
}

impl EventSink for HoldTimer {
    #[inline]
    fn record(&self, _event: &TraceEvent) {}

    /// The clock read is the last thing the hook does, so the hold's time starts after it.
    #[inline]
    fn zone_lock_taken(&self, _cpu: CpuId, _zone: ZoneIdx) {
        self.since.store(self.clk.ns(), Ordering::Relaxed);
    }

    /// The clock read comes first; storing the sample (outside the measured span) after it.
    #[inline]
    fn zone_lock_released(&self, _cpu: CpuId, _zone: ZoneIdx, list_ops: u32) {
        let end = self.clk.ns();
        let hold = Hold {
            list_ops,
            held_ns: end.saturating_sub(self.since.load(Ordering::Relaxed)),
            kind: self.kind.load(Ordering::Relaxed),
            round: self.round.load(Ordering::Relaxed),
        };
        self.holds.lock().expect("one thread drives the allocator").push(hold);
    }
}

/// A zone and tunables the hold program runs on: different `batch` (from the zone's size),
/// `high` (from the fraction) and chunk sizes (from the scale) give holds of many sizes.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct HoldConfig {
    /// Zone size, MiB.
    pub mib: u64,
    /// `percpu_pagelist_high_fraction` (0: auto-tuned high).
    pub high_fraction: u32,
    /// `pcp_batch_scale_max`.
    pub scale_max: u8,
}

/// The configurations, chosen for their batch: 3 (64 MiB), 15 (256 MiB), 63 (1 GiB); a
/// fixed large high (fraction 8); refills and drains of one batch each (scale 0).
///
/// Small zones on purpose: their frames' metadata (16 bytes a frame, 128 KiB for 32 MiB) stays
/// in the private cache, so the fit gives the instructions of a list operation with its lines
/// hot. What the lines cost beyond that is the machine's memory hierarchy, priced apart.
pub const HOLD_CONFIGS: [HoldConfig; 5] = [
    HoldConfig { mib: 16, high_fraction: 0, scale_max: 5 },
    HoldConfig { mib: 24, high_fraction: 0, scale_max: 5 },
    HoldConfig { mib: 32, high_fraction: 0, scale_max: 5 },
    HoldConfig { mib: 32, high_fraction: 8, scale_max: 5 },
    HoldConfig { mib: 32, high_fraction: 0, scale_max: 0 },
];

/// Order-0 pages allocated and freed per step of the hold program (capped at a quarter of
/// the zone).
const HOLD_SIZES: [usize; 10] = [1, 3, 8, 20, 50, 120, 300, 700, 1500, 3000];

/// Order-4..6 blocks allocated then freed per step.
const BUDDY_BLOCKS: usize = 32;

/// The fit of hold time on list operations.
#[derive(Clone, Debug, Serialize)]
pub struct HoldFit {
    /// Intercept of the pooled fit, ns: the hold's fixed part as the hooks see it, with the
    /// clock read inside the hold still in.
    pub intercept_ns: f64,
    /// Slope, ns per list operation.
    pub per_op_ns: f64,
    /// R² of the fit over the bucket medians.
    pub r2: f64,
    /// Buckets (of list-op counts) in the fit.
    pub buckets: usize,
    /// Holds timed.
    pub holds: usize,
    /// The largest hold, in list operations.
    pub max_list_ops: u32,
    /// Intercepts of one fit per pass of the program (spread).
    pub round_intercepts: Summary,
    /// Slopes of one fit per pass of the program (spread).
    pub round_slopes: Summary,
    /// A fit per kind of hold (kind, holds, intercept, slope, R²), for the reader: the model
    /// charges one line for all of them.
    pub by_kind: Vec<KindFit>,
    /// The (list ops, held ns) bucket medians of the pooled fit.
    pub points: Vec<(f64, f64)>,
}

/// A fit over one kind of hold.
#[derive(Clone, Debug, Serialize)]
pub struct KindFit {
    /// The kind.
    pub kind: HoldKind,
    /// Holds of this kind.
    pub holds: usize,
    /// Least-squares intercept, ns (`None` if the kind's holds all had one size).
    pub intercept_ns: Option<f64>,
    /// Slope, ns per list operation.
    pub per_op_ns: Option<f64>,
    /// R².
    pub r2: Option<f64>,
    /// Median list operations per hold.
    pub median_list_ops: f64,
}

/// Drives holds of many sizes through the real allocator with a timing sink; the fit of
/// held_ns = a + b·list_ops on the medians per list-op bucket is made at the end.
#[derive(Debug)]
pub struct HoldBench {
    allocators: Vec<(HoldConfig, PageAllocator<HoldTimer>)>,
    rng: Rng,
    pfns: Vec<Pfn>,
    blocks: Vec<(Pfn, Order)>,
    /// Passes run so far (each hold carries the number of its pass).
    passes: u32,
}

impl HoldBench {
    /// Build one allocator per configuration, with every frame free.
    pub fn new(clk: &Clock) -> Result<HoldBench> {
        let mut allocators = Vec::new();
        for c in HOLD_CONFIGS {
            let t = Tunables::default().with(|t| {
                t.percpu_pagelist_high_fraction = c.high_fraction;
                t.pcp_batch_scale_max = c.scale_max;
            });
            let sink = HoldTimer {
                clk: *clk,
                since: AtomicU64::new(0),
                kind: AtomicU8::new(0),
                round: AtomicU32::new(0),
                holds: StdMutex::new(Vec::with_capacity(1 << 16)),
            };
            let pa =
                PageAllocator::with_events(normal_only_map(c.mib, 2)?, t, Policy::modern(), sink)?;
            // The holds that put the memory on the free lists are not part of the program.
            pa.events().holds.lock().expect("not poisoned").clear();
            allocators.push((c, pa));
        }
        Ok(HoldBench {
            allocators,
            rng: Rng::new(0xca1b_0a7e),
            pfns: Vec::with_capacity(4096),
            blocks: Vec::with_capacity(BUDDY_BLOCKS),
            passes: 0,
        })
    }

    /// `passes` passes of the program: on every configuration, for every size n, allocate n
    /// order-0 pages (refills), free them in random order (drains at high), drain every
    /// pageset, then allocate and free `BUDDY_BLOCKS` order-4..6 blocks (straight to the
    /// buddy lists).
    pub fn round(&mut self, passes: usize) -> Result<()> {
        let HoldBench { allocators, rng, pfns, blocks, .. } = self;
        for _ in 0..passes {
            for (c, pa) in allocators.iter() {
                let cpu = pa.cpu(CpuId(0)).context("CPU 0")?;
                let ev = pa.events();
                ev.round.store(self.passes, Ordering::Relaxed);
                let kind = |k: HoldKind| ev.kind.store(k as u8, Ordering::Relaxed);
                let cap = (c.mib << 20) as usize / PAGE / 4;
                for &n in HOLD_SIZES.iter().filter(|&&n| n <= cap) {
                    kind(HoldKind::Refill);
                    for _ in 0..n {
                        pfns.push(pa.alloc_pages(cpu, Gfp::KERNEL, Order(0))?);
                    }
                    shuffle(pfns, rng);
                    kind(HoldKind::HighDrain);
                    for p in pfns.drain(..) {
                        pa.free_pages(cpu, p, Order(0))?;
                    }
                    kind(HoldKind::Drain);
                    pa.drain_all_pages(cpu, None);

                    kind(HoldKind::BuddyAlloc);
                    for _ in 0..BUDDY_BLOCKS {
                        let order = Order(4 + rng.below(3) as u8);
                        blocks.push((pa.alloc_pages(cpu, Gfp::KERNEL, order)?, order));
                    }
                    shuffle(blocks, rng);
                    kind(HoldKind::BuddyFree);
                    for (p, o) in blocks.drain(..) {
                        pa.free_pages(cpu, p, o)?;
                    }
                }
            }
            self.passes += 1;
        }
        Ok(())
    }

    /// Check that every page came back and fit.
    pub fn finish(self, quick: bool) -> Result<HoldFit> {
        let mut holds = Vec::new();
        for (_, pa) in &self.allocators {
            if pa.nr_free_pages() != pa.managed_pages() {
                bail!("zone-lock program: pages left allocated after every block was freed");
            }
            holds.extend(pa.events().holds.lock().expect("not poisoned").iter().copied());
        }
        fit_holds(quick, self.passes, &holds)
    }
}

/// (list ops, held ns) of the holds of `kind` in `round` (`None`: every round).
fn samples(holds: &[Hold], kind: HoldKind, round: Option<u32>) -> Vec<(u32, f64)> {
    holds
        .iter()
        .filter(|h| h.kind == kind as u8 && round.is_none_or(|r| h.round == r))
        .map(|h| (h.list_ops, h.held_ns as f64))
        .collect()
}

/// Bucket medians per kind of hold, pooled: a refill and a drain of the same length cost
/// differently, and a median over a bucket mixing them would follow whichever kind happens
/// to be the majority there.
fn pooled_points(holds: &[Hold], round: Option<u32>, min_n: usize) -> Vec<(f64, f64)> {
    HoldKind::ALL.iter().flat_map(|&k| bucket_medians(&samples(holds, k, round), min_n)).collect()
}

fn fit_holds(quick: bool, passes: u32, holds: &[Hold]) -> Result<HoldFit> {
    let min_n = if quick { 2 } else { 5 };
    let points = pooled_points(holds, None, min_n);
    let Some((a, b, r2)) = linear_fit(&points) else {
        bail!("zone-lock fit: fewer than two hold sizes with {min_n} holds each");
    };
    let (mut ra, mut rb) = (Vec::new(), Vec::new());
    for pass in 0..passes {
        if let Some((a, b, _)) = linear_fit(&pooled_points(holds, Some(pass), 1)) {
            ra.push(a);
            rb.push(b);
        }
    }
    let by_kind = HoldKind::ALL
        .iter()
        .map(|&kind| {
            let these = samples(holds, kind, None);
            let fit = linear_fit(&bucket_medians(&these, min_n));
            let mut ops: Vec<f64> = these.iter().map(|h| f64::from(h.0)).collect();
            KindFit {
                kind,
                holds: these.len(),
                intercept_ns: fit.map(|f| f.0),
                per_op_ns: fit.map(|f| f.1),
                r2: fit.map(|f| f.2),
                median_list_ops: Summary::of(&mut ops).median,
            }
        })
        .collect();
    Ok(HoldFit {
        intercept_ns: a,
        per_op_ns: b,
        r2,
        buckets: points.len(),
        holds: holds.len(),
        max_list_ops: holds.iter().map(|h| h.list_ops).max().unwrap_or(0),
        round_intercepts: Summary::of(&mut ra),
        round_slopes: Summary::of(&mut rb),
        by_kind,
        points,
    })
}

/// Fisher–Yates with the testkit's generator.
fn shuffle<T>(v: &mut [T], rng: &mut Rng) {
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Lock handoff

/// Keeps a value on its own pair of cache lines (the adjacent-line prefetcher fetches lines
/// in 128-byte pairs), so the turn flag and the handshake share no transfer.
#[derive(Debug)]
#[repr(align(128))]
struct Padded<T>(T);

/// Keeps a value on its own 4 KiB page: hardware prefetchers stop at page boundaries, so
/// none brings the next lock's line over early.
#[derive(Debug)]
#[repr(align(4096))]
struct OwnPage<T>(T);

/// The handoff figures, ns per lock acquisition.
#[derive(Clone, Debug, Serialize)]
pub struct HandoffFigures {
    /// Per acquisition of a lock the other thread released last, less the uncontended
    /// lock+unlock: the lock's cache line coming over.
    pub handoff: Summary,
    /// Per acquisition of a lock the other thread released last, as timed.
    pub acquisition: Summary,
    /// Half a round trip of a flag-only ping-pong (the usual core-to-core latency test), for
    /// comparison: one line's trip from one core to the other.
    pub flag_one_way: Summary,
    /// Repetitions kept (both threads on different CPUs before and after).
    pub reps_kept: usize,
    /// Repetitions in which the two threads shared a CPU (dropped unless `unchecked`).
    pub reps_same_cpu: usize,
    /// Quick runs only: no repetition ran on two CPUs throughout, so all were kept.
    pub unchecked: bool,
    /// False: the lab has no pinning; the kept repetitions were checked to run on two CPUs.
    pub pinned: bool,
}

/// The CPU the calling thread last ran on (`/proc/thread-self/stat`, field 39), if readable.
pub fn current_cpu() -> Option<u32> {
    parse_stat_cpu(&std::fs::read_to_string("/proc/thread-self/stat").ok()?)
}

/// Field 39 (`processor`) of a `/proc/<pid>/stat` line. The command name (field 2) may hold
/// spaces and parentheses, so counting starts after its last `)`.
fn parse_stat_cpu(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // Fields after the name start at 3 (state).
    rest.split_whitespace().nth(39 - 3)?.parse().ok()
}

/// Wait until `turn` is `me`: spin, and yield every 1024 spins (tens of µs, a hundred
/// times a line transfer) so a partner sharing this CPU can run: those repetitions are
/// dropped, but must end soon.
#[inline]
fn wait_turn(turn: &AtomicU32, me: u32) {
    let mut spins = 0u32;
    while turn.load(Ordering::Acquire) != me {
        spins = spins.wrapping_add(1);
        if spins % (1 << 10) == 0 {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

/// `trips` turns of thread `me` (0 or 1) of the flag-only ping-pong.
fn ping_pong(me: u32, turn: &AtomicU32, trips: usize) {
    for _ in 0..trips {
        wait_turn(turn, me);
        turn.store(1 - me, Ordering::Release);
    }
}

/// The timing thread's start of repetition `rep` of a two-thread measurement: the flag set
/// to its turn while nobody reads it (the partner is at the barrier or on its way), then the
/// barrier, then a wait until the partner is awake (a barrier's wake-up takes microseconds,
/// which no timed window should hold).
fn start_rep(turn: &AtomicU32, barrier: &Barrier, ready: &AtomicU32, rep: u32) {
    turn.store(0, Ordering::Relaxed);
    barrier.wait();
    while ready.load(Ordering::Acquire) != rep {
        std::hint::spin_loop();
    }
}

/// The partner's side of [`start_rep`] and [`timed_ping_pong`] in repetition `rep`: meet the
/// timing thread at the barrier, say it is awake, then answer `trips` round trips.
fn partner_rep(turn: &AtomicU32, barrier: &Barrier, ready: &AtomicU32, rep: u32, trips: usize) {
    barrier.wait();
    ready.store(rep, Ordering::Release);
    ping_pong(1, turn, trips);
}

/// The timing thread's side of `trips` round trips of the flag-only ping-pong, timed: ns one
/// way. It waits for the partner's last half round trip too, so the window holds 2·trips.
fn timed_ping_pong(clk: &Clock, turn: &AtomicU32, trips: usize) -> f64 {
    let t0 = clk.ns();
    ping_pong(0, turn, trips);
    wait_turn(turn, 0);
    let t1 = clk.ns();
    (t1 - t0) as f64 / (2 * trips) as f64
}

/// This host's core-to-core latency as it is now: half a round trip of the flag-only
/// ping-pong (the one [`HandoffBench`] times for `c2c_same_llc_ns`) between two fresh
/// threads, the median over `windows` windows of `trips` round trips each, counting only the
/// windows in which the two threads ran on different CPUs before and after; `None` when none
/// did, or the host has one CPU. At 32 windows of 128 round trips about 2 ms with the CPUs
/// close and 3.5 ms with them apart on the lab's VM (tens of ms when a thread waits for a CPU).
///
/// A virtual machine's CPUs are the host's threads, and the host may move them: on the lab's
/// VM this figure is about 26 ns for hours and then, for seconds to minutes, about 210 — its
/// two CPUs then sit on cores that share no cache, and every line one writes and the other
/// reads crosses between them (docs/performance.md, "Where the slow spells come from").
/// `pagealloc validate` takes it around every real run to tell such runs apart.
pub fn core_to_core_ns(windows: usize, trips: usize) -> Option<f64> {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 || windows == 0 {
        return None;
    }
    let clk = Clock::new();
    let turn = Padded(AtomicU32::new(0));
    // The window the partner has started: the clock starts once it is awake.
    let ready = Padded(AtomicU32::new(u32::MAX));
    let barrier = Barrier::new(2);
    let trips = trips.max(1);
    let (mine, theirs) = std::thread::scope(|s| {
        let partner = s.spawn(|| {
            let mut cpus = Vec::with_capacity(windows);
            for w in 0..windows as u32 {
                let before = current_cpu();
                partner_rep(&turn.0, &barrier, &ready.0, w, trips);
                cpus.push([before, current_cpu()]);
            }
            cpus
        });
        let mut mine = Vec::with_capacity(windows);
        for w in 0..windows as u32 {
            let before = current_cpu();
            start_rep(&turn.0, &barrier, &ready.0, w);
            mine.push((timed_ping_pong(&clk, &turn.0, trips), [before, current_cpu()]));
        }
        (mine, partner.join().expect("core-to-core partner panicked"))
    });
    let mut apart: Vec<f64> = mine
        .iter()
        .zip(&theirs)
        .filter(|((_, a), b)| on_two_cpus(*a, **b))
        .map(|((ns, _), _)| *ns)
        .collect();
    (!apart.is_empty()).then(|| Summary::of(&mut apart).median)
}

/// [`core_to_core_ns`] as the lab takes it around a run (`validate`, `run --runner real`,
/// `bench`'s two-thread patterns): 32 windows of 128 round trips, about 2 ms with the CPUs
/// close and 3.5 ms with them apart on the lab's VM.
pub fn core_to_core_probe() -> Option<f64> {
    core_to_core_ns(32, 128)
}

/// Take and release every lock of the chain once, in chain order: each lock holds the
/// index of the next, so each acquisition's address depends on the previous one's data and
/// no two line transfers overlap (one zone-lock handoff is one transfer, not a stream).
#[inline]
fn walk_chain(locks: &[OwnPage<SpinMutex<u32>>]) -> usize {
    let mut i = 0;
    for _ in 0..locks.len() {
        i = *locks[i].0.lock() as usize;
    }
    i
}

/// One repetition of the handoff measurement: (flag one-way ns, walk samples, the timing
/// thread's CPUs before/after, the partner's).
type HandoffRep = (f64, Vec<f64>, [Option<u32>; 2], [Option<u32>; 2]);

/// Two threads take turns (a flag) at walking a chain of `WINDOW` spin locks, each on its
/// own page; the thread under test times its walks, so every acquisition it times is of a
/// lock the other thread released last. Per acquisition, less the uncontended lock+unlock,
/// is the lock's cache line coming over from the other core. Each repetition also times a
/// flag-only ping-pong for comparison. Threads are not pinned (the lab has no pinning):
/// repetitions in which both ran on one CPU are dropped.
#[derive(Debug)]
pub struct HandoffBench {
    locks: Vec<OwnPage<SpinMutex<u32>>>,
    reps: Vec<HandoffRep>,
}

impl HandoffBench {
    /// The chain of locks; fails on a machine with one CPU.
    pub fn new() -> Result<HandoffBench> {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cpus < 2 {
            bail!("lock_handoff_ns needs two CPUs; this machine has one");
        }
        let mut order: Vec<u32> = (0..WINDOW as u32).collect();
        shuffle(&mut order, &mut Rng::new(0x10c4));
        // One cycle through every lock: lock order[k] holds order[k + 1].
        let mut next = [0u32; WINDOW];
        for k in 0..WINDOW {
            next[order[k] as usize] = order[(k + 1) % WINDOW];
        }
        let locks = next.iter().map(|&n| OwnPage(SpinMutex::new(n))).collect();
        Ok(HandoffBench { locks, reps: Vec::new() })
    }

    /// `plan.handoff_reps` repetitions with a partner thread; returns this round's median
    /// acquisition (over the repetitions on two CPUs, NaN if none).
    pub fn round(&mut self, plan: &Plan, clk: &Clock, overhead: f64) -> f64 {
        let locks = &self.locks[..];
        let turn = Padded(AtomicU32::new(0));
        // The repetition the partner has started: the timing thread starts its clock only
        // once the partner is awake (a barrier's wake-up takes microseconds).
        let ready = Padded(AtomicU32::new(u32::MAX));
        let barrier = Barrier::new(2);
        let (reps, trips, walks) =
            (plan.handoff_reps, plan.handoff_round_trips, plan.handoff_walks);
        let out: Vec<HandoffRep> = std::thread::scope(|s| {
            let partner = s.spawn(|| {
                let mut cpus = Vec::with_capacity(reps);
                for rep in 0..reps as u32 {
                    let before = current_cpu();
                    partner_rep(&turn.0, &barrier, &ready.0, rep, trips);
                    for _ in 0..walks {
                        wait_turn(&turn.0, 1);
                        black_box(walk_chain(locks));
                        turn.0.store(0, Ordering::Release);
                    }
                    cpus.push([before, current_cpu()]);
                }
                cpus
            });
            let mut mine = Vec::with_capacity(reps);
            for rep in 0..reps as u32 {
                let before = current_cpu();
                start_rep(&turn.0, &barrier, &ready.0, rep);
                let flag = timed_ping_pong(clk, &turn.0, trips);
                // The partner walks first, so every timed walk finds the locks in its cache.
                turn.0.store(1, Ordering::Release);
                let mut samples = Vec::with_capacity(walks);
                for _ in 0..walks {
                    wait_turn(&turn.0, 0);
                    let t0 = clk.ns();
                    black_box(walk_chain(locks));
                    let t1 = clk.ns();
                    turn.0.store(1, Ordering::Release);
                    samples.push(((t1 - t0) as f64 - overhead) / WINDOW as f64);
                }
                mine.push((flag, samples, [before, current_cpu()]));
            }
            let theirs = partner.join().expect("handoff partner panicked");
            mine.into_iter().zip(theirs).map(|((f, w, a), b)| (f, w, a, b)).collect()
        });
        let mut this: Vec<f64> =
            out.iter().filter(|r| apart(r)).flat_map(|r| r.1.iter().copied()).collect();
        self.reps.extend(out);
        Summary::of(&mut this).median
    }

    /// Drop the repetitions run on one CPU and summarise; `uncontended` is the lock+unlock
    /// taken off each acquisition.
    pub fn finish(self, quick: bool, uncontended: f64) -> Result<HandoffFigures> {
        let kept = Kept::of(&self.reps, apart, quick, "lock handoff")?;
        let (mut flag, mut acq) = (Vec::new(), Vec::new());
        for r in &kept.reps {
            flag.push(r.0);
            acq.extend_from_slice(&r.1);
        }
        let acquisition = Summary::of(&mut acq);
        Ok(HandoffFigures {
            handoff: acquisition.shifted(-uncontended),
            acquisition,
            flag_one_way: Summary::of(&mut flag),
            reps_kept: kept.reps.len(),
            reps_same_cpu: kept.same_cpu,
            unchecked: kept.unchecked,
            pinned: false,
        })
    }
}

/// The repetitions of a two-thread measurement that count: those whose two threads ran on
/// different CPUs before and after. A quick run on a busy machine may find none; it then
/// keeps them all and says so (the medians still shed the windows that waited for a time
/// slice). A real calibration refuses.
struct Kept<'r, R> {
    reps: Vec<&'r R>,
    /// Repetitions in which the two threads shared a CPU.
    same_cpu: usize,
    /// Every repetition kept, none having run on two CPUs throughout (quick runs only).
    unchecked: bool,
}

impl<'r, R> Kept<'r, R> {
    fn of(reps: &'r [R], apart: impl Fn(&R) -> bool, quick: bool, what: &str) -> Result<Self> {
        let same_cpu = reps.iter().filter(|r| !apart(r)).count();
        let unchecked = same_cpu == reps.len();
        if unchecked && !quick {
            bail!(
                "{what}: in every one of {} repetitions the two threads shared a CPU (or \
                 /proc/thread-self/stat was unreadable); the machine is too busy",
                reps.len()
            );
        }
        let reps = reps.iter().filter(|r| unchecked || apart(r)).collect();
        Ok(Kept { reps, same_cpu, unchecked })
    }
}

/// Were the two threads of a handoff repetition on different CPUs before and after it?
fn apart(r: &HandoffRep) -> bool {
    on_two_cpus(r.2, r.3)
}

/// A two-thread repetition's median sample for its round's progress line: NaN unless its
/// two threads ran `apart` (on two CPUs before and after it), as the kept repetitions do.
fn apart_median(samples: &[f64], apart: bool) -> f64 {
    if apart {
        Summary::of(&mut samples.to_vec()).median
    } else {
        f64::NAN
    }
}

/// Two threads' CPUs before and after a repetition: on different CPUs at both times?
fn on_two_cpus(mine: [Option<u32>; 2], theirs: [Option<u32>; 2]) -> bool {
    (0..2).all(|i| matches!((mine[i], theirs[i]), (Some(x), Some(y)) if x != y))
}

// ---------------------------------------------------------------------------------------------
// Waking a blocked thread

/// Waking a thread blocked on a condition variable, ns one way.
#[derive(Clone, Debug, Serialize)]
pub struct WakeFigures {
    /// Half of each round trip of a blocking ping-pong: from one thread's notify to the
    /// other's running, its own notify back included.
    pub one_way: Summary,
    /// The notify itself, as the waking thread pays it: handing the turn over to a parked
    /// thread (lock, store, condition-variable notify, unlock).
    pub call: Summary,
    /// `one_way`'s spread: its [`WAKE_QUANTILES`] quantiles (see [`quantiles`]).
    pub one_way_quantiles: Vec<f64>,
    /// `call`'s spread, likewise.
    pub call_quantiles: Vec<f64>,
    /// Repetitions kept (both threads on different CPUs before and after).
    pub reps_kept: usize,
    /// Repetitions in which the two threads shared a CPU (dropped unless `unchecked`).
    pub reps_same_cpu: usize,
    /// Quick runs only: no repetition ran on two CPUs throughout, so all were kept.
    pub unchecked: bool,
}

/// The real runner's way of blocking (`model::real`): one mutex over the turn, and a
/// condition variable per thread that only its thread waits on.
#[derive(Debug, Default)]
struct WakePair {
    turn: StdMutex<u32>,
    cv: [Condvar; 2],
}

impl WakePair {
    /// Block until the turn is `me`.
    fn wait_for(&self, me: u32) {
        let mut t = crate::model::lock(&self.turn);
        while *t != me {
            t = self.cv[me as usize].wait(t).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Hand the turn to the other thread and wake it.
    fn hand_over(&self, me: u32) {
        *crate::model::lock(&self.turn) = 1 - me;
        self.cv[1 - me as usize].notify_one();
    }
}

/// One repetition of the wake measurement: (one-way samples, notify samples, the timing
/// thread's CPUs before/after, the partner's).
type WakeRep = (Vec<f64>, Vec<f64>, [Option<u32>; 2], [Option<u32>; 2]);

/// Two threads hand a turn back and forth, each blocking on its own condition variable until
/// the other wakes it, as the real runner's threads do when a workload blocks. Between turns
/// a thread is parked, so its CPU goes idle (on a virtual machine, the virtual CPU halts):
/// half a round trip is what one wake of an idle CPU costs, from the notify to the woken
/// thread running. Threads are not pinned; repetitions in which both ran on one CPU (a
/// context switch, not a wake of an idle CPU) are dropped.
#[derive(Debug, Default)]
pub struct WakeBench {
    reps: Vec<WakeRep>,
}

impl WakeBench {
    /// One repetition of `plan.wake_round_trips` timed round trips; returns its median one
    /// way (NaN if the threads shared a CPU).
    pub fn round(&mut self, plan: &Plan, clk: &Clock, overhead: f64) -> f64 {
        let pair = WakePair::default();
        let trips = plan.wake_round_trips;
        let rep: WakeRep = std::thread::scope(|s| {
            let partner = s.spawn(|| {
                let before = current_cpu();
                for _ in 0..trips {
                    pair.wait_for(1);
                    pair.hand_over(1);
                }
                [before, current_cpu()]
            });
            let before = current_cpu();
            let (mut one_way, mut calls) = (Vec::with_capacity(trips), Vec::with_capacity(trips));
            for _ in 0..trips {
                let t0 = clk.ns();
                pair.hand_over(0);
                let t1 = clk.ns();
                pair.wait_for(0);
                let t2 = clk.ns();
                calls.push((t1 - t0) as f64 - overhead);
                // Two clock reads inside the round trip; one is the window's own.
                one_way.push(((t2 - t0) as f64 - 2.0 * overhead) / 2.0);
            }
            let theirs = partner.join().expect("wake partner panicked");
            (one_way, calls, [before, current_cpu()], theirs)
        });
        let median = apart_median(&rep.0, on_two_cpus(rep.2, rep.3));
        self.reps.push(rep);
        median
    }

    /// Drop the repetitions run on one CPU and summarise.
    pub fn finish(self, quick: bool) -> Result<WakeFigures> {
        let kept = Kept::of(&self.reps, |r| on_two_cpus(r.2, r.3), quick, "wake-up")?;
        let mut one_way: Vec<f64> = kept.reps.iter().flat_map(|r| r.0.iter().copied()).collect();
        let mut call: Vec<f64> = kept.reps.iter().flat_map(|r| r.1.iter().copied()).collect();
        Ok(WakeFigures {
            one_way: Summary::of(&mut one_way),
            call: Summary::of(&mut call),
            // `Summary::of` sorted them.
            one_way_quantiles: quantiles(&one_way, WAKE_QUANTILES),
            call_quantiles: quantiles(&call, WAKE_QUANTILES),
            reps_kept: kept.reps.len(),
            reps_same_cpu: kept.same_cpu,
            unchecked: kept.unchecked,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// 4. Page touches

/// Hot and cold 4 KiB page writes, ns per page.
#[derive(Clone, Debug, Serialize)]
pub struct TouchFigures {
    /// A page of a region a quarter of the private L2, written over and over: a page this
    /// core wrote a moment ago (the pageset's LIFO hands it back while it is still there).
    pub l2: Summary,
    /// The L2 size used, bytes.
    pub l2_bytes: u64,
    /// Did it come from sysfs (else a 1 MiB guess)?
    pub l2_from_sysfs: bool,
    /// L2 region, bytes (a quarter of the L2, at least one window of pages).
    pub l2_region_bytes: u64,
    /// The same, written [`RUN_PAGES`] contiguous pages to one `fill` (`write_l2_run_gbps`).
    pub l2_run: Summary,
    /// A page of a region [`llc_region_bytes`] large, written over and over.
    pub hot: Summary,
    /// The same, written [`RUN_PAGES`] contiguous pages to one `fill` (`write_llc_run_gbps`).
    pub hot_run: Summary,
    /// A page of a region many LLCs large, written once after an eviction.
    pub cold: Summary,
    /// The LLC size used, bytes.
    pub llc_bytes: u64,
    /// Did it come from sysfs (else a 32 MiB guess)?
    pub llc_from_sysfs: bool,
    /// Hot region, bytes.
    pub hot_bytes: u64,
    /// Cold region, bytes.
    pub cold_bytes: u64,
    /// Eviction buffer written before each cold pass, bytes.
    pub evict_bytes: u64,
}

/// Writes whole pages (`fill`, a `memset` like the kernel's `clear_page`) in shuffled page
/// order, `WINDOW` pages per window: from a region a quarter of the L2 that stays in it,
/// hot from a region [`llc_region_bytes`] large that stays in the LLC, cold from a pre-faulted region `cold_llc_multiple` LLCs large, each page once per
/// pass, after writing an eviction buffer twice the LLC. Plain `Vec<u8>`s with 4 KiB pages
/// (no THP advice), so both figures include the TLB misses of the page walk.
#[derive(Debug)]
pub struct TouchBench {
    llc: u64,
    llc_from_sysfs: bool,
    l2_bytes: u64,
    l2_from_sysfs: bool,
    l2_region: Vec<u8>,
    l2_order: Vec<usize>,
    hot_region: Vec<u8>,
    hot_order: Vec<usize>,
    /// The L2 and hot regions' runs of [`RUN_PAGES`] pages, shuffled.
    l2_runs: Vec<usize>,
    hot_runs: Vec<usize>,
    cold_region: Vec<u8>,
    cold_order: Vec<usize>,
    evict: Vec<u8>,
    rng: Rng,
    /// Passes so far: the byte each pass writes.
    passes: u8,
    l2: Vec<f64>,
    l2_run: Vec<f64>,
    hot: Vec<f64>,
    hot_run: Vec<f64>,
    cold: Vec<f64>,
}

impl TouchBench {
    /// Size the regions from the L2 and LLC (sysfs; 1 MiB and 32 MiB if it says nothing)
    /// and fault them in.
    pub fn new(plan: &Plan) -> TouchBench {
        let sysfs = std::path::Path::new("/sys/devices/system/cpu");
        let found = crate::cacheinfo::llc_bytes(sysfs, 0);
        let llc = found.unwrap_or(32 << 20);
        let mut rng = Rng::new(0x70c4);
        let l2_found = crate::cacheinfo::level(sysfs, 0, 2).map(|(bytes, _)| bytes);
        let l2 = l2_found.unwrap_or(1 << 20);
        let l2_pages = (l2 as usize / 4 / PAGE).max(WINDOW);
        let mut l2_region = vec![0u8; l2_pages * PAGE];
        l2_region.fill(1);
        let mut l2_order: Vec<usize> = (0..l2_pages).collect();
        shuffle(&mut l2_order, &mut rng);
        let hot_pages = (llc_region_bytes(l2, llc) as usize / PAGE).max(WINDOW * 4);
        let mut hot_region = vec![0u8; hot_pages * PAGE];
        hot_region.fill(1);
        let mut hot_order: Vec<usize> = (0..hot_pages).collect();
        shuffle(&mut hot_order, &mut rng);
        let (l2_runs, hot_runs) = (run_order(l2_pages, &mut rng), run_order(hot_pages, &mut rng));
        let cold_pages = (llc * plan.cold_llc_multiple) as usize / PAGE;
        let mut cold_region = vec![0u8; cold_pages * PAGE];
        cold_region.fill(1);
        let mut evict = vec![0u8; 2 * llc as usize];
        evict.fill(1);
        TouchBench {
            llc,
            llc_from_sysfs: found.is_some(),
            l2_bytes: l2,
            l2_from_sysfs: l2_found.is_some(),
            l2_region,
            l2_order,
            hot_region,
            hot_order,
            l2_runs,
            hot_runs,
            cold_region,
            cold_order: (0..cold_pages).collect(),
            evict,
            rng,
            passes: 0,
            l2: Vec::new(),
            l2_run: Vec::new(),
            hot: Vec::new(),
            hot_run: Vec::new(),
            cold: Vec::new(),
        }
    }

    /// `plan.hot_passes` over the L2 region and then over the hot one (the first pass of
    /// each untimed, to bring it back into its cache), then `plan.cold_passes` over the
    /// cold one; returns this round's medians (L2, hot, cold).
    pub fn round(&mut self, plan: &Plan, clk: &Clock, overhead: f64) -> [f64; 3] {
        let (l0, h0, c0) = (self.l2.len(), self.hot.len(), self.cold.len());
        let mut scratch = Vec::new();
        touch_pass(&mut self.l2_region, &self.l2_order, self.passes, clk, 0.0, &mut scratch);
        for _ in 0..plan.hot_passes {
            self.passes = self.passes.wrapping_add(1);
            let v = self.passes;
            touch_pass(&mut self.l2_region, &self.l2_order, v, clk, overhead, &mut self.l2);
            let r = &mut self.l2_run;
            touch_run_pass(&mut self.l2_region, &self.l2_runs, v, clk, overhead, r);
        }
        touch_pass(&mut self.hot_region, &self.hot_order, self.passes, clk, 0.0, &mut scratch);
        for _ in 0..plan.hot_passes {
            self.passes = self.passes.wrapping_add(1);
            let v = self.passes;
            touch_pass(&mut self.hot_region, &self.hot_order, v, clk, overhead, &mut self.hot);
            let r = &mut self.hot_run;
            touch_run_pass(&mut self.hot_region, &self.hot_runs, v, clk, overhead, r);
        }
        for _ in 0..plan.cold_passes {
            self.passes = self.passes.wrapping_add(1);
            self.evict.fill(self.passes);
            black_box(&mut self.evict[..]);
            shuffle(&mut self.cold_order, &mut self.rng);
            let v = self.passes;
            touch_pass(&mut self.cold_region, &self.cold_order, v, clk, overhead, &mut self.cold);
        }
        [
            Summary::of(&mut self.l2[l0..].to_vec()).median,
            Summary::of(&mut self.hot[h0..].to_vec()).median,
            Summary::of(&mut self.cold[c0..].to_vec()).median,
        ]
    }

    /// Summarise; a real calibration refuses cold writes that came out cheaper than hot.
    pub fn finish(mut self, quick: bool) -> Result<TouchFigures> {
        let (hot, cold) = (Summary::of(&mut self.hot), Summary::of(&mut self.cold));
        let l2 = Summary::of(&mut self.l2);
        let (l2_run, hot_run) = (Summary::of(&mut self.l2_run), Summary::of(&mut self.hot_run));
        // A quick run on a busy machine (other processes flushing the LLC) may not tell them
        // apart; it goes on and the table says so.
        if cold.median < hot.median && !quick {
            bail!(
                "page touch: a cold page ({:.1} ns) measured cheaper than a hot one ({:.1} ns); \
                 is the LLC really {} MiB?",
                cold.median,
                hot.median,
                self.llc >> 20
            );
        }
        Ok(TouchFigures {
            l2,
            l2_bytes: self.l2_bytes,
            l2_from_sysfs: self.l2_from_sysfs,
            l2_region_bytes: self.l2_region.len() as u64,
            l2_run,
            hot,
            hot_run,
            cold,
            llc_bytes: self.llc,
            llc_from_sysfs: self.llc_from_sysfs,
            hot_bytes: self.hot_region.len() as u64,
            cold_bytes: self.cold_region.len() as u64,
            evict_bytes: self.evict.len() as u64,
        })
    }
}

/// Pages written by one `fill` in the run variants of the page writes
/// (`write_*_run_gbps`): 16 KiB, the length of every netperf-tcp copy the real runner timed
/// (docs/performance.md, "The real runner writes its pages whole").
pub const RUN_PAGES: usize = 4;

/// Write `region` in runs of [`RUN_PAGES`] contiguous pages, one `fill` (one fast string)
/// per run, the runs in `order` (run indices), timing each [`WINDOW`] pages' worth of runs;
/// ns per page.
fn touch_run_pass(
    region: &mut [u8],
    order: &[usize],
    value: u8,
    clk: &Clock,
    overhead: f64,
    out: &mut Vec<f64>,
) {
    fill_units(region, order, RUN_PAGES, value, clk, overhead, out);
}

/// The run indices of a region of `pages` pages, shuffled.
fn run_order(pages: usize, rng: &mut Rng) -> Vec<usize> {
    let mut order: Vec<usize> = (0..pages / RUN_PAGES).collect();
    shuffle(&mut order, rng);
    order
}

/// Write the pages of `region` in `order`, timing each `WINDOW` of them.
fn touch_pass(
    region: &mut [u8],
    order: &[usize],
    value: u8,
    clk: &Clock,
    overhead: f64,
    out: &mut Vec<f64>,
) {
    fill_units(region, order, 1, value, clk, overhead, out);
}

/// Write `region` in units of `pages` contiguous pages, one `fill` each, the units in
/// `order` (unit indices), timing each [`WINDOW`] pages' worth of units; ns per page.
fn fill_units(
    region: &mut [u8],
    order: &[usize],
    pages: usize,
    value: u8,
    clk: &Clock,
    overhead: f64,
    out: &mut Vec<f64>,
) {
    let unit = pages * PAGE;
    for w in order.chunks_exact(WINDOW / pages) {
        let t0 = clk.ns();
        for &u in w {
            let block = &mut region[u * unit..(u + 1) * unit];
            block.fill(value);
            black_box(block);
        }
        let t1 = clk.ns();
        out.push(((t1 - t0) as f64 - overhead) / WINDOW as f64);
    }
}

/// Page writes of pages the other CPU wrote last, ns per page (`write_c2c_gbps`).
#[derive(Clone, Debug, Serialize)]
pub struct C2cTouchFigures {
    /// A page of the region, the other thread having written the whole region just before.
    pub page: Summary,
    /// The same, written [`RUN_PAGES`] contiguous pages to one `fill` (`write_c2c_run_gbps`).
    pub run: Summary,
    /// The region, bytes (a quarter of the L2, as for [`TouchFigures::l2`]).
    pub region_bytes: u64,
    /// Repetitions kept (both threads on different CPUs before and after).
    pub reps_kept: usize,
    /// Repetitions in which the two threads shared a CPU (dropped unless `unchecked`).
    pub reps_same_cpu: usize,
    /// Quick runs only: no repetition ran on two CPUs throughout, so all were kept.
    pub unchecked: bool,
}

/// One repetition of the c2c page writes: (ns per page of each timed window, written a page
/// to a `fill`; the same written in runs; the timing thread's CPUs before/after, the
/// partner's).
type C2cRep = (Vec<f64>, Vec<f64>, [Option<u32>; 2], [Option<u32>; 2]);

/// Two threads take turns writing a region a quarter of the L2 whole (`fill`, as
/// [`TouchBench`] writes), each page in the same shuffled order; the thread under test times
/// its passes in windows of [`WINDOW`] pages, so every page it writes is one the other
/// thread wrote a moment ago and still holds in its own L2 (what a receiver's copy-out of a
/// packet the sender just built, or a page freed on one CPU and reused on its neighbour,
/// finds). Threads are not pinned: repetitions in which both ran on one CPU are dropped, as
/// for the handoff. The turn is a flag; the region's lock is taken once a pass, outside the
/// timed windows, and is never contended (the turns order the passes).
#[derive(Debug)]
pub struct C2cTouchBench {
    region: StdMutex<Vec<u8>>,
    order: Vec<usize>,
    /// The region's runs of [`RUN_PAGES`] pages, shuffled.
    runs: Vec<usize>,
    reps: Vec<C2cRep>,
    /// Passes so far: the byte each pass writes.
    passes: u8,
}

impl C2cTouchBench {
    /// The region, as large as [`TouchBench`]'s L2 region, faulted in.
    pub fn new(touch: &TouchBench) -> C2cTouchBench {
        let pages = touch.l2_region.len() / PAGE;
        let mut order: Vec<usize> = (0..pages).collect();
        let mut rng = Rng::new(0xc2c);
        shuffle(&mut order, &mut rng);
        C2cTouchBench {
            region: StdMutex::new(vec![1u8; pages * PAGE]),
            order,
            runs: run_order(pages, &mut rng),
            reps: Vec::new(),
            passes: 0,
        }
    }

    /// One repetition of `4 * plan.hot_passes` turns each (the partner's first; the timing
    /// thread writes a page to a `fill` in its even turns, runs of pages in its odd ones);
    /// returns its median ns per page written a page to a `fill` (NaN if the threads shared
    /// a CPU).
    pub fn round(&mut self, plan: &Plan, clk: &Clock, overhead: f64) -> f64 {
        let turns = 4 * plan.hot_passes;
        let (region, order, runs) = (&self.region, &self.order[..], &self.runs[..]);
        let turn = Padded(AtomicU32::new(1));
        let first = self.passes;
        let rep: C2cRep = std::thread::scope(|s| {
            let turn = &turn.0;
            let partner = s.spawn(move || {
                let before = current_cpu();
                for t in 0..turns {
                    wait_turn(turn, 1);
                    let value = first.wrapping_add((2 * t + 1) as u8);
                    touch_pass(
                        &mut crate::model::lock(region),
                        order,
                        value,
                        clk,
                        0.0,
                        &mut Vec::new(),
                    );
                    turn.store(0, Ordering::Release);
                }
                [before, current_cpu()]
            });
            let before = current_cpu();
            let mut samples = Vec::with_capacity(turns * order.len() / WINDOW / 2);
            let mut run_samples = Vec::with_capacity(turns * order.len() / WINDOW / 2);
            for t in 0..turns {
                wait_turn(turn, 0);
                let value = first.wrapping_add((2 * t + 2) as u8);
                let mut region = crate::model::lock(region);
                if t % 2 == 0 {
                    touch_pass(&mut region, order, value, clk, overhead, &mut samples);
                } else {
                    touch_run_pass(&mut region, runs, value, clk, overhead, &mut run_samples);
                }
                drop(region);
                turn.store(1, Ordering::Release);
            }
            let theirs = partner.join().expect("c2c page-write partner panicked");
            (samples, run_samples, [before, current_cpu()], theirs)
        });
        self.passes = first.wrapping_add((2 * turns) as u8);
        let median = apart_median(&rep.0, on_two_cpus(rep.2, rep.3));
        self.reps.push(rep);
        median
    }

    /// Drop the repetitions run on one CPU and summarise.
    pub fn finish(self, quick: bool) -> Result<C2cTouchFigures> {
        let kept = Kept::of(&self.reps, |r| on_two_cpus(r.2, r.3), quick, "c2c page writes")?;
        let mut page: Vec<f64> = kept.reps.iter().flat_map(|r| r.0.iter().copied()).collect();
        let mut run: Vec<f64> = kept.reps.iter().flat_map(|r| r.1.iter().copied()).collect();
        Ok(C2cTouchFigures {
            page: Summary::of(&mut page),
            run: Summary::of(&mut run),
            region_bytes: crate::model::lock(&self.region).len() as u64,
            reps_kept: kept.reps.len(),
            reps_same_cpu: kept.same_cpu,
            unchecked: kept.unchecked,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// 4b. The share of the LLC this host's CPUs get

/// The sweep's regions grow by this factor, from two L2s up to the LLC.
const SHARE_GROWTH: f64 = 1.5;

/// What the LLC-share sweep found.
#[derive(Clone, Debug, Serialize)]
pub struct ShareFigures {
    /// The regions swept, bytes, smallest first.
    pub sizes: Vec<u64>,
    /// Per region: the median page write over every sweep that reached it, ns (NaN: none).
    pub ns: Vec<f64>,
    /// Each sweep's estimate of the usable LLC, MiB: the figure is its median.
    pub usable_mib: Summary,
    /// The LLC sysfs reports (or the 32 MiB guess), bytes.
    pub llc_bytes: u64,
}

/// Page writes over regions of growing size, to find how much of the LLC this host's CPUs
/// really get: a virtual machine is told its host's whole LLC (the lab VM: 260 MiB) but
/// shares it with the host's other guests, and its page writes ran at memory's rate over
/// regions a fifth of that. Each sweep writes every region in a freshly shuffled page order,
/// once untimed (to bring it into whatever cache holds it) and once timed in windows of
/// [`WINDOW`] pages, smallest region first, and stops at the second region whose cost is
/// above the midpoint between the round's LLC-resident and cold page writes. The sweep's
/// estimate is the region size where the cost crosses that midpoint ([`crossing`]): where
/// about half the pages are still found in the cache.
#[derive(Debug)]
pub struct ShareBench {
    sizes: Vec<u64>,
    region: Vec<u8>,
    rng: Rng,
    passes: u8,
    per_size: Vec<Vec<f64>>,
    estimates: Vec<f64>,
    llc: u64,
}

impl ShareBench {
    /// Size the regions from sysfs (1 MiB L2 and 32 MiB LLC when it says nothing), capped
    /// at `plan.share_max_bytes`, and fault the largest in.
    pub fn new(plan: &Plan) -> ShareBench {
        let sysfs = std::path::Path::new("/sys/devices/system/cpu");
        let llc = crate::cacheinfo::llc_bytes(sysfs, 0).unwrap_or(32 << 20);
        let l2 = crate::cacheinfo::level(sysfs, 0, 2).map_or(1 << 20, |(bytes, _)| bytes);
        let sizes = share_sizes(2 * l2, llc.min(plan.share_max_bytes));
        let largest = sizes.last().copied().unwrap_or(0) as usize;
        let mut region = vec![0u8; largest];
        region.fill(1);
        ShareBench {
            per_size: vec![Vec::new(); sizes.len()],
            sizes,
            region,
            rng: Rng::new(0x5a4e),
            passes: 0,
            estimates: Vec::new(),
            llc,
        }
    }

    /// One sweep, with this round's LLC-resident (`hot`) and cold page writes (ns) as the
    /// two ends of the scale.
    pub fn sweep(&mut self, hot: f64, cold: f64, clk: &Clock, overhead: f64) {
        let mid = (hot + cold) / 2.0;
        let mut medians = Vec::with_capacity(self.sizes.len());
        let mut above = 0;
        let mut scratch = Vec::new();
        for (i, &bytes) in self.sizes.iter().enumerate() {
            let pages = bytes as usize / PAGE;
            let mut order: Vec<usize> = (0..pages).collect();
            shuffle(&mut order, &mut self.rng);
            let region = &mut self.region[..pages * PAGE];
            self.passes = self.passes.wrapping_add(1);
            touch_pass(region, &order, self.passes, clk, 0.0, &mut scratch);
            shuffle(&mut order, &mut self.rng);
            self.passes = self.passes.wrapping_add(1);
            let mut windows = Vec::with_capacity(pages / WINDOW);
            touch_pass(region, &order, self.passes, clk, overhead, &mut windows);
            self.per_size[i].extend_from_slice(&windows);
            let median = Summary::of(&mut windows).median;
            medians.push(median);
            if median > mid {
                above += 1;
                if above == 2 {
                    break;
                }
            }
        }
        let found = crossing(&self.sizes[..medians.len()], &medians, mid);
        self.estimates.push(found as f64 / f64::from(1u32 << 20));
    }

    /// Summarise.
    pub fn finish(mut self) -> ShareFigures {
        let ns = self
            .per_size
            .iter_mut()
            .map(|w| if w.is_empty() { f64::NAN } else { Summary::of(w).median })
            .collect();
        ShareFigures {
            sizes: self.sizes,
            ns,
            usable_mib: Summary::of(&mut self.estimates),
            llc_bytes: self.llc,
        }
    }
}

/// The sweep's region sizes: from `from` bytes, each [`SHARE_GROWTH`] times the last and
/// rounded down to whole windows of pages, up to `to` (which is the last).
pub fn share_sizes(from: u64, to: u64) -> Vec<u64> {
    let unit = (WINDOW * PAGE) as u64;
    let mut sizes = Vec::new();
    let mut at = from as f64;
    while (at as u64) < to {
        sizes.push((at as u64 / unit).max(1) * unit);
        at *= SHARE_GROWTH;
    }
    sizes.push((to / unit).max(1) * unit);
    sizes.dedup();
    sizes
}

/// The region size where a page write's cost `ns` (per region of `sizes`, ascending) first
/// exceeds `mid`, interpolated in log size between that region and the one before; the last
/// size when none exceeds it, the first when the first already does.
pub fn crossing(sizes: &[u64], ns: &[f64], mid: f64) -> u64 {
    let Some(i) = ns.iter().position(|&t| t > mid) else {
        return sizes.last().copied().unwrap_or(0);
    };
    if i == 0 {
        return sizes[0];
    }
    let (a, b) = (sizes[i - 1] as f64, sizes[i] as f64);
    let (ta, tb) = (ns[i - 1], ns[i]);
    let f = ((mid - ta) / (tb - ta)).clamp(0.0, 1.0);
    (a.ln() + f * (b.ln() - a.ln())).exp() as u64
}

// ---------------------------------------------------------------------------------------------
// 5. Load latency by cache level

/// Dependent loads per timed window of the pointer chase.
pub const CHASE_WINDOW: usize = 1024;

/// The latency of a load that hits each level, ns.
#[derive(Clone, Debug, Serialize)]
pub struct LatencyFigures {
    /// A chase over a region half the L2.
    pub l2: Summary,
    /// A chase over a region four L2s large and a quarter of the LLC.
    pub llc: Summary,
    /// A chase over a region eight LLCs large (at least 256 MiB): memory, with the TLB misses
    /// of 4 KiB pages.
    pub dram: Summary,
    /// The region sizes, bytes.
    pub bytes: [u64; 3],
    /// Independent chases over the memory region at once ([`LANES`]): ns per load at each
    /// count of lanes, all rounds.
    pub lanes: Vec<(usize, Summary)>,
    /// Misses one core keeps in flight: per round, the most loads the lanes overlapped
    /// (one lane's latency over the ns per load at the best count: lmbench's `par_mem`
    /// figure).
    pub in_flight: Summary,
    /// A chase of the same size up the lines of each 4 KiB page, the pages in random order:
    /// ns per load. Each load still waits for the last, so only a prefetcher that fetches
    /// the next lines of a page ahead of the loads makes it cheaper than `dram` by more than
    /// the TLB misses it saves.
    pub paged: Summary,
}

/// Lines of a 4 KiB page.
const PAGE_LINES: usize = 4096 / 64;

/// A chase through `n` lines (a whole number of pages) that goes up the 64 lines of each
/// 4 KiB page and from a page's last line to the first line of a random other page, every
/// page once, in one cycle.
fn paged_chase(n: usize, rng: &mut Rng) -> Vec<ChaseLine> {
    let pages = (n / PAGE_LINES).max(1);
    let mut order: Vec<usize> = (0..pages).collect();
    for i in (1..pages).rev() {
        order.swap(i, rng.below(i as u64) as usize);
    }
    let lines: Vec<usize> =
        order.iter().flat_map(|&p| (0..PAGE_LINES).map(move |l| p * PAGE_LINES + l)).collect();
    let mut v = vec![ChaseLine { next: 0, _pad: [0; 7] }; lines.len()];
    for k in 0..lines.len() {
        v[lines[k]].next = lines[(k + 1) % lines.len()];
    }
    v
}

/// The counts of independent chases run together over the memory region.
pub const LANES: [usize; 11] = [1, 2, 4, 6, 8, 10, 12, 16, 20, 24, 32];

/// One 64-byte line of a chase: the index of the next line to load, and padding.
#[derive(Clone, Copy)]
#[repr(align(64))]
struct ChaseLine {
    next: usize,
    _pad: [usize; 7],
}

/// Pointer chases through random cyclic permutations of the lines of three regions sized from
/// this CPU's caches (sysfs): each load's address depends on the last one's data, so a window
/// of loads takes their latencies one after another, as the allocator's list walks do.
#[derive(Debug)]
pub struct LatencyBench {
    regions: [Vec<ChaseLine>; 3],
    at: [usize; 3],
    samples: [Vec<f64>; 3],
    /// The memory region's size again, chased up each page ([`paged_chase`]).
    paged: Vec<ChaseLine>,
    paged_at: usize,
    paged_samples: Vec<f64>,
    /// Per [`LANES`] count: ns per load, all rounds.
    lane_samples: Vec<Vec<f64>>,
    /// Per round: the loads the lanes overlapped.
    in_flight: Vec<f64>,
}

impl std::fmt::Debug for ChaseLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "→{}", self.next)
    }
}

/// The region the LLC figures are measured over: four L2s, at most a quarter of the LLC, at
/// least two L2s. Four L2s, not a share of the LLC sysfs reports: a virtual machine is told
/// the host's whole LLC but gets a share of it. On the lab VM (sysfs: 260 MiB) page writes
/// ran at 16–19 GB/s over regions of 2 to 16 MiB, 11 GB/s over 32 MiB and 5–6 GB/s over 65
/// MiB, a quarter of the reported LLC, which is memory's rate: a figure measured there was
/// not an LLC's.
pub fn llc_region_bytes(l2: u64, llc: u64) -> u64 {
    (4 * l2).min(llc / 4).max(l2 * 2)
}

impl LatencyBench {
    /// Size the regions from sysfs (256 KiB L2 and 32 MiB LLC when it says nothing) and link
    /// each region's lines, in a random order, into one cycle.
    pub fn new(plan: &Plan) -> LatencyBench {
        let sysfs = std::path::Path::new("/sys/devices/system/cpu");
        let l2 = crate::cacheinfo::level(sysfs, 0, 2).map_or(256 << 10, |l| l.0);
        let llc = crate::cacheinfo::llc_bytes(sysfs, 0).unwrap_or(32 << 20);
        let dram =
            (llc * if plan.quick { 2 } else { 8 }).max(if plan.quick { 64 } else { 256 } << 20);
        let sizes = [l2 / 2, llc_region_bytes(l2, llc), dram];
        let mut rng = Rng::new(0x1a7e);
        let regions = sizes.map(|bytes| {
            let n = (bytes / 64).max(2) as usize;
            let mut order: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                let j = rng.below(i as u64) as usize;
                order.swap(i, j);
            }
            let mut v = vec![ChaseLine { next: 0, _pad: [0; 7] }; n];
            for k in 0..n {
                v[order[k]].next = order[(k + 1) % n];
            }
            v
        });
        let paged = paged_chase(regions[2].len(), &mut rng);
        LatencyBench {
            regions,
            at: [0; 3],
            samples: Default::default(),
            paged,
            paged_at: 0,
            paged_samples: Vec::new(),
            lane_samples: vec![Vec::new(); LANES.len()],
            in_flight: Vec::new(),
        }
    }

    /// One window of `k` independent chases over the memory region from `cursors`: ns per
    /// load. Each lane's next address depends only on its own last load, so an out-of-order
    /// core overlaps the lanes' misses up to what it keeps in flight.
    fn lanes_window(&self, cursors: &mut [usize], clk: &Clock, overhead: f64) -> f64 {
        let region = &self.regions[2];
        let steps = (CHASE_WINDOW / cursors.len()).max(1);
        let t0 = clk.ns();
        for _ in 0..steps {
            for c in cursors.iter_mut() {
                *c = black_box(region[*c].next);
            }
        }
        let t1 = clk.ns();
        ((t1 - t0) as f64 - overhead) / (steps * cursors.len()) as f64
    }

    /// A round of the lanes: `plan.chase_windows / 4` windows (at least one) at each count;
    /// records each count's ns per load and this round's loads in flight.
    fn lanes_round(&mut self, plan: &Plan, clk: &Clock, overhead: f64) {
        // Lanes start at random lines: the region is one random cycle, so these are random
        // places along it, far apart but for a rare pair (whose few shared lines change a
        // window's time by about one lane's share).
        let n = self.regions[2].len() as u64;
        let mut rng = Rng::new(0x1a4e ^ self.in_flight.len() as u64);
        let mut medians = Vec::with_capacity(LANES.len());
        for (i, &k) in LANES.iter().enumerate() {
            let mut cursors: Vec<usize> = (0..k).map(|_| rng.below(n) as usize).collect();
            let first = self.lane_samples[i].len();
            for _ in 0..(plan.chase_windows / 4).max(1) {
                let ns = self.lanes_window(&mut cursors, clk, overhead);
                self.lane_samples[i].push(ns);
            }
            medians.push(Summary::of(&mut self.lane_samples[i][first..].to_vec()).median);
        }
        let overlapped = medians.iter().map(|&ns| medians[0] / ns).fold(1.0, f64::max);
        self.in_flight.push(overlapped);
    }

    /// `plan.chase_windows` timed windows per level (after one untimed pass over the two cache
    /// regions, to bring them in); returns this round's medians.
    pub fn round(&mut self, plan: &Plan, clk: &Clock, overhead: f64) -> [f64; 3] {
        let medians = std::array::from_fn(|level| {
            let region = &self.regions[level];
            let mut i = self.at[level];
            if level < 2 {
                for _ in 0..region.len() {
                    i = region[i].next;
                }
            }
            let first = self.samples[level].len();
            for _ in 0..plan.chase_windows {
                let t0 = clk.ns();
                for _ in 0..CHASE_WINDOW {
                    i = black_box(region[i].next);
                }
                let t1 = clk.ns();
                self.samples[level].push(((t1 - t0) as f64 - overhead) / CHASE_WINDOW as f64);
            }
            self.at[level] = i;
            Summary::of(&mut self.samples[level][first..].to_vec()).median
        });
        self.lanes_round(plan, clk, overhead);
        self.paged_round(plan, clk, overhead);
        medians
    }

    /// `plan.chase_windows` timed windows of the chase up each page.
    fn paged_round(&mut self, plan: &Plan, clk: &Clock, overhead: f64) {
        let mut i = self.paged_at;
        for _ in 0..plan.chase_windows {
            let t0 = clk.ns();
            for _ in 0..CHASE_WINDOW {
                i = black_box(self.paged[i].next);
            }
            let t1 = clk.ns();
            self.paged_samples.push(((t1 - t0) as f64 - overhead) / CHASE_WINDOW as f64);
        }
        self.paged_at = i;
    }

    /// Summarise.
    pub fn finish(mut self) -> LatencyFigures {
        let [l2, llc, dram] = self.samples.map(|mut v| Summary::of(&mut v));
        let lanes =
            LANES.iter().zip(&mut self.lane_samples).map(|(&k, v)| (k, Summary::of(v))).collect();
        LatencyFigures {
            l2,
            llc,
            dram,
            bytes: self.regions.map(|r| (r.len() * 64) as u64),
            lanes,
            in_flight: Summary::of(&mut self.in_flight),
            paged: Summary::of(&mut self.paged_samples),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The machine

/// What the figures were measured on.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// `model name` from /proc/cpuinfo.
    pub cpu_model: String,
    /// Logical CPUs available to this process.
    pub cpus: usize,
    /// Last-level cache, bytes (sysfs).
    pub llc_bytes: Option<u64>,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// /proc/cpuinfo's flags include `hypervisor`.
    pub virtual_machine: bool,
    /// NUMA nodes online.
    pub nodes: usize,
}

impl Machine {
    /// This machine, from /proc and /sys.
    pub fn read() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| {
            cpuinfo.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == name).then(|| v.trim().to_owned())
            })
        };
        let virtual_machine =
            field("flags").is_some_and(|f| f.split_whitespace().any(|x| x == "hypervisor"));
        let nodes = std::fs::read_dir("/sys/devices/system/node")
            .map(|d| {
                d.flatten()
                    .filter(|e| {
                        let n = e.file_name();
                        let n = n.to_string_lossy();
                        n.strip_prefix("node").is_some_and(|r| r.parse::<u32>().is_ok())
                    })
                    .count()
            })
            .unwrap_or(1)
            .max(1);
        Machine {
            cpu_model: field("model name").unwrap_or_else(|| "unknown CPU".to_owned()),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            llc_bytes: crate::cacheinfo::llc_bytes(
                std::path::Path::new("/sys/devices/system/cpu"),
                0,
            ),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map_or_else(|_| "unknown".to_owned(), |s| s.trim().to_owned()),
            virtual_machine,
            nodes,
        }
    }

    /// One line, as the profile's `machine` field.
    pub fn describe(&self) -> String {
        let mut s = format!("{}, {} CPUs", self.cpu_model, self.cpus);
        if let Some(b) = self.llc_bytes {
            s += &format!(", LLC {} MiB", b >> 20);
        }
        s += &format!(", Linux {}", self.kernel);
        if self.virtual_machine {
            s += ", virtual machine";
        }
        s += &format!(", {} NUMA node{}", self.nodes, if self.nodes == 1 { "" } else { "s" });
        s
    }
}

/// The 1-, 5- and 15-minute load averages (/proc/loadavg).
pub fn loadavg() -> Option<[f64; 3]> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut it = s.split_whitespace().map(|x| x.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

/// Today's date (UTC) as YYYY-MM-DD, from the system clock.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The proleptic Gregorian date `days` after 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

// ---------------------------------------------------------------------------------------------
// Everything

/// Each round's medians, to show how far the machine's speed drifted during the run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RoundMedians {
    /// One clock read, ns.
    pub timer: Vec<f64>,
    /// `pcp_alloc_ns`.
    pub pcp_alloc: Vec<f64>,
    /// `pcp_free_ns`.
    pub pcp_free: Vec<f64>,
    /// `slab_alloc_ns`.
    pub slab_alloc: Vec<f64>,
    /// `slab_free_ns`.
    pub slab_free: Vec<f64>,
    /// Acquisition of a lock the other thread released last (NaN: no repetition on two CPUs).
    pub handoff_acquisition: Vec<f64>,
    /// A page write in the L2 (`write_l2_gbps`).
    pub l2: Vec<f64>,
    /// A page write of a page the other CPU wrote last (`write_c2c_gbps`; NaN: the threads
    /// shared a CPU).
    pub c2c: Vec<f64>,
    /// `page_touch_hot_ns`.
    pub hot: Vec<f64>,
    /// `page_touch_cold_ns`.
    pub cold: Vec<f64>,
    /// Load latency: L2, LLC, DRAM.
    pub latency: Vec<[f64; 3]>,
    /// One-way wake of a blocked thread (NaN: the threads shared a CPU).
    pub wake: Vec<f64>,
}

/// Every measurement of one calibration.
#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    /// The plan followed.
    pub plan: Plan,
    /// One clock read, ns (each round's median is subtracted from that round's windows).
    pub timer_overhead: Summary,
    /// One clock read, ns: the [`trimmed_mean`] of every sample, which the zone-lock base
    /// subtracts (a window of 16 operations divides a median's step by 16; the base does not).
    pub timer_mean: f64,
    /// The pageset fast path.
    pub pcp: PcpFigures,
    /// The slab fast path.
    pub slab: SlabFigures,
    /// Uncontended lock+unlock of the spin lock, ns.
    pub lock_uncontended: Summary,
    /// The zone-lock hold fit.
    pub holds: HoldFit,
    /// The handoff.
    pub handoff: HandoffFigures,
    /// Page writes.
    pub touch: TouchFigures,
    /// Page writes of pages the other CPU wrote last.
    pub c2c_touch: C2cTouchFigures,
    /// The share of the LLC page writes find.
    pub share: ShareFigures,
    /// Load latencies.
    pub latency: LatencyFigures,
    /// Waking a blocked thread.
    pub wake: WakeFigures,
    /// Per-round medians.
    pub rounds: RoundMedians,
    /// The machine.
    pub machine: Machine,
}

impl Calibration {
    /// The fixed part of a hold as the hooks see it: the fit's intercept less the clock read
    /// inside each timed hold ([`timer_mean`](Self::timer_mean): the intercept is a fit over
    /// many holds, not one quantised reading), ns, with the per-pass spread. May come out
    /// below 0: it is smaller than the clock's steps (10 ns on some virtual machines).
    pub fn hook_visible_base(&self) -> Summary {
        let s = self.holds.round_intercepts.shifted(-self.timer_mean);
        Summary { median: self.holds.intercept_ns - self.timer_mean, ..s }
    }

    /// `zone_lock_base_ns`: the hook-visible fixed part (taken as 0 when it measured below
    /// 0, since a hold cannot cost less than its lock and unlock) plus the uncontended
    /// lock+unlock the hooks do not see.
    pub fn zone_lock_base(&self) -> f64 {
        self.hook_visible_base().median.max(0.0) + self.lock_uncontended.median
    }
}

/// Run every measurement, `plan.rounds` times in turn, saying what it does on `progress`.
pub fn run(plan: &Plan, mut progress: impl FnMut(&str)) -> Result<Calibration> {
    let clk = Clock::new();
    progress(
        "setting up: a 1 GiB allocator with a warm pageset, 5 allocators for the zone-lock \
              program, the page-write regions (faulted in), the pointer-chase regions",
    );
    let mut pcp = PcpBench::new()?;
    let slab_pa = SlabBench::allocator()?;
    let mut slab = SlabBench::new(&slab_pa)?;
    let mut holds = HoldBench::new(&clk)?;
    let mut handoff = HandoffBench::new()?;
    let mut touch = TouchBench::new(plan);
    let mut c2c_touch = C2cTouchBench::new(&touch);
    let mut share = ShareBench::new(plan);
    let mut latency = LatencyBench::new(plan);
    let mut wake = WakeBench::default();
    let (mut timer, mut lock) = (Vec::new(), Vec::new());
    let mut rounds = RoundMedians::default();
    for r in 0..plan.rounds {
        progress(&format!(
            "round {}/{}: clock, pageset, spin lock, zone-lock holds, handoff, page writes (own \
             and the other CPU's){}, \
             load latencies, wake-ups",
            r + 1,
            plan.rounds,
            if r % plan.share_every.max(1) == 0 { " (and the LLC-share sweep)" } else { "" }
        ));
        let t0 = timer.len();
        timer_overhead(&clk, plan.timer_pairs, &mut timer);
        let ovh = Summary::of(&mut timer[t0..].to_vec()).median;
        rounds.timer.push(ovh);
        let (a, f) = pcp.round(plan.pcp_windows, &clk, ovh)?;
        rounds.pcp_alloc.push(a);
        rounds.pcp_free.push(f);
        let (a, f) = slab.round(plan.slab_windows, &clk, ovh)?;
        rounds.slab_alloc.push(a);
        rounds.slab_free.push(f);
        spin_lock_uncontended(plan.lock_windows, &clk, ovh, &mut lock);
        holds.round(plan.hold_passes)?;
        rounds.handoff_acquisition.push(handoff.round(plan, &clk, ovh));
        let [l, h, c] = touch.round(plan, &clk, ovh);
        rounds.l2.push(l);
        rounds.hot.push(h);
        rounds.cold.push(c);
        rounds.c2c.push(c2c_touch.round(plan, &clk, ovh));
        if r % plan.share_every.max(1) == 0 {
            share.sweep(h, c, &clk, ovh);
        }
        rounds.latency.push(latency.round(plan, &clk, ovh));
        rounds.wake.push(wake.round(plan, &clk, ovh));
    }
    let lock = Summary::of(&mut lock);
    Ok(Calibration {
        plan: *plan,
        timer_overhead: Summary::of(&mut timer),
        timer_mean: trimmed_mean(&mut timer),
        pcp: pcp.finish()?,
        slab: slab.finish()?,
        lock_uncontended: lock,
        holds: holds.finish(plan.quick)?,
        handoff: handoff.finish(plan.quick, lock.median)?,
        touch: touch.finish(plan.quick)?,
        c2c_touch: c2c_touch.finish(plan.quick)?,
        share: share.finish(),
        latency: latency.finish(),
        wake: wake.finish(plan.quick)?,
        rounds,
        machine: Machine::read(),
    })
}

/// Only the slab fast path (`calibrate --slab-only`): `plan.rounds` rounds of
/// `plan.slab_windows` windows, each round's clock read measured first, as in [`run`].
pub fn run_slab(plan: &Plan, mut progress: impl FnMut(&str)) -> Result<(SlabFigures, Summary)> {
    let clk = Clock::new();
    progress("setting up: a 64 MiB allocator and a warm 192-byte slab cache");
    let pa = SlabBench::allocator()?;
    let mut slab = SlabBench::new(&pa)?;
    let mut timer = Vec::new();
    for r in 0..plan.rounds {
        if r % 16 == 0 {
            progress(&format!(
                "rounds {}..{} of {}: clock, slab",
                r + 1,
                (r + 16).min(plan.rounds),
                plan.rounds
            ));
        }
        let t0 = timer.len();
        timer_overhead(&clk, plan.timer_pairs, &mut timer);
        let ovh = Summary::of(&mut timer[t0..].to_vec()).median;
        slab.round(plan.slab_windows, &clk, ovh)?;
    }
    Ok((slab.finish()?, Summary::of(&mut timer)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The core-to-core probe gives a latency on a host of two CPUs or more (a line's trip
    /// takes at least a nanosecond and, a thread preempted aside, well under a millisecond;
    /// a window both threads spent on one CPU is not counted), and nothing for no windows.
    #[test]
    fn the_core_to_core_probe_times_a_line_between_two_cpus() {
        assert_eq!(core_to_core_ns(0, 128), None);
        if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
            assert_eq!(core_to_core_ns(8, 128), None, "one CPU: no two cores to measure");
            return;
        }
        // On a busy test machine (the whole suite running at once) every window may find
        // both threads on one CPU; several tries, and a probe that finds none says nothing.
        let t = Instant::now();
        let ns = (0..20).find_map(|_| core_to_core_ns(32, 128));
        if std::env::var_os("PAGEALLOC_PRINT_C2C").is_some() {
            eprintln!("core_to_core_ns: {ns:?} in {:?}", t.elapsed());
        }
        if let Some(ns) = ns {
            assert!(ns.is_finite() && (1.0..1e6).contains(&ns), "{ns} ns");
        }
    }

    /// The LLC figures' region: four L2s, capped at a quarter of the LLC, never under two
    /// L2s (the lab VM: 2 MiB L2, told of a 260 MiB LLC: 8 MiB).
    #[test]
    fn the_llc_region_is_four_l2s_within_a_quarter_of_the_llc() {
        const MIB: u64 = 1 << 20;
        assert_eq!(llc_region_bytes(2 * MIB, 260 * MIB), 8 * MIB);
        assert_eq!(llc_region_bytes(MIB / 4, 32 * MIB), MIB);
        assert_eq!(llc_region_bytes(MIB, 8 * MIB), 2 * MIB);
        assert_eq!(llc_region_bytes(MIB, 4 * MIB), 2 * MIB, "at least two L2s");
    }

    /// The sweep grows by half each step from two L2s and ends at the LLC, in whole windows
    /// of pages (the lab VM: 2 MiB L2, 260 MiB LLC).
    #[test]
    fn the_share_sweep_grows_by_half_up_to_the_llc() {
        const MIB: u64 = 1 << 20;
        let s = share_sizes(4 * MIB, 260 * MIB);
        assert_eq!(&s[..3], &[4 * MIB, 6 * MIB, 9 * MIB]);
        assert_eq!(*s.last().unwrap(), 260 * MIB);
        let unit = (WINDOW * PAGE) as u64;
        assert!(s
            .windows(2)
            .all(|w| w[1] > w[0] && w[1] as f64 <= w[0] as f64 * 1.5 + unit as f64));
        assert!(s.iter().all(|b| b % unit == 0));
        assert_eq!(share_sizes(4 * MIB, 4 * MIB), vec![4 * MIB], "an LLC of two L2s");
        assert_eq!(share_sizes(4 * MIB, 3 * MIB), vec![3 * MIB], "an LLC below two L2s");
    }

    /// The crossing is interpolated in log size between the last region below the midpoint
    /// and the first above; a sweep that never crosses gives its largest region, one that
    /// starts above gives its smallest.
    #[test]
    fn the_usable_llc_is_where_the_cost_crosses_the_midpoint() {
        const MIB: u64 = 1 << 20;
        let sizes = [16 * MIB, 32 * MIB, 64 * MIB, 128 * MIB];
        // Half-way between 200 and 600 in cost, half-way between 32 and 64 MiB in log size.
        let at = crossing(&sizes, &[170.0, 200.0, 600.0, 610.0], 400.0);
        assert!((at as f64 / (f64::sqrt(2.0) * 32.0 * MIB as f64) - 1.0).abs() < 1e-6, "{at}");
        assert_eq!(crossing(&sizes, &[170.0, 200.0, 400.0, 400.0], 400.0), 128 * MIB);
        assert_eq!(crossing(&sizes, &[500.0, 600.0], 400.0), 16 * MIB);
        // A dip after the first crossing does not move it.
        let at = crossing(&sizes, &[170.0, 600.0, 300.0, 610.0], 400.0);
        assert!(at > 16 * MIB && at < 32 * MIB, "{at}");
    }

    #[test]
    fn a_stepped_clocks_mean_is_its_cost_where_its_median_flips() {
        // A read costing 24 ns on a clock of 10 ns steps: 60 % read 20, 40 % read 30; one
        // preempted read. The median is 20, and 30 with a few per cent more of the long
        // reads; the trimmed mean stays near 24 either way.
        // The preempted read comes first: the sample need not be sorted.
        let sample = |long: usize| {
            let mut v = vec![5000.0];
            v.extend(vec![30.0; long]);
            v.extend(vec![20.0; 100 - long]);
            v
        };
        let (mut a, mut b) = (sample(40), sample(52));
        let (ma, mb) = (trimmed_mean(&mut a), trimmed_mean(&mut b));
        assert_eq!((percentile(&a, 0.5), percentile(&b, 0.5)), (20.0, 30.0));
        assert!((ma - 24.0).abs() < 0.1 && (mb - 25.2).abs() < 0.1, "{ma} {mb}");
        assert!(trimmed_mean(&mut []).is_nan());
    }

    #[test]
    fn percentiles_interpolate() {
        let mut v = vec![5.0, 1.0, 3.0, 2.0, 4.0];
        let s = Summary::of(&mut v);
        assert_eq!((s.median, s.n), (3.0, 5));
        assert!((s.p10 - 1.4).abs() < 1e-9 && (s.p90 - 4.6).abs() < 1e-9, "{s:?}");
        assert!(Summary::of(&mut []).median.is_nan());
        assert_eq!(Summary::of(&mut [2.0]).shifted(1.0).p90, 3.0);
        // 0..=100 sorted: the i-th of 19 quantiles is the (5·i)th percentile, exactly.
        let v: Vec<f64> = (0..=100).map(f64::from).collect();
        let q = quantiles(&v, WAKE_QUANTILES);
        assert_eq!(q.len(), 19);
        assert_eq!((q[0], q[9], q[18]), (5.0, 50.0, 95.0));
    }

    #[test]
    fn a_line_fits_exactly_and_noise_lowers_r2() {
        let pts: Vec<(f64, f64)> =
            (0..10).map(|x| (f64::from(x), 40.0 + 12.5 * f64::from(x))).collect();
        let (a, b, r2) = linear_fit(&pts).unwrap();
        assert!((a - 40.0).abs() < 1e-9 && (b - 12.5).abs() < 1e-9 && (r2 - 1.0).abs() < 1e-12);
        let noisy: Vec<(f64, f64)> = pts
            .iter()
            .enumerate()
            .map(|(i, p)| (p.0, p.1 + if i % 2 == 0 { 9.0 } else { -9.0 }))
            .collect();
        assert!(linear_fit(&noisy).unwrap().2 < 0.99);
        // One long hold off by 5 % barely moves the intercept the short ones fix.
        let mut with_long = pts.clone();
        with_long.push((4000.0, (40.0 + 12.5 * 4000.0) * 1.05));
        let (a, _, _) = linear_fit(&with_long).unwrap();
        assert!((a - 40.0).abs() < 5.0, "{a}");
        assert!(linear_fit(&[(1.0, 2.0)]).is_none());
        assert!(linear_fit(&[(1.0, 2.0), (1.0, 3.0)]).is_none());
    }

    #[test]
    fn buckets_are_exact_then_geometric() {
        assert_eq!((0..=16).map(bucket_key).collect::<Vec<_>>(), (0..=16).collect::<Vec<_>>());
        assert_eq!(bucket_key(17), 17);
        assert!(bucket_key(1000) > bucket_key(100) && bucket_key(100) > bucket_key(17));
        // Neighbours within 15 % share a bucket at most one apart.
        assert!(bucket_key(2000) - bucket_key(1800) <= 1);
        let holds = [(1, 10.0), (1, 30.0), (1, 20.0), (2, 5.0), (500, 1.0), (510, 3.0)];
        assert_eq!(bucket_medians(&holds, 2), vec![(1.0, 20.0), (505.0, 2.0)]);
    }

    /// Only repetitions on two CPUs count; a quick run with none keeps them all and says
    /// so, a real one refuses.
    #[test]
    fn two_thread_repetitions_count_only_on_two_cpus() {
        let reps = [(1, true), (2, false), (3, true)];
        let kept = Kept::of(&reps, |r| r.1, false, "test").unwrap();
        assert_eq!(kept.reps.iter().map(|r| r.0).collect::<Vec<_>>(), [1, 3]);
        assert_eq!((kept.same_cpu, kept.unchecked), (1, false));
        let shared = [(1, false), (2, false)];
        let kept = Kept::of(&shared, |r| r.1, true, "test").unwrap();
        assert_eq!((kept.reps.len(), kept.same_cpu, kept.unchecked), (2, 2, true));
        let e = Kept::of(&shared, |r| r.1, false, "c2c page writes").err().unwrap();
        assert!(e.to_string().starts_with("c2c page writes: in every one of 2"), "{e}");
    }

    #[test]
    fn proc_stat_processor_field() {
        // A command name with spaces and a parenthesis; processor (field 39) is 7.
        let mut fields: Vec<String> = (3..=52).map(|i| i.to_string()).collect();
        fields[39 - 3] = "7".into();
        let line = format!("1234 (a (b) c) {}", fields.join(" "));
        assert_eq!(parse_stat_cpu(&line), Some(7));
        assert_eq!(parse_stat_cpu("1 (x) S 2"), None);
        if std::path::Path::new("/proc/thread-self/stat").exists() {
            assert!(current_cpu().is_some());
        }
    }

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(today().len(), 10);
    }

    #[test]
    fn machine_line_names_the_parts() {
        let m = Machine {
            cpu_model: "AMD EPYC".into(),
            cpus: 2,
            llc_bytes: Some(32 << 20),
            kernel: "6.18.44".into(),
            virtual_machine: true,
            nodes: 1,
        };
        assert_eq!(
            m.describe(),
            "AMD EPYC, 2 CPUs, LLC 32 MiB, Linux 6.18.44, virtual machine, 1 NUMA node"
        );
        assert!(!Machine::read().describe().is_empty());
    }

    #[test]
    fn the_hold_timer_sees_every_hold_with_its_list_work() {
        let mut bench = HoldBench::new(&Clock::new()).unwrap();
        bench.round(1).unwrap();
        let fit = bench.finish(true).unwrap();
        assert!(fit.holds > 100 && fit.buckets >= 2, "{fit:?}");
        assert!(fit.max_list_ops > 100, "long drains were driven: {}", fit.max_list_ops);
        for k in &fit.by_kind {
            assert!(k.holds > 0, "{:?} holds were driven", k.kind);
        }
    }

    #[test]
    fn the_chase_visits_every_line_of_each_region_in_one_cycle() {
        let b = LatencyBench::new(&Plan::QUICK);
        for r in &b.regions[..2] {
            let (mut i, mut seen) = (0, vec![false; r.len()]);
            for _ in 0..r.len() {
                assert!(!seen[i], "a line visited twice before the cycle closed");
                seen[i] = true;
                i = r[i].next;
            }
            assert_eq!(i, 0, "one cycle through every line");
        }
        // The paged chase: every line once, up each page, pages in some order.
        let (mut i, mut seen) = (0, vec![false; b.paged.len()]);
        for _ in 0..b.paged.len() {
            assert!(!seen[i], "a line visited twice before the cycle closed");
            seen[i] = true;
            let next = b.paged[i].next;
            if i % PAGE_LINES != PAGE_LINES - 1 {
                assert_eq!(next, i + 1, "up the page");
            } else {
                assert_eq!(next % PAGE_LINES, 0, "to the first line of a page");
            }
            i = next;
        }
        assert_eq!(i, 0, "one cycle through every line");
        let mut b = b;
        let m = b.round(&Plan { chase_windows: 2, ..Plan::QUICK }, &Clock::new(), 0.0);
        assert!(m.iter().all(|x| x.is_finite() && *x > 0.0), "{m:?}");
        let f = b.finish();
        assert_eq!(f.lanes.len(), LANES.len());
        assert!(f.lanes.iter().all(|(_, s)| s.n == 1 && s.median.is_finite()), "{:?}", f.lanes);
        // One round of one window per count: the figure is one lane's ns per load over the
        // best count's (at least 1: one lane overlaps itself).
        let best = f.lanes.iter().map(|(_, s)| s.median).fold(f64::INFINITY, f64::min);
        assert_eq!(f.in_flight.n, 1);
        assert!(f.paged.n == 2 && f.paged.median.is_finite(), "{:?}", f.paged);
        assert_eq!(f.in_flight.median, (f.lanes[0].1.median / best).max(1.0), "{:?}", f.lanes);
    }

    #[test]
    fn the_pageset_loop_takes_no_zone_lock() {
        let clk = Clock::new();
        let mut bench = PcpBench::new().unwrap();
        bench.round(100, &clk, 0.0).unwrap();
        bench.round(100, &clk, 0.0).unwrap();
        let p = bench.finish().unwrap();
        assert_eq!(p.zone_locks_taken, 0);
        assert!(p.batch > WINDOW as i32 && p.alloc.n == 200, "{p:?}");
    }

    #[test]
    fn the_slab_loop_takes_only_the_fast_path() {
        let clk = Clock::new();
        let pa = SlabBench::allocator().unwrap();
        let mut bench = SlabBench::new(&pa).unwrap();
        bench.round(100, &clk, 0.0).unwrap();
        let s = bench.finish().unwrap();
        assert_eq!(s.slab_page_calls, 0);
        assert!(s.objects_per_slab as usize >= WINDOW && s.alloc.n == 100, "{s:?}");
    }
}

//! What a calibration becomes: the cost profile's figures (a row per field, with its spread
//! and what the model does with it), the memory hierarchy measured on this host, and the
//! machine file of this host (`calibrate --machine-out`). The command (`cmd/calibrate.rs`)
//! measures through [`crate::calibrate`], then writes and prints these.

use anyhow::{Context, Result};

use crate::calibrate::{Calibration, Summary};
use crate::machine::hierarchy::{Hierarchy, Level, Sourced};
use crate::machine::{Arch, CacheLevel, Machine, NodeSpec};
use crate::model::cost::CostProfile;
use crate::model::lines::{CacheMap, LineCache, Prices};
use pagealloc::{CpuId, MetaLine, Pfn};

/// One row of the table: a profile field, its figure and what the model does with it.
pub struct Row {
    pub field: &'static str,
    /// The value written (clamped at 0 for differences that came out negative).
    pub value: f64,
    pub spread: Option<Summary>,
    /// The raw value when it was clamped.
    pub clamped_from: Option<f64>,
    pub used_for: &'static str,
}

/// The profile's rows: each field's figure, its spread and what the model does with it.
pub fn rows(c: &Calibration) -> Vec<Row> {
    let row = |field, s: Summary, used_for| Row {
        field,
        value: round1(s.median.max(0.0)),
        spread: Some(s),
        clamped_from: (s.median < 0.0).then_some(s.median),
        used_for,
    };
    let list_op = Summary { median: c.holds.per_op_ns, ..c.holds.round_slopes };
    // The per-pass fits' spread through the same floor (monotone, so it maps quantiles to
    // quantiles); the notes print the hook-visible part before the floor.
    let vis = c.hook_visible_base();
    let lock = c.lock_uncontended.median;
    let base_spread = Summary {
        median: c.zone_lock_base(),
        p10: vis.p10.max(0.0) + lock,
        p90: vis.p90.max(0.0) + lock,
        n: vis.n,
    };
    vec![
        row("pcp_alloc_ns", c.pcp.alloc, "every allocation call, outside any zone lock"),
        row("pcp_free_ns", c.pcp.free, "every free call, outside any zone lock"),
        Row {
            field: "zone_lock_base_ns",
            value: round1(c.zone_lock_base()),
            spread: Some(base_spread),
            clamped_from: None,
            used_for: "every zone-lock hold, fixed part",
        },
        row("zone_list_op_ns", list_op, "each free-list insertion/removal under the lock"),
        row("slab_alloc_ns", c.slab.alloc, "every slab object allocation (model workloads)"),
        row("slab_free_ns", c.slab.free, "every slab object free (model workloads)"),
    ]
}

/// The hierarchy's figures this machine measured, as (figure, value, spread, how).
pub fn hierarchy_rows(c: &Calibration) -> Vec<(Level, f64, Summary, String)> {
    let lat = &c.latency;
    let kib = |b: u64| b >> 10;
    let gbps = |s: Summary| {
        // A page of 4096 bytes in t ns is 4096 / t GB/s; the spread maps inversely.
        let r = |ns: f64| round2(4096.0 / ns);
        (r(s.median), Summary { median: r(s.median), p10: r(s.p90), p90: r(s.p10), n: s.n })
    };
    let (l2, l2_s) = gbps(c.touch.l2);
    let (c2c, c2c_s) = gbps(c.c2c_touch.page);
    let (hot, hot_s) = gbps(c.touch.hot);
    let (cold, cold_s) = gbps(c.touch.cold);
    let run = |level: Level, s: Summary, of: &str| {
        let (v, spread) = gbps(s);
        let how = format!(
            "{of}, written {} contiguous pages ({} KiB) to one `fill` (one fast string, as the \
             kernel copies a packet's data) instead of one page to a `fill`; not yet used by \
             the model",
            crate::calibrate::RUN_PAGES,
            crate::calibrate::RUN_PAGES * 4
        );
        (level, v, spread, how)
    };
    let runs = [
        run(Level::WriteL2Run, c.touch.l2_run, "as write_l2_gbps"),
        run(Level::WriteC2cRun, c.c2c_touch.run, "as write_c2c_gbps"),
        run(Level::WriteLlcRun, c.touch.hot_run, "as write_llc_gbps"),
    ];
    let mut rows = vec![
        (
            Level::L2Hit,
            round1(lat.l2.median),
            lat.l2,
            format!("pointer chase over a {} KiB region (half the L2)", kib(lat.bytes[0])),
        ),
        (
            Level::LlcHit,
            round1(lat.llc.median),
            lat.llc,
            format!("pointer chase over a {} KiB region", kib(lat.bytes[1])),
        ),
        (
            Level::C2cSameLlc,
            round1(c.handoff.flag_one_way.median),
            c.handoff.flag_one_way,
            "a flag ping-ponged by two threads, one way".into(),
        ),
        (
            Level::DramLocal,
            round1(lat.dram.median),
            lat.dram,
            format!(
                "pointer chase over a {} MiB region (4 KiB pages: TLB misses included)",
                lat.bytes[2] >> 20
            ),
        ),
        (
            Level::HandoffSameLlc,
            round1(c.handoff.handoff.median.max(0.0)),
            c.handoff.handoff,
            "two threads taking turns at a chain of 16 spin locks, per acquisition less an \
             uncontended lock+unlock"
                .into(),
        ),
        (
            Level::WriteL2,
            l2,
            l2_s,
            format!(
                "4 KiB page writes over a {} KiB region (1/4 of the {} KiB L2), written over \
                 and over",
                c.touch.l2_region_bytes >> 10,
                c.touch.l2_bytes >> 10
            ),
        ),
        (
            Level::WriteC2c,
            c2c,
            c2c_s,
            format!(
                "two threads taking turns writing a {} KiB region whole, the same pages; each \
                 page written is one the other CPU wrote a moment ago",
                c.c2c_touch.region_bytes >> 10
            ),
        ),
        (
            Level::WriteLlc,
            hot,
            hot_s,
            format!(
                "4 KiB page writes over a {} KiB region (4 L2s, at most 1/4 of the LLC)",
                c.touch.hot_bytes >> 10
            ),
        ),
        (
            Level::WriteDram,
            cold,
            cold_s,
            format!(
                "4 KiB page writes over a {} MiB region after an eviction",
                c.touch.cold_bytes >> 20
            ),
        ),
    ];
    rows.extend(runs);
    rows.extend([
        (
            Level::WakeIdle,
            round1(c.wake.one_way.median),
            c.wake.one_way,
            "two threads handing a turn back and forth, each blocked on its own condition \
             variable until the other wakes it (the real runner's wake), half a round trip"
                .into(),
        ),
        (
            Level::WakeCall,
            round1(c.wake.call.median),
            c.wake.call,
            "the same ping-pong: the waking thread's hand-over (lock, store, condition-variable \
             notify of the parked thread, unlock)"
                .into(),
        ),
        (Level::LlcUsable, round1(c.share.usable_mib.median), c.share.usable_mib, share_how(c)),
        (Level::MissSlots, c.latency.in_flight.median.round(), c.latency.in_flight, lanes_how(c)),
    ]);
    if let Some(row) = prefetch_row(c) {
        rows.push(row);
    }
    rows
}

/// A chase up each page that costs less than this share of a random one is one the core's
/// prefetchers fetched ahead: the TLB misses the paged chase saves (one per 64 loads against
/// nearly one per load) are a part of a memory load, not most of it.
pub const PREFETCHED_BELOW: f64 = 0.5;

/// The streams the model's streamer follows on a host whose prefetchers were seen: the count
/// the Intel optimisation manual gives for its L2 streamer (not measured here; AMD's guides
/// name their L2 stream prefetcher without a count).
pub const HOST_STREAMS: f64 = 32.0;

/// `prefetch_streams`, when the chase up each page showed the host's prefetchers at work.
fn prefetch_row(c: &Calibration) -> Option<(Level, f64, Summary, String)> {
    let lat = &c.latency;
    let ratio = lat.paged.median / lat.dram.median;
    (ratio < PREFETCHED_BELOW).then(|| {
        (
            Level::PrefetchStreams,
            HOST_STREAMS,
            lat.paged,
            format!(
                "a pointer chase up the 64 lines of each 4 KiB page, the pages in random order, \
                 over the {} MiB region took {:.1} ns a load against {:.1} ns in random line \
                 order ({:.2}; below {PREFETCHED_BELOW} the cores' prefetchers fetch a page's \
                 lines ahead), so hardware prefetchers are modelled; the count, {HOST_STREAMS}, \
                 is the L2 streamer's in the Intel 64 and IA-32 Architectures Optimization \
                 Reference Manual (order no. 248966), not measured; the spread below is the \
                 paged chase's ns a load",
                lat.bytes[2] >> 20,
                lat.paged.median,
                lat.dram.median,
                ratio
            ),
        )
    })
}

/// What the model's line model charges a load of `calibrate`'s chase up each 4 KiB page
/// ([`LatencyFigures::paged`](crate::calibrate::LatencyFigures)) on this host's measured
/// hierarchy with hardware prefetchers on, ns: its L2 hit plus what the line costs beyond it,
/// each load waiting for the last (no overlap), in the second pass over the region (the first
/// brings every line in; by the second the region has pushed them out of the caches, as the
/// chase's cycle does). Set beside the measured figure, it says whether the model's prefetcher
/// rules are more or less eager than this host's.
pub fn model_paged_chase_ns(c: &Calibration) -> f64 {
    let mut h = Hierarchy::default();
    for (level, value, _, _) in hierarchy_rows(c) {
        h.set(level, Sourced { value, source: "calibrate".into(), quantiles: Vec::new() });
    }
    let prices = Prices::of(&h);
    let lines = (c.latency.bytes[2] / 64).max(1);
    let map = CacheMap {
        cpu_node: vec![0],
        cpu_llc: vec![0],
        cpu_l2: vec![0],
        llc_node: vec![0],
        llc_lines: vec![c.touch.llc_bytes / 64],
        l2_lines: vec![c.touch.l2_bytes / 64],
        frames_per_line: 1,
        prefetch_streams: HOST_STREAMS as u32,
    };
    let cache = LineCache::new(map, lines, &[(0, lines, 0)]);
    let mut ps = 0;
    for pass in 0..2 {
        for l in 0..lines {
            let line = MetaLine::Frame(Pfn(l));
            let beyond = if cache.access_in_l2(CpuId(0), line) {
                0
            } else {
                match cache.access_beyond_l2_hw(CpuId(0), line) {
                    (found, false) => prices.of_access(found),
                    (found, true) => prices.of_streamed(found),
                }
            };
            if pass == 1 {
                ps += prices.line_l2 + beyond;
            }
        }
    }
    ps as f64 / lines as f64 / 1000.0
}

/// How the misses in flight were found, with the lanes' figures.
fn lanes_how(c: &Calibration) -> String {
    let lat = &c.latency;
    let per: Vec<String> = lat.lanes.iter().map(|(k, s)| format!("{k}: {:.1}", s.median)).collect();
    format!(
        "independent pointer chases over the {} MiB region at once (lmbench's par_mem \
         method), ns per load by lanes ({}, medians); per round, one lane's latency over the \
         ns per load at the best count",
        lat.bytes[2] >> 20,
        per.join(", ")
    )
}

/// How the usable LLC was found, with the sweep's figures: what a page write cost over each
/// region, and the two ends of the scale.
fn share_how(c: &Calibration) -> String {
    let s = &c.share;
    let costs: Vec<String> = s
        .sizes
        .iter()
        .zip(&s.ns)
        .filter(|(_, ns)| ns.is_finite())
        .map(|(&b, ns)| format!("{}: {ns:.0}", crate::machine::fmt_bytes(b)))
        .collect();
    format!(
        "page writes in shuffled page order over regions growing by 1.5x ({} ns a page, \
         medians); per sweep, the region where a page write costs half-way between the \
         LLC-resident ({:.0} ns) and the cold one ({:.0} ns), interpolated: where about half \
         the pages are still cached. sysfs reports a {} MiB LLC",
        costs.join(", "),
        c.touch.hot.median,
        c.touch.cold.median,
        s.llc_bytes >> 20
    )
}

/// To 0.01.
pub fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// To 0.1 ns: the spreads are wider than that.
pub fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// The profile the figures make.
pub fn profile(c: &Calibration, method: String) -> CostProfile {
    let rows = rows(c);
    let v = |name: &str| rows.iter().find(|r| r.field == name).map_or(f64::NAN, |r| r.value);
    CostProfile {
        machine: c.machine.describe(),
        method,
        pcp_alloc_ns: v("pcp_alloc_ns"),
        pcp_free_ns: v("pcp_free_ns"),
        zone_lock_base_ns: v("zone_lock_base_ns"),
        zone_list_op_ns: v("zone_list_op_ns"),
        slab_alloc_ns: v("slab_alloc_ns"),
        slab_free_ns: v("slab_free_ns"),
    }
}

/// This host as a machine file: one node with its CPUs, memory (MemTotal, whole MiB) and
/// caches (sysfs), and the hierarchy measured here.
///
/// # Errors
/// More than one NUMA node or LLC (the figures between them are not measured), or sysfs and
/// /proc do not describe the caches or the memory.
pub fn host_machine(c: &Calibration, date: &str, command: &str) -> Result<Machine> {
    let m = &c.machine;
    if m.nodes > 1 {
        anyhow::bail!(
            "--machine-out: this host has {} NUMA nodes; calibrate measures within one node \
             only, so write the machine file by hand (`pagealloc machines --help`) with the \
             figures printed here and sourced ones across the nodes",
            m.nodes
        );
    }
    let sysfs = std::path::Path::new("/sys/devices/system/cpu");
    let cpus = m.cpus as u32;
    let (_, llc_bytes, llc_sharers) = crate::cacheinfo::last_level(sysfs, 0)
        .context("--machine-out: sysfs does not describe CPU 0's caches")?;
    if (llc_sharers as u32) < cpus {
        anyhow::bail!(
            "--machine-out: the LLC is shared by {llc_sharers} of {cpus} CPUs; transfers \
             between LLCs are not measured, so write the machine file by hand"
        );
    }
    let level = |l: u32| {
        crate::cacheinfo::level(sysfs, 0, l)
            .map(|(bytes, n)| CacheLevel { bytes, shared_by: (n as u32).clamp(1, cpus) })
    };
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("--machine-out: no MemTotal in /proc/meminfo")?;
    let mut hierarchy = Hierarchy::default();
    for (level, value, spread, how) in hierarchy_rows(c) {
        let source = format!(
            "this host ({}), measured by `{command}` on {date}: {how}; median of {} windows \
             (p10..p90 {:.1}..{:.1})",
            m.describe(),
            spread.n,
            spread.p10,
            spread.p90
        );
        let quantiles = match level {
            Level::WakeIdle => c.wake.one_way_quantiles.iter().map(|&q| round1(q)).collect(),
            Level::WakeCall => c.wake.call_quantiles.iter().map(|&q| round1(q)).collect(),
            _ => Vec::new(),
        };
        hierarchy.set(level, Sourced { value, source, quantiles });
    }
    let machine = Machine {
        name: "host".into(),
        description: format!("this host as `pagealloc calibrate` measured it on {date}"),
        source: format!("/proc and sysfs of this host: {}", m.describe()),
        arch: if cfg!(target_arch = "aarch64") { Arch::Arm64 } else { Arch::X86_64 },
        nodes: vec![NodeSpec {
            cpus,
            memory_bytes: (kib >> 10) << 20,
            llc_bytes,
            llc_shared_by: cpus,
            l2: level(2),
            l1d: level(1),
        }],
        min_free_kbytes: None,
        watermark_scale_factor: None,
        frame_bytes: 16,
        assumptions: vec![
            "memory: MemTotal rounded down to a whole MiB, laid out from 0".into(),
            "frame_bytes 16: the library's own frames, as over the real runner's arena; 64 \
             prices a kernel's struct page instead"
                .into(),
        ],
        hierarchy: Some(hierarchy),
        file: None,
    };
    machine.validate().map_err(|e| anyhow::anyhow!("--machine-out: {e}"))?;
    Ok(machine)
}

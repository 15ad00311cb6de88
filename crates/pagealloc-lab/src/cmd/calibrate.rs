//! `pagealloc calibrate`: measure the model's cost profile and this machine's memory hierarchy
//! (the measuring is in [`crate::calibrate`]) and store them as TOML files the model loads —
//! the profile, and with `--machine-out` a machine file of this host — with a table of medians
//! and spreads for the reader.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::calibrate::{self, Calibration, Plan, Summary};
use crate::calibration::{
    hierarchy_rows, host_machine, model_paged_chase_ns, profile, round1, rows, PREFETCHED_BELOW,
};
use crate::machine::hierarchy::Level;
use crate::model::cost::CostProfile;

/// Arguments of `pagealloc calibrate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write the profile (TOML) to this file. Without it the TOML goes to stdout and the
    /// table to stderr, so `pagealloc calibrate > cost.toml` works.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// A short run (a second or two, few repetitions) that checks everything runs: the
    /// figures are rough and the profile says so.
    #[arg(long)]
    pub quick: bool,
    /// Print one JSON document (every figure with its spread, the fit, the checks and the
    /// profile) on stdout instead of the table (and of the TOML when there is no --out).
    #[arg(long)]
    pub json: bool,
    /// Also write a machine file of this host (CPUs, memory and caches from /proc and sysfs)
    /// whose [hierarchy] holds the figures measured here, each with its method: the model of
    /// this machine (`--machine FILE`), what `pagealloc validate` compares with real runs.
    /// One NUMA node and one LLC only: the figures across nodes and LLCs are not measured.
    #[arg(long, value_name = "FILE")]
    pub machine_out: Option<PathBuf>,
    /// Measure only the slab layer's fast path (`slab_alloc_ns`, `slab_free_ns`) and write
    /// them into the existing profile FILE, every other field and its header kept as they
    /// are (so profiles other work depends on do not move).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["out", "machine_out", "json"])]
    pub slab_only: Option<PathBuf>,
}

/// Text of `--help` after the options.
pub const AFTER_HELP: &str = "\
What is measured (release build, one median per field over many timed windows of >= 16 \
operations, the cost of one clock read taken off each window; every measurement runs a share \
of its work in each of 128 rounds, so all figures come from the same stretch of time).

The cost profile, the fixed work of the allocator's calls with their lines hot:
  pcp_alloc_ns, pcp_free_ns   order-0 alloc/free served by CPU 0's pageset, 1 GiB zone;
                              checked: the zone lock is never taken in the timed loop
  slab_alloc_ns, slab_free_ns object alloc/free of a warm 192-byte slab cache on CPU 0
                              (pagealloc-slab's fast path, one active slab); checked: every
                              timed call took the fast path, no slab came or went.
                              --slab-only FILE measures just these into FILE
  zone_lock_base_ns,          every zone-lock hold of a program of refills, drains and
  zone_list_op_ns             order-4..6 allocations on 16-32 MiB zones (metadata in the
                              private cache), timed in the event hooks; least squares
                              (relative residuals) held_ns = a + b * list_ops on the medians
                              per list-op bucket and kind of hold; base = max(0, a - one
                              clock read, the trimmed mean of every read pair: a clock of
                              10 ns steps has a median that flips between two steps) +
                              uncontended lock+unlock

This machine's memory hierarchy (the [hierarchy] of --machine-out):
  l2_hit_ns, llc_hit_ns,      pointer chases, 1024 dependent loads per window, through the
  dram_local_ns               lines of regions half the L2, 4 L2s (at most 1/4 of the LLC)
                              and 8 LLCs (at least 256 MiB; 4 KiB pages, TLB misses included)
  handoff_same_llc_ns         two threads (unpinned; repetitions where they shared a CPU are
                              dropped) take turns at walking a chain of 16 spin locks; per
                              acquisition of a lock the other released last, minus the
                              uncontended lock+unlock
  c2c_same_llc_ns             the same threads ping-pong a flag: one way
  write_l2_gbps,              4 KiB page writes in shuffled order: a region 1/4 of the L2
  write_llc_gbps,             (a page the core wrote a moment ago), one of 4 L2s (at most
  write_dram_gbps             1/4 of the LLC: a VM is told the host's whole LLC but gets a
                              share), and one 8 LLCs large written once per pass after an
                              eviction
  write_c2c_gbps              the same threads take turns writing the L2 region whole: a
                              page the other CPU wrote a moment ago (a receiver's copy of
                              what a sender built). Used beside write_l2_gbps
  write_l2_run_gbps,          the L2, c2c and LLC page writes again, 4 contiguous pages
  write_c2c_run_gbps,         (16 KiB) to one fill: one fast string over several pages, as
  write_llc_run_gbps          the kernel copies a packet's data (it clears a page 4 KiB at
                              a time). Not yet used by the model
  wake_idle_ns                two threads hand a turn back and forth, each blocked on its
                              own condition variable until the other wakes it (the real
                              runner's wake-up; between turns a CPU is idle): half a round
                              trip. The model of this host starts a woken blocked CPU no
                              sooner than this after the step that woke it
  wake_call_ns                the same ping-pong: the waking thread's hand-over (its notify
                              of the parked thread), charged to the waking CPU per wake
  llc_usable_mib              how much of the LLC this host's CPUs get (a VM shares its
                              host's): every 16th round, page writes over regions from 2 L2s
                              up to the LLC, each 1.5x the last, written once to warm and
                              once timed; the region where a page costs half-way between
                              write_llc and write_dram, interpolated; median of the sweeps.
                              The model's caches hold no more than this

Regenerate the lab's default profile (and the lab-2cpu machine's figures) with
  cargo run --release -p pagealloc-lab -- calibrate \\
      --out crates/pagealloc-lab/data/cost-default.toml --machine-out host.toml";

/// The `method` field: command line, build, repetitions, date.
fn method(c: &Calibration, command: &str, date: &str) -> String {
    let p = &c.plan;
    format!(
        "`{command}`, {} build{}, {date}: {} rounds, each running every measurement in turn; \
         medians of {} pageset windows of {w} allocs + {w} frees, {} zone-lock holds from {} \
         passes (fit on {} bucket medians, R² {:.3}), {} handoff repetitions of {} timed \
         walks of a {w}-lock chain, {} hot and {} cold page-write windows of {w} pages; one \
         clock read (median {:.1} ns) taken off each window",
        if cfg!(debug_assertions) { "debug" } else { "release" },
        if p.quick { ", QUICK run (rough figures)" } else { "" },
        p.rounds,
        c.pcp.alloc.n,
        c.holds.holds,
        c.holds.round_slopes.n,
        c.holds.buckets,
        c.holds.r2,
        c.handoff.reps_kept,
        p.handoff_walks,
        c.touch.hot.n,
        c.touch.cold.n,
        c.timer_overhead.median,
        w = calibrate::WINDOW,
    )
}

/// `min..max` of per-round medians (NaNs, from rounds that measured nothing, left out).
fn range(v: &[f64]) -> String {
    let v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if v.is_empty() {
        "-".to_owned()
    } else {
        format!("{lo:.1}..{hi:.1}")
    }
}

/// The 10th and 90th percentiles of a figure's per-round medians when they lie more than
/// [`TWO_SPEEDS`] apart over at least 8 rounds (a quick run's two say nothing); else `None`.
fn two_speeds(rounds: &[f64]) -> Option<(f64, f64)> {
    let mut v: Vec<f64> = rounds.iter().copied().filter(|x| x.is_finite()).collect();
    if v.len() < 8 {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let (p10, p90) = (v[v.len() / 10], v[v.len() * 9 / 10]);
    (p90 > TWO_SPEEDS * p10).then_some((p10, p90))
}

/// How far apart a page write's rounds may spread before the table warns of two speeds. On
/// the lab's VM (2026-11-29) the L2, memory and c2c page writes' rounds spread by 1.02-1.14
/// (90th over 10th percentile) in two full calibrations, and the LLC's by 2.08 and 2.39: its
/// rounds ran at about 55 or about 120 ns a page.
const TWO_SPEEDS: f64 = 1.6;

/// The TOML file: a header saying where it comes from, then the profile.
fn render_toml(c: &Calibration, p: &CostProfile, date: &str, load: &str) -> Result<String> {
    let mut s = String::new();
    let _ =
        writeln!(s, "# A cost profile for the model: what each allocator primitive costs, in ns.");
    let _ = writeln!(s, "# Written by `pagealloc calibrate` on {date} on {}.", p.machine);
    let _ = writeln!(s, "# Load average (1/5/15 min) {load}.");
    let _ = writeln!(
        s,
        "# The library measured is the lab's build at {}: the fixed work is that code's, so \
         measure again when it changes.",
        crate::results::REVISION
    );
    let _ = writeln!(s, "# Regenerate with");
    let _ = writeln!(
        s,
        "#   cargo run --release -p pagealloc-lab -- calibrate --out crates/pagealloc-lab/data/cost-default.toml"
    );
    let _ = writeln!(s, "# Medians with their p10..p90 spread:");
    for r in rows(c) {
        match r.spread {
            Some(sp) => {
                let _ = writeln!(
                    s,
                    "#   {:<20} {:>8.1}  ({:.1}..{:.1})",
                    r.field, r.value, sp.p10, sp.p90
                );
            }
            None => {
                let _ = writeln!(s, "#   {:<20} {:>8.1}  (not measured)", r.field, r.value);
            }
        }
    }
    s.push_str(&toml::to_string(p).context("rendering the profile as TOML")?);
    Ok(s)
}

/// The table for the reader.
fn render_table(c: &Calibration, load_before: &str, load_after: &str, elapsed: f64) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "machine: {}", c.machine.describe());
    let _ = writeln!(
        s,
        "load average (1/5/15 min): {load_before} at start, {load_after} at the end; {:.1} s{}",
        elapsed,
        if c.plan.quick { " — QUICK RUN, rough figures" } else { "" }
    );
    let _ = writeln!(
        s,
        "{} build; one clock read = {:.1} ns (p10..p90 {:.1}..{:.1}), taken off every window\n",
        if cfg!(debug_assertions) { "debug" } else { "release" },
        c.timer_overhead.median,
        c.timer_overhead.p10,
        c.timer_overhead.p90
    );
    let _ = writeln!(
        s,
        "{:<20} {:>9} {:>17} {:>7}  used by the model for",
        "field", "value", "p10..p90", "n"
    );
    for r in rows(c) {
        let (spread, n) = match r.spread {
            Some(sp) => (format!("{:.1}..{:.1}", sp.p10, sp.p90), sp.n.to_string()),
            None => ("-".to_owned(), "-".to_owned()),
        };
        let _ =
            write!(s, "{:<20} {:>9.1} {:>17} {:>7}  {}", r.field, r.value, spread, n, r.used_for);
        if let Some(raw) = r.clamped_from {
            let _ = write!(s, " [measured {raw:.1}: below resolution, written as 0]");
        }
        s.push('\n');
    }
    let _ = writeln!(s, "\nthis machine's memory hierarchy (the [hierarchy] of --machine-out):");
    for (level, value, sp, how) in hierarchy_rows(c) {
        let unit = level.unit();
        let _ = writeln!(
            s,
            "{:<20} {:>9.1} {:>17} {:>7}  {unit}: {how}",
            level.key(),
            value,
            format!("{:.1}..{:.1}", sp.p10, sp.p90),
            sp.n
        );
        if level == Level::HandoffSameLlc && c.handoff.handoff.median < 0.0 {
            let _ = writeln!(
                s,
                "{:<20} [measured {:.1}: below resolution, written as 0]",
                "", c.handoff.handoff.median
            );
        }
    }
    let _ = writeln!(
        s,
        "{:<20} (not measured: a node's memory bandwidth, which a host's two CPUs cannot load; \
         the model then sets no shared limit)",
        Level::NodeRw.key()
    );
    let h = &c.holds;
    let _ = writeln!(s, "\nnotes:");
    let _ = writeln!(
        s,
        "- pageset: batch {}, high {} during the timed loop; zone lock taken {} times in it \
         (must be 0)",
        c.pcp.batch, c.pcp.high, c.pcp.zone_locks_taken
    );
    let vis = c.hook_visible_base();
    let _ = writeln!(
        s,
        "- zone lock: {} holds (1..{} list ops), bucket medians per kind of hold ({} points) \
         fitted with relative least squares: held_ns = {:.1} + {:.2} x list_ops, R² {:.4}; \
         spreads over {} per-pass fits",
        h.holds, h.max_list_ops, h.buckets, h.intercept_ns, h.per_op_ns, h.r2, h.round_slopes.n
    );
    let _ = writeln!(
        s,
        "  base = max(0, {:.1} - {:.1} clock read = {:.1}{}) + {:.1} uncontended lock+unlock; \
         the part the hooks see was {:.1}..{:.1} (p10..p90) over the passes",
        h.intercept_ns,
        c.timer_mean,
        vis.median,
        if vis.median < 0.0 { ": below the clock's resolution, taken as 0" } else { "" },
        c.lock_uncontended.median,
        vis.p10,
        vis.p90
    );
    for k in &h.by_kind {
        let f = |x: Option<f64>, d: usize| x.map_or_else(|| "-".to_owned(), |v| format!("{v:.d$}"));
        let _ = writeln!(
            s,
            "    {:<12} {:>6} holds, median {:>5.0} list ops: {} + {} x list_ops (R² {})",
            k.kind.name(),
            k.holds,
            k.median_list_ops,
            f(k.intercept_ns, 1),
            f(k.per_op_ns, 2),
            f(k.r2, 3)
        );
    }
    let ho = &c.handoff;
    let _ = writeln!(
        s,
        "- handoff: threads not pinned (the lab has no pinning); {} of {} repetitions kept, {} \
         dropped because both threads were on one CPU; {:.1} ns per acquisition of a lock the \
         other thread released last, less {:.1} ns uncontended lock+unlock; for comparison a \
         flag-only ping-pong moves a line one way in {:.1} ns",
        ho.reps_kept,
        ho.reps_kept + ho.reps_same_cpu,
        ho.reps_same_cpu,
        ho.acquisition.median,
        c.lock_uncontended.median,
        ho.flag_one_way.median
    );
    if ho.unchecked {
        let _ = writeln!(
            s,
            "  QUICK RUN: no repetition ran on two CPUs throughout; all were kept unchecked"
        );
    }
    if ho.flag_one_way.median > c.latency.llc.median {
        let _ = writeln!(
            s,
            "  WARNING: a line took {:.1} ns from one CPU to the other, longer than a load from \
             the LLC ({:.1} ns): the two CPUs do not share the LLC they are said to share. A \
             virtual machine's host may have put them on cores apart (docs/performance.md, \
             \"Where the slow spells come from\"); the figures timed across two CPUs describe \
             that placement. Calibrate again once it reads below the LLC's",
            ho.flag_one_way.median, c.latency.llc.median
        );
    }
    // The two placements' figures differ eightfold on the lab's VM (26 and 200 ns); one
    // placement's windows spread by up to 2.1× in a quick run's eight: 4× tells them apart.
    if ho.flag_one_way.p90 > 4.0 * ho.flag_one_way.p10 {
        let _ = writeln!(
            s,
            "  WARNING: the ping-pong's repetitions spread from {:.1} ns (p10) to {:.1} ns \
             (p90): the host moved this machine's CPUs between cores that share a cache and \
             cores that do not while it ran, so the figures timed across two CPUs (c2c, \
             handoff, wake-up, c2c page writes) may mix two placements; calibrate again \
             (docs/performance.md, \"Where the slow spells come from\")",
            ho.flag_one_way.p10, ho.flag_one_way.p90
        );
    }
    let w = &c.wake;
    let _ = if w.unchecked {
        writeln!(
            s,
            "- wake-up: QUICK RUN: none of {} repetitions ran on two CPUs throughout; all kept",
            w.reps_kept
        )
    } else {
        writeln!(
            s,
            "- wake-up: {} of {} repetitions kept ({} dropped because both threads were on one \
             CPU); a busy host wakes a thread far sooner than an idle one (its CPU has not \
             halted), so measure it as quiet as the runs it will price",
            w.reps_kept,
            w.reps_kept + w.reps_same_cpu,
            w.reps_same_cpu
        )
    };
    let t = &c.touch;
    if t.cold.median < t.hot.median {
        let _ = writeln!(
            s,
            "- QUICK RUN: cold page writes measured below hot ones (a busy machine): \
             write_dram_gbps came out above write_llc_gbps"
        );
    }
    let _ = writeln!(
        s,
        "- page writes: L2 {} KiB ({}), region {} KiB; LLC {} MiB ({}); hot region {} KiB, \
         cold region {} MiB after writing {} MiB to evict; cold/hot = {:.1}",
        t.l2_bytes >> 10,
        if t.l2_from_sysfs { "sysfs" } else { "not in sysfs: guessed" },
        t.l2_region_bytes >> 10,
        t.llc_bytes >> 20,
        if t.llc_from_sysfs { "sysfs" } else { "not in sysfs: guessed" },
        t.hot_bytes >> 10,
        t.cold_bytes >> 20,
        t.evict_bytes >> 20,
        t.cold.median / t.hot.median
    );
    let lat = &c.latency;
    let paged = lat.paged.median / lat.dram.median;
    let _ = writeln!(
        s,
        "- prefetchers: a chase up each 4 KiB page took {:.1} ns a load against {:.1} at random \
         ({paged:.2}): {}; the model's prefetcher rules on these figures would charge it {:.1} \
         ns a load",
        lat.paged.median,
        lat.dram.median,
        if paged < PREFETCHED_BELOW {
            "the cores fetch a page's lines ahead, prefetch_streams written"
        } else {
            "no prefetching seen, prefetch_streams left out (the model prefetches nothing)"
        },
        model_paged_chase_ns(c)
    );
    let r = &c.rounds;
    let _ = writeln!(
        s,
        "- drift: per-round medians over the {} rounds: clock read {}, pcp alloc {}, pcp free \
         {}, handoff acquisition {}, hot write {}, other CPU's page write {}, cold write {}, L2 \
         load {}, LLC load {}, DRAM load {}",
        c.plan.rounds,
        range(&r.timer),
        range(&r.pcp_alloc),
        range(&r.pcp_free),
        range(&r.handoff_acquisition),
        range(&r.hot),
        range(&r.c2c),
        range(&r.cold),
        range(&r.latency.iter().map(|l| l[0]).collect::<Vec<_>>()),
        range(&r.latency.iter().map(|l| l[1]).collect::<Vec<_>>()),
        range(&r.latency.iter().map(|l| l[2]).collect::<Vec<_>>())
    );
    for (what, field, rounds) in [
        ("the L2", "write_l2_gbps", &r.l2),
        ("the LLC", "write_llc_gbps", &r.hot),
        ("memory", "write_dram_gbps", &r.cold),
    ] {
        if let Some((p10, p90)) = two_speeds(rounds) {
            let _ = writeln!(
                s,
                "- WARNING: the page writes to {what} ran at two speeds from round to round \
                 ({p10:.1} ns a page at the 10th percentile of the rounds, {p90:.1} at the 90th): \
                 {field}, the median of every window, describes whichever speed held most \
                 rounds, and the model's price of such a page with it (docs/performance.md, \
                 \"The real runner writes its pages whole\")"
            );
        }
    }
    if c.machine.nodes > 1 {
        let _ = writeln!(
            s,
            "- {} NUMA nodes: the figures across nodes (c2c_remote_ns, dram_remote_ns, \
             handoff_remote_ns) are not measured; take them from a published measurement of \
             this CPU",
            c.machine.nodes
        );
    }
    s
}

fn load_line() -> String {
    calibrate::loadavg()
        .map_or_else(|| "unknown".to_owned(), |l| format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2]))
}

/// `--slab-only FILE`: the slab figures measured into FILE's profile, the rest kept.
fn run_slab_only(path: &std::path::Path, plan: &Plan) -> Result<()> {
    let text = crate::input::read_text(path, crate::input::InputKind::Config)
        .with_context(|| format!("cannot read cost profile `{}`", path.display()))?;
    let mut p = CostProfile::parse(path, &text).or_else(|e| {
        // A profile from before the slab fields: parse it with placeholders, replaced below.
        let placeholder = format!("{text}\nslab_alloc_ns = 0.0\nslab_free_ns = 0.0\n");
        CostProfile::parse(path, &placeholder).map_err(|_| e)
    })?;
    let load = load_line();
    let (slab, timer) = calibrate::run_slab(plan, |what| eprintln!("calibrate: {what}"))?;
    let date = calibrate::today();
    let command = std::iter::once("pagealloc".to_owned())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ");
    p.slab_alloc_ns = round1(slab.alloc.median.max(0.0));
    p.slab_free_ns = round1(slab.free.median.max(0.0));
    p.method = format!(
        "{}; {}",
        strip_slab_method(&p.method),
        slab_method(&slab, plan, &command, &date, timer)
    );
    p.check().context("the measured profile fails its own checks")?;
    let mut out = String::new();
    for line in text.lines().take_while(|l| l.starts_with('#')) {
        if !line.starts_with("#   slab_") && !line.starts_with("# Slab figures") {
            out.push_str(line);
            out.push('\n');
        }
    }
    let _ = writeln!(out, "# Slab figures by `{command}` on {date} (load average {load}):");
    for (field, sp) in [("slab_alloc_ns", slab.alloc), ("slab_free_ns", slab.free)] {
        let _ = writeln!(
            out,
            "#   {field:<20} {:>8.1}  ({:.1}..{:.1})",
            round1(sp.median.max(0.0)),
            sp.p10,
            sp.p90
        );
    }
    out.push_str(&toml::to_string(&p).context("rendering the profile as TOML")?);
    std::fs::write(path, &out).with_context(|| format!("writing {}", path.display()))?;
    eprintln!(
        "calibrate: slab_alloc_ns {:.1} (p10..p90 {:.1}..{:.1}), slab_free_ns {:.1} ({:.1}..{:.1}); wrote {}",
        p.slab_alloc_ns, slab.alloc.p10, slab.alloc.p90, p.slab_free_ns, slab.free.p10, slab.free.p90,
        path.display()
    );
    Ok(())
}

/// The part of `method` that says how the slab figures were measured.
fn slab_method(
    slab: &calibrate::SlabFigures,
    plan: &Plan,
    command: &str,
    date: &str,
    timer: Summary,
) -> String {
    format!(
        "slab figures: `{command}`, {} build{}, {date}: medians of {} windows of {w} allocs + {w} \
         frees of a {}-byte cache's active slab ({} objects) in {} rounds, one clock read \
         (median {:.1} ns) taken off each window",
        if cfg!(debug_assertions) { "debug" } else { "release" },
        if plan.quick { ", QUICK run (rough figures)" } else { "" },
        slab.alloc.n,
        calibrate::SLAB_BENCH_SIZE,
        slab.objects_per_slab,
        plan.rounds,
        timer.median,
        w = calibrate::WINDOW,
    )
}

/// `method` without an earlier `--slab-only` run's part.
fn strip_slab_method(method: &str) -> &str {
    method.split("; slab figures: ").next().unwrap_or(method)
}

/// Run the command.
pub fn run(args: &Args) -> Result<()> {
    // Every output checked before minutes of measurement, so none is lost to a bad path.
    crate::output::check_optional(args.out.as_deref(), "the cost profile")?;
    crate::output::check_optional(args.machine_out.as_deref(), "the machine file")?;
    crate::output::check_optional(args.slab_only.as_deref(), "the cost profile")?;
    if let Some(path) = &args.slab_only {
        let plan = if args.quick { Plan::QUICK } else { Plan::FULL };
        return run_slab_only(path, &plan);
    }
    let m = measure(args.quick, args.out.as_deref(), args.machine_out.as_deref())?;
    if args.json {
        let doc = serde_json::json!({
            "calibration": m.calibration,
            "load_average": { "start": m.load_before, "end": m.load_after },
            "elapsed_s": m.elapsed_s,
            "profile": m.profile,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else if args.out.is_some() {
        print!("{}", m.table);
    } else {
        eprint!("{}", m.table);
        print!("{}", m.toml);
    }
    if let Some(path) = &args.out {
        eprintln!("calibrate: wrote {}", path.display());
    }
    Ok(())
}

/// A calibration of this host and what was made of it.
pub struct Measured {
    /// Every figure with its spread.
    pub calibration: Calibration,
    /// The cost profile made of it.
    pub profile: CostProfile,
    /// The profile as TOML, with its header.
    pub toml: String,
    /// The table `calibrate` prints.
    pub table: String,
    /// The load average at the start and at the end.
    pub load_before: String,
    /// See `load_before`.
    pub load_after: String,
    /// Wall time of the measurement, s.
    pub elapsed_s: f64,
}

/// Measure this host (`quick`: the short plan), with progress on stderr, and write the cost
/// profile to `out` and the machine file to `machine_out` where given (`validate
/// --calibrate` writes both and reads them back).
pub fn measure(
    quick: bool,
    out: Option<&std::path::Path>,
    machine_out: Option<&std::path::Path>,
) -> Result<Measured> {
    let plan = if quick { Plan::QUICK } else { Plan::FULL };
    if cfg!(debug_assertions) && !quick {
        eprintln!("calibrate: warning: a debug build measures the debug build, not the allocator");
    }
    let load_before = load_line();
    let started = Instant::now();
    let mut step_started = Instant::now();
    let mut steps = 0;
    let c = calibrate::run(&plan, |what| {
        if steps > 0 {
            eprintln!(" ({:.1} s)", step_started.elapsed().as_secs_f64());
        }
        steps += 1;
        eprint!("calibrate: {what} ...");
        let _ = std::io::stderr().flush();
        step_started = Instant::now();
    })?;
    eprintln!(" ({:.1} s)", step_started.elapsed().as_secs_f64());
    let elapsed_s = started.elapsed().as_secs_f64();
    let load_after = load_line();

    let date = calibrate::today();
    let command = std::iter::once("pagealloc".to_owned())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ");
    let p = profile(&c, method(&c, &command, &date));
    p.check().context("the measured profile fails its own checks")?;
    let toml = render_toml(&c, &p, &date, &load_before)?;
    let table = render_table(&c, &load_before, &load_after, elapsed_s);

    if let Some(path) = out {
        std::fs::write(path, &toml).with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = machine_out {
        let m = host_machine(&c, &date, &command)?;
        let text = format!(
            "# This host as `pagealloc calibrate` measured it on {date} (load average {}).\n{}",
            load_before,
            m.to_toml()
        );
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("calibrate: wrote {}", path.display());
    }
    Ok(Measured { calibration: c, profile: p, toml, table, load_before, load_after, elapsed_s })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::{
        C2cTouchFigures, HandoffFigures, HoldFit, LatencyFigures, Machine as Host, PcpFigures,
        RoundMedians, ShareFigures, SlabFigures, TouchFigures, WakeFigures,
    };

    fn s(median: f64) -> Summary {
        Summary { median, p10: median * 0.9, p90: median * 1.1, n: 100 }
    }

    fn fake() -> Calibration {
        Calibration {
            plan: Plan::QUICK,
            timer_overhead: s(20.0),
            timer_mean: 20.0,
            pcp: PcpFigures {
                alloc: s(21.0),
                free: s(23.0),
                batch: 63,
                high: 200,
                zone_locks_taken: 0,
            },
            slab: SlabFigures {
                alloc: s(30.0),
                free: s(35.0),
                objects_per_slab: 21,
                slab_page_calls: 0,
            },
            lock_uncontended: s(8.0),
            holds: HoldFit {
                intercept_ns: 50.0,
                per_op_ns: 12.0,
                r2: 0.99,
                buckets: 30,
                holds: 5000,
                max_list_ops: 4000,
                round_intercepts: s(50.0),
                round_slopes: s(12.0),
                by_kind: Vec::new(),
                points: Vec::new(),
            },
            handoff: HandoffFigures {
                handoff: s(-3.0),
                acquisition: s(5.0),
                flag_one_way: s(90.0),
                reps_kept: 10,
                reps_same_cpu: 1,
                unchecked: false,
                pinned: false,
            },
            touch: TouchFigures {
                l2: s(40.0),
                l2_bytes: 2 << 20,
                l2_from_sysfs: true,
                l2_region_bytes: 512 << 10,
                l2_run: s(32.0),
                hot: s(100.0),
                hot_run: s(80.0),
                cold: s(600.0),
                llc_bytes: 32 << 20,
                llc_from_sysfs: true,
                hot_bytes: 8 << 20,
                cold_bytes: 64 << 20,
                evict_bytes: 64 << 20,
            },
            c2c_touch: C2cTouchFigures {
                page: s(64.0),
                run: s(45.0),
                region_bytes: 512 << 10,
                reps_kept: 2,
                reps_same_cpu: 0,
                unchecked: false,
            },
            share: ShareFigures {
                sizes: vec![4 << 20, 6 << 20, 9 << 20, 13 << 20],
                ns: vec![100.0, 120.0, 500.0, f64::NAN],
                usable_mib: s(6.5),
                llc_bytes: 32 << 20,
            },
            latency: LatencyFigures {
                l2: s(4.0),
                llc: s(12.0),
                dram: s(110.0),
                bytes: [256 << 10, 2 << 20, 256 << 20],
                lanes: vec![(1, s(110.0)), (8, s(14.0)), (16, s(11.0))],
                in_flight: s(10.0),
                paged: s(9.0),
            },
            wake: WakeFigures {
                one_way: s(4000.0),
                call: s(900.0),
                one_way_quantiles: (1..=19).map(|i| 3000.0 + 100.0 * f64::from(i)).collect(),
                call_quantiles: vec![900.0; 19],
                reps_kept: 2,
                reps_same_cpu: 0,
                unchecked: false,
            },
            rounds: RoundMedians {
                timer: vec![20.0, 30.0],
                pcp_alloc: vec![20.0, 22.0],
                pcp_free: vec![23.0, 23.0],
                slab_alloc: vec![30.0, 30.0],
                slab_free: vec![35.0, 35.0],
                handoff_acquisition: vec![f64::NAN, 5.0],
                l2: vec![40.0, 40.0],
                c2c: vec![64.0, f64::NAN],
                hot: vec![100.0, 100.0],
                cold: vec![600.0, 610.0],
                latency: vec![[4.0, 12.0, 110.0]; 2],
                wake: vec![4000.0, f64::NAN],
            },
            machine: Host {
                cpu_model: "Test CPU".into(),
                cpus: 2,
                llc_bytes: Some(32 << 20),
                kernel: "6.1".into(),
                virtual_machine: false,
                nodes: 2,
            },
        }
    }

    #[test]
    fn the_written_toml_loads_as_a_cost_profile() {
        let c = fake();
        let p = profile(&c, method(&c, "pagealloc calibrate --quick", "2026-01-01"));
        let text = render_toml(&c, &p, "2026-01-01", "0.10 0.20 0.30").unwrap();
        assert!(text.starts_with("# A cost profile"), "{text}");
        assert!(text.contains("Written by `pagealloc calibrate` on 2026-01-01 on Test CPU"));
        let build = format!("the lab's build at {}:", crate::results::REVISION);
        assert!(text.contains(&build), "{text}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cost.toml");
        std::fs::write(&path, &text).unwrap();
        let back = CostProfile::load(&path).unwrap();
        assert_eq!(back, p);
        // base = intercept − clock read + lock+unlock; a negative handoff is written as 0.
        assert_eq!(back.zone_lock_base_ns, 38.0);
        let mut c = fake();
        c.holds.intercept_ns = 15.0;
        assert_eq!(c.zone_lock_base(), 8.0, "the hook-visible part is floored at 0");
        assert_eq!(back.zone_list_op_ns, 12.0);
        assert!(back.method.contains("QUICK") && back.method.contains("2026-01-01"));
    }

    #[test]
    fn the_table_names_every_field_and_flags_clamping() {
        let t = render_table(&fake(), "0.1 0.2 0.3", "0.2 0.2 0.3", 1.5);
        let fields = [
            "pcp_alloc_ns",
            "pcp_free_ns",
            "zone_lock_base_ns",
            "zone_list_op_ns",
            "slab_alloc_ns",
            "slab_free_ns",
        ];
        for f in fields.into_iter().chain(
            Level::ALL
                .iter()
                .map(|l| l.key())
                .filter(|k| !k.contains("remote") && !k.contains("other_llc")),
        ) {
            assert!(t.contains(f), "{f} missing:\n{t}");
        }
        assert!(t.contains("written as 0"), "{t}");
        assert!(t.contains("not measured"), "two nodes:\n{t}");
        assert!(t.contains("QUICK RUN"), "{t}");
        assert!(t.contains("9.0 ns a load against 110.0 at random (0.08): the cores fetch"), "{t}");
        assert!(t.contains("pcp alloc 20.0..22.0") && t.contains("handoff acquisition 5.0..5.0"));
        assert!(!t.contains("moved this machine's CPUs"), "a tight ping-pong: {t}");
        // Windows from 25 to 200 ns: the host moved the CPUs apart during the calibration.
        let mut c = fake();
        c.latency.llc.median = 40.0;
        c.handoff.flag_one_way = Summary { median: 26.0, p10: 25.0, p90: 200.0, n: 100 };
        let t = render_table(&c, "0.1 0.2 0.3", "0.2 0.2 0.3", 1.5);
        assert!(t.contains("from 25.0 ns (p10) to 200.0 ns (p90)"), "{t}");
        assert!(t.contains("calibrate again"), "{t}");
        assert!(!t.contains("longer than a load from the LLC"), "26 ns against 40: {t}");
        // A whole calibration with them apart: every window slow, a line slower than the LLC.
        c.handoff.flag_one_way = Summary { median: 200.0, p10: 195.0, p90: 205.0, n: 100 };
        let t = render_table(&c, "0.1 0.2 0.3", "0.2 0.2 0.3", 1.5);
        assert!(t.contains("took 200.0 ns from one CPU to the other"), "{t}");
        assert!(t.contains("(40.0 ns)") && !t.contains("(p90)"), "{t}");
    }

    /// A page write whose rounds ran at two speeds is flagged; a steady one, or a quick run's
    /// two rounds, is not.
    #[test]
    fn the_table_flags_page_writes_that_ran_at_two_speeds() {
        let mut c = fake();
        let t = render_table(&c, "0.1 0.2 0.3", "0.2 0.2 0.3", 1.5);
        assert!(!t.contains("two speeds"), "two rounds say nothing: {t}");
        // The lab VM's full calibration at 13:23: a third of the rounds near 55 ns.
        c.rounds.hot = (0..128).map(|i| if i % 3 == 0 { 55.0 } else { 123.0 }).collect();
        c.rounds.l2 = (0..128).map(|i| 28.0 + f64::from(i % 3)).collect();
        c.rounds.cold = vec![f64::NAN; 128];
        let t = render_table(&c, "0.1 0.2 0.3", "0.2 0.2 0.3", 1.5);
        assert!(t.contains("to the LLC ran at two speeds"), "{t}");
        assert!(t.contains("(55.0 ns a page at the 10th percentile of the rounds, 123.0"), "{t}");
        assert!(t.contains("write_llc_gbps, the median"), "{t}");
        assert_eq!(t.matches("two speeds").count(), 1, "the L2's are steady: {t}");
        assert_eq!(two_speeds(&[50.0; 20]), None);
        assert_eq!(two_speeds(&[f64::NAN; 20]), None);
    }

    #[test]
    fn the_model_prices_the_paged_chase_by_its_prefetcher_rules() {
        // fake(): L2 hit 4 ns, DRAM 110 ns, pages written from DRAM at 4096 B / 600 ns. Per
        // page of 64 lines, each load pays the L2 hit; lines 0 and 2 wait for memory (a new
        // page, then the step that sets the direction), the odd lines came as pairs, and
        // lines 4, 6, …, 62 (30) were on their way: a 64th of a page from DRAM each.
        let dram = 110.0 - 4.0;
        let streamed = 4096.0 / 6.83 / 64.0 - 4.0;
        let want = (64.0 * 4.0 + 2.0 * dram + 30.0 * streamed) / 64.0;
        let got = model_paged_chase_ns(&fake());
        assert!((got - want).abs() < 0.01, "{got} against {want}");
    }

    #[test]
    fn the_hierarchy_figures_carry_their_method_and_convert_page_writes_to_rates() {
        let rows = hierarchy_rows(&fake());
        let get = |l: Level| rows.iter().find(|r| r.0 == l).unwrap();
        // 4096 bytes in 100 ns = 40.96 GB/s; in 600 ns = 6.83 GB/s.
        assert_eq!(get(Level::WriteLlc).1, 40.96);
        assert_eq!(get(Level::WriteC2c).1, 64.0, "4096 bytes in 64 ns");
        assert!(get(Level::WriteC2c).3.contains("the other CPU wrote a moment ago"));
        assert_eq!(get(Level::WriteDram).1, 6.83);
        // The run variants: 4096 bytes in 32, 45 and 80 ns of a page written in runs.
        assert_eq!(get(Level::WriteL2Run).1, 128.0);
        assert_eq!(get(Level::WriteC2cRun).1, 91.02);
        assert_eq!(get(Level::WriteLlcRun).1, 51.2);
        assert!(get(Level::WriteC2cRun).3.starts_with("as write_c2c_gbps, written 4 contiguous"));
        assert!(get(Level::WriteLlcRun).3.contains("not yet used by the model"));
        assert_eq!(get(Level::DramLocal).1, 110.0);
        // A handoff below the clock's resolution is written as 0.
        assert_eq!(get(Level::HandoffSameLlc).1, 0.0);
        assert!(get(Level::L2Hit).3.contains("256 KiB"));
        // A chase up each page at 9 ns a load against 110 at random: prefetchers seen.
        assert_eq!(get(Level::PrefetchStreams).1, 32.0);
        assert!(get(Level::PrefetchStreams).3.contains("9.0 ns a load against 110.0"));
        // At 60 ns (0.55 of the random chase) they are not, and the figure is left out.
        let mut slow = fake();
        slow.latency.paged.median = 60.0;
        assert!(hierarchy_rows(&slow).iter().all(|r| r.0 != Level::PrefetchStreams));
        // A two-node host gets no machine file: the remote figures are not measured.
        let e = host_machine(&fake(), "2026-01-01", "pagealloc calibrate").unwrap_err();
        assert!(e.to_string().contains("2 NUMA nodes"), "{e}");
    }
}

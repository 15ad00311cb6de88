//! The metrics of a model run, named as the seed tables name them, with unit and direction.
//!
//! The runner's own metrics are computed here from its outcome; a workload's own (build time,
//! throughput, latencies) come from the workload, and get their unit and direction from
//! [`workload_metric_meta`].

use pagealloc::{Counter, MigrateType};

use crate::mmtests::Better;
use crate::model::lines::Found;
use crate::model::sink::HeldPart;
use crate::model::RunOutcome;

/// One named value of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    /// Name (seed 001's column names for the generic ones).
    pub name: String,
    /// Value.
    pub value: f64,
    /// Unit.
    pub unit: &'static str,
    /// Which way is better.
    pub better: Better,
    /// What it is, for `--help`-like listings and reports.
    pub doc: &'static str,
}

/// Unit, direction and meaning of workload `workload`'s metric `name`. The first metric of
/// each workload is its headline result; the others are diagnostics (counts of what the
/// workload did), listed as such.
pub fn workload_metric_meta(workload: &str, name: &str) -> (&'static str, Better, &'static str) {
    match (workload, name) {
        ("trunc", "elapsed") => ("ms", Better::Lower, "system time of rm's truncation"),
        ("kbuild", "build_time") => ("s", Better::Lower, "until the build's last job ends"),
        ("kbuild", "build_time_max") => ("s", Better::Lower, "until the last build ends"),
        ("kbuild", "memcg_reclaim") => ("passes", Better::Lower, "memcg reclaim passes"),
        ("kbuild", "memcg_reclaimed") => ("pages", Better::Lower, "pages memcg reclaim freed"),
        ("kbuild", "memcg_overruns") => ("", Better::Lower, "charges over the limit (memcg OOM)"),
        ("kbuild", "memcg_peak_mib") => ("MiB", Better::Lower, "largest cgroup usage"),
        ("netperf-sctp-stream-many", "score") => {
            ("Mbit/s", Better::Higher, "payload throughput of all pairs")
        }
        ("lmbench-unix", "score") => ("MB/s", Better::Higher, "bandwidth of all pairs"),
        ("netperf-tcp", "throughput") => ("Mbit/s", Better::Higher, "payload throughput"),
        ("page-fault1", "ops_per_s") => ("ops/s", Better::Higher, "page faults/s, all processes"),
        ("page-fault1", "per_process_ops_per_s") => ("ops/s", Better::Higher, "per process"),
        ("netperf-udp", "recv") => ("Mbit/s", Better::Higher, "payload received"),
        ("netperf-udp", "send") => ("Mbit/s", Better::Higher, "payload sent (dropped or not)"),
        ("vm-scalability", "throughput") => {
            ("KiB/s", Better::Higher, "bytes written (or read) / that time, summed over tasks")
        }
        ("vm-scalability", "free_ms") => ("ms", Better::Lower, "mean time of a task's munmap"),
        ("vm-scalability", "reclaimed_pages") => {
            ("pages", Better::Lower, "page cache the readers reclaimed")
        }
        ("vm-scalability", "min_free_margin") => {
            ("pages", Better::HigherAmean, "least free above MIN at an allocation")
        }
        ("iperf3-nic", "throughput") => {
            ("Gbit/s", Better::Higher, "TCP payload received, all streams")
        }
        ("hackbench", "time") => ("s", Better::Lower, "from the start signal to the last exit"),
        ("page-frag-rx", "throughput") => ("pkt/s", Better::Higher, "packets forwarded per second"),
        ("thpfioscale", "fault_base_us") => {
            ("us", Better::Lower, "2 MiB step faulted as base pages")
        }
        ("thpfioscale", "fault_huge_us") => ("us", Better::Lower, "2 MiB step faulted as a THP"),
        ("thpfioscale", "huge_pct") => ("%", Better::Higher, "2 MiB steps that got a huge page"),
        (_, "alloc_failures" | "pagecache_failures") => {
            ("", Better::Lower, "allocations that failed")
        }
        _ => ("", Better::Lower, "diagnostic count"),
    }
}

/// Is this one of the workload's results (not a diagnostic count)?
pub fn is_result(workload: &str, name: &str) -> bool {
    let (_, _, doc) = workload_metric_meta(workload, name);
    doc != "diagnostic count" && doc != "allocations that failed"
}

const MIB_PAGES: f64 = 256.0;

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// The metrics of a real run: [`of_outcome`]'s, less those the real runner cannot measure
/// (`cache_miss_pct` and the line and hand-off shares: it cannot tell where a line was), with
/// `elapsed_s` in wall time. Zone-lock waits and holds are timed by the allocator's clock.
pub fn of_real_outcome(workload: &str, o: &RunOutcome) -> Vec<Metric> {
    let mut v = of_outcome(workload, o);
    v.retain(|m| {
        !matches!(
            m.name.as_str(),
            "cache_miss_pct"
                | "lines_l2_pct"
                | "lines_remote_pct"
                | "lines_streamed_pct"
                | "lines_paired_pct"
                | "handoffs_remote_pct"
                | "hold_frame_lines_pct"
                | "hold_fixed_pct"
                | "hold_lines"
                | "hold_lines_l2_pct"
                | "hold_lines_node_pct"
                | "hold_lines_remote_pct"
                | "hold_lines_dram_pct"
        )
    });
    for m in &mut v {
        if m.name == "elapsed_s" {
            m.doc = "wall time of the run";
        }
    }
    v
}

/// Every metric of a run: the workload's, then the runner's.
pub fn of_outcome(workload: &str, o: &RunOutcome) -> Vec<Metric> {
    let mut v: Vec<Metric> = o
        .workload
        .iter()
        .map(|(name, value)| {
            let (unit, better, doc) = workload_metric_meta(workload, name);
            Metric { name: name.clone(), value: *value, unit, better, doc }
        })
        .collect();
    let e = &o.events;
    let extfrag = |mt| e.get(Counter::extfrag(mt, true)) as f64;
    let lines: u64 = o.lines_found.iter().sum();
    let found = |f: Found| o.lines_found[f as usize];
    let held_lines: u64 = o.held_lines.iter().sum();
    let held_all: u64 = o.held_parts.iter().sum();
    let held = |fs: &[Found]| pct(fs.iter().map(|&f| o.held_lines[f as usize]).sum(), held_lines);
    let generic = [
        ("elapsed_s", o.elapsed_ps as f64 / 1e12, "s", Better::Lower, "virtual time of the run"),
        (
            "zone_lock_pct",
            o.zone_lock_pct(),
            "%",
            Better::Lower,
            "zone-lock waiting / CPU time (the seeds' \"zone lock%\")",
        ),
        (
            "free_high",
            e.get(Counter::DrainFreeHigh) as f64,
            "drains",
            Better::Lower,
            "pageset drains triggered by free_high",
        ),
        (
            "alloc_zone",
            e.get(Counter::PcpRefillPages) as f64,
            "pages",
            Better::Lower,
            "pages moved from the zone into pagesets (seed 001's alloc_zone)",
        ),
        (
            "cache_miss_pct",
            o.cold_touch_pct(),
            "%",
            Better::Lower,
            "cold page touches / all touches: a proxy for the seeds' cache miss rate%",
        ),
        (
            "pcp_peak_mib",
            o.pcp_peak_pages as f64 / MIB_PAGES,
            "MiB",
            Better::Lower,
            "most memory held by all pagesets at a tick",
        ),
        (
            "pcp_end_mib",
            o.pcp_end_pages as f64 / MIB_PAGES,
            "MiB",
            Better::Lower,
            "memory held by the pagesets when the workload ended",
        ),
        (
            "pcp_final_mib",
            o.pcp_final_pages as f64 / MIB_PAGES,
            "MiB",
            Better::Lower,
            "memory held by the pagesets after the idle cool-down",
        ),
        (
            "zone_lock_acquire",
            e.get(Counter::ZoneLockAcquire) as f64,
            "",
            Better::Lower,
            "zone-lock acquisitions",
        ),
        (
            "zone_lock_held_pct",
            pct(o.lock_held_ps, o.busy_ps + o.lock_wait_ps),
            "%",
            Better::Lower,
            "time holding zone locks / CPU time",
        ),
        (
            "zone_lock_busy_pct",
            pct(o.lock_held_ps, o.elapsed_ps),
            "%",
            Better::Lower,
            "time zone locks are held / elapsed time: one busy lock's utilisation (the sum \
             over locks when several are busy)",
        ),
        (
            "extfrag_lt9",
            [MigrateType::Unmovable, MigrateType::Movable, MigrateType::Reclaimable]
                .into_iter()
                .map(extfrag)
                .sum(),
            "events",
            Better::Lower,
            "fallbacks that split a pageblock (extfrag events with fallback order < 9)",
        ),
        (
            "extfrag_lt9_unmovable",
            extfrag(MigrateType::Unmovable),
            "events",
            Better::Lower,
            "… of unmovable requests",
        ),
        (
            "extfrag_lt9_movable",
            extfrag(MigrateType::Movable),
            "events",
            Better::Lower,
            "… of movable requests",
        ),
        (
            "extfrag_lt9_reclaimable",
            extfrag(MigrateType::Reclaimable),
            "events",
            Better::Lower,
            "… of reclaimable requests",
        ),
        (
            "lines_l2_pct",
            pct(found(Found::L2), lines),
            "%",
            Better::Higher,
            "metadata line accesses that hit the CPU's own L2 (model)",
        ),
        (
            "lines_remote_pct",
            pct(found(Found::RemoteNode) + found(Found::DramRemote), lines),
            "%",
            Better::Lower,
            "metadata line accesses served from another node's cache or memory (model)",
        ),
        (
            "lines_streamed_pct",
            pct(o.lines_prefetched.0, lines),
            "%",
            Better::Higher,
            "metadata line accesses beyond the L2 that the core's streamer had on their way, \
             charged a share of a streamed transfer (model; machines with prefetch_streams)",
        ),
        (
            "lines_paired_pct",
            pct(o.lines_prefetched.1, lines),
            "%",
            Better::Higher,
            "pair lines the spatial prefetcher brought with a frame line from memory, per \
             metadata line access (model; machines with prefetch_streams)",
        ),
        (
            "handoffs_remote_pct",
            pct(o.handoffs[3], o.handoffs.iter().sum()),
            "%",
            Better::Lower,
            "zone-lock hand-offs between CPUs of different nodes (model)",
        ),
        (
            "hold_frame_lines_pct",
            pct(o.held_parts[HeldPart::FrameLines as usize], held_all),
            "%",
            Better::Lower,
            "zone-lock hold time spent on frame metadata lines (struct pages), of all holds: \
             the workload's calls and the vmstat ticks' (model)",
        ),
        (
            "hold_store_drain_pct",
            pct(o.held_parts[HeldPart::StoreDrain as usize], held_all),
            "%",
            Better::Lower,
            "zone-lock hold time after the hold's work, its stores still arriving: lines it \
             wrote without reading, whose transfers overlapped the work (model)",
        ),
        (
            "hold_fixed_pct",
            pct(o.held_parts[HeldPart::Fixed as usize], held_all),
            "%",
            Better::Lower,
            "zone-lock hold time spent on the cost profile's fixed work (model); the rest is \
             hand-offs and free-area and pageset lines",
        ),
        (
            "hold_lines",
            held_lines as f64,
            "lines",
            Better::Lower,
            "metadata lines touched (or prefetched) while a zone lock is held (model)",
        ),
        (
            "hold_lines_l2_pct",
            held(&[Found::L2]),
            "%",
            Better::Higher,
            "… found in the holder's own L2: nothing beyond the fixed work (model)",
        ),
        (
            "hold_lines_node_pct",
            held(&[Found::Llc, Found::SameLlcCore, Found::OtherLlc]),
            "%",
            Better::Lower,
            "… found in another cache of the holder's node (model)",
        ),
        (
            "hold_lines_remote_pct",
            held(&[Found::RemoteNode]),
            "%",
            Better::Lower,
            "… found in a cache of another node (model)",
        ),
        (
            "hold_lines_dram_pct",
            held(&[Found::DramLocal, Found::DramRemote]),
            "%",
            Better::Lower,
            "… found in no cache: from memory, local or remote (model)",
        ),
        (
            "alloc_failures",
            o.ops.alloc_failures as f64,
            "",
            Better::Lower,
            "allocation calls that failed",
        ),
    ];
    for (name, value, unit, better, doc) in generic {
        if !v.iter().any(|m| m.name == name) {
            v.push(Metric { name: name.to_string(), value, unit, better, doc });
        }
    }
    v
}

//! What `pagealloc validate` compares: each workload's plan on a small host, the metrics and
//! their tolerance, the model of this host, and one workload's model run beside its real runs
//! with the verdict. The command (`cmd/validate.rs`) runs the plans and prints.

use anyhow::Result;
use pagealloc::Counter;

use crate::machine::hierarchy::Level;
use crate::machine::{CacheLevel, Machine};
use crate::model::RunOutcome;
use crate::runs::RunResult;

/// Each workload's parameters on a small host (2 CPUs; thpfioscale's fio thread and THP thread
/// need 3), and its CPUs: (workload, CPUs, overrides, scale). netperf-sctp's receive buffer is
/// 512 KiB, out of the band where the 200 ms delayed-SACK timer can stall a pair: with the
/// default 208 KiB one pair on a host with slow wakes stalls several times a run on both
/// runners, and the count then says where the stalls fell, not what the allocator costs (real
/// runs of one host spread fifteenfold; docs/workloads.md section 2.3 gives the band).
pub(crate) const PLANS: &[(&str, u32, &[&str], f64)] = &[
    ("trunc", 2, &[], 0.1),
    ("page-fault1", 2, &["processes=2"], 0.1),
    ("kbuild", 2, &["mem_node=-1", "parallel=2"], 0.02),
    ("netperf-tcp", 2, &[], 0.2),
    ("netperf-sctp-stream-many", 2, &["pairs=1", "rcvbuf_bytes=524288"], 1.0),
    ("lmbench-unix", 2, &["pairs=1"], 0.2),
    ("page-frag-rx", 2, &["rx_cpus=1", "tx_cpus=1"], 0.2),
    ("thpfioscale", 3, &["fio_threads=1"], 0.1),
    ("hackbench", 2, &["groups=1", "fds=4"], 10.0),
    ("netperf-udp", 2, &[], 0.2),
    ("vm-scalability", 2, &["tasks=2"], 0.3),
    ("iperf3-nic", 2, &["streams=1"], 0.01),
];

/// How far the model may be from the real median on the judged metrics: ±15 %.
pub const TOLERANCE: f64 = 0.15;

/// The metrics compared: (name, judged for the verdict, what it is).
pub(crate) const METRICS: &[(&str, bool, &str)] = &[
    ("elapsed_s", true, "run time: virtual in the model, wall in the real runner, s"),
    ("calls", false, "allocator calls (allocations and frees)"),
    ("zone_lock_acquire", true, "zone-lock acquisitions while the workload ran"),
    ("zone_lock_held_pct", false, "time holding zone locks / CPU time, %"),
    ("zone_lock_pct", false, "time waiting for zone locks / CPU time, %"),
    ("refills", true, "pageset refills from the zone (rmqueue_bulk calls)"),
    ("alloc_zone", false, "pages moved from the zone into pagesets"),
    ("drains", true, "pageset drains of every reason while the workload ran"),
    ("free_high", false, "drains triggered by free_high"),
    (
        "cooldown_drains",
        false,
        "drains in the idle cool-down after the run (decay): how full the pagesets were at the \
         instant the run ended, a phase of the workload's loop that timing decides",
    ),
    ("cold_touches", false, "pages touched out of the LLC (model only)"),
    ("work_s", false, "work the steps asked for (`Ctx::work`), CPU-seconds"),
    (
        "beyond_work_ns",
        false,
        "busy time beyond the work asked, per step, ns: the model's charges for allocator calls, \
         touches and lock holds; the real step's wall time less its zone-lock waits and less \
         its own code up to the work it asked for (lab_ns)",
    ),
    (
        "touch_ns",
        false,
        "page touches and copies per step, ns (part of beyond_work_ns): the model's charges \
         at the machine's write rates; the real runner's wall time in them (one in 32 timed, fenced)",
    ),
    (
        "touch_ns_per_page",
        false,
        "page touches and copies per page written, ns: the same time over the pages instead \
         of the steps, so it compares the two runners' price of a page even where they split \
         the work into different numbers of steps",
    ),
    (
        "calls_ns",
        false,
        "allocator calls per step, ns (part of beyond_work_ns, zone-lock waits excluded): the \
         model's charges; the real runner's wall time in them (one in 32 timed, fenced)",
    ),
    (
        "rest_ns",
        false,
        "beyond_work_ns less touch_ns and calls_ns: in the model, the wake-up calls; in the real \
         step, its wake-ups, turn_ns and lab_over_ns, less what the core overlapped (negative \
         when the touches' line fills, timed whole, mostly completed while other code ran)",
    ),
    (
        "lab_ns",
        false,
        "per step, ns: the real step's own code (the workload's queues, locks and \
         counters, standing in for part of the kernel path its work stands for: the step's \
         wall time less its calls and touches at their timed samples' mean) counted as that \
         work, up to it, which the runner's spin then leaves out (real runner only)",
    ),
    (
        "lab_over_ns",
        false,
        "per step, ns (part of rest_ns): the real step's own code beyond the work it asked for, \
         a cost the model does not charge (real runner only)",
    ),
    (
        "turn_ns",
        false,
        "per step, ns (part of rest_ns): the real step's wait for its turn at a workload whose \
         CPUs take turns at one lock, a wait a kernel does not have; 0 in the model",
    ),
    (
        "wakes_per_kcall",
        false,
        "wakes of a blocked CPU per 1000 allocator calls: how often a step woke a CPU that \
         had parked (on the real runner, a parked thread's wake-up)",
    ),
    (
        "idle_pct",
        false,
        "CPU time neither busy nor waiting for a zone lock (blocked, asleep, or done early), % \
         of elapsed × CPUs",
    ),
];

/// The parts a step's busy time beyond its work is split into, per step, on both runners.
pub(crate) const STEP_PARTS: [&str; 3] = ["touch_ns", "calls_ns", "rest_ns"];

/// The pageset drain counters, every reason.
const DRAINS: [Counter; 6] = [
    Counter::DrainHigh,
    Counter::DrainFreeHigh,
    Counter::DrainBelowHigh,
    Counter::DrainReclaim,
    Counter::DrainDecay,
    Counter::DrainRemote,
];

/// The value of compared metric `name` in `r` (NaN: not measured by that runner). The
/// allocator's counters are those of the run itself, before the idle cool-down, except
/// `cooldown_drains`.
pub(crate) fn value(name: &str, r: &RunResult, real: bool) -> f64 {
    let e = &r.outcome.events_in_run;
    let metric = |n: &str| r.metrics.iter().find(|m| m.name == n).map_or(f64::NAN, |m| m.value);
    let drains = |e: &pagealloc::VmEvents| DRAINS.iter().map(|&c| e.get(c)).sum::<u64>();
    match name {
        "calls" => (r.outcome.ops.allocs + r.outcome.ops.frees) as f64,
        "zone_lock_acquire" => e.get(Counter::ZoneLockAcquire) as f64,
        "refills" => e.get(Counter::PcpRefill) as f64,
        "alloc_zone" => e.get(Counter::PcpRefillPages) as f64,
        "free_high" => e.get(Counter::DrainFreeHigh) as f64,
        "drains" => drains(e) as f64,
        "cooldown_drains" => (drains(&r.outcome.events) - drains(e)) as f64,
        "cold_touches" if real => f64::NAN,
        "cold_touches" => r.outcome.touches.1 as f64,
        "work_s" => r.outcome.work_ps as f64 / 1e12,
        "beyond_work_ns" => per_step_ns(&r.outcome, r.outcome.beyond_work_ps),
        "touch_ns" => per_step_ns(&r.outcome, r.outcome.touch_ps),
        "touch_ns_per_page" => {
            let (hot, cold) = r.outcome.touches;
            match hot + cold {
                0 => f64::NAN,
                pages => r.outcome.touch_ps as f64 / 1000.0 / pages as f64,
            }
        }
        "calls_ns" => per_step_ns(&r.outcome, r.outcome.call_ps),
        "rest_ns" => {
            let o = &r.outcome;
            per_step_ns(o, o.beyond_work_ps) - per_step_ns(o, o.touch_ps + o.call_ps)
        }
        "turn_ns" => per_step_ns(&r.outcome, r.outcome.turn_ps),
        "lab_ns" | "lab_over_ns" if !real => f64::NAN,
        "lab_ns" => per_step_ns(&r.outcome, r.outcome.lab_ps),
        "lab_over_ns" => per_step_ns(&r.outcome, r.outcome.lab_over_ps),
        "idle_pct" => idle_pct(&r.outcome),
        "wakes_per_kcall" => {
            let calls = value("calls", r, real);
            if calls == 0.0 {
                f64::NAN
            } else {
                1000.0 * r.outcome.blocked_wakes as f64 / calls
            }
        }
        other => metric(other),
    }
}

/// `ps` of busy time per step, in ns (busy time beyond the work the steps asked for, or a
/// part of it): where the two runners' prices part when their steps are the same.
fn per_step_ns(o: &RunOutcome, ps: u64) -> f64 {
    if o.steps == 0 {
        return f64::NAN;
    }
    ps as f64 / 1000.0 / o.steps as f64
}

/// The share of the running CPUs' time that was neither busy nor waiting for a zone lock, %.
fn idle_pct(o: &RunOutcome) -> f64 {
    let span = o.elapsed_ps as f64 * f64::from(o.running_cpus);
    if span == 0.0 {
        return f64::NAN;
    }
    (100.0 * (1.0 - (o.busy_ps + o.lock_wait_ps) as f64 / span)).max(0.0)
}

/// Is `model` within [`TOLERANCE`] of `real`? Both zero agrees; one zero does not.
pub fn within(model: f64, real: f64) -> bool {
    if model == real {
        return true;
    }
    if real == 0.0 || !model.is_finite() || !real.is_finite() {
        return false;
    }
    // The epsilon keeps a ratio of exactly 0.85 or 1.15 inside despite rounding.
    (model / real - 1.0).abs() <= TOLERANCE + 1e-12
}

/// Does metric `name` count towards the verdict ([`METRICS`])?
pub(crate) fn is_judged(name: &str) -> bool {
    METRICS.iter().any(|&(n, judged, _)| n == name && judged)
}

/// How far the real runs lie from their `median`, as fractions of it: (lowest, highest), e.g.
/// (−0.2, 0.1) for runs down to 20 % below it and up to 10 % above. `None` with fewer than two
/// finite runs or a median of zero (a spread is then not a fraction of anything).
pub(crate) fn spread(real: &[f64], median: f64) -> Option<(f64, f64)> {
    let finite: Vec<f64> = real.iter().copied().filter(|x| x.is_finite()).collect();
    if finite.len() < 2 || median == 0.0 || !median.is_finite() {
        return None;
    }
    let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some((lo / median - 1.0, hi / median - 1.0))
}

/// Do the real runs spread past [`TOLERANCE`] on either side of their median? Then the
/// median itself moves by about that much from one validate to the next, and a verdict on
/// it says more about which runs were drawn than about the model.
pub(crate) fn spread_past_tolerance(real: &[f64], median: f64) -> bool {
    spread(real, median).is_some_and(|(lo, hi)| lo < -TOLERANCE || hi > TOLERANCE)
}

/// This host as the model sees it: `cpus` CPUs and `bytes` of memory in one Normal zone, the
/// caches sysfs reports, and `like`'s memory hierarchy.
pub(crate) fn host_machine(cpus: u32, bytes: u64, like: &Machine) -> Result<Machine> {
    let mut m = Machine::host(cpus, bytes)?;
    let sysfs = std::path::Path::new("/sys/devices/system/cpu");
    let level = |l: u32| {
        crate::cacheinfo::level(sysfs, 0, l)
            .map(|(bytes, n)| CacheLevel { bytes, shared_by: (n as u32).clamp(1, cpus) })
    };
    // The model needs a private cache: sysfs's L2, else the reference machine's.
    let like_l2 = like.nodes.iter().find_map(|n| n.l2);
    m.nodes[0].l2 =
        level(2).or(like_l2).map(|c| CacheLevel { shared_by: c.shared_by.min(cpus), ..c });
    m.nodes[0].l1d = level(1);
    m.hierarchy = Some(like.hierarchy()?.clone());
    m.name = format!("host-model ({})", like.name);
    m.assumptions.push(format!(
        "memory hierarchy: machine `{}`'s figures{}",
        like.name,
        if like.file.is_some() { "" } else { " (the reference VM's, measured by calibrate)" }
    ));
    m.validate().map_err(|e| anyhow::anyhow!("the model of this host: {e}"))?;
    Ok(m)
}

/// Why `like`'s hierarchy may not describe this host: its caches differ in size from the
/// host's (`host`, the model of this host built by [`host_machine`], whose LLC and private
/// cache are this host's own). `None` when they match.
///
/// The hierarchy's prices were measured on `like`'s CPU; on another CPU every time-driven
/// verdict compares this host's real runs with another CPU's prices (the reference VM itself
/// has been handed different CPUs from one day to the next).
pub(crate) fn hierarchy_mismatch(like: &Machine, host: &Machine) -> Option<String> {
    let (l, h) = (like.nodes.first()?, host.nodes.first()?);
    let l2 = |n: &crate::machine::NodeSpec| n.l2.map_or(0, |c| c.bytes);
    if l.llc_bytes == h.llc_bytes && l2(l) == l2(h) {
        return None;
    }
    let kib = |b: u64| b >> 10;
    Some(format!(
        "machine `{}`'s hierarchy is of a CPU with a {} KiB LLC and a {} KiB L2, this host has \
         {} KiB and {} KiB: its prices describe another CPU. Measure this one with `pagealloc \
         calibrate --out cost.toml --machine-out host.toml` and pass `--machine host.toml --cost \
         cost.toml`, or let validate do both first with `--calibrate DIR`",
        like.name,
        kib(l.llc_bytes),
        kib(l2(l)),
        kib(h.llc_bytes),
        kib(l2(h)),
    ))
}

/// Why the model may charge a rewritten page more than the real runner spends: `like` gives
/// no L2 write rate (`write_l2_gbps`), so a page still in the core's L2 is priced at the
/// LLC's.
pub(crate) fn l2_write_note(like: &Machine) -> Option<String> {
    let given = like.hierarchy.as_ref().and_then(|h| h.get(Level::WriteL2)).is_some();
    (!given).then(|| {
        format!(
            "machine `{}` gives no write_l2_gbps: the model writes a page still in the core's L2 \
             (one the pageset handed back hot) at the LLC's rate. `pagealloc calibrate \
             --machine-out host.toml` measures it",
            like.name
        )
    })
}

/// Why the model may find pages hot that the real runs write at memory's rate: `like` gives
/// no measured share of the LLC (`llc_usable_mib`) and this host is a virtual machine, which
/// is told its host's whole LLC (`host_llc` bytes, what the model's caches then hold) but
/// shares it with the host's other guests.
pub(crate) fn llc_share_note(
    like: &Machine,
    host_llc: u64,
    virtual_machine: bool,
) -> Option<String> {
    let given = like.hierarchy.as_ref().and_then(|h| h.get(Level::LlcUsable)).is_some();
    (!given && virtual_machine).then(|| {
        format!(
            "machine `{}` gives no llc_usable_mib: the model's caches hold the whole {} MiB LLC \
             this virtual machine is told of, where a guest gets a share of its host's (on the \
             lab's VM page writes ran at memory's rate beyond 50-90 MiB of 260). `pagealloc \
             calibrate --machine-out host.toml` measures it",
            like.name,
            host_llc >> 20
        )
    })
}

/// Why the model may wake blocked CPUs sooner than the real runner: `like` gives no
/// measured wake-up (`wake_idle_ns`), which only a file `pagealloc calibrate` wrote has.
pub(crate) fn wake_note(like: &Machine) -> Option<String> {
    let given = like.hierarchy.as_ref().and_then(|h| h.get(Level::WakeIdle)).is_some();
    (!given).then(|| {
        format!(
            "machine `{}` gives no wake_idle_ns: the model starts a woken CPU when its workload \
             asks, the real runner when this host's wake-up of a parked thread lets it (tens of \
             µs on a virtual machine whose CPU had halted). `pagealloc calibrate --machine-out \
             host.toml` measures it",
            like.name
        )
    })
}

/// How many times this validate's fastest core-to-core probe a real run's probe may read
/// before the run counts as made with this host's CPUs apart ([`made_apart`]). On the lab's
/// VM the probe reads 20-30 ns with the two CPUs on cores that share a cache and about 200 ns
/// when the host has moved them onto cores that do not (docs/performance.md, "Where the
/// slow spells come from"); twice the fastest lies between the two with room for the first's
/// spread.
pub(crate) const APART: f64 = 2.0;

/// This host's core-to-core latency (ns one way, [`crate::calibrate::core_to_core_ns`])
/// probed just before and just after one real run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Probe {
    pub(crate) before: f64,
    pub(crate) after: f64,
}

impl Probe {
    /// Both probes, or `None` if either found no two CPUs to measure.
    pub(crate) fn of(before: Option<f64>, after: Option<f64>) -> Option<Probe> {
        Some(Probe { before: before?, after: after? })
    }

    /// The slower of the two: a spell that began or ended during the run shows in one.
    pub(crate) fn worst(&self) -> f64 {
        self.before.max(self.after)
    }

    /// Did the host move the CPUs between the two probes (one over [`APART`] times the
    /// other)? A single run has no other reference: with the CPUs apart throughout it says no.
    pub(crate) fn moved(&self) -> bool {
        self.worst() > APART * self.before.min(self.after)
    }
}

/// The reference the probes are judged by: the fastest of them, the latency with the CPUs
/// as close as this host put them during the validate. `None` without probes.
pub(crate) fn probe_reference<'p>(probes: impl IntoIterator<Item = &'p Probe>) -> Option<f64> {
    probes
        .into_iter()
        .flat_map(|p| [p.before, p.after])
        .filter(|x| x.is_finite())
        .min_by(f64::total_cmp)
}

/// Was a run made with this host's CPUs apart: did either of its probes read more than
/// [`APART`] times the `reference`? A run without probes, or without a reference, was not.
pub(crate) fn made_apart(probe: Option<&Probe>, reference: Option<f64>) -> bool {
    match (probe, reference) {
        (Some(p), Some(r)) => p.worst() > APART * r,
        _ => false,
    }
}

/// A real run set aside: made with this host's CPUs apart ([`made_apart`]).
#[derive(Debug)]
pub(crate) struct SetAside {
    /// Its seed offset from `--seed` (its sample); a run with the same one was made again.
    pub(crate) sample: u32,
    pub(crate) probe: Probe,
    pub(crate) result: RunResult,
}

/// One workload's comparison.
#[derive(Debug)]
pub(crate) struct Compared {
    pub(crate) name: &'static str,
    pub(crate) params: Vec<String>,
    pub(crate) model: RunResult,
    /// The real runs compared (their medians).
    pub(crate) real: Vec<RunResult>,
    /// Each compared run's probes, where the host has two CPUs to probe.
    pub(crate) probes: Vec<Option<Probe>>,
    /// Real runs left out of the medians: made with the host's CPUs apart.
    pub(crate) set_aside: Vec<SetAside>,
    /// Every real run was made with the CPUs apart: `real` holds them all, and the verdict
    /// compares the model with a placement its hierarchy does not describe.
    pub(crate) all_apart: bool,
}

impl Compared {
    /// (metric, model, real values, real median, within tolerance).
    pub(crate) fn table(&self) -> Vec<(&'static str, f64, Vec<f64>, f64, bool)> {
        METRICS
            .iter()
            .map(|&(name, _, _)| {
                let m = value(name, &self.model, false);
                let r: Vec<f64> = self.real.iter().map(|r| value(name, r, true)).collect();
                let med = crate::mmtests::median(&r).unwrap_or(f64::NAN);
                (name, m, r, med, within(m, med))
            })
            .collect()
    }

    /// Where a step's cost beyond its work parts most between the runners: of the parts
    /// [`STEP_PARTS`], the one whose model value and real median are furthest apart, as
    /// (metric, model ns, real ns). When the counts of a run of fixed length differ, or its
    /// length does, the step's cost is what set them; this names the part to look at first.
    /// `None` when no part was measured on both sides.
    pub(crate) fn widest_step_gap(&self) -> Option<(&'static str, f64, f64)> {
        self.table()
            .into_iter()
            .filter(|(name, m, _, med, _)| {
                STEP_PARTS.contains(name) && m.is_finite() && med.is_finite()
            })
            .map(|(name, m, _, med, _)| (name, m, med))
            .max_by(|a, b| (a.1 - a.2).abs().total_cmp(&(b.1 - b.2).abs()))
    }

    /// The misses ([`misses`](Self::misses)) on metrics whose real runs spread past the
    /// tolerance themselves: verdicts that more runs (`--runs`) could turn.
    pub(crate) fn unsettled(&self) -> Vec<&'static str> {
        self.table()
            .into_iter()
            .filter(|(name, _, r, med, ok)| {
                !ok && is_judged(name) && spread_past_tolerance(r, *med)
            })
            .map(|t| t.0)
            .collect()
    }

    /// The judged metrics outside the tolerance; empty when the model agrees.
    pub(crate) fn misses(&self) -> Vec<&'static str> {
        self.table()
            .into_iter()
            .filter(|(name, _, _, _, ok)| !ok && is_judged(name))
            .map(|t| t.0)
            .collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::workload;

    #[test]
    fn tolerance_is_relative_to_the_real_median() {
        assert!(within(115.0, 100.0) && within(85.0, 100.0));
        assert!(!within(116.0, 100.0) && !within(84.0, 100.0));
        assert!(within(0.0, 0.0), "both zero agree");
        assert!(!within(1.0, 0.0) && !within(0.0, 1.0), "one side zero does not");
        assert!(!within(f64::NAN, 1.0));
        use crate::mmtests::median;
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN]), None);
    }

    /// A small model run (trunc, one 1 MiB file) as a `RunResult`, whose outcome a test then
    /// edits, or which stands in for any run.
    pub(crate) fn small_run() -> RunResult {
        let info = workload::find("trunc").unwrap();
        let params = info.params(&["files=1".into(), "file_mib=1".into()], 1.0).unwrap();
        let setup = crate::model::tests::small_setup(2, 64, "modern", 1);
        let mut model = crate::model::Model::new(setup).unwrap();
        let outcome = model.run((info.build)(&params).as_mut(), &mut |_| {}).unwrap();
        RunResult {
            metrics: Vec::new(),
            outcome,
            wall_s: 0.0,
            run_s: 0.0,
            views: Vec::new(),
            trace_events: 0,
        }
    }

    /// The spread is the lowest and highest run against the median; runs 20 % apart around
    /// it pass the tolerance, and a miss on such a metric is unsettled, one on tight runs not.
    #[test]
    fn a_spread_past_the_tolerance_marks_a_miss_unsettled() {
        let (lo, hi) = spread(&[80.0, 100.0, 120.0], 100.0).unwrap();
        assert!((lo + 0.2).abs() < 1e-12 && (hi - 0.2).abs() < 1e-12, "{lo} {hi}");
        assert!(spread_past_tolerance(&[80.0, 100.0, 120.0], 100.0));
        assert!(!spread_past_tolerance(&[90.0, 100.0, 114.0], 100.0));
        // Too few runs, or a zero median: no spread to judge by.
        assert_eq!(spread(&[100.0], 100.0), None);
        assert_eq!(spread(&[0.0, 0.0, 3.0], 0.0), None);
        assert_eq!(spread(&[f64::NAN, 100.0], 100.0), None);

        let base = small_run();
        let run = |refills: u64| {
            let mut r = base.clone();
            // Only the refills differ between the runs.
            r.outcome.events_in_run = pagealloc::VmEvents::default();
            r.outcome.events_in_run.0[Counter::PcpRefill as usize] = refills;
            r
        };
        // Model 130 refills against real runs of 100 (median), 80 and 125: a miss, unsettled.
        let c = Compared {
            name: "t",
            params: Vec::new(),
            model: run(130),
            real: vec![run(80), run(100), run(125)],
            probes: Vec::new(),
            set_aside: Vec::new(),
            all_apart: false,
        };
        assert!(c.misses().contains(&"refills"), "{:?}", c.misses());
        assert_eq!(c.unsettled(), vec!["refills"]);
        // The same miss against tight real runs is settled.
        let c = Compared { real: vec![run(98), run(100), run(103)], ..c };
        assert!(c.misses().contains(&"refills"));
        assert!(c.unsettled().is_empty());
    }

    #[test]
    fn a_hierarchy_of_other_caches_is_named_a_mismatch() {
        let like = Machine::resolve("lab-2cpu").unwrap();
        let mut host = like.clone();
        assert_eq!(hierarchy_mismatch(&like, &host), None, "the same caches");
        host.nodes[0].llc_bytes = 260 << 20;
        let note = hierarchy_mismatch(&like, &host).expect("another LLC");
        assert!(note.contains("32768 KiB LLC") && note.contains("266240 KiB"), "{note}");
        assert!(note.contains("calibrate"), "{note}");
        let mut host = like.clone();
        host.nodes[0].l2 = None;
        assert!(hierarchy_mismatch(&like, &host).is_some(), "another private cache");
    }

    #[test]
    fn a_virtual_machine_without_a_measured_llc_share_is_named() {
        let mut like = Machine::resolve("lab-2cpu").unwrap();
        let note = llc_share_note(&like, 260 << 20, true).expect("a VM, no share");
        assert!(note.contains("260 MiB") && note.contains("calibrate"), "{note}");
        assert_eq!(llc_share_note(&like, 260 << 20, false), None, "bare metal gets its LLC");
        let mut h = like.hierarchy.clone().unwrap();
        h.set(Level::LlcUsable, crate::machine::hierarchy::Sourced::new(32.0, "measured"));
        like.hierarchy = Some(h);
        assert_eq!(llc_share_note(&like, 260 << 20, true), None, "the share is measured");
    }

    /// A page's price is the touch time over the pages the run wrote, hot and cold, however
    /// many steps it took; a run that wrote none has none.
    #[test]
    fn a_page_s_price_is_the_touch_time_over_the_pages() {
        let mut r = small_run();
        (r.outcome.steps, r.outcome.touch_ps, r.outcome.touches) = (7, 9_000_000, (200, 100));
        assert_eq!(value("touch_ns_per_page", &r, false), 30.0);
        r.outcome.steps = 700;
        assert_eq!(value("touch_ns_per_page", &r, true), 30.0, "steps do not enter");
        r.outcome.touches = (0, 0);
        assert!(value("touch_ns_per_page", &r, false).is_nan());
    }

    /// The widest gap is taken among the step's parts only, by absolute difference.
    #[test]
    fn the_widest_step_gap_is_the_part_furthest_apart() {
        let base = small_run();
        let run = |touch_ps: u64, call_ps: u64, beyond_ps: u64| {
            let mut r = base.clone();
            r.outcome.steps = 1000;
            (r.outcome.touch_ps, r.outcome.call_ps) = (touch_ps * 1000, call_ps * 1000);
            r.outcome.beyond_work_ps = beyond_ps * 1000;
            r
        };
        // ns per step: touches 100 / 160, calls 50 / 40, rest 0 / 30.
        let c = Compared {
            name: "t",
            params: Vec::new(),
            model: run(100_000, 50_000, 150_000),
            real: vec![run(160_000, 40_000, 230_000)],
            probes: Vec::new(),
            set_aside: Vec::new(),
            all_apart: false,
        };
        let (name, m, r) = c.widest_step_gap().unwrap();
        assert_eq!(name, "touch_ns");
        assert!((m - 100.0).abs() < 1e-9 && (r - 160.0).abs() < 1e-9, "{m} {r}");
        // Real rest 200 ns: now the rest is furthest apart.
        let c = Compared { real: vec![run(160_000, 40_000, 400_000)], ..c };
        assert_eq!(c.widest_step_gap().unwrap().0, "rest_ns");
        // No steps: nothing per step to compare.
        let mut none = run(0, 0, 0);
        none.outcome.steps = 0;
        let c = Compared { model: none, ..c };
        assert_eq!(c.widest_step_gap(), None);
    }

    /// The probes as the lab's VM gave them (2026-11-29): about 26 ns with its CPUs on cores
    /// sharing a cache, about 200 with them apart. The reference is the fastest probe seen;
    /// a run either of whose probes reads past twice it was made apart; a run without probes,
    /// or a validate without any, sets nothing aside.
    #[test]
    fn runs_probed_with_the_cpus_apart_are_told_from_the_others() {
        let near = Probe { before: 26.0, after: 31.0 };
        let far = Probe { before: 201.0, after: 199.0 };
        let began_apart = Probe { before: 27.0, after: 205.0 };
        let reference = probe_reference([&near, &far, &began_apart]);
        assert_eq!(reference, Some(26.0));
        assert!(!made_apart(Some(&near), reference));
        assert!(made_apart(Some(&far), reference));
        assert!(made_apart(Some(&began_apart), reference), "a spell beginning mid-run");
        assert!(!made_apart(Some(&Probe { before: 52.0, after: 40.0 }), reference), "2× itself");
        assert!(made_apart(Some(&Probe { before: 52.1, after: 40.0 }), reference));
        // Every probe apart: nothing to tell them from, so nothing is set aside.
        let reference = probe_reference([&far, &far]);
        assert_eq!(reference, Some(199.0));
        assert!(!made_apart(Some(&far), reference));
        assert!(!made_apart(None, Some(26.0)), "no probe: not judged");
        assert!(!made_apart(Some(&far), None), "no reference: not judged");
        assert_eq!(probe_reference([]), None);
        let nan = Probe { before: f64::NAN, after: 30.0 };
        assert_eq!(probe_reference([&nan]), Some(30.0), "a NaN is no reading");
        assert_eq!(Probe::of(Some(1.0), None), None);
        assert_eq!(Probe::of(Some(1.0), Some(2.0)).map(|p| p.worst()), Some(2.0));
        assert!(began_apart.moved() && !near.moved() && !far.moved(), "far throughout: no move");
    }

    #[test]
    fn every_workload_has_a_plan() {
        for w in workload::WORKLOADS {
            assert!(PLANS.iter().any(|p| p.0 == w.name), "{} has no plan", w.name);
        }
        for &(name, _, overrides, scale) in PLANS {
            let w = workload::find(name).unwrap();
            let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
            w.params(&o, scale).unwrap();
        }
    }

    #[test]
    fn the_model_of_this_host_is_one_normal_zone_with_a_hierarchy() {
        let like = Machine::builtin("lab-2cpu").unwrap();
        let m = host_machine(2, 512 << 20, &like).unwrap();
        assert_eq!(m.zone_spans().len(), 1);
        assert!(m.nodes[0].l2.is_some());
        assert_eq!(m.hierarchy, like.hierarchy);
    }
}

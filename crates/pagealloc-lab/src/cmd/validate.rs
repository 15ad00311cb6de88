//! `pagealloc validate [WORKLOAD …]`: every workload on this host, on the real runner and on
//! the model of this host, side by side — the one place the model meets reality on our own
//! hardware. A model that cannot predict a 2-CPU run here has no business predicting a
//! 224-CPU one.
//!
//! The model's machine is this host as the real runner sees it: the same CPUs, one node, one
//! ZONE_NORMAL of the arena's size (`arch = "flat"`), this host's caches from sysfs, and the
//! memory hierarchy `pagealloc calibrate --machine-out` measured (by default the reference
//! VM's, the built-in `lab-2cpu`'s). Each workload runs with parameters that fit a small host;
//! the model once (it is deterministic), the real runner `--runs` times (their median).

use std::fmt::Write as _;

use anyhow::{bail, Context, Result};
use pagealloc::Counter;
use serde_json::json;

use super::run::QUICK_SCALE;
use crate::machine::{CacheLevel, Machine};
use crate::model::cost::CostProfile;
use crate::preset_file::resolve;
use crate::results;
use crate::runs::{self, RunResult, RunSpec, Runner};
use crate::workload;

/// Arguments of `pagealloc validate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Workloads to validate (default: all of them).
    pub workloads: Vec<String>,
    /// Real runs per workload; their median is compared with the model's run.
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// A smoke run: a tenth of each workload's volume, one real run each, a 512 MiB arena.
    /// Too short to judge the model by: the verdicts say so.
    #[arg(long)]
    pub quick: bool,
    /// A machine file whose [hierarchy] describes this host (`pagealloc calibrate
    /// --machine-out FILE`); default: the reference VM's figures (built-in `lab-2cpu`).
    #[arg(long, value_name = "FILE")]
    pub machine: Option<String>,
    /// The real runner's arena, MiB (default 4096; 512 with --quick).
    #[arg(long, value_name = "MIB")]
    pub memory_mib: Option<u64>,
    /// Pin real thread `c` to host CPU `c % host CPUs`.
    #[arg(long)]
    pub pin: bool,
    /// Preset of every run.
    #[arg(long, default_value = "modern", value_name = "NAME_OR_FILE")]
    pub preset: String,
    /// Seed of the model run and the first real run (each further real run adds one).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A cost profile written by `pagealloc calibrate` instead of the shipped one.
    #[arg(long, value_name = "FILE")]
    pub cost: Option<std::path::PathBuf>,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// Do not write result rows under --results.
    #[arg(long)]
    pub no_save: bool,
    /// Directory for result rows (JSON lines).
    #[arg(long, default_value = "results", value_name = "DIR")]
    pub results: std::path::PathBuf,
}

/// Each workload's parameters on a small host (2 CPUs; thpfioscale's fio thread and THP thread
/// need 3), and its CPUs: (workload, CPUs, overrides, scale).
const PLANS: &[(&str, u32, &[&str], f64)] = &[
    ("trunc", 2, &[], 0.1),
    ("page-fault1", 2, &["processes=2"], 0.1),
    ("kbuild", 2, &["mem_node=-1", "parallel=2"], 0.02),
    ("netperf-tcp", 2, &[], 0.2),
    ("netperf-sctp-stream-many", 2, &["pairs=1"], 0.2),
    ("lmbench-unix", 2, &["pairs=1"], 0.2),
    ("page-frag-rx", 2, &["rx_cpus=1", "tx_cpus=1"], 0.2),
    ("thpfioscale", 3, &["fio_threads=1"], 0.1),
    ("hackbench", 2, &["groups=1", "fds=4"], 0.1),
    ("netperf-udp", 2, &[], 0.2),
    ("vm-scalability", 2, &["tasks=2"], 0.01),
];

/// How far the model may be from the real median on the judged metrics: ±15 %.
pub const TOLERANCE: f64 = 0.15;

/// The metrics compared: (name, judged for the verdict, what it is).
const METRICS: &[(&str, bool, &str)] = &[
    ("elapsed_s", true, "run time: virtual in the model, wall in the real runner, s"),
    ("calls", false, "allocator calls (allocations and frees)"),
    ("zone_lock_acquire", true, "zone-lock acquisitions"),
    ("zone_lock_held_pct", false, "time holding zone locks / CPU time, %"),
    ("zone_lock_pct", false, "time waiting for zone locks / CPU time, %"),
    ("refills", true, "pageset refills from the zone (rmqueue_bulk calls)"),
    ("alloc_zone", false, "pages moved from the zone into pagesets"),
    ("drains", true, "pageset drains of every reason"),
    ("free_high", false, "drains triggered by free_high"),
    ("cold_touches", false, "pages touched out of the LLC (model only)"),
];

/// The value of compared metric `name` in `r` (NaN: not measured by that runner).
fn value(name: &str, r: &RunResult, real: bool) -> f64 {
    let e = &r.outcome.events;
    let metric = |n: &str| r.metrics.iter().find(|m| m.name == n).map_or(f64::NAN, |m| m.value);
    match name {
        "calls" => (r.outcome.ops.allocs + r.outcome.ops.frees) as f64,
        "refills" => e.get(Counter::PcpRefill) as f64,
        "drains" => [
            Counter::DrainHigh,
            Counter::DrainFreeHigh,
            Counter::DrainBelowHigh,
            Counter::DrainReclaim,
            Counter::DrainDecay,
            Counter::DrainRemote,
        ]
        .iter()
        .map(|&c| e.get(c))
        .sum::<u64>() as f64,
        "cold_touches" if real => f64::NAN,
        "cold_touches" => r.outcome.touches.1 as f64,
        other => metric(other),
    }
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

/// The median of `v` (NaN if empty).
fn median(v: &[f64]) -> f64 {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// This host as the model sees it: `cpus` CPUs and `bytes` of memory in one Normal zone, the
/// caches sysfs reports, and `like`'s memory hierarchy.
fn host_machine(cpus: u32, bytes: u64, like: &Machine) -> Result<Machine> {
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

/// One workload's comparison.
#[derive(Debug)]
struct Compared {
    name: &'static str,
    params: Vec<String>,
    model: RunResult,
    real: Vec<RunResult>,
}

impl Compared {
    /// (metric, model, real values, real median, within tolerance).
    fn table(&self) -> Vec<(&'static str, f64, Vec<f64>, f64, bool)> {
        METRICS
            .iter()
            .map(|&(name, _, _)| {
                let m = value(name, &self.model, false);
                let r: Vec<f64> = self.real.iter().map(|r| value(name, r, true)).collect();
                let med = median(&r);
                (name, m, r, med, within(m, med))
            })
            .collect()
    }

    /// The judged metrics outside the tolerance; empty when the model agrees.
    fn misses(&self) -> Vec<&'static str> {
        self.table()
            .into_iter()
            .filter(|(name, _, _, _, ok)| {
                !ok && METRICS.iter().any(|&(n, judged, _)| n == *name && judged)
            })
            .map(|t| t.0)
            .collect()
    }
}

/// Run the command.
pub fn run(args: &Args) -> Result<()> {
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let chosen: Vec<&(&str, u32, &[&str], f64)> = if args.workloads.is_empty() {
        PLANS.iter().collect()
    } else {
        let mut v = Vec::new();
        for w in &args.workloads {
            workload::find(w)?;
            v.push(PLANS.iter().find(|p| p.0 == w).expect("every workload has a plan"));
        }
        v
    };
    let runs = if args.quick { 1 } else { args.runs };
    let mib = args.memory_mib.unwrap_or(if args.quick { 512 } else { 4096 });
    if mib == 0 || mib > 1 << 30 {
        bail!("--memory-mib {mib}: takes 1 to 2^30 MiB");
    }
    let like = Machine::resolve(args.machine.as_deref().unwrap_or("lab-2cpu"))?;
    let preset = resolve(&args.preset)?;
    let cost = match &args.cost {
        Some(p) => CostProfile::load(p)?,
        None => CostProfile::default_profile(),
    };
    let mut compared = Vec::new();
    let mut rows = Vec::new();
    let revision = results::revision();
    for &&(name, cpus, overrides, scale) in &chosen {
        let w = workload::find(name)?;
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        let scale = if args.quick { scale * QUICK_SCALE } else { scale };
        let model_machine = host_machine(cpus, mib << 20, &like)?;
        let (params, _) = w.params_for(&overrides, scale, workload::Fit::of(&model_machine))?;
        let spec = |runner, machine: Machine, seed, sample| RunSpec {
            runner,
            workload: w,
            params: params.clone(),
            preset: preset.clone(),
            preset_name: preset.name.clone(),
            machine,
            seed,
            sample,
            cost: cost.clone(),
            count_frames: false,
            table: Some("validate".into()),
            show: Vec::new(),
            layout: crate::procfs::ProcLayout::default(),
            trace: None,
        };
        let model_spec = spec(Runner::Model, model_machine, args.seed, 0);
        if !args.json {
            eprintln!("validate: {name}: model ...");
        }
        let model = runs::execute(&model_spec, &mut |_| {})
            .with_context(|| format!("{name} on the model of this host"))?;
        rows.extend(runs::rows(&model_spec, &model, &revision));
        let mut real = Vec::new();
        for i in 0..runs {
            if !args.json {
                eprintln!("validate: {name}: real run {}/{runs} ...", i + 1);
            }
            let s = spec(
                Runner::Real { pin: args.pin },
                Machine::host(cpus, mib << 20)?,
                args.seed.wrapping_add(u64::from(i)),
                i,
            );
            let r = runs::execute(&s, &mut |_| {})
                .with_context(|| format!("{name} on the real runner"))?;
            rows.extend(runs::rows(&s, &r, &revision));
            real.push(r);
        }
        let params_text = overrides.iter().cloned().chain([format!("--scale {scale}")]).collect();
        compared.push(Compared { name, params: params_text, model, real });
    }
    if !args.no_save {
        let path = results::save(&args.results, "validate", &rows)?;
        if !args.json {
            eprintln!("rows saved to {}", path.display());
        }
    }
    let quick_note = args.quick.then_some(
        "quick run: a tenth of each workload, one real run, a 512 MiB arena; too short to judge \
         the model by",
    );
    if args.json {
        println!("{}", serde_json::to_string_pretty(&to_json(&compared, &like, quick_note))?);
    } else {
        print!("{}", to_text(&compared, &like, runs, quick_note));
    }
    Ok(())
}

fn num(x: f64) -> String {
    if !x.is_finite() {
        "n/a".into()
    } else if x.abs() >= 1e5 {
        format!("{x:.0}")
    } else if x.abs() >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    }
}

fn to_text(c: &[Compared], like: &Machine, runs: u32, quick: Option<&str>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "validate: the model of this host (hierarchy of `{}`) against {runs} real run(s) each; \
         judged: elapsed_s, zone_lock_acquire, refills, drains within ±{:.0} %",
        like.name,
        TOLERANCE * 100.0
    );
    for w in c {
        let _ = writeln!(s, "\n== {} ({})", w.name, w.params.join(" "));
        let _ = writeln!(
            s,
            "   {:<20} {:>12} {:>12} {:>25} {:>8}",
            "metric", "model", "real (med)", "real runs", "mod/real"
        );
        for (name, m, r, med, ok) in w.table() {
            let judged = METRICS.iter().any(|&(n, j, _)| n == name && j);
            let mark = match (judged, ok) {
                (false, _) => " ",
                (true, true) => "✓",
                (true, false) => "✗",
            };
            let runs: Vec<String> = r.iter().map(|&x| num(x)).collect();
            let ratio = if med.is_finite() && med != 0.0 && m.is_finite() {
                format!("{:.2}", m / med)
            } else {
                "–".into()
            };
            let _ = writeln!(
                s,
                "   {name:<20} {:>12} {:>12} {:>25} {ratio:>8} {mark}",
                num(m),
                num(med),
                runs.join(", ")
            );
        }
        let misses = w.misses();
        let verdict = if misses.is_empty() {
            "agrees".to_string()
        } else {
            format!("differs on {}", misses.join(", "))
        };
        let _ = writeln!(s, "   verdict: {verdict}");
    }
    let agree = c.iter().filter(|w| w.misses().is_empty()).count();
    let _ = writeln!(
        s,
        "\n{agree} of {} workloads agree (docs/performance.md says which cost each miss comes from)",
        c.len()
    );
    if let Some(q) = quick {
        let _ = writeln!(s, "{q}");
    }
    s
}

fn to_json(c: &[Compared], like: &Machine, quick: Option<&str>) -> serde_json::Value {
    let finite = |x: f64| if x.is_finite() { json!(x) } else { serde_json::Value::Null };
    let workloads: Vec<_> = c
        .iter()
        .map(|w| {
            let metrics: serde_json::Map<_, _> = w
                .table()
                .into_iter()
                .map(|(name, m, r, med, ok)| {
                    let judged = METRICS.iter().any(|&(n, j, _)| n == name && j);
                    (
                        name.to_string(),
                        json!({
                            "model": finite(m),
                            "real": r.iter().map(|&x| finite(x)).collect::<Vec<_>>(),
                            "real_median": finite(med),
                            "ratio": if med.is_finite() && med != 0.0 { finite(m / med) } else { serde_json::Value::Null },
                            "within": ok,
                            "judged": judged,
                        }),
                    )
                })
                .collect();
            let misses = w.misses();
            json!({
                "workload": w.name,
                "params": w.params,
                "verdict": if misses.is_empty() { "agrees" } else { "differs" },
                "differs_on": misses,
                "metrics": metrics,
            })
        })
        .collect();
    json!({
        "hierarchy_of": like.name,
        "tolerance": TOLERANCE,
        "quick": quick.is_some(),
        "note": quick,
        "workloads": workloads,
        "agree": c.iter().filter(|w| w.misses().is_empty()).count(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerance_is_relative_to_the_real_median() {
        assert!(within(115.0, 100.0) && within(85.0, 100.0));
        assert!(!within(116.0, 100.0) && !within(84.0, 100.0));
        assert!(within(0.0, 0.0), "both zero agree");
        assert!(!within(1.0, 0.0) && !within(0.0, 1.0), "one side zero does not");
        assert!(!within(f64::NAN, 1.0));
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[f64::NAN]).is_nan());
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

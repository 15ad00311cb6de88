//! `pagealloc validate [WORKLOAD …]`: every workload on this host, on the real runner and on
//! the model of this host, side by side — the one place the model meets reality on our own
//! hardware. A model that cannot predict a 2-CPU run here has no business predicting a
//! 224-CPU one.
//!
//! The model's machine is this host as the real runner sees it: the same CPUs, one node, one
//! ZONE_NORMAL of the arena's size (`arch = "flat"`), this host's caches from sysfs, and the
//! memory hierarchy `pagealloc calibrate --machine-out` measured (by default the reference
//! VM's, the built-in `lab-2cpu`'s). Each workload runs with parameters that fit a small host;
//! the model once (it is deterministic), the real runner `--runs` times (their median), the
//! real runs going round the workloads so that a slow spell of the host falls on one run of a
//! workload rather than on all of them.

use std::fmt::Write as _;

use anyhow::{bail, Context, Result};
use serde_json::json;

use super::run::QUICK_SCALE;
use crate::machine::Machine;
use crate::model::cost::CostProfile;
use crate::preset_file::resolve;
use crate::results;
use crate::runs::{self, RunSpec, Runner};
use crate::validation::{
    hierarchy_mismatch, host_machine, is_judged, l2_write_note, llc_share_note, wake_note,
    Compared, PLANS, TOLERANCE,
};
use crate::workload;

/// Arguments of `pagealloc validate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Workloads to validate (default: all of them).
    pub workloads: Vec<String>,
    /// Real runs per workload; their median is compared with the model's run. They go round
    /// the workloads: every workload's first run, then every workload's second, and so on.
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
    // Said first, so that a long run is not read without it.
    let host = host_machine(1, mib << 20, &like)?;
    let host_llc = host.nodes[0].llc_bytes;
    let host_notes: Vec<String> = [
        hierarchy_mismatch(&like, &host),
        wake_note(&like),
        l2_write_note(&like),
        llc_share_note(&like, host_llc, crate::calibrate::Machine::read().virtual_machine),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !args.json {
        host_notes.iter().for_each(|n| eprintln!("validate: note: {n}"));
    }
    let mut rows = Vec::new();
    let revision = results::revision();
    // Every workload's model run first, then the real runs.
    let mut planned = Vec::new();
    for &&(name, cpus, overrides, scale) in &chosen {
        let w = workload::find(name)?;
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        let scale = if args.quick { scale * QUICK_SCALE } else { scale };
        let model_machine = host_machine(cpus, mib << 20, &like)?;
        let (params, _) = w.params_for(&overrides, scale, workload::Fit::of(&model_machine))?;
        let p = Planned { name, w, cpus, params };
        let model_spec = p.spec(Runner::Model, model_machine, args.seed, 0, &preset, &cost);
        if !args.json {
            eprintln!("validate: {name}: model ...");
        }
        let model = runs::execute(&model_spec, &mut |_| {})
            .with_context(|| format!("{name} on the model of this host"))?;
        rows.extend(runs::rows(&model_spec, &model, &revision));
        let params_text = overrides.iter().cloned().chain([format!("--scale {scale}")]).collect();
        planned.push((p, Compared { name, params: params_text, model, real: Vec::new() }));
    }
    for (i, k) in real_run_order(planned.len(), runs) {
        let (p, c) = &mut planned[k];
        if !args.json {
            eprintln!("validate: {}: real run {}/{runs} ...", p.name, i + 1);
        }
        let s = p.spec(
            Runner::Real { pin: args.pin },
            Machine::host(p.cpus, mib << 20)?,
            args.seed.wrapping_add(u64::from(i)),
            i,
            &preset,
            &cost,
        );
        let r = runs::execute(&s, &mut |_| {})
            .with_context(|| format!("{} on the real runner", p.name))?;
        rows.extend(runs::rows(&s, &r, &revision));
        c.real.push(r);
    }
    let compared: Vec<Compared> = planned.into_iter().map(|(_, c)| c).collect();
    if !args.no_save {
        let path = results::save(&args.results, "validate", &rows)?;
        if !args.json {
            eprintln!("rows saved to {}", path.display());
        }
    }
    let mut notes: Vec<String> = Vec::new();
    if args.quick {
        notes.push(
            "quick run: a tenth of each workload, one real run, a 512 MiB arena; too short to \
             judge the model by"
                .into(),
        );
    }
    notes.extend(host_notes);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&to_json(&compared, &like, args.quick, &notes))?
        );
    } else {
        print!("{}", to_text(&compared, &like, runs, &notes));
    }
    Ok(())
}

/// One workload's plan as this validate runs it.
struct Planned {
    name: &'static str,
    w: &'static workload::WorkloadInfo,
    cpus: u32,
    params: workload::Params,
}

impl Planned {
    fn spec(
        &self,
        runner: Runner,
        machine: Machine,
        seed: u64,
        sample: u32,
        preset: &crate::preset_file::ResolvedPreset,
        cost: &CostProfile,
    ) -> RunSpec {
        RunSpec {
            runner,
            workload: self.w,
            params: self.params.clone(),
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
        }
    }
}

/// The order of the real runs, as (run, workload) indices: round by round, every workload's
/// first run, then every workload's second, and so on. This host has slow spells of seconds
/// to minutes (docs/performance.md); going round spreads a workload's runs over the whole
/// validate, so one spell slows one of them, which the median sheds, rather than all.
fn real_run_order(workloads: usize, runs: u32) -> impl Iterator<Item = (u32, usize)> {
    (0..runs).flat_map(move |i| (0..workloads).map(move |k| (i, k)))
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

fn to_text(c: &[Compared], like: &Machine, runs: u32, notes: &[String]) -> String {
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
            let judged = is_judged(name);
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
        let unsettled = w.unsettled();
        if !unsettled.is_empty() {
            let _ = writeln!(
                s,
                "   the real runs themselves spread past ±{:.0} % of their median on {}: more \
                 runs (--runs) could turn this verdict",
                TOLERANCE * 100.0,
                unsettled.join(", ")
            );
        }
        if let (false, Some((part, m, r))) = (misses.is_empty(), w.widest_step_gap()) {
            let _ = writeln!(
                s,
                "   per step, the runners part most on {part}: model {} ns, real {} ns",
                num(m),
                num(r)
            );
        }
    }
    let agree = c.iter().filter(|w| w.misses().is_empty()).count();
    let _ = writeln!(
        s,
        "\n{agree} of {} workloads agree (docs/performance.md says which cost each miss comes from)",
        c.len()
    );
    let unsettled = c.iter().filter(|w| !w.misses().is_empty() && w.misses() == w.unsettled());
    let unsettled: Vec<&str> = unsettled.map(|w| w.name).collect();
    if !unsettled.is_empty() {
        let _ = writeln!(
            s,
            "{} of the {} that differ, differ only where their real runs spread past ±{:.0} %: {}",
            unsettled.len(),
            c.len() - agree,
            TOLERANCE * 100.0,
            unsettled.join(", ")
        );
    }
    for n in notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

fn to_json(c: &[Compared], like: &Machine, quick: bool, notes: &[String]) -> serde_json::Value {
    let finite = |x: f64| if x.is_finite() { json!(x) } else { serde_json::Value::Null };
    let workloads: Vec<_> = c
        .iter()
        .map(|w| {
            let metrics: serde_json::Map<_, _> = w
                .table()
                .into_iter()
                .map(|(name, m, r, med, ok)| {
                    let judged = is_judged(name);
                    (
                        name.to_string(),
                        json!({
                            "model": finite(m),
                            "real": r.iter().map(|&x| finite(x)).collect::<Vec<_>>(),
                            "real_median": finite(med),
                            "ratio": if med.is_finite() && med != 0.0 { finite(m / med) } else { serde_json::Value::Null },
                            "within": ok,
                            "judged": judged,
                            "real_spread": crate::validation::spread(&r, med)
                                .map(|(lo, hi)| json!([finite(lo), finite(hi)])),
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
                "unsettled": w.unsettled(),
                "widest_step_gap": w.widest_step_gap().map(|(part, m, r)| {
                    json!({ "metric": part, "model": finite(m), "real": finite(r) })
                }),
                "metrics": metrics,
            })
        })
        .collect();
    json!({
        "hierarchy_of": like.name,
        "tolerance": TOLERANCE,
        "quick": quick,
        "notes": notes,
        "workloads": workloads,
        "agree": c.iter().filter(|w| w.misses().is_empty()).count(),
    })
}

#[cfg(test)]
mod tests {
    use super::real_run_order;

    /// The real runs go round the workloads: each run of a workload is a whole round after
    /// its previous one, and every (run, workload) comes exactly once.
    #[test]
    fn real_runs_go_round_the_workloads() {
        let order: Vec<(u32, usize)> = real_run_order(3, 2).collect();
        assert_eq!(order, [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]);
        let order: Vec<(u32, usize)> = real_run_order(12, 3).collect();
        assert_eq!(order.len(), 36);
        for k in 0..12 {
            let at: Vec<usize> =
                order.iter().enumerate().filter(|(_, o)| o.1 == k).map(|(n, _)| n).collect();
            assert_eq!(at, [k, k + 12, k + 24], "workload {k}");
        }
        assert_eq!(real_run_order(0, 3).count(), 0);
    }
}

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
//! workload rather than on all of them. A virtual machine's host may move its CPUs onto cores
//! that share no cache, for seconds to minutes, and the real runs then measure another
//! machine: every real run is bracketed by a probe of the core-to-core latency
//! ([`crate::calibrate::core_to_core_ns`]), and a run whose probe reads over
//! [`APART`](crate::validation::APART) times the validate's fastest is set aside and made
//! again (docs/performance.md, "Where the slow spells come from").

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
    hierarchy_mismatch, host_machine, is_judged, l2_write_note, llc_share_note, made_apart,
    probe_reference, wake_note, Compared, Probe, SetAside, PLANS, TOLERANCE,
};
use crate::workload;

/// Arguments of `pagealloc validate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Workloads to validate (default: all of them).
    pub workloads: Vec<String>,
    /// Real runs per workload; their median is compared with the model's run. They go round
    /// the workloads: every workload's first run, then every workload's second, and so on.
    /// Each is bracketed by a probe of this host's core-to-core latency (a few ms); a run
    /// made while the host had its CPUs on cores apart (a probe over twice the validate's
    /// fastest) is set aside and made again with its seed, up to this many more times per
    /// workload. Every run's rows are saved, those set aside included.
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
    /// Measure this host first (`pagealloc calibrate`, about 10 s; its quick plan with
    /// --quick), write DIR/host.toml and DIR/cost.toml, and validate against them: the
    /// model of this host as it is now. A virtual machine's write rates and wake-ups can move
    /// by half within hours, and the verdicts at the tolerance's edge move with them.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["machine", "cost"])]
    pub calibrate: Option<std::path::PathBuf>,
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

/// `--calibrate DIR`: measure this host into DIR/host.toml and DIR/cost.toml (the table on
/// stderr, so that `--json` keeps stdout to itself); returns the two paths.
fn calibrate_into(
    dir: &std::path::Path,
    quick: bool,
) -> Result<(std::path::PathBuf, std::path::PathBuf)> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--calibrate: creating {}", dir.display()))?;
    let (host, cost) = (dir.join("host.toml"), dir.join("cost.toml"));
    crate::output::check_optional(Some(&host), "the machine file")?;
    crate::output::check_optional(Some(&cost), "the cost profile")?;
    let measured = super::calibrate::measure(quick, Some(&cost), Some(&host))?;
    eprint!("{}", measured.table);
    eprintln!("calibrate: wrote {}", cost.display());
    Ok((host, cost))
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
    let preset = resolve(&args.preset)?;
    let (machine, cost) = match &args.calibrate {
        Some(dir) => {
            let (host, cost) = calibrate_into(dir, args.quick)?;
            (Some(host.display().to_string()), Some(cost))
        }
        None => (args.machine.clone(), args.cost.clone()),
    };
    let like = Machine::resolve(machine.as_deref().unwrap_or("lab-2cpu"))?;
    let cost = match &cost {
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
        let params_text: Vec<String> =
            overrides.iter().cloned().chain([format!("--scale {}", scale_text(scale))]).collect();
        planned.push((p, name, params_text, model));
    }
    // The host's core-to-core latency around every real run: runs made while the host had
    // the CPUs apart are set aside and made again (docs/performance.md, "Where the slow
    // spells come from").
    let probe = crate::calibrate::core_to_core_probe;
    let taker = Taker { args, mib, preset: &preset, cost: &cost, revision: &revision, runs };
    let mut taken: Vec<Vec<Taken>> = planned.iter().map(|_| Vec::new()).collect();
    for (i, k) in real_run_order(planned.len(), runs) {
        taken[k].push(taker.take(&planned[k].0, i, false, &probe, &mut rows)?);
    }
    // Then round by round, one more run of each workload still short of close ones, with
    // the seed of a run it sets aside: the compared runs keep the seeds a validate without
    // spells would have used (a workload's counts may depend on its seed).
    let mut again = vec![0u32; planned.len()];
    loop {
        let reference = reference_of(&taken);
        let more = needing_more(&taken, &again, runs, reference);
        if more.is_empty() {
            break;
        }
        for k in more {
            let sample = sample_to_redo(&taken[k], reference);
            taken[k].push(taker.take(&planned[k].0, sample, true, &probe, &mut rows)?);
            again[k] += 1;
        }
    }
    let reference = reference_of(&taken);
    let compared: Vec<Compared> = planned
        .into_iter()
        .zip(taken)
        .map(|((_, name, params, model), t)| compare(name, params, model, t, reference))
        .collect();
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
            serde_json::to_string_pretty(&to_json(
                &compared, &like, args.quick, &notes, reference
            ))?
        );
    } else {
        print!("{}", to_text(&compared, &like, runs, &notes, reference));
    }
    Ok(())
}

/// One real run and the host's core-to-core latency around it.
struct Taken {
    /// Its sample: the seed offset from `--seed` (a run made again has its predecessor's).
    sample: u32,
    result: runs::RunResult,
    probe: Option<Probe>,
}

impl Taken {
    /// Was it made with the host's CPUs apart, judged by `reference`?
    fn apart(&self, reference: Option<f64>) -> bool {
        made_apart(self.probe.as_ref(), reference)
    }
}

/// What every real run of this validate shares.
struct Taker<'a> {
    args: &'a Args,
    mib: u64,
    preset: &'a crate::preset_file::ResolvedPreset,
    cost: &'a CostProfile,
    revision: &'a str,
    runs: u32,
}

impl Taker<'_> {
    /// A real run of `p` with seed offset `i`, probed before and after; `again`: it makes
    /// again a run set aside. Its rows go to `rows`.
    fn take(
        &self,
        p: &Planned,
        i: u32,
        again: bool,
        probe: &impl Fn() -> Option<f64>,
        rows: &mut Vec<results::Row>,
    ) -> Result<Taken> {
        if !self.args.json {
            if again {
                eprintln!(
                    "validate: {}: real run {} again (made with the host's CPUs apart) ...",
                    p.name,
                    i + 1
                );
            } else {
                eprintln!("validate: {}: real run {}/{} ...", p.name, i + 1, self.runs);
            }
        }
        let s = p.spec(
            Runner::Real { pin: self.args.pin },
            Machine::host(p.cpus, self.mib << 20)?,
            self.args.seed.wrapping_add(u64::from(i)),
            i,
            self.preset,
            self.cost,
        );
        let before = probe();
        let result = runs::execute(&s, &mut |_| {})
            .with_context(|| format!("{} on the real runner", p.name))?;
        let after = probe();
        rows.extend(runs::rows(&s, &result, self.revision));
        Ok(Taken { sample: i, result, probe: Probe::of(before, after) })
    }
}

/// The probes' reference over every real run so far: the fastest probe ([`probe_reference`]).
fn reference_of(taken: &[Vec<Taken>]) -> Option<f64> {
    probe_reference(taken.iter().flatten().filter_map(|t| t.probe.as_ref()))
}

/// The workloads (indices) that need another real run: fewer than `runs` of theirs made
/// close, by `reference`, the fastest probe so far (it can fall as the validate goes on: a
/// spell at its start), and fewer than `runs` already made again.
fn needing_more(
    taken: &[Vec<Taken>],
    again: &[u32],
    runs: u32,
    reference: Option<f64>,
) -> Vec<usize> {
    (0..taken.len())
        .filter(|&k| {
            let close = taken[k].iter().filter(|t| !t.apart(reference)).count();
            close < runs as usize && again[k] < runs
        })
        .collect()
}

/// The seed offset for a run made again: of the samples whose runs were all made apart (by
/// `reference`), the one tried fewest times, the lowest of those; one past every sample if
/// there is none.
fn sample_to_redo(taken: &[Taken], reference: Option<f64>) -> u32 {
    let close = |s: u32| taken.iter().any(|t| t.sample == s && !t.apart(reference));
    let tries = |s: u32| taken.iter().filter(|t| t.sample == s).count();
    taken
        .iter()
        .filter(|t| t.apart(reference) && !close(t.sample))
        .map(|t| (tries(t.sample), t.sample))
        .min()
        .map_or_else(|| taken.iter().map(|t| t.sample + 1).max().unwrap_or(0), |(_, s)| s)
}

/// A workload's comparison from its model run and its real runs: the runs made with the
/// host's CPUs apart (by `reference`) set aside, unless every run was.
fn compare(
    name: &'static str,
    params: Vec<String>,
    model: runs::RunResult,
    taken: Vec<Taken>,
    reference: Option<f64>,
) -> Compared {
    let all_apart = taken.iter().all(|t| t.apart(reference)) && !taken.is_empty();
    let (mut real, mut probes, mut set_aside) = (Vec::new(), Vec::new(), Vec::new());
    for t in taken {
        match t.probe {
            Some(probe) if t.apart(reference) && !all_apart => {
                set_aside.push(SetAside { sample: t.sample, probe, result: t.result })
            }
            _ => {
                real.push(t.result);
                probes.push(t.probe);
            }
        }
    }
    Compared { name, params, model, real, probes, set_aside, all_apart }
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

/// A scale as a user would type it: at most six decimals, no float noise (a tenth of 0.1
/// prints 0.01, not 0.010000000000000002).
fn scale_text(x: f64) -> String {
    let s = format!("{x:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
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

fn to_text(
    c: &[Compared],
    like: &Machine,
    runs: u32,
    notes: &[String],
    reference: Option<f64>,
) -> String {
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
        if let Some(line) = placement_line(w, reference) {
            let _ = writeln!(s, "   {line}");
        }
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
    let _ = writeln!(s, "{}", probe_summary(c, reference));
    for n in notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// A probe pair as text: "26.1/27.0 ns".
fn probe_text(p: &Probe) -> String {
    format!("{:.1}/{:.1} ns", p.before, p.after)
}

/// What the probes say of one workload's real runs, if any was made with the CPUs apart.
fn placement_line(w: &Compared, reference: Option<f64>) -> Option<String> {
    let reference = reference?;
    if w.all_apart {
        let probes: Vec<String> = w.probes.iter().flatten().map(probe_text).collect();
        return Some(format!(
            "every real run was made with this host's CPUs apart (core-to-core {}, against \
             {reference:.1} ns at the fastest): the verdict compares the model with a placement \
             its hierarchy does not describe",
            probes.join(", "),
        ));
    }
    if w.set_aside.is_empty() {
        return None;
    }
    let aside: Vec<String> = w
        .set_aside
        .iter()
        .map(|a| format!("run {} ({})", a.sample + 1, probe_text(&a.probe)))
        .collect();
    Some(format!(
        "set aside: {}: made with this host's CPUs apart (core-to-core over {:.0}× the fastest \
         probe, {:.1} ns), each made again with its seed; the medians are of {} run(s)",
        aside.join(", "),
        crate::validation::APART,
        reference,
        w.real.len()
    ))
}

/// The last word on the probes: the reference, and how many runs were set aside.
fn probe_summary(c: &[Compared], reference: Option<f64>) -> String {
    let Some(reference) = reference else {
        return "core-to-core probe: none (this host has one CPU, or no two-CPU window was \
                found): no run was judged by where the host had its CPUs"
            .into();
    };
    let aside: usize = c.iter().map(|w| w.set_aside.len()).sum();
    let all: Vec<&str> = c.iter().filter(|w| w.all_apart).map(|w| w.name).collect();
    let mut s = format!(
        "core-to-core probe around every real run: fastest {reference:.1} ns; {aside} run(s) made \
         with this host's CPUs apart (over {:.0}× that) were set aside and made again",
        crate::validation::APART
    );
    if !all.is_empty() {
        let _ = write!(s, "; every run of {} was made apart", all.join(", "));
    }
    s
}

fn to_json(
    c: &[Compared],
    like: &Machine,
    quick: bool,
    notes: &[String],
    reference: Option<f64>,
) -> serde_json::Value {
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
            let probe_json = |p: &Probe| json!([finite(p.before), finite(p.after)]);
            let set_aside: Vec<_> = w
                .set_aside
                .iter()
                .map(|a| {
                    let judged: serde_json::Map<_, _> = crate::validation::METRICS
                        .iter()
                        .filter(|m| m.1)
                        .map(|m| (m.0.to_string(), finite(crate::validation::value(m.0, &a.result, true))))
                        .collect();
                    json!({ "sample": a.sample, "core_to_core_ns": probe_json(&a.probe), "metrics": judged })
                })
                .collect();
            json!({
                "workload": w.name,
                "params": w.params,
                "core_to_core_ns": w.probes.iter().map(|p| p.as_ref().map(probe_json)).collect::<Vec<_>>(),
                "set_aside": set_aside,
                "all_apart": w.all_apart,
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
        "core_to_core_reference_ns": reference.map_or(serde_json::Value::Null, finite),
        "apart_factor": crate::validation::APART,
    })
}

#[cfg(test)]
mod tests {
    use super::{compare, needing_more, real_run_order, reference_of, sample_to_redo, Taken};
    use crate::validation::tests::small_run;
    use crate::validation::Probe;

    fn taken(sample: u32, probe: Option<(f64, f64)>) -> Taken {
        let probe = probe.map(|(before, after)| Probe { before, after });
        Taken { sample, result: small_run(), probe }
    }

    /// The text names each run set aside with its probes and says how many runs the
    /// medians are of; a workload whose runs were all apart is said to be compared with
    /// another placement; without set-aside runs or probes there is nothing to say.
    #[test]
    fn the_text_says_which_runs_were_set_aside_and_why() {
        let near = Some((25.0, 26.0));
        let far = Some((26.0, 210.0));
        let runs = vec![taken(0, near), taken(1, far), taken(2, near)];
        let c = compare("t", Vec::new(), small_run(), runs, Some(25.0));
        let line = super::placement_line(&c, Some(25.0)).unwrap();
        assert!(line.starts_with("set aside: run 2 (26.0/210.0 ns)"), "{line}");
        assert!(line.contains("over 2× the fastest probe, 25.0 ns"), "{line}");
        assert!(line.ends_with("the medians are of 2 run(s)"), "{line}");
        let summary = super::probe_summary(std::slice::from_ref(&c), Some(25.0));
        assert!(summary.contains("fastest 25.0 ns; 1 run(s)"), "{summary}");
        let c = compare("t", Vec::new(), small_run(), vec![taken(0, far)], Some(25.0));
        let line = super::placement_line(&c, Some(25.0)).unwrap();
        assert!(line.starts_with("every real run was made with this host's CPUs apart"));
        assert!(super::probe_summary(&[c], Some(25.0)).ends_with("every run of t was made apart"));
        let c = compare("t", Vec::new(), small_run(), vec![taken(0, near)], Some(25.0));
        assert_eq!(super::placement_line(&c, Some(25.0)), None);
        assert_eq!(super::placement_line(&c, None), None);
        assert!(super::probe_summary(&[c], None).starts_with("core-to-core probe: none"));
    }

    #[test]
    fn a_scale_prints_as_typed() {
        assert_eq!(super::scale_text(0.1 * 0.1), "0.01");
        assert_eq!(super::scale_text(10.0), "10");
        assert_eq!(super::scale_text(0.2 * 0.1), "0.02");
        assert_eq!(super::scale_text(1.5), "1.5");
    }

    /// Runs probed with the host's CPUs apart are set aside, each compared run keeps its
    /// probe, and when every run was apart they are all compared and the comparison says so.
    #[test]
    fn runs_made_apart_are_set_aside_unless_all_were() {
        let near = Some((25.0, 26.0));
        let far = Some((26.0, 210.0));
        let runs = vec![taken(0, near), taken(1, far), taken(2, near), taken(3, near)];
        let c = compare("t", Vec::new(), small_run(), runs, Some(25.0));
        assert_eq!((c.real.len(), c.probes.len(), c.set_aside.len()), (3, 3, 1));
        assert_eq!(c.set_aside[0].sample, 1);
        assert_eq!(c.set_aside[0].probe, Probe { before: 26.0, after: 210.0 });
        assert!(!c.all_apart);
        let c = compare("t", Vec::new(), small_run(), vec![taken(0, far)], Some(25.0));
        assert_eq!((c.real.len(), c.set_aside.len(), c.all_apart), (1, 0, true));
        // No probes (one CPU): every run is compared.
        let runs = vec![taken(0, None), taken(1, None)];
        let c = compare("t", Vec::new(), small_run(), runs, None);
        assert_eq!((c.real.len(), c.set_aside.len(), c.all_apart), (2, 0, false));
    }

    /// A workload gets another run while fewer than `runs` of its runs were made close and
    /// it has had fewer than `runs` more; the reference is the fastest probe of them all, so
    /// a close run later in the validate makes earlier ones apart.
    #[test]
    fn workloads_short_of_close_runs_are_run_again_within_their_budget() {
        let near = Some((25.0, 26.0));
        let far = Some((200.0, 210.0));
        // Three runs each; the second workload had one made apart.
        let t = vec![
            vec![taken(0, near), taken(1, near), taken(2, near)],
            vec![taken(0, near), taken(1, far), taken(2, near)],
        ];
        assert_eq!(needing_more(&t, &[0, 0], 3, reference_of(&t)), vec![1]);
        assert_eq!(
            needing_more(&t, &[0, 3], 3, reference_of(&t)),
            Vec::<usize>::new(),
            "its budget is spent"
        );
        // A validate that began in a spell: nothing is apart until a close probe comes.
        let t = vec![vec![taken(0, far), taken(1, far)]];
        assert_eq!(needing_more(&t, &[0], 2, reference_of(&t)), Vec::<usize>::new());
        let t = vec![vec![taken(0, far), taken(1, far)], vec![taken(0, near), taken(1, near)]];
        assert_eq!(needing_more(&t, &[0, 0], 2, reference_of(&t)), vec![0]);
        // A run made again takes the seed of the first run set aside that has none close.
        let t = vec![taken(0, near), taken(1, far), taken(2, far)];
        assert_eq!(sample_to_redo(&t, Some(25.0)), 1);
        let t = vec![taken(0, near), taken(1, far), taken(2, far), taken(1, near)];
        assert_eq!(sample_to_redo(&t, Some(25.0)), 2);
        let t = vec![taken(0, near), taken(1, far), taken(1, far)];
        assert_eq!(sample_to_redo(&t, Some(25.0)), 1, "apart twice: still its seed");
        assert_eq!(sample_to_redo(&t[..1], Some(25.0)), 1, "none apart: a new seed");
        // Tries are spread: the seed tried fewest times goes first.
        let t = vec![taken(0, far), taken(1, far), taken(0, far), taken(2, near)];
        assert_eq!(sample_to_redo(&t, Some(25.0)), 1);
        // No probes at all (one CPU): every run counts as close.
        let t = vec![vec![taken(0, None), taken(1, None), taken(2, None)]];
        assert_eq!(needing_more(&t, &[0], 3, reference_of(&t)), Vec::<usize>::new());
    }

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

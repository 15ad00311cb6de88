//! `pagealloc run WORKLOAD`: one run of a workload with a preset, on the model of a machine
//! or (`--runner real`) on OS threads over real memory of this host; prints the workload's
//! and the runner's metrics, and saves them as result rows.

use std::path::PathBuf;

use anyhow::Result;
use serde_json::json;

use crate::machine::Machine;
use crate::model::cost::CostProfile;
use crate::preset_file::resolve;
use crate::runs::{self, ProcView, RunSpec, Runner};
use crate::{results, workload};

/// The scale `--quick` means: a tenth of the workload's volume.
pub const QUICK_SCALE: f64 = 0.1;

/// Options shared by `run`, `compare` and `reproduce`.
#[derive(Debug, clap::Args)]
pub struct Common {
    /// Seed of the run (each sample of `compare` adds its index).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Multiply the workload's volume (iterations, messages, duration) by this, 0.001 to
    /// 1000. A scaled parameter must stay within its range (`pagealloc workloads` lists
    /// them): above it is an error, below it runs at its minimum; a count is rounded to the
    /// nearest whole number. The output says which values were raised or rounded.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub scale: f64,
    /// The reduced scale the tests use (`--scale 0.1`).
    #[arg(long, conflicts_with = "scale")]
    pub quick: bool,
    /// A cost profile written by `pagealloc calibrate` instead of the shipped one.
    #[arg(long, value_name = "FILE")]
    pub cost: Option<PathBuf>,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// Do not write result rows under --results.
    #[arg(long)]
    pub no_save: bool,
    /// Directory for result rows (JSON lines).
    #[arg(long, default_value = "results", value_name = "DIR")]
    pub results: PathBuf,
}

impl Common {
    /// The scale to run at.
    pub fn scale(&self) -> f64 {
        if self.quick {
            QUICK_SCALE
        } else {
            self.scale
        }
    }

    /// The cost profile to run with.
    pub fn cost(&self) -> Result<CostProfile> {
        match &self.cost {
            Some(p) => CostProfile::load(p),
            None => Ok(CostProfile::default_profile()),
        }
    }
}

/// Arguments of `pagealloc run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The workload (`pagealloc workloads` lists them).
    pub workload: String,
    /// Policy preset: a built-in name or a preset file (.toml).
    #[arg(long, default_value = "modern", value_name = "NAME_OR_FILE")]
    pub preset: String,
    /// Machine: a built-in name (`pagealloc machines`) or a machine file (.toml). Default:
    /// the machine of the workload's seed table.
    #[arg(long, value_name = "NAME_OR_FILE")]
    pub machine: Option<String>,
    /// Use this many CPUs instead of the machine's (spread over its nodes). With `--runner
    /// real`: the number of threads (default: this host's CPUs).
    #[arg(long)]
    pub cpus: Option<u32>,
    /// Which runner: `model` simulates the machine deterministically; `real` runs the
    /// workload on OS threads over an arena of this host's memory, timed by the wall clock
    /// (one thread per CPU; every workload's steps run at the same time but trunc's, whose
    /// tasks run one after the other; every step's work and sleeps overlap).
    #[arg(long, value_enum, default_value_t = RunnerArg::Model)]
    pub runner: RunnerArg,
    /// With `--runner real`: pin thread `c` to host CPU `c % host CPUs`.
    #[arg(long)]
    pub pin: bool,
    /// With `--runner real`: the arena the allocator manages, MiB (default 1024). It is
    /// faulted in before the run, so all of it is resident while the run lasts.
    #[arg(long, value_name = "MIB")]
    pub memory_mib: Option<u64>,
    /// Set a workload parameter (repeatable): `--param files=2`.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Render /proc views of the final state (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "VIEWS")]
    pub show: Vec<ProcView>,
    /// The kernel layout of the views.
    #[command(flatten)]
    pub views: runs::ViewArgs,
    /// Write the run's kmem page events to FILE in the ftrace `trace` format (for
    /// `pagealloc replay` and the kernel's trace tools).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Options shared with compare and reproduce.
    #[command(flatten)]
    pub common: Common,
}

/// The runners `--runner` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RunnerArg {
    /// The deterministic model of a machine.
    Model,
    /// OS threads on real memory of this host.
    Real,
}

/// Default arena of a real run, MiB.
pub const REAL_MEMORY_MIB: u64 = 1024;

/// Resolve the machine for a workload: the named one, or the workload's default, with
/// `--cpus` applied.
pub fn machine_for(
    w: &workload::WorkloadInfo,
    name: Option<&str>,
    cpus: Option<u32>,
) -> Result<Machine> {
    let m = Machine::resolve(name.unwrap_or(w.default_machine))?;
    match cpus {
        Some(n) => m.with_cpus(n),
        None => Ok(m),
    }
}

/// What the probes around a real run say: the two latencies, and whether the host moved the
/// CPUs between them (one over [`APART`](crate::validation::APART) times the other). One run
/// has no reference to judge a steady placement by; `validate` takes the fastest of many.
fn core_to_core_line(c: &crate::validation::Probe) -> String {
    format!(
        "host: a line crossed between two CPUs in {:.1} ns before the run and {:.1} ns after{}",
        c.before,
        c.after,
        if c.moved() {
            ": the host moved this machine's CPUs between cores that share a cache and cores \
             that do not during the run, which measured both placements (docs/performance.md, \
             \"Where the slow spells come from\")"
        } else {
            ""
        }
    )
}

/// Run the command.
pub fn run(args: &Args) -> Result<()> {
    let w = workload::find(&args.workload)?;
    let (runner, machine) = match args.runner {
        RunnerArg::Model => {
            if args.pin || args.memory_mib.is_some() {
                anyhow::bail!("--pin and --memory-mib go with --runner real");
            }
            (Runner::Model, machine_for(w, args.machine.as_deref(), args.cpus)?)
        }
        RunnerArg::Real => {
            if args.machine.is_some() {
                anyhow::bail!(
                    "--machine describes a machine for the model; the real runner runs on this \
                     host: set its threads with --cpus and its memory with --memory-mib"
                );
            }
            let cpus = args.cpus.unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
            });
            let mib = args.memory_mib.unwrap_or(REAL_MEMORY_MIB);
            if mib == 0 || mib > 1 << 30 {
                anyhow::bail!("--memory-mib {mib}: takes 1 to 2^30 MiB");
            }
            (Runner::Real { pin: args.pin }, Machine::host(cpus, mib << 20)?)
        }
    };
    let (params, notes) =
        w.params_for(&args.params, args.common.scale(), workload::Fit::of(&machine))?;
    let preset = resolve(&args.preset)?;
    let spec = RunSpec {
        runner,
        workload: w,
        params,
        // A preset file is labelled by its `name` (default: the file stem), not its path.
        preset_name: preset.name.clone(),
        preset,
        machine,
        seed: args.common.seed,
        sample: 0,
        cost: args.common.cost()?,
        count_frames: false,
        table: None,
        show: args.show.clone(),
        layout: args.views.layout(),
        trace: args.trace.clone(),
    };
    let label = format!("{} on {}", w.name, spec.machine.name);
    // A real run of two CPUs or more is bracketed by the host's core-to-core latency: a
    // virtual machine's host may put its CPUs on cores apart, and the run then measures that.
    let real_cpus = matches!(spec.runner, Runner::Real { .. }) && spec.machine.nr_cpus() >= 2;
    let probe = || real_cpus.then(crate::calibrate::core_to_core_probe).flatten();
    let before = probe();
    let r = runs::execute_all(std::slice::from_ref(&spec), &label, args.common.json)?
        .pop()
        .expect("one spec, one result");
    let c2c = crate::validation::Probe::of(before, probe());
    let revision = results::revision();
    let rows = runs::rows(&spec, &r, &revision);
    let saved = if args.common.no_save {
        None
    } else {
        let stem = format!("run-{}-{}", w.name, spec.preset_name);
        Some(results::save(&args.common.results, &stem, &rows)?)
    };
    let o = &r.outcome;
    let calls = o.ops.allocs + o.ops.frees;
    if args.common.json {
        let metrics: serde_json::Map<_, _> = r
            .metrics
            .iter()
            .map(|m| {
                (m.name.clone(), json!({"value": m.value, "unit": m.unit, "better": m.better}))
            })
            .collect();
        let params: serde_json::Map<_, _> =
            spec.params.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        let views: serde_json::Map<_, _> =
            r.views.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        let mut doc = json!({
            "workload": w.name,
            "runner": spec.runner.name(),
            "machine": spec.machine.name,
            "cpus": spec.machine.nr_cpus(),
            "preset": spec.preset_name,
            "seed": spec.seed,
            "params": params,
            "fitted": notes.fitted,
            "scaled": notes.scaled,
            "metrics": metrics,
            "allocator_calls": calls,
            "steps": o.steps,
            "views": views,
            "timing": {
                "wall_s": r.wall_s,
                "calls_per_s": calls as f64 / r.wall_s.max(1e-9),
                "run_s": r.run_s,
                "run_calls_per_s": calls as f64 / r.run_s.max(1e-9),
            },
            "saved": saved,
        });
        if o.ops.slab_allocs > 0 {
            doc["slab"] = json!({
                "objects_allocated": o.ops.slab_allocs,
                "objects_freed": o.ops.slab_frees,
                "slabs_new": o.ops.slabs_new,
                "slabs_freed_in_run": o.ops.slabs_freed,
            });
        }
        if let Some(p) = &args.trace {
            doc["trace"] = json!({"file": p, "events": r.trace_events});
        }
        if let Some(c) = c2c {
            doc["core_to_core_ns"] = json!([c.before, c.after]);
        }
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    println!(
        "{} on {} ({} CPUs), preset {}, seed {}",
        w.name,
        spec.machine.name,
        spec.machine.nr_cpus(),
        spec.preset_name,
        spec.seed
    );
    let params: Vec<String> = spec.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("parameters: {}", params.join(" "));
    if !notes.fitted.is_empty() {
        println!("fitted to {}: {}", spec.machine.name, notes.fitted.join(", "));
    }
    if !notes.scaled.is_empty() {
        println!("scaled by {}: {}", args.common.scale(), notes.scaled.join(", "));
    }
    println!();
    for m in &r.metrics {
        println!("  {:<24} {:>16.3} {:<7} {}", m.name, m.value, m.unit, m.doc);
    }
    println!();
    if o.ops.slab_allocs > 0 {
        println!(
            "slab: {} objects allocated, {} freed; {} slabs taken from the page allocator, {} \
             given back during the run (the rest when the caches are shrunk at the end)",
            o.ops.slab_allocs, o.ops.slab_frees, o.ops.slabs_new, o.ops.slabs_freed
        );
    }
    match spec.runner {
        Runner::Model => println!(
            "model: {} allocator calls in {:.2} s wall ({:.2} M calls/s), {} steps; the run \
             alone {:.2} s ({:.2} M calls/s), the rest building the machine",
            calls,
            r.wall_s,
            calls as f64 / r.wall_s.max(1e-9) / 1e6,
            o.steps,
            r.run_s,
            calls as f64 / r.run_s.max(1e-9) / 1e6,
        ),
        Runner::Real { pin } => println!(
            "real: {} allocator calls and {} pages touched by {} threads{} in {:.2} s of run \
             ({:.2} s wall with the arena's set-up and the cool-down), {} steps",
            calls,
            o.touches.0,
            spec.machine.nr_cpus(),
            if pin { " (pinned)" } else { "" },
            o.elapsed_ps as f64 / 1e12,
            r.wall_s,
            o.steps,
        ),
    }
    if let Some(c) = c2c {
        println!("{}", core_to_core_line(&c));
    }
    for (name, text) in &r.views {
        println!("\n{}:\n{text}", runs::view_path(name));
    }
    if let Some(p) = &args.trace {
        println!("trace: {} events written to {}", r.trace_events, p.display());
    }
    if let Some(p) = saved {
        println!("rows saved to {}", p.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::core_to_core_line;
    use crate::validation::Probe;

    /// The probes around a real run are printed; a move between the two placements (one
    /// probe over twice the other) is called one.
    #[test]
    fn a_real_run_says_how_far_apart_its_cpus_were() {
        let line = core_to_core_line(&Probe { before: 25.3, after: 26.0 });
        assert_eq!(
            line,
            "host: a line crossed between two CPUs in 25.3 ns before the run and 26.0 ns after"
        );
        let line = core_to_core_line(&Probe { before: 25.3, after: 210.0 });
        assert!(line.contains("210.0 ns after: the host moved this machine's CPUs"), "{line}");
        let line = core_to_core_line(&Probe { before: 205.0, after: 210.0 });
        assert!(!line.contains("moved"), "apart throughout: one run cannot tell: {line}");
    }
}

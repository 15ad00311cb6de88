//! `pagealloc run WORKLOAD`: one model run of a workload on a machine with a preset; prints
//! the workload's and the runner's metrics, and saves them as result rows.

use std::path::PathBuf;

use anyhow::Result;
use serde_json::json;

use crate::machine::Machine;
use crate::model::cost::CostProfile;
use crate::preset_file::resolve;
use crate::runs::{self, ProcView, RunSpec};
use crate::{results, workload};

/// The scale `--quick` means: a tenth of the workload's volume.
pub const QUICK_SCALE: f64 = 0.1;

/// Options shared by `run`, `compare` and `reproduce`.
#[derive(Debug, clap::Args)]
pub struct Common {
    /// Seed of the run (each sample of `compare` adds its index).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Multiply the workload's volume (iterations, messages, duration) by this.
    #[arg(long, default_value_t = 1.0)]
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
    /// Use this many CPUs instead of the machine's (spread over its nodes).
    #[arg(long)]
    pub cpus: Option<u32>,
    /// Set a workload parameter (repeatable): `--param files=2`.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Render /proc views of the final state (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "VIEWS")]
    pub show: Vec<ProcView>,
    /// Write the run's kmem page events to FILE in the ftrace `trace` format (for
    /// `pagealloc replay` and the kernel's trace tools).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Options shared with compare and reproduce.
    #[command(flatten)]
    pub common: Common,
}

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

/// Run the command.
pub fn run(args: &Args) -> Result<()> {
    let w = workload::find(&args.workload)?;
    let params = w.params(&args.params, args.common.scale())?;
    let machine = machine_for(w, args.machine.as_deref(), args.cpus)?;
    let spec = RunSpec {
        workload: w,
        params,
        preset: resolve(&args.preset)?,
        preset_name: args.preset.clone(),
        machine,
        seed: args.common.seed,
        sample: 0,
        cost: args.common.cost()?,
        count_frames: false,
        table: None,
        show: args.show.clone(),
        trace: args.trace.clone(),
    };
    let label = format!("{} on {}", w.name, spec.machine.name);
    let r = runs::execute_all(std::slice::from_ref(&spec), &label, args.common.json)?
        .pop()
        .expect("one spec, one result");
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
            "machine": spec.machine.name,
            "preset": spec.preset_name,
            "seed": spec.seed,
            "params": params,
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
        if let Some(p) = &args.trace {
            doc["trace"] = json!({"file": p, "events": r.trace_events});
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
    println!();
    for m in &r.metrics {
        println!("  {:<24} {:>16.3} {:<7} {}", m.name, m.value, m.unit, m.doc);
    }
    println!();
    println!(
        "model: {} allocator calls in {:.2} s wall ({:.2} M calls/s), {} steps; the run alone \
         {:.2} s ({:.2} M calls/s), the rest building the machine",
        calls,
        r.wall_s,
        calls as f64 / r.wall_s.max(1e-9) / 1e6,
        o.steps,
        r.run_s,
        calls as f64 / r.run_s.max(1e-9) / 1e6,
    );
    for (name, text) in &r.views {
        println!("\n/proc/{name}:\n{text}");
    }
    if let Some(p) = &args.trace {
        println!("trace: {} events written to {}", r.trace_events, p.display());
    }
    if let Some(p) = saved {
        println!("rows saved to {}", p.display());
    }
    Ok(())
}

//! `pagealloc stress`: real threads allocating, handing on and freeing real memory through
//! `PageHeap`, every page stamped with its owner; ends with conservation and the validator
//! (`crate::stress` has the workload and the checks).

use std::time::Duration;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use crate::cmd::bench::machine;
use crate::preset_file::resolve;
use crate::stress::{self, Options};

/// Arguments of `pagealloc stress`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Worker threads (more than the CPUs oversubscribes them: threads on one CPU share its
    /// pagesets).
    #[arg(long, default_value_t = 4)]
    pub threads: u32,
    /// How long the workers run, seconds (at least one exhaustion cycle runs however short).
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Seed of the workers' random mixes (the interleaving is the scheduler's).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Policy preset: a built-in name or a preset file (.toml).
    #[arg(long, default_value = "modern", value_name = "NAME_OR_FILE")]
    pub preset: String,
    /// Arena size, MiB: what exhaustion cycles use up. Each worker owns at most its share of
    /// half of it, so an order-10 block (4 MiB) should fit a quarter of a share.
    #[arg(long, default_value_t = 256)]
    pub arena_mib: usize,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Run the command; fails (after printing the report) if any violation was found.
pub fn run(args: &Args) -> Result<()> {
    if !(1..=1024).contains(&args.threads) {
        bail!("--threads {}: takes 1 to 1024", args.threads);
    }
    if !(args.seconds.is_finite() && args.seconds > 0.0 && args.seconds <= 86_400.0) {
        bail!("--seconds {}: takes a number above 0 and at most 86400", args.seconds);
    }
    if !(16..=65_536).contains(&args.arena_mib) {
        bail!("--arena-mib {}: takes 16 to 65536 (at least four order-10 blocks)", args.arena_mib);
    }
    let preset = resolve(&args.preset)?;
    let opts = Options {
        threads: args.threads,
        duration: Duration::from_secs_f64(args.seconds),
        seed: args.seed,
        policy: preset.policy,
        tunables: preset.tunables,
        arena_bytes: args.arena_mib << 20,
        #[cfg(test)]
        faults: stress::Faults::default(),
    };
    let bar = if args.seconds > 1.0 {
        let b = ProgressBar::new(1000);
        b.set_style(
            ProgressStyle::with_template("stress [{elapsed_precise}] {wide_bar} {msg}")
                .expect("a valid template"),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    let report = stress::run(&opts, &mut |done, ops| {
        bar.set_position((done.clamp(0.0, 1.0) * 1000.0) as u64);
        bar.set_message(format!("{ops} ops"));
    })
    .context("setting up the heap")?;
    bar.finish_and_clear();
    let m = machine();
    if args.json {
        let mut doc = serde_json::to_value(&report)?;
        doc["preset"] = serde_json::json!(preset.name);
        doc["requested_seconds"] = serde_json::json!(args.seconds);
        doc["machine"] = serde_json::to_value(&m)?;
        doc["revision"] = serde_json::json!(crate::results::revision());
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        let machine = format!("{}, {} CPUs, Linux {}", m.cpu_model, m.logical_cpus, m.kernel);
        print!("{}", stress::render(&report, &machine, &preset.name));
    }
    if report.violations > 0 {
        bail!("{} violations (see the report above)", report.violations);
    }
    Ok(())
}

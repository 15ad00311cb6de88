//! `pagealloc`: the lab's command line. One file per verb under `cmd/`.

use anyhow::Result;
use clap::{Parser, Subcommand};

mod bench;
mod cacheinfo;
// The measurements of `pagealloc calibrate`.
mod calibrate;
mod cmd;
// The one module allowed unsafe code: real memory (mmap, raw blocks).
#[allow(unsafe_code)]
mod heap;
#[cfg_attr(not(test), expect(dead_code, reason = "used by compare and reproduce"))]
mod mmtests;
#[allow(dead_code, reason = "wired into run, compare and reproduce next")]
mod model;
mod preset_file;
#[allow(dead_code, reason = "wired into run, compare and reproduce next")]
mod workload;
// /proc views of a model run (used by `--show` once `run`/`replay` exist; tested now).
#[cfg_attr(not(test), expect(dead_code, reason = "wired into --show by run/replay/reproduce"))]
mod procfs;
mod zoneinfo;

/// The pagealloc lab: drive the page allocator, inspect it, compare policies.
#[derive(Debug, Parser)]
#[command(name = "pagealloc", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a random program of allocations and frees against the allocator, checking every
    /// answer against an oracle and every invariant with the validator; print what happened.
    Exercise(cmd::exercise::Args),
    /// Time alloc+free patterns on real memory against PageHeap, mimalloc, jemalloc, the
    /// system allocator and buddy_system_allocator; print ns per pair (table or JSON).
    Bench(cmd::bench::Args),
    /// Measure the model's cost profile on this machine and write it as TOML.
    ///
    /// With real threads on the real library (release build): the pageset's alloc and free
    /// calls (no zone lock), the zone lock's fixed cost and cost per free-list operation (a fit
    /// over holds of many sizes, timed in the event hooks), the lock's cache-line handoff
    /// between two CPUs (two threads taking turns at a chain of locks), and writing a 4 KiB page in and out of the LLC. Prints
    /// each figure's median and p10..p90 spread; `remote_factor` is a documented default on a
    /// one-node machine.
    #[command(after_long_help = cmd::calibrate::AFTER_HELP)]
    Calibrate(cmd::calibrate::Args),
    /// List the policy presets with their summaries, seed table rows and switch values.
    ///
    /// Without arguments: every built-in preset, in table order. With names or preset files
    /// (.toml): just those. The switches print as TOML lines that can be pasted into a preset
    /// file; `--json` prints one document with the tunables too.
    #[command(after_long_help = cmd::presets::AFTER_HELP)]
    Presets(cmd::presets::Args),
    /// Check a real kernel's /proc/zoneinfo against our sizing rules: recompute watermarks,
    /// protection, PCP batch/high_min/high_max, the fixed per-CPU high of older kernels and the
    /// vm stats threshold, and mark every field that differs.
    ///
    /// Without --zoneinfo it checks this machine (/proc/zoneinfo, /proc/sys/vm, /sys). Any
    /// kernel from 3.10 on: the generation is inferred from the file and printed, as is every
    /// input the file does not show (min_free_kbytes, watermark_scale_factor, CPUs per node).
    #[command(after_long_help = cmd::sizing::AFTER_HELP)]
    Sizing(cmd::sizing::Args),
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Exercise(args) => cmd::exercise::run(&args),
        Command::Bench(args) => cmd::bench::run(&args),
        Command::Calibrate(args) => cmd::calibrate::run(&args),
        Command::Presets(args) => cmd::presets::run(&args),
        Command::Sizing(args) => cmd::sizing::run(&args),
    }
}

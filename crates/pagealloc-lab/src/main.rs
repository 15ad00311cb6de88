//! `pagealloc`: the lab's command line. One file per verb under `cmd/`.

use anyhow::Result;
use clap::{Parser, Subcommand};

mod bench;
mod cacheinfo;
mod charts;
// The measurements of `pagealloc calibrate`.
mod calibrate;
mod calibration;
mod cmd;
mod explore;
// The two modules allowed unsafe code: real memory (mmap, raw blocks) and the few OS calls
// around it (CPU affinity, SIGPIPE, the model's cache prefetch hint), and the global
// allocator that keeps large freed blocks for the next run's tables.
#[allow(unsafe_code)]
mod heap;
mod input;
mod kversion;
mod machine;
mod metrics;
mod mmtests;
mod model;
mod output;
mod plot;
mod preset_file;
mod procfs;
mod published;
#[allow(unsafe_code)]
mod recycle;
mod report;
mod reproduction;
mod results;
mod runs;
mod scoreboard;
mod stress;
mod suggest;
mod trace;
mod validation;
mod workload;
mod zone_check;
mod zoneinfo;

// The parsers under a seeded mutation fuzzer (stable; in the normal test suite).
#[cfg(test)]
mod fuzz_smoke;

/// Every heap block of the lab: large ones are kept across model runs (`recycle.rs`).
#[global_allocator]
static ALLOC: recycle::Recycler = recycle::Recycler::new(recycle::KEEP_BYTES);

/// The pagealloc lab: drive the page allocator, inspect it, compare policies.
#[derive(Debug, Parser)]
#[command(
    name = "pagealloc",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("PAGEALLOC_REVISION"), ")"),
    about,
    long_about = None,
    disable_help_subcommand = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Read no input file larger than this many MiB (any command; default per kind: 1 MiB
    /// for machine, preset and cost files, 64 MiB for zoneinfo dumps, 1 GiB for traces and
    /// result rows). Also set by the environment variable PAGEALLOC_MAX_INPUT_MIB.
    #[arg(long, global = true, value_name = "MIB",
          value_parser = clap::value_parser!(u64).range(1..=input::MAX_CAP_MIB))]
    max_input_mib: Option<u64>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a random program of allocations and frees against the allocator, checking every
    /// answer against an oracle and every invariant with the validator; print what happened.
    Exercise(cmd::exercise::Args),
    /// Time alloc+free patterns on real memory against PageHeap, mimalloc, jemalloc, the
    /// system allocator and buddy_system_allocator; print ns per pair (table or JSON).
    ///
    /// mimalloc and jemalloc are C libraries and are in the binary only when the lab is built
    /// with `--features peers`; without it `bench` runs the Rust peers and names the ones it
    /// left out.
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
    /// Run a workload on the model of a machine under one preset; print its metrics.
    ///
    /// The model runs the machine's CPUs as virtual CPUs in clock order on one thread, charging
    /// every allocator call from the cost profile and zone-lock waits in virtual time. Result
    /// rows go to results/ (JSON lines) unless --no-save.
    Run(cmd::run::Args),
    /// Replay a kernel's page-allocator trace (ftrace `trace`, `trace-cmd report` or `perf
    /// script` text of the kmem:mm_page_* events) through the model on the trace's CPUs; print
    /// what the kernel did beside what our allocator did, and what was skipped.
    ///
    /// Each CPU replays its allocations and frees in trace order, paced by the trace's time
    /// stamps; trace PFNs map to the model's blocks. Lines that cannot be used are counted by
    /// kind; a file with no page event, two captures concatenated, or a CPU, PFN or time span
    /// no machine or clock holds is an error (exit 1). Kernel events the trace never recorded
    /// print `–`, not 0.
    Replay(cmd::replay::Args),
    /// Run a workload under several presets, a few samples each, and print the mmtests
    /// comparison table (the first preset is the baseline).
    Compare(cmd::compare::Args),
    /// Sweep a grid of switches and tunables × workloads × machines on the model; print the
    /// Pareto front of pageset memory against the workload's result (or zone-lock share),
    /// with the kernel default and the merged presets marked.
    ///
    /// `--shard I/N` runs points k with k % N == I (I 0-based) as an independent process;
    /// `explore merge FILES… --out F` joins the shards' rows into those of the unsharded
    /// sweep, byte for byte. `--quick` alone: a small built-in grid on lab-2cpu.
    /// docs/explore.md has the grid file, the rows and Slurm and Kubernetes fan-outs.
    // Boxed: its many flags would make every variant as large as it.
    Explore(Box<cmd::explore::Args>),
    /// Reproduce the seed tables: our rows beside the published rows, with whether each change
    /// from the baseline goes the published way.
    Reproduce(cmd::reproduce::Args),
    /// List the workload models with their parameters, defaults and sources.
    Workloads(cmd::workloads::Args),
    /// Draw SVG plots from saved result rows: pageset memory over time per preset, a few
    /// CPUs' pageset count and high over time, per-preset bars of each metric.
    Plot(cmd::plot::Args),
    /// List the machines the model runs on: nodes, CPUs, memory and its zones, LLC domains,
    /// caches per CPU, tunables, and every assumption behind the numbers.
    ///
    /// Without arguments: every built-in machine. With names or machine files (.toml): just
    /// those. `--cpus N` shows them as the model's `--cpus N` override builds them; `--json`
    /// prints one document; `--toml` prints each as a machine file to start your own from.
    #[command(after_long_help = cmd::machines::AFTER_HELP)]
    Machines(cmd::machines::Args),
    /// Hammer a PageHeap with real threads and check that no page is lost or handed out
    /// twice.
    ///
    /// Workers allocate blocks of every order 0..=10 with GFP flags of every migratetype,
    /// free them, hand them to each other (cross-CPU frees), carve and free page_frag
    /// fragments, tick and drain the pagesets, while the main thread ticks and drains too;
    /// every few seconds all of them allocate until memory runs out and then free everything.
    /// Each owner writes its tag into every 4 KiB page it gets and checks it on free and
    /// handoff, and a per-frame ledger catches a frame given to two owners. At each exhaustion
    /// cycle and at the end: every page free, the validator, fresh allocations up to order
    /// 10. Exits non-zero on any violation.
    Stress(cmd::stress::Args),
    /// Check the model against reality: every workload on this host, on the real runner and
    /// on the model of this host (its memory hierarchy as `calibrate` measured it), side by
    /// side: run time, allocator calls, zone-lock acquisitions, hold and wait, refills,
    /// drains, free_high, cold touches; the ratio model/real and a verdict per workload.
    ///
    /// The model runs once (it is deterministic), the real runner `--runs` times (median),
    /// going round the workloads so that a slow spell of the host shorter than a round falls
    /// on one run of each. A workload agrees when its run time, zone-lock acquisitions, refills and drains are
    /// within ±15 % of the real median. Result rows go to results/ unless --no-save.
    Validate(cmd::validate::Args),
    /// Print the help of a command (`pagealloc help reproduce`), or of pagealloc itself.
    Help(HelpArgs),
}

/// Arguments of `pagealloc help`.
#[derive(Debug, clap::Args)]
struct HelpArgs {
    /// The command (and subcommand) whose help to print; none: pagealloc's own.
    command: Vec<String>,
}

/// Run the command; a user error (a bad file, a bad flag, a workload that does not fit)
/// prints as one line with its causes and exits 1, without a backtrace whatever
/// `RUST_BACKTRACE` says: backtraces are for bugs, which panic.
fn main() {
    heap::default_sigpipe();
    if let Err(e) = run(Cli::parse()) {
        eprintln!("Error: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    if let Some(mib) = cli.max_input_mib {
        input::set_cap_mib(mib);
    }
    match cli.command {
        Command::Exercise(args) => cmd::exercise::run(&args),
        Command::Bench(args) => cmd::bench::run(&args),
        Command::Calibrate(args) => cmd::calibrate::run(&args),
        Command::Presets(args) => cmd::presets::run(&args),
        Command::Sizing(args) => cmd::sizing::run(&args),
        Command::Run(args) => cmd::run::run(&args),
        Command::Replay(args) => cmd::replay::run(&args),
        Command::Compare(args) => cmd::compare::run(&args),
        Command::Explore(args) => cmd::explore::run(&args),
        Command::Reproduce(args) => cmd::reproduce::run(&args),
        Command::Workloads(args) => cmd::workloads::run(&args),
        Command::Plot(args) => cmd::plot::run(&args),
        Command::Machines(args) => cmd::machines::run(&args),
        Command::Stress(args) => cmd::stress::run(&args),
        Command::Validate(args) => cmd::validate::run(&args),
        Command::Help(args) => help(&args.command),
    }
}

/// `pagealloc help [COMMAND…]`: the long help of that command.
fn help(path: &[String]) -> Result<()> {
    use clap::CommandFactory as _;
    let mut cmd = Cli::command();
    cmd.build();
    let mut at = &mut cmd;
    for name in path {
        let names: Vec<String> = at.get_subcommands().map(|c| c.get_name().to_string()).collect();
        at = at.find_subcommand_mut(name).ok_or_else(|| {
            anyhow::anyhow!("no command `{name}`; the commands are: {}", names.join(", "))
        })?;
    }
    at.print_long_help()?;
    Ok(())
}

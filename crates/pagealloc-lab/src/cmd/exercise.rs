//! `pagealloc exercise`: a random program of allocator operations on a machine of the
//! user's choosing, checked against the oracle and the validator, with a summary of what the
//! allocator did (per-zone free blocks by order, counters).

use anyhow::{bail, Result};
use pagealloc::{MemoryMap, NodeId, PageAllocator};
use pagealloc_testkit::program::{random_program, Mix};
use pagealloc_testkit::runner::{run as run_program, RunOptions};

use crate::preset_file::resolve;

/// Arguments of `pagealloc exercise`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Memory per node, in MiB. Node 0 starts at physical address 0, so it has DMA and DMA32
    /// zones; memory above 4 GiB is ZONE_NORMAL.
    #[arg(long, default_value_t = 6144)]
    pub mib: u64,
    /// Number of NUMA nodes (each with the same memory and CPUs, laid out one after another).
    #[arg(long, default_value_t = 1)]
    pub nodes: u32,
    /// CPUs per node.
    #[arg(long, default_value_t = 4)]
    pub cpus: u32,
    /// Number of operations.
    #[arg(long, default_value_t = 200_000)]
    pub ops: usize,
    /// Seed of the random program (same seed, same program, same result).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run the validator after every this many operations (0: only at the end).
    #[arg(long, default_value_t = 10_000)]
    pub validate_every: usize,
    /// Policy preset: a built-in preset name (`pagealloc presets` lists them) or a preset file
    /// (.toml: a built-in base plus switch and tunable overrides, see `pagealloc presets
    /// --help`), whose tunables are used too.
    #[arg(long, default_value = "modern", value_name = "NAME_OR_FILE")]
    pub preset: String,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Run the command.
pub fn run(args: &Args) -> Result<()> {
    if args.mib == 0 || args.nodes == 0 || args.cpus == 0 {
        bail!("--mib, --nodes and --cpus must be at least 1");
    }
    let preset = resolve(&args.preset)?;
    let mut map = MemoryMap::new();
    let bytes = args.mib << 20;
    for n in 0..args.nodes {
        let start = u64::from(n) * bytes;
        map.add_range(NodeId(n), start..start + bytes)?.set_cpus(NodeId(n), args.cpus);
    }
    let pa = PageAllocator::new(map, preset.tunables, preset.policy)?;
    let ops = random_program(args.seed, args.ops, pa.nr_cpus(), Mix::default());
    let started = std::time::Instant::now();
    let opts = RunOptions { validate_every: args.validate_every, free_all_at_end: true };
    let (stats, _) =
        run_program(&pa, &ops, opts).map_err(|f| anyhow::anyhow!("check failed: {f}"))?;
    let elapsed = started.elapsed();
    let events = pa.vm_events();
    if args.json {
        let zones: Vec<_> = pa
            .zones()
            .iter()
            .map(|z| {
                serde_json::json!({
                    "node": z.node().0,
                    "zone": z.zone_type().name(),
                    "managed": z.managed_pages().0,
                    "free": z.free_pages().0,
                    "nr_free": pagealloc::Order::all().map(|o| z.nr_free(o)).collect::<Vec<_>>(),
                })
            })
            .collect();
        let counters: serde_json::Map<_, _> =
            events.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect();
        let tunables: serde_json::Map<_, _> = pa
            .tunables()
            .values()
            .map(|(k, v)| (k.to_owned(), crate::cmd::presets::json_value(&v)))
            .collect();
        let doc = serde_json::json!({
            "ops": args.ops,
            "seed": args.seed,
            "preset": preset.name,
            "tunables": tunables,
            "allocs": stats.allocs,
            "alloc_failures": stats.alloc_failures,
            "frees": stats.frees,
            "bad_frees_refused": stats.bad_frees,
            "violations": 0,
            "zones": zones,
            "counters": counters,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    if let Some(file) = &preset.file {
        let overrides: Vec<String> =
            preset.overrides.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        println!(
            "preset {} from {}: {} with {}",
            preset.name,
            file.display(),
            preset.base,
            if overrides.is_empty() { "no changes".to_owned() } else { overrides.join(", ") }
        );
    }
    println!(
        "{} operations ({} allocations, {} refused, {} frees, {} bad frees refused) in {:.2?}; \
         no invariant broken",
        args.ops, stats.allocs, stats.alloc_failures, stats.frees, stats.bad_frees, elapsed
    );
    println!("\nfree blocks by order after freeing everything (buddyinfo layout):");
    for z in pa.zones() {
        print!("Node {}, zone {:>8} ", z.node().0, z.zone_type().name());
        for o in pagealloc::Order::all() {
            print!("{:>6} ", z.nr_free(o));
        }
        println!();
    }
    println!("\ncounters:");
    for (name, v) in events.iter().filter(|(_, v)| *v > 0) {
        println!("{name} {v}");
    }
    Ok(())
}

//! `pagealloc exercise`: a random program of allocator operations on a machine of the
//! user's choosing, checked against the oracle and the validator, with a summary of what the
//! allocator did (per-zone free blocks by order, counters).

use anyhow::{bail, Result};
use pagealloc::memory_map::{MAX_CPUS, MAX_NODES};
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
    /// Number of NUMA nodes (each with the same memory and CPUs, laid out one after another),
    /// 1..=1024.
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
    let map = memory_map(args)?;
    let preset = resolve(&args.preset)?;
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

/// The machine `--mib`, `--nodes` and `--cpus` describe: every number is bounded (and every
/// product checked) before a node is added, so `--nodes 4294967295` is an error at once
/// instead of four billion range insertions.
fn memory_map(args: &Args) -> Result<MemoryMap> {
    if args.mib == 0 || args.nodes == 0 || args.cpus == 0 {
        bail!("--mib, --nodes and --cpus must be at least 1");
    }
    if args.nodes > MAX_NODES {
        bail!("--nodes {}: a machine has at most {MAX_NODES} nodes", args.nodes);
    }
    let cpus = u64::from(args.cpus) * u64::from(args.nodes);
    if cpus > u64::from(MAX_CPUS) {
        bail!(
            "--cpus {} on each of --nodes {} is {cpus} CPUs: a machine has at most {MAX_CPUS}",
            args.cpus,
            args.nodes
        );
    }
    let bytes = args.mib.checked_mul(1 << 20);
    let Some(bytes) = bytes.filter(|b| b.checked_mul(u64::from(args.nodes)).is_some()) else {
        bail!(
            "--mib {} on each of --nodes {} is beyond the 64-bit physical address space",
            args.mib,
            args.nodes
        );
    };
    let mut map = MemoryMap::new();
    for n in 0..args.nodes {
        // n < nodes, and nodes × bytes fits (checked above).
        let start = u64::from(n) * bytes;
        map.add_range(NodeId(n), start..start + bytes)?.set_cpus(NodeId(n), args.cpus)?;
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(mib: u64, nodes: u32, cpus: u32) -> Args {
        Args {
            mib,
            nodes,
            cpus,
            ops: 1,
            seed: 1,
            validate_every: 0,
            preset: "modern".to_owned(),
            json: false,
        }
    }

    fn refusal(a: &Args) -> String {
        memory_map(a).expect_err("refused").to_string()
    }

    /// `--nodes 4294967295` used to add four billion ranges, each checked against all the
    /// ones before (a hang); every number is now bounded before the first node is added.
    #[test]
    fn machine_sizes_are_bounded_before_anything_is_built() {
        let msg = refusal(&args(64, u32::MAX, 1));
        assert_eq!(msg, "--nodes 4294967295: a machine has at most 1024 nodes");
        assert!(refusal(&args(64, 1025, 1)).contains("at most 1024 nodes"));
        let msg = refusal(&args(64, 1024, 1025));
        assert!(msg.contains("is 1049600 CPUs: a machine has at most 1048576"), "{msg}");
        let msg = refusal(&args(u64::MAX, 1, 1));
        assert!(msg.contains("beyond the 64-bit physical address space"), "{msg}");
        assert!(refusal(&args(1 << 34, 1 << 10, 1)).contains("beyond the 64-bit"));
        assert!(refusal(&args(64, 0, 1)).contains("at least 1"));
        let map = memory_map(&args(64, 1024, 1)).unwrap();
        assert_eq!((map.nr_nodes(), map.nr_cpus(), map.present_pages()), (1024, 1024, 1 << 24));
    }
}

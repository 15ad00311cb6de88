//! `pagealloc machines`: the machines the model runs on (built-in or from files), with the
//! zones, LLC domains and per-CPU cache shares they turn into, and every assumption behind
//! their numbers.

use std::fmt::Write as _;
use std::io::Write as _;

use anyhow::Result;
use pagealloc::types::PAGE_SIZE;
use pagealloc::Tunables;
use serde_json::json;

use crate::cmd::presets::{wrap, wrap_atoms};
use crate::machine::{fmt_bytes, Machine, NodeSpec};

/// Text shown after `pagealloc machines --help`.
pub const AFTER_HELP: &str = "\
A machine file describes the nodes, their CPUs, memory and caches:

    # my-box.toml
    name = \"my-box\"                # optional; default: the file stem
    description = \"...\"            # optional; so is source = \"where the facts come from\"
    arch = \"x86_64\"                # optional: x86_64 (default), arm64 or flat (one Normal zone)
    min_free_kbytes = 0            # optional; 0 or absent: the kernel's boot value
    watermark_scale_factor = 10    # optional; 1..=3000, default 10
    assumptions = [\"...\"]          # optional: every number you guessed, and why
    [[node]]                       # one table per NUMA node, node 0 first
    cpus = 32                      # 0 for a memory-only node
    memory_gib = 64                # or memory_mib / memory_kib (whole 4 KiB pages)
    llc_mib = 32                   # or llc_kib: the last-level cache of one domain
    llc_shared_by = 32             # optional: CPUs per LLC domain (default: the node's)
    l2_kib = 1024                  # with l2_shared_by (default 1); the model needs it
    l1d_kib = 48                   # optional, with l1d_shared_by (default 1)

    [hierarchy]                    # what each access costs; the model needs it
    like = \"icl-2s-128\"            # optional: start from a built-in machine's figures
    l2_hit_ns = { value = 4.0, source = \"where it was published\" }
    # ... every figure is { value = NUMBER, source = \"...\" }: l2_hit_ns, llc_hit_ns,
    # c2c_same_llc_ns, dram_local_ns, handoff_same_llc_ns, write_llc_gbps, write_dram_gbps;
    # with several nodes also c2c_remote_ns, dram_remote_ns, handoff_remote_ns; with several
    # LLCs on one node also c2c_other_llc_ns, handoff_other_llc_ns; optional:
    # write_l2_gbps (a page still in the core's L2; without it, the LLC's rate), beside it
    # write_c2c_gbps (a page another core of the LLC wrote last and still holds), and a
    # host's wake-up as calibrate measures it: wake_idle_ns, wake_call_ns, each may add the
    # measured spread, quantiles = [Q1, ..., Qn] (ascending, the i-th the i/(n+1) quantile)

Keys above the first [[node]] belong to the machine; after a [[node]] header, to that node.
Memory is laid out from physical address 0, node after node; on x86_64 the 3-4 GiB PCI window
is skipped, so node 0 gets DMA, DMA32 and (past 4 GiB) Normal zones. CPUs are numbered node by
node. L2 and L1d give the v1 cache input (the sum of data-cache slices per CPU); without them
it is unknown. To describe a real machine: CPUs and memory per node from
/sys/devices/system/node/node*/{cpulist,meminfo}, caches from
/sys/devices/system/cpu/cpu0/cache/index*/{level,type,size,shared_cpu_list}.

The [hierarchy] figures price every cache line the allocator touches in the model, by where
the line is (this core's L2, the LLC, another core's or LLC's or node's cache, local or remote
DRAM), each lock hand-off by the distance between the two holders, and page writes by the
write rates. Each needs the published measurement it comes from: for this machine,
`pagealloc calibrate --machine-out FILE` measures what one node can.

Check a file with `pagealloc machines my-box.toml`; `pagealloc machines --toml spr-2s-224`
prints a built-in machine as a file to start from.";

/// Arguments of `pagealloc machines`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Built-in machine names or machine files (.toml) to show; none: every built-in machine.
    #[arg(value_name = "NAME_OR_FILE")]
    pub machines: Vec<String>,
    /// Show each machine with N CPUs, spread evenly over its nodes (the model's `--cpus`).
    ///
    /// LLC sizes and the number of LLC domains per node are kept, so each CPU's share of its
    /// LLC changes; memory is unchanged.
    #[arg(long, value_name = "N")]
    pub cpus: Option<u32>,
    /// Print one JSON document instead of text.
    ///
    /// The document is {"machines":[…]}, one object per machine with "name", "description",
    /// "source", "arch", "nr_cpus", "memory_bytes", "nr_llc_domains", "min_free_kbytes"
    /// (null: the kernel's boot value), "boot_min_free_kbytes", "watermark_scale_factor"
    /// (null: 10), "nodes" ([{"cpus", "first_cpu", "memory_bytes", "ranges" ([[start, end]]
    /// bytes), "llc_bytes", "llc_shared_by", "llc_domains" ([first, last]), "l2", "l1d"
    /// ({"bytes", "shared_by"} or null), "cache_per_cpu" ({"llc_slice_bytes",
    /// "data_slices_bytes"} of the node's first CPU), "zones" ([{"zone", "start_pfn",
    /// "end_pfn", "pages"}])}]), "assumptions", "hierarchy" ({"KEY": {"value", "source"} and
    /// "quantiles" where the figure has a spread} or null) and, for a file, "file".
    #[arg(long, conflicts_with = "toml")]
    pub json: bool,
    /// Print each machine as a machine file (TOML), to start one of your own from.
    #[arg(long)]
    pub toml: bool,
}

/// Run the command.
pub fn run(args: &Args) -> Result<()> {
    let mut machines: Vec<Machine> = if args.machines.is_empty() {
        Machine::builtins()
    } else {
        args.machines.iter().map(|s| Machine::resolve(s)).collect::<Result<_>>()?
    };
    if let Some(n) = args.cpus {
        machines = machines.iter().map(|m| m.with_cpus(n)).collect::<Result<_>>()?;
    }
    for m in &machines {
        // What the allocator would be given; refuses what the core would refuse.
        m.memory_map().map_err(|e| anyhow::anyhow!("machine `{}`: {e}", m.name))?;
    }
    let mut out = String::new();
    if args.json {
        let doc = json!({ "machines": machines.iter().map(to_json).collect::<Vec<_>>() });
        out = serde_json::to_string_pretty(&doc)?;
        out.push('\n');
    } else if args.toml {
        for (i, m) in machines.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            // A built-in's name is taken: a copy must be renamed to load as a machine file.
            let _ = writeln!(
                out,
                "# Written by `pagealloc machines --toml`. To use it as your own machine file, \
                 change `name`."
            );
            out.push_str(&m.to_toml());
        }
    } else {
        for (i, m) in machines.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            write_text(&mut out, m);
        }
        if args.machines.is_empty() {
            let _ = write!(
                out,
                "\n{} machines. Describe your own in a .toml file: see `pagealloc machines \
                 --help`.\n",
                machines.len()
            );
        }
    }
    // `pagealloc machines | head` closes the pipe early; that is not an error.
    match std::io::stdout().lock().write_all(out.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// One machine's JSON object.
fn to_json(m: &Machine) -> serde_json::Value {
    let zones = m.zone_spans();
    let ranges = m.node_ranges();
    let mut first_domain = 0;
    let nodes: Vec<_> = m
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let cpus = m.cpus_of_node(i);
            let domains = n.nr_llc_domains();
            let level = |c: Option<crate::machine::CacheLevel>| {
                c.map(|c| json!({"bytes": c.bytes, "shared_by": c.shared_by}))
            };
            let cache = (n.cpus > 0).then(|| {
                let c = m.cache_info(cpus.start);
                json!({
                    "llc_slice_bytes": c.llc_slice_bytes,
                    "data_slices_bytes": c.data_slices_bytes,
                })
            });
            let node_zones: Vec<_> = zones
                .iter()
                .filter(|z| z.node == i)
                .map(|z| {
                    json!({
                        "zone": z.zone.name(),
                        "start_pfn": z.pfns.start.0,
                        "end_pfn": z.pfns.end.0,
                        "pages": z.pages(),
                    })
                })
                .collect();
            let obj = json!({
                "cpus": n.cpus,
                "first_cpu": cpus.start,
                "memory_bytes": n.memory_bytes,
                "ranges": ranges[i].iter().map(|r| [r.start, r.end]).collect::<Vec<_>>(),
                "llc_bytes": n.llc_bytes,
                "llc_shared_by": n.llc_shared_by,
                "llc_domains": (domains > 0).then(|| [first_domain, first_domain + domains - 1]),
                "l2": level(n.l2),
                "l1d": level(n.l1d),
                "cache_per_cpu": cache,
                "zones": node_zones,
            });
            first_domain += domains;
            obj
        })
        .collect();
    let mut obj = json!({
        "name": m.name,
        "description": m.description,
        "source": m.source,
        "arch": m.arch.name(),
        "nr_cpus": m.nr_cpus(),
        "memory_bytes": m.memory_bytes(),
        "nr_llc_domains": m.nr_llc_domains(),
        "min_free_kbytes": m.min_free_kbytes,
        "boot_min_free_kbytes": m.boot_min_free_kbytes(),
        "watermark_scale_factor": m.watermark_scale_factor,
        "nodes": nodes,
        "assumptions": m.assumptions,
        "hierarchy": m.hierarchy.as_ref().map(|h| {
            h.iter()
                .map(|(l, f)| {
                    let mut fig = json!({"value": f.value, "source": f.source});
                    if !f.quantiles.is_empty() {
                        fig["quantiles"] = json!(f.quantiles);
                    }
                    (l.key().to_string(), fig)
                })
                .collect::<serde_json::Map<_, _>>()
        }),
    });
    if let Some(file) = &m.file {
        obj["file"] = json!(file.display().to_string());
    }
    obj
}

/// `0-111`, or `5` for a single CPU (or domain).
fn span_text(first: u64, last: u64) -> String {
    if first == last {
        first.to_string()
    } else {
        format!("{first}-{last}")
    }
}

/// A per-CPU cache share with its size in pages (what the FREE_HIGH_BATCH rules compare).
fn share(bytes: u64) -> String {
    format!("{} ({} pages)", fmt_bytes(bytes), bytes / PAGE_SIZE)
}

/// The caches of one node, as text: LLC domains, then L2 and L1d.
fn caches_text(n: &NodeSpec, first_domain: usize) -> String {
    let domains = n.nr_llc_domains();
    let ids = span_text(first_domain as u64, (first_domain + domains - 1) as u64);
    let mut s = format!(
        "LLC {} shared by {}{} CPU{} (domain{} {ids})",
        fmt_bytes(n.llc_bytes),
        if n.cpus % n.llc_shared_by == 0 { "" } else { "up to " },
        n.llc_shared_by,
        if n.llc_shared_by == 1 { "" } else { "s" },
        if domains == 1 { "" } else { "s" },
    );
    for (name, level) in [("L2", n.l2), ("L1d", n.l1d)] {
        if let Some(c) = level {
            let per =
                if c.shared_by == 1 { "CPU".to_owned() } else { format!("{} CPUs", c.shared_by) };
            let _ = write!(s, ", {name} {} per {per}", fmt_bytes(c.bytes));
        }
    }
    s
}

/// One machine as a block of text.
fn write_text(out: &mut String, m: &Machine) {
    let _ = write!(
        out,
        "{}  {}, {} node{}, {} CPUs, {}, {} LLC domain{}",
        m.name,
        m.arch.name(),
        m.nodes.len(),
        if m.nodes.len() == 1 { "" } else { "s" },
        m.nr_cpus(),
        fmt_bytes(m.memory_bytes()),
        m.nr_llc_domains(),
        if m.nr_llc_domains() == 1 { "" } else { "s" },
    );
    if let Some(file) = &m.file {
        let _ = write!(out, "  (file {})", file.display());
    }
    out.push('\n');
    if !m.description.is_empty() {
        wrap(out, 2, 2, &m.description);
    }
    if !m.source.is_empty() {
        wrap(out, 2, 4, &format!("source: {}", m.source));
    }
    let zones = m.zone_spans();
    let ranges = m.node_ranges();
    for (i, n) in m.nodes.iter().enumerate() {
        let cpus = m.cpus_of_node(i);
        let cpu_text = match n.cpus {
            0 => "no CPUs".to_owned(),
            1 => format!("CPU {}", cpus.start),
            _ => format!("CPUs {}", span_text(cpus.start.into(), u64::from(cpus.end) - 1)),
        };
        let phys: Vec<String> = ranges[i]
            .iter()
            .map(|r| format!("{}..{}", fmt_bytes_or_zero(r.start), fmt_bytes(r.end)))
            .collect();
        let _ = writeln!(
            out,
            "  node {i}: {cpu_text}, {} at {}",
            fmt_bytes(n.memory_bytes),
            phys.join(" + ")
        );
        let zone_atoms: Vec<String> = zones
            .iter()
            .filter(|z| z.node == i)
            .map(|z| {
                format!("{} {} ({} pages)", z.zone, fmt_bytes(z.pages() * PAGE_SIZE), z.pages())
            })
            .collect();
        let mut atoms = vec!["zones:".to_owned()];
        let last = zone_atoms.len().saturating_sub(1);
        atoms.extend(
            zone_atoms.into_iter().enumerate().map(|(k, a)| if k < last { a + "," } else { a }),
        );
        wrap_atoms(out, 4, 11, atoms.iter().map(String::as_str));
        if n.cpus == 0 {
            continue;
        }
        wrap(out, 4, 6, &format!("caches: {}", caches_text(n, m.llc_domain(cpus.start))));
        let first = m.cache_info(cpus.start);
        let lastc = m.cache_info(cpus.end - 1);
        let per_cpu = |c: pagealloc::CacheInfo| {
            let data = if c.data_slices_bytes == 0 {
                "unknown (no L2/L1d given)".to_owned()
            } else {
                share(c.data_slices_bytes)
            };
            format!("LLC slice {}, data-cache slices {data}", share(c.llc_slice_bytes))
        };
        if first == lastc {
            wrap(out, 4, 6, &format!("per CPU: {}", per_cpu(first)));
        } else {
            wrap(out, 4, 6, &format!("CPU {}: {}", cpus.start, per_cpu(first)));
            wrap(out, 4, 6, &format!("CPU {}: {}", cpus.end - 1, per_cpu(lastc)));
        }
    }
    let _ = match m.min_free_kbytes {
        Some(kb) => writeln!(out, "  min_free_kbytes: {kb} KiB (set by the machine)"),
        None => writeln!(
            out,
            "  min_free_kbytes: {} KiB (the kernel's boot value for this memory)",
            m.boot_min_free_kbytes()
        ),
    };
    let _ = match m.watermark_scale_factor {
        Some(f) => writeln!(out, "  watermark_scale_factor: {f} (set by the machine)"),
        None => writeln!(
            out,
            "  watermark_scale_factor: {} (default)",
            Tunables::default().watermark_scale_factor
        ),
    };
    match &m.hierarchy {
        None => out.push_str("  memory hierarchy: none (the model cannot run on this machine)\n"),
        Some(h) => {
            out.push_str("  memory hierarchy:\n");
            for (level, f) in h.iter() {
                let unit = level.unit();
                wrap(out, 4, 8, &format!("{} = {} {unit}: {}", level.key(), f.value, level.what()));
                if let (Some(lo), Some(hi)) = (f.quantiles.first(), f.quantiles.last()) {
                    let n = f.quantiles.len();
                    wrap(
                        out,
                        8,
                        8,
                        &format!(
                            "spread: {n} quantiles, {lo}..{hi} {unit} (the model draws each \
                             wake from them)"
                        ),
                    );
                }
                wrap(out, 8, 8, &format!("source: {}", f.source));
            }
        }
    }
    if m.assumptions.is_empty() {
        out.push_str("  assumptions: none\n");
    } else {
        out.push_str("  assumptions:\n");
        for a in &m.assumptions {
            wrap(out, 4, 6, &format!("- {a}"));
        }
    }
}

/// [`fmt_bytes`], with 0 as `0`.
fn fmt_bytes_or_zero(bytes: u64) -> String {
    if bytes == 0 {
        "0".to_owned()
    } else {
        fmt_bytes(bytes)
    }
}

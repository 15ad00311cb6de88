//! `pagealloc sizing`: recompute what a real kernel printed in `/proc/zoneinfo` — watermarks,
//! lowmem protection, PCP batch / high_min / high_max, the fixed per-CPU `high` of older
//! kernels, the vmstat threshold — with the library's `pagealloc::sizing` rules, and mark every
//! field that differs (docs/kernel-reference.md §2, §8.3).
//!
//! Each field is recomputed from the kernel's *own* inputs in the file, so that one value that
//! drifted does not cascade: LOW from the printed MIN (LOW = MIN + step), HIGH from the printed
//! LOW, PROMO from the printed HIGH, high_min / high_max and the 5.14+ `high` from the printed
//! LOW and batch, the pre-5.14 `high` from the printed batch, protection and batch from the
//! printed managed pages, the threshold from managed pages and the online CPUs. Only MIN is
//! computed from min_free_kbytes and the managed pages of every lowmem zone.
//!
//! The inputs a zoneinfo does not print are taken from the command line, from this machine's
//! `/proc/sys/vm` and `/sys` when the zoneinfo is this machine's, or else inferred and said so:
//! min_free_kbytes from the MIN watermarks, watermark_scale_factor from the low − min steps,
//! an unprinted watermark boost (5.0–5.15) from low − min, the CPUs of each node by splitting the
//! online CPUs evenly, the kernel generation from which lines exist and what the per-CPU
//! `high` values look like. Where a value still differs, a hint says which input value would
//! give the kernel's number (usually a `managed` count from before the kernel last recomputed).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use pagealloc::sizing;
use pagealloc::NrPages;

use crate::input::{self, InputKind};
use crate::zone_check::{analyse, Given, Report, Source};
use crate::zoneinfo::{ZoneInfo, MAX_CPUS};

/// Text shown after `pagealloc sizing --help`.
pub const AFTER_HELP: &str = "\
Reading the output: one table per populated zone with the value the kernel printed, the value
recomputed here and a mark: ✓ equal, ✗ different, · not compared (the kernel does not print
it). Every ✗ comes with a hint naming the input value that would give the kernel's number;
usually it is a managed page count from before the kernel last recomputed (watermarks are
recomputed only at boot, on memory hotplug and when vm.min_free_kbytes or
vm.watermark_scale_factor is written; pagesets also on CPU hotplug).

Fields: min, low, high, promo (watermarks, boost included as printed), protection (the
lowmem_reserve tuple), batch, high_min, high_max (6.7+), pcp_high (the per-CPU high of kernels
that did not auto-tune it: 6 × batch before 5.14, LOW ÷ CPUs of the node from 5.14 to 6.6) and
stat_threshold (\"vm stats threshold\").

Exit status: 0 when every compared field matches, 1 when any differs, 2 when the input cannot be
read or is not a zoneinfo.

docs/real-data.md (\"Sizing against your kernel\") explains what each field is computed from.";

/// Arguments of `pagealloc sizing`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A /proc/zoneinfo written by any kernel from 3.10 on (`-` reads standard input).
    ///
    /// Default: this machine's /proc/zoneinfo, with vm.min_free_kbytes,
    /// vm.watermark_scale_factor, vm.percpu_pagelist_high_fraction and vm.lowmem_reserve_ratio
    /// read from /proc/sys/vm and the CPUs of each node from /sys/devices/system/node.
    #[arg(long, value_name = "FILE")]
    pub zoneinfo: Option<PathBuf>,
    /// vm.min_free_kbytes (KiB) of the kernel that wrote the file (0..=2147483647, the
    /// sysctl's range).
    ///
    /// Default: /proc/sys/vm/min_free_kbytes for this machine; for another machine's file,
    /// inferred from its MIN watermarks (the output says so).
    #[arg(long, value_name = "KIB", value_parser = clap::value_parser!(u64).range(0..=i32::MAX as u64))]
    pub min_free_kbytes: Option<u64>,
    /// vm.watermark_scale_factor (1..=3000, in 1/10000 of a zone's managed pages).
    ///
    /// Default: /proc/sys/vm/watermark_scale_factor for this machine; for a file, the value
    /// its low − min steps agree on, else the kernel default 10.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=3000))]
    pub watermark_scale_factor: Option<u64>,
    /// vm.percpu_pagelist_high_fraction (0, or 8 and above; 5.14+ kernels).
    ///
    /// Default: /proc/sys/vm/percpu_pagelist_high_fraction for this machine, else 0.
    #[arg(long, value_name = "N")]
    pub high_fraction: Option<u32>,
    /// CPUs of each node, in node order (e.g. `4,4`), for another machine's file.
    ///
    /// zoneinfo lists the online CPUs but not their nodes; by default they are split evenly
    /// over the nodes that have memory. Only high_min, high_max and the 5.14–6.6 high use it.
    /// A node may have 0 (memory only), but together they hold every online CPU.
    #[arg(long, value_name = "N,N,…", value_delimiter = ',',
          value_parser = clap::value_parser!(u32).range(0..i64::from(MAX_CPUS)))]
    pub node_cpus: Vec<u32>,
    /// Online CPUs of the kernel that wrote the file (the vm stats threshold and the split of
    /// `high` use it).
    ///
    /// Default: /sys/devices/system/cpu/online for this machine; for a file, the highest CPU
    /// number its pagesets show + 1 (a dump may leave some CPUs' pagesets out).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..i64::from(MAX_CPUS)))]
    pub online_cpus: Option<u32>,
    /// Print one JSON document instead of the tables.
    ///
    /// {"zones":[{"node":0,"zone":"Normal",
    ///   "fields":{"batch":{"kernel":63,"ours":63,"match":true}, …}}],
    ///  "mismatches":N} plus the inputs, the kernel generation assumed and notes. A
    /// per-CPU field's "kernel" is a number when every CPU printed the same, else an array;
    /// "kernel" is null for a field the kernel does not print.
    #[arg(long)]
    pub json: bool,
}

/// Run the command: exit 1 if any field differs, 2 if the input is unusable.
pub fn run(args: &Args) -> Result<()> {
    let report = match load_and_analyse(args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("Error: {e:#}");
            std::process::exit(2);
        }
    };
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&report.to_json())?;
        s.push('\n');
        s
    } else {
        report.to_text()
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
        _ => {}
    }
    if report.mismatches() > 0 {
        std::process::exit(1);
    }
    Ok(())
}

/// This machine's zoneinfo.
const PROC_ZONEINFO: &str = "/proc/zoneinfo";
/// Where this machine's sysctls live.
const PROC_SYS_VM: &str = "/proc/sys/vm";

fn load_and_analyse(args: &Args) -> Result<Report> {
    if let Some(f) = args.high_fraction {
        // The sysctl's own rule: 0 or at least 8.
        sizing::pcp_sizes(0, NrPages(0), 1, 0, 1, f).map_err(anyhow::Error::msg)?;
    }
    let path = args.zoneinfo.clone().unwrap_or_else(|| PathBuf::from(PROC_ZONEINFO));
    let live = path == Path::new(PROC_ZONEINFO);
    let label = input::label(&path);
    let bytes = if path == Path::new("-") {
        input::read_stdin(InputKind::Dump)
    } else {
        input::read(&path, InputKind::Dump)
    }
    .with_context(|| format!("cannot read {label}"))?;
    let text = String::from_utf8_lossy(&bytes);
    let info = ZoneInfo::parse(&text).with_context(|| label.clone())?;

    let mut given = Given {
        min_free_kbytes: args.min_free_kbytes.map(|v| (v, Source::Flag)),
        watermark_scale_factor: args.watermark_scale_factor.map(|v| (v, Source::Flag)),
        high_fraction: args.high_fraction.map(|v| (v, Source::Flag)),
        lowmem_reserve_ratio: None,
        node_cpus: None,
        online_cpus: args.online_cpus.map(|v| (v, Source::Flag)),
    };
    if live {
        read_this_machine(&mut given);
    }
    if !args.node_cpus.is_empty() {
        let online = given.online_cpus.as_ref().map(|o| o.0).or_else(|| info.online_cpus());
        given.node_cpus =
            Some((node_cpus_given(&info, &label, &args.node_cpus, online)?, Source::Flag));
    }
    Ok(analyse(&info, &label, given))
}

/// `--node-cpus` as a map from node to CPUs: one value per node of the file, holding every
/// online CPU between them (`--node-cpus 0` on a file with pagesets was accepted).
fn node_cpus_given(
    info: &ZoneInfo,
    label: &str,
    given: &[u32],
    online: Option<u32>,
) -> Result<BTreeMap<u32, u32>> {
    let nodes = info.nodes();
    if given.len() != nodes.len() {
        bail!(
            "--node-cpus lists {} nodes but {label} has {} ({:?})",
            given.len(),
            nodes.len(),
            nodes
        );
    }
    let total: u64 = given.iter().map(|&c| u64::from(c)).sum();
    let list = given.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    if total == 0 {
        bail!(
            "--node-cpus {list}: no node has a CPU; the nodes hold the online CPUs, at least one"
        );
    }
    if let Some(n) = online.filter(|&n| total < u64::from(n)) {
        bail!(
            "--node-cpus {list}: {total} CPU(s) in all, but {n} are online (the highest CPU \
             number of the pagesets + 1, or --online-cpus): every online CPU is on a node"
        );
    }
    Ok(nodes.into_iter().zip(given.iter().copied()).collect())
}

/// Fill what the command line left open from /proc/sys/vm and /sys.
fn read_this_machine(given: &mut Given) {
    let read = |name: &str| -> Option<(String, Source)> {
        let path = format!("{PROC_SYS_VM}/{name}");
        let s = input::read_text(Path::new(&path), InputKind::Dump).ok()?;
        Some((s, Source::Read(path)))
    };
    let read_num = |name: &str| read(name).and_then(|(s, src)| Some((s.trim().parse().ok()?, src)));
    if given.min_free_kbytes.is_none() {
        given.min_free_kbytes = read_num("min_free_kbytes");
    }
    if given.watermark_scale_factor.is_none() {
        given.watermark_scale_factor = read_num("watermark_scale_factor");
    }
    if given.high_fraction.is_none() {
        given.high_fraction =
            read_num("percpu_pagelist_high_fraction").map(|(v, s): (u64, Source)| (v as u32, s));
    }
    if given.online_cpus.is_none() {
        given.online_cpus = online_cpus_from_sys();
    }
    if let Some((s, src)) = read("lowmem_reserve_ratio") {
        let v: Vec<u64> = s.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        if v.len() >= 3 {
            let mut ratios = sizing::DEFAULT_LOWMEM_RESERVE_RATIO;
            for (slot, r) in ratios.iter_mut().zip(v) {
                *slot = r;
            }
            given.lowmem_reserve_ratio = Some((ratios, src));
        }
    }
    if given.node_cpus.is_none() {
        given.node_cpus = node_cpus_from_sys();
    }
}

/// Online CPUs, from /sys.
fn online_cpus_from_sys() -> Option<(u32, Source)> {
    let path = "/sys/devices/system/cpu/online";
    let list = input::read_text(Path::new(path), InputKind::Dump).ok()?;
    let n = u32::try_from(parse_cpu_list(&list)?.len()).ok().filter(|&n| n > 0)?;
    Some((n, Source::Read(path.into())))
}

/// CPUs of each online node that are online, from /sys.
fn node_cpus_from_sys() -> Option<(BTreeMap<u32, u32>, Source)> {
    let sys = |p: &Path| input::read_text(p, InputKind::Dump).ok();
    let online = sys(Path::new("/sys/devices/system/cpu/online"))?;
    let online = parse_cpu_list(&online)?;
    let mut map = BTreeMap::new();
    for entry in std::fs::read_dir("/sys/devices/system/node").ok()? {
        let entry = entry.ok()?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(node) = name.strip_prefix("node").and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let list = sys(&entry.path().join("cpulist"))?;
        let cpus = parse_cpu_list(&list)?;
        map.insert(node, cpus.iter().filter(|c| online.contains(c)).count() as u32);
    }
    (!map.is_empty()).then(|| (map, Source::Read("/sys/devices/system/node/node*/cpulist".into())))
}

/// `0-3,8,10-11` ⇒ the CPU numbers.
fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<u32>().ok()?..=b.parse::<u32>().ok()?),
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
    }

    #[test]
    fn node_cpus_hold_every_online_cpu() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/section-2-9-zoneinfo.txt");
        let info = ZoneInfo::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
        let e = node_cpus_given(&info, "f", &[0], Some(2)).unwrap_err().to_string();
        assert!(e.contains("--node-cpus 0: no node has a CPU"), "{e}");
        let e = node_cpus_given(&info, "f", &[1], Some(2)).unwrap_err().to_string();
        assert!(e.contains("--node-cpus 1: 1 CPU(s) in all, but 2 are online"), "{e}");
        assert_eq!(node_cpus_given(&info, "f", &[4], Some(2)).unwrap(), BTreeMap::from([(0, 4)]));
    }
}

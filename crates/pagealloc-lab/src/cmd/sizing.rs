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
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use pagealloc::sizing::{self, Watermarks};
use pagealloc::types::{mult_frac, PAGEBLOCK_NR_PAGES};
use pagealloc::{NrPages, ZoneType};
use serde_json::{json, Value};

use crate::input::{self, InputKind};
use crate::zoneinfo::{Field, ZoneEntry, ZoneInfo, MAX_CPUS};

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

// ---------------------------------------------------------------------------------------------
// Inputs

/// Where an input value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Source {
    /// A command-line option.
    Flag,
    /// Read from this file of this machine.
    Read(String),
    /// Worked out from the zoneinfo; how.
    Inferred(String),
    /// The kernel's default, assumed; why.
    Default(String),
}

impl Source {
    fn kind(&self) -> &'static str {
        match self {
            Source::Flag => "option",
            Source::Read(_) => "read",
            Source::Inferred(_) => "inferred",
            Source::Default(_) => "default",
        }
    }

    fn detail(&self) -> String {
        match self {
            Source::Flag => "given on the command line".to_owned(),
            Source::Read(path) => format!("read from {path}"),
            Source::Inferred(how) => format!("inferred: {how}"),
            Source::Default(why) => format!("kernel default, {why}"),
        }
    }
}

/// Inputs given or read before looking at the file.
#[derive(Debug)]
struct Given {
    min_free_kbytes: Option<(u64, Source)>,
    watermark_scale_factor: Option<(u64, Source)>,
    high_fraction: Option<(u32, Source)>,
    lowmem_reserve_ratio: Option<([u64; 4], Source)>,
    node_cpus: Option<(BTreeMap<u32, u32>, Source)>,
    online_cpus: Option<(u32, Source)>,
}

/// How the per-CPU pagesets were sized, by kernel generation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Era {
    /// high = 6 × batch, batch capped at 31 (512 KiB).
    Before4_19,
    /// high = 6 × batch, batch up to 63.
    SixTimesBatch,
    /// high = LOW / CPUs of the node, fixed.
    LowSplit,
    /// high auto-tuned; high_min / high_max not printed.
    AutoTuned,
    /// high auto-tuned; high_min / high_max printed.
    AutoTunedPrinted,
}

impl Era {
    fn label(self) -> &'static str {
        match self {
            Era::Before4_19 => "before 4.19: per-CPU high = 6 × batch, batch at most 31",
            Era::SixTimesBatch => "4.19–5.13: per-CPU high = 6 × batch, batch at most 63",
            Era::LowSplit => {
                "5.14–6.6: per-CPU high fixed at LOW ÷ CPUs of the node (or a 6.7+ kernel whose \
                 pagesets all sit at high_min)"
            }
            Era::AutoTuned => {
                "6.7–6.12: per-CPU high auto-tuned between high_min and high_max, which this \
                 kernel does not print"
            }
            Era::AutoTunedPrinted => {
                "6.13 or later: per-CPU high auto-tuned between high_min and high_max, both printed"
            }
        }
    }

    fn key(self) -> &'static str {
        match self {
            Era::Before4_19 => "before-4.19",
            Era::SixTimesBatch => "4.19-5.13",
            Era::LowSplit => "5.14-6.6",
            Era::AutoTuned => "6.7-6.12",
            Era::AutoTunedPrinted => "6.13+",
        }
    }

    fn auto_tuned(self) -> bool {
        matches!(self, Era::AutoTuned | Era::AutoTunedPrinted)
    }

    /// The PCP batch of a zone with `managed` pages in this generation.
    fn batch(self, managed: u64) -> u32 {
        match self {
            Era::Before4_19 => {
                sizing::zone_batchsize_raw(NrPages(managed), sizing::PRE_4_19_BATCH_CAP_PAGES)
                    .max(1)
            }
            _ => sizing::zone_batchsize(NrPages(managed)),
        }
    }

    fn batch_cap(self) -> u64 {
        if self == Era::Before4_19 {
            sizing::PRE_4_19_BATCH_CAP_PAGES
        } else {
            sizing::BATCH_CAP_PAGES
        }
    }
}

/// How a zone's watermark boost is known.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Boost {
    /// The `boost` line.
    Printed(u64),
    /// No `boost` line, but low − min proves the marks include one.
    Inferred(u64),
    /// No `boost` line and nothing suggests one: 0.
    Unprinted,
}

impl Boost {
    fn pages(self) -> u64 {
        match self {
            Boost::Printed(b) | Boost::Inferred(b) => b,
            Boost::Unprinted => 0,
        }
    }
}

/// A populated zone of a modelled type, with what the checks read from it.
#[derive(Debug)]
struct Zone<'a> {
    entry: &'a ZoneEntry,
    /// Its index among the modelled zones of the file (in `all_zones`).
    idx: usize,
    zt: ZoneType,
    managed: u64,
    kmin: u64,
    klow: u64,
    khigh: u64,
    boost: Boost,
    /// The kernel's batch when every CPU printed the same one.
    kbatch: Option<u32>,
}

impl Zone<'_> {
    /// The unboosted MIN: the kernel's `tmp`, its share of min_free_kbytes.
    fn share(&self) -> u64 {
        self.kmin.saturating_sub(self.boost.pages())
    }

    /// Per-CPU values of one pageset field.
    fn per_cpu(&self, f: impl Fn(&crate::zoneinfo::Pageset) -> Option<i64>) -> Vec<i64> {
        self.entry.pagesets.iter().filter_map(f).collect()
    }
}

/// A value as printed or computed.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Val {
    /// One number.
    N(i64),
    /// A tuple (protection).
    List(Vec<i64>),
    /// One number per CPU.
    PerCpu(Vec<i64>),
}

impl Val {
    fn n(v: u64) -> Val {
        Val::N(i64::try_from(v).unwrap_or(i64::MAX))
    }

    /// The per-CPU values, or None when no CPU printed the field.
    fn per_cpu(v: Vec<i64>) -> Option<Val> {
        (!v.is_empty()).then_some(Val::PerCpu(v))
    }

    fn uniform(&self) -> Option<i64> {
        match self {
            Val::N(v) => Some(*v),
            Val::PerCpu(v) => v.first().copied().filter(|f| v.iter().all(|x| x == f)),
            Val::List(_) => None,
        }
    }

    fn matches(&self, other: &Val) -> bool {
        match (self, other) {
            (Val::List(a), Val::List(b)) => a == b,
            (Val::PerCpu(v), Val::N(o)) | (Val::N(o), Val::PerCpu(v)) => v.iter().all(|x| x == o),
            (a, b) => a.uniform().is_some() && a.uniform() == b.uniform(),
        }
    }

    fn text(&self) -> String {
        match self {
            Val::N(v) => v.to_string(),
            Val::List(v) => {
                format!("({})", v.iter().map(i64::to_string).collect::<Vec<_>>().join(", "))
            }
            Val::PerCpu(v) => match self.uniform() {
                Some(u) => u.to_string(),
                None => format!(
                    "per CPU: {}",
                    v.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
                ),
            },
        }
    }

    fn json(&self) -> Value {
        match (self, self.uniform()) {
            (Val::List(v), _) | (Val::PerCpu(v), None) => json!(v),
            (_, Some(u)) => json!(u),
            (Val::N(v), None) => json!(v),
        }
    }
}

/// One field of one zone.
#[derive(Debug)]
struct Check {
    field: &'static str,
    kernel: Option<Val>,
    ours: Option<Val>,
    hint: Option<String>,
}

impl Check {
    fn outcome(&self) -> Option<bool> {
        Some(self.kernel.as_ref()?.matches(self.ours.as_ref()?))
    }

    fn mark(&self) -> &'static str {
        match self.outcome() {
            Some(true) => "✓",
            Some(false) => "✗",
            None => "·",
        }
    }
}

/// One checked zone.
#[derive(Debug)]
struct ZoneReport {
    node: u32,
    zone: String,
    managed: u64,
    checks: Vec<Check>,
    notes: Vec<String>,
}

/// Everything the command prints.
#[derive(Debug)]
struct Report {
    source: String,
    layout: Vec<String>,
    era: Era,
    era_why: String,
    online_cpus: Option<u32>,
    inputs: Vec<(&'static str, String, Source)>,
    node_cpus: BTreeMap<u32, u32>,
    zones: Vec<ZoneReport>,
    not_checked: Vec<String>,
    notes: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// Analysis

/// Smallest `x` in `lo..=hi` with `f(x) >= target`, for a non-decreasing `f`.
fn first_at_least(lo: u64, hi: u64, target: u64, f: &impl Fn(u64) -> u64) -> Option<u64> {
    if f(hi) < target {
        return None;
    }
    let (mut lo, mut hi) = (lo, hi);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if f(mid) >= target {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo)
}

/// The inputs `x` in `lo..=hi` for which the non-decreasing `f(x)` equals `target`.
fn preimage(lo: u64, hi: u64, target: u64, f: impl Fn(u64) -> u64) -> Option<(u64, u64)> {
    let a = first_at_least(lo, hi, target, &f)?;
    if f(a) != target {
        return None;
    }
    let b = first_at_least(a, hi, target.saturating_add(1), &f).map_or(hi, |x| x - 1);
    Some((a, b))
}

/// `a–b` or `a` for a range of page counts.
fn range_text((a, b): (u64, u64)) -> String {
    if a == b {
        a.to_string()
    } else {
        format!("{a}–{b}")
    }
}

/// Upper end of the searches over page counts (2^40 pages = 4 PiB).
const SEARCH_MAX: u64 = 1 << 40;

fn u32_of(v: i64) -> u32 {
    u32::try_from(v.max(0)).unwrap_or(u32::MAX)
}

fn analyse(info: &ZoneInfo, label: &str, given: Given) -> Report {
    let mut notes = Vec::new();
    let mut not_checked = Vec::new();
    let (online, online_src) = match given.online_cpus.clone() {
        Some((n, src)) => (Some(n), src),
        None => (info.online_cpus(), online_inferred(info)),
    };

    // Every zone of a modelled type (all nodes) with its managed pages: the input of the
    // watermark split. Zones of other types (HighMem on 32-bit kernels) are not modelled.
    let all_zones: Vec<(ZoneType, NrPages)> = info
        .zones
        .iter()
        .filter_map(|z| Some((z.zone_type()?, NrPages(z.managed.unwrap_or(0)))))
        .collect();
    let wsf_given = given.watermark_scale_factor.clone();
    let wsf0 = wsf_given.as_ref().map_or(sizing::DEFAULT_WATERMARK_SCALE_FACTOR, |w| w.0);

    let mut zones = Vec::new();
    let mut idx = 0;
    for e in &info.zones {
        let what = format!("Node {}, zone {}", e.node, e.name);
        let Some(zt) = e.zone_type() else {
            if e.is_populated() || e.name != "Device" {
                not_checked.push(format!("{what}: zone type not modelled"));
            }
            continue;
        };
        idx += 1;
        let idx = idx - 1;
        if !e.is_populated() {
            continue;
        }
        let (Some(kmin), Some(klow), Some(khigh), Some(managed)) =
            (e.min, e.low, e.high, e.managed)
        else {
            not_checked.push(format!("{what}: no min/low/high/managed lines"));
            continue;
        };
        let batches: Vec<i64> = e.pagesets.iter().filter_map(|p| p.batch).collect();
        let kbatch =
            batches.first().copied().filter(|b| batches.iter().all(|x| x == b)).map(u32_of);
        let boost = Boost::Unprinted;
        let mut z = Zone { entry: e, idx, zt, managed, kmin, klow, khigh, boost, kbatch };
        z.boost = match e.boost {
            Some(b) => Boost::Printed(b),
            None => infer_boost(&z, wsf0),
        };
        if let Boost::Inferred(b) = z.boost {
            notes.push(format!(
                "{what}: the printed marks include a watermark boost of {b} pages, which this \
                 kernel does not print (5.0–5.15): low − min = {} is a quarter of an unboosted \
                 MIN of about {}; the boost is taken as the kernel's input",
                klow - kmin,
                kmin - b
            ));
        }
        zones.push(z);
    }
    let empty: Vec<String> = info
        .zones
        .iter()
        .filter(|z| !z.is_populated() && z.zone_type().is_some())
        .map(|z| format!("{} (node {})", z.name, z.node))
        .collect();
    if !empty.is_empty() {
        not_checked.push(format!(
            "empty zones, which never serve an allocation: {} (their marks also changed over the \
             versions: an empty Movable zone prints MIN 0 on older kernels, 32 on recent ones)",
            empty.join(", ")
        ));
    }

    // watermark_scale_factor.
    let (wsf, wsf_src) = match wsf_given {
        Some(w) => w,
        None => infer_wsf(&zones, info.has_pre_4_8_lines),
    };
    // min_free_kbytes.
    let (mfk, mfk_src) = match given.min_free_kbytes.clone() {
        Some(m) => m,
        None => infer_min_free_kbytes(&zones, &all_zones, wsf),
    };
    let (fraction, fraction_src) = given.high_fraction.clone().unwrap_or((
        0,
        Source::Default("assumed: the file cannot tell; pass --high-fraction if it was set".into()),
    ));
    let (ratios, ratios_src) = given
        .lowmem_reserve_ratio
        .clone()
        .unwrap_or((sizing::DEFAULT_LOWMEM_RESERVE_RATIO, Source::Default("assumed".into())));
    // CPUs per node.
    let (node_cpus, node_cpus_src) = match given.node_cpus.clone() {
        Some(n) => n,
        None => split_cpus(info, online),
    };
    let cpus_of = |node: u32| node_cpus.get(&node).copied().unwrap_or(0);

    // The pagesets' generation.
    let (era, era_why) = detect_era(info, &zones, online, fraction, &cpus_of);

    // Protection: which rule for empty upper zones.
    let (zero_rule, rule_text) = detect_reserve_rule(info, &ratios);

    let full = sizing::zone_watermarks(mfk, wsf, &all_zones);
    let full_of = |z: &Zone| -> Watermarks { full.get(z.idx).copied().unwrap_or_default() };
    let ctx = Ctx {
        info,
        lowmem_total: lowmem_total(&all_zones),
        lowmem_mins: info
            .zones
            .iter()
            .filter(|e| e.zone_type().is_some_and(ZoneType::is_lowmem))
            .map(|e| e.min.unwrap_or(0).saturating_sub(e.boost.unwrap_or(0)))
            .fold(0, u64::saturating_add),
        mfk,
        mfk_src: &mfk_src,
        wsf,
        fraction,
        ratios,
        zero_rule,
        era,
        online,
    };

    let mut reports = Vec::new();
    for z in &zones {
        let node_cpu_count = cpus_of(z.entry.node);
        reports.push(check_zone(&ctx, z, full_of(z), node_cpu_count));
    }

    let inputs = vec![
        ("min_free_kbytes", format!("{mfk} KiB"), mfk_src),
        ("watermark_scale_factor", wsf.to_string(), wsf_src),
        ("percpu_pagelist_high_fraction", fraction.to_string(), fraction_src),
        (
            "lowmem_reserve_ratio",
            format!("{}; empty upper zones: {rule_text}", ratios.map(|r| r.to_string()).join(" ")),
            ratios_src,
        ),
        (
            "CPUs per node",
            node_cpus.iter().map(|(n, c)| format!("node {n}: {c}")).collect::<Vec<_>>().join(", "),
            node_cpus_src,
        ),
        ("online CPUs", online.map_or("unknown".to_owned(), |n| n.to_string()), online_src),
    ];
    if info.skipped_lines > 0 {
        notes.push(format!(
            "{} line(s) of the file were neither zoneinfo fields nor statistics and were skipped",
            info.skipped_lines
        ));
    }
    Report {
        source: label.to_owned(),
        layout: layout_markers(info),
        era,
        era_why,
        online_cpus: online,
        inputs,
        node_cpus,
        zones: reports,
        not_checked,
        notes,
    }
}

/// What the lines of the file say about the kernel.
fn layout_markers(info: &ZoneInfo) -> Vec<String> {
    let mut m = Vec::new();
    if info.has_pre_4_8_lines {
        m.push("scanned / all_unreclaimable lines (before 4.8)".to_owned());
    }
    if info.has_node_stats {
        m.push("per-node stats (4.8+)".to_owned());
    }
    m.push(
        if info.prints(Field::Boost) { "boost (5.16+)" } else { "no boost line (before 5.16)" }
            .to_owned(),
    );
    if info.prints(Field::Promo) {
        m.push("promo (6.12+)".to_owned());
    }
    if info.prints(Field::Cma) {
        m.push("cma".to_owned());
    }
    if info.prints(Field::HighMin) {
        m.push("high_min / high_max (6.13+)".to_owned());
    }
    if let Some(n) = info.zones.iter().find_map(|z| z.protection.as_ref().map(Vec::len)) {
        m.push(format!("protection of {n} zones{}", if n == 4 { " (no ZONE_DEVICE)" } else { "" }));
    }
    m
}

/// The watermark boost hidden in the printed marks of a kernel that does not print it.
///
/// The step `low − min` is max(MIN/4, managed × wsf / 10000) of the *unboosted* MIN; when it is
/// the MIN/4 term, the unboosted MIN is 4 × step .. 4 × step + 3, and a printed MIN above that
/// carries a boost — a whole number of pageblocks, or the boost cap.
fn infer_boost(z: &Zone, wsf: u64) -> Boost {
    let step = z.klow.saturating_sub(z.kmin);
    let wsf_term = mult_frac(z.managed, wsf, 10_000);
    if step <= wsf_term || z.kmin <= 4 * step + 3 {
        return Boost::Unprinted;
    }
    for tmp in (4 * step..=4 * step + 3).rev() {
        let b = z.kmin - tmp;
        let high = tmp + 2 * step;
        let cap = sizing::watermark_boost_step(
            u64::MAX,
            high,
            NrPages(z.managed),
            sizing::DEFAULT_WATERMARK_BOOST_FACTOR,
        );
        if (b % PAGEBLOCK_NR_PAGES == 0 && cap.is_some_and(|c| b <= c)) || cap == Some(b) {
            return Boost::Inferred(b);
        }
    }
    Boost::Unprinted
}

/// The watermark_scale_factor every zone's low − min step agrees with, else the default.
///
/// 0 stands for kernels before 4.6, which had no scale factor: LOW = MIN + MIN/4 and HIGH =
/// MIN + MIN/2. It is chosen when the steps are exactly MIN/4 where the default would give more,
/// and either the file has the pre-4.8 lines or no factor from 1 up fits.
fn infer_wsf(zones: &[Zone], pre_4_8: bool) -> (u64, Source) {
    let default = sizing::DEFAULT_WATERMARK_SCALE_FACTOR;
    let mut candidates: Vec<u64> = (0..=3000).collect();
    let mut constrained = 0;
    for z in zones.iter().filter(|z| z.zt.is_lowmem()) {
        let step = z.klow.saturating_sub(z.kmin);
        if step > z.share() / 4 {
            // The step can only be the scale-factor term.
            constrained += 1;
            candidates.retain(|&w| mult_frac(z.managed, w, 10_000) == step);
        } else {
            candidates.retain(|&w| mult_frac(z.managed, w, 10_000) <= step);
        }
    }
    if candidates.contains(&default) {
        let why = if constrained == 0 {
            "assumed: every zone's low − min is a quarter of its MIN, which does not depend on it"
        } else {
            "the low − min steps agree with it"
        };
        return (default, Source::Default(why.into()));
    }
    let nonzero = candidates.iter().copied().find(|&w| w > 0);
    if candidates.first() == Some(&0) && (pre_4_8 || nonzero.is_none()) {
        return (
            0,
            Source::Inferred(
                "every low − min step is exactly MIN ÷ 4 where a scale factor of 10 would give \
                 more: a kernel before 4.6, which had no watermark_scale_factor (LOW = MIN + MIN/4, \
                 HIGH = MIN + MIN/2)"
                    .into(),
            ),
        );
    }
    match nonzero {
        Some(w) => (
            w,
            Source::Inferred(format!(
                "the smallest value every zone's low − min step agrees with ({} zone(s) pin it)",
                constrained
            )),
        ),
        None => (
            default,
            Source::Default(
                "assumed: no single value reproduces every zone's low − min step (see the \
                 mismatches)"
                    .into(),
            ),
        ),
    }
}

/// min_free_kbytes from the MIN watermarks.
///
/// At the last recompute each lowmem zone's unboosted MIN was floor(pages_min × managed ÷
/// lowmem total), so the MINs add up to pages_min minus less than one page per zone — whatever
/// managed did since. Within that range, the kernel's own choices come first (the THP
/// recommendation khugepaged sets, then the boot default); otherwise the value that reproduces
/// most MINs with the file's managed pages.
fn infer_min_free_kbytes(zones: &[Zone], all: &[(ZoneType, NrPages)], wsf: u64) -> (u64, Source) {
    let lowmem: Vec<&Zone> = zones.iter().filter(|z| z.zt.is_lowmem()).collect();
    if lowmem.is_empty() {
        return (
            sizing::MIN_FREE_KBYTES_FLOOR,
            Source::Default("assumed: the file has no populated lowmem zone".into()),
        );
    }
    // Page counts are at most 2^40 (zoneinfo.rs) and zones at most 1024 nodes × 4 types.
    let sum: u64 = lowmem.iter().map(|z| z.share()).fold(0, u64::saturating_add);
    let n = lowmem.len() as u64;
    let range = sum..sum.saturating_add(n);
    let populated_lowmem = zones.iter().filter(|z| z.zt <= ZoneType::Normal).count() as u64;
    let marks: Vec<(ZoneType, NrPages, u64)> = zones
        .iter()
        .map(|z| (z.zt, NrPages(z.managed), z.khigh.saturating_sub(z.boost.pages())))
        .collect();
    let thp = sizing::thp_recommended_min_free_kbytes(
        populated_lowmem,
        sizing::nr_free_zone_pages(&marks, ZoneType::Normal),
    );
    let boot_marks: Vec<(ZoneType, NrPages, u64)> =
        zones.iter().map(|z| (z.zt, NrPages(z.managed), 0)).collect();
    let boot = sizing::default_min_free_kbytes(sizing::lowmem_kbytes(&boot_marks));
    // all[] lists the modelled zones in file order, `z.idx` each zone's place in it.
    let hits = |p: u64| {
        let marks = sizing::zone_watermarks(p.saturating_mul(4), wsf, all);
        lowmem.iter().filter(|z| marks[z.idx].min == z.share()).count()
    };
    let (kb, named) = if range.contains(&(thp / 4)) {
        (thp, format!(" = the THP recommendation for {populated_lowmem} zones,"))
    } else if range.contains(&(boot / 4)) {
        (boot, " = the boot default √(16 × lowmem KiB),".to_owned())
    } else {
        let shares: Vec<(u64, u64)> = lowmem.iter().map(|z| (z.managed, z.share())).collect();
        let counts = hits_over(&range, &shares, lowmem_total(all));
        let best = (range.start..range.end)
            .zip(counts)
            .max_by_key(|&(p, h)| (h, std::cmp::Reverse(p)))
            .map_or(sum, |(p, _)| p);
        (best.saturating_mul(4), String::new())
    };
    let how = format!(
        "the unboosted MIN watermarks of the {n} lowmem zone(s) add up to {sum} pages, so \
         pages_min is {sum}–{}; {kb} KiB{named} reproduces {} of {n} MINs with the file's managed \
         pages",
        range.end - 1,
        hits(kb / 4)
    );
    (kb, Source::Inferred(how))
}

/// For each candidate pages_min `p` of `range`, how many of the lowmem zones `(managed,
/// printed share)` it reproduces. A zone's share is floor(p × managed ÷ `total`), the split of
/// `sizing::zone_watermarks`, so it equals the printed one for p in [⌈s·T/m⌉, ⌈(s+1)·T/m⌉):
/// counting those intervals over the range is linear in the zones, where evaluating the split
/// at every candidate was quadratic (a 1024-node file took seconds).
fn hits_over(range: &std::ops::Range<u64>, zones: &[(u64, u64)], total: u64) -> Vec<usize> {
    let len = (range.end - range.start) as usize;
    let mut starts = vec![0usize; len + 1];
    let mut ends = vec![0usize; len + 1];
    let at = |p: u128| {
        (p.clamp(u128::from(range.start), u128::from(range.end)) as u64 - range.start) as usize
    };
    for &(m, s) in zones {
        let (lo, hi) = if total == 0 || m == 0 {
            // Every share is 0.
            if s != 0 {
                continue;
            }
            (u128::from(range.start), u128::from(range.end))
        } else {
            let (t, m, s) = (u128::from(total), u128::from(m), u128::from(s));
            ((s * t).div_ceil(m), ((s + 1) * t).div_ceil(m))
        };
        let (a, b) = (at(lo), at(hi));
        if a < b {
            starts[a] += 1;
            ends[b] += 1;
        }
    }
    let mut open = 0usize;
    (0..len)
        .map(|i| {
            open = open + starts[i] - ends[i];
            open
        })
        .collect()
}

/// How the online CPUs were found in the file.
fn online_inferred(info: &ZoneInfo) -> Source {
    let shown = info.pagesets_shown();
    match info.online_cpus() {
        None => Source::Default("unknown: the file prints no pageset; pass --online-cpus".into()),
        Some(n) if n as usize == shown => {
            Source::Inferred(format!("the pagesets of {n} CPUs (one per online CPU)"))
        }
        Some(n) => Source::Inferred(format!(
            "the highest CPU number in the pagesets ({}) + 1; the file shows the pagesets of \
             {shown} CPU(s) only (pass --online-cpus if CPUs are offline between them)",
            n - 1
        )),
    }
}

/// Split the online CPUs over the nodes that have memory.
fn split_cpus(info: &ZoneInfo, online: Option<u32>) -> (BTreeMap<u32, u32>, Source) {
    let nodes: Vec<u32> = info
        .by_node()
        .into_iter()
        .filter(|(_, zones)| zones.iter().any(|z| z.is_populated()))
        .map(|(n, _)| n)
        .collect();
    let total = online.unwrap_or(0);
    let k = nodes.len().max(1) as u32;
    let map: BTreeMap<u32, u32> = nodes
        .iter()
        .enumerate()
        .map(|(i, &n)| (n, total / k + u32::from((i as u32) < total % k)))
        .collect();
    let src = if nodes.len() <= 1 {
        Source::Inferred(format!("{total} online CPUs, one node"))
    } else {
        Source::Inferred(format!(
            "{total} online CPUs split evenly over {} nodes: zoneinfo does not say which CPU is \
             on which node (pass --node-cpus)",
            nodes.len()
        ))
    };
    (map, src)
}

/// The per-CPU high of the pre-5.14 kernels: 6 × the raw batch (0 for tiny zones, which print
/// batch 1 and high 0). The raw batch is the printed one unless that is 1, which may stand for 0.
fn legacy_high(z: &Zone, kbatch: u32, cap: u64) -> u32 {
    let raw = if kbatch > 1 { kbatch } else { sizing::zone_batchsize_raw(NrPages(z.managed), cap) };
    sizing::legacy_pcp_high(raw)
}

/// The 5.14+ high: the LOW in force when the pagesets were sized (recomputes reset the boost
/// first), split over the node's CPUs.
fn low_split_high(z: &Zone, batch: u32, node_cpus: u32, online: u32, fraction: u32) -> u32 {
    sizing::zone_highsize(
        z.klow.saturating_sub(z.boost.pages()),
        NrPages(z.managed),
        batch,
        node_cpus,
        0,
        online,
        fraction,
    )
}

/// Which generation sized the pagesets, and why we think so.
fn detect_era(
    info: &ZoneInfo,
    zones: &[Zone],
    online: Option<u32>,
    fraction: u32,
    cpus_of: &impl Fn(u32) -> u32,
) -> (Era, String) {
    if info.prints(Field::HighMin) {
        return (Era::AutoTunedPrinted, "the pagesets print high_min and high_max".into());
    }
    let with_pcp: Vec<&Zone> = zones.iter().filter(|z| !z.entry.pagesets.is_empty()).collect();
    let tuned = with_pcp.iter().find(|z| {
        let highs = z.per_cpu(|p| p.high);
        let varies = highs.iter().any(|h| Some(h) != highs.first());
        let unused = z.kbatch.is_some_and(|b| b > 1) && highs.contains(&0);
        varies || unused
    });
    if let Some(z) = tuned {
        return (
            Era::AutoTuned,
            format!(
                "the per-CPU highs of Node {} {} differ between CPUs or are 0 on an unused \
                 pageset, which only auto-tuning does",
                z.entry.node, z.entry.name
            ),
        );
    }
    let online = online.unwrap_or(1);
    let all_highs =
        |z: &Zone, want: u32| z.per_cpu(|p| p.high).iter().all(|&h| h == i64::from(want));
    let legacy = with_pcp
        .iter()
        .filter(|z| {
            let b = z.kbatch.unwrap_or_else(|| Era::SixTimesBatch.batch(z.managed));
            all_highs(z, legacy_high(z, b, sizing::BATCH_CAP_PAGES))
        })
        .count();
    let split = with_pcp
        .iter()
        .filter(|z| {
            let b = z.kbatch.unwrap_or_else(|| Era::LowSplit.batch(z.managed));
            all_highs(z, low_split_high(z, b, cpus_of(z.entry.node), online, fraction))
        })
        .count();
    let promo = info.prints(Field::Promo);
    let n = with_pcp.len();
    let six = if legacy == n && !promo {
        Some(format!("every zone's per-CPU high is 6 × its batch ({n} zones)"))
    } else if split == n {
        None
    } else if legacy > split && !promo {
        Some(format!("{legacy} of {n} zones have per-CPU high = 6 × batch"))
    } else {
        None
    };
    let Some(why) = six else {
        let why = if split == n {
            format!("every zone's per-CPU high is LOW ÷ CPUs of its node ({n} zones)")
        } else {
            format!(
                "{split} of {n} zones have per-CPU high = LOW ÷ CPUs of the node, {legacy} have 6 \
                 × batch{}",
                if promo { "; the promo line rules out kernels before 6.12" } else { "" }
            )
        };
        return (Era::LowSplit, why);
    };
    // The batch cap: 4.19 doubled it from 512 KiB to 1 MiB.
    let votes =
        |era: Era| with_pcp.iter().filter(|z| z.kbatch == Some(era.batch(z.managed))).count();
    let (old, new) = (votes(Era::Before4_19), votes(Era::SixTimesBatch));
    if old > new {
        (Era::Before4_19, format!("{why}; batches follow the 512 KiB cap of kernels before 4.19 in {old} of {n} zones"))
    } else {
        (Era::SixTimesBatch, why)
    }
}

/// Does the file give empty upper zones the cumulative protection (≤ 6.9, ≥ 6.14) or 0
/// (6.10–6.13)? Whichever reproduces more protection entries; the cumulative rule on a tie.
fn detect_reserve_rule(info: &ZoneInfo, ratios: &[u64; 4]) -> (bool, &'static str) {
    let by_node = info.by_node();
    let score = |zero: bool| -> usize {
        by_node
            .iter()
            .map(|(&node, zones)| {
                let rows = reserve_rows(info, node, ratios, zero);
                zones
                    .iter()
                    .filter_map(|z| Some((z.protection.as_ref()?, rows.get(&z.zone_type()?)?)))
                    .map(|(k, ours)| {
                        k.iter()
                            .zip(extend_row(ours, k.len(), zero))
                            .filter(|(a, b)| *a == b)
                            .count()
                    })
                    .sum::<usize>()
            })
            .sum()
    };
    if score(true) > score(false) {
        (true, "0 (the 6.10–6.13 rule)")
    } else {
        (false, "cumulative (≤ 6.9 and ≥ 6.14)")
    }
}

/// Our lowmem_reserve rows of one node's zones, from the file's managed pages.
fn reserve_rows(
    info: &ZoneInfo,
    node: u32,
    ratios: &[u64; 4],
    zero_rule: bool,
) -> BTreeMap<ZoneType, [u64; 4]> {
    let zones: Vec<(ZoneType, NrPages)> = ZoneType::ALL
        .iter()
        .map(|&zt| {
            let managed = info.zone(node, zt.name()).and_then(|z| z.managed).unwrap_or(0);
            (zt, NrPages(managed))
        })
        .collect();
    let rows = sizing::lowmem_reserve(&zones, ratios, zero_rule);
    ZoneType::ALL.into_iter().zip(rows).collect()
}

/// A row of our four columns laid out as the kernel's MAX_NR_ZONES columns: ZONE_DEVICE (and
/// any later column) is an empty upper zone, so it repeats the Movable column under the
/// cumulative rule and is 0 under the 6.10–6.13 rule.
fn extend_row(row: &[u64; 4], len: usize, zero_rule: bool) -> Vec<i64> {
    let as_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    (0..len)
        .map(|j| match row.get(j) {
            Some(&v) => as_i64(v),
            None if zero_rule => 0,
            None => as_i64(row[3]),
        })
        .collect()
}

/// Managed pages of the lowmem zones of `all`.
fn lowmem_total(all: &[(ZoneType, NrPages)]) -> u64 {
    all.iter().filter(|(t, _)| t.is_lowmem()).map(|(_, m)| m.0).fold(0, u64::saturating_add)
}

/// What every zone check needs.
struct Ctx<'a> {
    info: &'a ZoneInfo,
    /// Managed pages of every lowmem zone, summed once (not per zone: that was quadratic).
    lowmem_total: u64,
    /// The lowmem zones' unboosted MINs as printed, summed once.
    lowmem_mins: u64,
    mfk: u64,
    mfk_src: &'a Source,
    wsf: u64,
    fraction: u32,
    ratios: [u64; 4],
    zero_rule: bool,
    era: Era,
    online: Option<u32>,
}

/// The step between watermarks, from the zone's own MIN (lowmem zones) or from the
/// min_free_kbytes split (Movable, whose MIN is a clamp and whose step uses the share).
fn step_of(ctx: &Ctx, zt: ZoneType, managed: u64, share: u64, full: &Watermarks) -> u64 {
    if zt.is_lowmem() {
        // The zone alone with min_free_kbytes = 4 × its MIN: its share is exactly its MIN.
        let w =
            sizing::zone_watermarks(share.saturating_mul(4), ctx.wsf, &[(zt, NrPages(managed))])[0];
        w.low - w.min
    } else {
        full.low - full.min
    }
}

/// HIGH − MIN of a kernel before 4.6 (half the share): from the zone's own MIN for lowmem
/// zones, whose share it is, and from our split of min_free_kbytes for the others.
fn pre_4_6_high_step(z: &Zone, full: &Watermarks) -> u64 {
    if z.zt.is_lowmem() {
        let own =
            sizing::zone_watermarks(z.share().saturating_mul(4), 0, &[(z.zt, NrPages(z.managed))]);
        own[0].high - own[0].min
    } else {
        full.high - full.min
    }
}

fn check_zone(ctx: &Ctx, z: &Zone, full: Watermarks, node_cpus: u32) -> ZoneReport {
    let e = z.entry;
    let boost = z.boost.pages();
    let step = step_of(ctx, z.zt, z.managed, z.share(), &full);
    let mut checks = Vec::new();
    let mut notes = Vec::new();

    // MIN: the zone's share of min_free_kbytes (a clamp for Movable), plus the boost.
    let ours_min = full.min + boost;
    let mut min = Check {
        field: "min",
        kernel: Some(Val::n(z.kmin)),
        ours: Some(Val::n(ours_min)),
        hint: None,
    };
    if min.outcome() == Some(false) {
        min.hint = Some(min_hint(ctx, z));
    }
    checks.push(min);

    // LOW, HIGH, PROMO: each the kernel's previous mark plus the step.
    let chain = [
        ("low", Some(z.kmin), Some(z.klow)),
        ("high", Some(z.klow), Some(z.khigh)),
        ("promo", e.high, e.promo),
    ];
    let mut hinted: Option<&str> = None;
    for (field, below, this) in chain {
        let Some(this) = this else { continue };
        let below = below.unwrap_or(0);
        // Before 4.6 (no scale factor) HIGH was MIN + share/2, which is not LOW + share/4 when
        // the share mod 4 ≥ 2: it is measured from the kernel's MIN, not its LOW.
        let ours = if ctx.wsf == 0 && field == "high" {
            z.kmin + pre_4_6_high_step(z, &full)
        } else {
            below + step
        };
        let mut c =
            Check { field, kernel: Some(Val::n(this)), ours: Some(Val::n(ours)), hint: None };
        if c.outcome() == Some(false) {
            let kstep = this - below.min(this);
            c.hint = Some(match hinted {
                None => step_hint(ctx, z, kstep, step),
                Some(first) => format!("the kernel's step is {kstep}, ours {step}, as for {first}"),
            });
            hinted.get_or_insert(field);
        }
        checks.push(c);
    }

    // Protection.
    if let Some(k) = &e.protection {
        let rows = reserve_rows(ctx.info, e.node, &ctx.ratios, ctx.zero_rule);
        let ours = extend_row(&rows[&z.zt], k.len(), ctx.zero_rule);
        let mut c = Check {
            field: "protection",
            kernel: Some(Val::List(k.clone())),
            ours: Some(Val::List(ours.clone())),
            hint: None,
        };
        if c.outcome() == Some(false) {
            c.hint = Some(protection_hint(ctx, z, k, &ours));
        }
        checks.push(c);
    }

    let has_pcp = !e.pagesets.is_empty();
    let online = ctx.online.unwrap_or(1);
    // Batch.
    let ours_batch = ctx.era.batch(z.managed);
    let kb = z.kbatch.unwrap_or(ours_batch);
    if has_pcp {
        let mut c = Check {
            field: "batch",
            kernel: Val::per_cpu(z.per_cpu(|p| p.batch)),
            ours: Some(Val::n(u64::from(ours_batch))),
            hint: None,
        };
        if c.outcome() == Some(false) {
            c.hint = Some(batch_hint(ctx, z));
        }
        checks.push(c);
    }

    // high_min / high_max (6.7+).
    if has_pcp && ctx.era.auto_tuned() {
        let (lo_f, hi_f) = if ctx.fraction == 0 {
            (0, sizing::MIN_PERCPU_PAGELIST_HIGH_FRACTION)
        } else {
            (ctx.fraction, ctx.fraction)
        };
        let printed = ctx.era == Era::AutoTunedPrinted;
        for (field, f, get) in [
            ("high_min", lo_f, (|p: &crate::zoneinfo::Pageset| p.high_min) as fn(&_) -> _),
            ("high_max", hi_f, |p: &crate::zoneinfo::Pageset| p.high_max),
        ] {
            let ours = low_split_high(z, kb, node_cpus, online, f);
            let mut c = Check {
                field,
                kernel: printed.then(|| Val::per_cpu(z.per_cpu(get))).flatten(),
                ours: Some(Val::n(u64::from(ours))),
                hint: None,
            };
            if c.outcome() == Some(false) {
                c.hint = Some(split_hint(z, kb, online, f, c.kernel.as_ref()));
            }
            checks.push(c);
        }
        notes.push(autotuned_note(z, ctx, kb, node_cpus, online));
    }

    // The fixed per-CPU high.
    if has_pcp && !ctx.era.auto_tuned() {
        let ours = match ctx.era {
            Era::LowSplit => low_split_high(z, kb, node_cpus, online, ctx.fraction),
            _ => legacy_high(z, kb, ctx.era.batch_cap()),
        };
        let mut c = Check {
            field: "pcp_high",
            kernel: Val::per_cpu(z.per_cpu(|p| p.high)),
            ours: Some(Val::n(u64::from(ours))),
            hint: None,
        };
        if c.outcome() == Some(false) {
            c.hint = Some(match ctx.era {
                Era::LowSplit => split_hint(z, kb, online, ctx.fraction, c.kernel.as_ref()),
                _ => format!(
                    "6 × batch {kb} = {ours}; another fixed high means vm.percpu_pagelist_fraction \
                     was set (high = managed ÷ fraction)"
                ),
            });
        }
        checks.push(c);
    }

    // vm stats threshold.
    if let Some(cpus) = ctx.online.filter(|_| e.pagesets.iter().any(|p| p.stat_threshold.is_some()))
    {
        let ours = sizing::stat_threshold(NrPages(z.managed), cpus);
        let mut c = Check {
            field: "stat_threshold",
            kernel: Val::per_cpu(z.per_cpu(|p| p.stat_threshold)),
            ours: Some(Val::n(u64::from(ours))),
            hint: None,
        };
        if c.outcome() == Some(false) {
            c.hint = Some(threshold_hint(z, cpus, c.kernel.as_ref()));
        }
        checks.push(c);
    }

    ZoneReport { node: e.node, zone: e.name.clone(), managed: z.managed, checks, notes }
}

/// Marks a hint whose cause is explained once, under the tables.
const DRIFT: &str = "managed changed since the kernel last recomputed ¹";

/// The footnote of [`DRIFT`].
const DRIFT_NOTE: &str = "¹ The kernel recomputes watermarks only at boot, on memory hotplug \
     and when vm.min_free_kbytes or vm.watermark_scale_factor is written; protection at boot, on \
     memory hotplug and when vm.lowmem_reserve_ratio is written; pageset sizes at those times \
     and on CPU hotplug; vm stats thresholds at boot, on CPU or memory hotplug and whenever \
     kswapd goes back to sleep. Pages handed to the buddy allocator later (memory freed at the \
     end of boot such as the kernel's init sections and, on some kernels, the initrd; memory a \
     balloon driver returns) change managed without one. Writing the current values back to \
     those sysctls brings the numbers up to date.";

fn min_hint(ctx: &Ctx, z: &Zone) -> String {
    let target = z.share();
    let pages_min = NrPages::from_kib(ctx.mfk).0;
    if !z.zt.is_lowmem() {
        return format!("Movable's MIN is managed ÷ 1024 clamped to 32..128, not {target}");
    }
    let total = ctx.lowmem_total;
    let rest = total.saturating_sub(z.managed);
    let filler = if z.zt == ZoneType::Dma { ZoneType::Dma32 } else { ZoneType::Dma };
    let share = |mine: u64, others: u64| {
        let zones = [(z.zt, NrPages(mine)), (filler, NrPages(others))];
        sizing::zone_watermarks(ctx.mfk, ctx.wsf, &zones)[0].min
    };
    let mut ways = Vec::new();
    // This zone as it is, the other lowmem zones different: the share falls as they grow.
    if let Some(r) = preimage(0, SEARCH_MAX, u64::MAX - target, |o| u64::MAX - share(z.managed, o))
    {
        ways.push(format!(
            "a lowmem total of {} with this zone as it is (the file's: {total})",
            range_text((r.0.saturating_add(z.managed), r.1.saturating_add(z.managed)))
        ));
    }
    // The other zones as they are, this zone different: the share grows with it.
    if let Some(r) = preimage(0, SEARCH_MAX, target, |m| share(m, rest)) {
        let mut way = format!(
            "this zone managing {} with the others as they are (the file: {})",
            range_text(r),
            z.managed
        );
        if let Some(present) = z.entry.present.filter(|&p| r.0 > p) {
            let _ = write!(way, ", more than its {present} present pages");
        }
        ways.push(way);
    }
    let mut hint = if ways.is_empty() {
        format!("no managed counts give {target} with {} KiB", ctx.mfk)
    } else {
        format!(
            "MIN {target} = {pages_min} × managed ÷ lowmem total needs {}: {DRIFT}",
            ways.join(", or ")
        )
    };
    let excess = z.kmin.saturating_sub(share(z.managed, rest));
    if z.boost == Boost::Unprinted && z.entry.boost.is_none() && excess >= PAGEBLOCK_NR_PAGES {
        let _ = write!(
            hint,
            "; or the marks include a watermark boost of about {excess} pages (5.0–5.15 add one \
             without printing it)"
        );
    }
    if !matches!(ctx.mfk_src, Source::Inferred(_)) {
        let sum = ctx.lowmem_mins;
        if sum.abs_diff(pages_min) > 8 {
            let kib = sum.saturating_mul(4);
            let _ = write!(hint, "; the file's MINs add up to min_free_kbytes ≈ {kib} KiB");
        }
    }
    hint
}

fn step_hint(ctx: &Ctx, z: &Zone, kstep: u64, step: u64) -> String {
    let quarter = z.share() / 4;
    let wsf = ctx.wsf;
    if kstep > quarter {
        let f = |m: u64| mult_frac(m, wsf, 10_000);
        match preimage(1, SEARCH_MAX, kstep, f) {
            Some(r) => format!(
                "the kernel's step {kstep} is managed × {wsf} ÷ 10000 for managed {} (the file: \
                 {}): {DRIFT}",
                range_text(r),
                z.managed
            ),
            None => format!(
                "no managed count gives a step of {kstep} with watermark_scale_factor {wsf}"
            ),
        }
    } else {
        format!(
            "the step is max(MIN ÷ 4, managed × {wsf} ÷ 10000) = {step} here, the kernel's is \
             {kstep}: its MIN or boost at the last recompute differs from the printed ones"
        )
    }
}

fn protection_hint(ctx: &Ctx, z: &Zone, kernel: &[i64], ours: &[i64]) -> String {
    let managed_of =
        |t: ZoneType| ctx.info.zone(z.entry.node, t.name()).and_then(|e| e.managed).unwrap_or(0);
    let mut parts = Vec::new();
    for (j, (k, o)) in kernel.iter().zip(ours).enumerate() {
        // Columns of empty zones repeat the column before them (or are 0): no news there.
        let Some(&upper) = ZoneType::ALL.get(j) else { continue };
        if k == o || j <= z.zt.index() || managed_of(upper) == 0 {
            continue;
        }
        let Ok(k) = u64::try_from(*k) else { continue };
        let first = ZoneType::ALL[z.zt.index() + 1];
        let sum: u64 = ZoneType::ALL[z.zt.index() + 1..=j].iter().map(|&t| managed_of(t)).sum();
        // The column as a function of the upper zones' total, through the library.
        let f = |total: u64| {
            let zones = [(z.zt, NrPages(z.managed)), (upper, NrPages(total))];
            sizing::lowmem_reserve(&zones, &ctx.ratios, false)[0][j]
        };
        if let Some(r) = preimage(0, SEARCH_MAX, k, f) {
            let who = if first == upper {
                upper.name().to_owned()
            } else {
                format!("{}–{} together", first.name(), upper.name())
            };
            parts.push(format!(
                "the {} entry {k} needs {who} managing {} (the file: {sum})",
                upper.name(),
                range_text(r)
            ));
        }
    }
    if parts.is_empty() {
        "the empty-upper-zone rule or vm.lowmem_reserve_ratio differs".to_owned()
    } else {
        format!("{}: {DRIFT}", parts.join("; "))
    }
}

fn batch_hint(ctx: &Ctx, z: &Zone) -> String {
    let Some(kb) = z.kbatch else {
        return "the CPUs print different batches".to_owned();
    };
    let era = ctx.era;
    match preimage(0, SEARCH_MAX, u64::from(kb), |m| u64::from(era.batch(m))) {
        Some((a, b)) => {
            let mut s = format!(
                "batch {kb} is what managed {} gives (the file: {})",
                range_text((a, b)),
                z.managed
            );
            if b < z.managed && matches!(era, Era::Before4_19 | Era::SixTimesBatch) {
                s.push_str(
                    ": the pagesets were sized while the zone was still growing — before 5.7 \
                     the kernel sized them before deferred struct-page init finished and did not \
                     resize them after",
                );
            } else {
                let _ = write!(s, ": {DRIFT}");
            }
            s
        }
        None => format!("no managed count gives batch {kb} in this kernel generation"),
    }
}

fn split_hint(z: &Zone, batch: u32, online: u32, fraction: u32, kernel: Option<&Val>) -> String {
    let Some(k) = kernel.and_then(Val::uniform) else {
        return "the CPUs print different values".to_owned();
    };
    let cpus: Vec<u32> = (1..=4096)
        .filter(|&n| i64::from(low_split_high(z, batch, n, online, fraction)) == k)
        .collect();
    match (cpus.first(), cpus.last()) {
        (Some(a), Some(b)) => format!(
            "{k} is a split over {} CPU(s) on the node (pass --node-cpus if that is the machine)",
            range_text((u64::from(*a), u64::from(*b)))
        ),
        _ => format!(
            "no CPU count gives {k}: the LOW watermark or managed pages differed when the pagesets \
             were last sized"
        ),
    }
}

fn threshold_hint(z: &Zone, cpus: u32, kernel: Option<&Val>) -> String {
    let Some(k) = kernel.and_then(Val::uniform) else {
        return "the CPUs print different thresholds".to_owned();
    };
    let Ok(k) = u64::try_from(k) else { return String::new() };
    let by_managed =
        preimage(0, SEARCH_MAX, k, |m| u64::from(sizing::stat_threshold(NrPages(m), cpus)));
    let by_cpus =
        preimage(1, 8192, k, |c| u64::from(sizing::stat_threshold(NrPages(z.managed), c as u32)));
    let mut parts = Vec::new();
    if let Some(r) = by_managed {
        parts.push(format!("managed {} with {cpus} CPUs", range_text(r)));
    }
    if let Some(r) = by_cpus {
        parts.push(format!("{} online CPUs with this managed", range_text(r)));
    }
    let mut s = if parts.is_empty() {
        format!("no managed count or CPU count gives {k}")
    } else {
        format!("{k} is what {} gives", parts.join(", or "))
    };
    s.push_str(
        "; thresholds are recomputed at boot, on CPU or memory hotplug and each time kswapd goes \
         back to sleep, and drop to a smaller pressure threshold while kswapd reclaims",
    );
    s
}

/// What the auto-tuned per-CPU highs look like against our bounds.
fn autotuned_note(z: &Zone, ctx: &Ctx, batch: u32, node_cpus: u32, online: u32) -> String {
    let (lo_f, hi_f) = if ctx.fraction == 0 {
        (0, sizing::MIN_PERCPU_PAGELIST_HIGH_FRACTION)
    } else {
        (ctx.fraction, ctx.fraction)
    };
    let lo = i64::from(low_split_high(z, batch, node_cpus, online, lo_f));
    let hi = i64::from(low_split_high(z, batch, node_cpus, online, hi_f));
    let highs: Vec<(u32, i64)> =
        z.entry.pagesets.iter().filter_map(|p| Some((p.cpu, p.high?))).collect();
    let inside = highs.iter().filter(|(_, h)| (lo..=hi).contains(h)).count();
    let unused = highs.iter().filter(|(_, h)| *h == 0).count();
    let outside: Vec<String> = highs
        .iter()
        .filter(|(_, h)| *h != 0 && !(lo..=hi).contains(h))
        .map(|(c, h)| format!("CPU {c}: {h}"))
        .collect();
    let mut s = format!(
        "per-CPU high (auto-tuned, not compared): within [{lo}, {hi}] on {inside} of {} CPUs",
        highs.len()
    );
    if unused > 0 {
        let _ = write!(s, ", 0 (pageset not used since boot) on {unused}");
    }
    if !outside.is_empty() {
        let _ = write!(
            s,
            ", outside on {} — a pageset keeps its old high after a resize until it is next used \
             (docs/kernel-reference.md §8.3)",
            outside.join(", ")
        );
    }
    s
}

// ---------------------------------------------------------------------------------------------
// Output

/// Width the text output wraps its prose at.
const WIDTH: usize = 100;

/// `first` then `text`, wrapped at [`WIDTH`] with continuation lines indented by `indent`.
fn wrap(out: &mut String, first: &str, indent: usize, text: &str) {
    let mut line = first.to_owned();
    let mut empty = true;
    for word in text.split(' ') {
        if !empty && line.chars().count() + 1 + word.chars().count() > WIDTH {
            out.push_str(line.trim_end());
            out.push('\n');
            line = " ".repeat(indent);
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

impl Report {
    fn mismatches(&self) -> usize {
        self.zones.iter().flat_map(|z| &z.checks).filter(|c| c.outcome() == Some(false)).count()
    }

    fn compared(&self) -> usize {
        self.zones.iter().flat_map(|z| &z.checks).filter(|c| c.outcome().is_some()).count()
    }

    fn uses_drift_note(&self) -> bool {
        self.zones
            .iter()
            .flat_map(|z| &z.checks)
            .any(|c| c.hint.as_deref().is_some_and(|h| h.contains('¹')))
    }

    fn to_text(&self) -> String {
        let mut out = String::new();
        let nodes = self.node_cpus.len().max(1);
        let _ = writeln!(out, "zoneinfo: {}", self.source);
        let _ = writeln!(
            out,
            "  {} checked zone(s), {} node(s), {} online CPU(s)",
            self.zones.len(),
            nodes,
            self.online_cpus.map_or("unknown".to_owned(), |c| c.to_string())
        );
        wrap(&mut out, "  layout: ", 4, &self.layout.join(", "));
        wrap(&mut out, "  kernel assumed: ", 4, self.era.label());
        wrap(&mut out, "    because ", 4, &self.era_why);
        let _ = writeln!(out, "inputs:");
        for (name, value, src) in &self.inputs {
            let _ = writeln!(out, "  {name:<30} {value}");
            wrap(&mut out, &format!("  {:<30} (", ""), 33, &format!("{})", src.detail()));
        }
        for z in &self.zones {
            let _ = writeln!(out, "\nNode {}, zone {} (managed {})", z.node, z.zone, z.managed);
            let rows: Vec<(&str, String, String, &str)> = z
                .checks
                .iter()
                .map(|c| {
                    (
                        c.field,
                        c.kernel.as_ref().map_or("(not printed)".to_owned(), Val::text),
                        c.ours.as_ref().map_or("-".to_owned(), Val::text),
                        c.mark(),
                    )
                })
                .collect();
            let kw =
                rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0).max("kernel".len());
            let ow = rows.iter().map(|r| r.2.chars().count()).max().unwrap_or(0).max("ours".len());
            let _ = writeln!(out, "  {:<15} {:>kw$}  {:>ow$}", "field", "kernel", "ours");
            for (field, k, o, mark) in &rows {
                let _ = writeln!(out, "  {field:<15} {k:>kw$}  {o:>ow$}  {mark}");
            }
            for c in z.checks.iter().filter(|c| c.hint.is_some()) {
                let hint = c.hint.as_deref().unwrap_or_default();
                wrap(&mut out, &format!("  ✗ {}: ", c.field), 4, hint);
            }
            for n in &z.notes {
                wrap(&mut out, "  note: ", 4, n);
            }
        }
        if !self.not_checked.is_empty() || !self.notes.is_empty() {
            out.push('\n');
        }
        for n in &self.not_checked {
            wrap(&mut out, "not checked: ", 2, n);
        }
        for n in &self.notes {
            wrap(&mut out, "note: ", 2, n);
        }
        if self.uses_drift_note() {
            out.push('\n');
            wrap(&mut out, "", 2, DRIFT_NOTE);
        }
        let mismatches = self.mismatches();
        let _ = writeln!(
            out,
            "\n{} of {} compared fields match; {mismatches} mismatch{}",
            self.compared() - mismatches,
            self.compared(),
            if mismatches == 1 { "" } else { "es" }
        );
        out
    }

    fn to_json(&self) -> Value {
        let zones: Vec<Value> = self
            .zones
            .iter()
            .map(|z| {
                let fields: serde_json::Map<String, Value> = z
                    .checks
                    .iter()
                    .map(|c| {
                        let mut v = json!({
                            "kernel": c.kernel.as_ref().map_or(Value::Null, Val::json),
                            "ours": c.ours.as_ref().map_or(Value::Null, Val::json),
                            "match": c.outcome(),
                        });
                        if let Some(h) = &c.hint {
                            v["hint"] = json!(h);
                        }
                        (c.field.to_owned(), v)
                    })
                    .collect();
                json!({
                    "node": z.node,
                    "zone": z.zone,
                    "managed": z.managed,
                    "fields": fields,
                    "notes": z.notes,
                })
            })
            .collect();
        let inputs: serde_json::Map<String, Value> = self
            .inputs
            .iter()
            .map(|(name, value, src)| {
                (
                    name.replace(' ', "_").to_lowercase(),
                    json!({"value": value, "source": src.kind(), "detail": src.detail()}),
                )
            })
            .collect();
        json!({
            "source": self.source,
            "kernel": {
                "layout": self.layout,
                "pcp_era": self.era.key(),
                "assumed": self.era.label(),
                "because": self.era_why,
            },
            "online_cpus": self.online_cpus,
            "node_cpus": self.node_cpus.iter().map(|(n, c)| (n.to_string(), json!(c))).collect::<serde_json::Map<_, _>>(),
            "inputs": inputs,
            "zones": zones,
            "not_checked": self.not_checked,
            "notes": self.notes.iter().cloned().chain(self.uses_drift_note().then(|| DRIFT_NOTE.to_owned())).collect::<Vec<_>>(),
            "compared": self.compared(),
            "mismatches": self.mismatches(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given() -> Given {
        Given {
            min_free_kbytes: None,
            watermark_scale_factor: None,
            high_fraction: None,
            lowmem_reserve_ratio: None,
            node_cpus: None,
            online_cpus: None,
        }
    }

    #[test]
    fn preimage_finds_ranges() {
        assert_eq!(preimage(0, 100, 7, |x| x / 10), Some((70, 79)));
        assert_eq!(preimage(0, 100, 10, |x| x / 10), Some((100, 100)));
        assert_eq!(preimage(0, 100, 11, |x| x / 10), None);
        assert_eq!(preimage(0, 100, 3, |x| x / 10 * 2), None);
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
    }

    /// Our own zoneinfo, parsed and sized: no mismatch, and the inferences find our inputs.
    #[test]
    fn our_own_zoneinfo_sizes_cleanly() {
        use crate::procfs::{zoneinfo, ProcLayout};
        use pagealloc::{MemoryMap, NodeId, PageAllocator, Policy, Tunables};
        let mut map = MemoryMap::new();
        map.add_range(NodeId(0), 0x1000..0x9f000)
            .unwrap()
            .add_range(NodeId(0), 0x10_0000..0x1_8000_0000)
            .unwrap()
            .add_range(NodeId(1), 0x1_8000_0000..0x2_4000_0000)
            .unwrap()
            .set_cpus(NodeId(0), 2)
            .unwrap()
            .set_cpus(NodeId(1), 2)
            .unwrap();
        let pa = PageAllocator::new(map, Tunables::default(), Policy::modern()).unwrap();
        let info = ZoneInfo::parse(&zoneinfo(&pa, ProcLayout::of(6, 13))).unwrap();
        let report = analyse(&info, "ours", given());
        assert_eq!(report.era, Era::AutoTunedPrinted);
        assert_eq!(report.mismatches(), 0, "{}", report.to_text());
        assert!(report.compared() > 20);
        let mfk = &report.inputs[0];
        assert_eq!(mfk.1, format!("{} KiB", pa.min_free_kbytes()), "{}", report.to_text());
        // 6.7 layout: high_min and high_max are not printed; unused pagesets (high 0) mark the
        // auto-tuned generation.
        let info = ZoneInfo::parse(&zoneinfo(&pa, ProcLayout::of(6, 7))).unwrap();
        let report = analyse(&info, "ours", given());
        assert_eq!(report.era, Era::AutoTuned, "{}", report.era_why);
        assert_eq!(report.mismatches(), 0, "{}", report.to_text());
    }

    /// A file cut at any byte is refused or sized without a mismatch: the worked example has
    /// none, so a mismatch would be the cut read as a kernel rule's (a Normal zone cut before
    /// its `managed` line shifted every MIN and the DMA zone's protection).
    #[test]
    fn a_cut_file_never_reads_as_a_rule_mismatch() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/section-2-9-zoneinfo.txt");
        let text = std::fs::read_to_string(path).unwrap();
        let mut sized = 0;
        for end in (1..text.len()).filter(|&e| text.is_char_boundary(e)) {
            let Ok(info) = ZoneInfo::parse(&text[..end]) else { continue };
            let report = analyse(&info, "cut", given());
            assert_eq!(report.mismatches(), 0, "cut at byte {end}:\n{}", report.to_text());
            sized += 1;
        }
        // Cuts after a complete block (or inside its last number) are whole files.
        assert!(sized > 0 && sized < text.len() / 10, "{sized}");
    }

    /// The interval count of the min_free_kbytes search agrees with the library's split
    /// evaluated at every candidate.
    #[test]
    fn hits_over_agrees_with_the_split_at_every_candidate() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for _ in 0..50 {
            let n = 1 + next(12) as usize;
            let all: Vec<(ZoneType, NrPages)> =
                (0..n).map(|i| (ZoneType::ALL[i % 3], NrPages(1 + next(1 << 30)))).collect();
            let total = lowmem_total(&all);
            let pages_min = 1 + next(1 << 20);
            let marks = sizing::zone_watermarks(pages_min * 4, 10, &all);
            // Printed shares: the split at pages_min, one of them off by one now and then.
            let zones: Vec<(u64, u64)> = all
                .iter()
                .zip(&marks)
                .map(|(&(_, m), w)| (m.0, w.min + u64::from(next(4) == 0)))
                .collect();
            let sum: u64 = zones.iter().map(|z| z.1).sum();
            let range = sum.saturating_sub(3)..sum + n as u64;
            let fast = hits_over(&range, &zones, total);
            for (p, &h) in range.clone().zip(&fast) {
                let w = sizing::zone_watermarks(p * 4, 10, &all);
                let slow = zones.iter().zip(&w).filter(|(z, w)| w.min == z.1).count();
                assert_eq!(h, slow, "p {p}: {zones:?} of {total}");
            }
        }
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

//! The check behind `pagealloc sizing`: recompute what a real kernel printed in `/proc/zoneinfo` — watermarks,
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
//!
//! The command (`cmd/sizing.rs`) reads the file and this machine's sysctls; this module only
//! analyses (`analyse`: [`infer`] the missing inputs, [`check`] each zone) and renders
//! ([`render`]).

mod check;
mod infer;
mod render;

use std::collections::BTreeMap;

use pagealloc::sizing::{self, Watermarks};
use pagealloc::types::{mult_frac, PAGEBLOCK_NR_PAGES};
use pagealloc::{NrPages, ZoneType};
use serde_json::{json, Value};

use crate::zoneinfo::{Field, ZoneEntry, ZoneInfo};

use check::*;
use infer::*;

/// Where an input value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Source {
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
pub(crate) struct Given {
    pub(crate) min_free_kbytes: Option<(u64, Source)>,
    pub(crate) watermark_scale_factor: Option<(u64, Source)>,
    pub(crate) high_fraction: Option<(u32, Source)>,
    pub(crate) lowmem_reserve_ratio: Option<([u64; 4], Source)>,
    pub(crate) node_cpus: Option<(BTreeMap<u32, u32>, Source)>,
    pub(crate) online_cpus: Option<(u32, Source)>,
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
pub(crate) struct Report {
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

pub(crate) fn analyse(info: &ZoneInfo, label: &str, given: Given) -> Report {
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
}

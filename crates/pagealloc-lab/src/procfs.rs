//! `/proc` views of a live [`PageAllocator`]: `buddyinfo`, `pagetypeinfo`, `zoneinfo`, a
//! `vmstat` subset and debugfs's `extfrag_index` and `unusable_index`, laid out with the kernel's
//! format strings (docs/kernel-reference.md §8) so that the tools that read a kernel's files
//! (node_exporter, procfs, jc, PCP, `sar`, scripts) read ours. pagetypeinfo and zoneinfo are
//! printed in the layout of a chosen kernel from 3.2 on ([`ProcLayout`], `--kernel`); the
//! version → layout table, and what is printed where the model has no state, are in
//! docs/real-data.md.
//!
//! What is printed, and what is left out:
//!
//! - **buddyinfo**: every populated zone (`present > 0`) of every node, `nr_free` of each
//!   order, exactly as the kernel (`"Node %d, zone %8s "`, `"%6lu "` per order, a trailing
//!   space before the newline). The same in every layout.
//! - **pagetypeinfo**: per node with memory, the kernel's header, the free blocks of every
//!   (zone, migratetype, order) for the layout's migratetypes (`Reserve` before 4.4, showing
//!   our HighAtomic; `CMA` with CONFIG_CMA), `>100000` where the kernel's walk stops counting
//!   (5.4 on), and the pageblocks of each type. The "Number of mixed blocks" section
//!   (page_owner kernels only) is not printed.
//! - **zoneinfo**: the zones the layout prints — from 4.12 every zone type we model (DMA,
//!   DMA32, Normal, Movable) of every node, populated or not; before, the populated ones — with
//!   the layout's lines. An absent zone prints the zeros and the watermarks the kernel gives an
//!   empty zone (MIN 32 for Movable). ZONE_DEVICE has no block of its own (we do not model it),
//!   but with CONFIG_ZONE_DEVICE the `protection:` tuple has its entry: the kernel's
//!   MAX_NR_ZONES = 5, computed as the kernel computes it for an empty upper zone — equal to
//!   the Movable column under the cumulative rule (≤ 6.9, ≥ 6.14), 0 under the 6.10–6.13 rule
//!   (`Policy::lowmem_reserve_empty_zone_zero`). A constant 0 would not be what a kernel
//!   prints: realdata `jc-zoneinfo.txt` has `(0, 2871, 3795, 3795, 3795)`.
//!   The **per-node stats** block is omitted: node statistics are LRU, file, anon, slab and
//!   writeback counts, none of which the allocator has; the kernel prints the block only for a
//!   node's first populated zone, so every parser already copes with zones without it. Zone
//!   statistics are limited to the two we keep, `nr_free_pages` and `nr_free_cma` (in the
//!   kernel's order); there are no NUMA statistics. `scanned` and the `unreclaimable` lines
//!   are always 0 (there is no reclaim, no kswapd); `inactive_ratio` follows the kernel's rule.
//! - **vmstat**: `nr_free_pages`, `nr_free_cma`, the `pgalloc_*`, `pgfree`, `pgmigrate_*` and
//!   `compact_*` event counters in the kernel's order, then every counter of ours the kernel
//!   does not have (`pcp_alloc`, `pcp_refill`, drains by reason, extfrag, zone lock
//!   acquisitions, …), all as `name value` lines.
//! - **extfrag_index**, **unusable_index** (debugfs `extfrag/`): every populated zone, one
//!   value per order in thousandths, as the kernel prints them (`"%2d.%03d "` and
//!   `"%d.%03d "`; docs/compaction.md gives the formulas).

use std::fmt::Write as _;

use pagealloc::migratetype::MigrateType;
use pagealloc::sizing;
use pagealloc::types::{NR_PAGE_ORDERS, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER};
use pagealloc::{Counter, CpuId, EventSink, NodeId, NrPages, Order, PageAllocator, Zone, ZoneType};
use pagealloc::{WMARK_HIGH, WMARK_LOW, WMARK_MIN, WMARK_PROMO};

use crate::kversion::KernelVersion;

/// Where the kernel's pagetypeinfo walk of one free list stops counting (from 5.4).
const PAGETYPEINFO_WALK_CAP: u64 = 100_000;

/// The layout the views are printed in: the kernel release they imitate and the two build
/// options that change what is printed (docs/real-data.md has the version → layout table).
///
/// - `cma`: CONFIG_CMA, the `CMA` column of pagetypeinfo (3.5 on). Ignored for an allocator
///   that has CMA areas: a kernel without CONFIG_CMA has none, and dropping the column would
///   hide pages.
/// - `zone_device`: CONFIG_ZONE_DEVICE, the fifth `protection:` entry of zoneinfo (4.3 on).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ProcLayout {
    kernel: KernelVersion,
    cma: bool,
    zone_device: bool,
}

impl Default for ProcLayout {
    /// 6.13+ with CMA and ZONE_DEVICE, as the views were printed before `--kernel` existed.
    fn default() -> ProcLayout {
        ProcLayout::new(ProcLayout::DEFAULT_KERNEL, true, true)
    }
}

impl ProcLayout {
    /// The kernel of the default layout.
    pub const DEFAULT_KERNEL: KernelVersion = KernelVersion::new(6, 13);

    /// The layout of `kernel` built with (or without) CONFIG_CMA and CONFIG_ZONE_DEVICE.
    pub fn new(kernel: KernelVersion, cma: bool, zone_device: bool) -> ProcLayout {
        ProcLayout { kernel, cma, zone_device }
    }

    /// The layout of `kernel` with CMA and ZONE_DEVICE configured.
    #[cfg(test)]
    pub fn of(major: u32, minor: u32) -> ProcLayout {
        ProcLayout { kernel: KernelVersion::new(major, minor), ..ProcLayout::default() }
    }

    fn since(self, major: u32, minor: u32) -> bool {
        self.kernel.at_least(major, minor)
    }

    /// pagetypeinfo's migratetype columns, in the kernel's order, with the type of ours each
    /// shows. Before 4.4 the fourth type was MIGRATE_RESERVE; 4.4's highatomic reserve took
    /// its place (and moved Movable before Reclaimable), so the model's HighAtomic blocks
    /// are shown as Reserve.
    fn migratetype_columns(self, cma: bool) -> Vec<(&'static str, MigrateType)> {
        let mut cols = if self.since(4, 4) {
            vec![
                ("Unmovable", MigrateType::Unmovable),
                ("Movable", MigrateType::Movable),
                ("Reclaimable", MigrateType::Reclaimable),
                ("HighAtomic", MigrateType::HighAtomic),
            ]
        } else {
            vec![
                ("Unmovable", MigrateType::Unmovable),
                ("Reclaimable", MigrateType::Reclaimable),
                ("Movable", MigrateType::Movable),
                ("Reserve", MigrateType::HighAtomic),
            ]
        };
        if cma && self.since(3, 5) {
            cols.push(("CMA", MigrateType::Cma));
        }
        cols.push(("Isolate", MigrateType::Isolate));
        cols
    }

    /// The pagetypeinfo walk cap (5.4 on; uncapped before).
    fn walk_cap(self) -> Option<u64> {
        self.since(5, 4).then_some(PAGETYPEINFO_WALK_CAP)
    }

    /// Does the `protection:` tuple have a ZONE_DEVICE entry?
    fn zone_device_column(self) -> bool {
        self.zone_device && self.since(4, 3)
    }
}

/// `/proc/buddyinfo` (the same in every layout).
pub fn buddyinfo<E: EventSink>(pa: &PageAllocator<E>) -> String {
    let mut out = String::new();
    for z in pa.zones().iter().filter(|z| z.present_pages().0 > 0) {
        let counts: [u64; NR_PAGE_ORDERS] = core::array::from_fn(|o| z.nr_free(Order(o as u8)));
        buddyinfo_line(&mut out, z.node().0, z.zone_type().name(), &counts);
    }
    out
}

/// One buddyinfo line.
fn buddyinfo_line(out: &mut String, node: u32, zone: &str, counts: &[u64]) {
    let _ = write!(out, "Node {node}, zone {zone:>8} ");
    for c in counts {
        let _ = write!(out, "{c:>6} ");
    }
    out.push('\n');
}

/// The numbers one zone of pagetypeinfo shows, in the layout's column order.
pub(crate) struct PagetypeZone {
    /// The zone's name.
    pub name: String,
    /// Free blocks per column, per order.
    pub free: Vec<Vec<u64>>,
    /// Pageblocks per column.
    pub blocks: Vec<u64>,
}

/// `/proc/pagetypeinfo` in `layout`.
pub fn pagetypeinfo<E: EventSink>(pa: &PageAllocator<E>, layout: ProcLayout) -> String {
    let has_cma = pa.zones().iter().any(|z| z.cma_pages().0 > 0);
    let cols = layout.migratetype_columns(layout.cma || has_cma);
    let names: Vec<&str> = cols.iter().map(|&(n, _)| n).collect();
    let mut out = String::new();
    for node in 0..pa.nr_nodes() as u32 {
        let zones: Vec<PagetypeZone> = pa
            .zones()
            .iter()
            .filter(|z| z.node().0 == node && z.present_pages().0 > 0)
            .map(|z| {
                let counts = z.free_list_counts();
                let blocks = z.pageblock_type_counts();
                PagetypeZone {
                    name: z.zone_type().name().to_owned(),
                    free: cols
                        .iter()
                        .map(|(_, mt)| counts.iter().map(|row| row[mt.index()]).collect())
                        .collect(),
                    blocks: cols.iter().map(|(_, mt)| blocks[mt.index()]).collect(),
                }
            })
            .collect();
        if !zones.is_empty() {
            pagetypeinfo_node(&mut out, &names, layout.walk_cap(), node, &zones);
        }
    }
    out
}

/// One node's part of pagetypeinfo (a memoryless node prints none).
pub(crate) fn pagetypeinfo_node(
    out: &mut String,
    names: &[&str],
    cap: Option<u64>,
    node: u32,
    zones: &[PagetypeZone],
) {
    let _ = writeln!(out, "Page block order: {PAGEBLOCK_ORDER}");
    let _ = writeln!(out, "Pages per block:  {PAGEBLOCK_NR_PAGES}");
    out.push('\n');
    let _ = write!(out, "{:<43} ", "Free pages count per migrate type at order");
    for order in 0..NR_PAGE_ORDERS {
        let _ = write!(out, "{order:>6} ");
    }
    out.push('\n');
    for z in zones {
        for (name, counts) in names.iter().zip(&z.free) {
            let _ = write!(out, "Node {node:>4}, zone {:>8}, type {name:>12} ", z.name);
            for &c in counts {
                match cap {
                    Some(cap) if c >= cap => {
                        let _ = write!(out, ">{cap:>6} ");
                    }
                    _ => {
                        let _ = write!(out, "{c:>6} ");
                    }
                }
            }
            out.push('\n');
        }
    }
    let _ = write!(out, "\n{:<23}", "Number of blocks type ");
    for n in names {
        let _ = write!(out, "{n:>12} ");
    }
    out.push('\n');
    for z in zones {
        let _ = write!(out, "Node {node}, zone {:>8} ", z.name);
        for c in &z.blocks {
            let _ = write!(out, "{c:>12} ");
        }
        out.push('\n');
    }
}

/// One CPU's pageset as zoneinfo prints it.
pub(crate) struct PagesetLine {
    pub cpu: u32,
    pub count: i64,
    pub high: i64,
    pub batch: i64,
    pub high_min: i64,
    pub high_max: i64,
    /// The `vm stats threshold` printed after it.
    pub threshold: i64,
}

/// What one zone block of zoneinfo shows, whoever worked the numbers out (an allocator here;
/// a real kernel's file in the tests). Every line of every layout has its field; the layout
/// picks the lines.
pub(crate) struct ZoneBlock {
    pub node: u32,
    pub name: String,
    pub free: u64,
    pub boost: u64,
    pub min: u64,
    pub low: u64,
    pub high: u64,
    pub promo: u64,
    /// `scanned` (before 4.8) or `node_scanned` (4.8–4.10): pages scanned by reclaim.
    pub scanned: u64,
    pub spanned: u64,
    pub present: u64,
    pub managed: u64,
    pub cma: u64,
    /// MAX_NR_ZONES entries.
    pub protection: Vec<i64>,
    /// The `nr_free_cma` zone statistic (3.7 on).
    pub free_cma: u64,
    pub pagesets: Vec<PagesetLine>,
    /// `all_unreclaimable` (before 4.8) or `node_unreclaimable`.
    pub unreclaimable: u64,
    pub start_pfn: u64,
    /// `inactive_ratio` (before 4.8) or `node_inactive_ratio` (4.8–4.14).
    pub inactive_ratio: u64,
}

/// `/proc/zoneinfo` in `layout`.
pub fn zoneinfo<E: EventSink>(pa: &PageAllocator<E>, layout: ProcLayout) -> String {
    let mut out = String::new();
    for node in 0..pa.nr_nodes() as u32 {
        for zt in ZoneType::ALL {
            let block = match pa.zone_by_type(NodeId(node), zt) {
                Some(z) => zone_block(pa, z, layout),
                None => absent_zone_block(pa, node, zt, layout),
            };
            zoneinfo_block(&mut out, layout, &block);
        }
    }
    out
}

/// The `protection:` tuple: our zone types, then (with ZONE_DEVICE) the Device column, which
/// the kernel computes as for an empty upper zone: the cumulative value of the zones below it
/// (= our Movable column) unless the 6.10–6.13 rule zeroes the columns of empty zones.
fn protection<E: EventSink>(
    pa: &PageAllocator<E>,
    ours: [u64; ZoneType::ALL.len()],
    layout: ProcLayout,
) -> Vec<i64> {
    let mut tuple: Vec<i64> = ours.iter().map(|&p| p as i64).collect();
    if layout.zone_device_column() {
        let movable = tuple[ZoneType::Movable.index()];
        tuple.push(if pa.policy().lowmem_reserve_empty_zone_zero { 0 } else { movable });
    }
    tuple
}

/// The anon inactive:active target the kernels before 4.8 kept per zone and printed as
/// `inactive_ratio`: the integer square root of ten times the zone's size in whole GiB, or 1
/// under a GiB (the size is `managed` from 3.8, `present` before). 4.8 moved it to the node,
/// and from 4.10 it is never set, so 4.8–4.14 print 0 (see docs/real-data.md).
fn inactive_ratio(layout: ProcLayout, present: u64, managed: u64) -> u64 {
    if layout.since(4, 8) {
        return 0;
    }
    let pages = if layout.since(3, 8) { managed } else { present };
    crate::workload::workingset::inactive_ratio(pages)
}

fn zone_block<E: EventSink>(pa: &PageAllocator<E>, z: &Zone, layout: ProcLayout) -> ZoneBlock {
    let threshold = i64::from(pa.stat_threshold(z));
    ZoneBlock {
        node: z.node().0,
        name: z.zone_type().name().to_owned(),
        free: z.free_pages().0,
        boost: z.watermark_boost(),
        min: z.wmark_pages(WMARK_MIN),
        low: z.wmark_pages(WMARK_LOW),
        high: z.wmark_pages(WMARK_HIGH),
        promo: z.wmark_pages(WMARK_PROMO),
        scanned: 0, // no reclaim
        spanned: z.spanned_pages().0,
        present: z.present_pages().0,
        managed: z.managed_pages().0,
        cma: z.cma_pages().0,
        protection: protection(pa, ZoneType::ALL.map(|zt| z.lowmem_reserve(zt)), layout),
        free_cma: z.free_cma_pages().0,
        pagesets: (0..pa.nr_cpus())
            .filter_map(|cpu| {
                z.pcp(CpuId(cpu)).map(|p| PagesetLine {
                    cpu,
                    count: i64::from(p.count),
                    high: i64::from(p.high),
                    batch: i64::from(p.batch),
                    high_min: i64::from(p.high_min),
                    high_max: i64::from(p.high_max),
                    threshold,
                })
            })
            .collect(),
        unreclaimable: 0, // no kswapd
        start_pfn: z.start_pfn().0,
        inactive_ratio: inactive_ratio(layout, z.present_pages().0, z.managed_pages().0),
    }
}

/// A zone type the node does not have: from 4.12 the kernel still prints it, with the
/// watermarks it computes for an empty zone.
fn absent_zone_block<E: EventSink>(
    pa: &PageAllocator<E>,
    node: u32,
    zt: ZoneType,
    layout: ProcLayout,
) -> ZoneBlock {
    let marks = sizing::zone_watermarks(
        pa.min_free_kbytes(),
        pa.tunables().watermark_scale_factor,
        &[(zt, NrPages(0))],
    )[0];
    ZoneBlock {
        node,
        name: zt.name().to_owned(),
        free: 0,
        boost: 0,
        min: marks.min,
        low: marks.low,
        high: marks.high,
        promo: marks.promo,
        scanned: 0,
        spanned: 0,
        present: 0,
        managed: 0,
        cma: 0,
        protection: protection(pa, [0; ZoneType::ALL.len()], layout),
        free_cma: 0,
        pagesets: Vec::new(),
        unreclaimable: 0,
        start_pfn: 0,
        inactive_ratio: 0,
    }
}

/// One zone's block of zoneinfo in `layout` (nothing for an unpopulated zone before 4.12).
pub(crate) fn zoneinfo_block(out: &mut String, layout: ProcLayout, b: &ZoneBlock) {
    let populated = b.present > 0;
    // 4.12 (b2bd8598195f) prints every zone, and the protection line before the statistics.
    let all_zones = layout.since(4, 12);
    if !populated && !all_zones {
        return;
    }
    let _ = write!(out, "Node {}, zone {:>8}\n  pages free     {}", b.node, b.name, b.free);
    let line = |out: &mut String, label: &str, v: u64| {
        let _ = write!(out, "\n        {label:<9}{v}");
    };
    if layout.since(5, 16) {
        line(out, "boost", b.boost);
    }
    line(out, "min", b.min);
    line(out, "low", b.low);
    line(out, "high", b.high);
    if layout.since(6, 12) {
        line(out, "promo", b.promo);
    }
    if !layout.since(4, 8) {
        line(out, "scanned", b.scanned);
    } else if !layout.since(4, 11) {
        let _ = write!(out, "\n   node_scanned  {}", b.scanned);
    }
    line(out, "spanned", b.spanned);
    line(out, "present", b.present);
    if layout.since(3, 8) {
        line(out, "managed", b.managed);
    }
    if layout.since(5, 12) {
        line(out, "cma", b.cma);
    }
    // Zone statistics we keep, in the kernel's order (NR_FREE_PAGES first, NR_FREE_CMA_PAGES
    // near the end); the LRU, mlock, bounce and zspages items are not modelled.
    let indent = if layout.since(4, 8) { "      " } else { "    " };
    let stats = |out: &mut String| {
        let _ = write!(out, "\n{indent}{:<12} {}", "nr_free_pages", b.free);
        if layout.since(3, 7) {
            let _ = write!(out, "\n{indent}{:<12} {}", "nr_free_cma", b.free_cma);
        }
    };
    let protection = |out: &mut String| {
        let tuple: Vec<String> = b.protection.iter().map(i64::to_string).collect();
        let _ = write!(out, "\n        protection: ({})", tuple.join(", "));
    };
    if all_zones {
        protection(out);
        if !populated {
            out.push('\n');
            return;
        }
        stats(out);
    } else {
        stats(out);
        protection(out);
    }
    out.push_str("\n  pagesets");
    for p in &b.pagesets {
        let _ = write!(out, "\n    cpu: {}", p.cpu);
        if layout.since(6, 13) {
            // MengEn Sun's patch: five labels padded to one width.
            for (label, v) in [
                ("count", p.count),
                ("high", p.high),
                ("batch", p.batch),
                ("high_min", p.high_min),
                ("high_max", p.high_max),
            ] {
                let _ = write!(out, "\n              {:<9} {v}", format!("{label}:"));
            }
        } else {
            let _ = write!(
                out,
                "\n              count: {}\n              high:  {}\n              batch: {}",
                p.count, p.high, p.batch
            );
        }
        let _ = write!(out, "\n  vm stats threshold: {}", p.threshold);
    }
    if layout.since(4, 8) {
        let _ = write!(
            out,
            "\n  node_unreclaimable:  {}\n  start_pfn:           {}",
            b.unreclaimable, b.start_pfn
        );
        if !layout.since(4, 15) {
            let _ = write!(out, "\n  node_inactive_ratio: {}", b.inactive_ratio);
        }
    } else {
        let _ = write!(
            out,
            "\n  all_unreclaimable: {}\n  start_pfn:         {}\n  inactive_ratio:    {}",
            b.unreclaimable, b.start_pfn, b.inactive_ratio
        );
    }
    out.push('\n');
}

/// The event counters `/proc/vmstat` has, in its order.
const KERNEL_EVENTS: [Counter; 16] = [
    Counter::PgallocDma,
    Counter::PgallocDma32,
    Counter::PgallocNormal,
    Counter::PgallocMovable,
    Counter::Pgfree,
    Counter::PgmigrateSuccess,
    Counter::PgmigrateFail,
    Counter::CompactMigrateScanned,
    Counter::CompactFreeScanned,
    Counter::CompactIsolated,
    Counter::CompactStall,
    Counter::CompactFail,
    Counter::CompactSuccess,
    Counter::CompactDaemonWake,
    Counter::CompactDaemonMigrateScanned,
    Counter::CompactDaemonFreeScanned,
];

/// debugfs `extfrag/extfrag_index`: per populated zone, the fragmentation index of every
/// order in thousandths printed as `%2d.%03d` (-1.000: a block of that order is free).
pub fn extfrag_index<E: EventSink>(pa: &PageAllocator<E>) -> String {
    per_zone_and_order(pa, |z, o| {
        let i = z.fragmentation_index(o);
        format!("{:2}.{:03} ", i / 1000, (i % 1000).abs())
    })
}

/// debugfs `extfrag/unusable_index`: per populated zone, the share of free memory in blocks
/// too small for each order, in thousandths printed as `%d.%03d`.
pub fn unusable_index<E: EventSink>(pa: &PageAllocator<E>) -> String {
    per_zone_and_order(pa, |z, o| {
        let i = z.unusable_index(o);
        format!("{}.{:03} ", i / 1000, i % 1000)
    })
}

/// One line per populated zone, `Node N, zone NAME ` then `cell(zone, order)` for every order
/// (the layout of the debugfs `extfrag` files).
fn per_zone_and_order<E: EventSink>(
    pa: &PageAllocator<E>,
    cell: impl Fn(&Zone, Order) -> String,
) -> String {
    let mut out = String::new();
    for z in pa.zones().iter().filter(|z| z.present_pages().0 > 0) {
        let _ = write!(out, "Node {}, zone {:>8} ", z.node().0, z.zone_type().name());
        for o in Order::all() {
            out += &cell(z, o);
        }
        out.push('\n');
    }
    out
}

/// A `/proc/vmstat` subset: the kernel's items we have, then ours.
pub fn vmstat<E: EventSink>(pa: &PageAllocator<E>) -> String {
    let ev = pa.vm_events();
    let mut out = String::new();
    let free: u64 = pa.zones().iter().map(|z| z.free_pages().0).sum();
    let cma: u64 = pa.zones().iter().map(|z| z.free_cma_pages().0).sum();
    let _ = writeln!(out, "nr_free_pages {free}");
    let _ = writeln!(out, "nr_free_cma {cma}");
    for c in KERNEL_EVENTS {
        let _ = writeln!(out, "{} {}", c.name(), ev.get(c));
    }
    // Ours, after every kernel line.
    for &c in Counter::ALL.iter().filter(|c| !KERNEL_EVENTS.contains(c)) {
        let _ = writeln!(out, "{} {}", c.name(), ev.get(c));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zoneinfo::{ZoneEntry, ZoneInfo};
    use pagealloc::{Gfp, MemoryMap, Order, Policy, Tunables};

    const REALDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/realdata");

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!("{REALDATA}/{name}")).unwrap()
    }

    /// DMA: pfns 1..159 (the usual 0x1000..0x9f000), DMA32: 16 MiB..24 MiB; two CPUs.
    fn small() -> PageAllocator {
        let mut map = MemoryMap::new();
        map.add_range(NodeId(0), 0x1000..0x9f000)
            .unwrap()
            .add_range(NodeId(0), 0x100_0000..0x180_0000)
            .unwrap()
            .set_cpus(NodeId(0), 2)
            .unwrap();
        PageAllocator::new(map, Tunables::default(), Policy::modern()).unwrap()
    }

    #[test]
    fn buddyinfo_of_a_fresh_allocator() {
        // pfns 1..159 free as 1 (o0), 2-3, 4-7, 8-15, 16-31, 32-63 (o5), 64-127 (o6),
        // 128-143 (o4), 144-151 (o3), 152-155 (o2), 156-157 (o1), 158 (o0).
        let expected = "\
Node 0, zone      DMA      2      2      2      2      2      1      1      0      0      0      0 \n\
Node 0, zone    DMA32      0      0      0      0      0      0      0      0      0      0      2 \n";
        assert_eq!(buddyinfo(&small()), expected);
    }

    /// The fresh `small()` (DMA: 12 free blocks, 158 pages, the largest order 6; DMA32: two
    /// order-10 blocks) by the kernel's formulas, worked by hand: extfrag at order 7 is
    /// 1000 − (1000 + 158·1000/128) / 12 = 814; unusable at order 1 is (158 − 2·78)·1000/158.
    #[test]
    fn extfrag_and_unusable_indices_of_a_fresh_allocator() {
        let pa = small();
        let extfrag = "\
Node 0, zone      DMA -1.000 -1.000 -1.000 -1.000 -1.000 -1.000 -1.000  0.814  0.866  0.891  0.904 \n\
Node 0, zone    DMA32 -1.000 -1.000 -1.000 -1.000 -1.000 -1.000 -1.000 -1.000 -1.000 -1.000 -1.000 \n";
        assert_eq!(extfrag_index(&pa), extfrag);
        let unusable = "\
Node 0, zone      DMA 0.000 0.012 0.037 0.088 0.189 0.392 0.594 1.000 1.000 1.000 1.000 \n\
Node 0, zone    DMA32 0.000 0.000 0.000 0.000 0.000 0.000 0.000 0.000 0.000 0.000 0.000 \n";
        assert_eq!(unusable_index(&pa), unusable);
    }

    #[test]
    fn pagetypeinfo_header_and_block_counts() {
        let pa = small();
        let text = pagetypeinfo(&pa, ProcLayout::default());
        let header = "\
Page block order: 9\n\
Pages per block:  512\n\
\n\
Free pages count per migrate type at order       0      1      2      3      4      5      6      7      8      9     10 \n\
Node    0, zone      DMA, type    Unmovable      0      0      0      0      0      0      0      0      0      0      0 \n\
Node    0, zone      DMA, type      Movable      2      2      2      2      2      1      1      0      0      0      0 \n";
        assert!(text.starts_with(header), "{text}");
        let blocks = "
Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic          CMA      Isolate \n\
Node 0, zone      DMA            0            1            0            0            0            0 \n\
Node 0, zone    DMA32            0            4            0            0            0            0 \n";
        assert!(text.ends_with(blocks), "{text}");
        assert_eq!(text.lines().count(), 4 + 12 + 2 + 2);
    }

    /// Before 4.4: Reclaimable before Movable, Reserve in the fourth place (our HighAtomic
    /// blocks); CMA only with CONFIG_CMA (3.5 on).
    #[test]
    fn pagetypeinfo_columns_follow_version_and_config() {
        let pa = small();
        let title = |layout| {
            let text = pagetypeinfo(&pa, layout);
            text.lines().find(|l| l.starts_with("Number of blocks")).unwrap().to_owned()
        };
        let v = |s: &str| s.parse::<KernelVersion>().unwrap();
        let old = "Unmovable  Reclaimable      Movable      Reserve";
        let new = "Unmovable      Movable  Reclaimable   HighAtomic";
        for (kernel, cma, types, rest) in [
            ("4.3", true, old, "          CMA      Isolate "),
            ("4.3", false, old, "      Isolate "),
            ("3.4", true, old, "      Isolate "),
            ("4.4", false, new, "      Isolate "),
        ] {
            assert_eq!(
                title(ProcLayout::new(v(kernel), cma, true)),
                format!("Number of blocks type     {types}{rest}"),
                "{kernel} {cma}"
            );
        }
        let old = pagetypeinfo(&pa, ProcLayout::new(v("4.3"), false, true));
        assert!(old.contains(
            "Node    0, zone      DMA, type  Reclaimable      0      0      0      0      0      0      0      0      0      0      0 \n\
             Node    0, zone      DMA, type      Movable      2      2      2      2      2      1      1      0      0      0      0 \n\
             Node    0, zone      DMA, type      Reserve      0"
        ));
        assert!(old.ends_with("Node 0, zone    DMA32            0            0            4            0            0 \n"));
    }

    /// The free counts of one pagetypeinfo line (after the type name).
    fn numbers(s: &str) -> Vec<u64> {
        s.split_whitespace().filter_map(|w| w.trim_start_matches('>').parse().ok()).collect()
    }

    /// A real pagetypeinfo's numbers, per node: (node, zones).
    fn parse_pagetypeinfo(text: &str) -> Vec<(u32, Vec<PagetypeZone>)> {
        let mut nodes: Vec<(u32, Vec<PagetypeZone>)> = Vec::new();
        for line in text.lines().filter(|l| l.starts_with("Node ")) {
            let words: Vec<&str> = line.split_whitespace().collect();
            let node: u32 = words[1].trim_end_matches(',').parse().unwrap();
            let zone = words[3].trim_end_matches(',');
            if nodes.last().is_none_or(|(n, _)| *n != node) {
                nodes.push((node, Vec::new()));
            }
            let zones = &mut nodes.last_mut().unwrap().1;
            if line.contains(", type ") {
                // Node N, zone Z, type T c0 … c10
                if zones.last().is_none_or(|z| z.name != zone) {
                    zones.push(PagetypeZone {
                        name: zone.to_owned(),
                        free: Vec::new(),
                        blocks: Vec::new(),
                    });
                }
                zones.last_mut().unwrap().free.push(numbers(&line[44..]));
            } else {
                let z = zones.iter_mut().find(|z| z.name == zone).unwrap();
                z.blocks = numbers(&line[22..]);
            }
        }
        nodes
    }

    /// Real kernels' pagetypeinfo files, byte for byte: their numbers rendered in the layout
    /// of their kernel give the file back. 442proj2 is a 3.2 kernel (Reserve, no CMA); jc a
    /// 4.19–5.13 one without CONFIG_CMA; elastic-beats a CONFIG_CMA kernel after 4.4.
    #[test]
    fn pagetypeinfo_matches_real_kernels_byte_for_byte() {
        let v = |s: &str| s.parse::<KernelVersion>().unwrap();
        for (file, layout) in [
            ("442proj2-pagetypeinfo.txt", ProcLayout::new(v("3.2"), false, true)),
            ("jc-pagetypeinfo.txt", ProcLayout::new(v("5.4"), false, true)),
            ("elastic-beats-pagetypeinfo.txt", ProcLayout::new(v("5.4"), true, true)),
        ] {
            let text = fixture(file);
            let render = |layout: ProcLayout| {
                let cols = layout.migratetype_columns(layout.cma);
                let names: Vec<&str> = cols.iter().map(|&(n, _)| n).collect();
                let mut ours = String::new();
                for (node, zones) in parse_pagetypeinfo(&text) {
                    pagetypeinfo_node(&mut ours, &names, layout.walk_cap(), node, &zones);
                }
                ours
            };
            assert_eq!(render(layout), text, "{file}");
            // The other side of 4.4 does not give the file back.
            let other = if layout.since(4, 4) { v("4.3") } else { v("4.4") };
            assert_ne!(render(ProcLayout::new(other, layout.cma, true)), text, "{file}");
        }
        // The walk cap, from 5.4 only.
        let zone = |c| PagetypeZone {
            name: "Normal".into(),
            free: vec![vec![c, 99_999]],
            blocks: vec![1],
        };
        for (kernel, line) in [
            ("5.4", "Node    1, zone   Normal, type      Movable >100000  99999 \n"),
            ("5.3", "Node    1, zone   Normal, type      Movable 123456  99999 \n"),
        ] {
            let mut out = String::new();
            let cap = ProcLayout::new(v(kernel), true, true).walk_cap();
            pagetypeinfo_node(&mut out, &["Movable"], cap, 1, &[zone(123_456)]);
            assert!(out.contains(line), "{kernel}: {out}");
        }
    }

    /// Our buddyinfo lines are the real kernels' lines for the same numbers (3.2 to 5.x).
    #[test]
    fn buddyinfo_lines_match_real_kernels() {
        for file in [
            "jc-buddyinfo.txt",
            "node_exporter-buddyinfo.txt",
            "pcp-qa-meminfo-root-001-buddyinfo.txt",
        ] {
            let text = fixture(file);
            let mut ours = String::new();
            for line in text.lines() {
                let (head, counts) = line.split_at("Node 0, zone    DMA32".len());
                let zone = head.rsplit(' ').next().unwrap();
                buddyinfo_line(&mut ours, 0, zone, &numbers(counts));
            }
            assert_eq!(ours, text, "{file}");
        }
    }

    /// A real zoneinfo parsed with our parser. That needs `managed` (3.8+): a file older than
    /// 3.8 gets a `managed` line equal to `present` per zone, for the parser only (the layouts
    /// before 3.8 do not print it, so it never reaches the rendered text).
    fn parse_real(text: &str) -> ZoneInfo {
        if text.contains("\n        managed  ") {
            return ZoneInfo::parse(text).unwrap();
        }
        let mut patched = String::new();
        for line in text.split_inclusive('\n') {
            patched.push_str(line);
            if let Some(v) = line.strip_prefix("        present  ") {
                patched.push_str(&format!("        managed  {v}"));
            }
        }
        ZoneInfo::parse(&patched).unwrap()
    }

    /// A real zoneinfo's numbers as the blocks our renderer takes.
    fn zone_blocks(info: &ZoneInfo) -> Vec<ZoneBlock> {
        let stat = |e: &ZoneEntry, names: &[&str]| {
            names.iter().find_map(|n| e.stat(n)).map_or(0, |v| v as u64)
        };
        info.zones
            .iter()
            .map(|e| ZoneBlock {
                node: e.node,
                name: e.name.clone(),
                free: e.pages_free.unwrap(),
                boost: e.boost.unwrap_or(0),
                min: e.min.unwrap(),
                low: e.low.unwrap(),
                high: e.high.unwrap(),
                promo: e.promo.unwrap_or(0),
                scanned: stat(e, &["scanned", "node_scanned"]),
                spanned: e.spanned.unwrap(),
                present: e.present.unwrap(),
                managed: e.managed.unwrap_or(0),
                cma: e.cma.unwrap_or(0),
                protection: e.protection.clone().unwrap(),
                free_cma: stat(e, &["nr_free_cma"]),
                pagesets: e
                    .pagesets
                    .iter()
                    .map(|p| PagesetLine {
                        cpu: p.cpu,
                        count: p.count.unwrap(),
                        high: p.high.unwrap(),
                        batch: p.batch.unwrap(),
                        high_min: p.high_min.unwrap_or(0),
                        high_max: p.high_max.unwrap_or(0),
                        threshold: p.stat_threshold.unwrap(),
                    })
                    .collect(),
                unreclaimable: stat(e, &["all_unreclaimable", "node_unreclaimable"]),
                start_pfn: e.start_pfn.unwrap_or(0),
                inactive_ratio: stat(e, &["inactive_ratio", "node_inactive_ratio"]),
            })
            .collect()
    }

    /// What of a real zoneinfo the views carry: all but the `per-node stats` block and the
    /// zone and NUMA statistics other than `nr_free_pages` and `nr_free_cma` (the LRU, slab,
    /// file and NUMA counts the allocator does not have).
    fn carried(text: &str) -> String {
        let mut out = String::new();
        let mut node_stats = false;
        for line in text.split_inclusive('\n') {
            if line.starts_with("  per-node stats") {
                node_stats = true;
                continue;
            }
            if line.starts_with("  pages free") {
                node_stats = false;
            }
            let indent = line.len() - line.trim_start().len();
            let stat = matches!(indent, 4 | 6) && !line.contains(':');
            let kept =
                ["nr_free_pages ", "nr_free_cma "].iter().any(|k| line.trim_start().starts_with(k));
            if node_stats || (stat && !kept) {
                continue;
            }
            out.push_str(line);
        }
        out
    }

    /// Real kernels' zoneinfo files, byte for byte in every line the views carry (see
    /// `carried`): each file's numbers rendered in the layout of its kernel. One file per
    /// layout that has a real file; 4.11 and 6.12 have none here, and the 6.13+ file is the
    /// hand-written example of docs/kernel-reference.md §2.9 (not a kernel's).
    #[test]
    fn zoneinfo_matches_real_kernels_byte_for_byte() {
        let v = |s: &str| s.parse::<KernelVersion>().unwrap();
        let cases = [
            ("realdata/442proj2-zoneinfo.txt", "3.2"),
            ("realdata/pcp-qa-meminfo-root-001-zoneinfo.txt", "4.4"),
            ("realdata/pcp-qa-meminfo-root-002-zoneinfo.txt", "4.4"),
            ("realdata/pcp-qa-meminfo-root-004-zoneinfo.txt", "4.10"),
            ("realdata/pcp-qa-meminfo-root-005-zoneinfo.txt", "4.14"),
            ("realdata/jc-zoneinfo.txt", "5.4"),
            ("realdata/node_exporter-zoneinfo.txt", "5.4"),
            ("realdata/procfs-fixture-zoneinfo.txt", "5.4"),
            ("realdata/pcp-qa-meminfo-root-006-zoneinfo.txt", "5.4"),
            ("realdata/pcp-qa-meminfo-root-007-zoneinfo.txt", "5.14"),
            // A RHEL 9 kernel (5.14.0-325.el9) with the 5.16–6.11 lines backported.
            ("realdata/khandevops1-linux-zoneinfo.txt", "6.1"),
            ("section-2-9-zoneinfo.txt", "6.13"),
        ];
        for (file, kernel) in cases {
            let text = std::fs::read_to_string(format!("{REALDATA}/../{file}")).unwrap();
            let blocks = zone_blocks(&parse_real(&text));
            let render = |layout: ProcLayout| {
                let mut ours = String::new();
                for b in &blocks {
                    zoneinfo_block(&mut ours, layout, b);
                }
                ours
            };
            let layout = ProcLayout::new(v(kernel), true, true);
            let expected = carried(&text);
            let mut ours = render(layout);
            if !text.ends_with('\n') {
                // node_exporter's copy lost the kernel's last newline.
                assert_eq!(ours.pop(), Some('\n'));
            }
            assert_eq!(ours, expected, "{file}");
            assert!(expected.lines().count() * 2 > blocks.len() * 10, "{file}: too little carried");
        }
        // Each layout gives only its own kernels' files back: every boundary's neighbours
        // render the file of the other side differently.
        for (file, kernel, neighbours) in [
            ("realdata/442proj2-zoneinfo.txt", "3.2", &["3.8"][..]),
            ("realdata/pcp-qa-meminfo-root-001-zoneinfo.txt", "4.4", &["3.6", "4.8"]),
            ("realdata/pcp-qa-meminfo-root-004-zoneinfo.txt", "4.10", &["4.7", "4.11"]),
            ("realdata/pcp-qa-meminfo-root-005-zoneinfo.txt", "4.14", &["4.11", "4.15"]),
            ("realdata/jc-zoneinfo.txt", "5.4", &["4.14", "5.12"]),
            ("realdata/pcp-qa-meminfo-root-007-zoneinfo.txt", "5.14", &["5.11", "5.16"]),
            ("realdata/khandevops1-linux-zoneinfo.txt", "6.1", &["5.15", "6.12"]),
            ("section-2-9-zoneinfo.txt", "6.13", &["6.12"]),
        ] {
            let text = std::fs::read_to_string(format!("{REALDATA}/../{file}")).unwrap();
            let blocks = zone_blocks(&parse_real(&text));
            let expected = carried(&text);
            let mut ours = String::new();
            for b in &blocks {
                zoneinfo_block(&mut ours, ProcLayout::new(v(kernel), true, true), b);
            }
            assert_eq!(ours, expected, "{file}");
            for n in neighbours {
                let mut theirs = String::new();
                for b in &blocks {
                    zoneinfo_block(&mut theirs, ProcLayout::new(v(n), true, true), b);
                }
                assert_ne!(theirs, expected, "{file} in the {n} layout");
            }
        }
    }

    /// The inactive_ratio rule reproduces every value the pre-4.8 real files print.
    #[test]
    fn inactive_ratio_rule_matches_real_kernels() {
        let v = |s: &str| s.parse::<KernelVersion>().unwrap();
        let mut checked = 0;
        for (file, kernel) in [
            ("442proj2-zoneinfo.txt", "3.2"),
            ("pcp-qa-meminfo-root-001-zoneinfo.txt", "4.4"),
            ("pcp-qa-meminfo-root-002-zoneinfo.txt", "4.4"),
        ] {
            let info = parse_real(&fixture(file));
            for z in &info.zones {
                let printed = z.stat("inactive_ratio").unwrap() as u64;
                let layout = ProcLayout::new(v(kernel), true, true);
                let ours = inactive_ratio(layout, z.present.unwrap(), z.managed.unwrap());
                assert_eq!(ours, printed, "{file}: node {} {}", z.node, z.name);
                checked += 1;
            }
        }
        assert!(checked >= 9);
        assert_eq!(inactive_ratio(ProcLayout::of(4, 8), 1 << 30, 1 << 30), 0);
    }

    #[test]
    fn zoneinfo_layouts_print_every_zone_type() {
        let pa = small();
        let old = zoneinfo(&pa, ProcLayout::of(6, 7));
        let new = zoneinfo(&pa, ProcLayout::of(6, 13));
        for text in [&old, &new] {
            let headers: Vec<&str> = text.lines().filter(|l| l.starts_with("Node")).collect();
            assert_eq!(
                headers,
                [
                    "Node 0, zone      DMA",
                    "Node 0, zone    DMA32",
                    "Node 0, zone   Normal",
                    "Node 0, zone  Movable"
                ]
            );
            assert!(!text.contains("per-node stats"));
        }
        assert!(old
            .contains("\n              high:  0\n              batch: 1\n  vm stats threshold: "));
        assert!(!old.contains("high_min") && !old.contains("promo"));
        assert!(new.contains("\n              count:    0\n              high:     0\n"));
        assert!(new.contains("\n              high_min: "));
        // An absent Normal zone: zeros; an absent Movable zone: MIN 32 as the kernel gives it.
        let movable = &new[new.find("zone  Movable").unwrap()..];
        assert_eq!(
            movable,
            "zone  Movable\n  pages free     0\n        boost    0\n        min      32\n        \
             low      32\n        high     32\n        promo    32\n        spanned  0\n        \
             present  0\n        managed  0\n        cma      0\n        protection: (0, 0, 0, 0, \
             0)\n"
        );
        assert!(new.contains(
            "zone   Normal\n  pages free     0\n        boost    0\n        min      0\n"
        ));
    }

    /// Before 4.12 only populated zones are printed, with the 3.x/4.x lines; ZONE_DEVICE's
    /// protection entry from 4.3 with CONFIG_ZONE_DEVICE.
    #[test]
    fn zoneinfo_old_layouts_of_an_allocator() {
        let pa = small();
        let v = |s: &str| s.parse::<KernelVersion>().unwrap();
        let text = zoneinfo(&pa, ProcLayout::new(v("4.3"), true, true));
        let headers: Vec<&str> = text.lines().filter(|l| l.starts_with("Node")).collect();
        assert_eq!(headers, ["Node 0, zone      DMA", "Node 0, zone    DMA32"]);
        let dma = pa.zone_by_type(NodeId(0), ZoneType::Dma).unwrap();
        let head = format!(
            "Node 0, zone      DMA\n  pages free     {}\n        min      {}\n        low      \
             {}\n        high     {}\n        scanned  0\n        spanned  {}\n        present  \
             {}\n        managed  {}\n    nr_free_pages {}\n    nr_free_cma  0\n        \
             protection: (0, {r}, {r}, {r}, {r})\n  pagesets\n    cpu: 0\n",
            dma.free_pages().0,
            dma.wmark_pages(WMARK_MIN),
            dma.wmark_pages(WMARK_LOW),
            dma.wmark_pages(WMARK_HIGH),
            dma.spanned_pages().0,
            dma.present_pages().0,
            dma.managed_pages().0,
            dma.free_pages().0,
            r = dma.lowmem_reserve(ZoneType::Dma32),
        );
        // Only DMA32 is above DMA: every upper column is its reserve.
        assert_eq!(dma.lowmem_reserve(ZoneType::Movable), dma.lowmem_reserve(ZoneType::Dma32));
        assert!(text.starts_with(&head), "{text}");
        assert!(
            text.ends_with(
                "  all_unreclaimable: 0\n  start_pfn:         4096\n  inactive_ratio:    1\n"
            ),
            "{text}"
        );
        let no_device = zoneinfo(&pa, ProcLayout::new(v("4.3"), true, false));
        let r = dma.lowmem_reserve(ZoneType::Dma32);
        assert!(no_device.contains(&format!("protection: (0, {r}, {r}, {r})\n")), "{no_device}");
        let before_device = zoneinfo(&pa, ProcLayout::new(v("4.2"), true, true));
        assert_eq!(before_device, no_device);
        let node_lru = zoneinfo(&pa, ProcLayout::new(v("4.9"), true, true));
        assert!(node_lru.contains("\n   node_scanned  0\n"));
        assert!(node_lru.contains("\n      nr_free_pages "));
        assert!(node_lru.ends_with(
            "  node_unreclaimable:  0\n  start_pfn:           4096\n  node_inactive_ratio: 0\n"
        ));
    }

    #[test]
    fn zoneinfo_device_column_follows_the_reserve_rule() {
        let mut map = MemoryMap::single_node(2, 6 << 30).unwrap();
        map.set_cpus(NodeId(0), 2).unwrap();
        let cumulative = Policy::modern();
        let mut zero = cumulative;
        zero.lowmem_reserve_empty_zone_zero = !cumulative.lowmem_reserve_empty_zone_zero;
        for policy in [cumulative, zero] {
            let pa = PageAllocator::new(map.clone(), Tunables::default(), policy).unwrap();
            let dma = pa.zone_by_type(NodeId(0), ZoneType::Dma).unwrap();
            let movable_col = dma.lowmem_reserve(ZoneType::Movable);
            let device_col = if policy.lowmem_reserve_empty_zone_zero { 0 } else { movable_col };
            let text = zoneinfo(&pa, ProcLayout::default());
            let line = format!(
                "        protection: (0, {}, {}, {movable_col}, {device_col})\n",
                dma.lowmem_reserve(ZoneType::Dma32),
                dma.lowmem_reserve(ZoneType::Normal)
            );
            assert!(text.contains(&line), "{line}\n{text}");
            assert!(dma.lowmem_reserve(ZoneType::Normal) > 0);
        }
    }

    /// Render, parse with our parser, get our own numbers back, in every layout from 3.8 (the
    /// parser needs `managed`): a line the layout lacks parses as absent.
    #[test]
    fn zoneinfo_round_trip() {
        let pa = PageAllocator::new(
            MemoryMap::single_node(3, 6 << 30).unwrap(),
            Tunables::default(),
            Policy::modern(),
        )
        .unwrap();
        let cpu = pa.cpu(CpuId(1)).unwrap();
        let mut held = Vec::new();
        for order in [0u8, 0, 1, 3, 9] {
            held.push((pa.alloc_pages(cpu, Gfp::KERNEL, Order(order)).unwrap(), order));
        }
        let (pfn, order) = held.pop().unwrap();
        pa.free_pages(cpu, pfn, Order(order)).unwrap();
        for (major, minor) in
            [(3, 8), (4, 10), (4, 14), (5, 4), (5, 12), (5, 16), (6, 7), (6, 12), (6, 13)]
        {
            let layout = ProcLayout::of(major, minor);
            let info = ZoneInfo::parse(&zoneinfo(&pa, layout)).unwrap();
            let all_zones = layout.since(4, 12);
            assert_eq!(info.zones.len(), if all_zones { 4 } else { 3 }, "{major}.{minor}");
            assert_eq!(info.online_cpus(), Some(3));
            let printed = |since: (u32, u32), v: u64| layout.since(since.0, since.1).then_some(v);
            for entry in &info.zones {
                let zt = entry.zone_type().unwrap();
                let Some(z) = pa.zone_by_type(NodeId(entry.node), zt) else {
                    assert!(!entry.is_populated());
                    continue;
                };
                assert_eq!(entry.pages_free, Some(z.free_pages().0));
                assert_eq!(entry.boost, printed((5, 16), z.watermark_boost()));
                assert_eq!(entry.min, Some(z.wmark_pages(WMARK_MIN)));
                assert_eq!(entry.low, Some(z.wmark_pages(WMARK_LOW)));
                assert_eq!(entry.high, Some(z.wmark_pages(WMARK_HIGH)));
                assert_eq!(entry.promo, printed((6, 12), z.wmark_pages(WMARK_PROMO)));
                assert_eq!(entry.spanned, Some(z.spanned_pages().0));
                assert_eq!(entry.present, Some(z.present_pages().0));
                assert_eq!(entry.managed, Some(z.managed_pages().0));
                assert_eq!(entry.cma, printed((5, 12), z.cma_pages().0));
                assert_eq!(entry.start_pfn, Some(z.start_pfn().0));
                let protection: Vec<i64> =
                    ZoneType::ALL.iter().map(|&t| z.lowmem_reserve(t) as i64).collect();
                assert_eq!(entry.protection.as_ref().unwrap()[..4], protection[..]);
                assert_eq!(entry.stat("nr_free_pages"), Some(z.free_pages().0 as i64));
                assert_eq!(entry.pagesets.len(), 3);
                for p in &entry.pagesets {
                    let s = z.pcp(CpuId(p.cpu)).unwrap();
                    assert_eq!(p.count, Some(i64::from(s.count)));
                    assert_eq!(p.high, Some(i64::from(s.high)));
                    assert_eq!(p.batch, Some(i64::from(s.batch)));
                    let bounds = (p.high_min, p.high_max);
                    if layout.since(6, 13) {
                        assert_eq!(
                            bounds,
                            (Some(i64::from(s.high_min)), Some(i64::from(s.high_max)))
                        );
                    } else {
                        assert_eq!(bounds, (None, None));
                    }
                    assert_eq!(p.stat_threshold, Some(i64::from(pa.stat_threshold(z))));
                }
            }
            // CPU 1 holds pages on a Normal pageset.
            let normal = info.zone(0, "Normal").unwrap();
            assert!(normal.pagesets[1].count.unwrap() > 0);
        }
        for (pfn, order) in held {
            pa.free_pages(cpu, pfn, Order(order)).unwrap();
        }
    }
    #[test]
    fn vmstat_kernel_lines_first() {
        let pa = small();
        let cpu = pa.cpu(CpuId(0)).unwrap();
        let pfn = pa.alloc_pages(cpu, Gfp::KERNEL, Order(2)).unwrap();
        pa.free_pages(cpu, pfn, Order(2)).unwrap();
        let text = vmstat(&pa);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("nr_free_pages {}", pa.nr_free_pages().0));
        assert_eq!(lines[1], "nr_free_cma 0");
        assert_eq!(
            &lines[2..7],
            [
                "pgalloc_dma 0",
                "pgalloc_dma32 4",
                "pgalloc_normal 0",
                "pgalloc_movable 0",
                "pgfree 4"
            ]
        );
        assert_eq!(lines.len(), 2 + Counter::ALL.len());
        assert!(lines[7..].iter().any(|l| l.starts_with("pcp_alloc ")));
        assert!(lines.iter().all(|l| l.split(' ').count() == 2));
    }
}

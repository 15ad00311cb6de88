//! A tolerant parser of `/proc/zoneinfo` as real kernels write it (docs/kernel-reference.md §8.3).
//!
//! The layout grew over the years and this parser takes every version people still run:
//! 3.10 (RHEL 7: `scanned`, `all_unreclaimable`, `inactive_ratio`, no `per-node stats`, only
//! populated zones, four protection entries), 4.x (`per-node stats`, `node_scanned`), 5.x
//! (`cma`), 5.16+ (`boost`), 6.12+ (`promo`) and 6.13+ (`high_min` / `high_max` in every
//! pageset, labels padded to one width). Per zone it keeps what sizing needs — pages free,
//! boost, min/low/high/promo, spanned/present/managed/cma, protection, the pagesets (count,
//! high, batch, high_min, high_max and the vm stats threshold per CPU), start_pfn — plus every
//! other `name value` zone statistic.
//!
//! Tolerance: lines before the first zone header (a shell prompt, a mail's prose), CR line
//! ends, tabs, node statistics, lines it does not know and values it cannot read are skipped
//! and counted, never fatal. Refused ([`ParseError`]): text with no `Node N, zone NAME` header
//! at all (the message names the `/proc` file it looks like instead, if any), a number no
//! kernel prints (a node of 1024 or more, a page count above 2^40, a CPU of 2^20 or more, a
//! pageset value outside the kernel's `int`: checked here so that no sum or product of them
//! can wrap later), a zone printed twice (two files pasted together), and a file cut short
//! (its last zone block ends before the lines every kernel prints for it).

use std::collections::BTreeMap;
use std::fmt;

use pagealloc::ZoneType;

/// One CPU's pageset of a zone, as printed (fields the kernel did not print are `None`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pageset {
    /// The CPU number.
    pub cpu: u32,
    /// Pages on the pageset's lists.
    pub count: Option<i64>,
    /// The pageset's `high` (auto-tuned from 6.7, fixed before).
    pub high: Option<i64>,
    /// Refill and drain chunk.
    pub batch: Option<i64>,
    /// Lower bound of the auto-tuned high (printed from 6.13).
    pub high_min: Option<i64>,
    /// Upper bound of the auto-tuned high (printed from 6.13).
    pub high_max: Option<i64>,
    /// The `vm stats threshold` line that follows the pageset.
    pub stat_threshold: Option<i64>,
}

/// One `Node N, zone NAME` block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneEntry {
    /// Node number.
    pub node: u32,
    /// Zone name as printed (`DMA`, `DMA32`, `Normal`, `Movable`, `Device`, `HighMem`, …).
    pub name: String,
    /// 1-based line number of the zone's header.
    pub line: usize,
    /// `pages free`.
    pub pages_free: Option<u64>,
    /// `boost` (printed from 5.16).
    pub boost: Option<u64>,
    /// `min`: the MIN watermark, boost included.
    pub min: Option<u64>,
    /// `low`, boost included.
    pub low: Option<u64>,
    /// `high`, boost included.
    pub high: Option<u64>,
    /// `promo`, boost included (printed from 6.12).
    pub promo: Option<u64>,
    /// `spanned`.
    pub spanned: Option<u64>,
    /// `present`.
    pub present: Option<u64>,
    /// `managed`.
    pub managed: Option<u64>,
    /// `cma` (printed from 5.x).
    pub cma: Option<u64>,
    /// `protection: (…)`, one entry per zone type of the kernel (MAX_NR_ZONES).
    pub protection: Option<Vec<i64>>,
    /// One entry per `cpu:` line, in file order.
    pub pagesets: Vec<Pageset>,
    /// `start_pfn`.
    pub start_pfn: Option<u64>,
    /// Every other `name value` line of the zone (zone and NUMA statistics, `node_unreclaimable`,
    /// …), in file order.
    pub stats: Vec<(String, i64)>,
}

impl ZoneEntry {
    /// The zone type, if it is one the allocator models (`Device`, `HighMem` and others: None).
    pub fn zone_type(&self) -> Option<ZoneType> {
        ZoneType::from_name(&self.name)
    }

    /// Has the zone managed pages?
    pub fn is_populated(&self) -> bool {
        self.managed.is_some_and(|m| m > 0)
    }

    /// A zone statistic by name (`nr_free_pages`, …).
    #[cfg(test)]
    pub fn stat(&self, name: &str) -> Option<i64> {
        self.stats.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }
}

/// Nodes a kernel may have: `MAX_NUMNODES` is at most 1 << 10 (`NODES_SHIFT` ≤ 10).
pub const MAX_NODES: u32 = 1 << 10;
/// Pages a count may reach: 2^40 pages of 4 KiB fill a 52-bit physical address space, the
/// largest any 64-bit kernel has.
pub const MAX_PAGES: u64 = 1 << 40;
/// CPU numbers stay below this (the machines' own limit, far above any kernel's `NR_CPUS`).
pub const MAX_CPUS: u32 = pagealloc::memory_map::MAX_CPUS;

/// A parsed `/proc/zoneinfo`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneInfo {
    /// Every zone block, in file order.
    pub zones: Vec<ZoneEntry>,
    /// Index in `zones` of each (node, zone name in lower case).
    index: BTreeMap<(u32, String), usize>,
    /// Non-blank lines that were neither understood nor statistics: text around the data,
    /// garbled lines, values that are not numbers.
    pub skipped_lines: usize,
    /// Whether any zone printed a `per-node stats` block (kernels from 4.8).
    pub has_node_stats: bool,
    /// Whether the 3.x-era per-zone lines (`scanned`, `all_unreclaimable`, `inactive_ratio`)
    /// appear.
    pub has_pre_4_8_lines: bool,
}

/// Why a text is not a zoneinfo.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Nothing but blank lines.
    Empty,
    /// No `Node N, zone NAME` header; `looks_like` names the `/proc` file it resembles.
    NoZones {
        /// E.g. `/proc/buddyinfo`.
        looks_like: Option<&'static str>,
    },
    /// Zone headers, but no zone says how many pages it manages.
    NoManaged,
    /// A number outside what any kernel prints.
    OutOfRange {
        /// The line (1-based).
        line: usize,
        /// The field.
        field: String,
        /// The value as written.
        value: String,
        /// What the field takes.
        takes: String,
    },
    /// The same zone printed twice.
    Duplicate {
        /// Node.
        node: u32,
        /// Zone name.
        zone: String,
        /// The line of the first block.
        first: usize,
        /// The line of the second.
        line: usize,
    },
    /// The last zone block ends before a line every kernel prints for it.
    Truncated {
        /// The line of the block's header.
        line: usize,
        /// Node.
        node: u32,
        /// Zone name.
        zone: String,
        /// The line it lacks.
        missing: &'static str,
    },
    /// The last node's zones end before populated zones its protection counts.
    ZonesMissing {
        /// The line of the zone whose protection counts them.
        line: usize,
        /// Node.
        node: u32,
        /// Zone name.
        zone: String,
        /// Populated zones above it its protection counts.
        counted: usize,
        /// Populated zones printed after it.
        printed: usize,
    },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Empty => f.write_str("the file is empty"),
            ParseError::NoZones { looks_like: Some(other) } => write!(
                f,
                "this is not /proc/zoneinfo: it has no `Node N, zone NAME` header line (it looks \
                 like {other})"
            ),
            ParseError::NoZones { looks_like: None } => {
                f.write_str("this is not /proc/zoneinfo: it has no `Node N, zone NAME` header line")
            }
            ParseError::NoManaged => f.write_str(
                "this zoneinfo has zone headers but no `managed` line: it is truncated or not \
                 /proc/zoneinfo",
            ),
            ParseError::OutOfRange { line, field, value, takes } => {
                write!(f, "line {line}: `{field}` {value}: no kernel prints that; it takes {takes}")
            }
            ParseError::Duplicate { node, zone, first, line } => write!(
                f,
                "line {line}: Node {node}, zone {zone} again (first at line {first}): two \
                 zoneinfo files pasted together? Give one"
            ),
            ParseError::Truncated { line, node, zone, missing } => write!(
                f,
                "the file is cut short: its last zone block (Node {node}, zone {zone}, line \
                 {line}) ends before its `{missing}` line, which every kernel prints for it"
            ),
            ParseError::ZonesMissing { line, node, zone, counted, printed } => write!(
                f,
                "the file is cut short: the protection of Node {node}, zone {zone} (line \
                 {line}) counts {counted} populated zone(s) above it, but {printed} follow it"
            ),
        }
    }
}

impl std::error::Error for ParseError {}

/// Where the parser is inside a zone block.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// Before the first zone header.
    Outside,
    /// Inside a `per-node stats` block: every `name value` line is a node statistic.
    NodeStats,
    /// Zone lines (watermarks, sizes, statistics).
    Zone,
    /// After `pagesets`.
    Pagesets,
}

/// `Node 0, zone      DMA` ⇒ (0, "DMA"). A buddyinfo line (`Node 0, zone DMA 1 2 3 …`) has
/// more words after the name and is not a header.
fn zone_header(line: &str) -> Option<(u32, &str)> {
    let rest = line.trim().strip_prefix("Node")?;
    let (node, rest) = rest.split_once(',')?;
    let node = node.trim().parse().ok()?;
    let mut words = rest.split_whitespace();
    if words.next()? != "zone" {
        return None;
    }
    let name = words.next()?;
    words.next().is_none().then_some((node, name))
}

/// `Node 0, per-node stats`: the per-node block some trees print before a node's zones.
fn is_node_stats_header(line: &str) -> bool {
    let t = line.trim();
    t.starts_with("Node") && t.ends_with("per-node stats")
}

/// A line as (key, value): `key: value` or `key words value`.
fn key_value(line: &str) -> Option<(String, &str)> {
    let t = line.trim();
    if let Some((k, v)) = t.split_once(':') {
        return Some((k.split_whitespace().collect::<Vec<_>>().join(" "), v.trim()));
    }
    let (k, v) = t.rsplit_once(char::is_whitespace)?;
    let k = k.split_whitespace().collect::<Vec<_>>().join(" ");
    (!k.is_empty()).then_some((k, v.trim()))
}

/// `(0, 2871, 3795)` ⇒ the numbers.
fn parse_list(v: &str) -> Option<Vec<i64>> {
    let inner = v.trim().strip_prefix('(')?.strip_suffix(')')?;
    inner.split(',').map(|x| x.trim().parse().ok()).collect()
}

/// The leading integer of a value (`0 pcp: 0` ⇒ 0 on very old kernels).
fn leading_int(v: &str) -> Option<i64> {
    v.split_whitespace().next()?.parse().ok()
}

/// What another `/proc` file looks like, for the error message.
fn guess_other(text: &str) -> Option<&'static str> {
    if text.contains("Free pages count per migrate type") || text.contains("Page block order") {
        Some("/proc/pagetypeinfo")
    } else if text.lines().any(|l| l.trim_start().starts_with("Node") && l.contains(", zone")) {
        Some("/proc/buddyinfo")
    } else if text.lines().any(|l| l.starts_with("MemTotal:")) {
        Some("/proc/meminfo")
    } else if text.lines().any(|l| l.starts_with("nr_free_pages ") || l.starts_with("pgfree ")) {
        Some("/proc/vmstat")
    } else {
        None
    }
}

impl ZoneInfo {
    /// Parse the text of a `/proc/zoneinfo`.
    ///
    /// # Errors
    /// [`ParseError`] when the text has no zone header or no zone has a `managed` line.
    pub fn parse(text: &str) -> Result<ZoneInfo, ParseError> {
        let mut info = ZoneInfo::default();
        let mut state = State::Outside;
        let mut any_text = false;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim_end_matches('\r');
            if line.trim().is_empty() {
                continue;
            }
            any_text = true;
            if let Some((node, name)) = zone_header(line) {
                info.add_zone(node, name, i + 1)?;
                state = State::Zone;
                continue;
            }
            if is_node_stats_header(line) {
                info.has_node_stats = true;
                state = State::NodeStats;
                continue;
            }
            let Some(zone) = info.zones.last_mut() else {
                info.skipped_lines += 1;
                continue;
            };
            if state == State::Outside {
                info.skipped_lines += 1;
                continue;
            }
            let t = line.trim();
            if t == "per-node stats" {
                info.has_node_stats = true;
                state = State::NodeStats;
                continue;
            }
            if t == "pagesets" {
                state = State::Pagesets;
                continue;
            }
            let Some((key, value)) = key_value(t) else {
                info.skipped_lines += 1;
                continue;
            };
            if state == State::NodeStats && key != "pages free" {
                // Node statistics belong to the node, not to this zone: not kept.
                if leading_int(value).is_none() {
                    info.skipped_lines += 1;
                }
                continue;
            }
            if key == "pages free" {
                state = State::Zone;
            }
            let applied = apply(zone, state, &key, value, &mut info.has_pre_4_8_lines);
            match applied.map_err(|takes| ParseError::OutOfRange {
                line: i + 1,
                field: key.clone(),
                value: value.to_owned(),
                takes: takes.to_owned(),
            })? {
                true => {}
                false => info.skipped_lines += 1,
            }
        }
        if !any_text {
            return Err(ParseError::Empty);
        }
        if info.zones.is_empty() {
            return Err(ParseError::NoZones { looks_like: guess_other(text) });
        }
        if info.zones.iter().all(|z| z.managed.is_none()) {
            return Err(ParseError::NoManaged);
        }
        info.check_last_block()?;
        info.check_last_node()?;
        Ok(info)
    }

    /// Start the block of zone `name` of `node` (header at `line`).
    fn add_zone(&mut self, node: u32, name: &str, line: usize) -> Result<(), ParseError> {
        if node >= MAX_NODES {
            return Err(ParseError::OutOfRange {
                line,
                field: "Node".into(),
                value: node.to_string(),
                takes: format!("0 to {}", MAX_NODES - 1),
            });
        }
        let key = (node, name.to_ascii_lowercase());
        if let Some(&first) = self.index.get(&key) {
            let first = self.zones[first].line;
            return Err(ParseError::Duplicate { node, zone: name.to_owned(), first, line });
        }
        self.index.insert(key, self.zones.len());
        self.zones.push(ZoneEntry { node, name: name.to_owned(), line, ..ZoneEntry::default() });
        Ok(())
    }

    /// A file cut short ends inside its last zone block: a populated zone's block ends with
    /// `start_pfn` (after its pagesets) on every kernel from 3.10, an empty zone's with its
    /// `protection` line. Without this check the cut block was sized like any other and its
    /// missing or partial values reported as mismatches of the kernel's rules.
    fn check_last_block(&self) -> Result<(), ParseError> {
        let Some(last) = self.zones.last() else { return Ok(()) };
        let missing = match last.managed {
            None => "managed",
            Some(m) if m > 0 && last.start_pfn.is_none() => "start_pfn",
            Some(0) if last.protection.is_none() => "protection",
            Some(_) => return Ok(()),
        };
        Err(ParseError::Truncated {
            line: last.line,
            node: last.node,
            zone: last.name.clone(),
            missing,
        })
    }

    /// A file cut between two zone blocks ends with complete blocks, but the protection
    /// tuples of its last node count the populated zones above each zone (column j rises
    /// over column j − 1 where zone j has managed pages): fewer populated zones printed after
    /// a zone than its tuple counts is a file cut short (a cut after the DMA zone was sized
    /// as a machine with nothing but DMA). Counting, not naming, the zones holds for kernels
    /// that print only populated zones (3.x) and those that print all (4.12+).
    fn check_last_node(&self) -> Result<(), ParseError> {
        let Some(node) = self.zones.last().map(|z| z.node) else { return Ok(()) };
        let zones: Vec<&ZoneEntry> = self.zones.iter().filter(|z| z.node == node).collect();
        for (k, z) in zones.iter().enumerate() {
            let Some(p) = &z.protection else { continue };
            let counted = p.windows(2).filter(|w| w[1] > w[0]).count();
            let printed = zones[k + 1..].iter().filter(|u| u.is_populated()).count();
            if counted > printed {
                return Err(ParseError::ZonesMissing {
                    line: z.line,
                    node,
                    zone: z.name.clone(),
                    counted,
                    printed,
                });
            }
        }
        Ok(())
    }

    /// Online CPUs as the pagesets show them: the highest CPU number + 1 (a dump may show
    /// only some CPUs' pagesets: a 40-CPU machine's with 5 shown is still 40 CPUs), or the
    /// most pagesets a zone prints if that is more; None when no zone prints pagesets.
    pub fn online_cpus(&self) -> Option<u32> {
        let most = self.zones.iter().map(|z| z.pagesets.len()).max()?;
        let highest = self.zones.iter().flat_map(|z| &z.pagesets).map(|p| p.cpu + 1).max();
        let n = (most as u32).max(highest.unwrap_or(0));
        (n > 0).then_some(n)
    }

    /// How many pagesets the zone that prints most prints (the CPUs the dump shows).
    pub fn pagesets_shown(&self) -> usize {
        self.zones.iter().map(|z| z.pagesets.len()).max().unwrap_or(0)
    }

    /// The zones of each node, in file order.
    pub fn by_node(&self) -> BTreeMap<u32, Vec<&ZoneEntry>> {
        let mut m: BTreeMap<u32, Vec<&ZoneEntry>> = BTreeMap::new();
        for z in &self.zones {
            m.entry(z.node).or_default().push(z);
        }
        m
    }

    /// The node numbers, ascending, each once.
    pub fn nodes(&self) -> Vec<u32> {
        let mut nodes: Vec<u32> = self.zones.iter().map(|z| z.node).collect();
        nodes.sort_unstable();
        nodes.dedup();
        nodes
    }

    /// The zone `name` of `node`.
    pub fn zone(&self, node: u32, name: &str) -> Option<&ZoneEntry> {
        self.index.get(&(node, name.to_ascii_lowercase())).map(|&i| &self.zones[i])
    }

    /// Whether any zone prints a line with this key (`boost`, `promo`, `cma`, …).
    pub fn prints(&self, what: Field) -> bool {
        self.zones.iter().any(|z| match what {
            Field::Boost => z.boost.is_some(),
            Field::Promo => z.promo.is_some(),
            Field::Cma => z.cma.is_some(),
            Field::HighMin => z.pagesets.iter().any(|p| p.high_min.is_some()),
        })
    }
}

/// Lines whose presence dates a kernel.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Field {
    /// `boost` (5.16+).
    Boost,
    /// `promo` (6.12+).
    Promo,
    /// `cma`.
    Cma,
    /// `high_min` in the pagesets (6.13+).
    HighMin,
}

/// What a page count takes.
const PAGES: &str = "a page count of at most 2^40 (4 PiB of 4 KiB pages)";
/// What a pageset value takes: the kernel's `int`.
const INT: &str = "an integer of the kernel's int, -2147483648 to 2147483647";

/// Store one `key value` line of a zone: Ok(false) if it was not understood, Err(what the
/// field takes) for a number out of range.
fn apply(
    zone: &mut ZoneEntry,
    state: State,
    key: &str,
    value: &str,
    old: &mut bool,
) -> Result<bool, String> {
    let num = || value.parse::<u64>().ok();
    let int = || leading_int(value);
    let set = |slot: &mut Option<u64>| match num() {
        Some(v) if v > MAX_PAGES => Err(PAGES.to_owned()),
        Some(v) => {
            *slot = Some(v);
            Ok(true)
        }
        None => Ok(false),
    };
    let in_pagesets = state == State::Pagesets;
    Ok(match key {
        "pages free" => set(&mut zone.pages_free)?,
        "boost" => set(&mut zone.boost)?,
        "min" => set(&mut zone.min)?,
        "low" => set(&mut zone.low)?,
        // `high:` with a colon inside the pagesets is the pageset's; `key_value` keeps the
        // colon-less watermark line apart only by state, so look at where we are.
        "high" if !in_pagesets => set(&mut zone.high)?,
        "promo" => set(&mut zone.promo)?,
        "spanned" => set(&mut zone.spanned)?,
        "present" => set(&mut zone.present)?,
        "managed" => set(&mut zone.managed)?,
        "cma" => set(&mut zone.cma)?,
        "start_pfn" => set(&mut zone.start_pfn)?,
        "protection" => parse_list(value).map(|l| zone.protection = Some(l)).is_some(),
        "cpu" if in_pagesets => match int() {
            Some(c) if !(0..i64::from(MAX_CPUS)).contains(&c) => {
                return Err(format!("a CPU number from 0 to {}", MAX_CPUS - 1))
            }
            Some(c) => {
                zone.pagesets.push(Pageset { cpu: c as u32, ..Pageset::default() });
                true
            }
            None => false,
        },
        "count" | "high" | "batch" | "high_min" | "high_max" | "vm stats threshold"
            if in_pagesets =>
        {
            let (Some(v), Some(p)) = (int(), zone.pagesets.last_mut()) else { return Ok(false) };
            if i32::try_from(v).is_err() {
                return Err(INT.to_owned());
            }
            let slot = match key {
                "count" => &mut p.count,
                "high" => &mut p.high,
                "batch" => &mut p.batch,
                "high_min" => &mut p.high_min,
                "high_max" => &mut p.high_max,
                _ => &mut p.stat_threshold,
            };
            *slot = Some(v);
            true
        }
        _ => {
            if matches!(key, "scanned" | "all_unreclaimable" | "inactive_ratio") {
                *old = true;
            }
            match int() {
                Some(v) => {
                    zone.stats.push((key.to_owned(), v));
                    true
                }
                None => false,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const REALDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/realdata");

    fn fixture(name: &str) -> String {
        let path = format!("{REALDATA}/{name}");
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// Every realdata zoneinfo parses, every zone has its sizes, and every populated zone
    /// has one pageset per online CPU with batch and high.
    #[test]
    fn every_realdata_file_parses() {
        let mut seen = 0;
        for entry in std::fs::read_dir(REALDATA).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.ends_with("zoneinfo.txt") {
                continue;
            }
            seen += 1;
            if name == "442proj2-zoneinfo.txt" {
                // A 3.2 kernel: no `managed` line (3.8 added it), which sizing needs. Refused
                // here; procfs's layout tests read it.
                assert_eq!(ZoneInfo::parse(&fixture(&name)), Err(ParseError::NoManaged));
                continue;
            }
            let info = ZoneInfo::parse(&fixture(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
            let cpus = info.online_cpus().unwrap_or_else(|| panic!("{name}: no pagesets"));
            for z in &info.zones {
                let what = format!("{name}: node {} {}", z.node, z.name);
                for (field, v) in [
                    ("pages free", z.pages_free),
                    ("min", z.min),
                    ("low", z.low),
                    ("high", z.high),
                    ("spanned", z.spanned),
                    ("present", z.present),
                    ("managed", z.managed),
                ] {
                    assert!(v.is_some(), "{what}: no {field}");
                }
                let protection = z.protection.as_ref().unwrap_or_else(|| panic!("{what}"));
                assert!(matches!(protection.len(), 4 | 5), "{what}: {protection:?}");
                if z.is_populated() {
                    assert_eq!(z.pagesets.len(), cpus as usize, "{what}");
                    for p in &z.pagesets {
                        assert!(p.count.is_some() && p.high.is_some() && p.batch.is_some());
                        assert!(p.stat_threshold.is_some(), "{what}: cpu {}", p.cpu);
                    }
                    assert!(z.start_pfn.is_some(), "{what}");
                    assert!(z.stat("nr_free_pages").is_some(), "{what}");
                }
            }
        }
        assert_eq!(seen, 11, "the eleven realdata zoneinfo files");
    }

    #[test]
    fn jc_file_values() {
        let info = ZoneInfo::parse(&fixture("jc-zoneinfo.txt")).unwrap();
        assert_eq!(info.zones.len(), 5);
        assert_eq!(info.online_cpus(), Some(2));
        assert!(info.has_node_stats && !info.has_pre_4_8_lines);
        assert!(!info.prints(Field::Boost) && !info.prints(Field::Promo));
        let dma = info.zone(0, "DMA").unwrap();
        assert_eq!((dma.min, dma.low, dma.high), (Some(68), Some(85), Some(102)));
        assert_eq!(dma.protection.as_deref(), Some(&[0, 2871, 3795, 3795, 3795][..]));
        assert_eq!(dma.stat("nr_free_pages"), Some(3832));
        // Node statistics are not the zone's.
        assert_eq!(dma.stat("nr_inactive_anon"), None);
        let dma32 = info.zone(0, "DMA32").unwrap();
        assert_eq!(dma32.managed, Some(758_708));
        assert_eq!(dma32.start_pfn, Some(4096));
        let cpu1 = &dma32.pagesets[1];
        assert_eq!(
            (cpu1.cpu, cpu1.count, cpu1.high, cpu1.batch, cpu1.stat_threshold),
            (1, Some(243), Some(378), Some(63), Some(24))
        );
        assert_eq!(cpu1.high_min, None);
        let device = info.zone(0, "Device").unwrap();
        assert_eq!(device.zone_type(), None);
        assert!(!device.is_populated() && device.pagesets.is_empty());
    }

    #[test]
    fn old_and_new_layouts() {
        // 3.10: scanned, all_unreclaimable, inactive_ratio; four protection entries.
        let info = ZoneInfo::parse(&fixture("pcp-qa-meminfo-root-001-zoneinfo.txt")).unwrap();
        assert!(info.has_pre_4_8_lines && !info.has_node_stats);
        assert_eq!(info.zone(0, "DMA").unwrap().protection.as_ref().unwrap().len(), 4);
        // Two nodes.
        let info = ZoneInfo::parse(&fixture("pcp-qa-meminfo-root-002-zoneinfo.txt")).unwrap();
        assert_eq!(info.nodes(), vec![0, 1]);
        assert_eq!(info.online_cpus(), Some(32));
        assert_eq!(info.zone(1, "Normal").unwrap().managed, Some(16_514_387));
        // 5.x with cma; the second node's first populated zone has the node statistics.
        let info = ZoneInfo::parse(&fixture("pcp-qa-meminfo-root-007-zoneinfo.txt")).unwrap();
        assert!(info.prints(Field::Cma));
        assert_eq!(info.zone(1, "Normal").unwrap().pages_free, Some(762_548));
        // 006 has a statistic line without a name: skipped, counted.
        let info = ZoneInfo::parse(&fixture("pcp-qa-meminfo-root-006-zoneinfo.txt")).unwrap();
        assert_eq!(info.skipped_lines, 1);
        assert_eq!(info.zone(0, "DMA").unwrap().min, Some(69));
    }

    #[test]
    fn layout_6_13_with_crlf_and_surrounding_text() {
        let text = "$ cat /proc/zoneinfo\r\n\
Node 0, zone   Normal\r\n\
  pages free     271075\r\n\
        boost    512\r\n\
        min      7517\r\n\
        low      9396\r\n\
        high     11275\r\n\
        promo    13154\r\n\
        spanned  5505024\r\n\
        present  5505024\r\n\
        managed  622592\r\n\
        cma      0\r\n\
        protection: (0, 0, 0, 0, 0)\r\n\
      nr_free_pages 271075\r\n\
  pagesets\r\n\
    cpu: 0\r\n\
              count:    3652\r\n\
              high:     4761\r\n\
              batch:    63\r\n\
              high_min: 4698\r\n\
              high_max: 38912\r\n\
  vm stats threshold: 24\r\n\
  node_unreclaimable:  0\r\n\
  start_pfn:           1048576\r\n\
-- \r\nsent from my phone\r\n";
        let info = ZoneInfo::parse(text).unwrap();
        assert_eq!(info.skipped_lines, 3, "prompt, signature dashes, signature");
        let z = &info.zones[0];
        assert_eq!((z.boost, z.promo, z.high), (Some(512), Some(13_154), Some(11_275)));
        let p = &z.pagesets[0];
        assert_eq!((p.high, p.high_min, p.high_max), (Some(4761), Some(4698), Some(38_912)));
        assert_eq!(p.stat_threshold, Some(24));
        assert_eq!(z.stat("node_unreclaimable"), Some(0));
        assert!(info.prints(Field::HighMin) && info.prints(Field::Boost));
    }

    #[test]
    fn refuses_what_is_not_zoneinfo() {
        assert_eq!(ZoneInfo::parse(" \n\n"), Err(ParseError::Empty));
        let buddy = fixture("jc-buddyinfo.txt");
        assert_eq!(
            ZoneInfo::parse(&buddy),
            Err(ParseError::NoZones { looks_like: Some("/proc/buddyinfo") })
        );
        let err = ZoneInfo::parse("MemTotal: 1 kB\n").unwrap_err();
        assert_eq!(err, ParseError::NoZones { looks_like: Some("/proc/meminfo") });
        assert!(err.to_string().contains("not /proc/zoneinfo"), "{err}");
        assert_eq!(ZoneInfo::parse("hello\n"), Err(ParseError::NoZones { looks_like: None }));
        assert_eq!(
            ZoneInfo::parse("Node 0, zone DMA\n  pages free 3\n"),
            Err(ParseError::NoManaged)
        );
    }

    /// The same zone twice (two files pasted together) is refused with both lines.
    #[test]
    fn a_zone_printed_twice_is_refused() {
        let one = fixture("jc-zoneinfo.txt");
        let e = ZoneInfo::parse(&[one.as_str(), one.as_str()].concat()).unwrap_err();
        let second = one.lines().count() + 1;
        assert_eq!(
            e,
            ParseError::Duplicate { node: 0, zone: "DMA".into(), first: 1, line: second }
        );
        assert!(e.to_string().contains("two zoneinfo files pasted together"), "{e}");
        // Another node's zone of the same name is no duplicate.
        let other = one.replace("Node 0,", "Node 1,");
        assert!(ZoneInfo::parse(&[one.as_str(), other.as_str()].concat()).is_ok());
    }

    /// Numbers no kernel prints are refused with their line, before any sum or product of
    /// them could wrap: a page count above 2^40, node 1024, CPU 2^20, a pageset value past
    /// the kernel's int.
    #[test]
    fn numbers_no_kernel_prints_are_refused() {
        let text = fixture("jc-zoneinfo.txt");
        let line_of =
            |needle: &str| text.lines().position(|l| l.contains(needle.trim_end())).unwrap() + 1;
        let cases = [
            ("managed  758708", "managed  1099511627777", "managed"),
            ("Node 0, zone    DMA32", "Node 1024, zone    DMA32", "Node"),
            ("    cpu: 1", "    cpu: 1048576", "cpu"),
            ("              batch: 1\n", "              batch: 2147483648\n", "batch"),
        ];
        for (from, to, field) in cases {
            assert!(text.contains(from), "{from}");
            let e = ZoneInfo::parse(&text.replacen(from, to, 1)).unwrap_err();
            let ParseError::OutOfRange { line, field: f, .. } = &e else { panic!("{to}: {e}") };
            assert_eq!((*line, f.as_str()), (line_of(from), field), "{e}");
            assert!(e.to_string().contains("no kernel prints that"), "{e}");
        }
        // At the limits themselves: accepted.
        let at = text.replacen("managed  758708", "managed  1099511627776", 1);
        assert_eq!(ZoneInfo::parse(&at).unwrap().zone(0, "DMA32").unwrap().managed, Some(1 << 40));
    }

    /// A file cut inside its last zone block is refused as cut short, whichever line it lacks.
    #[test]
    fn a_file_cut_short_is_refused() {
        let text = fixture("jc-zoneinfo.txt");
        // jc's last populated zone is Normal, then Movable and Device, empty.
        let normal_start = text.find("zone   Normal").unwrap();
        let in_normal = text[normal_start..].find("start_pfn").unwrap() + normal_start;
        let e = ZoneInfo::parse(&text[..in_normal]).unwrap_err();
        assert!(
            matches!(&e, ParseError::Truncated { zone, missing: "start_pfn", .. } if zone == "Normal"),
            "{e}"
        );
        assert!(e.to_string().contains("the file is cut short"), "{e}");
        let movable = text.find("zone  Movable").unwrap();
        let protection = text[movable..].find("protection").unwrap() + movable;
        assert!(matches!(
            ZoneInfo::parse(&text[..protection]),
            Err(ParseError::Truncated { missing: "protection", .. })
        ));
        let managed = text[movable..].find("managed").unwrap() + movable;
        assert!(matches!(
            ZoneInfo::parse(&text[..managed]),
            Err(ParseError::Truncated { missing: "managed", .. })
        ));
        // Cut between two blocks: DMA's protection (0, 2871, 3795, …) counts two populated
        // zones above it, none follows.
        let e = ZoneInfo::parse(&text[..text.find("Node 0, zone    DMA32").unwrap()]).unwrap_err();
        assert!(
            matches!(&e, ParseError::ZonesMissing { line: 1, counted: 2, printed: 0, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("counts 2 populated zone(s) above it, but 0 follow it"));
        // Complete files parse, their last line with or without its newline.
        assert!(ZoneInfo::parse(&text).is_ok());
        assert!(ZoneInfo::parse(text.trim_end()).is_ok());
    }

    /// A dump that shows only some CPUs' pagesets still has as many CPUs as its highest
    /// number + 1 (a 40-CPU dump showing 5 had 5).
    #[test]
    fn online_cpus_are_the_highest_number_plus_one() {
        let text = fixture("jc-zoneinfo.txt").replace("    cpu: 1\n", "    cpu: 39\n");
        let info = ZoneInfo::parse(&text).unwrap();
        assert_eq!((info.online_cpus(), info.pagesets_shown()), (Some(40), 2));
    }
}

//! A tolerant parser of `/proc/zoneinfo` as real kernels write it (docs/kernel-reference.md §8.3).
//!
//! The layout grew over the years and this parser takes every version people still run:
//! 3.10 (RHEL 7: `scanned`, `all_unreclaimable`, `inactive_ratio`, no `per-node stats`, only
//! populated zones, four protection entries), 4.x (`per-node stats`, `node_scanned`), 5.x
//! (`cma`), 5.16+ (`boost`), 6.0+ (`promo`) and 6.13+ (`high_min` / `high_max` in every
//! pageset, labels padded to one width). Per zone it keeps what sizing needs — pages free,
//! boost, min/low/high/promo, spanned/present/managed/cma, protection, the pagesets (count,
//! high, batch, high_min, high_max and the vm stats threshold per CPU), start_pfn — plus every
//! other `name value` zone statistic.
//!
//! Tolerance: lines before the first zone header (a shell prompt, a mail's prose), CR line
//! ends, tabs, node statistics, lines it does not know and values it cannot read are skipped
//! and counted, never fatal. Only text with no `Node N, zone NAME` header at all is refused, with
//! a message that names the `/proc` file it looks like instead, if any.

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
    /// `promo`, boost included (printed from 6.0).
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

/// A parsed `/proc/zoneinfo`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneInfo {
    /// Every zone block, in file order.
    pub zones: Vec<ZoneEntry>,
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
                info.zones.push(ZoneEntry {
                    node,
                    name: name.to_owned(),
                    line: i + 1,
                    ..ZoneEntry::default()
                });
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
            if !apply(zone, state, &key, value, &mut info.has_pre_4_8_lines) {
                info.skipped_lines += 1;
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
        Ok(info)
    }

    /// Online CPUs: the most pagesets any zone prints (every populated zone prints one per
    /// online CPU); None when no zone prints pagesets.
    pub fn online_cpus(&self) -> Option<u32> {
        let n = self.zones.iter().map(|z| z.pagesets.len()).max()?;
        (n > 0).then_some(n as u32)
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
        self.zones.iter().find(|z| z.node == node && z.name.eq_ignore_ascii_case(name))
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
    /// `promo` (6.0+).
    Promo,
    /// `cma`.
    Cma,
    /// `high_min` in the pagesets (6.13+).
    HighMin,
}

/// Store one `key value` line of a zone; false if it was not understood.
fn apply(zone: &mut ZoneEntry, state: State, key: &str, value: &str, old: &mut bool) -> bool {
    let num = || value.parse::<u64>().ok();
    let int = || leading_int(value);
    let set = |slot: &mut Option<u64>| num().map(|v| *slot = Some(v)).is_some();
    let in_pagesets = state == State::Pagesets;
    match key {
        "pages free" => set(&mut zone.pages_free),
        "boost" => set(&mut zone.boost),
        "min" => set(&mut zone.min),
        "low" => set(&mut zone.low),
        // `high:` with a colon inside the pagesets is the pageset's; `key_value` keeps the
        // colon-less watermark line apart only by state, so look at where we are.
        "high" if !in_pagesets => set(&mut zone.high),
        "promo" => set(&mut zone.promo),
        "spanned" => set(&mut zone.spanned),
        "present" => set(&mut zone.present),
        "managed" => set(&mut zone.managed),
        "cma" => set(&mut zone.cma),
        "start_pfn" => set(&mut zone.start_pfn),
        "protection" => parse_list(value).map(|l| zone.protection = Some(l)).is_some(),
        "cpu" if in_pagesets => int()
            .and_then(|c| u32::try_from(c).ok())
            .map(|cpu| zone.pagesets.push(Pageset { cpu, ..Pageset::default() }))
            .is_some(),
        "count" | "high" | "batch" | "high_min" | "high_max" | "vm stats threshold"
            if in_pagesets =>
        {
            let (Some(v), Some(p)) = (int(), zone.pagesets.last_mut()) else { return false };
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
    }
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
        assert_eq!(seen, 9, "the nine realdata zoneinfo files");
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
}

//! The seeds' published results as data: every table (and the numbers stated in text) of the
//! five seed mails, transcribed into `data/published.toml` and compiled into the binary, so that
//! `reproduce` can print the published value next to ours.
//!
//! # The data file
//!
//! One `[[table]]` per table or *panel*; a panel is the same table printed again for another
//! machine, configuration or patch version. The first panel of a table has the bare id
//! ([`TABLE_IDS`]), further panels `<id>@<suffix>`:
//!
//! - seed 000, columns hpc-vanilla, hpc-revert, hpc-opt-v1: `000-trunc` (skylake-1s),
//!   `000-trunc@cascadelake` (cascadelake-2s);
//! - seed 004, columns hpc-vanilla, hpc-revert, hpc-opt: `000-trunc@v2` (skylake-1s),
//!   `000-trunc@v2-cascadelake` (cascadelake-2s);
//! - cascadelake-2s, columns hpc-vanilla then hpc-opt-v1 (seed 000) or hpc-opt (seed 004):
//!   `000-page-fault1`, `000-page-fault1@v2`;
//! - seed 000, columns hpc-vanilla, hpc-revert, hpc-limit-v1: `000-netperf-tcp` (skylake-1s),
//!   `000-netperf-tcp@trace-machine` and `000-top-pfns` (unknown-trace);
//! - seed 001, columns tune-base, tune-p1, -p3, -p5, -p7, -p9, -p10: `001-kbuild`
//!   (spr-2s-224), `001-netperf-sctp` and `001-lmbench-unix` (icl-2s-128);
//! - seed 002, columns frag-vanilla, frag-lowzone: `002-thpfioscale`, `002-thpfioscale@madv`
//!   (skylake-1s), `002-thpfioscale@haswell`, `002-thpfioscale@haswell-madv` (haswell-2s-48);
//! - seed 003, columns pfrag-buddy, pfrag-pcp: `003-page-frag` (cortex-a53),
//!   `003-page-frag@micro` (unknown-micro).
//!
//! Table keys: `id`, `seed` (the mail: its seed number, then author, subject and date; the
//! seeds are listed in `docs/kernel-reference.md §0.1`), `workload` (lab workload name), `machine` (lab machine name), `title`, `baseline` (= `presets[0]`),
//! `presets` (one built-in preset per column, in printed order), `labels` (column labels as
//! printed), `kernels` (optional, mmtests' first header line), `significance` (`ttest` or
//! `none`), `normalised` (values relative to base = 100), `note` (optional).
//!
//! Each `[[table.metric]]` is one printed row: `name`, `param` (the parameter of a multi-value
//! table: message size `"64"`, `"processes-2"`, THP threads `"1"`; else `""`), `stat` (which
//! row: see [`STATS`]), `better` (`lower`/`higher`), `unit`, `kind` (`table` by default,
//! `text` for exact numbers from running text, `prose` for results stated in words and turned
//! into base = 100 numbers), optional `normalised` (overrides the table's flag), `values` (one
//! per column, `nan` where the mail prints nothing), optional `pct` (the printed
//! "positive = better" percentages) with `pct_decimals` (default 2), optional `marked` (the
//! `*  x.xx%*` significance marker, default all false), optional `stddev` (a mean row's Stddev
//! row again), optional `flag` (a marker printed after the row) and, for `000-top-pfns` only,
//! `pfn`. The file's header comment repeats this schema, and a comment before every metric
//! says where in the mail it stands (the row as printed, the column, or the sentence).
//!
//! Loading checks the shape ([`parse`]); the tests also spot-check values against the mails and
//! recompute every printed percentage from the values.

use std::collections::HashSet;
use std::sync::OnceLock;

use anyhow::{bail, Context as _, Result};
use serde::Deserialize;

/// The data file, compiled in.
const PUBLISHED_TOML: &str = include_str!("../data/published.toml");

/// The table ids; a panel id is one of these, or one of these + `@suffix`.
pub const TABLE_IDS: &[&str] = &[
    "000-trunc",
    "000-page-fault1",
    "000-netperf-tcp",
    "000-top-pfns",
    "001-kbuild",
    "001-netperf-sctp",
    "001-lmbench-unix",
    "002-thpfioscale",
    "003-page-frag",
];

/// The `stat` values: mmtests row names in lower case, `percentage` (thpfioscale's
/// `Percentage huge-N`) and `value` (a single published number).
pub const STATS: &[&str] = &[
    "amean",
    "hmean",
    "percentage",
    "value",
    "min",
    "max",
    "stddev",
    "coeffvar",
    "bamean-50",
    "bamean-95",
    "bamean-99",
];

/// The `stat` values of a metric's main row (the mean or the single number); the other
/// [`STATS`] are spread rows of the same name and param.
pub const MAIN_STATS: &[&str] = &["amean", "hmean", "percentage", "value"];

/// Which direction of a metric is an improvement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Smaller is better (times, latencies, event counts, spreads).
    Lower,
    /// Larger is better (throughput).
    Higher,
}

impl Better {
    /// mmtests' "positive = better" percentage of `new` against `base`: `100 − new·100/base`
    /// when lower is better, `new·100/base − 100` when higher is better. A zero baseline gives
    /// 0 against a zero `new` (as the seeds print it) and NaN otherwise.
    pub fn pct(self, base: f64, new: f64) -> f64 {
        if base == 0.0 {
            return if new == 0.0 { 0.0 } else { f64::NAN };
        }
        match self {
            Better::Lower => 100.0 - new * 100.0 / base,
            Better::Higher => new * 100.0 / base - 100.0,
        }
    }
}

/// How the mail gives a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A cell of a printed table.
    #[default]
    Table,
    /// An exact number from running text or a list.
    Text,
    /// A result stated in words ("~11% performance boost"), as base = 100 numbers: approximate.
    Prose,
}

/// Whether and how the table marks significant differences.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Significance {
    /// mmtests' rule of the seeds' era: two-sample t-test, p < 0.10.
    Ttest,
    /// Nothing is marked (no significance test published).
    None,
}

/// Every published table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Published {
    /// The tables and panels, in file order.
    #[serde(rename = "table")]
    pub tables: Vec<PublishedTable>,
}

/// One published table or panel.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishedTable {
    /// `000-trunc`, `000-trunc@cascadelake`, … (see [`TABLE_IDS`]).
    pub id: String,
    /// The seed mail: its number, then author, subject and date (`000: Mel Gorman, "[PATCH
    /// 0/5] Follow-up on high-order PCP caching", 2022-02-15`).
    pub seed: String,
    /// The lab workload name (`trunc`, `netperf-tcp`, …).
    pub workload: String,
    /// The lab machine name (`skylake-1s`, …).
    pub machine: String,
    /// One line for a report heading.
    pub title: String,
    /// The baseline preset (= `presets[0]`).
    pub baseline: String,
    /// The built-in preset of each column, in printed order.
    pub presets: Vec<String>,
    /// The column labels as printed.
    pub labels: Vec<String>,
    /// mmtests' first header line (kernel version) per column; empty if not printed.
    #[serde(default)]
    pub kernels: Vec<String>,
    /// How significance is marked.
    pub significance: Significance,
    /// True if the values are relative to the baseline column = 100 (metrics may override).
    pub normalised: bool,
    /// Anything a reader must know; empty if nothing.
    #[serde(default)]
    pub note: String,
    /// Workload parameters the panel implies (`NAME=VALUE`, as `run --param` takes them),
    /// e.g. the MADV_HUGEPAGE configuration of a thpfioscale panel.
    #[serde(default)]
    pub params: Vec<String>,
    /// The rows, in printed order.
    #[serde(rename = "metric")]
    pub metrics: Vec<PublishedMetric>,
}

/// One published row: a metric's values across the columns.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishedMetric {
    /// Metric name (`elapsed`, `throughput`, `page_fault1`, `build_time`, …).
    pub name: String,
    /// The parameter of a multi-value table (`"64"`, `"processes-2"`, `"1"`), or `""`.
    #[serde(default)]
    pub param: String,
    /// Which row (one of [`STATS`]).
    pub stat: String,
    /// Which direction is an improvement (the direction mmtests used for `pct`).
    pub better: Better,
    /// Unit of the measured quantity (before normalisation); `""` if the mail does not say.
    pub unit: String,
    /// Table cell, text or prose.
    #[serde(default)]
    pub kind: Kind,
    /// The file's per-metric override of the table's `normalised`.
    #[serde(rename = "normalised", default)]
    normalised_override: Option<bool>,
    /// True if the values are relative to the baseline column = 100 (resolved on load).
    #[serde(skip)]
    pub normalised: bool,
    /// One value per column; NaN where the mail prints nothing.
    pub values: Vec<f64>,
    /// The printed "positive = better" percentage per column, where printed.
    #[serde(default)]
    pub pct: Option<Vec<f64>>,
    /// Decimals of the printed percentage.
    #[serde(default = "two")]
    #[cfg_attr(not(test), expect(dead_code, reason = "the transcription tests read it"))]
    pub pct_decimals: u8,
    /// The significance marker per column (all false where none is printed; filled on load).
    #[serde(default)]
    pub marked: Vec<bool>,
    /// On a mean row: the table's Stddev row per column, where printed.
    #[serde(default)]
    pub stddev: Option<Vec<f64>>,
    /// A marker printed after the row (`<---`), or `""`.
    #[serde(default)]
    #[cfg_attr(not(test), expect(dead_code, reason = "kept as printed; the tests read it"))]
    pub flag: String,
    /// `000-top-pfns` only: the page frame printed with each count (`""` if none).
    #[serde(default)]
    pub pfn: Vec<String>,
}

/// Serde default of `pct_decimals`.
fn two() -> u8 {
    2
}

/// The published tables, parsed once from the compiled-in `data/published.toml`.
///
/// # Panics
/// If the compiled-in file does not parse or fails [`parse`]'s checks (the tests catch that).
pub fn published() -> &'static Published {
    static PUBLISHED: OnceLock<Published> = OnceLock::new();
    PUBLISHED.get_or_init(|| {
        parse(PUBLISHED_TOML).unwrap_or_else(|e| panic!("data/published.toml: {e:#}"))
    })
}

/// Parses a published-results file, fills the defaults (`marked`, per-metric `normalised`) and
/// checks its shape: ids fixed or `fixed@suffix` and unique, `baseline == presets[0]`, every
/// preset built in, one label per column, every per-column list as long as `presets`, known
/// stats, no metric (name, param, stat) twice in a table.
pub fn parse(text: &str) -> Result<Published> {
    let mut p: Published = toml::from_str(text).context("malformed published-results TOML")?;
    for t in &mut p.tables {
        let n = t.presets.len();
        for m in &mut t.metrics {
            m.normalised = m.normalised_override.unwrap_or(t.normalised);
            if m.marked.is_empty() {
                m.marked = vec![false; n];
            }
        }
    }
    p.check()?;
    Ok(p)
}

impl Published {
    /// The table or panel with exactly this id.
    #[cfg_attr(not(test), expect(dead_code, reason = "the tests look tables up by id"))]
    pub fn table(&self, id: &str) -> Option<&PublishedTable> {
        self.tables.iter().find(|t| t.id == id)
    }

    /// Every panel of a table: `select("000-trunc")` gives `000-trunc` and each
    /// `000-trunc@…`, in file order. An id with a suffix selects that panel only.
    pub fn select(&self, prefix: &str) -> Vec<&PublishedTable> {
        self.tables
            .iter()
            .filter(|t| {
                t.id == prefix
                    || t.id.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('@'))
            })
            .collect()
    }

    /// The shape checks of [`parse`].
    fn check(&self) -> Result<()> {
        let mut problems = Vec::new();
        let mut ids = HashSet::new();
        for t in &self.tables {
            if !ids.insert(t.id.as_str()) {
                problems.push(format!("{}: id used twice", t.id));
            }
            problems.extend(t.problems().into_iter().map(|p| format!("{}: {p}", t.id)));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            bail!("{}", problems.join("; "))
        }
    }
}

impl PublishedTable {
    /// The row with this name, param and stat.
    #[cfg_attr(not(test), expect(dead_code, reason = "the transcription tests use it"))]
    pub fn metric(&self, name: &str, param: &str, stat: &str) -> Option<&PublishedMetric> {
        self.metrics.iter().find(|m| m.name == name && m.param == param && m.stat == stat)
    }

    /// The main rows (mean or single value, see [`MAIN_STATS`]), in printed order.
    pub fn main_metrics(&self) -> impl Iterator<Item = &PublishedMetric> {
        self.metrics.iter().filter(|m| m.is_main())
    }

    /// The table id without the panel suffix (`000-trunc` for `000-trunc@v2`).
    pub fn base_id(&self) -> &str {
        self.id.split_once('@').map_or(self.id.as_str(), |(base, _)| base)
    }

    /// The panel suffix (`v2` for `000-trunc@v2`), `""` for the first panel.
    pub fn panel(&self) -> &str {
        self.id.split_once('@').map_or("", |(_, suffix)| suffix)
    }

    /// The seed number of the mail the numbers come from (`"004"` for `000-trunc@v2`).
    #[cfg_attr(not(test), expect(dead_code, reason = "the transcription tests use it"))]
    pub fn seed_number(&self) -> &str {
        self.seed.get(..3).unwrap_or(&self.seed)
    }

    /// What is wrong with this table's shape (empty if nothing).
    fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let n = self.presets.len();
        if !TABLE_IDS.contains(&self.base_id())
            || (self.id.contains('@') && self.panel().is_empty())
        {
            out.push("id is not a table id or table id@suffix".to_owned());
        }
        if self.presets.first() != Some(&self.baseline) {
            out.push(format!("baseline `{}` is not presets[0]", self.baseline));
        }
        for p in &self.presets {
            if pagealloc::Policy::preset(p).is_none() {
                out.push(format!("`{p}` is not a built-in preset"));
            }
        }
        if self.labels.len() != n {
            out.push(format!("{} labels for {n} columns", self.labels.len()));
        }
        if !self.kernels.is_empty() && self.kernels.len() != n {
            out.push(format!("{} kernels for {n} columns", self.kernels.len()));
        }
        if self.metrics.is_empty() {
            out.push("no metrics".to_owned());
        }
        let mut keys = HashSet::new();
        for m in &self.metrics {
            let key = format!("{} {} {}", m.stat, m.name, m.param);
            if !keys.insert(key.clone()) {
                out.push(format!("`{key}` twice"));
            }
            if !STATS.contains(&m.stat.as_str()) {
                out.push(format!("`{key}`: unknown stat"));
            }
            let lens = [
                ("values", m.values.len()),
                ("marked", m.marked.len()),
                ("pct", m.pct.as_ref().map_or(n, Vec::len)),
                ("stddev", m.stddev.as_ref().map_or(n, Vec::len)),
                ("pfn", if m.pfn.is_empty() { n } else { m.pfn.len() }),
            ];
            for (what, len) in lens {
                if len != n {
                    out.push(format!("`{key}`: {len} {what} for {n} columns"));
                }
            }
        }
        out
    }
}

impl PublishedMetric {
    /// True for a main row (mean or single value), false for a spread row.
    pub fn is_main(&self) -> bool {
        MAIN_STATS.contains(&self.stat.as_str())
    }

    /// The percentage of column `i` against the baseline column, computed from the values
    /// (mmtests' rule, [`Better::pct`]).
    #[cfg_attr(not(test), expect(dead_code, reason = "the transcription tests use it"))]
    pub fn computed_pct(&self, i: usize) -> f64 {
        self.better.pct(self.values[0], self.values[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pagealloc::policy::Preset;

    /// Every id and panel in the file, in file order.
    const ALL_IDS: &[&str] = &[
        "000-trunc",
        "000-trunc@cascadelake",
        "000-trunc@v2",
        "000-trunc@v2-cascadelake",
        "000-page-fault1",
        "000-page-fault1@v2",
        "000-netperf-tcp",
        "000-netperf-tcp@trace-machine",
        "000-top-pfns",
        "001-kbuild",
        "001-netperf-sctp",
        "001-lmbench-unix",
        "002-thpfioscale",
        "002-thpfioscale@madv",
        "002-thpfioscale@haswell",
        "002-thpfioscale@haswell-madv",
        "003-page-frag",
        "003-page-frag@micro",
    ];

    const WORKLOADS: &[&str] = &[
        "kbuild",
        "netperf-sctp-stream-many",
        "lmbench-unix",
        "netperf-tcp",
        "page-fault1",
        "trunc",
        "thpfioscale",
        "page-frag-rx",
    ];

    const MACHINES: &[&str] = &[
        "skylake-1s",
        "cascadelake-2s",
        "spr-2s-224",
        "icl-2s-128",
        "haswell-2s-48",
        "cortex-a53",
        "unknown-trace",
        "unknown-micro",
    ];

    fn table(id: &str) -> &'static PublishedTable {
        published().table(id).unwrap_or_else(|| panic!("no table {id}"))
    }

    /// The main row's values of `name`/`param` in table `id`.
    fn main(id: &str, name: &str, param: &str) -> &'static [f64] {
        let t = table(id);
        let m = t
            .main_metrics()
            .find(|m| m.name == name && m.param == param)
            .unwrap_or_else(|| panic!("{id}: no main row {name} {param}"));
        &m.values
    }

    fn row(id: &str, name: &str, param: &str, stat: &str) -> &'static PublishedMetric {
        table(id)
            .metric(name, param, stat)
            .unwrap_or_else(|| panic!("{id}: no row {stat} {name} {param}"))
    }

    #[test]
    fn loads_every_table_in_order() {
        let ids: Vec<&str> = published().tables.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ALL_IDS);
    }

    #[test]
    fn every_table_is_well_formed() {
        for t in &published().tables {
            let n = t.presets.len();
            assert!(n >= 2, "{}", t.id);
            assert_eq!(t.baseline, t.presets[0], "{}", t.id);
            assert!(TABLE_IDS.contains(&t.base_id()), "{}", t.id);
            assert_eq!(t.id.contains('@'), !t.panel().is_empty(), "{}", t.id);
            assert!(t.id.starts_with(&t.seed[..3]) || t.seed_number() == "004", "{}", t.id);
            // "NNN: author, \"subject\", YYYY-MM-DD …": a public identity, not a file name.
            let (number, mail) = t.seed.split_once(": ").unwrap_or_default();
            assert!(number.len() == 3 && number.bytes().all(|b| b.is_ascii_digit()), "{}", t.id);
            assert!(mail.contains(", \"") && mail.contains(", 20"), "{}: {mail}", t.id);
            assert!(WORKLOADS.contains(&t.workload.as_str()), "{}: {}", t.id, t.workload);
            assert!(MACHINES.contains(&t.machine.as_str()), "{}: {}", t.id, t.machine);
            assert!(!t.title.is_empty() && !t.note.is_empty(), "{}", t.id);
            assert!(t.kernels.is_empty() || t.kernels.len() == n, "{}", t.id);
            assert_eq!(t.labels.len(), n, "{}", t.id);
            for p in &t.presets {
                assert!(pagealloc::Policy::preset(p).is_some(), "{}: {p}", t.id);
            }
            assert!(t.main_metrics().count() > 0, "{}", t.id);
            for m in &t.metrics {
                let what = format!("{} {} {} {}", t.id, m.stat, m.name, m.param);
                assert_eq!(m.values.len(), n, "{what}");
                assert_eq!(m.marked.len(), n, "{what}");
                assert!(m.pct.as_ref().is_none_or(|p| p.len() == n), "{what}");
                assert!(m.stddev.as_ref().is_none_or(|s| s.len() == n), "{what}");
                assert!(m.pfn.is_empty() || m.pfn.len() == n, "{what}");
                assert!(STATS.contains(&m.stat.as_str()), "{what}");
                assert!(!m.name.is_empty(), "{what}");
                // Only a mean row can carry the marker, and only in a t-tested table.
                if m.marked.iter().any(|&b| b) {
                    assert!(["amean", "hmean"].contains(&m.stat.as_str()), "{what}");
                    assert_eq!(t.significance, Significance::Ttest, "{what}");
                    assert!(!m.marked[0], "{what}: the baseline is never marked");
                }
                // Values are printed everywhere except the one short list of 000-top-pfns.
                let missing = m.values.iter().filter(|v| v.is_nan()).count();
                assert_eq!(missing, usize::from(what == "000-top-pfns value allocs 5"), "{what}");
                // A normalised metric has the baseline at 100.
                if m.normalised {
                    assert_eq!(m.values[0], 100.0, "{what}");
                }
                // Prose numbers are normalised by construction.
                if m.kind == Kind::Prose {
                    assert!(m.normalised && t.normalised, "{what}");
                }
            }
        }
    }

    /// Each column label is one the preset's own seed rows name (`policy/presets.rs`, `PRESETS`), for the
    /// presets that list rows (`pfrag-*` list none: seed 003 prints no labels).
    #[test]
    fn labels_are_the_presets_seed_rows() {
        for t in &published().tables {
            for (preset, label) in t.presets.iter().zip(&t.labels) {
                let p = Preset::get(preset).unwrap();
                if p.rows.is_empty() {
                    assert_eq!(t.seed_number(), "003", "{}: {preset}", t.id);
                    continue;
                }
                assert!(
                    p.rows.iter().any(|r| r.seed == t.seed_number() && r.label == label),
                    "{}: `{label}` is not a seed {} row of {preset}",
                    t.id,
                    t.seed_number()
                );
            }
        }
    }

    /// Half a unit of the last printed digit of a value: mmtests prints `%.2f`, text numbers
    /// are whole, prose numbers are exact by construction.
    fn half_ulp(kind: Kind) -> f64 {
        match kind {
            Kind::Table => 0.005,
            Kind::Text => 0.5,
            Kind::Prose => 0.0,
        }
    }

    /// Every printed percentage is what mmtests' rule gives from the printed values: the
    /// printed pct must lie in the range the rule spans over the values' rounding intervals,
    /// widened by the pct's own rounding.
    #[test]
    fn printed_percentages_match_the_values() {
        let mut checked = 0;
        for t in &published().tables {
            for m in &t.metrics {
                let Some(pct) = &m.pct else { continue };
                let what = format!("{} {} {} {}", t.id, m.stat, m.name, m.param);
                assert_eq!(pct[0], 0.0, "{what}");
                let h = half_ulp(m.kind);
                let half_pct = 0.5 * 10f64.powi(-i32::from(m.pct_decimals)) + 1e-9;
                let base = m.values[0];
                for (i, (&new, &printed)) in m.values.iter().zip(pct).enumerate().skip(1) {
                    checked += 1;
                    if base == 0.0 {
                        assert_eq!((new, printed), (0.0, 0.0), "{what} column {i}");
                        continue;
                    }
                    let corners = [
                        m.better.pct(base - h, new - h),
                        m.better.pct(base - h, new + h),
                        m.better.pct(base + h, new - h),
                        m.better.pct(base + h, new + h),
                    ];
                    let lo = corners.iter().copied().fold(f64::INFINITY, f64::min) - half_pct;
                    let hi = corners.iter().copied().fold(f64::NEG_INFINITY, f64::max) + half_pct;
                    assert!(
                        (lo..=hi).contains(&printed),
                        "{what} column {i}: printed {printed}%, values give {:.4}% \
                         (range {lo:.4}..{hi:.4})",
                        m.computed_pct(i)
                    );
                }
            }
        }
        // 4 trunc panels × 8 rows × 2, 2 × 16 page_fault1, netperf 18 × 2 + 9 × 2,
        // thpfioscale 4 × (1 + 3), page-frag 2.
        assert_eq!(checked, 64 + 32 + 54 + 16 + 2);
    }

    #[test]
    fn better_pct_is_mmtests_rule() {
        // Seed 000, trunc on 1-socket Skylake: Amean elapsed 543.00 → 530.00 is 2.39% better.
        assert!((Better::Lower.pct(543.0, 530.0) - 2.394).abs() < 1e-3);
        // Seed 000, netperf-tcp on Skylake: Hmean 64 938.95 → 941.50 is 0.27% better.
        assert!((Better::Higher.pct(938.95, 941.50) - 0.2716).abs() < 1e-3);
        assert_eq!(Better::Lower.pct(0.0, 0.0), 0.0);
        assert!(Better::Higher.pct(0.0, 1.0).is_nan());
        let m = row("000-trunc", "elapsed", "", "amean");
        assert!((m.computed_pct(2) - 2.394).abs() < 1e-3);
    }

    /// A mean row's `stddev` is the table's Stddev row, and CoeffVar = 100·stddev/mean.
    #[test]
    fn spread_rows_agree() {
        let mut n = 0;
        for t in &published().tables {
            for m in t.main_metrics() {
                let Some(sd) = &m.stddev else { continue };
                let sd_row = t.metric(&m.name, &m.param, "stddev").unwrap();
                assert_eq!(sd, &sd_row.values, "{}", t.id);
                let cv = t.metric(&m.name, &m.param, "coeffvar").unwrap();
                for ((&sd, &mean), &cv) in sd.iter().zip(&m.values).zip(&cv.values) {
                    let lo = 100.0 * (sd - 0.005).max(0.0) / (mean + 0.005);
                    let hi = 100.0 * (sd + 0.005) / (mean - 0.005);
                    assert!((lo - 0.005..=hi + 0.005).contains(&cv), "{}: {cv}", t.id);
                }
                n += 1;
            }
        }
        assert_eq!(n, 4);
    }

    #[test]
    fn select_and_lookup() {
        let p = published();
        let ids = |v: Vec<&PublishedTable>| v.iter().map(|t| t.id.clone()).collect::<Vec<_>>();
        assert_eq!(
            ids(p.select("000-trunc")),
            ["000-trunc", "000-trunc@cascadelake", "000-trunc@v2", "000-trunc@v2-cascadelake"]
        );
        assert_eq!(ids(p.select("000-trunc@v2")), ["000-trunc@v2"]);
        assert_eq!(ids(p.select("000-top-pfns")), ["000-top-pfns"]);
        assert_eq!(p.select("002-thpfioscale").len(), 4);
        assert!(p.select("000-tru").is_empty());
        assert!(p.table("000-trunc@nope").is_none());
        let t = table("000-trunc@v2-cascadelake");
        assert_eq!(
            (t.base_id(), t.panel(), t.seed_number()),
            ("000-trunc", "v2-cascadelake", "004")
        );
        assert_eq!(table("000-trunc").panel(), "");
        assert_eq!(table("000-trunc").metrics.len(), 8);
        let stats: Vec<&str> = table("000-trunc").main_metrics().map(|m| m.stat.as_str()).collect();
        assert_eq!(stats, ["amean"]);
        assert_eq!(table("000-netperf-tcp").main_metrics().count(), 9);
        assert!(table("000-trunc").metric("elapsed", "", "hmean").is_none());
    }

    #[test]
    fn parse_rejects_bad_shapes() {
        let good = r#"
[[table]]
id = "000-trunc@x"
seed = '000: Mel Gorman, "[PATCH 0/5] Follow-up on high-order PCP caching", 2022-02-15'
workload = "trunc"
machine = "skylake-1s"
title = "t"
baseline = "hpc-vanilla"
presets = ["hpc-vanilla", "hpc-revert"]
labels = ["vanilla", "mm-reverthighpcp-v1r1"]
significance = "ttest"
normalised = false
[[table.metric]]
name = "elapsed"
stat = "amean"
better = "lower"
unit = "ms"
values = [1.0, 2.0]
"#;
        let p = parse(good).unwrap();
        assert_eq!(p.tables[0].metrics[0].marked, [false, false]);
        assert!(!p.tables[0].metrics[0].normalised);
        assert_eq!(p.tables[0].metrics[0].kind, Kind::Table);
        assert_eq!(p.tables[0].metrics[0].pct_decimals, 2);
        for (from, to, why) in [
            ("\"000-trunc@x\"", "\"000-truncate\"", "not a table id"),
            ("\"000-trunc@x\"", "\"000-trunc@\"", "not a table id"),
            ("baseline = \"hpc-vanilla\"", "baseline = \"hpc-revert\"", "not presets[0]"),
            (
                "\"hpc-vanilla\", \"hpc-revert\"]",
                "\"hpc-vanilla\", \"hpc-nope\"]",
                "not a built-in",
            ),
            ("values = [1.0, 2.0]", "values = [1.0]", "1 values for 2 columns"),
            ("stat = \"amean\"", "stat = \"mean\"", "unknown stat"),
            ("labels = [\"vanilla\", ", "labels = [", "1 labels"),
        ] {
            let err = parse(&good.replace(from, to)).unwrap_err();
            assert!(format!("{err:#}").contains(why), "{why}: {err:#}");
        }
        let twice = format!("{good}{}", &good[good.find("[[table.metric]]").unwrap()..]);
        assert!(format!("{:#}", parse(&twice).unwrap_err()).contains("twice"));
        let dup = format!("{good}{good}");
        assert!(format!("{:#}", parse(&dup).unwrap_err()).contains("id used twice"));
        let unknown = good.replace("unit = \"ms\"", "unit = \"ms\"\ncolour = 1");
        assert!(parse(&unknown).is_err());
    }

    // ---- Spot checks: literals copied from the mails (the row as printed in each comment). ----

    /// Seed 000, v1 patch 4/5: trunc on both machines.
    #[test]
    #[expect(clippy::approx_constant, reason = "CoeffVar 3.14 as the mail prints it")]
    fn seed_000_trunc() {
        // Amean elapsed 543.00 ( 0.00%) 530.00 * 2.39%* 530.00 * 2.39%*
        let m = row("000-trunc", "elapsed", "", "amean");
        assert_eq!(m.values, [543.00, 530.00, 530.00]);
        assert_eq!(m.pct.as_deref(), Some(&[0.00, 2.39, 2.39][..]));
        assert_eq!(m.marked, [false, true, true]);
        assert_eq!(m.stddev.as_deref(), Some(&[4.83, 0.00, 0.00][..]));
        assert_eq!((m.better, m.unit.as_str()), (Better::Lower, "ms"));
        // BAmean-95 elapsed 542.22 ( 0.00%) 530.00 ( 2.25%) 530.00 ( 2.25%)
        assert_eq!(row("000-trunc", "elapsed", "", "bamean-95").values, [542.22, 530.00, 530.00]);
        // Min elapsed 510.00 ( 0.00%) 500.00 ( 1.96%) 500.00 ( 1.96%)
        assert_eq!(
            row("000-trunc@cascadelake", "elapsed", "", "min").values,
            [510.0, 500.0, 500.0]
        );
        // Amean elapsed 529.00 ( 0.00%) 521.00 ( 1.51%) 516.00 * 2.46%*
        let m = row("000-trunc@cascadelake", "elapsed", "", "amean");
        assert_eq!(m.values, [529.00, 521.00, 516.00]);
        assert_eq!(m.marked, [false, false, true]);
        // Stddev elapsed 16.63 ( 0.00%) 12.87 ( 22.64%) 9.66 ( 41.92%)
        let m = row("000-trunc@cascadelake", "elapsed", "", "stddev");
        assert_eq!((m.values[2], m.pct.as_ref().unwrap()[2]), (9.66, 41.92));
        assert_eq!(m.better, Better::Lower);
        // CoeffVar elapsed 3.14 ( 0.00%) 2.47 ( 21.46%) 1.87 ( 40.45%)
        assert_eq!(
            row("000-trunc@cascadelake", "elapsed", "", "coeffvar").values,
            [3.14, 2.47, 1.87]
        );
        // BAmean-99 elapsed 526.67 ( 0.00%) 518.89 ( 1.48%) 514.44 ( 2.32%)
        let m = row("000-trunc@cascadelake", "elapsed", "", "bamean-99");
        assert_eq!(m.pct.as_deref(), Some(&[0.00, 1.48, 2.32][..]));
        let t = table("000-trunc");
        assert_eq!(t.presets, ["hpc-vanilla", "hpc-revert", "hpc-opt-v1"]);
        assert_eq!(t.labels, ["vanilla", "mm-reverthighpcp-v1r1", "mm-highpcpopt-v1"]);
        assert_eq!(t.kernels, ["5.17.0-rc3"; 3]);
        assert_eq!((t.machine.as_str(), t.workload.as_str()), ("skylake-1s", "trunc"));
        // vanilla mm-reverthighpcp-v1 mm-highpcpopt-v1
        assert_eq!(table("000-trunc@cascadelake").labels[1], "mm-reverthighpcp-v1");
        assert_eq!(table("000-trunc@cascadelake").machine, "cascadelake-2s");
    }

    /// Seed 004, v2 patch 5/6: trunc on both machines.
    #[test]
    fn seed_004_trunc() {
        // vanilla mm-reverthighpcp-v1 mm-highpcpopt-v2
        let t = table("000-trunc@v2");
        assert_eq!(t.labels, ["vanilla", "mm-reverthighpcp-v1", "mm-highpcpopt-v2"]);
        assert_eq!(t.presets, ["hpc-vanilla", "hpc-revert", "hpc-opt"]);
        // Amean elapsed 543.00 ( 0.00%) 530.00 * 2.39%* 530.00 * 2.39%*
        assert_eq!(main("000-trunc@v2", "elapsed", ""), [543.00, 530.00, 530.00]);
        // Amean elapsed 529.00 ( 0.00%) 521.00 ( 1.51%) 510.00 * 3.59%*
        let m = row("000-trunc@v2-cascadelake", "elapsed", "", "amean");
        assert_eq!(m.values, [529.00, 521.00, 510.00]);
        assert_eq!(m.pct.as_deref(), Some(&[0.00, 1.51, 3.59][..]));
        assert_eq!(m.marked, [false, false, true]);
        // Stddev elapsed 16.63 ( 0.00%) 12.87 ( 22.64%) 11.55 ( 30.58%)
        assert_eq!(m.stddev.as_deref(), Some(&[16.63, 12.87, 11.55][..]));
        // CoeffVar elapsed 3.14 ( 0.00%) 2.47 ( 21.46%) 2.26 ( 27.99%)
        let cv = row("000-trunc@v2-cascadelake", "elapsed", "", "coeffvar");
        assert_eq!(cv.pct.as_deref(), Some(&[0.00, 21.46, 27.99][..]));
        // BAmean-50 elapsed 516.00 ( 0.00%) 512.00 ( 0.78%) 500.00 ( 3.10%)
        let b = row("000-trunc@v2-cascadelake", "elapsed", "", "bamean-50");
        assert_eq!(b.values, [516.00, 512.00, 500.00]);
        // BAmean-99 elapsed 526.67 ( 0.00%) 518.89 ( 1.48%) 507.78 ( 3.59%)
        let b = row("000-trunc@v2-cascadelake", "elapsed", "", "bamean-99");
        assert_eq!(b.values, [526.67, 518.89, 507.78]);
    }

    /// Seed 004 repeats seed 000's vanilla and revert runs: those columns agree row by row.
    #[test]
    fn seed_004_repeats_seed_000_columns() {
        for (v1, v2, cols) in [
            ("000-trunc", "000-trunc@v2", 2),
            ("000-trunc@cascadelake", "000-trunc@v2-cascadelake", 2),
            ("000-page-fault1", "000-page-fault1@v2", 1),
        ] {
            let (a, b) = (table(v1), table(v2));
            assert_eq!(a.metrics.len(), b.metrics.len());
            for (ma, mb) in a.metrics.iter().zip(&b.metrics) {
                assert_eq!((&ma.name, &ma.param, &ma.stat), (&mb.name, &mb.param, &mb.stat));
                assert_eq!(ma.values[..cols], mb.values[..cols], "{v2} {} {}", mb.stat, mb.param);
            }
        }
    }

    /// Seed 000 (v1 patch 4/5) and seed 004 (v2 patch 5/6): page_fault1.
    #[test]
    fn page_fault1() {
        let t = table("000-page-fault1");
        assert_eq!(t.presets, ["hpc-vanilla", "hpc-opt-v1"]);
        assert_eq!(t.labels, ["vanilla", "mm-highpcpopt-v1r4"]);
        let params: Vec<&str> = t.main_metrics().map(|m| m.param.as_str()).collect();
        let counts = [2, 5, 8, 12, 21, 30, 48, 79, 110, 141, 172, 203, 234, 265, 296, 320];
        let want: Vec<String> = counts.iter().map(|c| format!("processes-{c}")).collect();
        assert_eq!(params, want);
        // seed 000:
        // Hmean page_fault1-processes-2 2694662.26 ( 0.00%) 2696801.07 ( 0.08%)
        assert_eq!(main("000-page-fault1", "page_fault1", "processes-2"), [2694662.26, 2696801.07]);
        // seed 000:
        // Hmean page_fault1-processes-12 12167502.10 ( 0.00%) 12073323.10 * -0.77%*
        let m = row("000-page-fault1", "page_fault1", "processes-12", "hmean");
        assert_eq!(m.values, [12167502.10, 12073323.10]);
        assert_eq!((m.marked[1], m.pct.as_ref().unwrap()[1]), (true, -0.77));
        assert_eq!((m.better, m.unit.as_str()), (Better::Higher, "faults/s"));
        // seed 000:
        // Hmean page_fault1-processes-79 25928742.64 ( 0.00%) 25920933.41 ( -0.03%) <---
        let m = row("000-page-fault1", "page_fault1", "processes-79", "hmean");
        assert_eq!((m.values[1], m.flag.as_str(), m.marked[1]), (25920933.41, "<---", false));
        // seed 000:
        // Hmean page_fault1-processes-320 25555149.05 ( 0.00%) 25585059.83 ( 0.12%)
        assert_eq!(
            main("000-page-fault1", "page_fault1", "processes-320"),
            [25555149.05, 25585059.83]
        );
        // seed 004: vanilla mm-highpcpopt-v2
        assert_eq!(table("000-page-fault1@v2").presets, ["hpc-vanilla", "hpc-opt"]);
        // seed 004: Hmean page_fault1-processes-5 6425819.34 ( 0.00%) 6435544.57 * 0.15%*
        let m = row("000-page-fault1@v2", "page_fault1", "processes-5", "hmean");
        assert_eq!((m.values[1], m.marked[1]), (6435544.57, true));
        // seed 004: ... processes-79 25928742.64 ( 0.00%) 25934202.02 ( 0.02%) <--
        let m = row("000-page-fault1@v2", "page_fault1", "processes-79", "hmean");
        assert_eq!((m.values[1], m.flag.as_str()), (25934202.02, "<--"));
        // seed 004: ... processes-110 25730869.75 ( 0.00%) 25671880.65 * -0.23%*
        let m = row("000-page-fault1@v2", "page_fault1", "processes-110", "hmean");
        assert_eq!(m.pct.as_ref().unwrap()[1], -0.23);
        // Rows without a flag have none.
        assert_eq!(
            table("000-page-fault1").metrics.iter().filter(|m| !m.flag.is_empty()).count(),
            1
        );
    }

    /// Seed 000, v1 patch 5/5: netperf-tcp on two machines.
    #[test]
    fn netperf_tcp() {
        let t = table("000-netperf-tcp");
        assert_eq!((t.machine.as_str(), t.metrics.len()), ("skylake-1s", 18));
        assert_eq!(t.labels, ["vanilla", "mm-reverthighpcp-v1", "mm-highpcplimit-v1"]);
        assert_eq!(t.presets, ["hpc-vanilla", "hpc-revert", "hpc-limit-v1"]);
        // Min 64 935.38 ( 0.00%) 939.40 ( 0.43%) 940.11 ( 0.51%)
        let m = row("000-netperf-tcp", "throughput", "64", "min");
        assert_eq!(m.values, [935.38, 939.40, 940.11]);
        assert_eq!((m.better, m.unit.as_str()), (Better::Higher, "Mbit/s"));
        // Min 16384 58017.25 ( 0.00%) 60352.93 ( 4.03%) 60691.14 ( 4.61%)
        assert_eq!(row("000-netperf-tcp", "throughput", "16384", "min").values[2], 60691.14);
        // Hmean 64 938.95 ( 0.00%) 941.50 * 0.27%* 940.47 ( 0.16%)
        let m = row("000-netperf-tcp", "throughput", "64", "hmean");
        assert_eq!(m.values, [938.95, 941.50, 940.47]);
        assert_eq!(m.marked, [false, true, false]);
        // Hmean 3312 31001.99 ( 0.00%) 32206.50 * 3.89%* 31849.40 * 2.73%*
        assert_eq!(main("000-netperf-tcp", "throughput", "3312"), [31001.99, 32206.50, 31849.40]);
        // Hmean 16384 58410.86 ( 0.00%) 60839.80 * 4.16%* 61362.12 * 5.05%*
        let m = row("000-netperf-tcp", "throughput", "16384", "hmean");
        assert_eq!(m.pct.as_deref(), Some(&[0.00, 4.16, 5.05][..]));
        let t = table("000-netperf-tcp@trace-machine");
        assert_eq!((t.machine.as_str(), t.metrics.len()), ("unknown-trace", 9));
        // vanilla mm-reverthighpcp-v1r1 mm-highpcplimit-v1r12
        assert_eq!(t.labels, ["vanilla", "mm-reverthighpcp-v1r1", "mm-highpcplimit-v1r12"]);
        // Hmean 64 839.93 ( 0.00%) 840.77 ( 0.10%) 835.34 * -0.55%*
        let m = row("000-netperf-tcp@trace-machine", "throughput", "64", "hmean");
        assert_eq!(
            (m.values.as_slice(), m.marked.as_slice()),
            (&[839.93, 840.77, 835.34][..], &[false, false, true][..])
        );
        // Hmean 16384 39759.59 ( 0.00%) 36805.78 * -7.43%* 39291.42 ( -1.18%)
        let m = row("000-netperf-tcp@trace-machine", "throughput", "16384", "hmean");
        assert_eq!(m.values, [39759.59, 36805.78, 39291.42]);
        assert_eq!(m.pct.as_deref(), Some(&[0.00, -7.43, -1.18][..]));
        let sizes: Vec<&str> = t.main_metrics().map(|m| m.param.as_str()).collect();
        assert_eq!(sizes, ["64", "128", "256", "1024", "2048", "3312", "4096", "8192", "16384"]);
    }

    /// Seed 000, v1 patch 5/5: the five most used page frames.
    #[test]
    fn top_pfns() {
        let t = table("000-top-pfns");
        assert_eq!(t.labels, ["5.17-rc3", "5.17-revert-highpcp", "5.17-full-series"]);
        assert_eq!(t.presets, ["hpc-vanilla", "hpc-revert", "hpc-limit-v1"]);
        assert_eq!(t.significance, Significance::None);
        assert_eq!(t.metrics.len(), 5);
        // entry 1 of each list: 13041 pfn=0x111a30 / 192009 pfn=0x54c140 / 142693 pfn=0x346208
        let m = row("000-top-pfns", "allocs", "1", "value");
        assert_eq!(m.values, [13041.0, 192009.0, 142693.0]);
        assert_eq!(m.pfn, ["0x111a30", "0x54c140", "0x346208"]);
        assert_eq!(m.kind, Kind::Text);
        // entry 4 of each list: 13121 pfn=0x689598 / 243515 pfn=0xa9dc20 / 166950 pfn=0x2702f8
        let m = row("000-top-pfns", "allocs", "4", "value");
        assert_eq!(m.values, [13121.0, 243515.0, 166950.0]);
        assert_eq!(m.pfn, ["0x689598", "0xa9dc20", "0x2702f8"]);
        // entry 5: 13128 pfn=0x5814d8 / 402523 pfn=0x222bb8; the third list stops at 4.
        let m = row("000-top-pfns", "allocs", "5", "value");
        assert_eq!(m.values[..2], [13128.0, 402523.0]);
        assert!(m.values[2].is_nan());
        assert_eq!(m.pfn, ["0x5814d8", "0x222bb8", ""]);
        // Each list is printed in ascending count order.
        for col in 0..3 {
            let v: Vec<f64> =
                t.metrics.iter().map(|m| m.values[col]).filter(|v| !v.is_nan()).collect();
            assert!(v.windows(2).all(|w| w[0] < w[1]), "column {col}");
        }
    }

    /// Seed 001 (the v1 cover letter): the three normalised tables.
    #[test]
    fn seed_001() {
        let t = table("001-kbuild");
        assert_eq!(t.labels, ["base", "patch1", "patch3", "patch5", "patch7", "patch9", "patch10"]);
        assert_eq!(
            t.presets,
            ["tune-base", "tune-p1", "tune-p3", "tune-p5", "tune-p7", "tune-p9", "tune-p10"]
        );
        assert!(t.normalised && t.note.contains("50.6%"));
        assert_eq!((t.machine.as_str(), t.significance), ("spr-2s-224", Significance::None));
        // kbuild: "patch7 86.4 9.8 6.2 22.0", "patch10 87.7 12.6 29.0 32.3"
        assert_eq!(
            main("001-kbuild", "build_time", ""),
            [100.0, 96.6, 96.4, 96.1, 86.4, 85.9, 87.7]
        );
        assert_eq!(
            main("001-kbuild", "zone_lock_pct", ""),
            [43.6, 40.3, 40.5, 37.9, 9.8, 9.4, 12.6]
        );
        assert_eq!(main("001-kbuild", "free_high", ""), [100.0, 49.2, 11.3, 13.3, 6.2, 4.8, 29.0]);
        assert_eq!(
            main("001-kbuild", "alloc_zone", ""),
            [100.0, 95.2, 95.1, 96.8, 22.0, 16.3, 32.3]
        );
        assert!(!row("001-kbuild", "zone_lock_pct", "", "value").normalised);
        assert!(row("001-kbuild", "free_high", "", "value").normalised);
        // SCTP: "patch3 105.5 1.2 13.2 105.4 1.2", "patch9 103.7 1.8 6.6 89.8 7.7"
        let sctp = "001-netperf-sctp";
        assert_eq!(table(sctp).workload, "netperf-sctp-stream-many");
        assert_eq!(main(sctp, "score", ""), [100.0, 99.7, 105.5, 106.9, 103.5, 103.7, 106.9]);
        assert_eq!(main(sctp, "zone_lock_pct", ""), [2.0, 2.0, 1.2, 1.2, 1.8, 1.8, 1.2]);
        assert_eq!(main(sctp, "free_high", ""), [100.0, 99.7, 13.2, 13.4, 6.8, 6.6, 13.5]);
        assert_eq!(main(sctp, "alloc_zone", ""), [100.0, 99.7, 105.4, 106.9, 90.8, 89.8, 106.9]);
        assert_eq!(main(sctp, "cache_miss_pct", ""), [1.3, 1.3, 1.2, 1.3, 7.6, 7.7, 1.2]);
        assert_eq!(row(sctp, "score", "", "value").better, Better::Higher);
        // lmbench: "patch1 117.1 45.8 72.6 108.9 0.2", "patch10 196.8 21.0 7.4 111.2 2.1"
        let lmb = "001-lmbench-unix";
        assert_eq!(table(lmb).machine, "icl-2s-128");
        assert_eq!(main(lmb, "score", ""), [100.0, 117.1, 201.6, 201.9, 194.2, 193.1, 196.8]);
        assert_eq!(main(lmb, "zone_lock_pct", ""), [50.0, 45.8, 21.2, 20.9, 19.3, 19.2, 21.0]);
        assert_eq!(main(lmb, "free_high", ""), [100.0, 72.6, 7.4, 7.5, 7.3, 7.2, 7.4]);
        assert_eq!(main(lmb, "alloc_zone", ""), [100.0, 108.9, 111.5, 112.7, 111.5, 110.4, 111.2]);
        assert_eq!(main(lmb, "cache_miss_pct", ""), [0.3, 0.2, 0.2, 0.3, 2.9, 2.9, 2.1]);
        assert!(!row(lmb, "cache_miss_pct", "", "value").normalised);
    }

    /// Seed 002: thpfioscale, four panels.
    #[test]
    fn seed_002() {
        let t = table("002-thpfioscale");
        assert_eq!(t.labels, ["vanilla", "lowzone-v5r8"]);
        assert_eq!(t.kernels, ["4.20.0-rc3"; 2]);
        assert_eq!(t.presets, ["frag-vanilla", "frag-lowzone"]);
        // 804694; 408912 (49% reduction)
        let m = row("002-thpfioscale", "extfrag_lt9", "", "value");
        assert_eq!(m.values, [804694.0, 408912.0]);
        assert_eq!((m.pct.as_deref(), m.pct_decimals), (Some(&[0.0, 49.0][..]), 0));
        assert_eq!(m.kind, Kind::Text);
        // the per-migratetype breakdown, which adds up to the totals.
        let unmov = main("002-thpfioscale", "extfrag_lt9_unmovable", "");
        let mov = main("002-thpfioscale", "extfrag_lt9_movable", "");
        let recl = main("002-thpfioscale", "extfrag_lt9_reclaimable", "");
        assert_eq!(
            (unmov, mov, recl),
            (&[3816.0, 735.0][..], &[800845.0, 408135.0][..], &[33.0, 42.0][..])
        );
        for i in 0..2 {
            assert_eq!(unmov[i] + mov[i] + recl[i], m.values[i]);
        }
        // Amean fault-base-1 662.92 ( 0.00%) 653.58 * 1.41%*
        let m = row("002-thpfioscale", "fault-base", "1", "amean");
        assert_eq!(
            (m.values.as_slice(), m.marked.as_slice()),
            (&[662.92, 653.58][..], &[false, true][..])
        );
        // Percentage huge-1 0.00 ( 0.00%) 0.00 ( 0.00%)
        assert_eq!(row("002-thpfioscale", "huge", "1", "percentage").values, [0.0, 0.0]);
        // 291392; 191187 (34% reduction)
        assert_eq!(main("002-thpfioscale@madv", "extfrag_lt9", ""), [291392.0, 191187.0]);
        // Amean fault-huge-1 1098.48 ( 0.00%) 1127.11 ( -2.61%)
        let m = row("002-thpfioscale@madv", "fault-huge", "1", "amean");
        assert_eq!((m.values[1], m.pct.as_ref().unwrap()[1]), (1127.11, -2.61));
        // Percentage huge-1 78.57 ( 0.00%) 77.64 ( -1.18%)
        let m = row("002-thpfioscale@madv", "huge", "1", "percentage");
        assert_eq!((m.values.as_slice(), m.better), (&[78.57, 77.64][..], Better::Higher));
        // 215698; 200210 (7% reduction)
        assert_eq!(main("002-thpfioscale@haswell", "extfrag_lt9", ""), [215698.0, 200210.0]);
        // Amean fault-huge-5 4181.01 ( 0.00%) 3418.60 ( 18.24%)
        assert_eq!(main("002-thpfioscale@haswell", "fault-huge", "5"), [4181.01, 3418.60]);
        // Percentage huge-5 1.15 ( 0.00%) 0.78 ( -31.88%)
        assert_eq!(main("002-thpfioscale@haswell", "huge", "5"), [1.15, 0.78]);
        // 166352; 147463 (11% reduction)
        let m = row("002-thpfioscale@haswell-madv", "extfrag_lt9", "", "value");
        assert_eq!(
            (m.values.as_slice(), m.pct.as_ref().unwrap()[1]),
            (&[166352.0, 147463.0][..], 11.0)
        );
        // Amean fault-base-5 6138.97 ( 0.00%) 6217.43 ( -1.28%)
        assert_eq!(main("002-thpfioscale@haswell-madv", "fault-base", "5"), [6138.97, 6217.43]);
        // Amean fault-huge-5 2294.28 ( 0.00%) 3163.33 * -37.88%*
        let m = row("002-thpfioscale@haswell-madv", "fault-huge", "5", "amean");
        assert_eq!((m.values[1], m.marked[1], m.unit.as_str()), (3163.33, true, "us"));
        // Percentage huge-5 96.82 ( 0.00%) 95.14 ( -1.74%)
        assert_eq!(main("002-thpfioscale@haswell-madv", "huge", "5"), [96.82, 95.14]);
        for id in ["002-thpfioscale@haswell", "002-thpfioscale@haswell-madv"] {
            assert_eq!(table(id).machine, "haswell-2s-48");
        }
    }

    /// Seed 003: prose results.
    #[test]
    fn seed_003() {
        // "Ilias' test on a 'low' speed 1Gbit interface on an cortex-a53 shows ~11%"
        let t = table("003-page-frag");
        assert_eq!((t.machine.as_str(), t.workload.as_str()), ("cortex-a53", "page-frag-rx"));
        assert_eq!(t.presets, ["pfrag-buddy", "pfrag-pcp"]);
        let m = row("003-page-frag", "throughput", "", "value");
        assert_eq!((m.values.as_slice(), m.kind), (&[100.0, 111.0][..], Kind::Prose));
        // "Jesper has noticed a 7% performance improvement using a micro benchmark"
        let m = row("003-page-frag@micro", "throughput", "", "value");
        assert_eq!(m.values, [100.0, 107.0]);
        assert_eq!(m.pct.as_deref(), Some(&[0.0, 7.0][..]));
    }
}

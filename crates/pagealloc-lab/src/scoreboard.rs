//! How `pagealloc reproduce` scores the model against the published tables.
//!
//! Every cell scored is one non-baseline column of one published main row (a mean, a
//! percentage or a single number) with our value beside it. The rules, so that anyone can
//! recount the figures from `reproduce --json` (`docs/reproduction.md` states them again):
//!
//! 1. **The published side.** `published_pct` is the printed change from the baseline
//!    column in "positive = better" terms. Where the table marks significance (an mmtests
//!    table of the t-test era: `*  x.xx%*`), the cell is a *change* exactly when it is marked;
//!    where it does not (seed 001's normalised tables, numbers from running text, prose), a
//!    change is a printed change of at least [`FLAT_PCT`] percent, as the table states no
//!    noise to judge it by. Every other cell is *flat*.
//! 2. **Our side.** `ours_pct` is the same percentage of our means. Ours is a change when
//!    mmtests' t-test over our samples says so (two-tailed p < 0.10, the seeds' era; equal
//!    samples on both sides count as different exactly when the means differ) and, where the
//!    published side was judged by the threshold, when it also reaches [`FLAT_PCT`]. With one
//!    sample per side there is no t-test: ours is a change when it reaches [`FLAT_PCT`], and
//!    the scoreboard says how many cells were judged that way.
//! 3. **Change cells** (the published side is a change): ours *agrees* when it is a change in
//!    the same direction. The *sign* matches when `ours_pct` has the published sign,
//!    significant or not. The *magnitude ratio* is `ours_pct / published_pct`; it is within
//!    ±30 % for ratios in [0.7, 1.3] and within 2× for ratios in [0.5, 2]; the median ratio
//!    is over every change cell with a finite ratio.
//! 4. **Flat cells**: ours agrees when it is flat too. Flat cells are never mixed into the
//!    change figures (a tie is not a reproduced change).
//! 5. **Each cell once.** A cell's key names the runs behind it (workload, parameters,
//!    machine, presets, seeds) and the metric; panels that share runs (seed 004 repeats seed
//!    000's baseline and revert columns) share cells, and a key already scored is skipped.
//! 6. **Unjudged**: cells where either side has no value (a metric the workload cannot
//!    produce, a published gap, a zero baseline) are counted apart and scored nowhere.
//!
//! *Performance* cells are the subset whose metric is the table's headline performance
//! figure (elapsed time, faults/s, throughput, build time, score); they are scored again on
//! their own, because the allocator's decisions (counters) are easier to get right than its
//! costs.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::mmtests::{self, Better, Significance};

/// Changes smaller than this (percent, "positive = better") count as no change where the
/// published table gives no significance marker and states no noise.
pub const FLAT_PCT: f64 = 1.0;

/// Samples per preset that the scoreboard asks for: fewer cannot give a t-test any spread.
pub const MIN_SAMPLES: u32 = 3;

/// The metrics that are a table's headline performance figure.
pub const PERFORMANCE_METRICS: &[&str] =
    &["elapsed", "page_fault1", "throughput", "build_time", "score"];

/// Which way a cell moved from the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// A real change for the better.
    Better,
    /// A real change for the worse.
    Worse,
    /// No real change.
    Flat,
}

impl Change {
    /// The change of `pct` ("positive = better") when it is real.
    fn of(pct: f64, real: bool) -> Change {
        if !real || pct == 0.0 || !pct.is_finite() {
            Change::Flat
        } else if pct > 0.0 {
            Change::Better
        } else {
            Change::Worse
        }
    }
}

/// How the published side of a table says what is a real change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PublishedRule {
    /// The table marks significant changes; a cell is a change iff it is marked.
    Marked,
    /// No markers and no stated noise: a change is at least [`FLAT_PCT`] percent.
    Threshold,
}

/// The published side of a cell: `pct` as printed, and its marker under [`PublishedRule::Marked`].
pub fn published_change(rule: PublishedRule, pct: f64, marked: bool) -> Change {
    match rule {
        PublishedRule::Marked => Change::of(pct, marked),
        PublishedRule::Threshold => Change::of(pct, pct.abs() >= FLAT_PCT),
    }
}

/// Our side of a cell: the baseline's samples and the column's, judged by the t-test (and the
/// threshold too when the published side is judged by it). Returns the percentage of the
/// means and the change.
pub fn our_change(base: &[f64], new: &[f64], better: Better, rule: PublishedRule) -> (f64, Change) {
    let mean = |s: &[f64]| mmtests::summarize(s, better).map_or(f64::NAN, |x| x.mean);
    let pct = mmtests::pct_better(mean(base), mean(new), better);
    if !pct.is_finite() {
        return (f64::NAN, Change::Flat);
    }
    let real = if base.len() >= 2 && new.len() >= 2 {
        let sig = mmtests::significant(base, new, better, Significance::TTest);
        sig && (rule == PublishedRule::Marked || pct.abs() >= FLAT_PCT)
    } else {
        pct.abs() >= FLAT_PCT
    };
    (pct, Change::of(pct, real))
}

/// One scored cell.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Judged {
    /// The panel it belongs to (`001-kbuild`).
    pub table: String,
    /// Metric name, with `:param` for multi-value tables.
    pub metric: String,
    /// The column's preset.
    pub preset: String,
    /// Identity of the runs and metric behind the cell (rule 5).
    #[serde(skip)]
    pub key: String,
    /// Published change, "positive = better" percent; NaN if unjudged.
    pub published_pct: f64,
    /// What the published side shows.
    pub published: Change,
    /// Our change, same terms; NaN if unjudged.
    pub ours_pct: f64,
    /// What ours shows.
    pub ours: Change,
    /// Samples per preset on our side.
    pub samples: u32,
}

impl Judged {
    /// Both sides have a value.
    pub fn judged(&self) -> bool {
        self.published_pct.is_finite() && self.ours_pct.is_finite()
    }

    /// A published change.
    pub fn is_change(&self) -> bool {
        self.judged() && self.published != Change::Flat
    }

    /// Does ours show what the published side shows?
    pub fn agrees(&self) -> bool {
        self.judged() && self.ours == self.published
    }

    /// `ours_pct / published_pct` for a change cell.
    pub fn ratio(&self) -> Option<f64> {
        let r = self.ours_pct / self.published_pct;
        (self.is_change() && r.is_finite()).then_some(r)
    }

    /// Is the cell one of a table's headline performance figures?
    pub fn is_performance(&self) -> bool {
        let name = self.metric.split(':').next().unwrap_or("");
        PERFORMANCE_METRICS.contains(&name)
    }
}

/// The figures of a set of cells.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Score {
    /// Cells where the published table shows a real change.
    pub changes: u32,
    /// Of which ours is a real change in the same direction.
    pub changes_agree: u32,
    /// Of which ours has the published sign, significant or not.
    pub sign_matches: u32,
    /// Of which our change is within ±30 % of the published one.
    pub within_30pct: u32,
    /// Of which our change is within 2× of the published one.
    pub within_2x: u32,
    /// Median of `ours / published` over the change cells (`None` without any).
    pub median_ratio: Option<f64>,
    /// Cells where the published table shows no real change.
    pub flat: u32,
    /// Of which ours is flat too.
    pub flat_agree: u32,
    /// Cells with a value missing on either side.
    pub unjudged: u32,
    /// Cells judged with one sample per side (no t-test).
    pub one_sample: u32,
}

impl Score {
    /// Score `cells`, each key once (the first cell with a key stands for the others).
    pub fn of<'a>(cells: impl IntoIterator<Item = &'a Judged>) -> Score {
        let mut seen = BTreeSet::new();
        let mut s = Score::default();
        let mut ratios = Vec::new();
        for c in cells {
            if !seen.insert(c.key.as_str()) {
                continue;
            }
            if !c.judged() {
                s.unjudged += 1;
                continue;
            }
            if c.samples < 2 {
                s.one_sample += 1;
            }
            if c.is_change() {
                s.changes += 1;
                s.changes_agree += u32::from(c.agrees());
                s.sign_matches += u32::from(c.ours_pct.signum() == c.published_pct.signum());
                if let Some(r) = c.ratio() {
                    s.within_30pct += u32::from((0.7..=1.3).contains(&r));
                    s.within_2x += u32::from((0.5..=2.0).contains(&r));
                    ratios.push(r);
                }
            } else {
                s.flat += 1;
                s.flat_agree += u32::from(c.agrees());
            }
        }
        s.median_ratio = mmtests::median(&ratios);
        s
    }

    /// One line: `changes 12/20 agree (sign 15), magnitude ±30% 3, 2× 6, median 0.41; flat 7/9`.
    pub fn line(&self) -> String {
        let median = self.median_ratio.map_or("–".to_string(), |m| format!("{m:.2}"));
        let mut s = format!(
            "changes {}/{} agree (sign {}/{}), within ±30% {}, within 2× {}, median ratio {median}; \
             flat {}/{}",
            self.changes_agree,
            self.changes,
            self.sign_matches,
            self.changes,
            self.within_30pct,
            self.within_2x,
            self.flat_agree,
            self.flat
        );
        if self.unjudged > 0 {
            s += &format!("; {} unjudged", self.unjudged);
        }
        if self.one_sample > 0 {
            s += &format!("; {} judged on one sample", self.one_sample);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(key: &str, metric: &str, published: (f64, Change), ours: (f64, Change)) -> Judged {
        Judged {
            table: "t".into(),
            metric: metric.into(),
            preset: "p".into(),
            key: key.into(),
            published_pct: published.0,
            published: published.1,
            ours_pct: ours.0,
            ours: ours.1,
            samples: 3,
        }
    }

    #[test]
    fn the_published_side_follows_its_markers_or_the_threshold() {
        use Change::*;
        // A marked change is a change however small; an unmarked one is flat however large.
        assert_eq!(published_change(PublishedRule::Marked, 0.4, true), Better);
        assert_eq!(published_change(PublishedRule::Marked, -17.7, true), Worse);
        assert_eq!(published_change(PublishedRule::Marked, 5.0, false), Flat);
        // Without markers: at least 1 %.
        assert_eq!(published_change(PublishedRule::Threshold, -0.99, false), Flat);
        assert_eq!(published_change(PublishedRule::Threshold, -1.0, false), Worse);
        assert_eq!(published_change(PublishedRule::Threshold, 49.0, false), Better);
        assert_eq!(published_change(PublishedRule::Threshold, f64::NAN, false), Flat);
    }

    #[test]
    fn our_side_needs_the_t_test_and_the_threshold_where_the_table_has_no_markers() {
        use Change::{Better as Up, Flat};
        let lower = Better::Lower;
        // Tight samples, 0.5 % apart: significant, so a change under a marked table ...
        let base = [100.0, 100.1, 99.9];
        let new = [99.5, 99.6, 99.4];
        assert_eq!(our_change(&base, &new, lower, PublishedRule::Marked).1, Up);
        // ... but below the threshold of an unmarked one.
        assert_eq!(our_change(&base, &new, lower, PublishedRule::Threshold).1, Flat);
        // 5 % apart in the means but with overlapping wide spreads: not significant.
        let wide = [80.0, 120.0, 100.0];
        let (pct, c) = our_change(&wide, &[75.0, 115.0, 95.0], lower, PublishedRule::Threshold);
        assert!((pct - 5.0).abs() < 1e-9);
        assert_eq!(c, Flat);
        // One sample each: the threshold alone, either rule.
        assert_eq!(our_change(&[100.0], &[98.0], lower, PublishedRule::Marked).1, Up);
        assert_eq!(our_change(&[100.0], &[99.5], lower, PublishedRule::Marked).1, Flat);
        // Higher is better: a rise is better.
        let higher = Better::Higher;
        let (_, c) = our_change(&[10.0, 10.1, 9.9], &[12.0, 12.1, 11.9], higher, {
            PublishedRule::Threshold
        });
        assert_eq!(c, Up);
        // No value on one side: unjudgeable.
        assert!(our_change(&[], &[1.0], lower, PublishedRule::Marked).0.is_nan());
    }

    #[test]
    fn ties_count_as_flat_agreement_never_as_changes() {
        use Change::*;
        let cells = [
            cell("a", "elapsed", (0.3, Flat), (0.0, Flat)), // tie
            cell("b", "elapsed", (0.3, Flat), (-4.0, Worse)), // we move, they do not
            cell("c", "elapsed", (-2.4, Worse), (-0.03, Worse)), // a change, same way, tiny
            cell("d", "elapsed", (-2.4, Worse), (1.0, Flat)), // a change we miss
        ];
        let s = Score::of(&cells);
        assert_eq!((s.changes, s.changes_agree), (2, 1));
        assert_eq!((s.flat, s.flat_agree), (2, 1));
        // The sign matches for c only; d's +1.0 has the other sign.
        assert_eq!(s.sign_matches, 1);
        // c's ratio is 0.0125: the direction agrees, the magnitude does not.
        assert_eq!((s.within_30pct, s.within_2x), (0, 0));
    }

    #[test]
    fn shared_runs_are_counted_once() {
        use Change::*;
        let v1 = cell("trunc|vanilla|revert|elapsed", "elapsed", (2.4, Better), (2.0, Better));
        let mut v2 = v1.clone();
        v2.table = "t@v2".into();
        let other = cell("trunc|vanilla|opt|elapsed", "elapsed", (2.4, Better), (7.7, Better));
        let s = Score::of(&[v1, v2, other]);
        assert_eq!((s.changes, s.changes_agree), (2, 2));
    }

    #[test]
    fn magnitude_ratios_and_their_median() {
        use Change::*;
        let c =
            |k: &str, p: f64, o: f64| cell(k, "throughput", (p, Better), (o, Change::of(o, true)));
        let cells = [
            c("a", 10.0, 10.0), // 1.0: within 30 % and 2×
            c("b", 10.0, 13.0), // 1.3: the edge, within
            c("c", 10.0, 14.0), // 1.4: within 2× only
            c("d", 10.0, 5.0),  // 0.5: within 2× only
            c("e", 10.0, 25.0), // 2.5: neither
            c("f", 10.0, -5.0), // -0.5: wrong way
        ];
        let s = Score::of(&cells);
        assert_eq!(s.changes, 6);
        assert_eq!(s.changes_agree, 5);
        assert_eq!(s.sign_matches, 5);
        assert_eq!(s.within_30pct, 2);
        assert_eq!(s.within_2x, 4);
        // Sorted ratios -0.5, 0.5, 1.0, 1.3, 1.4, 2.5: median (1.0 + 1.3) / 2.
        assert!((s.median_ratio.unwrap() - 1.15).abs() < 1e-12);
        assert!(cells[0].is_performance());
    }

    #[test]
    fn missing_values_are_unjudged_and_scored_nowhere() {
        use Change::*;
        let cells = [
            cell("a", "allocs:1", (f64::NAN, Flat), (3.0, Better)),
            cell("b", "allocs:2", (20.0, Better), (f64::NAN, Flat)),
        ];
        let s = Score::of(&cells);
        assert_eq!(s.unjudged, 2);
        assert_eq!(s.changes + s.flat, 0);
        assert_eq!(s.median_ratio, None);
        assert!(!cells[0].is_performance());
    }
}

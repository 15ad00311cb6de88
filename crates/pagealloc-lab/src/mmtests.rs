//! mmtests-style statistics and comparison tables (docs/workloads.md §11).
//!
//! Kernel developers read the seeds' tables at a glance, so the lab prints the same layout that
//! mmtests' `compare-kernels.sh` prints. Every rule here was read from mmtests' Perl modules:
//! `bin/lib/MMTests/Stat.pm` (means, stddev, `pdiff`/`pndiff`), `Summarise.pm` (best-first
//! sorting, the `B*mean-N` subsets, the 0.10 significance level) and `Compare.pm` with
//! `PrintGeneric.pm` (the two-sample t-test, the `:SIG:` marker, the column formats).
//!
//! Layout of [`render_table`], cell by cell:
//!
//! ```text
//!                               5.17.0-rc3             5.17.0-rc3      <- labels, right-aligned
//!                                  vanilla    mm-reverthighpcp-v1         over each column
//! Min       elapsed      540.00 (   0.00%)      530.00 (   1.85%)
//! Amean     elapsed      543.00 (   0.00%)      530.00 *   2.39%*      <- significant mean
//! ```
//!
//! - Row name `%-Ws` with W = the longest row name, at least 9 (`BAmean-50`); mmtests sizes it
//!   from every statistic it computed, so even a mean-only excerpt keeps the 9 (seed 002's
//!   `Amean     fault-base-1` rows), and so do we.
//! - A space, then the metric name `%-Ms`, M = the longest metric name of the table.
//! - Per column: the value `%F.2f`, then ` (%7.2f%%)`, or ` *%7.2f%*` on a significant mean row.
//!   F is mmtests' default field length 12, widened for that column only when a value or a
//!   label line would not fit (a value keeps at least one space before it).
//!
//! Where we differ from mmtests, on purpose:
//! - mmtests' field length is chosen per benchmark by its Extract module (will-it-scale uses a
//!   wider field: seed 004's `page_fault1` table has 16); we widen only as far as needed.
//! - A label with a `\n` prints on several header lines (the seeds split "kernel-name" across
//!   two); mmtests splits the test name at its first `-` itself. Seed headers were often
//!   touched up by hand, so only their tokens, not their spacing, are reproducible.
//! - A missing value (no samples) prints `n/a` with a blank percentage; mmtests prints `0.00`.
//! - Lines carry no trailing blanks (mmtests pads the Gmean row's empty cells with spaces).
//! - The Gmean row puts `Gmean` in the row-name column and `Higher`/`Lower` in the metric column
//!   (mmtests' separate ratio table prints `Gmean Higher` as one string).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// Which direction of a metric is an improvement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Times, latencies: summarised by the arithmetic mean (`Amean`).
    Lower,
    /// Throughput, ops/s: summarised by the harmonic mean (`Hmean`).
    Higher,
    /// Higher is better, but not a rate: a margin that may be zero or negative, whose
    /// harmonic mean means nothing (NaN for a negative sample). Summarised by `Amean`.
    HigherAmean,
}

impl Better {
    /// Is a higher value the better one (whichever mean summarises it)?
    pub fn higher(self) -> bool {
        !matches!(self, Better::Lower)
    }
}

/// How the mean row decides whether a difference is significant (the `*  x.xx%*` marker).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Significance {
    /// The seeds' era (2018 – Nov 2024): two-sample t statistic, two-tailed p < 0.10.
    #[value(name = "ttest")]
    TTest,
    /// mmtests since Nov 2024: the intervals mean ± 1.96·stddev of the two sides do not overlap.
    #[value(name = "ci")]
    Ci,
}

/// The percentages of the best-first subsets averaged by `BAmean-N` / `BHmean-N`.
pub const BMEAN_PERCENTS: [usize; 3] = [50, 95, 99];

/// Significance level of the t-test rule: `Summarise.pm` defaults `_SignificanceLevel` to 0.10.
const TTEST_LEVEL: f64 = 0.10;

/// Half-width of the CI rule's interval in stddevs: `qnorm(1 - 0.05/2)`, mmtests' alpha 0.05.
const CI_Z: f64 = 1.96;

/// mmtests' default `_FieldLength`: the width of a value in a cell.
const FIELD_WIDTH: usize = 12;

/// The width of ` (%7.2f%%)` after each value.
const PCT_WIDTH: usize = 11;

/// The longest statistic name, `BAmean-50`: the row-name column is never narrower.
const ROW_NAME_WIDTH: usize = 9;

/// The summary of one column of one metric: the numbers behind the rows of a table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// Number of samples (≥ 1).
    pub n: usize,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Arithmetic mean for [`Better::Lower`], harmonic mean for [`Better::Higher`].
    pub mean: f64,
    /// The stddev that goes with `mean` (n−1 sample stddev, or the Hmean formula); 0 when n = 1.
    pub stddev: f64,
    /// 100·stddev/mean, in percent; 0 when the mean is 0 (`calc_coeffvar`).
    pub coeff_var: f64,
    /// The mean of the best `max(1, ⌊n·N/100⌋)` samples for N in [`BMEAN_PERCENTS`].
    pub bmean: [f64; 3],
}

/// Summarise one column's samples as mmtests does; `None` for no samples.
///
/// Example (lower is better), `[2, 4, 4, 4, 5, 5, 7, 9]`: mean 5, stddev √(32/7) = 2.14,
/// CoeffVar 42.76, BAmean-50 = mean of the best 4 = 3.5, BAmean-95 = mean of the best 7 = 4.43.
pub fn summarize(samples: &[f64], better: Better) -> Option<Summary> {
    if samples.is_empty() {
        return None;
    }
    let n = samples.len();
    // Summarise.pm sorts best-first before every statistic; the B*mean subsets are prefixes.
    let mut sorted = samples.to_vec();
    match better {
        Better::Lower => sorted.sort_by(f64::total_cmp),
        Better::Higher | Better::HigherAmean => sorted.sort_by(|a, b| b.total_cmp(a)),
    }
    let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
    let max = samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = mean_of(samples, better);
    let stddev = stddev_of(samples, mean, better);
    // Over the mean's size: a margin's mean may be negative (`Better::HigherAmean`).
    let coeff_var = if mean == 0.0 { 0.0 } else { stddev * 100.0 / mean.abs() };
    let bmean = BMEAN_PERCENTS.map(|pct| mean_of(&sorted[..(n * pct / 100).max(1)], better));
    Some(Summary { n, min, max, mean, stddev, coeff_var, bmean })
}

/// The median of the finite values of `x` (the mean of the middle two for an even count),
/// `None` if there are none. One rule for the scoreboard, `validate` and `bench`.
pub fn median(x: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = x.iter().copied().filter(|v| v.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

/// Arithmetic mean; NaN for no samples.
pub fn amean(x: &[f64]) -> f64 {
    if x.is_empty() {
        return f64::NAN;
    }
    x.iter().sum::<f64>() / x.len() as f64
}

/// Harmonic mean n / Σ(1/x); NaN for no samples or a negative one.
///
/// A zero sample gives 0, the limit of the formula (mmtests gives NaN and then prints 0.00, so
/// the table reads the same).
pub fn hmean(x: &[f64]) -> f64 {
    if x.is_empty() || x.iter().any(|&v| v.is_nan() || v < 0.0) {
        return f64::NAN;
    }
    if x.contains(&0.0) {
        return 0.0;
    }
    x.len() as f64 / x.iter().map(|v| 1.0 / v).sum::<f64>()
}

/// Geometric mean (Π x)^(1/n), computed as exp(mean ln x) so long products cannot overflow;
/// NaN for no samples or a negative one, 0 if a sample is 0.
pub fn gmean(x: &[f64]) -> f64 {
    if x.is_empty() || x.iter().any(|&v| v.is_nan() || v < 0.0) {
        return f64::NAN;
    }
    if x.contains(&0.0) {
        return 0.0;
    }
    (x.iter().map(|v| v.ln()).sum::<f64>() / x.len() as f64).exp()
}

fn mean_of(x: &[f64], better: Better) -> f64 {
    match better {
        Better::Lower | Better::HigherAmean => amean(x),
        Better::Higher => hmean(x),
    }
}

/// The stddev that goes with `mean` (`calc_stddev` in Stat.pm); 0 for one sample, where mmtests
/// has NaN and every consumer (CoeffVar, the t-test) reads it as 0.
fn stddev_of(x: &[f64], mean: f64, better: Better) -> f64 {
    let n = x.len() as f64;
    if x.len() < 2 {
        return 0.0;
    }
    match better {
        Better::Lower | Better::HigherAmean => {
            (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        }
        // Stat.pm: sqrt(Σ(1/x − 1/H)² · H⁴ / n), the delta-method stddev of the harmonic mean.
        // With H = 0 (a zero sample) the terms are ∞ − ∞: all zeros have no spread, otherwise
        // the spread is undefined.
        Better::Higher if mean == 0.0 => {
            if x.iter().all(|&v| v == 0.0) {
                0.0
            } else {
                f64::NAN
            }
        }
        Better::Higher => {
            let sum: f64 = x.iter().map(|v| (1.0 / v - 1.0 / mean).powi(2)).sum();
            (sum * mean.powi(4) / n).sqrt()
        }
    }
}

/// The relative difference of `new` to `base` in percent, positive when `new` is better:
/// `new·100/base − 100` when higher is better (mmtests' `pdiff`), `100 − new·100/base` when
/// lower is better (`pndiff`).
///
/// Equal values give 0 (so does base = new = 0). When base = 0 and new differs, the ratio is
/// undefined and the result is ±100: +100 when new is the better side of 0, −100 otherwise
/// (mmtests gives +100 for `pdiff` and −99 for `pndiff`). Unlike `pdiff`, a higher-is-better
/// new = 0 against base ≠ 0 gives the formula's −100, not 0: losing everything is not "no change".
pub fn pct_better(base: f64, new: f64, better: Better) -> f64 {
    if new == base {
        return 0.0;
    }
    if base == 0.0 {
        let new_better = match better {
            Better::Higher | Better::HigherAmean => new > 0.0,
            Better::Lower => new < 0.0,
        };
        return if new_better { 100.0 } else { -100.0 };
    }
    match better {
        Better::Higher => new * 100.0 / base - 100.0,
        // A margin may be negative: the change over the base's size, so a rise is positive.
        Better::HigherAmean => (new - base) * 100.0 / base.abs(),
        Better::Lower => 100.0 - new * 100.0 / base,
    }
}

/// Whether the mean of `new` differs significantly from the mean of `base` under `rule`;
/// `false` when either side has no samples.
///
/// Both rules use the mean of the table's mean row and the stddev that goes with it (Hmean and
/// its stddev for higher-is-better metrics), as `Summarise.pm` hands them to `Compare.pm`.
/// - [`Significance::TTest`]: the standard error √(s₁²/n₁ + s₂²/n₂) is 0 when neither side has
///   spread (every sample equal, or one sample each); the t-test is then undefined and, as in
///   `Compare.pm::_significanceTest`, different means are significant and equal means are not.
///   Otherwise significant when the two-tailed p (n₁+n₂−2 degrees of freedom) is below 0.10.
/// - [`Significance::Ci`]: significant when [m₁ − 1.96·s₁, m₁ + 1.96·s₁] and the same for
///   the other side do not overlap (touching intervals overlap).
///
/// An undefined mean or stddev (NaN, e.g. a negative throughput) is never significant.
pub fn significant(base: &[f64], new: &[f64], better: Better, rule: Significance) -> bool {
    let (Some(b), Some(c)) = (summarize(base, better), summarize(new, better)) else {
        return false;
    };
    if ![b.mean, b.stddev, c.mean, c.stddev].iter().all(|v| v.is_finite()) {
        return false;
    }
    match rule {
        Significance::TTest => match t_test(b.mean, b.stddev, b.n, c.mean, c.stddev, c.n) {
            TTest::P(p) => p < TTEST_LEVEL,
            TTest::NoSpread => b.mean != c.mean,
            TTest::Undefined => false,
        },
        Significance::Ci => {
            let (b_lo, b_hi) = (b.mean - CI_Z * b.stddev, b.mean + CI_Z * b.stddev);
            let (c_lo, c_hi) = (c.mean - CI_Z * c.stddev, c.mean + CI_Z * c.stddev);
            b_hi < c_lo || c_hi < b_lo
        }
    }
}

/// The two-tailed p of the two-sample t statistic |m₁−m₂| / √(s₁²/n₁ + s₂²/n₂) with n₁+n₂−2
/// degrees of freedom, on arithmetic means and n−1 sample stddevs.
///
/// `None` when it is undefined: a side without samples, or a standard error of 0 (neither side
/// has spread, which includes one sample each; [`significant`] then compares the means). A side
/// with one sample counts as stddev 0, as in mmtests.
///
/// Example: `[1, 2, 3]` against `[4, 5, 6]`: t = 3/√(2/3) = 3.674, 4 degrees of freedom,
/// p = 0.0213.
pub fn t_test_p(base: &[f64], new: &[f64]) -> Option<f64> {
    let b = summarize(base, Better::Lower)?;
    let c = summarize(new, Better::Lower)?;
    match t_test(b.mean, b.stddev, b.n, c.mean, c.stddev, c.n) {
        TTest::P(p) => Some(p),
        TTest::NoSpread | TTest::Undefined => None,
    }
}

/// The outcome of the t-test on two summaries.
enum TTest {
    /// Two-tailed p.
    P(f64),
    /// Standard error 0: no spread on either side.
    NoSpread,
    /// NaN inputs.
    Undefined,
}

fn t_test(m1: f64, s1: f64, n1: usize, m2: f64, s2: f64, n2: usize) -> TTest {
    let stderr = (s1 * s1 / n1 as f64 + s2 * s2 / n2 as f64).sqrt();
    if stderr == 0.0 {
        return TTest::NoSpread;
    }
    let t = (m1 - m2).abs() / stderr;
    // stderr > 0 needs a side with n ≥ 2, so there is at least one degree of freedom.
    let df = (n1 + n2 - 2) as f64;
    if t.is_nan() || df < 1.0 {
        return TTest::Undefined;
    }
    TTest::P(t_two_tailed_p(t, df))
}

/// P(|T| ≥ t) for Student's t with `df` degrees of freedom: I_{df/(df+t²)}(df/2, 1/2).
fn t_two_tailed_p(t: f64, df: f64) -> f64 {
    if t.is_infinite() {
        return 0.0;
    }
    reg_inc_beta(df / (df + t * t), df / 2.0, 0.5)
}

/// The regularized incomplete beta function I_x(a, b), for a, b > 0.
///
/// The continued fraction of I_x(a, b) converges fast for x < (a+1)/(a+b+2); above that the
/// symmetry I_x(a, b) = 1 − I_{1−x}(b, a) brings x back into that range.
fn reg_inc_beta(x: f64, a: f64, b: f64) -> f64 {
    if x.is_nan() || a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    // x^a (1−x)^b / B(a, b), in logs: the factor in front of the continued fraction.
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cont_frac(x, a, b) / a
    } else {
        1.0 - front * beta_cont_frac(1.0 - x, b, a) / b
    }
}

/// The continued fraction 1/(1+ d₁/(1+ d₂/(1+ …))) of the incomplete beta function, with
/// d₂ₘ₊₁ = −(a+m)(a+b+m)x / ((a+2m)(a+2m+1)) and d₂ₘ = m(b−m)x / ((a+2m−1)(a+2m)),
/// evaluated front to back with the modified Lentz method.
fn beta_cont_frac(x: f64, a: f64, b: f64) -> f64 {
    // Lentz replaces a zero denominator by a tiny number instead of dividing by zero.
    const TINY: f64 = 1e-300;
    const EPS: f64 = 1e-15;
    const MAX_TERMS: u32 = 300;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };

    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0));
    let mut f = d;
    for m in 1..=MAX_TERMS {
        let m = f64::from(m);
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 / guard(1.0 + even * d);
        c = guard(1.0 + even / c);
        f *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 / guard(1.0 + odd * d);
        c = guard(1.0 + odd / c);
        let step = d * c;
        f *= step;
        if (step - 1.0).abs() < EPS {
            break;
        }
    }
    f
}

/// ln Γ(x) for x > 0: the Lanczos approximation (g = 7, 9 terms, ~15 significant digits), with
/// the reflection Γ(x)Γ(1−x) = π/sin(πx) below 1/2 where the series is less accurate.
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEF: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEF[0];
    for (i, c) in COEF.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// One metric of a comparison: columns in order, first is the baseline.
#[derive(Clone, Debug)]
pub struct MetricSamples<'a> {
    /// The metric (mmtests' "operation") name, e.g. `elapsed`, `64`, `page_fault1-processes-2`.
    pub name: &'a str,
    /// Which direction is an improvement: picks Amean or Hmean and the sign of the percentages.
    pub better: Better,
    /// The samples of each column, in column order; an empty column prints `n/a`.
    pub columns: Vec<Vec<f64>>,
}

/// Which rows [`render_table`] prints for each metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowSet {
    /// Min, the mean, Stddev, CoeffVar, Max, B*mean-50, -95, -99.
    Full,
    /// The mean row only: how multi-value tables (netperf sizes, process counts) are shown.
    MeanOnly,
    /// The mean and the coefficient of variation: the change and how noisy it is.
    Short,
}

/// How [`render_table`] lays out and marks a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableOptions {
    /// The significance rule of the mean row's marker (the seeds' era used [`Significance::TTest`]).
    pub rule: Significance,
    /// The rows printed per metric.
    pub rows: RowSet,
    /// Close with a `Gmean Higher|Lower` row: per column, the geometric mean over metrics of
    /// the ratio of the column's mean to the baseline's mean.
    pub gmean_row: bool,
}

/// A row statistic: what it is called and which value of a [`Summary`] it prints.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stat {
    Min,
    Mean,
    Stddev,
    CoeffVar,
    Max,
    BMean(usize),
}

impl Stat {
    const FULL: [Stat; 8] = [
        Stat::Min,
        Stat::Mean,
        Stat::Stddev,
        Stat::CoeffVar,
        Stat::Max,
        Stat::BMean(0),
        Stat::BMean(1),
        Stat::BMean(2),
    ];

    fn name(self, better: Better) -> String {
        let mean = match better {
            Better::Lower | Better::HigherAmean => 'A',
            Better::Higher => 'H',
        };
        match self {
            Stat::Min => "Min".into(),
            Stat::Mean => format!("{mean}mean"),
            Stat::Stddev => "Stddev".into(),
            Stat::CoeffVar => "CoeffVar".into(),
            Stat::Max => "Max".into(),
            Stat::BMean(i) => format!("B{mean}mean-{}", BMEAN_PERCENTS[i]),
        }
    }

    fn value(self, s: &Summary) -> f64 {
        match self {
            Stat::Min => s.min,
            Stat::Mean => s.mean,
            Stat::Stddev => s.stddev,
            Stat::CoeffVar => s.coeff_var,
            Stat::Max => s.max,
            Stat::BMean(i) => s.bmean[i],
        }
    }

    /// Stat.pm's `stat_compare`: a smaller spread is better whatever the metric.
    fn better(self, metric: Better) -> Better {
        match self {
            Stat::Stddev | Stat::CoeffVar => Better::Lower,
            _ => metric,
        }
    }
}

/// One printed cell before widths are known.
struct Cell {
    value: Option<f64>,
    /// The percentage and whether it is marked significant; `None` prints blanks.
    pct: Option<(f64, bool)>,
}

/// Render a comparison table in mmtests' layout (see the module documentation): `title` on its
/// own line when not empty, the column labels (a `\n` in a label starts another header line),
/// then the rows, grouped by statistic as mmtests groups them (every metric's `Min`, then every
/// metric's mean, …), and the optional `Gmean` row. Every line ends in `\n`.
///
/// There are as many columns as labels or sample columns, whichever is more; missing labels are
/// blank and missing samples print `n/a`.
pub fn render_table(
    title: &str,
    column_labels: &[&str],
    metrics: &[MetricSamples],
    opts: &TableOptions,
) -> String {
    let ncols = metrics.iter().map(|m| m.columns.len()).max().unwrap_or(0).max(column_labels.len());
    let stats: &[Stat] = match opts.rows {
        RowSet::Full => &Stat::FULL,
        RowSet::MeanOnly => &[Stat::Mean],
        RowSet::Short => &[Stat::Mean, Stat::CoeffVar],
    };
    let summaries: Vec<Vec<Option<Summary>>> = metrics
        .iter()
        .map(|m| {
            (0..ncols).map(|c| m.columns.get(c).and_then(|s| summarize(s, m.better))).collect()
        })
        .collect();

    // (row name, metric name, cells) in print order: statistic-major, as Compare.pm loops.
    let mut rows: Vec<(String, String, Vec<Cell>)> = Vec::new();
    for &stat in stats {
        for (m, sums) in metrics.iter().zip(&summaries) {
            let base = sums.first().copied().flatten();
            let cells = sums
                .iter()
                .enumerate()
                .map(|(c, s)| {
                    let value = s.as_ref().map(|s| stat.value(s));
                    let pct = match (base, value) {
                        (Some(b), Some(v)) => {
                            let pct = pct_better(stat.value(&b), v, stat.better(m.better));
                            // Only the mean row is tested (Compare.pm matches /^.mean/).
                            let sig = c > 0
                                && stat == Stat::Mean
                                && significant(&m.columns[0], &m.columns[c], m.better, opts.rule);
                            Some((pct, sig))
                        }
                        _ => None,
                    };
                    Cell { value, pct }
                })
                .collect();
            rows.push((stat.name(m.better), m.name.to_owned(), cells));
        }
    }
    if opts.gmean_row && !metrics.is_empty() {
        let (label, cells) = gmean_cells(metrics, &summaries, ncols);
        rows.push(("Gmean".to_owned(), label.to_owned(), cells));
    }

    let labels: Vec<Vec<&str>> =
        (0..ncols).map(|c| column_labels.get(c).map_or(vec![], |l| l.lines().collect())).collect();
    let row_w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(ROW_NAME_WIDTH);
    let metric_w = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
    let field_w: Vec<usize> = (0..ncols)
        .map(|c| {
            let widest_value = rows
                .iter()
                .filter_map(|r| r.2.get(c).and_then(|cell| cell.value))
                .map(|v| format!("{v:.2}").len() + 1)
                .max()
                .unwrap_or(0);
            let widest_label = labels[c].iter().map(|l| l.len()).max().unwrap_or(0);
            FIELD_WIDTH.max(widest_value).max(widest_label.saturating_sub(PCT_WIDTH))
        })
        .collect();

    let mut out = String::new();
    if !title.is_empty() {
        out.push_str(title);
        out.push('\n');
    }
    // Header lines, bottom-aligned: a one-line label sits on the last header line.
    let nlines = labels.iter().map(Vec::len).max().unwrap_or(0);
    for line in 0..nlines {
        let mut s = " ".repeat(row_w + 1 + metric_w);
        for (c, l) in labels.iter().enumerate() {
            let text = (line + l.len()).checked_sub(nlines).map_or("", |i| l[i]);
            let _ = write!(s, "{text:>w$}", w = field_w[c] + PCT_WIDTH);
        }
        push_line(&mut out, &s);
    }
    for (row_name, metric, cells) in &rows {
        let mut s = format!("{row_name:<row_w$} {metric:<metric_w$}");
        for (c, cell) in cells.iter().enumerate() {
            let w = field_w[c];
            match cell.value {
                Some(v) => {
                    let _ = write!(s, "{v:w$.2}");
                }
                None => {
                    let _ = write!(s, "{:>w$}", "n/a");
                }
            }
            match cell.pct {
                Some((p, true)) => {
                    let _ = write!(s, " *{p:7.2}%*");
                }
                Some((p, false)) => {
                    let _ = write!(s, " ({p:7.2}%)");
                }
                None => s.push_str(&" ".repeat(PCT_WIDTH)),
            }
        }
        push_line(&mut out, &s);
    }
    out
}

/// The Gmean row: the preferred direction is the first metric's, and a metric that prefers the
/// other direction contributes base/new instead of new/base, so every ratio reads the same way
/// (`Compare.pm` swaps the values likewise). Metrics with a zero or undefined mean in either
/// column are left out (mmtests substitutes 0.00001 or 1); no metric left gives 1.
fn gmean_cells(
    metrics: &[MetricSamples],
    summaries: &[Vec<Option<Summary>>],
    ncols: usize,
) -> (&'static str, Vec<Cell>) {
    let preferred = metrics[0].better;
    let cells = (0..ncols)
        .map(|c| {
            let ratios: Vec<f64> = metrics
                .iter()
                .zip(summaries)
                .filter_map(|(m, sums)| {
                    let base = sums.first().copied().flatten()?.mean;
                    let new = sums[c]?.mean;
                    let ratio = if m.better == preferred { new / base } else { base / new };
                    (ratio.is_finite() && ratio > 0.0).then_some(ratio)
                })
                .collect();
            let value = if ratios.is_empty() { 1.0 } else { gmean(&ratios) };
            Cell { value: Some(value), pct: None }
        })
        .collect();
    let label = if preferred.higher() { "Higher" } else { "Lower" };
    (label, cells)
}

fn push_line(out: &mut String, line: &str) {
    out.push_str(line.trim_end());
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[track_caller]
    fn assert_close(got: f64, want: f64, tol: f64) {
        assert!(close(got, want, tol), "got {got}, want {want} (±{tol})");
    }

    const TTEST_FULL: TableOptions =
        TableOptions { rule: Significance::TTest, rows: RowSet::Full, gmean_row: false };

    #[test]
    fn means_by_hand() {
        // (1 + 2 + 3 + 4) / 4 = 2.5
        assert_close(amean(&[1.0, 2.0, 3.0, 4.0]), 2.5, 1e-12);
        // 3 / (1 + 1/2 + 1/4) = 3 / 1.75 = 12/7
        assert_close(hmean(&[1.0, 2.0, 4.0]), 12.0 / 7.0, 1e-12);
        // ∛(1·4·16) = ∛64 = 4; √(2·8) = 4
        assert_close(gmean(&[1.0, 4.0, 16.0]), 4.0, 1e-12);
        assert_close(gmean(&[2.0, 8.0]), 4.0, 1e-12);
        // A zero sample: the limit 0; a negative one: undefined.
        assert_eq!(hmean(&[0.0, 5.0]), 0.0);
        assert_eq!(gmean(&[0.0, 5.0]), 0.0);
        assert!(hmean(&[-1.0, 5.0]).is_nan());
        assert!(gmean(&[-1.0, 5.0]).is_nan());
        assert!(amean(&[]).is_nan() && hmean(&[]).is_nan() && gmean(&[]).is_nan());
    }

    #[test]
    fn summary_lower_is_amean_with_sample_stddev() {
        // [2, 4, 4, 4, 5, 5, 7, 9]: mean 40/8 = 5; Σ(x−5)² = 9+1+1+1+0+0+4+16 = 32;
        // stddev √(32/7) = 2.13809; CoeffVar 100·2.13809/5 = 42.762.
        // Best-first = ascending. BAmean-50: ⌊8·0.50⌋ = 4 → (2+4+4+4)/4 = 3.5;
        // BAmean-95: ⌊7.6⌋ = 7 → (40−9)/7 = 4.428571; BAmean-99: ⌊7.92⌋ = 7 → same.
        let s = summarize(&[5.0, 9.0, 2.0, 4.0, 7.0, 4.0, 5.0, 4.0], Better::Lower).unwrap();
        assert_eq!(s.n, 8);
        assert_eq!((s.min, s.max), (2.0, 9.0));
        assert_close(s.mean, 5.0, 1e-12);
        assert_close(s.stddev, (32.0f64 / 7.0).sqrt(), 1e-12);
        assert_close(s.stddev, 2.13809, 1e-5);
        assert_close(s.coeff_var, 42.762, 1e-3);
        assert_close(s.bmean[0], 3.5, 1e-12);
        assert_close(s.bmean[1], 31.0 / 7.0, 1e-12);
        assert_close(s.bmean[2], 31.0 / 7.0, 1e-12);
    }

    #[test]
    fn summary_higher_is_hmean_with_hmean_stddev() {
        // [1, 2, 4]: H = 12/7 = 1.714286; 1/x − 1/H = 1 − 7/12, 1/2 − 7/12, 1/4 − 7/12
        // = 5/12, −1/12, −4/12; Σ² = 42/144 = 0.291667; H⁴ = 20736/2401 = 8.636402;
        // stddev = √(0.291667·8.636402/3) = √0.839650 = 0.916324; CoeffVar = 53.4522.
        // Best-first = descending [4, 2, 1]. BHmean-50: ⌊1.5⌋ = 1 → 4;
        // BHmean-95: ⌊2.85⌋ = 2 → hmean(4, 2) = 2/(1/4+1/2) = 8/3; BHmean-99: ⌊2.97⌋ = 2 → 8/3.
        let s = summarize(&[2.0, 1.0, 4.0], Better::Higher).unwrap();
        assert_eq!((s.min, s.max), (1.0, 4.0));
        assert_close(s.mean, 12.0 / 7.0, 1e-12);
        assert_close(s.stddev, 0.916_324_258, 1e-9);
        assert_close(s.coeff_var, 53.452_248, 1e-6);
        assert_close(s.bmean[0], 4.0, 1e-12);
        assert_close(s.bmean[1], 8.0 / 3.0, 1e-12);
        assert_close(s.bmean[2], 8.0 / 3.0, 1e-12);
    }

    #[test]
    fn summary_small_and_empty() {
        assert!(summarize(&[], Better::Lower).is_none());
        // n = 1: ⌊1·N/100⌋ = 0 for every N, max(1, 0) = 1 sample; stddev 0, not NaN.
        let s = summarize(&[7.0], Better::Higher).unwrap();
        assert_eq!((s.n, s.stddev, s.coeff_var), (1, 0.0, 0.0));
        assert_eq!(s.bmean, [7.0; 3]);
        // n = 2, lower is better: BAmean-50 takes ⌊2·0.5⌋ = 1 sample, the best = the smallest;
        // BAmean-95: ⌊1.9⌋ = 1 as well.
        let s = summarize(&[3.0, 1.0], Better::Lower).unwrap();
        assert_eq!(s.bmean, [1.0, 1.0, 1.0]);
        // Higher is better: the best is the largest.
        let s = summarize(&[3.0, 1.0], Better::Higher).unwrap();
        assert_eq!(s.bmean, [3.0, 3.0, 3.0]);
        // All-zero throughput: Hmean 0, no spread, CoeffVar 0 (seed 002's `Percentage` rows).
        let s = summarize(&[0.0, 0.0], Better::Higher).unwrap();
        assert_eq!((s.mean, s.stddev, s.coeff_var), (0.0, 0.0, 0.0));
    }

    /// A margin that went negative (vm-scalability's `min_free_margin`) has no harmonic mean;
    /// `HigherAmean` gives the arithmetic mean and sample stddev, the best (largest) first.
    #[test]
    fn summary_of_a_margin_is_amean_best_first() {
        assert!(summarize(&[-2000.0, -1000.0, 600.0], Better::Higher).unwrap().mean.is_nan());
        let s = summarize(&[-2000.0, -1000.0, 600.0], Better::HigherAmean).unwrap();
        assert_close(s.mean, -800.0, 1e-9);
        // √(((−1200)² + (−200)² + 1400²) / 2) = √1 720 000.
        assert_close(s.stddev, 1_720_000f64.sqrt(), 1e-9);
        assert_close(s.coeff_var, 1_720_000f64.sqrt() * 100.0 / 800.0, 1e-9);
        // BAmean-50 is the best one: 600; BAmean-95 the best two.
        assert_eq!(s.bmean[0], 600.0);
        assert_close(s.bmean[1], -200.0, 1e-9);
        // From −2000 to −1000 is better by half the base's size (pdiff's formula says −50).
        assert_close(pct_better(-2000.0, -1000.0, Better::HigherAmean), 50.0, 1e-9);
        assert_close(pct_better(1000.0, 900.0, Better::HigherAmean), -10.0, 1e-9);
        assert!(Better::HigherAmean.higher() && Better::Higher.higher() && !Better::Lower.higher());
    }

    #[test]
    fn pct_better_signs() {
        // Lower is better: 530 vs 543 → 100 − 53000/543 = 2.394 (seed 004).
        assert_close(pct_better(543.0, 530.0, Better::Lower), 2.394, 1e-3);
        // Higher is better: 2695780.35 vs 2694662.26 → +0.0415 (seed 004, page_fault1-2).
        assert_close(pct_better(2_694_662.26, 2_695_780.35, Better::Higher), 0.0415, 1e-4);
        assert_close(pct_better(100.0, 90.0, Better::Higher), -10.0, 1e-12);
        assert_eq!(pct_better(4.83, 0.0, Better::Lower), 100.0);
        assert_eq!(pct_better(0.0, 0.0, Better::Lower), 0.0);
        assert_eq!(pct_better(0.0, 5.0, Better::Higher), 100.0);
        assert_eq!(pct_better(0.0, 5.0, Better::Lower), -100.0);
        assert_eq!(pct_better(10.0, 0.0, Better::Higher), -100.0);
    }

    #[test]
    fn incomplete_beta_exact_values() {
        for x in [0.1, 0.37, 0.5, 0.9] {
            // I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(1, b) = 1 − (1−x)^b.
            assert_close(reg_inc_beta(x, 1.0, 1.0), x, 1e-13);
            assert_close(reg_inc_beta(x, 3.5, 1.0), x.powf(3.5), 1e-13);
            assert_close(reg_inc_beta(x, 1.0, 4.0), 1.0 - (1.0 - x).powi(4), 1e-13);
            // I_x(1/2, 1/2) = (2/π)·asin(√x).
            let arcsine = 2.0 / std::f64::consts::PI * x.sqrt().asin();
            assert_close(reg_inc_beta(x, 0.5, 0.5), arcsine, 1e-12);
        }
        // Integer a, b: I_x(a, b) = Σ_{j=a}^{a+b−1} C(a+b−1, j) x^j (1−x)^(a+b−1−j).
        // I_0.3(2, 3) = 6·0.09·0.49 + 4·0.027·0.7 + 0.0081 = 0.3483.
        assert_close(reg_inc_beta(0.3, 2.0, 3.0), 0.3483, 1e-13);
        assert_eq!(reg_inc_beta(0.0, 2.0, 3.0), 0.0);
        assert_eq!(reg_inc_beta(1.0, 2.0, 3.0), 1.0);
        // ln Γ(1/2) = ln √π; ln Γ(5) = ln 24.
        assert_close(ln_gamma(0.5), std::f64::consts::PI.sqrt().ln(), 1e-13);
        assert_close(ln_gamma(5.0), 24.0f64.ln(), 1e-13);
    }

    #[test]
    fn t_test_p_known_values() {
        // Student's t table: t = 2.0 with 10 degrees of freedom, two-tailed p = 0.073388.
        assert_close(t_two_tailed_p(2.0, 10.0), 0.073_388_034_8, 1e-9);
        // t = 0: p = 1.
        assert_close(t_two_tailed_p(0.0, 7.0), 1.0, 1e-12);
        // [1, 2, 3] vs [4, 5, 6]: means 2 and 5, s² = 1 each; stderr = √(1/3 + 1/3) = 0.816497;
        // t = 3/0.816497 = 3.674235, df = 4 → p = 0.0213116.
        assert_close(t_test_p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap(), 0.021_311_64, 1e-8);
        // Symmetric in its arguments.
        assert_close(t_test_p(&[4.0, 5.0, 6.0], &[1.0, 2.0, 3.0]).unwrap(), 0.021_311_64, 1e-8);
        // Undefined: no samples, no spread on either side (incl. one sample each).
        assert_eq!(t_test_p(&[], &[1.0, 2.0]), None);
        assert_eq!(t_test_p(&[3.0, 3.0], &[4.0, 4.0]), None);
        assert_eq!(t_test_p(&[3.0], &[4.0]), None);
        // One sample against several: that side's stddev counts as 0, df = 1 + 3 − 2 = 2.
        // stderr = √(1/3), t = 2/0.57735 = 3.4641 → p = 0.0742 (I_{2/14}(1, 1/2) = 1 − √(6/7)).
        assert_close(
            t_test_p(&[3.0], &[4.0, 5.0, 6.0]).unwrap(),
            1.0 - (6.0f64 / 7.0).sqrt(),
            1e-12,
        );
    }

    // Seed 004, 2-socket CascadeLake trunc, rebuilt from ten samples per column that give the
    // published summaries exactly (worked out by hand from Min, Max, Amean and the B*means):
    // vanilla 510×3, 520, 530×3, 550×3: Amean 529, Σd² = 2490, stddev √(2490/9) = 16.63,
    //   BAmean-50 (510·3+520+530)/5 = 516, BAmean-95 (5290−550)/9 = 526.67.
    // reverthighpcp 500×2, 520×4, 530×3, 540: Amean 521, Σd² = 1490, stddev 12.87,
    //   BAmean-50 512, BAmean-95 (5210−540)/9 = 518.89.
    // highpcpopt 500×5, 510, 520×3, 530: Amean 510, Σd² = 1200, stddev 11.55,
    //   BAmean-50 500, BAmean-95 (5100−530)/9 = 507.78.
    fn cascadelake() -> [Vec<f64>; 3] {
        let v = |xs: &[(f64, usize)]| -> Vec<f64> {
            xs.iter().flat_map(|&(x, k)| std::iter::repeat_n(x, k)).collect()
        };
        [
            v(&[(510.0, 3), (520.0, 1), (530.0, 3), (550.0, 3)]),
            v(&[(500.0, 2), (520.0, 4), (530.0, 3), (540.0, 1)]),
            v(&[(500.0, 5), (510.0, 1), (520.0, 3), (530.0, 1)]),
        ]
    }

    #[test]
    fn significance_marker_both_rules() {
        // Seed 004 1-socket: seven 540s and three 550s against ten 530s. t-test: stderr =
        // √(23.33/10) = 1.5275, t = 13/1.5275 = 8.51 → p ≈ 1e-7: marked. CI: [533.5, 552.5]
        // against the point 530: no overlap, marked.
        let base: Vec<f64> = [[540.0; 7].as_slice(), &[550.0; 3]].concat();
        let new = vec![530.0; 10];
        for rule in [Significance::TTest, Significance::Ci] {
            assert!(significant(&base, &new, Better::Lower, rule), "{rule:?}");
        }
        // 2-socket, reverthighpcp (529 ± 16.63 vs 521 ± 12.87): t = 8/6.650 = 1.203, df = 18,
        // p = 0.2446: not marked. CI: [496.4, 561.6] and [495.8, 546.2] overlap: not marked.
        let [vanilla, revert, _] = cascadelake();
        assert_close(t_test_p(&vanilla, &revert).unwrap(), 0.244_557_19, 1e-7);
        for rule in [Significance::TTest, Significance::Ci] {
            assert!(!significant(&vanilla, &revert, Better::Lower, rule), "{rule:?}");
        }
        // No samples on a side: never marked.
        assert!(!significant(&[], &new, Better::Lower, Significance::TTest));
        assert!(!significant(&base, &[], Better::Lower, Significance::Ci));
        // No spread anywhere: different means are significant, equal ones are not.
        assert!(significant(&[5.0, 5.0], &[6.0, 6.0], Better::Higher, Significance::TTest));
        assert!(!significant(&[5.0, 5.0], &[5.0, 5.0], Better::Higher, Significance::TTest));
        assert!(significant(&[5.0], &[6.0], Better::Lower, Significance::TTest));
    }

    #[test]
    fn significance_rules_disagree() {
        // 2-socket, highpcpopt (529 ± 16.63 vs 510 ± 11.55): t = 19/6.403 = 2.967, df = 18,
        // p = 0.00825 < 0.10 → the seed marks it `*   3.59%*`. CI: [496.4, 561.6] and
        // [487.4, 532.6] overlap → today's mmtests would not mark it.
        let [vanilla, _, opt] = cascadelake();
        assert_close(t_test_p(&vanilla, &opt).unwrap(), 0.008_251_17, 1e-7);
        assert!(significant(&vanilla, &opt, Better::Lower, Significance::TTest));
        assert!(!significant(&vanilla, &opt, Better::Lower, Significance::Ci));
        // The other way round: base [0, 2] (1 ± 1.414), new [3.8, 3.8] (no spread). CI:
        // 1 + 1.96·1.414 = 3.772 < 3.8 → marked. t-test: stderr = √(2/2) = 1, t = 2.8, df = 2,
        // p = 0.1074 ≥ 0.10 → not marked.
        let (base, new) = ([0.0, 2.0], [3.8, 3.8]);
        assert_close(t_test_p(&base, &new).unwrap(), 0.107_392_6, 1e-7);
        assert!(significant(&base, &new, Better::Lower, Significance::Ci));
        assert!(!significant(&base, &new, Better::Lower, Significance::TTest));
    }

    /// The numeric tokens and markers of a rendered row, whitespace ignored.
    fn tokens(line: &str) -> Vec<String> {
        line.replace('(', " ( ")
            .replace(')', " ) ")
            .replace('*', " * ")
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn reproduces_seed_004_trunc_tables() {
        // Seed 004 (verbatim mmtests output), 1-socket Skylake: vanilla = seven 540s and three
        // 550s (Amean 543, Σd² = 7·9 + 3·49 = 210, stddev √(210/9) = 4.83, CoeffVar 0.89,
        // BAmean-95 = (7·540+2·550)/9 = 542.22); both candidates ten 530s.
        const SKYLAKE: &str = "\
Min       elapsed      540.00 (   0.00%)      530.00 (   1.85%)      530.00 (   1.85%)
Amean     elapsed      543.00 (   0.00%)      530.00 *   2.39%*      530.00 *   2.39%*
Stddev    elapsed        4.83 (   0.00%)        0.00 ( 100.00%)        0.00 ( 100.00%)
CoeffVar  elapsed        0.89 (   0.00%)        0.00 ( 100.00%)        0.00 ( 100.00%)
Max       elapsed      550.00 (   0.00%)      530.00 (   3.64%)      530.00 (   3.64%)
BAmean-50 elapsed      540.00 (   0.00%)      530.00 (   1.85%)      530.00 (   1.85%)
BAmean-95 elapsed      542.22 (   0.00%)      530.00 (   2.25%)      530.00 (   2.25%)
BAmean-99 elapsed      542.22 (   0.00%)      530.00 (   2.25%)      530.00 (   2.25%)
";
        const CASCADELAKE: &str = "\
Min       elapsed      510.00 (   0.00%)      500.00 (   1.96%)      500.00 (   1.96%)
Amean     elapsed      529.00 (   0.00%)      521.00 (   1.51%)      510.00 *   3.59%*
Stddev    elapsed       16.63 (   0.00%)       12.87 (  22.64%)       11.55 (  30.58%)
CoeffVar  elapsed        3.14 (   0.00%)        2.47 (  21.46%)        2.26 (  27.99%)
Max       elapsed      550.00 (   0.00%)      540.00 (   1.82%)      530.00 (   3.64%)
BAmean-50 elapsed      516.00 (   0.00%)      512.00 (   0.78%)      500.00 (   3.10%)
BAmean-95 elapsed      526.67 (   0.00%)      518.89 (   1.48%)      507.78 (   3.59%)
BAmean-99 elapsed      526.67 (   0.00%)      518.89 (   1.48%)      507.78 (   3.59%)
";
        let labels = [
            "5.17.0-rc3\nvanilla",
            "5.17.0-rc3\nmm-reverthighpcp-v1",
            "5.17.0-rc3\nmm-highpcpopt-v2",
        ];
        let skylake_base: Vec<f64> = [[540.0; 7].as_slice(), &[550.0; 3]].concat();
        let skylake = MetricSamples {
            name: "elapsed",
            better: Better::Lower,
            columns: vec![skylake_base, vec![530.0; 10], vec![530.0; 10]],
        };
        let out = render_table("1-socket Skylake", &labels, &[skylake], &TTEST_FULL);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "1-socket Skylake");
        // The first header line is mmtests' exactly: 17 columns of row label, then "%23s".
        assert_eq!(
            lines[1],
            "                              5.17.0-rc3             5.17.0-rc3             5.17.0-rc3"
        );
        // The seed's second header line was edited by hand; compare its words.
        assert_eq!(tokens(lines[2]), ["vanilla", "mm-reverthighpcp-v1", "mm-highpcpopt-v2"]);
        assert_eq!(lines[3..].join("\n") + "\n", SKYLAKE);

        let cascadelake = MetricSamples {
            name: "elapsed",
            better: Better::Lower,
            columns: cascadelake().to_vec(),
        };
        let out = render_table("", &labels, &[cascadelake], &TTEST_FULL);
        let body: Vec<&str> = out.lines().skip(2).collect();
        assert_eq!(body.join("\n") + "\n", CASCADELAKE);
    }

    #[test]
    fn mean_only_multi_value_table() {
        // netperf-like, higher is better, two sizes and two columns.
        // 64: base [800, 1000] → Hmean 2/(1/800+1/1000) = 888.89; new [1000, 1000] → 1000,
        //   +12.50%. Hmean stddev 98.77 vs 0: stderr 69.84, t = 1.591, df 2 → p ≈ 0.25, and
        //   888.89 ± 193.6 contains 1000: not marked under either rule.
        // 128: three 1000s against three 1100s: no spread, different means → marked, +10.00%.
        let metrics = [
            MetricSamples {
                name: "64",
                better: Better::Higher,
                columns: vec![vec![800.0, 1000.0], vec![1000.0, 1000.0]],
            },
            MetricSamples {
                name: "128",
                better: Better::Higher,
                columns: vec![vec![1000.0; 3], vec![1100.0; 3]],
            },
        ];
        let opts =
            TableOptions { rule: Significance::TTest, rows: RowSet::MeanOnly, gmean_row: true };
        let out = render_table("netperf-udp", &["base", "new"], &metrics, &opts);
        // Gmean: √(1000/888.89 · 1100/1000) = √1.2375 = 1.1124 → 1.11; the baseline 1.00.
        // The metric column is as wide as "Higher" because of the Gmean row.
        let want = "\
netperf-udp
                                   base                    new
Hmean     64          888.89 (   0.00%)     1000.00 (  12.50%)
Hmean     128        1000.00 (   0.00%)     1100.00 *  10.00%*
Gmean     Higher        1.00                   1.11
";
        assert_eq!(out, want);
        // Same verdicts under the CI rule for these samples.
        let ci = TableOptions { rule: Significance::Ci, ..opts };
        assert_eq!(render_table("netperf-udp", &["base", "new"], &metrics, &ci), want);
    }

    #[test]
    fn render_edge_cases() {
        // No metrics and no labels: nothing but the title.
        assert_eq!(render_table("t", &[], &[], &TTEST_FULL), "t\n");
        // A column without samples prints n/a and no percentage; a missing label is blank.
        let m =
            MetricSamples { name: "x", better: Better::Lower, columns: vec![vec![1.0], vec![]] };
        let opts =
            TableOptions { rule: Significance::Ci, rows: RowSet::MeanOnly, gmean_row: false };
        let out = render_table("", &["a"], &[m], &opts);
        assert_eq!(
            out,
            "                                 a\nAmean     x        1.00 (   0.00%)         n/a\n"
        );
        // A value wider than the field widens that column and keeps a space before it.
        let m = MetricSamples {
            name: "x",
            better: Better::Higher,
            columns: vec![vec![123_456_789_012.0], vec![123_456_789_012.0]],
        };
        let out = render_table("", &[], &[m], &opts);
        assert_eq!(out, "Hmean     x 123456789012.00 (   0.00%) 123456789012.00 (   0.00%)\n");
    }

    #[test]
    fn serde_and_clap_names() {
        use clap::ValueEnum as _;
        assert_eq!(serde_json::to_string(&Better::Higher).unwrap(), "\"higher\"");
        assert_eq!(serde_json::from_str::<Better>("\"lower\"").unwrap(), Better::Lower);
        assert_eq!(Significance::from_str("ttest", false), Ok(Significance::TTest));
        assert_eq!(Significance::from_str("ci", false), Ok(Significance::Ci));
    }
}

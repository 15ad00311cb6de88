//! A reproduced table's outcome, apart from how it was run: each cell (ours beside the
//! published value, with the scoreboard's judgement), the table as text and JSON, and the
//! scoreboard of a whole run. `pagealloc reproduce` fills these from its runs; the HTML report
//! (`crate::report`) and the text and JSON output read them.

use serde_json::json;

use crate::runs;
use crate::scoreboard::{Judged, Score};

/// Our metric for a published one.
pub fn our_metric(name: &str) -> &str {
    match name {
        "page_fault1" => "ops_per_s",
        "fault-base" => "fault_base_us",
        "fault-huge" => "fault_huge_us",
        "huge" => "huge_pct",
        other => other,
    }
}

/// One published metric of one preset, with ours.
#[derive(Debug)]
pub struct Cell {
    /// Our value (normalised like the published one).
    pub ours: f64,
    /// The published value.
    pub published: f64,
    /// The scoreboard's judgement; `None` for the baseline column.
    pub judged: Option<Judged>,
}

impl Cell {
    /// ✓ a published change we reproduce, ✗ one we miss, = flat on both sides, ≠ flat
    /// published but ours moves, · unjudged (a value missing), blank for the baseline.
    pub fn mark(&self) -> &'static str {
        match &self.judged {
            None => " ",
            Some(j) if !j.judged() => "·",
            Some(j) => match (j.is_change(), j.agrees()) {
                (true, true) => "✓",
                (true, false) => "✗",
                (false, true) => "=",
                (false, false) => "≠",
            },
        }
    }

    /// The mark's meaning in one word, for JSON and reports.
    pub fn verdict(&self) -> Option<&'static str> {
        Some(match self.mark() {
            "✓" => "change-agrees",
            "✗" => "change-differs",
            "=" => "flat-agrees",
            "≠" => "flat-differs",
            "·" => "unjudged",
            _ => return None,
        })
    }
}

/// What the marks of [`Cell::mark`] mean, for the text output and the report.
pub const LEGEND: &str = "✓ a published change we reproduce (same direction, ours significant), \
                          ✗ one we do not, = flat on both sides, ≠ flat published but ours \
                          moves, · a value missing";

/// The scoreboard of a reproduce run: per table and overall, every cell counted once.
#[derive(Debug)]
pub struct Scoreboard {
    /// (panel id, its score), in run order.
    pub tables: Vec<(String, Score)>,
    /// Every cell of every table, each distinct cell once.
    pub all: Score,
    /// The headline performance cells only.
    pub performance: Score,
    /// Run at the reduced scale of `--quick`.
    pub quick: bool,
}

impl Scoreboard {
    /// Score `reports`.
    pub fn of(reports: &[TableReport], quick: bool) -> Scoreboard {
        let judged = |r: &TableReport| -> Vec<Judged> {
            r.cells.iter().flatten().filter_map(|c| c.judged.clone()).collect()
        };
        let all: Vec<Judged> = reports.iter().flat_map(judged).collect();
        Scoreboard {
            tables: reports.iter().map(|r| (r.id.clone(), Score::of(&judged(r)))).collect(),
            all: Score::of(&all),
            performance: Score::of(all.iter().filter(|c| c.is_performance())),
            quick,
        }
    }

    /// "full" or "quick".
    pub fn scale(&self) -> &'static str {
        if self.quick {
            "quick"
        } else {
            "full"
        }
    }

    /// What a reader must know about the scale, or nothing at full scale.
    pub fn scale_warning(&self) -> Option<&'static str> {
        self.quick.then_some(
            "reduced scale (--quick): fewer samples and a smaller volume per run; the figures \
             are not comparable with a full run's, and some directions differ",
        )
    }

    /// The closing summary: one line per table, then all cells and the performance cells.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::from(
            "scoreboard (the rules, and why each table agrees or not: docs/reproduction.md)\n",
        );
        let w = self.tables.iter().map(|(id, _)| id.len()).max().unwrap_or(0).max(11);
        for (id, s) in &self.tables {
            let _ = writeln!(out, "  {id:<w$}  {}", s.line());
        }
        let _ = writeln!(out, "  {:<w$}  {}", "all cells", self.all.line());
        let _ = writeln!(out, "  {:<w$}  {}", "performance", self.performance.line());
        if let Some(warn) = self.scale_warning() {
            let _ = writeln!(out, "  {warn}");
        }
        out
    }

    /// The scoreboard as JSON: `{all, performance, tables: {id: score}, scale, comparable}`.
    pub fn to_json(&self) -> serde_json::Value {
        let tables: serde_json::Map<_, _> = self
            .tables
            .iter()
            .map(|(id, s)| (id.clone(), serde_json::to_value(s).expect("plain data")))
            .collect();
        json!({
            "scale": self.scale(),
            "comparable_with_full": !self.quick,
            "all": self.all,
            "performance": self.performance,
            "tables": tables,
        })
    }
}

/// One table's outcome: every published metric, ours beside it, per preset.
#[derive(Debug)]
pub struct TableReport {
    /// Panel id.
    pub id: String,
    /// Heading.
    pub title: String,
    /// The seed mail the published numbers come from: its number, author, subject and date.
    pub seed: String,
    /// Workload.
    pub workload: String,
    /// Machine name and CPUs.
    pub machine: String,
    /// CPUs of the machine.
    pub cpus: u32,
    /// The baseline preset.
    pub baseline: String,
    /// Presets, in column order.
    pub presets: Vec<String>,
    /// Samples per preset.
    pub samples: u32,
    /// Run at `--quick`'s reduced scale: not comparable with a full run.
    pub quick: bool,
    /// The table's note.
    pub note: String,
    /// (name, param, normalised, unit) of each metric.
    pub metrics: Vec<(String, String, bool, String)>,
    /// `cells[metric][preset]`.
    pub cells: Vec<Vec<Cell>>,
    /// With `--show`: each preset's `/proc` views of its last run, (preset, [(file, text)]).
    pub views: Vec<(String, Vec<(&'static str, String)>)>,
}

impl TableReport {
    /// The table's own scoreboard figures.
    pub fn score(&self) -> Score {
        Score::of(self.cells.iter().flatten().filter_map(|c| c.judged.as_ref()))
    }

    /// The table as JSON: per preset, each metric's ours, published and verdict.
    pub fn to_json(&self) -> serde_json::Value {
        let rows: Vec<_> = self
            .presets
            .iter()
            .enumerate()
            .map(|(i, preset)| {
                let mut mj = serde_json::Map::new();
                for (m, cs) in self.metrics.iter().zip(&self.cells) {
                    let c = &cs[i];
                    let key = if m.1.is_empty() { m.0.clone() } else { format!("{}:{}", m.0, m.1) };
                    let mut cell =
                        json!({"ours": finite(c.ours), "published": finite(c.published)});
                    if let Some(j) = &c.judged {
                        cell["ours_pct"] = finite(j.ours_pct);
                        cell["published_pct"] = finite(j.published_pct);
                        cell["ours_change"] = json!(j.ours);
                        cell["published_change"] = json!(j.published);
                        cell["verdict"] = json!(c.verdict());
                        cell["ratio"] = j.ratio().map_or(serde_json::Value::Null, finite);
                    }
                    mj.insert(key, cell);
                }
                json!({"preset": preset, "metrics": mj})
            })
            .collect();
        let mut doc = json!({
            "id": self.id,
            "seed": self.seed,
            "workload": self.workload,
            "machine": self.machine,
            "baseline": self.baseline,
            "samples": self.samples,
            "quick": self.quick,
            "rows": rows,
        });
        if !self.views.is_empty() {
            let views: serde_json::Map<_, _> = self
                .views
                .iter()
                .map(|(preset, vs)| {
                    let files: serde_json::Map<_, _> =
                        vs.iter().map(|(n, t)| (n.to_string(), json!(t))).collect();
                    (preset.clone(), serde_json::Value::Object(files))
                })
                .collect();
            doc["views"] = serde_json::Value::Object(views);
        }
        doc
    }

    /// The `/proc` views of each preset's last run, as text (empty without `--show`).
    pub fn views_text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        for (preset, vs) in &self.views {
            for (name, text) in vs {
                let path = runs::view_path(name);
                let _ = writeln!(out, "   {} {preset}, last run: {path}:\n{text}", self.id);
            }
        }
        out
    }
}

/// A value in a text table: two decimals, none from 10 000 up (a rate of 1 445 260 faults/s
/// needs no cents), `–` where there is none.
fn value_cell(x: f64) -> String {
    if !x.is_finite() {
        "–".into()
    } else if x.abs() >= 1e4 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// What a table's parameter value is, for a row or block label: netperf's message size in
/// bytes, thpfioscale's number of THP threads, a most-used frame's rank (from the 5th most
/// used up, as the seed prints them); page_fault1's says so itself.
fn param_label(workload: &str, metric: &str, param: &str) -> String {
    match workload {
        _ if param.is_empty() => String::new(),
        _ if metric == "allocs" => format!("frame #{param}"),
        "netperf-tcp" => format!("{param} B"),
        "thpfioscale" => format!("{param} THP thr."),
        _ => param.to_string(),
    }
}

/// JSON has no NaN: missing values are null.
fn finite(x: f64) -> serde_json::Value {
    if x.is_finite() {
        json!((x * 1e4).round() / 1e4)
    } else {
        serde_json::Value::Null
    }
}

impl TableReport {
    /// The table as text: a block per parameter value, a row per preset, a column pair per
    /// metric, ✓/✗ for the direction.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let _ = writeln!(out, "== {} — {}", self.id, self.title);
        let _ = writeln!(
            out,
            "   seed {}; {} on {} ({} CPUs), {} sample(s) per preset{}",
            self.seed,
            self.workload,
            self.machine,
            self.cpus,
            self.samples,
            if self.quick { "; QUICK: reduced scale, not comparable with a full run" } else { "" }
        );
        let blocks = self.blocks();
        if blocks.len() > 1 && blocks.iter().all(|(_, idx)| idx.len() == 1) {
            // One metric by parameter (netperf sizes, page_fault1 processes): a row per
            // parameter value, a column pair per preset.
            let (name, _, norm, _) = &self.metrics[blocks[0].1[0]];
            let norm = if *norm { " (base=100)" } else { "" };
            let _ = writeln!(out, "   {name}{norm}, ours / published");
            let mut head = format!("   {:<14}", "");
            for p in &self.presets {
                let _ = write!(head, " {p:>27}");
            }
            let _ = writeln!(out, "{head}");
            for (param, idx) in &blocks {
                let label = param_label(&self.workload, name, param);
                let mut line = format!("   {label:<14}");
                for c in &self.cells[idx[0]] {
                    let (o, p) = (value_cell(c.ours), value_cell(c.published));
                    let _ = write!(line, " {o:>12} {p:>12} {}", c.mark());
                }
                let _ = writeln!(out, "{}", line.trim_end());
            }
            self.closing(&mut out);
            return out;
        }
        for (param, idx) in blocks {
            let label = param_label(&self.workload, &self.metrics[idx[0]].0, param);
            let mut head = format!("   {:<14}", if param.is_empty() { "preset" } else { &label });
            for &i in &idx {
                let (name, _, norm, _) = &self.metrics[i];
                let norm = if *norm { " (base=100)" } else { "" };
                let _ = write!(head, " {:>27}", format!("{name}{norm}"));
            }
            let _ = writeln!(out, "{head}");
            let mut sub = format!("   {:<14}", "");
            for _ in &idx {
                let _ = write!(sub, " {:>12} {:>12}  ", "ours", "published");
            }
            let _ = writeln!(out, "{}", sub.trim_end());
            for (r, preset) in self.presets.iter().enumerate() {
                let mut line = format!("   {preset:<14}");
                for &i in &idx {
                    let c = &self.cells[i][r];
                    let (o, p) = (value_cell(c.ours), value_cell(c.published));
                    let _ = write!(line, " {o:>12} {p:>12} {}", c.mark());
                }
                let _ = writeln!(out, "{}", line.trim_end());
            }
        }
        self.closing(&mut out);
        out
    }

    /// The lines after a table: the marks, its note, its score, a blank line.
    fn closing(&self, out: &mut String) {
        use std::fmt::Write as _;
        let _ = writeln!(out, "   marks: {LEGEND}; – no value (not printed, or not produced)");
        if !self.note.is_empty() {
            let _ = writeln!(out, "   note: {}", self.note);
        }
        let _ = writeln!(out, "   score: {}", self.score().line());
        let _ = writeln!(out);
    }

    /// Metrics grouped by parameter value, in first-seen order: (param, metric indices).
    pub fn blocks(&self) -> Vec<(&str, Vec<usize>)> {
        let mut out: Vec<(&str, Vec<usize>)> = Vec::new();
        for (i, m) in self.metrics.iter().enumerate() {
            match out.iter_mut().find(|(p, _)| *p == m.1) {
                Some((_, v)) => v.push(i),
                None => out.push((&m.1, vec![i])),
            }
        }
        out
    }
}

//! `pagealloc reproduce [TABLE …]`: every seed table, our rows beside the published rows.
//!
//! Each table (and panel) names a workload, a machine and the presets of its columns; the lab
//! runs the workload on the model of that machine under each preset, at least
//! [`MIN_SAMPLES`] samples each with different seeds, and prints our value beside the
//! published one per metric with the scoreboard's mark (see [`crate::scoreboard`] for the
//! rules: published changes and flat cells scored apart, magnitudes, each shared run once).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use serde_json::json;

use super::run::Common;
use crate::machine::Machine;
use crate::mmtests;
use crate::preset_file::resolve;
use crate::published::{self, PublishedMetric, PublishedTable};
use crate::results;
use crate::runs::{self, ProcView, RunResult, RunSpec, Runner};
use crate::scoreboard::{our_change, published_change, Judged, PublishedRule, Score, MIN_SAMPLES};
use crate::workload::{self, WorkloadInfo};

/// Arguments of `pagealloc reproduce`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Tables to reproduce (ids such as `001-kbuild`; an id selects all its panels, an
    /// `id@panel` just that one). Default: every table.
    pub tables: Vec<String>,
    /// Samples per preset, 1 to 1000 (default: per table, see `docs/reproduction.md`; 2 with
    /// --quick).
    #[arg(long)]
    pub iterations: Option<u32>,
    /// List the tables and panels with their workload, machine and presets, and exit.
    #[arg(long)]
    pub list: bool,
    /// Write a self-contained HTML report here as well.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// Render /proc views (comma-separated) of each table's last run per preset: the last
    /// sample of the table's last parameter value.
    #[arg(long, value_delimiter = ',', value_name = "VIEWS")]
    pub show: Vec<ProcView>,
    /// The kernel layout of the views.
    #[command(flatten)]
    pub views: runs::ViewArgs,
    /// Options shared with run and compare.
    #[command(flatten)]
    pub common: Common,
}

/// How a table is run: one variant per value of the table's parameter.
#[derive(Debug)]
struct Plan<'p> {
    table: &'p PublishedTable,
    workload: &'static WorkloadInfo,
    machine: Machine,
    /// (published param, run overrides).
    variants: Vec<(String, Vec<String>)>,
    samples: u32,
    count_frames: bool,
    /// Index of this plan's first spec in the job list.
    first_spec: usize,
    /// Run at `--quick`'s reduced scale.
    quick: bool,
}

impl Plan<'_> {
    /// Index in the job list of sample `i` of preset column `p` of variant `v`.
    fn spec_index(&self, v: usize, p: usize, i: usize) -> usize {
        let per_variant = self.table.presets.len() * self.samples as usize;
        self.first_spec + v * per_variant + p * self.samples as usize + i
    }
}

/// Samples per preset for a full run of a table: trunc gets the published table's own 10
/// iterations; every other table [`MIN_SAMPLES`], each with its own seed, so that the model's
/// run-to-run spread is real and the t-test has something to judge (the seeds print one
/// number per configuration for page_fault1, thpfioscale and seed 001's tables).
fn default_samples(base_id: &str) -> u32 {
    match base_id {
        "000-trunc" => 10,
        _ => MIN_SAMPLES,
    }
}

/// Samples per preset with `--quick`: fewer than the scoreboard asks for, and said so.
const QUICK_SAMPLES: u32 = 2;

/// The run parameter a table's parameter value stands for.
fn param_override(workload: &str, param: &str) -> Option<String> {
    match workload {
        "page-fault1" => param.strip_prefix("processes-").map(|n| format!("processes={n}")),
        "netperf-tcp" => Some(format!("message_size={param}")),
        _ => None,
    }
}

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

fn plan<'p>(t: &'p PublishedTable, args: &Args) -> Result<Plan<'p>> {
    let workload = workload::find(&t.workload)?;
    let machine = Machine::resolve(&t.machine)?;
    let mut variants: Vec<(String, Vec<String>)> = Vec::new();
    for m in t.main_metrics() {
        let over = param_override(&t.workload, &m.param);
        let key = if over.is_some() { m.param.clone() } else { String::new() };
        if !variants.iter().any(|(p, _)| *p == key) {
            let mut o = t.params.clone();
            o.extend(over);
            variants.push((key, o));
        }
    }
    let samples = args.iterations.unwrap_or(if args.common.quick {
        QUICK_SAMPLES.min(default_samples(t.base_id()))
    } else {
        default_samples(t.base_id())
    });
    if samples == 0 {
        bail!("--iterations must be at least 1");
    }
    Ok(Plan {
        table: t,
        workload,
        machine,
        variants,
        samples,
        // Counting frames costs 4 bytes a frame; netperf-tcp runs always count, so that the
        // top-frames table shares the netperf table's runs.
        count_frames: t.workload == "netperf-tcp",
        first_spec: 0,
        quick: args.common.quick,
    })
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

/// Samples of our metric `name` for one variant and preset.
fn our_samples(
    plan: &Plan<'_>,
    results: &[Option<RunResult>],
    v: usize,
    p: usize,
    m: &PublishedMetric,
) -> Vec<f64> {
    let start = plan.spec_index(v, p, 0);
    results[start..start + plan.samples as usize]
        .iter()
        .map(|r| {
            let r = r.as_ref().expect("a table is reported once all its runs are in");
            if m.name == "allocs" {
                // Position k of the printed list, which runs from the 5th most used up.
                let rank = m.param.parse::<usize>().unwrap_or(1);
                let frames = &r.outcome.most_used_frames;
                frames.get(5usize.saturating_sub(rank)).map_or(f64::NAN, |f| f64::from(f.1))
            } else {
                let name = our_metric(&m.name);
                r.metrics.iter().find(|x| x.name == name).map_or(f64::NAN, |x| x.value)
            }
        })
        .filter(|x| !x.is_nan())
        .collect()
}

/// Compare one published metric across the presets, judging every non-baseline column by
/// the scoreboard's rules. `keys[i]` identifies the runs of spec `i`.
fn cells(
    plan: &Plan<'_>,
    results: &[Option<RunResult>],
    keys: &[String],
    m: &PublishedMetric,
) -> Vec<Cell> {
    let v = plan.variants.iter().position(|(p, _)| *p == m.param).unwrap_or(0);
    let better = match m.better {
        published::Better::Lower => mmtests::Better::Lower,
        published::Better::Higher => mmtests::Better::Higher,
    };
    let ours: Vec<Vec<f64>> =
        (0..plan.table.presets.len()).map(|p| our_samples(plan, results, v, p, m)).collect();
    let mean = |s: &[f64]| mmtests::summarize(s, better).map_or(f64::NAN, |x| x.mean);
    let base_mean = mean(&ours[0]);
    let rule = if m.kind == published::Kind::Table
        && plan.table.significance != published::Significance::None
    {
        PublishedRule::Marked
    } else {
        PublishedRule::Threshold
    };
    let metric =
        if m.param.is_empty() { m.name.clone() } else { format!("{}:{}", m.name, m.param) };
    let runs_key = |p: usize| keys[plan.spec_index(v, p, 0)].as_str();
    (0..plan.table.presets.len())
        .map(|p| {
            let mut o = mean(&ours[p]);
            if m.normalised {
                o = 100.0 * o / base_mean;
            }
            let published = m.values[p];
            let judged = (p > 0).then(|| {
                let base = m.values[0];
                let published_pct = if published.is_finite() && base.is_finite() {
                    m.better.pct(base, published)
                } else {
                    f64::NAN
                };
                let marked = m.marked.get(p).copied().unwrap_or(false);
                let (ours_pct, ours_change) = our_change(&ours[0], &ours[p], better, rule);
                Judged {
                    table: plan.table.id.clone(),
                    metric: metric.clone(),
                    preset: plan.table.presets[p].clone(),
                    key: format!("{}|{}|{}|{}", runs_key(0), runs_key(p), metric, m.stat),
                    published: published_change(rule, published_pct, marked),
                    published_pct,
                    ours: ours_change,
                    ours_pct,
                    samples: plan.samples,
                }
            });
            Cell { ours: o, published, judged }
        })
        .collect()
}

/// Most samples per preset `--iterations` takes (each is a run; the specs are made up front).
pub const MAX_ITERATIONS: u32 = 1000;

/// Refuse an `--iterations` of 0 or above [`MAX_ITERATIONS`] (`reproduce --iterations 0`
/// succeeded: a table's plan failed and was reported as skipped, and nothing ran).
pub fn check_iterations(iterations: Option<u32>) -> Result<()> {
    match iterations {
        Some(n) if !(1..=MAX_ITERATIONS).contains(&n) => {
            bail!("--iterations {n}: takes 1 to {MAX_ITERATIONS} samples per preset")
        }
        _ => Ok(()),
    }
}

/// Run the command.
pub fn run(args: &Args) -> Result<()> {
    check_iterations(args.iterations)?;
    let all = published::published();
    let chosen: Vec<&PublishedTable> = if args.tables.is_empty() {
        all.tables.iter().collect()
    } else {
        let mut v = Vec::new();
        for id in &args.tables {
            let sel = all.select(id);
            if sel.is_empty() {
                bail!("no table `{id}`; the tables are: {}", published::TABLE_IDS.join(", "));
            }
            v.extend(sel);
        }
        v
    };
    if args.list {
        for t in &chosen {
            println!("{:<32} {:<26} {:<16} {}", t.id, t.workload, t.machine, t.presets.join(","));
        }
        return Ok(());
    }
    let scale = args.common.scale();
    let cost = args.common.cost()?;
    let mut plans = Vec::new();
    let mut specs = Vec::new();
    let mut skipped = Vec::new();
    for t in chosen {
        let mut p = match plan(t, args) {
            Ok(p) => p,
            Err(e) => {
                skipped.push((t.id.clone(), format!("{e:#}")));
                continue;
            }
        };
        p.first_spec = specs.len();
        for (_, overrides) in &p.variants {
            let params = p.workload.params(overrides, scale)?;
            for preset_name in &t.presets {
                let preset = resolve(preset_name)?;
                for i in 0..p.samples {
                    specs.push(RunSpec {
                        runner: Runner::Model,
                        workload: p.workload,
                        params: params.clone(),
                        preset: preset.clone(),
                        preset_name: preset_name.clone(),
                        machine: p.machine.clone(),
                        seed: args.common.seed.wrapping_add(u64::from(i)),
                        sample: i,
                        cost: cost.clone(),
                        count_frames: p.count_frames,
                        table: Some(t.id.clone()),
                        show: Vec::new(),
                        layout: args.views.layout(),
                        trace: None,
                    });
                }
            }
        }
        plans.push(p);
    }
    // Panels share runs (seed 004's vanilla and revert columns are seed 000's; the top page
    // frames come from netperf-tcp runs): run each distinct spec once.
    let keys: Vec<String> = specs.iter().map(spec_key).collect();
    let mut unique: Vec<RunSpec> = Vec::new();
    let mut index_of: BTreeMap<&str, usize> = BTreeMap::new();
    let slots: Vec<usize> = specs
        .iter()
        .zip(&keys)
        .map(|(s, key)| {
            *index_of.entry(key.as_str()).or_insert_with(|| {
                unique.push(s.clone());
                unique.len() - 1
            })
        })
        .collect();
    if !args.show.is_empty() {
        for p in &plans {
            for (_, i) in shown_specs(p) {
                unique[slots[i]].show.clone_from(&args.show);
            }
        }
    }
    // In text mode each table prints as soon as its runs (and every earlier table's) are in,
    // in table order, so `reproduce | tee out` shows results from the first table on.
    let mut streamed = Streamed {
        filled: vec![None; specs.len()],
        users: {
            let mut u = vec![Vec::new(); unique.len()];
            for (j, &i) in slots.iter().enumerate() {
                u[i].push(j);
            }
            u
        },
        next_plan: 0,
    };
    let on_done = |i: usize, r: &RunResult| {
        if args.common.json {
            return;
        }
        streamed.add(i, r);
        while let Some(p) = plans.get(streamed.next_plan) {
            let len = p.variants.len() * p.table.presets.len() * p.samples as usize;
            if streamed.filled[p.first_spec..p.first_spec + len].iter().any(Option::is_none) {
                break;
            }
            let mut report = table_report(p, &streamed.filled, &keys);
            report.views = shown_views(p, &streamed.filled, !args.show.is_empty());
            print!("{}{}", report.to_text(), report.views_text());
            let _ = std::io::Write::flush(&mut std::io::stdout());
            streamed.next_plan += 1;
        }
    };
    // Progress goes to stderr, so it shows with --json too: a full run takes many minutes.
    let distinct = runs::execute_all_with(&unique, "reproduce", false, on_done)?;
    let results: Vec<RunResult> = slots.iter().map(|&i| distinct[i].clone()).collect();
    let all: Vec<Option<RunResult>> = results.iter().cloned().map(Some).collect();
    if !args.common.no_save {
        let revision = results::revision();
        let rows: Vec<_> =
            specs.iter().zip(&results).flat_map(|(s, r)| runs::rows(s, r, &revision)).collect();
        let path = results::save(&args.common.results, "reproduce", &rows)?;
        if !args.common.json {
            eprintln!("rows saved to {}", path.display());
        }
    }
    let mut reports: Vec<TableReport> =
        plans.iter().map(|p| table_report(p, &all, &keys)).collect();
    for (r, p) in reports.iter_mut().zip(&plans) {
        r.views = shown_views(p, &all, !args.show.is_empty());
    }
    let board = Scoreboard::of(&reports, args.common.quick);
    if let Some(path) = &args.report {
        let rows: Vec<_> =
            specs.iter().zip(&results).flat_map(|(s, r)| runs::rows(s, r, "")).collect();
        let html = crate::report::reproduce_page(&reports, &board, &rows, &skipped);
        std::fs::write(path, html).with_context(|| format!("writing {}", path.display()))?;
        if !args.common.json {
            eprintln!("report written to {}", path.display());
        }
    }
    if args.common.json {
        let skipped: BTreeMap<_, _> = skipped.into_iter().collect();
        let tables: Vec<_> = reports.iter().map(TableReport::to_json).collect();
        let doc = json!({
            "scale": board.scale(),
            "tables": tables,
            "skipped": skipped,
            "scoreboard": board.to_json(),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        // The tables were printed as they finished.
        for (id, why) in &skipped {
            println!("{id}: not run: {why}");
        }
        print!("{}", board.to_text());
    }
    Ok(())
}

/// The identity of a run: two specs with the same key are the same run (shared by panels).
fn spec_key(s: &RunSpec) -> String {
    format!(
        "{}|{:?}|{}|{}|{}|{}",
        s.workload.name, s.params, s.preset_name, s.machine.name, s.seed, s.count_frames
    )
}

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

/// The spec-level results in as the runs finish, for printing tables as they complete.
#[derive(Debug)]
struct Streamed {
    /// Per spec, its result once in.
    filled: Vec<Option<RunResult>>,
    /// Per distinct run, the specs it stands for.
    users: Vec<Vec<usize>>,
    /// The next table to print.
    next_plan: usize,
}

impl Streamed {
    /// Distinct run `i` finished with `r`.
    fn add(&mut self, i: usize, r: &RunResult) {
        for &j in &self.users[i] {
            self.filled[j] = Some(r.clone());
        }
    }
}

/// The `/proc` views of each preset's last run, when asked for.
fn shown_views(
    p: &Plan<'_>,
    results: &[Option<RunResult>],
    show: bool,
) -> Vec<(String, Vec<(&'static str, String)>)> {
    if !show {
        return Vec::new();
    }
    shown_specs(p)
        .filter_map(|(preset, i)| results[i].as_ref().map(|r| (preset, r.views.clone())))
        .collect()
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

    fn to_json(&self) -> serde_json::Value {
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

fn table_report(p: &Plan<'_>, results: &[Option<RunResult>], keys: &[String]) -> TableReport {
    let t = p.table;
    let metrics: Vec<&PublishedMetric> = t.main_metrics().collect();
    TableReport {
        id: t.id.clone(),
        title: t.title.clone(),
        seed: t.seed.clone(),
        workload: t.workload.clone(),
        machine: p.machine.name.clone(),
        cpus: p.machine.nr_cpus(),
        baseline: t.baseline.clone(),
        presets: t.presets.clone(),
        samples: p.samples,
        quick: p.quick,
        note: t.note.split_whitespace().collect::<Vec<_>>().join(" "),
        metrics: metrics
            .iter()
            .map(|m| (m.name.clone(), m.param.clone(), m.normalised, m.unit.clone()))
            .collect(),
        cells: metrics.iter().map(|m| cells(p, results, keys, m)).collect(),
        views: Vec::new(),
    }
}

/// The runs whose `/proc` views `--show` prints: per preset, the last sample of the table's
/// last parameter value, as (preset, index in the spec list).
fn shown_specs<'a>(p: &'a Plan<'_>) -> impl Iterator<Item = (String, usize)> + 'a {
    let last_variant = p.variants.len().saturating_sub(1);
    p.table.presets.iter().enumerate().map(move |(i, preset)| {
        (preset.clone(), p.spec_index(last_variant, i, p.samples as usize - 1))
    })
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

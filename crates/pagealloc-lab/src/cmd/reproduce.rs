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
use crate::reproduction::{our_metric, Cell, Scoreboard, TableReport};
use crate::results;
use crate::runs::{self, ProcView, RunResult, RunSpec, Runner};
use crate::scoreboard::{our_change, published_change, Judged, PublishedRule, MIN_SAMPLES};
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
    crate::output::check_optional(args.report.as_deref(), "the report")?;
    let all = published::published();
    let chosen: Vec<&PublishedTable> = if args.tables.is_empty() {
        all.tables.iter().collect()
    } else {
        let mut v = Vec::new();
        for id in &args.tables {
            let sel = all.select(id);
            if sel.is_empty() {
                bail!(
                    "no table `{id}`{}; the tables are: {}",
                    crate::suggest::did_you_mean(id, published::TABLE_IDS.iter().copied()),
                    published::TABLE_IDS.join(", ")
                );
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

//! `pagealloc compare WORKLOAD --presets A,B,…`: run a workload under several presets, a few
//! samples each, and print the mmtests comparison table (docs/workloads.md §11): the first preset
//! is the baseline, every other cell says how much better (+) or worse (−) it is, and `*  x.xx%*`
//! marks a significant difference.

use anyhow::{bail, Result};
use serde_json::json;

use super::run::{machine_for, Common};
use crate::mmtests::{self, MetricSamples, RowSet, Significance, TableOptions};
use crate::preset_file::resolve;
use crate::runs;
use crate::{results, workload};

/// The runner metrics a comparison shows besides the workload's own (seed 001's columns).
pub const DEFAULT_RUNNER_METRICS: &[&str] =
    &["zone_lock_pct", "free_high", "alloc_zone", "cache_miss_pct", "pcp_peak_mib"];

/// How to read a comparison's percentages, printed under every table.
pub const SIGN_CONVENTION: &str = "(%): change from the first preset, positive = better \
(higher for rates, lower for times and costs); *  x.xx%* = significant";

/// Arguments of `pagealloc compare`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The workload (`pagealloc workloads` lists them).
    pub workload: String,
    /// Presets to compare, the baseline first (names or preset files).
    #[arg(long, value_delimiter = ',', required = true, value_name = "A,B,…")]
    pub presets: Vec<String>,
    /// Samples per preset (seeds S, S+1, …), 1 to 1000.
    #[arg(long, default_value_t = 5)]
    pub iterations: u32,
    /// Machine: a built-in name or a machine file. Default: the workload's seed machine.
    #[arg(long, value_name = "NAME_OR_FILE")]
    pub machine: Option<String>,
    /// Use this many CPUs instead of the machine's.
    #[arg(long)]
    pub cpus: Option<u32>,
    /// Set a workload parameter (repeatable).
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Metrics to show (default: the workload's results, then zone_lock_pct, free_high,
    /// alloc_zone, cache_miss_pct, pcp_peak_mib).
    #[arg(long, value_delimiter = ',')]
    pub metrics: Vec<String>,
    /// Significance rule of the `*  x.xx%*` marker: the seeds' t-test (p < 0.10) or today's
    /// non-overlapping mean ± 1.96·stddev.
    #[arg(long, value_enum, default_value = "ttest")]
    pub significance: Significance,
    /// Print only the mean row of each metric.
    #[arg(long, conflicts_with = "full")]
    pub mean_only: bool,
    /// Print every mmtests row (Min, mean, Stddev, CoeffVar, Max, B*mean-50/95/99); the
    /// default is the mean and CoeffVar of each metric.
    #[arg(long)]
    pub full: bool,
    /// Also write a self-contained HTML page with the table and the plots here.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<std::path::PathBuf>,
    /// Options shared with run and reproduce.
    #[command(flatten)]
    pub common: Common,
}

/// Run the command.
pub fn run(args: &Args) -> Result<()> {
    let w = workload::find(&args.workload)?;
    super::reproduce::check_iterations(Some(args.iterations))?;
    crate::output::check_optional(args.report.as_deref(), "the report")?;
    let machine = machine_for(w, args.machine.as_deref(), args.cpus)?;
    let (params, notes) =
        w.params_for(&args.params, args.common.scale(), workload::Fit::of(&machine))?;
    let cost = args.common.cost()?;
    let mut specs = Vec::new();
    let mut labels: Vec<String> = Vec::new();
    for given in &args.presets {
        let preset = resolve(given)?;
        // A preset file is labelled by its `name` (default: the file stem), not its path.
        let name = preset.name.clone();
        if labels.contains(&name) {
            bail!(
                "two of --presets are named `{name}`; give each file its own `name = \"…\"` so \
                 the columns can be told apart"
            );
        }
        labels.push(name);
        let seed = args.common.seed;
        specs.extend(runs::model_samples(
            w,
            &params,
            &preset,
            &machine,
            &cost,
            seed,
            args.iterations,
        ));
    }
    let label = format!("{} on {}", w.name, machine.name);
    let results = runs::execute_all(&specs, &label, args.common.json)?;
    let revision = results::revision();
    let rows: Vec<_> =
        specs.iter().zip(&results).flat_map(|(s, r)| runs::rows(s, r, &revision)).collect();
    if !args.common.no_save {
        let path = results::save(&args.common.results, &format!("compare-{}", w.name), &rows)?;
        if !args.common.json {
            eprintln!("rows saved to {}", path.display());
        }
    }
    // Metric names in order: as asked, or the workload's own then the runner's defaults.
    let first = &results[0].metrics;
    let names: Vec<String> = if args.metrics.is_empty() {
        let own = first
            .iter()
            .take_while(|m| m.name != "elapsed_s")
            .filter(|m| crate::metrics::is_result(w.name, &m.name))
            .map(|m| m.name.clone());
        own.chain(DEFAULT_RUNNER_METRICS.iter().map(|s| s.to_string())).collect()
    } else {
        for n in &args.metrics {
            if !first.iter().any(|m| &m.name == n) {
                let all: Vec<_> = first.iter().map(|m| m.name.as_str()).collect();
                bail!("no metric `{n}`; this workload's metrics are: {}", all.join(", "));
            }
        }
        args.metrics.clone()
    };
    let k = args.iterations as usize;
    let samples = |name: &str| -> Vec<Vec<f64>> {
        results
            .chunks(k)
            .map(|c| {
                c.iter()
                    .map(|r| {
                        r.metrics.iter().find(|m| m.name == name).map_or(f64::NAN, |m| m.value)
                    })
                    .collect()
            })
            .collect()
    };
    let table: Vec<(String, mmtests::Better, &'static str, Vec<Vec<f64>>)> = names
        .iter()
        .map(|n| {
            let m = first.iter().find(|m| &m.name == n).expect("checked above");
            (n.clone(), m.better, m.unit, samples(n))
        })
        .collect();
    if args.common.json {
        let metrics: serde_json::Map<_, _> = table
            .iter()
            .map(|(name, better, unit, cols)| {
                let base = &cols[0];
                let columns: Vec<_> = cols
                    .iter()
                    .zip(&labels)
                    .map(|(s, p)| {
                        let sum = mmtests::summarize(s, *better);
                        let mean = sum.map_or(f64::NAN, |x| x.mean);
                        let base_mean = mmtests::summarize(base, *better).map_or(f64::NAN, |x| x.mean);
                        json!({
                            "preset": p,
                            "samples": s,
                            "p": mmtests::t_test_p(base, s),
                            "mean": mean,
                            "stddev": sum.map_or(f64::NAN, |x| x.stddev),
                            "pct": mmtests::pct_better(base_mean, mean, *better),
                            "significant": mmtests::significant(base, s, *better, args.significance),
                        })
                    })
                    .collect();
                (name.clone(), json!({"unit": unit, "better": better, "columns": columns}))
            })
            .collect();
        let doc = json!({
            "workload": w.name,
            "machine": machine.name,
            "presets": labels,
            "iterations": args.iterations,
            "fitted": notes.fitted,
            "scaled": notes.scaled,
            "seed": args.common.seed,
            "metrics": metrics,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    let ms: Vec<MetricSamples<'_>> = table
        .iter()
        .map(|(name, better, _, cols)| MetricSamples {
            name: name.as_str(),
            better: *better,
            columns: cols.clone(),
        })
        .collect();
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    let opts = TableOptions {
        rule: args.significance,
        rows: if args.full {
            RowSet::Full
        } else if args.mean_only {
            RowSet::MeanOnly
        } else {
            RowSet::Short
        },
        gmean_row: false,
    };
    let title = format!(
        "{} on {} ({} CPUs), {} samples per preset",
        w.name,
        machine.name,
        machine.nr_cpus(),
        args.iterations
    );
    let rendered = mmtests::render_table(&title, &labels, &ms, &opts);
    if !notes.fitted.is_empty() {
        println!("fitted to {}: {}", machine.name, notes.fitted.join(", "));
    }
    if !notes.scaled.is_empty() {
        println!("scaled by {}: {}", args.common.scale(), notes.scaled.join(", "));
    }
    println!("{rendered}");
    println!("{SIGN_CONVENTION}");
    if let Some(path) = &args.report {
        let html = crate::report::compare_page(&title, &rendered, &rows);
        std::fs::write(path, html)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
        eprintln!("report written to {}", path.display());
    }
    for (name, _, unit, _) in &table {
        if !unit.is_empty() {
            print!("{name}: {unit}  ");
        }
    }
    println!();
    Ok(())
}

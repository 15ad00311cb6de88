//! `pagealloc explore`: sweep a grid of switches and tunables × workloads × machines on the
//! model, write one set of result rows per point, and show the Pareto front of memory held in
//! the pagesets against the workload's result (or the zone-lock share), with the kernel
//! default and the merged presets marked. `--shard I/N` runs one slice of the grid as its own
//! process; `explore merge` joins the slices into the rows of the unsharded sweep, byte for
//! byte. docs/explore.md has the grid format, the rows and the fan-out on Slurm and
//! Kubernetes.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use serde_json::json;

use super::run::Common;
use crate::explore::{
    self, groups, point_rows, summarize, GridSpec, Group, DEFAULT_MARK, PCP_MEAN,
};
use crate::plot::{Dot, DotKind};
use crate::results::{self, GridTag, Row};
use crate::runs;

/// The machine of `explore --quick`: two CPUs, so the sweep fits two minutes here.
pub const QUICK_MACHINE: &str = "lab-2cpu";
/// The workloads of `explore --quick`: one that only faults and frees its own pages, one
/// whose pages move between two CPUs.
pub const QUICK_WORKLOADS: &[&str] = &["page-fault1", "lmbench-unix"];
/// The axes of `explore --quick`: the pageset's size and its batch scale, at values that bind
/// on two CPUs (a fraction of 8 gives a `high` above anything these runs hold, and the decay
/// never runs in runs shorter than a vmstat tick: docs/explore.md §1).
pub const QUICK_AXES: &[&str] =
    &["percpu_pagelist_high_fraction=0,64,256", "pcp_batch_scale_max=0,5"];

/// The memory side of the front unless `--memory` says otherwise.
pub const DEFAULT_MEMORY: &str = "pcp_peak_mib";

/// Arguments of `pagealloc explore`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// `merge`: join the rows of shards.
    #[command(subcommand)]
    pub merge: Option<Sub>,
    /// A grid file (TOML: workloads, machines, presets, params, iterations, references,
    /// [axes]); the flags below replace what it says.
    #[arg(long, value_name = "FILE")]
    pub grid: Option<PathBuf>,
    /// Workloads to run (`pagealloc workloads`).
    #[arg(long, value_delimiter = ',', value_name = "A,B,…")]
    pub workloads: Vec<String>,
    /// Machines (names or files). Default: each workload's own.
    #[arg(long, value_delimiter = ',', value_name = "A,B,…")]
    pub machines: Vec<String>,
    /// Base presets the axes modify (names or preset files). Default: modern.
    #[arg(long, value_delimiter = ',', value_name = "A,B,…")]
    pub presets: Vec<String>,
    /// An axis (repeatable): a switch or tunable a preset file can set and its values,
    /// `--axis percpu_pagelist_high_fraction=0,8,16`. Replaces the grid file's axis of that
    /// name.
    #[arg(long = "axis", value_name = "KEY=V1,V2,…")]
    pub axes: Vec<String>,
    /// Seeds per point (S, S+1, …), 1 to 1000. Default: the grid file's, or 1.
    #[arg(long)]
    pub iterations: Option<u32>,
    /// Set a workload parameter (repeatable), as `run --param`.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Do not run the merged built-in presets as reference points.
    #[arg(long)]
    pub no_references: bool,
    /// Run only points k with k % N == I (I is 0-based: 0..N).
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Write the rows to FILE too (the file `explore merge` reads).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// How the front is drawn and the page written.
    #[command(flatten)]
    pub view: View,
    /// Options shared with run and compare (`--quick` alone: the built-in small grid).
    #[command(flatten)]
    pub common: Common,
}

/// The subcommands of `explore`.
#[derive(Debug, clap::Subcommand)]
pub enum Sub {
    /// Join the row files of the shards of one sweep into the rows of the unsharded sweep
    /// (byte for byte); refuse duplicates, missing points and shards of another grid.
    Merge(MergeArgs),
}

/// Arguments of `pagealloc explore merge`.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The shards' row files (`explore --shard I/N --out FILE`).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Where to write the merged rows.
    #[arg(long, value_name = "FILE", required = true)]
    pub out: PathBuf,
    /// How the front is drawn and the page written.
    #[command(flatten)]
    pub view: View,
    /// Print one JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// What the front is made of and where its pictures go.
#[derive(Debug, Clone, clap::Args)]
pub struct View {
    /// The objective: a metric of the runs (`zone_lock_pct`, …). Default: each workload's
    /// result (its first metric: throughput, elapsed time, …).
    #[arg(long, value_name = "METRIC")]
    pub objective: Option<String>,
    /// The memory side: `pcp_peak_mib` (most held at a tick) or `pcp_mean_mib` (the mean
    /// over the run's ticks).
    #[arg(long, value_name = "METRIC", default_value = DEFAULT_MEMORY)]
    pub memory: String,
    /// Write one Pareto SVG per (workload, machine) into DIR.
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
    /// Write a self-contained HTML page (the grid, the table, the plots inline).
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
}

/// Run the command.
pub fn run(args: &Args) -> Result<()> {
    if let Some(Sub::Merge(m)) = &args.merge {
        return merge(m);
    }
    crate::output::check_optional(args.out.as_deref(), "the rows file")?;
    crate::output::check_optional(args.view.report.as_deref(), "the report")?;
    let (spec, iterations) = grid_spec(args)?;
    super::reproduce::check_iterations(Some(iterations))?;
    let scale = args.common.scale();
    let points = explore::points(&spec, scale)?;
    let total = u32::try_from(points.len()).context("more than 2^32 points")?;
    let cost = args.common.cost()?;
    let revision = results::revision();
    let grid = explore::fingerprint(&points, iterations, args.common.seed, &cost, &revision);
    let (shard, shards) = match &args.shard {
        Some(s) => explore::parse_shard(s)?,
        None => (0, 1),
    };
    let mine: Vec<usize> = (0..points.len()).filter(|k| *k as u32 % shards == shard).collect();
    let mut specs = Vec::new();
    for &k in &mine {
        let p = &points[k];
        let seed = args.common.seed;
        specs.extend(runs::model_samples(
            p.workload, &p.params, &p.preset, &p.machine, &cost, seed, iterations,
        ));
    }
    let label = if shards > 1 { format!("explore {shard}/{shards}") } else { "explore".into() };
    if !args.common.json {
        eprintln!(
            "{label}: {} of {total} points × {iterations} seed(s) = {} runs, grid {grid}",
            mine.len(),
            specs.len()
        );
    }
    let done = runs::execute_all(&specs, &label, args.common.json)?;
    let mut rows = Vec::new();
    for (j, (spec, r)) in specs.iter().zip(&done).enumerate() {
        // Specs run `iterations` per point, in the points' order.
        let k = mine[j / iterations as usize];
        let tag = GridTag {
            grid: grid.clone(),
            point: k as u32,
            points: total,
            samples: iterations,
            coords: points[k].coords.clone(),
            marks: points[k].marks.clone(),
        };
        rows.extend(point_rows(spec, r, &revision, &tag));
    }
    if let Some(out) = &args.out {
        results::write(out, &rows)?;
    }
    if !args.common.no_save {
        let stem =
            if shards > 1 { format!("explore-{shard}-of-{shards}") } else { "explore".into() };
        let path = results::save(&args.common.results, &stem, &rows)?;
        if !args.common.json {
            eprintln!("rows saved to {}", path.display());
        }
    }
    let what = if shards > 1 {
        format!("shard {shard}/{shards} of grid {grid}: {} of {total} points", mine.len())
    } else {
        format!("grid {grid}: {total} points")
    };
    show(&rows, &args.view, args.common.json, &what, &grid_lines(&spec, iterations, scale))
}

/// The grid to sweep: the grid file's, the flags over it, or with `--quick` alone the
/// built-in small grid; and the seeds per point.
fn grid_spec(args: &Args) -> Result<(GridSpec, u32)> {
    let (mut spec, file_iterations) = match &args.grid {
        Some(path) => explore::load_grid_file(path)?,
        None => (GridSpec { references: true, ..GridSpec::default() }, None),
    };
    if args.common.quick && args.grid.is_none() && args.workloads.is_empty() {
        spec.workloads = QUICK_WORKLOADS.iter().map(|s| (*s).to_owned()).collect();
        spec.machines = vec![QUICK_MACHINE.to_owned()];
        for a in QUICK_AXES {
            spec.axes.push(explore::parse_axis(a)?);
        }
    }
    if !args.workloads.is_empty() {
        spec.workloads.clone_from(&args.workloads);
    }
    if !args.machines.is_empty() {
        spec.machines.clone_from(&args.machines);
    }
    if !args.presets.is_empty() {
        spec.presets.clone_from(&args.presets);
    }
    if spec.presets.is_empty() {
        spec.presets = vec!["modern".into()];
    }
    if !args.params.is_empty() {
        spec.params.clone_from(&args.params);
    }
    let mut given: Vec<String> = Vec::new();
    for text in &args.axes {
        let axis = explore::parse_axis(text)?;
        if given.contains(&axis.key) {
            bail!("--axis {}: given twice; give all its values in one --axis", axis.key);
        }
        given.push(axis.key.clone());
        match spec.axes.iter_mut().find(|a| a.key == axis.key) {
            Some(a) => *a = axis,
            None => spec.axes.push(axis),
        }
    }
    if args.no_references {
        spec.references = false;
    }
    Ok((spec, args.iterations.or(file_iterations).unwrap_or(1)))
}

/// The grid, one line each, for the report.
fn grid_lines(spec: &GridSpec, iterations: u32, scale: f64) -> Vec<String> {
    let or_default = |v: &[String], d: &str| if v.is_empty() { d.to_owned() } else { v.join(", ") };
    let mut out = vec![
        format!("workloads: {}", spec.workloads.join(", ")),
        format!("machines: {}", or_default(&spec.machines, "each workload's own")),
        format!("base presets: {}", spec.presets.join(", ")),
    ];
    for a in &spec.axes {
        let v: Vec<String> = a.values.iter().map(explore::value_text).collect();
        out.push(format!("axis {}: {}", a.key, v.join(", ")));
    }
    out.push(format!(
        "{iterations} seed(s) per point, scale {scale}; reference points: {}",
        if spec.references { "the merged built-in presets" } else { "the base presets only" }
    ));
    if !spec.params.is_empty() {
        out.push(format!("parameters: {}", spec.params.join(" ")));
    }
    out
}

/// `explore merge`: check the shards, put their rows in the grid's order, write them, show
/// the front.
fn merge(args: &MergeArgs) -> Result<()> {
    crate::output::check_writable(&args.out, "the merged rows file")?;
    crate::output::check_optional(args.view.report.as_deref(), "the report")?;
    let mut files = Vec::new();
    for path in &args.files {
        files.push((path.display().to_string(), results::load(path)?));
    }
    let (rows, tag0) = explore::merge_rows(files)?;
    results::write(&args.out, &rows)?;
    if !args.json {
        eprintln!(
            "{} rows of {} shard file(s) merged into {}",
            rows.len(),
            args.files.len(),
            args.out.display()
        );
    }
    let what = format!("grid {}: {} points (merged)", tag0.grid, tag0.points);
    show(&rows, &args.view, args.json, &what, &[])
}

/// The columns of the table besides the objective and the memory.
const TABLE_METRICS: &[&str] = &["zone_lock_pct", "pcp_peak_mib", PCP_MEAN, "free_high"];

/// Print the table (or the JSON document), write the plots and the page.
fn show(rows: &[Row], view: &View, json: bool, what: &str, grid: &[String]) -> Result<()> {
    let groups = groups(summarize(rows), view.objective.as_deref(), &view.memory)?;
    let mut svgs = Vec::new();
    for g in &groups {
        svgs.push((format!("pareto-{}-{}", g.workload, g.machine), chart(g)));
    }
    if let Some(dir) = &view.plots {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for (stem, svg) in &svgs {
            let path = dir.join(format!("{stem}.svg"));
            std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
            if !json {
                eprintln!("plot written to {}", path.display());
            }
        }
    }
    let text = table(&groups, what);
    if let Some(path) = &view.report {
        let svg: Vec<&str> = svgs.iter().map(|(_, s)| s.as_str()).collect();
        let html = crate::report::explore_page(what, grid, &text, &svg);
        std::fs::write(path, html).with_context(|| format!("writing {}", path.display()))?;
        if !json {
            eprintln!("report written to {}", path.display());
        }
    }
    if json {
        let doc: Vec<_> = groups.iter().map(group_json).collect();
        println!("{}", serde_json::to_string_pretty(&json!({"what": what, "groups": doc}))?);
    } else {
        print!("{text}");
    }
    Ok(())
}

/// A group as JSON: its axes of the trade-off and every point, on the front or not.
fn group_json(g: &Group) -> serde_json::Value {
    let points: Vec<_> = g
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let m: serde_json::Map<_, _> =
                p.metrics.iter().map(|(n, _, _, v)| (n.clone(), json!(v))).collect();
            json!({
                "point": p.point,
                "label": p.label,
                "marks": p.marks,
                "pareto": g.front.contains(&i),
                "metrics": m,
            })
        })
        .collect();
    json!({
        "workload": g.workload,
        "machine": g.machine,
        "objective": {"metric": g.objective.0, "unit": g.objective.1, "better": g.objective.2},
        "memory": {"metric": g.memory.0, "unit": g.memory.1},
        "points": points,
    })
}

/// The text table: per group, every point sorted by memory held (then objective, then
/// index), `*` on the front, the marks at the end.
fn table(groups: &[Group], what: &str) -> String {
    let mut out = format!("explore, {what}\n");
    for g in groups {
        let (obj, unit, better) = &g.objective;
        let way = if better.higher() { "higher" } else { "lower" };
        let _ = writeln!(
            out,
            "\n{} on {}: {} points, {} on the Pareto front of {} ({unit}, {way} is better) \
             against {} ({})",
            g.workload,
            g.machine,
            g.points.len(),
            g.front.len(),
            obj,
            g.memory.0,
            g.memory.1
        );
        let mut cols: Vec<&str> = vec![obj.as_str()];
        for c in TABLE_METRICS {
            if !cols.contains(c) {
                cols.push(c);
            }
        }
        let width = g.points.iter().map(|p| p.label.len()).max().unwrap_or(5).max(5);
        let _ = write!(out, "  {:>5} {:<width$}", "point", "preset");
        for c in &cols {
            let _ = write!(out, " {:>14}", c);
        }
        let _ = writeln!(out, "  marks");
        let mut order: Vec<usize> = (0..g.points.len()).collect();
        let key = |i: usize| (g.points[i].get(&g.memory.0), g.points[i].get(obj));
        order.sort_by(|&a, &b| {
            let (ka, kb) = (key(a), key(b));
            ka.0.total_cmp(&kb.0).then(ka.1.total_cmp(&kb.1)).then(a.cmp(&b))
        });
        for i in order {
            let p = &g.points[i];
            let star = if g.front.contains(&i) { '*' } else { ' ' };
            let _ = write!(out, "{star} {:>5} {:<width$}", p.point, p.label);
            for c in &cols {
                let _ = write!(out, " {:>14}", num(p.get(c)));
            }
            let _ = writeln!(out, "  {}", p.marks.join(", "));
        }
    }
    out.push_str(
        "\n* = on the Pareto front: no other point of its workload and machine holds less \
         pageset memory with an objective at least as good, or as little with a better one.\n",
    );
    out
}

/// A table cell: 3 significant decimals for small values, fewer for large ones.
fn num(v: f64) -> String {
    if !v.is_finite() {
        "—".into()
    } else if v.abs() >= 1e5 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

/// The group's Pareto SVG.
fn chart(g: &Group) -> String {
    let dots: Vec<Dot> = g
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let is_default = p.marks.iter().any(|m| m == DEFAULT_MARK);
            let named: Vec<&str> =
                p.marks.iter().filter(|m| *m != DEFAULT_MARK).map(String::as_str).collect();
            let mark = match (is_default, named.is_empty()) {
                (false, true) => None,
                (true, true) => Some(format!("{} (default)", base_of(&p.label))),
                (true, false) => Some(format!("{} (default)", named.join(" = "))),
                (false, false) => Some(named.join(" = ")),
            };
            Dot {
                x: p.get(&g.memory.0),
                y: p.get(&g.objective.0),
                kind: if g.front.contains(&i) { DotKind::Front } else { DotKind::Grid },
                mark,
                is_default,
            }
        })
        .collect();
    let (obj, unit, better) = &g.objective;
    let way = if better.higher() { "higher" } else { "lower" };
    crate::plot::pareto_chart(
        &format!("{} on {}: Pareto front", g.workload, g.machine),
        &format!("{} ({}), lower is better", g.memory.0, g.memory.1),
        &format!("{obj} ({unit}), {way} is better"),
        &dots,
    )
}

/// The base preset of a point's label (`modern pcp_batch_scale_max=3` → `modern`).
fn base_of(label: &str) -> &str {
    label.split(' ').next().unwrap_or(label)
}

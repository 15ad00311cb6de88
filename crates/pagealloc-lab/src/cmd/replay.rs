//! `pagealloc replay TRACE`: a kernel's page-allocator trace replayed through the model on
//! the trace's CPUs; what the kernel did beside what our allocator did for the same stream.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use pagealloc::types::NR_PAGE_ORDERS;
use serde_json::json;

use crate::input;
use crate::machine::{fmt_bytes, Machine};
use crate::metrics;
use crate::model::cost::CostProfile;
use crate::model::Serial;
use crate::preset_file::resolve;
use crate::runs::{self, ProcView};
use crate::trace::replay::{fit_machine, Plan, Replay};
use crate::trace::{self, EventCounts, Format, Kind, Tally};

/// Arguments of `pagealloc replay`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The trace: the text of the ftrace `trace` file, `trace-cmd report` or `perf script`
    /// (`-` for standard input).
    pub trace: PathBuf,
    /// Which tool printed it.
    #[arg(long, value_enum, default_value = "auto")]
    pub format: Format,
    /// Policy preset: a built-in name or a preset file (.toml).
    #[arg(long, default_value = "modern", value_name = "NAME_OR_FILE")]
    pub preset: String,
    /// Machine: a built-in name or a machine file (.toml). Default: one fitted to the trace
    /// (CPUs = highest CPU + 1; memory as the rule in docs/real-data.md says).
    #[arg(long, value_name = "NAME_OR_FILE")]
    pub machine: Option<String>,
    /// Seed of the model's generators.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A cost profile written by `pagealloc calibrate` instead of the shipped one.
    #[arg(long, value_name = "FILE")]
    pub cost: Option<PathBuf>,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// Render /proc views of the final state (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "VIEWS")]
    pub show: Vec<ProcView>,
    /// The kernel layout of the views.
    #[command(flatten)]
    pub views: runs::ViewArgs,
}

/// Run the command.
pub fn run(args: &Args) -> Result<()> {
    let started = Instant::now();
    let label = input::label(&args.trace);
    let tr = trace::read(&args.trace, args.format)?;
    let plan = Plan::new(&tr).map_err(|e| anyhow!("{label}:{}: {e}", e.line()))?;
    let warning = tr.jump_back.map(|j| {
        let more = if tr.jumps_back > 1 {
            format!("; {} stamps in all are over 1 s behind their CPU's latest", tr.jumps_back)
        } else {
            String::new()
        };
        format!("{label}:{}: {j}{more}", j.line)
    });
    if let Some(w) = &warning {
        eprintln!("warning: {w}");
    }
    let machine = match &args.machine {
        Some(m) => Machine::resolve(m)?,
        None => fit_machine(&plan).with_context(|| label.clone())?,
    };
    if plan.max_cpu >= machine.nr_cpus() {
        bail!(
            "{}: the trace has events on CPU {}, but machine `{}` has {} CPUs (0–{}); give a \
             machine with at least {} CPUs (`pagealloc machines --toml` prints one to start \
             from), or leave --machine out to fit one to the trace",
            label,
            plan.max_cpu,
            machine.name,
            machine.nr_cpus(),
            machine.nr_cpus() - 1,
            plan.max_cpu + 1
        );
    }
    let preset = resolve(&args.preset)?;
    let cost = match &args.cost {
        Some(p) => CostProfile::load(p)?,
        None => CostProfile::default_profile(),
    };
    let mut model = runs::build_model(&machine, &preset, &cost, args.seed, false)?;
    let ours = Arc::new(Mutex::new(EventCounts::default()));
    let tally_side = Arc::clone(&ours);
    model.allocator().events().observe(Box::new(move |_, e| {
        tally_side.lock().expect("no panics while held").add(e);
    }));
    let mut w = Serial::new(Replay::new(&plan));
    let outcome = model.run(&mut w, &mut |_| {})?;
    let views = runs::render_views(model.allocator(), &args.show, args.views.layout());
    let ours = *ours.lock().expect("no panics while held");
    let mut tally = tr.tally.clone();
    tally.merge(&plan.tally);
    tally.merge(w.into_inner().tally());
    let metrics = metrics::of_outcome("replay", &outcome);
    let wall_s = started.elapsed().as_secs_f64();

    if args.json {
        let metrics: serde_json::Map<_, _> = metrics
            .iter()
            .map(|m| {
                (m.name.clone(), json!({"value": m.value, "unit": m.unit, "better": m.better}))
            })
            .collect();
        let views: serde_json::Map<_, _> =
            views.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        let kinds = tally.to_json();
        let doc = json!({
            "trace": args.trace,
            "format": tr.format.name(),
            "detected": tr.detected,
            "lines": tr.lines,
            "events": tr.events.len(),
            "cpus": plan.max_cpu + 1,
            "duration_s": plan.duration_ns as f64 / 1e9,
            "lost_events": tr.lost_events,
            "machine": machine.name,
            "machine_cpus": machine.nr_cpus(),
            "memory_bytes": machine.memory_bytes(),
            "preset": args.preset,
            "seed": args.seed,
            "skipped": kinds["skipped"],
            "repaired": kinds["repaired"],
            "unknown_gfp": tr.unknown_gfp,
            "other_events": tr.other_events,
            "replayed_steps": plan.nr_steps(),
            "counts": {"kernel": plan.kernel.to_json(), "ours": ours.to_json()},
            "not_traced": not_traced(&plan.kernel),
            "warnings": warning.iter().collect::<Vec<_>>(),
            "metrics": metrics,
            "views": views,
            "timing": {"wall_s": wall_s},
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    println!(
        "trace: {} ({}, {}), {} lines, {} page events on {} CPU(s) over {:.3} s",
        args.trace.display(),
        tr.format.name(),
        tr.detected,
        tr.lines,
        tr.events.len(),
        plan.max_cpu + 1,
        plan.duration_ns as f64 / 1e9
    );
    if let Some(w) = &warning {
        println!("warning: {w}");
    }
    println!(
        "machine: {} ({} CPUs, {}), preset {}, seed {}",
        machine.name,
        machine.nr_cpus(),
        fmt_bytes(machine.memory_bytes()),
        args.preset,
        args.seed
    );
    if args.machine.is_none() {
        for a in &machine.assumptions {
            println!("  fitted: {a}");
        }
    }
    print!("{}", tally_text(&tally, &tr.unknown_gfp, tr.lost_events));
    println!();
    print!("{}", counts_text(&plan.kernel, &ours));
    println!();
    for m in &metrics {
        println!("  {:<24} {:>16.3} {:<7} {}", m.name, m.value, m.unit, m.doc);
    }
    println!();
    println!(
        "model: {} allocations and frees replayed, {} scheduler steps in {:.2} s wall",
        plan.nr_steps(),
        outcome.steps,
        wall_s
    );
    for (name, text) in &views {
        println!("\n{}:\n{text}", runs::view_path(name));
    }
    Ok(())
}

/// The skipped and repaired counts as text.
fn tally_text(
    t: &Tally,
    unknown_gfp: &std::collections::BTreeMap<String, u64>,
    lost: u64,
) -> String {
    let mut out = String::new();
    for (skip, head) in [(true, "not used"), (false, "repaired, then used")] {
        let rows: Vec<(Kind, u64)> = t.iter().filter(|(k, _)| k.is_skip() == skip).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{head}:");
        for (k, n) in rows {
            let _ = writeln!(out, "  {:<20} {:>10}  {}", k.name(), n, k.what());
        }
    }
    if lost > 0 {
        let _ = writeln!(out, "  the trace reports {lost} event(s) lost to ring-buffer overflow");
    }
    if !unknown_gfp.is_empty() {
        let names: Vec<String> = unknown_gfp.iter().map(|(n, c)| format!("{n} ×{c}")).collect();
        let _ = writeln!(out, "unknown GFP names: {}", names.join(", "));
    }
    out
}

/// The kernel's event kinds of which the trace has not one event, by their JSON key: not
/// recorded (the tracepoint was not enabled), or none happened — the trace cannot say which.
fn not_traced(k: &EventCounts) -> Vec<&'static str> {
    let mut v = Vec::new();
    if k.allocs() + k.alloc_failed == 0 {
        v.extend(["alloc", "alloc_failed"]);
    }
    if k.frees() == 0 {
        v.extend(["free", "free_batched"]);
    }
    for (n, key) in
        [(k.pcpu_drain, "pcpu_drain"), (k.zone_locked, "zone_locked"), (k.extfrag, "extfrag")]
    {
        if n == 0 {
            v.push(key);
        }
    }
    v
}

/// The kernel's counts beside ours; `–` for the kernel's where the trace has no event of the
/// kind (a 0 there read as "the kernel never drained" where the event was not recorded).
fn counts_text(k: &EventCounts, o: &EventCounts) -> String {
    let missing = not_traced(k);
    let mut out = String::new();
    let _ = writeln!(out, "  {:<32} {:>14} {:>14}", "", "kernel (trace)", "ours (model)");
    let mut row = |name: &str, key: &str, a: u64, b: u64| {
        let a = if missing.contains(&key) { "–".to_owned() } else { a.to_string() };
        let _ = writeln!(out, "  {name:<32} {a:>14} {b:>14}");
    };
    row("allocations", "alloc", k.allocs(), o.allocs());
    for ord in 0..NR_PAGE_ORDERS {
        if k.alloc[ord] + o.alloc[ord] > 0 {
            row(&format!("  order {ord}"), "alloc", k.alloc[ord], o.alloc[ord]);
        }
    }
    row("failed allocations", "alloc_failed", k.alloc_failed, o.alloc_failed);
    let (kf, of) = (k.frees_by_order(), o.frees_by_order());
    row("frees (ours: + held at the end)", "free", k.frees(), o.frees());
    for ord in 0..NR_PAGE_ORDERS {
        if kf[ord] + of[ord] > 0 {
            row(&format!("  order {ord}"), "free", kf[ord], of[ord]);
        }
    }
    row("pageset drains (pcpu_drain)", "pcpu_drain", k.pcpu_drain, o.pcpu_drain);
    row("  pages drained", "pcpu_drain", k.pcpu_drain_pages, o.pcpu_drain_pages);
    row("zone-locked takes", "zone_locked", k.zone_locked, o.zone_locked);
    row("  percpu_refill", "zone_locked", k.zone_locked_refill, o.zone_locked_refill);
    row("  pages", "zone_locked", k.zone_locked_pages, o.zone_locked_pages);
    row("extfrag fallbacks", "extfrag", k.extfrag, o.extfrag);
    row("  fragmenting", "extfrag", k.extfrag_fragmenting, o.extfrag_fragmenting);
    row("  change_ownership", "extfrag", k.extfrag_change_ownership, o.extfrag_change_ownership);
    if !missing.is_empty() {
        let _ = writeln!(
            out,
            "  – the trace has no event of this kind: not recorded (tracepoint not enabled), or \
             none happened"
        );
    }
    out
}

//! Runs as jobs: a [`RunSpec`] says what to run and on which [`Runner`], [`execute`] runs it
//! and returns its metrics and rows, [`execute_all`] runs many on the machine's cores with a
//! progress bar. `run`, `compare` and `reproduce` all go through here.

use std::collections::BTreeMap;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use crate::kversion::KernelVersion;
use crate::machine::hierarchy::{Hierarchy, Level};
use crate::machine::Machine;
use crate::metrics::{self, Metric};
use crate::mmtests::Better;
use crate::model::cost::CostProfile;
use crate::model::real::{RealRunner, RealSetup};
use crate::model::sink::ModelSink;
use crate::model::{Model, ModelSetup, RunOutcome, Teardown, Topology};
use crate::preset_file::ResolvedPreset;
use crate::procfs;
use crate::results::Row;
use crate::trace::write::FtraceWriter;
use crate::workload::{Params, WorkloadInfo};

/// Which runner executes a [`RunSpec`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Runner {
    /// The deterministic model of the spec's machine ([`Model`]).
    #[default]
    Model,
    /// OS threads on real memory ([`RealRunner`]); the spec's machine is this host
    /// ([`Machine::host`]). `pin`: pin each thread to a host CPU.
    Real {
        /// Pin thread `c` to host CPU `c % host CPUs`.
        pin: bool,
    },
}

impl Runner {
    /// The name result rows carry.
    pub fn name(self) -> &'static str {
        match self {
            Runner::Model => "model",
            Runner::Real { .. } => "real",
        }
    }
}

/// One run to make.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// The runner.
    pub runner: Runner,
    /// The workload.
    pub workload: &'static WorkloadInfo,
    /// Its parameters (overrides and scale already applied).
    pub params: Params,
    /// The policy and tunables.
    pub preset: ResolvedPreset,
    /// The name the preset was given by (a built-in name or a file path).
    pub preset_name: String,
    /// The machine.
    pub machine: Machine,
    /// The seed.
    pub seed: u64,
    /// Which sample this is.
    pub sample: u32,
    /// Costs.
    pub cost: CostProfile,
    /// Count allocations per frame (for the most-used-frames table).
    pub count_frames: bool,
    /// Seed table this run serves, if any.
    pub table: Option<String>,
    /// `/proc` views of the final state to render.
    pub show: Vec<ProcView>,
    /// The kernel layout they are rendered in (`--kernel`, `--kernel-config`).
    pub layout: procfs::ProcLayout,
    /// Write the run's trace events here, in the ftrace format (`run --trace`).
    pub trace: Option<PathBuf>,
}

/// `n` samples of one configuration on the model, seeds `seed`, `seed + 1`, …, nothing
/// recorded beyond the metrics (no frame counts, table, views or trace): the runs of one
/// preset in `compare` and of one point in `explore`.
pub fn model_samples<'a>(
    workload: &'static WorkloadInfo,
    params: &'a Params,
    preset: &'a ResolvedPreset,
    machine: &'a Machine,
    cost: &'a CostProfile,
    seed: u64,
    n: u32,
) -> impl Iterator<Item = RunSpec> + 'a {
    (0..n).map(move |i| RunSpec {
        runner: Runner::Model,
        workload,
        params: params.clone(),
        preset: preset.clone(),
        preset_name: preset.name.clone(),
        machine: machine.clone(),
        seed: seed.wrapping_add(u64::from(i)),
        sample: i,
        cost: cost.clone(),
        count_frames: false,
        table: None,
        show: Vec::new(),
        layout: procfs::ProcLayout::default(),
        trace: None,
    })
}

/// A `/proc` file the lab can render from a model's state, in the kernel's byte layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProcView {
    /// `/proc/buddyinfo`.
    Buddyinfo,
    /// `/proc/pagetypeinfo`.
    Pagetypeinfo,
    /// `/proc/zoneinfo`.
    Zoneinfo,
    /// `/proc/vmstat` (the allocator's counters).
    Vmstat,
    /// debugfs `extfrag/extfrag_index`: the fragmentation index per zone and order.
    ExtfragIndex,
    /// debugfs `extfrag/unusable_index`: the unusable free space index per zone and order.
    UnusableIndex,
}

impl ProcView {
    /// The file's name (the key of its text in `--json` output).
    pub fn name(self) -> &'static str {
        match self {
            ProcView::Buddyinfo => "buddyinfo",
            ProcView::Pagetypeinfo => "pagetypeinfo",
            ProcView::Zoneinfo => "zoneinfo",
            ProcView::Vmstat => "vmstat",
            ProcView::ExtfragIndex => "extfrag_index",
            ProcView::UnusableIndex => "unusable_index",
        }
    }

    /// The file's path on a kernel, for text output.
    pub fn path(self) -> &'static str {
        match self {
            ProcView::Buddyinfo => "/proc/buddyinfo",
            ProcView::Pagetypeinfo => "/proc/pagetypeinfo",
            ProcView::Zoneinfo => "/proc/zoneinfo",
            ProcView::Vmstat => "/proc/vmstat",
            ProcView::ExtfragIndex => "/sys/kernel/debug/extfrag/extfrag_index",
            ProcView::UnusableIndex => "/sys/kernel/debug/extfrag/unusable_index",
        }
    }
}

/// A finished run.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// The metrics.
    pub metrics: Vec<Metric>,
    /// The runner's full outcome (series for plots, most used frames…).
    pub outcome: RunOutcome,
    /// Wall-clock seconds, building the machine and checking it at the end included.
    pub wall_s: f64,
    /// Wall-clock seconds of the workload's run alone (the scheduler's loop, the final
    /// give-back and check of every page included; building the allocator excluded).
    pub run_s: f64,
    /// The `/proc` views asked for, rendered from the final state: (name, text).
    pub views: Vec<(&'static str, String)>,
    /// Events written to the spec's trace file.
    pub trace_events: u64,
}

/// Where each of the machine's CPUs sits and what its hierarchy charges, for the model.
///
/// # Errors
/// The machine has no memory hierarchy, or a node with CPUs has no L2 (the model's private
/// cache).
pub fn topology(m: &Machine) -> Result<Topology> {
    let n = m.nr_cpus();
    let (cpu_l2, l2_bytes) = m.l2_domains()?;
    let hierarchy = m.hierarchy()?.clone();
    let usable = usable_llc_bytes(&hierarchy);
    Ok(Topology {
        cpu_node: (0..n).map(|c| m.node_of_cpu(c) as u32).collect(),
        cpu_llc: (0..n).map(|c| m.llc_domain(c) as u32).collect(),
        llc_bytes: (0..m.nr_llc_domains()).map(|d| m.llc_bytes_of_domain(d).min(usable)).collect(),
        cpu_l2,
        l2_bytes,
        hierarchy,
        frame_bytes: m.frame_bytes,
    })
}

/// What the model's caches may hold of an LLC: all of it, unless the hierarchy measured a
/// smaller share (`llc_usable_mib`, a virtual machine's), which then caps every LLC domain.
/// Only the model's caches take it; the allocator sizes its pagesets from the LLC the node
/// reports, as a kernel reads it from CPUID.
fn usable_llc_bytes(h: &Hierarchy) -> u64 {
    h.value(Level::LlcUsable).map_or(u64::MAX, |mib| (mib * (1u64 << 20) as f64) as u64)
}

/// Build the model for `spec`.
pub fn build(spec: &RunSpec) -> Result<Model> {
    build_model(&spec.machine, &spec.preset, &spec.cost, spec.seed, spec.count_frames)
}

/// Build the model of `machine` under `preset`: what every model run starts from.
pub fn build_model(
    machine: &Machine,
    preset: &ResolvedPreset,
    cost: &CostProfile,
    seed: u64,
    count_frames: bool,
) -> Result<Model> {
    let setup = ModelSetup {
        map: machine.memory_map()?,
        tunables: machine.tunables(preset.tunables),
        policy: preset.policy,
        topology: topology(machine)?,
        cost: cost.clone(),
        seed,
        cooldown_s: 30,
        count_frames,
        validate: false,
    };
    let model =
        Model::new(setup).with_context(|| format!("building machine `{}`", machine.name))?;
    check_usable(model.allocator(), &machine.name, "give it more memory")?;
    machine.apply_cpu_caches(model.allocator());
    Ok(model)
}

/// Refuse a machine on which no allocation can succeed: every populated zone's free pages at
/// or below its MIN watermark (a machine of a few pages, or a `min_free_kbytes` that takes
/// all memory). Such a run failed every allocation and exited 0 with its metrics. Both
/// runners ask it, each saying how its user gives the machine more memory (`more`).
fn check_usable<E: pagealloc::EventSink>(
    pa: &pagealloc::PageAllocator<E>,
    name: &str,
    more: &str,
) -> Result<()> {
    let zones: Vec<&pagealloc::Zone> = pa.zones().iter().filter(|z| z.is_populated()).collect();
    if zones.iter().any(|z| z.free_pages().0 > z.wmark_pages(0)) {
        return Ok(());
    }
    let detail: Vec<String> = zones
        .iter()
        .map(|z| {
            format!(
                "node {} zone {}: {} free page(s), MIN watermark {}",
                z.node().0,
                z.zone_type().name(),
                z.free_pages().0,
                z.wmark_pages(0)
            )
        })
        .collect();
    anyhow::bail!(
        "machine `{name}` cannot grant a single page: no zone has free pages above its MIN \
         watermark ({}; min_free_kbytes {} KiB); {more} or a lower min_free_kbytes",
        if detail.is_empty() { "no populated zone".to_owned() } else { detail.join("; ") },
        pa.min_free_kbytes()
    )
}

/// `--kernel` and `--kernel-config`, shared by the commands that print `--show` views.
#[derive(Clone, Debug, clap::Args)]
pub struct ViewArgs {
    /// With --show: print the views as this kernel printed them: MAJOR.MINOR[.PATCH] (4.3,
    /// 5.15, v6.1, or `uname -r` output), 3.2 or later. The version → layout table is in
    /// docs/real-data.md.
    #[arg(long, value_name = "VERSION", default_value_t = procfs::ProcLayout::DEFAULT_KERNEL)]
    pub kernel: KernelVersion,
    /// With --show: build options of that kernel that change the views (comma-separated):
    /// no-cma (CONFIG_CMA off: no CMA column in pagetypeinfo), no-zone-device
    /// (CONFIG_ZONE_DEVICE off: four protection entries in zoneinfo).
    #[arg(long, value_delimiter = ',', value_name = "OPTIONS")]
    pub kernel_config: Vec<KernelConfig>,
}

/// A kernel build option `--kernel-config` turns off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum KernelConfig {
    /// CONFIG_CMA off.
    NoCma,
    /// CONFIG_ZONE_DEVICE off.
    NoZoneDevice,
}

impl ViewArgs {
    /// The layout these options choose.
    pub fn layout(&self) -> procfs::ProcLayout {
        let off = |c| self.kernel_config.contains(&c);
        procfs::ProcLayout::new(
            self.kernel,
            !off(KernelConfig::NoCma),
            !off(KernelConfig::NoZoneDevice),
        )
    }
}

/// The path on a kernel of the view named `name` (as [`ProcView::name`] gives it).
pub fn view_path(name: &str) -> &str {
    <ProcView as clap::ValueEnum>::value_variants()
        .iter()
        .find(|v| v.name() == name)
        .map_or(name, |v| v.path())
}

/// The `/proc` views `show` of an allocator's state: (name, text).
pub fn render_views(
    pa: &pagealloc::PageAllocator<ModelSink>,
    show: &[ProcView],
    layout: procfs::ProcLayout,
) -> Vec<(&'static str, String)> {
    show.iter()
        .map(|v| {
            let text = match v {
                ProcView::Buddyinfo => procfs::buddyinfo(pa),
                ProcView::Pagetypeinfo => procfs::pagetypeinfo(pa, layout),
                ProcView::Zoneinfo => procfs::zoneinfo(pa, layout),
                ProcView::Vmstat => procfs::vmstat(pa),
                ProcView::ExtfragIndex => procfs::extfrag_index(pa),
                ProcView::UnusableIndex => procfs::unusable_index(pa),
            };
            (v.name(), text)
        })
        .collect()
}

/// Run `spec`; `progress` hears its progress (0..=1).
pub fn execute(spec: &RunSpec, progress: &mut dyn FnMut(f64)) -> Result<RunResult> {
    match spec.runner {
        Runner::Model => execute_model(spec, progress),
        Runner::Real { pin } => execute_real(spec, pin, progress),
    }
}

/// Run `spec` on the real runner.
fn execute_real(spec: &RunSpec, pin: bool, progress: &mut dyn FnMut(f64)) -> Result<RunResult> {
    if spec.trace.is_some() {
        anyhow::bail!("--trace records virtual time: it goes with the model runner only");
    }
    let started = Instant::now();
    let setup = RealSetup {
        cpus: spec.machine.nr_cpus(),
        memory_bytes: usize::try_from(spec.machine.memory_bytes())?,
        policy: spec.preset.policy,
        tunables: spec.machine.tunables(spec.preset.tunables),
        seed: spec.seed,
        pin,
        cooldown_s: 30,
        validate: false,
    };
    let mut runner = RealRunner::new(setup)?;
    // The arena's allocator, like the model's, must be able to grant a page: on one that
    // cannot, every workload's allocations failed and the run printed zeros and exited 0.
    check_usable(runner.allocator(), &spec.machine.name, "give it more memory (--memory-mib)")?;
    let mut w = (spec.workload.build)(&spec.params);
    let run_started = Instant::now();
    let outcome = runner.run(w.as_mut(), progress).with_context(|| {
        format!(
            "{} on the real runner ({} CPU threads) with {} (seed {})",
            spec.workload.name,
            spec.machine.nr_cpus(),
            spec.preset_name,
            spec.seed
        )
    })?;
    let run_s = run_started.elapsed().as_secs_f64();
    let views = render_views(runner.allocator(), &spec.show, spec.layout);
    Ok(RunResult {
        metrics: metrics::of_real_outcome(spec.workload.name, &outcome),
        outcome,
        wall_s: started.elapsed().as_secs_f64(),
        run_s,
        views,
        trace_events: 0,
    })
}

/// Run `spec` on the model.
fn execute_model(spec: &RunSpec, progress: &mut dyn FnMut(f64)) -> Result<RunResult> {
    let started = Instant::now();
    let mut model = build(spec)?;
    if spec.show.is_empty() && spec.trace.is_none() {
        // No view reads the allocator after the run and no trace hears its last frees.
        model.set_teardown(Teardown::Retire);
    }
    let writer = match &spec.trace {
        Some(path) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("creating trace file {}", path.display()))?;
            let w = Arc::new(Mutex::new(FtraceWriter::new(BufWriter::new(file))));
            let sink_side = Arc::clone(&w);
            model.allocator().events().observe(Box::new(move |ps, e| {
                sink_side.lock().expect("no panics while held").event(ps, e);
            }));
            Some((path, w))
        }
        None => None,
    };
    let mut w = (spec.workload.build)(&spec.params);
    let run_started = Instant::now();
    let outcome = model.run(w.as_mut(), progress).with_context(|| {
        format!(
            "{} on {} with {} (seed {})",
            spec.workload.name, spec.machine.name, spec.preset_name, spec.seed
        )
    })?;
    let run_s = run_started.elapsed().as_secs_f64();
    let views = render_views(model.allocator(), &spec.show, spec.layout);
    let trace_events = match writer {
        Some((path, w)) => {
            // The model (and the observer's clone) go first, so the writer is ours alone.
            drop(model);
            let w = Arc::try_unwrap(w).map_err(|_| anyhow::anyhow!("trace writer still shared"))?;
            w.into_inner()
                .expect("no panics while held")
                .finish()
                .with_context(|| format!("writing trace file {}", path.display()))?
        }
        None => 0,
    };
    Ok(RunResult {
        metrics: metrics::of_outcome(spec.workload.name, &outcome),
        outcome,
        wall_s: started.elapsed().as_secs_f64(),
        run_s,
        views,
        trace_events,
    })
}

/// The result rows of a finished run: one per metric, then, for sample 0, the time series
/// (pages held by all pagesets per virtual second; count and high of a few CPUs' pagesets).
pub fn rows(spec: &RunSpec, r: &RunResult, revision: &str) -> Vec<Row> {
    let params: BTreeMap<String, f64> =
        spec.params.iter().map(|(k, v)| (k.to_string(), v)).collect();
    let row = |metric: &str, value: f64, unit: &str, better, t, cpu| Row {
        workload: spec.workload.name.to_string(),
        preset: spec.preset_name.clone(),
        runner: spec.runner.name().into(),
        machine: spec.machine.name.clone(),
        seed: spec.seed,
        params: params.clone(),
        metric: metric.to_string(),
        sample: spec.sample,
        value,
        unit: unit.to_string(),
        better,
        table: spec.table.clone(),
        t,
        cpu,
        revision: revision.to_string(),
        wall_s: r.wall_s,
        explore: None,
    };
    let mut out: Vec<Row> =
        r.metrics.iter().map(|m| row(&m.name, m.value, m.unit, m.better, None, None)).collect();
    // Series only for the first sample of each configuration (the plots draw sample 0), and
    // per-CPU series for at most four CPUs: rows stay a few MiB for a full reproduce.
    if spec.sample != 0 {
        return out;
    }
    for &(t, pages) in &r.outcome.pcp_pages {
        let mib = pages as f64 / 256.0;
        out.push(row(SERIES_PCP_MIB, mib, "MiB", Better::Lower, Some(t), None));
    }
    let mut cpus: Vec<u32> = r.outcome.pcp_cpu_samples.iter().map(|s| s.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus.truncate(SERIES_CPUS);
    for s in r.outcome.pcp_cpu_samples.iter().filter(|s| cpus.contains(&s.cpu)) {
        let (t, cpu) = (Some(s.t), Some(s.cpu));
        out.push(row(SERIES_CPU_COUNT, s.count as f64, "pages", Better::Lower, t, cpu));
        out.push(row(SERIES_CPU_HIGH, s.high as f64, "pages", Better::Lower, t, cpu));
    }
    out
}

/// CPUs whose pageset series are saved as rows.
const SERIES_CPUS: usize = 4;

/// Series row: memory held by all pagesets at each virtual second.
pub const SERIES_PCP_MIB: &str = "series:pcp_mib";
/// Series row: pages on one CPU's pagesets at each virtual second.
pub const SERIES_CPU_COUNT: &str = "series:pcp_count";
/// Series row: that CPU's `high` (of the zone where it holds most).
pub const SERIES_CPU_HIGH: &str = "series:pcp_high";

/// Run every spec, two at a time on this machine's cores (each run is single-threaded and
/// deterministic, so the order they run in changes nothing), with progress on stderr unless
/// `quiet`. Results come back in the specs' order.
pub fn execute_all(specs: &[RunSpec], label: &str, quiet: bool) -> Result<Vec<RunResult>> {
    execute_all_with(specs, label, quiet, |_, _| {})
}

/// How often plain progress lines are written when stderr is not a terminal.
const PLAIN_PROGRESS_EVERY_S: u64 = 10;

/// Progress of a batch of runs: a bar on a terminal; plain lines (runs done, runs left, time
/// left) every [`PLAIN_PROGRESS_EVERY_S`] seconds otherwise, so `… | tee out` shows it too.
struct Progress {
    bar: ProgressBar,
    plain: bool,
    label: String,
    started: Instant,
    runs: usize,
    /// (runs done, last plain line's time in whole seconds since the start).
    state: Mutex<(usize, u64)>,
    /// What is known of each run's cost, for the time left.
    eta: Mutex<Eta>,
}

/// The time left of a batch whose runs differ widely in cost (a `reproduce` runs hundreds of
/// one-second runs, then a few dozen of a minute each): each run not finished is expected to
/// take as long as the finished runs of its kind (workload and machine) took on average; if
/// none of its kind has finished, as long as the finished runs of any kind, or as long as the
/// longest-running run of its kind has run so far, whichever is more; a running one, that
/// less the time it has run. The total is shared by the workers.
struct Eta {
    /// Per spec: its kind (index into `kinds`).
    kind_of: Vec<usize>,
    /// Per kind: (seconds of its finished runs, how many).
    kinds: Vec<(f64, u32)>,
    /// Per spec: when it started, until it finishes.
    running: Vec<Option<Instant>>,
    /// Per spec: finished.
    finished: Vec<bool>,
    workers: usize,
}

impl Eta {
    fn new(specs: &[RunSpec], workers: usize) -> Eta {
        let mut names: Vec<(&str, &str)> = Vec::new();
        let kind_of = specs
            .iter()
            .map(|s| {
                let k = (s.workload.name, s.machine.name.as_str());
                names.iter().position(|n| *n == k).unwrap_or_else(|| {
                    names.push(k);
                    names.len() - 1
                })
            })
            .collect();
        Eta {
            kind_of,
            kinds: vec![(0.0, 0); names.len()],
            running: vec![None; specs.len()],
            finished: vec![false; specs.len()],
            workers: workers.max(1),
        }
    }

    fn started(&mut self, i: usize) {
        self.running[i] = Some(Instant::now());
    }

    fn finished(&mut self, i: usize) {
        let secs = self.running[i].take().map_or(0.0, |t| t.elapsed().as_secs_f64());
        self.record(i, secs);
    }

    /// Spec `i` finished after `secs`.
    fn record(&mut self, i: usize, secs: f64) {
        let k = &mut self.kinds[self.kind_of[i]];
        k.0 += secs;
        k.1 += 1;
        self.finished[i] = true;
    }

    /// Seconds left, NaN before any run finished.
    fn left(&self) -> f64 {
        let (all_s, all_n) = self.kinds.iter().fold((0.0, 0), |(s, n), k| (s + k.0, n + k.1));
        if all_n == 0 {
            return f64::NAN;
        }
        let any = all_s / f64::from(all_n);
        let ran = |i: usize| self.running[i].map_or(0.0, |t| t.elapsed().as_secs_f64());
        // Per kind with nothing finished: the longest any of its runs has been running.
        let mut longest = vec![0.0f64; self.kinds.len()];
        for (i, &k) in self.kind_of.iter().enumerate() {
            longest[k] = longest[k].max(ran(i));
        }
        let mut total = 0.0;
        for (i, &k) in self.kind_of.iter().enumerate() {
            if self.finished[i] {
                continue;
            }
            let (s, n) = self.kinds[k];
            let each = if n > 0 { s / f64::from(n) } else { any.max(longest[k]) };
            total += (each - ran(i)).max(0.0);
        }
        total / self.workers as f64
    }
}

impl Progress {
    fn new(label: &str, specs: &[RunSpec], workers: usize, quiet: bool) -> Progress {
        let runs = specs.len();
        use std::io::IsTerminal as _;
        let terminal = std::io::stderr().is_terminal();
        let bar = if quiet || runs == 0 || !terminal {
            ProgressBar::hidden()
        } else {
            let b = ProgressBar::new(runs as u64 * 1000);
            b.set_style(
                ProgressStyle::with_template(
                    "{prefix} [{elapsed_precise}] {wide_bar} ETA {eta_precise} {msg}",
                )
                .expect("a valid template"),
            );
            b.set_prefix(label.to_string());
            b
        };
        Progress {
            bar,
            plain: !quiet && !terminal && runs > 0,
            label: label.to_string(),
            started: Instant::now(),
            runs,
            state: Mutex::new((0, 0)),
            eta: Mutex::new(Eta::new(specs, workers)),
        }
    }

    /// Spec `i` started.
    fn started(&self, i: usize) {
        self.eta.lock().expect("no panics while held").started(i);
    }

    /// Spec `i` finished (`what` names it).
    fn finished(&self, i: usize, what: &str) {
        let mut st = self.state.lock().expect("no panics while held");
        st.0 += 1;
        let done = st.0;
        self.bar.set_message(format!("{done}/{} runs done, last {what}", self.runs));
        let secs = self.started.elapsed().as_secs();
        let mut eta = self.eta.lock().expect("no panics while held");
        eta.finished(i);
        if self.plain && (secs >= st.1 + PLAIN_PROGRESS_EVERY_S || done == self.runs) {
            st.1 = secs;
            let left = eta.left();
            eprintln!(
                "{}: {done}/{} runs done, {} left, {} elapsed, about {} to go (last: {what})",
                self.label,
                self.runs,
                self.runs - done,
                clock(secs as f64),
                clock(left)
            );
        }
    }
}

/// `m:ss` (or `h:mm:ss`).
fn clock(secs: f64) -> String {
    if !secs.is_finite() {
        return "?".into();
    }
    let s = secs.round() as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// [`execute_all`], calling `on_done(i, result)` as each spec finishes (from the worker that
/// ran it), e.g. to print a table as soon as its runs are in.
pub fn execute_all_with<F>(
    specs: &[RunSpec],
    label: &str,
    quiet: bool,
    on_done: F,
) -> Result<Vec<RunResult>>
where
    F: FnMut(usize, &RunResult) + Send,
{
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(specs.len());
    let progress = Progress::new(label, specs, workers.max(1), quiet);
    let bar = &progress.bar;
    let on_done = Mutex::new(on_done);
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Option<Result<RunResult>>>> =
        Mutex::new((0..specs.len()).map(|_| None).collect());
    let partial: Mutex<Vec<u64>> = Mutex::new(vec![0; specs.len()]);
    std::thread::scope(|s| {
        for _ in 0..workers.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(spec) = specs.get(i) else { break };
                let what = format!("{} {} #{}", spec.workload.name, spec.preset_name, spec.sample);
                let mut report = |f: f64| {
                    let mut p = partial.lock().expect("no panics while held");
                    let now = (f.clamp(0.0, 1.0) * 1000.0) as u64;
                    if now > p[i] {
                        bar.inc(now - p[i]);
                        p[i] = now;
                    }
                };
                progress.started(i);
                let r = execute(spec, &mut report);
                report(1.0);
                progress.finished(i, &what);
                if let Ok(r) = &r {
                    (on_done.lock().expect("no panics while held"))(i, r);
                }
                done.lock().expect("no panics while held")[i] = Some(r);
            });
        }
    });
    bar.finish_and_clear();
    done.into_inner()
        .expect("no panics while held")
        .into_iter()
        .map(|r| r.expect("every spec ran"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::hierarchy::Sourced;

    /// A measured share of the LLC caps the model's caches, not what the node reports (which
    /// sizes the allocator's pagesets, as a kernel reads it from CPUID).
    #[test]
    fn a_measured_llc_share_caps_the_models_caches() {
        let mut m = Machine::builtin("lab-2cpu").unwrap();
        let reported = m.nodes[0].llc_bytes;
        assert_eq!(topology(&m).unwrap().llc_bytes, vec![reported]);
        let mut h = m.hierarchy.clone().unwrap();
        h.set(Level::LlcUsable, Sourced::new(4.5, "measured here"));
        m.hierarchy = Some(h.clone());
        assert_eq!(topology(&m).unwrap().llc_bytes, vec![4608 << 10]);
        assert_eq!(m.cache_info(0).llc_slice_bytes, reported / 2, "the node's own LLC");
        // A share above the reported LLC leaves the LLC as it is.
        h.set(Level::LlcUsable, Sourced::new(1e6, "measured here"));
        m.hierarchy = Some(h);
        assert_eq!(topology(&m).unwrap().llc_bytes, vec![reported]);
    }

    #[test]
    fn the_time_left_weighs_each_run_by_its_kind() {
        // Two kinds of two runs each, two workers.
        let mut e = Eta {
            kind_of: vec![0, 0, 1, 1],
            kinds: vec![(0.0, 0); 2],
            running: vec![None; 4],
            finished: vec![false; 4],
            workers: 2,
        };
        assert!(e.left().is_nan(), "nothing to go by yet");
        e.record(0, 1.0);
        // Run 1 as long as run 0; runs 2 and 3 of an unseen kind as long as any.
        assert_eq!(e.left(), (1.0 + 1.0 + 1.0) / 2.0);
        e.record(2, 10.0);
        assert_eq!(e.left(), (1.0 + 10.0) / 2.0);
        e.record(1, 3.0);
        assert_eq!(e.left(), 10.0 / 2.0, "kind 0 done; one run of kind 1 left");
        e.record(3, 10.0);
        assert_eq!(e.left(), 0.0);
    }

    #[test]
    fn an_unseen_kind_is_expected_to_run_at_least_as_long_as_it_has() {
        let mut e = Eta {
            kind_of: vec![0, 1, 1],
            kinds: vec![(0.0, 0); 2],
            running: vec![None; 3],
            finished: vec![false; 3],
            workers: 1,
        };
        e.record(0, 1.0);
        // Run 1 (kind 1) has been running for 50 s: run 2 of its kind will take at least
        // that, not kind 0's one second.
        e.running[1] = Instant::now().checked_sub(std::time::Duration::from_secs(50));
        let left = e.left();
        assert!((49.0..=51.0).contains(&left), "{left}");
    }
}

//! The seeds' workloads as models: one module each, with what it imitates, its parameters
//! and their sources, and its known biases in the module's doc. Parameters come from how the
//! real benchmark behaves (`docs/workloads.md`),
//! never from the seed tables' results.

pub mod hackbench;
pub mod iperf3_nic;
pub mod kbuild;
pub(crate) mod kswapd;
pub mod lmbench_unix;
pub mod lru_file_readonce;
pub(crate) mod memcg;
pub(crate) mod net;
pub mod netperf_sctp;
pub mod netperf_tcp;
pub mod netperf_udp;
pub mod page_fault1;
pub mod page_frag_rx;
pub mod thpfioscale;
pub mod trunc;
pub mod vm_scalability;
pub(crate) mod workingset;

use anyhow::{bail, Result};
use pagealloc_testkit::rng::Rng;

use crate::model::Workload;

/// One parameter of a workload.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    /// Name, as given to `--param NAME=VALUE`.
    pub name: &'static str,
    /// Default value.
    pub default: f64,
    /// Smallest accepted value.
    pub min: f64,
    /// Largest accepted value.
    pub max: f64,
    /// Unit.
    pub unit: &'static str,
    /// What it means.
    pub doc: &'static str,
    /// Where the default comes from ("assumed: …" when no source gives it).
    pub source: &'static str,
    /// Does `--scale` multiply it (the parameters that set the run's volume)?
    pub scaled: bool,
    /// Does it take whole numbers only (a count of files, CPUs, pairs, bytes, a 0/1 switch)?
    /// A fractional value given by hand is refused, and a scaled value is rounded, so the
    /// value printed and saved is the one the workload runs: `files=1.5` used to print 1.5
    /// and run 2.
    pub whole: bool,
}

/// Parameter values, by name, in the order of the workload's specs.
#[derive(Clone, Debug, PartialEq)]
pub struct Params(Vec<(&'static str, f64)>);

impl Params {
    /// The value of `name` (a name the workload declared).
    pub fn get(&self, name: &str) -> f64 {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, v)| v)
            .unwrap_or_else(|| panic!("workload reads undeclared parameter `{name}`"))
    }

    /// `get` of a [whole](ParamSpec::whole) parameter as a count (at least 1; the rounding
    /// only guards against a spec that forgot to say `whole`).
    pub fn count(&self, name: &str) -> u64 {
        (self.get(name).round() as u64).max(1)
    }

    /// Every (name, value).
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, f64)> + '_ {
        self.0.iter().copied()
    }
}

/// A workload the lab knows.
#[derive(Clone, Copy, Debug)]
pub struct WorkloadInfo {
    /// Name, as `pagealloc run NAME` takes it.
    pub name: &'static str,
    /// One line: what it imitates.
    pub summary: &'static str,
    /// Its parameters.
    pub params: &'static [ParamSpec],
    /// The machine its seed table ran on (a built-in machine name).
    pub default_machine: &'static str,
    /// Build one run of it.
    pub build: fn(&Params) -> Box<dyn Workload>,
    /// The parameters that do not fit a machine, each with a value that does
    /// ([`WorkloadInfo::params_for`] applies them to defaults and refuses them in overrides).
    pub fit: fn(&Params, Fit) -> Vec<Fitted>,
}

/// What a workload's parameters must fit: the machine's CPUs and nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fit {
    /// CPUs of the machine.
    pub nr_cpus: u32,
    /// Nodes of the machine.
    pub nr_nodes: u32,
}

impl Fit {
    /// What `m` offers.
    pub fn of(m: &crate::machine::Machine) -> Fit {
        Fit { nr_cpus: m.nr_cpus(), nr_nodes: m.nodes.len() as u32 }
    }
}

/// A parameter value the machine cannot take, with one it can and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Fitted {
    /// The parameter.
    pub name: &'static str,
    /// A value that fits.
    pub value: f64,
    /// Why the other one does not (`"the machine has 2 CPUs"`).
    pub why: String,
}

/// For workloads whose parameters fit any machine.
pub fn fits_any(_: &Params, _: Fit) -> Vec<Fitted> {
    Vec::new()
}

/// `pairs` pairs of busy tasks need two CPUs each: at most half the machine's CPUs.
pub fn fit_pairs(p: &Params, m: Fit) -> Vec<Fitted> {
    let most = u64::from(m.nr_cpus / 2).max(1);
    if p.count("pairs") <= most {
        return Vec::new();
    }
    vec![Fitted {
        name: "pairs",
        value: most as f64,
        why: format!("each pair takes 2 of the machine's {} CPUs", m.nr_cpus),
    }]
}

/// Parameter `name` counts CPUs, or tasks that each need one: at most the machine's CPUs.
pub fn fit_cpus(name: &'static str, p: &Params, m: Fit) -> Vec<Fitted> {
    if p.count(name) <= u64::from(m.nr_cpus) {
        return Vec::new();
    }
    vec![Fitted {
        name,
        value: f64::from(m.nr_cpus.max(1)),
        why: format!("the machine has {} CPU(s)", m.nr_cpus),
    }]
}

/// How many blocks ahead of the one being freed a workload freeing a batch prefetches
/// ([`Ctx::prefetch`](crate::model::Ctx::prefetch)): a speed hint for the model that changes
/// nothing in the run.
pub const PREFETCH_AHEAD: usize = 8;

/// Every workload, by name.
pub const WORKLOADS: &[WorkloadInfo] = &[
    kbuild::INFO,
    netperf_sctp::INFO,
    lmbench_unix::INFO,
    netperf_tcp::INFO,
    page_fault1::INFO,
    trunc::INFO,
    thpfioscale::INFO,
    page_frag_rx::INFO,
    hackbench::INFO,
    netperf_udp::INFO,
    vm_scalability::INFO,
    iperf3_nic::INFO,
];

/// The workload called `name`.
pub fn find(name: &str) -> Result<&'static WorkloadInfo> {
    WORKLOADS.iter().find(|w| w.name == name).ok_or_else(|| {
        let names: Vec<_> = WORKLOADS.iter().map(|w| w.name).collect();
        anyhow::anyhow!(
            "unknown workload `{name}`{}; the workloads are: {}",
            crate::suggest::did_you_mean(name, names.iter().copied()),
            names.join(", ")
        )
    })
}

/// The smallest `--scale`: a thousandth of a workload's volume. Far below it every scaled
/// parameter sits at its minimum anyway, and a scale of 1e-300 printed values like
/// `files=0.000…1` for a run of one file.
pub const MIN_SCALE: f64 = 0.001;
/// The largest `--scale`.
pub const MAX_SCALE: f64 = 1000.0;

/// What `--scale` and the machine did to the values asked for, each as `NAME=VALUE (why)`,
/// for the run's output: the values printed and saved are the ones that run, and these say
/// why they differ from the defaults or from value × scale.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Notes {
    /// Defaults replaced by values that fit the machine (`pairs=1 (default 16: …)`).
    pub fitted: Vec<String>,
    /// Scaled values that run as something other than value × scale: rounded to a whole
    /// number, or raised to the parameter's minimum (`files=2 (10 × 0.15 = 1.5, rounded …)`).
    pub scaled: Vec<String>,
}

impl WorkloadInfo {
    /// The parameters: defaults, then `overrides` (`NAME=VALUE`), then `scale` on the scaled
    /// ones. Unknown names, non-numbers, values out of range and fractions of a
    /// [whole](ParamSpec::whole) parameter are errors naming the parameter and what it
    /// accepts; so is a scaled value above the parameter's range (the range is checked after
    /// scaling: `files=1000` at scale 1000 was a million files). A scaled value is rounded to
    /// a whole number if the parameter takes only those, and raised to the smallest the
    /// workload takes if below its range, so the values returned — the ones printed and
    /// saved — are the ones that run.
    pub fn params(&self, overrides: &[String], scale: f64) -> Result<Params> {
        Ok(self.params_noted(overrides, scale)?.0)
    }

    /// [`params`](Self::params) and a note for each scaled value that is not value × scale
    /// ([`Notes::scaled`]).
    fn params_noted(&self, overrides: &[String], scale: f64) -> Result<(Params, Vec<String>)> {
        if !(scale.is_finite() && (MIN_SCALE..=MAX_SCALE).contains(&scale)) {
            bail!("--scale {}: takes a number from {MIN_SCALE} to {MAX_SCALE}", short(scale));
        }
        let mut values: Vec<(&'static str, f64)> =
            self.params.iter().map(|p| (p.name, p.default)).collect();
        for o in overrides {
            let (spec, x) = self.parse_override(o)?;
            values.iter_mut().find(|(n, _)| *n == spec.name).expect("declared").1 = x;
        }
        let mut notes = Vec::new();
        for (spec, (_, v)) in self.params.iter().zip(values.iter_mut()) {
            if spec.scaled {
                let (x, note) = scaled(spec, *v, scale)?;
                *v = x;
                notes.extend(note);
            }
        }
        Ok((Params(values), notes))
    }

    /// One `NAME=VALUE` override: the parameter it names and its value, checked against the
    /// parameter's range and, for a whole parameter, refused unless whole.
    fn parse_override(&self, o: &str) -> Result<(&'static ParamSpec, f64)> {
        let Some((k, v)) = o.split_once('=') else {
            bail!("--param `{o}`: write NAME=VALUE");
        };
        let (k, v) = (k.trim(), v.trim());
        let Some(spec) = self.params.iter().find(|p| p.name == k) else {
            let names: Vec<_> = self.params.iter().map(|p| p.name).collect();
            bail!(
                "workload `{}` has no parameter `{k}`{}; its parameters are: {}",
                self.name,
                crate::suggest::did_you_mean(k, names.iter().copied()),
                names.join(", ")
            );
        };
        let x: f64 = v.parse().map_err(|_| {
            anyhow::anyhow!("--param {k}={v}: `{v}` is not a number ({})", spec.unit)
        })?;
        if !(x.is_finite() && spec.min <= x && x <= spec.max) {
            bail!(
                "--param {k}={v}: out of range; `{k}` takes {} to {} ({})",
                spec.min,
                spec.max,
                spec.unit
            );
        }
        if spec.whole && x.fract() != 0.0 {
            let near: Vec<String> = [x.floor(), x.ceil()]
                .into_iter()
                .filter(|w| (spec.min..=spec.max).contains(w))
                .map(|w| format!("{k}={w}"))
                .collect();
            bail!(
                "--param {k}={v}: `{k}` takes a whole number ({}); {} does",
                spec.unit,
                near.join(" or ")
            );
        }
        Ok((spec, x))
    }
}

impl Params {
    /// Set `name` (a name the workload declared) to `value`.
    fn set(&mut self, name: &str, value: f64) {
        self.0.iter_mut().find(|(n, _)| *n == name).expect("declared").1 = value;
    }
}

impl WorkloadInfo {
    /// [`params`](Self::params) fitted to a machine: a default the machine cannot take is
    /// replaced by one it can (each change described, `"pairs=1 (default 16: …)"`), and an
    /// override it cannot take is refused with a value that works. The notes say what was
    /// fitted and what `--scale` rounded or raised.
    pub fn params_for(
        &self,
        overrides: &[String],
        scale: f64,
        machine: Fit,
    ) -> Result<(Params, Notes)> {
        let (mut params, scaled) = self.params_noted(overrides, scale)?;
        let given = |name: &str| {
            overrides.iter().any(|o| o.split_once('=').is_some_and(|(k, _)| k.trim() == name))
        };
        let mut fitted = Vec::new();
        // A fit may make room for another (fewer fio jobs, then THP threads): a few rounds.
        for _ in 0..self.params.len() {
            let changes = (self.fit)(&params, machine);
            if changes.is_empty() {
                break;
            }
            for c in changes {
                let was = params.get(c.name);
                if given(c.name) {
                    bail!(
                        "--param {}={was}: does not fit ({}); {}={} does",
                        c.name,
                        c.why,
                        c.name,
                        c.value
                    );
                }
                fitted.push(format!("{}={} (default {was}: {})", c.name, c.value, c.why));
                params.set(c.name, c.value);
            }
        }
        Ok((params, Notes { fitted, scaled }))
    }
}

/// `x` as written by hand: `0.5`, `1000`, and `1e-300` rather than 300 digits.
fn short(x: f64) -> String {
    if x != 0.0 && x.is_finite() && !(1e-4..1e16).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// `x` to 12 significant digits, as [`short`] writes it: a product such as 1792 × 0.1 prints
/// as 179.2, not 179.20000000000002.
fn shown(x: f64) -> String {
    short(format!("{x:.11e}").parse().unwrap_or(x))
}

/// `value` of `spec` times `scale`, rounded to the nearest whole number (halves away from
/// zero) if the parameter takes only those: refused above the parameter's range, raised to
/// its minimum below it. The note says which of the two changed the product, if either did.
fn scaled(spec: &ParamSpec, value: f64, scale: f64) -> Result<(f64, Option<String>)> {
    let exact = value * scale;
    let v = if spec.whole { exact.round() } else { exact };
    if v > spec.max {
        bail!(
            "--scale {scale}: `{}` = {value} × {scale} = {} is above its range, {} to {} ({}); \
             lower --scale or --param {}",
            spec.name,
            shown(exact),
            spec.min,
            spec.max,
            spec.unit,
            spec.name
        );
    }
    let product = format!("{value} × {scale} = {}", shown(exact));
    let note = if v < spec.min {
        Some(format!(
            "{}={} ({product}, below its range: raised to the minimum)",
            spec.name, spec.min
        ))
    } else if (v - exact).abs() > 1e-9 * exact.abs().max(1.0) {
        Some(format!("{}={v} ({product}, rounded to a whole number of {})", spec.name, spec.unit))
    } else {
        None
    };
    Ok((v.max(spec.min), note))
}

/// Nanoseconds to the model's picoseconds.
pub fn ns(x: f64) -> u64 {
    (x * 1000.0).round().max(0.0) as u64
}

/// A member of `set` other than `me`, uniformly (a migration's destination among a node's
/// CPUs or a group's slots). `set` holds `me` once and at least one other member.
pub(crate) fn other_than<T: Copy + PartialEq>(rng: &mut Rng, set: &[T], me: T) -> T {
    debug_assert!(set.len() >= 2 && set.iter().filter(|&&x| x == me).count() == 1);
    // Draw among all but the last; a draw of `me` stands for the last.
    let i = rng.below(set.len() as u64 - 1) as usize;
    if set[i] == me {
        set[set.len() - 1]
    } else {
        set[i]
    }
}

/// Hand-built machines for the workloads' `#[ignore]`d full-size runs, until the machines
/// module ships them.
#[cfg(test)]
pub(crate) mod bigtest {
    use pagealloc::{Counter, MemoryMap, NodeId, Policy, Tunables};

    use crate::model::cost::CostProfile;
    use crate::model::{Model, ModelSetup, RunOutcome, Topology};

    /// `nodes` nodes of `cpus_per_node` CPUs (numbered node by node) and `gib_per_node` GiB
    /// each, one LLC of `llc_kib` KiB per node.
    pub(crate) fn numa_setup(
        nodes: u32,
        cpus_per_node: u32,
        gib_per_node: u64,
        llc_kib: u64,
        preset: &str,
        seed: u64,
    ) -> ModelSetup {
        let mut map = MemoryMap::new();
        for n in 0..nodes {
            let base = u64::from(n) * (gib_per_node << 30);
            map.add_range(NodeId(n), base..base + (gib_per_node << 30))
                .unwrap()
                .set_cpus(NodeId(n), cpus_per_node)
                .unwrap();
        }
        let cpu_node: Vec<u32> =
            (0..nodes).flat_map(|n| std::iter::repeat_n(n, cpus_per_node as usize)).collect();
        ModelSetup {
            map,
            tunables: Tunables::default(),
            policy: Policy::preset(preset).unwrap(),
            topology: Topology::simple(cpu_node, vec![llc_kib << 10; nodes as usize]),
            cost: CostProfile::default_profile(),
            seed,
            cooldown_s: 5,
            count_frames: false,
            validate: false,
        }
    }

    /// Run workload `name` with `params` on `setup` and print one line of what the seeds'
    /// tables report, plus the workload's own metrics.
    pub(crate) fn run_and_print(name: &str, params: &[String], setup: ModelSetup) -> RunOutcome {
        let info = super::find(name).unwrap();
        let p = info.params(params, 1.0).unwrap();
        let mut w = (info.build)(&p);
        let t = std::time::Instant::now();
        let mut m = Model::new(setup).unwrap();
        let built = t.elapsed().as_secs_f64();
        let o = m.run(w.as_mut(), &mut |_| {}).unwrap();
        let e = &o.events;
        println!(
            "  wall {:.1} s (build {built:.1} s), virtual {:.3} s, steps {}, zone lock {:.2}%, \
             lock acquisitions {}, free_high drains {} ({} pages), alloc_zone {} pages in {} \
             refills, high drains {}, pcp peak {} / end {} / final {} pages, cold {:.1}%",
            t.elapsed().as_secs_f64(),
            o.elapsed_ps as f64 / 1e12,
            o.steps,
            o.zone_lock_pct(),
            e.get(Counter::ZoneLockAcquire),
            e.get(Counter::DrainFreeHigh),
            e.get(Counter::DrainFreeHighPages),
            e.get(Counter::PcpRefillPages),
            e.get(Counter::PcpRefill),
            e.get(Counter::DrainHigh),
            o.pcp_peak_pages,
            o.pcp_end_pages,
            o.pcp_final_pages,
            o.cold_touch_pct(),
        );
        println!("  {:?}", o.workload);
        o
    }
}

/// What the workloads' unit tests share: a small run and a metric of it.
#[cfg(test)]
pub(crate) mod testing {
    use pagealloc::{Order, Pfn};

    use crate::model::slab::SlabSetup;
    use crate::model::tests::small_setup;
    use crate::model::{Ctx, Model, ModelInfo, Next, RunOutcome, Workload};

    /// Workload `name` with `params`, then `extra`, on a one-node machine of `cpus` CPUs and
    /// 256 MiB under `preset`.
    pub(crate) fn run(
        name: &str,
        params: &[&str],
        extra: &[&str],
        cpus: u32,
        preset: &str,
        seed: u64,
    ) -> RunOutcome {
        let all: Vec<&str> = params.iter().chain(extra).copied().collect();
        run_as(name, &all, cpus, preset, seed, false)
    }

    /// [`run`], every step through [`Workload::step`] (the real runner's path, which locks
    /// what it shares) instead of the model's [`Workload::step_alone`].
    pub(crate) fn run_locked(
        name: &str,
        params: &[&str],
        cpus: u32,
        preset: &str,
        seed: u64,
    ) -> RunOutcome {
        run_as(name, params, cpus, preset, seed, true)
    }

    /// [`run`] or, if `locked`, [`run_locked`].
    fn run_as(
        name: &str,
        params: &[&str],
        cpus: u32,
        preset: &str,
        seed: u64,
        locked: bool,
    ) -> RunOutcome {
        let info = super::find(name).unwrap();
        let o: Vec<String> = params.iter().map(|s| s.to_string()).collect();
        let mut w = (info.build)(&info.params(&o, 1.0).unwrap());
        if locked {
            w = self::locked(w);
        }
        let mut m = Model::new(small_setup(cpus, 256, preset, seed)).unwrap();
        m.run(w.as_mut(), &mut |_| {}).unwrap()
    }

    /// Workload `name` with `params` on the machine of [`run`] (`cpus` CPUs, 256 MiB,
    /// `modern`), every step through [`Workload::step`] (the real runner's path) and the
    /// schedule skewed ([`Model::skew_schedule`]): CPU `c` stepped as if its clock were
    /// `lead_ps[c]` earlier, with a jitter of up to `jitter_ps` at every step. The
    /// interleavings of real threads, played deterministically.
    pub(crate) fn run_skewed(
        name: &str,
        params: &[&str],
        cpus: u32,
        lead_ps: &[u64],
        jitter_ps: u64,
        seed: u64,
    ) -> anyhow::Result<RunOutcome> {
        let info = super::find(name)?;
        let o: Vec<String> = params.iter().map(|s| s.to_string()).collect();
        let mut w = locked((info.build)(&info.params(&o, 1.0)?));
        let mut m = Model::new(small_setup(cpus, 256, "modern", seed))?;
        m.skew_schedule(lead_ps.to_vec(), jitter_ps, seed);
        m.run(w.as_mut(), &mut |_| {})
    }

    /// `w` with every step through [`Workload::step`], for a workload's own tests on its
    /// own machine.
    pub(crate) fn locked(w: Box<dyn Workload>) -> Box<dyn Workload> {
        Box::new(Locked(w))
    }

    /// A workload whose `step_alone` is the default, [`Workload::step`].
    struct Locked(Box<dyn Workload>);

    impl Workload for Locked {
        fn start(&mut self, info: &ModelInfo) -> anyhow::Result<Vec<u32>> {
            self.0.start(info)
        }
        fn step(&self, ctx: &mut Ctx<'_>) -> anyhow::Result<Next> {
            self.0.step(ctx)
        }
        fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
            self.0.held()
        }
        fn metrics(&self) -> Vec<(String, f64)> {
            self.0.metrics()
        }
        fn progress(&self) -> f64 {
            self.0.progress()
        }
        fn slab_setup(&self) -> SlabSetup {
            self.0.slab_setup()
        }
    }

    /// The workload's metric `name` (which must exist).
    pub(crate) fn metric(o: &RunOutcome, name: &str) -> f64 {
        o.workload.iter().find(|(k, _)| k == name).unwrap().1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `other_than` never returns `me` and reaches every other member about equally often,
    /// wherever `me` sits in the set (the last place is the draw's special case).
    #[test]
    fn other_than_is_uniform_over_the_others() {
        let set = [3u32, 7, 9, 12];
        for &me in &set {
            let mut rng = Rng::new(u64::from(me));
            let mut seen = [0u32; 4];
            for _ in 0..30_000 {
                let x = other_than(&mut rng, &set, me);
                assert_ne!(x, me);
                seen[set.iter().position(|&y| y == x).unwrap()] += 1;
            }
            for (i, &n) in seen.iter().enumerate() {
                if set[i] != me {
                    assert!((9_000..11_000).contains(&n), "me {me}: {seen:?}");
                }
            }
        }
    }

    /// Every workload that runs on real threads ends well — every page and slab object back,
    /// no CPU left blocked — when its CPUs' clocks run apart as real threads' do: each CPU in
    /// turn a few milliseconds ahead of the others (so it reaches the end of the run, or of a
    /// phase, while they are short of it), every step jittered. The model's own order, the
    /// earliest clock first, is only one of the interleavings real threads make; a
    /// netperf-udp receiver that ended before its sender's last datagram (fixed at 17d8e14)
    /// was found on real threads once in a few runs; with the fix undone, this test makes it
    /// at once (CPU 0 ahead). Small runs of each workload, as their own tests make them.
    #[test]
    fn workloads_end_well_when_their_cpus_clocks_run_apart() {
        const MS: u64 = 1_000_000_000;
        let runs: [(&str, &[&str], u32); 12] = [
            ("trunc", &["files=2", "file_mib=4"], 2),
            ("page-fault1", &["processes=2", "mmap_mib=1", "warmup_s=0.001", "window_s=0.004"], 2),
            ("kbuild", &kbuild::tests::SMALL, 3),
            ("netperf-tcp", &["duration_s=0.01"], 2),
            ("netperf-udp", &["duration_s=0.005"], 2),
            ("netperf-sctp-stream-many", &["pairs=1", "duration_s=0.004"], 2),
            ("lmbench-unix", &["pairs=1", "duration_s=0.004"], 2),
            ("page-frag-rx", &["packets=5000", "rx_cpus=1", "tx_cpus=1"], 2),
            ("hackbench", &["groups=1", "fds=2", "loops=200"], 4),
            ("iperf3-nic", &["streams=1", "duration_s=0.002"], 2),
            ("vm-scalability", &["tasks=2", "mem_share=0.05"], 2),
            ("thpfioscale", &["fio_threads=1", "warmup=0.25"], 3),
        ];
        for (name, params, cpus) in runs {
            for ahead in 0..cpus {
                let mut lead = vec![0; cpus as usize];
                lead[ahead as usize] = 3 * MS;
                let r = testing::run_skewed(name, params, cpus, &lead, MS / 50, u64::from(ahead));
                if let Err(e) = r {
                    panic!("{name}, cpu {ahead} ahead by 3 ms: {e:#}");
                }
            }
        }
    }

    #[test]
    fn every_parameter_has_a_sane_spec_and_a_source() {
        for w in WORKLOADS {
            for p in w.params {
                assert!(p.min <= p.default && p.default <= p.max, "{}.{}", w.name, p.name);
                assert!(!p.doc.is_empty() && !p.source.is_empty(), "{}.{}", w.name, p.name);
                assert!(!p.unit.is_empty(), "{}.{}", w.name, p.name);
                let whole = [p.default, p.min, p.max].iter().all(|x| x.fract() == 0.0);
                assert!(!p.whole || whole, "{}.{}: a whole parameter's bounds", w.name, p.name);
            }
            w.params(&[], 1.0).unwrap();
        }
    }

    /// The range is checked after scaling (`files=1000 --scale 1000` ran a million files with
    /// every metric 0), and a value scaled below its range runs, and prints, as the minimum.
    #[test]
    fn scaled_values_stay_in_their_range() {
        let w = find("trunc").unwrap();
        let e = w.params(&["files=1000".into()], 1000.0).unwrap_err().to_string();
        assert!(e.contains("`files` = 1000 × 1000 = 1000000 is above its range, 1 to 1000"), "{e}");
        assert!(e.contains("lower --scale or --param files"), "{e}");
        assert_eq!(w.params(&["files=1000".into()], 1.0).unwrap().get("files"), 1000.0);
        assert_eq!(w.params(&[], MIN_SCALE).unwrap().get("files"), 1.0, "raised to the minimum");
        let fit = Fit { nr_cpus: 2, nr_nodes: 1 };
        let (_, notes) = w.params_for(&[], MIN_SCALE, fit).unwrap();
        assert_eq!(
            notes.scaled,
            ["files=1 (10 × 0.001 = 0.01, below its range: raised to the minimum)"],
            "the raise is said"
        );
        // Every workload runs at the smallest scale; at the largest, those whose scaled
        // parameters cannot grow a thousandfold say which parameter stops it.
        for w in WORKLOADS {
            let p = w.params(&[], MIN_SCALE).unwrap();
            for (spec, (_, v)) in w.params.iter().zip(p.iter()) {
                assert!(spec.min <= v && v <= spec.max, "{}.{}: {v}", w.name, spec.name);
            }
            if let Err(e) = w.params(&[], MAX_SCALE) {
                assert!(e.to_string().contains("is above its range"), "{}: {e}", w.name);
            }
        }
    }

    #[test]
    fn overrides_are_checked_and_scale_applies_to_scaled_parameters() {
        let w = find("trunc").unwrap();
        let p = w.params(&["files=2".into()], 0.5).unwrap();
        assert_eq!(p.get("files"), 1.0, "files is scaled");
        let e = w.params(&["nope=1".into()], 1.0).unwrap_err().to_string();
        assert!(e.contains("no parameter `nope`") && e.contains("files"), "{e}");
        let e = w.params(&["files=x".into()], 1.0).unwrap_err().to_string();
        assert!(e.contains("not a number"), "{e}");
        let e = w.params(&["files=-3".into()], 1.0).unwrap_err().to_string();
        assert!(e.contains("out of range"), "{e}");
        let e = w.params(&["files".into()], 1.0).unwrap_err().to_string();
        assert!(e.contains("NAME=VALUE"), "{e}");
        assert!(w.params(&[], 0.0).is_err());
        assert!(w.params(&[], 1e-300).is_err());
        let e = find("nope").err().unwrap().to_string();
        assert!(e.contains("trunc"), "{e}");
    }

    /// A count given as a fraction is refused with the whole values around it that the
    /// parameter takes (`files=1.5` printed 1.5 and ran 2); a whole number written with a
    /// fraction or an exponent is taken.
    #[test]
    fn whole_parameters_refuse_fractions_naming_values_that_work() {
        let w = find("trunc").unwrap();
        let e = w.params(&["files=1.5".into()], 1.0).unwrap_err().to_string();
        assert_eq!(
            e,
            "--param files=1.5: `files` takes a whole number (files); files=1 or files=2 does"
        );
        let e = w.params(&["files=999.9".into()], 1.0).unwrap_err().to_string();
        assert!(e.ends_with("files=999 or files=1000 does"), "{e}");
        let e = w.params(&["files=1.25".into()], 1.0).unwrap_err().to_string();
        assert!(e.ends_with("files=1 or files=2 does"), "{e}");
        let e = find("page-frag-rx").unwrap().params(&["tx_cpus=0.5".into()], 1.0).unwrap_err();
        assert!(e.to_string().ends_with("tx_cpus=0 or tx_cpus=1 does"), "{e}");
        assert_eq!(w.params(&["files=2.0".into()], 1.0).unwrap().get("files"), 2.0);
        assert_eq!(w.params(&["files=1e2".into()], 1.0).unwrap().get("files"), 100.0);
        // A parameter that is not a count keeps its fractions.
        assert_eq!(w.params(&["file_mib=1.5".into()], 1.0).unwrap().get("file_mib"), 1.5);
        // Every whole parameter of every workload refuses a half between its bounds.
        for w in WORKLOADS {
            for spec in w.params.iter().filter(|p| p.whole) {
                let half = format!("{}={}", spec.name, spec.min + 0.5);
                let e = w.params(std::slice::from_ref(&half), 1.0).unwrap_err().to_string();
                assert!(e.contains("takes a whole number"), "{}: {e}", w.name);
            }
        }
    }

    /// `--scale` rounds a whole parameter to the nearest whole number (halves up) and says so;
    /// the value returned — printed and saved — is the one that runs, never a fraction. A
    /// product that is whole but for floating-point noise (10 × 0.3) is not "rounded".
    #[test]
    fn scaled_whole_parameters_are_rounded_and_the_rounding_is_said() {
        let w = find("trunc").unwrap();
        let fit = Fit { nr_cpus: 2, nr_nodes: 1 };
        let (p, notes) = w.params_for(&[], 0.15, fit).unwrap();
        assert_eq!(p.get("files"), 2.0);
        assert_eq!(notes.scaled, ["files=2 (10 × 0.15 = 1.5, rounded to a whole number of files)"]);
        let (p, notes) = w.params_for(&["files=7".into()], 0.5, fit).unwrap();
        assert_eq!(p.get("files"), 4.0, "3.5 rounds up");
        assert_eq!(notes.scaled, ["files=4 (7 × 0.5 = 3.5, rounded to a whole number of files)"]);
        let (p, notes) = w.params_for(&[], 0.3, fit).unwrap();
        assert_eq!((p.get("files"), notes.scaled.len()), (3.0, 0), "{notes:?}");
        let k = find("kbuild").unwrap();
        let (p, notes) = k.params_for(&[], 0.1, Fit { nr_cpus: 224, nr_nodes: 2 }).unwrap();
        assert_eq!(p.get("jobs"), 179.0);
        assert_eq!(
            notes.scaled,
            ["jobs=179 (1792 × 0.1 = 179.2, rounded to a whole number of jobs)"]
        );
        for w in WORKLOADS {
            for scale in [MIN_SCALE, 0.0123, 0.1, 0.37, 1.5, 7.77] {
                let Ok(p) = w.params(&[], scale) else { continue };
                for (spec, (_, v)) in w.params.iter().zip(p.iter()) {
                    assert!(!spec.whole || v.fract() == 0.0, "{}.{} = {v}", w.name, spec.name);
                }
            }
        }
    }
}

#[cfg(test)]
mod fit_tests {
    use super::*;
    use crate::machine::Machine;

    /// On its own machine every workload runs its defaults: what `reproduce` runs is unchanged.
    #[test]
    fn defaults_fit_each_workloads_own_machine() {
        for w in WORKLOADS {
            let m = Machine::resolve(w.default_machine).unwrap();
            let (p, notes) = w.params_for(&[], 1.0, Fit::of(&m)).unwrap();
            assert_eq!(notes, Notes::default(), "{}", w.name);
            assert_eq!(p, w.params(&[], 1.0).unwrap(), "{}", w.name);
        }
    }

    /// On a two-CPU machine the defaults that do not fit are replaced, each change said, and
    /// the result fits; the same value given by hand is refused with one that works.
    #[test]
    fn small_machines_get_fitted_defaults_and_overrides_a_value_that_works() {
        let two = Fit { nr_cpus: 2, nr_nodes: 1 };
        let cases: &[(&str, &str, f64)] = &[
            ("lmbench-unix", "pairs", 1.0),
            ("netperf-sctp-stream-many", "pairs", 1.0),
            ("kbuild", "mem_node", 0.0),
            ("page-frag-rx", "rx_cpus", 1.0),
        ];
        for &(name, param, want) in cases {
            let w = find(name).unwrap();
            let (p, notes) = w.params_for(&[], 1.0, two).unwrap();
            assert_eq!(p.get(param), want, "{name}");
            assert!(notes
                .fitted
                .iter()
                .any(|n| n.starts_with(&format!("{param}={want} (default "))));
            assert!((w.fit)(&p, two).is_empty(), "{name}: fitted params fit");
            let asked = format!("{param}={}", w.params(&[], 1.0).unwrap().get(param));
            let e =
                format!("{:#}", w.params_for(std::slice::from_ref(&asked), 1.0, two).unwrap_err());
            assert!(e.contains(&format!("--param {asked}: does not fit")), "{e}");
            assert!(e.contains(&format!("{param}={want} does")), "{e}");
        }
        // Fitting that takes more than one round: fewer fio jobs leaves room for THP threads.
        let five = Fit { nr_cpus: 5, nr_nodes: 1 };
        let w = find("thpfioscale").unwrap();
        let (p, notes) = w.params_for(&[], 1.0, five).unwrap();
        assert_eq!(p.get("fio_threads"), 3.0, "{notes:?}");
        assert!((w.fit)(&p, five).is_empty());
        // Given THP threads are kept where they can be.
        let (p, _) = w.params_for(&["thp_threads=2".into()], 1.0, five).unwrap();
        assert_eq!((p.get("fio_threads"), p.get("thp_threads")), (2.0, 2.0));
        // Too small for one of each: left to the workload's own refusal.
        assert!((w.fit)(&w.params(&[], 1.0).unwrap(), two).is_empty());
    }
}

//! The seeds' workloads as models: one module each, with what it imitates, its parameters
//! and their sources, and its known biases in the module's doc. Parameters come from how the
//! real benchmark behaves (`docs/workloads.md`),
//! never from the seed tables' results.

pub mod kbuild;
pub mod lmbench_unix;
pub(crate) mod net;
pub mod netperf_sctp;
pub mod netperf_tcp;
pub mod page_fault1;
pub mod page_frag_rx;
pub mod thpfioscale;
pub mod trunc;

use anyhow::{bail, Result};

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

    /// `get` as a count (rounded, at least 1).
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
];

/// The workload called `name`.
pub fn find(name: &str) -> Result<&'static WorkloadInfo> {
    WORKLOADS.iter().find(|w| w.name == name).ok_or_else(|| {
        let names: Vec<_> = WORKLOADS.iter().map(|w| w.name).collect();
        anyhow::anyhow!("unknown workload `{name}`; the workloads are: {}", names.join(", "))
    })
}

/// The smallest `--scale`: a thousandth of a workload's volume. Far below it every scaled
/// parameter sits at its minimum anyway, and a scale of 1e-300 printed values like
/// `files=0.000…1` for a run of one file.
pub const MIN_SCALE: f64 = 0.001;
/// The largest `--scale`.
pub const MAX_SCALE: f64 = 1000.0;

impl WorkloadInfo {
    /// The parameters: defaults, then `overrides` (`NAME=VALUE`), then `scale` on the scaled
    /// ones. Unknown names, non-numbers and values out of range are errors naming the
    /// parameter and what it accepts; so is a scaled value above the parameter's range (the
    /// range is checked after scaling: `files=1000` at scale 1000 was a million files). A
    /// scaled value below its range is raised to the smallest the workload takes, so the
    /// values returned — the ones printed and saved — are the ones that run.
    pub fn params(&self, overrides: &[String], scale: f64) -> Result<Params> {
        if !(scale.is_finite() && (MIN_SCALE..=MAX_SCALE).contains(&scale)) {
            bail!("--scale {}: takes a number from {MIN_SCALE} to {MAX_SCALE}", short(scale));
        }
        let mut values: Vec<(&'static str, f64)> =
            self.params.iter().map(|p| (p.name, p.default)).collect();
        for o in overrides {
            let Some((k, v)) = o.split_once('=') else {
                bail!("--param `{o}`: write NAME=VALUE");
            };
            let (k, v) = (k.trim(), v.trim());
            let Some(spec) = self.params.iter().find(|p| p.name == k) else {
                let names: Vec<_> = self.params.iter().map(|p| p.name).collect();
                bail!(
                    "workload `{}` has no parameter `{k}`; its parameters are: {}",
                    self.name,
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
            values.iter_mut().find(|(n, _)| *n == k).expect("declared").1 = x;
        }
        for (spec, (_, v)) in self.params.iter().zip(values.iter_mut()) {
            if spec.scaled {
                *v = scaled(spec, *v, scale)?;
            }
        }
        Ok(Params(values))
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
    /// override it cannot take is refused with a value that works.
    pub fn params_for(
        &self,
        overrides: &[String],
        scale: f64,
        machine: Fit,
    ) -> Result<(Params, Vec<String>)> {
        let mut params = self.params(overrides, scale)?;
        let given = |name: &str| {
            overrides.iter().any(|o| o.split_once('=').is_some_and(|(k, _)| k.trim() == name))
        };
        let mut notes = Vec::new();
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
                notes.push(format!("{}={} (default {was}: {})", c.name, c.value, c.why));
                params.set(c.name, c.value);
            }
        }
        Ok((params, notes))
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

/// `value` of `spec` times `scale`: refused above the parameter's range, raised to its
/// minimum below it.
fn scaled(spec: &ParamSpec, value: f64, scale: f64) -> Result<f64> {
    let v = value * scale;
    if v > spec.max {
        bail!(
            "--scale {scale}: `{}` = {value} × {scale} = {v} is above its range, {} to {} ({}); \
             lower --scale or --param {}",
            spec.name,
            spec.min,
            spec.max,
            spec.unit,
            spec.name
        );
    }
    Ok(v.max(spec.min))
}

/// Nanoseconds to the model's picoseconds.
pub fn ns(x: f64) -> u64 {
    (x * 1000.0).round().max(0.0) as u64
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parameter_has_a_sane_spec_and_a_source() {
        for w in WORKLOADS {
            for p in w.params {
                assert!(p.min <= p.default && p.default <= p.max, "{}.{}", w.name, p.name);
                assert!(!p.doc.is_empty() && !p.source.is_empty(), "{}.{}", w.name, p.name);
                assert!(!p.unit.is_empty(), "{}.{}", w.name, p.name);
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
            assert!(notes.is_empty(), "{}: {notes:?}", w.name);
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
            assert!(notes.iter().any(|n| n.starts_with(&format!("{param}={want} (default "))));
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

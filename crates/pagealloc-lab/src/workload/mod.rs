//! The seeds' workloads as models: one module each, with what it imitates, its parameters
//! and their sources, and its known biases in the module's doc. Parameters come from how the
//! real benchmark behaves (`workloads-reference.md` in the project's shared references),
//! never from the seed tables' results.

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
}

/// Every workload, by name.
pub const WORKLOADS: &[WorkloadInfo] = &[trunc::INFO, thpfioscale::INFO];

/// The workload called `name`.
pub fn find(name: &str) -> Result<&'static WorkloadInfo> {
    WORKLOADS.iter().find(|w| w.name == name).ok_or_else(|| {
        let names: Vec<_> = WORKLOADS.iter().map(|w| w.name).collect();
        anyhow::anyhow!("unknown workload `{name}`; the workloads are: {}", names.join(", "))
    })
}

impl WorkloadInfo {
    /// The parameters: defaults, then `overrides` (`NAME=VALUE`), then `scale` on the scaled
    /// ones. Unknown names, non-numbers and values out of range are errors naming the
    /// parameter and what it accepts.
    pub fn params(&self, overrides: &[String], scale: f64) -> Result<Params> {
        if !(scale.is_finite() && scale > 0.0 && scale <= 1000.0) {
            bail!("--scale {scale}: takes a number above 0 and at most 1000");
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
                *v *= scale;
            }
        }
        Ok(Params(values))
    }
}

/// Nanoseconds to the model's picoseconds.
pub fn ns(x: f64) -> u64 {
    (x * 1000.0).round().max(0.0) as u64
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
        let e = find("nope").err().unwrap().to_string();
        assert!(e.contains("trunc"), "{e}");
    }
}

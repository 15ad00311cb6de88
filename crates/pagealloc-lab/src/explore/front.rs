//! A sweep's rows summarised per point (the mean over its seeds, as mmtests summarises) and
//! grouped per (workload, machine) with each group's Pareto front: what `explore` and
//! `explore merge` print, plot and report.

use std::collections::BTreeMap;

use anyhow::Result;

use crate::mmtests::{self, Better};
use crate::results::Row;

/// One point's means over its seeds.
#[derive(Clone, Debug)]
pub struct Summary {
    pub point: u32,
    pub workload: String,
    pub machine: String,
    pub label: String,
    pub marks: Vec<String>,
    /// (metric, unit, better, mean) in the run's metric order.
    pub metrics: Vec<(String, String, Better, f64)>,
}

impl Summary {
    pub fn get(&self, name: &str) -> f64 {
        self.metrics.iter().find(|m| m.0 == name).map_or(f64::NAN, |m| m.3)
    }
}

/// The rows' points, in point order, each metric summarised over the seeds as mmtests does
/// (arithmetic mean, harmonic for rates).
pub fn summarize(rows: &[Row]) -> Vec<Summary> {
    let mut by_point: BTreeMap<u32, Vec<&Row>> = BTreeMap::new();
    for r in rows {
        if let Some(t) = &r.explore {
            by_point.entry(t.point).or_default().push(r);
        }
    }
    by_point
        .into_iter()
        .map(|(point, rs)| {
            let first = rs[0];
            let mut names: Vec<&str> = Vec::new();
            for r in &rs {
                if !names.contains(&r.metric.as_str()) {
                    names.push(&r.metric);
                }
            }
            let metrics = names
                .iter()
                .map(|n| {
                    let of: Vec<&&Row> = rs.iter().filter(|r| r.metric == *n).collect();
                    let v: Vec<f64> = of.iter().map(|r| r.value).collect();
                    let better = of[0].better;
                    let mean = mmtests::summarize(&v, better).map_or(f64::NAN, |s| s.mean);
                    ((*n).to_owned(), of[0].unit.clone(), better, mean)
                })
                .collect();
            Summary {
                point,
                workload: first.workload.clone(),
                machine: first.machine.clone(),
                label: first.preset.clone(),
                marks: first.explore.as_ref().map(|t| t.marks.clone()).unwrap_or_default(),
                metrics,
            }
        })
        .collect()
}

/// One (workload, machine) of the sweep with its front.
#[derive(Debug)]
pub struct Group {
    pub workload: String,
    pub machine: String,
    pub points: Vec<Summary>,
    pub objective: (String, String, Better),
    pub memory: (String, String),
    /// Indices into `points` on the front.
    pub front: Vec<usize>,
}

/// Split the points by (workload, machine), in first-seen order, and find each front.
pub fn groups(sums: Vec<Summary>, objective: Option<&str>, memory: &str) -> Result<Vec<Group>> {
    let mut out: Vec<Group> = Vec::new();
    for s in sums {
        match out.iter_mut().find(|g| g.workload == s.workload && g.machine == s.machine) {
            Some(g) => g.points.push(s),
            None => {
                let pick = |name: &str| {
                    s.metrics.iter().find(|m| m.0 == name).cloned().ok_or_else(|| {
                        let all: Vec<&str> = s.metrics.iter().map(|m| m.0.as_str()).collect();
                        anyhow::anyhow!(
                            "no metric `{name}` in the runs of {}; its metrics are: {}",
                            s.workload,
                            all.join(", ")
                        )
                    })
                };
                let objective = match objective {
                    Some(n) => pick(n)?,
                    None => s
                        .metrics
                        .iter()
                        .find(|m| crate::metrics::is_result(&s.workload, &m.0))
                        .cloned()
                        .map_or_else(|| pick("elapsed_s"), Ok)?,
                };
                let memory = pick(memory)?;
                out.push(Group {
                    workload: s.workload.clone(),
                    machine: s.machine.clone(),
                    objective: (objective.0, objective.1, objective.2),
                    memory: (memory.0, memory.1),
                    points: vec![s],
                    front: Vec::new(),
                });
            }
        }
    }
    for g in &mut out {
        let xy: Vec<(f64, f64)> =
            g.points.iter().map(|p| (p.get(&g.memory.0), p.get(&g.objective.0))).collect();
        g.front = super::pareto::front(&xy, g.objective.2);
    }
    Ok(out)
}

//! A sweep's result rows: the rows of one run of a point (tagged with the grid, without the
//! wall time, so a shard's rows are the same bytes on any host) and the merge of shard files
//! back into the unsharded sweep's rows.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{bail, Result};

use super::PCP_MEAN;
use crate::results::{GridTag, Row};
use crate::runs::{self, RunResult, RunSpec};

/// The rows of one run of a point: every metric of the run (no time series) and the mean
/// pageset memory, tagged with the point, and without the wall time (0), so that the rows are
/// the same bytes in whatever shard and on whatever host they ran.
pub fn point_rows(spec: &RunSpec, r: &RunResult, revision: &str, tag: &GridTag) -> Vec<Row> {
    let mut rows: Vec<Row> = runs::rows(spec, r, revision)
        .into_iter()
        .filter(|x| x.t.is_none() && x.cpu.is_none())
        .collect();
    let mut mean =
        rows.iter().find(|x| x.metric == "pcp_peak_mib").cloned().expect("every run has it");
    mean.metric = PCP_MEAN.into();
    mean.value = pcp_mean_mib(&r.outcome);
    rows.push(mean);
    for x in &mut rows {
        x.wall_s = 0.0;
        x.explore = Some(tag.clone());
    }
    rows
}

/// The mean of the memory held by all pagesets over the run: the samples of the ticks while
/// the workload ran (not the idle cool-down after it) and the count when it ended, MiB.
pub fn pcp_mean_mib(o: &crate::model::RunOutcome) -> f64 {
    let end_s = o.elapsed_ps / 1_000_000_000_000;
    let pages: Vec<u64> = o
        .pcp_pages
        .iter()
        .filter(|(t, _)| u64::from(*t) <= end_s)
        .map(|&(_, p)| p)
        .chain([o.pcp_end_pages])
        .collect();
    pages.iter().sum::<u64>() as f64 / pages.len() as f64 / 256.0
}

/// The rows of a sweep's shard files, checked and put back in the unsharded sweep's order:
/// every row must carry a grid tag, all of one grid (fingerprint, points, seeds), no point
/// given twice and none missing. `files[i]` is (the file's name for errors, its rows); the
/// rows keep their order within one run. Returns the rows and the grid's tag.
pub fn merge_rows(files: Vec<(String, Vec<Row>)>) -> Result<(Vec<Row>, GridTag)> {
    let names: Vec<String> = files.iter().map(|(n, _)| n.clone()).collect();
    let mut all: Vec<(usize, Row)> = Vec::new();
    for (f, (name, rows)) in files.into_iter().enumerate() {
        if rows.is_empty() {
            bail!("{name}: no rows");
        }
        for r in rows {
            if r.explore.is_none() {
                bail!("{name}: a row of `{}` is not from `explore` (no grid tag)", r.workload);
            }
            all.push((f, r));
        }
    }
    let tag0 = all[0].1.explore.clone().expect("checked");
    let mut seen: BTreeMap<(u32, u32, String), usize> = BTreeMap::new();
    for (f, r) in &all {
        let t = r.explore.as_ref().expect("checked");
        if (t.grid.as_str(), t.points, t.samples) != (tag0.grid.as_str(), tag0.points, tag0.samples)
        {
            bail!(
                "{} is a shard of grid {} ({} points × {} seeds), {} one of grid {} ({} × {}): \
                 shards of different sweeps do not merge",
                names[*f],
                t.grid,
                t.points,
                t.samples,
                names[0],
                tag0.grid,
                tag0.points,
                tag0.samples
            );
        }
        if let Some(g) = seen.insert((t.point, r.sample, r.metric.clone()), *f) {
            bail!(
                "point {} (sample {}, {}) is in {} and in {}: a shard given twice, or shards \
                 of different --shard N",
                t.point,
                r.sample,
                r.metric,
                names[g],
                names[*f]
            );
        }
    }
    let have: BTreeSet<(u32, u32)> = seen.keys().map(|(p, s, _)| (*p, *s)).collect();
    let missing: Vec<String> = (0..tag0.points)
        .flat_map(|p| (0..tag0.samples).map(move |s| (p, s)))
        .filter(|k| !have.contains(k))
        .map(|(p, s)| if tag0.samples > 1 { format!("{p} (seed {s})") } else { p.to_string() })
        .collect();
    if !missing.is_empty() {
        let shown: Vec<&str> = missing.iter().take(10).map(String::as_str).collect();
        bail!(
            "{} of grid {}'s {} point runs are missing: {}{}; is a shard's file left out?",
            missing.len(),
            tag0.grid,
            tag0.points * tag0.samples,
            shown.join(", "),
            if missing.len() > shown.len() { ", …" } else { "" }
        );
    }
    let mut rows: Vec<Row> = all.into_iter().map(|(_, r)| r).collect();
    // Stable: within one run the rows keep the order the run wrote them in.
    rows.sort_by_key(|r| (r.explore.as_ref().map_or(0, |t| t.point), r.sample));
    Ok((rows, tag0))
}

//! Charts from saved result rows: memory held by the pagesets over time per preset, a few
//! CPUs' pageset count and `high` over time, and per-preset bars of each metric. `pagealloc
//! plot` writes them as files and the reproduce report inlines them; both only read rows
//! (`results.rs`), so measuring, storing and rendering stay apart.

use std::collections::BTreeMap;

use crate::plot::{self, Bar, Series};
use crate::results::Row;
use crate::runs::{SERIES_CPU_COUNT, SERIES_CPU_HIGH, SERIES_PCP_MIB};

/// A rendered chart: a file stem and its SVG text.
pub type Chart = (String, String);

/// Identity of a group of runs that belong on one chart: workload, machine, table, params.
fn group_key(r: &Row) -> String {
    let params: Vec<String> = r.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(
        "{}|{}|{}|{}",
        r.workload,
        r.machine,
        r.table.as_deref().unwrap_or(""),
        params.join(",")
    )
}

/// A short stable tag for a parameter set (FNV-1a, 32 bits): file names stay short.
fn params_tag(params: &[String]) -> String {
    if params.is_empty() {
        return String::new();
    }
    let h = params
        .join(",")
        .bytes()
        .fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    format!("p{h:08x}")
}

fn stem(parts: &[&str]) -> String {
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.chars()
                .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// Every chart the rows allow, in a stable order.
pub fn charts(rows: &[Row], only: &[String]) -> Vec<Chart> {
    let mut groups: BTreeMap<String, Vec<&Row>> = BTreeMap::new();
    for r in rows {
        groups.entry(group_key(r)).or_default().push(r);
    }
    let mut out = Vec::new();
    for rs in groups.values() {
        let first = rs[0];
        let (w, m, table) = (&first.workload, &first.machine, first.table.as_deref().unwrap_or(""));
        let params: Vec<String> = first.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let tag = params_tag(&params);
        let subtitle = format!("{w} on {m}");
        // Presets in first-seen order (the order they were run: baseline first).
        let mut presets: Vec<&str> = Vec::new();
        for r in rs {
            if !presets.contains(&r.preset.as_str()) {
                presets.push(&r.preset);
            }
        }
        // Memory held by the pagesets over time, sample 0 of each preset.
        let series: Vec<Series> = presets
            .iter()
            .map(|p| Series {
                label: (*p).to_string(),
                points: rs
                    .iter()
                    .filter(|r| r.preset == *p && r.sample == 0 && r.metric == SERIES_PCP_MIB)
                    .filter_map(|r| r.t.map(|t| (f64::from(t), r.value)))
                    .collect(),
                dashed: false,
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        if !series.is_empty() {
            let title = format!("memory held by all pagesets — {subtitle}");
            out.push((
                stem(&["pcp-memory", w, m, table, &tag]),
                plot::line_chart(&title, "virtual seconds", "MiB", &series),
            ));
        }
        // Per-CPU count (solid) and high (dashed) of up to four CPUs, per preset.
        for p in &presets {
            let mut cpus: Vec<u32> = rs
                .iter()
                .filter(|r| r.preset == *p && r.sample == 0 && r.metric == SERIES_CPU_COUNT)
                .filter_map(|r| r.cpu)
                .collect();
            cpus.sort_unstable();
            cpus.dedup();
            cpus.truncate(4);
            let mut series = Vec::new();
            for &c in &cpus {
                for (metric, name, dashed) in
                    [(SERIES_CPU_COUNT, "count", false), (SERIES_CPU_HIGH, "high", true)]
                {
                    let points = rs
                        .iter()
                        .filter(|r| {
                            r.preset == *p
                                && r.sample == 0
                                && r.metric == metric
                                && r.cpu == Some(c)
                        })
                        .filter_map(|r| r.t.map(|t| (f64::from(t), r.value)))
                        .collect();
                    series.push(Series { label: format!("cpu {c} {name}"), points, dashed });
                }
            }
            if !series.is_empty() {
                let title = format!("pageset count and high per CPU — {subtitle}, {p}");
                out.push((
                    stem(&["pcp-cpu", w, m, table, p, &tag]),
                    plot::line_chart(&title, "virtual seconds", "pages", &series),
                ));
            }
        }
        // Bars: mean ± stddev per preset, one chart per metric.
        let mut metrics: Vec<&str> = Vec::new();
        for r in rs {
            if r.t.is_none()
                && !r.metric.starts_with("series:")
                && !metrics.contains(&r.metric.as_str())
            {
                metrics.push(&r.metric);
            }
        }
        for metric in metrics {
            let named = only.iter().any(|o| o == metric);
            if !only.is_empty() && !named {
                continue;
            }
            // A metric that is 0 in every run says nothing as bars, unless asked for.
            if !named && rs.iter().filter(|r| r.metric == metric).all(|r| r.value == 0.0) {
                continue;
            }
            let unit = rs.iter().find(|r| r.metric == metric).map_or("", |r| r.unit.as_str());
            let bars: Vec<Bar> = presets
                .iter()
                .map(|p| {
                    let v: Vec<f64> = rs
                        .iter()
                        .filter(|r| r.preset == *p && r.metric == metric)
                        .map(|r| r.value)
                        .collect();
                    let mean = crate::mmtests::amean(&v);
                    let sd = crate::mmtests::summarize(&v, crate::mmtests::Better::Lower)
                        .map_or(0.0, |s| s.stddev);
                    Bar { label: (*p).to_string(), value: mean, err: sd }
                })
                .collect();
            let title = format!("{metric} — {subtitle}");
            out.push((
                stem(&["bars", w, m, table, metric, &tag]),
                plot::bar_chart(&title, unit, &bars),
            ));
        }
    }
    out
}

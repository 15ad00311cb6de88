//! The policy explorer's grid (`pagealloc explore`): workloads × machines × base presets ×
//! the cartesian product of axes over the switches and tunables a preset file can set, plus
//! the merged built-in presets as reference points; the points in one deterministic order,
//! each with an index and the grid's fingerprint, so that any slice of them (`--shard I/N`)
//! can run as its own process and `explore merge` can put the slices back together.

mod front;
pub mod pareto;
mod rows;

pub use front::{groups, summarize, Group};
pub use rows::{merge_rows, point_rows};

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use pagealloc::policy::{SwitchValue, PRESETS};
use toml::de::{DeTable, DeValue};

use crate::machine::Machine;
use crate::preset_file::{self, in_file_order, kind_of, ResolvedPreset, Source};
use crate::workload::{self, Params, WorkloadInfo};

/// The metric explore adds to each run's: the mean of the pagesets' memory over the run.
pub const PCP_MEAN: &str = "pcp_mean_mib";

/// The mark of the point that is a base preset at the kernel's defaults.
pub const DEFAULT_MARK: &str = "default";

/// One axis of the grid: a switch or tunable and the values it takes, in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Axis {
    /// The switch or tunable key (as in a preset file).
    pub key: String,
    /// Its values.
    pub values: Vec<SwitchValue>,
}

/// What to sweep, before it is expanded into points.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GridSpec {
    /// Workload names.
    pub workloads: Vec<String>,
    /// Machines (names or files); empty: each workload's own machine.
    pub machines: Vec<String>,
    /// Base presets (names or preset files).
    pub presets: Vec<String>,
    /// The axes, in order (the last one varies fastest).
    pub axes: Vec<Axis>,
    /// Workload parameters (`NAME=VALUE`), as `run --param`.
    pub params: Vec<String>,
    /// Also run every merged built-in preset (at the kernel's defaults) as a reference point.
    pub references: bool,
}

/// One point of the grid: a workload on a machine under one resolved preset.
#[derive(Clone, Debug)]
pub struct Point {
    /// The workload.
    pub workload: &'static WorkloadInfo,
    /// The machine.
    pub machine: Machine,
    /// The workload's parameters on it (scale and overrides applied).
    pub params: Params,
    /// The base preset with the point's coordinates applied; its name is the point's label.
    pub preset: ResolvedPreset,
    /// Each axis and its value here (empty for a reference point).
    pub coords: Vec<(String, String)>,
    /// `default` and/or the merged built-in presets this point equals.
    pub marks: Vec<String>,
}

/// An axis value as text, without the quotes [`SwitchValue`]'s `Display` puts on strings
/// (labels and coordinates read `high_decay=off`).
pub fn value_text(v: &SwitchValue) -> String {
    match v {
        SwitchValue::Str(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Parse one `--axis KEY=V1,V2,…`. Values are integers, `true`/`false`, lists `[a, b, …]`
/// (commas inside brackets do not split) or words (switch values, `default`); each is checked
/// with the library's setters, as a preset file's would be.
///
/// # Errors
/// No `=`, no value, a duplicate value, or a key or value the preset files would refuse; the
/// message names the axis.
pub fn parse_axis(text: &str) -> Result<Axis> {
    let Some((key, values)) = text.split_once('=') else {
        bail!("--axis `{text}`: write KEY=V1,V2,… (a switch or tunable and its values)");
    };
    let key = key.trim();
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in values.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&values[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&values[start..]);
    let values: Vec<SwitchValue> = parts
        .iter()
        .map(|p| word_value(p.trim()))
        .collect::<Result<_>>()
        .with_context(|| format!("--axis {key}"))?;
    let axis = Axis { key: key.to_owned(), values };
    check_axis(&axis).with_context(|| format!("--axis {key}"))?;
    Ok(axis)
}

/// One value of a command-line axis.
fn word_value(word: &str) -> Result<SwitchValue> {
    if word.is_empty() {
        bail!("an empty value");
    }
    if let Some(inner) = word.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
        let items: Result<Vec<i64>> = inner
            .split(',')
            .map(|i| {
                i.trim().parse::<i64>().map_err(|_| anyhow!("`{word}`: a list takes integers"))
            })
            .collect();
        return Ok(SwitchValue::List(items?));
    }
    Ok(match word {
        "true" => SwitchValue::Bool(true),
        "false" => SwitchValue::Bool(false),
        _ => match word.parse::<i64>() {
            Ok(n) => SwitchValue::Int(n),
            Err(_) => SwitchValue::Str(word.to_owned()),
        },
    })
}

/// Check an axis: at least one value, no value twice, each accepted by the key's setter.
fn check_axis(axis: &Axis) -> Result<()> {
    if axis.values.is_empty() {
        bail!("no values");
    }
    let mut probe = ResolvedPreset::builtin(&PRESETS[0]);
    for (i, v) in axis.values.iter().enumerate() {
        if axis.values[..i].contains(v) {
            bail!("the value {} is given twice", value_text(v));
        }
        preset_file::apply_override(&mut probe, &axis.key, v)?;
    }
    Ok(())
}

/// The top-level keys of a grid file.
const GRID_KEYS: &str = "workloads, machines, presets, params, iterations, references and [axes]";

/// A grid file: the spec, and `iterations` if the file sets it.
pub fn load_grid_file(path: &Path) -> Result<(GridSpec, Option<u32>)> {
    let text = crate::input::read_text(path, crate::input::InputKind::Config)
        .with_context(|| format!("cannot read grid file `{}`", path.display()))?;
    parse_grid_file(path, &text)
}

/// Parse a grid file's `text` (read from `path`, for messages):
///
/// ```toml
/// workloads = ["page-fault1"]
/// machines = ["lab-2cpu"]          # optional: each workload's own machine
/// presets = ["modern"]             # optional: modern
/// params = ["processes=2"]         # optional
/// iterations = 2                   # optional
/// references = true                # optional: run the merged presets too
/// [axes]
/// percpu_pagelist_high_fraction = [0, 8, 32]
/// high_decay = ["off", "seven-eighths"]
/// ```
///
/// # Errors
/// Malformed TOML, an unknown key, a value of the wrong kind, an axis the preset files would
/// refuse: `FILE:LINE: message`.
pub fn parse_grid_file(path: &Path, text: &str) -> Result<(GridSpec, Option<u32>)> {
    let src = Source { path, text };
    let doc = DeTable::parse(text).map_err(|e| src.malformed(&e))?.into_inner();
    let mut spec = GridSpec { references: true, ..GridSpec::default() };
    let mut iterations = None;
    for (key, value) in in_file_order(&doc) {
        let k = key.get_ref().as_ref();
        let strings = |value: &toml::Spanned<DeValue<'_>>| -> Result<Vec<String>> {
            let wrong = |what: &str| {
                src.error(value.span(), format_args!("`{k}` takes a list of strings, not {what}"))
            };
            let DeValue::Array(items) = value.get_ref() else {
                return Err(wrong(kind_of(value.get_ref())));
            };
            items
                .iter()
                .map(|i| match i.get_ref() {
                    DeValue::String(s) => Ok(s.as_ref().to_owned()),
                    other => Err(wrong(&format!("{} in the list", kind_of(other)))),
                })
                .collect()
        };
        match k {
            "workloads" => spec.workloads = strings(value)?,
            "machines" => spec.machines = strings(value)?,
            "presets" => spec.presets = strings(value)?,
            "params" => spec.params = strings(value)?,
            "iterations" => match value.get_ref() {
                DeValue::Integer(i) => {
                    let n = i64::from_str_radix(i.as_str(), i.radix()).ok();
                    let n =
                        n.and_then(|n| u32::try_from(n).ok()).filter(|n| (1..=1000).contains(n));
                    iterations = Some(n.ok_or_else(|| {
                        src.error(value.span(), "`iterations` takes an integer in 1..=1000")
                    })?);
                }
                other => {
                    return Err(src.error(
                        value.span(),
                        format_args!("`iterations` takes an integer, not {}", kind_of(other)),
                    ))
                }
            },
            "references" => match value.get_ref() {
                DeValue::Boolean(b) => spec.references = *b,
                other => {
                    return Err(src.error(
                        value.span(),
                        format_args!("`references` takes true or false, not {}", kind_of(other)),
                    ))
                }
            },
            "axes" => {
                let DeValue::Table(table) = value.get_ref() else {
                    return Err(src.error(value.span(), "`axes` takes a table ([axes])"));
                };
                for (akey, avalue) in in_file_order(table) {
                    let ak = akey.get_ref().as_ref();
                    let DeValue::Array(items) = avalue.get_ref() else {
                        return Err(src.error(
                            avalue.span(),
                            format_args!(
                                "[axes]: `{ak}` takes a list of values, not {}",
                                kind_of(avalue.get_ref())
                            ),
                        ));
                    };
                    let accepted = preset_file::accepted(ak)
                        .map_err(|e| src.error(akey.span(), format_args!("[axes]: {e}")))?;
                    let values = items
                        .iter()
                        .map(|i| src.value("axes", ak, accepted, i))
                        .collect::<Result<Vec<_>>>()?;
                    let axis = Axis { key: ak.to_owned(), values };
                    check_axis(&axis).map_err(|e| {
                        src.error(avalue.span(), format_args!("[axes]: `{ak}`: {e:#}"))
                    })?;
                    spec.axes.push(axis);
                }
            }
            other => {
                return Err(src.error(
                    key.span(),
                    format_args!("unknown key `{other}`; a grid file has {GRID_KEYS}"),
                ))
            }
        }
    }
    Ok((spec, iterations))
}

/// The grid's points in their deterministic order: for each workload, machine and base
/// preset, the cartesian product of the axes (the last axis varying fastest); after the grid
/// points of a (workload, machine), its reference points: each base preset as it is (marked
/// `default`) and each merged built-in preset, unless a point already equals it (that point
/// gets the mark instead).
///
/// # Errors
/// An unknown workload, machine or preset, a parameter the machine cannot take, or an axis
/// value a base preset refuses (naming the axis).
pub fn points(spec: &GridSpec, scale: f64) -> Result<Vec<Point>> {
    if spec.workloads.is_empty() {
        bail!("no workload: give --workloads (or `workloads` in the grid file)");
    }
    let mut bases = Vec::new();
    for p in &spec.presets {
        let r = preset_file::resolve(p)?;
        if bases.iter().any(|b: &ResolvedPreset| b.name == r.name) {
            bail!("--presets: `{}` is given twice", r.name);
        }
        bases.push(r);
    }
    let mut out = Vec::new();
    for name in &spec.workloads {
        let w = workload::find(name)?;
        let machines: Vec<&str> = if spec.machines.is_empty() {
            vec![w.default_machine]
        } else {
            spec.machines.iter().map(String::as_str).collect()
        };
        for m in machines {
            let machine = Machine::resolve(m)?;
            let (params, _) = w.params_for(&spec.params, scale, workload::Fit::of(&machine))?;
            let first = out.len();
            for base in &bases {
                for combo in cartesian(&spec.axes) {
                    let mut preset = base.clone();
                    let mut coords = Vec::new();
                    for (axis, v) in spec.axes.iter().zip(combo) {
                        preset_file::apply_override(&mut preset, &axis.key, v).with_context(
                            || format!("--axis {} on preset {}", axis.key, base.name),
                        )?;
                        coords.push((axis.key.clone(), value_text(v)));
                    }
                    let mut label = base.name.clone();
                    for (k, v) in &coords {
                        let _ = write!(label, " {k}={v}");
                    }
                    preset.name = label;
                    out.push(Point {
                        workload: w,
                        machine: machine.clone(),
                        params: params.clone(),
                        preset,
                        coords,
                        marks: Vec::new(),
                    });
                }
            }
            // The base presets as they are (the kernel's defaults), then the merged presets.
            let merged = PRESETS.iter().filter(|p| spec.references && !p.unmerged);
            let refs = bases
                .iter()
                .map(|b| (b.clone(), DEFAULT_MARK.to_owned()))
                .chain(merged.map(|p| (ResolvedPreset::builtin(p), p.name.to_owned())));
            for (r, mark) in refs {
                let same = out[first..]
                    .iter_mut()
                    .find(|p| p.preset.policy == r.policy && p.preset.tunables == r.tunables);
                match same {
                    Some(p) => {
                        if !p.marks.contains(&mark) {
                            p.marks.push(mark);
                        }
                    }
                    None => out.push(Point {
                        workload: w,
                        machine: machine.clone(),
                        params: params.clone(),
                        preset: r,
                        coords: Vec::new(),
                        marks: vec![mark],
                    }),
                }
            }
        }
    }
    Ok(out)
}

/// Every combination of one value per axis, the last axis varying fastest; one empty
/// combination when there is no axis.
fn cartesian(axes: &[Axis]) -> Vec<Vec<&SwitchValue>> {
    let mut out: Vec<Vec<&SwitchValue>> = vec![Vec::new()];
    for axis in axes {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                axis.values.iter().map(move |v| {
                    let mut c = prefix.clone();
                    c.push(v);
                    c
                })
            })
            .collect();
    }
    out
}

/// The grid's fingerprint: 64-bit FNV-1a, as 16 hex digits, of everything that decides its
/// rows: the lab's revision, the seeds, the cost profile, and each point (workload, machine,
/// parameters, label, switches, tunables, marks) in order. Shards of one grid agree on it;
/// a shard run with other flags, files or another build does not.
pub fn fingerprint(
    points: &[Point],
    samples: u32,
    seed: u64,
    cost: &crate::model::cost::CostProfile,
    revision: &str,
) -> String {
    let mut text = format!("{revision}\n{samples} {seed}\n{cost:?}\n");
    for p in points {
        let _ = writeln!(
            text,
            "{}|{:?}|{:?}|{}|{:?}|{:?}|{:?}",
            p.workload.name,
            p.machine,
            p.params,
            p.preset.name,
            p.preset.policy,
            p.preset.tunables,
            p.marks
        );
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Parse `--shard I/N`: `I` is 0-based (0..N), as Slurm's `SLURM_ARRAY_TASK_ID` with
/// `--array=0-(N-1)` and Kubernetes' `JOB_COMPLETION_INDEX` count.
///
/// # Errors
/// Not `I/N` with `N` ≥ 1 and `I` < `N`.
pub fn parse_shard(text: &str) -> Result<(u32, u32)> {
    let bad =
        |why: &str| anyhow!("--shard `{text}`: {why}; write I/N with 0 <= I < N (I is 0-based)");
    let (i, n) = text.split_once('/').ok_or_else(|| bad("no `/`"))?;
    let i: u32 = i.trim().parse().map_err(|_| bad("I is not a whole number"))?;
    let n: u32 = n.trim().parse().map_err(|_| bad("N is not a whole number"))?;
    if n == 0 {
        return Err(bad("N must be at least 1"));
    }
    if i >= n {
        return Err(bad("I must be below N"));
    }
    Ok((i, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_parse_words_numbers_and_lists_and_name_themselves_in_errors() {
        let a = parse_axis("high_decay=off,seven-eighths").unwrap();
        assert_eq!(
            a.values,
            [SwitchValue::Str("off".into()), SwitchValue::Str("seven-eighths".into())]
        );
        let a = parse_axis("lowmem_reserve_ratio=[256, 256, 32, 0],[1,1,1,0]").unwrap();
        assert_eq!(a.values.len(), 2);
        assert_eq!(parse_axis("zone_below_high=true,false").unwrap().values.len(), 2);
        for (text, wanted) in [
            ("high_decy=off", "--axis high_decy: no switch or tunable `high_decy`"),
            ("high_decay=fast", "--axis high_decay: `high_decay` = \"fast\" is not accepted"),
            ("pcp_batch_scale_max=9", "--axis pcp_batch_scale_max: `pcp_batch_scale_max` = 9"),
            ("pcp_batch_scale_max=1,1", "the value 1 is given twice"),
            ("pcp_batch_scale_max=1,", "an empty value"),
            ("pcp_batch_scale_max", "write KEY=V1,V2"),
        ] {
            let e = format!("{:#}", parse_axis(text).unwrap_err());
            assert!(e.contains(wanted), "{text}: {e}");
        }
    }

    #[test]
    fn shards_are_zero_based_and_bad_ones_are_refused() {
        assert_eq!(parse_shard("0/3").unwrap(), (0, 3));
        assert_eq!(parse_shard("2/3").unwrap(), (2, 3));
        for bad in ["3/3", "1/0", "a/2", "1", "-1/2"] {
            let e = parse_shard(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("--shard `{bad}`")), "{e}");
        }
    }

    #[test]
    fn points_are_the_product_in_order_with_references_merged_in() {
        let spec = GridSpec {
            workloads: vec!["trunc".into()],
            machines: vec!["lab-2cpu".into()],
            presets: vec!["modern".into()],
            axes: vec![
                parse_axis("pcp_batch_scale_max=5,3").unwrap(),
                parse_axis("high_decay=seven-eighths,off").unwrap(),
            ],
            params: Vec::new(),
            references: true,
        };
        let pts = points(&spec, 0.1).unwrap();
        let labels: Vec<&str> = pts.iter().map(|p| p.preset.name.as_str()).collect();
        assert_eq!(
            labels[..4],
            [
                "modern pcp_batch_scale_max=5 high_decay=seven-eighths",
                "modern pcp_batch_scale_max=5 high_decay=off",
                "modern pcp_batch_scale_max=3 high_decay=seven-eighths",
                "modern pcp_batch_scale_max=3 high_decay=off",
            ]
        );
        // The first point is modern at its defaults: it carries the marks, not a new point.
        assert_eq!(pts[0].marks, [DEFAULT_MARK, "modern"]);
        // One point per distinct merged policy: frag-vanilla and pfrag-buddy are the same
        // switches (docs/presets.md), so they share a point and both marks.
        let mut merged: Vec<pagealloc::Policy> = Vec::new();
        for p in PRESETS.iter().filter(|p| !p.unmerged) {
            if !merged.contains(&p.policy) {
                merged.push(p.policy);
            }
        }
        assert_eq!(pts.len(), 4 + merged.len() - 1);
        assert!(pts[4..].iter().all(|p| p.coords.is_empty() && !p.marks.is_empty()));
        assert!(pts.iter().any(|p| p.marks == ["frag-vanilla", "pfrag-buddy"]));
        let e = format!(
            "{:#}",
            points(&GridSpec { workloads: vec!["nope".into()], ..spec.clone() }, 0.1).unwrap_err()
        );
        assert!(e.contains("nope"), "{e}");
    }

    #[test]
    fn grid_files_give_the_same_grid_and_name_the_line_of_an_error() {
        let text = "workloads = [\"trunc\"]\nmachines = [\"lab-2cpu\"]\niterations = 2\n\
                    [axes]\npcp_batch_scale_max = [5, 3]\nhigh_decay = [\"off\"]\n";
        let (spec, it) = parse_grid_file(Path::new("g.toml"), text).unwrap();
        assert_eq!(it, Some(2));
        assert_eq!(spec.axes[0], parse_axis("pcp_batch_scale_max=5,3").unwrap());
        assert_eq!(spec.axes[1].key, "high_decay");
        for (text, wanted) in [
            ("workload = [\"trunc\"]\n", "g.toml:1: unknown key `workload`"),
            (
                "[axes]\nhigh_decy = [\"off\"]\n",
                "g.toml:2: [axes]: no switch or tunable `high_decy`",
            ),
            ("[axes]\nhigh_decay = [\"fast\"]\n", "g.toml:2: [axes]: `high_decay`"),
            ("[axes]\nhigh_decay = \"off\"\n", "g.toml:2: [axes]: `high_decay` takes a list"),
            ("iterations = 0\n", "g.toml:1: `iterations` takes an integer in 1..=1000"),
        ] {
            let e = format!("{:#}", parse_grid_file(Path::new("g.toml"), text).unwrap_err());
            assert!(e.contains(wanted), "{text}: {e}");
        }
    }
}

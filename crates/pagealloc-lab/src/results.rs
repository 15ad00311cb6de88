//! Results as tidy rows (JSON lines): one row per (workload, preset, runner,
//! machine, seed, metric, sample), with the revision of the code that produced it. `compare`,
//! `reproduce` and `plot` read rows; runs write them under `results/` unless told not to.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::mmtests::Better;

/// One measured value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Workload name.
    pub workload: String,
    /// Preset name (or preset file path).
    pub preset: String,
    /// `model` or `real`.
    pub runner: String,
    /// Machine name.
    pub machine: String,
    /// The run's seed.
    pub seed: u64,
    /// The workload's parameters as run (after `--scale`).
    pub params: BTreeMap<String, f64>,
    /// Metric name.
    pub metric: String,
    /// Which sample of this (workload, preset, machine, params, metric): 0, 1, …
    pub sample: u32,
    /// The value.
    pub value: f64,
    /// Its unit.
    pub unit: String,
    /// Which way is better.
    pub better: Better,
    /// The seed table this run was for, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// For a point of a time series: the virtual second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t: Option<u32>,
    /// For a per-CPU series: the CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    /// Code revision the lab was built from (`git describe`), or "unknown".
    pub revision: String,
    /// Wall-clock seconds the run took (not part of any deterministic output). 0 in the rows
    /// of `explore`, whose sweep files must be byte-identical however the sweep was sharded.
    pub wall_s: f64,
    /// For a row of an `explore` sweep: which point of which grid it measures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explore: Option<GridTag>,
}

/// Where a row of an `explore` sweep sits in its grid, so that `explore merge` can put shards
/// back in the unsharded order and refuse duplicates, gaps and shards of another grid.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GridTag {
    /// Fingerprint of the grid (its points, seeds, scale, cost profile and the lab's
    /// revision), 16 hex digits.
    pub grid: String,
    /// The point's index in the grid's deterministic order, 0-based.
    pub point: u32,
    /// How many points the grid has.
    pub points: u32,
    /// How many seeds each point runs (samples 0..samples).
    pub samples: u32,
    /// The point's coordinates: each axis and its value, in axis order (empty for a preset
    /// run as it is).
    pub coords: Vec<(String, String)>,
    /// What the point also is: `default` (the base preset at the kernel's defaults) and the
    /// names of the merged built-in presets it equals.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<String>,
}

/// The revision the lab was built from (`git describe --always --dirty` of its tree at build
/// time, `build.rs`), or "unknown" — never that of the directory it runs in.
pub fn revision() -> String {
    REVISION.to_owned()
}

/// See [`revision`].
pub const REVISION: &str = env!("PAGEALLOC_REVISION");

/// Append `rows` to a new file `dir/<stem>-<UTC timestamp>.jsonl`; returns its path.
pub fn save(dir: &Path, stem: &str, rows: &[Row]) -> Result<PathBuf> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let stem: String =
        stem.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    let path = dir.join(format!("{stem}-{}.jsonl", utc_stamp(secs)));
    write(&path, rows)?;
    Ok(path)
}

/// Write `rows` to `path` (created or truncated), one JSON object a line.
pub fn write(path: &Path, rows: &[Row]) -> Result<()> {
    let f = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = BufWriter::new(f);
    for r in rows {
        serde_json::to_writer(&mut w, r)?;
        w.write_all(b"\n")?;
    }
    w.flush().with_context(|| format!("writing {}", path.display()))
}

/// Read every row of a JSON-lines file. A bad line is an error naming the file and line.
pub fn load(path: &Path) -> Result<Vec<Row>> {
    let text = crate::input::read_text(path, crate::input::InputKind::Data)
        .with_context(|| format!("cannot read result rows `{}`", path.display()))?;
    parse(path, &text)
}

/// Parse the JSON-lines `text` of result rows read from `path` (used in messages). Blank lines
/// are skipped; a bad line is an error `FILE:LINE: not a result row: …`.
///
/// # Errors
/// The first line that is not a [`Row`].
pub fn parse(path: &Path, text: &str) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(r) => rows.push(r),
            Err(e) => bail!("{}:{}: not a result row: {e}", path.display(), i + 1),
        }
    }
    Ok(rows)
}

/// `YYYYmmdd-HHMMSS` in UTC for a Unix time (civil-from-days, proleptic Gregorian).
fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}{m:02}{d:02}-{:02}{:02}{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_civil_dates() {
        assert_eq!(utc_stamp(0), "19700101-000000");
        // 2026-11-23 12:34:56 UTC.
        assert_eq!(utc_stamp(1_795_437_296), "20261123-123456");
        assert_eq!(utc_stamp(951_782_400), "20000229-000000");
    }

    #[test]
    fn rows_round_trip_and_bad_lines_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let row = Row {
            workload: "trunc".into(),
            preset: "modern".into(),
            runner: "model".into(),
            machine: "lab-2cpu".into(),
            seed: 3,
            params: BTreeMap::from([("files".into(), 2.0)]),
            metric: "elapsed".into(),
            sample: 0,
            value: 1.5,
            unit: "ms".into(),
            better: Better::Lower,
            table: None,
            t: None,
            cpu: None,
            revision: "abc".into(),
            wall_s: 0.1,
            explore: None,
        };
        let path = save(dir.path(), "run trunc/modern", &[row.clone(), row.clone()]).unwrap();
        assert!(path.file_name().unwrap().to_str().unwrap().starts_with("run_trunc_modern-"));
        assert_eq!(load(&path).unwrap(), vec![row.clone(), row]);
        let bad = dir.path().join("bad.jsonl");
        fs::write(&bad, "{}\n").unwrap();
        let e = load(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.jsonl:1"), "{e}");
    }

    /// A value read back is the value written, to the last bit: `explore merge` and the
    /// reports rebuild documents from saved rows. serde_json's default float parser may round
    /// the last digit the wrong way (it read this share, a model run's, one unit in the last
    /// place high), which `float_roundtrip` corrects.
    #[test]
    fn saved_values_come_back_to_the_bit() {
        let dir = tempfile::tempdir().unwrap();
        let values = [95.30960479658519, 0.1 + 0.2, 1e-300, f64::MAX, 2.0f64.sqrt()];
        let rows: Vec<Row> = values
            .iter()
            .enumerate()
            .map(|(i, &value)| Row {
                workload: "trunc".into(),
                preset: "modern".into(),
                runner: "model".into(),
                machine: "lab-2cpu".into(),
                seed: 1,
                params: BTreeMap::new(),
                metric: "hold_frame_lines_pct".into(),
                sample: i as u32,
                value,
                unit: "%".into(),
                better: Better::Lower,
                table: None,
                t: None,
                cpu: None,
                revision: "abc".into(),
                wall_s: 0.0,
                explore: None,
            })
            .collect();
        let path = save(dir.path(), "floats", &rows).unwrap();
        for (a, b) in load(&path).unwrap().iter().zip(&rows) {
            assert_eq!(
                a.value.to_bits(),
                b.value.to_bits(),
                "{} read back as {}",
                b.value,
                a.value
            );
        }
    }
}

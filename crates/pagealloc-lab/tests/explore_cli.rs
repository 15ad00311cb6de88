//! `pagealloc explore` on a tiny grid: a sweep run whole and as shards then merged gives the
//! same bytes; bad axes, shards and merge inputs are refused naming what is wrong.

use std::path::Path;

mod common;
use common::{pagealloc, stderr, stdout};

/// The tiny grid: trunc at the reduced scale on two CPUs, 2 × 2 points plus the reference
/// points of three merged presets given as base presets (modern's default is a grid point).
const GRID: &[&str] = &[
    "explore",
    "--workloads",
    "trunc",
    "--machines",
    "lab-2cpu",
    "--presets",
    "modern",
    "--axis",
    "pcp_batch_scale_max=5,2",
    "--axis",
    "high_decay=seven-eighths,off",
    "--no-references",
    "--quick",
    "--no-save",
];

/// Run the grid (with `extra` flags), writing its rows to `out`; returns stdout.
fn sweep(dir: &Path, out: &str, extra: &[&str]) -> String {
    let a =
        pagealloc().current_dir(dir).args(GRID).args(extra).args(["--out", out]).assert().success();
    stdout(&a)
}

/// `explore merge FILES… --out x.jsonl` in `dir`, failing or not.
fn merge(dir: &Path, files: &[&str]) -> assert_cmd::assert::Assert {
    pagealloc()
        .current_dir(dir)
        .args(["explore", "merge"])
        .args(files)
        .args(["--out", "x.jsonl"])
        .assert()
}

#[test]
fn shards_merged_equal_the_whole_sweep_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let whole = sweep(d, "whole.jsonl", &["--plots", "plots", "--report", "r.html"]);
    // Four points; the first is modern at its defaults, marked, and the table says which
    // points are on the front.
    assert!(whole.contains("trunc on lab-2cpu: 4 points"), "{whole}");
    assert!(whole.contains("modern pcp_batch_scale_max=5 high_decay=seven-eighths"), "{whole}");
    assert!(whole.contains("default"), "{whole}");
    assert!(whole.lines().any(|l| l.starts_with('*')), "some point is on the front: {whole}");
    for i in 0..3 {
        let shard = format!("{i}/3");
        let text = sweep(d, &format!("s{i}.jsonl"), &["--shard", &shard]);
        assert!(text.contains(&format!("shard {i}/3")), "{text}");
    }
    // Shard files in any order.
    let m = pagealloc()
        .current_dir(d)
        .args(["explore", "merge", "s2.jsonl", "s0.jsonl", "s1.jsonl", "--out", "merged.jsonl"])
        .assert()
        .success();
    assert!(stdout(&m).contains("4 points (merged)"), "{}", stdout(&m));
    let a = std::fs::read(d.join("whole.jsonl")).unwrap();
    let b = std::fs::read(d.join("merged.jsonl")).unwrap();
    assert!(!a.is_empty());
    assert!(a == b, "merged shards differ from the whole sweep");
    // Every row carries its point and the grid's fingerprint, and no wall time.
    let first: serde_json::Value =
        serde_json::from_str(std::str::from_utf8(&a).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(first["explore"]["point"], 0);
    assert_eq!(first["explore"]["points"], 4);
    assert_eq!(first["explore"]["grid"].as_str().unwrap().len(), 16);
    assert_eq!(first["wall_s"], 0.0);
    let svg = std::fs::read_to_string(d.join("plots/pareto-trunc-lab-2cpu.svg")).unwrap();
    assert!(svg.contains("<polyline") || svg.matches("<circle").count() >= 4, "{svg}");
    assert!(svg.contains("modern (default)"), "{svg}");
    let html = std::fs::read_to_string(d.join("r.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("axis high_decay: seven-eighths, off"));

    // A shard left out, a shard given twice, and a shard of another grid are refused.
    let e = merge(d, &["s0.jsonl", "s1.jsonl"]).failure();
    assert!(stderr(&e).contains("missing: 2"), "{}", stderr(&e));
    let e = merge(d, &["s0.jsonl", "s1.jsonl", "s2.jsonl", "s1.jsonl"]).failure();
    assert!(stderr(&e).contains("is in s1.jsonl and in s1.jsonl"), "{}", stderr(&e));
    sweep(d, "other.jsonl", &["--shard", "1/3", "--seed", "7"]);
    let e = merge(d, &["s0.jsonl", "other.jsonl", "s2.jsonl"]).failure();
    assert!(stderr(&e).contains("other.jsonl is a shard of grid"), "{}", stderr(&e));
    assert!(stderr(&e).contains("do not merge"), "{}", stderr(&e));
}

#[test]
fn bad_axes_shards_and_merge_inputs_name_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = ["explore", "--workloads", "trunc", "--machines", "lab-2cpu", "--quick"];
    let cases: &[(&[&str], &str)] = &[
        (
            &["--axis", "high_decy=off"],
            "--axis high_decy: no switch or tunable `high_decy` (did you mean `high_decay`?)",
        ),
        (
            &["--axis", "pcp_batch_scale_max=3,9"],
            "--axis pcp_batch_scale_max: `pcp_batch_scale_max` = 9",
        ),
        (
            &["--axis", "high_decay=off", "--axis", "high_decay=off"],
            "--axis high_decay: given twice",
        ),
        (&["--shard", "3/3"], "--shard `3/3`: I must be below N"),
        (&["--shard", "0/0"], "--shard `0/0`: N must be at least 1"),
        (&["--presets", "nope"], "unknown preset `nope`"),
        (&["--objective", "nope", "--no-references"], "no metric `nope`"),
    ];
    for (args, wanted) in cases {
        let a =
            pagealloc().current_dir(d).args(base).args(*args).arg("--no-save").assert().failure();
        assert!(stderr(&a).contains(wanted), "{args:?}: {}", stderr(&a));
    }
    std::fs::write(d.join("plain.jsonl"), "").unwrap();
    let a = merge(d, &["plain.jsonl"]).failure();
    assert!(stderr(&a).contains("plain.jsonl: no rows"), "{}", stderr(&a));
    let a = merge(d, &["absent.jsonl"]).failure();
    assert!(stderr(&a).contains("absent.jsonl"), "{}", stderr(&a));
    let grid = d.join("g.toml");
    std::fs::write(&grid, "workloads = [\"trunc\"]\n[axes]\nhigh_decay = [\"fast\"]\n").unwrap();
    let a = pagealloc()
        .current_dir(d)
        .args(["explore", "--grid", "g.toml", "--no-save"])
        .assert()
        .failure();
    assert!(stderr(&a).contains("g.toml:3: [axes]: `high_decay`"), "{}", stderr(&a));
}

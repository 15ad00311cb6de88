//! `pagealloc calibrate --quick`: it runs (about a second), checks itself, and writes a
//! profile and a machine file the model loads (checked by running the model with them).
//! Nothing here judges the figures: a quick run on a busy test machine is not a measurement.

mod common;
use common::{pagealloc, stderr, stdout};

/// The profile's cost fields, in file order.
const COSTS: [&str; 6] = [
    "pcp_alloc_ns",
    "pcp_free_ns",
    "zone_lock_base_ns",
    "zone_list_op_ns",
    "slab_alloc_ns",
    "slab_free_ns",
];

/// The hierarchy figures calibrate measures on a one-node, one-LLC host.
const FIGURES: [&str; 15] = [
    "l2_hit_ns",
    "llc_hit_ns",
    "c2c_same_llc_ns",
    "dram_local_ns",
    "handoff_same_llc_ns",
    "write_l2_gbps",
    "write_c2c_gbps",
    "write_llc_gbps",
    "write_dram_gbps",
    "write_l2_run_gbps",
    "write_c2c_run_gbps",
    "write_llc_run_gbps",
    "wake_idle_ns",
    "wake_call_ns",
    "llc_usable_mib",
];

/// The profile loads where profiles are used: `run --cost FILE` parses it with the model's own
/// loader (`CostProfile::parse`: every field present, every cost in range, cold ≥ hot) and runs
/// a tiny workload with it.
fn check_profile(text: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("profile.toml");
    std::fs::write(&path, text).unwrap();
    pagealloc()
        .args(["run", "trunc", "--machine", "lab-2cpu", "--quick", "--no-save", "--cost"])
        .arg(&path)
        .args(["--param", "file_mib=16"])
        .assert()
        .success();
}

/// The machine file loads where machines are used: `run --machine FILE` runs a tiny workload
/// on it (its caches from sysfs, its figures from the run).
fn check_machine(path: &std::path::Path) {
    pagealloc()
        .args(["run", "trunc", "--quick", "--no-save", "--machine"])
        .arg(path)
        .args(["--param", "files=1", "--param", "file_mib=16"])
        .assert()
        .success();
}

/// The three quick runs in one test, one after the other: in parallel they would fight
/// over the two CPUs and the LLC they measure.
#[test]
fn quick_runs() {
    writes_a_loadable_profile_and_prints_the_table();
    without_out_the_toml_goes_to_stdout_and_json_has_every_spread();
    slab_only_rewrites_the_slab_fields_and_keeps_the_rest();
}

/// `--slab-only FILE` measures the slab figures into an existing profile: every other field
/// and the header stay as they were, the slab figures' own header lines are added, and the
/// result loads. A profile from before the slab fields is accepted too.
fn slab_only_rewrites_the_slab_fields_and_keeps_the_rest() {
    let shipped = include_str!("../data/cost-default.toml");
    let old: String = shipped
        .lines()
        .filter(|l| {
            !l.starts_with("slab_") && !l.starts_with("#   slab_") && !l.starts_with("# Slab")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cost.toml");
    std::fs::write(&path, &old).unwrap();
    pagealloc()
        .args(["calibrate", "--quick", "--slab-only"])
        .arg(&path)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .success();
    let text = std::fs::read_to_string(&path).unwrap();
    for line in old.lines().filter(|l| !l.starts_with("method")) {
        assert!(text.lines().any(|l| l == line), "`{line}` lost:\n{text}");
    }
    assert!(text.contains("# Slab figures by `pagealloc calibrate --quick --slab-only"), "{text}");
    assert!(text.contains("slab figures:") && text.contains("QUICK run"), "{text}");
    for f in ["slab_alloc_ns = ", "slab_free_ns = "] {
        assert_eq!(text.lines().filter(|l| l.starts_with(f)).count(), 1, "{f}:\n{text}");
    }
    check_profile(&text);
}

fn writes_a_loadable_profile_and_prints_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cost.toml");
    let machine = dir.path().join("host.toml");
    let one_node_one_llc = !std::path::Path::new("/sys/devices/system/node/node1").exists();
    let mut cmd = pagealloc();
    cmd.args(["calibrate", "--quick", "--out"]).arg(&path);
    if one_node_one_llc {
        cmd.arg("--machine-out").arg(&machine);
    }
    let out = cmd.timeout(std::time::Duration::from_secs(120)).assert().success();
    let text = std::fs::read_to_string(&path).unwrap();
    check_profile(&text);
    if one_node_one_llc && machine.exists() {
        let m = std::fs::read_to_string(&machine).unwrap();
        for f in FIGURES {
            assert!(m.contains(&format!("{f} = {{ value = ")), "{f} missing:\n{m}");
        }
        assert!(m.contains("measured by `pagealloc calibrate"), "{m}");
        // The wake figures carry their measured spread, 19 quantiles each.
        for f in ["wake_idle_ns", "wake_call_ns"] {
            let line = m.lines().find(|l| l.starts_with(f)).unwrap();
            let q = line.split("quantiles = [").nth(1).and_then(|r| r.split(']').next());
            let q = q.unwrap_or_else(|| panic!("{f} has no quantiles: {line}"));
            assert_eq!(q.split(", ").count(), 19, "{line}");
        }
        check_machine(&machine);
    }
    // The header says who wrote it, when, on what, and how to regenerate it.
    assert!(text.starts_with('#'), "{text}");
    assert!(text.contains("Written by `pagealloc calibrate` on 20"), "{text}");
    assert!(text.contains("calibrate --out crates/pagealloc-lab/data/cost-default.toml"), "{text}");
    assert!(text.contains("QUICK run"), "the method says it was a quick run: {text}");

    let table = stdout(&out);
    for f in COSTS.iter().chain(&FIGURES) {
        assert!(table.lines().any(|l| l.starts_with(f)), "no row for {f}:\n{table}");
    }
    assert!(table.contains("p10..p90") && table.contains("QUICK RUN"), "{table}");
    assert!(table.contains("zone lock taken 0 times"), "{table}");
    let err = stderr(&out);
    assert!(err.contains("round 2/2") && err.contains("wrote"), "progress on stderr: {err}");
}

fn without_out_the_toml_goes_to_stdout_and_json_has_every_spread() {
    let out = pagealloc()
        .args(["calibrate", "--quick"])
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .success();
    check_profile(&stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("pcp_alloc_ns"), "the table goes to stderr: {err}");

    let out = pagealloc()
        .args(["calibrate", "--quick", "--json"])
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .success();
    let doc: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let c = &doc["calibration"];
    for s in [
        &c["timer_overhead"],
        &c["pcp"]["alloc"],
        &c["pcp"]["free"],
        &c["lock_uncontended"],
        &c["handoff"]["handoff"],
        &c["touch"]["hot"],
        &c["touch"]["cold"],
        &c["latency"]["l2"],
        &c["latency"]["llc"],
        &c["latency"]["dram"],
        &c["wake"]["one_way"],
        &c["wake"]["call"],
    ] {
        let (p10, m, p90) =
            (s["p10"].as_f64().unwrap(), s["median"].as_f64().unwrap(), s["p90"].as_f64().unwrap());
        assert!(p10 <= m && m <= p90 && s["n"].as_u64().unwrap() > 0, "{s}");
    }
    assert_eq!(c["pcp"]["zone_locks_taken"], 0);
    assert!(c["holds"]["r2"].as_f64().unwrap() <= 1.0);
    assert!(c["holds"]["holds"].as_u64().unwrap() > 1000);
    assert_eq!(c["rounds"]["pcp_alloc"].as_array().unwrap().len(), 2, "per-round medians");
    assert!(doc["profile"]["zone_list_op_ns"].as_f64().is_some());
    assert_eq!(c["slab"]["slab_page_calls"], 0);
    assert!(doc["profile"]["slab_alloc_ns"].as_f64().is_some());
}

#[test]
fn help_says_what_is_measured_and_where_the_toml_goes() {
    let out = pagealloc().args(["calibrate", "--help"]).assert().success();
    let help = stdout(&out);
    assert!(help.contains("Without it the TOML goes to stdout"), "{help}");
    assert!(help.contains("zone_list_op_ns") && help.contains("--quick"), "{help}");
}

//! `pagealloc bench --quick`: every allocator runs every pattern and the output has the
//! promised shape. (Nothing here is timed; the quick run only has to finish and pass its own
//! checks.)

mod common;
use common::{pagealloc, stderr, stdout};

const PATTERNS: [&str; 7] =
    ["pair-1", "pair-64", "pair-1024", "pair-64-2t", "order3-64", "mix-0-10", "cross-thread"];
/// The allocators a default run has: the C ones only with the `peers` feature.
const ALLOCATORS: &[&str] = if cfg!(feature = "peers") {
    &["pagealloc", "mimalloc", "jemalloc", "system", "buddy_system_allocator"]
} else {
    &["pagealloc", "system", "buddy_system_allocator"]
};

#[test]
fn quick_json_has_a_row_for_every_allocator_and_pattern() {
    let out = pagealloc().args(["bench", "--quick", "--json"]).assert().success();
    let doc: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), PATTERNS.len() * ALLOCATORS.len());
    for p in PATTERNS {
        for &a in ALLOCATORS {
            let row = rows
                .iter()
                .find(|r| r["pattern"] == p && r["allocator"] == a)
                .unwrap_or_else(|| panic!("no row for {a} / {p}"));
            assert!(row["ns_per_pair"].as_f64().unwrap() > 0.0, "{row}");
            assert!(row["stddev"].as_f64().unwrap() >= 0.0, "{row}");
            assert!(row["threads"].as_u64().unwrap() >= 1);
            assert!(row["outstanding"].as_u64().unwrap() >= 1);
            assert!(row.get("order").is_some());
        }
    }
    let meta = doc["pagealloc"]["metadata_bytes_per_frame"].as_f64().unwrap();
    assert!((16.0..17.0).contains(&meta), "{meta}");
    assert!(doc["pagealloc"]["init_ms"].as_f64().unwrap() > 0.0);
    assert!(!doc["machine"]["cpu_model"].as_str().unwrap().is_empty());
    let left_out: Vec<&str> =
        doc["left_out"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let expected: &[&str] = if cfg!(feature = "peers") { &[] } else { &["mimalloc", "jemalloc"] };
    assert_eq!(left_out, expected);
    // The two-thread patterns are bracketed by the core-to-core probe (none on one CPU, or
    // on a machine too busy for the probe's threads to run on two CPUs); one-thread ones not.
    let probes = doc["core_to_core_ns"].as_object().unwrap();
    for (pattern, c) in probes {
        assert!(["pair-64-2t", "cross-thread"].contains(&pattern.as_str()), "{pattern}");
        let c = c.as_array().unwrap();
        assert!(c.len() == 2 && c.iter().all(|x| x.as_f64().unwrap() > 0.0), "{c:?}");
    }
}

/// Without the `peers` feature a default run names the C allocators it left out and how to
/// build them in, and asking for one is an error that says the same; with it, neither.
#[test]
fn the_c_peers_are_named_when_left_out() {
    let out = pagealloc()
        .args(["bench", "--quick", "--patterns", "pair-1", "--arena-mib", "128"])
        .assert()
        .success();
    let text = stdout(&out);
    let note = text.lines().find(|l| l.starts_with("left out:"));
    let asked = pagealloc()
        .args(["bench", "--quick", "--patterns", "pair-1", "--allocators", "mimalloc"])
        .args(["--arena-mib", "128"])
        .assert();
    if cfg!(feature = "peers") {
        assert_eq!(note, None, "{text}");
        asked.success();
    } else {
        let note = note.unwrap_or_else(|| panic!("no left-out line in {text}"));
        assert!(note.contains("mimalloc, jemalloc") && note.contains("--features peers"), "{note}");
        let err = String::from_utf8(asked.failure().get_output().stderr.clone()).unwrap();
        assert!(err.contains("allocator `mimalloc` is not in this build"), "{err}");
        assert!(err.contains("--features peers"), "{err}");
    }
}

#[test]
fn table_names_the_work_and_the_ratio() {
    let out = pagealloc()
        .args(["bench", "--quick", "--patterns", "pair-1,cross-thread"])
        .args(["--allocators", "pagealloc,system"])
        .assert()
        .success();
    let text = stdout(&out);
    assert!(text.contains("8-byte tag"), "{text}");
    assert!(text.contains("bytes/frame"), "{text}");
    assert!(text.contains("pagealloc vs best peer"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("pair-1 ")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("cross-thread")), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("pair-64")), "{text}");
    // cross-thread's probes, when the machine gave the probe two CPUs, name that pattern only.
    if let Some(l) = text.lines().find(|l| l.starts_with("a line between the two CPUs")) {
        assert!(l.contains("cross-thread ") && !l.contains("pair-1 "), "{l}");
    }
}

#[test]
fn unknown_pattern_or_allocator_is_a_clear_error() {
    let out = pagealloc().args(["bench", "--quick", "--patterns", "pair-2"]).assert().failure();
    let err = stderr(&out);
    assert!(err.contains("unknown pattern `pair-2`"), "{err}");
    let out = pagealloc().args(["bench", "--quick", "--allocators", "tcmalloc"]).assert().failure();
    let err = stderr(&out);
    assert!(err.contains("unknown allocator `tcmalloc`"), "{err}");
}

/// `--preset` takes a preset file as `run` does (here `remote_free` on, beyond the kernel):
/// the run names the file, and a misspelt switch in it is refused with the key. That the
/// switches reach the allocator is `preset_file::resolve`'s and `PageHeap`'s to show (their
/// own tests); this checks the command accepts and checks the file.
#[test]
fn a_preset_file_is_accepted_and_a_misspelt_switch_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("remote.toml");
    std::fs::write(&file, "base = \"modern\"\n[switches]\nremote_free = true\n").unwrap();
    let out = pagealloc()
        .args(["bench", "--quick", "--json", "--patterns", "cross-thread"])
        .args(["--allocators", "pagealloc", "--preset"])
        .arg(&file)
        .assert()
        .success();
    let doc: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert!(doc["pagealloc"]["preset"].as_str().unwrap().ends_with("remote.toml"), "{doc}");
    std::fs::write(&file, "base = \"modern\"\n[switches]\nremote_frees = true\n").unwrap();
    let out = pagealloc()
        .args(["bench", "--quick", "--patterns", "pair-1", "--preset"])
        .arg(&file)
        .assert()
        .failure();
    let err = stderr(&out);
    assert!(err.contains("remote_frees"), "{err}");
}

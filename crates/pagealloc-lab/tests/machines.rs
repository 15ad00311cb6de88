//! `pagealloc machines`: listing, JSON, TOML, `--cpus`, machine files and their errors.

use std::path::{Path, PathBuf};

mod common;
use common::{stderr_of, stdout_of};

/// The built-in machines, sorted.
const BUILTINS: [&str; 9] = [
    "cascadelake-2s",
    "cortex-a53",
    "haswell-2s-48",
    "icl-2s-128",
    "lab-2cpu",
    "skylake-1s",
    "spr-2s-224",
    "unknown-micro",
    "unknown-trace",
];

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn listing_shows_every_builtin_with_zones_caches_and_assumptions() {
    let text = stdout_of(&["machines"]);
    for name in BUILTINS {
        assert!(text.lines().any(|l| l.split_whitespace().next() == Some(name)), "{name}\n{text}");
    }
    assert!(
        text.contains("spr-2s-224  x86_64, 2 nodes, 224 CPUs, 512 GiB, 2 LLC domains"),
        "{text}"
    );
    assert!(
        text.contains(
            "zones: DMA 16 MiB (4096 pages), DMA32 3056 MiB (782336 pages), Normal 253 GiB"
        ),
        "{text}"
    );
    assert!(text.contains("LLC 105 MiB shared by 112 CPUs (domain 1)"), "{text}");
    assert!(text.contains("per CPU: LLC slice 960 KiB (240 pages)"), "{text}");
    assert!(text.contains("min_free_kbytes: 92681 KiB"), "{text}");
    assert_eq!(text.matches("  assumptions:\n").count(), BUILTINS.len());
    assert!(text.contains("9 machines."), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 100), "fits 100 columns");
}

#[test]
fn json_is_one_document_with_every_machine() {
    let doc: serde_json::Value = serde_json::from_str(&stdout_of(&["machines", "--json"])).unwrap();
    let machines = doc["machines"].as_array().unwrap();
    let names: Vec<_> = machines.iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(names, BUILTINS);
    for m in machines {
        let nodes = m["nodes"].as_array().unwrap();
        let cpus: u64 = nodes.iter().map(|n| n["cpus"].as_u64().unwrap()).sum();
        let mem: u64 = nodes.iter().map(|n| n["memory_bytes"].as_u64().unwrap()).sum();
        assert_eq!(m["nr_cpus"].as_u64(), Some(cpus));
        assert_eq!(m["memory_bytes"].as_u64(), Some(mem));
        let zone_pages: u64 = nodes
            .iter()
            .flat_map(|n| n["zones"].as_array().unwrap())
            .map(|z| z["pages"].as_u64().unwrap())
            .sum();
        assert_eq!(zone_pages * 4096, mem, "{}", m["name"]);
        for n in nodes {
            assert!(n["llc_bytes"].as_u64().unwrap() > 0);
            assert!(n["llc_shared_by"].as_u64().unwrap() > 0);
        }
        assert!(!m["assumptions"].as_array().unwrap().is_empty());
        assert!(m["source"].as_str().is_some_and(|s| !s.is_empty()));
    }
    let spr = &machines[6];
    assert_eq!(spr["nodes"][1]["llc_domains"], serde_json::json!([1, 1]));
    assert_eq!(spr["nodes"][0]["cache_per_cpu"]["data_slices_bytes"], 2008 * 1024);
    assert_eq!(spr["min_free_kbytes"], serde_json::Value::Null);
    assert_eq!(spr["boot_min_free_kbytes"], 92681);
}

#[test]
fn unknown_machine_fails_listing_the_builtins() {
    let err = stderr_of(&["machines", "nope"]);
    assert!(err.contains("unknown machine `nope`"), "{err}");
    assert!(err.contains(&BUILTINS.join(", ")), "{err}");
}

#[test]
fn cpus_override_respreads_the_cpus() {
    let doc: serde_json::Value =
        serde_json::from_str(&stdout_of(&["machines", "spr-2s-224", "--cpus", "8", "--json"]))
            .unwrap();
    let m = &doc["machines"][0];
    assert_eq!(m["nr_cpus"], 8);
    assert_eq!(m["nodes"][1]["first_cpu"], 4);
    assert_eq!(m["nodes"][1]["llc_shared_by"], 4);
    assert_eq!(m["nodes"][1]["llc_bytes"], 105 << 20);
    let err = stderr_of(&["machines", "spr-2s-224", "--cpus", "1"]);
    assert!(err.contains("--cpus 1: machine `spr-2s-224` needs between 2"), "{err}");
}

#[test]
fn a_machine_file_is_listed_and_toml_output_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    // Start from a built-in printed as a file, renamed as the error asks.
    let toml = stdout_of(&["machines", "--toml", "icl-2s-128"]);
    let copy = write(dir.path(), "copy.toml", &toml);
    let err = stderr_of(&["machines", copy.to_str().unwrap()]);
    assert!(
        err.contains("copy.toml:2: field `name`: the name `icl-2s-128` is a built-in"),
        "{err}"
    );
    let mine = write(dir.path(), "mine.toml", &toml.replace("\"icl-2s-128\"", "\"mine\""));
    let text = stdout_of(&["machines", mine.to_str().unwrap()]);
    assert!(text.starts_with("mine  x86_64, 2 nodes, 128 CPUs, 256 GiB"), "{text}");
    assert!(text.contains("(file "), "{text}");
    let a: serde_json::Value =
        serde_json::from_str(&stdout_of(&["machines", "--json", mine.to_str().unwrap()])).unwrap();
    let b: serde_json::Value =
        serde_json::from_str(&stdout_of(&["machines", "--json", "icl-2s-128"])).unwrap();
    assert_eq!(a["machines"][0]["nodes"], b["machines"][0]["nodes"]);
    assert_eq!(a["machines"][0]["file"], mine.to_str().unwrap());
}

#[test]
fn a_bad_machine_file_names_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "bad.toml",
        "name = \"bad\"\n[[node]]\ncpus = 8\nmemory_gib = 4\nllc_mib = 8\nllc_shared_by = 16\n",
    );
    let err = stderr_of(&["machines", bad.to_str().unwrap()]);
    assert!(
        err.contains(
            "bad.toml:6: field `node[0].llc_shared_by`: 16 CPUs share the LLC but the node has \
             only 8 CPUs"
        ),
        "{err}"
    );
}

#[test]
fn help_explains_the_file_format_with_an_example_that_loads() {
    let text = stdout_of(&["machines", "--help"]);
    assert!(text.contains("--toml spr-2s-224"), "{text}");
    let example: String = text
        .lines()
        .skip_while(|l| l.trim() != "# my-box.toml")
        .take_while(|l| !l.trim().is_empty())
        .map(|l| format!("{}\n", l.trim_start()))
        .collect();
    assert!(example.contains("[[node]]") && example.contains("llc_shared_by"), "{text}");
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "my-box.toml", &example);
    let shown = stdout_of(&["machines", path.to_str().unwrap()]);
    assert!(shown.starts_with("my-box  x86_64, 1 node, 32 CPUs, 64 GiB, 1 LLC domain"), "{shown}");
}

/// Every built-in machine carries its memory hierarchy, every figure with its source, in the
/// text listing and in JSON.
#[test]
fn every_builtin_shows_its_hierarchy_with_sources() {
    let text = stdout_of(&["machines", "spr-2s-224"]);
    assert!(text.contains("memory hierarchy:"), "{text}");
    assert!(text.contains("c2c_remote_ns = 120 ns: load of a line modified on another node"));
    assert!(text.contains("source: Intel TMA model for Sapphire Rapids"), "{text}");
    let doc: serde_json::Value = serde_json::from_str(&stdout_of(&["machines", "--json"])).unwrap();
    for m in doc["machines"].as_array().unwrap() {
        let h = m["hierarchy"].as_object().unwrap_or_else(|| panic!("{}: no hierarchy", m["name"]));
        for key in ["l2_hit_ns", "llc_hit_ns", "dram_local_ns", "handoff_same_llc_ns"] {
            let f = &h[key];
            assert!(f["value"].as_f64().unwrap() > 0.0, "{}: {key}", m["name"]);
            assert!(f["source"].as_str().unwrap().len() > 20, "{}: {key} unsourced", m["name"]);
        }
        let nodes = m["nodes"].as_array().unwrap().len();
        assert!(nodes == 1 || h.contains_key("c2c_remote_ns"), "{}", m["name"]);
    }
}

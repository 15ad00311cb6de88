//! `pagealloc presets` and user preset files: listing, JSON, files, errors, and `exercise
//! --preset FILE`.

use std::path::{Path, PathBuf};

use pagealloc::policy::PRESET_NAMES;
use pagealloc::{Policy, Tunables};

mod common;
use common::{stderr_of, stdout_of};

/// The example of README.md and `pagealloc presets --help`.
const EXAMPLE: &str = r#"# my-variant.toml
name = "my-variant"          # optional; default: file stem
base = "modern"              # required: a built-in preset name
description = "modern with the v1 decay and no ZONE_BELOW_HIGH"
[switches]
high_decay = "four-fifths"
zone_below_high = false
[tunables]
percpu_pagelist_high_fraction = 16
pcp_batch_scale_max = 3
"#;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn listing_shows_every_preset_with_every_switch() {
    let text = stdout_of(&["presets"]);
    for name in PRESET_NAMES {
        assert!(text.lines().any(|l| l.split_whitespace().next() == Some(name)), "{name}\n{text}");
    }
    for key in Policy::KEYS {
        let lines = text.lines().filter(|l| l.trim_start().starts_with(&format!("{key} "))).count();
        assert_eq!(lines, PRESET_NAMES.len(), "{key}");
    }
    assert!(text.contains("seed rows: 000 (vanilla, 5.17-rc3), 004 (vanilla)"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 100), "fits 100 columns");
}

#[test]
fn json_has_every_preset_with_every_key() {
    let out = stdout_of(&["presets", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let presets = doc["presets"].as_array().unwrap();
    let names: Vec<&str> = presets.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, PRESET_NAMES);
    for p in presets {
        assert!(!p["summary"].as_str().unwrap().is_empty());
        assert!(p["unmerged"].is_boolean());
        assert!(p["seed_rows"].is_array());
        for key in Policy::KEYS {
            assert!(!p["switches"][key].is_null(), "{} lacks {key}", p["name"]);
        }
        for key in Tunables::KEYS {
            assert!(!p["tunables"][key].is_null(), "{} lacks {key}", p["name"]);
        }
    }
    let vanilla = &presets[1];
    assert_eq!(vanilla["seed_rows"][0], serde_json::json!({"seed": "000", "label": "vanilla"}));
    assert_eq!(vanilla["switches"]["bulk_free"], "two-pass-round-robin");
    assert_eq!(vanilla["tunables"]["lowmem_reserve_ratio"], serde_json::json!([256, 256, 32, 0]));
    let p7 = presets.iter().find(|p| p["name"] == "tune-p7").unwrap();
    assert_eq!(p7["unmerged"], true);
    assert_eq!(p7["mainline"], "never merged");
    let opt = presets.iter().find(|p| p["name"] == "hpc-opt").unwrap();
    assert_eq!(opt["mainline"], "merged in 5.18");
    assert!(stdout_of(&["presets", "fhigh"]).contains("\n  mainline: ran in 6.16\n"));
}

#[test]
fn names_select_presets() {
    let out = stdout_of(&["presets", "--json", "tune-p7", "hpc-opt"]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> =
        doc["presets"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["tune-p7", "hpc-opt"]);
    let text = stdout_of(&["presets", "hpc-opt"]);
    assert!(text.starts_with("hpc-opt\n"), "{text}");
    assert!(!text.contains("modern"), "{text}");

    let err = stderr_of(&["presets", "modrn"]);
    assert!(err.contains("unknown preset `modrn` (did you mean `modern`?)"), "{err}");
    assert!(err.contains("(built-in presets: modern, hpc-vanilla"), "{err}");
    assert!(err.contains("or give a path to a .toml preset file"), "{err}");
}

#[test]
fn a_preset_file_shows_its_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "my-variant.toml", EXAMPLE);
    let file = path.to_str().unwrap();

    let out = stdout_of(&["presets", "--json", file]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let p = &doc["presets"][0];
    assert_eq!(p["name"], "my-variant");
    assert_eq!(p["base"], "modern");
    assert_eq!(p["file"], file);
    assert_eq!(p["summary"], "modern with the v1 decay and no ZONE_BELOW_HIGH");
    assert_eq!(p["unmerged"], true, "four-fifths is only in the posted v1");
    assert_eq!(p["switches"]["high_decay"], "four-fifths");
    assert_eq!(p["switches"]["zone_below_high"], false);
    assert_eq!(p["switches"]["pcp_high"], "auto-tune", "the rest is modern's");
    assert_eq!(p["tunables"]["percpu_pagelist_high_fraction"], 16);
    assert_eq!(p["tunables"]["pcp_batch_scale_max"], 3);
    assert_eq!(p["tunables"]["watermark_scale_factor"], 10);
    assert_eq!(
        p["overrides"],
        serde_json::json!({
            "high_decay": "four-fifths",
            "zone_below_high": false,
            "percpu_pagelist_high_fraction": 16,
            "pcp_batch_scale_max": 3,
        })
    );

    let text = stdout_of(&["presets", file]);
    assert!(text.starts_with(&format!("my-variant  (file {file}, based on modern)")), "{text}");
    let line = |key: &str| text.lines().find(|l| l.trim_start().starts_with(key)).unwrap();
    assert!(line("high_decay").contains("= \"four-fifths\""), "{text}");
    assert!(line("high_decay").ends_with("# modern: \"seven-eighths\""), "{text}");
    assert!(line("pcp_batch_scale_max").ends_with("# default: 5"), "{text}");

    // A file without a name is named after its stem; built-ins and files mix.
    let path = write(dir.path(), "tiny.toml", "base = \"tune-p1\"\n");
    let out = stdout_of(&["presets", "--json", "modern", path.to_str().unwrap()]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["presets"][1]["name"], "tiny");
    assert_eq!(doc["presets"][1]["switches"]["free_high"], "consecutive");
    assert_eq!(doc["presets"][1]["unmerged"], false);
}

#[test]
fn preset_file_errors_name_the_file_the_line_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    // (file text, the line, what the message must also say)
    let cases: &[(&str, usize, &[&str])] = &[
        // unknown top-level key
        ("base = \"modern\"\nflavor = \"x\"\n", 2, &["unknown key `flavor`", "[tunables]"]),
        // unknown base preset
        ("\nbase = \"moden\"\n", 2, &["`base` = \"moden\"", "modern, hpc-vanilla", "pfrag-pcp"]),
        // missing base
        ("name = \"x\"\n", 1, &["missing key `base`", "tune-p10"]),
        // unknown switch
        (
            "base = \"modern\"\n[switches]\nhigh_decays = \"off\"\n",
            3,
            &["unknown switch `high_decays`", "known switches: pcp_lists"],
        ),
        // unknown tunable
        (
            "base = \"modern\"\n[tunables]\n\nbatch_scale = 3\n",
            4,
            &["unknown tunable `batch_scale`", "known tunables: percpu_pagelist_high_fraction"],
        ),
        // wrong value kind
        (
            "base = \"modern\"\n[switches]\nzone_below_high = \"no\"\n",
            3,
            &["`zone_below_high` takes true or false, not a string"],
        ),
        (
            "base = \"modern\"\n[tunables]\npcp_batch_scale_max = \"3\"\n",
            3,
            &["`pcp_batch_scale_max` takes an integer in 0..=6, not a string"],
        ),
        // out-of-range values
        (
            "base = \"modern\"\n[switches]\nhigh_decay = \"three-quarters\"\n",
            3,
            &["`high_decay` = \"three-quarters\" is not accepted", "off, four-fifths"],
        ),
        (
            "base = \"modern\"\n[tunables]\npercpu_pagelist_high_fraction = 4\n",
            3,
            &["`percpu_pagelist_high_fraction` = 4", "0 or an integer in 8..="],
        ),
        // malformed TOML
        (
            "base = \"modern\"\n[switches]\nhigh_decay = four-fifths\n",
            3,
            &["malformed TOML", "high_decay = four-fifths"],
        ),
    ];
    for (i, (text, line, wanted)) in cases.iter().enumerate() {
        let path = write(dir.path(), &format!("bad{i}.toml"), text);
        let file = path.to_str().unwrap();
        for cmd in [&["presets", file][..], &["exercise", "--ops", "10", "--preset", file][..]] {
            let err = stderr_of(cmd);
            assert!(err.contains(&format!("{file}:{line}: ")), "{text:?}: {err}");
            for w in *wanted {
                assert!(err.contains(w), "{text:?}: {err} lacks {w:?}");
            }
        }
    }
    let err = stderr_of(&["presets", "no/such/file.toml"]);
    assert!(err.contains("cannot read preset file `no/such/file.toml`"), "{err}");
}

#[test]
fn exercise_runs_a_preset_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "my-variant.toml", EXAMPLE);
    let file = path.to_str().unwrap();
    let args = ["exercise", "--mib", "64", "--ops", "3000", "--validate-every", "100"];
    let text = stdout_of(&[&args[..], &["--preset", file]].concat());
    assert!(text.contains("no invariant broken"), "{text}");
    assert!(
        text.starts_with(&format!(
            "preset my-variant from {file}: modern with high_decay = \"four-fifths\""
        )),
        "{text}"
    );
    let out = stdout_of(&[&args[..], &["--preset", file, "--json"]].concat());
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["preset"], "my-variant");
    assert_eq!(doc["tunables"]["pcp_batch_scale_max"], 3, "the file's tunables are used");
    assert_eq!(doc["tunables"]["percpu_pagelist_high_fraction"], 16);
    assert_eq!(doc["violations"], 0);
}

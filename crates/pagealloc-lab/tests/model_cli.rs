//! The model's verbs on small inputs: `run`, `compare`, `reproduce`, `workloads`, `plot` — output
//! shape, JSON, determinism, saved rows, and clear errors for what does not exist — and `run
//! --runner real`, the workloads on OS threads over real memory.

mod common;
use common::{pagealloc, stderr, stdout};

#[test]
fn run_prints_metrics_and_json() {
    let out = pagealloc()
        .args(["run", "trunc", "--machine", "lab-2cpu", "--quick", "--no-save", "--json"])
        .assert()
        .success();
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["workload"], "trunc");
    assert_eq!(doc["machine"], "lab-2cpu");
    assert!(doc["metrics"]["elapsed"]["value"].as_f64().unwrap() > 0.0);
    assert_eq!(doc["metrics"]["elapsed"]["better"], "lower");
    assert_eq!(doc["params"]["files"], 1.0, "--quick scales files 10 → 1");

    let out = pagealloc()
        .args(["run", "trunc", "--machine", "lab-2cpu", "--quick", "--no-save"])
        .args(["--show", "buddyinfo,vmstat"])
        .assert()
        .success();
    let text = stdout(&out);
    assert!(text.contains("zone_lock_pct"), "{text}");
    assert!(text.contains("/proc/buddyinfo:\nNode 0, zone      DMA"), "{text}");
    assert!(text.contains("pgfree "), "{text}");
}

#[test]
fn run_saves_rows_unless_told_not_to() {
    let dir = tempfile::tempdir().unwrap();
    pagealloc()
        .args(["run", "trunc", "--machine", "lab-2cpu", "--quick", "--results"])
        .arg(dir.path())
        .assert()
        .success();
    let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(files.len(), 1);
    let text = std::fs::read_to_string(files[0].as_ref().unwrap().path()).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["workload"], "trunc");
    assert_eq!(first["runner"], "model");
    assert!(first["revision"].is_string());

    // The saved rows draw: `plot --json` names every SVG it wrote, and each is one.
    let plots = dir.path().join("plots");
    let out = pagealloc()
        .arg("plot")
        .arg(files[0].as_ref().unwrap().path())
        .arg("--out")
        .arg(&plots)
        .arg("--json")
        .assert()
        .success();
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let written = doc["files"].as_array().unwrap();
    assert!(written.iter().any(|f| f.as_str().unwrap().contains("pcp-memory")), "{doc}");
    assert!(written.iter().any(|f| f.as_str().unwrap().contains("bars-trunc")), "{doc}");
    for f in written {
        let svg = std::fs::read_to_string(f.as_str().unwrap()).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{f}");
    }
    // trunc never fails an allocation: no bars of a metric that is 0 in every run, unless
    // asked for; one index page shows every chart.
    assert!(!written.iter().any(|f| f.as_str().unwrap().contains("alloc_failures")), "{doc}");
    let index = std::fs::read_to_string(doc["index"].as_str().unwrap()).unwrap();
    for f in written {
        let name = std::path::Path::new(f.as_str().unwrap()).file_name().unwrap();
        assert!(index.contains(&format!("src=\"{}\"", name.to_str().unwrap())), "{index}");
    }
    let out = pagealloc()
        .arg("plot")
        .arg(files[0].as_ref().unwrap().path())
        .arg("--out")
        .arg(&plots)
        .args(["--json", "--metrics", "alloc_failures"])
        .assert()
        .success();
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let written = doc["files"].as_array().unwrap();
    assert!(written.iter().any(|f| f.as_str().unwrap().contains("alloc_failures")), "{doc}");
}

#[test]
fn compare_prints_an_mmtests_table() {
    let compare = |extra: &[&str]| {
        let out = pagealloc()
            .args(["compare", "trunc", "--presets", "hpc-vanilla,hpc-opt", "--iterations", "2"])
            .args(["--machine", "lab-2cpu", "--quick", "--no-save", "--metrics", "elapsed"])
            .args(extra)
            .assert()
            .success();
        stdout(&out)
    };
    let has =
        |text: &str, row: &str| text.lines().any(|l| l.starts_with(row) && l.contains("elapsed"));
    // The default is short: the mean and CoeffVar, and how to read the sign.
    let text = compare(&[]);
    assert!(has(&text, "Amean") && has(&text, "CoeffVar"), "{text}");
    assert!(!has(&text, "Min") && !has(&text, "BAmean-50"), "{text}");
    assert!(text.contains("positive = better"), "{text}");
    assert!(text.contains("hpc-vanilla") && text.contains("hpc-opt"), "{text}");
    // --full: every mmtests row.
    let text = compare(&["--full"]);
    for row in ["Min", "Amean", "Stddev", "CoeffVar", "Max", "BAmean-50"] {
        assert!(has(&text, row), "{text}");
    }

    let out = pagealloc()
        .args(["compare", "trunc", "--presets", "hpc-vanilla,hpc-opt", "--iterations", "2"])
        .args(["--machine", "lab-2cpu", "--quick", "--no-save", "--json"])
        .assert()
        .success();
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let cols = doc["metrics"]["elapsed"]["columns"].as_array().unwrap();
    assert_eq!(cols.len(), 2);
    assert_eq!(cols[0]["samples"].as_array().unwrap().len(), 2);
    assert_eq!(cols[0]["pct"], 0.0);
}

#[test]
fn reproduce_json_is_deterministic_and_shaped_as_documented() {
    let run = || {
        let out = pagealloc()
            .args(["reproduce", "000-trunc@v2", "--quick", "--no-save", "--json"])
            .assert()
            .success();
        stdout(&out)
    };
    let (a, b) = (run(), run());
    assert_eq!(a, b, "same seed, same document");
    let doc: serde_json::Value = serde_json::from_str(&a).unwrap();
    let t = &doc["tables"][0];
    assert_eq!(t["id"], "000-trunc@v2");
    assert_eq!(
        t["seed"],
        "004: Mel Gorman, \"mm/page_alloc: free pages in a single pass during bulk free\" \
         (v2 patch 5/6), 2022-02-17"
    );
    assert_eq!(t["workload"], "trunc");
    assert_eq!(t["machine"], "skylake-1s");
    assert_eq!(t["baseline"], "hpc-vanilla");
    let rows = t["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let base = &rows[0]["metrics"]["elapsed"];
    assert_eq!(base["published"], 543.0);
    assert!(base["ours"].as_f64().unwrap() > 0.0);
    assert!(base.get("verdict").is_none(), "the baseline is not judged");
    let revert = &rows[1]["metrics"]["elapsed"];
    // The printed 530.00 against 543.00, marked significant: a change for the better.
    assert!((revert["published_pct"].as_f64().unwrap() - 2.394).abs() < 1e-3);
    assert_eq!(revert["published_change"], "better");
    let verdict = revert["verdict"].as_str().unwrap();
    assert!(verdict == "change-agrees" || verdict == "change-differs", "{verdict}");
    // The scoreboard recounts from the cells: two published changes, no flat cells, and the
    // reduced scale is said.
    let board = &doc["scoreboard"];
    assert_eq!(board["scale"], "quick");
    assert_eq!(board["comparable_with_full"], false);
    assert_eq!(board["all"]["changes"], 2);
    assert_eq!(board["all"]["flat"], 0);
    let agree =
        rows[1..].iter().filter(|r| r["metrics"]["elapsed"]["verdict"] == "change-agrees").count()
            as u64;
    assert_eq!(board["all"]["changes_agree"].as_u64().unwrap(), agree);
    assert!(!a.contains("wall"), "no timings in the deterministic document");
}

#[test]
fn reproduce_lists_its_tables() {
    let out = pagealloc().args(["reproduce", "--list"]).assert().success();
    let text = stdout(&out);
    for id in ["000-trunc", "001-kbuild", "002-thpfioscale", "003-page-frag", "000-top-pfns"] {
        assert!(text.contains(id), "{text}");
    }
}

#[test]
fn unknown_names_are_clear_errors() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "nope"], "unknown workload `nope`"),
        (&["run", "trunc", "--preset", "nope", "--no-save"], "nope"),
        (&["run", "trunc", "--machine", "nope", "--no-save"], "nope"),
        (&["run", "trunc", "--param", "files=0", "--no-save"], "out of range"),
        (&["run", "trunc", "--param", "nope=1", "--no-save"], "no parameter `nope`"),
        (&["compare", "nope", "--presets", "modern"], "unknown workload"),
        (&["reproduce", "nope"], "no table `nope`"),
        (&["workloads", "nope"], "unknown workload"),
        // A near miss names what was probably meant.
        (&["run", "kbuil"], "unknown workload `kbuil` (did you mean `kbuild`?)"),
        (&["run", "trunc", "--preset", "modren", "--no-save"], "did you mean `modern`?"),
        (&["run", "trunc", "--machine", "skylake-1", "--no-save"], "did you mean `skylake-1s`?"),
        (&["run", "trunc", "--param", "fil_mib=3", "--no-save"], "did you mean `file_mib`?"),
        (&["reproduce", "001-kbuld"], "no table `001-kbuld` (did you mean `001-kbuild`?)"),
    ];
    for (args, needle) in cases {
        let out = pagealloc().args(*args).assert().failure();
        let err = stderr(&out);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn workloads_lists_parameters_with_sources() {
    let out = pagealloc().args(["workloads", "--json"]).assert().success();
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let list = doc["workloads"].as_array().unwrap();
    let trunc = list.iter().find(|w| w["name"] == "trunc").unwrap();
    let files = trunc["params"].as_array().unwrap().iter().find(|p| p["name"] == "files").unwrap();
    assert_eq!(files["default"], 10.0);
    assert!(files["source"].as_str().unwrap().contains("TRUNC_NR_FILES"));
}

#[test]
fn a_real_run_prints_wall_time_metrics_and_saves_real_rows() {
    let dir = tempfile::tempdir().unwrap();
    let out = pagealloc()
        .args(["run", "trunc", "--runner", "real", "--cpus", "2", "--memory-mib", "256"])
        .args(["--param", "file_mib=16", "--quick", "--json", "--results"])
        .arg(dir.path())
        .assert()
        .success();
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["runner"], "real");
    assert_eq!(doc["machine"], "host");
    assert_eq!(doc["cpus"], 2);
    // One file of 16 MiB: 4096 pages read in, each allocated, touched and freed once.
    assert_eq!(doc["metrics"]["pages"]["value"], 4096.0);
    assert_eq!(doc["allocator_calls"], 2 * 4096);
    assert!(doc["metrics"]["elapsed_s"]["value"].as_f64().unwrap() > 0.0);
    // Zone-lock waits are timed by the allocator's clock; where a line was, the real runner
    // cannot tell, so it does not report it.
    assert!(doc["metrics"]["zone_lock_pct"]["value"].as_f64().unwrap() >= 0.0, "{doc}");
    assert!(doc["metrics"].get("cache_miss_pct").is_none(), "{doc}");
    assert!(doc["metrics"].get("lines_remote_pct").is_none(), "{doc}");
    // On a host of two CPUs or more the run is bracketed by the core-to-core probe (unless the
    // machine is too busy for the probe's two threads to run on two CPUs).
    if let Some(c2c) = doc["core_to_core_ns"].as_array() {
        assert!(c2c.iter().all(|x| x.as_f64().is_some_and(|ns| ns > 0.0)), "{doc}");
    }
    let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(files.len(), 1);
    let text = std::fs::read_to_string(files[0].as_ref().unwrap().path()).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["runner"], "real");
    assert_eq!(first["machine"], "host");

    let out = pagealloc()
        .args(["run", "trunc", "--runner", "real", "--cpus", "2", "--memory-mib", "256"])
        .args(["--param", "file_mib=16", "--quick", "--no-save", "--pin", "--show", "buddyinfo"])
        .assert()
        .success();
    let text = stdout(&out);
    assert!(text.contains("trunc on host (2 CPUs)"), "{text}");
    assert!(text.contains("pages touched by 2 threads (pinned)"), "{text}");
    assert!(text.contains("/proc/buddyinfo:\nNode 0, zone   Normal"), "{text}");
    assert!(!text.contains("host: a line crossed") || text.contains(" ns after"), "{text}");
}

#[test]
fn model_options_and_real_options_do_not_mix() {
    let out = pagealloc()
        .args(["run", "trunc", "--runner", "real", "--machine", "lab-2cpu", "--no-save"])
        .assert()
        .failure();
    assert!(stderr(&out).contains("the real runner runs on this host"), "{}", stderr(&out));
    let out = pagealloc().args(["run", "trunc", "--pin", "--no-save"]).assert().failure();
    assert!(stderr(&out).contains("go with --runner real"), "{}", stderr(&out));
    let out = pagealloc()
        .args(["run", "trunc", "--runner", "real", "--trace", "x.trace", "--quick", "--no-save"])
        .assert()
        .failure();
    assert!(stderr(&out).contains("model runner only"), "{}", stderr(&out));
    let out = pagealloc()
        .args(["run", "trunc", "--runner", "real", "--memory-mib", "0", "--no-save"])
        .assert()
        .failure();
    assert!(stderr(&out).contains("--memory-mib 0"), "{}", stderr(&out));
}

/// `validate --quick`: the model of this host beside the real runner, per workload, with a
/// verdict and the ratio per metric (two workloads here, to keep the test short).
#[test]
fn validate_quick_compares_model_and_real_per_workload() {
    let out = pagealloc()
        .args(["validate", "trunc", "page-fault1", "--quick", "--no-save", "--json"])
        .timeout(std::time::Duration::from_secs(300))
        .assert()
        .success();
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["quick"], true);
    assert_eq!(doc["hierarchy_of"], "lab-2cpu");
    // The quick run says so first; a host whose caches are not lab-2cpu's is told to calibrate.
    let notes: Vec<&str> =
        doc["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(notes[0].starts_with("quick run"), "{notes:?}");
    assert!(notes[1..].iter().all(|n| n.contains("pagealloc calibrate")), "{notes:?}");
    // lab-2cpu gives no measured wake-up: the doc says the model wakes sooner for it.
    assert!(notes.iter().any(|n| n.contains("gives no wake_idle_ns")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("gives no write_l2_gbps")), "{notes:?}");
    let ws = doc["workloads"].as_array().unwrap();
    assert_eq!(ws.len(), 2);
    // Every real run is bracketed by a probe of the host's core-to-core latency; the fastest
    // probe is the reference, and a run probed over twice it is set aside and made again.
    // A host of one CPU has no probe, and a busy one may find no window with the probe's two
    // threads on two CPUs (then no run is judged by it).
    assert_eq!(doc["apart_factor"], 2.0);
    let reference = doc["core_to_core_reference_ns"].as_f64();
    assert!(reference.is_none_or(|r| r > 0.0), "{doc}");
    for w in ws {
        let m = &w["metrics"];
        // One real run with --quick, unless a run was made with the host's CPUs apart and so
        // was its second try (then both are compared, and the verdict says so).
        let all_apart = w["all_apart"].as_bool().unwrap();
        let runs = m["elapsed_s"]["real"].as_array().unwrap().len();
        assert_eq!(runs, if all_apart { 2 } else { 1 }, "{w}");
        assert_eq!(w["core_to_core_ns"].as_array().unwrap().len(), runs, "{w}");
        let set_aside = w["set_aside"].as_array().unwrap();
        assert!(set_aside.len() <= 1 && (set_aside.is_empty() || !all_apart), "{w}");
        for a in set_aside {
            let probe = a["core_to_core_ns"].as_array().unwrap();
            let worst = probe.iter().map(|x| x.as_f64().unwrap()).fold(0.0, f64::max);
            assert!(worst > 2.0 * reference.unwrap(), "{w}");
            assert!(a["metrics"]["zone_lock_acquire"].as_f64().is_some(), "{w}");
        }
        for judged in ["elapsed_s", "zone_lock_acquire", "refills", "drains"] {
            assert_eq!(m[judged]["judged"], true, "{judged}");
            assert_eq!(m[judged]["real"].as_array().unwrap().len(), runs, "{judged}");
            // One run has no spread, so no verdict is marked as one more runs could turn.
            assert!(runs > 1 || m[judged]["real_spread"].is_null(), "{judged}");
        }
        assert!(runs > 1 || w["unsettled"] == serde_json::json!([]), "{w}");
        // Where the workload fixes the number of allocator calls, both runners make them all.
        if w["workload"] == "trunc" {
            assert_eq!(m["calls"]["model"], m["calls"]["real_median"], "{w}");
            // The same steps ask for the same work on both runners.
            assert_eq!(m["work_s"]["model"], m["work_s"]["real_median"], "{w}");
        }
        // Where the time beyond the work goes: a price per step on each side, and the idle
        // share of the CPUs' time, a percentage.
        for side in ["model", "real_median"] {
            assert!(m["beyond_work_ns"][side].as_f64().is_some_and(|x| x > 0.0), "{w}");
            let idle = m["idle_pct"][side].as_f64().unwrap();
            assert!((0.0..=100.0).contains(&idle), "{w}");
        }
        assert!(m["cold_touches"]["model"].as_f64().is_some());
        assert!(m["cold_touches"]["real_median"].is_null(), "the real runner cannot tell");
        let verdict = w["verdict"].as_str().unwrap();
        let misses = w["differs_on"].as_array().unwrap();
        assert_eq!(verdict == "agrees", misses.is_empty(), "{w}");
        // The part of a step the runners part most on is one of the three, with both sides.
        let gap = &w["widest_step_gap"];
        let part = gap["metric"].as_str().unwrap();
        assert!(["touch_ns", "calls_ns", "rest_ns"].contains(&part), "{w}");
        assert_eq!(gap["model"], m[part]["model"], "{w}");
        assert_eq!(gap["real"], m[part]["real_median"], "{w}");
        // The real step's own code is split into what counted as its work and what did not;
        // the model has neither.
        for own in ["lab_ns", "lab_over_ns"] {
            assert!(m[own]["model"].is_null(), "{w}");
            assert!(m[own]["real_median"].as_f64().is_some_and(|x| x >= 0.0), "{w}");
        }
    }
}

/// `validate --calibrate DIR`: this host measured first into DIR/host.toml and
/// DIR/cost.toml, the model built from them (no note that the host files are missing), the
/// calibration's table on stderr so that stdout stays one JSON document; and it cannot be
/// given with the files it writes.
#[test]
fn validate_can_calibrate_this_host_first() {
    if std::path::Path::new("/sys/devices/system/node/node1").exists() {
        return; // calibrate writes machine files of one node only
    }
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("now");
    let out = pagealloc()
        .args(["validate", "trunc", "--quick", "--no-save", "--json", "--calibrate"])
        .arg(&files)
        .timeout(std::time::Duration::from_secs(300))
        .assert()
        .success();
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let host = std::fs::read_to_string(files.join("host.toml")).unwrap();
    let cost = std::fs::read_to_string(files.join("cost.toml")).unwrap();
    assert!(host.starts_with("# This host as `pagealloc calibrate` measured it"), "{host}");
    assert!(host.contains("measured by `pagealloc validate trunc --quick"), "the command: {host}");
    assert!(cost.contains("QUICK run"), "the quick plan with --quick: {cost}");
    assert_ne!(doc["hierarchy_of"], "lab-2cpu", "{doc}");
    let notes: Vec<&str> =
        doc["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(!notes.iter().any(|n| n.contains("gives no wake_idle_ns")), "{notes:?}");
    assert_eq!(doc["workloads"].as_array().unwrap().len(), 1);
    let err = stderr(&out);
    assert!(err.contains("write_c2c_gbps") && err.contains("wrote"), "{err}");

    for other in ["--machine", "--cost"] {
        let out = pagealloc()
            .args(["validate", "trunc", "--quick", "--no-save", "--calibrate"])
            .arg(&files)
            .args([other, "x.toml"])
            .assert()
            .failure();
        assert!(stderr(&out).contains("cannot be used with"), "{}", stderr(&out));
    }
}

/// Piped (as in `reproduce | tee out`), reproduce still reports progress on stderr as plain
/// lines, prints each table when its runs are in, marks a quick run on every table, and ends
/// with the scoreboard.
#[test]
fn reproduce_piped_reports_progress_and_says_quick() {
    let out =
        pagealloc().args(["reproduce", "000-trunc@v2", "--quick", "--no-save"]).assert().success();
    let err = stderr(&out);
    assert!(err.contains("runs done") && err.contains("to go"), "{err}");
    let text = stdout(&out);
    let table = text.find("== 000-trunc@v2").expect("the table");
    let board = text.find("scoreboard").expect("the scoreboard");
    assert!(table < board);
    assert!(text.contains("QUICK: reduced scale, not comparable"), "{text}");
    assert!(text.contains("reduced scale (--quick)"), "{text}");
}

/// A preset file is labelled by its `name`, not by its path, in compare's columns and rows.
#[test]
fn preset_files_are_labelled_by_their_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("some-long-file-name.toml");
    std::fs::write(&path, "name = \"mine\"\nbase = \"modern\"\n").unwrap();
    let presets = format!("modern,{}", path.display());
    let out = pagealloc()
        .args(["compare", "trunc", "--machine", "lab-2cpu", "--quick", "--no-save", "--presets"])
        .arg(&presets)
        .args(["--param", "file_mib=16", "--iterations", "1"])
        .assert()
        .success();
    let text = stdout(&out);
    assert!(text.contains("mine"), "{text}");
    assert!(!text.contains("some-long-file-name"), "{text}");
    // Two files with one name cannot share a table.
    let other = dir.path().join("other.toml");
    std::fs::write(&other, "name = \"mine\"\nbase = \"tune-base\"\n").unwrap();
    let presets = format!("{},{}", path.display(), other.display());
    let out = pagealloc()
        .args(["compare", "trunc", "--machine", "lab-2cpu", "--quick", "--no-save", "--presets"])
        .arg(&presets)
        .assert()
        .failure();
    let err = stderr(&out);
    assert!(err.contains("two of --presets are named `mine`"), "{err}");
}

/// A workload whose defaults need a bigger machine runs on a small one with fitted defaults,
/// said in the output; an override that cannot fit is refused with a value that does.
#[test]
fn workloads_fit_small_machines_and_say_so() {
    let out = pagealloc()
        .args(["run", "lmbench-unix", "--machine", "lab-2cpu", "--quick", "--no-save"])
        .args(["--param", "duration_s=0.05"])
        .assert()
        .success();
    let text = stdout(&out);
    assert!(text.contains("fitted to lab-2cpu: pairs=1 (default 16: each pair takes 2"), "{text}");
    let out = pagealloc()
        .args(["run", "lmbench-unix", "--machine", "lab-2cpu", "--no-save", "--param", "pairs=4"])
        .assert()
        .failure();
    let err = stderr(&out);
    assert!(err.contains("--param pairs=4: does not fit"), "{err}");
    assert!(err.contains("pairs=1 does"), "{err}");
}

/// A netperf-sctp run that ends with a packet still in a reader's socket backlog returns
/// it with the rest: before the backlog's packets were counted among what the workload
/// holds, this run (seed 1) ended with four pages unaccounted for, which the model's
/// conservation check turns into an error.
#[test]
fn a_packet_left_in_a_readers_backlog_comes_back() {
    pagealloc()
        .args(["run", "netperf-sctp-stream-many", "--preset", "tune-base", "--scale", "0.05"])
        .args(["--param", "wake_ns=500", "--no-save"])
        .assert()
        .success();
}

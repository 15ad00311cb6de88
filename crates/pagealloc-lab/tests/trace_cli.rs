//! Traces in and out: `replay` on hand-written samples of each tool's output and of each
//! messy case (fixtures/traces/README.md says where each line shape comes from), `run
//! --trace` and the round trip, `--show` on `replay` and `reproduce`.

use std::path::PathBuf;

use serde_json::Value;

mod common;
use common::{pagealloc, stderr, stdout};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces").join(name)
}

/// `replay FILE --json` with `extra` arguments.
fn replay(file: &std::path::Path, extra: &[&str]) -> Value {
    let out = pagealloc().arg("replay").arg(file).arg("--json").args(extra).assert().success();
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// Every kind a document reports, as (part, kind, count).
fn kinds(doc: &Value) -> Vec<(String, String, u64)> {
    let mut v = Vec::new();
    for part in ["skipped", "repaired"] {
        for (k, n) in doc[part].as_object().unwrap() {
            v.push((part.to_string(), k.clone(), n.as_u64().unwrap()));
        }
    }
    v
}

/// A fixture, the format it is detected as, its page events, and its (part, kind, count)s.
type Case = (&'static str, &'static str, u32, &'static [(&'static str, &'static str, u64)]);

/// Each fixture: the format auto-detection picks, and exactly the kinds of trouble it holds.
#[test]
fn each_sample_is_detected_and_its_trouble_counted_by_kind() {
    let cases: &[Case] = &[
        ("ftrace-6x.txt", "ftrace", 14, &[("skipped", "header", 12)]),
        (
            "trace-pipe-4x.txt",
            "ftrace",
            7,
            &[
                ("skipped", "kernel_alloc_failed", 2),
                ("skipped", "free_unknown", 1),
                ("repaired", "decimal_pfn", 7),
                ("repaired", "vendor_field", 5),
            ],
        ),
        (
            "ftrace-2.6.33.txt",
            "ftrace",
            7,
            &[
                ("skipped", "header", 4),
                ("skipped", "repeated", 2),
                ("skipped", "kernel_alloc_failed", 1),
                ("skipped", "free_unknown", 1),
                ("repaired", "old_event_name", 3),
                ("repaired", "decimal_pfn", 7),
            ],
        ),
        (
            "function-graph.txt",
            "ftrace",
            4,
            &[
                ("skipped", "header", 4),
                ("skipped", "other_event", 6),
                ("skipped", "kernel_alloc_failed", 1),
                ("repaired", "decimal_pfn", 4),
                ("repaired", "function_graph", 4),
                ("repaired", "no_timestamp", 2),
            ],
        ),
        (
            "trace-cmd-report.txt",
            "trace-cmd",
            6,
            &[
                ("skipped", "header", 4),
                ("skipped", "other_event", 1),
                ("repaired", "numeric_gfp", 2),
            ],
        ),
        (
            "perf-script.txt",
            "perf",
            4,
            &[
                ("skipped", "header", 4),
                ("skipped", "text", 3),
                ("skipped", "stack_trace", 8),
                ("repaired", "decimal_pfn", 4),
            ],
        ),
        (
            "mail-paste.txt",
            "ftrace",
            5,
            &[
                ("skipped", "header", 2),
                ("skipped", "text", 6),
                ("skipped", "stack_trace", 3),
                ("skipped", "lost_events", 1),
                ("skipped", "truncated", 1),
                ("skipped", "free_unknown", 1),
                ("repaired", "crlf", 17),
                ("repaired", "mail_quote", 10),
                ("repaired", "quoted_printable", 1),
                ("repaired", "unknown_gfp", 1),
                ("repaired", "reallocated", 1),
            ],
        ),
    ];
    for &(file, format, events, expected) in cases {
        let doc = replay(&fixture(file), &[]);
        assert_eq!(doc["format"], format, "{file}");
        assert_eq!(doc["events"], events, "{file}");
        let mut want: Vec<(String, String, u64)> =
            expected.iter().map(|&(p, k, n)| (p.to_string(), k.to_string(), n)).collect();
        want.sort();
        let mut got = kinds(&doc);
        got.sort();
        assert_eq!(got, want, "{file}");
    }
}

#[test]
fn kernel_counts_stand_beside_ours() {
    let doc = replay(&fixture("ftrace-6x.txt"), &["--show", "buddyinfo,vmstat"]);
    let (k, o) = (&doc["counts"]["kernel"], &doc["counts"]["ours"]);
    // What the kernel did, from its own drain / zone-locked / extfrag lines.
    assert_eq!(k["pcpu_drain"]["events"], 2);
    assert_eq!(k["pcpu_drain"]["pages"], 9);
    assert_eq!(k["zone_locked"]["percpu_refill"], 1);
    assert_eq!(k["extfrag"]["change_ownership"], 1);
    // The stream replayed: the same allocations and frees, order by order.
    assert_eq!(k["alloc"], o["alloc"]);
    assert_eq!(k["free"]["2"], o["free"]["2"]);
    assert_eq!(k["free"]["3"], o["free"]["3"]);
    // The kernel's free_batched line is a free of order 0; ours are all mm_page_free.
    assert_eq!(k["free_batched"], 1);
    assert_eq!(k["free"]["0"].as_u64().unwrap() + 1, o["free"]["0"].as_u64().unwrap());
    assert_eq!(doc["cpus"], 4);
    assert_eq!(doc["machine"], "trace-fit");
    assert_eq!(doc["machine_cpus"], 4);
    // Highest PFN 0x2b4f03 is 10.8 GiB of address space: 11 GiB.
    assert_eq!(doc["memory_bytes"], 11u64 << 30);
    assert!(doc["views"]["buddyinfo"].as_str().unwrap().starts_with("Node 0, zone      DMA"));
    assert!(doc["views"]["vmstat"].as_str().unwrap().contains("pgfree "));
}

#[test]
fn replay_is_deterministic_and_takes_presets() {
    let strip = |mut d: Value| {
        d["timing"] = Value::Null;
        d
    };
    let f = fixture("trace-cmd-report.txt");
    let a = strip(replay(&f, &["--preset", "tune-base"]));
    let b = strip(replay(&f, &["--preset", "tune-base"]));
    assert_eq!(a, b);
    assert_eq!(a["preset"], "tune-base");
}

#[test]
fn the_format_can_be_forced() {
    // Forced trace-cmd on the kernel's own file: the event lines read the same.
    let doc = replay(&fixture("ftrace-6x.txt"), &["--format", "trace-cmd"]);
    assert_eq!((doc["format"].as_str(), doc["events"].as_u64()), (Some("trace-cmd"), Some(14)));
    assert_eq!(doc["detected"], "forced");
    // function_graph comments are an ftrace shape: forced to perf, nothing is left.
    let out = pagealloc()
        .arg("replay")
        .arg(fixture("function-graph.txt"))
        .args(["--format", "perf"])
        .assert()
        .failure();
    assert!(stderr(&out).contains("no kmem page event"), "{}", stderr(&out));
}

#[test]
fn what_is_not_a_trace_is_a_clear_error() {
    let out = pagealloc().arg("replay").arg(fixture("not-a-trace.txt")).assert().failure();
    let err = stderr(&out);
    assert!(err.contains("not-a-trace.txt"), "{err}");
    assert!(err.contains("not a trace"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("perf.data");
    std::fs::write(&bin, b"PERFILE2\x68\0\0\0\0\0\0\0").unwrap();
    let out = pagealloc().arg("replay").arg(&bin).assert().failure();
    assert!(stderr(&out).contains("perf script -i"), "{}", stderr(&out));
    // A PFN no machine has: no fitted machine of petabytes, a clear word instead.
    let huge = dir.path().join("huge.txt");
    std::fs::write(&huge, "a-1 [000] .... 1.0: mm_page_free: page=0 pfn=0xfffffffffff order=0\n")
        .unwrap();
    let out = pagealloc().arg("replay").arg(&huge).assert().failure();
    assert!(stderr(&out).contains("--machine"), "{}", stderr(&out));
    pagealloc().arg("replay").arg(&huge).args(["--machine", "lab-2cpu"]).assert().success();
}

#[test]
fn a_machine_with_too_few_cpus_is_refused() {
    let out = pagealloc()
        .arg("replay")
        .arg(fixture("ftrace-6x.txt"))
        .args(["--machine", "lab-2cpu"])
        .assert()
        .failure();
    let err = stderr(&out);
    assert!(err.contains("events on CPU 3") && err.contains("`lab-2cpu` has 2 CPUs"), "{err}");
}

/// A model run written as a trace and replayed gives back the same allocations and frees,
/// order by order: the writer and the parser agree, and the replay maps every PFN.
#[test]
fn model_run_to_trace_to_replay_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trunc.trace");
    let out = pagealloc()
        .args(["run", "trunc", "--machine", "lab-2cpu", "--quick", "--no-save", "--json"])
        .args(["--param", "file_mib=64"])
        .arg("--trace")
        .arg(&file)
        .assert()
        .success();
    let run: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let written = run["trace"]["events"].as_u64().unwrap();
    assert!(written > 1000, "{written}");
    let doc = replay(&file, &["--machine", "lab-2cpu"]);
    assert_eq!(doc["format"], "ftrace");
    assert_eq!(doc["events"].as_u64(), Some(written), "every written line reads back");
    assert_eq!(kinds(&doc), vec![("skipped".into(), "header".into(), 10)]);
    let (k, o) = (&doc["counts"]["kernel"], &doc["counts"]["ours"]);
    assert!(k["alloc"]["0"].as_u64().unwrap() > 0);
    assert_eq!(k["alloc"], o["alloc"]);
    assert_eq!(k["free"], o["free"]);
    assert_eq!(k["alloc_failed"], o["alloc_failed"]);
    // The run's own pageset refills show in its trace as zone-locked takes.
    assert!(k["zone_locked"]["percpu_refill"].as_u64().unwrap() > 0);
}

#[test]
fn reproduce_shows_proc_views_of_each_presets_last_run() {
    let args = ["reproduce", "000-trunc@v2", "--quick", "--no-save", "--iterations", "1"];
    let out = pagealloc().args(args).args(["--show", "buddyinfo"]).assert().success();
    let text = stdout(&out);
    assert!(text.contains("000-trunc@v2 hpc-vanilla, last run: /proc/buddyinfo:"), "{text}");
    let out = pagealloc().args(args).args(["--show", "buddyinfo", "--json"]).assert().success();
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let views = doc["tables"][0]["views"].as_object().unwrap();
    assert_eq!(views.len(), doc["tables"][0]["rows"].as_array().unwrap().len());
    for v in views.values() {
        assert!(v["buddyinfo"].as_str().unwrap().starts_with("Node 0, zone      DMA"));
    }
    // Without --show the document has no views at all.
    let out = pagealloc().args(args).arg("--json").assert().success();
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(doc["tables"][0].get("views").is_none());
}

/// `replay FILE` that must fail with exit code 1; its stderr.
fn replay_fails(file: &std::path::Path) -> String {
    let out = pagealloc().arg("replay").arg(file).assert().failure().code(1);
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// Numbers no machine or clock holds are refused with FILE:LINE before anything is sized
/// from them (they wrapped: "the machine has 0 CPUs, give at least 0", a 1 GiB machine for
/// the last PFN, a clock overflow); two captures concatenated are refused, a step back in
/// time over a second is warned about.
#[test]
fn impossible_numbers_and_concatenated_captures() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let free = |cpu: u32, t: &str, pfn: u64| {
        format!("a-1 [{cpu:03}] .... {t}: mm_page_free: page=0 pfn={pfn:#x} order=0\n")
    };
    let cases = [
        (
            "cpu.txt",
            free(0, "1.0", 1) + &free(u32::MAX, "1.0", 2),
            ":2: CPU 4294967295: a machine has at most 1048576 CPUs",
        ),
        (
            "pfn.txt",
            free(0, "1.0", u64::MAX),
            ":1: PFN 0xffffffffffffffff order 0: the block runs past",
        ),
        (
            "span.txt",
            free(0, "1.0", 1) + &free(1, "10000001.0", 2),
            ":2: this event comes 10000000 s after the earliest (line 1), more than the 9223372 s",
        ),
    ];
    for (name, text, want) in cases {
        let p = write(name, &text);
        let err = replay_fails(&p);
        assert!(err.contains(&format!("{}{want}", p.display())), "{err}");
    }
    let one = std::fs::read_to_string(fixture("ftrace-6x.txt")).unwrap();
    let p = write("two.txt", &[one.as_str(), one.as_str()].concat());
    let err = replay_fails(&p);
    let second = one.lines().count() + 1;
    assert!(
        err.contains(&format!(
            "{}:{second}: a second capture begins here (\"# tracer: nop\" after 14 page events)",
            p.display()
        )),
        "{err}"
    );
    // The same capture with its header cut: no header to tell, but time goes back 4000 s.
    let body: String =
        one.lines().filter(|l| !l.starts_with('#')).map(|l| format!("{l}\n")).collect();
    let shifted = body.replace(" 4087.", " 87.");
    let p = write("back.txt", &[body.as_str(), shifted.as_str()].concat());
    let out = pagealloc().arg("replay").arg(&p).arg("--json").assert().success();
    let err = stderr(&out);
    assert!(
        err.contains(&format!("warning: {}:15: time on CPU 0 goes back 4000.000 s", p.display())),
        "{err}"
    );
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["warnings"].as_array().unwrap().len(), 1, "{doc}");
    assert_eq!(replay(&fixture("ftrace-6x.txt"), &[])["warnings"], serde_json::json!([]));
}

/// Kernel events the trace never recorded print `–` beside our counts, not a 0 that reads as
/// "the kernel never drained"; the JSON lists them.
#[test]
fn events_the_trace_never_recorded_are_marked_not_traced() {
    // trace-pipe-4x has allocations and frees only.
    let doc = replay(&fixture("trace-pipe-4x.txt"), &[]);
    assert_eq!(doc["not_traced"], serde_json::json!(["pcpu_drain", "zone_locked", "extfrag"]));
    let out = pagealloc().arg("replay").arg(fixture("trace-pipe-4x.txt")).assert().success();
    let text = stdout(&out);
    let row = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("{name}: {text}"))
            .to_string()
    };
    let drains = row("pageset drains");
    assert_eq!(drains.split_whitespace().rev().nth(1), Some("–"), "{drains}");
    assert_eq!(row("zone-locked takes").split_whitespace().rev().nth(1), Some("–"));
    assert_ne!(row("allocations").split_whitespace().rev().nth(1), Some("–"));
    assert!(text.contains("– the trace has no event of this kind"), "{text}");
    // ftrace-6x recorded every kind.
    assert_eq!(replay(&fixture("ftrace-6x.txt"), &[])["not_traced"], serde_json::json!([]));
}

/// `--kernel` picks the layout the views are printed in; junk and too-old versions are
/// refused by the argument parser, naming the value.
#[test]
fn views_follow_the_kernel_version() {
    let f = fixture("ftrace-6x.txt");
    let views = |extra: &[&str]| {
        let mut args = vec!["--show", "zoneinfo,pagetypeinfo"];
        args.extend_from_slice(extra);
        let doc = replay(&f, &args);
        let v = &doc["views"];
        (v["zoneinfo"].as_str().unwrap().to_owned(), v["pagetypeinfo"].as_str().unwrap().to_owned())
    };
    let (zoneinfo, pagetypeinfo) = views(&[]);
    assert!(zoneinfo.contains("\n              high_min: "), "{zoneinfo}");
    assert!(pagetypeinfo.contains("   HighAtomic          CMA      Isolate \n"));
    let (zoneinfo, pagetypeinfo) = views(&["--kernel", "4.3", "--kernel-config", "no-cma"]);
    assert!(zoneinfo.contains("\n        scanned  0\n"), "{zoneinfo}");
    assert!(zoneinfo.contains("\n  all_unreclaimable: 0\n"), "{zoneinfo}");
    assert!(!zoneinfo.contains("zone  Movable"), "before 4.12 only populated zones");
    assert!(
        pagetypeinfo.contains(
            "Number of blocks type     Unmovable  Reclaimable      Movable      Reserve      Isolate \n"
        ),
        "{pagetypeinfo}"
    );
    let (zoneinfo, _) = views(&["--kernel", "v6.7", "--kernel-config", "no-zone-device"]);
    assert!(!zoneinfo.contains("high_min") && !zoneinfo.contains("promo"), "{zoneinfo}");
    assert!(zoneinfo.contains("\n        boost    "));
    for (bad, says) in [("six", "is not a kernel version"), ("2.6", "older than 3.2")] {
        let out = pagealloc()
            .arg("replay")
            .arg(&f)
            .args(["--show", "zoneinfo", "--kernel", bad])
            .assert()
            .failure()
            .code(2);
        let err = stderr(&out);
        assert!(err.contains(says) && err.contains(bad), "{err}");
    }
}

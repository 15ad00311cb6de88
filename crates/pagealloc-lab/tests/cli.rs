//! The `pagealloc` command on small inputs: output shape, JSON, and clear errors.

mod common;
use common::{pagealloc, stderr, stdout};

#[test]
fn exercise_runs_a_small_checked_program() {
    let out = pagealloc()
        .args(["exercise", "--mib", "64", "--ops", "3000", "--validate-every", "100"])
        .assert()
        .success();
    let text = stdout(&out);
    assert!(text.contains("no invariant broken"), "{text}");
    assert!(text.contains("Node 0, zone    DMA32"), "{text}");
}

#[test]
fn exercise_json_is_one_document() {
    let out = pagealloc()
        .args(["exercise", "--mib", "64", "--nodes", "2", "--ops", "2000", "--json"])
        .assert()
        .success();
    let doc: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(doc["ops"], 2000);
    assert_eq!(doc["violations"], 0);
    assert!(doc["allocs"].as_u64().unwrap() > 0);
    assert_eq!(
        doc["zones"].as_array().unwrap().len(),
        3,
        "DMA and DMA32 on node 0, DMA32 on node 1"
    );
}

#[test]
fn unknown_preset_is_a_clear_error() {
    let out = pagealloc().args(["exercise", "--preset", "no-such"]).assert().failure();
    let err = stderr(&out);
    assert!(err.contains("unknown preset `no-such`"), "{err}");
}

/// A reader that goes away (`pagealloc workloads | head -1`) ends the command quietly by
/// SIGPIPE, as it ends `cat`: no panic message, no exit status 101. The reader here is gone
/// before the command writes its first line.
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    /// SIGPIPE's number on Linux.
    const SIGPIPE: i32 = 13;
    for args in [&["workloads"][..], &["presets"], &["machines"]] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_pagealloc"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_ne!(out.status.code(), Some(101), "{args:?}: {stderr}");
        assert!(
            out.status.signal() == Some(SIGPIPE) || out.status.success(),
            "{args:?}: {:?} {stderr}",
            out.status
        );
    }
}

/// `--version` names the revision the binary was built from, and so do result rows, wherever
/// the command runs (here from a directory that is no git checkout).
#[test]
fn the_version_and_the_rows_carry_the_built_revision() {
    let dir = std::env::temp_dir();
    let out = pagealloc().current_dir(&dir).arg("--version").assert().success();
    let text = stdout(&out);
    let want = format!("pagealloc {} (", env!("CARGO_PKG_VERSION"));
    assert!(text.starts_with(&want) && text.trim_end().ends_with(')'), "{text}");
    let revision = text.trim_end().trim_start_matches(&want).trim_end_matches(')').to_owned();
    assert!(!revision.is_empty());
    let rows_dir = dir.join(format!("pagealloc-revision-{}", std::process::id()));
    pagealloc()
        .current_dir(&dir)
        .args(["run", "trunc", "--quick", "--results"])
        .arg(&rows_dir)
        .assert()
        .success();
    let file = std::fs::read_dir(&rows_dir).unwrap().next().unwrap().unwrap().path();
    let rows = std::fs::read_to_string(&file).unwrap();
    std::fs::remove_dir_all(&rows_dir).unwrap();
    assert!(rows.contains(&format!("\"revision\":\"{revision}\"")), "{revision} not in {rows}");
}

/// Help is wrapped: no line of any command's `--help` is wider than 100 columns (the width
/// clap uses when the output is not a terminal).
#[test]
fn help_is_wrapped() {
    let commands = [
        "exercise",
        "bench",
        "calibrate",
        "presets",
        "sizing",
        "run",
        "replay",
        "compare",
        "reproduce",
        "workloads",
        "plot",
        "machines",
        "stress",
        "validate",
    ];
    for c in commands {
        let out = pagealloc().args([c, "--help"]).assert().success();
        let text = stdout(&out);
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
        assert!(widest <= 100, "`pagealloc {c} --help` has a line of {widest} columns");
    }
}

/// An output that cannot be written stops a long command before its work, not after it:
/// a calibration's minutes or a full `reproduce` are not lost to a mistyped directory.
/// Each message comes from the check made before the work (the write after it says
/// `writing …`), and none of the commands got as far as its progress lines.
#[test]
fn an_unwritable_output_is_refused_before_the_work() {
    let dir = std::env::temp_dir().join(format!("pagealloc-cli-out-{}", std::process::id()));
    let bad = dir.join("no-such-dir").join("out");
    let bad = bad.to_str().unwrap();
    let cases: [(&[&str], &str); 6] = [
        (&["calibrate", "--quick", "--out", bad], "cannot write the cost profile"),
        (&["calibrate", "--quick", "--machine-out", bad], "cannot write the machine file"),
        (
            &["reproduce", "000-trunc", "--quick", "--no-save", "--report", bad],
            "cannot write the report",
        ),
        (
            &["compare", "trunc", "--presets", "modern", "--quick", "--no-save", "--report", bad],
            "cannot write the report",
        ),
        (&["explore", "--quick", "--no-save", "--report", bad], "cannot write the report"),
        (
            &["bench", "--patterns", "pair-1", "--reps", "1", "--json-out", bad],
            "cannot write the JSON file",
        ),
    ];
    for (args, want) in cases {
        let out = pagealloc().args(args).assert().failure();
        let err = stderr(&out);
        assert!(err.contains(want) && err.contains("no-such-dir"), "{args:?}: {err}");
        assert!(
            !err.contains("round 1/") && !err.contains("runs done"),
            "{args:?} worked first: {err}"
        );
    }
}

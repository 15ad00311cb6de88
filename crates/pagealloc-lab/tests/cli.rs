//! The `pagealloc` command on small inputs: output shape, JSON, and clear errors.

use assert_cmd::Command;

fn pagealloc() -> Command {
    Command::cargo_bin("pagealloc").expect("binary built")
}

#[test]
fn exercise_runs_a_small_checked_program() {
    let out = pagealloc()
        .args(["exercise", "--mib", "64", "--ops", "3000", "--validate-every", "100"])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
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
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("unknown preset `no-such`"), "{err}");
}

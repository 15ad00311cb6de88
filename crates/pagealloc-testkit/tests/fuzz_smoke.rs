//! The fuzz target's body on stable: seeded pseudo-random byte strings through
//! [`fuzz::run_bytes`], the function `fuzz/fuzz_targets/op_programs.rs` calls for every input
//! (a crash input the fuzzer finds becomes a named test here, with its bytes).

use pagealloc_testkit::fuzz::{self, decode};
use pagealloc_testkit::machines::Shape;
use pagealloc_testkit::rng::Rng;
use pagealloc_testkit::runner::RunStats;

/// Inputs per run: about 2 s of the test profile on one core.
const INPUTS: usize = 5000;

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

/// `a` + `b`, counter by counter.
fn add(a: RunStats, b: RunStats) -> RunStats {
    RunStats {
        allocs: a.allocs + b.allocs,
        alloc_failures: a.alloc_failures + b.alloc_failures,
        frees: a.frees + b.frees,
        bad_frees: a.bad_frees + b.bad_frees,
        frag_allocs: a.frag_allocs + b.frag_allocs,
        frag_zero_size: a.frag_zero_size + b.frag_zero_size,
        frag_alloc_failures: a.frag_alloc_failures + b.frag_alloc_failures,
        frag_bad_requests: a.frag_bad_requests + b.frag_bad_requests,
        frag_frees: a.frag_frees + b.frag_frees,
        frag_drains: a.frag_drains + b.frag_drains,
        frag_double_frees: a.frag_double_frees + b.frag_double_frees,
        frag_still_referenced: a.frag_still_referenced + b.frag_still_referenced,
        frag_pages_freed: a.frag_pages_freed + b.frag_pages_freed,
        compactions: a.compactions + b.compactions,
        migrated: a.migrated + b.migrated,
    }
}

#[test]
fn random_inputs_run_clean() {
    let mut rng = Rng::new(0x6f70_5f70_726f_6773);
    let mut ops = 0usize;
    let mut all = RunStats::default();
    let mut shapes = [false; Shape::ALL.len()];
    for _ in 0..INPUTS {
        // Mostly short programs, like the fuzzer's early corpus; some long enough to exhaust
        // the tiny machine.
        let len = if rng.chance(0.9) { rng.below(64) } else { rng.below(600) } as usize;
        let data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        let case = decode(&data);
        let stats = fuzz::run_case(&case).unwrap_or_else(|f| {
            panic!("input {}: {:?} {}: {f}", hex(&data), case.shape, case.preset)
        });
        ops += case.ops.len();
        all = add(all, stats);
        shapes[Shape::ALL.iter().position(|&s| s == case.shape).unwrap()] = true;
    }
    eprintln!("{ops} ops: {all:?}");
    // The inputs must reach what the fuzzer reaches: every shape, refused bad frees, and
    // allocations that fail at the watermark.
    assert!(shapes.iter().all(|&s| s), "shapes reached: {shapes:?}");
    assert!(ops > INPUTS * 20 && all.allocs > 0 && all.bad_frees > 0, "{ops} ops, {all:?}");
    assert!(all.alloc_failures > 0, "no allocation ever failed: exhaustion is not reached");
    // Compactions run (short random programs rarely leave anything to move: `programs.rs`
    // checks moves).
    assert!(all.compactions > 0, "no compaction ran: {all:?}");
    // And every page_frag case: fragments carved (zero-byte ones too), freed and drained;
    // bad alignments and sizes, second frees and `free_pages` under live fragments refused;
    // a page freed by `free_pages` with its last fragment.
    let frag = [
        ("carved", all.frag_allocs),
        ("zero-byte", all.frag_zero_size),
        ("bad requests refused", all.frag_bad_requests),
        ("freed", all.frag_frees),
        ("drains", all.frag_drains),
        ("second frees refused", all.frag_double_frees),
        ("free_pages refused", all.frag_still_referenced),
        ("pages freed by free_pages", all.frag_pages_freed),
    ];
    for (what, n) in frag {
        assert!(n > 0, "no page_frag op reached `{what}`: {all:?}");
    }
}

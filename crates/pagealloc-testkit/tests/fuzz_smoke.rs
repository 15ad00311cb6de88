//! The fuzz target's body on stable: seeded pseudo-random byte strings through
//! [`fuzz::run_bytes`], the function `fuzz/fuzz_targets/op_programs.rs` calls for every input
//! (a crash input the fuzzer finds becomes a named test here, with its bytes).

use pagealloc_testkit::fuzz::{self, decode};
use pagealloc_testkit::machines::Shape;
use pagealloc_testkit::rng::Rng;

/// Inputs per run: about 2 s of the test profile on one core.
const INPUTS: usize = 5000;

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn random_inputs_run_clean() {
    let mut rng = Rng::new(0x6f70_5f70_726f_6773);
    let (mut ops, mut allocs, mut failures, mut bad_frees) = (0usize, 0u64, 0u64, 0u64);
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
        allocs += stats.allocs;
        failures += stats.alloc_failures;
        bad_frees += stats.bad_frees;
        shapes[Shape::ALL.iter().position(|&s| s == case.shape).unwrap()] = true;
    }
    // The inputs must reach what the fuzzer reaches: every shape, refused bad frees, and
    // allocations that fail at the watermark.
    assert!(shapes.iter().all(|&s| s), "shapes reached: {shapes:?}");
    assert!(ops > INPUTS * 20 && allocs > 0 && bad_frees > 0, "{ops} ops, {allocs} allocs");
    assert!(failures > 0, "no allocation ever failed: exhaustion is not reached");
}

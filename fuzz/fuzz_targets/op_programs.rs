//! Any byte string is a machine shape, a preset and an op program
//! (`pagealloc_testkit::fuzz::decode`), run with the oracle checking every answer and the
//! validator after every op; a failed check is a crash. The same function runs on stable in
//! `crates/pagealloc-testkit/tests/fuzz_smoke.rs`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(f) = pagealloc_testkit::fuzz::run_bytes(data) {
        panic!("{f}");
    }
});

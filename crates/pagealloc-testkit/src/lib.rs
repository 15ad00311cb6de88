//! Test support for `pagealloc`: a reference model of what must hold for any allocator
//! (the [`oracle`]), random programs of allocator operations ([`program`]), a runner that
//! executes a program against the oracle and the validator ([`runner`]), machine shapes
//! that exercise zones, holes, nodes and CMA ([`machines`]), the decoder that turns a fuzz
//! input into a machine, a preset and a program ([`fuzz`]), and the order sequence of the
//! benchmarks' random mix ([`bench_mix`]), and a lock type that counts its acquisitions
//! ([`lock`]).
//!
//! Property tests, the fuzz target and the lab's stress command all drive the allocator
//! through [`runner::run`], so a bug found by one is replayable by the others.

pub mod bench_mix;
pub mod fuzz;
// Under `--cfg loom` the core's lock trait is loom's own, without a const constructor.
#[cfg(not(loom))]
pub mod lock;
pub mod machines;
pub mod oracle;
pub mod program;
pub mod rng;
pub mod runner;

//! Order-0 alloc+free pairs through a `PageHeap`, shaped as `pagealloc bench`'s loop (each
//! block gets an 8-byte tag on allocation, read back before its free) but with every call
//! inlined into one function: the wall-clock driver of docs/performance.md's fast path v2,
//! step 5, and a loop for `perf record` or callgrind without the bench's harness.
//!
//! ```sh
//! cargo build --release -p pagealloc-heap --example heap_pairs
//! target/release/examples/heap_pairs 1 1000000 15 [--remote-free]
//! valgrind --tool=callgrind --toggle-collect='*heap_pairs*measured*' \
//!     target/release/examples/heap_pairs 64 200000 1
//! ```
//!
//! Arguments: blocks live at once, pairs per run, runs (default 1), and `--remote-free` for
//! the modern preset with `Policy::remote_free` on. Prints the median and the fastest run in
//! ns per pair; a warm-up run of a quarter of the pairs comes first (callgrind collects it
//! too: divide by 1.25 times the pairs).
#![allow(unsafe_code)]

use std::hint::black_box;
use std::process::ExitCode;
use std::ptr::NonNull;

use pagealloc::{Order, Policy};
use pagealloc_heap::{HeapOptions, PageHeap};

/// `rounds` rounds of `out` allocations, each tagged, then their frees in allocation order.
/// Returns the pairs whose tag changed or whose free was refused (0 when all is well).
#[inline(never)]
fn measured(h: &PageHeap, out: usize, rounds: u64, live: &mut Vec<(NonNull<u8>, u64)>) -> u64 {
    let (mut tag, mut bad) = (0u64, 0u64);
    for _ in 0..rounds {
        for _ in 0..out {
            let p = h.alloc_pages(black_box(Order(0))).expect("memory");
            // SAFETY: a live block of 4096 bytes, aligned to its size, which only this loop
            // holds until its free below.
            unsafe { p.as_ptr().cast::<u64>().write(tag) };
            live.push((p, tag));
            tag += 1;
        }
        for (p, t) in live.drain(..) {
            // SAFETY: as above; the block is still live.
            let seen = unsafe { p.as_ptr().cast::<u64>().read() };
            bad += u64::from(black_box(seen) != t);
            // SAFETY: `p` is a live order-0 block of `h`, freed once and not used after.
            bad += u64::from(unsafe { h.dealloc(p, Order(0)) }.is_err());
        }
    }
    bad
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let number = |i: usize, default: Option<u64>| {
        args.get(i).filter(|a| !a.starts_with("--")).map_or(default, |a| a.parse().ok())
    };
    let (Some(out), Some(pairs), Some(runs)) =
        (number(1, None), number(2, None), number(3, Some(1)))
    else {
        eprintln!("usage: heap_pairs LIVE PAIRS [RUNS] [--remote-free]");
        return ExitCode::from(2);
    };
    let remote_free = args.iter().any(|a| a == "--remote-free");
    let opts = HeapOptions::new(1 << 30)
        .with(|o| o.policy = Policy::modern().with(|p| p.remote_free = remote_free));
    let heap = PageHeap::new(&opts).expect("heap");
    let (out, rounds) = (out.max(1) as usize, (pairs / out.max(1)).max(1));
    let mut live = Vec::with_capacity(out);
    let mut bad = measured(&heap, out, rounds / 4 + 1, &mut live);
    let mut ns: Vec<f64> = (0..runs.max(1))
        .map(|_| {
            let started = std::time::Instant::now();
            bad += measured(&heap, out, rounds, &mut live);
            started.elapsed().as_nanos() as f64 / (rounds * out as u64) as f64
        })
        .collect();
    if bad != 0 {
        eprintln!("{bad} pairs lost their tag or had their free refused");
        return ExitCode::FAILURE;
    }
    ns.sort_by(f64::total_cmp);
    println!(
        "{} pairs per run; median {:.2} fastest {:.2} ns per pair",
        rounds * out as u64,
        ns[ns.len() / 2],
        ns[0]
    );
    ExitCode::SUCCESS
}

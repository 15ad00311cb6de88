//! A slab alloc+free pair in a loop, for instruction counts under callgrind:
//!
//! ```text
//! cargo build --release -p pagealloc-slab --example slab_pairs
//! valgrind --tool=callgrind --toggle-collect='*slab_pairs*measured*' \
//!     target/release/examples/slab_pairs local 200000
//! ```
//!
//! Instructions per pair = the collected `Ir` / the pair count. Patterns: `local`, an object
//! allocated and freed on CPU 0 (both fast paths); `remote`, allocated on CPU 0 and freed on
//! CPU 1 (SLUB's `__slab_free` into another CPU's active slab), in batches of 8 so that CPU 0
//! refills from the objects CPU 1 gave back. One thread plays both CPUs: the count is the
//! work of the calls, not the cost of moving lines between cores. A warm-up pass of the same
//! pattern is not collected. `threads` is not for callgrind: two threads, one allocating on
//! CPU 0 and one freeing on CPU 1, timed by the wall clock (ns a pair).

use std::hint::black_box;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering::Acquire, Ordering::Release};
use std::sync::Mutex;
use std::time::Instant;

use pagealloc::{CpuId, Gfp, MemoryMap, PageAllocator, Policy, Tunables};
use pagealloc_slab::{KmemCache, SlabFlags, SlabObject, SlubConfig};

/// Objects a round allocates before freeing them.
const BATCH: usize = 8;

/// `rounds` rounds of [`BATCH`] allocations on CPU 0 and their frees on `free_cpu`.
fn rounds(cache: &KmemCache<'_>, pa: &PageAllocator, free_cpu: CpuId, rounds: u64) -> u64 {
    let (a, f) = (pa.cpu(CpuId(0)).expect("cpu 0"), pa.cpu(free_cpu).expect("free cpu"));
    let mut held = Vec::with_capacity(BATCH);
    for _ in 0..rounds {
        for _ in 0..BATCH {
            held.push(black_box(cache.alloc(a, Gfp::KERNEL).expect("memory")));
        }
        for obj in held.drain(..) {
            cache.free(f, obj).expect("free");
        }
    }
    rounds * BATCH as u64
}

#[inline(never)]
fn measured(cache: &KmemCache<'_>, pa: &PageAllocator, free_cpu: CpuId, n: u64) -> u64 {
    rounds(cache, pa, free_cpu, n)
}

/// Objects the allocating thread hands over at a time in `threads`.
const HANDOFF: usize = 64;

/// Batches in flight at most in `threads`, so the frees land in live slabs.
const RING: usize = 4;

/// `threads`: a thread on CPU 0 allocates `pairs` objects and hands them, [`HANDOFF`] at a
/// time through a ring of [`RING`] batches, to a thread on CPU 1 that frees them, on two
/// cores at once; returns the wall time per pair. What two cores pay for the lines they
/// share, where callgrind counts one thread. A thread that waits for the other yields.
fn threads(cache: &KmemCache<'_>, pa: &PageAllocator, pairs: u64) -> f64 {
    let ring: [Mutex<Vec<SlabObject>>; RING] = Default::default();
    let (head, tail) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let batches = (pairs / HANDOFF as u64) as usize;
    let started = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            let a = pa.cpu(CpuId(0)).expect("cpu 0");
            for b in 0..batches {
                while b - tail.load(Acquire) >= RING {
                    std::thread::yield_now();
                }
                let mut slot = ring[b % RING].lock().expect("ring");
                slot.extend((0..HANDOFF).map(|_| cache.alloc(a, Gfp::KERNEL).expect("memory")));
                drop(slot);
                head.store(b + 1, Release);
            }
        });
        let f = pa.cpu(CpuId(1)).expect("cpu 1");
        for b in 0..batches {
            while head.load(Acquire) <= b {
                std::thread::yield_now();
            }
            let mut slot = ring[b % RING].lock().expect("ring");
            slot.drain(..).for_each(|o| cache.free(f, o).expect("free"));
            drop(slot);
            tail.store(b + 1, Release);
        }
    });
    started.elapsed().as_nanos() as f64 / pairs as f64
}

/// The cache's non-zero counters.
fn counts(cache: &KmemCache<'_>) -> String {
    let stats = cache.stats();
    let counts: Vec<String> =
        stats.iter().filter(|&(_, v)| v > 0).map(|(k, v)| format!("{k}={v}")).collect();
    counts.join(" ")
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let pairs: u64 = args.get(2).and_then(|p| p.parse().ok()).unwrap_or(200_000);
    let map = MemoryMap::single_node(2, 256 << 20).expect("memory map");
    let pa = PageAllocator::new(map, Tunables::default(), Policy::modern()).expect("allocator");
    let cache = KmemCache::new(
        &pa,
        "skbuff_head_cache",
        256,
        0,
        SlabFlags::HWCACHE_ALIGN,
        &SlubConfig::default(),
    )
    .expect("cache");
    let free_cpu = match args.get(1).map(String::as_str) {
        Some("local") => CpuId(0),
        Some("remote") => CpuId(1),
        Some("threads") => {
            let ns = threads(&cache, &pa, pairs);
            println!("{ns:.1} ns a pair; {}", counts(&cache));
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!("usage: slab_pairs local|remote|threads PAIRS");
            return ExitCode::from(2);
        }
    };
    rounds(&cache, &pa, free_cpu, 1000);
    let n = pairs / BATCH as u64;
    let done = measured(&cache, &pa, free_cpu, n);
    println!("{done} pairs; {}", counts(&cache));
    ExitCode::SUCCESS
}

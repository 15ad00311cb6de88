//! A driver for counting the instructions of the core's fast paths under callgrind, which
//! counts repeatably on a shared, noisy machine where wall-clock figures drift by 2x:
//!
//! ```sh
//! cargo build --release -p pagealloc-testkit --example pairs
//! valgrind --tool=callgrind --toggle-collect='*pairs*measured*' \
//!     target/release/examples/pairs pair-1 1000000
//! ```
//!
//! Instructions per alloc+free pair = the collected `Ir` / the pair count. Only the measured
//! loop is collected: building the allocator and a warm-up pass of the same pattern (which
//! fills the pagesets, so the measured loop sees the steady state) are not.
//!
//! Patterns (the names of `pagealloc bench`; the library alone, no memory behind the frames,
//! a 1 GiB Normal zone with 2 CPUs and the lab machine's caches, as `PageHeap` builds it there,
//! preset `modern`, `GFP_KERNEL`):
//! `pair-1`, `pair-64`, `pair-1024` (order 0 with that many live blocks, freed in allocation
//! order), `order3-64`, `mix-0-10` (16 live, orders 0..=10 from the bench's xorshift
//! sequence) and `cross-thread` (CPU 0 allocates batches of 64, CPU 1 frees them; one
//! thread plays both CPUs, so this counts the work, not the cache-line traffic). A third
//! argument `--remote-free` turns `Policy::remote_free` on (beyond the kernel).

use std::hint::black_box;
use std::process::ExitCode;

use pagealloc::{CacheInfo, Counter, ZoneLimits};
use pagealloc::{Cpu, CpuId, Gfp, MemoryMap, NodeId, Order, PageAllocator, Pfn, Policy, Tunables};
use pagealloc_testkit::bench_mix::{mix_orders, MIX_LEN};

struct Shape {
    outstanding: usize,
    order: Option<u8>,
    cross: bool,
}

fn shape(name: &str) -> Option<Shape> {
    let (outstanding, order, cross) = match name {
        "pair-1" => (1, Some(0), false),
        "pair-64" => (64, Some(0), false),
        "pair-1024" => (1024, Some(0), false),
        "order3-64" => (64, Some(3), false),
        "mix-0-10" => (16, None, false),
        "cross-thread" => (64, Some(0), true),
        _ => return None,
    };
    Some(Shape { outstanding, order, cross })
}

/// `rounds` rounds of the pattern: allocate `outstanding` blocks on `a`, free them in
/// allocation order on `f`. Returns the pairs done.
fn rounds(pa: &PageAllocator, s: &Shape, a: Cpu, f: Cpu, rounds: u64, mix: &[u8]) -> u64 {
    let mut held: Vec<(Pfn, Order)> = Vec::with_capacity(s.outstanding);
    let mut k = 0usize;
    for _ in 0..rounds {
        for _ in 0..s.outstanding {
            let order = Order(s.order.unwrap_or_else(|| mix[k & (MIX_LEN - 1)]));
            k += 1;
            let p = pa.alloc_pages(a, Gfp::KERNEL, black_box(order)).expect("memory");
            held.push((black_box(p), order));
        }
        for (p, order) in held.drain(..) {
            pa.free_pages(f, p, order).expect("free");
        }
    }
    rounds * s.outstanding as u64
}

/// The collected part (callgrind's `--toggle-collect` names it).
#[inline(never)]
fn measured(pa: &PageAllocator, s: &Shape, a: Cpu, f: Cpu, n: u64, mix: &[u8]) -> u64 {
    rounds(pa, s, a, f, n, mix)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let remote_free = match args.get(3).map(String::as_str) {
        None => Some(false),
        Some("--remote-free") => Some(true),
        Some(_) => None,
    };
    let (Some(s), Some(pairs), Some(remote_free)) = (
        args.get(1).and_then(|n| shape(n)),
        args.get(2).and_then(|n| n.parse::<u64>().ok()),
        remote_free,
    ) else {
        eprintln!(
            "usage: pairs PATTERN PAIRS [--remote-free] (PATTERN: pair-1, pair-64, pair-1024, \
             order3-64, mix-0-10, cross-thread; --remote-free: the modern preset with \
             Policy::remote_free on)"
        );
        return ExitCode::from(2);
    };
    let mut map = MemoryMap::new();
    map.with_zone_limits(ZoneLimits::NORMAL_ONLY);
    map.add_range(NodeId(0), 0..1 << 30).expect("range").set_cpus(NodeId(0), 2).expect("cpus");
    let policy = Policy::modern().with(|p| p.remote_free = remote_free);
    let pa = PageAllocator::new(map, Tunables::default(), policy).expect("allocator");
    // The lab machine's caches as PageHeap reads them from sysfs (a 32 MiB LLC shared by two
    // CPUs, 32 KiB L1d and 512 KiB L2 each): FREE_HIGH_BATCH is on, as it is there.
    let cache =
        CacheInfo { llc_slice_bytes: 16 << 20, data_slices_bytes: (32 + 512 + 16384) << 10 };
    for c in 0..pa.nr_cpus() {
        pa.set_cpu_cache(CpuId(c), cache);
    }
    let c0 = pa.cpu(CpuId(0)).expect("cpu 0");
    let free_cpu = if s.cross { pa.cpu(CpuId(1)).expect("cpu 1") } else { c0 };
    let mix = mix_orders();
    let n = (pairs / s.outstanding as u64).max(1);
    rounds(&pa, &s, c0, free_cpu, (n / 4).max(4), &mix);
    let before = pa.vm_events();
    let started = std::time::Instant::now();
    let done = measured(&pa, &s, c0, free_cpu, n, &mix);
    let ns = started.elapsed().as_nanos() as f64 / done as f64;
    let d = pa.vm_events().since(&before);
    println!(
        "{} pairs; {ns:.1} ns per pair (wall clock, a rough guide); pcp_alloc {} pcp_free {} \
         zone_lock_acquire {} pcp_remote_free {}",
        done,
        d.get(Counter::PcpAlloc),
        d.get(Counter::PcpFree),
        d.get(Counter::ZoneLockAcquire),
        d.get(Counter::PcpRemoteFree)
    );
    pa.drain_all_pages(c0, None);
    if pa.nr_free_pages() != pa.managed_pages() {
        eprintln!("pages missing after the run");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

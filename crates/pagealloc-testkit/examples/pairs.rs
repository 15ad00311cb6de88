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
//! thread plays both CPUs, so this counts the work, not the cache-line traffic).
//!
//! Options: `--remote-free` turns `Policy::remote_free` on (beyond the kernel); `--gfp FORM`
//! says how the allocations name their flags: `prepared` (the default, what `PageHeap` and so
//! `pagealloc bench` do: `GFP_KERNEL` decoded once by `PageAllocator::prepare`, then
//! `alloc_prepared`), `const` (`alloc_pages` with the constant `Gfp::KERNEL`, which the
//! compiler folds, as at a kernel call site) or `runtime` (`alloc_pages` with flags the
//! compiler cannot see, decoded on every call).

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

/// How the driver's allocations name their flags (`--gfp`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum GfpForm {
    Prepared,
    Const,
    Runtime,
}

impl GfpForm {
    fn parse(s: &str) -> Option<GfpForm> {
        match s {
            "prepared" => Some(GfpForm::Prepared),
            "const" => Some(GfpForm::Const),
            "runtime" => Some(GfpForm::Runtime),
            _ => None,
        }
    }
}

/// The options after PATTERN and PAIRS: (`--remote-free`, `--gfp`), or `None` if malformed.
fn options(rest: &[String]) -> Option<(bool, GfpForm)> {
    let (mut remote_free, mut gfp) = (false, GfpForm::Prepared);
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--remote-free" => remote_free = true,
            "--gfp" => gfp = GfpForm::parse(it.next()?)?,
            _ => return None,
        }
    }
    Some((remote_free, gfp))
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

/// The loop of `rounds`, allocating with `alloc` (inlined into each form's copy).
#[inline(always)]
fn pair_loop(
    pa: &PageAllocator,
    s: &Shape,
    free: Cpu,
    rounds: u64,
    mix: &[u8],
    alloc: impl Fn(Order) -> Result<Pfn, pagealloc::AllocError>,
) -> u64 {
    let mut held: Vec<(Pfn, Order)> = Vec::with_capacity(s.outstanding);
    let mut k = 0usize;
    for _ in 0..rounds {
        for _ in 0..s.outstanding {
            let order = Order(s.order.unwrap_or_else(|| mix[k & (MIX_LEN - 1)]));
            k += 1;
            let p = alloc(black_box(order)).expect("memory");
            held.push((black_box(p), order));
        }
        for (p, order) in held.drain(..) {
            pa.free_pages(free, p, order).expect("free");
        }
    }
    rounds * s.outstanding as u64
}

/// `rounds` rounds of the pattern: allocate `outstanding` blocks on `a`, free them in
/// allocation order on `f`. Returns the pairs done.
/// `rounds` rounds of the pattern: allocate `outstanding` blocks on `run.alloc`, free them in
/// allocation order on `run.free`. Returns the pairs done. Each flag form has its own copy of
/// the loop (`#[inline(never)]`), with the allocation call inlined into it as a user's is.
fn rounds(pa: &PageAllocator, s: &Shape, run: Run, rounds: u64, mix: &[u8]) -> u64 {
    match run.gfp {
        GfpForm::Prepared => rounds_prepared(pa, s, run.alloc, run.free, rounds, mix),
        GfpForm::Const => rounds_const(pa, s, run.alloc, run.free, rounds, mix),
        GfpForm::Runtime => rounds_runtime(pa, s, run.alloc, run.free, rounds, mix),
    }
}

#[inline(never)]
fn rounds_prepared(pa: &PageAllocator, s: &Shape, a: Cpu, f: Cpu, rounds: u64, mix: &[u8]) -> u64 {
    let req = black_box(pa.prepare(black_box(Gfp::KERNEL)).expect("flags"));
    pair_loop(pa, s, f, rounds, mix, |o| pa.alloc_prepared(a, &req, o))
}

#[inline(never)]
fn rounds_const(pa: &PageAllocator, s: &Shape, a: Cpu, f: Cpu, rounds: u64, mix: &[u8]) -> u64 {
    pair_loop(pa, s, f, rounds, mix, |o| pa.alloc_pages(a, Gfp::KERNEL, o))
}

#[inline(never)]
fn rounds_runtime(pa: &PageAllocator, s: &Shape, a: Cpu, f: Cpu, rounds: u64, mix: &[u8]) -> u64 {
    let gfp = black_box(Gfp::KERNEL);
    pair_loop(pa, s, f, rounds, mix, |o| pa.alloc_pages(a, gfp, o))
}

/// The CPUs that allocate and free and how allocations name their flags.
#[derive(Clone, Copy)]
struct Run {
    alloc: Cpu,
    free: Cpu,
    gfp: GfpForm,
}

/// The collected part (callgrind's `--toggle-collect` names it).
#[inline(never)]
fn measured(pa: &PageAllocator, s: &Shape, run: Run, n: u64, mix: &[u8]) -> u64 {
    rounds(pa, s, run, n, mix)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(s), Some(pairs), Some((remote_free, gfp))) = (
        args.get(1).and_then(|n| shape(n)),
        args.get(2).and_then(|n| n.parse::<u64>().ok()),
        options(args.get(3..).unwrap_or_default()),
    ) else {
        eprintln!(
            "usage: pairs PATTERN PAIRS [--remote-free] [--gfp prepared|const|runtime] \
             (PATTERN: pair-1, pair-64, pair-1024, order3-64, mix-0-10, cross-thread; \
             --remote-free: the modern preset with Policy::remote_free on; --gfp: how the \
             allocations name GFP_KERNEL, default prepared)"
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
    let run = Run { alloc: c0, free: free_cpu, gfp };
    rounds(&pa, &s, run, (n / 4).max(4), &mix);
    let before = pa.vm_events();
    let started = std::time::Instant::now();
    let done = measured(&pa, &s, run, n, &mix);
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

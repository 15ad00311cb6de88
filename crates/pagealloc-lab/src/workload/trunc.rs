//! `trunc`: mmtests' `config-io-trunc` as it stood in February 2022 (seeds 000 and 004).
//! Section numbers (§) in this file are those of `docs/workloads.md`.
//!
//! What it imitates (docs/workloads.md §6): ten sparse files of 1 GiB are read with `cat`,
//! which fills the page cache with zeroed order-0 movable pages, one per 4 KiB; then `rm`
//! truncates them all, and the **system time of `rm`** is the metric ("elapsed", ms). The free
//! side is a pure burst of order-0 frees on one CPU, released in batches of `PAGEVEC_SIZE`
//! (15) pages: the case where the pageset overflows again and again into
//! `free_pcppages_bulk`, whose cost per call the series changed.
//!
//! The model: one CPU runs `cat` (allocate, zero, copy out: one page per step), then one CPU
//! runs `rm` (a pagevec of frees per step, plus the truncation's own per-page work). Both are
//! unbound tasks in the benchmark; the model draws each one's CPU from the run's seed, which
//! is the run-to-run variation of this otherwise deterministic workload. As mmtests does, the
//! file size is cut by 10% until all files fit in half of a node's memory. Each task's state
//! is its own CPU's; the page cache passes from `cat` to `rm` when `cat` is done, so in the
//! real runner no lock is shared across an allocator call (and none is contended: one task
//! runs at a time).
//!
//! Known biases: the page cache's own costs (xarray, LRU, memcg) are one assumed figure per
//! page; readahead's batching is not modelled (one allocation per page, as 5.17's order-0
//! page cache makes them); the file system is out of the picture, as the seed intended with
//! sparse files.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

use anyhow::Result;
use pagealloc::{Gfp, Order, Pfn};

use super::{ns, ParamSpec, Params, WorkloadInfo, PREFETCH_AHEAD};
use crate::model::{lock, part, Ctx, ModelInfo, Next, Workload};

/// The registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "trunc",
    summary: "mmtests trunc: cat 10 sparse 1 GiB files into page cache, then time rm's truncation",
    params: PARAMS,
    default_machine: "skylake-1s",
    build: |p| Box::new(Trunc::new(p)),
    fit: super::fits_any,
};

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "files",
        default: 10.0,
        min: 1.0,
        max: 1000.0,
        unit: "files",
        doc: "sparse files read and then removed",
        source: "mmtests config-io-trunc TRUNC_NR_FILES=10 (docs/workloads.md §6.1)",
        scaled: true,
        whole: true,
    },
    ParamSpec {
        name: "file_mib",
        default: 1024.0,
        min: 1.0,
        max: 1_048_576.0,
        unit: "MiB",
        doc: "size of each file (cut by 10% until files × size fits in half a node's memory)",
        source: "mmtests config-io-trunc TRUNC_FILESIZE=1 GiB, cut rule of trunc-bench \
                 (docs/workloads.md §6.1)",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "pagevec",
        default: 15.0,
        min: 1.0,
        max: 4096.0,
        unit: "pages",
        doc: "pages released per batch by truncation",
        source: "PAGEVEC_SIZE = 15 in 5.17 (include/linux/pagevec.h, docs/workloads.md §6.2)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "fill_page_ns",
        default: 300.0,
        min: 0.0,
        max: 1e6,
        unit: "ns",
        doc: "cat's work per page besides the allocation and zeroing: readahead, page-cache \
              insertion, copy to user",
        source: "assumed: a 4 KiB copy_to_user from a hot page plus page-cache insertion on a \
                 2018-2022 server core; not timed, does not enter the metric",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "trunc_page_ns",
        default: 100.0,
        min: 0.0,
        max: 1e6,
        unit: "ns",
        doc: "rm's work per page besides the free: page-cache deletion, LRU removal, uncharge",
        source: "assumed: an xarray delete, an LRU unlink and a memcg uncharge per page, each a \
                 few tens of ns on a 2018-2022 server core (no public per-page figure)",
        scaled: false,
        whole: false,
    },
];

/// What the single active task is doing (stored in an [`AtomicU8`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Phase {
    Fill,
    Truncate,
    Done,
}

impl Phase {
    fn of(v: u8) -> Phase {
        match v {
            0 => Phase::Fill,
            1 => Phase::Truncate,
            _ => Phase::Done,
        }
    }
}

/// `cat`'s state, its CPU's alone.
#[derive(Debug, Default)]
struct Cat {
    /// The page cache it reads in, in file order (handed to `rm` when complete).
    cache: Vec<Pfn>,
    failed: u64,
}

/// `rm`'s state, its CPU's alone.
#[derive(Debug, Default)]
struct Rm {
    /// The page cache `cat` handed over.
    cache: Vec<Pfn>,
    /// Next page to truncate.
    next_free: usize,
    start: u64,
    end: u64,
}

/// One run. The two tasks run one after the other, each on its CPU with its own state; the
/// page cache passes from `cat` to `rm` under `rm`'s lock, with no allocator call inside it,
/// before the phase says `rm` may start. Progress reads two atomics.
#[derive(Debug)]
pub struct Trunc {
    files: u64,
    file_mib: f64,
    pagevec: usize,
    fill_page: u64,
    trunc_page: u64,
    /// Pages per file after the cut.
    pages_per_file: u64,
    cat_cpu: u32,
    rm_cpu: u32,
    /// A [`Phase`].
    phase: AtomicU8,
    cat: Mutex<Cat>,
    rm: Mutex<Rm>,
    /// Pages read in, and truncated, so far (for progress).
    filled: AtomicU64,
    freed: AtomicU64,
}

impl Trunc {
    /// A run with these parameters.
    pub fn new(p: &Params) -> Trunc {
        Trunc {
            files: p.count("files"),
            file_mib: p.get("file_mib"),
            pagevec: p.count("pagevec") as usize,
            fill_page: ns(p.get("fill_page_ns")),
            trunc_page: ns(p.get("trunc_page_ns")),
            pages_per_file: 0,
            cat_cpu: 0,
            rm_cpu: 0,
            phase: AtomicU8::new(Phase::Fill as u8),
            cat: Mutex::default(),
            rm: Mutex::default(),
            filled: AtomicU64::new(0),
            freed: AtomicU64::new(0),
        }
    }

    /// One page read in by `cat`; at the last one, the cache goes to `rm` (on this CPU's
    /// next step, or woken on its own).
    fn fill(&self, ctx: &mut Ctx<'_>) -> Next {
        let cpu = ctx.cpu();
        let mut cat = lock(&self.cat);
        match ctx.alloc(Gfp::HIGHUSER_MOVABLE, Order(0)) {
            Some(p) => {
                ctx.touch(p, 4096);
                cat.cache.push(p);
                self.filled.fetch_add(1, Ordering::Relaxed);
            }
            None => cat.failed += 1,
        }
        ctx.work(self.fill_page);
        if (cat.cache.len() as u64 + cat.failed) < self.total_pages() {
            return Next::Continue;
        }
        {
            let mut rm = lock(&self.rm);
            rm.cache = std::mem::take(&mut cat.cache);
            if self.rm_cpu == cpu {
                rm.start = ctx.now();
            }
        }
        self.phase.store(Phase::Truncate as u8, Ordering::Release);
        if self.rm_cpu != cpu {
            ctx.wake(self.rm_cpu, ctx.now());
            return Next::Done;
        }
        Next::Continue
    }

    /// One pagevec of `rm`'s truncation.
    fn truncate(&self, ctx: &mut Ctx<'_>) -> Result<Next> {
        let mut rm = lock(&self.rm);
        let rm = &mut *rm;
        if rm.next_free == 0 && rm.start == 0 {
            rm.start = ctx.now();
        }
        let end = (rm.next_free + self.pagevec).min(rm.cache.len());
        for i in rm.next_free..end {
            if let Some(&ahead) = rm.cache.get(i + PREFETCH_AHEAD) {
                ctx.prefetch(ahead);
            }
            ctx.free(rm.cache[i], Order(0))?;
            ctx.work(self.trunc_page);
        }
        self.freed.fetch_add((end - rm.next_free) as u64, Ordering::Relaxed);
        rm.next_free = end;
        if end == rm.cache.len() {
            rm.cache.clear();
            rm.end = ctx.now();
            self.phase.store(Phase::Done as u8, Ordering::Release);
            return Ok(Next::Done);
        }
        Ok(Next::Continue)
    }

    fn total_pages(&self) -> u64 {
        self.files * self.pages_per_file
    }
}

impl Workload for Trunc {
    fn start(&mut self, info: &ModelInfo) -> Result<Vec<u32>> {
        // mmtests: while files × size > MemTotal / nodes / 2, size -= size / 10.
        let node_bytes =
            info.node_managed_pages.iter().sum::<u64>() * 4096 / u64::from(info.nr_nodes);
        let mut size = self.file_mib * (1 << 20) as f64;
        while self.files as f64 * size > node_bytes as f64 / 2.0 && size >= 4096.0 {
            size -= size / 10.0;
        }
        self.pages_per_file = (size / 4096.0) as u64;
        let mut rng = pagealloc_testkit::rng::Rng::new(info.seed);
        self.cat_cpu = rng.below(u64::from(info.nr_cpus)) as u32;
        self.rm_cpu = rng.below(u64::from(info.nr_cpus)) as u32;
        let pages = self.total_pages() as usize;
        part(&mut self.cat).cache.reserve(pages);
        // One task at a time, but both may share a CPU: run them as one scheduled CPU when
        // they do, as two (the second waiting for the first) when they do not.
        if self.cat_cpu == self.rm_cpu {
            Ok(vec![self.cat_cpu])
        } else {
            Ok(vec![self.cat_cpu, self.rm_cpu])
        }
    }

    fn step(&self, ctx: &mut Ctx<'_>) -> Result<Next> {
        match Phase::of(self.phase.load(Ordering::Acquire)) {
            Phase::Fill if ctx.cpu() == self.cat_cpu => Ok(self.fill(ctx)),
            Phase::Fill => Ok(Next::Block),
            Phase::Truncate => self.truncate(ctx),
            Phase::Done => Ok(Next::Done),
        }
    }

    fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
        let cat = std::mem::take(&mut part(&mut self.cat).cache);
        let rm = part(&mut self.rm);
        let rest = rm.cache.split_off(rm.next_free.min(rm.cache.len()));
        let on = |cpu: u32| move |p: Pfn| (cpu, p, Order(0));
        rest.into_iter().map(on(self.rm_cpu)).chain(cat.into_iter().map(on(self.cat_cpu))).collect()
    }

    fn metrics(&self) -> Vec<(String, f64)> {
        let (start, end) = {
            let rm = lock(&self.rm);
            (rm.start, rm.end)
        };
        vec![
            ("elapsed".into(), (end - start) as f64 / 1e9),
            ("pages".into(), self.total_pages() as f64),
            ("alloc_failures".into(), lock(&self.cat).failed as f64),
        ]
    }

    fn progress(&self) -> f64 {
        let total = self.total_pages().max(1) as f64;
        let done = self.filled.load(Ordering::Relaxed) + self.freed.load(Ordering::Relaxed);
        done as f64 / (2.0 * total)
    }
}

//! vm-scalability's `case-lru-file-readonce`, the `case=1` of the `vm-scalability` workload
//! (docs/workloads.md §14.4). Section numbers (§) in this file are those of
//! `docs/workloads.md`.
//!
//! What it imitates: `nr_task` `dd bs=4k` processes, each reading its own sparse file once to
//! `/dev/null` until a timeout. Each 4 KiB read of a hole misses the page cache: the kernel
//! allocates one order-0 movable page on the reading CPU, zeroes it, adds it to the page cache
//! and the LRU, and copies it to dd's buffer. The files are far larger than memory, so once
//! the page cache fills memory every new page needs an old one reclaimed; the pages are read
//! once, never activated, and reclaim takes them oldest first.
//!
//! The model: task `i` runs alone on CPU `i` (the CPUs drawn as the anonymous case draws
//! them). A step reads one page: `read_page_ns` of kernel work, the allocation, the zeroing
//! and the copy (two page writes: the hierarchy has no read rate), the page queued at the
//! tail of its node's LRU. Reclaim is direct, on the reading CPU, as thpfioscale's direct
//! reclaim: when no zone is above LOW the allocation would wake kswapd, and while no zone is
//! above MIN the reader reclaims `SWAP_CLUSTER_MAX` of the oldest pages (its own node's LRU
//! first), `reclaim_page_ns` each, freeing them on its own CPU; an allocation that still fails
//! reclaims a batch and tries again, a few times. There is no kswapd: every CPU runs a reader
//! (one task per CPU), and the runner has no way to share a CPU between a reader and kswapd.
//! Metrics: `throughput`, KiB/s summed over the tasks, each task's bytes over its own reading
//! time (dd's `bytes/s` line, summed as LKP sums it); `reclaimed_pages`; and
//! `min_free_margin`, the least, over every allocation, of the best zone's free pages above
//! its MIN watermark and its reserve against movable requests, just before the allocation
//! (negative when the pages reclaimed sit in the reader's pageset, or another reader's refill
//! took a batch: reclaim keeps the zone plus the reader's pageset above MIN, not the zone).
//!
//! Threads: each dd is its CPU's own (`model::PerCpu`); the LRUs are shared, behind one lock
//! taken after the CPU's own and held for bookkeeping only (a reclaim takes its batch out
//! under it, then does the work and the frees); counters are atomic. Nothing waits for
//! anything, so no wake can be lost. On the real runner the readers' allocations, frees and
//! touches overlap; the model steps one CPU at a time and decides as with one object.
//!
//! Known biases: in the kernel kswapd does most of this reclaim on a CPU of its own, freeing
//! into its own pageset, and the readers only fall to direct reclaim when kswapd lags; here
//! every eviction is charged to a reader and freed into the reader's pageset, from which its
//! next reads take them again, so the zone sees fewer refills and drains than it would. The
//! pages are order 0 (XFS's and ext4's large folios would read ahead in higher orders);
//! readahead's batching, the LRU's pagevec batching, and the inode and radix-tree nodes are
//! left out.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicI64, AtomicU64};
use std::sync::Mutex;

use anyhow::Result;
use pagealloc::{AllocFlags, Gfp, Order, Pfn, ZoneType, WMARK_LOW, WMARK_MIN};

use super::kswapd::SWAP_CLUSTER_MAX;
use super::{ns, ParamSpec, Params};
use crate::model::{lock, part, Ctx, ModelInfo, Next, PerCpu, Workload};

/// dd's work per 4 KiB read besides the allocation and the two page copies.
pub(crate) const READ_PAGE_NS: ParamSpec = ParamSpec {
    name: "read_page_ns",
    default: 700.0,
    min: 0.0,
    max: 1e6,
    unit: "ns",
    doc: "file case: kernel work per 4 KiB read besides the allocation, zeroing and copy \
          (read syscall, page-cache lookup and insertion, LRU add, filesystem hole lookup)",
    source: "assumed: a read syscall plus a page-cache insertion, a few hundred ns each on a \
             2019 server core; no public per-read breakdown",
    scaled: false,
    whole: false,
};

/// How much the tasks read together.
pub(crate) const READ_SHARE: ParamSpec = ParamSpec {
    name: "read_share",
    default: 2.0,
    min: 0.000_01,
    max: 64.0,
    unit: "of memory",
    doc: "file case: bytes read by all tasks together, as a multiple of the machine's memory \
          (each task reads its 1/tasks of it)",
    source: "assumed: the case gives each task 4 TiB / nr_task (ROTATE_BYTES) and stops dd \
             after `runtime` (300 s); twice memory makes the second half run under reclaim \
             (vm-scalability, docs/workloads.md §14.4)",
    scaled: true,
    whole: false,
};

/// Tries of a failed allocation, each after a batch of reclaim.
const RETRIES: usize = 8;
/// Reclaim rounds before an allocation at most (each frees up to `SWAP_CLUSTER_MAX`).
const ROUNDS: usize = 64;

/// One dd, its CPU's alone.
#[derive(Clone, Debug, Default)]
struct Task {
    read: u64,
    failed: u64,
    /// When the reading ended (ps; 0 = not yet).
    done_at: u64,
}

/// One run of the file case. Each dd is its CPU's; the page cache's LRUs are shared (any
/// reader's reclaim takes the oldest pages, whoever read them) behind a lock held for
/// bookkeeping only: a reclaim takes its batch out under it and frees it after; counters
/// are atomic. So the readers' allocations, frees and touches overlap on the real runner's
/// threads, while the model, stepping one CPU at a time, decides as with one object.
#[derive(Debug)]
pub struct ReadOnce {
    tasks: usize,
    read_share: f64,
    read_page: u64,
    reclaim_page: u64,
    per_task: u64,
    /// The CPU of each task, task 0 first.
    cpus: Vec<u32>,
    /// Each CPU's dd, if it runs one.
    task: PerCpu<Option<Task>>,
    /// Each node's page cache, oldest first: (page, the CPU that read it).
    lru: Mutex<Vec<VecDeque<(Pfn, u32)>>>,
    cpu_node: Vec<u32>,
    /// Pages read, all tasks (for progress).
    read: AtomicU64,
    reclaimed: AtomicU64,
    min_margin: AtomicI64,
}

impl ReadOnce {
    /// A run with these parameters.
    pub fn new(p: &Params) -> ReadOnce {
        ReadOnce {
            tasks: p.count("tasks") as usize,
            read_share: p.get("read_share"),
            read_page: ns(p.get("read_page_ns")),
            reclaim_page: ns(p.get("reclaim_page_ns")),
            per_task: 0,
            cpus: Vec::new(),
            task: PerCpu::new(Vec::new()),
            lru: Mutex::default(),
            cpu_node: Vec::new(),
            read: AtomicU64::new(0),
            reclaimed: AtomicU64::new(0),
            min_margin: AtomicI64::new(i64::MAX),
        }
    }

    /// Is some zone above watermark `w` for an order-0 movable request?
    fn any_above(ctx: &Ctx<'_>, w: usize) -> bool {
        ctx.allocator().zones().iter().any(|z| {
            z.watermark_ok(Order(0), z.wmark_pages(w), ZoneType::Movable, AllocFlags::default())
        })
    }

    /// The best zone's free pages above what a movable request must leave in it: its MIN
    /// watermark plus its reserve against such requests (a lower zone's `lowmem_reserve`), as
    /// the watermark check counts them.
    fn margin(ctx: &Ctx<'_>) -> i64 {
        let zones = ctx.allocator().zones();
        let m = zones.iter().filter(|z| z.managed_pages().0 > 0);
        let floor =
            |z: &pagealloc::Zone| z.wmark_pages(WMARK_MIN) + z.lowmem_reserve(ZoneType::Movable);
        m.map(|z| z.free_pages().0 as i64 - floor(z) as i64).max().unwrap_or(0)
    }

    /// Evict up to `want` of the oldest page-cache pages on this CPU, its own node's first:
    /// taken out under the LRU lock, then each freed after `reclaim_page_ns` of work.
    fn reclaim(&self, ctx: &mut Ctx<'_>, want: u64) -> Result<u64> {
        let here = self.cpu_node[ctx.cpu() as usize] as usize;
        let mut batch = Vec::new();
        {
            let mut lru = lock(&self.lru);
            let nodes = lru.len();
            for k in 0..nodes {
                let node = (here + k) % nodes;
                while (batch.len() as u64) < want {
                    let Some((pfn, _)) = lru[node].pop_front() else { break };
                    batch.push(pfn);
                }
            }
        }
        for &pfn in &batch {
            ctx.work(self.reclaim_page);
            ctx.free(pfn, Order(0))?;
        }
        let got = batch.len() as u64;
        self.reclaimed.fetch_add(got, Relaxed);
        Ok(got)
    }

    /// The allocation with the kernel's reclaim around it: below LOW kswapd would be woken
    /// (here the reader reclaims itself), while no zone is above MIN reclaim a batch, then
    /// allocate, reclaiming a batch after each failure.
    fn alloc(&self, ctx: &mut Ctx<'_>) -> Result<Option<Pfn>> {
        if !Self::any_above(ctx, WMARK_LOW) {
            for _ in 0..ROUNDS {
                if Self::any_above(ctx, WMARK_MIN) || self.reclaim(ctx, SWAP_CLUSTER_MAX)? == 0 {
                    break;
                }
            }
        }
        self.min_margin.fetch_min(Self::margin(ctx), Relaxed);
        for _ in 0..RETRIES {
            if let Some(p) = ctx.alloc(Gfp::HIGHUSER_MOVABLE, Order(0)) {
                return Ok(Some(p));
            }
            if self.reclaim(ctx, SWAP_CLUSTER_MAX)? == 0 {
                break;
            }
        }
        Ok(None)
    }

    /// The node of a page.
    fn node_of(ctx: &Ctx<'_>, pfn: Pfn) -> usize {
        let zones = ctx.allocator().zones();
        zones.iter().find(|z| z.spans(pfn)).map_or(0, |z| z.node().0 as usize)
    }
}

impl Workload for ReadOnce {
    fn start(&mut self, info: &ModelInfo) -> Result<Vec<u32>> {
        let p = super::vm_scalability::place(info, self.tasks, self.read_share)?;
        self.per_task = p.per_task;
        self.task = PerCpu::new(p.on_cpu.iter().map(|t| t.map(|_| Task::default())));
        self.cpus = p.cpus.clone();
        *part(&mut self.lru) = vec![VecDeque::new(); info.nr_nodes.max(1) as usize];
        self.cpu_node = info.cpu_node.clone();
        Ok(p.cpus)
    }

    fn step(&self, ctx: &mut Ctx<'_>) -> Result<Next> {
        let mut slot = self.task.get(ctx.cpu())?;
        let Some(task) = slot.as_mut() else {
            return Ok(Next::Done);
        };
        ctx.work(self.read_page);
        match self.alloc(ctx)? {
            Some(page) => {
                // The hole is zeroed into the page, then copied out to dd's buffer.
                ctx.touch(page, 4096);
                ctx.touch(page, 4096);
                let node = Self::node_of(ctx, page);
                lock(&self.lru)[node].push_back((page, ctx.cpu()));
            }
            None => task.failed += 1,
        }
        task.read += 1;
        self.read.fetch_add(1, Relaxed);
        if task.read < self.per_task {
            return Ok(Next::Continue);
        }
        task.done_at = ctx.now().max(1);
        Ok(Next::Done)
    }

    fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
        let lru = part(&mut self.lru).iter_mut().flat_map(|l| l.drain(..));
        lru.map(|(p, c)| (c, p, Order(0))).collect()
    }

    fn metrics(&self) -> Vec<(String, f64)> {
        let kib = (self.per_task * 4) as f64;
        // Task order, as dd's lines are summed.
        let by_cpu = self.task.each(Clone::clone);
        let tasks: Vec<Task> =
            self.cpus.iter().filter_map(|&c| by_cpu.get(c as usize).cloned().flatten()).collect();
        let done = tasks.iter().filter(|t| t.done_at > 0);
        let throughput: f64 = done.map(|t| kib / (t.done_at as f64 / 1e12)).sum();
        let margin = match self.min_margin.load(Relaxed) {
            i64::MAX => 0,
            m => m,
        };
        vec![
            ("throughput".into(), throughput),
            ("pages_per_task".into(), self.per_task as f64),
            ("reclaimed_pages".into(), self.reclaimed.load(Relaxed) as f64),
            ("min_free_margin".into(), margin as f64),
            ("alloc_failures".into(), tasks.iter().map(|t| t.failed).sum::<u64>() as f64),
        ]
    }

    fn progress(&self) -> f64 {
        let total = (self.per_task * self.tasks as u64).max(1);
        self.read.load(Relaxed) as f64 / total as f64
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use anyhow::Result;
    use pagealloc::{CpuId, Order, Pfn};

    use super::ReadOnce;
    use crate::model::tests::small_setup;
    use crate::model::{Ctx, Model, ModelInfo, Next, RunOutcome, Serial, SerialWorkload, Workload};
    use crate::workload::testing::metric;
    use crate::workload::{self};

    const BASE: [&str; 3] = ["case=1", "tasks=2", "read_share=2"];

    fn run(preset: &str, seed: u64, extra: &[&str]) -> RunOutcome {
        workload::testing::run("vm-scalability", &BASE, extra, 4, preset, seed)
    }

    /// What the checking wrapper saw, step by step.
    #[derive(Debug, Default)]
    struct Seen {
        steps: u64,
        /// Steps that changed the pageset of a CPU other than the reader's.
        foreign: u64,
        /// The least, after any step, of the best zone's free pages above MIN plus the pages
        /// in the reader's pagesets.
        worst: i64,
    }

    /// The file case, with the allocator's state checked around every step.
    struct Checked {
        inner: ReadOnce,
        nr_cpus: u32,
        seen: Arc<Mutex<Seen>>,
    }

    /// Pages in each CPU's pagesets, over all zones.
    fn pcp_counts(ctx: &Ctx<'_>, nr_cpus: u32) -> Vec<i64> {
        let zones = ctx.allocator().zones();
        let count =
            |c| zones.iter().filter_map(move |z| z.pcp(CpuId(c))).map(|p| i64::from(p.count));
        (0..nr_cpus).map(|c| count(c).sum()).collect()
    }

    impl SerialWorkload for Checked {
        fn start(&mut self, info: &ModelInfo) -> Result<Vec<u32>> {
            self.nr_cpus = info.nr_cpus;
            self.inner.start(info)
        }

        fn step(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
            let before = pcp_counts(ctx, self.nr_cpus);
            let next = self.inner.step(ctx)?;
            let after = pcp_counts(ctx, self.nr_cpus);
            let me = ctx.cpu() as usize;
            let foreign = (0..before.len()).any(|c| c != me && before[c] != after[c]);
            let margin = ReadOnce::margin(ctx) + after[me];
            let mut s = self.seen.lock().unwrap();
            s.steps += 1;
            s.foreign += u64::from(foreign);
            s.worst = s.worst.min(margin);
            Ok(next)
        }

        fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
            self.inner.held()
        }

        fn metrics(&self) -> Vec<(String, f64)> {
            self.inner.metrics()
        }

        fn progress(&self) -> f64 {
            self.inner.progress()
        }
    }

    /// Two readers on a 4-CPU, 256 MiB machine read twice its memory: the page cache fills
    /// memory and then every read needs reclaim. Every allocation and every reclaim free of a
    /// step goes through the reading CPU's pageset (no other CPU's pageset changes); no
    /// allocation fails; and after every step the best zone's free pages, with what the
    /// reader's pageset took from it by its last refill, stay at or above MIN (reclaim runs
    /// before an allocation whenever no zone is above MIN, and a refill can take at most what
    /// the pageset then holds).
    #[test]
    fn page_cache_is_read_on_the_reading_cpu_and_reclaim_keeps_min() {
        let w = workload::find("vm-scalability").unwrap();
        let p = w.params(&BASE.map(String::from), 1.0).unwrap();
        let seen = Arc::new(Mutex::new(Seen { worst: i64::MAX, ..Seen::default() }));
        let checked = Checked { inner: ReadOnce::new(&p), nr_cpus: 0, seen: seen.clone() };
        let mut m = Model::new(small_setup(4, 256, "modern", 1)).unwrap();
        let o = m.run(&mut Serial::new(checked), &mut |_| {}).unwrap();
        let s = seen.lock().unwrap();
        let per = metric(&o, "pages_per_task");
        assert_eq!(s.steps as f64, 2.0 * per);
        assert_eq!(s.foreign, 0, "a step changed another CPU's pageset");
        assert!(s.worst >= 0, "free fell below MIN by more than a refill: {}", s.worst);
        assert!(metric(&o, "min_free_margin") > 0.0);
        assert_eq!(metric(&o, "alloc_failures"), 0.0);
        // Twice memory read, memory cannot hold it: at least the surplus was reclaimed.
        let managed: u64 = m.info().node_managed_pages.iter().sum();
        assert!(metric(&o, "reclaimed_pages") >= 2.0 * per - managed as f64);
        assert!(metric(&o, "throughput") > 0.0);
    }

    /// With a tenth of memory read there is nothing to reclaim: the reclaim of the test above
    /// is the page cache filling memory, not something every read does.
    #[test]
    fn a_small_read_needs_no_reclaim() {
        let o = run("tune-base", 2, &["read_share=0.1"]);
        assert_eq!(metric(&o, "reclaimed_pages"), 0.0);
        assert_eq!(o.ops.allocs as f64, 2.0 * metric(&o, "pages_per_task"));
        // Nothing is freed while the readers run: the page cache goes back after the run.
        assert_eq!(o.ops.frees, 0);
    }

    #[test]
    fn same_seed_same_run() {
        let (a, b) = (run("modern", 3, &[]), run("modern", 3, &[]));
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    #[test]
    fn the_case_is_checked() {
        let w = workload::find("vm-scalability").unwrap();
        for bad in ["case=2", "case=0.5", "read_share=0", "read_share=100"] {
            assert!(w.params(&[bad.to_string()], 1.0).is_err(), "{bad}");
        }
    }
}

//! `vm-scalability`: the vm-scalability suite's `case-anon-w-seq` (`case=0`, the default,
//! this file) and `case-lru-file-readonce` (`case=1`, [`super::lru_file_readonce`])
//! (docs/workloads.md §14). Section numbers (§) in this file are those of
//! `docs/workloads.md`.
//!
//! What it imitates: `usemem -n TASKS $((mem / TASKS / 2))`: `TASKS` processes, each maps
//! its share of half the machine's memory (a private mapping of `/dev/zero`, anonymous memory
//! in effect), writes every word of it in address order once, reports its bytes over the
//! time the writing took, then unmaps it all and reports the time the freeing took. Each
//! first write of a page faults in one order-0 movable page (GFP_HIGHUSER_MOVABLE, cleared),
//! plus one order-0 page-table page per 512 pages; the unmap frees them on the task's CPU in
//! batches. Unlike `page-fault1` every task makes one long pass: the pagesets see a stream of
//! allocations on every CPU at once, then a burst of frees on every CPU at once.
//!
//! The model: task `i` runs alone on CPU `i` (the CPUs taken in an order drawn from the run's
//! seed when there are fewer tasks than CPUs: the scheduler spreads busy tasks over idle
//! CPUs), allocating from its node. A step is one fault (the page cleared and then written
//! again by the benchmark, both charged as page writes, plus `fault_ns`), or a chunk of the
//! unmap (`unmap_page_ns` a page). Metrics: `throughput`, KiB/s summed over the tasks, each
//! task's bytes over its own writing time (usemem's `bytes / usecs` line, summed as LKP sums
//! it); `free_ms`, the mean time a task's unmap took.
//!
//! Known biases: THP is assumed off (with THP the 2 MiB-aligned part of each mapping would
//! fault order-9 pages); the per-fault kernel work is one assumed figure; the PMD and PUD
//! pages, the TLB-gather batch pages and mmap's own cost are left out; tasks never migrate.
//!
//! State (case 0): each task is its CPU's alone, behind a lock only that CPU's steps take,
//! and nothing else is shared, so on the real runner the tasks' faults and unmaps overlap as
//! the processes' do. (Case 1, [`ReadOnce`], overlaps too: its tasks share only the page
//! cache's LRU, behind a lock a reclaim takes its batch out under and frees it after.)

use std::sync::Mutex;

use anyhow::{bail, Result};
use pagealloc::{Order, Pfn};
use pagealloc_testkit::rng::Rng;

use super::lru_file_readonce::ReadOnce;
use super::page_fault1::AnonMap;
use super::{ns, Fit, Fitted, ParamSpec, Params, WorkloadInfo};
use crate::model::{lock, part, Ctx, ModelInfo, Next, Workload};

/// The registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "vm-scalability",
    summary: "vm-scalability case-anon-w-seq (case=0): one task per CPU faults in its share \
              of half the memory, writing it once in order, then unmaps it all; \
              case-lru-file-readonce (case=1): one dd per CPU reads its sparse file once, \
              page cache filling memory under reclaim",
    params: PARAMS,
    default_machine: "skylake-1s",
    build,
    fit,
};

/// The case the parameters ask for.
fn build(p: &Params) -> Box<dyn Workload> {
    if p.get("case") == 1.0 {
        return Box::new(ReadOnce::new(p));
    }
    Box::new(VmScalability::new(p))
}

/// Where a case's tasks run and how many pages each handles.
pub(crate) struct Placement {
    /// Pages each task handles: its 1/tasks of `share` of the machine's memory.
    pub per_task: u64,
    /// The CPUs that run, task `i` on `cpus[i]`.
    pub cpus: Vec<u32>,
    /// The task on each CPU.
    pub on_cpu: Vec<Option<usize>>,
}

/// One busy task per CPU, the CPUs in an order drawn from the run's seed (the scheduler
/// spreads busy tasks over idle CPUs); an error when there are more tasks than CPUs.
pub(crate) fn place(info: &ModelInfo, tasks: usize, share: f64) -> Result<Placement> {
    if tasks > info.nr_cpus as usize {
        bail!("vm-scalability: {} tasks need a CPU each, the machine has {}", tasks, info.nr_cpus);
    }
    let managed: u64 = info.node_managed_pages.iter().sum();
    let per_task = ((managed as f64 * share / tasks as f64).round() as u64).max(1);
    let mut cpus: Vec<u32> = (0..info.nr_cpus).collect();
    let mut rng = Rng::new(info.seed ^ 0x766d_7363_616c_6521);
    for i in (1..cpus.len()).rev() {
        cpus.swap(i, rng.below(i as u64 + 1) as usize);
    }
    cpus.truncate(tasks);
    let mut on_cpu = vec![None; info.nr_cpus as usize];
    for (t, &c) in cpus.iter().enumerate() {
        on_cpu[c as usize] = Some(t);
    }
    Ok(Placement { per_task, cpus, on_cpu })
}

/// One busy task per CPU: no more tasks than CPUs.
fn fit(p: &Params, m: Fit) -> Vec<Fitted> {
    super::fit_cpus("tasks", p, m)
}

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "case",
        default: 0.0,
        min: 0.0,
        max: 1.0,
        unit: "case",
        doc: "0 = case-anon-w-seq, 1 = case-lru-file-readonce",
        source: "vm-scalability's case scripts (docs/workloads.md §14.1, §14.4)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "tasks",
        default: 8.0,
        min: 1.0,
        max: 4096.0,
        unit: "processes",
        doc: "processes (usemem -n), one per CPU",
        source: "assumed: the case takes nr_task from its environment; one task per CPU of the \
                 default machine (8), docs/workloads.md §14.1",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "mem_share",
        default: 0.5,
        min: 0.000_01,
        max: 0.9,
        unit: "of memory",
        doc: "anon case: memory written by all tasks together, as a share of the machine's (each task \
              writes its 1/tasks of it)",
        source: "case-anon-w-seq: usemem -n $nr_task $((mem / nr_task / 2)), mem = MemTotal \
                 (vm-scalability, docs/workloads.md §14.1)",
        scaled: true,
        whole: false,
    },
    super::page_fault1::FAULT_NS,
    super::page_fault1::UNMAP_PAGE_NS,
    super::lru_file_readonce::READ_SHARE,
    super::lru_file_readonce::READ_PAGE_NS,
    super::thpfioscale::RECLAIM_PAGE_NS,
];

/// One usemem process.
#[derive(Debug, Default)]
struct Task {
    map: AnonMap,
    /// When the writing ended, and when the unmap did (ps; 0 = not yet).
    written_at: u64,
    freed_at: u64,
}

/// One run.
#[derive(Debug)]
pub struct VmScalability {
    tasks: usize,
    mem_share: f64,
    fault: u64,
    unmap_page: u64,
    /// Pages each task writes (from the machine's memory at start).
    per_task: u64,
    /// Task `t`, stepped only by the CPU it runs on.
    task: Vec<Mutex<Task>>,
    /// The task on each CPU.
    on_cpu: Vec<Option<usize>>,
}

impl VmScalability {
    /// A run with these parameters.
    pub fn new(p: &Params) -> VmScalability {
        VmScalability {
            tasks: p.count("tasks") as usize,
            mem_share: p.get("mem_share"),
            fault: ns(p.get("fault_ns")),
            unmap_page: ns(p.get("unmap_page_ns")),
            per_task: 0,
            task: Vec::new(),
            on_cpu: Vec::new(),
        }
    }
}

impl VmScalability {
    /// Every task's state, locked in turn, for reading once the run is over.
    fn tasks(&self) -> impl Iterator<Item = std::sync::MutexGuard<'_, Task>> {
        self.task.iter().map(lock)
    }
}

impl Workload for VmScalability {
    fn start(&mut self, info: &ModelInfo) -> Result<Vec<u32>> {
        let p = place(info, self.tasks, self.mem_share)?;
        (self.per_task, self.on_cpu) = (p.per_task, p.on_cpu);
        self.task = (0..self.tasks).map(|_| Mutex::default()).collect();
        Ok(p.cpus)
    }

    fn step(&self, ctx: &mut Ctx<'_>) -> Result<Next> {
        let Some(t) = self.on_cpu[ctx.cpu() as usize] else {
            return Ok(Next::Done);
        };
        // This CPU's own task: no other step takes this lock.
        let mut task = lock(&self.task[t]);
        if task.written_at == 0 {
            // clear_page, then usemem's write of every word.
            task.map.fault(ctx, self.fault, 2);
            if task.map.faulted == self.per_task {
                task.written_at = ctx.now().max(1);
            }
            return Ok(Next::Continue);
        }
        if task.map.unmap_chunk(ctx, self.unmap_page)? {
            task.freed_at = ctx.now();
            return Ok(Next::Done);
        }
        Ok(Next::Continue)
    }

    fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
        let mut v = Vec::new();
        for (c, t) in self.on_cpu.iter().enumerate() {
            let Some(t) = *t else { continue };
            let task = part(&mut self.task[t]);
            v.extend(task.map.held(c as u32));
        }
        v
    }

    fn metrics(&self) -> Vec<(String, f64)> {
        let kib = (self.per_task * 4) as f64;
        let throughput: f64 = self
            .tasks()
            .filter(|t| t.written_at > 0)
            .map(|t| kib / (t.written_at as f64 / 1e12))
            .sum();
        let frees: Vec<f64> = self
            .tasks()
            .filter(|t| t.freed_at > 0)
            .map(|t| (t.freed_at - t.written_at) as f64 / 1e9)
            .collect();
        let free_ms = frees.iter().sum::<f64>() / frees.len().max(1) as f64;
        vec![
            ("throughput".into(), throughput),
            ("free_ms".into(), free_ms),
            ("pages_per_task".into(), self.per_task as f64),
            ("alloc_failures".into(), self.tasks().map(|t| t.map.failed).sum::<u64>() as f64),
        ]
    }

    fn progress(&self) -> f64 {
        let total = (self.per_task * self.tasks as u64 * 2).max(1);
        let done: u64 = self
            .tasks()
            .map(|t| {
                if t.freed_at > 0 {
                    2 * self.per_task
                } else if t.written_at > 0 {
                    self.per_task + t.map.unmapped as u64
                } else {
                    t.map.faulted
                }
            })
            .sum();
        done as f64 / total as f64
    }
}

#[cfg(test)]
mod tests {
    use crate::model::RunOutcome;
    use crate::workload::testing::metric;
    use crate::workload::{self, Fit};
    use pagealloc::Counter;

    fn run(preset: &str, seed: u64, extra: &[&str]) -> RunOutcome {
        let base = ["tasks=4", "mem_share=0.05"];
        workload::testing::run("vm-scalability", &base, extra, 4, preset, seed)
    }

    /// Every task faults its share (5 % of 256 MiB over 4 tasks), one PTE page per 512
    /// pages, and frees all of it: allocations = frees, and every one of them order 0 (no
    /// free_high, which only order 1-3 frees trigger).
    #[test]
    fn each_task_faults_its_share_then_frees_it_all() {
        let o = run("modern", 1, &[]);
        let per = metric(&o, "pages_per_task");
        assert!((per - 0.05 * 65536.0 / 4.0).abs() < 0.05 * 65536.0 / 4.0 * 0.05, "{per}");
        let tables = (per / 512.0).ceil();
        assert_eq!(o.ops.allocs as f64, 4.0 * (per + tables));
        assert_eq!(o.ops.frees, o.ops.allocs);
        assert_eq!(o.ops.alloc_failures, 0);
        assert_eq!(o.events.get(Counter::DrainFreeHigh), 0);
        assert!(metric(&o, "throughput") > 0.0 && metric(&o, "free_ms") > 0.0);
    }

    /// A task's unmap frees over 6,000 pages in a row, far more than its pageset may hold on
    /// a 256 MiB zone: the pageset drains to the zone as it overflows, during the run, not
    /// only at the cool-down — at least half of the pages freed go back that way.
    #[test]
    fn the_unmap_burst_overflows_the_pagesets() {
        let o = run("tune-base", 2, &["mem_share=0.4"]);
        assert!(metric(&o, "pages_per_task") > 6000.0);
        assert!(o.events.get(Counter::DrainHigh) > 0);
        assert!(o.events.get(Counter::DrainHighPages) > 4 * 3000);
    }

    #[test]
    fn same_seed_same_run() {
        let (a, b) = (run("modern", 3, &[]), run("modern", 3, &[]));
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    #[test]
    fn parameters_are_checked_and_tasks_fit_the_machine() {
        let w = workload::find("vm-scalability").unwrap();
        for bad in ["tasks=0", "tasks=1.5", "mem_share=0.95", "mem_share=0"] {
            assert!(w.params(&[bad.to_string()], 1.0).is_err(), "{bad}");
        }
        let two = Fit { nr_cpus: 2, nr_nodes: 1 };
        let (p, notes) = w.params_for(&[], 1.0, two).unwrap();
        assert_eq!(p.get("tasks"), 2.0);
        assert_eq!(notes.fitted.len(), 1);
        assert!(w.params_for(&["tasks=8".into()], 1.0, two).is_err());
        // mem_share is the volume.
        assert_eq!(w.params(&[], 0.1).unwrap().get("mem_share"), 0.05);
    }
}

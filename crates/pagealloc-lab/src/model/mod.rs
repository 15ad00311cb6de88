//! The model runner: a deterministic simulation of a large machine on one thread.
//!
//! N virtual CPUs, each with its own clock and seeded generator, take turns in clock order (a
//! discrete-event scheduler: the CPU whose clock is earliest runs its next step). A step is a
//! few of the workload's actions — allocate, free, touch pages, compute — each charged to the
//! CPU's clock from the [`CostProfile`]. The allocator is the real library, driven with
//! explicit CPUs over frame numbers only (no memory behind them), so hundreds of CPUs and
//! hundreds of GiB cost little. The zone locks live in virtual time ([`sink`]): a CPU that
//! finds one held waits until it is free. Every virtual second every CPU runs the
//! allocator's `tick` (decay of `high`, remote drains), and the pages held by the pagesets
//! are sampled.
//!
//! Same machine, policy, workload, costs and seed ⇒ the same run, event for event.

/// A test workload's `held`, `metrics` and `progress` when it keeps no pages past a step,
/// reports nothing and says nothing of its progress.
#[cfg(test)]
macro_rules! holds_nothing_and_measures_nothing {
    () => {
        fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
            Vec::new()
        }
        fn metrics(&self) -> Vec<(String, f64)> {
            Vec::new()
        }
        fn progress(&self) -> f64 {
            0.0
        }
    };
}

pub mod cache;
pub mod cost;
pub mod lines;
pub mod memory;
pub mod percpu;
pub mod prefetch;
pub mod real;
pub mod sink;
pub mod slab;
mod wake;

use std::cmp::Reverse;
use std::collections::binary_heap::{BinaryHeap, PeekMut};

use anyhow::{anyhow, bail, Context, Result};
use pagealloc::{
    CompactMode, CompactOutcome, Cpu, CpuId, Frag, Gfp, MemoryMap, Migrate, NodeId, Order,
    PageAllocator, PageFragCache, Pfn, Policy, Target, Tunables, VmEvents,
};

use pagealloc_slab::{SlabObject, SlabStat};
use pagealloc_testkit::rng::Rng;

pub use self::percpu::{Latest, Padded, Tally};

use self::cache::{LlcModel, Seen};
use self::cost::{CostProfile, CostPs};
use self::lines::{CacheMap, Prices, LINES_PER_PAGE};
use self::sink::ModelSink;
use self::slab::{CacheId, SlabSet, SlabSetup};
use self::wake::WakeCosts;
use crate::machine::hierarchy::{Hierarchy, Level};

/// Picoseconds in a second: virtual time is kept in picoseconds.
pub const PS_PER_S: u64 = 1_000_000_000_000;

/// The latest virtual time a run may reach, ps: half of what a `u64` of picoseconds holds,
/// about 106 days, so that the ticks and the cool-down after it cannot overflow the clock.
/// A run that goes past it (a cost profile of a second a call over millions of calls, a
/// trace spanning months) stops with an error instead of wrapping.
pub const MAX_CLOCK_PS: u64 = u64::MAX / 2;

/// Where each CPU sits, its caches, and what the memory hierarchy charges.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    /// Node of each CPU.
    pub cpu_node: Vec<u32>,
    /// LLC (cache-sharing group) of each CPU, numbered from 0 over the machine.
    pub cpu_llc: Vec<u32>,
    /// Size of each LLC, bytes.
    pub llc_bytes: Vec<u64>,
    /// L2 domain (the CPUs sharing one L2) of each CPU, numbered from 0 over the machine.
    pub cpu_l2: Vec<u32>,
    /// Size of each L2 domain's cache, bytes.
    pub l2_bytes: Vec<u64>,
    /// What each access costs by where its line is.
    pub hierarchy: Hierarchy,
    /// Bytes of one frame's metadata: 64 / `frame_bytes` frames share a line.
    pub frame_bytes: u64,
}

impl Topology {
    /// For tests: the CPUs of each node share one LLC of that node's `llc_bytes`; each CPU
    /// has an L2 of its own of 1 MiB; the figures are `icl-2s-128`'s (every figure a
    /// one-LLC-per-node machine needs).
    #[cfg(test)]
    pub fn simple(cpu_node: Vec<u32>, llc_bytes: Vec<u64>) -> Topology {
        let n = cpu_node.len();
        let hierarchy = crate::machine::Machine::builtin("icl-2s-128")
            .and_then(|m| m.hierarchy)
            .expect("a built-in machine with a hierarchy");
        Topology {
            cpu_llc: cpu_node.clone(),
            cpu_node,
            llc_bytes,
            cpu_l2: (0..n as u32).collect(),
            l2_bytes: vec![1 << 20; n],
            hierarchy,
            frame_bytes: crate::machine::KERNEL_FRAME_BYTES,
        }
    }

    /// The caches as the line model needs them.
    fn cache_map(&self) -> CacheMap {
        let mut llc_node = vec![0; self.llc_bytes.len()];
        for (&llc, &node) in self.cpu_llc.iter().zip(&self.cpu_node) {
            llc_node[llc as usize] = node;
        }
        CacheMap {
            cpu_node: self.cpu_node.clone(),
            cpu_llc: self.cpu_llc.clone(),
            cpu_l2: self.cpu_l2.clone(),
            llc_node,
            llc_lines: self.llc_bytes.iter().map(|b| b / 64).collect(),
            l2_lines: self.l2_bytes.iter().map(|b| b / 64).collect(),
            frames_per_line: (64 / self.frame_bytes.clamp(1, 64)).max(1),
            prefetch_streams: self
                .hierarchy
                .value(Level::PrefetchStreams)
                .map_or(0, |n| n.round() as u32),
        }
    }
}

/// Everything a model run is built from.
#[derive(Debug)]
pub struct ModelSetup {
    /// Memory and CPUs.
    pub map: MemoryMap,
    /// Sysctls.
    pub tunables: Tunables,
    /// The preset's switches.
    pub policy: Policy,
    /// CPU placement and caches.
    pub topology: Topology,
    /// Costs of the primitives.
    pub cost: CostProfile,
    /// Seed of every CPU's generator.
    pub seed: u64,
    /// Idle seconds after the workload ends, ticking, before the final PCP sample: pages
    /// cached by the pagesets drain back as `high` decays.
    pub cooldown_s: u32,
    /// Count allocations per frame (seed 000's most used frames); costs 4 bytes per frame.
    pub count_frames: bool,
    /// Run the allocator's full validator at the end (walks every frame).
    pub validate: bool,
}

/// What a workload learns about the machine before it starts.
#[derive(Clone, Debug)]
pub struct ModelInfo {
    /// CPUs.
    pub nr_cpus: u32,
    /// Nodes.
    pub nr_nodes: u32,
    /// Node of each CPU.
    pub cpu_node: Vec<u32>,
    /// Pages the allocator manages on each node.
    pub node_managed_pages: Vec<u64>,
    /// The run's seed, for the workload's own draws (task placement and the like).
    pub seed: u64,
}

/// What a CPU does after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Run again when its turn comes.
    Continue,
    /// Sleep until this virtual time (ps).
    SleepUntil(u64),
    /// Sleep until another CPU wakes it ([`Ctx::wake`]).
    Block,
    /// Finished: this CPU runs no more steps.
    Done,
}

/// A workload: the runners drive it one step at a time per CPU. The model runs one step at a
/// time on one thread; the real runner runs the steps of different CPUs at once on OS
/// threads, so a workload synchronises its own state — per-CPU parts ([`PerCpu`]), and small
/// shared parts behind atomics or their own locks — and holds no shared lock across an
/// allocator call, so that calls of two CPUs overlap as they do in a kernel. A workload that keeps every CPU's state
/// in one object implements [`SerialWorkload`] instead and runs wrapped in [`Serial`], whose
/// steps take turns.
pub trait Workload: Send + Sync {
    /// Set up; return the CPUs that run (each starts at time 0).
    fn start(&mut self, info: &ModelInfo) -> Result<Vec<u32>>;
    /// One step on `ctx`'s CPU: a handful of actions, ideally one allocator call. May run at
    /// the same time as other CPUs' steps (never as another step of the same CPU).
    fn step(&self, ctx: &mut Ctx<'_>) -> Result<Next>;
    /// [`step`](Self::step) when the caller has the workload to itself, as the model does
    /// (one step at a time on one thread): the same step, but a workload that locks all of
    /// its state for a step may skip the lock, whose two atomic read-modify-writes were a
    /// few per cent of a long model run.
    fn step_alone(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
        self.step(ctx)
    }
    /// Every block the workload still holds, with the CPU to free it on (called once, at the
    /// end, so that the run ends with every page back).
    fn held(&mut self) -> Vec<(u32, Pfn, Order)>;
    /// The workload's own results (throughput, latencies, …), as name → value.
    fn metrics(&self) -> Vec<(String, f64)>;
    /// How far along it is, 0..=1, for progress bars.
    fn progress(&self) -> f64;
    /// The slab caches its steps allocate kernel objects from ([`Ctx::slab_alloc`]), asked
    /// for once, after [`start`](Self::start). None by default.
    fn slab_setup(&self) -> SlabSetup {
        SlabSetup::default()
    }
}

/// A workload whose state is one object, stepped by one CPU at a time ([`Serial`] makes it a
/// [`Workload`]; in the real runner its steps, allocator calls included, take turns).
pub trait SerialWorkload: Send {
    /// See [`Workload::start`].
    fn start(&mut self, info: &ModelInfo) -> Result<Vec<u32>>;
    /// See [`Workload::step`]; never runs at the same time as another step.
    fn step(&mut self, ctx: &mut Ctx<'_>) -> Result<Next>;
    /// See [`Workload::held`].
    fn held(&mut self) -> Vec<(u32, Pfn, Order)>;
    /// See [`Workload::metrics`].
    fn metrics(&self) -> Vec<(String, f64)>;
    /// See [`Workload::progress`].
    fn progress(&self) -> f64;
    /// See [`Workload::slab_setup`].
    fn slab_setup(&self) -> SlabSetup {
        SlabSetup::default()
    }
}

/// A workload's lock on part of its state, taken. Poisoned only when a step panicked, which
/// the runner reports, so the state is used as it was left.
pub fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A locked part of a workload's state when nothing else can hold it (before or after the
/// run): no locking, poisoning ignored as in [`lock`].
pub fn part<T>(m: &mut std::sync::Mutex<T>) -> &mut T {
    m.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A [`SerialWorkload`] behind one lock: each step holds it throughout.
#[derive(Debug)]
pub struct Serial<W>(std::sync::Mutex<W>);

impl<W: SerialWorkload> Serial<W> {
    /// Wrap `w`.
    pub fn new(w: W) -> Serial<W> {
        Serial(std::sync::Mutex::new(w))
    }

    fn get(&self) -> std::sync::MutexGuard<'_, W> {
        lock(&self.0)
    }

    /// The workload, after its run.
    pub fn into_inner(self) -> W {
        self.0.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl<W: SerialWorkload> Workload for Serial<W> {
    fn start(&mut self, info: &ModelInfo) -> Result<Vec<u32>> {
        self.get().start(info)
    }
    /// On the real runner the wait for the lock is timed (`RunOutcome::turn_ps`): time a
    /// kernel would not spend, since its CPUs do not take turns at a workload.
    fn step(&self, ctx: &mut Ctx<'_>) -> Result<Next> {
        let asked = std::time::Instant::now();
        let mut w = self.get();
        ctx.waited_for_turn(asked);
        w.step(ctx)
    }
    fn step_alone(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
        part(&mut self.0).step(ctx)
    }
    fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
        self.get().held()
    }
    fn metrics(&self) -> Vec<(String, f64)> {
        self.get().metrics()
    }
    fn progress(&self) -> f64 {
        self.get().progress()
    }
    fn slab_setup(&self) -> SlabSetup {
        self.get().slab_setup()
    }
}

/// The per-CPU part of a [`Workload`]'s state: one lock per CPU, taken by that CPU's steps
/// (which never run at the same time as each other, so the lock is never contended during a
/// run and may be held across allocator calls) and by the calls after the run.
///
/// Each part sits on lines of its own ([`Padded`]): packed, two CPUs' locks shared a line,
/// and every real step's lock and unlock moved it between the host's cores.
#[derive(Debug, Default)]
pub struct PerCpu<T>(Vec<Padded<std::sync::Mutex<T>>>);

impl<T> PerCpu<T> {
    /// One part per CPU, CPU 0 first.
    pub fn new(parts: impl IntoIterator<Item = T>) -> PerCpu<T> {
        PerCpu(parts.into_iter().map(|p| Padded(std::sync::Mutex::new(p))).collect())
    }

    /// CPU `cpu`'s part, for its step; an error for a CPU the workload did not set up (a
    /// runner bug), never a panic.
    pub fn get(&self, cpu: u32) -> Result<std::sync::MutexGuard<'_, T>> {
        let m = self.0.get(cpu as usize).ok_or_else(|| anyhow!("no state for cpu {cpu}"))?;
        Ok(lock(&m.0))
    }

    /// CPU `cpu`'s part without locking, for a caller that owns the workload (the model's
    /// [`Workload::step_alone`]); an error for a CPU the workload did not set up.
    pub fn get_mut(&mut self, cpu: u32) -> Result<&mut T> {
        let m = self.0.get_mut(cpu as usize).ok_or_else(|| anyhow!("no state for cpu {cpu}"))?;
        Ok(part(&mut m.0))
    }

    /// Every CPU's part, CPU 0 first, without locking (the run is over or not started).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.0.iter_mut().map(|m| part(&mut m.0))
    }

    /// Every CPU's part in turn, CPU 0 first, each locked while `f` reads it.
    pub fn each<R>(&self, mut f: impl FnMut(&T) -> R) -> Vec<R> {
        self.0.iter().map(|m| f(&lock(&m.0))).collect()
    }
}

/// Scheduling state of a virtual CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    Runnable,
    Blocked,
    Done,
}

/// One virtual CPU.
#[derive(Debug)]
struct VCpu {
    now: u64,
    busy: u64,
    /// The part of `busy` the steps asked for as work ([`Ctx::work`]).
    worked: u64,
    /// The part of `busy` charged for page touches and copies ([`Ctx::touch`]).
    touched: u64,
    /// The part of `busy` charged for allocator calls (their fixed work, lines and holds).
    in_calls: u64,
    waited: u64,
    held: u64,
    rng: Rng,
    state: State,
    /// A wake-up that came while the CPU was not blocked: its next `Block` returns at once.
    wake_pending: Option<u64>,
}

/// A CPU's view of the machine during its step: the same surface for the model (a virtual
/// CPU whose every action is charged to its clock) and for the real runner ([`real`]: an OS
/// thread on real memory, timed by the wall clock).
#[derive(Debug)]
pub struct Ctx<'a> {
    cpu: Cpu,
    pa: &'a PageAllocator<ModelSink>,
    wakes: &'a mut Vec<(u32, u64)>,
    counts: &'a mut OpCounts,
    clock: Clock<'a>,
    slab: &'a SlabSet<'a>,
}

/// Where a [`Ctx`]'s time comes from, and what its touches write.
#[derive(Debug)]
enum Clock<'a> {
    /// The model: a virtual CPU charged from the cost profile and the machine's hierarchy,
    /// touching the LLC model and, where the machine prices L2-resident pages, its L2
    /// domain's page model (`l2`: the domain and the model).
    Virtual {
        v: &'a mut VCpu,
        llc: usize,
        cache: &'a mut LlcModel,
        l2: Option<(usize, &'a mut LlcModel)>,
        cost: &'a CostPs,
    },
    /// The real runner: an OS thread whose touches write the heap's memory.
    Real { t: &'a mut real::ThreadClock, heap: &'a real::RealHeap },
}

/// Allocator calls made by the workload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCounts {
    /// Allocation calls (page_frag allocations included).
    pub allocs: u64,
    /// Of which failed.
    pub alloc_failures: u64,
    /// Free calls.
    pub frees: u64,
    /// Slab object allocations ([`Ctx::slab_alloc`]); the page allocations they made are
    /// in `allocs`.
    pub slab_allocs: u64,
    /// Of which failed.
    pub slab_alloc_failures: u64,
    /// Slab object frees; the slabs they gave back are in `frees`.
    pub slab_frees: u64,
    /// Slabs the slab allocations took from the page allocator (SLUB's `alloc_slab` and
    /// `order_fallback`: page allocation calls, in `allocs` too).
    pub slabs_new: u64,
    /// Slabs the slab frees gave back during the run (SLUB's `free_slab`: page free calls, in
    /// `frees` too); the shrink at the end is not counted.
    pub slabs_freed: u64,
}

impl OpCounts {
    fn add(&mut self, o: &OpCounts) {
        self.allocs += o.allocs;
        self.alloc_failures += o.alloc_failures;
        self.frees += o.frees;
        self.slab_allocs += o.slab_allocs;
        self.slab_alloc_failures += o.slab_alloc_failures;
        self.slab_frees += o.slab_frees;
        self.slabs_new += o.slabs_new;
        self.slabs_freed += o.slabs_freed;
    }
}

impl Ctx<'_> {
    /// This CPU.
    pub fn cpu(&self) -> u32 {
        self.cpu.id().0
    }

    /// This CPU's clock (ps): virtual time in the model; in the real runner, wall time since
    /// the run started plus the work this step has asked for and not yet spent.
    pub fn now(&self) -> u64 {
        match &self.clock {
            Clock::Virtual { v, .. } => v.now,
            Clock::Real { t, .. } => t.now(),
        }
    }

    /// The allocator, to read its state (zones, watermarks, free pages) — not to allocate or
    /// free, which go through the `Ctx` methods so that they are charged.
    pub fn allocator(&self) -> &PageAllocator<ModelSink> {
        self.pa
    }

    /// This CPU's generator.
    pub fn rng(&mut self) -> &mut Rng {
        match &mut self.clock {
            Clock::Virtual { v, .. } => &mut v.rng,
            Clock::Real { t, .. } => &mut t.rng,
        }
    }

    /// Compute for `ps` picoseconds (the workload's own work, not the allocator's). The real
    /// runner spins that long once the step is over, outside the workload's lock.
    pub fn work(&mut self, ps: u64) {
        match &mut self.clock {
            Clock::Virtual { v, .. } => {
                v.now = v.now.saturating_add(ps);
                v.busy = v.busy.saturating_add(ps);
                v.worked = v.worked.saturating_add(ps);
            }
            Clock::Real { t, .. } => {
                t.debt_ps = t.debt_ps.saturating_add(ps);
                t.worked_ps = t.worked_ps.saturating_add(ps);
            }
        }
    }

    /// Work for `ps` that brings `lines` cache lines of the task's own data through the CPU's
    /// L2 and LLC (a compiler walking its working set between faults): it pushes the
    /// allocator's metadata lines and the workload's pages out of this CPU's caches as page
    /// writes do ([`Ctx::touch`]). The page-level LLC model ages by the nearest whole number
    /// of pages. On the real runner the work is just time; the host's caches do the rest.
    pub fn compute(&mut self, ps: u64, lines: u64) {
        self.work(ps);
        if let Clock::Virtual { llc, cache, l2, .. } = &mut self.clock {
            let pages = (lines + LINES_PER_PAGE / 2) / LINES_PER_PAGE;
            cache.advance(*llc, pages);
            if let Some((domain, l2)) = l2 {
                l2.advance(*domain, pages);
            }
            if let Some(l) = self.pa.events().lines() {
                l.advance_lines(self.cpu.id(), lines);
            }
        }
    }

    /// Charge a finished allocator call (model; real time passes by itself, and the real
    /// runner only ends the call's timing if it took one).
    fn charge(&mut self, fixed: impl FnOnce(&CostPs) -> u64) {
        match &mut self.clock {
            Clock::Virtual { v, cost, .. } => {
                let t = self.pa.events().end();
                let before = v.now;
                v.now = t.now.saturating_add(fixed(cost));
                v.waited += t.waited;
                v.held += t.held;
                let charged = v.now - before - t.waited;
                v.busy += charged;
                v.in_calls += charged;
            }
            Clock::Real { t, .. } => t.call_end(),
        }
    }

    /// A step of a workload whose CPUs take turns got its turn; it asked at `asked`. The real
    /// runner counts the wait (`RunOutcome::turn_ps`); the model never makes a step wait.
    pub fn waited_for_turn(&mut self, asked: std::time::Instant) {
        if let Clock::Real { t, .. } = &mut self.clock {
            t.waited_for_turn(asked);
        }
    }

    /// Start an allocator call on the model's clock, first paying what this CPU owes for
    /// CPUs let in at the chunk boundaries of its earlier batched frees (time it waited);
    /// on the real runner, start timing it if it is one of those timed.
    fn begin(&mut self) {
        match &mut self.clock {
            Clock::Virtual { v, .. } => {
                let debt = self.pa.events().take_debt(self.cpu.id().0);
                v.now = v.now.saturating_add(debt);
                v.waited += debt;
                self.pa.events().begin(v.now);
            }
            Clock::Real { t, .. } => t.call_begin(),
        }
    }

    /// Allocate from this CPU's node; `None` if the allocator refused (counted).
    pub fn alloc(&mut self, gfp: Gfp, order: Order) -> Option<Pfn> {
        self.begin();
        let r = self.pa.alloc_pages(self.cpu, gfp, order);
        self.finish_alloc(r.ok())
    }

    /// Allocate from `node`'s zonelist (a task bound with `numactl -m`).
    pub fn alloc_node(&mut self, node: u32, gfp: Gfp, order: Order) -> Option<Pfn> {
        self.begin();
        let r = self.pa.alloc_pages_node(self.cpu, NodeId(node), gfp, order);
        self.finish_alloc(r.ok())
    }

    /// One direct compaction and the allocation try after it, for a workload that runs its own
    /// slow path (see [`PageAllocator::compact_and_alloc`]): charged as `alloc` (the
    /// scanners' frames are priced as the allocator touches them) plus the copy of every page
    /// moved ([`copy`](Self::copy)). `None` when compaction did not make the block (counted as
    /// a failed allocation call).
    pub fn compact_and_alloc(
        &mut self,
        gfp: Gfp,
        order: Order,
        mode: CompactMode,
        m: &mut dyn Migrate,
    ) -> Option<Pfn> {
        self.begin();
        let mut moves = Moves::new(m);
        let r = self.pa.compact_and_alloc(self.cpu, gfp, order, mode, &mut moves);
        let r = self.finish_alloc(r.ok().and_then(|(p, _)| p));
        self.copy_moved(&moves.moved);
        r
    }

    /// One wakeup of `node`'s kcompactd on this CPU ([`PageAllocator::kcompactd`]): the
    /// scanners' frames as the allocator touches them plus the copy of every page moved; no
    /// fixed cost (the cost profile has no figure for it, and the scanning is what costs).
    /// The caller runs it only when [`PageAllocator::kcompactd_pending`] says so unless it
    /// wants proactive compaction (Linux 5.9 and later).
    pub fn kcompactd(&mut self, node: u32, m: &mut dyn Migrate) -> Result<Option<CompactOutcome>> {
        self.begin();
        let mut moves = Moves::new(m);
        let r = self.pa.kcompactd(self.cpu, NodeId(node), &mut moves);
        self.charge(|_| 0);
        self.copy_moved(&moves.moved);
        r.map_err(|e| anyhow!("cpu {}: kcompactd of node {node}: {e}", self.cpu()))
    }

    /// Charge the copies of the blocks a compaction moved.
    fn copy_moved(&mut self, moved: &[(Pfn, Pfn, Order)]) {
        for &(from, to, order) in moved {
            self.copy(from, to, 4096 << order.0);
        }
    }

    /// Copy `bytes` from the block at `from` to the block at `to` (a migration's
    /// `copy_page`s). The model charges a read of each source page and a write of each
    /// target page, each at the machine's page write rate for where the page is (the LLC's
    /// for a page this CPU's LLC model holds, DRAM's, local or remote by the page's node, for
    /// a cold one), as [`touch`](Self::touch) prices a write; both pages end up in the LLC
    /// model. The hierarchy has no read rate: pricing the read as a write of the same page
    /// is assumed (docs/hardware.md). Returns the cold pages, source and target. The real
    /// runner copies the memory whole, as the kernel's `copy_page` does (`FrameHeap::copy`),
    /// and returns 0.
    pub fn copy(&mut self, from: Pfn, to: Pfn, bytes: u64) -> u64 {
        if let Clock::Real { t, heap } = &mut self.clock {
            t.copy(heap, from, to, bytes);
            return 0;
        }
        self.touch(from, bytes) + self.touch(to, bytes)
    }

    fn finish_alloc(&mut self, pfn: Option<Pfn>) -> Option<Pfn> {
        self.charge(|c| c.pcp_alloc);
        self.counts.allocs += 1;
        if pfn.is_none() {
            self.counts.alloc_failures += 1;
        }
        pfn
    }

    /// Free a block on this CPU. A refused free is a bug in the workload: an error.
    pub fn free(&mut self, pfn: Pfn, order: Order) -> Result<()> {
        self.begin();
        let r = self.pa.free_pages(self.cpu, pfn, order);
        self.charge(|c| c.pcp_free);
        self.counts.frees += 1;
        r.map_err(|e| anyhow!("cpu {}: free of {pfn:?} order {}: {e}", self.cpu(), order.0))
    }

    /// Allocate an object from the workload's slab cache `cache` (kernel
    /// `kmem_cache_alloc`); `bind`: the task's `numactl -m` node, where new slabs come from
    /// (`None`: this CPU's node). `Ok(None)` if the slab layer found no memory (counted); an
    /// error if the workload never asked for `cache`. One accounted call: `slab_alloc_ns`
    /// plus, when a new slab was needed, the page allocator's call(s) with their fixed work,
    /// lines and zone locks.
    pub fn slab_alloc(
        &mut self,
        cache: CacheId,
        gfp: Gfp,
        bind: Option<u32>,
    ) -> Result<Option<SlabObject>> {
        let slab: &SlabSet<'_> = self.slab;
        let c = slab.cache(cache)?;
        self.begin();
        // A slab of the preferred order, or a failed try and the fallback order: this CPU's
        // own counters, which no other thread's calls move.
        let slabs = || -> Result<u64> {
            Ok(c.cpu_stat(self.cpu, SlabStat::AllocSlab)?
                + c.cpu_stat(self.cpu, SlabStat::OrderFallback)?)
        };
        let before = slabs()?;
        let r = c.alloc_mpol(self.cpu, gfp, bind.map(NodeId));
        let pages = slabs()? - before;
        self.charge(|k| k.slab_alloc + pages * k.pcp_alloc);
        self.counts.allocs += pages;
        self.counts.slabs_new += pages;
        self.counts.slab_allocs += 1;
        if r.is_err() {
            self.counts.slab_alloc_failures += 1;
        }
        Ok(r.ok())
    }

    /// Free an object to its cache (kernel `kmem_cache_free`) on this CPU. One accounted
    /// call: `slab_free_ns` plus the page allocator's free of every slab it gave back. A
    /// refused free is a bug in the workload: an error.
    pub fn slab_free(&mut self, cache: CacheId, obj: SlabObject) -> Result<()> {
        let slab: &SlabSet<'_> = self.slab;
        let c = slab.cache(cache)?;
        self.begin();
        let freed = || c.cpu_stat(self.cpu, SlabStat::FreeSlab);
        let before = freed()?;
        let r = c.free(self.cpu, obj);
        let pages = freed()? - before;
        self.charge(|k| k.slab_free + pages * k.pcp_free);
        self.counts.frees += pages;
        self.counts.slabs_freed += pages;
        self.counts.slab_frees += 1;
        r.map_err(|e| anyhow!("cpu {}: slab free to {}: {e}", self.cpu(), c.name()))
    }

    /// A hint that the block at `pfn` will be freed soon (see [`PageAllocator::prefetch`]):
    /// a workload freeing a batch calls it a few blocks ahead. It costs no virtual time and
    /// changes nothing in the run; it only makes the model itself faster. Besides the frame's
    /// metadata and line stamps it loads the page's stamps in the page models: a freed page
    /// goes to the front of its pageset, and the allocation that takes it next writes it, a
    /// stamp that otherwise missed the host's cache.
    #[inline]
    pub fn prefetch(&self, pfn: Pfn) {
        self.pa.prefetch(pfn);
        if let Some(lines) = self.pa.events().lines() {
            lines.prefetch_frame(pfn.0);
        }
        if let Clock::Virtual { cache, l2, .. } = &self.clock {
            cache.prefetch(pfn.0);
            if let Some((_, l2)) = l2 {
                l2.prefetch(pfn.0);
            }
        }
    }

    /// Drop a reference to a page_frag page (kernel `page_frag_free`: the last reference
    /// frees the block, order 0 through the pageset or the buddy lists as the policy says).
    pub fn frag_free(&mut self, page: Pfn) -> Result<()> {
        self.begin();
        let r = self.pa.page_frag_free(self.cpu, page);
        self.charge(|c| c.pcp_free);
        self.counts.frees += 1;
        r.map_err(|e| anyhow!("cpu {}: page_frag_free of {page:?}: {e}", self.cpu()))
    }

    /// Carve `bytes` from the page_frag cache `cache` on this CPU (kernel
    /// `napi_alloc_frag`/`netdev_alloc_frag`: an order-3 page, order 0 as the fallback,
    /// refilled when the page is used up; the core's [`PageFragCache`]). `None` if no page
    /// could be had (counted) or the fragment is larger than the cache's pages. Carving from
    /// the current page costs only the lines it touches; a refill is one accounted
    /// allocation.
    pub fn frag_alloc(&mut self, cache: &mut PageFragCache, bytes: u32, gfp: Gfp) -> Option<Frag> {
        self.begin();
        let before = cache.page();
        let r = cache.alloc(self.pa, self.cpu, bytes, gfp, 1);
        let refilled = cache.page() != before || r.is_err();
        self.charge(|c| if refilled { c.pcp_alloc } else { 0 });
        if refilled {
            self.counts.allocs += 1;
            if r.is_err() {
                self.counts.alloc_failures += 1;
            }
        }
        r.ok()
    }

    /// Give back the references `cache` still holds on its page, freeing it if no fragment
    /// is out (kernel `page_frag_cache_drain`, when a driver closes its queue).
    pub fn frag_drain(&mut self, cache: &mut PageFragCache) -> Result<()> {
        self.begin();
        let r = cache.drain(self.pa, self.cpu);
        self.charge(|c| c.pcp_free);
        self.counts.frees += 1;
        r.map_err(|e| anyhow!("cpu {}: page_frag_cache_drain: {e}", self.cpu()))
    }

    /// Write `bytes` starting at the first page of the block at `pfn` (pages after the first
    /// as needed). The model charges each page at the machine's write rate: the L2's for a
    /// page still in this CPU's L2 (only where the machine gives `write_l2_gbps`), the rate
    /// into another core's L2 for a page a core of this LLC wrote a moment ago and still
    /// holds (only where it gives `write_c2c_gbps`), the LLC's for any other page this CPU's
    /// LLC model holds, DRAM's (local or remote, by the block's node) for a cold one; a
    /// touch of less than a page waits a whole miss for its first line and streams the rest
    /// ([`Prices::part_page`]). It returns the number of cold pages; the pages also push
    /// metadata lines out of the CPU's caches. The real runner writes the range whole, as the
    /// kernel's `clear_page` and packet copies do (`FrameHeap::touch`), and returns 0: it
    /// cannot tell which pages were cold.
    pub fn touch(&mut self, pfn: Pfn, bytes: u64) -> u64 {
        if bytes == 0 {
            return 0;
        }
        match &mut self.clock {
            Clock::Virtual { v, llc, cache, l2, .. } => {
                let pages = bytes.div_ceil(4096);
                let l2 = l2.as_mut().map(|(d, m)| (*d, &mut **m));
                let found = find_pages(cache, *llc, l2, pfn.0, pages);
                let sink = self.pa.events();
                if let Some(lines) = sink.lines() {
                    lines.advance(self.cpu.id(), pages);
                }
                let mut ps = page_write_ps(sink, self.cpu.id(), pfn, bytes, pages, found);
                if found.cold != 0 {
                    // The cold pages also take their home node's memory time, which every
                    // CPU's cold pages share (on a machine that gives `node_rw_gbps`): for
                    // the bytes written, as `page_write_ps` charges a part of a page.
                    let cold_bytes = found.cold * bytes.min(pages * 4096) / pages;
                    let done = sink.memory_write(pfn, v.now, cold_bytes);
                    ps = ps.max(done - v.now);
                }
                v.now = v.now.saturating_add(ps);
                v.busy = v.busy.saturating_add(ps);
                v.touched = v.touched.saturating_add(ps);
                found.cold
            }
            Clock::Real { t, heap } => {
                t.touch(heap, pfn, bytes);
                0
            }
        }
    }

    /// Wake CPU `cpu` at time `at` (ps) if it blocked; otherwise its next block returns at
    /// once.
    pub fn wake(&mut self, cpu: u32, at: u64) {
        self.wakes.push((cpu, at));
    }
}

/// Where a touch found its pages: in this core's L2 (only where the machine prices it), in
/// another core's L2 of the LLC (likewise), in no cache, and (the rest) in the LLC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct PagesFound {
    l2: u64,
    c2c: u64,
    cold: u64,
}

/// Touch frames `first..first + pages` in CPU's LLC model `cache` (LLC `llc`) and, where
/// the machine prices L2-resident pages, its L2 domain's page model: a page found in the L2
/// is priced there whatever the LLC model says (a non-inclusive LLC may have dropped it).
fn find_pages(
    cache: &mut LlcModel,
    llc: usize,
    l2: Option<(usize, &mut LlcModel)>,
    first: u64,
    pages: u64,
) -> PagesFound {
    let Some((domain, l2)) = l2 else {
        return PagesFound { cold: cache.touch(llc, first, pages), ..PagesFound::default() };
    };
    let mut found = PagesFound::default();
    for f in first..first + pages {
        let seen = l2.touch_page(domain, f);
        let cold = cache.touch(llc, f, 1) == 1;
        // Another core's L2 counts only while this LLC holds the page: a page the LLC model
        // calls cold was last written on another LLC (it takes pages over) or has aged out.
        match seen {
            Seen::Hot => found.l2 += 1,
            _ if cold => found.cold += 1,
            Seen::Elsewhere => found.c2c += 1,
            Seen::Cold => {}
        }
    }
    found
}

/// What writing `bytes` from the start of the block at `pfn` (`pages` pages, found as
/// `found` says) costs `cpu` (ps): a cold page at the DRAM rate of the block's node, a page
/// in the core's L2 at the L2's, one in another core's L2 of the LLC at `write_c2c_gbps`
/// (the LLC's where the machine has no such figure), any other at the LLC's, and only the
/// bytes written, not the whole last page; less than a page waits a whole miss for its first
/// line and streams the rest ([`Prices::part_page`]). The node is looked up and the division made only when they
/// can change the answer (a hot write of whole pages is the common case, and both showed in
/// the profile).
fn page_write_ps(
    sink: &ModelSink,
    cpu: CpuId,
    pfn: Pfn,
    bytes: u64,
    pages: u64,
    found: PagesFound,
) -> u64 {
    let prices = sink.prices();
    let remote = || matches!(sink.lines(), Some(l) if l.home_of_frame(pfn.0) != l.cpu_node(cpu));
    let PagesFound { l2, c2c, cold } = found;
    let page_l2 = prices.page_l2.unwrap_or(prices.page_llc);
    let c2c_prices = prices.page_c2c.map(|page| (prices.line_c2c, page));
    if bytes < 4096 {
        let (first, page) = match (l2, cold, c2c_prices) {
            (1.., _, _) => (prices.line_l2, page_l2),
            (_, 0, Some(from_c2c)) if c2c > 0 => from_c2c,
            (_, 0, _) => (prices.line_llc, prices.page_llc),
            _ if remote() => (prices.line_dram_remote, prices.page_dram_remote),
            _ => (prices.line_dram, prices.page_dram),
        };
        return Prices::part_page(first, page, bytes);
    }
    let cold_price = match cold {
        0 => 0,
        _ if remote() => prices.page_dram_remote,
        _ => prices.page_dram,
    };
    let page_c2c = prices.page_c2c.unwrap_or(prices.page_llc);
    let full = cold * cold_price
        + l2 * page_l2
        + c2c * page_c2c
        + (pages - cold - l2 - c2c) * prices.page_llc;
    if bytes == pages * 4096 {
        full
    } else {
        full * bytes / (pages * 4096)
    }
}

/// A workload's [`Migrate`] with a record of the blocks it agreed to move: (from, to, order).
struct Moves<'m> {
    inner: &'m mut dyn Migrate,
    moved: Vec<(Pfn, Pfn, Order)>,
}

impl<'m> Moves<'m> {
    fn new(inner: &'m mut dyn Migrate) -> Moves<'m> {
        Moves { inner, moved: Vec::new() }
    }
}

impl Migrate for Moves<'_> {
    fn migrate(&mut self, from: Pfn, to: Target<'_>, order: Order) -> bool {
        let target = to.pfn();
        let moved = self.inner.migrate(from, to, order);
        if moved {
            self.moved.push((from, target, order));
        }
        moved
    }
}

/// The pagesets' state on one CPU at one time, for plots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PcpSample {
    /// Virtual second.
    pub t: u32,
    /// CPU.
    pub cpu: u32,
    /// Pages on this CPU's pagesets (all zones).
    pub count: i64,
    /// `high` of this CPU's pageset in the zone where it holds most.
    pub high: i64,
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// When the last CPU finished (ps).
    pub elapsed_ps: u64,
    /// CPU time spent working, in the allocator and holding locks, summed over CPUs (ps).
    pub busy_ps: u64,
    /// The part of `busy_ps` the workload's steps asked for as work ([`Ctx::work`]): the
    /// same on both runners when they take the same steps. What the rest of `busy_ps` is
    /// differs: the model's charges for allocator calls, touches and lock holds, the real
    /// runner's wall time in calls and touches and the runner's own (wake-ups), and the
    /// steps' own code beyond their work (`lab_over_ps`).
    pub work_ps: u64,
    /// Busy time beyond the work: in the model, `busy_ps` less `work_ps` (what the cost
    /// profile and the hierarchy charged); in the real runner, the wall time inside the
    /// steps less the zone-lock waits and less the steps' own code counted as their work
    /// (`lab_ps`), so a spin for the work that overran its deadline (a thread preempted
    /// while it spun) counts in neither.
    pub beyond_work_ps: u64,
    /// The part of `beyond_work_ps` in page touches and copies ([`Ctx::touch`],
    /// [`Ctx::copy`]): the model's charges for them; the real runner's wall time in them,
    /// one in 32 timed (fenced) and counted 32 times.
    pub touch_ps: u64,
    /// The part of `beyond_work_ps` inside allocator calls, zone-lock waits excluded: the
    /// model's charges for them; the real runner's wall time in them, one in 32 timed
    /// (fenced) and counted 32 times, less every zone-lock wait.
    pub call_ps: u64,
    /// Real runner: the steps' own code (the wall time of a step less its turn waits and
    /// its calls and touches at the mean of the timed ones: the workload's queues, locks
    /// and counters, the clock reads) counted as part of the work the step asked for, up
    /// to it, which the runner's spin then leaves out; 0 in the model, which charges the
    /// work alone. The lab's code stands in for part of the kernel path the work stands for.
    pub lab_ps: u64,
    /// Real runner: the steps' own code beyond the work they asked for, a cost the model
    /// has no charge for (part of `beyond_work_ps`); 0 in the model.
    pub lab_over_ps: u64,
    /// The part of `beyond_work_ps` a real step spent waiting for its turn at a workload
    /// whose CPUs take turns ([`Serial`]), timed from the lock's request to its grant; 0 in
    /// the model, which steps one CPU at a time and charges no such wait.
    pub turn_ps: u64,
    /// The CPUs the workload ran on.
    pub running_cpus: u32,
    /// Wakes of a CPU that had blocked ([`Next::Block`]) — the wakes that cost a parked
    /// thread's wake-up on the real runner (a wake of a running CPU only marks it).
    pub blocked_wakes: u64,
    /// Time spent waiting for zone locks, summed over CPUs (ps).
    pub lock_wait_ps: u64,
    /// Time spent holding zone locks, summed over CPUs (ps).
    pub lock_held_ps: u64,
    /// The allocator's counters over the run, the idle cool-down's ticks included.
    pub events: VmEvents,
    /// The same counters up to the workload's end, before the cool-down: what the workload
    /// itself made the allocator do. The cool-down's decay drains count what the pagesets
    /// held at the instant the run ended, a phase of the workload's loop that timing decides.
    pub events_in_run: VmEvents,
    /// Allocator calls.
    pub ops: OpCounts,
    /// Pages held by all pagesets at a tick: (virtual second, pages), every second of a run
    /// of up to [`MAX_SAMPLED_TICKS`] seconds, every 2nd, 4th, … second of a longer one.
    pub pcp_pages: Vec<(u32, u64)>,
    /// Most pages held at any tick (every tick, kept in the samples or not).
    pub pcp_peak_pages: u64,
    /// When the workload ended.
    pub pcp_end_pages: u64,
    /// After the cool-down.
    pub pcp_final_pages: u64,
    /// Per-CPU pageset samples of a few CPUs, for plots, at the ticks of `pcp_pages`.
    pub pcp_cpu_samples: Vec<PcpSample>,
    /// Pages touched hot and cold.
    pub touches: (u64, u64),
    /// Metadata line accesses by where they found their line (in [`Found::ALL`] order).
    pub lines_found: [u64; 7],
    /// Of those, frame lines the cores' streamers had on their way, and the pair lines the
    /// spatial prefetcher brought besides (0 on a machine without hardware prefetchers).
    pub lines_prefetched: (u64, u64),
    /// Zone-lock hand-offs by distance: same core, same LLC, other LLC, other node.
    pub handoffs: [u64; 4],
    /// Zone-lock hold time by what it went to ([`sink::HeldPart`] order, ps): every hold of
    /// the run, the vmstat ticks' included (which `lock_held_ps`, the CPUs' own, leaves out).
    pub held_parts: [u64; 5],
    /// Metadata lines touched under zone locks, by where each was found ([`Found`] order).
    pub held_lines: [u64; 7],
    /// Most allocated frames (frame, allocations), when counted.
    pub most_used_frames: Vec<(u64, u32)>,
    /// The workload's own metrics.
    pub workload: Vec<(String, f64)>,
    /// Scheduler steps taken.
    pub steps: u64,
}

impl RunOutcome {
    /// Zone-lock waiting as a share of all CPU time (busy + waiting), percent: the seeds'
    /// "zone lock%".
    pub fn zone_lock_pct(&self) -> f64 {
        let total = self.busy_ps + self.lock_wait_ps;
        if total == 0 {
            0.0
        } else {
            100.0 * self.lock_wait_ps as f64 / total as f64
        }
    }

    /// Cold page touches as a share of all touches, percent (the "cache miss rate%" proxy).
    pub fn cold_touch_pct(&self) -> f64 {
        let (hot, cold) = self.touches;
        if hot + cold == 0 {
            0.0
        } else {
            100.0 * cold as f64 / (hot + cold) as f64
        }
    }
}

/// How many CPUs' pagesets are sampled for plots.
const SAMPLED_CPUS: usize = 8;
/// Scheduler steps between progress reports.
const PROGRESS_EVERY: u64 = 1 << 16;

/// How the end of a run returns the blocks the workload still holds, after the run's figures
/// are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Teardown {
    /// Free every block: the allocator ends with all its memory free, for whoever reads its
    /// state after the run (`--show`'s views) or hears its records (`--trace`'s frees).
    Free,
    /// Retire every block ([`PageAllocator::retire`]): the free's checks without the free,
    /// when nothing reads the allocator afterwards. The conservation check is as strict —
    /// each block a live allocation of its order, held once, and every managed page free,
    /// on a pageset or retired — and thpfioscale, which ends holding a page cache as large
    /// as memory, no longer pays a sixth of its run to put it back on the buddy lists.
    Retire,
}

/// A built model, ready to run one workload.
#[derive(Debug)]
pub struct Model {
    pa: PageAllocator<ModelSink>,
    cpus: Vec<VCpu>,
    cache: LlcModel,
    /// Per L2 domain, the pages it wrote last: only where the machine gives
    /// `write_l2_gbps`, so a page still in the core's L2 is priced at that rate.
    l2_pages: Option<LlcModel>,
    cost: CostPs,
    topology: Topology,
    wake: WakeCosts,
    cooldown_s: u32,
    validate: bool,
    count_frames: bool,
    seed: u64,
    /// How the next CPU to step is picked when not by its clock alone (tests of the
    /// interleavings real threads make; [`Model::skew_schedule`]).
    skew: Option<Skew>,
    teardown: Teardown,
}

/// A schedule whose CPUs' clocks run apart, as real threads' do: each CPU is stepped as if
/// its clock were `lead_ps` earlier, plus a random jitter of up to `jitter_ps` drawn at each
/// step. A workload shared by real threads must end well under every such schedule: its
/// threads' clocks are apart by what the host's scheduler and caches make of them, and the
/// model's clock order — the earliest CPU steps next — is only one of the interleavings.
#[derive(Debug)]
struct Skew {
    lead_ps: Vec<u64>,
    jitter_ps: u64,
    rng: Rng,
}

impl Skew {
    /// The heap key of CPU `c` whose clock reads `now`.
    fn key(&mut self, now: u64, c: u32) -> u64 {
        let lead = self.lead_ps.get(c as usize).copied().unwrap_or(0);
        let jitter = if self.jitter_ps == 0 { 0 } else { self.rng.next_u64() % self.jitter_ps };
        now.saturating_sub(lead).saturating_add(jitter)
    }
}

/// The heap key of CPU `c` at `now`: its clock, unless the schedule is skewed.
fn schedule_key(skew: &mut Option<Skew>, now: u64, c: u32) -> u64 {
    match skew {
        None => now,
        Some(s) => s.key(now, c),
    }
}

impl Model {
    /// Build the allocator and the virtual CPUs.
    pub fn new(setup: ModelSetup) -> Result<Model> {
        let ModelSetup { map, tunables, policy, topology, cost, seed, cooldown_s, .. } = setup;
        cost.check().context("cost profile")?;
        let nr_cpus = map.nr_cpus() as usize;
        if topology.cpu_node.len() != nr_cpus || topology.cpu_llc.len() != nr_cpus {
            bail!("topology describes {} CPUs, the memory map {nr_cpus}", topology.cpu_node.len());
        }
        if topology.cpu_llc.iter().any(|&l| l as usize >= topology.llc_bytes.len()) {
            bail!("a CPU names an LLC the topology does not describe");
        }
        if topology.cpu_l2.len() != nr_cpus
            || topology.cpu_l2.iter().any(|&d| d as usize >= topology.l2_bytes.len())
        {
            bail!("the topology's L2 domains do not cover its CPUs");
        }
        let cost_ps = cost.to_ps();
        let prices = Prices::of(&topology.hierarchy);
        let sink = ModelSink::new(topology.cache_map(), cost_ps, prices);
        let pa = PageAllocator::with_events(map, tunables, policy, sink)?;
        let zones: Vec<(u64, u64, u32)> = pa
            .zones()
            .iter()
            .map(|z| (z.start_pfn().0, z.start_pfn().0 + z.spanned_pages().0, z.node().0))
            .collect();
        let end_pfn = zones.iter().map(|z| z.1).max().unwrap_or(0);
        pa.events().attach(&zones, end_pfn, setup.count_frames);
        let cpus = (0..nr_cpus)
            .map(|c| VCpu {
                now: 0,
                busy: 0,
                worked: 0,
                touched: 0,
                in_calls: 0,
                waited: 0,
                held: 0,
                rng: Rng::new(stream_seed(seed, c as u64)),
                state: State::Idle,
                wake_pending: None,
            })
            .collect();
        let cache = LlcModel::new(end_pfn, &topology.llc_bytes).context("LLC model")?;
        let l2_pages = match prices.page_l2 {
            Some(_) => Some(LlcModel::new(end_pfn, &topology.l2_bytes).context("L2 page model")?),
            None => None,
        };
        let wake = WakeCosts::of(&topology.hierarchy);
        Ok(Model {
            pa,
            cpus,
            cache,
            l2_pages,
            cost: cost_ps,
            wake,
            topology,
            cooldown_s,
            validate: setup.validate,
            count_frames: setup.count_frames,
            seed,
            skew: None,
            teardown: Teardown::Free,
        })
    }

    /// Return what the workload still holds at the end of a run by `teardown` (a new model
    /// frees it: [`Teardown::Free`]).
    pub fn set_teardown(&mut self, teardown: Teardown) {
        self.teardown = teardown;
    }

    /// Step CPU `c` as if its clock were `lead_ps[c]` earlier (a CPU not named: 0), plus a
    /// jitter of up to `jitter_ps` drawn at every step from a stream of `seed`: the
    /// interleavings real threads make, whose clocks run apart, played deterministically
    /// (see [`Skew`]). The charges stay those of each CPU's own clock; only the order of the
    /// steps changes.
    #[cfg(test)]
    pub(crate) fn skew_schedule(&mut self, lead_ps: Vec<u64>, jitter_ps: u64, seed: u64) {
        self.skew = Some(Skew { lead_ps, jitter_ps, rng: Rng::new(seed) });
    }

    /// The allocator (for `/proc` views after a run).
    pub fn allocator(&self) -> &PageAllocator<ModelSink> {
        &self.pa
    }

    /// What a workload may know of the machine.
    pub fn info(&self) -> ModelInfo {
        let nr_nodes = self.pa.nr_nodes();
        let mut node_managed_pages = vec![0; nr_nodes];
        for z in self.pa.zones() {
            node_managed_pages[z.node().index()] += z.managed_pages().0;
        }
        ModelInfo {
            nr_cpus: self.pa.nr_cpus(),
            nr_nodes: nr_nodes as u32,
            cpu_node: self.topology.cpu_node.clone(),
            node_managed_pages,
            seed: self.seed,
        }
    }

    /// Run `w` to its end; `progress` hears the workload's progress (0..=1) now and then.
    pub fn run(
        &mut self,
        w: &mut dyn Workload,
        progress: &mut dyn FnMut(f64),
    ) -> Result<RunOutcome> {
        let info = self.info();
        let start_events = self.pa.vm_events();
        let running = w.start(&info)?;
        let slabs = SlabSet::new(&self.pa, &w.slab_setup())?;
        let mut heap: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new();
        for &c in &running {
            let v =
                self.cpus.get_mut(c as usize).ok_or_else(|| anyhow!("workload names cpu {c}"))?;
            if v.state != State::Idle {
                bail!("workload names cpu {c} twice");
            }
            v.state = State::Runnable;
            heap.push(Reverse((schedule_key(&mut self.skew, 0, c), c)));
        }
        let sampled: Vec<u32> = sampled_cpus(self.cpus.len(), &running);
        let mut rec = Recorder::default();
        let mut counts = OpCounts::default();
        let mut wakes = Vec::new();
        let mut blocked_wakes = 0u64;
        // The host's wake draws (only a machine with measured wake quantiles makes any).
        let mut wake_rng = Rng::new(stream_seed(self.seed, WAKE_STREAM));
        let mut next_tick = PS_PER_S;
        let mut steps = 0u64;
        let mut end = 0u64;
        while let Some(&Reverse((t, c))) = heap.peek() {
            if t > MAX_CLOCK_PS {
                bail!(
                    "cpu {c} reached virtual time {:.0} s, past the {:.0} s (about {} days) the \
                     model's clock holds: the run is too long (its cost profile or parameters)",
                    t as f64 / PS_PER_S as f64,
                    MAX_CLOCK_PS as f64 / PS_PER_S as f64,
                    MAX_CLOCK_PS / PS_PER_S / 86_400
                );
            }
            while t >= next_tick {
                self.tick_all(next_tick, &sampled, &mut rec);
                next_tick += PS_PER_S;
            }
            let cpu = self.pa.cpu(CpuId(c)).expect("running CPUs exist");
            let v = &mut self.cpus[c as usize];
            let worked_before = v.worked;
            let mut ctx = Ctx {
                cpu,
                pa: &self.pa,
                wakes: &mut wakes,
                counts: &mut counts,
                clock: Clock::Virtual {
                    v,
                    llc: self.topology.cpu_llc[c as usize] as usize,
                    cache: &mut self.cache,
                    l2: self
                        .l2_pages
                        .as_mut()
                        .map(|m| (self.topology.cpu_l2[c as usize] as usize, m)),
                    cost: &self.cost,
                },
                slab: &slabs,
            };
            let next = w.step_alone(&mut ctx)?;
            let handed_over =
                self.wake.hand_over(&mut self.cpus, c, worked_before, &wakes, &mut wake_rng);
            let v = &mut self.cpus[c as usize];
            // The CPU is still the heap's top: a CPU that runs on moves down in place (one
            // sift instead of a pop and a push; the order of (time, cpu) keys is total, so
            // the schedule is the same).
            {
                let mut top = heap.peek_mut().expect("the CPU that ran is on the heap");
                match next {
                    Next::Continue => *top = Reverse((schedule_key(&mut self.skew, v.now, c), c)),
                    Next::SleepUntil(at) => {
                        // Idle until `at`: the clock moves, busy time does not.
                        v.now = v.now.max(at);
                        *top = Reverse((schedule_key(&mut self.skew, v.now, c), c));
                    }
                    Next::Block => match v.wake_pending.take() {
                        Some(at) => {
                            v.now = v.now.max(at);
                            *top = Reverse((schedule_key(&mut self.skew, v.now, c), c));
                        }
                        None => {
                            v.state = State::Blocked;
                            PeekMut::pop(top);
                        }
                    },
                    Next::Done => {
                        v.state = State::Done;
                        end = end.max(v.now);
                        PeekMut::pop(top);
                    }
                }
            }
            for (target, at) in wakes.drain(..) {
                let Some(tv) = self.cpus.get_mut(target as usize) else {
                    bail!("workload woke cpu {target}, which does not exist");
                };
                match tv.state {
                    State::Blocked => {
                        blocked_wakes += 1;
                        tv.state = State::Runnable;
                        let earliest =
                            handed_over.map_or(0, |h| self.wake.woken_at(h, &mut wake_rng));
                        tv.now = tv.now.max(at).max(earliest);
                        heap.push(Reverse((schedule_key(&mut self.skew, tv.now, target), target)));
                    }
                    State::Runnable => {
                        tv.wake_pending = Some(tv.wake_pending.map_or(at, |p| p.min(at)));
                    }
                    State::Idle | State::Done => {}
                }
            }
            steps += 1;
            if steps % PROGRESS_EVERY == 0 {
                progress(w.progress());
            }
        }
        if let Some(c) = running.iter().find(|&&c| self.cpus[c as usize].state == State::Blocked) {
            bail!("the workload stalled: cpu {c} is blocked and nothing is left to wake it");
        }
        while next_tick <= end {
            self.tick_all(next_tick, &sampled, &mut rec);
            next_tick += PS_PER_S;
        }
        let pcp_end_pages = self.pcp_pages();
        let events_in_run = self.pa.vm_events().since(&start_events);
        for _ in 0..self.cooldown_s {
            self.tick_all(next_tick, &sampled, &mut rec);
            next_tick += PS_PER_S;
        }
        let pcp_final_pages = self.pcp_pages();
        progress(1.0);
        let events = self.pa.vm_events().since(&start_events);
        let most_used_frames =
            if self.count_frames { self.pa.events().most_used_frames(5) } else { Vec::new() };
        // The line and hold breakdowns describe the run, as the CPUs' held time does: read
        // them before the teardown's frees take the locks again.
        let (lines_found, handoffs) = self.pa.events().traffic();
        let lines_prefetched = self.pa.events().prefetched_by_hardware();
        let held_parts = self.pa.events().held_parts();
        let held_lines = self.pa.events().held_lines();
        // Nothing the teardown's calls would be charged is read: they need no pricing.
        self.pa.events().stop_pricing();
        slabs.shrink_all(&self.pa, CpuId(running.first().copied().unwrap_or(0)))?;
        drop(slabs);
        self.give_back(w)?;
        let (busy, waited, held) =
            self.cpus.iter().fold((0, 0, 0), |(b, w, h), v| (b + v.busy, w + v.waited, h + v.held));
        let worked: u64 = self.cpus.iter().map(|v| v.worked).sum();
        let touched: u64 = self.cpus.iter().map(|v| v.touched).sum();
        let in_calls: u64 = self.cpus.iter().map(|v| v.in_calls).sum();
        Ok(RunOutcome {
            elapsed_ps: end,
            busy_ps: busy,
            work_ps: worked,
            beyond_work_ps: busy - worked,
            touch_ps: touched,
            call_ps: in_calls,
            turn_ps: 0,
            lab_ps: 0,
            lab_over_ps: 0,
            running_cpus: running.len() as u32,
            blocked_wakes,
            lock_wait_ps: waited,
            lock_held_ps: held,
            events,
            events_in_run,
            ops: counts,
            pcp_peak_pages: rec.peak.max(pcp_end_pages),
            pcp_pages: rec.pcp_pages,
            pcp_end_pages,
            pcp_final_pages,
            pcp_cpu_samples: rec.samples,
            touches: self.cache.totals(),
            lines_found,
            lines_prefetched,
            handoffs,
            held_parts,
            held_lines,
            most_used_frames,
            workload: w.metrics(),
            steps,
        })
    }

    /// Every CPU's vmstat tick at virtual time `at`, then a sample of the pagesets. Lock time
    /// of the ticks' drains goes to the lock clocks, not to any CPU's work.
    fn tick_all(&self, at: u64, sampled: &[u32], rec: &mut Recorder) {
        for c in 0..self.cpus.len() {
            let cpu = self.pa.cpu(CpuId(c as u32)).expect("every CPU exists");
            self.pa.events().begin_tick(at);
            self.pa.tick(cpu);
        }
        sample_pagesets(&self.pa, (at / PS_PER_S) as u32, sampled, rec);
    }

    /// Pages on every pageset of every zone.
    fn pcp_pages(&self) -> u64 {
        pcp_pages(&self.pa)
    }

    /// Return what the workload still holds and check that every page came back.
    fn give_back(&self, w: &mut dyn Workload) -> Result<()> {
        give_back(&self.pa, w.held(), self.teardown, self.validate)
    }
}

/// Pages on every pageset of every zone.
fn pcp_pages(pa: &PageAllocator<ModelSink>) -> u64 {
    pa.zones().iter().map(pagealloc::Zone::pcp_pages).sum()
}

/// At tick `t` (seconds): the pages held by all pagesets, and each `sampled` CPU's count and
/// `high` (of the zone where it holds most), if `rec` keeps this tick. Both runners sample this
/// way.
fn sample_pagesets(pa: &PageAllocator<ModelSink>, t: u32, sampled: &[u32], rec: &mut Recorder) {
    let pages = pcp_pages(pa);
    rec.peak = rec.peak.max(pages);
    if t % rec.every != 0 {
        return;
    }
    rec.pcp_pages.push((t, pages));
    for &c in sampled {
        let (mut count, mut high, mut most) = (0i64, 0i64, i64::MIN);
        for z in pa.zones() {
            if let Some(p) = z.pcp(CpuId(c)) {
                count += i64::from(p.count);
                if i64::from(p.count) > most {
                    most = i64::from(p.count);
                    high = i64::from(p.high);
                }
            }
        }
        rec.samples.push(PcpSample { t, cpu: c, count, high });
    }
    if rec.pcp_pages.len() > MAX_SAMPLED_TICKS {
        rec.thin();
    }
}

/// Return the blocks a workload still holds (each on its CPU, freed or retired as
/// `teardown` says) and check that every page came back: the run's conservation check, and
/// the full validator when `validate`. Both runners end with it.
fn give_back(
    pa: &PageAllocator<ModelSink>,
    held: Vec<(u32, Pfn, Order)>,
    teardown: Teardown,
    validate: bool,
) -> Result<()> {
    let mut retired = 0u64;
    for (c, pfn, order) in held {
        let cpu = pa.cpu(CpuId(c)).ok_or_else(|| anyhow!("held block on cpu {c}"))?;
        match teardown {
            Teardown::Free => pa.free_pages(cpu, pfn, order),
            Teardown::Retire => pa.retire(cpu, pfn, order).map(|()| retired += order.nr_pages().0),
        }
        .map_err(|e| anyhow!("returning {pfn:?} order {} at the end: {e}", order.0))?;
    }
    let back = pa.nr_free_pages().0 + pcp_pages(pa) + retired;
    let managed = pa.managed_pages().0;
    if back != managed {
        bail!(
            "conservation: {managed} pages managed, {back} free or returned after the workload \
             returned everything ({} unaccounted)",
            managed as i64 - back as i64
        );
    }
    if validate {
        pagealloc::debug::validate(pa).map_err(|e| anyhow!("validator: {e}"))?;
    }
    Ok(())
}

/// The stream id of the model's wake draws ([`wake`]), apart from every CPU's (`0..nr_cpus`).
const WAKE_STREAM: u64 = u64::MAX;

/// The seed of CPU `cpu`'s generator. SplitMix64 walks its state in steps of one constant,
/// so seeds that differ by small multiples of it give shifted copies of one stream (as
/// `seed ^ (cpu + 1)·γ` did for small seeds): both inputs go through the output mix first.
fn stream_seed(seed: u64, cpu: u64) -> u64 {
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    mix(mix(seed) ^ mix(cpu.wrapping_add(0x6a09_e667_f3bc_c909)))
}

/// Most ticks whose samples a run keeps. Virtual time is not bounded by the work (a cost
/// profile of 1 s a call, a trace spanning months): one sample a second grew without bound
/// (about 32 bytes a virtual second on one CPU, 200 on eight). Past this many, every other
/// kept tick is dropped and the interval doubles, so the samples of any run take at most
/// ~`MAX_SAMPLED_TICKS` × 200 bytes (0.8 MiB), and a plot still spans the whole run.
pub const MAX_SAMPLED_TICKS: usize = 4096;

/// Samples taken at ticks.
#[derive(Debug)]
struct Recorder {
    /// (virtual second, pages on all pagesets) of the kept ticks.
    pcp_pages: Vec<(u32, u64)>,
    samples: Vec<PcpSample>,
    /// Ticks kept: those at multiples of this many seconds.
    every: u32,
    /// Most pages on all pagesets at any tick.
    peak: u64,
}

impl Default for Recorder {
    fn default() -> Recorder {
        Recorder { pcp_pages: Vec::new(), samples: Vec::new(), every: 1, peak: 0 }
    }
}

impl Recorder {
    /// Keep every other kept tick from now on, and drop the ticks that are not.
    fn thin(&mut self) {
        self.every = self.every.saturating_mul(2);
        let every = self.every;
        self.pcp_pages.retain(|&(t, _)| t % every == 0);
        self.samples.retain(|s| s.t % every == 0);
    }
}

/// Up to [`SAMPLED_CPUS`] running CPUs, spread evenly over them.
fn sampled_cpus(_nr_cpus: usize, running: &[u32]) -> Vec<u32> {
    let mut r: Vec<u32> = running.to_vec();
    r.sort_unstable();
    r.dedup();
    if r.len() <= SAMPLED_CPUS {
        return r;
    }
    (0..SAMPLED_CPUS).map(|i| r[i * r.len() / SAMPLED_CPUS]).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::machine::hierarchy::Level;
    use crate::workload;
    use pagealloc::Counter;

    /// A small machine: `cpus` CPUs on one node of `mib` MiB, one LLC of 8 MiB.
    pub(crate) fn small_setup(cpus: u32, mib: u64, preset: &str, seed: u64) -> ModelSetup {
        ModelSetup {
            map: MemoryMap::single_node(cpus, mib << 20).unwrap(),
            tunables: Tunables::default(),
            policy: Policy::preset(preset).unwrap(),
            topology: Topology::simple(vec![0; cpus as usize], vec![8 << 20]),
            cost: CostProfile::default_profile(),
            seed,
            cooldown_s: 5,
            count_frames: true,
            validate: true,
        }
    }

    fn run_trunc(seed: u64) -> RunOutcome {
        let info = workload::find("trunc").unwrap();
        let params = info.params(&["files=2".into(), "file_mib=16".into()], 1.0).unwrap();
        let mut w = (info.build)(&params);
        let mut m = Model::new(small_setup(4, 256, "modern", seed)).unwrap();
        m.run(w.as_mut(), &mut |_| {}).unwrap()
    }

    /// The counters of the run itself stop where the workload ends: the idle cool-down's
    /// decay drains (trunc ends with its pagesets full of the truncated files' pages) are in
    /// `events` only, and nothing the cool-down does allocates.
    #[test]
    fn the_run_s_own_counters_leave_the_cool_down_out() {
        let o = run_trunc(1);
        let (run, all) = (&o.events_in_run, &o.events);
        assert!(all.get(Counter::DrainDecay) > run.get(Counter::DrainDecay), "{all:?}");
        assert_eq!(all.get(Counter::PcpRefill), run.get(Counter::PcpRefill));
        assert!(run.get(Counter::PcpRefill) > 0);
    }

    #[test]
    fn a_run_returns_every_page_and_counts_its_work() {
        let o = run_trunc(1);
        let pages = 2 * 16 * 256;
        assert_eq!(o.ops.allocs, pages);
        assert_eq!(o.ops.frees, pages);
        assert_eq!(o.ops.alloc_failures, 0);
        assert!(o.elapsed_ps > 0 && o.busy_ps > 0);
        // trunc writes its files' pages and wakes no one: what is beyond its work is its
        // touches and its allocator calls, exactly.
        assert!(o.touch_ps > 0 && o.call_ps > 0, "{o:?}");
        assert_eq!(o.touch_ps + o.call_ps, o.beyond_work_ps);
        let elapsed = o.workload.iter().find(|(k, _)| k == "elapsed").unwrap().1;
        assert!(elapsed > 0.0);
        // Every page was touched once, cold (fresh memory).
        assert_eq!(o.touches, (0, pages));
        // One CPU at a time: nobody ever waits for the zone lock.
        assert_eq!(o.lock_wait_ps, 0);
        assert!(o.lock_held_ps > 0);
    }

    #[test]
    fn the_hold_breakdown_adds_up_to_the_holds_it_describes() {
        let o = run_trunc(1);
        let parts: u64 = o.held_parts.iter().sum();
        // The CPUs' own holds are part of it; the ticks' holds are the rest.
        assert!(parts >= o.lock_held_ps && o.lock_held_ps > 0, "{parts} {}", o.lock_held_ps);
        let m = crate::metrics::of_outcome("trunc", &o);
        let v = |n: &str| m.iter().find(|x| x.name == n).unwrap().value;
        let shares = v("hold_frame_lines_pct") + v("hold_fixed_pct");
        assert!(shares > 0.0 && shares <= 100.0, "{shares}");
    }

    #[test]
    fn same_seed_same_run_other_seed_other_placement() {
        let (a, b) = (run_trunc(7), run_trunc(7));
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        // Different seeds place cat and rm differently on some seed among a few.
        let differs = (1..6).any(|s| format!("{:?}", run_trunc(s)) != format!("{a:?}"));
        assert!(differs);
    }

    /// Neighbouring CPUs' generators must not be shifted copies of one stream (they were,
    /// for small seeds, when the seed was only xored with a multiple of SplitMix's step).
    #[test]
    fn cpu_streams_do_not_overlap() {
        for seed in [0u64, 1, 2, 7] {
            let first: Vec<Vec<u64>> = (0..8)
                .map(|c| {
                    let mut r = Rng::new(stream_seed(seed, c));
                    (0..64).map(|_| r.next_u64()).collect()
                })
                .collect();
            for a in 0..8 {
                for b in 0..8 {
                    if a != b {
                        assert!(
                            !first[a].iter().any(|x| first[b].contains(x)),
                            "seed {seed}: cpus {a} and {b} share values"
                        );
                    }
                }
            }
        }
    }

    /// A CPU that sleeps resumes at the time it asked for, and the sleep is not busy time.
    #[test]
    fn sleep_moves_the_clock_but_not_the_busy_time() {
        struct Nap(u32);
        impl SerialWorkload for Nap {
            fn start(&mut self, _: &ModelInfo) -> Result<Vec<u32>> {
                Ok(vec![0])
            }
            fn step(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
                self.0 += 1;
                ctx.work(10);
                Ok(match self.0 {
                    1 => Next::SleepUntil(1_000_000),
                    2 => {
                        assert_eq!(ctx.now(), 1_000_010, "resumed at the wake time");
                        Next::Done
                    }
                    _ => unreachable!(),
                })
            }
            holds_nothing_and_measures_nothing!();
        }
        let mut m = Model::new(small_setup(1, 64, "modern", 1)).unwrap();
        let o = m.run(&mut Serial::new(Nap(0)), &mut |_| {}).unwrap();
        assert_eq!(o.elapsed_ps, 1_000_010);
        assert_eq!(o.busy_ps, 20);
        // Both steps' work is the work asked for; nothing else was charged.
        assert_eq!((o.work_ps, o.running_cpus, o.beyond_work_ps), (20, 1, 0));
    }

    /// Two CPUs hand a turn back and forth, each blocking until the other wakes it, and each
    /// step asks for 1 µs of work before it wakes the other. CPU 1 blocks first; CPU 0 lets
    /// it (its first step only sleeps), so every wake finds the other CPU blocked.
    struct Turns {
        left: u32,
        started: [bool; 2],
    }

    impl SerialWorkload for Turns {
        fn start(&mut self, _: &ModelInfo) -> Result<Vec<u32>> {
            Ok(vec![0, 1])
        }
        fn step(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
            let me = ctx.cpu();
            if !std::mem::replace(&mut self.started[me as usize], true) {
                return Ok(if me == 0 { Next::SleepUntil(1_000) } else { Next::Block });
            }
            let other = 1 - me;
            if self.left == 0 {
                ctx.wake(other, ctx.now());
                return Ok(Next::Done);
            }
            self.left -= 1;
            ctx.work(1_000_000);
            ctx.wake(other, ctx.now());
            Ok(Next::Block)
        }
        holds_nothing_and_measures_nothing!();
    }

    /// One CPU writes a new page whole three times: at once, again, and after its task has
    /// streamed 300 pages' worth of its own data through its caches (the L2 holds 256).
    struct Rewrites;

    impl SerialWorkload for Rewrites {
        fn start(&mut self, _: &ModelInfo) -> Result<Vec<u32>> {
            Ok(vec![0])
        }
        fn step(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
            let pfn = ctx.alloc(Gfp::KERNEL, Order(0)).expect("a page");
            ctx.touch(pfn, 4096);
            ctx.touch(pfn, 4096);
            ctx.compute(0, 300 * LINES_PER_PAGE);
            ctx.touch(pfn, 4096);
            ctx.free(pfn, Order(0))?;
            Ok(Next::Done)
        }
        holds_nothing_and_measures_nothing!();
    }

    /// With `write_l2_gbps` a page the CPU wrote a moment ago is in its L2 and costs the L2's
    /// rate; once the task's own data has pushed it out, the LLC's. Without the figure both
    /// rewrites cost the LLC's rate, as before the figure existed. The first write is of a
    /// page no cache holds.
    #[test]
    fn a_page_still_in_the_l2_is_written_at_the_l2_rate_where_the_machine_gives_one() {
        use crate::machine::hierarchy::Sourced;
        let run = |l2_gbps: Option<f64>| {
            let mut setup = small_setup(1, 64, "modern", 1);
            if let Some(gbps) = l2_gbps {
                setup.topology.hierarchy.set(Level::WriteL2, Sourced::new(gbps, "test"));
            }
            let prices = Prices::of(&setup.topology.hierarchy);
            let mut m = Model::new(setup).unwrap();
            (m.run(&mut Serial::new(Rewrites), &mut |_| {}).unwrap(), prices)
        };
        let (plain, p) = run(None);
        assert_eq!(plain.touch_ps, p.page_dram + 2 * p.page_llc);
        let (l2, p) = run(Some(40.96));
        assert_eq!(p.page_l2, Some(100_000), "4096 bytes at 40.96 GB/s");
        assert_eq!(l2.touch_ps, p.page_dram + 100_000 + p.page_llc);
        assert_eq!(l2.touches, plain.touches, "the LLC model's counts do not change");
    }

    /// CPU 0 writes a new page whole and hands it to CPU 1, which writes it whole and frees
    /// it: a sender's packet that the receiver copies out.
    struct Handed {
        page: Option<Pfn>,
    }

    impl SerialWorkload for Handed {
        fn start(&mut self, _: &ModelInfo) -> Result<Vec<u32>> {
            Ok(vec![0, 1])
        }
        fn step(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
            match (ctx.cpu(), self.page) {
                (0, _) => {
                    let pfn = ctx.alloc(Gfp::KERNEL, Order(0)).expect("a page");
                    ctx.touch(pfn, 4096);
                    self.page = Some(pfn);
                    ctx.wake(1, ctx.now());
                    Ok(Next::Done)
                }
                (_, None) => Ok(Next::Block),
                (_, Some(pfn)) => {
                    ctx.touch(pfn, 4096);
                    ctx.free(pfn, Order(0))?;
                    self.page = None;
                    Ok(Next::Done)
                }
            }
        }
        holds_nothing_and_measures_nothing!();
    }

    /// With `write_c2c_gbps` (beside `write_l2_gbps`) a page another core of the LLC wrote a
    /// moment ago costs that rate; without it, the LLC's, as before the figure existed. The
    /// first write is of a page no cache holds.
    #[test]
    fn a_page_in_another_cores_l2_is_written_at_the_c2c_rate_where_the_machine_gives_one() {
        use crate::machine::hierarchy::Sourced;
        let run = |c2c_gbps: Option<f64>| {
            let mut setup = small_setup(2, 64, "modern", 1);
            setup.topology.hierarchy.set(Level::WriteL2, Sourced::new(81.92, "test"));
            if let Some(gbps) = c2c_gbps {
                setup.topology.hierarchy.set(Level::WriteC2c, Sourced::new(gbps, "test"));
            }
            let prices = Prices::of(&setup.topology.hierarchy);
            let mut m = Model::new(setup).unwrap();
            (m.run(&mut Serial::new(Handed { page: None }), &mut |_| {}).unwrap(), prices)
        };
        let (plain, p) = run(None);
        assert_eq!(plain.touch_ps, p.page_dram + p.page_llc);
        let (c2c, p) = run(Some(40.96));
        assert_eq!(p.page_c2c, Some(100_000), "4096 bytes at 40.96 GB/s");
        assert_eq!(c2c.touch_ps, p.page_dram + 100_000);
        assert_eq!(c2c.touches, plain.touches, "the LLC model's counts do not change");
    }

    /// A machine whose file gives this host's wake-up starts a blocked CPU `wake_idle_ns`
    /// after the step that woke it handed the wake over, which is before the step's work:
    /// 50 µs a wake here instead of the 1 µs of work; `wake_call_ns` is paid by the waker per
    /// CPU it wakes from a block, as busy time. Without the figures a woken CPU runs at the
    /// time its waker asked for, and the run is the same as before they existed. All runs
    /// wake blocked CPUs as often.
    #[test]
    fn a_woken_cpu_waits_the_hosts_wake_up_when_the_machine_gives_one() {
        use crate::machine::hierarchy::Sourced;
        let run = |figures: &[(Level, f64)]| {
            let mut setup = small_setup(2, 64, "modern", 1);
            for &(l, ns) in figures {
                setup.topology.hierarchy.set(l, Sourced::new(ns, "test"));
            }
            let mut m = Model::new(setup).unwrap();
            m.run(&mut Serial::new(Turns { left: 100, started: [false; 2] }), &mut |_| {}).unwrap()
        };
        let plain = run(&[]);
        let idle = run(&[(Level::WakeIdle, 50_000.0)]);
        let both = run(&[(Level::WakeIdle, 50_000.0), (Level::WakeCall, 5_000.0)]);
        // 100 hand-overs, and the last CPU's wake of the other as it ends.
        assert_eq!(plain.blocked_wakes, 101);
        assert_eq!((idle.blocked_wakes, both.blocked_wakes), (101, 101));
        // Each of the 100 hand-overs waits 50 µs from its waker's start instead of the 1 µs
        // of work, and the last wake (from a step without work) 50 µs instead of none.
        let delay = 100 * 49_000_000 + 50_000_000;
        assert_eq!(idle.elapsed_ps - plain.elapsed_ps, delay, "{plain:?}\n{idle:?}");
        assert_eq!(idle.busy_ps, plain.busy_ps, "waiting for a wake is not busy time");
        // The call is the waker's busy time; the woken CPU's start does not move, since the
        // 50 µs run from the hand-over's start.
        assert_eq!(both.busy_ps - idle.busy_ps, 101 * 5_000_000);
        assert_eq!(both.elapsed_ps, idle.elapsed_ps);
    }

    /// With the measured spread (`quantiles`) each wake is drawn from it: the same seed gives
    /// the same run, and a spread with a long upper side (25th, 50th, 75th percentiles 40, 50,
    /// 90 µs: a mean of about 61 µs) delays the run more than its median charged on every
    /// wake would, each of its 101 wakes inside the quantiles.
    #[test]
    fn a_wake_with_a_measured_spread_is_drawn_from_it() {
        use crate::machine::hierarchy::Sourced;
        let run = |quantiles: &[f64]| {
            let mut setup = small_setup(2, 64, "modern", 1);
            let mut idle = Sourced::new(50_000.0, "test");
            idle.quantiles = quantiles.to_vec();
            setup.topology.hierarchy.set(Level::WakeIdle, idle);
            let mut m = Model::new(setup).unwrap();
            m.run(&mut Serial::new(Turns { left: 100, started: [false; 2] }), &mut |_| {}).unwrap()
        };
        let median = run(&[]);
        let spread = run(&[40_000.0, 50_000.0, 90_000.0]);
        assert_eq!(spread.elapsed_ps, run(&[40_000.0, 50_000.0, 90_000.0]).elapsed_ps);
        assert_eq!(spread.blocked_wakes, 101);
        // Against `median`, each wake moved by its draw less 50 µs.
        let moved = spread.elapsed_ps as i64 - median.elapsed_ps as i64;
        let mean_extra = moved / 101;
        assert!((6_000_000..=16_000_000).contains(&mean_extra), "{mean_extra} ps a wake");
        assert_eq!(spread.busy_ps, median.busy_ps);
    }

    /// A cost profile at the top of its range (1 s a call) stretches a small run over hours
    /// of virtual time; the samples taken at ticks used to grow with it (one per virtual
    /// second). They are thinned to at most MAX_SAMPLED_TICKS, still spanning the run, and
    /// the peak is still that of every tick.
    #[test]
    fn a_slow_cost_profile_keeps_the_samples_bounded() {
        let info = workload::find("trunc").unwrap();
        let params = info.params(&["files=2".into(), "file_mib=16".into()], 1.0).unwrap();
        let mut w = (info.build)(&params);
        let mut setup = small_setup(2, 256, "modern", 1);
        setup.cooldown_s = 0;
        setup.cost =
            CostProfile { pcp_alloc_ns: 1e9, pcp_free_ns: 1e9, ..CostProfile::default_profile() };
        let o = Model::new(setup).unwrap().run(w.as_mut(), &mut |_| {}).unwrap();
        let seconds = o.elapsed_ps / PS_PER_S;
        assert!(seconds > 2 * MAX_SAMPLED_TICKS as u64, "{seconds} s: too short to thin");
        assert!(o.pcp_pages.len() <= MAX_SAMPLED_TICKS, "{}", o.pcp_pages.len());
        assert!(o.pcp_pages.len() > MAX_SAMPLED_TICKS / 4, "{}", o.pcp_pages.len());
        let every = o.pcp_pages[0].0;
        assert!(every > 1 && o.pcp_pages.iter().all(|&(t, _)| t % every == 0), "{every}");
        assert!(u64::from(o.pcp_pages.last().unwrap().0) + u64::from(every) > seconds);
        assert!(o.pcp_cpu_samples.len() <= SAMPLED_CPUS * MAX_SAMPLED_TICKS);
        assert!(o.pcp_cpu_samples.iter().all(|s| s.t % every == 0));
        let kept_max = o.pcp_pages.iter().map(|&(_, p)| p).max().unwrap();
        assert!(o.pcp_peak_pages >= kept_max && o.pcp_peak_pages > 0);
    }

    /// A run whose virtual time passes MAX_CLOCK_PS stops with an error; it used to wrap
    /// (or panic in a debug build) and tick for ever.
    #[test]
    fn a_run_past_the_clock_limit_is_an_error() {
        struct Forever;
        impl SerialWorkload for Forever {
            fn start(&mut self, _: &ModelInfo) -> Result<Vec<u32>> {
                Ok(vec![0])
            }
            fn step(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
                ctx.work(u64::MAX);
                Ok(Next::Continue)
            }
            holds_nothing_and_measures_nothing!();
        }
        let mut m = Model::new(small_setup(1, 64, "modern", 1)).unwrap();
        let e = m.run(&mut Serial::new(Forever), &mut |_| {}).unwrap_err().to_string();
        assert!(e.contains("past the") && e.contains("days) the model's clock holds"), "{e}");
    }

    /// Two CPUs hammering one zone lock must wait for each other; one CPU alone never does.
    #[test]
    fn contention_appears_only_with_company() {
        struct Churn {
            cpus: u32,
            left: Vec<u32>,
            held: Vec<Vec<Pfn>>,
        }
        impl SerialWorkload for Churn {
            fn start(&mut self, _: &ModelInfo) -> Result<Vec<u32>> {
                self.left = vec![2000; self.cpus as usize];
                self.held = vec![Vec::new(); self.cpus as usize];
                Ok((0..self.cpus).collect())
            }
            fn step(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
                let c = ctx.cpu() as usize;
                // Order 4 is never cached per CPU: every call takes the zone lock.
                if let Some(p) = ctx.alloc(Gfp::KERNEL, Order(4)) {
                    self.held[c].push(p);
                }
                if self.held[c].len() > 8 {
                    let p = self.held[c].remove(0);
                    ctx.free(p, Order(4))?;
                }
                self.left[c] -= 1;
                Ok(if self.left[c] == 0 { Next::Done } else { Next::Continue })
            }
            fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
                let mut v = Vec::new();
                for (c, h) in self.held.iter_mut().enumerate() {
                    v.extend(h.drain(..).map(|p| (c as u32, p, Order(4))));
                }
                v
            }
            fn metrics(&self) -> Vec<(String, f64)> {
                Vec::new()
            }
            fn progress(&self) -> f64 {
                0.0
            }
        }
        let run = |cpus| {
            let mut m = Model::new(small_setup(cpus, 256, "modern", 1)).unwrap();
            let mut w = Serial::new(Churn { cpus, left: Vec::new(), held: Vec::new() });
            m.run(&mut w, &mut |_| {}).unwrap()
        };
        let alone = run(1);
        assert_eq!(alone.lock_wait_ps, 0);
        let pair = run(2);
        assert!(pair.lock_wait_ps > 0);
        assert!(pair.zone_lock_pct() > 0.0);
        // Twice the work through one lock takes longer than one CPU's share.
        assert!(pair.elapsed_ps > alone.elapsed_ps);
    }

    /// One scripted step: allocator calls on the step's `Ctx`, objects kept between steps.
    type ScriptStep = fn(&mut Ctx<'_>, &mut Vec<SlabObject>) -> Result<()>;

    /// A one-CPU workload of scripted steps over one slab cache of 64-byte objects (order-0
    /// slabs of 64 on one CPU), recording each step's virtual time.
    struct SlabScript {
        steps: Vec<ScriptStep>,
        next: usize,
        objs: Vec<SlabObject>,
        took: Vec<u64>,
    }

    impl SlabScript {
        fn new(steps: Vec<ScriptStep>) -> Self {
            SlabScript { steps, next: 0, objs: Vec::new(), took: Vec::new() }
        }
    }

    impl SerialWorkload for SlabScript {
        fn start(&mut self, _: &ModelInfo) -> Result<Vec<u32>> {
            Ok(vec![0])
        }
        fn step(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
            let t0 = ctx.now();
            (self.steps[self.next])(ctx, &mut self.objs)?;
            self.took.push(ctx.now() - t0);
            self.next += 1;
            Ok(if self.next == self.steps.len() { Next::Done } else { Next::Continue })
        }
        holds_nothing_and_measures_nothing!();
        fn slab_setup(&self) -> SlabSetup {
            SlabSetup {
                config: pagealloc_slab::SlubConfig::default(),
                caches: vec![slab::SlabSpec::new("obj64", 64, 0, pagealloc_slab::SlabFlags::NONE)],
            }
        }
    }

    fn run_script(w: SlabScript) -> (Result<RunOutcome>, SlabScript) {
        let mut m = Model::new(small_setup(1, 64, "modern", 1)).unwrap();
        let mut w = Serial::new(w);
        let o = m.run(&mut w, &mut |_| {});
        (o, w.into_inner())
    }

    const OBJ: CacheId = CacheId(0);

    /// A slab allocation inside a step is one accounted call: the first, which takes a new
    /// order-0 slab, costs `slab_alloc_ns` plus the page allocator's call; the next, served by the active slab, `slab_alloc_ns` alone; a free into it
    /// `slab_free_ns`. At the end the cache is shrunk and every page is back (the run's
    /// conservation check), and the calls are counted.
    #[test]
    fn a_slab_call_is_charged_and_its_slab_comes_back() {
        let cost = CostProfile::default_profile().to_ps();
        let (o, w) = run_script(SlabScript::new(vec![
            |ctx, objs| {
                objs.push(ctx.slab_alloc(OBJ, Gfp::KERNEL, None)?.expect("memory"));
                Ok(())
            },
            |ctx, objs| {
                objs.push(ctx.slab_alloc(OBJ, Gfp::KERNEL, None)?.expect("memory"));
                Ok(())
            },
            |ctx, objs| ctx.slab_free(OBJ, objs.pop().unwrap()),
            |ctx, objs| ctx.slab_free(OBJ, objs.pop().unwrap()),
        ]));
        let o = o.unwrap();
        assert!(cost.slab_alloc > 0 && cost.slab_free > 0);
        assert!(w.took[0] > cost.slab_alloc + cost.pcp_alloc, "{:?}", w.took);
        assert_eq!(w.took[1], cost.slab_alloc);
        assert_eq!(w.took[2], cost.slab_free);
        assert_eq!(w.took[3], cost.slab_free);
        assert_eq!((o.ops.slab_allocs, o.ops.slab_frees, o.ops.slab_alloc_failures), (2, 2, 0));
        // One page allocation (the slab), no page free during the run: the shrink at the end
        // gave it back.
        assert_eq!((o.ops.allocs, o.ops.frees), (1, 0));
    }

    /// The first slab allocation costs the page allocator's call exactly on top of
    /// `slab_alloc_ns`: the same order-0 allocation made directly, on an identical fresh
    /// model, takes that much less.
    #[test]
    fn a_new_slab_adds_exactly_the_page_allocators_cost() {
        let cost = CostProfile::default_profile().to_ps();
        let (o, direct) = run_script(SlabScript::new(vec![|ctx, _| {
            ctx.alloc(Gfp::KERNEL | Gfp::NOWARN, Order(0)).expect("memory");
            Ok(())
        }]));
        // The page is still held: conservation fails, as it must.
        assert!(format!("{:#}", o.unwrap_err()).contains("conservation"));
        let (o, slab) = run_script(SlabScript::new(vec![|ctx, objs| {
            objs.push(ctx.slab_alloc(OBJ, Gfp::KERNEL, None)?.expect("memory"));
            Ok(())
        }]));
        // The object is never freed: the end of the run names the leak.
        let e = format!("{:#}", o.unwrap_err());
        assert!(e.contains("obj64") && e.contains("still allocated"), "{e}");
        assert_eq!(slab.took[0], direct.took[0] + cost.slab_alloc);
    }

    /// CPU 0 allocates one object of [`SlabScript`]'s cache; CPU 1, once it exists, frees
    /// it (or CPU 0 does, `remote` false) and notes what the free took.
    struct OneObject {
        remote: bool,
        obj: Option<SlabObject>,
        took: Option<u64>,
    }

    impl SerialWorkload for OneObject {
        fn start(&mut self, _: &ModelInfo) -> Result<Vec<u32>> {
            Ok(vec![0, 1])
        }
        fn step(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
            let freer = u32::from(self.remote);
            if ctx.cpu() == 0 && self.obj.is_none() && self.took.is_none() {
                self.obj = ctx.slab_alloc(OBJ, Gfp::KERNEL, None)?;
                assert!(self.obj.is_some(), "memory");
            } else if ctx.cpu() == freer && self.obj.is_some() {
                let t0 = ctx.now();
                ctx.slab_free(OBJ, self.obj.take().unwrap())?;
                self.took = Some(ctx.now() - t0);
            } else if self.took.is_some() {
                return Ok(Next::Done);
            }
            ctx.work(1_000_000);
            Ok(Next::Continue)
        }
        holds_nothing_and_measures_nothing!();
        fn slab_setup(&self) -> SlabSetup {
            SlabScript::new(Vec::new()).slab_setup()
        }
    }

    /// A free into another CPU's active slab takes SLUB's slow path, which writes the slab's
    /// own line (its `struct page`, reported by the slab layer): last written by the CPU that
    /// took the slab, whose L2 still holds it, so the free pays one cache-to-cache transfer
    /// within the LLC on top of `slab_free_ns`. The same free on the allocating CPU takes the
    /// fast path and pays nothing more.
    #[test]
    fn a_remote_slab_free_pays_for_the_slabs_line() {
        let setup = small_setup(2, 64, "modern", 1);
        let cost = setup.cost.to_ps();
        let transfer = Prices::of(&setup.topology.hierarchy).of_access(lines::Found::SameLlcCore);
        assert!(transfer > 0);
        let free_took = |remote: bool| {
            let mut m = Model::new(small_setup(2, 64, "modern", 1)).unwrap();
            let mut w = Serial::new(OneObject { remote, obj: None, took: None });
            m.run(&mut w, &mut |_| {}).unwrap();
            w.into_inner().took.expect("the object was freed")
        };
        assert_eq!(free_took(false), cost.slab_free);
        assert_eq!(free_took(true), cost.slab_free + transfer);
    }

    /// What a [`KeepsToTheEnd`] says it holds at the end.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Says {
        /// Every block it holds.
        Truth,
        /// One block twice and another not at all: the page count still adds up.
        OneTwice,
        /// All but its first block (of order 0).
        Leaks,
    }

    /// Two CPUs allocating blocks of orders 0–3 and keeping every one to the end of the run.
    struct KeepsToTheEnd {
        kept: Vec<(u32, Pfn, Order)>,
        says: Says,
    }

    impl SerialWorkload for KeepsToTheEnd {
        fn start(&mut self, _: &ModelInfo) -> Result<Vec<u32>> {
            Ok(vec![0, 1])
        }
        fn step(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
            let order = Order((self.kept.len() % 4) as u8);
            let pfn = ctx.alloc(Gfp::KERNEL, order).expect("memory");
            self.kept.push((ctx.cpu(), pfn, order));
            Ok(if self.kept.len() < 600 { Next::Continue } else { Next::Done })
        }
        fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
            let mut v = std::mem::take(&mut self.kept);
            match self.says {
                Says::Truth => {}
                Says::OneTwice => {
                    // Blocks 0 and 4 are both of order 0.
                    v[4] = v[0];
                }
                Says::Leaks => {
                    v.remove(0);
                }
            }
            v
        }
        fn metrics(&self) -> Vec<(String, f64)> {
            Vec::new()
        }
        fn progress(&self) -> f64 {
            0.0
        }
    }

    fn run_keeping(teardown: Teardown, says: Says) -> Result<RunOutcome> {
        let mut m = Model::new(small_setup(2, 64, "modern", 1)).unwrap();
        m.set_teardown(teardown);
        m.run(&mut Serial::new(KeepsToTheEnd { kept: Vec::new(), says }), &mut |_| {})
    }

    /// Retiring what the workload holds at the end instead of freeing it changes nothing the
    /// run reports, and the check at the end is as strict: a block said twice is refused as
    /// a double free, a block not said at all fails the conservation check, either way. The
    /// small setup runs the full validator after the teardown too.
    #[test]
    fn a_retiring_teardown_reports_the_same_and_checks_as_much() {
        let freed = run_keeping(Teardown::Free, Says::Truth).unwrap();
        let retired = run_keeping(Teardown::Retire, Says::Truth).unwrap();
        assert_eq!(format!("{freed:?}"), format!("{retired:?}"));
        for teardown in [Teardown::Free, Teardown::Retire] {
            let e = format!("{:#}", run_keeping(teardown, Says::OneTwice).unwrap_err());
            assert!(e.contains("double free"), "{teardown:?}: {e}");
            let e = format!("{:#}", run_keeping(teardown, Says::Leaks).unwrap_err());
            assert!(
                e.contains("conservation") && e.contains("(1 unaccounted)"),
                "{teardown:?}: {e}"
            );
        }
    }

    /// Movable pages a test holds, moved where compaction asks.
    #[derive(Default)]
    struct Held {
        pages: Vec<Pfn>,
        at: std::collections::HashMap<Pfn, usize>,
    }

    impl Migrate for Held {
        fn migrate(&mut self, from: Pfn, to: Target<'_>, _order: Order) -> bool {
            let Some(i) = self.at.remove(&from) else { return false };
            self.pages[i] = to.pfn();
            self.at.insert(to.pfn(), i);
            true
        }
    }

    /// Fills memory with movable pages, frees every other one, then asks for order-9
    /// blocks: a compacting request moves pages, then a plain one fails and wakes kcompactd.
    #[derive(Default)]
    struct Fragmenter {
        held: Held,
        stage: u32,
        /// Clock taken by the compacting call, and the pages it moved.
        compacting: (u64, u64),
        kcompactd_ran: bool,
        huge: Option<Pfn>,
        big: Vec<Pfn>,
    }

    impl SerialWorkload for Fragmenter {
        fn start(&mut self, _: &ModelInfo) -> Result<Vec<u32>> {
            Ok(vec![0])
        }
        fn step(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
            let moved = |ctx: &Ctx<'_>| ctx.allocator().vm_events().get(Counter::PgmigrateSuccess);
            match self.stage {
                0 => {
                    let mut all = Vec::new();
                    while let Some(p) = ctx.alloc(Gfp::HIGHUSER_MOVABLE, Order(0)) {
                        all.push(p);
                    }
                    for (k, p) in all.into_iter().enumerate() {
                        if k % 2 == 0 {
                            ctx.free(p, Order(0))?;
                        } else {
                            self.held.at.insert(p, self.held.pages.len());
                            self.held.pages.push(p);
                        }
                    }
                    // The whole blocks left below the watermark go too.
                    while let Some(p) = ctx.alloc(Gfp::TRANSHUGE_LIGHT, Order(9)) {
                        self.big.push(p);
                    }
                }
                1 => {
                    let (t0, m0) = (ctx.now(), moved(ctx));
                    let mode = CompactMode::SyncLight;
                    self.huge =
                        ctx.compact_and_alloc(Gfp::TRANSHUGE, Order(9), mode, &mut self.held);
                    self.compacting = (ctx.now() - t0, moved(ctx) - m0);
                }
                2 => {
                    // Order 9 with kswapd reclaim but no compaction: kcompactd is asked.
                    let gfp = Gfp::HIGHUSER_MOVABLE | Gfp::COMP;
                    assert!(ctx.alloc(gfp, Order(9)).is_none());
                    assert_eq!(ctx.allocator().kcompactd_pending(NodeId(0)), Some(Order(9)));
                    self.kcompactd_ran = ctx.kcompactd(0, &mut self.held)?.is_some();
                    assert_eq!(ctx.allocator().kcompactd_pending(NodeId(0)), None);
                }
                _ => return Ok(Next::Done),
            }
            self.stage += 1;
            Ok(Next::Continue)
        }
        fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
            let mut v: Vec<_> = self.held.pages.drain(..).map(|p| (0, p, Order(0))).collect();
            v.extend(
                self.huge.take().into_iter().chain(self.big.drain(..)).map(|p| (0, p, Order(9))),
            );
            v
        }
        fn metrics(&self) -> Vec<(String, f64)> {
            Vec::new()
        }
        fn progress(&self) -> f64 {
            0.0
        }
    }

    /// A compacting allocation through `Ctx` moves the workload's pages and is charged a
    /// read and a write of each moved page at least at the LLC write rate; kcompactd runs
    /// through `Ctx` when an allocation asked for it; every page, moved or not, comes back
    /// (the run's conservation check).
    #[test]
    fn compaction_through_ctx_moves_pages_and_charges_their_copies() {
        let mut m = Model::new(small_setup(1, 64, "modern", 1)).unwrap();
        let page_llc = m.allocator().events().prices().page_llc;
        let mut w = Serial::new(Fragmenter::default());
        let o = m.run(&mut w, &mut |_| {}).unwrap();
        let w = w.into_inner();
        assert!(w.kcompactd_ran);
        assert!(o.events.get(Counter::CompactDaemonWake) > 0);
        let (took, moved) = w.compacting;
        assert!(o.events.get(Counter::CompactStall) > 0 && moved > 0, "{moved}");
        assert!(page_llc > 0 && took >= moved * 2 * page_llc, "{took} ps for {moved} pages");
    }
}

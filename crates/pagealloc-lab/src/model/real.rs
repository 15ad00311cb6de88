//! The real runner: the same workloads on OS threads over real memory (`pagealloc run
//! --runner real`).
//!
//! One thread per workload CPU, each the allocator CPU of that number (pinned to host CPU
//! `cpu % host CPUs` with `--pin`). The allocator is the library over a [`FrameHeap`] arena
//! of this host, and a workload's `touch` writes every cache line of the range it names.
//! The arena is faulted in while the runner is built, before the run: the memory a kernel
//! hands out is backed already, and a host page fault on a workload's first touch (a few
//! microseconds, which made page-fault1 eight times slower than the model before it was
//! done) is no part of what the workloads imitate.
//! Time is the wall clock: `Ctx::now` is the time since the run started (once every thread
//! was spawned: starting threads is no part of what the workloads imitate), `work(ps)` spins
//! that long after the step, less the step's own code (`ThreadClock::count_own_code`: the
//! lab's queues and locks stand in for part of the kernel path the work stands for),
//! `SleepUntil` waits (asleep, then yielding: `ThreadClock::sleep_until`), `Block` parks the
//! thread until another one wakes it.
//!
//! # What runs in parallel
//!
//! The runner takes no lock around a step: each thread calls `Workload::step` for its CPU
//! whenever it is running, and the workload synchronises its own state. A workload split
//! into per-CPU state ([`PerCpu`](super::PerCpu)) and small shared parts (atomics, or locks
//! held for bookkeeping only, never across an allocator call) has its CPUs' allocator calls
//! and touches overlap as a kernel's do, so zone-lock and pageset contention is real here:
//! page-fault1, kbuild, page-frag-rx, thpfioscale, vm-scalability (both cases),
//! lmbench-unix, hackbench, iperf3-nic, netperf-tcp, netperf-udp and
//! netperf-sctp-stream-many are, and trunc (whose two tasks run one after the other). The
//! trace replay alone still keeps every CPU's state in one object behind
//! [`Serial`](super::Serial)'s lock, so its steps, allocator calls included, take turns, and
//! only the work a step asked for (`Ctx::work`), its sleep and its wait run in parallel
//! (docs/performance.md lists which workloads are which, and why).
//!
//! # Ticks
//!
//! A ticker (the calling thread) runs every CPU's vmstat tick once a second of wall time, as
//! the model does once a virtual second, and samples the pagesets. After the workload, the
//! cool-down's ticks run back to back: an idle pageset changes only at ticks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use pagealloc::{Counter, CpuId, PageAllocator, Pfn, Policy, Tunables};
use pagealloc_testkit::rng::Rng;

use super::cost::CostPs;
use super::lines::{CacheMap, Prices};
use super::sink::ModelSink;
use super::slab::SlabSet;
use super::{
    give_back, lock, pcp_pages, sample_pagesets, sampled_cpus, stream_seed, Clock, Ctx, ModelInfo,
    Next, OpCounts, Recorder, RunOutcome, Teardown, Workload,
};
use crate::heap::{pin_current_thread, FrameHeap, HeapOptions};

/// The heap the real runner allocates from: its allocator reports to a [`ModelSink`] that
/// is never attached to lock clocks, so the workloads read it through the same type as in
/// the model and no call is charged anything.
pub type RealHeap = FrameHeap<ModelSink>;

/// Everything a real run is built from.
#[derive(Clone, Debug)]
pub struct RealSetup {
    /// Threads, one per allocator CPU.
    pub cpus: u32,
    /// Arena bytes: the memory the allocator manages.
    pub memory_bytes: usize,
    /// The preset's switches.
    pub policy: Policy,
    /// Sysctls.
    pub tunables: Tunables,
    /// Seed of every CPU's generator.
    pub seed: u64,
    /// Pin thread `c` to host CPU `c % host CPUs`.
    pub pin: bool,
    /// Ticks run after the workload, before the final pageset sample.
    pub cooldown_s: u32,
    /// Run the allocator's full validator at the end.
    pub validate: bool,
}

/// A workload CPU's clock and generator in the real runner.
#[derive(Debug)]
pub struct ThreadClock {
    start: Instant,
    pub(super) rng: Rng,
    /// Work the current step asked for, not spun yet (ps).
    pub(super) debt_ps: u64,
    /// Work asked for over the run (ps).
    pub(super) worked_ps: u64,
    /// Pages written by touches.
    touched: u64,
    /// Touches and copies so far, to time one in [`TIMED_EVERY`].
    touch_calls: u64,
    /// Wall time in touches and copies (ps), estimated from the timed ones.
    touch_ps: u64,
    /// Allocator calls so far, to time one in [`TIMED_EVERY`].
    calls: u64,
    /// When the call being timed began.
    call_began: Option<Instant>,
    /// Wall time in allocator calls (ps), estimated from the timed ones, lock waits included.
    call_ps: u64,
    /// Wall time waiting for a turn at a workload that takes turns (ps).
    turn_ps: u64,
    /// The timed samples' costs and the step's calls and pages: the estimate of a step's
    /// own code ([`ThreadClock::count_own_code`]).
    samples: Samples,
    /// An empty timed window's cost on this thread ([`empty_window_ps`]).
    window_ps: u64,
    /// Touches that named memory outside the arena (a workload bug).
    bad_touches: u64,
    /// What touches write (the CPU's number, so memory shows who wrote it last).
    tag: u64,
}

/// What a thread's timed touches and calls cost (each sample once, not [`TIMED_EVERY`]
/// times), and the calls and pages of the step under way.
#[derive(Debug, Default)]
struct Samples {
    /// Timed calls and their wall time (ps).
    calls: u64,
    call_ps: u64,
    /// Pages of the timed touches and copies and their wall time (ps).
    pages: u64,
    page_ps: u64,
    /// Calls and touched pages of the step under way.
    step_calls: u64,
    step_pages: u64,
}

impl Samples {
    /// The step's calls and touches at the samples' mean costs (ps); `None` while a kind
    /// the step used has no sample yet.
    fn step_estimate(&self) -> Option<u64> {
        let at_mean = |n: u64, ps: u64, of: u64| match (n, of) {
            (0, _) => Some(0),
            (_, 0) => None,
            _ => Some((u128::from(n) * u128::from(ps) / u128::from(of)) as u64),
        };
        Some(
            at_mean(self.step_calls, self.call_ps, self.calls)?
                + at_mean(self.step_pages, self.page_ps, self.pages)?,
        )
    }
}

/// The real runner times one touch, and one allocator call, in this many
/// (`ThreadClock::timed`, `ThreadClock::call_begin`). A timed one is fenced
/// ([`fenced_now`]), so it cannot overlap its stores with the code around it as the others
/// do: sampling few keeps that from changing the run (a few hundred thousand touches a run
/// still give thousands of samples).
const TIMED_EVERY: u64 = 32;

/// The clock, read once every store issued before it has completed: both ends of a timed
/// touch or call read it so.
///
/// Stores retire into the core's store buffer before their cache lines arrive, so a clock
/// read right after a page write stops while most of a cold page's 64 line fills are still
/// under way; they complete during whatever the thread does next, which then seems slower.
/// A full fence before each read puts every store in the window it was issued in: the
/// window's own at its end, the previous code's before its start. Measured on the lab VM
/// (a C loop writing one word per line of 4 KiB pages over 1 GiB after a 1 GiB eviction,
/// 2–3 µs of other work between pages; docs/performance.md): 176 ns a page timed without
/// the fence, 728 ns with it. The second is the write's cost, the first only its issue.
/// Only the sampled operations (one in [`TIMED_EVERY`]) pay for the fences.
fn fenced_now() -> Instant {
    std::sync::atomic::fence(Ordering::SeqCst);
    Instant::now()
}

/// Picoseconds in `d`.
fn ps_of(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).saturating_mul(1000)
}

/// What an empty timed window costs on this thread (ps): the median of [`WINDOWS`] fenced
/// clock reads around nothing. Every timed touch and call is counted less it, or a cheap
/// call would be charged its timing: a fenced window costs tens of ns on the lab VM, about
/// a pageset hit's own time.
fn empty_window_ps() -> u64 {
    const WINDOWS: usize = 255;
    let mut v: Vec<u64> = (0..WINDOWS)
        .map(|_| {
            let began = fenced_now();
            ps_of(fenced_now().duration_since(began))
        })
        .collect();
    v.sort_unstable();
    v[WINDOWS / 2]
}

impl ThreadClock {
    /// The wall time since `began` (a [`fenced_now`]), less an empty window's cost: one
    /// timed sample.
    fn window_since(&self, began: Instant) -> u64 {
        ps_of(fenced_now().duration_since(began)).saturating_sub(self.window_ps)
    }

    /// Wall time since the run started plus the work owed (ps).
    pub(super) fn now(&self) -> u64 {
        ps_since(self.start).saturating_add(self.debt_ps)
    }

    pub(super) fn touch(&mut self, heap: &RealHeap, pfn: Pfn, bytes: u64) {
        let tag = self.tag;
        let (pages, window) = self.timed(|| heap.touch(pfn, bytes, tag));
        self.count_touched(pages, window);
    }

    /// Copy a moved block's memory (a migration), counted as touched pages.
    pub(super) fn copy(&mut self, heap: &RealHeap, from: Pfn, to: Pfn, bytes: u64) {
        let (pages, window) = self.timed(|| heap.copy(from, to, bytes).map(|p| 2 * p));
        self.count_touched(pages, window);
    }

    /// Count a touch's pages (`None`: outside the arena) and its timed window, if it was
    /// one of those timed.
    fn count_touched(&mut self, pages: Option<u64>, window: Option<u64>) {
        let Some(pages) = pages else {
            self.bad_touches += 1;
            return;
        };
        self.touched += pages;
        self.samples.step_pages += pages;
        if let Some(ps) = window {
            self.samples.pages += pages;
            self.samples.page_ps += ps;
        }
    }

    /// An allocator call begins: time it if it is one in [`TIMED_EVERY`].
    pub(super) fn call_begin(&mut self) {
        self.calls += 1;
        self.samples.step_calls += 1;
        if self.calls % TIMED_EVERY == 0 {
            self.call_began = Some(fenced_now());
        }
    }

    /// The allocator call ends: count a timed one [`TIMED_EVERY`] times.
    pub(super) fn call_end(&mut self) {
        if let Some(began) = self.call_began.take() {
            let ps = self.window_since(began);
            self.call_ps = self.call_ps.saturating_add(ps.saturating_mul(TIMED_EVERY));
            self.samples.calls += 1;
            self.samples.call_ps += ps;
        }
    }

    /// A step got its turn at a workload that takes turns; it asked at `asked`.
    pub(super) fn waited_for_turn(&mut self, asked: Instant) {
        self.turn_ps = self.turn_ps.saturating_add(ps_since(asked));
    }

    /// Run a touch or copy, timing one in [`TIMED_EVERY`] and counting it that many
    /// times (`touch_ps`): two clock reads around every page write would add a tenth to it.
    /// Returns what `f` did and, for a timed one, its window (ps, counted once).
    ///
    /// The timed window is fenced ([`fenced_now`]).
    fn timed<T>(&mut self, f: impl FnOnce() -> T) -> (T, Option<u64>) {
        self.touch_calls += 1;
        if self.touch_calls % TIMED_EVERY != 0 {
            return (f(), None);
        }
        let began = fenced_now();
        let r = f();
        let ps = self.window_since(began);
        self.touch_ps = self.touch_ps.saturating_add(ps.saturating_mul(TIMED_EVERY));
        (r, Some(ps))
    }

    /// A step ended: count its own code as part of the work it asked for (`debt_ps`), up to
    /// that work. Returns (the part counted as work, the part beyond it), ps.
    ///
    /// A workload's `work` stands for the kernel's own code on that path (a system call, a
    /// protocol's processing, a fault's bookkeeping), and the lab's code between the
    /// allocator calls (its queues, its socket locks, its counters) stands in for part of
    /// it: spinning for the whole work after that code would count the same path twice.
    /// The step's own code is its wall time from `began` to `ended` less its turn waits
    /// (`turn_before`: `turn_ps` when it began) and less its calls and touches at the mean
    /// cost of this thread's timed ones ([`Samples::step_estimate`]; nothing is counted
    /// before a kind the step used has a sample). The timed samples are fenced, so a page
    /// write is estimated at its whole cost, fills included, and only what is clearly the
    /// step's own code is counted: where the fills overlapped the code after them the
    /// estimate is high and the count low. What the code takes beyond the work is time the
    /// model has no charge for, reported apart (`RunOutcome::lab_over_ps`).
    fn count_own_code(&mut self, began: Instant, ended: Instant, turn_before: u64) -> (u64, u64) {
        let estimate = self.samples.step_estimate();
        self.samples.step_calls = 0;
        self.samples.step_pages = 0;
        let Some(estimate) = estimate else {
            return (0, 0);
        };
        let turn = self.turn_ps.saturating_sub(turn_before);
        let own = ps_of(ended.duration_since(began)).saturating_sub(estimate + turn);
        let as_work = own.min(self.debt_ps);
        self.debt_ps -= as_work;
        (as_work, own - as_work)
    }

    /// Spin for the work owed, from `now` (a clock the caller just read), and return the
    /// clock when done: the step loop reads the clock once between a step and its work.
    fn spend(&mut self, now: Instant) -> Instant {
        if self.debt_ps == 0 {
            return now;
        }
        let until = now + Duration::from_nanos(self.debt_ps / 1000);
        self.debt_ps = 0;
        loop {
            let t = Instant::now();
            if t >= until {
                return t;
            }
            std::hint::spin_loop();
        }
    }

    /// Wait until `at` ps after the start: asleep while the deadline is far, then yielding.
    ///
    /// An OS sleep overshoots by far more than the waits the workloads ask for: on the
    /// reference VM (2 vCPUs, idle) `thread::sleep` of 2 µs returns after a median 92 µs, and
    /// of 50 µs after 147 µs (41 µs and 94 µs with a timer slack of 1 ns), where a
    /// `yield_now` loop ends within 0.3 µs of its deadline. Sleeping for every few-µs wait of
    /// a message exchange (a reader woken for a time just ahead of its own clock) cost the
    /// message-driven workloads about 90 µs per message, five times their model's. So the
    /// thread sleeps only to [`SPIN_BEFORE`] short of the deadline and yields the rest, which
    /// lets another runnable thread of this host use the CPU meanwhile.
    fn sleep_until(&self, at: u64) {
        let deadline = self.start + Duration::from_nanos(at / 1000);
        let now = Instant::now();
        if deadline > now + SPIN_BEFORE {
            std::thread::sleep(deadline - now - SPIN_BEFORE);
        }
        while Instant::now() < deadline {
            std::thread::yield_now();
        }
    }
}

/// How long before a deadline a waiting thread stops sleeping and yields instead: above the
/// reference VM's sleep overshoot (p90 108 µs for a 2 µs sleep, 203 µs for 50 µs) with room for
/// a loaded host.
const SPIN_BEFORE: Duration = Duration::from_micros(500);

/// Picoseconds since `start`.
fn ps_since(start: Instant) -> u64 {
    ps_of(start.elapsed())
}

/// Scheduling state of one workload CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    Running,
    Blocked,
    Done,
}

/// What the threads share besides the workload.
#[derive(Debug)]
struct Sched {
    state: Vec<State>,
    /// A wake for a running CPU: its next `Block` returns at once (earliest time kept).
    pending: Vec<Option<u64>>,
    /// The time a blocked CPU was woken for.
    woken_at: Vec<u64>,
    /// Set when any thread failed or the workload stalled: everyone stops.
    failed: bool,
}

/// What every thread of a run shares: the scheduling state, a condition variable per CPU
/// that its blocked thread waits on and one the ticker waits on, and a copy of
/// `Sched::failed` that a thread reads before each step without taking the lock.
///
/// Both serve to keep the runner's own costs out of what it measures. A lock taken by every
/// thread on every step bounced its line between the host's cores; one condition variable
/// for everyone made every wake a broadcast that also woke the ticker and every other
/// blocked thread to find nothing for it, where a kernel's wake-up names its task.
#[derive(Debug)]
struct Shared {
    sched: Mutex<Sched>,
    /// Per CPU: notified when that CPU is woken or the run fails.
    cpu_cv: Vec<Condvar>,
    /// Notified when a CPU finishes or the run fails.
    ticker_cv: Condvar,
    failed: AtomicBool,
    /// When the run started: set once every thread is spawned, so that starting threads (tens
    /// of µs each on a VM, which no benchmark the workloads imitate counts) is not run time.
    start: OnceLock<Instant>,
}

impl Shared {
    /// Wait (yielding) until the run starts, and return its start.
    fn wait_for_start(&self) -> Instant {
        loop {
            if let Some(&t) = self.start.get() {
                return t;
            }
            std::thread::yield_now();
        }
    }

    /// Stop everyone: the run failed or stalled.
    fn fail(&self) {
        self.fail_locked(&mut lock(&self.sched));
    }

    /// [`Shared::fail`] with the lock held (`g` is its guard's state).
    fn fail_locked(&self, g: &mut Sched) {
        g.failed = true;
        self.failed.store(true, Ordering::SeqCst);
        self.cpu_cv.iter().for_each(Condvar::notify_one);
        self.ticker_cv.notify_one();
    }
}

impl Sched {
    /// Every CPU still in the run is blocked: nobody is left to wake them.
    fn stalled(&self) -> bool {
        !self.state.contains(&State::Running) && self.state.contains(&State::Blocked)
    }
}

/// Per-thread results.
#[derive(Debug, Default)]
struct ThreadTotals {
    counts: OpCounts,
    steps: u64,
    busy_ps: u64,
    /// Wall time inside steps (the spin for their work and the waits after them excluded).
    step_ps: u64,
    work_ps: u64,
    /// Wakes this thread gave to a blocked one (`RunOutcome::blocked_wakes`).
    blocked_wakes: u64,
    touched: u64,
    /// Wall time in touches (`ThreadClock::touch_ps`).
    touch_ps: u64,
    /// Wall time in allocator calls (`ThreadClock::call_ps`).
    call_ps: u64,
    /// Wall time waiting for a turn (`ThreadClock::turn_ps`).
    turn_ps: u64,
    /// The steps' own code counted as their work (`RunOutcome::lab_ps`).
    lab_ps: u64,
    /// The steps' own code beyond their work (`RunOutcome::lab_over_ps`).
    lab_over_ps: u64,
    bad_touches: u64,
    end_ps: u64,
}

/// The real runner: a heap of this host and the setup to run workloads on it.
#[derive(Debug)]
pub struct RealRunner {
    heap: RealHeap,
    setup: RealSetup,
}

impl RealRunner {
    /// Map the arena and build the allocator over it.
    pub fn new(setup: RealSetup) -> Result<RealRunner> {
        if setup.cpus == 0 {
            bail!("the real runner needs at least one CPU");
        }
        let n = setup.cpus as usize;
        // Unattached: real time passes by itself, so the sink prices nothing.
        let map = CacheMap {
            cpu_node: vec![0; n],
            cpu_llc: vec![0; n],
            cpu_l2: (0..n as u32).collect(),
            llc_node: vec![0],
            llc_lines: vec![0],
            l2_lines: vec![0; n],
            frames_per_line: 1,
            prefetch_streams: 0,
        };
        let sink = ModelSink::new(map, CostPs::default(), Prices::default());
        let opts = HeapOptions::new(setup.memory_bytes).with(|o| {
            o.cpus = Some(setup.cpus);
            o.policy = setup.policy;
            o.tunables = setup.tunables;
            o.time_zone_locks = true;
            o.low_address = true;
            // Backed before the run: see the module doc.
            o.prefault = true;
        });
        let heap = FrameHeap::with_events(&opts, sink).with_context(|| {
            format!("mapping a {} MiB arena for the real runner", setup.memory_bytes >> 20)
        })?;
        Ok(RealRunner { heap, setup })
    }

    /// The allocator (for `/proc` views after a run).
    pub fn allocator(&self) -> &PageAllocator<ModelSink> {
        self.heap.allocator()
    }

    /// What a workload may know of the machine.
    pub fn info(&self) -> ModelInfo {
        let pa = self.heap.allocator();
        ModelInfo {
            nr_cpus: pa.nr_cpus(),
            nr_nodes: 1,
            cpu_node: vec![0; pa.nr_cpus() as usize],
            node_managed_pages: vec![pa.managed_pages().0],
            seed: self.setup.seed,
        }
    }

    /// Run `w` to its end on real threads; `progress` hears its progress (0..=1) at each
    /// tick.
    pub fn run(
        &mut self,
        w: &mut dyn Workload,
        progress: &mut dyn FnMut(f64),
    ) -> Result<RunOutcome> {
        let info = self.info();
        let pa = self.heap.allocator();
        let start_events = pa.vm_events();
        let running = w.start(&info)?;
        let slabs = SlabSet::new(pa, &w.slab_setup())?;
        let n = info.nr_cpus as usize;
        let mut state = vec![State::Idle; n];
        for &c in &running {
            match state.get_mut(c as usize) {
                None => bail!("workload names cpu {c}"),
                Some(s) if *s != State::Idle => bail!("workload names cpu {c} twice"),
                Some(s) => *s = State::Running,
            }
        }
        let sampled = sampled_cpus(n, &running);
        let shared = Shared {
            sched: Mutex::new(Sched {
                state,
                pending: vec![None; n],
                woken_at: vec![0; n],
                failed: false,
            }),
            cpu_cv: (0..n).map(|_| Condvar::new()).collect(),
            ticker_cv: Condvar::new(),
            failed: AtomicBool::new(false),
            start: OnceLock::new(),
        };
        let workload: &dyn Workload = &*w;
        let host_cpus = std::thread::available_parallelism().map_or(1, |c| c.get());
        let mut rec = Recorder::default();
        let mut ticks = 0u64;
        let heap = &self.heap;
        let slabs = &slabs;
        let shared = &shared;
        let sched = &shared.sched;
        let results: Vec<Result<ThreadTotals>> = std::thread::scope(|s| {
            // Spawning stops at the first thread the OS refuses: the run is over, and every
            // further attempt would only take more of what the OS has run out of.
            let mut handles = Vec::with_capacity(running.len());
            let mut refused = Vec::new();
            for &c in &running {
                let pin = self.setup.pin.then_some(c as usize % host_cpus);
                let seed = self.setup.seed;
                let spawned = std::thread::Builder::new().name(format!("cpu {c}")).spawn_scoped(
                    s,
                    move || {
                        // A panicking step (a workload bug) must end the run like a
                        // failing one, or the threads it would have woken wait for ever.
                        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            cpu_thread(c, pin, seed, heap, slabs, workload, shared)
                        }))
                        .unwrap_or_else(|_| Err(anyhow!("cpu {c}: the workload panicked")));
                        if r.is_err() {
                            shared.fail();
                        }
                        r
                    },
                );
                match spawned {
                    Ok(h) => handles.push(h),
                    Err(e) => {
                        // The threads already started must stop, not wait for this one.
                        shared.fail();
                        refused.push(Err(anyhow!(
                            "cannot start the thread of cpu {c}: {e}; the real runner runs \
                                 one thread per CPU, so give it fewer (--cpus)"
                        )));
                        break;
                    }
                }
            }
            // Every thread is spawned (or the run failed, which its threads see next): go.
            let start = Instant::now();
            let _ = shared.start.set(start);
            // The ticker: once a second of wall time until every thread is done.
            while refused.is_empty() {
                let next = start + Duration::from_secs(ticks + 1);
                let g = lock(sched);
                let over = |g: &Sched| {
                    g.failed || g.state.iter().all(|&s| s != State::Running && s != State::Blocked)
                };
                if over(&g) {
                    break;
                }
                let wait = next.saturating_duration_since(Instant::now());
                let (g, _) = shared.ticker_cv.wait_timeout(g, wait).expect("no panics while held");
                if over(&g) {
                    break;
                }
                drop(g);
                if Instant::now() >= next {
                    ticks += 1;
                    tick_all(pa, ticks, &sampled, &mut rec);
                    progress(workload.progress());
                }
            }
            refused
                .into_iter()
                .chain(
                    handles.into_iter().map(|h| {
                        h.join().unwrap_or_else(|_| Err(anyhow!("a runner thread panicked")))
                    }),
                )
                .collect()
        });
        let mut totals = ThreadTotals::default();
        for r in results {
            let t = r?;
            totals.counts.add(&t.counts);
            totals.steps += t.steps;
            totals.busy_ps += t.busy_ps;
            totals.step_ps += t.step_ps;
            totals.work_ps += t.work_ps;
            totals.blocked_wakes += t.blocked_wakes;
            totals.touched += t.touched;
            totals.touch_ps += t.touch_ps;
            totals.call_ps += t.call_ps;
            totals.turn_ps += t.turn_ps;
            totals.lab_ps += t.lab_ps;
            totals.lab_over_ps += t.lab_over_ps;
            totals.bad_touches += t.bad_touches;
            totals.end_ps = totals.end_ps.max(t.end_ps);
        }
        if lock(sched).failed {
            bail!("the workload stalled: every CPU still in the run is blocked and nothing is left to wake it");
        }
        if totals.bad_touches > 0 {
            bail!("the workload touched memory outside the arena {} times", totals.bad_touches);
        }
        let pcp_end_pages = pcp_pages(pa);
        let events_in_run = pa.vm_events().since(&start_events);
        for _ in 0..self.setup.cooldown_s {
            ticks += 1;
            tick_all(pa, ticks, &sampled, &mut rec);
        }
        let pcp_final_pages = pcp_pages(pa);
        progress(1.0);
        let events = pa.vm_events().since(&start_events);
        let workload_metrics = w.metrics();
        let held = w.held();
        slabs.shrink_all(pa, CpuId(running.first().copied().unwrap_or(0)))?;
        give_back(pa, held, Teardown::Free, self.setup.validate)?;
        let held_ps = events.get(Counter::ZoneLockHeldNs).saturating_mul(1000);
        // Timed around the lock itself (`with_clock`): the ticker's few holds are in it too.
        let wait_ps = events.get(Counter::ZoneLockWaitNs).saturating_mul(1000);
        Ok(RunOutcome {
            lines_found: [0; 7],
            lines_prefetched: (0, 0),
            handoffs: [0; 4],
            held_parts: [0; 5],
            held_lines: [0; 7],
            elapsed_ps: totals.end_ps,
            // A step's wall time includes its waits for zone locks; the model keeps them apart.
            busy_ps: totals.busy_ps.saturating_sub(wait_ps),
            beyond_work_ps: totals.step_ps.saturating_sub(totals.lab_ps + wait_ps),
            work_ps: totals.work_ps,
            touch_ps: totals.touch_ps,
            // The timed calls' waits for zone locks are in the waits measured exactly.
            call_ps: totals.call_ps.saturating_sub(wait_ps),
            turn_ps: totals.turn_ps,
            lab_ps: totals.lab_ps,
            lab_over_ps: totals.lab_over_ps,
            running_cpus: running.len() as u32,
            blocked_wakes: totals.blocked_wakes,
            lock_wait_ps: wait_ps,
            lock_held_ps: held_ps,
            events,
            events_in_run,
            ops: totals.counts,
            pcp_peak_pages: rec.peak.max(pcp_end_pages),
            pcp_pages: rec.pcp_pages,
            pcp_end_pages,
            pcp_final_pages,
            pcp_cpu_samples: rec.samples,
            touches: (totals.touched, 0),
            most_used_frames: Vec::new(),
            workload: workload_metrics,
            steps: totals.steps,
        })
    }
}

/// Every CPU's vmstat tick (tick number `t`), then a sample of the pagesets.
fn tick_all(pa: &PageAllocator<ModelSink>, t: u64, sampled: &[u32], rec: &mut Recorder) {
    for c in 0..pa.nr_cpus() {
        let cpu = pa.cpu(CpuId(c)).expect("every CPU exists");
        pa.tick(cpu);
    }
    sample_pagesets(pa, t as u32, sampled, rec);
}

/// One workload CPU's thread: steps (at the same time as the other threads'; a workload
/// synchronises its own state), then the step's work, sleep or block, until the workload says
/// it is done or another thread failed.
fn cpu_thread(
    c: u32,
    pin: Option<usize>,
    seed: u64,
    heap: &RealHeap,
    slabs: &SlabSet<'_>,
    workload: &dyn Workload,
    shared: &Shared,
) -> Result<ThreadTotals> {
    let sched = &shared.sched;
    if let Some(host) = pin {
        pin_current_thread(host).with_context(|| format!("pinning cpu {c} to host CPU {host}"))?;
    }
    // Measured before the start, so that the run's clock does not include it.
    let window_ps = empty_window_ps();
    let mut clock = ThreadClock {
        start: shared.wait_for_start(),
        rng: Rng::new(stream_seed(seed, u64::from(c))),
        debt_ps: 0,
        worked_ps: 0,
        touched: 0,
        touch_calls: 0,
        touch_ps: 0,
        calls: 0,
        call_began: None,
        call_ps: 0,
        turn_ps: 0,
        samples: Samples::default(),
        window_ps,
        bad_touches: 0,
        tag: u64::from(c),
    };
    let pa = heap.allocator();
    let cpu = pa.cpu(CpuId(c)).ok_or_else(|| anyhow!("workload names cpu {c}"))?;
    let mut totals = ThreadTotals::default();
    let mut wakes = Vec::new();
    // When the next step begins: the end of the last one's work when it continues at once
    // (one clock read between two steps, not two), else read after the wait.
    let mut resumed = None;
    loop {
        if shared.failed.load(Ordering::SeqCst) {
            return Ok(totals);
        }
        let began = resumed.take().unwrap_or_else(Instant::now);
        let turn_before = clock.turn_ps;
        let next = {
            let mut ctx = Ctx {
                cpu,
                pa,
                wakes: &mut wakes,
                counts: &mut totals.counts,
                clock: Clock::Real { t: &mut clock, heap },
                slab: slabs,
            };
            workload.step(&mut ctx)?
        };
        totals.steps += 1;
        let ended = Instant::now();
        let (as_work, over) = clock.count_own_code(began, ended, turn_before);
        totals.lab_ps += as_work;
        totals.lab_over_ps += over;
        let woke = !wakes.is_empty();
        if woke {
            let mut g = lock(sched);
            for (target, at) in wakes.drain(..) {
                let t = target as usize;
                let Some(&st) = g.state.get(t) else {
                    bail!("workload woke cpu {target}, which does not exist");
                };
                match st {
                    State::Blocked => {
                        totals.blocked_wakes += 1;
                        g.state[t] = State::Running;
                        g.woken_at[t] = at;
                        shared.cpu_cv[t].notify_one();
                    }
                    State::Running => g.pending[t] = Some(g.pending[t].map_or(at, |p| p.min(at))),
                    State::Idle | State::Done => {}
                }
            }
        }
        // The wakes' hand-over is the runner's, charged in the model as `wake_call_ns`.
        let stepped = if woke { Instant::now() } else { ended };
        let worked = clock.spend(stepped);
        totals.step_ps += ps_of(stepped.duration_since(began));
        totals.busy_ps += ps_of(worked.duration_since(began));
        match next {
            Next::Continue => resumed = Some(worked),
            Next::SleepUntil(at) => clock.sleep_until(at),
            Next::Block => {
                let mut g = lock(sched);
                if let Some(at) = g.pending[c as usize].take() {
                    drop(g);
                    clock.sleep_until(at);
                    continue;
                }
                g.state[c as usize] = State::Blocked;
                if g.stalled() {
                    shared.fail_locked(&mut g);
                    return Ok(totals);
                }
                while g.state[c as usize] == State::Blocked && !g.failed {
                    g = shared.cpu_cv[c as usize].wait(g).expect("no panics while held");
                }
                let at = g.woken_at[c as usize];
                drop(g);
                clock.sleep_until(at);
            }
            Next::Done => {
                totals.end_ps = clock.now();
                let mut g = lock(sched);
                g.state[c as usize] = State::Done;
                if g.stalled() {
                    shared.fail_locked(&mut g);
                }
                shared.ticker_cv.notify_one();
                break;
            }
        }
    }
    totals.touched = clock.touched;
    totals.touch_ps = clock.touch_ps;
    totals.call_ps = clock.call_ps;
    totals.turn_ps = clock.turn_ps;
    totals.bad_touches = clock.bad_touches;
    totals.work_ps = clock.worked_ps;
    Ok(totals)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use pagealloc::{Gfp, Order};

    use super::*;
    use crate::model::tests::small_setup;
    use crate::model::{Model, Serial, SerialWorkload};
    use crate::workload;

    fn runner(cpus: u32) -> RealRunner {
        seeded_runner(cpus, 1)
    }

    fn seeded_runner(cpus: u32, seed: u64) -> RealRunner {
        RealRunner::new(RealSetup {
            cpus,
            memory_bytes: 64 << 20,
            policy: Policy::modern(),
            tunables: Tunables::default(),
            seed,
            pin: false,
            cooldown_s: 3,
            validate: true,
        })
        .unwrap()
    }

    /// CPU 0 allocates a page, writes it and hands it to CPU 1, which frees it on its own
    /// pageset and hands the turn back: `rounds` cross-CPU hand-offs through Block and wake.
    struct PingPong {
        rounds: u32,
        sent: u32,
        freed: u32,
        in_flight: Option<Pfn>,
    }

    impl SerialWorkload for PingPong {
        fn start(&mut self, _: &ModelInfo) -> Result<Vec<u32>> {
            Ok(vec![0, 1])
        }
        fn step(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
            if ctx.cpu() == 0 {
                if self.sent == self.rounds {
                    return Ok(Next::Done);
                }
                if self.in_flight.is_some() {
                    return Ok(Next::Block);
                }
                let p = ctx.alloc(Gfp::KERNEL, Order(0)).ok_or_else(|| anyhow!("no memory"))?;
                ctx.touch(p, 4096);
                ctx.work(1_000_000);
                self.in_flight = Some(p);
                self.sent += 1;
                ctx.wake(1, ctx.now());
                Ok(Next::Continue)
            } else {
                match self.in_flight.take() {
                    Some(p) => {
                        ctx.free(p, Order(0))?;
                        self.freed += 1;
                        ctx.wake(0, ctx.now());
                        Ok(Next::Continue)
                    }
                    None if self.freed == self.rounds => Ok(Next::Done),
                    None => Ok(Next::Block),
                }
            }
        }
        fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
            self.in_flight.take().map(|p| (1, p, Order(0))).into_iter().collect()
        }
        fn metrics(&self) -> Vec<(String, f64)> {
            vec![("freed".into(), f64::from(self.freed))]
        }
        fn progress(&self) -> f64 {
            f64::from(self.freed) / f64::from(self.rounds)
        }
    }

    #[test]
    fn hand_offs_between_threads_complete_and_every_page_comes_back() {
        let mut r = runner(2);
        let mut w = Serial::new(PingPong { rounds: 2000, sent: 0, freed: 0, in_flight: None });
        let o = r.run(&mut w, &mut |_| {}).unwrap();
        assert_eq!(w.into_inner().freed, 2000);
        assert_eq!((o.ops.allocs, o.ops.frees, o.ops.alloc_failures), (2000, 2000, 0));
        assert_eq!(o.touches, (2000, 0));
        // 2000 steps of 1 µs of work at least.
        assert!(o.elapsed_ps >= 2000 * 1_000_000, "{}", o.elapsed_ps);
        assert!(o.busy_ps >= 2000 * 1_000_000);
        // The work asked for is counted as asked, whatever the wall clock did; the steps'
        // own code counts towards it, and their calls, touches and turns come on top.
        assert_eq!((o.work_ps, o.running_cpus), (2000 * 1_000_000, 2));
        assert!(o.busy_ps >= o.work_ps);
        assert!(o.beyond_work_ps > 0 && o.beyond_work_ps < o.busy_ps);
        assert!(o.lab_ps <= o.work_ps);
        // 62 of the 2000 page writes timed, each a page of writes; 125 of the 4000 calls.
        // Every step of this Serial workload asked for its turn, and asking takes time.
        assert!(o.touch_ps > 0 && o.call_ps > 0 && o.turn_ps > 0, "{o:?}");
        // Two wakes a round at most, and only those that found their thread parked count;
        // CPU 1 parks before the first page comes, so one at least did.
        assert!((1..=2 * 2000).contains(&o.blocked_wakes), "{}", o.blocked_wakes);
        // CPU 1 freed every page to its own pageset, so none came back to CPU 0's: each of
        // CPU 0's 2000 pages was refilled from the zone (freeing on the allocating CPU would
        // have needed one batch).
        assert!(o.events.get(Counter::PcpRefillPages) >= 2000);
        assert_eq!(o.workload, vec![("freed".to_string(), 2000.0)]);
    }

    /// Each CPU's steps run `own` of their own code (a spin inside the step, as a workload's
    /// queues and locks take time), an allocation, a page write and a free, and ask for
    /// `work_ps`, for `steps` steps each.
    struct OwnCode {
        steps: u32,
        own: Duration,
        work_ps: u64,
        taken: [AtomicU32; 2],
    }

    impl OwnCode {
        fn new(steps: u32, own: Duration, work_ps: u64) -> OwnCode {
            OwnCode { steps, own, work_ps, taken: Default::default() }
        }
    }

    impl Workload for OwnCode {
        fn start(&mut self, _: &ModelInfo) -> Result<Vec<u32>> {
            Ok(vec![0, 1])
        }
        fn step(&self, ctx: &mut Ctx<'_>) -> Result<Next> {
            let began = Instant::now();
            while began.elapsed() < self.own {
                std::hint::spin_loop();
            }
            ctx.work(self.work_ps);
            let p = ctx.alloc(Gfp::KERNEL, Order(0)).ok_or_else(|| anyhow!("no memory"))?;
            ctx.touch(p, 4096);
            ctx.free(p, Order(0))?;
            let taken = self.taken[ctx.cpu() as usize].fetch_add(1, Ordering::Relaxed) + 1;
            Ok(if taken == self.steps { Next::Done } else { Next::Continue })
        }
        holds_nothing_and_measures_nothing!();
    }

    #[test]
    fn a_steps_own_code_counts_as_its_work_up_to_that_work() {
        let own = Duration::from_micros(20);
        let own_ps = ps_of(own);
        // Until a thread has timed a call and a touch (its 32nd of each: 16 steps for the
        // calls, 32 for the touches) nothing can be estimated; from then on at least half of
        // the 20 µs of each step's own code is counted (the rest is the estimate's margin).
        let counted = |o: &RunOutcome| o.steps.saturating_sub(2 * 32) * own_ps / 2;
        // Work well beyond the step's code: its code is counted as work.
        let mut w = OwnCode::new(200, own, 10 * own_ps);
        let o = runner(2).run(&mut w, &mut |_| {}).unwrap();
        assert_eq!(o.steps, 2 * 200);
        assert!(o.lab_ps >= counted(&o), "{o:?}");
        assert!(o.lab_ps <= o.work_ps, "{o:?}");
        // What was counted as work is not beyond it; calls and touches still are.
        assert!(o.beyond_work_ps >= o.touch_ps + o.call_ps, "{o:?}");
        // No work: the code is all beyond it, none counted as work.
        let mut w = OwnCode::new(200, own, 0);
        let o = runner(2).run(&mut w, &mut |_| {}).unwrap();
        assert_eq!(o.lab_ps, 0);
        assert!(o.lab_over_ps >= counted(&o), "{o:?}");
        assert!(o.beyond_work_ps >= o.lab_over_ps, "{o:?}");
    }

    /// A workload that goes wrong in one of three ways.
    #[derive(Clone, Copy)]
    enum Misbehave {
        /// CPU 0 blocks and nobody wakes it; CPU 1 ends.
        Stall,
        /// CPU 0 blocks; CPU 1's step fails.
        Fail,
        /// CPU 0 touches a frame outside the arena.
        WildTouch,
        /// CPU 0 blocks; CPU 1's step panics.
        Panic,
    }

    impl SerialWorkload for Misbehave {
        fn start(&mut self, _: &ModelInfo) -> Result<Vec<u32>> {
            Ok(vec![0, 1])
        }
        fn step(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
            match (*self, ctx.cpu()) {
                (Misbehave::WildTouch, 0) => {
                    ctx.touch(Pfn(1), 64);
                    Ok(Next::Done)
                }
                (Misbehave::WildTouch, _) => Ok(Next::Done),
                (_, 0) => Ok(Next::Block),
                (m, _) => {
                    // Let CPU 0 block first (either order must end the run).
                    std::thread::sleep(Duration::from_millis(20));
                    match m {
                        Misbehave::Fail => bail!("cpu 1 gives up"),
                        Misbehave::Panic => panic!("cpu 1 panics"),
                        _ => {}
                    }
                    Ok(Next::Done)
                }
            }
        }
        holds_nothing_and_measures_nothing!();
    }

    #[test]
    fn a_stall_a_failing_or_panicking_thread_or_a_wild_touch_ends_the_run_with_an_error() {
        let e = runner(2).run(&mut Serial::new(Misbehave::Stall), &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains("stalled"), "{e:#}");
        let e = runner(2).run(&mut Serial::new(Misbehave::Fail), &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains("cpu 1 gives up"), "{e:#}");
        let e = runner(2).run(&mut Serial::new(Misbehave::WildTouch), &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains("outside the arena"), "{e:#}");
        let e = runner(2).run(&mut Serial::new(Misbehave::Panic), &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains("cpu 1: the workload panicked"), "{e:#}");
    }

    #[test]
    fn a_seed_workload_makes_the_same_calls_on_both_runners() {
        // trunc's calls depend only on its parameters: both runners must see them all.
        let info = workload::find("trunc").unwrap();
        let params = info.params(&["files=2".into(), "file_mib=8".into()], 1.0).unwrap();
        let mut model = Model::new(small_setup(2, 64, "modern", 1)).unwrap();
        let m = model.run((info.build)(&params).as_mut(), &mut |_| {}).unwrap();
        let r = runner(2).run((info.build)(&params).as_mut(), &mut |_| {}).unwrap();
        assert_eq!(r.ops, m.ops);
        assert_eq!(r.ops.allocs, 2 * 8 * 256);
        assert_eq!(r.touches.0, m.touches.0 + m.touches.1);
        let pages = |o: &RunOutcome| o.workload.iter().find(|(k, _)| k == "pages").unwrap().1;
        assert_eq!(pages(&r), pages(&m));
    }

    /// netperf-sctp on two threads keeps moving between the delayed-SACK timer's waits: a
    /// window update reaches a sender that is not asleep when its receiver's reads reopen
    /// the window. Before that rule every real run reached, within its first millisecond, a
    /// state only the 200 ms timer left, and made about a hundred calls in 0.4 s where the
    /// model made tens of thousands. The kernel's own rules can still leave a pair to the
    /// timer with the default receive buffer (docs/workloads.md §2.3), and a wait still under
    /// way when the run ends is in no count, so the run uses a 512 KiB buffer, out of that
    /// band: only a lost update could then stop the pair. The real run's calls per second
    /// outside the timer's waits must be at least a hundredth of the model's.
    #[test]
    fn netperf_sctp_moves_on_two_threads_between_sack_timer_waits() {
        let info = workload::find("netperf-sctp-stream-many").unwrap();
        let p = params(
            "netperf-sctp-stream-many",
            &["pairs=1", "duration_s=0.05", "rcvbuf_bytes=524288"],
        );
        let mut model = Model::new(small_setup(2, 64, "modern", 1)).unwrap();
        let m = model.run((info.build)(&p).as_mut(), &mut |_| {}).unwrap();
        let r = runner(2).run((info.build)(&p).as_mut(), &mut |_| {}).unwrap();
        let rate = |o: &RunOutcome| {
            let active = o.elapsed_ps as f64 / 1e12 - metric(o, "timer_wait_s");
            o.ops.allocs as f64 / active.max(1e-6)
        };
        assert!(
            rate(&r) * 100.0 >= rate(&m),
            "real {} calls/s ({} calls, {} timer waits), model {} calls/s",
            rate(&r),
            r.ops.allocs,
            metric(&r, "timer_waits"),
            rate(&m)
        );
    }

    /// A workload wrapped to count its steps in flight at once (`most`), so a run shows
    /// whether two CPUs' steps overlap. With `turns`, each step holds one lock throughout, as
    /// [`Serial`] does: then the count can never pass 1.
    struct Overlap<W> {
        inner: W,
        turns: Option<Mutex<()>>,
        in_flight: AtomicU32,
        most: AtomicU32,
    }

    impl<W: Workload> Overlap<W> {
        fn new(inner: W, take_turns: bool) -> Overlap<W> {
            Overlap {
                inner,
                turns: take_turns.then(Mutex::default),
                in_flight: AtomicU32::new(0),
                most: AtomicU32::new(0),
            }
        }
    }

    impl<W: Workload> Workload for Overlap<W> {
        fn start(&mut self, info: &ModelInfo) -> Result<Vec<u32>> {
            self.inner.start(info)
        }
        fn step(&self, ctx: &mut Ctx<'_>) -> Result<Next> {
            let _turn = self.turns.as_ref().map(lock);
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            let r = self.inner.step(ctx);
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            r
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
        fn slab_setup(&self) -> crate::model::slab::SlabSetup {
            self.inner.slab_setup()
        }
    }

    /// page-fault1 with two processes on two threads for `window_s` of wall time, 1 MiB
    /// mappings (several loops each). Runs of 0.05 s on a loaded 2-CPU host went without
    /// two steps meeting five times in a row; 0.2 s runs met in their first.
    fn page_fault1(window_s: f64) -> workload::page_fault1::PageFault1 {
        let params: Vec<String> = vec![
            "processes=2".into(),
            "threads_per_core=1".into(),
            "mmap_mib=1".into(),
            "warmup_s=0.005".into(),
            format!("window_s={window_s}"),
        ];
        workload::page_fault1::PageFault1::new(
            &workload::page_fault1::INFO.params(&params, 1.0).unwrap(),
        )
    }

    fn metric(o: &RunOutcome, name: &str) -> f64 {
        o.workload.iter().find(|(k, _)| k == name).unwrap().1
    }

    /// Workload `name`'s parameters with `over` (`name=value` each) at scale 1.
    fn params(name: &str, over: &[&str]) -> workload::Params {
        let over: Vec<String> = over.iter().map(|s| s.to_string()).collect();
        workload::find(name).unwrap().params(&over, 1.0).unwrap()
    }

    /// Runs a test may take for two threads' steps to meet: whether they do in one run depends
    /// on the host's scheduler, and on a host loaded by other builds five were once too few.
    const OVERLAP_TRIES: usize = 20;

    /// Run the workload `build` makes on `cpus` threads, wrapped in [`Overlap`], `check`ing
    /// each run's outcome, until two steps were in flight at once; fail if they never were in
    /// [`OVERLAP_TRIES`] runs.
    fn assert_steps_overlap<W: Workload>(
        cpus: u32,
        build: impl Fn() -> W,
        check: impl Fn(&RunOutcome),
    ) {
        for _ in 0..OVERLAP_TRIES {
            let mut w = Overlap::new(build(), false);
            check(&runner(cpus).run(&mut w, &mut |_| {}).unwrap());
            if w.most.load(Ordering::SeqCst) >= 2 {
                return;
            }
        }
        panic!("the threads' steps never ran at the same time in {OVERLAP_TRIES} runs");
    }

    /// [`assert_steps_overlap`] for a socket workload `name` with `over` on two threads,
    /// once without migrations and once with them frequent (0.02 per call), so that its two
    /// tasks also swap threads mid-run; `check` is given each run and its `migrate_prob`.
    fn assert_pair_overlaps<W: Workload>(
        name: &str,
        over: &[&str],
        build: impl Fn(&workload::Params) -> W,
        check: impl Fn(&RunOutcome, f64),
    ) {
        for migrate in [0.0, 0.02] {
            let prob = format!("migrate_prob={migrate}");
            let params = params(name, &[over, &[prob.as_str()]].concat());
            assert_steps_overlap(2, || build(&params), |o| check(o, migrate));
        }
    }

    /// page-fault1's CPUs share nothing but the allocator, so two threads' steps (faults
    /// and munmap chunks: allocator calls) run at the same time; every page still comes
    /// back and the validator passes (the runner checks both at the end). Whether two steps
    /// meet depends on the host's scheduler, so the overlap is asked of up to
    /// [`OVERLAP_TRIES`] runs; the same workload taking turns, as under [`Serial`], never gets past one step in flight.
    #[test]
    fn page_fault1_steps_overlap_and_every_page_comes_back() {
        assert_steps_overlap(
            2,
            || page_fault1(0.2),
            |o| {
                assert_eq!(metric(o, "alloc_failures"), 0.0);
                assert!(metric(o, "loops") >= 2.0, "{:?}", o.workload);
                assert!(o.ops.allocs > 0 && o.ops.frees > 0);
            },
        );

        let mut w = Overlap::new(page_fault1(0.02), true);
        runner(2).run(&mut w, &mut |_| {}).unwrap();
        assert_eq!(w.most.load(Ordering::SeqCst), 1);
    }

    /// trunc on two threads, with the seeds that put `cat` and `rm` on one CPU and on two
    /// (the page cache handed over between threads): every page read in is truncated and
    /// comes back.
    #[test]
    fn trunc_hands_its_cache_between_threads_and_every_page_comes_back() {
        let info = workload::find("trunc").unwrap();
        let params = info.params(&["files=1".into(), "file_mib=4".into()], 1.0).unwrap();
        let mut placements = Vec::new();
        for seed in 1..=6 {
            let mut r = seeded_runner(2, seed);
            placements.push((info.build)(&params).start(&r.info()).unwrap().len());
            let o = r.run((info.build)(&params).as_mut(), &mut |_| {}).unwrap();
            assert_eq!((o.ops.allocs, o.ops.frees, o.ops.alloc_failures), (1024, 1024, 0));
            assert!(metric(&o, "elapsed") > 0.0, "{:?}", o.workload);
        }
        assert!(placements.contains(&1) && placements.contains(&2), "{placements:?}");
    }

    /// A small kbuild on two threads: with `fork`, make on CPU 0 forks and reaps the
    /// processes of both slots (requests, wakes and RCU callbacks across threads); with two
    /// memory cgroups limited below their page cache, charges reclaim it on the charging
    /// thread. Every job runs, every page comes back, the validator passes; the steps of the
    /// two threads run at the same time in at least one run.
    #[test]
    fn kbuild_runs_its_jobs_on_overlapping_threads_and_every_page_comes_back() {
        let build = |extra: &[&str]| {
            let params: Vec<String> = workload::kbuild::tests::SMALL
                .iter()
                .chain(&["parallel=2"])
                .chain(extra)
                .map(|s| s.to_string())
                .collect();
            workload::kbuild::Kbuild::new(&workload::kbuild::INFO.params(&params, 1.0).unwrap())
        };
        assert_steps_overlap(
            2,
            || build(&[]),
            |o| {
                assert_eq!(metric(o, "jobs"), 12.0);
                assert_eq!(metric(o, "processes"), 12.0 * 3.0 + 1.0);
                assert_eq!(metric(o, "alloc_failures"), 0.0);
                assert!(metric(o, "rcu_frees") > 0.0 && metric(o, "remote_frees") > 0.0);
            },
        );

        let o = runner(2)
            .run(&mut build(&["cgroups=2", "obj_kib=2048", "memcg_limit_mib=4"]), &mut |_| {})
            .unwrap();
        assert_eq!(metric(&o, "jobs"), 12.0);
        assert!(metric(&o, "memcg_reclaimed") > 0.0, "{:?}", o.workload);
        assert_eq!(metric(&o, "memcg_overruns"), 0.0);
    }

    /// vm-scalability's anonymous case on two threads: each task faults in its share and
    /// unmaps it, every page back, the validator passing; the tasks' steps overlap in at
    /// least one run.
    #[test]
    fn vm_scalability_tasks_fault_on_overlapping_threads_and_every_page_comes_back() {
        let info = workload::find("vm-scalability").unwrap();
        let params = info.params(&["tasks=2".into()], 0.5).unwrap();
        let build = || workload::vm_scalability::VmScalability::new(&params);
        assert_steps_overlap(2, build, |o| {
            let per_task = metric(o, "pages_per_task");
            assert!(per_task > 0.0);
            // Its share and the page-table pages that map it.
            assert!(o.ops.allocs as f64 > 2.0 * per_task, "each task faults its share");
            assert_eq!(o.ops.frees, o.ops.allocs, "and unmaps it all");
            assert_eq!(metric(o, "alloc_failures"), 0.0);
        });
    }

    /// thpfioscale on four threads (two fio jobs, a THP thread and kswapd) over a 64 MiB
    /// arena: 150 % of it written through the page cache, reclaimed by kswapd and direct
    /// reclaim on the writers' threads, and a madvised THP program whose compactions move
    /// page-cache pages and its own blocks from whichever thread compacts. Every page comes
    /// back and the validator passes (the runner checks both); steps overlap in at least
    /// one run.
    #[test]
    fn thpfioscale_reclaims_and_compacts_on_overlapping_threads_and_every_page_comes_back() {
        let over = ["fio_threads=2", "thp_threads=1", "madv_hugepage=1", "warmup=0.25"];
        let params = params("thpfioscale", &over);
        let build = || workload::thpfioscale::ThpFioScale::new(&params);
        assert_steps_overlap(4, build, |o| {
            // 150 % of the arena's 16 384 pages, so reclaim ran throughout.
            assert!(metric(o, "pages_written") > 1.4 * 16_384.0, "{:?}", o.workload);
            assert!(metric(o, "kswapd_pages") + metric(o, "direct_reclaim_pages") > 8_192.0);
            assert!(metric(o, "reads") > 0.0 && metric(o, "thp_steps") > 0.0);
            assert!(o.events.get(Counter::CompactStall) > 0, "{:?}", o.workload);
        });
    }

    /// vm-scalability's file case on two threads reading twice the 64 MiB arena: once the
    /// page cache fills it, each reader's allocations reclaim the oldest pages, the other
    /// reader's as well as its own, taken out of the shared LRU under its lock and freed
    /// after it. Every page read is freed by reclaim or comes back at the end, the validator
    /// passes; the readers' steps overlap in at least one run.
    #[test]
    fn vm_scalability_readers_reclaim_on_overlapping_threads_and_every_page_comes_back() {
        let params = params("vm-scalability", &["case=1", "tasks=2", "read_share=2"]);
        let build = || workload::lru_file_readonce::ReadOnce::new(&params);
        assert_steps_overlap(2, build, |o| {
            let per_task = metric(o, "pages_per_task");
            assert!(per_task > 8_000.0, "{:?}", o.workload);
            assert_eq!(o.ops.allocs as f64, 2.0 * per_task, "one allocation per page read");
            assert_eq!(metric(o, "alloc_failures"), 0.0);
            // Twice the arena read: at least what it cannot hold was reclaimed, each freed once.
            assert!(metric(o, "reclaimed_pages") >= 2.0 * per_task - 16_384.0);
            assert_eq!(o.ops.frees as f64, metric(o, "reclaimed_pages"));
        });
    }

    /// page-frag-rx with two RX CPUs filling one TX queue that a third CPU cleans: every
    /// packet forwarded (at most one more per RX CPU than asked, from the race the workload's
    /// doc names), every page back, the validator passing; steps overlap in at least one
    /// run.
    #[test]
    fn page_frag_rx_forwards_between_overlapping_threads_and_every_page_comes_back() {
        let over = ["packets=20000", "rx_cpus=2", "tx_cpus=1", "rx_ring=128", "tx_ring=128"];
        let params = params("page-frag-rx", &over);
        let build = || workload::page_frag_rx::PageFragRx::new(&params);
        assert_steps_overlap(3, build, |o| {
            let packets = metric(o, "packets");
            assert!((20_000.0..=20_002.0).contains(&packets), "{packets}");
            assert_eq!(metric(o, "alloc_failures"), 0.0);
            // Each forwarded page freed once; the rings' posted pages go back at the end (the
            // runner's give-back and conservation check, which would fail the run).
            assert_eq!(o.ops.frees as f64, packets, "every forwarded page freed once");
        });
    }

    /// netperf-tcp's sender and receiver on two threads: the sender's frag pages, referenced
    /// by segments the receiver reads and frees, pass between the threads through the shared
    /// socket; every page comes back (the runner's give-back and validator), each allocation
    /// is a frag page, no step waits for a turn; steps overlap in at least one run.
    #[test]
    fn netperf_tcp_streams_between_overlapping_threads_and_every_page_comes_back() {
        // With migrations frequent, sender and receiver swap threads mid-run too.
        let build = workload::netperf_tcp::NetperfTcp::new;
        assert_pair_overlaps("netperf-tcp", &["duration_s=0.05"], build, |o, _| {
            assert!(metric(o, "bytes") > 1e6, "{:?}", o.workload);
            let frags = metric(o, "frag_allocs") + metric(o, "fallback_allocs");
            assert_eq!(o.ops.allocs as f64, frags, "every allocation a frag page");
            // At most the send buffer (4 MiB, 128 frag pages) and the frag page still held.
            assert!(
                o.ops.frees <= o.ops.allocs && o.ops.frees + 129 >= o.ops.allocs,
                "{:?}",
                o.ops
            );
            assert_eq!(metric(o, "alloc_failures"), 0.0);
            assert_eq!(o.turn_ps, 0, "nothing takes turns");
        });
    }

    /// netperf-udp's sender and receiver on two threads, the receive buffer small enough
    /// that some datagrams are dropped on the sender's CPU: every datagram sent is read or
    /// dropped, every page comes back (the runner's give-back and validator), no step waits
    /// for a turn; steps overlap in at least one run.
    #[test]
    fn netperf_udp_datagrams_between_overlapping_threads_are_read_or_dropped() {
        let params = params("netperf-udp", &["duration_s=0.05", "rcvbuf_bytes=40000"]);
        let build = || workload::netperf_udp::NetperfUdp::new(&params);
        assert_steps_overlap(2, build, |o| {
            let (send, recv) = (metric(o, "send"), metric(o, "recv"));
            assert!(recv > 0.0, "{:?}", o.workload);
            // Mbit/s over the 0.05 s run: each dropped datagram is 16 KiB sent, not read.
            let dropped_mbit = metric(o, "dropped") * 16384.0 * 8.0 / 1e6 / 0.05;
            assert!((send - recv - dropped_mbit).abs() < 1e-6 * send, "{:?}", o.workload);
            assert_eq!(metric(o, "alloc_failures"), 0.0);
            assert_eq!(o.turn_ps, 0, "nothing takes turns");
        });
    }

    /// netperf-sctp with one pair on two threads: the sender allocates chunk and packet
    /// buffers under its socket's lock while the receiver copies and frees earlier packets
    /// under its own, the two meeting only in the association's bookkeeping (and the
    /// receiver taking the sender's socket to handle a SACK while the sender sleeps). With
    /// migrations frequent, sender and receiver swap threads mid-run too. Messages move, every
    /// page comes back and the validator passes (the runner checks both), no step waits for a
    /// turn; steps overlap in at least one run.
    #[test]
    fn netperf_sctp_pair_overlaps_and_every_page_comes_back() {
        let over = ["pairs=1", "duration_s=0.25"];
        let build = workload::netperf_sctp::NetperfSctp::new;
        assert_pair_overlaps("netperf-sctp-stream-many", &over, build, |o, migrate| {
            // A run may end in the delayed-SACK timer's wait, a state the kernel's rules
            // leave a pair in only after its window's ten messages have moved
            // (docs/workloads.md §2.3).
            let msgs = metric(o, "messages");
            assert!(msgs >= 10.0, "{:?}", o.workload);
            assert_eq!(metric(o, "alloc_failures"), 0.0);
            // A chunk buffer per message, and a packet buffer per one to six chunks.
            let cpp = metric(o, "chunks_per_packet");
            assert!((1.0..=6.0).contains(&cpp), "{cpp}");
            assert!(o.ops.allocs as f64 >= msgs * (1.0 + 1.0 / 6.0), "{:?}", o.ops);
            // Held at the end: at most sk_sndbuf's 13 chunks and the packets holding the
            // window's 11 chunks (10 and a probe).
            assert!(o.ops.frees <= o.ops.allocs && o.ops.frees + 24 >= o.ops.allocs, "{:?}", o.ops);
            assert_eq!(metric(o, "migrations") > 0.0, migrate > 0.0, "{:?}", o.workload);
            assert_eq!(o.turn_ps, 0, "nothing takes turns");
        });
    }

    /// lmbench-unix with one pair on two threads: the writer allocates and fills skbs while
    /// the reader copies and frees earlier ones, through the pair's queue. With migrations
    /// made frequent, writer and reader swap threads many times mid-run (each swap may leave
    /// a thread finishing a step of the task that moved). Data moves, every page comes back
    /// and the validator passes (the runner checks both); steps overlap in at least one run.
    #[test]
    fn lmbench_unix_pair_overlaps_across_swaps_and_every_page_comes_back() {
        let over = ["pairs=1", "duration_s=0.1"];
        let build = workload::lmbench_unix::LmbenchUnix::new;
        assert_pair_overlaps("lmbench-unix", &over, build, |o, migrate| {
            assert!(metric(o, "bytes") >= 10.0 * 65536.0, "{:?}", o.workload);
            assert_eq!(o.ops.alloc_failures, 0);
            // Four blocks per 64 KiB write, allocated by the writer, freed by the reader.
            assert!(o.ops.frees as f64 >= 4.0 * (metric(o, "bytes") / 65536.0).floor());
            assert_eq!(metric(o, "migrations") > 0.0, migrate > 0.0, "{:?}", o.workload);
        });
    }

    /// hackbench on two threads, one group of two receivers and two senders, over sockets
    /// (slab objects allocated by senders, freed by receivers) and over pipes (pages copied
    /// into outside the pipe's lock, a page reserved by a writer never leaving the pipe
    /// before it is written): every message read, every page back, the validator passing;
    /// steps overlap in at least one run of each.
    #[test]
    fn hackbench_messages_cross_overlapping_threads_and_every_page_comes_back() {
        for pipes in ["pipes=0", "pipes=1"] {
            let params = params("hackbench", &["groups=1", "fds=2", "loops=2000", pipes]);
            let build = || workload::hackbench::Hackbench::new(&params);
            assert_steps_overlap(2, build, |o| {
                assert_eq!(metric(o, "messages"), 2.0 * 2.0 * 2000.0, "{:?}", o.workload);
                assert_eq!(metric(o, "alloc_failures"), 0.0);
                assert!(metric(o, "time") > 0.0);
                assert_eq!(o.ops.slab_frees, o.ops.slab_allocs, "every skb consumed");
            });
        }
    }

    /// iperf3-nic with one stream on two threads: the RX CPU carves page_frag buffers and
    /// allocates skbs and ACKs while the reader copies and frees earlier segments through the
    /// socket. Data moves, every skb and ACK is freed, every page comes back and the
    /// validator passes; steps overlap in at least one run.
    #[test]
    fn iperf3_nic_stream_overlaps_and_every_page_comes_back() {
        let params = params("iperf3-nic", &["streams=1", "duration_s=0.1"]);
        let build = || workload::iperf3_nic::Iperf3Nic::new(&params);
        assert_steps_overlap(2, build, |o| {
            assert!(metric(o, "packets") > 100.0, "{:?}", o.workload);
            assert!(metric(o, "frag_pages") > 0.0 && metric(o, "acks") > 0.0);
            assert_eq!(metric(o, "alloc_failures"), 0.0);
            assert_eq!(o.ops.slab_frees, o.ops.slab_allocs, "every skb and ACK freed");
        });
    }
}

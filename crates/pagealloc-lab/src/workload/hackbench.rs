//! `hackbench`: `perf bench sched messaging`, the hackbench that mmtests' configuration
//! `config-scheduler-unbound` runs as hackbench-{process,thread}-{pipes,sockets}
//! (docs/workloads.md §12). Section numbers (§) in this file are those of `docs/workloads.md`.
//!
//! What it imitates: `groups` groups of `fds` receivers and `fds` senders. Each receiver owns
//! one channel — a `socketpair(AF_UNIX, SOCK_STREAM)`, or a pipe with `-p` — whose writing end
//! every sender of its group holds; each sender writes `loops` rounds of one `datasize`-byte
//! message to each receiver of its group in turn, and each receiver reads `fds × loops`
//! messages. Tasks are processes, or threads with `-t`. The result is the time from the start
//! signal to the last task's exit, in seconds (lower is better).
//!
//! Where the page allocator comes in (§12.2):
//! - Sockets: each write builds one skb, a `skbuff_head_cache` object and a small linear head
//!   (`skbuff_small_head` since 6.3, kmalloc-512 before) taken from slab caches on the
//!   sender's CPU and freed by the receiver on its CPU. The page allocator sees the caches'
//!   slabs (orders 0-3 by SLUB's order rule and the CPU count): new slabs on senders' CPUs,
//!   empty slabs given back on receivers' CPUs — a one-way flow of high-order pages, the case
//!   `free_high` is about. The model runs both caches through the slab layer (`model::slab`).
//! - Pipes: a 100-byte write appends to the pipe's last page while it has room; a new page is
//!   the pipe's one spare page (`tmp_page`) if it has one, else an order-0 allocation; a page
//!   the reader empties becomes the spare if there is none, else is freed on the reader's CPU.
//!   With one page in flight most pages recycle through the spare, so pipes make few
//!   allocator calls per message; that is a property of the kernel, kept by the model.
//! - Processes (the default) and threads: every task allocates its kernel stack (`stack_pages`
//!   order-0 pages, CONFIG_VMAP_STACK) when it starts; a process also allocates its PGD (order
//!   1 with page-table isolation) and `fork_pages` of page tables and copied-on-write pages.
//!   All of it is freed on the task's CPU when it exits. Switching between two processes costs
//!   `mm_switch_ns` more than between two threads (a new address space).
//!
//! The model: the tasks (receivers of a group first, then its senders, groups in order, as
//! perf creates them) are shuffled with the run's seed and dealt round robin over the CPUs
//! (fork balancing spreads new tasks over idle CPUs; which lands where is assumed random), and
//! never migrate. Each CPU runs its tasks from a FIFO run queue: a task
//! runs until it blocks, ends, or uses up its `timeslice_ms` with others waiting; a switch to
//! another task costs `switch_ns`. A blocked task is woken onto its CPU's queue; an idle CPU
//! takes `wake_ns` to run it. A writer blocks on a full channel (a socket whose queued truesize
//! reached `sndbuf_bytes`, a pipe of `pipe_buffers` pages) and is woken when a socket's queue
//! falls to a quarter of it (`unix_writable`) or a pipe slot frees; a reader blocks on an empty
//! channel. Every task first takes its start-up allocations, then waits for the start signal
//! (perf's ready/wake-up pipes), so the time excludes set-up as perf's does.
//!
//! Volume: mmtests runs `-l 10000` for 1 to 4 × CPUs groups, 3 iterations each; the model runs
//! one group count and `loops` = 1000 (scaled), about two seconds of wall time at 4 groups on
//! 8 CPUs.
//!
//! Known biases: no migration and no wake-up preemption (the scheduler is a FIFO per CPU);
//! the skb's `sk_buff` and head are each one slab object with no kmalloc rounding of their
//! own; memcg charging, the pipe mutex and the socket locks are in the assumed per-call
//! costs, not contended; a 6.16+ pipe keeps two spare pages, the model one; the parent's side
//! of fork (task_struct, signal, files objects) and a thread's user stack faults are left out;
//! the exit path frees a task's pages at once, not in TLB-gather batches.
//!
//! State: each task's own (phase, count, start-up pages) behind a lock only its CPU's steps
//! take (tasks never migrate), held across their allocator calls; each channel (its skbs or
//! pipe pages, `wmem`, the spare page, the sleeping writers and the reader's sleep flag) and
//! each CPU's run queue behind locks held for bookkeeping only; counters atomic. A sender
//! builds its skb, or copies into a page not yet in the pipe or into bytes it reserved in
//! the pipe's last page, outside the channel's lock and queues or commits under it; a
//! receiver takes its skb, or its bytes, out under the lock, copies and frees after it, and
//! a pipe page leaves the pipe only once no reserved bytes are left in it. Lock order: a
//! task's lock first, then one channel's or one run queue's lock, never two of those
//! together; the start signal is given after the last task's lock is let go. No lost wake:
//! a task marks itself asleep (a writer on the channel's list, the reader's flag) in the same
//! critical section as its last look at the channel; a waker clears the mark under that
//! lock, queues the task on its CPU's run queue and wakes the CPU after (a wake for a
//! running CPU makes its next block return at once). On real threads several senders may
//! pass a socket's or pipe's "full" test before any of them queues, so a channel may hold
//! a few messages or pages more than `sndbuf_bytes` or `pipe_buffers` allow. The model steps
//! one CPU at a time, so its decisions are those of one object.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;

use anyhow::{anyhow, Result};
use pagealloc::{Gfp, Order, Pfn};
use pagealloc_slab::{SlabFlags, SlabObject, SlubConfig};
use pagealloc_testkit::rng::Rng;

use super::net::PageCursor;
use super::{ns, ParamSpec, Params, WorkloadInfo};
use crate::model::slab::{CacheId, SlabSetup, SlabSpec};
use crate::model::{lock, part, Ctx, ModelInfo, Next, Padded, Tally, Workload};

/// The registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "hackbench",
    summary: "perf bench sched messaging (hackbench): groups of 20 senders and 20 receivers \
              over AF_UNIX sockets (skb slabs, high orders, allocated and freed on different \
              CPUs) or pipes, processes or threads",
    params: PARAMS,
    default_machine: "skylake-1s",
    build: |p| Box::new(Hackbench::new(p)),
    fit: super::fits_any,
};

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "groups",
        default: 4.0,
        min: 1.0,
        max: 4096.0,
        unit: "groups",
        doc: "groups of senders and receivers (-g); mmtests walks 1 to 4 × CPUs (at most 296)",
        source: "assumed: one point of mmtests' range HACKBENCH_MIN_GROUPS=1 .. \
                 HACKBENCH_MAX_GROUPS=4×CPUs (config-scheduler-unbound, docs/workloads.md \
                 §12.1): 4 groups on 8 CPUs is 20 tasks per CPU",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "loops",
        default: 1000.0,
        min: 1.0,
        max: 1e7,
        unit: "loops",
        doc: "rounds each sender makes over its group's receivers, one message each (-l)",
        source: "assumed volume: a tenth of mmtests' HACKBENCH_LOOPS=10000 \
                 (config-scheduler-unbound) so that a run takes about two seconds of wall time; \
                 perf's own default is 100 (docs/workloads.md §12.1)",
        scaled: true,
        whole: true,
    },
    ParamSpec {
        name: "fds",
        default: 20.0,
        min: 1.0,
        max: 1000.0,
        unit: "tasks",
        doc: "senders, and receivers, per group",
        source: "perf's sched-messaging.c: num_fds = 20, \"groups of 20 processes spraying to \
                 20 receivers\" (docs/workloads.md §12.1)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "datasize",
        default: 100.0,
        min: 1.0,
        max: 4096.0,
        unit: "bytes",
        doc: "size of each message",
        source: "perf's sched-messaging.c: DATASIZE 100 (docs/workloads.md §12.1)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "pipes",
        default: 0.0,
        min: 0.0,
        max: 1.0,
        unit: "0 = sockets, 1 = pipes",
        doc: "channel: socketpair(AF_UNIX, SOCK_STREAM), or pipe() (-p)",
        source: "perf's default is sockets; mmtests runs both (hackbench-*-sockets, \
                 hackbench-*-pipes in config-scheduler-unbound)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "threads",
        default: 0.0,
        min: 0.0,
        max: 1.0,
        unit: "0 = processes, 1 = threads",
        doc: "tasks are processes (fork), or threads of one process (-t)",
        source: "perf's default is processes; mmtests runs both (hackbench-process-*, \
                 hackbench-thread-* in config-scheduler-unbound)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "sndbuf_bytes",
        default: 212_992.0,
        min: 4096.0,
        max: 1e9,
        unit: "bytes",
        doc: "sockets: sk_sndbuf of a channel's writing end, shared by its group's senders; \
              a writer sleeps while the skbs' truesize queued reaches it",
        source: "net.core.wmem_default = 212,992 B on common kernels (docs/workloads.md §4.2); \
                 perf sets no socket size",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "head_bytes",
        default: 576.0,
        min: 64.0,
        max: 4096.0,
        unit: "bytes",
        doc: "sockets: object size of the skb's linear head cache (skbuff_small_head; 512 for \
              kmalloc-512 before 6.3)",
        source: "measured on the lab host: /sys/kernel/slab/skbuff_small_head/slab_size = 576 \
                 (Linux 6.18, x86-64), docs/workloads.md §12.2",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "pipe_buffers",
        default: 16.0,
        min: 1.0,
        max: 1024.0,
        unit: "pages",
        doc: "pipes: pages a pipe holds before a writer sleeps",
        source: "PIPE_DEF_BUFFERS = 16 (include/linux/pipe_fs_i.h), docs/workloads.md §12.2",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "stack_pages",
        default: 4.0,
        min: 0.0,
        max: 64.0,
        unit: "pages",
        doc: "order-0 pages of a task's kernel stack",
        source: "x86-64 THREAD_SIZE = 16 KiB (THREAD_SIZE_ORDER 2, without KASAN), vmalloc'd \
                 page by page with CONFIG_VMAP_STACK (docs/workloads.md §12.2)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "fork_pages",
        default: 24.0,
        min: 0.0,
        max: 100_000.0,
        unit: "pages",
        doc: "processes: order-0 pages a forked process allocates besides its PGD: page \
              tables and pages copied on write (stack, data)",
        source: "assumed: a small C program's child touches a few pages of stack, data and \
                 heap and needs a few page-table pages per region",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "send_ns",
        default: 600.0,
        min: 0.0,
        max: 1e7,
        unit: "ns",
        doc: "work per write besides allocations and copies: system call, fd lookup, the \
              socket or pipe lock, queueing, the reader's wake-up call",
        source: "assumed: a system call with a socket lookup and a locked queue operation, a \
                 few hundred ns",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "recv_ns",
        default: 500.0,
        min: 0.0,
        max: 1e7,
        unit: "ns",
        doc: "work per read besides frees and copies",
        source: "assumed: as send_ns, without the wake-up",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "switch_ns",
        default: 1500.0,
        min: 0.0,
        max: 1e7,
        unit: "ns",
        doc: "a context switch between two tasks on one CPU (schedule(), the switch itself)",
        source: "assumed: lmbench lat_ctx-style figures of 1-3 µs on 2017-2023 x86 servers \
                 with the default mitigations",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "mm_switch_ns",
        default: 300.0,
        min: 0.0,
        max: 1e7,
        unit: "ns",
        doc: "processes: extra cost of a switch to another address space (CR3 write, TLB \
              refills)",
        source: "assumed: a few hundred ns with PCID",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "wake_ns",
        default: 2000.0,
        min: 0.0,
        max: 1e9,
        unit: "ns",
        doc: "delay from waking a task on an idle CPU to its running",
        source: "assumed: as lmbench-unix's wake_ns, a cross-CPU wake-up (IPI, exit from a \
                 shallow idle state), a few µs",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "timeslice_ms",
        default: 3.0,
        min: 0.01,
        max: 1000.0,
        unit: "ms",
        doc: "longest a task runs while others wait on its CPU",
        source: "CFS minimum granularity with 8 or more CPUs, 0.75 ms × 4 = 3 ms \
                 (kernel/sched/fair.c), as page-fault1's timeslice_ms",
        scaled: false,
        whole: false,
    },
];

/// The slab caches (sockets only): `skbuff_head_cache` (stride 256, align 64 on the lab host,
/// /sys/kernel/slab, Linux 6.18) and the skb head cache of `head_bytes`.
const SKB_CACHE: CacheId = CacheId(0);
const HEAD_CACHE: CacheId = CacheId(1);
/// Stride of `skbuff_head_cache` (bytes).
const SKB_BYTES: u32 = 256;
/// Slab objects: GFP_KERNEL (process context).
const GFP_SLAB: Gfp = Gfp::KERNEL;
/// Pipe pages: GFP_HIGHUSER | __GFP_ACCOUNT (not movable: GFP_USER's migratetype).
const GFP_PIPE: Gfp = Gfp(Gfp::USER.0 | Gfp::HIGHMEM.0);
/// Page tables and the kernel stack: GFP_KERNEL | __GFP_ZERO.
const GFP_ZEROED: Gfp = Gfp(Gfp::KERNEL.0 | Gfp::ZERO.0);
/// The PGD's order with page-table isolation (x86-64, as kbuild's).
const PGD_ORDER: Order = Order(1);
const PAGE: u64 = 4096;

/// What a task is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Not yet run: its start-up allocations come first.
    Spawn,
    /// Waiting for the start signal.
    Ready,
    /// Sending or receiving.
    Run,
    /// Done with its messages: frees its pages and ends.
    Exit,
    /// Gone.
    Done,
}

/// One task: a receiver (index `k` < `fds` in its group) or a sender.
#[derive(Debug)]
struct Task {
    group: usize,
    /// Receiver (its channel is `group × fds + k`).
    receiver: Option<usize>,
    phase: Phase,
    /// Messages sent or received so far.
    done: u64,
    /// Start-up blocks, freed at exit.
    pages: Vec<(Pfn, Order)>,
    /// Pages of messages charged once each.
    cursor: PageCursor,
}

/// An skb on a socket: its two slab objects and its truesize.
#[derive(Clone, Copy, Debug)]
struct Skb {
    skb: SlabObject,
    head: SlabObject,
}

/// A page of a pipe: bytes `start .. start + len` unread, and `pending` more after them that
/// writers have reserved and are still copying in (0 but on real threads, mid-write).
#[derive(Clone, Copy, Debug)]
struct PipeBuf {
    pfn: Pfn,
    start: u64,
    len: u64,
    pending: u64,
}

impl PipeBuf {
    /// Where the next write into this page goes.
    fn end(&self) -> u64 {
        self.start + self.len + self.pending
    }
}

/// One receiver's channel.
#[derive(Debug, Default)]
struct Chan {
    skbs: VecDeque<Skb>,
    /// Truesize queued (sk_wmem_alloc of the writing end).
    wmem: u64,
    bufs: VecDeque<PipeBuf>,
    /// The pipe's spare page.
    tmp_page: Option<Pfn>,
    /// Writers asleep on a full channel.
    writers: Vec<usize>,
    reader_waits: bool,
}

/// A write's outcome: `None` if the writer must sleep (the channel is full), else whether
/// the channel's reader is to be woken.
type Sent = Option<bool>;

/// A read's outcome: `None` if the reader must sleep (nothing to read), else the writers to
/// wake.
type Got = Option<Vec<usize>>;

/// Where a pipe write goes, chosen under the channel's lock.
#[derive(Clone, Copy, Debug)]
enum PipeSlot {
    /// Bytes reserved at `off` of the pipe's last page.
    Merge { pfn: Pfn, off: u64 },
    /// A new page: the pipe's spare, taken, or (`None`) a fresh allocation.
    New(Option<Pfn>),
}

/// One CPU's run queue.
#[derive(Debug, Default)]
struct RunQueue {
    queue: VecDeque<usize>,
    current: Option<usize>,
    last: Option<usize>,
    slice_end: u64,
}

/// What a task's step left it as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ran {
    /// Still runnable.
    Runnable,
    /// Off the CPU (asleep, waiting for the start, or gone).
    Off,
}

/// One run.
#[derive(Debug)]
pub struct Hackbench {
    groups: usize,
    loops: u64,
    fds: usize,
    datasize: u64,
    pipes: bool,
    threads: bool,
    sndbuf: u64,
    head_bytes: u32,
    pipe_buffers: usize,
    stack_pages: u64,
    fork_pages: u64,
    send: u64,
    recv: u64,
    switch: u64,
    mm_switch: u64,
    wake: u64,
    slice: u64,
    /// Truesize of one skb: head + `sk_buff` (SKB_TRUESIZE).
    truesize: u64,
    /// Per task, taken by the steps of its CPU. Each of these per-task, per-channel and
    /// per-CPU locks is on lines of its own ([`Padded`]): packed, neighbours on two CPUs
    /// shared a line that every real step moved between cores.
    tasks: Vec<Padded<Mutex<Task>>>,
    /// Each task's CPU (tasks never migrate): read without a lock.
    cpu_of: Vec<u32>,
    /// Per receiver: bookkeeping only.
    chans: Vec<Padded<Mutex<Chan>>>,
    /// Per CPU: its own steps and the wakers that queue tasks on it, bookkeeping only.
    rqs: Vec<Padded<Mutex<RunQueue>>>,
    ready: AtomicUsize,
    finished: AtomicUsize,
    start: AtomicU64,
    end: AtomicU64,
    messages: Tally,
    pipe_allocs: Tally,
    pipe_frees: Tally,
    spare_reuses: Tally,
    switches: Tally,
    failures: Tally,
}

impl Hackbench {
    /// A run with these parameters.
    pub fn new(p: &Params) -> Hackbench {
        let head_bytes = p.count("head_bytes") as u32;
        Hackbench {
            groups: p.count("groups") as usize,
            loops: p.count("loops"),
            fds: p.count("fds") as usize,
            datasize: p.count("datasize"),
            pipes: p.get("pipes").round() != 0.0,
            threads: p.get("threads").round() != 0.0,
            sndbuf: p.count("sndbuf_bytes"),
            head_bytes,
            pipe_buffers: p.count("pipe_buffers") as usize,
            stack_pages: p.get("stack_pages").round() as u64,
            fork_pages: p.get("fork_pages").round() as u64,
            send: ns(p.get("send_ns")),
            recv: ns(p.get("recv_ns")),
            switch: ns(p.get("switch_ns")),
            mm_switch: ns(p.get("mm_switch_ns")),
            wake: ns(p.get("wake_ns")),
            slice: ns(p.get("timeslice_ms") * 1e6).max(1),
            truesize: u64::from(head_bytes) + u64::from(SKB_BYTES),
            tasks: Vec::new(),
            cpu_of: Vec::new(),
            chans: Vec::new(),
            rqs: Vec::new(),
            ready: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            start: AtomicU64::new(0),
            end: AtomicU64::new(0),
            messages: Tally::default(),
            pipe_allocs: Tally::default(),
            pipe_frees: Tally::default(),
            spare_reuses: Tally::default(),
            switches: Tally::default(),
            failures: Tally::default(),
        }
    }

    /// Messages each sender writes and each receiver reads.
    fn per_task(&self) -> u64 {
        self.loops * self.fds as u64
    }

    /// Put task `t` on its CPU's run queue and wake the CPU (after the run queue's lock: a
    /// wake for a CPU still running makes its next block return at once, so none is lost).
    fn wake_task(&self, t: usize, ctx: &mut Ctx<'_>) {
        let cpu = self.cpu_of[t];
        lock(&self.rqs[cpu as usize].0).queue.push_back(t);
        ctx.wake(cpu, ctx.now() + self.wake);
    }

    /// Start-up: the kernel stack and, for a process, its PGD and first pages. Returns
    /// whether this was the last task to get ready.
    fn spawn(&self, task: &mut Task, ctx: &mut Ctx<'_>) -> bool {
        let mut want: Vec<(Gfp, Order)> = vec![(GFP_ZEROED, Order(0)); self.stack_pages as usize];
        if !self.threads {
            want.push((GFP_ZEROED, PGD_ORDER));
            want.extend(std::iter::repeat_n(
                (Gfp::HIGHUSER_MOVABLE, Order(0)),
                self.fork_pages as usize,
            ));
        }
        for (gfp, order) in want {
            match ctx.alloc(gfp, order) {
                Some(pfn) => {
                    ctx.touch(pfn, PAGE << order.0);
                    task.pages.push((pfn, order));
                }
                None => {
                    self.failures.add(ctx.cpu(), 1);
                }
            }
        }
        task.phase = Phase::Ready;
        self.ready.fetch_add(1, SeqCst) + 1 == self.tasks.len()
    }

    /// perf's start signal, given by the last task to get ready (with its own lock let go):
    /// every task becomes runnable at once.
    fn start_signal(&self, ctx: &mut Ctx<'_>) {
        self.start.store(ctx.now(), SeqCst);
        for u in 0..self.tasks.len() {
            lock(&self.tasks[u].0).phase = Phase::Run;
            self.wake_task(u, ctx);
        }
    }

    /// Exit: free what the task allocated at start-up (and a receiver's pipe spare page, the
    /// pipe going with its last user).
    fn exit(&self, task: &mut Task, ctx: &mut Ctx<'_>) -> Result<()> {
        for (pfn, order) in std::mem::take(&mut task.pages) {
            ctx.free(pfn, order)?;
        }
        if let Some(k) = task.receiver {
            let spare = lock(&self.chans[task.group * self.fds + k].0).tmp_page.take();
            if let Some(spare) = spare {
                ctx.free(spare, Order(0))?;
            }
        }
        task.phase = Phase::Done;
        if self.finished.fetch_add(1, SeqCst) + 1 == self.tasks.len() {
            self.end.store(ctx.now(), SeqCst);
            for c in 0..self.rqs.len() as u32 {
                ctx.wake(c, ctx.now());
            }
        }
        Ok(())
    }

    /// The frame holding byte `offset` of slab object `o` of `stride` bytes.
    fn object_page(o: SlabObject, stride: u32) -> (Pfn, u64) {
        let at = u64::from(o.index()) * u64::from(stride);
        (Pfn(o.slab().0 + at / PAGE), at % PAGE)
    }

    /// Write one message of task `t` to socket `c`. The skb is built outside the channel's
    /// lock and queued under it.
    fn send_socket(&self, t: usize, task: &mut Task, c: usize, ctx: &mut Ctx<'_>) -> Result<Sent> {
        {
            let mut chan = lock(&self.chans[c].0);
            if chan.wmem >= self.sndbuf {
                chan.writers.push(t);
                return Ok(None);
            }
        }
        ctx.work(self.send);
        let skb = ctx.slab_alloc(SKB_CACHE, GFP_SLAB, None)?;
        let head = ctx.slab_alloc(HEAD_CACHE, GFP_SLAB, None)?;
        let (Some(skb), Some(head)) = (skb, head) else {
            return Err(anyhow!("hackbench: no memory for an skb on CPU {}", ctx.cpu()));
        };
        // copy_from_user into the head.
        let (pfn, off) = Self::object_page(head, self.head_bytes);
        task.cursor.copy(ctx, pfn, off, self.datasize);
        let mut chan = lock(&self.chans[c].0);
        chan.skbs.push_back(Skb { skb, head });
        chan.wmem += self.truesize;
        Ok(Some(std::mem::take(&mut chan.reader_waits)))
    }

    /// Where task `t`'s write to pipe `c` goes, or `None` if it must sleep (the pipe is
    /// full). A merge reserves its bytes, so the reader leaves the page in the pipe until
    /// they are written.
    fn pipe_slot(&self, t: usize, c: usize) -> Option<PipeSlot> {
        let ds = self.datasize;
        let mut chan = lock(&self.chans[c].0);
        if let Some(b) = chan.bufs.back_mut().filter(|b| b.end() + ds <= PAGE) {
            let off = b.end();
            b.pending += ds;
            return Some(PipeSlot::Merge { pfn: b.pfn, off });
        }
        if chan.bufs.len() >= self.pipe_buffers {
            chan.writers.push(t);
            return None;
        }
        Some(PipeSlot::New(chan.tmp_page.take()))
    }

    /// [`send_socket`](Self::send_socket) for a pipe: the bytes are copied outside the
    /// channel's lock, into a page reserved or not yet in the pipe, and then made readable.
    fn send_pipe(&self, t: usize, task: &mut Task, c: usize, ctx: &mut Ctx<'_>) -> Result<Sent> {
        let ds = self.datasize;
        let Some(slot) = self.pipe_slot(t, c) else { return Ok(None) };
        ctx.work(self.send);
        match slot {
            PipeSlot::Merge { pfn, off } => {
                task.cursor.copy(ctx, pfn, off, ds);
                let mut chan = lock(&self.chans[c].0);
                let b =
                    chan.bufs.iter_mut().rev().find(|b| b.pfn == pfn).ok_or_else(|| {
                        anyhow!("hackbench: pipe {c} lost page {} mid-write", pfn.0)
                    })?;
                b.pending -= ds;
                b.len += ds;
                Ok(Some(std::mem::take(&mut chan.reader_waits)))
            }
            PipeSlot::New(spare) => {
                let pfn = match spare {
                    Some(p) => {
                        self.spare_reuses.add(ctx.cpu(), 1);
                        p
                    }
                    None => {
                        self.pipe_allocs.add(ctx.cpu(), 1);
                        ctx.alloc(GFP_PIPE, Order(0)).ok_or_else(|| {
                            anyhow!("hackbench: no page for a pipe on CPU {}", ctx.cpu())
                        })?
                    }
                };
                task.cursor.reset();
                task.cursor.copy(ctx, pfn, 0, ds);
                let mut chan = lock(&self.chans[c].0);
                chan.bufs.push_back(PipeBuf { pfn, start: 0, len: ds, pending: 0 });
                Ok(Some(std::mem::take(&mut chan.reader_waits)))
            }
        }
    }

    fn sender(&self, t: usize, task: &mut Task, ctx: &mut Ctx<'_>) -> Result<Ran> {
        let c = task.group * self.fds + (task.done % self.fds as u64) as usize;
        let sent = if self.pipes {
            self.send_pipe(t, task, c, ctx)?
        } else {
            self.send_socket(t, task, c, ctx)?
        };
        let Some(wake_reader) = sent else { return Ok(Ran::Off) };
        task.done += 1;
        if wake_reader {
            self.wake_task(task.group * 2 * self.fds + c % self.fds, ctx);
        }
        if task.done == self.per_task() {
            task.phase = Phase::Exit;
        }
        Ok(Ran::Runnable)
    }

    /// Read one message from pipe `c` (its writers are woken when a page leaves it). The
    /// bytes are taken under the channel's lock and copied after it; the page leaves the pipe
    /// (as its spare, or freed here) only once they are copied and no write into it is under
    /// way.
    fn recv_pipe(&self, task: &mut Task, c: usize, ctx: &mut Ctx<'_>) -> Result<Got> {
        let ds = self.datasize;
        let (pfn, off) = {
            // The last look at the pipe and the mark asleep are one critical section.
            let mut chan = lock(&self.chans[c].0);
            let Some(b) = chan.bufs.front_mut().filter(|b| b.len > 0) else {
                chan.reader_waits = true;
                return Ok(None);
            };
            let off = b.start;
            b.start += ds;
            b.len -= ds;
            (b.pfn, off)
        };
        ctx.work(self.recv);
        task.cursor.copy(ctx, pfn, off, ds);
        let (spare, writers) = {
            let mut chan = lock(&self.chans[c].0);
            let emptied =
                chan.bufs.front().is_some_and(|b| b.pfn == pfn && b.len == 0 && b.pending == 0);
            if !emptied {
                return Ok(Some(Vec::new()));
            }
            chan.bufs.pop_front();
            // anon_pipe_buf_release: keep one spare page, free the rest.
            let spare = chan.tmp_page.is_none();
            if spare {
                chan.tmp_page = Some(pfn);
            }
            (spare, std::mem::take(&mut chan.writers))
        };
        task.cursor.reset();
        if !spare {
            self.pipe_frees.add(ctx.cpu(), 1);
            ctx.free(pfn, Order(0))?;
        }
        Ok(Some(writers))
    }

    /// [`recv_pipe`](Self::recv_pipe) for a socket: the skb is taken out under the channel's
    /// lock, copied and freed after it.
    fn recv_socket(&self, task: &mut Task, c: usize, ctx: &mut Ctx<'_>) -> Result<Got> {
        let skb = {
            let mut chan = lock(&self.chans[c].0);
            let Some(skb) = chan.skbs.pop_front() else {
                chan.reader_waits = true;
                return Ok(None);
            };
            skb
        };
        ctx.work(self.recv);
        let (pfn, off) = Self::object_page(skb.head, self.head_bytes);
        task.cursor.copy(ctx, pfn, off, self.datasize);
        // consume_skb on the reader's CPU: the head, then the sk_buff.
        ctx.slab_free(HEAD_CACHE, skb.head)?;
        ctx.slab_free(SKB_CACHE, skb.skb)?;
        let mut chan = lock(&self.chans[c].0);
        chan.wmem -= self.truesize;
        // unix_writable: writers wake once a quarter of sk_sndbuf is left queued.
        let writable = chan.wmem * 4 <= self.sndbuf;
        Ok(Some(if writable { std::mem::take(&mut chan.writers) } else { Vec::new() }))
    }

    fn receiver(&self, task: &mut Task, c: usize, ctx: &mut Ctx<'_>) -> Result<Ran> {
        let got = if self.pipes {
            self.recv_pipe(task, c, ctx)?
        } else {
            self.recv_socket(task, c, ctx)?
        };
        let Some(writers) = got else { return Ok(Ran::Off) };
        self.messages.add(ctx.cpu(), 1);
        for w in writers {
            self.wake_task(w, ctx);
        }
        task.done += 1;
        if task.done == self.per_task() {
            task.phase = Phase::Exit;
        }
        Ok(Ran::Runnable)
    }

    /// One step of task `t`, under its lock (the start signal is given after it).
    fn run(&self, t: usize, ctx: &mut Ctx<'_>) -> Result<Ran> {
        let mut task = lock(&self.tasks[t].0);
        match task.phase {
            Phase::Spawn => {
                let last = self.spawn(&mut task, ctx);
                drop(task);
                if last {
                    self.start_signal(ctx);
                }
                Ok(Ran::Off)
            }
            Phase::Run => match task.receiver {
                Some(k) => {
                    let c = task.group * self.fds + k;
                    self.receiver(&mut task, c, ctx)
                }
                None => self.sender(t, &mut task, ctx),
            },
            Phase::Exit => {
                self.exit(&mut task, ctx)?;
                Ok(Ran::Off)
            }
            Phase::Ready | Phase::Done => Ok(Ran::Off),
        }
    }

    /// The task CPU `cpu` runs next: its current one, or the next of its run queue after a
    /// context switch; `None` if it has none.
    fn pick(&self, cpu: usize, ctx: &mut Ctx<'_>) -> Option<usize> {
        let mut rq = lock(&self.rqs[cpu].0);
        if let Some(t) = rq.current {
            return Some(t);
        }
        let t = rq.queue.pop_front()?;
        if rq.last.is_some_and(|l| l != t) {
            self.switches.add(ctx.cpu(), 1);
            let cost = if self.threads { self.switch } else { self.switch + self.mm_switch };
            ctx.work(cost);
        }
        rq.current = Some(t);
        rq.last = Some(t);
        rq.slice_end = ctx.now() + self.slice;
        Some(t)
    }
}

impl Workload for Hackbench {
    fn start(&mut self, info: &ModelInfo) -> Result<Vec<u32>> {
        let n = self.groups * 2 * self.fds;
        let mut rqs: Vec<RunQueue> = (0..info.nr_cpus).map(|_| RunQueue::default()).collect();
        self.chans = (0..self.groups * self.fds).map(|_| Padded::default()).collect();
        // Fork balancing puts each new task on an idle CPU; which task lands next to which
        // is drawn from the run's seed: the tasks, shuffled, are dealt round robin.
        let mut order: Vec<usize> = (0..n).collect();
        let mut rng = Rng::new(info.seed ^ 0x6861_636b_6265_6e63);
        for i in (1..n).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let mut cpu_of = vec![0; n];
        for (slot, &task) in order.iter().enumerate() {
            cpu_of[task] = (slot % info.nr_cpus as usize) as u32;
        }
        for (i, &cpu) in cpu_of.iter().enumerate() {
            let (group, k) = (i / (2 * self.fds), i % (2 * self.fds));
            self.tasks.push(Padded(Mutex::new(Task {
                group,
                receiver: (k < self.fds).then_some(k),
                phase: Phase::Spawn,
                done: 0,
                pages: Vec::new(),
                cursor: PageCursor::default(),
            })));
            rqs[cpu as usize].queue.push_back(i);
        }
        self.cpu_of = cpu_of;
        self.rqs = rqs.into_iter().map(|q| Padded(Mutex::new(q))).collect();
        Ok((0..info.nr_cpus).collect())
    }

    fn step(&self, ctx: &mut Ctx<'_>) -> Result<Next> {
        if self.finished.load(SeqCst) == self.tasks.len() {
            return Ok(Next::Done);
        }
        let cpu = ctx.cpu() as usize;
        // Its run queue is empty: a waker queues a task before it wakes this CPU.
        let Some(t) = self.pick(cpu, ctx) else { return Ok(Next::Block) };
        let ran = self.run(t, ctx)?;
        let mut rq = lock(&self.rqs[cpu].0);
        if ran == Ran::Off {
            rq.current = None;
        } else if ctx.now() >= rq.slice_end && !rq.queue.is_empty() {
            rq.queue.push_back(t);
            rq.current = None;
        }
        Ok(Next::Continue)
    }

    fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
        // Every message was read and every task exited: only a run cut short holds pages.
        let mut v = Vec::new();
        for (t, &cpu) in self.tasks.iter_mut().zip(&self.cpu_of) {
            v.extend(part(&mut t.0).pages.drain(..).map(|(p, o)| (cpu, p, o)));
        }
        v
    }

    fn metrics(&self) -> Vec<(String, f64)> {
        let count = |t: &Tally| t.get() as f64;
        let time = self.end.load(SeqCst).saturating_sub(self.start.load(SeqCst));
        vec![
            ("time".into(), time as f64 / 1e12),
            ("messages".into(), count(&self.messages)),
            ("pipe_allocs".into(), count(&self.pipe_allocs)),
            ("pipe_frees".into(), count(&self.pipe_frees)),
            ("spare_reuses".into(), count(&self.spare_reuses)),
            ("switches".into(), count(&self.switches)),
            ("alloc_failures".into(), count(&self.failures)),
        ]
    }

    fn progress(&self) -> f64 {
        let total = (self.tasks.len() as u64 / 2 * self.per_task()).max(1);
        (self.messages.get() as f64 / total as f64).min(1.0)
    }

    fn slab_setup(&self) -> SlabSetup {
        if self.pipes {
            return SlabSetup::default();
        }
        SlabSetup {
            config: SlubConfig::default(),
            caches: vec![
                SlabSpec::new("skbuff_head_cache", SKB_BYTES, 64, SlabFlags::NONE),
                SlabSpec::new("skbuff_small_head", self.head_bytes, 64, SlabFlags::NONE),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::model::RunOutcome;
    use crate::workload;
    use crate::workload::testing::metric;
    use pagealloc::Counter;

    fn run(preset: &str, seed: u64, extra: &[&str]) -> RunOutcome {
        let base = ["groups=2", "fds=5", "loops=40"];
        workload::testing::run("hackbench", &base, extra, 4, preset, seed)
    }

    /// 2 groups × 5 receivers × 5 senders × 40 loops.
    const MESSAGES: f64 = 2.0 * 5.0 * 5.0 * 40.0;

    /// Sockets: every message is an sk_buff and a head from the slab caches, allocated by a
    /// sender and freed by a receiver; the slabs (order 2 for the 576-byte heads with 4 CPUs:
    /// SLUB wants 16 objects a slab) that empty on the receivers' CPUs reach the pagesets as
    /// order > 0 frees, and a run of them triggers free_high (6.7+: once `batch` pages were
    /// freed in a row). Pipes use order-0 pages only: no free_high at all.
    #[test]
    fn socket_slabs_freed_by_receivers_trigger_free_high_and_pipes_never_do() {
        let s = run("modern", 1, &["loops=200"]);
        assert_eq!(metric(&s, "messages"), 5.0 * MESSAGES);
        assert_eq!(s.ops.slab_allocs as f64, 10.0 * MESSAGES);
        assert_eq!(s.ops.slab_frees, s.ops.slab_allocs);
        assert!(s.ops.slabs_new > 10 && s.ops.slabs_freed > 0, "{:?}", s.ops);
        assert!(s.events.get(Counter::DrainFreeHigh) > 0);
        assert_eq!(metric(&s, "pipe_allocs"), 0.0);
        let p = run("modern", 1, &["loops=200", "pipes=1"]);
        assert_eq!(metric(&p, "messages"), 5.0 * MESSAGES);
        assert_eq!(p.ops.slab_allocs, 0);
        assert_eq!(p.events.get(Counter::DrainFreeHigh), 0);
        assert!(metric(&p, "time") > 0.0 && metric(&s, "time") > 0.0);
    }

    /// A pipe page the reader empties becomes the pipe's spare, and the next new page of a
    /// write takes it: fewer page allocations than pages used, at most one page per 40
    /// messages (4096 / 100 bytes) plus the pages emptied before they were full.
    #[test]
    fn pipes_recycle_pages_through_the_spare() {
        let p = run("modern", 2, &["pipes=1"]);
        let (allocs, reuses) = (metric(&p, "pipe_allocs"), metric(&p, "spare_reuses"));
        assert!(reuses > 0.0, "{reuses}");
        assert!(allocs + reuses >= MESSAGES / 40.0, "{allocs} + {reuses}");
        assert!(allocs < MESSAGES / 4.0, "{allocs}");
        // Every page came back: freed by readers, or as spares at exit.
        assert_eq!(metric(&p, "pipe_frees") + 10.0, allocs, "one spare per pipe at exit");
    }

    /// Processes allocate a PGD and `fork_pages` each at start; threads only their stacks.
    /// The difference in page allocations is exact: sockets allocate nothing else but slabs.
    #[test]
    fn processes_allocate_their_address_space_threads_do_not() {
        let proc = run("modern", 3, &["fork_pages=10"]);
        let thr = run("modern", 3, &["fork_pages=10", "threads=1"]);
        let own = |o: &RunOutcome| o.ops.allocs - o.ops.slabs_new;
        let tasks = 2 * 2 * 5;
        assert_eq!(own(&thr), tasks * 4, "4 stack pages a task");
        assert_eq!(own(&proc), tasks * (4 + 1 + 10), "+ PGD + fork_pages");
        assert!(metric(&proc, "switches") > 0.0);
    }

    #[test]
    fn same_seed_same_run_and_the_seed_places_the_tasks() {
        let (a, b) = (run("tune-base", 9, &[]), run("tune-base", 9, &[]));
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        let c = run("tune-base", 10, &[]);
        assert_ne!(format!("{a:?}"), format!("{c:?}"));
    }

    #[test]
    fn parameters_are_checked() {
        let w = workload::find("hackbench").unwrap();
        for bad in ["pipes=2", "threads=0.5", "groups=0", "fds=1.5", "datasize=5000"] {
            assert!(w.params(&[bad.to_string()], 1.0).is_err(), "{bad}");
        }
        // loops is the volume: --scale multiplies it, nothing else.
        let p = w.params(&[], 0.1).unwrap();
        assert_eq!((p.get("loops"), p.get("groups"), p.get("fds")), (100.0, 4.0, 20.0));
    }
}

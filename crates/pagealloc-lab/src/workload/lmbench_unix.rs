//! `lmbench-unix`: lmbench3's `bw_unix -P 16`, AF_UNIX stream bandwidth with 16 reader/writer
//! pairs, as seed 001's third table ran it on the 128-CPU server (docs/workloads.md §4).
//! Section numbers (§) in this file are those of `docs/workloads.md`.
//!
//! What it imitates: each pair is a `socketpair(AF_UNIX, SOCK_STREAM)`; the writer loops
//! `write(64 KiB)`, the reader `read(64 KiB)`. `unix_stream_sendmsg` cuts each write into
//! skbs whose paged part is filled by `alloc_skb_with_frags` with the largest order ≤ 3 the
//! remaining length fills: per 64 KiB write an order-3 block (skb 1, behind a 3,776-byte
//! linear head), then order 2, 1 and 0 (skb 2, behind a 320-byte head) — 15 pages allocated
//! on the writer's CPU, GFP_KERNEL without direct reclaim for orders > 0 (MIGRATE_UNMOVABLE).
//! The writer copies the data in; the skb goes on the reader's queue; the reader copies it
//! out and frees all four blocks on its own CPU. The free side thus sees order 3, 2, 1, 0,
//! 3, 2, 1, 0 … with no allocation in between: the trigger of free_high (§4.2). In flight
//! per pair: `sock_alloc_send_pskb` allocates an skb only while the queued skbs' truesize is
//! below `sk_sndbuf`, and a blocked writer is woken only once it falls to a quarter
//! (`unix_writable`), ≈ 3 writes.
//!
//! The model: one task per process, 16 pairs placed by [`Tasks::place`] (each pair on one
//! node, pairs spread over the nodes, CPUs drawn from the run's seed), migrating inside their
//! node with probability `migrate_prob` per write or read. A writer step builds one skb
//! (allocate its blocks, copy in), queued at the start of its next step; a reader step
//! consumes one skb (copy out, free), whose socket space goes back to the writer at the
//! start of its next step; a call's entry (`write_ns`, `read_ns`) is a step of its own. A
//! model step runs whole when its CPU's clock is the earliest and what it queues is seen by
//! every CPU that steps after it, also one whose clock is behind, so each side's changes
//! come at the start of a step, after the work that leads to them; a reader that finds an
//! skb queued that arrives after its own time waits for it (`arrivals_awaited`, 0 in the
//! model's own order), and a task a migration puts on a CPU whose clock is behind its own
//! time waits for that time ([`TaskClock`]). The
//! skb layout is computed from `write_bytes` and `sndbuf_bytes` by the kernel's rules, so
//! other write sizes give other order sequences. Metric `score`: MB/s (2^20 bytes, as
//! lmbench's `mb()` prints) read by all readers over the run, the sum over pairs that
//! `bw_unix` reports.
//!
//! Volume: the real measurement is benchmp's MEDIUM (2 s) per repetition, 11 repetitions,
//! median. The model runs one repetition, `duration_s` = 2 virtual seconds of transfer; at
//! ≈ 10^5 writes per pair and second each CPU's pageset sees thousands of refills and
//! drains per virtual second, so it is in its steady state long before the end, and the
//! run holds one vmstat tick (the tuned presets' decay of `high`).
//!
//! Known biases: the skb heads (a kmalloc-4k object and a small one) and their slab refills
//! are left out (their order 1-3 slab pages would add unmovable churn on both sides); the
//! per-iteration control pipe (one round trip per 10 MiB) is left out; a read takes whole
//! skbs (the kernel may leave a partly read skb on the queue); system-call and socket costs
//! are assumed figures; migrations stay inside a node.
//!
//! State: each task's own (its place in a write or a read) behind a lock its CPU's steps
//! hold, allocator calls included; each pair's queue (skbs, `wmem`, the sleep flags, bytes
//! read) behind a lock held for bookkeeping only: a writer allocates and fills its blocks,
//! then queues the skb; a reader takes the skb out, then copies and frees its blocks. Which
//! task runs on which CPU ([`Tasks`]) is behind one more bookkeeping lock. Lock order: a
//! task's lock first, then the queue lock or the task lock of [`Tasks`], never those two
//! together. No lost wake: a task marks itself asleep in the same critical section as its
//! last look at the queue, and its peer clears the mark under that lock, then looks up the
//! task's CPU and wakes it (a wake for a running CPU makes its next block return at once).
//! A migration that swaps two tasks may leave a CPU finishing a step of the task that moved
//! away: the task's lock makes its new CPU wait for that step, and a step checks, once it
//! holds the lock, that its task is still on its CPU. So on the real runner's threads the
//! writers' allocations and the readers' frees overlap, while the model, stepping one CPU
//! at a time, makes the same decisions as with one object.

use std::collections::VecDeque;
use std::sync::Mutex;

use anyhow::Result;
use pagealloc::{Gfp, Order, Pfn};

use super::net::{timed, TaskClock, Tasks};
use super::{ns, ParamSpec, Params, WorkloadInfo};
use crate::model::{lock, part, Ctx, Latest, ModelInfo, Next, Workload};

/// The registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "lmbench-unix",
    summary: "lmbench3 bw_unix -P 16: AF_UNIX stream pairs writing 64 KiB (orders 3, 2, 1, 0 \
              per write) freed by the reader on its CPU",
    params: PARAMS,
    default_machine: "icl-2s-128",
    build: |p| Box::new(LmbenchUnix::new(p)),
    fit: super::fit_pairs,
};

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "pairs",
        default: 16.0,
        min: 1.0,
        max: 4096.0,
        unit: "pairs",
        doc: "reader/writer process pairs (bw_unix -P)",
        source: "seed 001: \"16-pair processes\", i.e. bw_unix -P 16 (docs/workloads.md §4.1)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "duration_s",
        default: 2.0,
        min: 0.001,
        max: 3600.0,
        unit: "virtual s",
        doc: "length of the transfer",
        source: "benchmp's MEDIUM, 2 s, one of the real run's 11 repetitions (docs/workloads.md \
                 §4.1); one virtual second holds ≈ 10^5 writes per pair, enough for the pagesets' \
                 steady state, and 2 s include one vmstat tick",
        scaled: true,
        whole: false,
    },
    ParamSpec {
        name: "write_bytes",
        default: 65536.0,
        min: 1.0,
        max: 16_777_216.0,
        unit: "bytes",
        doc: "size of each write and read",
        source: "XFERSIZE = 64 KiB in bw_unix.c (docs/workloads.md §4.1)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "sndbuf_bytes",
        default: 212_992.0,
        min: 8192.0,
        max: 1e9,
        unit: "bytes",
        doc: "sk_sndbuf of the writer's socket: caps the skb size (half of it) and the \
              truesize queued",
        source: "net.core.wmem_default = 212,992 B on common kernels (docs/workloads.md §4.2)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "write_ns",
        default: 300.0,
        min: 0.0,
        max: 1e7,
        unit: "ns",
        doc: "writer's work per write call besides skbs and copies: system call, fd lookup",
        source: "assumed: a system call with a socket lookup on a 2 GHz Ice Lake with the \
                 default mitigations, a few hundred ns",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "skb_ns",
        default: 700.0,
        min: 0.0,
        max: 1e7,
        unit: "ns",
        doc: "writer's work per skb besides page allocations and the copy: head kmalloc, skb \
              set-up, wmem accounting, queueing under the peer's lock, sk_data_ready",
        source: "assumed: a slab allocation, a few locked list operations and a wake-up call, \
                 under 1 µs",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "read_ns",
        default: 300.0,
        min: 0.0,
        max: 1e7,
        unit: "ns",
        doc: "reader's work per read call besides skbs and copies",
        source: "assumed: as write_ns",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "rskb_ns",
        default: 500.0,
        min: 0.0,
        max: 1e7,
        unit: "ns",
        doc: "reader's work per skb besides the copy and the page frees: unlink, head kfree, \
              sock_wfree and the write-space check",
        source: "assumed: a slab free and a few locked list operations",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "wake_ns",
        default: 2000.0,
        min: 0.0,
        max: 1e9,
        unit: "ns",
        doc: "delay from waking a blocked reader or writer to its running",
        source: "assumed: a cross-CPU wake-up (IPI, exit from a shallow idle state, context \
                 switch), a few µs on 2019-2023 Xeons with the performance governor",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "migrate_prob",
        default: 1e-4,
        min: 0.0,
        max: 1.0,
        unit: "per write or read",
        doc: "probability that a process moves to another CPU of its node after a write or a \
              read call",
        source: "assumed: no migration count is published for this run; with 96 of 128 CPUs \
                 idle a wakee mostly returns to its idle previous CPU, so migrations come from \
                 load balancing, some tens per task and second at the default rates",
        scaled: false,
        whole: false,
    },
];

/// `SKB_MAX_HEAD(0)`: the linear part that fits in a page with `skb_shared_info` (320 B).
const SKB_MAX_HEAD: u64 = 4096 - 320;
/// `UNIX_SKB_FRAGS_SZ`: the paged part of a stream skb, `PAGE_SIZE << get_order(32768)`.
const UNIX_SKB_FRAGS_SZ: u64 = 32768;
/// Largest order `alloc_skb_with_frags` tries, `get_order(UNIX_SKB_FRAGS_SZ)`.
const FRAG_MAX_ORDER: u8 = 3;
/// `sizeof(struct sk_buff)` plus slab rounding, charged to truesize (assumed 256 B).
const SKB_STRUCT: u64 = 256;

/// One skb of a write, as `unix_stream_sendmsg` cuts it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SkbPlan {
    /// Payload bytes.
    bytes: u64,
    /// Pages of the paged part.
    pages: u64,
    /// `skb->truesize`: head allocation + struct + pages.
    truesize: u64,
}

/// The skbs of one write of `write` bytes on a socket with `sndbuf` (af_unix.c).
fn plan_write(write: u64, sndbuf: u64) -> Vec<SkbPlan> {
    let mut out = Vec::new();
    let mut left = write;
    while left > 0 {
        // "Keep two messages in the pipe so it schedules better".
        let size =
            left.min((sndbuf / 2).saturating_sub(64).max(1)).min(SKB_MAX_HEAD + UNIX_SKB_FRAGS_SZ);
        let data = size.saturating_sub(SKB_MAX_HEAD).next_multiple_of(4096).min(size);
        let head = size - data;
        // kmalloc rounds the head (+ shared info) to a power of two.
        let head_alloc = (head + 320).next_power_of_two();
        out.push(SkbPlan {
            bytes: size,
            pages: data / 4096,
            truesize: head_alloc + SKB_STRUCT + data,
        });
        left -= size;
    }
    out
}

/// The orders `alloc_skb_with_frags` uses for `pages` pages: largest first, each the
/// largest the remaining count fills.
fn frag_orders(mut pages: u64) -> impl Iterator<Item = u8> {
    let mut order = FRAG_MAX_ORDER;
    std::iter::from_fn(move || {
        while pages > 0 {
            if pages >= 1 << order {
                pages -= 1 << order;
                return Some(order);
            }
            order -= 1;
        }
        None
    })
}

/// An skb on a reader's queue, with the blocks of its paged part.
#[derive(Clone, Debug)]
struct Skb {
    blocks: Vec<(Pfn, Order)>,
    bytes: u64,
    truesize: u64,
    /// When it reached the reader's queue, ps (0 until then).
    at: u64,
}

/// A task's own state: taken by the steps of the CPU it is on, held across their allocator
/// calls (contended only right after a migration swapped it, when its old CPU may still be
/// finishing a step of it).
#[derive(Debug, Default)]
struct Own {
    /// Writer: next skb of the current write.
    next_skb: usize,
    /// Writer: a write call is under way (its system-call cost is charged).
    in_write: bool,
    /// Writer: the skb its last step built, queued at the start of its next, when the work
    /// of building it is done.
    pending: Option<Skb>,
    /// Reader: bytes the current read call may still take (0: no call under way).
    read_left: u64,
    /// Reader: the skb its last step copied out and freed, (truesize, bytes), given back
    /// to the writer's socket at the start of its next step, when that work is done.
    consumed: Option<(u64, u64)>,
    /// Reader: times it found an skb queued that arrives after its own time, and waited
    /// for it (never in the model's clock order).
    awaited: u64,
    clock: TaskClock,
}

/// What a pair's writer and reader share: the reader's queue and the sleep flags.
#[derive(Debug, Default)]
struct Queue {
    skbs: VecDeque<Skb>,
    /// Truesize queued (`sk_wmem_alloc` of the writer's socket).
    wmem: u64,
    writer_waits: bool,
    reader_waits: bool,
    bytes_read: u64,
}

/// One run. Pair `i` is tasks `2 × i` (writer) and `2 × i + 1` (reader).
#[derive(Debug)]
pub struct LmbenchUnix {
    pairs: usize,
    end: u64,
    write_bytes: u64,
    sndbuf: u64,
    write_work: u64,
    skb_work: u64,
    read_work: u64,
    rskb_work: u64,
    wake: u64,
    migrate_prob: f64,
    plan: Vec<SkbPlan>,
    /// Which task runs where; bookkeeping only.
    tasks: Mutex<Tasks>,
    /// Per task.
    own: Vec<Mutex<Own>>,
    /// Per pair.
    queues: Vec<Mutex<Queue>>,
    /// Latest clock seen, for progress.
    latest: Latest,
}

impl LmbenchUnix {
    /// A run with these parameters.
    pub fn new(p: &Params) -> LmbenchUnix {
        let write_bytes = p.count("write_bytes");
        let sndbuf = p.count("sndbuf_bytes");
        LmbenchUnix {
            pairs: p.count("pairs") as usize,
            end: ns(p.get("duration_s") * 1e9),
            write_bytes,
            sndbuf,
            write_work: ns(p.get("write_ns")),
            skb_work: ns(p.get("skb_ns")),
            read_work: ns(p.get("read_ns")),
            rskb_work: ns(p.get("rskb_ns")),
            wake: ns(p.get("wake_ns")),
            migrate_prob: p.get("migrate_prob"),
            plan: plan_write(write_bytes, sndbuf),
            tasks: Mutex::default(),
            own: Vec::new(),
            queues: Vec::new(),
            latest: Latest::default(),
        }
    }

    /// Task `t` stops at the end of the run; its peer is woken to stop too.
    fn stop(&self, t: usize, ctx: &mut Ctx<'_>) -> Next {
        let mut tasks = lock(&self.tasks);
        tasks.finish(t, ctx);
        let peer = tasks.cpu(t ^ 1);
        ctx.wake(peer, ctx.now());
        tasks.idle()
    }

    /// After a call of task `t`: maybe migrate it ([`Tasks::step_migrate`]). On real threads
    /// another task's migration may have swapped `t` off this CPU during the step; it then
    /// moves no further, and this CPU runs on with the task it now has (the model steps one
    /// CPU at a time, so there `t` is always still here).
    fn migrate(&self, t: usize, ctx: &mut Ctx<'_>) -> Option<Next> {
        let mut tasks = lock(&self.tasks);
        if tasks.on(ctx.cpu()) != Some(t) {
            return Some(Next::Continue);
        }
        tasks.step_migrate(t, self.migrate_prob, ctx)
    }

    /// Wake task `t`'s CPU `after` from now: its CPU is looked up after the queue's lock is
    /// let go, so a task that migrated since is woken where it is now.
    fn wake_task(&self, t: usize, after: u64, ctx: &mut Ctx<'_>) {
        let cpu = lock(&self.tasks).cpu(t);
        ctx.wake(cpu, ctx.now() + after);
    }

    /// The writer's step: queue the skb its last step built (waking a sleeping reader),
    /// then build the next — its blocks allocated and filled, its work done — which is
    /// queued at the start of the step after, so that a reader whose clock is behind never
    /// finds it before it is written.
    fn writer(&self, t: usize, own: &mut Own, ctx: &mut Ctx<'_>) -> Result<Next> {
        let i = t / 2;
        if let Some(mut skb) = own.pending.take() {
            skb.at = ctx.now();
            let wake_reader = {
                let mut q = lock(&self.queues[i]);
                q.skbs.push_back(skb);
                std::mem::take(&mut q.reader_waits)
            };
            if wake_reader {
                self.wake_task(t + 1, self.wake, ctx);
            }
            if !own.in_write {
                // The write call is over.
                if let Some(next) = self.migrate(t, ctx) {
                    return Ok(next);
                }
            }
        }
        if !own.in_write {
            // The next write call: its entry's work first, its look at the socket after.
            ctx.work(self.write_work);
            own.in_write = true;
            return Ok(Next::Continue);
        }
        let plan = &self.plan[own.next_skb];
        let (pages, bytes, truesize) = (plan.pages, plan.bytes, plan.truesize);
        {
            // Marked asleep under the lock the reader lowers wmem under: no lost wake.
            let mut q = lock(&self.queues[i]);
            if q.wmem >= self.sndbuf {
                q.writer_waits = true;
                return Ok(Next::Block);
            }
            // sock_alloc_send_pskb charges the skb to the socket as it allocates it.
            q.wmem += truesize;
        }
        let mut blocks = Vec::with_capacity(FRAG_MAX_ORDER as usize + 1);
        for order in frag_orders(pages) {
            // alloc_skb_with_frags: orders > 0 without direct reclaim, compound, quiet;
            // on failure the next lower order.
            let mut o = order;
            let pfn = loop {
                let gfp = if o > 0 {
                    (Gfp::KERNEL & !Gfp::DIRECT_RECLAIM) | Gfp::COMP | Gfp::NOWARN
                } else {
                    Gfp::KERNEL
                };
                match ctx.alloc(gfp, Order(o)) {
                    Some(p) => break Some(p),
                    None if o > 0 => o -= 1,
                    None => break None,
                }
            };
            let Some(pfn) = pfn else { break };
            // copy_from_user into the block.
            ctx.touch(pfn, 4096 << o);
            blocks.push((pfn, Order(o)));
        }
        ctx.work(self.skb_work);
        own.pending = Some(Skb { blocks, bytes, truesize, at: 0 });
        own.next_skb += 1;
        if own.next_skb == self.plan.len() {
            own.next_skb = 0;
            own.in_write = false;
        }
        Ok(Next::Continue)
    }

    /// The reader's step: give back the skb its last step consumed (the writer's socket
    /// space, a sleeping writer woken), then take the next skb, copy it out and free its
    /// blocks; that one is given back at the start of the step after, when the work is done.
    fn reader(&self, t: usize, own: &mut Own, ctx: &mut Ctx<'_>) -> Result<Next> {
        let i = t / 2;
        if let Some((truesize, bytes)) = own.consumed.take() {
            let wake_writer = {
                let mut q = lock(&self.queues[i]);
                q.wmem -= truesize;
                q.bytes_read += bytes;
                // unix_write_space: wake the writer once the queue is down to a quarter of
                // sndbuf.
                let wake = q.writer_waits && q.wmem * 4 <= self.sndbuf;
                q.writer_waits &= !wake;
                wake
            };
            if wake_writer {
                self.wake_task(t - 1, self.wake, ctx);
            }
            if own.read_left == 0 {
                // The read call is over.
                if let Some(next) = self.migrate(t, ctx) {
                    return Ok(next);
                }
            }
        }
        if own.read_left == 0 {
            // The next read call: its entry's work first, its look at the queue after.
            ctx.work(self.read_work);
            own.read_left = self.write_bytes;
            return Ok(Next::Continue);
        }
        let skb = {
            // The last look at the queue and the mark asleep are one critical section.
            let mut q = lock(&self.queues[i]);
            if let Some(early) = q.skbs.front().map(|s| s.at).filter(|&at| ctx.now() < at) {
                // Queued by a CPU whose clock is ahead (real threads, a skewed schedule):
                // it is not there before it arrives.
                own.awaited += 1;
                return Ok(Next::SleepUntil(early));
            }
            let skb = q.skbs.pop_front();
            q.reader_waits |= skb.is_none();
            skb
        };
        let Some(skb) = skb else {
            // The call returns what it copied (SO_RCVLOWAT 1); the next one sleeps.
            if own.read_left < self.write_bytes {
                own.read_left = 0;
                if let Some(next) = self.migrate(t, ctx) {
                    return Ok(next);
                }
            }
            return Ok(Next::Block);
        };
        for &(pfn, order) in &skb.blocks {
            // copy_to_user from the block, then consume_skb frees it on this CPU.
            ctx.touch(pfn, 4096 << order.0);
            ctx.free(pfn, order)?;
        }
        ctx.work(self.rskb_work);
        own.consumed = Some((skb.truesize, skb.bytes));
        own.read_left = own.read_left.saturating_sub(skb.bytes);
        Ok(Next::Continue)
    }
}

impl Workload for LmbenchUnix {
    fn start(&mut self, info: &ModelInfo) -> Result<Vec<u32>> {
        let tasks = Tasks::place(info, self.pairs, 2, 0x6c6d_6265_6e63_6875)?;
        let cpus = tasks.all_cpus();
        self.tasks = Mutex::new(tasks);
        self.own = (0..2 * self.pairs).map(|_| Mutex::default()).collect();
        self.queues = (0..self.pairs).map(|_| Mutex::default()).collect();
        Ok(cpus)
    }

    fn step(&self, ctx: &mut Ctx<'_>) -> Result<Next> {
        let cpu = ctx.cpu();
        let t = match lock(&self.tasks).on_or_idle(cpu) {
            Ok(t) => t,
            Err(idle) => return Ok(idle),
        };
        let mut own = lock(&self.own[t]);
        if !Tasks::still_on(&self.tasks, cpu, t) {
            return Ok(Next::Continue);
        }
        timed(
            ctx,
            |o: &mut Own| &mut o.clock,
            &mut *own,
            |ctx, own| {
                self.latest.note(ctx.cpu(), ctx.now());
                if ctx.now() >= self.end {
                    return Ok(self.stop(t, ctx));
                }
                if t % 2 == 0 {
                    self.writer(t, own, ctx)
                } else {
                    self.reader(t, own, ctx)
                }
            },
        )
    }

    fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
        let tasks = part(&mut self.tasks);
        let mut v = Vec::new();
        for (i, q) in self.queues.iter_mut().enumerate() {
            let reader = tasks.cpu(2 * i + 1);
            for skb in part(q).skbs.drain(..) {
                v.extend(skb.blocks.into_iter().map(|(p, o)| (reader, p, o)));
            }
            // An skb built and not yet queued.
            let writer = tasks.cpu(2 * i);
            if let Some(skb) = part(&mut self.own[2 * i]).pending.take() {
                v.extend(skb.blocks.into_iter().map(|(p, o)| (writer, p, o)));
            }
        }
        v
    }

    fn metrics(&self) -> Vec<(String, f64)> {
        let bytes: u64 = self.queues.iter().map(|q| lock(q).bytes_read).sum();
        let awaited: u64 = self.own.iter().map(|o| lock(o).awaited).sum();
        let secs = self.end as f64 / 1e12;
        vec![
            ("score".into(), bytes as f64 / f64::from(1 << 20) / secs),
            ("bytes".into(), bytes as f64),
            ("arrivals_awaited".into(), awaited as f64),
            ("migrations".into(), lock(&self.tasks).migrations() as f64),
        ]
    }

    fn progress(&self) -> f64 {
        (self.latest.get() as f64 / self.end.max(1) as f64).min(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::small_setup;
    use crate::model::{Model, RunOutcome};
    use crate::workload;
    use pagealloc::{CacheInfo, Counter};

    #[test]
    fn a_64k_write_is_an_order_3_skb_then_orders_2_1_0() {
        let plan = plan_write(65536, 212_992);
        assert_eq!(plan.len(), 2);
        assert_eq!((plan[0].bytes, plan[0].pages), (36_544, 8));
        assert_eq!((plan[1].bytes, plan[1].pages), (28_992, 7));
        assert_eq!(plan.iter().map(|s| s.bytes).sum::<u64>(), 65536);
        let orders: Vec<u8> = plan.iter().flat_map(|s| frag_orders(s.pages)).collect();
        assert_eq!(orders, [3, 2, 1, 0]);
        // ≈ 3 writes fit in sk_sndbuf (§4.2).
        let per_write: u64 = plan.iter().map(|s| s.truesize).sum();
        assert_eq!(212_992 / per_write, 3);
        // A small socket buffer caps the skb at half of it.
        let small = plan_write(65536, 16384);
        assert!(small.iter().all(|s| s.bytes <= 8192 - 64));
    }

    fn run(preset: &str, seed: u64, extra: &[&str]) -> RunOutcome {
        let info = workload::find("lmbench-unix").unwrap();
        let mut o: Vec<String> = vec!["pairs=2".into(), "duration_s=0.004".into()];
        o.extend(extra.iter().map(|s| s.to_string()));
        let params = info.params(&o, 1.0).unwrap();
        let mut w = (info.build)(&params);
        let mut setup = small_setup(6, 512, preset, seed);
        // A 1.4 MiB cache share per CPU, as on the seed's server: FREE_HIGH_BATCH is set.
        setup
            .map
            .set_cpu_cache(CacheInfo { llc_slice_bytes: 768 << 10, data_slices_bytes: 1432 << 10 });
        let mut m = Model::new(setup).unwrap();
        m.run(w.as_mut(), &mut |_| {}).unwrap()
    }

    fn metric(o: &RunOutcome, name: &str) -> f64 {
        o.workload.iter().find(|(k, _)| k == name).unwrap().1
    }

    #[test]
    fn pairs_move_data_and_return_every_page() {
        let o = run("tune-base", 1, &[]);
        let score = metric(&o, "score");
        let bytes = metric(&o, "bytes");
        assert!(bytes >= 65536.0 * 10.0, "{bytes}");
        // Positive, and below what copying alone at the machine's LLC write rate would allow:
        // 2 pairs, each 4 KiB page charged once (at its first access, see `net.rs`).
        let topology = small_setup(6, 512, "tune-base", 1).topology;
        let hot_ns = crate::model::lines::Prices::of(&topology.hierarchy).page_llc as f64 / 1e3;
        let bound = 2.0 * 4096.0 / (hot_ns * 1e-9) / f64::from(1 << 20);
        assert!(score > 0.0 && score < bound, "{score} vs {bound}");
        // Four allocations per write, each freed (the rest came back through held()).
        let writes = bytes / 65536.0;
        assert!(o.ops.allocs as f64 >= 4.0 * writes);
        assert!(o.ops.frees as f64 >= 4.0 * (writes - 4.0));
        assert_eq!(o.ops.alloc_failures, 0);
    }

    /// An skb reaches the reader's queue when the work of building it is done, at the start
    /// of the writer's next step, so in the model's clock order a reader never finds one
    /// queued that arrives after its own time (`arrivals_awaited`). Queued by the step that
    /// built it, as before, the readers of the first of these runs took 931 skbs early.
    #[test]
    fn no_skb_is_read_before_it_arrives() {
        for (preset, seed, extra) in [
            ("tune-base", 1, None),
            ("tune-p3", 2, None),
            ("tune-base", 3, Some("migrate_prob=0.01")),
        ] {
            let o = run(preset, seed, extra.as_slice());
            assert!(metric(&o, "bytes") > 1e6, "{preset} {seed}: {}", metric(&o, "bytes"));
            assert_eq!(metric(&o, "arrivals_awaited"), 0.0, "{preset} {seed}");
        }
    }

    /// With only order 0 on the pagesets (hpc-revert), the pagesets see exactly the one
    /// order-0 block of each write: allocated by the writers, freed by the readers.
    #[test]
    fn one_order_0_block_per_write() {
        let o = run("hpc-revert", 4, &[]);
        // Reads take skb 1 (36,544 B) then skb 2 (28,992 B): each pair's whole writes read
        // = the order-0 blocks freed. `bytes` is the sum over the 2 pairs, and each may be
        // part-way through a write, so the whole writes are its floor or one fewer.
        let read = (metric(&o, "bytes") / 65536.0).floor() as u64;
        let (a, f) = (o.events.get(Counter::PcpAlloc), o.events.get(Counter::PcpFree));
        assert!(f == read || f + 1 == read, "{f} order-0 frees, {read} whole writes read");
        // Writes in flight at the end: at most sk_sndbuf's worth (≈ 3) per pair, plus one.
        assert!(a >= f && a - f <= 2 * 4, "{a} order-0 allocations, {f} frees");
        // Four blocks per write; a pair may stop between its two skbs.
        assert!(o.ops.allocs >= 4 * a && o.ops.allocs <= 4 * a + 2, "{}", o.ops.allocs);
    }

    #[test]
    fn same_seed_same_run() {
        let (a, b) = (run("tune-p3", 9, &[]), run("tune-p3", 9, &[]));
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        let c = run("tune-p3", 10, &[]);
        assert_ne!(format!("{a:?}"), format!("{c:?}"));
    }

    /// The readers free orders 3, 2, 1, 0 with no allocation: under the 6.6 rule a free_high
    /// drain follows every overflow; patch 1 needs two consecutive high-order frees, patch 3
    /// keeps a batch on CPUs with a large cache. The direction is the allocator's property.
    #[test]
    fn reader_frees_trigger_free_high_and_the_series_cuts_it() {
        let base = run("tune-base", 2, &[]);
        let p3 = run("tune-p3", 2, &[]);
        let fh = |o: &RunOutcome| o.events.get(Counter::DrainFreeHigh);
        assert!(fh(&base) > 100, "{}", fh(&base));
        assert!(fh(&p3) <= fh(&base), "{} vs {}", fh(&p3), fh(&base));
        // Before 5.18 there is no free_high at all.
        let vanilla = run("hpc-vanilla", 2, &[]);
        assert_eq!(fh(&vanilla), 0);
        assert!(vanilla.events.get(Counter::DrainHigh) > 0);
        // Orders 1-3 are cached per CPU: the writers refill, the readers' frees hit the PCP.
        assert!(base.events.get(Counter::PcpRefillPages) > 0);
        assert!(base.events.get(Counter::PcpFree) > 0);
    }

    #[test]
    fn migrations_move_tasks_and_the_run_still_ends() {
        let o = run("modern", 3, &["migrate_prob=0.2"]);
        assert!(metric(&o, "migrations") > 10.0);
        assert!(metric(&o, "bytes") > 0.0);
    }

    /// Seed 001's machine and presets at full size: `cargo test --release -p pagealloc-lab
    /// lmbench_unix_full_size -- --ignored --nocapture`. `WL_PRESETS` narrows the presets,
    /// `WL_PARAMS=a=1,b=2` overrides parameters.
    #[test]
    #[ignore]
    fn lmbench_unix_full_size_seed001() {
        let presets = std::env::var("WL_PRESETS").unwrap_or_else(|_| {
            "tune-base,tune-p1,tune-p3,tune-p5,tune-p7,tune-p9,tune-p10".into()
        });
        let params: Vec<String> = std::env::var("WL_PARAMS")
            .map(|s| s.split(',').filter(|x| !x.is_empty()).map(String::from).collect())
            .unwrap_or_default();
        for preset in presets.split(',') {
            println!("lmbench-unix {preset} {params:?}");
            let setup = workload::net::tests::icl_2s_128(preset, 1);
            workload::net::tests::run_and_print("lmbench-unix", &params, setup);
        }
    }
}

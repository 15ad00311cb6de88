//! `netperf-udp`: mmtests' netperf-udp, one UDP_STREAM pair over loopback per message size
//! (docs/workloads.md §13). Section numbers (§) in this file are those of `docs/workloads.md`.
//!
//! What it imitates: `netperf -t UDP_STREAM -- -m SIZE -M SIZE -P 15895` and its `netserver`,
//! unbound, with the default socket buffers. Each `sendto` builds one datagram
//! (`ip_make_skb`): an `sk_buff` from `skbuff_head_cache` and a linear head holding the
//! headers and, when the datagram fits (`fraglen + hh_len + 15 < SKB_MAX_ALLOC`, 16,064 bytes
//! with 4 KiB pages), the payload too. The head is a slab object — `skbuff_small_head` up to
//! 576 bytes, else the smallest kmalloc cache — or, above kmalloc's 8 KiB, a "large kmalloc":
//! a compound block straight from the page allocator (order 2 for an 8 KiB message). A
//! larger datagram keeps only its headers in the head and copies the payload into the
//! sending task's page frag, order-3 pages shared with the next datagrams exactly as
//! `netperf-tcp`'s segments share them. Loopback orphans the skb (the sender's send buffer
//! never fills) and delivers it in the sender's softirq: `udp_queue_rcv_skb` queues it on the
//! receiver's socket unless the queued truesize would pass `sk_rcvbuf`, in which case it is
//! dropped — freed on the sender's CPU. The receiver copies each datagram out and frees it on
//! its CPU. So unlike TCP, both CPUs free: the receiver what it read, the sender what was
//! dropped. mmtests reports the rate sent and the rate received.
//!
//! Tasks: two, placed by [`Tasks::place`] on two CPUs of one node drawn from the run's seed.
//! Metrics `recv` and `send`: Mbit/s (10^6 bits/s) of payload received and sent.
//!
//! Volume: netperf's default 10 s test length; mmtests' `-i 3,3` runs it three times per
//! size and 5 iterations; the model runs one 10 s measurement, scaled by `--scale`.
//!
//! When each side sees the other's work: a model step runs whole when its CPU's clock is the
//! earliest, and what it queues is seen by every CPU that steps after it, also one whose
//! clock is behind. So a datagram is built and sent in one step (`send_ns`, the copies,
//! `xmit_ns`) and reaches the receiver's socket at the start of the sender's next; a read
//! gives its truesize back to the socket at the start of the receiver's next step; a
//! receiver that finds a datagram queued that arrives after its own time waits for it
//! (`arrivals_awaited`, 0 in the model's own order), and a task a migration puts on a CPU
//! whose clock is behind its own time waits for that time. Before, the receiver read
//! datagrams the sender had not yet sent (489 in the first run checked) and freed them so
//! early that every frag page came back in place (`reused_in_place` 1.12 M of 1.12 M refills
//! in `run netperf-udp --json --no-save`, against none now: the receiver still holds the
//! page's last datagram when the sender's next copy looks at it).
//!
//! Known biases: the UDP header and IP options are fixed (IPv4, no options); the softirq work
//! (IP, loopback, UDP receive) is one assumed figure charged to the sender; the socket's
//! busylock, the receive queue's two-list split and `sk_forward_alloc` accounting are not
//! modelled; the receiver frees each datagram at once (the kernel may defer part of it to the
//! next read); no migration by default.

use std::collections::VecDeque;
use std::sync::Mutex;

use anyhow::{anyhow, Result};
use pagealloc::{Gfp, Order, Pfn};
use pagealloc_slab::{SlabFlags, SlabObject, SlubConfig};

use super::net::{
    order_of, timed, FragOwner, FragPages, PageCursor, Refill, TaskClock, Tasks, FRAG_BYTES,
    SKB_BYTES, SMALL_HEAD,
};
use super::{ns, ParamSpec, Params, WorkloadInfo};
use crate::model::slab::{CacheId, SlabSetup, SlabSpec};
use crate::model::{lock, part, Ctx, Latest, ModelInfo, Next, Padded, Workload};

/// The registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "netperf-udp",
    summary: "netperf UDP_STREAM over loopback: slab, large-kmalloc or order-3 page frag \
              datagrams freed by the receiver, or by the sender when the receive buffer is full",
    params: PARAMS,
    default_machine: "skylake-1s",
    build: |p| Box::new(NetperfUdp::new(p)),
    fit: super::fits_any,
};

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "message_size",
        default: 16384.0,
        min: 1.0,
        max: 65_507.0,
        unit: "bytes",
        doc: "send and receive size (netperf -m SIZE -M SIZE); mmtests runs 64, 128, 256, \
              1024, 2048, 3312, 4096, 8192, 16384",
        source: "mmtests NETPERF_BUFFER_SIZES of config-network-netperf-unbound \
                 (docs/workloads.md §13.1); the default is the table's last row; 65,507 is \
                 UDP's largest payload over IPv4",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "duration_s",
        default: 10.0,
        min: 0.0001,
        max: 3600.0,
        unit: "virtual s",
        doc: "length of the run",
        source: "netperf's default test length, 10 s: mmtests passes no -l (docs/workloads.md \
                 §13.1)",
        scaled: true,
        whole: false,
    },
    ParamSpec {
        name: "rcvbuf_bytes",
        default: 212_992.0,
        min: 4096.0,
        max: 1e9,
        unit: "bytes",
        doc: "sk_rcvbuf of the receiving socket: a datagram that would take the queued \
              truesize past it is dropped",
        source: "net.core.rmem_default = 212,992 B on common kernels; mmtests passes -s/-S only \
                 to a remote server (docs/workloads.md §13.1)",
        scaled: false,
        whole: true,
    },
    FRAG_BYTES,
    ParamSpec {
        name: "send_ns",
        default: 1000.0,
        min: 0.0,
        max: 1e7,
        unit: "ns",
        doc: "sender's work per datagram besides allocations and copies: system call, route \
              and socket lookups, ip_make_skb's bookkeeping",
        source: "assumed: a UDP sendto with a cached route, about a µs on a 2017-2022 desktop \
                 core",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "xmit_ns",
        default: 1500.0,
        min: 0.0,
        max: 1e7,
        unit: "ns",
        doc: "work per datagram in the sender's softirq: IP output, loopback transmit, \
              udp_rcv, the socket lookup and queueing (or the drop)",
        source: "assumed: a loopback transmit and UDP receive path, one to two µs",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "recv_ns",
        default: 600.0,
        min: 0.0,
        max: 1e7,
        unit: "ns",
        doc: "receiver's work per datagram besides the copy and the frees: system call, \
              dequeue, address copy-out",
        source: "assumed: as netperf-tcp's recv_ns, plus the dequeue",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "wake_ns",
        default: 2000.0,
        min: 0.0,
        max: 1e9,
        unit: "ns",
        doc: "delay from waking the sleeping receiver to its running",
        source: "assumed: as netperf-tcp's wake_ns",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "migrate_prob",
        default: 0.0,
        min: 0.0,
        max: 1.0,
        unit: "per datagram",
        doc: "probability that a task moves to another CPU after a datagram",
        source: "assumed: as netperf-tcp's, an idle machine keeps a wakee on its previous CPU",
        scaled: false,
        whole: false,
    },
];

/// IPv4 and UDP headers (no options).
const HEADERS: u64 = 28;
/// `hh_len + 15` that `__ip_append_data` adds to the allocation (loopback's 16-byte
/// `LL_RESERVED_SPACE`).
const ALLOC_EXTRA: u64 = 16 + 15;
/// `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))`, x86-64.
const SHINFO: u64 = 320;
/// `SKB_MAX_ALLOC`: `SKB_WITH_OVERHEAD(PAGE_SIZE << 2)`, the largest linear datagram.
const SKB_MAX_ALLOC: u64 = (4096 << 2) - SHINFO;
/// The largest kmalloc cache (two pages); larger heads are large kmallocs.
const KMALLOC_MAX_CACHE: u64 = 8192;
const SKB_CACHE: CacheId = CacheId(0);
const HEAD_CACHE: CacheId = CacheId(1);

/// Where a datagram's head comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Head {
    /// A slab object of this many bytes (cache [`HEAD_CACHE`]).
    Slab(u64),
    /// A large kmalloc of this order.
    Large(Order),
}

/// How `ip_make_skb` builds one datagram of a given payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    head: Head,
    /// Payload bytes in the page frag (0: all in the head).
    paged: u64,
    /// `skb->truesize`.
    truesize: u64,
}

/// The datagram layout for `size` payload bytes (Linux 6.x `__ip_append_data`,
/// `__alloc_skb`, `kmalloc_reserve`).
fn layout(size: u64) -> Layout {
    let fraglen = size + HEADERS;
    let (linear, paged) =
        if fraglen + ALLOC_EXTRA < SKB_MAX_ALLOC { (fraglen, 0) } else { (HEADERS, size) };
    let obj = (linear + ALLOC_EXTRA).next_multiple_of(64) + SHINFO;
    let head = if obj <= SMALL_HEAD {
        Head::Slab(SMALL_HEAD)
    } else if obj <= KMALLOC_MAX_CACHE {
        // kmalloc-1k … kmalloc-8k (every size here is above 512).
        Head::Slab(obj.next_power_of_two())
    } else {
        Head::Large(Order(order_of(obj)))
    };
    let alloc = match head {
        Head::Slab(b) => b,
        Head::Large(o) => 4096 << o.0,
    };
    Layout { head, paged, truesize: alloc + SKB_BYTES + paged }
}

/// A datagram's head block.
#[derive(Clone, Copy, Debug)]
enum HeadBlock {
    Slab(SlabObject),
    Large(Pfn),
}

/// A datagram queued on the receiver: its blocks and the frag pages (slot, offset, length)
/// holding its payload.
#[derive(Debug)]
struct Datagram {
    skb: SlabObject,
    head: HeadBlock,
    pieces: Vec<(usize, u64, u64)>,
    /// When it reached the receiver's queue, ps (0 until then).
    at: u64,
}

/// The receiver's socket as both tasks share it: the queued datagrams and their truesize,
/// the sender's frag pages with the datagrams' references on them, and whether the receiver
/// sleeps. Locked for bookkeeping only (lock order: a task's own state, then this; `tasks`
/// is never held with either).
#[derive(Debug, Default)]
struct Socket {
    pages: FragPages,
    queue: VecDeque<Datagram>,
    /// Truesize queued (`sk_rmem_alloc`).
    rmem: u64,
    receiver_waits: bool,
}

/// The sending task's own state.
#[derive(Debug)]
struct Sender {
    frag: FragOwner,
    wcursor: PageCursor,
    /// The datagram the last step built and sent, which reaches the receiver's socket at
    /// the start of the next, when the work of sending it is done.
    pending: Option<Datagram>,
    clock: TaskClock,
    sent: u64,
    dropped: u64,
    large_allocs: u64,
    failures: u64,
}

/// The receiving task's own state.
#[derive(Debug, Default)]
struct Receiver {
    rcursor: PageCursor,
    received: u64,
    /// The truesize of the datagram the last step read, given back to the socket at the
    /// start of the next, when the read's work is done.
    read: Option<u64>,
    /// Times the receiver found a datagram queued that arrives after its own time, and
    /// waited for it: never in the model's clock order.
    awaited: u64,
    clock: TaskClock,
}

/// One run. The two tasks' steps overlap on the real runner: each task's state is its
/// own, behind a lock only its steps take (a task runs on one CPU at a time); the socket
/// is shared behind a lock held for bookkeeping only, never across an allocator call or a
/// copy.
#[derive(Debug)]
pub struct NetperfUdp {
    msg: u64,
    end: u64,
    rcvbuf: u64,
    send_work: u64,
    xmit_work: u64,
    recv_work: u64,
    wake: u64,
    migrate_prob: f64,
    layout: Layout,
    tasks: Mutex<Tasks>,
    /// The two tasks' own states, each on lines of its own ([`Padded`]): side by side, the
    /// two CPUs' locks shared a line that every real step moved between cores.
    sender: Padded<Mutex<Sender>>,
    receiver: Padded<Mutex<Receiver>>,
    socket: Mutex<Socket>,
    /// The latest step's time, for progress.
    latest: Latest,
}

impl NetperfUdp {
    /// A run with these parameters.
    pub fn new(p: &Params) -> NetperfUdp {
        let msg = p.count("message_size");
        NetperfUdp {
            msg,
            end: ns(p.get("duration_s") * 1e9),
            rcvbuf: p.count("rcvbuf_bytes"),
            send_work: ns(p.get("send_ns")),
            xmit_work: ns(p.get("xmit_ns")),
            recv_work: ns(p.get("recv_ns")),
            wake: ns(p.get("wake_ns")),
            migrate_prob: p.get("migrate_prob"),
            layout: layout(msg),
            tasks: Mutex::new(Tasks::default()),
            sender: Padded(Mutex::new(Sender {
                frag: FragOwner::new(Order(order_of(p.count("frag_bytes")))),
                wcursor: PageCursor::default(),
                pending: None,
                clock: TaskClock::default(),
                sent: 0,
                dropped: 0,
                large_allocs: 0,
                failures: 0,
            })),
            receiver: Padded::default(),
            socket: Mutex::new(Socket::default()),
            latest: Latest::default(),
        }
    }

    /// Free a datagram on this CPU (`kfree_skb` of a drop, `consume_skb` of a read): its
    /// slab objects or head block, then its frag references, the pages whose last reference
    /// it held freed after the socket is let go.
    fn free(&self, d: Datagram, ctx: &mut Ctx<'_>) -> Result<()> {
        match d.head {
            HeadBlock::Slab(o) => ctx.slab_free(HEAD_CACHE, o)?,
            HeadBlock::Large(pfn) => {
                let Head::Large(order) = self.layout.head else { unreachable!("large head") };
                ctx.free(pfn, order)?;
            }
        }
        ctx.slab_free(SKB_CACHE, d.skb)?;
        let to_free: Vec<(Pfn, Order)> = {
            let mut sock = lock(&self.socket);
            d.pieces.iter().filter_map(|&(slot, _, _)| sock.pages.put(slot)).collect()
        };
        for (pfn, order) in to_free {
            ctx.free(pfn, order)?;
        }
        Ok(())
    }

    /// `skb_page_frag_refill` on the sender's frag: the slot and frame of a usable page,
    /// or `None` if none could be had. The allocation runs without the socket locked.
    fn refill(&self, s: &mut Sender, ctx: &mut Ctx<'_>) -> Option<(usize, Pfn, Order)> {
        {
            let mut sock = lock(&self.socket);
            if let Refill::Ready(slot, pfn) = s.frag.refill_start(&mut sock.pages) {
                return Some((slot, pfn, sock.pages.pages[slot].order));
            }
        }
        let (pfn, order) = s.frag.alloc_page(ctx)?;
        Some((s.frag.install(&mut lock(&self.socket).pages, pfn, order), pfn, order))
    }

    /// Build one datagram on the sender's CPU: `None` if memory ran out (counted).
    fn build(&self, s: &mut Sender, ctx: &mut Ctx<'_>) -> Result<Option<Datagram>> {
        let Some(skb) = ctx.slab_alloc(SKB_CACHE, Gfp::KERNEL, None)? else {
            s.failures += 1;
            return Ok(None);
        };
        let linear = self.msg - self.layout.paged;
        let head = match self.layout.head {
            Head::Slab(bytes) => match ctx.slab_alloc(HEAD_CACHE, Gfp::KERNEL, None)? {
                Some(o) => {
                    let at = u64::from(o.index()) * bytes;
                    s.wcursor.copy(ctx, Pfn(o.slab().0 + at / 4096), at % 4096, linear);
                    Some(HeadBlock::Slab(o))
                }
                None => None,
            },
            Head::Large(order) => match ctx.alloc(Gfp::KERNEL | Gfp::COMP, order) {
                Some(pfn) => {
                    s.large_allocs += 1;
                    s.wcursor.reset();
                    s.wcursor.copy(ctx, pfn, 0, linear);
                    Some(HeadBlock::Large(pfn))
                }
                None => None,
            },
        };
        let Some(head) = head else {
            s.failures += 1;
            ctx.slab_free(SKB_CACHE, skb)?;
            return Ok(None);
        };
        let mut d = Datagram { skb, head, pieces: Vec::new(), at: 0 };
        let mut left = self.layout.paged;
        while left > 0 {
            let Some((slot, pfn, order)) = self.refill(s, ctx) else {
                s.failures += 1;
                self.free(d, ctx)?;
                return Ok(None);
            };
            let off = s.frag.off;
            let n = left.min((4096 << order.0) - off);
            s.frag.cursor.copy(ctx, pfn, off, n);
            lock(&self.socket).pages.pages[slot].refs += 1;
            d.pieces.push((slot, off, n));
            s.frag.off += n;
            left -= n;
        }
        Ok(Some(d))
    }

    /// The sender's step: the datagram its last step sent reaches the receiver's socket
    /// (queued, or dropped if the socket is full), then the next is built and sent (its
    /// work done), to arrive at the start of the step after: a receiver whose clock is
    /// behind never finds it before it was sent.
    fn sender(&self, s: &mut Sender, ctx: &mut Ctx<'_>) -> Result<Next> {
        self.deliver(s, ctx)?;
        ctx.work(self.send_work);
        if let Some(d) = self.build(s, ctx)? {
            s.sent += self.msg;
            ctx.work(self.xmit_work);
            s.pending = Some(d);
        }
        Ok(self.migrate(0, ctx))
    }

    /// The datagram the sender's last step sent, if any, reaches the receiver's socket:
    /// queued (waking a sleeping receiver), or dropped in the sender's softirq if the
    /// receive queue is full.
    fn deliver(&self, s: &mut Sender, ctx: &mut Ctx<'_>) -> Result<()> {
        let Some(mut d) = s.pending.take() else { return Ok(()) };
        d.at = ctx.now();
        let queued = {
            let mut sock = lock(&self.socket);
            if sock.rmem + self.layout.truesize > self.rcvbuf {
                Err(d)
            } else {
                sock.rmem += self.layout.truesize;
                sock.queue.push_back(d);
                Ok(std::mem::take(&mut sock.receiver_waits))
            }
        };
        match queued {
            Err(d) => {
                s.dropped += 1;
                self.free(d, ctx)?;
            }
            Ok(true) => {
                let to = lock(&self.tasks).cpu(1);
                ctx.wake(to, ctx.now() + self.wake);
            }
            Ok(false) => {}
        }
        Ok(())
    }

    /// The receiver's step: the datagram its last step read gives its truesize back to
    /// the socket (its read's work done), then the next is taken, copied out and freed.
    fn receiver(&self, r: &mut Receiver, ctx: &mut Ctx<'_>) -> Result<Next> {
        if let Some(truesize) = r.read.take() {
            lock(&self.socket).rmem -= truesize;
        }
        // The datagram's frag pages, read while the socket is locked: its references keep
        // them until it is freed.
        let (d, pfns) = {
            let mut sock = lock(&self.socket);
            let Some(at) = sock.queue.front().map(|d| d.at) else {
                sock.receiver_waits = true;
                return Ok(Next::Block);
            };
            if ctx.now() < at {
                // Queued by a CPU whose clock is ahead (real threads, a skewed schedule):
                // it is not there before it arrives.
                r.awaited += 1;
                return Ok(Next::SleepUntil(at));
            }
            let Some(d) = sock.queue.pop_front() else {
                return Err(anyhow!("netperf-udp: the queue emptied under its only reader"));
            };
            let pfns: Vec<Pfn> =
                d.pieces.iter().map(|&(slot, _, _)| sock.pages.pages[slot].pfn).collect();
            (d, pfns)
        };
        ctx.work(self.recv_work);
        // copy_to_user from the head, then from the frag pages.
        let linear = self.msg - self.layout.paged;
        match d.head {
            HeadBlock::Slab(o) => {
                let Head::Slab(bytes) = self.layout.head else {
                    return Err(anyhow!("netperf-udp: a slab head in a large-head run"));
                };
                let at = u64::from(o.index()) * bytes;
                r.rcursor.copy(ctx, Pfn(o.slab().0 + at / 4096), at % 4096, linear);
            }
            HeadBlock::Large(pfn) => {
                r.rcursor.reset();
                r.rcursor.copy(ctx, pfn, 0, linear);
            }
        }
        for (&(_, off, n), &pfn) in d.pieces.iter().zip(&pfns) {
            r.rcursor.copy(ctx, pfn, off, n);
        }
        r.read = Some(self.layout.truesize);
        r.received += self.msg;
        self.free(d, ctx)?;
        Ok(self.migrate(1, ctx))
    }

    /// After task `t`'s step: what its CPU does next, having maybe moved the task. Without
    /// migrations (the default) that is to run on, and the shared placement is not locked
    /// (as netperf-tcp).
    fn migrate(&self, t: usize, ctx: &mut Ctx<'_>) -> Next {
        if self.migrate_prob == 0.0 {
            return Next::Continue;
        }
        lock(&self.tasks).step_migrate(t, self.migrate_prob, ctx).unwrap_or(Next::Continue)
    }
}

impl Workload for NetperfUdp {
    fn start(&mut self, info: &ModelInfo) -> Result<Vec<u32>> {
        let tasks = part(&mut self.tasks);
        *tasks = Tasks::place(info, 1, 2, 0x7564_705f_7374_726d)?;
        Ok(tasks.all_cpus())
    }

    fn step(&self, ctx: &mut Ctx<'_>) -> Result<Next> {
        let t = match lock(&self.tasks).on_or_idle(ctx.cpu()) {
            Ok(t) => t,
            Err(idle) => return Ok(idle),
        };
        self.latest.note(ctx.cpu(), ctx.now());
        if ctx.now() >= self.end {
            // The receiver reads what is queued before it stops, and stops only after the
            // sender has: every slab object comes back before the run ends. On real threads
            // each CPU has its own clock, so the sender may still queue a datagram after the
            // receiver's clock passed the end; it wakes the receiver when it stops. The
            // sender's end is read before the queue: a sender seen ended queues no more.
            // The sender's last datagram, sent and not yet arrived, arrives before it stops.
            if t == 1 {
                let sender_ended = lock(&self.tasks).has_finished(0);
                if !lock(&self.socket).queue.is_empty() {
                    let r = &mut *lock(&self.receiver.0);
                    return timed(
                        ctx,
                        |r: &mut Receiver| &mut r.clock,
                        r,
                        |ctx, r| self.receiver(r, ctx),
                    );
                }
                if !sender_ended {
                    return Ok(Next::Block);
                }
            } else {
                self.deliver(&mut lock(&self.sender.0), ctx)?;
            }
            return Ok(lock(&self.tasks).finish_pair(t, ctx));
        }
        // As netperf-tcp: without migrations no task is swapped away meanwhile.
        let moved =
            |ctx: &Ctx<'_>| self.migrate_prob > 0.0 && !Tasks::still_on(&self.tasks, ctx.cpu(), t);
        if t == 0 {
            let mut s = lock(&self.sender.0);
            if moved(ctx) {
                return Ok(Next::Continue);
            }
            timed(ctx, |s: &mut Sender| &mut s.clock, &mut *s, |ctx, s| self.sender(s, ctx))
        } else {
            let mut r = lock(&self.receiver.0);
            if moved(ctx) {
                return Ok(Next::Continue);
            }
            timed(ctx, |r: &mut Receiver| &mut r.clock, &mut *r, |ctx, r| self.receiver(r, ctx))
        }
    }

    fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
        // Every datagram was read; only the sender's frag page remains.
        let s = part(&mut self.tasks).cpu(0);
        part(&mut self.socket).pages.held(s, s, |_| false)
    }

    fn metrics(&self) -> Vec<(String, f64)> {
        let secs = self.end as f64 / 1e12;
        let mbit = |bytes: u64| (bytes * 8) as f64 / 1e6 / secs;
        let (received, awaited) = {
            let r = lock(&self.receiver.0);
            (r.received, r.awaited)
        };
        let s = lock(&self.sender.0);
        vec![
            ("recv".into(), mbit(received)),
            ("arrivals_awaited".into(), awaited as f64),
            ("send".into(), mbit(s.sent)),
            ("dropped".into(), s.dropped as f64),
            ("large_allocs".into(), s.large_allocs as f64),
            ("frag_allocs".into(), s.frag.allocs as f64),
            ("reused_in_place".into(), s.frag.reused_in_place as f64),
            ("alloc_failures".into(), (s.failures + s.frag.failures) as f64),
            ("migrations".into(), lock(&self.tasks).migrations() as f64),
        ]
    }

    fn progress(&self) -> f64 {
        (self.latest.get() as f64 / self.end.max(1) as f64).min(1.0)
    }

    fn slab_setup(&self) -> SlabSetup {
        let head = match self.layout.head {
            Head::Slab(SMALL_HEAD) => {
                SlabSpec::new("skbuff_small_head", SMALL_HEAD as u32, 64, SlabFlags::NONE)
            }
            Head::Slab(b) => SlabSpec::new(
                &format!("kmalloc-{}k", b / 1024),
                b as u32,
                b as u32,
                SlabFlags::NONE,
            ),
            // No head cache is used; the slot keeps the cache ids fixed.
            Head::Large(_) => {
                SlabSpec::new("skbuff_small_head", SMALL_HEAD as u32, 64, SlabFlags::NONE)
            }
        };
        SlabSetup {
            config: SlubConfig::default(),
            caches: vec![
                SlabSpec::new("skbuff_head_cache", SKB_BYTES as u32, 64, SlabFlags::NONE),
                head,
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RunOutcome;
    use crate::workload;
    use crate::workload::testing::metric;

    #[test]
    fn datagrams_take_the_kernels_head_and_frag_layouts() {
        // 64 and 128 B: the small-head cache; 256 B to 4 KiB: kmalloc-1k … 8k.
        assert_eq!(layout(64).head, Head::Slab(576));
        assert_eq!(layout(128).head, Head::Slab(576));
        assert_eq!(layout(256).head, Head::Slab(1024));
        assert_eq!(layout(1024).head, Head::Slab(2048));
        assert_eq!(layout(2048).head, Head::Slab(4096));
        assert_eq!(layout(3312).head, Head::Slab(4096));
        assert_eq!(layout(4096).head, Head::Slab(8192));
        // 8 KiB: a large kmalloc of 8,576 bytes, order 2.
        assert_eq!(layout(8192), Layout { head: Head::Large(Order(2)), paged: 0, truesize: 16640 });
        // 16 KiB: past SKB_MAX_ALLOC, headers in a small head, the payload in the frag.
        assert_eq!(layout(16384), Layout { head: Head::Slab(576), paged: 16384, truesize: 17216 });
        assert_eq!(layout(16004).paged, 0);
        assert_eq!(layout(16005).paged, 16005);
    }

    fn run(preset: &str, seed: u64, extra: &[&str]) -> RunOutcome {
        workload::testing::run("netperf-udp", &["duration_s=0.005"], extra, 4, preset, seed)
    }

    /// A datagram reaches the receiver's socket when the work of sending it is done, at the
    /// start of the sender's next step, so in the model's clock order the receiver never
    /// finds one queued that arrives after its own time (`arrivals_awaited`). Queued by the
    /// step that sent it, as before, the first of these runs read 489 datagrams early.
    #[test]
    fn no_datagram_is_read_before_it_arrives() {
        for (preset, seed, extra) in [
            ("modern", 1, None),
            ("modern", 2, Some("message_size=1024")),
            ("hpc-vanilla", 3, Some("migrate_prob=0.01")),
        ] {
            let o = run(preset, seed, extra.as_slice());
            assert!(metric(&o, "recv") > 100.0, "{preset} {seed}: {}", metric(&o, "recv"));
            assert_eq!(metric(&o, "arrivals_awaited"), 0.0, "{preset} {seed}");
        }
    }

    /// 16 KiB datagrams copy their payload into order-3 frag pages, two to a page; with
    /// these costs the receiver keeps up and nothing is dropped.
    #[test]
    fn large_datagrams_share_order_3_frag_pages() {
        let o = run("modern", 1, &[]);
        let (recv, send) = (metric(&o, "recv"), metric(&o, "send"));
        assert!(recv > 0.0 && recv <= send, "{recv} vs {send}");
        let frags = metric(&o, "frag_allocs");
        let sent_bytes = send * 1e6 / 8.0 * 0.005;
        assert!(frags <= sent_bytes / 32768.0 + 2.0, "{frags}");
        assert!(frags + metric(&o, "reused_in_place") >= sent_bytes / 32768.0 - 2.0);
        assert_eq!(metric(&o, "large_allocs"), 0.0);
        assert_eq!(o.ops.slab_allocs, o.ops.slab_frees, "every datagram came back");
    }

    /// A receiver slower than the sender fills its receive buffer; the datagrams that do not
    /// fit are dropped (freed in the sender's softirq): every datagram sent is read or dropped.
    #[test]
    fn a_full_receive_buffer_drops_on_the_senders_cpu() {
        let slow = ["recv_ns=20000", "rcvbuf_bytes=40000"];
        let o = run("modern", 1, &slow);
        let (recv, send) = (metric(&o, "recv"), metric(&o, "send"));
        let dropped = metric(&o, "dropped");
        assert!(dropped > 0.0 && recv < send, "{recv} vs {send}");
        // Sent = read + dropped, in datagrams (none is queued at the end).
        let dgram = |mbit: f64| (mbit * 1e6 / 8.0 * 0.005 / 16384.0).round();
        assert_eq!(dgram(send), dgram(recv) + dropped);
        assert_eq!(o.ops.slab_allocs, o.ops.slab_frees);
    }

    /// 8 KiB datagrams are large kmallocs of order 2, one allocation each; 64-byte ones
    /// allocate no pages but slabs.
    #[test]
    fn an_8k_datagram_is_an_order_2_block_and_a_64_byte_one_is_slab_only() {
        let o = run("modern", 2, &["message_size=8192"]);
        let large = metric(&o, "large_allocs");
        assert!(large > 100.0);
        assert_eq!(large * 8192.0 * 8.0 / 1e6 / 0.005, metric(&o, "send"));
        assert_eq!(metric(&o, "frag_allocs"), 0.0);
        let s = run("modern", 2, &["message_size=64"]);
        assert_eq!(s.ops.allocs, s.ops.slabs_new, "only slabs from the page allocator");
        assert_eq!(metric(&s, "frag_allocs") + metric(&s, "large_allocs"), 0.0);
    }

    #[test]
    fn same_seed_same_run() {
        let (a, b) = (run("tune-base", 3, &[]), run("tune-base", 3, &[]));
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    #[test]
    fn parameters_are_checked() {
        let w = workload::find("netperf-udp").unwrap();
        for bad in ["message_size=65508", "message_size=0", "rcvbuf_bytes=100", "frag_bytes=65536"]
        {
            assert!(w.params(&[bad.to_string()], 1.0).is_err(), "{bad}");
        }
    }
}

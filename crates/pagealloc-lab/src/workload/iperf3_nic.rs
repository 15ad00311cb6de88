//! `iperf3-nic`: the receiving side of `streams` iperf3 TCP streams through a NIC whose receive
//! processing runs on one CPU per stream and whose reader runs on another (docs/workloads.md
//! §15). Section numbers (§) in this file are those of `docs/workloads.md`.
//!
//! What it imitates: Nikhil Dhama's iperf3 runs between two 2-node AMD machines over a
//! ConnectX-7 NIC, where 6.7's free_count trigger of free_high cost about 30 % of throughput
//! at 64 client/server pairs (§15.1). Each stream's packets land on one RX queue (RSS); its
//! NAPI poll runs on the queue's IRQ CPU: for each packet it builds an skb around the buffer
//! the NIC filled (`build_skb`: an `sk_buff` from `skbuff_head_cache`, the buffer itself as
//! the head), queues it on the socket, sends an ACK every second full-sized segment, and
//! refills the ring after each round of `napi_budget` packets with buffers carved by
//! `napi_alloc_frag` from the CPU's page_frag cache (order-3 pages, order 0 as the fallback:
//! the core's [`pagealloc::PageFragCache`]). The iperf3 server's reader, on another CPU,
//! copies each skb to user space and frees it there: the `sk_buff` to its slab, the buffer by
//! `page_frag_free`, whose last reference frees the order-3 page on the reader's CPU. ACKs
//! (an `sk_buff` and a small head) are freed by the TX completions of the queue's channel,
//! on the IRQ CPU, in batches.
//!
//! The RX buffers follow drivers that carve them with `napi_alloc_frag` and `build_skb`
//! (§15.2), not mlx5 itself: mlx5's 6.x receive path takes order-0 page_pool pages that the
//! pool recycles, which the model does not have (a known bias).
//!
//! Placement: stream i's RX queue is on the i-th CPU of the NIC's node (the driver spreads
//! its IRQs over the local node first); each reader on a CPU drawn from the run's seed among
//! the rest of that node, then of the other nodes when the node is full (the scheduler keeps
//! a woken reader near its waker while idle CPUs remain there).
//!
//! Metrics: `throughput` in Gbit/s (10^9 bits/s) of TCP payload over all streams, `packets`,
//! `frag_pages` (order-3 refills), `frag_fallbacks` (order-0), `acks`, `alloc_failures`.
//!
//! When the reader sees an skb: a model step runs whole when its CPU's clock is the
//! earliest, and what it queues is seen by every CPU that steps after it, also one whose
//! clock is behind. So an RX step builds an skb (its `rx_ns` of work) and queues it on the
//! socket at the start of the RX CPU's next step, and a read gives its room back at the start
//! of the reader's next step; a reader that finds an skb queued that arrives after its own
//! time waits for it (`arrivals_awaited`, 0 in the model's own order).
//!
//! Known biases: no GRO (one skb per segment, so the RX CPU's per-packet work is an assumed
//! average over aggregated segments); no wire by default (`link_gbit = 0`: the streams run as
//! fast as the CPUs allow); no page_pool; TCP's window is the receive buffer, reopened as soon
//! as the reader frees a segment's room; no migration; the per-packet costs are assumed.
//!
//! State: each stream's RX queue (ring, page_frag cache, ACKs in flight) is its RX CPU's own
//! and its reader's position the reader CPU's own, each behind a lock only that CPU's steps
//! take, held across their allocator calls; the socket (queued skbs, their truesize, the two
//! sleep flags, the end mark) behind a lock held for bookkeeping only: the RX CPU builds the
//! skb and then queues it, the reader takes it off and then copies and frees it. Lock order:
//! a CPU's own lock first, then the socket's. No lost wake: each side marks itself asleep in
//! the same critical section as its last look at the socket, and the other clears the mark
//! under that lock and wakes it after. So on the real runner's threads the RX CPUs'
//! allocations and the readers' frees overlap, while the model, stepping one CPU at a time,
//! makes the same decisions as with one object.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Mutex;

use anyhow::{bail, Result};
use pagealloc::{Frag, Gfp, Order, PageFragCache, Pfn};
use pagealloc_slab::{SlabFlags, SlabObject, SlubConfig};
use pagealloc_testkit::rng::Rng;

use super::net::{PageCursor, SKB_BYTES, SMALL_HEAD, WAKE_NS};
use super::{ns, Fit, Fitted, ParamSpec, Params, WorkloadInfo};
use crate::model::slab::{CacheId, SlabSetup, SlabSpec};
use crate::model::{lock, Ctx, Latest, ModelInfo, Next, Padded, Tally, Workload, PS_PER_S};

/// The registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "iperf3-nic",
    summary: "iperf3 TCP streams received through a NIC: NAPI on the IRQ CPU carves order-3 \
              page_frag buffers, the reader on another CPU frees them; ACKs completed on the \
              IRQ CPU",
    params: PARAMS,
    default_machine: "spr-2s-224",
    build: |p| Box::new(Iperf3Nic::new(p)),
    fit,
};

/// Every stream takes two CPUs (its RX queue's and its reader's), and the NIC's node must
/// exist.
fn fit(p: &Params, m: Fit) -> Vec<Fitted> {
    let mut v = Vec::new();
    let most = u64::from(m.nr_cpus / 2).max(1);
    if p.count("streams") > most {
        v.push(Fitted {
            name: "streams",
            value: most as f64,
            why: format!("each stream takes 2 of the machine's {} CPUs", m.nr_cpus),
        });
    }
    if p.get("nic_node").round() as u32 >= m.nr_nodes {
        v.push(Fitted {
            name: "nic_node",
            value: 0.0,
            why: format!("the machine has {} node(s)", m.nr_nodes),
        });
    }
    v
}

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "streams",
        default: 64.0,
        min: 1.0,
        max: 2048.0,
        unit: "streams",
        doc: "iperf3 client/server pairs, one TCP stream each",
        source: "Nikhil Dhama, \"[PATCH v3] mm: pcp: increase pcp->free_count threshold to \
                 trigger free_high\", 7 Apr 2025: the ~30 % drop shows at 64 pairs \
                 (docs/workloads.md §15.1)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "duration_s",
        default: 20.0,
        min: 0.0001,
        max: 3600.0,
        unit: "virtual s",
        doc: "length of the run",
        source: "\"During a 20sec iperf3 run\" (Nikhil Dhama, \"[PATCH -V2] mm: pcp: scale batch \
                 to reduce number of high order pcp flushes on deallocation\", 19 Mar 2025; \
                 docs/workloads.md §15.1)",
        scaled: true,
        whole: false,
    },
    ParamSpec {
        name: "nic_node",
        default: 0.0,
        min: 0.0,
        max: 63.0,
        unit: "node",
        doc: "the node the NIC is attached to: the RX queues' IRQ CPUs are its CPUs",
        source: "assumed: the mails do not say; node 0",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "mtu",
        default: 1500.0,
        min: 576.0,
        max: 9000.0,
        unit: "bytes",
        doc: "the link's MTU: segments carry mtu − 52 bytes of payload (IPv4, TCP with \
              timestamps), each in one RX buffer",
        source: "assumed: Ethernet's default MTU; the mails mention no jumbo frames \
                 (docs/workloads.md §15.2)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "link_gbit",
        default: 0.0,
        min: 0.0,
        max: 1e4,
        unit: "Gbit/s",
        doc: "the link's rate shared by the streams (0: no wire limit, the CPUs set the pace)",
        source: "assumed: the mails do not give the link rate; 0, so that the CPUs' work, \
                 allocator included, sets the throughput as the reported 30 % drop implies \
                 (docs/workloads.md §15.3)",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "rx_ring",
        default: 1024.0,
        min: 1.0,
        max: 65536.0,
        unit: "buffers",
        doc: "RX descriptors per queue, each holding a posted buffer",
        source: "mlx5's default RQ size, 2^10 (MLX5E_PARAMS_DEFAULT_LOG_RQ_SIZE in \
                 drivers/net/ethernet/mellanox/mlx5/core/en.h; docs/workloads.md §15.2)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "napi_budget",
        default: 64.0,
        min: 1.0,
        max: 4096.0,
        unit: "packets",
        doc: "packets per NAPI round; the ring is refilled after each round",
        source: "NAPI_POLL_WEIGHT = 64 (include/linux/netdevice.h)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "ack_every",
        default: 2.0,
        min: 1.0,
        max: 64.0,
        unit: "segments",
        doc: "full-sized segments received per ACK sent from the RX softirq",
        source: "RFC 5681 §4.2: an ACK at least for every second full-sized segment",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "tx_batch",
        default: 64.0,
        min: 1.0,
        max: 4096.0,
        unit: "ACKs",
        doc: "ACK transmissions completed (freed) per TX-completion round on the IRQ CPU",
        source: "assumed: one NAPI budget of completions per poll, as page-frag-rx's tx_batch",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "read_bytes",
        default: 131_072.0,
        min: 1.0,
        max: 1e9,
        unit: "bytes",
        doc: "bytes per recvmsg of the iperf3 server (iperf3 -l)",
        source: "iperf3's default buffer length for TCP, 128 KiB (iperf3(1), -l)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "rcvbuf_bytes",
        default: 6_291_456.0,
        min: 4096.0,
        max: 1e10,
        unit: "bytes",
        doc: "truesize a stream's socket may queue; a full queue stops its RX queue (the \
              sender's window is closed) until the reader frees room",
        source: "tcp_rmem's maximum, 6 MiB, the most receive-buffer autotuning grows to \
                 (Documentation/networking/ip-sysctl.rst)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "rx_ns",
        default: 300.0,
        min: 0.0,
        max: 1e7,
        unit: "ns",
        doc: "RX CPU's work per segment besides the allocations: descriptor, build_skb, IP and \
              TCP receive, queueing, wake-up check",
        source: "assumed: ≈ 2 Mpps per core for GRO'd 1500-byte TCP, shared with the reader's \
                 copy (single-stream iperf3 reaches 25-40 Gbit/s on 2020s servers)",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "ack_ns",
        default: 200.0,
        min: 0.0,
        max: 1e7,
        unit: "ns",
        doc: "RX CPU's work per ACK besides its allocations: TCP output and the doorbell",
        source: "assumed: a short transmit of a header-only segment",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "recv_ns",
        default: 600.0,
        min: 0.0,
        max: 1e7,
        unit: "ns",
        doc: "reader's work per recvmsg besides the copies and frees",
        source: "assumed: as netperf-udp's recv_ns (netperf-tcp's 400 ns and a dequeue)",
        scaled: false,
        whole: false,
    },
    WAKE_NS,
];

/// napi_alloc_frag's flags: GFP_ATOMIC (the page_frag refill adds `__GFP_COMP`, `NOWARN`
/// and `NORETRY` to its order-3 try).
const GFP_RX: Gfp = Gfp::ATOMIC;
/// IPv4 and TCP headers with the timestamp option.
const HEADERS: u32 = 20 + 32;
/// `NET_SKB_PAD` (x86-64: a cache line) + Ethernet header + one VLAN tag, before the frame.
const RX_HEADROOM: u32 = 64 + 14 + 4;
/// `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))`, x86-64.
const SHINFO: u32 = 320;
/// Bytes of headers the RX CPU reads from a buffer the NIC wrote (two cache lines).
const HEADER_READ: u64 = 128;
const SKB_CACHE: CacheId = CacheId(0);
const HEAD_CACHE: CacheId = CacheId(1);

/// A `build_skb` RX buffer for `mtu`: headroom and frame, cache-line aligned, plus the shared
/// info at its end.
fn rx_buffer_bytes(mtu: u32) -> u32 {
    (RX_HEADROOM + mtu).next_multiple_of(64) + SHINFO
}

/// A received segment queued on its socket.
#[derive(Clone, Copy, Debug)]
struct Skb {
    skb: SlabObject,
    buf: Frag,
    /// When it reached the socket, ps (0 until then).
    at: u64,
}

/// An ACK waiting for its TX completion.
#[derive(Clone, Copy, Debug)]
struct Ack {
    skb: SlabObject,
    head: SlabObject,
}

/// The RX side of a stream, its RX CPU's own: held by that CPU's steps across their
/// allocator calls.
#[derive(Debug)]
struct RxQueue {
    /// The RX CPU's page_frag cache (the kernel's per-CPU NAPI cache: one stream per CPU).
    cache: PageFragCache,
    /// Posted buffers, in the order the NIC fills them.
    ring: VecDeque<Frag>,
    /// Packets taken in the current NAPI round.
    in_round: u32,
    /// When the next segment reaches the NIC (ps; with a wire).
    next_arrival: u64,
    unacked: u32,
    tx: VecDeque<Ack>,
    /// The skb the last RX step built, queued on the socket at the start of the next, when
    /// the work of receiving it is done.
    built: Option<Skb>,
}

/// A stream's socket, shared by its RX CPU and its reader: bookkeeping only.
#[derive(Debug, Default)]
struct Socket {
    queue: VecDeque<Skb>,
    /// Truesize queued on the socket.
    queued: u64,
    rx_blocked: bool,
    reader_waits: bool,
    rx_done: bool,
}

/// The reader's side of a stream, its CPU's own.
#[derive(Debug, Default)]
struct ReaderSide {
    /// Bytes left in the reader's current recvmsg.
    read_left: u64,
    rcursor: PageCursor,
    /// The last step read and freed an skb, whose room goes back to the socket at the
    /// start of the next, when that work is done.
    read_one: bool,
    /// Times the reader found an skb queued that arrives after its own time, and waited
    /// for it (never in the model's clock order).
    awaited: u64,
}

/// One stream: its RX queue (on `rx_cpu`) and its socket, read on `reader_cpu`.
#[derive(Debug)]
struct Stream {
    rx_cpu: u32,
    reader_cpu: u32,
    /// The RX CPU's and the reader's own state, each on lines of its own ([`Padded`]):
    /// packed, the two CPUs' locks shared a line that every real step moved between cores.
    rx: Padded<Mutex<RxQueue>>,
    sock: Mutex<Socket>,
    reader: Padded<Mutex<ReaderSide>>,
}

/// What a CPU runs: stream `s`'s RX queue or its reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Rx(usize),
    Reader(usize),
}

/// One run.
#[derive(Debug)]
pub struct Iperf3Nic {
    nr_streams: usize,
    end: u64,
    nic_node: u32,
    payload: u32,
    buf_bytes: u32,
    /// Wire time per segment and stream (ps; 0: no wire).
    wire: u64,
    rx_ring: usize,
    budget: u32,
    ack_every: u32,
    tx_batch: usize,
    read_bytes: u64,
    rcvbuf: u64,
    rx_work: u64,
    ack_work: u64,
    recv_work: u64,
    wake: u64,
    streams: Vec<Stream>,
    roles: Vec<Option<Role>>,
    received: Tally,
    packets: Tally,
    acks: Tally,
    /// Page_frag refills: order-3 pages, order-0 fallbacks.
    frag_pages: Tally,
    frag_fallbacks: Tally,
    failures: AtomicU64,
    latest: Latest,
}

impl Iperf3Nic {
    /// A run with these parameters.
    pub fn new(p: &Params) -> Iperf3Nic {
        let mtu = p.count("mtu") as u32;
        let streams = p.count("streams");
        let link = p.get("link_gbit");
        // A segment's frame on the wire: MTU + Ethernet header, FCS, preamble and gap (38 B).
        let wire = if link > 0.0 {
            ((u64::from(mtu) + 38) as f64 * 8.0 / (link * 1e9 / streams as f64) * PS_PER_S as f64)
                .round() as u64
        } else {
            0
        };
        Iperf3Nic {
            nr_streams: streams as usize,
            end: ns(p.get("duration_s") * 1e9),
            nic_node: p.get("nic_node").round() as u32,
            payload: mtu - HEADERS,
            buf_bytes: rx_buffer_bytes(mtu),
            wire,
            rx_ring: p.count("rx_ring") as usize,
            budget: p.count("napi_budget") as u32,
            ack_every: p.count("ack_every") as u32,
            tx_batch: p.count("tx_batch") as usize,
            read_bytes: p.count("read_bytes"),
            rcvbuf: p.count("rcvbuf_bytes"),
            rx_work: ns(p.get("rx_ns")),
            ack_work: ns(p.get("ack_ns")),
            recv_work: ns(p.get("recv_ns")),
            wake: ns(p.get("wake_ns")),
            streams: Vec::new(),
            roles: Vec::new(),
            received: Tally::default(),
            packets: Tally::default(),
            acks: Tally::default(),
            frag_pages: Tally::default(),
            frag_fallbacks: Tally::default(),
            failures: AtomicU64::new(0),
            latest: Latest::default(),
        }
    }

    /// A queued segment's truesize: its buffer and its `sk_buff`.
    fn truesize(&self) -> u64 {
        u64::from(self.buf_bytes) + SKB_BYTES
    }

    /// Count one allocation failure.
    fn failed(&self) {
        self.failures.fetch_add(1, SeqCst);
    }

    /// Free the ACKs of RX queue `q` whose transmissions completed (at most `n`).
    fn complete_tx(q: &mut RxQueue, n: usize, ctx: &mut Ctx<'_>) -> Result<()> {
        for _ in 0..n {
            let Some(a) = q.tx.pop_front() else { break };
            ctx.slab_free(HEAD_CACHE, a.head)?;
            ctx.slab_free(SKB_CACHE, a.skb)?;
        }
        Ok(())
    }

    /// Post fresh buffers on RX queue `q`'s ring until it is full (`napi_alloc_frag` each).
    fn refill(&self, q: &mut RxQueue, ctx: &mut Ctx<'_>) {
        let bytes = self.buf_bytes;
        while q.ring.len() < self.rx_ring {
            let before = q.cache.page();
            match ctx.frag_alloc(&mut q.cache, bytes, GFP_RX) {
                Some(f) => {
                    match q.cache.page() {
                        Some((_, o)) if q.cache.page() != before && o.0 > 0 => {
                            self.frag_pages.add(ctx.cpu(), 1);
                        }
                        Some(_) if q.cache.page() != before => {
                            self.frag_fallbacks.add(ctx.cpu(), 1);
                        }
                        _ => {}
                    }
                    q.ring.push_back(f);
                }
                None => {
                    // The descriptors stay empty; the next round retries.
                    self.failed();
                    break;
                }
            }
        }
        q.in_round = 0;
    }

    /// Send an ACK from the RX softirq: an `sk_buff` and a small head, freed by the channel's
    /// TX completion.
    fn ack(&self, q: &mut RxQueue, ctx: &mut Ctx<'_>) -> Result<()> {
        ctx.work(self.ack_work);
        let Some(skb) = ctx.slab_alloc(SKB_CACHE, GFP_RX, None)? else {
            self.failed();
            return Ok(());
        };
        let Some(head) = ctx.slab_alloc(HEAD_CACHE, GFP_RX, None)? else {
            self.failed();
            return ctx.slab_free(SKB_CACHE, skb);
        };
        self.acks.add(ctx.cpu(), 1);
        q.tx.push_back(Ack { skb, head });
        Ok(())
    }

    /// The RX queue's end: free the posted buffers, drain the page_frag cache, complete the
    /// ACKs in flight, and wake the reader to empty the socket (it sees `rx_done` under the
    /// socket's lock, so it is woken or finds it set).
    fn close(&self, st: &Stream, q: &mut RxQueue, ctx: &mut Ctx<'_>) -> Result<Next> {
        lock(&st.sock).rx_done = true;
        while let Some(f) = q.ring.pop_front() {
            ctx.frag_free(f.page)?;
        }
        ctx.frag_drain(&mut q.cache)?;
        let n = q.tx.len();
        Self::complete_tx(q, n, ctx)?;
        ctx.wake(st.reader_cpu, ctx.now());
        Ok(Next::Done)
    }

    /// The skb RX queue `q`'s last step built goes on the socket, waking a sleeping
    /// reader. At the start of the queue's next step: a model step runs whole when its CPU's
    /// clock is the earliest, and what it queues is seen by every CPU that steps after it,
    /// also one whose clock is behind the moment it was queued.
    fn deliver(&self, st: &Stream, q: &mut RxQueue, ctx: &mut Ctx<'_>) {
        let Some(mut skb) = q.built.take() else { return };
        skb.at = ctx.now();
        let wake_reader = {
            let mut sock = lock(&st.sock);
            sock.queue.push_back(skb);
            sock.queued += self.truesize();
            std::mem::take(&mut sock.reader_waits)
        };
        if wake_reader {
            ctx.wake(st.reader_cpu, ctx.now() + self.wake);
        }
    }

    /// One RX step of stream `s`: the skb built by the last step queued, then completions,
    /// a refill, or one segment (queued at the start of the next step).
    fn rx(&self, s: usize, ctx: &mut Ctx<'_>) -> Result<Next> {
        let st = &self.streams[s];
        let mut q = lock(&st.rx.0);
        self.deliver(st, &mut q, ctx);
        let now = ctx.now();
        if now >= self.end {
            return self.close(st, &mut q, ctx);
        }
        if q.tx.len() >= self.tx_batch {
            Self::complete_tx(&mut q, self.tx_batch, ctx)?;
            return Ok(Next::Continue);
        }
        if q.in_round >= self.budget || q.ring.is_empty() {
            self.refill(&mut q, ctx);
            if q.ring.is_empty() {
                // Nothing could be posted: the NIC drops until a later poll refills.
                return Ok(Next::SleepUntil(ctx.now() + self.wake));
            }
            return Ok(Next::Continue);
        }
        let truesize = self.truesize();
        {
            // Marked blocked under the lock the reader frees room under: no lost wake. (The
            // last step's skb is queued already: its room counts.)
            let mut sock = lock(&st.sock);
            if sock.queued + truesize > self.rcvbuf {
                sock.rx_blocked = true;
                return Ok(Next::Block);
            }
        }
        if self.wire > 0 && q.next_arrival > now {
            return Ok(Next::SleepUntil(q.next_arrival));
        }
        let Some(buf) = q.ring.pop_front() else { return Ok(Next::Continue) };
        q.in_round += 1;
        q.next_arrival = q.next_arrival.max(now) + self.wire;
        ctx.work(self.rx_work);
        ctx.touch(Pfn(buf.page.0 + u64::from(buf.offset) / 4096), HEADER_READ);
        let Some(skb) = ctx.slab_alloc(SKB_CACHE, GFP_RX, None)? else {
            // No sk_buff: the segment is dropped and its buffer freed.
            self.failed();
            ctx.frag_free(buf.page)?;
            return Ok(Next::Continue);
        };
        self.packets.add(ctx.cpu(), 1);
        self.received.add(ctx.cpu(), u64::from(self.payload));
        self.latest.note(ctx.cpu(), ctx.now());
        q.built = Some(Skb { skb, buf, at: 0 });
        q.unacked += 1;
        if q.unacked >= self.ack_every {
            q.unacked = 0;
            self.ack(&mut q, ctx)?;
        }
        Ok(Next::Continue)
    }

    /// One reader step of stream `s`: copy one queued segment to user space and free it
    /// (taken off the socket under its lock, copied and freed after it).
    fn read(&self, s: usize, ctx: &mut Ctx<'_>) -> Result<Next> {
        let st = &self.streams[s];
        let mut r = lock(&st.reader.0);
        if std::mem::take(&mut r.read_one) {
            // The last step's skb is read and freed: its room goes back.
            let truesize = self.truesize();
            let wake_rx = {
                let mut sock = lock(&st.sock);
                sock.queued -= truesize;
                let wake = sock.rx_blocked && sock.queued + truesize <= self.rcvbuf;
                sock.rx_blocked &= !wake;
                wake
            };
            if wake_rx {
                ctx.wake(st.rx_cpu, ctx.now() + self.wake);
            }
        }
        let skb = {
            // The last look at the socket and the mark asleep are one critical section.
            let mut sock = lock(&st.sock);
            if let Some(at) = sock.queue.front().map(|k| k.at).filter(|&at| ctx.now() < at) {
                // Queued by a CPU whose clock is ahead (real threads): not there before it
                // arrives.
                r.awaited += 1;
                return Ok(Next::SleepUntil(at));
            }
            match sock.queue.pop_front() {
                Some(skb) => skb,
                None if sock.rx_done => return Ok(Next::Done),
                None => {
                    sock.reader_waits = true;
                    return Ok(Next::Block);
                }
            }
        };
        if r.read_left == 0 {
            ctx.work(self.recv_work);
            r.read_left = self.read_bytes;
        }
        let payload = u64::from(self.payload);
        let at = u64::from(skb.buf.offset + RX_HEADROOM + HEADERS);
        r.rcursor.copy(ctx, skb.buf.page, at, payload);
        r.read_left = r.read_left.saturating_sub(payload);
        ctx.slab_free(SKB_CACHE, skb.skb)?;
        ctx.frag_free(skb.buf.page)?;
        r.read_one = true;
        Ok(Next::Continue)
    }
}

/// Stream i's RX CPU is the i-th CPU of `nic_node`; readers are drawn with `rng` from that
/// node's other CPUs, then from the other nodes' in node order once it is full.
fn place(info: &ModelInfo, streams: usize, nic_node: u32, rng: &mut Rng) -> Vec<(u32, u32)> {
    let on = |n: u32| (0..info.nr_cpus).filter(move |&c| info.cpu_node[c as usize] == n);
    let local: Vec<u32> = on(nic_node).collect();
    let rx: Vec<u32> = local.iter().copied().take(streams).collect();
    let mut pools: Vec<Vec<u32>> = vec![local[rx.len()..].to_vec()];
    pools.extend((0..info.nr_nodes).filter(|&n| n != nic_node).map(|n| on(n).collect()));
    let mut out = Vec::with_capacity(streams);
    let mut pool = 0;
    for &r in &rx {
        while pools[pool].is_empty() {
            pool += 1;
        }
        let p = &mut pools[pool];
        let reader = p.swap_remove(rng.below(p.len() as u64) as usize);
        out.push((r, reader));
    }
    out
}

impl Workload for Iperf3Nic {
    fn start(&mut self, info: &ModelInfo) -> Result<Vec<u32>> {
        let need = 2 * self.nr_streams;
        if need > info.nr_cpus as usize || self.nic_node >= info.nr_nodes {
            bail!(
                "iperf3-nic: {} streams need {need} CPUs and node {} for the NIC; the machine \
                 has {} CPUs and {} node(s)",
                self.nr_streams,
                self.nic_node,
                info.nr_cpus,
                info.nr_nodes
            );
        }
        let local = info.cpu_node.iter().filter(|&&n| n == self.nic_node).count();
        if self.nr_streams > local {
            bail!(
                "iperf3-nic: {} RX queues need as many CPUs on node {}, which has {local}",
                self.nr_streams,
                self.nic_node
            );
        }
        let mut rng = Rng::new(info.seed ^ 0x6970_6572_6633_6e69);
        self.roles = vec![None; info.nr_cpus as usize];
        for (s, (rx_cpu, reader_cpu)) in
            place(info, self.nr_streams, self.nic_node, &mut rng).into_iter().enumerate()
        {
            self.roles[rx_cpu as usize] = Some(Role::Rx(s));
            self.roles[reader_cpu as usize] = Some(Role::Reader(s));
            self.streams.push(Stream {
                rx_cpu,
                reader_cpu,
                rx: Padded(Mutex::new(RxQueue {
                    cache: PageFragCache::new(),
                    ring: VecDeque::with_capacity(self.rx_ring),
                    // The ring is filled by the first step.
                    in_round: self.budget,
                    next_arrival: 0,
                    unacked: 0,
                    tx: VecDeque::new(),
                    built: None,
                })),
                sock: Mutex::default(),
                reader: Padded::default(),
            });
        }
        let mut cpus: Vec<u32> =
            self.streams.iter().flat_map(|s| [s.rx_cpu, s.reader_cpu]).collect();
        cpus.sort_unstable();
        Ok(cpus)
    }

    fn step(&self, ctx: &mut Ctx<'_>) -> Result<Next> {
        match self.roles[ctx.cpu() as usize] {
            Some(Role::Rx(s)) => self.rx(s, ctx),
            Some(Role::Reader(s)) => self.read(s, ctx),
            None => Ok(Next::Done),
        }
    }

    fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
        // Every RX queue closed (buffers freed, cache drained) and every reader emptied its
        // socket before it finished: nothing is left.
        Vec::new()
    }

    fn metrics(&self) -> Vec<(String, f64)> {
        let secs = self.end as f64 / PS_PER_S as f64;
        let count = |t: &Tally| t.get() as f64;
        vec![
            ("throughput".into(), count(&self.received) * 8.0 / 1e9 / secs),
            ("packets".into(), count(&self.packets)),
            ("acks".into(), count(&self.acks)),
            ("frag_pages".into(), count(&self.frag_pages)),
            ("frag_fallbacks".into(), count(&self.frag_fallbacks)),
            ("alloc_failures".into(), self.failures.load(SeqCst) as f64),
            (
                "arrivals_awaited".into(),
                self.streams.iter().map(|s| lock(&s.reader.0).awaited).sum::<u64>() as f64,
            ),
        ]
    }

    fn progress(&self) -> f64 {
        (self.latest.get() as f64 / self.end.max(1) as f64).min(1.0)
    }

    fn slab_setup(&self) -> SlabSetup {
        SlabSetup {
            config: SlubConfig::default(),
            caches: vec![
                SlabSpec::new("skbuff_head_cache", SKB_BYTES as u32, 64, SlabFlags::NONE),
                SlabSpec::new("skbuff_small_head", SMALL_HEAD as u32, 64, SlabFlags::NONE),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use pagealloc::Counter;

    use super::*;
    use crate::model::tests::small_setup;
    use crate::model::{Model, RunOutcome, Serial, SerialWorkload};
    use crate::workload::testing::metric;

    const SHORT: &[&str] = &["streams=2", "duration_s=0.002"];

    fn run(preset: &str, seed: u64, extra: &[&str]) -> RunOutcome {
        crate::workload::testing::run("iperf3-nic", SHORT, extra, 4, preset, seed)
    }

    #[test]
    fn rx_buffers_take_the_build_skb_layout() {
        // 64 + 14 + 4 + 1500 = 1582, aligned to 1600, plus 320 of shared info.
        assert_eq!(rx_buffer_bytes(1500), 1920);
        assert_eq!(32768 / rx_buffer_bytes(1500), 17, "buffers per order-3 page");
        assert_eq!(rx_buffer_bytes(9000), 9408);
    }

    fn info(nodes: u32, per_node: u32) -> ModelInfo {
        ModelInfo {
            nr_cpus: nodes * per_node,
            nr_nodes: nodes,
            cpu_node: (0..nodes * per_node).map(|c| c / per_node).collect(),
            node_managed_pages: vec![1 << 20; nodes as usize],
            seed: 1,
        }
    }

    /// RX queues take the NIC node's first CPUs; readers the rest of that node, then the
    /// other node; no CPU runs two roles.
    #[test]
    fn rx_queues_sit_on_the_nic_node_and_readers_beside_them() {
        let i = info(2, 8);
        let p = place(&i, 4, 0, &mut Rng::new(1));
        assert_eq!(p.iter().map(|x| x.0).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert!(p.iter().all(|&(_, r)| (4..8).contains(&r)), "{p:?}");
        let p = place(&i, 6, 1, &mut Rng::new(2));
        assert_eq!(p.iter().map(|x| x.0).collect::<Vec<_>>(), [8, 9, 10, 11, 12, 13]);
        let mut readers: Vec<u32> = p.iter().map(|x| x.1).collect();
        readers.sort_unstable();
        readers.dedup();
        assert_eq!(readers.len(), 6);
        assert_eq!(readers[4..], [14, 15], "node 1's two spare CPUs first");
        assert!(readers[..4].iter().all(|&r| r < 8), "then node 0: {readers:?}");
    }

    /// The workload with every step's page allocations and frees counted by the role of the
    /// CPU that ran it.
    struct ByRole {
        w: Iperf3Nic,
        /// [RX, reader] × [pages allocated, pages freed].
        pages: [[u64; 2]; 2],
    }

    impl SerialWorkload for ByRole {
        fn start(&mut self, info: &ModelInfo) -> Result<Vec<u32>> {
            self.w.start(info)
        }
        fn step(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
            let count = |ctx: &Ctx<'_>| {
                let e = ctx.allocator().vm_events();
                let alloc = e.get(Counter::PgallocDma)
                    + e.get(Counter::PgallocDma32)
                    + e.get(Counter::PgallocNormal)
                    + e.get(Counter::PgallocMovable);
                [alloc, e.get(Counter::Pgfree)]
            };
            let before = count(ctx);
            let role = self.w.roles[ctx.cpu() as usize];
            let next = self.w.step(ctx)?;
            let after = count(ctx);
            let r = match role {
                Some(Role::Rx(_)) => 0,
                Some(Role::Reader(_)) => 1,
                None => return Ok(next),
            };
            for k in 0..2 {
                self.pages[r][k] += after[k] - before[k];
            }
            Ok(next)
        }
        fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
            self.w.held()
        }
        fn metrics(&self) -> Vec<(String, f64)> {
            self.w.metrics()
        }
        fn progress(&self) -> f64 {
            self.w.progress()
        }
        fn slab_setup(&self) -> SlabSetup {
            self.w.slab_setup()
        }
    }

    /// The RX CPUs allocate every page (buffers and slabs); the readers allocate none and
    /// free most of them: the buffers' order-3 pages go back on the reader's CPU.
    #[test]
    fn rx_cpus_allocate_and_readers_free() {
        let p = INFO.params(&SHORT.iter().map(|s| s.to_string()).collect::<Vec<_>>(), 1.0);
        let w = ByRole { w: Iperf3Nic::new(&p.unwrap()), pages: [[0; 2]; 2] };
        let mut s = Serial::new(w);
        let mut m = Model::new(small_setup(4, 256, "modern", 1)).unwrap();
        let o = m.run(&mut s, &mut |_| {}).unwrap();
        let [[rx_alloc, rx_free], [rd_alloc, rd_free]] = s.into_inner().pages;
        assert!(metric(&o, "packets") > 1000.0, "{:?}", o.workload);
        assert_eq!(rd_alloc, 0, "readers allocate nothing");
        assert!(rx_alloc >= 8 * metric(&o, "frag_pages") as u64);
        assert!(rd_free > 3 * rx_free, "reader frees {rd_free} pages, RX {rx_free}");
        assert!(rd_free + rx_free <= rx_alloc);
    }

    /// Every segment received is read and freed, every ACK completed, every buffer and the
    /// caches' pages given back: nothing is left at the end.
    #[test]
    fn every_buffer_skb_and_ack_comes_back() {
        let o = run("fhigh", 2, &[]);
        let packets = metric(&o, "packets");
        assert_eq!(o.ops.slab_allocs, o.ops.slab_frees, "skbs and ACKs");
        assert_eq!(o.ops.slab_allocs as f64, packets + 2.0 * metric(&o, "acks"));
        // One ACK per two segments of each of the 2 streams.
        let acks = metric(&o, "acks");
        assert!(acks <= packets / 2.0 && acks >= packets / 2.0 - 2.0, "{acks} for {packets}");
        assert_eq!(metric(&o, "alloc_failures"), 0.0);
        // 17 buffers per order-3 page: refills follow the packets and the rings. The rings
        // (1024 buffers each) are refilled after each NAPI round of 64 packets, so at the end
        // up to one round per stream has been taken and not yet replaced.
        let pages = metric(&o, "frag_pages") + metric(&o, "frag_fallbacks");
        let buffers = packets + 2.0 * 1024.0;
        let least = buffers - 2.0 * 64.0;
        assert!(
            pages >= (least / 17.0).floor() && pages <= buffers / 17.0 + 4.0,
            "{pages} pages for {least}..{buffers} buffers ({packets} packets)"
        );
        // 1448 payload bytes per segment over the run.
        let gbit = packets * 1448.0 * 8.0 / 1e9 / 0.002;
        assert!((metric(&o, "throughput") - gbit).abs() < 1e-9 * gbit);
    }

    /// A wire slower than the CPUs sets the pace: each stream gets its share of the link.
    #[test]
    fn a_slow_link_limits_the_streams_to_its_rate() {
        let o = run("modern", 1, &["link_gbit=2"]);
        let t = metric(&o, "throughput");
        // 1448 of 1538 wire bytes are payload.
        assert!(t > 0.9 * 2.0 * 1448.0 / 1538.0 && t <= 2.0 * 1448.0 / 1538.0 + 0.01, "{t}");
    }

    /// A reader slower than its RX queue fills the socket; the queue stops and restarts
    /// without losing a segment.
    /// An skb reaches the socket when the RX CPU's work on it is done, at the start of its
    /// next step, so in the model's clock order a reader never finds one queued that arrives
    /// after its own time (`arrivals_awaited`). Queued by the step that built it, as before,
    /// the first of these runs' readers took 1 193 skbs early.
    #[test]
    fn no_skb_is_read_before_it_arrives() {
        for (preset, seed) in [("modern", 1), ("fhigh", 2)] {
            let o = run(preset, seed, &[]);
            assert!(metric(&o, "packets") > 1000.0, "{preset} {seed}");
            assert_eq!(metric(&o, "arrivals_awaited"), 0.0, "{preset} {seed}");
        }
    }

    #[test]
    fn a_full_socket_stops_its_rx_queue() {
        let o = run("modern", 1, &["recv_ns=20000", "read_bytes=1448", "rcvbuf_bytes=100000"]);
        let fast = run("modern", 1, &[]);
        assert!(metric(&o, "packets") < 0.5 * metric(&fast, "packets"));
        assert_eq!(o.ops.slab_allocs, o.ops.slab_frees);
    }

    /// The mechanism behind the compare in docs/workloads.md §15.3: a reader only frees
    /// order-3 pages, so under 6.7's free_count rule (`modern`) its pageset is drained by
    /// free_high once a batch was freed in a row, and 6.16's threshold of a batch plus half
    /// of `high_min` (`fhigh`) drains it less often. (Where 6.6's free_factor, `tune-base`,
    /// lands depends on how often the readers' pagesets overflow `high`: fewer drains than
    /// `modern` here, more on the 224-CPU machine of §15.3.)
    #[test]
    fn free_high_drains_freeing_readers_less_often_with_the_616_threshold() {
        let drains = |preset| run(preset, 1, &[]).events.get(Counter::DrainFreeHigh);
        let (modern, fhigh) = (drains("modern"), drains("fhigh"));
        assert!(modern > 100, "modern drains the readers' pagesets: {modern}");
        assert!(fhigh < modern, "fhigh {fhigh} vs modern {modern}");
    }

    #[test]
    fn same_seed_same_run() {
        let (a, b) = (run("tune-base", 3, &[]), run("tune-base", 3, &[]));
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    #[test]
    fn parameters_are_checked_and_fitted() {
        let w = crate::workload::find("iperf3-nic").unwrap();
        for bad in ["streams=0", "mtu=100", "link_gbit=-1", "ack_every=0.5"] {
            assert!(w.params(&[bad.to_string()], 1.0).is_err(), "{bad}");
        }
        let two = Fit { nr_cpus: 2, nr_nodes: 1 };
        let (p, notes) = w.params_for(&[], 1.0, two).unwrap();
        assert_eq!(p.get("streams"), 1.0, "{notes:?}");
        assert!(w.params_for(&["nic_node=1".into()], 1.0, two).is_err());
    }
}

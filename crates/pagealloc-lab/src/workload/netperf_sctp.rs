//! `netperf-sctp-stream-many`: LKP's netperf SCTP_STREAM_MANY with 64 pairs over loopback,
//! seed 001's second table on the 128-CPU server (docs/workloads.md §2).
//! Section numbers (§) in this file are those of `docs/workloads.md`.
//!
//! What it imitates: 64 `netperf -t SCTP_STREAM_MANY -- -m 10K` senders, each with a
//! netserver child receiving, unpinned. Per 10 KiB message the sender's `sctp_sendmsg`
//! allocates a DATA chunk buffer (`alloc_skb` of the padded chunk: a kmalloc-large order-2
//! compound page, GFP_KERNEL, unmovable) and copies the payload in; `sctp_outq_flush`
//! bundles queued chunks into a packet whose buffer (`alloc_skb(packet size + MAX_HEADER)`)
//! is order 2 for one chunk, 3 for two or three, 4 for four to six, and copies the chunks
//! into it. On loopback the receive side runs in the sender's context; the packet waits on
//! the receiver's queue until netserver's `sctp_recvmsg` copies each message out, and the
//! receiver frees the packet buffer on its CPU after the last chunk (orders 2-3 through its
//! pageset, order 4 straight to the buddy lists). The chunk buffers are freed when SACKed,
//! on the sender's CPU (§2.2).
//!
//! The protocol as modelled, from net/sctp (docs/workloads.md §2.3): SCTP's Nagle
//! (`sctp_packet_can_append_data`) sends a chunk at once when nothing is in flight, and
//! otherwise holds chunks until more than a PMTU's worth is queued, then sends full packets;
//! every chunk also needs the receiver's window as the sender sees it (the last SACK's
//! `a_rwnd` less what was sent since), except one when nothing is in flight (the zero-window
//! probe). The receiver's window (half of `sk_rcvbuf`) shrinks as chunks arrive and grows as
//! netserver reads them; it SACKs every second packet (`sack_freq` 2), processed at the end of
//! the sender's `sendmsg` (`__release_sock`), which frees the SACKed chunks and lets the next
//! chunk go alone; the first packet after a SACK starts the 200 ms delayed-SACK timer. A read
//! that grows the window by `max(sk_rcvbuf >> 4, PMTU)` over what the last SACK advertised
//! sends a window-update SACK (`sctp_assoc_rwnd_increase`), whether or not the sender waits:
//! to a sender asleep for buffer space it is handled on the receiver's CPU as the kernel's
//! softirq does (free the SACKed chunks, send what the window allows, wake the sender), to a
//! running one it waits in the socket backlog until its `sendmsg` ends. A packet that comes
//! while the reader is inside a read (its socket owned) waits in the reader's socket backlog
//! and is taken at the end of that read, on the reader's CPU (`release_sock`; metric
//! `reader_backlog_packets`). A sender sleeps while the chunk buffers it holds exceed
//! `sk_sndbuf`. While the receiver keeps up, a sender
//! sends, per seven messages, a four-chunk packet (order 4) and a three-chunk one (order 3),
//! as its view of the window allows. (Sanity check only, not used to choose anything: that
//! is 1.29 page allocations and 7.4 pages per message, against 1.29 and 7.4 read from the
//! 256-pair run's counters, §2.2.) With a 104 KiB window and a 64 KiB update threshold, a
//! SACK that advertises more than 40 KiB can leave a pair whose sender has used up that
//! window with only the delayed-SACK timer to move it, as the kernel's rules do (§2.3).
//!
//! Tasks: 128 processes on 128 CPUs, placed by [`Tasks::place`] (each pair on one node,
//! pairs spread over the nodes, CPUs from the run's seed), migrating inside the node with
//! probability `migrate_prob` per message; a migration onto a busy CPU swaps the two tasks,
//! so a CPU that sent starts receiving (patch 10's changelog, §2.2). Metric `score`:
//! throughput, Mbit/s (10^6 bits/s) of payload received, summed over the pairs (LKP's
//! `Throughput_total_Mbps`; the seed normalises it).
//!
//! Volume: LKP runs 300 s. The model runs `duration_s` virtual seconds; each pair sends
//! ≈ 10^5 messages per virtual second, so every pageset sees thousands of refills and
//! drains per virtual second and is in its steady state within milliseconds. The tuned
//! presets' decay of `high` runs at the once-a-second vmstat tick: the default 1.5 s holds
//! one; longer runs (`--scale`) let it act more.
//!
//! Known biases: slab objects (`sctp_chunk`, `sctp_datamsg`, ulpevents, skb heads) are left
//! out; per-message and per-packet stack costs are assumed figures; the congestion window
//! (128 KiB on loopback, above what the receive window lets fly) and `rwnd_press` are left out;
//! a chunk the receiver drops (only a zero-window probe, when a SACK advertised no window) is
//! resent at the next SACK or after `rto_min`, where the kernel waits for three gap reports or
//! its T3 timer; the timers are looked at only when the pair is otherwise stuck (sender asleep,
//! receiver with nothing to read), which at these rates is the only time they can fire;
//! migrations stay inside a node; a pair's two tasks start on one node.
//!
//! State, as the kernel keeps it in the two sockets of a pair: the sender's socket (chunks
//! queued and unacknowledged, what it has seen acknowledged, its view of the window) behind
//! a lock held by whoever runs the sender's side, across that side's allocations and frees
//! — the sender's own steps, or the receiver's CPU handling a SACK while the sender sleeps
//! for buffer space, as the kernel's softirq takes a socket no task owns; the reader's place
//! in its front packet behind a lock its steps hold, copies and frees included; and between
//! them the association's bookkeeping (packets delivered and not yet read, the receiver's
//! window and SACK state, both timers, the SACK waiting in a running sender's backlog, the
//! sleep flags) behind a lock held for bookkeeping only. A SACK carries the receiver's count
//! of chunks taken (its cumulative TSN), so the receiver builds one without the sender's
//! queues. Which task runs where ([`Tasks`]) is behind one more bookkeeping lock. Lock order:
//! the reader, then the sender's socket, then the association; [`Tasks`]'s lock is taken
//! last, never with the association's, and nothing is taken under it. So on the real runner's threads a sender allocates and
//! fills chunk and packet buffers while its receiver copies and frees earlier packets. No
//! lost wake or SACK: a task marks itself asleep in the same critical section as its last
//! look at the queue (the receiver) or at the backlog (the sender); a SACK for a sleeping
//! sender is handled by the receiver's CPU, one for a running sender waits in the backlog.
//! A step checks, once it holds its task's lock, that the task is still on its CPU (a
//! migration's swap may have moved it). The model steps one CPU at a time, so none of this
//! changes its runs.
//!
//! What another CPU sees, and when. A step runs whole when its CPU's clock is the
//! earliest, so whatever it changes is there for every CPU that runs after it, including
//! one whose clock is behind the time the change was made inside the step. So each side
//! makes the changes the other side sees at the start of a step, and the work that leads
//! to them before: a sender's step ends once it has built a packet (allocated, copied the
//! chunks, done the packet's work), and the packet reaches the receiver at the start of the
//! sender's next step; a reader's step begins a read (its work and the copy), and the read
//! ends — the message consumed, the window grown, the packet freed, the socket released —
//! at the start of its next step. A reader that finds a packet queued that arrives after its
//! own time (a CPU whose clock is ahead queued it: real threads, a skewed schedule) waits
//! until it arrives (`arrivals_awaited`, 0 in the model's own order), and a task that a
//! migration puts on a CPU whose clock is behind its own time waits for that time first
//! ([`TaskClock`]). Before this, a reader woken late read
//! packets a sender's step sent up to ten microseconds later, and the SACKs those packets
//! drew counted chunks the reader had in truth not yet reached.

use std::collections::VecDeque;
use std::sync::Mutex;

use anyhow::{anyhow, bail, Result};
use pagealloc::{Gfp, Order, Pfn};

use super::net::{order_of, timed, PageCursor, TaskClock, Tasks};
use super::{ns, ParamSpec, Params, WorkloadInfo};
use crate::model::{lock, part, Ctx, Latest, ModelInfo, Next, Workload};

/// The registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "netperf-sctp-stream-many",
    summary: "netperf SCTP_STREAM_MANY, 64 loopback pairs: order-2 chunk buffers freed on SACK, \
              order 2-4 packet buffers freed by the receiver on its CPU",
    params: PARAMS,
    default_machine: "icl-2s-128",
    build: |p| Box::new(NetperfSctp::new(p)),
    fit: super::fit_pairs,
};

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "pairs",
        default: 64.0,
        min: 1.0,
        max: 4096.0,
        unit: "pairs",
        doc: "netperf/netserver process pairs",
        source: "seed 001: \"64-pair processes\" on 128 CPUs, LKP nr_threads 50% \
                 (docs/workloads.md §2.1)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "duration_s",
        default: 1.5,
        min: 0.0001,
        max: 3600.0,
        unit: "virtual s",
        doc: "length of the run",
        source: "assumed: LKP runs 300 s (-l 300, docs/workloads.md §2.1); the pagesets reach \
                 their steady state within milliseconds at these rates; 1.5 s includes one vmstat \
                 tick (the tuned presets' decay) and keeps a full-size run near 15 s of wall time",
        scaled: true,
        whole: false,
    },
    ParamSpec {
        name: "message_bytes",
        default: 10240.0,
        min: 1.0,
        max: 60_000.0,
        unit: "bytes",
        doc: "send size (netperf -m); one DATA chunk per message (no fragmentation)",
        source: "LKP jobs/netperf.yaml send_size: 10K (docs/workloads.md §2.1)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "pmtu",
        default: 65536.0,
        min: 1500.0,
        max: 65536.0,
        unit: "bytes",
        doc: "path MTU: bounds the chunks bundled in a packet",
        source: "loopback MTU 65536 (docs/workloads.md §2.2: 'MTU 64 KiB')",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "sndbuf_bytes",
        default: 212_992.0,
        min: 16_384.0,
        max: 1e9,
        unit: "bytes",
        doc: "sk_sndbuf: chunk buffers (truesize) a sender may hold before it sleeps",
        source: "sock_init_data's sk_sndbuf = net.core.wmem_default, 212,992 B on x86-64 \
                 (256 packets of SKB_TRUESIZE(256)); sctp_init_sock keeps it, and netperf sets \
                 SO_SNDBUF only when -s is given (docs/workloads.md §2.3)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "rcvbuf_bytes",
        default: 212_992.0,
        min: 16_384.0,
        max: 1e9,
        unit: "bytes",
        doc: "sk_rcvbuf of the receiver: its window is half of it",
        source: "sock_init_data's sk_rcvbuf = net.core.rmem_default, 212,992 B on x86-64; \
                 sctp_init_sock keeps it, netperf sets SO_RCVBUF only when -S is given, and \
                 sctp_association_init sets rwnd = sk_rcvbuf / 2 (docs/workloads.md §2.3)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "send_ns",
        default: 1500.0,
        min: 0.0,
        max: 1e7,
        unit: "ns",
        doc: "sender's work per message besides allocations and copies: system call, \
              sctp_datamsg_from_user, chunk set-up, queueing",
        source: "assumed: SCTP's send path builds a datamsg and a chunk object per message \
                 through its state machine, a few thousand instructions",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "packet_ns",
        default: 4000.0,
        min: 0.0,
        max: 1e7,
        unit: "ns",
        doc: "work per packet on the CPU that sends it besides allocations and copies: \
              packet assembly, IP and loopback transmit, and the receive side that runs in \
              the same context (sctp_rcv, ulpevents, SACK generation and processing)",
        source: "assumed: two protocol stacks' worth of per-packet work; the profile puts ≈ 20% \
                 of cycles in receive processing inside the sender's system call \
                 (docs/workloads.md §2.2)",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "recv_ns",
        default: 1000.0,
        min: 0.0,
        max: 1e7,
        unit: "ns",
        doc: "receiver's work per message besides the copy and the frees: system call, \
              sctp_recvmsg, ulpevent release",
        source: "assumed: a system call and the dequeue of one event, about 1 µs",
        scaled: false,
        whole: false,
    },
    super::net::WAKE_NS,
    ParamSpec {
        name: "migrate_prob",
        default: 1e-3,
        min: 0.0,
        max: 1.0,
        unit: "per message",
        doc: "probability that a process moves to another CPU of its node after a message",
        source: "assumed: no migration count is published for this run; with 128 tasks on \
                 128 CPUs a wakee often finds its previous CPU busy and select_idle_sibling \
                 picks another, so about one move per thousand messages (≈ 100 per task and \
                 second at the default rates)",
        scaled: false,
        whole: false,
    },
];

/// SCTP DATA chunk header (I-DATA not used).
const DATA_CHUNK_HDR: u64 = 16;
/// The delayed-SACK timer, ps (`net.sctp.sack_timeout`, 200 ms by default).
const SACK_TIMEOUT: u64 = 200_000_000_000;
/// The retransmission timer of a chunk the receiver dropped, ps: `net.sctp.rto_min`, 1 s
/// by default, which a loopback round trip never raises the RTO above.
const RTO_MIN: u64 = 1_000_000_000_000;
/// Packets per SACK (`sack_freq`, 2 by default: RFC 4960 §6.2's every second packet).
const SACK_FREQ: u32 = 2;
/// `sctp_rwnd_upd_shift`'s default: a window update needs `sk_rcvbuf >> 4` (or a PMTU).
const RWND_UPD_SHIFT: u32 = 4;
/// SCTP common header + IPv4 header.
const PACKET_HDR: u64 = 12 + 20;
/// `MAX_HEADER` (LL_MAX_HEADER 128 + 48) added by `sctp_packet_transmit`, and
/// `skb_shared_info` (320 B) behind every kmalloc'ed skb buffer.
const SKB_OVERHEAD: u64 = 176 + 320;
/// `struct sk_buff` and `struct sctp_chunk` charged to the sender's buffer with each
/// chunk (assumed 512 B).
const CHUNK_STRUCTS: u64 = 512;

/// When `flush` delivers the packets it builds: at once (the receiver's CPU handling a
/// SACK for a sleeping sender, as the softirq does), or one at the start of the sender's
/// next step, when the work of building and sending it is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flush {
    Now,
    Later,
}

/// A packet on the receiver's queue.
#[derive(Clone, Copy, Debug)]
struct Packet {
    pfn: Pfn,
    order: Order,
    chunks: u32,
    /// When it reached the receiving socket (its queue or its backlog), ps; 0 until then.
    at: u64,
}

/// A SACK as the sender processes it (`sctp_outq_sack`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sack {
    /// Its cumulative TSN ack, as a count: every chunk up to the `cum_ack`-th the receiver
    /// has taken since the association began is acknowledged. The receiver builds it from
    /// its own count, without looking at the sender's queues; one at or below what the
    /// sender has already seen acknowledged acknowledges nothing new.
    cum_ack: u64,
    /// The window it advertises, bytes.
    a_rwnd: u64,
    /// Whether chunks the receiver dropped are now to be sent again (every SACK but the
    /// one the drop itself provoked: the kernel resends them on three gap reports or its
    /// T3 timer, after the window reopens).
    retransmit: bool,
}

/// How many queued chunks `sctp_outq_flush` bundles into the next packet, by
/// `sctp_packet_can_append_data`'s rules: Nagle holds the first chunk while data is in
/// flight and no more than a packet's worth is queued; every chunk needs the receiver's
/// window as the sender sees it, except that one chunk may always be in flight (the
/// zero-window probe). The congestion window is left out: on loopback it starts at
/// min(4 × PMTU, max(2 × PMTU, 4380 B)) = 128 KiB (`sctp_assoc_add_peer`, RFC 4960 section
/// 7.2.1), above the at most 104 KiB + one chunk the receive window lets fly, so it never
/// binds and never grows (`sctp_transport_raise_cwnd` wants it used up); its other rule, a
/// packet of at most half of it, is the PMTU's 64 KiB. `outstanding` and `peer_rwnd` are
/// bytes.
fn packet_chunks(
    queued: usize,
    max_chunks: usize,
    outstanding: u64,
    peer_rwnd: u64,
    datasize: u64,
) -> usize {
    if outstanding > 0 && queued <= max_chunks {
        return 0;
    }
    let (mut view, mut inflight, mut k) = (peer_rwnd, outstanding, 0);
    while k < queued.min(max_chunks) {
        if datasize > view && inflight > 0 {
            break;
        }
        view = view.saturating_sub(datasize);
        inflight += datasize;
        k += 1;
    }
    k
}

/// The sender's socket: its chunk queues and its side of the association. Held by whoever
/// runs the sender's side, across that side's allocations and frees, as the kernel holds
/// the socket's lock: the sender's own steps (`lock_sock` in `sctp_sendmsg`), and the
/// receiver's CPU handling a SACK while the sender sleeps (the softirq's `bh_lock_sock` of a
/// socket no task owns).
#[derive(Debug)]
struct SendSide {
    /// Chunk buffers queued, not yet in a packet (dropped ones back at the front).
    outq: VecDeque<Pfn>,
    /// Chunk buffers sent, waiting for a SACK.
    unacked: Vec<Pfn>,
    /// Chunks acknowledged so far: the sender's cumulative TSN ack point, as a count.
    acked: u64,
    /// Chunks the receiver dropped, still counted in flight until a SACK marks them for
    /// retransmission.
    lost: u64,
    /// The sender's view of the receiver's window, bytes (`peer.rwnd`).
    peer_rwnd: u64,
    /// A packet built by the sender's last step, delivered at the start of its next: when
    /// the work of building and sending it is done ([`Flush::Later`]).
    pending: Option<Packet>,
    /// The sending task's own time.
    clock: TaskClock,
    packets: u64,
    packet_chunks: u64,
    drops: u64,
    alloc_failures: u64,
}

impl SendSide {
    /// A fresh association: the sender sees the receiver's whole initial window.
    fn new(rwnd: u64) -> SendSide {
        SendSide {
            outq: VecDeque::new(),
            unacked: Vec::new(),
            acked: 0,
            lost: 0,
            peer_rwnd: rwnd,
            pending: None,
            clock: TaskClock::default(),
            packets: 0,
            packet_chunks: 0,
            drops: 0,
            alloc_failures: 0,
        }
    }
}

/// The reader's own state: its place in the front packet. Only the receiving task's steps
/// take it, held throughout (`lock_sock` in `sctp_recvmsg`).
#[derive(Debug, Default)]
struct Reader {
    /// The front packet, while a read of one of its messages is under way: the read's
    /// effects come at the start of the reader's next step, when its work is done.
    reading: Option<Packet>,
    /// Chunks of the front packet already read.
    read_in_front: u32,
    /// The copy position in the front packet.
    rcursor: PageCursor,
    received: u64,
    /// Times the reader found a packet queued that arrives after its own time, and waited
    /// for it: never in the model's clock order.
    awaited: u64,
    /// The receiving task's own time.
    clock: TaskClock,
}

/// What the two sides share: the packets delivered and not yet read, the receiver's window
/// and SACK state, the timers, the SACK waiting for a running sender, and who sleeps.
/// Locked for bookkeeping only, never across an allocator call or a copy.
#[derive(Debug, Default)]
struct Assoc {
    /// Packets delivered to the receiver; only the reader takes them off.
    rxq: VecDeque<Packet>,
    /// Chunks the receiver has taken since the association began (its cumulative TSN).
    taken: u64,
    /// The receiver's window, bytes (`asoc->rwnd`), the part of a chunk accepted beyond it
    /// (`rwnd_over`) and the window its last SACK advertised (`a_rwnd`).
    rwnd: u64,
    rwnd_over: u64,
    a_rwnd: u64,
    /// Packets received since the receiver's last SACK (`sack_cnt`).
    packets_since_sack: u32,
    /// When the receiver's delayed-SACK timer fires.
    sack_due: Option<u64>,
    /// When the T3 timer resends dropped chunks if no SACK has.
    rtx_due: Option<u64>,
    /// A SACK waiting in the sender's socket backlog, processed when its `sendmsg` ends.
    backlog: Option<Sack>,
    /// Packets that arrived while the reader owned its socket (inside `sctp_recvmsg`),
    /// waiting in the receiving socket's backlog for its `release_sock`.
    rx_backlog: VecDeque<Packet>,
    /// Until when the reader owns its socket: the end of its current read (`u64::MAX`
    /// while a real thread's read is under way).
    reader_owns_until: u64,
    /// Packets taken from that backlog.
    backlogged: u64,
    sender_waits: bool,
    receiver_waits: bool,
    window_updates: u64,
    timer_waits: u64,
    /// Time spent waiting for a timer, ps.
    timer_wait_ps: u64,
}

impl Assoc {
    /// A fresh association: the receiver's whole window open and advertised.
    fn new(rwnd: u64) -> Assoc {
        Assoc { rwnd, a_rwnd: rwnd, ..Assoc::default() }
    }

    /// `sctp_eat_data`'s window check and `sctp_assoc_rwnd_decrease` for one arriving chunk
    /// of `len` bytes: false if the receiver drops it (no window left at all); a chunk
    /// larger than what is left (a zero-window probe) is taken and the excess kept in
    /// `rwnd_over`. (`rwnd_press` is left out: the unread events' memory, their length plus
    /// an `sk_buff` each, stays under `sk_rcvbuf` while the window holds them.)
    fn rwnd_decrease(&mut self, len: u64) -> bool {
        if self.rwnd == 0 || self.rwnd_over > 0 {
            return false;
        }
        if self.rwnd >= len {
            self.rwnd -= len;
        } else {
            self.rwnd_over = len - self.rwnd;
            self.rwnd = 0;
        }
        true
    }

    /// `sctp_assoc_rwnd_increase` as the application reads `len` bytes: the excess is paid
    /// back first; true when the window has grown by `update` bytes or more over what the
    /// last SACK advertised, so a window-update SACK goes out now (`sctp_peer_needs_update`),
    /// whether or not the sender waits for it.
    fn rwnd_increase(&mut self, len: u64, update: u64) -> bool {
        let repaid = len.min(self.rwnd_over);
        self.rwnd_over -= repaid;
        self.rwnd += len - repaid;
        self.rwnd > self.a_rwnd && self.rwnd - self.a_rwnd >= update
    }

    /// A packet with data arrives (`sctp_gen_sack` after its last chunk): true if it is
    /// the `SACK_FREQ`-th since the last SACK, which is then sent at once; otherwise the
    /// first one starts the delayed-SACK timer.
    fn packet_arrived(&mut self, now: u64) -> bool {
        self.packets_since_sack += 1;
        if self.packets_since_sack >= SACK_FREQ {
            return true;
        }
        self.sack_due.get_or_insert(now + SACK_TIMEOUT);
        false
    }

    /// The receiver builds a SACK of everything it has taken: it advertises its window, and
    /// the count and the timer start again.
    fn make_sack(&mut self, retransmit: bool) -> Sack {
        self.a_rwnd = self.rwnd;
        self.packets_since_sack = 0;
        self.sack_due = None;
        Sack { cum_ack: self.taken, a_rwnd: self.a_rwnd, retransmit }
    }

    /// A SACK the receiver sends outside the sender's `sendmsg`: returned if the sender
    /// sleeps for buffer space (the caller handles it at once, as the softirq does, with
    /// [`NetperfSctp::sack_sleeping_sender`]), else left in the sender's socket backlog.
    fn sack_to_sender(&mut self, sack: Sack) -> Option<Sack> {
        if self.sender_waits {
            Some(sack)
        } else {
            self.backlog = Some(sack);
            None
        }
    }

    /// The earliest timer that can still move a pair whose sender waits for buffer space
    /// and whose receiver has read everything.
    fn timer_due(&self) -> Option<u64> {
        match (self.sack_due, self.rtx_due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// One pair: tasks `2 × i` (sender) and `2 × i + 1` (receiver). Lock order: the reader, then
/// the sender's socket, then the association (module doc).
#[derive(Debug)]
struct Pair {
    send: Mutex<SendSide>,
    reader: Mutex<Reader>,
    assoc: Mutex<Assoc>,
}

/// One run. The pairs' sender and receiver steps overlap on the real runner: the sender's
/// allocations run under its socket's lock, the reader's copies and frees under its own,
/// and the two meet only in the association's bookkeeping lock.
#[derive(Debug)]
pub struct NetperfSctp {
    pairs: usize,
    end: u64,
    msg: u64,
    /// Bytes of a chunk on the wire (padded to 4).
    wire: u64,
    chunk_order: Order,
    /// Packet buffer order by number of chunks (index 1..=max_chunks).
    packet_order: Vec<Order>,
    max_chunks: usize,
    /// Chunk buffers a sender may hold: sk_sndbuf / truesize, rounded up (it sleeps only
    /// once the space is used up).
    sndbuf_chunks: usize,
    /// The receiver's initial window, bytes.
    rwnd_bytes: u64,
    /// Window growth that triggers a window-update SACK, bytes.
    rwnd_update_bytes: u64,
    send_work: u64,
    packet_work: u64,
    recv_work: u64,
    wake: u64,
    migrate_prob: f64,
    /// Which task runs where; bookkeeping only.
    tasks: Mutex<Tasks>,
    p: Vec<Pair>,
    /// The latest step's time, for progress.
    latest: Latest,
}

impl NetperfSctp {
    /// A run with these parameters.
    pub fn new(p: &Params) -> NetperfSctp {
        let msg = p.count("message_bytes");
        let wire = (DATA_CHUNK_HDR + msg).next_multiple_of(4);
        let pmtu = p.count("pmtu");
        let max_chunks = ((pmtu.saturating_sub(PACKET_HDR)) / wire).max(1) as usize;
        let chunk_order = Order(order_of(wire + 320));
        let packet_order = (0..=max_chunks)
            .map(|k| Order(order_of(k as u64 * wire + PACKET_HDR + SKB_OVERHEAD)))
            .collect();
        let truesize = (4096 << chunk_order.0) + CHUNK_STRUCTS;
        let sndbuf = p.count("sndbuf_bytes");
        let rcvbuf = p.count("rcvbuf_bytes");
        NetperfSctp {
            pairs: p.count("pairs") as usize,
            end: ns(p.get("duration_s") * 1e9),
            msg,
            wire,
            chunk_order,
            packet_order,
            max_chunks,
            sndbuf_chunks: sndbuf.div_ceil(truesize) as usize,
            rwnd_bytes: rcvbuf / 2,
            // sctp_peer_needs_update: max(sk_rcvbuf >> rwnd_upd_shift, pathmtu).
            rwnd_update_bytes: (rcvbuf >> RWND_UPD_SHIFT).max(pmtu),
            send_work: ns(p.get("send_ns")),
            packet_work: ns(p.get("packet_ns")),
            recv_work: ns(p.get("recv_ns")),
            wake: ns(p.get("wake_ns")),
            migrate_prob: p.get("migrate_prob"),
            tasks: Mutex::default(),
            p: Vec::new(),
            latest: Latest::default(),
        }
    }

    /// kmalloc-large: a compound page of the caller's GFP_KERNEL.
    fn kmalloc_large(s: &mut SendSide, ctx: &mut Ctx<'_>, order: Order) -> Option<Pfn> {
        let r = ctx.alloc(Gfp::KERNEL | Gfp::COMP, order);
        if r.is_none() {
            s.alloc_failures += 1;
        }
        r
    }

    /// Wake task `t`'s CPU at `at`: its CPU is looked up with no pair lock held, so a task
    /// that migrated meanwhile is woken where it is now.
    fn wake_task(&self, t: usize, at: u64, ctx: &mut Ctx<'_>) {
        let cpu = lock(&self.tasks).cpu(t);
        ctx.wake(cpu, at);
    }

    /// `sctp_outq_sack` on this CPU: free the acknowledged chunk buffers and take the
    /// advertised window less what is still in flight as the sender's view.
    fn process_sack(
        &self,
        i: usize,
        s: &mut SendSide,
        sack: Sack,
        ctx: &mut Ctx<'_>,
    ) -> Result<()> {
        let n = (sack.cum_ack.saturating_sub(s.acked) as usize).min(s.unacked.len());
        s.acked += n as u64;
        let acked: Vec<Pfn> = s.unacked.drain(..n).collect();
        if sack.retransmit {
            // Marked for retransmission, they no longer count as outstanding.
            s.lost = 0;
            lock(&self.p[i].assoc).rtx_due = None;
        }
        let outstanding = (s.unacked.len() as u64 + s.lost) * self.msg;
        s.peer_rwnd = sack.a_rwnd.saturating_sub(outstanding);
        for pfn in acked {
            ctx.free(pfn, self.chunk_order)?;
        }
        Ok(())
    }

    /// `sctp_outq_flush` on this CPU: send what Nagle and the receiver's window allow. With
    /// [`Flush::Later`] it builds at most one packet and leaves it pending (true if it did).
    fn flush(&self, i: usize, s: &mut SendSide, when: Flush, ctx: &mut Ctx<'_>) -> Result<bool> {
        loop {
            let outstanding = (s.unacked.len() as u64 + s.lost) * self.msg;
            let k =
                packet_chunks(s.outq.len(), self.max_chunks, outstanding, s.peer_rwnd, self.msg);
            if k == 0 {
                return Ok(false);
            }
            let order = self.packet_order[k];
            let Some(pkt) = Self::kmalloc_large(s, ctx, order) else {
                return Ok(false);
            };
            ctx.work(self.packet_work);
            let mut wcursor = PageCursor::default();
            for j in 0..k as u64 {
                let chunk = s
                    .outq
                    .pop_front()
                    .ok_or_else(|| anyhow!("pair {i}: packet of {k} chunks, fewer queued"))?;
                // sctp_packet_pack: copy the chunk into the packet.
                ctx.touch(chunk, self.wire);
                wcursor.copy(ctx, pkt, PACKET_HDR + j * self.wire, self.wire);
                s.unacked.push(chunk);
            }
            s.packets += 1;
            s.packet_chunks += k as u64;
            s.peer_rwnd = s.peer_rwnd.saturating_sub(k as u64 * self.msg);
            let pkt = Packet { pfn: pkt, order, chunks: k as u32, at: 0 };
            match when {
                Flush::Now => self.deliver(i, s, pkt, ctx)?,
                Flush::Later => {
                    s.pending = Some(pkt);
                    return Ok(true);
                }
            }
        }
    }

    /// The packet's receive side, in the sender's context as on loopback: the receiver
    /// takes the chunks its window admits and drops the rest (sending them back to the
    /// sender's queue, counted in flight, and answering with a SACK at once), then SACKs
    /// every second packet. The packet is on the receiver's queue once the association's
    /// lock is let go, and may be read and freed on its CPU from then on.
    fn deliver(&self, i: usize, s: &mut SendSide, pkt: Packet, ctx: &mut Ctx<'_>) -> Result<()> {
        let now = ctx.now();
        let pkt = Packet { at: now, ..pkt };
        let (taken, wake_reader, sack) = {
            let mut a = lock(&self.p[i].assoc);
            if now < a.reader_owns_until && !a.receiver_waits {
                // The reader owns its socket: the packet waits in the socket's backlog. (A
                // reader asleep owns nothing, whatever its last release's time: a sender
                // whose clock is behind that release, on real threads, delivers as usual
                // and wakes it, rather than leaving the packet where no one takes it.)
                a.rx_backlog.push_back(pkt);
                return Ok(());
            }
            let (taken, wake_reader, sack) = self.receive(&mut a, pkt, now);
            if sack.is_some() {
                // Processed before the sender's sendmsg returns; it supersedes any SACK
                // still in its backlog.
                a.backlog = None;
            }
            (taken, wake_reader, sack)
        };
        self.received(i, s, pkt, taken, ctx)?;
        if wake_reader {
            self.wake_task(2 * i + 1, now + self.wake, ctx);
        }
        if let Some(sack) = sack {
            self.process_sack(i, s, sack, ctx)?;
        }
        Ok(())
    }

    /// The receiving socket takes packet `pkt` (`sctp_inq_push` → `sctp_sf_eat_data_6_2`
    /// → `sctp_gen_sack`): the chunks its window admits go on the receive queue, and a SACK
    /// goes out at once for a drop or for the second packet. Returns the chunks taken,
    /// whether a sleeping reader is to be woken, and the SACK.
    fn receive(&self, a: &mut Assoc, pkt: Packet, now: u64) -> (u32, bool, Option<Sack>) {
        let taken = (0..pkt.chunks).take_while(|_| a.rwnd_decrease(self.msg)).count() as u32;
        let mut wake_reader = false;
        if taken > 0 {
            a.rxq.push_back(Packet { chunks: taken, ..pkt });
            a.taken += u64::from(taken);
            wake_reader = std::mem::take(&mut a.receiver_waits);
        }
        let sack = if taken < pkt.chunks {
            a.rtx_due.get_or_insert(now + RTO_MIN);
            // discard_force in sctp_sf_eat_data_6_2: a SACK at once.
            Some(a.make_sack(false))
        } else if a.packet_arrived(now) {
            Some(a.make_sack(true))
        } else {
            None
        };
        (taken, wake_reader, sack)
    }

    /// The sender's side of a received packet: chunks the receiver dropped go back to the
    /// front of the queue, counted in flight until a SACK marks them, and a packet with
    /// nothing taken is freed.
    fn received(
        &self,
        i: usize,
        s: &mut SendSide,
        pkt: Packet,
        taken: u32,
        ctx: &mut Ctx<'_>,
    ) -> Result<()> {
        let dropped = pkt.chunks - taken;
        for _ in 0..dropped {
            let chunk =
                s.unacked.pop().ok_or_else(|| anyhow!("pair {i}: dropped an unsent chunk"))?;
            s.outq.push_front(chunk);
        }
        s.drops += u64::from(dropped);
        s.lost += u64::from(dropped);
        if taken == 0 {
            ctx.free(pkt.pfn, pkt.order)?;
        }
        Ok(())
    }

    /// The reader's `release_sock`: the packets that came while it owned its socket are
    /// taken now, on its CPU, one by one; a SACK they make goes to the sender, handled at
    /// once if it sleeps (as the softirq does), else left in its backlog.
    fn release_reader(&self, i: usize, ctx: &mut Ctx<'_>) -> Result<()> {
        loop {
            let now = ctx.now();
            {
                let mut a = lock(&self.p[i].assoc);
                if a.rx_backlog.is_empty() {
                    // The socket is released only once its backlog is empty: packets that
                    // come while it drains queue behind the ones before them.
                    a.reader_owns_until = a.reader_owns_until.min(now);
                    return Ok(());
                }
            }
            // Only the reader takes packets off the backlog, so it is not empty below; the
            // sender's socket comes before the association in the lock order.
            let mut s = lock(&self.p[i].send);
            let (pkt, taken, sack_now) = {
                let mut a = lock(&self.p[i].assoc);
                let pkt = a.rx_backlog.pop_front().ok_or_else(|| {
                    anyhow!("pair {i}: the reader's backlog emptied under its reader")
                })?;
                a.backlogged += 1;
                let (taken, _, sack) = self.receive(&mut a, pkt, now);
                (pkt, taken, sack.and_then(|sack| a.sack_to_sender(sack)))
            };
            self.received(i, &mut s, pkt, taken, ctx)?;
            drop(s);
            if let Some(sack) = sack_now {
                self.sack_sleeping_sender(i, sack, ctx)?;
            }
        }
    }

    /// A SACK the receiver sends to a sender asleep for buffer space, outside its
    /// `sendmsg`: the sender has released its socket, so the SACK is handled at once on this
    /// CPU as the kernel's softirq does (free what it acknowledges, send what the window now
    /// allows, wake the sender). A running sender owns its socket, so a SACK for it waits
    /// in the backlog instead, put there by the caller under the association's lock.
    fn sack_sleeping_sender(&self, i: usize, sack: Sack, ctx: &mut Ctx<'_>) -> Result<()> {
        {
            let mut s = lock(&self.p[i].send);
            self.process_sack(i, &mut s, sack, ctx)?;
            self.flush(i, &mut s, Flush::Now, ctx)?;
        }
        lock(&self.p[i].assoc).sender_waits = false;
        self.wake_task(2 * i, ctx.now() + self.wake, ctx);
        Ok(())
    }

    /// Pair `i` has read everything and its sender waits for buffer space, so nothing
    /// moves it until `due`: counted. It is the kernel's state only if no window update is
    /// due (the last SACK advertised more than the whole window less the update threshold);
    /// otherwise a window update was lost, a bug of this workload.
    fn wait_for_timer(&self, a: &mut Assoc, i: usize, due: u64, now: u64) -> Result<()> {
        if a.rwnd > a.a_rwnd && a.rwnd - a.a_rwnd >= self.rwnd_update_bytes {
            bail!(
                "pair {i}: waits for a timer with a window update due (window {} B, {} B \
                 advertised)",
                a.rwnd,
                a.a_rwnd
            );
        }
        if due > now {
            a.timer_waits += 1;
            a.timer_wait_ps += due - now;
        }
        Ok(())
    }

    /// The pair's timers, once due: the delayed SACK (`sctp_sf_do_6_2_sack`) and the
    /// retransmission of dropped chunks (T3-rtx), for a sender asleep for buffer space.
    fn expire_timers(&self, i: usize, ctx: &mut Ctx<'_>) -> Result<()> {
        let now = ctx.now();
        let sack = {
            let mut s = lock(&self.p[i].send);
            let mut a = lock(&self.p[i].assoc);
            if a.rtx_due.is_some_and(|d| d <= now) {
                s.lost = 0;
                a.rtx_due = None;
            }
            if a.sack_due.is_some_and(|d| d <= now) {
                a.make_sack(true)
            } else {
                // Only the T3 timer fired: the window as last advertised, nothing new acked.
                Sack { cum_ack: 0, a_rwnd: a.a_rwnd, retransmit: true }
            }
        };
        self.sack_sleeping_sender(i, sack, ctx)
    }

    /// The sender's step: deliver the packet its last step built and send what may follow
    /// it, or, between `sendmsg` calls, the SACK left in its backlog and the next message.
    /// A step ends with each packet built, which is delivered when the next begins: the
    /// packet reaches the receiver when its work is done, after every CPU whose clock was
    /// behind has run, and not when the step that built it runs (in the model, before them).
    fn sender(&self, t: usize, s: &mut SendSide, ctx: &mut Ctx<'_>) -> Result<Next> {
        let i = t / 2;
        if let Some(pkt) = s.pending.take() {
            self.deliver(i, s, pkt, ctx)?;
            if self.flush(i, s, Flush::Later, ctx)? {
                return Ok(Next::Continue);
            }
            // The sendmsg is over.
            return Ok(self.migrate(t, ctx));
        }
        // release_sock at the end of the previous sendmsg: the SACKs that came meanwhile.
        let backlog = lock(&self.p[i].assoc).backlog.take();
        if let Some(sack) = backlog {
            self.process_sack(i, s, sack, ctx)?;
            if self.flush(i, s, Flush::Later, ctx)? {
                return Ok(Next::Continue);
            }
        }
        if s.outq.len() + s.unacked.len() >= self.sndbuf_chunks {
            return self.sender_sleeps(i, ctx);
        }
        ctx.work(self.send_work);
        if let Some(chunk) = Self::kmalloc_large(s, ctx, self.chunk_order) {
            // copy_from_user into the chunk.
            ctx.touch(chunk, self.wire);
            s.outq.push_back(chunk);
        }
        if self.flush(i, s, Flush::Later, ctx)? {
            return Ok(Next::Continue);
        }
        Ok(self.migrate(t, ctx))
    }

    /// The sender of pair `i` has no buffer space: it sleeps until a SACK frees some. Its
    /// mark is set in the same critical section as its last look at the backlog, where a
    /// SACK may have come since its step began (on real threads; it then runs again to
    /// process it, as `sk_wait_event`'s release of the socket does).
    fn sender_sleeps(&self, i: usize, ctx: &mut Ctx<'_>) -> Result<Next> {
        let now = ctx.now();
        let wake_reader_at = {
            let mut a = lock(&self.p[i].assoc);
            if a.backlog.is_some() {
                return Ok(Next::Continue);
            }
            a.sender_waits = true;
            if !std::mem::take(&mut a.receiver_waits) {
                return Ok(Next::Block);
            }
            // The receiver sleeps with nothing to read, so only a timer can acknowledge
            // what is in flight: wake it when the first one fires.
            let at = a.timer_due().unwrap_or(now);
            self.wait_for_timer(&mut a, i, at, now)?;
            at
        };
        self.wake_task(2 * i + 1, wake_reader_at, ctx);
        Ok(Next::Block)
    }

    /// The receiver of pair `i`'s next packet, or what it does without one: with nothing to
    /// read it sleeps until a packet comes, or, when the sender waits too, until the pair's
    /// first timer fires (and handles it, which may bring a packet). It marks itself asleep
    /// in the same critical section as its last look at the queue.
    fn front_or_idle(
        &self,
        i: usize,
        ctx: &mut Ctx<'_>,
    ) -> Result<std::result::Result<Packet, Next>> {
        let now = ctx.now();
        {
            let mut a = lock(&self.p[i].assoc);
            if let Some(&pkt) = a.rxq.front() {
                return Ok(Ok(pkt));
            }
            match (a.sender_waits, a.timer_due()) {
                (true, Some(due)) if now < due => {
                    self.wait_for_timer(&mut a, i, due, now)?;
                    return Ok(Err(Next::SleepUntil(due)));
                }
                (true, Some(_)) => {}
                _ => {
                    a.receiver_waits = true;
                    return Ok(Err(Next::Block));
                }
            }
        }
        self.expire_timers(i, ctx)?;
        let mut a = lock(&self.p[i].assoc);
        match a.rxq.front() {
            Some(&pkt) => Ok(Ok(pkt)),
            None => {
                a.receiver_waits = true;
                Ok(Err(Next::Block))
            }
        }
    }

    /// The reader's step: end the read its last step began (the message consumed, the
    /// window grown, the packet freed after its last chunk, the socket released), then begin
    /// the next: the work and the copy, whose effects come at the start of the next step,
    /// when the work is done — so a sender whose clock is behind the read's end finds the
    /// reader still inside it, and no CPU sees the window grow before it has.
    fn receiver(&self, t: usize, r: &mut Reader, ctx: &mut Ctx<'_>) -> Result<Next> {
        let i = t / 2;
        if let Some(pkt) = r.reading.take() {
            self.end_read(i, r, pkt, ctx)?;
            if let Some(next) = self.moved(t, ctx) {
                return Ok(next);
            }
        }
        // Packets that came while the reader did not run (nothing is left there otherwise).
        self.release_reader(i, ctx)?;
        let pkt = match self.front_or_idle(i, ctx)? {
            Ok(pkt) => pkt,
            Err(next) => return Ok(next),
        };
        if ctx.now() < pkt.at {
            // Queued by a CPU whose clock is ahead (real threads, a skewed schedule): it is
            // not there before it arrives.
            r.awaited += 1;
            return Ok(Next::SleepUntil(pkt.at));
        }
        lock(&self.p[i].assoc).reader_owns_until = u64::MAX;
        ctx.work(self.recv_work);
        let at = PACKET_HDR + u64::from(r.read_in_front) * self.wire + DATA_CHUNK_HDR;
        // copy_to_user of one message.
        r.rcursor.copy(ctx, pkt.pfn, at, self.msg);
        r.reading = Some(pkt);
        Ok(Next::Continue)
    }

    /// The end of a read of one message of the front packet `pkt`: `sctp_ulpevent_free`
    /// grows the window (a window-update SACK if it grew enough), the packet goes after its
    /// last chunk, and `release_sock` takes the packets that came during the read.
    fn end_read(&self, i: usize, r: &mut Reader, pkt: Packet, ctx: &mut Ctx<'_>) -> Result<()> {
        r.read_in_front += 1;
        r.received += 1;
        let done = r.read_in_front == pkt.chunks;
        let sack_for_sleeper = {
            let mut a = lock(&self.p[i].assoc);
            if done {
                a.rxq.pop_front();
            }
            // sctp_ulpevent_free → sctp_assoc_rwnd_increase.
            if a.rwnd_increase(self.msg, self.rwnd_update_bytes) {
                a.window_updates += 1;
                let sack = a.make_sack(true);
                a.sack_to_sender(sack)
            } else {
                None
            }
        };
        if done {
            r.read_in_front = 0;
            r.rcursor.reset();
            ctx.free(pkt.pfn, pkt.order)?;
        }
        if let Some(sack) = sack_for_sleeper {
            self.sack_sleeping_sender(i, sack, ctx)?;
        }
        self.release_reader(i, ctx)
    }

    /// After a call of task `t`: maybe migrate it ([`Tasks::step_migrate`]). On real threads
    /// another task's migration may have swapped `t` off this CPU during the step; it then
    /// moves no further, and this CPU runs on with the task it now has.
    fn migrate(&self, t: usize, ctx: &mut Ctx<'_>) -> Next {
        self.moved(t, ctx).unwrap_or(Next::Continue)
    }

    /// [`migrate`](Self::migrate), `None` when task `t` is still on this CPU after it.
    fn moved(&self, t: usize, ctx: &mut Ctx<'_>) -> Option<Next> {
        let mut tasks = lock(&self.tasks);
        if tasks.on(ctx.cpu()) != Some(t) {
            return Some(Next::Continue);
        }
        tasks.step_migrate(t, self.migrate_prob, ctx)
    }

    /// Task `t`'s step, holding `own` (its own state's lock, with the task's own time): the
    /// end of the run, or its sender's or receiver's work, not before the task's time.
    fn step_task<T>(
        &self,
        t: usize,
        own: &mut T,
        clock: impl Fn(&mut T) -> &mut TaskClock,
        ctx: &mut Ctx<'_>,
        run: impl FnOnce(&Self, usize, &mut T, &mut Ctx<'_>) -> Result<Next>,
    ) -> Result<Next> {
        if !Tasks::still_on(&self.tasks, ctx.cpu(), t) {
            return Ok(Next::Continue);
        }
        timed(ctx, clock, own, |ctx, own| {
            self.latest.note(ctx.cpu(), ctx.now());
            if ctx.now() >= self.end {
                return Ok(lock(&self.tasks).finish_pair(t, ctx));
            }
            run(self, t, own, ctx)
        })
    }
}

impl Workload for NetperfSctp {
    fn start(&mut self, info: &ModelInfo) -> Result<Vec<u32>> {
        let tasks = Tasks::place(info, self.pairs, 2, 0x7363_7470_5f73_746d)?;
        let cpus = tasks.all_cpus();
        self.tasks = Mutex::new(tasks);
        self.p = (0..self.pairs)
            .map(|_| Pair {
                send: Mutex::new(SendSide::new(self.rwnd_bytes)),
                reader: Mutex::default(),
                assoc: Mutex::new(Assoc::new(self.rwnd_bytes)),
            })
            .collect();
        Ok(cpus)
    }

    fn step(&self, ctx: &mut Ctx<'_>) -> Result<Next> {
        let t = match lock(&self.tasks).on_or_idle(ctx.cpu()) {
            Ok(t) => t,
            Err(idle) => return Ok(idle),
        };
        let pair = &self.p[t / 2];
        if t % 2 == 0 {
            self.step_task(t, &mut *lock(&pair.send), |s| &mut s.clock, ctx, Self::sender)
        } else {
            self.step_task(t, &mut *lock(&pair.reader), |r| &mut r.clock, ctx, Self::receiver)
        }
    }

    fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
        let tasks = part(&mut self.tasks);
        let mut v = Vec::new();
        for (i, p) in self.p.iter_mut().enumerate() {
            let (s, r) = (tasks.cpu(2 * i), tasks.cpu(2 * i + 1));
            let send = part(&mut p.send);
            let chunks = send.outq.drain(..).chain(send.unacked.drain(..));
            v.extend(chunks.map(|c| (s, c, self.chunk_order)));
            // A packet built and not yet delivered.
            v.extend(send.pending.take().map(|k| (s, k.pfn, k.order)));
            // The packets delivered to the reader: taken, and still in its socket's backlog.
            let a = part(&mut p.assoc);
            let packets = a.rxq.drain(..).chain(a.rx_backlog.drain(..));
            v.extend(packets.map(|k| (r, k.pfn, k.order)));
        }
        v
    }

    fn metrics(&self) -> Vec<(String, f64)> {
        let (mut msgs, mut packets, mut chunks, mut drops, mut failures) = (0, 0, 0, 0, 0);
        let (mut updates, mut waits, mut wait_ps, mut backlogged) = (0, 0, 0, 0);
        let mut awaited = 0;
        for p in &self.p {
            {
                let r = lock(&p.reader);
                (msgs, awaited) = (msgs + r.received, awaited + r.awaited);
            }
            let s = lock(&p.send);
            (packets, chunks) = (packets + s.packets, chunks + s.packet_chunks);
            (drops, failures) = (drops + s.drops, failures + s.alloc_failures);
            let a = lock(&p.assoc);
            (updates, waits, wait_ps) =
                (updates + a.window_updates, waits + a.timer_waits, wait_ps + a.timer_wait_ps);
            backlogged += a.backlogged;
        }
        let secs = self.end as f64 / 1e12;
        vec![
            ("score".into(), (msgs * self.msg * 8) as f64 / 1e6 / secs),
            ("messages".into(), msgs as f64),
            ("chunks_per_packet".into(), chunks as f64 / packets.max(1) as f64),
            ("migrations".into(), lock(&self.tasks).migrations() as f64),
            ("window_updates".into(), updates as f64),
            ("timer_waits".into(), waits as f64),
            ("timer_wait_s".into(), wait_ps as f64 / 1e12),
            ("reader_backlog_packets".into(), backlogged as f64),
            ("arrivals_awaited".into(), awaited as f64),
            ("packets".into(), packets as f64),
            ("drops".into(), drops as f64),
            ("alloc_failures".into(), failures as f64),
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

    fn build(extra: &[&str]) -> NetperfSctp {
        let info = workload::find("netperf-sctp-stream-many").unwrap();
        let o: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        NetperfSctp::new(&info.params(&o, 1.0).unwrap())
    }

    #[test]
    fn ten_kib_messages_make_order_2_chunks_and_order_2_to_4_packets() {
        let w = build(&[]);
        assert_eq!(w.wire, 10_256);
        assert_eq!(w.chunk_order, Order(2));
        assert_eq!(w.max_chunks, 6);
        let orders: Vec<u8> = w.packet_order[1..].iter().map(|o| o.0).collect();
        assert_eq!(orders, [2, 3, 3, 4, 4, 4], "§2.2's inferred sizes");
        assert_eq!(w.sndbuf_chunks, 13);
        assert_eq!(w.rwnd_bytes, 106_496);
        assert_eq!(w.rwnd_update_bytes, 65_536, "the loopback PMTU, above sk_rcvbuf >> 4");
    }

    /// `sctp_packet_can_append_data`: Nagle holds a short queue while data is in flight,
    /// the sender's view of the window bounds a packet, and one chunk may always go when
    /// nothing is in flight (the zero-window probe).
    #[test]
    fn nagle_and_the_window_bound_a_packet() {
        const M: u64 = 10_240;
        assert_eq!(packet_chunks(6, 6, M, 106_496, M), 0, "Nagle: a packet's worth or less");
        assert_eq!(packet_chunks(3, 6, 0, 106_496, M), 3, "nothing in flight: go at once");
        assert_eq!(packet_chunks(7, 6, M, 106_496, M), 6, "a full packet");
        assert_eq!(packet_chunks(7, 6, M, 34_816, M), 3, "three chunks of window left");
        assert_eq!(packet_chunks(7, 6, 0, 4_096, M), 1, "a probe, then no window");
        assert_eq!(packet_chunks(7, 6, M, 4_096, M), 0, "no window with data in flight");
    }

    /// `sctp_eat_data` and `sctp_assoc_rwnd_decrease`: a chunk larger than what is left is
    /// taken (the excess kept as `rwnd_over`); once nothing is left, data is dropped.
    #[test]
    fn the_receiver_takes_a_probe_beyond_its_window_then_drops() {
        let mut p = Assoc::new(106_496);
        for _ in 0..10 {
            assert!(p.rwnd_decrease(10_240));
        }
        assert_eq!((p.rwnd, p.rwnd_over), (4_096, 0));
        assert!(p.rwnd_decrease(10_240), "the probe");
        assert_eq!((p.rwnd, p.rwnd_over), (0, 6_144));
        assert!(!p.rwnd_decrease(10_240), "a closed window drops data");
        // Reading pays the excess back before the window grows.
        assert!(!p.rwnd_increase(10_240, 65_536));
        assert_eq!((p.rwnd, p.rwnd_over), (4_096, 0));
    }

    /// `sctp_assoc_rwnd_increase`: a read sends a window update once the window has grown
    /// by the threshold over what the last SACK advertised, and never before; after a SACK
    /// that advertised more than the window less the threshold, reading everything sends
    /// none (the state only the delayed-SACK timer leaves).
    #[test]
    fn a_read_sends_a_window_update_at_the_threshold_only() {
        let (m, update) = (10_240, 65_536);
        let mut p = Assoc::new(106_496);
        for _ in 0..10 {
            p.rwnd_decrease(m);
        }
        p.make_sack(true);
        assert_eq!(p.a_rwnd, 4_096);
        let reads: Vec<bool> = (0..7).map(|_| p.rwnd_increase(m, update)).collect();
        assert_eq!(
            reads,
            [false, false, false, false, false, false, true],
            "at 71 680 B, not 61 440"
        );
        let mut q = Assoc::new(106_496);
        for _ in 0..6 {
            q.rwnd_decrease(m);
        }
        q.make_sack(true);
        assert_eq!(q.a_rwnd, 45_056);
        for _ in 0..4 {
            q.rwnd_decrease(m);
        }
        assert!((0..10).all(|_| !q.rwnd_increase(m, update)));
        assert_eq!(q.rwnd, 106_496);
    }

    /// `sctp_gen_sack` with `sack_freq` 2: the first packet after a SACK starts the
    /// delayed-SACK timer, the second is acknowledged at once, and a SACK stops the timer.
    #[test]
    fn every_second_packet_is_sacked_and_the_first_starts_the_timer() {
        let mut p = Assoc::new(106_496);
        assert!(!p.packet_arrived(5));
        assert_eq!(p.sack_due, Some(5 + SACK_TIMEOUT));
        assert!(p.timer_due().is_some());
        assert!(p.packet_arrived(9));
        p.make_sack(true);
        assert_eq!((p.packets_since_sack, p.sack_due), (0, None));
        assert!(!p.packet_arrived(20));
        assert_eq!(p.sack_due, Some(20 + SACK_TIMEOUT));
    }

    fn run(preset: &str, seed: u64, extra: &[&str]) -> RunOutcome {
        let info = workload::find("netperf-sctp-stream-many").unwrap();
        let mut o: Vec<String> = vec!["pairs=2".into(), "duration_s=0.004".into()];
        o.extend(extra.iter().map(|s| s.to_string()));
        let params = info.params(&o, 1.0).unwrap();
        let mut w = (info.build)(&params);
        let mut setup = small_setup(6, 512, preset, seed);
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
    fn pairs_send_bundled_packets_and_return_every_page() {
        let o = run("tune-base", 1, &[]);
        let msgs = metric(&o, "messages");
        assert!(msgs > 500.0, "{msgs}");
        let score = metric(&o, "score");
        // At most one message per send_ns per pair.
        let bound = 2.0 * 10240.0 * 8.0 / 1.5e-6 / 1e6;
        assert!(score > 0.0 && score < bound, "{score} vs {bound}");
        // Nagle, the window and the SACK of every second packet: packets of four and three
        // chunks while the receiver keeps up.
        let cpp = metric(&o, "chunks_per_packet");
        assert!((3.0..=4.0).contains(&cpp), "{cpp}");
        assert_eq!(metric(&o, "alloc_failures"), 0.0);
        // A chunk and a share of a packet per message.
        let per_msg = o.ops.allocs as f64 / msgs;
        assert!((1.2..1.4).contains(&per_msg), "{per_msg}");
        // Per seven messages: seven order-2 chunks, an order-4 and an order-3 packet; the
        // order-4 one bypasses the pagesets.
        let bypass = 1.0 - o.events.get(Counter::PcpAlloc) as f64 / o.ops.allocs as f64;
        assert!((0.09..0.13).contains(&bypass), "{bypass}");
        assert!(o.events.get(Counter::PcpFree) > 0);
    }

    #[test]
    fn same_seed_same_run() {
        let (a, b) = (run("tune-p7", 4, &[]), run("tune-p7", 4, &[]));
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    /// The receivers free order 2-3 packet buffers and allocate nothing: free_high drains
    /// under 6.6, far fewer once patch 3 keeps a batch on CPUs with a large cache share.
    #[test]
    fn receiver_frees_drive_free_high_and_patch_3_cuts_it() {
        let fh = |o: &RunOutcome| o.events.get(Counter::DrainFreeHigh);
        // Long enough for the receivers' pagesets to overflow (high ≈ 1300 pages here).
        let base = run("tune-base", 2, &["duration_s=0.03"]);
        let p3 = run("tune-p3", 2, &["duration_s=0.03"]);
        assert!(fh(&base) > 50, "{}", fh(&base));
        assert!(fh(&p3) < fh(&base), "{} vs {}", fh(&p3), fh(&base));
    }

    #[test]
    fn a_slow_receiver_closes_the_window_and_the_run_still_ends() {
        // The receiver needs 20 µs per message: the window and sk_sndbuf stop the sender.
        let o = run("modern", 5, &["recv_ns=20000", "migrate_prob=0.05"]);
        let msgs = metric(&o, "messages");
        assert!(msgs > 100.0 && msgs < 2.0 * 0.004 / 20e-6 + 2.0, "{msgs}");
        assert!(metric(&o, "migrations") > 0.0);
    }

    /// A packet that comes while the reader is inside `sctp_recvmsg` (its socket owned)
    /// waits in the socket's backlog and is taken at the reader's `release_sock`: a slow
    /// reader is inside a read most of the time, so most packets go that way, a reader that
    /// keeps up finds few. Every chunk is still taken once and in order (the run checks
    /// that every page comes back).
    #[test]
    fn packets_that_come_during_a_read_wait_for_its_release() {
        let share =
            |o: &RunOutcome| metric(o, "reader_backlog_packets") / metric(o, "packets").max(1.0);
        let slow = run("modern", 5, &["recv_ns=20000"]);
        let fast = run("modern", 5, &[]);
        assert!(share(&slow) > 0.5, "{}", share(&slow));
        assert!(share(&fast) < share(&slow), "{} vs {}", share(&fast), share(&slow));
        assert!(metric(&slow, "messages") > 100.0);
    }

    /// A packet reaches the reader when the work of building and sending it is done: the
    /// sender delivers it at the start of its next step, so no reader, whatever its clock,
    /// finds it early (`arrivals_awaited` counts the times a reader finds a packet queued
    /// that arrives after its own time, and waits). Delivered by the step that built it, as
    /// before, packets were read up to the step's length before they were sent: about
    /// 10 µs early in every one of these runs.
    #[test]
    fn no_packet_is_read_before_it_arrives() {
        for (seed, extra) in [(1, None), (2, None), (3, Some("migrate_prob=0.01"))] {
            let o = run("tune-base", seed, extra.as_slice());
            assert!(metric(&o, "messages") > 500.0, "{}", metric(&o, "messages"));
            assert_eq!(metric(&o, "arrivals_awaited"), 0.0, "seed {seed}");
        }
    }

    /// A wake as slow as a parked thread's on a VM (about 50 µs, docs/performance.md) lets
    /// the receiver lag far behind its sender and then read everything before the sender
    /// runs again. The window updates its reads owe are sent all the same, so the pair never
    /// waits for a timer with one due (the run would end with an error) and keeps sending
    /// between the delayed-SACK waits the lag also leads to (each 200 ms, so the run is
    /// longer than one).
    #[test]
    fn a_slow_wake_loses_no_window_update() {
        let o = run("modern", 3, &["wake_ns=50000", "duration_s=0.3"]);
        assert!(metric(&o, "window_updates") > 10.0, "{}", metric(&o, "window_updates"));
        assert!(metric(&o, "messages") > 1000.0, "{}", metric(&o, "messages"));
    }

    /// Seed 001's machine and presets at full size: `cargo test --release -p pagealloc-lab
    /// sctp_full_size -- --ignored --nocapture`. `WL_PRESETS` narrows the presets,
    /// `WL_PARAMS=a=1,b=2` overrides parameters.
    #[test]
    #[ignore]
    fn sctp_full_size_seed001() {
        let presets = std::env::var("WL_PRESETS").unwrap_or_else(|_| {
            "tune-base,tune-p1,tune-p3,tune-p5,tune-p7,tune-p9,tune-p10".into()
        });
        let params: Vec<String> = std::env::var("WL_PARAMS")
            .map(|s| s.split(',').filter(|x| !x.is_empty()).map(String::from).collect())
            .unwrap_or_default();
        for preset in presets.split(',') {
            println!("netperf-sctp-stream-many {preset} {params:?}");
            let setup = workload::net::tests::icl_2s_128(preset, 1);
            workload::net::tests::run_and_print("netperf-sctp-stream-many", &params, setup);
        }
    }
}

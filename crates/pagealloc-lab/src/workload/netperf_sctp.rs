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
//! The protocol as modelled, from net/sctp: SCTP's Nagle (`sctp_packet_can_append_data`)
//! sends a chunk at once when nothing is in flight, and otherwise holds chunks until more
//! than a PMTU's worth is queued, then sends full packets; the receiver SACKs every second
//! packet (`sack_freq` 2), processed at the end of the sender's `sendmsg`
//! (`__release_sock`), which frees the SACKed chunks and lets the next chunk go alone. A
//! sender thus sends, per seven messages, one one-chunk packet (order 2) and one six-chunk
//! packet (order 4). (Sanity check only, not used to choose anything: that is 1.29 page
//! allocations and 6.9 pages per message, against 1.29 and 7.4 read from the 256-pair run's
//! counters, §2.2.) In flight: the sender sleeps while the chunk buffers it holds exceed
//! `sk_sndbuf`; packets stop when the receiver's unread data reaches its window (half of
//! `sk_rcvbuf`). A sleeping sender is unblocked by the receiver's window-update SACK, which,
//! like the kernel's softirq, frees the SACKed chunks and sends what the window allows on the
//! receiver's CPU.
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
//! out; per-message and per-packet stack costs are assumed figures; the delayed-SACK timer
//! (200 ms) is modelled only where nothing else would wake the pair: a sender that blocks on
//! a full send buffer while its receiver sleeps with nothing to read (a schedule the model's
//! costs do not produce, the real runner's can); the window-update SACK is sent only when
//! the sender waits; migrations stay inside a node; a pair's two tasks start on one node.

use std::collections::VecDeque;

use anyhow::{anyhow, Result};
use pagealloc::{Gfp, Order, Pfn};

use super::net::{order_of, PageCursor, Tasks};
use super::{ns, ParamSpec, Params, WorkloadInfo};
use crate::model::{Ctx, ModelInfo, Next, Serial, SerialWorkload};

/// The registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "netperf-sctp-stream-many",
    summary: "netperf SCTP_STREAM_MANY, 64 loopback pairs: order-2 chunk buffers freed on SACK, \
              order 2-4 packet buffers freed by the receiver on its CPU",
    params: PARAMS,
    default_machine: "icl-2s-128",
    build: |p| Box::new(Serial::new(NetperfSctp::new(p))),
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
        source: "assumed: SCTP keeps sock_init_data's sk_sndbuf = net.core.wmem_default, \
                 212,992 B on common kernels; netperf sets no socket size by default",
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
        source: "assumed: net.core.rmem_default, 212,992 B; sctp_association_init sets \
                 rwnd = sk_rcvbuf / 2",
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
/// SCTP common header + IPv4 header.
const PACKET_HDR: u64 = 12 + 20;
/// `MAX_HEADER` (LL_MAX_HEADER 128 + 48) added by `sctp_packet_transmit`, and
/// `skb_shared_info` (320 B) behind every kmalloc'ed skb buffer.
const SKB_OVERHEAD: u64 = 176 + 320;
/// `struct sk_buff` and `struct sctp_chunk` charged to the sender's buffer with each
/// chunk (assumed 512 B).
const CHUNK_STRUCTS: u64 = 512;

/// A packet on the receiver's queue.
#[derive(Clone, Copy, Debug)]
struct Packet {
    pfn: Pfn,
    order: Order,
    chunks: u32,
}

/// One pair: tasks `2 × i` (sender) and `2 × i + 1` (receiver).
#[derive(Debug, Default)]
struct Pair {
    /// Chunk buffers queued, not yet in a packet.
    outq: VecDeque<Pfn>,
    /// Chunk buffers sent, waiting for a SACK.
    unacked: Vec<Pfn>,
    packets_since_sack: u32,
    /// Packets delivered to the receiver.
    rxq: VecDeque<Packet>,
    /// Chunks of the front packet already read.
    read_in_front: u32,
    /// Messages delivered and not yet read.
    unread: u64,
    sender_waits: bool,
    receiver_waits: bool,
    /// The receiver's copy position in the front packet.
    rcursor: PageCursor,
    received: u64,
}

/// One run.
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
    /// Receiver's window in messages.
    rwnd_msgs: u64,
    /// Window growth that triggers a window-update SACK, in messages.
    rwnd_update_msgs: u64,
    send_work: u64,
    packet_work: u64,
    recv_work: u64,
    wake: u64,
    migrate_prob: f64,
    tasks: Tasks,
    p: Vec<Pair>,
    packets: u64,
    packet_chunks: u64,
    alloc_failures: u64,
    latest: u64,
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
            rwnd_msgs: (rcvbuf / 2 / msg).max(1),
            // sctp_assoc_rwnd_increase: max(sk_rcvbuf >> rwnd_upd_shift (4), pathmtu).
            rwnd_update_msgs: ((rcvbuf >> 4).max(pmtu) / msg).max(1),
            send_work: ns(p.get("send_ns")),
            packet_work: ns(p.get("packet_ns")),
            recv_work: ns(p.get("recv_ns")),
            wake: ns(p.get("wake_ns")),
            migrate_prob: p.get("migrate_prob"),
            tasks: Tasks::default(),
            p: Vec::new(),
            packets: 0,
            packet_chunks: 0,
            alloc_failures: 0,
            latest: 0,
        }
    }

    /// kmalloc-large: a compound page of the caller's GFP_KERNEL.
    fn kmalloc_large(&mut self, ctx: &mut Ctx<'_>, order: Order) -> Option<Pfn> {
        let r = ctx.alloc(Gfp::KERNEL | Gfp::COMP, order);
        if r.is_none() {
            self.alloc_failures += 1;
        }
        r
    }

    /// Move task `t` with probability `migrate_prob`; what its old CPU does next if it moved.
    /// The SACK of everything sent: free the chunk buffers on this CPU.
    fn sack(&mut self, i: usize, ctx: &mut Ctx<'_>) -> Result<()> {
        let order = self.chunk_order;
        for pfn in std::mem::take(&mut self.p[i].unacked) {
            ctx.free(pfn, order)?;
        }
        self.p[i].packets_since_sack = 0;
        Ok(())
    }

    /// `sctp_outq_flush` on this CPU: send what Nagle and the receiver's window allow.
    fn flush(&mut self, i: usize, ctx: &mut Ctx<'_>) -> Result<()> {
        loop {
            let p = &self.p[i];
            if p.outq.is_empty() {
                return Ok(());
            }
            // Nagle: go if nothing is in flight or more than a packet's worth is queued.
            if !p.unacked.is_empty() && p.outq.len() <= self.max_chunks {
                return Ok(());
            }
            let window = self.rwnd_msgs.saturating_sub(p.unread) as usize;
            let k = p.outq.len().min(self.max_chunks).min(window);
            if k == 0 {
                return Ok(());
            }
            let order = self.packet_order[k];
            let Some(pkt) = self.kmalloc_large(ctx, order) else {
                return Ok(());
            };
            ctx.work(self.packet_work);
            let mut wcursor = PageCursor::default();
            for j in 0..k as u64 {
                let chunk = self.p[i]
                    .outq
                    .pop_front()
                    .ok_or_else(|| anyhow!("pair {i}: packet of {k} chunks, fewer queued"))?;
                // sctp_packet_pack: copy the chunk into the packet.
                ctx.touch(chunk, self.wire);
                wcursor.copy(ctx, pkt, PACKET_HDR + j * self.wire, self.wire);
                self.p[i].unacked.push(chunk);
            }
            self.packets += 1;
            self.packet_chunks += k as u64;
            let p = &mut self.p[i];
            p.rxq.push_back(Packet { pfn: pkt, order, chunks: k as u32 });
            p.unread += k as u64;
            if p.receiver_waits {
                p.receiver_waits = false;
                ctx.wake(self.tasks.cpu(2 * i + 1), ctx.now() + self.wake);
            }
            p.packets_since_sack += 1;
            if p.packets_since_sack >= 2 {
                self.sack(i, ctx)?;
            }
        }
    }

    /// The receiver's window-update SACK, handled on its CPU as the kernel's softirq does:
    /// free what it acknowledges, send what the window now allows, wake the sender.
    fn window_update(&mut self, i: usize, ctx: &mut Ctx<'_>) -> Result<()> {
        self.sack(i, ctx)?;
        self.flush(i, ctx)?;
        let p = &mut self.p[i];
        if p.sender_waits {
            p.sender_waits = false;
            ctx.wake(self.tasks.cpu(2 * i), ctx.now() + self.wake);
        }
        Ok(())
    }

    fn sender(&mut self, t: usize, ctx: &mut Ctx<'_>) -> Result<Next> {
        let i = t / 2;
        let p = &mut self.p[i];
        if p.outq.len() + p.unacked.len() >= self.sndbuf_chunks {
            p.sender_waits = true;
            if p.receiver_waits {
                // The receiver sleeps with nothing to read, so only its delayed-SACK timer
                // acknowledges what is in flight: it fires, the receiver's window update
                // frees the chunks and wakes this sender.
                p.receiver_waits = false;
                ctx.wake(self.tasks.cpu(2 * i + 1), ctx.now() + SACK_TIMEOUT);
            }
            return Ok(Next::Block);
        }
        ctx.work(self.send_work);
        if let Some(chunk) = self.kmalloc_large(ctx, self.chunk_order) {
            // copy_from_user into the chunk.
            ctx.touch(chunk, self.wire);
            self.p[i].outq.push_back(chunk);
        }
        self.flush(i, ctx)?;
        if let Some(next) = self.tasks.step_migrate(t, self.migrate_prob, ctx) {
            return Ok(next);
        }
        Ok(Next::Continue)
    }

    fn receiver(&mut self, t: usize, ctx: &mut Ctx<'_>) -> Result<Next> {
        let i = t / 2;
        if self.p[i].rxq.is_empty() {
            if self.p[i].sender_waits {
                self.window_update(i, ctx)?;
            }
            if self.p[i].rxq.is_empty() {
                self.p[i].receiver_waits = true;
                return Ok(Next::Block);
            }
        }
        ctx.work(self.recv_work);
        let p = &mut self.p[i];
        let Some(&pkt) = p.rxq.front() else {
            return Ok(Next::Block);
        };
        let at = PACKET_HDR + u64::from(p.read_in_front) * self.wire + DATA_CHUNK_HDR;
        // copy_to_user of one message.
        p.rcursor.copy(ctx, pkt.pfn, at, self.msg);
        p.read_in_front += 1;
        p.unread -= 1;
        p.received += 1;
        if p.read_in_front == pkt.chunks {
            p.rxq.pop_front();
            p.read_in_front = 0;
            p.rcursor.reset();
            ctx.free(pkt.pfn, pkt.order)?;
        }
        let p = &self.p[i];
        if p.sender_waits
            && (p.rxq.is_empty()
                || self.rwnd_msgs.saturating_sub(p.unread) >= self.rwnd_update_msgs)
        {
            self.window_update(i, ctx)?;
        }
        if let Some(next) = self.tasks.step_migrate(t, self.migrate_prob, ctx) {
            return Ok(next);
        }
        Ok(Next::Continue)
    }
}

impl SerialWorkload for NetperfSctp {
    fn start(&mut self, info: &ModelInfo) -> Result<Vec<u32>> {
        self.tasks = Tasks::place(info, self.pairs, 2, 0x7363_7470_5f73_746d)?;
        self.p = (0..self.pairs).map(|_| Pair::default()).collect();
        Ok(self.tasks.all_cpus())
    }

    fn step(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
        let Some(t) = self.tasks.on(ctx.cpu()) else {
            return Ok(self.tasks.idle());
        };
        self.latest = self.latest.max(ctx.now());
        if ctx.now() >= self.end {
            self.tasks.finish(t, ctx);
            ctx.wake(self.tasks.cpu(t ^ 1), ctx.now());
            return Ok(self.tasks.idle());
        }
        if t % 2 == 0 {
            self.sender(t, ctx)
        } else {
            self.receiver(t, ctx)
        }
    }

    fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
        let mut v = Vec::new();
        for (i, p) in self.p.iter_mut().enumerate() {
            let (s, r) = (self.tasks.cpu(2 * i), self.tasks.cpu(2 * i + 1));
            v.extend(p.outq.drain(..).chain(p.unacked.drain(..)).map(|c| (s, c, self.chunk_order)));
            v.extend(p.rxq.drain(..).map(|k| (r, k.pfn, k.order)));
        }
        v
    }

    fn metrics(&self) -> Vec<(String, f64)> {
        let msgs: u64 = self.p.iter().map(|p| p.received).sum();
        let secs = self.end as f64 / 1e12;
        vec![
            ("score".into(), (msgs * self.msg * 8) as f64 / 1e6 / secs),
            ("messages".into(), msgs as f64),
            ("chunks_per_packet".into(), self.packet_chunks as f64 / self.packets.max(1) as f64),
            ("migrations".into(), self.tasks.migrations() as f64),
            ("alloc_failures".into(), self.alloc_failures as f64),
        ]
    }

    fn progress(&self) -> f64 {
        (self.latest as f64 / self.end.max(1) as f64).min(1.0)
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
        assert_eq!(w.rwnd_msgs, 10);
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
        // Nagle and the SACK of every second packet: packets of one and six chunks.
        let cpp = metric(&o, "chunks_per_packet");
        assert!((3.0..=4.0).contains(&cpp), "{cpp}");
        assert_eq!(metric(&o, "alloc_failures"), 0.0);
        // A chunk and a share of a packet per message.
        let per_msg = o.ops.allocs as f64 / msgs;
        assert!((1.2..1.4).contains(&per_msg), "{per_msg}");
        // Per seven messages: seven order-2 chunks, an order-2 and an order-4 packet; the
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

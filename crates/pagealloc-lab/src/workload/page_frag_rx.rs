//! `page-frag-rx`: network RX buffers as order-0 pages, freed by `page_frag_free` on the CPU
//! that cleans the TX completions (seed 003; docs/workloads.md §8).
//! Section numbers (§) in this file are those of `docs/workloads.md`.
//!
//! What it imitates: a forwarding box whose driver's page recycling does not work (Paweł
//! Staszewski's mlx5 router as Jesper Brouer analysed it, and Tariq Toukan's reproducer with
//! page reuse disabled "so that every page serves a single packet"). An RX queue's NAPI poll
//! takes a received packet from its ring, builds the skb on the page, forwards it and queues
//! it on a TX ring; it refills the ring with fresh order-0 pages from the page allocator
//! (page_pool: GFP_ATOMIC | __GFP_NOWARN, order 0 for mlx5), one per packet, in NAPI
//! rounds of `napi_budget` packets. The TX queue's completion handler, on its own CPU, frees
//! each packet: `napi_consume_skb → skb_free_head → skb_free_frag → page_frag_free`, which
//! drops the page's last reference. Before the patch that free went straight to the buddy
//! lists under the zone lock for every page (`pfrag-buddy`); after it, order-0 pages go
//! through the freeing CPU's pageset (`pfrag-pcp`). Allocating CPUs never free and freeing
//! CPUs never allocate, the pattern Tariq's setup forces ("PCPs that continuously strive to
//! allocate pages … and PCPs that continuously free pages back to buddy").
//!
//! The pages are allocated with `Ctx::alloc` (order 0) and freed with `Ctx::frag_free`, as the
//! kernel does: a page_pool page is an ordinary page with a reference count of one, and
//! `page_frag_free` drops that reference. (`Ctx::frag_alloc` would carve order-3 page_frag
//! pages, which both presets free to the buddy lists: not seed 003's case.)
//!
//! The model: `rx_cpus` CPUs each run one RX queue and `tx_cpus` other CPUs each clean one TX
//! queue; RX queue i forwards to TX queue i % `tx_cpus` (a flow's packets stay on one TX
//! queue, as XPS maps them). With `tx_cpus = 0` every RX CPU cleans its own TX queue inside
//! its NAPI poll (one channel per CPU; the single-queue Cortex-A53 netsec case). RX runs as
//! fast as its CPU allows (input is never the limit); a full TX ring stops its RX queues until
//! completions make room (the NIC drops at the wire, which costs the host nothing). The TX
//! side cleans completions in batches of `tx_batch` once that many are pending. Throughput is
//! the packets forwarded per virtual second.
//!
//! Known biases: no wire time (a packet is "sent" as soon as it is queued), so completions
//! come as soon as the TX CPU gets to them; the skb head/slab allocations, DMA mapping and
//! the driver's own recycling are left out (recycling is assumed to fail for every page);
//! the per-packet costs are assumed figures (no public breakdown).
//!
//! State: each RX queue is its own CPU's (behind a lock only that CPU's steps take, held
//! across its refill's allocations); a TX queue is shared by the RX CPUs that fill it and the
//! CPU that cleans it, behind a lock held for bookkeeping only (a clean takes its batch out,
//! lets go and frees it); counters are atomic. So in the real runner an RX CPU's allocations
//! and a TX CPU's frees overlap. The model steps one CPU at a time, so its decisions are
//! those of one object. On real threads several RX CPUs may each pass the "TX ring full" and
//! "all packets received" tests before any of them pushes, so a ring can hold a few packets
//! more than `tx_ring` and a run forward a few more than `packets` (at most one per RX CPU).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::Mutex;

use anyhow::{bail, Result};
use pagealloc::{Gfp, Order, Pfn};

use super::{ns, Fit, Fitted, ParamSpec, Params, WorkloadInfo};
use crate::model::{lock, part, Ctx, ModelInfo, Next, Workload, PS_PER_S};

/// The registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "page-frag-rx",
    summary: "RX queues allocate an order-0 page per packet, TX-completion CPUs free it with \
              page_frag_free",
    params: PARAMS,
    default_machine: "cortex-a53",
    build: |p| Box::new(PageFragRx::new(p)),
    fit,
};

/// RX and TX-completion CPUs are distinct: on a machine with fewer CPUs than both, half of
/// them receive and the rest complete transmissions (or each RX CPU its own on one CPU).
fn fit(p: &Params, m: Fit) -> Vec<Fitted> {
    let (rx, tx) = (p.count("rx_cpus"), p.get("tx_cpus").round() as u64);
    let cpus = u64::from(m.nr_cpus);
    if rx + tx <= cpus {
        return Vec::new();
    }
    let why = format!("RX and TX CPUs are distinct and the machine has {cpus}");
    let new_rx = if tx == 0 { cpus.max(1) } else { (cpus / 2).max(1) };
    let new_tx = if tx == 0 { 0 } else { cpus.saturating_sub(new_rx) };
    let mut v = Vec::new();
    if new_rx != rx {
        v.push(Fitted { name: "rx_cpus", value: new_rx as f64, why: why.clone() });
    }
    if new_tx != tx {
        v.push(Fitted { name: "tx_cpus", value: new_tx as f64, why });
    }
    v
}

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "packets",
        default: 2e7,
        min: 1.0,
        max: 1e12,
        unit: "packets",
        doc: "packets forwarded in the run (over all RX queues)",
        source: "assumed volume: ≈ 2.6 × 10^4 pageset refills per RX CPU (batch 63, 12 RX \
                 CPUs), the pagesets' steady state many times over, in ≈ 6 s of wall time on \
                 the 24-CPU machine (release build)",
        scaled: true,
        whole: true,
    },
    ParamSpec {
        name: "rx_cpus",
        default: 12.0,
        min: 1.0,
        max: 4096.0,
        unit: "CPUs",
        doc: "RX queues, one CPU each (CPUs 0..rx_cpus)",
        source: "Tariq Toukan's reproducer: fewer RX queues than CPUs, 24 of 48 (Aaron Lu's RFC \
                 v4), docs/workloads.md §8.1; here half of the 24 CPUs",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "tx_cpus",
        default: 12.0,
        min: 0.0,
        max: 4096.0,
        unit: "CPUs",
        doc: "TX-completion CPUs (the next tx_cpus CPUs); 0: each RX CPU cleans its own TX queue",
        source: "Tariq Toukan's reproducer: the other CPUs free the pages (Aaron Lu's RFC v4), \
                 docs/workloads.md §8.1",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "napi_budget",
        default: 64.0,
        min: 1.0,
        max: 4096.0,
        unit: "packets",
        doc: "packets per NAPI round; the RX ring is refilled after each round",
        source: "\"The NAPI budget is 64 packets\" (Linux include/net/page_pool.h, 4.19), \
                 docs/workloads.md §8.2",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "rx_ring",
        default: 512.0,
        min: 1.0,
        max: 1e6,
        unit: "pages",
        doc: "RX descriptors per queue, each holding a page (allocated at start)",
        source: "assumed between Duyck's 128 and Paweł's 4096 RX descriptors (their replies in \
                 the page_frag patch thread), docs/workloads.md §8.1; only sets how many pages \
                 sit in the ring",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "tx_ring",
        default: 256.0,
        min: 1.0,
        max: 1e6,
        unit: "packets",
        doc: "TX descriptors per queue: packets queued and not yet cleaned (in-flight pages)",
        source: "Paweł's router: TX ring 128–256 (Paweł's reply), docs/workloads.md §8.1",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "tx_batch",
        default: 64.0,
        min: 1.0,
        max: 1e6,
        unit: "packets",
        doc: "TX completions cleaned per round (at most tx_ring)",
        source: "assumed: one NAPI budget of completions per poll (docs/workloads.md §9: the \
                 router's completion batch sizes are not published)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "pkt_bytes",
        default: 64.0,
        min: 1.0,
        max: 4096.0,
        unit: "bytes",
        doc: "packet size: bytes of the page the RX CPU reads",
        source: "Ilias Apalodimas's Cortex-A53 test with 64-byte packets (Ilias's reply), \
                 docs/workloads.md §8.1",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "rx_work_ns",
        default: 2000.0,
        min: 0.0,
        max: 1e9,
        unit: "ns",
        doc: "RX CPU's work per packet besides the page: driver RX, skb build, IP forwarding, \
              qdisc and TX post",
        source: "assumed: small-packet forwarding runs near 1 Mpps per core (≈ 1 µs) on 2018 x86 \
                 servers; an in-order Cortex-A53 is a few times slower (no public figure)",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "tx_work_ns",
        default: 300.0,
        min: 0.0,
        max: 1e9,
        unit: "ns",
        doc: "TX-completion CPU's work per packet besides the free: completion entry, DMA \
              unmap, skb head free",
        source: "assumed: a few cache misses and a slab free per completed packet",
        scaled: false,
        whole: false,
    },
];

/// page_pool's allocation flags in 4.19: GFP_ATOMIC | __GFP_NOWARN.
const GFP_RX: Gfp = Gfp(Gfp::ATOMIC.0 | Gfp::NOWARN.0);

/// One RX queue.
#[derive(Debug)]
struct RxQueue {
    cpu: u32,
    /// Posted pages (the NIC fills them in order).
    ring: VecDeque<Pfn>,
    /// Descriptors consumed since the last refill.
    to_refill: u32,
    /// Packets taken in the current NAPI round.
    in_round: u32,
    tx: usize,
    done: bool,
}

/// One TX queue.
#[derive(Debug)]
struct TxQueue {
    /// Pages of packets sent and not yet cleaned.
    pending: VecDeque<Pfn>,
    /// The CPUs of the RX queues stopped because this ring was full.
    waiting: Vec<u32>,
}

/// What a CPU runs.
#[derive(Clone, Copy, Debug, Default)]
struct Role {
    rx: Option<usize>,
    tx: Option<usize>,
}

/// One run.
#[derive(Debug)]
pub struct PageFragRx {
    packets: u64,
    nr_rx: u32,
    nr_tx: u32,
    budget: u32,
    rx_ring: usize,
    tx_ring: usize,
    tx_batch: usize,
    pkt_bytes: u64,
    rx_work: u64,
    tx_work: u64,
    /// RX queue r, run by CPU r only.
    rxq: Vec<Mutex<RxQueue>>,
    /// TX queue t: filled by its RX CPUs, cleaned by its TX CPU.
    txq: Vec<Mutex<TxQueue>>,
    /// TX queue t's CPU (read without its lock).
    tx_cpu: Vec<u32>,
    roles: Vec<Role>,
    received: AtomicU64,
    completed: AtomicU64,
    rx_running: AtomicU32,
    end_ps: AtomicU64,
    failed: AtomicU64,
}

impl PageFragRx {
    /// A run with these parameters.
    pub fn new(p: &Params) -> PageFragRx {
        let tx_ring = p.count("tx_ring") as usize;
        PageFragRx {
            packets: p.count("packets"),
            nr_rx: p.count("rx_cpus") as u32,
            nr_tx: p.get("tx_cpus").round() as u32,
            budget: p.count("napi_budget") as u32,
            rx_ring: p.count("rx_ring") as usize,
            tx_ring,
            tx_batch: (p.count("tx_batch") as usize).min(tx_ring),
            pkt_bytes: p.count("pkt_bytes"),
            rx_work: ns(p.get("rx_work_ns")),
            tx_work: ns(p.get("tx_work_ns")),
            rxq: Vec::new(),
            txq: Vec::new(),
            tx_cpu: Vec::new(),
            roles: Vec::new(),
            received: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            rx_running: AtomicU32::new(0),
            end_ps: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }

    /// Post `n` fresh pages on the ring of RX queue `q` (this CPU's own).
    fn refill(&self, q: &mut RxQueue, n: u32, ctx: &mut Ctx<'_>) {
        for _ in 0..n {
            match ctx.alloc(GFP_RX, Order(0)) {
                Some(p) => q.ring.push_back(p),
                // The descriptor stays empty; the ring runs shorter (the driver retries later).
                None => {
                    self.failed.fetch_add(1, SeqCst);
                }
            }
        }
    }

    /// Clean up to `tx_batch` completions of TX queue `t`, then restart the RX queues its
    /// full ring had stopped.
    /// The batch is taken out under the queue's lock and freed after it; the stopped RX
    /// queues are read after the frees, so one that stopped meanwhile is woken too.
    fn clean(&self, t: usize, ctx: &mut Ctx<'_>) -> Result<()> {
        let batch: Vec<Pfn> = {
            let mut tx = lock(&self.txq[t]);
            let n = self.tx_batch.min(tx.pending.len());
            tx.pending.drain(..n).collect()
        };
        for &page in &batch {
            ctx.work(self.tx_work);
            ctx.frag_free(page)?;
        }
        self.completed.fetch_add(batch.len() as u64, SeqCst);
        self.end_ps.fetch_max(ctx.now(), SeqCst);
        let now = ctx.now();
        let waiting = std::mem::take(&mut lock(&self.txq[t]).waiting);
        for cpu in waiting {
            ctx.wake(cpu, now);
        }
        Ok(())
    }

    /// One RX step: a packet, or the refill that ends a NAPI round. Returns false if the
    /// queue must stop (its TX ring is full).
    fn receive(&self, q: &mut RxQueue, ctx: &mut Ctx<'_>) -> bool {
        if self.received.load(SeqCst) >= self.packets {
            q.done = true;
            if self.rx_running.fetch_sub(1, SeqCst) == 1 {
                // The last RX queue is done: every TX queue cleans what is left.
                let now = ctx.now();
                for &cpu in &self.tx_cpu {
                    ctx.wake(cpu, now);
                }
            }
            return true;
        }
        if q.in_round >= self.budget || q.ring.is_empty() {
            let n = q.to_refill;
            self.refill(q, n, ctx);
            q.to_refill = 0;
            q.in_round = 0;
            return true;
        }
        let t = q.tx;
        {
            let mut tx = lock(&self.txq[t]);
            if tx.pending.len() >= self.tx_ring {
                tx.waiting.push(q.cpu);
                return false;
            }
        }
        let Some(page) = q.ring.pop_front() else { return true };
        q.to_refill += 1;
        q.in_round += 1;
        ctx.work(self.rx_work);
        // The stack reads the headers the NIC wrote: the page is cold the first time.
        ctx.touch(page, self.pkt_bytes);
        self.received.fetch_add(1, SeqCst);
        let batch_ready = {
            let mut tx = lock(&self.txq[t]);
            tx.pending.push_back(page);
            tx.pending.len() == self.tx_batch
        };
        if batch_ready && self.tx_cpu[t] != ctx.cpu() {
            ctx.wake(self.tx_cpu[t], ctx.now());
        }
        true
    }
}

impl Workload for PageFragRx {
    fn start(&mut self, info: &ModelInfo) -> Result<Vec<u32>> {
        let need = self.nr_rx + self.nr_tx;
        if need > info.nr_cpus {
            bail!(
                "page-frag-rx: {} RX and {} TX CPUs but the machine has {}",
                self.nr_rx,
                self.nr_tx,
                info.nr_cpus
            );
        }
        self.roles = vec![Role::default(); info.nr_cpus as usize];
        let own_tx = self.nr_tx == 0;
        let nr_txq = if own_tx { self.nr_rx } else { self.nr_tx };
        for t in 0..nr_txq {
            let cpu = if own_tx { t } else { self.nr_rx + t };
            self.txq.push(Mutex::new(TxQueue { pending: VecDeque::new(), waiting: Vec::new() }));
            self.tx_cpu.push(cpu);
            self.roles[cpu as usize].tx = Some(t as usize);
        }
        for r in 0..self.nr_rx {
            self.rxq.push(Mutex::new(RxQueue {
                cpu: r,
                ring: VecDeque::with_capacity(self.rx_ring),
                // The ring is filled at start, by the first step's refill.
                to_refill: self.rx_ring as u32,
                in_round: self.budget,
                tx: (r % nr_txq) as usize,
                done: false,
            }));
            self.roles[r as usize].rx = Some(r as usize);
        }
        self.rx_running = AtomicU32::new(self.nr_rx);
        Ok((0..need).collect())
    }

    fn step(&self, ctx: &mut Ctx<'_>) -> Result<Next> {
        let role = self.roles[ctx.cpu() as usize];
        let all_rx_done = self.rx_running.load(SeqCst) == 0;
        if let Some(t) = role.tx {
            let pending = lock(&self.txq[t]).pending.len();
            if pending >= self.tx_batch || (all_rx_done && pending > 0) {
                self.clean(t, ctx)?;
                return Ok(Next::Continue);
            }
        }
        if let Some(r) = role.rx {
            let mut q = lock(&self.rxq[r]);
            if !q.done {
                return Ok(if self.receive(&mut q, ctx) { Next::Continue } else { Next::Block });
            }
        }
        match role.tx {
            // An RX CPU whose queue is done.
            None => Ok(Next::Done),
            Some(t) if all_rx_done && lock(&self.txq[t]).pending.is_empty() => Ok(Next::Done),
            // Waiting for a batch: an RX queue's wake, or the last RX queue's, ends it.
            Some(_) => Ok(Next::Block),
        }
    }

    fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
        let mut v = Vec::new();
        for q in &mut self.rxq {
            let q = part(q);
            v.extend(q.ring.drain(..).map(|p| (q.cpu, p, Order(0))));
        }
        for (t, &cpu) in self.txq.iter_mut().zip(&self.tx_cpu) {
            let t = part(t);
            v.extend(t.pending.drain(..).map(|p| (cpu, p, Order(0))));
        }
        v
    }

    fn metrics(&self) -> Vec<(String, f64)> {
        let secs = self.end_ps.load(SeqCst) as f64 / PS_PER_S as f64;
        let completed = self.completed.load(SeqCst) as f64;
        vec![
            ("throughput".into(), if secs > 0.0 { completed / secs } else { 0.0 }),
            ("packets".into(), completed),
            ("alloc_failures".into(), self.failed.load(SeqCst) as f64),
        ]
    }

    fn progress(&self) -> f64 {
        self.completed.load(SeqCst) as f64 / self.packets.max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use pagealloc::Counter;

    use super::*;
    use crate::model::tests::small_setup;
    use crate::model::{Model, RunOutcome};

    fn run(preset: &str, cpus: u32, extra: &[&str], seed: u64) -> RunOutcome {
        let mut params: Vec<String> =
            ["packets=20000", "rx_cpus=2", "tx_cpus=2", "rx_ring=128", "tx_ring=128"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        params.extend(extra.iter().map(|s| s.to_string()));
        let p = INFO.params(&params, 1.0).unwrap();
        let mut w = (INFO.build)(&p);
        let mut m = Model::new(small_setup(cpus, 256, preset, seed)).unwrap();
        m.run(w.as_mut(), &mut |_| {}).unwrap()
    }

    fn metric(o: &RunOutcome, name: &str) -> f64 {
        o.workload.iter().find(|(k, _)| k == name).unwrap().1
    }

    #[test]
    fn every_packet_is_forwarded_and_freed_once() {
        let o = run("pfrag-pcp", 4, &[], 1);
        assert_eq!(metric(&o, "packets"), 20000.0);
        assert_eq!(metric(&o, "alloc_failures"), 0.0);
        assert_eq!(o.ops.frees, 20000);
        // Every packet's page plus the rings' pages, refilled round by round.
        assert!(o.ops.allocs >= 20000 && o.ops.allocs <= 20000 + 2 * 128, "{:?}", o.ops);
        // Two RX CPUs at 2 µs of work per packet at best.
        let tput = metric(&o, "throughput");
        assert!(tput > 0.5e6 && tput < 1e6, "{tput}");
    }

    #[test]
    fn same_seed_same_run() {
        let (a, b) = (run("pfrag-buddy", 4, &[], 3), run("pfrag-buddy", 4, &[], 3));
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    /// Seed 003: before the patch every page_frag_free takes the zone lock; after it the
    /// freeing CPUs' pagesets take it once per batch they overflow.
    #[test]
    fn pcp_frees_take_the_zone_lock_far_less_often_per_packet() {
        let buddy = run("pfrag-buddy", 4, &[], 2);
        let pcp = run("pfrag-pcp", 4, &[], 2);
        assert_eq!(buddy.events.get(Counter::PcpFree), 0);
        assert_eq!(pcp.events.get(Counter::PcpFree), 20000);
        let per_packet = |o: &RunOutcome| o.events.get(Counter::ZoneLockAcquire) as f64 / 20000.0;
        assert!(per_packet(&buddy) > 1.0, "{}", per_packet(&buddy));
        // One refill on the RX side and one drain on the TX side per batch (15 pages on
        // this 256 MiB machine), against a lock per free plus the refills before.
        let batch = 15.0;
        assert!(per_packet(&pcp) < 2.2 / batch, "{}", per_packet(&pcp));
        assert!(per_packet(&pcp) < 0.2 * per_packet(&buddy));
        // Allocation is the same order-0 pageset path in both.
        assert!(pcp.events.get(Counter::PcpAlloc) >= 20000);
        assert!(buddy.events.get(Counter::PcpAlloc) >= 20000);
    }

    /// One channel per CPU: the RX CPU frees its own TX completions, and through the
    /// pageset those pages come straight back to its RX ring.
    #[test]
    fn own_cpu_completions_recycle_through_the_pageset() {
        let o = run("pfrag-pcp", 2, &["tx_cpus=0"], 1);
        assert_eq!(metric(&o, "packets"), 20000.0);
        assert!(o.events.get(Counter::ZoneLockAcquire) < 20, "{:?}", o.events);
    }

    /// More RX queues than TX queues, tiny TX rings: RX stops and restarts without stalling.
    #[test]
    fn full_tx_rings_stop_rx_without_stalling() {
        let o = run("pfrag-buddy", 4, &["rx_cpus=3", "tx_cpus=1", "tx_ring=8", "tx_batch=4"], 1);
        assert_eq!(metric(&o, "packets"), 20000.0);
        // One TX CPU limits the three RX CPUs.
        assert!(metric(&o, "throughput") < 3.0 / 2e-6);
    }

    /// Seed 003's Cortex-A53 box: 24 CPUs, one node of 16 GiB (placed above 4 GiB so that it
    /// is one Normal zone), a 4 MiB L3; both presets. Release build:
    /// `cargo test --release -p pagealloc-lab page_frag_rx_full_size -- --ignored --nocapture`.
    /// `PFRAG_PARAMS=tx_cpus=0,…` overrides parameters.
    #[test]
    #[ignore]
    fn page_frag_rx_full_size_seed003() {
        use crate::model::cost::CostProfile;
        use crate::model::{ModelSetup, Topology};
        use pagealloc::{MemoryMap, NodeId, Policy, Tunables};
        let extra: Vec<String> = std::env::var("PFRAG_PARAMS")
            .unwrap_or_default()
            .split(',')
            .filter(|x| !x.is_empty())
            .map(String::from)
            .collect();
        for preset in ["pfrag-buddy", "pfrag-pcp"] {
            println!("page-frag-rx {preset} {extra:?}");
            let mut map = MemoryMap::new();
            map.add_range(NodeId(0), (4u64 << 30)..(20u64 << 30))
                .unwrap()
                .set_cpus(NodeId(0), 24)
                .unwrap();
            let setup = ModelSetup {
                map,
                tunables: Tunables::default(),
                policy: Policy::preset(preset).unwrap(),
                topology: Topology::simple(vec![0; 24], vec![4 << 20]),
                cost: CostProfile::default_profile(),
                seed: 1,
                cooldown_s: 5,
                count_frames: false,
                validate: false,
            };
            crate::workload::bigtest::run_and_print("page-frag-rx", &extra, setup);
        }
    }
}

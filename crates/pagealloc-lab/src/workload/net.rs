//! What the socket workloads share (`netperf-sctp-stream-many`, `lmbench-unix`,
//! `netperf-tcp`): unbound tasks placed on virtual CPUs, moved by migration, and ended
//! together; copies through socket buffers charged once per 4 KiB page.
//!
//! A virtual CPU runs one stream of steps, so it hosts at most one task. The socket
//! benchmarks run no more busy tasks than CPUs (64 pairs on 128 CPUs, 16 pairs on 128, one
//! pair on 8), so that costs nothing in placement; a migration moves a task to another CPU of
//! its node and, if a task is running there, the two swap: each CPU keeps its pagesets, the
//! tasks change roles on them (patch 10's changelog: "If a CPU was used as sender originally,
//! then it is used as receiver after context switching", docs/workloads.md §2.2). Every
//! CPU of the machine is started, idle ones blocked, so that migrations can reach them.
//!
//! A swap may find the incoming task's new CPU behind the task's own time (its last step on
//! its old CPU ended later than the new CPU's clock). A workload whose tasks keep a
//! [`TaskClock`] waits there until the task's time (`netperf-sctp-stream-many`,
//! `netperf-tcp`, `netperf-udp`, `lmbench-unix`); the others run the task's next step at
//! the CPU's clock, so their tasks' own times may step back by one step's length
//! (microseconds) at a migration, and a task may then see what another CPU did up to that
//! much later than its own time.

use anyhow::{bail, Result};
use pagealloc::{Gfp, Order, Pfn};
use pagealloc_testkit::rng::Rng;

use super::ParamSpec;
use crate::model::{Ctx, ModelInfo, Next};

/// No task on a CPU.
const NONE: u32 = u32::MAX;

/// A task's own time: when its last step ended, and on which CPU. A CPU that a migration
/// hands the task waits until then before it runs the task (in the model a swap may put
/// the task on a CPU whose clock is behind; on real threads the old CPU may still be
/// spinning the task's work), so the task never sees what other CPUs did after its own time
/// as if it came before. On the CPU it last ran on a task never waits for itself: that
/// CPU's own steps are already in order. (On real threads its clock is wall time plus the
/// work it still owes, and the runner counts a step's own code towards that work after the
/// step, so the clock there is a little behind the end the step recorded; waiting for it
/// made every second real step an empty one until 2026-11-29.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TaskClock {
    /// When the task's last step ended, ps.
    at: u64,
    /// The CPU it ran on (`None` before its first step).
    cpu: Option<u32>,
}

impl TaskClock {
    /// What CPU `cpu` at `now` does before it runs the task: wait until the task's time if
    /// the task last ran on another CPU, or nothing (`None`).
    pub fn not_before(self, cpu: u32, now: u64) -> Option<Next> {
        (self.cpu != Some(cpu) && now < self.at).then_some(Next::SleepUntil(self.at))
    }

    /// The task's step ended at `now` on CPU `cpu`.
    pub fn ran(&mut self, cpu: u32, now: u64) {
        self.at = self.at.max(now);
        self.cpu = Some(cpu);
    }
}

/// A task's step with its own state `own` (which holds its [`TaskClock`]): nothing before
/// the task's own time, which the step then moves on.
pub(crate) fn timed<T>(
    ctx: &mut Ctx<'_>,
    clock: impl Fn(&mut T) -> &mut TaskClock,
    own: &mut T,
    step: impl FnOnce(&mut Ctx<'_>, &mut T) -> Result<Next>,
) -> Result<Next> {
    if let Some(wait) = clock(own).not_before(ctx.cpu(), ctx.now()) {
        return Ok(wait);
    }
    let next = step(ctx, own)?;
    clock(own).ran(ctx.cpu(), ctx.now());
    Ok(next)
}

/// Tasks on CPUs: `cpu_task[task_cpu[t]] == t` for every unfinished task `t`; a CPU hosts at
/// most one task.
#[derive(Debug, Default)]
pub(crate) struct Tasks {
    task_cpu: Vec<u32>,
    cpu_task: Vec<u32>,
    /// CPUs of each node, for migrations inside a node.
    node_cpus: Vec<Vec<u32>>,
    cpu_node: Vec<u32>,
    finished: Vec<bool>,
    live: usize,
    /// Each task's own generator, seeded from the run's seed: its draws follow it across
    /// CPUs as the task migrates.
    rngs: Vec<Rng>,
    /// Migrations made by [`step_migrate`](Self::step_migrate).
    migrations: u64,
}

/// Where a migration took a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Moved {
    /// The task's new CPU.
    pub to: u32,
    /// The task that was running there and now runs on the old CPU, if any.
    pub swapped: Option<usize>,
}

impl Tasks {
    /// Place `groups` groups of `size` tasks (a benchmark's pairs): each group on one node,
    /// the node with the most free CPUs (ties to the lowest), on distinct CPUs drawn at
    /// random from it. The wake-up path keeps a waker and its wakee in one LLC while it has
    /// idle CPUs (select_idle_sibling), and load balancing spreads groups over the nodes.
    /// A group larger than any node's free CPUs spills onto the next node. `salt` tells
    /// workloads' draws apart.
    pub fn place(info: &ModelInfo, groups: usize, size: usize, salt: u64) -> Result<Tasks> {
        let mut rng = Rng::new(info.seed ^ salt);
        let n = groups * size;
        if n > info.nr_cpus as usize {
            bail!(
                "{groups} × {size} tasks need {n} CPUs, the machine has {} (one busy task per \
                 CPU is all the model runs; give a machine with at least {size}, e.g. --cpus \
                 {size})",
                info.nr_cpus
            );
        }
        let mut node_cpus: Vec<Vec<u32>> = vec![Vec::new(); info.nr_nodes as usize];
        for (c, &node) in info.cpu_node.iter().enumerate() {
            node_cpus[node as usize].push(c as u32);
        }
        let mut free = node_cpus.clone();
        let mut t = Tasks {
            task_cpu: Vec::with_capacity(n),
            cpu_task: vec![NONE; info.nr_cpus as usize],
            node_cpus,
            cpu_node: info.cpu_node.clone(),
            finished: vec![false; n],
            live: n,
            rngs: Vec::with_capacity(n),
            migrations: 0,
        };
        let emptiest = |free: &[Vec<u32>]| {
            (0..free.len()).max_by_key(|&i| (free[i].len(), std::cmp::Reverse(i))).unwrap_or(0)
        };
        for _ in 0..groups {
            let mut node = emptiest(&free);
            for _ in 0..size {
                if free[node].is_empty() {
                    node = emptiest(&free);
                }
                let pool = &mut free[node];
                let cpu = pool.swap_remove(rng.below(pool.len() as u64) as usize);
                t.cpu_task[cpu as usize] = t.task_cpu.len() as u32;
                t.task_cpu.push(cpu);
                t.rngs.push(Rng::new(rng.next_u64()));
            }
        }
        Ok(t)
    }

    /// Every CPU of the machine: the ones a run starts (idle ones block at once).
    pub fn all_cpus(&self) -> Vec<u32> {
        (0..self.cpu_task.len() as u32).collect()
    }

    /// The task on `cpu`, if any.
    pub fn on(&self, cpu: u32) -> Option<usize> {
        match self.cpu_task[cpu as usize] {
            NONE => None,
            t => Some(t as usize),
        }
    }

    /// The CPU of task `t` (its last one, once finished).
    pub fn cpu(&self, t: usize) -> u32 {
        self.task_cpu[t]
    }

    /// Has every task finished?
    pub fn all_done(&self) -> bool {
        self.live == 0
    }

    /// What a CPU without a task does: wait for a task to migrate in, or end with the run.
    pub fn idle(&self) -> Next {
        if self.all_done() {
            Next::Done
        } else {
            Next::Block
        }
    }

    /// The task on `cpu`, or what the CPU does without one ([`idle`](Self::idle)).
    pub fn on_or_idle(&self, cpu: u32) -> std::result::Result<usize, Next> {
        self.on(cpu).ok_or_else(|| self.idle())
    }

    /// Is task `t` still on `cpu`? On real threads another CPU's step may swap it away
    /// while this CPU waits for the task's state; the step then runs again, as whichever
    /// task is there now. Always true in the model, which steps one CPU at a time.
    pub fn still_on(tasks: &std::sync::Mutex<Tasks>, cpu: u32, t: usize) -> bool {
        crate::model::lock(tasks).on(cpu) == Some(t)
    }

    /// Task `t` of a pair ends ([`finish`](Self::finish)) and wakes its partner, so that
    /// a partner blocked on it sees the end: what `t`'s CPU does next.
    pub fn finish_pair(&mut self, t: usize, ctx: &mut Ctx<'_>) -> Next {
        self.finish(t, ctx);
        ctx.wake(self.cpu(t ^ 1), ctx.now());
        self.idle()
    }

    /// Has task `t` ended ([`finish`](Self::finish))?
    pub fn has_finished(&self, t: usize) -> bool {
        self.finished[t]
    }

    /// Number of tasks.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.task_cpu.len()
    }

    /// With probability `p`, [`migrate`](Self::migrate) task `t`.
    pub fn maybe_migrate(&mut self, t: usize, p: f64) -> Option<Moved> {
        if p > 0.0 && self.rngs[t].chance(p) {
            self.migrate(t)
        } else {
            None
        }
    }

    /// After a call of task `t`, with probability `p`, [`migrate`](Self::migrate) it and wake
    /// its new CPU: what its old CPU does next if it moved (run the task swapped in, or go
    /// idle), `None` if it stayed. Counted in [`migrations`](Self::migrations).
    pub fn step_migrate(&mut self, t: usize, p: f64, ctx: &mut Ctx<'_>) -> Option<Next> {
        let m = self.maybe_migrate(t, p)?;
        self.migrations += 1;
        ctx.wake(m.to, ctx.now());
        Some(if m.swapped.is_some() { Next::Continue } else { self.idle() })
    }

    /// Migrations made by [`step_migrate`](Self::step_migrate).
    pub fn migrations(&self) -> u64 {
        self.migrations
    }

    /// Move task `t` to another CPU of its node drawn at random (swapping with the task
    /// there); `None` if its node has a single CPU.
    pub fn migrate(&mut self, t: usize) -> Option<Moved> {
        let rng = &mut self.rngs[t];
        let from = self.task_cpu[t];
        let cpus = &self.node_cpus[self.cpu_node[from as usize] as usize];
        if cpus.len() < 2 {
            return None;
        }
        let to = super::other_than(rng, cpus, from);
        let other = self.cpu_task[to as usize];
        self.cpu_task[to as usize] = t as u32;
        self.task_cpu[t] = to;
        self.cpu_task[from as usize] = other;
        let swapped = (other != NONE).then(|| {
            self.task_cpu[other as usize] = from;
            other as usize
        });
        Some(Moved { to, swapped })
    }

    /// Task `t` ends: its CPU becomes idle. When it is the last, every CPU is woken so that
    /// the idle ones end too.
    pub fn finish(&mut self, t: usize, ctx: &mut Ctx<'_>) {
        if self.finished[t] {
            return;
        }
        self.finished[t] = true;
        self.live -= 1;
        let cpu = self.task_cpu[t];
        if self.cpu_task[cpu as usize] == t as u32 {
            self.cpu_task[cpu as usize] = NONE;
        }
        if self.live == 0 {
            for c in 0..self.cpu_task.len() as u32 {
                ctx.wake(c, ctx.now());
            }
        }
    }
}

/// A reader's or writer's position in socket buffers, so that a copy charges each 4 KiB
/// page once, at its first access. The LLC model counts touches, not distinct pages: a
/// 64-byte copy charged as a page touch would age the cache 64 times too fast. The whole
/// page's copy is charged at the first access; pages a buffer only partly fills are thus
/// charged in full (at most one page per buffer).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PageCursor {
    /// Last page charged (frame number + 1; 0 for none).
    last: u64,
}

impl PageCursor {
    /// Copy `len` bytes at byte `offset` of the block starting at `block`: touch the pages
    /// not yet charged. Returns the number of cold pages.
    pub fn copy(&mut self, ctx: &mut Ctx<'_>, block: Pfn, offset: u64, len: u64) -> u64 {
        if len == 0 {
            return 0;
        }
        let first = block.0 + offset / 4096;
        let last = block.0 + (offset + len - 1) / 4096;
        let start = if self.last == first + 1 { first + 1 } else { first };
        self.last = last + 1;
        if start > last {
            return 0;
        }
        ctx.touch(Pfn(start), (last - start + 1) * 4096)
    }

    /// Forget the last page (the buffer it was in was freed or rewritten).
    pub fn reset(&mut self) {
        self.last = 0;
    }
}

/// The size of the page frag pages, a parameter of every workload with a page frag ([`FragOwner`], [`FragPages`]).
pub(crate) const FRAG_BYTES: ParamSpec = ParamSpec {
    name: "frag_bytes",
    default: 32768.0,
    min: 4096.0,
    max: 32768.0,
    unit: "bytes",
    doc: "size of the page frag pages (order 3 when 32 KiB)",
    source: "SKB_FRAG_PAGE_ORDER = get_order(32768) (docs/workloads.md §0)",
    scaled: false,
    whole: true,
};

/// The delay of a cross-CPU wake-up, a parameter of the socket workloads whose tasks sleep
/// (`netperf-tcp`, `netperf-sctp-stream-many`, `iperf3-nic`).
pub(crate) const WAKE_NS: ParamSpec = ParamSpec {
    name: "wake_ns",
    default: 2000.0,
    min: 0.0,
    max: 1e9,
    unit: "ns",
    doc: "delay from waking a sleeping sender or receiver to its running",
    source: "assumed: a cross-CPU wake-up (IPI, exit from a shallow idle state, context \
             switch), a few µs",
    scaled: false,
    whole: false,
};

/// `skbuff_small_head`'s object size (the lab host's, Linux 6.18; docs/workloads.md §12.2).
pub(crate) const SMALL_HEAD: u64 = 576;
/// `skbuff_head_cache`'s stride.
pub(crate) const SKB_BYTES: u64 = 256;

/// A page frag page (`netperf-tcp`, `netperf-udp`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FragPage {
    pub pfn: Pfn,
    pub order: Order,
    /// References held by skbs (the owner's own reference is [`FragPages::frag`]).
    pub refs: u32,
}

/// The pages a task's page frag handed out and the skbs' references on them, by slot: the
/// part of a page frag that the CPUs freeing skbs share with its owner (in a kernel, the
/// pages' reference counts). Locked by workloads whose CPUs overlap; the allocator is never
/// called with it held: [`put`](Self::put) names the page to free and the caller frees it.
#[derive(Debug, Default)]
pub(crate) struct FragPages {
    /// Pages by slot; `free_slots` lists unused slots.
    pub pages: Vec<FragPage>,
    free_slots: Vec<usize>,
    /// The owner's current page (slot): the owner's reference, which no skb drops.
    pub frag: Option<usize>,
}

impl FragPages {
    /// An skb drops its reference on the page in `slot`: the page, to free on the caller's
    /// CPU, when that was the last reference of a page the owner has moved on from (its slot
    /// is free again).
    pub fn put(&mut self, slot: usize) -> Option<(Pfn, Order)> {
        let page = &mut self.pages[slot];
        page.refs -= 1;
        if page.refs == 0 && self.frag != Some(slot) {
            self.free_slots.push(slot);
            return Some((page.pfn, page.order));
        }
        None
    }

    /// Take the owner's new page into a slot: it becomes the owner's current page.
    fn install(&mut self, pfn: Pfn, order: Order) -> usize {
        let page = FragPage { pfn, order, refs: 0 };
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.pages[s] = page;
                s
            }
            None => {
                self.pages.push(page);
                self.pages.len() - 1
            }
        };
        self.frag = Some(slot);
        slot
    }

    /// At the end of a run: the owner's page goes with `owner`, pages `live` says skbs still
    /// hold with `holder`; every page is forgotten.
    pub fn held(
        &mut self,
        owner: u32,
        holder: u32,
        live: impl Fn(usize) -> bool,
    ) -> Vec<(u32, Pfn, Order)> {
        let mut v = Vec::new();
        for (slot, page) in self.pages.iter().enumerate() {
            if self.frag == Some(slot) {
                v.push((owner, page.pfn, page.order));
            } else if live(slot) {
                v.push((holder, page.pfn, page.order));
            }
        }
        self.pages.clear();
        self.free_slots.clear();
        self.frag = None;
        v
    }
}

/// What [`FragOwner::refill_start`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refill {
    /// The current page, usable at [`FragOwner::off`]: its slot and frame.
    Ready(usize, Pfn),
    /// The owner has let go of its page: allocate a new one ([`FragOwner::alloc_page`])
    /// and [`install`](FragOwner::install) it.
    Allocate,
}

/// The owner's side of a task's page frag (`current->task_frag`): its offset, its copies
/// and its allocations, which only the owning task's steps touch.
#[derive(Debug)]
pub(crate) struct FragOwner {
    /// The offset of the first unused byte of the current page.
    pub off: u64,
    /// The owner's copies into its page, charged once per 4 KiB.
    pub cursor: PageCursor,
    order: Order,
    /// Blocks of `order` allocated; order-0 fallbacks; pages reused in place; failures.
    pub allocs: u64,
    pub fallback_allocs: u64,
    pub reused_in_place: u64,
    pub failures: u64,
}

impl FragOwner {
    /// A frag of `order`-sized pages (3: SKB_FRAG_PAGE_ORDER).
    pub fn new(order: Order) -> FragOwner {
        FragOwner {
            off: 0,
            cursor: PageCursor::default(),
            order,
            allocs: 0,
            fallback_allocs: 0,
            reused_in_place: 0,
            failures: 0,
        }
    }

    /// `skb_page_frag_refill`'s first half, with the pages locked: keep the current page,
    /// reusing it in place if no skb holds it any more, or let go of it (`put_page`: the
    /// skbs' references remain, and the last one frees it).
    pub fn refill_start(&mut self, pages: &mut FragPages) -> Refill {
        if let Some(slot) = pages.frag {
            let page = pages.pages[slot];
            if page.refs == 0 {
                if self.off > 0 {
                    self.reused_in_place += 1;
                    self.off = 0;
                    self.cursor.reset();
                }
                return Refill::Ready(slot, page.pfn);
            }
            if self.off < 4096 << page.order.0 {
                return Refill::Ready(slot, page.pfn);
            }
            pages.frag = None;
        }
        Refill::Allocate
    }

    /// `skb_page_frag_refill`'s allocation, without the pages locked: an `order` block
    /// with direct reclaim masked off, else an order-0 page; `None` if neither (counted).
    pub fn alloc_page(&mut self, ctx: &mut Ctx<'_>) -> Option<(Pfn, Order)> {
        let big = (Gfp::KERNEL & !Gfp::DIRECT_RECLAIM) | Gfp::COMP | Gfp::NOWARN;
        if let Some(p) = ctx.alloc(big, self.order) {
            self.allocs += 1;
            return Some((p, self.order));
        }
        if let Some(p) = ctx.alloc(Gfp::KERNEL, Order(0)) {
            self.fallback_allocs += 1;
            return Some((p, Order(0)));
        }
        self.failures += 1;
        None
    }

    /// The new page from [`alloc_page`](Self::alloc_page) becomes the current one, with
    /// the pages locked: its slot.
    pub fn install(&mut self, pages: &mut FragPages, pfn: Pfn, order: Order) -> usize {
        self.off = 0;
        self.cursor.reset();
        pages.install(pfn, order)
    }
}

/// `get_order` of a size in bytes, 4 KiB pages.
pub(crate) fn order_of(bytes: u64) -> u8 {
    let pages = bytes.div_ceil(4096).max(1);
    pages.next_power_of_two().trailing_zeros() as u8
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use pagealloc::{CacheInfo, Counter, MemoryMap, NodeId, Policy, Tunables};

    use crate::model::cost::CostProfile;
    use crate::model::{Model, ModelSetup, RunOutcome, Topology};

    /// A task handed to another CPU waits for its own time there; on the CPU it last ran on
    /// it never waits for itself, even where that CPU's clock reads a little behind the end
    /// it recorded (the real runner's, after it counts a step's own code as its work).
    #[test]
    fn a_task_waits_for_its_time_only_on_another_cpu() {
        let mut c = TaskClock::default();
        assert_eq!(c.not_before(0, 0), None, "no step yet");
        c.ran(0, 1_000);
        assert_eq!(c.not_before(0, 900), None, "its own CPU, slightly behind");
        assert_eq!(c.not_before(1, 900), Some(Next::SleepUntil(1_000)), "another CPU, behind");
        assert_eq!(c.not_before(1, 1_000), None, "another CPU at its time");
        c.ran(1, 800);
        assert_eq!(c.not_before(0, 900), Some(Next::SleepUntil(1_000)), "time never goes back");
        assert_eq!(c.not_before(1, 900), None);
    }

    #[test]
    fn orders_round_up_to_powers_of_two_pages() {
        assert_eq!(order_of(1), 0);
        assert_eq!(order_of(4096), 0);
        assert_eq!(order_of(4097), 1);
        assert_eq!(order_of(10_768), 2);
        assert_eq!(order_of(32_768), 3);
        assert_eq!(order_of(62_064), 4);
    }

    fn info(nodes: u32, per_node: u32) -> ModelInfo {
        let cpu_node: Vec<u32> =
            (0..nodes).flat_map(|n| std::iter::repeat_n(n, per_node as usize)).collect();
        ModelInfo {
            nr_cpus: nodes * per_node,
            nr_nodes: nodes,
            cpu_node,
            node_managed_pages: vec![1 << 20; nodes as usize],
            seed: 1,
        }
    }

    #[test]
    fn groups_share_a_node_and_spread_over_nodes() {
        let i = info(2, 8);
        let t = Tasks::place(&i, 4, 2, 3).unwrap();
        assert_eq!(t.len(), 8);
        let mut per_node = [0; 2];
        for g in 0..4 {
            let (a, b) = (t.cpu(2 * g), t.cpu(2 * g + 1));
            assert_ne!(a, b);
            assert_eq!(i.cpu_node[a as usize], i.cpu_node[b as usize], "pair {g} split");
            per_node[i.cpu_node[a as usize] as usize] += 2;
            assert_eq!(t.on(a), Some(2 * g));
        }
        assert_eq!(per_node, [4, 4]);
        assert!(Tasks::place(&i, 9, 2, 3).is_err(), "18 tasks on 16 CPUs");
    }

    #[test]
    fn a_migration_stays_on_the_node_and_swaps_with_the_task_there() {
        let i = info(2, 4);
        let mut t = Tasks::place(&i, 2, 2, 5).unwrap();
        for _ in 0..100 {
            let from = t.cpu(0);
            let m = t.migrate(0).unwrap();
            assert_ne!(m.to, from);
            assert_eq!(i.cpu_node[m.to as usize], i.cpu_node[from as usize]);
            assert_eq!(t.on(m.to), Some(0));
            match m.swapped {
                Some(o) => {
                    assert_eq!(t.cpu(o), from);
                    assert_eq!(t.on(from), Some(o));
                }
                None => assert_eq!(t.on(from), None),
            }
        }
        // Every task still has its own CPU.
        let mut cpus: Vec<u32> = (0..t.len()).map(|k| t.cpu(k)).collect();
        cpus.sort_unstable();
        cpus.dedup();
        assert_eq!(cpus.len(), t.len());
    }

    /// A machine of `nodes` nodes × `cpus_per_node` CPUs × `gib_per_node` GiB, one LLC of
    /// `llc_mib` per node, with the cache facts FREE_HIGH_BATCH reads (`data_slices_kib`:
    /// Σ of L1d, L2 and LLC slices per CPU). For the ignored full-size tests.
    pub(crate) fn machine(
        nodes: u32,
        cpus_per_node: u32,
        gib_per_node: u64,
        llc_mib: u64,
        data_slices_kib: u64,
        preset: &str,
        seed: u64,
    ) -> ModelSetup {
        let mut map = MemoryMap::new();
        for n in 0..nodes {
            let base = u64::from(n) * (gib_per_node << 30);
            map.add_range(NodeId(n), base..base + (gib_per_node << 30))
                .unwrap()
                .set_cpus(NodeId(n), cpus_per_node)
                .unwrap();
        }
        map.set_cpu_cache(CacheInfo {
            llc_slice_bytes: (llc_mib << 20) / u64::from(cpus_per_node),
            data_slices_bytes: data_slices_kib << 10,
        });
        let cpu_node: Vec<u32> =
            (0..nodes).flat_map(|n| std::iter::repeat_n(n, cpus_per_node as usize)).collect();
        ModelSetup {
            map,
            tunables: Tunables::default(),
            policy: Policy::preset(preset).unwrap(),
            topology: Topology::simple(cpu_node, vec![llc_mib << 20; nodes as usize]),
            cost: CostProfile::default_profile(),
            seed,
            cooldown_s: 5,
            count_frames: true,
            validate: false,
        }
    }

    /// seed 001's 128-CPU server (icl-2s-128): 2 × 64 CPUs, 2 × 128 GiB, 48 MiB LLC per
    /// socket; per CPU 24 KiB of L1d + 640 KiB of L2 + 768 KiB of LLC.
    pub(crate) fn icl_2s_128(preset: &str, seed: u64) -> ModelSetup {
        machine(2, 64, 128, 48, 24 + 640 + 768, preset, seed)
    }

    /// seed 000's 1-socket Skylake (skylake-1s): 8 CPUs, 32 GiB, 8 MiB LLC; per CPU 16 KiB
    /// of L1d + 128 KiB of L2 + 1 MiB of LLC.
    pub(crate) fn skylake_1s(preset: &str, seed: u64) -> ModelSetup {
        machine(1, 8, 32, 8, 16 + 128 + 1024, preset, seed)
    }

    /// Run workload `name` with `params` on `setup`; print what the seeds' tables report.
    pub(crate) fn run_and_print(name: &str, params: &[String], setup: ModelSetup) -> RunOutcome {
        let info = crate::workload::find(name).unwrap();
        let p = info.params(params, 1.0).unwrap();
        let mut w = (info.build)(&p);
        let t = std::time::Instant::now();
        let mut m = Model::new(setup).unwrap();
        let o = m.run(w.as_mut(), &mut |_| {}).unwrap();
        let e = &o.events;
        println!(
            "  wall {:.1} s, virtual {:.3} s, steps {}, allocs {}, zone lock {:.2}%, \
             free_high drains {} ({} pages), alloc_zone {} pages, high drains {}, \
             pcp peak {} pages, cold {:.2}%, top frames {:?}",
            t.elapsed().as_secs_f64(),
            o.elapsed_ps as f64 / 1e12,
            o.steps,
            o.ops.allocs,
            o.zone_lock_pct(),
            e.get(Counter::DrainFreeHigh),
            e.get(Counter::DrainFreeHighPages),
            e.get(Counter::PcpRefillPages),
            e.get(Counter::DrainHigh),
            o.pcp_peak_pages,
            o.cold_touch_pct(),
            o.most_used_frames,
        );
        println!("  {:?}", o.workload);
        o
    }
}

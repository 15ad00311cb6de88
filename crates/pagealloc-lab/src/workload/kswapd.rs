//! kswapd as Linux 4.20 runs it (`mm/vmscan.c`: `kswapd`, `balance_pgdat`,
//! `kswapd_shrink_node`, `pgdat_balanced`, `kswapd_try_to_sleep`, `wakeup_kswapd`), and
//! direct reclaim's `compaction_ready` (`shrink_zones`), for the workloads that model reclaim
//! themselves (thpfioscale; the allocator has no reclaim).
//!
//! The rules, written from the kernel's behaviour:
//! - **Waking** (`wakeup_kswapd`): a request records its order and highest zone
//!   (`kswapd_order`, `kswapd_classzone_idx`, the largest of those since kswapd last read
//!   them) and wakes a sleeping kswapd unless the node is hopeless (16 runs in a row that
//!   reclaimed nothing, `MAX_RECLAIM_RETRIES`) or already balanced for that request.
//! - **A run** (`balance_pgdat`) reads the order and zone it was woken for and makes passes at
//!   decreasing priority from `DEF_PRIORITY` (12) down to 1. Before each pass it checks
//!   `pgdat_balanced`: some managed zone of the node up to the woken zone meets its HIGH
//!   watermark at the woken order (4.20 has no watermark boost: that came with 5.0), and then
//!   the run ends at once. A pass (`kswapd_shrink_node`) aims at `nr_to_reclaim` = the sum
//!   over those zones of max(HIGH, `SWAP_CLUSTER_MAX`) and scans `inactive >> priority` pages
//!   of the node's inactive file list and `active >> priority` of its active one
//!   (`get_scan_count` with no swap: file pages only), in rounds of up to `SWAP_CLUSTER_MAX`
//!   of each (`shrink_node_memcg`'s loop: the inactive list's tail is reclaimed, then the
//!   active list's tail is moved to the inactive list if the inactive list is low, which the
//!   node decides, `workload::workingset`), stopping early once the pass has reclaimed its
//!   target (kswapd's proportional-scan cut, with no anon LRU to balance). After a pass, once
//!   the run has reclaimed `compact_gap(order)` pages it checks the balance at order 0; the
//!   priority drops unless the pass scanned (on the inactive list) at least its target and
//!   reclaimed something.
//! - **The end of a run** (`balance_pgdat`'s exit, balanced or not): the node's refault
//!   activations are noted (`snapshot_refaults`). After priority 1 without balance, a run that
//!   reclaimed nothing counts a failure (`kswapd_failures`; any reclaim resets it); kswapd does
//!   not sleep but starts a new run at priority 12 (`kswapd_try_to_sleep` finds the node
//!   unbalanced), unless the node is hopeless, which sleeps.
//! - **Sleeping** (`kswapd_try_to_sleep`): balanced (or hopeless), kswapd clears the
//!   compaction skip hints of the node (`reset_isolation_suitable`) and wakes kcompactd for
//!   the order it was woken for (`wakeup_kcompactd`, which ignores order 0), then naps for
//!   `HZ/10`. Woken during the nap, it runs again at once; at the nap's end it sleeps for good
//!   if the node is still balanced, else it starts another run without being woken
//!   (`KSWAPD_HIGH_WMARK_HIT_QUICKLY`).
//!
//! The workload drives a [`Kswapd`] one batch per runner step through [`KswapdNode`], which
//! is all kswapd needs of its node; the rules are thus testable without a model run. Two
//! simplifications: kswapd blocks through its nap (the model's runner cannot cut a timed
//! sleep short when an allocation wakes it), and the nap's end is noticed by the next
//! allocation that may reclaim ([`Kswapd::nap_over`]).

use anyhow::Result;
use pagealloc::{AllocFlags, Order, RawLock, Zone, ZoneType, WMARK_HIGH, WMARK_LOW, WMARK_MIN};

/// The priority a run starts at (kernel `DEF_PRIORITY`).
pub const DEF_PRIORITY: u32 = 12;
/// Pages scanned per batch (kernel `SWAP_CLUSTER_MAX`).
pub const SWAP_CLUSTER_MAX: u64 = 32;
/// Runs without reclaim after which the node is hopeless (kernel `MAX_RECLAIM_RETRIES`).
pub const MAX_RECLAIM_RETRIES: u32 = 16;
/// The nap before kswapd sleeps for good (`HZ/10` in `kswapd_try_to_sleep`), in ps.
pub const NAP_PS: u64 = 100_000_000_000;

/// Free pages compaction needs at `order`: the block and its targets (kernel
/// `compact_gap`).
pub const fn compact_gap(order: Order) -> u64 {
    2 << order.0
}

/// What kswapd needs of its node.
pub trait KswapdNode {
    /// 4.20 `pgdat_balanced`: does some managed zone of the node up to `classzone` meet its
    /// HIGH watermark at `order`? (A node without such a zone needs no balancing.)
    fn balanced(&self, order: Order, classzone: ZoneType) -> bool;
    /// Pages on the node's inactive and active file lists (4.20 `lruvec_lru_size`).
    fn lru_pages(&self) -> (u64, u64);
    /// A pass's `nr_to_reclaim`: Σ max(HIGH, `SWAP_CLUSTER_MAX`) over the managed zones up
    /// to `classzone`.
    fn reclaim_target(&self, classzone: ZoneType) -> u64;
    /// One round of `shrink_node_memcg`'s loop: scan up to `inactive` of the inactive list's
    /// oldest pages, evicting those that may go, then, if the inactive list is low, move up
    /// to `active` of the active list's oldest pages to it: (inactive pages scanned, evicted).
    fn shrink(&mut self, inactive: u64, active: u64) -> Result<(u64, u64)>;
    /// Mark the node's zones as under background reclaim, or no longer.
    fn set_reclaim_active(&mut self, active: bool);
    /// A run ended: note the node's refault activations (`snapshot_refaults`).
    fn run_ended(&mut self);
    /// Going to sleep: clear the compaction skip hints, wake kcompactd if an allocation
    /// asked for it (`wakeup_kcompactd` at the order kswapd was woken for).
    fn going_to_sleep(&mut self) -> Result<()>;
}

/// Where a kswapd is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Asleep until woken.
    Asleep,
    /// Napping after balancing, until this virtual time (ps).
    Napping(u64),
    /// In `balance_pgdat`.
    Running,
}

/// One pass of `kswapd_shrink_node` under way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pass {
    /// `nr_to_reclaim`.
    target: u64,
    /// Pages left to scan on the inactive and the active list (`size >> priority` of each
    /// at the pass's start).
    inactive_left: u64,
    active_left: u64,
    scanned: u64,
    reclaimed: u64,
}

/// What the runner does with kswapd's CPU after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KswapdNext {
    /// Another step.
    Continue,
    /// Nothing to do until woken (asleep or napping).
    Block,
}

/// One node's kswapd.
#[derive(Clone, Debug)]
pub struct Kswapd {
    state: State,
    /// A wakeup arrived since kswapd last looked.
    woken: bool,
    /// Order and zone requested since kswapd last read them (`kswapd_order`,
    /// `kswapd_classzone_idx`).
    want_order: Order,
    want_zone: Option<ZoneType>,
    /// The run's order (drops to 0 after `compact_gap` is reclaimed) and zone.
    order: Order,
    classzone: ZoneType,
    priority: u32,
    pass: Option<Pass>,
    run_reclaimed: u64,
    failures: u32,
    /// Pages evicted, runs started and passes made, for the workload's metrics and tests.
    pub pages: u64,
    pub runs: u64,
    pub passes: u64,
}

impl Default for Kswapd {
    fn default() -> Kswapd {
        Kswapd {
            state: State::Asleep,
            woken: false,
            want_order: Order(0),
            want_zone: None,
            order: Order(0),
            classzone: ZoneType::Normal,
            priority: DEF_PRIORITY,
            pass: None,
            run_reclaimed: 0,
            failures: 0,
            pages: 0,
            runs: 0,
            passes: 0,
        }
    }
}

impl Kswapd {
    /// 4.20 `wakeup_kswapd` for a request of `order` whose highest zone is `classzone`:
    /// record them, and wake kswapd if it sleeps (or naps), the node is not hopeless and not
    /// balanced for the request. True if the runner must wake kswapd's CPU.
    pub fn wake(&mut self, node: &impl KswapdNode, order: Order, classzone: ZoneType) -> bool {
        self.want_order = self.want_order.max(order);
        self.want_zone = Some(self.want_zone.map_or(classzone, |z| z.max(classzone)));
        if self.state == State::Running || self.woken {
            return false;
        }
        if self.failures >= MAX_RECLAIM_RETRIES || node.balanced(order, classzone) {
            return false;
        }
        self.woken = true;
        true
    }

    /// Any reclaim on the node, by kswapd or direct, makes it hopeful again (4.20
    /// `shrink_node` resets `kswapd_failures` when it reclaimed something).
    pub fn reclaimed(&mut self, pages: u64) {
        if pages > 0 {
            self.failures = 0;
        }
    }

    /// The earliest time [`nap_over`](Self::nap_over) can act: the end of the nap under way,
    /// or `u64::MAX` when kswapd is not napping or was woken during the nap. Before it,
    /// `nap_over` returns false and changes nothing, so a caller may skip it (and its lock).
    pub fn nap_end(&self) -> u64 {
        match self.state {
            State::Napping(until) if !self.woken => until,
            _ => u64::MAX,
        }
    }

    /// The end of a nap, noticed at `now` (a caller checks this before it may wake kswapd):
    /// still balanced, kswapd sleeps for good; otherwise it runs again without a wakeup. True
    /// if the runner must wake kswapd's CPU.
    pub fn nap_over(&mut self, node: &impl KswapdNode, now: u64) -> bool {
        let State::Napping(until) = self.state else { return false };
        if now < until || self.woken {
            return false;
        }
        if self.failures >= MAX_RECLAIM_RETRIES || node.balanced(self.order, self.classzone) {
            self.state = State::Asleep;
            return false;
        }
        self.woken = true;
        true
    }

    /// One step of kswapd's CPU at virtual time `now`: start a run if woken, else one batch
    /// of the current pass, or the balance check between passes.
    pub fn step(&mut self, node: &mut impl KswapdNode, now: u64) -> Result<KswapdNext> {
        if self.state != State::Running {
            if !self.woken {
                return Ok(KswapdNext::Block);
            }
            self.start_run(node);
        }
        let Some(mut pass) = self.pass else {
            return self.between_passes(node, now);
        };
        // The kernel counts each round's batches off whether or not the lists held them.
        let inactive = pass.inactive_left.min(SWAP_CLUSTER_MAX);
        let active = pass.active_left.min(SWAP_CLUSTER_MAX);
        let (scanned, evicted) = node.shrink(inactive, active)?;
        self.pages += evicted;
        self.reclaimed(evicted);
        pass.scanned += scanned;
        pass.reclaimed += evicted;
        pass.inactive_left -= inactive;
        pass.active_left -= active;
        if pass.inactive_left + pass.active_left == 0 || pass.reclaimed >= pass.target {
            self.end_pass(pass);
        } else {
            self.pass = Some(pass);
        }
        Ok(KswapdNext::Continue)
    }

    /// `kswapd` reads the order and zone it was woken for and calls `balance_pgdat`.
    fn start_run(&mut self, node: &mut impl KswapdNode) {
        self.woken = false;
        self.order = self.want_order;
        if let Some(z) = self.want_zone.take() {
            self.classzone = z;
        }
        self.want_order = Order(0);
        self.state = State::Running;
        self.priority = DEF_PRIORITY;
        self.run_reclaimed = 0;
        self.pass = None;
        self.runs += 1;
        node.set_reclaim_active(true);
    }

    /// The top of `balance_pgdat`'s loop: balanced, kswapd goes to sleep; past priority 1
    /// the run ends; otherwise a new pass starts.
    fn between_passes(&mut self, node: &mut impl KswapdNode, now: u64) -> Result<KswapdNext> {
        if node.balanced(self.order, self.classzone) {
            node.run_ended();
            return self.sleep(node, now);
        }
        if self.priority < 1 {
            node.run_ended();
            if self.run_reclaimed == 0 {
                self.failures += 1;
            }
            if self.failures >= MAX_RECLAIM_RETRIES {
                return self.sleep(node, now);
            }
            // Not balanced: kswapd_try_to_sleep does not sleep, the next run starts.
            self.start_run(node);
            return Ok(KswapdNext::Continue);
        }
        self.passes += 1;
        let (inactive, active) = node.lru_pages();
        self.pass = Some(Pass {
            target: node.reclaim_target(self.classzone),
            inactive_left: inactive >> self.priority,
            active_left: active >> self.priority,
            scanned: 0,
            reclaimed: 0,
        });
        Ok(KswapdNext::Continue)
    }

    /// After a pass: the order drops to 0 once `compact_gap` is reclaimed; the priority
    /// drops unless the pass scanned its target and reclaimed something.
    fn end_pass(&mut self, pass: Pass) {
        self.pass = None;
        self.run_reclaimed += pass.reclaimed;
        if self.order.0 > 0 && self.run_reclaimed >= compact_gap(self.order) {
            self.order = Order(0);
        }
        if pass.scanned < pass.target || pass.reclaimed == 0 {
            self.priority -= 1;
        }
    }

    /// `kswapd_try_to_sleep` on a balanced (or hopeless) node: skip hints cleared,
    /// kcompactd woken, then the nap.
    fn sleep(&mut self, node: &mut impl KswapdNode, now: u64) -> Result<KswapdNext> {
        node.set_reclaim_active(false);
        node.going_to_sleep()?;
        self.state = State::Napping(now.saturating_add(NAP_PS));
        Ok(KswapdNext::Block)
    }
}

/// 4.20 `compaction_ready` for a direct reclaim of a costly `order` whose highest zone is
/// `classzone`: the allocation would already succeed (the `order` watermark at MIN), or
/// compaction could run (order-0 free pages above LOW + `compact_gap`) and the zone is above
/// HIGH + `compact_gap` — then reclaim leaves the zone alone. (4.20 lets a zone whose
/// fragmentation index says "lack of memory" through to the HIGH + gap check, as here.)
pub fn compaction_ready<L: RawLock>(zone: &Zone<L>, order: Order, classzone: ZoneType) -> bool {
    let ok = |order: Order, w: usize, gap: u64, flags: AllocFlags| {
        zone.watermark_ok(order, zone.wmark_pages(w).saturating_add(gap), classzone, flags)
    };
    let gap = compact_gap(order);
    if ok(order, WMARK_MIN, 0, AllocFlags::default()) {
        return true;
    }
    ok(Order(0), WMARK_LOW, gap, AllocFlags::CMA)
        && ok(Order(0), WMARK_HIGH, gap, AllocFlags::default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pagealloc::{Cpu, CpuId, Gfp, MemoryMap, PageAllocator, Pfn, Policy, Tunables};

    /// A node reduced to counters: `free` pages against one HIGH watermark, an inactive list
    /// of `lru` pages of which a scan evicts `evict_pct` % and an active list of `active`
    /// pages that is never low; it records every round (pass number, inactive and active
    /// pages asked), every end of a run and every time kswapd went to sleep.
    struct FakeNode {
        free: u64,
        high: u64,
        lru: u64,
        active: u64,
        evict_pct: u64,
        batches: Vec<(u64, u64, u64)>,
        pass: u64,
        run_ends: u32,
        sleeps: u32,
    }

    impl FakeNode {
        fn new(free: u64, high: u64, lru: u64, evict_pct: u64) -> FakeNode {
            FakeNode {
                free,
                high,
                lru,
                active: 0,
                evict_pct,
                batches: Vec::new(),
                pass: 0,
                run_ends: 0,
                sleeps: 0,
            }
        }

        /// Pages asked of the inactive (`active` false) or active list in pass `pass`.
        fn asked(&self, pass: u64, active: bool) -> u64 {
            let of =
                |&(p, i, a): &(u64, u64, u64)| (p == pass).then_some(if active { a } else { i });
            self.batches.iter().filter_map(of).sum()
        }
    }

    impl KswapdNode for FakeNode {
        fn balanced(&self, _order: Order, _classzone: ZoneType) -> bool {
            self.free >= self.high
        }
        fn lru_pages(&self) -> (u64, u64) {
            (self.lru, self.active)
        }
        fn reclaim_target(&self, _classzone: ZoneType) -> u64 {
            self.high
        }
        fn shrink(&mut self, scan: u64, active: u64) -> Result<(u64, u64)> {
            self.batches.push((self.pass, scan, active));
            let scanned = scan.min(self.lru);
            let evicted = scanned * self.evict_pct / 100;
            self.lru -= evicted;
            self.free += evicted;
            Ok((scanned, evicted))
        }
        fn set_reclaim_active(&mut self, _active: bool) {}
        fn run_ended(&mut self) {
            self.run_ends += 1;
        }
        fn going_to_sleep(&mut self) -> Result<()> {
            self.sleeps += 1;
            Ok(())
        }
    }

    /// Wake kswapd and step it until it blocks (at most `limit` steps); the fake node learns
    /// the pass number of each batch.
    fn run(k: &mut Kswapd, node: &mut FakeNode, limit: usize) -> usize {
        assert!(k.wake(node, Order(0), ZoneType::Normal), "an unbalanced node wakes kswapd");
        for steps in 0..limit {
            node.pass = k.passes;
            if k.step(node, 0).unwrap() == KswapdNext::Block {
                return steps;
            }
        }
        limit
    }

    /// 100 pages short of HIGH with a 1 Mi-page LRU: the first pass at priority 12 scans
    /// 256 pages, which is enough, and kswapd stops at the next balance check — not after
    /// the pass's `nr_to_reclaim` (the HIGH watermark, 30 000 pages here).
    #[test]
    fn kswapd_stops_at_the_first_balanced_check() {
        let mut node = FakeNode::new(29_900, 30_000, 1 << 20, 100);
        let mut k = Kswapd::default();
        run(&mut k, &mut node, 100_000);
        assert_eq!(k.passes, 1);
        assert_eq!(k.pages, 256);
        assert_eq!(node.free, 30_156);
        assert!(matches!(k.state, State::Napping(_)));
    }

    /// Each pass scans `size >> priority` of each list: 256, 512, … pages of a 1 Mi-page
    /// inactive list from which nothing can be evicted and 16, 32, … of a 64 Ki-page active
    /// list, in rounds of at most 32 of each, the priority dropping after each pass that
    /// reclaimed nothing; after priority 1 the run ends (refaults noted) and a new one starts
    /// at 12.
    #[test]
    fn a_pass_at_priority_p_scans_each_list_shifted_by_p() {
        let mut node = FakeNode::new(0, 1000, 1 << 20, 0);
        node.active = 1 << 16;
        let mut k = Kswapd::default();
        assert_eq!(run(&mut k, &mut node, 40_000), 40_000, "an unbalanced node keeps it busy");
        for (pass, priority) in (1..=12).zip((1..=DEF_PRIORITY).rev()) {
            assert_eq!(node.asked(pass, false), (1 << 20) >> priority, "pass {pass}");
            assert_eq!(node.asked(pass, true), (1 << 16) >> priority, "pass {pass}");
        }
        assert!(node.batches.iter().all(|&(_, i, a)| i <= SWAP_CLUSTER_MAX && a <= 32));
        assert_eq!(node.asked(13, false), (1 << 20) >> DEF_PRIORITY, "a new run starts at 12");
        assert!(k.runs >= 2);
        assert_eq!(u64::from(node.run_ends), k.runs - 1, "every run but the current one ended");
    }

    /// A pass stops once it reclaimed its target, and while the pass scans at least its
    /// target the priority stays: a target of 1000 pages with half of the scanned pages
    /// evictable takes passes of at most 1000 evicted pages.
    #[test]
    fn a_pass_stops_at_its_target() {
        let mut node = FakeNode::new(0, 1000, 1 << 24, 50);
        let mut k = Kswapd::default();
        run(&mut k, &mut node, 100_000);
        assert_eq!(node.free, 1008, "one pass of 63 batches of 16 evictions");
        assert_eq!(k.passes, 1);
    }

    /// `nap_end` against `nap_over` at times around it: before it, `nap_over` says false and
    /// changes nothing (so the workload may skip it); at it, a napping kswapd not yet woken
    /// changes state. Checked asleep, woken, running, napping, woken in the nap and napping
    /// on an unbalanced node.
    #[test]
    fn nap_over_does_nothing_before_nap_end() {
        let check = |k: &Kswapd, node: &FakeNode| {
            let end = k.nap_end();
            let times = [0, 1, NAP_PS, end.saturating_sub(1), end, end.saturating_add(1)];
            for now in times.into_iter().filter(|&t| t < end) {
                let mut c = k.clone();
                assert!(!c.nap_over(node, now), "acted at {now}, before {end}");
                assert_eq!(format!("{c:?}"), format!("{k:?}"), "changed at {now}");
            }
            if end != u64::MAX {
                let mut c = k.clone();
                c.nap_over(node, end);
                assert_ne!(format!("{c:?}"), format!("{k:?}"), "nothing at the nap's end");
            }
        };
        let mut node = FakeNode::new(0, 1000, 1 << 20, 100);
        let mut k = Kswapd::default();
        check(&k, &node);
        assert!(k.wake(&node, Order(0), ZoneType::Normal));
        check(&k, &node);
        for (now, free) in [(5, 0), (10, 0)] {
            node.free = free;
            if now > 5 {
                assert!(k.wake(&node, Order(0), ZoneType::Normal), "woken in the nap");
                check(&k, &node);
                assert_eq!(k.nap_end(), u64::MAX);
            }
            while k.step(&mut node, now).unwrap() == KswapdNext::Continue {
                check(&k, &node);
            }
            assert_eq!(k.nap_end(), now + NAP_PS, "napping");
            check(&k, &node);
            node.free = 0;
            check(&k, &node);
        }
    }

    /// Going to sleep clears the skip hints (and wakes kcompactd): once per sleep, and not
    /// before the node is balanced. A node that reclaims nothing for 16 runs is hopeless:
    /// kswapd sleeps, and a wakeup does not wake it.
    #[test]
    fn going_to_sleep_clears_the_skip_hints() {
        let mut node = FakeNode::new(0, 1000, 1 << 20, 100);
        let mut k = Kswapd::default();
        assert!(k.wake(&node, Order(0), ZoneType::Normal));
        node.pass = k.passes;
        k.step(&mut node, 0).unwrap();
        assert_eq!(node.sleeps, 0, "not while reclaiming");
        while k.step(&mut node, 0).unwrap() == KswapdNext::Continue {}
        assert_eq!(node.sleeps, 1);
        assert_eq!(node.run_ends, 1, "the balanced run ended before the sleep");
        // The nap: woken in it (below HIGH again), kswapd runs again at once; at its end on a
        // balanced node it sleeps for good without a second reset.
        node.free = 0;
        assert!(k.wake(&node, Order(0), ZoneType::Normal));
        while k.step(&mut node, 5).unwrap() == KswapdNext::Continue {}
        assert_eq!(node.sleeps, 2);
        assert!(!k.nap_over(&node, 5 + NAP_PS));
        assert_eq!(k.step(&mut node, 10).unwrap(), KswapdNext::Block, "asleep for good");
        // At the end of a nap on a node below HIGH, kswapd runs again without a wakeup.
        node.free = 0;
        assert!(k.wake(&node, Order(0), ZoneType::Normal));
        while k.step(&mut node, 10).unwrap() == KswapdNext::Continue {}
        assert_eq!(node.sleeps, 3);
        node.free = 999;
        assert!(!k.nap_over(&node, 9 + NAP_PS), "not before its end");
        assert!(k.nap_over(&node, 10 + NAP_PS));
        while k.step(&mut node, 10 + NAP_PS).unwrap() == KswapdNext::Continue {}
        assert_eq!(node.sleeps, 4);

        let mut empty = FakeNode::new(0, 1000, 0, 0);
        let mut k = Kswapd::default();
        run(&mut k, &mut empty, 1_000_000);
        assert_eq!(k.runs, u64::from(MAX_RECLAIM_RETRIES));
        assert_eq!(empty.sleeps, 1);
        assert!(!k.wake(&empty, Order(0), ZoneType::Normal), "hopeless");
    }

    /// The DMA32 zone of a 64 MiB machine (DMA below it, 16 MiB) whose free memory is
    /// `free` single pages, none of them buddies: every page allocated, then every other one
    /// of the zone freed from its bottom. Returns the zone's index and the zone's pages still
    /// held, in order.
    fn fragmented(free: impl Fn(&Zone) -> u64) -> (PageAllocator, Cpu, usize, Vec<u64>) {
        let map = MemoryMap::single_node(1, 64 << 20).unwrap();
        let pa = PageAllocator::new(map, Tunables::default(), Policy::modern()).unwrap();
        let cpu = pa.cpu(CpuId(0)).unwrap();
        let mut held = Vec::new();
        for gfp in [Gfp::HIGHUSER_MOVABLE, Gfp::HIGHUSER_MOVABLE | Gfp::MEMALLOC] {
            while let Ok(p) = pa.alloc_pages(cpu, gfp, Order(0)) {
                held.push(p.0);
            }
        }
        let zi = pa.zones().iter().position(|z| z.zone_type() == ZoneType::Dma32).unwrap();
        let z = &pa.zones()[zi];
        let span = z.start_pfn().0..z.start_pfn().0 + z.spanned_pages().0;
        held.retain(|p| span.contains(p));
        held.sort_unstable();
        let want = free(z);
        let freed: Vec<u64> =
            held.iter().copied().filter(|p| p % 2 == 0).take(want as usize).collect();
        for &p in &freed {
            pa.free_pages(cpu, Pfn(p), Order(0)).unwrap();
        }
        pa.drain_all_pages(cpu, None);
        held.retain(|p| !freed.contains(p));
        (pa, cpu, zi, held)
    }

    /// `compaction_ready` at order 9: a zone just below HIGH + `compact_gap` (compaction
    /// could run: above LOW + gap) is reclaimed from; above HIGH + gap it is left alone; a
    /// zone that can already serve the order is ready whatever its free pages.
    #[test]
    fn compaction_ready_leaves_a_zone_above_high_plus_gap_alone() {
        let gap = compact_gap(Order(9));
        assert_eq!(gap, 1024);
        let mark = |z: &Zone, w: usize| z.wmark_pages(w);
        let zt = ZoneType::Dma32;
        let (pa, _, zi, _) = fragmented(|z| mark(z, WMARK_HIGH) + gap - 1);
        let z = &pa.zones()[zi];
        let free = z.free_pages().0;
        assert!(free > mark(z, WMARK_LOW) + gap && free < mark(z, WMARK_HIGH) + gap, "{free}");
        assert!(!compaction_ready(z, Order(9), zt));
        let (pa, _, zi, _) = fragmented(|z| mark(z, WMARK_HIGH) + gap + 32);
        let z = &pa.zones()[zi];
        let free = z.free_pages().0;
        let marks = [WMARK_MIN, WMARK_LOW, WMARK_HIGH].map(|w| mark(z, w));
        assert!(free > marks[2] + gap, "{free} {marks:?}");
        assert!(compaction_ready(z, Order(9), zt), "{free} {marks:?}");
        // Few free pages (MIN), but one order-9 block besides them: the allocation would
        // succeed, no reclaim needed.
        let (pa, cpu, zi, held) = fragmented(|z| mark(z, WMARK_MIN));
        let z = &pa.zones()[zi];
        assert!(!compaction_ready(z, Order(9), zt));
        let top = held.last().copied().unwrap();
        let base = (top + 1 - 512) / 512 * 512;
        assert!((base..base + 512).all(|p| held.binary_search(&p).is_ok()));
        for p in base..base + 512 {
            pa.free_pages(cpu, Pfn(p), Order(0)).unwrap();
        }
        pa.drain_all_pages(cpu, None);
        assert!(compaction_ready(&pa.zones()[zi], Order(9), zt));
    }
}

//! Per-CPU pagesets (kernel `struct per_cpu_pages`): a small cache of free blocks per
//! (zone, CPU) in front of the buddy lists, so most allocations and frees never touch the zone
//! lock (docs/kernel-reference.md §1.5–1.6, §3.4–3.6, §4, §5).
//!
//! Every mechanism the seeds changed is switched by [`Policy`]: the list layout, how `high`
//! is sized and tuned, refill and drain sizes, `free_high`, bulk-free list selection, decay.
//! The functions keep the kernel's names: `alloc.rs` has `rmqueue_pcplist`, `nr_pcp_alloc` and
//! `rmqueue_bulk`; `free.rs` has `free_unref_page_commit`, `nr_pcp_high`, `nr_pcp_free` and
//! `free_pcppages_bulk`; [`drain`] has `decay_pcp_high`, `drain_zone_pages`,
//! `drain_pages_zone` and `drain_all_pages`.
//!
//! Locking: each pageset sits behind its own lock. The local allocation and free paths only
//! try-lock it under [`PcpLocking::SpinlockTrylock`] and fall back to the zone on failure;
//! drains and decay always lock it. Lock order: pageset lock, then zone lock.

pub(crate) mod alloc;
pub mod drain;
pub(crate) mod free;
pub(crate) mod remote;

use crate::list::ListHead;
use crate::migratetype::{MigrateType, MIGRATE_PCPTYPES};
use crate::policy::{
    FreeBatchSizing, FreeHigh, FreeHighThreshold, PcpHigh, PgfreeUnit, Policy, ReclaimActiveLimit,
    Tunables, MAX_NR_PCP_LISTS,
};
use crate::sizing::{self, PcpSizes};
use crate::stats::Counters;
use crate::sync::{AtomicU64, Mutex, RawLock, RawSpinLock};
use crate::types::{Order, NR_PAGE_ORDERS};
use crate::zone_flags as flags;

#[cfg(doc)]
use crate::policy::PcpLocking;

/// PCPF_PREV_FREE_HIGH_ORDER: the last free on this pageset was of order 1..=3.
pub const PCPF_PREV_FREE_HIGH_ORDER: u8 = 0x01;
/// PCPF_FREE_HIGH_BATCH: this CPU's cache share is large; free_high keeps `batch` pages.
pub const PCPF_FREE_HIGH_BATCH: u8 = 0x02;

/// One per-CPU pageset. Everything here is protected by the pageset's lock (the `Mutex` in
/// [`PcpSlot`]). Invariants: `count == Σ lists[i].len() << order(i)`; once used,
/// `high_min <= high <= high_max` except transiently as docs/kernel-reference.md §1.5 and §8.3
/// describe. Counts are `i32` as the kernel's `int`s: they are compared with differences that can
/// go negative (`high - count - batch`).
#[derive(Debug)]
pub struct PerCpuPages {
    /// Pages (not blocks) on all lists.
    pub(crate) count: i32,
    /// The flush threshold in force; 0 until first use, then clamped lazily. Written only
    /// through [`PerCpuPages::set_high`] and [`PerCpuPages::update`], which keep
    /// `free_limit` with it.
    pub(crate) high: i32,
    /// `high` when the lazy clamp into [`high_min`, `high_max`] would leave it as it is,
    /// else `i32::MIN`: the order-0 free compares its count with this alone, and a pageset
    /// whose `high` needs the clamp goes to the flush path, whose `nr_pcp_high` clamps it.
    pub(crate) free_limit: i32,
    /// Lower bound of `high`.
    pub(crate) high_min: i32,
    /// Upper bound of `high` (== high_min when tuning is off).
    pub(crate) high_max: i32,
    /// Refill and drain chunk.
    pub(crate) batch: i32,
    /// `PCPF_*` bits.
    pub(crate) flags: u8,
    /// Refill scale exponent (RefillSizing::AllocFactor), 0..=S.
    pub(crate) alloc_factor: u8,
    /// Remote-node drain countdown, in ticks.
    pub(crate) expire: u8,
    /// Drain scale exponent of the 5.14–6.6 forms (FreeBatchSizing::FreeFactor*).
    pub(crate) free_factor: u8,
    /// Pages freed recently (FreeBatchSizing::FreeCount*), halved by each allocation.
    pub(crate) free_count: i32,
    /// Where a free stops growing `free_count`: `batch << S` (saturating), S being
    /// PCP_BATCH_SCALE_MAX, under the policies that count frees (the `free_count` forms of
    /// `free_batch_sizing`), else 0, so the free's one compare also says whether the policy
    /// counts at all. Kept with `batch` so a free neither recomputes it nor asks the policy.
    pub(crate) free_count_cap: i32,
    /// Lowest count after an allocation since the last decay (HighDecay::CountMinLimited).
    pub(crate) count_min: i32,
    /// Activity since the last tick: the vmstat-fold signal that re-arms `expire`.
    pub(crate) active: bool,
    /// Free blocks, indexed by pindex; head = most recently freed.
    pub(crate) lists: [ListHead; MAX_NR_PCP_LISTS],
    /// Blocks this CPU freed for another CPU's pageset, not yet sent there
    /// (`Policy::remote_free`; [`remote`]). Not counted in `count`.
    pub(crate) pending: remote::Pending,
}

// The accessors below are unused now that `pcp` is private (users read a `PcpSnapshot`);
// they stay until the hot-path work on this file has merged.
impl PerCpuPages {
    /// The boot pageset: every free goes straight back, every refill takes one block.
    pub(crate) const fn new() -> PerCpuPages {
        PerCpuPages {
            count: 0,
            high: 0,
            free_limit: 0,
            high_min: 0,
            high_max: 0,
            batch: 1,
            flags: 0,
            alloc_factor: 0,
            expire: 0,
            free_factor: 0,
            free_count: 0,
            free_count_cap: 0,
            count_min: 0,
            active: false,
            lists: [ListHead::new(); MAX_NR_PCP_LISTS],
            pending: remote::Pending::EMPTY,
        }
    }

    /// Push new sizes (kernel `pageset_update`): `high` itself is left alone and re-clamped
    /// on next use. `counts_frees`: does the policy count frees in `free_count`
    /// ([`PcpFast::counts_frees`])?
    pub(crate) fn update(&mut self, sizes: PcpSizes, s: u8, counts_frees: bool) {
        self.batch = sizes.batch as i32;
        self.free_count_cap = if counts_frees { free::shl(self.batch, s) } else { 0 };
        self.high_min = sizes.high_min as i32;
        self.high_max = sizes.high_max as i32;
        self.set_high(self.high);
    }

    /// Store `high` and the `free_limit` that goes with it.
    #[inline]
    pub(crate) fn set_high(&mut self, high: i32) {
        self.high = high;
        self.free_limit = self.free_limit_for(high);
    }

    /// The `free_limit` for a `high` of `high` under the current bounds.
    #[inline]
    pub(crate) fn free_limit_for(&self, high: i32) -> i32 {
        if sizing::pcp_clamp(high, self.high_min, self.high_max) == high {
            high
        } else {
            i32::MIN
        }
    }
}

// The kernel's per_cpu_pages fits in four cache lines; so does ours (lists are 12 bytes each).
const _: () = assert!(size_of::<PerCpuPages>() <= 256);

/// The policy decisions the pageset hit paths make on every call, resolved once when the
/// allocator is built (the policy never changes afterwards): a table lookup and a mask test
/// replace matches on several switches.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PcpFast {
    /// The list of each (order, PCP migratetype), or [`PcpFast::NOT_CACHED`] (the layout's
    /// `pindex`).
    pindex: [[u8; MIGRATE_PCPTYPES]; NR_PAGE_ORDERS],
    /// The list a freed block of each order goes on, by its pageblock's migratetype bits
    /// (`Pageblocks::get_bits`): HIGHATOMIC and CMA blocks ride on the MOVABLE list,
    /// ISOLATE blocks and uncached orders go to the buddy lists ([`PcpFast::NOT_CACHED`]).
    free_pindex: [[u8; 8]; NR_PAGE_ORDERS],
    /// Does a free count its pages in `free_count` (the 6.7+ `free_count` forms of
    /// `free_batch_sizing`)? An allocation halves every signal whatever the policy
    /// (`note_alloc`), and a free compares with the pageset's `free_count_cap`, which
    /// this sets to 0 when the answer is no: new sizes are the one place the form is asked.
    pub(crate) counts_frees: bool,
    /// Zone flags under which a free's flush threshold is not simply `high`: RECLAIM_ACTIVE
    /// when a reclaim limit applies, BELOW_HIGH with that mechanism (`nr_pcp_high`).
    pub(crate) free_gate: u32,
    /// The free_count threshold of free_high, when the policy fires it on free_count (the
    /// counting forms of `free_batch_sizing` with `free_high` on).
    pub(crate) free_high_threshold: Option<FreeHighThreshold>,
    /// free_high's signal under the free_factor forms is `free_factor` above this: 0 there
    /// with free_high on, else `u8::MAX`, which no factor passes.
    pub(crate) free_factor_floor: u8,
    /// The `PCPF_*` bits free_high needs set before the free: PREV_FREE_HIGH_ORDER under
    /// `FreeHigh::Consecutive`, none otherwise.
    pub(crate) free_high_prev: u8,
    /// [`PcpFast::pgfree`]'s mask: all bits under [`PgfreeUnit::Pages`], none under
    /// `Blocks`.
    pgfree_order_mask: u8,
}

impl PcpFast {
    const NOT_CACHED: u8 = u8::MAX;

    pub(crate) fn new(policy: &Policy) -> PcpFast {
        let mut pindex = [[PcpFast::NOT_CACHED; MIGRATE_PCPTYPES]; NR_PAGE_ORDERS];
        for (o, row) in pindex.iter_mut().enumerate() {
            for (mt, slot) in row.iter_mut().enumerate() {
                if let Some(i) = policy.pcp_lists.pindex(Order(o as u8), mt as u8) {
                    *slot = i as u8;
                }
            }
        }
        let mut free_pindex = [[PcpFast::NOT_CACHED; 8]; NR_PAGE_ORDERS];
        for (o, row) in free_pindex.iter_mut().enumerate() {
            for (bits, slot) in row.iter_mut().enumerate() {
                let mt = crate::pageblock::type_of_bits(bits as u8);
                if mt == MigrateType::Isolate {
                    continue;
                }
                let pcp_mt = if mt.is_mergeable() { mt } else { MigrateType::Movable };
                *slot = pindex[o][pcp_mt as usize];
            }
        }
        let counts_frees = matches!(
            policy.free_batch_sizing,
            FreeBatchSizing::FreeCountV1 | FreeBatchSizing::FreeCount
        );
        let mut free_gate = 0;
        if policy.reclaim_active_limit != ReclaimActiveLimit::Off {
            free_gate |= flags::RECLAIM_ACTIVE;
        }
        if policy.zone_below_high {
            free_gate |= flags::BELOW_HIGH;
        }
        let free_high_on = policy.free_high != FreeHigh::Off;
        let free_high_threshold =
            (free_high_on && counts_frees).then_some(policy.free_high_threshold);
        let factor_forms = matches!(
            policy.free_batch_sizing,
            FreeBatchSizing::FreeFactor
                | FreeBatchSizing::FreeFactorCapped
                | FreeBatchSizing::FreeFactorCappedInclusive
        );
        let free_factor_floor = if free_high_on && factor_forms { 0 } else { u8::MAX };
        let free_high_prev =
            if policy.free_high == FreeHigh::Consecutive { PCPF_PREV_FREE_HIGH_ORDER } else { 0 };
        let pgfree_order_mask = match policy.pgfree_unit {
            PgfreeUnit::Pages => u8::MAX,
            PgfreeUnit::Blocks => 0,
        };
        PcpFast {
            pindex,
            free_pindex,
            counts_frees,
            free_gate,
            free_high_threshold,
            free_factor_floor,
            free_high_prev,
            pgfree_order_mask,
        }
    }

    /// The list blocks of `order` and type `mt` go on, if the layout caches them (HIGHATOMIC
    /// and CMA have no list: the caller maps them first).
    #[inline]
    pub(crate) fn pindex(&self, order: Order, mt: MigrateType) -> Option<usize> {
        let i = *self.pindex.get(order.index())?.get(mt as usize)?;
        (i != PcpFast::NOT_CACHED).then_some(usize::from(i))
    }

    /// What PGFREE counts for a pageset free of `order` (`Policy::pgfree_unit`): the block's
    /// pages, or 1 per block. A shift by the order masked with the unit, where the unit's
    /// `match` cost a policy load, a test and a conditional move on every free above order 0
    /// (at order 0 both units count 1, and a constant order folds either form).
    #[inline(always)]
    pub(crate) fn pgfree(&self, order: Order) -> u64 {
        1 << (order.0 & self.pgfree_order_mask)
    }

    /// The list a block of `order` freed into a pageblock whose migratetype bits are `bits`
    /// goes on, or `None` when it goes to the buddy lists.
    #[inline]
    pub(crate) fn free_pindex(&self, order: Order, bits: u8) -> Option<usize> {
        let i = *self.free_pindex.get(order.index())?.get(usize::from(bits))?;
        (i != PcpFast::NOT_CACHED).then_some(usize::from(i))
    }
}

/// A pageset, its lock and the counters it owns, on its own cache lines.
#[derive(Debug)]
#[repr(align(64))]
pub struct PcpSlot<L: RawLock = RawSpinLock> {
    pub(crate) pcp: Mutex<L, PerCpuPages>,
    /// Counters updated under `pcp`'s lock.
    pub(crate) stats: Counters,
    /// The remote-free list (`Policy::remote_free`), outside the lock: the head frame's index
    /// in the low half ([`NIL`](crate::mem_map::NIL) when empty) and the pages on the list in
    /// the high half, so one compare-exchange pushes and one swap takes everything.
    pub(crate) remote: AtomicU64,
}

impl<L: RawLock> PcpSlot<L> {
    pub(crate) fn new() -> PcpSlot<L> {
        PcpSlot {
            pcp: Mutex::new(PerCpuPages::new()),
            stats: Counters::default(),
            remote: AtomicU64::new(remote::EMPTY),
        }
    }

    /// Pages this pageset holds: on its lists, on its pending chain and on its remote-free
    /// list (the last read outside the lock, so racy against pushes, as any count is).
    pub(crate) fn held_pages(&self) -> u64 {
        let p = self.pcp.lock();
        let (_, remote) = remote::word_parts(self.remote.load(crate::sync::Ordering::Relaxed));
        p.count.max(0) as u64 + u64::from(p.pending.pages) + u64::from(remote)
    }

    /// A copy of the pageset's state, taken under its lock.
    pub fn snapshot(&self) -> PcpSnapshot {
        let p = self.pcp.lock();
        PcpSnapshot {
            count: p.count,
            high: p.high,
            high_min: p.high_min,
            high_max: p.high_max,
            batch: p.batch,
            flags: p.flags,
            alloc_factor: p.alloc_factor,
            free_factor: p.free_factor,
            free_count: p.free_count,
        }
    }
}

/// A pageset's fields at one moment (what `/proc/zoneinfo` prints, and more).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct PcpSnapshot {
    /// Pages on all lists.
    pub count: i32,
    /// Flush threshold in force.
    pub high: i32,
    /// Lower bound of high.
    pub high_min: i32,
    /// Upper bound of high.
    pub high_max: i32,
    /// Refill and drain chunk.
    pub batch: i32,
    /// `PCPF_*` bits.
    pub flags: u8,
    /// Refill scale exponent.
    pub alloc_factor: u8,
    /// Older drain scale exponent.
    pub free_factor: u8,
    /// Recent frees, pages.
    pub free_count: i32,
}

/// Batch, high_min and high_max for a zone's pagesets under `policy` (kernel
/// `zone_set_pageset_high_and_batch`). An unpopulated zone gets the boot pageset.
pub(crate) fn zone_pcp_sizes(
    policy: &Policy,
    tunables: &Tunables,
    managed: crate::types::NrPages,
    low_wmark_with_boost: u64,
    node_cpus: u32,
    num_online_cpus: u32,
) -> PcpSizes {
    if managed.0 == 0 {
        return sizing::BOOT_PCP_SIZES;
    }
    let raw_batch = sizing::zone_batchsize_raw(managed, policy.batch_cap.cap_pages());
    let batch = raw_batch.max(1);
    let fraction = tunables.percpu_pagelist_high_fraction;
    let static_high = |fraction| {
        sizing::zone_highsize(
            low_wmark_with_boost,
            managed,
            batch,
            node_cpus,
            0,
            num_online_cpus,
            fraction,
        )
    };
    match policy.pcp_high {
        PcpHigh::SixTimesBatch => {
            // 6 × the unclamped batch: tiny zones printed high 0, batch 1 on those kernels.
            let high = sizing::legacy_pcp_high(raw_batch);
            PcpSizes { batch, high_min: high, high_max: high }
        }
        PcpHigh::StaticLowWmark => {
            let high = static_high(fraction);
            PcpSizes { batch, high_min: high, high_max: high }
        }
        PcpHigh::AutoTune => {
            sizing::pcp_sizes_for_batch(
                batch,
                low_wmark_with_boost,
                managed,
                node_cpus,
                0,
                num_online_cpus,
                fraction,
            )
            .unwrap_or_else(|_| {
                // Tunables::validate refuses fractions 1..=7 before we get here.
                let high = static_high(0);
                PcpSizes { batch, high_min: high, high_max: high }
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::PcpLists;
    use crate::types::MAX_PAGE_ORDER;

    /// `free_limit` is `high` exactly when the lazy clamp would leave `high` alone: after new
    /// bounds that exclude it the order-0 free's test fails (`i32::MIN`) until a clamp
    /// moves `high` inside, and bounds with `high_min` above `high_max` follow the kernel's
    /// clamp (only `high_max` is a fixed point, reached by the second clamp).
    #[test]
    fn the_free_limit_follows_high_and_its_bounds() {
        let mut p = PerCpuPages::new();
        assert_eq!(p.free_limit, 0, "the boot pageset's high 0 is inside [0, 0]");
        p.update(PcpSizes { batch: 63, high_min: 3132, high_max: 20480 }, 5, true);
        assert_eq!(p.free_limit, i32::MIN, "high 0 below the new high_min");
        assert_eq!(p.clamp_high(), 3132);
        assert_eq!(p.free_limit, 3132);
        p.set_high(10_000);
        assert_eq!(p.free_limit, 10_000);
        p.update(PcpSizes { batch: 63, high_min: 3132, high_max: 8000 }, 5, true);
        assert_eq!((p.high, p.free_limit), (10_000, i32::MIN), "high left alone, test fails");
        assert_eq!(p.clamp_high(), 8000);
        assert_eq!(p.free_limit, 8000);
        p.update(PcpSizes { batch: 63, high_min: 25_000, high_max: 20_480 }, 5, true);
        assert_eq!(p.free_limit, i32::MIN);
        assert_eq!(p.clamp_high(), 25_000, "below high_max and at high_min: high_min");
        assert_eq!(p.free_limit, i32::MIN, "which the next clamp moves to high_max");
        assert_eq!(p.clamp_high(), 20_480);
        assert_eq!(p.free_limit, 20_480);
    }

    /// `PcpFast::pgfree` counts what the unit says, for every unit and order.
    #[test]
    fn the_pgfree_count_is_the_unit_s() {
        for &unit in PgfreeUnit::ALL {
            let fast = PcpFast::new(&Policy { pgfree_unit: unit, ..Policy::modern() });
            for o in 0..NR_PAGE_ORDERS as u8 {
                let want = match unit {
                    PgfreeUnit::Pages => Order(o).nr_pages().0,
                    PgfreeUnit::Blocks => 1,
                };
                assert_eq!(fast.pgfree(Order(o)), want, "{unit:?} order {o}");
            }
        }
    }

    /// The free_high decision from `PcpFast` is the policy's, spelled out as
    /// the kernel versions have it (the recent-free signal of the sizing form against the
    /// threshold, `count ≥ batch` under PCPF_FREE_HIGH_BATCH, the previous free's order under
    /// `Consecutive`), for every form, threshold, flag and order 0..=4 over counts around
    /// each threshold.
    #[test]
    fn the_free_high_decision_is_the_policy_s() {
        fn oracle(policy: &Policy, p: &PerCpuPages, order: u8) -> bool {
            if !(1..=3).contains(&order) {
                return false;
            }
            let signal = match policy.free_batch_sizing {
                FreeBatchSizing::Batch => false,
                FreeBatchSizing::FreeCountV1 | FreeBatchSizing::FreeCount => {
                    p.free_count >= policy.free_high_threshold.pages(p.batch, p.high_min)
                }
                _ => p.free_factor != 0,
            };
            let cache_ok = p.flags & PCPF_FREE_HIGH_BATCH == 0 || p.count >= p.batch;
            let prev = p.flags & PCPF_PREV_FREE_HIGH_ORDER != 0;
            match policy.free_high {
                FreeHigh::Off => false,
                FreeHigh::AnyHighOrder => signal && cache_ok,
                FreeHigh::Consecutive => signal && cache_ok && prev,
            }
        }
        let mut decided = [0u32; 2];
        for &sizing in FreeBatchSizing::ALL {
            for &free_high in FreeHigh::ALL {
                for &threshold in FreeHighThreshold::ALL {
                    let policy = Policy {
                        free_batch_sizing: sizing,
                        free_high,
                        free_high_threshold: threshold,
                        ..Policy::modern()
                    };
                    let fast = PcpFast::new(&policy);
                    for flags in 0..4u8 {
                        let mut p = PerCpuPages::new();
                        p.update(
                            PcpSizes { batch: 63, high_min: 3132, high_max: 20480 },
                            5,
                            fast.counts_frees,
                        );
                        for count in [0, 62, 63, 64] {
                            for free_count in [0, 62, 63, 314, 315, 1628, 1629, 1630] {
                                for free_factor in [0u8, 1, 3] {
                                    for order in 0..=4u8 {
                                        p.flags = flags;
                                        p.count = count;
                                        p.free_count = free_count;
                                        p.free_factor = free_factor;
                                        let want = oracle(&policy, &p, order);
                                        let got = p.free_high_decision(&fast, Order(order));
                                        assert_eq!(
                                            got, want,
                                            "{sizing} {free_high} {threshold} flags {flags} \
                                             count {count} free_count {free_count} \
                                             free_factor {free_factor} order {order}"
                                        );
                                        decided[usize::from(got)] += 1;
                                        let prev = (1..=3).contains(&order);
                                        assert_eq!(p.flags & PCPF_PREV_FREE_HIGH_ORDER != 0, prev);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(decided[0] > 0 && decided[1] > 0, "both verdicts reached: {decided:?}");
    }

    /// The precomputed tables say what the policy's functions say, for every layout.
    #[test]
    fn fast_tables_agree_with_the_layout() {
        for &layout in PcpLists::ALL {
            let policy = Policy { pcp_lists: layout, ..Policy::modern() };
            let fast = PcpFast::new(&policy);
            for o in 0..=MAX_PAGE_ORDER + 1 {
                let order = Order(o);
                for mt in MigrateType::ALL {
                    let want = layout.pindex(order, mt as u8);
                    assert_eq!(fast.pindex(order, mt), want, "{layout} order {o} {mt}");
                }
                for bits in 0..8u8 {
                    let mt = crate::pageblock::type_of_bits(bits);
                    let want = match mt {
                        MigrateType::Isolate => None,
                        MigrateType::HighAtomic | MigrateType::Cma => {
                            layout.pindex(order, MigrateType::Movable as u8)
                        }
                        _ => layout.pindex(order, mt as u8),
                    };
                    assert_eq!(
                        fast.free_pindex(order, bits),
                        want,
                        "{layout} order {o} bits {bits}"
                    );
                }
            }
        }
        let modern = PcpFast::new(&Policy::modern());
        assert!(modern.counts_frees);
        assert_eq!(modern.free_gate, flags::RECLAIM_ACTIVE | flags::BELOW_HIGH);
        let old = PcpFast::new(&Policy::preset("tune-base").expect("preset"));
        assert!(!old.counts_frees);
    }
}

//! The allocation side of a pageset: `rmqueue_pcplist`, the refill size `nr_pcp_alloc` and
//! the bulk refill `rmqueue_bulk` (docs/kernel-reference.md §3.4–3.6, docs/preset-history.md §3.5,
//! §3.7).

use crate::events::{EventSink, MetaLine};
use crate::gfp::AllocFlags;
use crate::hot::frames_unchecked;
use crate::mem_map::{FrameInfo, FrameState, NIL};
use crate::migratetype::MigrateType;
use crate::pcp::PerCpuPages;
use crate::policy::{HighDecay, PcpLocking, Policy, RefillSizing};
use crate::sizing::pcp_clamp;
use crate::stats::Counter;
use crate::sync::RawLock;
use crate::types::{CpuId, Order, Pfn};
use crate::zone::{flags, Zone};
use crate::{Cpu, PageAllocator};

impl PerCpuPages {
    /// Clamp `high` into [high_min, high_max] with the kernel's clamp semantics, store it and
    /// return it (the lazy clamp at the top of `nr_pcp_alloc` and `nr_pcp_high`).
    #[inline]
    pub(crate) fn clamp_high(&mut self) -> i32 {
        self.set_high(pcp_clamp(self.high, self.high_min, self.high_max));
        self.high
    }

    /// How many blocks of `order` to refill an empty list with (kernel `nr_pcp_alloc`). May
    /// grow `high` and `alloc_factor`. `s` is PCP_BATCH_SCALE_MAX; `zone_flags` the zone's
    /// flag bits.
    pub(crate) fn nr_pcp_alloc(
        &mut self,
        policy: &Policy,
        s: u8,
        zone_flags: u32,
        order: Order,
    ) -> i32 {
        let base = self.batch;
        let high = self.clamp_high();
        if high < base {
            // Boot pageset or a PCP sized below its batch: one block at a time.
            return 1;
        }
        let scaled = policy.refill_sizing == RefillSizing::AllocFactor && order.0 == 0;
        let mut b = if scaled { base << self.alloc_factor } else { base };
        if self.high_min != self.high_max {
            // Auto-tuning: grow high by the amount asked for, unless the zone is short of
            // memory (ZONE_BELOW_HIGH with that mechanism; kswapd running before it).
            let gate =
                if policy.zone_below_high { flags::BELOW_HIGH } else { flags::RECLAIM_ACTIVE };
            if zone_flags & gate == 0 {
                self.set_high((high + b).min(self.high_max));
            }
        }
        if scaled {
            let maxn = (self.high - self.count - base).max(base);
            if b <= maxn && self.alloc_factor < s {
                self.alloc_factor += 1;
            }
            b = b.min(maxn);
        }
        if b > 1 {
            b = (b >> order.0).max(2);
        }
        b
    }

    /// Bookkeeping every PCP allocation does before taking a block: the recent-free signal
    /// decays (kernel: `free_count >>= 1`, or `free_factor >>= 1` before 6.7). Both are
    /// halved whatever the policy, without testing it: the signal a policy does not keep
    /// never leaves 0 (`free_factor` grows only under the `free_factor` forms, `free_count`
    /// only under the `free_count` forms, and the batch-sized drains grow neither:
    /// `debug::validate` checks it), so halving it changes nothing.
    #[inline]
    fn note_alloc(&mut self) {
        self.free_factor >>= 1;
        self.free_count >>= 1;
        self.active = true;
    }
}

impl<E: EventSink, L: RawLock> PageAllocator<E, L> {
    /// Report a pageset list operation's lines to the sink: the pageset and the block's
    /// frame, which it reads, then the neighbour whose link it rewrites without reading it
    /// ([`NIL`] for none).
    #[inline]
    pub(crate) fn touch_pcp_op(&self, cpu: CpuId, zone: &Zone<L>, idx: u32, neighbour: u32) {
        let frame = |i| MetaLine::Frame(zone.pfn_of(i));
        let reads = [MetaLine::Pageset(zone.idx, cpu), frame(idx)];
        if neighbour == NIL {
            self.events.touch_lines(cpu, &reads, &[]);
        } else {
            self.events.touch_lines(cpu, &reads, &[frame(neighbour)]);
        }
    }

    /// Take a block of `order` from `cpu`'s pageset for `zone`, refilling its list from the
    /// buddy lists if empty (kernel `rmqueue_pcplist`). `None` when the pageset is busy (the
    /// caller then goes to the buddy lists, as the kernel does) or the refill found nothing.
    /// Out of line: inlined into the zonelist walk, its constants were computed on every
    /// walk, most of which go to the buddy lists instead.
    #[inline(never)]
    pub(crate) fn rmqueue_pcplist(
        &self,
        cpu: Cpu,
        zone: &Zone<L>,
        order: Order,
        mt: MigrateType,
        alloc_flags: AllocFlags,
    ) -> Option<Pfn> {
        let pindex = self.pcp_fast.pindex(order, mt)?;
        let slot = &zone.pcp[cpu.id.index()];
        let mut pcp = self.lock_local_pcp(slot)?;
        if self.policy.remote_free && pcp.lists[pindex].is_empty() {
            // Blocks other CPUs freed for this pageset come home before the zone is asked.
            self.remote_free_collect(cpu, zone, slot, &mut pcp);
        }
        pcp.note_alloc();
        if pcp.lists[pindex].is_empty()
            && self.pcp_refill(cpu, zone, slot, &mut pcp, order, pindex, mt, alloc_flags) == 0
        {
            return None;
        }
        Some(self.pcp_pop(cpu.id, zone, slot, &mut pcp, order, pindex, mt))
    }

    /// Lock a pageset on the local allocation or free path: only try under
    /// [`PcpLocking::SpinlockTrylock`] (a busy pageset sends the caller to the zone, as the
    /// kernel does), wait under [`PcpLocking::LocalIrqOff`].
    ///
    /// Both forms start with one try (a try, then a wait, takes the lock exactly as the wait
    /// alone does), so an uncontended pageset costs no policy test; only a busy one looks at
    /// the locking form, out of line.
    #[inline(always)]
    pub(crate) fn lock_local_pcp<'a>(
        &self,
        slot: &'a crate::pcp::PcpSlot<L>,
    ) -> Option<crate::sync::MutexGuard<'a, L, PerCpuPages>> {
        match slot.pcp.try_lock() {
            Some(g) => Some(g),
            None => self.lock_local_pcp_busy(slot),
        }
    }

    /// [`Self::lock_local_pcp`] after its first try found the pageset busy: give up and count
    /// it under [`PcpLocking::SpinlockTrylock`], wait under [`PcpLocking::LocalIrqOff`].
    #[cold]
    #[inline(never)]
    fn lock_local_pcp_busy<'a>(
        &self,
        slot: &'a crate::pcp::PcpSlot<L>,
    ) -> Option<crate::sync::MutexGuard<'a, L, PerCpuPages>> {
        match self.policy.pcp_locking {
            PcpLocking::SpinlockTrylock => {
                self.counters.add_shared(Counter::PcpTrylockFail, 1);
                None
            }
            PcpLocking::LocalIrqOff => Some(slot.pcp.lock()),
        }
    }

    /// Take the head block of a non-empty list without refilling; `None` (and no state
    /// change) if the pageset is busy or the list is empty. The fast lane of `alloc_pages`.
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) fn pcp_take(
        &self,
        cpu: CpuId,
        zone: &Zone<L>,
        order: Order,
        pindex: usize,
        mt: MigrateType,
    ) -> Option<Pfn> {
        // SAFETY: `cpu` is a `Cpu`'s that passed `owns` (hot.rs, C).
        let slot = unsafe { zone.pcp_at(cpu) };
        let mut pcp = slot.pcp.try_lock()?;
        // SAFETY: `pindex` is from `PcpFast::pindex` (hot.rs, L).
        if unsafe { pcp.list_at(pindex) }.is_empty() {
            return None;
        }
        pcp.note_alloc();
        Some(self.pcp_pop(cpu, zone, slot, &mut pcp, order, pindex, mt))
    }

    /// Pop the head block of list `pindex`, which the caller has seen is not empty (tested,
    /// or just refilled), and hand it out (the hit half of `__rmqueue_pcplist`).
    #[inline(always)]
    #[allow(clippy::too_many_arguments, unsafe_code)]
    fn pcp_pop(
        &self,
        cpu: CpuId,
        zone: &Zone<L>,
        slot: &crate::pcp::PcpSlot<L>,
        pcp: &mut PerCpuPages,
        order: Order,
        pindex: usize,
        mt: MigrateType,
    ) -> Pfn {
        // SAFETY: `pindex` is from `PcpFast::pindex` (hot.rs, L) and the list holds this
        // zone's frames (F).
        let list = unsafe { pcp.list_at(pindex) };
        // SAFETY: as above (hot.rs, F).
        let (idx, next) = list.pop_head_nonempty_with(unsafe { frames_unchecked(&zone.mem_map) });
        if E::ENABLED {
            self.touch_pcp_op(cpu, zone, idx, next);
        }
        pcp.count -= 1 << order.0;
        if self.policy.high_decay == HighDecay::CountMinLimited {
            pcp.count_min = pcp.count_min.min(pcp.count);
        }
        // SAFETY: `idx` was a member of the zone's list (hot.rs, F).
        let frame = unsafe { zone.frame_at(idx) };
        let info = FrameInfo { state: FrameState::Allocated, order, list: mt as u8 };
        if self.policy.remote_free {
            frame.set_info_owned(info, cpu.0);
        } else {
            frame.set_info(info);
        }
        // The page's reference count (kernel set_page_refcounted): page_frag_free drops it.
        frame.aux().store(1, crate::sync::Ordering::Relaxed);
        slot.stats.add_locked(Counter::PcpAlloc, 1);
        slot.stats.add_locked(Counter::pgalloc(zone.ztype), order.nr_pages().0);
        zone.pfn_of(idx)
    }

    /// Refill the empty list `pindex` (kernel `__rmqueue_pcplist`'s slow half): size the
    /// refill, take the blocks, count it. Kept out of line so the hit path stays small.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn pcp_refill(
        &self,
        cpu: Cpu,
        zone: &Zone<L>,
        slot: &crate::pcp::PcpSlot<L>,
        pcp: &mut PerCpuPages,
        order: Order,
        pindex: usize,
        mt: MigrateType,
        alloc_flags: AllocFlags,
    ) -> i32 {
        let s = self.tunables.pcp_batch_scale_max;
        let zone_flags = zone.flags.load(crate::sync::Ordering::Relaxed);
        let n = pcp.nr_pcp_alloc(&self.policy, s, zone_flags, order);
        let got = self.rmqueue_bulk(cpu, zone, pcp, order, n, pindex, mt, alloc_flags);
        slot.stats.add_locked(Counter::PcpRefill, 1);
        slot.stats.add_locked(Counter::PcpRefillPages, (got as u64) << order.0);
        got
    }

    /// Move up to `n` blocks of `order` from the buddy lists to the tail of list `pindex`,
    /// under one zone-lock hold (kernel `rmqueue_bulk`). Returns how many it got; stops at the
    /// first failure.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn rmqueue_bulk(
        &self,
        cpu: Cpu,
        zone: &Zone<L>,
        pcp: &mut PerCpuPages,
        order: Order,
        n: i32,
        pindex: usize,
        mt: MigrateType,
        alloc_flags: AllocFlags,
    ) -> i32 {
        let mut zl = zone.lock(cpu.id, &self.events, &self.cfg);
        let to = RefillTo { pcp, order, pindex, mt, alloc_flags };
        // The loop unswitched on the tests that are fixed for the whole refill: the common
        // case (no CMA, 6.10 hygiene, a type with pageset lists, as every refill's is) runs a
        // copy with none, its flags' CMA bit cleared as a constant (it was clear) so that
        // `rmqueue_at` drops its test, and the free-page accounting knows the type is one of
        // the PCP types.
        let (own_lists_first, hygiene) = (!alloc_flags.has(AllocFlags::CMA), self.cfg.hygiene);
        if own_lists_first && hygiene && mt.index() < crate::migratetype::MIGRATE_PCPTYPES {
            let to = RefillTo { alloc_flags: alloc_flags.without(AllocFlags::CMA), ..to };
            self.refill_blocks(&mut zl, to, n, true)
        } else {
            self.refill_blocks(&mut zl, to, n, hygiene)
        }
    }

    /// [`Self::rmqueue_bulk`]'s loop: `rmqueue_at` block by block, each block put
    /// on the pageset list. `hygiene` is the policy's 6.10 rule (otherwise the block
    /// remembers the list it came from). The count is added once.
    #[allow(unsafe_code)]
    #[inline(always)]
    fn refill_blocks(
        &self,
        zl: &mut crate::zone::ZoneLocked<'_, E, L>,
        to: RefillTo<'_>,
        n: i32,
        hygiene: bool,
    ) -> i32 {
        let RefillTo { pcp, order, pindex, mt, alloc_flags } = to;
        let zone = zl.zone;
        // SAFETY: the buddy lists and the pageset's list hold this zone's frames (hot.rs, F).
        let at = unsafe { frames_unchecked(zl.frames) };
        // Counted down: the loop keeps one counter live, not the blocks got and `n`.
        let n = n.max(0);
        let mut left = n;
        while left > 0 {
            let Some(idx) = zl.rmqueue_at(order, mt, alloc_flags) else { break };
            let frame = at(idx);
            if !hygiene {
                // ≤ 6.9 remembers which list the block came from (CMA, or the type asked).
                let from = match zone.pageblocks.get(zone.pfn_of(idx)) {
                    MigrateType::Cma => MigrateType::Cma,
                    _ => mt,
                };
                // Release: see `Frame::claim` (a stale free's reference check).
                frame.aux().store(from as u32, crate::sync::Ordering::Release);
            }
            frame.set_info(FrameInfo { state: FrameState::Pcp, order, list: pindex as u8 });
            // SAFETY: `pindex` is from `PcpFast::pindex` (hot.rs, L).
            let old_tail = unsafe { pcp.list_at(pindex).push_tail_with(&at, idx) };
            if E::ENABLED {
                self.touch_pcp_op(zl.cpu, zone, idx, old_tail);
            }
            left -= 1;
        }
        let got = n - left;
        pcp.count += got << order.0;
        got
    }
}

/// Where a refill puts its blocks and what it asks the buddy lists for.
struct RefillTo<'p> {
    pcp: &'p mut PerCpuPages,
    order: Order,
    pindex: usize,
    mt: MigrateType,
    alloc_flags: AllocFlags,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcp::PcpSlot;
    use crate::sizing::PcpSizes;

    fn pcp(high_min: u32, high_max: u32) -> PerCpuPages {
        let mut p = PcpSlot::<crate::RawSpinLock>::new().pcp.into_inner();
        p.update(PcpSizes { batch: 63, high_min, high_max }, 5, true);
        p
    }

    /// docs/kernel-reference.md §5.5, first trace: pure order-0 allocation from an empty pageset.
    #[test]
    fn refill_sizes_and_high_growth_follow_the_reference_trace() {
        let policy = Policy::modern();
        let mut p = pcp(3132, 20480);
        let mut sizes = std::vec::Vec::new();
        let mut highs = std::vec::Vec::new();
        let mut factors = std::vec::Vec::new();
        for _ in 0..14 {
            // Each refill happens with count 0 (the list was used up since).
            sizes.push(p.nr_pcp_alloc(&policy, 5, 0, Order(0)));
            highs.push(p.high);
            factors.push(p.alloc_factor);
        }
        assert_eq!(
            sizes,
            [63, 126, 252, 504, 1008, 2016, 2016, 2016, 2016, 2016, 2016, 2016, 2016, 2016]
        );
        assert_eq!(
            highs,
            [
                3195, 3321, 3573, 4077, 5085, 7101, 9117, 11133, 13149, 15165, 17181, 19197, 20480,
                20480
            ]
        );
        assert_eq!(factors[..7], [1, 2, 3, 4, 5, 5, 5]);
    }

    #[test]
    fn higher_orders_refill_in_blocks_and_do_not_scale() {
        let policy = Policy::modern();
        for (order, want) in [(1, 31), (2, 15), (3, 7), (9, 2)] {
            let mut p = pcp(3132, 20480);
            assert_eq!(p.nr_pcp_alloc(&policy, 5, 0, Order(order)), want, "order {order}");
            assert_eq!(p.alloc_factor, 0);
            assert_eq!(p.high, 3132 + 63, "grows by batch");
        }
    }

    #[test]
    fn below_high_stops_growth_and_boot_pagesets_take_one_block() {
        let policy = Policy::modern();
        let mut p = pcp(3132, 20480);
        assert_eq!(p.nr_pcp_alloc(&policy, 5, flags::BELOW_HIGH, Order(0)), 63);
        assert_eq!(p.high, 3132);
        let mut boot = PcpSlot::<crate::RawSpinLock>::new().pcp.into_inner();
        assert_eq!(boot.nr_pcp_alloc(&policy, 5, 0, Order(0)), 1);
        // Before 6.7: a fixed batch, no growth.
        let old = Policy::preset("tune-base").unwrap();
        let mut p = pcp(3132, 3132);
        for _ in 0..3 {
            assert_eq!(p.nr_pcp_alloc(&old, 5, 0, Order(0)), 63);
        }
        assert_eq!(p.high, 3132);
    }

    /// maxn limits an order-0 refill by what fits below high.
    #[test]
    fn order0_refill_is_limited_by_room_below_high() {
        let policy = Policy::modern();
        let mut p = pcp(3132, 3132);
        p.count = 3000;
        p.alloc_factor = 3;
        // b = 63 << 3 = 504; maxn = max(3132 - 3000 - 63, 63) = 69.
        assert_eq!(p.nr_pcp_alloc(&policy, 5, 0, Order(0)), 69);
        assert_eq!(p.alloc_factor, 3, "no bump when the request did not fit");
    }
}

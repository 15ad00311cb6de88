//! The free side of a pageset: `free_unref_page_commit`, the flush threshold `nr_pcp_high`,
//! the drain size `nr_pcp_free` and the bulk drain `free_pcppages_bulk` (docs/kernel-reference.md
//! §4, docs/preset-history.md §1.2, §2, §3).

use crate::buddy::{Fpi, Span};
use crate::events::{EventSink, MetaLine, TraceEvent};
use crate::gfp::AllocFlags;
use crate::hot::frames_unchecked;
use crate::list::ListHead;
use crate::mem_map::{Frame, FrameInfo, FrameState, NIL};
use crate::migratetype::MigrateType;
use crate::pcp::{PcpFast, PcpSlot, PerCpuPages, PCPF_FREE_HIGH_BATCH, PCPF_PREV_FREE_HIGH_ORDER};
use crate::policy::{
    BuddyPrefetch, BulkFree, BulkFreeCallers, FreeBatchSizing, FreeHighDrain, Policy,
    ReclaimActiveLimit,
};
use crate::sizing::pcp_clamp;
use crate::stats::{Counter, DrainReason};
use crate::sync::RawLock;
use crate::types::{CpuId, Order, Pfn, ZoneType, PAGE_ALLOC_COSTLY_ORDER};
use crate::zone::{flags, Zone, WMARK_HIGH};
use crate::{Cpu, PageAllocator};

impl PerCpuPages {
    /// How much a free under memory pressure (reclaim active, zone below high) lowers `high`.
    #[inline]
    fn pressure_step(&self, policy: &Policy) -> i32 {
        match policy.free_batch_sizing {
            FreeBatchSizing::Batch => self.batch,
            FreeBatchSizing::FreeFactor
            | FreeBatchSizing::FreeFactorCapped
            | FreeBatchSizing::FreeFactorCappedInclusive => shl(self.batch, self.free_factor),
            FreeBatchSizing::FreeCountV1 => self.free_count,
            FreeBatchSizing::FreeCount => self.free_count.max(self.batch),
        }
    }

    /// What an overflowing burst of frees asks `high` to grow to, minus one batch.
    #[inline]
    fn grow_step(&self, policy: &Policy) -> i32 {
        match policy.free_batch_sizing {
            FreeBatchSizing::Batch => 0,
            FreeBatchSizing::FreeFactor
            | FreeBatchSizing::FreeFactorCapped
            | FreeBatchSizing::FreeFactorCappedInclusive => shl(self.batch, self.free_factor),
            FreeBatchSizing::FreeCountV1 | FreeBatchSizing::FreeCount => self.free_count,
        }
    }

    /// Decide free_high for a block of `order` just pushed (count includes it), and keep
    /// PREV_FREE_HIGH_ORDER up to date. The policy's switches come resolved in `fast`: the
    /// recent-free signal (free_count at the threshold, or a free_factor above 0, whichever
    /// the policy keeps, neither with free_high off) and the previous free's order that
    /// `FreeHigh::Consecutive` also needs; the cache share's `count ≥ batch` under
    /// PCPF_FREE_HIGH_BATCH is the pageset's.
    #[inline]
    pub(crate) fn free_high_decision(&mut self, fast: &PcpFast, order: Order) -> bool {
        let high_order = order.0 >= 1 && order.0 <= PAGE_ALLOC_COSTLY_ORDER;
        if !high_order {
            self.flags &= !PCPF_PREV_FREE_HIGH_ORDER;
            return false;
        }
        let before = self.flags;
        self.flags |= PCPF_PREV_FREE_HIGH_ORDER;
        let counted = fast
            .free_high_threshold
            .is_some_and(|t| self.free_count >= t.pages(self.batch, self.high_min));
        let signal = counted || self.free_factor > fast.free_factor_floor;
        let cache_ok = before & PCPF_FREE_HIGH_BATCH == 0 || self.count >= self.batch;
        signal && cache_ok && before & fast.free_high_prev == fast.free_high_prev
    }

    /// The flush threshold for this free (kernel `nr_pcp_high`), and why a drain at it would
    /// happen. May move `high`.
    pub(crate) fn nr_pcp_high(
        &mut self,
        policy: &Policy,
        s: u8,
        zone_flags: u32,
        free_high: bool,
    ) -> (i32, DrainReason) {
        let high = self.clamp_high();
        if high == 0 {
            return (0, DrainReason::High);
        }
        if free_high {
            if policy.free_high_drain == FreeHighDrain::CappedShrinkHigh {
                self.set_high((high - shl(self.batch, s)).max(self.high_min));
            }
            return (0, DrainReason::FreeHigh);
        }
        if zone_flags & flags::RECLAIM_ACTIVE != 0 {
            match policy.reclaim_active_limit {
                ReclaimActiveLimit::Off => {}
                ReclaimActiveLimit::Cap => {
                    return ((4 * self.batch).min(high), DrainReason::Reclaim)
                }
                ReclaimActiveLimit::CapAndShrink => {
                    self.set_high((high - self.pressure_step(policy)).max(self.high_min));
                    return ((4 * self.batch).min(self.high), DrainReason::Reclaim);
                }
            }
        }
        if self.high_min == self.high_max {
            return (high, DrainReason::High);
        }
        if policy.zone_below_high && zone_flags & flags::BELOW_HIGH != 0 {
            self.set_high((high - self.pressure_step(policy)).max(self.high_min));
            return (self.count.max(self.high_min), DrainReason::BelowHigh);
        }
        if self.count >= high {
            // A burst of frees overflowed: let high follow it (the drain still happens now).
            let need = self.grow_step(policy).saturating_add(self.batch);
            if self.high < need {
                self.set_high(pcp_clamp(need, self.high_min, self.high_max));
            }
        }
        (high, DrainReason::High)
    }

    /// How many pages to drain (kernel `nr_pcp_free`). May bump `free_factor`.
    pub(crate) fn nr_pcp_free(
        &mut self,
        policy: &Policy,
        s: u8,
        high: i32,
        free_high: bool,
    ) -> i32 {
        let batch = self.batch;
        if free_high {
            return match policy.free_high_drain {
                FreeHighDrain::All => self.count,
                FreeHighDrain::CappedShrinkHigh => self.count.min(shl(batch, s)),
            };
        }
        if high < batch {
            return 1;
        }
        let (lo, hi) = (batch, high - batch);
        let mut factor = |capped: bool, inclusive: bool| {
            let n = shl(batch, self.free_factor);
            let room = if inclusive { n <= hi } else { n < hi };
            if room && (!capped || self.free_factor < s) {
                self.free_factor += 1;
            }
            pcp_clamp(n, lo, hi)
        };
        match policy.free_batch_sizing {
            FreeBatchSizing::Batch => batch,
            FreeBatchSizing::FreeFactor => factor(false, false),
            FreeBatchSizing::FreeFactorCapped => factor(true, false),
            FreeBatchSizing::FreeFactorCappedInclusive => factor(true, true),
            FreeBatchSizing::FreeCountV1 | FreeBatchSizing::FreeCount => {
                pcp_clamp(self.free_count, lo, hi)
            }
        }
    }
}

/// What a free-path flush was decided with, for its chunks: the list that overflowed, why,
/// the threshold `nr_pcp_high` gave and whether it is a free_high.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Flush {
    pub(crate) start: usize,
    pub(crate) reason: DrainReason,
    pub(crate) high: i32,
    pub(crate) free_high: bool,
}

/// Whether a batched form recomputes the threshold (and re-tests ZONE_BELOW_HIGH) after
/// every chunk, as the posted v1–v3 did.
const fn recheck_high(form: BulkFreeCallers) -> bool {
    matches!(
        form,
        BulkFreeCallers::BatchedRecheckHigh | BulkFreeCallers::BatchedRecheckHighBatchDrains
    )
}

/// `v << by` saturating at `i32::MAX` (a free_factor grows until the product passes high).
#[inline]
pub(crate) fn shl(v: i32, by: u8) -> i32 {
    i32::try_from(i64::from(v) << by.min(40)).unwrap_or(i32::MAX)
}

impl<E: EventSink, L: RawLock> PageAllocator<E, L> {
    /// Free a claimed block through `cpu`'s pageset when the policy caches its order and the
    /// pageset is available (kernel `free_unref_page`). Returns false when the caller must free
    /// it to the buddy lists instead.
    /// `frame` is `pfn`'s and `idx` its index, as the claim found them.
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) fn free_unref_page(
        &self,
        cpu: Cpu,
        zone: &Zone<L>,
        frame: &Frame,
        idx: u32,
        pfn: Pfn,
        order: Order,
    ) -> bool {
        // HIGHATOMIC and CMA blocks ride on the MOVABLE list (draining returns them home);
        // ISOLATE blocks go straight to the buddy lists.
        // SAFETY: the caller found `pfn` in `zone` (hot.rs, P).
        let bits = unsafe { zone.pageblock_bits(pfn) };
        let Some(pindex) = self.pcp_fast.free_pindex(order, bits) else { return false };
        // SAFETY: the caller checked `cpu` with `owns` (hot.rs, C).
        let slot = unsafe { zone.pcp_at(cpu.id) };
        let Some(mut pcp) = self.lock_local_pcp(slot) else { return false };
        self.free_unref_page_commit(cpu, zone, slot, &mut pcp, frame, idx, order, pindex, bits);
        true
    }

    /// Put the block on its list and drain if the pageset is over its threshold (kernel
    /// `free_unref_page_commit`). `frame` is the block's head frame and `idx` its index in
    /// `zone`; `bits` are the migratetype bits of the block's pageblock, read by the caller.
    #[allow(clippy::too_many_arguments, unsafe_code)]
    #[inline(always)]
    pub(crate) fn free_unref_page_commit(
        &self,
        cpu: Cpu,
        zone: &Zone<L>,
        slot: &PcpSlot<L>,
        pcp: &mut PerCpuPages,
        frame: &Frame,
        idx: u32,
        order: Order,
        pindex: usize,
        bits: u8,
    ) {
        // Halved whatever the refill sizing: only `AllocFactor` ever raises it from 0
        // (`nr_pcp_alloc`; `debug::validate` checks it), so the test would change nothing.
        pcp.alloc_factor >>= 1;
        slot.stats.add_locked(Counter::Pgfree, self.pcp_fast.pgfree(order));
        slot.stats.add_locked(Counter::PcpFree, 1);
        debug_assert!(core::ptr::eq(frame, &zone.mem_map[idx as usize]));
        if !self.cfg.hygiene {
            // ≤ 6.9 caches the block's type at free time and drains it back as that type.
            let mt = crate::pageblock::type_of_bits(bits);
            // Release: a stale free's reference check must not take it for references
            // (`Frame::claim`).
            frame.aux().store(mt as u32, crate::sync::Ordering::Release);
        }
        frame.set_info(FrameInfo { state: FrameState::Pcp, order, list: pindex as u8 });
        // SAFETY: `pindex` is from `PcpFast::free_pindex` (hot.rs, L); `idx` and the list's
        // members are this zone's frames (F).
        let old_head = unsafe {
            pcp.list_at(pindex).push_head_frame_with(frames_unchecked(&zone.mem_map), idx, frame)
        };
        if E::ENABLED {
            self.touch_pcp_op(cpu.id, zone, idx, old_head);
        }
        pcp.count += 1 << order.0;
        pcp.active = true;
        let free_high = pcp.free_high_decision(&self.pcp_fast, order);
        // A policy that does not count frees has a cap of 0 (`free_count_cap`).
        if pcp.free_count < pcp.free_count_cap {
            pcp.free_count += 1 << order.0;
        }
        let zone_flags = zone.flags.load(crate::sync::Ordering::Relaxed);
        // The common free: no free_high, no zone flag that moves the threshold, count below
        // a high the lazy clamp leaves as it is (`free_limit`). nr_pcp_high would return that
        // high unchanged, and nothing drains. A high the clamp would move goes to the flush,
        // whose nr_pcp_high clamps it and decides as the kernel's does.
        debug_assert_eq!(pcp.free_limit, pcp.free_limit_for(pcp.high));
        if !free_high && zone_flags & self.pcp_fast.free_gate == 0 && pcp.count < pcp.free_limit {
            return;
        }
        self.free_unref_page_flush(cpu.id, zone, slot, pcp, pindex, zone_flags, free_high);
    }

    /// The rest of `free_unref_page_commit` when the free may drain: the threshold
    /// (`nr_pcp_high`), the drain, and clearing ZONE_BELOW_HIGH once the zone is above HIGH.
    /// It and the drains below take the CPU's number, all they use: a `Cpu` handle passed
    /// to an out-of-line call is copied to memory on every free of the inlined hit path.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn free_unref_page_flush(
        &self,
        cpu: CpuId,
        zone: &Zone<L>,
        slot: &PcpSlot<L>,
        pcp: &mut PerCpuPages,
        pindex: usize,
        zone_flags: u32,
        free_high: bool,
    ) {
        let policy = &self.policy;
        let s = self.tunables.pcp_batch_scale_max;
        let (high, reason) = pcp.nr_pcp_high(policy, s, zone_flags, free_high);
        if pcp.count < high {
            return;
        }
        let n = pcp.nr_pcp_free(policy, s, high, free_high);
        let flush = Flush { start: pindex, reason, high, free_high };
        self.free_pcppages_by(cpu, zone, slot, pcp, n, policy.bulk_free_callers, flush);
        if !recheck_high(policy.bulk_free_callers) {
            self.clear_below_high(zone);
        }
    }

    /// Clear ZONE_BELOW_HIGH once a free-path drain has left the zone above its HIGH
    /// watermark (order 0, as a Movable allocation would see it).
    fn clear_below_high(&self, zone: &Zone<L>) {
        if self.policy.zone_below_high
            && zone.test_flag(flags::BELOW_HIGH)
            && zone.watermark_ok(
                Order(0),
                zone.wmark_pages(WMARK_HIGH),
                ZoneType::Movable,
                AllocFlags(0),
            )
        {
            zone.clear_flag(flags::BELOW_HIGH);
        }
    }

    /// Free up to `n` pages as the caller's `form` of `free_pcppages_bulk` does: `Whole` in
    /// one bulk free; the batched forms in chunks of at most `batch`, releasing the zone lock
    /// between chunks (each chunk is its own bulk free; the sink hears a yield before every
    /// chunk but the first, so waiting CPUs go first). When to stop is the form's: `batched`
    /// frees all `n` (or until the pageset is empty), exactly what one bulk free would; the
    /// v4 form stops once `count < high`; the v1–v3 forms also recompute `high` after each
    /// chunk and clear ZONE_BELOW_HIGH there. The drain counts as one drain event.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn free_pcppages_by(
        &self,
        cpu: CpuId,
        zone: &Zone<L>,
        slot: &PcpSlot<L>,
        pcp: &mut PerCpuPages,
        n: i32,
        form: BulkFreeCallers,
        flush: Flush,
    ) {
        if !form.chunks() {
            self.free_pcppages_bulk(cpu, zone, slot, pcp, n, flush.start, flush.reason);
            return;
        }
        let s = self.tunables.pcp_batch_scale_max;
        let batch = pcp.batch.max(1);
        let (mut to_free, mut high, mut first) = (n, flush.high, true);
        loop {
            let go = match form {
                BulkFreeCallers::Batched => pcp.count > 0,
                _ => pcp.count >= high,
            };
            if to_free <= 0 || !go {
                return;
            }
            if !first && pcp.count > 0 && E::ENABLED {
                self.events.zone_lock_yield(cpu, zone.idx);
            }
            let chunk = to_free.min(batch);
            self.free_pcppages_part(cpu, zone, slot, pcp, chunk, flush.start, flush.reason, first);
            first = false;
            to_free -= chunk;
            if recheck_high(form) {
                self.clear_below_high(zone);
                let zone_flags = zone.flags.load(crate::sync::Ordering::Relaxed);
                high = pcp.nr_pcp_high(&self.policy, s, zone_flags, flush.free_high).0;
            }
        }
    }

    /// Return up to `n` pages from the pageset to the buddy lists, oldest blocks first
    /// (kernel `free_pcppages_bulk`). `start` is the list that overflowed (0 for drains).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(crate) fn free_pcppages_bulk(
        &self,
        cpu: CpuId,
        zone: &Zone<L>,
        slot: &PcpSlot<L>,
        pcp: &mut PerCpuPages,
        n: i32,
        start: usize,
        reason: DrainReason,
    ) {
        self.free_pcppages_part(cpu, zone, slot, pcp, n, start, reason, true);
    }

    /// [`Self::free_pcppages_bulk`], counting a drain event only when `new_drain` (a chunk
    /// after the first of a batched drain adds its pages to the same drain).
    #[allow(clippy::too_many_arguments, unsafe_code)]
    #[inline(never)]
    fn free_pcppages_part(
        &self,
        cpu: CpuId,
        zone: &Zone<L>,
        slot: &PcpSlot<L>,
        pcp: &mut PerCpuPages,
        n: i32,
        start: usize,
        reason: DrainReason,
        new_drain: bool,
    ) {
        let mut n = n.min(pcp.count);
        if n <= 0 {
            return;
        }
        let (events, pages) = reason.counters();
        if new_drain {
            slot.stats.add_locked(events, 1);
        }
        slot.stats.add_locked(pages, n as u64);
        let layout = self.policy.pcp_lists;
        let nr_lists = layout.nr_lists();
        let prefetch_budget = pcp.batch;
        if self.policy.bulk_free == BulkFree::TwoPassRoundRobin {
            // Pass 1, without the zone lock: pick blocks round-robin with the batch_free
            // allowance; pass 2 frees them in that order under one zone-lock hold. The picked
            // blocks wait on a local list threaded through their frames, as the kernel's do
            // (no allocation on the free path); each frame keeps its state and order.
            let mut picked = ListHead::new();
            let (mut pindex, mut batch_free) = (0usize, 0i32);
            // List probes and moves of pass 1, reported to the event sink (a model charges them).
            let mut probes = 0u32;
            while n > 0 {
                loop {
                    batch_free += 1;
                    pindex = (pindex + 1) % nr_lists;
                    probes += 1;
                    if !pcp.lists[pindex].is_empty() {
                        break;
                    }
                }
                if batch_free == nr_lists as i32 {
                    // Only one list holds anything: take everything asked from it.
                    batch_free = n;
                }
                let order = layout.pindex_order(pindex).unwrap_or(Order(0));
                while let Some((idx, prev)) = pcp.lists[pindex].pop_tail(&zone.mem_map) {
                    if E::ENABLED {
                        self.touch_pcp_op(cpu, zone, idx, prev);
                    }
                    n -= 1 << order.0;
                    pcp.count -= 1 << order.0;
                    if (picked.len() as i32) < prefetch_budget {
                        self.prefetch_buddy(cpu, zone, zone.pfn_of(idx), order);
                    }
                    picked.push_tail(&zone.mem_map, idx);
                    batch_free -= 1;
                    if n <= 0 || batch_free == 0 || pcp.lists[pindex].is_empty() {
                        break;
                    }
                }
            }
            if E::ENABLED {
                // Each picked block left a pageset list and joined the local one.
                self.events.pcp_list_work(cpu, probes + 2 * picked.len());
            }
            // Pass 2 walks the local list without unlinking (the free overwrites the links),
            // so it adds no list operations of its own under the lock.
            let mut zl = zone.lock(cpu, &self.events, &self.cfg);
            let mut next = picked.head();
            while let Some(idx) = next {
                let frame = &zone.mem_map[idx as usize];
                next = Some(frame.next()).filter(|&i| i != NIL);
                // Read per block: read once before the loop they cost the modern drain's
                // patterns 0.1-0.2 % more instructions (`.ci/icount`), through the
                // registers the function's other loop then lost.
                let (span, frames) = (Span::of(zone), zl.frames);
                free_to_buddy(&mut zl, span, frames, idx, frame.info().order, self.cfg.hygiene);
            }
            return;
        }
        let mut zl = zone.lock(cpu, &self.events, &self.cfg);
        // v2 (5.18) probes the start list first; v1 probes the one after it.
        let first = match self.policy.bulk_free {
            BulkFree::SinglePassAfterStart => start + 1,
            _ => start,
        } % nr_lists;
        // The loop unswitched on the policy's hygiene and prefetch, fixed for the whole
        // drain: the 6.10 rule without a prefetch (`modern` and the presets after it) runs a
        // copy with neither test (no block is prefetched, as `prefetch_buddy` would decide).
        if self.cfg.hygiene && self.policy.bulk_free_prefetch == BuddyPrefetch::Off {
            self.drain_lists(&mut zl, pcp, n, first, 0, true);
        } else if self.cfg.hygiene {
            self.drain_lists(&mut zl, pcp, n, first, prefetch_budget, true);
        } else {
            self.drain_lists(&mut zl, pcp, n, first, prefetch_budget, false);
        }
    }

    /// The single-pass drain's loop: from list `pindex` on, round the lists, take blocks
    /// from each list's tail until `n` pages are freed, prefetching the buddies of the first
    /// `prefetch_budget`. `hygiene` is the policy's 6.10 rule (see [`free_to_buddy`]).
    #[allow(unsafe_code)]
    #[inline(always)]
    fn drain_lists(
        &self,
        zl: &mut crate::zone::ZoneLocked<'_, E, L>,
        pcp: &mut PerCpuPages,
        mut n: i32,
        mut pindex: usize,
        prefetch_budget: i32,
        hygiene: bool,
    ) {
        let (zone, cpu) = (zl.zone, zl.cpu);
        let span = Span::of(zone);
        // Read once: the pops and the merges share it (`free_one_page_in`).
        let frames = zl.frames;
        let layout = self.policy.pcp_lists;
        let nr_lists = layout.nr_lists();
        // The blocks freed so far, on every list: the first `prefetch_budget` of them are
        // prefetched.
        let mut freed = 0i32;
        while n > 0 {
            while pcp.lists[pindex].is_empty() {
                pindex = (pindex + 1) % nr_lists;
                zl.add_list_ops(1);
            }
            let order = layout.pindex_order(pindex).unwrap_or(Order(0));
            // A list gives the blocks that cover the pages still to free, or all it holds if
            // fewer: counted once, as nothing below changes the list but its own pops (the
            // merges touch the buddy lists), so the loop needs neither `n` nor an empty test.
            let covering = (n + (1 << order.0) - 1) >> order.0;
            let take = covering.min(pcp.lists[pindex].len() as i32);
            // SAFETY: a pageset list holds its zone's frames (hot.rs, F).
            let at = unsafe { frames_unchecked(frames) };
            // One counter for both: the loop's bound is where `freed` ends for this list.
            let end = freed + take;
            while freed < end {
                // Not empty: it held `take` blocks or more.
                let (idx, prev) = pcp.lists[pindex].pop_tail_nonempty_with(&at);
                zl.add_list_ops(1);
                if E::ENABLED {
                    self.touch_pcp_op(cpu, zone, idx, prev);
                }
                if freed < prefetch_budget {
                    self.prefetch_buddy(cpu, zone, zone.pfn_of(idx), order);
                }
                freed += 1;
                free_to_buddy(zl, span, frames, idx, order, hygiene);
            }
            // Nothing in the loop reads the count or `n`: one store per list.
            let pages = take << order.0;
            n -= pages;
            pcp.count -= pages;
            pindex = (pindex + 1) % nr_lists;
        }
    }

    /// Touch the buddy frame a bulk free is about to merge with, as the kernel's prefetch did
    /// (a cache effect only; which frame depends on the policy), and tell the sink.
    #[inline]
    fn prefetch_buddy(&self, cpu: CpuId, zone: &Zone<L>, pfn: Pfn, order: Order) {
        let buddy = match self.policy.bulk_free_prefetch {
            BuddyPrefetch::Off => return,
            BuddyPrefetch::Order0Buddy => pfn.buddy(Order(0)),
            BuddyPrefetch::OrderBuddy => pfn.buddy(order),
        };
        if zone.spans(buddy) {
            core::hint::black_box(zone.frame(buddy).info());
            if E::ENABLED {
                self.events.prefetch(cpu, MetaLine::Frame(buddy));
            }
        }
    }
}

/// Free one block taken off a pageset into the buddy lists, and trace it. Its type is its
/// pageblock's, looked up now (6.10+), or (≤ 6.9) the type cached when it joined the pageset,
/// unless its block has since been isolated. Always inlined into the drain loops, which call
/// it once per block.
#[inline(always)]
#[allow(unsafe_code)]
fn free_to_buddy<E: EventSink, L: RawLock>(
    zl: &mut crate::zone::ZoneLocked<'_, E, L>,
    span: Span,
    frames: &[Frame],
    idx: u32,
    order: Order,
    hygiene: bool,
) {
    let (zone, cpu) = (zl.zone, zl.cpu);
    let pfn = Pfn(span.start + u64::from(idx));
    // SAFETY: `idx` was a pageset list's member, a frame of the zone heading a block inside
    // its span (hot.rs, F and P).
    let bits = unsafe { zone.pageblock_bits(pfn) };
    let block = crate::pageblock::type_of_bits(bits);
    let mt = if hygiene || block == MigrateType::Isolate {
        block
    } else {
        // SAFETY: as above (hot.rs, F).
        let cached = unsafe { zone.frame_at(idx) }.aux().load(crate::sync::Ordering::Relaxed);
        MigrateType::from_u8(cached as u8).unwrap_or(block)
    };
    // SAFETY: as above.
    unsafe { zl.free_one_page_in(span, frames, idx, order, mt, Fpi::None) };
    if E::ENABLED {
        zl.events.record(&TraceEvent::PagePcpuDrain { cpu, pfn, order, migratetype: mt });
    }
}

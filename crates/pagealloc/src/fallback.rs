//! Anti-fragmentation fallback: when a migratetype's own lists are empty, take a block from
//! another type's list — preferably a whole pageblock, claiming it — and the highatomic reserve
//! (docs/kernel-reference.md §3.9, §3.10; 6.10+ steal semantics).

use crate::events::{EventSink, TraceEvent};
use crate::gfp::AllocFlags;
use crate::migratetype::MigrateType;
use crate::stats::Counter;
use crate::sync::RawLock;
use crate::types::{NrPages, Order, Pfn, MAX_PAGE_ORDER, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER};
use crate::zone::{flags, ZoneLocked, WMARK_HIGH};

/// May a `start_mt` request that found a free block of order `o` on another type's list
/// claim that block's pageblock (kernel `can_steal_fallback`)? Large blocks always; small ones
/// only for unmovable and reclaimable requests, or with grouping by mobility off.
pub(crate) fn can_steal(o: Order, start_mt: MigrateType, grouping_disabled: bool) -> bool {
    o.0 >= PAGEBLOCK_ORDER / 2
        || matches!(start_mt, MigrateType::Reclaimable | MigrateType::Unmovable)
        || grouping_disabled
}

impl<E: EventSink, L: RawLock> ZoneLocked<'_, E, L> {
    /// May a `start_mt` request found a free block of order `o` on another type's list claim
    /// that block's pageblock? (kernel `can_steal_fallback`; evaluated with the order of the
    /// block found, not the order requested.)
    fn can_steal(&self, o: Order, start_mt: MigrateType) -> bool {
        can_steal(o, start_mt, self.cfg.grouping_disabled)
    }

    /// The first type in `start_mt`'s fallback row with a free block of order `o`, and whether
    /// it may be stolen (kernel `find_suitable_fallback`).
    fn find_suitable_fallback(
        &self,
        o: Order,
        start_mt: MigrateType,
    ) -> Option<(MigrateType, bool)> {
        start_mt
            .fallbacks()
            .iter()
            .find(|&&mt| self.zone.free_orders(mt) & (1 << o.0) != 0)
            .map(|&mt| (mt, self.can_steal(o, start_mt)))
    }

    /// The orders ≥ `min` at which some type of `start_mt`'s fallback row has a free block,
    /// as a bitmap (bit `o`): the union of the rows' words of the zone's bitmap of non-empty
    /// lists, so the search below scans bits instead of probing every (order, type) list.
    fn fallback_orders(&self, start_mt: MigrateType, min: u8) -> u32 {
        let any = start_mt.fallbacks().iter().fold(0, |m, &mt| m | self.zone.free_orders(mt));
        any & u32::MAX.checked_shl(u32::from(min)).unwrap_or(0)
    }

    /// Take an `order` block for `start_mt` from another type (kernel `__rmqueue_fallback`).
    pub(crate) fn rmqueue_fallback(
        &mut self,
        order: Order,
        start_mt: MigrateType,
        flags: AllocFlags,
    ) -> Option<Pfn> {
        // With ALLOC_NOFRAGMENT only whole pageblocks may change hands on this pass.
        // Never below the request: with the v5 "all orders" floor an order-10 request would
        // otherwise accept an order-9 block, which ≤ 6.9 only moved (harmless) but a 6.10-style
        // steal would hand out as if it were order 10.
        let min_order = if flags.has(AllocFlags::NOFRAGMENT) && self.cfg.nofragment.floors(order) {
            PAGEBLOCK_ORDER.max(order.0)
        } else {
            order.0
        };
        // Largest first: the biggest free block is likely in the emptiest pageblock.
        let orders = self.fallback_orders(start_mt, min_order);
        if orders == 0 {
            return None;
        }
        let mut o = Order((u32::BITS - 1 - orders.leading_zeros()) as u8);
        let (mut fb, mut steal) = self.find_suitable_fallback(o, start_mt)?;
        if !steal && start_mt == MigrateType::Movable && o > order {
            // A movable request that cannot claim the block scatters least by taking the
            // smallest block that fits (there is one: `o` itself).
            let smallest = self.fallback_orders(start_mt, order.0);
            o = Order(smallest.trailing_zeros() as u8);
            (fb, steal) = self.find_suitable_fallback(o, start_mt)?;
        }
        let block = self.first_free(o, fb)?;
        if !self.cfg.hygiene {
            // ≤ 6.9: move pages onto start_mt's lists, then allocate from them.
            self.steal_suitable_fallback_legacy(block, o, fb, start_mt, flags, steal);
            self.trace_extfrag(block, order, o, start_mt, fb);
            return self.rmqueue_smallest(order, start_mt);
        }
        let pfn = self.steal_suitable_fallback(block, o, order, start_mt, flags, steal);
        self.trace_extfrag(pfn, order, o, start_mt, fb);
        Some(pfn)
    }

    /// Count and trace one fallback (`mm_page_alloc_extfrag`).
    fn trace_extfrag(
        &self,
        pfn: Pfn,
        order: Order,
        o: Order,
        start_mt: MigrateType,
        fb: MigrateType,
    ) {
        let owner = self.zone.pageblocks.get(pfn);
        let fragmenting = o.0 < PAGEBLOCK_ORDER;
        self.count(Counter::extfrag(start_mt, fragmenting), 1);
        if E::ENABLED {
            self.events.record(&TraceEvent::PageAllocExtfrag {
                cpu: self.cpu,
                pfn,
                alloc_order: order,
                fallback_order: o,
                alloc_migratetype: start_mt,
                fallback_migratetype: fb,
                change_ownership: owner == start_mt,
            });
        }
    }

    /// The ≤ 6.9 steal (docs/kernel-reference.md §3.9 "6.7–6.9 differences"): free pages are moved
    /// to the requester's lists *before* deciding whether to relabel the block, and a block that is
    /// not claimed is moved whole to the requester's list while keeping its label.
    fn steal_suitable_fallback_legacy(
        &mut self,
        block: Pfn,
        o: Order,
        list_mt: MigrateType,
        start_mt: MigrateType,
        flags: AllocFlags,
        whole_block: bool,
    ) {
        let zone = self.zone;
        let block_type = zone.pageblocks.get(block);
        let claimable = block_type != MigrateType::HighAtomic && o.0 < PAGEBLOCK_ORDER;
        if block_type != MigrateType::HighAtomic && o.0 >= PAGEBLOCK_ORDER {
            let mut p = block;
            while p < block.add(o.nr_pages()) {
                zone.pageblocks.set(p, start_mt);
                p = p.add(NrPages(PAGEBLOCK_NR_PAGES));
            }
            self.count(Counter::PageblockClaim, 1 << (o.0 - PAGEBLOCK_ORDER));
        }
        if claimable {
            if self.boost_watermark() && flags.has(AllocFlags::KSWAPD) {
                zone.set_flag(flags::BOOSTED_WATERMARK);
            }
            if whole_block {
                if let Some((start, _, movable)) = self.pageblock_census(block) {
                    let free = self.move_freepages(start, list_mt, start_mt);
                    let alike = alike_pages(start_mt, block_type, free, movable);
                    if free + alike >= PAGEBLOCK_NR_PAGES / 2 || self.cfg.grouping_disabled {
                        zone.pageblocks.set(start, start_mt);
                        self.count(Counter::PageblockClaim, 1);
                    }
                    return;
                }
            }
        }
        self.move_to_free_list(block, o, list_mt, start_mt);
    }

    /// Take the free block `block` (order `o`, on its pageblock type's list) for an `order`
    /// request of `start_mt`: claim the whole pageblock when enough of it is free or alike,
    /// otherwise split off just what is needed (kernel `steal_suitable_fallback`, 6.10+).
    fn steal_suitable_fallback(
        &mut self,
        block: Pfn,
        o: Order,
        order: Order,
        start_mt: MigrateType,
        flags: AllocFlags,
        whole_block: bool,
    ) -> Pfn {
        let zone = self.zone;
        let block_type = zone.pageblocks.get(block);
        if block_type != MigrateType::HighAtomic {
            if o.0 >= PAGEBLOCK_ORDER {
                self.del_from_free_list(block, o, block_type);
                self.account_freepages(block_type, -(1 << o.0));
                let mut p = block;
                let end = block.add(o.nr_pages());
                while p < end {
                    zone.pageblocks.set(p, start_mt);
                    p = p.add(NrPages(PAGEBLOCK_NR_PAGES));
                }
                self.count(Counter::PageblockClaim, 1 << (o.0 - PAGEBLOCK_ORDER));
                let added = self.expand(block, order, o, start_mt);
                self.account_freepages(start_mt, added);
                return block;
            }
            if self.boost_watermark() && flags.has(AllocFlags::KSWAPD) {
                zone.set_flag(flags::BOOSTED_WATERMARK);
            }
            if whole_block {
                if let Some((start, free, movable)) = self.pageblock_census(block) {
                    let alike = alike_pages(start_mt, block_type, free, movable);
                    if free + alike >= PAGEBLOCK_NR_PAGES / 2 || self.cfg.grouping_disabled {
                        self.move_freepages_block(start, block_type, start_mt);
                        self.count(Counter::PageblockClaim, 1);
                        if let Some(p) = self.rmqueue_smallest(order, start_mt) {
                            return p;
                        }
                    }
                }
            }
        }
        // Single-page steal: the remainders stay on the block's own lists, label unchanged.
        self.del_from_free_list(block, o, block_type);
        let added = self.expand(block, order, o, block_type);
        self.account_freepages(block_type, added - (1 << o.0));
        block
    }

    /// Raise the zone's watermark boost after a fragmenting fallback so background reclaim
    /// frees a little more (kernel `boost_watermark`). Returns whether it boosted.
    pub(crate) fn boost_watermark(&self) -> bool {
        let zone = self.zone;
        let cur = zone.watermark_boost.load(crate::sync::Ordering::Relaxed);
        let high = zone.watermark[WMARK_HIGH].load(crate::sync::Ordering::Relaxed);
        match crate::sizing::watermark_boost_step(
            cur,
            high,
            zone.managed_pages(),
            self.cfg.boost_factor,
        ) {
            Some(b) => {
                zone.watermark_boost.store(b, crate::sync::Ordering::Relaxed);
                zone.update_fast_floor();
                self.count(Counter::WatermarkBoost, 1);
                true
            }
            None => false,
        }
    }

    /// After a successful ALLOC_HIGHATOMIC allocation at `pfn` (order `order`), move its
    /// pageblock into the highatomic reserve, up to about 1% of the zone (kernel
    /// `reserve_highatomic_pageblock`, 6.13 limit rule).
    pub(crate) fn reserve_highatomic_pageblock(&mut self, pfn: Pfn, order: Order) {
        let zone = self.zone;
        let per_cent = zone.managed_pages().0 / 100;
        if per_cent < PAGEBLOCK_NR_PAGES {
            return;
        }
        let limit = per_cent.div_ceil(PAGEBLOCK_NR_PAGES) * PAGEBLOCK_NR_PAGES;
        if self.free.nr_reserved_highatomic >= limit {
            return;
        }
        let mt = zone.pageblocks.get(pfn);
        if !mt.is_mergeable() {
            return;
        }
        if order.0 < PAGEBLOCK_ORDER {
            let Some((start, _, _)) = self.pageblock_census(pfn) else { return };
            self.move_freepages_block(start, mt, MigrateType::HighAtomic);
            self.free.nr_reserved_highatomic += PAGEBLOCK_NR_PAGES;
        } else {
            let mut p = pfn;
            let end = pfn.add(order.nr_pages());
            while p < end {
                zone.pageblocks.set(p, MigrateType::HighAtomic);
                p = p.add(NrPages(PAGEBLOCK_NR_PAGES));
            }
            self.free.nr_reserved_highatomic += order.nr_pages().0;
        }
        self.count(Counter::HighatomicReserve, 1);
    }

    /// Give one highatomic pageblock back to `to` (kernel `unreserve_highatomic_pageblock`
    /// for one zone). Unless `force`, a zone keeps its last reserved block. Returns whether a
    /// block was converted.
    pub(crate) fn unreserve_highatomic_pageblock(&mut self, to: MigrateType, force: bool) -> bool {
        let zone = self.zone;
        if !force && self.free.nr_reserved_highatomic <= PAGEBLOCK_NR_PAGES {
            return false;
        }
        for o in 0..=MAX_PAGE_ORDER {
            let Some(pfn) = self.first_free(Order(o), MigrateType::HighAtomic) else { continue };
            let mt = zone.pageblocks.get(pfn);
            if mt == MigrateType::HighAtomic {
                let size =
                    (1u64 << o).max(PAGEBLOCK_NR_PAGES).min(self.free.nr_reserved_highatomic);
                self.free.nr_reserved_highatomic -= size;
            }
            if o < PAGEBLOCK_ORDER {
                match self.pageblock_census(pfn) {
                    Some((start, _, _)) => {
                        self.move_freepages_block(start, MigrateType::HighAtomic, to);
                    }
                    None => continue,
                }
            } else {
                self.move_to_free_list(pfn, Order(o), MigrateType::HighAtomic, to);
                let mut p = pfn;
                let end = pfn.add(Order(o).nr_pages());
                while p < end {
                    zone.pageblocks.set(p, to);
                    p = p.add(NrPages(PAGEBLOCK_NR_PAGES));
                }
            }
            self.count(Counter::HighatomicUnreserve, 1);
            return true;
        }
        false
    }
}

/// Pages of a pageblock that are "like" the requester's type (docs/kernel-reference.md §3.9): its
/// movable allocations for a movable request; for another request in a movable block, what is
/// neither free nor movable; otherwise none. Claim when free + alike ≥ half a pageblock.
fn alike_pages(start_mt: MigrateType, block_type: MigrateType, free: u64, movable: u64) -> u64 {
    if start_mt == MigrateType::Movable {
        movable
    } else if block_type == MigrateType::Movable {
        PAGEBLOCK_NR_PAGES.saturating_sub(free + movable)
    } else {
        0
    }
}

//! Watermark checks (docs/kernel-reference.md §3.3): may a zone hand out a block of some order
//! without dipping below the watermark the request is allowed to reach?

use crate::sync::Ordering::Relaxed;
use crate::sync::RawLock;

use crate::gfp::AllocFlags;
use crate::migratetype::MigrateType;
use crate::types::{Order, ZoneType};
use crate::zone::{Zone, WMARK_MIN};

impl<L: RawLock> Zone<L> {
    /// Free pages a request cannot use: the part of the block beyond one page, the highatomic
    /// reserve (unless the request may use reserves) and CMA (unless ALLOC_CMA).
    #[inline]
    fn unusable_free(&self, order: Order, flags: AllocFlags) -> i64 {
        let mut unusable = (1i64 << order.0) - 1;
        if !flags.has(AllocFlags::RESERVES) {
            unusable += self.nr_free_highatomic.load(Relaxed) as i64;
        }
        if !flags.has(AllocFlags::CMA) {
            unusable += self.nr_free_cma.load(Relaxed) as i64;
        }
        unusable
    }

    /// The full check with an explicit free-page count (kernel `__zone_watermark_ok`). Out of
    /// line, so the order-0 shortcut of `watermark_fast` inlines alone. Any arguments give an
    /// answer: an order above `MAX_PAGE_ORDER` never passes (no such block exists), and marks
    /// and counts beyond `i64` saturate instead of wrapping.
    #[inline(never)]
    pub fn watermark_ok_with_free(
        &self,
        order: Order,
        mark: u64,
        highest: ZoneType,
        flags: AllocFlags,
        free: i64,
    ) -> bool {
        if !order.is_valid() {
            return false;
        }
        let free = free.saturating_sub(self.unusable_free(order, flags));
        let mut min = i64::try_from(mark).unwrap_or(i64::MAX);
        if flags.has(AllocFlags::RESERVES) {
            if flags.has(AllocFlags::MIN_RESERVE) {
                min -= min / 2;
                if flags.has(AllocFlags::NON_BLOCK) {
                    min -= min / 4;
                }
            }
            if flags.has(AllocFlags::OOM) {
                min -= min / 2;
            }
        }
        let reserve = i64::try_from(self.lowmem_reserve(highest)).unwrap_or(i64::MAX);
        if free <= min.saturating_add(reserve) {
            return false;
        }
        if order.0 == 0 {
            return true;
        }
        // Enough pages in total; is there a block of at least `order` on a list it may use?
        // The orders with a block on such a list, from the zone's bitmap of non-empty lists
        // (racy, as the kernel's `free_area_empty` test): the PCP types, CMA with ALLOC_CMA,
        // HIGHATOMIC with ALLOC_HIGHATOMIC or ALLOC_OOM.
        let mut usable = self.pcp_type_orders();
        if flags.has(AllocFlags::CMA) {
            usable |= self.free_orders(MigrateType::Cma);
        }
        if flags.has(AllocFlags(AllocFlags::HIGHATOMIC.0 | AllocFlags::OOM.0)) {
            usable |= self.free_orders(MigrateType::HighAtomic);
        }
        usable.checked_shr(u32::from(order.0)).unwrap_or(0) != 0
    }

    /// The full check against NR_FREE_PAGES (kernel `zone_watermark_ok`).
    pub fn watermark_ok(
        &self,
        order: Order,
        mark: u64,
        highest: ZoneType,
        flags: AllocFlags,
    ) -> bool {
        self.watermark_ok_with_free(
            order,
            mark,
            highest,
            flags,
            self.nr_free_pages.load(Relaxed) as i64,
        )
    }

    /// The allocation fast path's check (kernel `zone_watermark_fast`): a cheap order-0 test
    /// first, then the full one; a __GFP_HIGH order-0 request checking MIN may ignore a boost.
    /// Answers any arguments, as [`watermark_ok_with_free`](Self::watermark_ok_with_free).
    #[inline]
    pub fn watermark_fast(
        &self,
        order: Order,
        mark: u64,
        highest: ZoneType,
        flags: AllocFlags,
    ) -> bool {
        let free = self.nr_free_pages.load(Relaxed) as i64;
        if order.0 == 0 {
            // free >= 0 (a page count) and so is fast_free.
            let fast_free = (free - free.min(self.unusable_free(order, flags))) as u64;
            if fast_free > mark.saturating_add(self.lowmem_reserve(highest)) {
                return true;
            }
        }
        self.watermark_ok_with_free(order, mark, highest, flags, free)
            || self.passes_unboosted(order, highest, flags, free)
    }

    /// The exemption of `watermark_fast`: an order-0 request that may use the min reserve and
    /// checks MIN passes against the unboosted MIN. Out of line: the fast path rarely gets here.
    #[inline(never)]
    fn passes_unboosted(
        &self,
        order: Order,
        highest: ZoneType,
        flags: AllocFlags,
        free: i64,
    ) -> bool {
        let boost = self.watermark_boost.load(Relaxed);
        if order.0 == 0
            && flags.has(AllocFlags::MIN_RESERVE)
            && boost > 0
            && flags.wmark() == WMARK_MIN
        {
            let unboosted = self.watermark[WMARK_MIN].load(Relaxed);
            return self.watermark_ok_with_free(order, unboosted, highest, flags, free);
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use crate::gfp::AllocFlags;
    use crate::migratetype::{MigrateType, MIGRATE_TYPES};
    use crate::sync::Ordering::Relaxed;
    use crate::types::{NodeId, Order, Pfn, ZoneType};
    use crate::zone::WMARK_HIGH;
    use crate::{MemoryMap, PageAllocator, Policy, Tunables};

    /// The allocation fast path's sufficient test never passes a request the full check
    /// would refuse: for every zone, free count around the floor, boost, CMA and HIGHATOMIC
    /// free pages, order, bitmap of non-empty lists, highest zone and request flags.
    #[test]
    fn the_fast_floor_is_sufficient_for_watermark_fast() {
        // Under miri, which checks every access, a smaller machine and fewer probes.
        let mib = if cfg!(miri) { 32 } else { 256 };
        let mut map = MemoryMap::new();
        map.add_range(NodeId(0), 0..(mib << 20)).unwrap().set_cpus(NodeId(0), 2).unwrap();
        // 8 MiB of CMA (16-24 MiB, in DMA32).
        map.add_cma_range(Pfn(4096)..Pfn(6144)).unwrap();
        let pa = PageAllocator::new(map, Tunables::default(), Policy::modern()).unwrap();
        let flag_sets = [
            AllocFlags::default(),
            AllocFlags::CMA,
            AllocFlags::RESERVES,
            AllocFlags(AllocFlags::CMA.0 | AllocFlags::RESERVES.0),
            AllocFlags(AllocFlags::HIGHATOMIC.0 | AllocFlags::RESERVES.0),
        ];
        // Bitmaps of non-empty lists (Unmovable, Movable, Reclaimable, HighAtomic, Cma,
        // Isolate): blocks on PCP types' lists at a few orders, none, and blocks only where
        // some flags may look (HIGHATOMIC, CMA) or none may (ISOLATE).
        let bitmaps: [[u32; MIGRATE_TYPES]; 5] = [
            [0, 1 << 10, 0, 0, 0, 0],
            [1 << 3, 1 << 1, 1 << 5, 0, 0, 0],
            [0; MIGRATE_TYPES],
            [1, 0, 0, 1 << 9, 1 << 10, 0],
            [0, 1 << 2, 0, 0, 0, 0x7ff],
        ];
        let (step, orders) = if cfg!(miri) { (601, 0..=3) } else { (7, 0..=11) };
        let mut checked = [0u32; 12];
        for z in pa.zones() {
            let free = z.nr_free_pages.load(Relaxed);
            let words = z.free_orders.each_ref().map(|w| w.load(Relaxed));
            for (boost, cma, hatomic) in [(0, 0, 0), (300, 0, 0), (0, 700, 0), (100, 50, 512)] {
                z.watermark_boost.store(boost, Relaxed);
                z.nr_free_cma.store(cma, Relaxed);
                z.nr_free_highatomic.store(hatomic, Relaxed);
                z.update_fast_floor();
                let floor = z.fast_floor.load(Relaxed);
                for bitmap in bitmaps {
                    for (w, b) in z.free_orders.iter().zip(bitmap) {
                        w.store(b, Relaxed);
                    }
                    // Counts near the floor, every 7th (a sample under miri, which checks
                    // each access).
                    for probe in
                        (floor.saturating_sub(3000)..floor.saturating_add(3000)).step_by(step)
                    {
                        z.nr_free_pages.store(probe, Relaxed);
                        for order in orders.clone().map(Order) {
                            for highest in ZoneType::ALL {
                                if !z.clears_high_fast(order, highest) {
                                    continue;
                                }
                                for flags in flag_sets {
                                    let mark = z.wmark_pages(WMARK_HIGH);
                                    assert!(
                                        z.watermark_fast(order, mark, highest, flags),
                                        "zone {:?} free {probe} boost {boost} cma {cma} \
                                         highatomic {hatomic} bitmap {bitmap:?} order {order:?} \
                                         highest {highest:?} flags {flags:?}",
                                        z.ztype
                                    );
                                    checked[order.index()] += 1;
                                }
                            }
                        }
                    }
                }
                // It is not vacuous: just above the floor passes, at the floor does not; above
                // order 0 the block's other pages count, and so does the bitmap.
                z.free_orders[MigrateType::Movable.index()].store(1 << 3, Relaxed);
                let reserve = z.lowmem_reserve(z.ztype);
                z.nr_free_pages.store(floor + 1 + reserve, Relaxed);
                assert!(z.clears_high_fast(Order(0), z.ztype));
                assert!(!z.clears_high_fast(Order(3), z.ztype));
                z.nr_free_pages.store(floor + 8 + reserve, Relaxed);
                assert!(z.clears_high_fast(Order(3), z.ztype));
                assert!(!z.clears_high_fast(Order(4), z.ztype), "no block of order 4");
                z.nr_free_pages.store(floor, Relaxed);
                assert!(!z.clears_high_fast(Order(0), z.ztype));
            }
            z.nr_free_pages.store(free, Relaxed);
            for (w, b) in z.free_orders.iter().zip(words) {
                w.store(b, Relaxed);
            }
        }
        // Every valid order was checked where the test passes; beyond MAX_PAGE_ORDER it never
        // does (no such block exists).
        let least = if cfg!(miri) { 5 } else { 1_000 };
        assert!(
            checked[..orders.clone().count().min(11)].iter().all(|&c| c > least),
            "{checked:?}"
        );
        assert_eq!(checked[11], 0);
    }

    /// The floor follows the boost that a fallback raises and kswapd resets.
    #[test]
    fn the_fast_floor_follows_the_boost() {
        let pa = PageAllocator::new(
            MemoryMap::single_node(1, 64 << 20).unwrap(),
            Tunables::default(),
            Policy::modern(),
        )
        .unwrap();
        let z = pa.zones().last().unwrap();
        let base = z.fast_floor.load(Relaxed);
        assert_eq!(base, z.wmark_pages(WMARK_HIGH));
        {
            let zl = z.lock(crate::CpuId(0), &pa.events, &pa.cfg);
            assert!(zl.boost_watermark());
        }
        assert!(z.fast_floor.load(Relaxed) > base);
        assert_eq!(z.fast_floor.load(Relaxed), z.wmark_pages(WMARK_HIGH));
        pa.reset_watermark_boost(z.idx);
        assert_eq!(z.fast_floor.load(Relaxed), base);
    }
}

//! Watermark checks (kernel-spec §3.3): may a zone hand out a block of some order without
//! dipping below the watermark the request is allowed to reach?

use crate::sync::Ordering::Relaxed;

use crate::gfp::AllocFlags;
use crate::migratetype::MigrateType;
use crate::types::{Order, ZoneType, MAX_PAGE_ORDER};
use crate::zone::{Zone, WMARK_MIN};

impl Zone {
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

    /// The full check with an explicit free-page count (kernel `__zone_watermark_ok`).
    pub fn watermark_ok_with_free(
        &self,
        order: Order,
        mark: u64,
        highest: ZoneType,
        flags: AllocFlags,
        free: i64,
    ) -> bool {
        let free = free - self.unusable_free(order, flags);
        let mut min = mark as i64;
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
        if free <= min + self.lowmem_reserve(highest) as i64 {
            return false;
        }
        if order.0 == 0 {
            return true;
        }
        // Enough pages in total; is there a block of at least `order` on a list it may use?
        for o in order.0..=MAX_PAGE_ORDER {
            let o = Order(o);
            if self.nr_free(o) == 0 {
                continue;
            }
            if MigrateType::PCPTYPES.iter().any(|&mt| self.has_free(o, mt)) {
                return true;
            }
            if flags.has(AllocFlags::CMA) && self.has_free(o, MigrateType::Cma) {
                return true;
            }
            if flags.has(AllocFlags(AllocFlags::HIGHATOMIC.0 | AllocFlags::OOM.0))
                && self.has_free(o, MigrateType::HighAtomic)
            {
                return true;
            }
        }
        false
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
    pub fn watermark_fast(
        &self,
        order: Order,
        mark: u64,
        highest: ZoneType,
        flags: AllocFlags,
    ) -> bool {
        let free = self.nr_free_pages.load(Relaxed) as i64;
        if order.0 == 0 {
            let fast_free = free - free.min(self.unusable_free(order, flags));
            if fast_free > (mark + self.lowmem_reserve(highest)) as i64 {
                return true;
            }
        }
        if self.watermark_ok_with_free(order, mark, highest, flags, free) {
            return true;
        }
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

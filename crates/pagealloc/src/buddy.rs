//! The buddy allocator proper: carve blocks (`rmqueue_smallest`, `expand`) and merge them back
//! (`free_one_page`), under the zone lock (docs/kernel-reference.md §3.8, §4.6, §4.7; 6.10+
//! semantics, where a free block's list type always equals its pageblock's type).

use crate::events::{EventSink, TraceEvent};
use crate::gfp::AllocFlags;
use crate::hot::frames_unchecked;
use crate::mem_map::{Frame, FrameState};
use crate::migratetype::MigrateType;
use crate::sync::RawLock;
use crate::types::{Order, Pfn, MAX_PAGE_ORDER, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER};
use crate::zone::ZoneLocked;

/// Insert a merged block at the list tail rather than the head (kernel FPI_TO_TAIL): used when
/// memory is first handed over, so early allocations do not immediately split fresh blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fpi {
    /// Head or tail as `buddy_merge_likely` decides.
    None,
    /// Always at the tail.
    ToTail,
}

/// A zone's span as the merge loop tests it: its first pfn and its length in pages, in
/// locals. The zone holds atomics, so the compiler would reload its bounds after every store
/// the loop makes; `spans` becomes one wrapping subtraction and one compare.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span {
    pub(crate) start: u64,
    pub(crate) len: u64,
}

impl Span {
    /// `zone`'s span, read now (it never changes after the build).
    #[inline(always)]
    pub(crate) fn of<L: RawLock>(zone: &crate::zone::Zone<L>) -> Span {
        Span { start: zone.start_pfn.0, len: zone.end_pfn.0 - zone.start_pfn.0 }
    }
}

impl<E: EventSink, L: RawLock> ZoneLocked<'_, E, L> {
    /// Split the free block at `pfn` (on no list) of order `high` down to `low`, putting each
    /// upper half on the head of the `mt` list of its order (kernel `expand`). `pfn` is then
    /// the head of an order-`low` block that is on no list. Returns the pages put on the
    /// lists, which the caller accounts once with the block it took, as the kernel's
    /// `page_del_and_expand` does since 6.10 (the free counters end the same; nothing reads
    /// them between the levels). Always inlined into `rmqueue_smallest`: most of its calls
    /// split nothing (the request's own list had a block), and a call's entry and exit cost
    /// more than such a split's work (docs/performance.md, fast path v2 step 7).
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) fn expand(&mut self, pfn: Pfn, low: Order, high: Order, mt: MigrateType) -> i64 {
        debug_assert!(self.zone.spans(pfn));
        self.expand_at(self.zone.index_of(pfn), low, high, mt)
    }

    /// [`expand`](Self::expand) of the block whose head has frame index `idx`, as
    /// `rmqueue_smallest` has it from the list it popped (no round trip through the pfn).
    #[inline(always)]
    #[allow(unsafe_code)]
    fn expand_at(&mut self, idx: u32, low: Order, high: Order, mt: MigrateType) -> i64 {
        let zone = self.zone;
        debug_assert!(u64::from(idx) + high.nr_pages().0 <= zone.end_pfn.0 - zone.start_pfn.0);
        // SAFETY: `idx` heads an order-`high` block taken off this zone's free lists, and
        // every frame of such a block is the zone's (hot.rs, F): so is each upper half.
        let at = unsafe { frames_unchecked(self.frames) };
        let mut o = high.0;
        while o > low.0 {
            o -= 1;
            self.add_at(&at, idx + (1 << o), Order(o), mt, false);
        }
        (1i64 << high.0) - (1i64 << low.0)
    }

    /// The smallest order ≥ `order` whose `mt` list has a block: one bit scan of the zone's
    /// bitmap of non-empty lists, exact under the lock. `order` is valid (every caller's is checked at the public calls), so the shift needs
    /// no guard for 32 bits or more.
    #[inline]
    fn smallest_free_order(&self, order: Order, mt: MigrateType) -> Option<Order> {
        debug_assert!(order.is_valid());
        let above = self.zone.free_orders(mt) >> (order.0 & 31);
        (above != 0).then(|| Order(order.0 + above.trailing_zeros() as u8))
    }

    /// Take the head block of the smallest order ≥ `order` on `mt`'s lists and split it
    /// (kernel `__rmqueue_smallest`). Always inlined into `rmqueue_at`, whose common case it is:
    /// a refill calls it once per block.
    #[inline(always)]
    pub(crate) fn rmqueue_smallest(&mut self, order: Order, mt: MigrateType) -> Option<Pfn> {
        self.rmqueue_smallest_at(order, mt).map(|idx| self.zone.pfn_of(idx))
    }

    /// [`rmqueue_smallest`](Self::rmqueue_smallest), returning the block's frame index, as a
    /// refill wants it for its pageset list (no round trip through the pfn).
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) fn rmqueue_smallest_at(&mut self, order: Order, mt: MigrateType) -> Option<u32> {
        let o = self.smallest_free_order(order, mt)?;
        // SAFETY: bit `o` of the bitmap was just read set under the lock (hot.rs, B).
        let idx = unsafe { self.pop_listed_head(o, mt) };
        let added = self.expand_at(idx, order, o, mt);
        self.account_freepages(mt, added - (1 << o.0));
        if E::ENABLED {
            self.events.record(&TraceEvent::PageAllocZoneLocked {
                cpu: self.cpu,
                pfn: self.zone.pfn_of(idx),
                order,
                migratetype: mt,
                percpu_refill: crate::types::pcp_allowed_order(order) && mt.is_mergeable(),
            });
        }
        Some(idx)
    }

    /// One block of `order` for a `mt` request, from this zone's buddy lists, falling back to
    /// other types as the anti-fragmentation rules allow (kernel `__rmqueue`). Returns the
    /// block's frame index, as the refill wants it for its pageset list and the single-block
    /// path for the frame it marks (no round trip through the pfn on the common path).
    /// Always inlined into both: without CMA the request's own lists usually serve it; the
    /// CMA balancing and the fallback are out of line. A caller that knows `flags` has no
    /// CMA bit (a constant) gets the own-lists step without the test.
    #[inline(always)]
    pub(crate) fn rmqueue_at(
        &mut self,
        order: Order,
        mt: MigrateType,
        flags: AllocFlags,
    ) -> Option<u32> {
        if !flags.has(AllocFlags::CMA) {
            if let Some(idx) = self.rmqueue_smallest_at(order, mt) {
                return Some(idx);
            }
        }
        self.rmqueue_slow(order, mt, flags).map(|pfn| self.zone.index_of(pfn))
    }

    /// [`rmqueue_at`](Self::rmqueue_at) once the request's own lists had nothing, or for a request
    /// that may use CMA (which balances between CMA and its own lists first).
    #[inline(never)]
    pub(crate) fn rmqueue_slow(
        &mut self,
        order: Order,
        mt: MigrateType,
        flags: AllocFlags,
    ) -> Option<Pfn> {
        if !flags.has(AllocFlags::CMA) {
            return self.rmqueue_fallback(order, mt, flags);
        }
        let z = self.zone;
        // Balance movable allocations between CMA and ordinary blocks: use CMA first once it
        // holds more than half of the zone's free memory.
        let cma = z.nr_free_cma.load(crate::sync::Ordering::Relaxed);
        let free = z.nr_free_pages.load(crate::sync::Ordering::Relaxed);
        if cma > free / 2 {
            if let Some(p) = self.rmqueue_smallest(order, MigrateType::Cma) {
                return Some(p);
            }
        }
        if let Some(p) = self.rmqueue_smallest(order, mt) {
            return Some(p);
        }
        if let Some(p) = self.rmqueue_smallest(order, MigrateType::Cma) {
            return Some(p);
        }
        self.rmqueue_fallback(order, mt, flags)
    }

    /// Would freeing the block at `pfn` (order `order`, whose buddy is `buddy`) likely merge
    /// one level further soon? True when the enclosing order+1 block's buddy is already free:
    /// then the block goes to the list tail, where it is less likely to be allocated before its
    /// own buddy comes back (kernel `buddy_merge_likely`). `at`, `start` and `span` are the
    /// merge loop's frame lookup and zone bounds.
    #[inline(always)]
    fn buddy_merge_likely<'m>(
        &self,
        at: impl Fn(u32) -> &'m Frame,
        (start, span): (u64, u64),
        pfn: Pfn,
        buddy: Pfn,
        order: Order,
    ) -> bool {
        if order.0 >= MAX_PAGE_ORDER - 1 {
            return false;
        }
        let higher = Pfn(pfn.0 & buddy.0);
        let higher_buddy = higher.buddy(Order(order.0 + 1));
        let hidx = higher_buddy.0.wrapping_sub(start);
        if hidx >= span {
            return false;
        }
        self.touch_frame(higher_buddy);
        at(hidx as u32).is_buddy_of_order(Order(order.0 + 1))
    }

    /// Return the block at `pfn` to the free lists as type `mt`, merging with free buddies
    /// (kernel `__free_one_page`). The head must not be on any list.
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) fn free_one_page_locked(
        &mut self,
        pfn: Pfn,
        order: Order,
        mt: MigrateType,
        fpi: Fpi,
    ) {
        // Checked: the caller names the block by pfn; this index is what puts the frame on a
        // list (hot.rs, F).
        assert!(self.zone.spans(pfn), "{pfn:?} is outside the zone");
        // SAFETY: just checked; a block the zone spans the head of lies inside its span.
        unsafe { self.free_one_page_at(self.zone.index_of(pfn), order, mt, fpi) }
    }

    /// [`free_one_page_locked`](Self::free_one_page_locked) of the block whose head has
    /// frame index `idx`: what a pageset drain calls, with the index its list held, so
    /// nothing is looked up checked.
    ///
    /// # Safety
    /// `idx` is the index of a frame of this zone heading a block of `order` inside its span:
    /// a member of one of its lists, or checked (hot.rs, F).
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) unsafe fn free_one_page_at(
        &mut self,
        idx: u32,
        order: Order,
        mt: MigrateType,
        fpi: Fpi,
    ) {
        let span = Span::of(self.zone);
        // SAFETY: the caller's promise; the frames are this zone's.
        unsafe { self.free_one_page_in(span, self.frames, idx, order, mt, fpi) }
    }

    /// [`free_one_page_at`](Self::free_one_page_at) with the zone's span and frames already
    /// read, as a drain reads them once for all its blocks. The frames come from the caller
    /// so that a drain's pageset pops and this merge use one value: read here from the guard
    /// (which the out-of-line rare cases take by reference, so it lives in memory), they
    /// were a second copy, loaded again for every block.
    ///
    /// # Safety
    /// As for `free_one_page_at`; `span` is [`Span::of`] this zone and `frames` its
    /// `mem_map` (the guard's `frames`).
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) unsafe fn free_one_page_in(
        &mut self,
        Span { start, len: span }: Span,
        frames: &[Frame],
        idx: u32,
        order: Order,
        mt: MigrateType,
        fpi: Fpi,
    ) {
        let zone = self.zone;
        debug_assert!(start == zone.start_pfn.0 && span == zone.end_pfn.0 - start);
        debug_assert!(core::ptr::eq(frames, self.frames));
        self.account_freepages(mt, 1 << order.0);
        // SAFETY: the caller's promise for `idx`; the buddies below are tested against the
        // span, and the merged block's head is one of them or `idx` (hot.rs, F).
        let at = unsafe { frames_unchecked(frames) };
        // Until the merged block is listed, no frame of it heads anything.
        at(idx).set_info(crate::mem_map::FrameInfo::TAIL);
        let (mut pfn, mut order) = (Pfn(start + u64::from(idx)), order);
        self.touch_frame(pfn);
        let mut buddy = pfn.buddy(order);
        while order.0 < MAX_PAGE_ORDER {
            buddy = pfn.buddy(order);
            let bidx = buddy.0.wrapping_sub(start);
            if bidx >= span {
                break;
            }
            let bidx = bidx as u32;
            self.touch_frame(buddy);
            let Some(list) = at(bidx).buddy_list_if(order) else { break };
            // Mostly the buddy sits on the freed block's own type's list; another type's is
            // out of line.
            if list == mt as u8 {
                self.del_at(&at, bidx, order, mt);
            } else if !self.take_buddy_of_other_type(bidx, buddy, order, list, mt) {
                break;
            }
            pfn = Pfn(pfn.0 & buddy.0);
            order = Order(order.0 + 1);
        }
        let tail = match fpi {
            Fpi::ToTail => true,
            Fpi::None => self.buddy_merge_likely(&at, (start, span), pfn, buddy, order),
        };
        self.add_at(&at, (pfn.0 - start) as u32, order, mt, tail);
    }

    /// The merge loop's rare case: the free buddy of `order` at `buddy` (frame index `bidx`)
    /// sits on another list than `mt`'s (`list`). Unless the two types may not merge at this
    /// order (reserves, CMA and isolated blocks keep their pages to themselves: `false`, the
    /// merge stops), takes it off its list, moves its pages to `mt`'s count and returns `true`.
    #[inline(never)]
    #[allow(unsafe_code)]
    fn take_buddy_of_other_type(
        &mut self,
        bidx: u32,
        buddy: Pfn,
        order: Order,
        list: u8,
        mt: MigrateType,
    ) -> bool {
        let buddy_mt = MigrateType::from_u8(list).unwrap_or(MigrateType::Movable);
        if order.0 >= PAGEBLOCK_ORDER
            && buddy_mt != mt
            && (!mt.is_mergeable() || !buddy_mt.is_mergeable())
        {
            return false;
        }
        // SAFETY: `bidx` is the index of a pfn the zone spans (hot.rs, F).
        let at = unsafe { frames_unchecked(self.frames) };
        self.del_at(at, bidx, order, buddy_mt);
        if buddy_mt != mt {
            let pages = order.nr_pages().0 as i64;
            self.account_freepages(buddy_mt, -pages);
            self.account_freepages(mt, pages);
            if self.cfg.hygiene {
                // Both mergeable: relabel the buddy's block so a later split puts the pieces
                // on lists matching their pageblock (6.10 hygiene).
                self.zone.pageblocks.set(buddy, mt);
            }
        }
        true
    }

    /// Free a block of any order under the lock (kernel `free_one_page`): blocks larger than
    /// a pageblock are freed pageblock by pageblock, each as its own block's type. PGFREE is
    /// the caller's to count (boot hand-over is not a free).
    #[allow(unsafe_code)]
    pub(crate) fn free_one_page(&mut self, pfn: Pfn, order: Order, fpi: Fpi) {
        // Checked once: the block's frames and pageblock types are read unchecked.
        assert!(self.zone.spans(pfn), "{pfn:?} is outside the zone");
        // SAFETY: just checked; a block the zone spans the head of lies inside its span.
        unsafe { self.free_one_page_idx(self.zone.index_of(pfn), order, fpi) }
    }

    /// [`free_one_page`](Self::free_one_page) of the block whose head has frame index `idx`,
    /// as a free has it from its claim (no check of the pfn again).
    ///
    /// # Safety
    /// `idx` is the index of a frame of this zone heading a block of `order` inside its span
    /// (hot.rs, F and P).
    #[allow(unsafe_code)]
    pub(crate) unsafe fn free_one_page_idx(&mut self, idx: u32, order: Order, fpi: Fpi) {
        let zone = self.zone;
        let pfn = zone.pfn_of(idx);
        if order.0 > PAGEBLOCK_ORDER && self.cfg.hygiene {
            let mut p = pfn;
            let end = pfn.add(order.nr_pages());
            while p < end {
                let mt = zone.pageblocks.get(p);
                self.free_one_page_locked(p, Order::PAGEBLOCK, mt, fpi);
                p = p.add(crate::types::NrPages(PAGEBLOCK_NR_PAGES));
            }
        } else {
            // SAFETY: the caller's promise (hot.rs, P).
            let bits = unsafe { zone.pageblock_bits(pfn) };
            let mt = crate::pageblock::type_of_bits(bits);
            // SAFETY: the caller's promise (hot.rs, F).
            unsafe { self.free_one_page_at(idx, order, mt, fpi) };
        }
    }

    /// Walk the pageblock holding `pfn`: returns (first frame, free pages, movable pages), or
    /// `None` when the block is not entirely inside the zone (kernel
    /// `prep_move_freepages_block`). Movable = allocated blocks that were asked for as MOVABLE.
    pub(crate) fn pageblock_census(&self, pfn: Pfn) -> Option<(Pfn, u64, u64)> {
        let zone = self.zone;
        let start = pfn.align_down(Order::PAGEBLOCK);
        let end = start.add(crate::types::NrPages(PAGEBLOCK_NR_PAGES));
        if start < zone.start_pfn || end > zone.end_pfn {
            return None;
        }
        let (mut free, mut movable) = (0, 0);
        let mut p = start;
        while p < end {
            self.touch_frame(p);
            let info = zone.frame(p).info();
            let step = match info.state {
                FrameState::Buddy => {
                    free += 1 << info.order.0;
                    1u64 << info.order.0
                }
                FrameState::Allocated if info.list == MigrateType::Movable as u8 => {
                    movable += 1 << info.order.0;
                    1u64 << info.order.0
                }
                FrameState::Allocated | FrameState::Pcp => 1u64 << info.order.0,
                _ => 1,
            };
            p = Pfn(p.0 + step);
        }
        Some((start, free, movable))
    }

    /// Move every free block inside the pageblock at `start` from `old` lists to `new` lists
    /// and relabel the block (kernel `__move_freepages_block`). Returns pages moved.
    pub(crate) fn move_freepages_block(
        &mut self,
        start: Pfn,
        old: MigrateType,
        new: MigrateType,
    ) -> u64 {
        let moved = self.move_freepages(start, old, new);
        self.zone.pageblocks.set(start, new);
        moved
    }

    /// Move every free block inside the pageblock at `start` to `new` lists, leaving the
    /// block's label alone (the ≤ 6.9 `move_freepages_block`, which relabelled separately).
    pub(crate) fn move_freepages(&mut self, start: Pfn, old: MigrateType, new: MigrateType) -> u64 {
        let zone = self.zone;
        let end = start.add(crate::types::NrPages(PAGEBLOCK_NR_PAGES));
        let mut moved = 0;
        let mut p = start;
        while p < end {
            let info = zone.frame(p).info();
            if info.state == FrameState::Buddy {
                let from = MigrateType::from_u8(info.list).unwrap_or(old);
                self.move_to_free_list(p, info.order, from, new);
                moved += 1 << info.order.0;
                p = Pfn(p.0 + (1 << info.order.0));
            } else if matches!(info.state, FrameState::Allocated | FrameState::Pcp) {
                p = Pfn(p.0 + (1 << info.order.0));
            } else {
                p = Pfn(p.0 + 1);
            }
        }
        moved
    }

    /// If a free block larger than a pageblock covers `pfn`'s pageblock, split it into
    /// pageblock-sized free blocks (kernel `split_large_buddy` before moving a block).
    pub(crate) fn split_covering_buddy(&mut self, pfn: Pfn) {
        let zone = self.zone;
        for o in (PAGEBLOCK_ORDER + 1)..=MAX_PAGE_ORDER {
            let head = pfn.align_down(Order(o));
            if !zone.spans(head) {
                continue;
            }
            let info = zone.frame(head).info();
            if info.state == FrameState::Buddy && info.order == Order(o) {
                let mt = MigrateType::from_u8(info.list).unwrap_or(MigrateType::Movable);
                self.del_from_free_list(head, Order(o), mt);
                let mut p = head;
                let end = head.add(Order(o).nr_pages());
                while p < end {
                    self.add_to_free_list(p, Order::PAGEBLOCK, mt, true);
                    p = p.add(crate::types::NrPages(PAGEBLOCK_NR_PAGES));
                }
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Fpi;
    use crate::events::{EventSink, MetaLine, TraceEvent};
    use crate::migratetype::MigrateType;
    use crate::types::{CpuId, Order, Pfn};
    use crate::{MemoryMap, PageAllocator, Policy, Tunables};

    fn allocator() -> PageAllocator {
        let map = MemoryMap::single_node(1, 32 << 20).unwrap();
        PageAllocator::new(map, Tunables::default(), Policy::modern()).unwrap()
    }

    /// The DMA32 zone of [`allocator`]'s machine, where every test here works.
    fn dma32(pa: &PageAllocator) -> &crate::Zone {
        pa.zone_by_type(crate::NodeId(0), crate::ZoneType::Dma32).unwrap()
    }

    /// `expand` puts each upper half at the head of its list, so the next small request takes
    /// the neighbour of the block just carved.
    #[test]
    fn expand_puts_upper_halves_at_the_head() {
        let pa = allocator();
        let z = dma32(&pa);
        let mut zl = z.lock(CpuId(0), &pa.events, &pa.cfg);
        let mt = MigrateType::Movable;
        let a = zl.rmqueue_smallest(Order(0), mt).unwrap();
        assert!(a.is_aligned(Order::MAX), "a fresh order-10 block was split");
        assert_eq!(zl.rmqueue_smallest(Order(0), mt), Some(Pfn(a.0 + 1)));
        assert_eq!(zl.rmqueue_smallest(Order(1), mt), Some(Pfn(a.0 + 2)));
        assert_eq!(zl.rmqueue_smallest(Order(9), mt), Some(Pfn(a.0 + 512)));
    }

    /// Each word of the bitmap of non-empty lists as the lists say it must be, against the
    /// bitmap the zone keeps; `what` names the step for the failure message.
    fn assert_bitmap_matches(zl: &crate::zone::ZoneLocked<'_, crate::NoEvents>, what: &str) {
        for mt in MigrateType::ALL {
            let want = (0..crate::types::NR_PAGE_ORDERS)
                .filter(|&o| !zl.free.area[o].lists[mt.index()].is_empty())
                .fold(0u32, |w, o| w | 1 << o);
            assert_eq!(zl.zone.free_orders(mt), want, "{mt} after {what}");
        }
    }

    /// The bitmap follows every kind of list change: a split (lists of the lower orders go
    /// non-empty), a take that empties a list, a merge (lists empty as buddies leave them),
    /// a move between types, a fallback steal, the split of a block larger than a
    /// pageblock, and taking every block of an order.
    #[test]
    fn the_bitmap_of_non_empty_lists_follows_every_list_operation() {
        use crate::gfp::AllocFlags;
        let pa = allocator();
        let z = dma32(&pa);
        let mut zl = z.lock(CpuId(0), &pa.events, &pa.cfg);
        let mv = MigrateType::Movable;
        assert_bitmap_matches(&zl, "boot");
        assert_eq!(zl.zone.free_orders(mv), 1 << 10, "only order-10 blocks at first");
        let a = zl.rmqueue_smallest(Order(0), mv).unwrap();
        assert_bitmap_matches(&zl, "a split from order 10");
        assert_eq!(zl.zone.free_orders(mv) & 0x3ff, 0x3ff, "one upper half per order");
        let b = zl.rmqueue_smallest(Order(0), mv).unwrap();
        assert_bitmap_matches(&zl, "a take that empties the order-0 list");
        assert_eq!(zl.zone.free_orders(mv) & 1, 0);
        zl.free_one_page_locked(b, Order(0), mv, Fpi::None);
        assert_bitmap_matches(&zl, "a free without a merge");
        zl.free_one_page_locked(a, Order(0), mv, Fpi::None);
        assert_bitmap_matches(&zl, "a free merging back to order 10");
        assert_eq!(zl.zone.free_orders(mv), 1 << 10);
        let c = zl.rmqueue_smallest(Order(3), mv).unwrap();
        zl.move_to_free_list(Pfn(c.0 + 8), Order(3), mv, MigrateType::Reclaimable);
        assert_bitmap_matches(&zl, "a move between types");
        let d = zl.rmqueue_at(Order(0), MigrateType::Unmovable, AllocFlags::WMARK_LOW).unwrap();
        let d = zl.zone.pfn_of(d);
        assert_bitmap_matches(&zl, "a fallback steal");
        zl.free_one_page_locked(d, Order(0), zl.zone.pageblocks.get(d), Fpi::None);
        zl.free_one_page_locked(c, Order(3), zl.zone.pageblocks.get(c), Fpi::None);
        assert_bitmap_matches(&zl, "frees after the steal");
        let e = zl.first_free(Order(10), mv).unwrap();
        zl.split_covering_buddy(e);
        assert_bitmap_matches(&zl, "the split of a block larger than a pageblock");
        while zl.rmqueue_smallest(Order(9), mv).is_some() {}
        assert_bitmap_matches(&zl, "taking every block of order 9 and above");
        assert_eq!(zl.zone.free_orders(mv) >> 9, 0);
    }

    /// A buddy on another type's list (the merge loop's out-of-line case) merges below
    /// pageblock order, its pages moving to the freed block's type, and does not merge at
    /// pageblock order when one of the two types is not mergeable.
    #[test]
    fn a_buddy_of_another_type_merges_only_where_the_types_allow() {
        let pa = allocator();
        let z = dma32(&pa);
        let mut zl = z.lock(CpuId(0), &pa.events, &pa.cfg);
        let (mv, un, ha) = (MigrateType::Movable, MigrateType::Unmovable, MigrateType::HighAtomic);
        let b = zl.rmqueue_smallest(Order(10), mv).unwrap();
        let free_before = z.nr_free_pages.load(crate::sync::Ordering::Relaxed);
        zl.free_one_page_locked(Pfn(b.0 + 1), Order(0), un, Fpi::None);
        assert_eq!(zl.first_free(Order(0), un), Some(Pfn(b.0 + 1)));
        zl.free_one_page_locked(b, Order(0), mv, Fpi::None);
        assert_bitmap_matches(&zl, "a merge with an unmovable buddy");
        assert_eq!(zl.first_free(Order(0), un), None, "the buddy left its list");
        assert_eq!(zl.first_free(Order(1), mv), Some(b), "merged as the freed block's type");
        assert_eq!(z.nr_free_pages.load(crate::sync::Ordering::Relaxed), free_before + 2);
        let c = zl.rmqueue_smallest(Order(10), mv).unwrap();
        let upper = Pfn(c.0 + 512);
        zl.free_one_page_locked(upper, Order(9), ha, Fpi::None);
        zl.free_one_page_locked(c, Order(9), mv, Fpi::None);
        assert_bitmap_matches(&zl, "frees of two order-9 halves that may not merge");
        assert_eq!(zl.first_free(Order(9), ha), Some(upper), "the reserve kept its half");
        assert!(z.frame(c).is_buddy_of_order(Order(9)), "the movable half stayed order 9");
    }

    /// A freed block goes to the tail of its list when its enclosing block's buddy is free
    /// (a merge is one free away), otherwise to the head. Built directly under the zone lock
    /// from one order-10 block carved off the free lists, so every neighbour is known.
    #[test]
    fn merge_likely_blocks_go_to_the_tail() {
        let pa = allocator();
        let z = dma32(&pa);
        let mut zl = z.lock(CpuId(0), &pa.events, &pa.cfg);
        let mt = MigrateType::Movable;
        let b = zl.rmqueue_smallest(Order(10), mt).unwrap();
        let at = |off: u64| Pfn(b.0 + off);
        let ends = |zl: &crate::zone::ZoneLocked<'_, crate::NoEvents>, o: usize| {
            let l = &zl.free.area[o].lists[mt.index()];
            let tail = l.iter(zl.frames).last();
            (l.head().map(|i| z.pfn_of(i)), tail.map(|i| z.pfn_of(i)), l.len())
        };
        let before = ends(&zl, 4).2;
        // Enclosing order-5 block's buddy B+96 is not free: head.
        zl.free_one_page_locked(at(80), Order(4), mt, Fpi::None);
        assert_eq!(ends(&zl, 4).0, Some(at(80)));
        // B+32 freed as order 5 (its buddy B is not free).
        zl.free_one_page_locked(at(32), Order(5), mt, Fpi::None);
        // B freed as order 4: its buddy B+16 is not free, but the enclosing order-5 block's
        // buddy B+32 is a free order-5 block: tail.
        zl.free_one_page_locked(at(0), Order(4), mt, Fpi::None);
        assert_eq!(ends(&zl, 4), (Some(at(80)), Some(at(0)), before + 2));
        // B+144 as order 4: enclosing buddy B+160 not free: head again.
        zl.free_one_page_locked(at(144), Order(4), mt, Fpi::None);
        assert_eq!(ends(&zl, 4).0, Some(at(144)));
        // Fpi::ToTail overrides: B+208 goes to the tail although no merge is likely.
        zl.free_one_page_locked(at(208), Order(4), mt, Fpi::ToTail);
        assert_eq!(ends(&zl, 4).1, Some(at(208)));
    }

    /// Every metadata line a sink is told about, in order.
    #[derive(Debug, Default)]
    struct Lines(std::sync::Mutex<std::vec::Vec<MetaLine>>);

    impl EventSink for Lines {
        fn record(&self, _: &TraceEvent) {}
        fn touch(&self, _: CpuId, line: MetaLine) {
            self.0.lock().unwrap().push(line);
        }
    }

    /// A merge reports the lines the kernel's `__free_one_page` touches for it
    /// (docs/reproduction.md, 001-kbuild, the audit table): the freed block's `struct page`,
    /// the buddy's (`page_is_buddy`), the buddy again and the free area when it is unlinked,
    /// then both of its free-list neighbours (their links rewritten, reported as writes
    /// after the reads), the next buddy that is not free, the enclosing block's buddy
    /// (`buddy_merge_likely`), then the merged block and the free area when it is listed, and
    /// the list's old first entry.
    #[test]
    fn a_merge_reports_the_buddy_and_its_list_neighbours() {
        let map = MemoryMap::single_node(1, 32 << 20).unwrap();
        let pa = PageAllocator::with_events(
            map,
            Tunables::default(),
            Policy::modern(),
            Lines::default(),
        )
        .unwrap();
        let z = pa.zone_by_type(crate::NodeId(0), crate::ZoneType::Dma32).unwrap();
        let mut zl = z.lock(CpuId(0), &pa.events, &pa.cfg);
        let mt = MigrateType::Movable;
        let b = zl.rmqueue_smallest(Order(10), mt).unwrap();
        let at = |off: u64| Pfn(b.0 + off);
        // The order-1 list becomes [B+18, B+2, B+10]: B+2, the buddy of B, has a neighbour
        // on each side.
        for off in [10, 2, 18] {
            zl.free_one_page_locked(at(off), Order(1), mt, Fpi::None);
        }
        let old_head = zl.first_free(Order(2), mt);
        pa.events.0.lock().unwrap().clear();
        zl.free_one_page_locked(at(0), Order(1), mt, Fpi::None);
        let f = |off| MetaLine::Frame(at(off));
        let mut want = std::vec![
            f(0),
            f(2),
            f(2),
            MetaLine::FreeArea(z.idx, Order(1)),
            f(18),
            f(10),
            f(4),
            f(8),
            f(0),
            MetaLine::FreeArea(z.idx, Order(2)),
        ];
        want.extend(old_head.map(MetaLine::Frame));
        assert_eq!(*pa.events.0.lock().unwrap(), want);
        assert_eq!(zl.first_free(Order(2), mt), Some(at(0)), "merged to order 2, at the head");
    }
}

//! Compaction: move movable blocks out of the way so that free memory forms large blocks
//! (the kernel's `mm/compaction.c` behaviour, written from its rules; docs/compaction.md).
//!
//! A *migrate scanner* walks a zone pageblock by pageblock from its start, isolating allocated
//! movable blocks; a *free scanner* walks down from its end, isolating free buddy blocks as
//! targets. Each isolated block is handed to its owner's [`Migrate`], which copies it to a
//! target and points its references there (or refuses); the source is then freed and merges.
//! The run stops when a free block of the requested order exists (or, for proactive
//! compaction, when the zone's fragmentation score is low enough), or when the scanners meet.
//!
//! Moving a block is the owner's job: the allocator hands out frame numbers, not memory, so it
//! can neither copy a page nor find who points at it. A caller that wants compaction passes a
//! [`Migrate`]; without one, nothing is ever moved.
//!
//! Left out, as optimisations that change where the scanners look first but not what a run
//! can achieve: the kernel's fast searches (`fast_isolate_freepages`,
//! `fast_find_migrateblock`), capture of the freed block by the compacting allocation
//! (`capture_control`), and lock contention checks (a compaction never aborts on contention).

use crate::sync::RawLock;

use crate::compact_state::last_block;
use crate::error::CompactError;
use crate::events::{EventSink, MetaLine};
use crate::gfp::AllocFlags;
use crate::list::ListHead;
use crate::mem_map::{FrameInfo, FrameState};
use crate::migratetype::MigrateType;
use crate::page_alloc::{Cpu, PageAllocator, Walk};
use crate::stats::Counter;
use crate::sync::Ordering::Relaxed;
use crate::types::{NodeId, ZoneIdx};
use crate::types::{
    Order, Pfn, ZoneType, MAX_PAGE_ORDER, NR_PAGE_ORDERS, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER,
    PAGE_ALLOC_COSTLY_ORDER,
};
use crate::zone::{Zone, ZoneLocked, WMARK_LOW, WMARK_MIN};

/// Pages the migrate scanner isolates before they are moved (kernel `COMPACT_CLUSTER_MAX`,
/// = `SWAP_CLUSTER_MAX`).
pub const COMPACT_CLUSTER_MAX: u64 = 32;
/// Deferral doubles up to 2^6 = 64 skipped attempts (kernel `COMPACT_MAX_DEFER_SHIFT`).
pub const COMPACT_MAX_DEFER_SHIFT: u32 = 6;
/// The order proactive compaction scores fragmentation at (kernel `COMPACTION_HPAGE_ORDER`:
/// the THP order on x86-64, a pageblock here).
pub const COMPACTION_HPAGE_ORDER: Order = Order::PAGEBLOCK;

/// The owner of allocated memory moves a block when compaction asks.
pub trait Migrate {
    /// Move the allocated block at `from` (2^`order` frames, allocated as movable) to the
    /// free block `to`: copy its contents and point every reference at `to`, then return
    /// true. Return false to leave it where it is (pinned, busy, or not a block this owner
    /// holds). Called with no allocator lock held; it must not free `from` or `to` itself:
    /// on true the allocator frees `from` and `to` becomes the owner's, allocated with
    /// `order`.
    fn migrate(&mut self, from: Pfn, to: Target<'_>, order: Order) -> bool;
}

/// The free block a migration may write into. Only a compaction creates one, for a block
/// it took off the free lists for this call alone, and it lives no longer than the call:
/// an owner may copy into it without any other check that the memory is nobody else's.
#[derive(Debug)]
pub struct Target<'call> {
    pfn: Pfn,
    order: Order,
    _call: core::marker::PhantomData<&'call mut ()>,
}

impl Target<'_> {
    /// The block's first frame.
    pub fn pfn(&self) -> Pfn {
        self.pfn
    }

    /// The block's order (the moved block's).
    pub fn order(&self) -> Order {
        self.order
    }
}

/// How hard a compaction tries (kernel `enum migrate_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompactMode {
    /// The first direct compaction: its migrate scanner only looks at pageblocks of the
    /// requested type, and a failure does not defer later attempts.
    Async,
    /// kcompactd's and the second direct compaction's mode: every pageblock.
    SyncLight,
    /// The last resort, and `compact_zone` on request: every pageblock, and deferred zones
    /// are compacted anyway.
    Sync,
}

impl CompactMode {
    /// Index into the zone's cached migrate positions (kernel: async, then sync).
    const fn cache_slot(self) -> usize {
        match self {
            CompactMode::Async => 0,
            _ => 1,
        }
    }
}

/// How a compaction ended (kernel `enum compact_result`), ordered as the kernel orders them:
/// of several zones' results, the greatest is the outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum CompactResult {
    /// Not run: the zone has too little free memory for compaction to help (or, for a costly
    /// order, its fragmentation index says the failure is lack of memory, not fragmentation).
    Skipped,
    /// Not run: recent failures at this order defer it.
    Deferred,
    /// The scanners met over the whole zone without making the block.
    Complete,
    /// The scanners met, but the run started where an earlier one left off, so part of the
    /// zone was not scanned.
    PartialSkipped,
    /// Stopped early: free targets could not be taken without going below the MIN watermark.
    Contended,
    /// A free block of the order asked for exists (or the fragmentation score is low enough).
    Success,
}

/// What one compaction did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactStats {
    /// Frames the migrate scanner looked at.
    pub migrate_scanned: u64,
    /// Frames the free scanner looked at.
    pub free_scanned: u64,
    /// Pages isolated to move.
    pub isolated_migrate: u64,
    /// Pages isolated as free targets.
    pub isolated_free: u64,
    /// Pages moved.
    pub migrated: u64,
    /// Pages isolated and not moved (refused by the owner, or no target left).
    pub failed: u64,
}

impl CompactStats {
    fn add(&mut self, o: &CompactStats) {
        self.migrate_scanned += o.migrate_scanned;
        self.free_scanned += o.free_scanned;
        self.isolated_migrate += o.isolated_migrate;
        self.isolated_free += o.isolated_free;
        self.migrated += o.migrated;
        self.failed += o.failed;
    }
}

/// A compaction's result with what it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactOutcome {
    /// How it ended.
    pub result: CompactResult,
    /// What it did.
    pub stats: CompactStats,
}

/// Free memory of a zone by block size (kernel `struct contig_page_info`).
#[derive(Clone, Copy, Debug, Default)]
struct ContigInfo {
    /// Free blocks of any order.
    free_blocks_total: u64,
    /// Free pages.
    free_pages: u64,
    /// Free blocks of the order asked about that the free blocks at or above it make.
    free_blocks_suitable: u64,
}

impl<L: RawLock> Zone<L> {
    /// The free areas counted for `order` (kernel `fill_contig_page_info`).
    fn contig_info(&self, order: Order) -> ContigInfo {
        let mut info = ContigInfo::default();
        for o in 0..=MAX_PAGE_ORDER {
            let blocks = self.nr_free(Order(o));
            info.free_blocks_total += blocks;
            info.free_pages += blocks << o;
            if o >= order.0 {
                info.free_blocks_suitable += blocks << (o - order.0);
            }
        }
        info
    }

    /// The fragmentation index at `order` in thousandths (kernel `fragmentation_index`):
    /// -1000 when a free block of that order exists (an allocation would succeed), 0 when
    /// nothing is free; otherwise towards 0 the failure is lack of memory, towards 1000
    /// external fragmentation. `debugfs/extfrag/extfrag_index` prints it / 1000.
    pub fn fragmentation_index(&self, order: Order) -> i32 {
        let info = self.contig_info(order);
        if info.free_blocks_total == 0 {
            return 0;
        }
        if info.free_blocks_suitable > 0 {
            return -1000;
        }
        let requested = order.nr_pages().0;
        let per_block = (1000 + info.free_pages * 1000 / requested) / info.free_blocks_total;
        1000 - per_block.min(1000) as i32
    }

    /// The unusable free space index at `order` in thousandths (kernel
    /// `unusable_free_index`): the share of free memory in blocks too small for `order`;
    /// 1000 when nothing is free. `debugfs/extfrag/unusable_index` prints it / 1000.
    pub fn unusable_index(&self, order: Order) -> u32 {
        self.unusable_share(order, 1000).unwrap_or(1000)
    }

    /// The share of free memory (0..=100) that cannot serve an `order` block (kernel
    /// `extfrag_for_order`); 0 when nothing is free.
    pub fn extfrag_for_order(&self, order: Order) -> u32 {
        self.unusable_share(order, 100).unwrap_or(0)
    }

    /// The share of free memory in blocks too small for `order`, out of `scale`; `None` when
    /// nothing is free.
    fn unusable_share(&self, order: Order, scale: u64) -> Option<u32> {
        let info = self.contig_info(order);
        let free = info.free_pages;
        let usable = (info.free_blocks_suitable << order.0).min(free);
        (free > 0).then(|| ((free - usable) * scale / free) as u32)
    }

    /// Could compaction make an `order` block here (kernel `compaction_suitable`)? There must
    /// be free pages beyond the watermark (LOW for costly orders, else MIN) plus twice the
    /// block (the targets and the block itself, `compact_gap`); and for a costly order the
    /// fragmentation index must be above `extfrag_threshold`, else the failure is lack of
    /// memory, which reclaim rather than compaction cures.
    pub fn compaction_suitable(
        &self,
        order: Order,
        highest: ZoneType,
        extfrag_threshold: u32,
    ) -> bool {
        let costly = order.0 > PAGE_ALLOC_COSTLY_ORDER;
        let mark = self.wmark_pages(if costly { WMARK_LOW } else { WMARK_MIN });
        let gap = 2u64 << order.0;
        if !self.watermark_ok(Order(0), mark.saturating_add(gap), highest, AllocFlags::CMA) {
            return false;
        }
        if costly {
            let index = self.fragmentation_index(order);
            if index >= 0 && index <= extfrag_threshold as i32 {
                return false;
            }
        }
        true
    }

    /// Is compaction at `order` deferred here? Counts the attempt (kernel
    /// `compaction_deferred`): after a failure, 2^`defer_shift` attempts are skipped.
    pub fn compaction_deferred(&self, order: Order) -> bool {
        let c = &self.compact;
        if u32::from(order.0) < c.order_failed.load(Relaxed) {
            return false;
        }
        let limit = 1u32 << c.defer_shift.load(Relaxed);
        let considered = c.considered.load(Relaxed).saturating_add(1);
        if considered >= limit {
            c.considered.store(limit, Relaxed);
            return false;
        }
        c.considered.store(considered, Relaxed);
        true
    }

    /// A compaction at `order` failed: defer the next ones longer (kernel
    /// `defer_compaction`).
    pub fn defer_compaction(&self, order: Order) {
        let c = &self.compact;
        c.considered.store(0, Relaxed);
        let shift = c.defer_shift.load(Relaxed);
        if shift < COMPACT_MAX_DEFER_SHIFT {
            c.defer_shift.store(shift + 1, Relaxed);
        }
        if u32::from(order.0) < c.order_failed.load(Relaxed) {
            c.order_failed.store(u32::from(order.0), Relaxed);
        }
    }

    /// A compaction at `order` succeeded (and, with `alloc_success`, so did the allocation
    /// after it): stop deferring (kernel `compaction_defer_reset`).
    pub fn compaction_defer_reset(&self, order: Order, alloc_success: bool) {
        let c = &self.compact;
        if alloc_success {
            c.considered.store(0, Relaxed);
            c.defer_shift.store(0, Relaxed);
        }
        if u32::from(order.0) >= c.order_failed.load(Relaxed) {
            c.order_failed.store(u32::from(order.0) + 1, Relaxed);
        }
    }

    /// Has deferral run its longest course at `order`? Then the next compaction clears the
    /// skip hints and starts over (kernel `compaction_restarting`).
    fn compaction_restarting(&self, order: Order) -> bool {
        let c = &self.compact;
        u32::from(order.0) >= c.order_failed.load(Relaxed)
            && c.defer_shift.load(Relaxed) == COMPACT_MAX_DEFER_SHIFT
            && c.considered.load(Relaxed) >= 1 << COMPACT_MAX_DEFER_SHIFT
    }

    /// Compaction's deferral state: (considered, defer_shift, order_failed).
    pub fn compact_defer_state(&self) -> (u32, u32, u32) {
        let c = &self.compact;
        (c.considered.load(Relaxed), c.defer_shift.load(Relaxed), c.order_failed.load(Relaxed))
    }

    /// Forget where the scanners were and clear every skip hint (kernel
    /// `__reset_isolation_suitable`).
    pub(crate) fn reset_isolation_suitable(&self) {
        self.reset_cached_positions();
        self.pageblocks.clear_skip_all();
    }

    /// Scanners start again at the zone's ends (kernel `reset_cached_positions`).
    fn reset_cached_positions(&self) {
        let c = &self.compact;
        for m in &c.cached_migrate {
            m.store(self.start_pfn.0, Relaxed);
        }
        c.cached_free.store(last_block(self.start_pfn, self.end_pfn), Relaxed);
    }

    /// A direct compaction left skip hints to clear when kcompactd next sleeps: take the flag.
    pub(crate) fn take_blockskip_flush(&self) -> bool {
        self.compact.blockskip_flush.swap(false, Relaxed)
    }

    /// The zone's fragmentation score (kernel `fragmentation_score_zone`): the share of its
    /// free memory unusable for a huge page.
    pub fn fragmentation_score(&self) -> u32 {
        self.extfrag_for_order(COMPACTION_HPAGE_ORDER)
    }
}

/// Who runs a compaction and what it is after (kernel `struct compact_control`, the part
/// that does not change during the run).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Request {
    /// The block order wanted; `None`: the whole zone (the `compact_memory` sysctl,
    /// proactive compaction).
    pub(crate) order: Option<Order>,
    /// The requester's migratetype: which lists count as success, and (async) which
    /// pageblocks the migrate scanner may take from.
    pub(crate) mt: MigrateType,
    /// The highest zone type the requester may use (for the watermark checks).
    pub(crate) highest: ZoneType,
    pub(crate) mode: CompactMode,
    /// A direct compaction (an allocation's slow path).
    pub(crate) direct: bool,
    /// Scan every pageblock, skip hints or not.
    pub(crate) ignore_skip_hint: bool,
    /// Stop on the zone's fragmentation score rather than on a free block.
    pub(crate) proactive: bool,
    /// `vm.extfrag_threshold`.
    pub(crate) extfrag_threshold: u32,
    /// `vm.compaction_proactiveness`.
    pub(crate) proactiveness: u32,
}

/// A compaction in progress over one zone.
struct Run<'a, E: EventSink, L: RawLock> {
    zone: &'a Zone<L>,
    cpu: crate::types::CpuId,
    events: &'a E,
    cfg: &'a crate::zone::CoreConfig,
    req: Request,
    /// Start from the zone's ends, not from where the last run left off.
    whole_zone: bool,
    /// The next frame the migrate scanner looks at.
    migrate_pfn: u64,
    /// The first frame of the next pageblock the free scanner looks at.
    free_pfn: u64,
    /// Where in that pageblock it stopped last time, if it stopped inside it (kernel: the
    /// free scanner's `isolate_start_pfn`): the frames before were looked at already.
    free_resume: Option<u64>,
    /// Isolated blocks to move: `migratepages[..nr_migrate_blocks]`. The scanner stops at
    /// `COMPACT_CLUSTER_MAX` pages and each block is at least one, so they fit. (Not a list
    /// through the frames, as the free targets are: these blocks are their owners', who may
    /// free them meanwhile, and a free relinks the frame.)
    migratepages: [(Pfn, Order); COMPACT_CLUSTER_MAX as usize],
    nr_migrate_blocks: usize,
    /// Pages in `migratepages`.
    nr_migratepages: u64,
    /// Isolated free blocks, by order: lists through the frames' links (the blocks are
    /// `Isolated`, on no other list and no one else's), pushed and popped at the tail.
    freepages: [ListHead; NR_PAGE_ORDERS],
    /// Pages in `freepages`.
    nr_freepages: u64,
    /// The free scanner stopped at the MIN watermark.
    contended: bool,
    stats: CompactStats,
}

/// The first frame of the pageblock after the one holding `pfn`.
const fn block_end(pfn: u64) -> u64 {
    (pfn | (PAGEBLOCK_NR_PAGES - 1)) + 1
}

/// The first frame of the pageblock holding `pfn`.
const fn block_start(pfn: u64) -> u64 {
    pfn & !(PAGEBLOCK_NR_PAGES - 1)
}

impl<'a, E: EventSink, L: RawLock> Run<'a, E, L> {
    fn new(
        zone: &'a Zone<L>,
        cpu: crate::types::CpuId,
        events: &'a E,
        cfg: &'a crate::zone::CoreConfig,
        req: Request,
    ) -> Run<'a, E, L> {
        let (start, end) = (zone.start_pfn.0, zone.end_pfn.0);
        let whole = req.order.is_none() || req.proactive;
        let c = &zone.compact;
        let (mut migrate, mut free) = if whole {
            (start, last_block(zone.start_pfn, zone.end_pfn))
        } else {
            (c.cached_migrate[req.mode.cache_slot()].load(Relaxed), c.cached_free.load(Relaxed))
        };
        // Cached positions outside the zone (or a free position off its block grid) restart.
        if free < block_start(start) || free >= end || free != block_start(free) {
            free = last_block(zone.start_pfn, zone.end_pfn);
        }
        if migrate < start || migrate >= end {
            migrate = start;
        }
        Run {
            zone,
            cpu,
            events,
            cfg,
            req,
            whole_zone: whole || migrate == start,
            migrate_pfn: migrate,
            free_pfn: free,
            free_resume: None,
            migratepages: [(Pfn(0), Order(0)); COMPACT_CLUSTER_MAX as usize],
            nr_migrate_blocks: 0,
            nr_migratepages: 0,
            freepages: [ListHead::new(); NR_PAGE_ORDERS],
            nr_freepages: 0,
            contended: false,
            stats: CompactStats::default(),
        }
    }

    /// Have the scanners met (kernel `compact_scanners_met`)?
    fn scanners_met(&self) -> bool {
        self.free_pfn >> PAGEBLOCK_ORDER <= self.migrate_pfn >> PAGEBLOCK_ORDER
    }

    fn lock(&self) -> ZoneLocked<'a, E, L> {
        self.zone.lock(self.cpu, self.events, self.cfg)
    }

    /// Keep the isolated free block at `pfn` as a target of `order`.
    fn push_free(&mut self, pfn: Pfn, order: Order) {
        let zone = self.zone;
        self.freepages[order.index()]
            .push_tail_with(|i| &zone.mem_map[i as usize], zone.index_of(pfn));
    }

    /// The most recently kept free target of `order`.
    fn pop_free(&mut self, order: Order) -> Option<Pfn> {
        let zone = self.zone;
        let (idx, _) = self.freepages[order.index()].pop_tail(&zone.mem_map)?;
        Some(zone.pfn_of(idx))
    }

    fn touch(&self, pfn: u64) {
        if E::ENABLED {
            self.events.touch(self.cpu, MetaLine::Frame(Pfn(pfn)));
        }
    }

    /// Is the run over (kernel `__compact_finished`)?
    fn finished(&mut self) -> Option<CompactResult> {
        let zone = self.zone;
        if self.contended {
            return Some(CompactResult::Contended);
        }
        if self.scanners_met() {
            zone.reset_cached_positions();
            if self.req.direct {
                zone.compact.blockskip_flush.store(true, Relaxed);
            }
            return Some(if self.whole_zone {
                CompactResult::Complete
            } else {
                CompactResult::PartialSkipped
            });
        }
        if self.req.proactive {
            let (low, _) = proactive_wmarks(self.req.proactiveness);
            return (zone.fragmentation_score() <= low).then_some(CompactResult::Success);
        }
        let order = self.req.order?;
        let mt = self.req.mt;
        // A non-movable request that would take a block from another type's list finishes
        // the pageblock being emptied first (sync modes only: async compaction empties only
        // pageblocks of the requester's type), so that the pageblock it then claims is as
        // free as it can be and it does not soon need another one (kernel
        // `__compact_finished`'s `finishing_block`, 4.12 and later). Movable pages are fine
        // in any pageblock, so a movable request stops as soon as a block is there.
        let steal_now = mt == MigrateType::Movable
            || self.req.mode == CompactMode::Async
            || self.migrate_pfn == block_start(self.migrate_pfn);
        // The orders with a free block of the requester's own type (or CMA for a movable
        // request), and of a type in its fallback row: the zone's bitmap of non-empty lists.
        let mut own = zone.free_orders(mt);
        if mt == MigrateType::Movable {
            own |= zone.free_orders(MigrateType::Cma);
        }
        let fallback = mt.fallbacks().iter().fold(0, |b, &f| b | zone.free_orders(f));
        for o in order.0..=MAX_PAGE_ORDER {
            if own & (1 << o) != 0 {
                return Some(CompactResult::Success);
            }
            // A block another type may give up whole (kernel: a suitable fallback that can
            // be stolen).
            if fallback & (1 << o) != 0
                && crate::fallback::can_steal(Order(o), mt, self.cfg.grouping_disabled)
            {
                return steal_now.then_some(CompactResult::Success);
            }
        }
        None
    }

    /// May the migrate scanner take from the pageblock at `start` (kernel
    /// `suitable_migration_source`)? An async direct compaction takes only from pageblocks
    /// of the requester's type (any movable type for a movable request).
    fn suitable_source(&self, start: u64) -> bool {
        if self.req.mode != CompactMode::Async || !self.req.direct {
            return true;
        }
        let block_mt = self.zone.pageblocks.get(Pfn(start));
        if self.req.mt == MigrateType::Movable {
            matches!(block_mt, MigrateType::Movable | MigrateType::Cma)
        } else {
            block_mt == self.req.mt
        }
    }

    /// May a block of `order` be moved for this run (kernel `skip_isolation_on_order`)?
    /// Not one as large as the block wanted (moving it would not help), never one as large
    /// as a pageblock.
    fn movable_order(&self, order: Order) -> bool {
        if order.0 >= PAGEBLOCK_ORDER {
            return false;
        }
        match self.req.order {
            Some(want) if !self.req.proactive => order.0 < want.0,
            _ => true,
        }
    }

    /// Isolate blocks to move from the next pageblock that has any (kernel
    /// `isolate_migratepages`): one pageblock per call, at most `COMPACT_CLUSTER_MAX` pages.
    /// Returns whether anything was isolated.
    fn isolate_migratepages(&mut self) -> bool {
        let zone = self.zone;
        let mut low = self.migrate_pfn.max(zone.start_pfn.0);
        let mut end = block_end(low);
        while end <= self.free_pfn {
            let start = block_start(low).max(zone.start_pfn.0);
            let scan = (self.req.ignore_skip_hint || !zone.pageblocks.skip(Pfn(start)))
                && self.suitable_source(start);
            if !scan {
                low = end;
                end += PAGEBLOCK_NR_PAGES;
                continue;
            }
            let stop = self.isolate_migratepages_block(low, end.min(zone.end_pfn.0));
            self.migrate_pfn = stop;
            return self.nr_migratepages > 0;
        }
        self.migrate_pfn = low;
        false
    }

    /// Does this run give up on a block of the order asked for at the first frame it cannot
    /// isolate (kernel `isolate_migratepages_block`'s `skip_on_failure`, for async direct
    /// compaction)? One frame that cannot move means the block can never be free at that
    /// order, so moving the rest of it would only spend free targets and time. Returns the
    /// order of those blocks.
    fn skip_on_failure(&self) -> Option<Order> {
        if self.req.direct && self.req.mode == CompactMode::Async && !self.req.proactive {
            self.req.order
        } else {
            None
        }
    }

    /// Scan `low..end` of one pageblock for allocated movable blocks; returns where the scan
    /// stopped. A pageblock scanned to its end with nothing taken gets its skip hint.
    ///
    /// In async direct compaction ([`Run::skip_on_failure`]) the scan works in blocks of the
    /// order asked for: a frame that can be neither skipped (free) nor isolated drops what
    /// was isolated in its block and moves on to the next block, and the scan stops at a
    /// block boundary once it holds something, so that what it hands over can make a block.
    fn isolate_migratepages_block(&mut self, low: u64, end: u64) -> u64 {
        let zone = self.zone;
        let skip_order = self.skip_on_failure();
        let order_end = |pfn: u64, o: Order| (pfn | (o.nr_pages().0 - 1)) + 1;
        let mut next_skip = skip_order.map_or(0, |o| order_end(low, o));
        let mut p = low;
        let mut isolated = 0;
        while p < end {
            if let Some(o) = skip_order {
                if p >= next_skip {
                    if isolated > 0 {
                        break;
                    }
                    next_skip = order_end(p, o);
                }
            }
            if self.nr_migratepages >= COMPACT_CLUSTER_MAX {
                break;
            }
            self.stats.migrate_scanned += 1;
            self.touch(p);
            let frame = zone.frame(Pfn(p));
            let info = frame.info();
            let (step, ok) = match info.state {
                FrameState::Buddy if info.order.is_valid() => (info.order.nr_pages().0, true),
                FrameState::Allocated if info.order.is_valid() => {
                    // Movable, handed out whole to one owner (a page_frag page shared by
                    // fragments is pinned), and small enough to be worth moving.
                    let take = info.list == MigrateType::Movable as u8
                        && frame.aux().load(Relaxed) == 1
                        && self.movable_order(info.order)
                        && p + info.order.nr_pages().0 <= end;
                    if take {
                        self.migratepages[self.nr_migrate_blocks] = (Pfn(p), info.order);
                        self.nr_migrate_blocks += 1;
                        self.nr_migratepages += info.order.nr_pages().0;
                        isolated += info.order.nr_pages().0;
                    }
                    (info.order.nr_pages().0, take)
                }
                _ => (1, false),
            };
            p += step;
            if let (false, Some(o)) = (ok, skip_order) {
                // Put back what this block gave and go on at the next block.
                self.nr_migrate_blocks = 0;
                self.nr_migratepages = 0;
                isolated = 0;
                if p < next_skip {
                    p = next_skip;
                    next_skip += o.nr_pages().0;
                }
            }
        }
        if p >= end && isolated == 0 {
            zone.pageblocks.set_skip(Pfn(block_start(low).max(zone.start_pfn.0)), true);
        }
        self.stats.isolated_migrate += isolated;
        p.min(end)
    }

    /// May the free scanner take from the pageblock at `start` (kernel
    /// `suitable_migration_target`)? Not a pageblock that is one free block already, and
    /// only movable (or CMA) pageblocks, so moved blocks stay grouped by mobility.
    fn suitable_target(&self, start: u64) -> bool {
        let zone = self.zone;
        let info = zone.frame(Pfn(start)).info();
        if info.state == FrameState::Buddy && info.order.0 >= PAGEBLOCK_ORDER {
            return false;
        }
        matches!(zone.pageblocks.get(Pfn(start)), MigrateType::Movable | MigrateType::Cma)
    }

    /// Isolate free blocks as targets, walking pageblocks down from `free_pfn` until there
    /// are as many free pages as pages to move (kernel `isolate_freepages`). The free
    /// scanner never enters the pageblock the migrate scanner is in.
    fn isolate_freepages(&mut self) {
        let zone = self.zone;
        let low = block_end(self.migrate_pfn);
        let mut start = self.free_pfn;
        while start >= low {
            let block_lo = start.max(zone.start_pfn.0);
            let hi = (start + PAGEBLOCK_NR_PAGES).min(zone.end_pfn.0);
            // Inside the block it stopped in last time, go on from there.
            let lo =
                self.free_resume.take().filter(|&r| r > block_lo && r < hi).unwrap_or(block_lo);
            let scan = lo < hi
                && (self.req.ignore_skip_hint || !zone.pageblocks.skip(Pfn(block_lo)))
                && self.suitable_target(block_lo);
            if scan {
                let (stop, got) = self.isolate_freepages_block(lo, hi);
                if stop >= hi && got == 0 {
                    zone.pageblocks.set_skip(Pfn(block_lo), true);
                }
                if self.contended {
                    self.free_pfn = start;
                    self.free_resume = Some(stop);
                    return;
                }
                if self.nr_freepages >= self.nr_migratepages {
                    // Resume in this pageblock where the scan stopped if it may hold more,
                    // else below it.
                    if stop < hi {
                        self.free_pfn = start;
                        self.free_resume = Some(stop);
                    } else {
                        self.free_pfn = start.saturating_sub(PAGEBLOCK_NR_PAGES);
                    }
                    return;
                }
            }
            if start < PAGEBLOCK_NR_PAGES {
                start = 0;
                break;
            }
            start -= PAGEBLOCK_NR_PAGES;
        }
        self.free_pfn = start.min(block_start(self.migrate_pfn));
    }

    /// Take free blocks in `lo..hi` off the buddy lists; returns (where the scan stopped,
    /// pages taken). Each is taken only while the zone stays above MIN plus the block (kernel
    /// `__isolate_free_page`); otherwise the run is contended and stops.
    fn isolate_freepages_block(&mut self, lo: u64, hi: u64) -> (u64, u64) {
        let zone = self.zone;
        let mut locked: Option<ZoneLocked<'a, E, L>> = None;
        let mut p = lo;
        let mut got = 0;
        while p < hi {
            self.stats.free_scanned += 1;
            self.touch(p);
            let info = zone.frame(Pfn(p)).info();
            let step = match info.state {
                FrameState::Buddy if info.order.is_valid() => {
                    let zl = locked.get_or_insert_with(|| self.lock());
                    // Under the lock: still a free block of that order?
                    let now = zone.frame(Pfn(p)).info();
                    if now.state != FrameState::Buddy || now.order != info.order {
                        1
                    } else {
                        let order = now.order;
                        let mark = zone.wmark_pages(WMARK_MIN) + order.nr_pages().0;
                        if !zone.watermark_ok(Order(0), mark, ZoneType::Dma, AllocFlags::CMA) {
                            self.contended = true;
                            break;
                        }
                        let mt = MigrateType::from_u8(now.list).unwrap_or(MigrateType::Movable);
                        zl.del_from_free_list(Pfn(p), order, mt);
                        zl.account_freepages(mt, -(order.nr_pages().0 as i64));
                        zone.frame(Pfn(p)).set_info(FrameInfo {
                            state: FrameState::Isolated,
                            order,
                            list: MigrateType::Movable as u8,
                        });
                        self.push_free(Pfn(p), order);
                        self.nr_freepages += order.nr_pages().0;
                        got += order.nr_pages().0;
                        if self.nr_freepages >= self.nr_migratepages {
                            p += order.nr_pages().0;
                            break;
                        }
                        order.nr_pages().0
                    }
                }
                FrameState::Allocated if info.order.is_valid() => info.order.nr_pages().0,
                _ => 1,
            };
            p += step;
        }
        self.stats.isolated_free += got;
        (p.min(hi), got)
    }

    /// A free target of `order` from the isolated free blocks, splitting a larger one and
    /// running the free scanner once if none is left (kernel `compaction_alloc`).
    fn target(&mut self, order: Order) -> Option<Pfn> {
        for attempt in 0..2 {
            if let Some(o) =
                (order.0..=MAX_PAGE_ORDER).find(|&o| !self.freepages[o as usize].is_empty())
            {
                let pfn = self.pop_free(Order(o))?;
                // Keep the upper halves as isolated blocks of their own.
                for k in (order.0..o).rev() {
                    let half = pfn.add(Order(k).nr_pages());
                    self.zone.frame(half).set_info(FrameInfo {
                        state: FrameState::Isolated,
                        order: Order(k),
                        list: MigrateType::Movable as u8,
                    });
                    self.push_free(half, Order(k));
                }
                self.zone.frame(pfn).set_info(FrameInfo {
                    state: FrameState::Isolated,
                    order,
                    list: MigrateType::Movable as u8,
                });
                self.nr_freepages -= order.nr_pages().0;
                return Some(pfn);
            }
            if attempt == 0 && !self.scanners_met() && !self.contended {
                self.isolate_freepages();
            }
        }
        None
    }

    /// Move the isolated blocks (kernel `migrate_pages` with `compaction_alloc`): each gets a
    /// target and its owner's verdict; moved sources are freed and merge.
    fn migrate_pages(&mut self, m: &mut dyn Migrate) {
        let zone = self.zone;
        let (pages, nr) = (self.migratepages, self.nr_migrate_blocks);
        let mut moved = [(Pfn(0), Order(0)); COMPACT_CLUSTER_MAX as usize];
        let mut nr_moved = 0;
        // A block stayed where it was for want of a target or by its owner's refusal (one
        // its owner freed meanwhile is gone, which is as good as moved).
        let mut not_moved = false;
        for &(src, order) in &pages[..nr] {
            let n = order.nr_pages().0;
            // The owner may have freed the block since it was isolated: skip it then.
            let info = zone.frame(src).info();
            if info.state != FrameState::Allocated || info.order != order {
                self.stats.failed += n;
                continue;
            }
            let Some(dst) = self.target(order) else {
                self.stats.failed += n;
                not_moved = true;
                continue;
            };
            // The target stays Isolated (unfreeable) until the owner has taken it.
            let target = Target { pfn: dst, order, _call: core::marker::PhantomData };
            if m.migrate(src, target, order) {
                zone.frame(dst).aux().store(1, Relaxed);
                zone.frame(dst).set_info(FrameInfo {
                    state: FrameState::Allocated,
                    order,
                    list: info.list,
                });
                self.stats.migrated += n;
                moved[nr_moved] = (src, order);
                nr_moved += 1;
            } else {
                self.push_free(dst, order);
                self.nr_freepages += n;
                self.stats.failed += n;
                not_moved = true;
            }
        }
        self.nr_migratepages = 0;
        self.nr_migrate_blocks = 0;
        // A block that did not move leaves its block of the order asked for unfreeable:
        // async direct compaction skips the rest of that block (kernel `compact_zone` after
        // `migrate_pages` fails).
        if let (true, Some(o)) = (not_moved, self.skip_on_failure()) {
            if self.migrate_pfn > 0 {
                let mask = o.nr_pages().0 - 1;
                self.migrate_pfn = ((self.migrate_pfn - 1) | mask) + 1;
            }
        }
        if nr_moved == 0 {
            return;
        }
        let mut zl = self.lock();
        for &(src, order) in &moved[..nr_moved] {
            // Allocated → Freeing, as any free: a source the owner freed against the
            // contract is left alone rather than freed twice.
            if zone.frame(src).claim_for_free(order).is_ok() {
                zl.free_one_page(src, order, crate::buddy::Fpi::None);
            }
        }
    }

    /// Give the unused free targets back to the buddy lists (kernel `release_free_list`).
    /// Not counted as frees: they were never allocated. Returns the highest frame given
    /// back, if any.
    fn release_freepages(&mut self) -> Option<u64> {
        if self.freepages.iter().all(ListHead::is_empty) {
            return None;
        }
        let mut highest = 0;
        let zone = self.zone;
        let mut zl = self.lock();
        for (o, list) in self.freepages.iter_mut().enumerate() {
            // Oldest first, as they were isolated.
            while let Some((idx, _)) = list.pop_head_with(|i| &zone.mem_map[i as usize]) {
                let pfn = zone.pfn_of(idx);
                highest = highest.max(pfn.0);
                zl.free_one_page(pfn, Order(o as u8), crate::buddy::Fpi::None);
            }
        }
        self.nr_freepages = 0;
        Some(highest)
    }

    /// Run to the end (kernel `compact_zone`, after the suitability checks).
    fn run(&mut self, m: &mut dyn Migrate) -> CompactResult {
        let result = loop {
            if let Some(r) = self.finished() {
                break r;
            }
            if !self.isolate_migratepages() {
                continue;
            }
            self.migrate_pages(m);
        };
        let released = self.release_freepages();
        let c = &self.zone.compact;
        if !self.scanners_met() && !self.whole_zone_request() {
            // The next run resumes here; the free scanner goes back up to the targets just
            // given back, so that they are found again.
            c.cached_migrate[self.req.mode.cache_slot()].store(self.migrate_pfn, Relaxed);
            let free = released.map_or(self.free_pfn, |p| self.free_pfn.max(block_start(p)));
            c.cached_free.store(free, Relaxed);
        }
        result
    }

    /// A run over the whole zone by request, which leaves the cached positions alone.
    fn whole_zone_request(&self) -> bool {
        self.req.order.is_none() || self.req.proactive
    }
}

/// Compact `zone` for `req` with the owner `m` (kernel `compact_zone`, with
/// `compaction_suit_allocation_order` first for an order request). Counts the scanners'
/// work in the zone's counters.
pub(crate) fn compact_zone<E: EventSink, L: RawLock>(
    zone: &Zone<L>,
    cpu: crate::types::CpuId,
    events: &E,
    cfg: &crate::zone::CoreConfig,
    req: Request,
    m: &mut dyn Migrate,
) -> CompactOutcome {
    if let (Some(order), false) = (req.order, req.proactive) {
        // The slow path's and kcompactd's watermark, MIN.
        let mark = zone.wmark_pages(WMARK_MIN);
        if zone.watermark_ok(order, mark, req.highest, AllocFlags::CMA) {
            return CompactOutcome {
                result: CompactResult::Success,
                stats: CompactStats::default(),
            };
        }
        if !zone.compaction_suitable(order, req.highest, req.extfrag_threshold) {
            return CompactOutcome {
                result: CompactResult::Skipped,
                stats: CompactStats::default(),
            };
        }
        if zone.compaction_restarting(order) {
            zone.reset_isolation_suitable();
        }
    }
    let mut run = Run::new(zone, cpu, events, cfg, req);
    let result = run.run(m);
    let s = run.stats;
    let counters = &zone.counters;
    counters.add_shared(Counter::CompactMigrateScanned, s.migrate_scanned);
    counters.add_shared(Counter::CompactFreeScanned, s.free_scanned);
    counters.add_shared(Counter::CompactIsolated, s.isolated_migrate + s.isolated_free);
    counters.add_shared(Counter::PgmigrateSuccess, s.migrated);
    counters.add_shared(Counter::PgmigrateFail, s.failed);
    CompactOutcome { result, stats: s }
}

/// Does `result` count as a failure that defers the zone (after a sync compaction)?
pub(crate) const fn defers(result: CompactResult) -> bool {
    matches!(result, CompactResult::Complete | CompactResult::PartialSkipped)
}

/// The proactive watermarks of `proactiveness` (kernel `fragmentation_score_wmark`): compact
/// above the high one, stop at the low one; the low one never below 5, so that a
/// proactiveness near 100 does not compact without end.
pub const fn proactive_wmarks(proactiveness: u32) -> (u32, u32) {
    let low = 100u32.saturating_sub(proactiveness);
    let low = if low < 5 { 5 } else { low };
    let high = if low + 10 > 100 { 100 } else { low + 10 };
    (low, high)
}

/// kcompactd's pending request packed in one word: `order + 1` in the low byte, the highest
/// zone type index above it; 0 for none.
const fn pack_wake(order: Order, highest: ZoneType) -> u64 {
    (order.0 as u64 + 1) | (highest.index() as u64) << 8
}

impl<E: EventSink, L: RawLock> PageAllocator<E, L> {
    /// The zones of node `n`, by type.
    fn zones_of<'a>(&'a self, n: &'a crate::page_alloc::Node) -> impl Iterator<Item = &'a Zone<L>> {
        n.zones.iter().flatten().map(|z| &self.zones[z.index()])
    }

    /// The compaction request of this allocator's tunables.
    fn request(&self, order: Option<Order>, mt: MigrateType, highest: ZoneType) -> Request {
        Request {
            order,
            mt,
            highest,
            mode: CompactMode::SyncLight,
            direct: false,
            ignore_skip_hint: false,
            proactive: false,
            extfrag_threshold: self.tunables.extfrag_threshold,
            proactiveness: self.tunables.compaction_proactiveness,
        }
    }

    /// Direct compaction in an allocation's slow path, then one more try (kernel
    /// `__alloc_pages_direct_compact` over `try_to_compact_pages`). Returns the block, if
    /// the try found one, and the best zone result.
    pub(crate) fn direct_compact(
        &self,
        w: &Walk<'_, L>,
        flags: AllocFlags,
        mode: CompactMode,
        m: &mut dyn Migrate,
    ) -> (Option<Pfn>, CompactResult) {
        let mut rc = CompactResult::Skipped;
        // Moving a page may need I/O (writeback): a GFP_NOIO context does not compact.
        if !w.gfp.intersects(crate::gfp::Gfp::IO) {
            return (None, rc);
        }
        for zi in w.zonelist.iter() {
            let z = &self.zones[zi.index()];
            if z.ztype > w.highest
                || (w.gfp.intersects(crate::gfp::Gfp::THISNODE) && z.node != w.preferred.node)
            {
                continue;
            }
            if mode != CompactMode::Sync && z.compaction_deferred(w.order) {
                rc = rc.max(CompactResult::Deferred);
                continue;
            }
            let req =
                Request { mode, direct: true, ..self.request(Some(w.order), w.mt, w.highest) };
            let out = compact_zone(z, w.cpu.id(), &self.events, &self.cfg, req, m);
            rc = rc.max(out.result);
            if out.result == CompactResult::Success {
                z.compaction_defer_reset(w.order, false);
                break;
            }
            if mode != CompactMode::Async && defers(out.result) {
                z.defer_compaction(w.order);
            }
        }
        if rc == CompactResult::Skipped {
            return (None, rc);
        }
        self.counters.add_shared(Counter::CompactStall, 1);
        let page = self.get_page_from_freelist(w, flags);
        match page.and_then(|p| self.zone_of(p)) {
            Some(z) => {
                z.compact.blockskip_flush.store(false, Relaxed);
                z.compaction_defer_reset(w.order, true);
                self.counters.add_shared(Counter::CompactSuccess, 1);
            }
            None => self.counters.add_shared(Counter::CompactFail, 1),
        }
        (page, rc)
    }

    /// Ask `node`'s kcompactd to compact for `order` (kernel `wakeup_kcompactd`): the
    /// largest order and the lowest highest-zone of the requests since its last run.
    pub(crate) fn wake_kcompactd(&self, node: NodeId, order: Order, highest: ZoneType) {
        let Some(n) = self.nodes.get(node.index()) else { return };
        let _ = n.kcompactd_wake.fetch_update(Relaxed, Relaxed, |cur| {
            if cur == 0 {
                return Some(pack_wake(order, highest));
            }
            let cur_order = Order(((cur & 0xff) - 1) as u8);
            let cur_highest = ((cur >> 8) & 0xff) as usize;
            let o = if order.0 > cur_order.0 { order } else { cur_order };
            let h = ZoneType::ALL[cur_highest.min(highest.index())];
            Some(pack_wake(o, h))
        });
    }

    /// The order `node`'s kcompactd was woken for and has not run yet, if any.
    pub fn kcompactd_pending(&self, node: NodeId) -> Option<Order> {
        let w = self.nodes.get(node.index())?.kcompactd_wake.load(Relaxed);
        (w != 0).then(|| Order(((w & 0xff) - 1) as u8))
    }

    /// `node`'s fragmentation score (kernel `fragmentation_score_node`): the sum of its
    /// populated zones' scores, each scaled by the zone's share of the node's present pages
    /// (`score × present / (node present + 1)`), so that a small zone barely counts.
    pub fn fragmentation_score_node(&self, node: NodeId) -> u32 {
        let Some(n) = self.nodes.get(node.index()) else { return 0 };
        let zones = || self.zones_of(n);
        let node_present: u64 = zones().map(|z| z.present_pages).sum();
        zones()
            .filter(|z| z.is_populated())
            .map(|z| u64::from(z.fragmentation_score()) * z.present_pages / (node_present + 1))
            .sum::<u64>() as u32
    }

    /// Compact one zone on request (kernel `compact_zone`, as kcompactd asks: an unmovable
    /// request, whose success is a free block of `order` it could take). `order` `None`
    /// compacts the whole zone, skip hints ignored, as the `compact_memory` sysctl does.
    ///
    /// # Errors
    /// [`CompactError`] for a CPU, zone or order that does not exist; nothing is done then.
    pub fn compact_zone(
        &self,
        cpu: Cpu,
        zone: ZoneIdx,
        order: Option<Order>,
        mode: CompactMode,
        m: &mut dyn Migrate,
    ) -> Result<CompactOutcome, CompactError> {
        if !self.owns(cpu) {
            return Err(CompactError::InvalidCpu(cpu.id()));
        }
        let z = self.zones.get(zone.index()).ok_or(CompactError::InvalidZone(zone))?;
        if let Some(o) = order.filter(|o| !o.is_valid()) {
            return Err(CompactError::InvalidOrder(o));
        }
        let req = Request {
            mode,
            ignore_skip_hint: order.is_none(),
            ..self.request(order, MigrateType::Unmovable, ZoneType::Movable)
        };
        Ok(compact_zone(z, cpu.id(), &self.events, &self.cfg, req, m))
    }

    /// One wakeup of `node`'s kcompactd (kernel `kcompactd`): compact for the order an
    /// allocation woke it for, or, with nothing pending, proactively while the node's
    /// fragmentation score is above the high mark that `compaction_proactiveness` sets;
    /// then, as before it sleeps, clear the skip hints a direct compaction asked to flush.
    /// The caller runs it when `kcompactd_pending` says so, or every 500 ms of its time
    /// for proactive compaction (the kernel's `HPAGE_FRAG_CHECK_INTERVAL_MSEC`). Returns
    /// what it did, or `None` if it had nothing to do.
    ///
    /// # Errors
    /// [`CompactError`] for a CPU or node that does not exist; nothing is done then.
    pub fn kcompactd(
        &self,
        cpu: Cpu,
        node: NodeId,
        m: &mut dyn Migrate,
    ) -> Result<Option<CompactOutcome>, CompactError> {
        if !self.owns(cpu) {
            return Err(CompactError::InvalidCpu(cpu.id()));
        }
        let n = self.nodes.get(node.index()).ok_or(CompactError::InvalidNode(node))?;
        let zones = || self.zones_of(n).filter(|z| z.is_populated());
        let wake = n.kcompactd_wake.swap(0, Relaxed);
        let mut stats = CompactStats::default();
        let mut result = None;
        if wake != 0 {
            let order = Order(((wake & 0xff) - 1) as u8);
            let highest =
                ZoneType::ALL[(((wake >> 8) & 0xff) as usize).min(ZoneType::ALL.len() - 1)];
            let threshold = self.tunables.extfrag_threshold;
            // A zone that can serve the order already, or where compaction could not help,
            // needs nothing; kcompactd is woken only if some zone does (kernel
            // `kcompactd_node_suitable`). Each zone is judged as its own highest zone.
            let can_serve = |z: &Zone<L>| {
                z.watermark_ok(order, z.wmark_pages(WMARK_MIN), z.ztype, AllocFlags::default())
            };
            let wanted = |z: &&Zone<L>| z.ztype <= highest;
            if !zones()
                .filter(wanted)
                .any(|z| !can_serve(z) && z.compaction_suitable(order, highest, threshold))
            {
                return Ok(None);
            }
            self.counters.add_shared(Counter::CompactDaemonWake, 1);
            for z in zones().filter(wanted) {
                if z.compaction_deferred(order)
                    || can_serve(z)
                    || !z.compaction_suitable(order, z.ztype, threshold)
                {
                    continue;
                }
                let req = self.request(Some(order), MigrateType::Unmovable, z.ztype);
                let out = compact_zone(z, cpu.id(), &self.events, &self.cfg, req, m);
                if out.result == CompactResult::Success {
                    z.compaction_defer_reset(order, false);
                } else if defers(out.result) {
                    // Free pages stranded on pagesets may be what the order lacks.
                    self.drain_all_pages(cpu, Some(z.idx));
                    z.defer_compaction(order);
                }
                result = result.max(Some(out.result));
                stats.add(&out.stats);
            }
        } else if self.tunables.compaction_proactiveness > 0 {
            let defer = n.proactive_defer.load(Relaxed);
            let (_, high) = proactive_wmarks(self.tunables.compaction_proactiveness);
            if defer > 0 {
                n.proactive_defer.store(defer - 1, Relaxed);
            } else if self.fragmentation_score_node(node) > high {
                self.counters.add_shared(Counter::CompactDaemonWake, 1);
                let before = self.fragmentation_score_node(node);
                for z in zones() {
                    let req = Request {
                        proactive: true,
                        ignore_skip_hint: true,
                        ..self.request(None, MigrateType::Unmovable, ZoneType::Movable)
                    };
                    let out = compact_zone(z, cpu.id(), &self.events, &self.cfg, req, m);
                    result = result.max(Some(out.result));
                    stats.add(&out.stats);
                }
                if self.fragmentation_score_node(node) >= before {
                    n.proactive_defer.store(1 << COMPACT_MAX_DEFER_SHIFT, Relaxed);
                }
            }
        }
        self.flush_skip_hints(zones());
        let out = result.map(|result| CompactOutcome { result, stats });
        if let Some(o) = &out {
            self.counters.add_shared(Counter::CompactDaemonMigrateScanned, o.stats.migrate_scanned);
            self.counters.add_shared(Counter::CompactDaemonFreeScanned, o.stats.free_scanned);
        }
        Ok(out)
    }

    /// kswapd goes to sleep on `node` (kernel `reset_isolation_suitable` in
    /// `kswapd_try_to_sleep`): clear the skip hints and cached positions of every zone of the
    /// node where a direct compaction's scanners met since the last time. A caller that models
    /// kswapd calls it there; `kcompactd` does the same before it sleeps.
    ///
    /// # Errors
    /// [`CompactError::InvalidNode`] for a node that does not exist.
    pub fn reset_isolation_suitable(&self, node: NodeId) -> Result<(), CompactError> {
        let n = self.nodes.get(node.index()).ok_or(CompactError::InvalidNode(node))?;
        self.flush_skip_hints(self.zones_of(n));
        Ok(())
    }

    /// Clear the skip hints of those of `zones` a direct compaction asked to flush.
    fn flush_skip_hints<'z>(&self, zones: impl Iterator<Item = &'z Zone<L>>)
    where
        L: 'z,
    {
        for z in zones {
            if z.take_blockskip_flush() {
                z.reset_isolation_suitable();
            }
        }
    }

    /// Compact every zone of `node` whole, skip hints ignored (the kernel's
    /// `/sys/devices/system/node/nodeN/compact`).
    ///
    /// # Errors
    /// [`CompactError`] for a CPU or node that does not exist; nothing is done then.
    pub fn compact_node(
        &self,
        cpu: Cpu,
        node: NodeId,
        m: &mut dyn Migrate,
    ) -> Result<CompactOutcome, CompactError> {
        if !self.owns(cpu) {
            return Err(CompactError::InvalidCpu(cpu.id()));
        }
        let n = self.nodes.get(node.index()).ok_or(CompactError::InvalidNode(node))?;
        let mut stats = CompactStats::default();
        let mut result = CompactResult::Skipped;
        for z in self.zones_of(n) {
            if !z.is_populated() {
                continue;
            }
            let req = Request {
                mode: CompactMode::Sync,
                ignore_skip_hint: true,
                ..self.request(None, MigrateType::Unmovable, ZoneType::Movable)
            };
            let out = compact_zone(z, cpu.id(), &self.events, &self.cfg, req, m);
            result = result.max(out.result);
            stats.add(&out.stats);
        }
        Ok(CompactOutcome { result, stats })
    }
}

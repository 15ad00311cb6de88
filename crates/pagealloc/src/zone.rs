//! A zone: its frames, its buddy free areas behind the zone lock, its watermarks and flags.
//!
//! Locking: `Zone::lock` (the zone lock) protects `ZoneFree` (the free lists and the
//! highatomic count), every pageblock relabel, and every mem_map entry whose frame heads a free
//! buddy block. The atomics outside the lock (`nr_free_pages`, the free-area summaries,
//! watermarks, flags) are written under it, or by sizing updates, and read racily by
//! watermark checks, as the kernel reads them.

use crate::sync::{AtomicU32, AtomicU64, Ordering::Relaxed};

use crate::compact_state::CompactState;
use crate::events::{EventSink, MetaLine};
use crate::hot::frames_unchecked;
use crate::list::ListHead;
use crate::mem_map::{Frame, FrameInfo, FrameState, NIL};
use crate::migratetype::{MigrateType, MIGRATE_TYPES};
use crate::pageblock::Pageblocks;
use crate::pcp::{PcpSlot, PcpSnapshot};
use crate::stats::{Counter, Counters};
use crate::sync::{Mutex, MutexGuard, RawLock, RawSpinLock};
use crate::table::{Carver, Table};
use crate::types::{
    CpuId, NodeId, NrPages, Order, Pfn, ZoneIdx, ZoneType, NR_PAGE_ORDERS, NR_ZONE_TYPES,
};

pub(crate) use crate::zone_flags as flags;

/// Watermark indices (kernel `enum zone_watermarks`).
pub const WMARK_MIN: usize = 0;
/// The low watermark.
pub const WMARK_LOW: usize = 1;
/// The high watermark.
pub const WMARK_HIGH: usize = 2;
/// The promotion watermark.
pub const WMARK_PROMO: usize = 3;

/// The largest [`Zone::fast_floor`], and its value until the watermarks are set: no count of
/// free pages reaches it, and a reserve or a block's pages added to it cannot overflow.
pub(crate) const FLOOR_NEVER: u64 = u64::MAX >> 1;

/// Free blocks of one order: a list per migratetype. The order's block count is the zone's
/// `area_nr_free` (invariant: it equals `Σ lists[mt].len()`).
#[derive(Debug, Default)]
pub struct FreeArea {
    pub(crate) lists: [ListHead; MIGRATE_TYPES],
}

/// What the zone lock protects.
#[derive(Debug, Default)]
pub struct ZoneFree {
    pub(crate) area: [FreeArea; NR_PAGE_ORDERS],
    /// Pages in HIGHATOMIC-labelled pageblocks.
    pub(crate) nr_reserved_highatomic: u64,
}

/// One zone of one node; `L` is the allocator's lock type (the zone lock and every pageset
/// lock are `L`).
#[derive(Debug)]
pub struct Zone<L: RawLock = RawSpinLock> {
    pub(crate) idx: ZoneIdx,
    pub(crate) node: NodeId,
    pub(crate) ztype: ZoneType,
    /// First frame of the span.
    pub(crate) start_pfn: Pfn,
    /// One past the last frame of the span.
    pub(crate) end_pfn: Pfn,
    /// Frames in the span that exist (holes excluded).
    pub(crate) present_pages: u64,
    /// Frames handed to the allocator.
    pub(crate) managed_pages: AtomicU64,
    /// Managed frames in CMA pageblocks.
    pub(crate) cma_pages: u64,
    /// One entry per frame of the span; index = pfn - start_pfn.
    pub(crate) mem_map: Table<Frame>,
    pub(crate) pageblocks: Pageblocks,
    lock: Mutex<L, ZoneFree>,
    /// NR_FREE_PAGES: pages in buddy lists, ISOLATE lists excluded (PCP pages are not free).
    pub(crate) nr_free_pages: AtomicU64,
    /// NR_FREE_CMA_PAGES.
    pub(crate) nr_free_cma: AtomicU64,
    /// Free pages on HIGHATOMIC lists (6.12+ watermark math).
    pub(crate) nr_free_highatomic: AtomicU64,
    /// Free blocks of each order, all lists (the kernel's `free_area[order].nr_free`): the
    /// one count, changed by the zone-lock holder on every list insertion and removal.
    ///
    /// Memory ordering: only the zone-lock holder writes it (a load and a store, no
    /// read-modify-write: the lock serialises writers), so a reader holding the lock sees the
    /// exact count (the lock's acquire orders it after the previous holder's stores). Readers
    /// without the lock (`nr_free`: compaction's fragmentation index, `/proc/buddyinfo`) get
    /// some recent value, `Relaxed`, as the kernel reads `nr_free` without the lock; nothing
    /// derives an address or a list operation from such a read.
    area_nr_free: [AtomicU64; NR_PAGE_ORDERS],
    /// The bitmap of non-empty free lists: bit `o` of word `mt` is set iff the (`o`, `mt`)
    /// list has a member. Toggled only when a list goes empty or non-empty (`list_toggled`),
    /// not on every insertion and removal; 6 words of 32 bits per zone.
    ///
    /// Memory ordering, as for `area_nr_free`: written only under the zone lock, so under the
    /// lock it is exact and the buddy code decides by it (`rmqueue_smallest` finds its order,
    /// and the fallback search its order and type, by a bit scan instead of probing each
    /// list; a set bit promises a list head). Lock-free readers (`has_free`, the watermark
    /// check's "a block of this order on a usable list", compaction's finish test) read it
    /// `Relaxed` as a hint, as the kernel reads `free_area_empty()` racily, and act on it only
    /// by taking the lock, where it is exact again.
    pub(crate) free_orders: [AtomicU32; MIGRATE_TYPES],
    /// Unboosted watermarks, indexed by `WMARK_*`.
    pub(crate) watermark: [AtomicU64; 4],
    pub(crate) watermark_boost: AtomicU64,
    /// HIGH + boost + the free pages a request may not count (HIGHATOMIC and CMA), kept
    /// current wherever one of them changes (`update_fast_floor`): free pages above it and the
    /// request's `lowmem_reserve` (and, above order 0, the block's other pages, with a block
    /// of the order on a PCP type's list) pass `watermark_fast` at HIGH whatever the request's
    /// flags, so the allocation fast path tests one sum instead of recomputing it
    /// ([`clears_high_fast`](Self::clears_high_fast)). At most [`FLOOR_NEVER`] (its value
    /// before the watermarks are set), so that sum needs no saturation.
    pub(crate) fast_floor: AtomicU64,
    /// `lowmem_reserve[highest_zoneidx]`: pages kept back from requests that could have used a
    /// higher zone.
    pub(crate) lowmem_reserve: [AtomicU64; NR_ZONE_TYPES],
    pub(crate) flags: AtomicU32,
    /// Counters owned by the zone lock.
    pub(crate) counters: Counters,
    /// One pageset per CPU, indexed by CPU number.
    pub(crate) pcp: Table<PcpSlot<L>>,
    /// Where compaction's scanners left off and its deferral state.
    pub(crate) compact: CompactState,
    /// Does ALLOC_NOFRAGMENT apply to requests that prefer this zone, when the policy's
    /// switch is on (kernel `alloc_flags_nofragment`)? A Normal zone whose node has a
    /// populated DMA32 zone to take the overflow, or any Normal zone of a one-node machine.
    /// Set when the zones are built: which zones have pages never changes afterwards.
    pub(crate) nofragment: bool,
    /// `zone_pcp_disable` calls not yet matched by `zone_pcp_enable`: while non-zero every
    /// pageset of the zone has high 0 and batch 1. Written under the allocator's
    /// `pcp_batch_high` lock.
    pub(crate) pcp_disabled: AtomicU32,
}

impl<L: RawLock> Zone<L> {
    /// A zone spanning `start..end` with every frame `Tail` and nothing free yet (the
    /// allocator then marks the holes `Reserved` and frees the rest). Its tables come from
    /// `carver`: `None` if the memory for its frames' metadata or its pagesets cannot be had.
    pub(crate) fn new(
        carver: &mut Carver,
        idx: ZoneIdx,
        node: NodeId,
        ztype: ZoneType,
        start: Pfn,
        end: Pfn,
        nr_cpus: u32,
    ) -> Option<Zone<L>> {
        let n = usize::try_from(end.0 - start.0).ok()?;
        let mem_map = Frame::table(carver, n)?;
        let pageblocks = Pageblocks::new(carver, start, end, MigrateType::Movable)?;
        let pcp = carver.table(nr_cpus as usize, |_| PcpSlot::new())?;
        Some(Zone {
            idx,
            node,
            ztype,
            start_pfn: start,
            end_pfn: end,
            present_pages: 0,
            managed_pages: AtomicU64::new(0),
            cma_pages: 0,
            mem_map,
            pageblocks,
            lock: Mutex::new(ZoneFree::default()),
            nr_free_pages: AtomicU64::new(0),
            nr_free_cma: AtomicU64::new(0),
            nr_free_highatomic: AtomicU64::new(0),
            area_nr_free: core::array::from_fn(|_| AtomicU64::new(0)),
            free_orders: core::array::from_fn(|_| AtomicU32::new(0)),
            watermark: core::array::from_fn(|_| AtomicU64::new(0)),
            watermark_boost: AtomicU64::new(0),
            fast_floor: AtomicU64::new(FLOOR_NEVER),
            lowmem_reserve: core::array::from_fn(|_| AtomicU64::new(0)),
            flags: AtomicU32::new(0),
            counters: Counters::default(),
            pcp,
            compact: CompactState::new(start, end),
            nofragment: false,
            pcp_disabled: AtomicU32::new(0),
        })
    }

    /// Index of this zone in its allocator.
    pub fn idx(&self) -> ZoneIdx {
        self.idx
    }

    /// Node.
    pub fn node(&self) -> NodeId {
        self.node
    }

    /// Zone type.
    pub fn zone_type(&self) -> ZoneType {
        self.ztype
    }

    /// First frame of the span.
    pub fn start_pfn(&self) -> Pfn {
        self.start_pfn
    }

    /// Frames spanned, holes included.
    pub fn spanned_pages(&self) -> NrPages {
        self.end_pfn.offset_from(self.start_pfn)
    }

    /// Frames that exist.
    pub fn present_pages(&self) -> NrPages {
        NrPages(self.present_pages)
    }

    /// Frames the allocator manages.
    pub fn managed_pages(&self) -> NrPages {
        NrPages(self.managed_pages.load(Relaxed))
    }

    /// Managed frames in CMA areas.
    pub fn cma_pages(&self) -> NrPages {
        NrPages(self.cma_pages)
    }

    /// Has the zone any managed memory?
    pub fn is_populated(&self) -> bool {
        self.managed_pages.load(Relaxed) > 0
    }

    /// NR_FREE_PAGES: pages on the buddy lists (ISOLATE excluded).
    pub fn free_pages(&self) -> NrPages {
        NrPages(self.nr_free_pages.load(Relaxed))
    }

    /// Free pages on CMA lists.
    pub fn free_cma_pages(&self) -> NrPages {
        NrPages(self.nr_free_cma.load(Relaxed))
    }

    /// Watermark `w` (`WMARK_*`) including the current boost, as the kernel's accessors add it
    /// (saturating). An index above [`WMARK_PROMO`](crate::WMARK_PROMO) names no watermark and reads as
    /// `u64::MAX`, a mark no zone's free pages reach.
    #[inline]
    pub fn wmark_pages(&self, w: usize) -> u64 {
        match self.watermark.get(w) {
            Some(mark) => mark.load(Relaxed).saturating_add(self.watermark_boost.load(Relaxed)),
            None => u64::MAX,
        }
    }

    /// The current watermark boost.
    pub fn watermark_boost(&self) -> u64 {
        self.watermark_boost.load(Relaxed)
    }

    /// Protection against requests whose highest allowed zone is `highest`.
    pub fn lowmem_reserve(&self, highest: ZoneType) -> u64 {
        self.lowmem_reserve[highest.index()].load(Relaxed)
    }

    /// Recompute [`fast_floor`](Self::fast_floor) after a change of the HIGH watermark, the
    /// boost, or the free HIGHATOMIC or CMA pages.
    pub(crate) fn update_fast_floor(&self) {
        let floor = self
            .wmark_pages(WMARK_HIGH)
            .saturating_add(self.nr_free_highatomic.load(Relaxed))
            .saturating_add(self.nr_free_cma.load(Relaxed));
        self.fast_floor.store(floor.min(FLOOR_NEVER), Relaxed);
    }

    /// Does a request of `order` whose highest zone is `highest` surely pass `watermark_fast`
    /// at HIGH (with or without ALLOC_CMA and reserves)? A sufficient test: `false` only
    /// means the full check must decide. Free pages above HIGH + boost + reserve + every free
    /// page the request might not count (and, above order 0, the block's pages beyond its
    /// first) leave more usable pages than the full check asks; above order 0 a block of at
    /// least `order` on a PCP type's list is one the full check finds whatever the flags add
    /// (CMA, HIGHATOMIC). Saves the out-of-line full check on every allocation above order 0
    /// while the zone is comfortably above HIGH.
    #[inline]
    pub(crate) fn clears_high_fast(&self, order: Order, highest: ZoneType) -> bool {
        // No overflow: the floor is at most FLOOR_NEVER (2^63 - 1) and a reserve at most the
        // node's managed pages (below 2^52: frames of a 64-bit physical address space).
        let floor = self.fast_floor.load(Relaxed) + self.lowmem_reserve(highest);
        if order.0 == 0 {
            return self.nr_free_pages.load(Relaxed) > floor;
        }
        if !order.is_valid() {
            return false;
        }
        let beyond_first = (1u64 << order.0) - 1;
        self.nr_free_pages.load(Relaxed) > floor + beyond_first
            && self.pcp_type_orders() >> order.0 != 0
    }

    /// The orders with a block on one of the PCP types' lists (the bitmap of non-empty
    /// lists, racy): the lists every request's full watermark check may use.
    #[inline]
    pub(crate) fn pcp_type_orders(&self) -> u32 {
        MigrateType::PCPTYPES.iter().fold(0, |acc, &mt| acc | self.free_orders(mt))
    }

    /// Number of free blocks of `order` (all lists), racy; 0 for an order above
    /// `MAX_PAGE_ORDER`, which has no blocks.
    #[inline]
    pub fn nr_free(&self, order: Order) -> u64 {
        self.area_nr_free.get(order.index()).map_or(0, |n| n.load(Relaxed))
    }

    /// Is the free list of (`order`, `mt`) non-empty? Racy; false for an order above
    /// `MAX_PAGE_ORDER`.
    #[inline]
    pub fn has_free(&self, order: Order, mt: MigrateType) -> bool {
        order.index() < NR_PAGE_ORDERS && self.free_orders(mt) & (1 << order.0) != 0
    }

    /// Bit `o` set for each order `o` whose `mt` free list is non-empty. Racy without the
    /// zone lock, exact under it (see the field).
    #[inline]
    pub(crate) fn free_orders(&self, mt: MigrateType) -> u32 {
        self.free_orders[mt.index()].load(Relaxed)
    }

    /// Is flag bit `f` (see [`zone_flags`](crate::zone_flags)) set?
    #[inline]
    pub fn test_flag(&self, f: u32) -> bool {
        self.flags.load(Relaxed) & f != 0
    }

    /// Set flag bit `f`.
    #[inline]
    pub(crate) fn set_flag(&self, f: u32) {
        if !self.test_flag(f) {
            self.flags.fetch_or(f, Relaxed);
        }
    }

    /// Clear flag bit `f`; returns whether it was set.
    #[inline]
    pub(crate) fn clear_flag(&self, f: u32) -> bool {
        self.test_flag(f) && self.flags.fetch_and(!f, Relaxed) & f != 0
    }

    /// Is compaction's skip hint set on the pageblock holding `pfn`? `None` outside the zone.
    pub fn pageblock_skip(&self, pfn: Pfn) -> Option<bool> {
        self.spans(pfn).then(|| self.pageblocks.skip(pfn))
    }

    /// The migratetype of the pageblock holding `pfn` (which the zone spans).
    pub fn pageblock_type(&self, pfn: Pfn) -> Option<MigrateType> {
        self.spans(pfn).then(|| self.pageblocks.get(pfn))
    }

    /// Pages in highatomic pageblocks.
    pub fn nr_reserved_highatomic(&self) -> u64 {
        self.lock.lock().nr_reserved_highatomic
    }

    /// Free blocks on each (order, migratetype) list, taken under the zone lock (what
    /// `/proc/pagetypeinfo` prints).
    pub fn free_list_counts(&self) -> [[u64; MIGRATE_TYPES]; NR_PAGE_ORDERS] {
        self.with_free(|f| {
            core::array::from_fn(|o| {
                core::array::from_fn(|mt| u64::from(f.area[o].lists[mt].len()))
            })
        })
    }

    /// Pageblocks labelled with each migratetype, counted as `/proc/pagetypeinfo` does:
    /// stepping 512 frames at a time from the zone's first frame and skipping frames that are
    /// not managed memory.
    pub fn pageblock_type_counts(&self) -> [u64; MIGRATE_TYPES] {
        let mut counts = [0u64; MIGRATE_TYPES];
        let mut p = self.start_pfn;
        while p < self.end_pfn {
            if self.frame(p).info().state != FrameState::Reserved {
                counts[self.pageblocks.get(p).index()] += 1;
            }
            p = Pfn(p.0 + crate::types::PAGEBLOCK_NR_PAGES);
        }
        counts
    }

    /// CPU `cpu`'s pageset for this zone, as it is now.
    pub fn pcp(&self, cpu: CpuId) -> Option<PcpSnapshot> {
        self.pcp.get(cpu.index()).map(PcpSlot::snapshot)
    }

    /// Pages on every CPU's pageset of this zone (with `Policy::remote_free`, the pages
    /// waiting on pending chains and remote-free lists too).
    pub fn pcp_pages(&self) -> u64 {
        self.pcp.iter().map(PcpSlot::held_pages).sum()
    }

    /// Does `pfn` lie in this zone's span?
    #[inline]
    pub fn spans(&self, pfn: Pfn) -> bool {
        self.start_pfn <= pfn && pfn < self.end_pfn
    }

    /// The frame index of `pfn` (which the zone spans).
    #[inline]
    pub(crate) fn index_of(&self, pfn: Pfn) -> u32 {
        (pfn.0 - self.start_pfn.0) as u32
    }

    /// The frame of index `idx`.
    #[inline]
    pub(crate) fn pfn_of(&self, idx: u32) -> Pfn {
        Pfn(self.start_pfn.0 + idx as u64)
    }

    /// The metadata of `pfn` (which the zone spans).
    #[inline]
    pub(crate) fn frame(&self, pfn: Pfn) -> &Frame {
        &self.mem_map[(pfn.0 - self.start_pfn.0) as usize]
    }

    /// Take the zone lock on behalf of `cpu`, counting the acquisition. Without a clock (the
    /// common case) that is one test of it; with one, the wait and the hold are timed.
    #[inline]
    pub(crate) fn lock<'a, E: EventSink>(
        &'a self,
        cpu: CpuId,
        events: &'a E,
        cfg: &'a CoreConfig,
    ) -> ZoneLocked<'a, E, L> {
        // The guard built in each arm: through one join, the untimed guard's empty `timed`
        // was a copy of the timed one's, its undefined half loaded and stored too.
        match cfg.clock {
            None => {
                let free = self.lock.lock();
                self.lock_taken(cpu, events);
                self.held(free, cpu, events, cfg, None)
            }
            Some(now) => {
                let (free, timed) = self.lock_timed(cpu, events, now);
                self.held(free, cpu, events, cfg, timed)
            }
        }
    }

    /// The guard of a hold that has just begun.
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    fn held<'a, E: EventSink>(
        &'a self,
        free: MutexGuard<'a, L, ZoneFree>,
        cpu: CpuId,
        events: &'a E,
        cfg: &'a CoreConfig,
        timed: Option<(fn() -> u64, u64)>,
    ) -> ZoneLocked<'a, E, L> {
        ZoneLocked { zone: self, frames: &self.mem_map, free, cpu, events, cfg, timed, list_ops: 0 }
    }

    /// What taking the zone lock counts and reports, once it is held.
    #[inline]
    fn lock_taken<E: EventSink>(&self, cpu: CpuId, events: &E) {
        self.counters.add_locked(Counter::ZoneLockAcquire, 1);
        if E::ENABLED {
            events.zone_lock_taken(cpu, self.idx);
        }
    }

    /// [`lock`](Self::lock) with the allocator's clock `now`: the wait is counted
    /// (`zone_lock_wait_ns`), and the hold's start is returned with the clock for the guard's
    /// drop to count the hold.
    #[inline(never)]
    #[allow(clippy::type_complexity)]
    fn lock_timed<'a, E: EventSink>(
        &'a self,
        cpu: CpuId,
        events: &E,
        now: fn() -> u64,
    ) -> (MutexGuard<'a, L, ZoneFree>, Option<(fn() -> u64, u64)>) {
        let asked = now();
        let free = self.lock.lock();
        self.lock_taken(cpu, events);
        let got = now();
        self.counters.add_locked(Counter::ZoneLockWaitNs, got.saturating_sub(asked));
        (free, Some((now, got)))
    }

    /// Read-only view of the free lists under the lock, for validators and /proc views.
    pub(crate) fn with_free<R>(&self, f: impl FnOnce(&ZoneFree) -> R) -> R {
        f(&self.lock.lock())
    }
}

/// Allocator-wide settings the buddy code consults (copied from the policy and tunables).
#[derive(Clone, Copy, Debug)]
pub struct CoreConfig {
    /// watermark_boost_factor; 0 disables boosting.
    pub boost_factor: u64,
    /// page_group_by_mobility_disabled.
    pub grouping_disabled: bool,
    /// A monotonic clock in nanoseconds, if the platform gave one: then zone-lock hold times
    /// are counted (`zone_lock_held_ns`). `None` costs nothing.
    pub clock: Option<fn() -> u64>,
    /// Which requests ALLOC_NOFRAGMENT floors at pageblock order.
    pub nofragment: crate::policy::NoFragment,
    /// 6.10 freelist hygiene (a free block's list type is its pageblock's type); off = the
    /// ≤ 6.9 rules.
    pub hygiene: bool,
}

/// The zone lock held: every operation on the free lists goes through this guard.
#[derive(Debug)]
pub struct ZoneLocked<'a, E: EventSink, L: RawLock = RawSpinLock> {
    pub(crate) zone: &'a Zone<L>,
    /// The zone's frames, read once when the lock is taken: the zone holds atomics, so the
    /// compiler would reload its `mem_map` after every store a buddy loop makes.
    pub(crate) frames: &'a [Frame],
    pub(crate) free: MutexGuard<'a, L, ZoneFree>,
    pub(crate) cpu: CpuId,
    pub(crate) events: &'a E,
    pub(crate) cfg: &'a CoreConfig,
    /// The allocator's clock and its reading when the lock was taken, if it has a clock:
    /// one test on drop.
    timed: Option<(fn() -> u64, u64)>,
    /// Free-list insertions and removals during this hold, for the event sink (counted only
    /// when the sink is enabled): the work a model charges the hold for.
    list_ops: u32,
}

impl<E: EventSink, L: RawLock> Drop for ZoneLocked<'_, E, L> {
    /// Account the hold time while the lock is still held (fields drop after this body).
    fn drop(&mut self) {
        if let Some((now, since)) = self.timed {
            self.zone.counters.add_locked(Counter::ZoneLockHeldNs, now().saturating_sub(since));
        }
        if E::ENABLED {
            self.events.zone_lock_released(self.cpu, self.zone.idx, self.list_ops);
        }
    }
}

impl<E: EventSink, L: RawLock> ZoneLocked<'_, E, L> {
    /// Count `n` list operations done under this hold besides the free lists' own (a
    /// pageset's list pops, probes of empty lists), for the event sink.
    #[inline]
    pub(crate) fn add_list_ops(&mut self, n: u32) {
        if E::ENABLED {
            self.list_ops += n;
        }
    }

    /// Add or remove `pages` from the free counters of migratetype `mt` (ISOLATE pages are
    /// not free for the zone's accounting).
    #[inline]
    pub(crate) fn account_freepages(&self, mt: MigrateType, pages: i64) {
        fn bump(a: &AtomicU64, d: i64) {
            a.store(a.load(Relaxed).wrapping_add_signed(d), Relaxed);
        }
        let z = self.zone;
        // The PCP types first: the common case in one comparison.
        if mt.index() < crate::migratetype::MIGRATE_PCPTYPES {
            bump(&z.nr_free_pages, pages);
            return;
        }
        match mt {
            MigrateType::Isolate => {}
            MigrateType::Cma => {
                bump(&z.nr_free_pages, pages);
                bump(&z.nr_free_cma, pages);
                z.update_fast_floor();
            }
            MigrateType::HighAtomic => {
                bump(&z.nr_free_pages, pages);
                bump(&z.nr_free_highatomic, pages);
                z.update_fast_floor();
            }
            _ => bump(&z.nr_free_pages, pages),
        }
    }

    /// A list of (`order`, `mt`) went from empty to non-empty or back: flip its bit in the
    /// bitmap of non-empty lists. The callers know the transition from the neighbours the
    /// list operation returned, so nothing is read or written when a list merely grows or
    /// shrinks.
    #[inline(always)]
    fn list_toggled(&self, order: Order, mt: MigrateType) {
        let word = &self.zone.free_orders[mt.index()];
        word.store(word.load(Relaxed) ^ (1 << order.0), Relaxed);
    }

    /// Add `d` (±1) to the block count of `order`.
    #[inline(always)]
    fn bump_nr_free(&self, order: Order, d: i64) {
        let n = &self.zone.area_nr_free[order.index()];
        n.store(n.load(Relaxed).wrapping_add_signed(d), Relaxed);
    }

    /// Put the free block at `pfn` on the (`order`, `mt`) list, at the tail or the head.
    /// Does not touch the free-page counters.
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) fn add_to_free_list(&mut self, pfn: Pfn, order: Order, mt: MigrateType, tail: bool) {
        let zone = self.zone;
        let idx = zone.index_of(pfn);
        // Checked: the caller names the block by pfn; this index is what puts the frame on a
        // list (hot.rs, F).
        assert!((idx as usize) < self.frames.len(), "{pfn:?} is outside the zone");
        // SAFETY: `idx` was just checked and the list's members are the zone's frames (F).
        let at = unsafe { frames_unchecked(self.frames) };
        self.add_at(at, idx, order, mt, tail);
    }

    /// [`add_to_free_list`](Self::add_to_free_list) of the frame of index `idx`, the frames
    /// looked up by `at` (checked, or unchecked where the caller has proved `idx` in bounds).
    /// Always inlined: the buddy loops call it once or twice per page moved, and `tail` is
    /// usually a constant there.
    #[inline(always)]
    pub(crate) fn add_at<'m>(
        &mut self,
        at: impl Fn(u32) -> &'m Frame,
        idx: u32,
        order: Order,
        mt: MigrateType,
        tail: bool,
    ) {
        at(idx).set_info(FrameInfo { state: FrameState::Buddy, order, list: mt as u8 });
        let list = &mut self.free.area[order.index()].lists[mt.index()];
        let neighbour =
            if tail { list.push_tail_with(at, idx) } else { list.push_head_with(at, idx) };
        if neighbour == NIL {
            self.list_toggled(order, mt);
        }
        self.bump_nr_free(order, 1);
        if E::ENABLED {
            self.list_ops += 1;
            self.touch_list_op(order, idx, [neighbour, NIL]);
        }
    }

    /// Report a free-list operation's lines to the sink: the block's frame and the free
    /// area's list head, which the operation reads, then the neighbours whose links it
    /// rewrites without reading them (their addresses come from the block or the head).
    #[inline]
    fn touch_list_op(&self, order: Order, idx: u32, neighbours: [u32; 2]) {
        let zone = self.zone;
        let reads = [MetaLine::Frame(zone.pfn_of(idx)), MetaLine::FreeArea(zone.idx, order)];
        let mut writes = reads;
        let mut n = 0;
        for nb in neighbours {
            if nb != NIL {
                writes[n] = MetaLine::Frame(zone.pfn_of(nb));
                n += 1;
            }
        }
        self.events.touch_lines(self.cpu, &reads, &writes[..n]);
    }

    /// Report a read or write of `pfn`'s metadata under this hold to the sink.
    #[inline]
    pub(crate) fn touch_frame(&self, pfn: Pfn) {
        if E::ENABLED {
            self.events.touch(self.cpu, MetaLine::Frame(pfn));
        }
    }

    /// Take the free block at `pfn` off its list; its head becomes `Tail` until the caller
    /// gives it a new state. Does not touch the free-page counters.
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) fn del_from_free_list(&mut self, pfn: Pfn, order: Order, mt: MigrateType) {
        let zone = self.zone;
        let idx = zone.index_of(pfn);
        // Checked: the caller names the block by pfn (hot.rs, F); its neighbours are members.
        assert!((idx as usize) < self.frames.len(), "{pfn:?} is outside the zone");
        // SAFETY: `idx` was just checked and the list's members are the zone's frames (F).
        let at = unsafe { frames_unchecked(self.frames) };
        self.del_at(at, idx, order, mt);
    }

    /// [`del_from_free_list`](Self::del_from_free_list) of the frame of index `idx`, the
    /// frames looked up by `at`.
    #[inline(always)]
    pub(crate) fn del_at<'m>(
        &mut self,
        at: impl Fn(u32) -> &'m Frame,
        idx: u32,
        order: Order,
        mt: MigrateType,
    ) {
        let list = &mut self.free.area[order.index()].lists[mt.index()];
        let neighbours = list.unlink_with(&at, idx);
        // The list's length, just decremented, says whether it went empty: testing the two
        // neighbours instead keeps both links live (uncomplemented) for the test.
        let emptied = list.is_empty();
        at(idx).set_info(FrameInfo::TAIL);
        self.delisted(order, mt, idx, emptied, neighbours);
    }

    /// Take the head block off the (`order`, `mt`) list, which the bitmap of non-empty lists
    /// says has a member; its head becomes `Tail`. Returns the block's frame index. Cheaper
    /// than [`del_at`](Self::del_at): the head has no predecessor to relink, the list needs
    /// no empty test and the order indexes the free areas unchecked.
    ///
    /// # Safety
    /// Bit `order` of the zone's `free_orders[mt]` was read set under this hold (hot.rs, B).
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) unsafe fn pop_listed_head(&mut self, order: Order, mt: MigrateType) -> u32 {
        // SAFETY: a list's members are the zone's frames (hot.rs, F).
        let at = unsafe { frames_unchecked(self.frames) };
        // SAFETY: the caller's promise (hot.rs, B).
        let list = unsafe { self.free.listed_at(order, mt) };
        let (idx, next) = list.pop_head_nonempty_with(&at);
        at(idx).set_info(FrameInfo::TAIL);
        self.delisted(order, mt, idx, next == NIL, [NIL, next]);
        idx
    }

    /// The bookkeeping of a removal from the (`order`, `mt`) list: its bit when the list went
    /// empty (`emptied`: no neighbour left), the order's count, the sink (which hears the
    /// neighbours whose links changed).
    #[inline(always)]
    fn delisted(
        &mut self,
        order: Order,
        mt: MigrateType,
        idx: u32,
        emptied: bool,
        neighbours: [u32; 2],
    ) {
        debug_assert_eq!(emptied, neighbours == [NIL, NIL]);
        if emptied {
            self.list_toggled(order, mt);
        }
        self.bump_nr_free(order, -1);
        if E::ENABLED {
            self.list_ops += 1;
            self.touch_list_op(order, idx, neighbours);
        }
    }

    /// Move a free block to the tail of another migratetype's list, moving its accounting.
    pub(crate) fn move_to_free_list(
        &mut self,
        pfn: Pfn,
        order: Order,
        old: MigrateType,
        new: MigrateType,
    ) {
        self.del_from_free_list(pfn, order, old);
        self.add_to_free_list(pfn, order, new, true);
        let pages = order.nr_pages().0 as i64;
        self.account_freepages(old, -pages);
        self.account_freepages(new, pages);
    }

    /// The head block of the (`order`, `mt`) list.
    #[inline]
    pub(crate) fn first_free(&self, order: Order, mt: MigrateType) -> Option<Pfn> {
        self.free.area[order.index()].lists[mt.index()].head().map(|i| self.zone.pfn_of(i))
    }

    /// Count an event under the zone lock.
    #[inline]
    pub(crate) fn count(&self, c: Counter, n: u64) {
        self.zone.counters.add_locked(c, n);
    }
}

//! `PageAllocator`: the public API (kernel `mm/page_alloc.c`). Builds zones from a [`MemoryMap`],
//! walks the zonelist with watermark checks (with ALLOC_NOFRAGMENT's lower-zone spreading, seed
//! 002), runs the slow path's reserve steps, and frees with double-free detection
//! (docs/kernel-reference.md §3.1–3.2, §4.1).

use crate::sync::{AtomicU32, AtomicU64, Ordering::Relaxed};
use core::mem::MaybeUninit;
use core::sync::atomic::AtomicU64 as CoreAtomicU64;

use crate::buddy::Fpi;
use crate::compaction::{CompactMode, CompactResult, Migrate};
use crate::error::{AllocError, FreeError, IsolateError, PcpDisableError, SettingError};
use crate::events::{EventSink, MetaLine, NoEvents, TraceEvent};
use crate::gfp::{slowpath_alloc_flags, AllocFlags, Gfp};
use crate::mem_map::{Frame, FrameInfo, FrameState, Unclaimed};
use crate::memory_map::{MapError, MemoryMap, MAX_CPUS, MAX_NODES};
use crate::migratetype::MigrateType;
use crate::pcp::{PcpFast, PcpSlot};
use crate::policy::{Policy, Tunables};
use crate::sizing;
use crate::stats::{Counter, Counters, VmEvents};
use crate::sync::{Mutex, RawLock, RawSpinLock};
use crate::table::{self, Carver, Table};
use crate::types::{
    CpuId, NodeId, NrPages, Order, Pfn, ZoneIdx, ZoneType, MAX_PAGE_ORDER, NR_ZONE_TYPES,
    PAGEBLOCK_NR_PAGES,
};
use crate::zone::{flags, CoreConfig, Zone, WMARK_HIGH, WMARK_LOW, WMARK_MIN, WMARK_PROMO};

/// Bytes of metadata the allocator keeps per frame of a zone's span (the kernel's
/// `struct page`, here 16 bytes), holes and reserved frames included.
pub const FRAME_METADATA_BYTES: usize = size_of::<Frame>();
/// Bytes of one CPU's pageset in one zone (a `struct per_cpu_pages` with its lock and
/// counters, on cache lines of its own).
pub const PAGESET_BYTES: usize = size_of::<PcpSlot>();

/// Bytes of allocator metadata a zone spanning `spanned` frames costs on a machine of
/// `nr_cpus` CPUs: the per-frame array, the zone itself, a pageset per CPU and a byte of
/// pageblock flags per pageblock. Add `size_of::<PageAllocator>()` once for the whole.
///
/// ```
/// use pagealloc::page_alloc::{zone_metadata_bytes, FRAME_METADATA_BYTES};
/// use pagealloc::NrPages;
///
/// // 1 GiB of 4 KiB frames: the per-frame array dominates.
/// let bytes = zone_metadata_bytes(NrPages(1 << 18), 8);
/// assert!(bytes > (1 << 18) * FRAME_METADATA_BYTES);
/// ```
pub const fn zone_metadata_bytes(spanned: NrPages, nr_cpus: u32) -> usize {
    let frames = spanned.0 as usize;
    let pageblocks = frames.div_ceil(PAGEBLOCK_NR_PAGES as usize) + 1;
    frames * FRAME_METADATA_BYTES
        + size_of::<Zone>()
        + nr_cpus as usize * PAGESET_BYTES
        + pageblocks
}

/// Largest vm.min_free_kbytes accepted, KiB: the sysctl is an `int` (`Tunables` takes the same
/// range).
pub const MAX_MIN_FREE_KBYTES: u64 = i32::MAX as u64;

/// Why an allocator could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// The memory map is unusable.
    Map(MapError),
    /// A tunable is out of range.
    Tunables(crate::policy::PolicyError),
    /// The memory for a zone's metadata (16 bytes per frame of its span, and a pageset per
    /// CPU) could not be allocated: the map describes more memory than this host can manage.
    NoMetadataMemory {
        /// The node.
        node: NodeId,
        /// The zone type.
        zone: ZoneType,
        /// Frames the zone spans.
        frames: u64,
    },
    /// The heap could not supply one of the allocator's smaller tables (zones, nodes,
    /// zonelists, per-CPU tables), or the metadata's size does not fit in a `usize`.
    NoTableMemory,
    /// The region given to [`PageAllocator::with_lock_in`] cannot hold the allocator's
    /// metadata: [`PageAllocator::metadata_bytes`] says how much it needs.
    RegionTooSmall {
        /// Bytes the map needs.
        needed: usize,
        /// Bytes the region has.
        given: usize,
    },
}

impl core::fmt::Display for BuildError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            BuildError::Map(e) => write!(f, "memory map: {e}"),
            BuildError::Tunables(e) => write!(f, "tunables: {e}"),
            BuildError::NoMetadataMemory { node, zone, frames } => write!(
                f,
                "node {} zone {}: cannot allocate the metadata of its {frames} frames ({} MiB \
                 at 16 bytes a frame): more memory than this host can manage",
                node.0,
                zone.name(),
                frames.saturating_mul(16) >> 20
            ),
            BuildError::NoTableMemory => {
                f.write_str("cannot allocate the allocator's zone, node and CPU tables")
            }
            BuildError::RegionTooSmall { needed, given } => write!(
                f,
                "the metadata region has {given} bytes; this memory map needs {needed} \
                 (PageAllocator::metadata_bytes)"
            ),
        }
    }
}

impl core::error::Error for BuildError {}

impl From<MapError> for BuildError {
    fn from(e: MapError) -> BuildError {
        BuildError::Map(e)
    }
}

/// A CPU of the allocator's machine, checked to exist: the handle every allocation and free
/// names. Cheap to copy. It remembers the allocator that made it: another allocator refuses
/// it (`InvalidCpu`), even one whose machine has a CPU of the same number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cpu {
    pub(crate) id: CpuId,
    pub(crate) node: NodeId,
    /// [`PageAllocator`]'s identity (`PageAllocator::id`).
    pub(crate) owner: u64,
}

impl Cpu {
    /// The CPU number.
    pub fn id(self) -> CpuId {
        self.id
    }

    /// Its node.
    pub fn node(self) -> NodeId {
        self.node
    }
}

/// A GFP mask checked and decoded once for one allocator ([`PageAllocator::prepare`]): the
/// part of the kernel's `prepare_alloc_pages` that depends on the flags alone (the highest zone
/// type, the migratetype), and the pageset list an order-0 block of that type comes from. A
/// caller that allocates with the same flags over and over (a heap, a slab cache) prepares
/// them once and calls [`PageAllocator::alloc_prepared`], whose hit path then does what
/// `alloc_pages` does with the flags a compile-time constant. Like [`Cpu`], it remembers its
/// allocator: another allocator refuses it ([`AllocError::ForeignRequest`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocRequest {
    gfp: Gfp,
    /// What the fast path needs of the flags, decoded.
    shape: FastShape,
    /// `PcpFast::pindex(Order(0), mt)`, `u8::MAX` when the layout caches no order-0 block.
    pindex0: u8,
    /// The preferred zone when the allocator has one node, so every CPU's: the fast path
    /// then needs no node table. `None` with more nodes (or no zone for the request): the
    /// CPU's node decides, as for `alloc_pages`.
    one_node_zone: Option<ZoneIdx>,
    /// [`PageAllocator`]'s identity (`PageAllocator::id`).
    owner: u64,
}

impl AllocRequest {
    /// The flags it was prepared from.
    pub fn gfp(&self) -> Gfp {
        self.gfp
    }

    /// The migratetype its blocks have (`Unmovable` for every request while the allocator
    /// groups nothing by mobility).
    pub fn migratetype(&self) -> MigrateType {
        self.shape.mt
    }
}

/// What the allocation fast path needs of a request: the highest zone type, the migratetype,
/// the flags of its watermark test (CMA for a movable request) and the zone flags that send
/// a pageset hit to the zonelist walk: ZONE_BELOW_HIGH always, ZONE_BOOSTED_WATERMARK when
/// the request wakes kswapd (the walk's `rmqueue` clears it and counts a wake). One mask, so
/// the hit tests both with one `and` of the flags word it loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FastShape {
    highest: ZoneType,
    mt: MigrateType,
    flags: AllocFlags,
    zone_flags_off_course: u32,
}

impl FastShape {
    #[inline(always)]
    fn of(gfp: Gfp, highest: ZoneType, mt: MigrateType) -> FastShape {
        let flags =
            if mt == MigrateType::Movable { AllocFlags::CMA } else { AllocFlags::default() };
        let boost = if gfp.intersects(Gfp::KSWAPD_RECLAIM) { flags::BOOSTED_WATERMARK } else { 0 };
        FastShape { highest, mt, flags, zone_flags_off_course: flags::BELOW_HIGH | boost }
    }
}

/// A node: its zones by type and its zonelist (the order allocations try zones in).
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) zones: [Option<ZoneIdx>; NR_ZONE_TYPES],
    /// Populated zones: this node's from highest type to lowest, then other nodes' by
    /// distance (|node difference|, then node number).
    pub(crate) zonelist: Table<ZoneIdx>,
    /// The first zonelist entry a request may use, by the highest zone type it allows.
    pub(crate) preferred: [Option<ZoneIdx>; NR_ZONE_TYPES],
    pub(crate) nr_cpus: u32,
    /// kcompactd's pending work: (order + 1, highest zone type index) of the largest request
    /// that woke it, 0 for none.
    pub(crate) kcompactd_wake: AtomicU64,
    /// kcompactd runs to skip before proactive compaction is tried again (after a run that
    /// did not lower the node's fragmentation score).
    pub(crate) proactive_defer: AtomicU32,
}

/// Source of [`PageAllocator`] identities. A core atomic even under loom (a loom atomic cannot
/// be a static): it only numbers allocators and orders nothing.
static NEXT_ALLOCATOR_ID: CoreAtomicU64 = CoreAtomicU64::new(1);

/// A block a free has claimed ([`PageAllocator::claim_for_free`]): its zone, its head frame,
/// that frame's index in the zone and the packed `info` word the claim replaced (which names
/// the owner `Policy::remote_free` recorded: [`Frame::owner_in`]).
pub(crate) struct Claimed<'a, L: RawLock> {
    pub(crate) zone: &'a Zone<L>,
    pub(crate) frame: &'a Frame,
    pub(crate) idx: u32,
    pub(crate) word: u32,
}

/// The page-frame allocator.
#[derive(Debug)]
pub struct PageAllocator<E: EventSink = NoEvents, L: RawLock = RawSpinLock> {
    /// This allocator's identity, unique in the process: what its [`Cpu`] handles carry.
    id: u64,
    pub(crate) zones: Table<Zone<L>>,
    /// (first frame, end, zone) sorted by first frame, for frame → zone lookup.
    by_pfn: Table<(Pfn, Pfn, ZoneIdx)>,
    /// The first entry of `by_pfn` as (first frame, pages, zone), tested before any search:
    /// one subtraction and one compare find a frame of that zone (with one zone, as every
    /// `PageHeap` has, the only test). Pages 0 when there is no zone.
    first_span: (u64, u64, ZoneIdx),
    pub(crate) nodes: Table<Node>,
    /// Node of each CPU.
    pub(crate) cpu_node: Table<NodeId>,
    pub(crate) policy: Policy,
    /// The policy's per-call pageset decisions, precomputed.
    pub(crate) pcp_fast: PcpFast,
    pub(crate) tunables: Tunables,
    pub(crate) cfg: CoreConfig,
    min_free_kbytes: AtomicU64,
    /// Counters updated with no lock held.
    pub(crate) counters: Counters,
    pub(crate) events: E,
    /// vmstat ticks each CPU has run.
    pub(crate) cpu_ticks: Table<AtomicU64>,
    /// Serialises drain_all_pages.
    pub(crate) drain_mutex: Mutex<L, ()>,
    /// Serialises changes of the pagesets' sizes with `zone_pcp_disable`/`enable` (kernel
    /// `pcp_batch_high_lock`).
    pcp_batch_high: Mutex<L, ()>,
}

impl PageAllocator<NoEvents> {
    /// Build an allocator over `map` with every frame of it free.
    pub fn new(map: MemoryMap, tunables: Tunables, policy: Policy) -> Result<Self, BuildError> {
        PageAllocator::with_events(map, tunables, policy, NoEvents)
    }
}

impl<E: EventSink> PageAllocator<E> {
    /// Build an allocator that reports trace events to `events`.
    pub fn with_events(
        map: MemoryMap,
        tunables: Tunables,
        policy: Policy,
        events: E,
    ) -> Result<Self, BuildError> {
        PageAllocator::with_lock(map, tunables, policy, events)
    }
}

impl<E: EventSink, L: RawLock> PageAllocator<E, L> {
    /// Build an allocator whose zone and pageset locks are of type `L` (the type names the
    /// lock: `PageAllocator::<NoEvents, MyLock>::with_lock(map, tunables, policy, NoEvents)`),
    /// reporting trace events to `events`. See the crate docs for a kernel's IRQ-saving lock.
    /// Its metadata comes from the heap; [`with_lock_in`](Self::with_lock_in) builds without
    /// one.
    pub fn with_lock(
        map: MemoryMap,
        tunables: Tunables,
        policy: Policy,
        events: E,
    ) -> Result<Self, BuildError> {
        PageAllocator::build(&map, tunables, policy, events, &mut Carver::Heap)
    }

    /// Build an allocator without touching the heap: every table it keeps (frame metadata,
    /// pageblock flags, pagesets, zones, zonelists) is carved from `region`, which must hold
    /// [`metadata_bytes`](Self::metadata_bytes)`(map)` bytes. A kernel sets the region aside
    /// before it has a heap, typically at the start of the memory the allocator will manage
    /// (leaving those frames out of `map`), as Linux places its memmap. The region is the
    /// allocator's from then on and is not handed back when it is dropped.
    ///
    /// ```
    /// use core::mem::MaybeUninit;
    /// use pagealloc::{CpuId, Gfp, MemoryMap, NoEvents, Order, PageAllocator, Policy, Tunables};
    ///
    /// let map = MemoryMap::single_node(2, 64 << 20)?;
    /// let needed = PageAllocator::<NoEvents>::metadata_bytes(&map)?;
    /// // A kernel would name memory it set aside at boot; a leaked buffer stands in for it.
    /// let region = Box::leak(vec![MaybeUninit::uninit(); needed].into_boxed_slice());
    /// let pa: PageAllocator =
    ///     PageAllocator::with_lock_in(&map, Tunables::default(), Policy::modern(), NoEvents, region)?;
    /// let cpu = pa.cpu(CpuId(0)).unwrap();
    /// let pfn = pa.alloc_pages(cpu, Gfp::KERNEL, Order(0))?;
    /// pa.free_pages(cpu, pfn, Order(0))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`with_lock`](Self::with_lock), and [`BuildError::RegionTooSmall`] if the region
    /// cannot hold the metadata.
    pub fn with_lock_in(
        map: &MemoryMap,
        tunables: Tunables,
        policy: Policy,
        events: E,
        region: &'static mut [MaybeUninit<u8>],
    ) -> Result<Self, BuildError> {
        PageAllocator::build(map, tunables, policy, events, &mut Carver::region(region))
    }

    /// Bytes of metadata an allocator over `map` keeps, the size
    /// [`with_lock_in`](Self::with_lock_in) needs its region to be: 16 bytes a frame of each
    /// zone's span (holes included), a byte a pageblock, a pageset per CPU per zone, and the
    /// zone, node and CPU tables, each with room to align it. It depends on the lock type `L`
    /// (a pageset holds one), not on the events sink, the tunables or the policy.
    ///
    /// # Errors
    /// The map errors [`with_lock`](Self::with_lock) would report for the same map.
    pub fn metadata_bytes(map: &MemoryMap) -> Result<usize, BuildError> {
        let (nr_cpus, nr_nodes) = (check_map(map)? as usize, map.nr_nodes());
        let mut bytes = Some(0usize);
        let mut add = |b: Option<usize>| bytes = bytes.and_then(|t| t.checked_add(b?));
        let nr_zones = for_each_zone(map, |z| {
            let frames = usize::try_from(z.end.0 - z.start.0).ok();
            add(frames.and_then(table::bytes_for::<Frame>));
            let blocks = usize::try_from(crate::pageblock::Pageblocks::count(z.start, z.end)).ok();
            add(blocks.and_then(table::bytes_for::<crate::sync::AtomicU8>));
            add(table::bytes_for::<PcpSlot<L>>(nr_cpus));
            Ok(())
        })?;
        add(table::bytes_for::<Zone<L>>(nr_zones));
        add(table::bytes_for::<(Pfn, Pfn, ZoneIdx)>(nr_zones));
        add(table::bytes_for::<Node>(nr_nodes));
        add(table::bytes_for::<ZoneIdx>(nr_zones).and_then(|b| b.checked_mul(nr_nodes)));
        add(table::bytes_for::<NodeId>(nr_cpus));
        add(table::bytes_for::<AtomicU64>(nr_cpus));
        // Too large to describe is too large to carve.
        bytes.ok_or(BuildError::NoTableMemory)
    }

    /// Build over tables from `carver`.
    fn build(
        map: &MemoryMap,
        tunables: Tunables,
        policy: Policy,
        events: E,
        carver: &mut Carver,
    ) -> Result<Self, BuildError> {
        tunables.validate().map_err(BuildError::Tunables)?;
        let nr_cpus = check_map(map)?;
        let room = Room::of::<L>(map, carver)?;
        let no_room = || room.exhausted(None);
        let (zones, nodes) = build_zones(map, carver, room)?;
        let mut by_pfn = carver
            .table(zones.len(), |i| (zones[i].start_pfn, zones[i].end_pfn, zones[i].idx))
            .ok_or_else(no_room)?;
        by_pfn.sort_unstable_by_key(|e| e.0);
        // Spans must not interleave: each frame belongs to at most one zone.
        for w in by_pfn.windows(2) {
            let (a, b) = (&zones[w[0].2.index()], &zones[w[1].2.index()]);
            if b.start_pfn < a.end_pfn {
                let (zone, node_a, node_b) = (b.ztype, a.node, b.node);
                return Err(MapError::InterleavedZones { zone, node_a, node_b }.into());
            }
        }
        let first_span = by_pfn
            .first()
            .map_or((0, 0, ZoneIdx(0)), |&(start, end, idx)| (start.0, end.0 - start.0, idx));
        let mut cpu_node = carver.builder(nr_cpus as usize).ok_or_else(no_room)?;
        for n in 0..nodes.len() {
            (0..map.cpus_of(NodeId(n as u32))).for_each(|_| cpu_node.push(NodeId(n as u32)));
        }
        let cpu_node = cpu_node.finish();
        let cpu_ticks =
            carver.table(nr_cpus as usize, |_| AtomicU64::new(0)).ok_or_else(no_room)?;
        let boost_factor = if policy.watermark_boost { tunables.watermark_boost_factor } else { 0 };
        let pa = PageAllocator {
            id: NEXT_ALLOCATOR_ID.fetch_add(1, Relaxed),
            zones,
            by_pfn,
            first_span,
            nodes,
            cpu_node,
            policy,
            pcp_fast: PcpFast::new(&policy),
            tunables,
            cfg: CoreConfig {
                boost_factor,
                grouping_disabled: false,
                nofragment: policy.alloc_nofragment,
                hygiene: policy.migratetype_hygiene,
                clock: None,
            },
            min_free_kbytes: AtomicU64::new(0),
            counters: Counters::default(),
            events,
            cpu_ticks,
            drain_mutex: Mutex::new(()),
            pcp_batch_high: Mutex::new(()),
        };
        pa.populate(map);
        pa.init_min_free_kbytes();
        for c in 0..nr_cpus {
            pa.set_cpu_cache(CpuId(c), map.cpu_cache);
        }
        let mut pa = pa;
        pa.cfg.grouping_disabled = pa.mobility_grouping_disabled();
        Ok(pa)
    }

    /// Mark the holes of each zone's span reserved (present frames start as `Tail`), label
    /// CMA pageblocks and free everything (the kernel's memblock hand-over: maximal aligned
    /// blocks, inserted at the list tails). Only holes and block heads are written.
    fn populate(&self, map: &MemoryMap) {
        for zone in self.zones.iter() {
            let pieces = map.zone_pieces(zone.node, zone.ztype);
            let mut next = zone.start_pfn;
            for r in pieces.clone().chain(core::iter::once(zone.end_pfn..zone.end_pfn)) {
                for p in next.0..r.start.0 {
                    zone.frame(Pfn(p)).set_info(FrameInfo::RESERVED);
                }
                next = next.max(r.end);
            }
            for r in map.cma() {
                let mut p = r.start.max(zone.start_pfn);
                while p < r.end.min(zone.end_pfn) {
                    zone.pageblocks.set(p, MigrateType::Cma);
                    p = p.add(NrPages(PAGEBLOCK_NR_PAGES));
                }
            }
            zone.managed_pages.store(zone.present_pages, Relaxed);
            let mut zl = zone.lock(CpuId(0), &self.events, &self.cfg);
            for r in pieces {
                let mut p = r.start;
                while p < r.end {
                    let mut o = MAX_PAGE_ORDER;
                    while o > 0 && (!p.is_aligned(Order(o)) || p.0 + (1 << o) > r.end.0) {
                        o -= 1;
                    }
                    // Write the heads the free will read (the block's and, freed pageblock
                    // by pageblock, each pageblock's) before it reads them: a lazily mapped
                    // zeroed map then takes one page fault for each (a first read maps the
                    // zero page, and the write faults again to copy it). They are `Tail`.
                    let mut h = p.0;
                    while h < p.0 + (1 << o) {
                        zone.frame(Pfn(h)).set_info(FrameInfo::TAIL);
                        h += PAGEBLOCK_NR_PAGES;
                    }
                    zl.free_one_page(p, Order(o), Fpi::ToTail);
                    p = Pfn(p.0 + (1 << o));
                }
            }
        }
    }

    /// Give the allocator a monotonic clock in nanoseconds (e.g. `Instant`-based in std,
    /// a TSC read in a kernel): from then on the time each zone-lock hold lasts is added to
    /// `Counter::ZoneLockHeldNs`. Without one nothing is timed and nothing is paid.
    pub fn with_clock(mut self, now_ns: fn() -> u64) -> Self {
        self.cfg.clock = Some(now_ns);
        self
    }

    /// Number of CPUs.
    pub fn nr_cpus(&self) -> u32 {
        self.cpu_node.len() as u32
    }

    /// Number of nodes.
    pub fn nr_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// The vmstat threshold of a zone (what `/proc/zoneinfo` prints as `vm stats threshold`).
    pub fn stat_threshold(&self, zone: &Zone<L>) -> u32 {
        sizing::stat_threshold(zone.managed_pages(), self.nr_cpus())
    }

    /// CPUs on `node` (0 for a memory-only or unknown node).
    pub fn nr_cpus_of_node(&self, node: NodeId) -> u32 {
        self.nodes.get(node.index()).map_or(0, |n| n.nr_cpus)
    }

    /// The handle of CPU `id`, if the machine has it.
    pub fn cpu(&self, id: CpuId) -> Option<Cpu> {
        self.cpu_node.get(id.index()).map(|&node| Cpu { id, node, owner: self.id })
    }

    /// This allocator's identity, unique in the process.
    #[inline]
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Was `cpu` made by this allocator's [`cpu`](Self::cpu)? Only such a handle names a CPU
    /// (and a node) of this machine.
    #[inline]
    pub(crate) fn owns(&self, cpu: Cpu) -> bool {
        cpu.owner == self.id
    }

    /// Every zone, in [`ZoneIdx`] order (node by node, lowest zone type first).
    pub fn zones(&self) -> &[Zone<L>] {
        &self.zones
    }

    /// Zone `idx`.
    pub fn zone(&self, idx: ZoneIdx) -> Option<&Zone<L>> {
        self.zones.get(idx.index())
    }

    /// The zone of type `zt` on `node`, if populated or spanned.
    pub fn zone_by_type(&self, node: NodeId, zt: ZoneType) -> Option<&Zone<L>> {
        let idx = self.nodes.get(node.index())?.zones[zt.index()]?;
        self.zones.get(idx.index())
    }

    /// The zone whose span holds `pfn`.
    #[inline]
    pub fn zone_of(&self, pfn: Pfn) -> Option<&Zone<L>> {
        self.zone_and_index_of(pfn).map(|(zone, _)| zone)
    }

    /// The zone whose span holds `pfn` and `pfn`'s frame index in it: the first zone's by
    /// the subtraction that tests its span, any other by the search.
    #[inline(always)]
    #[allow(unsafe_code)]
    fn zone_and_index_of(&self, pfn: Pfn) -> Option<(&Zone<L>, u32)> {
        let (start, pages, idx) = self.first_span;
        let off = pfn.0.wrapping_sub(start);
        if off < pages {
            // SAFETY: `first_span` names the allocator's own zone (hot.rs, Z).
            return Some((unsafe { self.zone_at(idx) }, off as u32));
        }
        if self.by_pfn.len() <= 1 {
            return None;
        }
        let i = self.by_pfn.partition_point(|e| e.0 <= pfn);
        let (_, end, idx) = *self.by_pfn.get(i.checked_sub(1)?)?;
        let zone = (pfn < end).then(|| &self.zones[idx.index()])?;
        Some((zone, zone.index_of(pfn)))
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The tunables in force.
    pub fn tunables(&self) -> &Tunables {
        &self.tunables
    }

    /// The sink trace events go to.
    pub fn events(&self) -> &E {
        &self.events
    }

    /// vm.min_free_kbytes in force.
    pub fn min_free_kbytes(&self) -> u64 {
        self.min_free_kbytes.load(Relaxed)
    }

    /// Is grouping by mobility off (too little memory for it to pay)?
    pub fn grouping_disabled(&self) -> bool {
        self.cfg.grouping_disabled
    }

    /// All counters, summed over every owner.
    pub fn vm_events(&self) -> VmEvents {
        let mut v = VmEvents::default();
        self.counters.fold_into(&mut v);
        for z in self.zones.iter() {
            z.counters.fold_into(&mut v);
            for slot in z.pcp.iter() {
                slot.stats.fold_into(&mut v);
            }
        }
        v
    }

    /// Free pages in the buddy lists of every zone (NR_FREE_PAGES summed).
    pub fn nr_free_pages(&self) -> NrPages {
        NrPages(self.zones.iter().map(|z| z.free_pages().0).sum())
    }

    /// Managed pages of every zone.
    pub fn managed_pages(&self) -> NrPages {
        NrPages(self.zones.iter().map(|z| z.managed_pages().0).sum())
    }

    // ---------------------------------------------------------------------------------------
    // Sizing

    /// The kernel's boot-time min_free_kbytes: the square-root rule, raised to the THP
    /// recommendation (khugepaged does so at start on THP kernels), unless the tunables fix a
    /// value.
    fn init_min_free_kbytes(&self) {
        if let Some(kb) = self.tunables.min_free_kbytes {
            // `Tunables::validate` bounded it to the sysctl's range.
            self.apply_min_free_kbytes(kb);
            return;
        }
        let kb = sizing::default_min_free_kbytes(sizing::lowmem_kbytes(self.zone_marks()));
        self.apply_min_free_kbytes(kb);
        let populated =
            self.zones.iter().filter(|z| z.ztype <= ZoneType::Normal && z.is_populated()).count();
        let buffer_pages = sizing::nr_free_zone_pages(self.zone_marks(), ZoneType::Normal);
        let thp = sizing::thp_recommended_min_free_kbytes(populated as u64, buffer_pages);
        if thp > kb {
            // 11 pageblocks a zone stays below the sysctl's limit for the 65535 zones the
            // allocator allows (1.4 TiB); the `min` keeps the bound whatever the count.
            self.apply_min_free_kbytes(thp.min(MAX_MIN_FREE_KBYTES));
        }
    }

    /// (type, managed, HIGH with boost) of every zone: the input of the sizing rules that
    /// count pages above the high watermark.
    fn zone_marks(&self) -> impl Iterator<Item = (ZoneType, NrPages, u64)> + '_ {
        self.zones.iter().map(|z| (z.ztype, z.managed_pages(), z.wmark_pages(WMARK_HIGH)))
    }

    /// Set vm.min_free_kbytes and recompute every zone's watermarks and lowmem reserves
    /// (kernel `setup_per_zone_wmarks` and `setup_per_zone_lowmem_reserve`).
    ///
    /// # Errors
    /// [`SettingError::OutOfRange`] above [`MAX_MIN_FREE_KBYTES`] (the sysctl is an `int`, and
    /// [`Tunables`] takes the same range); nothing changes then.
    pub fn set_min_free_kbytes(&self, kb: u64) -> Result<(), SettingError> {
        if kb > MAX_MIN_FREE_KBYTES {
            let max = MAX_MIN_FREE_KBYTES;
            return Err(SettingError::OutOfRange { key: "min_free_kbytes", got: kb, max });
        }
        self.apply_min_free_kbytes(kb);
        Ok(())
    }

    /// Store a min_free_kbytes known to be in range and recompute what depends on it.
    fn apply_min_free_kbytes(&self, kb: u64) {
        self.min_free_kbytes.store(kb, Relaxed);
        self.setup_per_zone_wmarks();
    }

    fn setup_per_zone_wmarks(&self) {
        let lowmem = sizing::lowmem_pages(self.zones.iter().map(|z| (z.ztype, z.managed_pages())));
        let (kb, wsf) = (self.min_free_kbytes(), self.tunables.watermark_scale_factor);
        for z in self.zones.iter() {
            let w = sizing::zone_watermark(kb, wsf, lowmem, z.ztype, z.managed_pages());
            z.watermark[WMARK_MIN].store(w.min, Relaxed);
            z.watermark[WMARK_LOW].store(w.low, Relaxed);
            z.watermark[WMARK_HIGH].store(w.high, Relaxed);
            z.watermark[WMARK_PROMO].store(w.promo, Relaxed);
            z.watermark_boost.store(0, Relaxed);
            z.update_fast_floor();
        }
        self.zone_pcp_update();
        let (ratios, empty_zero) =
            (&self.tunables.lowmem_reserve_ratio, self.policy.lowmem_reserve_empty_zone_zero);
        for node in self.nodes.iter() {
            let managed = ZoneType::ALL.map(|zt| {
                node.zones[zt.index()].map_or(0, |i| self.zones[i.index()].managed_pages().0)
            });
            for zt in ZoneType::ALL {
                if let Some(i) = node.zones[zt.index()] {
                    let r = sizing::lowmem_reserve_row(&managed, zt, ratios, empty_zero);
                    for (slot, v) in self.zones[i.index()].lowmem_reserve.iter().zip(r) {
                        slot.store(v, Relaxed);
                    }
                }
            }
        }
    }

    /// Push batch, high_min and high_max to every pageset (kernel
    /// `zone_set_pageset_high_and_batch`, run after every watermark change). A zone whose
    /// pagesets are disabled keeps high 0 and batch 1 until `zone_pcp_enable`.
    fn zone_pcp_update(&self) {
        let _serialised = self.pcp_batch_high.lock();
        for z in self.zones.iter() {
            if z.pcp_disabled.load(Relaxed) == 0 {
                self.zone_set_pageset_sizes(z, self.zone_pcp_computed(z));
            }
        }
    }

    /// The sizes the policy and tunables give `z`'s pagesets now.
    fn zone_pcp_computed(&self, z: &Zone<L>) -> sizing::PcpSizes {
        crate::pcp::zone_pcp_sizes(
            &self.policy,
            &self.tunables,
            z.managed_pages(),
            z.wmark_pages(WMARK_LOW),
            self.nodes[z.node.index()].nr_cpus,
            self.nr_cpus(),
        )
    }

    /// Give every pageset of `z` these sizes.
    fn zone_set_pageset_sizes(&self, z: &Zone<L>, sizes: sizing::PcpSizes) {
        for slot in z.pcp.iter() {
            let s = self.tunables.pcp_batch_scale_max;
            slot.pcp.lock().update(sizes, s, self.pcp_fast.counts_frees);
        }
    }

    /// Stop `zone`'s pagesets from holding pages (kernel `zone_pcp_disable`, 5.11, used
    /// around memory offlining): every pageset gets high 0 and batch 1, so a free goes
    /// straight on to the buddy lists, then all are drained once (by `caller`). Calls nest:
    /// the pagesets stay disabled until as many [`zone_pcp_enable`](Self::zone_pcp_enable)
    /// calls. While disabled, recomputations of the sizes (a watermark change) leave them
    /// at 0 and 1. Vlastimil Babka, "mm, page_alloc: disable pcplists during memory
    /// offline", ec6e8c7e0314. Before it, offlining could only drain, and frees refilled the
    /// pagesets between drains.
    ///
    /// # Errors
    /// [`PcpDisableError::InvalidCpu`] for a `caller` of another allocator,
    /// [`PcpDisableError::InvalidZone`] for an unknown zone.
    pub fn zone_pcp_disable(&self, caller: Cpu, zone: ZoneIdx) -> Result<(), PcpDisableError> {
        let z = self.pcp_zone(caller, zone)?;
        {
            let _serialised = self.pcp_batch_high.lock();
            if z.pcp_disabled.load(Relaxed) == 0 {
                let off = sizing::PcpSizes { batch: 1, high_min: 0, high_max: 0 };
                self.zone_set_pageset_sizes(z, off);
                for slot in z.pcp.iter() {
                    slot.pcp.lock().set_high(0);
                }
            }
            z.pcp_disabled.store(z.pcp_disabled.load(Relaxed) + 1, Relaxed);
        }
        self.drain_all_pages(caller, Some(zone));
        Ok(())
    }

    /// Undo one [`zone_pcp_disable`](Self::zone_pcp_disable) (kernel `zone_pcp_enable`): the
    /// last one gives the pagesets the sizes computed now (their `high` grows back from
    /// `high_min` as in the kernel).
    ///
    /// # Errors
    /// [`PcpDisableError::NotDisabled`] if the zone's pagesets are not disabled;
    /// [`PcpDisableError::InvalidCpu`], [`PcpDisableError::InvalidZone`] as for disable.
    pub fn zone_pcp_enable(&self, caller: Cpu, zone: ZoneIdx) -> Result<(), PcpDisableError> {
        let z = self.pcp_zone(caller, zone)?;
        let _serialised = self.pcp_batch_high.lock();
        let n = z.pcp_disabled.load(Relaxed);
        if n == 0 {
            return Err(PcpDisableError::NotDisabled(zone));
        }
        z.pcp_disabled.store(n - 1, Relaxed);
        if n == 1 {
            self.zone_set_pageset_sizes(z, self.zone_pcp_computed(z));
        }
        Ok(())
    }

    /// Whether `zone_pcp_disable` is in force on `zone` (false for an unknown zone).
    pub fn zone_pcp_disabled(&self, zone: ZoneIdx) -> bool {
        self.zones.get(zone.index()).is_some_and(|z| z.pcp_disabled.load(Relaxed) != 0)
    }

    /// The zone a disable or enable names, checking the caller's handle.
    fn pcp_zone(&self, caller: Cpu, zone: ZoneIdx) -> Result<&Zone<L>, PcpDisableError> {
        if !self.owns(caller) {
            return Err(PcpDisableError::InvalidCpu(caller.id));
        }
        self.zones.get(zone.index()).ok_or(PcpDisableError::InvalidZone(zone))
    }

    fn mobility_grouping_disabled(&self) -> bool {
        let above_high =
            sizing::nr_free_zone_pages(self.zone_marks(), Gfp::HIGHUSER_MOVABLE.zone());
        sizing::mobility_grouping_disabled(above_high)
    }

    // ---------------------------------------------------------------------------------------
    // Allocation

    /// Allocate a block of 2^`order` frames with `gfp`'s constraints on `cpu`. Returns its
    /// first frame.
    pub fn alloc_pages(&self, cpu: Cpu, gfp: Gfp, order: Order) -> Result<Pfn, AllocError> {
        self.alloc_checked(cpu, None, gfp, order, None)
    }

    /// Check and decode `gfp` once, for [`alloc_prepared`](Self::alloc_prepared).
    ///
    /// # Errors
    /// [`AllocError::ImpossibleZones`], as `alloc_pages` would give for these flags.
    pub fn prepare(&self, gfp: Gfp) -> Result<AllocRequest, AllocError> {
        let (highest, mt) = self.request_shape(gfp, Order(0))?;
        let pindex0 = self.pcp_fast.pindex(Order(0), mt).map_or(u8::MAX, |i| i as u8);
        let shape = FastShape::of(gfp, highest, mt);
        let one_node_zone = match &self.nodes[..] {
            [node] => node.preferred[highest.index()],
            _ => None,
        };
        Ok(AllocRequest { gfp, shape, pindex0, one_node_zone, owner: self.id })
    }

    /// Allocate as [`alloc_pages`](Self::alloc_pages) does with the flags `req` was prepared
    /// from: the same steps and decisions, without decoding the flags again.
    ///
    /// # Errors
    /// As `alloc_pages`, and [`AllocError::ForeignRequest`] for a request another allocator
    /// prepared.
    #[inline]
    pub fn alloc_prepared(
        &self,
        cpu: Cpu,
        req: &AllocRequest,
        order: Order,
    ) -> Result<Pfn, AllocError> {
        if !self.owns(cpu) {
            return Err(AllocError::InvalidCpu(cpu.id));
        }
        if req.owner != self.id {
            return Err(AllocError::ForeignRequest);
        }
        let shape = req.shape;
        let fast = if order.0 == 0 {
            let pindex = (req.pindex0 != u8::MAX).then_some(usize::from(req.pindex0));
            self.alloc_fast(cpu, Order(0), shape, pindex, req.one_node_zone)
        } else {
            // Order 0 is valid: only the other orders are tested.
            if !order.is_valid() {
                return Err(AllocError::InvalidOrder(order));
            }
            let pindex = self.pcp_fast.pindex(order, shape.mt);
            self.alloc_fast(cpu, order, shape, pindex, req.one_node_zone)
        };
        self.alloc_finish(cpu, req.gfp, order, shape.mt, shape.highest, fast, None)
    }

    /// Allocate as [`alloc_pages`](Self::alloc_pages) does, letting the slow path compact
    /// (kernel direct compaction) with `m` moving the caller's movable blocks: when `gfp`
    /// allows direct reclaim and the order is costly (or above 0 for an unmovable or
    /// reclaimable request), a failed allocation runs an async compaction and tries again
    /// (a costly [`Gfp::NORETRY`] request gives up if that compaction was skipped or
    /// deferred); after the slow path's drain, a second compaction at the kernel's default
    /// priority, sync-light (async again for a costly `NORETRY` request). Plain
    /// `alloc_pages` never moves anything.
    pub fn alloc_pages_compacting(
        &self,
        cpu: Cpu,
        gfp: Gfp,
        order: Order,
        m: &mut dyn Migrate,
    ) -> Result<Pfn, AllocError> {
        self.alloc_checked(cpu, None, gfp, order, Some(m))
    }

    /// Allocate as [`alloc_pages`](Self::alloc_pages) does, but walking `node`'s zonelist:
    /// the kernel's allocation with a preferred node, as a task bound by `numactl -m NODE`
    /// makes them (add [`Gfp::THISNODE`] to try no other node). The pageset used is still
    /// `cpu`'s own, in whichever zone serves the request: a CPU allocating from a remote
    /// node's zone fills and drains its pageset there, under that zone's lock.
    pub fn alloc_pages_node(
        &self,
        cpu: Cpu,
        node: NodeId,
        gfp: Gfp,
        order: Order,
    ) -> Result<Pfn, AllocError> {
        self.alloc_checked(cpu, Some(node), gfp, order, None)
    }

    /// [`alloc_pages_node`](Self::alloc_pages_node) with direct compaction, as
    /// [`alloc_pages_compacting`](Self::alloc_pages_compacting).
    pub fn alloc_pages_node_compacting(
        &self,
        cpu: Cpu,
        node: NodeId,
        gfp: Gfp,
        order: Order,
        m: &mut dyn Migrate,
    ) -> Result<Pfn, AllocError> {
        self.alloc_checked(cpu, Some(node), gfp, order, Some(m))
    }

    /// The public allocation calls' common part: check the CPU handle and the node (`None`:
    /// the CPU's own), then allocate walking that node's zonelist.
    #[inline(always)]
    fn alloc_checked(
        &self,
        cpu: Cpu,
        node: Option<NodeId>,
        gfp: Gfp,
        order: Order,
        m: Option<&mut dyn Migrate>,
    ) -> Result<Pfn, AllocError> {
        if !self.owns(cpu) {
            return Err(AllocError::InvalidCpu(cpu.id));
        }
        let cpu = match node {
            Some(node) if node.index() >= self.nodes.len() => {
                return Err(AllocError::InvalidNode(node))
            }
            Some(node) => Cpu { node, ..cpu },
            None => cpu,
        };
        self.alloc_pages_from(cpu, gfp, order, m)
    }

    /// A request's highest zone type and migratetype, or why it cannot be made at all.
    #[inline(always)]
    fn request_shape(&self, gfp: Gfp, order: Order) -> Result<(ZoneType, MigrateType), AllocError> {
        if !order.is_valid() {
            return Err(AllocError::InvalidOrder(order));
        }
        if gfp.impossible_zones() {
            return Err(AllocError::ImpossibleZones(gfp));
        }
        let mt =
            if self.cfg.grouping_disabled { MigrateType::Unmovable } else { gfp.migratetype() };
        Ok((gfp.zone(), mt))
    }

    /// The allocation proper; `cpu.node` names the zonelist to walk; `m`, if any, moves
    /// blocks for direct compaction.
    #[inline(always)]
    fn alloc_pages_from(
        &self,
        cpu: Cpu,
        gfp: Gfp,
        order: Order,
        m: Option<&mut dyn Migrate>,
    ) -> Result<Pfn, AllocError> {
        let (highest, mt) = self.request_shape(gfp, order)?;
        // Most allocations are of order 0: a copy of the fast path with the order a constant
        // folds its order tests and shifts away (the same steps, the same decisions).
        let shape = FastShape::of(gfp, highest, mt);
        let fast = if order.0 == 0 {
            self.alloc_fast(cpu, Order(0), shape, self.pcp_fast.pindex(Order(0), mt), None)
        } else {
            self.alloc_fast(cpu, order, shape, self.pcp_fast.pindex(order, mt), None)
        };
        self.alloc_finish(cpu, gfp, order, mt, highest, fast, m)
    }

    /// After the fast path: its block, else the full zonelist walk and slow path; the
    /// allocation's trace event either way.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn alloc_finish(
        &self,
        cpu: Cpu,
        gfp: Gfp,
        order: Order,
        mt: MigrateType,
        highest: ZoneType,
        fast: Option<Pfn>,
        m: Option<&mut dyn Migrate>,
    ) -> Result<Pfn, AllocError> {
        let res = match fast {
            Some(p) => Ok(p),
            // Every failure of the walk and slow path is out of memory: it returns an
            // `Option`, which comes back in registers, where a `Result` came through memory.
            None => self
                .alloc_inner(cpu, gfp, order, mt, highest, m)
                .ok_or(AllocError::OutOfMemory { order }),
        };
        if E::ENABLED {
            self.events.record(&TraceEvent::PageAlloc {
                cpu: cpu.id,
                pfn: res.ok(),
                order,
                gfp,
                migratetype: mt,
            });
        }
        res
    }

    /// The common case, taken before the full zonelist walk: the preferred zone is above its
    /// HIGH watermark (so the walk would go straight to it) and the CPU's list for this order
    /// and type is non-empty (so neither the zone-flag-dependent refill nor a fallback runs).
    /// The state changes are exactly those of that walk's PCP hit; anything else returns
    /// `None` untouched and the walk runs. So does a zone flag that changes the hit's course:
    /// ZONE_BELOW_HIGH (the walk decides) or, for a request that wakes kswapd, a boosted
    /// watermark, which the walk's `rmqueue` clears and counts as a wake after the same hit.
    /// Both are one test of the flags word against the request's mask. `one_node_zone` is a
    /// prepared request's preferred zone on a one-node allocator (else the CPU's node's
    /// table is read).
    #[inline(always)]
    #[allow(unsafe_code)]
    fn alloc_fast(
        &self,
        cpu: Cpu,
        order: Order,
        shape: FastShape,
        pindex: Option<usize>,
        one_node_zone: Option<ZoneIdx>,
    ) -> Option<Pfn> {
        let FastShape { highest, mt, flags, zone_flags_off_course } = shape;
        let pindex = pindex?;
        let z = match one_node_zone {
            // SAFETY: `prepare` took it from the node's table (hot.rs, Z).
            Some(zi) => unsafe { self.zone_at(zi) },
            // SAFETY: the public calls checked `cpu` and any node they were given (hot.rs, N).
            None => unsafe { self.preferred_zone(cpu, highest) }?,
        };
        if z.flags.load(Relaxed) & zone_flags_off_course != 0
            || !(z.clears_high_fast(order, highest)
                || z.watermark_fast(order, z.wmark_pages(WMARK_HIGH), highest, flags))
        {
            return None;
        }
        self.pcp_take(cpu.id, z, order, pindex, mt)
    }

    /// One direct compaction for a request and the allocation try after it (kernel
    /// `__alloc_pages_direct_compact`): for a caller that runs its own slow path — reclaim
    /// between the passes, as the kernel's does — where
    /// [`alloc_pages_compacting`](Self::alloc_pages_compacting) runs both passes in one call.
    /// Returns the block if the try found one, and the best zone result (`Skipped` if no zone
    /// could compact, `Deferred` if every one that could was deferred). Counts
    /// `compact_stall` and `compact_success` or `compact_fail` when some zone compacted.
    ///
    /// # Errors
    /// As [`alloc_pages`](Self::alloc_pages) for a request that cannot be made at all; a
    /// block compaction could not make is `Ok((None, result))`, not an error.
    pub fn compact_and_alloc(
        &self,
        cpu: Cpu,
        gfp: Gfp,
        order: Order,
        mode: CompactMode,
        m: &mut dyn Migrate,
    ) -> Result<(Option<Pfn>, CompactResult), AllocError> {
        if !self.owns(cpu) {
            return Err(AllocError::InvalidCpu(cpu.id));
        }
        let (highest, mt) = self.request_shape(gfp, order)?;
        let node = &self.nodes[cpu.node.index()];
        let Some(preferred) =
            node.zonelist.iter().map(|i| &self.zones[i.index()]).find(|z| z.ztype <= highest)
        else {
            return Ok((None, CompactResult::Skipped));
        };
        let walk = Walk { cpu, zonelist: &node.zonelist, gfp, order, mt, highest, preferred };
        let (page, result) =
            self.direct_compact(&walk, slowpath_alloc_flags(gfp, order.0), mode, m);
        if E::ENABLED {
            if let Some(pfn) = page {
                self.events.record(&TraceEvent::PageAlloc {
                    cpu: cpu.id,
                    pfn: Some(pfn),
                    order,
                    gfp,
                    migratetype: mt,
                });
            }
        }
        Ok((page, result))
    }

    /// The zonelist walk and the slow path (kernel `get_page_from_freelist` after the
    /// pageset hit, then `__alloc_pages_slowpath`): the block, or `None` (counted as
    /// `AllocFail`) when no zone has one even after draining and compaction, the one way
    /// it fails, which the caller reports as [`AllocError::OutOfMemory`]. `cpu` passed the
    /// public call's checks (its node and preferred zone are looked up unchecked).
    #[allow(unsafe_code)]
    fn alloc_inner(
        &self,
        cpu: Cpu,
        gfp: Gfp,
        order: Order,
        mt: MigrateType,
        highest: ZoneType,
        mut m: Option<&mut dyn Migrate>,
    ) -> Option<Pfn> {
        // SAFETY: the public calls checked `cpu` and any node they were given (hot.rs, N).
        let node = unsafe { self.node_of(cpu) };
        // SAFETY: as above; a node's preferred zones are the allocator's own (hot.rs, Z).
        let Some(preferred) = (unsafe { self.preferred_zone(cpu, highest) }) else {
            self.counters.add_shared(Counter::AllocFail, 1);
            return None;
        };
        let mut fast = AllocFlags::WMARK_LOW;
        if gfp.intersects(Gfp::KSWAPD_RECLAIM) {
            fast |= AllocFlags::KSWAPD;
        }
        if mt == MigrateType::Movable {
            fast |= AllocFlags::CMA;
        }
        fast |= self.alloc_flags_nofragment(preferred);
        // The walk's first zone is the preferred one, where it usually ends: try that zone
        // before the walk is built, then walk on past it.
        if let Some(p) = self.try_zone(cpu, preferred, order, mt, highest, fast) {
            return Some(p);
        }
        let walk = Walk { cpu, zonelist: &node.zonelist, gfp, order, mt, highest, preferred };
        if let Some(p) = self.walk_zonelist(&walk, fast, Some(preferred.idx)) {
            return Some(p);
        }
        self.counters.add_shared(Counter::Slowpath, 1);
        if order.0 > 0 && gfp.intersects(Gfp::KSWAPD_RECLAIM) {
            // The kernel wakes kswapd here, which wakes kcompactd for this order once it has
            // balanced the node.
            self.wake_kcompactd(preferred.node, order, highest);
        }
        let slow = slowpath_alloc_flags(gfp, order.0);
        if let Some(p) = self.get_page_from_freelist(&walk, slow) {
            return Some(p);
        }
        let costly = order.0 > crate::types::PAGE_ALLOC_COSTLY_ORDER;
        let compact_first = order.0 > 0 && (costly || mt != MigrateType::Movable);
        if gfp.can_direct_reclaim() && compact_first {
            if let Some(m) = m.as_deref_mut() {
                let (page, result) = self.direct_compact(&walk, slow, CompactMode::Async, m);
                if let Some(p) = page {
                    return Some(p);
                }
                // A costly NORETRY request (a THP fault) gives up when compaction could not
                // even run.
                if costly
                    && gfp.intersects(Gfp::NORETRY)
                    && matches!(result, CompactResult::Skipped | CompactResult::Deferred)
                {
                    self.counters.add_shared(Counter::AllocFail, 1);
                    return None;
                }
            }
        }
        if gfp.can_direct_reclaim() {
            // A frame allocator has no page cache to reclaim; what the kernel's slow path does
            // after reclaim fails to help: give back a highatomic block and drain every
            // pageset, then retry.
            self.unreserve_highatomic(&walk, false);
            self.drain_all_pages(cpu, None);
            if let Some(p) = self.get_page_from_freelist(&walk, slow) {
                return Some(p);
            }
            if self.unreserve_highatomic(&walk, true) {
                if let Some(p) = self.get_page_from_freelist(&walk, slow) {
                    return Some(p);
                }
            }
            if let Some(m) = m {
                if order.0 > 0 {
                    // After reclaim the kernel compacts again at its default priority,
                    // sync-light, or async again for a costly NORETRY request; a costly
                    // request gives up after this pass, a smaller one retries with the
                    // priority raised (one sync-light pass stands for those retries here).
                    let mode = if costly && gfp.intersects(Gfp::NORETRY) {
                        CompactMode::Async
                    } else {
                        CompactMode::SyncLight
                    };
                    if let (Some(p), _) = self.direct_compact(&walk, slow, mode, m) {
                        return Some(p);
                    }
                }
            }
        }
        self.counters.add_shared(Counter::AllocFail, 1);
        None
    }

    /// ALLOC_NOFRAGMENT for the fast path (kernel `alloc_flags_nofragment`): when the
    /// preferred zone is Normal and a DMA32 zone can take the overflow (`Zone::nofragment`,
    /// decided when the zones were built).
    #[inline(always)]
    fn alloc_flags_nofragment(&self, preferred: &Zone<L>) -> AllocFlags {
        if self.policy.alloc_nofragment.is_on() && preferred.nofragment {
            AllocFlags::NOFRAGMENT
        } else {
            AllocFlags::default()
        }
    }

    /// Walk the zonelist and take a block from the first zone whose watermark allows it
    /// (kernel `get_page_from_freelist`).
    pub(crate) fn get_page_from_freelist(&self, w: &Walk<'_, L>, flags: AllocFlags) -> Option<Pfn> {
        self.walk_zonelist(w, flags, None)
    }

    /// [`get_page_from_freelist`](Self::get_page_from_freelist) whose first pass skips
    /// `tried`, the walk's first zone, which the caller has already tried with these flags
    /// ([`try_zone`](Self::try_zone)): as if the walk had tried it and gone on. A retry
    /// without ALLOC_NOFRAGMENT starts from the first zone again, as the kernel's does.
    fn walk_zonelist(
        &self,
        w: &Walk<'_, L>,
        mut flags: AllocFlags,
        mut tried: Option<ZoneIdx>,
    ) -> Option<Pfn> {
        'retry: loop {
            let no_fallback = flags.has(AllocFlags::NOFRAGMENT);
            for zi in w.zonelist.iter() {
                if tried == Some(*zi) {
                    continue;
                }
                let z = &self.zones[zi.index()];
                if z.ztype > w.highest {
                    continue;
                }
                if w.gfp.intersects(Gfp::THISNODE) && z.node != w.preferred.node {
                    continue;
                }
                if no_fallback
                    && self.nodes.len() > 1
                    && z.idx != w.preferred.idx
                    && z.node != w.preferred.node
                {
                    // Locality beats fragmentation avoidance: retry locally with fallbacks.
                    flags = flags.without(AllocFlags::NOFRAGMENT);
                    self.counters.add_shared(Counter::NofragmentRetry, 1);
                    tried = None;
                    continue 'retry;
                }
                if let Some(pfn) = self.try_zone(w.cpu, z, w.order, w.mt, w.highest, flags) {
                    if no_fallback && z.idx != w.preferred.idx {
                        self.counters.add_shared(Counter::NofragmentLowerZone, 1);
                    }
                    return Some(pfn);
                }
            }
            if no_fallback {
                flags = flags.without(AllocFlags::NOFRAGMENT);
                self.counters.add_shared(Counter::NofragmentRetry, 1);
                tried = None;
                continue 'retry;
            }
            return None;
        }
    }

    /// One zone of the walk: its watermark, then a block from it, reserving the block's
    /// pageblock for high-order atomic requests when the flags ask for it.
    #[inline(always)]
    fn try_zone(
        &self,
        cpu: Cpu,
        z: &Zone<L>,
        order: Order,
        mt: MigrateType,
        highest: ZoneType,
        flags: AllocFlags,
    ) -> Option<Pfn> {
        if !self.zone_allows(z, order, highest, flags) {
            return None;
        }
        let pfn = self.rmqueue(cpu, z, order, mt, flags)?;
        if flags.has(AllocFlags::HIGHATOMIC) {
            z.lock(cpu.id, &self.events, &self.cfg).reserve_highatomic_pageblock(pfn, order);
        }
        Some(pfn)
    }

    /// The watermark part of the zonelist walk, including ZONE_BELOW_HIGH detection (6.7+).
    #[inline(always)]
    fn zone_allows(&self, z: &Zone<L>, order: Order, highest: ZoneType, flags: AllocFlags) -> bool {
        if !z.test_flag(flags::BELOW_HIGH) {
            if z.clears_high_fast(order, highest)
                || z.watermark_fast(order, z.wmark_pages(WMARK_HIGH), highest, flags)
            {
                return true;
            }
            z.set_flag(flags::BELOW_HIGH);
        }
        z.watermark_fast(order, z.wmark_pages(flags.wmark()), highest, flags)
            || flags.has(AllocFlags::NO_WATERMARKS)
    }

    /// Take a block from zone `z` (kernel `rmqueue`): from the CPU's pageset when the policy
    /// caches this order, else (or if the pageset is busy or its refill found nothing) from
    /// the buddy lists.
    fn rmqueue(
        &self,
        cpu: Cpu,
        z: &Zone<L>,
        order: Order,
        mt: MigrateType,
        flags: AllocFlags,
    ) -> Option<Pfn> {
        let mut page = None;
        if self.policy.pcp_lists.caches_order(order) {
            page = self.rmqueue_pcplist(cpu, z, order, mt, flags);
        }
        if page.is_none() {
            page = self.rmqueue_buddy(cpu.id, z, order, mt, flags);
        }
        if flags.has(AllocFlags::KSWAPD) && z.clear_flag(flags::BOOSTED_WATERMARK) {
            self.counters.add_shared(Counter::KswapdWake, 1);
        }
        page
    }

    /// Take a block straight from the buddy lists (kernel `rmqueue_buddy`), marking it
    /// allocated before the zone lock drops so pageblock censuses see it. Takes the CPU's
    /// number (all it uses), so the walk passes it in a register instead of a copy of the
    /// handle in memory.
    #[inline(never)]
    #[allow(unsafe_code)]
    fn rmqueue_buddy(
        &self,
        cpu: CpuId,
        z: &Zone<L>,
        order: Order,
        mt: MigrateType,
        flags: AllocFlags,
    ) -> Option<Pfn> {
        let mut zl = z.lock(cpu, &self.events, &self.cfg);
        let mut page = None;
        if flags.has(AllocFlags::HIGHATOMIC) {
            page = zl.rmqueue_smallest_at(order, MigrateType::HighAtomic);
        }
        if page.is_none() {
            page = zl.rmqueue_at(order, mt, flags);
            if page.is_none() && flags.has(AllocFlags(AllocFlags::OOM.0 | AllocFlags::NON_BLOCK.0))
            {
                page = zl.rmqueue_smallest_at(order, MigrateType::HighAtomic);
            }
        }
        let idx = page?;
        // SAFETY: the block came off this zone's free lists (hot.rs, F).
        let frame = unsafe { z.frame_at(idx) };
        frame.set_info(FrameInfo { state: FrameState::Allocated, order, list: mt as u8 });
        // The page's reference count (kernel set_page_refcounted): page_frag_free drops it.
        frame.aux().store(1, Relaxed);
        zl.count(Counter::pgalloc(z.ztype), order.nr_pages().0);
        Some(z.pfn_of(idx))
    }

    /// Give one highatomic pageblock back to ordinary use in the first zone of the walk that
    /// has one to spare (kernel `unreserve_highatomic_pageblock`).
    #[cold]
    #[inline(never)]
    fn unreserve_highatomic(&self, w: &Walk<'_, L>, force: bool) -> bool {
        for zi in w.zonelist.iter() {
            let z = &self.zones[zi.index()];
            if z.ztype > w.highest {
                continue;
            }
            if z.lock(w.cpu.id, &self.events, &self.cfg).unreserve_highatomic_pageblock(w.mt, force)
            {
                return true;
            }
        }
        false
    }

    // ---------------------------------------------------------------------------------------
    // Free

    /// Free the block of 2^`order` frames at `pfn` on `cpu`. A block that is not allocated
    /// with exactly this order is refused with an error and left alone, and so is a page_frag
    /// page others hold references on (its cache, or more than one fragment): the kernel's
    /// `free_pages` only drops one reference there, and the last `page_frag_free` or cache
    /// drain frees the page ([`FreeError::StillReferenced`]). A page with a single reference
    /// left is freed, as dropping that reference does.
    ///
    /// Inlined into its caller (the order-0 copy; higher orders, drains and remote frees are
    /// calls): as a call, an order-0 free paid six saved registers, the handle copied and the
    /// `Result` returned through memory (docs/performance.md, fast path v2 step 7).
    #[inline]
    pub fn free_pages(&self, cpu: Cpu, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        // Most frees are of order 0: a copy of the path with the order a constant folds its
        // shifts, alignment mask and order tests away (the same steps, the same decisions).
        if order.0 == 0 {
            self.free_pages_routed(cpu, pfn, Order(0), true)
        } else {
            self.free_pages_any_order(cpu, pfn, order)
        }
    }

    /// [`free_pages`](Self::free_pages) of any order, out of line: the order-0 copy inlined
    /// into callers stays small, and a higher-order free (which merges or fills a pageset
    /// of larger blocks) pays one call.
    #[inline(never)]
    fn free_pages_any_order(&self, cpu: Cpu, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        self.free_pages_routed(cpu, pfn, order, true)
    }

    /// Check the block of 2^`order` frames at `pfn` as [`free_pages`](Self::free_pages)
    /// would, with the same errors, and retire it: it becomes a block whose free has begun
    /// and never ends, so it goes on no list, is counted neither free nor on a pageset, and
    /// a later free or retire of it is refused as a double free. For a caller that is done
    /// with the allocator and only needs to know that every block it still holds is a live
    /// allocation of that order, held once (a model's conservation check at the end of a
    /// run), without paying for what a free does after its checks: the pageset, the
    /// flushes to the buddy lists and their merges.
    pub fn retire(&self, cpu: Cpu, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        self.claim_for_free(cpu, pfn, order).map(|_| ())
    }

    /// A hint that the block at `pfn` will be freed soon: start loading its frame's metadata,
    /// so that a caller freeing many blocks in a row (a process exit, an unmap) overlaps the
    /// cache misses instead of taking them one after another. It changes no state; a frame
    /// outside every zone is ignored. Does nothing on targets without a prefetch hint.
    #[inline]
    pub fn prefetch(&self, pfn: Pfn) {
        if let Some(zone) = self.zone_of(pfn) {
            crate::sync::prefetch(zone.frame(pfn));
        }
    }

    /// Free a block, through `cpu`'s pageset if `allow_pcp` and the policy caches its order,
    /// else straight to the buddy lists (kernel `free_unref_page` / `__free_pages_ok`).
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) fn free_pages_routed(
        &self,
        cpu: Cpu,
        pfn: Pfn,
        order: Order,
        allow_pcp: bool,
    ) -> Result<(), FreeError> {
        let Claimed { zone, frame, idx, word } = self.claim_for_free(cpu, pfn, order)?;
        if E::ENABLED {
            self.events.record(&TraceEvent::PageFree { cpu: cpu.id, pfn, order });
        }
        if allow_pcp && self.policy.remote_free {
            // The owner the allocation recorded, from the word the claim replaced.
            if let Some(owner) = Frame::owner_in(word).filter(|&o| o != cpu.id.0) {
                if self.remote_free(cpu, zone, CpuId(owner), frame, idx, order) {
                    return Ok(());
                }
            }
        }
        if allow_pcp && self.free_unref_page(cpu, zone, frame, idx, pfn, order) {
            return Ok(());
        }
        // SAFETY: `idx` is the claimed block's, a frame of `zone` heading a block inside
        // its span (hot.rs, F and P).
        unsafe { self.free_to_zone(cpu.id, zone, idx, order) };
        Ok(())
    }

    /// Free a claimed block straight to the buddy lists under the zone lock, counting it
    /// (kernel `free_one_page` from the free path). Takes the CPU's number, as the drains do
    /// (`free_unref_page_flush`), and the block's frame index, which its claim found.
    ///
    /// # Safety
    /// `idx` is the index of a frame of `zone` heading a block of `order` inside its span:
    /// a claimed block's (hot.rs, F and P).
    #[allow(unsafe_code)]
    pub(crate) unsafe fn free_to_zone(&self, cpu: CpuId, zone: &Zone<L>, idx: u32, order: Order) {
        let mut zl = zone.lock(cpu, &self.events, &self.cfg);
        zl.count(Counter::Pgfree, order.nr_pages().0);
        // SAFETY: the caller's promise.
        unsafe { zl.free_one_page_idx(idx, order, Fpi::None) };
    }

    /// Check a free request and claim the block (Allocated → Freeing). On success the caller
    /// owns the block's head frame until it puts the block on a list. A page_frag page that
    /// others still reference (count 2 or more: a cache carves it, or more than one fragment
    /// is out) is refused; plain blocks hold 1, a page whose last fragment is being freed 0.
    /// Returns the zone, the head frame and its index (the free path writes the frame next
    /// without looking it up again).
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) fn claim_for_free(
        &self,
        cpu: Cpu,
        pfn: Pfn,
        order: Order,
    ) -> Result<Claimed<'_, L>, FreeError> {
        if !order.is_valid() {
            return Err(FreeError::InvalidOrder(order));
        }
        if !self.owns(cpu) {
            return Err(FreeError::InvalidCpu(cpu.id));
        }
        let (zone, idx) = self.zone_and_index_of(pfn).ok_or(FreeError::ForeignFrame(pfn))?;
        if !pfn.is_aligned(order) {
            return Err(FreeError::Misaligned { pfn, order });
        }
        if E::ENABLED {
            self.events.touch(cpu.id, MetaLine::Frame(pfn));
        }
        #[cfg(feature = "debug-vm")]
        crate::debug::check_free_block(zone, pfn, order)?;
        // SAFETY: `idx` is the index of `pfn`, which the zone spans (hot.rs, F).
        let frame = unsafe { zone.frame_at(idx) };
        match frame.claim_unreferenced(order) {
            Ok(word) => Ok(Claimed { zone, frame, idx, word }),
            Err(Unclaimed::Referenced(refs)) => Err(FreeError::StillReferenced { pfn, refs }),
            Err(Unclaimed::Was(info)) => Err(diagnose_bad_free(zone, pfn, order, info)),
        }
    }

    // ---------------------------------------------------------------------------------------
    // Reclaim and isolation hooks (for callers that model reclaim or move memory)

    /// Mark background reclaim as running (or not) on a zone (kernel ZONE_RECLAIM_ACTIVE).
    pub fn set_reclaim_active(&self, zone: ZoneIdx, active: bool) {
        if let Some(z) = self.zones.get(zone.index()) {
            if active {
                z.set_flag(flags::RECLAIM_ACTIVE);
            } else {
                z.clear_flag(flags::RECLAIM_ACTIVE);
            }
        }
    }

    /// Drop a zone's watermark boost, as kswapd does after a boosted reclaim pass.
    pub fn reset_watermark_boost(&self, zone: ZoneIdx) {
        if let Some(z) = self.zones.get(zone.index()) {
            z.watermark_boost.store(0, Relaxed);
            z.update_fast_floor();
        }
        self.zone_pcp_update();
    }

    /// Isolate the pageblock holding `pfn`: its free pages leave allocation until
    /// [`unisolate_pageblock`](Self::unisolate_pageblock). Returns the block's former type.
    ///
    /// # Errors
    /// [`IsolateError`]: a `cpu` of another allocator, a frame in no zone, a block not wholly
    /// inside its zone, a block isolated already. Nothing changes then.
    pub fn isolate_pageblock(&self, cpu: Cpu, pfn: Pfn) -> Result<MigrateType, IsolateError> {
        let z = self.isolation_zone(cpu, pfn)?;
        let mut zl = z.lock(cpu.id, &self.events, &self.cfg);
        let old = z.pageblocks.get(pfn);
        if old == MigrateType::Isolate {
            return Err(IsolateError::AlreadyIsolated(pfn));
        }
        zl.pageblock_census(pfn).ok_or(IsolateError::PartialBlock(pfn))?;
        zl.split_covering_buddy(pfn);
        let (start, _, _) = zl.pageblock_census(pfn).ok_or(IsolateError::PartialBlock(pfn))?;
        zl.move_freepages_block(start, old, MigrateType::Isolate);
        Ok(old)
    }

    /// Give an isolated pageblock back as type `mt`, merging its free pages again.
    ///
    /// # Errors
    /// [`IsolateError`]: a `cpu` of another allocator, a frame in no zone, a block that is not
    /// isolated (or not wholly inside its zone), `mt` = `Isolate`. Nothing changes then.
    pub fn unisolate_pageblock(
        &self,
        cpu: Cpu,
        pfn: Pfn,
        mt: MigrateType,
    ) -> Result<(), IsolateError> {
        let z = self.isolation_zone(cpu, pfn)?;
        if mt == MigrateType::Isolate {
            return Err(IsolateError::IsolateTarget(mt));
        }
        let mut zl = z.lock(cpu.id, &self.events, &self.cfg);
        if z.pageblocks.get(pfn) != MigrateType::Isolate {
            return Err(IsolateError::NotIsolated(pfn));
        }
        // Two adjacent isolated blocks may have merged on the isolate lists (a free into one
        // merges with an isolated buddy, as in the kernel): split such a block first, so only
        // this pageblock's pages change type and the other stays isolated.
        zl.split_covering_buddy(pfn);
        let (start, _, _) = zl.pageblock_census(pfn).ok_or(IsolateError::PartialBlock(pfn))?;
        // Take the block's free pages off the isolate lists and free them again as `mt`, so
        // they merge with neighbours outside the block (kernel unset_migratetype_isolate).
        z.pageblocks.set(start, mt);
        let end = start.add(NrPages(PAGEBLOCK_NR_PAGES));
        let mut p = start;
        while p < end {
            let info = z.frame(p).info();
            let step = 1u64 << info.order.0;
            match info.state {
                FrameState::Buddy => {
                    zl.del_from_free_list(p, info.order, MigrateType::Isolate);
                    zl.free_one_page_locked(p, info.order, mt, Fpi::ToTail);
                    p = Pfn(p.0 + step);
                }
                FrameState::Allocated | FrameState::Pcp => p = Pfn(p.0 + step),
                _ => p = Pfn(p.0 + 1),
            }
        }
        Ok(())
    }

    /// The zone an isolation request names, after checking the CPU handle is ours.
    fn isolation_zone(&self, cpu: Cpu, pfn: Pfn) -> Result<&Zone<L>, IsolateError> {
        if !self.owns(cpu) {
            return Err(IsolateError::InvalidCpu(cpu.id));
        }
        self.zone_of(pfn).ok_or(IsolateError::ForeignFrame(pfn))
    }
}

/// The zonelist walk's fixed inputs.
pub(crate) struct Walk<'a, L: RawLock> {
    pub(crate) cpu: Cpu,
    pub(crate) zonelist: &'a [ZoneIdx],
    pub(crate) gfp: Gfp,
    pub(crate) order: Order,
    pub(crate) mt: MigrateType,
    pub(crate) highest: ZoneType,
    pub(crate) preferred: &'a Zone<L>,
}

/// Name what is wrong with freeing `pfn` as `order`, given the head frame's state.
fn diagnose_bad_free<L: RawLock>(
    zone: &Zone<L>,
    pfn: Pfn,
    order: Order,
    info: FrameInfo,
) -> FreeError {
    match info.state {
        FrameState::Allocated => FreeError::WrongOrder { pfn, given: order, allocated: info.order },
        FrameState::Buddy | FrameState::Pcp | FrameState::Freeing | FrameState::Remote => {
            FreeError::DoubleFree { pfn }
        }
        FrameState::Isolated => FreeError::NotAllocated { pfn },
        FrameState::Reserved => FreeError::NotAllocated { pfn },
        FrameState::Tail => {
            // Inside some block: find the head that covers it.
            for o in 1..=MAX_PAGE_ORDER {
                let head = pfn.align_down(Order(o));
                if head == pfn || !zone.spans(head) {
                    continue;
                }
                let h = zone.frame(head).info();
                let covers = head.0 + (1u64 << h.order.0) > pfn.0;
                if covers && h.state == FrameState::Allocated && h.order.0 >= o {
                    return FreeError::TailPage { pfn, head };
                }
                if covers && h.state != FrameState::Tail && h.state != FrameState::Reserved {
                    break;
                }
            }
            FreeError::NotAllocated { pfn }
        }
    }
}

/// The checks on a map every build makes first; its CPUs.
fn check_map(map: &MemoryMap) -> Result<u32, BuildError> {
    let nr_cpus = map.nr_cpus();
    if nr_cpus == 0 {
        return Err(MapError::NoCpus.into());
    }
    if map.present_pages() == 0 {
        return Err(MapError::NoMemory.into());
    }
    // `MemoryMap` refuses both as they are given; kept as the allocator's own bound.
    if nr_cpus > MAX_CPUS || map.nr_nodes() > MAX_NODES as usize {
        return Err(MapError::TooManyNodesOrCpus.into());
    }
    Ok(nr_cpus)
}

/// What a build's tables are carved from, for the error when one cannot be had.
#[derive(Clone, Copy)]
enum Room {
    Heap,
    /// A region of `given` bytes, which `metadata_bytes` says must be `needed`.
    Region {
        needed: usize,
        given: usize,
    },
}

impl Room {
    /// The room `carver` has for `map`'s metadata; a region known to be too small is refused
    /// here, before anything is carved.
    fn of<L: RawLock>(map: &MemoryMap, carver: &Carver) -> Result<Room, BuildError> {
        let Carver::Region { len: given, .. } = *carver else { return Ok(Room::Heap) };
        let needed = PageAllocator::<NoEvents, L>::metadata_bytes(map)?;
        if given < needed {
            return Err(BuildError::RegionTooSmall { needed, given });
        }
        Ok(Room::Region { needed, given })
    }

    /// The error for a table that could not be carved (a zone's, named, or another).
    fn exhausted(self, zone: Option<(NodeId, ZoneType, u64)>) -> BuildError {
        match (self, zone) {
            (Room::Region { needed, given }, _) => BuildError::RegionTooSmall { needed, given },
            (Room::Heap, Some((node, zone, frames))) => {
                BuildError::NoMetadataMemory { node, zone, frames }
            }
            (Room::Heap, None) => BuildError::NoTableMemory,
        }
    }
}

/// A zone the map describes: a (node, zone type) with present memory.
struct ZoneSpec {
    node: NodeId,
    ztype: ZoneType,
    /// The span: the first piece's start to the last piece's end.
    start: Pfn,
    end: Pfn,
}

/// Call `f` for each zone of `map`, in node order and then zone-type order (the order of the
/// allocator's zone table), after checking it can be built. Returns the number of zones.
fn for_each_zone(
    map: &MemoryMap,
    mut f: impl FnMut(ZoneSpec) -> Result<(), BuildError>,
) -> Result<usize, BuildError> {
    let mut nr_zones = 0;
    for n in 0..map.nr_nodes() {
        let node = NodeId(n as u32);
        for ztype in ZoneType::ALL {
            let mut pieces = map.zone_pieces(node, ztype);
            let Some(first) = pieces.next() else { continue };
            let end = pieces.last().map_or(first.end, |r| r.end);
            if end.0 - first.start.0 >= u64::from(u32::MAX) {
                return Err(MapError::ZoneTooLarge { node, zone: ztype }.into());
            }
            if nr_zones >= usize::from(u16::MAX) {
                return Err(MapError::TooManyNodesOrCpus.into());
            }
            f(ZoneSpec { node, ztype, start: first.start, end })?;
            nr_zones += 1;
        }
    }
    Ok(nr_zones)
}

/// Build the zones of every node and the nodes' zonelists.
fn build_zones<L: RawLock>(
    map: &MemoryMap,
    carver: &mut Carver,
    room: Room,
) -> Result<(Table<Zone<L>>, Table<Node>), BuildError> {
    let nr_zones = for_each_zone(map, |_| Ok(()))?;
    let nr_nodes = map.nr_nodes();
    let no_room = || room.exhausted(None);
    let mut zones = carver.builder::<Zone<L>>(nr_zones).ok_or_else(no_room)?;
    for_each_zone(map, |spec| {
        let ZoneSpec { node, ztype, start, end } = spec;
        let idx = ZoneIdx(zones.written().len() as u16);
        let frames = end.0 - start.0;
        let mut z = Zone::new(carver, idx, node, ztype, start, end, map.nr_cpus())
            .ok_or_else(|| room.exhausted(Some((node, ztype, frames))))?;
        let pieces = map.zone_pieces(node, ztype);
        z.present_pages = pieces.clone().map(|r| r.end.0 - r.start.0).sum();
        let dma32_pages: u64 =
            map.zone_pieces(node, ZoneType::Dma32).map(|r| r.end.0 - r.start.0).sum();
        z.nofragment = ztype == ZoneType::Normal && (nr_nodes == 1 || dma32_pages > 0);
        z.cma_pages = pieces
            .flat_map(|r| map.cma().map(move |c| (r.clone(), c)))
            .map(|(r, c)| r.end.min(c.end).0.saturating_sub(r.start.max(c.start).0))
            .sum();
        zones.push(z);
        Ok(())
    })?;
    let zones = zones.finish();
    let mut nodes = carver.builder::<Node>(nr_nodes).ok_or_else(no_room)?;
    for n in 0..nr_nodes {
        let mut slots = [None; NR_ZONE_TYPES];
        for z in zones.iter().filter(|z| z.node.index() == n) {
            slots[z.ztype.index()] = Some(z.idx);
        }
        nodes.push(Node {
            zones: slots,
            zonelist: Table::empty(),
            preferred: [None; NR_ZONE_TYPES],
            nr_cpus: map.cpus_of(NodeId(n as u32)),
            kcompactd_wake: AtomicU64::new(0),
            proactive_defer: AtomicU32::new(0),
        });
    }
    let mut nodes = nodes.finish();
    // Each zonelist holds every zone (each has present memory): this node's from the highest
    // type to the lowest, then the other nodes' by distance (|node difference|, the lower
    // node first at equal distance).
    for n in 0..nr_nodes {
        let mut list = carver.builder::<ZoneIdx>(nr_zones).ok_or_else(no_room)?;
        for d in 0..nr_nodes {
            let near = [n.checked_sub(d), (d > 0).then_some(n + d).filter(|&m| m < nr_nodes)];
            for m in near.into_iter().flatten() {
                for zt in ZoneType::ALL.iter().rev() {
                    if let Some(i) = nodes[m].zones[zt.index()] {
                        list.push(i);
                    }
                }
            }
        }
        let list = list.finish();
        nodes[n].preferred = ZoneType::ALL
            .map(|highest| list.iter().copied().find(|i| zones[i.index()].ztype <= highest));
        nodes[n].zonelist = list;
    }
    Ok((zones, nodes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::boxed::Box;
    use alloc::vec;
    use alloc::vec::Vec;

    fn region(bytes: usize) -> &'static mut [MaybeUninit<u8>] {
        Box::leak(vec![MaybeUninit::uninit(); bytes].into_boxed_slice())
    }

    const MIB: u64 = 1 << 20;

    /// Machines with holes, several nodes, ZONE_MOVABLE and CMA.
    fn maps() -> [MemoryMap; 3] {
        let one = MemoryMap::single_node(2, 64 * MIB).unwrap();
        let mut holes = MemoryMap::new();
        holes.add_range(NodeId(0), 0x1000..0x9f000).unwrap();
        holes.add_range(NodeId(0), MIB..96 * MIB).unwrap();
        holes.add_range(NodeId(1), 4096 * MIB..4160 * MIB).unwrap();
        holes.add_movable_range(NodeId(1), 4224 * MIB..4288 * MIB).unwrap();
        holes.add_cma_range(Pfn(4096)..Pfn(4096 + 2048)).unwrap();
        holes.set_cpus(NodeId(0), 3).unwrap().set_cpus(NodeId(1), 1).unwrap();
        let mut four = MemoryMap::new();
        for n in 0..4u32 {
            let base = 4096 * MIB + u64::from(n) * 32 * MIB;
            four.add_range(NodeId(n), base..base + 32 * MIB).unwrap();
            four.set_cpus(NodeId(n), 4).unwrap();
        }
        [one, holes, four]
    }

    /// `metadata_bytes` is enough for the build and over by no more than the padding it allows
    /// for each table.
    #[test]
    // Six to nine machines of up to 96 MiB: minutes each under miri; the carving itself is
    // table.rs's, whose tests miri runs.
    #[cfg_attr(miri, ignore)]
    fn metadata_bytes_are_enough_and_close() {
        for map in maps() {
            let needed = PageAllocator::<NoEvents>::metadata_bytes(&map).unwrap();
            let mut carver = Carver::region(region(needed));
            let pa: PageAllocator = PageAllocator::build(
                &map,
                Tunables::default(),
                Policy::modern(),
                NoEvents,
                &mut carver,
            )
            .unwrap();
            let used = carver.used();
            let tables = 3 * pa.zones.len() + 2 * pa.nodes.len() + 4;
            assert!(used <= needed && needed - used < 64 * tables, "{used} of {needed}");
        }
    }

    /// A region one byte short is refused by name, with both sizes, before anything is built.
    #[test]
    fn a_short_region_is_refused() {
        let map = &maps()[1];
        let needed = PageAllocator::<NoEvents>::metadata_bytes(map).unwrap();
        let short = region(needed - 1);
        let err = PageAllocator::<NoEvents>::with_lock_in(
            map,
            Tunables::default(),
            Policy::modern(),
            NoEvents,
            short,
        )
        .unwrap_err();
        assert_eq!(err, BuildError::RegionTooSmall { needed, given: needed - 1 });
        assert_eq!(
            PageAllocator::<NoEvents>::metadata_bytes(&MemoryMap::new()).unwrap_err(),
            MapError::NoCpus.into()
        );
    }

    /// Built from a region or from the heap, the allocator is the same: same zones, same free
    /// pages, same blocks handed out.
    #[test]
    // Six to nine machines of up to 96 MiB: minutes each under miri; the carving itself is
    // table.rs's, whose tests miri runs.
    #[cfg_attr(miri, ignore)]
    fn a_region_built_allocator_is_the_heap_built_one() {
        for map in maps() {
            let needed = PageAllocator::<NoEvents>::metadata_bytes(&map).unwrap();
            let (t, p) = (Tunables::default(), Policy::modern());
            let a: PageAllocator = PageAllocator::with_lock(map.clone(), t, p, NoEvents).unwrap();
            let b: PageAllocator =
                PageAllocator::with_lock_in(&map, t, p, NoEvents, region(needed)).unwrap();
            assert_eq!(a.zones.len(), b.zones.len());
            for (za, zb) in a.zones.iter().zip(b.zones.iter()) {
                assert_eq!(za.free_list_counts(), zb.free_list_counts());
                assert_eq!((za.start_pfn(), za.cma_pages()), (zb.start_pfn(), zb.cma_pages()));
                assert_eq!(za.wmark_pages(WMARK_HIGH), zb.wmark_pages(WMARK_HIGH));
            }
            assert_eq!(a.nodes.iter().map(|n| &*n.zonelist).collect::<Vec<_>>(), {
                b.nodes.iter().map(|n| &*n.zonelist).collect::<Vec<_>>()
            });
            for order in [0u8, 3, 9] {
                let (ca, cb) = (a.cpu(CpuId(0)).unwrap(), b.cpu(CpuId(0)).unwrap());
                assert_eq!(
                    a.alloc_pages(ca, Gfp::KERNEL, Order(order)),
                    b.alloc_pages(cb, Gfp::KERNEL, Order(order))
                );
            }
        }
    }

    /// The ALLOC_NOFRAGMENT verdict kept per zone is what the kernel's test of the preferred
    /// zone gives on the built allocator: a Normal zone with a populated DMA32 zone on its
    /// node, or on a one-node machine.
    #[test]
    fn the_nofragment_verdict_is_the_populated_zones() {
        let mut spill = MemoryMap::new();
        spill.add_range(NodeId(0), 0..64 * MIB).unwrap();
        spill.add_range(NodeId(0), 4096 * MIB..4128 * MIB).unwrap();
        spill.add_range(NodeId(1), 4160 * MIB..4192 * MIB).unwrap();
        spill.set_cpus(NodeId(0), 1).unwrap().set_cpus(NodeId(1), 1).unwrap();
        let mut lone = MemoryMap::new();
        lone.add_range(NodeId(0), 4096 * MIB..4128 * MIB).unwrap().set_cpus(NodeId(0), 1).unwrap();
        let mut seen = [0; 2];
        for map in maps().into_iter().chain([spill, lone]) {
            let pa = PageAllocator::new(map, Tunables::default(), Policy::modern()).unwrap();
            for z in pa.zones() {
                let dma32 = pa.nodes[z.node.index()].zones[ZoneType::Dma32.index()];
                let populated = dma32.is_some_and(|i| pa.zones[i.index()].is_populated());
                let want = z.ztype == ZoneType::Normal && (pa.nodes.len() == 1 || populated);
                assert_eq!(z.nofragment, want, "{:?} {:?}", z.node, z.ztype);
                if z.ztype == ZoneType::Normal {
                    seen[usize::from(want)] += 1;
                }
            }
        }
        assert!(seen[0] > 0 && seen[1] > 1, "{seen:?}");
    }

    /// A pageset hit in a zone whose watermark is boosted: a request that wakes kswapd takes
    /// its block from the pageset and clears the boost, counting one wake (the walk's
    /// `rmqueue`, to which the hit hands such a request); one that does not wake kswapd takes
    /// it and leaves the boost. The same through `alloc_pages` and a prepared request.
    #[test]
    fn a_boosted_watermark_is_cleared_by_a_kswapd_request_s_pageset_hit() {
        let no_kswapd = Gfp(Gfp::KERNEL.0 & !Gfp::KSWAPD_RECLAIM.0);
        for prepared in [false, true] {
            let map = MemoryMap::single_node(1, 64 * MIB).unwrap();
            let pa = PageAllocator::new(map, Tunables::default(), Policy::modern()).unwrap();
            let cpu = pa.cpu(CpuId(0)).unwrap();
            let alloc = |gfp: Gfp| {
                if prepared {
                    pa.alloc_prepared(cpu, &pa.prepare(gfp).unwrap(), Order(0)).unwrap()
                } else {
                    pa.alloc_pages(cpu, gfp, Order(0)).unwrap()
                }
            };
            // Fill the pageset: the first allocation refills it.
            let first = alloc(Gfp::KERNEL);
            let zone = pa.zone_of(first).unwrap();
            zone.set_flag(flags::BOOSTED_WATERMARK);
            let before = pa.vm_events();
            alloc(no_kswapd);
            let d = pa.vm_events().since(&before);
            assert!(zone.test_flag(flags::BOOSTED_WATERMARK), "prepared {prepared}");
            assert_eq!(d.get(Counter::KswapdWake), 0, "prepared {prepared}");
            assert_eq!(d.get(Counter::PcpAlloc), 1, "prepared {prepared}");
            let before = pa.vm_events();
            alloc(Gfp::KERNEL);
            let d = pa.vm_events().since(&before);
            assert!(!zone.test_flag(flags::BOOSTED_WATERMARK), "prepared {prepared}");
            assert_eq!(d.get(Counter::KswapdWake), 1, "prepared {prepared}");
            assert_eq!(d.get(Counter::PcpAlloc), 1, "prepared {prepared}");
            assert_eq!(d.get(Counter::ZoneLockAcquire), 0, "prepared {prepared}");
        }
    }

    /// Zones of the same type on two nodes whose spans cross are refused, naming both nodes.
    #[test]
    fn interleaved_zones_are_refused() {
        let mut map = MemoryMap::new();
        map.add_range(NodeId(0), 4096 * MIB..4128 * MIB).unwrap();
        map.add_range(NodeId(1), 4128 * MIB..4160 * MIB).unwrap();
        map.add_range(NodeId(0), 4160 * MIB..4192 * MIB).unwrap();
        map.set_cpus(NodeId(0), 1).unwrap();
        let err = PageAllocator::new(map, Tunables::default(), Policy::modern()).unwrap_err();
        let (zone, node_a, node_b) = (ZoneType::Normal, NodeId(0), NodeId(1));
        assert_eq!(err, MapError::InterleavedZones { zone, node_a, node_b }.into());
    }
}

//! The caller's description of physical memory and CPUs: nodes, the frame ranges each node
//! has (with holes and unaligned edges), which CPUs sit on which node, and special ranges
//! (ZONE_MOVABLE, CMA). [`PageAllocator::new`](crate::PageAllocator::new) turns it into zones.
//!
//! The map holds its ranges in fixed arrays, so building one needs no heap: a kernel describes
//! its memory before it has an allocator to describe it with.

use core::fmt;
use core::ops::Range;

use crate::types::{CpuId, NodeId, Pfn, ZoneType, PAGE_SIZE};

/// Where the low zones end (exclusive). x86-64: DMA below 16 MiB, DMA32 below 4 GiB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneLimits {
    /// First frame above ZONE_DMA; `Pfn(0)` means the machine has no DMA zone.
    pub dma_end: Pfn,
    /// First frame above ZONE_DMA32; equal to `dma_end` means no DMA32 zone.
    pub dma32_end: Pfn,
}

impl ZoneLimits {
    /// The x86-64 layout.
    pub const X86_64: ZoneLimits =
        ZoneLimits { dma_end: Pfn::from_phys(16 << 20), dma32_end: Pfn::from_phys(4 << 30) };
    /// Everything in ZONE_NORMAL (no DMA zones).
    pub const NORMAL_ONLY: ZoneLimits = ZoneLimits { dma_end: Pfn(0), dma32_end: Pfn(0) };

    /// The zone type a frame belongs to, unless it is in a movable range.
    pub fn zone_of(&self, pfn: Pfn) -> ZoneType {
        if pfn < self.dma_end {
            ZoneType::Dma
        } else if pfn < self.dma32_end {
            ZoneType::Dma32
        } else {
            ZoneType::Normal
        }
    }
}

impl Default for ZoneLimits {
    fn default() -> ZoneLimits {
        ZoneLimits::X86_64
    }
}

/// Why a memory map was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MapError {
    /// A byte range held no whole page after rounding its start up and its end down.
    EmptyRange {
        /// The range as given, in bytes.
        start: u64,
        /// Exclusive end, in bytes.
        end: u64,
    },
    /// A range overlaps one added before.
    Overlap {
        /// First frame of the new range.
        start: Pfn,
        /// First frame of the range it overlaps.
        existing: Pfn,
    },
    /// Frame numbers this large cannot be represented (the map is limited to 2^52 frames).
    TooLarge(Pfn),
    /// A CMA range is not pageblock-aligned or not inside memory of a single node.
    BadCmaRange(Range<Pfn>),
    /// Two nodes' zones of the same type interleave; each zone must be a contiguous span
    /// that no other zone's span overlaps.
    InterleavedZones {
        /// The zone type.
        zone: ZoneType,
        /// One of the nodes.
        node_a: NodeId,
        /// The other.
        node_b: NodeId,
    },
    /// A zone spans more frames than a 32-bit frame index can address.
    ZoneTooLarge {
        /// The node.
        node: NodeId,
        /// The zone type.
        zone: ZoneType,
    },
    /// No CPU at all: something must allocate.
    NoCpus,
    /// No memory at all.
    NoMemory,
    /// More nodes or CPUs than the allocator supports (65535 zones, 2^20 CPUs).
    TooManyNodesOrCpus,
    /// A node number at or above [`MAX_NODES`]: refused before anything is sized from it.
    NodeOutOfRange(NodeId),
    /// CPUs that would bring the machine above [`MAX_CPUS`].
    TooManyCpus {
        /// The machine's CPUs with the ones asked for.
        total: u64,
    },
    /// A range beyond the [`MAX_RANGES`] memory ranges (or [`MAX_CMA_RANGES`] CMA ranges) a
    /// map holds.
    TooManyRanges {
        /// The limit that was reached.
        max: usize,
    },
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MapError::EmptyRange { start, end } => {
                write!(f, "range {start:#x}..{end:#x} holds no whole page")
            }
            MapError::Overlap { start, existing } => {
                write!(f, "range at pfn {start} overlaps the range at pfn {existing}")
            }
            MapError::TooLarge(p) => write!(f, "pfn {p} is beyond the supported address space"),
            MapError::BadCmaRange(r) => write!(
                f,
                "CMA range {}..{} must be pageblock-aligned and inside one node's memory",
                r.start, r.end
            ),
            MapError::InterleavedZones { zone, node_a, node_b } => {
                write!(f, "zone {zone} of node {} interleaves with node {}'s", node_a.0, node_b.0)
            }
            MapError::ZoneTooLarge { node, zone } => {
                write!(f, "zone {zone} of node {} spans more than 2^32-1 frames", node.0)
            }
            MapError::NoCpus => f.write_str("the machine has no CPU"),
            MapError::NoMemory => f.write_str("the machine has no memory"),
            MapError::TooManyNodesOrCpus => f.write_str("too many nodes or CPUs"),
            MapError::NodeOutOfRange(n) => {
                write!(f, "node {} is out of range: a machine has nodes 0..={}", n.0, MAX_NODES - 1)
            }
            MapError::TooManyCpus { total } => {
                write!(f, "{total} CPUs: a machine has at most {MAX_CPUS}")
            }
            MapError::TooManyRanges { max } => {
                write!(f, "more than {max} ranges: a memory map holds at most {max}")
            }
        }
    }
}

impl core::error::Error for MapError {}

/// Largest frame number accepted (52-bit physical frame numbers, 64-bit physical addresses).
const MAX_PFN: u64 = 1 << 52;
/// Most CPUs a machine may have.
pub const MAX_CPUS: u32 = 1 << 20;
/// Most nodes a machine may have: node numbers are `0..MAX_NODES`.
pub const MAX_NODES: u32 = 1024;
/// Most ranges of present memory a map holds: one for each of the most nodes a machine may
/// have ([`MAX_NODES`]), or more for each on a smaller machine. (The kernel's boot-time
/// memblock table starts at 128 and grows once it can allocate; this map cannot grow.)
pub const MAX_RANGES: usize = MAX_NODES as usize;
/// Most CMA ranges a map holds (the kernel's `CONFIG_CMA_AREAS` is at most 20 by default).
pub const MAX_CMA_RANGES: usize = 32;

/// One range of present frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MemRange {
    pub node: NodeId,
    pub start: Pfn,
    pub end: Pfn,
    /// Goes to ZONE_MOVABLE instead of the zone its address implies.
    pub movable: bool,
}

impl MemRange {
    const EMPTY: MemRange =
        MemRange { node: NodeId(0), start: Pfn(0), end: Pfn(0), movable: false };
}

/// A description of physical memory and CPUs, built up one range at a time.
///
/// ```
/// use pagealloc::{MemoryMap, NodeId};
/// let mut map = MemoryMap::new();
/// map.add_range(NodeId(0), 0x1000..0x9f000)?        // low memory, below the ISA hole
///    .add_range(NodeId(0), 0x100000..0x8000_0000)?  // 1 MiB .. 2 GiB
///    .set_cpus(NodeId(0), 4)?;
/// # Ok::<(), pagealloc::MapError>(())
/// ```
///
/// About 29 KiB, all of it inline: building one allocates nothing. [`MemoryMap::new`] is
/// `const`, so a kernel whose stack is small keeps its map in a static.
#[derive(Clone, Debug)]
pub struct MemoryMap {
    /// `ranges[..nr_ranges]`, sorted by first frame (so a zone's pieces come out sorted).
    ranges: [MemRange; MAX_RANGES],
    nr_ranges: usize,
    /// CPUs per node, indexed by node number: `node_cpus[..nr_cpu_nodes]` (the highest node
    /// given CPUs, plus one).
    node_cpus: [u32; MAX_NODES as usize],
    nr_cpu_nodes: usize,
    /// `cma[..nr_cma]`, as (first frame, end).
    cma: [(Pfn, Pfn); MAX_CMA_RANGES],
    nr_cma: usize,
    pub(crate) limits: ZoneLimits,
    /// Every CPU's caches, for the FREE_HIGH_BATCH decision.
    pub(crate) cpu_cache: CacheInfo,
}

// What the type's doc says of its size.
const _: () = assert!(size_of::<MemoryMap>() < 30 << 10);

impl Default for MemoryMap {
    fn default() -> MemoryMap {
        MemoryMap::new()
    }
}

impl MemoryMap {
    /// An empty map with x86-64 zone limits.
    pub const fn new() -> MemoryMap {
        MemoryMap {
            ranges: [MemRange::EMPTY; MAX_RANGES],
            nr_ranges: 0,
            node_cpus: [0; MAX_NODES as usize],
            nr_cpu_nodes: 0,
            cma: [(Pfn(0), Pfn(0)); MAX_CMA_RANGES],
            nr_cma: 0,
            limits: ZoneLimits::X86_64,
            cpu_cache: CacheInfo { llc_slice_bytes: 0, data_slices_bytes: 0 },
        }
    }

    /// The ranges of present memory, sorted by first frame.
    pub(crate) fn ranges(&self) -> &[MemRange] {
        &self.ranges[..self.nr_ranges]
    }

    /// The CMA ranges, in the order they were added.
    pub(crate) fn cma(&self) -> impl Iterator<Item = Range<Pfn>> + '_ {
        self.cma[..self.nr_cma].iter().map(|&(s, e)| s..e)
    }

    /// CPUs of `node` (0 for a node given none).
    pub(crate) fn cpus_of(&self, node: NodeId) -> u32 {
        self.node_cpus[..self.nr_cpu_nodes].get(node.index()).copied().unwrap_or(0)
    }

    /// One node with `cpus` CPUs and `bytes` of memory starting at physical address 0, split
    /// into zones at the x86-64 limits. The lab's and the tests' usual machine.
    pub fn single_node(cpus: u32, bytes: u64) -> Result<MemoryMap, MapError> {
        let mut map = MemoryMap::new();
        map.add_range(NodeId(0), 0..bytes)?.set_cpus(NodeId(0), cpus)?;
        Ok(map)
    }

    /// Use these zone limits instead of x86-64's.
    pub fn with_zone_limits(&mut self, limits: ZoneLimits) -> &mut MemoryMap {
        self.limits = limits;
        self
    }

    /// Add present memory `phys` (bytes, end exclusive) to `node`. The start is rounded up
    /// and the end down to whole pages; the range is split among DMA, DMA32 and Normal at the
    /// zone limits. Ranges may come in any order and leave holes; they must not overlap.
    pub fn add_range(
        &mut self,
        node: NodeId,
        phys: Range<u64>,
    ) -> Result<&mut MemoryMap, MapError> {
        self.push_range(node, phys, false)
    }

    /// Add present memory to `node`'s ZONE_MOVABLE (as `movablecore=`/hotplugged memory).
    pub fn add_movable_range(
        &mut self,
        node: NodeId,
        phys: Range<u64>,
    ) -> Result<&mut MemoryMap, MapError> {
        self.push_range(node, phys, true)
    }

    /// Add present frames (not bytes) to `node`. Frames whose byte address does not fit in 64
    /// bits are [`MapError::TooLarge`] (their addresses used to wrap to low memory).
    pub fn add_pfn_range(
        &mut self,
        node: NodeId,
        pfns: Range<Pfn>,
    ) -> Result<&mut MemoryMap, MapError> {
        let top = pfns.start.max(pfns.end);
        if top.0 >= MAX_PFN {
            return Err(MapError::TooLarge(top));
        }
        self.push_range(node, pfns.start.phys()..pfns.end.phys(), false)
    }

    /// Mark `pfns` (pageblock-aligned, inside added memory) as a CMA area.
    pub fn add_cma_range(&mut self, pfns: Range<Pfn>) -> Result<&mut MemoryMap, MapError> {
        let aligned = pfns.start.is_aligned(crate::types::Order::PAGEBLOCK)
            && pfns.end.is_aligned(crate::types::Order::PAGEBLOCK)
            && pfns.start < pfns.end;
        let inside =
            self.ranges().iter().any(|r| !r.movable && r.start <= pfns.start && pfns.end <= r.end);
        if !aligned || !inside {
            return Err(MapError::BadCmaRange(pfns));
        }
        if self.nr_cma == MAX_CMA_RANGES {
            return Err(MapError::TooManyRanges { max: MAX_CMA_RANGES });
        }
        self.cma[self.nr_cma] = (pfns.start, pfns.end);
        self.nr_cma += 1;
        Ok(self)
    }

    /// Describe every CPU's caches (the LLC slice decides FREE_HIGH_BATCH; docs/kernel-reference.md
    /// §2.7). Default: unknown (0), which leaves the flag off. Per-CPU values can be set later with
    /// `PageAllocator::set_cpu_cache`.
    pub fn set_cpu_cache(&mut self, cache: CacheInfo) -> &mut MemoryMap {
        self.cpu_cache = cache;
        self
    }

    /// Give `node` `n` CPUs. CPU numbers are assigned in node order: node 0's CPUs first.
    ///
    /// # Errors
    /// [`MapError::NodeOutOfRange`] for a node at or above [`MAX_NODES`] (checked before the
    /// per-node table grows to it), [`MapError::TooManyCpus`] if the machine would have more
    /// than [`MAX_CPUS`]. The map is unchanged then.
    pub fn set_cpus(&mut self, node: NodeId, n: u32) -> Result<&mut MemoryMap, MapError> {
        check_node(node)?;
        let others: u64 = self.node_cpus[..self.nr_cpu_nodes]
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != node.index())
            .map(|(_, &c)| u64::from(c))
            .sum();
        let total = others + u64::from(n);
        if total > u64::from(MAX_CPUS) {
            return Err(MapError::TooManyCpus { total });
        }
        // Entries past the old end are still 0 (only `set_cpus` writes them).
        self.nr_cpu_nodes = self.nr_cpu_nodes.max(node.index() + 1);
        self.node_cpus[node.index()] = n;
        Ok(self)
    }

    /// Number of nodes (the highest node number used, plus one).
    pub fn nr_nodes(&self) -> usize {
        let by_mem = self.ranges().iter().map(|r| r.node.index() + 1).max().unwrap_or(0);
        by_mem.max(self.nr_cpu_nodes)
    }

    /// Total CPUs (at most [`MAX_CPUS`]: `set_cpus` refuses more).
    pub fn nr_cpus(&self) -> u32 {
        self.node_cpus[..self.nr_cpu_nodes].iter().sum()
    }

    /// The node CPU `cpu` sits on, if it exists.
    pub fn node_of_cpu(&self, cpu: CpuId) -> Option<NodeId> {
        let mut first = 0u32;
        for (node, &n) in self.node_cpus[..self.nr_cpu_nodes].iter().enumerate() {
            if cpu.0 < first + n {
                return Some(NodeId(node as u32));
            }
            first += n;
        }
        None
    }

    /// Present frames in all ranges.
    pub fn present_pages(&self) -> u64 {
        self.ranges().iter().map(|r| r.end.0 - r.start.0).sum()
    }

    fn push_range(
        &mut self,
        node: NodeId,
        phys: Range<u64>,
        movable: bool,
    ) -> Result<&mut MemoryMap, MapError> {
        check_node(node)?;
        let start = Pfn(phys.start.div_ceil(PAGE_SIZE));
        let end = Pfn::from_phys(phys.end);
        if start >= end {
            return Err(MapError::EmptyRange { start: phys.start, end: phys.end });
        }
        if end.0 > MAX_PFN {
            return Err(MapError::TooLarge(end));
        }
        if let Some(r) = self.ranges().iter().find(|r| r.start < end && start < r.end) {
            return Err(MapError::Overlap { start, existing: r.start });
        }
        if self.nr_ranges == MAX_RANGES {
            return Err(MapError::TooManyRanges { max: MAX_RANGES });
        }
        // Insert in order of first frame (the ranges do not overlap, so the order is total).
        let at = self.ranges().partition_point(|r| r.start < start);
        self.ranges.copy_within(at..self.nr_ranges, at + 1);
        self.ranges[at] = MemRange { node, start, end, movable };
        self.nr_ranges += 1;
        Ok(self)
    }

    /// The pieces of present memory of one (node, zone type), sorted, after splitting at the
    /// zone limits.
    pub(crate) fn zone_pieces(
        &self,
        node: NodeId,
        zone: ZoneType,
    ) -> impl Iterator<Item = Range<Pfn>> + Clone + '_ {
        let limits = self.limits;
        self.ranges().iter().filter(move |r| r.node == node).filter_map(move |r| {
            if r.movable || zone == ZoneType::Movable {
                return (r.movable && zone == ZoneType::Movable).then_some(r.start..r.end);
            }
            let (lo, hi) = match zone {
                ZoneType::Dma => (Pfn(0), limits.dma_end),
                ZoneType::Dma32 => (limits.dma_end, limits.dma32_end),
                _ => (limits.dma32_end.max(limits.dma_end), Pfn(u64::MAX)),
            };
            let (s, e) = (r.start.max(lo), r.end.min(hi));
            (s < e).then_some(s..e)
        })
    }
}

/// Refuse a node number at or above [`MAX_NODES`], before anything is sized from it.
fn check_node(node: NodeId) -> Result<(), MapError> {
    if node.0 >= MAX_NODES {
        return Err(MapError::NodeOutOfRange(node));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::ToString;
    use alloc::vec::Vec;

    fn pieces(m: &MemoryMap, zone: ZoneType) -> Vec<Range<Pfn>> {
        m.zone_pieces(NodeId(0), zone).collect()
    }

    #[test]
    fn ranges_round_inward_and_split_at_zone_limits() {
        let mut m = MemoryMap::new();
        m.add_range(NodeId(0), 0x800..0x2000).unwrap(); // rounds to pfn 1..2
        m.add_range(NodeId(0), (8 << 20)..(5 << 30)).unwrap();
        m.set_cpus(NodeId(0), 2).unwrap();
        assert_eq!(pieces(&m, ZoneType::Dma), [Pfn(1)..Pfn(2), Pfn(2048)..Pfn(4096)]);
        assert_eq!(pieces(&m, ZoneType::Dma32), [Pfn(4096)..Pfn(1 << 20)]);
        assert_eq!(pieces(&m, ZoneType::Normal), [Pfn(1 << 20)..Pfn(5 << 18)]);
        assert!(pieces(&m, ZoneType::Movable).is_empty());
    }

    /// Ranges given out of order come out sorted, movable ones only in ZONE_MOVABLE.
    #[test]
    fn pieces_are_sorted_whatever_order_the_ranges_came_in() {
        let mut m = MemoryMap::new();
        m.add_range(NodeId(0), (8 << 20)..(12 << 20)).unwrap();
        m.add_movable_range(NodeId(0), (6 << 30)..(7 << 30)).unwrap();
        m.add_range(NodeId(0), (1 << 20)..(2 << 20)).unwrap();
        m.add_range(NodeId(0), (4 << 20)..(5 << 20)).unwrap();
        assert_eq!(
            pieces(&m, ZoneType::Dma),
            [Pfn(256)..Pfn(512), Pfn(1024)..Pfn(1280), Pfn(2048)..Pfn(3072)]
        );
        assert_eq!(pieces(&m, ZoneType::Movable), [Pfn(6 << 18)..Pfn(7 << 18)]);
        assert!(pieces(&m, ZoneType::Normal).is_empty());
    }

    /// The fixed tables refuse one range too many and are left as they were.
    #[test]
    fn a_range_beyond_the_table_is_refused() {
        let mut m = MemoryMap::new();
        for i in 0..MAX_RANGES as u64 {
            m.add_pfn_range(NodeId(0), Pfn(1024 * i)..Pfn(1024 * i + 512)).unwrap();
        }
        let full = m.present_pages();
        let over = Pfn(1 << 30)..Pfn((1 << 30) + 512);
        assert_eq!(
            m.add_pfn_range(NodeId(0), over).unwrap_err(),
            MapError::TooManyRanges { max: MAX_RANGES }
        );
        assert_eq!(m.present_pages(), full);
        for i in 0..MAX_CMA_RANGES as u64 {
            m.add_cma_range(Pfn(1024 * i)..Pfn(1024 * i + 512)).unwrap();
        }
        assert_eq!(
            m.add_cma_range(Pfn(0)..Pfn(512)).unwrap_err(),
            MapError::TooManyRanges { max: MAX_CMA_RANGES }
        );
        assert_eq!(m.cma().count(), MAX_CMA_RANGES);
    }

    #[test]
    fn bad_ranges_are_refused() {
        let mut m = MemoryMap::new();
        assert_eq!(
            m.add_range(NodeId(0), 0x800..0xfff).unwrap_err(),
            MapError::EmptyRange { start: 0x800, end: 0xfff }
        );
        m.add_range(NodeId(0), 0..0x10000).unwrap();
        assert!(matches!(m.add_range(NodeId(1), 0x8000..0x20000), Err(MapError::Overlap { .. })));
        assert!(matches!(m.add_cma_range(Pfn(0)..Pfn(100)), Err(MapError::BadCmaRange(_))));
    }

    #[test]
    fn cpus_are_numbered_in_node_order() {
        let mut m = MemoryMap::new();
        m.set_cpus(NodeId(0), 2).unwrap().set_cpus(NodeId(1), 3).unwrap();
        assert_eq!(m.nr_cpus(), 5);
        assert_eq!(m.node_of_cpu(CpuId(1)), Some(NodeId(0)));
        assert_eq!(m.node_of_cpu(CpuId(2)), Some(NodeId(1)));
        assert_eq!(m.node_of_cpu(CpuId(5)), None);
    }

    /// Node numbers are bounded before anything is sized from them: `u32::MAX` used to grow
    /// the per-node CPU table to 2^32 entries (a 16 GiB allocation) before the node limit was
    /// checked at build time.
    #[test]
    fn node_numbers_are_bounded_first() {
        let mut m = MemoryMap::new();
        for node in [NodeId(u32::MAX), NodeId(MAX_NODES)] {
            assert_eq!(m.set_cpus(node, 1).unwrap_err(), MapError::NodeOutOfRange(node));
            assert_eq!(m.add_range(node, 0..1 << 30).unwrap_err(), MapError::NodeOutOfRange(node));
            assert_eq!(m.add_movable_range(node, 0..1 << 30).unwrap_err().to_string(), {
                format!("node {} is out of range: a machine has nodes 0..=1023", node.0)
            });
        }
        assert_eq!((m.nr_nodes(), m.nr_cpus(), m.nr_cpu_nodes), (0, 0, 0));
        m.set_cpus(NodeId(MAX_NODES - 1), 1).unwrap();
        assert_eq!((m.nr_nodes(), m.nr_cpus()), (1024, 1));
    }

    /// Frame numbers whose byte address overflows 64 bits are refused, not wrapped.
    #[test]
    fn frame_ranges_beyond_the_address_space_are_refused() {
        let mut m = MemoryMap::new();
        let huge = Pfn(1 << 60);
        assert_eq!(
            m.add_pfn_range(NodeId(0), huge..Pfn(huge.0 + 16)).unwrap_err(),
            MapError::TooLarge(Pfn(huge.0 + 16))
        );
        let top = Pfn(MAX_PFN);
        assert_eq!(m.add_pfn_range(NodeId(0), Pfn(0)..top).unwrap_err(), MapError::TooLarge(top));
        assert_eq!(m.present_pages(), 0);
        m.add_pfn_range(NodeId(0), Pfn(MAX_PFN - 16)..Pfn(MAX_PFN - 1)).unwrap();
        assert_eq!(m.present_pages(), 15);
    }

    /// CPU counts are bounded as they are given, so their sum cannot wrap (two nodes of
    /// `u32::MAX` CPUs summed to `u32::MAX - 1` in a release build).
    #[test]
    fn cpu_counts_are_bounded_as_they_are_given() {
        let mut m = MemoryMap::new();
        let total = u64::from(u32::MAX);
        assert_eq!(m.set_cpus(NodeId(0), u32::MAX).unwrap_err(), MapError::TooManyCpus { total });
        m.set_cpus(NodeId(0), MAX_CPUS - 1).unwrap();
        assert_eq!(
            m.set_cpus(NodeId(1), 2).unwrap_err(),
            MapError::TooManyCpus { total: u64::from(MAX_CPUS) + 1 }
        );
        assert_eq!(m.nr_cpus(), MAX_CPUS - 1);
        // Replacing a node's count is measured against the others only.
        m.set_cpus(NodeId(0), MAX_CPUS).unwrap();
        assert_eq!((m.nr_cpus(), m.nr_nodes()), (MAX_CPUS, 1));
    }
}

/// What a CPU's caches look like, for the FREE_HIGH_BATCH decision (docs/kernel-reference.md §2.7).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheInfo {
    /// Last-level cache size divided by the CPUs sharing it, bytes (0 if unknown).
    pub llc_slice_bytes: u64,
    /// Σ over the CPU's data and unified caches of (size / CPUs sharing it), bytes: the v1
    /// form of the same input (0 if unknown).
    pub data_slices_bytes: u64,
}

//! Typed errors of the public API. The core never panics on caller input: every bad request
//! comes back as one of these, and leaves every structure as it was.

use core::fmt;

use crate::gfp::Gfp;
use crate::migratetype::MigrateType;
use crate::types::{CpuId, NodeId, Order, Pfn, ZoneIdx};

/// Why an allocation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AllocError {
    /// `order > MAX_PAGE_ORDER`.
    InvalidOrder(Order),
    /// The CPU is not one of the machine's.
    InvalidCpu(CpuId),
    /// The node is not one of the machine's.
    InvalidNode(NodeId),
    /// The flags name more than one of `DMA`, `DMA32` and `HIGHMEM`: no zone is below all
    /// the limits they name (the kernel's `GFP_ZONE_BAD`).
    ImpossibleZones(Gfp),
    /// A page_frag alignment that is not a power of two in `1..=4096` (a fragment cannot be
    /// aligned beyond the page it is carved from, and the cache falls back to order-0 pages).
    InvalidAlign(u32),
    /// A page_frag fragment larger than the largest page the cache carves (32 KiB).
    FragTooLarge {
        /// The size asked for, bytes.
        size: u32,
    },
    /// The page_frag cache holds a page of another allocator: a cache serves one allocator.
    ForeignFragCache,
    /// The prepared request (`AllocRequest`) was prepared by another allocator.
    ForeignRequest,
    /// No zone the flags allow had a free block above the watermark the flags allow, after
    /// draining the per-CPU lists and releasing the highatomic reserve where the flags permit.
    OutOfMemory {
        /// The order asked for.
        order: Order,
    },
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocError::InvalidOrder(o) => write!(f, "order {o} is above the largest order 10"),
            AllocError::InvalidCpu(c) => write!(f, "cpu {} does not exist", c.0),
            AllocError::InvalidNode(n) => write!(f, "node {} does not exist", n.0),
            AllocError::ImpossibleZones(g) => write!(
                f,
                "gfp {:#x} names more than one of DMA, DMA32 and HIGHMEM: no zone satisfies it",
                g.0
            ),
            AllocError::InvalidAlign(a) => {
                write!(f, "fragment alignment {a} is not a power of two in 1..=4096")
            }
            AllocError::FragTooLarge { size } => write!(
                f,
                "a fragment of {size} bytes is larger than the largest page_frag page ({} bytes)",
                crate::types::PAGE_FRAG_CACHE_MAX_SIZE
            ),
            AllocError::ForeignFragCache => {
                f.write_str("the page_frag cache holds a page of another allocator")
            }
            AllocError::ForeignRequest => {
                f.write_str("the allocation request was prepared by another allocator")
            }
            AllocError::OutOfMemory { order } => {
                write!(f, "out of memory for an order-{order} block")
            }
        }
    }
}

/// Why a free was refused. The block, if any, stays as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FreeError {
    /// `order > MAX_PAGE_ORDER`.
    InvalidOrder(Order),
    /// The CPU is not one of the machine's.
    InvalidCpu(CpuId),
    /// The frame lies in no zone of this allocator.
    ForeignFrame(Pfn),
    /// The frame is not aligned to the order given.
    Misaligned {
        /// The frame.
        pfn: Pfn,
        /// The order given.
        order: Order,
    },
    /// The block is already free (on a buddy or a per-CPU list, or being freed right now).
    DoubleFree {
        /// The frame.
        pfn: Pfn,
    },
    /// The block was allocated with another order.
    WrongOrder {
        /// The frame.
        pfn: Pfn,
        /// The order given.
        given: Order,
        /// The order it was allocated with.
        allocated: Order,
    },
    /// The frame is inside an allocated block but is not its first frame.
    TailPage {
        /// The frame given.
        pfn: Pfn,
        /// The first frame of the block holding it.
        head: Pfn,
    },
    /// The frame is inside a free block, or inside a block larger than the order given, or
    /// not managed at all (a hole or reserved memory).
    NotAllocated {
        /// The frame.
        pfn: Pfn,
    },
    /// Frame `bad` inside the allocated block at `pfn` is not one of its tail frames: the
    /// allocator's metadata for the block is corrupt (the kernel's `bad_page`). Only the
    /// `debug-vm` feature checks every frame of a freed block; the block is left allocated,
    /// as the kernel leaks a bad page rather than put it on a free list.
    BadPage {
        /// The block's first frame.
        pfn: Pfn,
        /// The first frame found in the wrong state.
        bad: Pfn,
    },
    /// The block is a page_frag page others still hold: the cache carving it, or more than
    /// one fragment not given back. Its last reference frees it (`page_frag_free`,
    /// `PageFragCache::drain`).
    StillReferenced {
        /// The frame.
        pfn: Pfn,
        /// References held on it.
        refs: u32,
    },
}

impl fmt::Display for FreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FreeError::InvalidOrder(o) => write!(f, "order {o} is above the largest order 10"),
            FreeError::InvalidCpu(c) => write!(f, "cpu {} does not exist", c.0),
            FreeError::ForeignFrame(p) => write!(f, "pfn {p} belongs to no zone of this allocator"),
            FreeError::Misaligned { pfn, order } => {
                write!(f, "pfn {pfn} is not aligned for an order-{order} block")
            }
            FreeError::DoubleFree { pfn } => write!(f, "double free of pfn {pfn}"),
            FreeError::WrongOrder { pfn, given, allocated } => {
                write!(f, "pfn {pfn} freed as order {given} but was allocated as order {allocated}")
            }
            FreeError::TailPage { pfn, head } => {
                write!(f, "pfn {pfn} is a tail page of the block at {head}")
            }
            FreeError::NotAllocated { pfn } => write!(f, "pfn {pfn} is not an allocated block"),
            FreeError::BadPage { pfn, bad } => {
                write!(f, "bad page: pfn {bad} in the block at {pfn} is not a tail frame")
            }
            FreeError::StillReferenced { pfn, refs } => write!(
                f,
                "pfn {pfn} is a page_frag page with {refs} references held (its cache or its \
                 fragments); the last page_frag_free or cache drain frees it"
            ),
        }
    }
}

/// Why a pageblock could not be isolated or given back. Nothing was changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IsolateError {
    /// The CPU handle is not one of this allocator's.
    InvalidCpu(CpuId),
    /// The frame lies in no zone of this allocator.
    ForeignFrame(Pfn),
    /// The pageblock holding the frame is not wholly inside its zone.
    PartialBlock(Pfn),
    /// The pageblock is isolated already.
    AlreadyIsolated(Pfn),
    /// The pageblock is not isolated: there is nothing to give back.
    NotIsolated(Pfn),
    /// A pageblock cannot be given back as `MigrateType::Isolate`.
    IsolateTarget(MigrateType),
}

impl fmt::Display for IsolateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IsolateError::InvalidCpu(c) => write!(f, "cpu {} is not one of this allocator's", c.0),
            IsolateError::ForeignFrame(p) => {
                write!(f, "pfn {p} belongs to no zone of this allocator")
            }
            IsolateError::PartialBlock(p) => {
                write!(f, "the pageblock of pfn {p} is not wholly inside its zone")
            }
            IsolateError::AlreadyIsolated(p) => {
                write!(f, "the pageblock of pfn {p} is isolated already")
            }
            IsolateError::NotIsolated(p) => write!(f, "the pageblock of pfn {p} is not isolated"),
            IsolateError::IsolateTarget(mt) => {
                write!(f, "a pageblock cannot be given back as {mt}")
            }
        }
    }
}

/// Why a compaction request was refused. Nothing was changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompactError {
    /// The CPU handle is not one of this allocator's.
    InvalidCpu(CpuId),
    /// No zone has this index.
    InvalidZone(ZoneIdx),
    /// The node is not one of the machine's.
    InvalidNode(NodeId),
    /// `order > MAX_PAGE_ORDER`.
    InvalidOrder(Order),
}

impl fmt::Display for CompactError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompactError::InvalidCpu(c) => write!(f, "cpu {} is not one of this allocator's", c.0),
            CompactError::InvalidZone(z) => write!(f, "zone {} does not exist", z.0),
            CompactError::InvalidNode(n) => write!(f, "node {} does not exist", n.0),
            CompactError::InvalidOrder(o) => {
                write!(f, "order {} is above the largest, {}", o.0, crate::types::MAX_PAGE_ORDER)
            }
        }
    }
}

/// Why a `zone_pcp_disable` or `zone_pcp_enable` was refused. Nothing was changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PcpDisableError {
    /// The CPU handle is not one of this allocator's.
    InvalidCpu(CpuId),
    /// No zone has this index.
    InvalidZone(ZoneIdx),
    /// `zone_pcp_enable` on a zone whose pagesets are not disabled.
    NotDisabled(ZoneIdx),
}

impl fmt::Display for PcpDisableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PcpDisableError::InvalidCpu(c) => {
                write!(f, "cpu {} is not one of this allocator's", c.0)
            }
            PcpDisableError::InvalidZone(z) => write!(f, "zone {} does not exist", z.0),
            PcpDisableError::NotDisabled(z) => {
                write!(f, "the pagesets of zone {} are not disabled: nothing to enable", z.0)
            }
        }
    }
}

/// Why a run-time setting was refused. The setting in force stays as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SettingError {
    /// The value is outside the range the setting (its sysctl) accepts.
    OutOfRange {
        /// The setting.
        key: &'static str,
        /// The value given.
        got: u64,
        /// The largest value accepted.
        max: u64,
    },
}

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingError::OutOfRange { key, got, max } => {
                write!(f, "`{key}` = {got} is out of range; it takes 0..={max}")
            }
        }
    }
}

impl core::error::Error for AllocError {}
impl core::error::Error for FreeError {}
impl core::error::Error for IsolateError {}
impl core::error::Error for CompactError {}
impl core::error::Error for SettingError {}
impl core::error::Error for PcpDisableError {}

//! The error codes of the C API and the mapping of every Rust error onto them.
//!
//! Each code is a fixed negative number: a C program may store, compare and print them, and a
//! later version only adds codes. The Rust error enums are `#[non_exhaustive]`; a variant this
//! version does not know becomes [`PageallocError::Unknown`], never a wrong code.

use core::ffi::{c_char, c_int, CStr};
use core::fmt;

use pagealloc::{AllocError, BuildError, FreeError, MapError};

use crate::boundary::record;

/// Success: what a call that returns `int` returns when it succeeds (the functions that
/// return a length return the length, 0 or more).
pub const PAGEALLOC_OK: c_int = 0;

/// Error codes: a call that returns `int` returns `PAGEALLOC_OK` (0) or one of these
/// negative codes. `pagealloc_strerror` names a code; `pagealloc_last_error_message` gives
/// the details of the calling thread's last failure.
///
/// A call that fails changes nothing: the allocator and the map stay as they were.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageallocError {
    /// A pointer argument that must not be NULL was NULL.
    NullPointer = -1,
    /// An argument is malformed: a string that is not UTF-8, an index past the end of a list,
    /// zone limits out of order.
    BadArgument = -2,
    /// No policy preset has this name (`pagealloc_preset_name` lists them).
    UnknownPreset = -3,
    /// The CPU is not one of the machine's.
    BadCpu = -4,
    /// The node is not one of the machine's, or its number is at or above 1024.
    BadNode = -5,
    /// The order is above `PAGEALLOC_MAX_ORDER`.
    BadOrder = -6,
    /// The GFP flags name more than one of DMA, DMA32 and HIGHMEM: no zone satisfies them.
    BadGfp = -7,
    /// No zone the flags allow has a free block of the order asked for, after draining the
    /// per-CPU pagesets and using the reserves the flags allow.
    OutOfMemory = -8,
    /// The block is free already (a double free).
    DoubleFree = -9,
    /// The block was allocated with another order.
    WrongOrder = -10,
    /// The frame belongs to no zone of this allocator.
    ForeignFrame = -11,
    /// The frame is not aligned to the order given (a block of order n starts at a multiple
    /// of 2^n frames).
    Misaligned = -12,
    /// The frame lies inside an allocated block but is not its first frame.
    TailPage = -13,
    /// The frame is not an allocated block: inside a free block, inside a larger block than
    /// the order given, or not managed (a hole or reserved memory).
    NotAllocated = -14,
    /// The allocator's metadata for the block is corrupt (only the core's `debug-vm` feature
    /// checks for this on every free); the block stays allocated.
    BadPage = -15,
    /// The block is a page_frag page that others still hold.
    StillReferenced = -16,
    /// A memory range holds no whole page, or reaches beyond 2^52 frames.
    BadRange = -17,
    /// A memory range overlaps one added before.
    Overlap = -18,
    /// More CPUs (or nodes) than the allocator supports (2^20 CPUs).
    TooManyCpus = -19,
    /// The machine has no CPU.
    NoCpus = -20,
    /// The machine has no memory.
    NoMemory = -21,
    /// The memory map cannot be built into zones: two nodes' zones interleave, a zone spans
    /// more than 2^32-1 frames, a CMA range is not pageblock-aligned inside one node, or a
    /// range is one more than a map holds (1024 memory ranges, 32 CMA ranges).
    BadMap = -22,
    /// The host could not allocate the allocator's metadata (16 bytes a frame of each zone's
    /// span): the map describes more memory than this host can manage.
    NoMetadataMemory = -23,
    /// No counter has this name (`pagealloc_counter_name` lists them).
    UnknownCounter = -24,
    /// `pagealloc_validate` found a broken invariant: the allocator's state is corrupt.
    Corrupt = -25,
    /// The library panicked inside this call (a bug: please report it). The allocator may be
    /// inconsistent, so every later call on it returns this code too; only
    /// `pagealloc_destroy` still works.
    Panicked = -26,
    /// An error this version of the library has no code for.
    Unknown = -27,
}

/// Every code, in order (not `pub`: the header generator would copy it into C).
const ALL: [PageallocError; 27] = [
    PageallocError::NullPointer,
    PageallocError::BadArgument,
    PageallocError::UnknownPreset,
    PageallocError::BadCpu,
    PageallocError::BadNode,
    PageallocError::BadOrder,
    PageallocError::BadGfp,
    PageallocError::OutOfMemory,
    PageallocError::DoubleFree,
    PageallocError::WrongOrder,
    PageallocError::ForeignFrame,
    PageallocError::Misaligned,
    PageallocError::TailPage,
    PageallocError::NotAllocated,
    PageallocError::BadPage,
    PageallocError::StillReferenced,
    PageallocError::BadRange,
    PageallocError::Overlap,
    PageallocError::TooManyCpus,
    PageallocError::NoCpus,
    PageallocError::NoMemory,
    PageallocError::BadMap,
    PageallocError::NoMetadataMemory,
    PageallocError::UnknownCounter,
    PageallocError::Corrupt,
    PageallocError::Panicked,
    PageallocError::Unknown,
];

impl PageallocError {
    /// The code as C sees it.
    pub const fn code(self) -> c_int {
        self as c_int
    }

    /// The code with this number, if there is one.
    pub fn from_code(code: c_int) -> Option<PageallocError> {
        ALL.into_iter().find(|e| e.code() == code)
    }

    /// What the code means, as `pagealloc_strerror` returns it.
    pub const fn message(self) -> &'static CStr {
        match self {
            PageallocError::NullPointer => c"a required pointer argument is NULL",
            PageallocError::BadArgument => c"malformed argument",
            PageallocError::UnknownPreset => c"no policy preset has this name",
            PageallocError::BadCpu => c"no such CPU",
            PageallocError::BadNode => c"no such node",
            PageallocError::BadOrder => c"order above the largest (10)",
            PageallocError::BadGfp => c"GFP flags name more than one of DMA, DMA32, HIGHMEM",
            PageallocError::OutOfMemory => c"out of memory",
            PageallocError::DoubleFree => c"double free",
            PageallocError::WrongOrder => c"block freed with another order than allocated",
            PageallocError::ForeignFrame => c"frame belongs to no zone of this allocator",
            PageallocError::Misaligned => c"frame not aligned to the order",
            PageallocError::TailPage => c"frame is a tail page of an allocated block",
            PageallocError::NotAllocated => c"frame is not an allocated block",
            PageallocError::BadPage => c"bad page: the block's metadata is corrupt",
            PageallocError::StillReferenced => c"page_frag page still referenced",
            PageallocError::BadRange => c"memory range holds no whole page or is too large",
            PageallocError::Overlap => c"memory range overlaps another",
            PageallocError::TooManyCpus => c"too many CPUs or nodes",
            PageallocError::NoCpus => c"the machine has no CPU",
            PageallocError::NoMemory => c"the machine has no memory",
            PageallocError::BadMap => c"the memory map cannot be built into zones",
            PageallocError::NoMetadataMemory => c"cannot allocate the allocator's metadata",
            PageallocError::UnknownCounter => c"no counter has this name",
            PageallocError::Corrupt => c"allocator state is corrupt",
            PageallocError::Panicked => c"the library panicked; the allocator is unusable",
            PageallocError::Unknown => c"unknown error",
        }
    }
}

/// Name a status code: a static, NUL-terminated string that the caller must not free. Any
/// `int` is accepted; one that is no code gives "unknown error code". Thread-safe.
#[no_mangle]
#[allow(unsafe_code)] // `no_mangle`: the symbol is the C API; nothing else is unsafe here.
pub extern "C" fn pagealloc_strerror(code: c_int) -> *const c_char {
    match PageallocError::from_code(code) {
        Some(e) => e.message().as_ptr(),
        None if code == PAGEALLOC_OK => c"success".as_ptr(),
        None => c"unknown error code".as_ptr(),
    }
}

/// A failed call: its code, with the details recorded as the calling thread's last error
/// when it was made.
#[derive(Debug)]
pub(crate) struct Failure(pub(crate) PageallocError);

impl Failure {
    /// A failure with `code`, recording `detail` as the thread's last error message.
    pub(crate) fn new(code: PageallocError, detail: impl fmt::Display) -> Failure {
        record(&detail);
        Failure(code)
    }

    /// A NULL pointer where `what` was needed.
    pub(crate) fn null(what: &str) -> Failure {
        Failure::new(PageallocError::NullPointer, format_args!("`{what}` is NULL"))
    }
}

impl From<MapError> for Failure {
    fn from(e: MapError) -> Failure {
        let code = match e {
            MapError::EmptyRange { .. } | MapError::TooLarge(_) => PageallocError::BadRange,
            MapError::Overlap { .. } => PageallocError::Overlap,
            MapError::NodeOutOfRange(_) => PageallocError::BadNode,
            MapError::TooManyCpus { .. } | MapError::TooManyNodesOrCpus => {
                PageallocError::TooManyCpus
            }
            MapError::NoCpus => PageallocError::NoCpus,
            MapError::NoMemory => PageallocError::NoMemory,
            MapError::BadCmaRange(_)
            | MapError::InterleavedZones { .. }
            | MapError::ZoneTooLarge { .. }
            | MapError::TooManyRanges { .. } => PageallocError::BadMap,
            _ => PageallocError::Unknown,
        };
        Failure::new(code, e)
    }
}

impl From<BuildError> for Failure {
    fn from(e: BuildError) -> Failure {
        match e {
            BuildError::Map(m) => Failure::from(m),
            // The C API builds with the default tunables, which are in range.
            BuildError::Tunables(_) => Failure::new(PageallocError::BadArgument, e),
            BuildError::NoMetadataMemory { .. } | BuildError::NoTableMemory => {
                Failure::new(PageallocError::NoMetadataMemory, e)
            }
            _ => Failure::new(PageallocError::Unknown, e),
        }
    }
}

impl From<AllocError> for Failure {
    fn from(e: AllocError) -> Failure {
        let code = match e {
            AllocError::InvalidOrder(_) => PageallocError::BadOrder,
            AllocError::InvalidCpu(_) => PageallocError::BadCpu,
            AllocError::InvalidNode(_) => PageallocError::BadNode,
            AllocError::ImpossibleZones(_) => PageallocError::BadGfp,
            AllocError::OutOfMemory { .. } => PageallocError::OutOfMemory,
            // The C API has no prepared requests.
            AllocError::ForeignRequest => PageallocError::BadArgument,
            // page_frag's errors: the C API has no page_frag calls.
            AllocError::InvalidAlign(_)
            | AllocError::FragTooLarge { .. }
            | AllocError::ForeignFragCache => PageallocError::BadArgument,
            _ => PageallocError::Unknown,
        };
        Failure::new(code, e)
    }
}

impl From<FreeError> for Failure {
    fn from(e: FreeError) -> Failure {
        let code = match e {
            FreeError::InvalidOrder(_) => PageallocError::BadOrder,
            FreeError::InvalidCpu(_) => PageallocError::BadCpu,
            FreeError::ForeignFrame(_) => PageallocError::ForeignFrame,
            FreeError::Misaligned { .. } => PageallocError::Misaligned,
            FreeError::DoubleFree { .. } => PageallocError::DoubleFree,
            FreeError::WrongOrder { .. } => PageallocError::WrongOrder,
            FreeError::TailPage { .. } => PageallocError::TailPage,
            FreeError::NotAllocated { .. } => PageallocError::NotAllocated,
            FreeError::BadPage { .. } => PageallocError::BadPage,
            FreeError::StillReferenced { .. } => PageallocError::StillReferenced,
            _ => PageallocError::Unknown,
        };
        Failure::new(code, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pagealloc::{CpuId, NodeId, Order, Pfn};

    #[test]
    fn codes_are_distinct_and_listed_in_order() {
        for (i, e) in ALL.iter().enumerate() {
            assert_eq!(e.code(), -1 - i as c_int, "{e:?}");
            assert_eq!(PageallocError::from_code(e.code()), Some(*e));
        }
        assert_eq!(PageallocError::from_code(PAGEALLOC_OK), None);
        assert_eq!(PageallocError::from_code(-1 - ALL.len() as c_int), None);
    }

    #[test]
    fn every_rust_error_has_its_own_code() {
        let pfn = Pfn(512);
        let o = Order(1);
        let cases: [(Failure, PageallocError); 13] = [
            (FreeError::DoubleFree { pfn }.into(), PageallocError::DoubleFree),
            (
                FreeError::WrongOrder { pfn, given: o, allocated: Order(0) }.into(),
                PageallocError::WrongOrder,
            ),
            (FreeError::ForeignFrame(pfn).into(), PageallocError::ForeignFrame),
            (FreeError::Misaligned { pfn, order: o }.into(), PageallocError::Misaligned),
            (FreeError::TailPage { pfn, head: Pfn(0) }.into(), PageallocError::TailPage),
            (FreeError::NotAllocated { pfn }.into(), PageallocError::NotAllocated),
            (FreeError::InvalidCpu(CpuId(9)).into(), PageallocError::BadCpu),
            (AllocError::OutOfMemory { order: o }.into(), PageallocError::OutOfMemory),
            (AllocError::InvalidOrder(Order(11)).into(), PageallocError::BadOrder),
            (MapError::NodeOutOfRange(NodeId(5000)).into(), PageallocError::BadNode),
            (BuildError::Map(MapError::NoCpus).into(), PageallocError::NoCpus),
            (MapError::Overlap { start: pfn, existing: pfn }.into(), PageallocError::Overlap),
            (MapError::TooManyRanges { max: 1024 }.into(), PageallocError::BadMap),
        ];
        for (got, want) in cases {
            assert_eq!(got.0, want);
        }
    }
}

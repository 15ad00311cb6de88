//! Typed errors. A refused free changes nothing: the object, its slab and every list stay as
//! they were.

use core::fmt;

use pagealloc::{AllocError, CpuId, FreeError, Pfn};

/// Why a slab-layer call was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SlabError {
    /// The object is free already (or its slab was given back to the page allocator, which
    /// happens only once every object in it is free).
    DoubleFree {
        /// The slab's first frame.
        slab: Pfn,
        /// The object's index in the slab.
        index: u32,
    },
    /// The object was handed out by another cache (or another kmalloc set).
    ForeignObject {
        /// The slab's first frame.
        slab: Pfn,
        /// The object's index in its slab.
        index: u32,
    },
    /// No slab of this cache holds the address.
    NotSlab {
        /// The frame of the address.
        pfn: Pfn,
    },
    /// The address is inside a slab but not at the start of an object (kernel
    /// `check_valid_pointer`).
    Misaligned {
        /// The slab's first frame.
        slab: Pfn,
        /// Bytes from the slab's start.
        offset: u64,
        /// The cache's object stride.
        size: u32,
    },
    /// The index is past the slab's last object (in the leftover at its end).
    BadIndex {
        /// The slab's first frame.
        slab: Pfn,
        /// The index given.
        index: u64,
        /// Objects in the slab.
        objects: u32,
    },
    /// The CPU handle is not one of this page allocator's.
    InvalidCpu(CpuId),
    /// The object size is 0 or above the largest a cache or kmalloc serves.
    BadSize {
        /// The size asked for, bytes.
        size: u64,
    },
    /// An alignment that is not a power of two, or above the largest object.
    BadAlign(u32),
    /// A SLUB parameter out of its range.
    BadConfig {
        /// The parameter.
        key: &'static str,
        /// The value given.
        value: u64,
    },
    /// The cache still holds allocated objects, so it cannot be shut down.
    Busy {
        /// Objects still allocated.
        objects: u64,
    },
    /// The page allocator could not provide a slab (or a large kmalloc block).
    Alloc(AllocError),
    /// The page allocator refused to take a block back. Only a large kmalloc free can see
    /// this for a caller's reason; from a slab it would be a bug in this layer.
    PageFree(FreeError),
}

impl fmt::Display for SlabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SlabError::DoubleFree { slab, index } => {
                write!(f, "double free of object {index} of the slab at pfn {slab}")
            }
            SlabError::ForeignObject { slab, index } => write!(
                f,
                "object {index} of the slab at pfn {slab} was not allocated from this cache"
            ),
            SlabError::NotSlab { pfn } => write!(f, "pfn {pfn} is in no slab of this cache"),
            SlabError::Misaligned { slab, offset, size } => write!(
                f,
                "offset {offset} in the slab at pfn {slab} is not a multiple of the object \
                 size {size}"
            ),
            SlabError::BadIndex { slab, index, objects } => write!(
                f,
                "object index {index} is past the {objects} objects of the slab at pfn {slab}"
            ),
            SlabError::InvalidCpu(c) => write!(f, "cpu {} is not one of this allocator's", c.0),
            SlabError::BadSize { size } => write!(
                f,
                "size {size} is 0 or above the largest object ({} bytes)",
                crate::order::MAX_OBJECT_SIZE
            ),
            SlabError::BadAlign(a) => {
                write!(f, "alignment {a} is not a power of two of at most 4 MiB")
            }
            SlabError::BadConfig { key, value } => write!(f, "`{key}` = {value} is out of range"),
            SlabError::Busy { objects } => {
                write!(f, "the cache still holds {objects} allocated objects")
            }
            SlabError::Alloc(e) => write!(f, "page allocator: {e}"),
            SlabError::PageFree(e) => write!(f, "page allocator refused a free: {e}"),
        }
    }
}

impl core::error::Error for SlabError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            SlabError::Alloc(e) => Some(e),
            SlabError::PageFree(e) => Some(e),
            _ => None,
        }
    }
}

impl From<AllocError> for SlabError {
    fn from(e: AllocError) -> SlabError {
        SlabError::Alloc(e)
    }
}

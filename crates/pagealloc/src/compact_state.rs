//! What compaction keeps per zone between runs (kernel `struct zone`'s `compact_*` fields):
//! where the scanners left off, and the deferral after failures. A zone holds one; the
//! compaction code reads and writes it. It lives apart from `compaction.rs` so that the zone
//! (below compaction in the layers) does not import the code that works on it.

use crate::sync::{AtomicBool, AtomicU32, AtomicU64};
use crate::types::{Pfn, MAX_PAGE_ORDER, PAGEBLOCK_NR_PAGES};

/// A zone's compaction state: where the scanners left off, and deferral after failures.
/// Atomics read and written without a lock, as the kernel's zone fields are: hints that a
/// racing compaction may overwrite, never a correctness matter.
#[derive(Debug)]
pub(crate) struct CompactState {
    /// Where the migrate scanner resumes: [async, sync] (kernel `compact_cached_migrate_pfn`).
    pub(crate) cached_migrate: [AtomicU64; 2],
    /// Where the free scanner resumes: a pageblock's first frame (`compact_cached_free_pfn`).
    pub(crate) cached_free: AtomicU64,
    /// Attempts considered since the last deferral (`compact_considered`).
    pub(crate) considered: AtomicU32,
    /// Attempts are deferred 2^shift times (`compact_defer_shift`).
    pub(crate) defer_shift: AtomicU32,
    /// The lowest order that failed (`compact_order_failed`); lower orders are not deferred.
    pub(crate) order_failed: AtomicU32,
    /// The scanners met in a direct compaction: clear the skip hints when kcompactd next
    /// goes to sleep (`compact_blockskip_flush`).
    pub(crate) blockskip_flush: AtomicBool,
}

/// The first frame of the last pageblock a zone `start..end` touches.
pub(crate) fn last_block(start: Pfn, end: Pfn) -> u64 {
    if end.0 > start.0 {
        (end.0 - 1) & !(PAGEBLOCK_NR_PAGES - 1)
    } else {
        start.0 & !(PAGEBLOCK_NR_PAGES - 1)
    }
}

impl CompactState {
    /// The state of a fresh zone spanning `start..end`.
    pub(crate) fn new(start: Pfn, end: Pfn) -> CompactState {
        CompactState {
            cached_migrate: [AtomicU64::new(start.0), AtomicU64::new(start.0)],
            cached_free: AtomicU64::new(last_block(start, end)),
            considered: AtomicU32::new(0),
            defer_shift: AtomicU32::new(0),
            order_failed: AtomicU32::new(u32::from(MAX_PAGE_ORDER) + 1),
            blockskip_flush: AtomicBool::new(false),
        }
    }
}

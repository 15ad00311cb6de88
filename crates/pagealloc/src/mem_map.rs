//! Per-frame metadata ("struct page"): 16 bytes per frame, in one array per zone indexed by
//! `pfn - zone_start_pfn`.
//!
//! Every field is an atomic accessed with `Relaxed` ordering. Ownership, not the atomics, makes
//! this correct: a frame's entry is written only by whoever owns the frame at that moment —
//! the zone lock for a free buddy block, the pcp lock for a block on a per-CPU list, the caller
//! (through the one claiming compare-exchange in [`Frame::claim_for_free`]) for an allocated
//! block. The locks' acquire/release orders those writes. The atomics exist so that a reader
//! holding a *different* lock may look at a frame it does not own (buddy merging peeks at a
//! neighbour that may sit on a per-CPU list) without a data race; such a reader only ever acts
//! on the `Buddy` state, which changes only under the zone lock it holds.

use crate::sync::{AtomicU32, Ordering::Acquire, Ordering::Relaxed};

use crate::table::{Carver, Table};
use crate::types::Order;

/// "No frame": the end of an index-linked list.
pub const NIL: u32 = u32::MAX;

/// What a frame currently is. Only the first frame (head) of a block carries the block's
/// state; every other managed frame of the block is `Tail`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum FrameState {
    /// A managed frame that is not the head of any block. Zero, so that a freshly mapped
    /// (zeroed) mem_map is all `Tail` and untouched parts of it cost no memory.
    Tail = 0,
    /// Not managed by the allocator: a hole in the zone's span or memory the caller reserved.
    Reserved = 1,
    /// Head of a free block on a buddy free list (PageBuddy).
    Buddy = 2,
    /// Head of a block on a per-CPU list.
    Pcp = 3,
    /// Head of a block handed to a caller.
    Allocated = 4,
    /// Head of a block whose free is in progress (claimed, not yet on any list).
    Freeing = 5,
    /// Head of a free block a compaction took off the free lists as a migration target: owned
    /// by that compaction until it moves a block there or gives it back. Never freeable.
    Isolated = 6,
    /// Head of a freed block waiting on a pageset's remote-free list (`Policy::remote_free`)
    /// for the CPU that owns the pageset to take it back.
    Remote = 7,
}

impl FrameState {
    const fn from_bits(v: u32) -> FrameState {
        match v & 0xf {
            0 => FrameState::Tail,
            2 => FrameState::Buddy,
            3 => FrameState::Pcp,
            4 => FrameState::Allocated,
            5 => FrameState::Freeing,
            6 => FrameState::Isolated,
            7 => FrameState::Remote,
            _ => FrameState::Reserved,
        }
    }
}

/// A decoded `info` word: state, block order and the list the block sits on (a migratetype
/// for buddy lists, a pindex for per-CPU lists).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FrameInfo {
    /// What the frame is.
    pub state: FrameState,
    /// Order of the block it heads (meaningless for `Tail`/`Reserved`).
    pub order: Order,
    /// Migratetype (buddy) or pindex (per-CPU list) of the list holding it.
    pub list: u8,
}

impl FrameInfo {
    /// A frame that heads nothing.
    pub const TAIL: FrameInfo = FrameInfo { state: FrameState::Tail, order: Order(0), list: 0 };
    /// A frame the allocator does not manage.
    pub const RESERVED: FrameInfo =
        FrameInfo { state: FrameState::Reserved, order: Order(0), list: 0 };

    #[inline]
    const fn pack(self) -> u32 {
        (self.state as u32) | ((self.order.0 as u32) << 4) | ((self.list as u32) << 8)
    }

    #[inline]
    const fn unpack(v: u32) -> FrameInfo {
        FrameInfo {
            state: FrameState::from_bits(v),
            order: Order(((v >> 4) & 0xf) as u8),
            list: ((v >> 8) & 0xff) as u8,
        }
    }
}

/// Why [`Frame::claim_unreferenced`] did not claim a block.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Unclaimed {
    /// The frame was not the head of an allocated block of that order: what it was.
    Was(FrameInfo),
    /// Allocated as asked, but others still hold references: the count.
    Referenced(u32),
}

/// Metadata of one page frame (at most 16 bytes: see the size assertion below).
#[derive(Debug)]
#[repr(C)]
pub struct Frame {
    /// Next frame index on the list this block is on, or [`NIL`], stored complemented (so
    /// that zeroed memory reads as NIL).
    next: AtomicU32,
    /// Previous frame index, or [`NIL`], stored complemented.
    prev: AtomicU32,
    /// Packed [`FrameInfo`].
    info: AtomicU32,
    /// Owner-defined word. Allocated: the page's reference count, 1 when handed out (the
    /// kernel's `set_page_refcounted`), which `page_frag_free` drops and a page_frag cache
    /// raises. On a per-CPU list (≤ 6.9 rules): the cached migratetype.
    aux: AtomicU32,
}

// Loom's atomics carry the model's bookkeeping and are larger; the models need no layout.
#[cfg(not(loom))]
const _: () = assert!(size_of::<Frame>() == 16);

impl Frame {
    /// A `Tail` frame on no list: all bits zero, the state a zeroed mem_map starts in.
    pub fn new() -> Frame {
        Frame {
            next: AtomicU32::new(0),
            prev: AtomicU32::new(0),
            info: AtomicU32::new(0),
            aux: AtomicU32::new(0),
        }
    }

    /// A frame table of `n` frames, each [`Frame::new`], in zeroed memory: from the heap, the
    /// OS hands out zero pages lazily, so building an allocator over hundreds of GiB touches
    /// only the metadata of the frames it writes (block heads), not all of it. `None` if the
    /// memory cannot be had (the caller described more memory than the host or the region can
    /// hold the metadata of): an error for the caller, not an abort.
    #[cfg(not(loom))]
    #[allow(unsafe_code)]
    pub(crate) fn table(carver: &mut Carver, n: usize) -> Option<Table<Frame>> {
        // SAFETY: `Frame` is `repr(C)` of four `AtomicU32`, for which the all-zero bit pattern
        // is a valid value (and is `Frame::new()`).
        unsafe { carver.zeroed(n) }
    }

    /// A frame table built frame by frame: loom's atomics register with the running model
    /// when they are created, so zeroed memory holds no frames loom knows of.
    #[cfg(loom)]
    pub(crate) fn table(carver: &mut Carver, n: usize) -> Option<Table<Frame>> {
        carver.table(n, |_| Frame::new())
    }

    /// Current state, order and list.
    #[inline]
    pub fn info(&self) -> FrameInfo {
        FrameInfo::unpack(self.info.load(Relaxed))
    }

    /// Overwrite state, order and list. The caller owns the frame.
    #[inline]
    pub fn set_info(&self, info: FrameInfo) {
        self.info.store(info.pack(), Relaxed);
    }

    /// [`set_info`](Self::set_info) for a block handed out by CPU `owner`'s pageset: the
    /// word's upper half keeps `owner + 1` (0 = no owner) until the next `set_info`; a
    /// claim keeps it, so the free reads it back with [`owner_in`](Self::owner_in). Only
    /// `Policy::remote_free` uses it. Above 65 534 CPUs the tag wraps and names another CPU
    /// (or none): the block then goes to that pageset, still a valid home.
    #[inline]
    pub(crate) fn set_info_owned(&self, info: FrameInfo, owner: u32) {
        self.info.store(info.pack() | owner.wrapping_add(1) << 16, Relaxed);
    }

    /// The CPU whose pageset handed out a block ([`set_info_owned`](Self::set_info_owned)),
    /// if recorded in its packed `info` word, as a claim returns that word
    /// ([`claim_unreferenced`](Self::claim_unreferenced)). A free reads the owner from that
    /// word rather than loading the frame again: a load right after the claim's locked
    /// compare-exchange on the same word waits until the exchange has completed and its
    /// store has reached the cache (docs/performance.md, fast path v2 step 5).
    #[inline]
    pub(crate) const fn owner_in(word: u32) -> Option<u32> {
        (word >> 16).checked_sub(1)
    }

    /// Is this the head of a free buddy block of exactly `order`? (PageBuddy && buddy_order)
    #[inline]
    pub fn is_buddy_of_order(&self, order: Order) -> bool {
        self.buddy_list_if(order).is_some()
    }

    /// The list (migratetype) of this frame if it heads a free buddy block of exactly
    /// `order`, else `None`: the merge loop's test as one compare of the packed word's
    /// state and order bits, without decoding them.
    #[inline]
    pub(crate) fn buddy_list_if(&self, order: Order) -> Option<u8> {
        let want = FrameInfo { state: FrameState::Buddy, order, list: 0 }.pack();
        let word = self.info.load(Relaxed);
        (word & 0xff == want).then_some((word >> 8) as u8)
    }

    /// Claim an allocated block of `order` for freeing: `Allocated(order)` becomes `Freeing`
    /// in one compare-exchange, so two racing frees of the same block cannot both succeed.
    /// Whatever its reference count (compaction frees a source its owner has moved). On
    /// failure returns what the frame was.
    #[inline]
    pub fn claim_for_free(&self, order: Order) -> Result<FrameInfo, FrameInfo> {
        match self.claim(order, false) {
            Ok(word) => Ok(FrameInfo::unpack(word)),
            Err(Unclaimed::Was(info)) => Err(info),
            // Not reached: this claim does not check references.
            Err(Unclaimed::Referenced(_)) => Err(FrameInfo::unpack(self.info.load(Relaxed))),
        }
    }

    /// [`claim_for_free`](Self::claim_for_free) for a block no one else still references:
    /// an allocated block whose reference count (the `aux` word) is 2 or more — a page_frag
    /// page a cache still carves, or with more than one fragment out — is refused and left
    /// as it was. The count is a snapshot: a free racing the page's other holders is a race
    /// among them, as in the kernel; whichever claim comes first wins. Returns the packed
    /// word the block had; the claimed word keeps its upper half (the owner).
    #[inline]
    pub(crate) fn claim_unreferenced(&self, order: Order) -> Result<u32, Unclaimed> {
        self.claim(order, true)
    }

    /// The claim, refusing a referenced block if `check_refs`.
    #[inline(always)]
    fn claim(&self, order: Order, check_refs: bool) -> Result<u32, Unclaimed> {
        // State and order are the packed word's low byte: one compare checks both.
        const LOW: u32 = 0xff;
        let want = FrameInfo { state: FrameState::Allocated, order, list: 0 }.pack();
        let cur = self.info.load(Relaxed);
        if cur & LOW != want {
            return Err(Unclaimed::Was(FrameInfo::unpack(cur)));
        }
        if check_refs {
            // `aux` counts references only while the block is allocated: once a racing free
            // has claimed it, that free (≤ 6.9) or a refill caches a migratetype there
            // (Release, after the claim), which must not read as references. Acquire, so
            // that the second load of `info` sees a claim whose cached type this load saw.
            let refs = self.aux.load(Acquire);
            if refs >= 2 {
                let now = self.info.load(Relaxed);
                if now != cur {
                    return Err(Unclaimed::Was(FrameInfo::unpack(now)));
                }
                return Err(Unclaimed::Referenced(refs));
            }
        }
        let claimed =
            (cur & !LOW) | FrameInfo { state: FrameState::Freeing, order, list: 0 }.pack();
        match self.info.compare_exchange(cur, claimed, Relaxed, Relaxed) {
            Ok(_) => Ok(cur),
            Err(now) => Err(Unclaimed::Was(FrameInfo::unpack(now))),
        }
    }

    /// The owner-defined word.
    #[inline]
    pub fn aux(&self) -> &AtomicU32 {
        &self.aux
    }

    #[inline]
    pub(crate) fn next(&self) -> u32 {
        !self.next.load(Relaxed)
    }

    #[inline]
    pub(crate) fn prev(&self) -> u32 {
        !self.prev.load(Relaxed)
    }

    #[inline]
    pub(crate) fn set_next(&self, v: u32) {
        self.next.store(!v, Relaxed);
    }

    #[inline]
    pub(crate) fn set_prev(&self, v: u32) {
        self.prev.store(!v, Relaxed);
    }
}

impl Default for Frame {
    fn default() -> Frame {
        Frame::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_round_trips() {
        let f = Frame::new();
        assert_eq!(f.info().state, FrameState::Tail);
        assert_eq!((f.next(), f.prev()), (NIL, NIL));
        let i = FrameInfo { state: FrameState::Pcp, order: Order(9), list: 13 };
        f.set_info(i);
        assert_eq!(f.info(), i);
        assert!(!f.is_buddy_of_order(Order(9)));
        f.set_info(FrameInfo { state: FrameState::Buddy, order: Order(10), list: 5 });
        assert!(f.is_buddy_of_order(Order(10)));
    }

    #[test]
    fn a_zeroed_map_is_tail_frames_on_no_list() {
        let map = Frame::table(&mut Carver::Heap, 1000).unwrap();
        assert_eq!(map.len(), 1000);
        assert!(map.iter().all(|f| f.info() == FrameInfo::TAIL && f.next() == NIL));
        map[7].set_next(3);
        assert_eq!(map[7].next(), 3);
        assert!(Frame::table(&mut Carver::Heap, 0).unwrap().is_empty());
        let too_many = usize::MAX / 8;
        assert!(Frame::table(&mut Carver::Heap, too_many).is_none(), "more than the address space");
    }

    #[test]
    fn claim_for_free_is_exclusive() {
        let f = Frame::new();
        f.set_info(FrameInfo { state: FrameState::Allocated, order: Order(2), list: 1 });
        assert_eq!(f.claim_for_free(Order(1)).unwrap_err().order, Order(2));
        assert_eq!(f.claim_for_free(Order(2)).map(|i| i.list), Ok(1));
        assert_eq!(f.claim_for_free(Order(2)).unwrap_err().state, FrameState::Freeing);
    }

    /// The word a claim returns names the owner `set_info_owned` recorded, so the free needs
    /// no second load of the frame; a block handed out without an owner names none.
    #[test]
    fn the_claimed_word_names_the_owner() {
        let f = Frame::new();
        let allocated = FrameInfo { state: FrameState::Allocated, order: Order(0), list: 1 };
        f.set_info_owned(allocated, 5);
        assert_eq!(f.claim_unreferenced(Order(0)).map(Frame::owner_in), Ok(Some(5)));
        assert_eq!(f.info().state, FrameState::Freeing);
        f.set_info(allocated);
        assert_eq!(f.claim_unreferenced(Order(0)).map(Frame::owner_in), Ok(None));
    }

    /// A free refuses a block others still reference and leaves it allocated; compaction's
    /// claim of a moved source does not look at references.
    #[test]
    fn only_the_unreferenced_claim_checks_the_count() {
        let f = Frame::new();
        f.set_info(FrameInfo { state: FrameState::Allocated, order: Order(0), list: 0 });
        f.aux().store(2, Relaxed);
        assert_eq!(f.claim_unreferenced(Order(0)), Err(Unclaimed::Referenced(2)));
        assert_eq!(f.info().state, FrameState::Allocated);
        assert!(f.claim_for_free(Order(0)).is_ok());
        assert_eq!(f.info().state, FrameState::Freeing);
    }
}

//! What a free reads without a lock (the part of SLUB's `struct slab` that `virt_to_slab`
//! reaches from an object's address): per slab, which objects are allocated, which CPU has it
//! active, and the objects other CPUs freed into it meanwhile.
//!
//! The kernel finds a slab from an object's address by arithmetic on the `struct page` array,
//! memory that never goes away, so a stale pointer reads stale but valid memory. Here the
//! same holds for [`SlotTable`]: every slab of a cache has a slot, named in each of its
//! objects' handles; slots live as long as the cache and are reused, never freed, so a free
//! reaches its slot with plain loads (an acquire load of the segment, no lock, no reference
//! count). A reused slot carries its new slab's tag (the low 32 bits of the slab's serial) in
//! every word a free changes, so a handle to the slab that had the slot before is refused by
//! the same compare-exchange that frees an object.
//!
//! Each slot holds:
//!
//! - the identity word: tag and object count, 0 while the slot is vacant;
//! - the allocation bitmap, 32 objects per word beside the tag: set by the owning CPU's
//!   allocation (`fetch_or`), cleared by a free's compare-exchange, which fails on a clear
//!   bit (a double free) or on another tag (a stale handle). SLUB checks double frees only
//!   with debugging on; here the check is always on and costs one locked read-modify-write on
//!   the allocation and on the free (the bitmap's line moves with the object's, as SLUB's free
//!   pointer inside the object does);
//! - the free word: tag, the CPU holding the slab, as its active slab (SLUB's "frozen") or on
//!   its partial list, and the head of the remote freelist, the objects freed into the slab
//!   meanwhile by other CPUs (and, for a partial slab, by any), linked through one 16-bit
//!   link per object (SLUB's free pointer inside the object). A remote free pushes
//!   with one compare-exchange (SLUB's `cmpxchg` on `slab->freelist` in `__slab_free`); the
//!   owner takes the whole list with one `fetch_and` (`get_freelist`).
//!
//! Memory order: a pusher writes the object's link, then publishes it with a release
//! compare-exchange on the free word; the owner takes the list with an acquire read-modify-
//! write and only then follows the links, so it sees every link the pushers wrote. A new
//! slab's words are written before its identity word (release); a free reads the identity
//! with an acquire load. Nothing else is ordered through these words: the bits order no data
//! (the slab layer touches no object memory), and which list a slab is on is decided under
//! the slab's lock as before.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{
    AtomicU16, AtomicU64,
    Ordering::{AcqRel, Acquire, Relaxed, Release},
};

use once_cell::race::OnceBox;
use pagealloc::CpuId;

/// Slots in the first segment; segment `k` holds `SEGMENT0 << k`.
const SEGMENT0: usize = 8;

/// Segments: enough for more slabs than 2^32 frames hold.
const SEGMENTS: usize = 30;

/// Objects per bitmap word (the other half is the tag).
const BITS_PER_WORD: u32 = 32;

/// The largest CPU number the free word's owner field holds (0 there means no owner).
pub(crate) const MAX_CPUS: u32 = u16::MAX as u32 - 1;

/// The free word's head field: 0 for an empty list, else the first object's index + 1
/// (objects number at most 32 767, kernel `MAX_OBJS_PER_PAGE`).
const HEAD_MASK: u64 = 0x7FFF;

/// The free word's flag for a CPU's active slab (clear: on the CPU's partial list).
const ACTIVE: u64 = 0x8000;

/// Where a remote free went.
pub(crate) enum Push {
    /// Onto the slab's remote freelist.
    Done,
    /// The slab is held by no CPU, or is the freeing CPU's own active slab: the free takes
    /// the locked path.
    NotFrozen,
}

/// How a CPU holds a slab: as its active slab, or on its per-CPU partial list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Held {
    Active,
    Partial,
}

/// One slab's lock-free part.
#[derive(Debug)]
pub(crate) struct SlotSlab {
    /// Tag << 32 | objects; 0 while vacant.
    ident: AtomicU64,
    /// Tag << 32 | one bit per allocated object.
    bits: Box<[AtomicU64]>,
    /// Tag << 32 | (holding CPU + 1) << 16 | [`ACTIVE`] | (first remote free + 1).
    free: AtomicU64,
    /// The next object (+ 1, 0 ends the list) after each object on the remote freelist.
    next: Box<[AtomicU16]>,
}

impl SlotSlab {
    fn new(capacity: u32) -> SlotSlab {
        SlotSlab {
            ident: AtomicU64::new(0),
            bits: (0..capacity.div_ceil(BITS_PER_WORD)).map(|_| AtomicU64::new(0)).collect(),
            free: AtomicU64::new(0),
            next: (0..capacity).map(|_| AtomicU16::new(0)).collect(),
        }
    }

    /// Take the slot for a new slab of `objects` objects, all free, active on no CPU.
    pub(crate) fn init(&self, tag: u32, objects: u32) {
        let t = u64::from(tag) << 32;
        self.bits.iter().for_each(|w| w.store(t, Relaxed));
        self.free.store(t, Relaxed);
        self.ident.store(t | u64::from(objects), Release);
    }

    /// Give the slot up (its slab was discarded). The bits keep the old tag, all clear, so a
    /// free through a stale handle fails until the slot is reused, and then fails on the tag.
    pub(crate) fn vacate(&self) {
        self.ident.store(0, Release);
    }

    /// The slab's tag and object count, if the slot holds a slab.
    pub(crate) fn ident(&self) -> Option<(u32, u32)> {
        let w = self.ident.load(Acquire);
        (w != 0).then_some(((w >> 32) as u32, w as u32))
    }

    /// Mark object `i` allocated (its owner took it off the CPU freelist).
    #[inline]
    pub(crate) fn mark_allocated(&self, i: u32) {
        self.bits[(i / BITS_PER_WORD) as usize].fetch_or(1 << (i % BITS_PER_WORD), Relaxed);
    }

    /// Mark object `i` of the slab tagged `tag` free; `false` (and nothing changed) if it is
    /// not allocated or the slot holds another slab.
    #[inline]
    pub(crate) fn claim(&self, tag: u32, i: u32) -> bool {
        let word = &self.bits[(i / BITS_PER_WORD) as usize];
        let bit = 1u64 << (i % BITS_PER_WORD);
        let mut w = word.load(Relaxed);
        loop {
            if (w >> 32) as u32 != tag || w & bit == 0 {
                return false;
            }
            match word.compare_exchange_weak(w, w & !bit, Relaxed, Relaxed) {
                Ok(_) => return true,
                Err(now) => w = now,
            }
        }
    }

    /// Is object `i` allocated?
    pub(crate) fn is_allocated(&self, i: u32) -> bool {
        self.bits[(i / BITS_PER_WORD) as usize].load(Relaxed) & (1 << (i % BITS_PER_WORD)) != 0
    }

    /// Allocated objects.
    pub(crate) fn allocated(&self) -> u32 {
        self.bits.iter().map(|w| (w.load(Relaxed) as u32).count_ones()).sum()
    }

    /// The CPU holding the slab, and how, if any.
    #[inline]
    pub(crate) fn owner(&self) -> Option<(CpuId, Held)> {
        owner_of(self.free.load(Relaxed))
    }

    /// A free by `me` into a slab a CPU holds (another CPU's active slab, or a slab on any
    /// CPU's partial list): push object `i` (already claimed) onto the remote freelist.
    /// Not when no CPU holds the slab or it is `me`'s active slab.
    #[inline]
    pub(crate) fn push_remote(&self, i: u32, me: CpuId) -> Push {
        let mut w = self.free.load(Relaxed);
        loop {
            match owner_of(w) {
                Some((owner, Held::Active)) if owner == me => return Push::NotFrozen,
                Some(_) => {}
                None => return Push::NotFrozen,
            }
            self.next[i as usize].store((w & HEAD_MASK) as u16, Relaxed);
            match self.free.compare_exchange_weak(w, with_head(w, i), Release, Relaxed) {
                Ok(_) => return Push::Done,
                Err(now) => w = now,
            }
        }
    }

    /// Push object `i` (already claimed) onto the remote freelist whoever holds the slab: a
    /// free under the slab's lock into a slab whose place is a CPU's (active or partial).
    pub(crate) fn push_any(&self, i: u32) {
        let mut w = self.free.load(Relaxed);
        loop {
            self.next[i as usize].store((w & HEAD_MASK) as u16, Relaxed);
            match self.free.compare_exchange_weak(w, with_head(w, i), Release, Relaxed) {
                Ok(_) => return,
                Err(now) => w = now,
            }
        }
    }

    /// Let `cpu` hold the slab (as its active slab: kernel freezing); appends the remote
    /// freelist it had (in the order the objects were freed) to `out`.
    pub(crate) fn hold(&self, cpu: CpuId, how: Held, out: &mut Vec<u32>) {
        let tag = self.free.load(Relaxed) & !0xFFFF_FFFF;
        let flag = if how == Held::Active { ACTIVE } else { 0 };
        let old = self.free.swap(tag | (u64::from(cpu.0) + 1) << 16 | flag, AcqRel);
        self.chain(old, out);
    }

    /// The owner takes the remote freelist (kernel `get_freelist`), appended to `out` in the
    /// order freed.
    pub(crate) fn take_remote(&self, out: &mut Vec<u32>) {
        self.chain(self.free.fetch_and(!HEAD_MASK, Acquire), out);
    }

    /// The owner lets go of a slab with nothing free: `false` if a remote free came in
    /// meanwhile (the owner takes it instead).
    pub(crate) fn unfreeze_full(&self) -> bool {
        let w = self.free.load(Relaxed);
        w & HEAD_MASK == 0
            && self.free.compare_exchange(w, w & !0xFFFF_FFFF, Relaxed, Relaxed).is_ok()
    }

    /// No CPU holds the slab any more; appends the remote freelist to `out`, in the order
    /// freed.
    pub(crate) fn release(&self, out: &mut Vec<u32>) {
        let tag = self.free.load(Relaxed) & !0xFFFF_FFFF;
        self.chain(self.free.swap(tag, Acquire), out);
    }

    /// The remote freelist now, without taking it (for the validator).
    pub(crate) fn remote(&self) -> Vec<u32> {
        let mut list = Vec::new();
        self.chain(self.free.load(Acquire), &mut list);
        list
    }

    /// Append the list whose head is in free word `w` to `out`, in the order the objects
    /// were pushed (so the last pushed is popped first, as from a stack).
    fn chain(&self, w: u64, out: &mut Vec<u32>) {
        let start = out.len();
        let mut at = (w & HEAD_MASK) as u32;
        while at != 0 && out.len() - start < self.next.len() {
            out.push(at - 1);
            at = u32::from(self.next[(at - 1) as usize].load(Relaxed));
        }
        out[start..].reverse();
    }
}

/// The holder field of free word `w`.
#[inline]
fn owner_of(w: u64) -> Option<(CpuId, Held)> {
    let o = ((w >> 16) & 0xFFFF) as u32;
    let how = if w & ACTIVE != 0 { Held::Active } else { Held::Partial };
    o.checked_sub(1).map(|c| (CpuId(c), how))
}

/// Free word `w` with object `i` at the head of its list.
#[inline]
fn with_head(w: u64, i: u32) -> u64 {
    (w & !HEAD_MASK) | u64::from(i + 1)
}

/// A cache's slots, in segments that double in size, each made when first needed and kept
/// for the cache's life.
#[derive(Debug)]
pub(crate) struct SlotTable {
    segments: [OnceBox<Vec<SlotSlab>>; SEGMENTS],
    /// Objects a slot holds at most (the preferred order's count).
    capacity: u32,
}

impl SlotTable {
    pub(crate) fn new(capacity: u32) -> SlotTable {
        SlotTable { segments: core::array::from_fn(|_| OnceBox::new()), capacity }
    }

    /// Slot `slot`, if its segment exists.
    #[inline]
    pub(crate) fn get(&self, slot: u32) -> Option<&SlotSlab> {
        let (seg, at) = position(slot);
        self.segments.get(seg)?.get()?.get(at)
    }

    /// Slot `slot`, making its segment if need be (a new slab's; slots are handed out in
    /// order, so every slot below it has its segment already).
    pub(crate) fn make(&self, slot: u32) -> &SlotSlab {
        let (seg, at) = position(slot);
        let segment = self.segments[seg].get_or_init(|| {
            Box::new((0..SEGMENT0 << seg).map(|_| SlotSlab::new(self.capacity)).collect())
        });
        &segment[at]
    }
}

/// The segment and the index in it of slot `slot`.
#[inline]
fn position(slot: u32) -> (usize, usize) {
    let s = slot as usize / SEGMENT0 + 1;
    let seg = (usize::BITS - 1 - s.leading_zeros()) as usize;
    (seg, slot as usize - SEGMENT0 * ((1 << seg) - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_fill_segments_in_order() {
        assert_eq!(position(0), (0, 0));
        assert_eq!(position(7), (0, 7));
        assert_eq!(position(8), (1, 0));
        assert_eq!(position(23), (1, 15));
        assert_eq!(position(24), (2, 0));
    }

    #[test]
    fn a_claim_needs_the_bit_and_the_tag() {
        let s = SlotSlab::new(40);
        s.init(7, 40);
        s.mark_allocated(33);
        assert!(!s.claim(8, 33), "another slab's tag");
        assert!(s.claim(7, 33));
        assert!(!s.claim(7, 33), "a second free");
        assert_eq!(s.allocated(), 0);
    }

    #[test]
    fn remote_frees_come_back_in_the_order_freed() {
        let s = SlotSlab::new(8);
        s.init(1, 8);
        let mut list = Vec::new();
        s.hold(CpuId(0), Held::Active, &mut list);
        assert!(list.is_empty());
        for i in [3, 1, 6] {
            assert!(matches!(s.push_remote(i, CpuId(1)), Push::Done));
        }
        assert!(matches!(s.push_remote(2, CpuId(0)), Push::NotFrozen), "the owner's own");
        s.take_remote(&mut list);
        assert_eq!(list, [3, 1, 6]);
        assert_eq!(s.owner(), Some((CpuId(0), Held::Active)));
        assert!(s.unfreeze_full());
        assert!(matches!(s.push_remote(2, CpuId(1)), Push::NotFrozen), "held by no CPU");
        // On CPU 0's partial list: every CPU's frees push, CPU 0's too.
        s.hold(CpuId(0), Held::Partial, &mut list);
        assert!(matches!(s.push_remote(2, CpuId(0)), Push::Done));
        list.clear();
        s.release(&mut list);
        assert_eq!(list, [2]);
    }
}

//! Per-pageblock flags: the migratetype each 512-frame pageblock is grouped for
//! (docs/kernel-reference.md §1.3). Stored one byte per pageblock.
//!
//! Read without the zone lock (the free path looks up a block's type before locking anything,
//! as the kernel does; a stale read only puts a page on a list the drain path re-checks) and
//! written only under the zone lock.

use crate::sync::{AtomicU8, Ordering::Relaxed};
use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::migratetype::MigrateType;
use crate::types::{Pfn, PAGEBLOCK_ORDER};

/// The low three bits hold the migratetype; bit 3 is the compaction skip hint.
const MT_MASK: u8 = 0x7;

/// Pageblock flags of one zone.
#[derive(Debug)]
pub struct Pageblocks {
    /// Pageblock number of `bits[0]`.
    first: u64,
    bits: Box<[AtomicU8]>,
}

impl Pageblocks {
    /// Flags for the pageblocks that frames `start..end` touch, all labelled `mt`.
    pub fn new(start: Pfn, end: Pfn, mt: MigrateType) -> Pageblocks {
        let first = start.pageblock();
        let last = if end > start { (end.0 - 1) >> PAGEBLOCK_ORDER } else { first };
        let n = (last - first + 1) as usize;
        let bits: Vec<AtomicU8> = (0..n).map(|_| AtomicU8::new(mt as u8)).collect();
        Pageblocks { first, bits: bits.into_boxed_slice() }
    }

    #[inline]
    fn slot(&self, pfn: Pfn) -> &AtomicU8 {
        // Callers pass frames of this zone; an out-of-span frame is a bug in the crate, and the
        // index panics rather than reading another zone's flags.
        &self.bits[(pfn.pageblock() - self.first) as usize]
    }

    /// The migratetype of the pageblock holding `pfn`.
    #[inline]
    pub fn get(&self, pfn: Pfn) -> MigrateType {
        MigrateType::from_u8(self.slot(pfn).load(Relaxed) & MT_MASK).unwrap_or(MigrateType::Movable)
    }

    /// The migratetype bits of the pageblock holding `pfn` (0..=7; [`MigrateType::from_u8`]
    /// reads them, anything above ISOLATE as MOVABLE), for callers that index a table by them.
    #[inline]
    pub fn get_bits(&self, pfn: Pfn) -> u8 {
        self.slot(pfn).load(Relaxed) & MT_MASK
    }

    /// Relabel the pageblock holding `pfn`. Caller holds the zone lock.
    #[inline]
    pub fn set(&self, pfn: Pfn, mt: MigrateType) {
        let slot = self.slot(pfn);
        let old = slot.load(Relaxed);
        slot.store((old & !MT_MASK) | mt as u8, Relaxed);
    }

    /// Number of pageblocks.
    pub fn len(&self) -> usize {
        self.bits.len()
    }

    /// No pageblocks?
    pub fn is_empty(&self) -> bool {
        self.bits.is_empty()
    }

    /// First frame of the `i`th pageblock.
    pub fn start_of(&self, i: usize) -> Pfn {
        Pfn((self.first + i as u64) << PAGEBLOCK_ORDER)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_per_block() {
        let pb = Pageblocks::new(Pfn(100), Pfn(1100), MigrateType::Movable);
        assert_eq!(pb.len(), 3); // blocks 0, 1, 2
        pb.set(Pfn(600), MigrateType::Unmovable);
        assert_eq!(pb.get(Pfn(512)), MigrateType::Unmovable);
        assert_eq!(pb.get(Pfn(1023)), MigrateType::Unmovable);
        assert_eq!(pb.get(Pfn(100)), MigrateType::Movable);
        assert_eq!(pb.start_of(2), Pfn(1024));
    }
}

//! Per-pageblock flags: the migratetype each 512-frame pageblock is grouped for
//! (docs/kernel-reference.md §1.3). Stored one byte per pageblock.
//!
//! Read without the zone lock (the free path looks up a block's type before locking anything,
//! as the kernel does; a stale read only puts a page on a list the drain path re-checks) and
//! written only under the zone lock.

use crate::sync::{AtomicU8, Ordering::Relaxed};

use crate::migratetype::MigrateType;
use crate::table::{Carver, Table};
use crate::types::{Pfn, PAGEBLOCK_ORDER};

/// The low three bits hold the migratetype; bit 3 is the compaction skip hint.
pub(crate) const MT_MASK: u8 = 0x7;
/// Compaction's skip hint (kernel `PB_migrate_skip`): a scanner found nothing to take here.
const SKIP: u8 = 0x8;

/// The migratetype of a pageblock's flags: their type bits (`MT_MASK`; the others ignored),
/// a value no type has read as `Movable`. `MigrateType::from_u8(bits).unwrap_or(Movable)` as
/// one table load, with no branch for the caller to test again when it then compares the
/// type (a drain's free-page accounting, docs/performance.md fast path v2 step 10).
#[inline(always)]
pub(crate) const fn type_of_bits(flags: u8) -> MigrateType {
    use MigrateType::*;
    const TYPES: [MigrateType; 8] =
        [Unmovable, Movable, Reclaimable, HighAtomic, Cma, Isolate, Movable, Movable];
    TYPES[(flags & MT_MASK) as usize]
}

/// Pageblock flags of one zone.
#[derive(Debug)]
pub struct Pageblocks {
    /// Pageblock number of `bits[0]`.
    pub(crate) first: u64,
    pub(crate) bits: Table<AtomicU8>,
}

impl Pageblocks {
    /// Flags for the pageblocks that frames `start..end` touch, all labelled `mt`, carved by
    /// `carver` (`None` if it has not the memory).
    pub(crate) fn new(
        carver: &mut Carver,
        start: Pfn,
        end: Pfn,
        mt: MigrateType,
    ) -> Option<Pageblocks> {
        let first = start.pageblock();
        let n = usize::try_from(Pageblocks::count(start, end)).ok()?;
        let bits = carver.table(n, |_| AtomicU8::new(mt as u8))?;
        Some(Pageblocks { first, bits })
    }

    /// Pageblocks that frames `start..end` touch (at least one).
    pub(crate) fn count(start: Pfn, end: Pfn) -> u64 {
        let first = start.pageblock();
        let last = if end > start { (end.0 - 1) >> PAGEBLOCK_ORDER } else { first };
        last - first + 1
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
        type_of_bits(self.slot(pfn).load(Relaxed))
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
        // One atomic update: the skip hint is written without the zone lock.
        let _ =
            self.slot(pfn).fetch_update(Relaxed, Relaxed, |old| Some((old & !MT_MASK) | mt as u8));
    }

    /// Is the compaction skip hint set on the pageblock holding `pfn`?
    #[inline]
    pub fn skip(&self, pfn: Pfn) -> bool {
        self.slot(pfn).load(Relaxed) & SKIP != 0
    }

    /// Set or clear the skip hint of the pageblock holding `pfn`. Written without the zone
    /// lock, as the kernel does: an atomic read-modify-write, so the migratetype bits a
    /// relabel writes under the lock are never lost.
    #[inline]
    pub fn set_skip(&self, pfn: Pfn, on: bool) {
        let slot = self.slot(pfn);
        if slot.load(Relaxed) & SKIP != u8::from(on) * SKIP {
            if on {
                slot.fetch_or(SKIP, Relaxed);
            } else {
                slot.fetch_and(!SKIP, Relaxed);
            }
        }
    }

    /// Clear every skip hint (kernel `__reset_isolation_suitable`).
    pub fn clear_skip_all(&self) {
        for b in self.bits.iter() {
            if b.load(Relaxed) & SKIP != 0 {
                b.fetch_and(!SKIP, Relaxed);
            }
        }
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
        let pb =
            Pageblocks::new(&mut Carver::Heap, Pfn(100), Pfn(1100), MigrateType::Movable).unwrap();
        assert_eq!(pb.len(), 3); // blocks 0, 1, 2
        pb.set(Pfn(600), MigrateType::Unmovable);
        assert_eq!(pb.get(Pfn(512)), MigrateType::Unmovable);
        assert_eq!(pb.get(Pfn(1023)), MigrateType::Unmovable);
        assert_eq!(pb.get(Pfn(100)), MigrateType::Movable);
        assert_eq!(pb.start_of(2), Pfn(1024));
    }

    #[test]
    fn the_skip_hint_is_its_own_bit() {
        let pb =
            Pageblocks::new(&mut Carver::Heap, Pfn(0), Pfn(1024), MigrateType::Movable).unwrap();
        pb.set_skip(Pfn(5), true);
        assert!(pb.skip(Pfn(511)) && !pb.skip(Pfn(512)));
        pb.set(Pfn(0), MigrateType::Unmovable);
        assert!(pb.skip(Pfn(0)), "a relabel keeps the hint");
        assert_eq!(pb.get(Pfn(0)), MigrateType::Unmovable, "the hint leaves the type alone");
        pb.set_skip(Pfn(600), true);
        pb.clear_skip_all();
        assert!(!pb.skip(Pfn(0)) && !pb.skip(Pfn(600)));
        assert_eq!(pb.get(Pfn(0)), MigrateType::Unmovable);
    }

    #[test]
    fn the_type_bits_decode_as_from_u8_with_movable_for_the_rest() {
        for flags in 0..=u8::MAX {
            let want = MigrateType::from_u8(flags & MT_MASK).unwrap_or(MigrateType::Movable);
            assert_eq!(type_of_bits(flags), want, "flags {flags:#x}");
        }
    }
}

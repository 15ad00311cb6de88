//! Migratetypes: what kind of allocation a pageblock's pages are grouped for, and the fallback
//! order when a type's own free lists are empty (docs/kernel-reference.md §1.2).

use core::fmt;

/// A migratetype. The numeric values index arrays and are printed by `/proc/pagetypeinfo`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[repr(u8)]
pub enum MigrateType {
    /// Kernel allocations that can neither move nor be reclaimed.
    Unmovable = 0,
    /// User pages and page cache that compaction can migrate.
    Movable = 1,
    /// Slab caches that shrinkers can free.
    Reclaimable = 2,
    /// A reserve for high-order atomic allocations (MIGRATE_PCPTYPES).
    HighAtomic = 3,
    /// Contiguous memory areas: movable allocations only, when ALLOC_CMA.
    Cma = 4,
    /// Pageblocks being isolated; their free pages are invisible to allocation.
    Isolate = 5,
}

/// Number of migratetypes (MIGRATE_TYPES).
pub const MIGRATE_TYPES: usize = 6;
/// Number of migratetypes that have per-CPU lists (MIGRATE_PCPTYPES).
pub const MIGRATE_PCPTYPES: usize = 3;

impl MigrateType {
    /// All migratetypes in numeric order.
    pub const ALL: [MigrateType; MIGRATE_TYPES] = [
        MigrateType::Unmovable,
        MigrateType::Movable,
        MigrateType::Reclaimable,
        MigrateType::HighAtomic,
        MigrateType::Cma,
        MigrateType::Isolate,
    ];

    /// The types that own per-CPU lists and take part in fallback.
    pub const PCPTYPES: [MigrateType; MIGRATE_PCPTYPES] =
        [MigrateType::Unmovable, MigrateType::Movable, MigrateType::Reclaimable];

    /// Array index.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The type with numeric value `v` (the low three bits of a pageblock's flags).
    #[inline]
    pub const fn from_u8(v: u8) -> Option<MigrateType> {
        match v {
            0 => Some(MigrateType::Unmovable),
            1 => Some(MigrateType::Movable),
            2 => Some(MigrateType::Reclaimable),
            3 => Some(MigrateType::HighAtomic),
            4 => Some(MigrateType::Cma),
            5 => Some(MigrateType::Isolate),
            _ => None,
        }
    }

    /// The name `/proc/pagetypeinfo` prints.
    pub const fn name(self) -> &'static str {
        match self {
            MigrateType::Unmovable => "Unmovable",
            MigrateType::Movable => "Movable",
            MigrateType::Reclaimable => "Reclaimable",
            MigrateType::HighAtomic => "HighAtomic",
            MigrateType::Cma => "CMA",
            MigrateType::Isolate => "Isolate",
        }
    }

    /// Parse a printed name (case-insensitive).
    pub fn from_name(s: &str) -> Option<MigrateType> {
        MigrateType::ALL.into_iter().find(|m| m.name().eq_ignore_ascii_case(s))
    }

    /// Types below MIGRATE_PCPTYPES merge freely across pageblocks; the reserve, CMA and
    /// isolation types do not (their blocks must keep their label).
    #[inline]
    pub const fn is_mergeable(self) -> bool {
        (self as u8) < MIGRATE_PCPTYPES as u8
    }

    /// The other types this one may take pages from when its own lists are empty, in order.
    /// HIGHATOMIC, CMA and ISOLATE have no fallbacks (CMA is reached only through ALLOC_CMA).
    #[inline]
    pub const fn fallbacks(self) -> &'static [MigrateType] {
        match self {
            MigrateType::Unmovable => &FALLBACKS[0],
            MigrateType::Movable => &FALLBACKS[1],
            MigrateType::Reclaimable => &FALLBACKS[2],
            _ => &[],
        }
    }
}

/// The fallback table (kernel `fallbacks[]`), as data: row = requested type.
pub const FALLBACKS: [[MigrateType; 2]; MIGRATE_PCPTYPES] = [
    [MigrateType::Reclaimable, MigrateType::Movable],
    [MigrateType::Reclaimable, MigrateType::Unmovable],
    [MigrateType::Unmovable, MigrateType::Movable],
];

impl fmt::Display for MigrateType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_values_and_names_match_the_kernel() {
        for (i, mt) in MigrateType::ALL.iter().enumerate() {
            assert_eq!(mt.index(), i);
            assert_eq!(MigrateType::from_u8(i as u8), Some(*mt));
            assert_eq!(MigrateType::from_name(mt.name()), Some(*mt));
        }
        assert_eq!(MigrateType::from_u8(6), None);
    }

    #[test]
    fn fallback_rows_never_name_their_own_type_or_a_reserve() {
        for mt in MigrateType::ALL {
            for fb in mt.fallbacks() {
                assert_ne!(*fb, mt);
                assert!(fb.is_mergeable());
            }
        }
        assert_eq!(MigrateType::Movable.fallbacks()[0], MigrateType::Reclaimable);
        assert!(MigrateType::Cma.fallbacks().is_empty());
    }
}

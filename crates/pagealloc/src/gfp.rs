//! GFP flags (what the caller asks for) and the internal allocation flags derived from them.
//!
//! Bit values follow the kernel's 6.x `gfp_types.h` so traces and users speak the same numbers.

use core::fmt;
use core::ops::{BitAnd, BitOr, BitOrAssign, Not};

use crate::migratetype::MigrateType;
use crate::types::ZoneType;

/// Get-free-pages flags: where memory may come from and how hard to try.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Gfp(pub u32);

impl Gfp {
    /// Only from ZONE_DMA.
    pub const DMA: Gfp = Gfp(0x01);
    /// May use highmem (on 64-bit: with MOVABLE, ZONE_MOVABLE).
    pub const HIGHMEM: Gfp = Gfp(0x02);
    /// Only from ZONE_DMA32 or below.
    pub const DMA32: Gfp = Gfp(0x04);
    /// The pages can be migrated (MIGRATE_MOVABLE).
    pub const MOVABLE: Gfp = Gfp(0x08);
    /// The pages can be reclaimed by a shrinker (MIGRATE_RECLAIMABLE).
    pub const RECLAIMABLE: Gfp = Gfp(0x10);
    /// High priority: may dip below the min watermark (ALLOC_MIN_RESERVE).
    pub const HIGH: Gfp = Gfp(0x20);
    /// May start physical I/O.
    pub const IO: Gfp = Gfp(0x40);
    /// May call into the filesystem.
    pub const FS: Gfp = Gfp(0x80);
    /// Zero the memory (recorded; the core hands out frame numbers and zeroes nothing).
    pub const ZERO: Gfp = Gfp(0x100);
    /// May reclaim directly (may block).
    pub const DIRECT_RECLAIM: Gfp = Gfp(0x400);
    /// May wake the background reclaimer.
    pub const KSWAPD_RECLAIM: Gfp = Gfp(0x800);
    /// Do not warn on failure.
    pub const NOWARN: Gfp = Gfp(0x2000);
    /// Give up early rather than retry reclaim and compaction (a costly request that fails
    /// its first direct compaction goes no further).
    pub const NORETRY: Gfp = Gfp(0x10000);
    /// Access to all reserves (ALLOC_NO_WATERMARKS), for memory-freeing paths.
    pub const MEMALLOC: Gfp = Gfp(0x20000);
    /// A compound page.
    pub const COMP: Gfp = Gfp(0x40000);
    /// Never use emergency reserves.
    pub const NOMEMALLOC: Gfp = Gfp(0x80000);
    /// Enforce the cpuset's memory policy (recorded only).
    pub const HARDWALL: Gfp = Gfp(0x100000);
    /// Only the preferred node.
    pub const THISNODE: Gfp = Gfp(0x200000);

    /// Both reclaim bits.
    pub const RECLAIM: Gfp = Gfp(Gfp::DIRECT_RECLAIM.0 | Gfp::KSWAPD_RECLAIM.0);
    /// Atomic context: cannot sleep, may use some reserves.
    pub const ATOMIC: Gfp = Gfp(Gfp::HIGH.0 | Gfp::KSWAPD_RECLAIM.0);
    /// Cannot sleep, uses no reserves.
    pub const NOWAIT: Gfp = Gfp(Gfp::KSWAPD_RECLAIM.0);
    /// Ordinary kernel allocation.
    pub const KERNEL: Gfp = Gfp(Gfp::RECLAIM.0 | Gfp::IO.0 | Gfp::FS.0);
    /// Reclaimable kernel allocation (slab with SLAB_RECLAIM_ACCOUNT).
    pub const KERNEL_RECLAIMABLE: Gfp = Gfp(Gfp::KERNEL.0 | Gfp::RECLAIMABLE.0);
    /// User-space allocation the kernel needs to address.
    pub const USER: Gfp = Gfp(Gfp::KERNEL.0 | Gfp::HARDWALL.0);
    /// User-space pages that can migrate: anonymous memory and page cache.
    pub const HIGHUSER_MOVABLE: Gfp = Gfp(Gfp::USER.0 | Gfp::HIGHMEM.0 | Gfp::MOVABLE.0);
    /// Transparent huge page, light: no direct reclaim.
    pub const TRANSHUGE_LIGHT: Gfp =
        Gfp((Gfp::HIGHUSER_MOVABLE.0 | Gfp::COMP.0 | Gfp::NOMEMALLOC.0 | Gfp::NOWARN.0)
            & !Gfp::RECLAIM.0);
    /// Transparent huge page with direct reclaim.
    pub const TRANSHUGE: Gfp = Gfp(Gfp::TRANSHUGE_LIGHT.0 | Gfp::DIRECT_RECLAIM.0);

    /// Does `self` contain every bit of `other`?
    #[inline]
    pub const fn contains(self, other: Gfp) -> bool {
        self.0 & other.0 == other.0
    }

    /// Does `self` share a bit with `other`?
    #[inline]
    pub const fn intersects(self, other: Gfp) -> bool {
        self.0 & other.0 != 0
    }

    /// The highest zone type these flags allow (the kernel's `gfp_zone` on x86-64, where
    /// HIGHMEM alone means NORMAL and HIGHMEM with MOVABLE means ZONE_MOVABLE). Meaningless
    /// for flags with [`impossible_zones`](Gfp::impossible_zones), which allocations refuse.
    #[inline]
    pub const fn zone(self) -> ZoneType {
        // The four zone modifiers are bits 0..=3: one table lookup, as the kernel's
        // GFP_ZONE_TABLE does, instead of the chain of tests below on every allocation.
        ZONE_BY_MODIFIERS[(self.0 & ZONE_MODIFIERS) as usize]
    }

    /// Do the flags name more than one of DMA, DMA32 and HIGHMEM (with or without MOVABLE)?
    /// No zone satisfies such a request: they are the eight combinations of the kernel's
    /// `GFP_ZONE_BAD`, on which its `gfp_zone` stops with `VM_BUG_ON`.
    #[inline]
    pub const fn impossible_zones(self) -> bool {
        (self.0 & ZONE_LIMITS).count_ones() > 1
    }

    /// [`Gfp::zone`] spelled out (the table is built from it).
    const fn zone_by_tests(self) -> ZoneType {
        if self.intersects(Gfp::DMA) {
            ZoneType::Dma
        } else if self.intersects(Gfp::DMA32) {
            ZoneType::Dma32
        } else if self.contains(Gfp(Gfp::HIGHMEM.0 | Gfp::MOVABLE.0)) {
            ZoneType::Movable
        } else {
            ZoneType::Normal
        }
    }

    /// The migratetype these flags ask for: `(gfp >> 3) & 3` (MOVABLE and RECLAIMABLE together
    /// is a caller bug the kernel warns about; it selects HIGHATOMIC's number there, which we
    /// map to UNMOVABLE instead of indexing a reserve).
    #[inline]
    pub const fn migratetype(self) -> MigrateType {
        match (self.0 >> 3) & 3 {
            1 => MigrateType::Movable,
            2 => MigrateType::Reclaimable,
            _ => MigrateType::Unmovable,
        }
    }

    /// May the caller block in direct reclaim?
    #[inline]
    pub const fn can_direct_reclaim(self) -> bool {
        self.intersects(Gfp::DIRECT_RECLAIM)
    }
}

/// DMA | HIGHMEM | DMA32 | MOVABLE: the bits [`Gfp::zone`] reads.
const ZONE_MODIFIERS: u32 = 0xf;

/// DMA | HIGHMEM | DMA32: the modifiers that name a zone; a request may name one at most.
const ZONE_LIMITS: u32 = Gfp::DMA.0 | Gfp::HIGHMEM.0 | Gfp::DMA32.0;

/// [`Gfp::zone`] of every combination of the zone modifiers.
const ZONE_BY_MODIFIERS: [ZoneType; 16] = {
    let mut t = [ZoneType::Normal; 16];
    let mut i = 0;
    while i < t.len() {
        t[i] = Gfp(i as u32).zone_by_tests();
        i += 1;
    }
    t
};

impl BitOr for Gfp {
    type Output = Gfp;
    fn bitor(self, rhs: Gfp) -> Gfp {
        Gfp(self.0 | rhs.0)
    }
}

impl BitOrAssign for Gfp {
    fn bitor_assign(&mut self, rhs: Gfp) {
        self.0 |= rhs.0;
    }
}

impl BitAnd for Gfp {
    type Output = Gfp;
    fn bitand(self, rhs: Gfp) -> Gfp {
        Gfp(self.0 & rhs.0)
    }
}

impl Not for Gfp {
    type Output = Gfp;
    fn not(self) -> Gfp {
        Gfp(!self.0)
    }
}

impl fmt::Debug for Gfp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gfp({:#x})", self.0)
    }
}

/// Internal allocation flags (kernel `alloc_flags`, docs/kernel-reference.md §1.8): which watermark
/// to check and which reserves may be used.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AllocFlags(pub u32);

impl AllocFlags {
    /// Check against the min watermark.
    pub const WMARK_MIN: AllocFlags = AllocFlags(0);
    /// Check against the low watermark.
    pub const WMARK_LOW: AllocFlags = AllocFlags(1);
    /// Check against the high watermark.
    pub const WMARK_HIGH: AllocFlags = AllocFlags(2);
    /// The low two bits select the watermark.
    pub const WMARK_MASK: u32 = 3;
    /// Ignore watermarks entirely.
    pub const NO_WATERMARKS: AllocFlags = AllocFlags(0x04);
    /// The OOM victim may use part of the reserves.
    pub const OOM: AllocFlags = AllocFlags(0x08);
    /// The caller cannot reclaim: a further quarter of min.
    pub const NON_BLOCK: AllocFlags = AllocFlags(0x10);
    /// __GFP_HIGH: half of min.
    pub const MIN_RESERVE: AllocFlags = AllocFlags(0x20);
    /// May use CMA pageblocks.
    pub const CMA: AllocFlags = AllocFlags(0x80);
    /// Steal only whole pageblocks from other types; spread over lower zones first (seed 002).
    pub const NOFRAGMENT: AllocFlags = AllocFlags(0x100);
    /// May use (and grow) the highatomic reserve.
    pub const HIGHATOMIC: AllocFlags = AllocFlags(0x200);
    /// May wake the background reclaimer.
    pub const KSWAPD: AllocFlags = AllocFlags(0x800);
    /// Flags that grant access to some reserve.
    pub const RESERVES: AllocFlags = AllocFlags(
        AllocFlags::NON_BLOCK.0
            | AllocFlags::MIN_RESERVE.0
            | AllocFlags::HIGHATOMIC.0
            | AllocFlags::OOM.0,
    );

    /// Does `self` share a bit with `other`?
    #[inline]
    pub const fn has(self, other: AllocFlags) -> bool {
        self.0 & other.0 != 0
    }

    /// The watermark index selected by the low bits (0 min, 1 low, 2 high).
    #[inline]
    pub const fn wmark(self) -> usize {
        (self.0 & AllocFlags::WMARK_MASK) as usize
    }

    /// `self` with `other`'s bits cleared.
    #[inline]
    pub const fn without(self, other: AllocFlags) -> AllocFlags {
        AllocFlags(self.0 & !other.0)
    }
}

impl BitOr for AllocFlags {
    type Output = AllocFlags;
    fn bitor(self, rhs: AllocFlags) -> AllocFlags {
        AllocFlags(self.0 | rhs.0)
    }
}

impl BitOrAssign for AllocFlags {
    fn bitor_assign(&mut self, rhs: AllocFlags) {
        self.0 |= rhs.0;
    }
}

impl fmt::Debug for AllocFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AllocFlags({:#x})", self.0)
    }
}

/// The slow path's flags (kernel `gfp_to_alloc_flags`): min watermark, reserves by GFP.
pub fn slowpath_alloc_flags(gfp: Gfp, order: u8) -> AllocFlags {
    let mut f = AllocFlags::WMARK_MIN;
    if gfp.intersects(Gfp::HIGH) {
        f |= AllocFlags::MIN_RESERVE;
    }
    if gfp.intersects(Gfp::KSWAPD_RECLAIM) {
        f |= AllocFlags::KSWAPD;
    }
    if !gfp.can_direct_reclaim() && !gfp.intersects(Gfp::NOMEMALLOC) {
        f |= AllocFlags::NON_BLOCK;
        if order > 0 {
            f |= AllocFlags::HIGHATOMIC;
        }
    }
    if gfp.migratetype() == MigrateType::Movable {
        f |= AllocFlags::CMA;
    }
    if gfp.intersects(Gfp::MEMALLOC) && !gfp.intersects(Gfp::NOMEMALLOC) {
        f |= AllocFlags::NO_WATERMARKS;
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gfp_zone_follows_x86_64_rules() {
        assert_eq!(Gfp::KERNEL.zone(), ZoneType::Normal);
        assert_eq!(Gfp::HIGHUSER_MOVABLE.zone(), ZoneType::Movable);
        assert_eq!((Gfp::KERNEL | Gfp::DMA32).zone(), ZoneType::Dma32);
        assert_eq!((Gfp::KERNEL | Gfp::DMA).zone(), ZoneType::Dma);
        assert_eq!((Gfp::KERNEL | Gfp::MOVABLE).zone(), ZoneType::Normal);
        assert_eq!((Gfp::KERNEL | Gfp::HIGHMEM).zone(), ZoneType::Normal);
    }

    #[test]
    fn the_zone_table_matches_the_rules_for_every_modifier_combination() {
        for low in 0..16u32 {
            for high in [0, Gfp::KERNEL.0, Gfp::TRANSHUGE.0 & !0xf, !0xf] {
                let g = Gfp(low | high);
                assert_eq!(g.zone(), g.zone_by_tests(), "{g:?}");
            }
        }
        assert_eq!(ZONE_BY_MODIFIERS[0b1010], ZoneType::Movable);
    }

    /// Exactly the kernel's eight GFP_ZONE_BAD combinations are impossible: two or more of
    /// DMA, HIGHMEM and DMA32, with or without MOVABLE; every named flag set is possible.
    #[test]
    fn impossible_zone_combinations_are_the_kernels_gfp_zone_bad() {
        let bad: [u32; 8] = [0x3, 0x5, 0x6, 0x7, 0xb, 0xd, 0xe, 0xf];
        for low in 0..16u32 {
            assert_eq!(Gfp(low).impossible_zones(), bad.contains(&low), "{low:#x}");
            assert_eq!(Gfp(low | Gfp::KERNEL.0).impossible_zones(), bad.contains(&low));
        }
        for g in [Gfp::KERNEL, Gfp::ATOMIC, Gfp::HIGHUSER_MOVABLE, Gfp::TRANSHUGE, Gfp::DMA] {
            assert!(!g.impossible_zones(), "{g:?}");
        }
    }

    #[test]
    fn gfp_migratetype() {
        assert_eq!(Gfp::KERNEL.migratetype(), MigrateType::Unmovable);
        assert_eq!(Gfp::HIGHUSER_MOVABLE.migratetype(), MigrateType::Movable);
        assert_eq!(Gfp::KERNEL_RECLAIMABLE.migratetype(), MigrateType::Reclaimable);
        assert_eq!(Gfp::TRANSHUGE.migratetype(), MigrateType::Movable);
    }

    #[test]
    fn slowpath_flags() {
        let atomic = slowpath_alloc_flags(Gfp::ATOMIC, 1);
        assert!(atomic.has(AllocFlags::MIN_RESERVE));
        assert!(atomic.has(AllocFlags::NON_BLOCK));
        assert!(atomic.has(AllocFlags::HIGHATOMIC));
        assert_eq!(atomic.wmark(), 0);
        let kernel = slowpath_alloc_flags(Gfp::KERNEL, 0);
        assert!(!kernel.has(AllocFlags::RESERVES));
        assert!(!slowpath_alloc_flags(Gfp::ATOMIC, 0).has(AllocFlags::HIGHATOMIC));
        assert!(slowpath_alloc_flags(Gfp::HIGHUSER_MOVABLE, 0).has(AllocFlags::CMA));
    }
}

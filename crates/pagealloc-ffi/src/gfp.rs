//! The constants of the C API: GFP flags (the kernel's 6.x values, as the core's `Gfp`) and the
//! allocator's units. Written as literals and expressions of each other, as the kernel's
//! `gfp_types.h` writes them, because the header generator copies constant expressions but
//! cannot evaluate the core's; a test checks each against the core.

/// Bytes in a page (a frame): a frame number times this is a physical address.
pub const PAGEALLOC_PAGE_SIZE: u64 = 4096;
/// The largest order: a block is at most 2^10 frames (4 MiB).
pub const PAGEALLOC_MAX_ORDER: u32 = 10;
/// The order of a pageblock, the unit the allocator groups by mobility (2 MiB, a THP).
pub const PAGEALLOC_PAGEBLOCK_ORDER: u32 = 9;

/// Only from ZONE_DMA.
pub const PAGEALLOC_GFP_DMA: u32 = 0x01;
/// May use highmem (on 64-bit: with `PAGEALLOC_GFP_MOVABLE`, ZONE_MOVABLE).
pub const PAGEALLOC_GFP_HIGHMEM: u32 = 0x02;
/// Only from ZONE_DMA32 or below.
pub const PAGEALLOC_GFP_DMA32: u32 = 0x04;
/// The pages can be migrated (MIGRATE_MOVABLE).
pub const PAGEALLOC_GFP_MOVABLE: u32 = 0x08;
/// The pages can be reclaimed by a shrinker (MIGRATE_RECLAIMABLE).
pub const PAGEALLOC_GFP_RECLAIMABLE: u32 = 0x10;
/// High priority: may dip below the min watermark.
pub const PAGEALLOC_GFP_HIGH: u32 = 0x20;
/// May start physical I/O.
pub const PAGEALLOC_GFP_IO: u32 = 0x40;
/// May call into the filesystem.
pub const PAGEALLOC_GFP_FS: u32 = 0x80;
/// Zero the memory (recorded only: the allocator hands out frame numbers and touches no page).
pub const PAGEALLOC_GFP_ZERO: u32 = 0x100;
/// May reclaim directly (may block).
pub const PAGEALLOC_GFP_DIRECT_RECLAIM: u32 = 0x400;
/// May wake the background reclaimer.
pub const PAGEALLOC_GFP_KSWAPD_RECLAIM: u32 = 0x800;
/// Do not warn on failure.
pub const PAGEALLOC_GFP_NOWARN: u32 = 0x2000;
/// Give up early rather than retry reclaim and compaction.
pub const PAGEALLOC_GFP_NORETRY: u32 = 0x10000;
/// Access to all reserves (no watermarks), for memory-freeing paths.
pub const PAGEALLOC_GFP_MEMALLOC: u32 = 0x20000;
/// A compound page.
pub const PAGEALLOC_GFP_COMP: u32 = 0x40000;
/// Never use emergency reserves.
pub const PAGEALLOC_GFP_NOMEMALLOC: u32 = 0x80000;
/// Enforce the cpuset's memory policy (recorded only).
pub const PAGEALLOC_GFP_HARDWALL: u32 = 0x100000;
/// Only the preferred node.
pub const PAGEALLOC_GFP_THISNODE: u32 = 0x200000;

/// Both reclaim bits.
pub const PAGEALLOC_GFP_RECLAIM: u32 = PAGEALLOC_GFP_DIRECT_RECLAIM | PAGEALLOC_GFP_KSWAPD_RECLAIM;
/// Atomic context: cannot sleep, may use some reserves.
pub const PAGEALLOC_GFP_ATOMIC: u32 = PAGEALLOC_GFP_HIGH | PAGEALLOC_GFP_KSWAPD_RECLAIM;
/// Cannot sleep, uses no reserves.
pub const PAGEALLOC_GFP_NOWAIT: u32 = PAGEALLOC_GFP_KSWAPD_RECLAIM;
/// An ordinary kernel allocation.
pub const PAGEALLOC_GFP_KERNEL: u32 = PAGEALLOC_GFP_RECLAIM | PAGEALLOC_GFP_IO | PAGEALLOC_GFP_FS;
/// A reclaimable kernel allocation (slab caches with SLAB_RECLAIM_ACCOUNT).
pub const PAGEALLOC_GFP_KERNEL_RECLAIMABLE: u32 = PAGEALLOC_GFP_KERNEL | PAGEALLOC_GFP_RECLAIMABLE;
/// A user-space allocation the kernel needs to address.
pub const PAGEALLOC_GFP_USER: u32 = PAGEALLOC_GFP_KERNEL | PAGEALLOC_GFP_HARDWALL;
/// User-space pages that can migrate: anonymous memory and page cache.
pub const PAGEALLOC_GFP_HIGHUSER_MOVABLE: u32 =
    PAGEALLOC_GFP_USER | PAGEALLOC_GFP_HIGHMEM | PAGEALLOC_GFP_MOVABLE;
/// A transparent huge page, light: no direct reclaim.
pub const PAGEALLOC_GFP_TRANSHUGE_LIGHT: u32 = (PAGEALLOC_GFP_HIGHUSER_MOVABLE
    | PAGEALLOC_GFP_COMP
    | PAGEALLOC_GFP_NOMEMALLOC
    | PAGEALLOC_GFP_NOWARN)
    & !PAGEALLOC_GFP_RECLAIM;
/// A transparent huge page with direct reclaim.
pub const PAGEALLOC_GFP_TRANSHUGE: u32 =
    PAGEALLOC_GFP_TRANSHUGE_LIGHT | PAGEALLOC_GFP_DIRECT_RECLAIM;

#[cfg(test)]
mod tests {
    use super::*;
    use pagealloc::types::{MAX_PAGE_ORDER, PAGEBLOCK_ORDER, PAGE_SIZE};
    use pagealloc::Gfp;

    #[test]
    fn the_constants_are_the_cores() {
        assert_eq!(PAGEALLOC_PAGE_SIZE, PAGE_SIZE);
        assert_eq!(PAGEALLOC_MAX_ORDER, u32::from(MAX_PAGE_ORDER));
        assert_eq!(PAGEALLOC_PAGEBLOCK_ORDER, u32::from(PAGEBLOCK_ORDER));
        let pairs = [
            (PAGEALLOC_GFP_DMA, Gfp::DMA),
            (PAGEALLOC_GFP_HIGHMEM, Gfp::HIGHMEM),
            (PAGEALLOC_GFP_DMA32, Gfp::DMA32),
            (PAGEALLOC_GFP_MOVABLE, Gfp::MOVABLE),
            (PAGEALLOC_GFP_RECLAIMABLE, Gfp::RECLAIMABLE),
            (PAGEALLOC_GFP_HIGH, Gfp::HIGH),
            (PAGEALLOC_GFP_IO, Gfp::IO),
            (PAGEALLOC_GFP_FS, Gfp::FS),
            (PAGEALLOC_GFP_ZERO, Gfp::ZERO),
            (PAGEALLOC_GFP_DIRECT_RECLAIM, Gfp::DIRECT_RECLAIM),
            (PAGEALLOC_GFP_KSWAPD_RECLAIM, Gfp::KSWAPD_RECLAIM),
            (PAGEALLOC_GFP_NOWARN, Gfp::NOWARN),
            (PAGEALLOC_GFP_NORETRY, Gfp::NORETRY),
            (PAGEALLOC_GFP_MEMALLOC, Gfp::MEMALLOC),
            (PAGEALLOC_GFP_COMP, Gfp::COMP),
            (PAGEALLOC_GFP_NOMEMALLOC, Gfp::NOMEMALLOC),
            (PAGEALLOC_GFP_HARDWALL, Gfp::HARDWALL),
            (PAGEALLOC_GFP_THISNODE, Gfp::THISNODE),
            (PAGEALLOC_GFP_RECLAIM, Gfp::RECLAIM),
            (PAGEALLOC_GFP_ATOMIC, Gfp::ATOMIC),
            (PAGEALLOC_GFP_NOWAIT, Gfp::NOWAIT),
            (PAGEALLOC_GFP_KERNEL, Gfp::KERNEL),
            (PAGEALLOC_GFP_KERNEL_RECLAIMABLE, Gfp::KERNEL_RECLAIMABLE),
            (PAGEALLOC_GFP_USER, Gfp::USER),
            (PAGEALLOC_GFP_HIGHUSER_MOVABLE, Gfp::HIGHUSER_MOVABLE),
            (PAGEALLOC_GFP_TRANSHUGE_LIGHT, Gfp::TRANSHUGE_LIGHT),
            (PAGEALLOC_GFP_TRANSHUGE, Gfp::TRANSHUGE),
        ];
        for (ours, core) in pairs {
            assert_eq!(ours, core.0, "{core:?}");
        }
    }
}

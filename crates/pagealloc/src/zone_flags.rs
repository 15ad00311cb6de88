//! Zone flag bits (kernel `zone_flags`), for [`Zone::test_flag`](crate::Zone::test_flag).

/// A fragmenting fallback boosted the watermark; the next allocation wakes kswapd.
pub const BOOSTED_WATERMARK: u32 = 1 << 0;
/// Background reclaim is running on this zone.
pub const RECLAIM_ACTIVE: u32 = 1 << 1;
/// A fast watermark check against HIGH failed; cleared by a PCP drain that lifts the zone
/// back above HIGH (6.7+).
pub const BELOW_HIGH: u32 = 1 << 2;

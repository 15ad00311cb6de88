//! Sizing rules: min_free_kbytes, watermarks, lowmem_reserve, watermark boost, PCP batch and
//! high, vmstat thresholds (docs/kernel-reference.md §2, with §1.2 and §1.5 for two small rules).
//! Section numbers (§) in this file are those of `docs/kernel-reference.md`.
//!
//! Everything here is a pure function of its arguments with exact integer arithmetic, so the
//! zone code, the PCP layer and `pagealloc sizing` share one implementation and one set of
//! worked examples. Page counts are pages (4 KiB) unless a name says `kbytes`.
//!
//! None of these functions panics: sums and products saturate, products that the kernel does
//! in 64 bits are done in 128 bits (equal whenever the kernel's own arithmetic does not
//! overflow), and every divisor is either a non-zero constant or checked first.

use alloc::vec::Vec;
use core::borrow::Borrow;
use core::fmt;

use crate::types::{
    fls, int_sqrt, mult_frac, rounddown_pow2, NrPages, ZoneType, NR_ZONE_TYPES, PAGEBLOCK_NR_PAGES,
    PAGE_SHIFT,
};

/// Lower bound of the computed default `min_free_kbytes`, in KiB (§2.1).
pub const MIN_FREE_KBYTES_FLOOR: u64 = 128;
/// Upper bound of the computed default `min_free_kbytes`, in KiB (256 MiB, §2.1).
pub const MIN_FREE_KBYTES_CEIL: u64 = 262_144;
/// Default `vm.watermark_scale_factor`, in units of 1/10000 of a zone's managed pages
/// (10 = 0.1 %); the sysctl accepts 1..=3000 (§2.1).
pub const DEFAULT_WATERMARK_SCALE_FACTOR: u64 = 10;
/// Default `vm.watermark_boost_factor`, in units of 1/10000 of the HIGH watermark
/// (15000 = 150 %); 0 disables boosting (§2.3).
pub const DEFAULT_WATERMARK_BOOST_FACTOR: u64 = 15_000;
/// Default `vm.lowmem_reserve_ratio`, indexed by [`ZoneType::index`]: a zone protects itself
/// against allocations that could have used higher zones by 1/ratio of their managed pages;
/// 0 means no protection (§2.2).
pub const DEFAULT_LOWMEM_RESERVE_RATIO: [u64; NR_ZONE_TYPES] = [256, 256, 32, 0];
/// Smallest non-zero `vm.percpu_pagelist_high_fraction`; also the fraction that gives the
/// auto-tuning ceiling `high_max` (§2.5). Values 1..=7 are rejected like the sysctl's EINVAL.
pub const MIN_PERCPU_PAGELIST_HIGH_FRACTION: u32 = 8;
/// Cap on `managed >> 10` inside [`zone_batchsize_raw`], in pages (1 MiB), since 4.19
/// ("mm, page_alloc: double zone's batchsize"). Gives the maximum batch of 63.
pub const BATCH_CAP_PAGES: u64 = (1024 * 1024) >> PAGE_SHIFT;
/// The same cap before 4.19, in pages (512 KiB). Gives the maximum batch of 31 that older
/// machines print (e.g. realdata `pcp-qa-meminfo-root-004`: batch 31, high 186).
pub const PRE_4_19_BATCH_CAP_PAGES: u64 = (512 * 1024) >> PAGE_SHIFT;

/// Lower clamp for a Movable (or HIGHMEM) zone's MIN watermark, in pages (SWAP_CLUSTER_MAX).
const MOVABLE_WMARK_MIN_FLOOR: u64 = 32;
/// Upper clamp for a Movable (or HIGHMEM) zone's MIN watermark, in pages.
const MOVABLE_WMARK_MIN_CEIL: u64 = 128;
/// Denominator of the scale and boost factors.
const FACTOR_DENOMINATOR: u64 = 10_000;
/// MIGRATE_TYPES (§1.2); only the mobility-grouping threshold needs it here.
const MIGRATE_TYPES: u64 = 6;
/// MIGRATE_PCPTYPES (§1.2); the THP recommendation wants a pageblock per pair of these.
const MIGRATE_PCPTYPES: u64 = 3;
/// Cap on [`zone_highsize`]'s result so it always fits the kernel's `int` pcp fields.
const PCP_HIGH_CAP: u64 = i32::MAX as u64;

/// Why a sizing input was refused.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum SizingError {
    /// `vm.percpu_pagelist_high_fraction` must be 0 (auto-tuning) or at least
    /// [`MIN_PERCPU_PAGELIST_HIGH_FRACTION`]; the kernel answers EINVAL and keeps the old value.
    HighFractionTooSmall {
        /// The rejected fraction (1..=7).
        fraction: u32,
    },
}

impl fmt::Display for SizingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizingError::HighFractionTooSmall { fraction } => write!(
                f,
                "percpu_pagelist_high_fraction {fraction} is invalid: it must be 0 or at least \
                 {MIN_PERCPU_PAGELIST_HIGH_FRACTION}"
            ),
        }
    }
}

fn saturate_u64(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

// ---------------------------------------------------------------------------------------------
// §2.1 min_free_kbytes

/// Pages above the HIGH watermark in the zones an allocation may use, in pages: the sum of
/// `managed − HIGH` (0 where HIGH ≥ managed) over the zones whose type is ≤ `highest`
/// (the kernel's `nr_free_zone_pages`). Each entry is (zone type, managed pages, HIGH
/// watermark in pages including boost); list the zones of every node.
///
/// `highest = Normal` gives `nr_free_buffer_pages` (§2.1, THP cap); `highest = Movable` gives
/// the GFP_HIGHUSER_MOVABLE total that decides [`mobility_grouping_disabled`] (§1.2). At boot
/// the watermarks are still 0, so both are then plain sums of managed pages.
pub fn nr_free_zone_pages(
    zones: impl IntoIterator<Item = impl Borrow<(ZoneType, NrPages, u64)>>,
    highest: ZoneType,
) -> u64 {
    zones
        .into_iter()
        .map(|z| *z.borrow())
        .filter(|(zt, _, _)| *zt <= highest)
        .fold(0u64, |sum, (_, managed, high)| sum.saturating_add(managed.0.saturating_sub(high)))
}

/// The `lowmem_kbytes` input of [`default_min_free_kbytes`], in KiB: 4 × the pages above HIGH
/// in every zone ≤ Normal, all nodes (§2.1). Entries are (type, managed, HIGH incl. boost).
///
/// Example: at boot (HIGH = 0) with DMA 3976 + DMA32 758708 + Normal 236634 managed pages
/// (realdata `jc-zoneinfo.txt`) this is 3 997 272 KiB.
pub fn lowmem_kbytes(
    zones: impl IntoIterator<Item = impl Borrow<(ZoneType, NrPages, u64)>>,
) -> u64 {
    nr_free_zone_pages(zones, ZoneType::Normal).saturating_mul(1 << (PAGE_SHIFT - 10))
}

/// The computed default `min_free_kbytes`, in KiB: `isqrt(16 × lowmem_kbytes)` clamped to
/// [128, 262144] (§2.1). `lowmem_kbytes` is in KiB (see [`lowmem_kbytes`]).
///
/// Example: 3 997 272 KiB of lowmem gives isqrt(63 956 352) = 7997 KiB. Whether the result
/// replaces a value the user wrote is [`recalculate_min_free_kbytes`]'s business.
pub fn default_min_free_kbytes(lowmem_kbytes: u64) -> u64 {
    unclamped_min_free_kbytes(lowmem_kbytes).clamp(MIN_FREE_KBYTES_FLOOR, MIN_FREE_KBYTES_CEIL)
}

fn unclamped_min_free_kbytes(lowmem_kbytes: u64) -> u64 {
    int_sqrt(lowmem_kbytes.saturating_mul(16))
}

/// `min_free_kbytes` after a boot-time or memory-hotplug recalculation, in KiB.
///
/// `user_min_free_kbytes` is the value last written to the sysctl (None if never written);
/// `current` is the value in force (it may differ from the user's: THP can raise it). The
/// kernel compares the *unclamped* square root with the user's value: only a strictly larger
/// root replaces `current`, and then clamped, so a root above 262144 can even lower a larger
/// user value to 262144 (§2.1 "not applied if the user set a larger value").
pub fn recalculate_min_free_kbytes(
    lowmem_kbytes: u64,
    user_min_free_kbytes: Option<u64>,
    current: u64,
) -> u64 {
    let raw = unclamped_min_free_kbytes(lowmem_kbytes);
    match user_min_free_kbytes {
        Some(user) if raw <= user => current,
        _ => raw.clamp(MIN_FREE_KBYTES_FLOOR, MIN_FREE_KBYTES_CEIL),
    }
}

/// The `min_free_kbytes` khugepaged recommends, in KiB (§2.1): per populated zone ≤ Normal
/// (all nodes) 2 pageblocks plus 3 × 3 pageblocks (one per pair of PCP migratetypes), capped
/// at 5 % of `nr_free_buffer_pages` (pages, [`nr_free_zone_pages`] up to Normal).
///
/// The caller applies it only if it exceeds the current value. Example: 3 zones and plenty of
/// memory give 3 × 11 × 512 = 16 896 pages = 67 584 KiB (the §2.9 machine's value).
pub fn thp_recommended_min_free_kbytes(
    populated_lowmem_zones: u64,
    nr_free_buffer_pages: u64,
) -> u64 {
    let per_zone = PAGEBLOCK_NR_PAGES * (2 + MIGRATE_PCPTYPES * MIGRATE_PCPTYPES);
    let pages = per_zone.saturating_mul(populated_lowmem_zones).min(nr_free_buffer_pages / 20);
    pages.saturating_mul(1 << (PAGE_SHIFT - 10))
}

// ---------------------------------------------------------------------------------------------
// §2.1 watermarks

/// A zone's watermarks in pages, without the watermark boost (the kernel's `_watermark[]`).
///
/// Invariant: `min ≤ low ≤ high ≤ promo`, with equal steps `low − min = high − low =
/// promo − high` (unless saturated at `u64::MAX`). Everything that *uses* a watermark adds
/// the zone's current boost first ([`Watermarks::with_boost`]); `/proc/zoneinfo` prints the
/// boosted values.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Watermarks {
    /// WMARK_MIN, pages: only reserve-using allocations may go below it.
    pub min: u64,
    /// WMARK_LOW, pages: kswapd is woken below it.
    pub low: u64,
    /// WMARK_HIGH, pages: kswapd stops once free pages are back above it.
    pub high: u64,
    /// WMARK_PROMO, pages: the NUMA memory-tiering promotion target.
    pub promo: u64,
}

impl Watermarks {
    /// The marks in effect with `boost` pages of watermark boost (each mark + boost,
    /// saturating), as watermark checks, PCP sizing and zoneinfo see them (§1.4).
    #[must_use]
    pub const fn with_boost(self, boost: u64) -> Watermarks {
        Watermarks {
            min: self.min.saturating_add(boost),
            low: self.low.saturating_add(boost),
            high: self.high.saturating_add(boost),
            promo: self.promo.saturating_add(boost),
        }
    }
}

/// Every zone's watermarks, in pages, in the order of `zones` (§2.1 steps 1–5).
///
/// `min_free_kbytes` is in KiB; `watermark_scale_factor` in 1/10000 of managed pages (the
/// sysctl allows 1..=3000, not enforced here); `zones` lists (type, managed pages) for the
/// zones of *all* nodes, because the MIN reserve is shared out over the lowmem zones of the
/// whole machine. Lowmem zones get MIN = their proportional share of min_free_kbytes / 4;
/// Movable zones get MIN = clamp(managed / 1024, 32, 128) — even an empty Movable zone gets 32.
/// The step `delta = max(share / 4, managed × wsf / 10000)` uses the share even for Movable.
/// A `watermark_scale_factor` of 0 (the sysctl's range starts at 1) stands for kernels before
/// 4.6, which had no factor: LOW = MIN + share / 4 and HIGH = MIN + share / 2 (PROMO, which no
/// such kernel has, continues the quarter steps).
///
/// Example (§2.9): 67 584 KiB, wsf 10, Normal 327 680 of 1 104 425 lowmem pages ⇒
/// 5012 / 6265 / 7518 / 8771. With no lowmem pages at all (the kernel would divide by zero)
/// every share is 0.
pub fn zone_watermarks(
    min_free_kbytes: u64,
    watermark_scale_factor: u64,
    zones: &[(ZoneType, NrPages)],
) -> Vec<Watermarks> {
    let lowmem = lowmem_pages(zones);
    zones
        .iter()
        .map(|&(zt, managed)| {
            zone_watermark(min_free_kbytes, watermark_scale_factor, lowmem, zt, managed)
        })
        .collect()
}

/// Managed pages of the lowmem zones (≤ Normal) among `zones`, all nodes: the total
/// min_free_kbytes is shared out over ([`zone_watermark`]'s `lowmem_pages`).
pub fn lowmem_pages(zones: impl IntoIterator<Item = impl Borrow<(ZoneType, NrPages)>>) -> u64 {
    zones
        .into_iter()
        .map(|z| *z.borrow())
        .filter(|(zt, _)| zt.is_lowmem())
        .fold(0u64, |sum, (_, managed)| sum.saturating_add(managed.0))
}

/// One zone's watermarks, [`zone_watermarks`] for a zone of type `zt` with `managed` pages
/// on a machine with `lowmem_pages` ([`lowmem_pages`]) lowmem pages: what a caller that
/// keeps no list of zones (the allocator, which must not allocate) computes zone by zone.
pub fn zone_watermark(
    min_free_kbytes: u64,
    watermark_scale_factor: u64,
    lowmem_pages: u64,
    zt: ZoneType,
    managed: NrPages,
) -> Watermarks {
    let pages_min = NrPages::from_kib(min_free_kbytes).0;
    let share = if lowmem_pages == 0 {
        0
    } else {
        saturate_u64(u128::from(pages_min) * u128::from(managed.0) / u128::from(lowmem_pages))
    };
    let min = if zt.is_lowmem() {
        share
    } else {
        (managed.0 / 1024).clamp(MOVABLE_WMARK_MIN_FLOOR, MOVABLE_WMARK_MIN_CEIL)
    };
    if watermark_scale_factor == 0 {
        // Before 4.6: LOW and HIGH were a quarter and a half of the share above MIN,
        // each rounded down on its own (so HIGH − LOW is not always LOW − MIN).
        let low = min.saturating_add(share / 4);
        let high = min.saturating_add(share / 2);
        return Watermarks { min, low, high, promo: high.saturating_add(share / 4) };
    }
    let delta = (share / 4).max(mult_frac(managed.0, watermark_scale_factor, FACTOR_DENOMINATOR));
    let low = min.saturating_add(delta);
    let high = low.saturating_add(delta);
    let promo = high.saturating_add(delta);
    Watermarks { min, low, high, promo }
}

// ---------------------------------------------------------------------------------------------
// §2.2 lowmem_reserve and totalreserve

/// The `lowmem_reserve` ("protection") rows of one node's zones, in pages, one row per entry
/// of `zones_of_one_node` in the same order (§2.2).
///
/// Row `i`, column `j > i` is `(managed of zone types i+1..=j) / ratios[i]`; columns `j ≤ i`
/// are 0, and the whole row is 0 when `ratios[i] == 0` or zone `i` has no managed pages.
/// Zone types missing from the slice count as empty (a type listed twice counts the sum).
/// `empty_upper_zone_is_zero` selects the 6.10–6.13 rule that also zeroes column `j` when
/// zone `j` itself is empty; mainline ≤ 6.9 and ≥ 6.14 keep the cumulative value there.
///
/// Example (§2.9): DMA32 772 769, Normal 327 680, ratios 256 ⇒ DMA32's column Normal = 1280.
pub fn lowmem_reserve(
    zones_of_one_node: &[(ZoneType, NrPages)],
    ratios: &[u64; NR_ZONE_TYPES],
    empty_upper_zone_is_zero: bool,
) -> Vec<[u64; NR_ZONE_TYPES]> {
    let mut managed = [0u64; NR_ZONE_TYPES];
    for &(zt, pages) in zones_of_one_node {
        managed[zt.index()] = managed[zt.index()].saturating_add(pages.0);
    }
    zones_of_one_node
        .iter()
        .map(|&(zt, _)| lowmem_reserve_row(&managed, zt, ratios, empty_upper_zone_is_zero))
        .collect()
}

/// One row of [`lowmem_reserve`]: zone type `zt`'s, given the node's managed pages by zone
/// type (`managed[t]` for type index `t`).
pub fn lowmem_reserve_row(
    managed: &[u64; NR_ZONE_TYPES],
    zt: ZoneType,
    ratios: &[u64; NR_ZONE_TYPES],
    empty_upper_zone_is_zero: bool,
) -> [u64; NR_ZONE_TYPES] {
    let i = zt.index();
    let ratio = ratios[i];
    let mut row = [0u64; NR_ZONE_TYPES];
    if ratio == 0 || managed[i] == 0 {
        return row;
    }
    let mut upper = 0u64;
    for j in i + 1..NR_ZONE_TYPES {
        upper = upper.saturating_add(managed[j]);
        row[j] = if empty_upper_zone_is_zero && managed[j] == 0 { 0 } else { upper / ratio };
    }
    row
}

/// `totalreserve_pages`, in pages: pages the kernel treats as unavailable to user space,
/// Σ over zones of min(managed, HIGH + largest lowmem_reserve entry) (§2.2).
///
/// Each item is (managed pages, HIGH watermark in pages incl. boost, the zone's
/// `lowmem_reserve` row); pass every zone of every node. Example: a 3976-page DMA zone with
/// HIGH 90 and a largest reserve of 4298 contributes its whole 3976 pages.
pub fn totalreserve_pages(
    zones: impl IntoIterator<Item = (NrPages, u64, [u64; NR_ZONE_TYPES])>,
) -> u64 {
    zones.into_iter().fold(0u64, |sum, (managed, high, reserve)| {
        let largest = reserve.iter().copied().max().unwrap_or(0);
        sum.saturating_add(high.saturating_add(largest).min(managed.0))
    })
}

// ---------------------------------------------------------------------------------------------
// §2.3 watermark boost, §1.2 mobility grouping

/// The zone's watermark boost after one fragmenting fallback, in pages, or None when the
/// kernel skips boosting (§2.3): `boost_factor` (1/10000 of HIGH) is 0, the zone has fewer
/// than 4 pageblocks (`managed < 2048`), or HIGH × factor / 10000 rounds to 0.
///
/// `high_wmark` is the *unboosted* HIGH in pages. The boost grows by one pageblock per call
/// up to max(512, HIGH × factor / 10000); a lowered factor can make it shrink. Example: HIGH
/// 7518, factor 15000: 0 → 512 → 1024 → … → 11 264 → 11 277 (cap).
pub fn watermark_boost_step(
    current_boost: u64,
    high_wmark: u64,
    managed: NrPages,
    boost_factor: u64,
) -> Option<u64> {
    if boost_factor == 0 || 4 * PAGEBLOCK_NR_PAGES > managed.0 {
        return None;
    }
    let scaled = mult_frac(high_wmark, boost_factor, FACTOR_DENOMINATOR);
    if scaled == 0 {
        return None;
    }
    let max_boost = scaled.max(PAGEBLOCK_NR_PAGES);
    Some(current_boost.saturating_add(PAGEBLOCK_NR_PAGES).min(max_boost))
}

/// Whether grouping pages by mobility is switched off (every PCP-type request treated as
/// UNMOVABLE) because too little memory exists for it to pay (§1.2).
///
/// `pages_above_high` is in pages: [`nr_free_zone_pages`] up to Movable, at boot when the
/// watermarks are still 0. Disabled below 512 × 6 = 3072 pages (12 MiB).
pub fn mobility_grouping_disabled(pages_above_high: u64) -> bool {
    pages_above_high < PAGEBLOCK_NR_PAGES * MIGRATE_TYPES
}

// ---------------------------------------------------------------------------------------------
// §2.4 batch

/// The kernel's `zone_batchsize` before the final max(1, …), in pages: may be 0.
///
/// `cap_pages` bounds `managed >> 10` first: [`BATCH_CAP_PAGES`] (256) since 4.19,
/// [`PRE_4_19_BATCH_CAP_PAGES`] (128) before. Zones under 8192 managed pages give 0; kernels
/// before 5.14 used this raw value for `high` ([`legacy_pcp_high`]), which is why they print
/// `high: 0, batch: 1` for the DMA zone.
pub fn zone_batchsize_raw(managed: NrPages, cap_pages: u64) -> u32 {
    let b = ((managed.0 >> 10).min(cap_pages) / 4).max(1);
    // b ≤ u64::MAX / 4, so b + b/2 cannot overflow; the result is < 2^63 and saturates to u32.
    let raw = rounddown_pow2(b + b / 2) - 1;
    u32::try_from(raw).unwrap_or(u32::MAX)
}

/// A zone's PCP `batch`, in pages (§2.4): 1 below 12 288 managed pages, 3 below 24 576,
/// 7 below 45 056, 15 below 90 112, 31 below 176 128, else 63.
///
/// Example: Normal with 327 680 managed pages ⇒ min(320, 256) / 4 = 64 ⇒ 96 ⇒ 64 − 1 = 63.
pub fn zone_batchsize(managed: NrPages) -> u32 {
    zone_batchsize_raw(managed, BATCH_CAP_PAGES).max(1)
}

/// The fixed PCP `high` of kernels before 5.14, in pages: 6 × batch (378 for batch 63).
///
/// Pass [`zone_batchsize_raw`] (not the clamped batch): tiny zones then get 0, as those kernels
/// printed. 5.14 replaced this with [`zone_highsize`] (docs/preset-history.md §1.2, item b).
pub const fn legacy_pcp_high(batch: u32) -> u32 {
    batch.saturating_mul(6)
}

// ---------------------------------------------------------------------------------------------
// §2.5 high_min / high_max, §1.5 clamp

/// A zone's PCP sizes in pages, as pushed to every CPU's pageset (§2.5).
///
/// `high_min < high_max` means auto-tuning is on. `high_min > high_max` is possible (LOW above
/// about managed / 8, i.e. a huge min_free_kbytes) and is kept as the kernel keeps it; see
/// [`pcp_clamp`] for what the PCP layer then does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PcpSizes {
    /// Base refill/drain chunk, pages (≥ 1).
    pub batch: u32,
    /// Lower bound of the auto-tuned `high`, pages.
    pub high_min: u32,
    /// Upper bound of the auto-tuned `high`, pages.
    pub high_max: u32,
}

/// The boot pageset's sizes (§1.5): used before per-CPU memory exists, for unpopulated zones
/// and while memory is being offlined. Every free goes back to the buddy, every refill takes
/// one block.
pub const BOOT_PCP_SIZES: PcpSizes = PcpSizes { batch: 1, high_min: 0, high_max: 0 };

/// The kernel's `zone_highsize`, in pages (§2.5): `max(total / nr_split_cpus, 4 × batch)`.
///
/// `total` is `low_wmark_with_boost` (pages, LOW + boost at the time of the recompute) when
/// `fraction == 0`, else `managed / fraction`. `nr_split_cpus = node_cpus + cpu_online`, where
/// `node_cpus` counts the CPUs of the zone's node and `cpu_online` is 1 only while a CPU that
/// is not yet in that mask comes online; a CPU-less node splits over `num_online_cpus`
/// (treated as 1 if 0). `batch` is in pages. The result is capped at `i32::MAX`, the range of
/// the kernel's fields. Example (§2.9): LOW 6265, 2 CPUs, batch 63 ⇒ 3132.
pub fn zone_highsize(
    low_wmark_with_boost: u64,
    managed: NrPages,
    batch: u32,
    node_cpus: u32,
    cpu_online: u32,
    num_online_cpus: u32,
    fraction: u32,
) -> u32 {
    let total = if fraction == 0 { low_wmark_with_boost } else { managed.0 / u64::from(fraction) };
    let mut nr_split_cpus = node_cpus.saturating_add(cpu_online);
    if nr_split_cpus == 0 {
        nr_split_cpus = num_online_cpus.max(1);
    }
    let high = (total / u64::from(nr_split_cpus)).max(u64::from(batch) * 4);
    high.min(PCP_HIGH_CAP) as u32
}

/// A zone's PCP batch, high_min and high_max in pages for
/// `vm.percpu_pagelist_high_fraction` = `fraction` (§2.5; CPU arguments as [`zone_highsize`]).
///
/// Fraction 0 (default): high_min from the LOW watermark, high_max from managed / 8
/// (auto-tuning on). Fraction ≥ 8: both from managed / fraction (auto-tuning off). Fraction
/// 1..=7 is refused. Example (§2.9): LOW 6265, managed 327 680, 2 CPUs ⇒ batch 63,
/// high_min 3132, high_max 20 480.
///
/// # Errors
/// [`SizingError::HighFractionTooSmall`] for a fraction in 1..=7 (the sysctl's EINVAL).
pub fn pcp_sizes(
    low_wmark_with_boost: u64,
    managed: NrPages,
    node_cpus: u32,
    cpu_online: u32,
    num_online_cpus: u32,
    percpu_pagelist_high_fraction: u32,
) -> Result<PcpSizes, SizingError> {
    pcp_sizes_for_batch(
        zone_batchsize(managed),
        low_wmark_with_boost,
        managed,
        node_cpus,
        cpu_online,
        num_online_cpus,
        percpu_pagelist_high_fraction,
    )
}

/// [`pcp_sizes`] for a given `batch` (e.g. one under the pre-4.19 cap).
pub(crate) fn pcp_sizes_for_batch(
    batch: u32,
    low_wmark_with_boost: u64,
    managed: NrPages,
    node_cpus: u32,
    cpu_online: u32,
    num_online_cpus: u32,
    percpu_pagelist_high_fraction: u32,
) -> Result<PcpSizes, SizingError> {
    let fraction = percpu_pagelist_high_fraction;
    if fraction != 0 && fraction < MIN_PERCPU_PAGELIST_HIGH_FRACTION {
        return Err(SizingError::HighFractionTooSmall { fraction });
    }
    let highsize = |f| {
        zone_highsize(
            low_wmark_with_boost,
            managed,
            batch,
            node_cpus,
            cpu_online,
            num_online_cpus,
            f,
        )
    };
    let (high_min, high_max) = if fraction == 0 {
        (highsize(0), highsize(MIN_PERCPU_PAGELIST_HIGH_FRACTION))
    } else {
        let high = highsize(fraction);
        (high, high)
    };
    Ok(PcpSizes { batch, high_min, high_max })
}

/// The kernel's `clamp` as the PCP code evaluates it (§1.5): `v ≥ hi ? hi : (v ≤ lo ? lo : v)`.
///
/// Same unit as its arguments (pages for pcp.high and nr_pcp_free). Equals
/// `v.clamp(lo, hi)` when `lo ≤ hi`; unlike `Ord::clamp` it does not panic when `lo > hi`
/// (high_min > high_max) but answers `hi` for `v ≥ hi` and `lo` otherwise — so an untouched
/// pcp.high of 0 first becomes high_min, and the next clamp makes it high_max.
pub fn pcp_clamp<T: Ord>(v: T, lo: T, hi: T) -> T {
    if v >= hi {
        hi
    } else if v <= lo {
        lo
    } else {
        v
    }
}

// ---------------------------------------------------------------------------------------------
// §2.7 cache-size input

/// Whether a CPU's pageset gets PCPF_FREE_HIGH_BATCH (§2.7): its share of the last-level cache
/// (`llc_slice_bytes`, bytes; 0 if unknown) holds more than 3 × `batch` pages.
///
/// Example: batch 63 ⇒ set from 190 pages = 778 240 bytes (760 KiB) up.
pub fn free_high_batch(llc_slice_bytes: u64, batch: u32) -> bool {
    (llc_slice_bytes >> PAGE_SHIFT) > 3 * u64::from(batch)
}

// ---------------------------------------------------------------------------------------------
// §2.8 vmstat threshold and drift mark

/// The vmstat per-CPU counter threshold printed as `vm stats threshold`, in pages (§2.8):
/// `min(125, 2·fls(cpus)·(1 + fls(managed / 32768)))`, i.e. it grows with the log of the CPU
/// count and of the zone size in 128 MiB units.
///
/// Example: 327 680 managed pages, 2 CPUs ⇒ 2·2·(1 + fls(10)) = 20.
pub fn stat_threshold(managed: NrPages, num_online_cpus: u32) -> u32 {
    let mem = managed.0 >> (27 - PAGE_SHIFT);
    // fls ≤ 64 on both sides, so the product is at most 2·64·65 and cannot overflow.
    (2 * fls(u64::from(num_online_cpus)) * (1 + fls(mem))).min(125)
}

/// The zone's `percpu_drift_mark` in pages, or None when per-CPU counter drift cannot hide a
/// breach of MIN (§2.8): Some(HIGH + cpus × threshold) iff cpus × threshold > LOW − MIN.
///
/// Pass the boosted marks ([`Watermarks::with_boost`]): the boost cancels in LOW − MIN but is
/// part of the mark. The kernel only ever *sets* the mark, so on None a zone keeps any mark
/// from an earlier recompute. Example (§2.9): 2 × 20 = 40 ≤ 1253 ⇒ None.
pub fn percpu_drift_mark(wm: &Watermarks, threshold: u32, num_online_cpus: u32) -> Option<u64> {
    let max_drift = u64::from(num_online_cpus) * u64::from(threshold);
    let tolerate_drift = wm.low.saturating_sub(wm.min);
    (max_drift > tolerate_drift).then(|| wm.high.saturating_add(max_drift))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    const DMA: ZoneType = ZoneType::Dma;
    const DMA32: ZoneType = ZoneType::Dma32;
    const NORMAL: ZoneType = ZoneType::Normal;
    const MOVABLE: ZoneType = ZoneType::Movable;

    fn wm(min: u64, low: u64, high: u64, promo: u64) -> Watermarks {
        Watermarks { min, low, high, promo }
    }

    /// The §2.9 machine: DMA and DMA32 sizes chosen so that L = 1 104 425, the low end of the
    /// range the spec derives from the printed MIN.
    const EXAMPLE_ZONES: [(ZoneType, NrPages); 3] =
        [(DMA, NrPages(3976)), (DMA32, NrPages(772_769)), (NORMAL, NrPages(327_680))];

    #[test]
    fn worked_example_section_2_9() {
        let l: u64 = EXAMPLE_ZONES.iter().map(|z| z.1 .0).sum();
        assert!((1_104_425..=1_104_645).contains(&l));

        // 67584 KiB is the THP recommendation for 3 lowmem zones.
        assert_eq!(thp_recommended_min_free_kbytes(3, l), 67_584);

        let marks = zone_watermarks(67_584, DEFAULT_WATERMARK_SCALE_FACTOR, &EXAMPLE_ZONES);
        let normal = marks[2];
        assert_eq!(normal, wm(5012, 6265, 7518, 8771));
        // The other two zones, hand-computed: 16896·3976/L = 60, 16896·772769/L = 11822.
        assert_eq!(marks[0], wm(60, 75, 90, 105));
        assert_eq!(marks[1], wm(11_822, 14_777, 17_732, 20_687));

        let sizes = pcp_sizes(normal.low, NrPages(327_680), 2, 0, 2, 0).unwrap();
        assert_eq!(sizes, PcpSizes { batch: 63, high_min: 3132, high_max: 20_480 });

        let threshold = stat_threshold(NrPages(327_680), 2);
        assert_eq!(threshold, 20);
        assert_eq!(percpu_drift_mark(&normal, threshold, 2), None);

        let reserve = lowmem_reserve(&EXAMPLE_ZONES, &DEFAULT_LOWMEM_RESERVE_RATIO, false);
        assert_eq!(reserve[1][NORMAL.index()], 1280);
        assert_eq!(reserve[2], [0; NR_ZONE_TYPES]);

        // FREE_HIGH_BATCH iff the LLC slice is more than 189 pages.
        assert!(!free_high_batch(189 << PAGE_SHIFT, sizes.batch));
        assert!(free_high_batch(190 << PAGE_SHIFT, sizes.batch));
    }

    #[test]
    fn worked_example_min_holds_across_the_stated_lowmem_range() {
        let min_of_normal = |l: u64| {
            // Put the rest of lowmem in DMA32; only the total matters to Normal's share.
            let zones = [(DMA32, NrPages(l - 327_680)), (NORMAL, NrPages(327_680))];
            zone_watermarks(67_584, 10, &zones)[1].min
        };
        assert_eq!(min_of_normal(1_104_425), 5012);
        assert_eq!(min_of_normal(1_104_645), 5012);
        assert_eq!(min_of_normal(1_104_424), 5013);
        assert_eq!(min_of_normal(1_104_646), 5011);
    }

    #[test]
    fn default_min_free_kbytes_is_a_clamped_square_root() {
        assert_eq!(default_min_free_kbytes(0), 128);
        assert_eq!(default_min_free_kbytes(1024), 128); // isqrt(16384) = 128 exactly
        assert_eq!(default_min_free_kbytes(1025), 128); // isqrt(16400) = 128
        assert_eq!(default_min_free_kbytes(1089), 132); // isqrt(17424) = 132

        // realdata jc-zoneinfo.txt lowmem at boot: 4 × (3976 + 758708 + 236634) KiB.
        let zones = [
            (DMA, NrPages(3976), 0),
            (DMA32, NrPages(758_708), 0),
            (NORMAL, NrPages(236_634), 0),
            (MOVABLE, NrPages(1 << 20), 0), // not lowmem
        ];
        assert_eq!(lowmem_kbytes(zones), 3_997_272);
        assert_eq!(default_min_free_kbytes(3_997_272), 7997); // 7997² ≤ 63 956 352 < 7998²
        assert_eq!(default_min_free_kbytes(1 << 32), 262_144); // isqrt(2^36) = 2^18 exactly
        assert_eq!(default_min_free_kbytes(1 << 40), 262_144);
        assert_eq!(default_min_free_kbytes(u64::MAX), 262_144);
    }

    #[test]
    fn free_zone_pages_count_only_pages_above_high() {
        let zones = [
            (DMA, NrPages(3976), 4000), // HIGH above managed: contributes 0, not a wrap
            (DMA32, NrPages(10_000), 1000),
            (NORMAL, NrPages(20_000), 2000),
            (MOVABLE, NrPages(5000), 32),
        ];
        assert_eq!(nr_free_zone_pages(zones, NORMAL), 9000 + 18_000);
        assert_eq!(nr_free_zone_pages(zones, MOVABLE), 9000 + 18_000 + 4968);
        assert_eq!(nr_free_zone_pages(zones, DMA), 0);
        assert_eq!(lowmem_kbytes(zones), 4 * 27_000);
        assert_eq!(lowmem_kbytes([(NORMAL, NrPages(u64::MAX), 0)]), u64::MAX);
    }

    #[test]
    fn recalculation_respects_a_larger_user_value() {
        // Root of 16 × 3 997 272 is 7997.
        assert_eq!(recalculate_min_free_kbytes(3_997_272, None, 67_584), 7997);
        assert_eq!(recalculate_min_free_kbytes(3_997_272, Some(7996), 7996), 7997);
        assert_eq!(recalculate_min_free_kbytes(3_997_272, Some(7997), 7997), 7997);
        assert_eq!(recalculate_min_free_kbytes(3_997_272, Some(9000), 67_584), 67_584);
        // The comparison uses the unclamped root: 100 ≤ 110 keeps the user's 110 …
        assert_eq!(recalculate_min_free_kbytes(625, Some(110), 110), 110);
        // … while a root of 2^19 beats a user's 300000 and is then clamped to 262144.
        assert_eq!(recalculate_min_free_kbytes(1 << 34, Some(300_000), 300_000), 262_144);
    }

    #[test]
    fn thp_recommendation_and_its_five_percent_cap() {
        assert_eq!(thp_recommended_min_free_kbytes(0, 1 << 30), 0);
        assert_eq!(thp_recommended_min_free_kbytes(1, 1 << 30), 5632 * 4);
        // Four zones (realdata pcp-qa 007 has DMA, DMA32 and two Normal): 22 528 pages.
        assert_eq!(thp_recommended_min_free_kbytes(4, 1 << 30), 90_112);
        // 100 000 pages above HIGH cap it at 5000 pages.
        assert_eq!(thp_recommended_min_free_kbytes(3, 100_000), 20_000);
        assert_eq!(thp_recommended_min_free_kbytes(u64::MAX, u64::MAX), (u64::MAX / 20) * 4);
    }

    #[test]
    fn watermarks_use_the_scale_factor_when_it_dominates() {
        // One Normal zone of 4 GiB, 1024 KiB min: share 256, 256/4 = 64 < 1048576·10/10000.
        let marks = zone_watermarks(1024, 10, &[(NORMAL, NrPages(1 << 20))]);
        assert_eq!(marks, vec![wm(256, 1304, 2352, 3400)]);
        // wsf 3000 (the sysctl's maximum): 30 % steps.
        let marks = zone_watermarks(1024, 3000, &[(NORMAL, NrPages(1 << 20))]);
        assert_eq!(marks[0].low - marks[0].min, 314_572);
    }

    #[test]
    fn watermarks_before_4_6_round_each_step_on_its_own() {
        // 4008 KiB = 1002 pages of one Normal zone: LOW = 1002 + 250, HIGH = 1002 + 501, one
        // page above the 1002 + 2 × 250 of the later rule.
        let marks = zone_watermarks(4008, 0, &[(NORMAL, NrPages(1 << 20))]);
        assert_eq!(marks[0].min, 1002);
        assert_eq!(marks[0].low, 1252);
        assert_eq!(marks[0].high, 1503);
    }

    #[test]
    fn watermarks_split_min_over_the_lowmem_of_all_nodes() {
        // Two nodes, each with one Normal zone: the reserve is split 1:3.
        let zones = [(NORMAL, NrPages(100_000)), (NORMAL, NrPages(300_000))];
        let marks = zone_watermarks(16_000, 10, &zones);
        assert_eq!(marks[0].min, 1000);
        assert_eq!(marks[1].min, 3000);
        assert_eq!(marks[1].low, 3750);
        // An empty lowmem zone gets nothing.
        let marks = zone_watermarks(16_000, 10, &[(DMA, NrPages(0)), (NORMAL, NrPages(9))]);
        assert_eq!(marks[0], Watermarks::default());
        assert_eq!(marks[1], wm(4000, 5000, 6000, 7000));
    }

    #[test]
    fn movable_watermarks_use_the_small_clamped_min() {
        let zones =
            [(NORMAL, NrPages(1 << 20)), (MOVABLE, NrPages(1 << 20)), (MOVABLE, NrPages(0))];
        let marks = zone_watermarks(65_536, 10, &zones);
        // Movable is not lowmem: Normal gets all of the 16384-page reserve.
        assert_eq!(marks[0].min, 16_384);
        // 2^20 / 1024 = 1024 → 128; the step still uses the (uncapped) share 16384 / 4.
        assert_eq!(marks[1], wm(128, 128 + 4096, 128 + 8192, 128 + 12_288));
        // An empty Movable zone still gets MIN 32, with zero steps.
        assert_eq!(marks[2], wm(32, 32, 32, 32));
        let small = zone_watermarks(0, 10, &[(MOVABLE, NrPages(100 * 1024))]);
        assert_eq!(small[0], wm(100, 202, 304, 406));
    }

    #[test]
    fn watermarks_without_lowmem_do_not_divide_by_zero() {
        assert!(zone_watermarks(67_584, 10, &[]).is_empty());
        let marks = zone_watermarks(67_584, 10, &[(MOVABLE, NrPages(1 << 20)), (DMA, NrPages(0))]);
        assert_eq!(marks[0], wm(128, 128 + 1048, 128 + 2096, 128 + 3144));
        assert_eq!(marks[1], Watermarks::default());
        // Extreme inputs saturate instead of overflowing.
        let marks = zone_watermarks(u64::MAX, u64::MAX, &[(NORMAL, NrPages(u64::MAX))]);
        assert_eq!(marks[0].promo, u64::MAX);
        assert_eq!(marks[0].min, u64::MAX / 4);
    }

    #[test]
    fn with_boost_raises_every_mark() {
        let marks = wm(5012, 6265, 7518, 8771).with_boost(512);
        assert_eq!(marks, wm(5524, 6777, 8030, 9283));
        assert_eq!(wm(1, 2, 3, u64::MAX).with_boost(2).promo, u64::MAX);
    }

    #[test]
    fn lowmem_reserve_before_6_10_and_after_6_14() {
        let rows = lowmem_reserve(&EXAMPLE_ZONES, &DEFAULT_LOWMEM_RESERVE_RATIO, false);
        // 772769/256 = 3018, (772769+327680)/256 = 4298; the empty Movable column repeats it.
        assert_eq!(rows, vec![[0, 3018, 4298, 4298], [0, 0, 1280, 1280], [0, 0, 0, 0]]);
    }

    #[test]
    fn lowmem_reserve_6_10_zeroes_columns_of_empty_upper_zones() {
        let rows = lowmem_reserve(&EXAMPLE_ZONES, &DEFAULT_LOWMEM_RESERVE_RATIO, true);
        assert_eq!(rows, vec![[0, 3018, 4298, 0], [0, 0, 1280, 0], [0, 0, 0, 0]]);
        // A populated Movable zone keeps its cumulative column under either rule, and an
        // empty DMA32 between DMA and Normal zeroes only its own column.
        let zones = [
            (DMA, NrPages(4096)),
            (DMA32, NrPages(0)),
            (NORMAL, NrPages(25_600)),
            (MOVABLE, NrPages(2560)),
        ];
        let rows = lowmem_reserve(&zones, &DEFAULT_LOWMEM_RESERVE_RATIO, true);
        assert_eq!(rows[0], [0, 0, 100, 110]);
        assert_eq!(rows[1], [0; NR_ZONE_TYPES]); // empty zone: no protection of its own
        assert_eq!(rows[2], [0, 0, 0, 80]); // 2560 / 32
        assert_eq!(rows[3], [0; NR_ZONE_TYPES]);
        let rows = lowmem_reserve(&zones, &DEFAULT_LOWMEM_RESERVE_RATIO, false);
        assert_eq!(rows[0], [0, 0, 100, 110]);
    }

    #[test]
    fn lowmem_reserve_ratio_zero_and_missing_zones() {
        let ratios = [0, 256, 32, 0];
        let rows = lowmem_reserve(&EXAMPLE_ZONES, &ratios, false);
        assert_eq!(rows[0], [0; NR_ZONE_TYPES]);
        assert_eq!(rows[1], [0, 0, 1280, 1280]);
        // Only DMA32 and Movable given: Normal counts as empty.
        let rows = lowmem_reserve(
            &[(DMA32, NrPages(1000)), (MOVABLE, NrPages(2560))],
            &DEFAULT_LOWMEM_RESERVE_RATIO,
            false,
        );
        assert_eq!(rows, vec![[0, 0, 0, 10], [0; NR_ZONE_TYPES]]);
        assert!(lowmem_reserve(&[], &DEFAULT_LOWMEM_RESERVE_RATIO, true).is_empty());
        let big = [(DMA, NrPages(1)), (NORMAL, NrPages(u64::MAX)), (MOVABLE, NrPages(u64::MAX))];
        let rows = lowmem_reserve(&big, &[1, 1, 1, 1], false);
        assert_eq!(rows[0], [0, 0, u64::MAX, u64::MAX]);
    }

    #[test]
    fn totalreserve_is_capped_by_each_zone() {
        let marks = zone_watermarks(67_584, 10, &EXAMPLE_ZONES);
        let rows = lowmem_reserve(&EXAMPLE_ZONES, &DEFAULT_LOWMEM_RESERVE_RATIO, false);
        let zones =
            EXAMPLE_ZONES.iter().zip(&marks).zip(&rows).map(|((z, m), r)| (z.1, m.high, *r));
        // DMA: min(3976, 90 + 4298) = 3976; DMA32: 17732 + 1280; Normal: 7518 + 0.
        assert_eq!(totalreserve_pages(zones), 3976 + 19_012 + 7518);
        assert_eq!(totalreserve_pages([]), 0);
        let huge = [(NrPages(u64::MAX), u64::MAX, [u64::MAX; NR_ZONE_TYPES]); 2];
        assert_eq!(totalreserve_pages(huge), u64::MAX);
    }

    #[test]
    fn boost_is_skipped_for_zero_factor_tiny_zones_and_zero_terms() {
        assert_eq!(watermark_boost_step(0, 7518, NrPages(327_680), 0), None);
        assert_eq!(watermark_boost_step(0, 7518, NrPages(2047), 15_000), None);
        assert_eq!(watermark_boost_step(0, 7518, NrPages(2048), 15_000), Some(512));
        assert_eq!(watermark_boost_step(0, 0, NrPages(327_680), 15_000), None);
        assert_eq!(watermark_boost_step(0, 1, NrPages(327_680), 5000), None); // 5000/10000 → 0
        assert_eq!(watermark_boost_step(0, 1, NrPages(327_680), 10_000), Some(512));
        // floor 512
    }

    #[test]
    fn boost_grows_by_pageblocks_up_to_its_cap() {
        let managed = NrPages(327_680);
        let mut boost = 0;
        let mut steps = 0;
        while let Some(next) = watermark_boost_step(boost, 7518, managed, 15_000) {
            if next == boost {
                break;
            }
            boost = next;
            steps += 1;
        }
        // 7518 × 1.5 = 11277: 22 whole pageblocks (11264), then the remainder.
        assert_eq!((boost, steps), (11_277, 23));
        // A small HIGH still allows one pageblock of boost.
        assert_eq!(watermark_boost_step(0, 100, managed, 15_000), Some(512));
        assert_eq!(watermark_boost_step(512, 100, managed, 15_000), Some(512));
        // After the factor is lowered an oversized boost is pulled down to the new cap.
        assert_eq!(watermark_boost_step(11_277, 7518, managed, 10_000), Some(7518));
        assert_eq!(watermark_boost_step(u64::MAX, u64::MAX, managed, u64::MAX), Some(u64::MAX));
    }

    #[test]
    fn mobility_grouping_threshold() {
        assert!(mobility_grouping_disabled(0));
        assert!(mobility_grouping_disabled(3071));
        assert!(!mobility_grouping_disabled(3072));
    }

    #[test]
    fn batch_threshold_table() {
        let table = [
            (0, 1),
            (3976, 1), // 16 MiB DMA zone
            (8191, 1),
            (12_287, 1),
            (12_288, 3),
            (24_575, 3),
            (24_576, 7),
            (45_055, 7),
            (45_056, 15),
            (90_111, 15),
            (90_112, 31),
            (176_127, 31),
            (176_128, 63),
            (327_680, 63),
            (u64::MAX, 63),
        ];
        for (managed, batch) in table {
            assert_eq!(zone_batchsize(NrPages(managed)), batch, "managed {managed}");
        }
    }

    #[test]
    fn raw_batch_is_zero_for_tiny_zones_and_capped_before_4_19() {
        assert_eq!(zone_batchsize_raw(NrPages(3976), BATCH_CAP_PAGES), 0);
        assert_eq!(zone_batchsize_raw(NrPages(8191), BATCH_CAP_PAGES), 0);
        assert_eq!(zone_batchsize_raw(NrPages(8192), BATCH_CAP_PAGES), 1);
        assert_eq!(zone_batchsize_raw(NrPages(176_128), BATCH_CAP_PAGES), 63);
        assert_eq!(zone_batchsize_raw(NrPages(176_128), PRE_4_19_BATCH_CAP_PAGES), 31);
        assert_eq!(zone_batchsize_raw(NrPages(u64::MAX), u64::MAX), u32::MAX);
        assert_eq!(zone_batchsize_raw(NrPages(0), 0), 0);
    }

    #[test]
    fn legacy_high_is_six_batches() {
        assert_eq!(legacy_pcp_high(63), 378);
        assert_eq!(legacy_pcp_high(31), 186);
        assert_eq!(legacy_pcp_high(0), 0);
        assert_eq!(legacy_pcp_high(u32::MAX), u32::MAX);
    }

    #[test]
    fn highsize_splits_over_the_node_cpus() {
        let m = NrPages(327_680);
        assert_eq!(zone_highsize(6265, m, 63, 2, 0, 2, 0), 3132);
        // A CPU coming online is not yet in the node mask.
        assert_eq!(zone_highsize(6265, m, 63, 2, 1, 2, 0), 2088);
        // A CPU-less node splits over all online CPUs; never over zero.
        assert_eq!(zone_highsize(6265, m, 63, 0, 0, 4, 0), 1566);
        assert_eq!(zone_highsize(6265, m, 63, 0, 0, 0, 0), 6265);
        // The 4 × batch floor.
        assert_eq!(zone_highsize(100, m, 63, 2, 0, 2, 0), 252);
        assert_eq!(zone_highsize(0, NrPages(0), 1, 1, 0, 1, 0), 4);
        // Fractions divide managed pages, not LOW.
        assert_eq!(zone_highsize(6265, m, 63, 2, 0, 2, 8), 20_480);
        assert_eq!(zone_highsize(6265, m, 63, 2, 0, 2, 100), 1638);
        assert_eq!(zone_highsize(6265, m, 63, 2, 0, 2, u32::MAX), 252);
        // Saturation to the kernel's int range.
        assert_eq!(zone_highsize(u64::MAX, m, u32::MAX, 1, 0, 1, 0), i32::MAX as u32);
        assert_eq!(zone_highsize(0, m, u32::MAX, u32::MAX, u32::MAX, 0, 0), i32::MAX as u32);
    }

    #[test]
    fn pcp_sizes_reject_fractions_below_eight() {
        let m = NrPages(327_680);
        for f in 1..MIN_PERCPU_PAGELIST_HIGH_FRACTION {
            assert_eq!(
                pcp_sizes(6265, m, 2, 0, 2, f),
                Err(SizingError::HighFractionTooSmall { fraction: f })
            );
        }
        let msg = SizingError::HighFractionTooSmall { fraction: 3 }.to_string();
        assert_eq!(msg, "percpu_pagelist_high_fraction 3 is invalid: it must be 0 or at least 8");
        // A set fraction turns auto-tuning off: high_min == high_max.
        assert_eq!(
            pcp_sizes(6265, m, 2, 0, 2, 8),
            Ok(PcpSizes { batch: 63, high_min: 20_480, high_max: 20_480 })
        );
        assert_eq!(
            pcp_sizes(6265, m, 2, 0, 2, 100),
            Ok(PcpSizes { batch: 63, high_min: 1638, high_max: 1638 })
        );
    }

    #[test]
    fn pcp_sizes_keep_high_min_above_high_max() {
        // LOW 50000 > managed / 8 = 40960: high_min 25000 > high_max 20480, as the kernel has it.
        let sizes = pcp_sizes(50_000, NrPages(327_680), 2, 0, 2, 0).unwrap();
        assert_eq!(sizes, PcpSizes { batch: 63, high_min: 25_000, high_max: 20_480 });
        // Tiny zone: batch 1, both bounds at the 4 × batch floor.
        let sizes = pcp_sizes(75, NrPages(3976), 2, 0, 2, 0).unwrap();
        assert_eq!(sizes, PcpSizes { batch: 1, high_min: 37, high_max: 248 });
        let sizes = pcp_sizes(0, NrPages(0), 2, 0, 2, 0).unwrap();
        assert_eq!(sizes, PcpSizes { batch: 1, high_min: 4, high_max: 4 });
        assert_eq!(BOOT_PCP_SIZES, PcpSizes { batch: 1, high_min: 0, high_max: 0 });
    }

    #[test]
    fn pcp_clamp_matches_clamp_when_ordered_and_the_kernel_when_not() {
        for v in [0u32, 5, 10, 15, 20, 25] {
            assert_eq!(pcp_clamp(v, 10, 20), v.clamp(10, 20));
        }
        // high_min 25000 > high_max 20480: an untouched high of 0 becomes high_min, and
        // clamping that again gives high_max.
        assert_eq!(pcp_clamp(0u32, 25_000, 20_480), 25_000);
        assert_eq!(pcp_clamp(25_000u32, 25_000, 20_480), 20_480);
        assert_eq!(pcp_clamp(22_000u32, 25_000, 20_480), 20_480);
        assert_eq!(pcp_clamp(20_000u32, 25_000, 20_480), 25_000);
        assert_eq!(pcp_clamp(-3i32, 0, 10), 0);
    }

    #[test]
    fn free_high_batch_threshold() {
        assert!(!free_high_batch(0, 63));
        assert!(!free_high_batch(778_239, 63)); // 189 pages
        assert!(free_high_batch(778_240, 63)); // 190 pages = 760 KiB
        assert!(free_high_batch(4096, 0));
        assert!(free_high_batch(u64::MAX, u32::MAX));
    }

    #[test]
    fn stat_threshold_table() {
        assert_eq!(stat_threshold(NrPages(327_680), 2), 20);
        assert_eq!(stat_threshold(NrPages(0), 1), 2);
        assert_eq!(stat_threshold(NrPages(32_767), 1), 2); // below 128 MiB: fls(0) = 0
        assert_eq!(stat_threshold(NrPages(32_768), 1), 4);
        // 64 CPUs, 64 GiB: 2·7·(1 + fls(512)) = 154 → 125.
        assert_eq!(stat_threshold(NrPages(1 << 24), 64), 125);
        assert_eq!(stat_threshold(NrPages(u64::MAX), u32::MAX), 125);
        assert_eq!(stat_threshold(NrPages(1 << 20), 0), 0);
    }

    #[test]
    fn drift_mark_is_set_only_when_drift_exceeds_low_minus_min() {
        let marks = wm(1000, 1040, 1080, 1120);
        assert_eq!(percpu_drift_mark(&marks, 20, 2), None); // 40 == 40
        assert_eq!(percpu_drift_mark(&marks, 21, 2), Some(1080 + 42));
        assert_eq!(percpu_drift_mark(&marks.with_boost(100), 21, 2), Some(1180 + 42));
        assert_eq!(percpu_drift_mark(&Watermarks::default(), 1, 1), Some(1));
        assert_eq!(percpu_drift_mark(&Watermarks::default(), 0, 8), None);
        let top = wm(0, 0, u64::MAX, u64::MAX);
        assert_eq!(percpu_drift_mark(&top, u32::MAX, u32::MAX), Some(u64::MAX));
    }

    /// realdata `pcp-qa-meminfo-root-007-zoneinfo.txt` (kernel ≥ 5.14; every CPU prints
    /// `high` = high_min; 2 nodes × 4 CPUs, 8 online): per zone (managed, printed low,
    /// printed high, printed batch, printed vm stats threshold).
    #[test]
    fn realdata_pcp_qa_007_batch_high_and_threshold() {
        let zones = [
            (3840, 52, 13, 1, 8),              // Node 0 DMA
            (503_771, 6886, 1721, 63, 40),     // Node 0 DMA32
            (507_637, 7057, 1764, 63, 40),     // Node 0 Normal
            (1_020_184, 14_160, 3540, 63, 48), // Node 1 Normal
        ];
        for (managed, low, high, batch, threshold) in zones {
            let managed = NrPages(managed);
            assert_eq!(zone_batchsize(managed), batch);
            assert_eq!(zone_highsize(low, managed, batch, 4, 0, 8, 0), high);
            assert_eq!(pcp_sizes(low, managed, 4, 0, 8, 0).unwrap().high_min, high);
            assert_eq!(stat_threshold(managed, 8), threshold);
        }
    }

    /// realdata `jc-zoneinfo.txt` (a kernel before 5.14 with the 1 MiB batch cap, 2 CPUs):
    /// per zone (managed, printed pcp high, printed batch, printed vm stats threshold).
    #[test]
    fn realdata_jc_legacy_high_batch_and_threshold() {
        let zones = [
            (3976, 0, 1, 4),        // DMA: raw batch 0 ⇒ high 0, batch 1
            (758_708, 378, 63, 24), // DMA32
            (236_634, 378, 63, 16), // Normal
        ];
        for (managed, high, batch, threshold) in zones {
            let managed = NrPages(managed);
            assert_eq!(zone_batchsize(managed), batch);
            assert_eq!(legacy_pcp_high(zone_batchsize_raw(managed, BATCH_CAP_PAGES)), high);
            assert_eq!(stat_threshold(managed, 2), threshold);
        }
    }

    /// realdata `pcp-qa-meminfo-root-004-zoneinfo.txt` (a kernel before 4.19, 4 CPUs):
    /// DMA32 757 733 and Normal 243 535 managed pages print batch 31, high 186.
    #[test]
    fn realdata_pcp_qa_004_pre_4_19_batch_cap() {
        for managed in [757_733, 243_535] {
            let raw = zone_batchsize_raw(NrPages(managed), PRE_4_19_BATCH_CAP_PAGES);
            assert_eq!((raw, legacy_pcp_high(raw)), (31, 186));
        }
        assert_eq!(stat_threshold(NrPages(757_733), 4), 36);
        assert_eq!(stat_threshold(NrPages(243_535), 4), 24);
        assert_eq!(stat_threshold(NrPages(3977), 4), 6);
    }

    /// realdata `pcp-qa-meminfo-root-002-zoneinfo.txt` (32 CPUs): vm stats thresholds.
    #[test]
    fn realdata_pcp_qa_002_thresholds() {
        assert_eq!(stat_threshold(NrPages(3974), 32), 12);
        assert_eq!(stat_threshold(NrPages(449_237), 32), 60);
        assert_eq!(stat_threshold(NrPages(15_990_165), 32), 120);
        assert_eq!(stat_threshold(NrPages(16_514_387), 32), 120);
    }
}

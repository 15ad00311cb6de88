//! The named presets: the kernel (or patch set) that each column of a seed table ran, and the
//! forms merged or posted after the seeds.
//!
//! Section numbers (§) in this file are those of `docs/preset-history.md`.

#[allow(clippy::wildcard_imports)]
use super::*;

/// One column of a seed table, as printed there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedRow {
    /// The seed file's number (`"000"` … `"004"`).
    pub seed: &'static str,
    /// The column or list label exactly as the seed prints it.
    pub label: &'static str,
}

/// A named policy: what one kernel or patch set ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    /// The name used on the command line and in result rows.
    pub name: &'static str,
    /// Which kernel and patches, in one line.
    pub summary: &'static str,
    /// The seed columns this preset stands for (empty: no seed measured it).
    pub rows: &'static [SeedRow],
    /// True if some switch has a posted-but-never-merged form (the seed measured a version
    /// that differs from what reached mainline).
    pub unmerged: bool,
    /// Where this policy stands in mainline's history.
    pub mainline: Mainline,
    /// The switches.
    pub policy: Policy,
}

/// Where a preset's policy stands in mainline's history (`pagealloc presets` prints it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mainline {
    /// The releases (or release candidate) that ran this policy as it is, for every
    /// modelled switch.
    Ran(&'static str),
    /// A base plus patches that mainline merged in this release: the patched base itself was
    /// no release (e.g. 5.17-rc3 with what became 5.18's bulk-free change).
    MergedIn(&'static str),
    /// A posted form (or a revert for measurement) that mainline never took.
    Never,
}

impl fmt::Display for Mainline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mainline::Ran(r) => write!(f, "ran in {r}"),
            Mainline::MergedIn(r) => write!(f, "merged in {r}"),
            Mainline::Never => f.write_str("never merged"),
        }
    }
}

impl Preset {
    /// The preset with this name.
    pub fn get(name: &str) -> Option<&'static Preset> {
        PRESETS.iter().find(|p| p.name == name)
    }
}

/// 6.10+ mainline as described by docs/kernel-reference.md, with the lowmem_reserve rule that
/// mainline went back to in 6.14 (and stable trees carry).
pub(super) const MODERN: Policy = Policy {
    pcp_lists: PcpLists::ThpMovableSplit,
    batch_cap: BatchCap::OneMib,
    pcp_locking: PcpLocking::SpinlockTrylock,
    pcp_high: PcpHigh::AutoTune,
    reclaim_active_limit: ReclaimActiveLimit::CapAndShrink,
    zone_below_high: true,
    high_decay: HighDecay::SevenEighths,
    free_batch_sizing: FreeBatchSizing::FreeCount,
    free_high: FreeHigh::Consecutive,
    free_high_threshold: FreeHighThreshold::Batch,
    free_high_batch: FreeHighBatch::LlcSliceOver3Batch,
    free_high_drain: FreeHighDrain::CappedShrinkHigh,
    refill_sizing: RefillSizing::AllocFactor,
    bulk_free: BulkFree::SinglePassAtStart,
    bulk_free_callers: BulkFreeCallers::Whole,
    bulk_free_prefetch: BuddyPrefetch::Off,
    drain_pages_chunked: true,
    pgfree_unit: PgfreeUnit::Pages,
    page_frag_free: PageFragFree::Pcp,
    alloc_nofragment: NoFragment::BelowPageblock,
    watermark_boost: true,
    migratetype_hygiene: true,
    lowmem_reserve_empty_zone_zero: false,
    remote_free: false,
};

/// 5.17-rc3 (docs/preset-history.md §1.2): the 5.14 PCP work, no free_high.
pub(super) const HPC_VANILLA: Policy = Policy {
    pcp_lists: PcpLists::ThpPerMigratetype,
    batch_cap: BatchCap::OneMib,
    pcp_locking: PcpLocking::LocalIrqOff,
    pcp_high: PcpHigh::StaticLowWmark,
    reclaim_active_limit: ReclaimActiveLimit::Cap,
    zone_below_high: false,
    high_decay: HighDecay::Off,
    free_batch_sizing: FreeBatchSizing::FreeFactor,
    free_high: FreeHigh::Off,
    free_high_threshold: FreeHighThreshold::Batch,
    free_high_batch: FreeHighBatch::Off,
    free_high_drain: FreeHighDrain::All,
    refill_sizing: RefillSizing::Batch,
    bulk_free: BulkFree::TwoPassRoundRobin,
    bulk_free_callers: BulkFreeCallers::Whole,
    bulk_free_prefetch: BuddyPrefetch::Order0Buddy,
    drain_pages_chunked: false,
    pgfree_unit: PgfreeUnit::Blocks,
    page_frag_free: PageFragFree::Pcp,
    alloc_nofragment: NoFragment::AllOrders,
    watermark_boost: true,
    migratetype_hygiene: false,
    lowmem_reserve_empty_zone_zero: false,
    remote_free: false,
};

/// 5.17-rc3 with 44042b449872 reverted (§1.3): only the layout goes back.
pub(super) const HPC_REVERT: Policy = Policy { pcp_lists: PcpLists::Order0Only, ..HPC_VANILLA };

/// Series B v1 patches 1–4 (§2.1–2.3, §2.5): the seed-000 `mm-highpcpopt-v1` column.
pub(super) const HPC_OPT_V1: Policy = Policy {
    bulk_free: BulkFree::SinglePassAfterStart,
    bulk_free_callers: BulkFreeCallers::Whole,
    bulk_free_prefetch: BuddyPrefetch::OrderBuddy,
    ..HPC_VANILLA
};

/// v2 patches 1–5, adding "drain the requested list first" (§2.4): seed 004's column.
pub(super) const HPC_OPT: Policy = Policy { bulk_free: BulkFree::SinglePassAtStart, ..HPC_OPT_V1 };

/// v1 patches 1–5 (§2.6): seed 000's netperf columns.
pub(super) const HPC_LIMIT_V1: Policy = Policy { free_high: FreeHigh::AnyHighOrder, ..HPC_OPT_V1 };

/// v2 patches 1–6, as merged for 5.18 (without the separate no-prefetch patch).
pub(super) const HPC_LIMIT: Policy = Policy { free_high: FreeHigh::AnyHighOrder, ..HPC_OPT };

/// 6.6 (§1.4), the base of Huang Ying's series.
pub(super) const TUNE_BASE: Policy = Policy {
    pcp_lists: PcpLists::ThpShared,
    batch_cap: BatchCap::OneMib,
    pcp_locking: PcpLocking::SpinlockTrylock,
    pcp_high: PcpHigh::StaticLowWmark,
    reclaim_active_limit: ReclaimActiveLimit::Cap,
    zone_below_high: false,
    high_decay: HighDecay::Off,
    free_batch_sizing: FreeBatchSizing::FreeFactor,
    free_high: FreeHigh::AnyHighOrder,
    free_high_threshold: FreeHighThreshold::Batch,
    free_high_batch: FreeHighBatch::Off,
    free_high_drain: FreeHighDrain::All,
    refill_sizing: RefillSizing::Batch,
    bulk_free: BulkFree::SinglePassAtStart,
    bulk_free_callers: BulkFreeCallers::Whole,
    bulk_free_prefetch: BuddyPrefetch::Off,
    drain_pages_chunked: false,
    pgfree_unit: PgfreeUnit::Pages,
    page_frag_free: PageFragFree::Pcp,
    alloc_nofragment: NoFragment::BelowPageblock,
    watermark_boost: true,
    migratetype_hygiene: false,
    lowmem_reserve_empty_zone_zero: false,
    remote_free: false,
};

/// + v1 patch 1 (§3.1).
pub(super) const TUNE_P1: Policy = Policy { free_high: FreeHigh::Consecutive, ..TUNE_BASE };
/// + v1 patches 2–3 (§3.2–3.3).
pub(super) const TUNE_P3: Policy =
    Policy { free_high_batch: FreeHighBatch::DataSlicesOver4Batch, ..TUNE_P1 };
/// + v1 patches 4–5 (§3.4–3.5).
pub(super) const TUNE_P5: Policy = Policy {
    free_batch_sizing: FreeBatchSizing::FreeFactorCapped,
    refill_sizing: RefillSizing::AllocFactor,
    ..TUNE_P3
};
/// + v1 patches 6–7 (§3.6–3.7; patch 6 alone changes nothing).
pub(super) const TUNE_P7: Policy = Policy {
    pcp_high: PcpHigh::AutoTune,
    reclaim_active_limit: ReclaimActiveLimit::CapAndShrink,
    high_decay: HighDecay::FourFifths,
    free_batch_sizing: FreeBatchSizing::FreeFactorCappedInclusive,
    free_high_drain: FreeHighDrain::CappedShrinkHigh,
    ..TUNE_P5
};
/// + v1 patches 8–9 (§3.8–3.9).
pub(super) const TUNE_P9: Policy =
    Policy { zone_below_high: true, high_decay: HighDecay::CountMinLimited, ..TUNE_P7 };
/// + v1 patch 10 (§3.10).
pub(super) const TUNE_P10: Policy =
    Policy { free_batch_sizing: FreeBatchSizing::FreeCountV1, ..TUNE_P9 };

/// 4.20-rc3 (§1.1, §4.6), which is also the 4.19 of seed 003 for every switch here.
pub(super) const FRAG_VANILLA: Policy = Policy {
    pcp_lists: PcpLists::Order0Only,
    batch_cap: BatchCap::OneMib,
    pcp_locking: PcpLocking::LocalIrqOff,
    pcp_high: PcpHigh::SixTimesBatch,
    reclaim_active_limit: ReclaimActiveLimit::Off,
    zone_below_high: false,
    high_decay: HighDecay::Off,
    free_batch_sizing: FreeBatchSizing::Batch,
    free_high: FreeHigh::Off,
    free_high_threshold: FreeHighThreshold::Batch,
    free_high_batch: FreeHighBatch::Off,
    free_high_drain: FreeHighDrain::All,
    refill_sizing: RefillSizing::Batch,
    bulk_free: BulkFree::TwoPassRoundRobin,
    bulk_free_callers: BulkFreeCallers::Whole,
    bulk_free_prefetch: BuddyPrefetch::Order0Buddy,
    drain_pages_chunked: false,
    pgfree_unit: PgfreeUnit::Blocks,
    page_frag_free: PageFragFree::Buddy,
    alloc_nofragment: NoFragment::Off,
    watermark_boost: false,
    migratetype_hygiene: false,
    lowmem_reserve_empty_zone_zero: false,
    remote_free: false,
};

/// + v5 patch 1 only (§4.1).
pub(super) const FRAG_LOWZONE: Policy =
    Policy { alloc_nofragment: NoFragment::AllOrders, ..FRAG_VANILLA };
/// 4.19 before the page_frag backport (§5).
pub(super) const PFRAG_BUDDY: Policy = FRAG_VANILLA;
/// 4.19 with 65895b67ad27 backported (§5).
pub(super) const PFRAG_PCP: Policy =
    Policy { page_frag_free: PageFragFree::PcpOrder0, ..PFRAG_BUDDY };

/// 4.18: the 4.19/4.20-rc3 switches with the batch still capped below 32 (before
/// d8a759b57035).
pub(super) const LEGACY_4_18: Policy = Policy { batch_cap: BatchCap::HalfMib, ..FRAG_VANILLA };

/// 6.16: `modern` with c544a952ba61 (free_high waits for `batch + high_min / 2` freed pages).
pub(super) const FHIGH: Policy =
    Policy { free_high_threshold: FreeHighThreshold::BatchPlusHalfHighMin, ..MODERN };
/// `modern` with the posted -V2 of the same series (five batches).
pub(super) const FHIGH_V2: Policy =
    Policy { free_high_threshold: FreeHighThreshold::FiveBatches, ..MODERN };

/// `modern` with Joshua Hahn's batched callers of free_pcppages_bulk as merged for 6.19 (v5).
pub(super) const BBATCH: Policy = Policy { bulk_free_callers: BulkFreeCallers::Batched, ..MODERN };
/// `modern` with the posted v4 of that series (the flush stops below `high`).
pub(super) const BBATCH_V4: Policy =
    Policy { bulk_free_callers: BulkFreeCallers::BatchedStopBelowHigh, ..MODERN };
/// `modern` with the posted v3 (the threshold recomputed after every chunk).
pub(super) const BBATCH_V3: Policy =
    Policy { bulk_free_callers: BulkFreeCallers::BatchedRecheckHigh, ..MODERN };
/// `modern` with the posted v1 and v2 (as v3, and explicit drains in chunks of `batch`).
pub(super) const BBATCH_V1: Policy =
    Policy { bulk_free_callers: BulkFreeCallers::BatchedRecheckHighBatchDrains, ..MODERN };

/// The most pages a pageset's remote-free list holds ([`Policy::remote_free`]): 2 MiB, one
/// THP or eight batches of a typical pageset. A free that would take the owner's list past it
/// frees to its own pageset, as without the switch, so an owner that stops allocating keeps
/// at most this much waiting until its next tick. A choice of this project, not a kernel
/// value (the kernel has no remote-free lists).
pub const REMOTE_FREE_MAX: u32 = 512;

/// The most pages a freeing CPU's pending chain collects before it sends them to their
/// owner's remote-free list ([`Policy::remote_free`]); below it the bound is the pageset's
/// `batch`. An eighth of [`REMOTE_FREE_MAX`], so that eight freeing CPUs' chains fit on one
/// owner's list. A choice of this project.
pub const REMOTE_FREE_BATCH_MAX: u32 = REMOTE_FREE_MAX / 8;

/// Every preset name, in [`PRESETS`] order: `modern`, then the seed rows series by series
/// (bulk free, auto-tuning, fragmentation avoidance, page_frag), each `-v1` variant after the
/// merged form it differs from; then kernel changes no seed measured (the 6.16 free_high
/// threshold and its posted -V2, the pre-4.19 batch cap, the 6.19 batched callers of bulk free
/// and their posted forms).
pub const PRESET_NAMES: &[&str] = &[
    "modern",
    "hpc-vanilla",
    "hpc-revert",
    "hpc-opt",
    "hpc-opt-v1",
    "hpc-limit",
    "hpc-limit-v1",
    "tune-base",
    "tune-p1",
    "tune-p3",
    "tune-p5",
    "tune-p7",
    "tune-p9",
    "tune-p10",
    "frag-vanilla",
    "frag-lowzone",
    "pfrag-buddy",
    "pfrag-pcp",
    "fhigh",
    "fhigh-v2",
    "legacy-4.18",
    "bbatch",
    "bbatch-v4",
    "bbatch-v3",
    "bbatch-v1",
];

/// Shorthand for the row tables below.
pub(super) const fn row(seed: &'static str, label: &'static str) -> SeedRow {
    SeedRow { seed, label }
}

/// The named presets (see `docs/presets.md`).
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "modern",
        summary: "mainline 6.10+ (docs/kernel-reference.md): Huang v3 auto-tuning, migratetype \
                  hygiene, two THP lists, chunked drains; lowmem_reserve as 6.14+",
        rows: &[],
        unmerged: false,
        mainline: Mainline::Ran("6.14 and 6.15"),
        policy: MODERN,
    },
    Preset {
        name: "hpc-vanilla",
        summary: "5.17-rc3: high-order PCP (5.14), free_factor, two-pass round-robin bulk free",
        rows: &[row("000", "vanilla"), row("000", "5.17-rc3"), row("004", "vanilla")],
        unmerged: false,
        mainline: Mainline::Ran("5.17-rc3"),
        policy: HPC_VANILLA,
    },
    Preset {
        name: "hpc-revert",
        summary: "5.17-rc3 with 44042b449872 (high-order pages on the PCP) reverted",
        rows: &[
            row("000", "mm-reverthighpcp-v1r1"),
            row("000", "mm-reverthighpcp-v1"),
            row("000", "5.17-revert-highpcp"),
            row("004", "mm-reverthighpcp-v1"),
        ],
        unmerged: false,
        mainline: Mainline::Never,
        policy: HPC_REVERT,
    },
    Preset {
        name: "hpc-opt",
        summary: "5.17-rc3 + \"Follow-up on high-order PCP caching\" v2 patches 1-5 (as merged \
                  for 5.18)",
        rows: &[row("004", "mm-highpcpopt-v2")],
        unmerged: false,
        mainline: Mainline::MergedIn("5.18"),
        policy: HPC_OPT,
    },
    Preset {
        name: "hpc-opt-v1",
        summary: "5.17-rc3 + \"Follow-up on high-order PCP caching\" v1 patches 1-4 (bulk free \
                  starts at the list after the overflowing one)",
        rows: &[row("000", "mm-highpcpopt-v1"), row("000", "mm-highpcpopt-v1r4")],
        unmerged: true,
        mainline: Mainline::Never,
        policy: HPC_OPT_V1,
    },
    Preset {
        name: "hpc-limit",
        summary: "5.17-rc3 + \"Follow-up on high-order PCP caching\" v2 patches 1-6 (as merged \
                  for 5.18, prefetch kept)",
        rows: &[],
        unmerged: false,
        mainline: Mainline::MergedIn("5.18"),
        policy: HPC_LIMIT,
    },
    Preset {
        name: "hpc-limit-v1",
        summary: "5.17-rc3 + \"Follow-up on high-order PCP caching\" v1 patches 1-5",
        rows: &[
            row("000", "mm-highpcplimit-v1r12"),
            row("000", "mm-highpcplimit-v1"),
            row("000", "5.17-full-series"),
        ],
        unmerged: true,
        mainline: Mainline::Never,
        policy: HPC_LIMIT_V1,
    },
    Preset {
        name: "tune-base",
        summary: "6.6, the base of \"mm: PCP high auto-tuning\"",
        rows: &[row("001", "base")],
        unmerged: false,
        mainline: Mainline::Ran("6.6"),
        policy: TUNE_BASE,
    },
    Preset {
        name: "tune-p1",
        summary: "6.6 + PCP auto-tuning v1 patch 1 (no full drain at process exit)",
        rows: &[row("001", "patch1")],
        unmerged: false,
        mainline: Mainline::MergedIn("6.7"),
        policy: TUNE_P1,
    },
    Preset {
        name: "tune-p3",
        summary: "6.6 + PCP auto-tuning v1 patches 1-3 (FREE_HIGH_BATCH, data-slice rule)",
        rows: &[row("001", "patch3")],
        unmerged: true,
        mainline: Mainline::Never,
        policy: TUNE_P3,
    },
    Preset {
        name: "tune-p5",
        summary: "6.6 + PCP auto-tuning v1 patches 1-5 (scale cap, alloc_factor)",
        rows: &[row("001", "patch5")],
        unmerged: true,
        mainline: Mainline::Never,
        policy: TUNE_P5,
    },
    Preset {
        name: "tune-p7",
        summary: "6.6 + PCP auto-tuning v1 patches 1-7 (auto-tuned high, decay to 4/5)",
        rows: &[row("001", "patch7")],
        unmerged: true,
        mainline: Mainline::Never,
        policy: TUNE_P7,
    },
    Preset {
        name: "tune-p9",
        summary: "6.6 + PCP auto-tuning v1 patches 1-9 (ZONE_BELOW_HIGH, count_min decay)",
        rows: &[row("001", "patch9")],
        unmerged: true,
        mainline: Mainline::Never,
        policy: TUNE_P9,
    },
    Preset {
        name: "tune-p10",
        summary: "6.6 + PCP auto-tuning v1 patches 1-10 (free_count)",
        rows: &[row("001", "patch10")],
        unmerged: true,
        mainline: Mainline::Never,
        policy: TUNE_P10,
    },
    Preset {
        name: "frag-vanilla",
        summary: "4.20-rc3: order-0 PCP, high 6*batch, no ALLOC_NOFRAGMENT, no boosting",
        rows: &[row("002", "vanilla"), row("002", "4.20-rc3")],
        unmerged: false,
        mainline: Mainline::Ran("4.20-rc3"),
        policy: FRAG_VANILLA,
    },
    Preset {
        name: "frag-lowzone",
        summary: "4.20-rc3 + \"Fragmentation avoidance improvements\" v5 patch 1 \
                  (ALLOC_NOFRAGMENT)",
        rows: &[row("002", "lowzone-v5r8"), row("002", "4.20-rc3+patch"), row("002", "patch")],
        unmerged: false,
        mainline: Mainline::MergedIn("5.0"),
        policy: FRAG_LOWZONE,
    },
    Preset {
        name: "pfrag-buddy",
        summary: "4.19: page_frag_free frees every order straight to the buddy lists",
        rows: &[],
        unmerged: false,
        mainline: Mainline::Ran("4.19"),
        policy: PFRAG_BUDDY,
    },
    Preset {
        name: "pfrag-pcp",
        summary: "4.19 + 65895b67ad27 backport: order-0 page_frag pages freed through the PCP",
        rows: &[],
        unmerged: false,
        mainline: Mainline::MergedIn("4.19.y stable (mainline 65895b67ad27, believed 5.0)"),
        policy: PFRAG_PCP,
    },
    Preset {
        name: "fhigh",
        summary: "6.16 (merged c544a952ba61): modern with free_high waiting for batch + \
                  high_min/2 freed pages",
        rows: &[],
        unmerged: false,
        mainline: Mainline::Ran("6.16"),
        policy: FHIGH,
    },
    Preset {
        name: "fhigh-v2",
        summary: "modern + \"mm: pcp: scale batch ...\" -V2 (posted March 2025, not merged): \
                  free_high waits for 5*batch freed pages",
        rows: &[],
        unmerged: true,
        mainline: Mainline::Never,
        policy: FHIGH_V2,
    },
    Preset {
        name: "legacy-4.18",
        summary: "4.18: as frag-vanilla but the PCP batch capped below 32 (the cap doubled in \
                  4.19, d8a759b57035)",
        rows: &[],
        unmerged: false,
        mainline: Mainline::Ran("4.18"),
        policy: LEGACY_4_18,
    },
    Preset {
        name: "bbatch",
        summary: "modern + \"mm/page_alloc: Batch callers of free_pcppages_bulk\" v5 (merged \
                  for 6.19): flush and decay free in chunks of batch, zone lock released between",
        rows: &[],
        unmerged: false,
        mainline: Mainline::MergedIn("6.19"),
        policy: BBATCH,
    },
    Preset {
        name: "bbatch-v4",
        summary: "modern + the same series v4 (13 Oct 2025, not merged): the chunked flush \
                  stops once count < high",
        rows: &[],
        unmerged: true,
        mainline: Mainline::Never,
        policy: BBATCH_V4,
    },
    Preset {
        name: "bbatch-v3",
        summary: "modern + the same series v3 (2 Oct 2025, not merged): high recomputed after \
                  every chunk of the flush",
        rows: &[],
        unmerged: true,
        mainline: Mainline::Never,
        policy: BBATCH_V3,
    },
    Preset {
        name: "bbatch-v1",
        summary: "modern + the same series v1/v2 (Sep 2025, not merged): as v3, and explicit \
                  drains in chunks of batch",
        rows: &[],
        unmerged: true,
        mainline: Mainline::Never,
        policy: BBATCH_V1,
    },
];

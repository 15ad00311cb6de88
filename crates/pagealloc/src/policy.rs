//! Policy: which form of each page-allocator mechanism runs, the named presets that stand for
//! the seeds' table rows, and the tunables a user sets.
//!
//! A [`Policy`] has one field ("switch") per mechanism that differs between any two seed rows,
//! or between one of them and a later or earlier kernel change modelled on its own.
//! Each switch is a small `Copy` enum or a bool, so the PCP and zone code branch on it with one
//! compare. An old behaviour is an alternative value of the same switch, never a separate
//! code path with its own name: e.g. [`FreeBatchSizing::FreeFactor`] (5.14) and
//! [`FreeBatchSizing::FreeCount`] (6.7) are two ways of sizing the same overflow drain.
//! Every variant's doc gives the behaviour it selects, the patch (title, Message-ID or commit)
//! and the first release; `docs/presets.md` has the preset × switch matrices.
//!
//! A preset ([`Preset`], [`PRESETS`]) is a named `Policy`: the kernel (or patch set) that one
//! column of a seed table ran. Where a seed measured a posted version that differs from what
//! was merged, the merged form has the plain name and the posted one a `-v1` suffix
//! (`hpc-opt` vs `hpc-opt-v1`). Seed 001's rows are all the posted v1 of Huang Ying's series
//! (its patch 9 was never merged), so `tune-p*` are v1 forms; `modern` is the merged result.
//!
//! [`Tunables`] are the kernel's sysctls and its one Kconfig value (`pcp_batch_scale_max`).
//! They are a separate struct because they describe how a machine is configured, not which
//! kernel runs: any preset can be combined with any tunables, the lab sweeps one while fixing
//! the other, and `PageAllocator::new` takes both.
//!
//! Both structs can be read and written by string key ([`Policy::set`], [`Policy::switches`],
//! [`Tunables::set`], [`set_key`]) for user preset files and `pagealloc presets --json`. Keys
//! are the field names (snake_case, stable); enum values are kebab-case names.
//!
//! Sources: `docs/preset-history.md` (behaviour of every seed row, read from the patch mails)
//! and `docs/kernel-reference.md` (the 6.7+ baseline). No kernel code or comment is reproduced.
//! Section numbers (§) in this file are those of `docs/preset-history.md`.

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use crate::types::{Order, NR_ZONE_TYPES, PAGEBLOCK_ORDER, PAGE_ALLOC_COSTLY_ORDER, PAGE_SHIFT};

/// Migratetypes that have their own per-CPU lists (MIGRATE_PCPTYPES): UNMOVABLE 0, MOVABLE 1,
/// RECLAIMABLE 2. HIGHATOMIC and CMA frees use the MOVABLE list; ISOLATE bypasses the PCP.
const PCP_TYPES: u8 = 3;
/// The MOVABLE migratetype's number, which picks the second THP list of the 6.10 layout.
const MT_MOVABLE: u8 = 1;
/// Lists of orders 0..=3 (NR_LOWORDER_PCP_LISTS = 3 × 4); THP lists come after them.
const NR_LOWORDER_PCP_LISTS: usize = PCP_TYPES as usize * (PAGE_ALLOC_COSTLY_ORDER as usize + 1);

/// The most per-CPU lists any layout has (5.14–5.19: 12 + 3 THP lists). Size fixed arrays
/// with this and index them below [`PcpLists::nr_lists`].
pub const MAX_NR_PCP_LISTS: usize = NR_LOWORDER_PCP_LISTS + PCP_TYPES as usize;

// ---------------------------------------------------------------------------------------------
// Switch enums

/// What every switch type can do for the key/value interface.
trait SwitchType: Copy {
    /// What [`Policy::set`] accepts for a switch of this type.
    const ACCEPTED: Accepted;
    /// The value as [`Policy::switches`] reports it.
    fn to_value(self) -> SwitchValue;
    /// Parse a value given for switch `key`.
    fn from_value(key: &'static str, value: &SwitchValue) -> Result<Self, PolicyError>;
}

impl SwitchType for bool {
    const ACCEPTED: Accepted = Accepted::Bool;

    fn to_value(self) -> SwitchValue {
        SwitchValue::Bool(self)
    }

    fn from_value(key: &'static str, value: &SwitchValue) -> Result<Self, PolicyError> {
        match value {
            SwitchValue::Bool(b) => Ok(*b),
            other => {
                Err(PolicyError::WrongKind { key, got: other.kind(), accepted: Self::ACCEPTED })
            }
        }
    }
}

/// Declares a switch enum with its kebab-case names (`Variant => "name"`), `NAMES`, `ALL`,
/// `name()`, `from_name()`, `Display` and the key/value plumbing.
macro_rules! switch_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident => $s:literal
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        pub enum $name {
            $(
                $(#[$vmeta])*
                #[cfg_attr(feature = "serde", serde(rename = $s))]
                $variant,
            )+
        }

        impl $name {
            /// Every value's name as preset files and JSON spell it, oldest form first.
            pub const NAMES: &'static [&'static str] = &[$($s),+];
            /// Every value, in the order of `NAMES`.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The value's kebab-case name.
            pub const fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $s,)+
                }
            }

            /// The value with this kebab-case name (exact, case-sensitive).
            pub fn from_name(s: &str) -> Option<$name> {
                match s {
                    $($s => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl SwitchType for $name {
            const ACCEPTED: Accepted = Accepted::Names($name::NAMES);

            fn to_value(self) -> SwitchValue {
                SwitchValue::Str(self.name().to_owned())
            }

            fn from_value(key: &'static str, value: &SwitchValue) -> Result<Self, PolicyError> {
                match value {
                    SwitchValue::Str(s) => {
                        let out_of_range = || PolicyError::OutOfRange {
                            key,
                            got: value.clone(),
                            accepted: Self::ACCEPTED,
                        };
                        $name::from_name(s).ok_or_else(out_of_range)
                    }
                    other => Err(PolicyError::WrongKind {
                        key,
                        got: other.kind(),
                        accepted: Self::ACCEPTED,
                    }),
                }
            }
        }
    };
}

switch_enum! {
    /// Which orders the per-CPU lists cache, and their layout (NR_PCP_LISTS, pindex).
    ///
    /// One switch rather than "orders" plus "THP layout" because a THP layout only exists when
    /// high orders are cached: every value is a layout some kernel shipped. Orders that are
    /// not cached are allocated and freed under the zone lock, one acquisition per operation
    /// (compound pages included).
    pub enum PcpLists {
        /// Order 0 only, one list per PCP migratetype: 3 lists, pindex = migratetype. Kernels
        /// before 5.14, and 5.17-rc3 with 44042b449872 reverted (`hpc-revert`).
        Order0Only => "order0",
        /// Orders 0–3 and the THP order 9, one THP list per migratetype: 15 lists, pindex
        /// `3·order + mt`, THP `12 + mt`. A pageset's count is in pages (an order-k block
        /// counts 2^k); a refill of order k > 0 takes `max(batch >> k, 2)` blocks (batch if
        /// batch is 1). "mm/page_alloc: Allow high-order pages to be stored on the per-cpu
        /// lists", `<20210603084621.24109-3-mgorman@techsingularity.net>`, commit 44042b449872;
        /// first release 5.14.
        ThpPerMigratetype => "thp-per-migratetype",
        /// As above with one THP list for every migratetype (13 lists, THP on pindex 12).
        /// "mm/page_alloc: Use only one PCP list for THP-sized allocations",
        /// `<20220624125423.6126-3-mgorman@techsingularity.net>`; first release 6.0.
        ThpShared => "thp-shared",
        /// As above with THP split into unmovable+reclaimable (pindex 12) and movable (13):
        /// 14 lists. "mm/page_alloc: Separate THP PCP into movable and non-movable
        /// categories", commit bf14ed81f571; first release 6.10 (also sent to stable).
        ThpMovableSplit => "thp-movable-split",
    }
}

impl PcpLists {
    /// Number of per-CPU lists of one pageset (NR_PCP_LISTS): 3, 15, 13 or 14.
    pub const fn nr_lists(self) -> usize {
        match self {
            PcpLists::Order0Only => PCP_TYPES as usize,
            PcpLists::ThpPerMigratetype => NR_LOWORDER_PCP_LISTS + PCP_TYPES as usize,
            PcpLists::ThpShared => NR_LOWORDER_PCP_LISTS + 1,
            PcpLists::ThpMovableSplit => NR_LOWORDER_PCP_LISTS + 2,
        }
    }

    /// Do the per-CPU lists cache blocks of `order` (kernel `pcp_allowed_order`)?
    pub const fn caches_order(self, order: Order) -> bool {
        match self {
            PcpLists::Order0Only => order.0 == 0,
            _ => order.0 <= PAGE_ALLOC_COSTLY_ORDER || order.0 == PAGEBLOCK_ORDER,
        }
    }

    /// The list a block of `order` and PCP migratetype `mt` (0..3) goes on (kernel
    /// `order_to_pindex`), or `None` if this layout does not cache it. The caller maps
    /// HIGHATOMIC and CMA to MOVABLE first, as the kernel's free path does.
    pub const fn pindex(self, order: Order, mt: u8) -> Option<usize> {
        if mt >= PCP_TYPES || !self.caches_order(order) {
            return None;
        }
        let mt = mt as usize;
        if order.0 <= PAGE_ALLOC_COSTLY_ORDER {
            return Some(PCP_TYPES as usize * order.0 as usize + mt);
        }
        Some(match self {
            PcpLists::ThpPerMigratetype => NR_LOWORDER_PCP_LISTS + mt,
            PcpLists::ThpMovableSplit if mt == MT_MOVABLE as usize => NR_LOWORDER_PCP_LISTS + 1,
            _ => NR_LOWORDER_PCP_LISTS,
        })
    }

    /// The order of the blocks on list `pindex` (kernel `pindex_to_order`), or `None` if the
    /// layout has no such list.
    pub const fn pindex_order(self, pindex: usize) -> Option<Order> {
        if pindex >= self.nr_lists() {
            None
        } else if pindex < NR_LOWORDER_PCP_LISTS {
            Some(Order((pindex / PCP_TYPES as usize) as u8))
        } else {
            Some(Order(PAGEBLOCK_ORDER))
        }
    }
}

switch_enum! {
    /// How a pageset's locking works, and so what a busy pageset means.
    pub enum PcpLocking {
        /// The pageset belongs to its CPU alone (the kernel disables IRQs around each use):
        /// the local allocation and free paths always get it, and drain_all_pages has every
        /// CPU drain its own pagesets (queued work) while the caller waits. In real mode the
        /// library waits for the pageset lock. Kernels before 6.0.
        LocalIrqOff => "local-irq-off",
        /// A spinlock per pageset: the local allocation and free paths only try-lock it and on
        /// failure go to the zone (buddy allocation; free_one_page); drains, decay and the
        /// remote-node expiry take it unconditionally; drain_all_pages drains other CPUs'
        /// pagesets from the calling CPU. Mel Gorman's "Drain remote per-cpu directly" v5
        /// (June 2022: "mm/page_alloc: protect PCP lists with a spinlock", "… remotely drain
        /// per-cpu lists", "… replace local_lock with normal spinlock"); first release 6.0.
        SpinlockTrylock => "spinlock-trylock",
    }
}

switch_enum! {
    /// How a pageset's flush threshold `high` is sized, and whether it moves.
    pub enum PcpHigh {
        /// `high = 6 · batch`, fixed (378 for batch 63). `percpu_pagelist_high_fraction` is
        /// ignored: the 4.19 sysctl (`percpu_pagelist_fraction`, which also rewrote batch) is
        /// not modelled. Kernels before 5.14.
        SixTimesBatch => "six-times-batch",
        /// `high = max(LOW / nr_split_cpus, 4 · batch)`, or `managed / fraction` split the same
        /// way when the fraction tunable is set; recomputed only on watermark, sysctl and CPU
        /// hotplug changes (high_min = high_max in our sizing). "mm/page_alloc: Disassociate
        /// the pcp->high from pcp->batch" and companions (Mel Gorman, May 2021); first release
        /// 5.14.
        StaticLowWmark => "static-low-wmark",
        /// Auto-tuned: `high` lives in [high_min, high_max] (high_min = the static value above,
        /// high_max = `max(managed / 8 / nr_split_cpus, 4 · batch)`), is clamped into that
        /// range lazily on use, grows on every refill by the amount requested (`batch <<
        /// alloc_factor` for order 0, `batch` otherwise) and on a free that overflows (to
        /// `step + batch`, step as [`FreeBatchSizing`]), never above high_max. Refill growth is
        /// suspended while the zone is ZONE_RECLAIM_ACTIVE, or ZONE_BELOW_HIGH when
        /// `zone_below_high` is on (v1 patch 8 moved the gate). A fraction ≥ 8 sets high_min =
        /// high_max, which turns tuning off. Shrinking is done by `high_decay`,
        /// `reclaim_active_limit`, `zone_below_high` and `free_high_drain`. Huang Ying, "mm:
        /// add framework for PCP high auto-tuning" + "mm: tune PCP high automatically", v1
        /// `<20230920061856.257597-7-ying.huang@intel.com>`, `<…-8-…>`; commits 90b41691b988,
        /// 51a755c56dc0; first release 6.7.
        AutoTune => "auto-tune",
    }
}

switch_enum! {
    /// What a pageset does while kswapd is balancing its zone (ZONE_RECLAIM_ACTIVE).
    pub enum ReclaimActiveLimit {
        /// Nothing: the flag does not exist. Kernels before 5.14.
        Off => "off",
        /// The flush threshold is `min(4 · batch, high)` while the flag is set, so pages reach
        /// the buddy lists where reclaim can see them. "mm/page_alloc: Limit the number of
        /// pages on PCP lists when reclaim is active" (Mel Gorman, 2021); first release 5.14.
        Cap => "cap",
        /// As `cap`, and every free also lowers pcp.high by the pressure step of
        /// [`FreeBatchSizing`] (never below high_min); applies even when tuning is off. Huang v1
        /// patch 7 `<20230920061856.257597-8-ying.huang@intel.com>`; 51a755c56dc0; 6.7.
        CapAndShrink => "cap-and-shrink",
    }
}

switch_enum! {
    /// Periodic decay of pcp.high (decay_pcp_high), run by each CPU for its own pagesets every
    /// `decay_period_ticks` ticks. A pass that lowers high then drains `count − high` pages
    /// (from pindex 0). It only lowers high above high_min, so it matters with
    /// [`PcpHigh::AutoTune`]; its drain step also removes any count left above a static high.
    pub enum HighDecay {
        /// No decay: idle pages stay until an overflow, free_high, an explicit drain, CPU
        /// hotplug or (NUMA) the remote-zone expiry. Kernels before 6.7.
        Off => "off",
        /// `high = max(count − (batch << S), high · 4 / 5, high_min)`. Huang v1 patch 7, as
        /// posted (reconstructed from the v1 patches 8–10 context: docs/presets.md §5, U1);
        /// never merged (v3 decays by 1/8).
        FourFifths => "four-fifths",
        /// `high = max(count − (batch << S), high − min(count_min, high / 5), high_min)`, where
        /// count_min is the lowest count seen after a PCP allocation since the last pass (reset
        /// to count after it): only pages that sat unused for a whole period are decayed away.
        /// "mm, pcp: avoid to reduce PCP high unnecessarily", v1 patch 9
        /// `<20230920061856.257597-10-ying.huang@intel.com>`; dropped in v3, never merged.
        CountMinLimited => "count-min-limited",
        /// `high = max(count − (batch << S), high − high / 8, high_min)`. v3 7/9
        /// `<20231016053002.756205-8-ying.huang@intel.com>`, 51a755c56dc0; first release 6.7.
        SevenEighths => "seven-eighths",
    }
}

switch_enum! {
    /// How many pages an overflowing free drains, and the recent-free counter behind it.
    ///
    /// The same counter gives the free_high signal (see [`FreeHigh`]), the auto-tuner's
    /// grow-on-overflow target (`step + batch`) and the "pressure step" by which
    /// reclaim-active and below-high frees lower pcp.high. Both counters are halved by every
    /// PCP allocation (not by the bulk allocator). `high < batch` (boot pageset) drains 1 page
    /// with every counter.
    pub enum FreeBatchSizing {
        /// Exactly `batch` pages per overflow; no counter. Kernels before 5.14.
        Batch => "batch",
        /// free_factor: drain `clamp(batch << free_factor, batch, high − batch)`; then
        /// `free_factor += 1` if `(batch << free_factor) < high − batch` (no other cap). Signal:
        /// free_factor ≠ 0. Step: `batch << free_factor`. "mm/page_alloc: Scale the number of
        /// pages that are batch freed",
        /// `<20210525080119.5455-5-mgorman@techsingularity.net>`, 3b12e7e97938; first release
        /// 5.14; unchanged to 6.6.
        FreeFactor => "free-factor",
        /// As `free-factor`, the increment also needing `free_factor < S`, so one drain is at
        /// most `batch << S` (2016 for batch 63, S 5). "mm: restrict the pcp batch scale factor
        /// to avoid too long latency", v1 patch 4
        /// `<20230920061856.257597-5-ying.huang@intel.com>`; v3 52166607ecc9; first release 6.7.
        FreeFactorCapped => "free-factor-capped",
        /// As `free-factor-capped` with the increment test relaxed to `(batch << free_factor)
        /// ≤ high − batch`. Huang v1 patch 7 as posted (docs/presets.md §5, U1); never merged
        /// (only v1 patches 7–9 have it; the merged series moved to free_count).
        FreeFactorCappedInclusive => "free-factor-capped-inclusive",
        /// free_count: pages freed recently, `+= 2^order` per free while below `batch << S`.
        /// Drain `clamp(free_count, batch, high − batch)`. Signal: free_count ≥ batch, read
        /// before this free is added. Step: free_count (0 ⇒ no decrease). "mm, pcp: reduce
        /// detecting time of consecutive high order page freeing", v1 patch 10
        /// `<20230920061856.257597-11-ying.huang@intel.com>`, as posted; never merged in this
        /// form.
        FreeCountV1 => "free-count-v1",
        /// As `free-count-v1` with step `max(free_count, batch)`. v3 9/9
        /// `<20231016053002.756205-10-ying.huang@intel.com>`, 6ccdcb6d3a74; first release 6.7.
        FreeCount => "free-count",
    }
}

switch_enum! {
    /// When a free of an order 1..=3 block drains the pageset regardless of its count
    /// ("free_high"), so a CPU that only frees (a netperf receiver) does not sit on cold
    /// high-order pages. Orders 0 and 9 never trigger it.
    pub enum FreeHigh {
        /// Never. Kernels before 5.18.
        Off => "off",
        /// Whenever the recent-free signal of [`FreeBatchSizing`] is set. "mm/page_alloc: Limit
        /// number of high-order pages on PCP during bulk free",
        /// `<20220215145111.27082-6-mgorman@techsingularity.net>`, f26b3fa04611; first release
        /// 5.18.
        AnyHighOrder => "any-high-order",
        /// Also needs the previous free on this pageset to have been order 1..=3
        /// (PREV_FREE_HIGH_ORDER, cleared by order-0 and THP frees), so the order-1 PGD free
        /// that follows thousands of order-0 frees at process exit no longer flushes the
        /// pageset. "mm, pcp: avoid to drain PCP when process exit", v1
        /// `<20230920061856.257597-2-ying.huang@intel.com>`; v3 ca71fe1ad922; first release 6.7.
        Consecutive => "consecutive",
    }
}

switch_enum! {
    /// The cap on a zone's PCP `batch` (kernel `zone_batchsize`: a quarter of
    /// `min(managed / 1024, cap)` pages, times 1.5, rounded down to a power of two, minus one).
    /// Fixed when the pagesets are sized; every later size (high, refill, drains) follows it.
    pub enum BatchCap {
        /// `managed / 1024` capped at 512 KiB (128 pages), so the batch stays below 32: at most
        /// 31 (zones of ≥ 90 112 managed pages). Kernels before 4.19.
        HalfMib => "half-mib",
        /// Capped at 1 MiB (256 pages): at most 63 (zones of ≥ 176 128 managed pages). "mm,
        /// page_alloc: double zone's batchsize", Aaron Lu, RFC
        /// `<20180711055855.29072-1-aaron.lu@intel.com>` (11 Jul 2018); d8a759b57035; first
        /// release 4.19.
        OneMib => "one-mib",
    }
}

impl BatchCap {
    /// The cap on `managed / 1024`, in pages.
    pub const fn cap_pages(self) -> u64 {
        match self {
            BatchCap::HalfMib => crate::sizing::PRE_4_19_BATCH_CAP_PAGES,
            BatchCap::OneMib => crate::sizing::BATCH_CAP_PAGES,
        }
    }
}

switch_enum! {
    /// How large the free_count signal must be before a high-order free may trigger free_high
    /// (free_count ≥ threshold, read before this free is added). Consulted only with the
    /// free_count forms of [`FreeBatchSizing`]; the free_factor forms signal on
    /// free_factor ≠ 0 whatever this says. Nikhil Dhama's 2025 series: 6.7's threshold of one
    /// batch made free_high drain the high-order lists of a busy network receiver far more often
    /// than 6.6 did (iperf3 on a 2-node machine lost about 30 %).
    pub enum FreeHighThreshold {
        /// `batch`: the free_count form as merged in 6.7 (6ccdcb6d3a74), to 6.15.
        Batch => "batch",
        /// `5 · batch`. "[PATCH -V2] mm: pcp: scale batch to reduce number of high order pcp
        /// flushes on deallocation", Nikhil Dhama, 19 Mar 2025 (sent again 25 Mar 2025); never
        /// merged in this form.
        FiveBatches => "five-batches",
        /// `batch + high_min / 2`, the average size of the consecutive-free run at which the
        /// 5.14–6.6 free_factor fired. "[PATCH v3] mm: pcp: increase pcp->free_count threshold
        /// to trigger free_high", Nikhil Dhama, 7 Apr 2025; c544a952ba61; first release 6.16.
        BatchPlusHalfHighMin => "batch-plus-half-high-min",
    }
}

impl FreeHighThreshold {
    /// The free_count at which free_high may fire for a pageset with this `batch` and
    /// `high_min` (pages).
    #[inline]
    pub const fn pages(self, batch: i32, high_min: i32) -> i32 {
        match self {
            FreeHighThreshold::Batch => batch,
            FreeHighThreshold::FiveBatches => batch.saturating_mul(5),
            FreeHighThreshold::BatchPlusHalfHighMin => batch.saturating_add(high_min / 2),
        }
    }
}

switch_enum! {
    /// PCPF_FREE_HIGH_BATCH: on a CPU whose cache share is large, free_high also needs
    /// `count ≥ batch` (count including the block just freed), so about batch pages stay
    /// cached. Set per (zone, CPU) from the machine's cache description whenever it is
    /// (re)computed; not re-evaluated when batch changes later.
    pub enum FreeHighBatch {
        /// No such flag. Kernels before 6.7.
        Off => "off",
        /// Flag iff Σ over the CPU's data and unified cache leaves of (leaf size / CPUs sharing
        /// it) exceeds `4 · batch` pages. Huang v1 patches 2 and 3
        /// `<20230920061856.257597-3-ying.huang@intel.com>`, `<…-4-…>`, as posted; never
        /// merged in this form.
        DataSlicesOver4Batch => "data-slices-over-4-batch",
        /// Flag iff (LLC size / CPUs sharing the LLC) exceeds `3 · batch` pages (0 if the LLC
        /// is not a data or unified cache). v3 2/9 and 3/9, 94a3bfe4073c and 362d37a106dd;
        /// first release 6.7.
        LlcSliceOver3Batch => "llc-slice-over-3-batch",
    }
}

impl FreeHighBatch {
    /// Whether a pageset with this `batch` gets the flag on a CPU whose data-cache slices sum
    /// to `data_slices_bytes` and whose LLC slice is `llc_slice_bytes` (both bytes, 0 if
    /// unknown). Each rule reads only its own input.
    pub const fn flag(self, data_slices_bytes: u64, llc_slice_bytes: u64, batch: u32) -> bool {
        let batch = batch as u64;
        match self {
            FreeHighBatch::Off => false,
            FreeHighBatch::DataSlicesOver4Batch => (data_slices_bytes >> PAGE_SHIFT) > 4 * batch,
            FreeHighBatch::LlcSliceOver3Batch => (llc_slice_bytes >> PAGE_SHIFT) > 3 * batch,
        }
    }
}

switch_enum! {
    /// What a free_high drain takes, and what it does to pcp.high.
    pub enum FreeHighDrain {
        /// The whole pageset: `count` pages from every list, starting with the freed block's
        /// list; pcp.high untouched. 5.18 (f26b3fa04611) to 6.6.
        All => "all",
        /// `min(count, batch << S)` pages, and pcp.high is lowered by `batch << S` (never below
        /// high_min; a no-op without auto-tuning). Huang v1 patch 7 (this branch is inferred,
        /// not read: docs/presets.md §5, U1); v3 51a755c56dc0; first release 6.7.
        CappedShrinkHigh => "capped-shrink-high",
    }
}

switch_enum! {
    /// How many blocks a refill of an empty list takes from the zone (rmqueue_bulk).
    pub enum RefillSizing {
        /// `batch` pages for order 0; `max(batch >> order, 2)` blocks for a cached order > 0
        /// (batch if batch is 1). Kernels before 6.7.
        Batch => "batch",
        /// alloc_factor: an order-0 refill asks `batch << alloc_factor`, limited to
        /// `max(high − count − batch, batch)`; alloc_factor += 1 when the request fitted that
        /// limit and alloc_factor < S; every PCP free halves it; `high < batch` ⇒ 1 block.
        /// Higher orders as `batch`. "mm, page_alloc: scale the number of pages that are batch
        /// allocated", v1 patch 5 `<20230920061856.257597-6-ying.huang@intel.com>`;
        /// v3 c0a242394cb9; first release 6.7.
        AllocFactor => "alloc-factor",
    }
}

switch_enum! {
    /// How free_pcppages_bulk chooses blocks and holds the zone lock. Every form takes blocks
    /// from list tails (oldest first) and frees them into the buddy lists in selection order.
    pub enum BulkFree {
        /// Two passes. Pass 1, without the zone lock: round-robin over the lists with the
        /// `batch_free` allowance (a list reached after skipping k empty lists gives up to k + 1
        /// blocks, unused allowance carries over; if the search went round every list, take
        /// everything from the one non-empty list); the cursor's first probe is pindex 1 and
        /// no start list is passed. Pass 2 takes the zone lock once and frees the selection.
        /// Since 4.18 (0a5f4e5b4562 "mm/free_pcppages_bulk: do not hold lock when picking
        /// pages to free"); replaced in 5.18.
        TwoPassRoundRobin => "two-pass-round-robin",
        /// One pass under one zone-lock hold: find the next non-empty list, empty it from the
        /// tail until the request is met, repeat. The first list probed is the one *after* the
        /// start list (the overflowing list on a free, pindex 0 for drains), so drains begin at
        /// pindex 1. Mel Gorman v1 3/5 and 4/5, 15 Feb 2022,
        /// `<20220215145111.27082-4-mgorman@techsingularity.net>`, `<…-5-…>`; never merged in
        /// this form.
        SinglePassAfterStart => "single-pass-after-start",
        /// As above, the first list probed being the start list itself: the overflowing list
        /// is drained first, drains begin at pindex 0. v2 4/6 "mm/page_alloc: Drain the
        /// requested list first during bulk free", 17 Feb 2022,
        /// `<20220217002227.5739-5-mgorman@techsingularity.net>` (with v2 5/6 `<…-6-…>`, the
        /// single pass); first release 5.18.
        SinglePassAtStart => "single-pass-at-start",
    }
}

switch_enum! {
    /// Which buddy frame bulk free touches (the kernel prefetches it) for the first `batch`
    /// blocks of a call. A cache effect only: it changes which frames are touched, never which
    /// pages are freed.
    pub enum BuddyPrefetch {
        /// No prefetch. "More follow-up on high-order PCP caching",
        /// `<20220221094119.15282-1-mgorman@techsingularity.net>`; first release 5.18.
        Off => "off",
        /// `pfn ^ 1`, the order-0 buddy, whatever the block's order (wrong for high-order
        /// blocks). 4.18 (Aaron Lu's two-pass bulk free) to 5.17.
        Order0Buddy => "order0-buddy",
        /// `pfn ^ 2^order`. "mm/page_alloc: Fetch the correct pcp buddy during bulk free",
        /// `<20220215145111.27082-2-mgorman@techsingularity.net>` (v1),
        /// `<20220217002227.5739-2-mgorman@techsingularity.net>` (v2), ca7b59b1de72; 5.18, and
        /// removed again in the same release by the "More follow-up" patch.
        OrderBuddy => "order-buddy",
    }
}

switch_enum! {
    /// What the PGFREE event (`pgfree` in /proc/vmstat) adds for a free to the PCP. Frees that
    /// bypass the PCP always count 2^order.
    pub enum PgfreeUnit {
        /// 2^order per block: pages. 6.6 (the release that changed it was not checked) onwards;
        /// before 5.14 only order 0 reached the PCP, so both units agree there.
        Pages => "pages",
        /// 1 per block whatever its order. 5.14 (44042b449872) to at least 6.0.
        Blocks => "blocks",
    }
}

switch_enum! {
    /// Where page_frag_free sends a fragment page whose last reference it drops (network
    /// buffers: order-3 32 KiB pages, order 0 when order 3 fails or for drivers' order-0
    /// pools).
    pub enum PageFragFree {
        /// The non-PCP free for every order: zone lock per page, immediate buddy merge.
        /// Kernels before 65895b67ad27 (before 5.0; 4.19.y until the backport).
        Buddy => "buddy",
        /// Order 0 through the PCP free path (as `__page_frag_cache_drain` already did), order
        /// 3 to the buddy. "mm/page_alloc: free order-0 pages through PCP in
        /// page_frag_free()", v2 RESEND `<20181119134834.17765-2-aaron.lu@intel.com>`,
        /// 65895b67ad27; believed first in 5.0 (docs/presets.md §5, U2); 4.19.y backport
        /// `<20191203223437.421076677@linuxfoundation.org>`.
        PcpOrder0 => "pcp-order0",
        /// Every order the PCP caches ([`PcpLists`]): orders 0 and 3 once high orders are
        /// cached. 5.14 (the PCP free helper of 44042b449872 takes any cached order).
        Pcp => "pcp",
    }
}

switch_enum! {
    /// ALLOC_NOFRAGMENT: before stealing part of another migratetype's pageblock, try the lower
    /// local zones. Set only on the fast path when the preferred zone is Normal and there is
    /// one node or the node's DMA32 zone is populated; with it the fallback may only take
    /// blocks of pageblock order or larger; reaching a zone on another node clears it and
    /// restarts the walk, and a walk that fails with it set is retried once without it.
    /// PCP refills pass it on.
    pub enum NoFragment {
        /// Never set. Kernels before 5.0.
        Off => "off",
        /// The pageblock floor applies to every request order (for an order-10 request this
        /// lets order-9 blocks be moved without satisfying it). "mm, page_alloc: Spread
        /// allocations across zones before introducing fragmentation", v5 1/5
        /// `<20181123114528.28802-2-mgorman@techsingularity.net>`, 6bb154504f8b; first release
        /// 5.0 (the flag was accidentally never set in 5.0/5.1 until a274182f2638; we model
        /// it set).
        AllOrders => "all-orders",
        /// The floor applies only to requests below pageblock order. "mm/page_alloc: only
        /// search higher order when fallback" (Abel Wu, 3 Aug 2022),
        /// `<20220803025121.47018-1-wuyun.abel@bytedance.com>`; release not checked (present in
        /// 6.6).
        BelowPageblock => "below-pageblock",
    }
}

impl NoFragment {
    /// Does the fast path set ALLOC_NOFRAGMENT at all?
    pub const fn is_on(self) -> bool {
        !matches!(self, NoFragment::Off)
    }

    /// With the flag set, does a request of `order` get the pageblock floor on its fallback
    /// search?
    pub const fn floors(self, order: Order) -> bool {
        match self {
            NoFragment::Off => false,
            NoFragment::AllOrders => true,
            NoFragment::BelowPageblock => order.0 < PAGEBLOCK_ORDER,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Policy

/// Declares [`Policy`] and its key table from one field list, so a switch cannot exist without
/// a key.
macro_rules! define_policy {
    (
        $(#[$meta:meta])*
        pub struct Policy {
            $(
                $(#[$fmeta:meta])*
                pub $field:ident: $ty:ty,
            )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        pub struct Policy {
            $( $(#[$fmeta])* pub $field: $ty, )+
        }

        impl Policy {
            /// Every switch key, in field order (also the column order of `docs/presets.md`).
            pub const KEYS: &'static [&'static str] = &[$(stringify!($field)),+];

            /// The value of switch `key`, or `None` if there is no such switch.
            pub fn get(&self, key: &str) -> Option<SwitchValue> {
                match key {
                    $(stringify!($field) => Some(SwitchType::to_value(self.$field)),)+
                    _ => None,
                }
            }

            /// Set switch `key`: a bool switch takes [`SwitchValue::Bool`], an enum switch
            /// [`SwitchValue::Str`] with one of its kebab-case names.
            ///
            /// # Errors
            /// [`PolicyError::UnknownKey`] if no switch has that name (tunables are set with
            /// [`Tunables::set`] or [`set_key`]); [`PolicyError::WrongKind`] or
            /// [`PolicyError::OutOfRange`] for a value the switch does not accept. On error the
            /// policy is unchanged.
            pub fn set(&mut self, key: &str, value: SwitchValue) -> Result<(), PolicyError> {
                match key {
                    $(stringify!($field) => {
                        self.$field = <$ty as SwitchType>::from_value(stringify!($field), &value)?;
                        Ok(())
                    })+
                    _ => Err(PolicyError::UnknownKey {
                        key: key.to_owned(),
                        known: KeySet::Switches,
                    }),
                }
            }

            /// Every switch with its value, in [`Policy::KEYS`] order.
            pub fn switches(&self) -> impl Iterator<Item = (&'static str, SwitchValue)> {
                [$((stringify!($field), SwitchType::to_value(self.$field))),+].into_iter()
            }

            /// What [`Policy::set`] accepts for `key`, or `None` if there is no such switch.
            pub fn accepted(key: &str) -> Option<Accepted> {
                match key {
                    $(stringify!($field) => Some(<$ty as SwitchType>::ACCEPTED),)+
                    _ => None,
                }
            }
        }
    };
}

define_policy! {
    /// Which form of each mechanism runs: one switch per behaviour that differs between any two
    /// seed rows (docs/preset-history.md §1–§6). Read-only once an allocator is built; cheap to
    /// copy.
    ///
    /// Combinations no kernel shipped are allowed and do what the fields say; a switch whose
    /// mechanism is absent (e.g. `free_high_drain` with `free_high = off`) is simply not
    /// consulted. `Default` is [`Policy::modern`].
    #[non_exhaustive]
    pub struct Policy {
        /// Orders cached per CPU and the list layout: order 0 only (≤ 5.13), 0–3 + THP with
        /// 3, 1 or 2 THP lists (5.14, 6.0, 6.10).
        pub pcp_lists: PcpLists,
        /// Cap on the pageset batch: 31 pages at most (≤ 4.18) or 63 (4.19).
        pub batch_cap: BatchCap,
        /// Whether the local paths can find their pageset busy and fall back to the zone
        /// (6.0 spinlock + trylock) or always get it (IRQs off, ≤ 5.19).
        pub pcp_locking: PcpLocking,
        /// `high`: 6·batch (≤ 5.13), from the LOW watermark (5.14), auto-tuned (6.7).
        pub pcp_high: PcpHigh,
        /// While kswapd balances the zone: no limit (≤ 5.13), threshold 4·batch (5.14), and
        /// also shrink high (6.7).
        pub reclaim_active_limit: ReclaimActiveLimit,
        /// ZONE_BELOW_HIGH: set by an allocation whose zone fails the HIGH watermark fast check
        /// (one passing it skips the normal check), cleared after a free-triggered drain leaves
        /// the zone above HIGH (order 0, lowmem_reserve of Movable). While set: refills do not
        /// grow high (instead of the reclaim-active gate), and every free lowers pcp.high by
        /// the pressure step (not below high_min) and drains once `count ≥ high_min`. Only
        /// with auto-tuning. "mm, pcp: decrease PCP high if free pages < high watermark", v1
        /// patch 8 `<20230920061856.257597-9-ying.huang@intel.com>`, 57c0419c5f0e; first
        /// release 6.7 (v1 tests on every allocation, v3 only while the flag is clear: same
        /// outcome).
        pub zone_below_high: bool,
        /// Periodic decay of `high`: none (≤ 6.6), to 4/5 or count_min-limited (v1 only), by
        /// 1/8 (6.7).
        pub high_decay: HighDecay,
        /// Overflow drain size and the recent-free counter: batch (≤ 5.13), free_factor
        /// (5.14, capped in 6.7's series), free_count (6.7).
        pub free_batch_sizing: FreeBatchSizing,
        /// When an order 1..=3 free drains the pageset: never (≤ 5.17), after an overflow
        /// (5.18), only for consecutive high-order frees (6.7).
        pub free_high: FreeHigh,
        /// The free_count a free_high needs: one batch (6.7), five (posted 2025, unmerged),
        /// `batch + high_min / 2` (6.16).
        pub free_high_threshold: FreeHighThreshold,
        /// Whether free_high waits for batch pages on CPUs with a large cache share (6.7).
        pub free_high_batch: FreeHighBatch,
        /// What a free_high drain takes: everything (5.18) or at most `batch << S` (6.7).
        pub free_high_drain: FreeHighDrain,
        /// Refill size: batch (≤ 6.6) or scaled by alloc_factor (6.7).
        pub refill_sizing: RefillSizing,
        /// Block selection and zone-lock use in bulk free: two-pass round-robin (≤ 5.17),
        /// single pass from the overflowing list (5.18).
        pub bulk_free: BulkFree,
        /// Buddy frame touched during bulk free (a cache effect only).
        pub bulk_free_prefetch: BuddyPrefetch,
        /// Explicit full drains of a pageset (drain_pages_zone: drain_all_pages, CPU dead,
        /// memory offline) take the pageset and zone locks in chunks of at most `batch << S`
        /// pages instead of once for everything, bounding lock hold times. "mm: page_alloc:
        /// control latency caused by zone PCP draining" (Lucas Stach, 2024); first release
        /// 6.10 (docs/kernel-reference.md §10; also in stable trees).
        pub drain_pages_chunked: bool,
        /// What `pgfree` adds for a PCP free: 1 per block (5.14 – ≥ 6.0) or 2^order.
        pub pgfree_unit: PgfreeUnit,
        /// Where page_frag_free sends a page: buddy (≤ 4.20), PCP for order 0 (5.0), PCP for
        /// every cached order (5.14).
        pub page_frag_free: PageFragFree,
        /// ALLOC_NOFRAGMENT zone spreading before fragmenting fallbacks (5.0).
        pub alloc_nofragment: NoFragment,
        /// Watermark boosting: a fragmenting fallback (stolen block below pageblock order)
        /// raises the zone's watermark boost by a pageblock, up to `max(pageblock, HIGH ×
        /// watermark_boost_factor / 10000)`, and wakes kswapd, which reclaims the boost. Off
        /// ignores `watermark_boost_factor`. "mm: Reclaim small amounts of memory when an
        /// external fragmentation event occurs", v5 4/5, 1c30844d2dfe, with "mm, page_alloc: Do
        /// not wake kswapd with zone lock held", 73444bc4d8f9; first release 5.0.
        pub watermark_boost: bool,
        /// Freelist migratetype hygiene: a free block always sits on its pageblock's type's
        /// list. Steals and claims follow docs/kernel-reference.md §3.9 "6.10+" (single-page steals
        /// keep remainders on the block's own lists), merging relabels the buddy's pageblock,
        /// blocks above pageblock order are freed pageblock by pageblock, and a PCP drain looks
        /// the pageblock type up per block. Off = the ≤ 6.9 rules (whole found block moved to
        /// the requester's list; type cached at PCP free). Johannes Weiner, "mm: page_alloc:
        /// freelist migratetype hygiene"; first release 6.10.
        pub migratetype_hygiene: bool,
        /// lowmem_reserve of a lower zone against an *empty* upper zone: on = 0, off = the
        /// cumulative value as for a populated zone. On: "mm/page_alloc.c: don't show
        /// protection in zone's ->lowmem_reserve[] for empty zone", 96a5c186efff, 6.10;
        /// reverted March 2025 (6.14, also in stable) because it removed the lower zones'
        /// protection against e.g. Movable-capable allocations. Only mainline 6.10–6.13 are on.
        pub lowmem_reserve_empty_zone_zero: bool,
        /// Beyond the kernel (no kernel has it; every preset has it off): a block freed by
        /// a CPU other than the one whose pageset handed it out goes on that pageset's
        /// remote-free list (one lock-free push, up to [`REMOTE_FREE_MAX`] pages) instead
        /// of the freeing CPU's pageset; the owner takes the whole list back in one swap when
        /// its own list runs dry, at each tick and before a drain, and frees each block
        /// there as if it had freed it itself. Pages a producer-consumer pair passes between
        /// two CPUs then stay in the owner's pageset instead of crossing the zone lock twice.
        pub remote_free: bool,
    }
}

impl Policy {
    /// The modern kernel (docs/kernel-reference.md baseline, 6.10+ forms): everything on.
    pub const fn modern() -> Policy {
        MODERN
    }

    /// This policy with `change` applied: the way to derive a policy from a preset, since
    /// `Policy` is `#[non_exhaustive]` (new switches come with new kernels) and so cannot be
    /// written as a struct literal outside this crate.
    ///
    /// ```
    /// use pagealloc::policy::{PcpHigh, Policy};
    ///
    /// let fixed_high = Policy::modern().with(|p| p.pcp_high = PcpHigh::SixTimesBatch);
    /// assert_eq!(fixed_high.differing_keys(&Policy::modern()), ["pcp_high"]);
    /// ```
    #[must_use]
    pub fn with(mut self, change: impl FnOnce(&mut Policy)) -> Policy {
        change(&mut self);
        self
    }

    /// The named preset's policy, or `None` for an unknown name.
    pub fn preset(name: &str) -> Option<Policy> {
        Preset::get(name).map(|p| p.policy)
    }

    /// The presets whose switches equal this policy, in table order. Usually none or one;
    /// `frag-vanilla` and `pfrag-buddy` are the same code (4.20-rc3 and 4.19) and both match.
    pub fn matching_presets(&self) -> impl Iterator<Item = &'static Preset> + '_ {
        PRESETS.iter().filter(move |p| p.policy == *self)
    }

    /// Keys of the switches whose values differ between `self` and `other`, in key order.
    pub fn differing_keys(&self, other: &Policy) -> Vec<&'static str> {
        self.switches()
            .zip(other.switches())
            .filter(|(a, b)| a.1 != b.1)
            .map(|(a, _)| a.0)
            .collect()
    }
}

impl Default for Policy {
    fn default() -> Policy {
        MODERN
    }
}

// ---------------------------------------------------------------------------------------------
// Presets

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
    /// The switches.
    pub policy: Policy,
}

impl Preset {
    /// The preset with this name.
    pub fn get(name: &str) -> Option<&'static Preset> {
        PRESETS.iter().find(|p| p.name == name)
    }
}

/// 6.10+ mainline as described by docs/kernel-reference.md, with the lowmem_reserve rule that
/// mainline went back to in 6.14 (and stable trees carry).
const MODERN: Policy = Policy {
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
const HPC_VANILLA: Policy = Policy {
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
const HPC_REVERT: Policy = Policy { pcp_lists: PcpLists::Order0Only, ..HPC_VANILLA };

/// Series B v1 patches 1–4 (§2.1–2.3, §2.5): the seed-000 `mm-highpcpopt-v1` column.
const HPC_OPT_V1: Policy = Policy {
    bulk_free: BulkFree::SinglePassAfterStart,
    bulk_free_prefetch: BuddyPrefetch::OrderBuddy,
    ..HPC_VANILLA
};

/// v2 patches 1–5, adding "drain the requested list first" (§2.4): seed 004's column.
const HPC_OPT: Policy = Policy { bulk_free: BulkFree::SinglePassAtStart, ..HPC_OPT_V1 };

/// v1 patches 1–5 (§2.6): seed 000's netperf columns.
const HPC_LIMIT_V1: Policy = Policy { free_high: FreeHigh::AnyHighOrder, ..HPC_OPT_V1 };

/// v2 patches 1–6, as merged for 5.18 (without the separate no-prefetch patch).
const HPC_LIMIT: Policy = Policy { free_high: FreeHigh::AnyHighOrder, ..HPC_OPT };

/// 6.6 (§1.4), the base of Huang Ying's series.
const TUNE_BASE: Policy = Policy {
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
const TUNE_P1: Policy = Policy { free_high: FreeHigh::Consecutive, ..TUNE_BASE };
/// + v1 patches 2–3 (§3.2–3.3).
const TUNE_P3: Policy = Policy { free_high_batch: FreeHighBatch::DataSlicesOver4Batch, ..TUNE_P1 };
/// + v1 patches 4–5 (§3.4–3.5).
const TUNE_P5: Policy = Policy {
    free_batch_sizing: FreeBatchSizing::FreeFactorCapped,
    refill_sizing: RefillSizing::AllocFactor,
    ..TUNE_P3
};
/// + v1 patches 6–7 (§3.6–3.7; patch 6 alone changes nothing).
const TUNE_P7: Policy = Policy {
    pcp_high: PcpHigh::AutoTune,
    reclaim_active_limit: ReclaimActiveLimit::CapAndShrink,
    high_decay: HighDecay::FourFifths,
    free_batch_sizing: FreeBatchSizing::FreeFactorCappedInclusive,
    free_high_drain: FreeHighDrain::CappedShrinkHigh,
    ..TUNE_P5
};
/// + v1 patches 8–9 (§3.8–3.9).
const TUNE_P9: Policy =
    Policy { zone_below_high: true, high_decay: HighDecay::CountMinLimited, ..TUNE_P7 };
/// + v1 patch 10 (§3.10).
const TUNE_P10: Policy = Policy { free_batch_sizing: FreeBatchSizing::FreeCountV1, ..TUNE_P9 };

/// 4.20-rc3 (§1.1, §4.6), which is also the 4.19 of seed 003 for every switch here.
const FRAG_VANILLA: Policy = Policy {
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
const FRAG_LOWZONE: Policy = Policy { alloc_nofragment: NoFragment::AllOrders, ..FRAG_VANILLA };
/// 4.19 before the page_frag backport (§5).
const PFRAG_BUDDY: Policy = FRAG_VANILLA;
/// 4.19 with 65895b67ad27 backported (§5).
const PFRAG_PCP: Policy = Policy { page_frag_free: PageFragFree::PcpOrder0, ..PFRAG_BUDDY };

/// 4.18: the 4.19/4.20-rc3 switches with the batch still capped below 32 (before
/// d8a759b57035).
const LEGACY_4_18: Policy = Policy { batch_cap: BatchCap::HalfMib, ..FRAG_VANILLA };

/// 6.16: `modern` with c544a952ba61 (free_high waits for `batch + high_min / 2` freed pages).
const FHIGH: Policy =
    Policy { free_high_threshold: FreeHighThreshold::BatchPlusHalfHighMin, ..MODERN };
/// `modern` with the posted -V2 of the same series (five batches).
const FHIGH_V2: Policy = Policy { free_high_threshold: FreeHighThreshold::FiveBatches, ..MODERN };

/// The most pages a pageset's remote-free list holds ([`Policy::remote_free`]): 2 MiB, one
/// THP or eight batches of a typical pageset. A free that would take the owner's list past it
/// frees to its own pageset, as without the switch, so an owner that stops allocating keeps
/// at most this much waiting until its next tick. A choice of this project, not a kernel
/// value (the kernel has no remote-free lists).
pub const REMOTE_FREE_MAX: u32 = 512;

/// Every preset name, in [`PRESETS`] order: `modern`, then the seed rows series by series
/// (bulk free, auto-tuning, fragmentation avoidance, page_frag), each `-v1` variant after the
/// merged form it differs from; then kernel changes no seed measured (the 6.16 free_high
/// threshold and its posted -V2, the pre-4.19 batch cap).
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
];

/// Shorthand for the row tables below.
const fn row(seed: &'static str, label: &'static str) -> SeedRow {
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
        policy: MODERN,
    },
    Preset {
        name: "hpc-vanilla",
        summary: "5.17-rc3: high-order PCP (5.14), free_factor, two-pass round-robin bulk free",
        rows: &[row("000", "vanilla"), row("000", "5.17-rc3"), row("004", "vanilla")],
        unmerged: false,
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
        policy: HPC_REVERT,
    },
    Preset {
        name: "hpc-opt",
        summary: "5.17-rc3 + \"Follow-up on high-order PCP caching\" v2 patches 1-5 (as merged \
                  for 5.18)",
        rows: &[row("004", "mm-highpcpopt-v2")],
        unmerged: false,
        policy: HPC_OPT,
    },
    Preset {
        name: "hpc-opt-v1",
        summary: "5.17-rc3 + \"Follow-up on high-order PCP caching\" v1 patches 1-4 (bulk free \
                  starts at the list after the overflowing one)",
        rows: &[row("000", "mm-highpcpopt-v1"), row("000", "mm-highpcpopt-v1r4")],
        unmerged: true,
        policy: HPC_OPT_V1,
    },
    Preset {
        name: "hpc-limit",
        summary: "5.17-rc3 + \"Follow-up on high-order PCP caching\" v2 patches 1-6 (as merged \
                  for 5.18, prefetch kept)",
        rows: &[],
        unmerged: false,
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
        policy: HPC_LIMIT_V1,
    },
    Preset {
        name: "tune-base",
        summary: "6.6, the base of \"mm: PCP high auto-tuning\"",
        rows: &[row("001", "base")],
        unmerged: false,
        policy: TUNE_BASE,
    },
    Preset {
        name: "tune-p1",
        summary: "6.6 + PCP auto-tuning v1 patch 1 (no full drain at process exit)",
        rows: &[row("001", "patch1")],
        unmerged: false,
        policy: TUNE_P1,
    },
    Preset {
        name: "tune-p3",
        summary: "6.6 + PCP auto-tuning v1 patches 1-3 (FREE_HIGH_BATCH, data-slice rule)",
        rows: &[row("001", "patch3")],
        unmerged: true,
        policy: TUNE_P3,
    },
    Preset {
        name: "tune-p5",
        summary: "6.6 + PCP auto-tuning v1 patches 1-5 (scale cap, alloc_factor)",
        rows: &[row("001", "patch5")],
        unmerged: true,
        policy: TUNE_P5,
    },
    Preset {
        name: "tune-p7",
        summary: "6.6 + PCP auto-tuning v1 patches 1-7 (auto-tuned high, decay to 4/5)",
        rows: &[row("001", "patch7")],
        unmerged: true,
        policy: TUNE_P7,
    },
    Preset {
        name: "tune-p9",
        summary: "6.6 + PCP auto-tuning v1 patches 1-9 (ZONE_BELOW_HIGH, count_min decay)",
        rows: &[row("001", "patch9")],
        unmerged: true,
        policy: TUNE_P9,
    },
    Preset {
        name: "tune-p10",
        summary: "6.6 + PCP auto-tuning v1 patches 1-10 (free_count)",
        rows: &[row("001", "patch10")],
        unmerged: true,
        policy: TUNE_P10,
    },
    Preset {
        name: "frag-vanilla",
        summary: "4.20-rc3: order-0 PCP, high 6*batch, no ALLOC_NOFRAGMENT, no boosting",
        rows: &[row("002", "vanilla"), row("002", "4.20-rc3")],
        unmerged: false,
        policy: FRAG_VANILLA,
    },
    Preset {
        name: "frag-lowzone",
        summary: "4.20-rc3 + \"Fragmentation avoidance improvements\" v5 patch 1 \
                  (ALLOC_NOFRAGMENT)",
        rows: &[row("002", "lowzone-v5r8"), row("002", "4.20-rc3+patch"), row("002", "patch")],
        unmerged: false,
        policy: FRAG_LOWZONE,
    },
    Preset {
        name: "pfrag-buddy",
        summary: "4.19: page_frag_free frees every order straight to the buddy lists",
        rows: &[],
        unmerged: false,
        policy: PFRAG_BUDDY,
    },
    Preset {
        name: "pfrag-pcp",
        summary: "4.19 + 65895b67ad27 backport: order-0 page_frag pages freed through the PCP",
        rows: &[],
        unmerged: false,
        policy: PFRAG_PCP,
    },
    Preset {
        name: "fhigh",
        summary: "6.16 (merged c544a952ba61): modern with free_high waiting for batch + \
                  high_min/2 freed pages",
        rows: &[],
        unmerged: false,
        policy: FHIGH,
    },
    Preset {
        name: "fhigh-v2",
        summary: "modern + \"mm: pcp: scale batch ...\" -V2 (posted March 2025, not merged): \
                  free_high waits for 5*batch freed pages",
        rows: &[],
        unmerged: true,
        policy: FHIGH_V2,
    },
    Preset {
        name: "legacy-4.18",
        summary: "4.18: as frag-vanilla but the PCP batch capped below 32 (the cap doubled in \
                  4.19, d8a759b57035)",
        rows: &[],
        unmerged: false,
        policy: LEGACY_4_18,
    },
];

// ---------------------------------------------------------------------------------------------
// Tunables

/// Settings a user or administrator chooses: the kernel's sysctls and Kconfig value that the
/// seeds' mechanisms read. Independent of [`Policy`] (see the module docs for why).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Tunables {
    /// `vm.percpu_pagelist_high_fraction`: 0 (default) sizes high from the LOW watermark (and
    /// lets auto-tuning run up to managed / 8); f ≥ 8 sizes high from managed / f split over
    /// the node's CPUs and turns auto-tuning off. 1..=7 is refused, as by the sysctl. Ignored by
    /// [`PcpHigh::SixTimesBatch`].
    pub percpu_pagelist_high_fraction: u32,
    /// S = `CONFIG_PCP_BATCH_SCALE_MAX`, 0..=6, default 5. Bounds `batch << S` (2016 pages for
    /// batch 63): the capped free_factor and free_count, alloc_factor, free_high drains and
    /// their high reduction, the decay floor `count − (batch << S)`, chunked drains. The
    /// posted v1 series (tune-p*) had the constant 5; uncapped forms ignore it.
    pub pcp_batch_scale_max: u8,
    /// Ticks between two decay passes over a CPU's pagesets, ≥ 1 (default 1). The kernel runs
    /// decay on each vmstat refresh (vm.stat_interval, 1 s), so with one tick per simulated
    /// second the default matches it.
    pub decay_period_ticks: u32,
    /// `vm.min_free_kbytes`, KiB, 0..=i32::MAX. `None`: the kernel's boot value (square-root
    /// rule clamped to 128..=262144 KiB, raised to the THP recommendation).
    pub min_free_kbytes: Option<u64>,
    /// `vm.watermark_scale_factor`, in 1/10000 of a zone's managed pages: 1..=3000, default 10.
    pub watermark_scale_factor: u64,
    /// `vm.watermark_boost_factor`, in 1/10000 of the HIGH watermark: default 15000, 0
    /// disables boosting; ignored unless [`Policy::watermark_boost`].
    pub watermark_boost_factor: u64,
    /// `vm.lowmem_reserve_ratio`, indexed by `ZoneType::index` (DMA, DMA32, Normal, Movable):
    /// a zone keeps 1/ratio of the higher zones' managed pages from allocations that could
    /// have used them; 0 = no reserve. Default `[256, 256, 32, 0]`; each ≤ i32::MAX.
    pub lowmem_reserve_ratio: [u64; NR_ZONE_TYPES],
    /// `vm.compaction_proactiveness`, 0..=100, default 20: kcompactd compacts a node whose
    /// fragmentation score is above `100 - p + 10` down to `100 - p`; 0 turns proactive
    /// compaction off.
    pub compaction_proactiveness: u32,
    /// `vm.extfrag_threshold`, 0..=1000, default 500: a costly-order compaction is skipped
    /// when the zone's fragmentation index is at or below it (the failure is lack of memory).
    pub extfrag_threshold: u32,
}

/// Largest value of the kernel's `int` sysctls.
const INT_MAX: i64 = i32::MAX as i64;

impl Tunables {
    /// These tunables with `change` applied (`Tunables` is `#[non_exhaustive]`: start from
    /// [`Tunables::default`] and set what differs).
    ///
    /// ```
    /// use pagealloc::Tunables;
    ///
    /// let t = Tunables::default().with(|t| t.min_free_kbytes = Some(65_536));
    /// assert_eq!(t.min_free_kbytes, Some(65_536));
    /// assert_eq!(t.watermark_scale_factor, Tunables::default().watermark_scale_factor);
    /// ```
    #[must_use]
    pub fn with(mut self, change: impl FnOnce(&mut Tunables)) -> Tunables {
        change(&mut self);
        self
    }

    /// Every tunable key, in field order.
    pub const KEYS: &'static [&'static str] = &[
        "percpu_pagelist_high_fraction",
        "pcp_batch_scale_max",
        "decay_period_ticks",
        "min_free_kbytes",
        "watermark_scale_factor",
        "watermark_boost_factor",
        "lowmem_reserve_ratio",
        "compaction_proactiveness",
        "extfrag_threshold",
    ];

    /// The kernel's defaults (docs/kernel-reference.md §2).
    pub const DEFAULT: Tunables = Tunables {
        percpu_pagelist_high_fraction: 0,
        pcp_batch_scale_max: 5,
        decay_period_ticks: 1,
        min_free_kbytes: None,
        watermark_scale_factor: 10,
        watermark_boost_factor: 15_000,
        lowmem_reserve_ratio: [256, 256, 32, 0],
        compaction_proactiveness: 20,
        extfrag_threshold: 500,
    };

    /// What [`Tunables::set`] accepts for `key`, or `None` if there is no such tunable.
    pub fn accepted(key: &str) -> Option<Accepted> {
        Some(match key {
            "percpu_pagelist_high_fraction" => Accepted::ZeroOrInt { min: 8, max: INT_MAX },
            "pcp_batch_scale_max" => Accepted::Int { min: 0, max: 6 },
            "decay_period_ticks" => Accepted::Int { min: 1, max: u32::MAX as i64 },
            "min_free_kbytes" => Accepted::DefaultOrInt { min: 0, max: INT_MAX },
            "watermark_scale_factor" => Accepted::Int { min: 1, max: 3000 },
            "watermark_boost_factor" => Accepted::Int { min: 0, max: INT_MAX },
            "lowmem_reserve_ratio" => Accepted::IntList { len: NR_ZONE_TYPES, max: INT_MAX },
            "compaction_proactiveness" => Accepted::Int { min: 0, max: 100 },
            "extfrag_threshold" => Accepted::Int { min: 0, max: 1000 },
            _ => return None,
        })
    }

    /// The value of tunable `key`, or `None` if there is no such tunable. `min_free_kbytes`
    /// reads `"default"` when unset.
    pub fn get(&self, key: &str) -> Option<SwitchValue> {
        Some(match self.raw(key)? {
            RawTunable::Int(n) => SwitchValue::Int(n),
            RawTunable::Default => SwitchValue::Str(DEFAULT_WORD.to_owned()),
            RawTunable::List(v) => SwitchValue::List(v.to_vec()),
        })
    }

    /// [`get`](Self::get) without the heap: what `validate` reads, so that building an
    /// allocator allocates nothing.
    fn raw(&self, key: &str) -> Option<RawTunable> {
        Some(RawTunable::Int(match key {
            "percpu_pagelist_high_fraction" => self.percpu_pagelist_high_fraction.into(),
            "pcp_batch_scale_max" => self.pcp_batch_scale_max.into(),
            "decay_period_ticks" => self.decay_period_ticks.into(),
            "min_free_kbytes" => match self.min_free_kbytes {
                Some(kb) => saturate_i64(kb),
                None => return Some(RawTunable::Default),
            },
            "watermark_scale_factor" => saturate_i64(self.watermark_scale_factor),
            "watermark_boost_factor" => saturate_i64(self.watermark_boost_factor),
            "lowmem_reserve_ratio" => {
                return Some(RawTunable::List(self.lowmem_reserve_ratio.map(saturate_i64)))
            }
            "compaction_proactiveness" => self.compaction_proactiveness.into(),
            "extfrag_threshold" => self.extfrag_threshold.into(),
            _ => return None,
        }))
    }

    /// Every tunable with its value, in [`Tunables::KEYS`] order.
    pub fn values(&self) -> impl Iterator<Item = (&'static str, SwitchValue)> + '_ {
        Tunables::KEYS.iter().filter_map(move |&k| self.get(k).map(|v| (k, v)))
    }

    /// Set tunable `key` from an integer ([`SwitchValue::Int`]); `min_free_kbytes` also takes
    /// `"default"`, `lowmem_reserve_ratio` a list of one ratio per zone type, where values below
    /// 1 mean 0 as the sysctl stores them.
    ///
    /// # Errors
    /// [`PolicyError::UnknownKey`], [`PolicyError::WrongKind`] or [`PolicyError::OutOfRange`];
    /// the tunables are then unchanged. A successful set leaves [`Tunables::validate`] passing
    /// if it passed before.
    pub fn set(&mut self, key: &str, value: SwitchValue) -> Result<(), PolicyError> {
        let Some((&key, accepted)) =
            Tunables::KEYS.iter().find(|&&k| k == key).zip(Tunables::accepted(key))
        else {
            return Err(PolicyError::UnknownKey { key: key.to_owned(), known: KeySet::Tunables });
        };
        let out_of_range = || PolicyError::OutOfRange { key, got: value.clone(), accepted };
        let wrong_kind = || PolicyError::WrongKind { key, got: value.kind(), accepted };
        match (key, &value) {
            ("min_free_kbytes", SwitchValue::Str(s)) if s == DEFAULT_WORD => {
                self.min_free_kbytes = None;
            }
            ("lowmem_reserve_ratio", SwitchValue::List(v)) => {
                if v.len() != NR_ZONE_TYPES || v.iter().any(|&r| r > INT_MAX) {
                    return Err(out_of_range());
                }
                for (slot, &r) in self.lowmem_reserve_ratio.iter_mut().zip(v) {
                    *slot = if r < 1 { 0 } else { r as u64 };
                }
            }
            ("lowmem_reserve_ratio", _) => return Err(wrong_kind()),
            (_, SwitchValue::Int(n)) => {
                if !accepted.admits(*n) {
                    return Err(out_of_range());
                }
                // admits() bounded n to the field's range, so none of these casts truncate.
                let n = *n;
                match key {
                    "percpu_pagelist_high_fraction" => {
                        self.percpu_pagelist_high_fraction = n as u32
                    }
                    "pcp_batch_scale_max" => self.pcp_batch_scale_max = n as u8,
                    "decay_period_ticks" => self.decay_period_ticks = n as u32,
                    "min_free_kbytes" => self.min_free_kbytes = Some(n as u64),
                    "watermark_scale_factor" => self.watermark_scale_factor = n as u64,
                    "compaction_proactiveness" => self.compaction_proactiveness = n as u32,
                    "extfrag_threshold" => self.extfrag_threshold = n as u32,
                    _ => self.watermark_boost_factor = n as u64,
                }
            }
            ("min_free_kbytes", SwitchValue::Str(_)) => return Err(out_of_range()),
            _ => return Err(wrong_kind()),
        }
        Ok(())
    }

    /// Check every field against the range its sysctl (or Kconfig) accepts.
    ///
    /// # Errors
    /// [`PolicyError::OutOfRange`] naming the first field (in key order) that is out of range.
    pub fn validate(&self) -> Result<(), PolicyError> {
        for &key in Tunables::KEYS {
            let (Some(accepted), Some(value)) = (Tunables::accepted(key), self.raw(key)) else {
                continue;
            };
            let ok = match value {
                RawTunable::Int(n) => accepted.admits(n),
                RawTunable::List(v) => v.iter().all(|&r| (0..=INT_MAX).contains(&r)),
                RawTunable::Default => true,
            };
            if !ok {
                let got = self.get(key).expect("a key of KEYS");
                return Err(PolicyError::OutOfRange { key, got, accepted });
            }
        }
        Ok(())
    }
}

/// A tunable's value as the fields hold it ([`SwitchValue`] without the heap).
enum RawTunable {
    Int(i64),
    /// `min_free_kbytes` unset: the kernel computes it.
    Default,
    List([i64; NR_ZONE_TYPES]),
}

impl Default for Tunables {
    fn default() -> Tunables {
        Tunables::DEFAULT
    }
}

/// The word that stands for "kernel default" where a tunable is optional.
const DEFAULT_WORD: &str = "default";

/// `v` as an i64, saturating (a u64 above i64::MAX is out of every range anyway).
fn saturate_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Set a switch or a tunable, whichever has the name `key` (for preset files that mix both).
///
/// # Errors
/// As [`Policy::set`] and [`Tunables::set`]; an unknown key reports both key sets.
pub fn set_key(
    policy: &mut Policy,
    tunables: &mut Tunables,
    key: &str,
    value: SwitchValue,
) -> Result<(), PolicyError> {
    if Policy::KEYS.contains(&key) {
        policy.set(key, value)
    } else if Tunables::KEYS.contains(&key) {
        tunables.set(key, value)
    } else {
        Err(PolicyError::UnknownKey { key: key.to_owned(), known: KeySet::Any })
    }
}

// ---------------------------------------------------------------------------------------------
// Values and errors

/// A switch or tunable value as preset files and JSON carry it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SwitchValue {
    /// A bool switch.
    Bool(bool),
    /// An integer tunable.
    Int(i64),
    /// An enum switch's kebab-case name, or `"default"` for an unset optional tunable.
    Str(String),
    /// A per-zone list (`lowmem_reserve_ratio`).
    List(Vec<i64>),
}

impl SwitchValue {
    /// The value's kind, for error messages.
    pub fn kind(&self) -> ValueKind {
        match self {
            SwitchValue::Bool(_) => ValueKind::Bool,
            SwitchValue::Int(_) => ValueKind::Int,
            SwitchValue::Str(_) => ValueKind::Str,
            SwitchValue::List(_) => ValueKind::List,
        }
    }
}

impl From<bool> for SwitchValue {
    fn from(b: bool) -> SwitchValue {
        SwitchValue::Bool(b)
    }
}

impl From<i64> for SwitchValue {
    fn from(n: i64) -> SwitchValue {
        SwitchValue::Int(n)
    }
}

impl From<&str> for SwitchValue {
    fn from(s: &str) -> SwitchValue {
        SwitchValue::Str(s.to_owned())
    }
}

impl From<String> for SwitchValue {
    fn from(s: String) -> SwitchValue {
        SwitchValue::Str(s)
    }
}

impl From<Vec<i64>> for SwitchValue {
    fn from(v: Vec<i64>) -> SwitchValue {
        SwitchValue::List(v)
    }
}

impl fmt::Display for SwitchValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SwitchValue::Bool(b) => write!(f, "{b}"),
            SwitchValue::Int(n) => write!(f, "{n}"),
            SwitchValue::Str(s) => write!(f, "\"{s}\""),
            SwitchValue::List(v) => {
                f.write_str("[")?;
                for (i, n) in v.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{n}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// The kind of a [`SwitchValue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueKind {
    /// `true` / `false`.
    Bool,
    /// An integer.
    Int,
    /// A string.
    Str,
    /// A list of integers.
    List,
}

impl fmt::Display for ValueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ValueKind::Bool => "bool",
            ValueKind::Int => "integer",
            ValueKind::Str => "string",
            ValueKind::List => "list",
        })
    }
}

/// The values a key accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accepted {
    /// `true` or `false`.
    Bool,
    /// One of these kebab-case names.
    Names(&'static [&'static str]),
    /// An integer in `min..=max`.
    Int {
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
    },
    /// 0, or an integer in `min..=max`.
    ZeroOrInt {
        /// Smallest accepted non-zero value.
        min: i64,
        /// Largest accepted value.
        max: i64,
    },
    /// `"default"`, or an integer in `min..=max`.
    DefaultOrInt {
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
    },
    /// A list of exactly `len` integers, each at most `max` (values below 1 are stored as 0).
    IntList {
        /// Required length (one per zone type).
        len: usize,
        /// Largest accepted element.
        max: i64,
    },
}

impl Accepted {
    /// Does an integer value fall in the accepted range? False for non-integer kinds.
    pub fn admits(self, n: i64) -> bool {
        match self {
            Accepted::Int { min, max } | Accepted::DefaultOrInt { min, max } => {
                (min..=max).contains(&n)
            }
            Accepted::ZeroOrInt { min, max } => n == 0 || (min..=max).contains(&n),
            Accepted::Bool | Accepted::Names(_) | Accepted::IntList { .. } => false,
        }
    }
}

impl fmt::Display for Accepted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Accepted::Bool => f.write_str("true or false"),
            Accepted::Names(names) => write!(f, "one of: {}", Joined(names)),
            Accepted::Int { min, max } => write!(f, "an integer in {min}..={max}"),
            Accepted::ZeroOrInt { min, max } => write!(f, "0 or an integer in {min}..={max}"),
            Accepted::DefaultOrInt { min, max } => {
                write!(f, "\"{DEFAULT_WORD}\" or an integer in {min}..={max}")
            }
            Accepted::IntList { len, max } => {
                write!(f, "a list of {len} integers, each at most {max} (below 1 means 0)")
            }
        }
    }
}

/// Which keys an unknown-key error lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeySet {
    /// [`Policy::KEYS`].
    Switches,
    /// [`Tunables::KEYS`].
    Tunables,
    /// Both.
    Any,
}

impl KeySet {
    /// The keys of this set.
    pub fn keys(self) -> impl Iterator<Item = &'static str> {
        let (switches, tunables): (&[&str], &[&str]) = match self {
            KeySet::Switches => (Policy::KEYS, &[]),
            KeySet::Tunables => (&[], Tunables::KEYS),
            KeySet::Any => (Policy::KEYS, Tunables::KEYS),
        };
        switches.iter().chain(tunables).copied()
    }
}

/// A refused key or value.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PolicyError {
    /// No switch or tunable has this name.
    UnknownKey {
        /// The name given.
        key: String,
        /// The names that exist.
        known: KeySet,
    },
    /// The value is of a kind the key never takes (e.g. an integer for an enum switch).
    WrongKind {
        /// The key.
        key: &'static str,
        /// The kind given.
        got: ValueKind,
        /// What the key takes.
        accepted: Accepted,
    },
    /// The value has the right kind but is not one the key takes.
    OutOfRange {
        /// The key.
        key: &'static str,
        /// The value given (or found, for [`Tunables::validate`]).
        got: SwitchValue,
        /// What the key takes.
        accepted: Accepted,
    },
}

impl PolicyError {
    /// The key the error is about.
    pub fn key(&self) -> &str {
        match self {
            PolicyError::UnknownKey { key, .. } => key,
            PolicyError::WrongKind { key, .. } | PolicyError::OutOfRange { key, .. } => key,
        }
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyError::UnknownKey { key, known } => {
                let known: Vec<&str> = known.keys().collect();
                write!(f, "unknown key `{key}`; known keys: {}", Joined(&known))
            }
            PolicyError::WrongKind { key, got, accepted } => {
                write!(f, "`{key}` takes {accepted}, not a {got}")
            }
            PolicyError::OutOfRange { key, got, accepted } => {
                write!(f, "`{key}` = {got} is not accepted; it takes {accepted}")
            }
        }
    }
}

/// Formats a list of names as `a, b, c`.
struct Joined<'a>(&'a [&'a str]);

impl fmt::Display for Joined<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(s)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::ToString;
    use alloc::vec;

    fn p(name: &str) -> Policy {
        Policy::preset(name).unwrap_or_else(|| panic!("preset {name} missing"))
    }

    /// Switches that differ between two presets, sorted.
    fn delta(a: &str, b: &str) -> Vec<&'static str> {
        let mut d = p(a).differing_keys(&p(b));
        d.sort_unstable();
        d
    }

    fn assert_delta(a: &str, b: &str, expected: &[&'static str]) {
        let mut e = expected.to_vec();
        e.sort_unstable();
        assert_eq!(delta(a, b), e, "{a} -> {b}");
    }

    #[test]
    fn every_preset_name_resolves_in_table_order() {
        let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        assert_eq!(names, PRESET_NAMES);
        for name in PRESET_NAMES {
            assert!(Policy::preset(name).is_some(), "{name}");
        }
        for required in [
            "modern",
            "hpc-vanilla",
            "hpc-revert",
            "hpc-opt",
            "hpc-limit",
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
        ] {
            assert!(PRESET_NAMES.contains(&required), "{required}");
        }
        assert_eq!(Policy::preset("no-such-preset"), None);
        assert_eq!(Policy::default(), Policy::modern());
        assert_eq!(p("modern"), Policy::modern());
    }

    #[test]
    fn presets_are_distinct_except_the_two_4_19_baselines() {
        for (i, a) in PRESETS.iter().enumerate() {
            for b in &PRESETS[i + 1..] {
                let same = a.policy == b.policy;
                let expected = a.name == "frag-vanilla" && b.name == "pfrag-buddy";
                assert_eq!(same, expected, "{} vs {}", a.name, b.name);
            }
        }
        let m: Vec<&str> = p("pfrag-buddy").matching_presets().map(|p| p.name).collect();
        assert_eq!(m, ["frag-vanilla", "pfrag-buddy"]);
        let mut custom = Policy::modern();
        custom.high_decay = HighDecay::FourFifths;
        assert_eq!(custom.matching_presets().count(), 0);
    }

    #[test]
    fn seed_labels_are_unique_per_seed() {
        let mut seen = Vec::new();
        for preset in PRESETS {
            for r in preset.rows {
                assert!(!seen.contains(&(r.seed, r.label)), "{r:?}");
                seen.push((r.seed, r.label));
            }
        }
    }

    // Seed 000: vanilla, mm-reverthighpcp-v1, mm-highpcpopt-v1, mm-highpcplimit-v1.

    #[test]
    fn seed000_vanilla_to_revert() {
        assert_delta("hpc-vanilla", "hpc-revert", &["pcp_lists"]);
    }

    #[test]
    fn seed000_revert_to_opt_v1() {
        assert_delta("hpc-revert", "hpc-opt-v1", &["pcp_lists", "bulk_free", "bulk_free_prefetch"]);
        // The table compares each column with vanilla: patches 1-4 touch only bulk free.
        assert_delta("hpc-vanilla", "hpc-opt-v1", &["bulk_free", "bulk_free_prefetch"]);
    }

    #[test]
    fn seed000_opt_v1_to_limit_v1() {
        assert_delta("hpc-opt-v1", "hpc-limit-v1", &["free_high"]);
    }

    // Seed 004: vanilla, mm-reverthighpcp-v1, mm-highpcpopt-v2.

    #[test]
    fn seed004_vanilla_to_revert() {
        assert_delta("hpc-vanilla", "hpc-revert", &["pcp_lists"]);
    }

    #[test]
    fn seed004_revert_to_opt() {
        assert_delta("hpc-revert", "hpc-opt", &["pcp_lists", "bulk_free", "bulk_free_prefetch"]);
    }

    #[test]
    fn series_b_posted_v1_against_merged() {
        assert_delta("hpc-opt-v1", "hpc-opt", &["bulk_free"]);
        assert_delta("hpc-limit-v1", "hpc-limit", &["bulk_free"]);
        assert_delta("hpc-opt", "hpc-limit", &["free_high"]);
        assert_eq!(p("hpc-opt-v1").bulk_free, BulkFree::SinglePassAfterStart);
        assert_eq!(p("hpc-opt").bulk_free, BulkFree::SinglePassAtStart);
    }

    // Seed 001: base, patch1, patch3, patch5, patch7, patch9, patch10 (all v1).

    #[test]
    fn seed001_base_to_p1() {
        assert_delta("tune-base", "tune-p1", &["free_high"]);
        assert_eq!(p("tune-p1").free_high, FreeHigh::Consecutive);
    }

    #[test]
    fn seed001_p1_to_p3() {
        assert_delta("tune-p1", "tune-p3", &["free_high_batch"]);
        assert_eq!(p("tune-p3").free_high_batch, FreeHighBatch::DataSlicesOver4Batch);
    }

    #[test]
    fn seed001_p3_to_p5() {
        assert_delta("tune-p3", "tune-p5", &["free_batch_sizing", "refill_sizing"]);
    }

    #[test]
    fn seed001_p5_to_p7() {
        assert_delta(
            "tune-p5",
            "tune-p7",
            &[
                "pcp_high",
                "reclaim_active_limit",
                "high_decay",
                "free_batch_sizing",
                "free_high_drain",
            ],
        );
        let p7 = p("tune-p7");
        assert_eq!(p7.high_decay, HighDecay::FourFifths);
        assert_eq!(p7.free_batch_sizing, FreeBatchSizing::FreeFactorCappedInclusive);
    }

    #[test]
    fn seed001_p7_to_p9() {
        assert_delta("tune-p7", "tune-p9", &["zone_below_high", "high_decay"]);
        assert_eq!(p("tune-p9").high_decay, HighDecay::CountMinLimited);
    }

    #[test]
    fn seed001_p9_to_p10() {
        assert_delta("tune-p9", "tune-p10", &["free_batch_sizing"]);
        assert_eq!(p("tune-p10").free_batch_sizing, FreeBatchSizing::FreeCountV1);
    }

    #[test]
    fn seed001_p10_v1_to_modern() {
        // v1 → v3 (data slices → LLC slice, 4/5 + count_min → 7/8, decrease floor), then the
        // 6.10 changes (THP list split, hygiene, chunked drains).
        assert_delta(
            "tune-p10",
            "modern",
            &[
                "pcp_lists",
                "high_decay",
                "free_batch_sizing",
                "free_high_batch",
                "drain_pages_chunked",
                "migratetype_hygiene",
            ],
        );
    }

    // Seed 002: vanilla, lowzone-v5r8. Seed 003: before and after the backport.

    #[test]
    fn seed002_vanilla_to_lowzone() {
        assert_delta("frag-vanilla", "frag-lowzone", &["alloc_nofragment"]);
        assert_eq!(p("frag-lowzone").alloc_nofragment, NoFragment::AllOrders);
    }

    #[test]
    fn seed003_buddy_to_pcp() {
        assert_delta("pfrag-buddy", "pfrag-pcp", &["page_frag_free"]);
        assert_eq!(p("pfrag-pcp").page_frag_free, PageFragFree::PcpOrder0);
    }

    // Nikhil Dhama's 2025 free_high threshold series (no seed column).

    #[test]
    fn free_high_threshold_presets_differ_from_modern_by_the_threshold_only() {
        assert_eq!(p("modern").free_high_threshold, FreeHighThreshold::Batch);
        assert_delta("modern", "fhigh", &["free_high_threshold"]);
        assert_delta("modern", "fhigh-v2", &["free_high_threshold"]);
        assert_eq!(p("fhigh").free_high_threshold, FreeHighThreshold::BatchPlusHalfHighMin);
        assert_eq!(p("fhigh-v2").free_high_threshold, FreeHighThreshold::FiveBatches);
        assert!(!Preset::get("fhigh").unwrap().unmerged);
        assert!(Preset::get("fhigh-v2").unwrap().unmerged);
        // Every earlier preset kept the 6.7 threshold (the free_factor ones never read it).
        for preset in PRESETS.iter().filter(|p| !p.name.starts_with("fhigh")) {
            assert_eq!(
                preset.policy.free_high_threshold,
                FreeHighThreshold::Batch,
                "{}",
                preset.name
            );
        }
    }

    #[test]
    fn legacy_4_18_differs_from_4_19_by_the_batch_cap_only() {
        assert_delta("frag-vanilla", "legacy-4.18", &["batch_cap"]);
        assert_eq!(p("legacy-4.18").batch_cap, BatchCap::HalfMib);
        for preset in PRESETS.iter().filter(|p| p.name != "legacy-4.18") {
            assert_eq!(
                preset.policy.batch_cap,
                BatchCap::OneMib,
                "{} is 4.19 or later",
                preset.name
            );
        }
        assert_eq!(BatchCap::HalfMib.cap_pages(), 128);
        assert_eq!(BatchCap::OneMib.cap_pages(), 256);
    }

    #[test]
    fn free_high_threshold_pages() {
        // batch 63, high_min 3132 (docs/kernel-reference.md §2.9).
        assert_eq!(FreeHighThreshold::Batch.pages(63, 3132), 63);
        assert_eq!(FreeHighThreshold::FiveBatches.pages(63, 3132), 315);
        assert_eq!(FreeHighThreshold::BatchPlusHalfHighMin.pages(63, 3132), 63 + 1566);
        assert_eq!(FreeHighThreshold::BatchPlusHalfHighMin.pages(i32::MAX, 2), i32::MAX);
    }

    #[test]
    fn baselines_across_series() {
        // 4.20 → 5.17: the 5.14 PCP work, 5.0 boosting and NOFRAGMENT, page_frag via PCP.
        assert_delta(
            "frag-vanilla",
            "hpc-vanilla",
            &[
                "pcp_lists",
                "pcp_high",
                "reclaim_active_limit",
                "free_batch_sizing",
                "page_frag_free",
                "alloc_nofragment",
                "watermark_boost",
            ],
        );
        // 5.18 → 6.6: one THP list and trylock (6.0), no prefetch (5.18), PGFREE in pages,
        // NOFRAGMENT only below pageblock order.
        assert_delta(
            "hpc-limit",
            "tune-base",
            &["pcp_lists", "pcp_locking", "bulk_free_prefetch", "pgfree_unit", "alloc_nofragment"],
        );
    }

    #[test]
    fn every_switch_round_trips_every_value() {
        let mut policy = Policy::modern();
        for &key in Policy::KEYS {
            let values: Vec<SwitchValue> = match Policy::accepted(key).unwrap() {
                Accepted::Bool => vec![true.into(), false.into()],
                Accepted::Names(names) => names.iter().map(|&n| n.into()).collect(),
                other => panic!("{key}: unexpected {other:?}"),
            };
            for v in values {
                policy.set(key, v.clone()).unwrap();
                assert_eq!(policy.get(key), Some(v.clone()), "{key}");
                assert!(policy.switches().any(|(k, got)| k == key && got == v));
            }
        }
        assert_eq!(Policy::modern().switches().count(), Policy::KEYS.len());
        // Every preset survives a trip through its own key/value listing.
        for preset in PRESETS {
            let mut q = Policy::modern();
            for (k, v) in preset.policy.switches() {
                q.set(k, v).unwrap();
            }
            assert_eq!(q, preset.policy, "{}", preset.name);
        }
    }

    #[test]
    fn enum_names_are_kebab_case_and_round_trip() {
        fn check<T: SwitchType + PartialEq + fmt::Debug>(
            all: &[T],
            names: &[&str],
            name: fn(T) -> &'static str,
        ) {
            assert_eq!(all.len(), names.len());
            for (&v, &n) in all.iter().zip(names) {
                assert_eq!(name(v), n);
                assert!(n
                    .bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-'));
                assert_eq!(T::from_value("k", &SwitchValue::from(n)), Ok(v));
            }
        }
        check(PcpLists::ALL, PcpLists::NAMES, PcpLists::name);
        check(PcpLocking::ALL, PcpLocking::NAMES, PcpLocking::name);
        check(PcpHigh::ALL, PcpHigh::NAMES, PcpHigh::name);
        check(ReclaimActiveLimit::ALL, ReclaimActiveLimit::NAMES, ReclaimActiveLimit::name);
        check(HighDecay::ALL, HighDecay::NAMES, HighDecay::name);
        check(FreeBatchSizing::ALL, FreeBatchSizing::NAMES, FreeBatchSizing::name);
        check(FreeHigh::ALL, FreeHigh::NAMES, FreeHigh::name);
        check(FreeHighBatch::ALL, FreeHighBatch::NAMES, FreeHighBatch::name);
        check(FreeHighDrain::ALL, FreeHighDrain::NAMES, FreeHighDrain::name);
        check(RefillSizing::ALL, RefillSizing::NAMES, RefillSizing::name);
        check(BulkFree::ALL, BulkFree::NAMES, BulkFree::name);
        check(BuddyPrefetch::ALL, BuddyPrefetch::NAMES, BuddyPrefetch::name);
        check(PgfreeUnit::ALL, PgfreeUnit::NAMES, PgfreeUnit::name);
        check(PageFragFree::ALL, PageFragFree::NAMES, PageFragFree::name);
        check(NoFragment::ALL, NoFragment::NAMES, NoFragment::name);
        for &key in Policy::KEYS.iter().chain(Tunables::KEYS) {
            assert!(key.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_'));
        }
    }

    #[test]
    fn policy_errors_name_the_key_and_the_accepted_values() {
        let mut policy = Policy::modern();
        let err = policy.set("free_hihg", "off".into()).unwrap_err();
        assert_eq!(
            err,
            PolicyError::UnknownKey { key: "free_hihg".into(), known: KeySet::Switches }
        );
        let msg = err.to_string();
        assert!(msg.contains("free_hihg") && msg.contains("free_high_batch"), "{msg}");

        let err = policy.set("free_high", "sometimes".into()).unwrap_err();
        assert_eq!(err.key(), "free_high");
        assert!(matches!(err, PolicyError::OutOfRange { accepted: Accepted::Names(n), .. }
            if n == FreeHigh::NAMES));
        let msg = err.to_string();
        assert!(msg.contains("off, any-high-order, consecutive"), "{msg}");

        let err = policy.set("zone_below_high", SwitchValue::Int(1)).unwrap_err();
        assert_eq!(
            err,
            PolicyError::WrongKind {
                key: "zone_below_high",
                got: ValueKind::Int,
                accepted: Accepted::Bool
            }
        );
        let err = policy.set("bulk_free", true.into()).unwrap_err();
        assert!(matches!(
            err,
            PolicyError::WrongKind { key: "bulk_free", got: ValueKind::Bool, .. }
        ));
        // A tunable is not a switch.
        assert!(matches!(
            policy.set("pcp_batch_scale_max", SwitchValue::Int(5)),
            Err(PolicyError::UnknownKey { known: KeySet::Switches, .. })
        ));
        assert_eq!(policy, Policy::modern(), "failed sets change nothing");
    }

    #[test]
    fn tunables_round_trip_every_key() {
        let mut t = Tunables::default();
        t.validate().unwrap();
        let cases: Vec<(&str, SwitchValue)> = vec![
            ("percpu_pagelist_high_fraction", SwitchValue::Int(0)),
            ("percpu_pagelist_high_fraction", SwitchValue::Int(8)),
            ("pcp_batch_scale_max", SwitchValue::Int(0)),
            ("pcp_batch_scale_max", SwitchValue::Int(6)),
            ("decay_period_ticks", SwitchValue::Int(10)),
            ("min_free_kbytes", SwitchValue::Int(67_584)),
            ("min_free_kbytes", "default".into()),
            ("watermark_scale_factor", SwitchValue::Int(3000)),
            ("watermark_boost_factor", SwitchValue::Int(0)),
            ("lowmem_reserve_ratio", vec![256, 256, 32, 0].into()),
        ];
        for (key, v) in cases {
            t.set(key, v.clone()).unwrap();
            assert_eq!(t.get(key), Some(v), "{key}");
            t.validate().unwrap();
        }
        assert_eq!(t.values().count(), Tunables::KEYS.len());
        for &key in Tunables::KEYS {
            assert!(Tunables::accepted(key).is_some(), "{key}");
            let v = t.get(key).unwrap();
            let mut u = Tunables::DEFAULT;
            u.set(key, v.clone()).unwrap();
            assert_eq!(u.get(key), Some(v));
        }
        // The sysctl stores ratios below 1 as 0.
        t.set("lowmem_reserve_ratio", vec![-5, 0, 1, 7].into()).unwrap();
        assert_eq!(t.lowmem_reserve_ratio, [0, 0, 1, 7]);
    }

    #[test]
    fn tunables_refuse_out_of_range_and_wrong_kind() {
        let mut t = Tunables::default();
        for (key, v) in [
            ("percpu_pagelist_high_fraction", SwitchValue::Int(7)),
            ("percpu_pagelist_high_fraction", SwitchValue::Int(-1)),
            ("pcp_batch_scale_max", SwitchValue::Int(7)),
            ("decay_period_ticks", SwitchValue::Int(0)),
            ("min_free_kbytes", SwitchValue::Int(-1)),
            ("min_free_kbytes", "auto".into()),
            ("watermark_scale_factor", SwitchValue::Int(0)),
            ("watermark_scale_factor", SwitchValue::Int(3001)),
            ("watermark_boost_factor", SwitchValue::Int(INT_MAX + 1)),
            ("lowmem_reserve_ratio", vec![256, 256, 32].into()),
            ("lowmem_reserve_ratio", vec![256, 256, 32, INT_MAX + 1].into()),
        ] {
            let err = t.set(key, v.clone()).unwrap_err();
            assert!(matches!(err, PolicyError::OutOfRange { .. }), "{key} = {v}: {err:?}");
            assert_eq!(err.key(), key);
            assert!(err.to_string().contains(key));
        }
        for (key, v) in [
            ("pcp_batch_scale_max", SwitchValue::from("5")),
            ("lowmem_reserve_ratio", SwitchValue::Int(32)),
            ("watermark_boost_factor", SwitchValue::Bool(true)),
        ] {
            assert!(matches!(t.set(key, v), Err(PolicyError::WrongKind { .. })), "{key}");
        }
        assert!(matches!(
            t.set("free_high", "off".into()),
            Err(PolicyError::UnknownKey { known: KeySet::Tunables, .. })
        ));
        assert_eq!(t, Tunables::DEFAULT, "failed sets change nothing");
        let msg = t.set("watermark_scale_factor", SwitchValue::Int(0)).unwrap_err().to_string();
        assert!(msg.contains("1..=3000"), "{msg}");
    }

    #[test]
    fn validate_names_the_field() {
        let cases: [(&str, Tunables); 5] = [
            (
                "percpu_pagelist_high_fraction",
                Tunables { percpu_pagelist_high_fraction: 4, ..Tunables::DEFAULT },
            ),
            ("pcp_batch_scale_max", Tunables { pcp_batch_scale_max: 7, ..Tunables::DEFAULT }),
            ("decay_period_ticks", Tunables { decay_period_ticks: 0, ..Tunables::DEFAULT }),
            ("watermark_scale_factor", Tunables { watermark_scale_factor: 0, ..Tunables::DEFAULT }),
            (
                "lowmem_reserve_ratio",
                Tunables { lowmem_reserve_ratio: [256, 256, 1 << 40, 0], ..Tunables::DEFAULT },
            ),
        ];
        for (key, t) in cases {
            let err = t.validate().unwrap_err();
            assert_eq!(err.key(), key);
        }
        let t = Tunables { min_free_kbytes: Some(1 << 40), ..Tunables::DEFAULT };
        assert_eq!(t.validate().unwrap_err().key(), "min_free_kbytes");
    }

    #[test]
    fn set_key_dispatches_to_switches_and_tunables() {
        let mut policy = Policy::modern();
        let mut t = Tunables::default();
        set_key(&mut policy, &mut t, "high_decay", "four-fifths".into()).unwrap();
        set_key(&mut policy, &mut t, "pcp_batch_scale_max", SwitchValue::Int(3)).unwrap();
        assert_eq!(policy.high_decay, HighDecay::FourFifths);
        assert_eq!(t.pcp_batch_scale_max, 3);
        let err = set_key(&mut policy, &mut t, "nope", SwitchValue::Int(1)).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("high_decay") && msg.contains("min_free_kbytes"), "{msg}");
    }

    #[test]
    fn pcp_list_layouts() {
        for layout in PcpLists::ALL.iter().copied() {
            assert!(layout.nr_lists() <= MAX_NR_PCP_LISTS);
            // pindex is a bijection from cached (order, type) classes onto 0..nr_lists.
            let mut hit = [false; MAX_NR_PCP_LISTS];
            for order in Order::all() {
                for mt in 0..PCP_TYPES {
                    match layout.pindex(order, mt) {
                        Some(i) => {
                            assert!(layout.caches_order(order));
                            assert_eq!(layout.pindex_order(i), Some(order));
                            hit[i] = true;
                        }
                        None => assert!(!layout.caches_order(order)),
                    }
                }
            }
            assert!(hit[..layout.nr_lists()].iter().all(|&h| h), "{layout}");
            assert_eq!(layout.pindex_order(layout.nr_lists()), None);
            assert_eq!(layout.pindex(Order(0), PCP_TYPES), None);
        }
        assert_eq!(PcpLists::Order0Only.nr_lists(), 3);
        assert_eq!(PcpLists::ThpPerMigratetype.nr_lists(), 15);
        assert_eq!(PcpLists::ThpShared.nr_lists(), 13);
        assert_eq!(PcpLists::ThpMovableSplit.nr_lists(), 14);
        assert_eq!(PcpLists::ThpPerMigratetype.pindex(Order(9), 2), Some(14));
        assert_eq!(PcpLists::ThpShared.pindex(Order(9), 1), Some(12));
        assert_eq!(PcpLists::ThpMovableSplit.pindex(Order(9), 1), Some(13));
        assert_eq!(PcpLists::ThpMovableSplit.pindex(Order(9), 2), Some(12));
        assert_eq!(PcpLists::ThpShared.pindex(Order(3), 1), Some(10));
        assert!(!PcpLists::Order0Only.caches_order(Order(3)));
        assert!(!PcpLists::ThpShared.caches_order(Order(4)));
    }

    #[test]
    fn free_high_batch_rules() {
        // batch 63: v3 needs an LLC slice above 189 pages, v1 a data-slice sum above 252.
        let kib = 1024;
        assert!(!FreeHighBatch::LlcSliceOver3Batch.flag(0, 189 * 4 * kib, 63));
        assert!(FreeHighBatch::LlcSliceOver3Batch.flag(0, 190 * 4 * kib, 63));
        assert!(!FreeHighBatch::DataSlicesOver4Batch.flag(252 * 4 * kib, u64::MAX, 63));
        assert!(FreeHighBatch::DataSlicesOver4Batch.flag(253 * 4 * kib, 0, 63));
        assert!(!FreeHighBatch::Off.flag(u64::MAX, u64::MAX, 1));
    }

    #[test]
    fn nofragment_floor() {
        assert!(!NoFragment::Off.is_on());
        assert!(NoFragment::AllOrders.floors(Order(10)));
        assert!(!NoFragment::BelowPageblock.floors(Order(9)));
        assert!(NoFragment::BelowPageblock.floors(Order(8)));
    }

    /// One markdown matrix: a row per switch, a column per preset; a value that differs from
    /// the first column (the baseline, as in the seeds' tables) is bold.
    fn matrix(names: &[&str]) -> String {
        let mut out = String::from("| switch |");
        for n in names {
            out += &format!(" `{n}` |");
        }
        out += "\n|---|";
        for _ in names {
            out += "---|";
        }
        out.push('\n');
        for &key in Policy::KEYS {
            out += &format!("| `{key}` |");
            let base = p(names[0]).get(key).unwrap();
            for n in names {
                let v = p(n).get(key).unwrap();
                let text = match &v {
                    SwitchValue::Str(s) => s.clone(),
                    other => other.to_string(),
                };
                if v != base {
                    out += &format!(" **{text}** |");
                } else {
                    out += &format!(" {text} |");
                }
            }
            out.push('\n');
        }
        out
    }

    const MATRIX_GROUPS: [&[&str]; 5] = [
        &[
            "hpc-vanilla",
            "hpc-revert",
            "hpc-opt-v1",
            "hpc-opt",
            "hpc-limit-v1",
            "hpc-limit",
            "modern",
        ],
        &["tune-base", "tune-p1", "tune-p3", "tune-p5", "tune-p7", "tune-p9", "tune-p10", "modern"],
        &["frag-vanilla", "frag-lowzone", "pfrag-buddy", "pfrag-pcp", "hpc-vanilla"],
        &["modern", "fhigh-v2", "fhigh"],
        &["frag-vanilla", "legacy-4.18"],
    ];

    #[test]
    fn docs_matrices_match_the_code() {
        let doc = include_str!("../../../docs/presets.md");
        for group in MATRIX_GROUPS {
            let m = matrix(group);
            assert!(doc.contains(&m), "docs/presets.md lacks or has a stale matrix:\n{m}");
        }
        for &key in Policy::KEYS.iter().chain(Tunables::KEYS) {
            assert!(doc.contains(&format!("### `{key}`")), "docs/presets.md lacks {key}");
        }
        for name in PRESET_NAMES {
            assert!(doc.contains(&format!("### `{name}`")), "docs/presets.md lacks {name}");
        }
    }

    /// `cargo test -- --ignored --nocapture print_matrices` prints the tables for the doc.
    #[test]
    #[ignore]
    fn print_matrices() {
        for group in MATRIX_GROUPS {
            std::println!("{}", matrix(group));
        }
    }
}

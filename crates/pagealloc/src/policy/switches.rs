//! The switch types: one small `Copy` enum (or a bool) per mechanism, each variant a form of
//! it with the patch and release that introduced it.

#[allow(clippy::wildcard_imports)]
use super::*;

/// What every switch type can do for the key/value interface.
pub(super) trait SwitchType: Copy {
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
    /// How the callers of free_pcppages_bulk that may free far more than a batch (the
    /// free-path flush once `count ≥ high`, and the periodic decay of `high`) split their
    /// work: in one bulk free under one zone-lock hold, or in chunks of at most `batch` pages
    /// with the zone lock released between chunks, so CPUs waiting for it get it in between.
    /// Joshua Hahn, "mm/page_alloc: Batch callers of free_pcppages_bulk" (v1 19 Sep 2025 … v5
    /// 14 Oct 2025); merged for 6.19 (0acc67c4030c, fc4b909c368f). Every batched form chunks
    /// the decay (`count − high` pages) the same way; they differ in when the flush stops. The
    /// pageset lock stays held across chunks here (the kernel drops it too; docs/presets.md).
    pub enum BulkFreeCallers {
        /// One bulk free of everything the caller decided on. Kernels up to 6.18.
        Whole => "whole",
        /// Flush in chunks; after each chunk the flush threshold is recomputed (`nr_pcp_high`
        /// again, with its side effects on `high`) and the flush stops once `count` is below
        /// it. Explicit drains (`drain_pages_zone`) chunk by `batch` instead of `batch << S`
        /// when [`Policy::drain_pages_chunked`] is on. v1 4/4 and 2/4
        /// `<20250919195223.1560636-5-joshua.hahnjy@gmail.com>`, `<…-3-…>`, and v2 (the same
        /// behaviour, `<20250924204409.1706524-5-joshua.hahnjy@gmail.com>`); never merged.
        BatchedRecheckHighBatchDrains => "batched-recheck-high-batch-drains",
        /// As `batched-recheck-high-batch-drains` without the explicit-drain change (dropped:
        /// `drain_pages_zone` runs on every CPU from `drain_all_pages`). v3 3/3
        /// `<20251002204636.4016712-4-joshua.hahnjy@gmail.com>`; never merged.
        BatchedRecheckHigh => "batched-recheck-high",
        /// The threshold computed once; the flush stops when `nr_pcp_free`'s pages are freed
        /// or `count` drops below it, which frees less than `whole` (Vlastimil Babka's review
        /// of v4 3/3). v4 3/3 `<20251013190812.787205-4-joshua.hahnjy@gmail.com>`; never
        /// merged.
        BatchedStopBelowHigh => "batched-stop-below-high",
        /// The threshold computed once; the flush frees `nr_pcp_free`'s pages in full (or
        /// until the pageset is empty), exactly what `whole` frees. v5 3/3
        /// `<20251014145011.3427205-4-joshua.hahnjy@gmail.com>` with its fixlet; merged for
        /// 6.19.
        Batched => "batched",
    }
}

impl BulkFreeCallers {
    /// Whether the flush and the decay free in chunks of `batch` pages.
    pub const fn chunks(self) -> bool {
        !matches!(self, BulkFreeCallers::Whole)
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

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
//! Section numbers (§) in these files are those of `docs/preset-history.md`.
//!
//! Layout: the switch types in `switches.rs`, the presets in `presets.rs`, [`Tunables`] in
//! `tunables.rs`, the key/value interface's values and errors in `value.rs`; [`Policy`]
//! itself, declared with its key table from one field list, here.

mod presets;
mod switches;
#[cfg(test)]
mod tests;
mod tunables;
mod value;

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

pub use presets::*;
pub use switches::*;
pub use tunables::*;
pub use value::*;

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
        /// How the free-path flush and the decay of `high` split a large bulk free: whole
        /// (≤ 6.18) or in chunks of `batch` with the zone lock released between them (6.19;
        /// posted v1–v4 forms stop differently).
        pub bulk_free_callers: BulkFreeCallers,
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
        /// a CPU other than the one whose pageset handed it out goes home to that pageset
        /// instead of into the freeing CPU's. The freeing CPU collects such blocks for one
        /// owner on a pending chain in its own pageset and sends the chain to the owner's
        /// remote-free list in one lock-free push when it holds the pageset's `batch` pages
        /// (at most [`REMOTE_FREE_BATCH_MAX`]), before it frees for another owner, and at its
        /// tick; the list holds up to [`REMOTE_FREE_MAX`] pages (a chain that does not fit
        /// is freed locally). The owner takes the whole list back in one swap when its own
        /// list runs dry, at each tick and before a drain, and frees each block there as if
        /// it had freed it itself. Pages a producer-consumer pair passes between two CPUs
        /// then stay in the owner's pageset instead of crossing the zone lock twice.
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

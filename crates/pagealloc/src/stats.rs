//! Event counters, indexed by an enum (the kernel's `vm_event_item`, plus the counters the
//! seeds' tables need and the kernel lacks).
//!
//! Counters live next to the lock that serialises their updates (the zone lock for buddy-path
//! events) and are bumped with a relaxed load and store, not a locked read-modify-write: the
//! lock already excludes other writers, and readers may see a slightly old value, exactly like
//! the kernel's per-CPU counters. [`Counters::add_shared`] is for the few updates made with no
//! lock held.

use crate::sync::{AtomicU64, Ordering::Relaxed};
use core::fmt;

use crate::migratetype::MigrateType;
use crate::types::ZoneType;

macro_rules! counters {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// One event counter.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u16)]
        #[non_exhaustive]
        pub enum Counter {
            $($(#[$doc])* $variant,)*
        }

        impl Counter {
            /// Every counter, in `/proc/vmstat` print order.
            pub const ALL: &'static [Counter] = &[$(Counter::$variant,)*];
            /// Number of counters.
            pub const COUNT: usize = Counter::ALL.len();

            /// The name printed in vmstat-style output.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Counter::$variant => $name,)*
                }
            }
        }
    };
}

counters! {
    /// Pages allocated from ZONE_DMA (+2^order per allocation).
    PgallocDma => "pgalloc_dma",
    /// Pages allocated from ZONE_DMA32.
    PgallocDma32 => "pgalloc_dma32",
    /// Pages allocated from ZONE_NORMAL.
    PgallocNormal => "pgalloc_normal",
    /// Pages allocated from ZONE_MOVABLE.
    PgallocMovable => "pgalloc_movable",
    /// Pages freed (+2^order per freed block).
    Pgfree => "pgfree",
    /// Allocation requests that failed.
    AllocFail => "allocfail",
    /// Times the zone lock was taken.
    ZoneLockAcquire => "zone_lock_acquire",
    /// Nanoseconds the zone lock was held (only with a clock, `PageAllocator::with_clock`).
    ZoneLockHeldNs => "zone_lock_held_ns",
    /// Nanoseconds spent waiting to take the zone lock (only with a clock).
    ZoneLockWaitNs => "zone_lock_wait_ns",
    /// Fragmenting fallbacks (a pageblock of another type split) by requested type.
    ExtfragFragmentingUnmovable => "extfrag_fragmenting_unmovable",
    /// … requested MOVABLE.
    ExtfragFragmentingMovable => "extfrag_fragmenting_movable",
    /// … requested RECLAIMABLE.
    ExtfragFragmentingReclaimable => "extfrag_fragmenting_reclaimable",
    /// Non-fragmenting fallbacks (whole pageblocks taken) by requested type.
    ExtfragWholeUnmovable => "extfrag_whole_unmovable",
    /// … requested MOVABLE.
    ExtfragWholeMovable => "extfrag_whole_movable",
    /// … requested RECLAIMABLE.
    ExtfragWholeReclaimable => "extfrag_whole_reclaimable",
    /// Pageblocks relabelled by a fallback claim.
    PageblockClaim => "pageblock_claim",
    /// Pageblocks moved into the highatomic reserve.
    HighatomicReserve => "highatomic_reserve",
    /// Pageblocks given back from the highatomic reserve.
    HighatomicUnreserve => "highatomic_unreserve",
    /// Watermark boosts after fragmenting fallbacks.
    WatermarkBoost => "watermark_boost",
    /// Requests to wake the background reclaimer (a boosted zone's first allocation).
    KswapdWake => "kswapd_wake",
    /// Allocations that succeeded in a lower zone while ALLOC_NOFRAGMENT was set.
    NofragmentLowerZone => "nofragment_lower_zone",
    /// Zonelist walks restarted without ALLOC_NOFRAGMENT.
    NofragmentRetry => "nofragment_retry",
    /// Allocations that needed the slow path.
    Slowpath => "slowpath",
    /// drain_all_pages calls.
    DrainAll => "drain_all_pages",
    /// Allocations served from a per-CPU list.
    PcpAlloc => "pcp_alloc",
    /// Frees put on a per-CPU list.
    PcpFree => "pcp_free",
    /// Refills of an empty per-CPU list from the zone (rmqueue_bulk calls).
    PcpRefill => "pcp_refill",
    /// Pages moved from the zone into per-CPU lists ("alloc_zone" in seed 001's tables).
    PcpRefillPages => "pcp_refill_pages",
    /// Local allocations or frees that found their pageset locked and went to the zone.
    PcpTrylockFail => "pcp_trylock_fail",
    /// Blocks a CPU sent onto another CPU's remote-free list (`Policy::remote_free`), counted
    /// when its pending chain is published (a chain freed locally or drained is not).
    PcpRemoteFree => "pcp_remote_free",
    /// Blocks an owner took back from its remote-free list and freed into its pageset.
    PcpRemoteCollect => "pcp_remote_collect",
    /// Drains because a free took count to high.
    DrainHigh => "pcp_drain_high",
    /// Pages so drained.
    DrainHighPages => "pcp_drain_high_pages",
    /// Drains triggered by free_high (a CPU that mostly frees high-order blocks).
    DrainFreeHigh => "pcp_drain_free_high",
    /// Pages so drained.
    DrainFreeHighPages => "pcp_drain_free_high_pages",
    /// Drains of a free while the zone is below its high watermark (ZONE_BELOW_HIGH).
    DrainBelowHigh => "pcp_drain_below_high",
    /// Pages so drained.
    DrainBelowHighPages => "pcp_drain_below_high_pages",
    /// Drains of a free while kswapd balances the zone (ZONE_RECLAIM_ACTIVE).
    DrainReclaim => "pcp_drain_reclaim",
    /// Pages so drained.
    DrainReclaimPages => "pcp_drain_reclaim_pages",
    /// Drains by the periodic decay of high.
    DrainDecay => "pcp_drain_decay",
    /// Pages so drained.
    DrainDecayPages => "pcp_drain_decay_pages",
    /// Drains of an idle remote-node pageset (the expire countdown).
    DrainRemote => "pcp_drain_remote",
    /// Pages so drained.
    DrainRemotePages => "pcp_drain_remote_pages",
    /// Explicit drains (drain_pages, drain_all_pages).
    DrainExplicit => "pcp_drain_explicit",
    /// Pages so drained.
    DrainExplicitPages => "pcp_drain_explicit_pages",
    /// Pages compaction moved (the owner's `Migrate` said yes).
    PgmigrateSuccess => "pgmigrate_success",
    /// Pages compaction isolated and could not move (the owner refused, or no target).
    PgmigrateFail => "pgmigrate_fail",
    /// Frames compaction's migrate scanner looked at (one per block head, one per frame
    /// that heads nothing).
    CompactMigrateScanned => "compact_migrate_scanned",
    /// Frames compaction's free scanner looked at, counted the same way.
    CompactFreeScanned => "compact_free_scanned",
    /// Pages isolated by either scanner (to move, or as free targets).
    CompactIsolated => "compact_isolated",
    /// Direct compactions run by allocations.
    CompactStall => "compact_stall",
    /// Direct compactions after which the allocation still failed.
    CompactFail => "compact_fail",
    /// Direct compactions after which the allocation succeeded.
    CompactSuccess => "compact_success",
    /// kcompactd runs started by a wakeup or by proactive compaction.
    CompactDaemonWake => "compact_daemon_wake",
    /// Of `compact_migrate_scanned`, those scanned by kcompactd.
    CompactDaemonMigrateScanned => "compact_daemon_migrate_scanned",
    /// Of `compact_free_scanned`, those scanned by kcompactd.
    CompactDaemonFreeScanned => "compact_daemon_free_scanned",
}

/// Why a pageset was drained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DrainReason {
    /// A free took count to high.
    High,
    /// free_high.
    FreeHigh,
    /// A free while ZONE_BELOW_HIGH.
    BelowHigh,
    /// A free while ZONE_RECLAIM_ACTIVE.
    Reclaim,
    /// Decay of high.
    Decay,
    /// Idle remote-node pageset.
    Remote,
    /// drain_pages / drain_all_pages.
    Explicit,
}

impl DrainReason {
    /// The (events, pages) counters of this reason.
    pub const fn counters(self) -> (Counter, Counter) {
        match self {
            DrainReason::High => (Counter::DrainHigh, Counter::DrainHighPages),
            DrainReason::FreeHigh => (Counter::DrainFreeHigh, Counter::DrainFreeHighPages),
            DrainReason::BelowHigh => (Counter::DrainBelowHigh, Counter::DrainBelowHighPages),
            DrainReason::Reclaim => (Counter::DrainReclaim, Counter::DrainReclaimPages),
            DrainReason::Decay => (Counter::DrainDecay, Counter::DrainDecayPages),
            DrainReason::Remote => (Counter::DrainRemote, Counter::DrainRemotePages),
            DrainReason::Explicit => (Counter::DrainExplicit, Counter::DrainExplicitPages),
        }
    }
}

impl Counter {
    /// The PGALLOC counter of a zone type.
    pub const fn pgalloc(zone: ZoneType) -> Counter {
        match zone {
            ZoneType::Dma => Counter::PgallocDma,
            ZoneType::Dma32 => Counter::PgallocDma32,
            ZoneType::Normal => Counter::PgallocNormal,
            ZoneType::Movable => Counter::PgallocMovable,
        }
    }

    /// The extfrag counter for a fallback by `alloc_mt` (a PCP type), fragmenting or not.
    pub const fn extfrag(alloc_mt: MigrateType, fragmenting: bool) -> Counter {
        match (alloc_mt, fragmenting) {
            (MigrateType::Movable, true) => Counter::ExtfragFragmentingMovable,
            (MigrateType::Reclaimable, true) => Counter::ExtfragFragmentingReclaimable,
            (_, true) => Counter::ExtfragFragmentingUnmovable,
            (MigrateType::Movable, false) => Counter::ExtfragWholeMovable,
            (MigrateType::Reclaimable, false) => Counter::ExtfragWholeReclaimable,
            (_, false) => Counter::ExtfragWholeUnmovable,
        }
    }
}

/// A set of counters owned by one lock.
#[derive(Debug)]
pub struct Counters {
    v: [AtomicU64; Counter::COUNT],
}

impl Default for Counters {
    fn default() -> Counters {
        Counters { v: core::array::from_fn(|_| AtomicU64::new(0)) }
    }
}

impl Counters {
    /// Add `n`; the caller holds the lock that owns this set.
    #[inline(always)]
    pub fn add_locked(&self, c: Counter, n: u64) {
        let slot = &self.v[c as usize];
        slot.store(slot.load(Relaxed).wrapping_add(n), Relaxed);
    }

    /// Add `n` with no lock held (a locked read-modify-write).
    #[inline]
    pub fn add_shared(&self, c: Counter, n: u64) {
        self.v[c as usize].fetch_add(n, Relaxed);
    }

    /// Current value.
    #[inline]
    pub fn get(&self, c: Counter) -> u64 {
        self.v[c as usize].load(Relaxed)
    }

    /// Add every counter into `into`.
    pub fn fold_into(&self, into: &mut VmEvents) {
        for (i, slot) in self.v.iter().enumerate() {
            into.0[i] = into.0[i].wrapping_add(slot.load(Relaxed));
        }
    }
}

/// A snapshot of all counters, summed over every owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VmEvents(pub [u64; Counter::COUNT]);

impl Default for VmEvents {
    fn default() -> VmEvents {
        VmEvents([0; Counter::COUNT])
    }
}

impl VmEvents {
    /// One counter's value.
    pub fn get(&self, c: Counter) -> u64 {
        self.0[c as usize]
    }

    /// Counter-wise difference `self - earlier`.
    pub fn since(&self, earlier: &VmEvents) -> VmEvents {
        VmEvents(core::array::from_fn(|i| self.0[i].wrapping_sub(earlier.0[i])))
    }

    /// `(name, value)` pairs in print order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        Counter::ALL.iter().map(|c| (c.name(), self.get(*c)))
    }
}

/// A counter is its `/proc/vmstat` name (`"pgfree"`).
#[cfg(feature = "serde")]
impl serde::Serialize for Counter {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Counter {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Counter, D::Error> {
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = Counter;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a counter's /proc/vmstat name")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Counter, E> {
                Counter::ALL
                    .iter()
                    .copied()
                    .find(|c| c.name() == v)
                    .ok_or_else(|| E::unknown_variant(v, &["a /proc/vmstat counter name"]))
            }
        }
        d.deserialize_str(Name)
    }
}

/// A snapshot is a map from each counter's name to its value, in print order, as
/// `/proc/vmstat` reads; counters a map leaves out read 0, names it does not know are an error.
#[cfg(feature = "serde")]
impl serde::Serialize for VmEvents {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for VmEvents {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<VmEvents, D::Error> {
        struct Map;
        impl<'de> serde::de::Visitor<'de> for Map {
            type Value = VmEvents;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map from counter names to values")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<VmEvents, A::Error> {
                let mut ev = VmEvents::default();
                while let Some((c, v)) = m.next_entry::<Counter, u64>()? {
                    ev.0[c as usize] = v;
                }
                Ok(ev)
            }
        }
        d.deserialize_map(Map)
    }
}

impl fmt::Display for VmEvents {
    /// `/proc/vmstat` layout: `name value` per line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, v) in self.iter() {
            writeln!(f, "{name} {v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_fold_and_diff() {
        let a = Counters::default();
        a.add_locked(Counter::Pgfree, 3);
        a.add_shared(Counter::Pgfree, 2);
        let mut snap = VmEvents::default();
        a.fold_into(&mut snap);
        assert_eq!(snap.get(Counter::Pgfree), 5);
        let before = snap;
        a.add_locked(Counter::pgalloc(ZoneType::Dma32), 8);
        let mut now = VmEvents::default();
        a.fold_into(&mut now);
        assert_eq!(now.since(&before).get(Counter::PgallocDma32), 8);
        assert_eq!(now.since(&before).get(Counter::Pgfree), 0);
    }

    #[test]
    fn names_are_unique() {
        for (i, a) in Counter::ALL.iter().enumerate() {
            for b in &Counter::ALL[i + 1..] {
                assert_ne!(a.name(), b.name());
            }
        }
    }
}

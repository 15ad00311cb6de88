//! Statistics as the kernel names them: SLUB's event counters (`CONFIG_SLUB_STATS`, one file
//! each under `/sys/kernel/slab/<cache>/`) and the `/proc/slabinfo` row of a cache, with its
//! version 2.1 text rendering.

use alloc::string::String;
use core::fmt::Write;

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

macro_rules! slab_stats {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// One SLUB event counter (kernel `enum stat_item`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        #[non_exhaustive]
        pub enum SlabStat {
            $($(#[$doc])* $variant,)*
        }

        impl SlabStat {
            /// Every counter, in the kernel's order.
            pub const ALL: &'static [SlabStat] = &[$(SlabStat::$variant,)*];
            /// Number of counters.
            pub const COUNT: usize = SlabStat::ALL.len();

            /// The sysfs file name.
            pub const fn name(self) -> &'static str {
                match self {
                    $(SlabStat::$variant => $name,)*
                }
            }
        }
    };
}

slab_stats! {
    /// An allocation served from the CPU's own freelist of its active slab.
    AllocFastpath => "alloc_fastpath",
    /// An allocation that had to refill or replace the active slab.
    AllocSlowpath => "alloc_slowpath",
    /// A free into the freeing CPU's active slab.
    FreeFastpath => "free_fastpath",
    /// Any other free.
    FreeSlowpath => "free_slowpath",
    /// A free into a slab that is some CPU's active slab or on a per-CPU partial list
    /// (a "frozen" slab in kernels before 6.8): no list changes.
    FreeFrozen => "free_frozen",
    /// A free that put a full slab on its node's partial list (per-CPU partial lists off).
    FreeAddPartial => "free_add_partial",
    /// A free that emptied a slab on the node's partial list and took it off to discard it.
    FreeRemovePartial => "free_remove_partial",
    /// The active slab came from the node's partial list.
    AllocFromPartial => "alloc_from_partial",
    /// A new slab was allocated from the page allocator.
    AllocSlab => "alloc_slab",
    /// The active slab's remotely freed objects were taken as the CPU's freelist.
    AllocRefill => "alloc_refill",
    /// A slab was given back to the page allocator (`free_pages`).
    FreeSlab => "free_slab",
    /// An active slab was taken off its CPU by a flush (shrink, CPU going offline).
    CpuslabFlush => "cpuslab_flush",
    /// A deactivated slab had no free object: it belongs to no list until one is freed.
    DeactivateFull => "deactivate_full",
    /// A deactivated slab was empty and the node had `min_partial` slabs: discarded.
    DeactivateEmpty => "deactivate_empty",
    /// A deactivated slab went to the head of its node's partial list.
    DeactivateToHead => "deactivate_to_head",
    /// A deactivated slab went to the tail (it had objects freed by other CPUs).
    DeactivateToTail => "deactivate_to_tail",
    /// A deactivated slab had objects freed by other CPUs.
    DeactivateRemoteFrees => "deactivate_remote_frees",
    /// The active slab ran out and was dropped without taking the node's lock.
    DeactivateBypass => "deactivate_bypass",
    /// The preferred slab order failed and the order of one object was used.
    OrderFallback => "order_fallback",
    /// The active slab came from the CPU's partial list.
    CpuPartialAlloc => "cpu_partial_alloc",
    /// A free put a full slab on the freeing CPU's partial list.
    CpuPartialFree => "cpu_partial_free",
    /// A slab moved from the node's partial list to a CPU's along with the one taken.
    CpuPartialNode => "cpu_partial_node",
    /// A full per-CPU partial list was moved to the node lists.
    CpuPartialDrain => "cpu_partial_drain",
}

/// A cache's counters. Bumped with a relaxed atomic add: they order nothing, and a reader
/// may see a slightly old value, as the kernel's per-CPU counters allow.
#[derive(Debug)]
pub(crate) struct SlabStats([AtomicU64; SlabStat::COUNT]);

impl Default for SlabStats {
    fn default() -> SlabStats {
        SlabStats(core::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl SlabStats {
    /// Count one event.
    #[inline]
    pub(crate) fn inc(&self, s: SlabStat) {
        self.add(s, 1);
    }

    /// Count `n` events.
    #[inline]
    pub(crate) fn add(&self, s: SlabStat, n: u64) {
        self.0[s as usize].fetch_add(n, Relaxed);
    }

    /// One counter.
    #[inline]
    pub(crate) fn get(&self, s: SlabStat) -> u64 {
        self.0[s as usize].load(Relaxed)
    }

    /// A copy of every counter.
    pub(crate) fn snapshot(&self) -> StatSnapshot {
        StatSnapshot(core::array::from_fn(|i| self.0[i].load(Relaxed)))
    }
}

/// Every counter of a cache at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct StatSnapshot([u64; SlabStat::COUNT]);

impl StatSnapshot {
    /// Add `other`'s counts to these.
    pub(crate) fn add(&mut self, other: &StatSnapshot) {
        self.0.iter_mut().zip(other.0).for_each(|(a, b)| *a += b);
    }

    /// One counter.
    pub fn get(&self, s: SlabStat) -> u64 {
        self.0[s as usize]
    }

    /// (name, value) of every counter, in the kernel's order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        SlabStat::ALL.iter().map(|&s| (s.name(), self.get(s)))
    }
}

/// A cache's `/proc/slabinfo` row (kernel `struct slabinfo` as SLUB fills it).
///
/// SLUB counts as active every object not free on a node's partial list: objects free in
/// CPU slabs and on per-CPU partial lists are counted active, and every slab is an active
/// slab. The exact counts are [`SlabInfo::objects_in_use`] and [`SlabInfo::slabs_on_cpus`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlabInfo {
    /// The cache's name.
    pub name: String,
    /// `num_objs` minus the objects free on the node partial lists.
    pub active_objs: u64,
    /// Objects in all of the cache's slabs.
    pub num_objs: u64,
    /// The object stride in bytes (kernel `s->size`: the object size rounded to the
    /// alignment).
    pub objsize: u32,
    /// Objects in one slab of the preferred order.
    pub objperslab: u32,
    /// Frames in one slab of the preferred order.
    pub pagesperslab: u32,
    /// Equal to `num_slabs` under SLUB.
    pub active_slabs: u64,
    /// Slabs the cache holds.
    pub num_slabs: u64,
    /// Objects allocated and not freed (not a slabinfo field).
    pub objects_in_use: u64,
    /// Slabs active on a CPU or on a per-CPU partial list (not a slabinfo field).
    pub slabs_on_cpus: u64,
    /// Frames the cache's slabs hold (not a slabinfo field; slabs of the fallback order count
    /// their own size).
    pub pages: u64,
}

/// The `/proc/slabinfo` header, version 2.1 (two lines).
pub const SLABINFO_HEADER: &str = "slabinfo - version: 2.1\n\
# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> \
: tunables <limit> <batchcount> <sharedfactor> \
: slabdata <active_slabs> <num_slabs> <sharedavail>\n";

/// Append one cache's row in `/proc/slabinfo`'s layout. SLUB has no tunables and no shared
/// array, so those columns are 0.
pub fn write_slabinfo_row(out: &mut String, s: &SlabInfo) {
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "{:<17} {:>6} {:>6} {:>6} {:>4} {:>4} : tunables {:>4} {:>4} {:>4} : slabdata {:>6} {:>6} {:>6}",
        s.name,
        s.active_objs,
        s.num_objs,
        s.objsize,
        s.objperslab,
        s.pagesperslab,
        0,
        0,
        0,
        s.active_slabs,
        s.num_slabs,
        0
    );
}

/// `/proc/slabinfo` for the given rows: the header, then one row per cache in the order
/// given (the kernel prints the most recently created cache first).
pub fn render_slabinfo<'a>(rows: impl IntoIterator<Item = &'a SlabInfo>) -> String {
    let mut out = String::from(SLABINFO_HEADER);
    for r in rows {
        write_slabinfo_row(&mut out, r);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_in_order() {
        for (i, a) in SlabStat::ALL.iter().enumerate() {
            assert_eq!(*a as usize, i);
            for b in &SlabStat::ALL[i + 1..] {
                assert_ne!(a.name(), b.name());
            }
        }
    }

    #[test]
    fn a_row_has_the_kernels_columns() {
        let row = SlabInfo {
            name: "kmalloc-256".into(),
            active_objs: 3040,
            num_objs: 3200,
            objsize: 256,
            objperslab: 32,
            pagesperslab: 2,
            active_slabs: 100,
            num_slabs: 100,
            objects_in_use: 3000,
            slabs_on_cpus: 4,
            pages: 200,
        };
        let text = render_slabinfo([&row]);
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("slabinfo - version: 2.1"));
        assert!(lines.next().unwrap().starts_with("# name            <active_objs>"));
        assert_eq!(
            lines.next(),
            Some(
                "kmalloc-256         3040   3200    256   32    2 : tunables    0    0    0 \
                 : slabdata    100    100      0"
            )
        );
        assert_eq!(lines.next(), None);
    }
}

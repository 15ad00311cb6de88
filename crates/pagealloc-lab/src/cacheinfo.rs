//! Each CPU's cache description from sysfs (`/sys/devices/system/cpu/cpuN/cache/index*/`), the
//! input of the FREE_HIGH_BATCH decision (docs/kernel-reference.md §2.7): the last-level cache's
//! size over the CPUs sharing it, and (the v1 form) the sum over every data or unified cache of its
//! size over its sharers. `pagealloc calibrate` also reads the LLC's whole size, to size the
//! regions it times hot and cold page writes on. The reading is `pagealloc-heap`'s (`PageHeap`
//! gives its allocator the same description); the lab's questions about it are here.

use std::path::Path;

use pagealloc_heap::cacheinfo::caches;

/// The whole size in bytes of CPU `cpu`'s last-level cache (all its sharers' share, as
/// sysfs prints it), or `None` if sysfs does not describe it.
pub fn llc_bytes(root: &Path, cpu: u32) -> Option<u64> {
    last_level(root, cpu).map(|l| l.1)
}

/// CPU `cpu`'s data or unified cache of `level` (1 = L1d, 2 = L2, …) as (bytes, CPUs sharing
/// it), or `None` if sysfs does not describe it.
pub fn level(root: &Path, cpu: u32, level: u32) -> Option<(u64, u64)> {
    caches(root, cpu)?.iter().find(|c| c.level == level).map(|c| (c.bytes, c.sharers))
}

/// CPU `cpu`'s last-level cache as (level, bytes, CPUs sharing it).
pub fn last_level(root: &Path, cpu: u32) -> Option<(u32, u64, u64)> {
    let llc = caches(root, cpu)?.into_iter().max_by_key(|c| c.level)?;
    Some((llc.level, llc.bytes, llc.sharers))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lab's questions agree with the caches the reader lists (its parsing is tested in
    /// `pagealloc-heap` against a made-up sysfs tree): on this machine's sysfs, when it has
    /// one, and on a root that describes nothing.
    #[test]
    fn answers_agree_with_the_listed_caches() {
        let root = Path::new(pagealloc_heap::cacheinfo::SYSFS_CPU_ROOT);
        let Some(all) = caches(root, 0).filter(|c| !c.is_empty()) else {
            eprintln!("skipped: no cache description in sysfs here");
            return;
        };
        let llc = all.iter().max_by_key(|c| c.level).unwrap();
        assert_eq!(last_level(root, 0), Some((llc.level, llc.bytes, llc.sharers)));
        assert_eq!(llc_bytes(root, 0), Some(llc.bytes));
        for c in &all {
            let (bytes, sharers) = level(root, 0, c.level).unwrap();
            assert!(bytes > 0 && sharers >= 1, "L{}", c.level);
        }
        let nowhere = Path::new("/nonexistent");
        assert_eq!((llc_bytes(nowhere, 0), level(nowhere, 0, 1)), (None, None));
        assert_eq!(last_level(nowhere, 0), None);
    }
}

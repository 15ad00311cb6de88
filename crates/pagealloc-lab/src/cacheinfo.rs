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
    use std::fs;

    use super::*;

    fn leaf(root: &Path, cpu: u32, i: u32, level: u32, kind: &str, size: &str, shared: &str) {
        let d = root.join(format!("cpu{cpu}/cache/index{i}"));
        fs::create_dir_all(&d).unwrap();
        for (f, v) in [
            ("level", level.to_string()),
            ("type", kind.into()),
            ("size", size.into()),
            ("shared_cpu_list", shared.into()),
        ] {
            fs::write(d.join(f), format!("{v}\n")).unwrap();
        }
    }

    #[test]
    fn llc_and_levels_from_a_sysfs_tree() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        leaf(root, 0, 0, 1, "Data", "32K", "0-1");
        leaf(root, 0, 1, 1, "Instruction", "32K", "0-1");
        leaf(root, 0, 2, 2, "Unified", "1024K", "0-1");
        leaf(root, 0, 3, 3, "Unified", "32M", "0-15");
        assert_eq!(llc_bytes(root, 0), Some(32 << 20));
        assert_eq!(level(root, 0, 2), Some((1 << 20, 2)));
        assert_eq!(level(root, 0, 1), Some((32 << 10, 2)), "the data L1, not the instruction one");
        assert_eq!(last_level(root, 0), Some((3, 32 << 20, 16)));
        assert!(llc_bytes(root, 1).is_none());
    }
}

//! Each CPU's caches as sysfs describes them (`cpuN/cache/index*/` under
//! [`SYSFS_CPU_ROOT`]): the input of the allocator's FREE_HIGH_BATCH decision, the last-level
//! cache's size over the CPUs sharing it, and (its first form) the sum over every data or
//! unified cache of its size over its sharers. [`PageHeap`](crate::PageHeap) reads it for
//! every CPU when it is built.
//!
//! ```
//! use std::path::Path;
//! use pagealloc_heap::cacheinfo;
//!
//! let root = Path::new(cacheinfo::SYSFS_CPU_ROOT);
//! if let Some(caches) = cacheinfo::caches(root, 0) {
//!     for c in caches {
//!         println!("L{}: {} bytes shared by {} CPUs", c.level, c.bytes, c.sharers);
//!     }
//! }
//! ```

use std::fs;
use std::path::Path;

use pagealloc::CacheInfo;

/// Where Linux describes the CPUs.
pub const SYSFS_CPU_ROOT: &str = "/sys/devices/system/cpu";

/// One data or unified cache of a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Cache {
    /// 1 for L1, 2 for L2, …
    pub level: u32,
    /// The whole cache's size (what all its sharers share), bytes.
    pub bytes: u64,
    /// CPUs sharing it, at least 1.
    pub sharers: u64,
}

/// The allocator's description of CPU `cpu`'s caches under a sysfs CPU root (normally
/// [`SYSFS_CPU_ROOT`]), or `None` if the files are missing or unreadable.
pub fn read(root: &Path, cpu: u32) -> Option<CacheInfo> {
    let caches = caches(root, cpu)?;
    let llc = caches.iter().max_by_key(|c| c.level)?;
    Some(CacheInfo {
        llc_slice_bytes: llc.bytes / llc.sharers,
        data_slices_bytes: caches.iter().map(|c| c.bytes / c.sharers).sum(),
    })
}

/// Every data or unified cache of CPU `cpu` under a sysfs CPU root, in directory order (an
/// instruction cache is left out), or `None` if the CPU's cache directory cannot be read. An
/// entry whose files are missing or do not parse is skipped.
pub fn caches(root: &Path, cpu: u32) -> Option<Vec<Cache>> {
    let dir = root.join(format!("cpu{cpu}/cache"));
    let mut caches = Vec::new();
    for entry in fs::read_dir(&dir).ok()?.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with("index") {
            continue;
        }
        let p = entry.path();
        let field = |f: &str| fs::read_to_string(p.join(f)).ok().map(|s| s.trim().to_string());
        let (Some(level), Some(kind), Some(size), Some(shared)) =
            (field("level"), field("type"), field("size"), field("shared_cpu_list"))
        else {
            continue;
        };
        let (Ok(level), Some(bytes), Some(sharers)) =
            (level.parse::<u32>(), parse_size(&size), count_cpus(&shared))
        else {
            continue;
        };
        if kind == "Data" || kind == "Unified" {
            caches.push(Cache { level, bytes, sharers: sharers.max(1) });
        }
    }
    Some(caches)
}

/// `32K`, `1024K`, `32M`, or plain bytes.
fn parse_size(s: &str) -> Option<u64> {
    let (num, mult) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 1 << 10),
        b'M' => (&s[..s.len() - 1], 1 << 20),
        b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mult)
}

/// Number of CPUs in a list like `0-3,8,10-11`.
fn count_cpus(list: &str) -> Option<u64> {
    let mut n = 0;
    for part in list.split(',').filter(|p| !p.is_empty()) {
        n += match part.split_once('-') {
            Some((a, b)) => b.parse::<u64>().ok()?.checked_sub(a.parse::<u64>().ok()?)? + 1,
            None => {
                part.parse::<u64>().ok()?;
                1
            }
        };
    }
    Some(n)
}

#[cfg(test)]
mod tests {
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
    fn llc_slice_and_data_slices_from_a_sysfs_tree() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        leaf(root, 0, 0, 1, "Data", "32K", "0-1");
        leaf(root, 0, 1, 1, "Instruction", "32K", "0-1");
        leaf(root, 0, 2, 2, "Unified", "1024K", "0-1");
        leaf(root, 0, 3, 3, "Unified", "32M", "0-15");
        let ci = read(root, 0).unwrap();
        assert_eq!(ci.llc_slice_bytes, (32 << 20) / 16);
        assert_eq!(ci.data_slices_bytes, (32 << 10) / 2 + (1 << 20) / 2 + (32 << 20) / 16);
        let mut found = caches(root, 0).unwrap();
        found.sort_by_key(|c| c.level);
        let found: Vec<_> = found.iter().map(|c| (c.level, c.bytes, c.sharers)).collect();
        assert_eq!(found, [(1, 32 << 10, 2), (2, 1 << 20, 2), (3, 32 << 20, 16)]);
        assert!(read(root, 1).is_none());
        assert!(caches(root, 1).is_none());
    }

    #[test]
    fn list_and_size_parsing() {
        assert_eq!(count_cpus("0-3,8,10-11"), Some(7));
        assert_eq!(count_cpus("5"), Some(1));
        assert_eq!(count_cpus("3-1"), None);
        assert_eq!(parse_size("512K"), Some(512 << 10));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("x"), None);
    }

    /// This machine's sysfs, when it has one: an LLC slice is found and is positive.
    #[test]
    fn this_machine() {
        match read(Path::new(SYSFS_CPU_ROOT), 0) {
            Some(ci) => {
                assert!(ci.llc_slice_bytes > 0 && ci.data_slices_bytes >= ci.llc_slice_bytes)
            }
            None => eprintln!("skipped: no cache description in sysfs here"),
        }
    }
}

//! Each CPU's cache description from sysfs (`/sys/devices/system/cpu/cpuN/cache/index*/`), the
//! input of the FREE_HIGH_BATCH decision (docs/kernel-reference.md §2.7): the last-level cache's
//! size over the CPUs sharing it, and (the v1 form) the sum over every data or unified cache of its
//! size over its sharers. `pagealloc calibrate` also reads the LLC's whole size, to size the
//! regions it times hot and cold page writes on.

use std::fs;
use std::path::Path;

use pagealloc::CacheInfo;

/// The cache description of CPU `cpu` under a sysfs CPU root (normally
/// `/sys/devices/system/cpu`), or `None` if the files are missing or unreadable.
pub fn read(root: &Path, cpu: u32) -> Option<CacheInfo> {
    let leaves = leaves(root, cpu)?;
    let &(_, llc_bytes, llc_sharers) = leaves.iter().max_by_key(|l| l.0)?;
    Some(CacheInfo {
        llc_slice_bytes: llc_bytes / llc_sharers,
        data_slices_bytes: leaves.iter().map(|&(_, b, n)| b / n).sum(),
    })
}

/// The whole size in bytes of CPU `cpu`'s last-level cache (all its sharers' share, as
/// sysfs prints it), or `None` if sysfs does not describe it.
pub fn llc_bytes(root: &Path, cpu: u32) -> Option<u64> {
    leaves(root, cpu)?.iter().max_by_key(|l| l.0).map(|l| l.1)
}

/// CPU `cpu`'s data or unified cache of `level` (1 = L1d, 2 = L2, …) as (bytes, CPUs sharing
/// it), or `None` if sysfs does not describe it.
pub fn level(root: &Path, cpu: u32, level: u32) -> Option<(u64, u64)> {
    leaves(root, cpu)?.iter().find(|l| l.0 == level).map(|l| (l.1, l.2))
}

/// CPU `cpu`'s last-level cache as (level, bytes, CPUs sharing it).
pub fn last_level(root: &Path, cpu: u32) -> Option<(u32, u64, u64)> {
    leaves(root, cpu)?.into_iter().max_by_key(|l| l.0)
}

/// Every data or unified cache of `cpu` as (level, bytes, CPUs sharing it).
fn leaves(root: &Path, cpu: u32) -> Option<Vec<(u32, u64, u64)>> {
    let dir = root.join(format!("cpu{cpu}/cache"));
    let mut leaves = Vec::new();
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
            leaves.push((level, bytes, sharers.max(1)));
        }
    }
    Some(leaves)
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
        assert_eq!(llc_bytes(root, 0), Some(32 << 20));
        assert_eq!(level(root, 0, 2), Some((1 << 20, 2)));
        assert_eq!(level(root, 0, 1), Some((32 << 10, 2)), "the data L1, not the instruction one");
        assert_eq!(last_level(root, 0), Some((3, 32 << 20, 16)));
        assert!(read(root, 1).is_none());
        assert!(llc_bytes(root, 1).is_none());
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
        let root = Path::new("/sys/devices/system/cpu");
        match read(root, 0) {
            Some(ci) => {
                assert!(ci.llc_slice_bytes > 0 && ci.data_slices_bytes >= ci.llc_slice_bytes)
            }
            None => eprintln!("skipped: no cache description in sysfs here"),
        }
    }
}

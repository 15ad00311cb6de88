//! `gfp_flags=` as the tracepoints print it, to [`Gfp`] and back.
//!
//! The kernel prints the flags with `__print_flags`: the names of a table of masks, most bits
//! first, joined by `|`, each mask taken out once printed; bits left over print as a hex
//! number, no flags as `none` (before 4.7: `GFP_NOWAIT`). Names changed over the years:
//! before 4.4 single flags printed without the leading `__` (`GFP_IO`, `GFP_WAIT`), since
//! then with it (`__GFP_IO`). Perf and trace-cmd on 6.x kernels whose print format they could
//! not evaluate print the number instead (`gfp_flags=0x140cca`).
//!
//! Reading, each name becomes the 6.x bits it stands for (our [`Gfp`] uses 6.x values), so a
//! 4.x `GFP_KERNEL` and a 6.x one replay alike. Names of flags that change nothing the model
//! looks at are known and kept as their 6.x bits where there are any; names we do not know
//! are returned for counting.

use pagealloc::Gfp;

/// 6.x bits our [`Gfp`] has no constant for, but that the kernel prints.
const WRITE: u32 = 0x1000;
const RETRY_MAYFAIL: u32 = 0x4000;
const NOFAIL: u32 = 0x8000;
const ACCOUNT: u32 = 0x40_0000;
const ZEROTAGS: u32 = 0x80_0000;

/// The kernel's name table (include/trace/events/mmflags.h, 6.x), in its order: composites
/// before the flags they contain, which is what makes the printed form unique. The names are
/// the kernel's; the order decides how [`to_names`] prints.
const TABLE: [(&str, u32); 35] = [
    ("GFP_TRANSHUGE", Gfp::TRANSHUGE.0),
    ("GFP_TRANSHUGE_LIGHT", Gfp::TRANSHUGE_LIGHT.0),
    ("GFP_HIGHUSER_MOVABLE", Gfp::HIGHUSER_MOVABLE.0),
    ("GFP_HIGHUSER", Gfp::USER.0 | Gfp::HIGHMEM.0),
    ("GFP_USER", Gfp::USER.0),
    ("GFP_KERNEL_ACCOUNT", Gfp::KERNEL.0 | ACCOUNT),
    ("GFP_KERNEL", Gfp::KERNEL.0),
    ("GFP_NOFS", Gfp::RECLAIM.0 | Gfp::IO.0),
    ("GFP_ATOMIC", Gfp::ATOMIC.0),
    ("GFP_NOIO", Gfp::RECLAIM.0),
    ("GFP_NOWAIT", Gfp::NOWAIT.0),
    ("GFP_DMA", Gfp::DMA.0),
    ("__GFP_HIGHMEM", Gfp::HIGHMEM.0),
    ("GFP_DMA32", Gfp::DMA32.0),
    ("__GFP_HIGH", Gfp::HIGH.0),
    ("__GFP_IO", Gfp::IO.0),
    ("__GFP_FS", Gfp::FS.0),
    ("__GFP_NOWARN", Gfp::NOWARN.0),
    ("__GFP_RETRY_MAYFAIL", RETRY_MAYFAIL),
    ("__GFP_NOFAIL", NOFAIL),
    ("__GFP_NORETRY", Gfp::NORETRY.0),
    ("__GFP_COMP", Gfp::COMP.0),
    ("__GFP_ZERO", Gfp::ZERO.0),
    ("__GFP_NOMEMALLOC", Gfp::NOMEMALLOC.0),
    ("__GFP_MEMALLOC", Gfp::MEMALLOC.0),
    ("__GFP_HARDWALL", Gfp::HARDWALL.0),
    ("__GFP_THISNODE", Gfp::THISNODE.0),
    ("__GFP_RECLAIMABLE", Gfp::RECLAIMABLE.0),
    ("__GFP_MOVABLE", Gfp::MOVABLE.0),
    ("__GFP_ACCOUNT", ACCOUNT),
    ("__GFP_WRITE", WRITE),
    ("__GFP_RECLAIM", Gfp::RECLAIM.0),
    ("__GFP_DIRECT_RECLAIM", Gfp::DIRECT_RECLAIM.0),
    ("__GFP_KSWAPD_RECLAIM", Gfp::KSWAPD_RECLAIM.0),
    ("__GFP_ZEROTAGS", ZEROTAGS),
];

/// Names of older kernels (and debug or arch options) that the 6.x table lacks, with the 6.x
/// bits of the same meaning. Written without the `GFP_` prefix and leading underscores.
const OLD: [(&str, u32); 17] = [
    // Before 4.4 __GFP_WAIT meant "may sleep", which also woke kswapd unless NO_KSWAPD.
    ("WAIT", Gfp::RECLAIM.0),
    // GFP_TEMPORARY (removed in 4.14) was GFP_KERNEL | __GFP_RECLAIMABLE.
    ("TEMPORARY", Gfp::KERNEL_RECLAIMABLE.0),
    ("IOFS", Gfp::IO.0 | Gfp::FS.0),
    ("COLD", 0),
    ("REPEAT", RETRY_MAYFAIL),
    ("NOTRACK", 0),
    ("NOTRACK_FALSE_POSITIVE", 0),
    ("OTHER_NODE", 0),
    ("NOACCOUNT", 0),
    // 4.4–6.2: __GFP_ATOMIC marked atomic callers; HIGH carries what the model uses of it.
    ("ATOMIC_FLAG", 0),
    ("NOLOCKDEP", 0),
    ("SKIP_ZERO", 0),
    ("SKIP_KASAN", 0),
    ("SKIP_KASAN_POISON", 0),
    ("SKIP_KASAN_UNPOISON", 0),
    ("NO_OBJ_EXT", 0),
    ("UNUSED", 0),
];

/// What reading a `gfp_flags=` value found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    /// The flags.
    pub gfp: Gfp,
    /// The value was a number, not names.
    pub numeric: bool,
    /// Names we do not know (left out of `gfp`).
    pub unknown: Vec<String>,
}

/// Read a printed `gfp_flags=` value: names joined by `|`, hex leftovers, `none`, or a number.
pub fn parse(value: &str) -> Parsed {
    let mut out = Parsed::default();
    let mut bits = 0u32;
    // 4.4 and earlier printed __GFP_NO_KSWAPD as "GFP_NO_KSWAPD": it takes the kswapd bit
    // back out of what the other names put in.
    let mut no_kswapd = false;
    for part in value.split('|').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            match u64::from_str_radix(hex, 16) {
                Ok(v) => {
                    // Only the 32 bits the 6.x layout uses; anything above is no GFP flag.
                    bits |= (v & 0xffff_ffff) as u32;
                    out.numeric = true;
                }
                Err(_) => out.unknown.push(part.to_string()),
            }
            continue;
        }
        if part.chars().all(|c| c.is_ascii_digit()) {
            match part.parse::<u32>() {
                Ok(v) => {
                    bits |= v;
                    out.numeric = true;
                }
                Err(_) => out.unknown.push(part.to_string()),
            }
            continue;
        }
        if part == "none" {
            continue;
        }
        let bare = part.trim_start_matches('_');
        let Some(name) = bare.strip_prefix("GFP_") else {
            out.unknown.push(part.to_string());
            continue;
        };
        if name == "NO_KSWAPD" {
            no_kswapd = true;
            continue;
        }
        // __GFP_ATOMIC and GFP_ATOMIC differ only in the underscores.
        let key = if name == "ATOMIC" && part.starts_with("__") { "ATOMIC_FLAG" } else { name };
        let found = TABLE
            .iter()
            .find(|(n, _)| n.trim_start_matches('_').strip_prefix("GFP_") == Some(key))
            .map(|&(_, b)| b)
            .or_else(|| OLD.iter().find(|(n, _)| *n == key).map(|&(_, b)| b));
        match found {
            Some(b) => bits |= b,
            None => out.unknown.push(part.to_string()),
        }
    }
    if no_kswapd {
        bits &= !Gfp::KSWAPD_RECLAIM.0;
    }
    out.gfp = Gfp(bits);
    out
}

/// Print flags the way a 6.x kernel does: table names, most bits first, leftovers in hex,
/// `none` for no flags.
pub fn to_names(gfp: Gfp) -> String {
    if gfp.0 == 0 {
        return "none".into();
    }
    let mut left = gfp.0;
    let mut names: Vec<String> = Vec::new();
    for &(name, mask) in &TABLE {
        if mask != 0 && left & mask == mask {
            names.push(name.into());
            left &= !mask;
        }
    }
    if left != 0 {
        names.push(format!("{left:#x}"));
    }
    names.join("|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_every_era_read_as_6x_bits() {
        // 6.x, as the kernel prints page-cache readahead.
        let p = parse("GFP_HIGHUSER_MOVABLE|__GFP_NOWARN|__GFP_NORETRY|__GFP_COMP");
        assert_eq!(p.gfp.0, Gfp::HIGHUSER_MOVABLE.0 | Gfp::NOWARN.0 | Gfp::NORETRY.0 | Gfp::COMP.0);
        assert!(p.unknown.is_empty() && !p.numeric);
        // A number, as trace-cmd prints flags on a 6.x kernel it cannot name them for: read
        // as 6.x bits (readahead's movable user page without __GFP_FS).
        let n = parse("0x152c4a");
        assert!(n.numeric);
        assert_eq!(n.gfp, Gfp(0x152c4a));
        assert_eq!(n.gfp.migratetype(), pagealloc::MigrateType::Movable);
        assert_eq!(parse(&to_names(n.gfp)).gfp, n.gfp);
        // 3.x: no double underscore, __GFP_WAIT, GFP_NO_KSWAPD taking kswapd out again.
        let old = parse("GFP_KERNEL|GFP_COMP|GFP_ZERO");
        assert_eq!(old.gfp.0, Gfp::KERNEL.0 | Gfp::COMP.0 | Gfp::ZERO.0);
        let thp = parse("GFP_HIGHUSER_MOVABLE|GFP_WAIT|GFP_NO_KSWAPD|GFP_COMP");
        assert!(!thp.gfp.contains(Gfp::KSWAPD_RECLAIM) && thp.gfp.contains(Gfp::DIRECT_RECLAIM));
        assert_eq!(parse("GFP_NOWAIT").gfp, Gfp::NOWAIT);
        assert_eq!(parse("none").gfp, Gfp(0));
        // The zone and migratetype the model derives survive every spelling.
        assert_eq!(parse("GFP_TEMPORARY").gfp.migratetype(), pagealloc::MigrateType::Reclaimable);
        assert_eq!(parse("GFP_DMA32|__GFP_ZERO").gfp.zone(), pagealloc::ZoneType::Dma32);
    }

    #[test]
    fn unknown_names_are_returned_not_guessed() {
        let p = parse("GFP_KERNEL|__GFP_VENDOR_FOO|bogus|0xzz");
        assert_eq!(p.gfp, Gfp::KERNEL);
        assert_eq!(p.unknown, vec!["__GFP_VENDOR_FOO", "bogus", "0xzz"]);
    }

    #[test]
    fn printing_is_the_kernels_and_reads_back() {
        assert_eq!(to_names(Gfp::KERNEL), "GFP_KERNEL");
        assert_eq!(to_names(Gfp::HIGHUSER_MOVABLE | Gfp::COMP), "GFP_HIGHUSER_MOVABLE|__GFP_COMP");
        assert_eq!(to_names(Gfp::ATOMIC | Gfp::NOWARN), "GFP_ATOMIC|__GFP_NOWARN");
        assert_eq!(to_names(Gfp(0)), "none");
        assert_eq!(to_names(Gfp(0x4000_0000)), "0x40000000");
        for bits in [Gfp::KERNEL, Gfp::TRANSHUGE, Gfp::USER | Gfp::ZERO, Gfp::DMA32, Gfp::NOWAIT] {
            assert_eq!(parse(&to_names(bits)).gfp, bits, "{}", to_names(bits));
        }
    }
}

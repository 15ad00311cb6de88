//! What a zoneinfo does not print, worked out from what it does: min_free_kbytes, the
//! watermark scale factor, an unprinted boost, the CPUs of each node, the kernel generation and
//! its lowmem-reserve rule. Each inference says how it was made (a [`Source`]).

#[allow(clippy::wildcard_imports)]
use super::*;

/// Smallest `x` in `lo..=hi` with `f(x) >= target`, for a non-decreasing `f`.
pub(super) fn first_at_least(
    lo: u64,
    hi: u64,
    target: u64,
    f: &impl Fn(u64) -> u64,
) -> Option<u64> {
    if f(hi) < target {
        return None;
    }
    let (mut lo, mut hi) = (lo, hi);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if f(mid) >= target {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo)
}

/// The inputs `x` in `lo..=hi` for which the non-decreasing `f(x)` equals `target`.
pub(super) fn preimage(
    lo: u64,
    hi: u64,
    target: u64,
    f: impl Fn(u64) -> u64,
) -> Option<(u64, u64)> {
    let a = first_at_least(lo, hi, target, &f)?;
    if f(a) != target {
        return None;
    }
    let b = first_at_least(a, hi, target.saturating_add(1), &f).map_or(hi, |x| x - 1);
    Some((a, b))
}

/// `a–b` or `a` for a range of page counts.
pub(super) fn range_text((a, b): (u64, u64)) -> String {
    if a == b {
        a.to_string()
    } else {
        format!("{a}–{b}")
    }
}

/// Upper end of the searches over page counts (2^40 pages = 4 PiB).
pub(super) const SEARCH_MAX: u64 = 1 << 40;

pub(super) fn u32_of(v: i64) -> u32 {
    u32::try_from(v.max(0)).unwrap_or(u32::MAX)
}

/// What the lines of the file say about the kernel.
pub(super) fn layout_markers(info: &ZoneInfo) -> Vec<String> {
    let mut m = Vec::new();
    if info.has_pre_4_8_lines {
        m.push("scanned / all_unreclaimable lines (before 4.8)".to_owned());
    }
    if info.has_node_stats {
        m.push("per-node stats (4.8+)".to_owned());
    }
    m.push(
        if info.prints(Field::Boost) { "boost (5.16+)" } else { "no boost line (before 5.16)" }
            .to_owned(),
    );
    if info.prints(Field::Promo) {
        m.push("promo (6.12+)".to_owned());
    }
    if info.prints(Field::Cma) {
        m.push("cma".to_owned());
    }
    if info.prints(Field::HighMin) {
        m.push("high_min / high_max (6.13+)".to_owned());
    }
    if let Some(n) = info.zones.iter().find_map(|z| z.protection.as_ref().map(Vec::len)) {
        m.push(format!("protection of {n} zones{}", if n == 4 { " (no ZONE_DEVICE)" } else { "" }));
    }
    m
}

/// The watermark boost hidden in the printed marks of a kernel that does not print it.
///
/// The step `low − min` is max(MIN/4, managed × wsf / 10000) of the *unboosted* MIN; when it is
/// the MIN/4 term, the unboosted MIN is 4 × step .. 4 × step + 3, and a printed MIN above that
/// carries a boost — a whole number of pageblocks, or the boost cap.
pub(super) fn infer_boost(z: &Zone, wsf: u64) -> Boost {
    let step = z.klow.saturating_sub(z.kmin);
    let wsf_term = mult_frac(z.managed, wsf, 10_000);
    if step <= wsf_term || z.kmin <= 4 * step + 3 {
        return Boost::Unprinted;
    }
    for tmp in (4 * step..=4 * step + 3).rev() {
        let b = z.kmin - tmp;
        let high = tmp + 2 * step;
        let cap = sizing::watermark_boost_step(
            u64::MAX,
            high,
            NrPages(z.managed),
            sizing::DEFAULT_WATERMARK_BOOST_FACTOR,
        );
        if (b % PAGEBLOCK_NR_PAGES == 0 && cap.is_some_and(|c| b <= c)) || cap == Some(b) {
            return Boost::Inferred(b);
        }
    }
    Boost::Unprinted
}

/// The watermark_scale_factor every zone's low − min step agrees with, else the default.
///
/// 0 stands for kernels before 4.6, which had no scale factor: LOW = MIN + MIN/4 and HIGH =
/// MIN + MIN/2. It is chosen when the steps are exactly MIN/4 where the default would give more,
/// and either the file has the pre-4.8 lines or no factor from 1 up fits.
pub(super) fn infer_wsf(zones: &[Zone], pre_4_8: bool) -> (u64, Source) {
    let default = sizing::DEFAULT_WATERMARK_SCALE_FACTOR;
    let mut candidates: Vec<u64> = (0..=3000).collect();
    let mut constrained = 0;
    for z in zones.iter().filter(|z| z.zt.is_lowmem()) {
        let step = z.klow.saturating_sub(z.kmin);
        if step > z.share() / 4 {
            // The step can only be the scale-factor term.
            constrained += 1;
            candidates.retain(|&w| mult_frac(z.managed, w, 10_000) == step);
        } else {
            candidates.retain(|&w| mult_frac(z.managed, w, 10_000) <= step);
        }
    }
    if candidates.contains(&default) {
        let why = if constrained == 0 {
            "assumed: every zone's low − min is a quarter of its MIN, which does not depend on it"
        } else {
            "the low − min steps agree with it"
        };
        return (default, Source::Default(why.into()));
    }
    let nonzero = candidates.iter().copied().find(|&w| w > 0);
    if candidates.first() == Some(&0) && (pre_4_8 || nonzero.is_none()) {
        return (
            0,
            Source::Inferred(
                "every low − min step is exactly MIN ÷ 4 where a scale factor of 10 would give \
                 more: a kernel before 4.6, which had no watermark_scale_factor (LOW = MIN + MIN/4, \
                 HIGH = MIN + MIN/2)"
                    .into(),
            ),
        );
    }
    match nonzero {
        Some(w) => (
            w,
            Source::Inferred(format!(
                "the smallest value every zone's low − min step agrees with ({} zone(s) pin it)",
                constrained
            )),
        ),
        None => (
            default,
            Source::Default(
                "assumed: no single value reproduces every zone's low − min step (see the \
                 mismatches)"
                    .into(),
            ),
        ),
    }
}

/// min_free_kbytes from the MIN watermarks.
///
/// At the last recompute each lowmem zone's unboosted MIN was floor(pages_min × managed ÷
/// lowmem total), so the MINs add up to pages_min minus less than one page per zone — whatever
/// managed did since. Within that range, the kernel's own choices come first (the THP
/// recommendation khugepaged sets, then the boot default); otherwise the value that reproduces
/// most MINs with the file's managed pages.
pub(super) fn infer_min_free_kbytes(
    zones: &[Zone],
    all: &[(ZoneType, NrPages)],
    wsf: u64,
) -> (u64, Source) {
    let lowmem: Vec<&Zone> = zones.iter().filter(|z| z.zt.is_lowmem()).collect();
    if lowmem.is_empty() {
        return (
            sizing::MIN_FREE_KBYTES_FLOOR,
            Source::Default("assumed: the file has no populated lowmem zone".into()),
        );
    }
    // Page counts are at most 2^40 (zoneinfo.rs) and zones at most 1024 nodes × 4 types.
    let sum: u64 = lowmem.iter().map(|z| z.share()).fold(0, u64::saturating_add);
    let n = lowmem.len() as u64;
    let range = sum..sum.saturating_add(n);
    let populated_lowmem = zones.iter().filter(|z| z.zt <= ZoneType::Normal).count() as u64;
    let marks: Vec<(ZoneType, NrPages, u64)> = zones
        .iter()
        .map(|z| (z.zt, NrPages(z.managed), z.khigh.saturating_sub(z.boost.pages())))
        .collect();
    let thp = sizing::thp_recommended_min_free_kbytes(
        populated_lowmem,
        sizing::nr_free_zone_pages(&marks, ZoneType::Normal),
    );
    let boot_marks: Vec<(ZoneType, NrPages, u64)> =
        zones.iter().map(|z| (z.zt, NrPages(z.managed), 0)).collect();
    let boot = sizing::default_min_free_kbytes(sizing::lowmem_kbytes(&boot_marks));
    // all[] lists the modelled zones in file order, `z.idx` each zone's place in it.
    let hits = |p: u64| {
        let marks = sizing::zone_watermarks(p.saturating_mul(4), wsf, all);
        lowmem.iter().filter(|z| marks[z.idx].min == z.share()).count()
    };
    let (kb, named) = if range.contains(&(thp / 4)) {
        (thp, format!(" = the THP recommendation for {populated_lowmem} zones,"))
    } else if range.contains(&(boot / 4)) {
        (boot, " = the boot default √(16 × lowmem KiB),".to_owned())
    } else {
        let shares: Vec<(u64, u64)> = lowmem.iter().map(|z| (z.managed, z.share())).collect();
        let counts = hits_over(&range, &shares, lowmem_total(all));
        let best = (range.start..range.end)
            .zip(counts)
            .max_by_key(|&(p, h)| (h, std::cmp::Reverse(p)))
            .map_or(sum, |(p, _)| p);
        (best.saturating_mul(4), String::new())
    };
    let how = format!(
        "the unboosted MIN watermarks of the {n} lowmem zone(s) add up to {sum} pages, so \
         pages_min is {sum}–{}; {kb} KiB{named} reproduces {} of {n} MINs with the file's managed \
         pages",
        range.end - 1,
        hits(kb / 4)
    );
    (kb, Source::Inferred(how))
}

/// For each candidate pages_min `p` of `range`, how many of the lowmem zones `(managed,
/// printed share)` it reproduces. A zone's share is floor(p × managed ÷ `total`), the split of
/// `sizing::zone_watermarks`, so it equals the printed one for p in [⌈s·T/m⌉, ⌈(s+1)·T/m⌉):
/// counting those intervals over the range is linear in the zones, where evaluating the split
/// at every candidate was quadratic (a 1024-node file took seconds).
pub(super) fn hits_over(
    range: &std::ops::Range<u64>,
    zones: &[(u64, u64)],
    total: u64,
) -> Vec<usize> {
    let len = (range.end - range.start) as usize;
    let mut starts = vec![0usize; len + 1];
    let mut ends = vec![0usize; len + 1];
    let at = |p: u128| {
        (p.clamp(u128::from(range.start), u128::from(range.end)) as u64 - range.start) as usize
    };
    for &(m, s) in zones {
        let (lo, hi) = if total == 0 || m == 0 {
            // Every share is 0.
            if s != 0 {
                continue;
            }
            (u128::from(range.start), u128::from(range.end))
        } else {
            let (t, m, s) = (u128::from(total), u128::from(m), u128::from(s));
            ((s * t).div_ceil(m), ((s + 1) * t).div_ceil(m))
        };
        let (a, b) = (at(lo), at(hi));
        if a < b {
            starts[a] += 1;
            ends[b] += 1;
        }
    }
    let mut open = 0usize;
    (0..len)
        .map(|i| {
            open = open + starts[i] - ends[i];
            open
        })
        .collect()
}

/// How the online CPUs were found in the file.
pub(super) fn online_inferred(info: &ZoneInfo) -> Source {
    let shown = info.pagesets_shown();
    match info.online_cpus() {
        None => Source::Default("unknown: the file prints no pageset; pass --online-cpus".into()),
        Some(n) if n as usize == shown => {
            Source::Inferred(format!("the pagesets of {n} CPUs (one per online CPU)"))
        }
        Some(n) => Source::Inferred(format!(
            "the highest CPU number in the pagesets ({}) + 1; the file shows the pagesets of \
             {shown} CPU(s) only (pass --online-cpus if CPUs are offline between them)",
            n - 1
        )),
    }
}

/// Split the online CPUs over the nodes that have memory.
pub(super) fn split_cpus(info: &ZoneInfo, online: Option<u32>) -> (BTreeMap<u32, u32>, Source) {
    let nodes: Vec<u32> = info
        .by_node()
        .into_iter()
        .filter(|(_, zones)| zones.iter().any(|z| z.is_populated()))
        .map(|(n, _)| n)
        .collect();
    let total = online.unwrap_or(0);
    let k = nodes.len().max(1) as u32;
    let map: BTreeMap<u32, u32> = nodes
        .iter()
        .enumerate()
        .map(|(i, &n)| (n, total / k + u32::from((i as u32) < total % k)))
        .collect();
    let src = if nodes.len() <= 1 {
        Source::Inferred(format!("{total} online CPUs, one node"))
    } else {
        Source::Inferred(format!(
            "{total} online CPUs split evenly over {} nodes: zoneinfo does not say which CPU is \
             on which node (pass --node-cpus)",
            nodes.len()
        ))
    };
    (map, src)
}

/// The per-CPU high of the pre-5.14 kernels: 6 × the raw batch (0 for tiny zones, which print
/// batch 1 and high 0). The raw batch is the printed one unless that is 1, which may stand for 0.
pub(super) fn legacy_high(z: &Zone, kbatch: u32, cap: u64) -> u32 {
    let raw = if kbatch > 1 { kbatch } else { sizing::zone_batchsize_raw(NrPages(z.managed), cap) };
    sizing::legacy_pcp_high(raw)
}

/// The 5.14+ high: the LOW in force when the pagesets were sized (recomputes reset the boost
/// first), split over the node's CPUs.
pub(super) fn low_split_high(
    z: &Zone,
    batch: u32,
    node_cpus: u32,
    online: u32,
    fraction: u32,
) -> u32 {
    sizing::zone_highsize(
        z.klow.saturating_sub(z.boost.pages()),
        NrPages(z.managed),
        batch,
        node_cpus,
        0,
        online,
        fraction,
    )
}

/// Which generation sized the pagesets, and why we think so.
pub(super) fn detect_era(
    info: &ZoneInfo,
    zones: &[Zone],
    online: Option<u32>,
    fraction: u32,
    cpus_of: &impl Fn(u32) -> u32,
) -> (Era, String) {
    if info.prints(Field::HighMin) {
        return (Era::AutoTunedPrinted, "the pagesets print high_min and high_max".into());
    }
    let with_pcp: Vec<&Zone> = zones.iter().filter(|z| !z.entry.pagesets.is_empty()).collect();
    let tuned = with_pcp.iter().find(|z| {
        let highs = z.per_cpu(|p| p.high);
        let varies = highs.iter().any(|h| Some(h) != highs.first());
        let unused = z.kbatch.is_some_and(|b| b > 1) && highs.contains(&0);
        varies || unused
    });
    if let Some(z) = tuned {
        return (
            Era::AutoTuned,
            format!(
                "the per-CPU highs of Node {} {} differ between CPUs or are 0 on an unused \
                 pageset, which only auto-tuning does",
                z.entry.node, z.entry.name
            ),
        );
    }
    let online = online.unwrap_or(1);
    let all_highs =
        |z: &Zone, want: u32| z.per_cpu(|p| p.high).iter().all(|&h| h == i64::from(want));
    let legacy = with_pcp
        .iter()
        .filter(|z| {
            let b = z.kbatch.unwrap_or_else(|| Era::SixTimesBatch.batch(z.managed));
            all_highs(z, legacy_high(z, b, sizing::BATCH_CAP_PAGES))
        })
        .count();
    let split = with_pcp
        .iter()
        .filter(|z| {
            let b = z.kbatch.unwrap_or_else(|| Era::LowSplit.batch(z.managed));
            all_highs(z, low_split_high(z, b, cpus_of(z.entry.node), online, fraction))
        })
        .count();
    let promo = info.prints(Field::Promo);
    let n = with_pcp.len();
    let six = if legacy == n && !promo {
        Some(format!("every zone's per-CPU high is 6 × its batch ({n} zones)"))
    } else if split == n {
        None
    } else if legacy > split && !promo {
        Some(format!("{legacy} of {n} zones have per-CPU high = 6 × batch"))
    } else {
        None
    };
    let Some(why) = six else {
        let why = if split == n {
            format!("every zone's per-CPU high is LOW ÷ CPUs of its node ({n} zones)")
        } else {
            format!(
                "{split} of {n} zones have per-CPU high = LOW ÷ CPUs of the node, {legacy} have 6 \
                 × batch{}",
                if promo { "; the promo line rules out kernels before 6.12" } else { "" }
            )
        };
        return (Era::LowSplit, why);
    };
    // The batch cap: 4.19 doubled it from 512 KiB to 1 MiB.
    let votes =
        |era: Era| with_pcp.iter().filter(|z| z.kbatch == Some(era.batch(z.managed))).count();
    let (old, new) = (votes(Era::Before4_19), votes(Era::SixTimesBatch));
    if old > new {
        (Era::Before4_19, format!("{why}; batches follow the 512 KiB cap of kernels before 4.19 in {old} of {n} zones"))
    } else {
        (Era::SixTimesBatch, why)
    }
}

/// Does the file give empty upper zones the cumulative protection (≤ 6.9, ≥ 6.14) or 0
/// (6.10–6.13)? Whichever reproduces more protection entries; the cumulative rule on a tie.
pub(super) fn detect_reserve_rule(info: &ZoneInfo, ratios: &[u64; 4]) -> (bool, &'static str) {
    let by_node = info.by_node();
    let score = |zero: bool| -> usize {
        by_node
            .iter()
            .map(|(&node, zones)| {
                let rows = reserve_rows(info, node, ratios, zero);
                zones
                    .iter()
                    .filter_map(|z| Some((z.protection.as_ref()?, rows.get(&z.zone_type()?)?)))
                    .map(|(k, ours)| {
                        k.iter()
                            .zip(extend_row(ours, k.len(), zero))
                            .filter(|(a, b)| *a == b)
                            .count()
                    })
                    .sum::<usize>()
            })
            .sum()
    };
    if score(true) > score(false) {
        (true, "0 (the 6.10–6.13 rule)")
    } else {
        (false, "cumulative (≤ 6.9 and ≥ 6.14)")
    }
}

/// Our lowmem_reserve rows of one node's zones, from the file's managed pages.
pub(super) fn reserve_rows(
    info: &ZoneInfo,
    node: u32,
    ratios: &[u64; 4],
    zero_rule: bool,
) -> BTreeMap<ZoneType, [u64; 4]> {
    let zones: Vec<(ZoneType, NrPages)> = ZoneType::ALL
        .iter()
        .map(|&zt| {
            let managed = info.zone(node, zt.name()).and_then(|z| z.managed).unwrap_or(0);
            (zt, NrPages(managed))
        })
        .collect();
    let rows = sizing::lowmem_reserve(&zones, ratios, zero_rule);
    ZoneType::ALL.into_iter().zip(rows).collect()
}

/// A row of our four columns laid out as the kernel's MAX_NR_ZONES columns: ZONE_DEVICE (and
/// any later column) is an empty upper zone, so it repeats the Movable column under the
/// cumulative rule and is 0 under the 6.10–6.13 rule.
pub(super) fn extend_row(row: &[u64; 4], len: usize, zero_rule: bool) -> Vec<i64> {
    let as_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    (0..len)
        .map(|j| match row.get(j) {
            Some(&v) => as_i64(v),
            None if zero_rule => 0,
            None => as_i64(row[3]),
        })
        .collect()
}

/// Managed pages of the lowmem zones of `all`.
pub(super) fn lowmem_total(all: &[(ZoneType, NrPages)]) -> u64 {
    all.iter().filter(|(t, _)| t.is_lowmem()).map(|(_, m)| m.0).fold(0, u64::saturating_add)
}

//! Each field of a zone recomputed from the kernel's own inputs in the file, and, where it
//! differs, a hint naming the input value that would give the kernel's number.

use std::fmt::Write as _;

#[allow(clippy::wildcard_imports)]
use super::*;

/// What every zone check needs.
pub(super) struct Ctx<'a> {
    pub(super) info: &'a ZoneInfo,
    /// Managed pages of every lowmem zone, summed once (not per zone: that was quadratic).
    pub(super) lowmem_total: u64,
    /// The lowmem zones' unboosted MINs as printed, summed once.
    pub(super) lowmem_mins: u64,
    pub(super) mfk: u64,
    pub(super) mfk_src: &'a Source,
    pub(super) wsf: u64,
    pub(super) fraction: u32,
    pub(super) ratios: [u64; 4],
    pub(super) zero_rule: bool,
    pub(super) era: Era,
    pub(super) online: Option<u32>,
}

/// The step between watermarks, from the zone's own MIN (lowmem zones) or from the
/// min_free_kbytes split (Movable, whose MIN is a clamp and whose step uses the share).
pub(super) fn step_of(ctx: &Ctx, zt: ZoneType, managed: u64, share: u64, full: &Watermarks) -> u64 {
    if zt.is_lowmem() {
        // The zone alone with min_free_kbytes = 4 × its MIN: its share is exactly its MIN.
        let w =
            sizing::zone_watermarks(share.saturating_mul(4), ctx.wsf, &[(zt, NrPages(managed))])[0];
        w.low - w.min
    } else {
        full.low - full.min
    }
}

/// HIGH − MIN of a kernel before 4.6 (half the share): from the zone's own MIN for lowmem
/// zones, whose share it is, and from our split of min_free_kbytes for the others.
pub(super) fn pre_4_6_high_step(z: &Zone, full: &Watermarks) -> u64 {
    if z.zt.is_lowmem() {
        let own =
            sizing::zone_watermarks(z.share().saturating_mul(4), 0, &[(z.zt, NrPages(z.managed))]);
        own[0].high - own[0].min
    } else {
        full.high - full.min
    }
}

pub(super) fn check_zone(ctx: &Ctx, z: &Zone, full: Watermarks, node_cpus: u32) -> ZoneReport {
    let e = z.entry;
    let boost = z.boost.pages();
    let step = step_of(ctx, z.zt, z.managed, z.share(), &full);
    let mut checks = Vec::new();
    let mut notes = Vec::new();

    // MIN: the zone's share of min_free_kbytes (a clamp for Movable), plus the boost.
    let ours_min = full.min + boost;
    let mut min = Check {
        field: "min",
        kernel: Some(Val::n(z.kmin)),
        ours: Some(Val::n(ours_min)),
        hint: None,
    };
    if min.outcome() == Some(false) {
        min.hint = Some(min_hint(ctx, z));
    }
    checks.push(min);

    // LOW, HIGH, PROMO: each the kernel's previous mark plus the step.
    let chain = [
        ("low", Some(z.kmin), Some(z.klow)),
        ("high", Some(z.klow), Some(z.khigh)),
        ("promo", e.high, e.promo),
    ];
    let mut hinted: Option<&str> = None;
    for (field, below, this) in chain {
        let Some(this) = this else { continue };
        let below = below.unwrap_or(0);
        // Before 4.6 (no scale factor) HIGH was MIN + share/2, which is not LOW + share/4 when
        // the share mod 4 ≥ 2: it is measured from the kernel's MIN, not its LOW.
        let ours = if ctx.wsf == 0 && field == "high" {
            z.kmin + pre_4_6_high_step(z, &full)
        } else {
            below + step
        };
        let mut c =
            Check { field, kernel: Some(Val::n(this)), ours: Some(Val::n(ours)), hint: None };
        if c.outcome() == Some(false) {
            let kstep = this - below.min(this);
            c.hint = Some(match hinted {
                None => step_hint(ctx, z, kstep, step),
                Some(first) => format!("the kernel's step is {kstep}, ours {step}, as for {first}"),
            });
            hinted.get_or_insert(field);
        }
        checks.push(c);
    }

    // Protection.
    if let Some(k) = &e.protection {
        let rows = reserve_rows(ctx.info, e.node, &ctx.ratios, ctx.zero_rule);
        let ours = extend_row(&rows[&z.zt], k.len(), ctx.zero_rule);
        let mut c = Check {
            field: "protection",
            kernel: Some(Val::List(k.clone())),
            ours: Some(Val::List(ours.clone())),
            hint: None,
        };
        if c.outcome() == Some(false) {
            c.hint = Some(protection_hint(ctx, z, k, &ours));
        }
        checks.push(c);
    }

    let has_pcp = !e.pagesets.is_empty();
    let online = ctx.online.unwrap_or(1);
    // Batch.
    let ours_batch = ctx.era.batch(z.managed);
    let kb = z.kbatch.unwrap_or(ours_batch);
    if has_pcp {
        let mut c = Check {
            field: "batch",
            kernel: Val::per_cpu(z.per_cpu(|p| p.batch)),
            ours: Some(Val::n(u64::from(ours_batch))),
            hint: None,
        };
        if c.outcome() == Some(false) {
            c.hint = Some(batch_hint(ctx, z));
        }
        checks.push(c);
    }

    // high_min / high_max (6.7+).
    if has_pcp && ctx.era.auto_tuned() {
        let (lo_f, hi_f) = if ctx.fraction == 0 {
            (0, sizing::MIN_PERCPU_PAGELIST_HIGH_FRACTION)
        } else {
            (ctx.fraction, ctx.fraction)
        };
        let printed = ctx.era == Era::AutoTunedPrinted;
        for (field, f, get) in [
            ("high_min", lo_f, (|p: &crate::zoneinfo::Pageset| p.high_min) as fn(&_) -> _),
            ("high_max", hi_f, |p: &crate::zoneinfo::Pageset| p.high_max),
        ] {
            let ours = low_split_high(z, kb, node_cpus, online, f);
            let mut c = Check {
                field,
                kernel: printed.then(|| Val::per_cpu(z.per_cpu(get))).flatten(),
                ours: Some(Val::n(u64::from(ours))),
                hint: None,
            };
            if c.outcome() == Some(false) {
                c.hint = Some(split_hint(z, kb, online, f, c.kernel.as_ref()));
            }
            checks.push(c);
        }
        notes.push(autotuned_note(z, ctx, kb, node_cpus, online));
    }

    // The fixed per-CPU high.
    if has_pcp && !ctx.era.auto_tuned() {
        let ours = match ctx.era {
            Era::LowSplit => low_split_high(z, kb, node_cpus, online, ctx.fraction),
            _ => legacy_high(z, kb, ctx.era.batch_cap()),
        };
        let mut c = Check {
            field: "pcp_high",
            kernel: Val::per_cpu(z.per_cpu(|p| p.high)),
            ours: Some(Val::n(u64::from(ours))),
            hint: None,
        };
        if c.outcome() == Some(false) {
            c.hint = Some(match ctx.era {
                Era::LowSplit => split_hint(z, kb, online, ctx.fraction, c.kernel.as_ref()),
                _ => format!(
                    "6 × batch {kb} = {ours}; another fixed high means vm.percpu_pagelist_fraction \
                     was set (high = managed ÷ fraction)"
                ),
            });
        }
        checks.push(c);
    }

    // vm stats threshold.
    if let Some(cpus) = ctx.online.filter(|_| e.pagesets.iter().any(|p| p.stat_threshold.is_some()))
    {
        let ours = sizing::stat_threshold(NrPages(z.managed), cpus);
        let mut c = Check {
            field: "stat_threshold",
            kernel: Val::per_cpu(z.per_cpu(|p| p.stat_threshold)),
            ours: Some(Val::n(u64::from(ours))),
            hint: None,
        };
        if c.outcome() == Some(false) {
            c.hint = Some(threshold_hint(z, cpus, c.kernel.as_ref()));
        }
        checks.push(c);
    }

    ZoneReport { node: e.node, zone: e.name.clone(), managed: z.managed, checks, notes }
}

/// Marks a hint whose cause is explained once, under the tables.
pub(super) const DRIFT: &str = "managed changed since the kernel last recomputed ¹";

/// The footnote of [`DRIFT`].
pub(super) const DRIFT_NOTE: &str =
    "¹ The kernel recomputes watermarks only at boot, on memory hotplug \
     and when vm.min_free_kbytes or vm.watermark_scale_factor is written; protection at boot, on \
     memory hotplug and when vm.lowmem_reserve_ratio is written; pageset sizes at those times \
     and on CPU hotplug; vm stats thresholds at boot, on CPU or memory hotplug and whenever \
     kswapd goes back to sleep. Pages handed to the buddy allocator later (memory freed at the \
     end of boot such as the kernel's init sections and, on some kernels, the initrd; memory a \
     balloon driver returns) change managed without one. Writing the current values back to \
     those sysctls brings the numbers up to date.";

pub(super) fn min_hint(ctx: &Ctx, z: &Zone) -> String {
    let target = z.share();
    let pages_min = NrPages::from_kib(ctx.mfk).0;
    if !z.zt.is_lowmem() {
        return format!("Movable's MIN is managed ÷ 1024 clamped to 32..128, not {target}");
    }
    let total = ctx.lowmem_total;
    let rest = total.saturating_sub(z.managed);
    let filler = if z.zt == ZoneType::Dma { ZoneType::Dma32 } else { ZoneType::Dma };
    let share = |mine: u64, others: u64| {
        let zones = [(z.zt, NrPages(mine)), (filler, NrPages(others))];
        sizing::zone_watermarks(ctx.mfk, ctx.wsf, &zones)[0].min
    };
    let mut ways = Vec::new();
    // This zone as it is, the other lowmem zones different: the share falls as they grow.
    if let Some(r) = preimage(0, SEARCH_MAX, u64::MAX - target, |o| u64::MAX - share(z.managed, o))
    {
        ways.push(format!(
            "a lowmem total of {} with this zone as it is (the file's: {total})",
            range_text((r.0.saturating_add(z.managed), r.1.saturating_add(z.managed)))
        ));
    }
    // The other zones as they are, this zone different: the share grows with it.
    if let Some(r) = preimage(0, SEARCH_MAX, target, |m| share(m, rest)) {
        let mut way = format!(
            "this zone managing {} with the others as they are (the file: {})",
            range_text(r),
            z.managed
        );
        if let Some(present) = z.entry.present.filter(|&p| r.0 > p) {
            let _ = write!(way, ", more than its {present} present pages");
        }
        ways.push(way);
    }
    let mut hint = if ways.is_empty() {
        format!("no managed counts give {target} with {} KiB", ctx.mfk)
    } else {
        format!(
            "MIN {target} = {pages_min} × managed ÷ lowmem total needs {}: {DRIFT}",
            ways.join(", or ")
        )
    };
    let excess = z.kmin.saturating_sub(share(z.managed, rest));
    if z.boost == Boost::Unprinted && z.entry.boost.is_none() && excess >= PAGEBLOCK_NR_PAGES {
        let _ = write!(
            hint,
            "; or the marks include a watermark boost of about {excess} pages (5.0–5.15 add one \
             without printing it)"
        );
    }
    if !matches!(ctx.mfk_src, Source::Inferred(_)) {
        let sum = ctx.lowmem_mins;
        if sum.abs_diff(pages_min) > 8 {
            let kib = sum.saturating_mul(4);
            let _ = write!(hint, "; the file's MINs add up to min_free_kbytes ≈ {kib} KiB");
        }
    }
    hint
}

pub(super) fn step_hint(ctx: &Ctx, z: &Zone, kstep: u64, step: u64) -> String {
    let quarter = z.share() / 4;
    let wsf = ctx.wsf;
    if kstep > quarter {
        let f = |m: u64| mult_frac(m, wsf, 10_000);
        match preimage(1, SEARCH_MAX, kstep, f) {
            Some(r) => format!(
                "the kernel's step {kstep} is managed × {wsf} ÷ 10000 for managed {} (the file: \
                 {}): {DRIFT}",
                range_text(r),
                z.managed
            ),
            None => format!(
                "no managed count gives a step of {kstep} with watermark_scale_factor {wsf}"
            ),
        }
    } else {
        format!(
            "the step is max(MIN ÷ 4, managed × {wsf} ÷ 10000) = {step} here, the kernel's is \
             {kstep}: its MIN or boost at the last recompute differs from the printed ones"
        )
    }
}

pub(super) fn protection_hint(ctx: &Ctx, z: &Zone, kernel: &[i64], ours: &[i64]) -> String {
    let managed_of =
        |t: ZoneType| ctx.info.zone(z.entry.node, t.name()).and_then(|e| e.managed).unwrap_or(0);
    let mut parts = Vec::new();
    for (j, (k, o)) in kernel.iter().zip(ours).enumerate() {
        // Columns of empty zones repeat the column before them (or are 0): no news there.
        let Some(&upper) = ZoneType::ALL.get(j) else { continue };
        if k == o || j <= z.zt.index() || managed_of(upper) == 0 {
            continue;
        }
        let Ok(k) = u64::try_from(*k) else { continue };
        let first = ZoneType::ALL[z.zt.index() + 1];
        let sum: u64 = ZoneType::ALL[z.zt.index() + 1..=j].iter().map(|&t| managed_of(t)).sum();
        // The column as a function of the upper zones' total, through the library.
        let f = |total: u64| {
            let zones = [(z.zt, NrPages(z.managed)), (upper, NrPages(total))];
            sizing::lowmem_reserve(&zones, &ctx.ratios, false)[0][j]
        };
        if let Some(r) = preimage(0, SEARCH_MAX, k, f) {
            let who = if first == upper {
                upper.name().to_owned()
            } else {
                format!("{}–{} together", first.name(), upper.name())
            };
            parts.push(format!(
                "the {} entry {k} needs {who} managing {} (the file: {sum})",
                upper.name(),
                range_text(r)
            ));
        }
    }
    if parts.is_empty() {
        "the empty-upper-zone rule or vm.lowmem_reserve_ratio differs".to_owned()
    } else {
        format!("{}: {DRIFT}", parts.join("; "))
    }
}

pub(super) fn batch_hint(ctx: &Ctx, z: &Zone) -> String {
    let Some(kb) = z.kbatch else {
        return "the CPUs print different batches".to_owned();
    };
    let era = ctx.era;
    match preimage(0, SEARCH_MAX, u64::from(kb), |m| u64::from(era.batch(m))) {
        Some((a, b)) => {
            let mut s = format!(
                "batch {kb} is what managed {} gives (the file: {})",
                range_text((a, b)),
                z.managed
            );
            if b < z.managed && matches!(era, Era::Before4_19 | Era::SixTimesBatch) {
                s.push_str(
                    ": the pagesets were sized while the zone was still growing — before 5.7 \
                     the kernel sized them before deferred struct-page init finished and did not \
                     resize them after",
                );
            } else {
                let _ = write!(s, ": {DRIFT}");
            }
            s
        }
        None => format!("no managed count gives batch {kb} in this kernel generation"),
    }
}

pub(super) fn split_hint(
    z: &Zone,
    batch: u32,
    online: u32,
    fraction: u32,
    kernel: Option<&Val>,
) -> String {
    let Some(k) = kernel.and_then(Val::uniform) else {
        return "the CPUs print different values".to_owned();
    };
    let cpus: Vec<u32> = (1..=4096)
        .filter(|&n| i64::from(low_split_high(z, batch, n, online, fraction)) == k)
        .collect();
    match (cpus.first(), cpus.last()) {
        (Some(a), Some(b)) => format!(
            "{k} is a split over {} CPU(s) on the node (pass --node-cpus if that is the machine)",
            range_text((u64::from(*a), u64::from(*b)))
        ),
        _ => format!(
            "no CPU count gives {k}: the LOW watermark or managed pages differed when the pagesets \
             were last sized"
        ),
    }
}

pub(super) fn threshold_hint(z: &Zone, cpus: u32, kernel: Option<&Val>) -> String {
    let Some(k) = kernel.and_then(Val::uniform) else {
        return "the CPUs print different thresholds".to_owned();
    };
    let Ok(k) = u64::try_from(k) else { return String::new() };
    let by_managed =
        preimage(0, SEARCH_MAX, k, |m| u64::from(sizing::stat_threshold(NrPages(m), cpus)));
    let by_cpus =
        preimage(1, 8192, k, |c| u64::from(sizing::stat_threshold(NrPages(z.managed), c as u32)));
    let mut parts = Vec::new();
    if let Some(r) = by_managed {
        parts.push(format!("managed {} with {cpus} CPUs", range_text(r)));
    }
    if let Some(r) = by_cpus {
        parts.push(format!("{} online CPUs with this managed", range_text(r)));
    }
    let mut s = if parts.is_empty() {
        format!("no managed count or CPU count gives {k}")
    } else {
        format!("{k} is what {} gives", parts.join(", or "))
    };
    s.push_str(
        "; thresholds are recomputed at boot, on CPU or memory hotplug and each time kswapd goes \
         back to sleep, and drop to a smaller pressure threshold while kswapd reclaims",
    );
    s
}

/// What the auto-tuned per-CPU highs look like against our bounds.
pub(super) fn autotuned_note(
    z: &Zone,
    ctx: &Ctx,
    batch: u32,
    node_cpus: u32,
    online: u32,
) -> String {
    let (lo_f, hi_f) = if ctx.fraction == 0 {
        (0, sizing::MIN_PERCPU_PAGELIST_HIGH_FRACTION)
    } else {
        (ctx.fraction, ctx.fraction)
    };
    let lo = i64::from(low_split_high(z, batch, node_cpus, online, lo_f));
    let hi = i64::from(low_split_high(z, batch, node_cpus, online, hi_f));
    let highs: Vec<(u32, i64)> =
        z.entry.pagesets.iter().filter_map(|p| Some((p.cpu, p.high?))).collect();
    let inside = highs.iter().filter(|(_, h)| (lo..=hi).contains(h)).count();
    let unused = highs.iter().filter(|(_, h)| *h == 0).count();
    let outside: Vec<String> = highs
        .iter()
        .filter(|(_, h)| *h != 0 && !(lo..=hi).contains(h))
        .map(|(c, h)| format!("CPU {c}: {h}"))
        .collect();
    let mut s = format!(
        "per-CPU high (auto-tuned, not compared): within [{lo}, {hi}] on {inside} of {} CPUs",
        highs.len()
    );
    if unused > 0 {
        let _ = write!(s, ", 0 (pageset not used since boot) on {unused}");
    }
    if !outside.is_empty() {
        let _ = write!(
            s,
            ", outside on {} — a pageset keeps its old high after a resize until it is next used \
             (docs/kernel-reference.md §8.3)",
            outside.join(", ")
        );
    }
    s
}

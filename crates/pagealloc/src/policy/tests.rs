use super::*;
use alloc::format;
use alloc::string::ToString;
use alloc::vec;

fn p(name: &str) -> Policy {
    Policy::preset(name).unwrap_or_else(|| panic!("preset {name} missing"))
}

/// Switches that differ between two presets, sorted.
fn delta(a: &str, b: &str) -> Vec<&'static str> {
    let mut d = p(a).differing_keys(&p(b));
    d.sort_unstable();
    d
}

fn assert_delta(a: &str, b: &str, expected: &[&'static str]) {
    let mut e = expected.to_vec();
    e.sort_unstable();
    assert_eq!(delta(a, b), e, "{a} -> {b}");
}

#[test]
fn every_preset_name_resolves_in_table_order() {
    let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
    assert_eq!(names, PRESET_NAMES);
    for name in PRESET_NAMES {
        assert!(Policy::preset(name).is_some(), "{name}");
    }
    for required in [
        "modern",
        "hpc-vanilla",
        "hpc-revert",
        "hpc-opt",
        "hpc-limit",
        "tune-base",
        "tune-p1",
        "tune-p3",
        "tune-p5",
        "tune-p7",
        "tune-p9",
        "tune-p10",
        "frag-vanilla",
        "frag-lowzone",
        "pfrag-buddy",
        "pfrag-pcp",
    ] {
        assert!(PRESET_NAMES.contains(&required), "{required}");
    }
    assert_eq!(Policy::preset("no-such-preset"), None);
    assert_eq!(Policy::default(), Policy::modern());
    assert_eq!(p("modern"), Policy::modern());
}

#[test]
fn presets_are_distinct_except_the_two_4_19_baselines() {
    for (i, a) in PRESETS.iter().enumerate() {
        for b in &PRESETS[i + 1..] {
            let same = a.policy == b.policy;
            let expected = a.name == "frag-vanilla" && b.name == "pfrag-buddy";
            assert_eq!(same, expected, "{} vs {}", a.name, b.name);
        }
    }
    let m: Vec<&str> = p("pfrag-buddy").matching_presets().map(|p| p.name).collect();
    assert_eq!(m, ["frag-vanilla", "pfrag-buddy"]);
    let mut custom = Policy::modern();
    custom.high_decay = HighDecay::FourFifths;
    assert_eq!(custom.matching_presets().count(), 0);
}

#[test]
fn seed_labels_are_unique_per_seed() {
    let mut seen = Vec::new();
    for preset in PRESETS {
        for r in preset.rows {
            assert!(!seen.contains(&(r.seed, r.label)), "{r:?}");
            seen.push((r.seed, r.label));
        }
    }
}

// Seed 000: vanilla, mm-reverthighpcp-v1, mm-highpcpopt-v1, mm-highpcplimit-v1.

#[test]
fn seed000_vanilla_to_revert() {
    assert_delta("hpc-vanilla", "hpc-revert", &["pcp_lists"]);
}

#[test]
fn seed000_revert_to_opt_v1() {
    assert_delta("hpc-revert", "hpc-opt-v1", &["pcp_lists", "bulk_free", "bulk_free_prefetch"]);
    // The table compares each column with vanilla: patches 1-4 touch only bulk free.
    assert_delta("hpc-vanilla", "hpc-opt-v1", &["bulk_free", "bulk_free_prefetch"]);
}

#[test]
fn seed000_opt_v1_to_limit_v1() {
    assert_delta("hpc-opt-v1", "hpc-limit-v1", &["free_high"]);
}

// Seed 004: vanilla, mm-reverthighpcp-v1, mm-highpcpopt-v2.

#[test]
fn seed004_vanilla_to_revert() {
    assert_delta("hpc-vanilla", "hpc-revert", &["pcp_lists"]);
}

#[test]
fn seed004_revert_to_opt() {
    assert_delta("hpc-revert", "hpc-opt", &["pcp_lists", "bulk_free", "bulk_free_prefetch"]);
}

#[test]
fn series_b_posted_v1_against_merged() {
    assert_delta("hpc-opt-v1", "hpc-opt", &["bulk_free"]);
    assert_delta("hpc-limit-v1", "hpc-limit", &["bulk_free"]);
    assert_delta("hpc-opt", "hpc-limit", &["free_high"]);
    assert_eq!(p("hpc-opt-v1").bulk_free, BulkFree::SinglePassAfterStart);
    assert_eq!(p("hpc-opt").bulk_free, BulkFree::SinglePassAtStart);
}

// Seed 001: base, patch1, patch3, patch5, patch7, patch9, patch10 (all v1).

#[test]
fn seed001_base_to_p1() {
    assert_delta("tune-base", "tune-p1", &["free_high"]);
    assert_eq!(p("tune-p1").free_high, FreeHigh::Consecutive);
}

#[test]
fn seed001_p1_to_p3() {
    assert_delta("tune-p1", "tune-p3", &["free_high_batch"]);
    assert_eq!(p("tune-p3").free_high_batch, FreeHighBatch::DataSlicesOver4Batch);
}

#[test]
fn seed001_p3_to_p5() {
    assert_delta("tune-p3", "tune-p5", &["free_batch_sizing", "refill_sizing"]);
}

#[test]
fn seed001_p5_to_p7() {
    assert_delta(
        "tune-p5",
        "tune-p7",
        &["pcp_high", "reclaim_active_limit", "high_decay", "free_batch_sizing", "free_high_drain"],
    );
    let p7 = p("tune-p7");
    assert_eq!(p7.high_decay, HighDecay::FourFifths);
    assert_eq!(p7.free_batch_sizing, FreeBatchSizing::FreeFactorCappedInclusive);
}

#[test]
fn seed001_p7_to_p9() {
    assert_delta("tune-p7", "tune-p9", &["zone_below_high", "high_decay"]);
    assert_eq!(p("tune-p9").high_decay, HighDecay::CountMinLimited);
}

#[test]
fn seed001_p9_to_p10() {
    assert_delta("tune-p9", "tune-p10", &["free_batch_sizing"]);
    assert_eq!(p("tune-p10").free_batch_sizing, FreeBatchSizing::FreeCountV1);
}

#[test]
fn seed001_p10_v1_to_modern() {
    // v1 → v3 (data slices → LLC slice, 4/5 + count_min → 7/8, decrease floor), then the
    // 6.10 changes (THP list split, hygiene, chunked drains).
    assert_delta(
        "tune-p10",
        "modern",
        &[
            "pcp_lists",
            "high_decay",
            "free_batch_sizing",
            "free_high_batch",
            "drain_pages_chunked",
            "migratetype_hygiene",
        ],
    );
}

// Seed 002: vanilla, lowzone-v5r8. Seed 003: before and after the backport.

#[test]
fn seed002_vanilla_to_lowzone() {
    assert_delta("frag-vanilla", "frag-lowzone", &["alloc_nofragment"]);
    assert_eq!(p("frag-lowzone").alloc_nofragment, NoFragment::AllOrders);
}

#[test]
fn seed003_buddy_to_pcp() {
    assert_delta("pfrag-buddy", "pfrag-pcp", &["page_frag_free"]);
    assert_eq!(p("pfrag-pcp").page_frag_free, PageFragFree::PcpOrder0);
}

// Nikhil Dhama's 2025 free_high threshold series (no seed column).

#[test]
fn free_high_threshold_presets_differ_from_modern_by_the_threshold_only() {
    assert_eq!(p("modern").free_high_threshold, FreeHighThreshold::Batch);
    assert_delta("modern", "fhigh", &["free_high_threshold"]);
    assert_delta("modern", "fhigh-v2", &["free_high_threshold"]);
    assert_eq!(p("fhigh").free_high_threshold, FreeHighThreshold::BatchPlusHalfHighMin);
    assert_eq!(p("fhigh-v2").free_high_threshold, FreeHighThreshold::FiveBatches);
    assert!(!Preset::get("fhigh").unwrap().unmerged);
    assert!(Preset::get("fhigh-v2").unwrap().unmerged);
    // Every earlier preset kept the 6.7 threshold (the free_factor ones never read it).
    for preset in PRESETS.iter().filter(|p| !p.name.starts_with("fhigh")) {
        assert_eq!(preset.policy.free_high_threshold, FreeHighThreshold::Batch, "{}", preset.name);
    }
}

#[test]
fn legacy_4_18_differs_from_4_19_by_the_batch_cap_only() {
    assert_delta("frag-vanilla", "legacy-4.18", &["batch_cap"]);
    assert_eq!(p("legacy-4.18").batch_cap, BatchCap::HalfMib);
    for preset in PRESETS.iter().filter(|p| p.name != "legacy-4.18") {
        assert_eq!(preset.policy.batch_cap, BatchCap::OneMib, "{} is 4.19 or later", preset.name);
    }
    assert_eq!(BatchCap::HalfMib.cap_pages(), 128);
    assert_eq!(BatchCap::OneMib.cap_pages(), 256);
}

// Joshua Hahn's 2025 batched callers of free_pcppages_bulk (no seed column).

#[test]
fn bulk_free_callers_presets_differ_from_modern_by_the_switch_only() {
    assert_eq!(p("modern").bulk_free_callers, BulkFreeCallers::Whole);
    for (name, form) in [
        ("bbatch", BulkFreeCallers::Batched),
        ("bbatch-v4", BulkFreeCallers::BatchedStopBelowHigh),
        ("bbatch-v3", BulkFreeCallers::BatchedRecheckHigh),
        ("bbatch-v1", BulkFreeCallers::BatchedRecheckHighBatchDrains),
    ] {
        assert_delta("modern", name, &["bulk_free_callers"]);
        assert_eq!(p(name).bulk_free_callers, form, "{name}");
        assert_eq!(Preset::get(name).unwrap().unmerged, name != "bbatch", "{name}");
    }
    // Every earlier preset frees whole, as every kernel up to 6.18.
    for preset in PRESETS.iter().filter(|p| !p.name.starts_with("bbatch")) {
        assert_eq!(preset.policy.bulk_free_callers, BulkFreeCallers::Whole, "{}", preset.name);
    }
}

#[test]
fn free_high_threshold_pages() {
    // batch 63, high_min 3132 (docs/kernel-reference.md §2.9).
    assert_eq!(FreeHighThreshold::Batch.pages(63, 3132), 63);
    assert_eq!(FreeHighThreshold::FiveBatches.pages(63, 3132), 315);
    assert_eq!(FreeHighThreshold::BatchPlusHalfHighMin.pages(63, 3132), 63 + 1566);
    assert_eq!(FreeHighThreshold::BatchPlusHalfHighMin.pages(i32::MAX, 2), i32::MAX);
}

#[test]
fn baselines_across_series() {
    // 4.20 → 5.17: the 5.14 PCP work, 5.0 boosting and NOFRAGMENT, page_frag via PCP.
    assert_delta(
        "frag-vanilla",
        "hpc-vanilla",
        &[
            "pcp_lists",
            "pcp_high",
            "reclaim_active_limit",
            "free_batch_sizing",
            "page_frag_free",
            "alloc_nofragment",
            "watermark_boost",
        ],
    );
    // 5.18 → 6.6: one THP list and trylock (6.0), no prefetch (5.18), PGFREE in pages,
    // NOFRAGMENT only below pageblock order.
    assert_delta(
        "hpc-limit",
        "tune-base",
        &["pcp_lists", "pcp_locking", "bulk_free_prefetch", "pgfree_unit", "alloc_nofragment"],
    );
}

#[test]
fn every_switch_round_trips_every_value() {
    let mut policy = Policy::modern();
    for &key in Policy::KEYS {
        let values: Vec<SwitchValue> = match Policy::accepted(key).unwrap() {
            Accepted::Bool => vec![true.into(), false.into()],
            Accepted::Names(names) => names.iter().map(|&n| n.into()).collect(),
            other => panic!("{key}: unexpected {other:?}"),
        };
        for v in values {
            policy.set(key, v.clone()).unwrap();
            assert_eq!(policy.get(key), Some(v.clone()), "{key}");
            assert!(policy.switches().any(|(k, got)| k == key && got == v));
        }
    }
    assert_eq!(Policy::modern().switches().count(), Policy::KEYS.len());
    // Every preset survives a trip through its own key/value listing.
    for preset in PRESETS {
        let mut q = Policy::modern();
        for (k, v) in preset.policy.switches() {
            q.set(k, v).unwrap();
        }
        assert_eq!(q, preset.policy, "{}", preset.name);
    }
}

#[test]
fn enum_names_are_kebab_case_and_round_trip() {
    fn check<T: SwitchType + PartialEq + fmt::Debug>(
        all: &[T],
        names: &[&str],
        name: fn(T) -> &'static str,
    ) {
        assert_eq!(all.len(), names.len());
        for (&v, &n) in all.iter().zip(names) {
            assert_eq!(name(v), n);
            assert!(n.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-'));
            assert_eq!(T::from_value("k", &SwitchValue::from(n)), Ok(v));
        }
    }
    check(PcpLists::ALL, PcpLists::NAMES, PcpLists::name);
    check(PcpLocking::ALL, PcpLocking::NAMES, PcpLocking::name);
    check(PcpHigh::ALL, PcpHigh::NAMES, PcpHigh::name);
    check(ReclaimActiveLimit::ALL, ReclaimActiveLimit::NAMES, ReclaimActiveLimit::name);
    check(HighDecay::ALL, HighDecay::NAMES, HighDecay::name);
    check(FreeBatchSizing::ALL, FreeBatchSizing::NAMES, FreeBatchSizing::name);
    check(FreeHigh::ALL, FreeHigh::NAMES, FreeHigh::name);
    check(FreeHighBatch::ALL, FreeHighBatch::NAMES, FreeHighBatch::name);
    check(FreeHighDrain::ALL, FreeHighDrain::NAMES, FreeHighDrain::name);
    check(RefillSizing::ALL, RefillSizing::NAMES, RefillSizing::name);
    check(BulkFree::ALL, BulkFree::NAMES, BulkFree::name);
    check(BuddyPrefetch::ALL, BuddyPrefetch::NAMES, BuddyPrefetch::name);
    check(PgfreeUnit::ALL, PgfreeUnit::NAMES, PgfreeUnit::name);
    check(PageFragFree::ALL, PageFragFree::NAMES, PageFragFree::name);
    check(NoFragment::ALL, NoFragment::NAMES, NoFragment::name);
    for &key in Policy::KEYS.iter().chain(Tunables::KEYS) {
        assert!(key.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_'));
    }
}

#[test]
fn policy_errors_name_the_key_and_the_accepted_values() {
    let mut policy = Policy::modern();
    let err = policy.set("free_hihg", "off".into()).unwrap_err();
    assert_eq!(err, PolicyError::UnknownKey { key: "free_hihg".into(), known: KeySet::Switches });
    let msg = err.to_string();
    assert!(msg.contains("free_hihg") && msg.contains("free_high_batch"), "{msg}");

    let err = policy.set("free_high", "sometimes".into()).unwrap_err();
    assert_eq!(err.key(), "free_high");
    assert!(matches!(err, PolicyError::OutOfRange { accepted: Accepted::Names(n), .. }
        if n == FreeHigh::NAMES));
    let msg = err.to_string();
    assert!(msg.contains("off, any-high-order, consecutive"), "{msg}");

    let err = policy.set("zone_below_high", SwitchValue::Int(1)).unwrap_err();
    assert_eq!(
        err,
        PolicyError::WrongKind {
            key: "zone_below_high",
            got: ValueKind::Int,
            accepted: Accepted::Bool
        }
    );
    let err = policy.set("bulk_free", true.into()).unwrap_err();
    assert!(matches!(err, PolicyError::WrongKind { key: "bulk_free", got: ValueKind::Bool, .. }));
    // A tunable is not a switch.
    assert!(matches!(
        policy.set("pcp_batch_scale_max", SwitchValue::Int(5)),
        Err(PolicyError::UnknownKey { known: KeySet::Switches, .. })
    ));
    assert_eq!(policy, Policy::modern(), "failed sets change nothing");
}

#[test]
fn tunables_round_trip_every_key() {
    let mut t = Tunables::default();
    t.validate().unwrap();
    let cases: Vec<(&str, SwitchValue)> = vec![
        ("percpu_pagelist_high_fraction", SwitchValue::Int(0)),
        ("percpu_pagelist_high_fraction", SwitchValue::Int(8)),
        ("pcp_batch_scale_max", SwitchValue::Int(0)),
        ("pcp_batch_scale_max", SwitchValue::Int(6)),
        ("decay_period_ticks", SwitchValue::Int(10)),
        ("min_free_kbytes", SwitchValue::Int(67_584)),
        ("min_free_kbytes", "default".into()),
        ("watermark_scale_factor", SwitchValue::Int(3000)),
        ("watermark_boost_factor", SwitchValue::Int(0)),
        ("lowmem_reserve_ratio", vec![256, 256, 32, 0].into()),
    ];
    for (key, v) in cases {
        t.set(key, v.clone()).unwrap();
        assert_eq!(t.get(key), Some(v), "{key}");
        t.validate().unwrap();
    }
    assert_eq!(t.values().count(), Tunables::KEYS.len());
    for &key in Tunables::KEYS {
        assert!(Tunables::accepted(key).is_some(), "{key}");
        let v = t.get(key).unwrap();
        let mut u = Tunables::DEFAULT;
        u.set(key, v.clone()).unwrap();
        assert_eq!(u.get(key), Some(v));
    }
    // The sysctl stores ratios below 1 as 0.
    t.set("lowmem_reserve_ratio", vec![-5, 0, 1, 7].into()).unwrap();
    assert_eq!(t.lowmem_reserve_ratio, [0, 0, 1, 7]);
}

#[test]
fn tunables_refuse_out_of_range_and_wrong_kind() {
    let mut t = Tunables::default();
    for (key, v) in [
        ("percpu_pagelist_high_fraction", SwitchValue::Int(7)),
        ("percpu_pagelist_high_fraction", SwitchValue::Int(-1)),
        ("pcp_batch_scale_max", SwitchValue::Int(7)),
        ("decay_period_ticks", SwitchValue::Int(0)),
        ("min_free_kbytes", SwitchValue::Int(-1)),
        ("min_free_kbytes", "auto".into()),
        ("watermark_scale_factor", SwitchValue::Int(0)),
        ("watermark_scale_factor", SwitchValue::Int(3001)),
        ("watermark_boost_factor", SwitchValue::Int(INT_MAX + 1)),
        ("lowmem_reserve_ratio", vec![256, 256, 32].into()),
        ("lowmem_reserve_ratio", vec![256, 256, 32, INT_MAX + 1].into()),
    ] {
        let err = t.set(key, v.clone()).unwrap_err();
        assert!(matches!(err, PolicyError::OutOfRange { .. }), "{key} = {v}: {err:?}");
        assert_eq!(err.key(), key);
        assert!(err.to_string().contains(key));
    }
    for (key, v) in [
        ("pcp_batch_scale_max", SwitchValue::from("5")),
        ("lowmem_reserve_ratio", SwitchValue::Int(32)),
        ("watermark_boost_factor", SwitchValue::Bool(true)),
    ] {
        assert!(matches!(t.set(key, v), Err(PolicyError::WrongKind { .. })), "{key}");
    }
    assert!(matches!(
        t.set("free_high", "off".into()),
        Err(PolicyError::UnknownKey { known: KeySet::Tunables, .. })
    ));
    assert_eq!(t, Tunables::DEFAULT, "failed sets change nothing");
    let msg = t.set("watermark_scale_factor", SwitchValue::Int(0)).unwrap_err().to_string();
    assert!(msg.contains("1..=3000"), "{msg}");
}

#[test]
fn validate_names_the_field() {
    let cases: [(&str, Tunables); 5] = [
        (
            "percpu_pagelist_high_fraction",
            Tunables { percpu_pagelist_high_fraction: 4, ..Tunables::DEFAULT },
        ),
        ("pcp_batch_scale_max", Tunables { pcp_batch_scale_max: 7, ..Tunables::DEFAULT }),
        ("decay_period_ticks", Tunables { decay_period_ticks: 0, ..Tunables::DEFAULT }),
        ("watermark_scale_factor", Tunables { watermark_scale_factor: 0, ..Tunables::DEFAULT }),
        (
            "lowmem_reserve_ratio",
            Tunables { lowmem_reserve_ratio: [256, 256, 1 << 40, 0], ..Tunables::DEFAULT },
        ),
    ];
    for (key, t) in cases {
        let err = t.validate().unwrap_err();
        assert_eq!(err.key(), key);
    }
    let t = Tunables { min_free_kbytes: Some(1 << 40), ..Tunables::DEFAULT };
    assert_eq!(t.validate().unwrap_err().key(), "min_free_kbytes");
}

#[test]
fn set_key_dispatches_to_switches_and_tunables() {
    let mut policy = Policy::modern();
    let mut t = Tunables::default();
    set_key(&mut policy, &mut t, "high_decay", "four-fifths".into()).unwrap();
    set_key(&mut policy, &mut t, "pcp_batch_scale_max", SwitchValue::Int(3)).unwrap();
    assert_eq!(policy.high_decay, HighDecay::FourFifths);
    assert_eq!(t.pcp_batch_scale_max, 3);
    let err = set_key(&mut policy, &mut t, "nope", SwitchValue::Int(1)).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("high_decay") && msg.contains("min_free_kbytes"), "{msg}");
}

#[test]
fn pcp_list_layouts() {
    for layout in PcpLists::ALL.iter().copied() {
        assert!(layout.nr_lists() <= MAX_NR_PCP_LISTS);
        // pindex is a bijection from cached (order, type) classes onto 0..nr_lists.
        let mut hit = [false; MAX_NR_PCP_LISTS];
        for order in Order::all() {
            for mt in 0..PCP_TYPES {
                match layout.pindex(order, mt) {
                    Some(i) => {
                        assert!(layout.caches_order(order));
                        assert_eq!(layout.pindex_order(i), Some(order));
                        hit[i] = true;
                    }
                    None => assert!(!layout.caches_order(order)),
                }
            }
        }
        assert!(hit[..layout.nr_lists()].iter().all(|&h| h), "{layout}");
        assert_eq!(layout.pindex_order(layout.nr_lists()), None);
        assert_eq!(layout.pindex(Order(0), PCP_TYPES), None);
    }
    assert_eq!(PcpLists::Order0Only.nr_lists(), 3);
    assert_eq!(PcpLists::ThpPerMigratetype.nr_lists(), 15);
    assert_eq!(PcpLists::ThpShared.nr_lists(), 13);
    assert_eq!(PcpLists::ThpMovableSplit.nr_lists(), 14);
    assert_eq!(PcpLists::ThpPerMigratetype.pindex(Order(9), 2), Some(14));
    assert_eq!(PcpLists::ThpShared.pindex(Order(9), 1), Some(12));
    assert_eq!(PcpLists::ThpMovableSplit.pindex(Order(9), 1), Some(13));
    assert_eq!(PcpLists::ThpMovableSplit.pindex(Order(9), 2), Some(12));
    assert_eq!(PcpLists::ThpShared.pindex(Order(3), 1), Some(10));
    assert!(!PcpLists::Order0Only.caches_order(Order(3)));
    assert!(!PcpLists::ThpShared.caches_order(Order(4)));
}

#[test]
fn free_high_batch_rules() {
    // batch 63: v3 needs an LLC slice above 189 pages, v1 a data-slice sum above 252.
    let kib = 1024;
    assert!(!FreeHighBatch::LlcSliceOver3Batch.flag(0, 189 * 4 * kib, 63));
    assert!(FreeHighBatch::LlcSliceOver3Batch.flag(0, 190 * 4 * kib, 63));
    assert!(!FreeHighBatch::DataSlicesOver4Batch.flag(252 * 4 * kib, u64::MAX, 63));
    assert!(FreeHighBatch::DataSlicesOver4Batch.flag(253 * 4 * kib, 0, 63));
    assert!(!FreeHighBatch::Off.flag(u64::MAX, u64::MAX, 1));
}

#[test]
fn nofragment_floor() {
    assert!(!NoFragment::Off.is_on());
    assert!(NoFragment::AllOrders.floors(Order(10)));
    assert!(!NoFragment::BelowPageblock.floors(Order(9)));
    assert!(NoFragment::BelowPageblock.floors(Order(8)));
}

/// One markdown matrix: a row per switch, a column per preset; a value that differs from
/// the first column (the baseline, as in the seeds' tables) is bold.
fn matrix(names: &[&str]) -> String {
    let mut out = String::from("| switch |");
    for n in names {
        out += &format!(" `{n}` |");
    }
    out += "\n|---|";
    for _ in names {
        out += "---|";
    }
    out.push('\n');
    for &key in Policy::KEYS {
        out += &format!("| `{key}` |");
        let base = p(names[0]).get(key).unwrap();
        for n in names {
            let v = p(n).get(key).unwrap();
            let text = match &v {
                SwitchValue::Str(s) => s.clone(),
                other => other.to_string(),
            };
            if v != base {
                out += &format!(" **{text}** |");
            } else {
                out += &format!(" {text} |");
            }
        }
        out.push('\n');
    }
    out
}

const MATRIX_GROUPS: [&[&str]; 6] = [
    &["hpc-vanilla", "hpc-revert", "hpc-opt-v1", "hpc-opt", "hpc-limit-v1", "hpc-limit", "modern"],
    &["tune-base", "tune-p1", "tune-p3", "tune-p5", "tune-p7", "tune-p9", "tune-p10", "modern"],
    &["frag-vanilla", "frag-lowzone", "pfrag-buddy", "pfrag-pcp", "hpc-vanilla"],
    &["modern", "fhigh-v2", "fhigh"],
    &["frag-vanilla", "legacy-4.18"],
    &["modern", "bbatch-v1", "bbatch-v3", "bbatch-v4", "bbatch"],
];

#[test]
fn docs_matrices_match_the_code() {
    let doc = include_str!("../../../../docs/presets.md");
    for group in MATRIX_GROUPS {
        let m = matrix(group);
        assert!(doc.contains(&m), "docs/presets.md lacks or has a stale matrix:\n{m}");
    }
    for &key in Policy::KEYS.iter().chain(Tunables::KEYS) {
        assert!(doc.contains(&format!("### `{key}`")), "docs/presets.md lacks {key}");
    }
    for name in PRESET_NAMES {
        assert!(doc.contains(&format!("### `{name}`")), "docs/presets.md lacks {name}");
    }
}

/// `cargo test -- --ignored --nocapture print_matrices` prints the tables for the doc.
#[test]
#[ignore]
fn print_matrices() {
    for group in MATRIX_GROUPS {
        std::println!("{}", matrix(group));
    }
}

/// A preset that models a posted-but-unmerged form never claims a mainline release, and one
/// that mainline ran or merged is not flagged unmerged.
#[test]
fn mainline_agrees_with_unmerged() {
    for p in PRESETS {
        if p.unmerged {
            assert_eq!(p.mainline, Mainline::Never, "{}", p.name);
        }
    }
    let merged = |n| Preset::get(n).map(|p| p.mainline);
    assert_eq!(merged("hpc-opt"), Some(Mainline::MergedIn("5.18")));
    assert_eq!(merged("fhigh"), Some(Mainline::Ran("6.16")));
    assert_eq!(merged("fhigh-v2"), Some(Mainline::Never));
    assert_eq!(merged("bbatch"), Some(Mainline::MergedIn("6.19")));
}

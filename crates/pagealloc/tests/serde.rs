//! The `serde` feature: policies, tunables and counters round-trip, and read as a preset file
//! and `/proc/vmstat` name them.
#![cfg(feature = "serde")]

use pagealloc::policy::{SwitchValue, PRESET_NAMES};
use pagealloc::{Counter, CpuId, Gfp, MemoryMap, Order, PageAllocator, Policy, Tunables, VmEvents};

#[test]
fn every_preset_round_trips_with_its_switches_named_as_preset_files_name_them() {
    for name in PRESET_NAMES {
        let p = Policy::preset(name).unwrap();
        let json = serde_json::to_value(p).unwrap();
        // Each switch's value is the name `Policy::get` gives it (the preset-file spelling).
        for key in Policy::KEYS {
            let ours = match p.get(key).unwrap() {
                SwitchValue::Str(s) => s,
                v => v.to_string(),
            };
            let theirs = &json[key];
            let theirs = theirs.as_str().map_or_else(|| theirs.to_string(), str::to_owned);
            assert_eq!(ours, theirs, "{name}: {key}");
        }
        assert_eq!(serde_json::from_value::<Policy>(json).unwrap(), p, "{name}");
    }
    let t = Tunables::default().with(|t| t.min_free_kbytes = Some(65_536));
    assert_eq!(serde_json::from_str::<Tunables>(&serde_json::to_string(&t).unwrap()).unwrap(), t);
}

#[test]
fn counters_are_their_vmstat_names_and_unknown_names_are_refused() {
    let pa = PageAllocator::new(
        MemoryMap::single_node(1, 64 << 20).unwrap(),
        Tunables::default(),
        Policy::modern(),
    )
    .unwrap();
    let cpu = pa.cpu(CpuId(0)).unwrap();
    let pfn = pa.alloc_pages(cpu, Gfp::KERNEL, Order(0)).unwrap();
    pa.free_pages(cpu, pfn, Order(0)).unwrap();
    let ev = pa.vm_events();
    let json = serde_json::to_value(ev).unwrap();
    assert_eq!(json["pgfree"], ev.get(Counter::Pgfree));
    assert_eq!(serde_json::from_value::<VmEvents>(json).unwrap(), ev);
    assert_eq!(serde_json::to_string(&Counter::Pgfree).unwrap(), "\"pgfree\"");
    let err = serde_json::from_str::<VmEvents>(r#"{"pgfree": 1, "pgfreed": 2}"#).unwrap_err();
    assert!(err.to_string().contains("pgfreed"), "{err}");
    let sparse = serde_json::from_str::<VmEvents>(r#"{"pgfree": 7}"#).unwrap();
    assert_eq!((sparse.get(Counter::Pgfree), sparse.get(Counter::PcpFree)), (7, 0));
}

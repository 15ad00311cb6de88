//! Machines: the built-ins, the derived zones, domains and cache shares, `--cpus`, and every
//! way a machine file can be wrong.

use super::*;
use pagealloc::PCPF_FREE_HIGH_BATCH;
use pagealloc::{CpuId, Policy};

/// A user machine file's text, parsed as `dir/box.toml`.
fn parse(text: &str) -> Result<Machine> {
    file::parse(Path::new("dir/box.toml"), text)
}

/// The error `text` gives, with its causes.
fn err(text: &str) -> String {
    format!("{:#}", parse(text).expect_err("the file should be refused"))
}

/// A valid two-node machine file used as a base by several tests (line numbers matter).
const TWO_NODES: &str = r#"name = "box"
description = "a test box"
source = "the test"
arch = "x86_64"
min_free_kbytes = 8192
watermark_scale_factor = 20
assumptions = ["all of it"]

[[node]]
cpus = 4
memory_gib = 2
llc_mib = 8
llc_shared_by = 4
l2_kib = 1024
l2_shared_by = 2
l1d_kib = 48

[[node]]
cpus = 2
memory_mib = 1536
llc_kib = 4096
"#;

#[test]
fn every_builtin_parses_validates_and_builds_a_memory_map() {
    let names: Vec<_> = builtin_names().collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "BUILTINS is sorted by name");
    assert_eq!(
        names,
        [
            "cascadelake-2s",
            "cortex-a53",
            "haswell-2s-48",
            "icl-2s-128",
            "lab-2cpu",
            "skylake-1s",
            "spr-2s-224",
            "unknown-micro",
            "unknown-trace"
        ]
    );
    let all = Machine::builtins();
    assert_eq!(all.len(), names.len());
    for (m, name) in all.iter().zip(&names) {
        assert_eq!(&m.name, name, "the file's name is its table name");
        assert!(m.file.is_none());
        assert!(!m.description.is_empty() && !m.source.is_empty(), "{name}");
        assert!(!m.assumptions.is_empty(), "{name}: every built-in assumes something");
        m.validate().unwrap();
        // No PageAllocator here: 512 GiB of frames is too much for a unit test.
        let map = m.memory_map().unwrap();
        assert_eq!(map.nr_cpus(), m.nr_cpus(), "{name}");
        assert_eq!(map.nr_nodes(), m.nodes.len(), "{name}");
        assert_eq!(map.present_pages() * PAGE_SIZE, m.memory_bytes(), "{name}");
        let spans = m.zone_spans();
        assert_eq!(spans.iter().map(ZoneSpan::pages).sum::<u64>(), map.present_pages());
        assert!(spans.iter().all(|z| z.pages() == z.pfns.end.0 - z.pfns.start.0), "no holes");
        assert_eq!(Machine::resolve(name).unwrap(), *m);
    }
}

#[test]
fn builtins_have_the_sizes_their_sources_give() {
    // (name, nodes, CPUs, memory GiB, LLC bytes per domain, CPUs per domain, arch)
    let table: &[(&str, usize, u32, u64, u64, u32, Arch)] = &[
        ("skylake-1s", 1, 8, 32, 8 * MIB, 8, Arch::X86_64),
        ("cascadelake-2s", 2, 80, 192, 55 * MIB / 2, 40, Arch::X86_64),
        ("spr-2s-224", 2, 224, 512, 105 * MIB, 112, Arch::X86_64),
        ("icl-2s-128", 2, 128, 256, 48 * MIB, 64, Arch::X86_64),
        ("haswell-2s-48", 2, 48, 64, 30 * MIB, 24, Arch::X86_64),
        ("cortex-a53", 1, 24, 16, 4 * MIB, 24, Arch::Arm64),
        ("unknown-trace", 1, 16, 64, 32 * MIB, 16, Arch::X86_64),
        ("unknown-micro", 2, 28, 64, 35 * MIB, 14, Arch::X86_64),
        ("lab-2cpu", 1, 2, 4, 32 * MIB, 2, Arch::X86_64),
    ];
    for &(name, nodes, cpus, gib, llc, shared, arch) in table {
        let m = Machine::builtin(name).unwrap();
        assert_eq!(
            (m.nodes.len(), m.nr_cpus(), m.memory_bytes(), m.arch),
            (nodes, cpus, gib * GIB, arch),
            "{name}"
        );
        assert_eq!(m.nr_llc_domains(), nodes, "{name}: one LLC per socket");
        for d in 0..m.nr_llc_domains() {
            assert_eq!(m.llc_bytes_of_domain(d), llc, "{name}");
            assert_eq!(m.llc_domain_cpus(d).1.len() as u32, shared, "{name}");
        }
        assert_eq!(m.min_free_kbytes, None, "{name}: the kernel computes it");
        assert_eq!(m.watermark_scale_factor, None, "{name}");
    }
}

#[test]
fn lab_2cpu_builds_an_allocator_with_its_zones_cpus_and_cache_flag() {
    let m = Machine::builtin("lab-2cpu").unwrap();
    let pa = PageAllocator::new(
        m.memory_map().unwrap(),
        m.tunables(Tunables::default()),
        Policy::modern(),
    )
    .unwrap();
    assert_eq!(pa.nr_cpus(), 2);
    assert_eq!(pa.nr_nodes(), 1);
    let got: Vec<_> = pa.zones().iter().map(|z| (z.zone_type(), z.present_pages().0)).collect();
    assert_eq!(
        got,
        [(ZoneType::Dma, 4096), (ZoneType::Dma32, 782_336), (ZoneType::Normal, 262_144)],
        "the 4 GiB layout of realdata jc-zoneinfo (the PCI hole at 3-4 GiB)"
    );
    let spans: Vec<_> = m.zone_spans().iter().map(|z| (z.zone, z.pages())).collect();
    assert_eq!(got, spans, "zone_spans predicts the allocator's zones");
    assert_eq!(pa.min_free_kbytes(), m.boot_min_free_kbytes());
    // A 16 MiB LLC slice is far above 3 × batch pages: FREE_HIGH_BATCH on every CPU.
    assert_eq!(m.cache_info(1).llc_slice_bytes, 16 * MIB);
    for zone in pa.zones().iter().filter(|z| z.present_pages().0 > 0) {
        for cpu in 0..2 {
            let pcp = zone.pcp(CpuId(cpu)).unwrap();
            assert_ne!(pcp.flags & PCPF_FREE_HIGH_BATCH, 0, "{} cpu {cpu}", zone.zone_type());
        }
    }
    // A 256 KiB LLC over 2 CPUs is 32 pages a CPU: the flag stays off.
    let mut small = m.clone();
    small.nodes[0].llc_bytes = 256 * KIB;
    let pa = PageAllocator::new(small.memory_map().unwrap(), Tunables::default(), Policy::modern())
        .unwrap();
    let normal = pa.zone_by_type(NodeId(0), ZoneType::Normal).unwrap();
    assert_eq!(normal.pcp(CpuId(0)).unwrap().flags & PCPF_FREE_HIGH_BATCH, 0);
}

#[test]
fn boot_min_free_kbytes_and_zones_agree_with_the_allocator() {
    // Small machines of every layout: 2 nodes split by the hole, arm64, a memory-only node.
    let two = parse(TWO_NODES).unwrap();
    let mut two_default = two.clone();
    two_default.min_free_kbytes = None;
    let arm = parse("arch = \"arm64\"\n[[node]]\ncpus = 2\nmemory_gib = 6\nllc_mib = 1\n").unwrap();
    let memonly = parse(
        "[[node]]\ncpus = 2\nmemory_mib = 512\nllc_mib = 1\n[[node]]\ncpus = 0\nmemory_mib = 256\n",
    )
    .unwrap();
    for m in [&two, &two_default, &arm, &memonly] {
        let pa = PageAllocator::new(
            m.memory_map().unwrap(),
            m.tunables(Tunables::default()),
            Policy::modern(),
        )
        .unwrap();
        m.apply_cpu_caches(&pa);
        assert_eq!(pa.min_free_kbytes(), m.boot_min_free_kbytes(), "{m:?}");
        let got: Vec<_> = pa
            .zones()
            .iter()
            .filter(|z| z.present_pages().0 > 0)
            .map(|z| (z.node().index(), z.zone_type(), z.present_pages().0))
            .collect();
        let want: Vec<_> = m.zone_spans().iter().map(|z| (z.node, z.zone, z.pages())).collect();
        assert_eq!(got, want, "{m:?}");
        for n in 0..m.nodes.len() {
            assert_eq!(pa.nr_cpus_of_node(NodeId(n as u32)), m.nodes[n].cpus);
        }
    }
    assert_eq!(two.boot_min_free_kbytes(), 8192, "the machine's own value");
    // 2 GiB + 1.5 GiB: node 1 starts at 2 GiB, goes to 3 GiB, resumes at 4 GiB.
    let ranges = two.node_ranges();
    assert_eq!((ranges[0].len(), ranges[0][0].clone()), (1, 0..2 * GIB));
    assert_eq!(ranges[1], [2 * GIB..3 * GIB, 4 * GIB..(4 * GIB + GIB / 2)]);
    let zones: Vec<_> = two.zone_spans().iter().map(|z| (z.node, z.zone)).collect();
    assert_eq!(
        zones,
        [(0, ZoneType::Dma), (0, ZoneType::Dma32), (1, ZoneType::Dma32), (1, ZoneType::Normal)]
    );
    assert_eq!(arm.zone_spans()[0].zone, ZoneType::Dma32, "arm64: no 16 MiB zone");
    assert_eq!(arm.zone_spans()[0].pages(), 1 << 20);
}

#[test]
fn big_machines_have_the_zones_their_layout_gives() {
    let spr = Machine::builtin("spr-2s-224").unwrap();
    let z: Vec<_> = spr.zone_spans().iter().map(|z| (z.node, z.zone, z.pages())).collect();
    let gib_pages = GIB / PAGE_SIZE;
    assert_eq!(
        z,
        [
            (0, ZoneType::Dma, 4096),
            (0, ZoneType::Dma32, 3 * gib_pages - 4096),
            (0, ZoneType::Normal, 253 * gib_pages),
            (1, ZoneType::Normal, 256 * gib_pages),
        ]
    );
    // isqrt(16 × 512 GiB in KiB) = 92681 beats the THP value (4 zones × 11 pageblocks).
    assert_eq!(spr.boot_min_free_kbytes(), 92_681);
    let a53 = Machine::builtin("cortex-a53").unwrap();
    let z: Vec<_> = a53.zone_spans().iter().map(|z| (z.zone, z.pages())).collect();
    assert_eq!(z, [(ZoneType::Dma32, 4 * gib_pages), (ZoneType::Normal, 12 * gib_pages)]);
}

#[test]
fn llc_domains_are_numbered_over_the_machine_in_cpu_order() {
    let spr = Machine::builtin("spr-2s-224").unwrap();
    assert_eq!(spr.nr_llc_domains(), 2);
    assert_eq!([0, 111, 112, 223].map(|c| spr.llc_domain(c)), [0, 0, 1, 1]);
    assert_eq!([0, 111, 112, 223].map(|c| spr.node_of_cpu(c)), [0, 0, 1, 1]);
    assert_eq!(spr.cpus_of_node(1), 112..224);
    assert_eq!(spr.llc_domain_cpus(1), (1, 112..224));
    // Sub-NUMA style: 10 CPUs in LLCs of 4 (the last holds 2), then a node of 6 in one LLC.
    let m = parse(
        "[[node]]\ncpus = 10\nmemory_gib = 1\nllc_mib = 8\nllc_shared_by = 4\n\
         [[node]]\ncpus = 6\nmemory_gib = 1\nllc_mib = 3\n",
    )
    .unwrap();
    assert_eq!(m.nr_llc_domains(), 4);
    let domains: Vec<_> = (0..16).map(|c| m.llc_domain(c)).collect();
    assert_eq!(domains, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 3, 3, 3, 3]);
    assert_eq!(m.llc_domain_cpus(2), (0, 8..10));
    assert_eq!(m.llc_domain_cpus(3), (1, 10..16));
    assert_eq!(m.llc_bytes_of_domain(3), 3 * MIB);
    // The kernel divides by the CPUs actually sharing: the short domain's CPUs get more.
    assert_eq!(m.cache_info(0).llc_slice_bytes, 2 * MIB);
    assert_eq!(m.cache_info(9).llc_slice_bytes, 4 * MIB);
    assert_eq!(m.cache_info(10).llc_slice_bytes, MIB / 2);
}

#[test]
fn cache_info_sums_the_data_cache_slices_when_known() {
    let spr = Machine::builtin("spr-2s-224").unwrap();
    // 105 MiB / 112 + 2 MiB / 2 + 48 KiB / 2 = 960 + 1024 + 24 KiB.
    assert_eq!(
        spr.cache_info(200),
        CacheInfo { llc_slice_bytes: 960 * KIB, data_slices_bytes: 2008 * KIB }
    );
    // Without the L2 and L1d, the v1 input stays unknown (0).
    let unknown = parse("[[node]]\ncpus = 16\nmemory_gib = 1\nllc_mib = 32\n").unwrap();
    assert_eq!(unknown.cache_info(0), CacheInfo { llc_slice_bytes: 2 * MIB, data_slices_bytes: 0 });
}

#[test]
fn with_cpus_spreads_cpus_and_keeps_llc_sizes() {
    let spr = Machine::builtin("spr-2s-224").unwrap();
    let m8 = spr.with_cpus(8).unwrap();
    assert_eq!(m8.nodes.iter().map(|n| n.cpus).collect::<Vec<_>>(), [4, 4]);
    assert_eq!(m8.nodes[0].llc_shared_by, 4);
    assert_eq!(m8.nodes[0].llc_bytes, 105 * MIB);
    assert_eq!(m8.nodes[0].l2, Some(CacheLevel { bytes: 2 * MIB, shared_by: 2 }));
    assert_eq!(m8.memory_bytes(), spr.memory_bytes());
    assert_eq!(m8.nr_llc_domains(), 2);
    assert_eq!(m8.cache_info(0).llc_slice_bytes, 105 * MIB / 4);
    assert_eq!(m8.name, spr.name);
    assert!(m8.assumptions.last().unwrap().starts_with("--cpus 8: 224 CPUs in the source"));
    m8.memory_map().unwrap();

    let m3 = spr.with_cpus(3).unwrap();
    assert_eq!(
        m3.nodes.iter().map(|n| (n.cpus, n.llc_shared_by)).collect::<Vec<_>>(),
        [(2, 2), (1, 1)]
    );
    assert_eq!(m3.nodes[1].l2.unwrap().shared_by, 1, "capped at the node's CPUs");
    assert_eq!(spr.with_cpus(224).unwrap(), spr, "the same count changes nothing");

    // A node with two LLC domains keeps two while it has the CPUs for them.
    let snc =
        parse("[[node]]\ncpus = 10\nmemory_gib = 1\nllc_mib = 8\nllc_shared_by = 5\n").unwrap();
    let s3 = snc.with_cpus(3).unwrap();
    assert_eq!((s3.nodes[0].llc_shared_by, s3.nr_llc_domains()), (2, 2));
    let s1 = snc.with_cpus(1).unwrap();
    assert_eq!((s1.nodes[0].llc_shared_by, s1.nr_llc_domains()), (1, 1));

    for bad in [0, 1, MAX_CPUS + 1] {
        let e = format!("{:#}", spr.with_cpus(bad).unwrap_err());
        assert!(e.contains(&format!("--cpus {bad}")) && e.contains("between 2"), "{e}");
    }
    // Memory-only nodes keep no CPUs.
    let memonly = parse(
        "[[node]]\ncpus = 2\nmemory_gib = 1\nllc_mib = 1\n[[node]]\ncpus = 0\nmemory_gib = 1\n",
    )
    .unwrap();
    let m = memonly.with_cpus(5).unwrap();
    assert_eq!(m.nodes.iter().map(|n| n.cpus).collect::<Vec<_>>(), [5, 0]);
}

#[test]
fn tunables_apply_what_the_machine_sets() {
    let m = parse(TWO_NODES).unwrap();
    let t = m.tunables(Tunables::default());
    assert_eq!((t.min_free_kbytes, t.watermark_scale_factor), (Some(8192), 20));
    let base = Tunables::default().with(|t| t.pcp_batch_scale_max = 3);
    let spr = Machine::builtin("spr-2s-224").unwrap();
    assert_eq!(spr.tunables(base), base, "a machine that sets nothing changes nothing");
    // min_free_kbytes = 0 is "the kernel's value", as leaving it out.
    let z =
        parse("min_free_kbytes = 0\n[[node]]\ncpus = 1\nmemory_gib = 1\nllc_mib = 1\n").unwrap();
    assert_eq!(z.min_free_kbytes, None);
}

#[test]
fn a_user_file_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("box.toml");
    std::fs::write(&path, TWO_NODES).unwrap();
    let m = Machine::load(&path).unwrap();
    assert_eq!(m.file.as_deref(), Some(path.as_path()));
    assert_eq!(
        (m.name.as_str(), m.description.as_str(), m.source.as_str(), m.arch),
        ("box", "a test box", "the test", Arch::X86_64)
    );
    assert_eq!((m.min_free_kbytes, m.watermark_scale_factor), (Some(8192), Some(20)));
    assert_eq!(m.assumptions, ["all of it"]);
    assert_eq!(
        m.nodes,
        [
            NodeSpec {
                cpus: 4,
                memory_bytes: 2 * GIB,
                llc_bytes: 8 * MIB,
                llc_shared_by: 4,
                l2: Some(CacheLevel { bytes: MIB, shared_by: 2 }),
                l1d: Some(CacheLevel { bytes: 48 * KIB, shared_by: 1 }),
            },
            NodeSpec {
                cpus: 2,
                memory_bytes: 1536 * MIB,
                llc_bytes: 4 * MIB,
                llc_shared_by: 2,
                l2: None,
                l1d: None,
            },
        ]
    );
    assert_eq!(Machine::resolve(path.to_str().unwrap()).unwrap(), m);
    // to_toml writes a file that reads back as the same machine, for it and every built-in.
    let again = file::parse(&path, &m.to_toml()).unwrap();
    assert_eq!(again, m);
    // A measured wake spread too.
    let mut host = Machine::builtin("lab-2cpu").unwrap();
    let mut h = host.hierarchy.clone().unwrap();
    let mut wake = hierarchy::Sourced::new(47.0, "measured here");
    wake.quantiles = vec![35.5, 47.0, 60.25];
    h.set(hierarchy::Level::WakeIdle, wake);
    host.hierarchy = Some(h);
    let text = host.to_toml();
    assert!(text.contains("quantiles = [35.5, 47, 60.25]"), "{text}");
    assert_eq!(file::parse_builtin(Path::new("x.toml"), &text).unwrap(), host);
    for b in Machine::builtins().iter().chain([&m.with_cpus(5).unwrap()]) {
        let text = b.to_toml();
        let back = file::parse_builtin(Path::new("x.toml"), &text).unwrap();
        assert_eq!(back, Machine { file: None, ..b.clone() }, "{text}");
    }
    // Floats for sizes where they make whole bytes; dotted and inline forms are the same.
    let f = parse(
        "[[node]]\ncpus = 1\nmemory_gib = 1.5\nllc_mib = 27.5\n\
         [[node]]\ncpus = 1\nmemory_kib = 1048576\nllc_kib = 0x400\n",
    )
    .unwrap();
    assert_eq!(f.nodes[0].memory_bytes, 3 * GIB / 2);
    assert_eq!(f.nodes[0].llc_bytes, 55 * MIB / 2);
    assert_eq!((f.nodes[1].memory_bytes, f.nodes[1].llc_bytes), (GIB, MIB));
    let g = parse("node = [{ cpus = 1, memory_gib = 1, llc_mib = 1 }]\n").unwrap();
    assert_eq!(g.nodes.len(), 1);
    assert_eq!(g.name, "box", "the file stem");
}

#[test]
fn resolve_takes_names_and_files() {
    assert_eq!(Machine::resolve("lab-2cpu").unwrap().name, "lab-2cpu");
    let e = format!("{:#}", Machine::resolve("nope").unwrap_err());
    assert!(e.contains("unknown machine `nope`"), "{e}");
    assert!(e.contains("cascadelake-2s, cortex-a53, haswell-2s-48"), "{e}");
    assert!(e.contains("or give a path to a .toml machine file"), "{e}");
    let e = format!("{:#}", Machine::resolve("missing/box.toml").unwrap_err());
    assert!(e.contains("cannot read machine file `missing/box.toml`"), "{e}");
}

/// Each case: a machine file and what its error must contain (file:line, field, reason).
fn check_errors(cases: &[(&str, &[&str])]) {
    for (text, wanted) in cases {
        let e = err(text);
        for w in *wanted {
            assert!(e.contains(w), "{text:?}\n  gives {e:?}\n  which lacks {w:?}");
        }
    }
}

const NODE: &str = "[[node]]\ncpus = 8\nmemory_gib = 1\nllc_mib = 8\n";

#[test]
fn no_nodes_is_an_error() {
    check_errors(&[
        ("name = \"x\"\n", &["dir/box.toml:1: field `node`: a machine needs at least one node"]),
        ("name = \"x\"\nnode = []\n", &["box.toml:2: field `node`: a machine needs at least one"]),
    ]);
}

#[test]
fn a_machine_without_any_cpu_is_an_error() {
    check_errors(&[(
        "[[node]]\ncpus = 0\nmemory_gib = 1\n[[node]]\ncpus = 0\nmemory_gib = 1\n",
        &["box.toml:2: field `node[0].cpus`: no node has a CPU"],
    )]);
}

#[test]
fn zero_memory_is_an_error() {
    check_errors(&[(
        "[[node]]\ncpus = 8\nllc_mib = 8\nmemory_gib = 0\n",
        &["box.toml:4: field `node[0].memory_gib`: a node needs memory"],
    )]);
}

#[test]
fn memory_that_is_not_whole_pages_is_an_error() {
    check_errors(&[
        (
            "[[node]]\ncpus = 8\nllc_mib = 8\nmemory_kib = 1023\n",
            &["box.toml:4: field `node[0].memory_kib`: 1047552 bytes is not a whole number of 4096-byte pages"],
        ),
        (
            "[[node]]\ncpus = 8\nllc_mib = 8\nmemory_gib = 0.1\n",
            &["box.toml:4: field `node[0].memory_gib`: 0.1 is not a whole number of bytes"],
        ),
    ]);
}

#[test]
fn an_llc_shared_by_more_cpus_than_the_node_has_is_an_error() {
    check_errors(&[
        (
            "[[node]]\ncpus = 8\nmemory_gib = 1\nllc_mib = 8\nllc_shared_by = 9\n",
            &["box.toml:5: field `node[0].llc_shared_by`: 9 CPUs share the LLC but the node has only 8"],
        ),
        (
            &format!("{NODE}llc_shared_by = 0\n"),
            &["box.toml:5: field `node[0].llc_shared_by`: the LLC must be shared by at least 1 CPU"],
        ),
        (
            &format!("{NODE}l2_kib = 256\nl2_shared_by = 16\n"),
            &["box.toml:6: field `node[0].l2_shared_by`: 16 CPUs share the L2 but the node has only 8"],
        ),
        (
            &format!("{NODE}l1d_kib = 32\nl1d_shared_by = 0\n"),
            &["box.toml:6: field `node[0].l1d_shared_by`: the L1d must be shared by at least 1"],
        ),
        (
            &format!("{NODE}l2_shared_by = 2\n"),
            &["box.toml:1: field `node[0].l2_shared_by`: given without `l2_kib`"],
        ),
        (
            &format!("{NODE}l2_kib = 0\n"),
            &["box.toml:5: field `node[0].l2_kib`: an L2 of 0 bytes"],
        ),
        (
            &format!("{NODE}[[node]]\ncpus = 0\nmemory_gib = 1\nllc_mib = 1\n"),
            &["box.toml:8: field `node[1].llc_mib`: a node without CPUs has no CPU caches"],
        ),
    ]);
}

#[test]
fn more_cpus_than_the_allocator_supports_is_an_error() {
    check_errors(&[
        (
            "[[node]]\nmemory_gib = 1\nllc_mib = 8\ncpus = 1048577\n",
            &["box.toml:4: field `node[0].cpus`: the machine would have 1048577 CPUs; at most 1048576"],
        ),
        (
            "[[node]]\ncpus = 600000\nmemory_gib = 1\nllc_mib = 8\n\
             [[node]]\ncpus = 600000\nmemory_gib = 1\nllc_mib = 8\n",
            &["box.toml:6: field `node[1].cpus`: the machine would have 1200000 CPUs"],
        ),
        (
            "[[node]]\ncpus = 4294967296\nmemory_gib = 1\nllc_mib = 8\n",
            &["box.toml:2: field `node[0].cpus`: 4294967296 is out of range; it takes an integer in 0..=4294967295"],
        ),
    ]);
}

#[test]
fn more_nodes_than_the_allocator_supports_is_an_error() {
    let text = "[[node]]\ncpus = 1\nmemory_mib = 4\nllc_mib = 1\n".repeat(MAX_NODES + 1);
    let e = err(&text);
    let line = 4 * MAX_NODES + 1;
    assert!(e.contains(&format!("box.toml:{line}: field `node`: 1025 nodes")), "{e}");
}

#[test]
fn impossible_memory_sizes_are_errors() {
    check_errors(&[
        (
            "[[node]]\ncpus = 1\nllc_mib = 8\nmemory_gib = 20000\n",
            &["box.toml:4: field `node[0].memory_gib`: zone Normal would span", "16 TiB"],
        ),
        (
            "[[node]]\ncpus = 1\nllc_mib = 8\nmemory_gib = 17179869184\n",
            &["box.toml:4: field `node[0].memory_gib`: 17179869184 is out of range"],
        ),
        (
            "[[node]]\ncpus = 1\nllc_mib = 8\nmemory_kib = 9007199254740988\n\
             [[node]]\ncpus = 1\nllc_mib = 8\nmemory_kib = 9007199254740988\n",
            &["box.toml:8: field `node[1].memory_kib`: the nodes' memory and the PCI hole reach"],
        ),
        (
            "[[node]]\ncpus = 1\nllc_mib = 8\nmemory_kib = 9007199254740992\n\
             [[node]]\ncpus = 1\nllc_mib = 8\nmemory_kib = 9007199254740992\n",
            &["box.toml:8: field `node[1].memory_kib`: the nodes' memory adds up to 2^64 bytes"],
        ),
    ]);
}

#[test]
fn unknown_keys_are_errors_that_list_the_known_ones() {
    check_errors(&[
        (
            "name = \"x\"\n\nflavour = 1\n",
            &["box.toml:3: field `flavour`: unknown key; a machine file has name, description"],
        ),
        (
            "cpus = 4\n",
            &["box.toml:1: field `cpus`: unknown key (`cpus` belongs in a [[node]] table)"],
        ),
        (
            &format!("{NODE}speed = 3\n"),
            &["box.toml:5: field `node[0].speed`: unknown key; a [[node]] has cpus, memory_gib"],
        ),
        (
            &format!("{NODE}assumptions = [\"x\"]\n"),
            &["box.toml:5: field `node[0].assumptions`", "put it above the first [[node]]"],
        ),
    ]);
}

#[test]
fn values_of_the_wrong_type_are_errors() {
    check_errors(&[
        (
            "[[node]]\ncpus = \"8\"\nmemory_gib = 1\nllc_mib = 8\n",
            &["box.toml:2: field `node[0].cpus`: takes an integer in 0..=4294967295, not a string"],
        ),
        (
            "[[node]]\ncpus = 8\nmemory_gib = true\nllc_mib = 8\n",
            &["box.toml:3: field `node[0].memory_gib`: takes a number, not a bool"],
        ),
        (
            "[[node]]\ncpus = 8\nmemory_kib = 1.5\nllc_mib = 8\n",
            &["box.toml:3: field `node[0].memory_kib`: takes an integer, not a float"],
        ),
        (
            "[[node]]\ncpus = 8\nmemory_gib = 1\nllc_mib = \"big\"\n",
            &["box.toml:4: field `node[0].llc_mib`: takes a number, not a string"],
        ),
        (
            &format!("{NODE}l2_kib = -1\n"),
            &["box.toml:5: field `node[0].l2_kib`: -1 is out of range"],
        ),
        ("arch = 3\n", &["box.toml:1: field `arch`: takes a string, not an integer"]),
        ("arch = \"riscv\"\n", &["box.toml:1: field `arch`: \"riscv\" is not an architecture; it takes one of: x86_64, arm64"]),
        ("assumptions = \"x\"\n", &["box.toml:1: field `assumptions`: takes an array of strings, not a string"]),
        ("assumptions = [\"x\", 2]\n", &["box.toml:1: field `assumptions`: takes a string, not an integer"]),
        ("name = 3\n", &["box.toml:1: field `name`: takes a string, not an integer"]),
        ("node = 3\n", &["box.toml:1: field `node`: takes [[node]] tables (an array of tables), not an integer"]),
        ("[node]\ncpus = 1\n", &["box.toml:1: field `node`: takes [[node]] tables", "not a single [node] table"]),
        ("node = [1]\n", &["box.toml:1: field `node`: takes [[node]] tables", "an array holding an integer"]),
        (
            &format!("{NODE}llc_kib = 512\n"),
            &["box.toml:5: field `node[0].llc_kib`: give the LLC size once: `llc_mib` is already set"],
        ),
        (
            "[[node]]\ncpus = 8\nmemory_gib = 1\nllc_mib = 0.50000095367431640625\n",
            &["box.toml:4: field `node[0].llc_mib`: 524289 bytes is not a whole number of KiB"],
        ),
        (
            "[[node]]\ncpus = 8\nmemory_gib = 1\nmemory_mib = 1024\nllc_mib = 8\n",
            &["box.toml:4: field `node[0].memory_mib`: give the memory once: `memory_gib` is already set"],
        ),
    ]);
}

#[test]
fn missing_node_keys_are_errors_at_the_node() {
    check_errors(&[
        ("x = 1\n", &["field `x`: unknown key"]),
        (
            "name = \"x\"\n[[node]]\nmemory_gib = 1\nllc_mib = 8\n",
            &["box.toml:2: field `node[0].cpus`: missing: every [[node]] needs `cpus`"],
        ),
        (
            "[[node]]\ncpus = 1\nllc_mib = 8\n",
            &["box.toml:1: field `node[0].memory_gib`: missing", "`memory_mib` or `memory_kib`"],
        ),
        (
            "[[node]]\ncpus = 1\nmemory_gib = 1\n",
            &[
                "box.toml:1: field `node[0].llc_mib`: missing",
                "`llc_mib` or `llc_kib` when it has CPUs",
            ],
        ),
    ]);
}

#[test]
fn tunables_out_of_range_are_errors() {
    check_errors(&[
        (
            "min_free_kbytes = -1\n",
            &["box.toml:1: field `min_free_kbytes`: -1 is out of range; it takes an integer in 0..=2147483647"],
        ),
        ("min_free_kbytes = 2147483648\n", &["box.toml:1: field `min_free_kbytes`: 2147483648 is out of range"]),
        (
            "watermark_scale_factor = 0\n",
            &["box.toml:1: field `watermark_scale_factor`: 0 is out of range; it takes an integer in 1..=3000"],
        ),
        ("\nwatermark_scale_factor = 5000\n", &["box.toml:2: field `watermark_scale_factor`: 5000"]),
        ("watermark_scale_factor = 1.5\n", &["field `watermark_scale_factor`: takes an integer in 1..=3000, not a float"]),
    ]);
    // Machines built in code are checked the same way.
    let mut m = Machine::builtin("lab-2cpu").unwrap();
    m.watermark_scale_factor = Some(0);
    assert_eq!(
        m.validate().unwrap_err().to_string(),
        "field `watermark_scale_factor`: 0 is out of range; it takes an integer in 1..=3000"
    );
    m.watermark_scale_factor = None;
    m.nodes[0].llc_shared_by = 3;
    assert_eq!(
        m.memory_map().unwrap_err().to_string(),
        "field `nodes[0].llc_shared_by`: 3 CPUs share the LLC but the node has only 2 CPUs"
    );
    m.nodes.clear();
    assert_eq!(m.validate().unwrap_err().field, Field::Nodes);
}

#[test]
fn malformed_toml_and_bad_names_are_errors() {
    check_errors(&[
        ("name = \"x\n", &["box.toml:1: malformed TOML", "1 | name = \"x"]),
        (
            "[[node]]\ncpus = 1\ncpus = 2\n",
            &["box.toml:3: malformed TOML"],
        ),
        (
            &format!("name = \"spr-2s-224\"\n{NODE}"),
            &["box.toml:1: field `name`: the name `spr-2s-224` is a built-in machine's name; choose"],
        ),
        (&format!("name = \"my box\"\n{NODE}"), &["box.toml:1: field `name`", "non-empty word"]),
    ]);
    let e = format!("{:#}", file::parse(Path::new("lab-2cpu.toml"), NODE).unwrap_err());
    assert!(
        e.contains("lab-2cpu.toml:1: field `name`: the file stem `lab-2cpu` is a built-in")
            && e.contains("set `name` to another one"),
        "{e}"
    );
}

#[test]
fn sizes_print_in_their_largest_exact_unit() {
    let cases = [
        (0, "0 B"),
        (1000, "1000 B"),
        (4096, "4 KiB"),
        (16 * MIB, "16 MiB"),
        (3056 * MIB, "3056 MiB"),
        (55 * MIB / 2, "27.5 MiB"),
        (5 * MIB / 4, "1.25 MiB"),
        (256 * GIB, "256 GiB"),
        (4 * MIB / 24, "170.7 KiB"),
    ];
    for (bytes, want) in cases {
        assert_eq!(fmt_bytes(bytes), want, "{bytes}");
    }
}

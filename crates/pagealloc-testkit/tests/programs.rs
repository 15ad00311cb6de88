//! Property tests: random programs of allocations and frees (every order, every migratetype,
//! every zone, bad frees included, page_frag fragments and their misuse, compactions with
//! every move checked) against the oracle and the validator, on every machine shape and every
//! preset.

use pagealloc::{Counter, MemoryMap, NodeId, PageAllocator, Policy, Tunables};
use pagealloc_testkit::machines::Shape;
use pagealloc_testkit::program::{random_program, BadFree, GfpKind, Mix, Op};
use pagealloc_testkit::runner::{run, RunOptions};
use proptest::prelude::*;

fn op() -> impl Strategy<Value = Op> {
    let gfp = prop::sample::select(GfpKind::ALL.to_vec());
    let bad = prop::sample::select(BadFree::ALL.to_vec());
    let order = prop_oneof![8 => 0u8..=3, 2 => 4u8..=10];
    prop_oneof![
        12 => (0u32..4, gfp, order).prop_map(|(cpu, gfp, order)| Op::Alloc { cpu, gfp, order }),
        10 => (0u32..4, any::<u32>()).prop_map(|(cpu, slot)| Op::Free { cpu, slot }),
        2 => (0u32..4, any::<u32>(), bad).prop_map(|(cpu, slot, kind)| Op::BadFree { cpu, slot, kind }),
        1 => (0u32..4).prop_map(|cpu| Op::Tick { cpu }),
        1 => (0u32..4, 0u32..4).prop_map(|(cpu, target)| Op::DrainCpu { cpu, target }),
        1 => (0u16..8, any::<bool>()).prop_map(|(zone, on)| Op::ReclaimActive { zone, on }),
        1 => (0u32..4, 0u16..8, 0u8..12, 0u8..3)
            .prop_map(|(cpu, zone, order, mode)| Op::Compact { cpu, zone, order, mode }),
        2 => (0u32..4, frag_size(), frag_align())
            .prop_map(|(cpu, size, align)| Op::FragAlloc { cpu, size, align }),
        1 => (0u32..4, any::<u32>()).prop_map(|(cpu, slot)| Op::FragFree { cpu, slot }),
        1 => (0u32..4, any::<u32>(), 0u8..3).prop_map(|(cpu, slot, k)| match k {
            0 => Op::FragDrain { cpu },
            1 => Op::FragFreeTwice { cpu, slot },
            _ => Op::FragFreePages { cpu, slot },
        }),
    ]
}

/// Fragment sizes: mostly small, sometimes zero, a page and more, up to one byte past the
/// largest.
fn frag_size() -> impl Strategy<Value = u32> {
    prop_oneof![6 => 1u32..2048, 1 => Just(0u32), 2 => 2048u32..=32769]
}

/// Fragment alignments: powers of two up to a page, and any 32-bit number now and then.
fn frag_align() -> impl Strategy<Value = u32> {
    prop_oneof![8 => (0u32..=12).prop_map(|k| 1 << k), 1 => any::<u32>()]
}

fn shape() -> impl Strategy<Value = Shape> {
    prop::sample::select(Shape::ALL.to_vec())
}

fn preset() -> impl Strategy<Value = &'static str> {
    prop::sample::select(pagealloc::policy::PRESET_NAMES.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_programs_keep_every_invariant(
        shape in shape(),
        preset in preset(),
        ops in prop::collection::vec(op(), 1..200),
    ) {
        let policy = Policy::preset(preset).unwrap();
        let pa = PageAllocator::new(shape.map(), Tunables::default(), policy).unwrap();
        if let Err(f) = run(&pa, &ops, RunOptions::default()) {
            prop_assert!(false, "{shape:?} {preset}: {f}");
        }
    }
}

/// A machine whose pagesets batch: 1 node, 3 CPUs, 64 MiB of DMA32 (batch 3) and 128 MiB of
/// Normal memory (batch 7); the shapes' zones are small enough that their batch is 1.
fn batching_machine() -> MemoryMap {
    const MIB: u64 = 1 << 20;
    let mut m = MemoryMap::new();
    m.add_range(NodeId(0), 16 * MIB..80 * MIB).unwrap();
    m.add_range(NodeId(0), 4096 * MIB..4224 * MIB).unwrap();
    m.set_cpus(NodeId(0), 3).unwrap();
    m
}

/// The machines remote frees run on: the batching one first, then every shape.
fn remote_free_machines() -> Vec<(String, MemoryMap)> {
    let shapes = Shape::ALL.into_iter().map(|s| (format!("{s:?}"), s.map()));
    std::iter::once(("batching".to_owned(), batching_machine())).chain(shapes).collect()
}

/// An allocator with `Policy::remote_free` on.
fn remote_free_allocator(map: MemoryMap) -> PageAllocator {
    let policy = Policy::modern().with(|p| p.remote_free = true);
    PageAllocator::new(map, Tunables::default(), policy).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// `Policy::remote_free` (beyond the kernel, off in every preset): frees across CPUs go
    /// through pending chains and remote-free lists, between ticks, drains and double frees
    /// of waiting blocks; the validator runs after every step.
    #[test]
    fn random_programs_with_remote_frees_keep_every_invariant(
        machine in 0..Shape::ALL.len() + 1,
        ops in prop::collection::vec(op(), 1..300),
    ) {
        let (name, map) = remote_free_machines().swap_remove(machine);
        let pa = remote_free_allocator(map);
        if let Err(f) = run(&pa, &ops, RunOptions::default()) {
            prop_assert!(false, "{name} remote_free: {f}");
        }
    }
}

/// Long seeded programs with `Policy::remote_free` on every machine, validated after every
/// step: blocks must be sent home (pushed) and taken back (collected), and every invariant
/// hold while chains and lists fill and empty and the last chains wait for a drain.
#[test]
fn long_programs_with_remote_frees() {
    for (seed, (name, map)) in remote_free_machines().into_iter().enumerate() {
        let pa = remote_free_allocator(map);
        let ops = random_program(19 + seed as u64, 3000, pa.nr_cpus(), Mix::default());
        run(&pa, &ops, RunOptions { validate_every: 1, free_all_at_end: true })
            .unwrap_or_else(|f| panic!("{name}: {f}"));
        let ev = pa.vm_events();
        let (sent, collected) = (ev.get(Counter::PcpRemoteFree), ev.get(Counter::PcpRemoteCollect));
        assert!(pa.nr_cpus() == 1 || sent > 0 && collected > 0, "{name}: {sent}, {collected}");
    }
}

/// Long seeded programs, checked less often, on every shape and every preset: the allocator
/// under sustained churn, including exhaustion of the tiny machine.
#[test]
fn long_programs_on_every_shape_and_preset() {
    for &preset in pagealloc::policy::PRESET_NAMES {
        for shape in Shape::ALL {
            let seed = preset.len() as u64 * 31 + shape as u64;
            let policy = Policy::preset(preset).unwrap();
            let pa = PageAllocator::new(shape.map(), Tunables::default(), policy).unwrap();
            let ops = random_program(seed, 2000, pa.nr_cpus(), Mix::default());
            let (stats, _) =
                run(&pa, &ops, RunOptions { validate_every: 97, free_all_at_end: true })
                    .unwrap_or_else(|f| panic!("{shape:?} {preset} seed {seed}: {f}"));
            assert!(stats.allocs > 0 && stats.frees > 0, "{shape:?}: {stats:?}");
        }
    }
}

/// The tiny machine must run out, refuse cleanly and recover.
#[test]
fn exhaustion_and_recovery_on_the_tiny_machine() {
    let pa = PageAllocator::new(Shape::Tiny.map(), Tunables::default(), Policy::modern()).unwrap();
    let mix = Mix { alloc: 0.9, bad_free: 0.0, housekeeping: 0.0, high_order: 0.3 };
    let ops = random_program(42, 4000, 1, mix);
    let (stats, _) =
        run(&pa, &ops, RunOptions { validate_every: 50, free_all_at_end: true }).unwrap();
    assert!(stats.alloc_failures > 0, "the program must exhaust memory: {stats:?}");
    let on_pcp: u64 = pa.zones().iter().map(|z| z.pcp_pages()).sum();
    assert_eq!(pa.nr_free_pages().0 + on_pcp, pa.managed_pages().0);
    pa.drain_all_pages(pa.cpu(pagealloc::CpuId(0)).unwrap(), None);
    assert_eq!(pa.nr_free_pages(), pa.managed_pages());
}

/// Compactions mixed into long programs on every shape: the oracle checks every move (a live
/// movable block to a free target in its zone), the validator the state after it, and blocks
/// do move. Each program starts by fragmenting memory — 600 movable pages allocated from the
/// bottom of a zone, every other one freed — so that compaction has work from the start.
#[test]
fn compactions_in_long_programs_move_blocks_and_keep_every_invariant() {
    let mix = Mix { alloc: 0.5, bad_free: 0.02, housekeeping: 0.1, high_order: 0.1 };
    let mut migrated = 0;
    for shape in Shape::ALL {
        let pa = PageAllocator::new(shape.map(), Tunables::default(), Policy::modern()).unwrap();
        let movable = Op::Alloc { cpu: 0, gfp: GfpKind::Movable, order: 0 };
        // Freeing the i-th live block for i = 0, 1, … frees every other one of them.
        let mut ops: Vec<Op> = std::iter::repeat_n(movable, 600)
            .chain((0..300).map(|slot| Op::Free { cpu: 0, slot }))
            .chain([Op::DrainAll { cpu: 0 }])
            .collect();
        ops.extend(random_program(7 + shape as u64, 3000, pa.nr_cpus(), mix));
        let (stats, _) = run(&pa, &ops, RunOptions { validate_every: 1, free_all_at_end: true })
            .unwrap_or_else(|f| panic!("{shape:?}: {f}"));
        assert!(stats.compactions > 0, "{shape:?}: {stats:?}");
        migrated += stats.migrated;
    }
    assert!(migrated > 0, "no compaction moved anything");
}

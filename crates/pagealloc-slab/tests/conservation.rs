//! Conservation through both layers: random programs of allocations and frees (on any CPU,
//! across nodes), flushes, shrinks and refused double frees, with both validators run as
//! they go; at the end, every cache shrunk and the pagesets drained, the page allocator has
//! every page free again. And two threads doing the same at once.

use std::sync::Mutex;

use pagealloc::debug::validate;
use pagealloc::{Cpu, CpuId, EventSink, Gfp, MemoryMap, PageAllocator, Policy, Tunables};
use pagealloc_slab::{
    Kmalloc, KmallocObject, KmemCache, SlabError, SlabFlags, SlabObject, SlabStat, SlubConfig,
};
use pagealloc_testkit::machines::Shape;
use pagealloc_testkit::rng::Rng;

/// A live allocation of the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Live {
    Cache(usize, SlabObject),
    Kmalloc(KmallocObject),
}

/// The first byte of an allocation and where it ends, to check that no two live
/// allocations overlap whichever cache or path they came from.
fn span<E: EventSink>(caches: &[KmemCache<'_, E>], km: &Kmalloc<'_, E>, l: Live) -> (u64, u64) {
    match l {
        Live::Cache(c, o) => {
            let a = caches[c].address(o);
            (a, a + u64::from(caches[c].size()))
        }
        Live::Kmalloc(o) => match o.slab_object() {
            Some(so) => {
                let cache = km.caches().find(|c| c.object_at(so.slab().phys()).is_ok()).unwrap();
                let a = cache.address(so);
                (a, a + km.ksize(o))
            }
            None => (o.pfn().phys(), o.pfn().phys() + km.ksize(o)),
        },
    }
}

fn check_disjoint(mut spans: Vec<(u64, u64)>) {
    spans.sort();
    for w in spans.windows(2) {
        assert!(w[0].1 <= w[1].0, "live allocations overlap: {:?} and {:?}", w[0], w[1]);
    }
}

fn caches<'a, E: EventSink>(pa: &'a PageAllocator<E>, cfg: &SlubConfig) -> Vec<KmemCache<'a, E>> {
    [
        ("small", 24, SlabFlags::NONE),
        ("dentry", 192, SlabFlags::HWCACHE_ALIGN | SlabFlags::RECLAIM_ACCOUNT),
        ("odd", 3000, SlabFlags::NONE),
        ("task_struct", 9792, SlabFlags::HWCACHE_ALIGN),
    ]
    .iter()
    .map(|&(name, size, flags)| KmemCache::new(pa, name, size, 0, flags, cfg).unwrap())
    .collect()
}

/// Run `steps` random operations; returns how many allocations failed for want of memory.
fn run_program(pa: &PageAllocator, cfg: &SlubConfig, seed: u64, steps: u32) -> u32 {
    let cpus: Vec<Cpu> = (0..pa.nr_cpus()).map(|c| pa.cpu(CpuId(c)).unwrap()).collect();
    let caches = caches(pa, cfg);
    let km = Kmalloc::new(pa, cfg).unwrap();
    let mut rng = Rng::new(seed);
    let mut live: Vec<Live> = Vec::new();
    let mut freed: Vec<Live> = Vec::new();
    let mut refused = 0;
    let mut failed = 0;
    for step in 0..steps {
        let cpu = cpus[rng.below(cpus.len() as u64) as usize];
        match rng.below(100) {
            0..=49 => {
                let got = if rng.chance(0.5) {
                    let c = rng.below(caches.len() as u64) as usize;
                    caches[c].alloc(cpu, Gfp::KERNEL).map(|o| Live::Cache(c, o))
                } else {
                    let size =
                        [16, 100, 200, 700, 3000, 8192, 12_000, 40_000][rng.below(8) as usize];
                    let gfp = if rng.chance(0.3) { Gfp::KERNEL_RECLAIMABLE } else { Gfp::KERNEL };
                    km.alloc(cpu, size, gfp).map(Live::Kmalloc)
                };
                match got {
                    Ok(l) => live.push(l),
                    Err(SlabError::Alloc(_)) => failed += 1,
                    Err(e) => panic!("step {step}: {e}"),
                }
            }
            50..=94 if !live.is_empty() => {
                let l = live.swap_remove(rng.below(live.len() as u64) as usize);
                match l {
                    Live::Cache(c, o) => caches[c].free(cpu, o).unwrap(),
                    Live::Kmalloc(o) => km.free(cpu, o).unwrap(),
                }
                freed.push(l);
            }
            95 | 96 if !freed.is_empty() => {
                // A double free: refused, whatever has happened to the slab since — unless
                // the same object has been handed out again, when the handle is live.
                let l = freed[rng.below(freed.len() as u64) as usize];
                if live.contains(&l) {
                    continue;
                }
                let free_before = pa.nr_free_pages();
                let err = match l {
                    Live::Cache(c, o) => caches[c].free(cpu, o).unwrap_err(),
                    Live::Kmalloc(o) => km.free(cpu, o).unwrap_err(),
                };
                assert!(matches!(err, SlabError::DoubleFree { .. }), "step {step}: {err}");
                assert_eq!(pa.nr_free_pages(), free_before);
                refused += 1;
            }
            97 => caches[rng.below(caches.len() as u64) as usize]
                .flush_cpu(CpuId(rng.below(cpus.len() as u64) as u32))
                .unwrap(),
            98 => caches[rng.below(caches.len() as u64) as usize].shrink(cpu).unwrap(),
            _ => {
                if rng.chance(0.1) {
                    km.shrink(cpu).unwrap();
                }
            }
        }
        if step % 500 == 0 {
            validate(pa).unwrap();
            km.validate().unwrap();
            for c in &caches {
                c.validate().unwrap();
            }
            check_disjoint(live.iter().map(|&l| span(&caches, &km, l)).collect());
            // Each cache's exact count is what the program holds of it.
            for (i, c) in caches.iter().enumerate() {
                let held =
                    live.iter().filter(|l| matches!(l, Live::Cache(j, _) if *j == i)).count();
                assert_eq!(c.slabinfo().objects_in_use, held as u64, "{}", c.name());
            }
        }
    }
    assert!(refused > 0);
    for l in live.drain(..) {
        let cpu = cpus[rng.below(cpus.len() as u64) as usize];
        match l {
            Live::Cache(c, o) => caches[c].free(cpu, o).unwrap(),
            Live::Kmalloc(o) => km.free(cpu, o).unwrap(),
        }
    }
    for c in &caches {
        c.shutdown(cpus[0]).unwrap();
        c.validate().unwrap();
    }
    km.shrink(cpus[0]).unwrap();
    let used: u64 = km.slabinfo().iter().map(|i| i.pages).sum();
    assert_eq!(used, 0);
    pa.drain_all_pages(cpus[0], None);
    validate(pa).unwrap();
    assert_eq!(pa.nr_free_pages(), pa.managed_pages());
    failed
}

#[test]
fn random_programs_conserve_pages_on_one_node() {
    let map = MemoryMap::single_node(4, 32 << 20).unwrap();
    let pa = PageAllocator::new(map, Tunables::default(), Policy::modern()).unwrap();
    for seed in 1..=3 {
        run_program(&pa, &SlubConfig::default(), seed, 6000);
    }
}

#[test]
fn random_programs_conserve_pages_on_two_nodes_old_rules_no_cpu_partial() {
    let pa =
        PageAllocator::new(Shape::TwoNodes.map(), Tunables::default(), Policy::modern()).unwrap();
    run_program(&pa, &SlubConfig::default(), 7, 6000);
    let old = SlubConfig::default().with(|c| {
        c.order_rule = pagealloc_slab::OrderRule::Pre6_7;
        c.cpu_partial = false;
    });
    run_program(&pa, &old, 8, 6000);
}

/// A tiny machine: allocations fail for want of memory and must leave both layers whole.
#[test]
fn random_programs_under_memory_pressure() {
    let pa = PageAllocator::new(Shape::Tiny.map(), Tunables::default(), Policy::modern()).unwrap();
    let failed = run_program(&pa, &SlubConfig::default(), 11, 20_000);
    assert!(failed > 0, "8 MiB never ran out");
}

/// What one thread hands the other to free.
type Handoff = Mutex<Vec<(SlabObject, KmallocObject)>>;

/// Two threads on two CPUs allocate from one cache and one kmalloc set, hand half of what
/// they get to the other, and free what they are handed: frees land on the other CPU's
/// slabs all the time. The validators run meanwhile.
#[test]
fn two_threads_allocate_and_free_across_each_other() {
    let map = MemoryMap::single_node(2, 64 << 20).unwrap();
    let pa = PageAllocator::new(map, Tunables::default(), Policy::modern()).unwrap();
    let cfg = SlubConfig::default();
    let cache = KmemCache::new(&pa, "shared", 256, 0, SlabFlags::NONE, &cfg).unwrap();
    let km = Kmalloc::new(&pa, &cfg).unwrap();
    let handoff: [Handoff; 2] = Default::default();
    std::thread::scope(|s| {
        for t in 0..2usize {
            let (pa, cache, km, handoff) = (&pa, &cache, &km, &handoff);
            s.spawn(move || {
                let cpu = pa.cpu(CpuId(t as u32)).unwrap();
                let mut rng = Rng::new(100 + t as u64);
                let mut mine = Vec::new();
                for i in 0..20_000 {
                    let o = cache.alloc(cpu, Gfp::KERNEL).unwrap();
                    let k = km.alloc(cpu, 1 + rng.below(3000), Gfp::KERNEL).unwrap();
                    if rng.chance(0.5) {
                        handoff[1 - t].lock().unwrap().push((o, k));
                    } else {
                        mine.push((o, k));
                    }
                    if mine.len() > 200 {
                        let (o, k) = mine.swap_remove(rng.below(200) as usize);
                        cache.free(cpu, o).unwrap();
                        km.free(cpu, k).unwrap();
                    }
                    let theirs: Vec<_> = std::mem::take(&mut *handoff[t].lock().unwrap());
                    for (o, k) in theirs {
                        cache.free(cpu, o).unwrap();
                        km.free(cpu, k).unwrap();
                    }
                    if i % 2000 == 0 {
                        cache.validate().unwrap();
                        if t == 1 {
                            cache.flush_cpu(CpuId(0)).unwrap();
                        }
                    }
                }
                for (o, k) in mine {
                    cache.free(cpu, o).unwrap();
                    km.free(cpu, k).unwrap();
                }
            });
        }
    });
    let c0 = pa.cpu(CpuId(0)).unwrap();
    for h in &handoff {
        for (o, k) in h.lock().unwrap().drain(..) {
            cache.free(c0, o).unwrap();
            km.free(c0, k).unwrap();
        }
    }
    // Frees into the other CPU's active slab happened (the point of the test).
    assert!(cache.stats().get(SlabStat::FreeFrozen) > 0);
    cache.validate().unwrap();
    km.validate().unwrap();
    assert_eq!(cache.slabinfo().objects_in_use, 0);
    cache.shrink(c0).unwrap();
    km.shrink(c0).unwrap();
    pa.drain_all_pages(c0, None);
    validate(&pa).unwrap();
    assert_eq!(pa.nr_free_pages(), pa.managed_pages());
}

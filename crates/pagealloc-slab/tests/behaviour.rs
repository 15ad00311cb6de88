//! The slab layer's behaviour through its public API: SLUB's list rules step by step, empty
//! slabs going back through `free_pages` (and the page allocator's per-CPU lists), order
//! fallback, refused frees that change nothing, and conservation through both layers.

use std::sync::Mutex;

use pagealloc::debug::validate;
use pagealloc::{
    Counter, Cpu, CpuId, EventSink, Gfp, MemoryMap, MetaLine, MigrateType, Order, PageAllocator,
    Pfn, Policy, TraceEvent, Tunables,
};
use pagealloc_slab::{Kmalloc, KmemCache, SlabError, SlabFlags, SlabObject, SlabStat, SlubConfig};

/// Records every trace event the page allocator emits.
#[derive(Debug, Default)]
struct Recorder(Mutex<Vec<TraceEvent>>);

impl EventSink for Recorder {
    fn record(&self, e: &TraceEvent) {
        self.0.lock().unwrap().push(*e);
    }
}

impl Recorder {
    fn frees_of_order(&self, order: Order) -> usize {
        let events = self.0.lock().unwrap();
        events
            .iter()
            .filter(|e| matches!(e, TraceEvent::PageFree { order: o, .. } if *o == order))
            .count()
    }
}

fn machine(cpus: u32, mib: u64) -> PageAllocator {
    let map = MemoryMap::single_node(cpus, mib << 20).unwrap();
    PageAllocator::new(map, Tunables::default(), Policy::modern()).unwrap()
}

/// Two CPUs and 64 MiB, events to `sink`.
fn machine_with<E: EventSink>(sink: E) -> PageAllocator<E> {
    let map = MemoryMap::single_node(2, 64 << 20).unwrap();
    PageAllocator::with_events(map, Tunables::default(), Policy::modern(), sink).unwrap()
}

fn cpus<E: EventSink>(pa: &PageAllocator<E>) -> Vec<Cpu> {
    (0..pa.nr_cpus()).map(|c| pa.cpu(CpuId(c)).unwrap()).collect()
}

/// Everything a refused call must leave as it was.
fn fingerprint<E: EventSink>(c: &KmemCache<'_, E>) -> (String, u64, u64, u64) {
    let info = c.slabinfo();
    let stats: String = c.stats().iter().map(|(n, v)| format!("{n}={v} ")).collect();
    (stats, info.objects_in_use, info.num_slabs, c.page_allocator().nr_free_pages().0)
}

/// 4 KiB objects on 2 CPUs: min_objects = 4 * (fls(2) + 1) = 12, capped at 8 → order 3, 8
/// objects; cpu_partial 6 → ceil(12 / 8) = 2 slabs per CPU list; min_partial
/// clamp(12 / 2, 5, 10) = 6.
fn page_cache<E: EventSink>(pa: &PageAllocator<E>) -> KmemCache<'_, E> {
    let c = KmemCache::new(pa, "pages", 4096, 0, SlabFlags::NONE, &SlubConfig::default()).unwrap();
    assert_eq!((c.oo().order.0, c.oo().objects), (3, 8));
    assert_eq!((c.cpu_partial_slabs(), c.min_partial()), (2, 6));
    c
}

#[test]
fn the_list_rules_step_by_step() {
    let pa = machine(2, 64);
    let [c0, c1] = cpus(&pa)[..] else { unreachable!() };
    let cache = page_cache(&pa);
    let s = |st| cache.stats().get(st);

    // 8 objects fill the first slab; the 9th needs a second slab.
    let a: Vec<SlabObject> = (0..9).map(|_| cache.alloc(c0, Gfp::KERNEL).unwrap()).collect();
    assert_eq!((s(SlabStat::AllocSlab), s(SlabStat::AllocFastpath)), (2, 7));
    assert_eq!((s(SlabStat::AllocSlowpath), s(SlabStat::DeactivateBypass)), (2, 1));
    let (first, second) = (a[0].slab(), a[8].slab());
    assert!(a[..8].iter().all(|o| o.slab() == first) && first != second);
    assert_eq!((0..8).collect::<Vec<u32>>(), a[..8].iter().map(|o| o.index()).collect::<Vec<_>>());

    // A free into the full first slab, on CPU 1: the slab goes to CPU 1's partial list.
    cache.free(c1, a[0]).unwrap();
    assert_eq!((s(SlabStat::CpuPartialFree), s(SlabStat::FreeSlowpath)), (1, 1));
    assert_eq!(cache.slabinfo().slabs_on_cpus, 2);
    cache.validate().unwrap();

    // CPU 0 frees into its own active slab: the fast path. CPU 1 frees into it: frozen.
    let b = cache.alloc(c0, Gfp::KERNEL).unwrap();
    assert_eq!(b.slab(), second);
    cache.free(c0, b).unwrap();
    cache.free(c1, a[8]).unwrap();
    assert_eq!((s(SlabStat::FreeFastpath), s(SlabStat::FreeFrozen)), (1, 1));

    // CPU 1 allocates: its partial list's slab becomes its active slab, and hands out the
    // object freed into it.
    let again = cache.alloc(c1, Gfp::KERNEL).unwrap();
    assert_eq!((again.slab(), again.index()), (first, 0));
    assert_eq!(s(SlabStat::CpuPartialAlloc), 1);

    // CPU 0 takes its own freelist's 7 objects (1..=7: b came back there), then the object
    // CPU 1 freed into the slab: a refill, not a new slab.
    let mine: Vec<u32> = (0..7).map(|_| cache.alloc(c0, Gfp::KERNEL).unwrap().index()).collect();
    assert_eq!(mine.len(), 7);
    assert!(!mine.contains(&0));
    let refill = cache.alloc(c0, Gfp::KERNEL).unwrap();
    assert_eq!((refill.slab(), refill.index()), (second, 0));
    assert_eq!((s(SlabStat::AllocRefill), s(SlabStat::AllocSlab)), (1, 2));
    cache.validate().unwrap();
    validate(&pa).unwrap();
}

#[test]
fn a_full_cpu_partial_list_drains_to_the_node_where_empty_slabs_beyond_min_partial_go() {
    let pa = machine(2, 64);
    let c0 = cpus(&pa)[0];
    let cache = page_cache(&pa);
    let s = |st| cache.stats().get(st);
    // 10 full slabs and an 11th active one.
    let objs: Vec<SlabObject> = (0..88).map(|_| cache.alloc(c0, Gfp::KERNEL).unwrap()).collect();
    assert_eq!(cache.slabinfo().num_slabs, 11);
    // Empty the ten full slabs one by one: each first free puts the slab on CPU 0's list
    // (cap 2); the 3rd, 5th, 7th and 9th find it full and drain it to the node first.
    for o in &objs[..80] {
        cache.free(c0, *o).unwrap();
    }
    assert_eq!((s(SlabStat::CpuPartialFree), s(SlabStat::CpuPartialDrain)), (10, 4));
    // The four drains moved 8 empty slabs: the first 6 stay (min_partial), 2 are discarded.
    assert_eq!((s(SlabStat::DeactivateEmpty), s(SlabStat::FreeSlab)), (2, 2));
    let info = cache.slabinfo();
    assert_eq!(info.num_slabs, 9);
    // slabinfo counts the 6 node-list slabs' objects as free, the CPU's slabs' as active.
    assert_eq!(info.active_objs, info.num_objs - 6 * 8);
    cache.validate().unwrap();
    for o in &objs[80..] {
        cache.free(c0, *o).unwrap();
    }
    cache.shrink(c0).unwrap();
    assert_eq!(cache.slabinfo().num_slabs, 0);
    assert_eq!(s(SlabStat::FreeSlab), 11);
}

#[test]
fn empty_slabs_go_back_through_free_pages_and_the_pageset() {
    let pa = machine_with(Recorder::default());
    let c0 = pa.cpu(CpuId(0)).unwrap();
    let cache = page_cache(&pa);
    let objs: Vec<SlabObject> =
        (0..8 * 64).map(|_| cache.alloc(c0, Gfp::KERNEL).unwrap()).collect();
    let before = pa.vm_events();
    let order3_frees = pa.events().frees_of_order(Order(3));
    for o in objs {
        cache.free(c0, o).unwrap();
    }
    cache.shrink(c0).unwrap();
    let freed = cache.stats().get(SlabStat::FreeSlab);
    assert_eq!(freed, 64);
    // Every discarded slab was an order-3 `free_pages`…
    assert_eq!(pa.events().frees_of_order(Order(3)) - order3_frees, 64);
    // …that went onto the per-CPU lists (order 3 is cached there), where free_high, seeing
    // one high-order free after another and no allocation, flushed the pageset.
    let since = pa.vm_events().since(&before);
    assert_eq!(since.get(Counter::PcpFree), 64);
    assert!(since.get(Counter::DrainFreeHigh) > 0, "free_high never fired: {since:?}");
    pa.drain_all_pages(c0, None);
    assert_eq!(pa.nr_free_pages(), pa.managed_pages());
    validate(&pa).unwrap();
}

#[test]
fn reclaim_accounted_caches_take_reclaimable_pages() {
    let pa = machine_with(Recorder::default());
    let c0 = pa.cpu(CpuId(0)).unwrap();
    let cfg = SlubConfig::default();
    let dentry = KmemCache::new(&pa, "dentry", 192, 0, SlabFlags::RECLAIM_ACCOUNT, &cfg).unwrap();
    let plain = KmemCache::new(&pa, "plain", 192, 0, SlabFlags::NONE, &cfg).unwrap();
    dentry.alloc(c0, Gfp::KERNEL).unwrap();
    plain.alloc(c0, Gfp::KERNEL | Gfp::MOVABLE).unwrap();
    let events = pa.events().0.lock().unwrap();
    let types: Vec<MigrateType> = events
        .iter()
        .filter_map(|e| match e {
            TraceEvent::PageAlloc { pfn: Some(_), migratetype, .. } => Some(*migratetype),
            _ => None,
        })
        .collect();
    // A caller's __GFP_MOVABLE is replaced by the cache's mobility: slabs never move.
    assert_eq!(types, [MigrateType::Reclaimable, MigrateType::Unmovable]);
}

#[test]
fn the_preferred_order_falls_back_to_one_objects_order() {
    let pa = machine(1, 16);
    let c0 = cpus(&pa)[0];
    // Take every page (ignoring the watermarks), then give back every other one: no free
    // block above order 0 exists anywhere.
    let mut pages = Vec::new();
    while let Ok(p) = pa.alloc_pages(c0, Gfp::KERNEL | Gfp::MEMALLOC, Order(0)) {
        pages.push(p);
    }
    pages.sort();
    let (keep, give): (Vec<Pfn>, Vec<Pfn>) = pages.into_iter().partition(|p| p.0 % 2 == 0);
    for p in give {
        pa.free_pages(c0, p, Order(0)).unwrap();
    }
    // 2 KiB objects on 1 CPU: 8 * 2 KiB = 16 KiB → order 2 preferred; one object: order 0.
    let cache = KmemCache::new(&pa, "t", 2048, 0, SlabFlags::NONE, &SlubConfig::default()).unwrap();
    assert_eq!((cache.oo().order.0, cache.min().order.0, cache.min().objects), (2, 0, 2));
    let first = cache.alloc(c0, Gfp::KERNEL).unwrap();
    let info = cache.slabinfo();
    assert_eq!(cache.stats().get(SlabStat::OrderFallback), 1);
    assert_eq!((info.num_objs, info.pages, info.pagesperslab), (2, 1, 4));
    // Found by address though its slab is of the fallback order.
    assert_eq!(cache.object_at(cache.address(first) + 2048).map(|o| o.index()), Ok(1));
    cache.validate().unwrap();
    validate(&pa).unwrap();
    // With nothing left at all, the allocation fails and changes nothing.
    let mut rest = Vec::new();
    while let Ok(p) = pa.alloc_pages(c0, Gfp::KERNEL | Gfp::MEMALLOC, Order(0)) {
        rest.push(p);
    }
    cache.alloc(c0, Gfp::KERNEL).unwrap(); // the slab's second object
    let (_, in_use, slabs, free) = fingerprint(&cache);
    assert!(matches!(cache.alloc(c0, Gfp::KERNEL), Err(SlabError::Alloc(_))));
    let (_, in_use2, slabs2, free2) = fingerprint(&cache);
    assert_eq!((in_use2, slabs2, free2), (in_use, slabs, free));
    assert_eq!(in_use, 2);
    for p in keep.iter().chain(&rest) {
        pa.free_pages(c0, *p, Order(0)).unwrap();
    }
}

#[test]
fn bad_frees_are_refused_and_change_nothing() {
    let pa = machine(2, 64);
    let other_pa = machine(2, 64);
    let c0 = cpus(&pa)[0];
    let cfg = SlubConfig::default();
    let a = KmemCache::new(&pa, "a", 3000, 0, SlabFlags::NONE, &cfg).unwrap();
    let b = KmemCache::new(&pa, "b", 3000, 0, SlabFlags::NONE, &cfg).unwrap();
    let x = a.alloc(c0, Gfp::KERNEL).unwrap();
    let y = a.alloc(c0, Gfp::KERNEL).unwrap();
    a.free(c0, y).unwrap();
    let before = (fingerprint(&a), fingerprint(&b));
    let unchanged = || assert_eq!((fingerprint(&a), fingerprint(&b)), before);

    assert_eq!(a.free(c0, y), Err(SlabError::DoubleFree { slab: y.slab(), index: y.index() }));
    unchanged();
    assert!(matches!(b.free(c0, x), Err(SlabError::ForeignObject { .. })));
    unchanged();
    let foreign_cpu = other_pa.cpu(CpuId(0)).unwrap();
    assert_eq!(a.free(foreign_cpu, x), Err(SlabError::InvalidCpu(CpuId(0))));
    assert!(matches!(a.alloc(foreign_cpu, Gfp::KERNEL), Err(SlabError::InvalidCpu(_))));
    unchanged();

    // By address: the start of x is x; inside it, past the last object (3000-byte objects
    // on 2 CPUs: 10 per order-3 slab, 2768 bytes left over), or outside every slab: refused.
    assert_eq!(a.object_at(a.address(x)), Ok(x));
    assert!(matches!(a.object_at(a.address(x) + 8), Err(SlabError::Misaligned { .. })));
    let past = x.slab().phys() + 10 * 3000;
    assert!(matches!(a.object_at(past), Err(SlabError::BadIndex { index: 10, objects: 10, .. })));
    assert!(matches!(b.object_at(a.address(x)), Err(SlabError::NotSlab { .. })));
    // A free by address of an object already free is a double free.
    assert!(matches!(
        a.free(c0, a.object_at(a.address(y)).unwrap()),
        Err(SlabError::DoubleFree { .. })
    ));
    unchanged();

    // A handle to a slab given back since is refused, even once the frames are a new slab.
    a.free(c0, x).unwrap();
    a.shrink(c0).unwrap();
    assert_eq!(a.slabinfo().num_slabs, 0);
    let z = a.alloc(c0, Gfp::KERNEL).unwrap();
    assert_eq!(a.free(c0, x), Err(SlabError::DoubleFree { slab: x.slab(), index: x.index() }));
    a.free(c0, z).unwrap();

    // kmalloc: another set's objects, double frees of both kinds, sizes out of range.
    let k1 = Kmalloc::new(&pa, &cfg).unwrap();
    let k2 = Kmalloc::new(&pa, &cfg).unwrap();
    let small = k1.alloc(c0, 64, Gfp::KERNEL).unwrap();
    let large = k1.alloc(c0, 100_000, Gfp::KERNEL).unwrap();
    assert_eq!(large.large_order(), Some(Order(5)));
    assert!(matches!(k2.free(c0, small), Err(SlabError::ForeignObject { .. })));
    assert!(matches!(k2.free(c0, large), Err(SlabError::ForeignObject { .. })));
    k1.free(c0, large).unwrap();
    let free_pages = pa.nr_free_pages();
    assert!(matches!(k1.free(c0, large), Err(SlabError::DoubleFree { .. })));
    assert_eq!(pa.nr_free_pages(), free_pages);
    k1.free(c0, small).unwrap();
    assert!(matches!(k1.free(c0, small), Err(SlabError::DoubleFree { .. })));
    assert_eq!(k1.alloc(c0, 0, Gfp::KERNEL), Err(SlabError::BadSize { size: 0 }));
    assert!(matches!(k1.alloc(c0, (4 << 20) + 1, Gfp::KERNEL), Err(SlabError::BadSize { .. })));
    assert_eq!(k1.large_counts(), (1, 1));

    // Creation refuses what no cache can hold.
    assert!(matches!(
        KmemCache::new(&pa, "z", 0, 0, SlabFlags::NONE, &cfg),
        Err(SlabError::BadSize { .. })
    ));
    assert!(matches!(
        KmemCache::new(&pa, "z", 64, 48, SlabFlags::NONE, &cfg),
        Err(SlabError::BadAlign(48))
    ));
}

#[test]
fn shutdown_reports_objects_still_allocated() {
    let pa = machine(2, 64);
    let c0 = cpus(&pa)[0];
    let cache = KmemCache::new(&pa, "t", 64, 0, SlabFlags::NONE, &SlubConfig::default()).unwrap();
    let o = cache.alloc(c0, Gfp::KERNEL).unwrap();
    assert_eq!(cache.shutdown(c0), Err(SlabError::Busy { objects: 1 }));
    cache.free(c0, o).unwrap();
    cache.shutdown(c0).unwrap();
    assert_eq!(cache.slabinfo().num_slabs, 0);
}

#[test]
fn per_cpu_partial_lists_can_be_off() {
    let pa = machine(2, 64);
    let [c0, c1] = cpus(&pa)[..] else { unreachable!() };
    let cfg = SlubConfig::default().with(|c| c.cpu_partial = false);
    let cache = KmemCache::new(&pa, "t", 4096, 0, SlabFlags::NONE, &cfg).unwrap();
    assert_eq!(cache.cpu_partial_slabs(), 0);
    let objs: Vec<SlabObject> = (0..16).map(|_| cache.alloc(c0, Gfp::KERNEL).unwrap()).collect();
    // Freeing into the full first slab puts it on the node's list, not a CPU's.
    cache.free(c1, objs[0]).unwrap();
    assert_eq!(cache.stats().get(SlabStat::FreeAddPartial), 1);
    assert_eq!(cache.stats().get(SlabStat::CpuPartialFree), 0);
    // CPU 1 takes it from the node list, alone.
    assert_eq!(cache.alloc(c1, Gfp::KERNEL).unwrap().slab(), objs[0].slab());
    assert_eq!(cache.stats().get(SlabStat::CpuPartialNode), 0);
    cache.validate().unwrap();
}

/// A task bound to node 1 (`numactl -m 1`) running on node 0 gets its new slabs from node 1,
/// and they sit on node 1's partial list; unbound, the same CPU's slabs are node 0's.
#[test]
fn a_bound_task_takes_its_new_slabs_from_the_bound_node() {
    let mut map = MemoryMap::new();
    map.add_range(pagealloc::NodeId(0), 0..64 << 20).unwrap();
    map.add_range(pagealloc::NodeId(1), 64 << 20..128 << 20).unwrap();
    map.set_cpus(pagealloc::NodeId(0), 1).unwrap().set_cpus(pagealloc::NodeId(1), 1).unwrap();
    let pa = PageAllocator::new(map, Tunables::default(), Policy::modern()).unwrap();
    let c0 = pa.cpu(CpuId(0)).unwrap();
    assert_eq!(c0.node(), pagealloc::NodeId(0));
    let node_of = |obj: SlabObject| pa.zone_of(obj.slab()).unwrap().node();
    let cfg = SlubConfig::default();
    let bound = KmemCache::new(&pa, "bound", 4096, 0, SlabFlags::NONE, &cfg).unwrap();
    let free = KmemCache::new(&pa, "free", 4096, 0, SlabFlags::NONE, &cfg).unwrap();
    let b = bound.alloc_mpol(c0, Gfp::KERNEL, Some(pagealloc::NodeId(1))).unwrap();
    let f = free.alloc(c0, Gfp::KERNEL).unwrap();
    assert_eq!((node_of(b), node_of(f)), (pagealloc::NodeId(1), pagealloc::NodeId(0)));
    bound.free(c0, b).unwrap();
    free.free(c0, f).unwrap();
    bound.shrink(c0).unwrap();
    free.shrink(c0).unwrap();
    pa.drain_all_pages(c0, None);
    assert_eq!(pa.nr_free_pages(), pa.managed_pages());
}

#[test]
fn counters_are_kept_per_cpu_and_summed() {
    let pa = machine(2, 64);
    let other_pa = machine(2, 64);
    let [c0, c1] = cpus(&pa)[..] else { unreachable!() };
    let cache = page_cache(&pa);
    let on = |cpu, st| cache.cpu_stat(cpu, st).unwrap();

    // Two slabs' worth on CPU 0: its counters move, CPU 1's do not.
    let objs: Vec<SlabObject> = (0..16).map(|_| cache.alloc(c0, Gfp::KERNEL).unwrap()).collect();
    assert_eq!((on(c0, SlabStat::AllocSlab), on(c1, SlabStat::AllocSlab)), (2, 0));
    // CPU 1 frees them: its free counters move, CPU 0's do not.
    for o in &objs {
        cache.free(c1, *o).unwrap();
    }
    assert_eq!((on(c0, SlabStat::FreeSlowpath), on(c1, SlabStat::FreeSlowpath)), (0, 16));
    // A shrink run by CPU 0 flushes CPU 0's active slab on CPU 0's account; every counter
    // read whole is the sum of the CPUs'.
    cache.shrink(c0).unwrap();
    assert_eq!(on(c0, SlabStat::CpuslabFlush), 1);
    for (name, total) in cache.stats().iter() {
        let st = *SlabStat::ALL.iter().find(|s| s.name() == name).unwrap();
        assert_eq!(total, on(c0, st) + on(c1, st), "{name}");
        assert_eq!(cache.stat(st), total, "{name}");
    }
    let foreign = other_pa.cpu(CpuId(0)).unwrap();
    assert_eq!(cache.cpu_stat(foreign, SlabStat::AllocSlab), Err(SlabError::InvalidCpu(CpuId(0))));
    cache.validate().unwrap();
}

/// Records the metadata lines reported to the sink, with the CPU that touched each.
#[derive(Debug, Default)]
struct Lines(Mutex<Vec<(CpuId, MetaLine)>>);

impl EventSink for Lines {
    fn record(&self, _: &TraceEvent) {}
    fn touch(&self, cpu: CpuId, line: MetaLine) {
        self.0.lock().unwrap().push((cpu, line));
    }
}

impl Lines {
    fn take(&self) -> Vec<(CpuId, MetaLine)> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// The slab's `struct page` line is reported where SLUB writes it — a free into another CPU's
/// active slab, a refill from the objects freed there — and not on the two fast paths, which
/// work on the CPU's own freelist.
#[test]
fn the_slab_page_line_is_touched_off_the_fast_paths_only() {
    let pa = machine_with(Lines::default());
    let [c0, c1] = cpus(&pa)[..] else { unreachable!() };
    let cache = page_cache(&pa);
    let first = cache.alloc(c0, Gfp::KERNEL).unwrap();
    let page = MetaLine::Frame(first.slab());
    assert!(pa.events().take().contains(&(CpuId(0), page)), "a new slab's page is written");

    let more: Vec<SlabObject> = (0..6).map(|_| cache.alloc(c0, Gfp::KERNEL).unwrap()).collect();
    cache.free(c0, more[5]).unwrap();
    assert_eq!(pa.events().take(), vec![], "fast allocations and a fast free touch nothing");

    cache.free(c1, more[4]).unwrap();
    assert_eq!(pa.events().take(), vec![(CpuId(1), page)], "a free into CPU 0's active slab");

    // CPU 0 takes its last two objects (the one it freed and the eighth), then the one CPU 1
    // freed, from the slab's page.
    for _ in 0..2 {
        cache.alloc(c0, Gfp::KERNEL).unwrap();
    }
    assert_eq!(pa.events().take(), vec![]);
    let refilled = cache.alloc(c0, Gfp::KERNEL).unwrap();
    assert_eq!((refilled.slab(), refilled.index()), (first.slab(), more[4].index()));
    assert_eq!(cache.stats().get(SlabStat::AllocRefill), 1);
    assert_eq!(pa.events().take(), vec![(CpuId(0), page)], "the refill reads the page");
}

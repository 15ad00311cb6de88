//! SLUB's frees across CPUs: a free into another CPU's active slab or into a slab on a CPU's
//! partial list, given back to the CPU that holds the slab in the order freed; double and
//! stale frees caught on those paths; and many threads freeing into one CPU's slabs at once.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Acquire, Ordering::Release};
use std::sync::Mutex;

use pagealloc::{Cpu, CpuId, Gfp, MemoryMap, PageAllocator, Policy, Tunables};
use pagealloc_slab::{KmemCache, SlabError, SlabFlags, SlabObject, SlabStat, SlubConfig};

fn machine(cpus: u32) -> PageAllocator {
    let map = MemoryMap::single_node(cpus, 64 << 20).unwrap();
    PageAllocator::new(map, Tunables::default(), Policy::modern()).unwrap()
}

fn cpu(pa: &PageAllocator, c: u32) -> Cpu {
    pa.cpu(CpuId(c)).unwrap()
}

/// 256-byte objects: on 2 CPUs order 0, 16 a slab (`docs/slab.md`'s table).
fn cache(pa: &PageAllocator) -> KmemCache<'_> {
    KmemCache::new(pa, "fast", 256, 0, SlabFlags::NONE, &SlubConfig::default()).unwrap()
}

/// The cache over `pa`, and its CPUs 0 and 1.
fn cache_and_cpus(pa: &PageAllocator) -> (KmemCache<'_>, Cpu, Cpu) {
    (cache(pa), cpu(pa, 0), cpu(pa, 1))
}

/// Everything a refused call must leave as it was.
fn fingerprint(c: &KmemCache<'_>) -> (String, u64, u64, u64) {
    let info = c.slabinfo();
    let stats: String = c.stats().iter().map(|(n, v)| format!("{n}={v} ")).collect();
    (stats, info.objects_in_use, info.num_slabs, c.page_allocator().nr_free_pages().0)
}

#[test]
fn a_remote_free_is_taken_back_by_the_owner_last_freed_first() {
    let pa = machine(2);
    let (c, c0, c1) = cache_and_cpus(&pa);
    assert_eq!(c.oo().objects, 16);
    let objs: Vec<SlabObject> = (0..16).map(|_| c.alloc(c0, Gfp::KERNEL).unwrap()).collect();
    assert!(objs.iter().all(|o| o.slab() == objs[0].slab()), "one slab, all of it out");
    // CPU 1 frees three into CPU 0's active slab: pushed, no list changes.
    for &o in &objs[3..6] {
        c.free(c1, o).unwrap();
    }
    assert_eq!(c.cpu_stat(c1, SlabStat::FreeFrozen).unwrap(), 3);
    assert_eq!(c.cpu_stat(c1, SlabStat::FreeFastpath).unwrap(), 0);
    c.validate().unwrap();
    // CPU 0's own list is empty: its next allocation takes the remote list, last freed first.
    let back: Vec<SlabObject> = (0..3).map(|_| c.alloc(c0, Gfp::KERNEL).unwrap()).collect();
    assert_eq!(back, [objs[5], objs[4], objs[3]]);
    assert_eq!(c.cpu_stat(c0, SlabStat::AllocRefill).unwrap(), 1);
    assert_eq!(c.cpu_stat(c0, SlabStat::AllocSlab).unwrap(), 1, "no new slab");
    for o in objs {
        c.free(c0, o).unwrap();
    }
    assert_eq!(c.slabinfo().objects_in_use, 0);
    c.validate().unwrap();
}

/// A slab on a CPU's partial list takes frees from every CPU, and the CPU that takes it active
/// gets them back last freed first, after the one that put it there.
#[test]
fn frees_into_a_partial_slab_come_back_in_the_order_freed() {
    let pa = machine(2);
    let (c, c0, c1) = cache_and_cpus(&pa);
    let full: Vec<SlabObject> = (0..16).map(|_| c.alloc(c0, Gfp::KERNEL).unwrap()).collect();
    let next = c.alloc(c0, Gfp::KERNEL).unwrap();
    assert_ne!(next.slab(), full[0].slab(), "the first slab is full and off CPU 0");
    c.free(c1, full[2]).unwrap();
    assert_eq!(c.cpu_stat(c1, SlabStat::CpuPartialFree).unwrap(), 1, "onto CPU 1's list");
    c.free(c1, full[5]).unwrap();
    c.free(c1, full[7]).unwrap();
    c.free(c0, full[9]).unwrap();
    assert_eq!(c.cpu_stat(c1, SlabStat::FreeFrozen).unwrap(), 2);
    assert_eq!(c.cpu_stat(c0, SlabStat::FreeFrozen).unwrap(), 1);
    c.validate().unwrap();
    let back: Vec<SlabObject> = (0..4).map(|_| c.alloc(c1, Gfp::KERNEL).unwrap()).collect();
    assert_eq!(back, [full[9], full[7], full[5], full[2]]);
    assert_eq!(c.cpu_stat(c1, SlabStat::CpuPartialAlloc).unwrap(), 1);
    for o in full.into_iter().chain([next]) {
        c.free(c0, o).unwrap();
    }
    c.validate().unwrap();
    assert_eq!(c.slabinfo().objects_in_use, 0);
}

#[test]
fn a_double_free_is_caught_on_the_remote_path_and_changes_nothing() {
    let pa = machine(2);
    let (c, c0, c1) = cache_and_cpus(&pa);
    let a = c.alloc(c0, Gfp::KERNEL).unwrap();
    let b = c.alloc(c0, Gfp::KERNEL).unwrap();
    c.free(c1, a).unwrap();
    let before = fingerprint(&c);
    let double = SlabError::DoubleFree { slab: a.slab(), index: a.index() };
    // Again from the remote CPU, and from the owner (whose fast path would push it twice).
    assert_eq!(c.free(c1, a), Err(double));
    assert_eq!(c.free(c0, a), Err(double));
    assert_eq!(fingerprint(&c), before);
    c.validate().unwrap();
    // The object comes back once only.
    let mut seen = HashSet::new();
    let more: Vec<SlabObject> = (0..15).map(|_| c.alloc(c0, Gfp::KERNEL).unwrap()).collect();
    assert!(more.iter().all(|o| seen.insert(*o)), "an object handed out twice");
    assert!(more.contains(&a) && !more.contains(&b));
    for o in more.into_iter().chain([b]) {
        c.free(c1, o).unwrap();
    }
    c.validate().unwrap();
}

#[test]
fn a_stale_handle_is_refused_after_its_slab_is_discarded_and_a_new_one_made() {
    let pa = machine(2);
    let (c, c0, c1) = cache_and_cpus(&pa);
    let old = c.alloc(c0, Gfp::KERNEL).unwrap();
    c.free(c1, old).unwrap();
    c.shrink(c0).unwrap();
    assert_eq!(c.slabinfo().num_slabs, 0, "the slab was given back");
    let stale = SlabError::DoubleFree { slab: old.slab(), index: old.index() };
    let before = fingerprint(&c);
    assert_eq!(c.free(c0, old), Err(stale));
    assert_eq!(c.free(c1, old), Err(stale));
    assert_eq!(fingerprint(&c), before);
    // A new slab, whose object of the old index is allocated: the old handle still frees
    // nothing, on either path.
    let new = c.alloc(c0, Gfp::KERNEL).unwrap();
    assert_eq!(new.index(), old.index());
    let before = fingerprint(&c);
    assert_eq!(c.free(c0, old), Err(stale));
    assert_eq!(c.free(c1, old), Err(stale));
    assert_eq!(fingerprint(&c), before);
    c.free(c1, new).unwrap();
    c.validate().unwrap();
}

/// CPU 0 allocates and hands every object to one of three other threads, which free them into
/// CPU 0's slabs as it works (CPU 0 waits while more than a slab's worth is out, so the frees
/// land in its active slab): frees from other CPUs arrive while the owner allocates from the
/// same slabs. No object is out twice, and at the end every object and page is back.
#[test]
fn many_threads_free_into_one_cpus_slabs() {
    const FREERS: usize = 3;
    const OBJECTS: usize = 20_000;
    let pa = machine(1 + FREERS as u32);
    let c = cache(&pa);
    let queues: Vec<Mutex<Vec<SlabObject>>> = (0..FREERS).map(|_| Mutex::default()).collect();
    let done = AtomicBool::new(false);
    let out = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..FREERS {
            let (pa, c, queues, done, out) = (&pa, &c, &queues, &done, &out);
            s.spawn(move || {
                let me = cpu(pa, 1 + t as u32);
                loop {
                    let batch = std::mem::take(&mut *queues[t].lock().unwrap());
                    let finished = done.load(Acquire);
                    for o in &batch {
                        c.free(me, *o).unwrap();
                        out.fetch_sub(1, Release);
                    }
                    if batch.is_empty() && finished {
                        break;
                    }
                    std::thread::yield_now();
                }
            });
        }
        let c0 = cpu(&pa, 0);
        let mut live = HashSet::new();
        let mut pending: Vec<SlabObject> = Vec::new();
        for i in 0..OBJECTS {
            let o = c.alloc(c0, Gfp::KERNEL).unwrap();
            assert!(live.insert(o), "object {o:?} handed out while still allocated");
            pending.push(o);
            if pending.len() == 8 {
                // Before handing them on: once freed they may come back.
                pending.iter().for_each(|o| {
                    live.remove(o);
                });
                out.fetch_add(pending.len(), Release);
                queues[i % FREERS].lock().unwrap().append(&mut pending);
                while out.load(Acquire) > 16 {
                    std::thread::yield_now();
                }
            }
            if i % 10_000 == 0 {
                c.validate().unwrap();
            }
        }
        pending.drain(..).for_each(|o| c.free(c0, o).unwrap());
        done.store(true, Release);
    });
    let frees = c.stats();
    assert_eq!(
        frees.get(SlabStat::FreeFastpath) + frees.get(SlabStat::FreeSlowpath),
        OBJECTS as u64
    );
    assert!(frees.get(SlabStat::FreeFrozen) > 0 && frees.get(SlabStat::AllocRefill) > 0);
    c.validate().unwrap();
    assert_eq!(c.slabinfo().objects_in_use, 0);
    let c0 = cpu(&pa, 0);
    c.shrink(c0).unwrap();
    assert_eq!(c.slabinfo().num_slabs, 0);
    pa.drain_all_pages(c0, None);
    pagealloc::debug::validate(&pa).unwrap();
    assert_eq!(pa.nr_free_pages(), pa.managed_pages());
}

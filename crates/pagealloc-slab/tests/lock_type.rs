//! The slab layer over an allocator built with another lock type: its caches take their own
//! locks (per-CPU slots, node partial lists, slab states) through that type too, so a kernel's
//! IRQ-saving lock or a user-space lock that yields covers both layers.

use pagealloc::{CpuId, Gfp, MemoryMap, NoEvents, PageAllocator, Policy, Tunables};
use pagealloc_slab::{Kmalloc, KmemCache, SlabFlags, SlubConfig};
use pagealloc_testkit::lock::{taken, CountingLock};

#[test]
fn caches_lock_with_the_allocators_lock_type() {
    let map = MemoryMap::single_node(2, 64 << 20).unwrap();
    let pa: PageAllocator<NoEvents, CountingLock> =
        PageAllocator::with_lock(map, Tunables::default(), Policy::modern(), NoEvents).unwrap();
    let cpu = pa.cpu(CpuId(0)).unwrap();
    let cfg = SlubConfig::default();
    let cache = KmemCache::new(&pa, "lock-test", 256, 0, SlabFlags::default(), &cfg).unwrap();
    let first = cache.alloc(cpu, Gfp::KERNEL).unwrap();
    // The first object needs a new slab (page allocator locks) and then the cache's own.
    let before = taken();
    let objects: Vec<_> = (0..4).map(|_| cache.alloc(cpu, Gfp::KERNEL).unwrap()).collect();
    // Objects from the active slab touch no page-allocator lock: only the cache's per-CPU
    // slot and the slab's state, both of the type parameter.
    assert!(taken() >= before + 4, "{} acquisitions for 4 objects", taken() - before);
    for o in objects.into_iter().chain([first]) {
        cache.free(cpu, o).unwrap();
    }
    let kmalloc = Kmalloc::new(&pa, &cfg).unwrap();
    let big = kmalloc.alloc(cpu, 64 << 10, Gfp::KERNEL).unwrap();
    kmalloc.free(cpu, big).unwrap();
}

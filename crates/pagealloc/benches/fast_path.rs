//! The core's fast paths, on the library directly (no memory behind the frames): alloc+free
//! pairs through the per-CPU pagesets. `cargo bench -p pagealloc --bench fast_path`.
//!
//! Each benchmark's time is per alloc+free pair (criterion's throughput is set to the number
//! of pairs per iteration). The names match `pagealloc bench`'s patterns; that command runs
//! the same shapes on real memory against other allocators.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pagealloc::{Cpu, CpuId, Gfp, MemoryMap, NodeId, Order, PageAllocator, Pfn, Policy, Tunables};
use pagealloc::{ZoneLimits, ZoneType};

/// A 1 GiB single-zone (Normal) machine with 2 CPUs, as `PageHeap` builds it.
fn allocator() -> PageAllocator {
    let mut map = MemoryMap::new();
    map.with_zone_limits(ZoneLimits::NORMAL_ONLY);
    map.add_range(NodeId(0), 0..1 << 30).expect("range").set_cpus(NodeId(0), 2).expect("cpus");
    let pa = PageAllocator::new(map, Tunables::default(), Policy::modern()).expect("allocator");
    assert_eq!(pa.zones()[0].zone_type(), ZoneType::Normal);
    pa
}

/// `outstanding` allocations of `order`, then their frees in allocation order.
fn burst(pa: &PageAllocator, cpu: Cpu, order: Order, held: &mut Vec<Pfn>, outstanding: usize) {
    for _ in 0..outstanding {
        let p = pa.alloc_pages(cpu, Gfp::KERNEL, black_box(order)).expect("memory");
        held.push(black_box(p));
    }
    for p in held.drain(..) {
        pa.free_pages(cpu, p, order).expect("free");
    }
}

fn pairs(c: &mut Criterion) {
    let pa = allocator();
    let cpu = pa.cpu(CpuId(0)).expect("cpu 0");
    let mut g = c.benchmark_group("fast_path");
    for (name, order, outstanding) in
        [("pair-1", 0, 1), ("pair-64", 0, 64), ("order3-1", 3, 1), ("order3-64", 3, 64)]
    {
        g.throughput(Throughput::Elements(outstanding as u64));
        let mut held = Vec::with_capacity(outstanding);
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| burst(&pa, cpu, Order(order), &mut held, outstanding));
        });
    }
    g.finish();
    // Every page must be back: the pattern freed everything it took.
    pa.drain_all_pages(cpu, None);
    assert_eq!(pa.nr_free_pages(), pa.managed_pages());
}

criterion_group!(benches, pairs);
criterion_main!(benches);

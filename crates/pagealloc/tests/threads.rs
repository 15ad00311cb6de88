//! Real threads on different CPUs allocating and freeing across each other, with ticks and
//! remote drains racing them; at the end every page must be back (conservation) and every
//! invariant must hold.

use std::sync::{Arc, Mutex};

use pagealloc::debug::validate;
use pagealloc::{CpuId, Gfp, MemoryMap, Order, PageAllocator, Pfn, Policy, Tunables};

fn run(preset: &str) {
    let map = MemoryMap::single_node(4, 256 << 20).unwrap();
    let pa = Arc::new(
        PageAllocator::new(map, Tunables::default(), Policy::preset(preset).unwrap()).unwrap(),
    );
    let handoff: Arc<Mutex<Vec<(Pfn, Order)>>> = Arc::default();
    let workers: Vec<_> = (0..4u32)
        .map(|c| {
            let (pa, handoff) = (Arc::clone(&pa), Arc::clone(&handoff));
            std::thread::spawn(move || {
                let cpu = pa.cpu(CpuId(c)).unwrap();
                let mut mine = Vec::new();
                let mut x = 0x9e37_79b9u64 ^ u64::from(c);
                for i in 0..20_000u32 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let order = Order([0, 0, 0, 0, 1, 2, 3, 9][(x % 8) as usize]);
                    let gfp = [Gfp::KERNEL, Gfp::HIGHUSER_MOVABLE, Gfp::ATOMIC][(x % 3) as usize];
                    if let Ok(p) = pa.alloc_pages(cpu, gfp, order) {
                        if x % 2 == 0 {
                            handoff.lock().unwrap().push((p, order));
                        } else {
                            mine.push((p, order));
                        }
                    }
                    if mine.len() > 64 {
                        let (p, o) = mine.swap_remove((x % 64) as usize);
                        pa.free_pages(cpu, p, o).unwrap();
                    }
                    // Free what another CPU allocated.
                    let theirs = handoff.lock().unwrap().pop();
                    if let Some((p, o)) = theirs {
                        pa.free_pages(cpu, p, o).unwrap();
                    }
                    if i % 1000 == 0 {
                        pa.tick(cpu);
                    }
                    if c == 3 && i % 2500 == 0 {
                        pa.drain_all_pages(cpu, None);
                    }
                }
                for (p, o) in mine {
                    pa.free_pages(cpu, p, o).unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let cpu = pa.cpu(CpuId(0)).unwrap();
    for (p, o) in handoff.lock().unwrap().drain(..) {
        pa.free_pages(cpu, p, o).unwrap();
    }
    validate(&pa).unwrap_or_else(|v| panic!("{preset}: {v}"));
    pa.drain_all_pages(cpu, None);
    validate(&pa).unwrap();
    assert_eq!(pa.nr_free_pages(), pa.managed_pages(), "{preset}: pages lost");
}

#[test]
fn cross_cpu_frees_conserve_pages_modern() {
    run("modern");
}

#[test]
fn cross_cpu_frees_conserve_pages_with_irq_off_pagesets() {
    run("hpc-vanilla");
}

#[test]
fn cross_cpu_frees_conserve_pages_6_6() {
    run("tune-base");
}

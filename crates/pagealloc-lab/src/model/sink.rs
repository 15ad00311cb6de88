//! The model's event sink: it keeps the zone locks' clocks, so every hold of a zone lock
//! costs virtual time and every CPU that finds a lock held waits for it, first come first
//! served. It also counts how often each frame is handed out (seed 000's "most used page
//! frames").
//!
//! The model drives the allocator from one thread; the atomics are there only because an
//! `EventSink` must be `Sync`, and are used with `Relaxed` loads and stores.

use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};

use pagealloc::{CpuId, EventSink, TraceEvent, ZoneIdx};

use super::cost::CostPs;

/// No CPU has held the lock yet.
const NOBODY: u32 = u32::MAX;

/// One zone lock in virtual time.
#[derive(Debug)]
struct LockClock {
    /// When the lock is next free (ps).
    free_at: AtomicU64,
    /// The CPU that held it last.
    last_holder: AtomicU32,
    /// The node of the zone's memory.
    node: u32,
}

/// Hears every trace record with the virtual time it happened at (ps): `run --trace` writes
/// them out, `replay` counts them.
pub type Observer = Box<dyn FnMut(u64, &TraceEvent) + Send>;

/// The observer behind its lock (the sink must be `Sync`; only the model's thread calls it).
struct ObserverSlot(Mutex<Observer>);

impl fmt::Debug for ObserverSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ObserverSlot")
    }
}

/// The sink the model builds its allocator with.
#[derive(Debug)]
pub struct ModelSink {
    /// The running CPU's clock (ps): set before each allocator call, read back after.
    now: AtomicU64,
    /// Time the running call spent waiting for zone locks (ps).
    waited: AtomicU64,
    /// Time the running call spent holding zone locks (ps).
    held: AtomicU64,
    /// One per zone, in the allocator's zone order; set by [`ModelSink::attach`] once the
    /// allocator has numbered its zones. Locks taken before that (while the allocator puts
    /// its memory on the free lists) cost nothing: time starts with the workload.
    locks: OnceLock<Vec<LockClock>>,
    cpu_node: Vec<u32>,
    cpu_llc: Vec<u32>,
    cost: CostPs,
    /// Allocations per frame number, when asked for (unset otherwise).
    pfn_allocs: OnceLock<Vec<AtomicU32>>,
    /// Who hears the records, if anyone.
    observer: OnceLock<ObserverSlot>,
}

impl ModelSink {
    /// A sink for CPUs on nodes `cpu_node` with LLCs `cpu_llc`.
    pub fn new(cpu_node: Vec<u32>, cpu_llc: Vec<u32>, cost: CostPs) -> ModelSink {
        ModelSink {
            now: AtomicU64::new(0),
            waited: AtomicU64::new(0),
            held: AtomicU64::new(0),
            locks: OnceLock::new(),
            cpu_node,
            cpu_llc,
            cost,
            pfn_allocs: OnceLock::new(),
            observer: OnceLock::new(),
        }
    }

    /// Send every record from now on to `f`, with the virtual time of the call that made it.
    /// Set once, after the allocator is built (its boot-time frees are not workload events).
    pub fn observe(&self, f: Observer) {
        assert!(self.observer.set(ObserverSlot(Mutex::new(f))).is_ok(), "one observer per sink");
    }

    /// Learn the zones (the node of each, by zone index) and, with `count_frames = Some(n)`,
    /// start counting allocations of frames `0..n`. Called once, right after the allocator
    /// is built and before anything is allocated.
    pub fn attach(&self, zone_nodes: &[u32], count_frames: Option<u64>) {
        let locks = zone_nodes
            .iter()
            .map(|&node| LockClock {
                free_at: AtomicU64::new(0),
                last_holder: AtomicU32::new(NOBODY),
                node,
            })
            .collect();
        assert!(self.locks.set(locks).is_ok(), "ModelSink::attach is called once");
        if let Some(n) = count_frames {
            let v = (0..n).map(|_| AtomicU32::new(0)).collect();
            assert!(self.pfn_allocs.set(v).is_ok(), "ModelSink::attach is called once");
        }
    }

    fn lock(&self, zone: ZoneIdx) -> Option<&LockClock> {
        self.locks.get().map(|l| &l[zone.index()])
    }

    /// Start an allocator call on a CPU whose clock reads `now`.
    #[inline]
    pub fn begin(&self, now: u64) {
        self.now.store(now, Relaxed);
        self.waited.store(0, Relaxed);
        self.held.store(0, Relaxed);
    }

    /// The call is over: the CPU's clock now, and the time it waited for and held zone locks.
    #[inline]
    pub fn end(&self) -> CallTime {
        CallTime {
            now: self.now.load(Relaxed),
            waited: self.waited.load(Relaxed),
            held: self.held.load(Relaxed),
        }
    }

    /// How often each frame was allocated, most used first (at most `n`).
    pub fn most_used_frames(&self, n: usize) -> Vec<(u64, u32)> {
        let Some(counts) = self.pfn_allocs.get() else { return Vec::new() };
        let mut v: Vec<(u64, u32)> = counts
            .iter()
            .enumerate()
            .map(|(pfn, c)| (pfn as u64, c.load(Relaxed)))
            .filter(|&(_, c)| c > 0)
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }
}

/// What one allocator call cost in virtual time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallTime {
    /// The CPU's clock after the call's lock work (ps).
    pub now: u64,
    /// Waiting for zone locks (ps).
    pub waited: u64,
    /// Holding zone locks (ps).
    pub held: u64,
}

impl EventSink for ModelSink {
    #[inline]
    fn record(&self, event: &TraceEvent) {
        if let Some(o) = self.observer.get() {
            (o.0.lock().expect("no panics while held"))(self.now.load(Relaxed), event);
        }
        if let TraceEvent::PageAlloc { pfn: Some(pfn), .. } = event {
            if let Some(c) = self.pfn_allocs.get().and_then(|v| v.get(pfn.0 as usize)) {
                c.store(c.load(Relaxed) + 1, Relaxed);
            }
        }
    }

    /// Wait for the lock (FIFO in virtual time: the model runs CPUs in clock order), then pay
    /// for bringing its cache line over if another CPU held it last.
    #[inline]
    fn zone_lock_taken(&self, cpu: CpuId, zone: ZoneIdx) {
        let Some(lock) = self.lock(zone) else { return };
        let now = self.now.load(Relaxed);
        let start = now.max(lock.free_at.load(Relaxed));
        self.waited.store(self.waited.load(Relaxed) + (start - now), Relaxed);
        let last = lock.last_holder.swap(cpu.0, Relaxed);
        let handoff = if last == NOBODY || last == cpu.0 {
            0
        } else if self.cpu_llc[last as usize] == self.cpu_llc[cpu.index()] {
            self.cost.handoff
        } else {
            self.cost.handoff_remote
        };
        self.now.store(start + handoff, Relaxed);
        self.held.store(self.held.load(Relaxed) + handoff, Relaxed);
    }

    /// The hold's work: a fixed part and each list operation, dearer for a CPU of another
    /// node (its `struct page`s and list heads are remote). The lock is free when it ends.
    #[inline]
    fn zone_lock_released(&self, cpu: CpuId, zone: ZoneIdx, list_ops: u32) {
        let Some(lock) = self.lock(zone) else { return };
        let per_op = if self.cpu_node[cpu.index()] == lock.node {
            self.cost.list_op
        } else {
            self.cost.list_op_remote
        };
        let hold = self.cost.lock_base + u64::from(list_ops) * per_op;
        let end = self.now.load(Relaxed) + hold;
        self.now.store(end, Relaxed);
        self.held.store(self.held.load(Relaxed) + hold, Relaxed);
        lock.free_at.store(end, Relaxed);
    }

    /// Pageset list work outside the zone lock costs the CPU, at the same price per list
    /// operation as under the lock (the same kind of pointer chasing through `struct page`s).
    #[inline]
    fn pcp_list_work(&self, _cpu: CpuId, ops: u32) {
        if self.locks.get().is_none() {
            // Not attached (the allocator's build, or the real runner): no virtual time.
            return;
        }
        self.now.store(self.now.load(Relaxed) + u64::from(ops) * self.cost.list_op, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost() -> CostPs {
        CostPs {
            lock_base: 100,
            list_op: 10,
            list_op_remote: 20,
            handoff: 5,
            handoff_remote: 50,
            ..CostPs::default()
        }
    }

    #[test]
    fn a_held_lock_makes_the_next_cpu_wait_until_it_is_free() {
        // Two CPUs on node 0 sharing an LLC, one zone on node 0.
        let s = ModelSink::new(vec![0, 0], vec![0, 0], cost());
        s.attach(&[0], None);
        s.begin(1_000);
        s.zone_lock_taken(CpuId(0), ZoneIdx(0));
        s.zone_lock_released(CpuId(0), ZoneIdx(0), 3);
        // 100 + 3·10, no handoff for the first holder.
        assert_eq!(s.end(), CallTime { now: 1_130, waited: 0, held: 130 });

        // CPU 1 arrives at 1 050 while the lock is held until 1 130.
        s.begin(1_050);
        s.zone_lock_taken(CpuId(1), ZoneIdx(0));
        s.zone_lock_released(CpuId(1), ZoneIdx(0), 0);
        // Waits 80, pays a handoff of 5 and the base of 100.
        assert_eq!(s.end(), CallTime { now: 1_235, waited: 80, held: 105 });

        // Arriving after the lock is free: no wait.
        s.begin(5_000);
        s.zone_lock_taken(CpuId(1), ZoneIdx(0));
        s.zone_lock_released(CpuId(1), ZoneIdx(0), 1);
        assert_eq!(s.end(), CallTime { now: 5_110, waited: 0, held: 110 });
    }

    #[test]
    fn remote_cpus_pay_the_remote_costs() {
        // CPU 0 on node 0 / LLC 0, CPU 1 on node 1 / LLC 1; the zone is on node 0.
        let s = ModelSink::new(vec![0, 1], vec![0, 1], cost());
        s.attach(&[0], None);
        s.begin(0);
        s.zone_lock_taken(CpuId(0), ZoneIdx(0));
        s.zone_lock_released(CpuId(0), ZoneIdx(0), 0);
        s.begin(1_000);
        s.zone_lock_taken(CpuId(1), ZoneIdx(0));
        s.zone_lock_released(CpuId(1), ZoneIdx(0), 2);
        // handoff across LLCs 50 + base 100 + 2 remote list ops of 20.
        assert_eq!(s.end(), CallTime { now: 1_190, waited: 0, held: 190 });
    }

    #[test]
    fn frame_use_is_counted_when_asked() {
        let s = ModelSink::new(vec![0], vec![0], cost());
        s.attach(&[0], Some(16));
        let alloc = |pfn| TraceEvent::PageAlloc {
            cpu: CpuId(0),
            pfn: Some(pagealloc::Pfn(pfn)),
            order: pagealloc::Order(0),
            gfp: pagealloc::Gfp::KERNEL,
            migratetype: pagealloc::MigrateType::Unmovable,
        };
        for pfn in [3, 3, 7, 3, 7, 9, 99] {
            s.record(&alloc(pfn));
        }
        assert_eq!(s.most_used_frames(2), vec![(3, 3), (7, 2)]);
    }
}

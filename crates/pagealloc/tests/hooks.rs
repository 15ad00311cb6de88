//! The hooks a model runner builds on: zone-lock notifications to an event sink, and
//! allocation from a chosen node's zonelist (a task bound with `numactl -m`).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use pagealloc::{
    AllocError, Counter, CpuId, EventSink, Gfp, MemoryMap, MetaLine, NodeId, Order, PageAllocator,
    Policy, TraceEvent, Tunables, ZoneIdx,
};

/// Counts lock notifications and the list work reported with them.
#[derive(Debug, Default)]
struct LockSink {
    taken: AtomicU64,
    released: AtomicU64,
    list_ops: AtomicU64,
    /// Blocks moved to or from a pageset while some lock was held.
    blocks: AtomicU64,
    /// 1 while a lock is held: records must come inside a taken/released pair.
    held: AtomicU64,
    /// Pageset list work reported outside the zone lock.
    pcp_work: AtomicU64,
}

impl EventSink for LockSink {
    fn record(&self, e: &TraceEvent) {
        if matches!(e, TraceEvent::PageAllocZoneLocked { .. } | TraceEvent::PagePcpuDrain { .. }) {
            assert_eq!(self.held.load(Relaxed), 1, "{e:?} outside the zone lock");
            self.blocks.fetch_add(1, Relaxed);
        }
    }
    fn zone_lock_taken(&self, _cpu: CpuId, _zone: ZoneIdx) {
        assert_eq!(self.held.swap(1, Relaxed), 0, "lock taken twice");
        self.taken.fetch_add(1, Relaxed);
    }
    fn zone_lock_released(&self, _cpu: CpuId, _zone: ZoneIdx, list_ops: u32) {
        assert_eq!(self.held.swap(0, Relaxed), 1, "released without being taken");
        self.released.fetch_add(1, Relaxed);
        self.list_ops.fetch_add(u64::from(list_ops), Relaxed);
    }
    fn pcp_list_work(&self, _cpu: CpuId, ops: u32) {
        assert_eq!(self.held.load(Relaxed), 0, "pcp_list_work under the zone lock");
        self.pcp_work.fetch_add(u64::from(ops), Relaxed);
    }
}

#[test]
fn lock_notifications_pair_up_and_report_the_work() {
    let map = MemoryMap::single_node(2, 256 << 20).unwrap();
    let sink = LockSink::default();
    let pa = PageAllocator::with_events(map, Tunables::default(), Policy::modern(), &sink).unwrap();
    let cpu = pa.cpu(CpuId(0)).unwrap();
    let pages: Vec<_> =
        (0..500).map(|_| pa.alloc_pages(cpu, Gfp::KERNEL, Order(0)).unwrap()).collect();
    for p in pages {
        pa.free_pages(cpu, p, Order(0)).unwrap();
    }
    pa.drain_all_pages(cpu, None);
    let taken = sink.taken.load(Relaxed);
    assert!(taken > 0);
    assert_eq!(taken, sink.released.load(Relaxed));
    assert_eq!(taken, pa.vm_events().get(Counter::ZoneLockAcquire));
    // Every block moved under the lock is at least one list insertion or removal.
    let blocks = sink.blocks.load(Relaxed);
    assert!(blocks >= 500, "{blocks}");
    assert!(sink.list_ops.load(Relaxed) >= blocks);
}

#[test]
fn alloc_pages_node_walks_the_chosen_nodes_zonelist() {
    let mut map = MemoryMap::new();
    map.add_range(NodeId(0), (4 << 30)..(4 << 30) + (64 << 20)).unwrap();
    map.add_range(NodeId(1), (5 << 30)..(5 << 30) + (64 << 20)).unwrap();
    map.set_cpus(NodeId(0), 1).unwrap().set_cpus(NodeId(1), 1).unwrap();
    let pa = PageAllocator::new(map, Tunables::default(), Policy::modern()).unwrap();
    let cpu0 = pa.cpu(CpuId(0)).unwrap();
    assert_eq!(cpu0.node(), NodeId(0));

    let local = pa.alloc_pages(cpu0, Gfp::KERNEL, Order(0)).unwrap();
    assert_eq!(pa.zone_of(local).unwrap().node(), NodeId(0));
    let remote = pa.alloc_pages_node(cpu0, NodeId(1), Gfp::KERNEL, Order(0)).unwrap();
    let zone1 = pa.zone_of(remote).unwrap();
    assert_eq!(zone1.node(), NodeId(1));
    // The refill went to CPU 0's pageset in node 1's zone.
    assert!(zone1.pcp(CpuId(0)).unwrap().count > 0);
    assert_eq!(zone1.pcp(CpuId(1)).unwrap().count, 0);

    assert_eq!(
        pa.alloc_pages_node(cpu0, NodeId(2), Gfp::KERNEL, Order(0)),
        Err(AllocError::InvalidNode(NodeId(2)))
    );
    pa.free_pages(cpu0, local, Order(0)).unwrap();
    pa.free_pages(cpu0, remote, Order(0)).unwrap();
    pagealloc::debug::validate(&pa).unwrap();
}

/// The two-pass bulk free of 5.17 (`hpc-vanilla`) moves each drained block twice outside the
/// zone lock and once more under it; the single pass (`hpc-opt`) pops it under the lock.
#[test]
fn bulk_free_reports_its_pageset_list_work_by_form() {
    let run = |preset: &str| {
        // Eight CPUs share the zone's high: one CPU's pageset overflows after a few thousand.
        let map = MemoryMap::single_node(8, 256 << 20).unwrap();
        let sink = LockSink::default();
        let pa = PageAllocator::with_events(
            map,
            Tunables::default(),
            Policy::preset(preset).unwrap(),
            &sink,
        )
        .unwrap();
        let cpu = pa.cpu(CpuId(0)).unwrap();
        let pages: Vec<_> =
            (0..20_000).map(|_| pa.alloc_pages(cpu, Gfp::KERNEL, Order(0)).unwrap()).collect();
        for p in pages {
            pa.free_pages(cpu, p, Order(0)).unwrap();
        }
        (sink.pcp_work.load(Relaxed), sink.list_ops.load(Relaxed), pa.vm_events())
    };
    let (two_pass, two_pass_ops, ev2) = run("hpc-vanilla");
    let (single, single_ops, ev1) = run("hpc-opt");
    let drained2 = ev2.get(Counter::DrainHighPages);
    let drained1 = ev1.get(Counter::DrainHighPages);
    assert!(drained2 > 0 && drained1 > 0, "{ev2}\n{ev1}");
    assert_eq!(single, 0, "the single pass does its list work under the lock");
    // Pass 1 probes at least one list and moves each block twice.
    assert!(two_pass > 2 * drained2, "{two_pass} vs {drained2} drained");
    // Under the lock both count at least one operation per drained block besides the buddy's.
    assert!(two_pass_ops > drained2 && single_ops > drained1);
}

/// Records every metadata line reported, with whether a zone lock was held, and apart the
/// lines reported as written without being read.
#[derive(Debug, Default)]
struct LineSink {
    held: std::sync::atomic::AtomicBool,
    lines: std::sync::Mutex<Vec<(CpuId, MetaLine, bool)>>,
    stored: std::sync::Mutex<Vec<MetaLine>>,
    prefetched: std::sync::Mutex<Vec<MetaLine>>,
}

impl LineSink {
    fn take(&self) -> Vec<(CpuId, MetaLine, bool)> {
        std::mem::take(&mut self.lines.lock().unwrap())
    }
}

impl EventSink for LineSink {
    fn record(&self, _e: &TraceEvent) {}
    fn zone_lock_taken(&self, _cpu: CpuId, _zone: ZoneIdx) {
        self.held.store(true, Relaxed);
    }
    fn zone_lock_released(&self, _cpu: CpuId, _zone: ZoneIdx, _list_ops: u32) {
        self.held.store(false, Relaxed);
    }
    fn touch(&self, cpu: CpuId, line: MetaLine) {
        self.lines.lock().unwrap().push((cpu, line, self.held.load(Relaxed)));
    }
    fn store(&self, cpu: CpuId, line: MetaLine) {
        self.stored.lock().unwrap().push(line);
        self.touch(cpu, line);
    }
    fn prefetch(&self, _cpu: CpuId, line: MetaLine) {
        self.prefetched.lock().unwrap().push(line);
    }
}

#[test]
fn every_metadata_line_a_call_touches_is_reported() {
    let map = MemoryMap::single_node(2, 256 << 20).unwrap();
    let sink = LineSink::default();
    let pa = PageAllocator::with_events(map, Tunables::default(), Policy::modern(), &sink).unwrap();
    sink.take();
    let cpu1 = pa.cpu(CpuId(1)).unwrap();

    // The first order-0 allocation refills CPU 1's pageset under the zone lock: free-area
    // heads and frames under the lock, then the pageset and the block popped, outside it.
    let page = pa.alloc_pages(cpu1, Gfp::KERNEL, Order(0)).unwrap();
    let refill = sink.take();
    let zone = pa.zone_of(page).unwrap().idx();
    assert!(refill.iter().all(|&(c, _, _)| c == CpuId(1)));
    assert!(refill
        .iter()
        .any(|&(_, l, held)| held && matches!(l, MetaLine::FreeArea(z, _) if z == zone)));
    assert!(refill.iter().any(|&(_, l, held)| held && l == MetaLine::Pageset(zone, CpuId(1))));
    // The pop that hands the block out comes after the hold, outside the lock.
    assert!(refill.contains(&(CpuId(1), MetaLine::Frame(page), false)), "{refill:?}");
    assert!(refill.contains(&(CpuId(1), MetaLine::Pageset(zone, CpuId(1)), false)));

    // A pageset hit: the pageset's line and the frames the pop rewires, nothing under a lock.
    sink.stored.lock().unwrap().clear();
    let hit = pa.alloc_pages(cpu1, Gfp::KERNEL, Order(0)).unwrap();
    let lines = sink.take();
    assert!(lines.iter().all(|&(_, _, held)| !held));
    assert!(lines.contains(&(CpuId(1), MetaLine::Pageset(zone, CpuId(1)), false)));
    assert!(lines.contains(&(CpuId(1), MetaLine::Frame(hit), false)));
    assert_eq!(lines.len(), 3, "the refill left more blocks behind: {lines:?}");
    // In the order the pop reports them (one `touch_lines` call, forwarded line by line):
    // the two it reads, then the next block on the list, whose link it only rewrites.
    let popped = [
        (CpuId(1), MetaLine::Pageset(zone, CpuId(1)), false),
        (CpuId(1), MetaLine::Frame(hit), false),
    ];
    assert_eq!(lines[..2], popped, "{lines:?}");
    let stored = std::mem::take(&mut *sink.stored.lock().unwrap());
    assert_eq!(stored, [lines[2].1], "the neighbour is written, not read: {lines:?}");
    assert!(matches!(lines[2].1, MetaLine::Frame(p) if p != hit));

    // A free by another CPU: the claim reads the frame the allocating CPU wrote.
    let cpu0 = pa.cpu(CpuId(0)).unwrap();
    pa.free_pages(cpu0, hit, Order(0)).unwrap();
    let lines = sink.take();
    assert_eq!(lines[0], (CpuId(0), MetaLine::Frame(hit), false));
    assert!(lines.contains(&(CpuId(0), MetaLine::Pageset(zone, CpuId(0)), false)));

    // An order-4 block freed next to its free buddy merges under the lock: the buddy's frame
    // is inspected there.
    let blocks: Vec<_> =
        (0..8).map(|_| pa.alloc_pages(cpu0, Gfp::KERNEL, Order(4)).unwrap()).collect();
    let (a, b) = blocks
        .iter()
        .find_map(|&a| blocks.iter().find(|&&b| a.0 ^ b.0 == 16).map(|&b| (a, b)))
        .expect("two halves of one order-5 block among eight order-4 blocks");
    pa.free_pages(cpu0, a, Order(4)).unwrap();
    sink.take();
    pa.free_pages(cpu0, b, Order(4)).unwrap();
    let lines = sink.take();
    assert!(lines.contains(&(CpuId(0), MetaLine::Frame(a), true)), "{lines:?}");
    for p in blocks.into_iter().filter(|&p| p != a && p != b) {
        pa.free_pages(cpu0, p, Order(4)).unwrap();
    }
    pa.free_pages(cpu1, page, Order(0)).unwrap();
}

/// The 5.17 bulk free prefetches the buddies of the blocks it frees, and says so.
#[test]
fn bulk_free_prefetches_are_reported() {
    let map = MemoryMap::single_node(2, 256 << 20).unwrap();
    let sink = LineSink::default();
    let policy = Policy::preset("hpc-vanilla").unwrap();
    let pa = PageAllocator::with_events(map, Tunables::default(), policy, &sink).unwrap();
    let cpu = pa.cpu(CpuId(0)).unwrap();
    let pages: Vec<_> =
        (0..64).map(|_| pa.alloc_pages(cpu, Gfp::KERNEL, Order(0)).unwrap()).collect();
    for p in pages {
        pa.free_pages(cpu, p, Order(0)).unwrap();
    }
    sink.prefetched.lock().unwrap().clear();
    pa.drain_all_pages(cpu, None);
    let prefetched = sink.prefetched.lock().unwrap();
    assert!(!prefetched.is_empty());
    assert!(prefetched.iter().all(|l| matches!(l, MetaLine::Frame(_))));
}

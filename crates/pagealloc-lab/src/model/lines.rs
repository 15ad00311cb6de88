//! Where each line of the allocator's own metadata is, and what an access to it costs.
//!
//! The allocator reports every metadata line a call touches ([`MetaLine`]: a frame's
//! `struct page`, a free area's list heads, a pageset). This model keeps, per line, which
//! private cache (L2 domain: the CPUs sharing an L2) and which LLC touched it last, with each
//! cache's clock at that moment; an access is then classified and priced from the machine's
//! [`Hierarchy`], as what it costs beyond a hit in the private cache (`l2_hit_ns`): the cost
//! profile's fixed work was measured with its lines there, so that part is in it already.
//!
//! | where the line is | price |
//! |---|---|
//! | this CPU's L2, not evicted | 0 (in the fixed work) |
//! | this LLC, last written by a core whose L2 still holds it | `c2c_same_llc_ns` − `l2_hit_ns` |
//! | this LLC otherwise | `llc_hit_ns` − `l2_hit_ns` |
//! | another LLC of this node | `c2c_other_llc_ns` − `l2_hit_ns` |
//! | an LLC of another node | `c2c_remote_ns` − `l2_hit_ns` |
//! | no cache: the line's home node is this CPU's | `dram_local_ns` − `l2_hit_ns` |
//! | no cache, another node's memory | `dram_remote_ns` − `l2_hit_ns` |
//!
//! The access then moves the line here (a write takes it over; reads are priced as writes, as
//! the allocator writes almost every line it touches: read-mostly lines are not reported).
//!
//! Eviction is LRU counted in touches: a cache's clock advances by one per line touched through
//! it and by 64 per page of data its CPUs write (`advance`), and a line is still in a cache of
//! `capacity` lines when fewer than `capacity` touches came through it since it was touched
//! there. Counting touches rather than distinct lines errs towards "evicted". Lines are 64
//! bytes, and each frame has its own: the kernel's `struct page` is 64 bytes (the library's own
//! frame is 16, but the tables the model reproduces are the kernel's).
//!
//! State lives in atomics used with `Relaxed` loads and stores only: the model drives the
//! allocator from one thread, and an `EventSink` must be `Sync`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use pagealloc::{CpuId, MetaLine, Order};

use crate::machine::hierarchy::{Hierarchy, Level};

/// Bytes of a 4 KiB page: a page of data written counts as this many / 64 line touches.
const PAGE_BYTES: u64 = 4096;
/// Lines in a page.
pub const LINES_PER_PAGE: u64 = PAGE_BYTES / 64;
/// Orders a zone's free area has (0..=MAX_PAGE_ORDER).
const ORDERS: usize = pagealloc::types::MAX_PAGE_ORDER as usize + 1;
/// Bits of a stamp that hold the clock; the bits above hold the cache's index + 1.
const CLOCK_BITS: u32 = 48;
const CLOCK_MASK: u64 = (1 << CLOCK_BITS) - 1;

/// Where an access found its line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Found {
    /// In this CPU's L2.
    L2,
    /// In this LLC, clean or no longer in the writer's L2.
    Llc,
    /// In this LLC, modified in another core's L2.
    SameLlcCore,
    /// In another LLC of this node.
    OtherLlc,
    /// In a cache of another node.
    RemoteNode,
    /// In no cache; memory of this node.
    DramLocal,
    /// In no cache; memory of another node.
    DramRemote,
}

/// The hierarchy in picoseconds, as the model charges it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prices {
    /// Per [`Found`], what one access costs beyond a private-cache hit: the cost profile's
    /// fixed work was measured with its lines in the private cache, so it already holds that
    /// part (an L2 hit is 0 here; a line from DRAM is the DRAM latency less the L2 hit's).
    pub access: [u64; 7],
    /// A lock handed over from a CPU of the same LLC, another LLC of the node, another node.
    pub handoff_same_llc: u64,
    /// See `handoff_same_llc`.
    pub handoff_other_llc: u64,
    /// See `handoff_same_llc`.
    pub handoff_remote: u64,
    /// Writing a page of data still in this core's L2; `None` when the machine gives no
    /// `write_l2_gbps` (the model then keeps no page L2 and prices such a page at the LLC's).
    pub page_l2: Option<u64>,
    /// The first line of a page in this core's L2: an L2 hit's latency.
    pub line_l2: u64,
    /// Writing a page of data another core of this LLC wrote a moment ago, still in that
    /// core's L2; `None` when the machine gives no `write_c2c_gbps` (such a page is then
    /// priced at the LLC's rate).
    pub page_c2c: Option<u64>,
    /// The first line of such a page: a load of a line modified by another core of the
    /// LLC (`c2c_same_llc_ns`).
    pub line_c2c: u64,
    /// Writing a page of data that is in this LLC.
    pub page_llc: u64,
    /// Writing a page of data from this node's DRAM.
    pub page_dram: u64,
    /// Writing a page of data from another node's DRAM: `page_dram` scaled by the remote to
    /// local idle latency, as a core's streaming rate is its outstanding misses over their
    /// latency (Little's law) and the number of misses in flight does not change.
    pub page_dram_remote: u64,
    /// L1 data-cache misses one core keeps in flight ([`Level::MissSlots`]); 0 when the
    /// machine does not give it, and then no transfer overlaps another.
    pub miss_slots: u32,
    /// The first line of a page in this LLC: an LLC hit's full latency (see
    /// [`Prices::part_page`]).
    pub line_llc: u64,
    /// The first line of a page in this node's DRAM: its full idle latency.
    pub line_dram: u64,
    /// The first line of a page in another node's DRAM.
    pub line_dram_remote: u64,
    /// Per [`Found`], what a line the core's streamer had on its way costs beyond a
    /// private-cache hit: its share of a streamed page from where it was (a 64th of
    /// `page_llc`, `page_dram` or `page_dram_remote`), at most the access's own price.
    pub streamed: [u64; 7],
    /// How long a node's memory is busy with one cold page a CPU writes (ps): the page's
    /// lines read for ownership and written back, 2 × 4096 bytes at the node's `node_rw_gbps`
    /// (ordinary stores, as the write rates were measured with); 0 when the machine does not
    /// give it (no shared limit).
    pub node_page: u64,
}

impl Prices {
    /// The prices of `h`, which must hold every figure the machine's shape needs (a missing
    /// optional figure is never charged: the shape never produces that case).
    pub fn of(h: &Hierarchy) -> Prices {
        let ps = |l: Level| (h.value(l).unwrap_or(0.0) * 1000.0).round() as u64;
        let page = |l: Level| {
            let gbps = h.value(l).unwrap_or(f64::INFINITY);
            (PAGE_BYTES as f64 / gbps * 1000.0).round() as u64
        };
        let page_dram = page(Level::WriteDram);
        let remote_ratio = match (h.value(Level::DramRemote), h.value(Level::DramLocal)) {
            (Some(r), Some(l)) if l > 0.0 => r / l,
            _ => 1.0,
        };
        let beyond_l2 = |l: Level| ps(l).saturating_sub(ps(Level::L2Hit));
        let access = [
            0,
            beyond_l2(Level::LlcHit),
            beyond_l2(Level::C2cSameLlc),
            beyond_l2(Level::C2cOtherLlc),
            beyond_l2(Level::C2cRemote),
            beyond_l2(Level::DramLocal),
            beyond_l2(Level::DramRemote),
        ];
        let page_llc = page(Level::WriteLlc);
        let page_dram_remote = (page_dram as f64 * remote_ratio).round() as u64;
        // A streamed line's share of its page's transfer, from where the line was.
        let line_of = |page: u64| (page / LINES_PER_PAGE).saturating_sub(ps(Level::L2Hit));
        let streamed_from = [
            0,
            line_of(page_llc),
            line_of(page_llc),
            line_of(page_llc),
            line_of(page_dram_remote),
            line_of(page_dram),
            line_of(page_dram_remote),
        ];
        Prices {
            access,
            streamed: std::array::from_fn(|i| streamed_from[i].min(access[i])),
            node_page: h.value(Level::NodeRw).map_or(0, |_| 2 * page(Level::NodeRw)),
            handoff_same_llc: ps(Level::HandoffSameLlc),
            handoff_other_llc: ps(Level::HandoffOtherLlc),
            handoff_remote: ps(Level::HandoffRemote),
            page_l2: h.value(Level::WriteL2).map(|_| page(Level::WriteL2)),
            line_l2: ps(Level::L2Hit),
            page_c2c: h.value(Level::WriteC2c).map(|_| page(Level::WriteC2c)),
            line_c2c: ps(Level::C2cSameLlc),
            page_llc,
            page_dram,
            page_dram_remote,
            miss_slots: h.value(Level::MissSlots).map_or(0, |n| n.round() as u32),
            line_llc: ps(Level::LlcHit),
            line_dram: ps(Level::DramLocal),
            line_dram_remote: h
                .value(Level::DramRemote)
                .map_or(ps(Level::DramLocal), |_| ps(Level::DramRemote)),
        }
    }

    /// Touching `bytes` (fewer than a page) of one page whose first line costs `first` (a
    /// miss's full latency where the page's data is) and whose whole write costs `page`.
    ///
    /// A page write rate is a streaming figure: the lines' misses overlap, up to the core's
    /// outstanding misses. A touch of a few lines (a packet header the stack reads, a small
    /// chunk copied in) has nothing to overlap its first miss with and waits for it whole, so
    /// pricing it at the stream's rate per byte makes a one-line touch a fraction of a miss.
    /// Here the first line waits its latency and each further line streams at the page's
    /// rate per line beyond it: one line costs a miss, 64 lines the page, and nothing in
    /// between is fitted; the straight line between them is assumed. (On the lab VM a real
    /// page-frag-rx run spends about an LLC miss on each packet's one-line touch:
    /// docs/performance.md, "Where a real step's time goes".)
    pub fn part_page(first: u64, page: u64, bytes: u64) -> u64 {
        let lines = bytes.div_ceil(64).clamp(1, LINES_PER_PAGE);
        let first = first.min(page);
        first + (lines - 1) * (page - first) / (LINES_PER_PAGE - 1)
    }

    /// One access found at `f`, beyond the private-cache hit in the fixed work.
    #[inline]
    pub fn of_access(&self, f: Found) -> u64 {
        self.access[f as usize]
    }

    /// One access found at `f` that the core's streamer had on its way.
    #[inline]
    pub fn of_streamed(&self, f: Found) -> u64 {
        self.streamed[f as usize]
    }
}

/// Where the CPUs and caches are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheMap {
    /// Node of each CPU.
    pub cpu_node: Vec<u32>,
    /// LLC of each CPU, numbered over the machine.
    pub cpu_llc: Vec<u32>,
    /// L2 domain of each CPU, numbered over the machine.
    pub cpu_l2: Vec<u32>,
    /// Node of each LLC.
    pub llc_node: Vec<u32>,
    /// Capacity of each LLC, lines.
    pub llc_lines: Vec<u64>,
    /// Capacity of each L2 domain, lines.
    pub l2_lines: Vec<u64>,
    /// Frames whose metadata shares one line (1 for the kernel's 64-byte struct page, 4 for
    /// the library's 16-byte frame); a power of two.
    pub frames_per_line: u64,
    /// Streams each core's L2 streamer follows (the machine's `prefetch_streams`); 0: the
    /// machine gives no hardware prefetchers and none is modelled.
    pub prefetch_streams: u32,
}

/// The zones, for a line's home node.
#[derive(Clone, Debug)]
struct ZoneHome {
    /// (first frame past a run of zones, their node), in frame order, each run the zones of
    /// one node that follow each other: most machines have one run per node, so a frame's
    /// node is found in one or two comparisons.
    runs: Vec<(u64, u32)>,
    nodes: Vec<u32>,
}

/// Where a CPU is: its LLC, its L2 domain and its node, with the tag bits of the stamps it
/// writes in each (`stamp(llc, 0)`, `stamp(l2, 0)`), so a touch only ORs in the clock.
#[derive(Clone, Copy, Debug)]
struct Place {
    llc: u32,
    l2: u32,
    node: u32,
    llc_tag: u64,
    l2_tag: u64,
}

/// A CPU's place and its two caches, looked up once for all the lines of one operation.
#[derive(Clone, Copy, Debug)]
pub struct Here<'a> {
    me: &'a Place,
    l2: &'a Cache,
    llc: &'a Cache,
}

/// A line's two stamps: [`LLC`] the last LLC's, [`L2`] the last L2 domain's. One array
/// element, so both come in one host cache line and one bounds check.
type Stamps = [AtomicU64; 2];
/// The LLC's stamp in [`Stamps`].
const LLC: usize = 0;
/// The L2 domain's stamp in [`Stamps`].
const L2: usize = 1;

/// One cache: its clock (touches through it so far), capacity and node.
#[derive(Debug)]
struct Cache {
    clock: AtomicU64,
    lines: u64,
    node: u32,
}

impl Cache {
    /// Does a line stamped `s` by this cache still sit in it? A stamp holds the clock before
    /// its own touch's tick: `now - stamp - 1` other touches came through since, and the line
    /// is still there if they were fewer than the capacity.
    #[inline]
    fn holds(&self, s: u64) -> bool {
        self.clock.load(Relaxed).wrapping_sub(s & CLOCK_MASK) & CLOCK_MASK <= self.lines
    }

    /// The clock before this touch, ticking it.
    #[inline]
    fn tick(&self, by: u64) -> u64 {
        let now = self.clock.load(Relaxed);
        self.clock.store(now + by, Relaxed);
        now
    }
}

/// Every tracked line's last touch and every cache's clock.
#[derive(Debug)]
pub struct LineCache {
    cpus: Box<[Place]>,
    llcs: Box<[Cache]>,
    l2s: Box<[Cache]>,
    home: ZoneHome,
    /// Per frame line, its stamps.
    frames: Box<[Stamps]>,
    /// A frame's line: its number shifted right by this.
    frame_shift: u32,
    /// The same for free areas (zone × order) then pagesets (zone × CPU).
    others: Box<[Stamps]>,
    nr_zones: usize,
    /// Accesses per [`Found`].
    found: [AtomicU64; 7],
    /// The hardware prefetchers' state, when the machine has them (see [`Prefetchers`]).
    hw: Option<Prefetchers>,
}

/// Zone ends `(first frame past the zone, node)`, sorted, merged where neighbours share a
/// node: the first run that ends past a frame is the one holding the first zone that does.
fn node_runs(ends: &[(u64, u32)]) -> Vec<(u64, u32)> {
    let mut runs: Vec<(u64, u32)> = Vec::new();
    for &(end, node) in ends {
        match runs.last_mut() {
            Some(last) if last.1 == node => last.0 = end,
            _ => runs.push((end, node)),
        }
    }
    runs
}

/// `(index + 1) << CLOCK_BITS | clock`.
#[inline]
fn stamp(index: u32, clock: u64) -> u64 {
    (u64::from(index) + 1) << CLOCK_BITS | (clock & CLOCK_MASK)
}

/// The cache a stamp names + 1, or 0 for none.
#[inline]
fn tag(s: u64) -> u32 {
    (s >> CLOCK_BITS) as u32
}

impl LineCache {
    /// Lines for frames `0..nr_frames` and zones given as (first frame, end frame, node), in
    /// the allocator's zone order.
    pub fn new(map: CacheMap, nr_frames: u64, zones: &[(u64, u64, u32)]) -> LineCache {
        let mut ends: Vec<(u64, u32)> = zones.iter().map(|&(_, end, node)| (end, node)).collect();
        ends.sort_unstable();
        let runs = node_runs(&ends);
        let nr_zones = zones.len();
        let others = nr_zones * (ORDERS + map.cpu_node.len());
        let zeroed = |n: usize| bytemuck::allocation::zeroed_slice_box::<Stamps>(n);
        // An L2 domain's node is its first CPU's.
        let mut l2_node = vec![0; map.l2_lines.len()];
        for (&d, &node) in map.cpu_l2.iter().zip(&map.cpu_node) {
            l2_node[d as usize] = node;
        }
        let caches = |lines: &[u64], nodes: &[u32]| -> Box<[Cache]> {
            lines
                .iter()
                .zip(nodes)
                .map(|(&lines, &node)| Cache { clock: AtomicU64::new(0), lines, node })
                .collect()
        };
        LineCache {
            cpus: (0..map.cpu_node.len())
                .map(|c| {
                    let (llc, l2) = (map.cpu_llc[c], map.cpu_l2[c]);
                    let (llc_tag, l2_tag) = (stamp(llc, 0), stamp(l2, 0));
                    Place { llc, l2, node: map.cpu_node[c], llc_tag, l2_tag }
                })
                .collect(),
            llcs: caches(&map.llc_lines, &map.llc_node),
            l2s: caches(&map.l2_lines, &l2_node),
            frames: zeroed((nr_frames / map.frames_per_line.max(1) + 1) as usize),
            frame_shift: map.frames_per_line.max(1).trailing_zeros(),
            others: zeroed(others),
            home: ZoneHome { runs, nodes: zones.iter().map(|z| z.2).collect() },
            nr_zones,
            found: Default::default(),
            hw: (map.prefetch_streams != 0)
                .then(|| Prefetchers::new(map.cpu_node.len(), map.prefetch_streams as usize)),
        }
    }

    /// The node whose memory holds frame `pfn` (the last node for a frame past every zone).
    fn frame_node(&self, pfn: u64) -> u32 {
        let runs = &self.home.runs;
        runs.iter().find(|&&(end, _)| pfn < end).or(runs.last()).map_or(0, |&(_, n)| n)
    }

    /// The stamps of `line`. By reference: a line the caller has just written to memory is
    /// read field by field, each load the width of its store (a whole-enum load straddling
    /// the caller's narrower stores waits for them to drain, and was the hottest
    /// instruction of a batch of touches).
    #[inline]
    fn slot(&self, line: &MetaLine) -> &Stamps {
        let (arr, i) = match *line {
            MetaLine::Frame(pfn) => (&self.frames, (pfn.0 >> self.frame_shift) as usize),
            MetaLine::FreeArea(zone, Order(o)) => {
                (&self.others, zone.index() * ORDERS + o as usize)
            }
            MetaLine::Pageset(zone, cpu) => {
                let i = self.nr_zones * ORDERS + zone.index() * self.cpus.len();
                (&self.others, i + cpu.index())
            }
        };
        &arr[i]
    }

    /// The node whose memory holds `line` (looked up only when no cache has it).
    fn home(&self, line: MetaLine) -> u32 {
        match line {
            MetaLine::Frame(pfn) => self.frame_node(pfn.0),
            MetaLine::FreeArea(zone, _) => self.home.nodes[zone.index()],
            MetaLine::Pageset(_, cpu) => self.cpus[cpu.index()].node,
        }
    }

    /// A hint to the host that `pfn`'s stamps will be read soon (the model's own speed; it
    /// changes nothing in the run).
    #[inline]
    pub fn prefetch_frame(&self, pfn: u64) {
        if let Some(s) = self.frames.get((pfn >> self.frame_shift) as usize) {
            crate::heap::prefetch(s);
        }
    }

    /// `cpu` touches `line`: where it was found. The line is now in `cpu`'s L2 and LLC.
    #[inline]
    pub fn access(&self, cpu: CpuId, line: MetaLine) -> Found {
        if self.access_in_l2(cpu, line) {
            Found::L2
        } else {
            self.access_beyond_l2(cpu, line)
        }
    }

    /// [`access`](Self::access) when `line` is in `cpu`'s L2 (true); otherwise false, and
    /// nothing changed. Nine accesses in ten end here, so this is all the model's hottest
    /// path inlines: no call, no stack frame (the line model was a third of the run time).
    #[inline(always)]
    pub fn access_in_l2(&self, cpu: CpuId, line: MetaLine) -> bool {
        let hit = self.access_in_l2_from(self.here(cpu), &line);
        if hit {
            self.count_l2_hits(1);
        }
        hit
    }

    /// Where `cpu` is, for a run of [`access_in_l2_from`](Self::access_in_l2_from) calls.
    #[inline(always)]
    pub fn here(&self, cpu: CpuId) -> Here<'_> {
        let me = &self.cpus[cpu.index()];
        Here { me, l2: &self.l2s[me.l2 as usize], llc: &self.llcs[me.llc as usize] }
    }

    /// [`access_in_l2`](Self::access_in_l2) from a CPU looked up once for several lines,
    /// without counting the hit: the caller adds its hits with
    /// [`count_l2_hits`](Self::count_l2_hits) before anything reads [`found`](Self::found).
    #[inline(always)]
    pub fn access_in_l2_from(&self, here: Here<'_>, line: &MetaLine) -> bool {
        let slot = self.slot(line);
        let l2_s = slot[L2].load(Relaxed);
        if tag(l2_s) != here.me.l2 + 1 || !here.l2.holds(l2_s) {
            return false;
        }
        slot[LLC].store(here.me.llc_tag | (here.llc.tick(1) & CLOCK_MASK), Relaxed);
        slot[L2].store(here.me.l2_tag | (here.l2.tick(1) & CLOCK_MASK), Relaxed);
        true
    }

    /// Count `n` accesses found in the private cache.
    #[inline(always)]
    pub fn count_l2_hits(&self, n: u64) {
        let c = &self.found[Found::L2 as usize];
        c.store(c.load(Relaxed) + n, Relaxed);
    }

    /// [`access`](Self::access) of a line that is not in `cpu`'s L2.
    #[inline(never)]
    pub fn access_beyond_l2(&self, cpu: CpuId, line: MetaLine) -> Found {
        self.access_beyond_l2_hw(cpu, line).0
    }

    /// [`access_beyond_l2`](Self::access_beyond_l2), and whether the core's streamer had
    /// the line on its way ([`Prefetchers`]): then the access costs the line's share of a
    /// streamed transfer ([`Prices::of_streamed`]), not its latency. A frame line brought
    /// from memory also brings its pair line, when no cache holds that one.
    #[inline(never)]
    pub fn access_beyond_l2_hw(&self, cpu: CpuId, line: MetaLine) -> (Found, bool) {
        let slot = self.slot(&line);
        let me = &self.cpus[cpu.index()];
        let found = self.classify(me, line, slot[LLC].load(Relaxed), slot[L2].load(Relaxed));
        self.record(slot, me, found);
        let (Some(hw), MetaLine::Frame(pfn)) = (&self.hw, line) else { return (found, false) };
        let index = pfn.0 >> self.frame_shift;
        if matches!(found, Found::DramLocal | Found::DramRemote) {
            self.fetch_pair(hw, me, index);
        }
        let streamed = hw.follow(cpu.index(), index);
        if streamed {
            hw.streamed.store(hw.streamed.load(Relaxed) + 1, Relaxed);
        }
        (found, streamed)
    }

    /// The spatial prefetcher: frame line `index` came from memory into `me`'s L2, and its
    /// pair in the 128-byte aligned block comes with it when no cache holds that line (a line
    /// in some cache is left where it is: the model keeps one holder per line).
    fn fetch_pair(&self, hw: &Prefetchers, me: &Place, index: u64) {
        let Some(pair) = self.frames.get((index ^ 1) as usize) else { return };
        if self.holding_llc(pair[LLC].load(Relaxed)).is_none() {
            self.bring(pair, me);
            hw.paired.store(hw.paired.load(Relaxed) + 1, Relaxed);
        }
    }

    /// Frame lines the streamer had on their way, and pair lines the spatial prefetcher
    /// brought, so far; (0, 0) on a machine without hardware prefetchers.
    pub fn prefetched_by_hardware(&self) -> (u64, u64) {
        self.hw.as_ref().map_or((0, 0), |hw| (hw.streamed.load(Relaxed), hw.paired.load(Relaxed)))
    }

    /// Record an access by `me`, found at `found`, in the line's `slot`: it is now in `me`'s
    /// LLC and L2, whose clocks tick.
    #[inline(always)]
    fn record(&self, slot: &Stamps, me: &Place, found: Found) {
        self.bring(slot, me);
        let n = &self.found[found as usize];
        n.store(n.load(Relaxed) + 1, Relaxed);
    }

    /// The line of `slot` is now in `me`'s L2 and LLC, whose clocks tick.
    #[inline(always)]
    fn bring(&self, slot: &Stamps, me: &Place) {
        let (my_llc, my_l2) = (&self.llcs[me.llc as usize], &self.l2s[me.l2 as usize]);
        slot[LLC].store(me.llc_tag | (my_llc.tick(1) & CLOCK_MASK), Relaxed);
        slot[L2].store(me.l2_tag | (my_l2.tick(1) & CLOCK_MASK), Relaxed);
    }

    /// The LLC that still holds a line whose LLC stamp is `llc_s`, if any.
    #[inline]
    fn holding_llc(&self, llc_s: u64) -> Option<(u32, &Cache)> {
        let l = tag(llc_s).checked_sub(1)?;
        let c = &self.llcs[l as usize];
        c.holds(llc_s).then_some((l, c))
    }

    /// Where a line that is not in `me`'s L2 was found, from its stamps `llc_s` and `l2_s`.
    #[inline]
    fn classify(&self, me: &Place, line: MetaLine, llc_s: u64, l2_s: u64) -> Found {
        match self.holding_llc(llc_s) {
            Some((l, c)) => {
                if l != me.llc {
                    if c.node == me.node {
                        Found::OtherLlc
                    } else {
                        Found::RemoteNode
                    }
                } else {
                    // The last toucher was a core of this LLC: still modified in its L2?
                    match tag(l2_s).checked_sub(1) {
                        Some(d) if d != me.l2 && self.l2s[d as usize].holds(l2_s) => {
                            Found::SameLlcCore
                        }
                        _ => Found::Llc,
                    }
                }
            }
            _ if self.home(line) == me.node => Found::DramLocal,
            _ => Found::DramRemote,
        }
    }

    /// `cpu` wrote `pages` pages of data: they pass through its L2 and LLC and push metadata
    /// lines out.
    #[inline]
    pub fn advance(&self, cpu: CpuId, pages: u64) {
        self.advance_lines(cpu, pages * LINES_PER_PAGE);
    }

    /// `cpu` brought `lines` lines of its own data into its L2 (and, as their victims, into
    /// its LLC), pushing metadata lines out of both. An LLC that keeps what its cores' L2s
    /// evict (non-inclusive, Skylake-SP on) takes about one line per L2 miss in steady state.
    #[inline]
    pub fn advance_lines(&self, cpu: CpuId, lines: u64) {
        let me = self.cpus[cpu.index()];
        self.llcs[me.llc as usize].tick(lines);
        self.l2s[me.l2 as usize].tick(lines);
    }

    /// Accesses so far, per [`Found`].
    pub fn found(&self) -> [u64; 7] {
        std::array::from_fn(|i| self.found[i].load(Relaxed))
    }

    /// The node of `cpu`.
    #[inline]
    pub fn cpu_node(&self, cpu: CpuId) -> u32 {
        self.cpus[cpu.index()].node
    }

    /// How far apart two CPUs are, for a lock handoff.
    #[inline]
    pub fn distance(&self, a: CpuId, b: CpuId) -> Distance {
        let (a, b) = (self.cpus[a.index()], self.cpus[b.index()]);
        if a.l2 == b.l2 {
            Distance::SameCore
        } else if a.llc == b.llc {
            Distance::SameLlc
        } else if a.node == b.node {
            Distance::OtherLlc
        } else {
            Distance::OtherNode
        }
    }

    /// The node whose memory holds frame `pfn`.
    pub fn home_of_frame(&self, pfn: u64) -> u32 {
        self.frame_node(pfn)
    }
}

/// Lines of metadata in a 4 KiB page: a streamer follows a stream within one page.
const STREAM_PAGE_LINES: u64 = 4096 / 64;

/// Each core's L2 streamer, as the vendors' optimisation manuals describe it: it watches the
/// core's requests for ascending or descending lines within a 4 KiB page, follows up to
/// `streams` such pages at once, and once a page's direction is known fetches the lines ahead
/// of the requests, so a request that continues the stream finds its line on the way.
///
/// Modelled on the frame-metadata lines that miss the L2 (the others are free anyway): a
/// page's entry remembers the last such line and the direction, a miss one or two lines
/// further the same way continues the stream (two: the pair prefetcher brought the line in
/// between, an L2 hit the tracker does not see), the first step sets the direction (that
/// request itself waits in full), anything else starts the page over, and a page not
/// followed takes the oldest entry's place. State is per CPU, in atomics used with
/// `Relaxed` loads and stores only, as the rest of the line model's.
#[derive(Debug)]
struct Prefetchers {
    /// Per CPU, `streams` entries: 0 empty, else `(page + 1) << 8 | offset << 2 | dir`, the
    /// page's number, its last line's offset in it and the direction (0 none yet, 1 up, 2
    /// down).
    entries: Box<[AtomicU64]>,
    /// Per CPU, the entry last used (upper half), looked at first since a run's misses
    /// follow each other, and the entry a new page takes next (lower half; round robin: the
    /// oldest).
    cursor: Box<[AtomicU64]>,
    streams: usize,
    /// Frame lines found on their way.
    streamed: AtomicU64,
    /// Pair lines brought.
    paired: AtomicU64,
}

impl Prefetchers {
    fn new(cpus: usize, streams: usize) -> Prefetchers {
        let zeroed = |n: usize| (0..n).map(|_| AtomicU64::new(0)).collect();
        Prefetchers {
            entries: zeroed(cpus * streams),
            cursor: zeroed(cpus),
            streams,
            streamed: AtomicU64::new(0),
            paired: AtomicU64::new(0),
        }
    }

    /// CPU `cpu` misses line `index`: did its streamer have it on the way?
    fn follow(&self, cpu: usize, index: u64) -> bool {
        let page = index / STREAM_PAGE_LINES;
        let offset = index % STREAM_PAGE_LINES;
        let entries = &self.entries[cpu * self.streams..][..self.streams];
        let key = (page + 1) << 8;
        let cursor = &self.cursor[cpu];
        let (last_used, next) = {
            let c = cursor.load(Relaxed);
            ((c >> 32) as usize, c & 0xffff_ffff)
        };
        let ours = |i: &usize| entries[*i].load(Relaxed) & !0xff == key;
        let Some(i) = Some(last_used).filter(ours).or_else(|| (0..self.streams).find(ours)) else {
            let i = next as usize;
            cursor.store((i as u64) << 32 | ((i + 1) % self.streams) as u64, Relaxed);
            entries[i].store(key | offset << 2, Relaxed);
            return false;
        };
        cursor.store((i as u64) << 32 | next, Relaxed);
        let e = &entries[i];
        let old = e.load(Relaxed);
        let (last, dir) = ((old >> 2) & 0x3f, old & 3);
        let up = offset > last && offset - last <= 2;
        let down = offset < last && last - offset <= 2;
        let (streamed, dir) = match (up, down) {
            (true, _) => (dir == 1, 1),
            (_, true) => (dir == 2, 2),
            _ => (false, 0),
        };
        e.store(key | offset << 2 | dir, Relaxed);
        streamed
    }
}

/// How far a lock travels between two holders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distance {
    /// The same CPU or a CPU sharing its L2 (an SMT sibling): no transfer.
    SameCore,
    /// Another core of the same LLC.
    SameLlc,
    /// Another LLC of the same node.
    OtherLlc,
    /// Another node.
    OtherNode,
}

impl Prices {
    /// A lock handed over across `d`.
    #[inline]
    pub fn handoff(&self, d: Distance) -> u64 {
        match d {
            Distance::SameCore => 0,
            Distance::SameLlc => self.handoff_same_llc,
            Distance::OtherLlc => self.handoff_other_llc,
            Distance::OtherNode => self.handoff_remote,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::hierarchy::Sourced;
    use pagealloc::{Pfn, ZoneIdx};

    /// Two nodes of 2 LLCs each; each LLC holds 2 L2 domains of 2 CPUs: CPUs 0-3 on LLC 0,
    /// 4-7 on LLC 1 (node 0), 8-11 on LLC 2, 12-15 on LLC 3 (node 1). Each LLC holds 100 lines,
    /// each L2 10. Frames 0..1000 on node 0, 1000..2000 on node 1.
    fn cache() -> LineCache {
        let cpus = 16;
        let map = CacheMap {
            cpu_node: (0..cpus).map(|c| c / 8).collect(),
            cpu_llc: (0..cpus).map(|c| c / 4).collect(),
            cpu_l2: (0..cpus).map(|c| c / 2).collect(),
            llc_node: vec![0, 0, 1, 1],
            llc_lines: vec![100; 4],
            l2_lines: vec![10; 8],
            frames_per_line: 1,
            prefetch_streams: 0,
        };
        LineCache::new(map, 2000, &[(0, 1000, 0), (1000, 2000, 1)])
    }

    #[test]
    fn a_frames_node_is_its_zones_with_zones_merged_into_runs() {
        // Zones given out of order, a node's zones apart from each other, a hole (20..30).
        let zones = [(40, 50, 0), (0, 10, 0), (30, 40, 1), (10, 20, 0), (50, 60, 1)];
        let map = CacheMap {
            cpu_node: vec![0, 1],
            cpu_llc: vec![0, 1],
            cpu_l2: vec![0, 1],
            llc_node: vec![0, 1],
            llc_lines: vec![100; 2],
            l2_lines: vec![10; 2],
            frames_per_line: 1,
            prefetch_streams: 0,
        };
        let c = LineCache::new(map, 60, &zones);
        assert_eq!(c.home.runs, [(20, 0), (40, 1), (50, 0), (60, 1)]);
        // The first zone ending past the frame; past every zone, the last.
        let mut ends: Vec<(u64, u32)> = zones.iter().map(|&(_, e, n)| (e, n)).collect();
        ends.sort_unstable();
        for pfn in 0..70 {
            let first = ends.iter().find(|&&(e, _)| pfn < e).or(ends.last()).unwrap().1;
            assert_eq!(c.home_of_frame(pfn), first, "frame {pfn}");
        }
    }

    const F: MetaLine = MetaLine::Frame(Pfn(5));

    /// The prices of a hierarchy that gives only `figures`.
    fn prices(figures: &[(Level, f64)]) -> Prices {
        let mut h = Hierarchy::default();
        for &(l, v) in figures {
            h.set(l, Sourced::new(v, "test"));
        }
        Prices::of(&h)
    }

    impl LineCache {
        /// The map `cache()` was built from.
        fn map_for_test(&self) -> CacheMap {
            CacheMap {
                cpu_node: self.cpus.iter().map(|p| p.node).collect(),
                cpu_llc: self.cpus.iter().map(|p| p.llc).collect(),
                cpu_l2: self.cpus.iter().map(|p| p.l2).collect(),
                llc_node: self.llcs.iter().map(|c| c.node).collect(),
                llc_lines: self.llcs.iter().map(|c| c.lines).collect(),
                l2_lines: self.l2s.iter().map(|c| c.lines).collect(),
                frames_per_line: 1 << self.frame_shift,
                prefetch_streams: self.hw.as_ref().map_or(0, |hw| hw.streams as u32),
            }
        }
    }

    #[test]
    fn a_line_goes_from_dram_to_the_private_cache() {
        let c = cache();
        assert_eq!(c.access(CpuId(0), F), Found::DramLocal, "never touched: its node's memory");
        assert_eq!(c.access(CpuId(0), F), Found::L2);
        // The SMT sibling shares the L2.
        assert_eq!(c.access(CpuId(1), F), Found::L2);
        // A frame of node 1's memory, first touched from node 0.
        assert_eq!(c.access(CpuId(0), MetaLine::Frame(Pfn(1500))), Found::DramRemote);
    }

    #[test]
    fn a_line_written_on_one_socket_and_read_on_the_other_is_a_remote_transfer() {
        let c = cache();
        c.access(CpuId(0), F);
        assert_eq!(c.access(CpuId(12), F), Found::RemoteNode);
        // And back: it now lives on node 1.
        assert_eq!(c.access(CpuId(0), F), Found::RemoteNode);
        // Another LLC of the same node.
        assert_eq!(c.access(CpuId(4), F), Found::OtherLlc);
        // Another core of the same LLC, while the writer's L2 still holds it.
        assert_eq!(c.access(CpuId(6), F), Found::SameLlcCore);
    }

    #[test]
    fn lru_eviction_counts_touches_per_cache() {
        let c = cache();
        c.access(CpuId(0), F);
        // Nine other lines through the same L2: still there (10 lines).
        for f in 100..109 {
            c.access(CpuId(0), MetaLine::Frame(Pfn(f)));
        }
        assert_eq!(c.access(CpuId(0), F), Found::L2);
        // Ten more: out of the L2, still in the LLC.
        for f in 100..110 {
            c.access(CpuId(0), MetaLine::Frame(Pfn(f)));
        }
        assert_eq!(c.access(CpuId(0), F), Found::Llc);
        // Another core of the LLC wrote it, then 10 more lines went through that core's L2:
        // an LLC hit, no longer a transfer from its L2.
        c.access(CpuId(2), F);
        for f in 100..110 {
            c.access(CpuId(2), MetaLine::Frame(Pfn(f)));
        }
        assert_eq!(c.access(CpuId(0), F), Found::Llc);
        // Two pages of data written by CPU 0 push 128 lines through its LLC (100): evicted
        // from everything, so back from DRAM.
        c.advance(CpuId(0), 2);
        assert_eq!(c.access(CpuId(0), F), Found::DramLocal);
        // Touches on other caches do not age it.
        for f in 100..400 {
            c.access(CpuId(12), MetaLine::Frame(Pfn(f)));
        }
        assert_eq!(c.access(CpuId(0), F), Found::L2);
        // From local memory: F twice and frames 100..=109 the first time CPU 0 met them. The
        // two pages evicted those from LLC 0 as well, so CPU 12 found all 300 of its lines in
        // node 0's memory.
        let found = c.found();
        assert_eq!(found[Found::DramLocal as usize], 12);
        assert_eq!(found[Found::RemoteNode as usize], 0);
        assert_eq!(found[Found::DramRemote as usize], 300);
    }

    #[test]
    fn a_tasks_own_lines_age_the_l2_and_llc_of_its_cpu_only() {
        // L2 10 lines, LLC 100 (the test cache's sizes).
        let c = cache();
        c.access(CpuId(0), F);
        c.advance_lines(CpuId(0), 9);
        assert_eq!(c.access(CpuId(0), F), Found::L2, "nine lines: still in the L2");
        c.advance_lines(CpuId(0), 10);
        assert_eq!(c.access(CpuId(0), F), Found::Llc, "ten: out of the L2, in the LLC");
        c.advance_lines(CpuId(0), 101);
        assert_eq!(c.access(CpuId(0), F), Found::DramLocal, "past the LLC too");
        // Another LLC's work leaves it where it is.
        c.advance_lines(CpuId(12), 1000);
        assert_eq!(c.access(CpuId(0), F), Found::L2);
    }

    #[test]
    fn library_frames_share_a_line_four_at_a_time() {
        let map = CacheMap { frames_per_line: 4, ..cache().map_for_test() };
        let c = LineCache::new(map, 2000, &[(0, 1000, 0), (1000, 2000, 1)]);
        assert_eq!(c.access(CpuId(0), MetaLine::Frame(Pfn(8))), Found::DramLocal);
        // Frames 8..12 are one line; 12 starts the next.
        assert_eq!(c.access(CpuId(0), MetaLine::Frame(Pfn(11))), Found::L2);
        assert_eq!(c.access(CpuId(0), MetaLine::Frame(Pfn(12))), Found::DramLocal);
    }

    #[test]
    fn free_areas_and_pagesets_have_their_own_lines_and_homes() {
        let c = cache();
        let area = MetaLine::FreeArea(ZoneIdx(1), Order(3));
        // Zone 1's free area lives on node 1.
        assert_eq!(c.access(CpuId(0), area), Found::DramRemote);
        assert_eq!(c.access(CpuId(0), MetaLine::FreeArea(ZoneIdx(1), Order(4))), Found::DramRemote);
        assert_eq!(c.access(CpuId(0), area), Found::L2);
        // CPU 9's pageset lives on CPU 9's node; a remote drain by CPU 0 reaches it there.
        let pcp = MetaLine::Pageset(ZoneIdx(0), CpuId(9));
        assert_eq!(c.access(CpuId(9), pcp), Found::DramLocal);
        assert_eq!(c.access(CpuId(0), pcp), Found::RemoteNode);
        assert_eq!(c.access(CpuId(0), MetaLine::Pageset(ZoneIdx(0), CpuId(8))), Found::DramRemote);
    }

    #[test]
    fn handoffs_are_priced_by_distance() {
        let c = cache();
        let p = prices(&[
            (Level::HandoffSameLlc, 40.0),
            (Level::HandoffOtherLlc, 90.0),
            (Level::HandoffRemote, 130.0),
            (Level::DramLocal, 80.0),
            (Level::DramRemote, 120.0),
            (Level::WriteDram, 10.0),
            (Level::WriteLlc, 40.0),
        ]);
        assert_eq!(p.handoff(c.distance(CpuId(0), CpuId(1))), 0, "SMT siblings share the line");
        assert_eq!(p.handoff(c.distance(CpuId(0), CpuId(2))), 40_000);
        assert_eq!(p.handoff(c.distance(CpuId(0), CpuId(5))), 90_000);
        assert_eq!(p.handoff(c.distance(CpuId(0), CpuId(12))), 130_000);
        // 4096 bytes at 10 GB/s = 409.6 ns from local DRAM; remote × 120 / 80.
        assert_eq!(p.page_dram, 409_600);
        assert_eq!(p.page_dram_remote, 614_400);
        assert_eq!(p.page_llc, 102_400);
        // A first line waits the full latency where the page's data is.
        assert_eq!((p.line_dram, p.line_dram_remote), (80_000, 120_000));
    }

    #[test]
    fn a_part_page_pays_one_miss_then_streams_to_the_whole_page() {
        let (first, page) = (80_000, 409_600);
        // One line (or one byte) waits one miss.
        assert_eq!(Prices::part_page(first, page, 1), first);
        assert_eq!(Prices::part_page(first, page, 64), first);
        // Each further line adds a 63rd of what the page costs beyond its first miss.
        let per_line = (page - first) / 63;
        assert_eq!(Prices::part_page(first, page, 65), first + per_line);
        assert_eq!(Prices::part_page(first, page, 128), first + per_line);
        // The 64th line reaches the whole page's price, so a full page costs the same
        // whether charged as a page or as its lines.
        assert_eq!(Prices::part_page(first, page, 4095), page);
        // Never above the page, even where a miss's latency is longer than a streamed page.
        assert_eq!(Prices::part_page(500_000, page, 64), page);
        assert_eq!(Prices::part_page(500_000, page, 4000), page);
        // It grows with the bytes.
        let costs: Vec<u64> = (1..=64).map(|l| Prices::part_page(first, page, l * 64)).collect();
        assert!(costs.windows(2).all(|w| w[0] <= w[1]), "{costs:?}");
    }

    /// One CPU on each of two nodes, caches large enough that nothing is evicted, frames
    /// 0..1000 on node 0 and 1000..2000 on node 1, each core's streamer following `streams`
    /// pages (0: no hardware prefetchers).
    fn with_prefetchers(streams: u32) -> LineCache {
        let map = CacheMap {
            cpu_node: vec![0, 1],
            cpu_llc: vec![0, 1],
            cpu_l2: vec![0, 1],
            llc_node: vec![0, 1],
            llc_lines: vec![10_000; 2],
            l2_lines: vec![10_000; 2],
            frames_per_line: 1,
            prefetch_streams: streams,
        };
        LineCache::new(map, 2000, &[(0, 1000, 0), (1000, 2000, 1)])
    }

    /// A touch of frame `pfn`'s line as the sink makes it: where the line was, and whether
    /// the core's streamer had it on its way.
    fn touch(c: &LineCache, cpu: u32, pfn: u64) -> (Found, bool) {
        let line = MetaLine::Frame(Pfn(pfn));
        if c.access_in_l2(CpuId(cpu), line) {
            (Found::L2, false)
        } else {
            c.access_beyond_l2_hw(CpuId(cpu), line)
        }
    }

    #[test]
    fn a_run_up_a_page_is_streamed_from_its_third_miss_with_each_pair_brought_along() {
        let c = with_prefetchers(4);
        for f in 0..66 {
            let want = match f {
                // The pair of the line before, brought with it from memory.
                _ if f % 2 == 1 => (Found::L2, false),
                // A page's first miss, then the step that sets the direction; frame 64 is the
                // next 4 KiB page of lines, where the streamer starts over.
                0 | 2 | 64 => (Found::DramLocal, false),
                _ => (Found::DramLocal, true),
            };
            assert_eq!(touch(&c, 0, f), want, "frame {f}");
        }
        // Streamed: 4, 6, …, 62; pairs: those of 0, 2, …, 64.
        assert_eq!(c.prefetched_by_hardware(), (30, 33));
        // Down a page the same way: 191, then 189 sets the direction, 187 on are streamed.
        let down: Vec<bool> = (128..192).rev().step_by(2).map(|f| touch(&c, 0, f).1).collect();
        assert_eq!(down.iter().filter(|&&s| !s).count(), 2);
        assert!(!down[0] && !down[1] && down[2..].iter().all(|&s| s), "{down:?}");
        // A jump breaks the run: the page starts over from the line it jumped to.
        let c = with_prefetchers(4);
        let jumps: Vec<bool> = [0, 2, 4, 10, 12, 14].iter().map(|&f| touch(&c, 0, f).1).collect();
        assert_eq!(jumps, [false, false, true, false, false, true]);
    }

    #[test]
    fn a_core_follows_only_as_many_pages_as_it_has_streams() {
        // Three pages' runs interleaved, miss by miss.
        let interleaved = |streams: u32| {
            let c = with_prefetchers(streams);
            let mut streamed = 0;
            for step in 0..8 {
                for page in 0..3 {
                    streamed += u64::from(touch(&c, 0, page * 64 + step * 2).1);
                }
            }
            streamed
        };
        // Each page's entry is taken by the next page before its run is seen.
        assert_eq!(interleaved(2), 0);
        // Followed: each page's misses from its third on (6 of 8, three pages).
        assert_eq!(interleaved(3), 18);
    }

    #[test]
    fn the_pair_comes_only_from_memory_and_only_when_no_cache_holds_it() {
        let c = with_prefetchers(4);
        // Frame 0's line from memory brings frame 1's.
        assert_eq!(touch(&c, 0, 0), (Found::DramLocal, false));
        assert_eq!(c.prefetched_by_hardware(), (0, 1));
        // A line found in a cache brings no pair: node 1's CPU takes frame 1's line over.
        assert_eq!(touch(&c, 1, 1), (Found::RemoteNode, false));
        assert_eq!(c.prefetched_by_hardware(), (0, 1));
        // CPU 0's caches forget frame 0; from memory again, it leaves the pair in node 1's
        // cache, where CPU 0 then finds it.
        c.advance_lines(CpuId(0), 20_000);
        assert_eq!(touch(&c, 0, 0), (Found::DramLocal, false));
        assert_eq!(touch(&c, 0, 1), (Found::RemoteNode, false));
        assert_eq!(c.prefetched_by_hardware(), (0, 1));
        // Without hardware prefetchers every line comes on its own and nothing is streamed.
        let c = with_prefetchers(0);
        let none: Vec<(Found, bool)> = (0..8).map(|f| touch(&c, 0, f)).collect();
        assert!(none.iter().all(|&t| t == (Found::DramLocal, false)), "{none:?}");
        assert_eq!(c.prefetched_by_hardware(), (0, 0));
    }

    #[test]
    fn a_streamed_line_costs_its_share_of_a_streamed_page_at_most_its_own_latency() {
        let p = prices(&[
            (Level::L2Hit, 3.0),
            (Level::LlcHit, 5.0),
            (Level::DramLocal, 80.0),
            (Level::DramRemote, 120.0),
            (Level::WriteDram, 4.096),
            (Level::WriteLlc, 0.4096),
        ]);
        // A page from local DRAM takes 1 µs: a 64th of it, less the L2 hit in the fixed work.
        assert_eq!(p.of_streamed(Found::DramLocal), 1_000_000 / 64 - 3_000);
        // From remote DRAM, scaled by the latencies as the page is.
        assert_eq!(p.of_streamed(Found::DramRemote), 1_500_000 / 64 - 3_000);
        // An LLC page of 10 µs would make a streamed line dearer than the hit: the hit's price.
        assert_eq!(p.of_streamed(Found::Llc), p.of_access(Found::Llc));
        assert_eq!(p.of_streamed(Found::L2), 0);
    }
}

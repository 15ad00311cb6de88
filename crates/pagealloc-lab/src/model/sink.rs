//! The model's event sink: it keeps the zone locks' clocks and prices every metadata line the
//! allocator touches, so every hold of a zone lock costs what its line transfers cost on the
//! machine, every CPU that finds a lock held waits for it (first come, first served), and a
//! lock changing hands costs the hand-off at the distance between the two holders. It also
//! counts how often each frame is handed out (seed 000's "most used page frames").
//!
//! The model drives the allocator from one thread; the atomics are there only because an
//! `EventSink` must be `Sync`, and are used with `Relaxed` loads and stores.

use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};

use pagealloc::{CpuId, EventSink, MetaLine, Pfn, TraceEvent, ZoneIdx};

use super::cost::CostPs;
use super::lines::{CacheMap, Found, LineCache, Prices};
use super::memory::NodeMemory;
use super::prefetch::Prefetches;

/// No CPU has held the lock yet.
const NOBODY: u32 = u32::MAX;

/// The most misses in flight the model keeps per call: a machine's
/// [`Level::MissSlots`](crate::machine::hierarchy::Level::MissSlots) above it is charged as
/// this many.
pub const MAX_MISS_SLOTS: usize = 64;

/// One zone lock in virtual time.
#[derive(Debug)]
struct LockClock {
    /// When the lock is next free (ps).
    free_at: AtomicU64,
    /// The CPU that held it last.
    last_holder: AtomicU32,
    /// The chunk boundaries of batched bulk frees still ahead of `free_at`, oldest first
    /// (empty unless a policy batches them).
    yields: Mutex<Vec<Yield>>,
    /// `yields.len()`, readable without the lock.
    nr_yields: AtomicU32,
}

impl LockClock {
    fn new() -> LockClock {
        LockClock {
            free_at: AtomicU64::new(0),
            last_holder: AtomicU32::new(NOBODY),
            yields: Mutex::new(Vec::new()),
            nr_yields: AtomicU32::new(0),
        }
    }
}

/// The most chunk boundaries a lock remembers; older ones are forgotten (a CPU whose clock is
/// that far behind waits for the lock's end as without them).
const MAX_YIELDS: usize = 4096;

/// A chunk boundary of a batched bulk free: its holder released the lock at `at` and asked for
/// it again at once. The lock is a fair (queued) spinlock, so a CPU that asked before `at`
/// gets it there first. The model runs CPUs one at a time, so the holder's later chunks were
/// already placed when such a CPU is run: it is let in at `served` (after those let in before
/// it), and everything the holder did afterwards moves later by its hold (the holder's clock
/// pays it as a debt at its next call).
#[derive(Clone, Copy, Debug)]
struct Yield {
    /// When the holder asked for the lock again (ps): a request before it goes first.
    at: u64,
    /// When the CPUs let in here so far are done (ps).
    served: u64,
    /// The CPU that yielded.
    breaker: u32,
    /// Whether that CPU's clock pays the delay (a workload call; ticks are not charged).
    charged: bool,
}

/// A hold the running call got at a chunk boundary of another CPU's batched free.
#[derive(Clone, Copy, Debug)]
struct LetIn {
    yield_index: usize,
    start: u64,
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
    /// 1 while the running call holds a zone lock: what it touches then lengthens the hold.
    holding: AtomicU32,
    /// One per zone, in the allocator's zone order; set by [`ModelSink::attach`] once the
    /// allocator has numbered its zones. Locks taken before that (while the allocator puts
    /// its memory on the free lists) cost nothing: time starts with the workload.
    locks: OnceLock<Vec<LockClock>>,
    /// Where every metadata line is; set by [`ModelSink::attach`].
    lines: OnceLock<LineCache>,
    /// 1 while calls are priced: from [`ModelSink::attach`] until
    /// [`ModelSink::stop_pricing`]. Every pricing hook returns at once while it is 0.
    pricing: AtomicU32,
    /// The machine's caches, for `lines`.
    map: CacheMap,
    cost: CostPs,
    prices: Prices,
    /// Lines prefetched during the running call ([`line_key`]), with when each arrives (ps),
    /// in the order they were prefetched: callers touch them in about that order, so the
    /// search from the front ends at once (a `Vec` with `swap_remove` made every bulk free
    /// quadratic).
    prefetched: Prefetches,
    /// The latest arrival of any line prefetched in this call: past it, every prefetched
    /// line costs nothing more, so the list can be forgotten.
    prefetch_last_ready: AtomicU64,
    /// A 256-bit filter of the lines prefetched in this call (one bit per [`filter_bit`]):
    /// a line whose bit is clear was not prefetched, so its touch need not search the list.
    /// Most touches while prefetches are in flight are of other lines.
    prefetch_filter: [AtomicU64; 4],
    /// When each of the running call's miss slots (the core's fill buffers) is free again
    /// (ps): the transfers of lines it writes or prefetches run in them, `prices.miss_slots`
    /// at a time, while the CPU goes on; a line it reads needs one too, and waits for it.
    slots: [AtomicU64; MAX_MISS_SLOTS],
    /// How many of `slots` the machine has (0: it gives no figure, and nothing overlaps).
    nr_slots: usize,
    /// Per node with memory or CPUs, its memory's calendar ([`NodeMemory`]), on a machine
    /// that gives `node_rw_gbps`; empty otherwise. Set by [`ModelSink::attach`].
    memory: OnceLock<Box<[NodeMemory]>>,
    /// The latest time in `slots`: from then on every slot is free.
    slots_busy_until: AtomicU64,
    /// When the last line the running call wrote without reading has arrived (ps): x86 makes
    /// stores visible in order, so the store that releases a lock is seen only after them, and
    /// a locked instruction (taking a lock) waits for them.
    stores_ready: AtomicU64,
    /// Lock hand-offs by distance: same core, same LLC, other LLC, other node.
    handoffs: [AtomicU64; 4],
    /// Zone-lock hold time by what it was spent on, [`HeldPart`] order (ps).
    held_parts: [AtomicU64; 5],
    /// Metadata lines touched while a zone lock is held, by where each was found ([`Found`]
    /// order): how many of a hold's lines cost anything. Counted per hold from the line
    /// model's own counts (`held_mark`), so the touch's hot path does no extra work.
    held_found: [AtomicU64; 7],
    /// The line model's access counts when the running hold began.
    held_mark: [AtomicU64; 7],
    /// Allocations per frame number, when asked for (unset otherwise).
    pfn_allocs: OnceLock<Vec<AtomicU32>>,
    /// Who hears the records, if anyone.
    observer: OnceLock<ObserverSlot>,
    /// 1 while the running call is a workload call, whose CPU's clock pays what it is
    /// delayed by CPUs let in at its chunk boundaries; 0 for ticks.
    charged: AtomicU32,
    /// The running call's hold, when it was let in at a chunk boundary.
    let_in: Mutex<Option<LetIn>>,
    /// 1 while `let_in` is set, readable without its lock.
    nr_let_in: AtomicU32,
    /// What each CPU's clock still owes for CPUs let in at its chunk boundaries (ps).
    debts: Mutex<Vec<u64>>,
    /// 1 once any debt was recorded (most runs never do).
    any_debt: AtomicU32,
}

/// What a zone-lock hold's time goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeldPart {
    /// Bringing the lock over from its last holder.
    Handoff,
    /// The cost profile's fixed work: the lock's base and the list operations.
    Fixed,
    /// Frame metadata lines (`struct page`s) touched under the lock.
    FrameLines,
    /// The other lines touched under the lock: free areas, pagesets.
    OtherLines,
    /// After the hold's work: its stores still arriving, which the releasing store must wait
    /// for to be seen (lines written without being read, whose transfers overlapped the work).
    StoreDrain,
}

/// Bump a counter the model's one thread owns.
#[inline]
fn bump(a: &AtomicU64, by: u64) {
    a.store(a.load(Relaxed) + by, Relaxed);
}

impl ModelSink {
    /// A sink for a machine whose caches are `map`, charging `cost` for the fixed work and
    /// `prices` for the lines.
    pub fn new(map: CacheMap, cost: CostPs, prices: Prices) -> ModelSink {
        let nr_slots = (prices.miss_slots as usize).min(MAX_MISS_SLOTS);
        ModelSink {
            now: AtomicU64::new(0),
            waited: AtomicU64::new(0),
            held: AtomicU64::new(0),
            holding: AtomicU32::new(0),
            locks: OnceLock::new(),
            lines: OnceLock::new(),
            pricing: AtomicU32::new(0),
            map,
            cost,
            prices,
            prefetched: Prefetches::default(),
            prefetch_last_ready: AtomicU64::new(0),
            prefetch_filter: Default::default(),
            slots: std::array::from_fn(|_| AtomicU64::new(0)),
            nr_slots,
            memory: OnceLock::new(),
            slots_busy_until: AtomicU64::new(0),
            stores_ready: AtomicU64::new(0),
            handoffs: Default::default(),
            held_parts: Default::default(),
            held_found: Default::default(),
            held_mark: Default::default(),
            pfn_allocs: OnceLock::new(),
            observer: OnceLock::new(),
            charged: AtomicU32::new(1),
            let_in: Mutex::new(None),
            nr_let_in: AtomicU32::new(0),
            debts: Mutex::new(Vec::new()),
            any_debt: AtomicU32::new(0),
        }
    }

    /// Send every record from now on to `f`, with the virtual time of the call that made it.
    /// Set once, after the allocator is built (its boot-time frees are not workload events).
    pub fn observe(&self, f: Observer) {
        assert!(self.observer.set(ObserverSlot(Mutex::new(f))).is_ok(), "one observer per sink");
    }

    /// Learn the zones, as (first frame, end frame, node) in zone-index order, and the frames
    /// `0..nr_frames` whose lines to track; with `count_frames`, start counting allocations
    /// of each frame. Called once, right after the allocator is built and before anything is
    /// allocated.
    pub fn attach(&self, zones: &[(u64, u64, u32)], nr_frames: u64, count_frames: bool) {
        let locks = zones.iter().map(|_| LockClock::new()).collect();
        assert!(self.locks.set(locks).is_ok(), "ModelSink::attach is called once");
        let lines = LineCache::new(self.map.clone(), nr_frames, zones);
        assert!(self.lines.set(lines).is_ok(), "ModelSink::attach is called once");
        let nodes = zones.iter().map(|z| z.2).chain(self.map.cpu_node.iter().copied()).max();
        let nodes = match (self.prices.node_page, nodes) {
            (0, _) | (_, None) => 0,
            (_, Some(n)) => n as usize + 1,
        };
        let memory = (0..nodes).map(|_| NodeMemory::default()).collect();
        assert!(self.memory.set(memory).is_ok(), "ModelSink::attach is called once");
        if count_frames {
            let v = (0..nr_frames).map(|_| AtomicU32::new(0)).collect();
            assert!(self.pfn_allocs.set(v).is_ok(), "ModelSink::attach is called once");
        }
        self.pricing.store(1, Relaxed);
    }

    /// The run's figures have been read: price no more calls. The model calls this before
    /// its teardown frees every block the workload still holds (for thpfioscale, a page
    /// cache as large as memory: a quarter of a run's instructions went to pricing frees
    /// whose times and lines nobody reads). The allocator's decisions never depend on the
    /// sink, so the frees do the same as before. Records still reach the observer, with the
    /// times they had: while an observer listens (`run --trace`), calls stay priced.
    pub fn stop_pricing(&self) {
        if self.observer.get().is_none() {
            self.pricing.store(0, Relaxed);
        }
    }

    /// The line model, while calls are priced.
    #[inline(always)]
    fn priced_lines(&self) -> Option<&LineCache> {
        if self.pricing.load(Relaxed) == 0 {
            return None;
        }
        self.lines.get()
    }

    /// Zone `zone`'s lock clock, while calls are priced.
    #[inline(always)]
    fn lock(&self, zone: ZoneIdx) -> Option<&LockClock> {
        if self.pricing.load(Relaxed) == 0 {
            return None;
        }
        self.locks.get().map(|l| &l[zone.index()])
    }

    /// Where the metadata lines are, once attached.
    pub fn lines(&self) -> Option<&LineCache> {
        self.lines.get()
    }

    /// The prices of the machine's hierarchy.
    pub fn prices(&self) -> &Prices {
        &self.prices
    }

    /// Start a workload's allocator call on a CPU whose clock reads `now`.
    #[inline]
    pub fn begin(&self, now: u64) {
        self.charged.store(1, Relaxed);
        self.start(now);
    }

    /// Start a tick's allocator call at `now`: no CPU's clock pays for it.
    pub fn begin_tick(&self, now: u64) {
        self.charged.store(0, Relaxed);
        self.start(now);
    }

    /// What `cpu`'s clock owes for CPUs let in at the chunk boundaries of its batched frees
    /// since the last call (ps), now paid.
    #[inline]
    pub fn take_debt(&self, cpu: u32) -> u64 {
        if self.any_debt.load(Relaxed) == 0 {
            return 0;
        }
        let mut d = self.debts.lock().expect("no panics while held");
        d.get_mut(cpu as usize).map_or(0, std::mem::take)
    }

    /// Reset the per-call clocks.
    #[inline]
    fn start(&self, now: u64) {
        self.now.store(now, Relaxed);
        self.waited.store(0, Relaxed);
        self.held.store(0, Relaxed);
        if self.prefetched.len() != 0 {
            // A prefetch helps only the call that issued it.
            self.forget_prefetches();
        }
        if self.slots_busy_until.load(Relaxed) != 0 {
            // So do the transfers in flight: the model keeps no core's state between calls.
            for slot in &self.slots[..self.nr_slots] {
                slot.store(0, Relaxed);
            }
            self.slots_busy_until.store(0, Relaxed);
            self.stores_ready.store(0, Relaxed);
        }
    }

    /// Empty the list of prefetched lines and its filter.
    fn forget_prefetches(&self) {
        self.prefetched.clear();
        self.prefetch_last_ready.store(0, Relaxed);
        for w in &self.prefetch_filter {
            w.store(0, Relaxed);
        }
    }

    /// What a touch of `line`, found in the private cache, still waits for a prefetch of it
    /// in this call (ps): the rest of its transfer, or 0 if it has arrived or was not
    /// prefetched.
    #[inline]
    fn prefetch_wait(&self, line: MetaLine) -> u64 {
        let now = self.now.load(Relaxed);
        if now >= self.prefetch_last_ready.load(Relaxed) {
            // Every prefetched line has arrived: none can add anything from now on.
            self.forget_prefetches();
            return 0;
        }
        let (word, bit) = filter_bit(line);
        if self.prefetch_filter[word].load(Relaxed) & bit == 0 {
            return 0;
        }
        self.prefetched.take(line_key(line)).map_or(0, |ready| ready.saturating_sub(now))
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

    /// Whether a line found in the private cache can still cost anything: a prefetch of it
    /// may be in flight, or the machine prices an L2 hit beyond the fixed work. Otherwise a
    /// hit adds nothing, and the touch skips `charge_touch`.
    #[inline(always)]
    fn l2_hits_cost(&self) -> bool {
        self.prefetched.len() != 0 || self.prices.of_access(Found::L2) != 0
    }

    /// Charge `ps` of work to the running call (and to the hold, when it holds a lock).
    #[inline]
    fn charge(&self, ps: u64) {
        bump(&self.now, ps);
        if self.holding.load(Relaxed) != 0 {
            bump(&self.held, ps);
        }
    }

    /// A touch of `line` that did not find it in `cpu`'s L2: classify and charge it.
    #[inline(never)]
    fn touch_beyond_l2(&self, lines: &LineCache, cpu: CpuId, line: MetaLine) {
        match lines.access_beyond_l2_hw(cpu, line) {
            (found, false) => self.charge_touch(line, found),
            // Its share of the stream's transfer, with no wait for a miss slot: the
            // streamer's requests queue at the L2, not in the core's fill buffers.
            (found, true) => self.charge_line(line, self.prices.of_streamed(found)),
        }
    }

    /// Charge a touch of `line`, found at `found`, plus what it still waits for a prefetch of
    /// it in this call; to the hold as well when a zone lock is held.
    #[inline(never)]
    fn charge_touch(&self, line: MetaLine, found: Found) {
        let mut ps = self.prices.of_access(found);
        if self.prefetched.len() != 0 && found == Found::L2 {
            ps += self.prefetch_wait(line);
        }
        if found != Found::L2 && ps != 0 {
            ps += self.slot_for_read(ps);
        }
        self.charge_line(line, ps);
    }

    /// Charge `ps` for a touch of `line`: to the call, and to the hold's frame or other
    /// lines when a zone lock is held.
    #[inline]
    fn charge_line(&self, line: MetaLine, ps: u64) {
        if self.holding.load(Relaxed) != 0 {
            let part = match line {
                MetaLine::Frame(_) => HeldPart::FrameLines,
                _ => HeldPart::OtherLines,
            };
            bump(&self.held_parts[part as usize], ps);
        }
        self.charge(ps);
    }

    /// The earliest miss slot free at or after `now`: (its index, when).
    #[inline]
    fn free_slot(&self, now: u64) -> (usize, u64) {
        let mut best = (0, u64::MAX);
        for (i, slot) in self.slots[..self.nr_slots].iter().enumerate() {
            let free = slot.load(Relaxed);
            if free <= now {
                return (i, now);
            }
            if free < best.1 {
                best = (i, free);
            }
        }
        best
    }

    /// Run a transfer of `ps` asked for now in the first slot free: when its line arrives.
    /// The CPU does not wait for it (a store or a prefetch).
    #[inline]
    fn start_transfer(&self, ps: u64) -> u64 {
        let now = self.now.load(Relaxed);
        if self.nr_slots == 0 || ps == 0 {
            return now + ps;
        }
        let (i, start) = self.free_slot(now);
        let ready = start + ps;
        self.slots[i].store(ready, Relaxed);
        let busy = &self.slots_busy_until;
        busy.store(busy.load(Relaxed).max(ready), Relaxed);
        ready
    }

    /// How long a read that misses, its transfer taking `ps`, first waits for a miss slot
    /// (0 unless every slot is busy with the call's stores and prefetches); the slot is busy
    /// until the read's line arrives.
    #[inline]
    fn slot_for_read(&self, ps: u64) -> u64 {
        let now = self.now.load(Relaxed);
        if now >= self.slots_busy_until.load(Relaxed) {
            // No transfer in flight: the read's slot is free again when the CPU goes on.
            return 0;
        }
        let (i, start) = self.free_slot(now);
        self.slots[i].store(start + ps, Relaxed);
        start - now
    }

    /// Remember that `line` arrives at `ready`: a read of it later in this call waits for
    /// the rest of its transfer.
    fn in_flight(&self, line: MetaLine, ready: u64) {
        self.prefetched.push(line_key(line), ready);
        let last = &self.prefetch_last_ready;
        last.store(last.load(Relaxed).max(ready), Relaxed);
        let (word, bit) = filter_bit(line);
        let w = &self.prefetch_filter[word];
        w.store(w.load(Relaxed) | bit, Relaxed);
    }

    /// A write of `line`, not read first, that did not find it in `cpu`'s L2: the line comes
    /// in a miss slot while the CPU goes on (the store waits in the store buffer).
    #[inline(never)]
    fn store_beyond_l2(&self, lines: &LineCache, cpu: CpuId, line: MetaLine) {
        let ready = match lines.access_beyond_l2_hw(cpu, line) {
            (found, false) => self.start_transfer(self.prices.of_access(found)),
            (found, true) => self.now.load(Relaxed) + self.prices.of_streamed(found),
        };
        if ready > self.now.load(Relaxed) {
            let sr = &self.stores_ready;
            sr.store(sr.load(Relaxed).max(ready), Relaxed);
            self.in_flight(line, ready);
        }
    }

    /// Before a locked instruction (taking a zone lock): the CPU waits until its stores are
    /// done, as x86's locked instructions drain the store buffer.
    #[inline]
    fn drain_stores(&self) {
        let ready = self.stores_ready.load(Relaxed);
        if ready > self.now.load(Relaxed) {
            self.charge(ready - self.now.load(Relaxed));
        }
    }

    /// Metadata accesses so far by where they found their line, and lock hand-offs by
    /// distance (same core, same LLC, other LLC, other node).
    pub fn traffic(&self) -> ([u64; 7], [u64; 4]) {
        let found = self.lines.get().map_or([0; 7], LineCache::found);
        (found, std::array::from_fn(|i| self.handoffs[i].load(Relaxed)))
    }

    /// Zone-lock hold time so far by what it was spent on ([`HeldPart`] order, ps).
    pub fn held_parts(&self) -> [u64; 5] {
        std::array::from_fn(|i| self.held_parts[i].load(Relaxed))
    }

    /// Metadata lines touched under zone locks so far, by where each was found ([`Found`]
    /// order).
    pub fn held_lines(&self) -> [u64; 7] {
        std::array::from_fn(|i| self.held_found[i].load(Relaxed))
    }

    /// `bytes` of cold pages of the block at `pfn` written from time `now` (ps): when its
    /// home node's memory has taken them ([`NodeMemory::book`]; each byte read for ownership
    /// and written back, [`Prices::node_page`] a whole page); `now` on a machine that gives
    /// no `node_rw_gbps`. The writing CPU is done no sooner than that.
    pub fn memory_write(&self, pfn: Pfn, now: u64, bytes: u64) -> u64 {
        // No shared limit (an empty calendar): the frame's node need not be looked up.
        let Some(memory) = self.memory.get().filter(|m| !m.is_empty()) else { return now };
        let Some(lines) = self.lines.get() else { return now };
        match memory.get(lines.home_of_frame(pfn.0) as usize) {
            Some(node) => node.book(now, bytes * self.prices.node_page / 4096),
            None => now,
        }
    }

    /// Frame lines the cores' streamers had on their way, and pair lines the spatial
    /// prefetcher brought, so far ((0, 0) without hardware prefetchers).
    pub fn prefetched_by_hardware(&self) -> (u64, u64) {
        self.lines.get().map_or((0, 0), LineCache::prefetched_by_hardware)
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
    /// for bringing its line over from the last holder, at the distance between the two.
    #[inline]
    fn zone_lock_taken(&self, cpu: CpuId, zone: ZoneIdx) {
        let (Some(lock), Some(lines)) = (self.lock(zone), self.priced_lines()) else { return };
        self.drain_stores();
        let now = self.now.load(Relaxed);
        if lock.nr_yields.load(Relaxed) != 0 && self.take_at_yield(lock, lines, cpu, now) {
            return;
        }
        let start = now.max(lock.free_at.load(Relaxed));
        bump(&self.waited, start - now);
        let last = lock.last_holder.swap(cpu.0, Relaxed);
        let handoff = if last == NOBODY {
            0
        } else {
            let d = lines.distance(CpuId(last), cpu);
            bump(&self.handoffs[d as usize], 1);
            self.prices.handoff(d)
        };
        self.now.store(start + handoff, Relaxed);
        bump(&self.held, handoff);
        bump(&self.held_parts[HeldPart::Handoff as usize], handoff);
        self.holding.store(1, Relaxed);
        for (mark, n) in self.held_mark.iter().zip(lines.found()) {
            mark.store(n, Relaxed);
        }
    }

    /// The hold's fixed work and list-operation instructions (its lines were charged as they
    /// were touched). The lock is free when it ends.
    #[inline]
    fn zone_lock_released(&self, _cpu: CpuId, zone: ZoneIdx, list_ops: u32) {
        let (Some(lock), Some(lines)) = (self.lock(zone), self.priced_lines()) else { return };
        // Every line access since the hold began was one of its touches (or prefetches):
        // the model runs one call at a time.
        for ((held, mark), n) in self.held_found.iter().zip(&self.held_mark).zip(lines.found()) {
            bump(held, n - mark.load(Relaxed));
        }
        let fixed = self.cost.lock_base + u64::from(list_ops) * self.cost.list_op;
        self.charge(fixed);
        bump(&self.held_parts[HeldPart::Fixed as usize], fixed);
        self.holding.store(0, Relaxed);
        // The release is a store: others see the lock free once the hold's stores are done.
        // The CPU itself goes on.
        let now = self.now.load(Relaxed);
        let end = now.max(self.stores_ready.load(Relaxed));
        bump(&self.held, end - now);
        bump(&self.held_parts[HeldPart::StoreDrain as usize], end - now);
        let let_in = if self.nr_let_in.swap(0, Relaxed) == 0 {
            None
        } else {
            self.let_in.lock().expect("no panics while held").take()
        };
        match let_in {
            Some(l) => self.release_at_yield(lock, l, end),
            None => lock.free_at.store(end, Relaxed),
        }
    }

    /// The lock was just released between two chunks of `cpu`'s batched free: remember the
    /// boundary, so a CPU that asked for the lock before it goes first.
    fn zone_lock_yield(&self, cpu: CpuId, zone: ZoneIdx) {
        let Some(lock) = self.lock(zone) else { return };
        let at = lock.free_at.load(Relaxed);
        let mut ys = lock.yields.lock().expect("no panics while held");
        if ys.len() == MAX_YIELDS {
            ys.remove(0);
        }
        let charged = self.charged.load(Relaxed) != 0;
        ys.push(Yield { at, served: at, breaker: cpu.0, charged });
        lock.nr_yields.store(ys.len() as u32, Relaxed);
    }

    /// The instructions of the pre-5.18 bulk free's staging pass (its lines are touches).
    #[inline]
    fn pcp_list_work(&self, _cpu: CpuId, ops: u32) {
        if self.pricing.load(Relaxed) != 0 {
            bump(&self.now, u64::from(ops) * self.cost.list_op);
        }
    }

    /// Price the access by where the line is; a line prefetched in this call costs only the
    /// rest of its transfer, if it has not arrived yet.
    #[inline]
    fn touch(&self, cpu: CpuId, line: MetaLine) {
        let Some(lines) = self.priced_lines() else { return };
        if !lines.access_in_l2(cpu, line) {
            self.touch_beyond_l2(lines, cpu, line);
        } else if self.l2_hits_cost() {
            self.charge_touch(line, Found::L2);
        }
        // Otherwise (most touches): a line in the private cache and no prefetch in flight
        // costs nothing beyond the fixed work, and adding nothing to the clocks is all the
        // rest would do. Both other paths are calls, so this one needs no stack frame.
    }

    /// [`touch`](Self::touch) of each read and [`store`](Self::store) of each write, with the
    /// CPU's place in the line model looked up once and its private-cache hits counted once.
    fn touch_lines(&self, cpu: CpuId, reads: &[MetaLine], writes: &[MetaLine]) {
        let Some(cache) = self.priced_lines() else { return };
        let here = cache.here(cpu);
        let mut hits = 0;
        // Two plain loops: one loop over both slices, with a flag per line, ran 7 % more of
        // a page-fault1 run's instructions (callgrind, 3 343 M against 3 129 M).
        for line in reads {
            if !cache.access_in_l2_from(here, line) {
                self.touch_beyond_l2(cache, cpu, *line);
            } else {
                hits += 1;
                if self.l2_hits_cost() {
                    self.charge_touch(*line, Found::L2);
                }
            }
        }
        let overlapped = self.nr_slots != 0;
        for line in writes {
            if !cache.access_in_l2_from(here, line) {
                if overlapped {
                    self.store_beyond_l2(cache, cpu, *line);
                } else {
                    self.touch_beyond_l2(cache, cpu, *line);
                }
            } else {
                hits += 1;
                if !overlapped && self.l2_hits_cost() {
                    self.charge_touch(*line, Found::L2);
                }
            }
        }
        // Nothing read the counts in between: only lock events do.
        cache.count_l2_hits(hits);
    }

    /// A write of a line not read first: on a machine that gives its misses in flight, the
    /// CPU does not wait for the line (nor for a hit, which the store buffer absorbs; a line
    /// already on its way, prefetched or written earlier in the call, adds nothing more);
    /// otherwise the same as [`touch`](Self::touch).
    #[inline]
    fn store(&self, cpu: CpuId, line: MetaLine) {
        if self.nr_slots == 0 {
            return self.touch(cpu, line);
        }
        let Some(lines) = self.priced_lines() else { return };
        if !lines.access_in_l2(cpu, line) {
            self.store_beyond_l2(lines, cpu, line);
        }
    }

    /// Start the transfer now; the CPU does not wait for it.
    #[inline]
    fn prefetch(&self, cpu: CpuId, line: MetaLine) {
        let Some(lines) = self.priced_lines() else { return };
        let found = lines.access(cpu, line);
        let ready = self.start_transfer(self.prices.of_access(found));
        self.in_flight(line, ready);
    }
}

impl ModelSink {
    /// Take the lock at a chunk boundary of another CPU's batched free, if this request came
    /// before one that is still ahead (true: the hold has begun). A request once the lock is
    /// free forgets the boundaries, unless it is the yielding CPU's own next chunk.
    fn take_at_yield(&self, lock: &LockClock, lines: &LineCache, cpu: CpuId, now: u64) -> bool {
        let mut ys = lock.yields.lock().expect("no panics while held");
        if now >= lock.free_at.load(Relaxed) {
            if ys.last().is_none_or(|y| y.breaker != cpu.0) {
                ys.clear();
                lock.nr_yields.store(0, Relaxed);
            }
            return false;
        }
        let Some(i) = ys.iter().position(|y| y.at >= now && y.breaker != cpu.0) else {
            return false;
        };
        let y = ys[i];
        drop(ys);
        bump(&self.waited, y.served - now);
        let d = lines.distance(CpuId(y.breaker), cpu);
        bump(&self.handoffs[d as usize], 1);
        let handoff = self.prices.handoff(d);
        self.now.store(y.served + handoff, Relaxed);
        bump(&self.held, handoff);
        bump(&self.held_parts[HeldPart::Handoff as usize], handoff);
        self.holding.store(1, Relaxed);
        for (mark, n) in self.held_mark.iter().zip(lines.found()) {
            mark.store(n, Relaxed);
        }
        *self.let_in.lock().expect("no panics while held") =
            Some(LetIn { yield_index: i, start: y.served });
        self.nr_let_in.store(1, Relaxed);
        true
    }

    /// The end of a hold let in at a chunk boundary, the lock free from `end`: what the
    /// yielding CPU did after it, and the lock's end, move later by the hold, and that CPU's
    /// clock owes it.
    fn release_at_yield(&self, lock: &LockClock, l: LetIn, end: u64) {
        let shift = end.saturating_sub(l.start);
        let mut ys = lock.yields.lock().expect("no panics while held");
        let Some(y) = ys.get_mut(l.yield_index) else { return };
        y.served = end;
        let (breaker, charged) = (y.breaker, y.charged);
        for later in ys.iter_mut().skip(l.yield_index + 1) {
            later.at += shift;
            later.served += shift;
        }
        drop(ys);
        bump(&lock.free_at, shift);
        if charged {
            let mut d = self.debts.lock().expect("no panics while held");
            if d.len() <= breaker as usize {
                d.resize(breaker as usize + 1, 0);
            }
            d[breaker as usize] += shift;
            self.any_debt.store(1, Relaxed);
        }
    }
}

/// `line` as one number, different for every line: the kind in the low two bits (never 3, so
/// never `u64::MAX`), the frame, or the zone with the order or CPU, above.
#[inline]
fn line_key(line: MetaLine) -> u64 {
    match line {
        MetaLine::Frame(pfn) => pfn.0 << 2,
        MetaLine::FreeArea(zone, order) => {
            (zone.index() as u64) << 10 | u64::from(order.0) << 2 | 1
        }
        MetaLine::Pageset(zone, cpu) => (zone.index() as u64) << 34 | u64::from(cpu.0) << 2 | 2,
    }
}

/// `line`'s bit in the prefetch filter: (word, mask), from a multiplicative hash of the line.
#[inline]
fn filter_bit(line: MetaLine) -> (usize, u64) {
    let h = line_key(line).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56;
    ((h >> 6) as usize, 1 << (h & 63))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::hierarchy::{Hierarchy, Level, Sourced};
    use pagealloc::Pfn;
    use pagealloc_testkit::rng::Rng;

    fn cost() -> CostPs {
        CostPs { lock_base: 100, list_op: 10, ..CostPs::default() }
    }

    /// Every latency 10 ns except those named; hand-offs 5 / 7 / 50 ns; no misses in flight
    /// (nothing overlaps) unless [`Level::MissSlots`] is named, no shared memory bandwidth
    /// unless [`Level::NodeRw`] is.
    fn prices(over: &[(Level, f64)]) -> Prices {
        let mut h = Hierarchy::default();
        for l in Level::ALL.into_iter().filter(|&l| !matches!(l, Level::MissSlots | Level::NodeRw))
        {
            let v = match l {
                Level::HandoffSameLlc => 5.0,
                Level::HandoffOtherLlc => 7.0,
                Level::HandoffRemote => 50.0,
                _ => 10.0,
            };
            h.set(l, Sourced::new(v, "test"));
        }
        for &(l, v) in over {
            h.set(l, Sourced::new(v, "test"));
        }
        Prices::of(&h)
    }

    /// CPUs 0 and 1 on node 0 (one LLC, one L2 each), CPU 2 on node 1; frames 0..100 on node
    /// 0 (zone 0), 100..200 on node 1 (zone 1).
    fn sink(p: Prices) -> ModelSink {
        sink_with_prefetchers(p, 0)
    }

    /// [`sink`], each core's streamer following `streams` pages.
    fn sink_with_prefetchers(p: Prices, streams: u32) -> ModelSink {
        let map = CacheMap {
            cpu_node: vec![0, 0, 1],
            cpu_llc: vec![0, 0, 1],
            cpu_l2: vec![0, 1, 2],
            llc_node: vec![0, 1],
            llc_lines: vec![1000, 1000],
            l2_lines: vec![100; 3],
            frames_per_line: 1,
            prefetch_streams: streams,
        };
        let s = ModelSink::new(map, cost(), p);
        s.attach(&[(0, 100, 0), (100, 200, 1)], 200, true);
        s
    }

    /// CPU 0 frees in two chunks with a yield between (hold 1 000..1 100, then its second).
    fn two_chunks(s: &ModelSink, tick: bool) -> CallTime {
        if tick {
            s.begin_tick(1_000);
        } else {
            s.begin(1_000);
        }
        s.zone_lock_taken(CpuId(0), ZoneIdx(0));
        s.zone_lock_released(CpuId(0), ZoneIdx(0), 0);
        s.zone_lock_yield(CpuId(0), ZoneIdx(0));
        s.zone_lock_taken(CpuId(0), ZoneIdx(0));
        s.zone_lock_released(CpuId(0), ZoneIdx(0), 0);
        s.end()
    }

    #[test]
    fn a_cpu_that_asked_before_a_chunk_boundary_goes_first() {
        let s = sink(prices(&[]));
        let first = two_chunks(&s, false);
        // CPU 1 asked at 1 050, during the first chunk: it gets the lock at the boundary.
        s.begin(1_050);
        s.zone_lock_taken(CpuId(1), ZoneIdx(0));
        s.zone_lock_released(CpuId(1), ZoneIdx(0), 0);
        assert_eq!(s.end(), CallTime { now: 1_100 + 5_000 + 100, waited: 50, held: 5_100 });
        // CPU 0's second chunk moved later by that hold; its clock pays it once.
        assert_eq!(s.take_debt(0), 5_100);
        assert_eq!(s.take_debt(0), 0);
        // A request after the boundary waits for the moved end of the free.
        s.begin(1_200);
        s.zone_lock_taken(CpuId(1), ZoneIdx(0));
        s.zone_lock_released(CpuId(1), ZoneIdx(0), 0);
        assert_eq!(s.end().waited, first.now + 5_100 - 1_200);
    }

    /// One random allocator call on `s`: a CPU, maybe a zone lock held, maybe a few
    /// prefetches, then runs of up to four lines read and up to two written (frames, free
    /// areas, pagesets), each run given to `touch_lines` whole when `batched`, else line by
    /// line to `touch` and `store`.
    fn random_call(s: &ModelSink, rng: &mut Rng, batched: bool) {
        let cpu = CpuId(rng.below(3) as u32);
        let zone = ZoneIdx(rng.below(2) as u16);
        let line = |rng: &mut Rng| match rng.below(8) {
            0 => MetaLine::FreeArea(zone, pagealloc::Order(rng.below(11) as u8)),
            1 => MetaLine::Pageset(zone, CpuId(rng.below(3) as u32)),
            // Mostly a working set that stays in the L2s, sometimes anywhere.
            2 => MetaLine::Frame(Pfn(rng.below(200))),
            _ => MetaLine::Frame(Pfn(rng.below(40))),
        };
        s.begin(rng.below(1_000_000_000));
        let locked = rng.below(2) == 0;
        if locked {
            s.zone_lock_taken(cpu, zone);
        }
        for _ in 0..rng.below(3) {
            s.prefetch(cpu, line(rng));
        }
        for _ in 0..rng.below(6) {
            let reads: Vec<MetaLine> = (0..=rng.below(4)).map(|_| line(rng)).collect();
            let writes: Vec<MetaLine> = (0..rng.below(3)).map(|_| line(rng)).collect();
            if batched {
                s.touch_lines(cpu, &reads, &writes);
            } else {
                for &l in &reads {
                    s.touch(cpu, l);
                }
                for &l in &writes {
                    s.store(cpu, l);
                }
            }
        }
        if locked {
            s.zone_lock_released(cpu, zone, rng.below(4) as u32);
        }
    }

    #[test]
    fn a_run_of_lines_costs_what_its_lines_touched_one_by_one_cost() {
        // Two L2 latencies (every other level is priced beyond it); hits are charged while a
        // prefetch is in flight, and charging one can forget the prefetches mid-run. With and
        // without misses in flight (stores that overlap or cost what reads cost).
        for (l2_hit, slots) in [(2.0, 0.0), (10.0, 0.0), (2.0, 2.0), (10.0, 10.0)] {
            let mut over = vec![(Level::DramLocal, 80.0), (Level::L2Hit, l2_hit)];
            if slots > 0.0 {
                over.push((Level::MissSlots, slots));
            }
            let p = prices(&over);
            let (one, batched) = (sink(p), sink(p));
            let (mut r1, mut r2) = (Rng::new(3), Rng::new(3));
            for call in 0..20_000 {
                random_call(&one, &mut r1, false);
                random_call(&batched, &mut r2, true);
                assert_eq!(one.end(), batched.end(), "call {call}");
                assert_eq!(one.traffic(), batched.traffic(), "call {call}");
                assert_eq!(one.held_parts(), batched.held_parts(), "call {call}");
                assert_eq!(one.held_lines(), batched.held_lines(), "call {call}");
            }
            let found = batched.traffic().0;
            assert!(found[Found::L2 as usize] > 10_000, "{found:?}: hits and misses both");
            assert!(found[Found::DramLocal as usize] + found[Found::DramRemote as usize] > 100);
        }
    }

    /// A call on CPU 0 at 1 000 that takes zone 0's lock and touches frame 5's line, which
    /// no cache holds: its clock after.
    fn cold_call(s: &ModelSink) -> u64 {
        s.begin(1_000);
        s.zone_lock_taken(CpuId(0), ZoneIdx(0));
        s.touch(CpuId(0), MetaLine::Frame(Pfn(5)));
        s.zone_lock_released(CpuId(0), ZoneIdx(0), 3);
        s.end().now
    }

    #[test]
    fn calls_after_stop_pricing_cost_nothing_unless_an_observer_listens() {
        // An L2 hit of 1 ns, so that the cold line costs 9 ns beyond it.
        let priced = 1_000 + 9_000 + 100 + 3 * 10;
        let s = sink(prices(&[(Level::L2Hit, 1.0)]));
        assert_eq!(cold_call(&s), priced, "the line, the lock's base and its list work");
        s.stop_pricing();
        let found = s.traffic().0;
        assert_eq!(cold_call(&s), 1_000, "nothing is charged");
        assert_eq!(s.traffic().0, found, "and no access is counted");
        // With an observer the records' times must stay as they were: still priced.
        let s = sink(prices(&[(Level::L2Hit, 1.0)]));
        s.observe(Box::new(|_, _| {}));
        s.stop_pricing();
        assert_eq!(cold_call(&s), priced);
    }

    #[test]
    fn a_tick_that_yields_owes_nothing() {
        let s = sink(prices(&[]));
        two_chunks(&s, true);
        s.begin(1_050);
        s.zone_lock_taken(CpuId(1), ZoneIdx(0));
        s.zone_lock_released(CpuId(1), ZoneIdx(0), 0);
        assert_eq!(s.end().waited, 50);
        assert_eq!(s.take_debt(0), 0, "a tick's delay is on no CPU's clock");
    }

    #[test]
    fn a_held_lock_makes_the_next_cpu_wait_until_it_is_free() {
        let s = sink(prices(&[]));
        s.begin(1_000);
        s.zone_lock_taken(CpuId(0), ZoneIdx(0));
        s.zone_lock_released(CpuId(0), ZoneIdx(0), 3);
        // 100 + 3·10 of work, no handoff for the first holder.
        assert_eq!(s.end(), CallTime { now: 1_130, waited: 0, held: 130 });

        // CPU 1 arrives at 1 050 while the lock is held until 1 130.
        s.begin(1_050);
        s.zone_lock_taken(CpuId(1), ZoneIdx(0));
        s.zone_lock_released(CpuId(1), ZoneIdx(0), 0);
        // Waits 80, pays the same-LLC handoff of 5 ns and the base of 100.
        assert_eq!(s.end(), CallTime { now: 1_130 + 5_000 + 100, waited: 80, held: 5_100 });

        // Arriving after the lock is free: no wait; the lock comes from CPU 1.
        s.begin(50_000);
        s.zone_lock_taken(CpuId(1), ZoneIdx(0));
        s.zone_lock_released(CpuId(1), ZoneIdx(0), 1);
        assert_eq!(s.end(), CallTime { now: 50_110, waited: 0, held: 110 });
    }

    #[test]
    fn a_lock_handed_across_sockets_costs_the_remote_handoff() {
        let s = sink(prices(&[]));
        s.begin(0);
        s.zone_lock_taken(CpuId(0), ZoneIdx(0));
        s.zone_lock_released(CpuId(0), ZoneIdx(0), 0);
        s.begin(1_000_000);
        s.zone_lock_taken(CpuId(2), ZoneIdx(0));
        s.zone_lock_released(CpuId(2), ZoneIdx(0), 0);
        assert_eq!(s.end().held, 50_000 + 100);
        assert_eq!(s.traffic().1, [0, 0, 0, 1]);
    }

    /// A bulk free on CPU 2 (node 1) of 63 frames that CPU 0 (node 0) wrote last: each frame
    /// is a remote transfer, under the lock, so the hold is the work plus 63 × what a remote
    /// transfer costs beyond the private-cache hit the work already holds.
    #[test]
    fn a_bulk_free_over_remote_written_frames_costs_what_the_table_says() {
        let s = sink(prices(&[(Level::C2cRemote, 120.0), (Level::L2Hit, 3.0)]));
        s.begin(0);
        for f in 0..63 {
            s.touch(CpuId(0), MetaLine::Frame(Pfn(f)));
        }
        s.begin(10_000_000);
        s.zone_lock_taken(CpuId(2), ZoneIdx(0));
        for f in 0..63 {
            s.touch(CpuId(2), MetaLine::Frame(Pfn(f)));
            // The same line again within the operation: in CPU 2's L2 now, so nothing more.
            s.touch(CpuId(2), MetaLine::Frame(Pfn(f)));
        }
        s.zone_lock_released(CpuId(2), ZoneIdx(0), 63);
        let t = s.end();
        assert_eq!(t.held, 63 * (120_000 - 3_000) + 100 + 63 * 10);
        assert_eq!(t.now, 10_000_000 + t.held);
        let (found, _) = s.traffic();
        assert_eq!(found[Found::RemoteNode as usize], 63);
        assert_eq!(found[Found::DramLocal as usize], 63, "CPU 0 found them in memory");
        // Only the hold's touches count as held lines: the 63 transfers and the 63 repeats,
        // which found their line in CPU 2's L2 (CPU 0's touches were outside any lock).
        let mut held = [0; 7];
        held[Found::L2 as usize] = 63;
        held[Found::RemoteNode as usize] = 63;
        assert_eq!(s.held_lines(), held);
    }

    /// A hold that walks 64 cold frames up one 4 KiB page of lines: with hardware
    /// prefetchers the odd frames come as pairs (nothing more), the first two misses wait in
    /// full and the rest cost their share of a streamed page; without, every line waits.
    #[test]
    fn a_hold_that_walks_up_cold_frames_pays_the_stream_not_each_latency() {
        let p = prices(&[(Level::DramLocal, 80.0), (Level::L2Hit, 3.0), (Level::WriteDram, 4.096)]);
        let held = |streams: u32| {
            let s = sink_with_prefetchers(p, streams);
            s.begin(0);
            s.zone_lock_taken(CpuId(0), ZoneIdx(0));
            for f in 0..64 {
                s.touch(CpuId(0), MetaLine::Frame(Pfn(f)));
            }
            s.zone_lock_released(CpuId(0), ZoneIdx(0), 0);
            s.end().held - 100
        };
        assert_eq!(held(0), 64 * 77_000);
        assert_eq!(held(32), 2 * 77_000 + 30 * (1_000_000 / 64 - 3_000));
    }

    /// Cold page writes share their home node's memory: 2 × 4096 bytes a page (read for
    /// ownership, written back) at `node_rw_gbps`, each node its own; without the figure a
    /// write is done when the CPU's own write is.
    #[test]
    fn cold_pages_queue_for_their_home_nodes_memory() {
        // 8.192 GB/s: a page's 8192 bytes take 1 µs of the node's memory.
        let s = sink(prices(&[(Level::NodeRw, 8.192)]));
        assert_eq!(s.prices().node_page, 1_000_000);
        // Three pages of node 0 at 0, then one of node 1 at 0: node 1 is not held up.
        assert_eq!(s.memory_write(Pfn(5), 0, 3 * 4096), 3_000_000);
        assert_eq!(s.memory_write(Pfn(150), 0, 4096), 1_000_000);
        // Node 0's next page at 1 µs waits for the three before it; a quarter page after it
        // takes a quarter of a page's memory time.
        assert_eq!(s.memory_write(Pfn(6), 1_000_000, 4096), 4_000_000);
        assert_eq!(s.memory_write(Pfn(7), 1_000_000, 1024), 4_250_000);
        let plain = sink(prices(&[]));
        assert_eq!(plain.prices().node_page, 0);
        assert_eq!(plain.memory_write(Pfn(5), 7, 3 * 4096), 7);
    }

    #[test]
    fn a_prefetched_line_costs_only_what_is_left_of_its_transfer() {
        let s = sink(prices(&[(Level::DramLocal, 80.0), (Level::L2Hit, 2.0)]));
        s.begin(0);
        s.prefetch(CpuId(0), MetaLine::Frame(Pfn(7)));
        assert_eq!(s.end().now, 0, "a prefetch does not stall");
        // It arrives 80 - 2 ns after the prefetch (the L2 hit is in the fixed work). 30 ns of
        // other lines later, the prefetched one: 48 ns left.
        s.charge(30_000);
        s.touch(CpuId(0), MetaLine::Frame(Pfn(7)));
        assert_eq!(s.end().now, 78_000);
        // Long after it arrived: an L2 hit, nothing beyond the fixed work.
        s.begin(0);
        s.prefetch(CpuId(0), MetaLine::Frame(Pfn(8)));
        s.charge(1_000_000);
        s.touch(CpuId(0), MetaLine::Frame(Pfn(8)));
        assert_eq!(s.end().now, 1_000_000);
    }

    /// Many prefetches in flight: touches of other lines pay nothing extra, each prefetched
    /// line pays what is left of its own transfer once, and once the last one has arrived the
    /// list is forgotten.
    #[test]
    fn touches_between_prefetches_find_only_their_own_line() {
        let s = sink(prices(&[(Level::DramLocal, 80.0), (Level::L2Hit, 2.0)]));
        // Warm frames 50..60 into CPU 0's L2.
        s.begin(0);
        for f in 50..60 {
            s.touch(CpuId(0), MetaLine::Frame(Pfn(f)));
        }
        s.begin(1_000_000);
        for f in 0..40 {
            s.prefetch(CpuId(0), MetaLine::Frame(Pfn(f)));
        }
        // Lines in the L2 that were not prefetched: nothing beyond the fixed work.
        for f in 50..60 {
            s.touch(CpuId(0), MetaLine::Frame(Pfn(f)));
        }
        assert_eq!(s.end().now, 1_000_000);
        // Frame 39 arrives at +78 ns: all of it is still to wait for, and only once.
        s.touch(CpuId(0), MetaLine::Frame(Pfn(39)));
        assert_eq!(s.end().now, 1_078_000);
        s.touch(CpuId(0), MetaLine::Frame(Pfn(39)));
        assert_eq!(s.end().now, 1_078_000);
        // Every other prefetch has arrived too (they all left at the same time).
        s.touch(CpuId(0), MetaLine::Frame(Pfn(3)));
        assert_eq!(s.end().now, 1_078_000);
        assert_eq!(s.prefetched.len(), 0, "arrived prefetches are forgotten");
    }

    /// A sink whose CPUs keep `slots` misses in flight; DRAM 80 ns, the L2 hit 2 ns (so a
    /// line from memory costs 78 ns beyond the fixed work).
    fn overlapping(slots: f64) -> ModelSink {
        sink(prices(&[(Level::DramLocal, 80.0), (Level::L2Hit, 2.0), (Level::MissSlots, slots)]))
    }

    #[test]
    fn stores_that_miss_do_not_stall_the_cpu_but_the_release_waits_for_them() {
        let s = overlapping(2.0);
        s.begin(1_000);
        s.zone_lock_taken(CpuId(0), ZoneIdx(0));
        // Three lines from memory, two slots: the third starts when the first arrives.
        for f in 0..3 {
            s.store(CpuId(0), MetaLine::Frame(Pfn(f)));
        }
        assert_eq!(s.end().now, 1_000, "the CPU did not wait");
        s.zone_lock_released(CpuId(0), ZoneIdx(0), 0);
        // The CPU goes on after its fixed work; the lock is free when the third line is in.
        let t = s.end();
        assert_eq!(t.now, 1_100);
        assert_eq!(t.held, 2 * 78_000, "the hold lasts until its stores are seen");
        assert_eq!(s.held_parts()[HeldPart::StoreDrain as usize], 2 * 78_000 - 100);
        s.begin(1_200);
        s.zone_lock_taken(CpuId(1), ZoneIdx(0));
        assert_eq!(s.end().waited, 1_000 + 2 * 78_000 - 1_200);
        s.zone_lock_released(CpuId(1), ZoneIdx(0), 0);
    }

    #[test]
    fn a_read_of_a_line_being_written_waits_for_the_rest_of_its_transfer() {
        let s = overlapping(10.0);
        s.begin(0);
        s.store(CpuId(0), MetaLine::Frame(Pfn(9)));
        s.charge(30_000);
        s.touch(CpuId(0), MetaLine::Frame(Pfn(9)));
        assert_eq!(s.end().now, 78_000);
    }

    #[test]
    fn a_read_that_misses_waits_for_a_free_slot() {
        let s = overlapping(1.0);
        s.begin(0);
        s.store(CpuId(0), MetaLine::Frame(Pfn(1)));
        // The one slot is busy until 78 ns; the read's own transfer follows.
        s.touch(CpuId(0), MetaLine::Frame(Pfn(2)));
        assert_eq!(s.end().now, 2 * 78_000);
    }

    #[test]
    fn taking_a_lock_waits_for_the_cpus_own_stores() {
        let s = overlapping(10.0);
        s.begin(0);
        s.store(CpuId(0), MetaLine::Frame(Pfn(1)));
        s.zone_lock_taken(CpuId(0), ZoneIdx(0));
        s.zone_lock_released(CpuId(0), ZoneIdx(0), 0);
        let t = s.end();
        assert_eq!(t.now, 78_000 + 100, "the locked instruction drained the store first");
        assert_eq!((t.waited, t.held), (0, 100), "its own stores are neither wait nor hold");
    }

    #[test]
    fn prefetches_share_the_miss_slots() {
        let s = overlapping(10.0);
        s.begin(0);
        for f in 0..20 {
            s.prefetch(CpuId(0), MetaLine::Frame(Pfn(f)));
        }
        assert_eq!(s.end().now, 0);
        // The last ten start when the first ten arrive.
        s.touch(CpuId(0), MetaLine::Frame(Pfn(19)));
        assert_eq!(s.end().now, 2 * 78_000);
    }

    #[test]
    fn without_misses_in_flight_a_store_costs_what_a_read_costs() {
        let (a, b) =
            (sink(prices(&[(Level::DramLocal, 80.0)])), sink(prices(&[(Level::DramLocal, 80.0)])));
        for s in [&a, &b] {
            s.begin(0);
            s.zone_lock_taken(CpuId(0), ZoneIdx(0));
        }
        a.store(CpuId(0), MetaLine::Frame(Pfn(4)));
        b.touch(CpuId(0), MetaLine::Frame(Pfn(4)));
        for s in [&a, &b] {
            s.zone_lock_released(CpuId(0), ZoneIdx(0), 1);
        }
        assert_eq!(a.end(), b.end());
        assert_eq!(a.end().now, 70_000 + 110);
        assert_eq!(a.held_parts(), b.held_parts());
    }

    #[test]
    fn frame_use_is_counted_when_asked() {
        let s = sink(prices(&[]));
        let alloc = |pfn| TraceEvent::PageAlloc {
            cpu: CpuId(0),
            pfn: Some(Pfn(pfn)),
            order: pagealloc::Order(0),
            gfp: pagealloc::Gfp::KERNEL,
            migratetype: pagealloc::MigrateType::Unmovable,
        };
        for pfn in [3, 3, 7, 3, 7, 9, 999] {
            s.record(&alloc(pfn));
        }
        assert_eq!(s.most_used_frames(2), vec![(3, 3), (7, 2)]);
    }
}

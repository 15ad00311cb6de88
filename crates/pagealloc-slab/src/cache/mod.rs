//! `KmemCache`: a cache of equal objects (kernel `struct kmem_cache`, `mm/slub.c`), with a
//! per-CPU active slab and partial list, and a partial list per node.
//!
//! # The rules (the kernel's, 5.16 and later)
//!
//! - **Allocation** takes the next object of the CPU's active slab (`alloc_fastpath`). When
//!   the CPU's freelist is empty, the objects other CPUs freed into the slab meanwhile are
//!   taken (`alloc_refill`); when there are none the slab, now full, is dropped onto no list
//!   (`deactivate_bypass`) and the next active slab comes from the CPU's partial list
//!   (`cpu_partial_alloc`), else from the node's partial list — taking up to half the per-CPU
//!   cap of further slabs to the CPU's list on the way (`alloc_from_partial`,
//!   `cpu_partial_node`) —, else from another node whose list is longer than `min_partial`,
//!   else a new slab from the page allocator (`alloc_slab`): the preferred order first with
//!   no warning and, above the fallback order, no direct reclaim; then the order of one
//!   object with the caller's flags (`order_fallback`).
//! - **Free** into the freeing CPU's active slab is the fast path. A free into another CPU's
//!   active slab or into a slab on a per-CPU partial list changes no list (`free_frozen`),
//!   even when the slab becomes empty there. A free into a full slab puts the slab on the
//!   freeing CPU's partial list (`cpu_partial_free`); when that list already holds
//!   `cpu_partial_slabs` slabs, the whole list first moves to the node lists
//!   (`cpu_partial_drain`), where each empty slab is discarded while the node has
//!   `min_partial` partial slabs. A free that empties a slab on a node's partial list
//!   discards it under the same condition (`free_remove_partial`).
//! - **Discarding** a slab gives its block back with `free_pages` (`free_slab`): a slab of
//!   order 1 to 3 goes onto the page allocator's per-CPU lists like any other high-order
//!   free, where `free_high` sees it.
//!
//! Kernels before 6.8 "froze" the slabs on per-CPU partial lists; 6.8 ("slub: Delay freezing
//! of partial slabs", Chengming Zhou) stopped doing so and marks instead whether a slab is on
//! the node list. Either way a free into such a slab leaves it where it is, which is all this
//! model needs.
//!
//! # Locks
//!
//! One lock per CPU (its active slab and partial list), one per node (its partial list),
//! one per slab (its freelists, counts and place), and one per shard of the cache's slab
//! directory (first frame → slab). They are taken in this order only, each at most once and
//! at most one shard at a time (the validator alone takes every CPU lock, then every node
//! lock, then every shard, in index order):
//!
//! ```text
//! CPU lock  →  node lock  →  slab lock  →  directory lock
//! ```
//!
//! A slab's `place` changes only with its own lock and the lock of the list it leaves or
//! joins held, so a thread holding the slab lock alone knows which list the slab is on and
//! that it stays there: a free needs only the slab lock unless it moves the slab. When it must
//! (a full slab becoming partial, an empty one leaving a node list), it lets the slab go,
//! takes the list's lock and then the slab's, and checks again. No lock is held across a call
//! into the page allocator's free path: discarded slabs are freed after every lock is
//! released. A new slab is allocated with the CPU lock held (the page allocator never calls
//! back into this layer).

mod allocate;
mod free;
mod inspect;
mod layout;
mod shrink;

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use pagealloc::lock_api::Mutex;
use pagealloc::types::PAGE_SHIFT;
use pagealloc::{
    Cpu, CpuId, EventSink, Gfp, MetaLine, NoEvents, NodeId, PageAllocator, Pfn, RawLock,
    RawSpinLock,
};

use crate::error::SlabError;
use crate::order::{self, OrderObjects, SlubConfig, MAX_OBJECT_SIZE};
use crate::slab::{Place, Slab, SlabState};
use crate::stat::{SlabInfo, SlabStat, SlabStats, StatSnapshot};
use layout::Layout;

/// Slabs of at most this many free objects are sorted by fullness when a cache is shrunk
/// (kernel `SHRINK_PROMOTE_MAX`).
const SHRINK_PROMOTE_MAX: usize = 32;

/// Source of cache identities (what an object handle carries to be told from another
/// cache's); it numbers caches and orders nothing.
static NEXT_CACHE_ID: AtomicU64 = AtomicU64::new(1);

/// Cache creation flags (kernel `SLAB_*`, same bit values).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SlabFlags(pub u32);

impl SlabFlags {
    /// No flags.
    pub const NONE: SlabFlags = SlabFlags(0);
    /// Align objects to cache lines (halved for small objects).
    pub const HWCACHE_ALIGN: SlabFlags = SlabFlags(0x0000_2000);
    /// Slabs from ZONE_DMA.
    pub const CACHE_DMA: SlabFlags = SlabFlags(0x0000_4000);
    /// Objects the shrinkers reclaim (dentries, inodes): slabs are allocated
    /// `__GFP_RECLAIMABLE`, so they group in reclaimable pageblocks.
    pub const RECLAIM_ACCOUNT: SlabFlags = SlabFlags(0x0002_0000);

    /// Are all of `other`'s flags set?
    pub const fn contains(self, other: SlabFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::ops::BitOr for SlabFlags {
    type Output = SlabFlags;
    fn bitor(self, rhs: SlabFlags) -> SlabFlags {
        SlabFlags(self.0 | rhs.0)
    }
}

/// An object handed out by a cache: its slab's first frame and its index there, plus the
/// identity of the cache and of the slab, so that a handle to another cache's object, or to
/// a slab since given back, is refused rather than freeing whatever is there now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SlabObject {
    slab: Pfn,
    index: u32,
    cache: u64,
    serial: u64,
}

impl SlabObject {
    /// The first frame of the slab holding the object.
    pub fn slab(&self) -> Pfn {
        self.slab
    }

    /// The object's index in its slab.
    pub fn index(&self) -> u32 {
        self.index
    }
}

/// A CPU's slabs (kernel `struct kmem_cache_cpu`), on a cache line of its own.
#[derive(Debug)]
struct KmemCacheCpu<L: RawLock> {
    /// The active slab.
    slab: Option<Arc<Slab<L>>>,
    /// The per-CPU partial list; its head (the next slab used) is the last element.
    partial: Vec<Arc<Slab<L>>>,
}

/// What a cache keeps per CPU: its slabs, and its event counters (the kernel's
/// `CONFIG_SLUB_STATS` counters are per CPU too, summed when read). Only the CPU's own calls,
/// and a flush run for it, write here, so on real threads no counter line moves between CPUs
/// and a CPU's own counters tell exactly what its calls did.
#[derive(Debug)]
#[repr(align(64))]
struct CpuSlot<L: RawLock> {
    slabs: Mutex<L, KmemCacheCpu<L>>,
    stats: SlabStats,
}

/// Shards of a cache's slab directory. A free looks its slab up there, so with one lock every
/// free on every CPU took the same lock line; 64 shards (a few KiB per cache) make two CPUs
/// meet on one only when their slabs hash together.
const DIR_SHARDS: usize = 64;

/// One shard of the slab directory (first frame → slab), on a cache line of its own.
#[derive(Debug)]
#[repr(align(64))]
struct DirShard<L: RawLock>(Mutex<L, BTreeMap<u64, Arc<Slab<L>>>>);

/// The directory shard of the slab whose first frame is `pfn` (a Fibonacci hash, so that
/// slabs of any order spread over every shard).
fn dir_shard(pfn: Pfn) -> usize {
    (pfn.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - DIR_SHARDS.trailing_zeros())) as usize
}

/// A node's partial list, ordered by key: heads get keys below every other, tails above.
#[derive(Debug)]
struct NodePartial<L: RawLock> {
    list: BTreeMap<i64, Arc<Slab<L>>>,
    next_head: i64,
    next_tail: i64,
}

// Written out: a derive would ask the lock type for `Default` too.
impl<L: RawLock> Default for KmemCacheCpu<L> {
    fn default() -> Self {
        KmemCacheCpu { slab: None, partial: Vec::new() }
    }
}

impl<L: RawLock> Default for NodePartial<L> {
    fn default() -> Self {
        NodePartial { list: BTreeMap::new(), next_head: 0, next_tail: 0 }
    }
}

impl<L: RawLock> Default for KmemCacheNode<L> {
    fn default() -> Self {
        KmemCacheNode {
            list_lock: Mutex::new(NodePartial::default()),
            nr_slabs: AtomicU64::new(0),
            total_objects: AtomicU64::new(0),
        }
    }
}

impl<L: RawLock> NodePartial<L> {
    /// Slabs on the list (kernel `n->nr_partial`).
    fn nr_partial(&self) -> u32 {
        self.list.len() as u32
    }

    /// Put `slab` (its lock held as `st`) on the list (kernel `add_partial`).
    fn add(&mut self, slab: &Arc<Slab<L>>, st: &mut SlabState, tail: bool) {
        let key = if tail {
            self.next_tail += 1;
            self.next_tail
        } else {
            self.next_head -= 1;
            self.next_head
        };
        self.list.insert(key, Arc::clone(slab));
        st.place = Place::NodePartial(key);
    }

    /// Take the slab under `key` off the list (kernel `remove_partial`).
    fn remove(&mut self, key: i64) {
        self.list.remove(&key);
    }

    /// Take the head slab off the list.
    fn pop_head(&mut self) -> Option<Arc<Slab<L>>> {
        self.list.pop_first().map(|(_, slab)| slab)
    }
}

/// A node's part of a cache (kernel `struct kmem_cache_node`).
#[derive(Debug)]
struct KmemCacheNode<L: RawLock> {
    list_lock: Mutex<L, NodePartial<L>>,
    /// Slabs on this node, wherever they are.
    nr_slabs: AtomicU64,
    /// Objects in those slabs.
    total_objects: AtomicU64,
}

/// A cache of objects of one size over a [`PageAllocator`].
#[derive(Debug)]
pub struct KmemCache<'a, E: EventSink = NoEvents, L: RawLock = RawSpinLock> {
    pa: &'a PageAllocator<E, L>,
    id: u64,
    layout: Layout,
    cpu_slab: Box<[CpuSlot<L>]>,
    node: Box<[KmemCacheNode<L>]>,
    /// Every slab of the cache by first frame, in [`DIR_SHARDS`] shards: how a free finds its
    /// slab (the kernel reads it from the page).
    slabs: Box<[DirShard<L>]>,
    next_serial: AtomicU64,
}

/// What a free must do after a first look at the slab under its own lock.
enum FreeNext {
    Done,
    /// The slab is full: it moves to the freeing CPU's partial list.
    ToCpuPartial,
    /// The slab may have to join or leave its node's partial list.
    NodeList,
}

/// Slabs to give back once every lock is released, with the CPU whose pageset takes them.
type Discards<L> = Vec<Arc<Slab<L>>>;

impl<'a, E: EventSink, L: RawLock> KmemCache<'a, E, L> {
    /// Create a cache of `size`-byte objects aligned to `align` (0: a word) over `pa`
    /// (kernel `kmem_cache_create`). The slab order follows `cfg` and `pa`'s CPU count.
    pub fn new(
        pa: &'a PageAllocator<E, L>,
        name: &str,
        size: u32,
        align: u32,
        flags: SlabFlags,
        cfg: &SlubConfig,
    ) -> Result<KmemCache<'a, E, L>, SlabError> {
        let cfg = cfg.checked()?;
        let layout = Layout::new(name, size, align, flags, &cfg, pa.nr_cpus())?;
        Ok(KmemCache {
            pa,
            id: NEXT_CACHE_ID.fetch_add(1, Relaxed),
            layout,
            cpu_slab: (0..pa.nr_cpus())
                .map(|_| CpuSlot {
                    slabs: Mutex::new(KmemCacheCpu::default()),
                    stats: SlabStats::default(),
                })
                .collect(),
            node: (0..pa.nr_nodes()).map(|_| KmemCacheNode::default()).collect(),
            slabs: (0..DIR_SHARDS).map(|_| DirShard(Mutex::new(BTreeMap::new()))).collect(),
            next_serial: AtomicU64::new(1),
        })
    }

    /// The cache's name.
    pub fn name(&self) -> &str {
        &self.layout.name
    }

    /// The object size asked for.
    pub fn object_size(&self) -> u32 {
        self.layout.object_size
    }

    /// The object stride: the size rounded up to the alignment (kernel `s->size`).
    pub fn size(&self) -> u32 {
        self.layout.size
    }

    /// The objects' alignment.
    pub fn align(&self) -> u32 {
        self.layout.align
    }

    /// The flags the cache was created with.
    pub fn flags(&self) -> SlabFlags {
        self.layout.flags
    }

    /// The preferred slab order and its object count (kernel `s->oo`).
    pub fn oo(&self) -> OrderObjects {
        self.layout.oo
    }

    /// The fallback: the order of one object (kernel `s->min`).
    pub fn min(&self) -> OrderObjects {
        self.layout.min
    }

    /// Empty slabs a node keeps on its partial list.
    pub fn min_partial(&self) -> u32 {
        self.layout.min_partial
    }

    /// The per-CPU partial list's size in objects (sysfs `cpu_partial`).
    pub fn cpu_partial(&self) -> u32 {
        self.layout.cpu_partial
    }

    /// The per-CPU partial list's cap in slabs.
    pub fn cpu_partial_slabs(&self) -> u32 {
        self.layout.cpu_partial_slabs
    }

    /// The GFP bits every slab allocation carries besides the caller's (`__GFP_RECLAIMABLE`
    /// for a reclaim-accounted cache, `__GFP_DMA` for a DMA cache; `__GFP_COMP` is added for
    /// orders above 0).
    pub fn allocflags(&self) -> Gfp {
        self.layout.allocflags
    }

    /// The page allocator the cache takes its slabs from.
    pub fn page_allocator(&self) -> &'a PageAllocator<E, L> {
        self.pa
    }

    /// The event counters, summed over the CPUs.
    pub fn stats(&self) -> StatSnapshot {
        let mut sum = StatSnapshot::default();
        self.cpu_slab.iter().for_each(|c| sum.add(&c.stats.snapshot()));
        sum
    }

    /// One event counter summed over the CPUs: one load per CPU, where
    /// [`stats`](Self::stats) reads every counter.
    pub fn stat(&self, s: SlabStat) -> u64 {
        self.cpu_slab.iter().map(|c| c.stats.get(s)).sum()
    }

    /// One event counter of one CPU: what that CPU's calls (and flushes run for it) counted.
    /// A caller reading it before and after its own call on `cpu` learns what that call did,
    /// whatever other CPUs do meanwhile.
    pub fn cpu_stat(&self, cpu: Cpu, s: SlabStat) -> Result<u64, SlabError> {
        self.check_cpu(cpu)?;
        Ok(self.cpu_slab[cpu.id().index()].stats.get(s))
    }

    /// Count one event on `cpu`.
    #[inline]
    fn count(&self, cpu: CpuId, s: SlabStat) {
        self.cpu_slab[cpu.index()].stats.inc(s);
    }

    /// Tell the event sink that `cpu` reads and writes the `struct page` of the slab at
    /// `slab`: SLUB keeps a slab's freelist, counts and list links there and updates them
    /// (`cmpxchg_double_slab`, list moves) on every path but the two fast ones, which work on
    /// the CPU's own freelist. A model prices the line by where it was last written, such as
    /// another CPU's free into the slab. The objects' own lines (SLUB's free pointers) are
    /// not reported.
    #[inline]
    fn touch_slab_page(&self, cpu: CpuId, slab: Pfn) {
        if E::ENABLED {
            self.pa.events().touch(cpu, MetaLine::Frame(slab));
        }
    }

    /// The directory shard that holds (or will hold) the slab at `pfn`.
    fn dir(&self, pfn: Pfn) -> &Mutex<L, BTreeMap<u64, Arc<Slab<L>>>> {
        &self.slabs[dir_shard(pfn)].0
    }

    /// Every slab of the cache (a snapshot, shard by shard).
    fn all_slabs(&self) -> Vec<Arc<Slab<L>>> {
        self.slabs.iter().flat_map(|d| d.0.lock().values().cloned().collect::<Vec<_>>()).collect()
    }

    /// The physical address of an object (its slab's address plus index × stride).
    pub fn address(&self, obj: SlabObject) -> u64 {
        obj.slab.phys() + u64::from(obj.index) * u64::from(self.layout.size)
    }
}

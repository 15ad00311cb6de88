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
//! one per slab (its freelists, counts and place), and one for the cache's slab directory
//! (first frame → slab). They are taken in this order only, each at most once (the validator
//! alone takes every CPU lock, then every node lock, in index order):
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
    Cpu, CpuId, EventSink, Gfp, NoEvents, NodeId, PageAllocator, Pfn, RawLock, RawSpinLock,
};

use crate::error::SlabError;
use crate::order::{self, OrderObjects, SlubConfig, MAX_OBJECT_SIZE};
use crate::slab::{Place, Slab, SlabState};
use crate::stat::{SlabInfo, SlabStat, SlabStats, StatSnapshot};

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

#[derive(Debug)]
#[repr(align(64))]
struct CpuSlot<L: RawLock>(Mutex<L, KmemCacheCpu<L>>);

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

/// The parts of a cache fixed at creation.
#[derive(Clone, Debug)]
struct Layout {
    name: String,
    object_size: u32,
    /// Object stride (kernel `s->size`).
    size: u32,
    align: u32,
    flags: SlabFlags,
    /// Preferred slab order and objects (kernel `s->oo`).
    oo: OrderObjects,
    /// Fallback: the order of one object (kernel `s->min`).
    min: OrderObjects,
    /// GFP bits every slab allocation carries (kernel `s->allocflags`, without `__GFP_COMP`,
    /// which is added per order).
    allocflags: Gfp,
    min_partial: u32,
    cpu_partial: u32,
    cpu_partial_slabs: u32,
    has_cpu_partial: bool,
}

/// A cache of objects of one size over a [`PageAllocator`].
#[derive(Debug)]
pub struct KmemCache<'a, E: EventSink = NoEvents, L: RawLock = RawSpinLock> {
    pa: &'a PageAllocator<E, L>,
    id: u64,
    layout: Layout,
    cpu_slab: Box<[CpuSlot<L>]>,
    node: Box<[KmemCacheNode<L>]>,
    /// Every slab of the cache by first frame: how a free finds its slab (the kernel reads it
    /// from the page).
    slabs: Mutex<L, BTreeMap<u64, Arc<Slab<L>>>>,
    next_serial: AtomicU64,
    stats: SlabStats,
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
                .map(|_| CpuSlot(Mutex::new(KmemCacheCpu::default())))
                .collect(),
            node: (0..pa.nr_nodes()).map(|_| KmemCacheNode::default()).collect(),
            slabs: Mutex::new(BTreeMap::new()),
            next_serial: AtomicU64::new(1),
            stats: SlabStats::default(),
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

    /// The event counters.
    pub fn stats(&self) -> StatSnapshot {
        self.stats.snapshot()
    }

    /// The physical address of an object (its slab's address plus index × stride).
    pub fn address(&self, obj: SlabObject) -> u64 {
        obj.slab.phys() + u64::from(obj.index) * u64::from(self.layout.size)
    }

    // ---------------------------------------------------------------------------------------
    // Allocation

    /// Allocate an object on `cpu` (kernel `kmem_cache_alloc`). The caller's zone and
    /// mobility bits are replaced by the cache's; the rest (reclaim, `__GFP_HIGH`, …) goes to
    /// the page allocator when a new slab is needed.
    pub fn alloc(&self, cpu: Cpu, gfp: Gfp) -> Result<SlabObject, SlabError> {
        self.alloc_mpol(cpu, gfp, None)
    }

    /// [`alloc`](Self::alloc) for a task whose memory policy binds it to `bind` (`numactl
    /// -m`): a new slab's pages come from that node's zonelist, as the kernel's
    /// `alloc_slab_page` → `alloc_pages` follows the calling task's `MPOL_BIND` policy (not
    /// in interrupt context, no `__GFP_THISNODE`). The partial lists are searched as for any
    /// allocation, the CPU's own node first. `None`: the CPU's node, as `alloc`.
    pub fn alloc_mpol(
        &self,
        cpu: Cpu,
        gfp: Gfp,
        bind: Option<NodeId>,
    ) -> Result<SlabObject, SlabError> {
        self.check_cpu(cpu)?;
        let mut c = self.cpu_slab[cpu.id().index()].0.lock();
        if let Some(slab) = &c.slab {
            if let Some(i) = slab.state.lock().take_cpu_object() {
                self.stats.inc(SlabStat::AllocFastpath);
                return Ok(self.handle(slab, i));
            }
        }
        self.stats.inc(SlabStat::AllocSlowpath);
        let (slab, i) = self.slab_alloc_slow(cpu, &mut c, gfp, bind)?;
        Ok(self.handle(&slab, i))
    }

    /// The slow path (kernel `___slab_alloc`): refill from remote frees, else replace the
    /// active slab. Called with the CPU lock held.
    fn slab_alloc_slow(
        &self,
        cpu: Cpu,
        c: &mut KmemCacheCpu<L>,
        gfp: Gfp,
        bind: Option<NodeId>,
    ) -> Result<(Arc<Slab<L>>, u32), SlabError> {
        if let Some(slab) = c.slab.take() {
            let mut st = slab.state.lock();
            st.refill_cpu_freelist();
            if let Some(i) = st.take_cpu_object() {
                drop(st);
                self.stats.inc(SlabStat::AllocRefill);
                c.slab = Some(Arc::clone(&slab));
                return Ok((slab, i));
            }
            // Nothing free: the slab joins no list until an object comes back.
            st.place = Place::Full;
            self.stats.inc(SlabStat::DeactivateBypass);
        }
        let slab = match self.take_cpu_partial(c) {
            Some(slab) => slab,
            None => match self.get_partial(cpu, c) {
                Some(slab) => slab,
                None => self.new_slab(cpu, gfp, bind)?,
            },
        };
        let mut st = slab.state.lock();
        st.freeze(cpu.id());
        let i = st.take_cpu_object();
        drop(st);
        c.slab = Some(Arc::clone(&slab));
        // Every slab reaching this point has a free object: a new slab is empty, and a
        // listed slab was listed with one and frees only add. Were it otherwise, the next
        // allocation would find this slab full and move on; this one reports no memory
        // rather than panic.
        i.map(|i| (slab, i)).ok_or(SlabError::Alloc(pagealloc::AllocError::OutOfMemory {
            order: self.layout.oo.order,
        }))
    }

    /// The head of the CPU's partial list, if any.
    fn take_cpu_partial(&self, c: &mut KmemCacheCpu<L>) -> Option<Arc<Slab<L>>> {
        let slab = c.partial.pop()?;
        self.stats.inc(SlabStat::CpuPartialAlloc);
        Some(slab)
    }

    /// A slab from the CPU's node's partial list, else from another node's if that node has
    /// more than `min_partial` (kernel `get_partial`, `get_any_partial` without its random
    /// `remote_node_defrag_ratio` skip).
    fn get_partial(&self, cpu: Cpu, c: &mut KmemCacheCpu<L>) -> Option<Arc<Slab<L>>> {
        let local = cpu.node().index();
        if let Some(slab) = self.get_partial_node(cpu, c, local, 0) {
            return Some(slab);
        }
        (0..self.node.len())
            .filter(|&n| n != local)
            .find_map(|n| self.get_partial_node(cpu, c, n, self.layout.min_partial + 1))
    }

    /// Take the head of node `n`'s partial list for the CPU and, with per-CPU partial lists
    /// on, more slabs onto the CPU's list until it holds over half its cap (kernel
    /// `get_partial_node`). Nothing when the list holds fewer than `at_least` slabs.
    fn get_partial_node(
        &self,
        cpu: Cpu,
        c: &mut KmemCacheCpu<L>,
        n: usize,
        at_least: u32,
    ) -> Option<Arc<Slab<L>>> {
        let mut lists = self.node[n].list_lock.lock();
        if lists.nr_partial() == 0 || lists.nr_partial() < at_least {
            return None;
        }
        let first = lists.pop_head()?;
        first.state.lock().place = Place::CpuSlab(cpu.id());
        self.stats.inc(SlabStat::AllocFromPartial);
        let mut moved = 0;
        while self.layout.has_cpu_partial && moved <= self.layout.cpu_partial_slabs / 2 {
            let Some(slab) = lists.pop_head() else { break };
            slab.state.lock().place = Place::CpuPartial(cpu.id());
            c.partial.push(slab);
            self.stats.inc(SlabStat::CpuPartialNode);
            moved += 1;
        }
        Some(first)
    }

    /// Allocate and register a new slab (kernel `allocate_slab`): the preferred order without
    /// warning (and without direct reclaim above the fallback order), then the fallback order
    /// with the caller's flags.
    fn new_slab(
        &self,
        cpu: Cpu,
        gfp: Gfp,
        bind: Option<NodeId>,
    ) -> Result<Arc<Slab<L>>, SlabError> {
        let l = &self.layout;
        let flags = (gfp & !Gfp(CALLER_MASKED)) | l.allocflags;
        let mut first = flags | Gfp::NOWARN;
        if first.contains(Gfp::DIRECT_RECLAIM) && l.oo.order > l.min.order {
            first = (first | Gfp::NOMEMALLOC) & !Gfp::RECLAIM;
        }
        let pages = |gfp: Gfp, order| match bind {
            Some(node) => self.pa.alloc_pages_node(cpu, node, gfp, order),
            None => self.pa.alloc_pages(cpu, gfp, order),
        };
        let (pfn, oo) = match pages(comp(first, l.oo), l.oo.order) {
            Ok(pfn) => (pfn, l.oo),
            Err(_) => {
                let pfn = pages(comp(flags, l.min), l.min.order)?;
                self.stats.inc(SlabStat::OrderFallback);
                (pfn, l.min)
            }
        };
        let node = self.pa.zone_of(pfn).map_or(cpu.node(), |z| z.node());
        let serial = self.next_serial.fetch_add(1, Relaxed);
        let slab = Arc::new(Slab::new(pfn, oo.order, oo.objects, node, serial));
        let n = &self.node[node.index()];
        n.nr_slabs.fetch_add(1, Relaxed);
        n.total_objects.fetch_add(u64::from(oo.objects), Relaxed);
        self.slabs.lock().insert(pfn.0, Arc::clone(&slab));
        self.stats.inc(SlabStat::AllocSlab);
        Ok(slab)
    }

    fn handle(&self, slab: &Slab<L>, index: u32) -> SlabObject {
        SlabObject { slab: slab.pfn, index, cache: self.id, serial: slab.serial }
    }

    // ---------------------------------------------------------------------------------------
    // Free

    /// Free an object on `cpu` (kernel `kmem_cache_free`). A refused free changes nothing.
    pub fn free(&self, cpu: Cpu, obj: SlabObject) -> Result<(), SlabError> {
        self.check_cpu(cpu)?;
        let slab = self.lookup(obj)?;
        loop {
            let next = self.free_quick(cpu, &slab, obj)?;
            let done = match next {
                FreeNext::Done => return Ok(()),
                FreeNext::ToCpuPartial => self.free_to_cpu_partial(cpu, &slab, obj)?,
                FreeNext::NodeList => self.free_on_node(cpu, &slab, obj)?,
            };
            if done {
                return Ok(());
            }
            // The slab moved between the two looks: look again.
        }
    }

    /// The slab of a handle, checked to be this cache's and still the same slab.
    fn lookup(&self, obj: SlabObject) -> Result<Arc<Slab<L>>, SlabError> {
        if obj.cache != self.id {
            return Err(SlabError::ForeignObject { slab: obj.slab, index: obj.index });
        }
        let slab = self.slabs.lock().get(&obj.slab.0).cloned();
        match slab {
            Some(slab) if slab.serial == obj.serial => {
                if obj.index >= slab.objects {
                    return Err(SlabError::BadIndex {
                        slab: obj.slab,
                        index: u64::from(obj.index),
                        objects: slab.objects,
                    });
                }
                Ok(slab)
            }
            // This cache's handle to a slab given back: it was empty then, so this object had
            // been freed.
            _ => Err(SlabError::DoubleFree { slab: obj.slab, index: obj.index }),
        }
    }

    /// The free as far as it goes with the slab lock alone.
    fn free_quick(&self, cpu: Cpu, slab: &Slab<L>, obj: SlabObject) -> Result<FreeNext, SlabError> {
        let mut st = slab.state.lock();
        check_allocated(&st, obj)?;
        match st.place {
            Place::CpuSlab(c) if c == cpu.id() => {
                st.set_free(obj.index);
                st.cpu_freelist.push(obj.index);
                self.stats.inc(SlabStat::FreeFastpath);
                Ok(FreeNext::Done)
            }
            Place::CpuSlab(_) | Place::CpuPartial(_) => {
                st.set_free(obj.index);
                st.freelist.push(obj.index);
                self.stats.inc(SlabStat::FreeSlowpath);
                self.stats.inc(SlabStat::FreeFrozen);
                Ok(FreeNext::Done)
            }
            Place::NodePartial(_) if st.inuse > 1 => {
                st.set_free(obj.index);
                st.freelist.push(obj.index);
                self.stats.inc(SlabStat::FreeSlowpath);
                Ok(FreeNext::Done)
            }
            Place::Full if self.layout.has_cpu_partial => Ok(FreeNext::ToCpuPartial),
            Place::NodePartial(_) | Place::Full => Ok(FreeNext::NodeList),
            Place::Discarded => Err(SlabError::DoubleFree { slab: obj.slab, index: obj.index }),
        }
    }

    /// Free into a full slab and put it on the freeing CPU's partial list (kernel
    /// `put_cpu_partial` with drain), moving a full list to the node lists first. `false` if
    /// the slab is no longer full.
    fn free_to_cpu_partial(
        &self,
        cpu: Cpu,
        slab: &Arc<Slab<L>>,
        obj: SlabObject,
    ) -> Result<bool, SlabError> {
        let mut discards = Discards::new();
        {
            let mut c = self.cpu_slab[cpu.id().index()].0.lock();
            {
                let mut st = slab.state.lock();
                check_allocated(&st, obj)?;
                if st.place != Place::Full {
                    return Ok(false);
                }
                st.set_free(obj.index);
                st.freelist.push(obj.index);
                st.place = Place::CpuPartial(cpu.id());
            }
            if c.partial.len() as u32 >= self.layout.cpu_partial_slabs {
                let old = core::mem::take(&mut c.partial);
                self.put_partials(old, &mut discards);
                self.stats.inc(SlabStat::CpuPartialDrain);
            }
            c.partial.push(Arc::clone(slab));
        }
        self.stats.inc(SlabStat::FreeSlowpath);
        self.stats.inc(SlabStat::CpuPartialFree);
        self.discard_all(cpu, discards)?;
        Ok(true)
    }

    /// Free into a slab on its node's partial list that becomes empty, or into a full slab
    /// with per-CPU partial lists off (kernel `__slab_free`'s list work). `false` if the slab
    /// moved meanwhile.
    fn free_on_node(
        &self,
        cpu: Cpu,
        slab: &Arc<Slab<L>>,
        obj: SlabObject,
    ) -> Result<bool, SlabError> {
        let n = &self.node[slab.node.index()];
        let discard = {
            let mut lists = n.list_lock.lock();
            let mut st = slab.state.lock();
            check_allocated(&st, obj)?;
            let key = match st.place {
                Place::NodePartial(key) => Some(key),
                Place::Full if !self.layout.has_cpu_partial => None,
                _ => return Ok(false),
            };
            st.set_free(obj.index);
            st.freelist.push(obj.index);
            self.stats.inc(SlabStat::FreeSlowpath);
            if st.inuse == 0 && lists.nr_partial() >= self.layout.min_partial {
                if let Some(key) = key {
                    lists.remove(key);
                    self.stats.inc(SlabStat::FreeRemovePartial);
                }
                st.place = Place::Discarded;
                true
            } else {
                if key.is_none() {
                    lists.add(slab, &mut st, true);
                    self.stats.inc(SlabStat::FreeAddPartial);
                }
                false
            }
        };
        if discard {
            self.discard_all(cpu, alloc::vec![Arc::clone(slab)])?;
        }
        Ok(true)
    }

    /// Move slabs taken off a per-CPU partial list to their nodes' lists, keeping aside the
    /// empty ones a node has enough of (kernel `__put_partials`). The list's head goes first.
    fn put_partials(&self, slabs: Vec<Arc<Slab<L>>>, discards: &mut Discards<L>) {
        for slab in slabs.into_iter().rev() {
            let mut lists = self.node[slab.node.index()].list_lock.lock();
            let mut st = slab.state.lock();
            if st.inuse == 0 && lists.nr_partial() >= self.layout.min_partial {
                st.place = Place::Discarded;
                drop(st);
                self.stats.inc(SlabStat::DeactivateEmpty);
                discards.push(slab);
            } else {
                lists.add(&slab, &mut st, true);
                self.stats.inc(SlabStat::FreeAddPartial);
            }
        }
    }

    /// Take a CPU's active slab back to its node (kernel `deactivate_slab`): discarded if empty
    /// and the node has enough, listed if it has free objects (at the tail if other CPUs
    /// freed into it, so the node hands out the emptier ones later), else on no list.
    fn deactivate_slab(&self, slab: Arc<Slab<L>>, discards: &mut Discards<L>) {
        let mut lists = self.node[slab.node.index()].list_lock.lock();
        let mut st = slab.state.lock();
        let remote_frees = st.unfreeze();
        if remote_frees {
            self.stats.inc(SlabStat::DeactivateRemoteFrees);
        }
        if st.inuse == 0 && lists.nr_partial() >= self.layout.min_partial {
            st.place = Place::Discarded;
            drop(st);
            self.stats.inc(SlabStat::DeactivateEmpty);
            discards.push(slab);
        } else if st.nr_free() > 0 {
            lists.add(&slab, &mut st, remote_frees);
            self.stats.inc(if remote_frees {
                SlabStat::DeactivateToTail
            } else {
                SlabStat::DeactivateToHead
            });
        } else {
            st.place = Place::Full;
            self.stats.inc(SlabStat::DeactivateFull);
        }
    }

    /// Give slabs already marked `Discarded` back to the page allocator on `cpu` (kernel
    /// `discard_slab`): out of the directory and the node's counts, then `free_pages`. Called
    /// with no lock held.
    fn discard_all(&self, cpu: Cpu, discards: Discards<L>) -> Result<(), SlabError> {
        let mut result = Ok(());
        for slab in discards {
            self.slabs.lock().remove(&slab.pfn.0);
            let n = &self.node[slab.node.index()];
            n.nr_slabs.fetch_sub(1, Relaxed);
            n.total_objects.fetch_sub(u64::from(slab.objects), Relaxed);
            self.stats.inc(SlabStat::FreeSlab);
            if let Err(e) = self.pa.free_pages(cpu, slab.pfn, slab.order) {
                result = Err(SlabError::PageFree(e));
            }
        }
        result
    }

    // ---------------------------------------------------------------------------------------
    // Flush and shrink

    /// Take CPU `id`'s active slab and partial list back to the node lists (kernel
    /// `flush_cpu_slab`, what a CPU going offline or a shrink does); empty slabs beyond
    /// `min_partial` are given back through that CPU's pageset, as the kernel's per-CPU flush
    /// work would.
    pub fn flush_cpu(&self, id: CpuId) -> Result<(), SlabError> {
        let cpu = self.pa.cpu(id).ok_or(SlabError::InvalidCpu(id))?;
        let mut discards = Discards::new();
        {
            let mut c = self.cpu_slab[id.index()].0.lock();
            if let Some(slab) = c.slab.take() {
                self.deactivate_slab(slab, &mut discards);
                self.stats.inc(SlabStat::CpuslabFlush);
            }
            let partial = core::mem::take(&mut c.partial);
            self.put_partials(partial, &mut discards);
        }
        self.discard_all(cpu, discards)
    }

    /// Give back every empty slab (kernel `kmem_cache_shrink`): flush every CPU, then discard
    /// the empty slabs on each node's partial list whatever `min_partial` says, and order the
    /// rest fullest first, so allocations fill them and the emptiest may drain. The node
    /// lists' discards go through `caller`'s pageset.
    pub fn shrink(&self, caller: Cpu) -> Result<(), SlabError> {
        self.check_cpu(caller)?;
        for c in 0..self.cpu_slab.len() {
            self.flush_cpu(CpuId(c as u32))?;
        }
        for n in self.node.iter() {
            let discards = self.shrink_node(n);
            self.discard_all(caller, discards)?;
        }
        Ok(())
    }

    /// Take the empty slabs off a node's partial list and sort the rest by free objects
    /// (at most [`SHRINK_PROMOTE_MAX`] told apart; the order within a count is kept).
    fn shrink_node(&self, n: &KmemCacheNode<L>) -> Discards<L> {
        let mut lists = n.list_lock.lock();
        let mut keep = Vec::new();
        let mut discards = Discards::new();
        while let Some(slab) = lists.pop_head() {
            let mut st = slab.state.lock();
            if st.inuse == 0 {
                st.place = Place::Discarded;
                drop(st);
                discards.push(slab);
            } else {
                let rank = st.nr_free().min(SHRINK_PROMOTE_MAX + 1);
                drop(st);
                keep.push((rank, slab));
            }
        }
        keep.sort_by_key(|&(rank, _)| rank);
        for (_, slab) in keep {
            let mut st = slab.state.lock();
            lists.add(&slab, &mut st, true);
        }
        discards
    }

    /// Shrink, then report whether anything is still allocated (kernel `kmem_cache_destroy`'s
    /// check, without destroying: the cache stays usable).
    pub fn shutdown(&self, caller: Cpu) -> Result<(), SlabError> {
        self.shrink(caller)?;
        let objects = self.slabinfo().objects_in_use;
        if objects > 0 {
            return Err(SlabError::Busy { objects });
        }
        Ok(())
    }

    // ---------------------------------------------------------------------------------------
    // Lookup by address, statistics, validation

    /// The object at physical address `addr` (kernel `kfree`'s way from a pointer to its slab
    /// and index, with `check_valid_pointer`'s checks): refused when no slab of this cache
    /// holds the address, when it is not the start of an object, or when it lies in the
    /// leftover after the last object. The object may be free: freeing it tells.
    pub fn object_at(&self, addr: u64) -> Result<SlabObject, SlabError> {
        let pfn = Pfn(addr >> PAGE_SHIFT);
        let slab = self
            .slabs
            .lock()
            .range(..=pfn.0)
            .next_back()
            .map(|(_, s)| Arc::clone(s))
            .filter(|s| pfn.0 < s.pfn.0 + (1u64 << s.order.0))
            .ok_or(SlabError::NotSlab { pfn })?;
        let offset = addr - slab.pfn.phys();
        let size = u64::from(self.layout.size);
        if offset % size != 0 {
            return Err(SlabError::Misaligned { slab: slab.pfn, offset, size: self.layout.size });
        }
        let index = offset / size;
        if index >= u64::from(slab.objects) {
            return Err(SlabError::BadIndex { slab: slab.pfn, index, objects: slab.objects });
        }
        Ok(SlabObject { slab: slab.pfn, index: index as u32, cache: self.id, serial: slab.serial })
    }

    /// The cache's `/proc/slabinfo` row and the exact counts beside it. A snapshot: exact
    /// when no call runs on the cache meanwhile.
    pub fn slabinfo(&self) -> SlabInfo {
        let l = &self.layout;
        let num_slabs: u64 = self.node.iter().map(|n| n.nr_slabs.load(Relaxed)).sum();
        let num_objs: u64 = self.node.iter().map(|n| n.total_objects.load(Relaxed)).sum();
        let free_on_nodes: u64 = self.node.iter().map(count_partial_free).sum();
        let slabs_on_cpus = self
            .cpu_slab
            .iter()
            .map(|c| {
                let c = c.0.lock();
                u64::from(c.slab.is_some()) + c.partial.len() as u64
            })
            .sum();
        let all: Vec<Arc<Slab<L>>> = self.slabs.lock().values().cloned().collect();
        let objects_in_use = all.iter().map(|s| u64::from(s.state.lock().inuse)).sum();
        let pages = all.iter().map(|s| 1u64 << s.order.0).sum();
        SlabInfo {
            name: l.name.clone(),
            active_objs: num_objs.saturating_sub(free_on_nodes),
            num_objs,
            objsize: l.size,
            objperslab: l.oo.objects,
            pagesperslab: 1 << l.oo.order.0,
            active_slabs: num_slabs,
            num_slabs,
            objects_in_use,
            slabs_on_cpus,
            pages,
        }
    }

    /// Check every invariant of the cache's lists and slabs (for tests): each slab is where
    /// its `place` says and nowhere else, its freelists hold exactly its free objects, and the
    /// node counts match. Takes every lock, so it sees a consistent state even while other
    /// threads run.
    pub fn validate(&self) -> Result<(), String> {
        let cpus: Vec<_> = self.cpu_slab.iter().map(|c| c.0.lock()).collect();
        let nodes: Vec<_> = self.node.iter().map(|n| n.list_lock.lock()).collect();
        let all: Vec<Arc<Slab<L>>> = self.slabs.lock().values().cloned().collect();
        let mut per_node = alloc::vec![(0u64, 0u64); self.node.len()];
        let mut listed = 0usize;
        for slab in &all {
            let st = slab.state.lock();
            check_slab(slab, &st)?;
            let entry = &mut per_node[slab.node.index()];
            entry.0 += 1;
            entry.1 += u64::from(slab.objects);
            let on_list = match st.place {
                Place::CpuSlab(c) => {
                    cpus[c.index()].slab.as_ref().is_some_and(|s| Arc::ptr_eq(s, slab))
                }
                Place::CpuPartial(c) => {
                    cpus[c.index()].partial.iter().any(|s| Arc::ptr_eq(s, slab))
                }
                Place::NodePartial(key) => {
                    nodes[slab.node.index()].list.get(&key).is_some_and(|s| Arc::ptr_eq(s, slab))
                }
                Place::Full => st.inuse == slab.objects,
                Place::Discarded => false,
            };
            if !on_list {
                return Err(format!("slab {} is not where it says: {:?}", slab.pfn, st.place));
            }
            listed += usize::from(!matches!(st.place, Place::Full));
            if matches!(st.place, Place::CpuPartial(_) | Place::NodePartial(_)) && st.nr_free() == 0
            {
                return Err(format!("slab {} is listed as partial but full", slab.pfn));
            }
        }
        let on_lists =
            cpus.iter().map(|c| usize::from(c.slab.is_some()) + c.partial.len()).sum::<usize>()
                + nodes.iter().map(|n| n.list.len()).sum::<usize>();
        if on_lists != listed {
            return Err(format!("{on_lists} list entries for {listed} listed slabs"));
        }
        for (i, n) in self.node.iter().enumerate() {
            let counted = (n.nr_slabs.load(Relaxed), n.total_objects.load(Relaxed));
            if counted != per_node[i] {
                return Err(format!("node {i}: counts {counted:?}, slabs hold {:?}", per_node[i]));
            }
        }
        Ok(())
    }

    /// Is `cpu` a CPU of this cache's page allocator?
    fn check_cpu(&self, cpu: Cpu) -> Result<(), SlabError> {
        if self.pa.cpu(cpu.id()) == Some(cpu) {
            Ok(())
        } else {
            Err(SlabError::InvalidCpu(cpu.id()))
        }
    }
}

/// Caller GFP bits a slab allocation replaces with the cache's: zones, mobility and
/// `__GFP_COMP` (the kernel strips `__GFP_DMA32 | __GFP_HIGHMEM` from slab requests and sets
/// the rest from the cache).
const CALLER_MASKED: u32 =
    Gfp::DMA.0 | Gfp::DMA32.0 | Gfp::HIGHMEM.0 | Gfp::MOVABLE.0 | Gfp::RECLAIMABLE.0 | Gfp::COMP.0;

/// `gfp` with `__GFP_COMP` for a slab above order 0 (slabs are compound pages).
fn comp(gfp: Gfp, oo: OrderObjects) -> Gfp {
    if oo.order.0 > 0 {
        gfp | Gfp::COMP
    } else {
        gfp
    }
}

/// Refuse a free of an object that is not allocated now.
fn check_allocated(st: &SlabState, obj: SlabObject) -> Result<(), SlabError> {
    if st.place == Place::Discarded || !st.is_allocated(obj.index) {
        return Err(SlabError::DoubleFree { slab: obj.slab, index: obj.index });
    }
    Ok(())
}

/// Free objects on a node's partial list (kernel `count_partial(n, count_free)`).
fn count_partial_free<L: RawLock>(n: &KmemCacheNode<L>) -> u64 {
    let lists = n.list_lock.lock();
    lists.list.values().map(|s| s.state.lock().nr_free() as u64).sum()
}

/// One slab's own invariants: counts agree with the bitmap and the freelists hold each free
/// object once.
fn check_slab<L: RawLock>(slab: &Slab<L>, st: &SlabState) -> Result<(), String> {
    let mut seen = alloc::vec![false; slab.objects as usize];
    for &i in st.freelist.iter().chain(st.cpu_freelist.iter()) {
        let Some(s) = seen.get_mut(i as usize) else {
            return Err(format!("slab {}: free object {i} out of range", slab.pfn));
        };
        if *s || st.is_allocated(i) {
            return Err(format!("slab {}: object {i} listed twice or allocated", slab.pfn));
        }
        *s = true;
    }
    if st.inuse as usize + st.nr_free() != slab.objects as usize {
        return Err(format!(
            "slab {}: {} in use + {} free != {} objects",
            slab.pfn,
            st.inuse,
            st.nr_free(),
            slab.objects
        ));
    }
    if !st.cpu_freelist.is_empty() && !matches!(st.place, Place::CpuSlab(_)) {
        return Err(format!("slab {}: a CPU freelist while {:?}", slab.pfn, st.place));
    }
    Ok(())
}

impl Layout {
    /// The cache's fixed parameters (kernel `kmem_cache_open` → `calculate_sizes`,
    /// `set_min_partial`, `set_cpu_partial`).
    fn new(
        name: &str,
        object_size: u32,
        align: u32,
        flags: SlabFlags,
        cfg: &SlubConfig,
        nr_cpus: u32,
    ) -> Result<Layout, SlabError> {
        if object_size == 0 || u64::from(object_size) > MAX_OBJECT_SIZE {
            return Err(SlabError::BadSize { size: u64::from(object_size) });
        }
        if align != 0 && (!align.is_power_of_two() || u64::from(align) > MAX_OBJECT_SIZE) {
            return Err(SlabError::BadAlign(align));
        }
        let align = order::calculate_alignment(
            flags.contains(SlabFlags::HWCACHE_ALIGN),
            align,
            object_size,
        );
        let size = object_size.next_multiple_of(order::WORD_SIZE).next_multiple_of(align);
        let slab_order = order::calculate_order(size, nr_cpus, cfg)
            .ok_or(SlabError::BadSize { size: u64::from(object_size) })?;
        let oo = OrderObjects::new(slab_order, size);
        let min = OrderObjects::new(pagealloc::Order(order::get_order(u64::from(size))), size);
        let mut allocflags = Gfp(0);
        if flags.contains(SlabFlags::RECLAIM_ACCOUNT) {
            allocflags |= Gfp::RECLAIMABLE;
        }
        if flags.contains(SlabFlags::CACHE_DMA) {
            allocflags |= Gfp::DMA;
        }
        let cpu_partial = order::cpu_partial(size, cfg.cpu_partial);
        Ok(Layout {
            name: name.into(),
            object_size,
            size,
            align,
            flags,
            oo,
            min,
            allocflags,
            min_partial: order::min_partial(size),
            cpu_partial,
            cpu_partial_slabs: if cfg.cpu_partial {
                order::cpu_partial_slabs(cpu_partial, oo.objects)
            } else {
                0
            },
            has_cpu_partial: cfg.cpu_partial,
        })
    }
}

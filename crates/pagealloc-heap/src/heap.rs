//! [`PageHeap`]: the page allocator over an `mmap`ed arena, its options and errors, and
//! allocator-api2's `Allocator` for it.

use std::alloc::Layout;
use std::fmt;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use pagealloc::lock_api::RawMutex;
use pagealloc::page_alloc::zone_metadata_bytes;
use pagealloc::types::{MAX_PAGE_ORDER, PAGE_SHIFT, PAGE_SIZE};
use pagealloc::{
    AllocError, AllocRequest, BuildError, Cpu, CpuId, EventSink, FreeError, Gfp, MemoryMap,
    NoEvents, NodeId, Order, PageAllocator, PageFragCache, Pfn, Policy, Tunables, Zone, ZoneLimits,
};

use crate::arena::{Arena, HugePages};
use crate::block::{block_bytes, pfn_of, BlockFreeError, FragToken, PageBlock, SourceId};
use crate::cacheinfo;
use crate::cpu::CpuSource;
use crate::lock::YieldLock;

/// Why an arena or a heap could not be set up.
#[derive(Debug)]
#[non_exhaustive]
pub enum HeapError {
    /// The size is zero, not a whole number of pages (of 2 MiB pages with
    /// [`HugePages::Hugetlb`]), or overflows.
    BadSize(usize),
    /// `mmap` failed.
    Map(std::io::Error),
    /// `madvise` failed.
    Advise(std::io::Error),
    /// The allocator refused the memory map.
    Build(BuildError),
    /// The heap's GFP flags name no zone ([`AllocError::ImpossibleZones`]): every allocation
    /// would fail.
    Flags(AllocError),
}

impl fmt::Display for HeapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeapError::BadSize(n) => write!(f, "arena size {n} is not a non-zero number of pages"),
            HeapError::Map(e) => write!(
                f,
                "mmap of the arena failed: {e} (with hugetlb pages, vm.nr_hugepages must cover \
                 the arena plus 4 MiB)"
            ),
            HeapError::Advise(e) => write!(f, "madvise(MADV_HUGEPAGE) failed: {e}"),
            HeapError::Build(e) => write!(f, "building the allocator: {e}"),
            HeapError::Flags(e) => write!(f, "the heap's allocation flags: {e}"),
        }
    }
}

impl std::error::Error for HeapError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HeapError::Map(e) | HeapError::Advise(e) => Some(e),
            HeapError::Build(e) => Some(e),
            HeapError::Flags(e) => Some(e),
            HeapError::BadSize(_) => None,
        }
    }
}

/// How to build a [`PageHeap`]: start from [`HeapOptions::new`] and change fields, on a
/// mutable value or with [`with`](HeapOptions::with):
/// `HeapOptions::new(bytes).with(|o| o.cpus = Some(4))`.
///
/// `#[non_exhaustive]`, so a field added later is not a breaking change (which is why the
/// struct-update form is not available outside the crate).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HeapOptions {
    /// Arena size in bytes (a multiple of 4 KiB; of 2 MiB with [`HugePages::Hugetlb`]).
    pub bytes: usize,
    /// CPUs of the allocator's machine; `None`: the CPUs the system has configured. A thread on
    /// host CPU `c` uses allocator CPU `c % cpus`.
    pub cpus: Option<u32>,
    /// Policy of the allocator.
    pub policy: Policy,
    /// Tunables of the allocator.
    pub tunables: Tunables,
    /// GFP flags of every allocation but [`PageHeap::alloc_block_with`]'s and
    /// [`PageHeap::frag_alloc`]'s.
    pub gfp: Gfp,
    /// Huge-page backing of the arena.
    pub huge: HugePages,
    /// Fault every page of the arena in at start (part of [`PageHeap::init_time`]).
    pub prefault: bool,
    /// Ask for the arena low in the address space (at 1 TiB, a hint the kernel may refuse), so
    /// its frame numbers fit in 32 bits.
    pub low_address: bool,
    /// Time every zone-lock hold (the allocator's `zone_lock_held_ns` counter): two clock
    /// reads per hold.
    pub time_zone_locks: bool,
}

impl HeapOptions {
    /// `bytes` of arena, the modern policy, default tunables, GFP_KERNEL, every system CPU,
    /// 4 KiB pages, nothing prefaulted, the arena wherever the kernel puts it, no lock timing.
    pub fn new(bytes: usize) -> HeapOptions {
        HeapOptions {
            bytes,
            cpus: None,
            policy: Policy::modern(),
            tunables: Tunables::default(),
            gfp: Gfp::KERNEL,
            huge: HugePages::None,
            prefault: false,
            low_address: false,
            time_zone_locks: false,
        }
    }

    /// These options with `change` applied.
    ///
    /// ```
    /// use pagealloc_heap::HeapOptions;
    ///
    /// let o = HeapOptions::new(16 << 20).with(|o| o.cpus = Some(2));
    /// assert_eq!((o.bytes, o.cpus), (16 << 20, Some(2)));
    /// ```
    #[must_use]
    pub fn with(mut self, change: impl FnOnce(&mut HeapOptions)) -> HeapOptions {
        change(&mut self);
        self
    }
}

/// The page allocator over real memory: an `mmap`ed arena whose frames a [`PageAllocator`]
/// manages. Hands out blocks of `4096 << order` bytes (orders 0..=10), aligned to their size:
/// by raw pointer ([`alloc_pages`](Self::alloc_pages)), as tokens
/// ([`alloc_block_with`](Self::alloc_block_with)), as page_frag fragments
/// ([`frag_alloc`](Self::frag_alloc)) and through allocator-api2's `Allocator` (features
/// `allocator-api2` and `allocator-api2-04`), which rounds a layout up to a block
/// ([`order_for`](Self::order_for)).
///
/// `E` is the allocator's event sink ([`NoEvents`] unless the caller records events), `L` its
/// lock ([`YieldLock`], see the crate docs). The heap is `Sync` when its allocator is: share
/// it by reference between threads; each call runs on the calling thread's CPU
/// ([`current_cpu`](Self::current_cpu)).
///
/// Dropping the heap unmaps the arena. Every token, fragment and `&PageHeap` allocator borrows
/// the heap, so safe code cannot outlive it; raw pointers from `alloc_pages` must not be used
/// after it.
#[derive(Debug)]
pub struct PageHeap<E: EventSink = NoEvents, L: RawMutex = YieldLock> {
    pa: PageAllocator<E, L>,
    /// The allocator's CPUs, by allocator CPU number; host CPU `c` uses `cpus[c % len]`.
    cpus: Box<[Cpu]>,
    cpu_source: CpuSource,
    /// The heap's flags, decoded once ([`PageAllocator::prepare`]): its own allocations
    /// take the prepared path.
    req: AllocRequest,
    id: SourceId,
    init_time: Duration,
    /// Declared last: unmapped after the allocator (which never touches the memory) is gone.
    pub(crate) arena: Arena,
}

impl PageHeap {
    /// Map an arena and build an allocator over it with every frame free.
    ///
    /// # Errors
    ///
    /// [`HeapError`] when the size is not a whole number of pages, the mapping fails, or the
    /// allocator refuses the memory map.
    pub fn new(opts: &HeapOptions) -> Result<PageHeap, HeapError> {
        PageHeap::with_events(opts, NoEvents)
    }

    /// The order of the block that serves `layout`: size and alignment rounded up to a
    /// power-of-two number of pages (at least one). `None` above order 10.
    ///
    /// ```
    /// use std::alloc::Layout;
    /// use pagealloc::Order;
    /// use pagealloc_heap::PageHeap;
    ///
    /// assert_eq!(PageHeap::order_for(Layout::new::<u8>()), Some(Order(0)));
    /// assert_eq!(PageHeap::order_for(Layout::array::<u8>(4097).unwrap()), Some(Order(1)));
    /// assert_eq!(PageHeap::order_for(Layout::array::<u8>(5 << 20).unwrap()), None);
    /// ```
    pub fn order_for(layout: Layout) -> Option<Order> {
        let bytes = layout.size().max(layout.align()).max(PAGE_SIZE as usize);
        let pages = bytes.div_ceil(PAGE_SIZE as usize).checked_next_power_of_two()?;
        let order = pages.trailing_zeros() as u8;
        (order <= MAX_PAGE_ORDER).then_some(Order(order))
    }
}

impl<E: EventSink> PageHeap<E> {
    /// [`new`](PageHeap::new) with an allocator that reports its events to `sink`.
    ///
    /// # Errors
    ///
    /// As [`new`](PageHeap::new).
    pub fn with_events(opts: &HeapOptions, sink: E) -> Result<PageHeap<E>, HeapError> {
        PageHeap::with_lock(opts, sink)
    }
}

impl<E: EventSink, L: RawMutex> PageHeap<E, L> {
    /// [`with_events`](PageHeap::with_events) with locks of type `L` (named by the type:
    /// `PageHeap::<E, L>::with_lock`).
    ///
    /// The allocator learns each CPU's caches from sysfs ([`cacheinfo::read`]; where sysfs
    /// says nothing they stay unknown, which leaves FREE_HIGH_BATCH off).
    ///
    /// # Errors
    ///
    /// As [`new`](PageHeap::new).
    pub fn with_lock(opts: &HeapOptions, sink: E) -> Result<PageHeap<E, L>, HeapError> {
        let started = Instant::now();
        let arena = Arena::map(opts.bytes, opts.huge, opts.prefault, opts.low_address)?;
        let cpus = opts.cpus.unwrap_or_else(configured_cpus).max(1);
        let mut map = MemoryMap::new();
        map.with_zone_limits(ZoneLimits::NORMAL_ONLY);
        map.add_range(NodeId(0), arena.base as u64..(arena.base + arena.len) as u64)
            .map_err(|e| HeapError::Build(e.into()))?
            .set_cpus(NodeId(0), cpus)
            .map_err(|e| HeapError::Build(e.into()))?;
        let mut pa = PageAllocator::with_lock(map, opts.tunables, opts.policy, sink)
            .map_err(HeapError::Build)?;
        if opts.time_zone_locks {
            pa = pa.with_clock(monotonic_ns);
        }
        // FREE_HIGH_BATCH needs each CPU's share of its last-level cache.
        let sysfs = std::path::Path::new(cacheinfo::SYSFS_CPU_ROOT);
        for c in 0..pa.nr_cpus() {
            if let Some(cache) = cacheinfo::read(sysfs, c) {
                pa.set_cpu_cache(CpuId(c), cache);
            }
        }
        let cpus = (0..pa.nr_cpus()).filter_map(|c| pa.cpu(CpuId(c))).collect();
        let req = pa.prepare(opts.gfp).map_err(HeapError::Flags)?;
        let init_time = started.elapsed();
        Ok(PageHeap {
            pa,
            cpus,
            cpu_source: CpuSource::detect(),
            req,
            id: SourceId::unique(),
            init_time,
            arena,
        })
    }

    /// The allocator underneath (for counters, validation, snapshots, compaction).
    pub fn allocator(&self) -> &PageAllocator<E, L> {
        &self.pa
    }

    /// The id this heap's tokens carry.
    pub fn source_id(&self) -> SourceId {
        self.id
    }

    /// Time to map the arena and build the allocator over it (every frame freed to the buddy
    /// lists), measured once when the heap was built.
    pub fn init_time(&self) -> Duration {
        self.init_time
    }

    /// Bytes of allocator metadata per managed frame: the per-frame array plus every zone's
    /// fixed parts (the zone, its pagesets, its pageblock flags) and the allocator itself,
    /// spread over the frames.
    pub fn metadata_bytes_per_frame(&self) -> f64 {
        let per_zone: usize = (self.pa.zones().iter())
            .map(|z: &Zone<L>| zone_metadata_bytes(z.spanned_pages(), self.pa.nr_cpus()))
            .sum();
        let total = per_zone + size_of::<PageAllocator<E, L>>();
        total as f64 / self.pa.managed_pages().0.max(1) as f64
    }

    /// Where [`current_cpu`](Self::current_cpu) reads the CPU number from.
    pub fn cpu_source(&self) -> CpuSource {
        self.cpu_source
    }

    /// The allocator CPU to use for the calling thread: the CPU it runs on, folded into the
    /// allocator's CPU count.
    #[inline]
    pub fn current_cpu(&self) -> Cpu {
        let c = self.cpu_source.cpu();
        // A negative number (no CPU known) converts to an index beyond every table.
        match self.cpus.get(c as usize) {
            Some(&cpu) => cpu,
            None => self.fold_cpu(c),
        }
    }

    /// [`current_cpu`](Self::current_cpu) for a host CPU beyond the allocator's CPU count
    /// (folded into it) or an unknown one (CPU 0): out of line, off the common path.
    #[cold]
    #[inline(never)]
    fn fold_cpu(&self, c: i32) -> Cpu {
        let i = usize::try_from(c).unwrap_or(0);
        self.cpus[i % self.cpus.len()]
    }

    /// Allocate a block of `4096 << order` bytes, aligned to its size, on the current CPU.
    /// Its contents are whatever the last user left (zero on first use). The pointer is valid
    /// for reads and writes of the whole block until the block is given back with
    /// [`dealloc`](Self::dealloc) or the heap is dropped, whichever comes first.
    ///
    /// # Errors
    ///
    /// The allocator's [`AllocError`]: no block of `order` within the watermarks, or an order
    /// above 10.
    #[inline]
    pub fn alloc_pages(&self, order: Order) -> Result<NonNull<u8>, AllocError> {
        let pfn = self.pa.alloc_prepared(self.current_cpu(), &self.req, order)?;
        self.block_at(pfn, order)
    }

    /// A block of `order` from the allocator with `gfp`, as a pointer into the arena.
    #[inline]
    fn alloc_raw(&self, gfp: Gfp, order: Order) -> Result<NonNull<u8>, AllocError> {
        let pfn = self.pa.alloc_pages(self.current_cpu(), gfp, order)?;
        self.block_at(pfn, order)
    }

    /// The address of the block at `pfn`, which the allocator handed out.
    #[inline]
    fn block_at(&self, pfn: Pfn, order: Order) -> Result<NonNull<u8>, AllocError> {
        let addr = (pfn.0 as usize) << PAGE_SHIFT;
        debug_assert!(self.arena.contains(addr, block_bytes(order.0)));
        // The address is inside the arena (the allocator hands out only frames of the map),
        // hence non-null.
        NonNull::new(addr as *mut u8).ok_or(AllocError::OutOfMemory { order })
    }

    /// Give back a block [`alloc_pages`](Self::alloc_pages) returned. A pointer that is not
    /// the start of a block allocated with exactly this order — freed already, foreign to the
    /// arena, misaligned, a tail page, another order — is refused with an error and changes
    /// nothing.
    ///
    /// # Errors
    ///
    /// [`FreeError::ForeignFrame`] outside the arena, else the allocator's refusal.
    ///
    /// # Safety
    ///
    /// If `ptr` is a live block of this heap of this order, the call ends its life: nothing
    /// may read or write the block afterwards through any pointer obtained before the call
    /// (the heap will hand the memory to someone else). For any other `ptr` the call is
    /// refused and has no effect, so it cannot cause harm.
    #[inline]
    pub unsafe fn dealloc(&self, ptr: NonNull<u8>, order: Order) -> Result<(), FreeError> {
        let addr = ptr.as_ptr() as usize;
        let pfn = pfn_of(addr);
        if !self.arena.contains(addr, PAGE_SIZE as usize) {
            return Err(FreeError::ForeignFrame(pfn));
        }
        self.pa.free_pages(self.current_cpu(), pfn, order)
    }

    /// A block of `order` on the current CPU with the heap's GFP flags, as a token
    /// ([`free_block`](Self::free_block) gives it back).
    ///
    /// # Errors
    ///
    /// As [`alloc_pages`](Self::alloc_pages).
    #[inline]
    pub fn alloc_block(&self, order: Order) -> Result<PageBlock<'_>, AllocError> {
        let ptr = self.alloc_pages(order)?;
        Ok(PageBlock::new(ptr, order.0, self.id))
    }

    /// A block of `order` on the current CPU with `gfp`'s constraints instead of the heap's
    /// own flags (a movable block compaction may move, say), as a token.
    ///
    /// # Errors
    ///
    /// As [`alloc_pages`](Self::alloc_pages).
    #[inline]
    pub fn alloc_block_with(&self, gfp: Gfp, order: Order) -> Result<PageBlock<'_>, AllocError> {
        let ptr = self.alloc_raw(gfp, order)?;
        Ok(PageBlock::new(ptr, order.0, self.id))
    }

    /// Give a block token back.
    ///
    /// # Errors
    ///
    /// [`BlockFreeError::Foreign`] for a token of another source (the block is leaked, not
    /// freed), [`BlockFreeError::Refused`] if the allocator refuses the free.
    #[inline]
    pub fn free_block(&self, block: PageBlock<'_>) -> Result<(), BlockFreeError> {
        if block.source != self.id {
            return Err(BlockFreeError::Foreign);
        }
        // SAFETY: the token was the only handle on this live block and is consumed here.
        unsafe { self.dealloc(block.ptr, Order(block.order)) }.map_err(BlockFreeError::Refused)
    }

    /// Carve a fragment from `cache` on the current CPU (kernel `page_frag_alloc`): `len`
    /// bytes rounded to a multiple of 8 in 16..=4096, 8-byte aligned. `cache` must serve
    /// only this heap.
    ///
    /// # Errors
    ///
    /// The allocator's, when the cache needs a new page and none is left.
    pub fn frag_alloc(
        &self,
        cache: &mut PageFragCache,
        len: u32,
        gfp: Gfp,
    ) -> Result<FragToken<'_>, AllocError> {
        let len = len.clamp(16, PAGE_SIZE as u32) & !7;
        let frag = cache.alloc(&self.pa, self.current_cpu(), len, gfp, 8)?;
        debug_assert!(self
            .arena
            .contains(((frag.page.0 as usize) << PAGE_SHIFT) + frag.offset as usize, len as usize));
        Ok(FragToken::new(frag, len))
    }

    /// Give a fragment back (kernel `page_frag_free`); the last one of a page the cache has
    /// let go of frees the page.
    ///
    /// # Errors
    ///
    /// The allocator's refusal (a fragment of another heap, say).
    pub fn frag_free(&self, frag: FragToken<'_>) -> Result<(), FreeError> {
        self.pa.page_frag_free(self.current_cpu(), frag.frag.page)
    }

    /// Let go of `cache`'s page (kernel `page_frag_cache_drain`): freed now if no fragment of
    /// it is out, else by the last [`frag_free`](Self::frag_free).
    ///
    /// # Errors
    ///
    /// Refused (the cache keeps its page) if the cache carves a page of another heap.
    pub fn frag_drain(&self, cache: &mut PageFragCache) -> Result<(), FreeError> {
        cache.drain(&self.pa, self.current_cpu())
    }

    /// Keep the block when the new layout needs the same order, else move to a new block: the
    /// `Allocator` impls' `grow` and `shrink`. `None` (and the old block kept) when the new
    /// layout needs more than order 10 or no block of its order is left.
    ///
    /// # Safety
    ///
    /// `ptr` is a live block of this heap whose layout fits `old`.
    #[cfg(any(feature = "allocator-api2", feature = "allocator-api2-04"))]
    unsafe fn resize(&self, ptr: NonNull<u8>, old: Layout, new: Layout) -> Option<NonNull<[u8]>> {
        let old_order = PageHeap::order_for(old)?;
        let new_order = PageHeap::order_for(new)?;
        if new_order == old_order {
            return Some(NonNull::slice_from_raw_parts(ptr, block_bytes(old_order.0)));
        }
        let fresh = self.alloc_pages(new_order).ok()?;
        let n = old.size().min(new.size());
        // SAFETY: `ptr` is valid for `old.size()` bytes (caller), `fresh` for
        // `block_bytes(new_order) >= new.size()` bytes; distinct live blocks never overlap.
        unsafe { std::ptr::copy_nonoverlapping(ptr.as_ptr(), fresh.as_ptr(), n) };
        // SAFETY: the old block is live (caller) and its contents were moved out above; the
        // Allocator contract forbids the caller from using `ptr` after a successful resize.
        let r = unsafe { self.dealloc(ptr, old_order) };
        debug_assert!(r.is_ok(), "resize freed a block the heap refused: {r:?}");
        Some(NonNull::slice_from_raw_parts(fresh, block_bytes(new_order.0)))
    }
}

/// `Allocator` for `PageHeap`, for one version of the `allocator-api2` crate: the 0.2 trait
/// (what hashbrown and most of the ecosystem take) and the 0.4 one. Both have the same shape;
/// the bodies are written once, here.
#[cfg(any(feature = "allocator-api2", feature = "allocator-api2-04"))]
macro_rules! page_heap_allocator {
    ($api:ident) => {
        // SAFETY (the trait's contract): a returned block is memory of the arena, valid for
        // reads and writes of its whole length (`4096 << order` >= the layout's size), aligned
        // to its length (>= the layout's alignment), and stays valid until deallocated or the
        // heap is dropped — the heap cannot be dropped or moved while `&PageHeap` allocators
        // exist. The allocator never hands the same frame to two live blocks (frame
        // ownership in the core). Cloning `&PageHeap` gives the same heap, so any copy may
        // free any block.
        unsafe impl<E: EventSink, L: RawMutex> $api::alloc::Allocator for PageHeap<E, L> {
            fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, $api::alloc::AllocError> {
                let order = PageHeap::order_for(layout).ok_or($api::alloc::AllocError)?;
                let ptr = self.alloc_pages(order).map_err(|_| $api::alloc::AllocError)?;
                Ok(NonNull::slice_from_raw_parts(ptr, block_bytes(order.0)))
            }

            unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
                // A layout that fits the block rounds to the block's order (any size between
                // the requested one and the block length does, and the alignment is the one
                // requested).
                let Some(order) = PageHeap::order_for(layout) else { return };
                // SAFETY: the caller guarantees `ptr` is a live block of this heap allocated
                // for a layout fitting `layout`, and gives up access to it.
                let r = unsafe { self.dealloc(ptr, order) };
                debug_assert!(
                    r.is_ok(),
                    "Allocator::deallocate of a block the heap refused: {r:?}"
                );
            }

            unsafe fn grow(
                &self,
                ptr: NonNull<u8>,
                old_layout: Layout,
                new_layout: Layout,
            ) -> Result<NonNull<[u8]>, $api::alloc::AllocError> {
                // SAFETY: forwarded contract (ptr is live with old_layout; new size >= old).
                unsafe { self.resize(ptr, old_layout, new_layout) }.ok_or($api::alloc::AllocError)
            }

            unsafe fn shrink(
                &self,
                ptr: NonNull<u8>,
                old_layout: Layout,
                new_layout: Layout,
            ) -> Result<NonNull<[u8]>, $api::alloc::AllocError> {
                // SAFETY: forwarded contract (ptr is live with old_layout; new size <= old).
                unsafe { self.resize(ptr, old_layout, new_layout) }.ok_or($api::alloc::AllocError)
            }
        }
    };
}

#[cfg(feature = "allocator-api2")]
page_heap_allocator!(allocator_api2);
#[cfg(feature = "allocator-api2-04")]
page_heap_allocator!(allocator_api2_04);

/// CPUs the system has configured (what `sched_getcpu` may answer), at least 1.
pub(crate) fn configured_cpus() -> u32 {
    // SAFETY: sysconf reads a system constant; no memory of ours is involved.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    if n > 0 {
        n as u32
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
    }
}

/// Nanoseconds on the monotonic clock since its first read in this process.
fn monotonic_ns() -> u64 {
    static BASE: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    u64::try_from(BASE.get_or_init(Instant::now).elapsed().as_nanos()).unwrap_or(u64::MAX)
}

//! Real memory: [`PageHeap`], the page allocator over an `mmap`ed arena, and the page sources
//! `pagealloc bench` compares it with.
//!
//! This is the one module of the project whose code touches raw memory, so it is the one
//! module allowed `unsafe` (the workspace denies it everywhere else); every `unsafe` block
//! carries a `// SAFETY:` argument. Everything it exports is safe to use except
//! [`PageHeap::dealloc`], which gives memory back by raw pointer. Writing into the arena by
//! frame number ([`FrameHeap::touch`]) is offered only by [`FrameHeap`], which hands out no
//! references to its memory.
//!
//! # Frames and addresses
//!
//! The arena is aligned to the largest block (4 MiB, order 10), and a frame number is the
//! *virtual* page number of its address: `pfn = addr >> 12`. Block alignment in frames is then
//! alignment in bytes, and turning one into the other is a shift. The whole arena is one
//! ZONE_NORMAL ([`ZoneLimits::NORMAL_ONLY`]) of one node.
//!
//! # Blocks as tokens
//!
//! The benchmark handles blocks through [`PageBlock`], an owned token (not `Clone`, built only
//! here) that remembers which source handed it out and its order. Freeing consumes it, so safe
//! code can neither free a block twice nor free it into the wrong allocator, and
//! [`PageBlock::touch`] can write the block's first bytes without `unsafe` at the call site.
//!
//! # The lock
//!
//! A [`PageHeap`]'s allocator locks its zones and pagesets with [`YieldLock`], a spin lock
//! that yields the CPU after a bounded spin: user-space threads are preempted, and with more
//! threads than CPUs a waiter that only spins burns its time slice while the holder waits for
//! a CPU (`pagealloc stress --threads 1024` on 2 CPUs did not finish with the core's spin lock).
//! It lives here and not in the core because yielding needs `std` and the core is `no_std`.

use std::alloc::{GlobalAlloc, Layout};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use allocator_api2::alloc::AllocError as ApiAllocError;
use buddy_system_allocator::LockedFrameAllocator;
use pagealloc::lock_api::{GuardSend, RawMutex};
use pagealloc::sizing::zone_metadata_bytes;
use pagealloc::types::{MAX_PAGE_ORDER, PAGE_SHIFT, PAGE_SIZE};
use pagealloc::{
    AllocError, BuildError, Cpu, CpuId, EventSink, Frag, FreeError, Gfp, MemoryMap, Migrate,
    NoEvents, NodeId, Order, PageAllocator, PageFragCache, Pfn, Policy, RawSpinLock, Target,
    Tunables, Zone, ZoneLimits,
};

/// Bytes of the largest block (order [`MAX_PAGE_ORDER`]); arenas are aligned to it.
const MAX_BLOCK_BYTES: usize = (PAGE_SIZE as usize) << MAX_PAGE_ORDER;

/// Bytes in a block of `order`.
#[inline]
pub const fn block_bytes(order: u8) -> usize {
    (PAGE_SIZE as usize) << order
}

/// Start loading the cache line holding `*p` into the cache: a hint that changes nothing a
/// program can observe (the model's own speed). x86-64 only; elsewhere it does nothing.
#[inline(always)]
pub fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults or writes memory, and `p` is a valid reference.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(p).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

// ---------------------------------------------------------------------------------------------
// The arena

/// How the arena is backed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum HugePages {
    /// Ordinary 4 KiB pages (whatever the system's THP setting does to an anonymous mapping).
    #[default]
    None,
    /// Ask for transparent huge pages (`madvise(MADV_HUGEPAGE)`).
    Thp,
    /// Map 2 MiB pages from the hugetlb pool (`MAP_HUGETLB`); needs `vm.nr_hugepages`.
    Hugetlb,
}

/// Why an arena or a heap could not be set up.
#[derive(Debug)]
pub enum HeapError {
    /// The size is zero, not a whole number of pages, or overflows.
    BadSize(usize),
    /// `mmap` failed.
    Map(std::io::Error),
    /// `madvise` failed.
    Advise(std::io::Error),
    /// The allocator refused the memory map.
    Build(BuildError),
}

impl fmt::Display for HeapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeapError::BadSize(n) => write!(f, "arena size {n} is not a non-zero number of pages"),
            HeapError::Map(e) => write!(
                f,
                "mmap of the arena failed: {e} (with --huge hugetlb, vm.nr_hugepages must cover \
                 the arena plus 4 MiB)"
            ),
            HeapError::Advise(e) => write!(f, "madvise(MADV_HUGEPAGE) failed: {e}"),
            HeapError::Build(e) => write!(f, "building the allocator: {e}"),
        }
    }
}

impl std::error::Error for HeapError {}

/// The frame of the page at `addr`: its virtual page number.
#[inline]
fn pfn_of(addr: usize) -> Pfn {
    Pfn((addr >> PAGE_SHIFT) as u64)
}

/// Where [`HeapOptions::low_address`] asks the kernel to map the arena: 1 TiB, so that frame
/// numbers (virtual page numbers) stay far below 2^32 for arenas up to 15 TiB.
const LOW_ARENA_HINT: usize = 1 << 40;

/// An anonymous private mapping of `len` bytes whose start is aligned to 4 MiB. Unmapped on
/// drop. Holds addresses as integers (it hands out no references), so it is `Send + Sync`.
#[derive(Debug)]
struct Arena {
    base: usize,
    len: usize,
}

impl Arena {
    fn map(len: usize, huge: HugePages, prefault: bool, low: bool) -> Result<Arena, HeapError> {
        let granule = if huge == HugePages::Hugetlb { 2 << 20 } else { PAGE_SIZE as usize };
        if len == 0 || len % granule != 0 {
            return Err(HeapError::BadSize(len));
        }
        let over = len.checked_add(MAX_BLOCK_BYTES).ok_or(HeapError::BadSize(len))?;
        // Hugetlb pages are reserved at mmap time (no MAP_NORESERVE): an empty pool fails
        // here with ENOMEM instead of raising SIGBUS at the first touch.
        let flags = libc::MAP_PRIVATE
            | libc::MAP_ANONYMOUS
            | if huge == HugePages::Hugetlb { libc::MAP_HUGETLB } else { libc::MAP_NORESERVE };
        let hint = if low { LOW_ARENA_HINT as *mut libc::c_void } else { std::ptr::null_mut() };
        // SAFETY: an anonymous mapping at an address of the kernel's choosing (a hint at most,
        // no MAP_FIXED: the kernel never replaces an existing mapping) cannot alias any
        // existing Rust object; all arguments are plain values.
        let p = unsafe { libc::mmap(hint, over, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0) };
        if p == libc::MAP_FAILED {
            return Err(HeapError::Map(std::io::Error::last_os_error()));
        }
        let start = p as usize;
        let base = start.next_multiple_of(MAX_BLOCK_BYTES);
        let head = base - start;
        let tail = over - head - len;
        // Give back the unaligned slack before and after the aligned part. Both pieces are
        // multiples of the granule: `start` is granule-aligned, and so are 4 MiB and `len`.
        if head > 0 {
            // SAFETY: `start..base` is part of the mapping just made, nothing refers to it.
            unsafe { libc::munmap(p, head) };
        }
        if tail > 0 {
            // SAFETY: `base+len..start+over` is the end of the same mapping, unreferenced.
            unsafe { libc::munmap((base + len) as *mut libc::c_void, tail) };
        }
        let arena = Arena { base, len };
        if huge == HugePages::Thp {
            // SAFETY: advice on a range this arena owns; it changes no contents.
            let r = unsafe { libc::madvise(base as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
            if r != 0 {
                return Err(HeapError::Advise(std::io::Error::last_os_error()));
            }
        }
        if prefault {
            // MAP_POPULATE does not combine with the trimming above; touch instead. The
            // memory is anonymous zero-filled, and no reference to it exists yet.
            for off in (0..len).step_by(granule) {
                // SAFETY: `base + off` is inside the mapping, writable, and unreferenced.
                unsafe { std::ptr::write_volatile((base + off) as *mut u8, 0) };
            }
        }
        Ok(arena)
    }

    #[inline]
    fn contains(&self, addr: usize, bytes: usize) -> bool {
        addr >= self.base && addr.checked_add(bytes).is_some_and(|end| end <= self.base + self.len)
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: the range is the mapping this arena made and owns. Every block token and
        // every `&PageHeap` allocator borrows the arena's owner, and we are being dropped, so
        // no safe code can still reach the memory; raw pointers from `alloc_pages` kept past
        // this point may not be dereferenced (the heap's documentation says so).
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

// ---------------------------------------------------------------------------------------------
// Blocks and sources

/// Ids of sources, so a block can say where it came from.
static NEXT_SOURCE_ID: AtomicU32 = AtomicU32::new(1);

fn next_source_id() -> u32 {
    NEXT_SOURCE_ID.fetch_add(1, Relaxed)
}

/// A block of `4096 << order` bytes, page-aligned (and, from the buddy allocators, aligned to
/// its size), owned by whoever holds the token. The token borrows its source (`'a`), so the
/// source — and the memory behind it — outlives the block. Dropping the token leaks the block;
/// give it back with [`PageSource::free_block`].
#[derive(Debug)]
pub struct PageBlock<'a> {
    ptr: NonNull<u8>,
    order: u8,
    source: u32,
    _source: PhantomData<&'a ()>,
}

// SAFETY: a block is plain memory with no thread affinity; every source here accepts a free
// from any thread (PageHeap and the frame allocator lock; the global allocators are
// thread-safe by the GlobalAlloc contract). The token is the only handle on the block.
unsafe impl Send for PageBlock<'_> {}

impl<'a> PageBlock<'a> {
    #[inline]
    fn new(ptr: NonNull<u8>, order: u8, source: u32) -> PageBlock<'a> {
        PageBlock { ptr, order, source, _source: PhantomData }
    }

    /// The block's address.
    #[inline]
    pub fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// The block's order.
    #[inline]
    pub fn order(&self) -> u8 {
        self.order
    }

    /// Write `tag` into the block's first 8 bytes (touching its first page).
    #[inline]
    pub fn touch(&mut self, tag: u64) {
        // SAFETY: the token owns a live block of at least 4096 bytes, page-aligned, so 8 bytes
        // at its start are in bounds and aligned for a u64; the borrow `'a` keeps the source
        // (and its mapping) alive; `&mut self` excludes any other access through this token,
        // and no other token names the same block.
        unsafe { self.ptr.as_ptr().cast::<u64>().write_volatile(tag) }
    }

    /// Read back the first 8 bytes.
    #[inline]
    pub fn tag(&self) -> u64 {
        // SAFETY: as in `touch`; the bytes were written by `touch` or are the zero/garbage
        // contents of owned memory, which any u64 bit pattern may hold.
        unsafe { self.ptr.as_ptr().cast::<u64>().read_volatile() }
    }

    /// The block's first frame (its address in 4 KiB pages).
    #[inline]
    pub fn pfn(&self) -> Pfn {
        Pfn((self.addr() >> PAGE_SHIFT) as u64)
    }

    /// Write `words(i)` into the first and the last 8 bytes of each 4 KiB page `i` of the
    /// block, with relaxed atomic stores (see [`stamp_word`]).
    pub fn stamp_pages(&mut self, words: impl Fn(u64) -> [u64; 2]) {
        for i in 0..1u64 << self.order {
            let [first, last] = words(i);
            let page = self.addr() + ((i as usize) << PAGE_SHIFT);
            // SAFETY: both words are 8-aligned (the block is page-aligned) and inside page
            // `i` of the block the token owns, live while `'a` keeps its source alive.
            unsafe {
                stamp_word(page).store(first, Relaxed);
                stamp_word(page + PAGE_SIZE as usize - 8).store(last, Relaxed);
            }
        }
    }

    /// The first page `i` whose first and last words are not `words(i)`, with what they
    /// hold; `None` when every page holds its stamp.
    pub fn check_pages(&self, words: impl Fn(u64) -> [u64; 2]) -> Option<(u64, [u64; 2])> {
        (0..1u64 << self.order).find_map(|i| {
            let page = self.addr() + ((i as usize) << PAGE_SHIFT);
            // SAFETY: as in `stamp_pages`.
            let found = unsafe {
                [
                    stamp_word(page).load(Relaxed),
                    stamp_word(page + PAGE_SIZE as usize - 8).load(Relaxed),
                ]
            };
            (found != words(i)).then_some((i, found))
        })
    }

    /// A second token for the same block: the double ownership `pagealloc stress` must catch,
    /// made on purpose by its tests.
    #[cfg(test)]
    pub(crate) fn alias(&self) -> PageBlock<'a> {
        PageBlock::new(self.ptr, self.order, self.source)
    }
}

/// The 8-byte word at `addr`, accessed atomically. Stamps (`pagealloc stress`) are written and
/// read only through this, so a block the allocator wrongly gave to two owners at once is a
/// stamp that does not match — caught — never a data race.
///
/// # Safety
///
/// `addr` is 8-aligned and inside memory that stays mapped for `'a`, and no non-atomic access
/// to that word runs concurrently with the returned reference's use.
#[inline]
unsafe fn stamp_word<'a>(addr: usize) -> &'a AtomicU64 {
    // SAFETY: forwarded contract; AtomicU64 has the size and (given 8-alignment) the
    // alignment of u64.
    unsafe { AtomicU64::from_ptr(addr as *mut u64) }
}

/// A fragment of a [`PageHeap`]'s page_frag page: `len` bytes that the holder owns until it
/// gives them back with [`PageHeap::frag_free`]. Not `Clone`, built only here; dropping it
/// leaks the fragment's reference on its page.
#[derive(Debug)]
pub struct FragToken<'a> {
    frag: Frag,
    len: u32,
    _heap: PhantomData<&'a PageHeap>,
}

impl FragToken<'_> {
    /// The first frame of the page_frag page the fragment was carved from.
    #[inline]
    pub fn page(&self) -> Pfn {
        self.frag.page
    }

    /// The fragment's length in bytes.
    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }

    #[inline]
    fn addr(&self) -> usize {
        ((self.frag.page.0 as usize) << PAGE_SHIFT) + self.frag.offset as usize
    }

    /// Write `words` into the fragment's first and last 8 bytes (relaxed atomic stores).
    pub fn stamp(&mut self, words: [u64; 2]) {
        let a = self.addr();
        // SAFETY: `frag_alloc` hands out 8-aligned fragments of at least 16 bytes, a multiple
        // of 8, inside a page of the arena, which stays mapped while `'a` borrows the heap.
        unsafe {
            stamp_word(a).store(words[0], Relaxed);
            stamp_word(a + self.len as usize - 8).store(words[1], Relaxed);
        }
    }

    /// What the fragment's first and last 8 bytes hold.
    pub fn read_stamp(&self) -> [u64; 2] {
        let a = self.addr();
        // SAFETY: as in `stamp`.
        unsafe {
            [stamp_word(a).load(Relaxed), stamp_word(a + self.len as usize - 8).load(Relaxed)]
        }
    }
}

/// Why a source refused a block back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockFreeError {
    /// The block came from another source (it is leaked, not freed).
    Foreign,
    /// The page allocator refused the free.
    Refused(FreeError),
}

impl fmt::Display for BlockFreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockFreeError::Foreign => {
                f.write_str("block freed into a source that did not make it")
            }
            BlockFreeError::Refused(e) => write!(f, "free refused: {e}"),
        }
    }
}

impl std::error::Error for BlockFreeError {}

/// Something that hands out blocks of `4096 << order` bytes: what `pagealloc bench` measures.
pub trait PageSource: Sync {
    /// A block of `order` (0..=10), or `None` when the source has none.
    fn alloc_block(&self, order: u8) -> Option<PageBlock<'_>>;
    /// Give a block back.
    fn free_block(&self, block: PageBlock<'_>) -> Result<(), BlockFreeError>;
    /// The alignment every block of `order` has (a power of two): a page unless the source
    /// aligns blocks to their size.
    fn align(&self, _order: u8) -> usize {
        PAGE_SIZE as usize
    }
}

// ---------------------------------------------------------------------------------------------
// PageHeap

/// How to build a [`PageHeap`].
#[derive(Clone, Debug)]
pub struct HeapOptions {
    /// Arena size in bytes (a multiple of 4 KiB; of 2 MiB with [`HugePages::Hugetlb`]).
    pub bytes: usize,
    /// CPUs of the allocator's machine; `None`: the CPUs the system has configured.
    pub cpus: Option<u32>,
    /// Policy of the allocator.
    pub policy: Policy,
    /// Tunables of the allocator.
    pub tunables: Tunables,
    /// GFP flags of every allocation.
    pub gfp: Gfp,
    /// Huge-page backing of the arena.
    pub huge: HugePages,
    /// Fault every page of the arena in at start (part of the reported init time).
    pub prefault: bool,
    /// Ask for the arena low in the address space ([`LOW_ARENA_HINT`], a hint the kernel may
    /// refuse), so its frame numbers fit in 32 bits: the lab's workloads keep compact frame
    /// lists.
    pub low_address: bool,
    /// Time every zone-lock hold (the allocator's `zone_lock_held_ns` counter): two clock
    /// reads per hold.
    pub time_zone_locks: bool,
}

impl HeapOptions {
    /// `bytes` of arena, the modern policy, default tunables, GFP_KERNEL, every system CPU.
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
}

/// Spins a waiter makes on the lock word before it yields its CPU: about a microsecond, longer
/// than most holds (a pageset hit or a buddy operation), shorter than a time slice.
const YIELD_LOCK_SPINS: u32 = 128;

/// A spin-then-yield raw lock for user space: the core's [`RawSpinLock`] (test-and-test-and-set)
/// for the fast path and for [`YIELD_LOCK_SPINS`] polls of a held lock, then
/// `std::thread::yield_now` between rounds of polls, so a waiter gives its CPU to the
/// (possibly preempted) holder instead of spinning out its time slice. Uncontended it costs
/// what the spin lock costs: one compare-exchange to take, one store to release.
#[derive(Debug)]
pub struct YieldLock(RawSpinLock);

impl YieldLock {
    /// The contended path, out of line so the fast path stays small.
    #[cold]
    fn lock_contended(&self) {
        loop {
            for _ in 0..YIELD_LOCK_SPINS {
                if !self.0.is_locked() && self.0.try_lock() {
                    return;
                }
                std::hint::spin_loop();
            }
            std::thread::yield_now();
        }
    }
}

// SAFETY: every acquisition is a successful `try_lock` of the inner spin lock and every
// release its `unlock`, called only by the holder (lock_api's guards guarantee that), so the
// inner lock's mutual exclusion is this lock's.
unsafe impl RawMutex for YieldLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: YieldLock = YieldLock(RawSpinLock::INIT);

    type GuardMarker = GuardSend;

    #[inline]
    fn lock(&self) {
        if !self.0.try_lock() {
            self.lock_contended();
        }
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.0.try_lock()
    }

    #[inline]
    unsafe fn unlock(&self) {
        // SAFETY: the caller holds this lock, hence the inner one.
        unsafe { self.0.unlock() }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.0.is_locked()
    }
}

/// The page allocator over real memory: an `mmap`ed arena whose frames a [`PageAllocator`]
/// manages. Hands out page-aligned blocks of `4096 << order` bytes, aligned to their size.
///
/// The current CPU comes from the `cpu_id` the kernel keeps in the thread's rseq area (which
/// glibc ≥ 2.35 registers), else from `sched_getcpu()`; see [`CpuSource`]. A stale answer (the
/// thread migrated since) is harmless, since every pageset is behind its lock — it only costs
/// locality.
///
/// `E` is the allocator's event sink: [`NoEvents`] for the heap users get, a recording sink
/// for the lab's real runner (which reads the allocator the same way the model does). `L` is
/// the allocator's lock: [`YieldLock`] (see the module docs), the core's spin lock for the real
/// runner's [`FrameHeap`].
#[derive(Debug)]
pub struct PageHeap<E: EventSink = NoEvents, L: RawMutex = YieldLock> {
    pa: PageAllocator<E, L>,
    /// Frame → allocator-CPU table is `cpu % nr_cpus`; the handles, precomputed.
    cpus: Box<[Cpu]>,
    cpu_source: CpuSource,
    gfp: Gfp,
    id: u32,
    init_time: Duration,
    /// Declared last: unmapped after the allocator (which never touches the memory) is gone.
    arena: Arena,
}

impl PageHeap {
    /// Map an arena and build an allocator over it with every frame free.
    pub fn new(opts: &HeapOptions) -> Result<PageHeap, HeapError> {
        PageHeap::with_events(opts, NoEvents)
    }

    /// The order of the block that serves `layout`: size and alignment rounded up to a
    /// power-of-two number of pages (at least one). `None` above order 10.
    pub fn order_for(layout: Layout) -> Option<Order> {
        let bytes = layout.size().max(layout.align()).max(PAGE_SIZE as usize);
        let pages = bytes.div_ceil(PAGE_SIZE as usize).checked_next_power_of_two()?;
        let order = pages.trailing_zeros() as u8;
        (order <= MAX_PAGE_ORDER).then_some(Order(order))
    }
}

impl<E: EventSink> PageHeap<E> {
    /// [`new`](PageHeap::new) with an allocator that reports its events to `sink`.
    pub fn with_events(opts: &HeapOptions, sink: E) -> Result<PageHeap<E>, HeapError> {
        PageHeap::with_lock(opts, sink)
    }
}

impl<E: EventSink, L: RawMutex> PageHeap<E, L> {
    /// [`with_events`](PageHeap::with_events) with locks of type `L` (named by the type:
    /// `PageHeap::<E, L>::with_lock`).
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
        // FREE_HIGH_BATCH needs each CPU's share of its last-level cache (docs/kernel-reference.md
        // §2.7).
        let sysfs = std::path::Path::new("/sys/devices/system/cpu");
        for c in 0..pa.nr_cpus() {
            if let Some(cache) = crate::cacheinfo::read(sysfs, c) {
                pa.set_cpu_cache(CpuId(c), cache);
            }
        }
        let cpus = (0..pa.nr_cpus()).filter_map(|c| pa.cpu(CpuId(c))).collect();
        let init_time = started.elapsed();
        Ok(PageHeap {
            pa,
            cpus,
            cpu_source: CpuSource::detect(),
            gfp: opts.gfp,
            id: next_source_id(),
            init_time,
            arena,
        })
    }

    /// The allocator underneath (for counters, validation, snapshots).
    pub fn allocator(&self) -> &PageAllocator<E, L> {
        &self.pa
    }

    /// Time to map the arena and build the allocator over it (every frame freed to the buddy
    /// lists), measured once by [`PageHeap::new`].
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
        let n = self.cpus.len();
        let i = if c < 0 { 0 } else { c as usize };
        self.cpus[if i < n { i } else { i % n }]
    }

    /// Allocate a block of `4096 << order` bytes, aligned to its size, on the current CPU.
    /// Its contents are whatever the last user left (zero on first use). The pointer is valid
    /// for reads and writes of the whole block until the block is given back with
    /// [`dealloc`](Self::dealloc) or the heap is dropped, whichever comes first.
    #[inline]
    pub fn alloc_pages(&self, order: Order) -> Result<NonNull<u8>, AllocError> {
        let pfn = self.pa.alloc_pages(self.current_cpu(), self.gfp, order)?;
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

    /// A block of `order` on the current CPU with `gfp`'s constraints instead of the heap's
    /// own flags, as a token ([`PageSource::free_block`] gives it back).
    #[inline]
    pub fn alloc_block_with(&self, gfp: Gfp, order: Order) -> Result<PageBlock<'_>, AllocError> {
        let pfn = self.pa.alloc_pages(self.current_cpu(), gfp, order)?;
        let addr = (pfn.0 as usize) << PAGE_SHIFT;
        debug_assert!(self.arena.contains(addr, block_bytes(order.0)));
        // Inside the arena (the allocator hands out only frames of its map), hence non-null.
        let ptr = NonNull::new(addr as *mut u8).ok_or(AllocError::OutOfMemory { order })?;
        Ok(PageBlock::new(ptr, order.0, self.id))
    }

    /// Carve a fragment from `cache` on the current CPU (kernel `page_frag_alloc`): `len`
    /// bytes rounded to a multiple of 8 in 16..=4096, 8-byte aligned. `cache` must serve
    /// only this heap.
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
        Ok(FragToken { frag, len, _heap: PhantomData })
    }

    /// Give a fragment back (kernel `page_frag_free`); the last one of a page the cache has
    /// let go of frees the page.
    pub fn frag_free(&self, frag: FragToken<'_>) -> Result<(), FreeError> {
        self.pa.page_frag_free(self.current_cpu(), frag.frag.page)
    }

    /// Let go of `cache`'s page (kernel `page_frag_cache_drain`): freed now if no fragment of
    /// it is out, else by the last [`frag_free`](Self::frag_free). Refused (the cache keeps
    /// its page) if the cache carves a page of another heap.
    pub fn frag_drain(&self, cache: &mut PageFragCache) -> Result<(), FreeError> {
        cache.drain(&self.pa, self.current_cpu())
    }
}

/// Movable blocks of one [`PageHeap`], held together so that compaction may move them: the
/// owner's side of [`Migrate`] on real memory. Pass it to the heap's allocator
/// (`compact_zone`, `kcompactd`, `alloc_pages_compacting`); a block it moves is copied byte for
/// byte and its token then names the new place. Blocks not in the set are never moved: the
/// heap's pointers and `Allocator` blocks, which Rust references may point into, stay put.
#[derive(Debug)]
pub struct MovableBlocks<'a, E: EventSink = NoEvents> {
    heap: &'a PageHeap<E>,
    /// First frame → the token of the block there.
    blocks: BTreeMap<u64, PageBlock<'a>>,
    /// Frames of blocks that must not move.
    pinned: BTreeSet<u64>,
}

#[cfg_attr(
    not(test),
    expect(dead_code, reason = "only its tests move PageHeap blocks so far; docs/compaction.md")
)]
impl<'a, E: EventSink> MovableBlocks<'a, E> {
    /// An empty set for `heap`'s blocks.
    pub fn new(heap: &'a PageHeap<E>) -> MovableBlocks<'a, E> {
        MovableBlocks { heap, blocks: BTreeMap::new(), pinned: BTreeSet::new() }
    }

    /// Add a block; a block of another source is handed back.
    pub fn insert(&mut self, block: PageBlock<'a>) -> Result<(), PageBlock<'a>> {
        if block.source != self.heap.id {
            return Err(block);
        }
        self.blocks.insert(block.pfn().0, block);
        Ok(())
    }

    /// Take the block at `pfn` out of the set.
    pub fn remove(&mut self, pfn: Pfn) -> Option<PageBlock<'a>> {
        self.pinned.remove(&pfn.0);
        self.blocks.remove(&pfn.0)
    }

    /// Pin (or unpin) the block at `pfn`: compaction's requests to move it are refused.
    pub fn pin(&mut self, pfn: Pfn, pinned: bool) {
        if pinned && self.blocks.contains_key(&pfn.0) {
            self.pinned.insert(pfn.0);
        } else {
            self.pinned.remove(&pfn.0);
        }
    }

    /// The blocks, by first frame.
    pub fn iter(&self) -> impl Iterator<Item = &PageBlock<'a>> {
        self.blocks.values()
    }

    /// Blocks held.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// No blocks held?
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Every token, to give back with [`PageSource::free_block`].
    pub fn into_blocks(self) -> Vec<PageBlock<'a>> {
        self.blocks.into_values().collect()
    }
}

impl<E: EventSink> Migrate for MovableBlocks<'_, E> {
    fn migrate(&mut self, from: Pfn, to: Target<'_>, order: Order) -> bool {
        let bytes = block_bytes(order.0);
        let dst = (to.pfn().0 as usize) << PAGE_SHIFT;
        if self.pinned.contains(&from.0)
            || to.order() != order
            || !self.heap.arena.contains(dst, bytes)
            || self.blocks.get(&from.0).is_none_or(|b| b.order != order.0)
        {
            return false;
        }
        let Some(mut block) = self.blocks.remove(&from.0) else { return false };
        // Inside the arena, hence non-null.
        let Some(new) = NonNull::new(dst as *mut u8) else {
            self.blocks.insert(from.0, block);
            return false;
        };
        // SAFETY: the source is the live block this set's token owns (`&mut self` excludes any
        // other use of the token; blocks outside the set are never reached), `bytes` long.
        // The destination is a `Target`, which only the allocator's compaction creates, for a
        // free block of the same order it took off its free lists for this call alone: no
        // one else reads or writes it. It lies in this heap's arena (checked above), mapped
        // while `'a` keeps the heap alive. Two distinct blocks of the allocator do not
        // overlap.
        unsafe { std::ptr::copy_nonoverlapping(block.ptr.as_ptr(), new.as_ptr(), bytes) };
        block.ptr = new;
        self.blocks.insert(to.pfn().0, block);
        true
    }
}

/// A [`PageHeap`] reached by frame number only: the lab's real runner allocates from it. It
/// hands out no pointer, no [`PageBlock`] and no `Allocator` block — its allocator
/// ([`allocator`](Self::allocator)) answers with frame numbers, and
/// [`touch`](Self::touch) is the one way into its memory, with relaxed atomic stores. No Rust
/// reference to the arena and no non-atomic access to it can therefore exist, which is what
/// makes `touch` sound as a safe function.
///
/// `touch` used to be a method of [`PageHeap`] itself, whose blocks also go out behind
/// references (a `Vec` in the heap through the `Allocator` impl holds a `&mut [T]` over its
/// block) and as pointers promised valid for non-atomic reads and writes: a safe `touch` of
/// such a block is a write under a live reference, undefined behaviour from safe code. Unsafe
/// code that turns one of this heap's frame numbers into a pointer must keep to atomic
/// accesses too.
///
/// It keeps the core's spin lock: the real runner's threads take their steps in turn under the
/// workload's lock, and the model's `Ctx` reads one allocator type for both runners.
#[derive(Debug)]
pub struct FrameHeap<E: EventSink = NoEvents> {
    heap: PageHeap<E, RawSpinLock>,
}

impl<E: EventSink> FrameHeap<E> {
    /// Map an arena and build an allocator over it that reports its events to `sink`, as
    /// [`PageHeap::with_events`] does.
    pub fn with_events(opts: &HeapOptions, sink: E) -> Result<FrameHeap<E>, HeapError> {
        Ok(FrameHeap { heap: PageHeap::with_lock(opts, sink)? })
    }

    /// The allocator underneath: it hands out frame numbers of the arena.
    pub fn allocator(&self) -> &PageAllocator<E> {
        self.heap.allocator()
    }

    /// Write into `bytes` bytes of the arena from the start of frame `pfn` on (pages after
    /// the first as needed): one relaxed 8-byte atomic store of `value` per 64-byte cache
    /// line, so every line is brought into the cache and dirtied as a real write would, and
    /// two threads touching the same memory is never a data race. The lab's real runner
    /// touches blocks where a workload says it writes them. Returns the pages written, or
    /// `None` (and writes nothing) when the range is not inside the arena.
    pub fn touch(&self, pfn: Pfn, bytes: u64, value: u64) -> Option<u64> {
        let addr = usize::try_from(pfn.0).ok()?.checked_mul(PAGE_SIZE as usize)?;
        let len = usize::try_from(bytes).ok()?;
        if !self.heap.arena.contains(addr, len) {
            return None;
        }
        for line in (addr..addr + len).step_by(64) {
            // SAFETY: `line` is 64-aligned (the frame is page-aligned) and inside the arena,
            // which stays mapped while `&self` is borrowed. A FrameHeap hands its memory out
            // by frame number only (no reference, pointer or token exists: see the type's
            // documentation), so every access to the word is an atomic one like this.
            unsafe { stamp_word(line).store(value, Relaxed) };
        }
        Some(bytes.div_ceil(PAGE_SIZE))
    }

    /// Copy `bytes` bytes of the arena from the start of frame `from` to the start of frame
    /// `to`, as [`touch`](Self::touch) writes them: per 64-byte cache line, one relaxed
    /// 8-byte atomic load from the source and one store of it to the target, so both lines
    /// are brought into the cache and the target's dirtied (a migration's copy). Returns the
    /// pages copied, or `None` (and copies nothing) when either range is not inside the
    /// arena.
    pub fn copy(&self, from: Pfn, to: Pfn, bytes: u64) -> Option<u64> {
        let page = PAGE_SIZE as usize;
        let src = usize::try_from(from.0).ok()?.checked_mul(page)?;
        let dst = usize::try_from(to.0).ok()?.checked_mul(page)?;
        let len = usize::try_from(bytes).ok()?;
        if !self.heap.arena.contains(src, len) || !self.heap.arena.contains(dst, len) {
            return None;
        }
        for off in (0..len).step_by(64) {
            // SAFETY: both addresses are 64-aligned (frames are page-aligned) and inside the
            // arena, which stays mapped while `&self` is borrowed; every access to these
            // words is atomic, as `touch` explains.
            let word = unsafe { stamp_word(src + off) }.load(Relaxed);
            // SAFETY: as above.
            unsafe { stamp_word(dst + off).store(word, Relaxed) };
        }
        Some(bytes.div_ceil(PAGE_SIZE))
    }
}

impl PageSource for PageHeap {
    #[inline]
    fn alloc_block(&self, order: u8) -> Option<PageBlock<'_>> {
        let ptr = self.alloc_pages(Order(order)).ok()?;
        Some(PageBlock::new(ptr, order, self.id))
    }

    #[inline]
    fn free_block(&self, block: PageBlock<'_>) -> Result<(), BlockFreeError> {
        if block.source != self.id {
            return Err(BlockFreeError::Foreign);
        }
        // SAFETY: the token was the only handle on this live block and is consumed here.
        unsafe { self.dealloc(block.ptr, Order(block.order)) }.map_err(BlockFreeError::Refused)
    }

    fn align(&self, order: u8) -> usize {
        block_bytes(order)
    }
}

/// `Allocator` for `PageHeap`, for one version of the `allocator-api2` crate: the 0.4 trait
/// (this crate's own use) and the 0.2 one (what hashbrown and most of the ecosystem take).
/// Both have the same shape; the bodies are written once, here.
macro_rules! page_heap_allocator {
    ($api:ident) => {
        // SAFETY (the trait's contract): a returned block is memory of the arena, valid for
        // reads and writes of its whole length (`4096 << order` >= the layout's size), aligned
        // to its length (>= the layout's alignment), and stays valid until deallocated or the
        // heap is dropped — the heap cannot be dropped or moved while `&PageHeap` allocators
        // exist. The allocator never hands the same frame to two live blocks (frame
        // ownership, `ARCHITECTURE.md`). Cloning `&PageHeap` gives the same heap, so any copy
        // may free any block.
        unsafe impl $api::alloc::Allocator for PageHeap {
            fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, $api::alloc::AllocError> {
                let order = Self::order_for(layout).ok_or($api::alloc::AllocError)?;
                let ptr = self.alloc_pages(order).map_err(|_| $api::alloc::AllocError)?;
                Ok(NonNull::slice_from_raw_parts(ptr, block_bytes(order.0)))
            }

            unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
                // A layout that fits the block rounds to the block's order (any size between
                // the requested one and the block length does, and the alignment is the one
                // requested).
                let Some(order) = Self::order_for(layout) else { return };
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
                unsafe { self.resize(ptr, old_layout, new_layout) }
                    .map_err(|_| $api::alloc::AllocError)
            }

            unsafe fn shrink(
                &self,
                ptr: NonNull<u8>,
                old_layout: Layout,
                new_layout: Layout,
            ) -> Result<NonNull<[u8]>, $api::alloc::AllocError> {
                // SAFETY: forwarded contract (ptr is live with old_layout; new size <= old).
                unsafe { self.resize(ptr, old_layout, new_layout) }
                    .map_err(|_| $api::alloc::AllocError)
            }
        }
    };
}

page_heap_allocator!(allocator_api2);
page_heap_allocator!(allocator_api2_02);

impl PageHeap {
    /// Keep the block when the new layout needs the same order, else move to a new block.
    ///
    /// # Safety
    ///
    /// `ptr` is a live block of this heap whose layout fits `old`.
    unsafe fn resize(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, ApiAllocError> {
        let old_order = Self::order_for(old).ok_or(ApiAllocError)?;
        let new_order = Self::order_for(new).ok_or(ApiAllocError)?;
        if new_order == old_order {
            return Ok(NonNull::slice_from_raw_parts(ptr, block_bytes(old_order.0)));
        }
        let fresh = self.alloc_pages(new_order).map_err(|_| ApiAllocError)?;
        let n = old.size().min(new.size());
        // SAFETY: `ptr` is valid for `old.size()` bytes (caller), `fresh` for
        // `block_bytes(new_order) >= new.size()` bytes; distinct live blocks never overlap.
        unsafe { std::ptr::copy_nonoverlapping(ptr.as_ptr(), fresh.as_ptr(), n) };
        // SAFETY: the old block is live (caller) and its contents were moved out above; the
        // Allocator contract forbids the caller from using `ptr` after a successful resize.
        let r = unsafe { self.dealloc(ptr, old_order) };
        debug_assert!(r.is_ok(), "resize freed a block the heap refused: {r:?}");
        Ok(NonNull::slice_from_raw_parts(fresh, block_bytes(new_order.0)))
    }
}

/// Where the calling thread's CPU number comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuSource {
    /// The `cpu_id` field of the thread's rseq area, which the kernel rewrites whenever it
    /// resumes the thread on a CPU: a load, no call. The area sits at `__rseq_offset` bytes
    /// from the thread pointer (glibc ≥ 2.35, which registers it for every thread it starts).
    Rseq {
        /// `__rseq_offset`.
        offset: isize,
    },
    /// `sched_getcpu()`: no rseq area registered (older glibc, `glibc.pthread.rseq=0`, a
    /// kernel or a tool such as valgrind without rseq), or a CPU without the thread-pointer
    /// read below.
    SchedGetcpu,
}

/// Offset of `cpu_id` in the kernel's `struct rseq` (after `u32 cpu_id_start`).
const RSEQ_CPU_ID_OFFSET: isize = 4;

impl CpuSource {
    /// Rseq if glibc registered an area for this process, else `sched_getcpu`. The symbols are
    /// looked up at run time, so the binary still runs with a C library that lacks them.
    pub fn detect() -> CpuSource {
        if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            return CpuSource::SchedGetcpu;
        }
        // SAFETY: dlsym with RTLD_DEFAULT and NUL-terminated names only searches the loaded
        // objects' symbol tables; it returns null when a name is absent.
        let (size, offset) = unsafe {
            (
                libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr()),
                libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr()),
            )
        };
        if size.is_null() || offset.is_null() {
            return CpuSource::SchedGetcpu;
        }
        // SAFETY: glibc defines `__rseq_size` as `const unsigned int` and `__rseq_offset` as
        // `const ptrdiff_t`, initialised before any user code runs and never written after.
        let (size, offset) = unsafe { (*size.cast::<u32>(), *offset.cast::<isize>()) };
        // glibc sets the size to 0 when registration failed or is disabled.
        if size == 0 {
            return CpuSource::SchedGetcpu;
        }
        // The calling thread's area must hold a CPU already (registration happens at thread
        // start); if not, do not trust it for any thread.
        if rseq_cpu(offset) < 0 {
            return CpuSource::SchedGetcpu;
        }
        CpuSource::Rseq { offset }
    }

    /// How the output names it.
    pub fn name(self) -> &'static str {
        match self {
            CpuSource::Rseq { .. } => "rseq cpu_id",
            CpuSource::SchedGetcpu => "sched_getcpu",
        }
    }

    /// The CPU the calling thread runs on (negative only if the system cannot say).
    #[inline]
    pub fn cpu(self) -> i32 {
        if let CpuSource::Rseq { offset } = self {
            let c = rseq_cpu(offset);
            if c >= 0 {
                return c;
            }
        }
        // SAFETY: sched_getcpu takes no arguments and touches no memory of ours.
        unsafe { libc::sched_getcpu() }
    }
}

/// The calling thread's rseq `cpu_id` (negative while unregistered).
#[inline]
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn rseq_cpu(offset: isize) -> i32 {
    let tp: usize;
    // SAFETY: reads the thread pointer register, which every thread has; no memory access,
    // no stack use, flags preserved.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::asm!("mov {}, fs:0", out(reg) tp, options(nostack, readonly, preserves_flags))
    };
    // SAFETY: as above (TPIDR_EL0 is the thread pointer on aarch64 Linux).
    #[cfg(target_arch = "aarch64")]
    unsafe {
        std::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nomem, nostack, preserves_flags))
    };
    let field = tp.wrapping_add_signed(offset + RSEQ_CPU_ID_OFFSET) as *const u32;
    // SAFETY: `CpuSource::detect` built an Rseq source only after glibc reported a registered
    // area (`__rseq_size > 0`); glibc places every thread's area at the same offset from its
    // thread pointer, inside its thread control block, which lives as long as the thread, so
    // `field` is valid and 4-byte aligned (the area is 32-byte aligned). The kernel writes it
    // only while the thread is not running user code, so a volatile read sees a whole value.
    unsafe { field.read_volatile() as i32 }
}

#[inline]
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn rseq_cpu(_offset: isize) -> i32 {
    -1
}

/// CPUs the system has configured (what `sched_getcpu` may answer), at least 1.
fn configured_cpus() -> u32 {
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

/// Pin the calling thread to host CPU `cpu` (`sched_setaffinity`): the real runner's
/// `--pin`. Fails for a CPU the system does not have or the thread may not use.
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
    }
    // SAFETY: `cpu_set_t` is a plain bit array, for which all-zero bytes are the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE (checked above), so the bit is inside `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; the set is a valid, initialised `cpu_set_t` of the
    // size passed, read by the kernel only during the call.
    let r = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Let a write to a closed pipe end the process quietly, as it ends `cat` or `grep`
/// (`pagealloc workloads | head -1`): Rust's runtime ignores SIGPIPE, so every `println!`
/// after the reader has gone would panic instead. Called once, first thing in `main`.
pub fn default_sigpipe() {
    // SAFETY: `signal` with `SIG_DFL` changes only this process's disposition of SIGPIPE; no
    // handler runs Rust code, and no other thread exists yet to race the change.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

// ---------------------------------------------------------------------------------------------
// Peers

/// A general-purpose allocator asked for `Layout::from_size_align(4096 << order, 4096)`.
#[derive(Debug)]
pub struct GlobalPages<A> {
    alloc: A,
    id: u32,
}

impl<A: GlobalAlloc + Sync> GlobalPages<A> {
    /// Wrap `alloc`.
    pub fn new(alloc: A) -> GlobalPages<A> {
        GlobalPages { alloc, id: next_source_id() }
    }

    #[inline]
    fn layout(order: u8) -> Layout {
        // 4096 << order is a multiple of its alignment and far below isize::MAX for order
        // <= 10 (checked by the caller), so this cannot fail.
        Layout::from_size_align(block_bytes(order), PAGE_SIZE as usize).expect("page layout")
    }
}

impl<A: GlobalAlloc + Sync> PageSource for GlobalPages<A> {
    #[inline]
    fn alloc_block(&self, order: u8) -> Option<PageBlock<'_>> {
        if order > MAX_PAGE_ORDER {
            return None;
        }
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { self.alloc.alloc(Self::layout(order)) };
        Some(PageBlock::new(NonNull::new(ptr)?, order, self.id))
    }

    #[inline]
    fn free_block(&self, block: PageBlock<'_>) -> Result<(), BlockFreeError> {
        if block.source != self.id {
            return Err(BlockFreeError::Foreign);
        }
        // SAFETY: the token proves the block came from this allocator's `alloc` with this
        // order's layout and has not been freed (tokens are unique and consumed here).
        unsafe { self.alloc.dealloc(block.ptr.as_ptr(), Self::layout(block.order)) };
        Ok(())
    }
}

/// `buddy_system_allocator`'s locked frame allocator, handing out frame numbers `0..n` that
/// stand for the pages of an arena of the same size as the heap's (so blocks can be touched).
pub struct BuddyFrames {
    frames: LockedFrameAllocator<33>,
    arena: Arena,
    id: u32,
}

impl fmt::Debug for BuddyFrames {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BuddyFrames").field("arena", &self.arena).finish_non_exhaustive()
    }
}

impl BuddyFrames {
    /// Frames for `bytes` of arena.
    pub fn new(bytes: usize) -> Result<BuddyFrames, HeapError> {
        let arena = Arena::map(bytes, HugePages::None, false, false)?;
        let frames = LockedFrameAllocator::<33>::new();
        frames.lock().add_frame(0, bytes >> PAGE_SHIFT);
        Ok(BuddyFrames { frames, arena, id: next_source_id() })
    }
}

impl PageSource for BuddyFrames {
    #[inline]
    fn alloc_block(&self, order: u8) -> Option<PageBlock<'_>> {
        if order > MAX_PAGE_ORDER {
            return None;
        }
        let frame = self.frames.lock().alloc(1 << order)?;
        let addr = self.arena.base + (frame << PAGE_SHIFT);
        if !self.arena.contains(addr, block_bytes(order)) {
            return None;
        }
        Some(PageBlock::new(NonNull::new(addr as *mut u8)?, order, self.id))
    }

    #[inline]
    fn free_block(&self, block: PageBlock<'_>) -> Result<(), BlockFreeError> {
        if block.source != self.id {
            return Err(BlockFreeError::Foreign);
        }
        let frame = (block.addr() - self.arena.base) >> PAGE_SHIFT;
        self.frames.lock().dealloc(frame, 1 << block.order);
        Ok(())
    }

    fn align(&self, order: u8) -> usize {
        block_bytes(order)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api2::alloc::Allocator;
    use allocator_api2::vec::Vec as ApiVec;
    use pagealloc::debug::validate;
    use pagealloc::sizing::FRAME_METADATA_BYTES;
    use pagealloc::{CompactMode, CompactResult};

    fn heap(mib: usize) -> PageHeap {
        let mut o = HeapOptions::new(mib << 20);
        o.cpus = Some(2);
        PageHeap::new(&o).expect("heap")
    }

    /// More threads than CPUs bump a counter behind a `YieldLock`, each holding it across a
    /// yield now and then (a holder preempted): no update is lost, and the run ends.
    #[test]
    fn the_yield_lock_excludes_oversubscribed() {
        let m = pagealloc::lock_api::Mutex::<YieldLock, u64>::new(0);
        std::thread::scope(|s| {
            for _ in 0..32 {
                s.spawn(|| {
                    for i in 0..2000 {
                        let mut g = m.lock();
                        let v = *g;
                        if i % 100 == 0 {
                            std::thread::yield_now();
                        }
                        *g = v + 1;
                    }
                });
            }
        });
        assert_eq!(m.into_inner(), 32 * 2000);
    }

    /// A `PageHeap`'s allocator is built with the yielding lock, and a `FrameHeap`'s with the
    /// core's spin lock (the types say so; this fails to compile otherwise).
    #[test]
    fn heaps_use_their_locks() {
        let h = heap(16);
        let _: &PageAllocator<NoEvents, YieldLock> = h.allocator();
        let mut o = HeapOptions::new(16 << 20);
        o.cpus = Some(2);
        let f = FrameHeap::with_events(&o, NoEvents).expect("heap");
        let _: &PageAllocator<NoEvents, RawSpinLock> = f.allocator();
        let cpu = h.current_cpu();
        let pfn = h.allocator().alloc_pages(cpu, Gfp::KERNEL, Order(0)).expect("a page");
        h.allocator().free_pages(cpu, pfn, Order(0)).expect("free");
        validate(h.allocator()).expect("valid");
    }

    fn drained_and_valid(h: &PageHeap) {
        let pa = h.allocator();
        pa.drain_all_pages(pa.cpu(CpuId(0)).unwrap(), None);
        assert_eq!(pa.nr_free_pages(), pa.managed_pages());
        validate(pa).expect("invariants");
    }

    /// The CPU source answers what `sched_getcpu` answers (allowing for the odd migration
    /// between the two reads), on the main thread and on a new one.
    #[test]
    fn the_cpu_source_agrees_with_sched_getcpu() {
        let check = || {
            let source = CpuSource::detect();
            let n = configured_cpus() as i32;
            let mut agree = 0;
            for _ in 0..1000 {
                let ours = source.cpu();
                // SAFETY: as in CpuSource::cpu.
                let theirs = unsafe { libc::sched_getcpu() };
                assert!((0..n).contains(&ours), "cpu {ours} of {n}");
                agree += u32::from(ours == theirs);
            }
            assert!(agree >= 900, "{source:?} agreed {agree} times in 1000");
        };
        check();
        std::thread::spawn(check).join().unwrap();
        let h = heap(16);
        assert!(h.current_cpu().id().0 < h.allocator().nr_cpus());
    }

    /// Compaction through `MovableBlocks` on real memory: every block moved keeps every
    /// stamped page, the token follows it, a pinned block stays, and the zone gets its
    /// pageblock back.
    #[test]
    fn compaction_moves_blocks_with_their_contents() {
        let h = heap(32);
        let pa = h.allocator();
        let cpu = pa.cpu(CpuId(0)).unwrap();
        let gfp = Gfp::HIGHUSER_MOVABLE | Gfp::MEMALLOC;
        let mut all = Vec::new();
        while let Ok(b) = h.alloc_block_with(gfp, Order(0)) {
            all.push(b);
        }
        // Keep the odd frames, give back the even ones: half the arena free, none of it in
        // blocks above order 0.
        let (keep, give): (Vec<_>, Vec<_>) = all.into_iter().partition(|b| b.pfn().0 % 2 == 1);
        for b in give {
            h.free_block(b).unwrap();
        }
        pa.drain_all_pages(cpu, None);
        let stamp = |pfn: u64| move |i: u64| [pfn ^ 0x5a5a_0000, pfn + i];
        let mut set = MovableBlocks::new(&h);
        let mut first = None;
        for mut b in keep {
            let pfn = b.pfn().0;
            b.stamp_pages(stamp(pfn));
            first.get_or_insert(pfn);
            set.insert(b).unwrap();
        }
        let pinned = Pfn(first.unwrap());
        set.pin(pinned, true);
        // A block's first word names the frame it was allocated at.
        let origin = |b: &PageBlock<'_>| b.tag() ^ 0x5a5a_0000;
        let before = set.len();
        assert!(set.iter().all(|b| origin(b) == b.pfn().0));
        let zone = pa.zones()[0].idx();
        let out = pa.compact_zone(cpu, zone, Some(Order(9)), CompactMode::SyncLight, &mut set);
        let out = out.unwrap();
        assert_eq!(out.result, CompactResult::Success, "{out:?}");
        assert!(out.stats.migrated > 0);
        assert_eq!(set.len(), before, "no block lost or doubled");
        let mut moved = 0;
        for b in set.iter() {
            let was = origin(b);
            assert_eq!(b.check_pages(stamp(was)), None, "block from {was} now at {}", b.pfn());
            moved += u64::from(was != b.pfn().0);
        }
        assert_eq!(moved, out.stats.migrated);
        let stayed = set.remove(pinned).expect("the pinned block stayed");
        h.free_block(stayed).unwrap();
        assert!(!set.is_empty());
        let huge = h.alloc_block_with(Gfp::HIGHUSER_MOVABLE, Order(9)).expect("a pageblock");
        h.free_block(huge).unwrap();
        for b in set.into_blocks() {
            h.free_block(b).unwrap();
        }
        drained_and_valid(&h);
    }

    #[test]
    fn alloc_write_free_round_trip() {
        let h = heap(16);
        let p = h.alloc_pages(Order(1)).unwrap();
        let n = block_bytes(1);
        // SAFETY: `p` is a live 8 KiB block owned by this test.
        let s = unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), n) };
        s.fill(0xa5);
        assert!(s.iter().all(|&b| b == 0xa5));
        // SAFETY: the slice is not used after this point.
        unsafe { h.dealloc(p, Order(1)) }.unwrap();
        drained_and_valid(&h);
    }

    #[test]
    fn blocks_of_every_order_are_aligned_to_their_size_and_inside_the_arena() {
        let h = heap(64);
        for o in 0..=MAX_PAGE_ORDER {
            let p = h.alloc_pages(Order(o)).unwrap();
            let a = p.as_ptr() as usize;
            assert_eq!(a % block_bytes(o), 0, "order {o} at {a:#x}");
            assert!(h.arena.contains(a, block_bytes(o)));
            let mut b = PageBlock::new(p, o, h.id);
            b.touch(u64::from(o));
            assert_eq!(b.tag(), u64::from(o));
            h.free_block(b).unwrap();
        }
        drained_and_valid(&h);
    }

    #[test]
    fn vec_in_the_heap_grows_over_several_pages() {
        let h = heap(16);
        let mut v: ApiVec<u64, &PageHeap> = ApiVec::new_in(&h);
        for i in 0..5_000u64 {
            v.push(i);
        }
        assert!(v.capacity() * 8 >= 4 * 4096);
        assert_eq!(v.as_ptr() as usize % 4096, 0);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
        v.truncate(10);
        v.shrink_to_fit();
        assert_eq!(v.iter().sum::<u64>(), 45);
        drop(v);
        drained_and_valid(&h);
    }

    #[test]
    fn allocator_trait_refuses_what_no_block_serves() {
        let h = heap(16);
        let too_big = Layout::from_size_align(block_bytes(MAX_PAGE_ORDER) + 1, 4096).unwrap();
        assert_eq!(h.allocate(too_big), Err(ApiAllocError));
        let too_aligned = Layout::from_size_align(4096, 8 << 20).unwrap();
        assert_eq!(h.allocate(too_aligned), Err(ApiAllocError));
        // Alignment up to the block size is served by rounding the block up.
        let l = Layout::from_size_align(4096, 64 << 10).unwrap();
        let b = h.allocate(l).unwrap();
        assert_eq!(b.len(), 64 << 10);
        assert_eq!(b.cast::<u8>().as_ptr() as usize % (64 << 10), 0);
        // SAFETY: `b` was allocated above with `l` and is not used again.
        unsafe { h.deallocate(b.cast(), l) };
        assert_eq!(PageHeap::order_for(Layout::new::<u8>()), Some(Order(0)));
        assert_eq!(PageHeap::order_for(Layout::array::<u8>(4097).unwrap()), Some(Order(1)));
        assert_eq!(PageHeap::order_for(Layout::array::<u8>(3 << 20).unwrap()), Some(Order(10)));
        drained_and_valid(&h);
    }

    #[test]
    fn double_and_foreign_frees_are_errors_that_change_nothing() {
        let h = heap(16);
        let p = h.alloc_pages(Order(0)).unwrap();
        let q = h.alloc_pages(Order(2)).unwrap();
        // SAFETY: `p` is live and never used again; the second call frees a freed block,
        // which the contract allows (it is refused).
        unsafe {
            h.dealloc(p, Order(0)).unwrap();
            let pfn = pfn_of(p.as_ptr() as usize);
            assert_eq!(h.dealloc(p, Order(0)), Err(FreeError::DoubleFree { pfn }));
        }
        // SAFETY: wrong order, a tail page and a foreign address are all refused untouched.
        unsafe {
            assert!(matches!(h.dealloc(q, Order(1)), Err(FreeError::WrongOrder { .. })));
            let tail = NonNull::new(q.as_ptr().add(4096)).unwrap();
            assert!(matches!(h.dealloc(tail, Order(0)), Err(FreeError::TailPage { .. })));
            let mut local = 0u8;
            let foreign = NonNull::from(&mut local);
            assert!(matches!(h.dealloc(foreign, Order(0)), Err(FreeError::ForeignFrame(_))));
            h.dealloc(q, Order(2)).unwrap();
        }
        // Tokens: a block from another source is refused (and leaked, not freed).
        let other = GlobalPages::new(std::alloc::System);
        let b = other.alloc_block(0).unwrap();
        let addr = b.addr();
        assert_eq!(h.free_block(b), Err(BlockFreeError::Foreign));
        let b2 = PageBlock::new(NonNull::new(addr as *mut u8).unwrap(), 0, other.id);
        other.free_block(b2).unwrap();
        drained_and_valid(&h);
    }

    #[test]
    fn exhaustion_is_an_error_and_everything_comes_back() {
        let h = heap(8);
        let mut held = Vec::new();
        let err = loop {
            match h.alloc_pages(Order(0)) {
                Ok(p) => held.push(p),
                Err(e) => break e,
            }
            assert!(held.len() <= 2048, "more pages than the arena has");
        };
        assert!(matches!(err, AllocError::OutOfMemory { .. }), "{err:?}");
        assert!(!held.is_empty());
        let big = Layout::from_size_align(4096, 4096).unwrap();
        assert_eq!(h.allocate(big), Err(ApiAllocError));
        for p in held {
            // SAFETY: every held block is live and unused.
            unsafe { h.dealloc(p, Order(0)) }.unwrap();
        }
        drained_and_valid(&h);
        assert!(h.metadata_bytes_per_frame() >= FRAME_METADATA_BYTES as f64);
    }

    #[test]
    fn fragments_are_stamped_in_place_and_their_page_comes_back() {
        let h = heap(16);
        let mut cache = PageFragCache::new();
        let mut frags: Vec<FragToken<'_>> = [1, 16, 100, 4096, 9000]
            .iter()
            .map(|&n| h.frag_alloc(&mut cache, n, Gfp::KERNEL).unwrap())
            .collect();
        assert_eq!(frags.iter().map(FragToken::len).collect::<Vec<_>>(), [16, 16, 96, 4096, 4096]);
        for (i, f) in frags.iter_mut().enumerate() {
            f.stamp([i as u64, !(i as u64)]);
        }
        // Neighbouring fragments do not overlap: every stamp survives the others.
        for (i, f) in frags.iter().enumerate() {
            assert_eq!(f.read_stamp(), [i as u64, !(i as u64)]);
        }
        h.frag_drain(&mut cache).unwrap();
        for f in frags {
            h.frag_free(f).unwrap();
        }
        drained_and_valid(&h);
    }

    #[test]
    fn blocks_with_any_flags_are_stamped_page_by_page() {
        let h = heap(16);
        let mut b = h.alloc_block_with(Gfp::HIGHUSER_MOVABLE, Order(3)).unwrap();
        assert_eq!(b.pfn(), pfn_of(b.addr()));
        b.stamp_pages(|i| [i, i + 100]);
        assert_eq!(b.check_pages(|i| [i, i + 100]), None);
        assert_eq!(b.check_pages(|i| [i, i + 101]), Some((0, [0, 100])));
        h.free_block(b).unwrap();
        drained_and_valid(&h);
    }

    /// A FrameHeap writes every cache line of a block its allocator gave out by frame number,
    /// and writes nothing for a range outside the arena.
    #[test]
    fn a_frame_heap_touches_blocks_by_frame_number() {
        let mut o = HeapOptions::new(16 << 20);
        o.cpus = Some(2);
        let h = FrameHeap::with_events(&o, NoEvents).expect("heap");
        let pa = h.allocator();
        let cpu = pa.cpu(CpuId(0)).unwrap();
        let pfn = pa.alloc_pages(cpu, Gfp::KERNEL, Order(1)).unwrap();
        assert_eq!(h.touch(pfn, 8192, 7), Some(2));
        let base = (pfn.0 as usize) << PAGE_SHIFT;
        // SAFETY: 8-aligned words of the block, inside the mapped arena; the accesses are
        // atomic like touch's.
        let lines =
            (0..8192).step_by(64).map(|off| unsafe { stamp_word(base + off).load(Relaxed) });
        assert!(lines.collect::<Vec<_>>().iter().all(|&w| w == 7));
        assert_eq!(h.touch(Pfn(1), 64, 7), None);
        assert_eq!(h.touch(pfn, u64::MAX, 7), None);
        assert_eq!(h.touch(Pfn(u64::MAX), 64, 7), None);
        pa.free_pages(cpu, pfn, Order(1)).unwrap();
    }

    #[test]
    fn peers_hand_out_distinct_aligned_blocks() {
        let buddy = BuddyFrames::new(16 << 20).unwrap();
        let sys = GlobalPages::new(std::alloc::System);
        let sources: [&dyn PageSource; 2] = [&buddy, &sys];
        for s in sources {
            let mut blocks: Vec<PageBlock<'_>> =
                (0..=4).map(|o| s.alloc_block(o).unwrap()).collect();
            for (i, b) in blocks.iter_mut().enumerate() {
                assert_eq!(b.addr() % 4096, 0);
                b.touch(i as u64);
            }
            for (i, b) in blocks.iter().enumerate() {
                assert_eq!(b.tag(), i as u64);
            }
            for b in blocks {
                s.free_block(b).unwrap();
            }
        }
        assert!(buddy.alloc_block(MAX_PAGE_ORDER + 1).is_none());
    }

    /// A hashbrown map (allocator-api2 0.2, as the ecosystem's containers take it) lives on
    /// the heap: its tables are blocks of the allocator, and they all come back.
    #[test]
    fn a_hashbrown_map_runs_on_the_page_heap() {
        let h = heap(64);
        let free_at_start = h.allocator().nr_free_pages().0 + pcp_held(&h);
        {
            let mut map = hashbrown::HashMap::with_capacity_in(16, &h);
            for i in 0..20_000u64 {
                map.insert(i, i * 3);
            }
            assert!((0..20_000u64).all(|i| map.get(&i) == Some(&(i * 3))));
            let used = free_at_start - (h.allocator().nr_free_pages().0 + pcp_held(&h));
            assert!(used > 0, "the table's pages came from the heap");
            map.retain(|k, _| k % 2 == 0);
            map.shrink_to_fit();
            assert_eq!(map.len(), 10_000);
        }
        assert_eq!(h.allocator().nr_free_pages().0 + pcp_held(&h), free_at_start);
        validate(h.allocator()).unwrap();
    }

    /// Pages the heap's pagesets hold.
    fn pcp_held(h: &PageHeap) -> u64 {
        h.allocator().zones().iter().map(|z| z.pcp_pages()).sum()
    }
}

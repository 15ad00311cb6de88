//! Real memory for the lab: the heap types of `pagealloc-heap` under the paths the lab has
//! always used (`crate::heap::PageHeap`, …), and what only the lab needs — the [`PageSource`]
//! trait `pagealloc bench` measures with its peers ([`GlobalPages`] over a `GlobalAlloc`,
//! [`BuddyFrames`] over buddy_system_allocator), [`prefetch`] for the model, and
//! [`default_sigpipe`] for `main`.
//!
//! This is one of the two modules of the lab allowed `unsafe` (the workspace denies it
//! everywhere else; the other is `recycle.rs`, the global allocator); every `unsafe` block
//! carries a `// SAFETY:` argument. Every `unsafe` the heap itself needs is in `pagealloc-heap`.

use std::alloc::{GlobalAlloc, Layout};
use std::fmt;
use std::ptr::NonNull;

use buddy_system_allocator::LockedFrameAllocator;
use pagealloc::types::{MAX_PAGE_ORDER, PAGE_SHIFT, PAGE_SIZE};
use pagealloc::Order;

pub use pagealloc_heap::{
    block_bytes, pin_current_thread, BlockFreeError, FragToken, FrameHeap, HeapError, HeapOptions,
    HugePages, PageBlock, PageHeap, SourceId,
};

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

/// Let a write to a closed pipe end the process quietly, as it ends `cat` or `grep`
/// (`pagealloc workloads | head -1`): Rust's runtime ignores SIGPIPE, so every `println!`
/// after the reader has gone would panic instead. Called once, first thing in `main`.
pub fn default_sigpipe() {
    // SAFETY: `signal` with `SIG_DFL` changes only this process's disposition of SIGPIPE; no
    // handler runs Rust code, and no other thread exists yet to race the change.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// Something that hands out blocks of `4096 << order` bytes: what `pagealloc bench` measures.
///
/// Every implementation's `alloc_block` and `free_block` is `#[inline(always)]`, so each
/// source runs inlined into the bench's loop, as a user's call site would have it. Left to the
/// compiler, `PageHeap`'s grew too large to inline while the peers' (a call into C) did not;
/// the token then came back through memory, written as three stores and copied with one
/// 16-byte load, which no store can forward: the load waited for the stores to reach the
/// cache on every allocation, about a tenth of a `pair-1` pair that was not the allocator's
/// (docs/performance.md, fast path v2 step 5).
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

impl PageSource for PageHeap {
    #[inline(always)]
    fn alloc_block(&self, order: u8) -> Option<PageBlock<'_>> {
        PageHeap::alloc_block(self, Order(order)).ok()
    }

    #[inline(always)]
    fn free_block(&self, block: PageBlock<'_>) -> Result<(), BlockFreeError> {
        PageHeap::free_block(self, block)
    }

    fn align(&self, order: u8) -> usize {
        block_bytes(order)
    }
}

/// A second token for a block: the double ownership `pagealloc stress` must catch, made on
/// purpose by its tests.
#[cfg(test)]
pub trait AliasForTests<'a> {
    /// Another token naming the same block.
    fn alias(&self) -> PageBlock<'a>;
}

#[cfg(test)]
impl<'a> AliasForTests<'a> for PageBlock<'a> {
    fn alias(&self) -> PageBlock<'a> {
        let ptr = NonNull::new(self.addr() as *mut u8).expect("a block is never at 0");
        // SAFETY: not met, on purpose: two tokens now name one block, which is what the
        // stress tests must detect. They write and read the block through both only with the
        // atomic page stamps (`stamp_pages`, `check_pages`), so the double ownership is a
        // stamp mismatch and not a data race, and they free it through one token only.
        unsafe { PageBlock::from_raw(ptr, self.order(), self.source()) }
    }
}

// ---------------------------------------------------------------------------------------------
// Peers

/// A general-purpose allocator asked for `Layout::from_size_align(4096 << order, 4096)`.
#[derive(Debug)]
pub struct GlobalPages<A> {
    alloc: A,
    id: SourceId,
}

impl<A: GlobalAlloc + Sync> GlobalPages<A> {
    /// Wrap `alloc`.
    pub fn new(alloc: A) -> GlobalPages<A> {
        GlobalPages { alloc, id: SourceId::unique() }
    }

    #[inline]
    fn layout(order: u8) -> Layout {
        // 4096 << order is a multiple of its alignment and far below isize::MAX for order
        // <= 10 (checked by the caller), so this cannot fail.
        Layout::from_size_align(block_bytes(order), PAGE_SIZE as usize).expect("page layout")
    }
}

impl<A: GlobalAlloc + Sync> PageSource for GlobalPages<A> {
    #[inline(always)]
    fn alloc_block(&self, order: u8) -> Option<PageBlock<'_>> {
        if order > MAX_PAGE_ORDER {
            return None;
        }
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { self.alloc.alloc(Self::layout(order)) })?;
        // SAFETY: a fresh allocation of `4096 << order` bytes aligned to 4096, valid until
        // freed below (the token borrows `self`, which owns the allocator), reached only
        // through this token; GlobalAlloc frees from any thread.
        Some(unsafe { PageBlock::from_raw(ptr, order, self.id) })
    }

    #[inline(always)]
    fn free_block(&self, block: PageBlock<'_>) -> Result<(), BlockFreeError> {
        if block.source() != self.id {
            return Err(BlockFreeError::Foreign);
        }
        let order = block.order();
        // SAFETY: the token's source id proves the block came from this allocator's `alloc`
        // with this order's layout (only `alloc_block` makes tokens with it), and it has not
        // been freed (tokens are unique and consumed here).
        unsafe { self.alloc.dealloc(block.into_raw().as_ptr(), Self::layout(order)) };
        Ok(())
    }
}

/// `buddy_system_allocator`'s locked frame allocator, handing out frame numbers `0..n` that
/// stand for the pages of a region of the same size as the heap's arena (so blocks can be
/// touched).
pub struct BuddyFrames {
    frames: LockedFrameAllocator<33>,
    region: Region,
    id: SourceId,
}

impl fmt::Debug for BuddyFrames {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BuddyFrames").field("region", &self.region).finish_non_exhaustive()
    }
}

impl BuddyFrames {
    /// Frames for `bytes` of memory.
    pub fn new(bytes: usize) -> Result<BuddyFrames, HeapError> {
        let region = Region::new(bytes)?;
        let frames = LockedFrameAllocator::<33>::new();
        frames.lock().add_frame(0, bytes >> PAGE_SHIFT);
        Ok(BuddyFrames { frames, region, id: SourceId::unique() })
    }
}

impl PageSource for BuddyFrames {
    #[inline(always)]
    fn alloc_block(&self, order: u8) -> Option<PageBlock<'_>> {
        if order > MAX_PAGE_ORDER {
            return None;
        }
        let frame = self.frames.lock().alloc(1 << order)?;
        let offset = frame << PAGE_SHIFT;
        if offset.checked_add(block_bytes(order)).is_none_or(|end| end > self.region.len) {
            return None;
        }
        // SAFETY: `offset` plus the block is inside the region (checked above), so the add
        // stays in the allocation.
        let ptr = unsafe { self.region.base.add(offset) };
        // SAFETY: the frame allocator handed out frames `frame..frame + 2^order`, which no
        // other live block holds, so this token alone reaches those bytes of the region; the
        // region is 4 MiB-aligned and lives as long as `self`, which the token borrows; the
        // frame allocator locks, so a free may come from any thread.
        Some(unsafe { PageBlock::from_raw(ptr, order, self.id) })
    }

    #[inline(always)]
    fn free_block(&self, block: PageBlock<'_>) -> Result<(), BlockFreeError> {
        if block.source() != self.id {
            return Err(BlockFreeError::Foreign);
        }
        let frame = (block.addr() - self.region.base.as_ptr() as usize) >> PAGE_SHIFT;
        self.frames.lock().dealloc(frame, 1 << block.order());
        Ok(())
    }

    fn align(&self, order: u8) -> usize {
        block_bytes(order)
    }
}

/// `len` bytes aligned to the largest block (4 MiB), from the global allocator (for a region
/// this large glibc maps it, untouched until written), freed on drop.
#[derive(Debug)]
struct Region {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the region is plain memory owned by this value; the frame allocator decides who
// touches which part of it, and tokens carry that right between threads.
unsafe impl Send for Region {}
// SAFETY: as above: `&Region` hands out no access of its own.
unsafe impl Sync for Region {}

impl Region {
    fn layout(len: usize) -> Result<Layout, HeapError> {
        Layout::from_size_align(len, block_bytes(MAX_PAGE_ORDER))
            .map_err(|_| HeapError::BadSize(len))
    }

    fn new(len: usize) -> Result<Region, HeapError> {
        let layout = Region::layout(len)?;
        if len == 0 || len % PAGE_SIZE as usize != 0 {
            return Err(HeapError::BadSize(len));
        }
        // SAFETY: the layout has a non-zero size (checked above).
        let base = NonNull::new(unsafe { std::alloc::alloc(layout) })
            .ok_or_else(|| HeapError::Map(std::io::Error::from(std::io::ErrorKind::OutOfMemory)))?;
        Ok(Region { base, len })
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        let layout = Region::layout(self.len).expect("checked when the region was made");
        // SAFETY: `base` came from `alloc` with this layout, and no token can outlive the
        // `BuddyFrames` that owns the region.
        unsafe { std::alloc::dealloc(self.base.as_ptr(), layout) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// The lab's PageSource on PageHeap forwards to the heap: tokens of other sources are
    /// refused, its own come back.
    #[test]
    fn the_heap_is_a_page_source() {
        let h =
            PageHeap::new(&HeapOptions::new(16 << 20).with(|o| o.cpus = Some(2))).expect("heap");
        let src: &dyn PageSource = &h;
        let b = src.alloc_block(3).unwrap();
        assert_eq!(b.addr() % src.align(3), 0);
        src.free_block(b).unwrap();
        let sys = GlobalPages::new(std::alloc::System);
        let b = sys.alloc_block(0).unwrap();
        let ptr = NonNull::new(b.addr() as *mut u8).unwrap();
        assert_eq!(src.free_block(b), Err(BlockFreeError::Foreign));
        // SAFETY: the refused token was leaked; this is the only one for the block.
        sys.free_block(unsafe { PageBlock::from_raw(ptr, 0, sys.id) }).unwrap();
    }
}

//! Blocks and fragments as owned tokens: [`PageBlock`], [`FragToken`], and the atomic stamp
//! words both are written through.

use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use pagealloc::types::{PAGE_SHIFT, PAGE_SIZE};
use pagealloc::{Frag, FreeError, Pfn};

/// Bytes in a block of `order`: `4096 << order`.
///
/// ```
/// assert_eq!(pagealloc_heap::block_bytes(3), 32 << 10);
/// ```
#[inline]
pub const fn block_bytes(order: u8) -> usize {
    (PAGE_SIZE as usize) << order
}

/// The frame of the page at `addr`: its virtual page number.
#[inline]
pub(crate) fn pfn_of(addr: usize) -> Pfn {
    Pfn((addr >> PAGE_SHIFT) as u64)
}

/// Ids of sources; 0 is never handed out.
static NEXT_SOURCE_ID: AtomicU64 = AtomicU64::new(1);

/// Which source handed a [`PageBlock`] out: a number unique in the process, so a source can
/// refuse a block that is not its own ([`BlockFreeError::Foreign`]). Every [`PageHeap`]
/// takes one; another source of blocks (a wrapper over some other allocator, say) takes its
/// own with [`SourceId::unique`] and makes its tokens with [`PageBlock::from_raw`].
///
/// [`PageHeap`]: crate::PageHeap
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SourceId(u64);

impl SourceId {
    /// An id no other call in this process returns (64 bits: they do not run out).
    pub fn unique() -> SourceId {
        SourceId(NEXT_SOURCE_ID.fetch_add(1, Relaxed))
    }
}

/// A block of `4096 << order` bytes, page-aligned (and, from a [`PageHeap`], aligned to its
/// size), owned by whoever holds the token. The token borrows its source (`'a`), so the source
/// — and the memory behind it — outlives the block. It is not `Clone`; dropping it leaks the
/// block: give it back to its source ([`PageHeap::free_block`]).
///
/// [`PageHeap`]: crate::PageHeap
/// [`PageHeap::free_block`]: crate::PageHeap::free_block
#[derive(Debug)]
pub struct PageBlock<'a> {
    pub(crate) ptr: NonNull<u8>,
    pub(crate) order: u8,
    pub(crate) source: SourceId,
    _source: PhantomData<&'a ()>,
}

// SAFETY: a block is plain memory with no thread affinity; a PageHeap accepts a free from any
// thread (its allocator locks), and `from_raw`'s contract asks the same of other sources. The
// token is the only handle on the block.
unsafe impl Send for PageBlock<'_> {}

impl<'a> PageBlock<'a> {
    #[inline]
    pub(crate) fn new(ptr: NonNull<u8>, order: u8, source: SourceId) -> PageBlock<'a> {
        PageBlock { ptr, order, source, _source: PhantomData }
    }

    /// A token for a block of another source: what a wrapper over some other allocator hands
    /// out, so that code written against tokens can measure or check it too.
    ///
    /// # Safety
    ///
    /// `ptr` is aligned to 4096 bytes and valid for reads and writes of `4096 << order` bytes
    /// for `'a`; until the token is given back (or dropped), nothing reads or writes that
    /// memory except through this token, and no other token names it; the block may be freed
    /// from any thread; and `source` is the id of the source that handed the block out (a
    /// [`PageHeap`]'s only for a block of that heap, which its `free_block` then frees).
    ///
    /// [`PageHeap`]: crate::PageHeap
    #[inline]
    pub unsafe fn from_raw(ptr: NonNull<u8>, order: u8, source: SourceId) -> PageBlock<'a> {
        PageBlock::new(ptr, order, source)
    }

    /// End the token and return the block's pointer (its order is [`order`](Self::order)):
    /// how a source that made it with [`from_raw`](Self::from_raw) takes it back.
    #[inline]
    pub fn into_raw(self) -> NonNull<u8> {
        self.ptr
    }

    /// The source that handed the block out.
    #[inline]
    pub fn source(&self) -> SourceId {
        self.source
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
        pfn_of(self.addr())
    }

    /// Write `words(i)` into the first and the last 8 bytes of each 4 KiB page `i` of the
    /// block, with relaxed atomic stores (see the crate docs, "Blocks as tokens").
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
}

/// The 8-byte word at `addr`, accessed atomically. Stamps are written and read only through
/// this, so a block the allocator wrongly gave to two owners at once is a stamp that does not
/// match — caught — never a data race.
///
/// # Safety
///
/// `addr` is 8-aligned and inside memory that stays mapped for `'a`, and no non-atomic access
/// to that word runs concurrently with the returned reference's use.
#[inline]
pub(crate) unsafe fn stamp_word<'a>(addr: usize) -> &'a AtomicU64 {
    // SAFETY: forwarded contract; AtomicU64 has the size and (given 8-alignment) the
    // alignment of u64.
    unsafe { AtomicU64::from_ptr(addr as *mut u64) }
}

/// A fragment of a [`PageHeap`]'s page_frag page: `len` bytes that the holder owns until it
/// gives them back with [`PageHeap::frag_free`]. Not `Clone`, made only by
/// [`PageHeap::frag_alloc`]; dropping it leaks the fragment's reference on its page.
///
/// [`PageHeap`]: crate::PageHeap
/// [`PageHeap::frag_free`]: crate::PageHeap::frag_free
/// [`PageHeap::frag_alloc`]: crate::PageHeap::frag_alloc
#[derive(Debug)]
pub struct FragToken<'a> {
    pub(crate) frag: Frag,
    len: u32,
    _heap: PhantomData<&'a ()>,
}

impl FragToken<'_> {
    #[inline]
    pub(crate) fn new(frag: Frag, len: u32) -> Self {
        FragToken { frag, len, _heap: PhantomData }
    }

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

    /// Never: a fragment has at least 16 bytes.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The fragment's address.
    #[inline]
    pub fn addr(&self) -> usize {
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
#[non_exhaustive]
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

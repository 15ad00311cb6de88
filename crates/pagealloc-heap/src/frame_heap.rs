//! [`FrameHeap`]: a [`PageHeap`] reached by frame number only.

use pagealloc::types::PAGE_SIZE;
use pagealloc::{EventSink, NoEvents, PageAllocator, Pfn, RawSpinLock};

use crate::heap::{HeapError, HeapOptions, PageHeap};

/// A [`PageHeap`] reached by frame number only, for programs that drive the allocator the way
/// a kernel does — by frame numbers — on real memory, so that page writes cost what they cost
/// (a simulator's real-machine runner, say). It hands out no pointer, no
/// [`PageBlock`](crate::PageBlock) and no `Allocator` block: its allocator
/// ([`allocator`](Self::allocator)) answers with frame numbers, and [`touch`](Self::touch) and
/// [`copy`](Self::copy) are the only ways into its memory, with relaxed atomic accesses. No Rust
/// reference to the arena and no non-atomic access to it can therefore exist, which is what
/// makes them sound as safe functions.
///
/// (They are not methods of [`PageHeap`], whose blocks also go out behind references — a
/// `Vec` in the heap through the `Allocator` impl holds a `&mut [T]` over its block — and as
/// pointers promised valid for non-atomic reads and writes: a safe `touch` of such a block
/// would be a write under a live reference, undefined behaviour from safe code. Unsafe code
/// that turns one of this heap's frame numbers into a pointer must keep to atomic accesses
/// too.)
///
/// It keeps the core's spin lock ([`RawSpinLock`]), for callers whose threads take their steps
/// in turn under a lock of their own, and that read one allocator type for it and for
/// allocators built without a heap of memory.
///
/// ```
/// use pagealloc::{Gfp, NoEvents, Order};
/// use pagealloc_heap::{FrameHeap, HeapOptions};
///
/// let heap = FrameHeap::with_events(&HeapOptions::new(8 << 20), NoEvents)?;
/// let pa = heap.allocator();
/// let cpu = pa.cpu(pagealloc::CpuId(0)).expect("cpu 0");
/// let pfn = pa.alloc_pages(cpu, Gfp::KERNEL, Order(1))?;
/// assert_eq!(heap.touch(pfn, 8192, 0xabcd), Some(2)); // two pages written
/// pa.free_pages(cpu, pfn, Order(1))?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct FrameHeap<E: EventSink = NoEvents> {
    heap: PageHeap<E, RawSpinLock>,
}

impl<E: EventSink> FrameHeap<E> {
    /// Map an arena and build an allocator over it that reports its events to `sink`, as
    /// [`PageHeap::with_events`] does.
    ///
    /// # Errors
    ///
    /// As [`PageHeap::new`].
    pub fn with_events(opts: &HeapOptions, sink: E) -> Result<FrameHeap<E>, HeapError> {
        Ok(FrameHeap { heap: PageHeap::with_lock(opts, sink)? })
    }

    /// The allocator underneath: it hands out frame numbers of the arena.
    pub fn allocator(&self) -> &PageAllocator<E> {
        self.heap.allocator()
    }

    /// Write `value` into every 8-byte word of `bytes` bytes of the arena from the start of
    /// frame `pfn` on (pages after the first as needed; a partial last word is written
    /// whole), as the kernel's `clear_page` writes a page: a fast-string store over the whole
    /// range on x86-64 (`rep stosq`, whose full-line writes need not read the lines first),
    /// relaxed 8-byte atomic stores elsewhere. Either is a sequence of relaxed atomic stores
    /// of whole words, so two threads touching the same memory is never a data race. Returns
    /// the pages written, or `None` (and writes nothing) when the range is not inside the
    /// arena.
    pub fn touch(&self, pfn: Pfn, bytes: u64, value: u64) -> Option<u64> {
        let addr = usize::try_from(pfn.0).ok()?.checked_mul(PAGE_SIZE as usize)?;
        let words = usize::try_from(bytes).ok()?.div_ceil(8);
        if !self.heap.arena.contains(addr, words.checked_mul(8)?) {
            return None;
        }
        // SAFETY: `addr` is 8-aligned (the frame is page-aligned) and the `words` words are
        // inside the arena, which stays mapped while `&self` is borrowed. A FrameHeap hands
        // its memory out by frame number only (no reference, pointer or token exists: see
        // the type's documentation), so every other access to these words is atomic.
        unsafe { words::fill(addr, words, value) };
        Some(bytes.div_ceil(PAGE_SIZE))
    }

    /// Copy `bytes` bytes of the arena from the start of frame `from` to the start of frame
    /// `to` (a partial last word copied whole), as the kernel's `copy_page` copies a page (a
    /// migration's copy): a fast-string copy on x86-64 (`rep movsq`), relaxed 8-byte atomic
    /// loads and stores elsewhere; either is a sequence of relaxed atomic word accesses, as
    /// [`touch`](Self::touch) explains. Overlapping ranges are copied as that loop would,
    /// lowest address first (a migration's two blocks never overlap). Returns the pages
    /// copied, or `None` (and copies nothing) when either range is not inside the arena.
    pub fn copy(&self, from: Pfn, to: Pfn, bytes: u64) -> Option<u64> {
        let page = PAGE_SIZE as usize;
        let src = usize::try_from(from.0).ok()?.checked_mul(page)?;
        let dst = usize::try_from(to.0).ok()?.checked_mul(page)?;
        let words = usize::try_from(bytes).ok()?.div_ceil(8);
        let len = words.checked_mul(8)?;
        if !self.heap.arena.contains(src, len) || !self.heap.arena.contains(dst, len) {
            return None;
        }
        // SAFETY: both addresses are 8-aligned (frames are page-aligned) and both ranges of
        // `words` words are inside the arena, which stays mapped while `&self` is borrowed;
        // every other access to these words is atomic, as `touch` explains.
        unsafe { words::copy(src, dst, words) };
        Some(bytes.div_ceil(PAGE_SIZE))
    }
}

/// Whole-range word writes and copies made of relaxed atomic accesses: a fast-string
/// instruction on x86-64, the portable loops (`fill_atomic`, `copy_atomic`) elsewhere and
/// under Miri, which runs no assembly.
pub(crate) mod words {
    #[cfg(any(test, not(all(target_arch = "x86_64", not(miri)))))]
    use {crate::block::stamp_word, std::sync::atomic::Ordering::Relaxed};

    /// Store `value` into the `words` 8-byte words from `addr` on, lowest address first.
    ///
    /// # Safety
    ///
    /// `addr` is 8-aligned, the words are inside memory that stays mapped during the call,
    /// and every access to them that may run concurrently is atomic.
    pub(crate) unsafe fn fill(addr: usize, words: usize, value: u64) {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        // SAFETY: `rep stosq` stores `rax` into `rcx` consecutive 8-byte words from `rdi` up
        // (the ABI keeps the direction flag clear on entry to and exit from asm), touching
        // nothing else but the two registers, declared clobbered. Each store is an aligned
        // 8-byte store, atomic on x86-64, so the instruction does what `fill_atomic`'s loop
        // of relaxed `AtomicU64` stores does, which the caller's contract makes sound.
        unsafe {
            core::arch::asm!(
                "rep stosq",
                inout("rcx") words => _,
                inout("rdi") addr => _,
                in("rax") value,
                options(nostack, preserves_flags),
            );
        }
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        // SAFETY: forwarded contract.
        unsafe {
            fill_atomic(addr, words, value)
        };
    }

    /// Copy the `words` 8-byte words from `src` on to `dst` on, lowest address first (so
    /// ranges that overlap copy as a forward loop does).
    ///
    /// # Safety
    ///
    /// As [`fill`] for both ranges.
    pub(crate) unsafe fn copy(src: usize, dst: usize, words: usize) {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        // SAFETY: `rep movsq` copies `rcx` 8-byte words from `rsi` up to `rdi` up (direction
        // flag clear, as above), touching nothing else but the three registers, declared
        // clobbered: what `copy_atomic`'s loop of relaxed loads and stores does, as `fill`
        // argues.
        unsafe {
            core::arch::asm!(
                "rep movsq",
                inout("rcx") words => _,
                inout("rsi") src => _,
                inout("rdi") dst => _,
                options(nostack, preserves_flags),
            );
        }
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        // SAFETY: forwarded contract.
        unsafe {
            copy_atomic(src, dst, words)
        };
    }

    /// [`fill`] as a loop of relaxed `AtomicU64` stores.
    ///
    /// # Safety
    ///
    /// As [`fill`].
    #[cfg(any(test, not(all(target_arch = "x86_64", not(miri)))))]
    pub(crate) unsafe fn fill_atomic(addr: usize, words: usize, value: u64) {
        for w in 0..words {
            // SAFETY: inside the range of the caller's contract, 8-aligned.
            unsafe { stamp_word(addr + 8 * w).store(value, Relaxed) };
        }
    }

    /// [`copy`] as a loop of relaxed `AtomicU64` loads and stores.
    ///
    /// # Safety
    ///
    /// As [`copy`].
    #[cfg(any(test, not(all(target_arch = "x86_64", not(miri)))))]
    pub(crate) unsafe fn copy_atomic(src: usize, dst: usize, words: usize) {
        for w in 0..words {
            // SAFETY: inside the ranges of the caller's contract, 8-aligned.
            unsafe {
                let word = stamp_word(src + 8 * w).load(Relaxed);
                stamp_word(dst + 8 * w).store(word, Relaxed);
            }
        }
    }
}

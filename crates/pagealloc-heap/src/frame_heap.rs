//! [`FrameHeap`]: a [`PageHeap`] reached by frame number only.

use std::sync::atomic::Ordering::Relaxed;

use pagealloc::types::PAGE_SIZE;
use pagealloc::{EventSink, NoEvents, PageAllocator, Pfn, RawSpinLock};

use crate::block::stamp_word;
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

    /// Write into `bytes` bytes of the arena from the start of frame `pfn` on (pages after
    /// the first as needed): one relaxed 8-byte atomic store of `value` per 64-byte cache
    /// line, so every line is brought into the cache and dirtied as a real write would, and
    /// two threads touching the same memory is never a data race. Returns the pages written,
    /// or `None` (and writes nothing) when the range is not inside the arena.
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

//! [`MovableBlocks`]: the owner's side of compaction ([`Migrate`]) on a heap's real memory.

use std::collections::{BTreeMap, BTreeSet};
use std::ptr::NonNull;

use pagealloc::lock_api::RawMutex;
use pagealloc::types::PAGE_SHIFT;
use pagealloc::{EventSink, Migrate, NoEvents, Order, Pfn, Target};

use crate::block::{block_bytes, PageBlock};
use crate::heap::PageHeap;
use crate::lock::YieldLock;

/// Movable blocks of one [`PageHeap`], held together so that compaction may move them: the
/// owner's side of [`Migrate`] on real memory. Pass it to the heap's allocator
/// (`compact_zone`, `kcompactd`, `alloc_pages_compacting`); a block it moves is copied byte for
/// byte and its token then names the new place. Blocks not in the set are never moved: the
/// heap's pointers and `Allocator` blocks, which Rust references may point into, stay put.
///
/// ```
/// use pagealloc::{CompactMode, Gfp, Order};
/// use pagealloc_heap::{HeapOptions, MovableBlocks, PageHeap};
///
/// let heap = PageHeap::new(&HeapOptions::new(8 << 20).with(|o| o.cpus = Some(1)))?;
/// let mut set = MovableBlocks::new(&heap);
/// let mut b = heap.alloc_block_with(Gfp::HIGHUSER_MOVABLE, Order(0))?;
/// b.touch(7);
/// set.insert(b).expect("a block of this heap");
///
/// let pa = heap.allocator();
/// let zone = pa.zones()[0].idx();
/// pa.compact_zone(heap.current_cpu(), zone, None, CompactMode::SyncLight, &mut set)?;
/// for b in set.into_blocks() {
///     assert_eq!(b.tag(), 7); // wherever compaction put it, its contents came along
///     heap.free_block(b)?;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct MovableBlocks<'a, E: EventSink = NoEvents, L: RawMutex = YieldLock> {
    heap: &'a PageHeap<E, L>,
    /// First frame → the token of the block there.
    blocks: BTreeMap<u64, PageBlock<'a>>,
    /// Frames of blocks that must not move.
    pinned: BTreeSet<u64>,
}

impl<'a, E: EventSink, L: RawMutex> MovableBlocks<'a, E, L> {
    /// An empty set for `heap`'s blocks.
    pub fn new(heap: &'a PageHeap<E, L>) -> MovableBlocks<'a, E, L> {
        MovableBlocks { heap, blocks: BTreeMap::new(), pinned: BTreeSet::new() }
    }

    /// Add a block.
    ///
    /// # Errors
    ///
    /// A block of another source is handed back.
    pub fn insert(&mut self, block: PageBlock<'a>) -> Result<(), PageBlock<'a>> {
        if block.source != self.heap.source_id() {
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

    /// Every token, by first frame, to give back with [`PageHeap::free_block`].
    pub fn into_blocks(self) -> Vec<PageBlock<'a>> {
        self.blocks.into_values().collect()
    }
}

impl<E: EventSink, L: RawMutex> Migrate for MovableBlocks<'_, E, L> {
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

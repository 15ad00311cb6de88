//! Frames for the `x86_64` crate's page-table code (feature `x86_64`): [`X86Frames`]
//! implements its `FrameAllocator` and `FrameDeallocator` for 4 KiB and 2 MiB frames, so a
//! kernel written on that crate maps pages (`Mapper::map_to`) with frames from this allocator,
//! page-table frames included.
//!
//! Frame numbers are physical addresses shifted right by 12 in both crates: a `Pfn` is a
//! `PhysFrame` without the wrapper. A 2 MiB frame is an order-9 block (a pageblock); 1 GiB
//! frames are beyond the largest block (order 10) and not offered.
#![allow(unsafe_code)]

use x86_64::structures::paging::{
    FrameAllocator, FrameDeallocator, PageSize, PhysFrame, Size2MiB, Size4KiB,
};
use x86_64::PhysAddr;

use crate::events::{EventSink, NoEvents};
use crate::gfp::Gfp;
use crate::page_alloc::{Cpu, PageAllocator};
use crate::sync::{RawLock, RawSpinLock};
use crate::types::{Order, Pfn, PAGEBLOCK_ORDER};

/// An allocator's frames as the `x86_64` crate asks for them: each call allocates or frees on
/// one CPU's pageset with one set of GFP flags.
///
/// ```
/// use pagealloc::x86_64_frames::X86Frames;
/// use pagealloc::{CpuId, MemoryMap, PageAllocator, Policy, Tunables};
/// use x86_64::structures::paging::{FrameAllocator, FrameDeallocator, PhysFrame, Size4KiB};
///
/// let pa = PageAllocator::new(MemoryMap::single_node(1, 64 << 20)?, Tunables::default(), Policy::modern())?;
/// let cpu = pa.cpu(CpuId(0)).unwrap();
/// let mut frames = X86Frames::new(&pa, cpu);
/// let frame: PhysFrame<Size4KiB> = frames.allocate_frame().expect("memory is free");
/// // SAFETY: the frame is not used (nothing was mapped with it).
/// unsafe { frames.deallocate_frame(frame) };
/// pa.drain_all_pages(cpu, None); // the pageset's cache back to the free lists
/// assert_eq!(pa.nr_free_pages(), pa.managed_pages());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct X86Frames<'a, E: EventSink = NoEvents, L: RawLock = RawSpinLock> {
    pa: &'a PageAllocator<E, L>,
    cpu: Cpu,
    gfp: Gfp,
}

impl<'a, E: EventSink, L: RawLock> X86Frames<'a, E, L> {
    /// Frames of `pa` allocated on `cpu` with `GFP_KERNEL`.
    pub fn new(pa: &'a PageAllocator<E, L>, cpu: Cpu) -> X86Frames<'a, E, L> {
        X86Frames { pa, cpu, gfp: Gfp::KERNEL }
    }

    /// The same, allocating with `gfp` (e.g. `Gfp::DMA32` for page tables a device walks).
    #[must_use]
    pub fn with_gfp(self, gfp: Gfp) -> X86Frames<'a, E, L> {
        X86Frames { gfp, ..self }
    }

    /// A block of `order` as a frame of size `S`, or `None` (out of memory, or an address
    /// the `x86_64` crate cannot represent: then the block goes back).
    fn allocate<S: PageSize>(&mut self, order: Order) -> Option<PhysFrame<S>> {
        let pfn = self.pa.alloc_pages(self.cpu, self.gfp, order).ok()?;
        let frame =
            PhysAddr::try_new(pfn.phys()).ok().and_then(|a| PhysFrame::from_start_address(a).ok());
        if frame.is_none() {
            let _ = self.pa.free_pages(self.cpu, pfn, order);
        }
        frame
    }

    /// Free a frame of size `S`, allocated as a block of `order`.
    fn deallocate<S: PageSize>(&mut self, frame: PhysFrame<S>, order: Order) {
        let freed =
            self.pa.free_pages(self.cpu, Pfn::from_phys(frame.start_address().as_u64()), order);
        // The trait has no way to report a bad free; the allocator refused it and changed
        // nothing, and a debug build says so.
        debug_assert!(freed.is_ok(), "deallocate_frame of a frame not allocated here: {freed:?}");
    }
}

// SAFETY: every frame comes from `alloc_pages`, which hands a block to one owner until it is
// freed: unique and unused.
unsafe impl<E: EventSink, L: RawLock> FrameAllocator<Size4KiB> for X86Frames<'_, E, L> {
    fn allocate_frame(&mut self) -> Option<PhysFrame<Size4KiB>> {
        self.allocate(Order(0))
    }
}

// SAFETY: as for 4 KiB frames; an order-9 block is 2 MiB, aligned to 2 MiB in physical
// addresses (blocks are aligned to their size in frame numbers).
unsafe impl<E: EventSink, L: RawLock> FrameAllocator<Size2MiB> for X86Frames<'_, E, L> {
    fn allocate_frame(&mut self) -> Option<PhysFrame<Size2MiB>> {
        self.allocate(Order(PAGEBLOCK_ORDER))
    }
}

impl<E: EventSink, L: RawLock> FrameDeallocator<Size4KiB> for X86Frames<'_, E, L> {
    unsafe fn deallocate_frame(&mut self, frame: PhysFrame<Size4KiB>) {
        self.deallocate(frame, Order(0));
    }
}

impl<E: EventSink, L: RawLock> FrameDeallocator<Size2MiB> for X86Frames<'_, E, L> {
    unsafe fn deallocate_frame(&mut self, frame: PhysFrame<Size2MiB>) {
        self.deallocate(frame, Order(PAGEBLOCK_ORDER));
    }
}

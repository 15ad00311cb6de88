//! Page tables built by the `x86_64` crate's mapper with frames from this allocator, the way
//! a kernel written on that crate maps memory: the mapper asks `X86Frames` for the data frames
//! and for every page-table frame it needs, and writes the tables through a physical-memory
//! offset. Here "physical memory" is a 64 MiB buffer and the offset its address, so the tables
//! are real and the translations can be checked, without loading them into CR3.
#![cfg(feature = "x86_64")]
#![allow(unsafe_code)]

use std::alloc::{alloc_zeroed, Layout};

use pagealloc::x86_64_frames::X86Frames;
use pagealloc::{CpuId, MemoryMap, PageAllocator, Policy, Tunables};
use x86_64::structures::paging::mapper::Translate;
use x86_64::structures::paging::{
    FrameAllocator, FrameDeallocator, Mapper, OffsetPageTable, Page, PageTable, PageTableFlags,
    PhysFrame, Size2MiB, Size4KiB,
};
use x86_64::VirtAddr;

const MEMORY: usize = 64 << 20;

#[test]
fn the_mapper_builds_page_tables_from_the_allocators_frames() {
    let layout = Layout::from_size_align(MEMORY, 4096).unwrap();
    // SAFETY: a non-zero layout; the buffer is leaked, so it outlives everything here.
    let base = unsafe { alloc_zeroed(layout) };
    assert!(!base.is_null());
    let offset = VirtAddr::new(base as u64);
    let map = MemoryMap::single_node(1, MEMORY as u64).unwrap();
    let pa = PageAllocator::new(map, Tunables::default(), Policy::modern()).unwrap();
    let cpu = pa.cpu(CpuId(0)).unwrap();
    // Pages taken from the allocator (the pageset's cache drained first: it is not free).
    let held = || {
        pa.drain_all_pages(cpu, None);
        pa.managed_pages().0 - pa.nr_free_pages().0
    };
    let mut frames = X86Frames::new(&pa, cpu);

    let l4_frame: PhysFrame<Size4KiB> = frames.allocate_frame().unwrap();
    // SAFETY: the frame is this test's (just allocated), inside the buffer at `offset`, aligned
    // to 4 KiB, and nothing else refers to it.
    let l4 =
        unsafe { &mut *(base.add(l4_frame.start_address().as_u64() as usize) as *mut PageTable) };
    l4.zero();
    // SAFETY: all of physical memory (the buffer) is at `offset`, and `l4` is a valid table.
    let mut mapper = unsafe { OffsetPageTable::new(l4, offset) };
    let flags = PageTableFlags::PRESENT | PageTableFlags::WRITABLE;

    let mut mapped = Vec::new();
    for i in 0..3u64 {
        let page: Page<Size4KiB> =
            Page::containing_address(VirtAddr::new(0x4000_0000_0000 + i * 4096));
        let frame: PhysFrame<Size4KiB> = frames.allocate_frame().unwrap();
        // SAFETY: the page is mapped to a frame no one else uses; the flush is skipped because
        // these tables are never loaded.
        unsafe { mapper.map_to(page, frame, flags, &mut frames) }.unwrap().ignore();
        mapped.push((page, frame));
    }
    // One 4 KiB level-4 table, three data frames and one table of each lower level.
    assert_eq!(held(), 1 + 3 + 3);
    for (page, frame) in &mapped {
        let got = mapper.translate_addr(page.start_address() + 0x123u64);
        assert_eq!(got, Some(frame.start_address() + 0x123u64));
    }

    // A 2 MiB page: an order-9 block, aligned to 2 MiB, mapped by a new level-2 table under
    // the same level-3 table.
    let huge_frame: PhysFrame<Size2MiB> = frames.allocate_frame().unwrap();
    assert_eq!(huge_frame.start_address().as_u64() % (2 << 20), 0);
    let huge: Page<Size2MiB> = Page::containing_address(VirtAddr::new(0x4000_4000_0000));
    // SAFETY: as above.
    unsafe { mapper.map_to(huge, huge_frame, flags, &mut frames) }.unwrap().ignore();
    let got = mapper.translate_addr(huge.start_address() + 0x12_3456u64);
    assert_eq!(got, Some(huge_frame.start_address() + 0x12_3456u64));

    // Unmapped frames go back to the allocator.
    for (page, _) in mapped {
        let (frame, flush) = mapper.unmap(page).unwrap();
        flush.ignore();
        // SAFETY: the frame is unmapped and used by nothing else.
        unsafe { frames.deallocate_frame(frame) };
    }
    let (frame, flush) = mapper.unmap(huge).unwrap();
    flush.ignore();
    // SAFETY: as above.
    unsafe { frames.deallocate_frame(frame) };
    // The tables remain: the level-4 table, a level-3, and a level-2 for each region.
    assert_eq!(held(), 1 + 1 + 2 + 1);
    pagealloc::debug::validate(&pa).unwrap();
}

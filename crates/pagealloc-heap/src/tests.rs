//! PageHeap's behaviour: blocks, tokens, fragments, errors, compaction, FrameHeap, and the
//! allocator-api2 `Allocator` impls (containers of both trait versions, a hashbrown map).

use std::ptr::NonNull;
use std::sync::atomic::Ordering::Relaxed;

use pagealloc::debug::validate;
use pagealloc::page_alloc::FRAME_METADATA_BYTES;
use pagealloc::types::{MAX_PAGE_ORDER, PAGE_SHIFT};
use pagealloc::{
    AllocError, CompactMode, CompactResult, CpuId, FreeError, Gfp, NoEvents, Order, PageAllocator,
    PageFragCache, Pfn, RawSpinLock,
};

use crate::block::{pfn_of, stamp_word};
use crate::*;

fn heap(mib: usize) -> PageHeap {
    PageHeap::new(&HeapOptions { cpus: Some(2), ..HeapOptions::new(mib << 20) }).expect("heap")
}

fn drained_and_valid(h: &PageHeap) {
    let pa = h.allocator();
    pa.drain_all_pages(pa.cpu(CpuId(0)).unwrap(), None);
    assert_eq!(pa.nr_free_pages(), pa.managed_pages());
    validate(pa).expect("invariants");
}

/// A `PageHeap`'s allocator is built with the yielding lock, and a `FrameHeap`'s with the
/// core's spin lock (the types say so; this fails to compile otherwise).
#[test]
fn heaps_use_their_locks() {
    let h = heap(16);
    let _: &PageAllocator<NoEvents, YieldLock> = h.allocator();
    let o = HeapOptions { cpus: Some(2), ..HeapOptions::new(16 << 20) };
    let f = FrameHeap::with_events(&o, NoEvents).expect("heap");
    let _: &PageAllocator<NoEvents, RawSpinLock> = f.allocator();
    let cpu = h.current_cpu();
    let pfn = h.allocator().alloc_pages(cpu, Gfp::KERNEL, Order(0)).expect("a page");
    h.allocator().free_pages(cpu, pfn, Order(0)).expect("free");
    validate(h.allocator()).expect("valid");
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

/// A set refuses another heap's block and hands it back.
#[test]
fn a_movable_set_takes_only_its_heaps_blocks() {
    let (h, other) = (heap(8), heap(8));
    let mut set = MovableBlocks::new(&h);
    let b = other.alloc_block(Order(0)).unwrap();
    let b = set.insert(b).expect_err("a foreign block");
    other.free_block(b).unwrap();
    assert!(set.is_empty());
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
        let mut b = h.alloc_block(Order(o)).unwrap();
        let a = b.addr();
        assert_eq!(a % block_bytes(o), 0, "order {o} at {a:#x}");
        assert!(h.arena.contains(a, block_bytes(o)));
        assert_eq!((b.order(), b.source()), (o, h.source_id()));
        b.touch(u64::from(o));
        assert_eq!(b.tag(), u64::from(o));
        h.free_block(b).unwrap();
    }
    assert!(h.alloc_block(Order(MAX_PAGE_ORDER + 1)).is_err());
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
    // Tokens: a block of another heap is refused (and leaked, not freed) …
    let other = heap(8);
    let b = other.alloc_block(Order(0)).unwrap();
    let addr = b.addr();
    assert_eq!(h.free_block(b), Err(BlockFreeError::Foreign));
    // … and so is one made by `from_raw` for another source: its owner takes it back.
    // SAFETY: the leaked block above is live in `other` and no other token names it.
    let b = unsafe {
        PageBlock::from_raw(NonNull::new(addr as *mut u8).unwrap(), 0, other.source_id())
    };
    // SAFETY: `b` is consumed, so `c` is the only token for the block.
    let c = unsafe { PageBlock::from_raw(b.into_raw(), 0, SourceId::unique()) };
    assert_eq!(h.free_block(c), Err(BlockFreeError::Foreign));
    // SAFETY: as above (the token `c` was consumed and leaked).
    let b = unsafe {
        PageBlock::from_raw(NonNull::new(addr as *mut u8).unwrap(), 0, other.source_id())
    };
    other.free_block(b).unwrap();
    drained_and_valid(&h);
    drained_and_valid(&other);
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
    assert!(frags.iter().all(|f| f.addr() % 8 == 0 && pfn_of(f.addr()).0 >= f.page().0));
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

/// Bad sizes are refused before anything is mapped.
#[test]
fn bad_arena_sizes_are_errors() {
    for bytes in [0, 4095, 4097] {
        let e = PageHeap::new(&HeapOptions::new(bytes)).unwrap_err();
        assert!(matches!(e, HeapError::BadSize(n) if n == bytes), "{e}");
    }
    let o = HeapOptions { huge: HugePages::Hugetlb, ..HeapOptions::new(4096) };
    assert!(matches!(PageHeap::new(&o), Err(HeapError::BadSize(4096))));
}

/// Flags that name no zone are refused when the heap is built (every allocation would fail);
/// the heap's own allocations with good flags take the prepared path and a block allocated
/// with other flags frees as any other.
#[test]
fn heap_flags_are_checked_once() {
    let gfp = Gfp::KERNEL | Gfp::DMA | Gfp::DMA32;
    let e = PageHeap::new(&HeapOptions::new(16 << 20).with(|o| o.gfp = gfp)).unwrap_err();
    assert!(matches!(e, HeapError::Flags(AllocError::ImpossibleZones(g)) if g == gfp), "{e}");
    assert!(e.to_string().contains("allocation flags"), "{e}");
    let h = PageHeap::new(&HeapOptions::new(16 << 20)).unwrap();
    let own = h.alloc_block(Order(1)).unwrap();
    let movable = h.alloc_block_with(Gfp::HIGHUSER_MOVABLE, Order(0)).unwrap();
    h.free_block(own).unwrap();
    h.free_block(movable).unwrap();
    drained_and_valid(&h);
}

/// The words from `addr` on, read atomically.
fn words_at(addr: usize, words: usize) -> Vec<u64> {
    // SAFETY: the callers pass 8-aligned ranges inside a mapped arena, whose every access is
    // atomic.
    (0..words).map(|w| unsafe { stamp_word(addr + 8 * w).load(Relaxed) }).collect()
}

/// A FrameHeap writes every word of a block its allocator gave out by frame number (a
/// partial last word whole, nothing after it), and writes nothing for a range outside the
/// arena; a copy moves every word.
#[test]
fn a_frame_heap_touches_and_copies_blocks_by_frame_number() {
    let o = HeapOptions { cpus: Some(2), ..HeapOptions::new(16 << 20) };
    let h = FrameHeap::with_events(&o, NoEvents).expect("heap");
    let pa = h.allocator();
    let cpu = pa.cpu(CpuId(0)).unwrap();
    let pfn = pa.alloc_pages(cpu, Gfp::KERNEL, Order(1)).unwrap();
    let to = pa.alloc_pages(cpu, Gfp::KERNEL, Order(1)).unwrap();
    let (base, target) = ((pfn.0 as usize) << PAGE_SHIFT, (to.0 as usize) << PAGE_SHIFT);
    assert_eq!(h.touch(pfn, 8192, 7), Some(2));
    assert_eq!(h.touch(to, 8192, 3), Some(2));
    assert_eq!(h.copy(pfn, to, 8192), Some(2));
    assert!(words_at(base, 1024).iter().chain(&words_at(target, 1024)).all(|&w| w == 7));

    // 100 bytes are 13 words, the last partly asked for and written whole; the 14th keeps 7.
    assert_eq!(h.touch(pfn, 100, 9), Some(1));
    assert_eq!(words_at(base, 14), [[9; 13].as_slice(), &[7]].concat());
    assert_eq!(h.copy(pfn, to, 100), Some(1));
    assert_eq!(words_at(target, 14), [[9; 13].as_slice(), &[7]].concat());

    assert_eq!(h.touch(Pfn(1), 64, 7), None);
    assert_eq!(h.touch(pfn, u64::MAX, 7), None);
    assert_eq!(h.touch(Pfn(u64::MAX), 64, 7), None);
    assert_eq!(h.copy(pfn, Pfn(1), 64), None);
    assert_eq!(words_at(base, 14), [[9; 13].as_slice(), &[7]].concat(), "refused: untouched");
    pa.free_pages(cpu, pfn, Order(1)).unwrap();
    pa.free_pages(cpu, to, Order(1)).unwrap();
}

/// The fast-string fill and copy write what the portable loops of atomic stores write, word
/// for word, at every length from none to a page and a word.
#[test]
fn the_word_fill_and_copy_match_their_portable_loops() {
    use crate::frame_heap::words;
    let h = FrameHeap::with_events(&HeapOptions::new(8 << 20), NoEvents).expect("heap");
    let pa = h.allocator();
    let cpu = pa.cpu(CpuId(0)).unwrap();
    let pfns: Vec<Pfn> =
        (0..4).map(|_| pa.alloc_pages(cpu, Gfp::KERNEL, Order(1)).unwrap()).collect();
    let [a, b, c, d] = [0, 1, 2, 3].map(|i| (pfns[i].0 as usize) << PAGE_SHIFT);
    for n in [0, 1, 2, 7, 8, 9, 63, 64, 65, 511, 512, 513] {
        // SAFETY: each block is two pages (1024 words) of the arena, 8-aligned, and this
        // test's accesses are all atomic.
        unsafe {
            for (dst, v) in [(a, 1), (b, 1), (c, 2), (d, 2)] {
                words::fill_atomic(dst, 1024, v);
            }
            words::fill(a, n, 0xfeed + n as u64);
            words::fill_atomic(b, n, 0xfeed + n as u64);
            words::copy(a, c, n + 1);
            words::copy_atomic(b, d, n + 1);
        }
        assert_eq!(words_at(a, 1024), words_at(b, 1024), "fill of {n} words");
        assert_eq!(words_at(c, 1024), words_at(d, 1024), "copy of {} words", n + 1);
        assert_eq!(words_at(c, n + 1), words_at(a, n + 1));
    }
    for p in pfns {
        pa.free_pages(cpu, p, Order(1)).unwrap();
    }
}

/// The `Allocator` impls, through containers as a user holds them.
#[cfg(feature = "allocator-api2")]
mod allocator {
    use std::alloc::Layout;

    use super::*;

    /// Pages the heap's pagesets hold.
    fn pcp_held(h: &PageHeap) -> u64 {
        h.allocator().zones().iter().map(|z| z.pcp_pages()).sum()
    }

    #[test]
    fn vec_in_the_heap_grows_over_several_pages() {
        use allocator_api2::vec::Vec as ApiVec;
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

    /// The 0.4 trait: the same container test, through the other version's `Vec`.
    #[cfg(feature = "allocator-api2-04")]
    #[test]
    fn vec_of_allocator_api2_04_in_the_heap() {
        use allocator_api2_04::vec::Vec as ApiVec;
        let h = heap(16);
        let mut v: ApiVec<u64, &PageHeap> = ApiVec::new_in(&h);
        v.extend(0..5_000u64);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
        v.truncate(10);
        v.shrink_to_fit();
        assert_eq!(v.iter().sum::<u64>(), 45);
        drop(v);
        drained_and_valid(&h);
    }

    #[test]
    fn allocator_trait_refuses_what_no_block_serves() {
        use allocator_api2::alloc::{AllocError, Allocator};
        let h = heap(16);
        let too_big = Layout::from_size_align(block_bytes(MAX_PAGE_ORDER) + 1, 4096).unwrap();
        assert_eq!(h.allocate(too_big), Err(AllocError));
        let too_aligned = Layout::from_size_align(4096, 8 << 20).unwrap();
        assert_eq!(h.allocate(too_aligned), Err(AllocError));
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
    fn an_exhausted_heap_refuses_allocate() {
        use allocator_api2::alloc::{AllocError, Allocator};
        let h = heap(8);
        let mut held = Vec::new();
        while let Ok(p) = h.alloc_pages(Order(0)) {
            held.push(p);
        }
        let page = Layout::from_size_align(4096, 4096).unwrap();
        assert_eq!(h.allocate(page), Err(AllocError));
        for p in held {
            // SAFETY: every held block is live and unused.
            unsafe { h.dealloc(p, Order(0)) }.unwrap();
        }
        drained_and_valid(&h);
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
}

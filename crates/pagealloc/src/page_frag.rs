//! The page_frag cache: network drivers carve RX/TX buffers of a few hundred bytes to a few
//! KiB out of 32 KiB (order-3) pages, one reference per fragment (docs/kernel-reference.md §6,
//! 6.13+ form, where the offset counts up). The last fragment freed frees the page — through the
//! per-CPU lists or straight to the buddy lists as [`Policy::page_frag_free`] says (seed 003).
//!
//! The page's reference count lives in its head frame's owner word (`Frame::aux`) while a cache
//! or fragments hold it. The cache keeps a bias of references it has not handed out yet, so
//! carving a fragment touches no shared state. The bias never runs out: a page whose bias is
//! down to [`MIN_BIAS`] counts as full (only zero-byte fragments get there, after 32 767 of
//! them), and a page carved or with fragments out holds more than one reference, which
//! [`PageAllocator::free_pages`] refuses to free.
//!
//! Not modelled: pfmemalloc pages (pages from the emergency reserves are reused like any
//! other), because the allocator does not tag them.

use crate::sync::Ordering::{AcqRel, Relaxed};
use crate::sync::RawLock;

use crate::error::{AllocError, FreeError};
use crate::events::EventSink;
use crate::gfp::Gfp;
use crate::mem_map::FrameState;
use crate::policy::PageFragFree;
use crate::types::{Order, Pfn, PAGE_SIZE};
use crate::{Cpu, PageAllocator};

#[cfg(doc)]
use crate::policy::Policy;

pub use crate::types::PAGE_FRAG_CACHE_MAX_SIZE;
/// Its order.
pub const PAGE_FRAG_CACHE_MAX_ORDER: Order = Order(3);
/// References the cache keeps on the page it carves: its own and a spare, so the page's count
/// stays above 1 (and `free_pages` refuses it) while the cache holds it. A page whose bias is
/// down to this is full: the next fragment goes to a fresh or reused page.
pub const MIN_BIAS: u32 = 2;
/// The largest fragment alignment: a fragment cannot be aligned beyond the page it is carved
/// from, and the cache falls back to order-0 pages.
pub const MAX_FRAG_ALIGN: u32 = PAGE_SIZE as u32;

/// A fragment: `len` bytes at byte `offset` of the block whose first frame is `page`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frag {
    /// First frame of the page the fragment was carved from (what `page_frag_free` needs).
    pub page: Pfn,
    /// Byte offset in that page.
    pub offset: u32,
}

/// One page_frag cache (the kernel keeps one per CPU and per NAPI context). It serves one
/// allocator: the one whose page it carves (another is refused).
#[derive(Debug, Default)]
pub struct PageFragCache {
    /// The page being carved, with its order.
    page: Option<(Pfn, Order)>,
    /// Identity of the allocator the page came from (0 while there is none).
    owner: u64,
    /// Next free byte (6.13+: counts up from 0).
    offset: u32,
    /// References the cache still holds on the page (handed out one per fragment).
    pagecnt_bias: u32,
}

impl PageFragCache {
    /// An empty cache; the first allocation refills it.
    pub const fn new() -> PageFragCache {
        PageFragCache { page: None, owner: 0, offset: 0, pagecnt_bias: 0 }
    }

    /// The page being carved and its order, if any.
    pub fn page(&self) -> Option<(Pfn, Order)> {
        self.page
    }

    /// Carve `fragsz` bytes aligned to `align` (a power of two up to [`MAX_FRAG_ALIGN`], 1
    /// for none) on `cpu` (kernel `page_frag_alloc_align`). Fails if no page can be had, or if
    /// `fragsz` exceeds a page and does not fit what is left of the cache's page.
    ///
    /// # Errors
    /// [`AllocError::InvalidAlign`], [`AllocError::FragTooLarge`] (above 32 KiB),
    /// [`AllocError::InvalidCpu`] and [`AllocError::ForeignFragCache`] before anything
    /// changes; [`AllocError::OutOfMemory`] and the refill's errors otherwise.
    pub fn alloc<E: EventSink, L: RawLock>(
        &mut self,
        pa: &PageAllocator<E, L>,
        cpu: Cpu,
        fragsz: u32,
        gfp: Gfp,
        align: u32,
    ) -> Result<Frag, AllocError> {
        self.check_request(pa, cpu, fragsz, align)?;
        let (mut page, mut order) = match self.page {
            Some(p) => p,
            None => self.refill(pa, cpu, gfp)?,
        };
        let mut size = (PAGE_SIZE as u32) << order.0;
        // offset <= 32 KiB and align <= 4 KiB: no overflow.
        let mut offset = self.offset.next_multiple_of(align);
        let full = self.pagecnt_bias <= MIN_BIAS;
        if full || offset.saturating_add(fragsz) > size {
            if fragsz as u64 > PAGE_SIZE && !full {
                // Keep the page: releasing it under memory pressure would not help.
                return Err(AllocError::OutOfMemory { order });
            }
            let refs = pa.frag_refs(page).ok_or(AllocError::OutOfMemory { order })?;
            if refs.fetch_sub(self.pagecnt_bias, AcqRel) == self.pagecnt_bias {
                // Every fragment came back: reuse the page.
                refs.store(PAGE_FRAG_CACHE_MAX_SIZE + 1, Relaxed);
                self.pagecnt_bias = PAGE_FRAG_CACHE_MAX_SIZE + 1;
                self.offset = 0;
            } else {
                // Fragments are still out; the last page_frag_free frees the page.
                self.page = None;
                self.owner = 0;
                (page, order) = self.refill(pa, cpu, gfp)?;
                size = (PAGE_SIZE as u32) << order.0;
            }
            if fragsz > size {
                // An order-0 page (fresh, or reused once full) cannot hold it.
                return Err(AllocError::OutOfMemory { order });
            }
            offset = 0;
        }
        // pagecnt_bias > MIN_BIAS (a fresh or reused page has 32 769), and the fragment fits.
        self.pagecnt_bias -= 1;
        self.offset = offset + fragsz;
        Ok(Frag { page, offset })
    }

    /// Refuse what no page could serve, before anything changes: an alignment that is not a
    /// power of two up to [`MAX_FRAG_ALIGN`] (above 2^31 none is, and rounding up used to
    /// divide by zero), a fragment above 32 KiB, a CPU or an allocator the cache does not
    /// serve.
    fn check_request<E: EventSink, L: RawLock>(
        &self,
        pa: &PageAllocator<E, L>,
        cpu: Cpu,
        fragsz: u32,
        align: u32,
    ) -> Result<(), AllocError> {
        if !align.is_power_of_two() || align > MAX_FRAG_ALIGN {
            return Err(AllocError::InvalidAlign(align));
        }
        if fragsz > PAGE_FRAG_CACHE_MAX_SIZE {
            return Err(AllocError::FragTooLarge { size: fragsz });
        }
        if !pa.owns(cpu) {
            return Err(AllocError::InvalidCpu(cpu.id));
        }
        if self.page.is_some() && self.owner != pa.id() {
            return Err(AllocError::ForeignFragCache);
        }
        Ok(())
    }

    /// Get a fresh page: order 3 without reclaim or reserves, else order 0 with the caller's
    /// flags (kernel `__page_frag_cache_refill`).
    fn refill<E: EventSink, L: RawLock>(
        &mut self,
        pa: &PageAllocator<E, L>,
        cpu: Cpu,
        gfp: Gfp,
    ) -> Result<(Pfn, Order), AllocError> {
        let big = (gfp | Gfp::COMP | Gfp::NOWARN | Gfp::NOMEMALLOC) & !Gfp::DIRECT_RECLAIM;
        let (page, order) = match pa.alloc_pages(cpu, big, PAGE_FRAG_CACHE_MAX_ORDER) {
            Ok(p) => (p, PAGE_FRAG_CACHE_MAX_ORDER),
            Err(_) => (pa.alloc_pages(cpu, gfp, Order(0))?, Order(0)),
        };
        // The allocation's own reference plus one per fragment the cache may hand out.
        if let Some(refs) = pa.frag_refs(page) {
            refs.store(PAGE_FRAG_CACHE_MAX_SIZE + 1, Relaxed);
        }
        self.page = Some((page, order));
        self.owner = pa.id();
        self.pagecnt_bias = PAGE_FRAG_CACHE_MAX_SIZE + 1;
        self.offset = 0;
        Ok((page, order))
    }

    /// Give back the references the cache still holds, freeing the page if no fragment is
    /// out (kernel `page_frag_cache_drain`).
    ///
    /// # Errors
    /// [`FreeError::InvalidCpu`] for a CPU of another allocator, [`FreeError::ForeignFrame`]
    /// when the cache's page is another allocator's; the cache keeps its page then.
    pub fn drain<E: EventSink, L: RawLock>(
        &mut self,
        pa: &PageAllocator<E, L>,
        cpu: Cpu,
    ) -> Result<(), FreeError> {
        if !pa.owns(cpu) {
            return Err(FreeError::InvalidCpu(cpu.id));
        }
        let Some((page, order)) = self.page else { return Ok(()) };
        if self.owner != pa.id() {
            return Err(FreeError::ForeignFrame(page));
        }
        let bias = self.pagecnt_bias;
        *self = PageFragCache::new();
        if let Some(refs) = pa.frag_refs(page) {
            if refs.fetch_sub(bias, AcqRel) == bias {
                // The cache held the block and the CPU is checked: only a bug of ours fails.
                pa.free_frag_page(cpu, page, order)?;
            }
        }
        Ok(())
    }
}

impl<E: EventSink, L: RawLock> PageAllocator<E, L> {
    /// The reference count of an allocated page_frag page.
    fn frag_refs(&self, page: Pfn) -> Option<&crate::sync::AtomicU32> {
        let zone = self.zone_of(page)?;
        let frame = zone.frame(page);
        (frame.info().state == FrameState::Allocated).then(|| frame.aux())
    }

    /// Drop one fragment's reference on `page`; the last one frees the page, through the
    /// per-CPU lists or not as the policy says (kernel `page_frag_free`).
    pub fn page_frag_free(&self, cpu: Cpu, page: Pfn) -> Result<(), FreeError> {
        // Checked before the reference is dropped: the free at the last one must not fail.
        if !self.owns(cpu) {
            return Err(FreeError::InvalidCpu(cpu.id));
        }
        let zone = self.zone_of(page).ok_or(FreeError::ForeignFrame(page))?;
        if E::ENABLED {
            // The reference count lives in the page's metadata line.
            self.events.touch(cpu.id, crate::events::MetaLine::Frame(page));
        }
        let info = zone.frame(page).info();
        if info.state != FrameState::Allocated {
            return Err(FreeError::NotAllocated { pfn: page });
        }
        let refs = zone.frame(page).aux();
        // Refuse to go below zero: that would be a fragment freed twice.
        let prev = refs
            .fetch_update(AcqRel, Relaxed, |r| r.checked_sub(1))
            .map_err(|_| FreeError::DoubleFree { pfn: page })?;
        if prev == 1 {
            self.free_frag_page(cpu, page, info.order)?;
        }
        Ok(())
    }

    /// Free a page_frag page whose last reference is gone.
    fn free_frag_page(&self, cpu: Cpu, page: Pfn, order: Order) -> Result<(), FreeError> {
        let through_pcp = match self.policy.page_frag_free {
            PageFragFree::Buddy => false,
            PageFragFree::PcpOrder0 => order.0 == 0,
            PageFragFree::Pcp => true,
        };
        self.free_pages_routed(cpu, page, order, through_pcp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debug::validate;
    use crate::{Counter, CpuId, MemoryMap, NodeId, Policy, Tunables};

    /// The machine size under miri, MiB.
    const MIRI_MIB: u64 = 32;

    fn machine(policy: Policy, mib: u64) -> PageAllocator {
        // Miri checks every atomic access for races, which makes building and validating a
        // 64 MiB machine take minutes there; what these tests check does not need that size.
        let mib = if cfg!(miri) { mib.min(MIRI_MIB) } else { mib };
        let mut map = MemoryMap::new();
        map.add_range(NodeId(0), (4096 << 20)..((4096 + mib) << 20))
            .unwrap()
            .set_cpus(NodeId(0), 2)
            .unwrap();
        PageAllocator::new(map, Tunables::default(), policy).unwrap()
    }

    #[test]
    fn fragments_are_carved_upwards_and_aligned() {
        let pa = machine(Policy::modern(), 64);
        let cpu = pa.cpu(CpuId(0)).unwrap();
        let mut nc = PageFragCache::new();
        let a = nc.alloc(&pa, cpu, 1500, Gfp::ATOMIC, 1).unwrap();
        let b = nc.alloc(&pa, cpu, 1500, Gfp::ATOMIC, 1).unwrap();
        let c = nc.alloc(&pa, cpu, 100, Gfp::ATOMIC, 64).unwrap();
        assert_eq!((a.offset, b.offset, c.offset), (0, 1500, 3008));
        assert_eq!(a.page, b.page);
        assert_eq!(nc.page(), Some((a.page, Order(3))));
        // A fragment bigger than a page that does not fit fails without dropping the page.
        assert!(nc.alloc(&pa, cpu, 32000, Gfp::ATOMIC, 1).is_err());
        assert_eq!(nc.page().map(|p| p.0), Some(a.page));
        validate(&pa).unwrap();
    }

    #[test]
    fn the_last_fragment_frees_the_page_and_an_idle_page_is_reused() {
        let pa = machine(Policy::modern(), 64);
        let cpu = pa.cpu(CpuId(0)).unwrap();
        let mut nc = PageFragCache::new();
        // 21 fragments of 1500 bytes fill 31500 of 32768 bytes.
        let frags: std::vec::Vec<_> =
            (0..21).map(|_| nc.alloc(&pa, cpu, 1500, Gfp::ATOMIC, 1).unwrap()).collect();
        let first = frags[0].page;
        assert!(frags.iter().all(|f| f.page == first));
        for f in &frags {
            pa.page_frag_free(cpu, f.page).unwrap();
        }
        // Every fragment is back but the cache still holds its bias: the page lives on and is
        // reused from offset 0 when the next fragment does not fit.
        let next = nc.alloc(&pa, cpu, 1500, Gfp::ATOMIC, 1).unwrap();
        assert_eq!(next, Frag { page: first, offset: 0 });
        // With a fragment out, exhaustion moves to a new page; freeing that fragment and
        // draining the cache frees both pages.
        let more: std::vec::Vec<_> =
            (0..21).map(|_| nc.alloc(&pa, cpu, 1500, Gfp::ATOMIC, 1).unwrap()).collect();
        assert_ne!(more[20].page, first);
        pa.page_frag_free(cpu, next.page).unwrap();
        for f in &more {
            pa.page_frag_free(cpu, f.page).unwrap();
        }
        nc.drain(&pa, cpu).unwrap();
        assert_eq!(pa.page_frag_free(cpu, first), Err(FreeError::NotAllocated { pfn: first }));
        validate(&pa).unwrap();
        assert_eq!(crate::debug::census(&pa).allocated, 0);
    }

    /// Seed 003: with `pfrag-buddy` every last-fragment free takes the zone lock; through the
    /// per-CPU lists (`pfrag-pcp` for order 0, `modern` for order 3 too) most do not.
    #[test]
    fn frag_page_frees_follow_the_policy() {
        for (preset, order3_via_pcp) in
            [("pfrag-buddy", false), ("pfrag-pcp", false), ("modern", true)]
        {
            let pa = machine(Policy::preset(preset).unwrap(), 64);
            let cpu = pa.cpu(CpuId(0)).unwrap();
            let mut nc = PageFragCache::new();
            let f = nc.alloc(&pa, cpu, 4000, Gfp::ATOMIC, 1).unwrap();
            assert_eq!(nc.page().unwrap().1, Order(3), "{preset}");
            nc.drain(&pa, cpu).unwrap();
            let before = pa.vm_events();
            pa.page_frag_free(cpu, f.page).unwrap();
            let d = pa.vm_events().since(&before);
            let via_pcp = d.get(Counter::PcpFree) == 1;
            assert_eq!(via_pcp, order3_via_pcp, "{preset}: {d:?}");
            assert_eq!(d.get(Counter::ZoneLockAcquire), u64::from(!via_pcp), "{preset}");
            validate(&pa).unwrap();
        }
    }

    /// When no order-3 block is free the cache falls back to an order-0 page, and `pfrag-pcp`
    /// frees that one through the per-CPU list while `pfrag-buddy` does not.
    #[test]
    #[cfg_attr(miri, ignore = "allocates its machine's 4096 pages one by one: over 8 min in miri")]
    fn order0_fallback_pages_and_their_free_path() {
        for (preset, via_pcp) in [("pfrag-buddy", false), ("pfrag-pcp", true)] {
            let pa = machine(Policy::preset(preset).unwrap(), 16);
            let cpu = pa.cpu(CpuId(0)).unwrap();
            // Hold every other page so no free block above order 0 remains.
            let mut held = std::vec::Vec::new();
            while let Ok(p) = pa.alloc_pages(cpu, Gfp::KERNEL | Gfp::MEMALLOC, Order(0)) {
                held.push(p);
            }
            for p in held.iter().filter(|p| p.0 % 2 == 0) {
                pa.free_pages(cpu, *p, Order(0)).unwrap();
            }
            pa.drain_all_pages(cpu, None);
            let mut nc = PageFragCache::new();
            let f = nc.alloc(&pa, cpu, 1000, Gfp::ATOMIC, 1).unwrap();
            assert_eq!(nc.page().unwrap().1, Order(0), "{preset}");
            nc.drain(&pa, cpu).unwrap();
            let before = pa.vm_events();
            pa.page_frag_free(cpu, f.page).unwrap();
            assert_eq!(
                pa.vm_events().since(&before).get(Counter::PcpFree) == 1,
                via_pcp,
                "{preset}"
            );
            validate(&pa).unwrap();
        }
    }

    /// page_pool pages (seed 003): a plain order-0 page holds one reference, and
    /// page_frag_free dropping it frees the page, through the pageset only with `pfrag-pcp`.
    #[test]
    fn a_plain_page_is_freed_by_page_frag_free() {
        for (preset, via_pcp) in [("pfrag-buddy", false), ("pfrag-pcp", true)] {
            let pa = machine(Policy::preset(preset).unwrap(), 64);
            let cpu = pa.cpu(CpuId(0)).unwrap();
            // One page from the buddy lists (order 1 is not cached in 4.19), one from a pageset.
            let big = pa.alloc_pages(cpu, Gfp::ATOMIC, Order(1)).unwrap();
            let p = pa.alloc_pages(cpu, Gfp::ATOMIC, Order(0)).unwrap();
            let before = pa.vm_events();
            pa.page_frag_free(cpu, p).unwrap();
            let d = pa.vm_events().since(&before);
            assert_eq!(d.get(Counter::PcpFree) == 1, via_pcp, "{preset}");
            assert_eq!(d.get(Counter::ZoneLockAcquire), u64::from(!via_pcp), "{preset}");
            assert_eq!(pa.page_frag_free(cpu, p), Err(FreeError::NotAllocated { pfn: p }));
            pa.page_frag_free(cpu, big).unwrap();
            validate(&pa).unwrap();
            assert_eq!(crate::debug::census(&pa).allocated, 0);
        }
    }

    #[test]
    fn a_fragment_freed_too_often_is_an_error() {
        let pa = machine(Policy::modern(), 64);
        let cpu = pa.cpu(CpuId(0)).unwrap();
        let p = pa.alloc_pages(cpu, Gfp::KERNEL, Order(0)).unwrap();
        pa.zone_of(p).unwrap().frame(p).aux().store(1, Relaxed);
        pa.page_frag_free(cpu, p).unwrap();
        assert_eq!(pa.page_frag_free(cpu, p), Err(FreeError::NotAllocated { pfn: p }));
        validate(&pa).unwrap();
    }
}

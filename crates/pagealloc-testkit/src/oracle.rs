//! The oracle: a plain model of which blocks are live, that checks every answer the allocator
//! gives against what any correct page allocator must do.
//!
//! It knows nothing of buddies or per-CPU lists. It checks that an allocated block is aligned,
//! inside a zone the flags allow, and disjoint from every live block; that a free of a live
//! block succeeds and a free of anything else fails; and that managed pages are conserved:
//! `managed == free in buddy lists + on per-CPU lists + live` (by the validator's census).
//!
//! page_frag pages are live pages too, kept apart from the blocks (a plain free never picks
//! one): which CPU's cache carves each, and its live fragments. A page a cache takes must be
//! as fresh as any allocated block, a fragment must lie inside its page, aligned as asked, and
//! disjoint from the page's other live fragments; a page is gone when no cache holds it and
//! no fragment of it is out.

use std::collections::BTreeMap;

use pagealloc::types::PAGE_SIZE;
use pagealloc::{EventSink, Frag, Gfp, Order, PageAllocator, Pfn};

/// A live block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Live {
    /// Its order.
    pub order: Order,
    /// The flags it was allocated with.
    pub gfp: Gfp,
}

/// A live page_frag page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FragPage {
    /// Its order (3, or 0 when the cache fell back).
    pub order: Order,
    /// The CPU whose cache carves it, while one does.
    pub cache: Option<u32>,
    /// Its live fragments: (byte offset, length), in the order carved.
    pub frags: Vec<(u32, u32)>,
}

/// The set of live blocks, keyed by first frame, and of live page_frag pages.
#[derive(Clone, Debug, Default)]
pub struct Oracle {
    live: BTreeMap<u64, Live>,
    frag_pages: BTreeMap<u64, FragPage>,
    live_pages: u64,
}

impl Oracle {
    /// No live blocks.
    pub fn new() -> Oracle {
        Oracle::default()
    }

    /// Pages in live blocks and live page_frag pages.
    pub fn live_pages(&self) -> u64 {
        self.live_pages
    }

    /// Number of live blocks.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// No live blocks?
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// The `i`th live block in frame order, if any.
    pub fn nth(&self, i: usize) -> Option<(Pfn, Live)> {
        self.live.iter().nth(i).map(|(&p, &l)| (Pfn(p), l))
    }

    /// Is `pfn` the head of a live block?
    pub fn get(&self, pfn: Pfn) -> Option<Live> {
        self.live.get(&pfn.0).copied()
    }

    /// The live block containing `pfn`, if any.
    pub fn covering(&self, pfn: Pfn) -> Option<(Pfn, Live)> {
        let (&start, &l) = self.live.range(..=pfn.0).next_back()?;
        (pfn.0 < start + l.order.nr_pages().0).then_some((Pfn(start), l))
    }

    /// Is any frame of `pfn` in a live block or a live page_frag page?
    pub fn occupied(&self, pfn: Pfn) -> bool {
        self.covering(pfn).is_some() || self.frag_page_covering(pfn).is_some()
    }

    /// The live page_frag page containing `pfn`, if any.
    fn frag_page_covering(&self, pfn: Pfn) -> Option<(Pfn, &FragPage)> {
        let (&start, p) = self.frag_pages.range(..=pfn.0).next_back()?;
        (pfn.0 < start + p.order.nr_pages().0).then_some((Pfn(start), p))
    }

    /// Record an allocation the allocator made; `Err` names the rule it broke.
    pub fn on_alloc<E: EventSink>(
        &mut self,
        pa: &PageAllocator<E>,
        pfn: Pfn,
        order: Order,
        gfp: Gfp,
    ) -> Result<(), String> {
        self.check_fresh(pa, pfn, order, gfp)?;
        self.live.insert(pfn.0, Live { order, gfp });
        self.live_pages += order.nr_pages().0;
        Ok(())
    }

    /// What any block the allocator hands out must be, a page_frag page included: aligned,
    /// in a zone `gfp` allows and wholly inside it, and overlapping no live block or page.
    fn check_fresh<E: EventSink>(
        &self,
        pa: &PageAllocator<E>,
        pfn: Pfn,
        order: Order,
        gfp: Gfp,
    ) -> Result<(), String> {
        if !pfn.is_aligned(order) {
            return Err(format!("block {pfn} is not aligned to order {}", order.0));
        }
        let Some(zone) = pa.zone_of(pfn) else {
            return Err(format!("block {pfn} is in no zone"));
        };
        if zone.zone_type() > gfp.zone() {
            return Err(format!(
                "block {pfn} is in {} but {gfp:?} allows up to {}",
                zone.zone_type(),
                gfp.zone()
            ));
        }
        let end = pfn.0 + order.nr_pages().0;
        if pa.zone_of(Pfn(end - 1)).map(|z| z.idx()) != Some(zone.idx()) {
            return Err(format!("block {pfn} of order {} crosses its zone's end", order.0));
        }
        if let Some((p, l)) = self.covering(pfn) {
            return Err(format!("block {pfn} overlaps live block {p} of order {}", l.order.0));
        }
        if let Some((&next, l)) = self.live.range(pfn.0..end).next() {
            return Err(format!(
                "block {pfn} of order {} overlaps live block {:#x} of order {}",
                order.0, next, l.order.0
            ));
        }
        let frag_page = self
            .frag_page_covering(pfn)
            .map(|(p, _)| p.0)
            .or_else(|| self.frag_pages.range(pfn.0..end).next().map(|(&p, _)| p));
        if let Some(p) = frag_page {
            return Err(format!(
                "block {pfn} of order {} overlaps live page_frag page {p:#x}",
                order.0
            ));
        }
        Ok(())
    }

    /// Record a successful free; `Err` if the allocator accepted a free it must refuse.
    pub fn on_free(&mut self, pfn: Pfn, order: Order) -> Result<(), String> {
        match self.live.get(&pfn.0) {
            Some(l) if l.order == order => {
                self.live.remove(&pfn.0);
                self.live_pages -= order.nr_pages().0;
                Ok(())
            }
            Some(l) => Err(format!(
                "free of {pfn} as order {} accepted; it is live as order {}",
                order.0, l.order.0
            )),
            None => Err(format!("free of {pfn} accepted; it is not live")),
        }
    }

    /// Record a block compaction moved from `from` to `to`; `Err` names the rule the move
    /// broke: the source must be a live block of `order` allocated as movable, and the target
    /// as fresh as a new allocation (aligned, free, wholly in a zone) and in the source's zone.
    pub fn on_migrate<E: EventSink>(
        &mut self,
        pa: &PageAllocator<E>,
        from: Pfn,
        to: Pfn,
        order: Order,
    ) -> Result<(), String> {
        let Some(l) = self.live.get(&from.0).copied() else {
            return Err(format!("asked to move {from}, which is not live"));
        };
        if l.order != order || l.gfp.migratetype() != pagealloc::MigrateType::Movable {
            return Err(format!(
                "asked to move {from} as order {}; it is live as order {} with {:?}",
                order.0, l.order.0, l.gfp
            ));
        }
        self.check_fresh(pa, to, order, l.gfp)?;
        let zone = |p: Pfn| pa.zone_of(p).map(|z| z.idx());
        if zone(to) != zone(from) {
            return Err(format!("{from} would move to {to}, in another zone"));
        }
        self.live.remove(&from.0);
        self.live.insert(to.0, l);
        Ok(())
    }

    /// Should a free of (`pfn`, `order`) succeed?
    pub fn free_is_valid(&self, pfn: Pfn, order: Order) -> bool {
        self.live.get(&pfn.0).is_some_and(|l| l.order == order)
    }

    /// Number of live page_frag pages.
    pub fn frag_page_count(&self) -> usize {
        self.frag_pages.len()
    }

    /// The `i`th live page_frag page in frame order, if any.
    pub fn nth_frag_page(&self, i: usize) -> Option<(Pfn, &FragPage)> {
        self.frag_pages.iter().nth(i).map(|(&p, fp)| (Pfn(p), fp))
    }

    /// Number of live fragments.
    pub fn frag_count(&self) -> usize {
        self.frag_pages.values().map(|p| p.frags.len()).sum()
    }

    /// The `i`th live fragment (page by page in frame order, then as carved): its page,
    /// offset and length.
    pub fn nth_frag(&self, i: usize) -> Option<(Pfn, u32, u32)> {
        self.frag_pages
            .iter()
            .flat_map(|(&p, fp)| fp.frags.iter().map(move |&(o, l)| (Pfn(p), o, l)))
            .nth(i)
    }

    /// The page `cpu`'s cache carves now is `now` (what `PageFragCache::page` says after an
    /// allocation or a drain, failed or not). A page the cache let go of is gone if no
    /// fragment of it is out; a page it took must be fresh (allocated with `gfp`).
    pub fn on_frag_cache<E: EventSink>(
        &mut self,
        pa: &PageAllocator<E>,
        cpu: u32,
        now: Option<(Pfn, Order)>,
        gfp: Gfp,
    ) -> Result<(), String> {
        let before = self.frag_pages.iter().find(|(_, p)| p.cache == Some(cpu)).map(|(&k, _)| k);
        if before == now.map(|(p, _)| p.0) {
            return Ok(());
        }
        if let Some(b) = before {
            let page = self.frag_pages.get_mut(&b).expect("found above");
            page.cache = None;
            if page.frags.is_empty() {
                self.drop_frag_page(Pfn(b));
            }
        }
        if let Some((pfn, order)) = now {
            if self.frag_pages.contains_key(&pfn.0) {
                return Err(format!(
                    "cpu {cpu}'s cache took page_frag page {pfn}, which another cache carves or \
                     whose fragments are out"
                ));
            }
            self.check_fresh(pa, pfn, order, gfp)?;
            self.frag_pages.insert(pfn.0, FragPage { order, cache: Some(cpu), frags: Vec::new() });
            self.live_pages += order.nr_pages().0;
        }
        Ok(())
    }

    /// Record `frag`, `size` bytes aligned to `align` (a power of two up to a page), carved
    /// by `cpu`'s cache: it must come from the page that cache carves, lie inside it, be
    /// aligned, and overlap no other live fragment.
    pub fn on_frag_alloc(
        &mut self,
        cpu: u32,
        frag: Frag,
        size: u32,
        align: u32,
    ) -> Result<(), String> {
        let Frag { page, offset } = frag;
        let Some(fp) = self.frag_pages.get_mut(&page.0) else {
            return Err(format!("fragment at {page}+{offset} is on no page a cache carves"));
        };
        if fp.cache != Some(cpu) {
            return Err(format!(
                "fragment at {page}+{offset} from cpu {cpu}'s cache, which carves another page"
            ));
        }
        let bytes = PAGE_SIZE << fp.order.0;
        if offset % align != 0 || u64::from(offset) + u64::from(size) > bytes {
            return Err(format!(
                "fragment of {size} bytes at {page}+{offset} is not aligned to {align} or not \
                 inside its {bytes}-byte page"
            ));
        }
        let end = offset + size;
        if let Some(&(o, l)) =
            fp.frags.iter().find(|&&(o, l)| size > 0 && l > 0 && o < end && offset < o + l)
        {
            return Err(format!(
                "fragment of {size} bytes at {page}+{offset} overlaps the live fragment of {l} \
                 bytes at +{o}"
            ));
        }
        fp.frags.push((offset, size));
        Ok(())
    }

    /// Record a successful `page_frag_free` of the fragment (`page`, `offset`, `len`); the
    /// page is gone when it was the last reference. `Err` if no such fragment is live.
    pub fn on_frag_free(&mut self, page: Pfn, offset: u32, len: u32) -> Result<(), String> {
        let fp = self.frag_pages.get_mut(&page.0);
        let Some(i) = fp.as_ref().and_then(|p| p.frags.iter().position(|&f| f == (offset, len)))
        else {
            return Err(format!("free of fragment {page}+{offset} accepted; it is not live"));
        };
        let fp = fp.expect("found above");
        fp.frags.remove(i);
        if fp.frags.is_empty() && fp.cache.is_none() {
            self.drop_frag_page(page);
        }
        Ok(())
    }

    /// Record that `free_pages` freed page_frag page `page`, taking its one remaining
    /// fragment's reference with it.
    pub fn on_frag_page_freed(&mut self, page: Pfn) -> Result<(), String> {
        match self.frag_pages.get(&page.0) {
            Some(p) if p.cache.is_none() && p.frags.len() == 1 => {
                self.drop_frag_page(page);
                Ok(())
            }
            Some(p) => Err(format!(
                "free_pages freed page_frag page {page} under {} and {} fragment(s)",
                if p.cache.is_some() { "its cache" } else { "no cache" },
                p.frags.len()
            )),
            None => Err(format!("free_pages of page_frag page {page} accepted; it is not live")),
        }
    }

    /// Forget a page_frag page that went back to the allocator.
    fn drop_frag_page(&mut self, page: Pfn) {
        if let Some(p) = self.frag_pages.remove(&page.0) {
            self.live_pages -= p.order.nr_pages().0;
        }
    }
}

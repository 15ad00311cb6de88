//! The oracle: a plain model of which blocks are live, that checks every answer the allocator
//! gives against what any correct page allocator must do.
//!
//! It knows nothing of buddies or per-CPU lists. It checks that an allocated block is aligned,
//! inside a zone the flags allow, and disjoint from every live block; that a free of a live
//! block succeeds and a free of anything else fails; and that managed pages are conserved:
//! `managed == free in buddy lists + on per-CPU lists + live` (by the validator's census).

use std::collections::BTreeMap;

use pagealloc::{EventSink, Gfp, Order, PageAllocator, Pfn};

/// A live block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Live {
    /// Its order.
    pub order: Order,
    /// The flags it was allocated with.
    pub gfp: Gfp,
}

/// The set of live blocks, keyed by first frame.
#[derive(Clone, Debug, Default)]
pub struct Oracle {
    live: BTreeMap<u64, Live>,
    live_pages: u64,
}

impl Oracle {
    /// No live blocks.
    pub fn new() -> Oracle {
        Oracle::default()
    }

    /// Pages in live blocks.
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

    /// Record an allocation the allocator made; `Err` names the rule it broke.
    pub fn on_alloc<E: EventSink>(
        &mut self,
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
        self.live.insert(pfn.0, Live { order, gfp });
        self.live_pages += order.nr_pages().0;
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

    /// Should a free of (`pfn`, `order`) succeed?
    pub fn free_is_valid(&self, pfn: Pfn, order: Order) -> bool {
        self.live.get(&pfn.0).is_some_and(|l| l.order == order)
    }
}

//! Indexing without bounds checks on the pageset hit paths: the one module of the crate where
//! the order-0 allocation and free paths index an array unchecked, and the proof of each.
//!
//! A hit of the pagesets indexes a handful of arrays — the allocator's nodes and zones, a
//! zone's pagesets, a pageset's lists, a zone's frames and pageblock flags — and every index
//! comes from a value the crate has already checked or built itself. The compiler cannot see
//! that, and a checked index costs a load of the length, a compare and a branch: most of the
//! 53 instructions per order-0 alloc+free pair that this module and a single claim saved
//! together (353.5 → 300.5, docs/performance.md); the buddy path's carve uses it too
//! (invariant B). The invariants the accessors below rely on, all but B, are established
//! once, when the allocator is built, and nothing changes them afterwards (the arrays are
//! boxed slices, never replaced or resized); B is kept by every change of a buddy list:
//!
//! - **Z (zones).** `PageAllocator::zones[i].idx == ZoneIdx(i)`; every `ZoneIdx` the allocator
//!   stores (a node's preferred zones and zonelist, the pfn→zone table and its first entry
//!   kept apart, `first_span`, and the one-node preferred zone an `AllocRequest` copies from
//!   its node's table, used only after the request's owner is checked) names one of them.
//! - **N (nodes).** A [`Cpu`] that passes `PageAllocator::owns` was made by that allocator's
//!   `cpu()`, so its node is one of the allocator's nodes; a caller-given node replaces it only
//!   after `node < nodes.len()` is checked (`alloc_checked`).
//! - **C (CPUs).** Such a `Cpu`'s id is below `nr_cpus`, and every zone has one pageset per
//!   CPU (`Zone::new` builds `nr_cpus` of them).
//! - **F (frames).** A zone's `mem_map` has one frame per pfn of its span (`Zone::new`), so a
//!   pfn for which `Zone::spans` holds has an index below `mem_map.len()`; every index on any
//!   list of the zone (its buddy and pageset lists, and the remote-free chains of
//!   `Policy::remote_free`, which link blocks claimed in the zone) was put there as such an
//!   index (a list never holds another zone's frame).
//!   Every frame of a block on a buddy free list is the zone's too: memory is handed over in
//!   blocks inside the span, and a merge takes only a buddy the zone spans, so `expand` may
//!   index the upper halves of a block it took off a list unchecked.
//! - **P (pageblocks).** A zone's pageblock flags cover every pageblock its span touches.
//! - **L (lists).** A pageset list index comes from `PcpFast`'s tables, whose entries are below
//!   `MAX_NR_PCP_LISTS` (or the "uncached" marker, tested before use).
//!
//! - **B (the bitmap of non-empty free lists).** Under the zone lock, bit `o` of a zone's
//!   `free_orders[mt]` is set iff its (`o`, `mt`) buddy list has a member (`Zone::free_orders`):
//!   every word starts at 0 with every list empty, and every insertion and removal flips the
//!   bit exactly when its list goes non-empty or empty (`ZoneLocked::add_at`, `delisted`, the
//!   only writers of the lists). So a set bit seen under the lock names an order below
//!   `NR_PAGE_ORDERS` whose list has a head. Unlike the others this is kept, not built once;
//!   `debug::validate` checks it after every step of the random-program tests.
//!
//! Every accessor re-checks its invariant with `debug_assert!`, so each test run (debug
//! assertions on) checks the proofs on every path the tests take; release builds trust them.
#![allow(unsafe_code)]

use crate::events::EventSink;
use crate::list::ListHead;
use crate::mem_map::Frame;
use crate::pcp::{PcpSlot, PerCpuPages};
use crate::sync::Ordering::Relaxed;
use crate::sync::RawLock;
use crate::types::{CpuId, Pfn, ZoneIdx};
use crate::zone::Zone;
use crate::{Cpu, PageAllocator};

impl<E: EventSink, L: RawLock> PageAllocator<E, L> {
    /// Zone `zi` of this allocator.
    ///
    /// # Safety
    /// `zi` is a `ZoneIdx` the allocator stored itself (invariant Z).
    #[inline(always)]
    pub(crate) unsafe fn zone_at(&self, zi: ZoneIdx) -> &Zone<L> {
        debug_assert!(zi.index() < self.zones.len());
        // SAFETY: in bounds by the caller's promise (invariant Z).
        unsafe { self.zones.get_unchecked(zi.index()) }
    }

    /// `cpu`'s node.
    ///
    /// # Safety
    /// `cpu` passed `owns` and its node, if replaced, was checked (invariant N).
    #[inline(always)]
    pub(crate) unsafe fn node_of(&self, cpu: Cpu) -> &crate::page_alloc::Node {
        debug_assert!(cpu.node.index() < self.nodes.len());
        // SAFETY: invariant N.
        unsafe { self.nodes.get_unchecked(cpu.node.index()) }
    }

    /// The preferred zone of type at most `highest` on `cpu`'s node, if the node has one.
    ///
    /// # Safety
    /// `cpu` passed `owns` and its node, if replaced, was checked (invariant N).
    #[inline(always)]
    pub(crate) unsafe fn preferred_zone(
        &self,
        cpu: Cpu,
        highest: crate::types::ZoneType,
    ) -> Option<&Zone<L>> {
        // SAFETY: the caller's promise (invariant N).
        let node = unsafe { self.node_of(cpu) };
        let zi = node.preferred[highest.index()]?;
        // SAFETY: a node's preferred zones are the allocator's own (invariant Z).
        Some(unsafe { self.zone_at(zi) })
    }
}

impl<L: RawLock> Zone<L> {
    /// `cpu`'s pageset of this zone.
    ///
    /// # Safety
    /// `cpu` is the id of a `Cpu` that passed the allocator's `owns` (invariant C).
    #[inline(always)]
    pub(crate) unsafe fn pcp_at(&self, cpu: CpuId) -> &PcpSlot<L> {
        debug_assert!(cpu.index() < self.pcp.len());
        // SAFETY: invariant C.
        unsafe { self.pcp.get_unchecked(cpu.index()) }
    }

    /// The frame of index `idx`.
    ///
    /// # Safety
    /// `idx` is the index of a pfn this zone spans, or a member of one of its lists
    /// (invariant F).
    #[inline(always)]
    pub(crate) unsafe fn frame_at(&self, idx: u32) -> &Frame {
        debug_assert!((idx as usize) < self.mem_map.len());
        // SAFETY: invariant F.
        unsafe { self.mem_map.get_unchecked(idx as usize) }
    }

    /// The migratetype bits of the pageblock holding `pfn`.
    ///
    /// # Safety
    /// The zone spans `pfn` (invariant P).
    #[inline(always)]
    pub(crate) unsafe fn pageblock_bits(&self, pfn: Pfn) -> u8 {
        debug_assert!(self.spans(pfn));
        let pb = &self.pageblocks;
        let i = (pfn.pageblock() - pb.first) as usize;
        debug_assert!(i < pb.bits.len());
        // SAFETY: invariant P.
        unsafe { pb.bits.get_unchecked(i) }.load(Relaxed) & crate::pageblock::MT_MASK
    }
}

impl PerCpuPages {
    /// List `pindex` of this pageset.
    ///
    /// # Safety
    /// `pindex` came from `PcpFast`'s tables and is not the uncached marker (invariant L).
    #[inline(always)]
    pub(crate) unsafe fn list_at(&mut self, pindex: usize) -> &mut ListHead {
        debug_assert!(pindex < self.lists.len());
        // SAFETY: invariant L.
        unsafe { self.lists.get_unchecked_mut(pindex) }
    }
}

impl crate::zone::ZoneFree {
    /// The buddy list of (`order`, `mt`), which the zone's bitmap of non-empty lists says has
    /// a member.
    ///
    /// # Safety
    /// The caller holds the zone lock (`self` is its guarded data) and read bit `order` of
    /// the zone's `free_orders[mt]` set under it (invariant B).
    #[inline(always)]
    pub(crate) unsafe fn listed_at(
        &mut self,
        order: crate::types::Order,
        mt: crate::migratetype::MigrateType,
    ) -> &mut ListHead {
        debug_assert!(order.index() < self.area.len());
        // SAFETY: invariant B: a set bit names an order below NR_PAGE_ORDERS. Told to the
        // compiler too, so the order's block count the pop then decrements is indexed
        // without a check.
        unsafe { core::hint::assert_unchecked(order.index() < self.area.len()) };
        // SAFETY: as above.
        let list = unsafe { &mut self.area.get_unchecked_mut(order.index()).lists[mt.index()] };
        debug_assert!(!list.is_empty());
        list
    }
}

/// A frame lookup for the list operations' `*_with` forms that does not check bounds.
///
/// # Safety
/// Every index the returned closure is called with is in bounds of `map`: the operations call
/// it with the index given to them and with members of the list, so the caller promises those
/// are frames of the zone whose `mem_map` `map` is (invariant F).
#[inline(always)]
pub(crate) unsafe fn frames_unchecked<'m>(map: &'m [Frame]) -> impl Fn(u32) -> &'m Frame {
    move |i| {
        debug_assert!((i as usize) < map.len());
        // SAFETY: the caller's promise (invariant F).
        unsafe { map.get_unchecked(i as usize) }
    }
}

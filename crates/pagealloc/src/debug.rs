//! Validators: check the invariants listed in ARCHITECTURE.md ("Invariants") on a live
//! allocator, and name the first one that fails. Tests run them after every step; the model runs
//! them in its check mode.
//!
//! Each zone is checked under its own lock, by walking the free lists and then every frame
//! of the span, so a validation costs O(spanned frames).

use crate::sync::RawLock;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

#[cfg(feature = "debug-vm")]
use crate::error::FreeError;
use crate::events::EventSink;
use crate::mem_map::FrameState;
use crate::migratetype::MigrateType;
use crate::pcp::PerCpuPages;
use crate::policy::{FreeBatchSizing, Policy, RefillSizing};
use crate::types::{Order, Pfn, ZoneIdx, MAX_PAGE_ORDER, NR_PAGE_ORDERS, PAGEBLOCK_ORDER};
use crate::zone::Zone;
use crate::PageAllocator;

/// A broken invariant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The zone where it was found.
    pub zone: ZoneIdx,
    /// What is wrong, with the frame numbers involved.
    pub what: String,
}

impl core::fmt::Display for Violation {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "zone {}: {}", self.zone.0, self.what)
    }
}

impl core::error::Error for Violation {}

/// Where a zone's managed pages are, counted by walking every frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Census {
    /// Managed frames (not reserved, not holes).
    pub managed: u64,
    /// Pages in free buddy blocks, ISOLATE lists included.
    pub free: u64,
    /// Pages in blocks on per-CPU lists.
    pub pcp: u64,
    /// Pages in blocks waiting on pending chains and remote-free lists
    /// (`Policy::remote_free`).
    pub remote: u64,
    /// Pages in blocks handed out (or being freed right now).
    pub allocated: u64,
}

/// Check every invariant of every zone.
pub fn validate<E: EventSink, L: RawLock>(pa: &PageAllocator<E, L>) -> Result<(), Violation> {
    for z in pa.zones() {
        validate_zone(pa, z)?;
    }
    Ok(())
}

/// Walk every frame of every zone and add up where pages are.
pub fn census<E: EventSink, L: RawLock>(pa: &PageAllocator<E, L>) -> Census {
    let mut total = Census::default();
    for z in pa.zones() {
        let _pagesets: Vec<_> = z.pcp.iter().map(|s| s.pcp.lock()).collect();
        let c = z.with_free(|_| frame_census(z)).unwrap_or_default();
        total.managed += c.managed;
        total.free += c.free;
        total.pcp += c.pcp;
        total.remote += c.remote;
        total.allocated += c.allocated;
    }
    total
}

/// The `debug-vm` check on every free (the kernel's `free_tail_page_prepare` and
/// `free_page_is_bad`, which `CONFIG_DEBUG_VM` turns on for every freed page): each frame of
/// an allocated block after its head must be a tail frame inside the zone. A block whose head
/// is not `Allocated` with this order is left to the claim, which names what is wrong; a
/// corrupt block is refused with [`FreeError::BadPage`] and stays allocated. O(2^order).
#[cfg(feature = "debug-vm")]
pub(crate) fn check_free_block<L: RawLock>(
    z: &Zone<L>,
    pfn: Pfn,
    order: Order,
) -> Result<(), FreeError> {
    let head = z.frame(pfn).info();
    if head.state != FrameState::Allocated || head.order != order {
        return Ok(());
    }
    let tails = (1..order.nr_pages().0).map(|i| Pfn(pfn.0 + i));
    match tails.into_iter().find(|&p| !z.spans(p) || z.frame(p).info().state != FrameState::Tail) {
        Some(bad) => Err(FreeError::BadPage { pfn, bad }),
        None => Ok(()),
    }
}

fn fail<L: RawLock>(z: &Zone<L>, what: String) -> Violation {
    Violation { zone: z.idx(), what }
}

/// Check one zone's invariants: every pageset's lists under its lock, then the free lists and
/// every frame under the zone lock, with all of those locks held (pageset locks first, the
/// allocator's lock order) so the census sees one consistent state.
pub fn validate_zone<E: EventSink, L: RawLock>(
    pa: &PageAllocator<E, L>,
    z: &Zone<L>,
) -> Result<(), Violation> {
    if !pa.zone(z.idx()).is_some_and(|own| core::ptr::eq(own, z)) {
        return Err(fail(z, "the zone is not one of this allocator's".into()));
    }
    let pagesets: Vec<_> = z.pcp.iter().map(|s| s.pcp.lock()).collect();
    let layout = pa.policy().pcp_lists;
    let mut pending = 0u64;
    for (cpu, pcp) in pagesets.iter().enumerate() {
        check_pageset(z, layout, cpu, pcp)?;
        check_unkept_signals(z, pa.policy(), cpu, pcp)?;
        pending += pending_pages(z, cpu, pcp)?;
    }
    let hygiene = pa.cfg.hygiene;
    z.with_free(|free| {
        let map = &z.mem_map;
        let (mut nr_free_pages, mut cma, mut highatomic) = (0u64, 0u64, 0u64);
        let mut listed_blocks = 0u64;
        for o in 0..NR_PAGE_ORDERS {
            let order = Order(o as u8);
            let area = &free.area[o];
            let mut sum = 0u64;
            for mt in MigrateType::ALL {
                let list = &area.lists[mt.index()];
                let mut n = 0u32;
                for idx in list.iter(map) {
                    n += 1;
                    let pfn = z.pfn_of(idx);
                    let info = map[idx as usize].info();
                    if info.state != FrameState::Buddy || info.order != order {
                        return Err(fail(
                            z,
                            format!("{pfn} on the order-{o} {mt} list is {info:?}"),
                        ));
                    }
                    if info.list != mt as u8 {
                        return Err(fail(
                            z,
                            format!("{pfn} on the {mt} list says list {}", info.list),
                        ));
                    }
                    if !pfn.is_aligned(order) || pfn.0 + (1 << o) > z.end_pfn.0 {
                        return Err(fail(z, format!("free block {pfn} of order {o} is misplaced")));
                    }
                    let mut p = pfn.align_down(Order::PAGEBLOCK);
                    // ≤ 6.9 rules let a free block sit on another type's list.
                    while hygiene && p.0 < pfn.0 + (1 << o) {
                        if z.spans(p.max(pfn)) && z.pageblocks.get(p.max(pfn)) != mt {
                            return Err(fail(
                                z,
                                format!(
                                    "free block {pfn} on the {mt} list lies in a {} pageblock",
                                    z.pageblocks.get(p.max(pfn))
                                ),
                            ));
                        }
                        p = Pfn(p.0 + (1 << PAGEBLOCK_ORDER));
                    }
                    let pages = 1u64 << o;
                    match mt {
                        MigrateType::Isolate => {}
                        MigrateType::Cma => {
                            nr_free_pages += pages;
                            cma += pages;
                        }
                        MigrateType::HighAtomic => {
                            nr_free_pages += pages;
                            highatomic += pages;
                        }
                        _ => nr_free_pages += pages,
                    }
                    if o < MAX_PAGE_ORDER as usize {
                        check_unmerged_buddy(z, pfn, order, mt)?;
                    }
                }
                if n != list.len() {
                    return Err(fail(
                        z,
                        format!("order-{o} {mt} list has {n} members, says {}", list.len()),
                    ));
                }
                sum += u64::from(n);
            }
            if z.nr_free(order) != sum {
                return Err(fail(
                    z,
                    format!("order {o}: nr_free {} but lists hold {sum}", z.nr_free(order)),
                ));
            }
            for mt in MigrateType::ALL {
                if z.has_free(order, mt) == area.lists[mt.index()].is_empty() {
                    return Err(fail(
                        z,
                        format!("order {o}: the bitmap of non-empty lists is wrong for {mt}"),
                    ));
                }
            }
            listed_blocks += sum;
        }
        if nr_free_pages != z.free_pages().0 {
            return Err(fail(
                z,
                format!("NR_FREE_PAGES {} but lists hold {nr_free_pages}", z.free_pages().0),
            ));
        }
        if cma != z.free_cma_pages().0 {
            return Err(fail(
                z,
                format!("NR_FREE_CMA_PAGES {} but lists hold {cma}", z.free_cma_pages().0),
            ));
        }
        let ha = z.nr_free_highatomic.load(crate::sync::Ordering::Relaxed);
        if highatomic != ha {
            return Err(fail(z, format!("free highatomic {ha} but lists hold {highatomic}")));
        }
        let c = frame_census(z)?;
        let buddy_heads = count_buddy_heads(z);
        if buddy_heads != listed_blocks {
            return Err(fail(
                z,
                format!("{buddy_heads} buddy heads but {listed_blocks} listed blocks"),
            ));
        }
        if c.managed != z.managed_pages().0 {
            return Err(fail(
                z,
                format!("{} managed frames, zone says {}", c.managed, z.managed_pages().0),
            ));
        }
        if c.managed != c.free + c.pcp + c.remote + c.allocated {
            return Err(fail(
                z,
                format!(
                    "conservation: managed {} != free {} + pcp {} + remote {} + allocated {}",
                    c.managed, c.free, c.pcp, c.remote, c.allocated
                ),
            ));
        }
        let listed_remote: u64 = z.pcp.iter().map(|s| remote_pages(z, s)).sum();
        if listed_remote + pending != c.remote {
            return Err(fail(
                z,
                format!(
                    "{} pages in Remote heads but remote lists hold {listed_remote} and \
                     pending chains {pending}",
                    c.remote
                ),
            ));
        }
        Ok(())
    })
}

/// The pageset signals a policy does not keep stay 0: the hit paths halve `free_factor`,
/// `free_count` and `alloc_factor` on every call without asking the policy which it keeps,
/// which is right only while the others never move.
fn check_unkept_signals<L: RawLock>(
    z: &Zone<L>,
    policy: &Policy,
    cpu: usize,
    pcp: &PerCpuPages,
) -> Result<(), Violation> {
    let sizing = policy.free_batch_sizing;
    let factor = matches!(
        sizing,
        FreeBatchSizing::FreeFactor
            | FreeBatchSizing::FreeFactorCapped
            | FreeBatchSizing::FreeFactorCappedInclusive
    );
    let count = matches!(sizing, FreeBatchSizing::FreeCountV1 | FreeBatchSizing::FreeCount);
    let alloc = policy.refill_sizing == RefillSizing::AllocFactor;
    let moved = [
        ("free_factor", !factor && pcp.free_factor != 0),
        ("free_count", !count && pcp.free_count != 0),
        ("alloc_factor", !alloc && pcp.alloc_factor != 0),
    ];
    match moved.into_iter().find(|&(_, bad)| bad) {
        Some((name, _)) => {
            Err(fail(z, format!("cpu {cpu}: {name} moved, but the policy keeps no {name}")))
        }
        None => Ok(()),
    }
}

/// A pageset's lists hold `Pcp` heads of the list's order, and add up to its count.
fn check_pageset<L: RawLock>(
    z: &Zone<L>,
    layout: crate::policy::PcpLists,
    cpu: usize,
    pcp: &PerCpuPages,
) -> Result<(), Violation> {
    let mut pages = 0i64;
    for (pindex, list) in pcp.lists.iter().enumerate() {
        if pindex >= layout.nr_lists() {
            if !list.is_empty() {
                return Err(fail(
                    z,
                    format!("cpu {cpu}: list {pindex} is beyond the layout but holds blocks"),
                ));
            }
            continue;
        }
        let order = layout.pindex_order(pindex).unwrap_or(Order(0));
        let mut n = 0u32;
        for idx in list.iter(&z.mem_map) {
            n += 1;
            let info = z.mem_map[idx as usize].info();
            if info.state != FrameState::Pcp || info.order != order || info.list as usize != pindex
            {
                return Err(fail(
                    z,
                    format!("cpu {cpu}: {} on pcp list {pindex} is {info:?}", z.pfn_of(idx)),
                ));
            }
            if !z.pfn_of(idx).is_aligned(order) {
                return Err(fail(
                    z,
                    format!("cpu {cpu}: pcp block {} is misaligned", z.pfn_of(idx)),
                ));
            }
            pages += 1 << order.0;
        }
        if n != list.len() {
            return Err(fail(
                z,
                format!("cpu {cpu}: pcp list {pindex} has {n} members, says {}", list.len()),
            ));
        }
    }
    if pages != i64::from(pcp.count) {
        return Err(fail(
            z,
            format!("cpu {cpu}: pcp count {} but lists hold {pages} pages", pcp.count),
        ));
    }
    let (lo, hi, high) = (pcp.high_min, pcp.high_max, pcp.high);
    if high != 0 && lo <= hi && !(lo <= high && high <= hi) {
        return Err(fail(z, format!("cpu {cpu}: pcp high {high} outside [{lo}, {hi}]")));
    }
    if pcp.free_limit != pcp.free_limit_for(high) {
        return Err(fail(
            z,
            format!(
                "cpu {cpu}: pcp free_limit {} but high {high} in [{lo}, {hi}] gives {}",
                pcp.free_limit,
                pcp.free_limit_for(high)
            ),
        ));
    }
    Ok(())
}

/// Two free buddies of the same order must have merged, unless they sit in pageblocks whose
/// types refuse merging, or both sit in isolated pageblocks: isolating a block moves its free
/// blocks onto the isolate lists without merging them (as the kernel's `move_freepages_block`
/// does), so two adjacent isolated blocks keep their halves apart until given back, when
/// `unisolate_pageblock` frees them again and they merge.
fn check_unmerged_buddy<L: RawLock>(
    z: &Zone<L>,
    pfn: Pfn,
    order: Order,
    mt: MigrateType,
) -> Result<(), Violation> {
    let buddy = pfn.buddy(order);
    if !z.spans(buddy) || !z.frame(buddy).is_buddy_of_order(order) {
        return Ok(());
    }
    let bmt = MigrateType::from_u8(z.frame(buddy).info().list).unwrap_or(MigrateType::Movable);
    let both_isolated = mt == MigrateType::Isolate && bmt == MigrateType::Isolate;
    let refuses = order.0 >= PAGEBLOCK_ORDER
        && (both_isolated || (bmt != mt && (!mt.is_mergeable() || !bmt.is_mergeable())));
    if refuses {
        Ok(())
    } else {
        Err(fail(z, format!("free buddies {pfn} and {buddy} of order {} did not merge", order.0)))
    }
}

/// Pages on a pageset's pending chain (`Policy::remote_free`), walked under its lock: every
/// block a `Remote` head, the last one its `tail`, the pages and blocks what the chain says,
/// the owner another CPU of the zone.
fn pending_pages<L: RawLock>(z: &Zone<L>, cpu: usize, pcp: &PerCpuPages) -> Result<u64, Violation> {
    let chain = pcp.pending;
    let (mut idx, mut last) = (chain.head, crate::mem_map::NIL);
    let (mut pages, mut blocks) = (0u64, 0u32);
    while idx != crate::mem_map::NIL && (blocks as usize) < z.mem_map.len() {
        let Some(f) = z.mem_map.get(idx as usize) else {
            return Err(fail(z, format!("cpu {cpu}: pending chain links to frame index {idx}")));
        };
        if f.info().state != FrameState::Remote {
            return Err(fail(
                z,
                format!("cpu {cpu}: {} on the pending chain is {:?}", z.pfn_of(idx), f.info()),
            ));
        }
        pages += 1u64 << f.info().order.0;
        blocks += 1;
        last = idx;
        idx = f.next();
    }
    let owner_ok =
        chain.is_empty() || (chain.owner as usize != cpu && (chain.owner as usize) < z.pcp.len());
    if last != chain.tail || pages != u64::from(chain.pages) || blocks != chain.blocks || !owner_ok
    {
        return Err(fail(
            z,
            format!(
                "cpu {cpu}: pending chain says {chain:?} but holds {blocks} blocks, {pages} \
                 pages, ending at {last}"
            ),
        ));
    }
    Ok(pages)
}

/// Pages on a pageset's remote-free list, walked from its word (read under the pageset lock
/// the caller holds, so the owner cannot take it meanwhile; a producer's push during the walk
/// only adds in front of the head read). At most the zone's frame count of steps, so a
/// corrupted link cannot loop forever.
fn remote_pages<L: RawLock>(z: &Zone<L>, slot: &crate::pcp::PcpSlot<L>) -> u64 {
    let (mut idx, _) =
        crate::pcp::remote::word_parts(slot.remote.load(crate::sync::Ordering::Acquire));
    let mut pages = 0;
    for _ in 0..z.mem_map.len() {
        let Some(f) = z.mem_map.get(idx as usize) else { break };
        pages += 1u64 << f.info().order.0;
        idx = f.next();
    }
    pages
}

fn count_buddy_heads<L: RawLock>(z: &Zone<L>) -> u64 {
    z.mem_map.iter().filter(|f| f.info().state == FrameState::Buddy).count() as u64
}

/// Walk the span: every managed frame must be a block head or inside the block of the head
/// before it.
fn frame_census<L: RawLock>(z: &Zone<L>) -> Result<Census, Violation> {
    let mut c = Census::default();
    let n = z.mem_map.len();
    let mut i = 0usize;
    while i < n {
        let info = z.mem_map[i].info();
        let pages = 1usize << info.order.0;
        let bucket = match info.state {
            FrameState::Reserved => {
                i += 1;
                continue;
            }
            FrameState::Tail => {
                return Err(fail(z, format!("frame {} is in no block", z.pfn_of(i as u32))));
            }
            FrameState::Buddy => &mut c.free,
            FrameState::Pcp => &mut c.pcp,
            FrameState::Remote => &mut c.remote,
            // Isolated targets exist only inside a compaction; seen from outside it they are
            // memory the allocator is using, as an allocated block is.
            FrameState::Allocated | FrameState::Freeing | FrameState::Isolated => &mut c.allocated,
        };
        if i + pages > n {
            return Err(fail(z, format!("block {} runs past the zone", z.pfn_of(i as u32))));
        }
        for j in i + 1..i + pages {
            if z.mem_map[j].info().state != FrameState::Tail {
                return Err(fail(
                    z,
                    format!(
                        "frame {} inside block {} is {:?}",
                        z.pfn_of(j as u32),
                        z.pfn_of(i as u32),
                        z.mem_map[j].info().state
                    ),
                ));
            }
        }
        *bucket += pages as u64;
        c.managed += pages as u64;
        i += pages;
    }
    Ok(c)
}

#[cfg(all(test, feature = "debug-vm"))]
mod debug_vm_tests {
    use super::*;
    use crate::mem_map::FrameInfo;
    use crate::{CpuId, Gfp, MemoryMap, Policy, Tunables};

    /// One node, one CPU, 16 MiB.
    fn machine() -> PageAllocator {
        let map = MemoryMap::single_node(1, 16 << 20).unwrap();
        PageAllocator::new(map, Tunables::default(), Policy::modern()).unwrap()
    }

    /// A tail frame turned into something else is caught on free, the block stays allocated,
    /// and once the frame is repaired the same free goes through.
    #[test]
    fn a_corrupt_tail_frame_is_a_bad_page_and_the_block_stays_allocated() {
        let pa = machine();
        let cpu = pa.cpu(CpuId(0)).unwrap();
        let pfn = pa.alloc_pages(cpu, Gfp::KERNEL, Order(3)).unwrap();
        let zone = pa.zone_of(pfn).unwrap();
        let bad = Pfn(pfn.0 + 5);
        zone.frame(bad).set_info(FrameInfo { state: FrameState::Buddy, order: Order(0), list: 0 });

        assert_eq!(pa.free_pages(cpu, pfn, Order(3)), Err(FreeError::BadPage { pfn, bad }));
        assert_eq!(zone.frame(pfn).info().state, FrameState::Allocated, "left allocated");

        zone.frame(bad).set_info(FrameInfo::TAIL);
        pa.free_pages(cpu, pfn, Order(3)).unwrap();
        validate(&pa).unwrap();
    }

    /// Only a block of the order given is checked: a wrong order is still named by the claim.
    #[test]
    fn other_bad_frees_keep_their_own_errors() {
        let pa = machine();
        let cpu = pa.cpu(CpuId(0)).unwrap();
        let pfn = pa.alloc_pages(cpu, Gfp::KERNEL, Order(2)).unwrap();
        let wrong = pa.free_pages(cpu, pfn, Order(1));
        assert_eq!(wrong, Err(FreeError::WrongOrder { pfn, given: Order(1), allocated: Order(2) }));
        pa.free_pages(cpu, pfn, Order(2)).unwrap();
        assert_eq!(pa.free_pages(cpu, pfn, Order(2)), Err(FreeError::DoubleFree { pfn }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::PRESETS;
    use crate::{CpuId, Gfp, MemoryMap, NodeId, Tunables};

    fn machine(policy: Policy) -> PageAllocator {
        let mut map = MemoryMap::new();
        map.add_range(NodeId(0), 0..64 << 20).unwrap().set_cpus(NodeId(0), 2).unwrap();
        PageAllocator::new(map, Tunables::default(), policy).unwrap()
    }

    /// Under every preset, pageset traffic (refills, frees on the other CPU, drains, orders 0
    /// and 3) leaves the signals the preset does not keep at 0, and the check notices one
    /// that moved.
    #[test]
    fn signals_a_policy_does_not_keep_stay_zero() {
        for preset in PRESETS {
            let pa = machine(preset.policy);
            let (c0, c1) = (pa.cpu(CpuId(0)).unwrap(), pa.cpu(CpuId(1)).unwrap());
            for round in 0..4 {
                let order = Order(if round % 2 == 0 { 0 } else { 3 });
                let held: Vec<Pfn> =
                    (0..700).map(|_| pa.alloc_pages(c0, Gfp::KERNEL, order).unwrap()).collect();
                let free_on = if round < 2 { c0 } else { c1 };
                held.into_iter().for_each(|p| pa.free_pages(free_on, p, order).unwrap());
                validate(&pa).unwrap_or_else(|v| panic!("{}: {v}", preset.name));
            }
        }
        let pa = machine(Policy::modern().with(|p| p.free_batch_sizing = FreeBatchSizing::Batch));
        pa.zones()[0].pcp[0].pcp.lock().free_count = 1;
        let err = validate(&pa).unwrap_err();
        assert!(err.what.contains("free_count"), "{err}");
    }

    /// Every preset's pageset traffic keeps the order-0 free's `free_limit` in step with
    /// `high` and its bounds, and the check catches one that is not.
    #[test]
    fn the_free_limit_stays_in_step_with_high() {
        for preset in PRESETS {
            let pa = machine(preset.policy);
            let c0 = pa.cpu(CpuId(0)).unwrap();
            let held: Vec<Pfn> =
                (0..700).map(|_| pa.alloc_pages(c0, Gfp::KERNEL, Order(0)).unwrap()).collect();
            held.into_iter().for_each(|p| pa.free_pages(c0, p, Order(0)).unwrap());
            validate(&pa).unwrap_or_else(|v| panic!("{}: {v}", preset.name));
            let mut pcp = pa.zones()[0].pcp[0].pcp.lock();
            pcp.free_limit = pcp.high + 1;
            drop(pcp);
            let err = validate(&pa).unwrap_err();
            assert!(err.what.contains("free_limit"), "{}: {err}", preset.name);
        }
    }
}

//! Remote frees (`Policy::remote_free`, beyond the kernel): a CPU that frees a block another
//! CPU's pageset handed out puts it on that pageset's remote-free list, and the owner takes
//! the list back in one swap and frees each block into its own pageset.
//!
//! The kernel frees into the *freeing* CPU's pageset: with one CPU allocating and another
//! freeing (a network receive path, a producer-consumer pipeline), the freeing CPU's pageset
//! overflows to the zone and the allocating CPU's runs dry and refills from it, so every page
//! crosses the zone lock twice and its buddy merges and splits. Here the page goes home
//! instead, at the price of one cache-line transfer (the owner's list word) per free; the
//! model charges that line like any other.
//!
//! The list is a stack threaded through the blocks' frames (`next`), its head and its pages
//! in one 64-bit word of the owner's [`PcpSlot`]. Producers only push (compare-exchange) and the
//! owner only takes everything (swap), so a head cannot be popped and pushed back between a
//! producer's read and its exchange: no ABA. A producer writes the frame's state and link
//! before its release exchange; the owner's acquire swap sees them.
//!
//! Blocks on the list are in state [`FrameState::Remote`]: a second free of one is a double
//! free, a buddy merge passes them by. They count as pages the owner's pageset holds
//! (`Zone::pcp_pages`) though they are on none of its lists until taken back;
//! [`REMOTE_FREE_MAX`] bounds how many pages wait, and the owner takes them back when its list
//! for an allocation runs dry, at each tick and before its pageset is drained.

use crate::events::{EventSink, MetaLine};
use crate::mem_map::{FrameInfo, FrameState, NIL};
use crate::pcp::{PcpSlot, PerCpuPages};
use crate::policy::REMOTE_FREE_MAX;
use crate::stats::Counter;
use crate::sync::Ordering::{Acquire, Relaxed, Release};
use crate::sync::RawLock;
use crate::types::{CpuId, Order, Pfn};
use crate::zone::Zone;
use crate::{Cpu, PageAllocator};

/// The remote-free word of an empty list: no head, no blocks.
pub(crate) const EMPTY: u64 = NIL as u64;

impl<E: EventSink, L: RawLock> PageAllocator<E, L> {
    /// Put the claimed block at `pfn` on `owner`'s remote-free list for `zone`. False (and
    /// nothing changed but the frame's state restored) when `owner` is not a CPU of this
    /// allocator or its list is full: the caller then frees the block as usual.
    pub(crate) fn remote_free_push(
        &self,
        cpu: Cpu,
        zone: &Zone<L>,
        owner: CpuId,
        pfn: Pfn,
        order: Order,
    ) -> bool {
        let Some(slot) = zone.pcp.get(owner.index()) else { return false };
        let idx = zone.index_of(pfn);
        let frame = zone.frame(pfn);
        if E::ENABLED {
            self.events.touch(cpu.id, MetaLine::Pageset(zone.idx, owner));
        }
        let pages = 1u32 << order.0;
        let mut cur = slot.remote.load(Relaxed);
        loop {
            let (head, held) = (cur as u32, (cur >> 32) as u32);
            if held + pages > REMOTE_FREE_MAX {
                frame.set_info(FrameInfo { state: FrameState::Freeing, order, list: 0 });
                return false;
            }
            frame.set_info(FrameInfo { state: FrameState::Remote, order, list: 0 });
            frame.set_next(head);
            let new = u64::from(idx) | u64::from(held + pages) << 32;
            match slot.remote.compare_exchange_weak(cur, new, Release, Relaxed) {
                Ok(_) => break,
                Err(now) => cur = now,
            }
        }
        self.counters.add_shared(Counter::PcpRemoteFree, 1);
        true
    }

    /// Take back every block on `slot`'s remote-free list and free each into the pageset
    /// (`pcp`, locked by the caller, which acts for the owner): onto its list, draining as a
    /// local free would. Returns the blocks taken.
    pub(crate) fn remote_free_collect(
        &self,
        cpu: Cpu,
        zone: &Zone<L>,
        slot: &PcpSlot<L>,
        pcp: &mut PerCpuPages,
    ) -> u32 {
        if slot.remote.load(Relaxed) == EMPTY {
            return 0;
        }
        let mut idx = slot.remote.swap(EMPTY, Acquire) as u32;
        let mut taken = 0;
        while idx != NIL {
            let pfn = zone.pfn_of(idx);
            let frame = zone.frame(pfn);
            let next = frame.next();
            let order = frame.info().order;
            let bits = zone.pageblocks.get_bits(pfn);
            match self.pcp_fast.free_pindex(order, bits) {
                Some(pindex) => {
                    self.free_unref_page_commit(
                        cpu, zone, slot, pcp, frame, idx, order, pindex, bits,
                    );
                }
                // Its pageblock was isolated since: straight to the buddy lists.
                None => self.free_to_zone(cpu, zone, pfn, order),
            }
            taken += 1;
            idx = next;
        }
        slot.stats.add_locked(Counter::PcpRemoteCollect, u64::from(taken));
        taken
    }
}

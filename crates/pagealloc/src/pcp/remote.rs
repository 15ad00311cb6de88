//! Remote frees (`Policy::remote_free`, beyond the kernel): a CPU that frees a block another
//! CPU's pageset handed out sends it back to that pageset, and the owner takes its blocks
//! back in one swap and frees each into its own pageset.
//!
//! The kernel frees into the *freeing* CPU's pageset: with one CPU allocating and another
//! freeing (a network receive path, a producer-consumer pipeline), the freeing CPU's pageset
//! overflows to the zone and the allocating CPU's runs dry and refills from it, so every page
//! crosses the zone lock twice and its buddy merges and splits. Here the page goes home
//! instead.
//!
//! Two stages. The freeing CPU first puts the block on its own pageset's *pending chain*
//! ([`Pending`]: blocks for one owner, threaded through the frames, under its own pageset
//! lock, no atomics on a shared line). It *publishes* the chain onto the owner's
//! *remote-free list* with one compare-exchange when the chain holds [`remote_batch`] pages,
//! before it frees a block for another owner, at its tick, and before its pageset is drained
//! (a drain frees the chain into the drained pageset instead, so `drain_all_pages` leaves
//! nothing behind). So the owner's list word, the one cache line both CPUs write, moves once
//! per batch rather than once per free. The owner does not look at other CPUs' pending
//! chains: when its list runs dry with blocks still pending elsewhere it refills from the
//! zone as the kernel does; at most [`remote_batch`] pages per freeing CPU and zone wait so,
//! until that CPU's next free for another owner or its next tick.
//!
//! The remote-free list is a stack threaded through the blocks' frames (`next`), its head and
//! its pages in one 64-bit word of the owner's [`PcpSlot`]. Producers only push a chain
//! (compare-exchange) and the owner only takes everything (swap), so a head cannot be popped
//! and pushed back between a producer's read and its exchange: no ABA. A producer writes the
//! chain's frames (state, links, the tail's link to the old head) before its release
//! exchange; the owner's acquire swap sees them.
//!
//! Blocks on a pending chain or a remote-free list are in state [`FrameState::Remote`]: a
//! second free of one is a double free, a buddy merge passes them by. They count as pages a
//! pageset holds (`Zone::pcp_pages`; the census's `remote`) though they are on none of its
//! lists until taken back; [`REMOTE_FREE_MAX`] bounds how many pages wait on one owner's list
//! (a chain that does not fit is freed into the freeing CPU's own pageset, as without the
//! switch), and the owner takes the list back when its list for an allocation runs dry, at
//! each tick and before its pageset is drained.

use crate::events::{EventSink, MetaLine};
use crate::mem_map::{Frame, FrameInfo, FrameState, NIL};
use crate::pcp::{PcpSlot, PerCpuPages};
use crate::policy::{REMOTE_FREE_BATCH_MAX, REMOTE_FREE_MAX};
use crate::stats::Counter;
use crate::sync::Ordering::{Acquire, Relaxed, Release};
use crate::sync::RawLock;
use crate::types::{CpuId, Order};
use crate::zone::Zone;
use crate::{Cpu, PageAllocator};

/// The remote-free word of an empty list: no head, no blocks.
pub(crate) const EMPTY: u64 = NIL as u64;

/// A remote-free word's two halves: the head block's frame index (low) and the pages on the
/// list (high).
#[inline]
pub(crate) fn word_parts(word: u64) -> (u32, u32) {
    (word as u32, (word >> 32) as u32)
}

/// The remote-free word of a list from `head` holding `pages`.
#[inline]
fn word(head: u32, pages: u32) -> u64 {
    u64::from(head) | u64::from(pages) << 32
}

/// The pages a pending chain collects before it is published: the pageset's `batch` (the
/// kernel's unit for moving pages between a pageset and the zone, which amortises one zone
/// lock hold over that many pages; here one transfer of the owner's list word), at most
/// [`REMOTE_FREE_BATCH_MAX`].
#[inline]
pub(crate) fn remote_batch(pcp: &PerCpuPages) -> u32 {
    (pcp.batch.max(1) as u32).min(REMOTE_FREE_BATCH_MAX)
}

/// A freeing CPU's pending chain for one zone: blocks it freed for `owner`, not yet on the
/// owner's remote-free list. Kept in the freeing CPU's pageset, under its lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pending {
    /// The CPU whose pageset handed the blocks out: always a CPU of the zone (checked when
    /// it becomes the owner; 0 in an emptied chain, and every allocator has CPU 0).
    pub(crate) owner: u32,
    /// Index of the most recently added block ([`NIL`] when empty); linked by `next`.
    pub(crate) head: u32,
    /// Index of the first block added, whose `next` is [`NIL`] until published.
    pub(crate) tail: u32,
    /// Pages on the chain.
    pub(crate) pages: u32,
    /// Blocks on the chain.
    pub(crate) blocks: u32,
}

/// Where [`PageAllocator::remote_pending_flush`] sends a pending chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PendingTo {
    /// The owner's remote-free list (publish): at the bound, a new owner, a tick.
    Owner,
    /// The pageset that holds the chain: a drain of it, which must leave nothing waiting.
    Here,
}

impl Pending {
    pub(crate) const EMPTY: Pending =
        Pending { owner: 0, head: NIL, tail: NIL, pages: 0, blocks: 0 };

    /// Does the chain hold no block?
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.head == NIL
    }
}

impl<E: EventSink, L: RawLock> PageAllocator<E, L> {
    /// Send the claimed block at frame `idx` home to `owner`'s pageset for `zone`: onto
    /// `cpu`'s pending chain, published when the chain is full or belongs to another owner.
    /// When `cpu`'s pageset is busy (a drain from another CPU holds it), the block is pushed
    /// alone. False (and nothing changed) when `owner` is not a CPU of this allocator, or the
    /// lone push found the owner's list full: the caller then frees the block as usual.
    #[allow(unsafe_code)]
    pub(crate) fn remote_free(
        &self,
        cpu: Cpu,
        zone: &Zone<L>,
        owner: CpuId,
        frame: &Frame,
        idx: u32,
        order: Order,
    ) -> bool {
        // SAFETY: the free checked `cpu` with `owns` (hot.rs, C).
        let slot = unsafe { zone.pcp_at(cpu.id) };
        let Some(mut pcp) = self.lock_local_pcp(slot) else {
            let alone =
                Pending { owner: owner.0, head: idx, tail: idx, pages: 1 << order.0, blocks: 1 };
            return zone.pcp.get(owner.index()).is_some()
                && self.remote_free_alone(cpu, zone, frame, &alone);
        };
        if E::ENABLED {
            self.events.touch(cpu.id, MetaLine::Pageset(zone.idx, cpu.id));
        }
        if pcp.pending.owner != owner.0 {
            // A new owner (the chain's was checked when it became the owner).
            if zone.pcp.get(owner.index()).is_none() {
                return false;
            }
            self.remote_pending_flush(cpu, zone, slot, &mut pcp, PendingTo::Owner);
        }
        frame.set_info(FrameInfo { state: FrameState::Remote, order, list: 0 });
        let p = &mut pcp.pending;
        frame.set_next(p.head);
        if p.is_empty() {
            p.tail = idx;
        }
        p.owner = owner.0;
        p.head = idx;
        p.pages += 1 << order.0;
        p.blocks += 1;
        if p.pages >= remote_batch(&pcp) {
            self.remote_pending_flush(cpu, zone, slot, &mut pcp, PendingTo::Owner);
        }
        true
    }

    /// [`Self::remote_free`] with `cpu`'s pageset busy: push the block (`frame`, claimed, the
    /// only one of `chain`) alone. False (the frame as it was) when the owner's list is full.
    #[cold]
    fn remote_free_alone(&self, cpu: Cpu, zone: &Zone<L>, frame: &Frame, chain: &Pending) -> bool {
        let claimed = frame.info();
        frame.set_info(FrameInfo { state: FrameState::Remote, ..claimed });
        if self.remote_push(cpu, zone, chain) {
            self.counters.add_shared(Counter::PcpRemoteFree, 1);
            return true;
        }
        frame.set_info(claimed);
        false
    }

    /// Empty `pcp`'s pending chain (`slot`'s, locked by the caller, which acts for its CPU):
    /// to [`PendingTo::Owner`], spliced onto its owner's remote-free list in one exchange, or
    /// (asked, or when that list has no room) freed into this pageset as frees without the
    /// switch would be.
    pub(crate) fn remote_pending_flush(
        &self,
        cpu: Cpu,
        zone: &Zone<L>,
        slot: &PcpSlot<L>,
        pcp: &mut PerCpuPages,
        to: PendingTo,
    ) {
        let chain = core::mem::replace(&mut pcp.pending, Pending::EMPTY);
        if chain.is_empty() {
            return;
        }
        if to == PendingTo::Owner && self.remote_push(cpu, zone, &chain) {
            slot.stats.add_locked(Counter::PcpRemoteFree, u64::from(chain.blocks));
        } else {
            self.remote_free_chain(cpu, zone, slot, pcp, chain.head);
        }
    }

    /// Splice `chain` (its frames written, its tail's link not yet) onto the front of its
    /// owner's remote-free list. False, nothing changed, if the list would exceed
    /// [`REMOTE_FREE_MAX`] pages.
    #[allow(unsafe_code)]
    fn remote_push(&self, cpu: Cpu, zone: &Zone<L>, chain: &Pending) -> bool {
        let home = &zone.pcp[chain.owner as usize];
        if E::ENABLED {
            self.events.touch(cpu.id, MetaLine::Pageset(zone.idx, CpuId(chain.owner)));
        }
        // SAFETY: the chain's tail is a frame of this zone, claimed in it (hot.rs, F).
        let tail = unsafe { zone.frame_at(chain.tail) };
        let mut cur = home.remote.load(Relaxed);
        loop {
            let (head, held) = word_parts(cur);
            if held + chain.pages > REMOTE_FREE_MAX {
                return false;
            }
            tail.set_next(head);
            let new = word(chain.head, held + chain.pages);
            match home.remote.compare_exchange_weak(cur, new, Release, Relaxed) {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
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
        let (head, _) = word_parts(slot.remote.swap(EMPTY, Acquire));
        let taken = self.remote_free_chain(cpu, zone, slot, pcp, head);
        slot.stats.add_locked(Counter::PcpRemoteCollect, u64::from(taken));
        taken
    }

    /// Free every block of the chain from `idx` (linked by `next`, ending at [`NIL`]) into
    /// `pcp` (`slot`'s, locked by the caller) as a local free would. Returns the blocks.
    #[allow(unsafe_code)]
    fn remote_free_chain(
        &self,
        cpu: Cpu,
        zone: &Zone<L>,
        slot: &PcpSlot<L>,
        pcp: &mut PerCpuPages,
        mut idx: u32,
    ) -> u32 {
        let mut blocks = 0;
        while idx != NIL {
            let pfn = zone.pfn_of(idx);
            // SAFETY: the chain's members are frames of this zone, as on any of its lists
            // (hot.rs, F); the zone spans each one's pfn (P).
            let (frame, bits) = unsafe { (zone.frame_at(idx), zone.pageblock_bits(pfn)) };
            let next = frame.next();
            let order = frame.info().order;
            match self.pcp_fast.free_pindex(order, bits) {
                Some(pindex) => {
                    self.free_unref_page_commit(
                        cpu, zone, slot, pcp, frame, idx, order, pindex, bits,
                    );
                }
                // Its pageblock was isolated since: straight to the buddy lists.
                // SAFETY: as above (hot.rs, F and P).
                None => unsafe { self.free_to_zone(cpu.id, zone, idx, order) },
            }
            blocks += 1;
            idx = next;
        }
        blocks
    }
}

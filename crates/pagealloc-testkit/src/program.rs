//! Programs of allocator operations: what property tests, the fuzz target and the stress
//! command feed the allocator. An operation names its CPU and refers to live blocks by index
//! (modulo the number live), so any sequence of operations is meaningful.

use pagealloc::{Gfp, Order};

use crate::rng::Rng;

/// The kinds of request a program makes, each a GFP combination a kernel caller uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GfpKind {
    /// GFP_KERNEL: unmovable, may reclaim.
    Kernel,
    /// GFP_HIGHUSER_MOVABLE: user pages.
    Movable,
    /// GFP_KERNEL | __GFP_RECLAIMABLE: slab.
    Reclaimable,
    /// GFP_ATOMIC: may use reserves, may not reclaim.
    Atomic,
    /// GFP_NOWAIT: no reserves, no reclaim.
    Nowait,
    /// GFP_KERNEL | GFP_DMA32.
    Dma32,
    /// GFP_KERNEL | GFP_DMA.
    Dma,
}

impl GfpKind {
    /// Every kind.
    pub const ALL: [GfpKind; 7] = [
        GfpKind::Kernel,
        GfpKind::Movable,
        GfpKind::Reclaimable,
        GfpKind::Atomic,
        GfpKind::Nowait,
        GfpKind::Dma32,
        GfpKind::Dma,
    ];

    /// The flags.
    pub fn gfp(self) -> Gfp {
        match self {
            GfpKind::Kernel => Gfp::KERNEL,
            GfpKind::Movable => Gfp::HIGHUSER_MOVABLE,
            GfpKind::Reclaimable => Gfp::KERNEL_RECLAIMABLE,
            GfpKind::Atomic => Gfp::ATOMIC,
            GfpKind::Nowait => Gfp::NOWAIT,
            GfpKind::Dma32 => Gfp::KERNEL | Gfp::DMA32,
            GfpKind::Dma => Gfp::KERNEL | Gfp::DMA,
        }
    }
}

/// A free the allocator must refuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadFree {
    /// Free a block that was already freed.
    Double,
    /// Free a live block with an order one higher than it has.
    WrongOrder,
    /// Free the second frame of a live block of order ≥ 1.
    Tail,
    /// Free a frame that is not aligned to the order given.
    Misaligned,
    /// Free a frame no zone holds.
    Foreign,
    /// Free with an order above MAX_PAGE_ORDER.
    HugeOrder,
}

impl BadFree {
    /// Every kind.
    pub const ALL: [BadFree; 6] = [
        BadFree::Double,
        BadFree::WrongOrder,
        BadFree::Tail,
        BadFree::Misaligned,
        BadFree::Foreign,
        BadFree::HugeOrder,
    ];
}

/// One operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Allocate a block on a CPU.
    Alloc {
        /// CPU (modulo the machine's CPU count).
        cpu: u32,
        /// Flags.
        gfp: GfpKind,
        /// Order, 0..=10.
        order: u8,
    },
    /// Free the live block `slot` (modulo live count) on a CPU, which may differ from the one
    /// that allocated it.
    Free {
        /// CPU.
        cpu: u32,
        /// Which live block.
        slot: u32,
    },
    /// One vmstat interval on a CPU: decay of high, remote-node expiry.
    Tick {
        /// CPU.
        cpu: u32,
    },
    /// Drain every CPU's pagesets (the slow path's drain_all_pages), from a CPU.
    DrainAll {
        /// CPU doing it.
        cpu: u32,
    },
    /// Drain one CPU's pagesets from another CPU.
    DrainCpu {
        /// CPU doing it.
        cpu: u32,
        /// CPU whose pagesets are emptied.
        target: u32,
    },
    /// Compact a zone with the run's own owner moving its movable blocks (the oracle checks
    /// every move: a live movable block of that order to a target no live block overlaps, in
    /// the same zone); the owner refuses every seventh frame as pinned.
    Compact {
        /// CPU doing it.
        cpu: u32,
        /// Zone index (modulo the zone count).
        zone: u16,
        /// Order wanted; above 10: the whole zone, as the `compact_memory` sysctl.
        order: u8,
        /// 0 async, 1 sync-light, else sync.
        mode: u8,
    },
    /// Mark background reclaim as running (or finished) on a zone.
    ReclaimActive {
        /// Zone index (modulo the zone count).
        zone: u16,
        /// Running?
        on: bool,
    },
    /// Attempt a free that must fail.
    BadFree {
        /// CPU.
        cpu: u32,
        /// Which live block it is built from.
        slot: u32,
        /// What is wrong with it.
        kind: BadFree,
    },
    /// Carve a fragment from a CPU's page_frag cache (which refills itself when it has no
    /// page or the page is used up). A zero size is allowed (each such fragment takes a
    /// reference, as in the kernel); an alignment that is not a power of two up to 4096, or a
    /// size above 32 KiB, must be refused before the cache changes.
    FragAlloc {
        /// CPU, whose cache it is.
        cpu: u32,
        /// Bytes.
        size: u32,
        /// Alignment in bytes.
        align: u32,
    },
    /// Drop the live fragment `slot` (modulo the live fragments) with `page_frag_free` on a
    /// CPU, which may differ from the one whose cache carved it.
    FragFree {
        /// CPU.
        cpu: u32,
        /// Which live fragment.
        slot: u32,
    },
    /// Drain a CPU's page_frag cache: its page is freed if no fragment of it is out.
    FragDrain {
        /// CPU, whose cache it is.
        cpu: u32,
    },
    /// Free a fragment already freed, once its page is gone: must be refused. (While the page
    /// is held — by its cache, other fragments, or a new owner — a second free drops someone
    /// else's reference, which neither the kernel nor this library can tell; the op then does
    /// nothing.)
    FragFreeTwice {
        /// CPU.
        cpu: u32,
        /// Which of the recently freed fragments.
        slot: u32,
    },
    /// `free_pages` of a live page_frag page (`slot` modulo those live): refused with
    /// `StillReferenced` while its cache carves it or more than one fragment is out; with one
    /// fragment left it frees the page, as dropping that last reference does.
    FragFreePages {
        /// CPU.
        cpu: u32,
        /// Which live page_frag page.
        slot: u32,
    },
}

/// Mix of operations for [`random_program`].
#[derive(Clone, Copy, Debug)]
pub struct Mix {
    /// Probability an operation is an allocation (the rest are mostly frees).
    pub alloc: f64,
    /// Probability an operation is a bad free.
    pub bad_free: f64,
    /// Probability an operation is a tick, a drain or a reclaim toggle.
    pub housekeeping: f64,
    /// Probability an allocation is above order 3 (orders 0..=3 share the rest).
    pub high_order: f64,
}

impl Default for Mix {
    fn default() -> Mix {
        Mix { alloc: 0.55, bad_free: 0.03, housekeeping: 0.01, high_order: 0.1 }
    }
}

/// A random program of `len` operations for `nr_cpus` CPUs.
pub fn random_program(seed: u64, len: usize, nr_cpus: u32, mix: Mix) -> Vec<Op> {
    let mut rng = Rng::new(seed);
    (0..len)
        .map(|_| {
            let cpu = rng.below(u64::from(nr_cpus.max(1))) as u32;
            let slot = rng.next_u64() as u32;
            let r = rng.next_u64() as f64 / u64::MAX as f64;
            if r < mix.housekeeping {
                match rng.below(5) {
                    0 => Op::Tick { cpu },
                    1 => Op::DrainAll { cpu },
                    2 => Op::DrainCpu { cpu, target: slot },
                    3 => Op::Compact {
                        cpu,
                        zone: slot as u16,
                        order: rng.below(12) as u8,
                        mode: rng.below(3) as u8,
                    },
                    _ => Op::ReclaimActive { zone: slot as u16, on: rng.chance(0.5) },
                }
            } else if r < mix.housekeeping + mix.bad_free {
                Op::BadFree { cpu, slot, kind: BadFree::ALL[rng.below(6) as usize] }
            } else if r < mix.housekeeping + mix.bad_free + mix.alloc {
                let order = if rng.chance(mix.high_order) {
                    4 + rng.below(7) as u8
                } else {
                    rng.below(4) as u8
                };
                Op::Alloc { cpu, gfp: GfpKind::ALL[rng.below(7) as usize], order }
            } else {
                Op::Free { cpu, slot }
            }
        })
        .collect()
}

/// The order an allocation op asks for, clamped to valid orders.
pub fn op_order(order: u8) -> Order {
    Order(order % 11)
}

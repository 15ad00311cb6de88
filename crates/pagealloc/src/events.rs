//! Trace events whose records mirror the kernel's `kmem:` tracepoints, and the sink that
//! receives them.
//!
//! The allocator is generic over its sink; with [`NoEvents`] every emission site compiles to
//! nothing (`EventSink::ENABLED` is a constant false), so tracing costs nothing when off.

use crate::gfp::Gfp;
use crate::migratetype::MigrateType;
use crate::types::{CpuId, Order, Pfn, ZoneIdx};

/// One trace record. Field names follow the tracepoints' printed fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceEvent {
    /// `mm_page_alloc`: an allocation finished (`pfn == None` when it failed).
    PageAlloc {
        /// CPU the request ran on.
        cpu: CpuId,
        /// First frame, or `None` for a failure (`page=NULL pfn=0x0`).
        pfn: Option<Pfn>,
        /// Requested order.
        order: Order,
        /// The caller's flags.
        gfp: Gfp,
        /// The migratetype asked for.
        migratetype: MigrateType,
    },
    /// `mm_page_free`: a block is being freed.
    PageFree {
        /// CPU.
        cpu: CpuId,
        /// First frame.
        pfn: Pfn,
        /// Order.
        order: Order,
    },
    /// `mm_page_free_batched`: an order-0 page freed by a batched free.
    PageFreeBatched {
        /// CPU.
        cpu: CpuId,
        /// The frame.
        pfn: Pfn,
    },
    /// `mm_page_pcpu_drain`: a block moved from a per-CPU list back to the buddy lists.
    PagePcpuDrain {
        /// CPU doing the drain (not necessarily the pageset's owner).
        cpu: CpuId,
        /// First frame.
        pfn: Pfn,
        /// Order.
        order: Order,
        /// Its pageblock's migratetype at drain time.
        migratetype: MigrateType,
    },
    /// `mm_page_alloc_zone_locked`: a block carved from the buddy lists under the zone lock.
    PageAllocZoneLocked {
        /// CPU.
        cpu: CpuId,
        /// First frame.
        pfn: Pfn,
        /// Order.
        order: Order,
        /// Migratetype of the list it came from.
        migratetype: MigrateType,
        /// True when taken to refill a per-CPU list.
        percpu_refill: bool,
    },
    /// `mm_page_alloc_extfrag`: an allocation fell back to another migratetype's pageblock.
    PageAllocExtfrag {
        /// CPU.
        cpu: CpuId,
        /// First frame of the block taken.
        pfn: Pfn,
        /// Order requested.
        alloc_order: Order,
        /// Order of the free block found on the other type's list.
        fallback_order: Order,
        /// Type requested.
        alloc_migratetype: MigrateType,
        /// Type whose list the block came from.
        fallback_migratetype: MigrateType,
        /// Did the pageblock's label become the requested type?
        change_ownership: bool,
    },
}

impl TraceEvent {
    /// The tracepoint's name, as `trace` prints it.
    pub const fn name(&self) -> &'static str {
        match self {
            TraceEvent::PageAlloc { .. } => "mm_page_alloc",
            TraceEvent::PageFree { .. } => "mm_page_free",
            TraceEvent::PageFreeBatched { .. } => "mm_page_free_batched",
            TraceEvent::PagePcpuDrain { .. } => "mm_page_pcpu_drain",
            TraceEvent::PageAllocZoneLocked { .. } => "mm_page_alloc_zone_locked",
            TraceEvent::PageAllocExtfrag { .. } => "mm_page_alloc_extfrag",
        }
    }

    /// The CPU the event happened on (every tracepoint records one).
    pub const fn cpu(&self) -> CpuId {
        match *self {
            TraceEvent::PageAlloc { cpu, .. }
            | TraceEvent::PageFree { cpu, .. }
            | TraceEvent::PageFreeBatched { cpu, .. }
            | TraceEvent::PagePcpuDrain { cpu, .. }
            | TraceEvent::PageAllocZoneLocked { cpu, .. }
            | TraceEvent::PageAllocExtfrag { cpu, .. } => cpu,
        }
    }

    /// `mm_page_alloc_extfrag`'s derived field: did the fallback split a pageblock?
    pub const fn is_fragmenting(&self) -> bool {
        match self {
            TraceEvent::PageAllocExtfrag { fallback_order, .. } => {
                fallback_order.0 < crate::types::PAGEBLOCK_ORDER
            }
            _ => false,
        }
    }
}

/// A cache line of the allocator's own data that a call reads or writes: what a model of the
/// memory hierarchy prices an access by. Not a kernel tracepoint.
///
/// Lines the allocator only reads and that change rarely (watermarks, the zone's span,
/// pageblock bits, the policy) are not reported: they stay in every cache that reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetaLine {
    /// The metadata of one frame (the kernel's `struct page`): state, order, list links.
    Frame(Pfn),
    /// A zone's free area of one order: its list heads and count.
    FreeArea(ZoneIdx, Order),
    /// A CPU's pageset in a zone: count, high, batch and list heads.
    Pageset(ZoneIdx, CpuId),
}

/// Receives trace records. `record` may be called with the zone lock or a pcp lock held:
/// it must not call back into the allocator.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
/// use pagealloc::{CpuId, EventSink, Gfp, MemoryMap, Order, PageAllocator, Policy, TraceEvent,
///     Tunables};
///
/// /// Counts `mm_page_alloc` records (a sink only needs `record`).
/// #[derive(Debug, Default)]
/// struct Allocs(AtomicU64);
///
/// impl EventSink for Allocs {
///     fn record(&self, event: &TraceEvent) {
///         if matches!(event, TraceEvent::PageAlloc { .. }) {
///             self.0.fetch_add(1, Relaxed);
///         }
///     }
/// }
///
/// let map = MemoryMap::single_node(1, 16 << 20)?;
/// let pa = PageAllocator::with_events(map, Tunables::default(), Policy::modern(),
///     Allocs::default())?;
/// let cpu = pa.cpu(CpuId(0)).expect("cpu 0");
/// let pfn = pa.alloc_pages(cpu, Gfp::KERNEL, Order(0))?;
/// pa.free_pages(cpu, pfn, Order(0))?;
/// assert_eq!(pa.events().0.load(Relaxed), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait EventSink: Sync {
    /// False makes every emission site dead code.
    const ENABLED: bool = true;

    /// Take one record.
    fn record(&self, event: &TraceEvent);

    /// `cpu` took `zone`'s lock. Not a kernel tracepoint: it lets a model runner charge lock
    /// waiting and hold time in virtual time (the kernel's `lock:contention_*` events play
    /// this part for a real machine). Called with the lock held.
    #[inline]
    fn zone_lock_taken(&self, _cpu: CpuId, _zone: ZoneIdx) {}

    /// `cpu` is about to release `zone`'s lock after `list_ops` list operations: free-list
    /// insertions and removals, and the pageset list pops and empty-list probes of a bulk
    /// free (each touches a `struct page` or a list head: the hold's work). Called with the
    /// lock still held.
    #[inline]
    fn zone_lock_released(&self, _cpu: CpuId, _zone: ZoneIdx, _list_ops: u32) {}

    /// `cpu` released `zone`'s lock between two chunks of one batched bulk free
    /// ([`crate::policy::BulkFreeCallers`]) and will take it again at once: CPUs already
    /// waiting for the lock get it first. Not a tracepoint: a model whose zone locks live in
    /// virtual time lets earlier waiters in here instead of after the whole free.
    #[inline]
    fn zone_lock_yield(&self, _cpu: CpuId, _zone: ZoneIdx) {}

    /// `cpu` did `ops` list operations on its pageset outside any zone lock: the first pass
    /// of the pre-5.18 two-pass bulk free (probing lists round-robin, moving the chosen
    /// blocks to a local list). Not a tracepoint; a model charges the time.
    #[inline]
    fn pcp_list_work(&self, _cpu: CpuId, _ops: u32) {}

    /// `cpu` reads or writes `line` (with the zone lock held when inside a hold): every access
    /// the allocator makes to its own metadata, once per access. A list operation reports the
    /// block it moves, the neighbours whose links it rewrites and the list's head; a buddy
    /// merge reports each buddy it inspects. Not a tracepoint: a model prices it by where the
    /// line is.
    #[inline]
    fn touch(&self, _cpu: CpuId, _line: MetaLine) {}

    /// `cpu` writes `line` without reading it first: a list neighbour whose link a list
    /// operation rewrites (`next->prev = new`), from pointers it already holds. A core need
    /// not wait for such a line: the store waits in its store buffer while the line comes, so
    /// a model may overlap the transfer with what follows. By default the same as
    /// [`touch`](Self::touch).
    #[inline]
    fn store(&self, cpu: CpuId, line: MetaLine) {
        self.touch(cpu, line);
    }

    /// One list operation's lines in one call: [`touch`](Self::touch) of each of `reads`, in
    /// order, then [`store`](Self::store) of each of `writes`; so that a sink pricing every
    /// line pays its per-call work (is pricing on, where is this CPU) once per operation
    /// instead of once per line.
    #[inline]
    fn touch_lines(&self, cpu: CpuId, reads: &[MetaLine], writes: &[MetaLine]) {
        for &line in reads {
            self.touch(cpu, line);
        }
        for &line in writes {
            self.store(cpu, line);
        }
    }

    /// `cpu` asks for `line` ahead of its use (a software prefetch): a model starts the
    /// transfer without stalling the CPU.
    #[inline]
    fn prefetch(&self, _cpu: CpuId, _line: MetaLine) {}
}

/// The sink that records nothing, at no cost.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoEvents;

impl EventSink for NoEvents {
    const ENABLED: bool = false;

    #[inline(always)]
    fn record(&self, _event: &TraceEvent) {}
}

impl<T: EventSink> EventSink for &T {
    const ENABLED: bool = T::ENABLED;

    #[inline]
    fn record(&self, event: &TraceEvent) {
        (**self).record(event);
    }

    #[inline]
    fn zone_lock_taken(&self, cpu: CpuId, zone: ZoneIdx) {
        (**self).zone_lock_taken(cpu, zone);
    }

    #[inline]
    fn zone_lock_released(&self, cpu: CpuId, zone: ZoneIdx, list_ops: u32) {
        (**self).zone_lock_released(cpu, zone, list_ops);
    }

    #[inline]
    fn zone_lock_yield(&self, cpu: CpuId, zone: ZoneIdx) {
        (**self).zone_lock_yield(cpu, zone);
    }

    #[inline]
    fn pcp_list_work(&self, cpu: CpuId, ops: u32) {
        (**self).pcp_list_work(cpu, ops);
    }

    #[inline]
    fn touch(&self, cpu: CpuId, line: MetaLine) {
        (**self).touch(cpu, line);
    }

    #[inline]
    fn store(&self, cpu: CpuId, line: MetaLine) {
        (**self).store(cpu, line);
    }

    #[inline]
    fn touch_lines(&self, cpu: CpuId, reads: &[MetaLine], writes: &[MetaLine]) {
        (**self).touch_lines(cpu, reads, writes);
    }

    #[inline]
    fn prefetch(&self, cpu: CpuId, line: MetaLine) {
        (**self).prefetch(cpu, line);
    }
}

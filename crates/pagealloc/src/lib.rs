//! `pagealloc`: a page-frame allocator with the Linux page allocator's design — zones, buddy
//! free lists per migratetype, pageblock grouping with fallback and claiming, watermarks —
//! every seed mechanism switchable through a [`Policy`].
//!
//! The crate is `no_std` and hands out frame numbers ([`Pfn`]), not memory: a caller maps
//! them to addresses. It needs no heap: [`PageAllocator::with_lock_in`] builds it over a
//! region of [`PageAllocator::metadata_bytes`] bytes the caller sets aside, and nothing it
//! does afterwards allocates (allocation, free, drain, tick, compaction; `tests/no_alloc.rs`
//! counts). [`PageAllocator::new`] is the convenience that takes the metadata from `alloc`'s
//! heap. With the `global-alloc` feature, `global::GlobalPages` is the allocator as
//! `#[global_allocator]`.
//!
//! ```
//! use pagealloc::{Gfp, MemoryMap, Order, PageAllocator, Policy, Tunables, CpuId};
//!
//! // One node, two CPUs, 64 MiB of memory from physical address 0.
//! let map = MemoryMap::single_node(2, 64 << 20)?;
//! let pa = PageAllocator::new(map, Tunables::default(), Policy::modern())?;
//! let cpu = pa.cpu(CpuId(1)).expect("cpu 1 exists");
//!
//! let pfn = pa.alloc_pages(cpu, Gfp::KERNEL, Order(3))?;   // 8 contiguous frames
//! assert!(pfn.is_aligned(Order(3)));
//! pa.free_pages(cpu, pfn, Order(3))?;
//! assert!(pa.free_pages(cpu, pfn, Order(3)).is_err());      // a double free is an error
//! pagealloc::debug::validate(&pa)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Allocating and freeing
//!
//! Every call names the CPU it runs on ([`PageAllocator::cpu`] hands out a [`Cpu`] handle;
//! a handle of another allocator is refused). [`Gfp`] flags pick the zones and the
//! migratetype, as in the kernel; an order is a power of two of frames.
//!
//! ```
//! use pagealloc::{CpuId, Gfp, MemoryMap, Order, PageAllocator, Policy, Tunables, ZoneType};
//!
//! let pa = PageAllocator::new(MemoryMap::single_node(2, 64 << 20)?, Tunables::default(),
//!     Policy::modern())?;
//! let cpu = pa.cpu(CpuId(0)).expect("cpu 0");
//!
//! // A DMA page comes from below 16 MiB; a movable one from wherever it fits best.
//! let dma = pa.alloc_pages(cpu, Gfp::KERNEL | Gfp::DMA, Order(0))?;
//! assert_eq!(pa.zone_of(dma).map(|z| z.zone_type()), Some(ZoneType::Dma));
//! let movable = pa.alloc_pages(cpu, Gfp::HIGHUSER_MOVABLE, Order(2))?;
//!
//! // Order-0 to order-3 frees go to the CPU's pageset first, so the buddy lists see them
//! // only after a drain: the pages are not "free" until then.
//! pa.free_pages(cpu, dma, Order(0))?;
//! pa.free_pages(cpu, movable, Order(2))?;
//! assert!(pa.nr_free_pages() < pa.managed_pages());
//! pa.drain_all_pages(cpu, None);
//! assert_eq!(pa.nr_free_pages(), pa.managed_pages());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Errors
//!
//! No request can break the allocator: a bad one comes back as a typed error and changes
//! nothing ([`AllocError`], [`FreeError`], and [`BuildError`] / [`MapError`] for a machine
//! that cannot be built).
//!
//! ```
//! use pagealloc::{AllocError, CpuId, FreeError, Gfp, MemoryMap, Order, PageAllocator, Pfn,
//!     Policy, Tunables};
//!
//! let pa = PageAllocator::new(MemoryMap::single_node(1, 16 << 20)?, Tunables::default(),
//!     Policy::modern())?;
//! let cpu = pa.cpu(CpuId(0)).expect("cpu 0");
//! assert_eq!(pa.alloc_pages(cpu, Gfp::KERNEL, Order(11)), Err(AllocError::InvalidOrder(Order(11))));
//!
//! let block = pa.alloc_pages(cpu, Gfp::KERNEL, Order(1))?;
//! let tail = Pfn(block.0 + 1);
//! assert_eq!(pa.free_pages(cpu, tail, Order(0)), Err(FreeError::TailPage { pfn: tail, head: block }));
//! match pa.free_pages(cpu, block, Order(0)) {
//!     Err(FreeError::WrongOrder { allocated, .. }) => assert_eq!(allocated, Order(1)),
//!     other => panic!("{other:?}"),
//! }
//! pa.free_pages(cpu, block, Order(1))?;
//!
//! // Asking for more than there is fails cleanly too.
//! let mut held = Vec::new();
//! let err = loop {
//!     match pa.alloc_pages(cpu, Gfp::KERNEL, Order(10)) {
//!         Ok(pfn) => held.push(pfn),
//!         Err(e) => break e,
//!     }
//! };
//! assert!(matches!(err, AllocError::OutOfMemory { order: Order(10) }));
//! println!("{err}"); // errors implement Display and core::error::Error
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Policies and counters
//!
//! A [`Policy`] says which form of each mechanism runs, [`Tunables`] the sysctls; both are
//! fixed when the allocator is built. The counters ([`PageAllocator::vm_events`], indexed by
//! [`Counter`]) show what the mechanisms did, as `/proc/vmstat` does.
//!
//! ```
//! use pagealloc::{Counter, CpuId, Gfp, MemoryMap, Order, PageAllocator, Policy, Tunables};
//! use pagealloc::policy::PcpLists;
//!
//! // 4.20's pagesets cache order-0 pages only; the modern ones orders 0-3 and THPs.
//! let old = Policy::preset("frag-vanilla").expect("a built-in preset");
//! assert_eq!(old.pcp_lists, PcpLists::Order0Only);
//! for (policy, via_pcp) in [(old, false), (Policy::modern(), true)] {
//!     let pa = PageAllocator::new(MemoryMap::single_node(1, 64 << 20)?,
//!         Tunables::default(), policy)?;
//!     let cpu = pa.cpu(CpuId(0)).expect("cpu 0");
//!     let before = pa.vm_events();
//!     let pfn = pa.alloc_pages(cpu, Gfp::KERNEL, Order(1))?;
//!     pa.free_pages(cpu, pfn, Order(1))?;
//!     let d = pa.vm_events().since(&before);
//!     assert_eq!(d.get(Counter::PcpFree) > 0, via_pcp);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Locks
//!
//! Every zone lock and pageset lock of a `PageAllocator<E, L>` is an `L`, any
//! [`lock_api::RawMutex`]; the default, [`RawSpinLock`], is a test-and-test-and-set spin lock
//! that never yields (the kernel's zone and pcp locks are spin locks). Choose the lock by type
//! with [`PageAllocator::with_lock`]. A user-space program with more threads than CPUs wants a
//! lock that yields to a preempted holder (the lab's `YieldLock` spins a bounded number of
//! times, then calls `std::thread::yield_now`; it needs `std`, which this crate does not
//! have); a kernel needs one that keeps interrupts off while it is held, so an interrupt
//! handler that allocates cannot spin on a lock its own CPU holds: `spin_lock_irqsave`. Here
//! is that lock, with the architecture's interrupt-flag calls stubbed out:
//!
//! ```
//! use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
//! use pagealloc::lock_api::{GuardNoSend, RawMutex};
//! use pagealloc::{CpuId, Gfp, MemoryMap, NoEvents, Order, PageAllocator, Policy, Tunables};
//!
//! // The kernel's side: save the interrupt flag and disable interrupts; restore the flag.
//! fn local_irq_save() -> usize { 0 }
//! fn local_irq_restore(_flags: usize) {}
//!
//! /// `spin_lock_irqsave` / `spin_unlock_irqrestore` as a raw lock. The saved flags are kept
//! /// in the lock (only its holder writes and reads them); nested locks (a pageset's, then
//! /// its zone's) are released in reverse order, so each restores what it saved.
//! pub struct IrqSaveSpinLock {
//!     locked: AtomicBool,
//!     flags: AtomicUsize,
//! }
//!
//! // SAFETY: `locked` goes from false to true only by a successful compare-exchange
//! // (Acquire), and only the holder stores false (Release).
//! unsafe impl RawMutex for IrqSaveSpinLock {
//!     #[allow(clippy::declare_interior_mutable_const)]
//!     const INIT: Self = IrqSaveSpinLock { locked: AtomicBool::new(false), flags: AtomicUsize::new(0) };
//!     // Interrupts are off on this CPU while the lock is held: the guard stays on it.
//!     type GuardMarker = GuardNoSend;
//!
//!     fn lock(&self) {
//!         let flags = local_irq_save();
//!         while self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
//!             while self.locked.load(Ordering::Relaxed) {
//!                 core::hint::spin_loop();
//!             }
//!         }
//!         self.flags.store(flags, Ordering::Relaxed);
//!     }
//!
//!     fn try_lock(&self) -> bool {
//!         let flags = local_irq_save();
//!         if self.locked.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
//!             self.flags.store(flags, Ordering::Relaxed);
//!             true
//!         } else {
//!             local_irq_restore(flags);
//!             false
//!         }
//!     }
//!
//!     unsafe fn unlock(&self) {
//!         let flags = self.flags.load(Ordering::Relaxed);
//!         self.locked.store(false, Ordering::Release);
//!         local_irq_restore(flags);
//!     }
//! }
//!
//! let pa = PageAllocator::<NoEvents, IrqSaveSpinLock>::with_lock(
//!     MemoryMap::single_node(2, 64 << 20)?, Tunables::default(), Policy::modern(), NoEvents)?;
//! let cpu = pa.cpu(CpuId(0)).expect("cpu 0");
//! let pfn = pa.alloc_pages(cpu, Gfp::ATOMIC, Order(0))?;
//! pa.free_pages(cpu, pfn, Order(0))?;
//! pagealloc::debug::validate(&pa)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Module map (kernel names kept, see `ARCHITECTURE.md`): [`types`] units; [`memory_map`] the
//! caller's description of memory; [`migratetype`], [`gfp`], [`pageblock`]; [`watermark`]
//! the watermark checks; [`compaction`] moving movable blocks to make large free ones;
//! [`sizing`] pure sizing formulas; [`policy`] switches and presets; [`page_alloc`] the
//! public allocator, with [`Zone`] its read-only view of one zone; [`page_frag`]; [`stats`],
//! [`events`]; [`debug`] validators. The per-frame array, the index-linked lists, the zone
//! internals, the per-CPU pagesets and the lock wrappers are private; what a user reads of
//! them is re-exported here ([`PcpSnapshot`], [`CacheInfo`], [`WMARK_MIN`] and the other
//! watermark indices, [`zone_flags`], the `PCPF_*` bits, and [`SpinMutex`], a value behind
//! the default lock, which `pagealloc-slab` uses).

//! # Cargo features
//!
//! - `debug-vm` (off by default): the kernel's `CONFIG_DEBUG_VM` checks on free. Every frame
//!   of a freed block after its head must be one of its tail frames; if one is not, the
//!   allocator's metadata is corrupt and the free is refused with [`FreeError::BadPage`],
//!   leaving the block allocated (the kernel's `bad_page` leaks such a page too). It costs
//!   O(2^order) per free, so it is for tests and debugging; every other check on a free
//!   (double free, wrong order, tail page, foreign frame) runs with or without it. The deeper
//!   checks of every invariant are [`debug::validate`], on demand.
//!
//! There is no `std` feature: the error types implement [`core::error::Error`], which is
//! `std::error::Error` (stable in `core` since Rust 1.81, below this crate's MSRV), so they
//! work with `?`, `Box<dyn Error>` and error-reporting crates as they are.
//!
//! # What may grow
//!
//! Types that a later kernel or a later version of this crate will extend are
//! `#[non_exhaustive]`, so adding to them is not a breaking change: every error enum
//! ([`AllocError`], [`FreeError`], [`IsolateError`], [`CompactError`], [`SettingError`],
//! [`PcpDisableError`],
//! [`BuildError`], [`MapError`], [`policy::PolicyError`], [`sizing::SizingError`]), the
//! counters ([`Counter`]), the trace records ([`TraceEvent`]), the drain reasons
//! ([`stats::DrainReason`]), compaction's results ([`CompactResult`], [`CompactStats`],
//! [`CompactOutcome`]), the snapshot and census structs ([`PcpSnapshot`],
//! [`debug::Census`]) and the two configuration structs ([`Policy`], [`Tunables`]). Match
//! them with a `_` arm; derive a policy or tunables from a preset with
//! [`Policy::with`] / [`Tunables::with`] (or set the public fields of a copy) instead of a
//! struct literal.
//!
//! Left exhaustive on purpose: the unit newtypes ([`Pfn`], [`Order`], …), [`MigrateType`] and
//! [`ZoneType`] (the kernel's fixed sets, which index arrays), [`MetaLine`] (a model must
//! price every kind of line, so a new kind should break it), [`CacheInfo`] and [`ZoneLimits`]
//! (inputs a caller writes as literals), and the per-mechanism switch enums in [`policy`]:
//! each lists the forms a mechanism has had, and a program matching one should be told when a
//! new form appears.

#![no_std]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(any(test, doctest))]
extern crate std;

mod buddy;
mod compact_state;
pub mod compaction;
pub mod debug;
pub mod error;
pub mod events;
mod fallback;
pub mod gfp;
#[cfg(all(feature = "global-alloc", not(loom)))]
pub mod global;
mod hot;
mod list;
mod mem_map;
pub mod memory_map;
pub mod migratetype;
pub mod page_alloc;
pub mod page_frag;
pub mod pageblock;
mod pcp;
pub mod policy;
pub mod sizing;
pub mod stats;
mod sync;
mod table;
pub mod types;
pub mod watermark;
#[cfg(feature = "x86_64")]
pub mod x86_64_frames;
mod zone;
pub mod zone_flags;

pub use crate::compaction::{
    CompactMode, CompactOutcome, CompactResult, CompactStats, Migrate, Target,
};
pub use crate::error::{
    AllocError, CompactError, FreeError, IsolateError, PcpDisableError, SettingError,
};
pub use crate::events::{EventSink, MetaLine, NoEvents, TraceEvent};
pub use crate::gfp::{AllocFlags, Gfp};
pub use crate::memory_map::{CacheInfo, MapError, MemoryMap, ZoneLimits};
pub use crate::migratetype::MigrateType;
pub use crate::page_alloc::{AllocRequest, BuildError, Cpu, PageAllocator};
pub use crate::page_frag::{Frag, PageFragCache};
pub use crate::pcp::PcpSnapshot;
pub use crate::pcp::{PCPF_FREE_HIGH_BATCH, PCPF_PREV_FREE_HIGH_ORDER};
pub use crate::policy::{Policy, Tunables};
pub use crate::stats::{Counter, VmEvents};
pub use crate::sync::{RawLock, RawSpinLock, SpinMutex, SpinMutexGuard};
pub use crate::types::{pcp_allowed_order, CpuId, NodeId, NrPages, Order, Pfn, ZoneIdx, ZoneType};
pub use crate::zone::{Zone, WMARK_HIGH, WMARK_LOW, WMARK_MIN, WMARK_PROMO};
/// `lock_api`, whose `RawMutex` a lock of the allocator implements (re-exported so a user's
/// lock is written against the same version).
pub use lock_api;

/// The crate README's example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

//! `pagealloc-slab`: a SLUB-like slab layer over [`pagealloc::PageAllocator`] — caches of
//! equal objects with SLUB's slab-order choice, a per-CPU active slab and partial list, a
//! partial list per node, kmalloc's size classes and its large path — so that the page
//! allocator sees what a kernel's slab allocator asks of it: order-0 to order-3 slab
//! allocations, and empty slabs coming back through `free_pages` (and so through the per-CPU
//! pagesets, where `free_high` acts on high-order frees).
//!
//! Like the page allocator it manages frame numbers, not memory: an object is (its slab's
//! first frame, its index), and no byte is touched. It is `no_std` (it needs `alloc`) and
//! thread-safe; see `cache/mod.rs` for the lock order.
//!
//! ```
//! use pagealloc::{CpuId, Gfp, MemoryMap, PageAllocator, Policy, Tunables};
//! use pagealloc_slab::{KmemCache, Kmalloc, SlabFlags, SlubConfig};
//!
//! let pa = PageAllocator::new(MemoryMap::single_node(4, 64 << 20)?, Tunables::default(),
//!     Policy::modern())?;
//! let cpu = pa.cpu(CpuId(0)).expect("cpu 0");
//!
//! // A dentry-like cache: 192-byte objects, cache-line aligned, reclaimable slabs.
//! let dentry = KmemCache::new(&pa, "dentry", 192, 0,
//!     SlabFlags::HWCACHE_ALIGN | SlabFlags::RECLAIM_ACCOUNT, &SlubConfig::default())?;
//! // 4 CPUs: min_objects = 4 * (fls(4) + 1) = 16; 16 * 192 = 3 KiB fits one page, whose
//! // 4096 % 192 = 64 bytes left over are within 1/16 of it: order 0, 21 objects.
//! assert_eq!((dentry.oo().order.0, dentry.oo().objects), (0, 21));
//!
//! let d = dentry.alloc(cpu, Gfp::KERNEL)?;
//! dentry.free(cpu, d)?;
//! assert!(dentry.free(cpu, d).is_err()); // a double free is refused
//!
//! let km = Kmalloc::new(&pa, &SlubConfig::default())?;
//! let small = km.alloc(cpu, 100, Gfp::KERNEL)?; // kmalloc-128
//! let big = km.alloc(cpu, 20_000, Gfp::KERNEL)?; // above 8 KiB: an order-3 block
//! assert!(!small.is_large() && big.is_large());
//! km.free(cpu, small)?;
//! km.free(cpu, big)?;
//!
//! // Give every empty slab back; then the page allocator has every page again.
//! dentry.shrink(cpu)?;
//! km.shrink(cpu)?;
//! pa.drain_all_pages(cpu, None);
//! assert_eq!(pa.nr_free_pages(), pa.managed_pages());
//! print!("{}", pagealloc_slab::render_slabinfo(km.slabinfo().iter()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Modules: [`order`] the sizing rules (slab order, alignment, `min_partial`, per-CPU
//! partial caps); [`cache`] `KmemCache`; [`kmalloc`]; [`stat`] counters and
//! `/proc/slabinfo`; [`error`]. `docs/slab.md` gives the rules with their kernel versions.

#![no_std]
#![warn(missing_docs)]

extern crate alloc;

pub mod cache;
pub mod error;
pub mod kmalloc;
pub mod order;
mod slab;
pub mod stat;

pub use crate::cache::{KmemCache, SlabFlags, SlabObject};
pub use crate::error::SlabError;
pub use crate::kmalloc::{Kmalloc, KmallocObject, KMALLOC_MAX_CACHE_SIZE, KMALLOC_SIZES};
pub use crate::order::{OrderObjects, OrderRule, SlubConfig};
pub use crate::stat::{render_slabinfo, SlabInfo, SlabStat, StatSnapshot};

/// The crate README's example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

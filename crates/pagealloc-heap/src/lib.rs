//! `pagealloc-heap`: the [`pagealloc`] page allocator over real memory in user space.
//!
//! [`PageHeap`] maps an anonymous arena (`mmap`, aligned to the largest block) and builds a
//! [`PageAllocator`](pagealloc::PageAllocator) over its frames, so the blocks the kernel's
//! algorithm picks are memory a program can use: raw blocks of `4096 << order` bytes, blocks
//! of any GFP flags and page_frag fragments as owned tokens ([`PageBlock`], [`FragToken`]), and
//! allocator-api2's `Allocator` (both the 0.2 trait the ecosystem's containers take and the 0.4
//! one, each behind a feature), so a `hashbrown` map or an allocator-api2 `Vec` can live on it.
//!
//! ```
//! use pagealloc::{Gfp, Order};
//! use pagealloc_heap::{HeapOptions, PageHeap};
//!
//! let heap = PageHeap::new(&HeapOptions::new(16 << 20).with(|o| o.cpus = Some(2)))?;
//! let mut block = heap.alloc_block_with(Gfp::KERNEL, Order(2))?; // 16 KiB, 16 KiB-aligned
//! block.touch(42);
//! assert_eq!(block.tag(), 42);
//! heap.free_block(block)?;
//!
//! // A map whose tables are blocks of the heap (feature `allocator-api2`, on by default).
//! # #[cfg(feature = "allocator-api2")] {
//! let mut map = hashbrown::HashMap::new_in(&heap);
//! map.insert("answer", 42);
//! assert_eq!(map["answer"], 42);
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Frames and addresses
//!
//! The arena is aligned to the largest block (4 MiB, order 10), and a frame number is the
//! *virtual* page number of its address: `pfn = addr >> 12`. Block alignment in frames is then
//! alignment in bytes, and turning one into the other is a shift. The whole arena is one
//! ZONE_NORMAL ([`ZoneLimits::NORMAL_ONLY`](pagealloc::ZoneLimits::NORMAL_ONLY)) of one node.
//!
//! # Blocks as tokens
//!
//! [`PageBlock`] is an owned token (not `Clone`) that remembers which source handed it out and
//! its order. Freeing consumes it, so safe code can neither free a block twice nor free it into
//! the wrong heap, and [`PageBlock::touch`] and [`PageBlock::stamp_pages`] write the block
//! without `unsafe` at the call site. Stamps are relaxed atomic words, so a page wrongly given
//! to two owners shows as a stamp that does not match, never as a data race.
//!
//! # The lock
//!
//! A [`PageHeap`]'s allocator locks its zones and pagesets with [`YieldLock`], a spin lock that
//! yields the CPU after a bounded spin: user-space threads are preempted, and with more threads
//! than CPUs a waiter that only spins burns its time slice while the holder waits for a CPU
//! (1024 threads on 2 CPUs did not finish with the core's spin lock). It lives here and not in
//! the core because yielding needs `std` and the core is `no_std`. The heap is generic over the
//! lock (`PageHeap::<E, L>::with_lock`); [`FrameHeap`] keeps the core's spin lock.
//!
//! # The current CPU
//!
//! Each call runs on the allocator CPU of the thread's current CPU, read from the `cpu_id` the
//! kernel keeps in the thread's rseq area (glibc ≥ 2.35 registers one per thread), else from
//! `sched_getcpu()`: see [`CpuSource`]. A stale answer (the thread migrated since) is harmless,
//! since every pageset is behind its lock: it only costs locality.
//!
//! # Cargo features
//!
//! - `allocator-api2` (default): `allocator_api2::alloc::Allocator` of allocator-api2 **0.2**
//!   for `PageHeap`, the trait `hashbrown` (its `allocator-api2` feature) and most containers
//!   take.
//! - `allocator-api2-04`: the same trait of allocator-api2 **0.4**.
//!
//! # Platform
//!
//! Linux (the arena is an anonymous `mmap`; `MAP_HUGETLB`, `MADV_HUGEPAGE`, rseq and
//! `sched_getcpu` are Linux's). Every module that touches raw memory or calls the OS is allowed
//! `unsafe` (the workspace denies it elsewhere), and every `unsafe` block carries a
//! `// SAFETY:` argument. Everything exported is safe to use except [`PageHeap::dealloc`]
//! (memory back by raw pointer) and [`PageBlock::from_raw`] (a token for memory the caller
//! vouches for).

#[allow(unsafe_code)]
mod arena;
#[allow(unsafe_code)]
mod block;
pub mod cacheinfo;
#[allow(unsafe_code)]
mod cpu;
#[allow(unsafe_code)]
mod frame_heap;
#[allow(unsafe_code)]
mod heap;
#[allow(unsafe_code)]
mod lock;
#[allow(unsafe_code)]
mod movable;

pub use arena::HugePages;
pub use block::{block_bytes, BlockFreeError, FragToken, PageBlock, SourceId};
pub use cpu::{pin_current_thread, CpuSource};
pub use frame_heap::FrameHeap;
pub use heap::{HeapError, HeapOptions, PageHeap};
pub use lock::YieldLock;
pub use movable::MovableBlocks;

// The tests free by raw pointer and read stamps by address, as the heap's own code does.
#[cfg(test)]
#[allow(unsafe_code)]
mod tests;

/// The crate README's example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

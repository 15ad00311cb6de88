//! `pagealloc-ffi`: a C ABI for the [`pagealloc`] page-frame allocator, with a generated
//! header (`include/pagealloc.h`), so C kernels, hypervisors and test harnesses can use it.
//!
//! Every function is `extern "C"`, prefixed `pagealloc_`, and returns a status code
//! ([`PageallocError`]: 0 or a distinct negative code for each way a call can fail). A call that
//! fails changes nothing. The calls, in the order a program makes them:
//!
//! - describe the machine: `pagealloc_map_new`, `pagealloc_map_add_range` (byte ranges with
//!   their node), `pagealloc_map_set_cpus` (CPUs per node), and the rest of the `MemoryMap`
//!   builder; `pagealloc_map_free`;
//! - build an allocator with a policy preset by name and the default tunables:
//!   `pagealloc_new`; `pagealloc_destroy`;
//! - allocate and free blocks of 2^order frames with GFP flags on a CPU: `pagealloc_alloc`,
//!   `pagealloc_free`; empty pagesets: `pagealloc_drain_cpu`, `pagealloc_drain_all`;
//! - observe: `pagealloc_counter`, `pagealloc_nr_free_pages`, `pagealloc_managed_pages`,
//!   `pagealloc_nr_cpus`, `pagealloc_validate`, `pagealloc_counter_name`,
//!   `pagealloc_preset_name`;
//! - errors: `pagealloc_strerror`, `pagealloc_last_error_message`.
//!
//! ```c
//! #include "pagealloc.h"
//!
//! struct pagealloc_map *map = pagealloc_map_new();
//! pagealloc_map_add_range(map, 0, 0, 64ull << 20);   /* node 0: 64 MiB from address 0 */
//! pagealloc_map_set_cpus(map, 0, 2);
//! struct pagealloc *pa;
//! int err = pagealloc_new(map, "modern", &pa);
//! pagealloc_map_free(map);
//! uint64_t pfn;
//! err = pagealloc_alloc(pa, 0, PAGEALLOC_GFP_KERNEL, 3, &pfn);  /* 8 frames on CPU 0 */
//! err = pagealloc_free(pa, 0, pfn, 3);
//! err = pagealloc_free(pa, 0, pfn, 3);          /* PAGEALLOC_ERR_DOUBLE_FREE */
//! pagealloc_destroy(pa);
//! ```
//!
//! # Threads
//!
//! An allocator may be used from any number of threads at once (the Rust allocator is
//! `Sync`); only `pagealloc_destroy` must wait for every other call on it. A map is not
//! thread-safe. The functions that take no handle are thread-safe.
//!
//! # Panics and linking
//!
//! The core does not panic on caller input; should the library panic anyway (a bug), no panic
//! crosses into C. With the `std` feature (default) it is caught: the call returns
//! `PAGEALLOC_ERR_PANICKED` and the allocator refuses every later call. Built with
//! `panic = "abort"`, the process aborts instead. The static library needs the C libraries
//! Rust's standard library uses (`cargo rustc -p pagealloc-ffi --lib --crate-type staticlib
//! -- --print native-static-libs` lists them; on Linux `-lgcc_s -lutil -lrt -lpthread -lm
//! -ldl -lc`).
//!
//! Without `std` the crate is `no_std` (it needs `alloc`): panics are not caught (the
//! program's panic handler must not return) and no last error message is kept. Cargo builds
//! every crate type a package declares, and its static and shared libraries would need a panic
//! handler and a global allocator this crate does not provide, so that build is the rlib
//! alone: `cargo rustc -p pagealloc-ffi --lib --no-default-features --crate-type rlib`.

#![no_std]
#![warn(missing_docs)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

mod allocator;
mod boundary;
mod error;
mod gfp;
mod map;

pub use crate::allocator::*;
pub use crate::error::{pagealloc_strerror, PageallocError, PAGEALLOC_OK};
pub use crate::gfp::*;
pub use crate::map::*;

//! The machine description: `struct pagealloc_map`, a `MemoryMap` built one call at a time.
#![allow(unsafe_code)] // The C API: `no_mangle` functions taking pointers from C.

use alloc::boxed::Box;
use core::ffi::c_int;
use core::ops::Range;

use pagealloc::{MemoryMap, NodeId, Pfn, ZoneLimits};

use crate::boundary::run;
use crate::error::{Failure, PageallocError, PAGEALLOC_OK};

/// A description of a machine's memory and CPUs (opaque; the Rust `MemoryMap`): memory ranges
/// with the node each belongs to, and how many CPUs each node has. Made by
/// `pagealloc_map_new`, freed by `pagealloc_map_free`; `pagealloc_new` copies it, so it may
/// be freed or changed once the allocator is built.
///
/// Not thread-safe: no two calls on the same map may run at once.
#[derive(Debug)]
pub struct PageallocMap {
    map: MemoryMap,
}

impl PageallocMap {
    pub(crate) fn memory_map(&self) -> &MemoryMap {
        &self.map
    }
}

/// Run a call on a map (one of `MemoryMap`'s builder methods): NULL is refused, a failure
/// leaves the map as it was.
fn with_map<E: Into<Failure>>(
    map: Option<&mut PageallocMap>,
    f: impl for<'m> FnOnce(&'m mut MemoryMap) -> Result<&'m mut MemoryMap, E>,
) -> c_int {
    run(
        || {
            let map = map.ok_or_else(|| Failure::null("map"))?;
            // The core refuses a range or a CPU count before changing anything; work on a
            // copy anyway, so a failure can never leave half a change.
            let mut next = map.map.clone();
            f(&mut next).map_err(Into::into)?;
            map.map = next;
            Ok(PAGEALLOC_OK)
        },
        || {},
    )
}

/// A new, empty machine description with the x86-64 zone limits (ZONE_DMA below 16 MiB,
/// ZONE_DMA32 below 4 GiB). Free it with `pagealloc_map_free`. NULL only if the library
/// panicked; a host out of memory aborts the process, as any allocation of the library's own
/// does (the allocator's metadata excepted: `pagealloc_new` reports it).
#[no_mangle]
pub extern "C" fn pagealloc_map_new() -> *mut PageallocMap {
    let mut out = core::ptr::null_mut();
    run(
        || {
            out = Box::into_raw(Box::new(PageallocMap { map: MemoryMap::new() }));
            Ok(0)
        },
        || {},
    );
    out
}

/// Free a machine description. NULL is ignored.
///
/// # Safety
/// `map` is NULL or a pointer from `pagealloc_map_new` not yet freed; it must not be used
/// afterwards.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_map_free(map: *mut PageallocMap) {
    if !map.is_null() {
        // SAFETY: made by `Box::into_raw` in `pagealloc_map_new` and not freed yet (the
        // caller's contract), so this is the one owner taking it back.
        drop(unsafe { Box::from_raw(map) });
    }
}

/// Add present memory `[start, end)` (physical byte addresses) to `node`. The start is
/// rounded up and the end down to whole 4 KiB pages; the range is split among the zones at
/// the zone limits. Ranges may come in any order and leave holes; they must not overlap.
///
/// Errors: `PAGEALLOC_ERR_BAD_RANGE` (no whole page, or beyond 2^52 frames),
/// `PAGEALLOC_ERR_OVERLAP`, `PAGEALLOC_ERR_BAD_NODE` (node ≥ 1024),
/// `PAGEALLOC_ERR_NULL_POINTER`.
///
/// # Safety
/// `map` is NULL or a live map (from `pagealloc_map_new`) no other call uses at the same time.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_map_add_range(
    map: *mut PageallocMap,
    node: u32,
    start: u64,
    end: u64,
) -> c_int {
    // SAFETY: NULL or a live map no other call uses meanwhile, by this function's contract.
    with_map(unsafe { map.as_mut() }, |m| m.add_range(NodeId(node), start..end))
}

/// Add present memory `[start, end)` (bytes) to `node`'s ZONE_MOVABLE, as the kernel's
/// `movablecore=` or hot-plugged memory: only movable allocations
/// (`PAGEALLOC_GFP_HIGHUSER_MOVABLE`) are served from it. Errors as
/// `pagealloc_map_add_range`.
///
/// # Safety
/// As `pagealloc_map_add_range`.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_map_add_movable_range(
    map: *mut PageallocMap,
    node: u32,
    start: u64,
    end: u64,
) -> c_int {
    // SAFETY: NULL or a live map no other call uses meanwhile, by this function's contract.
    with_map(unsafe { map.as_mut() }, |m| m.add_movable_range(NodeId(node), start..end))
}

/// Add present frames `[start_pfn, end_pfn)` (frame numbers, not bytes) to `node`. Errors as
/// `pagealloc_map_add_range`.
///
/// # Safety
/// As `pagealloc_map_add_range`.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_map_add_pfn_range(
    map: *mut PageallocMap,
    node: u32,
    start_pfn: u64,
    end_pfn: u64,
) -> c_int {
    let pfns: Range<Pfn> = Pfn(start_pfn)..Pfn(end_pfn);
    // SAFETY: NULL or a live map no other call uses meanwhile, by this function's contract.
    with_map(unsafe { map.as_mut() }, |m| m.add_pfn_range(NodeId(node), pfns))
}

/// Mark frames `[start_pfn, end_pfn)` as a CMA area: pageblock-aligned (512 frames), inside
/// memory of one node added before (not movable memory). `PAGEALLOC_ERR_BAD_MAP` otherwise.
///
/// # Safety
/// As `pagealloc_map_add_range`.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_map_add_cma_range(
    map: *mut PageallocMap,
    start_pfn: u64,
    end_pfn: u64,
) -> c_int {
    let pfns: Range<Pfn> = Pfn(start_pfn)..Pfn(end_pfn);
    // SAFETY: NULL or a live map no other call uses meanwhile, by this function's contract.
    with_map(unsafe { map.as_mut() }, |m| m.add_cma_range(pfns))
}

/// Give `node` `cpus` CPUs (replacing what it had). CPU numbers are assigned in node order:
/// node 0's CPUs are 0..n0-1, node 1's follow, and so on.
///
/// Errors: `PAGEALLOC_ERR_BAD_NODE` (node ≥ 1024), `PAGEALLOC_ERR_TOO_MANY_CPUS` (more than
/// 2^20 in all), `PAGEALLOC_ERR_NULL_POINTER`.
///
/// # Safety
/// As `pagealloc_map_add_range`.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_map_set_cpus(
    map: *mut PageallocMap,
    node: u32,
    cpus: u32,
) -> c_int {
    // SAFETY: NULL or a live map no other call uses meanwhile, by this function's contract.
    with_map(unsafe { map.as_mut() }, |m| m.set_cpus(NodeId(node), cpus))
}

/// Cut the zones at other limits than x86-64's: ZONE_DMA is the frames below `dma_end_pfn`
/// (0: no DMA zone), ZONE_DMA32 those from there below `dma32_end_pfn` (equal to
/// `dma_end_pfn`: no DMA32 zone), ZONE_NORMAL the rest. Both 0: everything in ZONE_NORMAL.
/// `PAGEALLOC_ERR_BAD_ARGUMENT` if `dma32_end_pfn < dma_end_pfn`.
///
/// # Safety
/// As `pagealloc_map_add_range`.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_map_set_zone_limits(
    map: *mut PageallocMap,
    dma_end_pfn: u64,
    dma32_end_pfn: u64,
) -> c_int {
    let limits = ZoneLimits { dma_end: Pfn(dma_end_pfn), dma32_end: Pfn(dma32_end_pfn) };
    // SAFETY: NULL or a live map no other call uses meanwhile, by this function's contract.
    with_map(unsafe { map.as_mut() }, |m| {
        if dma32_end_pfn < dma_end_pfn {
            return Err(Failure::new(
                PageallocError::BadArgument,
                format_args!(
                    "zone limits out of order: DMA32 ends at pfn {dma32_end_pfn} < {dma_end_pfn}"
                ),
            ));
        }
        Ok(m.with_zone_limits(limits))
    })
}

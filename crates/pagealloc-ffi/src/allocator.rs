//! The allocator: `struct pagealloc`, an opaque handle to a `PageAllocator`, and the calls on
//! it.
#![allow(unsafe_code)] // The C API: `no_mangle` functions taking pointers from C.

use alloc::boxed::Box;
use core::ffi::{c_char, c_int};
use core::sync::atomic::{AtomicBool, Ordering::Relaxed};

use pagealloc::policy::PRESET_NAMES;
use pagealloc::{Counter, CpuId, Gfp, Order, PageAllocator, Pfn, Policy, Tunables};

use crate::boundary::{copy_str, last_error_into, opt_c_str, out_buf, required, run, utf8};
use crate::error::{Failure, PageallocError, PAGEALLOC_OK};
use crate::map::PageallocMap;

/// A page allocator (opaque): made by `pagealloc_new`, freed by `pagealloc_destroy`.
///
/// Thread safety: every call on a live allocator may run concurrently with any other,
/// from any thread, on the same CPU number or different ones (the allocator takes its own
/// locks), except `pagealloc_destroy`, which must come after every other call on it has
/// returned. A CPU number says whose per-CPU pageset a call uses; it is fastest when each
/// thread keeps to its own.
#[derive(Debug)]
pub struct Pagealloc {
    pa: PageAllocator,
    /// A call panicked: the allocator may be inconsistent, so later calls are refused.
    poisoned: AtomicBool,
}

/// Run a call on an allocator: NULL and a poisoned allocator are refused; a panic poisons it.
fn with_pa(h: Option<&Pagealloc>, f: impl FnOnce(&PageAllocator) -> Result<(), Failure>) -> c_int {
    let Some(h) = h else {
        return run(|| Err(Failure::null("pa")), || {});
    };
    run(
        || {
            if h.poisoned.load(Relaxed) {
                return Err(Failure::new(
                    PageallocError::Panicked,
                    "an earlier call on this allocator panicked; only pagealloc_destroy works",
                ));
            }
            f(&h.pa).map(|()| PAGEALLOC_OK)
        },
        || h.poisoned.store(true, Relaxed),
    )
}

/// A call that reads one number into `*out`.
fn read_into<T>(
    h: Option<&Pagealloc>,
    out: Option<&mut T>,
    what: &str,
    read: impl FnOnce(&PageAllocator) -> T,
) -> c_int {
    with_pa(h, |pa| {
        *required(out, what)? = read(pa);
        Ok(())
    })
}

fn to_order(order: u32) -> Result<Order, Failure> {
    u8::try_from(order).map(Order).map_err(|_| {
        Failure::new(
            PageallocError::BadOrder,
            format_args!("order {order} is above the largest order 10"),
        )
    })
}

fn to_cpu(pa: &PageAllocator, cpu: u32) -> Result<pagealloc::Cpu, Failure> {
    pa.cpu(CpuId(cpu)).ok_or_else(|| {
        Failure::new(
            PageallocError::BadCpu,
            format_args!("cpu {cpu} does not exist (the machine has {})", pa.nr_cpus()),
        )
    })
}

/// Build an allocator over the machine `map` describes, with the policy preset named
/// `preset` (`"modern"`: mainline Linux 6.10+; `pagealloc_preset_name` lists them all) and the
/// default tunables (the kernel's sysctl defaults). The map is copied: it may be freed or
/// changed afterwards. On success `*out` is the new allocator (free it with
/// `pagealloc_destroy`); on failure `*out` is NULL (when `out` itself is not NULL).
///
/// Errors: `PAGEALLOC_ERR_NULL_POINTER`, `PAGEALLOC_ERR_UNKNOWN_PRESET`,
/// `PAGEALLOC_ERR_BAD_ARGUMENT` (`preset` not UTF-8), the map's (`PAGEALLOC_ERR_NO_CPUS`,
/// `PAGEALLOC_ERR_NO_MEMORY`, `PAGEALLOC_ERR_BAD_MAP`, `PAGEALLOC_ERR_TOO_MANY_CPUS`),
/// `PAGEALLOC_ERR_NO_METADATA_MEMORY` (the host cannot hold the metadata the map needs).
///
/// # Safety
/// `map` is NULL or a live map that no call changes meanwhile; `preset` is NULL or a
/// NUL-terminated string; `out` is NULL or valid for a write of a pointer.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_new(
    map: *const PageallocMap,
    preset: *const c_char,
    out: *mut *mut Pagealloc,
) -> c_int {
    // SAFETY: each is NULL or, by this function's contract, a writable pointer, a live map
    // nothing changes meanwhile, a NUL-terminated string.
    let (out_, map, preset) = unsafe { (out.as_mut(), map.as_ref(), opt_c_str(preset)) };
    run(
        || {
            let out = required(out_, "out")?;
            *out = core::ptr::null_mut();
            let map = map.ok_or_else(|| Failure::null("map"))?;
            let name = utf8(preset, "preset")?;
            let policy = Policy::preset(name).ok_or_else(|| {
                Failure::new(
                    PageallocError::UnknownPreset,
                    format_args!("no policy preset is named {name:?}"),
                )
            })?;
            let pa = PageAllocator::new(map.memory_map().clone(), Tunables::default(), policy)?;
            *out = Box::into_raw(Box::new(Pagealloc { pa, poisoned: AtomicBool::new(false) }));
            Ok(PAGEALLOC_OK)
        },
        || {},
    )
}

/// Destroy an allocator and free its metadata. NULL is ignored. Blocks still allocated are
/// simply forgotten (the allocator owns no memory but its metadata).
///
/// # Safety
/// `pa` is NULL or a pointer from `pagealloc_new` not yet destroyed, and no other call on it
/// is running or will run.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_destroy(pa: *mut Pagealloc) {
    if !pa.is_null() {
        // SAFETY: made by `Box::into_raw` in `pagealloc_new`, not destroyed yet, and no
        // other call holds it (the caller's contract): this is the one owner taking it back.
        drop(unsafe { Box::from_raw(pa) });
    }
}

/// Allocate a block of 2^`order` contiguous frames on CPU `cpu`, with GFP flags `gfp`
/// (`PAGEALLOC_GFP_*`: which zones, which migratetype, which reserves). On success `*pfn` is
/// the block's first frame number, aligned to 2^`order` frames (its physical address is
/// `*pfn * PAGEALLOC_PAGE_SIZE`); on failure `*pfn` is unchanged.
///
/// Errors: `PAGEALLOC_ERR_OUT_OF_MEMORY`, `PAGEALLOC_ERR_BAD_ORDER`, `PAGEALLOC_ERR_BAD_CPU`,
/// `PAGEALLOC_ERR_BAD_GFP`, `PAGEALLOC_ERR_NULL_POINTER`, `PAGEALLOC_ERR_PANICKED`.
///
/// # Safety
/// `pa` is NULL or a live allocator; `pfn` is NULL or valid for a write of a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_alloc(
    pa: *const Pagealloc,
    cpu: u32,
    gfp: u32,
    order: u32,
    pfn: *mut u64,
) -> c_int {
    // SAFETY: NULL or, by this function's contract, a live allocator and a writable `uint64_t`.
    let (h, pfn) = unsafe { (pa.as_ref(), pfn.as_mut()) };
    with_pa(h, |pa| {
        let pfn = required(pfn, "pfn")?;
        let block = pa.alloc_pages(to_cpu(pa, cpu)?, Gfp(gfp), to_order(order)?)?;
        *pfn = block.0;
        Ok(())
    })
}

/// Free the block of 2^`order` frames at frame `pfn`, on CPU `cpu`. Orders up to 3 (and the
/// THP order, 9) go to the CPU's pageset first: they count as free pages only after a drain
/// (`pagealloc_drain_cpu`) or once the pageset passes its high mark.
///
/// A bad free is refused and changes nothing: `PAGEALLOC_ERR_DOUBLE_FREE`,
/// `PAGEALLOC_ERR_WRONG_ORDER`, `PAGEALLOC_ERR_FOREIGN_FRAME`, `PAGEALLOC_ERR_MISALIGNED`,
/// `PAGEALLOC_ERR_TAIL_PAGE`, `PAGEALLOC_ERR_NOT_ALLOCATED`, `PAGEALLOC_ERR_BAD_ORDER`,
/// `PAGEALLOC_ERR_BAD_CPU`; also `PAGEALLOC_ERR_NULL_POINTER`, `PAGEALLOC_ERR_PANICKED`.
///
/// # Safety
/// `pa` is NULL or a live allocator.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_free(
    pa: *const Pagealloc,
    cpu: u32,
    pfn: u64,
    order: u32,
) -> c_int {
    // SAFETY: NULL or a live allocator, by this function's contract.
    let h = unsafe { pa.as_ref() };
    with_pa(h, |pa| Ok(pa.free_pages(to_cpu(pa, cpu)?, Pfn(pfn), to_order(order)?)?))
}

/// Empty CPU `cpu`'s pagesets (every zone's) into the buddy lists (kernel `drain_pages`).
/// Errors: `PAGEALLOC_ERR_BAD_CPU`, `PAGEALLOC_ERR_NULL_POINTER`, `PAGEALLOC_ERR_PANICKED`.
///
/// # Safety
/// `pa` is NULL or a live allocator.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_drain_cpu(pa: *const Pagealloc, cpu: u32) -> c_int {
    // SAFETY: NULL or a live allocator, by this function's contract.
    let h = unsafe { pa.as_ref() };
    with_pa(h, |pa| {
        let c = to_cpu(pa, cpu)?;
        pa.drain_pages(c, c.id());
        Ok(())
    })
}

/// Empty every CPU's pagesets, running on CPU `cpu` (kernel `drain_all_pages`). If another
/// thread is draining every pageset at the same moment, returns at once (as the kernel's
/// does): that drain does the work. Errors as `pagealloc_drain_cpu`.
///
/// # Safety
/// `pa` is NULL or a live allocator.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_drain_all(pa: *const Pagealloc, cpu: u32) -> c_int {
    // SAFETY: NULL or a live allocator, by this function's contract.
    let h = unsafe { pa.as_ref() };
    with_pa(h, |pa| {
        pa.drain_all_pages(to_cpu(pa, cpu)?, None);
        Ok(())
    })
}

/// Read the event counter named `name` (as in `/proc/vmstat`: `"pgfree"`, `"pcp_alloc"`, …;
/// `pagealloc_counter_name` lists them), summed over every CPU and zone, into `*value`.
/// Counters only grow; a read concurrent with other calls may be slightly old, never torn.
///
/// Errors: `PAGEALLOC_ERR_UNKNOWN_COUNTER`, `PAGEALLOC_ERR_BAD_ARGUMENT` (not UTF-8),
/// `PAGEALLOC_ERR_NULL_POINTER`, `PAGEALLOC_ERR_PANICKED`.
///
/// # Safety
/// `pa` is NULL or a live allocator; `name` is NULL or a NUL-terminated string; `value` is
/// NULL or valid for a write of a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_counter(
    pa: *const Pagealloc,
    name: *const c_char,
    value: *mut u64,
) -> c_int {
    // SAFETY: NULL or, by this function's contract, a live allocator, a NUL-terminated
    // string and a writable `uint64_t`.
    let (h, name, value) = unsafe { (pa.as_ref(), opt_c_str(name), value.as_mut()) };
    with_pa(h, |pa| {
        let (value, name) = (required(value, "value")?, utf8(name, "name")?);
        let counter = Counter::ALL.iter().find(|c| c.name() == name).ok_or_else(|| {
            Failure::new(
                PageallocError::UnknownCounter,
                format_args!("no counter is named {name:?}"),
            )
        })?;
        *value = pa.vm_events().get(*counter);
        Ok(())
    })
}

/// Free pages in the buddy lists of every zone (the kernel's NR_FREE_PAGES), into `*pages`.
/// Pages on the per-CPU pagesets are not counted until drained.
///
/// # Safety
/// `pa` is NULL or a live allocator; `pages` is NULL or valid for a write of a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_nr_free_pages(pa: *const Pagealloc, pages: *mut u64) -> c_int {
    // SAFETY: NULL or, by this function's contract, a live allocator and a writable `uint64_t`.
    let (h, pages) = unsafe { (pa.as_ref(), pages.as_mut()) };
    read_into(h, pages, "pages", |pa| pa.nr_free_pages().0)
}

/// Pages the allocator manages (present memory, less the frames its zones cannot use), into
/// `*pages`. Once every block is freed and every pageset drained, equal to
/// `pagealloc_nr_free_pages`.
///
/// # Safety
/// As `pagealloc_nr_free_pages`.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_managed_pages(pa: *const Pagealloc, pages: *mut u64) -> c_int {
    // SAFETY: NULL or, by this function's contract, a live allocator and a writable `uint64_t`.
    let (h, pages) = unsafe { (pa.as_ref(), pages.as_mut()) };
    read_into(h, pages, "pages", |pa| pa.managed_pages().0)
}

/// The machine's number of CPUs, into `*cpus`: valid CPU numbers are `0 .. *cpus - 1`.
///
/// # Safety
/// `pa` is NULL or a live allocator; `cpus` is NULL or valid for a write of a `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_nr_cpus(pa: *const Pagealloc, cpus: *mut u32) -> c_int {
    // SAFETY: NULL or, by this function's contract, a live allocator and a writable `uint32_t`.
    let (h, cpus) = unsafe { (pa.as_ref(), cpus.as_mut()) };
    read_into(h, cpus, "cpus", PageAllocator::nr_cpus)
}

/// Check every invariant of the allocator (free lists, per-frame states, counts): `PAGEALLOC_OK`
/// or `PAGEALLOC_ERR_CORRUPT`, with the first broken one as the last error message. Costs a
/// walk of every frame under each zone's lock: for tests, not for production paths.
///
/// # Safety
/// `pa` is NULL or a live allocator.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_validate(pa: *const Pagealloc) -> c_int {
    // SAFETY: NULL or a live allocator, by this function's contract.
    let h = unsafe { pa.as_ref() };
    with_pa(h, |pa| {
        pagealloc::debug::validate(pa)
            .map_err(|v| Failure::new(PageallocError::Corrupt, format_args!("{v:?}")))
    })
}

/// Copy the name of counter number `index` (0, 1, … in `/proc/vmstat` order) into `buf` as
/// `snprintf` does (at most `len - 1` bytes and a NUL; nothing when `len` is 0, and then `buf`
/// may be NULL). Returns the name's full length, or `PAGEALLOC_ERR_BAD_ARGUMENT` past the last
/// counter: a loop from 0 until a negative result lists them all. Thread-safe.
///
/// # Safety
/// `buf` is NULL or valid for writes of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_counter_name(
    index: usize,
    buf: *mut c_char,
    len: usize,
) -> c_int {
    // SAFETY: NULL or `len` writable bytes, by this function's contract.
    let buf = unsafe { out_buf(buf, len) };
    run(|| copy_str(list_entry(Counter::ALL, index, "counter")?.name(), buf), || {})
}

/// Copy the name of policy preset number `index` (0 is `"modern"`) into `buf`, as
/// `pagealloc_counter_name` does. Thread-safe.
///
/// # Safety
/// `buf` is NULL or valid for writes of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_preset_name(
    index: usize,
    buf: *mut c_char,
    len: usize,
) -> c_int {
    // SAFETY: NULL or `len` writable bytes, by this function's contract.
    let buf = unsafe { out_buf(buf, len) };
    run(|| copy_str(list_entry(PRESET_NAMES, index, "preset")?, buf), || {})
}

fn list_entry<T: Copy>(list: &[T], index: usize, what: &str) -> Result<T, Failure> {
    list.get(index).copied().ok_or_else(|| {
        Failure::new(
            PageallocError::BadArgument,
            format_args!("{what} index {index} is past the last ({})", list.len() - 1),
        )
    })
}

/// Copy the calling thread's last error message (what the last failed call on this thread
/// said, in detail: "double free of pfn 4096") into `buf`, as `pagealloc_counter_name` does,
/// and return its full length. A successful call does not clear it. Empty before the first
/// failure, and always empty when the library is built without its `std` feature (use
/// `pagealloc_strerror` then). Thread-safe: each thread has its own.
///
/// # Safety
/// `buf` is NULL or valid for writes of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn pagealloc_last_error_message(buf: *mut c_char, len: usize) -> c_int {
    // SAFETY: NULL or `len` writable bytes, by this function's contract.
    let buf = unsafe { out_buf(buf, len) };
    run(|| last_error_into(buf), || {})
}

/// The library's version, as a static NUL-terminated string (`"0.1.0"`).
#[no_mangle]
pub extern "C" fn pagealloc_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

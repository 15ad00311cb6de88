//! The lab's global allocator: the system's for every block but the large ones, which it maps
//! itself and, when they are freed, clears and keeps to hand out again.
//!
//! Why: every model run builds its machine's tables (frame metadata, the line model's stamps,
//! the LLC model's page stamps; hundreds of MiB each on a two-socket machine) in zeroed heap
//! memory, which the OS maps lazily. The run takes a page fault for every page it touches
//! first (the build alone writes every other page of a frame table), and freeing the table
//! gives every page back, so the next run faults them all in again: on the lab VM a fault, the
//! kernel's clearing of the page and its release cost about 2 µs, up to a fifth of
//! `reproduce --quick`'s CPU time. A kept block skips the fault and the release, and clears
//! only what was written: when it is freed, the pages the run wrote are found in
//! `/proc/self/pagemap` and cleared in place with a `memset`. What is kept is bounded
//! ([`KEEP_BYTES`] of resident pages, the oldest given back first), so the peak resident size
//! grows by at most that.
//!
//! The blocks are *shared* anonymous mappings. In a private one a page's first access, if a
//! read, maps the kernel's shared zero page read-only, and the write that follows copies it:
//! a second fault, and a flush of the page's TLB entry on every CPU where another of our
//! threads runs (an IPI; on a VM, an exit to the hypervisor). The line model reads a line's
//! stamps before it writes them, so on a fresh table most first touches went that way: in a
//! profile of `reproduce 002-thpfioscale@haswell --quick` the shoot-downs were 7.5 % of the
//! samples (docs/performance.md). A shared mapping has no zero page: a read fault allocates
//! the zeroed page and maps it writable, so the write after it costs nothing more. The
//! prices: a shared mapping cannot grow in place (`mremap` would map pages past the end of its
//! backing object, a bus error when touched), so a large block grows by copying; and a page a
//! run only read is a page of its own, which the zero test on freeing reads from memory where
//! it used to read the one zero page from the cache. The quick reproduce got 10–16 % faster;
//! the full one did not measurably (docs/performance.md).
//!
//! A kept block is always all zero, so it serves `alloc` and `alloc_zeroed` alike; a block
//! larger than asked for (by at most twice) is trimmed to the size asked. Whatever goes wrong
//! (no `/proc`, a failed `mmap`) falls back to what the system allocator would have done: the
//! block is unmapped, or the allocation fails.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr;
use std::sync::{Mutex, PoisonError};

/// Blocks of at least this many bytes are mapped here; smaller ones go to the system
/// allocator (whose own free lists already keep them).
const LARGE: usize = 4 << 20;

/// Resident bytes kept at most: room for a run's tables on each of `reproduce`'s two
/// workers on the largest machine of the quick tables.
pub const KEEP_BYTES: usize = 3 << 30;

/// Blocks kept at most (a fixed array: the allocator must not allocate for its own books).
const SLOTS: usize = 32;

/// The page size this code assumes; [`Recycler`] checks it against the OS's before mapping.
const PAGE: usize = 4096;

/// Page-table entries read from `/proc/self/pagemap` per call (32 KiB of stack).
const PAGEMAP_CHUNK: usize = 4096;

/// `pagemap` entry bits: the page is present in memory, or swapped out (or being migrated).
const PM_PRESENT: u64 = 1 << 63;
const PM_SWAPPED: u64 = 1 << 62;

/// A freed block, all zero: `len` bytes (whole pages) at `addr`, `resident` of them in memory.
#[derive(Debug, Clone, Copy)]
struct Kept {
    addr: usize,
    len: usize,
    resident: usize,
}

/// The kept blocks, oldest first, and their resident bytes.
#[derive(Debug)]
struct Pool {
    kept: [Kept; SLOTS],
    n: usize,
    resident: usize,
    budget: usize,
}

/// Blocks the pool gave up while taking or keeping one, to unmap once its lock is released.
type Evicted = [Option<(usize, usize)>; SLOTS + 1];

impl Pool {
    const EMPTY: Kept = Kept { addr: 0, len: 0, resident: 0 };

    const fn new(budget: usize) -> Pool {
        Pool { kept: [Pool::EMPTY; SLOTS], n: 0, resident: 0, budget }
    }

    /// The kept block that best fits `len` bytes (the smallest of at least `len` and at most
    /// twice that: a much larger block is worth more to a larger table), out of the pool.
    fn take(&mut self, len: usize) -> Option<Kept> {
        let fits = |k: &Kept| k.len >= len && k.len / 2 <= len;
        let i = (0..self.n).filter(|&i| fits(&self.kept[i])).min_by_key(|&i| self.kept[i].len)?;
        let k = self.kept[i];
        self.kept.copy_within(i + 1..self.n, i);
        self.n -= 1;
        self.resident -= k.resident;
        Some(k)
    }

    /// Keep `k` as the newest block, giving up the oldest ones while the budget or the slots
    /// would overflow; `k` itself is refused (returned among the evicted) if it alone is
    /// over the budget.
    fn keep(&mut self, k: Kept) -> Evicted {
        let mut out: Evicted = [None; SLOTS + 1];
        if k.resident > self.budget {
            out[0] = Some((k.addr, k.len));
            return out;
        }
        let mut e = 0;
        while self.n == SLOTS || self.resident + k.resident > self.budget {
            let old = self.kept[0];
            self.kept.copy_within(1..self.n, 0);
            self.n -= 1;
            self.resident -= old.resident;
            out[e] = Some((old.addr, old.len));
            e += 1;
        }
        self.kept[self.n] = k;
        self.n += 1;
        self.resident += k.resident;
        out
    }
}

/// The global allocator (see the module docs).
#[derive(Debug)]
pub struct Recycler {
    pool: Mutex<Pool>,
}

impl Recycler {
    /// A recycler keeping at most `budget` resident bytes of freed large blocks.
    pub const fn new(budget: usize) -> Recycler {
        Recycler { pool: Mutex::new(Pool::new(budget)) }
    }

    /// Whether a block of `layout` is one of ours: large, and aligned no more than a page.
    fn is_large(layout: Layout) -> bool {
        layout.size() >= LARGE && layout.align() <= PAGE && page_size_is(PAGE)
    }

    /// The pool, even if a thread panicked while holding it (its state is updated only
    /// after each step that can fail, so it is consistent).
    fn pool(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A zeroed block of `len` bytes (whole pages): a kept one, else a new mapping.
    fn get(&self, len: usize) -> *mut u8 {
        let taken = self.pool().take(len);
        match taken {
            Some(k) => {
                if k.len > len {
                    unmap(k.addr + len, k.len - len);
                }
                k.addr as *mut u8
            }
            None => map(len),
        }
    }

    /// Take back the block of `len` bytes (whole pages) at `p`: cleared and kept if it fits
    /// the budget, else unmapped.
    fn put(&self, p: *mut u8, len: usize) {
        let budget = self.pool().budget;
        let Some(resident) = clear_written(p, len, budget) else {
            unmap(p as usize, len);
            return;
        };
        let evicted = self.pool().keep(Kept { addr: p as usize, len, resident });
        for (addr, len) in evicted.into_iter().flatten() {
            unmap(addr, len);
        }
    }
}

// SAFETY: small blocks are the system allocator's, with the same layouts. A large block is a
// private anonymous mapping of whole pages, page-aligned (so aligned for any layout
// `is_large` accepts), owned by exactly one caller from `get` until `put`: the pool hands a
// kept block out once and takes it back only on `dealloc`. A block in the pool is all zero
// (`clear_written`), as a new mapping is, so `alloc_zeroed` may return either.
unsafe impl GlobalAlloc for Recycler {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if Recycler::is_large(layout) {
            self.get(pages(layout.size()))
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if Recycler::is_large(layout) {
            self.get(pages(layout.size()))
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        if Recycler::is_large(layout) {
            self.put(p, pages(layout.size()));
        } else {
            // SAFETY: `p` came from `System` with this layout (`is_large` is false for it).
            unsafe { System.dealloc(p, layout) }
        }
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees a valid layout of `new_size` at this alignment.
        let new = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (Recycler::is_large(layout), Recycler::is_large(new)) {
            // SAFETY: `p` is the system's (`is_large` is false for its layout).
            (false, false) => unsafe { System.realloc(p, layout, new_size) },
            // Shrinking in place is fine; growing would leave the new pages past the end of
            // the mapping's backing object (a bus error on touch), so it copies, below.
            (true, true) if new_size <= layout.size() => {
                remap(p, pages(layout.size()), pages(new_size))
            }
            _ => {
                // SAFETY: `new` is a valid non-zero layout (the caller's contract).
                let q = unsafe { self.alloc(new) };
                if !q.is_null() {
                    // SAFETY: both blocks hold at least the smaller size and are distinct
                    // (one is ours, one the system's); `p` is freed with its own layout.
                    unsafe {
                        ptr::copy_nonoverlapping(p, q, layout.size().min(new_size));
                        self.dealloc(p, layout);
                    }
                }
                q
            }
        }
    }
}

/// `bytes` rounded up to whole pages.
fn pages(bytes: usize) -> usize {
    bytes.next_multiple_of(PAGE)
}

/// Whether the OS's page size is `page` (asked once).
fn page_size_is(page: usize) -> bool {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    static SIZE: AtomicUsize = AtomicUsize::new(0);
    let mut s = SIZE.load(Relaxed);
    if s == 0 {
        // SAFETY: `sysconf` reads a constant of the system.
        s = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(1);
        SIZE.store(s, Relaxed);
    }
    s == page
}

/// A new shared anonymous mapping of `len` bytes (zero, mapped lazily), or null.
fn map(len: usize) -> *mut u8 {
    // SAFETY: a new mapping at an address of the kernel's choice overlaps nothing.
    let p = unsafe {
        libc::mmap(
            ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            // Shared, not private: no zero page, so no copy-on-write after a first read (see
            // the module docs).
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        ptr::null_mut()
    } else {
        p.cast()
    }
}

/// Give `len` bytes at `addr` back to the OS.
fn unmap(addr: usize, len: usize) {
    // SAFETY: the range is a whole mapping of ours (or its tail) that no one uses any more.
    unsafe { libc::munmap(addr as *mut libc::c_void, len) };
}

/// Shrink our mapping of `old` bytes at `p` to `new` bytes (never more: a shared mapping's
/// backing object does not grow with it), or null (the old block stays valid).
fn remap(p: *mut u8, old: usize, new: usize) -> *mut u8 {
    // SAFETY: `p` is a whole mapping of ours of `old` bytes, owned by the caller.
    let q = unsafe { libc::mremap(p.cast(), old, new, libc::MREMAP_MAYMOVE) };
    if q == libc::MAP_FAILED {
        ptr::null_mut()
    } else {
        q.cast()
    }
}

/// Zero every page of the `len` bytes (whole pages) at `p` that was written, as the page
/// table says (`/proc/self/pagemap`: a page neither present nor swapped reads as zero), and
/// return the bytes resident. `None`, with the block partly cleared, if the page table cannot
/// be read or more than `budget` bytes are resident (the block will not be kept).
fn clear_written(p: *mut u8, len: usize, budget: usize) -> Option<usize> {
    let map = Pagemap::open()?;
    let first = p as usize / PAGE;
    let mut entries = [0u64; PAGEMAP_CHUNK];
    let mut resident = 0;
    let mut done = 0;
    while done < len / PAGE {
        let n = (len / PAGE - done).min(PAGEMAP_CHUNK);
        map.read(first + done, &mut entries[..n])?;
        for (i, &e) in entries[..n].iter().enumerate() {
            if e & PM_PRESENT != 0 {
                resident += PAGE;
            }
            if e & (PM_PRESENT | PM_SWAPPED) != 0 {
                // SAFETY: the page lies inside the block, which the caller owns and no one
                // else uses any more.
                let page = unsafe { p.add((done + i) * PAGE) };
                zero_page(page);
            }
        }
        if resident > budget {
            return None;
        }
        done += n;
    }
    Some(resident)
}

/// Zero the page at `page` unless it already is (a page only ever read: a test reads it, a
/// `memset` would read and write it).
fn zero_page(page: *mut u8) {
    // SAFETY: `page` is a whole page of a block the caller owns, aligned for `u64`.
    let words = unsafe { std::slice::from_raw_parts_mut(page.cast::<u64>(), PAGE / 8) };
    // OR-ed 64 words at a time, which the compiler turns into wide loads: a test per word,
    // exiting at the first non-zero one, took 22 % more of `reproduce 001-kbuild --quick`'s
    // profile samples, as most pages tested are zero throughout (likely the frame map's
    // pageblock heads, written as `Tail` before the machine's memory is freed;
    // docs/performance.md).
    if words.chunks_exact(64).any(|c| c.iter().fold(0, |a, &w| a | w) != 0) {
        words.fill(0);
    }
}

/// `/proc/self/pagemap`, open.
struct Pagemap(libc::c_int);

impl Pagemap {
    /// Open it, or `None` (no `/proc`).
    fn open() -> Option<Pagemap> {
        // SAFETY: a NUL-terminated path; the descriptor is closed on drop.
        let fd = unsafe { libc::open(c"/proc/self/pagemap".as_ptr(), libc::O_RDONLY) };
        (fd >= 0).then_some(Pagemap(fd))
    }

    /// The entries of the pages from virtual page number `first`, or `None`.
    fn read(&self, first: usize, out: &mut [u64]) -> Option<()> {
        let bytes = size_of_val(out);
        let at = libc::off_t::try_from(first * 8).ok()?;
        // SAFETY: `out` is valid for `bytes` bytes of writes.
        let got = unsafe { libc::pread(self.0, out.as_mut_ptr().cast(), bytes, at) };
        (usize::try_from(got).ok()? == bytes).then_some(())
    }
}

impl Drop for Pagemap {
    fn drop(&mut self) {
        // SAFETY: our descriptor, closed once.
        unsafe { libc::close(self.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(addr: usize, len: usize, resident: usize) -> Kept {
        Kept { addr, len, resident }
    }

    #[test]
    fn the_pool_takes_the_best_fit_within_twice_the_size() {
        let mut pool = Pool::new(1 << 40);
        for k in [kept(1, 100, 10), kept(2, 300, 10), kept(3, 150, 10), kept(4, 1000, 10)] {
            assert!(pool.keep(k).iter().all(Option::is_none));
        }
        assert_eq!(pool.take(120).map(|k| k.addr), Some(3), "150 is the smallest over 120");
        assert_eq!(pool.take(120).map(|k| k.addr), None, "300 is more than twice 120");
        assert_eq!(pool.take(100).map(|k| k.addr), Some(1));
        assert_eq!(pool.take(500).map(|k| k.addr), Some(4));
        assert_eq!(pool.resident, 10, "only block 2 is left");
    }

    #[test]
    fn the_pool_gives_up_its_oldest_blocks_to_stay_in_budget() {
        let mut pool = Pool::new(100);
        assert!(pool.keep(kept(1, 10, 40)).iter().all(Option::is_none));
        assert!(pool.keep(kept(2, 10, 40)).iter().all(Option::is_none));
        let out = pool.keep(kept(3, 10, 40));
        assert_eq!(out[0], Some((1, 10)), "the oldest goes");
        assert!(out[1..].iter().all(Option::is_none));
        assert_eq!(pool.resident, 80);
        let out = pool.keep(kept(4, 10, 101));
        assert_eq!(out[0], Some((4, 10)), "over the budget alone: refused");
        assert_eq!((pool.n, pool.resident), (2, 80), "the rest untouched");
        for i in 0..SLOTS as u8 {
            pool.keep(kept(10 + usize::from(i), 10, 0));
        }
        assert_eq!(pool.n, SLOTS, "never more than the slots");
        assert_eq!(pool.resident, 0, "the two resident blocks were the oldest");
    }

    /// A block of `pages` pages from `r`, zeroed.
    fn block(r: &Recycler, pages: usize) -> (*mut u8, Layout) {
        let layout = Layout::from_size_align(pages * PAGE, 64).unwrap();
        // SAFETY: a non-zero layout.
        let p = unsafe { r.alloc_zeroed(layout) };
        assert!(!p.is_null());
        (p, layout)
    }

    #[test]
    fn a_freed_block_comes_back_all_zero_and_only_written_pages_count() {
        let r = Recycler::new(1 << 30);
        let pages = LARGE / PAGE + 3;
        let (p, layout) = block(&r, pages);
        // SAFETY: every offset is inside the block, which this test owns.
        unsafe {
            for i in (0..pages).step_by(3) {
                p.add(i * PAGE + i % PAGE).write(0xa5);
            }
            // Read-only pages are resident (a shared mapping has no zero page) and stay zero.
            for i in (1..pages).step_by(3) {
                assert_eq!(p.add(i * PAGE).read_volatile(), 0);
            }
            r.dealloc(p, layout);
        }
        let k = r.pool().kept[0];
        assert_eq!((r.pool().n, k.addr, k.len), (1, p as usize, pages * PAGE));
        assert!(k.resident >= pages.div_ceil(3) * PAGE, "the written pages: {}", k.resident);
        let (q, _) = block(&r, pages - 1);
        assert_eq!(q, p, "the kept block, trimmed by a page");
        // SAFETY: the whole block is readable.
        let all = unsafe { std::slice::from_raw_parts(q, (pages - 1) * PAGE) };
        assert!(all.iter().all(|&b| b == 0), "a kept block is handed out all zero");
        assert_eq!(r.pool().n, 0);
        // SAFETY: `q` is live with this layout.
        unsafe { r.dealloc(q, Layout::from_size_align((pages - 1) * PAGE, 64).unwrap()) };
    }

    #[test]
    fn a_page_written_only_in_its_last_byte_is_cleared() {
        let r = Recycler::new(1 << 30);
        let pages = LARGE / PAGE;
        let (p, layout) = block(&r, pages);
        // SAFETY: the offsets are inside the block, which this test owns.
        unsafe {
            p.add(PAGE - 1).write(1);
            p.add(2 * PAGE + PAGE / 2 - 1).write(2);
            r.dealloc(p, layout);
        }
        let (q, layout) = block(&r, pages);
        assert_eq!(q, p, "the kept block");
        // SAFETY: the whole block is readable.
        let all = unsafe { std::slice::from_raw_parts(q, pages * PAGE) };
        assert!(all.iter().all(|&b| b == 0), "every chunk of a page is tested");
        // SAFETY: `q` is live with this layout.
        unsafe { r.dealloc(q, layout) };
    }

    #[test]
    fn a_block_grows_and_shrinks_across_the_threshold_keeping_its_bytes() {
        let r = Recycler::new(1 << 30);
        let small = Layout::from_size_align(1000, 8).unwrap();
        // SAFETY: non-zero layouts; each pointer is used within its block and freed once.
        unsafe {
            let p = r.alloc(small);
            p.write_bytes(7, 1000);
            let q = r.realloc(p, small, LARGE + 1);
            let big = Layout::from_size_align(LARGE + 1, 8).unwrap();
            q.add(LARGE).write(9);
            let q = r.realloc(q, big, 3 * LARGE);
            let bigger = Layout::from_size_align(3 * LARGE, 8).unwrap();
            assert_eq!(q.add(LARGE).read(), 9);
            // Every page of the grown block can be written (grown in place, a shared
            // mapping's new pages would lie past its backing object: a bus error).
            for i in (PAGE..3 * LARGE).step_by(PAGE) {
                q.add(i).write(q.add(i).read() | 0x10);
            }
            q.add(3 * LARGE - 1).write(3);
            let q = r.realloc(q, bigger, 2 * LARGE);
            let q = r.realloc(q, Layout::from_size_align(2 * LARGE, 8).unwrap(), 3 * LARGE);
            q.add(3 * LARGE - 1).write(4);
            assert_eq!(q.add(LARGE).read(), 9 | 0x10, "kept through a shrink and a growth");
            let s = r.realloc(q, bigger, 500);
            let bytes = std::slice::from_raw_parts(s, 500);
            assert!(bytes.iter().all(|&b| b == 7));
            r.dealloc(s, Layout::from_size_align(500, 8).unwrap());
        }
        // Kept: the first large block (left by the copying growth), the shrunk one (left by
        // the second growth) and the last (left on the way down).
        assert_eq!(r.pool().n, 3, "every large block freed was kept");
    }
}

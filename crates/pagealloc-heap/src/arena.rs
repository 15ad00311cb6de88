//! The arena: an anonymous private mapping aligned to the largest block, unmapped on drop.

use pagealloc::types::{MAX_PAGE_ORDER, PAGE_SIZE};

use crate::heap::HeapError;

/// Bytes of the largest block (order [`MAX_PAGE_ORDER`]); arenas are aligned to it.
const MAX_BLOCK_BYTES: usize = (PAGE_SIZE as usize) << MAX_PAGE_ORDER;

/// Where [`HeapOptions::low_address`](crate::HeapOptions::low_address) asks the kernel to map
/// the arena: 1 TiB, so that frame numbers (virtual page numbers) stay far below 2^32 for
/// arenas up to 15 TiB.
const LOW_ARENA_HINT: usize = 1 << 40;

/// How the arena is backed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum HugePages {
    /// Ordinary 4 KiB pages (whatever the system's THP setting does to an anonymous mapping).
    #[default]
    None,
    /// Ask for transparent huge pages (`madvise(MADV_HUGEPAGE)`).
    Thp,
    /// Map 2 MiB pages from the hugetlb pool (`MAP_HUGETLB`); needs `vm.nr_hugepages` to cover
    /// the arena plus 4 MiB (the alignment slack).
    Hugetlb,
}

/// An anonymous private mapping of `len` bytes whose start is aligned to 4 MiB. Unmapped on
/// drop. Holds addresses as integers (it hands out no references), so it is `Send + Sync`.
#[derive(Debug)]
pub(crate) struct Arena {
    pub(crate) base: usize,
    pub(crate) len: usize,
}

impl Arena {
    pub(crate) fn map(
        len: usize,
        huge: HugePages,
        prefault: bool,
        low: bool,
    ) -> Result<Arena, HeapError> {
        let granule = if huge == HugePages::Hugetlb { 2 << 20 } else { PAGE_SIZE as usize };
        if len == 0 || len % granule != 0 {
            return Err(HeapError::BadSize(len));
        }
        let over = len.checked_add(MAX_BLOCK_BYTES).ok_or(HeapError::BadSize(len))?;
        // Hugetlb pages are reserved at mmap time (no MAP_NORESERVE): an empty pool fails
        // here with ENOMEM instead of raising SIGBUS at the first touch.
        let flags = libc::MAP_PRIVATE
            | libc::MAP_ANONYMOUS
            | if huge == HugePages::Hugetlb { libc::MAP_HUGETLB } else { libc::MAP_NORESERVE };
        let hint = if low { LOW_ARENA_HINT as *mut libc::c_void } else { std::ptr::null_mut() };
        // SAFETY: an anonymous mapping at an address of the kernel's choosing (a hint at most,
        // no MAP_FIXED: the kernel never replaces an existing mapping) cannot alias any
        // existing Rust object; all arguments are plain values.
        let p = unsafe { libc::mmap(hint, over, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0) };
        if p == libc::MAP_FAILED {
            return Err(HeapError::Map(std::io::Error::last_os_error()));
        }
        let start = p as usize;
        let base = start.next_multiple_of(MAX_BLOCK_BYTES);
        let head = base - start;
        let tail = over - head - len;
        // Give back the unaligned slack before and after the aligned part. Both pieces are
        // multiples of the granule: `start` is granule-aligned, and so are 4 MiB and `len`.
        if head > 0 {
            // SAFETY: `start..base` is part of the mapping just made, nothing refers to it.
            unsafe { libc::munmap(p, head) };
        }
        if tail > 0 {
            // SAFETY: `base+len..start+over` is the end of the same mapping, unreferenced.
            unsafe { libc::munmap((base + len) as *mut libc::c_void, tail) };
        }
        let arena = Arena { base, len };
        if huge == HugePages::Thp {
            // SAFETY: advice on a range this arena owns; it changes no contents.
            let r = unsafe { libc::madvise(base as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
            if r != 0 {
                return Err(HeapError::Advise(std::io::Error::last_os_error()));
            }
        }
        if prefault {
            // MAP_POPULATE does not combine with the trimming above; touch instead. The
            // memory is anonymous zero-filled, and no reference to it exists yet.
            for off in (0..len).step_by(granule) {
                // SAFETY: `base + off` is inside the mapping, writable, and unreferenced.
                unsafe { std::ptr::write_volatile((base + off) as *mut u8, 0) };
            }
        }
        Ok(arena)
    }

    /// Is `addr..addr + bytes` inside the arena?
    #[inline]
    pub(crate) fn contains(&self, addr: usize, bytes: usize) -> bool {
        addr >= self.base && addr.checked_add(bytes).is_some_and(|end| end <= self.base + self.len)
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: the range is the mapping this arena made and owns. Every block token and
        // every `&PageHeap` allocator borrows the arena's owner, and we are being dropped, so
        // no safe code can still reach the memory; raw pointers from `alloc_pages` kept past
        // this point may not be dereferenced (the heap's documentation says so).
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

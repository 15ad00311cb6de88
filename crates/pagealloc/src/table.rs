//! Where an allocator keeps its metadata: fixed-length [`Table`]s, each carved by a [`Carver`]
//! either from the global heap or from a region of memory the caller hands over.
//!
//! The region is how a kernel starts the allocator before it has a heap (the heap usually sits
//! on this allocator): it sets aside [`PageAllocator::metadata_bytes`] bytes, typically at the
//! start of the memory the allocator will manage (where Linux places its memmap), and builds
//! with [`PageAllocator::with_lock_in`]. Every table an allocator holds is built here and
//! nowhere else, so "built from the region" means no heap call at all, which
//! `tests/no_alloc.rs` checks with a counting global allocator.
//!
//! [`PageAllocator::metadata_bytes`]: crate::PageAllocator::metadata_bytes
//! [`PageAllocator::with_lock_in`]: crate::PageAllocator::with_lock_in
#![allow(unsafe_code)]

use core::alloc::Layout;
use core::fmt;
use core::marker::PhantomData;
use core::mem::{align_of, size_of, ManuallyDrop, MaybeUninit};
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;

/// A fixed-length array of `T` that owns its elements: a `Box<[T]>` whose memory came from
/// the heap or from a caller's region (never handed back: the region is `'static`).
pub(crate) struct Table<T> {
    ptr: NonNull<T>,
    len: usize,
    /// The memory is the heap's (`Layout::array::<T>(len)`) and is freed on drop.
    heap: bool,
    _owns: PhantomData<T>,
}

// SAFETY: a `Table<T>` owns its `T`s as a `Box<[T]>` does; the region it may point into is
// `'static` and no one else's (the `Carver` took it by `&'static mut`).
unsafe impl<T: Send> Send for Table<T> {}
// SAFETY: as above; shared access hands out `&[T]` only.
unsafe impl<T: Sync> Sync for Table<T> {}

impl<T> Table<T> {
    /// An empty table (no memory behind it).
    pub(crate) const fn empty() -> Table<T> {
        Table { ptr: NonNull::dangling(), len: 0, heap: false, _owns: PhantomData }
    }
}

impl<T> Deref for Table<T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` points at `len` initialised `T`s this table owns (or is dangling with
        // `len == 0`, which `from_raw_parts` allows), aligned for `T`.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> DerefMut for Table<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes the access unique.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Drop for Table<T> {
    fn drop(&mut self) {
        // SAFETY: the elements are initialised and owned by this table; they are dropped once,
        // here, and the memory is freed with the layout it was allocated with.
        unsafe {
            core::ptr::drop_in_place(core::ptr::slice_from_raw_parts_mut(
                self.ptr.as_ptr(),
                self.len,
            ));
            if self.heap {
                let layout = Layout::array::<T>(self.len).expect("allocated with this layout");
                alloc::alloc::dealloc(self.ptr.as_ptr().cast(), layout);
            }
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Table<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

/// Where tables get their memory.
pub(crate) enum Carver {
    /// The global heap.
    Heap,
    /// Bump allocation from a caller's region: `len` bytes at `base`, `used` taken.
    Region { base: NonNull<u8>, len: usize, used: usize },
}

impl Carver {
    /// Carve from `region`, which the allocator keeps for the rest of the program.
    pub(crate) fn region(region: &'static mut [MaybeUninit<u8>]) -> Carver {
        let len = region.len();
        Carver::Region { base: NonNull::from(region).cast(), len, used: 0 }
    }

    /// Bytes taken from the region so far (0 on the heap).
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        match self {
            Carver::Heap => 0,
            Carver::Region { used, .. } => *used,
        }
    }

    /// Uninitialised memory for `n` `T`s, zeroed if `zeroed`: its address and whether it is the
    /// heap's. `None` if the heap or the region cannot supply it.
    fn raw<T>(&mut self, n: usize, zeroed: bool) -> Option<(NonNull<T>, bool)> {
        let layout = Layout::array::<T>(n).ok()?;
        if layout.size() == 0 {
            return Some((NonNull::dangling(), false));
        }
        match self {
            Carver::Heap => {
                // SAFETY: the layout's size is non-zero; a null return is handled. Zeroed heap
                // memory comes lazily from the OS: a large frame table costs only the pages
                // that are written.
                let p = unsafe {
                    if zeroed {
                        alloc::alloc::alloc_zeroed(layout)
                    } else {
                        alloc::alloc::alloc(layout)
                    }
                };
                Some((NonNull::new(p.cast())?, true))
            }
            Carver::Region { base, len, used } => {
                let at = base.as_ptr() as usize + *used;
                let pad = at.next_multiple_of(layout.align()) - at;
                let end = used.checked_add(pad)?.checked_add(layout.size())?;
                if end > *len {
                    return None;
                }
                // SAFETY: `used + pad .. end` lies inside the region (checked above), which this
                // carver owns; no table was given those bytes before (`used` only grows).
                let p = unsafe { base.as_ptr().add(*used + pad) };
                *used = end;
                if zeroed {
                    // SAFETY: `p` is valid for `layout.size()` bytes (as above).
                    unsafe { p.write_bytes(0, layout.size()) };
                }
                Some((NonNull::new(p.cast())?, false))
            }
        }
    }

    /// A table of `n` elements, element `i` being `f(i)`.
    pub(crate) fn table<T>(&mut self, n: usize, f: impl FnMut(usize) -> T) -> Option<Table<T>> {
        let mut b = self.builder(n)?;
        (0..n).map(f).for_each(|x| b.push(x));
        Some(b.finish())
    }

    /// A table of `n` elements filled one `push` at a time, for elements whose building needs
    /// the carver too (a zone carves its own frame table).
    pub(crate) fn builder<T>(&mut self, n: usize) -> Option<TableBuilder<T>> {
        let (ptr, heap) = self.raw::<T>(n, false)?;
        let table = ManuallyDrop::new(Table { ptr, len: 0, heap, _owns: PhantomData });
        Some(TableBuilder { table, cap: n })
    }

    /// A table of `n` elements whose memory is all zero.
    ///
    /// # Safety
    /// The all-zero bit pattern must be a valid `T` (atomics, integers, `Frame`).
    #[cfg(not(loom))] // loom's atomics are not all-zero values: its frame tables are built
    pub(crate) unsafe fn zeroed<T>(&mut self, n: usize) -> Option<Table<T>> {
        let (ptr, heap) = self.raw::<T>(n, true)?;
        Some(Table { ptr, len: n, heap, _owns: PhantomData })
    }
}

/// A [`Table`] being filled: `table.len` of `cap` elements written. Dropped unfinished (an
/// error part-way through a build), it drops what was written and frees heap memory, with the
/// layout of `cap` elements it was allocated with (the table's own drop would use `len`).
pub(crate) struct TableBuilder<T> {
    table: ManuallyDrop<Table<T>>,
    cap: usize,
}

impl<T> Drop for TableBuilder<T> {
    fn drop(&mut self) {
        let t = &mut *self.table;
        // SAFETY: the first `len` elements are initialised and owned here, dropped once; the
        // memory is freed with the layout `Carver::raw` allocated it with (`cap` elements).
        unsafe {
            core::ptr::drop_in_place(core::ptr::slice_from_raw_parts_mut(t.ptr.as_ptr(), t.len));
            if t.heap {
                let layout = Layout::array::<T>(self.cap).expect("allocated with this layout");
                alloc::alloc::dealloc(t.ptr.as_ptr().cast(), layout);
            }
        }
    }
}

impl<T> TableBuilder<T> {
    /// Append an element. Panics when the table is full: the builder sized it, so that is a
    /// bug in the crate.
    pub(crate) fn push(&mut self, x: T) {
        assert!(self.table.len < self.cap, "table overfilled");
        // SAFETY: `len < cap`, so the slot is inside the memory carved for `cap` elements and
        // not yet initialised; the length grows only after the write.
        unsafe { self.table.ptr.as_ptr().add(self.table.len).write(x) };
        self.table.len += 1;
    }

    /// The elements written so far.
    pub(crate) fn written(&self) -> &[T] {
        &self.table
    }

    /// The table. Panics unless every slot was filled.
    pub(crate) fn finish(self) -> Table<T> {
        assert_eq!(self.table.len, self.cap, "table underfilled");
        let mut me = ManuallyDrop::new(self);
        // SAFETY: `me` is never used or dropped again, so the table is taken out once; full,
        // its own drop frees the layout of `cap == len` elements.
        unsafe { ManuallyDrop::take(&mut me.table) }
    }
}

/// Bytes a region must hold for a table of `n` `T`s wherever the previous one ended: its size
/// and the worst padding before it. `None` on overflow.
pub(crate) fn bytes_for<T>(n: usize) -> Option<usize> {
    size_of::<T>().checked_mul(n)?.checked_add(align_of::<T>() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::boxed::Box;
    use alloc::vec;
    use core::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    fn region(bytes: usize) -> &'static mut [MaybeUninit<u8>] {
        Box::leak(vec![MaybeUninit::uninit(); bytes].into_boxed_slice())
    }

    #[test]
    fn tables_from_a_region_are_aligned_and_within_their_budget() {
        let mut c =
            Carver::region(region(bytes_for::<u8>(3).unwrap() + bytes_for::<u64>(5).unwrap()));
        let a = c.table(3, |i| i as u8).unwrap();
        let b = c.table(5, |i| i as u64 * 10).unwrap();
        assert_eq!((&*a, &*b), (&[0u8, 1, 2][..], &[0u64, 10, 20, 30, 40][..]));
        assert_eq!(b.as_ptr() as usize % align_of::<u64>(), 0);
        assert!(c.table(1, |_| 0u64).is_none(), "the region is spent");
        // SAFETY: zero is a valid u8.
        assert!(unsafe { c.zeroed::<u8>(0) }.is_some(), "an empty table needs no memory");
    }

    /// Elements are dropped once: with the table, or, for a build abandoned part-way, the ones
    /// written.
    #[test]
    fn elements_are_dropped_once_whatever_happens() {
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        struct D;
        impl Drop for D {
            fn drop(&mut self) {
                DROPS.fetch_add(1, SeqCst);
            }
        }
        for mut c in [Carver::Heap, Carver::region(region(64))] {
            DROPS.store(0, SeqCst);
            drop(c.table(4, |_| D).unwrap());
            assert_eq!(DROPS.load(SeqCst), 4);
            let mut b = c.builder::<D>(4).unwrap();
            b.push(D);
            b.push(D);
            assert_eq!(b.written().len(), 2);
            drop(b);
            assert_eq!(DROPS.load(SeqCst), 6);
        }
    }

    #[test]
    #[should_panic(expected = "table underfilled")]
    fn an_unfinished_table_is_a_bug() {
        let mut b = Carver::Heap.builder::<u32>(2).unwrap();
        b.push(1);
        let _ = b.finish();
    }

    #[test]
    fn the_heap_refuses_what_the_address_space_cannot_hold() {
        // SAFETY: zero is a valid u64.
        assert!(unsafe { Carver::Heap.zeroed::<u64>(usize::MAX / 4) }.is_none());
        assert_eq!(bytes_for::<u64>(usize::MAX / 4), None);
    }
}

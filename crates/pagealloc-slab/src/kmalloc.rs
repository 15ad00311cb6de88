//! `kmalloc`: the kernel's general-purpose allocation by size. Requests up to two pages go
//! to the smallest of the kmalloc caches that fits (8 bytes to 8 KiB, with the 96- and
//! 192-byte caches between the powers of two); larger ones go straight to the page allocator
//! as one block of the order that fits (the kernel's "large kmalloc", since 5.x the path for
//! everything above `KMALLOC_MAX_CACHE_SIZE`, two pages). A request with
//! `__GFP_RECLAIMABLE` uses the `kmalloc-rcl-*` caches, whose slabs are reclaimable.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::AtomicU64 as CoreAtomicU64;

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use pagealloc::lock_api::Mutex;
use pagealloc::types::PAGE_SIZE;
use pagealloc::{Cpu, EventSink, Gfp, NoEvents, Order, PageAllocator, Pfn, RawLock, RawSpinLock};

use crate::cache::{KmemCache, SlabFlags, SlabObject};
use crate::error::SlabError;
use crate::order::{get_order, SlubConfig, MAX_OBJECT_SIZE};
use crate::stat::SlabInfo;

/// The kmalloc caches' object sizes, smallest first (x86-64: `KMALLOC_MIN_SIZE` 8, so the
/// 96- and 192-byte caches exist).
pub const KMALLOC_SIZES: [u32; 13] =
    [8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192];

/// Largest request a kmalloc cache serves (kernel `KMALLOC_MAX_CACHE_SIZE`, two pages).
pub const KMALLOC_MAX_CACHE_SIZE: u64 = 2 * PAGE_SIZE;

/// Largest request kmalloc serves at all (kernel `KMALLOC_MAX_SIZE`).
pub const KMALLOC_MAX_SIZE: u64 = MAX_OBJECT_SIZE;

/// Source of kmalloc-set identities, as for caches.
static NEXT_KMALLOC_ID: CoreAtomicU64 = CoreAtomicU64::new(1);

/// The index in [`KMALLOC_SIZES`] of the cache serving `size` bytes (kernel `kmalloc_index`
/// with its `size_index` table below 192); `None` for 0 and above two pages.
pub fn kmalloc_index(size: u64) -> Option<usize> {
    if size == 0 {
        return None;
    }
    KMALLOC_SIZES.iter().position(|&s| size <= u64::from(s))
}

/// The cache name for a size (kernel `kmalloc_info`: `kmalloc-96`, `kmalloc-1k`, …, with the
/// `rcl-` infix for the reclaimable set).
fn kmalloc_name(size: u32, reclaim: bool) -> String {
    let prefix = if reclaim { "kmalloc-rcl-" } else { "kmalloc-" };
    if size >= 1024 {
        format!("{prefix}{}k", size / 1024)
    } else {
        format!("{prefix}{size}")
    }
}

/// Which path an object came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Slab { reclaim: bool, class: u8, obj: SlabObject },
    Large { pfn: Pfn, order: Order },
}

/// A kmalloc allocation: an object of a kmalloc cache or a large block straight from the page
/// allocator, remembered so that [`Kmalloc::free`] takes the right way back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KmallocObject {
    owner: u64,
    kind: Kind,
}

impl KmallocObject {
    /// Is this a large allocation (pages straight from the page allocator)?
    pub fn is_large(&self) -> bool {
        matches!(self.kind, Kind::Large { .. })
    }

    /// The first frame: the object's slab, or the large block.
    pub fn pfn(&self) -> Pfn {
        match self.kind {
            Kind::Slab { obj, .. } => obj.slab(),
            Kind::Large { pfn, .. } => pfn,
        }
    }

    /// The slab object, for a cache allocation.
    pub fn slab_object(&self) -> Option<SlabObject> {
        match self.kind {
            Kind::Slab { obj, .. } => Some(obj),
            Kind::Large { .. } => None,
        }
    }

    /// The block's order, for a large allocation.
    pub fn large_order(&self) -> Option<Order> {
        match self.kind {
            Kind::Slab { .. } => None,
            Kind::Large { order, .. } => Some(order),
        }
    }
}

/// The kmalloc caches of one page allocator, normal and reclaimable, and its large blocks.
#[derive(Debug)]
pub struct Kmalloc<'a, E: EventSink = NoEvents, L: RawLock = RawSpinLock> {
    pa: &'a PageAllocator<E, L>,
    id: u64,
    normal: Box<[KmemCache<'a, E, L>]>,
    reclaim: Box<[KmemCache<'a, E, L>]>,
    /// Large blocks handed out and not freed, by first frame: a large free is checked here,
    /// so a double free or a block that is not ours is refused before the page allocator
    /// (which might have handed the frames to someone else since) sees it.
    large: Mutex<L, BTreeMap<u64, Order>>,
    large_allocs: AtomicU64,
    large_frees: AtomicU64,
}

impl<'a, E: EventSink, L: RawLock> Kmalloc<'a, E, L> {
    /// Create the kmalloc caches over `pa` (kernel `create_kmalloc_caches`): each aligned to
    /// the largest power of two dividing its size — the size itself for powers of two
    /// (kernel `create_boot_cache`'s guarantee for kmalloc objects).
    pub fn new(
        pa: &'a PageAllocator<E, L>,
        cfg: &SlubConfig,
    ) -> Result<Kmalloc<'a, E, L>, SlabError> {
        let set = |reclaim: bool| -> Result<Box<[KmemCache<'a, E, L>]>, SlabError> {
            let flags = if reclaim { SlabFlags::RECLAIM_ACCOUNT } else { SlabFlags::NONE };
            KMALLOC_SIZES
                .iter()
                .map(|&size| {
                    let align = 1 << size.trailing_zeros();
                    KmemCache::new(pa, &kmalloc_name(size, reclaim), size, align, flags, cfg)
                })
                .collect()
        };
        Ok(Kmalloc {
            pa,
            id: NEXT_KMALLOC_ID.fetch_add(1, Relaxed),
            normal: set(false)?,
            reclaim: set(true)?,
            large: Mutex::new(BTreeMap::new()),
            large_allocs: AtomicU64::new(0),
            large_frees: AtomicU64::new(0),
        })
    }

    /// Allocate `size` bytes on `cpu` (kernel `kmalloc`). `__GFP_RECLAIMABLE` picks the
    /// reclaimable caches; above two pages the block comes from `alloc_pages` with the
    /// caller's flags and `__GFP_COMP`.
    pub fn alloc(&self, cpu: Cpu, size: u64, gfp: Gfp) -> Result<KmallocObject, SlabError> {
        if size == 0 || size > KMALLOC_MAX_SIZE {
            return Err(SlabError::BadSize { size });
        }
        let Some(class) = kmalloc_index(size) else {
            return self.alloc_large(cpu, size, gfp);
        };
        let reclaim = gfp.contains(Gfp::RECLAIMABLE);
        let obj = self.set(reclaim)[class].alloc(cpu, gfp)?;
        Ok(KmallocObject { owner: self.id, kind: Kind::Slab { reclaim, class: class as u8, obj } })
    }

    /// A large kmalloc (kernel `__kmalloc_large_node`).
    fn alloc_large(&self, cpu: Cpu, size: u64, gfp: Gfp) -> Result<KmallocObject, SlabError> {
        let order = Order(get_order(size));
        let pfn = self.pa.alloc_pages(cpu, gfp | Gfp::COMP, order)?;
        self.large.lock().insert(pfn.0, order);
        self.large_allocs.fetch_add(1, Relaxed);
        Ok(KmallocObject { owner: self.id, kind: Kind::Large { pfn, order } })
    }

    /// Free an allocation on `cpu` (kernel `kfree`). A refused free changes nothing.
    pub fn free(&self, cpu: Cpu, obj: KmallocObject) -> Result<(), SlabError> {
        if obj.owner != self.id {
            let (slab, index) = match obj.kind {
                Kind::Slab { obj, .. } => (obj.slab(), obj.index()),
                Kind::Large { pfn, .. } => (pfn, 0),
            };
            return Err(SlabError::ForeignObject { slab, index });
        }
        match obj.kind {
            Kind::Slab { reclaim, class, obj } => {
                self.set(reclaim)[usize::from(class)].free(cpu, obj)
            }
            Kind::Large { pfn, order } => self.free_large(cpu, pfn, order),
        }
    }

    /// Give a large block back, if it is one of ours and still out.
    fn free_large(&self, cpu: Cpu, pfn: Pfn, order: Order) -> Result<(), SlabError> {
        if self.pa.cpu(cpu.id()) != Some(cpu) {
            return Err(SlabError::InvalidCpu(cpu.id()));
        }
        let mut large = self.large.lock();
        if large.get(&pfn.0) != Some(&order) {
            return Err(SlabError::DoubleFree { slab: pfn, index: 0 });
        }
        self.pa.free_pages(cpu, pfn, order).map_err(SlabError::PageFree)?;
        large.remove(&pfn.0);
        self.large_frees.fetch_add(1, Relaxed);
        Ok(())
    }

    /// The usable size of an allocation (kernel `ksize`): the cache's object stride, or the
    /// whole block.
    pub fn ksize(&self, obj: KmallocObject) -> u64 {
        match obj.kind {
            Kind::Slab { class, .. } => u64::from(KMALLOC_SIZES[usize::from(class)]),
            Kind::Large { order, .. } => PAGE_SIZE << order.0,
        }
    }

    /// The cache serving `size` bytes, if a cache does (`reclaim`: the `kmalloc-rcl-*` set).
    pub fn cache_for(&self, size: u64, reclaim: bool) -> Option<&KmemCache<'a, E, L>> {
        kmalloc_index(size).map(|i| &self.set(reclaim)[i])
    }

    /// Every kmalloc cache in `/proc/slabinfo`'s order (newest first: the reclaimable set,
    /// then the normal one, each from the largest size down).
    pub fn caches(&self) -> impl Iterator<Item = &KmemCache<'a, E, L>> + '_ {
        self.reclaim.iter().rev().chain(self.normal.iter().rev())
    }

    /// Every cache's slabinfo row, in [`caches`](Self::caches)' order.
    pub fn slabinfo(&self) -> Vec<SlabInfo> {
        self.caches().map(KmemCache::slabinfo).collect()
    }

    /// Large allocations made and freed so far.
    pub fn large_counts(&self) -> (u64, u64) {
        (self.large_allocs.load(Relaxed), self.large_frees.load(Relaxed))
    }

    /// Shrink every cache (see [`KmemCache::shrink`]).
    pub fn shrink(&self, caller: Cpu) -> Result<(), SlabError> {
        self.caches().try_for_each(|c| c.shrink(caller))
    }

    /// Validate every cache (see [`KmemCache::validate`]).
    pub fn validate(&self) -> Result<(), String> {
        self.caches().try_for_each(|c| c.validate().map_err(|e| format!("{}: {e}", c.name())))
    }

    fn set(&self, reclaim: bool) -> &[KmemCache<'a, E, L>] {
        if reclaim {
            &self.reclaim
        } else {
            &self.normal
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_map_to_the_smallest_cache_that_fits() {
        let at = |s| kmalloc_index(s).map(|i| KMALLOC_SIZES[i]);
        assert_eq!(at(0), None);
        assert_eq!(at(1), Some(8));
        assert_eq!(at(8), Some(8));
        assert_eq!(at(9), Some(16));
        assert_eq!(at(65), Some(96));
        assert_eq!(at(96), Some(96));
        assert_eq!(at(97), Some(128));
        assert_eq!(at(129), Some(192));
        assert_eq!(at(193), Some(256));
        assert_eq!(at(1000), Some(1024));
        assert_eq!(at(8192), Some(8192));
        assert_eq!(at(8193), None);
    }

    #[test]
    fn names_follow_the_kernel() {
        assert_eq!(kmalloc_name(96, false), "kmalloc-96");
        assert_eq!(kmalloc_name(1024, false), "kmalloc-1k");
        assert_eq!(kmalloc_name(8192, true), "kmalloc-rcl-8k");
    }
}

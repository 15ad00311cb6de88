//! Slab caches in a run: the kernel objects a workload allocates (task_struct, mm_struct,
//! vm_area_struct, kmalloc-N, …) through `pagealloc-slab`'s SLUB-like layer over the run's own
//! page allocator, so that the slabs it takes and gives back — orders 0 to 3 — reach the
//! page allocator, its pagesets and `free_high` as they do in a kernel.
//!
//! A workload names its caches ([`SlabSetup`], from [`Workload::slab_setup`]); the runner
//! creates them over its allocator when the run starts and hands them to every step through
//! [`Ctx::slab_alloc`] and [`Ctx::slab_free`]. A slab call is one accounted call: its fixed work
//! from the cost profile (`slab_alloc_ns`, `slab_free_ns`) plus every page allocator call it
//! made, each with the page allocator's fixed work and its metadata lines and zone locks
//! through the model's sink. Of the slab layer's own metadata, the slab's `struct page`
//! (where SLUB keeps `struct slab`: freelist, counts, list links) is reported by
//! `pagealloc-slab` on every path but the two fast ones and priced like the page allocator's
//! lines, so a free into a slab another CPU wrote last pays the transfer; the CPU's own
//! freelist and the objects' free pointers are inside the fixed figures measured hot.
//!
//! At the end of a run the workload must have freed every object; the runner then shrinks
//! every cache (kernel `kmem_cache_shrink`), giving every slab back before the conservation
//! check.
//!
//! [`Workload::slab_setup`]: super::Workload::slab_setup
//! [`Ctx::slab_alloc`]: super::Ctx::slab_alloc
//! [`Ctx::slab_free`]: super::Ctx::slab_free

use anyhow::{anyhow, bail, Result};
use pagealloc::{Cpu, CpuId, PageAllocator};
use pagealloc_slab::{KmemCache, SlabFlags, SlubConfig};

use super::sink::ModelSink;

/// One cache a workload asks for (kernel `kmem_cache_create`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlabSpec {
    /// The cache's name, as `/proc/slabinfo` prints it.
    pub name: String,
    /// Object size, bytes.
    pub size: u32,
    /// Alignment (0: a word; `SLAB_HWCACHE_ALIGN` may raise it).
    pub align: u32,
    /// Creation flags.
    pub flags: SlabFlags,
}

impl SlabSpec {
    /// A cache of its own.
    pub fn new(name: &str, size: u32, align: u32, flags: SlabFlags) -> SlabSpec {
        SlabSpec { name: name.to_owned(), size, align, flags }
    }
}

/// A workload's caches and the slab layer's boot parameters.
#[derive(Clone, Debug, Default)]
pub struct SlabSetup {
    /// `slub_min_objects`, `slub_max_order`, the slab-order rule of the kernel modelled.
    pub config: SlubConfig,
    /// The caches, indexed by [`CacheId`] in this order.
    pub caches: Vec<SlabSpec>,
}

/// A cache by its index in [`SlabSetup::caches`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CacheId(pub u16);

/// The caches of one run, over the run's page allocator.
#[derive(Debug, Default)]
pub struct SlabSet<'p> {
    caches: Vec<KmemCache<'p, ModelSink>>,
}

impl<'p> SlabSet<'p> {
    /// Create `setup`'s caches over `pa` (their slab orders follow `pa`'s CPU count).
    pub fn new(pa: &'p PageAllocator<ModelSink>, setup: &SlabSetup) -> Result<SlabSet<'p>> {
        let caches = setup
            .caches
            .iter()
            .map(|s| {
                KmemCache::new(pa, &s.name, s.size, s.align, s.flags, &setup.config)
                    .map_err(|e| anyhow!("slab cache {}: {e}", s.name))
            })
            .collect::<Result<Vec<_>>>()?;
        if caches.len() > usize::from(u16::MAX) {
            bail!("{} slab caches: at most {} fit a CacheId", caches.len(), u16::MAX);
        }
        Ok(SlabSet { caches })
    }

    /// The cache `id`.
    pub fn cache(&self, id: CacheId) -> Result<&KmemCache<'p, ModelSink>> {
        self.caches.get(usize::from(id.0)).ok_or_else(|| {
            anyhow!("slab cache {} was not asked for ({} caches)", id.0, self.caches.len())
        })
    }

    /// The end of a run: every object must be back (an object still allocated is a leak in
    /// the workload: an error naming the cache), then every cache is shrunk on `caller`, so
    /// every slab goes back to the page allocator.
    pub fn shrink_all(&self, pa: &PageAllocator<ModelSink>, caller: CpuId) -> Result<()> {
        let cpu: Cpu = pa.cpu(caller).ok_or_else(|| anyhow!("cpu {} does not exist", caller.0))?;
        for c in &self.caches {
            c.shrink(cpu).map_err(|e| anyhow!("shrinking slab cache {}: {e}", c.name()))?;
            let info = c.slabinfo();
            if info.objects_in_use != 0 || info.num_slabs != 0 {
                bail!(
                    "slab cache {}: {} objects still allocated in {} slabs after the workload \
                     ended (every object must be freed)",
                    c.name(),
                    info.objects_in_use,
                    info.num_slabs
                );
            }
        }
        Ok(())
    }
}

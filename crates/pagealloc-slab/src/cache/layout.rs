//! A cache's fixed parameters: object size and alignment, slab orders, partial-list caps.

#[allow(clippy::wildcard_imports)]
use super::*;

/// The parts of a cache fixed at creation.
#[derive(Clone, Debug)]
pub(super) struct Layout {
    pub(super) name: String,
    pub(super) object_size: u32,
    /// Object stride (kernel `s->size`).
    pub(super) size: u32,
    pub(super) align: u32,
    pub(super) flags: SlabFlags,
    /// Preferred slab order and objects (kernel `s->oo`).
    pub(super) oo: OrderObjects,
    /// Fallback: the order of one object (kernel `s->min`).
    pub(super) min: OrderObjects,
    /// GFP bits every slab allocation carries (kernel `s->allocflags`, without `__GFP_COMP`,
    /// which is added per order).
    pub(super) allocflags: Gfp,
    pub(super) min_partial: u32,
    pub(super) cpu_partial: u32,
    pub(super) cpu_partial_slabs: u32,
    pub(super) has_cpu_partial: bool,
}

impl Layout {
    /// The cache's fixed parameters (kernel `kmem_cache_open` → `calculate_sizes`,
    /// `set_min_partial`, `set_cpu_partial`).
    pub(super) fn new(
        name: &str,
        object_size: u32,
        align: u32,
        flags: SlabFlags,
        cfg: &SlubConfig,
        nr_cpus: u32,
    ) -> Result<Layout, SlabError> {
        if object_size == 0 || u64::from(object_size) > MAX_OBJECT_SIZE {
            return Err(SlabError::BadSize { size: u64::from(object_size) });
        }
        if align != 0 && (!align.is_power_of_two() || u64::from(align) > MAX_OBJECT_SIZE) {
            return Err(SlabError::BadAlign(align));
        }
        let align = order::calculate_alignment(
            flags.contains(SlabFlags::HWCACHE_ALIGN),
            align,
            object_size,
        );
        let size = object_size.next_multiple_of(order::WORD_SIZE).next_multiple_of(align);
        let slab_order = order::calculate_order(size, nr_cpus, cfg)
            .ok_or(SlabError::BadSize { size: u64::from(object_size) })?;
        let oo = OrderObjects::new(slab_order, size);
        let min = OrderObjects::new(pagealloc::Order(order::get_order(u64::from(size))), size);
        let mut allocflags = Gfp(0);
        if flags.contains(SlabFlags::RECLAIM_ACCOUNT) {
            allocflags |= Gfp::RECLAIMABLE;
        }
        if flags.contains(SlabFlags::CACHE_DMA) {
            allocflags |= Gfp::DMA;
        }
        let cpu_partial = order::cpu_partial(size, cfg.cpu_partial);
        Ok(Layout {
            name: name.into(),
            object_size,
            size,
            align,
            flags,
            oo,
            min,
            allocflags,
            min_partial: order::min_partial(size),
            cpu_partial,
            cpu_partial_slabs: if cfg.cpu_partial {
                order::cpu_partial_slabs(cpu_partial, oo.objects)
            } else {
                0
            },
            has_cpu_partial: cfg.cpu_partial,
        })
    }
}

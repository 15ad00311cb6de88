//! How big a slab is: SLUB's choice of slab order and objects per slab (`calculate_order`),
//! object alignment (`calculate_alignment`), and the two list limits that depend on the object
//! size (`min_partial`, `cpu_partial` / `cpu_partial_slabs`). Pure functions of the object
//! size, the CPU count and the boot parameters, so they are tested against a table.
//!
//! Two forms of the order search are kept ([`OrderRule`]): the one every kernel up to 6.6
//! ran, and the one the "SLUB: calculate_order() cleanups" series (Vlastimil Babka, September
//! 2023, cover letter `<20230908145302.30320-6-vbabka@suse.cz>`, merged for 6.7 through the
//! slab tree's `slab/for-6.7/orders-cleanup` branch) left in place.

use pagealloc::types::{fls, MAX_PAGE_ORDER, PAGE_ALLOC_COSTLY_ORDER, PAGE_SIZE};
use pagealloc::Order;

use crate::error::SlabError;

/// Most objects one slab may hold: the kernel keeps the count in 15 bits of `struct slab`.
pub const MAX_OBJS_PER_PAGE: u32 = 32767;

/// Bounds of the node partial list's floor (kernel `MIN_PARTIAL`, `MAX_PARTIAL`).
pub const MIN_PARTIAL: u32 = 5;
/// See [`MIN_PARTIAL`].
pub const MAX_PARTIAL: u32 = 10;

/// Bytes of a cache line, for `SLAB_HWCACHE_ALIGN` (x86-64's `cache_line_size()`).
pub const CACHE_LINE_SIZE: u32 = 64;

/// The smallest alignment of any object: a word, where SLUB keeps its free pointer
/// (`sizeof(void *)` on a 64-bit kernel).
pub const WORD_SIZE: u32 = 8;

/// Largest object a cache takes: the kernel's `KMALLOC_MAX_SIZE`, one block of the
/// largest order (4 MiB with 4 KiB pages).
pub const MAX_OBJECT_SIZE: u64 = PAGE_SIZE << MAX_PAGE_ORDER;

/// Which form of the slab-order search to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OrderRule {
    /// Kernels up to 6.6: for each `min_objects` from the CPU-derived value down to 2, accept
    /// the smallest order whose leftover is at most 1/16, then 1/8, then 1/4 of the slab;
    /// failing that, one object at up to `slub_max_order` with any leftover, then one object
    /// at any order.
    Pre6_7,
    /// 6.7 and later: `min_objects` is never lowered. Starting from the order that holds
    /// `min_objects` (at least `slub_min_order`), accept the smallest order up to
    /// `slub_max_order` whose leftover is at most 1/16, then 1/8, 1/4 and 1/2 of the slab;
    /// failing that, the order of one object.
    #[default]
    V6_7,
}

/// SLUB's boot parameters (`slub_min_objects=`, `slub_min_order=`, `slub_max_order=`,
/// spelled `slab_*` since 6.8; both spellings are accepted by the kernel) and the order
/// rule.
///
/// `#[non_exhaustive]` (the kernel adds boot parameters): start from
/// [`SlubConfig::default`] and change fields, or use [`SlubConfig::with`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlubConfig {
    /// Objects a slab should hold at least; 0 (the default) derives it from the CPU count:
    /// `4 * (fls(nr_cpus) + 1)`.
    pub min_objects: u32,
    /// Smallest slab order (default 0).
    pub min_order: u8,
    /// Largest slab order the search prefers (default 3, `PAGE_ALLOC_COSTLY_ORDER`: above it
    /// the page allocator does not try hard).
    pub max_order: u8,
    /// Which order search to run.
    pub order_rule: OrderRule,
    /// Keep per-CPU partial lists (`CONFIG_SLUB_CPU_PARTIAL`, on in distribution kernels).
    /// Off, a slab that stops being full goes straight to its node's partial list.
    pub cpu_partial: bool,
}

impl Default for SlubConfig {
    fn default() -> SlubConfig {
        SlubConfig {
            min_objects: 0,
            min_order: 0,
            max_order: PAGE_ALLOC_COSTLY_ORDER,
            order_rule: OrderRule::V6_7,
            cpu_partial: true,
        }
    }
}

impl SlubConfig {
    /// This configuration with `change` applied.
    ///
    /// ```
    /// use pagealloc_slab::{OrderRule, SlubConfig};
    ///
    /// let old = SlubConfig::default().with(|c| c.order_rule = OrderRule::Pre6_7);
    /// assert_eq!(old.max_order, SlubConfig::default().max_order);
    /// ```
    #[must_use]
    pub fn with(mut self, change: impl FnOnce(&mut SlubConfig)) -> SlubConfig {
        change(&mut self);
        self
    }

    /// Check the parameters and apply the kernel's fix-up: a `slub_min_order` above
    /// `slub_max_order` raises the maximum to it, as the kernel's `slub_min_order=` handler
    /// does. Orders above the largest and counts above [`MAX_OBJS_PER_PAGE`] are refused
    /// here rather than clamped.
    pub fn checked(self) -> Result<SlubConfig, SlabError> {
        for (key, order) in [("slub_min_order", self.min_order), ("slub_max_order", self.max_order)]
        {
            if order > MAX_PAGE_ORDER {
                return Err(SlabError::BadConfig { key, value: u64::from(order) });
            }
        }
        if self.min_objects > MAX_OBJS_PER_PAGE {
            return Err(SlabError::BadConfig {
                key: "slub_min_objects",
                value: u64::from(self.min_objects),
            });
        }
        Ok(SlubConfig { max_order: self.max_order.max(self.min_order), ..self })
    }

    /// `min_objects` in force on a machine of `nr_cpus` CPUs: the parameter, or
    /// `4 * (fls(nr_cpus) + 1)` — more CPUs, bigger slabs, so that each CPU's slab lasts
    /// longer before it needs the node's list lock.
    pub fn min_objects_for(&self, nr_cpus: u32) -> u32 {
        if self.min_objects != 0 {
            return self.min_objects;
        }
        4 * (fls(u64::from(nr_cpus.max(1))) + 1)
    }
}

/// A slab's order and how many objects it holds (kernel `struct kmem_cache_order_objects`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderObjects {
    /// Slab order: the slab is 2^order contiguous frames.
    pub order: Order,
    /// Objects in one slab.
    pub objects: u32,
}

impl OrderObjects {
    /// `oo_make`: the objects of `size` bytes that fit a slab of `order`.
    pub fn new(order: Order, size: u32) -> OrderObjects {
        OrderObjects { order, objects: order_objects(order.0, size) }
    }
}

/// Objects of `size` bytes in a slab of `order` (`size > 0`).
pub fn order_objects(order: u8, size: u32) -> u32 {
    ((PAGE_SIZE << order) / u64::from(size.max(1))).min(u64::from(u32::MAX)) as u32
}

/// The smallest order whose block holds `bytes` (kernel `get_order`; 0 for `bytes <= 4096`).
pub fn get_order(bytes: u64) -> u8 {
    let pages = bytes.div_ceil(PAGE_SIZE).max(1);
    // ceil(log2(pages)); at most 64 - 12 for any u64, so it fits a u8.
    (64 - (pages - 1).leading_zeros()) as u8
}

/// The smallest order in `min_order..=max_order` whose leftover (the bytes after the last
/// whole object) is at most `1 / fract_leftover` of the slab; `max_order + 1` if none is.
fn calc_slab_order(size: u32, min_order: u8, max_order: u8, fract_leftover: u64) -> u8 {
    let mut order = min_order;
    while order <= max_order {
        let slab_size = PAGE_SIZE << order;
        if slab_size % u64::from(size) <= slab_size / fract_leftover {
            break;
        }
        order += 1;
    }
    order
}

/// The slab order for objects of `size` bytes (already aligned) on `nr_cpus` CPUs, by the
/// configured rule; `None` when no order up to the largest holds one object.
pub fn calculate_order(size: u32, nr_cpus: u32, cfg: &SlubConfig) -> Option<Order> {
    let size = size.max(1);
    let order = match cfg.order_rule {
        OrderRule::V6_7 => calculate_order_v6_7(size, nr_cpus, cfg),
        OrderRule::Pre6_7 => calculate_order_pre6_7(size, nr_cpus, cfg),
    };
    (order <= MAX_PAGE_ORDER).then_some(Order(order))
}

/// The 6.7 search: one starting order, the leftover bound relaxed from 1/16 to 1/2.
fn calculate_order_v6_7(size: u32, nr_cpus: u32, cfg: &SlubConfig) -> u8 {
    // A slab never needs more objects than the largest preferred order holds (at least one,
    // so that the starting order below is defined for objects above that order).
    let max_objects = order_objects(cfg.max_order, size).max(1);
    let min_objects = cfg.min_objects_for(nr_cpus).min(max_objects);
    let min_order = cfg.min_order.max(get_order(u64::from(min_objects) * u64::from(size)));
    if order_objects(min_order, size) > MAX_OBJS_PER_PAGE {
        // Tiny objects at a large minimum order: the largest order whose count still fits.
        return get_order(u64::from(size) * u64::from(MAX_OBJS_PER_PAGE)) - 1;
    }
    for fraction in [16, 8, 4, 2] {
        let order = calc_slab_order(size, min_order, cfg.max_order, fraction);
        if order <= cfg.max_order {
            return order;
        }
    }
    // No order up to slub_max_order holds one object: the order of one object.
    get_order(u64::from(size))
}

/// The search before 6.7: the leftover bound relaxed from 1/16 to 1/4 for each
/// `min_objects`, lowering `min_objects` one at a time down to 2.
fn calculate_order_pre6_7(size: u32, nr_cpus: u32, cfg: &SlubConfig) -> u8 {
    let max_objects = order_objects(cfg.max_order, size);
    let mut min_objects = cfg.min_objects_for(nr_cpus).min(max_objects);
    while min_objects > 1 {
        for fraction in [16, 8, 4] {
            let order =
                calc_slab_order_pre6_7(size, min_objects, cfg.min_order, cfg.max_order, fraction);
            if order <= cfg.max_order {
                return order;
            }
        }
        min_objects -= 1;
    }
    // One object per slab, any leftover: first within slub_max_order, then at any order.
    let order = calc_slab_order_pre6_7(size, 1, cfg.min_order, cfg.max_order, 1);
    if order <= cfg.max_order {
        return order;
    }
    calc_slab_order_pre6_7(size, 1, cfg.min_order, MAX_PAGE_ORDER, 1)
}

/// The pre-6.7 inner search, which derived its starting order from `min_objects` itself and
/// checked the object-count limit against `slub_min_order` only.
fn calc_slab_order_pre6_7(
    size: u32,
    min_objects: u32,
    min_order: u8,
    max_order: u8,
    fract_leftover: u64,
) -> u8 {
    if order_objects(min_order, size) > MAX_OBJS_PER_PAGE {
        return get_order(u64::from(size) * u64::from(MAX_OBJS_PER_PAGE)) - 1;
    }
    let start = min_order.max(get_order(u64::from(min_objects) * u64::from(size)));
    calc_slab_order(size, start, max_order, fract_leftover)
}

/// The alignment of a cache's objects (kernel `calculate_alignment`): with
/// `SLAB_HWCACHE_ALIGN` a cache line, halved while the object fits in half of it (so small
/// objects are not spread one per line); never below `align` or a word.
pub fn calculate_alignment(hwcache_align: bool, align: u32, size: u32) -> u32 {
    let mut align = align.max(1);
    if hwcache_align {
        let mut ralign = CACHE_LINE_SIZE;
        while size <= ralign / 2 {
            ralign /= 2;
        }
        align = align.max(ralign);
    }
    align.max(WORD_SIZE).next_multiple_of(WORD_SIZE)
}

/// Empty slabs a node keeps on its partial list before it gives them back
/// (kernel `set_min_partial(s, ilog2(s->size) / 2)`, clamped to `MIN_PARTIAL..=MAX_PARTIAL`):
/// bigger objects, more slabs kept, because their slabs are costlier to get again.
pub fn min_partial(size: u32) -> u32 {
    (size.max(1).ilog2() / 2).clamp(MIN_PARTIAL, MAX_PARTIAL)
}

/// The per-CPU partial list's size in objects (kernel `set_cpu_partial`, the values of 5.16's
/// "mm/slub: increase default cpu partial list sizes", 23e98ad1ce89): fewer for bigger
/// objects. 0 when per-CPU partial lists are off.
pub fn cpu_partial(size: u32, enabled: bool) -> u32 {
    match size {
        _ if !enabled => 0,
        s if u64::from(s) >= PAGE_SIZE => 6,
        s if s >= 1024 => 24,
        s if s >= 256 => 52,
        _ => 120,
    }
}

/// The cap on slabs in a per-CPU partial list (kernel `slub_set_cpu_partial`, since 5.16's
/// "mm, slub: change percpu partial accounting from objects to pages", b47291ef02b0): the
/// object count above turned into slabs, assuming the slabs there are half full.
pub fn cpu_partial_slabs(cpu_partial: u32, objects_per_slab: u32) -> u32 {
    (cpu_partial * 2).div_ceil(objects_per_slab.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_order_rounds_up_to_whole_blocks() {
        assert_eq!(get_order(1), 0);
        assert_eq!(get_order(4096), 0);
        assert_eq!(get_order(4097), 1);
        assert_eq!(get_order(8192), 1);
        assert_eq!(get_order(32768), 3);
        assert_eq!(get_order(32769), 4);
    }

    #[test]
    fn min_objects_follows_the_cpu_count() {
        let c = SlubConfig::default();
        // fls(1) = 1 → 8; fls(4) = 3 → 16; fls(8) = 4 → 20; fls(64) = 7 → 32; fls(224) = 8.
        assert_eq!(c.min_objects_for(1), 8);
        assert_eq!(c.min_objects_for(4), 16);
        assert_eq!(c.min_objects_for(8), 20);
        assert_eq!(c.min_objects_for(64), 32);
        assert_eq!(c.min_objects_for(224), 36);
        assert_eq!(SlubConfig { min_objects: 5, ..c }.min_objects_for(64), 5);
    }

    #[test]
    fn min_partial_is_half_the_log_clamped() {
        assert_eq!(min_partial(8), 5); // ilog2 3 / 2 = 1 → 5
        assert_eq!(min_partial(2048), 5); // 11 / 2 = 5
        assert_eq!(min_partial(8192), 6); // 13 / 2 = 6
        assert_eq!(min_partial(1 << 20), 10); // 20 / 2 = 10
        assert_eq!(min_partial(1 << 22), 10); // 11 → clamped to 10
    }

    #[test]
    fn cpu_partial_by_size_and_slabs_by_half_full() {
        assert_eq!(cpu_partial(64, true), 120);
        assert_eq!(cpu_partial(256, true), 52);
        assert_eq!(cpu_partial(1024, true), 24);
        assert_eq!(cpu_partial(4096, true), 6);
        assert_eq!(cpu_partial(64, false), 0);
        // kmalloc-64 at 64 objects a slab: 240 / 64 → 4 slabs; kmalloc-4k at 8: 12 / 8 → 2.
        assert_eq!(cpu_partial_slabs(120, 64), 4);
        assert_eq!(cpu_partial_slabs(6, 8), 2);
        assert_eq!(cpu_partial_slabs(0, 8), 0);
    }

    #[test]
    fn alignment_of_hwcache_aligned_caches() {
        // A 24-byte object: 64 halved to 32 (24 <= 32) but not to 16.
        assert_eq!(calculate_alignment(true, 0, 24), 32);
        assert_eq!(calculate_alignment(true, 0, 200), 64);
        assert_eq!(calculate_alignment(false, 0, 24), 8);
        assert_eq!(calculate_alignment(false, 4, 24), 8);
        assert_eq!(calculate_alignment(false, 12, 24), 16);
        assert_eq!(calculate_alignment(false, 256, 256), 256);
    }

    #[test]
    fn bad_orders_are_refused_and_min_raises_max() {
        let c = SlubConfig { min_order: 4, ..SlubConfig::default() }.checked().unwrap();
        assert_eq!(c.max_order, 4);
        assert!(SlubConfig { max_order: 11, ..SlubConfig::default() }.checked().is_err());
        assert!(SlubConfig { min_objects: 40_000, ..SlubConfig::default() }.checked().is_err());
    }
}

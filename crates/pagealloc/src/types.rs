//! Unit types: frame numbers, orders, page counts, CPU and zone indices.
//!
//! Every conversion between them, and every cast of a frame number, lives here so the rest of
//! the crate does arithmetic in units, not in bare integers.

use core::fmt;

/// Largest buddy order (MAX_PAGE_ORDER): 2^10 pages = 4 MiB with 4 KiB pages.
pub const MAX_PAGE_ORDER: u8 = 10;
/// Number of buddy orders, `0..=MAX_PAGE_ORDER` (NR_PAGE_ORDERS).
pub const NR_PAGE_ORDERS: usize = MAX_PAGE_ORDER as usize + 1;
/// Orders up to this one are "cheap" (PAGE_ALLOC_COSTLY_ORDER); also the highest non-THP
/// order the per-CPU lists cache.
pub const PAGE_ALLOC_COSTLY_ORDER: u8 = 3;
/// Order of a pageblock, the unit of migratetype grouping (= HPAGE_PMD_ORDER on x86-64).
pub const PAGEBLOCK_ORDER: u8 = 9;
/// Pages in a pageblock.
pub const PAGEBLOCK_NR_PAGES: u64 = 1 << PAGEBLOCK_ORDER;
/// log2 of the page size (4 KiB pages).
pub const PAGE_SHIFT: u32 = 12;
/// Page size in bytes.
pub const PAGE_SIZE: u64 = 1 << PAGE_SHIFT;

/// A page frame number: physical address >> PAGE_SHIFT.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pfn(pub u64);

impl Pfn {
    /// The frame holding physical byte address `addr` (rounded down).
    #[inline]
    pub const fn from_phys(addr: u64) -> Pfn {
        Pfn(addr >> PAGE_SHIFT)
    }

    /// Physical byte address of the frame's first byte.
    #[inline]
    pub const fn phys(self) -> u64 {
        self.0 << PAGE_SHIFT
    }

    /// The buddy of an order-`order` block starting here: `pfn ^ 2^order`.
    #[inline]
    pub const fn buddy(self, order: Order) -> Pfn {
        Pfn(self.0 ^ (1 << order.0))
    }

    /// Is this frame the first frame of a naturally aligned block of `order`?
    #[inline]
    pub const fn is_aligned(self, order: Order) -> bool {
        self.0 & ((1 << order.0) - 1) == 0
    }

    /// Round down to an `order` boundary.
    #[inline]
    pub const fn align_down(self, order: Order) -> Pfn {
        Pfn(self.0 & !((1u64 << order.0) - 1))
    }

    /// Round up to an `order` boundary (saturating at the top of the address space).
    #[inline]
    pub const fn align_up(self, order: Order) -> Pfn {
        let mask = (1u64 << order.0) - 1;
        match self.0.checked_add(mask) {
            Some(v) => Pfn(v & !mask),
            None => Pfn(!mask),
        }
    }

    /// `self + n` pages.
    #[inline]
    pub const fn add(self, n: NrPages) -> Pfn {
        Pfn(self.0 + n.0)
    }

    /// Pages from `base` up to `self` (`self >= base`).
    #[inline]
    pub const fn offset_from(self, base: Pfn) -> NrPages {
        NrPages(self.0 - base.0)
    }

    /// Index of the pageblock that holds this frame.
    #[inline]
    pub const fn pageblock(self) -> u64 {
        self.0 >> PAGEBLOCK_ORDER
    }
}

impl fmt::Debug for Pfn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pfn({:#x})", self.0)
    }
}

impl fmt::Display for Pfn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// A buddy order: a block of order `k` is 2^k contiguous, 2^k-aligned frames.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct Order(pub u8);

impl Order {
    /// Order 0, a single page.
    pub const ZERO: Order = Order(0);
    /// The largest buddy order.
    pub const MAX: Order = Order(MAX_PAGE_ORDER);
    /// The pageblock order.
    pub const PAGEBLOCK: Order = Order(PAGEBLOCK_ORDER);

    /// Pages in a block of this order.
    #[inline]
    pub const fn nr_pages(self) -> NrPages {
        NrPages(1 << self.0)
    }

    /// Is this an order the buddy allocator has (`0..=MAX_PAGE_ORDER`)?
    #[inline]
    pub const fn is_valid(self) -> bool {
        self.0 <= MAX_PAGE_ORDER
    }

    /// Array index for per-order tables.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// All buddy orders, lowest first.
    pub fn all() -> impl DoubleEndedIterator<Item = Order> + Clone {
        (0..=MAX_PAGE_ORDER).map(Order)
    }
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A count of pages (not blocks).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct NrPages(pub u64);

impl NrPages {
    /// Size in KiB.
    #[inline]
    pub const fn kib(self) -> u64 {
        self.0 << (PAGE_SHIFT - 10)
    }

    /// Pages needed to hold `kib` KiB (rounded down, as the kernel's `>> (PAGE_SHIFT - 10)`).
    #[inline]
    pub const fn from_kib(kib: u64) -> NrPages {
        NrPages(kib >> (PAGE_SHIFT - 10))
    }
}

impl fmt::Display for NrPages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A CPU number, `0..nr_cpus` of the allocator's machine.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct CpuId(pub u32);

impl CpuId {
    /// Array index for per-CPU tables.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// A NUMA node number.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct NodeId(pub u32);

impl NodeId {
    /// Array index for per-node tables.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// The zone types of x86-64, in the kernel's order (their numbers index `lowmem_reserve`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[repr(u8)]
pub enum ZoneType {
    /// Below 16 MiB (ISA DMA).
    Dma = 0,
    /// Below 4 GiB (32-bit DMA).
    Dma32 = 1,
    /// Everything else the kernel maps directly.
    Normal = 2,
    /// Only movable allocations (memory that must be offlinable).
    Movable = 3,
}

/// Number of zone types (MAX_NR_ZONES without ZONE_DEVICE).
pub const NR_ZONE_TYPES: usize = 4;

impl ZoneType {
    /// All zone types, lowest first.
    pub const ALL: [ZoneType; NR_ZONE_TYPES] =
        [ZoneType::Dma, ZoneType::Dma32, ZoneType::Normal, ZoneType::Movable];

    /// Array index for per-zone-type tables.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The name `/proc/zoneinfo` prints.
    pub const fn name(self) -> &'static str {
        match self {
            ZoneType::Dma => "DMA",
            ZoneType::Dma32 => "DMA32",
            ZoneType::Normal => "Normal",
            ZoneType::Movable => "Movable",
        }
    }

    /// Parse a name as `/proc/zoneinfo` prints it (case-insensitive).
    pub fn from_name(s: &str) -> Option<ZoneType> {
        ZoneType::ALL.into_iter().find(|z| z.name().eq_ignore_ascii_case(s))
    }

    /// Zones whose memory the kernel counts as "lowmem" for watermark sharing (all but
    /// HIGHMEM and MOVABLE).
    pub const fn is_lowmem(self) -> bool {
        !matches!(self, ZoneType::Movable)
    }
}

impl fmt::Display for ZoneType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Index of a zone in a [`PageAllocator`](crate::PageAllocator): zones are numbered in node
/// order, lowest zone type first within a node.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct ZoneIdx(pub u16);

impl ZoneIdx {
    /// Array index.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// Integer square root (floor), as the kernel's `int_sqrt`.
pub const fn int_sqrt(x: u64) -> u64 {
    if x < 2 {
        return x;
    }
    // Newton's method from an over-estimate converges downward to floor(sqrt(x)).
    let mut r = 1u64 << (64 - x.leading_zeros()).div_ceil(2);
    loop {
        let next = (r + x / r) / 2;
        if next >= r {
            return r;
        }
        r = next;
    }
}

/// Find-last-set: 1-based index of the highest set bit, 0 for 0 (the kernel's `fls`).
pub const fn fls(x: u64) -> u32 {
    64 - x.leading_zeros()
}

/// Largest power of two `<= x` (`x >= 1`), the kernel's `rounddown_pow_of_two`.
pub const fn rounddown_pow2(x: u64) -> u64 {
    if x == 0 {
        0
    } else {
        1 << (63 - x.leading_zeros())
    }
}

/// `x * n / d` rounded down (the kernel's `mult_frac`), computed in 128 bits and saturating
/// at `u64::MAX` instead of overflowing. `d` must be non-zero; a zero `d` gives `u64::MAX`.
pub const fn mult_frac(x: u64, n: u64, d: u64) -> u64 {
    if d == 0 {
        return u64::MAX;
    }
    let v = (x as u128) * (n as u128) / (d as u128);
    if v > u64::MAX as u128 {
        u64::MAX
    } else {
        v as u64
    }
}

/// The size a page_frag cache tries to refill with (PAGE_FRAG_CACHE_MAX_SIZE): 32 KiB. Here
/// rather than in `page_frag` so that the errors below it can name it.
pub const PAGE_FRAG_CACHE_MAX_SIZE: u32 = 32768;

/// May blocks of this order sit on the per-CPU lists of a modern kernel? Orders 0..=3 and the
/// THP order (kernel `pcp_allowed_order`; the policy's `pcp_lists` decides what is cached).
#[inline]
pub const fn pcp_allowed_order(order: Order) -> bool {
    order.0 <= PAGE_ALLOC_COSTLY_ORDER || order.0 == PAGEBLOCK_ORDER
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buddy_and_alignment() {
        assert_eq!(Pfn(0x1000).buddy(Order(0)), Pfn(0x1001));
        assert_eq!(Pfn(0x1200).buddy(Order(9)), Pfn(0x1000));
        assert!(Pfn(0x1200).is_aligned(Order(9)));
        assert!(!Pfn(0x1201).is_aligned(Order(1)));
        assert_eq!(Pfn(0x1234).align_down(Order(9)), Pfn(0x1200));
        assert_eq!(Pfn(0x1201).align_up(Order(9)), Pfn(0x1400));
        assert_eq!(Pfn(u64::MAX).align_up(Order(4)), Pfn(!15));
    }

    #[test]
    fn integer_helpers_match_kernel_definitions() {
        for x in [0u64, 1, 2, 3, 4, 15, 16, 17, 1 << 40, u64::MAX] {
            let r = int_sqrt(x);
            assert!(r.checked_mul(r).is_some_and(|sq| sq <= x));
            assert!((r + 1).checked_mul(r + 1).is_none_or(|sq| sq > x));
        }
        assert_eq!(fls(0), 0);
        assert_eq!(fls(1), 1);
        assert_eq!(fls(10), 4);
        assert_eq!(rounddown_pow2(96), 64);
        assert_eq!(rounddown_pow2(1), 1);
        assert_eq!(mult_frac(327_680, 10, 10_000), 327);
        // Equal to the kernel's (x/d)*n + ((x%d)*n)/d wherever that does not overflow.
        for x in [0u64, 1, 9999, 10_000, 10_001, 327_680, 7518, 1 << 40] {
            for n in [0u64, 1, 10, 3000, 15_000] {
                assert_eq!(mult_frac(x, n, 10_000), (x / 10_000) * n + ((x % 10_000) * n) / 10_000);
            }
        }
        assert_eq!(mult_frac(u64::MAX, u64::MAX, 10_000), u64::MAX);
    }

    #[test]
    fn zone_names_round_trip() {
        for z in ZoneType::ALL {
            assert_eq!(ZoneType::from_name(z.name()), Some(z));
        }
        assert_eq!(ZoneType::from_name("dma32"), Some(ZoneType::Dma32));
        assert_eq!(ZoneType::from_name("HighMem"), None);
    }
}

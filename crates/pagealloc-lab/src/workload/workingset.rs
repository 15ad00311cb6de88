//! The file LRU's two lists as Linux 4.20 balances them (`mm/vmscan.c`:
//! `inactive_list_is_low`, `snapshot_refaults`) and workingset refault detection
//! (`mm/workingset.c`: `workingset_eviction`, `workingset_refault`, `workingset_activation`),
//! for the workloads that keep a page cache of their own (thpfioscale). The lists themselves
//! are the workload's; this module holds the rules, so that each can be tested alone.
//!
//! The rules, written from the kernel's behaviour:
//! - **Balance** (`inactive_list_is_low`): the inactive file list is low when
//!   inactive × ratio < active, with ratio = ⌊√(10 × GiB of the node's file LRU)⌋, or 1 below
//!   1 GiB — unless refault activations happened on the node since its last reclaim run ended
//!   (`lruvec->refaults` against the node's `WORKINGSET_ACTIVATE`, from 4.12's "mm: vmscan:
//!   fix IO/refault regression in cache workingset transition", 2a2e48854d70): then the ratio is 0
//!   and the inactive list is low whenever the active list holds a page, so that a new
//!   workingset pushes out a stale one quickly. Reclaim moves pages from the active list's tail
//!   to the inactive list only while the inactive list is low.
//! - **Aging** (`inactive_age`): a per-node counter that advances by one on every eviction from
//!   the inactive list and every activation (a second access, `mark_page_accessed`, or a
//!   refault that activates); an eviction stores the counter's new value, with the node, as
//!   the page's shadow in the file's slot (4.20 `pack_shadow` keeps as many low bits of the
//!   counter as the node number leaves free; so does [`Workingset::evict`], in 32 bits).
//! - **Refault** (`workingset_refault`, on a read that misses where a shadow is stored; a
//!   write, `__GFP_WRITE`, never looks): the refault distance is the evicting node's counter
//!   now less the shadow's, modulo the bits kept; if it is at most the size of that node's
//!   active file list the new page starts on the active list, and the node's counter and its
//!   `WORKINGSET_ACTIVATE` count advance.
//! - **Snapshot** (`snapshot_refaults`): at the end of a kswapd run (`balance_pgdat`) for its
//!   node, and at the end of a direct reclaim (`do_try_to_free_pages`) for every node of the
//!   zonelist, the node's `WORKINGSET_ACTIVATE` count is noted; the balance rule above
//!   compares against it.

/// Pages to GiB: the kernel's `>> (30 - PAGE_SHIFT)`.
const PAGES_PER_GIB_SHIFT: u32 = 30 - pagealloc::types::PAGE_SHIFT;

/// 4.20 `inactive_list_is_low`'s ratio for a file LRU of `lru_pages` pages (inactive +
/// active) with no refault activation since the last reclaim run: ⌊√(10 × GiB)⌋ (the
/// kernel's `int_sqrt`), or 1 below 1 GiB. The same rule sized the per-zone anon
/// `inactive_ratio` that kernels before 4.8 printed in `/proc/zoneinfo`.
pub fn inactive_ratio(lru_pages: u64) -> u64 {
    let gib = lru_pages >> PAGES_PER_GIB_SHIFT;
    if gib == 0 {
        1
    } else {
        (10 * gib).isqrt()
    }
}

/// 4.20 `inactive_list_is_low` for the file lists in actual reclaim: is the inactive list
/// small enough that reclaim should move active pages to it? `refaulting`: the node saw
/// refault activations since its last reclaim run ended (ratio 0).
pub fn inactive_is_low(inactive: u64, active: u64, refaulting: bool) -> bool {
    let ratio = if refaulting { 0 } else { inactive_ratio(inactive + active) };
    inactive.saturating_mul(ratio) < active
}

/// One node's workingset state.
#[derive(Clone, Copy, Debug, Default)]
struct NodeAge {
    /// `inactive_age`: evictions and activations.
    age: u64,
    /// `WORKINGSET_ACTIVATE`: refaults that activated.
    activate: u64,
    /// `lruvec->refaults`: `activate` when the last reclaim run on the node ended.
    snapshot: u64,
    /// `WORKINGSET_REFAULT`: reads that found a shadow of a page evicted from the node.
    refaults: u64,
}

/// The workingset state of every node of a run.
#[derive(Clone, Debug, Default)]
pub struct Workingset {
    /// Low bits of a shadow that name the node (as few as the run's nodes need).
    node_bits: u32,
    nodes: Vec<NodeAge>,
}

impl Workingset {
    /// The state of `nr_nodes` nodes, every counter at 0.
    pub fn new(nr_nodes: usize) -> Workingset {
        let node_bits = u64::BITS - (nr_nodes as u64).saturating_sub(1).leading_zeros();
        Workingset { node_bits, nodes: vec![NodeAge::default(); nr_nodes] }
    }

    /// The counter bits a shadow keeps.
    fn age_mask(&self) -> u64 {
        u64::from(u32::MAX >> self.node_bits)
    }

    /// 4.20 `workingset_eviction`: a page of node `node` leaves the inactive list; the node's
    /// counter advances and its new value, with the node, is the page's shadow.
    pub fn evict(&mut self, node: usize) -> u32 {
        let mask = self.age_mask();
        let n = &mut self.nodes[node];
        n.age += 1;
        (((n.age & mask) as u32) << self.node_bits) | node as u32
    }

    /// 4.20 `workingset_activation`: a page of node `node` was activated by a second access.
    pub fn activation(&mut self, node: usize) {
        self.nodes[node].age += 1;
    }

    /// 4.20 `workingset_refault`: a read found `shadow` in its slot. `active_pages(node)` is
    /// the size of that node's active file list. True if the page starts active (the
    /// evicting node's counter and activation count then advance).
    pub fn refault(&mut self, shadow: u32, active_pages: impl Fn(usize) -> u64) -> bool {
        let node = (shadow & ((1u32 << self.node_bits) - 1)) as usize;
        let eviction = u64::from(shadow >> self.node_bits);
        let mask = self.age_mask();
        let Some(n) = self.nodes.get_mut(node) else { return false };
        n.refaults += 1;
        let distance = (n.age & mask).wrapping_sub(eviction) & mask;
        if distance > active_pages(node) {
            return false;
        }
        n.age += 1;
        n.activate += 1;
        true
    }

    /// Did node `node` see refault activations since its last reclaim run ended?
    pub fn refaulting(&self, node: usize) -> bool {
        let n = &self.nodes[node];
        n.activate != n.snapshot
    }

    /// 4.20 `snapshot_refaults`: a reclaim run on node `node` ended.
    pub fn snapshot(&mut self, node: usize) {
        let n = &mut self.nodes[node];
        n.snapshot = n.activate;
    }

    /// Reads that found a shadow, and refaults that activated, over every node (the
    /// kernel's `workingset_refault` and `workingset_activate` in `/proc/vmstat`).
    pub fn totals(&self) -> (u64, u64) {
        self.nodes.iter().fold((0, 0), |(r, a), n| (r + n.refaults, a + n.activate))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << PAGES_PER_GIB_SHIFT;

    /// The table in 4.20's comment above `inactive_list_is_low`: 1 below 1 GiB, then
    /// 3, 10, 31, 101, 320 for 1 GiB, 10 GiB, 100 GiB, 1 TiB, 10 TiB; and the 30 GiB of
    /// page cache of thpfioscale on the 32 GiB Skylake: 17.
    #[test]
    fn ratio_follows_the_kernel_table() {
        let table = [
            (10 << 8, 1),
            (100 << 8, 1),
            (GIB - 1, 1),
            (GIB, 3),
            (10 * GIB, 10),
            (100 * GIB, 31),
            (1024 * GIB, 101),
            (10240 * GIB, 320),
            (30 * GIB, 17),
        ];
        for (pages, ratio) in table {
            assert_eq!(inactive_ratio(pages), ratio, "{pages} pages");
        }
    }

    /// With 10 GiB on the lists the ratio is 10: 100 inactive pages balance 1000 active ones,
    /// 99 do not; refault activations since the last reclaim run make any active page enough.
    #[test]
    fn inactive_is_low_at_the_ratio_or_when_refaulting() {
        let lru = 10 * GIB;
        let inactive = lru.div_ceil(11);
        let active = lru - inactive;
        assert_eq!(inactive_ratio(inactive + active), 10);
        assert!(!inactive_is_low(inactive, active, false));
        assert!(inactive_is_low(inactive - 1000, active + 1000, false));
        assert!(inactive_is_low(lru - 1, 1, true));
        assert!(!inactive_is_low(lru, 0, true));
        // Below 1 GiB the lists balance one to one.
        assert!(!inactive_is_low(500, 500, false) && inactive_is_low(499, 501, false));
    }

    /// A page refaulting within the active list's size of evictions and activations starts
    /// active; one beyond it does not. The distance counts both kinds of event on the
    /// evicting node only.
    #[test]
    fn refault_within_the_active_size_activates() {
        let mut ws = Workingset::new(2);
        let near = ws.evict(1);
        let far = ws.evict(1);
        for _ in 0..5 {
            ws.evict(1);
        }
        ws.activation(1);
        for _ in 0..100 {
            ws.evict(0);
        }
        // `near`: 7 events since (6 evictions, 1 activation), `far`: 6.
        assert!(!ws.refault(near, |_| 6));
        assert!(!ws.refaulting(1));
        assert!(ws.refault(far, |n| if n == 1 { 6 } else { 0 }));
        assert!(ws.refaulting(1) && !ws.refaulting(0));
        assert_eq!(ws.totals(), (2, 1));
        // The activation advanced node 1's counter: `near` is now 8 events away.
        assert!(!ws.refault(near, |_| 7) && ws.refault(near, |_| 8));
        ws.snapshot(1);
        assert!(!ws.refaulting(1));
    }

    /// The counter wraps in the bits a shadow keeps without losing short distances.
    #[test]
    fn refault_distance_survives_the_counter_wrapping() {
        let mut ws = Workingset::new(4);
        assert_eq!(ws.node_bits, 2);
        ws.nodes[3].age = ws.age_mask() - 1;
        let shadow = ws.evict(3);
        for _ in 0..10 {
            ws.evict(3);
        }
        assert!(ws.nodes[3].age > ws.age_mask());
        assert!(ws.refault(shadow, |_| 10));
        assert!(!ws.refault(shadow, |_| 10), "11 events away now");
        assert_eq!(Workingset::new(1).node_bits, 0);
    }
}

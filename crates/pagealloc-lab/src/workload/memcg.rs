//! A memory cgroup with a limit, as little of one as a workload needs to be squeezed by it
//! (docs/workloads.md §1.5): a counter of the pages charged to the group, its page cache
//! oldest first, and reclaim of that page cache on the charging CPU when a charge would go
//! over the limit.
//!
//! What it imitates: `try_charge` (mm/memcontrol.c) charges a page to its cgroup after the
//! page was allocated (`mem_cgroup_charge` for anonymous and page-cache folios, `__GFP_ACCOUNT`
//! for page tables); when the group's usage would pass `memory.max`, the charging task
//! reclaims from its own group, synchronously, on its own CPU (`try_to_free_mem_cgroup_pages`,
//! at least `SWAP_CLUSTER_MAX` = 32 pages), and the folios reclaim frees go to the page
//! allocator from that CPU, through its pageset. Only clean page cache is reclaimable here:
//! the builds have no swap, and the object files sit on a memory-backed file system whose
//! pages the model treats as clean and droppable (a bias, docs/workloads.md §1.5).
//!
//! Known biases: the LRU is a plain FIFO of the group's page cache (no active/inactive lists,
//! no second chance for pages referenced again); anonymous memory is never reclaimed (no
//! swap), so a group whose anonymous memory alone exceeds its limit overruns it, which the
//! kernel answers with the memcg OOM killer and the model only counts (`overruns`); the
//! per-CPU charge stock (`MEMCG_CHARGE_BATCH`) is left out, every page is charged to the
//! shared counter at once; slab objects are not charged.

use std::collections::VecDeque;

use pagealloc::Pfn;

// Pages one reclaim pass frees at least: the `nr_to_reclaim` floor of
// `try_to_free_mem_cgroup_pages`.
use super::kswapd::SWAP_CLUSTER_MAX;

/// One memory cgroup: its usage, limit and reclaimable page cache.
#[derive(Debug, Default)]
pub struct Memcg {
    /// `memory.max` in pages; 0 for none.
    limit: u64,
    /// Pages charged now.
    usage: u64,
    /// Highest usage seen.
    peak: u64,
    /// The group's page cache, oldest first, with the CPU that wrote each page.
    cache: VecDeque<(u32, Pfn)>,
    /// Reclaim passes run.
    reclaims: u64,
    /// Pages those passes freed.
    reclaimed: u64,
    /// Charges that went over the limit with nothing left to reclaim.
    overruns: u64,
}

impl Memcg {
    /// A group limited to `limit` pages (0: unlimited, it only counts).
    pub fn new(limit: u64) -> Memcg {
        Memcg { limit, ..Memcg::default() }
    }

    /// Charge `nr` pages just allocated. When they would take the group over its limit,
    /// reclaim first: the oldest page cache, [`SWAP_CLUSTER_MAX`] pages a pass, until the
    /// charge fits or no page cache is left (then the charge goes over and is counted as an
    /// overrun). Returns the reclaimed pages, oldest first, already uncharged: the caller
    /// frees them on the charging CPU, after letting go of whatever lock guards the group, so
    /// that no lock shared between CPUs is held across an allocator call.
    pub fn charge(&mut self, nr: u64) -> Vec<Pfn> {
        let mut reclaimed = Vec::new();
        while self.limit > 0 && self.usage + nr > self.limit {
            if self.cache.is_empty() {
                self.overruns += 1;
                break;
            }
            self.reclaims += 1;
            for _ in 0..SWAP_CLUSTER_MAX {
                let Some((_, page)) = self.cache.pop_front() else { break };
                reclaimed.push(page);
                self.usage -= 1;
                self.reclaimed += 1;
            }
        }
        self.usage += nr;
        self.peak = self.peak.max(self.usage);
        reclaimed
    }

    /// `nr` charged pages were freed by their owner.
    pub fn uncharge(&mut self, nr: u64) {
        self.usage = self.usage.saturating_sub(nr);
    }

    /// A page-cache page, already charged, written on `cpu`: the newest on the group's LRU.
    pub fn add_cache(&mut self, cpu: u32, page: Pfn) {
        self.cache.push_back((cpu, page));
    }

    /// The page cache still held, oldest first, emptying the list (the run's give-back).
    pub fn take_cache(&mut self) -> impl Iterator<Item = (u32, Pfn)> + '_ {
        self.cache.drain(..)
    }

    /// Highest usage seen, pages.
    pub fn peak(&self) -> u64 {
        self.peak
    }

    /// Reclaim passes run.
    pub fn reclaims(&self) -> u64 {
        self.reclaims
    }

    /// Pages reclaimed.
    pub fn reclaimed(&self) -> u64 {
        self.reclaimed
    }

    /// Charges that went over the limit with nothing to reclaim.
    pub fn overruns(&self) -> u64 {
        self.overruns
    }
}

#[cfg(test)]
mod tests {
    use pagealloc_testkit::rng::Rng;

    use super::*;

    /// Two groups under random charges, cache writes and uncharges: a group never goes over
    /// its limit while it has page cache (never by a batch or more), every page reclaim frees
    /// is the charging group's own and its oldest, and the other group's cache is untouched.
    #[test]
    fn reclaim_keeps_the_limit_and_frees_only_the_groups_own_oldest_pages() {
        let mut rng = Rng::new(7);
        let limit = 500;
        let mut groups = [Memcg::new(limit), Memcg::new(limit)];
        let mut next = 0u64;
        let mut anon = [0u64; 2];
        for _ in 0..20_000 {
            let g = rng.below(2) as usize;
            let other = 1 - g;
            let before_other: Vec<_> = groups[other].cache.iter().copied().collect();
            let want: Vec<Pfn> = groups[g].cache.iter().map(|&(_, p)| p).collect();
            // A third of the charges are a page-cache page, the rest one or two anonymous
            // pages, some freed again (anonymous memory stays below half the limit, so there
            // is always cache to reclaim).
            let cache = rng.below(3) == 0;
            let nr = if cache { 1 } else { 1 + rng.below(2) };
            let freed = groups[g].charge(nr);
            assert_eq!(freed[..], want[..freed.len()], "oldest first, own pages only");
            // Whole passes of 32, unless the cache ran out.
            assert!(freed.len() as u64 % SWAP_CLUSTER_MAX == 0 || freed.len() == want.len());
            assert!(groups[g].usage <= limit, "{} over {limit}", groups[g].usage);
            let other_now: Vec<_> = groups[other].cache.iter().copied().collect();
            assert_eq!(before_other, other_now);
            if cache {
                groups[g].add_cache(g as u32, Pfn(next));
                next += 1;
            } else {
                anon[g] += nr;
                if anon[g] > limit / 2 {
                    let back = rng.below(anon[g]) + 1;
                    groups[g].uncharge(back);
                    anon[g] -= back;
                }
            }
        }
        for g in &groups {
            assert!(g.reclaims() > 0 && g.reclaimed() >= g.reclaims(), "{g:?}");
            assert!(g.peak() <= limit);
            assert_eq!(g.overruns(), 0);
        }
    }

    /// Nothing left to reclaim: the charge goes over and says so; without a limit nothing is
    /// ever reclaimed.
    #[test]
    fn anonymous_memory_alone_overruns_and_no_limit_never_reclaims() {
        let mut g = Memcg::new(10);
        for _ in 0..12 {
            assert_eq!(g.charge(1), [], "no page cache to reclaim");
        }
        assert_eq!((g.usage, g.overruns()), (12, 2));
        let mut free = Memcg::new(0);
        for i in 0..1000 {
            free.add_cache(0, Pfn(i));
            assert_eq!(free.charge(1), [], "unlimited");
        }
        assert_eq!((free.peak(), free.reclaims()), (1000, 0));
    }
}

//! Run a program against an allocator, checking every answer with the [`Oracle`] and,
//! as often as asked, every invariant with the validator.

use pagealloc::debug::{census, validate};
use pagealloc::page_frag::{MAX_FRAG_ALIGN, PAGE_FRAG_CACHE_MAX_SIZE};
use pagealloc::{
    AllocError, CompactMode, Cpu, CpuId, EventSink, FreeError, Gfp, Migrate, Order, PageAllocator,
    PageFragCache, Pfn, Target, ZoneIdx,
};

use crate::oracle::Oracle;
use crate::program::{op_order, BadFree, Op};

/// The flags page_frag caches refill with: network receive paths allocate atomically.
const FRAG_GFP: Gfp = Gfp::ATOMIC;

/// Freed blocks, and pages of freed fragments, remembered for double frees.
const FREED_KEPT: usize = 64;

/// How thoroughly to check.
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    /// Run the validator after every this many operations (0: only at the end).
    pub validate_every: usize,
    /// Free every live block at the end and check that everything came back.
    pub free_all_at_end: bool,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions { validate_every: 1, free_all_at_end: true }
    }
}

/// What a run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Allocations that succeeded.
    pub allocs: u64,
    /// Allocations refused with `OutOfMemory`.
    pub alloc_failures: u64,
    /// Frees of live blocks.
    pub frees: u64,
    /// Bad frees, all refused.
    pub bad_frees: u64,
    /// Fragments carved.
    pub frag_allocs: u64,
    /// Of which zero bytes long.
    pub frag_zero_size: u64,
    /// Fragment requests refused with `OutOfMemory`.
    pub frag_alloc_failures: u64,
    /// Fragment requests refused for their alignment or size (`InvalidAlign`, `FragTooLarge`).
    pub frag_bad_requests: u64,
    /// Fragments freed.
    pub frag_frees: u64,
    /// Cache drains.
    pub frag_drains: u64,
    /// Second frees of a fragment, all refused.
    pub frag_double_frees: u64,
    /// `free_pages` of a page_frag page others hold, all refused (`StillReferenced`).
    pub frag_still_referenced: u64,
    /// `free_pages` of a page_frag page with one fragment left, which frees it.
    pub frag_pages_freed: u64,
    /// Compactions run.
    pub compactions: u64,
    /// Pages they moved.
    pub migrated: u64,
}

/// The first thing that went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Index of the operation (the program's length for end-of-run checks).
    pub step: usize,
    /// The operation, if the failure belongs to one.
    pub op: Option<Op>,
    /// What was wrong.
    pub what: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.op {
            Some(op) => write!(f, "step {} ({op:?}): {}", self.step, self.what),
            None => write!(f, "after step {}: {}", self.step, self.what),
        }
    }
}

impl std::error::Error for Failure {}

/// Execute `ops` on `pa`.
pub fn run<E: EventSink>(
    pa: &PageAllocator<E>,
    ops: &[Op],
    opts: RunOptions,
) -> Result<(RunStats, Oracle), Failure> {
    let mut oracle = Oracle::new();
    let mut stats = RunStats::default();
    let mut freed: Vec<(Pfn, Order)> = Vec::new();
    let nr_cpus = pa.nr_cpus();
    let cpu_of = |c: u32| pa.cpu(CpuId(c % nr_cpus)).expect("cpu in range");
    let mut frags =
        Frags { caches: (0..nr_cpus).map(|_| PageFragCache::new()).collect(), freed: Vec::new() };
    for (step, &op) in ops.iter().enumerate() {
        let fail = |what: String| Failure { step, op: Some(op), what };
        match op {
            Op::Alloc { cpu, gfp, order } => {
                let order = op_order(order);
                match pa.alloc_pages(cpu_of(cpu), gfp.gfp(), order) {
                    Ok(pfn) => {
                        oracle.on_alloc(pa, pfn, order, gfp.gfp()).map_err(fail)?;
                        stats.allocs += 1;
                    }
                    Err(AllocError::OutOfMemory { .. }) => stats.alloc_failures += 1,
                    Err(e) => return Err(fail(format!("unexpected allocation error {e}"))),
                }
            }
            Op::Free { cpu, slot } => {
                let Some((pfn, live)) = pick(&oracle, slot) else { continue };
                pa.free_pages(cpu_of(cpu), pfn, live.order)
                    .map_err(|e| fail(format!("free of live block {pfn} refused: {e}")))?;
                oracle.on_free(pfn, live.order).map_err(fail)?;
                remember(&mut freed, (pfn, live.order));
                stats.frees += 1;
            }
            Op::Tick { cpu } => {
                pa.tick(cpu_of(cpu));
            }
            Op::DrainAll { cpu } => pa.drain_all_pages(cpu_of(cpu), None),
            Op::DrainCpu { cpu, target } => pa.drain_pages(cpu_of(cpu), CpuId(target % nr_cpus)),
            Op::Compact { cpu, zone, order, mode } => {
                let zone = ZoneIdx(zone % pa.zones().len() as u16);
                let order = (order <= 10).then_some(Order(order));
                let mode = match mode {
                    0 => CompactMode::Async,
                    1 => CompactMode::SyncLight,
                    _ => CompactMode::Sync,
                };
                let mut mover = Mover { pa, oracle: &mut oracle, error: None };
                let out = pa
                    .compact_zone(cpu_of(cpu), zone, order, mode, &mut mover)
                    .map_err(|e| fail(format!("compaction refused: {e}")))?;
                if let Some(e) = mover.error {
                    return Err(fail(e));
                }
                stats.compactions += 1;
                stats.migrated += out.stats.migrated;
            }
            Op::ReclaimActive { zone, on } => {
                let nr_zones = pa.zones().len() as u16;
                pa.set_reclaim_active(ZoneIdx(zone % nr_zones), on);
            }
            Op::BadFree { cpu, slot, kind } => {
                let Some((pfn, order)) = bad_free_target(&oracle, &freed, slot, kind) else {
                    continue;
                };
                if oracle.free_is_valid(pfn, order) {
                    continue;
                }
                let before = free_counts(pa);
                match pa.free_pages(cpu_of(cpu), pfn, order) {
                    Ok(()) => {
                        return Err(fail(format!(
                            "bad free ({kind:?}) of {pfn} order {} accepted",
                            order.0
                        )))
                    }
                    Err(e) if !expected(kind, e) => {
                        return Err(fail(format!(
                            "bad free ({kind:?}) gave the wrong error {e:?}"
                        )));
                    }
                    Err(_) => {}
                }
                if free_counts(pa) != before {
                    return Err(fail("a refused free changed the free page counts".into()));
                }
                stats.bad_frees += 1;
            }
            Op::FragAlloc { .. }
            | Op::FragFree { .. }
            | Op::FragDrain { .. }
            | Op::FragFreeTwice { .. }
            | Op::FragFreePages { .. } => {
                frags.step(pa, &mut oracle, &mut stats, op).map_err(fail)?
            }
        }
        if opts.validate_every > 0 && (step + 1) % opts.validate_every == 0 {
            check_state(pa, &oracle).map_err(fail)?;
        }
    }
    let end = ops.len();
    check_state(pa, &oracle).map_err(|what| Failure { step: end, op: None, what })?;
    if opts.free_all_at_end {
        let cpu = cpu_of(0);
        let end_fail = |what: String| Failure { step: end, op: None, what };
        frags.give_back(pa, &mut oracle).map_err(end_fail)?;
        while let Some((pfn, live)) = oracle.nth(0) {
            pa.free_pages(cpu, pfn, live.order).map_err(|e| Failure {
                step: end,
                op: None,
                what: format!("final free of {pfn}: {e}"),
            })?;
            oracle.on_free(pfn, live.order).map_err(|what| Failure {
                step: end,
                op: None,
                what,
            })?;
        }
        check_state(pa, &oracle).map_err(|what| Failure { step: end, op: None, what })?;
        // Once every pageset is drained, every page is back and merged as far as it can.
        pa.drain_all_pages(cpu, None);
        if pa.nr_free_pages() != pa.managed_pages() && isolated_pages(pa) == 0 {
            return Err(Failure {
                step: end,
                op: None,
                what: format!(
                    "after freeing and draining everything {} of {} pages are free",
                    pa.nr_free_pages().0,
                    pa.managed_pages().0
                ),
            });
        }
    }
    Ok((stats, oracle))
}

/// The run's owner of every block, for compaction: each move is checked by the oracle; every
/// seventh frame is pinned.
struct Mover<'a, E: EventSink> {
    pa: &'a PageAllocator<E>,
    oracle: &'a mut Oracle,
    /// The first rule a move broke.
    error: Option<String>,
}

impl<E: EventSink> Migrate for Mover<'_, E> {
    fn migrate(&mut self, from: Pfn, to: Target<'_>, order: Order) -> bool {
        if self.error.is_some() || from.0 % 7 == 0 {
            return false;
        }
        match self.oracle.on_migrate(self.pa, from, to.pfn(), order) {
            Ok(()) => true,
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }
}

/// The validator, plus the census agreeing with the oracle on how much is allocated.
pub fn check_state<E: EventSink>(pa: &PageAllocator<E>, oracle: &Oracle) -> Result<(), String> {
    validate(pa).map_err(|v| v.to_string())?;
    let c = census(pa);
    if c.allocated != oracle.live_pages() {
        return Err(format!(
            "allocator holds {} allocated pages, oracle {}",
            c.allocated,
            oracle.live_pages()
        ));
    }
    Ok(())
}

/// Pages on ISOLATE lists (not counted as free).
fn isolated_pages<E: EventSink>(pa: &PageAllocator<E>) -> u64 {
    let c = census(pa);
    c.free.saturating_sub(pa.nr_free_pages().0)
}

/// Free pages in the buddy lists and pages on the per-CPU lists: what a refused call must
/// leave as it was.
fn free_counts<E: EventSink>(pa: &PageAllocator<E>) -> (u64, u64) {
    (pa.nr_free_pages().0, pa.zones().iter().map(|z| z.pcp_pages()).sum())
}

/// Push `x` on a list of the last [`FREED_KEPT`] freed things.
fn remember<T>(list: &mut Vec<T>, x: T) {
    list.push(x);
    if list.len() > FREED_KEPT {
        list.remove(0);
    }
}

/// The page_frag side of a run: one cache per CPU, and the pages of recently freed fragments.
struct Frags {
    caches: Vec<PageFragCache>,
    freed: Vec<Pfn>,
}

impl Frags {
    /// Run the page_frag op `op`, checking the answer with the oracle; `Err` says what was
    /// wrong.
    fn step<E: EventSink>(
        &mut self,
        pa: &PageAllocator<E>,
        oracle: &mut Oracle,
        stats: &mut RunStats,
        op: Op,
    ) -> Result<(), String> {
        let nr_cpus = pa.nr_cpus();
        let cpu_of = |c: u32| pa.cpu(CpuId(c % nr_cpus)).expect("cpu in range");
        match op {
            Op::FragAlloc { cpu, size, align } => {
                self.alloc(pa, oracle, stats, cpu % nr_cpus, size, align)?;
            }
            Op::FragFree { cpu, slot } => {
                let n = oracle.frag_count();
                let Some((page, offset, len)) = oracle.nth_frag(slot as usize % n.max(1)) else {
                    return Ok(());
                };
                pa.page_frag_free(cpu_of(cpu), page)
                    .map_err(|e| format!("free of live fragment {page}+{offset} refused: {e}"))?;
                oracle.on_frag_free(page, offset, len)?;
                remember(&mut self.freed, page);
                stats.frag_frees += 1;
            }
            Op::FragDrain { cpu } => {
                let c = cpu % nr_cpus;
                let cache = &mut self.caches[c as usize];
                cache.drain(pa, cpu_of(c)).map_err(|e| format!("drain refused: {e}"))?;
                oracle.on_frag_cache(pa, c, cache.page(), FRAG_GFP)?;
                stats.frag_drains += 1;
            }
            Op::FragFreeTwice { cpu, slot } => {
                self.free_twice(pa, oracle, stats, cpu_of(cpu), slot)?
            }
            Op::FragFreePages { cpu, slot } => {
                self.free_pages(pa, oracle, stats, cpu_of(cpu), slot)?;
            }
            _ => unreachable!("run() hands Frags::step page_frag ops only"),
        }
        Ok(())
    }

    /// Carve a fragment from `cpu`'s cache. A bad alignment or size must be refused with its
    /// error before anything changes; a good request gets a fragment the oracle accepts, or
    /// `OutOfMemory`.
    fn alloc<E: EventSink>(
        &mut self,
        pa: &PageAllocator<E>,
        oracle: &mut Oracle,
        stats: &mut RunStats,
        cpu: u32,
        size: u32,
        align: u32,
    ) -> Result<(), String> {
        let bad_align = !align.is_power_of_two() || align > MAX_FRAG_ALIGN;
        let too_large = size > PAGE_FRAG_CACHE_MAX_SIZE;
        let cache = &mut self.caches[cpu as usize];
        let before = (cache.page(), free_counts(pa));
        let handle = pa.cpu(CpuId(cpu)).expect("cpu in range");
        match cache.alloc(pa, handle, size, FRAG_GFP, align) {
            Err(AllocError::InvalidAlign(a)) if bad_align && a == align => {}
            Err(AllocError::FragTooLarge { size: s }) if !bad_align && too_large && s == size => {}
            Ok(frag) if !bad_align && !too_large => {
                oracle.on_frag_cache(pa, cpu, cache.page(), FRAG_GFP)?;
                oracle.on_frag_alloc(cpu, frag, size, align)?;
                stats.frag_allocs += 1;
                stats.frag_zero_size += u64::from(size == 0);
                return Ok(());
            }
            Err(AllocError::OutOfMemory { .. }) if !bad_align && !too_large => {
                oracle.on_frag_cache(pa, cpu, cache.page(), FRAG_GFP)?;
                stats.frag_alloc_failures += 1;
                return Ok(());
            }
            r => {
                return Err(format!(
                    "fragment of {size} bytes aligned to {align} got {r:?}{}",
                    if bad_align || too_large {
                        "; it must be refused for its arguments"
                    } else {
                        ""
                    }
                ))
            }
        }
        if (cache.page(), free_counts(pa)) != before {
            return Err("a refused fragment request changed the cache or the free counts".into());
        }
        stats.frag_bad_requests += 1;
        Ok(())
    }

    /// Free again the fragment of a page already gone: refused, nothing changed. A page that
    /// is live again (as a block or a page_frag page) is skipped: the free would drop its new
    /// holder's reference, which no allocator can tell from a good free.
    fn free_twice<E: EventSink>(
        &mut self,
        pa: &PageAllocator<E>,
        oracle: &Oracle,
        stats: &mut RunStats,
        cpu: Cpu,
        slot: u32,
    ) -> Result<(), String> {
        let Some(&page) = self.freed.get(slot as usize % self.freed.len().max(1)) else {
            return Ok(());
        };
        if oracle.occupied(page) {
            return Ok(());
        }
        let before = free_counts(pa);
        match pa.page_frag_free(cpu, page) {
            Err(FreeError::NotAllocated { pfn } | FreeError::DoubleFree { pfn }) if pfn == page => {
            }
            r => return Err(format!("second free of a fragment of gone page {page} got {r:?}")),
        }
        if free_counts(pa) != before {
            return Err("a refused fragment free changed the free page counts".into());
        }
        stats.frag_double_frees += 1;
        Ok(())
    }

    /// `free_pages` of a live page_frag page: refused while its cache or two fragments hold
    /// it (with the count of references when no cache does), the page freed when one
    /// fragment is left.
    fn free_pages<E: EventSink>(
        &mut self,
        pa: &PageAllocator<E>,
        oracle: &mut Oracle,
        stats: &mut RunStats,
        cpu: Cpu,
        slot: u32,
    ) -> Result<(), String> {
        let Some((page, fp)) =
            oracle.nth_frag_page(slot as usize % oracle.frag_page_count().max(1))
        else {
            return Ok(());
        };
        let (order, held, out) = (fp.order, fp.cache.is_some(), fp.frags.len() as u32);
        let before = free_counts(pa);
        match pa.free_pages(cpu, page, order) {
            Ok(()) => {
                oracle.on_frag_page_freed(page)?;
                remember(&mut self.freed, page);
                stats.frag_pages_freed += 1;
                return Ok(());
            }
            Err(FreeError::StillReferenced { pfn, refs })
                if pfn == page
                    && (held || out >= 2)
                    && (if held { refs >= out + 2 } else { refs == out }) => {}
            r => {
                return Err(format!(
                    "free_pages of page_frag page {page} ({} cache, {out} fragments out) got {r:?}",
                    if held { "its" } else { "no" }
                ))
            }
        }
        if free_counts(pa) != before {
            return Err("a refused free_pages changed the free page counts".into());
        }
        stats.frag_still_referenced += 1;
        Ok(())
    }

    /// At the end of a run: free every live fragment and drain every cache, so every
    /// page_frag page goes back.
    fn give_back<E: EventSink>(
        &mut self,
        pa: &PageAllocator<E>,
        oracle: &mut Oracle,
    ) -> Result<(), String> {
        let cpu = pa.cpu(CpuId(0)).expect("cpu 0 exists");
        while let Some((page, offset, len)) = oracle.nth_frag(0) {
            pa.page_frag_free(cpu, page)
                .map_err(|e| format!("final free of fragment {page}+{offset}: {e}"))?;
            oracle.on_frag_free(page, offset, len)?;
        }
        for (c, cache) in self.caches.iter_mut().enumerate() {
            let handle = pa.cpu(CpuId(c as u32)).expect("one cache per cpu");
            cache.drain(pa, handle).map_err(|e| format!("final drain of cpu {c}'s cache: {e}"))?;
            oracle.on_frag_cache(pa, c as u32, cache.page(), FRAG_GFP)?;
        }
        match oracle.frag_page_count() {
            0 => Ok(()),
            n => {
                Err(format!("{n} page_frag page(s) still live after every fragment and cache went"))
            }
        }
    }
}

fn pick(oracle: &Oracle, slot: u32) -> Option<(Pfn, crate::oracle::Live)> {
    if oracle.is_empty() {
        return None;
    }
    oracle.nth(slot as usize % oracle.len())
}

fn bad_free_target(
    oracle: &Oracle,
    freed: &[(Pfn, Order)],
    slot: u32,
    kind: BadFree,
) -> Option<(Pfn, Order)> {
    match kind {
        BadFree::Double => {
            let &(p, o) = freed.get(slot as usize % freed.len().max(1))?;
            // Reallocated since (as itself, inside a bigger block or as a page_frag page)?
            // Then it is not a double free.
            (!oracle.occupied(p)).then_some((p, o))
        }
        BadFree::WrongOrder => {
            let (p, l) = pick(oracle, slot)?;
            (l.order.0 < 10).then_some((p, Order(l.order.0 + 1)))
        }
        BadFree::Tail => {
            let (p, l) = pick(oracle, slot)?;
            (l.order.0 >= 1).then_some((Pfn(p.0 + 1), Order(0)))
        }
        BadFree::Misaligned => {
            let (p, l) = pick(oracle, slot)?;
            (l.order.0 >= 1).then_some((Pfn(p.0 + 1), Order(1)))
        }
        BadFree::Foreign => Some((Pfn(1 << 51), Order(0))),
        BadFree::HugeOrder => pick(oracle, slot).map(|(p, _)| (p, Order(11))),
    }
}

fn expected(kind: BadFree, e: FreeError) -> bool {
    match kind {
        BadFree::Double => {
            matches!(e, FreeError::DoubleFree { .. } | FreeError::NotAllocated { .. })
        }
        BadFree::WrongOrder => {
            matches!(e, FreeError::WrongOrder { .. } | FreeError::Misaligned { .. })
        }
        BadFree::Tail => matches!(e, FreeError::TailPage { .. }),
        BadFree::Misaligned => matches!(e, FreeError::Misaligned { .. }),
        BadFree::Foreign => matches!(e, FreeError::ForeignFrame(_)),
        BadFree::HugeOrder => matches!(e, FreeError::InvalidOrder(_)),
    }
}

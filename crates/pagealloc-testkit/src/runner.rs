//! Run a program against an allocator, checking every answer with the [`Oracle`] and,
//! as often as asked, every invariant with the validator.

use pagealloc::debug::{census, validate};
use pagealloc::{AllocError, CpuId, EventSink, FreeError, Order, PageAllocator, Pfn};

use crate::oracle::Oracle;
use crate::program::{op_order, BadFree, Op};

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
                freed.push((pfn, live.order));
                if freed.len() > 64 {
                    freed.remove(0);
                }
                stats.frees += 1;
            }
            Op::Tick { cpu } => {
                pa.tick(cpu_of(cpu));
            }
            Op::DrainAll { cpu } => pa.drain_all_pages(cpu_of(cpu), None),
            Op::DrainCpu { cpu, target } => pa.drain_pages(cpu_of(cpu), CpuId(target % nr_cpus)),
            Op::ReclaimActive { zone, on } => {
                let nr_zones = pa.zones().len() as u16;
                pa.set_reclaim_active(pagealloc::ZoneIdx(zone % nr_zones), on);
            }
            Op::BadFree { cpu, slot, kind } => {
                let Some((pfn, order)) = bad_free_target(&oracle, &freed, slot, kind) else {
                    continue;
                };
                if oracle.free_is_valid(pfn, order) {
                    continue;
                }
                let free_before = pa.nr_free_pages();
                let pcp_before: u64 = pa.zones().iter().map(|z| z.pcp_pages()).sum();
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
                let pcp_after: u64 = pa.zones().iter().map(|z| z.pcp_pages()).sum();
                if pa.nr_free_pages() != free_before || pcp_after != pcp_before {
                    return Err(fail("a refused free changed the free page counts".into()));
                }
                stats.bad_frees += 1;
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
            // Reallocated since (as itself or inside a bigger block)? Then it is not a double free.
            oracle.covering(p).is_none().then_some((p, o))
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

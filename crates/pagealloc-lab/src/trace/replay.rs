//! A parsed trace as a model workload: each CPU replays the trace's allocations and frees on
//! the same CPU, in trace order, paced by the trace's time stamps in virtual time.
//!
//! The trace's PFNs are the kernel's; ours differ. A [`Plan`] is made first, by walking the
//! trace once in file order with the kernel's PFNs: every successful `mm_page_alloc` gets a
//! *slot* that will hold the block our allocator returns for it, and every free is resolved
//! to the slot of the traced block it frees. What cannot be replayed is decided there and
//! counted ([`Kind`]):
//!
//! - a free of a page the trace never allocated was allocated before tracing began;
//! - a free of a page already freed with no allocation between is a repeated free;
//! - an allocation of a page still allocated in the trace means its free was not traced
//!   (lost events, or tracing started on that CPU late): the old block is freed first;
//! - order-0 frees of pages inside a larger traced block (`split_page`) free the block when
//!   its last page goes; a free of a larger order that covers blocks frees them;
//! - a failed allocation in the kernel is not replayed.
//!
//! Replaying, a CPU runs its next step when the virtual clock reaches the step's trace time
//! (trace time − first event's time). A step that frees a block another CPU allocates waits
//! (blocks) until that allocation has run: the trace's order between CPUs is kept wherever
//! one CPU's step depends on another's, so a free never runs before its allocation even when
//! our allocator makes the allocating CPU run late. The earliest step not yet run never
//! waits on anything, so the replay cannot deadlock.
//!
//! `mm_page_pcpu_drain`, `mm_page_alloc_zone_locked` and `mm_page_alloc_extfrag` are not
//! replayed: they are what the kernel's allocator did, set beside what ours does for the same
//! stream ([`super::EventCounts`]).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt;

use anyhow::{bail, Result};
use pagealloc::memory_map::MAX_CPUS;
use pagealloc::{Gfp, Order, Pfn, TraceEvent};

use super::{cpu_of, EventCounts, Kind, Tally, Trace};
use crate::machine::{fmt_bytes, Arch, CacheLevel, Machine, NodeSpec};
use crate::model::{Ctx, ModelInfo, Next, SerialWorkload, MAX_CLOCK_PS, PS_PER_S};

/// Nanoseconds to the model's picoseconds.
const PS_PER_NS: u64 = 1000;

/// Why a trace cannot be replayed: each names the line of the event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanError {
    /// A CPU number no machine has.
    Cpu {
        /// The event's line.
        line: u64,
        /// The CPU.
        cpu: u32,
    },
    /// A block whose last frame is past `u64::MAX`.
    Pfn {
        /// The event's line.
        line: u64,
        /// Its first frame.
        pfn: u64,
        /// Its order.
        order: u8,
    },
    /// A trace spanning more virtual time than the model's clock holds.
    Span {
        /// The event's line.
        line: u64,
        /// The line of the earliest event.
        first_line: u64,
        /// Nanoseconds from the earliest event.
        span_ns: u64,
    },
}

impl PlanError {
    /// The line of the event refused.
    pub fn line(&self) -> u64 {
        match *self {
            PlanError::Cpu { line, .. }
            | PlanError::Pfn { line, .. }
            | PlanError::Span { line, .. } => line,
        }
    }
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PlanError::Cpu { cpu, .. } => write!(
                f,
                "CPU {cpu}: a machine has at most {MAX_CPUS} CPUs (0–{}); a garbled line?",
                MAX_CPUS - 1
            ),
            PlanError::Pfn { pfn, order, .. } => write!(
                f,
                "PFN {pfn:#x} order {order}: the block runs past the last frame number a \
                 64-bit kernel can print; a garbled line?"
            ),
            PlanError::Span { first_line, span_ns, .. } => write!(
                f,
                "this event comes {:.0} s after the earliest (line {first_line}), more than the \
                 {:.0} s (about {} days) the model's clock holds; replay a shorter part of the \
                 trace (a garbled time stamp, or a counter clock read as nanoseconds?)",
                span_ns as f64 / 1e9,
                MAX_CLOCK_PS as f64 / PS_PER_S as f64,
                MAX_CLOCK_PS / PS_PER_S / 86_400
            ),
        }
    }
}

impl std::error::Error for PlanError {}

/// What a step does.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Action {
    /// Free the blocks of `release` (allocated again without a traced free), then allocate
    /// `order` with `gfp` into `slot`.
    Alloc { release: Vec<u32>, slot: u32, order: Order, gfp: Gfp },
    /// Free the blocks in these slots.
    Free { slots: Vec<u32> },
}

/// One replayed event.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Step {
    /// Trace time from the first event, ps.
    t_ps: u64,
    cpu: u32,
    action: Action,
    /// Steps (on other CPUs) that must have run first: the allocations of the slots freed.
    deps: Vec<u32>,
}

/// A traced block still allocated, during planning.
#[derive(Clone, Copy, Debug)]
struct Live {
    slot: u32,
    order: Order,
    /// The step that allocates it.
    step: u32,
    /// Pages of it freed one by one so far.
    freed: u64,
}

/// The trace turned into steps per CPU.
#[derive(Clone, Debug)]
pub struct Plan {
    steps: Vec<Step>,
    nr_slots: u32,
    /// What planning skipped and repaired.
    pub tally: Tally,
    /// The kernel's side: every page event of the trace.
    pub kernel: EventCounts,
    /// The highest CPU with an event.
    pub max_cpu: u32,
    /// Trace time from the first to the last event, ns.
    pub duration_ns: u64,
    /// The highest PFN the trace names (its machine has at least this much memory).
    pub max_pfn: u64,
    /// Most pages the trace held allocated at once (traced allocations only).
    pub peak_pages: u64,
}

impl Plan {
    /// Plan the replay of `trace`.
    ///
    /// # Errors
    /// [`PlanError`]: a CPU number, a PFN or a time span no machine or clock holds.
    pub fn new(trace: &Trace) -> Result<Plan, PlanError> {
        let first = trace.events.iter().min_by_key(|e| e.t_ns);
        let (t0, first_line) = first.map_or((0, 0), |e| (e.t_ns, e.line));
        for te in &trace.events {
            check_event(te, t0, first_line)?;
        }
        let mut p = Plan {
            steps: Vec::new(),
            nr_slots: 0,
            tally: Tally::default(),
            kernel: trace.counts(),
            max_cpu: trace.max_cpu().unwrap_or(0),
            duration_ns: trace.events.iter().map(|e| e.t_ns).max().unwrap_or(0) - t0,
            max_pfn: 0,
            peak_pages: 0,
        };
        // Traced blocks by first PFN; PFNs freed and not allocated since.
        let mut live: BTreeMap<u64, Live> = BTreeMap::new();
        let mut freed: HashSet<u64> = HashSet::new();
        let mut held = 0u64;
        for te in &trace.events {
            // In range: `check_event` saw every event.
            let t_ps = (te.t_ns - t0) * PS_PER_NS;
            let cpu = cpu_of(&te.event);
            let (pfn, order, alloc_gfp) = match te.event {
                TraceEvent::PageAlloc { pfn: Some(pfn), order, gfp, .. } => (pfn, order, Some(gfp)),
                TraceEvent::PageAlloc { pfn: None, .. } => {
                    p.tally.add(Kind::KernelAllocFailed);
                    continue;
                }
                TraceEvent::PageFree { pfn, order, .. } => (pfn, order, None),
                TraceEvent::PageFreeBatched { pfn, .. } => (pfn, Order(0), None),
                TraceEvent::PagePcpuDrain { pfn, order, .. }
                | TraceEvent::PageAllocZoneLocked { pfn, order, .. } => {
                    p.max_pfn = p.max_pfn.max(last_pfn(pfn, order));
                    continue;
                }
                TraceEvent::PageAllocExtfrag { pfn, .. } => {
                    p.max_pfn = p.max_pfn.max(pfn.0);
                    continue;
                }
                // Parsed traces hold only the kinds above; a newer one replays as nothing.
                _ => continue,
            };
            p.max_pfn = p.max_pfn.max(last_pfn(pfn, order));
            let range = pfn.0..pfn.0 + order.nr_pages().0;
            let overlapping: Vec<u64> = overlapping(&live, &range);
            let step = p.steps.len() as u32;
            if let Some(gfp) = alloc_gfp {
                let mut release = Vec::new();
                let mut deps = Vec::new();
                for head in overlapping {
                    let old = live.remove(&head).expect("listed as live");
                    p.tally.add(Kind::Reallocated);
                    held -= old.order.nr_pages().0;
                    release.push(old.slot);
                    deps.push(old.step);
                }
                let slot = p.nr_slots;
                p.nr_slots += 1;
                live.insert(pfn.0, Live { slot, order, step, freed: 0 });
                freed.remove(&pfn.0);
                held += order.nr_pages().0;
                p.peak_pages = p.peak_pages.max(held);
                deps.retain(|&d| p.steps[d as usize].cpu != cpu);
                p.steps.push(Step {
                    t_ps,
                    cpu,
                    action: Action::Alloc { release, slot, order, gfp },
                    deps,
                });
                continue;
            }
            if overlapping.is_empty() {
                p.tally.add(if freed.contains(&pfn.0) {
                    Kind::FreeTwice
                } else {
                    Kind::FreeUnknown
                });
                freed.insert(pfn.0);
                continue;
            }
            let mut slots = Vec::new();
            let mut deps = Vec::new();
            for head in overlapping {
                let b = live.get_mut(&head).expect("listed as live");
                let size = b.order.nr_pages().0;
                let inside = range.start <= head && head + size <= range.end;
                if !inside {
                    // Part of a larger block: freed when its last page is.
                    p.tally.add(Kind::SplitFree);
                    b.freed += range.end.min(head + size) - range.start.max(head);
                    if b.freed < size {
                        continue;
                    }
                } else if head != pfn.0 || b.order != order {
                    p.tally.add(Kind::OrderMismatch);
                }
                let b = live.remove(&head).expect("listed as live");
                held -= size;
                slots.push(b.slot);
                deps.push(b.step);
            }
            freed.insert(pfn.0);
            if slots.is_empty() {
                continue;
            }
            deps.retain(|&d| p.steps[d as usize].cpu != cpu);
            p.steps.push(Step { t_ps, cpu, action: Action::Free { slots }, deps });
        }
        Ok(p)
    }

    /// Steps that will run.
    pub fn nr_steps(&self) -> usize {
        self.steps.len()
    }
}

/// Refuse an event no machine or clock can replay, before anything is sized from it: a CPU
/// of `u32::MAX` made `CPUs = highest + 1` wrap to 0, a block ending past `u64::MAX` wrapped
/// the fitted memory to 1 GiB, and the picosecond clock overflowed on a long trace.
fn check_event(te: &super::TimedEvent, t0: u64, first_line: u64) -> Result<(), PlanError> {
    let line = te.line;
    let cpu = cpu_of(&te.event);
    if cpu >= MAX_CPUS {
        return Err(PlanError::Cpu { line, cpu });
    }
    let block = match te.event {
        TraceEvent::PageAlloc { pfn: Some(pfn), order, .. }
        | TraceEvent::PageFree { pfn, order, .. }
        | TraceEvent::PagePcpuDrain { pfn, order, .. }
        | TraceEvent::PageAllocZoneLocked { pfn, order, .. } => Some((pfn, order)),
        TraceEvent::PageFreeBatched { pfn, .. } | TraceEvent::PageAllocExtfrag { pfn, .. } => {
            Some((pfn, Order(0)))
        }
        TraceEvent::PageAlloc { pfn: None, .. } => None,
        _ => None,
    };
    if let Some((pfn, order)) = block {
        if pfn.0.checked_add(order.nr_pages().0).is_none() {
            return Err(PlanError::Pfn { line, pfn: pfn.0, order: order.0 });
        }
    }
    let span_ns = te.t_ns - t0;
    if span_ns.checked_mul(PS_PER_NS).is_none_or(|ps| ps > MAX_CLOCK_PS) {
        return Err(PlanError::Span { line, first_line, span_ns });
    }
    Ok(())
}

/// Last PFN of a block.
fn last_pfn(pfn: Pfn, order: Order) -> u64 {
    pfn.0 + order.nr_pages().0 - 1
}

/// First PFNs of the live blocks that overlap `range`.
fn overlapping(live: &BTreeMap<u64, Live>, range: &std::ops::Range<u64>) -> Vec<u64> {
    let mut out = Vec::new();
    // The block starting at or before the range's start may reach into it.
    if let Some((&head, b)) = live.range(..=range.start).next_back() {
        if head + b.order.nr_pages().0 > range.start {
            out.push(head);
        }
    }
    out.extend(live.range(range.start + 1..range.end).map(|(&h, _)| h));
    out
}

/// The replay workload.
#[derive(Debug)]
pub struct Replay {
    steps: Vec<Step>,
    /// Step indices per CPU, in trace order.
    queues: Vec<VecDeque<u32>>,
    done: Vec<bool>,
    /// CPUs blocked on a step, by the step they wait for.
    waiters: HashMap<u32, Vec<u32>>,
    /// Our block for each traced allocation: (first frame, order, CPU that allocated it).
    slots: Vec<Option<(Pfn, Order, u32)>>,
    /// What the replay itself had to skip.
    tally: Tally,
    run: u64,
    /// How far the model ran behind the trace's clock, ps: the largest and the sum.
    lag_max_ps: u64,
    lag_sum_ps: u128,
}

impl Replay {
    /// The workload for `plan`.
    pub fn new(plan: &Plan) -> Replay {
        let nr_cpus = plan.max_cpu as usize + 1;
        let mut queues = vec![VecDeque::new(); nr_cpus];
        for (i, s) in plan.steps.iter().enumerate() {
            queues[s.cpu as usize].push_back(i as u32);
        }
        Replay {
            steps: plan.steps.clone(),
            queues,
            done: vec![false; plan.steps.len()],
            waiters: HashMap::new(),
            slots: vec![None; plan.nr_slots as usize],
            tally: Tally::default(),
            run: 0,
            lag_max_ps: 0,
            lag_sum_ps: 0,
        }
    }

    /// What replaying skipped (frees of blocks our model failed to allocate).
    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    fn free_slot(&mut self, ctx: &mut Ctx<'_>, slot: u32) -> Result<()> {
        match self.slots[slot as usize].take() {
            Some((pfn, order, _)) => ctx.free(pfn, order),
            None => {
                self.tally.add(Kind::OursAllocFailed);
                Ok(())
            }
        }
    }
}

impl SerialWorkload for Replay {
    fn start(&mut self, info: &ModelInfo) -> Result<Vec<u32>> {
        if self.queues.len() > info.nr_cpus as usize {
            anyhow::bail!(
                "the trace has events on CPU {}, the machine has {} CPUs",
                self.queues.len() - 1,
                info.nr_cpus
            );
        }
        Ok((0..self.queues.len() as u32).filter(|&c| !self.queues[c as usize].is_empty()).collect())
    }

    fn step(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
        let c = ctx.cpu();
        let Some(&i) = self.queues[c as usize].front() else { return Ok(Next::Done) };
        let step = &self.steps[i as usize];
        if step.t_ps > ctx.now() {
            return Ok(Next::SleepUntil(step.t_ps));
        }
        if let Some(&d) = step.deps.iter().find(|&&d| !self.done[d as usize]) {
            self.waiters.entry(d).or_default().push(c);
            return Ok(Next::Block);
        }
        let lag = ctx.now() - step.t_ps;
        self.lag_max_ps = self.lag_max_ps.max(lag);
        self.lag_sum_ps += u128::from(lag);
        self.queues[c as usize].pop_front();
        match step.action.clone() {
            Action::Alloc { release, slot, order, gfp } => {
                for r in release {
                    self.free_slot(ctx, r)?;
                }
                self.slots[slot as usize] = ctx.alloc(gfp, order).map(|pfn| (pfn, order, c));
            }
            Action::Free { slots } => {
                for s in slots {
                    self.free_slot(ctx, s)?;
                }
            }
        }
        self.done[i as usize] = true;
        self.run += 1;
        for w in self.waiters.remove(&i).unwrap_or_default() {
            ctx.wake(w, ctx.now());
        }
        Ok(if self.queues[c as usize].is_empty() { Next::Done } else { Next::Continue })
    }

    fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
        self.slots
            .iter_mut()
            .filter_map(Option::take)
            .map(|(pfn, order, cpu)| (cpu, pfn, order))
            .collect()
    }

    fn metrics(&self) -> Vec<(String, f64)> {
        let mean = if self.run == 0 { 0.0 } else { self.lag_sum_ps as f64 / self.run as f64 };
        vec![
            ("replayed_events".into(), self.run as f64),
            ("behind_trace_max_us".into(), self.lag_max_ps as f64 / 1e6),
            ("behind_trace_mean_us".into(), mean / 1e6),
        ]
    }

    fn progress(&self) -> f64 {
        if self.steps.is_empty() {
            1.0
        } else {
            self.run as f64 / self.steps.len() as f64
        }
    }
}

/// Bytes in a GiB: the fitted machine's memory is a whole number of them.
const GIB: u64 = 1 << 30;
/// The most memory a fitted machine gets: its mem_map costs the model 16 bytes a frame
/// (4 GiB at 1 TiB), and a larger PFN in a trace is more likely a garbled line than a machine.
const FIT_MAX_BYTES: u64 = 1 << 40;
/// LLC of the fitted machine: the trace says nothing of caches (assumed, as `unknown-trace`).
const FIT_LLC_BYTES: u64 = 32 << 20;

/// A one-node x86-64 machine for `plan`: CPUs = the highest traced CPU + 1; memory = enough
/// to address the highest traced PFN and at least twice the most pages the trace held at
/// once, rounded up to a GiB (at least 1 GiB, at most 1 TiB). The highest PFN stands for the
/// traced machine's memory (its physical address space, holes included, so a little more).
pub fn fit_machine(plan: &Plan) -> Result<Machine> {
    let cpus = plan.max_cpu + 1;
    let pages = plan.max_pfn.saturating_add(1).max(plan.peak_pages.saturating_mul(2));
    let bytes = pages.saturating_mul(4096).div_ceil(GIB).max(1).saturating_mul(GIB);
    if bytes > FIT_MAX_BYTES {
        bail!(
            "the trace names PFN {:#x}, which would need a machine of {}; describe the traced \
             machine with --machine (see docs/real-data.md) to replay it",
            plan.max_pfn,
            fmt_bytes(bytes)
        );
    }
    // The trace says nothing of the machine's caches or latencies: the undescribed trace
    // machine of seed 000 stands in for them (its own figures are sourced or assumed there).
    let like = Machine::builtin("unknown-trace").expect("a built-in machine");
    let l2 = like.nodes[0].l2.map(|c| CacheLevel { shared_by: c.shared_by.min(cpus), ..c });
    let l1d = like.nodes[0].l1d.map(|c| CacheLevel { shared_by: c.shared_by.min(cpus), ..c });
    Ok(Machine {
        name: "trace-fit".into(),
        description: format!("{cpus} CPUs and {} fitted to the trace", fmt_bytes(bytes)),
        source: "pagealloc replay: the trace's highest CPU and PFN".into(),
        arch: Arch::X86_64,
        nodes: vec![NodeSpec {
            cpus,
            memory_bytes: bytes,
            llc_bytes: FIT_LLC_BYTES,
            llc_shared_by: cpus,
            l2,
            l1d,
        }],
        min_free_kbytes: None,
        watermark_scale_factor: None,
        // A kernel's trace: its struct page.
        frame_bytes: crate::machine::KERNEL_FRAME_BYTES,
        assumptions: vec![
            format!("CPUs: the highest traced CPU ({}) + 1", plan.max_cpu),
            format!(
                "memory: highest traced PFN {:#x} + 1 and 2 × the {} pages held at the peak, \
                 rounded up to a GiB",
                plan.max_pfn, plan.peak_pages
            ),
            "one node; LLC 32 MiB shared by all CPUs (the trace says nothing of caches)".into(),
            "L2, L1d and the memory hierarchy's figures: those of the built-in `unknown-trace`"
                .into(),
        ],
        hierarchy: like.hierarchy,
        file: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::small_setup;
    use crate::model::Model;
    use crate::trace::{parse, Format};

    fn plan(text: &str) -> Plan {
        Plan::new(&parse(text, Format::Ftrace).unwrap()).unwrap()
    }

    fn alloc(cpu: u32, t: &str, pfn: u64, order: u8) -> String {
        format!(
            "a-1 [{cpu:03}] .... {t}: mm_page_alloc: page=ffffea0000000000 pfn={pfn:#x} \
             order={order} migratetype=0 gfp_flags=GFP_KERNEL\n"
        )
    }

    fn free(cpu: u32, t: &str, pfn: u64, order: u8) -> String {
        format!("a-1 [{cpu:03}] .... {t}: mm_page_free: page=ffffea0000000000 pfn={pfn:#x} order={order}\n")
    }

    #[test]
    fn planning_sorts_out_what_the_trace_cannot_say() {
        let text = [
            free(0, "1.0", 0x500, 0),  // allocated before tracing began
            alloc(0, "1.1", 0x100, 0), // slot 0
            alloc(1, "1.2", 0x100, 0), // again without a free: slot 0 released, slot 1
            free(1, "1.3", 0x100, 0),  // frees slot 1
            free(0, "1.4", 0x100, 0),  // freed twice (on CPU 1 it would be a repeated line)
            alloc(0, "1.5", 0x200, 2), // slot 2: four pages
            free(1, "1.6", 0x201, 0),  // split_page frees: the block goes with its last page
            free(1, "1.7", 0x200, 0),
            free(1, "1.8", 0x203, 0),
            free(1, "1.9", 0x202, 0),
        ]
        .concat();
        let p = plan(&text);
        assert_eq!(p.tally.get(Kind::FreeUnknown), 1, "{:?}\n{text}", p.tally);
        assert_eq!(p.tally.get(Kind::Reallocated), 1);
        assert_eq!(p.tally.get(Kind::FreeTwice), 1);
        assert_eq!(p.tally.get(Kind::SplitFree), 4);
        let actions: Vec<&Action> = p.steps.iter().map(|s| &s.action).collect();
        assert_eq!(actions.len(), 5, "{actions:?}");
        assert_eq!(
            *actions[1],
            Action::Alloc { release: vec![0], slot: 1, order: Order(0), gfp: Gfp::KERNEL }
        );
        // CPU 1 releasing CPU 0's block waits for CPU 0's allocation step.
        assert_eq!(p.steps[1].deps, vec![0]);
        assert_eq!(*actions[4], Action::Free { slots: vec![2] });
        assert_eq!(p.steps[4].t_ps, 900_000_000_000);
        assert_eq!((p.max_cpu, p.max_pfn, p.peak_pages), (1, 0x500, 4));
    }

    /// CPU 1 frees, at the same trace time, what CPU 0 allocates: CPU 0's allocations cost
    /// model time, so CPU 1 reaches each free before its allocation has run, and must wait
    /// for it (without the wait, the frees would find no block).
    #[test]
    fn a_free_waits_for_its_allocation_on_another_cpu() {
        let mut text = String::new();
        for k in 0..50u64 {
            text += &alloc(0, "1.000000", 0x1000 + k, 0);
        }
        for k in 0..50u64 {
            text += &free(1, "1.000000", 0x1000 + k, 0);
        }
        let p = plan(&text);
        assert!(p.steps[50..].iter().all(|s| s.deps.len() == 1));
        let mut m = Model::new(small_setup(2, 64, "modern", 1)).unwrap();
        let mut w = crate::model::Serial::new(Replay::new(&p));
        let o = m.run(&mut w, &mut |_| {}).unwrap();
        assert_eq!(o.ops.allocs, 50);
        assert_eq!(o.ops.frees, 50);
        assert_eq!(w.into_inner().tally().get(Kind::OursAllocFailed), 0);
    }

    #[test]
    fn the_model_replays_the_stream_and_gets_every_page_back() {
        let text =
            [alloc(0, "5.0", 0x10, 3), alloc(1, "5.5", 0x20, 0), free(1, "6.0", 0x10, 3)].concat();
        let p = plan(&text);
        let mut m = Model::new(small_setup(2, 64, "modern", 1)).unwrap();
        let mut w = crate::model::Serial::new(Replay::new(&p));
        let o = m.run(&mut w, &mut |_| {}).unwrap();
        // Two allocations, the traced free, and the order-0 block returned at the end.
        assert_eq!((o.ops.allocs, o.ops.frees), (2, 1));
        // The last step ran a second of trace time after the first.
        assert!(o.elapsed_ps >= 1_000_000_000_000, "{}", o.elapsed_ps);
        let replayed = o.workload.iter().find(|(k, _)| k == "replayed_events").unwrap().1;
        assert_eq!(replayed, 3.0);
    }

    fn plan_err(text: &str) -> PlanError {
        Plan::new(&parse(text, Format::Ftrace).unwrap()).unwrap_err()
    }

    /// Numbers no machine or clock holds are refused with the event's line, before anything
    /// is sized from them: CPU u32::MAX (CPUs = highest + 1 wrapped to 0: "the machine has 0
    /// CPUs, give at least 0"), a block ending past u64::MAX (the fitted memory wrapped to
    /// 1 GiB), a span the picosecond clock cannot hold (it overflowed).
    #[test]
    fn impossible_cpus_pfns_and_spans_are_errors_naming_the_line() {
        let e = plan_err(&[alloc(0, "1.0", 0x10, 0), alloc(u32::MAX, "1.1", 0x20, 0)].concat());
        assert_eq!(e, PlanError::Cpu { line: 2, cpu: u32::MAX });
        assert!(e.to_string().contains("CPU 4294967295: a machine has at most 1048576 CPUs"));
        let e = plan_err(&free(0, "1.0", u64::MAX, 0));
        assert_eq!(e, PlanError::Pfn { line: 1, pfn: u64::MAX, order: 0 });
        assert!(e.to_string().contains("runs past the last frame number"), "{e}");
        let e = plan_err(&[alloc(0, "1.0", 0x10, 0), free(0, "1.1", u64::MAX - 3, 2)].concat());
        assert_eq!(e.line(), 2);
        // The last frame itself is a frame: no wrap, and the fitted machine is refused.
        let p = plan(&free(0, "1.0", u64::MAX - 1, 0));
        assert_eq!(p.max_pfn, u64::MAX - 1);
        assert!(fit_machine(&p).is_err());
        // 10^7 s is past the clock's 106 days; 1.8 × 10^10 s overflowed its u64 of ps.
        for late in ["10000001.0", "18000000000.0"] {
            let e = plan_err(&[alloc(0, "1.0", 0x10, 0), free(1, late, 0x10, 0)].concat());
            assert!(matches!(e, PlanError::Span { line: 2, first_line: 1, .. }), "{e:?}");
            assert!(e.to_string().contains("more than the 9223372 s (about 106 days)"), "{e}");
        }
    }

    /// Memory used to grow with the trace's span (a sample every virtual second, ~32 bytes
    /// each on one CPU); two events 10^5 s apart now keep at most MAX_SAMPLED_TICKS samples.
    #[test]
    fn a_long_quiet_trace_keeps_the_samples_bounded() {
        let p = plan(&[alloc(0, "1.0", 0x10, 0), free(0, "100001.0", 0x10, 0)].concat());
        let mut m = Model::new(small_setup(1, 64, "modern", 1)).unwrap();
        let o = m.run(&mut crate::model::Serial::new(Replay::new(&p)), &mut |_| {}).unwrap();
        assert!(o.elapsed_ps >= 100_000 * PS_PER_S);
        assert!(o.pcp_pages.len() <= crate::model::MAX_SAMPLED_TICKS, "{}", o.pcp_pages.len());
        assert_eq!(o.ops.allocs, 1);
    }
}

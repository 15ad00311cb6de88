//! Writing events in the ftrace `trace` file's format, as a 6.x kernel prints them, so that
//! a model run can be read by the tools that read a kernel's trace (and replayed).
//!
//! Each line is `TASK-PID [CPU] FLAGS TIMESTAMP: EVENT: FIELDS`. The model has CPUs, not
//! tasks: TASK-PID is `pagealloc-N` for CPU N. FLAGS is `.....` (no irq, preemption or
//! migration state is modelled). The time stamp is the CPU's virtual clock in seconds with
//! microseconds, as the kernel's default `local` clock prints. `page=` is the x86-64 vmemmap
//! address of the frame's `struct page` (0xffffea0000000000 + 64 × pfn), as kernels without
//! pointer hashing print it; a failed allocation prints `page=0000000000000000 pfn=0x0`.

use std::io::{self, Write};

use pagealloc::types::PAGEBLOCK_ORDER;
use pagealloc::{Pfn, TraceEvent};

use super::{cpu_of, gfp};

/// The x86-64 vmemmap base and `sizeof(struct page)`: what `page=` prints for a frame.
const VMEMMAP_BASE: u64 = 0xffff_ea00_0000_0000;
const STRUCT_PAGE_BYTES: u64 = 64;

/// The header the kernel's `trace` file starts with (the `nop` tracer, 6.x columns).
const HEADER: &str = "# tracer: nop
#
#                                _-----=> irqs-off/BH-disabled
#                               / _----=> need-resched
#                              | / _---=> hardirq/softirq
#                              || / _--=> preempt-depth
#                              ||| / _-=> migrate-disable
#                              |||| /     delay
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
";

/// Streams events to `W` in the ftrace format. The first write error is kept and returned
/// by [`FtraceWriter::finish`]; later events are dropped.
#[derive(Debug)]
pub struct FtraceWriter<W: Write> {
    out: W,
    error: Option<io::Error>,
    lines: u64,
}

impl<W: Write> FtraceWriter<W> {
    /// Start a trace: write the header.
    pub fn new(mut out: W) -> FtraceWriter<W> {
        let error = out.write_all(HEADER.as_bytes()).err();
        FtraceWriter { out, error, lines: 0 }
    }

    /// Write one event that happened at `t_ps` picoseconds of virtual time.
    pub fn event(&mut self, t_ps: u64, e: &TraceEvent) {
        if self.error.is_some() {
            return;
        }
        match writeln!(self.out, "{}", line(t_ps, e)) {
            Ok(()) => self.lines += 1,
            Err(err) => self.error = Some(err),
        }
    }

    /// Flush; the number of events written, or the first error.
    pub fn finish(mut self) -> io::Result<u64> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.lines)
    }
}

/// One event as the kernel's `trace` file prints it.
pub fn line(t_ps: u64, e: &TraceEvent) -> String {
    let cpu = cpu_of(e);
    let us = t_ps / 1_000_000;
    let task = format!("pagealloc-{cpu}");
    format!(
        "{task:>24} [{cpu:03}] ..... {:>5}.{:06}: {}: {}",
        us / 1_000_000,
        us % 1_000_000,
        e.name(),
        body(e)
    )
}

/// `page=… pfn=0x…`. The `struct page` address is decoration (replay reads `pfn=`): past
/// about 1.4 PiB of frames, more than x86-64's vmemmap maps but not more than a machine file
/// may describe, it wraps; the sum used to overflow there (a panic in a debug build).
fn page(pfn: Pfn) -> String {
    let addr = VMEMMAP_BASE.wrapping_add(STRUCT_PAGE_BYTES.wrapping_mul(pfn.0));
    format!("page={addr:016x} pfn={:#x}", pfn.0)
}

/// The fields, in each tracepoint's 6.x print format.
fn body(e: &TraceEvent) -> String {
    match *e {
        TraceEvent::PageAlloc { pfn, order, gfp, migratetype, .. } => {
            let p = pfn.map_or_else(|| "page=0000000000000000 pfn=0x0".to_string(), page);
            format!(
                "{p} order={} migratetype={} gfp_flags={}",
                order.0,
                migratetype.index(),
                gfp::to_names(gfp)
            )
        }
        TraceEvent::PageFree { pfn, order, .. } => format!("{} order={}", page(pfn), order.0),
        TraceEvent::PageFreeBatched { pfn, .. } => format!("{} order=0", page(pfn)),
        TraceEvent::PagePcpuDrain { pfn, order, migratetype, .. } => {
            format!("{} order={} migratetype={}", page(pfn), order.0, migratetype.index())
        }
        TraceEvent::PageAllocZoneLocked { pfn, order, migratetype, percpu_refill, .. } => format!(
            "{} order={} migratetype={} percpu_refill={}",
            page(pfn),
            order.0,
            migratetype.index(),
            u8::from(percpu_refill)
        ),
        TraceEvent::PageAllocExtfrag {
            pfn,
            alloc_order,
            fallback_order,
            alloc_migratetype,
            fallback_migratetype,
            change_ownership,
            ..
        } => format!(
            "{} alloc_order={} fallback_order={} pageblock_order={PAGEBLOCK_ORDER} \
             alloc_migratetype={} fallback_migratetype={} fragmenting={} change_ownership={}",
            page(pfn),
            alloc_order.0,
            fallback_order.0,
            alloc_migratetype.index(),
            fallback_migratetype.index(),
            u8::from(e.is_fragmenting()),
            u8::from(change_ownership)
        ),
        // A tracepoint added to the core after this writer: its name alone.
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use pagealloc::{CpuId, Gfp, MigrateType, Order};

    use super::*;
    use crate::trace::{parse, Format};

    fn every_kind() -> Vec<TraceEvent> {
        let cpu = CpuId(1);
        vec![
            TraceEvent::PageAlloc {
                cpu,
                pfn: Some(Pfn(0x12345)),
                order: Order(0),
                gfp: Gfp::KERNEL,
                migratetype: MigrateType::Unmovable,
            },
            TraceEvent::PageAlloc {
                cpu,
                pfn: None,
                order: Order(9),
                gfp: Gfp::TRANSHUGE,
                migratetype: MigrateType::Movable,
            },
            TraceEvent::PageFree { cpu, pfn: Pfn(0x12345), order: Order(0) },
            TraceEvent::PageFreeBatched { cpu, pfn: Pfn(0x12346) },
            TraceEvent::PagePcpuDrain {
                cpu,
                pfn: Pfn(0x400),
                order: Order(3),
                migratetype: MigrateType::Movable,
            },
            TraceEvent::PageAllocZoneLocked {
                cpu,
                pfn: Pfn(0x800),
                order: Order(0),
                migratetype: MigrateType::Reclaimable,
                percpu_refill: true,
            },
            TraceEvent::PageAllocExtfrag {
                cpu,
                pfn: Pfn(0x1000),
                alloc_order: Order(0),
                fallback_order: Order(10),
                alloc_migratetype: MigrateType::Unmovable,
                fallback_migratetype: MigrateType::Movable,
                change_ownership: true,
            },
        ]
    }

    #[test]
    fn lines_look_like_the_kernels() {
        let e = every_kind();
        assert_eq!(
            line(4_087_349_165_000_000, &e[0]),
            "             pagealloc-1 [001] .....  4087.349165: mm_page_alloc: \
             page=ffffea000048d140 pfn=0x12345 order=0 migratetype=0 gfp_flags=GFP_KERNEL"
        );
        assert!(line(0, &e[1]).ends_with(
            "page=0000000000000000 pfn=0x0 order=9 migratetype=1 gfp_flags=GFP_TRANSHUGE"
        ));
        assert!(line(0, &e[6]).contains("pageblock_order=9 alloc_migratetype=0"));
        assert!(line(0, &e[6]).ends_with("fragmenting=0 change_ownership=1"));
    }

    /// Every record written reads back as itself, with its time to the microsecond.
    /// Frame numbers past what x86-64's vmemmap maps (a machine file of petabytes) print
    /// a wrapped address and their own PFN; the address sum overflowed.
    #[test]
    fn frames_beyond_the_vmemmap_still_print() {
        assert_eq!(page(Pfn(0)), "page=ffffea0000000000 pfn=0x0");
        let top = Pfn((1 << 52) - 1);
        assert!(page(top).ends_with(" pfn=0xfffffffffffff"), "{}", page(top));
    }

    #[test]
    fn what_is_written_parses_back() {
        let events = every_kind();
        let mut w = FtraceWriter::new(Vec::new());
        for (i, e) in events.iter().enumerate() {
            w.event(i as u64 * 1_500_000, e);
        }
        let text = String::from_utf8(std::mem::take(&mut w.out)).unwrap();
        assert_eq!(w.finish().unwrap(), events.len() as u64);
        let t = parse(&text, Format::Auto).unwrap();
        assert_eq!(t.format, Format::Ftrace);
        let back: Vec<TraceEvent> = t.events.iter().map(|e| e.event).collect();
        assert_eq!(back, events);
        let times: Vec<u64> = t.events.iter().map(|e| e.t_ns).collect();
        assert_eq!(times, vec![0, 1000, 3000, 4000, 6000, 7000, 9000]);
        // Nothing was repaired: the writer prints what the parser expects of a 6.x kernel.
        assert!(t.tally.iter().all(|(k, _)| k == crate::trace::Kind::Header), "{:?}", t.tally);
    }
}

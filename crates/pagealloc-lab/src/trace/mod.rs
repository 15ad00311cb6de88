//! Kernel traces in and out: the `kmem:mm_page_*` page-allocator events as the ftrace `trace`
//! file (and `trace_pipe`), `trace-cmd report` and `perf script` print them.
//!
//! - [`parse`](parse::parse) reads a trace's text into timed [`TraceEvent`]s, the records the library's own
//!   event sink emits, so a kernel's trace and a model run's trace are the same data. Lines it
//!   cannot use are counted by [`Kind`], never fatal unless nothing in the file is a page
//!   event ([`parse::TraceError`]).
//! - [`gfp`] turns the printed `gfp_flags=` names into [`pagealloc::Gfp`] and back.
//! - [`write`] prints a model run's events in the ftrace `trace` format.
//! - [`replay`] turns a parsed trace into a model workload: each CPU's allocations and frees in
//!   trace order, paced by the trace's timestamps, trace PFNs mapped to the model's.
//!
//! The tracepoints' print formats (include/trace/events/kmem.h) changed over the years; what
//! each version prints and which of it we read is in `docs/real-data.md`.

pub mod gfp;
pub mod parse;
pub mod replay;
pub mod write;

use std::collections::BTreeMap;

use pagealloc::types::NR_PAGE_ORDERS;
use pagealloc::TraceEvent;
use serde_json::json;

#[cfg(test)]
pub use self::parse::parse;
pub use self::parse::read;

/// Which tool printed a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Decide from the text: headers first, then how the event lines look.
    Auto,
    /// The tracefs `trace` or `trace_pipe` file (also with the function_graph tracer).
    Ftrace,
    /// `trace-cmd report`.
    TraceCmd,
    /// `perf script` (callchains allowed).
    Perf,
}

impl Format {
    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Auto => "auto",
            Format::Ftrace => "ftrace",
            Format::TraceCmd => "trace-cmd",
            Format::Perf => "perf",
        }
    }
}

/// One event of a trace with its time stamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimedEvent {
    /// Nanoseconds on the trace's clock (the clock's own origin, not the trace's start).
    pub t_ns: u64,
    /// The line of the file it was read from (1-based), for messages.
    pub line: u64,
    /// The record; its `cpu` is the CPU the line was printed for.
    pub event: TraceEvent,
}

/// What was done with a line or an event that was not a clean page event: skipped (not
/// used), or used after a repair. Counted per kind and reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    // Lines skipped.
    /// Headers, comments and blank lines (`# tracer:`, `cpus=4`, `CPU 2 is empty`).
    Header,
    /// Text that is no trace record: shell prompts, commands, mail text.
    Text,
    /// A trace record of another event (or a traced function).
    OtherEvent,
    /// A stack-trace or callchain line (`=> func`, a perf callchain frame).
    StackTrace,
    /// `CPU:N [LOST M EVENTS]`: the ring buffer overflowed, events are missing.
    LostEvents,
    /// A page event whose fields are missing or do not parse.
    Malformed,
    /// The last line of the file, cut short.
    Truncated,
    /// The previous page event (same CPU, same text) printed again right after it.
    Repeated,
    /// An order above the library's MAX_PAGE_ORDER.
    OrderTooLarge,
    // Lines used after a repair.
    /// CRLF line endings.
    CrLf,
    /// Mail quoting (`> `) removed.
    MailQuote,
    /// Quoted-printable `=3D` read as `=`.
    QuotedPrintable,
    /// Event names of kernels before 3.3: `mm_page_free_direct`, `mm_pagevec_free`.
    OldEventName,
    /// PFN printed in decimal (kernels before 5.19).
    DecimalPfn,
    /// A field the tracepoint does not print upstream (vendor kernels), ignored.
    VendorField,
    /// Event found inside a function_graph `/* … */` comment.
    FunctionGraph,
    /// No time stamp on the line (function_graph without funcgraph-abstime): the previous
    /// line's time is used.
    NoTimestamp,
    /// A time stamp earlier than the previous one on the same CPU: raised to it.
    TimeWentBack,
    /// A time stamp without a fraction (a counter clock): read as nanoseconds.
    CounterClock,
    /// `gfp_flags=` printed as a number (6.x tools that cannot name them): read as 6.x bits.
    NumericGfp,
    /// A GFP flag name we do not know: left out of the replayed flags.
    UnknownGfp,
    /// A migratetype number outside 0–5: read as Unmovable.
    UnknownMigratetype,
    // Replay: events not replayed.
    /// The kernel's allocation failed (`page=(null)`): nothing to replay.
    KernelAllocFailed,
    /// A free of a page the trace never allocated (allocated before tracing began).
    FreeUnknown,
    /// A free of a page the trace had already freed, with no allocation between.
    FreeTwice,
    /// A free whose allocation failed in our model: nothing to free.
    OursAllocFailed,
    // Replay: events replayed after a repair.
    /// An allocation of a page that was still allocated in the trace (its free was not
    /// traced): the old block is freed first.
    Reallocated,
    /// Pages of a larger traced block freed one by one (`split_page`): the block is freed
    /// when its last page is.
    SplitFree,
    /// A free whose order differs from its allocation's and that covers it: the block is
    /// freed.
    OrderMismatch,
}

impl Kind {
    /// The key in JSON and text reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Header => "header",
            Kind::Text => "text",
            Kind::OtherEvent => "other_event",
            Kind::StackTrace => "stack_trace",
            Kind::LostEvents => "lost_events",
            Kind::Malformed => "malformed",
            Kind::Truncated => "truncated",
            Kind::Repeated => "repeated",
            Kind::OrderTooLarge => "order_too_large",
            Kind::CrLf => "crlf",
            Kind::MailQuote => "mail_quote",
            Kind::QuotedPrintable => "quoted_printable",
            Kind::OldEventName => "old_event_name",
            Kind::DecimalPfn => "decimal_pfn",
            Kind::VendorField => "vendor_field",
            Kind::FunctionGraph => "function_graph",
            Kind::NoTimestamp => "no_timestamp",
            Kind::TimeWentBack => "time_went_back",
            Kind::CounterClock => "counter_clock",
            Kind::NumericGfp => "numeric_gfp",
            Kind::UnknownGfp => "unknown_gfp",
            Kind::UnknownMigratetype => "unknown_migratetype",
            Kind::KernelAllocFailed => "kernel_alloc_failed",
            Kind::FreeUnknown => "free_unknown",
            Kind::FreeTwice => "free_twice",
            Kind::OursAllocFailed => "ours_alloc_failed",
            Kind::Reallocated => "reallocated",
            Kind::SplitFree => "split_free",
            Kind::OrderMismatch => "order_mismatch",
        }
    }

    /// Was the line or event left out (true), or used after a repair (false)?
    pub fn is_skip(self) -> bool {
        matches!(
            self,
            Kind::Header
                | Kind::Text
                | Kind::OtherEvent
                | Kind::StackTrace
                | Kind::LostEvents
                | Kind::Malformed
                | Kind::Truncated
                | Kind::Repeated
                | Kind::OrderTooLarge
                | Kind::KernelAllocFailed
                | Kind::FreeUnknown
                | Kind::FreeTwice
                | Kind::OursAllocFailed
        )
    }

    /// One line saying what it means, for the text report.
    pub fn what(self) -> &'static str {
        match self {
            Kind::Header => "headers, comments, blank lines",
            Kind::Text => "not trace records (prompts, commands, prose)",
            Kind::OtherEvent => "records of other events or functions",
            Kind::StackTrace => "stack trace / callchain lines",
            Kind::LostEvents => "ring-buffer overflow markers (events lost)",
            Kind::Malformed => "page events with missing or bad fields",
            Kind::Truncated => "last line cut short",
            Kind::Repeated => "the previous page event printed again right after it",
            Kind::OrderTooLarge => "orders above MAX_PAGE_ORDER",
            Kind::CrLf => "CRLF line endings",
            Kind::MailQuote => "mail quoting removed",
            Kind::QuotedPrintable => "quoted-printable =3D read as =",
            Kind::OldEventName => "pre-3.3 event names (mm_page_free_direct, mm_pagevec_free)",
            Kind::DecimalPfn => "decimal PFNs (kernels before 5.19)",
            Kind::VendorField => "fields upstream does not print, ignored",
            Kind::FunctionGraph => "events inside function_graph comments",
            Kind::NoTimestamp => "no time stamp: the previous one used",
            Kind::TimeWentBack => "time stamps earlier than the CPU's previous: raised",
            Kind::CounterClock => "counter-clock time stamps read as ns",
            Kind::NumericGfp => "gfp_flags as a number, read as 6.x bits",
            Kind::UnknownGfp => "GFP names not known, left out",
            Kind::UnknownMigratetype => "migratetype numbers outside 0-5",
            Kind::KernelAllocFailed => "kernel allocations that failed (not replayed)",
            Kind::FreeUnknown => "frees of pages allocated before tracing began",
            Kind::FreeTwice => "frees of pages the trace had already freed",
            Kind::OursAllocFailed => "frees of blocks our model failed to allocate",
            Kind::Reallocated => "allocated again without a traced free: old block freed",
            Kind::SplitFree => "pages of a larger block freed one by one",
            Kind::OrderMismatch => "frees of another order covering the block",
        }
    }
}

/// Counts by [`Kind`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally(BTreeMap<Kind, u64>);

impl Tally {
    /// Count one.
    pub fn add(&mut self, k: Kind) {
        self.add_n(k, 1);
    }

    /// Count `n`.
    pub fn add_n(&mut self, k: Kind, n: u64) {
        if n > 0 {
            *self.0.entry(k).or_insert(0) += n;
        }
    }

    /// How many of `k`.
    #[cfg(test)]
    pub fn get(&self, k: Kind) -> u64 {
        self.0.get(&k).copied().unwrap_or(0)
    }

    /// Add every count of `other`.
    pub fn merge(&mut self, other: &Tally) {
        for (&k, &n) in &other.0 {
            self.add_n(k, n);
        }
    }

    /// The non-zero counts, in report order.
    pub fn iter(&self) -> impl Iterator<Item = (Kind, u64)> + '_ {
        self.0.iter().map(|(&k, &n)| (k, n))
    }

    /// `{"skipped": {...}, "repaired": {...}}`.
    pub fn to_json(&self) -> serde_json::Value {
        let part = |skip: bool| -> serde_json::Map<String, serde_json::Value> {
            self.iter()
                .filter(|(k, _)| k.is_skip() == skip)
                .map(|(k, n)| (k.name().into(), json!(n)))
                .collect()
        };
        json!({"skipped": part(true), "repaired": part(false)})
    }
}

/// A parsed trace.
#[derive(Clone, Debug)]
pub struct Trace {
    /// The format it was read as.
    pub format: Format,
    /// Why that format: `forced` or the signature auto-detection went by.
    pub detected: String,
    /// Lines in the file.
    pub lines: u64,
    /// The page events, in file order.
    pub events: Vec<TimedEvent>,
    /// Lines skipped and repaired while reading.
    pub tally: Tally,
    /// GFP names we did not know, with how often each was seen.
    pub unknown_gfp: BTreeMap<String, u64>,
    /// Other events seen, by name.
    pub other_events: BTreeMap<String, u64>,
    /// Events lost to ring-buffer overflow, as the trace reports them.
    pub lost_events: u64,
    /// The first time stamp that went back by more than [`parse::JUMP_BACK_NS`] on its CPU
    /// (two captures concatenated?), if any.
    pub jump_back: Option<parse::JumpBack>,
    /// How many stamps were that far behind their CPU's latest (all of a second capture's).
    pub jumps_back: u64,
}

impl Trace {
    /// The highest CPU with an event.
    pub fn max_cpu(&self) -> Option<u32> {
        self.events.iter().map(|e| cpu_of(&e.event)).max()
    }

    /// Counts of the events, the way [`EventCounts`] tallies them.
    pub fn counts(&self) -> EventCounts {
        let mut c = EventCounts::default();
        for e in &self.events {
            c.add(&e.event);
        }
        c
    }
}

/// The CPU of a record.
pub fn cpu_of(e: &TraceEvent) -> u32 {
    e.cpu().0
}

/// What a stream of page events says happened: the same tally for a kernel's trace and for
/// the events our model emitted, so the two can be set side by side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventCounts {
    /// `mm_page_alloc` that succeeded, by order.
    pub alloc: [u64; NR_PAGE_ORDERS],
    /// `mm_page_alloc` that failed.
    pub alloc_failed: u64,
    /// `mm_page_free` (and pre-3.3 `mm_page_free_direct`), by order.
    pub free: [u64; NR_PAGE_ORDERS],
    /// `mm_page_free_batched` (and pre-3.3 `mm_pagevec_free`): order-0 pages.
    pub free_batched: u64,
    /// `mm_page_pcpu_drain` events.
    pub pcpu_drain: u64,
    /// Pages they moved.
    pub pcpu_drain_pages: u64,
    /// `mm_page_alloc_zone_locked` events.
    pub zone_locked: u64,
    /// Of which `percpu_refill=1`.
    pub zone_locked_refill: u64,
    /// Pages they took from the buddy lists.
    pub zone_locked_pages: u64,
    /// `mm_page_alloc_extfrag` events.
    pub extfrag: u64,
    /// Of which fragmenting (fallback order below the pageblock order).
    pub extfrag_fragmenting: u64,
    /// Of which the pageblock changed owner.
    pub extfrag_change_ownership: u64,
}

impl EventCounts {
    /// Count one record.
    pub fn add(&mut self, e: &TraceEvent) {
        match *e {
            TraceEvent::PageAlloc { pfn: Some(_), order, .. } => self.alloc[order.index()] += 1,
            TraceEvent::PageAlloc { pfn: None, .. } => self.alloc_failed += 1,
            TraceEvent::PageFree { order, .. } => self.free[order.index()] += 1,
            TraceEvent::PageFreeBatched { .. } => self.free_batched += 1,
            TraceEvent::PagePcpuDrain { order, .. } => {
                self.pcpu_drain += 1;
                self.pcpu_drain_pages += order.nr_pages().0;
            }
            TraceEvent::PageAllocZoneLocked { order, percpu_refill, .. } => {
                self.zone_locked += 1;
                self.zone_locked_refill += u64::from(percpu_refill);
                self.zone_locked_pages += order.nr_pages().0;
            }
            TraceEvent::PageAllocExtfrag { change_ownership, .. } => {
                self.extfrag += 1;
                self.extfrag_fragmenting += u64::from(e.is_fragmenting());
                self.extfrag_change_ownership += u64::from(change_ownership);
            }
            // A tracepoint added to the core after this tally: not counted until it is named.
            _ => {}
        }
    }

    /// Successful allocations, all orders.
    pub fn allocs(&self) -> u64 {
        self.alloc.iter().sum()
    }

    /// Frees, all orders, batched included.
    pub fn frees(&self) -> u64 {
        self.free.iter().sum::<u64>() + self.free_batched
    }

    /// Frees by order, batched frees counted as order 0.
    pub fn frees_by_order(&self) -> [u64; NR_PAGE_ORDERS] {
        let mut f = self.free;
        f[0] += self.free_batched;
        f
    }

    /// The counts as JSON; per-order maps list the orders seen.
    pub fn to_json(self) -> serde_json::Value {
        let by_order = |v: &[u64; NR_PAGE_ORDERS]| -> serde_json::Map<String, serde_json::Value> {
            v.iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(o, &n)| (o.to_string(), json!(n)))
                .collect()
        };
        json!({
            "alloc": by_order(&self.alloc),
            "alloc_failed": self.alloc_failed,
            "free": by_order(&self.free),
            "free_batched": self.free_batched,
            "pcpu_drain": {"events": self.pcpu_drain, "pages": self.pcpu_drain_pages},
            "zone_locked": {
                "events": self.zone_locked,
                "percpu_refill": self.zone_locked_refill,
                "pages": self.zone_locked_pages,
            },
            "extfrag": {
                "events": self.extfrag,
                "fragmenting": self.extfrag_fragmenting,
                "change_ownership": self.extfrag_change_ownership,
            },
        })
    }
}

//! Reading a trace's text: one line at a time, each classified and, if it is a page event,
//! turned into a [`TimedEvent`].
//!
//! What a record line looks like (the task may contain spaces and dashes; the flags column
//! is absent on old kernels and 4 or 5 characters wide on newer ones):
//!
//! ```text
//! ftrace     <task>-<pid> [<cpu>] <flags> <sec>.<usec>: mm_page_alloc: page=… pfn=…
//! trace-cmd  <task>-<pid> [<cpu>] <flags> <sec>.<usec>: mm_page_alloc:        page=…
//! perf       <comm> <tid> [<cpu>] <sec>.<usec>:     kmem:mm_page_alloc: page=… pfn=…
//! graph       <cpu>)   <task>-<pid> |               |  /* mm_page_alloc: page=… */
//! ```
//!
//! so one reader finds the `[cpu]` token, then the time stamp (the first `digits[.digits]:`
//! token after it), then the event name (`name:` or `kmem:name:`), and the fields after it
//! as `key=value`. The format only decides which of the tools' own extra line shapes are
//! known (function_graph lines for ftrace, callchain frames for perf, `cpus=` headers for
//! trace-cmd); auto-detection reads headers first, then how the event lines look.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use anyhow::{Context, Result};
use pagealloc::types::MAX_PAGE_ORDER;
use pagealloc::{CpuId, MigrateType, Order, Pfn, TraceEvent};

use super::{gfp, Format, Kind, Tally, TimedEvent, Trace};
use crate::input::{self, InputKind};

/// Why a file could not be read as a trace at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceError {
    /// The file holds binary data (a `perf.data` or `trace.dat`, not their text).
    Binary {
        /// What to run to get text.
        hint: &'static str,
    },
    /// A second capture's header after page events: two captures concatenated, which cannot
    /// be replayed as one timeline.
    Concatenated {
        /// Its line (1-based).
        line: u64,
        /// The header as written.
        header: String,
        /// Page events before it.
        events: usize,
    },
    /// Not one page event in the file.
    NoPageEvents {
        /// Lines read.
        lines: u64,
        /// Trace records of other events seen, by name, most frequent first (at most 5).
        other: Vec<(String, u64)>,
        /// The first non-blank line, for the message.
        first: String,
    },
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::Binary { hint } => {
                write!(f, "binary data, not a trace's text; {hint}")
            }
            TraceError::Concatenated { header, events, .. } => write!(
                f,
                "a second capture begins here ({header:?} after {events} page \
                 events): two captures concatenated cannot be replayed as one timeline; split \
                 the file at this line and replay each part"
            ),
            TraceError::NoPageEvents { lines, other, first } if other.is_empty() => write!(
                f,
                "not a trace: no kmem page event (mm_page_alloc, mm_page_free, …) and no trace \
                 record in {lines} line(s); first line: {first:?}"
            ),
            TraceError::NoPageEvents { lines, other, .. } => {
                let seen: Vec<String> = other.iter().map(|(n, c)| format!("{n} ×{c}")).collect();
                write!(
                    f,
                    "a trace, but without kmem page events in {lines} line(s) (it has {}); \
                     record with `-e 'kmem:mm_page_*'` (docs/real-data.md)",
                    seen.join(", ")
                )
            }
        }
    }
}

impl std::error::Error for TraceError {}

/// Read and parse the trace in `path` (`-` for standard input).
pub fn read(path: &Path, format: Format) -> Result<Trace> {
    let bytes = if path.as_os_str() == "-" {
        input::read_stdin(InputKind::Data).context("cannot read the trace on standard input")?
    } else {
        input::read(path, InputKind::Data)
            .with_context(|| format!("cannot read trace `{}`", path.display()))?
    };
    let label = input::label(path);
    if let Some(hint) = binary_hint(&bytes) {
        return Err(TraceError::Binary { hint }).context(label);
    }
    let text = String::from_utf8_lossy(&bytes);
    match parse(&text, format) {
        Err(e @ TraceError::Concatenated { line, .. }) => {
            Err(anyhow::anyhow!("{label}:{line}: {e}"))
        }
        r => r.context(label),
    }
}

/// If `bytes` are a binary trace, what to run instead.
fn binary_hint(bytes: &[u8]) -> Option<&'static str> {
    let head = &bytes[..bytes.len().min(4096)];
    if head.starts_with(b"PERFILE2") || head.starts_with(b"PERFFILE") {
        Some("this is a perf.data file: run `perf script -i FILE > FILE.txt` and replay that")
    } else if head.starts_with(b"\x17\x08\x44tracing") {
        Some("this is a trace-cmd trace.dat file: run `trace-cmd report -i FILE > FILE.txt`")
    } else if head.contains(&0) {
        Some("it contains NUL bytes")
    } else {
        None
    }
}

/// The page events we read, with the names each was printed under over the years.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PageEvent {
    Alloc,
    Free,
    FreeBatched,
    PcpuDrain,
    ZoneLocked,
    Extfrag,
}

impl PageEvent {
    /// The event named `name` (without `kmem:`), and whether that is a pre-3.3 name.
    fn from_name(name: &str) -> Option<(PageEvent, bool)> {
        Some(match name {
            "mm_page_alloc" => (PageEvent::Alloc, false),
            "mm_page_free" => (PageEvent::Free, false),
            "mm_page_free_direct" => (PageEvent::Free, true),
            "mm_page_free_batched" => (PageEvent::FreeBatched, false),
            "mm_pagevec_free" => (PageEvent::FreeBatched, true),
            "mm_page_pcpu_drain" => (PageEvent::PcpuDrain, false),
            "mm_page_alloc_zone_locked" => (PageEvent::ZoneLocked, false),
            "mm_page_alloc_extfrag" => (PageEvent::Extfrag, false),
            _ => return None,
        })
    }

    /// The fields upstream kernels print (any version); others are a vendor's.
    fn known_fields(self) -> &'static [&'static str] {
        match self {
            PageEvent::Alloc => &["page", "pfn", "order", "migratetype", "gfp_flags"],
            PageEvent::Free => &["page", "pfn", "order"],
            PageEvent::FreeBatched => &["page", "pfn", "order", "cold"],
            PageEvent::PcpuDrain => &["page", "pfn", "order", "migratetype"],
            // The 2.6.3x documentation lists a `cpu=` field here too.
            PageEvent::ZoneLocked => {
                &["page", "pfn", "order", "migratetype", "percpu_refill", "cpu"]
            }
            PageEvent::Extfrag => &[
                "page",
                "pfn",
                "alloc_order",
                "fallback_order",
                "pageblock_order",
                "alloc_migratetype",
                "fallback_migratetype",
                "fragmenting",
                "change_ownership",
            ],
        }
    }
}

/// How far a CPU's time stamp may go back before it is taken for the start of another
/// capture (and warned about): 1 s. Stamps of one CPU are in order in every tool's output;
/// a step back is a clock glitch or a second capture pasted after the first.
pub const JUMP_BACK_NS: u64 = 1_000_000_000;

/// A time stamp that went back by more than [`JUMP_BACK_NS`] on its CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JumpBack {
    /// Its line (1-based).
    pub line: u64,
    /// The CPU.
    pub cpu: u32,
    /// How far back, ns.
    pub back_ns: u64,
}

impl fmt::Display for JumpBack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "time on CPU {} goes back {:.3} s: two captures concatenated? They are replayed as \
             one timeline (the later stamps raised to the earlier)",
            self.cpu,
            self.back_ns as f64 / 1e9
        )
    }
}

/// A time stamp as printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    ns: u64,
    /// No fraction: a counter clock.
    counter: bool,
}

/// What one line is.
#[derive(Debug, PartialEq, Eq)]
enum Line<'a> {
    Header,
    Text,
    Stack,
    Lost(u64),
    Record { cpu: u32, stamp: Option<Stamp>, name: &'a str, body: &'a str, graph: bool },
}

/// Parse a whole trace.
pub fn parse(text: &str, format: Format) -> Result<Trace, TraceError> {
    let (format, detected) = match format {
        Format::Auto => detect(text),
        f => (f, "forced".to_string()),
    };
    let mut st = State::default();
    // Split on '\n' only (`str::lines` would hide a CRLF ending, which is counted).
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let nr_lines = lines.len();
    let mut first = String::new();
    for (i, with_end) in lines.iter().enumerate() {
        st.line_no = i as u64 + 1;
        let raw = with_end.strip_suffix('\n').unwrap_or(with_end);
        let last_cut = i + 1 == nr_lines && !with_end.ends_with('\n');
        let line = st.clean(raw);
        if first.is_empty() && !line.trim().is_empty() {
            first = line.trim().chars().take(80).collect();
        }
        st.line(&line, format, last_cut);
    }
    if let Some((line, header)) = st.second_capture {
        return Err(TraceError::Concatenated { line, header, events: st.events_before_second });
    }
    if st.events.is_empty() {
        let mut other: Vec<(String, u64)> = st.other.into_iter().collect();
        other.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        other.truncate(5);
        return Err(TraceError::NoPageEvents { lines: nr_lines as u64, other, first });
    }
    Ok(Trace {
        format,
        detected,
        lines: nr_lines as u64,
        events: st.events,
        tally: st.tally,
        unknown_gfp: st.unknown_gfp,
        other_events: st.other,
        lost_events: st.lost,
        jump_back: st.jump_back,
        jumps_back: st.jumps_back,
    })
}

/// Parser state across lines.
#[derive(Default)]
struct State {
    events: Vec<TimedEvent>,
    tally: Tally,
    unknown_gfp: BTreeMap<String, u64>,
    other: BTreeMap<String, u64>,
    lost: u64,
    /// Last time stamp of any line, for lines without one.
    last_ns: Option<u64>,
    /// Events without a stamp seen before any stamp: they get the first one.
    unstamped: Vec<usize>,
    /// Last time stamp of each CPU.
    per_cpu: BTreeMap<u32, u64>,
    /// The CPU and text (name and fields) of the last page event.
    last_event: Option<(u32, String)>,
    /// The line being read (1-based).
    line_no: u64,
    /// A capture's header after page events: its line and text.
    second_capture: Option<(u64, String)>,
    /// Page events before it.
    events_before_second: usize,
    /// The first stamp that went back more than [`JUMP_BACK_NS`], and how many did.
    jump_back: Option<JumpBack>,
    jumps_back: u64,
}

impl State {
    /// Undo what transports do to text: CRLF, mail quoting, quoted-printable `=3D`.
    fn clean(&mut self, raw: &str) -> String {
        let mut s = raw;
        if let Some(t) = s.strip_suffix('\r') {
            s = t;
            self.tally.add(Kind::CrLf);
        }
        let unquoted = strip_mail_quote(s);
        if unquoted.len() != s.len() {
            self.tally.add(Kind::MailQuote);
        }
        if unquoted.contains("=3D") {
            self.tally.add(Kind::QuotedPrintable);
            return unquoted.replace("=3D", "=");
        }
        unquoted.to_string()
    }

    fn line(&mut self, line: &str, format: Format, last_cut: bool) {
        match classify(line, format) {
            Line::Header => {
                self.tally.add(Kind::Header);
                let t = line.trim();
                if is_capture_start(t) && !self.events.is_empty() && self.second_capture.is_none() {
                    self.second_capture = Some((self.line_no, t.chars().take(60).collect()));
                    self.events_before_second = self.events.len();
                }
            }
            Line::Text => self.tally.add(Kind::Text),
            Line::Stack => self.tally.add(Kind::StackTrace),
            Line::Lost(n) => {
                self.tally.add(Kind::LostEvents);
                // Each marker's count is the file's: two of 2^64 − 1 overflowed the sum.
                self.lost = self.lost.saturating_add(n);
            }
            Line::Record { cpu, stamp, name, body, graph } => {
                let name = name.strip_prefix("kmem:").unwrap_or(name);
                let Some((ev, old)) = PageEvent::from_name(name) else {
                    *self.other.entry(name.to_string()).or_insert(0) += 1;
                    self.tally.add(Kind::OtherEvent);
                    return;
                };
                let mut notes = Tally::default();
                let fields = fields(body);
                let parsed = event(ev, CpuId(cpu), &fields, &mut notes, &mut self.unknown_gfp);
                let event = match parsed {
                    Ok(e) => e,
                    Err(Skip::Order) => return self.tally.add(Kind::OrderTooLarge),
                    Err(Skip::Bad) if last_cut => return self.tally.add(Kind::Truncated),
                    Err(Skip::Bad) => return self.tally.add(Kind::Malformed),
                };
                if old {
                    notes.add(Kind::OldEventName);
                }
                if graph {
                    notes.add(Kind::FunctionGraph);
                }
                let mut ns = match stamp {
                    Some(s) => {
                        if s.counter {
                            notes.add(Kind::CounterClock);
                        }
                        s.ns
                    }
                    None => {
                        notes.add(Kind::NoTimestamp);
                        self.last_ns.unwrap_or(0)
                    }
                };
                // Given the first stamp's time once one comes; noted only when the event is
                // kept below (a repeat is dropped, and its index would name a later event or
                // none).
                let unstamped = stamp.is_none() && self.last_ns.is_none();
                if stamp.is_some() && self.last_ns.is_none() {
                    for i in self.unstamped.drain(..) {
                        self.events[i].t_ns = ns;
                    }
                }
                let text = format!("{name}: {}", body.trim_end_matches("*/").trim());
                // The same page event printed twice in a row, to the letter, on one CPU is one
                // event printed again (2.6.33 printed each direct free twice). Only directly
                // after itself: with another CPU's event between, the page may have changed
                // hands (freed, allocated there, freed again here). A failed allocation can be
                // retried at once.
                let failed = matches!(event, TraceEvent::PageAlloc { pfn: None, .. });
                if !failed && self.last_event.as_ref() == Some(&(cpu, text.clone())) {
                    return self.tally.add(Kind::Repeated);
                }
                if let Some(&prev_ns) = self.per_cpu.get(&cpu) {
                    if ns < prev_ns {
                        notes.add(Kind::TimeWentBack);
                        if prev_ns - ns > JUMP_BACK_NS {
                            self.jumps_back += 1;
                            let back_ns = prev_ns - ns;
                            let jump = JumpBack { line: self.line_no, cpu, back_ns };
                            self.jump_back.get_or_insert(jump);
                        }
                        ns = prev_ns;
                    }
                }
                self.tally.merge(&notes);
                if stamp.is_some() || self.last_ns.is_some() {
                    self.last_ns = Some(ns);
                }
                self.per_cpu.insert(cpu, ns);
                self.last_event = Some((cpu, text));
                if unstamped {
                    self.unstamped.push(self.events.len());
                }
                self.events.push(TimedEvent { t_ns: ns, line: self.line_no, event });
            }
        }
    }
}

/// Remove leading mail quote markers (`>`, `> >`, `>>`).
fn strip_mail_quote(s: &str) -> &str {
    let mut t = s;
    loop {
        let u = t.trim_start_matches([' ', '\t']);
        match u.strip_prefix('>') {
            Some(rest) => t = rest,
            None => return if t.len() == s.len() { s } else { t },
        }
    }
}

/// What one line is, for `format`.
fn classify(line: &str, format: Format) -> Line<'_> {
    let t = line.trim();
    if is_shell_command(t) {
        return Line::Text;
    }
    if t.is_empty() || t.starts_with('#') {
        return Line::Header;
    }
    if let Some(n) = lost_marker(t) {
        return Line::Lost(n);
    }
    if is_tool_header(t) {
        return Line::Header;
    }
    if let Some(r) = record(line) {
        return r;
    }
    if format == Format::Ftrace {
        if let Some(r) = graph_record(line) {
            return r;
        }
    }
    if is_stack_line(t, format) {
        return Line::Stack;
    }
    Line::Text
}

/// A command after a shell prompt (`# echo 1 > …/enable`, `$ perf script`): the text
/// around a pasted trace, not a header.
fn is_shell_command(t: &str) -> bool {
    const COMMANDS: [&str; 12] = [
        "echo",
        "cat",
        "perf",
        "trace-cmd",
        "sudo",
        "cd",
        "mount",
        "sysctl",
        "sleep",
        "ls",
        "grep",
        "head",
    ];
    let Some(rest) = t.strip_prefix("# ").or_else(|| t.strip_prefix("$ ")) else {
        return false;
    };
    rest.split_whitespace().next().is_some_and(|w| COMMANDS.contains(&w))
}

/// `CPU:2 [LOST 1234 EVENTS]` (ftrace, trace-cmd) or perf's `LOST 12 events!`.
fn lost_marker(t: &str) -> Option<u64> {
    let at = t.find("[LOST ")?;
    let n = t[at + 6..].split_whitespace().next()?;
    n.parse().ok()
}

/// The first header line of a capture: ftrace's `# tracer:`, trace-cmd's `version = N`,
/// perf's `# captured on:` (`perf script --header`).
fn is_capture_start(t: &str) -> bool {
    t.starts_with("# tracer:")
        || t.starts_with("# captured on")
        || (t.starts_with("version") && is_tool_header(t))
}

/// trace-cmd's and perf's own header lines.
fn is_tool_header(t: &str) -> bool {
    let word_num = |s: &str, key: &str| {
        s.strip_prefix(key).is_some_and(|r| {
            let r = r.trim_start_matches([' ', '=']);
            !r.is_empty() && r.chars().all(|c| c.is_ascii_digit())
        })
    };
    word_num(t, "version") && t.contains('=')
        || word_num(t, "cpus=")
        || (t.starts_with("CPU ") && t.ends_with(" is empty"))
        || t.starts_with("trace-cmd: ")
}

/// A stack or callchain line: ftrace's `=> func` and `<stack trace>`, a perf frame
/// (`ffffffff8123abcd func+0x1a (vmlinux)`), an oops frame (`[<ffffffff…>] func`).
fn is_stack_line(t: &str, format: Format) -> bool {
    if t.starts_with("=>") || t == "<stack trace>" || t.starts_with("[<") {
        return true;
    }
    if format == Format::Ftrace || format == Format::TraceCmd {
        // A bare hex frame is perf's; others print `=>`.
        return false;
    }
    let first = t.split_whitespace().next().unwrap_or("");
    first.len() >= 6 && first.chars().all(|c| c.is_ascii_hexdigit()) && t.len() > first.len()
}

/// A function_graph line: `[abstime |] <cpu>) [task-pid |] [duration] |  call();`, or with
/// an event in a comment, `… |  /* name: fields */`.
fn graph_record(line: &str) -> Option<Line<'_>> {
    let bar = line.find('|')?;
    let cpu = line[..bar]
        .split_whitespace()
        .chain(line[bar + 1..].split_whitespace().take(1))
        .find_map(|tok| tok.strip_suffix(')').and_then(|n| n.parse::<u32>().ok()))?;
    let Some(open) = line.find("/*") else {
        let stamp = None;
        return Some(Line::Record { cpu, stamp, name: "(function)", body: "", graph: true });
    };
    let head = &line[..open];
    let stamp =
        head.split_whitespace().next().and_then(
            |tok| {
                if tok.contains('.') {
                    stamp(tok)
                } else {
                    None
                }
            },
        );
    let inner = &line[open + 2..];
    let inner = inner.find("*/").map_or(inner, |end| &inner[..end]).trim();
    let (name, body) = inner.split_once(": ").unwrap_or((inner.trim_end_matches(':'), ""));
    Some(Line::Record { cpu, stamp, name, body, graph: true })
}

/// A record line: `… [cpu] [flags] stamp: name: body`.
fn record(line: &str) -> Option<Line<'_>> {
    let mut toks = tokens(line);
    let cpu = loop {
        let (_, tok) = toks.next()?;
        if let Some(n) = tok.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) {
                break n.parse::<u32>().ok()?;
            }
        }
    };
    // The flags column (at most one token) may stand before the stamp.
    let mut stamp_at = None;
    for _ in 0..2 {
        let (_, tok) = toks.next()?;
        if let Some(s) = tok.strip_suffix(':').and_then(stamp) {
            stamp_at = Some(s);
            break;
        }
    }
    let stamp_v = stamp_at?;
    let (at, name) = toks.next()?;
    if name.starts_with('<') {
        // `<stack trace>`, `<user stack trace>`: the frames follow on `=>` lines.
        return Some(Line::Stack);
    }
    let Some(name) = name.strip_suffix(':') else {
        // A traced function (`func <-parent`) or a record without a name: not ours.
        return Some(Line::Record {
            cpu,
            stamp: Some(stamp_v),
            name: "(function)",
            body: "",
            graph: false,
        });
    };
    let body = line[at + name.len() + 1..].trim();
    Some(Line::Record { cpu, stamp: Some(stamp_v), name, body, graph: false })
}

/// Whitespace-separated tokens with their byte offsets.
fn tokens(s: &str) -> impl Iterator<Item = (usize, &str)> {
    s.split_whitespace().map(move |t| (t.as_ptr() as usize - s.as_ptr() as usize, t))
}

/// `12345.678901` (seconds) or `12345678` (a counter) as nanoseconds.
fn stamp(tok: &str) -> Option<Stamp> {
    let (int, frac) = match tok.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (tok, None),
    };
    if int.is_empty() || !int.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let whole: u64 = int.parse().ok()?;
    match frac {
        None => Some(Stamp { ns: whole, counter: true }),
        Some(f) if !f.is_empty() && f.len() <= 9 && f.chars().all(|c| c.is_ascii_digit()) => {
            let scale = 10u64.pow(9 - f.len() as u32);
            let ns =
                whole.checked_mul(1_000_000_000)?.checked_add(f.parse::<u64>().ok()? * scale)?;
            Some(Stamp { ns, counter: false })
        }
        Some(_) => None,
    }
}

/// `key=value` pairs of an event body. A value split off by padding (`page=    (null)`, as
/// kernels before 5.2 print a NULL `%p`) is joined back to its key.
fn fields(body: &str) -> Vec<(&str, &str)> {
    let body = body.trim_end().trim_end_matches("*/").trim_end();
    let toks: Vec<&str> = body.split_whitespace().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if let Some((k, v)) = toks[i].split_once('=') {
            if v.is_empty() && i + 1 < toks.len() && !toks[i + 1].contains('=') {
                out.push((k, toks[i + 1]));
                i += 1;
            } else {
                out.push((k, v));
            }
        }
        i += 1;
    }
    out
}

/// Why a page event was not made.
enum Skip {
    /// Fields missing or unreadable.
    Bad,
    /// An order the library does not have.
    Order,
}

/// The event `ev` from its fields.
fn event(
    ev: PageEvent,
    cpu: CpuId,
    fields: &[(&str, &str)],
    notes: &mut Tally,
    unknown_gfp: &mut BTreeMap<String, u64>,
) -> Result<TraceEvent, Skip> {
    let get = |k: &str| fields.iter().find(|(key, _)| *key == k).map(|&(_, v)| v);
    if fields.iter().any(|(k, _)| !ev.known_fields().contains(k)) {
        notes.add(Kind::VendorField);
    }
    let num = |k: &str| get(k).and_then(|v| v.parse::<i64>().ok()).ok_or(Skip::Bad);
    let order = |k: &str| {
        let o = num(k)?;
        match u8::try_from(o) {
            Ok(o) if o <= MAX_PAGE_ORDER => Ok(Order(o)),
            Ok(_) => Err(Skip::Order),
            Err(_) if o > 0 => Err(Skip::Order),
            Err(_) => Err(Skip::Bad),
        }
    };
    let mt = |k: &str, notes: &mut Tally| -> Result<MigrateType, Skip> {
        let v = num(k)?;
        Ok(u8::try_from(v).ok().and_then(MigrateType::from_u8).unwrap_or_else(|| {
            notes.add(Kind::UnknownMigratetype);
            MigrateType::Unmovable
        }))
    };
    let v = get("pfn").ok_or(Skip::Bad)?;
    let pfn_v = match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).map_err(|_| Skip::Bad)?,
        None => {
            notes.add(Kind::DecimalPfn);
            v.parse::<u64>().map_err(|_| Skip::Bad)?
        }
    };
    let flag = |k: &str, default: bool| get(k).map_or(Ok(default), |v| Ok(v != "0"));
    let e = match ev {
        PageEvent::Alloc => {
            let p = pfn_v;
            let order = order("order")?;
            let g = gfp::parse(get("gfp_flags").ok_or(Skip::Bad)?);
            if g.numeric {
                notes.add(Kind::NumericGfp);
            }
            for u in g.unknown {
                notes.add(Kind::UnknownGfp);
                *unknown_gfp.entry(u).or_insert(0) += 1;
            }
            let failed = match get("page") {
                Some(page) => is_null(page),
                None => p == 0,
            };
            let migratetype = if get("migratetype").is_some() {
                mt("migratetype", notes)?
            } else {
                g.gfp.migratetype()
            };
            TraceEvent::PageAlloc {
                cpu,
                pfn: (!failed).then_some(Pfn(p)),
                order,
                gfp: g.gfp,
                migratetype,
            }
        }
        PageEvent::Free => TraceEvent::PageFree { cpu, pfn: Pfn(pfn_v), order: order("order")? },
        PageEvent::FreeBatched => {
            let p = Pfn(pfn_v);
            // mm_pagevec_free printed an order; a batched free is order 0 from 3.3 on.
            match get("order").map(|_| order("order")).transpose()? {
                Some(o) if o.0 > 0 => TraceEvent::PageFree { cpu, pfn: p, order: o },
                _ => TraceEvent::PageFreeBatched { cpu, pfn: p },
            }
        }
        PageEvent::PcpuDrain => TraceEvent::PagePcpuDrain {
            cpu,
            pfn: Pfn(pfn_v),
            order: order("order")?,
            migratetype: mt("migratetype", notes)?,
        },
        PageEvent::ZoneLocked => {
            let p = Pfn(pfn_v);
            let order = order("order")?;
            TraceEvent::PageAllocZoneLocked {
                cpu,
                pfn: p,
                order,
                migratetype: mt("migratetype", notes)?,
                // Before the 2022 fix (5.19) the printed percpu_refill was `order == 0`.
                percpu_refill: flag("percpu_refill", order.0 == 0)?,
            }
        }
        PageEvent::Extfrag => TraceEvent::PageAllocExtfrag {
            cpu,
            pfn: Pfn(pfn_v),
            alloc_order: order("alloc_order")?,
            fallback_order: order("fallback_order")?,
            alloc_migratetype: mt("alloc_migratetype", notes)?,
            fallback_migratetype: mt("fallback_migratetype", notes)?,
            change_ownership: flag("change_ownership", false)?,
        },
    };
    Ok(e)
}

/// A `page=` value that is a NULL pointer, however the kernel or tool printed it.
fn is_null(v: &str) -> bool {
    let v = v.trim_start_matches("0x");
    v == "(null)" || v == "(nil)" || v == "NULL" || (!v.is_empty() && v.chars().all(|c| c == '0'))
}

/// Which tool printed `text`, and the signature that says so.
fn detect(text: &str) -> (Format, String) {
    let (mut ftrace, mut tracecmd, mut perf) = (0u32, 0u32, 0u32);
    for raw in text.lines().take(20_000) {
        let t = strip_mail_quote(raw.trim_end_matches('\r')).trim();
        if t.starts_with("# tracer:") || t.contains("TASK-PID") {
            return (Format::Ftrace, format!("header {t:?}"));
        }
        if is_tool_header(t) {
            return (Format::TraceCmd, format!("header {t:?}"));
        }
        let line = strip_mail_quote(raw.trim_end_matches('\r'));
        let Some(Line::Record { name, .. }) = record(line) else {
            if let Some(Line::Record { name, .. }) = graph_record(line) {
                ftrace += u32::from(PageEvent::from_name(name).is_some());
            }
            continue;
        };
        if name.starts_with("kmem:") {
            perf += 1;
        } else if PageEvent::from_name(name).is_some() {
            // trace-cmd pads the event name into a column; the kernel prints one space.
            let after = &line[line.find(name).map_or(0, |i| i + name.len() + 1)..];
            if after.starts_with("  ") {
                tracecmd += 1;
            } else {
                ftrace += 1;
            }
        }
        if ftrace + tracecmd + perf >= 200 {
            break;
        }
    }
    if perf > ftrace.max(tracecmd) {
        (Format::Perf, format!("{perf} event line(s) named kmem:…"))
    } else if tracecmd > ftrace {
        (Format::TraceCmd, format!("{tracecmd} event line(s) with padded names"))
    } else {
        (Format::Ftrace, format!("{ftrace} event line(s) in the kernel's own layout"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> (Trace, TraceEvent) {
        let t = parse(line, Format::Auto).unwrap();
        assert_eq!(t.events.len(), 1, "{line}");
        (t.clone(), t.events[0].event)
    }

    #[test]
    fn each_tools_prefix_gives_cpu_time_and_event() {
        let ftrace = "            bash-2331    [003] d..1.  4087.349165: mm_page_alloc: \
                      page=000000004b8f4e6c pfn=0x10a3c1 order=0 migratetype=1 \
                      gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_ZERO\n";
        let (t, e) = one(ftrace);
        assert_eq!(t.format, Format::Ftrace);
        assert_eq!(t.events[0].t_ns, 4_087_349_165_000);
        let TraceEvent::PageAlloc { cpu, pfn, order, .. } = e else { panic!("{e:?}") };
        assert_eq!((cpu, pfn, order), (CpuId(3), Some(Pfn(0x10a3c1)), Order(0)));

        let perf = "perf  6429 [000]    22.498450:             kmem:mm_page_alloc: \
                    page=0x176a17 pfn=1534487 order=0 migratetype=0 gfp_flags=GFP_KERNEL\n";
        let (t, e) = one(perf);
        assert_eq!(t.format, Format::Perf);
        assert_eq!(t.tally.get(Kind::DecimalPfn), 1);
        assert!(matches!(e, TraceEvent::PageAlloc { pfn: Some(Pfn(1534487)), .. }));

        let tc = "make-16810 [004] .....  2319.000857: mm_page_alloc:        \
                  page=0xffffea00001347a7 pfn=0x1347a7 order=0 migratetype=1 gfp_flags=0x152c4a\n";
        let (t, _) = one(tc);
        assert_eq!(t.format, Format::TraceCmd);
        assert_eq!(t.tally.get(Kind::NumericGfp), 1);
    }

    #[test]
    fn failures_in_every_spelling_of_null() {
        for page in ["          (null)", "(null)", "0000000000000000", "(nil)", "0x0"] {
            let line = format!(
                "  a-1 [001] .... 1.000001: mm_page_alloc: page={page} pfn=0 order=9 \
                 migratetype=1 gfp_flags=GFP_TRANSHUGE\n"
            );
            let (_, e) = one(&line);
            assert!(matches!(e, TraceEvent::PageAlloc { pfn: None, .. }), "{page}: {e:?}");
        }
        // A hashed pointer with pfn 0 is a real page at frame 0.
        let (_, e) = one("a-1 [001] .... 1.0: mm_page_alloc: page=00000000d2be5665 pfn=0x0 \
                          order=0 migratetype=0 gfp_flags=GFP_KERNEL\n");
        assert!(matches!(e, TraceEvent::PageAlloc { pfn: Some(Pfn(0)), .. }));
    }

    #[test]
    fn only_a_line_printed_twice_in_a_row_is_a_repeat() {
        let free =
            |cpu: u32| format!("a-1 [{cpu:03}] .... 1.0: mm_page_free: page=0 pfn=0x10 order=0\n");
        let alloc = "b-2 [001] .... 1.0: mm_page_alloc: page=1 pfn=0x10 order=0 migratetype=0 \
                     gfp_flags=GFP_KERNEL\n";
        let twice = parse(&[free(0), free(0)].concat(), Format::Ftrace).unwrap();
        assert_eq!((twice.events.len(), twice.tally.get(Kind::Repeated)), (1, 1));
        // Freed on CPU 0, allocated on CPU 1, freed on CPU 0 again: three real events.
        let handed =
            parse(&[free(0), alloc.to_string(), free(0)].concat(), Format::Ftrace).unwrap();
        assert_eq!((handed.events.len(), handed.tally.get(Kind::Repeated)), (3, 0));
    }

    /// Found by `fuzz_smoke::traces`: an unstamped event dropped as a repeat left its index in
    /// the list of events to be given the first stamp, and the first stamped event then wrote
    /// past the end of the events (index out of bounds) instead of parsing.
    #[test]
    fn fuzz_crash_unstamped_repeat_before_the_first_stamp() {
        let text = "# tracer: function_graph\n\
                    \x20 24)               |  /* mm_page_free: page=0 pfn=16 order=0 */\n\
                    \x20 24)               |  /* mm_page_free: page=0 pfn=16 order=0 */\n\
                    1287587.105151 |   1)               |  /* mm_page_free: page=1 pfn=17 order=0 */\n";
        let t = parse(text, Format::Auto).unwrap();
        assert_eq!((t.events.len(), t.tally.get(Kind::Repeated)), (2, 1));
        // The unstamped event takes the first stamp's time.
        assert!(t.events.iter().all(|e| e.t_ns == 1_287_587_105_151_000), "{:?}", t.events);
    }

    /// Lost-event counts are summed saturating: two markers of 2^64 − 1 panicked (add
    /// overflow) in a debug build and wrapped to 2^64 − 2 in a release build.
    #[test]
    fn huge_lost_event_counts_saturate() {
        let text = "# tracer: nop\n\
                    CPU:0 [LOST 18446744073709551615 EVENTS]\n\
                    CPU:1 [LOST 18446744073709551615 EVENTS]\n\
                    \x20   cat-1 [000] ....  1.000000: mm_page_free: page=0 pfn=16 order=0\n";
        let t = parse(text, Format::Auto).unwrap();
        assert_eq!(t.lost_events, u64::MAX);
        assert_eq!(t.events.len(), 1);
    }

    #[test]
    fn stamps_and_fields() {
        assert_eq!(stamp("1.5"), Some(Stamp { ns: 1_500_000_000, counter: false }));
        assert_eq!(stamp("22.498450123"), Some(Stamp { ns: 22_498_450_123, counter: false }));
        assert_eq!(stamp("1234"), Some(Stamp { ns: 1234, counter: true }));
        assert_eq!(stamp("1.x"), None);
        assert_eq!(fields("page=   (null) pfn=0 x"), vec![("page", "(null)"), ("pfn", "0")]);
        assert_eq!(strip_mail_quote("> >  a"), "  a");
        assert_eq!(strip_mail_quote("a > b"), "a > b");
    }

    #[test]
    fn text_that_is_no_trace_is_an_error_that_says_so() {
        let e = parse("hello\nworld\n", Format::Auto).unwrap_err();
        assert!(e.to_string().contains("not a trace"), "{e}");
        let sched = "  bash-1 [000] d... 1.0: sched_switch: prev_comm=bash\n";
        let e = parse(sched, Format::Auto).unwrap_err();
        assert!(e.to_string().contains("sched_switch ×1"), "{e}");
        assert!(binary_hint(b"PERFILE2\0\0").unwrap().contains("perf script"));
    }

    /// `cat a.trace b.trace`: the second `# tracer:` header after page events is refused with
    /// its line, instead of one timeline made of two captures.
    #[test]
    fn a_second_capture_is_refused_and_a_big_step_back_is_noted() {
        let one = "# tracer: nop\n#\n  a-1 [000] .... 5.0: mm_page_free: page=0 pfn=0x10 order=0\n";
        let e = parse(&[one, one].concat(), Format::Auto).unwrap_err();
        assert_eq!(
            e,
            TraceError::Concatenated { line: 4, header: "# tracer: nop".into(), events: 1 }
        );
        assert!(e.to_string().contains("two captures concatenated"), "{e}");
        let tc =
            "version = 6\ncpus=1\n  a-1 [000] .... 5.0: mm_page_free: page=0 pfn=0x10 order=0\n";
        assert!(matches!(
            parse(&[tc, tc].concat(), Format::Auto),
            Err(TraceError::Concatenated { line: 4, .. })
        ));
        // Without a header: time going back over a second on one CPU is noted (and raised).
        let line = |t: &str, pfn: u32| {
            format!("  a-1 [002] .... {t}: mm_page_free: page=0 pfn={pfn:#x} order=0\n")
        };
        let t = parse(
            &[line("500.0", 1), line("499.5", 2), line("20.0", 3), line("21.0", 4), line("3.0", 5)]
                .concat(),
            Format::Ftrace,
        )
        .unwrap();
        assert_eq!(t.jump_back, Some(JumpBack { line: 3, cpu: 2, back_ns: 480_000_000_000 }));
        assert_eq!(t.jumps_back, 3, "every stamp of the second capture is behind");
        assert_eq!(t.tally.get(Kind::TimeWentBack), 4);
        assert!(t.events.iter().all(|e| e.t_ns == 500_000_000_000));
        assert!(t.jump_back.unwrap().to_string().contains("time on CPU 2 goes back 480.000 s"));
    }
}

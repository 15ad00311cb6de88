//! The lab's parsers under a seeded mutation fuzzer, on stable, in the normal test suite.
//!
//! The lab is a binary crate, so a libFuzzer target cannot link its parsers; instead each test
//! here starts from valid inputs (the shipped machine files and cost profile, a preset file,
//! real `/proc/zoneinfo` dumps, the trace fixtures, result rows), mutates them with a
//! deterministic generator (byte flips, deletions, duplicated, dropped and swapped lines,
//! truncation, numbers replaced by extremes, stray TOML/JSON punctuation) and calls the parser.
//! Every input must come back as `Ok` or `Err`: a panic is caught and reported with the input
//! that caused it. A crash input found here becomes a named test next to its parser.
//!
//! The same seeds give the same inputs on every run, so a failure here reproduces.
//!
//! Long mode: with `PAGEALLOC_FUZZ_SECONDS=N` in the environment, each test runs further
//! rounds of [`CASES`] mutations until N seconds have passed, and says how many inputs it ran.
//! Round 0 is the default run; round `r` draws from a generator seeded by the parser's stream
//! and `r`, so a crash names its round and reproduces in any run that reaches it.

use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::{Duration, Instant};

use pagealloc_testkit::rng::Rng;

/// Mutated inputs per parser and round: a few seconds of the debug build for all six on one
/// core.
const CASES: usize = 5000;

/// The environment variable that turns on long mode: seconds of rounds per parser.
const FUZZ_SECONDS_VAR: &str = "PAGEALLOC_FUZZ_SECONDS";

/// What a number in the text may be replaced by: the edges of every integer type the parsers
/// read into, float extremes and non-numbers (TOML's `nan`/`inf` are valid floats), and digit
/// strings longer than any type.
const EXTREMES: &[&str] = &[
    "0",
    "-0",
    "-1",
    "1",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "-2147483649",
    "4294967295",
    "4294967296",
    "1099511627776",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "1e308",
    "-1e308",
    "1e309",
    "4.9e-324",
    "0.0",
    "-0.0",
    "NaN",
    "nan",
    "-nan",
    "inf",
    "-inf",
    "+inf",
    "0x7fffffffffffffff",
    "0xffffffffffffffff",
    "99999999999999999999999999999999999999999999999999999999999999999999999999999999",
];

/// Bytes the parsers give meaning to, inserted at random places.
const PUNCTUATION: &[&str] = &[
    "\n", "\r\n", "\r", "\t", " ", "=", "\"", "'", "[", "]", "[[", "{", "}", ",", ":", "#", ".",
    "-", "|", "0x", "\u{feff}", "\u{0}", "é", "\u{fffd}",
];

/// Apply 1 to 4 random mutations to `seed`.
fn mutate(rng: &mut Rng, seed: &str) -> String {
    let mut bytes = seed.as_bytes().to_vec();
    for _ in 0..=rng.below(4) {
        mutate_once(rng, &mut bytes);
    }
    // The parsers take text; the trace reader makes it so with the same lossy conversion.
    String::from_utf8_lossy(&bytes).into_owned()
}

fn pick<'a>(rng: &mut Rng, from: &[&'a str]) -> &'a str {
    from[rng.below(from.len() as u64) as usize]
}

fn line_spans(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' {
            spans.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < bytes.len() {
        spans.push((start, bytes.len()));
    }
    spans
}

/// The runs of digits in `bytes`, with a leading `-` and any `.`, `e` or `_` inside.
fn number_spans(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let start = if i > 0 && bytes[i - 1] == b'-' { i - 1 } else { i };
            let mut end = i;
            while end < bytes.len()
                && (bytes[end].is_ascii_alphanumeric() || b"._".contains(&bytes[end]))
            {
                end += 1;
            }
            spans.push((start, end));
            i = end;
        } else {
            i += 1;
        }
    }
    spans
}

fn mutate_once(rng: &mut Rng, bytes: &mut Vec<u8>) {
    let len = bytes.len() as u64;
    let at = |rng: &mut Rng| rng.below(len + 1) as usize;
    match rng.below(10) {
        // A number replaced by an extreme (the most useful mutation: weighted double).
        0 | 1 => {
            let spans = number_spans(bytes);
            if !spans.is_empty() {
                let (s, e) = spans[rng.below(spans.len() as u64) as usize];
                bytes.splice(s..e, pick(rng, EXTREMES).bytes());
            }
        }
        // A bit flipped.
        2 if len > 0 => {
            let i = rng.below(len) as usize;
            bytes[i] ^= 1 << rng.below(8);
        }
        // A byte replaced by a random one.
        3 if len > 0 => {
            let i = rng.below(len) as usize;
            bytes[i] = rng.next_u64() as u8;
        }
        // A range deleted.
        4 => {
            let s = at(rng);
            let e = (s + rng.below(32) as usize).min(bytes.len());
            bytes.drain(s..e);
        }
        // Cut short.
        5 => {
            let s = at(rng);
            bytes.truncate(s);
        }
        // A line duplicated, dropped, or moved.
        6..=8 => {
            let lines = line_spans(bytes);
            if lines.is_empty() {
                return;
            }
            let (s, e) = lines[rng.below(lines.len() as u64) as usize];
            let line = bytes[s..e].to_vec();
            match rng.below(3) {
                0 => {
                    let to = lines[rng.below(lines.len() as u64) as usize].0;
                    bytes.splice(to..to, line);
                }
                1 => {
                    bytes.drain(s..e);
                }
                _ => {
                    bytes.drain(s..e);
                    let to = rng.below(bytes.len() as u64 + 1) as usize;
                    bytes.splice(to..to, line);
                }
            }
        }
        // Punctuation inserted.
        _ => {
            let s = at(rng);
            bytes.splice(s..s, pick(rng, PUNCTUATION).bytes());
        }
    }
}

/// How a parser fared over all cases.
#[derive(Debug, Default)]
struct Tally {
    ok: usize,
    err: usize,
}

/// How long each parser's test runs rounds: `None` (one round) unless
/// [`FUZZ_SECONDS_VAR`] is set.
fn budget() -> Option<Duration> {
    let v = std::env::var(FUZZ_SECONDS_VAR).ok()?;
    let secs: u64 = v
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{FUZZ_SECONDS_VAR}={v:?}: takes a whole number of seconds"));
    Some(Duration::from_secs(secs))
}

/// The generator of `stream`'s round `round`: round 0's seed is the one the default run has
/// always used, so its inputs are unchanged.
fn round_rng(stream: u64, round: u64) -> Rng {
    Rng::new(0x7061_7273_6572_0000 ^ stream ^ round.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// Run `parse` over the seeds themselves and rounds of `CASES` mutations of them (one round,
/// or as many as [`budget`] allows); panic, naming the input and its round, if any call
/// panicked. `parse` says whether the input was accepted.
fn fuzz(name: &str, stream: u64, seeds: &[&str], mut parse: impl FnMut(&str) -> bool) -> Tally {
    let budget = budget();
    let started = Instant::now();
    let mut tally = Tally::default();
    run_inputs(name, "the seeds", seeds.iter().map(|s| (*s).to_string()), &mut parse, &mut tally);
    let mut round = 0u64;
    loop {
        let mut rng = round_rng(stream, round);
        let inputs = (0..CASES).map(|_| {
            let seed = seeds[rng.below(seeds.len() as u64) as usize];
            mutate(&mut rng, seed)
        });
        run_inputs(name, &format!("round {round}"), inputs, &mut parse, &mut tally);
        round += 1;
        if budget.is_none_or(|b| started.elapsed() >= b) {
            break;
        }
    }
    let inputs = tally.ok + tally.err;
    eprintln!(
        "{name}: {inputs} inputs ({round} round(s) of {CASES} mutations and {} seeds) in \
         {:.1} s: {} accepted, {} refused",
        seeds.len(),
        started.elapsed().as_secs_f64(),
        tally.ok,
        tally.err
    );
    tally
}

/// Call `parse` on every input, counting its answers in `tally`; panic at the end naming
/// the first input that panicked, and where it came from (`what`: the seeds or a round).
fn run_inputs(
    name: &str,
    what: &str,
    inputs: impl Iterator<Item = String>,
    parse: &mut impl FnMut(&str) -> bool,
    tally: &mut Tally,
) {
    let mut crashes: Vec<(String, String)> = Vec::new();
    let mut count = 0usize;
    for input in inputs {
        count += 1;
        match catch_unwind(AssertUnwindSafe(|| parse(&input))) {
            Ok(true) => tally.ok += 1,
            Ok(false) => tally.err += 1,
            Err(payload) => {
                let msg = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_string()))
                    .unwrap_or_default();
                crashes.push((input, msg));
            }
        }
    }
    if let Some((input, msg)) = crashes.first() {
        let mut report = format!(
            "{name}: {} of the {count} inputs of {what} panicked; the first:\n",
            crashes.len()
        );
        let _ = writeln!(report, "panic: {msg}\ninput ({} bytes): {input:?}", input.len());
        panic!("{report}");
    }
}

/// The seeds must parse, and the mutations must reach both answers: a harness whose every
/// input is refused at the first byte exercises nothing past it.
fn check(name: &str, seeds: usize, tally: &Tally) {
    assert!(tally.ok >= seeds, "{name}: a seed input does not parse ({tally:?})");
    assert!(tally.err > CASES / 20, "{name}: mutations are almost never refused ({tally:?})");
    assert!(
        tally.ok > seeds + CASES / 50,
        "{name}: mutations are almost never accepted ({tally:?})"
    );
}

/// Round 0 draws the inputs the default run always drew; later rounds draw new ones, the
/// same for a round number on every run.
#[test]
fn rounds_draw_new_inputs_and_round_0_is_the_default_run() {
    let first = |stream, round| round_rng(stream, round).next_u64();
    assert_eq!(first(3, 0), Rng::new(0x7061_7273_6572_0000 ^ 3).next_u64());
    assert_eq!(first(3, 7), first(3, 7));
    let draws: std::collections::HashSet<u64> =
        (1..=6).flat_map(|stream| (0..50).map(move |r| first(stream, r))).collect();
    assert_eq!(draws.len(), 6 * 50, "every (parser, round) has its own inputs");
}

const MACHINES: &[&str] = &[
    include_str!("machine/builtin/cascadelake-2s.toml"),
    include_str!("machine/builtin/cortex-a53.toml"),
    include_str!("machine/builtin/haswell-2s-48.toml"),
    include_str!("machine/builtin/icl-2s-128.toml"),
    include_str!("machine/builtin/lab-2cpu.toml"),
    include_str!("machine/builtin/skylake-1s.toml"),
    include_str!("machine/builtin/spr-2s-224.toml"),
    include_str!("machine/builtin/unknown-micro.toml"),
    include_str!("machine/builtin/unknown-trace.toml"),
];

#[test]
fn machine_files() {
    // A user's machine file may not take a built-in's name: the seeds are renamed.
    let seeds: Vec<String> =
        MACHINES.iter().map(|t| t.replacen("name = \"", "name = \"fuzz-", 1)).collect();
    let seeds: Vec<&str> = seeds.iter().map(String::as_str).collect();
    let path = Path::new("fuzz/machine.toml");
    let tally = fuzz("machine", 1, &seeds, |t| crate::machine::file::parse(path, t).is_ok());
    check("machine", seeds.len(), &tally);
}

const PRESETS: &[&str] = &[
    r#"# my-variant.toml
name = "my-variant"
base = "modern"
description = "modern with v1's 4/5 decay and no ZONE_BELOW_HIGH"
[switches]
high_decay = "four-fifths"
zone_below_high = false
[tunables]
percpu_pagelist_high_fraction = 16
pcp_batch_scale_max = 3
lowmem_reserve_ratio = [256, 256, 64, 0]
min_free_kbytes = "default"
"#,
    r#"base = "hpc-limit-v1"
[tunables]
percpu_pagelist_high_fraction = 8
decay_period_ticks = 100
min_free_kbytes = 65536
watermark_scale_factor = 10
watermark_boost_factor = 15000
"#,
];

#[test]
fn preset_files() {
    let path = Path::new("fuzz/preset.toml");
    let tally = fuzz("preset", 2, PRESETS, |t| crate::preset_file::parse(path, t).is_ok());
    check("preset", PRESETS.len(), &tally);
}

#[test]
fn cost_profiles() {
    let seeds = [include_str!("../data/cost-default.toml")];
    let path = Path::new("fuzz/cost.toml");
    let tally =
        fuzz("cost", 3, &seeds, |t| crate::model::cost::CostProfile::parse(path, t).is_ok());
    check("cost", seeds.len(), &tally);
}

const ZONEINFOS: &[&str] = &[
    include_str!("../tests/fixtures/realdata/jc-zoneinfo.txt"),
    include_str!("../tests/fixtures/realdata/node_exporter-zoneinfo.txt"),
    include_str!("../tests/fixtures/realdata/pcp-qa-meminfo-root-006-zoneinfo.txt"),
    include_str!("../tests/fixtures/realdata/procfs-fixture-zoneinfo.txt"),
    include_str!("../tests/fixtures/section-2-9-zoneinfo.txt"),
];

#[test]
fn zoneinfo_dumps() {
    let tally = fuzz("zoneinfo", 4, ZONEINFOS, |t| crate::zoneinfo::ZoneInfo::parse(t).is_ok());
    check("zoneinfo", ZONEINFOS.len(), &tally);
}

const TRACES: &[&str] = &[
    include_str!("../tests/fixtures/traces/ftrace-2.6.33.txt"),
    include_str!("../tests/fixtures/traces/ftrace-6x.txt"),
    include_str!("../tests/fixtures/traces/function-graph.txt"),
    include_str!("../tests/fixtures/traces/mail-paste.txt"),
    include_str!("../tests/fixtures/traces/perf-script.txt"),
    include_str!("../tests/fixtures/traces/trace-cmd-report.txt"),
    include_str!("../tests/fixtures/traces/trace-pipe-4x.txt"),
];

#[test]
fn traces() {
    use crate::trace::Format;
    let formats = [Format::Auto, Format::Ftrace, Format::TraceCmd, Format::Perf];
    let mut i = 0;
    // Each input under a forced format in turn, and mostly the detected one.
    let tally = fuzz("trace", 5, TRACES, |t| {
        i += 1;
        let format =
            if i <= TRACES.len() || i % 2 == 0 { Format::Auto } else { formats[i / 2 % 4] };
        crate::trace::parse(t, format).is_ok()
    });
    check("trace", TRACES.len(), &tally);
}

const ROWS: &str = r#"{"workload":"trunc","preset":"modern","runner":"model","machine":"lab-2cpu","seed":3,"params":{"files":2.0},"metric":"elapsed","sample":0,"value":1.5,"unit":"ms","better":"lower","revision":"abc","wall_s":0.1}
{"workload":"netperf-udp","preset":"v1","runner":"real","machine":"spr-2s-224","seed":18446744073709551615,"params":{"size":4096.0,"threads":8.0},"metric":"throughput","sample":4294967295,"value":1e300,"unit":"Mbit/s","better":"higher","table":"2-9","t":12,"cpu":3,"revision":"bdde5f9-dirty","wall_s":12.25}

{"workload":"page-fault","preset":"dir/my-variant.toml","runner":"model","machine":"lab-2cpu","seed":0,"params":{},"metric":"p99","sample":1,"value":-0.0,"unit":"ns","better":"lower","cpu":0,"revision":"unknown","wall_s":0.0}
"#;

#[test]
fn result_rows() {
    let path = Path::new("fuzz/rows.jsonl");
    let tally = fuzz("result rows", 6, &[ROWS], |t| crate::results::parse(path, t).is_ok());
    check("result rows", 1, &tally);
}

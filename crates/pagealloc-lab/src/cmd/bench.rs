//! `pagealloc bench`: the same patterns against [`PageHeap`] and the allocators a user would
//! otherwise pick — mimalloc, jemalloc, the system allocator, `buddy_system_allocator` — in one
//! run, as a table of ns per alloc+free pair (or JSON rows). mimalloc and jemalloc are C
//! libraries, built only with the lab's `peers` feature; without it the run says it left them
//! out.

use std::fmt::Write as _;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::bench::{median_stddev, run_pattern, Pattern, PATTERNS};
use crate::heap::{BuddyFrames, GlobalPages, HeapOptions, HugePages, PageHeap};

/// Allocator names, in column order.
pub const ALLOCATORS: &[&str] =
    &["pagealloc", "mimalloc", "jemalloc", "system", "buddy_system_allocator"];

/// The C allocators of [`ALLOCATORS`], in this binary only with the `peers` feature.
pub const C_PEERS: &[&str] = &["mimalloc", "jemalloc"];

/// How to get the C allocators into the binary, for the messages that name them.
const PEERS_HINT: &str = "C allocators, built with `--features peers`: \
                          cargo run --release -p pagealloc-lab --features peers -- bench";

/// Is allocator `name` built into this binary?
fn built_in(name: &str) -> bool {
    cfg!(feature = "peers") || !C_PEERS.contains(&name)
}

/// The allocators this binary leaves out (none with the `peers` feature).
fn left_out() -> Vec<&'static str> {
    ALLOCATORS.iter().copied().filter(|a| !built_in(a)).collect()
}

/// About how long one timed run may take (slow allocators get fewer pairs), ns.
const REP_BUDGET_NS: f64 = 200e6;

/// What every allocator does with a block, stated in the output.
const WORK: &str = "each allocation writes an 8-byte tag into the block's first bytes and each \
                    free reads it back first, with every allocator";

/// Arguments of `pagealloc bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Timed runs per (allocator, pattern); the table shows their median and standard
    /// deviation. Default 5 (1 with --quick).
    #[arg(long)]
    pub reps: Option<u32>,
    /// A short run (1/256 of the work, one rep unless --reps): checks that everything runs,
    /// not how fast.
    #[arg(long)]
    pub quick: bool,
    /// Print one JSON document (machine, metadata, init time, rows) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON document to this file.
    #[arg(long, value_name = "PATH")]
    pub json_out: Option<std::path::PathBuf>,
    /// Only these patterns (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub patterns: Vec<String>,
    /// Only these allocators (comma-separated): pagealloc, system, buddy_system_allocator,
    /// and mimalloc and jemalloc when the lab is built with `--features peers` (they are C
    /// libraries; without the feature a default run leaves them out and says so).
    #[arg(long, value_delimiter = ',')]
    pub allocators: Vec<String>,
    /// Arena size of the PageHeap (and the frame range of buddy_system_allocator), MiB.
    #[arg(long, default_value_t = 1024)]
    pub arena_mib: usize,
    /// Huge-page backing of the PageHeap arena.
    #[arg(long, value_enum, default_value_t = Huge::None)]
    pub huge: Huge,
    /// Fault the whole PageHeap arena in at start (counted in the init time).
    #[arg(long)]
    pub prefault: bool,
    /// Policy preset of the PageHeap: a built-in name or a preset file (.toml), its switches
    /// and tunables.
    #[arg(long, default_value = "modern", value_name = "NAME_OR_FILE")]
    pub preset: String,
}

/// Every allocator under test, built once.
/// How the PageHeap's arena is backed (`--huge`): the command line's names for
/// [`HugePages`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Huge {
    /// Ordinary 4 KiB pages (whatever the system's THP setting does to an anonymous mapping).
    #[default]
    None,
    /// Ask for transparent huge pages (`madvise(MADV_HUGEPAGE)`).
    Thp,
    /// Map 2 MiB pages from the hugetlb pool (`MAP_HUGETLB`); needs `vm.nr_hugepages` to
    /// cover the arena plus 4 MiB.
    Hugetlb,
}

impl Huge {
    fn pages(self) -> HugePages {
        match self {
            Huge::None => HugePages::None,
            Huge::Thp => HugePages::Thp,
            Huge::Hugetlb => HugePages::Hugetlb,
        }
    }
}

struct Peers {
    heap: PageHeap,
    #[cfg(feature = "peers")]
    mimalloc: GlobalPages<mimalloc::MiMalloc>,
    #[cfg(feature = "peers")]
    jemalloc: GlobalPages<tikv_jemallocator::Jemalloc>,
    system: GlobalPages<std::alloc::System>,
    buddy: BuddyFrames,
}

impl Peers {
    fn run(&self, name: &str, p: &Pattern, pairs: u64, checked: bool) -> Result<f64> {
        let r = match name {
            "pagealloc" => run_pattern(&self.heap, p, pairs, checked),
            #[cfg(feature = "peers")]
            "mimalloc" => run_pattern(&self.mimalloc, p, pairs, checked),
            #[cfg(feature = "peers")]
            "jemalloc" => run_pattern(&self.jemalloc, p, pairs, checked),
            "system" => run_pattern(&self.system, p, pairs, checked),
            "buddy_system_allocator" => run_pattern(&self.buddy, p, pairs, checked),
            _ => bail!("unknown allocator `{name}`"),
        };
        match r {
            Ok(r) => Ok(r.ns_per_pair),
            Err(f) => bail!("{name} failed the checks of pattern {}: {f}", p.name),
        }
    }

    /// After a pattern: every page of the heap must be back (drained), every invariant hold.
    fn check_heap_idle(&self) -> Result<()> {
        let pa = self.heap.allocator();
        let cpu = pa.cpu(pagealloc::CpuId(0)).context("cpu 0")?;
        pa.drain_all_pages(cpu, None);
        if pa.nr_free_pages() != pa.managed_pages() {
            bail!(
                "pagealloc: {} of {} pages free after a pattern freed every block",
                pa.nr_free_pages().0,
                pa.managed_pages().0
            );
        }
        pagealloc::debug::validate(pa).map_err(|e| anyhow::anyhow!("pagealloc invariant: {e}"))
    }
}

/// One (allocator, pattern) result.
#[derive(Debug, Clone, serde::Serialize)]
struct Row {
    allocator: String,
    pattern: String,
    threads: u32,
    outstanding: usize,
    /// `None` for the random mix.
    order: Option<u8>,
    ns_per_pair: f64,
    stddev: f64,
}

/// The machine, as far as the output needs it.
#[derive(Debug, serde::Serialize)]
pub struct Machine {
    /// `model name` of /proc/cpuinfo.
    pub cpu_model: String,
    /// CPUs this process may run on.
    pub logical_cpus: usize,
    /// The kernel release.
    pub kernel: String,
}

/// This machine: CPU model, CPUs, kernel.
pub fn machine() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')))
        .map_or_else(|| "unknown".to_owned(), |(_, v)| v.trim().to_owned());
    let logical_cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map_or_else(|_| "unknown".to_owned(), |s| s.trim().to_owned());
    Machine { cpu_model, logical_cpus, kernel }
}

/// Run the command.
pub fn run(args: &Args) -> Result<()> {
    crate::output::check_optional(args.json_out.as_deref(), "the JSON file")?;
    let patterns: Vec<&Pattern> = if args.patterns.is_empty() {
        PATTERNS.iter().collect()
    } else {
        args.patterns
            .iter()
            .map(|n| {
                crate::bench::pattern(n).with_context(|| {
                    let all: Vec<_> = PATTERNS.iter().map(|p| p.name).collect();
                    format!("unknown pattern `{n}` (patterns: {})", all.join(", "))
                })
            })
            .collect::<Result<_>>()?
    };
    let allocators: Vec<&str> = if args.allocators.is_empty() {
        ALLOCATORS.iter().copied().filter(|a| built_in(a)).collect()
    } else {
        args.allocators
            .iter()
            .map(|n| {
                let a = ALLOCATORS.iter().copied().find(|a| a == n).with_context(|| {
                    format!("unknown allocator `{n}` (allocators: {})", ALLOCATORS.join(", "))
                })?;
                if !built_in(a) {
                    bail!("allocator `{a}` is not in this build ({PEERS_HINT})");
                }
                Ok(a)
            })
            .collect::<Result<_>>()?
    };
    // Only a default run reports what it left out: a chosen list is what was asked for.
    let left_out = if args.allocators.is_empty() { left_out() } else { Vec::new() };
    let reps = args.reps.unwrap_or(if args.quick { 1 } else { 5 }).max(1);
    if args.arena_mib < 128 {
        bail!("--arena-mib must be at least 128 (the random mix may keep up to 64 MiB live)");
    }
    let preset = crate::preset_file::resolve(&args.preset)?;
    let bytes = args.arena_mib << 20;
    let mut opts = HeapOptions::new(bytes);
    opts.policy = preset.policy;
    opts.tunables = preset.tunables;
    opts.huge = args.huge.pages();
    opts.prefault = args.prefault;
    let peers = Peers {
        heap: PageHeap::new(&opts).context("building the PageHeap")?,
        #[cfg(feature = "peers")]
        mimalloc: GlobalPages::new(mimalloc::MiMalloc),
        #[cfg(feature = "peers")]
        jemalloc: GlobalPages::new(tikv_jemallocator::Jemalloc),
        system: GlobalPages::new(std::alloc::System),
        buddy: BuddyFrames::new(bytes).context("mapping the buddy_system_allocator arena")?,
    };
    let machine = machine();
    let started = Instant::now();

    let mut rows = Vec::new();
    // A two-thread pattern's figures depend on where the host put the two CPUs (a virtual
    // machine's host may move them onto cores that share no cache): probed around its runs.
    let probe = |p: &Pattern| (p.threads >= 2).then(crate::calibrate::core_to_core_probe).flatten();
    let mut probes: Vec<(&str, crate::validation::Probe)> = Vec::new();
    for p in &patterns {
        let before = probe(p);
        let pairs =
            if args.quick { (p.pairs / 256).max(p.outstanding as u64 * 4) } else { p.pairs };
        // Untimed warm-up with the full checks; its speed sizes the timed runs, so a slow
        // allocator does fewer pairs (about REP_BUDGET_NS per run, at least 16 rounds).
        let mut per_rep = Vec::with_capacity(allocators.len());
        for a in &allocators {
            let warm_ns = peers.run(a, p, pairs.min(1 << 16), true)?;
            let fit = (REP_BUDGET_NS / warm_ns.max(1.0)) as u64;
            per_rep
                .push(fit.clamp(p.outstanding as u64 * 16, pairs.max(p.outstanding as u64 * 16)));
        }
        // The timed runs, interleaving allocators within each rep so drift hits every column
        // alike.
        let mut samples = vec![Vec::with_capacity(reps as usize); allocators.len()];
        for _ in 0..reps {
            for (i, a) in allocators.iter().enumerate() {
                samples[i].push(peers.run(a, p, per_rep[i], false)?);
            }
        }
        if let Some(c) = crate::validation::Probe::of(before, probe(p)) {
            probes.push((p.name, c));
        }
        if allocators.contains(&"pagealloc") {
            peers.check_heap_idle()?;
        }
        for (a, s) in allocators.iter().zip(&samples) {
            let (median, stddev) = median_stddev(s);
            rows.push(Row {
                allocator: (*a).to_owned(),
                pattern: p.name.to_owned(),
                threads: p.threads,
                outstanding: p.outstanding,
                order: p.order,
                ns_per_pair: median,
                stddev,
            });
        }
    }
    let elapsed = started.elapsed();

    let doc = serde_json::json!({
        "machine": machine,
        "reps": reps,
        "quick": args.quick,
        "work": WORK,
        "pagealloc": {
            "arena_mib": args.arena_mib,
            "huge": format!("{:?}", args.huge).to_lowercase(),
            "preset": args.preset,
            "cpus": peers.heap.allocator().nr_cpus(),
            "cpu_source": peers.heap.cpu_source().name(),
            "metadata_bytes_per_frame": peers.heap.metadata_bytes_per_frame(),
            "init_ms": peers.heap.init_time().as_secs_f64() * 1e3,
        },
        "rows": rows,
        "left_out": left_out,
        "core_to_core_ns": probes
            .iter()
            .map(|(n, c)| ((*n).to_owned(), serde_json::json!([c.before, c.after])))
            .collect::<serde_json::Map<_, _>>(),
    });
    if let Some(path) = &args.json_out {
        std::fs::write(path, serde_json::to_string_pretty(&doc)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    print!("{}", table(args, &machine, &peers.heap, &patterns, &allocators, &rows, reps));
    if let Some(line) = probe_line(&probes) {
        println!("{line}");
    }
    println!("({} patterns x {} allocators in {:.1?})", patterns.len(), allocators.len(), elapsed);
    if !left_out.is_empty() {
        println!("left out: {} ({PEERS_HINT})", left_out.join(", "));
    }
    Ok(())
}

/// The core-to-core probes around the two-thread patterns, and which of them the host moved
/// the CPUs during (one probe over twice the other: their figures mix two placements).
fn probe_line(probes: &[(&str, crate::validation::Probe)]) -> Option<String> {
    if probes.is_empty() {
        return None;
    }
    let each: Vec<String> = probes
        .iter()
        .map(|(n, c)| {
            format!(
                "{n} {:.1}/{:.1} ns{}",
                c.before,
                c.after,
                if c.moved() { " (moved during it: its figures mix two placements)" } else { "" }
            )
        })
        .collect();
    Some(format!(
        "a line between the two CPUs, before/after each two-thread pattern: {} (about 25 ns with \
         the lab VM's CPUs on cores that share a cache, 200 with them apart; docs/performance.md)",
        each.join(", ")
    ))
}

fn table(
    args: &Args,
    machine: &Machine,
    heap: &PageHeap,
    patterns: &[&Pattern],
    allocators: &[&str],
    rows: &[Row],
    reps: u32,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "machine: {}, {} logical CPUs, Linux {}",
        machine.cpu_model, machine.logical_cpus, machine.kernel
    );
    let _ = writeln!(
        s,
        "pagealloc: PageHeap of {} MiB ({}), preset {}, {} CPUs ({}); \
         metadata {:.2} bytes/frame; arena init {:.2} ms",
        args.arena_mib,
        match args.huge {
            Huge::None => "4 KiB pages",
            Huge::Thp => "THP advised",
            Huge::Hugetlb => "hugetlb 2 MiB pages",
        },
        args.preset,
        heap.allocator().nr_cpus(),
        heap.cpu_source().name(),
        heap.metadata_bytes_per_frame(),
        heap.init_time().as_secs_f64() * 1e3
    );
    let _ = writeln!(s, "work: {WORK}; general-purpose allocators get Layout(4096 << order, 4096)");
    let _ = writeln!(
        s,
        "ns per alloc+free pair (per thread for pair-64-2t), median of {reps} run(s) ± stddev{}\n",
        if args.quick { " — QUICK RUN, not a measurement" } else { "" }
    );
    let w = 14;
    let _ = write!(s, "{:<13} {:>3} {:>4} {:>5}", "pattern", "thr", "out", "order");
    for a in allocators {
        let name = if *a == "buddy_system_allocator" { "buddy_system" } else { a };
        let _ = write!(s, " {name:>w$}");
    }
    let with_ratio = allocators.contains(&"pagealloc") && allocators.len() > 1;
    if with_ratio {
        let _ = write!(s, "  pagealloc vs best peer");
    }
    s.push('\n');
    for p in patterns {
        let order = p.order.map_or_else(|| "0-10".to_owned(), |o| o.to_string());
        let _ = write!(s, "{:<13} {:>3} {:>4} {:>5}", p.name, p.threads, p.outstanding, order);
        let of = |a: &str| rows.iter().find(|r| r.pattern == p.name && r.allocator == a);
        for a in allocators {
            let cell = of(a).map_or_else(String::new, |r| {
                if r.ns_per_pair >= 1000.0 {
                    format!("{:.0} ±{:.0}", r.ns_per_pair, r.stddev)
                } else {
                    format!("{:.1} ±{:.1}", r.ns_per_pair, r.stddev)
                }
            });
            let _ = write!(s, " {cell:>w$}");
        }
        if with_ratio {
            let ours = of("pagealloc").map_or(f64::NAN, |r| r.ns_per_pair);
            let best = allocators
                .iter()
                .filter(|a| **a != "pagealloc")
                .filter_map(|a| of(a))
                .min_by(|x, y| x.ns_per_pair.total_cmp(&y.ns_per_pair));
            if let Some(b) = best {
                let _ = write!(s, "  {:.2}x ({})", b.ns_per_pair / ours, b.allocator);
            }
        }
        s.push('\n');
    }
    if with_ratio {
        let _ = writeln!(
            s,
            "\n\"pagealloc vs best peer\" = best peer's ns / pagealloc's ns: above 1 means \
             pagealloc is faster."
        );
    }
    s
}

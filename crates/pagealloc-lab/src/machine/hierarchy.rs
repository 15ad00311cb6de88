//! A machine's memory hierarchy: what one access costs by where the line is, each figure with
//! its published source. The model prices every cache line the allocator touches from this
//! table (`model::cache`), so a zone-lock hold on a two-socket server costs what moving its
//! `struct page` lines between sockets costs there.
//!
//! In a machine file:
//!
//! ```toml
//! [hierarchy]
//! like = "icl-2s-128"          # optional: start from a built-in machine's figures
//! l2_hit_ns = { value = 5.2, source = "AnandTech, … (Xeon 8280): L2 14 cycles at 2.7 GHz" }
//! c2c_remote_ns = { value = 115.6, source = "Intel MLC v3.7, Xeon Gold 6252N, FD.io CSIT …" }
//! ```
//!
//! Every figure is `{ value = NUMBER, source = "…" }`; a figure without a source, or a source
//! that is only blanks, is refused with the file, the line and the field. Figures that only
//! some machines need (a second LLC on one node, a second node) are required only there.
//!
//! A host's wake figures (`wake_idle_ns`, `wake_call_ns`, which `pagealloc calibrate` writes)
//! may also carry the spread it measured, `quantiles = [Q1, …, Qn]`: the i-th of n values is
//! the sample's i/(n+1) quantile (19 values: the 5th, 10th, …, 95th percentiles), ascending.
//! The model then draws each wake from that distribution instead of charging the median.

use std::fmt;

/// The figures of a hierarchy, in the order a machine file and `pagealloc machines` list them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// A load that hits this core's private L2.
    L2Hit,
    /// A load that hits the LLC, the line not modified in another core's private cache.
    LlcHit,
    /// A load of a line modified in another core's private cache, same LLC (MLC's "L2->L2
    /// HITM" within a socket).
    C2cSameLlc,
    /// A load of a line held by another LLC of the same node (AMD's CCX to CCX).
    C2cOtherLlc,
    /// A load of a line modified in a cache of another node (MLC's remote "L2->L2 HITM").
    C2cRemote,
    /// An idle load from this node's DRAM.
    DramLocal,
    /// An idle load from another node's DRAM.
    DramRemote,
    /// Handing a contended lock's line to a CPU of the same LLC (a CAS ping-pong's one way).
    HandoffSameLlc,
    /// Handing it to a CPU of another LLC of the same node.
    HandoffOtherLlc,
    /// Handing it to a CPU of another node.
    HandoffRemote,
    /// One core's streaming write rate to pages still in its own L2 (a page it wrote a
    /// moment ago, handed back by the pageset's LIFO). Optional: a machine without it prices
    /// such a page at the LLC's rate.
    WriteL2,
    /// One core's streaming write rate to pages another core of the same LLC wrote a moment
    /// ago, still in that core's private L2 (a receiver copying what a sender just wrote, a
    /// page freed on one CPU and allocated on its neighbour). Optional, and used only with
    /// [`Level::WriteL2`] (the model tells which core's L2 holds a page only then): a machine
    /// without it prices such a page at the LLC's rate.
    WriteC2c,
    /// One core's streaming write rate to memory that stays in the LLC.
    WriteLlc,
    /// One core's streaming write rate to memory that is not cached (local DRAM).
    WriteDram,
    /// [`Level::WriteL2`] with several contiguous pages written by one string instruction
    /// (as the kernel copies a packet's data), not one page to an instruction (as it clears
    /// a page). Optional; measured by `calibrate` on a host, published for no built-in CPU,
    /// and not yet used by the model.
    WriteL2Run,
    /// [`Level::WriteC2c`] written as [`Level::WriteL2Run`] is.
    WriteC2cRun,
    /// [`Level::WriteLlc`] written as [`Level::WriteL2Run`] is.
    WriteLlcRun,
    /// Waking a thread blocked on an idle CPU, from the wake to its running: on the host
    /// `pagealloc calibrate` measured, the real runner's own condition-variable wake. Only a
    /// host's file has it; the built-in machines leave a wake's delay to the workloads'
    /// parameters (`wake_ns`).
    WakeIdle,
    /// The waker's side of [`Level::WakeIdle`]: the call that wakes a parked thread (on the
    /// host `calibrate` measured, a condition variable's notify: a futex system call and the
    /// interrupt to the halted CPU), paid on the waking CPU. Only a host's file has it.
    WakeCall,
    /// How much of its LLC a CPU of this machine gets, as page writes find it: a virtual
    /// machine is told its host's whole LLC (CPUID and sysfs report it) but shares it with
    /// the host's other guests. Only a host's file has it (`pagealloc calibrate` measures
    /// it); the model's caches hold this much, while the allocator, as a kernel would, still
    /// sizes its pagesets from the LLC the node reports.
    LlcUsable,
    /// How many L1 data-cache misses one core keeps in flight at once (Intel's line fill
    /// buffers): a core does not wait for a line it only writes (its store waits in the store
    /// buffer while the line comes), nor for a line it prefetched, so such transfers overlap,
    /// this many at a time. Optional: a machine without it charges every access in full, one
    /// after another.
    MissSlots,
    /// How many 4 KiB pages each core's L2 streamer follows at once: the hardware
    /// prefetchers (a line's 128-byte pair fetched with it, a run of lines within a page
    /// fetched ahead of the requests) are modelled on the frame metadata. Optional: a machine
    /// without it has no hardware prefetchers in the model.
    PrefetchStreams,
    /// A node's memory bandwidth with reads and writes 1:1 (Intel MLC's peak-injection
    /// "1:1 Reads-Writes" of the whole system, shared by its nodes): what all of a node's
    /// CPUs' cold page writes share. Optional: a machine without it writes every cold page at
    /// the core's own rate however many cores write at once.
    NodeRw,
}

/// Which machines need a figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needed {
    /// Every machine.
    Always,
    /// Machines with more than one LLC domain on some node.
    SeveralLlcsPerNode,
    /// Machines with more than one node.
    SeveralNodes,
    /// No machine: a figure a machine may give (a measured host's) and the model does
    /// without.
    Optional,
}

impl Level {
    /// Every figure.
    pub const ALL: [Level; 23] = [
        Level::L2Hit,
        Level::LlcHit,
        Level::C2cSameLlc,
        Level::C2cOtherLlc,
        Level::C2cRemote,
        Level::DramLocal,
        Level::DramRemote,
        Level::HandoffSameLlc,
        Level::HandoffOtherLlc,
        Level::HandoffRemote,
        Level::WriteL2,
        Level::WriteC2c,
        Level::WriteLlc,
        Level::WriteDram,
        Level::WriteL2Run,
        Level::WriteC2cRun,
        Level::WriteLlcRun,
        Level::WakeIdle,
        Level::WakeCall,
        Level::LlcUsable,
        Level::MissSlots,
        Level::PrefetchStreams,
        Level::NodeRw,
    ];

    /// The key in a machine file's `[hierarchy]` table; it ends in the unit.
    pub fn key(self) -> &'static str {
        match self {
            Level::L2Hit => "l2_hit_ns",
            Level::LlcHit => "llc_hit_ns",
            Level::C2cSameLlc => "c2c_same_llc_ns",
            Level::C2cOtherLlc => "c2c_other_llc_ns",
            Level::C2cRemote => "c2c_remote_ns",
            Level::DramLocal => "dram_local_ns",
            Level::DramRemote => "dram_remote_ns",
            Level::HandoffSameLlc => "handoff_same_llc_ns",
            Level::HandoffOtherLlc => "handoff_other_llc_ns",
            Level::HandoffRemote => "handoff_remote_ns",
            Level::WriteL2 => "write_l2_gbps",
            Level::WriteC2c => "write_c2c_gbps",
            Level::WriteLlc => "write_llc_gbps",
            Level::WriteDram => "write_dram_gbps",
            Level::WriteL2Run => "write_l2_run_gbps",
            Level::WriteC2cRun => "write_c2c_run_gbps",
            Level::WriteLlcRun => "write_llc_run_gbps",
            Level::WakeIdle => "wake_idle_ns",
            Level::WakeCall => "wake_call_ns",
            Level::LlcUsable => "llc_usable_mib",
            Level::MissSlots => "miss_slots",
            Level::PrefetchStreams => "prefetch_streams",
            Level::NodeRw => "node_rw_gbps",
        }
    }

    /// The figure of a key.
    pub fn from_key(key: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|l| l.key() == key)
    }

    /// What the figure is, in a few words.
    pub fn what(self) -> &'static str {
        match self {
            Level::L2Hit => "load hitting the core's own L2",
            Level::LlcHit => "load hitting the LLC",
            Level::C2cSameLlc => "load of a line modified by another core, same LLC",
            Level::C2cOtherLlc => "load of a line held by another LLC of the node",
            Level::C2cRemote => "load of a line modified on another node",
            Level::DramLocal => "idle load from local DRAM",
            Level::DramRemote => "idle load from remote DRAM",
            Level::HandoffSameLlc => "contended lock handed to a CPU of the same LLC",
            Level::HandoffOtherLlc => "contended lock handed to another LLC of the node",
            Level::HandoffRemote => "contended lock handed to another node",
            Level::WriteL2 => "one core's write rate, L2-resident",
            Level::WriteC2c => "one core's write rate, in another core's L2 of the LLC",
            Level::WriteLlc => "one core's write rate, LLC-resident",
            Level::WriteDram => "one core's write rate, from DRAM",
            Level::WriteL2Run => "one core's write rate, L2-resident, pages in runs",
            Level::WriteC2cRun => "one core's write rate, in another core's L2, pages in runs",
            Level::WriteLlcRun => "one core's write rate, LLC-resident, pages in runs",
            Level::WakeIdle => "a thread blocked on an idle CPU, woken until it runs",
            Level::WakeCall => "the waker's call that wakes a parked thread",
            Level::LlcUsable => "the LLC capacity a CPU gets (a virtual machine's share)",
            Level::MissSlots => "L1 data-cache misses a core keeps in flight (fill buffers)",
            Level::PrefetchStreams => "4 KiB pages a core's L2 streamer follows at once",
            Level::NodeRw => "a node's memory bandwidth, reads and writes 1:1",
        }
    }

    /// Is the figure a rate (GB/s, 10^9 bytes a second) rather than a latency (ns) or a
    /// capacity (MiB)?
    pub fn is_rate(self) -> bool {
        matches!(
            self,
            Level::WriteL2
                | Level::WriteC2c
                | Level::WriteLlc
                | Level::WriteDram
                | Level::WriteL2Run
                | Level::WriteC2cRun
                | Level::WriteLlcRun
                | Level::NodeRw
        )
    }

    /// The figure's unit as printed: GB/s for a rate, MiB for a capacity, lines for the
    /// misses in flight, ns otherwise.
    pub fn unit(self) -> &'static str {
        match self {
            _ if self.is_rate() => "GB/s",
            Level::LlcUsable => "MiB",
            Level::MissSlots => "lines",
            Level::PrefetchStreams => "streams",
            _ => "ns",
        }
    }

    /// The accepted range of the value.
    pub fn range(self) -> (f64, f64) {
        if self.is_rate() {
            (0.01, 10_000.0)
        } else if matches!(self, Level::MissSlots | Level::PrefetchStreams) {
            // A count: an in-order core with one miss at a time up to the deepest queues built.
            (1.0, 256.0)
        } else if self == Level::LlcUsable {
            // At least a page; at most a terabyte.
            (1.0 / 256.0, 1_048_576.0)
        } else if matches!(self, Level::WakeIdle | Level::WakeCall) {
            // A wake is microseconds to milliseconds (a halted virtual CPU, a deep idle
            // state), not a cache's nanoseconds.
            (0.0, 100_000_000.0)
        } else {
            // 0 is a measured figure too: `calibrate` writes a handoff below its clock's
            // resolution as 0 (the line's move is within the fixed cost it was measured in).
            (0.0, 100_000.0)
        }
    }

    /// May the figure carry a measured spread (`quantiles`)? Only a host's wake figures:
    /// a wake's delay varies by tens of per cent from one wake to the next, and a workload
    /// that parks often lands in one regime or another by it; the cache figures are
    /// published as one number each.
    pub fn takes_quantiles(self) -> bool {
        matches!(self, Level::WakeIdle | Level::WakeCall)
    }

    /// Which machines need it.
    pub fn needed(self) -> Needed {
        match self {
            Level::C2cOtherLlc | Level::HandoffOtherLlc => Needed::SeveralLlcsPerNode,
            Level::C2cRemote | Level::DramRemote | Level::HandoffRemote => Needed::SeveralNodes,
            Level::WriteL2
            | Level::WriteC2c
            | Level::WriteL2Run
            | Level::WriteC2cRun
            | Level::WriteLlcRun
            | Level::WakeIdle
            | Level::WakeCall
            | Level::LlcUsable
            | Level::MissSlots
            | Level::PrefetchStreams
            | Level::NodeRw => Needed::Optional,
            _ => Needed::Always,
        }
    }
}

/// One figure and where it was read.
#[derive(Clone, Debug, PartialEq)]
pub struct Sourced {
    /// ns, or GB/s for a rate; the median where `quantiles` are given.
    pub value: f64,
    /// The published source: document, table or file, and the cell as printed.
    pub source: String,
    /// The measured spread, if the figure has one (only [`Level::takes_quantiles`]): n
    /// ascending values, the i-th (from 1) the sample's i/(n+1) quantile. Empty: none.
    pub quantiles: Vec<f64>,
}

#[cfg(test)]
impl Sourced {
    /// A figure without a spread.
    pub fn new(value: f64, source: impl Into<String>) -> Sourced {
        Sourced { value, source: source.into(), quantiles: Vec::new() }
    }
}

/// The most quantiles a figure may carry (percentiles 1..=99).
pub const MAX_QUANTILES: usize = 99;

/// The figures a machine has, by [`Level`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hierarchy {
    figures: [Option<Sourced>; Level::ALL.len()],
}

impl Hierarchy {
    /// The figure for `level`, if the machine has it.
    pub fn get(&self, level: Level) -> Option<&Sourced> {
        self.figures[level as usize].as_ref()
    }

    /// Set a figure.
    pub fn set(&mut self, level: Level, figure: Sourced) {
        self.figures[level as usize] = Some(figure);
    }

    /// The figures it has, in [`Level::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (Level, &Sourced)> {
        Level::ALL.into_iter().filter_map(|l| self.get(l).map(|f| (l, f)))
    }

    /// The value of a figure, `None` if the machine does not have it.
    pub fn value(&self, level: Level) -> Option<f64> {
        self.get(level).map(|f| f.value)
    }

    /// Check every figure's value and source, and that every figure the machine's shape
    /// needs is there. `several_llcs`: some node has more than one LLC domain; `several_nodes`:
    /// the machine has more than one node.
    ///
    /// # Errors
    /// The first figure at fault, and why.
    pub fn check(&self, several_llcs: bool, several_nodes: bool) -> Result<(), HierarchyError> {
        for level in Level::ALL {
            // Why this machine needs the figure, if it does.
            let needed_because = match level.needed() {
                Needed::Always => Some("every machine needs it"),
                Needed::SeveralLlcsPerNode if several_llcs => {
                    Some("a node of this machine has more than one LLC")
                }
                Needed::SeveralNodes if several_nodes => {
                    Some("this machine has more than one node")
                }
                _ => None,
            };
            let Some(f) = self.get(level) else {
                if let Some(why) = needed_because {
                    return Err(HierarchyError {
                        level,
                        message: format!(
                            "missing ({}: {why}); give it as {{ value = …, source = \"…\" }}",
                            level.what()
                        ),
                    });
                }
                continue;
            };
            let (lo, hi) = level.range();
            let unit = level.unit();
            if !f.value.is_finite() || f.value < lo || f.value > hi {
                return Err(HierarchyError {
                    level,
                    message: format!(
                        "{} is out of range; it takes a number of {unit} in {lo}..={hi}",
                        f.value
                    ),
                });
            }
            if f.source.trim().is_empty() {
                return Err(HierarchyError {
                    level,
                    message: "has no source: every figure names the published measurement it \
                              was read from (document, table, part measured)"
                        .to_string(),
                });
            }
            check_quantiles(level, f).map_err(|message| HierarchyError { level, message })?;
        }
        if self.get(Level::WriteC2c).is_some() && self.get(Level::WriteL2).is_none() {
            return Err(HierarchyError {
                level: Level::WriteC2c,
                message: format!(
                    "needs `{}` too: the model tells which core's L2 holds a page only when it \
                     keeps the cores' L2s, which it does for a machine that prices them",
                    Level::WriteL2.key()
                ),
            });
        }
        Ok(())
    }
}

/// A figure's `quantiles`: only where the figure takes them, at most [`MAX_QUANTILES`], each
/// in the figure's range, ascending, and the value (the median) among them.
fn check_quantiles(level: Level, f: &Sourced) -> Result<(), String> {
    let q = &f.quantiles;
    if q.is_empty() {
        return Ok(());
    }
    if !level.takes_quantiles() {
        return Err(
            "takes no quantiles: only a host's wake figures carry a measured spread".to_string()
        );
    }
    if q.len() > MAX_QUANTILES {
        return Err(format!("has {} quantiles; at most {MAX_QUANTILES}", q.len()));
    }
    let (lo, hi) = level.range();
    if let Some(x) = q.iter().find(|x| !x.is_finite() || **x < lo || **x > hi) {
        return Err(format!("quantile {x} is out of range; they are ns in {lo}..={hi}"));
    }
    if q.windows(2).any(|w| w[1] < w[0]) {
        return Err("quantiles are not ascending; the i-th of n is the i/(n+1) quantile".into());
    }
    let (first, last) = (q[0], q[q.len() - 1]);
    if f.value < first || f.value > last {
        return Err(format!(
            "value {} (the median) lies outside its quantiles {first}..={last}",
            f.value
        ));
    }
    Ok(())
}

/// A figure of a hierarchy that is missing, out of range or unsourced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HierarchyError {
    /// The figure.
    pub level: Level,
    /// What is wrong and what is accepted.
    pub message: String,
}

impl fmt::Display for HierarchyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field `hierarchy.{}`: {}", self.level.key(), self.message)
    }
}

impl std::error::Error for HierarchyError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Hierarchy {
        let mut h = Hierarchy::default();
        for l in Level::ALL {
            h.set(l, Sourced::new(10.0, "a published table"));
        }
        h
    }

    #[test]
    fn keys_round_trip_and_end_in_their_unit() {
        for l in Level::ALL {
            assert_eq!(Level::from_key(l.key()), Some(l));
            let suffix = match l.unit() {
                "GB/s" => "_gbps",
                "MiB" => "_mib",
                // A count: the key names what it counts.
                "lines" => "_slots",
                "streams" => "_streams",
                _ => "_ns",
            };
            assert!(l.key().ends_with(suffix), "{}", l.key());
        }
        assert_eq!(Level::from_key("l3_hit_ns"), None);
    }

    #[test]
    fn figures_are_needed_by_the_machine_shape() {
        let mut h = full();
        h.check(true, true).unwrap();
        h.figures[Level::C2cRemote as usize] = None;
        // One node: the remote figures are not needed.
        h.check(true, false).unwrap();
        let e = h.check(true, true).unwrap_err();
        assert_eq!(e.level, Level::C2cRemote);
        assert!(e.to_string().contains("more than one node"), "{e}");
        h = full();
        h.figures[Level::HandoffOtherLlc as usize] = None;
        h.check(false, true).unwrap();
        assert_eq!(h.check(true, true).unwrap_err().level, Level::HandoffOtherLlc);
        h = full();
        h.figures[Level::L2Hit as usize] = None;
        assert!(h.check(false, false).unwrap_err().to_string().contains("every machine"));
        // A host's wake figure is optional on every shape, and range-checked when given.
        h = full();
        h.figures[Level::WakeIdle as usize] = None;
        h.figures[Level::WakeCall as usize] = None;
        h.check(true, true).unwrap();
        h.set(Level::WakeIdle, Sourced::new(48_000.0, "measured here"));
        h.check(true, true).unwrap();
        h.set(Level::WakeIdle, Sourced::new(2e8, "measured here"));
        assert_eq!(h.check(true, true).unwrap_err().level, Level::WakeIdle);
        // The write rate into another core's L2 is optional, but only beside the L2's own.
        h = full();
        h.figures[Level::WriteC2c as usize] = None;
        h.check(true, true).unwrap();
        h = full();
        h.figures[Level::WriteL2 as usize] = None;
        let e = h.check(true, true).unwrap_err();
        assert_eq!(e.level, Level::WriteC2c);
        assert!(e.to_string().contains("needs `write_l2_gbps` too"), "{e}");
    }

    #[test]
    fn values_need_a_range_and_a_source() {
        let mut h = full();
        h.set(Level::DramLocal, Sourced::new(-1.0, "x"));
        let e = h.check(false, false).unwrap_err();
        assert_eq!(e.level, Level::DramLocal);
        assert!(e.to_string().starts_with("field `hierarchy.dram_local_ns`: -1 is out of range"));
        // A latency below a clock's resolution is written as 0, and loads (calibrate's
        // handoff on a busy host); a rate of 0 would divide by zero and does not.
        h.set(Level::DramLocal, Sourced::new(0.0, "x"));
        h.check(false, false).unwrap();
        h.set(Level::WriteLlc, Sourced::new(0.0, "x"));
        assert_eq!(h.check(false, false).unwrap_err().level, Level::WriteLlc);
        h.set(Level::WriteLlc, Sourced::new(10.0, "x"));
        h.set(Level::DramLocal, Sourced::new(80.0, "  "));
        assert!(h.check(false, false).unwrap_err().to_string().contains("has no source"));
        h.set(Level::WriteDram, Sourced::new(f64::NAN, "x"));
        h.set(Level::DramLocal, Sourced::new(80.0, "x"));
        assert!(h.check(false, false).unwrap_err().to_string().contains("GB/s"));
    }

    /// A measured spread is taken only on the wake figures, ascending, in range, at most 99
    /// values, with the median among them.
    #[test]
    fn quantiles_only_on_wake_figures_ascending_around_the_median() {
        let with = |level, value, q: &[f64]| {
            let mut h = full();
            let mut f = Sourced::new(value, "measured here");
            f.quantiles = q.to_vec();
            h.set(level, f);
            h.check(true, true).map_err(|e| e.to_string())
        };
        with(Level::WakeIdle, 47.0, &[35.5, 47.0, 60.2]).unwrap();
        with(Level::WakeCall, 15.0, &[12.0, 15.0, 19.5]).unwrap();
        let refused = [
            (Level::DramLocal, 80.0, vec![70.0, 80.0, 90.0], "takes no quantiles"),
            (Level::WakeIdle, 47.0, vec![60.2, 47.0, 35.5], "not ascending"),
            (Level::WakeIdle, 47.0, vec![-1.0, 47.0], "out of range"),
            (Level::WakeIdle, 47.0, vec![35.5, f64::NAN], "out of range"),
            (Level::WakeIdle, 70.0, vec![35.5, 47.0, 60.2], "outside its quantiles"),
            (Level::WakeIdle, 47.0, vec![47.0; MAX_QUANTILES + 1], "at most 99"),
        ];
        for (level, value, q, why) in refused {
            let e = with(level, value, &q).unwrap_err();
            assert!(e.contains(why) && e.contains(level.key()), "{why}: {e}");
        }
    }
}

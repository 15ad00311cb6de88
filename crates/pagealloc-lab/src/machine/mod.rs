//! Machines as data: the seeds' machines and the user's own, as nodes with CPUs, memory and
//! caches. A machine becomes a [`MemoryMap`] for the allocator, a set of LLC domains for the
//! model's cache, and the two tunables a machine carries (`min_free_kbytes`,
//! `watermark_scale_factor`).
//!
//! A machine is written in TOML ([`file`] reads it; every built-in is such a file under
//! `machine/builtin/`, compiled in):
//!
//! ```toml
//! name = "spr-2s-224"
//! description = "2-socket Intel Sapphire Rapids, 224 threads, 512 GB"
//! source = "seed 001; the LKP kbuild8 report (docs/workloads.md §1.1)"
//! arch = "x86_64"                   # or "arm64"; decides the zone limits
//! min_free_kbytes = 0               # optional; 0 or absent: the kernel's boot value
//! watermark_scale_factor = 10       # optional; absent: the kernel default (10)
//! frame_bytes = 64                  # optional: metadata per frame the model prices (64, 32, 16)
//! assumptions = ["…"]               # every number no source gives, with the reason
//! [[node]]
//! cpus = 112
//! memory_gib = 256                  # or memory_mib / memory_kib
//! llc_mib = 105                     # or llc_kib; the LLC of one cache domain
//! llc_shared_by = 112               # CPUs per LLC domain; default: all CPUs of the node
//! l2_kib = 2048                     # optional, with l2_shared_by (default 1)
//! l1d_kib = 48                      # optional, with l1d_shared_by (default 1)
//! [[node]]
//! …
//! ```
//!
//! Layout, kept simple on purpose: node 0's memory starts at physical address 0 and each
//! further node follows the previous one. The one hole is x86_64's 32-bit PCI window: memory
//! that would fall in 3–4 GiB resumes at 4 GiB, as on a PC. So a 4 GiB x86_64 machine has DMA
//! (16 MiB), DMA32 (3 GiB − 16 MiB) and Normal (1 GiB) zones — the layout of the 4 GiB machine
//! in realdata `jc-zoneinfo.txt` (present DMA 3997, DMA32 782288, Normal 262144 pages; ours:
//! 4096, 782336, 262144). Left out: the first page and 640 KiB–1 MiB (a real DMA zone has
//! ≈ 3997 of its 4096 pages), firmware reservations, and windows that start below 3 GiB (the
//! realdata servers' DMA32 zones hold 1.6–3 GiB). Totals are exact, so the default
//! `min_free_kbytes` is; the lowmem watermark's split between DMA32 and Normal is close.
//! arm64 memory is contiguous from 0. CPUs are numbered node by node, as
//! [`MemoryMap::set_cpus`] does; a cache domain is `shared_by` consecutive CPUs of one node
//! (the last domain of a node may be smaller).

pub mod file;
pub mod hierarchy;

use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use pagealloc::memory_map::MAX_CPUS;
use pagealloc::policy::Accepted;
use pagealloc::sizing;
use pagealloc::types::PAGE_SIZE;
use pagealloc::{
    CacheInfo, EventSink, MapError, MemoryMap, NodeId, NrPages, PageAllocator, Pfn, Tunables,
    ZoneLimits, ZoneType,
};

/// The frame sizes the model prices: a cache line holds 64 / `frame_bytes` frames.
pub const FRAME_BYTES: [u64; 3] = [16, 32, 64];
/// The kernel's `struct page` on 64-bit: what the model prices unless told otherwise.
pub const KERNEL_FRAME_BYTES: u64 = 64;

/// Most nodes a machine may have: `PageAllocator::new` refuses more than 1024.
pub const MAX_NODES: usize = 1024;
/// x86_64's 32-bit PCI window, bytes: no memory there (see the module documentation).
const X86_PCI_HOLE: Range<u64> = (3 << 30)..(4 << 30);

/// Largest frame count of one zone: zones index their frames with `u32`
/// (`MapError::ZoneTooLarge`), 16 TiB of 4 KiB pages.
const MAX_ZONE_PAGES: u64 = u32::MAX as u64;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// The built-in machines: (name, TOML text), sorted by name.
const BUILTINS: &[(&str, &str)] = &[
    ("cascadelake-2s", include_str!("builtin/cascadelake-2s.toml")),
    ("cortex-a53", include_str!("builtin/cortex-a53.toml")),
    ("haswell-2s-48", include_str!("builtin/haswell-2s-48.toml")),
    ("icl-2s-128", include_str!("builtin/icl-2s-128.toml")),
    ("lab-2cpu", include_str!("builtin/lab-2cpu.toml")),
    ("skylake-1s", include_str!("builtin/skylake-1s.toml")),
    ("spr-2s-224", include_str!("builtin/spr-2s-224.toml")),
    ("unknown-micro", include_str!("builtin/unknown-micro.toml")),
    ("unknown-trace", include_str!("builtin/unknown-trace.toml")),
];

/// The names of the built-in machines, sorted.
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    BUILTINS.iter().map(|&(name, _)| name)
}

/// The instruction set, as far as the allocator cares: where the low zones end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// ZONE_DMA below 16 MiB, ZONE_DMA32 below 4 GiB, ZONE_NORMAL above.
    X86_64,
    /// One low zone below 4 GiB (ZONE_DMA32; 4.19/4.20 arm64 had no 16 MiB ISA zone, and its
    /// later ZONE_DMA follows the platform's DMA limits, which no seed needs), Normal above.
    Arm64,
    /// No low zones: every node's memory is one ZONE_NORMAL, as in the arena of a
    /// `PageHeap` (the real runner's memory; a user-space pool).
    Flat,
}

impl Arch {
    /// The names a machine file's `arch` accepts.
    pub const NAMES: &'static [&'static str] = &["x86_64", "arm64", "flat"];

    /// The name as written in a machine file.
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Arm64 => "arm64",
            Arch::Flat => "flat",
        }
    }

    /// Parse a name of [`Arch::NAMES`].
    pub fn from_name(s: &str) -> Option<Arch> {
        match s {
            "x86_64" => Some(Arch::X86_64),
            "arm64" => Some(Arch::Arm64),
            "flat" => Some(Arch::Flat),
            _ => None,
        }
    }

    /// The physical addresses memory skips (x86_64's 32-bit PCI window).
    pub fn hole(self) -> Option<Range<u64>> {
        match self {
            Arch::X86_64 => Some(X86_PCI_HOLE),
            Arch::Arm64 | Arch::Flat => None,
        }
    }

    /// The zone limits of this architecture.
    pub fn zone_limits(self) -> ZoneLimits {
        match self {
            Arch::X86_64 => ZoneLimits::X86_64,
            Arch::Arm64 => ZoneLimits { dma_end: Pfn(0), dma32_end: Pfn::from_phys(4 << 30) },
            Arch::Flat => ZoneLimits::NORMAL_ONLY,
        }
    }
}

/// A cache level below the LLC: its size and how many consecutive CPUs of a node share one
/// instance (2 for a core's L1d/L2 under SMT-2, 1 without SMT, 2–4 for an Arm cluster's L2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheLevel {
    /// Size of one instance, bytes (a whole number of KiB).
    pub bytes: u64,
    /// CPUs sharing one instance, ≥ 1 and ≤ the node's CPUs.
    pub shared_by: u32,
}

/// One NUMA node: its CPUs, its memory and the caches of its CPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSpec {
    /// CPUs on this node; 0 for a memory-only node.
    pub cpus: u32,
    /// Memory, bytes: > 0 and a whole number of 4 KiB pages.
    pub memory_bytes: u64,
    /// Size of one last-level cache domain, bytes (0 only on a node without CPUs).
    pub llc_bytes: u64,
    /// CPUs per LLC domain, 1..=cpus (0 only on a node without CPUs). Usually every CPU of
    /// the socket; less with sub-NUMA clustering or Arm clusters.
    pub llc_shared_by: u32,
    /// The L2 cache, if known: feeds the v1 FREE_HIGH_BATCH input (the sum of data-cache
    /// slices, `CacheInfo::data_slices_bytes`).
    pub l2: Option<CacheLevel>,
    /// The L1 data cache, if known (same use as `l2`).
    pub l1d: Option<CacheLevel>,
}

impl NodeSpec {
    /// LLC domains on this node: the CPUs in groups of `llc_shared_by`, the last maybe smaller.
    pub fn nr_llc_domains(&self) -> usize {
        groups(self.cpus, self.llc_shared_by) as usize
    }
}

/// A machine: its nodes, and the tunables and documentation that go with it.
#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    /// The name results are labelled with.
    pub name: String,
    /// One line saying what machine this is.
    pub description: String,
    /// Where the facts come from (seed, report, reference section).
    pub source: String,
    /// Decides the zone limits.
    pub arch: Arch,
    /// The nodes, node 0 first; memory is laid out in this order from physical address 0.
    pub nodes: Vec<NodeSpec>,
    /// `vm.min_free_kbytes`, KiB, if the machine sets it; `None`: the kernel's boot value
    /// computed from the memory size ([`Machine::boot_min_free_kbytes`]).
    pub min_free_kbytes: Option<u64>,
    /// `vm.watermark_scale_factor` (1/10000 of a zone), if the machine sets it; `None`: 10.
    pub watermark_scale_factor: Option<u32>,
    /// Bytes of one frame's metadata the model prices lines by: 64, the kernel's `struct
    /// page` (the default: the seed tables are the kernel's), or 16, the library's own frame
    /// (a `PageHeap` over an arena, as the real runner's: four frames to a line).
    pub frame_bytes: u64,
    /// Every number not taken from a source, each with the reason it was chosen.
    pub assumptions: Vec<String>,
    /// What each access costs by where the line is, every figure sourced; every machine file
    /// has one (the model needs it), a machine made in code ([`Machine::host`]) may not.
    pub hierarchy: Option<hierarchy::Hierarchy>,
    /// The file the machine was read from; `None` for a built-in machine.
    pub file: Option<PathBuf>,
}

/// Which field of a machine a [`MachineError`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// The node list itself.
    Nodes,
    /// A node's CPU count.
    Cpus,
    /// A node's memory.
    Memory,
    /// A node's LLC size.
    Llc,
    /// A node's CPUs per LLC domain.
    LlcSharedBy,
    /// A node's L2 size.
    L2,
    /// A node's CPUs per L2.
    L2SharedBy,
    /// A node's L1d size.
    L1d,
    /// A node's CPUs per L1d.
    L1dSharedBy,
    /// `min_free_kbytes`.
    MinFreeKbytes,
    /// `watermark_scale_factor`.
    WatermarkScaleFactor,
    /// `frame_bytes`.
    FrameBytes,
    /// A figure of the memory hierarchy.
    Hierarchy(hierarchy::Level),
}

impl Field {
    /// The field's name in [`Machine`] / [`NodeSpec`].
    pub fn name(self) -> &'static str {
        match self {
            Field::Nodes => "nodes",
            Field::Cpus => "cpus",
            Field::Memory => "memory_bytes",
            Field::Llc => "llc_bytes",
            Field::LlcSharedBy => "llc_shared_by",
            Field::L2 => "l2.bytes",
            Field::L2SharedBy => "l2.shared_by",
            Field::L1d => "l1d.bytes",
            Field::L1dSharedBy => "l1d.shared_by",
            Field::MinFreeKbytes => "min_free_kbytes",
            Field::WatermarkScaleFactor => "watermark_scale_factor",
            Field::FrameBytes => "frame_bytes",
            Field::Hierarchy(l) => l.key(),
        }
    }
}

/// Why a machine is impossible: the node and field at fault and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineError {
    /// The node, for a per-node field (and for the node-list errors that one node causes).
    pub node: Option<usize>,
    /// The field at fault.
    pub field: Field,
    /// What is wrong and what would be accepted.
    pub message: String,
}

impl MachineError {
    fn new(node: Option<usize>, field: Field, message: impl Into<String>) -> MachineError {
        MachineError { node, field, message: message.into() }
    }
}

impl std::fmt::Display for MachineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.node, self.field) {
            (_, Field::Hierarchy(l)) => {
                write!(f, "field `hierarchy.{}`: {}", l.key(), self.message)
            }
            (Some(n), field) if field != Field::Nodes => {
                write!(f, "field `nodes[{n}].{}`: {}", field.name(), self.message)
            }
            _ => write!(f, "field `{}`: {}", self.field.name(), self.message),
        }
    }
}

impl std::error::Error for MachineError {}

/// One zone of one node, as the allocator will build it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneSpan {
    /// The node.
    pub node: usize,
    /// The zone type.
    pub zone: ZoneType,
    /// The frames the zone spans, end exclusive.
    pub pfns: Range<Pfn>,
    /// Frames of memory inside the span (the span itself with this layout: the PCI hole lies
    /// between DMA32 and Normal, never inside a zone).
    pub present: u64,
}

impl ZoneSpan {
    /// Present pages.
    pub fn pages(&self) -> u64 {
        self.present
    }
}

/// Number of groups of `size` among `n` CPUs (the last one maybe smaller); 0 if either is 0.
fn groups(n: u32, size: u32) -> u32 {
    if size == 0 {
        0
    } else {
        n.div_ceil(size)
    }
}

/// CPUs in the group of local CPU `i` when `n` CPUs are split in groups of `size`.
fn group_len(n: u32, size: u32, i: u32) -> u32 {
    let size = size.max(1);
    let first = i / size * size;
    size.min(n - first)
}

impl Machine {
    /// The built-in machine `name`.
    pub fn builtin(name: &str) -> Option<Machine> {
        let &(name, text) = BUILTINS.iter().find(|(n, _)| *n == name)?;
        let path = PathBuf::from(format!("builtin/{name}.toml"));
        // The built-in files are checked by the unit tests; a failure here is a build bug.
        Some(file::parse_builtin(&path, text).expect("built-in machines parse (unit-tested)"))
    }

    /// Every built-in machine, sorted by name.
    pub fn builtins() -> Vec<Machine> {
        builtin_names().filter_map(Machine::builtin).collect()
    }

    /// Read a machine file.
    ///
    /// # Errors
    /// The file cannot be read, is not TOML, or describes an impossible machine; each error
    /// reads `FILE:LINE: field `x`: what is wrong and what is accepted`.
    pub fn load(path: &Path) -> Result<Machine> {
        file::load(path)
    }

    /// Find a machine by built-in name or file: a built-in name gives that machine; otherwise
    /// an existing file, or any path ending in `.toml`, is loaded.
    ///
    /// # Errors
    /// An unknown name (listing the built-in machines), or any error of [`Machine::load`].
    pub fn resolve(spec: &str) -> Result<Machine> {
        if let Some(m) = Machine::builtin(spec) {
            return Ok(m);
        }
        let path = Path::new(spec);
        if path.is_file() || spec.ends_with(".toml") {
            return Machine::load(path);
        }
        Err(anyhow!(
            "unknown machine `{spec}`{} (built-in machines: {}; or give a path to a .toml \
             machine file)",
            crate::suggest::did_you_mean(spec, builtin_names()),
            builtin_names().collect::<Vec<_>>().join(", ")
        ))
    }

    /// Check that the machine can be built, naming the first field that is impossible.
    ///
    /// # Errors
    /// No node, more than [`MAX_NODES`] nodes, no CPU at all, more than `MAX_CPUS` CPUs, a
    /// node without memory or with memory that is not whole pages, a zone over 2^32 − 1
    /// frames, memory past 2^64 bytes, a node with CPUs but no LLC, caches shared by no CPU or
    /// by more CPUs than the node has, caches on a node without CPUs, a tunable out of the
    /// range its sysctl accepts, or a `min_free_kbytes` not below the memory.
    pub fn validate(&self) -> Result<(), MachineError> {
        if self.nodes.is_empty() {
            return Err(MachineError::new(
                None,
                Field::Nodes,
                "a machine needs at least one node (a [[node]] table in a machine file)",
            ));
        }
        if self.nodes.len() > MAX_NODES {
            return Err(MachineError::new(
                Some(MAX_NODES),
                Field::Nodes,
                format!("{} nodes; the allocator supports at most {MAX_NODES}", self.nodes.len()),
            ));
        }
        let mut cpus = 0u64;
        let mut phys = 0u64;
        for (i, node) in self.nodes.iter().enumerate() {
            let err = |field, msg: String| Err(MachineError::new(Some(i), field, msg));
            cpus += u64::from(node.cpus);
            if cpus > u64::from(MAX_CPUS) {
                return err(
                    Field::Cpus,
                    format!("the machine would have {cpus} CPUs; at most {MAX_CPUS} are supported"),
                );
            }
            if node.memory_bytes == 0 {
                return err(
                    Field::Memory,
                    "a node needs memory (memory-less nodes are not modelled)".into(),
                );
            }
            if node.memory_bytes % PAGE_SIZE != 0 {
                return err(
                    Field::Memory,
                    format!(
                        "{} bytes is not a whole number of {PAGE_SIZE}-byte pages",
                        node.memory_bytes
                    ),
                );
            }
            // The address space must hold the memory and the hole below it.
            let hole = self.arch.hole().map_or(0, |h| h.end - h.start);
            let Some(end) = phys.checked_add(node.memory_bytes) else {
                return err(
                    Field::Memory,
                    "the nodes' memory adds up to 2^64 bytes or more".into(),
                );
            };
            if end.checked_add(hole).is_none() {
                return err(
                    Field::Memory,
                    "the nodes' memory and the PCI hole reach past 2^64 bytes".into(),
                );
            }
            phys = end;
            self.check_caches(i, node)?;
        }
        if cpus == 0 {
            return Err(MachineError::new(
                Some(0),
                Field::Cpus,
                "no node has a CPU; a machine needs at least one",
            ));
        }
        for z in self.zone_spans() {
            if z.pages() > MAX_ZONE_PAGES {
                return Err(MachineError::new(
                    Some(z.node),
                    Field::Memory,
                    format!(
                        "zone {} would span {} pages; a zone holds at most {MAX_ZONE_PAGES} \
                         (16 TiB): spread the memory over more nodes",
                        z.zone,
                        z.pages()
                    ),
                ));
            }
        }
        if let Some(kb) = self.min_free_kbytes {
            check_tunable(Field::MinFreeKbytes, kb)?;
            // The memory added up without overflow above.
            let kib = self.memory_bytes() / KIB;
            if kb >= kib {
                return Err(MachineError::new(
                    None,
                    Field::MinFreeKbytes,
                    format!(
                        "{kb} KiB is not below the machine's memory ({kib} KiB): the MIN \
                         watermarks would take every page and every allocation would fail"
                    ),
                ));
            }
        }
        if let Some(f) = self.watermark_scale_factor {
            check_tunable(Field::WatermarkScaleFactor, f.into())?;
        }
        if !FRAME_BYTES.contains(&self.frame_bytes) {
            return Err(MachineError::new(
                None,
                Field::FrameBytes,
                format!(
                    "{} is not a frame size the model knows; it takes 64 (the kernel's struct \
                     page), 32 or 16 (the library's frame)",
                    self.frame_bytes
                ),
            ));
        }
        if let Some(h) = &self.hierarchy {
            let several_llcs = self.nodes.iter().any(|n| n.nr_llc_domains() > 1);
            let several_nodes = self.nodes.len() > 1;
            h.check(several_llcs, several_nodes).map_err(|e| {
                MachineError::new(None, Field::Hierarchy(e.level), e.message.clone())
            })?;
        }
        Ok(())
    }

    /// The hierarchy the model prices accesses from.
    ///
    /// # Errors
    /// The machine has none: a file without a `[hierarchy]` table (fine for `sizing` and
    /// views, not for the model), or a machine made in code.
    pub fn hierarchy(&self) -> Result<&hierarchy::Hierarchy> {
        self.hierarchy.as_ref().ok_or_else(|| {
            let whose = match &self.file {
                Some(f) => format!("{}: field `hierarchy`", f.display()),
                None => format!("machine `{}`", self.name),
            };
            anyhow!(
                "{whose}: missing: the model prices every access the allocator makes from the \
                 machine's memory hierarchy, each figure with its source; add a [hierarchy] \
                 table (`like = \"NAME\"` in it starts from a built-in machine's figures; \
                 `pagealloc machines --help` has the format)"
            )
        })
    }

    /// The cache fields of node `i`.
    fn check_caches(&self, i: usize, node: &NodeSpec) -> Result<(), MachineError> {
        let err = |field, msg: String| Err(MachineError::new(Some(i), field, msg));
        if node.cpus == 0 {
            if node.llc_bytes != 0 {
                return err(Field::Llc, "a node without CPUs has no CPU caches".into());
            }
            if node.llc_shared_by != 0 {
                return err(Field::LlcSharedBy, "a node without CPUs has no CPU caches".into());
            }
            if node.l2.is_some() {
                return err(Field::L2, "a node without CPUs has no CPU caches".into());
            }
            if node.l1d.is_some() {
                return err(Field::L1d, "a node without CPUs has no CPU caches".into());
            }
            return Ok(());
        }
        if node.llc_bytes == 0 {
            return err(
                Field::Llc,
                "a node with CPUs needs the size of its last-level cache".into(),
            );
        }
        let levels = [
            (Field::LlcSharedBy, "LLC", node.llc_shared_by),
            (Field::L2SharedBy, "L2", node.l2.map_or(1, |c| c.shared_by)),
            (Field::L1dSharedBy, "L1d", node.l1d.map_or(1, |c| c.shared_by)),
        ];
        for (field, what, shared_by) in levels {
            if shared_by == 0 {
                return err(field, format!("the {what} must be shared by at least 1 CPU"));
            }
            if shared_by > node.cpus {
                return err(
                    field,
                    format!(
                        "{shared_by} CPUs share the {what} but the node has only {} CPUs",
                        node.cpus
                    ),
                );
            }
        }
        if node.l2.is_some_and(|c| c.bytes == 0) {
            return err(Field::L2, "an L2 of 0 bytes: leave it out if it is not known".into());
        }
        if node.l1d.is_some_and(|c| c.bytes == 0) {
            return err(Field::L1d, "an L1d of 0 bytes: leave it out if it is not known".into());
        }
        Ok(())
    }

    /// Total CPUs.
    pub fn nr_cpus(&self) -> u32 {
        self.nodes.iter().map(|n| n.cpus).sum()
    }

    /// Total memory, bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.nodes.iter().map(|n| n.memory_bytes).sum()
    }

    /// The CPU numbers of node `node`.
    ///
    /// # Panics
    /// If the machine has no such node.
    pub fn cpus_of_node(&self, node: usize) -> Range<u32> {
        let first: u32 = self.nodes[..node].iter().map(|n| n.cpus).sum();
        first..first + self.nodes[node].cpus
    }

    /// The node CPU `cpu` sits on (CPUs are numbered node by node).
    ///
    /// # Panics
    /// If `cpu >= nr_cpus()`.
    pub fn node_of_cpu(&self, cpu: u32) -> usize {
        self.locate(cpu).0
    }

    /// (node, CPU index within the node) of `cpu`.
    fn locate(&self, cpu: u32) -> (usize, u32) {
        let mut first = 0u32;
        for (i, n) in self.nodes.iter().enumerate() {
            if cpu - first < n.cpus {
                return (i, cpu - first);
            }
            first += n.cpus;
        }
        panic!("CPU {cpu} does not exist: machine `{}` has {} CPUs", self.name, self.nr_cpus());
    }

    /// Which LLC domain (group of CPUs sharing one last-level cache) CPU `cpu` belongs to,
    /// numbered from 0 over the machine in CPU order.
    ///
    /// # Panics
    /// If `cpu >= nr_cpus()`.
    pub fn llc_domain(&self, cpu: u32) -> usize {
        let (node, local) = self.locate(cpu);
        let before: usize = self.nodes[..node].iter().map(NodeSpec::nr_llc_domains).sum();
        before + (local / self.nodes[node].llc_shared_by.max(1)) as usize
    }

    /// Each CPU's L2 domain (the CPUs sharing one L2, numbered over the machine) and each
    /// domain's size in bytes: the private cache of the model's line model.
    ///
    /// # Errors
    /// A node with CPUs gives no L2.
    pub fn l2_domains(&self) -> Result<(Vec<u32>, Vec<u64>)> {
        let (mut cpu_l2, mut bytes) = (Vec::new(), Vec::new());
        for (i, node) in self.nodes.iter().enumerate().filter(|(_, n)| n.cpus > 0) {
            let Some(l2) = node.l2 else {
                let at = match &self.file {
                    Some(f) => format!("{}: field `node[{i}].l2_kib`", f.display()),
                    None => format!("machine `{}`, node {i}", self.name),
                };
                return Err(anyhow!(
                    "{at}: missing: the model needs each node's L2 (`l2_kib`, with \
                     `l2_shared_by`), the private cache it prices hits in"
                ));
            };
            let first = bytes.len() as u32;
            for local in 0..node.cpus {
                cpu_l2.push(first + local / l2.shared_by.max(1));
            }
            bytes.resize(bytes.len() + groups(node.cpus, l2.shared_by) as usize, l2.bytes);
        }
        Ok((cpu_l2, bytes))
    }

    /// Number of LLC domains.
    pub fn nr_llc_domains(&self) -> usize {
        self.nodes.iter().map(NodeSpec::nr_llc_domains).sum()
    }

    /// The node and CPUs of LLC domain `d`.
    ///
    /// # Panics
    /// If `d >= nr_llc_domains()`.
    pub fn llc_domain_cpus(&self, d: usize) -> (usize, Range<u32>) {
        let mut first_domain = 0;
        let mut first_cpu = 0;
        for (i, n) in self.nodes.iter().enumerate() {
            let k = n.nr_llc_domains();
            if d < first_domain + k {
                let local = (d - first_domain) as u32 * n.llc_shared_by;
                let start = first_cpu + local;
                return (i, start..start + n.llc_shared_by.min(n.cpus - local));
            }
            first_domain += k;
            first_cpu += n.cpus;
        }
        panic!("LLC domain {d} does not exist: machine `{}` has {first_domain}", self.name);
    }

    /// Size of LLC domain `d`, bytes.
    ///
    /// # Panics
    /// If `d >= nr_llc_domains()`.
    pub fn llc_bytes_of_domain(&self, d: usize) -> u64 {
        self.nodes[self.llc_domain_cpus(d).0].llc_bytes
    }

    /// What CPU `cpu`'s caches look like to the allocator (kernel `cacheinfo`): the LLC size
    /// over the CPUs of its domain, and — when the node gives L2 or L1d — the v1 sum over the
    /// data and unified caches of size over sharers (0 otherwise: unknown).
    ///
    /// # Panics
    /// If `cpu >= nr_cpus()`.
    pub fn cache_info(&self, cpu: u32) -> CacheInfo {
        let (node, local) = self.locate(cpu);
        let n = &self.nodes[node];
        let slice = |bytes: u64, shared_by: u32| {
            bytes / u64::from(group_len(n.cpus, shared_by, local).max(1))
        };
        let llc_slice_bytes = slice(n.llc_bytes, n.llc_shared_by);
        let data_slices_bytes = if n.l2.is_some() || n.l1d.is_some() {
            let lower: u64 =
                [n.l2, n.l1d].iter().flatten().map(|c| slice(c.bytes, c.shared_by)).sum();
            llc_slice_bytes + lower
        } else {
            0
        };
        CacheInfo { llc_slice_bytes, data_slices_bytes }
    }

    /// The physical byte ranges of each node: node 0 from address 0, each node after the
    /// previous one, skipping [`Arch::hole`] (so a node may have two ranges).
    pub fn node_ranges(&self) -> Vec<Vec<Range<u64>>> {
        let hole = self.arch.hole();
        let mut at = 0u64;
        let mut out = Vec::with_capacity(self.nodes.len());
        for n in &self.nodes {
            let mut ranges = Vec::new();
            let mut left = n.memory_bytes;
            while left > 0 {
                let mut limit = u64::MAX;
                if let Some(h) = &hole {
                    if h.contains(&at) {
                        at = h.end;
                    } else if at < h.start {
                        limit = h.start;
                    }
                }
                let take = left.min(limit - at);
                if take == 0 {
                    break; // the address space is full; validate() refuses such machines
                }
                ranges.push(at..at + take);
                at += take;
                left -= take;
            }
            out.push(ranges);
        }
        out
    }

    /// The zones the allocator will build: for each node, the part of its memory below each
    /// zone limit of [`Arch::zone_limits`] (the same split as `MemoryMap`'s), lowest first.
    pub fn zone_spans(&self) -> Vec<ZoneSpan> {
        let limits = self.arch.zone_limits();
        let bounds = [
            (ZoneType::Dma, Pfn(0), limits.dma_end),
            (ZoneType::Dma32, limits.dma_end, limits.dma32_end),
            (ZoneType::Normal, limits.dma32_end.max(limits.dma_end), Pfn(u64::MAX)),
        ];
        let mut out: Vec<ZoneSpan> = Vec::new();
        for (node, ranges) in self.node_ranges().into_iter().enumerate() {
            for &(zone, lo, hi) in &bounds {
                for r in &ranges {
                    let s = Pfn::from_phys(r.start).max(lo);
                    let e = Pfn::from_phys(r.end).min(hi);
                    if s >= e {
                        continue;
                    }
                    match out.last_mut() {
                        Some(z) if z.node == node && z.zone == zone => {
                            z.pfns.end = e;
                            z.present += e.0 - s.0;
                        }
                        _ => out.push(ZoneSpan { node, zone, pfns: s..e, present: e.0 - s.0 }),
                    }
                }
            }
        }
        out
    }

    /// `vm.min_free_kbytes` after boot, KiB, under this machine's tunables over the kernel
    /// defaults: the machine's own value, or what `PageAllocator::new` computes from the memory
    /// size — the square-root rule clamped to 128..=262144 KiB, then raised to khugepaged's
    /// recommendation, which is capped by the pages above the HIGH watermarks that the first
    /// value set (as the kernel's late-boot `set_recommended_min_free_kbytes` sees them).
    pub fn boot_min_free_kbytes(&self) -> u64 {
        let t = self.tunables(Tunables::default());
        if let Some(kb) = t.min_free_kbytes {
            return kb;
        }
        // At boot every present page is managed.
        let managed: Vec<(ZoneType, NrPages)> =
            self.zone_spans().iter().map(|z| (z.zone, NrPages(z.pages()))).collect();
        let at_zero: Vec<_> = managed.iter().map(|&(zt, m)| (zt, m, 0)).collect();
        let kb = sizing::default_min_free_kbytes(sizing::lowmem_kbytes(&at_zero));
        let wm = sizing::zone_watermarks(kb, t.watermark_scale_factor, &managed);
        let marks: Vec<_> = managed.iter().zip(wm).map(|(&(zt, m), w)| (zt, m, w.high)).collect();
        let populated = managed.iter().filter(|z| z.0 <= ZoneType::Normal && z.1 .0 > 0).count();
        let buffer_pages = sizing::nr_free_zone_pages(&marks, ZoneType::Normal);
        kb.max(sizing::thp_recommended_min_free_kbytes(populated as u64, buffer_pages))
    }

    /// The memory map for `PageAllocator::new`: each node's ranges ([`Machine::node_ranges`]),
    /// the CPUs of each node, the architecture's zone limits, and CPU 0's [`CacheInfo`] for
    /// every CPU.
    /// When CPUs differ (nodes with different caches, a smaller last domain), call
    /// [`Machine::apply_cpu_caches`] on the built allocator.
    ///
    /// # Errors
    /// [`Machine::validate`]'s, or a range the map refuses.
    pub fn memory_map(&self) -> Result<MemoryMap, MachineError> {
        self.validate()?;
        let mut map = MemoryMap::new();
        map.with_zone_limits(self.arch.zone_limits());
        for (i, (node, ranges)) in self.nodes.iter().zip(self.node_ranges()).enumerate() {
            let id = NodeId(i as u32);
            for range in ranges {
                map.add_range(id, range).map_err(|e: MapError| {
                    let msg = format!("the memory map refused it: {e}");
                    MachineError::new(Some(i), Field::Memory, msg)
                })?;
            }
            map.set_cpus(id, node.cpus).map_err(|e: MapError| {
                let msg = format!("the memory map refused it: {e}");
                MachineError::new(Some(i), Field::Cpus, msg)
            })?;
        }
        map.set_cpu_cache(self.cache_info(0));
        Ok(map)
    }

    /// Tell an allocator built from [`Machine::memory_map`] each CPU's own caches, where they
    /// differ from CPU 0's (which the map gave every CPU).
    pub fn apply_cpu_caches<E: EventSink>(&self, pa: &PageAllocator<E>) {
        let first = self.cache_info(0);
        for cpu in 1..self.nr_cpus() {
            let c = self.cache_info(cpu);
            if c != first {
                pa.set_cpu_cache(pagealloc::CpuId(cpu), c);
            }
        }
    }

    /// This host as the real runner sees it: one node of `cpus` CPUs and `memory_bytes` of
    /// arena, every CPU sharing the last-level cache sysfs reports for CPU 0 (32 MiB, an
    /// assumption it records, when sysfs says nothing). `--cpus` is checked first, in the
    /// words of the model's `--cpus` check: 0 threads used to be refused as "a node without
    /// CPUs has no CPU caches".
    pub fn host(cpus: u32, memory_bytes: u64) -> Result<Machine> {
        if cpus == 0 || cpus > MAX_CPUS {
            return Err(anyhow!(
                "--cpus {cpus}: the real runner runs one thread per CPU and needs between 1 and \
                 {MAX_CPUS} CPUs"
            ));
        }
        let sysfs = Path::new("/sys/devices/system/cpu");
        let mut assumptions = Vec::new();
        let llc_bytes = crate::cacheinfo::llc_bytes(sysfs, 0).unwrap_or_else(|| {
            assumptions.push("llc: 32 MiB, sysfs reports no cache for cpu0".to_string());
            32 << 20
        });
        let m = Machine {
            name: "host".into(),
            description: format!(
                "this host for the real runner: {cpus} threads over a {} MiB arena",
                memory_bytes >> 20
            ),
            source: "the real runner (--runner real)".into(),
            // The arena is one ZONE_NORMAL (`PageHeap`), whatever the host's architecture.
            arch: Arch::Flat,
            nodes: vec![NodeSpec {
                cpus,
                memory_bytes,
                llc_bytes,
                llc_shared_by: cpus,
                l2: None,
                l1d: None,
            }],
            min_free_kbytes: None,
            watermark_scale_factor: None,
            // The arena is served by the library: its 16-byte frames, four to a line.
            frame_bytes: 16,
            assumptions,
            hierarchy: None,
            file: None,
        };
        m.validate().map_err(|e| anyhow!("--runner real: {e}"))?;
        Ok(m)
    }

    /// `base` with the machine's `min_free_kbytes` and `watermark_scale_factor`, where it sets
    /// them.
    pub fn tunables(&self, base: Tunables) -> Tunables {
        let mut t = base;
        if let Some(kb) = self.min_free_kbytes {
            t.min_free_kbytes = Some(kb);
        }
        if let Some(f) = self.watermark_scale_factor {
            t.watermark_scale_factor = f.into();
        }
        t
    }

    /// The same machine with `n` CPUs (the model's `--cpus N`): the nodes that have CPUs keep
    /// them, `n` spread evenly over those nodes (the first ones get one more when it does not
    /// divide); each node keeps its number of LLC domains (fewer if it now has fewer CPUs) and
    /// their size, so `llc_shared_by` changes and each CPU's LLC slice with it; L2 and L1d keep
    /// their sharing (per core), capped at the node's CPUs. Memory is unchanged. The name
    /// stays; the description and assumptions say what was overridden.
    ///
    /// # Errors
    /// `n` is below the number of nodes with CPUs, or above `MAX_CPUS`.
    pub fn with_cpus(&self, n: u32) -> Result<Machine> {
        self.validate().map_err(|e| anyhow!("machine `{}`: {e}", self.name))?;
        let cpu_nodes = self.nodes.iter().filter(|node| node.cpus > 0).count() as u32;
        if n < cpu_nodes.max(1) || n > MAX_CPUS {
            return Err(anyhow!(
                "--cpus {n}: machine `{}` needs between {} (one per node with CPUs) and {MAX_CPUS} \
                 CPUs",
                self.name,
                cpu_nodes.max(1)
            ));
        }
        if n == self.nr_cpus() {
            return Ok(self.clone());
        }
        let mut out = self.clone();
        let (base, extra) = (n / cpu_nodes, n % cpu_nodes);
        for (k, node) in out.nodes.iter_mut().filter(|node| node.cpus > 0).enumerate() {
            let cpus = base + u32::from((k as u32) < extra);
            let domains = (node.nr_llc_domains() as u32).min(cpus);
            node.llc_shared_by = cpus.div_ceil(domains);
            for c in [&mut node.l2, &mut node.l1d].into_iter().flatten() {
                c.shared_by = c.shared_by.min(cpus);
            }
            node.cpus = cpus;
        }
        out.description = format!("{} — CPUs overridden to {n}", self.description);
        out.assumptions.push(format!(
            "--cpus {n}: {} CPUs in the source, {n} here, spread evenly over the nodes with CPUs; \
             LLC sizes and domains per node kept (so each CPU's LLC slice changes), L2/L1d \
             sharing kept",
            self.nr_cpus()
        ));
        out.validate().map_err(|e| anyhow!("--cpus {n}: {e}"))?;
        Ok(out)
    }

    /// The machine as a machine file (exact units: memory in GiB, MiB or KiB, whichever is
    /// whole; caches likewise in MiB or KiB). Parsing it gives the same machine back, apart
    /// from `file`.
    pub fn to_toml(&self) -> String {
        use std::fmt::Write as _;
        let q = |s: &str| toml_string(s);
        let mut out = String::new();
        let _ = writeln!(out, "name = {}", q(&self.name));
        let _ = writeln!(out, "description = {}", q(&self.description));
        let _ = writeln!(out, "source = {}", q(&self.source));
        let _ = writeln!(out, "arch = {}", q(self.arch.name()));
        if let Some(kb) = self.min_free_kbytes {
            let _ = writeln!(out, "min_free_kbytes = {kb}");
        }
        if let Some(f) = self.watermark_scale_factor {
            let _ = writeln!(out, "watermark_scale_factor = {f}");
        }
        if self.frame_bytes != KERNEL_FRAME_BYTES {
            let _ = writeln!(out, "frame_bytes = {}", self.frame_bytes);
        }
        out.push_str("assumptions = [");
        for a in &self.assumptions {
            let _ = write!(out, "\n    {},", q(a));
        }
        out.push_str(if self.assumptions.is_empty() { "]\n" } else { "\n]\n" });
        if let Some(h) = &self.hierarchy {
            out.push_str("\n[hierarchy]\n");
            for (level, f) in h.iter() {
                let quantiles = if f.quantiles.is_empty() {
                    String::new()
                } else {
                    let qs: Vec<String> = f.quantiles.iter().map(f64::to_string).collect();
                    format!(", quantiles = [{}]", qs.join(", "))
                };
                let _ = writeln!(
                    out,
                    "{} = {{ value = {}{quantiles}, source = {} }}",
                    level.key(),
                    f.value,
                    q(&f.source)
                );
            }
        }
        for n in &self.nodes {
            out.push_str("\n[[node]]\n");
            let _ = writeln!(out, "cpus = {}", n.cpus);
            let _ = writeln!(out, "{}", size_key("memory", n.memory_bytes, true));
            if n.cpus > 0 {
                let _ = writeln!(out, "{}", size_key("llc", n.llc_bytes, false));
                let _ = writeln!(out, "llc_shared_by = {}", n.llc_shared_by);
            }
            for (key, level) in [("l2", n.l2), ("l1d", n.l1d)] {
                if let Some(c) = level {
                    let _ = writeln!(out, "{key}_kib = {}", c.bytes / KIB);
                    let _ = writeln!(out, "{key}_shared_by = {}", c.shared_by);
                }
            }
        }
        out
    }
}

/// `memory_gib = N` / `llc_mib = N` / `…_kib = N`: the largest unit that is exact (GiB only
/// for memory).
fn size_key(prefix: &str, bytes: u64, gib: bool) -> String {
    if gib && bytes % GIB == 0 {
        format!("{prefix}_gib = {}", bytes / GIB)
    } else if bytes % MIB == 0 {
        format!("{prefix}_mib = {}", bytes / MIB)
    } else {
        format!("{prefix}_kib = {}", bytes / KIB)
    }
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The range a machine tunable takes, from the library's own `Tunables::accepted`. For
/// `min_free_kbytes` 0 means "the kernel's boot value" in a machine file (`None` here).
pub(crate) fn tunable_range(field: Field) -> (u64, u64) {
    let (min, max) = match Tunables::accepted(field.name()) {
        Some(Accepted::Int { min, max } | Accepted::DefaultOrInt { min, max }) => (min, max),
        // Only the two tunable fields are asked about; both have integer ranges.
        _ => (0, 0),
    };
    (min.max(0) as u64, max.max(0) as u64)
}

/// Check a machine tunable against [`tunable_range`].
fn check_tunable(field: Field, v: u64) -> Result<(), MachineError> {
    let (min, max) = tunable_range(field);
    if (min..=max).contains(&v) {
        Ok(())
    } else {
        let msg = format!("{v} is out of range; it takes an integer in {min}..={max}");
        Err(MachineError::new(None, field, msg))
    }
}

/// A size for people: the largest binary unit in which it is whole or has at most two exact
/// decimals (`27.5 MiB`, `4080 MiB`, `256 GiB`), else KiB rounded to one decimal.
pub fn fmt_bytes(bytes: u64) -> String {
    for (unit, name) in [(1u64 << 40, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")] {
        if bytes >= unit && (u128::from(bytes) * 100) % u128::from(unit) == 0 {
            let hundredths = u128::from(bytes) * 100 / u128::from(unit);
            let whole = hundredths / 100;
            return match hundredths % 100 {
                0 => format!("{whole} {name}"),
                f if f % 10 == 0 => format!("{whole}.{} {name}", f / 10),
                f => format!("{whole}.{f:02} {name}"),
            };
        }
    }
    if bytes < KIB {
        format!("{bytes} B")
    } else {
        format!("{:.1} KiB", bytes as f64 / KIB as f64)
    }
}

#[cfg(test)]
mod tests;

//! Machine files: TOML in, a validated [`Machine`] out (the format is in the parent module's
//! documentation and in `pagealloc machines --help`).
//!
//! Every error reads `FILE:LINE: field `x`: what is wrong and what is accepted`, where `x` is
//! the key as written (`node[1].llc_shared_by` for the second `[[node]]`). Checks that need the
//! whole machine (CPU totals, zone sizes, cache sharing) are [`Machine::validate`]'s; their
//! errors are traced back to the line of the key that set the field.

use std::path::Path;

use anyhow::{Context, Result};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::hierarchy::{Hierarchy, Level, Sourced};
use super::{
    builtin_names, tunable_range, Arch, CacheLevel, Field, Machine, MachineError, NodeSpec, GIB,
    KIB, MIB,
};
use crate::preset_file::{in_file_order, kind_of, Source, Span};

/// The top-level keys of a machine file.
const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "source",
    "arch",
    "min_free_kbytes",
    "watermark_scale_factor",
    "frame_bytes",
    "assumptions",
    "hierarchy",
    "node",
];

/// The keys of a `[[node]]` table.
const NODE_KEYS: &[&str] = &[
    "cpus",
    "memory_gib",
    "memory_mib",
    "memory_kib",
    "llc_mib",
    "llc_kib",
    "llc_shared_by",
    "l2_kib",
    "l2_shared_by",
    "l1d_kib",
    "l1d_shared_by",
];

/// Read and check a machine file.
///
/// # Errors
/// The file cannot be read, or [`parse`] refuses it.
pub fn load(path: &Path) -> Result<Machine> {
    let text = crate::input::read_text(path, crate::input::InputKind::Config)
        .with_context(|| format!("cannot read machine file `{}`", path.display()))?;
    parse(path, &text)
}

/// Parse and check the machine file `text`, read from `path` (used in messages and as the
/// default name). The name must not be a built-in machine's.
///
/// # Errors
/// Malformed TOML, an unknown key, a value of the wrong kind or range, a missing key, or an
/// impossible machine, each as `FILE:LINE: field `key`: …`.
pub fn parse(path: &Path, text: &str) -> Result<Machine> {
    let mut m = Reader { src: Source { path, text }, builtin: false }.machine()?;
    m.file = Some(path.to_owned());
    Ok(m)
}

/// Parse a built-in machine's file (its name is, of course, a built-in's).
pub(super) fn parse_builtin(path: &Path, text: &str) -> Result<Machine> {
    Reader { src: Source { path, text }, builtin: true }.machine()
}

/// Where each field was written, to trace [`MachineError`]s back to a line.
#[derive(Default)]
struct Spans {
    /// Top-level keys.
    top: Vec<(&'static str, Span)>,
    /// The `[hierarchy]` figures' keys.
    hierarchy: Vec<(Level, Span)>,
    /// Per `[[node]]`: the table's own span and each key's.
    nodes: Vec<NodeSpans>,
}

struct NodeSpans {
    table: Span,
    keys: Vec<(Field, &'static str, Span)>,
}

/// The key a node field is written with when the file does not have it.
fn default_key(field: Field) -> &'static str {
    match field {
        Field::Nodes => "node",
        Field::Cpus => "cpus",
        Field::Memory => "memory_gib",
        Field::Llc => "llc_mib",
        Field::LlcSharedBy => "llc_shared_by",
        Field::L2 => "l2_kib",
        Field::L2SharedBy => "l2_shared_by",
        Field::L1d => "l1d_kib",
        Field::L1dSharedBy => "l1d_shared_by",
        Field::MinFreeKbytes => "min_free_kbytes",
        Field::WatermarkScaleFactor => "watermark_scale_factor",
        Field::FrameBytes => "frame_bytes",
        Field::Hierarchy(_) => "hierarchy",
    }
}

/// One file being read.
struct Reader<'a> {
    src: Source<'a>,
    builtin: bool,
}

type Value<'i> = Spanned<DeValue<'i>>;

impl Reader<'_> {
    /// `FILE:LINE: field `path`: msg`.
    fn err(&self, span: Span, path: &str, msg: impl std::fmt::Display) -> anyhow::Error {
        self.src.error(span, format_args!("field `{path}`: {msg}"))
    }

    fn machine(&self) -> Result<Machine> {
        let doc = DeTable::parse(self.src.text).map_err(|e| self.src.malformed(&e))?.into_inner();
        let mut spans = Spans::default();
        let mut name = None;
        let mut m = Machine {
            name: String::new(),
            description: String::new(),
            source: String::new(),
            arch: Arch::X86_64,
            nodes: Vec::new(),
            min_free_kbytes: None,
            watermark_scale_factor: None,
            frame_bytes: super::KERNEL_FRAME_BYTES,
            assumptions: Vec::new(),
            hierarchy: None,
            file: None,
        };
        for (key, value) in in_file_order(&doc) {
            let k = key.get_ref().as_ref();
            let Some(&k) = TOP_KEYS.iter().find(|&&t| t == k) else {
                let hint = if NODE_KEYS.contains(&k) {
                    format!(" (`{k}` belongs in a [[node]] table)")
                } else {
                    String::new()
                };
                return Err(self.err(
                    key.span(),
                    k,
                    format_args!(
                        "unknown key{hint}; a machine file has {} and [[node]] tables",
                        TOP_KEYS[..TOP_KEYS.len() - 1].join(", ")
                    ),
                ));
            };
            spans.top.push((k, value.span()));
            match k {
                "name" => name = Some((self.string(k, value)?, value.span())),
                "description" => m.description = self.string(k, value)?,
                "source" => m.source = self.string(k, value)?,
                "arch" => {
                    let s = self.string(k, value)?;
                    m.arch = Arch::from_name(&s).ok_or_else(|| {
                        self.err(
                            value.span(),
                            k,
                            format_args!(
                                "\"{s}\" is not an architecture; it takes one of: {}",
                                Arch::NAMES.join(", ")
                            ),
                        )
                    })?;
                }
                "min_free_kbytes" => {
                    // 0 asks for the kernel's boot value, as leaving the key out does.
                    let kb = self.tunable(Field::MinFreeKbytes, value)?;
                    m.min_free_kbytes = (kb != 0).then_some(kb);
                }
                "watermark_scale_factor" => {
                    let f = self.tunable(Field::WatermarkScaleFactor, value)?;
                    m.watermark_scale_factor = Some(f as u32); // checked ≤ 3000
                }
                "frame_bytes" => m.frame_bytes = self.int(k, value, 1 << 20)?,
                "assumptions" => m.assumptions = self.strings(k, value)?,
                "hierarchy" => m.hierarchy = Some(self.hierarchy(value, &mut spans)?),
                _ => {
                    for (i, (table, span)) in self.node_tables(value)?.into_iter().enumerate() {
                        let (node, node_spans) = self.node(i, table, span)?;
                        m.nodes.push(node);
                        spans.nodes.push(node_spans);
                    }
                }
            }
        }
        m.name = self.name(name)?;
        m.validate().map_err(|e| self.trace(&e, &spans))?;
        Ok(m)
    }

    /// The `[hierarchy]` table: `like = "BUILTIN"` first if at all, then figures as
    /// `KEY = { value = NUMBER, source = "…" }`.
    fn hierarchy(&self, value: &Value<'_>, spans: &mut Spans) -> Result<Hierarchy> {
        let DeValue::Table(table) = value.get_ref() else {
            return Err(self.err(
                value.span(),
                "hierarchy",
                format_args!("takes a [hierarchy] table, not {}", kind_of(value.get_ref())),
            ));
        };
        let mut h = Hierarchy::default();
        let keys: Vec<&str> = Level::ALL.iter().map(|l| l.key()).collect();
        for (key, v) in in_file_order(table) {
            let k = key.get_ref().as_ref();
            let path = format!("hierarchy.{k}");
            if k == "like" {
                let name = self.string(&path, v)?;
                let base = builtin_names()
                    .find(|&b| b == name)
                    .and_then(Machine::builtin)
                    .and_then(|m| m.hierarchy);
                let Some(base) = base else {
                    return Err(self.err(
                        v.span(),
                        &path,
                        format_args!(
                            "\"{name}\" is not a built-in machine; it takes one of: {}",
                            builtin_names().collect::<Vec<_>>().join(", ")
                        ),
                    ));
                };
                for (level, f) in base.iter() {
                    h.set(level, f.clone());
                }
                continue;
            }
            let Some(level) = Level::from_key(k) else {
                return Err(self.err(
                    key.span(),
                    &path,
                    format_args!("unknown key; [hierarchy] has like, {}", keys.join(", ")),
                ));
            };
            h.set(level, self.figure(&path, level, v)?);
            spans.hierarchy.push((level, v.span()));
        }
        Ok(h)
    }

    /// One figure: `{ value = NUMBER, source = "…" }`.
    fn figure(&self, path: &str, level: Level, v: &Value<'_>) -> Result<Sourced> {
        let unit = level.unit();
        let form = format!("{{ value = NUMBER ({unit}), source = \"where it was published\" }}");
        let DeValue::Table(t) = v.get_ref() else {
            return Err(self.err(
                v.span(),
                path,
                format_args!("takes {form}, not {}", kind_of(v.get_ref())),
            ));
        };
        let (mut value, mut source, mut quantiles) = (None, None, Vec::new());
        for (key, item) in in_file_order(t) {
            match key.get_ref().as_ref() {
                "value" => value = Some(self.number(&format!("{path}.value"), unit, item)?),
                "source" => source = Some(self.string(&format!("{path}.source"), item)?),
                "quantiles" if level.takes_quantiles() => {
                    let qpath = format!("{path}.quantiles");
                    let DeValue::Array(items) = item.get_ref() else {
                        return Err(self.err(
                            item.span(),
                            &qpath,
                            format_args!(
                                "takes an array of numbers of {unit} (ascending quantiles), not {}",
                                kind_of(item.get_ref())
                            ),
                        ));
                    };
                    quantiles = items
                        .iter()
                        .map(|q| self.number(&qpath, unit, q))
                        .collect::<Result<Vec<f64>>>()?;
                }
                "quantiles" => {
                    return Err(self.err(
                        key.span(),
                        &format!("{path}.quantiles"),
                        format_args!(
                            "only a host's wake figures (wake_idle_ns, wake_call_ns) carry a \
                             measured spread; a figure is {form}"
                        ),
                    ))
                }
                other => {
                    return Err(self.err(
                        key.span(),
                        &format!("{path}.{other}"),
                        format_args!("unknown key; a figure is {form}"),
                    ))
                }
            }
        }
        let missing = |what: &str| {
            self.err(v.span(), path, format_args!("missing `{what}`: a figure is {form}"))
        };
        Ok(Sourced {
            value: value.ok_or_else(|| missing("value"))?,
            source: source.ok_or_else(|| missing("source"))?,
            quantiles,
        })
    }

    /// A number (a float or an integer; NaN for one the range check then refuses).
    fn number(&self, path: &str, unit: &str, item: &Value<'_>) -> Result<f64> {
        match item.get_ref() {
            DeValue::Float(f) => Ok(f.as_str().replace('_', "").parse::<f64>().unwrap_or(f64::NAN)),
            DeValue::Integer(n) => {
                Ok(i64::from_str_radix(n.as_str(), n.radix()).map_or(f64::NAN, |n| n as f64))
            }
            other => Err(self.err(
                item.span(),
                path,
                format_args!("takes a number of {unit}, not {}", kind_of(other)),
            )),
        }
    }

    /// The machine's name: the `name` key or the file stem; a word, and for a user file not a
    /// built-in's name.
    fn name(&self, name: Option<(String, Span)>) -> Result<String> {
        let (name, span, what, fix) = match name {
            Some((n, span)) => (n, span, "the name", "choose another one"),
            None => {
                let stem = self.src.path.file_stem().map(|s| s.to_string_lossy().into_owned());
                (stem.unwrap_or_default(), 0..0, "the file stem", "set `name` to another one")
            }
        };
        if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(self.err(
                span,
                "name",
                format_args!("{what} `{name}` is not a non-empty word without spaces; {fix}"),
            ));
        }
        if !self.builtin && builtin_names().any(|b| b == name) {
            return Err(self.err(
                span,
                "name",
                format_args!("{what} `{name}` is a built-in machine's name; {fix}"),
            ));
        }
        Ok(name)
    }

    /// Point a [`Machine::validate`] error at the key that set the field.
    fn trace(&self, e: &MachineError, spans: &Spans) -> anyhow::Error {
        if let Field::Hierarchy(level) = e.field {
            let span = spans
                .hierarchy
                .iter()
                .find(|(l, _)| *l == level)
                .map(|(_, s)| s.clone())
                .or_else(|| {
                    spans.top.iter().find(|(k, _)| *k == "hierarchy").map(|(_, s)| s.clone())
                })
                .unwrap_or(0..0);
            return self.err(span, &format!("hierarchy.{}", level.key()), &e.message);
        }
        match e.node.and_then(|i| spans.nodes.get(i).map(|n| (i, n))) {
            Some((_, n)) if e.field == Field::Nodes => {
                self.err(n.table.clone(), "node", &e.message)
            }
            Some((i, n)) => {
                let (key, span) = n
                    .keys
                    .iter()
                    .find(|(f, _, _)| *f == e.field)
                    .map_or((default_key(e.field), n.table.clone()), |(_, k, s)| (*k, s.clone()));
                self.err(span, &format!("node[{i}].{key}"), &e.message)
            }
            None => {
                let key = default_key(e.field);
                let span =
                    spans.top.iter().find(|(k, _)| *k == key).map_or(0..0, |(_, s)| s.clone());
                self.err(span, key, &e.message)
            }
        }
    }

    /// The tables of `node = [[node]]…`, with their spans.
    fn node_tables<'v, 'i>(&self, value: &'v Value<'i>) -> Result<Vec<(&'v DeTable<'i>, Span)>> {
        let not_tables = |kind: &str| {
            self.err(
                value.span(),
                "node",
                format_args!("takes [[node]] tables (an array of tables), not {kind}"),
            )
        };
        let DeValue::Array(items) = value.get_ref() else {
            return Err(not_tables(match value.get_ref() {
                DeValue::Table(_) => "a single [node] table",
                other => kind_of(other),
            }));
        };
        items
            .iter()
            .map(|item| match item.get_ref() {
                DeValue::Table(t) => Ok((t, item.span())),
                other => Err(not_tables(&format!("an array holding {}", kind_of(other)))),
            })
            .collect()
    }

    /// One `[[node]]` table.
    fn node(&self, i: usize, table: &DeTable<'_>, span: Span) -> Result<(NodeSpec, NodeSpans)> {
        let path = |key: &str| format!("node[{i}].{key}");
        let mut spans = NodeSpans { table: span.clone(), keys: Vec::new() };
        let mut cpus = None;
        let mut memory: Option<(u64, &str)> = None;
        let mut llc: Option<(u64, &str)> = None;
        let (mut llc_shared_by, mut l2, mut l2_shared_by, mut l1d, mut l1d_shared_by) =
            (None, None, None, None, None);
        for (key, value) in in_file_order(table) {
            let k = key.get_ref().as_ref();
            let Some(&k) = NODE_KEYS.iter().find(|&&n| n == k) else {
                let hint = if TOP_KEYS.contains(&k) {
                    format!(
                        " (`{k}` is a machine key: put it above the first [[node]]; after a \
                         [[node]] header every key belongs to that node)"
                    )
                } else {
                    String::new()
                };
                return Err(self.err(
                    key.span(),
                    &path(k),
                    format_args!("unknown key{hint}; a [[node]] has {}", NODE_KEYS.join(", ")),
                ));
            };
            let p = path(k);
            let once = |slot: Option<(u64, &str)>, what: &str| match slot {
                Some((_, prev)) => Err(self.err(
                    key.span(),
                    &p,
                    format_args!("give the {what} once: `{prev}` is already set"),
                )),
                None => Ok(()),
            };
            let field = match k {
                "cpus" => {
                    cpus = Some(self.int(&p, value, u32::MAX.into())? as u32);
                    Field::Cpus
                }
                "memory_gib" | "memory_mib" | "memory_kib" => {
                    once(memory, "memory")?;
                    let unit = match k {
                        "memory_gib" => GIB,
                        "memory_mib" => MIB,
                        _ => KIB,
                    };
                    memory = Some((self.size(&p, value, unit, k != "memory_kib")?, k));
                    Field::Memory
                }
                "llc_mib" | "llc_kib" => {
                    once(llc, "LLC size")?;
                    let unit = if k == "llc_mib" { MIB } else { KIB };
                    llc = Some((self.cache_size(&p, value, unit, k == "llc_mib")?, k));
                    Field::Llc
                }
                "llc_shared_by" => {
                    llc_shared_by = Some(self.int(&p, value, u32::MAX.into())? as u32);
                    Field::LlcSharedBy
                }
                "l2_kib" => {
                    l2 = Some(self.cache_size(&p, value, KIB, false)?);
                    Field::L2
                }
                "l2_shared_by" => {
                    l2_shared_by = Some(self.int(&p, value, u32::MAX.into())? as u32);
                    Field::L2SharedBy
                }
                "l1d_kib" => {
                    l1d = Some(self.cache_size(&p, value, KIB, false)?);
                    Field::L1d
                }
                _ => {
                    l1d_shared_by = Some(self.int(&p, value, u32::MAX.into())? as u32);
                    Field::L1dSharedBy
                }
            };
            spans.keys.push((field, k, value.span()));
        }
        let missing = |key: &str, what: &str| {
            self.err(span.clone(), &path(key), format_args!("missing: every [[node]] needs {what}"))
        };
        let cpus = cpus.ok_or_else(|| missing("cpus", "`cpus` (0 for a memory-only node)"))?;
        let (memory_bytes, _) = memory
            .ok_or_else(|| missing("memory_gib", "`memory_gib`, `memory_mib` or `memory_kib`"))?;
        let llc_bytes =
            match llc {
                Some((b, _)) => b,
                None if cpus == 0 => 0,
                None => return Err(missing(
                    "llc_mib",
                    "`llc_mib` or `llc_kib` when it has CPUs (the last-level cache of one domain)",
                )),
            };
        let level = |size: Option<u64>, shared_by: Option<u32>, key: &str| match (size, shared_by) {
            (Some(bytes), s) => Ok(Some(CacheLevel { bytes, shared_by: s.unwrap_or(1) })),
            (None, None) => Ok(None),
            (None, Some(_)) => Err(self.err(
                span.clone(),
                &path(&format!("{key}_shared_by")),
                format_args!("given without `{key}_kib`: say the size of the cache it shares"),
            )),
        };
        let node = NodeSpec {
            cpus,
            memory_bytes,
            llc_bytes,
            // Default: one LLC for every CPU of the node (one socket per node).
            llc_shared_by: llc_shared_by.unwrap_or(cpus),
            l2: level(l2, l2_shared_by, "l2")?,
            l1d: level(l1d, l1d_shared_by, "l1d")?,
        };
        Ok((node, spans))
    }

    /// A string value.
    fn string(&self, path: &str, value: &Value<'_>) -> Result<String> {
        match value.get_ref() {
            DeValue::String(s) => Ok(s.as_ref().to_owned()),
            other => Err(self.err(
                value.span(),
                path,
                format_args!("takes a string, not {}", kind_of(other)),
            )),
        }
    }

    /// An array of strings.
    fn strings(&self, path: &str, value: &Value<'_>) -> Result<Vec<String>> {
        match value.get_ref() {
            DeValue::Array(items) => items.iter().map(|v| self.string(path, v)).collect(),
            other => Err(self.err(
                value.span(),
                path,
                format_args!("takes an array of strings, not {}", kind_of(other)),
            )),
        }
    }

    /// An integer in `0..=max`.
    fn int(&self, path: &str, value: &Value<'_>, max: u64) -> Result<u64> {
        let range = || format!("an integer in 0..={max}");
        match value.get_ref() {
            DeValue::Integer(i) => u64::from_str_radix(i.as_str(), i.radix())
                .ok()
                .filter(|&n| n <= max)
                .ok_or_else(|| {
                    self.err(
                        value.span(),
                        path,
                        format_args!("{i} is out of range; it takes {}", range()),
                    )
                }),
            other => Err(self.err(
                value.span(),
                path,
                format_args!("takes {}, not {}", range(), kind_of(other)),
            )),
        }
    }

    /// `min_free_kbytes` or `watermark_scale_factor`: an integer the library's tunable accepts.
    fn tunable(&self, field: Field, value: &Value<'_>) -> Result<u64> {
        let path = field.name();
        let (min, max) = tunable_range(field);
        let range = format!("an integer in {min}..={max}");
        match value.get_ref() {
            DeValue::Integer(i) => i128::from_str_radix(i.as_str(), i.radix())
                .ok()
                .filter(|n| (i128::from(min)..=i128::from(max)).contains(n))
                .map(|n| n as u64)
                .ok_or_else(|| {
                    self.err(
                        value.span(),
                        path,
                        format_args!("{i} is out of range; it takes {range}"),
                    )
                }),
            other => Err(self.err(
                value.span(),
                path,
                format_args!("takes {range}, not {}", kind_of(other)),
            )),
        }
    }

    /// A size given in `unit`s: an integer, or (if `float`) a number, that makes whole bytes
    /// below 2^64.
    fn size(&self, path: &str, value: &Value<'_>, unit: u64, float: bool) -> Result<u64> {
        let takes = if float { "a number" } else { "an integer" };
        let bad = |what: String| self.err(value.span(), path, what);
        match value.get_ref() {
            DeValue::Integer(i) => u64::from_str_radix(i.as_str(), i.radix())
                .ok()
                .and_then(|n| n.checked_mul(unit))
                .ok_or_else(|| {
                    bad(format!("{i} is out of range; it takes {takes} ≥ 0 below 2^64 bytes"))
                }),
            DeValue::Float(f) if float => {
                // Scaling by a power of two is exact, so `fract` tells whole bytes apart.
                let bytes =
                    f.as_str().replace('_', "").parse::<f64>().unwrap_or(f64::NAN) * unit as f64;
                if bytes.is_finite()
                    && bytes >= 0.0
                    && bytes < 2f64.powi(64)
                    && bytes.fract() == 0.0
                {
                    Ok(bytes as u64)
                } else {
                    Err(bad(format!("{f} is not a whole number of bytes ≥ 0 below 2^64")))
                }
            }
            other => Err(bad(format!("takes {takes}, not {}", kind_of(other)))),
        }
    }

    /// A cache size: as [`Reader::size`], a whole number of KiB (as sysfs reports caches).
    fn cache_size(&self, path: &str, value: &Value<'_>, unit: u64, float: bool) -> Result<u64> {
        let bytes = self.size(path, value, unit, float)?;
        if bytes % KIB != 0 {
            return Err(self.err(
                value.span(),
                path,
                format_args!("{bytes} bytes is not a whole number of KiB"),
            ));
        }
        Ok(bytes)
    }
}

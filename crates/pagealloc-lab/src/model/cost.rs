//! The cost profile: the fixed work of each allocator primitive — its instructions, with every
//! line it touches in the private cache — in virtual time. Measured on a real machine by
//! `pagealloc calibrate` and shipped as data (`data/cost-default.toml`); never chosen to make a
//! published table come out. What the lines cost beyond that, by where they are, is the
//! machine's memory hierarchy (`machine::hierarchy`, priced by `model::lines`).

use std::path::Path;

use anyhow::{anyhow, Context, Result};
use serde::Serialize;
use toml::de::{DeTable, DeValue};

use crate::preset_file::{in_file_order, kind_of, Source, Span};

/// Picoseconds per nanosecond: the model keeps time in integer picoseconds so that sums of
/// small costs neither drift nor depend on float rounding order.
pub const PS_PER_NS: f64 = 1000.0;

/// Costs of the primitives, in nanoseconds, with where they were measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CostProfile {
    /// The machine the figures come from (CPU model, CPUs, kernel), as `calibrate` found it.
    pub machine: String,
    /// How they were measured (command, build, repetitions).
    pub method: String,
    /// One allocation call that the CPU's pageset serves, outside any zone lock, its lines hot.
    pub pcp_alloc_ns: f64,
    /// One free call that ends on the CPU's pageset, outside any zone lock, its lines hot.
    pub pcp_free_ns: f64,
    /// The fixed part of one zone-lock hold: taking and releasing the lock uncontended and
    /// the bookkeeping around the list work.
    pub zone_lock_base_ns: f64,
    /// One free-list insertion or removal under the zone lock with its lines in the private
    /// cache (merges, splits, refills and drains are made of these); also each pageset list
    /// operation of the pre-5.18 bulk free's staging pass.
    pub zone_list_op_ns: f64,
    /// One slab object allocation served by the CPU's active slab (`kmem_cache_alloc`'s fast
    /// path in `pagealloc-slab`), its lines hot. A call that needs a new slab adds the page
    /// allocator's call (its own fixed work and lines) on top.
    pub slab_alloc_ns: f64,
    /// One slab object free into the CPU's active slab (`kmem_cache_free`'s fast path), its
    /// lines hot. A free that empties a slab the cache gives back adds the page allocator's
    /// free.
    pub slab_free_ns: f64,
}

/// What a cost field takes.
const COST: &str = "a number of nanoseconds in 0..=1e9";

/// The profile's text fields, with what each is (for a missing one), in struct order.
const TEXT_FIELDS: [(&str, &str); 2] =
    [("machine", "the machine the figures come from"), ("method", "how they were measured")];

/// Its numeric fields, with what each takes, in struct order.
const COST_FIELDS: [(&str, &str); 6] = [
    ("pcp_alloc_ns", COST),
    ("pcp_free_ns", COST),
    ("zone_lock_base_ns", COST),
    ("zone_list_op_ns", COST),
    ("slab_alloc_ns", COST),
    ("slab_free_ns", COST),
];

/// The profile shipped with the lab, measured by `pagealloc calibrate` (see the file's header).
const DEFAULT_PROFILE: &str = include_str!("../../data/cost-default.toml");

impl CostProfile {
    /// The shipped profile.
    pub fn default_profile() -> CostProfile {
        CostProfile::parse(Path::new("data/cost-default.toml"), DEFAULT_PROFILE)
            .expect("the shipped cost profile parses (tested)")
    }

    /// Load a profile written by `pagealloc calibrate`.
    pub fn load(path: &Path) -> Result<CostProfile> {
        let text = crate::input::read_text(path, crate::input::InputKind::Config)
            .with_context(|| format!("cannot read cost profile `{}`", path.display()))?;
        CostProfile::parse(path, &text)
    }

    /// Read a profile from `text` (read from `path`, for messages). Malformed TOML, an unknown
    /// or missing field, a value of the wrong kind or out of range: each an error
    /// `FILE:LINE: field `NAME`: …` saying what the field takes (no line for a missing one).
    pub fn parse(path: &Path, text: &str) -> Result<CostProfile> {
        let src = Source { path, text };
        let doc = DeTable::parse(text).map_err(|e| src.malformed(&e))?.into_inner();
        let mut strings: [Option<String>; TEXT_FIELDS.len()] = Default::default();
        let mut numbers: [Option<(f64, Span)>; COST_FIELDS.len()] = Default::default();
        for (key, value) in in_file_order(&doc) {
            let k = key.get_ref().as_ref();
            let field = |msg: std::fmt::Arguments<'_>| {
                src.error(value.span(), format!("field `{k}`: {msg}"))
            };
            if let Some(i) = TEXT_FIELDS.iter().position(|(n, _)| *n == k) {
                strings[i] = Some(match value.get_ref() {
                    DeValue::String(t) => t.as_ref().to_owned(),
                    other => {
                        return Err(field(format_args!("takes a string, not {}", kind_of(other))))
                    }
                });
            } else if let Some(i) = COST_FIELDS.iter().position(|(n, _)| *n == k) {
                let x = match value.get_ref() {
                    DeValue::Float(f) => f.as_str().replace('_', "").parse().unwrap_or(f64::NAN),
                    DeValue::Integer(n) => {
                        i64::from_str_radix(n.as_str(), n.radix()).map_or(f64::NAN, |n| n as f64)
                    }
                    other => {
                        return Err(field(format_args!(
                            "takes {}, not {}",
                            COST_FIELDS[i].1,
                            kind_of(other)
                        )))
                    }
                };
                numbers[i] = Some((x, value.span()));
            } else {
                let all: Vec<&str> =
                    TEXT_FIELDS.iter().chain(&COST_FIELDS).map(|(n, _)| *n).collect();
                return Err(src.error(
                    key.span(),
                    format_args!("unknown field `{k}`; a cost profile has {}", all.join(", ")),
                ));
            }
        }
        let missing = |(name, what): (&str, &str)| {
            anyhow!(
                "{}: missing field `{name}` ({what}); `pagealloc calibrate --out FILE` writes a \
                 complete profile",
                path.display()
            )
        };
        let text = |i: usize| strings[i].clone().ok_or_else(|| missing(TEXT_FIELDS[i]));
        let cost =
            |i: usize| numbers[i].as_ref().map(|v| v.0).ok_or_else(|| missing(COST_FIELDS[i]));
        let p = CostProfile {
            machine: text(0)?,
            method: text(1)?,
            pcp_alloc_ns: cost(0)?,
            pcp_free_ns: cost(1)?,
            zone_lock_base_ns: cost(2)?,
            zone_list_op_ns: cost(3)?,
            slab_alloc_ns: cost(4)?,
            slab_free_ns: cost(5)?,
        };
        p.check_fields().map_err(|(name, msg)| {
            let i = COST_FIELDS.iter().position(|(n, _)| *n == name).expect("a cost field");
            let span = numbers[i].as_ref().map_or(0..0, |(_, s)| s.clone());
            src.error(span, format_args!("field `{name}`: {msg}"))
        })?;
        Ok(p)
    }

    /// Every cost must be a finite number in 0..=1e9 ns.
    pub fn check(&self) -> Result<()> {
        self.check_fields().map_err(|(name, msg)| anyhow!("field `{name}`: {msg}"))
    }

    /// [`check`](Self::check), with the field refused and why.
    fn check_fields(&self) -> Result<(), (&'static str, String)> {
        let fields = [
            ("pcp_alloc_ns", self.pcp_alloc_ns),
            ("pcp_free_ns", self.pcp_free_ns),
            ("zone_lock_base_ns", self.zone_lock_base_ns),
            ("zone_list_op_ns", self.zone_list_op_ns),
            ("slab_alloc_ns", self.slab_alloc_ns),
            ("slab_free_ns", self.slab_free_ns),
        ];
        for (name, v) in fields {
            if !v.is_finite() || !(0.0..=1e9).contains(&v) {
                return Err((name, format!("{v} is out of range; it takes {}", COST)));
            }
        }
        Ok(())
    }

    /// The same costs in integer picoseconds, as the model charges them.
    pub fn to_ps(&self) -> CostPs {
        let ps = |ns: f64| (ns * PS_PER_NS).round() as u64;
        CostPs {
            pcp_alloc: ps(self.pcp_alloc_ns),
            pcp_free: ps(self.pcp_free_ns),
            lock_base: ps(self.zone_lock_base_ns),
            list_op: ps(self.zone_list_op_ns),
            slab_alloc: ps(self.slab_alloc_ns),
            slab_free: ps(self.slab_free_ns),
        }
    }
}

/// [`CostProfile`] in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CostPs {
    /// See [`CostProfile::pcp_alloc_ns`].
    pub pcp_alloc: u64,
    /// See [`CostProfile::pcp_free_ns`].
    pub pcp_free: u64,
    /// See [`CostProfile::zone_lock_base_ns`].
    pub lock_base: u64,
    /// See [`CostProfile::zone_list_op_ns`].
    pub list_op: u64,
    /// See [`CostProfile::slab_alloc_ns`].
    pub slab_alloc: u64,
    /// See [`CostProfile::slab_free_ns`].
    pub slab_free: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_profile_parses_and_passes_its_checks() {
        let p = CostProfile::default_profile();
        p.check().unwrap();
        assert!(!p.machine.is_empty() && !p.method.is_empty());
        let ps = p.to_ps();
        assert!(ps.pcp_alloc > 0 && ps.list_op > 0);
    }

    #[test]
    fn bad_profiles_are_refused_naming_the_field() {
        let mut p = CostProfile::default_profile();
        p.zone_list_op_ns = f64::NAN;
        assert_eq!(p.check_fields().unwrap_err().0, "zone_list_op_ns");
        let mut p = CostProfile::default_profile();
        p.pcp_free_ns = 2e9;
        assert_eq!(p.check_fields().unwrap_err().0, "pcp_free_ns");
    }

    /// The shipped profile with `field`'s line replaced by `line` (or dropped if empty).
    fn edited(field: &str, line: &str) -> String {
        let mut out = String::new();
        for l in DEFAULT_PROFILE.lines() {
            if l.starts_with(&format!("{field} =")) {
                if !line.is_empty() {
                    out.push_str(line);
                    out.push('\n');
                }
            } else {
                out.push_str(l);
                out.push('\n');
            }
        }
        out
    }

    #[test]
    fn errors_name_the_file_the_line_and_the_field() {
        let line_of = |field: &str| {
            DEFAULT_PROFILE.lines().position(|l| l.starts_with(&format!("{field} ="))).unwrap() + 1
        };
        // (field, the line that replaces its line or "" to drop it, what the error says after
        // `FILE:LINE`, or after `FILE` for a missing field)
        let cases = [
            (
                "pcp_free_ns",
                "pcp_free_ns = \"fast\"",
                "field `pcp_free_ns`: takes a number of nanoseconds in 0..=1e9, not a string",
            ),
            (
                "zone_list_op_ns",
                "zone_list_op_ns = -3",
                "field `zone_list_op_ns`: -3 is out of range",
            ),
            (
                "zone_lock_base_ns",
                "zone_lock_base_ns = inf",
                "field `zone_lock_base_ns`: inf is out of range",
            ),
            ("machine", "machine = 3", "field `machine`: takes a string, not an integer"),
            (
                "pcp_alloc_ns",
                "pcp_alloc_nss = 3.0",
                "unknown field `pcp_alloc_nss`; a cost profile has machine,",
            ),
            ("pcp_alloc_ns", "", "missing field `pcp_alloc_ns`"),
            ("method", "", "missing field `method` (how they were measured)"),
            ("slab_free_ns", "", "missing field `slab_free_ns`"),
            ("slab_alloc_ns", "slab_alloc_ns = -1", "field `slab_alloc_ns`: -1 is out of range"),
        ];
        let cases = cases.iter().map(|&(field, line, msg)| {
            let at = if line.is_empty() { String::new() } else { format!(":{}", line_of(field)) };
            (edited(field, line), format!("{at}: {msg}"))
        });
        let duplicate = "pcp_alloc_ns = 1.0\npcp_alloc_ns = 2.0";
        let cases = cases.chain([(
            edited("pcp_alloc_ns", duplicate),
            format!(":{}: malformed TOML", line_of("pcp_alloc_ns") + 1),
        )]);
        for (text, want) in cases {
            let e =
                format!("{:#}", CostProfile::parse(Path::new("my-costs.toml"), &text).unwrap_err());
            assert!(e.starts_with("my-costs.toml") && e.contains(&want), "{e}\nlacks {want}");
        }
        // Integers are whole nanoseconds.
        let p =
            CostProfile::parse(Path::new("x.toml"), &edited("pcp_alloc_ns", "pcp_alloc_ns = 17"))
                .unwrap();
        assert_eq!(p.pcp_alloc_ns, 17.0);
    }
}

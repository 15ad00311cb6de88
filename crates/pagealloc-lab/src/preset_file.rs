//! User preset files: a built-in preset plus switch and tunable overrides, written in TOML.
//! This is how an MM developer tries their own policy variant:
//!
//! ```toml
//! # my-variant.toml
//! name = "my-variant"          # optional; default: the file stem
//! base = "modern"              # required: a built-in preset name
//! description = "…"            # optional
//! [switches]                   # optional: Policy keys -> values (bool or kebab-case string)
//! high_decay = "four-fifths"
//! zone_below_high = false
//! [tunables]                   # optional: Tunables keys -> values (int, "default", list)
//! percpu_pagelist_high_fraction = 16
//! pcp_batch_scale_max = 3
//! ```
//!
//! Values go through the library's own setters ([`Policy::set`], [`Tunables::set`]), so what
//! a file may say is exactly what the library accepts. Every error names the file, the line,
//! the key and what the key accepts.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use pagealloc::policy::{Accepted, PolicyError, Preset, SwitchValue, PRESETS, PRESET_NAMES};
use pagealloc::{Policy, Tunables};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// The top-level keys a preset file may have.
const TOP_KEYS: &str = "name, base, description, [switches] and [tunables]";

/// A preset ready to run: a built-in one, or a file's base preset with its overrides applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedPreset {
    /// The name results are labelled with: the built-in name, or the file's `name` (default:
    /// the file stem).
    pub name: String,
    /// The built-in preset it starts from (its own name for a built-in).
    pub base: String,
    /// The file's `description`, if it has one.
    pub description: Option<String>,
    /// The file it was read from; `None` for a built-in preset.
    pub file: Option<PathBuf>,
    /// The switches.
    pub policy: Policy,
    /// The tunables (the kernel defaults for a built-in preset).
    pub tunables: Tunables,
    /// Every key the file sets, in file order, with its value as TOML (`"four-fifths"`, `16`,
    /// `[256, 256, 32, 0]`); empty for a built-in preset.
    pub overrides: Vec<(String, String)>,
}

impl ResolvedPreset {
    /// A built-in preset with the kernel's default tunables.
    pub fn builtin(preset: &Preset) -> ResolvedPreset {
        ResolvedPreset {
            name: preset.name.to_owned(),
            base: preset.name.to_owned(),
            description: None,
            file: None,
            policy: preset.policy,
            tunables: Tunables::default(),
            overrides: Vec::new(),
        }
    }

    /// The built-in preset this is (`None` for a preset file).
    pub fn as_builtin(&self) -> Option<&'static Preset> {
        if self.file.is_some() {
            None
        } else {
            Preset::get(&self.name)
        }
    }

    /// The base preset's table entry.
    pub fn base_preset(&self) -> &'static Preset {
        Preset::get(&self.base).expect("base is checked to be a built-in preset")
    }

    /// One line saying what this preset is: the built-in summary, or the file's description
    /// (default: what it is based on).
    pub fn summary(&self) -> String {
        if let Some(p) = self.as_builtin() {
            return p.summary.to_owned();
        }
        match &self.description {
            Some(d) => d.clone(),
            None => format!("`{}` with {} override(s)", self.base, self.overrides.len()),
        }
    }

    /// Does some switch use a posted-but-never-merged form? For a built-in preset this is
    /// [`Preset::unmerged`]; for a file, true if some switch has a value that only presets
    /// modelling unmerged versions use.
    pub fn unmerged(&self) -> bool {
        if let Some(p) = self.as_builtin() {
            return p.unmerged;
        }
        uses_unmerged_forms(&self.policy)
    }
}

/// True if some switch of `policy` takes a value that appears in an unmerged preset and in no
/// merged one (e.g. `high_decay = "four-fifths"`, which only Huang's posted v1 had).
pub fn uses_unmerged_forms(policy: &Policy) -> bool {
    policy.switches().any(|(key, value)| {
        let used_by = |unmerged: bool| {
            PRESETS
                .iter()
                .any(|p| p.unmerged == unmerged && p.policy.get(key) == Some(value.clone()))
        };
        used_by(true) && !used_by(false)
    })
}

/// Find a preset by name or file: a built-in preset name gives that preset (with default
/// tunables); otherwise an existing file, or any path ending in `.toml`, is loaded as a preset
/// file.
///
/// # Errors
/// An unknown name (listing the built-in presets), or any error of [`load`].
pub fn resolve(spec: &str) -> Result<ResolvedPreset> {
    if let Some(p) = Preset::get(spec) {
        return Ok(ResolvedPreset::builtin(p));
    }
    let path = Path::new(spec);
    if path.is_file() || spec.ends_with(".toml") {
        return load(path);
    }
    Err(anyhow!(
        "unknown preset `{spec}`{} (built-in presets: {}; or give a path to a .toml preset file)",
        crate::suggest::did_you_mean(spec, PRESET_NAMES.iter().copied()),
        PRESET_NAMES.join(", ")
    ))
}

/// Read and apply a preset file.
///
/// # Errors
/// The file cannot be read, or [`parse`] refuses it.
pub fn load(path: &Path) -> Result<ResolvedPreset> {
    let text = crate::input::read_text(path, crate::input::InputKind::Config)
        .with_context(|| format!("cannot read preset file `{}`", path.display()))?;
    parse(path, &text)
}

/// Apply the preset file `text`, read from `path` (used for messages and the default name).
///
/// # Errors
/// Malformed TOML, an unknown key, a missing or unknown `base`, or a value of the wrong kind
/// or out of range, each as `FILE:LINE: message` naming the key and what it accepts.
pub fn parse(path: &Path, text: &str) -> Result<ResolvedPreset> {
    let src = Source { path, text };
    let doc = DeTable::parse(text).map_err(|e| src.malformed(&e))?.into_inner();

    let mut name: Option<(String, Span)> = None;
    let mut base: Option<(String, Span)> = None;
    let mut description = None;
    let mut switches = None;
    let mut tunables = None;
    for (key, value) in in_file_order(&doc) {
        match key.get_ref().as_ref() {
            "name" => name = Some((src.string("name", value)?, value.span())),
            "base" => base = Some((src.string("base", value)?, value.span())),
            "description" => description = Some(src.string("description", value)?),
            "switches" => switches = Some(src.table("switches", value)?),
            "tunables" => tunables = Some(src.table("tunables", value)?),
            other => {
                return Err(src.error(
                    key.span(),
                    format_args!("unknown key `{other}`; a preset file has {TOP_KEYS}"),
                ))
            }
        }
    }

    let Some((base, base_span)) = base else {
        return Err(src.error(
            0..0,
            format_args!(
                "missing key `base`: the built-in preset to start from (one of: {})",
                PRESET_NAMES.join(", ")
            ),
        ));
    };
    let Some(base_preset) = Preset::get(&base) else {
        return Err(src.error(
            base_span,
            format_args!(
                "`base` = \"{base}\" is not a built-in preset; built-in presets: {}",
                PRESET_NAMES.join(", ")
            ),
        ));
    };
    let name = match name {
        Some((n, span)) => {
            src.check_name(&n, span, "`name`")?;
            n
        }
        None => {
            let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
            let stem = stem.unwrap_or_default();
            src.check_name(
                &stem,
                0..0,
                "the preset's name (the file stem; set `name` to change it)",
            )?;
            stem
        }
    };

    let mut out = ResolvedPreset {
        name,
        base,
        description,
        file: Some(path.to_owned()),
        policy: base_preset.policy,
        tunables: Tunables::default(),
        overrides: Vec::new(),
    };
    if let Some(table) = switches {
        for (key, value) in in_file_order(table) {
            let k = key.get_ref().as_ref();
            let Some(accepted) = Policy::accepted(k) else {
                let hint = if Tunables::KEYS.contains(&k) {
                    format!(" (`{k}` is a tunable: put it under [tunables])")
                } else {
                    String::new()
                };
                return Err(src.error(
                    key.span(),
                    format_args!(
                        "[switches]: unknown switch `{k}`{hint}; known switches: {}",
                        Policy::KEYS.join(", ")
                    ),
                ));
            };
            let v = src.value("switches", k, accepted, value)?;
            out.policy.set(k, v.clone()).map_err(|e| src.policy_error("switches", value, &e))?;
            out.overrides.push((k.to_owned(), v.to_string()));
        }
    }
    if let Some(table) = tunables {
        for (key, value) in in_file_order(table) {
            let k = key.get_ref().as_ref();
            let Some(accepted) = Tunables::accepted(k) else {
                let hint = if Policy::KEYS.contains(&k) {
                    format!(" (`{k}` is a switch: put it under [switches])")
                } else {
                    String::new()
                };
                return Err(src.error(
                    key.span(),
                    format_args!(
                        "[tunables]: unknown tunable `{k}`{hint}; known tunables: {}",
                        Tunables::KEYS.join(", ")
                    ),
                ));
            };
            let v = src.value("tunables", k, accepted, value)?;
            out.tunables.set(k, v.clone()).map_err(|e| src.policy_error("tunables", value, &e))?;
            out.overrides.push((k.to_owned(), v.to_string()));
        }
    }
    Ok(out)
}

/// A byte range of the file.
pub(crate) type Span = std::ops::Range<usize>;

/// A table's entries in the order they appear in the file (the parser's map is sorted by key).
pub(crate) fn in_file_order<'a, 'i>(
    table: &'a DeTable<'i>,
) -> Vec<(&'a Spanned<std::borrow::Cow<'i, str>>, &'a Spanned<DeValue<'i>>)> {
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by_key(|(k, _)| k.span().start);
    entries
}

/// The TOML kind of a value, with its article, for messages.
pub(crate) fn kind_of(value: &DeValue<'_>) -> &'static str {
    match value {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a bool",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// The file being read, for messages (also used by `machine::file`).
pub(crate) struct Source<'a> {
    /// The file's path, as given.
    pub(crate) path: &'a Path,
    /// Its text.
    pub(crate) text: &'a str,
}

impl Source<'_> {
    /// The 1-based line of byte offset `at`.
    pub(crate) fn line(&self, at: usize) -> usize {
        let at = at.min(self.text.len());
        self.text.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1
    }

    /// `FILE:LINE: message`.
    pub(crate) fn error(&self, span: Span, msg: impl std::fmt::Display) -> anyhow::Error {
        anyhow!("{}:{}: {msg}", self.path.display(), self.line(span.start))
    }

    /// A TOML syntax error, with the offending line and a caret under the spot.
    pub(crate) fn malformed(&self, e: &toml::de::Error) -> anyhow::Error {
        let at = e.span().map_or(0, |s| s.start).min(self.text.len());
        let line = self.line(at);
        let line_start = self.text[..at].rfind('\n').map_or(0, |i| i + 1);
        let line_text = self.text[line_start..].lines().next().unwrap_or("");
        let col = self.text[line_start..at].chars().count();
        let mut msg = format!("{}:{line}: malformed TOML: {}", self.path.display(), e.message());
        let gutter = line.to_string();
        let _ = write!(
            msg,
            "\n {gutter} | {line_text}\n {} | {}^",
            " ".repeat(gutter.len()),
            " ".repeat(col)
        );
        anyhow!(msg)
    }

    /// A top-level string value.
    fn string(&self, key: &str, value: &Spanned<DeValue<'_>>) -> Result<String> {
        match value.get_ref() {
            DeValue::String(s) => Ok(s.as_ref().to_owned()),
            other => Err(self.error(
                value.span(),
                format_args!("`{key}` takes a string, not {}", kind_of(other)),
            )),
        }
    }

    /// A top-level table (`[switches]`, `[tunables]`).
    fn table<'v, 'i>(&self, key: &str, value: &'v Spanned<DeValue<'i>>) -> Result<&'v DeTable<'i>> {
        match value.get_ref() {
            DeValue::Table(t) => Ok(t),
            other => Err(self.error(
                value.span(),
                format_args!(
                    "`{key}` takes a table ([{key}] and `key = value` lines), not {}",
                    kind_of(other)
                ),
            )),
        }
    }

    /// A preset name: not empty, no white space, not a built-in preset's.
    fn check_name(&self, name: &str, span: Span, what: &str) -> Result<()> {
        if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(self.error(
                span,
                format_args!("{what} `{name}` must be a non-empty word without spaces"),
            ));
        }
        if Preset::get(name).is_some() {
            return Err(self.error(
                span,
                format_args!("{what} `{name}` is a built-in preset's name; choose another one"),
            ));
        }
        Ok(())
    }

    /// Convert a TOML value of `[section] key` to a [`SwitchValue`]; kinds the library has no
    /// value for (floats, date-times, tables, mixed arrays) are refused here with what `key`
    /// accepts.
    pub(crate) fn value(
        &self,
        section: &str,
        key: &str,
        accepted: Accepted,
        value: &Spanned<DeValue<'_>>,
    ) -> Result<SwitchValue> {
        let wrong = |kind: &str| {
            self.error(
                value.span(),
                format_args!("[{section}]: `{key}` takes {accepted}, not {kind}"),
            )
        };
        let int = |v: &Spanned<DeValue<'_>>| match v.get_ref() {
            DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix()).map_err(|_| {
                self.error(
                    v.span(),
                    format_args!("[{section}]: `{key}` = {i} is out of range; it takes {accepted}"),
                )
            }),
            other => Err(wrong(&format!("{} in the list", kind_of(other)))),
        };
        Ok(match value.get_ref() {
            DeValue::String(s) => SwitchValue::Str(s.as_ref().to_owned()),
            DeValue::Boolean(b) => SwitchValue::Bool(*b),
            DeValue::Integer(_) => SwitchValue::Int(int(value)?),
            DeValue::Array(items) => {
                SwitchValue::List(items.iter().map(int).collect::<Result<Vec<i64>>>()?)
            }
            other => return Err(wrong(kind_of(other))),
        })
    }

    /// A value the library refused.
    fn policy_error(
        &self,
        section: &str,
        value: &Spanned<DeValue<'_>>,
        e: &PolicyError,
    ) -> anyhow::Error {
        self.error(value.span(), format_args!("[{section}]: {}", describe(e)))
    }
}

/// What the library's refusal `e` says, in the words preset files (and `explore --axis`)
/// print: `` `key` takes …, not a … `` for a value of the wrong kind.
pub(crate) fn describe(e: &PolicyError) -> String {
    match e {
        PolicyError::WrongKind { key, got, accepted } => {
            let article = if matches!(got, pagealloc::policy::ValueKind::Int) { "an" } else { "a" };
            format!("`{key}` takes {accepted}, not {article} {got}")
        }
        other => other.to_string(),
    }
}

/// What switch or tunable `key` accepts.
///
/// # Errors
/// `key` is neither a switch nor a tunable; the message lists both.
pub fn accepted(key: &str) -> Result<Accepted> {
    Policy::accepted(key).or_else(|| Tunables::accepted(key)).ok_or_else(|| {
        anyhow!(
            "no switch or tunable `{key}`{}; switches: {}; tunables: {}",
            crate::suggest::did_you_mean(key, Policy::KEYS.iter().chain(Tunables::KEYS).copied()),
            Policy::KEYS.join(", "),
            Tunables::KEYS.join(", ")
        )
    })
}

/// Set switch or tunable `key` of `preset` to `value` through the library's setters, as a
/// preset file's `[switches]` and `[tunables]` lines do, and record it among the overrides
/// (what `explore` does for each axis of its grid).
///
/// # Errors
/// A key that is neither a switch nor a tunable (listing both), or a value the library
/// refuses; the message names the key and what it accepts.
pub fn apply_override(preset: &mut ResolvedPreset, key: &str, value: &SwitchValue) -> Result<()> {
    accepted(key)?;
    let result = if Policy::KEYS.contains(&key) {
        preset.policy.set(key, value.clone())
    } else {
        preset.tunables.set(key, value.clone())
    };
    result.map_err(|e| anyhow!(describe(&e)))?;
    preset.overrides.push((key.to_owned(), value.to_string()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"# my-variant.toml
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
"#;

    fn parse_str(text: &str) -> Result<ResolvedPreset> {
        parse(Path::new("dir/my-variant.toml"), text)
    }

    fn err(text: &str) -> String {
        format!("{:#}", parse_str(text).unwrap_err())
    }

    #[test]
    fn the_example_applies_every_override_in_file_order() {
        let r = parse_str(EXAMPLE).unwrap();
        assert_eq!(r.name, "my-variant");
        assert_eq!(r.base, "modern");
        assert_eq!(r.file.as_deref(), Some(Path::new("dir/my-variant.toml")));
        let mut policy = Policy::modern();
        policy.high_decay = pagealloc::policy::HighDecay::FourFifths;
        policy.zone_below_high = false;
        assert_eq!(r.policy, policy);
        assert_eq!(r.tunables.percpu_pagelist_high_fraction, 16);
        assert_eq!(r.tunables.pcp_batch_scale_max, 3);
        assert_eq!(r.tunables.lowmem_reserve_ratio, [256, 256, 64, 0]);
        assert_eq!(r.tunables.min_free_kbytes, None);
        let keys: Vec<&str> = r.overrides.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "high_decay",
                "zone_below_high",
                "percpu_pagelist_high_fraction",
                "pcp_batch_scale_max",
                "lowmem_reserve_ratio",
                "min_free_kbytes"
            ]
        );
        assert_eq!(r.overrides[0].1, "\"four-fifths\"");
        assert_eq!(r.overrides[4].1, "[256, 256, 64, 0]");
        assert!(r.unmerged(), "four-fifths is a v1-only form");
        assert!(r.summary().contains("4/5 decay"));
    }

    #[test]
    fn a_minimal_file_is_its_base_named_after_the_file() {
        let r = parse_str("base = \"tune-p7\"\n").unwrap();
        assert_eq!(r.name, "my-variant");
        assert_eq!(r.policy, Policy::preset("tune-p7").unwrap());
        assert_eq!(r.tunables, Tunables::default());
        assert!(r.overrides.is_empty());
        assert!(r.as_builtin().is_none());
        // Dotted keys and inline tables are the same document.
        let r = parse_str("base = \"modern\"\nswitches.bulk_free = \"two-pass-round-robin\"\n")
            .unwrap();
        assert_eq!(r.policy.bulk_free, pagealloc::policy::BulkFree::TwoPassRoundRobin);
        let r = parse_str("base = \"modern\"\ntunables = { decay_period_ticks = 4 }\n").unwrap();
        assert_eq!(r.tunables.decay_period_ticks, 4);
    }

    #[test]
    fn the_unmerged_rule_agrees_with_every_builtin_preset() {
        for p in PRESETS {
            assert_eq!(uses_unmerged_forms(&p.policy), p.unmerged, "{}", p.name);
        }
    }

    #[test]
    fn resolve_takes_names_and_files() {
        let r = resolve("hpc-opt").unwrap();
        assert_eq!(r, ResolvedPreset::builtin(Preset::get("hpc-opt").unwrap()));
        assert_eq!(r.summary(), Preset::get("hpc-opt").unwrap().summary);
        let e = format!("{:#}", resolve("no-such").unwrap_err());
        assert!(
            e.contains("unknown preset `no-such` (built-in presets: modern, hpc-vanilla"),
            "{e}"
        );
        assert!(e.contains("or give a path to a .toml preset file"), "{e}");
        let e = format!("{:#}", resolve("missing/file.toml").unwrap_err());
        assert!(e.contains("cannot read preset file `missing/file.toml`"), "{e}");
    }

    #[test]
    fn errors_name_the_file_the_line_the_key_and_what_is_accepted() {
        let cases: &[(&str, &[&str])] = &[
            (
                "base = \"modern\"\n\nflavour = 1\n",
                &["dir/my-variant.toml:3:", "unknown key `flavour`", "[switches] and [tunables]"],
            ),
            (
                "name = \"x\"\nbase = \"modren\"\n",
                &["my-variant.toml:2:", "`base` = \"modren\"", "modern, hpc-vanilla", "pfrag-pcp"],
            ),
            ("name = \"x\"\n", &["my-variant.toml:1:", "missing key `base`", "tune-p10"]),
            (
                "base = \"modern\"\n[switches]\nhigh_decy = \"off\"\n",
                &["my-variant.toml:3:", "unknown switch `high_decy`", "high_decay, free_batch"],
            ),
            (
                "base = \"modern\"\n[switches]\npcp_batch_scale_max = 3\n",
                &["my-variant.toml:3:", "`pcp_batch_scale_max` is a tunable", "[tunables]"],
            ),
            (
                "base = \"modern\"\n[tunables]\nbatch = 3\n",
                &["my-variant.toml:3:", "unknown tunable `batch`", "min_free_kbytes"],
            ),
            (
                "base = \"modern\"\n[switches]\nzone_below_high = 1\n",
                &["my-variant.toml:3:", "`zone_below_high` takes true or false, not an integer"],
            ),
            (
                "base = \"modern\"\n[switches]\nhigh_decay = true\n",
                &["my-variant.toml:3:", "`high_decay` takes one of: off, four-fifths", "a bool"],
            ),
            (
                "base = \"modern\"\n[switches]\nhigh_decay = \"fast\"\n",
                &["my-variant.toml:3:", "`high_decay` = \"fast\" is not accepted", "seven-eighths"],
            ),
            (
                "base = \"modern\"\n[tunables]\npcp_batch_scale_max = 9\n",
                &["my-variant.toml:3:", "`pcp_batch_scale_max` = 9", "an integer in 0..=6"],
            ),
            (
                "base = \"modern\"\n[tunables]\nwatermark_scale_factor = 1.5\n",
                &["my-variant.toml:3:", "`watermark_scale_factor` takes an integer", "a float"],
            ),
            (
                "base = \"modern\"\n[tunables]\nlowmem_reserve_ratio = [1, 2, 3]\n",
                &["my-variant.toml:3:", "`lowmem_reserve_ratio` = [1, 2, 3]", "a list of 4"],
            ),
            (
                "base = \"modern\"\n[tunables]\nlowmem_reserve_ratio = [1, \"x\", 3, 4]\n",
                &["my-variant.toml:3:", "`lowmem_reserve_ratio` takes a list", "a string in"],
            ),
            (
                "base = \"modern\"\n[tunables]\nmin_free_kbytes = 99999999999999999999\n",
                &["my-variant.toml:3:"],
            ),
            (
                "base = \"modern\"\n[switches]\nhigh_decay = \"off\n",
                &["my-variant.toml:3: malformed TOML", "3 | high_decay = \"off"],
            ),
            (
                "base = \"modern\"\n[switches]\nhigh_decay = \"off\"\nhigh_decay = \"off\"\n",
                &["my-variant.toml:4: malformed TOML", "high_decay"],
            ),
            ("base = 3\n", &["my-variant.toml:1:", "`base` takes a string, not an integer"]),
            ("base = \"modern\"\nswitches = 3\n", &["my-variant.toml:2:", "takes a table"]),
            (
                "base = \"modern\"\nname = \"modern\"\n",
                &["my-variant.toml:2:", "`modern` is a built-in preset's name"],
            ),
        ];
        for (text, wanted) in cases {
            let e = err(text);
            for w in *wanted {
                assert!(e.contains(w), "{text:?}: {e:?} lacks {w:?}");
            }
        }
    }

    #[test]
    fn a_file_named_like_a_builtin_needs_its_own_name() {
        let e =
            format!("{:#}", parse(Path::new("modern.toml"), "base = \"modern\"\n").unwrap_err());
        assert!(e.contains("modern.toml:1:") && e.contains("set `name`"), "{e}");
        let r = parse(Path::new("modern.toml"), "name = \"mine\"\nbase = \"modern\"\n").unwrap();
        assert_eq!(r.name, "mine");
    }
}

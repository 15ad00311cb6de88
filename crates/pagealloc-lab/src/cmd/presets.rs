//! `pagealloc presets`: the built-in presets (or the named ones, or preset files) with their
//! summaries, the seed rows they stand for, and every switch value.

use std::fmt::Write as _;
use std::io::Write as _;

use anyhow::Result;
use pagealloc::policy::{SwitchValue, PRESETS};
use pagealloc::Tunables;
use serde_json::json;

use crate::preset_file::{resolve, ResolvedPreset};

/// The width the text output is laid out for.
const WIDTH: usize = 100;
/// Width of the key column: the longest switch or tunable key.
const KEY_WIDTH: usize = 30;

/// Text shown after `pagealloc presets --help`.
pub const AFTER_HELP: &str = "\
A preset file starts from a built-in preset and changes some switches and tunables:

    # my-variant.toml
    name = \"my-variant\"          # optional; default: the file stem
    base = \"modern\"              # required: a built-in preset name
    description = \"...\"          # optional
    [switches]                   # optional: switch = true/false or a kebab-case value
    high_decay = \"four-fifths\"
    zone_below_high = false
    [tunables]                   # optional: integers, \"default\", a list for lowmem_reserve_ratio
    percpu_pagelist_high_fraction = 16
    pcp_batch_scale_max = 3

Check it with `pagealloc presets my-variant.toml`, run it with
`pagealloc exercise --preset my-variant.toml`. docs/presets.md explains every switch and
tunable and what each preset models.";

/// Arguments of `pagealloc presets`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Built-in preset names or preset files (.toml) to show; none: every built-in preset.
    #[arg(value_name = "NAME_OR_FILE")]
    pub presets: Vec<String>,
    /// Print one JSON document instead of text.
    ///
    /// The document is {"presets":[…]}, one object per preset with "name", "summary",
    /// "seed_rows" ([{"seed","label"}]), "unmerged", "mainline" (where a built-in stands in
    /// mainline's history: "ran in 6.6", "merged in 5.18", "never merged"; null for a file),
    /// "switches" and "tunables" ({key: value}); a preset file's object also has "base",
    /// "file" and "overrides".
    #[arg(long)]
    pub json: bool,
}

/// Run the command.
pub fn run(args: &Args) -> Result<()> {
    let presets: Vec<ResolvedPreset> = if args.presets.is_empty() {
        PRESETS.iter().map(ResolvedPreset::builtin).collect()
    } else {
        args.presets.iter().map(|s| resolve(s)).collect::<Result<_>>()?
    };
    if args.json {
        let doc = json!({ "presets": presets.iter().map(to_json).collect::<Vec<_>>() });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    let mut out = String::new();
    for (i, p) in presets.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        write_text(&mut out, p);
    }
    if args.presets.is_empty() {
        let _ = write!(
            out,
            "\n{} presets. Write your own as a .toml file based on one of them: see \
             `pagealloc presets --help`.\n",
            presets.len()
        );
    }
    // `pagealloc presets | head` closes the pipe early; that is not an error.
    match std::io::stdout().lock().write_all(out.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// A switch or tunable value as JSON.
pub fn json_value(v: &SwitchValue) -> serde_json::Value {
    match v {
        SwitchValue::Bool(b) => json!(b),
        SwitchValue::Int(n) => json!(n),
        SwitchValue::Str(s) => json!(s),
        SwitchValue::List(l) => json!(l),
    }
}

/// Where a built-in preset stands in mainline ("merged in 5.18"); none for a preset file,
/// whose overrides no release may have run.
fn builtin_mainline(p: &ResolvedPreset) -> Option<String> {
    p.as_builtin().filter(|_| p.file.is_none()).map(|b| b.mainline.to_string())
}

/// One preset's JSON object.
fn to_json(p: &ResolvedPreset) -> serde_json::Value {
    let rows = p.as_builtin().map_or(&[][..], |b| b.rows);
    let switches: serde_json::Map<_, _> =
        p.policy.switches().map(|(k, v)| (k.to_owned(), json_value(&v))).collect();
    let tunables: serde_json::Map<_, _> =
        p.tunables.values().map(|(k, v)| (k.to_owned(), json_value(&v))).collect();
    let seed_rows: Vec<_> =
        rows.iter().map(|r| json!({"seed": r.seed, "label": r.label})).collect();
    let mut obj = json!({
        "name": p.name,
        "summary": p.summary(),
        "seed_rows": seed_rows,
        "unmerged": p.unmerged(),
        "mainline": builtin_mainline(p),
        "switches": switches,
        "tunables": tunables,
    });
    if let Some(file) = &p.file {
        let overrides: serde_json::Map<_, _> = p
            .overrides
            .iter()
            .filter_map(|(k, _)| {
                let v = p.policy.get(k).or_else(|| p.tunables.get(k))?;
                Some((k.clone(), json_value(&v)))
            })
            .collect();
        obj["base"] = json!(p.base);
        obj["file"] = json!(file.display().to_string());
        obj["overrides"] = serde_json::Value::Object(overrides);
    }
    obj
}

/// A switch or tunable value as TOML.
fn toml_value(v: &SwitchValue) -> String {
    v.to_string()
}

/// Append `text` to `out` wrapped at [`WIDTH`]: the first line indented by `indent` spaces,
/// the others by `hang`.
pub(crate) fn wrap(out: &mut String, indent: usize, hang: usize, text: &str) {
    wrap_atoms(out, indent, hang, text.split_whitespace());
}

/// As [`wrap`], breaking lines only between `atoms` (which are joined by single spaces).
pub(crate) fn wrap_atoms<'a>(
    out: &mut String,
    indent: usize,
    hang: usize,
    atoms: impl IntoIterator<Item = &'a str>,
) {
    let mut col = 0;
    let mut margin = indent;
    for atom in atoms {
        let len = atom.chars().count();
        if col > 0 && margin + col + 1 + len > WIDTH {
            out.push('\n');
            col = 0;
            margin = hang;
        }
        if col == 0 {
            out.extend(std::iter::repeat_n(' ', margin));
        } else {
            out.push(' ');
            col += 1;
        }
        out.push_str(atom);
        col += len;
    }
    out.push('\n');
}

/// One preset as a block of text: name line, summary, seed rows, every switch (as TOML
/// lines one can paste into a preset file) and the tunables that differ from the defaults.
fn write_text(out: &mut String, p: &ResolvedPreset) {
    let builtin = p.as_builtin();
    out.push_str(&p.name);
    if let Some(file) = &p.file {
        let _ = write!(out, "  (file {}, based on {})", file.display(), p.base);
    }
    if p.unmerged() {
        out.push_str("  [models a posted version that was not merged]");
    }
    out.push('\n');
    wrap(out, 2, 2, &p.summary());
    if let Some(m) = builtin_mainline(p) {
        wrap(out, 2, 4, &format!("mainline: {m}"));
    }

    // "000 (vanilla, 5.17-rc3), 004 (vanilla)": the table lists a seed's rows together.
    let rows = builtin.map_or(&[][..], |b| b.rows);
    let mut groups: Vec<String> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        if i == 0 || rows[i - 1].seed != r.seed {
            if let Some(last) = groups.last_mut() {
                last.push_str("),");
            }
            groups.push(format!("{} ({}", r.seed, r.label));
        } else if let Some(last) = groups.last_mut() {
            let _ = write!(last, ", {}", r.label);
        }
    }
    if let Some(last) = groups.last_mut() {
        last.push(')');
    } else {
        groups.push(if builtin.is_some() { "none" } else { "none (a user preset)" }.to_owned());
    }
    let label = "seed rows:";
    let atoms = std::iter::once(label).chain(groups.iter().map(String::as_str));
    wrap_atoms(out, 2, 3 + label.len(), atoms);

    // Overridden keys get their base value as a TOML comment.
    let base = p.base_preset();
    let base_tunables = Tunables::default();
    let overridden = |k: &str| p.overrides.iter().any(|(o, _)| o == k);
    let value_width = p
        .policy
        .switches()
        .chain(p.tunables.values())
        .map(|(_, v)| toml_value(&v).chars().count())
        .max()
        .unwrap_or(0);
    let line = |out: &mut String, key: &str, value: &SwitchValue, was: Option<SwitchValue>| {
        let v = toml_value(value);
        match was {
            Some(was) => {
                let _ = writeln!(
                    out,
                    "    {key:<KEY_WIDTH$} = {v:<value_width$}  # {}: {}",
                    p.base,
                    toml_value(&was)
                );
            }
            None => {
                let _ = writeln!(out, "    {key:<KEY_WIDTH$} = {v}");
            }
        }
    };

    out.push_str("  switches:\n");
    for (key, value) in p.policy.switches() {
        let was = if overridden(key) { base.policy.get(key) } else { None };
        line(out, key, &value, was);
    }
    let changed: Vec<_> =
        p.tunables.values().filter(|(k, v)| base_tunables.get(k).as_ref() != Some(v)).collect();
    if changed.is_empty() {
        out.push_str("  tunables: kernel defaults\n");
    } else {
        out.push_str("  tunables (the others at kernel defaults):\n");
        for (key, value) in changed {
            let was = base_tunables.get(key);
            let _ = writeln!(
                out,
                "    {key:<KEY_WIDTH$} = {:<value_width$}  # default: {}",
                toml_value(&value),
                was.as_ref().map_or(String::new(), toml_value)
            );
        }
    }
}

//! The report as wrapped text and as JSON.

use std::fmt::Write as _;

#[allow(clippy::wildcard_imports)]
use super::*;

/// Width the text output wraps its prose at.
pub(super) const WIDTH: usize = 100;

/// `first` then `text`, wrapped at [`WIDTH`] with continuation lines indented by `indent`.
pub(super) fn wrap(out: &mut String, first: &str, indent: usize, text: &str) {
    let mut line = first.to_owned();
    let mut empty = true;
    for word in text.split(' ') {
        if !empty && line.chars().count() + 1 + word.chars().count() > WIDTH {
            out.push_str(line.trim_end());
            out.push('\n');
            line = " ".repeat(indent);
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

impl Report {
    pub(crate) fn mismatches(&self) -> usize {
        self.zones.iter().flat_map(|z| &z.checks).filter(|c| c.outcome() == Some(false)).count()
    }

    pub(super) fn compared(&self) -> usize {
        self.zones.iter().flat_map(|z| &z.checks).filter(|c| c.outcome().is_some()).count()
    }

    pub(super) fn uses_drift_note(&self) -> bool {
        self.zones
            .iter()
            .flat_map(|z| &z.checks)
            .any(|c| c.hint.as_deref().is_some_and(|h| h.contains('¹')))
    }

    pub(crate) fn to_text(&self) -> String {
        let mut out = String::new();
        let nodes = self.node_cpus.len().max(1);
        let _ = writeln!(out, "zoneinfo: {}", self.source);
        let _ = writeln!(
            out,
            "  {} checked zone(s), {} node(s), {} online CPU(s)",
            self.zones.len(),
            nodes,
            self.online_cpus.map_or("unknown".to_owned(), |c| c.to_string())
        );
        wrap(&mut out, "  layout: ", 4, &self.layout.join(", "));
        wrap(&mut out, "  kernel assumed: ", 4, self.era.label());
        wrap(&mut out, "    because ", 4, &self.era_why);
        let _ = writeln!(out, "inputs:");
        for (name, value, src) in &self.inputs {
            let _ = writeln!(out, "  {name:<30} {value}");
            wrap(&mut out, &format!("  {:<30} (", ""), 33, &format!("{})", src.detail()));
        }
        for z in &self.zones {
            let _ = writeln!(out, "\nNode {}, zone {} (managed {})", z.node, z.zone, z.managed);
            let rows: Vec<(&str, String, String, &str)> = z
                .checks
                .iter()
                .map(|c| {
                    (
                        c.field,
                        c.kernel.as_ref().map_or("(not printed)".to_owned(), Val::text),
                        c.ours.as_ref().map_or("-".to_owned(), Val::text),
                        c.mark(),
                    )
                })
                .collect();
            let kw =
                rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0).max("kernel".len());
            let ow = rows.iter().map(|r| r.2.chars().count()).max().unwrap_or(0).max("ours".len());
            let _ = writeln!(out, "  {:<15} {:>kw$}  {:>ow$}", "field", "kernel", "ours");
            for (field, k, o, mark) in &rows {
                let _ = writeln!(out, "  {field:<15} {k:>kw$}  {o:>ow$}  {mark}");
            }
            for c in z.checks.iter().filter(|c| c.hint.is_some()) {
                let hint = c.hint.as_deref().unwrap_or_default();
                wrap(&mut out, &format!("  ✗ {}: ", c.field), 4, hint);
            }
            for n in &z.notes {
                wrap(&mut out, "  note: ", 4, n);
            }
        }
        if !self.not_checked.is_empty() || !self.notes.is_empty() {
            out.push('\n');
        }
        for n in &self.not_checked {
            wrap(&mut out, "not checked: ", 2, n);
        }
        for n in &self.notes {
            wrap(&mut out, "note: ", 2, n);
        }
        if self.uses_drift_note() {
            out.push('\n');
            wrap(&mut out, "", 2, DRIFT_NOTE);
        }
        let mismatches = self.mismatches();
        let _ = writeln!(
            out,
            "\n{} of {} compared fields match; {mismatches} mismatch{}",
            self.compared() - mismatches,
            self.compared(),
            if mismatches == 1 { "" } else { "es" }
        );
        out
    }

    pub(crate) fn to_json(&self) -> Value {
        let zones: Vec<Value> = self
            .zones
            .iter()
            .map(|z| {
                let fields: serde_json::Map<String, Value> = z
                    .checks
                    .iter()
                    .map(|c| {
                        let mut v = json!({
                            "kernel": c.kernel.as_ref().map_or(Value::Null, Val::json),
                            "ours": c.ours.as_ref().map_or(Value::Null, Val::json),
                            "match": c.outcome(),
                        });
                        if let Some(h) = &c.hint {
                            v["hint"] = json!(h);
                        }
                        (c.field.to_owned(), v)
                    })
                    .collect();
                json!({
                    "node": z.node,
                    "zone": z.zone,
                    "managed": z.managed,
                    "fields": fields,
                    "notes": z.notes,
                })
            })
            .collect();
        let inputs: serde_json::Map<String, Value> = self
            .inputs
            .iter()
            .map(|(name, value, src)| {
                (
                    name.replace(' ', "_").to_lowercase(),
                    json!({"value": value, "source": src.kind(), "detail": src.detail()}),
                )
            })
            .collect();
        json!({
            "source": self.source,
            "kernel": {
                "layout": self.layout,
                "pcp_era": self.era.key(),
                "assumed": self.era.label(),
                "because": self.era_why,
            },
            "online_cpus": self.online_cpus,
            "node_cpus": self.node_cpus.iter().map(|(n, c)| (n.to_string(), json!(c))).collect::<serde_json::Map<_, _>>(),
            "inputs": inputs,
            "zones": zones,
            "not_checked": self.not_checked,
            "notes": self.notes.iter().cloned().chain(self.uses_drift_note().then(|| DRIFT_NOTE.to_owned())).collect::<Vec<_>>(),
            "compared": self.compared(),
            "mismatches": self.mismatches(),
        })
    }
}

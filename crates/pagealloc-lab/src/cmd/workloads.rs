//! `pagealloc workloads`: the workload models, what each imitates, and its parameters with
//! their defaults, ranges and sources.

use anyhow::Result;
use serde_json::json;

use crate::workload::{self, WORKLOADS};

/// Arguments of `pagealloc workloads`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only these workloads.
    pub names: Vec<String>,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Run the command.
pub fn run(args: &Args) -> Result<()> {
    let chosen: Vec<_> = if args.names.is_empty() {
        WORKLOADS.iter().collect()
    } else {
        args.names.iter().map(|n| workload::find(n)).collect::<Result<_>>()?
    };
    if args.json {
        let list: Vec<_> = chosen
            .iter()
            .map(|w| {
                let params: Vec<_> = w
                    .params
                    .iter()
                    .map(|p| {
                        json!({"name": p.name, "default": p.default, "min": p.min, "max": p.max,
                               "unit": p.unit, "doc": p.doc, "source": p.source,
                               "scaled": p.scaled, "whole": p.whole})
                    })
                    .collect();
                json!({"name": w.name, "summary": w.summary, "machine": w.default_machine,
                       "params": params})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&json!({ "workloads": list }))?);
        return Ok(());
    }
    for (i, w) in chosen.iter().enumerate() {
        if i > 0 {
            println!();
        }
        println!("{} — {}", w.name, w.summary);
        println!("  default machine: {}", w.default_machine);
        for p in w.params {
            let whole = if p.whole { ", whole numbers" } else { "" };
            let scaled = if p.scaled { ", scaled by --scale" } else { "" };
            println!(
                "  {:<20} {:>12} {:<6} {} [{} .. {}{whole}{scaled}]",
                p.name, p.default, p.unit, p.doc, p.min, p.max
            );
            println!("  {:<20} source: {}", "", p.source);
        }
    }
    Ok(())
}

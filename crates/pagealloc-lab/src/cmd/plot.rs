//! `pagealloc plot ROWS.jsonl…`: SVG plots from saved result rows — memory held by the
//! pagesets over time per preset, a few CPUs' pageset count and `high` over time, and
//! per-preset bars of each metric. Only reads rows (`results.rs`): measuring, storing and
//! rendering stay apart.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::charts::{charts, Chart};
use crate::results;

/// Arguments of `pagealloc plot`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Result files (JSON lines, as `run`, `compare` and `reproduce` write under results/).
    #[arg(required = true)]
    pub rows: Vec<PathBuf>,
    /// Directory to write the SVG files to.
    #[arg(long, default_value = "plots", value_name = "DIR")]
    pub out: PathBuf,
    /// Metrics to draw bars for (default: every metric the rows hold but the series, leaving
    /// out those that are 0 in every run; a metric named here is drawn even then).
    #[arg(long, value_delimiter = ',')]
    pub metrics: Vec<String>,
    /// Print one JSON document `{"files":[…]}` with the paths written instead of one path a
    /// line.
    #[arg(long)]
    pub json: bool,
}

/// Run the command.
pub fn run(args: &Args) -> Result<()> {
    let mut rows = Vec::new();
    for p in &args.rows {
        rows.extend(results::load(p)?);
    }
    if rows.is_empty() {
        bail!("the files hold no rows");
    }
    let charts = charts(&rows, &args.metrics);
    write_all(&args.out, &charts)?;
    let index = args.out.join("index.html");
    std::fs::write(&index, index_page(&args.rows, &charts))
        .with_context(|| format!("writing {}", index.display()))?;
    let paths: Vec<String> = charts
        .iter()
        .map(|(stem, _)| args.out.join(format!("{stem}.svg")).display().to_string())
        .collect();
    if args.json {
        println!("{}", serde_json::json!({ "files": paths, "index": index }));
    } else {
        for p in &paths {
            println!("{p}");
        }
        println!("{} charts; every one on one page: {}", paths.len(), index.display());
    }
    Ok(())
}

/// A page showing every chart (by file name, beside it), under the files they came from.
fn index_page(sources: &[PathBuf], charts: &[Chart]) -> String {
    let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let from: Vec<String> = sources.iter().map(|p| esc(&p.display().to_string())).collect();
    let mut h = String::from(
        "<!doctype html><meta charset=\"utf-8\"><title>pagealloc plots</title>\
         <style>body{font-family:sans-serif;margin:1em}figure{display:inline-block;\
         margin:.5em}img{max-width:640px}figcaption{font-size:80%}</style>",
    );
    h.push_str(&format!(
        "<h1>pagealloc plots</h1><p>{} charts from {}</p>",
        charts.len(),
        from.join(", ")
    ));
    for (stem, _) in charts {
        let stem = esc(stem);
        h.push_str(&format!(
            "<figure><img src=\"{stem}.svg\" alt=\"{stem}\"><figcaption>{stem}</figcaption>\
             </figure>"
        ));
    }
    h.push('\n');
    h
}

/// Write each chart as `dir/<stem>.svg`.
pub fn write_all(dir: &Path, charts: &[Chart]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (stem, svg) in charts {
        let path = dir.join(format!("{stem}.svg"));
        std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

//! Self-contained HTML reports: one page with every table, ours beside published, and the
//! plots inline as SVG. No scripts, no fonts, no network fetches — a reviewer can open it
//! from disk or attach it to a mail.

use std::fmt::Write as _;

use crate::charts::charts;
use crate::reproduction::{our_metric, Scoreboard, TableReport, LEGEND};
use crate::results::Row;

const STYLE: &str = "body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}\
h1{font-size:1.6em}h2{font-size:1.2em;margin-top:2.2em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}\
td,th{padding:.2em .6em;text-align:right;border-bottom:1px solid #eee}\
th{background:#f4f4f4}td.l,th.l{text-align:left}.ok{color:#080}.no{color:#b00}\
.meta{color:#555;font-size:.9em}.note{background:#fafafa;border-left:3px solid #ccc;\
padding:.4em .8em;font-size:.85em}figure{display:inline-block;margin:.4em}figure svg{width:520px;height:auto}\
.summary td{font-size:1em}";

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}")
    } else {
        "—".to_string()
    }
}

/// The `reproduce --report` page.
pub fn reproduce_page(
    tables: &[TableReport],
    board: &Scoreboard,
    rows: &[Row],
    skipped: &[(String, String)],
) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>pagealloc: the seed \
         tables reproduced</title><style>{STYLE}</style></head><body>"
    );
    let _ = write!(h, "<h1>pagealloc — the seed tables reproduced on the model</h1>");
    let scale = board.scale_warning().unwrap_or("full scale");
    let _ = write!(
        h,
        "<p class=\"meta\">{} tables and panels, {}. Marks: {}. A published change is a cell \
         the table marks significant, or at least 1% where the table gives no noise; ours is a \
         change when the t-test over our samples says so at p&nbsp;&lt;&nbsp;0.10 (and reaches \
         1% where the published side was judged by that threshold). The magnitude ratio is our \
         change over the published one. Cells shared by panels count once. Values marked \
         base=100 are normalised to the first column, as the seed prints them.</p>",
        tables.len(),
        esc(scale),
        esc(LEGEND)
    );
    let _ = write!(
        h,
        "<table class=\"summary\"><tr><th class=\"l\">table</th><th class=\"l\">workload</th>\
         <th class=\"l\">machine</th><th>changes agree</th><th>sign</th><th>±30%</th><th>2×</th>\
         <th>median ratio</th><th>flat agree</th></tr>"
    );
    let row = |h: &mut String,
               name: &str,
               workload: &str,
               machine: &str,
               s: &crate::scoreboard::Score| {
        let median = s.median_ratio.map_or("—".to_string(), |m| format!("{m:.2}"));
        let _ = write!(
            h,
            "<tr><td class=\"l\">{name}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>\
             <td>{} of {}</td><td>{}</td><td>{}</td><td>{}</td><td>{median}</td><td>{} of {}</td></tr>",
            esc(workload),
            esc(machine),
            s.changes_agree,
            s.changes,
            s.sign_matches,
            s.within_30pct,
            s.within_2x,
            s.flat_agree,
            s.flat
        );
    };
    for (t, (_, s)) in tables.iter().zip(&board.tables) {
        let id = esc(&t.id);
        row(&mut h, &format!("<a href=\"#{id}\">{id}</a>"), &t.workload, &t.machine, s);
    }
    row(&mut h, "<b>all cells</b>", "", "", &board.all);
    row(&mut h, "<b>performance</b>", "", "", &board.performance);
    h.push_str("</table>");
    for (id, why) in skipped {
        let _ = write!(h, "<p class=\"no\">{}: not run: {}</p>", esc(id), esc(why));
    }
    for t in tables {
        table_section(&mut h, t, rows);
    }
    h.push_str("</body></html>\n");
    h
}

fn table_section(h: &mut String, t: &TableReport, rows: &[Row]) {
    let _ = write!(h, "<h2 id=\"{}\">{} — {}</h2>", esc(&t.id), esc(&t.id), esc(&t.title));
    let _ = write!(
        h,
        "<p class=\"meta\">seed {}; workload <b>{}</b> on <b>{}</b> ({} CPUs); {} sample(s) per \
         preset; baseline {}</p>",
        esc(&t.seed),
        esc(&t.workload),
        esc(&t.machine),
        t.cpus,
        t.samples,
        esc(&t.baseline)
    );
    for (param, idx) in t.blocks() {
        let _ = write!(
            h,
            "<table><tr><th class=\"l\">{}</th>",
            esc(if param.is_empty() { "preset" } else { param })
        );
        for &i in &idx {
            let (name, _, norm, unit) = &t.metrics[i];
            let what = if *norm { "base=100".to_string() } else { unit.clone() };
            let _ = write!(
                h,
                "<th colspan=\"3\">{} <span class=\"meta\">{}</span></th>",
                esc(name),
                esc(&what)
            );
        }
        let _ = write!(h, "</tr><tr><th></th>");
        for _ in &idx {
            let _ = write!(h, "<th>ours</th><th>published</th><th></th>");
        }
        let _ = write!(h, "</tr>");
        for (r, preset) in t.presets.iter().enumerate() {
            let _ = write!(h, "<tr><td class=\"l\">{}</td>", esc(preset));
            for &i in &idx {
                let c = &t.cells[i][r];
                let class = match c.mark() {
                    "✓" | "=" => "ok",
                    "✗" | "≠" => "no",
                    _ => "",
                };
                let _ = write!(
                    h,
                    "<td>{}</td><td>{}</td><td class=\"{class}\">{}</td>",
                    num(c.ours),
                    num(c.published),
                    c.mark()
                );
            }
            let _ = write!(h, "</tr>");
        }
        let _ = write!(h, "</table>");
    }
    if !t.note.is_empty() {
        let _ = write!(h, "<p class=\"note\">{}</p>", esc(&t.note));
    }
    // Ours beside published, relative to the baseline column, for each metric without a
    // parameter (the one-value-per-preset tables).
    for (i, (name, param, _, _)) in t.metrics.iter().enumerate() {
        if !param.is_empty() {
            continue;
        }
        let cells = &t.cells[i];
        let (b_ours, b_pub) = (cells[0].ours, cells[0].published);
        let rel = |x: f64, b: f64| if b != 0.0 { 100.0 * x / b } else { f64::NAN };
        let groups: Vec<(String, Vec<f64>)> = t
            .presets
            .iter()
            .zip(cells)
            .map(|(p, c)| (p.clone(), vec![rel(c.ours, b_ours), rel(c.published, b_pub)]))
            .collect();
        let title = format!("{name}, baseline = 100 — {}", t.id);
        let _ = write!(
            h,
            "<figure>{}</figure>",
            crate::plot::grouped_bar_chart(
                &title,
                "% of baseline",
                &["ours", "published"],
                &groups
            )
        );
    }
    // This table's charts: pageset memory over time and each CPU's count/high for the first
    // parameter value; bars for the metrics the table shows.
    let mine: Vec<Row> =
        rows.iter().filter(|r| r.table.as_deref() == Some(t.id.as_str())).cloned().collect();
    let wanted: Vec<String> = t.metrics.iter().map(|m| our_metric(&m.0).to_string()).collect();
    let mut shown = 0;
    for (stem, svg) in charts(&mine, &wanted) {
        let keep = stem.starts_with("pcp-memory")
            || stem.starts_with("bars")
            || (stem.starts_with("pcp-cpu") && stem.contains(&t.baseline));
        if keep && shown < 8 {
            let _ = write!(h, "<figure>{svg}</figure>");
            shown += 1;
        }
    }
}

/// The `compare --report` page: the mmtests table as text and the charts.
pub fn compare_page(title: &str, table: &str, rows: &[Row]) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body><h1>{}</h1><pre>{}</pre>",
        esc(title),
        esc(title),
        esc(table)
    );
    for (_, svg) in charts(rows, &[]) {
        let _ = write!(h, "<figure>{svg}</figure>");
    }
    h.push_str("</body></html>\n");
    h
}

/// The `explore --report` page: the grid, the table of every point with the front marked,
/// and one Pareto plot per workload and machine.
pub fn explore_page(what: &str, grid: &[String], table: &str, svgs: &[&str]) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>pagealloc \
         explore</title><style>{STYLE}</style></head><body><h1>pagealloc explore — {}</h1>",
        esc(what)
    );
    if !grid.is_empty() {
        h.push_str("<h2>The grid</h2><ul>");
        for line in grid {
            let _ = write!(h, "<li>{}</li>", esc(line));
        }
        h.push_str("</ul>");
    }
    h.push_str("<h2>Pareto fronts</h2>");
    for svg in svgs {
        let _ = write!(h, "<figure>{svg}</figure>");
    }
    let _ = writeln!(h, "<h2>Every point</h2><pre>{}</pre></body></html>", esc(table));
    h
}

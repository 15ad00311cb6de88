//! SVG plots, written by hand (no plotting crate, no scripts, no fonts to fetch): line charts
//! of series over virtual time and bar charts of per-preset means. Rendering only — the data
//! comes from result rows.

use std::fmt::Write as _;

/// Width and height of every chart, px.
const W: f64 = 720.0;
const H: f64 = 360.0;
/// Margins: left (axis labels), right (legend), top (title), bottom (axis labels).
const ML: f64 = 70.0;
const MR: f64 = 170.0;
const MT: f64 = 34.0;
const MB: f64 = 46.0;

/// Colours of successive series (colour-blind-safe Okabe–Ito palette).
const PALETTE: &[&str] =
    &["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"];

/// One line of a line chart.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points (x, y), in x order.
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed (e.g. `high` beside the solid `count`).
    pub dashed: bool,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A "nice" step for about `n` ticks over `span`.
fn nice_step(span: f64, n: f64) -> f64 {
    if span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / n;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f < 1.5 {
        1.0
    } else if f < 3.0 {
        2.0
    } else if f < 7.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// Most tick marks one axis draws.
const MAX_TICKS: usize = 50;

/// The ticks of `lo..=hi` at multiples of `step`: at most [`MAX_TICKS`], each finite and
/// above the one before. Without the bounds an axis near `f64::MAX` (its top overflowing to
/// infinity) or a step lost in rounding (a span of 1 at 1e20) drew ticks for ever.
fn ticks(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    if !(step > 0.0 && step.is_finite() && lo.is_finite()) {
        return vec![lo, hi].into_iter().filter(|v| v.is_finite()).collect();
    }
    let first = (lo / step).ceil() * step;
    let mut out: Vec<f64> = Vec::new();
    for k in 0..MAX_TICKS {
        let v = first + k as f64 * step;
        if !v.is_finite() || v > hi + step * 1e-9 || out.last().is_some_and(|&l| v <= l) {
            break;
        }
        out.push(v);
    }
    out
}

/// The top of an axis whose data reach `max`, with `margin` (0.05: 5 %) of headroom; finite
/// even for data near `f64::MAX`.
fn axis_top(max: f64, margin: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        1.0
    } else {
        (max * (1.0 + margin)).min(f64::MAX)
    }
}

fn fmt_tick(v: f64) -> String {
    if v.abs() >= 1e9 {
        format!("{v:.2e}")
    } else if v.abs() >= 1e6 {
        // Three decimals, trailing zeros dropped: ticks 1.05M and 1.1M stay apart.
        let m = format!("{:.3}", v / 1e6);
        format!("{}M", m.trim_end_matches('0').trim_end_matches('.'))
    } else if v.abs() >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v.fract().abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn header(out: &mut String, title: &str) {
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = write!(out, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = write!(
        out,
        r#"<text x="{}" y="20" text-anchor="middle" font-size="14" font-weight="bold">{}</text>"#,
        (ML + W - MR) / 2.0,
        esc(title)
    );
}

/// Axes with ticks for x in `x0..x1` and y in `y0..y1`; returns the data → pixel maps.
fn axes(
    out: &mut String,
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
    x_label: &str,
    y_label: &str,
) -> (impl Fn(f64) -> f64, impl Fn(f64) -> f64) {
    let (pw, ph) = (W - ML - MR, H - MT - MB);
    let sx = move |x: f64| ML + (x - x0) / (x1 - x0).max(1e-12) * pw;
    let sy = move |y: f64| MT + ph - (y - y0) / (y1 - y0).max(1e-12) * ph;
    let _ = write!(
        out,
        r##"<rect x="{ML}" y="{MT}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>"##
    );
    for y in ticks(y0, y1, nice_step(y1 - y0, 5.0)) {
        let py = sy(y);
        let _ = write!(
            out,
            r##"<line x1="{ML}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            W - MR,
            ML - 6.0,
            py + 4.0,
            fmt_tick(y)
        );
    }
    for x in ticks(x0, x1, nice_step(x1 - x0, 8.0)) {
        let px = sx(x);
        let _ = write!(
            out,
            r##"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="#444"/><text x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            H - MB,
            H - MB + 4.0,
            H - MB + 17.0,
            fmt_tick(x)
        );
    }
    let _ = write!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        (ML + W - MR) / 2.0,
        H - 8.0,
        esc(x_label)
    );
    let _ = write!(
        out,
        r#"<text transform="translate(16,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        MT + (H - MT - MB) / 2.0,
        esc(y_label)
    );
    (sx, sy)
}

/// A line chart of `series` (empty series are skipped); y starts at 0.
pub fn line_chart(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    let pts =
        series.iter().flat_map(|s| s.points.iter()).filter(|p| p.0.is_finite() && p.1.is_finite());
    let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    // A point's y is drawn only if finite; x likewise (see `axes` for the bounds).
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let y1 = axis_top(y1, 0.05);
    let mut out = String::new();
    header(&mut out, title);
    let (sx, sy) = axes(&mut out, (x0, x1), (0.0, y1), x_label, y_label);
    for (i, s) in series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let path: Vec<String> =
            s.points.iter().map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y))).collect();
        if !path.is_empty() {
            let dash = if s.dashed { r#" stroke-dasharray="5,3""# } else { "" };
            let _ = write!(
                out,
                r#"<polyline fill="none" stroke="{colour}" stroke-width="1.6"{dash} points="{}"/>"#,
                path.join(" ")
            );
        }
        let ly = MT + 14.0 + 16.0 * i as f64;
        let dash = if s.dashed { r#" stroke-dasharray="5,3""# } else { "" };
        let _ = write!(
            out,
            r#"<line x1="{:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{colour}" stroke-width="2"{dash}/><text x="{:.1}" y="{:.1}">{}</text>"#,
            W - MR + 10.0,
            W - MR + 30.0,
            W - MR + 35.0,
            ly + 4.0,
            esc(&s.label)
        );
    }
    out.push_str("</svg>\n");
    out
}

/// One bar: label, value, and an error half-width (stddev) drawn as a whisker if > 0.
#[derive(Clone, Debug)]
pub struct Bar {
    /// Label under the bar.
    pub label: String,
    /// Height.
    pub value: f64,
    /// Whisker half-height (0: none).
    pub err: f64,
}

/// A bar chart; y starts at 0 (values below 0 are drawn as 0).
pub fn bar_chart(title: &str, y_label: &str, bars: &[Bar]) -> String {
    let err = |b: &Bar| if b.err > 0.0 && b.err.is_finite() { b.err } else { 0.0 };
    // value + err may overflow to infinity near f64::MAX: the top saturates instead.
    let y1 = bars
        .iter()
        .filter(|b| b.value.is_finite())
        .map(|b| (b.value + err(b)).min(f64::MAX))
        .fold(0.0, f64::max);
    let y1 = axis_top(y1, 0.08);
    let mut out = String::new();
    header(&mut out, title);
    let n = bars.len().max(1) as f64;
    let (_, sy) = axes(&mut out, (0.0, 0.0), (0.0, y1), "", y_label);
    let pw = W - ML - MR;
    let slot = pw / n;
    for (i, b) in bars.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let v = if b.value.is_finite() { b.value.max(0.0) } else { 0.0 };
        let x = ML + slot * (i as f64 + 0.15);
        let w = slot * 0.7;
        let _ = write!(
            out,
            r#"<rect x="{x:.1}" y="{:.1}" width="{w:.1}" height="{:.1}" fill="{colour}"/>"#,
            sy(v),
            sy(0.0) - sy(v)
        );
        if err(b) > 0.0 {
            let cx = x + w / 2.0;
            let _ = write!(
                out,
                r##"<line x1="{cx:.1}" y1="{:.1}" x2="{cx:.1}" y2="{:.1}" stroke="#222"/>"##,
                sy((v + err(b)).min(y1)),
                sy((v - err(b)).max(0.0))
            );
        }
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="10">{}</text>"#,
            x + w / 2.0,
            H - MB + 16.0,
            esc(&b.label),
            x + w / 2.0,
            sy(v) - 4.0,
            fmt_tick(v)
        );
    }
    out.push_str("</svg>\n");
    out
}

/// Bars in groups: one group per label (e.g. a preset), one bar per series (e.g. ours and
/// published), series told apart by colour with a legend.
pub fn grouped_bar_chart(
    title: &str,
    y_label: &str,
    series: &[&str],
    groups: &[(String, Vec<f64>)],
) -> String {
    let y1 = groups
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let y1 = axis_top(y1, 0.08);
    let mut out = String::new();
    header(&mut out, title);
    let (_, sy) = axes(&mut out, (0.0, 0.0), (0.0, y1), "", y_label);
    let slot = (W - ML - MR) / groups.len().max(1) as f64;
    let bar = slot * 0.8 / series.len().max(1) as f64;
    for (g, (label, values)) in groups.iter().enumerate() {
        let x0 = ML + slot * (g as f64 + 0.1);
        for (k, v) in values.iter().enumerate() {
            let v = if v.is_finite() { v.max(0.0) } else { continue };
            let x = x0 + bar * k as f64;
            let _ = write!(
                out,
                r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"/><text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="9">{}</text>"#,
                sy(v),
                bar * 0.92,
                sy(0.0) - sy(v),
                PALETTE[k % PALETTE.len()],
                x + bar * 0.46,
                sy(v) - 3.0,
                fmt_tick(v)
            );
        }
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            x0 + slot * 0.4,
            H - MB + 16.0,
            esc(label)
        );
    }
    for (k, name) in series.iter().enumerate() {
        let ly = MT + 14.0 + 16.0 * k as f64;
        let _ = write!(
            out,
            r#"<rect x="{:.1}" y="{:.1}" width="14" height="10" fill="{}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            W - MR + 10.0,
            ly - 5.0,
            PALETTE[k % PALETTE.len()],
            W - MR + 30.0,
            ly + 4.0,
            esc(name)
        );
    }
    out.push_str("</svg>\n");
    out
}

/// What a dot of a [`pareto_chart`] stands for, which decides how it is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DotKind {
    /// A point of the grid, dominated: a small grey circle.
    Grid,
    /// A point on the Pareto front: a filled circle, joined to the rest of the front.
    Front,
}

/// One dot of a [`pareto_chart`].
#[derive(Clone, Debug)]
pub struct Dot {
    /// Memory held (x).
    pub x: f64,
    /// The objective (y).
    pub y: f64,
    /// Grid point or on the front.
    pub kind: DotKind,
    /// A label drawn beside the dot and a ring around it: the kernel default or a merged
    /// preset (`None`: a plain grid point).
    pub mark: Option<String>,
    /// The default (drawn as a diamond) rather than a preset (a square).
    pub is_default: bool,
}

/// A scatter plot of a sweep: every point as a dot, the Pareto front joined in x order, the
/// kernel default and the merged presets marked and labelled. Non-finite dots are left out.
pub fn pareto_chart(title: &str, x_label: &str, y_label: &str, dots: &[Dot]) -> String {
    let ok: Vec<&Dot> = dots.iter().filter(|d| d.x.is_finite() && d.y.is_finite()).collect();
    let span = |v: &mut dyn Iterator<Item = f64>| {
        let (lo, hi) = v.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| (l.min(x), h.max(x)));
        if !lo.is_finite() {
            return (0.0, 1.0);
        }
        let pad = if hi > lo { (hi - lo) * 0.08 } else { lo.abs().max(1.0) * 0.1 };
        ((lo - pad).max(if lo >= 0.0 { 0.0 } else { f64::MIN }), hi + pad)
    };
    let (x0, x1) = span(&mut ok.iter().map(|d| d.x));
    let (y0, y1) = span(&mut ok.iter().map(|d| d.y));
    let mut out = String::new();
    header(&mut out, title);
    let (sx, sy) = axes(&mut out, (x0, x1), (y0, y1), x_label, y_label);
    let mut front: Vec<&Dot> = ok.iter().copied().filter(|d| d.kind == DotKind::Front).collect();
    front.sort_by(|a, b| a.x.total_cmp(&b.x).then(a.y.total_cmp(&b.y)));
    if front.len() > 1 {
        let path: Vec<String> =
            front.iter().map(|d| format!("{:.1},{:.1}", sx(d.x), sy(d.y))).collect();
        let _ = write!(
            out,
            r#"<polyline fill="none" stroke="{}" stroke-width="1.6" points="{}"/>"#,
            PALETTE[1],
            path.join(" ")
        );
    }
    // Where labels are already drawn: a label that would overlap one (presets with the same
    // or nearly the same figures) moves down below it instead of printing over it.
    let mut labelled: Vec<(f64, f64)> = Vec::new();
    for d in &ok {
        let (px, py) = (sx(d.x), sy(d.y));
        let _ = match d.kind {
            DotKind::Grid => write!(
                out,
                r##"<circle cx="{px:.1}" cy="{py:.1}" r="3" fill="#999" fill-opacity="0.7"/>"##
            ),
            DotKind::Front => {
                write!(out, r#"<circle cx="{px:.1}" cy="{py:.1}" r="4" fill="{}"/>"#, PALETTE[1])
            }
        };
        let Some(label) = &d.mark else { continue };
        let colour = if d.is_default { PALETTE[0] } else { PALETTE[2] };
        let shape = if d.is_default {
            format!(
                r#"<polygon points="{px:.1},{:.1} {:.1},{py:.1} {px:.1},{:.1} {:.1},{py:.1}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
                py - 8.0,
                px + 8.0,
                py + 8.0,
                px - 8.0
            )
        } else {
            format!(
                r#"<rect x="{:.1}" y="{:.1}" width="12" height="12" fill="none" stroke="{colour}" stroke-width="1.6"/>"#,
                px - 6.0,
                py - 6.0
            )
        };
        let (lx, mut ly) = (px + 9.0, py - 6.0);
        while labelled.iter().any(|&(x, y)| (x - lx).abs() < 60.0 && (y - ly).abs() < 11.0) {
            ly += 11.0;
        }
        labelled.push((lx, ly));
        if ly > py - 6.0 {
            // Moved down: a thin leader back to its dot.
            let _ = write!(
                out,
                r#"<line x1="{px:.1}" y1="{py:.1}" x2="{:.1}" y2="{:.1}" stroke="{colour}" stroke-width="0.5"/>"#,
                lx - 1.0,
                ly - 3.0
            );
        }
        let _ = write!(
            out,
            r#"{shape}<text x="{lx:.1}" y="{ly:.1}" font-size="10" fill="{colour}">{}</text>"#,
            esc(label)
        );
    }
    let legend: [(&str, String); 4] = [
        ("grid point", r##"<circle cx="{X}" cy="{Y}" r="3" fill="#999"/>"##.to_owned()),
        ("Pareto front", format!(r#"<circle cx="{{X}}" cy="{{Y}}" r="4" fill="{}"/>"#, PALETTE[1])),
        (
            "kernel default",
            format!(
                r#"<rect x="{{X0}}" y="{{Y0}}" width="10" height="10" transform="rotate(45 {{X}} {{Y}})" fill="none" stroke="{}" stroke-width="2"/>"#,
                PALETTE[0]
            ),
        ),
        (
            "merged preset",
            format!(
                r#"<rect x="{{X0}}" y="{{Y0}}" width="10" height="10" fill="none" stroke="{}" stroke-width="1.6"/>"#,
                PALETTE[2]
            ),
        ),
    ];
    for (i, (name, shape)) in legend.iter().enumerate() {
        let (lx, ly) = (W - MR + 16.0, MT + 14.0 + 16.0 * i as f64);
        let shape = shape
            .replace("{X0}", &format!("{:.1}", lx - 5.0))
            .replace("{Y0}", &format!("{:.1}", ly - 5.0))
            .replace("{X}", &format!("{lx:.1}"))
            .replace("{Y}", &format!("{ly:.1}"));
        let _ = write!(
            out,
            r#"{shape}<text x="{:.1}" y="{:.1}">{}</text>"#,
            lx + 14.0,
            ly + 4.0,
            esc(name)
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_charts_are_svg_with_one_polyline_per_series() {
        let s = vec![
            Series { label: "a<b".into(), points: vec![(0.0, 1.0), (1.0, 2.0)], dashed: false },
            Series { label: "c".into(), points: vec![(0.0, 3.0), (2.0, 0.5)], dashed: true },
        ];
        let svg = line_chart("t & u", "x", "y", &s);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("a&lt;b") && svg.contains("t &amp; u"));
        assert!(svg.contains("stroke-dasharray"));
    }

    #[test]
    fn empty_and_degenerate_inputs_still_draw() {
        assert!(line_chart("t", "x", "y", &[]).contains("</svg>"));
        let flat = [Series { label: "z".into(), points: vec![(5.0, 0.0)], dashed: false }];
        assert!(line_chart("t", "x", "y", &flat).contains("<polyline"));
        let bars = [
            Bar { label: "a".into(), value: 2.0, err: 0.5 },
            Bar { label: "b".into(), value: f64::NAN, err: 0.0 },
        ];
        let svg = bar_chart("t", "y", &bars);
        assert_eq!(svg.matches("<rect").count(), 4, "background, frame, two bars");
    }

    #[test]
    fn grouped_bars_draw_a_bar_per_finite_value_and_a_legend() {
        let groups =
            vec![("a".to_string(), vec![100.0, 100.0]), ("b".into(), vec![90.0, f64::NAN])];
        let svg = grouped_bar_chart("t", "y", &["ours", "published"], &groups);
        // Background and frame, three bars, two legend swatches.
        assert_eq!(svg.matches("<rect").count(), 7);
        assert!(svg.contains("published"));
    }

    /// Values near `f64::MAX` made the axis infinite and the tick loop endless (the plot
    /// command hung, its memory growing); a step lost in rounding did the same. Now every
    /// axis has at most MAX_TICKS ticks and every chart is small.
    #[test]
    fn huge_values_and_offsets_draw_bounded_axes() {
        let huge = [Series {
            label: "m".into(),
            points: vec![(0.0, 1.0), (1.0, f64::MAX)],
            dashed: false,
        }];
        let offset = [Series {
            label: "o".into(),
            points: vec![(1e20, 1.0), (1e20 + 1.0, 2.0)],
            dashed: false,
        }];
        let bars = [Bar { label: "a".into(), value: f64::MAX, err: f64::MAX }];
        let groups = vec![("g".to_string(), vec![f64::MAX, 1.0])];
        for svg in [
            line_chart("t", "x", "y", &huge),
            line_chart("t", "x", "y", &offset),
            bar_chart("t", "y", &bars),
            grouped_bar_chart("t", "y", &["a", "b"], &groups),
        ] {
            assert!(svg.trim_end().ends_with("</svg>"));
            assert!(svg.matches("<line").count() <= 2 * MAX_TICKS + 8, "{}", svg.len());
            assert!(svg.len() < 64 << 10, "{} bytes", svg.len());
            assert!(!svg.contains("inf") && !svg.contains("NaN"), "{svg}");
        }
        assert_eq!(ticks(1e20, 1e20 + 1.0, 0.1).len(), 1);
        assert!(ticks(0.0, f64::MAX, nice_step(f64::MAX, 5.0)).len() <= MAX_TICKS);
        assert_eq!(ticks(0.0, 1.0, 0.0), vec![0.0, 1.0]);
        assert_eq!(fmt_tick(1e300), "1.00e300");
        assert_eq!(fmt_tick(1.05e6), "1.05M");
        assert_eq!(fmt_tick(2e6), "2M");
    }

    #[test]
    fn pareto_charts_join_the_front_and_label_the_marks() {
        let dot = |x, y, kind, mark: Option<&str>, is_default| Dot {
            x,
            y,
            kind,
            mark: mark.map(str::to_owned),
            is_default,
        };
        let dots = [
            dot(1.0, 10.0, DotKind::Front, Some("modern"), true),
            dot(2.0, 5.0, DotKind::Grid, None, false),
            dot(3.0, 20.0, DotKind::Front, Some("hpc-opt"), false),
            dot(f64::NAN, 1.0, DotKind::Grid, None, false),
        ];
        let svg = pareto_chart("t", "MiB", "ops/s", &dots);
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 1, "the front, joined once");
        // Three finite dots and the legend's two circles.
        assert_eq!(svg.matches("<circle").count(), 5);
        assert!(svg.contains(">modern<") && svg.contains(">hpc-opt<"));
        assert!(!svg.contains("NaN") && !svg.contains("{X"));
        // Two presets at one spot: the second name is drawn 11 px below the first; a third
        // 5 px off (nearly the same figures) goes below both.
        let same = [
            dot(1.0, 1.0, DotKind::Front, Some("a"), false),
            dot(1.0, 1.0, DotKind::Front, Some("b"), false),
            dot(1.0, 0.999, DotKind::Front, Some("c"), false),
            dot(0.0, 0.0, DotKind::Front, None, false),
        ];
        let svg = pareto_chart("t", "x", "y", &same);
        let y_of = |name: &str| {
            let at = svg.find(&format!(">{name}</text>")).unwrap();
            let tag = &svg[svg[..at].rfind("<text").unwrap()..at];
            let y = tag.split("y=\"").nth(1).unwrap().split('"').next().unwrap();
            y.parse::<f64>().unwrap()
        };
        assert_eq!(y_of("b") - y_of("a"), 11.0);
        assert!(y_of("c") - y_of("b") >= 11.0, "{} {}", y_of("b"), y_of("c"));
        assert!(pareto_chart("t", "x", "y", &[]).contains("</svg>"));
    }

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(10.0, 5.0), 2.0);
        assert_eq!(nice_step(0.9, 5.0), 0.2);
        assert_eq!(nice_step(7000.0, 8.0), 1000.0);
    }
}

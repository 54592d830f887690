//! Every experiment's samples, one row per case: each sample as a dot, the middle half as a
//! box, the median with its confidence interval. A median alone hides a bimodal case or a
//! tail of interrupted samples; this shows them. Each case is drawn against its own median,
//! so a 3 ns call and a 30 ms run show their spread at the same scale instead of a few
//! pixels each on an axis of many decades; the median itself is in the row's label.

use super::chart::{self, Axis, Fit, Header, Key, Unit, PALETTE};
use super::svg::{Anchor, Paint, Svg};
use super::Plot;
use crate::format::fmt_ns;
use oscost_model::{CaseResult, ExperimentResult};

/// Dots drawn per case at most; beyond it, evenly spaced quantiles of the samples stand for
/// them (a noise run keeps up to a million gaps).
const DOTS_MAX: usize = 300;

/// Row labels longer than this are cut (the tooltip keeps the whole id).
const LABEL_MAX: usize = 34;

const ROW_H: f64 = 22.0;

/// The row label of a case: its id without the experiment's name, cut to [`LABEL_MAX`].
pub(crate) fn row_label(experiment: &str, id: &str) -> String {
    let short = oscost_model::ids::within(experiment, id)
        .filter(|s| !s.is_empty())
        .unwrap_or(id);
    if short.chars().count() > LABEL_MAX {
        let cut: String = short.chars().take(LABEL_MAX - 1).collect();
        format!("{cut}…")
    } else {
        short.to_owned()
    }
}

/// Samples that can be drawn: finite ones.
fn samples(c: &CaseResult) -> Vec<f64> {
    c.raw_ns.iter().copied().filter(|v| v.is_finite()).collect()
}

/// The p-th percentile (0..100) of sorted values, interpolated.
fn pct(sorted: &[f64], p: f64) -> f64 {
    oscost_stats::percentile(sorted, p)
}

/// The figure of experiment `e`, if any case has samples.
pub fn plots(e: &ExperimentResult) -> Vec<Plot> {
    // A ratio needs a positive median.
    let rows: Vec<(&CaseResult, Vec<f64>)> = e
        .cases
        .iter()
        .filter(|c| c.median_ns > 0.0 && c.median_ns.is_finite())
        .map(|c| (c, samples(c)))
        .filter(|(_, s)| !s.is_empty())
        .collect();
    if rows.is_empty() {
        return Vec::new();
    }
    let all: Vec<f64> = rows
        .iter()
        .flat_map(|(c, s)| s.iter().chain(&c.ci95_ns).map(|v| v / c.median_ns))
        .chain([1.0])
        .collect();
    let axis = Axis::fit(
        "each sample against its case's median",
        Unit::Ratio,
        &all,
        Fit::Auto { zero: false },
    );
    let thinned = rows.iter().any(|(_, s)| s.len() > DOTS_MAX);
    let mut notes = vec![String::from(
        "One row per case, in the unit of the case (a call, a hop, a run), drawn against the \
         case's own median (its value in the label; the dashed line). Dots: the samples, each \
         the mean of a batch of operations, spread up and down to be seen apart; box: the \
         middle half (25th to 75th percentile); whisker: smallest to largest; black bar: the \
         median; orange bar: its 95 % confidence interval.",
    )];
    if thinned {
        notes.push(format!(
            "Cases with more than {DOTS_MAX} samples show {DOTS_MAX} dots at evenly spaced \
             quantiles; the box, whiskers and median use every sample."
        ));
    }
    let header = Header::new(&format!("{}: every sample of every case", e.name), &notes);
    let labels: Vec<String> = rows
        .iter()
        .map(|(c, _)| format!("{} {}", row_label(&e.name, &c.id), fmt_ns(c.median_ns)))
        .collect();
    let (area, top_axis) = chart::row_area(&header, &labels, ROW_H);
    let orange = PALETTE[4];
    let keys = [
        Key::Swatch("middle half".into(), "#cfe2f3"),
        Key::Swatch("95 % CI of the median".into(), orange),
        Key::Level("median".into(), "#000000", ""),
        Key::Series("samples".into(), chart::Style::nth(0).points(2.0)),
    ];
    let legend_y = area.y + area.h + 46.0;
    let height = legend_y + chart::legend_height(&keys, area.w) + 8.0;
    let mut s = Svg::new(chart::WIDTH, height);
    header.draw(&mut s);
    chart::row_stripes(&mut s, area, rows.len(), ROW_H);
    chart::x_axis(&mut s, area, &axis, top_axis);
    s.line(area.x, area.y, area.x, area.y + area.h, "#000000", 1.0);
    let one = area.px(&axis, 1.0);
    s.dashed_line((one, area.y), (one, area.y + area.h), "#000000", 1.0, "4 4");
    let blue = PALETTE[0];
    for (i, ((c, raw), label)) in rows.iter().zip(&labels).enumerate() {
        let mid = area.y + (i as f64 + 0.5) * ROW_H;
        let mut sorted = raw.clone();
        sorted.sort_by(f64::total_cmp);
        let x = |v: f64| area.px(&axis, v / c.median_ns);
        let tip = format!(
            "{}: median {} (95 % CI {} to {}), {} samples",
            c.id,
            fmt_ns(c.median_ns),
            fmt_ns(c.ci95_ns[0]),
            fmt_ns(c.ci95_ns[1]),
            raw.len()
        );
        s.text(area.x - 8.0, mid + 4.0, 11.0, Anchor::End, 0.0, label);
        let (lo, hi) = (sorted[0], sorted[sorted.len() - 1]);
        s.line(x(lo), mid, x(hi), mid, "#777777", 1.0);
        s.line(x(lo), mid - 4.0, x(lo), mid + 4.0, "#777777", 1.0);
        s.line(x(hi), mid - 4.0, x(hi), mid + 4.0, "#777777", 1.0);
        let (q1, q3) = (pct(&sorted, 25.0), pct(&sorted, 75.0));
        s.painted_rect(
            (x(q1), mid - 7.0),
            ((x(q3) - x(q1)).max(1.0), 14.0),
            Paint {
                fill: "#cfe2f3",
                stroke: blue,
                stroke_width: 1.0,
                fill_opacity: 1.0,
            },
            Some(&tip),
        );
        let dots: Vec<f64> = if raw.len() > DOTS_MAX {
            (0..DOTS_MAX)
                .map(|k| sorted[k * (sorted.len() - 1) / (DOTS_MAX - 1)])
                .collect()
        } else {
            raw.clone()
        };
        for (k, v) in dots.iter().enumerate() {
            // A fixed spread (the golden-ratio sequence), so the figure is the same every time.
            let jitter = ((k as f64 * 0.618_034) % 1.0 - 0.5) * 12.0;
            s.circle(
                (x(*v), mid + jitter),
                1.7,
                Paint {
                    fill: blue,
                    stroke: "none",
                    stroke_width: 0.0,
                    fill_opacity: 0.55,
                },
                None,
            );
        }
        let (c0, c1) = (x(c.ci95_ns[0]), x(c.ci95_ns[1]));
        s.painted_rect(
            (c0, mid - 2.5),
            ((c1 - c0).max(1.5), 5.0),
            Paint {
                fill: orange,
                stroke: "#000000",
                stroke_width: 0.4,
                fill_opacity: 1.0,
            },
            Some(&tip),
        );
        let m = x(c.median_ns);
        s.line(m, mid - 9.0, m, mid + 9.0, "#000000", 2.2);
    }
    chart::legend(&mut s, area.x, legend_y, area.w, &keys);
    vec![Plot {
        name: format!("{}.distributions", e.name),
        svg: s.finish(),
    }]
}

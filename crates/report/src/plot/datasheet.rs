//! The datasheet as one chart: every headline time a run measured on one log axis, a row per
//! cost, each run of the page a dot with its 95 % interval, so a system call and a fork sit
//! on one scale and two runs' costs side by side.

use super::chart::{colour, Axis, Fit, Unit};
use super::svg::{Anchor, Paint, Svg};
use super::Plot;
use crate::datasheet::{Datasheet, Value};
use crate::format;

/// Width of the figure, px.
const WIDTH: f64 = 760.0;
/// Room for the cost's name left of the axis, px.
const LEFT: f64 = 180.0;
/// Room right of the axis, px.
const RIGHT: f64 = 24.0;
/// Height of a row, px.
const ROW: f64 = 22.0;
/// Room above the rows (the title) and below them (the axis and the legend), px.
const TOP: f64 = 34.0;
const BOTTOM: f64 = 58.0;

/// The chart of `sheets` (label, sheet), one dot per run in each row; `None` when no run
/// measured a headline time.
pub fn plot(sheets: &[(&str, &Datasheet)]) -> Option<Plot> {
    // The rows: every time-valued headline any run measured, in the sheet's order.
    let mut rows: Vec<&'static str> = Vec::new();
    let mut values = Vec::new();
    for (_, d) in sheets {
        for l in &d.lines {
            if let Value::Ns { ns, ci95 } = l.value {
                if ns > 0.0 && !rows.contains(&l.label) {
                    rows.push(l.label);
                }
                values.extend([ns, ci95[0], ci95[1]].into_iter().filter(|v| *v > 0.0));
            }
        }
    }
    if rows.is_empty() {
        return None;
    }
    let axis = Axis::fit("time", Unit::Ns, &values, Fit::Auto { zero: true });
    // The legend: each run by its file's name (a path is long), in as many lines as it takes.
    let mut keys: Vec<(String, Paint, f64, usize)> = Vec::new();
    let (mut kx, mut line) = (LEFT, 0usize);
    let mut key = |text: String, paint: Paint<'static>| {
        let w = 24.0 + 6.5 * text.chars().count() as f64;
        if kx + w > WIDTH - RIGHT && kx > LEFT {
            (kx, line) = (LEFT, line + 1);
        }
        keys.push((text, paint, kx, line));
        kx += w;
    };
    for (k, (name, _)) in sheets.iter().enumerate() {
        let short = name.rsplit('/').next().unwrap_or(name);
        key(short.to_owned(), Paint::fill(colour(k)));
    }
    if sheets.iter().any(|(_, d)| d.lines.iter().any(|l| l.failed)) {
        key(
            "hollow: a check failed".into(),
            Paint::outline("#555555", 1.5),
        );
    }
    let legend_lines = keys.last().map_or(0, |k| k.3 + 1);
    let height =
        TOP + rows.len() as f64 * ROW + BOTTOM + 16.0 * legend_lines.saturating_sub(1) as f64;
    let mut s = Svg::new(WIDTH, height);
    s.set_title("What the OS costs a program: each headline time on one axis");
    s.text(
        8.0,
        18.0,
        13.0,
        Anchor::Start,
        0.0,
        "What the OS costs a program here: median and 95 % interval",
    );
    let (x0, x1) = (LEFT, WIDTH - RIGHT);
    let px = |v: f64| x0 + axis.frac(v) * (x1 - x0);
    let bottom = TOP + rows.len() as f64 * ROW;
    super::chart::rows_axis(&mut s, &axis, [x0, x1], [TOP, bottom]);
    let spread = if sheets.len() > 1 { ROW * 0.5 } else { 0.0 };
    for (i, row) in rows.iter().enumerate() {
        let y = TOP + (i as f64 + 0.5) * ROW;
        s.text(LEFT - 8.0, y + 4.0, 12.0, Anchor::End, 0.0, row);
        for (k, (name, d)) in sheets.iter().enumerate() {
            let Some(l) = d.lines.iter().find(|l| l.label == *row) else {
                continue;
            };
            let Value::Ns { ns, ci95 } = l.value else {
                continue;
            };
            let dy = if sheets.len() > 1 {
                -spread / 2.0 + spread * k as f64 / (sheets.len() - 1) as f64
            } else {
                0.0
            };
            let c = colour(k);
            let name = name.rsplit('/').next().unwrap_or(name);
            let tip = format!(
                "{name}: {row} {} (95 % CI {} to {}), {}",
                format::time(ns),
                format::time(ci95[0]),
                format::time(ci95[1]),
                l.source
            );
            if ci95[0] > 0.0 && ci95[1] > ci95[0] {
                s.line(px(ci95[0]), y + dy, px(ci95[1]), y + dy, c, 1.5);
            }
            // Hollow: a check of the case behind it failed.
            let paint = if l.failed {
                Paint::outline(c, 1.5)
            } else {
                Paint::fill(c)
            };
            s.circle((px(ns), y + dy), 4.0, paint, Some(&tip));
        }
    }
    let legend_top = TOP + rows.len() as f64 * ROW + 48.0;
    for (text, paint, x, line) in &keys {
        let ly = legend_top + 16.0 * *line as f64;
        s.circle((*x, ly - 4.0), 4.0, *paint, None);
        s.text(x + 8.0, ly, 11.0, Anchor::Start, 0.0, text);
    }
    Some(Plot {
        name: "datasheet".into(),
        svg: s.finish(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datasheet::Line;

    fn sheet(lines: Vec<(&'static str, f64, bool)>) -> Datasheet {
        Datasheet {
            machine: "Example CPU".into(),
            lines: lines
                .into_iter()
                .map(|(label, ns, failed)| Line {
                    label,
                    value: Value::Ns {
                        ns,
                        ci95: [ns * 0.9, ns * 1.1],
                    },
                    source: format!("{label}.case"),
                    failed,
                    held: None,
                    whose: None,
                })
                .collect(),
            failed: Vec::new(),
            failed_held: Vec::new(),
            noisy: 0,
            figures: 0,
        }
    }

    #[test]
    fn every_headline_time_is_a_row_and_every_run_a_dot() {
        let a = sheet(vec![
            ("system call (getpid)", 150.0, false),
            ("process, fork + wait", 150_000.0, true),
        ]);
        let b = sheet(vec![("system call (getpid)", 160.0, false)]);
        let p = plot(&[("A", &a), ("B", &b)]).expect("a chart");
        assert_eq!(p.name, "datasheet");
        assert!(
            p.svg.contains("log scale"),
            "a thousandfold span is drawn on a log axis"
        );
        assert!(p.svg.contains(">system call (getpid)</text>"));
        assert!(p.svg.contains(">process, fork + wait</text>"));
        // Three dots and the legend's two, plus the hollow key.
        assert_eq!(p.svg.matches("<circle").count(), 3 + 2 + 1, "{}", p.svg);
        assert!(p.svg.contains("hollow: a check failed"));
        // A run named by a long path is keyed by its file's name, on a line of its own.
        let long = "/root/.local/share/oscost/runs/2026-11-27-730a1d3c-0000-0000-0000.json";
        let wide = plot(&[(long, &a), (long, &b)]).unwrap();
        assert!(wide
            .svg
            .contains(">2026-11-27-730a1d3c-0000-0000-0000.json</text>"));
        assert!(!wide.svg.contains(">/root/"));
        let height = |svg: &str| {
            svg.split("height=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse::<f64>()
                .unwrap()
        };
        assert!(height(&wide.svg) > height(&p.svg));
        // The same input gives the same bytes.
        assert_eq!(plot(&[("A", &a), ("B", &b)]).unwrap(), p);
    }

    #[test]
    fn a_run_without_a_headline_time_has_no_chart() {
        let mut noise_only = sheet(vec![]);
        noise_only.lines.push(Line {
            label: "CPU lost to noise",
            value: Value::Pct {
                pct: 1.5,
                ci95: [f64::NAN; 2],
            },
            source: "noise.cpu1".into(),
            failed: false,
            held: None,
            whose: None,
        });
        assert_eq!(plot(&[("A", &noise_only)]), None);
    }
}

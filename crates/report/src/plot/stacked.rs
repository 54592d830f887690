//! A horizontal stacked bar per row: what a whole is made of (the noise sources of a CPU's
//! lost time, the stages of a context switch), each part one colour, the same part the same
//! colour in every row.

use super::chart::{self, Axis, Fit, Header, Key, Unit};
use super::svg::{Anchor, Paint, Svg};

const ROW_H: f64 = 30.0;

/// One bar: its label and its parts, in drawing order.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Left of the bar.
    pub label: String,
    /// (part, value) from the left.
    pub parts: Vec<(String, f64)>,
    /// A mark across the bar (the whole measured another way), if any.
    pub mark: Option<f64>,
}

/// The figure: `rows` of stacked bars on an axis of `unit`, titled and noted, a legend of the
/// parts under it (a part named in several rows keeps one colour).
pub fn figure(title: &str, notes: &[String], axis: &str, unit: Unit, rows: &[Row]) -> String {
    let header = Header::new(title, notes);
    let labels: Vec<String> = rows.iter().map(|r| r.label.clone()).collect();
    let (area, top_axis) = chart::row_area(&header, &labels, ROW_H);
    let mut names: Vec<&str> = Vec::new();
    for r in rows {
        for (p, _) in &r.parts {
            if !names.contains(&p.as_str()) {
                names.push(p);
            }
        }
    }
    let totals: Vec<f64> = rows
        .iter()
        .map(|r| {
            let sum: f64 = r.parts.iter().map(|p| p.1.max(0.0)).sum();
            sum.max(r.mark.unwrap_or(0.0)) * 1.05
        })
        .chain([0.0])
        .collect();
    let axis = Axis::fit(axis, unit, &totals, Fit::Linear { zero: true });
    let keys: Vec<Key> = names
        .iter()
        .enumerate()
        .map(|(i, n)| Key::Swatch((*n).to_owned(), chart::colour(i)))
        .chain(
            rows.iter()
                .any(|r| r.mark.is_some())
                .then(|| Key::Level("measured".into(), "#000000", "4 2")),
        )
        .collect();
    let legend_y = area.y + area.h + 46.0;
    let height = legend_y + chart::legend_height(&keys, area.w) + 8.0;
    let mut s = Svg::new(chart::WIDTH, height);
    header.draw(&mut s);
    chart::row_stripes(&mut s, area, rows.len(), ROW_H);
    chart::x_axis(&mut s, area, &axis, top_axis);
    s.line(area.x, area.y, area.x, area.y + area.h, "#000000", 1.0);
    for (i, r) in rows.iter().enumerate() {
        let mid = area.y + (i as f64 + 0.5) * ROW_H;
        s.text(area.x - 8.0, mid + 4.0, 11.0, Anchor::End, 0.0, &r.label);
        let mut at = 0.0;
        for (p, v) in &r.parts {
            let v = v.max(0.0);
            let (x0, x1) = (area.px(&axis, at), area.px(&axis, at + v));
            let k = names.iter().position(|n| n == p).unwrap_or(0);
            let tip = format!("{}: {p} {}", r.label, value(unit, v));
            s.painted_rect(
                (x0, mid - 9.0),
                (x1 - x0, 18.0),
                Paint {
                    fill: chart::colour(k),
                    stroke: "#ffffff",
                    stroke_width: 0.5,
                    fill_opacity: 1.0,
                },
                Some(&tip),
            );
            at += v;
        }
        if let Some(m) = r.mark {
            let x = area.px(&axis, m);
            s.dashed_line((x, mid - 13.0), (x, mid + 13.0), "#000000", 1.4, "4 2");
        }
    }
    chart::legend(&mut s, area.x, legend_y, area.w, &keys);
    s.finish()
}

fn value(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Ns => chart::time(v),
        Unit::Percent => format!("{} %", chart::sig(v)),
        _ => chart::sig(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_keep_their_colour_across_rows() {
        let rows = [
            Row {
                label: "cpu 0".into(),
                parts: vec![("timer".into(), 1.0), ("task".into(), 2.0)],
                mark: None,
            },
            Row {
                label: "cpu 1".into(),
                parts: vec![("task".into(), 0.5)],
                mark: Some(0.6),
            },
        ];
        let svg = figure("t", &[], "share", Unit::Percent, &rows);
        assert!(svg.contains("<svg"));
        assert!(svg.contains("cpu 0: timer 1 %"));
        assert!(svg.contains("cpu 1: task 0.5 %"));
        // "task" is the second part named, so both of its bars share the second colour.
        assert_eq!(svg.matches(chart::colour(1)).count(), 3, "{svg}");
        assert_eq!(
            figure("t", &[], "x", Unit::Ns, &[]),
            figure("t", &[], "x", Unit::Ns, &[])
        );
    }
}

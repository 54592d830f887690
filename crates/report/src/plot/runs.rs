//! Several runs side by side: per experiment, each case the runs share as its median and 95 %
//! CI in every run, relative to the first run's median: how far each run moved and how sure
//! each figure is; the verdicts are `compare`'s, in the table beside it.

use super::chart::{self, Axis, Fit, Header, Key, Style, Unit};
use super::distribution::row_label;
use super::svg::{Anchor, Svg};
use super::Plot;
use crate::format::fmt_ns;
use oscost_model::{CaseResult, ResultDoc};

/// One figure per experiment of the first run that every run measured a case of.
pub fn comparison_plots(docs: &[(String, &ResultDoc)]) -> Vec<Plot> {
    let Some(((_, first), _)) = docs.split_first().filter(|(_, rest)| !rest.is_empty()) else {
        return Vec::new();
    };
    first
        .experiments
        .iter()
        .filter_map(|e| {
            let rows = common_cases(docs, &e.name);
            (!rows.is_empty()).then(|| figure(docs, &e.name, &rows))
        })
        .collect()
}

/// The cases of experiment `name` that every run has, in the first run's order, each as its
/// result in every run; only those whose first median is positive (a ratio needs it).
pub fn common_cases<'a>(docs: &[(String, &'a ResultDoc)], name: &str) -> Vec<Vec<&'a CaseResult>> {
    let experiments: Option<Vec<_>> = docs
        .iter()
        .map(|(_, d)| d.experiments.iter().find(|e| e.name == name))
        .collect();
    let Some(experiments) = experiments else {
        return Vec::new();
    };
    experiments[0]
        .cases
        .iter()
        .filter(|c| c.median_ns > 0.0 && c.median_ns.is_finite())
        .filter_map(|c| {
            experiments
                .iter()
                .map(|e| e.cases.iter().find(|o| o.id == c.id))
                .collect::<Option<Vec<_>>>()
        })
        .collect()
}

fn figure(docs: &[(String, &ResultDoc)], name: &str, rows: &[Vec<&CaseResult>]) -> Plot {
    let runs = docs.len();
    let row_h = (runs as f64 * 8.0 + 10.0).max(22.0);
    let ratio = |base: &CaseResult, v: f64| v / base.median_ns;
    let values: Vec<f64> = rows
        .iter()
        .flat_map(|r| {
            r.iter()
                .flat_map(|c| [c.median_ns, c.ci95_ns[0], c.ci95_ns[1]].map(|v| ratio(r[0], v)))
        })
        .chain([1.0])
        .collect();
    let axis = Axis::fit(
        &format!("change against {}", docs[0].0),
        Unit::Ratio,
        &values,
        Fit::Auto { zero: false },
    );
    let header = Header::new(
        &format!("{name}: each case in every run, against the first"),
        &[
            "Dot: the case's median in that run; whisker: its 95 % confidence interval; both \
           relative to the first run's median (the dashed line). Whether a change is beyond \
           the noise between runs is compare's verdict, in the table."
                .to_owned(),
        ],
    );
    let keys: Vec<Key> = docs
        .iter()
        .enumerate()
        .map(|(k, (label, _))| Key::Series(label.clone(), Style::nth(k).points(4.0)))
        .collect();
    let labels: Vec<String> = rows.iter().map(|r| row_label(name, &r[0].id)).collect();
    let (area, top_axis) = chart::row_area(&header, &labels, row_h);
    let legend_y = area.y + area.h + 46.0;
    let height = legend_y + chart::legend_height(&keys, area.w) + 8.0;
    let mut s = Svg::new(chart::WIDTH, height);
    header.draw(&mut s);
    chart::row_stripes(&mut s, area, rows.len(), row_h);
    chart::x_axis(&mut s, area, &axis, top_axis);
    s.line(area.x, area.y, area.x, area.y + area.h, "#000000", 1.0);
    let one = area.px(&axis, 1.0);
    s.dashed_line((one, area.y), (one, area.y + area.h), "#000000", 1.2, "5 4");
    for (i, (r, label)) in rows.iter().zip(&labels).enumerate() {
        let mid = area.y + (i as f64 + 0.5) * row_h;
        s.text(area.x - 8.0, mid + 4.0, 11.0, Anchor::End, 0.0, label);
        for (k, c) in r.iter().enumerate() {
            let y = mid + (k as f64 - (runs as f64 - 1.0) / 2.0) * 8.0;
            let st = Style::nth(k);
            let (lo, hi) = (
                area.px(&axis, ratio(r[0], c.ci95_ns[0])),
                area.px(&axis, ratio(r[0], c.ci95_ns[1])),
            );
            s.line(lo, y, hi, y, st.colour, 1.4);
            s.line(lo, y - 3.0, lo, y + 3.0, st.colour, 1.4);
            s.line(hi, y - 3.0, hi, y + 3.0, st.colour, 1.4);
            let tip = format!(
                "{}, {}: median {} (95 % CI {} to {}), {} against {}",
                docs[k].0,
                c.id,
                fmt_ns(c.median_ns),
                fmt_ns(c.ci95_ns[0]),
                fmt_ns(c.ci95_ns[1]),
                chart::change((ratio(r[0], c.median_ns) - 1.0) * 100.0),
                docs[0].0
            );
            if let Some(m) = st.marker {
                chart::marker(
                    &mut s,
                    m,
                    (area.px(&axis, ratio(r[0], c.median_ns)), y),
                    3.6,
                    st.colour,
                    false,
                    Some(&tip),
                );
            }
        }
    }
    chart::legend(&mut s, area.x, legend_y, area.w, &keys);
    Plot {
        name: format!("{name}.runs"),
        svg: s.finish(),
    }
}

//! `switch`'s headline: the cost of one context switch per primitive, between threads and
//! between processes, each with its 95 % interval, on one linear axis from zero, so the
//! primitives read against each other at a glance.

use super::chart::{self, Axis, Fit, Header, Key, Style, Unit};
use super::svg::{Anchor, Svg};
use super::Plot;
use crate::format::fmt_ns;
use oscost_model::ids::switch::{Derived, Id};
use oscost_model::{DerivedResult, ExperimentResult};

/// The forms drawn, each a dot per primitive.
const FORMS: [&str; 2] = ["threads", "processes"];

/// The primitive and the form of a same-CPU switch cost: `switch.pipe.threads.same.switch_cost`
/// → (`pipe`, `threads`).
fn parts(d: &DerivedResult) -> Option<(&str, &str)> {
    match Id::parse(&d.id)? {
        Id::Derived(c, Derived::SwitchCost) if c.placement == "same" => {
            FORMS.contains(&c.kind).then_some((c.via, c.kind))
        }
        _ => None,
    }
}

/// The figure, when the run derived a switch cost for at least one primitive.
pub fn plots(e: &ExperimentResult) -> Vec<Plot> {
    let costs: Vec<(&str, &str, &DerivedResult)> = e
        .derived
        .iter()
        .filter_map(|d| parts(d).map(|(p, f)| (p, f, d)))
        .filter(|(_, _, d)| d.estimate_ns.is_finite())
        .collect();
    let mut primitives: Vec<&str> = Vec::new();
    for (p, _, _) in &costs {
        if !primitives.contains(p) {
            primitives.push(p);
        }
    }
    if primitives.is_empty() {
        return Vec::new();
    }
    let values: Vec<f64> = costs
        .iter()
        .flat_map(|(_, _, d)| [d.estimate_ns, d.ci95_ns[0], d.ci95_ns[1]])
        .filter(|v| v.is_finite())
        .chain([0.0])
        .collect();
    let axis = Axis::fit(
        "time per switch",
        Unit::Ns,
        &values,
        Fit::Linear { zero: true },
    );
    let header = Header::new(
        &format!("{}: the cost of one context switch, per primitive", e.name),
        &[
            "One-way time of the ping-pong less the primitive's own cost without a switch \
           (its control case). Dot: the estimate; whisker: its 95 % confidence interval; \
           hollow: a term's mechanism check failed."
                .to_owned(),
        ],
    );
    let row_h = 24.0;
    let labels: Vec<String> = primitives.iter().map(|p| p.to_string()).collect();
    let (area, top_axis) = chart::row_area(&header, &labels, row_h);
    let keys: Vec<Key> = FORMS
        .iter()
        .enumerate()
        .map(|(k, f)| Key::Series(f.to_string(), Style::nth(k).points(4.0)))
        .collect();
    let legend_y = area.y + area.h + 46.0;
    let height = legend_y + chart::legend_height(&keys, area.w) + 8.0;
    let mut s = Svg::new(chart::WIDTH, height);
    header.draw(&mut s);
    chart::row_stripes(&mut s, area, primitives.len(), row_h);
    chart::x_axis(&mut s, area, &axis, top_axis);
    s.line(area.x, area.y, area.x, area.y + area.h, "#000000", 1.0);
    for (i, p) in primitives.iter().enumerate() {
        let mid = area.y + (i as f64 + 0.5) * row_h;
        s.text(area.x - 8.0, mid + 4.0, 11.0, Anchor::End, 0.0, p);
        for (k, form) in FORMS.iter().enumerate() {
            let Some((_, _, d)) = costs.iter().find(|(q, f, _)| q == p && f == form) else {
                continue;
            };
            let y = mid + (k as f64 - 0.5) * 8.0;
            let st = Style::nth(k);
            let [lo, hi] = d.ci95_ns.map(|v| area.px(&axis, v.max(0.0)));
            s.line(lo, y, hi, y, st.colour, 1.4);
            s.line(lo, y - 3.0, lo, y + 3.0, st.colour, 1.4);
            s.line(hi, y - 3.0, hi, y + 3.0, st.colour, 1.4);
            let tip = format!(
                "{}: {} (95 % CI {} to {})",
                d.id,
                fmt_ns(d.estimate_ns),
                fmt_ns(d.ci95_ns[0]),
                fmt_ns(d.ci95_ns[1])
            );
            if let Some(m) = st.marker {
                let x = area.px(&axis, d.estimate_ns.max(0.0));
                let hollow = d.flagged.is_some();
                chart::marker(&mut s, m, (x, y), 3.6, st.colour, hollow, Some(&tip));
            }
        }
    }
    chart::legend(&mut s, area.x, legend_y, area.w, &keys);
    vec![Plot {
        name: format!("{}.switch-cost", e.name),
        svg: s.finish(),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn derived(id: &str, ns: f64) -> DerivedResult {
        DerivedResult {
            id: id.into(),
            description: String::new(),
            terms: Vec::new(),
            estimate_ns: ns,
            ci95_ns: [ns * 0.9, ns * 1.1],
            estimate_cycles: ns * 2.5,
            flagged: None,
            warnings: Vec::new(),
        }
    }

    fn experiment() -> ExperimentResult {
        ExperimentResult {
            name: "switch".into(),
            params: Default::default(),
            cases: Vec::new(),
            unavailable: Vec::new(),
            derived: Vec::new(),
            warnings: Vec::new(),
            notes: Vec::new(),
            load: None,
            controls: None,
        }
    }

    #[test]
    fn one_row_per_primitive_with_a_dot_per_form() {
        let mut e = experiment();
        e.derived = vec![
            derived("switch.pipe.threads.same.one_way", 3000.0),
            derived("switch.pipe.threads.same.switch_cost", 2300.0),
            derived("switch.pipe.processes.same.switch_cost", 2400.0),
            derived("switch.futex.threads.same.switch_cost", 2100.0),
        ];
        let p = plots(&e);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].name, "switch.switch-cost");
        let svg = &p[0].svg;
        assert!(
            svg.contains(">pipe</text>") && svg.contains(">futex</text>"),
            "{svg}"
        );
        assert_eq!(svg.matches("switch_cost: ").count(), 3, "{svg}");
        assert!(!svg.contains("one_way"));
        roxmltree::Document::parse(svg).expect("valid SVG");
    }

    #[test]
    fn no_switch_cost_no_figure() {
        assert!(plots(&experiment()).is_empty());
    }
}

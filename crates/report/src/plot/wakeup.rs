//! `wakeup`: how late each wake-up came, one panel per case: the lateness in power-of-two bins
//! on a log axis (it spans microseconds to milliseconds), its p50, p99 and max in the title.

use super::chart::{self, Axis, Bar, Fit, Header, Key, Panel, Unit};
use super::Plot;
use crate::format::{fmt_ns, grouped};
use crate::views::wakeup::{is_split, parts};
use oscost_model::case::Series;
use oscost_model::{CaseResult, ExperimentResult};

fn column(s: &Series, name: &str) -> Option<usize> {
    s.columns.iter().position(|c| c == name)
}

/// Histogram bins: (from ns, to ns, count).
type Bins = Vec<(f64, f64, f64)>;

/// The case's `histogram` series as (from, to, count).
fn bins(c: &CaseResult) -> Bins {
    let Some(h) = c.series.iter().find(|s| s.name == "histogram") else {
        return Vec::new();
    };
    let (Some(f), Some(t), Some(n)) =
        (column(h, "from_ns"), column(h, "to_ns"), column(h, "count"))
    else {
        return Vec::new();
    };
    h.points
        .iter()
        .filter_map(|p| Some((*p.get(f)?, *p.get(t)?, *p.get(n)?)))
        .filter(|(a, b, n)| *a >= 0.0 && b > a && n.is_finite())
        .collect()
}

/// The lateness figure: a histogram per case, all on the same lateness axis.
pub fn plots(e: &ExperimentResult) -> Vec<Plot> {
    let cases: Vec<(&CaseResult, Bins)> = e
        .cases
        .iter()
        .map(|c| (c, bins(c)))
        .filter(|(_, b)| !b.is_empty())
        .collect();
    if cases.is_empty() {
        return Vec::new();
    }
    let edges: Vec<f64> = cases
        .iter()
        .flat_map(|(_, b)| b.iter().flat_map(|b| [b.0.max(1.0), b.1]))
        .collect();
    let panels: Vec<Panel> = cases
        .iter()
        .map(|(c, bins)| {
            let total: f64 = bins.iter().map(|b| b.2).sum();
            let counts: Vec<f64> = bins.iter().map(|b| b.2 * 1.12).collect();
            let mut x = Axis::fit("lateness", Unit::Ns, &edges, Fit::Auto { zero: false });
            if x.ticks.len() > 7 {
                x.ticks = x.ticks.into_iter().step_by(2).collect();
            }
            let at = |k: &str| c.counters.get(k).map_or_else(|| "-".into(), |v| fmt_ns(*v));
            Panel {
                title: format!(
                    "{}{}: p50 {}, p99 {}, max {}",
                    c.id,
                    if c.checks_passed {
                        ""
                    } else {
                        " (a check failed)"
                    },
                    at("lateness_p50_ns"),
                    at("lateness_p99_ns"),
                    at("lateness_max_ns")
                ),
                x,
                y: Axis::fit("wake-ups", Unit::Count, &counts, Fit::Linear { zero: true }),
                lines: Vec::new(),
                refs: Vec::new(),
                bars: bins
                    .iter()
                    .map(|&(from, to, n)| Bar {
                        x0: from.max(1.0),
                        x1: to,
                        y: n,
                        label: if n > 0.0 { grouped(n) } else { String::new() },
                        tip: format!(
                            "{} to {}: {} wake-ups ({:.1} %)",
                            chart::time(from),
                            chart::time(to),
                            grouped(n),
                            if total > 0.0 { n / total * 100.0 } else { 0.0 }
                        ),
                    })
                    .collect(),
            }
        })
        .collect();
    let mut notes = vec![
        "How long after its deadline the sleeping thread ran again, each wake-up in its \
         power-of-two bin of lateness (log axis, shared by every panel)."
            .to_owned(),
    ];
    let missing: Vec<&str> = e.unavailable.iter().map(|u| u.id.as_str()).collect();
    if !missing.is_empty() {
        notes.push(format!("Not measured: {}.", missing.join(", ")));
    }
    let header = Header::new(&format!("{}: how late each wake-up came", e.name), &notes);
    let keys = vec![Key::Swatch("wake-ups in the bin".into(), chart::PALETTE[0])];
    let mut plots = vec![Plot {
        name: format!("{}.lateness", e.name),
        svg: chart::grid(&header, &panels, 2, 220.0, &keys),
    }];
    plots.extend(split(e));
    plots
}

/// The kernel's split as stacked bars: one bar per traced case, each part's median, the
/// measured median marked across it.
fn split(e: &ExperimentResult) -> Option<Plot> {
    let rows: Vec<super::stacked::Row> = e
        .cases
        .iter()
        .filter(|c| is_split(c) && c.counters.contains_key("measured_median_ns"))
        .map(|c| super::stacked::Row {
            label: c.id.clone(),
            parts: parts(c)
                .into_iter()
                .filter_map(|(k, l)| Some((l, *c.counters.get(&format!("part.{k}.median_ns"))?)))
                .collect(),
            mark: c.counters.get("measured_median_ns").copied(),
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let svg = super::stacked::figure(
        &format!(
            "{}: a wake-up's lateness taken apart by the kernel's events",
            e.name
        ),
        &[
            "One bar per traced case (a second run, apart from the timed one): the median of \
           each part of a wake-up's lateness by the kernel's timestamps, from the deadline to \
           the thread's clock read. Dashed: the median lateness the thread measured on the \
           same wake-ups (medians of parts need not add up exactly)."
                .to_owned(),
        ],
        "lateness per wake-up",
        Unit::Ns,
        &rows,
    );
    Some(Plot {
        name: format!("{}.split", e.name),
        svg,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_panel_per_case_with_a_histogram() {
        let mut c: CaseResult = crate::views::testkit::case("wakeup.fifo.1ms", "wake-up", 2e4);
        c.series.push(Series {
            name: "histogram".into(),
            columns: vec!["from_ns".into(), "to_ns".into(), "count".into()],
            points: vec![vec![8192.0, 16384.0, 3.0], vec![16384.0, 32768.0, 40.0]],
        });
        c.counters.insert("lateness_p50_ns".into(), 20_000.0);
        let mut e: ExperimentResult = serde_json::from_value(serde_json::json!({
            "name": "wakeup", "params": {}, "cases": [], "unavailable": [], "derived": [],
            "warnings": [], "load": null
        }))
        .unwrap();
        assert!(plots(&e).is_empty());
        e.cases.push(c);
        let p = plots(&e);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].name, "wakeup.lateness");
        assert_eq!(p.len(), 1, "no traced case, no split figure");
        assert!(p[0].svg.contains("wakeup.fifo.1ms"));
        assert!(p[0].svg.contains("40 wake-ups"));
    }

    #[test]
    fn a_traced_case_gets_a_stacked_bar_of_its_parts() {
        let mut k = crate::views::wakeup::tests::split_case();
        k.counters.insert("measured_median_ns".into(), 16_000.0);
        let e: ExperimentResult = serde_json::from_value(serde_json::json!({
            "name": "wakeup", "params": {}, "cases": [], "unavailable": [], "derived": [],
            "warnings": [], "notes": []
        }))
        .unwrap();
        let e = ExperimentResult {
            cases: vec![k],
            ..e
        };
        let p = split(&e).unwrap();
        assert_eq!(p.name, "wakeup.split");
        for l in [
            "wakeup.fifo.1ms.kernel",
            "to the switch",
            "deadline to expiry",
        ] {
            assert!(p.svg.contains(l), "{l} missing");
        }
    }
}

//! `fault` and `shootdown`: what a page costs. The fault figure sets each kind of fault side
//! by side per 4 KiB of memory it maps (a log scale: a page read from the device costs a
//! hundred times a page of a cached file); the shootdown figure draws each invalidation
//! against the number of other CPUs running a thread of the process.

use super::chart::{self, Axis, Fit, Header, Line, Panel, Style, Unit};
use super::{marks, Plot};
use oscost_model::ids::fault;
use oscost_model::{CaseResult, ExperimentResult};

/// 4 KiB pages in one 2 MiB huge page: the huge-page fault is drawn per 4 KiB it maps.
const HUGE_PAGES_4K: f64 = 512.0;

/// The fault figure: one marker per kind, its time per 4 KiB page.
pub fn fault_plots(e: &ExperimentResult) -> Vec<Plot> {
    let kinds: Vec<(&CaseResult, &str)> = e
        .cases
        .iter()
        .filter_map(|c| Some((c, c.params.get("kind")?.as_str()?)))
        .collect();
    if kinds.len() < 2 {
        return Vec::new();
    }
    let mut failed = false;
    let lines: Vec<Line> = kinds
        .iter()
        .enumerate()
        .map(|(i, (c, kind))| {
            failed |= !c.checks_passed;
            let scale = if *kind == fault::THP {
                HUGE_PAGES_4K
            } else {
                1.0
            };
            Line {
                label: (*kind).to_owned(),
                style: Style::nth(i),
                points: vec![marks::case_point(c, (i + 1) as f64, scale)],
            }
        })
        .collect();
    let ys = marks::values(&lines);
    let xs: Vec<f64> = (0..=kinds.len() + 1).map(|i| i as f64).collect();
    let mut x = Axis::fit("kind of fault", Unit::Plain, &xs, Fit::Auto { zero: true });
    x.ticks = kinds
        .iter()
        .enumerate()
        .map(|(i, (_, k))| ((i + 1) as f64, (*k).to_owned()))
        .collect();
    let keys = marks::keys(&lines, failed);
    let mut notes = vec![
        "Time per 4 KiB page of the first touch, the loop's own cost subtracted (thp: its 2 MiB \
         fault over the 512 pages it maps). Whiskers: 95 % confidence intervals of the median."
            .to_owned(),
    ];
    let missing: Vec<&str> = e.unavailable.iter().map(|u| u.id.as_str()).collect();
    if !missing.is_empty() {
        notes.push(format!("Not measured: {}.", missing.join(", ")));
    }
    let header = Header::new(
        &format!("{}: what a page fault costs, by kind", e.name),
        &notes,
    );
    let panel = Panel {
        title: "time per 4 KiB page (median)".into(),
        x,
        y: Axis::fit("time per page", Unit::Ns, &ys, Fit::Auto { zero: true }),
        lines,
        refs: Vec::new(),
        bars: Vec::new(),
    };
    vec![Plot {
        name: format!("{}.by-kind", e.name),
        svg: chart::grid(&header, &[panel], 1, 280.0, &keys),
    }]
}

/// The shootdown figure: each op and mode against the number of other CPUs, the no-thread
/// case the first point of every line of its op.
pub fn shootdown_plots(e: &ExperimentResult) -> Vec<Plot> {
    let cases: Vec<(&CaseResult, &str, f64, &str)> = e
        .cases
        .iter()
        .filter_map(|c| {
            let op = c.params.get("op")?.as_str()?;
            let n = c.params.get("other_cpus")?.as_f64()?;
            let mode = c
                .params
                .get("others")
                .and_then(|m| m.as_str())
                .unwrap_or("");
            Some((c, op, n, mode))
        })
        .collect();
    let mut counts: Vec<f64> = cases.iter().map(|c| c.2).collect();
    counts.sort_by(f64::total_cmp);
    counts.dedup();
    if counts.len() < 2 {
        return Vec::new();
    }
    let mut series: Vec<(&str, &str)> = Vec::new();
    for c in &cases {
        if !c.3.is_empty() && !series.contains(&(c.1, c.3)) {
            series.push((c.1, c.3));
        }
    }
    let mut failed = false;
    let lines: Vec<Line> = series
        .iter()
        .enumerate()
        .map(|(i, (op, mode))| {
            let mut of: Vec<&(&CaseResult, &str, f64, &str)> = cases
                .iter()
                .filter(|c| c.1 == *op && (c.3 == *mode || c.2 == 0.0))
                .collect();
            of.sort_by(|a, b| a.2.total_cmp(&b.2));
            Line {
                label: format!("{op}, others {mode}"),
                style: Style::nth(i),
                points: of
                    .iter()
                    .map(|(c, _, n, _)| {
                        failed |= !c.checks_passed;
                        marks::case_point(c, *n, 1.0)
                    })
                    .collect(),
            }
        })
        .collect();
    let ys = marks::values(&lines);
    let keys = marks::keys(&lines, failed);
    let header = Header::new(
        &format!(
            "{}: invalidating a page against the CPUs running the process",
            e.name
        ),
        &[
            "Each operation on one page written just before; at 0 the process has no other \
           thread. Whiskers: 95 % confidence intervals of the median."
                .to_owned(),
        ],
    );
    let mut x = Axis::fit(
        "other CPUs running a thread of the process",
        Unit::Plain,
        &counts,
        Fit::Auto { zero: true },
    );
    x.ticks = counts.iter().map(|&n| (n, format!("{n}"))).collect();
    let panel = Panel {
        title: "time per operation (median)".into(),
        x,
        y: Axis::fit(
            "time per operation",
            Unit::Ns,
            &ys,
            Fit::Auto { zero: true },
        ),
        lines,
        refs: Vec::new(),
        bars: Vec::new(),
    };
    vec![Plot {
        name: format!("{}.by-cpus", e.name),
        svg: chart::grid(&header, &[panel], 1, 280.0, &keys),
    }]
}

//! `noise`, one figure per CPU: how long the busy loop's interruptions were (a histogram in
//! power-of-two bins, since they span microseconds to milliseconds), and when each came, those
//! at the dominant period apart from the rest.

use super::chart::{self, Axis, Bar, Fit, Header, Key, Line, Panel, Point, Reference, Style, Unit};
use super::{stacked, Plot};
use crate::format::grouped;
use oscost_model::case::Series;
use oscost_model::{CaseResult, ExperimentResult};
use oscost_stats::periodic::log2_histogram;

/// Points drawn over time at most; beyond it, the longest gap of each of as many slices of
/// the run stands for the slice.
const POINTS_MAX: usize = 1500;

fn column(s: &Series, name: &str) -> Option<usize> {
    s.columns.iter().position(|c| c == name)
}

/// The bins: the case's own `histogram` series, else power-of-two bins of its samples.
fn bins(c: &CaseResult) -> Vec<(f64, f64, f64)> {
    if let Some(h) = c.series.iter().find(|s| s.name == "histogram") {
        if let (Some(f), Some(t), Some(n)) =
            (column(h, "from_ns"), column(h, "to_ns"), column(h, "count"))
        {
            return h
                .points
                .iter()
                .filter_map(|p| Some((*p.get(f)?, *p.get(t)?, *p.get(n)?)))
                .filter(|(a, b, n)| *a >= 0.0 && b > a && n.is_finite())
                .collect();
        }
    }
    log2_histogram(&c.raw_ns)
        .into_iter()
        .map(|b| (b.from, b.to, b.count as f64))
        .collect()
}

/// (at ms, length ns, at the period) of every gap, thinned to [`POINTS_MAX`].
fn gaps(c: &CaseResult) -> (Vec<(f64, f64, bool)>, bool) {
    let Some(s) = c.series.iter().find(|s| s.name == "timeline") else {
        return (Vec::new(), false);
    };
    let (Some(t), Some(l)) = (column(s, "at_ms"), column(s, "length_ns")) else {
        return (Vec::new(), false);
    };
    let p = column(s, "periodic");
    let all: Vec<(f64, f64, bool)> = s
        .points
        .iter()
        .filter_map(|row| {
            let (at, len) = (*row.get(t)?, *row.get(l)?);
            let periodic = p.and_then(|p| row.get(p)).is_some_and(|v| *v > 0.5);
            (at.is_finite() && len.is_finite() && len > 0.0).then_some((at, len, periodic))
        })
        .collect();
    if all.len() <= POINTS_MAX {
        return (all, false);
    }
    let (t0, t1) = all
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), g| {
            (a.min(g.0), b.max(g.0))
        });
    let slots = POINTS_MAX / 2;
    let mut longest: Vec<Option<(f64, f64, bool)>> = vec![None; slots];
    for g in all {
        let k = (((g.0 - t0) / (t1 - t0).max(1e-9)) * slots as f64) as usize;
        let slot = &mut longest[k.min(slots - 1)];
        match slot {
            Some(o) if o.1 >= g.1 => {}
            _ => *slot = Some(g),
        }
    }
    (longest.into_iter().flatten().collect(), true)
}

/// One figure per case, and the traced CPUs' lost time by source as stacked bars.
pub fn plots(e: &ExperimentResult) -> Vec<Plot> {
    let mut v: Vec<Plot> = e.cases.iter().filter_map(|c| figure(e, c)).collect();
    v.extend(sources_figure(e));
    v
}

/// Each traced CPU's lost share of the CPU, stacked by the source the kernel's events name.
fn sources_figure(e: &ExperimentResult) -> Option<Plot> {
    let rows: Vec<stacked::Row> = e
        .cases
        .iter()
        .filter(|c| c.params.get("kernel_view").and_then(|v| v.as_bool()) == Some(true))
        .map(|c| stacked::Row {
            label: format!(
                "CPU {}",
                c.params.get("cpu").and_then(|v| v.as_u64()).unwrap_or(0)
            ),
            parts: crate::views::noise::sources(c)
                .into_iter()
                .filter_map(|(k, label)| {
                    Some((label, *c.counters.get(&format!("source.{k}.cpu_lost_pct"))?))
                })
                .collect(),
            mark: None,
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let svg = stacked::figure(
        &format!(
            "{}: where a busy loop's time went, by the kernel's events",
            e.name
        ),
        &[
            "One bar per CPU (a second spin, traced): the share of the CPU the loop lost, \
           split by what the kernel's tracepoints show ran in each gap (the local timer, an \
           interrupt by name, a softirq by kind, another task by name); gaps \
           no event explains are outside the kernel's view (a hypervisor, an SMI)."
                .to_owned(),
        ],
        "share of the CPU lost",
        Unit::Percent,
        &rows,
    );
    Some(Plot {
        name: format!("{}.kernel", e.name),
        svg,
    })
}

fn figure(e: &ExperimentResult, c: &CaseResult) -> Option<Plot> {
    let bins = bins(c);
    if bins.is_empty() {
        return None;
    }
    let total: f64 = bins.iter().map(|b| b.2).sum();
    let edges: Vec<f64> = bins.iter().flat_map(|b| [b.0.max(1.0), b.1]).collect();
    let counts: Vec<f64> = bins.iter().map(|b| b.2 * 1.12).collect();
    let mut hist_x = Axis::fit(
        "length of the gap",
        Unit::Ns,
        &edges,
        Fit::Auto { zero: false },
    );
    if hist_x.ticks.len() > 9 {
        // Every other label, so they do not run into each other.
        hist_x.ticks = hist_x.ticks.into_iter().step_by(2).collect();
    }
    let hist = Panel {
        title: "how long: gaps per power-of-two bin".into(),
        x: hist_x,
        y: Axis::fit("gaps", Unit::Count, &counts, Fit::Linear { zero: true }),
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
                    "{} to {}: {} gaps ({:.1} %)",
                    chart::time(from),
                    chart::time(to),
                    grouped(n),
                    if total > 0.0 { n / total * 100.0 } else { 0.0 }
                ),
            })
            .collect(),
    };
    let mut panels = vec![hist];
    let mut keys = vec![Key::Swatch("gaps in the bin".into(), chart::PALETTE[0])];
    let (points, thinned) = gaps(c);
    let threshold = c
        .params
        .get("threshold_ns")
        .and_then(|v| v.as_f64())
        .or_else(|| e.params.get("threshold_ns").and_then(|v| v.as_f64()));
    if !points.is_empty() {
        let series = |periodic: bool, i: usize, label: &str| Line {
            label: label.into(),
            style: Style::nth(i).points(if periodic { 3.0 } else { 2.4 }),
            points: points
                .iter()
                .filter(|g| g.2 == periodic)
                .map(|&(at, len, _)| Point {
                    x: at * 1e6,
                    y: len,
                    ci: None,
                    hollow: false,
                    tip: format!("at {at:.3} ms: {}", chart::time(len)),
                })
                .collect(),
        };
        let lines: Vec<Line> = [
            series(false, 0, "other gaps"),
            series(true, 1, "gaps at the dominant period"),
        ]
        .into_iter()
        .filter(|l| !l.points.is_empty())
        .collect();
        let ts: Vec<f64> = points.iter().map(|g| g.0 * 1e6).collect();
        let mut ls: Vec<f64> = points.iter().map(|g| g.1).collect();
        ls.extend(threshold);
        let refs: Vec<Reference> = threshold
            .map(|t| Reference {
                label: format!("threshold: {}", chart::time(t)),
                y: t,
                band: None,
                colour: "#666666",
                dash: "4 3",
            })
            .into_iter()
            .collect();
        keys.extend(lines.iter().map(|l| Key::Series(l.label.clone(), l.style)));
        keys.extend(
            refs.iter()
                .map(|r| Key::Level(r.label.clone(), r.colour, r.dash)),
        );
        panels.push(Panel {
            title: "when: each gap over the run".into(),
            x: Axis::fit(
                "time since the start",
                Unit::Ns,
                &ts,
                Fit::Linear { zero: true },
            ),
            y: Axis::fit(
                "length of the gap",
                Unit::Ns,
                &ls,
                Fit::Auto { zero: false },
            ),
            lines,
            refs,
            bars: Vec::new(),
        });
    }
    let get = |k: &str| c.counters.get(k).copied();
    let mut notes = Vec::new();
    if let (Some(n), Some(rate), Some(lost)) = (get("gaps"), get("gaps_per_s"), get("cpu_lost_pct"))
    {
        notes.push(format!(
            "{} gaps, {rate:.1} per second; {lost:.3} % of the CPU lost to them.",
            grouped(n)
        ));
    }
    if let Some(p) = get("period_ns") {
        notes.push(format!(
            "Dominant period among their start times: {}.",
            chart::time(p)
        ));
    }
    if thinned {
        notes.push(format!(
            "Over time: the longest gap of each of {} equal slices of the run.",
            POINTS_MAX / 2
        ));
    }
    let header = Header::new(&format!("{}: interruptions of a busy loop", c.id), &notes);
    Some(Plot {
        name: format!("{}.gaps", c.id),
        svg: chart::grid(&header, &panels, 1, 200.0, &keys),
    })
}

//! `tick`: what one timer event costs the interrupted work, in cycles, against the period of
//! the events, one line per event source, beside the slope fitted over all of a source's runs.
//! A cost per event that grows as the period shrinks is the cache refilled after each one.

use super::chart::{self, Axis, Fit, Header, Key, Line, Panel, Point, Reference, Style, Unit};
use super::Plot;
use crate::format::grouped;
use oscost_model::ExperimentResult;
use serde_json::Value;

/// The figure of cost against period, and the traced runs' stacked bars.
pub fn plots(e: &ExperimentResult) -> Vec<Plot> {
    let mut v = period_plots(e);
    v.extend(kernel_plot(e));
    v
}

/// A stacked bar per traced source: the kernel's time per event by part and the rest the work
/// lost outside it, the lost time marked across.
fn kernel_plot(e: &ExperimentResult) -> Option<Plot> {
    let rows: Vec<super::stacked::Row> = e
        .cases
        .iter()
        .filter(|c| c.params.get("kernel_view").and_then(Value::as_bool) == Some(true))
        .map(|c| {
            let get = |k: &str| c.counters.get(k).copied().unwrap_or(0.0);
            let mut parts: Vec<(String, f64)> = crate::views::tick::KERNEL_PARTS
                .iter()
                .map(|(k, l)| (l.to_string(), get(&format!("{k}_ns_per_event"))))
                .collect();
            parts.push((
                "outside the kernel's handlers".into(),
                get("outside_ns_per_event").max(0.0),
            ));
            super::stacked::Row {
                label: format!(
                    "{} {}",
                    c.params
                        .get("traced_source")
                        .and_then(Value::as_str)
                        .unwrap_or("?"),
                    c.params
                        .get("period_ns")
                        .and_then(Value::as_f64)
                        .map_or_else(String::new, crate::format::time)
                ),
                parts,
                mark: c.counters.get("lost_ns_per_event").copied(),
            }
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let svg = super::stacked::figure(
        &format!(
            "{}: one timer event taken apart, by the kernel's events",
            e.name
        ),
        &[
            "One bar per source (a traced run of the work): the kernel's time per event on the \
           working CPU by part, then what the work lost beyond it (cache and TLB refill, a \
           virtual machine's exit, a signal handler's own time); the mark: the time lost per \
           event."
                .to_owned(),
        ],
        "time per event",
        Unit::Ns,
        &rows,
    );
    Some(Plot {
        name: format!("{}.kernel", e.name),
        svg,
    })
}

/// The figure, when any case has a period and a cost per event.
fn period_plots(e: &ExperimentResult) -> Vec<Plot> {
    let mut sources: Vec<&str> = Vec::new();
    for c in &e.cases {
        if let Some(s) = c.params.get("source").and_then(Value::as_str) {
            if !sources.contains(&s) {
                sources.push(s);
            }
        }
    }
    let mut lines = Vec::new();
    let mut refs = Vec::new();
    let mut keys = Vec::new();
    let mut failed = false;
    for (i, source) in sources.iter().enumerate() {
        let mut points: Vec<Point> = e
            .cases
            .iter()
            .filter(|c| c.params.get("source").and_then(Value::as_str) == Some(source))
            .filter_map(|c| {
                let period = c.params.get("period_ns").and_then(Value::as_f64)?;
                let per = c.counters.get("cycles_per_event").copied()?;
                failed |= !c.checks_passed;
                Some(Point {
                    x: period,
                    y: per,
                    ci: None,
                    hollow: !c.checks_passed,
                    tip: format!(
                        "{}: {} cycles per event, every {}",
                        c.id,
                        grouped(per),
                        chart::time(period)
                    ),
                })
            })
            .collect();
        if points.is_empty() {
            continue;
        }
        points.sort_by(|a, b| a.x.total_cmp(&b.x));
        let style = Style::nth(i);
        keys.push(Key::Series(format!("{source}: at each period"), style));
        lines.push(Line {
            label: source.to_string(),
            style,
            points,
        });
        let fit = e.params.get("slope").and_then(|s| s.get(*source));
        let slope = fit
            .and_then(|f| f.get("cycles_per_event"))
            .and_then(Value::as_f64);
        if let (Some(f), Some(slope)) = (fit, slope) {
            let ci = f
                .get("ci95_cycles")
                .and_then(|v| Some([v.get(0)?.as_f64()?, v.get(1)?.as_f64()?]));
            let label = format!("{source}: slope over all runs, {} cycles", grouped(slope));
            keys.push(Key::Level(label.clone(), style.colour, "6 3"));
            refs.push(Reference {
                label,
                y: slope,
                band: ci,
                colour: style.colour,
                dash: "6 3",
            });
        }
    }
    if lines.is_empty() {
        return Vec::new();
    }
    if failed {
        keys.push(Key::Hollow("hollow: a check failed".into()));
    }
    let periods: Vec<f64> = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.x))
        .collect();
    let ys: Vec<f64> = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.y))
        .chain(
            refs.iter()
                .flat_map(|r| [r.y].into_iter().chain(r.band.into_iter().flatten())),
        )
        .collect();
    let mut notes = vec![
        "Cycles per event: the run's extra cycles over the undisturbed run, \
                          divided by the events counted. Dashed: the slope of cycles against \
                          events over all of a source's runs, its band the 95 % confidence \
                          interval."
            .to_owned(),
    ];
    if let Some(n) = e.params.get("natural_tick").filter(|v| !v.is_null()) {
        let get = |k: &str| n.get(k).and_then(Value::as_f64);
        if let (Some(p), Some(c)) = (get("period_ns"), get("median_cycles")) {
            notes.push(format!(
                "The kernel's own tick, every {}, takes {} cycles from a spinning loop on the \
                 same CPU.",
                chart::time(p),
                grouped(c)
            ));
        }
    }
    let header = Header::new(
        &format!("{}: cost of one timer event against its period", e.name),
        &notes,
    );
    let panel = Panel {
        title: "cycles per event".into(),
        x: Axis::fit("period between events", Unit::Ns, &periods, Fit::AtData),
        y: Axis::fit(
            "cycles per event",
            Unit::Count,
            &ys,
            Fit::Auto { zero: true },
        ),
        lines,
        refs,
        bars: Vec::new(),
    };
    vec![Plot {
        name: format!("{}.per-event", e.name),
        svg: chart::grid(&header, &[panel], 1, 260.0, &keys),
    }]
}

//! `uring` and `poll`: I/O's OS bill. The uring figure draws each io_uring operation against
//! its batch per `io_uring_enter`, the system call it replaces a dashed level beside it; the
//! poll figure draws each readiness call against the descriptors it watches.

use super::chart::{self, Axis, Fit, Header, Line, Panel, Reference, Style, Unit};
use super::{marks, Plot};
use oscost_model::{CaseResult, ExperimentResult};

/// Colours and dashes of the system-call levels, in order.
const LEVELS: [(&str, &str); 2] = [("#000000", "5 4"), ("#666666", "2 3")];

fn param<'a>(c: &'a CaseResult, key: &str) -> Option<&'a serde_json::Value> {
    c.params.get(key)
}

/// The uring figure: per-operation time against the batch, one line per op, the plain system
/// call of each read a level across.
pub fn uring_plots(e: &ExperimentResult) -> Vec<Plot> {
    let ring: Vec<(&CaseResult, &str, f64)> = e
        .cases
        .iter()
        .filter(|c| param(c, "interface").and_then(|v| v.as_str()) == Some("io_uring"))
        .filter_map(|c| Some((c, param(c, "op")?.as_str()?, param(c, "batch")?.as_f64()?)))
        .collect();
    if ring.len() < 2 {
        return Vec::new();
    }
    let mut ops: Vec<&str> = Vec::new();
    for r in &ring {
        if !ops.contains(&r.1) {
            ops.push(r.1);
        }
    }
    let mut failed = false;
    let lines: Vec<Line> = ops
        .iter()
        .enumerate()
        .map(|(i, op)| {
            let mut of: Vec<&(&CaseResult, &str, f64)> =
                ring.iter().filter(|r| r.1 == *op).collect();
            of.sort_by(|a, b| a.2.total_cmp(&b.2));
            Line {
                label: format!("io_uring {op}"),
                style: Style::nth(i),
                points: of
                    .iter()
                    .map(|(c, _, b)| {
                        failed |= !c.checks_passed;
                        marks::case_point(c, *b, 1.0)
                    })
                    .collect(),
            }
        })
        .collect();
    let refs: Vec<Reference> = e
        .cases
        .iter()
        .filter(|c| param(c, "interface").and_then(|v| v.as_str()) == Some("system call"))
        .zip(LEVELS.iter().cycle())
        .map(|(c, &(colour, dash))| Reference {
            label: c.id.trim_start_matches("uring.").to_owned(),
            y: c.median_ns,
            band: Some(c.ci95_ns),
            colour,
            dash,
        })
        .collect();
    let mut ys = marks::values(&lines);
    ys.extend(
        refs.iter()
            .flat_map(|r| [r.y, r.band.map_or(r.y, |b| b[0])]),
    );
    let mut batches: Vec<f64> = ring.iter().map(|r| r.2).collect();
    batches.sort_by(f64::total_cmp);
    batches.dedup();
    let mut keys = marks::keys(&lines, failed);
    keys.extend(
        refs.iter()
            .map(|r| chart::Key::Level(r.label.clone(), r.colour, r.dash)),
    );
    let mut x = Axis::fit(
        "operations per io_uring_enter",
        Unit::Plain,
        &batches,
        Fit::Auto { zero: false },
    );
    x.ticks = batches.iter().map(|&b| (b, format!("{b}"))).collect();
    let header = Header::new(
        &format!("{}: io_uring beside the system call it replaces", e.name),
        &[
            "Time per operation, B operations submitted and reaped per io_uring_enter; dashed: \
           the plain system call, one per operation. Whiskers and bands: 95 % confidence \
           intervals of the median."
                .to_owned(),
        ],
    );
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
        refs,
        bars: Vec::new(),
    };
    vec![Plot {
        name: format!("{}.by-batch", e.name),
        svg: chart::grid(&header, &[panel], 1, 280.0, &keys),
    }]
}

/// The poll figure: time per call against the descriptors watched, one line per call.
pub fn poll_plots(e: &ExperimentResult) -> Vec<Plot> {
    let cases: Vec<(&CaseResult, &str, f64)> = e
        .cases
        .iter()
        .filter(|c| param(c, "call").and_then(|v| v.as_str()) != Some("epoll-ctl"))
        .filter_map(|c| Some((c, param(c, "call")?.as_str()?, param(c, "fds")?.as_f64()?)))
        .collect();
    let mut sizes: Vec<f64> = cases.iter().map(|c| c.2).collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    if sizes.len() < 2 {
        return Vec::new();
    }
    let mut calls: Vec<&str> = Vec::new();
    for c in &cases {
        if !calls.contains(&c.1) {
            calls.push(c.1);
        }
    }
    let mut failed = false;
    let lines: Vec<Line> = calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let mut of: Vec<&(&CaseResult, &str, f64)> =
                cases.iter().filter(|c| c.1 == *call).collect();
            of.sort_by(|a, b| a.2.total_cmp(&b.2));
            Line {
                label: (*call).to_owned(),
                style: Style::nth(i),
                points: of
                    .iter()
                    .map(|(c, _, n)| {
                        failed |= !c.checks_passed;
                        marks::case_point(c, *n, 1.0)
                    })
                    .collect(),
            }
        })
        .collect();
    let ys = marks::values(&lines);
    let keys = marks::keys(&lines, failed);
    let mut notes = vec![
        "Each call with a zero timeout, exactly one socket readable. Whiskers: \
                          95 % confidence intervals of the median."
            .to_owned(),
    ];
    let slopes: Vec<String> = e
        .derived
        .iter()
        .filter(|d| d.id.ends_with(".per_fd"))
        .map(|d| format!("{} {:.2} ns", d.id, d.estimate_ns))
        .collect();
    if !slopes.is_empty() {
        notes.push(format!(
            "Fitted cost per descriptor: {}.",
            slopes.join(", ")
        ));
    }
    let header = Header::new(
        &format!(
            "{}: readiness calls against the descriptors watched",
            e.name
        ),
        &notes,
    );
    let mut x = Axis::fit(
        "sockets watched",
        Unit::Plain,
        &sizes,
        Fit::Auto { zero: false },
    );
    x.ticks = sizes.iter().map(|&n| (n, format!("{n}"))).collect();
    let panel = Panel {
        title: "time per call (median)".into(),
        x,
        y: Axis::fit("time per call", Unit::Ns, &ys, Fit::Auto { zero: true }),
        lines,
        refs: Vec::new(),
        bars: Vec::new(),
    };
    vec![Plot {
        name: format!("{}.by-fds", e.name),
        svg: chart::grid(&header, &[panel], 1, 280.0, &keys),
    }]
}

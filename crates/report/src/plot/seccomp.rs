//! `seccomp`: a bar per filter set, the time it adds to one system call over the bare call
//! (the derived `…over_none` figures), a panel per call timed, so the same filters on a short
//! and a longer call sit side by side.

use super::chart::{self, Axis, Bar, Fit, Header, Key, Line, Panel, Point, Style, Unit};
use super::Plot;
use crate::format;
use oscost_model::ids::seccomp;
use oscost_model::ExperimentResult;

/// The filter sets with a figure over the bare call, in the experiment's order.
const SETS: [&str; 4] = ["allow-1", "args-1", "args-8", "profile"];

/// Half the width of a bar, in set positions.
const HALF_BAR: f64 = 0.35;

/// The seccomp figure: one panel per call, one bar per filter set.
pub fn plots(e: &ExperimentResult) -> Vec<Plot> {
    let mut panels = Vec::new();
    let mut flagged = false;
    for call in ["getpid", "fstat"] {
        let found: Vec<(f64, &str, &oscost_model::DerivedResult)> = SETS
            .iter()
            .enumerate()
            .filter_map(|(i, set)| {
                let id = format!("{}.{set}.{call}.over_none", e.name);
                let d = e.derived.iter().find(|d| d.id == id)?;
                Some(((i + 1) as f64, *set, d))
            })
            .collect();
        if found.is_empty() {
            continue;
        }
        let mut ys = vec![0.0];
        let bars: Vec<Bar> = found
            .iter()
            .map(|&(x, set, d)| {
                ys.push(d.estimate_ns);
                ys.extend(d.ci95_ns);
                Bar {
                    x0: x - HALF_BAR,
                    x1: x + HALF_BAR,
                    y: d.estimate_ns.max(0.0),
                    label: format::time(d.estimate_ns),
                    tip: format!(
                        "{set}: +{} per {call} (95 % CI {} to {})",
                        format::time(d.estimate_ns),
                        format::time(d.ci95_ns[0]),
                        format::time(d.ci95_ns[1])
                    ),
                }
            })
            .collect();
        let whiskers = Line {
            label: "95 % confidence interval".into(),
            style: Style::nth(6).points(1.5),
            points: found
                .iter()
                .map(|&(x, set, d)| {
                    flagged |= d.flagged.is_some();
                    Point {
                        x,
                        y: d.estimate_ns,
                        ci: Some(d.ci95_ns),
                        hollow: d.flagged.is_some(),
                        tip: format!("{set}: {}", d.id),
                    }
                })
                .collect(),
        };
        let mut x = Axis::fit(
            "filter set",
            Unit::Plain,
            &[0.0, (SETS.len() + 1) as f64],
            Fit::Linear { zero: true },
        );
        x.ticks = found
            .iter()
            .map(|&(x, set, _)| (x, set.to_owned()))
            .collect();
        panels.push(Panel {
            title: format!("added to one {call} (median over the bare call)"),
            x,
            y: Axis::fit("time added", Unit::Ns, &ys, Fit::Linear { zero: true }),
            lines: vec![whiskers],
            refs: Vec::new(),
            bars,
        });
    }
    if panels.is_empty() {
        return Vec::new();
    }
    let mut notes = vec![
        "Each bar: a filter set's median time per call less the bare call's (no filter), both \
         timed in fresh processes in interleaved rounds. allow-1 and profile (for these two \
         calls) depend on the call number only, so the kernel's action cache can answer them; \
         args-1 and args-8 read an argument and run on every call."
            .to_owned(),
    ];
    if e.cases
        .iter()
        .any(|c| matches!(seccomp::Id::parse(&c.id), Some(seccomp::Id::Notify(_))))
    {
        notes.push(
            "The supervisor's round trip (notify) is left to the tables: microseconds, not \
             nanoseconds."
                .to_owned(),
        );
    }
    if let Some(n) = e.params.get("inherited_filters").and_then(|v| v.as_u64()) {
        if n > 0 {
            notes.push(format!(
                "oscost itself ran under {n} seccomp filter(s): every bar is on top of them."
            ));
        }
    }
    let mut keys = vec![
        Key::Swatch("time added over no filter".into(), chart::PALETTE[0]),
        Key::Series("95 % confidence interval".into(), Style::nth(6).points(1.5)),
    ];
    if flagged {
        keys.push(Key::Hollow("hollow: a check failed".into()));
    }
    let header = Header::new(
        &format!("{}: what a filter set adds to each system call", e.name),
        &notes,
    );
    let cols = panels.len();
    vec![Plot {
        name: format!("{}.over-none", e.name),
        svg: chart::grid(&header, &panels, cols, 280.0, &keys),
    }]
}

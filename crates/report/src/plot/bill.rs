//! A bill's two figures: where the program's time went (one stacked bar of its task time by
//! part, the residual included) and its costliest operations on one log axis, each with its
//! measured time and, where the datasheet priced it, its price.

use super::chart::{colour, Axis, Fit, Unit};
use super::stacked::{self, Row};
use super::svg::{Anchor, Paint, Svg};
use super::Plot;
use crate::format;
use oscost_model::bill::Bill;

/// Operations shown in the second figure at most.
const TOP_OPERATIONS: usize = 12;
const WIDTH: f64 = 760.0;
const LEFT: f64 = 180.0;
const RIGHT: f64 = 24.0;
const ROW: f64 = 22.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 58.0;

/// The bill's figures: the split of its time, and its top operations when it has any.
pub fn plots(bill: &Bill) -> Vec<Plot> {
    let mut v = vec![split(bill)];
    v.extend(top(bill));
    v
}

/// One bar: the task time by the bill's top-level parts, the residual last (only when it is
/// time left over: a negative residual is said in the table, it has no width).
fn row(label: &str, bill: &Bill) -> Row {
    let mut parts: Vec<(String, f64)> = bill
        .parts
        .iter()
        .filter(|p| p.level == 0)
        .map(|p| (p.name.clone(), p.time_ns))
        .collect();
    if bill.residual_ns > 0.0 {
        parts.push(("not explained".into(), bill.residual_ns));
    }
    Row {
        label: label.to_owned(),
        parts,
        mark: Some(bill.task_time_ns as f64),
    }
}

fn split(bill: &Bill) -> Plot {
    let notes = vec![format!(
        "the parts explain {:.1} % of the task time (the tasks' lifetimes summed)",
        bill.explained_pct
    )];
    Plot {
        name: "bill.split".into(),
        svg: stacked::figure(
            "Where the program's time went",
            &notes,
            "time",
            Unit::Ns,
            &[row("task time", bill)],
        ),
    }
}

/// Several bills' bars one under another, each labelled: the same program in several runs
/// (or several programs), where its time went in each. `None` for fewer than two bills.
pub fn side_by_side(bills: &[(&str, &Bill)]) -> Option<Plot> {
    if bills.len() < 2 {
        return None;
    }
    let rows: Vec<Row> = bills.iter().map(|(l, b)| row(l, b)).collect();
    Some(Plot {
        name: "bills.split".into(),
        svg: stacked::figure(
            "Where each bill's time went",
            &["one bar a bill, its task time by part".to_owned()],
            "time",
            Unit::Ns,
            &rows,
        ),
    })
}

/// An operation's line: its name, measured time and priced time (ns).
struct Operation {
    name: String,
    measured: f64,
    priced: Option<f64>,
}

/// The costliest second-level parts (each system call, fault kind, interrupt), measured
/// against priced on one log axis; `None` when the bill has none with a time.
fn top(bill: &Bill) -> Option<Plot> {
    let mut ops: Vec<Operation> = bill
        .parts
        .iter()
        .filter(|p| p.level == 1 && p.time_ns > 0.0)
        .map(|p| Operation {
            name: p.name.clone(),
            measured: p.time_ns,
            priced: p.priced_ns.filter(|v| *v > 0.0),
        })
        .collect();
    ops.sort_by(|a, b| b.measured.total_cmp(&a.measured));
    ops.truncate(TOP_OPERATIONS);
    if ops.is_empty() {
        return None;
    }
    let values: Vec<f64> = ops
        .iter()
        .flat_map(|o| [Some(o.measured), o.priced])
        .flatten()
        .collect();
    let axis = Axis::fit("time", Unit::Ns, &values, Fit::Auto { zero: true });
    let bottom = TOP + ops.len() as f64 * ROW;
    let mut s = Svg::new(WIDTH, bottom + BOTTOM);
    s.set_title("The program's costliest operations: measured and priced");
    s.text(
        8.0,
        18.0,
        13.0,
        Anchor::Start,
        0.0,
        "The costliest operations: time measured (filled) and count × price (hollow)",
    );
    let (x0, x1) = (LEFT, WIDTH - RIGHT);
    let px = |v: f64| x0 + axis.frac(v) * (x1 - x0);
    super::chart::rows_axis(&mut s, &axis, [x0, x1], [TOP, bottom]);
    let (measured, priced) = (colour(0), colour(1));
    for (i, o) in ops.iter().enumerate() {
        let y = TOP + (i as f64 + 0.5) * ROW;
        s.text(LEFT - 8.0, y + 4.0, 12.0, Anchor::End, 0.0, &o.name);
        if let Some(p) = o.priced {
            s.line(px(p), y, px(o.measured), y, "#bbbbbb", 1.0);
            let tip = format!("{}: priced {}", o.name, format::time(p));
            s.circle((px(p), y), 4.0, Paint::outline(priced, 1.5), Some(&tip));
        }
        let tip = format!("{}: measured {}", o.name, format::time(o.measured));
        s.circle((px(o.measured), y), 4.0, Paint::fill(measured), Some(&tip));
    }
    let ly = bottom + 48.0;
    s.circle((LEFT, ly - 4.0), 4.0, Paint::fill(measured), None);
    s.text(LEFT + 8.0, ly, 11.0, Anchor::Start, 0.0, "measured");
    s.circle(
        (LEFT + 100.0, ly - 4.0),
        4.0,
        Paint::outline(priced, 1.5),
        None,
    );
    s.text(LEFT + 108.0, ly, 11.0, Anchor::Start, 0.0, "count × price");
    Some(Plot {
        name: "bill.top".into(),
        svg: s.finish(),
    })
}

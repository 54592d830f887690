//! `spawn`: each way of creating a process against the memory its parent has touched. fork
//! copies the parent's page tables, so it climbs with the parent; vfork and posix_spawn share
//! the parent's memory and stay flat.

use super::chart::{self, Axis, Fit, Header, Line, Panel, Style, Unit};
use super::{marks, Plot};
use oscost_model::ids::spawn::Id;
use oscost_model::{CaseResult, ExperimentResult};

/// `spawn.fork-exec.static.p64mib` → `fork-exec.static`; an id spawn never writes, whole.
fn operation(c: &CaseResult) -> String {
    match Id::parse(&c.id) {
        Some(Id::Case(case)) => case.operation(),
        _ => c.id.clone(),
    }
}

/// The figure, when any creation was measured at two parent sizes or more.
pub fn plots(e: &ExperimentResult) -> Vec<Plot> {
    let cases: Vec<(&CaseResult, f64, String)> = e
        .cases
        .iter()
        .filter_map(|c| {
            let mib = c.params.get("parent_mib")?.as_f64()?;
            Some((c, mib, operation(c)))
        })
        .collect();
    let mut sizes: Vec<f64> = cases.iter().map(|c| c.1).collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    if sizes.len() < 2 {
        return Vec::new();
    }
    let mut ops: Vec<&str> = Vec::new();
    for c in &cases {
        if !ops.contains(&c.2.as_str()) {
            ops.push(&c.2);
        }
    }
    let mut failed = false;
    let lines: Vec<Line> = ops
        .iter()
        .enumerate()
        .map(|(i, op)| {
            let mut of: Vec<&(&CaseResult, f64, String)> =
                cases.iter().filter(|c| c.2 == *op).collect();
            of.sort_by(|a, b| a.1.total_cmp(&b.1));
            Line {
                label: op.to_string(),
                style: Style::nth(i),
                points: of
                    .iter()
                    .map(|(c, mib, _)| {
                        failed |= !c.checks_passed;
                        marks::case_point(c, *mib, 1.0)
                    })
                    .collect(),
            }
        })
        .collect();
    let ys = marks::values(&lines);
    let keys = marks::keys(&lines, failed);
    let unmeasured: Vec<&str> = e
        .unavailable
        .iter()
        .map(|u| u.id.as_str())
        .filter(|id| matches!(Id::parse(id), Some(Id::Case(c)) if c.parent_mib.is_some()))
        .collect();
    let mut notes = vec![
        "Each creation is timed with the wait for the child's exit. \
                          Whiskers: 95 % confidence intervals of the median."
            .to_owned(),
    ];
    if !unmeasured.is_empty() {
        notes.push(format!("Not measured: {}.", unmeasured.join(", ")));
    }
    let header = Header::new(
        &format!("{}: creating a process against the parent's memory", e.name),
        &notes,
    );
    let panel = Panel {
        title: "creation + wait (median)".into(),
        x: Axis::fit("memory the parent touched", Unit::MiB, &sizes, Fit::AtData),
        y: Axis::fit("time per creation", Unit::Ns, &ys, Fit::Auto { zero: true }),
        lines,
        refs: Vec::new(),
        bars: Vec::new(),
    };
    vec![Plot {
        name: format!("{}.parent-size", e.name),
        svg: chart::grid(&header, &[panel], 1, 280.0, &keys),
    }]
}

//! What several figures draw alike: a case as a point with its interval, the values an axis
//! must hold, and the legend of a set of lines.

use super::chart::{Key, Line, Point};
use crate::format::fmt_ns;
use oscost_model::CaseResult;

/// Case `c` at `x`: its median and 95 % interval divided by `scale` (1 for the case's own
/// unit), hollow when a check failed, its id and figures in the tooltip.
pub fn case_point(c: &CaseResult, x: f64, scale: f64) -> Point {
    let (m, lo, hi) = (
        c.median_ns / scale,
        c.ci95_ns[0] / scale,
        c.ci95_ns[1] / scale,
    );
    Point {
        x,
        y: m,
        ci: Some([lo, hi]),
        hollow: !c.checks_passed,
        tip: format!(
            "{}: {} (95 % CI {} to {})",
            c.id,
            fmt_ns(m),
            fmt_ns(lo),
            fmt_ns(hi)
        ),
    }
}

/// Every value the lines draw, their intervals' ends included: what a y axis must hold.
pub fn values(lines: &[Line]) -> Vec<f64> {
    lines
        .iter()
        .flat_map(|l| &l.points)
        .flat_map(|p| [p.y].into_iter().chain(p.ci.into_iter().flatten()))
        .collect()
}

/// The legend of `lines`, and what a hollow marker means when any point is one (`failed`).
pub fn keys(lines: &[Line], failed: bool) -> Vec<Key> {
    let mut keys: Vec<Key> = lines
        .iter()
        .map(|l| Key::Series(l.label.clone(), l.style))
        .collect();
    if failed {
        keys.push(Key::Hollow("hollow: a check failed".into()));
    }
    keys
}

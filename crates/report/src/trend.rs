//! The figure of `oscost history trend`: one case's median across runs, oldest first, each
//! with its 95 % confidence interval, and a mark wherever the machine's environment changed
//! between two runs (the step after it may be the machine's, not the program's).

use crate::plot::svg::{ticks, Anchor, Paint, Svg};

/// One run's point of a trend, as the caller read it from wherever runs are kept.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendRow {
    /// Names the run under its point (a short run id).
    pub label: String,
    /// When the run started, as shown under the label (may be empty).
    pub date: String,
    /// The median (a derived figure's estimate), ns; NaN leaves a gap.
    pub median_ns: f64,
    /// Its 95 % confidence interval, ns.
    pub ci95_ns: [f64; 2],
    /// The environment differs from the previous run's.
    pub env_changed: bool,
    /// Every mechanism check passed (a derived figure: not flagged).
    pub checks_passed: bool,
    /// What changed since the previous run, one phrase each (`kernel 6.1 → 6.12`).
    pub changes: Vec<String>,
    /// A `--quick` run: drawn hollow, since its figure is a rougher look than a full run's.
    pub quick: bool,
}

const LINE: &str = "#4e79a7";
const FAILED: &str = "#e15759";
const CHANGE: &str = "#f28e2b";

/// Labels under the axis at most; beyond that every k-th run is labelled.
const MAX_LABELS: usize = 30;

/// The unit figures are drawn in: the largest of ns, µs, ms and s that keeps `max` at 1 or
/// more, and its size in ns.
fn scale(max: f64) -> (&'static str, f64) {
    [("s", 1e9), ("ms", 1e6), ("µs", 1e3)]
        .into_iter()
        .find(|(_, ns)| max >= *ns)
        .unwrap_or(("ns", 1.0))
}

/// Where the plot sits in the figure and how values map onto it.
struct Frame {
    left: f64,
    top: f64,
    plot_w: f64,
    plot_h: f64,
    n: usize,
    unit_name: &'static str,
    unit_ns: f64,
    y_max: f64,
}

impl Frame {
    fn x(&self, i: usize) -> f64 {
        self.left + (i as f64 + 0.5) / self.n.max(1) as f64 * self.plot_w
    }

    fn y(&self, ns: f64) -> f64 {
        self.top + self.plot_h - (ns / self.unit_ns / self.y_max).clamp(0.0, 1.0) * self.plot_h
    }
}

/// The whole SVG document of the trend of `case_id` (per `unit`, `derived` for a derived
/// figure) through `points`, oldest first. The same points always give the same bytes.
pub fn trend_svg(case_id: &str, unit: &str, points: &[TrendRow]) -> String {
    // The left margin leaves room for the first run's slanted label.
    let (left, plot_w, top, plot_h) = (110.0, 640.0, 62.0, 300.0);
    let width = left + plot_w + 40.0;
    let labels_h = 96.0;
    let height = top + plot_h + labels_h + 76.0;
    let mut s = Svg::new(width, height);
    let what = if unit == "derived" {
        "estimate".to_owned()
    } else {
        format!("median per {unit}")
    };
    let n = points.len();
    s.text(
        left,
        22.0,
        15.0,
        Anchor::Start,
        0.0,
        &format!("{case_id}: {what} across runs"),
    );
    s.text(
        left,
        42.0,
        11.0,
        Anchor::Start,
        0.0,
        &format!(
            "{n} run{}, oldest first; bars are 95 % confidence intervals",
            if n == 1 { "" } else { "s" }
        ),
    );
    let data_max = points
        .iter()
        .flat_map(|p| [p.median_ns, p.ci95_ns[0], p.ci95_ns[1]])
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let (unit_name, unit_ns) = scale(data_max);
    let y_max = if data_max > 0.0 {
        data_max / unit_ns * 1.1
    } else {
        1.0
    };
    let f = Frame {
        left,
        top,
        plot_w,
        plot_h,
        n,
        unit_name,
        unit_ns,
        y_max,
    };
    s.grid_and_frame((left, top), (plot_w, plot_h), &ticks(y_max, 5), |v| {
        f.y(v * unit_ns)
    });
    s.text(
        44.0,
        top + plot_h / 2.0,
        12.0,
        Anchor::Middle,
        -90.0,
        &format!("{what} ({unit_name})"),
    );
    if n == 0 {
        s.text(
            left + plot_w / 2.0,
            top + plot_h / 2.0,
            13.0,
            Anchor::Middle,
            0.0,
            "no runs",
        );
        return s.finish();
    }
    env_changes(&mut s, &f, points);
    series(&mut s, &f, case_id, points);
    run_labels(&mut s, &f, points);
    legend(&mut s, &f, top + plot_h + labels_h + 24.0, points);
    s.finish()
}

/// Where the environment changed, between the run before and this one: a dashed line and a
/// mark above the frame, with no text over the data (the legend says what the mark means).
fn env_changes(s: &mut Svg, f: &Frame, points: &[TrendRow]) {
    for (i, p) in points.iter().enumerate().skip(1) {
        if p.env_changed {
            let cx = (f.x(i - 1) + f.x(i)) / 2.0;
            s.line(cx, f.top, cx, f.top + f.plot_h, CHANGE, 1.5);
            let tip = if p.changes.is_empty() {
                "environment changed".to_owned()
            } else {
                format!("environment changed: {}", p.changes.join("; "))
            };
            s.rect(cx - 4.0, f.top - 10.0, 8.0, 8.0, CHANGE, Some(&tip));
        }
    }
}

/// The medians, joined where they follow each other without a gap, each with its interval.
fn series(s: &mut Svg, f: &Frame, case_id: &str, points: &[TrendRow]) {
    let mut segment: Vec<(f64, f64)> = Vec::new();
    let mut segments = Vec::new();
    for (i, p) in points.iter().enumerate() {
        if p.median_ns.is_finite() {
            segment.push((f.x(i), f.y(p.median_ns)));
        } else if !segment.is_empty() {
            segments.push(std::mem::take(&mut segment));
        }
    }
    segments.push(segment);
    for seg in segments.iter().filter(|seg| seg.len() > 1) {
        s.polyline(seg, LINE, 1.5, &format!("{case_id} across runs"));
    }
    let n = points.len() as f64;
    let cap = (f.plot_w / n * 0.3).clamp(1.0, 6.0);
    let dot = (f.plot_w / n * 0.5).clamp(2.0, 7.0);
    for (i, p) in points.iter().enumerate() {
        if !p.median_ns.is_finite() {
            continue;
        }
        let colour = if p.checks_passed { LINE } else { FAILED };
        let [lo, hi] = p.ci95_ns;
        let x = f.x(i);
        if lo.is_finite() && hi.is_finite() {
            s.line(x, f.y(lo), x, f.y(hi), colour, 1.0);
            s.line(x - cap, f.y(lo), x + cap, f.y(lo), colour, 1.0);
            s.line(x - cap, f.y(hi), x + cap, f.y(hi), colour, 1.0);
        }
        let u = f.unit_ns;
        let tip = format!(
            "run {}{}{}: {:.4} {} (95 % CI {:.4} .. {:.4}){}",
            p.label,
            if p.quick { " (--quick)" } else { "" },
            if p.date.is_empty() {
                String::new()
            } else {
                format!(", {}", p.date)
            },
            p.median_ns / u,
            f.unit_name,
            lo / u,
            hi / u,
            if p.checks_passed {
                ""
            } else {
                "; a mechanism check failed"
            }
        );
        let y = f.y(p.median_ns);
        if p.quick {
            s.painted_rect(
                (x - dot / 2.0, y - dot / 2.0),
                (dot, dot),
                Paint::outline(colour, 1.5),
                Some(&tip),
            );
        } else {
            s.rect(x - dot / 2.0, y - dot / 2.0, dot, dot, colour, Some(&tip));
        }
    }
}

/// Run labels, slanted so that ids and dates fit side by side.
fn run_labels(s: &mut Svg, f: &Frame, points: &[TrendRow]) {
    let every = points.len().div_ceil(MAX_LABELS);
    let base = f.top + f.plot_h;
    for (i, p) in points.iter().enumerate().step_by(every.max(1)) {
        let label = if p.date.is_empty() {
            p.label.clone()
        } else {
            format!("{} {}", p.label, p.date)
        };
        s.line(f.x(i), base, f.x(i), base + 4.0, "#000000", 1.0);
        s.text(f.x(i) + 3.0, base + 14.0, 10.0, Anchor::End, -40.0, &label);
    }
}

fn legend(s: &mut Svg, f: &Frame, ly: f64, points: &[TrendRow]) {
    let left = f.left;
    if points.iter().any(|p| p.env_changed) {
        s.rect(left + 5.0, ly - 8.0, 8.0, 8.0, CHANGE, None);
        s.text(
            left + 24.0,
            ly,
            11.0,
            Anchor::Start,
            0.0,
            "environment changed (kernel, CPU, mitigations, clock, CPUs, nice or oscost version)",
        );
    }
    if points.iter().any(|p| !p.checks_passed) {
        s.rect(left + 5.0, ly + 10.0, 7.0, 7.0, FAILED, None);
        s.text(
            left + 24.0,
            ly + 18.0,
            11.0,
            Anchor::Start,
            0.0,
            "a mechanism check failed: the figure is not trusted",
        );
    }
    if points.iter().any(|p| p.quick) && points.iter().any(|p| !p.quick) {
        s.painted_rect(
            (left + 5.0, ly + 28.0),
            (7.0, 7.0),
            Paint::outline(LINE, 1.5),
            None,
        );
        s.text(
            left + 24.0,
            ly + 36.0,
            11.0,
            Anchor::Start,
            0.0,
            "hollow: a --quick run (fewer, shorter samples: a rougher look than the filled points)",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_drawn_in_a_unit_that_fits() {
        assert_eq!(scale(950.0), ("ns", 1.0));
        assert_eq!(scale(1500.0), ("µs", 1e3));
        assert_eq!(scale(2.5e7), ("ms", 1e6));
        assert_eq!(scale(3e9), ("s", 1e9));
        assert_eq!(scale(0.0), ("ns", 1.0));
    }

    #[test]
    fn no_runs_still_draw_a_figure() {
        let svg = trend_svg("a.case", "call", &[]);
        assert!(svg.contains(">no runs</text>"), "{svg}");
    }
}

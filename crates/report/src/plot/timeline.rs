//! The timeline's figure: each worker's progress (chunks done) against time, one line per
//! worker, and under it a strip of who ran when, both read from the case's `trace` series.

use super::chart::colour as palette;
use super::svg::{tick_label, ticks, Anchor, Svg};
use super::Plot;
use oscost_model::case::Series;
use oscost_model::ExperimentResult;
use oscost_stats::sched::turns;

/// Legend entries shown at most; the rest are summed up in one line.
const LEGEND_MAX: usize = 16;

/// One plot per case that carries a trace.
pub fn plots(e: &ExperimentResult) -> Vec<Plot> {
    e.cases
        .iter()
        .filter_map(|c| {
            let trace = c.series.iter().find(|s| s.name == "trace")?;
            let nice: Vec<Option<i64>> = c
                .params
                .get("nice")
                .and_then(|v| v.as_array())
                .map(|a| a.iter().map(|v| v.as_i64()).collect())
                .unwrap_or_default();
            let workers = worker_count(trace)?;
            let labels: Vec<String> = (0..workers)
                .map(|w| match nice.get(w).copied().flatten() {
                    Some(n) => format!("worker {} (nice {n})", w + 1),
                    None => format!("worker {}", w + 1),
                })
                .collect();
            let kernel = c.series.iter().find(|s| s.name == "kernel_runs");
            let svg = progress_with_kernel_svg(&c.id, &c.description, trace, &labels, kernel)?;
            Some(Plot {
                name: c.id.clone(),
                svg,
            })
        })
        .collect()
}

/// A trace's points as (elapsed_ns, worker from 0, chunk from 1), if it has the timeline's
/// columns.
fn points(trace: &Series) -> Option<Vec<(f64, usize, f64)>> {
    let col = |name: &str| trace.columns.iter().position(|c| c == name);
    let (t, w, c) = (col("elapsed_ns")?, col("worker")?, col("chunk")?);
    let mut p: Vec<(f64, usize, f64)> = trace
        .points
        .iter()
        .filter_map(|row| {
            let (time, worker, chunk) = (*row.get(t)?, *row.get(w)?, *row.get(c)?);
            (worker >= 1.0 && time.is_finite() && chunk.is_finite()).then_some((
                time,
                worker as usize - 1,
                chunk,
            ))
        })
        .collect();
    p.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    Some(p)
}

fn worker_count(trace: &Series) -> Option<usize> {
    points(trace)?.iter().map(|p| p.1 + 1).max()
}

/// Each worker's chunk ends in time order, from a trace's sorted points.
fn ends_per_worker(p: &[(f64, usize, f64)]) -> Vec<Vec<f64>> {
    let mut ends = vec![Vec::new(); p.iter().map(|e| e.1 + 1).max().unwrap_or(0)];
    for &(t, w, _) in p {
        ends[w].push(t);
    }
    ends
}

/// The figure: progress against time above, who ran when below; `None` for an empty trace.
pub fn progress_svg(
    id: &str,
    description: &str,
    trace: &Series,
    labels: &[String],
) -> Option<String> {
    progress_with_kernel_svg(id, description, trace, labels, None)
}

/// A `kernel_runs` series' runs as `(from_ms, to_ms, worker from 1 or 0, ended)`.
fn kernel_runs(s: &Series) -> Vec<(f64, f64, usize, f64)> {
    let col = |name: &str| s.columns.iter().position(|c| c == name);
    let (Some(a), Some(b), Some(w), Some(e)) =
        (col("from_ns"), col("to_ns"), col("worker"), col("ended"))
    else {
        return Vec::new();
    };
    s.points
        .iter()
        .filter_map(|p| {
            let (from, to, worker, ended) = (*p.get(a)?, *p.get(b)?, *p.get(w)?, *p.get(e)?);
            (from.is_finite() && to >= from && worker >= 0.0).then_some((
                from / 1e6,
                to / 1e6,
                worker as usize,
                ended,
            ))
        })
        .collect()
}

/// As [`progress_svg`], with the kernel's who-ran-when (a `kernel_runs` series: its switches
/// in the same round) drawn under the workers' own, one row per worker and one for every
/// other task.
pub fn progress_with_kernel_svg(
    id: &str,
    description: &str,
    trace: &Series,
    labels: &[String],
    kernel: Option<&Series>,
) -> Option<String> {
    let p = points(trace)?;
    let workers = p.iter().map(|x| x.1 + 1).max()?;
    let t_max_ms = p.iter().map(|x| x.0).fold(0.0, f64::max) / 1e6;
    let chunks_max = p.iter().map(|x| x.2).fold(0.0, f64::max).max(1.0);
    let (left, right_legend, plot_w, top, plot_h) = (70.0, 190.0, 620.0, 58.0, 300.0);
    let row_h = (320.0 / workers as f64).clamp(2.0, 14.0);
    let strip_top = top + plot_h + 50.0;
    let strip_h = row_h * workers as f64;
    let kruns = kernel.map(kernel_runs).unwrap_or_default();
    let ktop = strip_top + strip_h + 44.0;
    let kh = if kernel.is_some() {
        row_h * (workers + 1) as f64 + 44.0
    } else {
        0.0
    };
    let width = left + plot_w + right_legend;
    let height = strip_top + strip_h + 48.0 + kh;
    let x = |ms: f64| {
        left + if t_max_ms > 0.0 {
            ms / t_max_ms * plot_w
        } else {
            0.0
        }
    };
    let y = |c: f64| top + plot_h - c / chunks_max * plot_h;
    let colour = palette;
    let mut s = Svg::new(width, height);
    s.text(
        left,
        22.0,
        15.0,
        Anchor::Start,
        0.0,
        &format!("{id}: progress against time"),
    );
    s.text(left, 40.0, 11.0, Anchor::Start, 0.0, description);
    // Grid and axes.
    let xt = ticks(t_max_ms, 8);
    let x_step = xt.get(1).copied().unwrap_or(1.0);
    for &v in &xt {
        s.line(x(v), top, x(v), top + plot_h, "#e6e6e6", 1.0);
        s.line(x(v), strip_top, x(v), strip_top + strip_h, "#e6e6e6", 1.0);
        s.text(
            x(v),
            top + plot_h + 16.0,
            11.0,
            Anchor::Middle,
            0.0,
            &tick_label(v, x_step),
        );
        s.text(
            x(v),
            strip_top + strip_h + 16.0,
            11.0,
            Anchor::Middle,
            0.0,
            &tick_label(v, x_step),
        );
        if kernel.is_some() {
            let kb = ktop + row_h * (workers + 1) as f64;
            s.line(x(v), ktop, x(v), kb, "#e6e6e6", 1.0);
            s.text(
                x(v),
                kb + 16.0,
                11.0,
                Anchor::Middle,
                0.0,
                &tick_label(v, x_step),
            );
        }
    }
    s.grid_and_frame((left, top), (plot_w, plot_h), &ticks(chunks_max, 5), y);
    s.text(
        20.0,
        top + plot_h / 2.0,
        12.0,
        Anchor::Middle,
        -90.0,
        "chunks done",
    );
    s.text(
        left + plot_w / 2.0,
        strip_top + strip_h + 34.0 + kh,
        12.0,
        Anchor::Middle,
        0.0,
        "time since the common start (ms)",
    );
    // One line per worker: flat while it waits, rising while it runs.
    let all = turns(&ends_per_worker(&p));
    for w in 0..workers {
        // From the start: a worker that has not run yet waits at 0.
        let mut pts: Vec<(f64, f64)> = vec![(x(0.0), y(0.0))];
        for t in all.iter().filter(|t| t.worker == w) {
            if t.from_ns <= 0.0 {
                pts.clear();
            }
            pts.push((x(t.from_ns / 1e6), y(t.chunks_before as f64)));
            pts.extend(
                p.iter()
                    .filter(|e| e.1 == w && e.0 > t.from_ns && e.0 <= t.to_ns)
                    .map(|e| (x(e.0 / 1e6), y(e.2))),
            );
        }
        let label = labels
            .get(w)
            .cloned()
            .unwrap_or_else(|| format!("worker {}", w + 1));
        s.polyline(&pts, colour(w), 1.8, &label);
    }
    // Who ran when: each turn as a bar in its worker's row.
    s.text(
        left,
        strip_top - 8.0,
        12.0,
        Anchor::Start,
        0.0,
        "who ran when (one row per worker)",
    );
    for w in 0..workers {
        let ry = strip_top + w as f64 * row_h;
        s.rect(left, ry, plot_w, row_h - 1.0, "#f4f4f4", None);
        if row_h >= 10.0 {
            s.text(
                left - 6.0,
                ry + row_h - 3.0,
                10.0,
                Anchor::End,
                0.0,
                &format!("w{}", w + 1),
            );
        }
    }
    for t in &all {
        let (a, b) = (x(t.from_ns / 1e6), x(t.to_ns / 1e6));
        let tip = format!(
            "worker {}: {:.3} to {:.3} ms",
            t.worker + 1,
            t.from_ns / 1e6,
            t.to_ns / 1e6
        );
        s.rect(
            a,
            strip_top + t.worker as f64 * row_h,
            b - a,
            row_h - 1.0,
            colour(t.worker),
            Some(&tip),
        );
    }
    s.line(left, strip_top, left, strip_top + strip_h, "#000000", 1.0);
    if kernel.is_some() {
        kernel_strip(&mut s, (left, ktop, plot_w, row_h), workers, &kruns, &x);
    }
    legend(&mut s, left + plot_w + 20.0, top, workers, labels);
    Some(s.finish())
}

/// The kernel's who-ran-when at `(left, top)`: a row per worker, then one for every other
/// task (idle left blank), each run a bar.
fn kernel_strip(
    s: &mut Svg,
    (left, top, plot_w, row_h): (f64, f64, f64, f64),
    workers: usize,
    runs: &[(f64, f64, usize, f64)],
    x: &dyn Fn(f64) -> f64,
) {
    s.text(
        left,
        top - 8.0,
        12.0,
        Anchor::Start,
        0.0,
        "who ran when, from the kernel's sched_switch (the last row: any other task)",
    );
    for r in 0..=workers {
        let ry = top + r as f64 * row_h;
        s.rect(left, ry, plot_w, row_h - 1.0, "#f4f4f4", None);
        if row_h >= 10.0 {
            let name = if r < workers {
                format!("w{}", r + 1)
            } else {
                "other".into()
            };
            s.text(left - 6.0, ry + row_h - 3.0, 10.0, Anchor::End, 0.0, &name);
        }
    }
    for &(from, to, worker, ended) in runs {
        // Idle (tid 0) is no task's time: left blank. Other tasks share the last row.
        let (row, fill) = match worker {
            0 => (workers, "#555555"),
            w if w <= workers => (w - 1, palette(w - 1)),
            _ => continue,
        };
        let how = match ended as u8 {
            1 => "preempted",
            2 => "slept",
            _ => "still running",
        };
        let who = if worker == 0 {
            "another task".to_owned()
        } else {
            format!("worker {worker}")
        };
        let tip = format!("{who}: {from:.3} to {to:.3} ms, then {how}");
        s.rect(
            x(from),
            top + row as f64 * row_h,
            x(to) - x(from),
            row_h - 1.0,
            fill,
            Some(&tip),
        );
    }
    s.line(
        left,
        top,
        left,
        top + row_h * (workers + 1) as f64,
        "#000000",
        1.0,
    );
}

/// The legend at `(lx, top)`: a swatch and a label for each worker, the first
/// [`LEGEND_MAX`] of them, and how many more there are.
fn legend(s: &mut Svg, lx: f64, top: f64, workers: usize, labels: &[String]) {
    for w in 0..workers.min(LEGEND_MAX) {
        let ly = top + 10.0 + w as f64 * 18.0;
        s.rect(lx, ly - 9.0, 14.0, 10.0, palette(w), None);
        let label = labels
            .get(w)
            .cloned()
            .unwrap_or_else(|| format!("worker {}", w + 1));
        s.text(lx + 20.0, ly, 12.0, Anchor::Start, 0.0, &label);
    }
    if workers > LEGEND_MAX {
        let ly = top + 10.0 + LEGEND_MAX as f64 * 18.0;
        s.text(
            lx,
            ly,
            12.0,
            Anchor::Start,
            0.0,
            &format!("and {} more", workers - LEGEND_MAX),
        );
    }
}

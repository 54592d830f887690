//! The Linux time-slice study: N = 1, 2, 4 processes pinned to one CPU, each doing 100 equal
//! chunks of busy work and printing the time after each; throughput (N / total time) and each
//! process's latency, from its own first progress line to its last.
//!
//! oscost's counterpart is `timeline --workers 1,2,4` (processes, one CPU). Throughput and
//! latency in absolute terms are set by each machine's chunk of work; what compares is their
//! shape: throughput against N = 1, latency against N = 1, and latency against the total.

use super::{
    baseline, case, get, keys, line, published, published_style, this_label, this_machine_note,
    this_style, value_text, x_values, y_values, StudyFigure, StudyInfo,
};
use crate::format::fmt_ns;
use crate::plot::chart::{grid, Axis, Fit, Header, Panel, Unit};
use crate::plot::Plot;
use crate::views::View;
use oscost_model::ids::timeline::{self, Reading};
use oscost_model::{CaseResult, ResultDoc};

const NAME: &str = "linux-timeslice";

/// What `oscost study` says of it.
pub const INFO: StudyInfo = StudyInfo {
    name: NAME,
    citation: "@gomi_ningen, a blog post repeating the process-scheduler experiment of Satoru \
               Takeuchi, \"[試して理解] Linuxのしくみ\" (Gijutsu-Hyoron, 2018) (in Japanese, \
               undated)",
    ran_on: "Linux (kernel not given), every process pinned to CPU 0 with taskset",
    measured: "N = 1, 2, 4 processes of 100 chunks each on one CPU: progress against time, \
               throughput (N / total time) and each process's latency from its own first \
               progress line to its last",
    baselines: &["linux-timeslice"],
    experiments: &[timeline::NAME],
};

const NS: [usize; 3] = [1, 2, 4];

struct Point<'a> {
    main: &'a CaseResult,
    own: Option<&'a CaseResult>,
    common: Option<&'a CaseResult>,
}

/// The run of `n` processes under the default policy, with its two latency readings.
fn point(doc: &ResultDoc, n: usize) -> Option<Point<'_>> {
    let id = timeline::Case {
        kind: "processes",
        policy: None,
        workers: n,
        nice: None,
    }
    .to_string();
    Some(Point {
        main: case(doc, &id)?,
        own: case(doc, &timeline::reading(&id, Reading::OwnLatency)),
        common: case(doc, &timeline::reading(&id, Reading::Latency)),
    })
}

fn counter(c: &CaseResult, key: &str) -> Option<f64> {
    c.counters.get(key).copied()
}

/// The study's figures for this machine.
pub fn figures(doc: &ResultDoc) -> Vec<StudyFigure> {
    let mut out = Vec::new();
    let fig = |id: String, description: String, value: f64, unit: &str, cases: &[&CaseResult]| {
        StudyFigure {
            id,
            description,
            value,
            ci95: None,
            unit: unit.into(),
            flagged: super::flag_of(cases),
            doubt: super::doubt_of(cases),
        }
    };
    let p1 = point(doc, 1);
    for n in NS {
        let Some(p) = point(doc, n) else { continue };
        let thr = counter(p.main, "throughput_workers_per_s");
        let total = counter(p.main, "total_ns");
        if let Some(t) = thr {
            out.push(fig(
                format!("study.{NAME}.n{n}.throughput"),
                format!("{n} processes finished per second on one CPU (N / total time)"),
                t,
                "processes/s",
                &[p.main],
            ));
        }
        if let Some(own) = p.own {
            out.push(fig(
                format!("study.{NAME}.n{n}.latency"),
                format!(
                    "mean latency of {n} processes, each from its own first progress record to \
                     its last (the study's definition)"
                ),
                own.mean_ns,
                "ns",
                &[own],
            ));
            if let Some(total) = total {
                out.push(fig(
                    format!("study.{NAME}.n{n}.latency_over_total"),
                    format!("mean latency of {n} processes over the time until the last finished"),
                    own.mean_ns / total,
                    "x",
                    &[own, p.main],
                ));
            }
        }
        if let (Some(p1), true) = (&p1, n > 1) {
            if let (Some(t), Some(t1)) = (thr, counter(p1.main, "throughput_workers_per_s")) {
                out.push(fig(
                    format!("study.{NAME}.n{n}.throughput_vs_n1"),
                    format!("throughput of {n} processes over that of one"),
                    t / t1,
                    "x",
                    &[p.main, p1.main],
                ));
            }
            if let (Some(own), Some(own1)) = (p.own, p1.own) {
                out.push(fig(
                    format!("study.{NAME}.n{n}.latency_vs_n1"),
                    format!("mean latency of {n} processes over that of one"),
                    own.mean_ns / own1.mean_ns,
                    "x",
                    &[own, own1],
                ));
            }
        }
    }
    out
}

/// The study's table: throughput and latency per N, published beside this machine, with the
/// ratios that carry over between machines.
pub fn tables(doc: Option<&ResultDoc>) -> Vec<View> {
    let b = baseline(NAME);
    let figs = doc.map(figures).unwrap_or_default();
    let f = |id: String| get(&figs, &id).map(|f| value_text(f.value, &f.unit));
    let (mut thr, mut lat, mut tot) = (Vec::new(), Vec::new(), Vec::new());
    let (t1, l1) = (published(&b, "n1.throughput"), published(&b, "n1.latency"));
    let vs_n1 =
        |n: usize, id: String| f(id).unwrap_or(if n == 1 { "1 x".into() } else { "-".into() });
    for n in NS {
        let (t, l, total) = (
            published(&b, &format!("n{n}.throughput")),
            published(&b, &format!("n{n}.latency")),
            published(&b, &format!("n{n}.total")),
        );
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2} x", a / b),
            _ => "-".into(),
        };
        let common = doc
            .and_then(|d| point(d, n))
            .and_then(|p| p.common)
            .map_or("-".into(), |c| fmt_ns(c.mean_ns));
        thr.push(vec![
            n.to_string(),
            t.map_or("-".into(), |v| format!("{v}")),
            get(&figs, &format!("study.{NAME}.n{n}.throughput"))
                .map_or("-".into(), |f| crate::plot::chart::sig(f.value)),
            ratio(t, t1),
            vs_n1(n, format!("study.{NAME}.n{n}.throughput_vs_n1")),
        ]);
        lat.push(vec![
            n.to_string(),
            l.map_or("-".into(), fmt_ns),
            f(format!("study.{NAME}.n{n}.latency")).unwrap_or("-".into()),
            ratio(l, l1),
            vs_n1(n, format!("study.{NAME}.n{n}.latency_vs_n1")),
        ]);
        tot.push(vec![
            n.to_string(),
            ratio(l, total),
            f(format!("study.{NAME}.n{n}.latency_over_total")).unwrap_or("-".into()),
            common,
        ]);
    }
    let head = |h: &[&str]| h.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let with_machine = |mut notes: Vec<String>| {
        notes.extend(this_machine_note(doc));
        notes
    };
    // Three tables, each whole at 80 columns: the study's column beside this machine's.
    vec![
        View {
            detail: Vec::new(),
            title: format!("{NAME}: N processes of 100 chunks on one CPU, throughput"),
            head: head(&["N", "study /s", "here /s", "study vs N=1", "here vs N=1"]),
            rows: thr,
            notes: with_machine(vec![
                "throughput: processes finished per second (N / the time until the last \
                 finished). The absolute figures are set by each machine's chunk of work; the \
                 ratios (x) carry over."
                    .to_string(),
            ]),
        },
        View {
            detail: Vec::new(),
            title: format!("{NAME}: N processes of 100 chunks on one CPU, latency"),
            head: head(&["N", "study", "here", "study vs N=1", "here vs N=1"]),
            rows: lat,
            notes: with_machine(vec![
                "latency: the mean over the processes of each one's time from its own first \
                 progress record to its last (the study's definition). The study's latencies \
                 grow 1 : 1.6 : 2.9 from N = 1 to 4, not in proportion to N."
                    .to_string(),
            ]),
        },
        View {
            detail: Vec::new(),
            title: format!("{NAME}: N processes of 100 chunks on one CPU, latency over total"),
            head: head(&["N", "study lat/total", "here lat/total", "here from start"]),
            rows: tot,
            notes: with_machine(vec![
                "lat/total: the latency over the time until the last process finished; \
                 `from start`: this machine's mean latency from the common start instead."
                    .to_string(),
            ]),
        },
    ]
}

/// Progress against time, one panel per N: this machine's trace (each worker a line), and the
/// study's workers' finishing times marked at 100 chunks.
pub fn plots(doc: Option<&ResultDoc>) -> Vec<Plot> {
    let b = baseline(NAME);
    let mut panels = Vec::new();
    let mut all = Vec::new();
    for n in NS {
        let mut lines = Vec::new();
        // The study's workers: the only published points of its trace are where each ended.
        let ends: Vec<(f64, f64, Option<[f64; 2]>, String)> = if n == 1 {
            published(&b, "n1.latency")
                .map(|l| {
                    vec![(
                        l,
                        100.0,
                        None,
                        format!("study, N = 1: finished at {}", fmt_ns(l)),
                    )]
                })
                .unwrap_or_default()
        } else {
            (0..n)
                .filter_map(|w| {
                    let l = published(&b, &format!("n{n}.latency.id{w}"))?;
                    Some((
                        l,
                        100.0,
                        None,
                        format!("study, N = {n}, process {w}: {}", fmt_ns(l)),
                    ))
                })
                .collect()
        };
        let mut style = published_style(0).points(5.0);
        style.dash = "";
        lines.push(line(
            "the study: each process's latency (as published)",
            style,
            ends,
        ));
        if let Some(doc) = doc {
            if let Some(p) = point(doc, n) {
                if let Some(trace) = p.main.series.iter().find(|s| s.name == "trace") {
                    for w in 1..=n {
                        let pts: Vec<_> = trace
                            .points
                            .iter()
                            .filter(|pt| pt.get(1).copied() == Some(w as f64))
                            .filter_map(|pt| Some((*pt.first()?, *pt.get(2)?, None, String::new())))
                            .collect();
                        let mut st = this_style();
                        st.colour = crate::plot::chart::colour(w + 3);
                        st.marker = None;
                        lines.push(line(&format!("{}, worker {w}", this_label(doc)), st, pts));
                    }
                }
            }
        }
        let mut xs = x_values(&lines);
        xs.push(0.0);
        panels.push(Panel {
            title: format!("N = {n}"),
            x: Axis::fit(
                "time from the start",
                Unit::Ns,
                &xs,
                Fit::Linear { zero: true },
            ),
            y: Axis::fit(
                "chunks done",
                Unit::Plain,
                &[0.0, 100.0],
                Fit::Linear { zero: true },
            ),
            lines: lines.clone(),
            refs: Vec::new(),
            bars: Vec::new(),
        });
        all.extend(lines);
    }
    let _ = y_values;
    let refs: Vec<&crate::plot::chart::Line> = all.iter().collect();
    let header = Header::new(
        "linux-timeslice: N processes taking turns on one CPU",
        &[
            "Lines: this machine's workers, chunks done against time (a step is a time slice); \
           markers: where the study's processes finished, each from its own first progress line \
           (its latency)."
                .to_string(),
        ],
    );
    vec![Plot {
        name: format!("study.{NAME}"),
        svg: grid(&header, &panels, 3, 180.0, &keys(&refs)),
    }]
}

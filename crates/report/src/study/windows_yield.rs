//! The Windows yield study: N threads share fixed work, each calling `Sleep(0)` after every
//! step, N = 1 … 8192, on one CPU and on two. Its tables give the time and the overhead against
//! its own baselines (N = 1 on one CPU, N = 2 on two), and the gain of two CPUs over one.
//!
//! oscost's counterpart is `split --form threads --yield` with the sets `one` and `two`. The
//! times are for each study's own work and never compare; the overheads and gains are ratios of
//! times on one machine and do.

use super::{
    baseline, case, exp_param, get, keys, line, overhead_figure, pub_cell, published,
    published_style, signed, this_label, this_machine_note, this_style, x_values, y_values,
    StudyFigure, StudyInfo,
};
use crate::format::fmt_ns;
use crate::plot::chart::{grid, Axis, Fit, Header, Panel, Unit};
use crate::plot::Plot;
use crate::views::split::overhead_pct;
use crate::views::View;
use oscost_model::ids::split;
use oscost_model::{CaseResult, ResultDoc};

const NAME: &str = "windows-yield";

/// What `oscost study` says of it.
pub const INFO: StudyInfo = StudyInfo {
    name: NAME,
    citation: "An untitled text on Windows threads that yield (in Russian; author and date not \
               given, its newest system Windows XP)",
    ran_on: "Windows NT4 Server and 2000 Professional on two Pentium III 1 GHz; Windows 2000 \
             Professional, XP Professional and 98 SE on one",
    measured: "the same work shared by N = 1 … 8192 threads calling Sleep(0) after every step, \
               on one CPU and on two: the time, the overhead against N = 1 on one CPU (N = 2 on \
               two), and the gain of two CPUs over one",
    baselines: &[
        "windows-yield-2000-1cpu",
        "windows-yield-xp-1cpu",
        "windows-yield-98se-1cpu",
        "windows-yield-nt4-2cpu",
        "windows-yield-2000-2cpu",
        "windows-yield-summary",
    ],
    experiments: &[split::NAME],
};

/// The published systems on one CPU and on two: (baseline, legend label).
const ONE_CPU: [(&str, &str); 3] = [
    ("windows-yield-2000-1cpu", "Windows 2000, 1 CPU"),
    ("windows-yield-xp-1cpu", "Windows XP, 1 CPU"),
    ("windows-yield-98se-1cpu", "Windows 98 SE, 1 CPU"),
];
const TWO_CPUS: [(&str, &str); 2] = [
    ("windows-yield-nt4-2cpu", "Windows NT4, 2 CPUs"),
    ("windows-yield-2000-2cpu", "Windows 2000, 2 CPUs"),
];

/// The study's N: 1, 2, 4 … 8192.
fn study_ns() -> Vec<u64> {
    (0..=13).map(|k| 1u64 << k).collect()
}

/// The split cases of one CPU set of a run with `--yield`, by N: `one`, and for two CPUs the
/// `two` set, or `all` when it held exactly two CPUs.
fn cases_of(doc: &ResultDoc, cpus: u64) -> Vec<(u64, &CaseResult)> {
    if exp_param(doc, split::NAME, "yield").and_then(|v| v.as_bool()) != Some(true) {
        return Vec::new();
    }
    let sets: &[&str] = if cpus == 1 { &["one"] } else { &["two", "all"] };
    for set in sets {
        let found: Vec<(u64, &CaseResult)> = study_ns()
            .into_iter()
            .filter_map(|n| {
                let id = split::Case {
                    form: "threads",
                    set,
                    tasks: usize::try_from(n).ok()?,
                    yield_each: true,
                };
                let c = case(doc, &id.to_string())?;
                let count = c.params.get("cpu_count").and_then(|v| v.as_u64());
                (count == Some(cpus)).then_some((n, c))
            })
            .collect();
        if !found.is_empty() {
            return found;
        }
    }
    Vec::new()
}

/// The case for `n` among `v`.
fn at<'a>(v: &[(u64, &'a CaseResult)], n: u64) -> Option<&'a CaseResult> {
    v.iter().find(|(k, _)| *k == n).map(|p| p.1)
}

/// The study's figures for this machine: overheads against the study's baselines, the gain of
/// two CPUs over one at each N, its mean, and the largest overhead on one CPU.
pub fn figures(doc: &ResultDoc) -> Vec<StudyFigure> {
    let one = cases_of(doc, 1);
    let two = cases_of(doc, 2);
    let mut out = Vec::new();
    for (set, cases, base_n) in [("one", &one, 1u64), ("two", &two, 2u64)] {
        let Some(base) = at(cases, base_n) else {
            continue;
        };
        for (n, c) in cases.iter() {
            if *n < base_n {
                continue;
            }
            out.extend(overhead_figure(
                format!("study.{NAME}.{set}.n{n}.overhead"),
                format!(
                    "overhead of {n} yielding threads on {} against the study's baseline \
                     ({base_n} on {})",
                    if set == "one" { "one CPU" } else { "two CPUs" },
                    if set == "one" { "one CPU" } else { "two" },
                ),
                base,
                c,
            ));
        }
    }
    let mut gains = Vec::new();
    for n in study_ns() {
        if let (Some(a), Some(b)) = (at(&two, n), at(&one, n)) {
            if let Some(f) = overhead_figure(
                format!("study.{NAME}.n{n}.gain"),
                format!("gain of two CPUs over one at N = {n}: one-CPU time / two-CPU time − 1"),
                a,
                b,
            ) {
                if n >= 2 {
                    gains.push(f.value);
                }
                out.push(f);
            }
        }
    }
    if !gains.is_empty() {
        out.push(StudyFigure {
            id: format!("study.{NAME}.mean_gain"),
            description: "mean gain of two CPUs over one, N = 2 … 8192 as measured".into(),
            value: gains.iter().sum::<f64>() / gains.len() as f64,
            ci95: None,
            unit: "%".into(),
            flagged: None,
            doubt: super::doubt_of_figures(out.iter().filter(|f| {
                f.id.starts_with(&format!("study.{NAME}.n")) && f.id.ends_with(".gain")
            })),
        });
    }
    let one_overheads: Vec<f64> = out
        .iter()
        .filter(|f| f.id.starts_with(&format!("study.{NAME}.one.n")))
        .map(|f| f.value)
        .collect();
    if let Some(max) = one_overheads.iter().copied().reduce(f64::max) {
        out.push(StudyFigure {
            id: format!("study.{NAME}.one.max_overhead"),
            description: "the largest overhead on one CPU over every N measured".into(),
            value: max,
            ci95: None,
            unit: "%".into(),
            flagged: None,
            doubt: super::doubt_of_figures(
                out.iter()
                    .filter(|f| f.id.starts_with(&format!("study.{NAME}.one.n"))),
            ),
        });
    }
    out
}

/// The study's tables: the time and the overhead on one CPU and on two, and the gain of two
/// CPUs over one.
pub fn tables(doc: Option<&ResultDoc>) -> Vec<View> {
    let figs = doc.map(figures).unwrap_or_default();
    let one = doc.map(|d| cases_of(d, 1)).unwrap_or_default();
    let two = doc.map(|d| cases_of(d, 2)).unwrap_or_default();
    let t1 = one.iter().find(|(n, _)| *n == 1).map(|p| p.1.median_ns);
    let note = this_machine_note(doc);
    let mut views = Vec::new();
    for (cpus, systems, cases, base_n) in [
        (1u64, &ONE_CPU[..], &one, 1u64),
        (2, &TWO_CPUS[..], &two, 2),
    ] {
        let docs: Vec<_> = systems.iter().map(|(b, _)| baseline(b)).collect();
        let shorts: Vec<String> = systems
            .iter()
            .map(|(_, label)| {
                label
                    .split(',')
                    .next()
                    .unwrap_or(label)
                    .replace("Windows ", "")
            })
            .collect();
        let set = if cpus == 1 { "one" } else { "two" };
        let on = if cpus == 1 { "one CPU" } else { "two CPUs" };
        // Two tables, the times and the overheads, each whole at 80 columns: the published
        // systems' columns beside this machine's.
        let mut times_head = vec!["N".to_string()];
        times_head.extend(shorts.iter().map(|s| format!("{s} ms")));
        times_head.push("here".into());
        let mut over_head = vec!["N".to_string()];
        over_head.extend(shorts.iter().map(|s| format!("{s} %")));
        over_head.extend([format!("here vs N={base_n}"), "here vs ideal".into()]);
        let (mut times, mut overs) = (Vec::new(), Vec::new());
        for n in study_ns() {
            let c = cases.iter().find(|(k, _)| *k == n).map(|p| p.1);
            let mut t = vec![n.to_string()];
            let mut o = vec![n.to_string()];
            for d in &docs {
                t.push(pub_cell(published(d, &format!("n{n}.time")), ""));
                o.push(
                    published(d, &format!("n{n}.overhead"))
                        .map_or("-".into(), |v| format!("{} %", signed(v))),
                );
            }
            t.push(c.map_or("-".into(), |c| fmt_ns(c.median_ns)));
            o.push(super::cell(get(
                &figs,
                &format!("study.{NAME}.{set}.n{n}.overhead"),
            )));
            o.push(match (c, t1) {
                (Some(c), Some(t1)) => {
                    format!("{} %", signed(overhead_pct(c.median_ns, t1, n, cpus)))
                }
                _ => "-".into(),
            });
            times.push(t);
            overs.push(o);
        }
        let mut push = |what: &str, head, rows, first: String| {
            let mut notes = vec![first];
            notes.extend(note.clone());
            views.push(View {
                detail: Vec::new(),
                title: format!("{NAME}: N threads yielding after every step, {on}: {what}"),
                head,
                rows,
                notes,
            });
        };
        push(
            "the time",
            times_head,
            times,
            "The times are each machine's own work and do not compare; the overheads do.".into(),
        );
        push(
            "the overhead",
            over_head,
            overs,
            format!(
                "Overhead against N = {base_n} on {on}, the study's and here. `here vs ideal`: \
                 against T1 / min(N, CPUs), T1 this machine's N = 1 on one CPU."
            ),
        );
    }
    let summary = baseline("windows-yield-summary");
    let mut rows = Vec::new();
    for n in study_ns() {
        let pub_gain = published(&summary, &format!("n{n}.gain"));
        let (a, b) = (
            two.iter().find(|(k, _)| *k == n).map(|p| p.1),
            one.iter().find(|(k, _)| *k == n).map(|p| p.1),
        );
        rows.push(vec![
            n.to_string(),
            pub_gain.map_or("-".into(), |v| format!("{} %", signed(v))),
            a.map_or("-".into(), |c| fmt_ns(c.median_ns)),
            b.map_or("-".into(), |c| fmt_ns(c.median_ns)),
            super::cell(get(&figs, &format!("study.{NAME}.n{n}.gain"))),
        ]);
    }
    rows.push(vec![
        "mean".into(),
        published(&summary, "mean.gain").map_or("-".into(), |v| format!("{} %", signed(v))),
        "".into(),
        "".into(),
        super::cell(get(&figs, &format!("study.{NAME}.mean_gain"))),
    ]);
    let mut notes = vec![
        "gain = one-CPU time / two-CPU time − 1. The study's gain sets the mean of NT4 and 2000 \
         on two CPUs against the mean of 2000 and XP on one; its mean gain is over N = 2 … 8192, \
         as is this machine's (over the N measured)."
            .to_string(),
        "A gain near 0 at every N means the second CPU added no throughput during the run: on a \
         virtual machine the host need not run both vCPUs at once (two plain busy loops in C \
         show the same); the run's load and steal-time lines say what else was seen."
            .to_string(),
        format!(
            "The study's summary: on one CPU the overhead stays at or under 60 % up to 8192 \
             threads; this machine's largest: {}.",
            super::cell(get(&figs, &format!("study.{NAME}.one.max_overhead")))
        ),
    ];
    notes.extend(note);
    views.push(View {
        detail: Vec::new(),
        title: format!("{NAME}: what two CPUs gave over one"),
        head: ["N", "study gain", "here 2 CPUs", "here 1 CPU", "here gain"]
            .map(String::from)
            .to_vec(),
        rows,
        notes,
    });
    views
}

/// Time against N (log axes) and overhead against N, on one CPU and on two: each published
/// system a dashed curve, this machine solid.
pub fn plots(doc: Option<&ResultDoc>) -> Vec<Plot> {
    let figs = doc.map(figures).unwrap_or_default();
    let mut panels = Vec::new();
    let mut all_lines = Vec::new();
    for (cpus, systems) in [(1u64, &ONE_CPU[..]), (2, &TWO_CPUS[..])] {
        let mut times = Vec::new();
        let mut over = Vec::new();
        for (i, (b, label)) in systems.iter().enumerate() {
            let d = baseline(b);
            let style = published_style(i + if cpus == 2 { 3 } else { 0 });
            let pts = |what: &str, scale: f64| {
                study_ns()
                    .into_iter()
                    .filter_map(|n| {
                        let v = published(&d, &format!("n{n}.{what}"))?;
                        Some((
                            n as f64,
                            v * scale,
                            None,
                            format!("{label}, N = {n}: {v} {what}"),
                        ))
                    })
                    .collect::<Vec<_>>()
            };
            times.push(line(label, style, pts("time", 1e6)));
            over.push(line(label, style, pts("overhead", 1.0)));
        }
        if let Some(doc) = doc {
            let cases = cases_of(doc, cpus);
            let set = if cpus == 1 { "one" } else { "two" };
            let label = this_label(doc);
            times.push(line(
                &label,
                this_style(),
                cases
                    .iter()
                    .map(|(n, c)| {
                        (
                            *n as f64,
                            c.median_ns,
                            Some(c.ci95_ns),
                            format!("{}: {}", c.id, fmt_ns(c.median_ns)),
                        )
                    })
                    .collect(),
            ));
            over.push(line(
                &label,
                this_style(),
                study_ns()
                    .into_iter()
                    .filter_map(|n| {
                        let f = get(&figs, &format!("study.{NAME}.{set}.n{n}.overhead"))?;
                        Some((
                            n as f64,
                            f.value,
                            f.ci95,
                            format!("{}: {}", f.id, super::cell(Some(f))),
                        ))
                    })
                    .collect(),
            ));
        }
        let what = if cpus == 1 { "one CPU" } else { "two CPUs" };
        let x = Axis::fit("threads (N)", Unit::Plain, &x_values(&times), Fit::AtData);
        panels.push(Panel {
            title: format!("time for the work, {what}"),
            x: x.clone(),
            y: Axis::fit(
                "time",
                Unit::Ns,
                &y_values(&times),
                Fit::Auto { zero: true },
            ),
            lines: times.clone(),
            refs: Vec::new(),
            bars: Vec::new(),
        });
        let mut ov = y_values(&over);
        ov.push(0.0);
        panels.push(Panel {
            title: format!(
                "overhead against N = {}, {what}",
                if cpus == 1 { 1 } else { 2 }
            ),
            x,
            y: Axis::fit("overhead", Unit::Percent, &ov, Fit::Linear { zero: true }),
            lines: over,
            refs: Vec::new(),
            bars: Vec::new(),
        });
        all_lines.extend(times);
    }
    let refs: Vec<&crate::plot::chart::Line> = all_lines.iter().collect();
    let header = Header::new(
        "windows-yield: N threads calling Sleep(0) (Windows) or sched_yield (this machine) after every step",
        &["Dashed: the study's systems as published; solid: this machine. Times are each machine's \
           own work (log scale); the overheads compare. Whiskers: 95 % confidence intervals."
            .to_string()],
    );
    vec![Plot {
        name: format!("study.{NAME}"),
        svg: grid(&header, &panels, 2, 200.0, &keys(&refs)),
    }]
}

//! The MINIX 3 study's system-call table: the same calls with device drivers in the kernel and
//! in user space, the difference in ns and %, and the cost per second at a call rate.
//!
//! On Linux the same comparison is the same calls served by a file system in the kernel
//! (tmpfs) and by one in a user-space program (FUSE): oscost's `fs` experiment, which times
//! them in interleaved rounds. getpid is served by no file system on Linux: its row shows what
//! the move to user space costs a call it does not touch.

use super::{
    baseline, case, derived, exp_param, get, keys, line, overhead_figure, published,
    published_style, signed, this_label, this_machine_note, this_style, value_text, y_values,
    StudyFigure, StudyInfo,
};
use crate::format::fmt_ns;
use crate::plot::chart::{grid, Axis, Fit, Header, Panel, Unit};
use crate::plot::Plot;
use crate::views::View;
use oscost_model::ids::fs::{self, FUSE, TMPFS};
use oscost_model::ResultDoc;

const NAME: &str = "minix3";

/// What `oscost study` says of it.
pub const INFO: StudyInfo = StudyInfo {
    name: NAME,
    citation: "Jorrit N. Herder, Herbert Bos, Ben Gras, Philip Homburg and Andrew S. Tanenbaum, \
               \"MINIX 3: A Highly Reliable, Self-Repairing Operating System\", ACM SIGOPS \
               Operating Systems Review, 2006",
    ran_on: "MINIX 3 with its device drivers in the kernel and in user space (the machine is not \
             named)",
    measured: "getpid, lseek, open + close, read and write of 64 KiB, creat + write 1 KiB + \
               unlink, each in a loop with the loop's cost subtracted, under both configurations: \
               the difference in ns and %, and its cost per second at 10 000 calls a second",
    baselines: &["minix3-kernel-drivers", "minix3-user-drivers"],
    experiments: &[fs::NAME],
};

/// The study's calls: (oscost call name, the baselines' figure prefix, row label).
const CALLS: [(&str, &str, &str); 6] = [
    ("getpid", "getpid", "getpid"),
    ("lseek", "lseek", "lseek"),
    ("open-close", "open_close", "open + close"),
    ("read64k", "read64k", "read 64 KiB"),
    ("write64k", "write64k", "write 64 KiB"),
    // Short enough for both tables to fit 80 columns whole; a note spells it out.
    (
        "creat-write1k-unlink",
        "creat_write_unlink",
        "creat+wr+unlink",
    ),
];

/// The calls the study's overall slowdown averages: those it gave a slowdown for.
const OVERALL: [&str; 5] = ["getpid", "lseek", "open-close", "read64k", "write64k"];

/// The study priced its difference at this many calls a second.
const STUDY_RATE: f64 = 10_000.0;

fn rate(doc: &ResultDoc) -> f64 {
    exp_param(doc, fs::NAME, "rate_per_s")
        .and_then(|v| v.as_f64())
        .unwrap_or(STUDY_RATE)
}

/// The study's figures for this machine: each call's slowdown in user space, getpid's extra
/// time per second at the call rate, and the overall slowdown averaged as the study did.
pub fn figures(doc: &ResultDoc) -> Vec<StudyFigure> {
    let mut out = Vec::new();
    for (call, _, label) in CALLS {
        let (Some(k), Some(u)) = (
            case(doc, &fs::case(TMPFS, call)),
            case(doc, &fs::case(FUSE, call)),
        ) else {
            continue;
        };
        out.extend(overhead_figure(
            format!("study.{NAME}.{call}.slowdown"),
            format!("{label}: served by a user-space file system (FUSE) over the kernel's (tmpfs)"),
            k,
            u,
        ));
    }
    if let Some(d) = derived(doc, &fs::diff("getpid")) {
        let r = rate(doc);
        out.push(StudyFigure {
            id: format!("study.{NAME}.getpid.extra_at_rate"),
            description: format!(
                "getpid's extra time with the user-space file system, per second at {r} calls a \
                 second"
            ),
            value: d.estimate_ns * r / 1e6,
            ci95: Some(d.ci95_ns.map(|x| x * r / 1e6)),
            unit: "ms/s".into(),
            flagged: d.flagged.clone(),
            doubt: (!d.warnings.is_empty()).then(|| format!("noisy or disturbed: {}", d.id)),
        });
    }
    let slow: Vec<f64> = OVERALL
        .iter()
        .filter_map(|c| get(&out, &format!("study.{NAME}.{c}.slowdown")).map(|f| f.value))
        .collect();
    if slow.len() == OVERALL.len() {
        out.push(StudyFigure {
            id: format!("study.{NAME}.overall.slowdown"),
            description: "overall slowdown: the mean of the five calls' slowdowns, as the study's \
                          22, 11, 9, 8 and 8 % average to its 12 %"
                .into(),
            value: slow.iter().sum::<f64>() / slow.len() as f64,
            ci95: None,
            unit: "%".into(),
            flagged: None,
            doubt: super::doubt_of_figures(
                OVERALL
                    .iter()
                    .filter_map(|c| get(&out, &format!("study.{NAME}.{c}.slowdown"))),
            ),
        });
    }
    out
}

/// The study's tables, published beside this machine's in each: each call's time in the
/// kernel and in user space (tmpfs and FUSE here), then what user space adds (the difference,
/// the slowdown and its cost per second). Two tables, so each fits 80 columns whole.
pub fn tables(doc: Option<&ResultDoc>) -> Vec<View> {
    let (k, u) = (
        baseline("minix3-kernel-drivers"),
        baseline("minix3-user-drivers"),
    );
    let figs = doc.map(figures).unwrap_or_default();
    let r = doc.map_or(STUDY_RATE, rate);
    let us = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v} µs"));
    let (mut times, mut added) = (Vec::new(), Vec::new());
    for (call, fig, label) in CALLS {
        let (pk, pu) = (published(&k, fig), published(&u, fig));
        let pct = published(&u, &format!("{fig}.slowdown"));
        let bound = published(&k, &format!("{fig}.bound"));
        let study_diff = match (pk, pu) {
            (Some(a), Some(b)) => fmt_ns((b - a) * 1e3),
            _ => "-".into(),
        };
        let this = |side: &str| {
            doc.and_then(|d| case(d, &fs::case(side, call)))
                .map_or("-".into(), |c| fmt_ns(c.median_ns))
        };
        let diff = doc.and_then(|d| derived(d, &fs::diff(call)));
        times.push(vec![
            label.to_string(),
            match (pk, bound) {
                (Some(v), _) => format!("{v} µs"),
                (None, Some(b)) => format!("< {b} µs"),
                _ => "-".into(),
            },
            us(pu),
            this(TMPFS),
            this(FUSE),
        ]);
        added.push(vec![
            label.to_string(),
            study_diff,
            pct.map_or("-".into(), |v| format!("+{v} %")),
            diff.map_or("-".into(), |d| fmt_ns(d.estimate_ns)),
            super::cell(get(&figs, &format!("study.{NAME}.{call}.slowdown"))),
            diff.map_or("-".into(), |d| format!("{}/s", fmt_ns(d.estimate_ns * r))),
        ]);
    }
    added.push(vec![
        "overall".into(),
        "".into(),
        published(&u, "overall.slowdown").map_or("-".into(), |v| format!("≈ +{v} %")),
        "".into(),
        super::cell(get(&figs, &format!("study.{NAME}.overall.slowdown"))),
        "".into(),
    ]);
    let extra = published(&u, "getpid.extra_at_rate");
    let mut notes = vec![
        format!(
            "diff: user space less the kernel; %: the slowdown; cost/s here: the difference's \
             CPU time per second at {r} calls a second. creat+wr+unlink: creat, write 1 KiB, \
             unlink."
        ),
        format!(
            "The study priced getpid's 180 ns at 10 000 calls a second as {} ms per second \
             (its own figures, 1.011 − 0.831 µs, give 1.8 ms); this machine: {}. overall: the \
             mean of the five slowdowns the study gave (22, 11, 9, 8, 8 % average to 11.6 %).",
            extra.map_or("-".into(), |v| v.to_string()),
            super::cell(get(&figs, &format!("study.{NAME}.getpid.extra_at_rate")))
        ),
    ];
    notes.extend(this_machine_note(doc));
    // Each head says whose figure it is, so that a narrower terminal's fold never leaves a
    // bare `%`.
    let head = |h: &[&str]| h.iter().map(|s| s.to_string()).collect();
    vec![
        View {
            detail: Vec::new(),
            title: format!(
                "{NAME}: each call, MINIX 3 (2006) with drivers in the kernel and in user \
                 space, beside this machine's tmpfs and FUSE"
            ),
            head: head(&["call", "MINIX kernel", "MINIX user", "tmpfs", "FUSE"]),
            rows: times,
            notes: vec![
                "study: MINIX 3's figures as published; this machine: the same calls \
                         on a file system in the kernel (tmpfs) and on one served by a \
                         user-space program (FUSE), medians."
                    .to_owned(),
            ],
        },
        View {
            detail: Vec::new(),
            title: format!("{NAME}: what user space adds, MINIX 3 (2006) beside this machine"),
            head: head(&[
                "call",
                "MINIX diff",
                "MINIX %",
                "diff here",
                "% here",
                "cost/s here",
            ]),
            rows: added,
            notes,
        },
    ]
}

/// Each call's cost in the kernel and in user space, one panel per call: the study's MINIX 3
/// dashed, this machine's tmpfs and FUSE solid.
pub fn plots(doc: Option<&ResultDoc>) -> Vec<Plot> {
    let (k, u) = (
        baseline("minix3-kernel-drivers"),
        baseline("minix3-user-drivers"),
    );
    let mut panels = Vec::new();
    let mut all = Vec::new();
    for (call, fig, label) in CALLS {
        let mut lines = Vec::new();
        let study: Vec<_> = [(1.0, published(&k, fig)), (2.0, published(&u, fig))]
            .into_iter()
            .filter_map(|(x, v)| Some((x, v? * 1e3, None, format!("MINIX 3: {} µs", v?))))
            .collect();
        lines.push(line(
            "MINIX 3 (2006), as published",
            published_style(0),
            study,
        ));
        if let Some(doc) = doc {
            let pts: Vec<_> = [(1.0, TMPFS), (2.0, FUSE)]
                .into_iter()
                .filter_map(|(x, side)| {
                    let c = case(doc, &fs::case(side, call))?;
                    Some((
                        x,
                        c.median_ns,
                        Some(c.ci95_ns),
                        format!("{}: {}", c.id, fmt_ns(c.median_ns)),
                    ))
                })
                .collect();
            lines.push(line(&this_label(doc), this_style(), pts));
        }
        if lines.iter().all(|l| l.points.is_empty()) {
            continue;
        }
        let mut ys = y_values(&lines);
        ys.push(0.0);
        panels.push(Panel {
            title: label.to_string(),
            x: Axis::fit(
                "1 kernel, 2 user space",
                Unit::Plain,
                &[1.0, 2.0],
                Fit::AtData,
            ),
            y: Axis::fit("per call", Unit::Ns, &ys, Fit::Auto { zero: true }),
            lines: lines.clone(),
            refs: Vec::new(),
            bars: Vec::new(),
        });
        all.extend(lines);
    }
    let refs: Vec<&crate::plot::chart::Line> = all.iter().collect();
    let header = Header::new(
        "minix3: each call served in the kernel (1) and in user space (2)",
        &[
            "Dashed: MINIX 3 with drivers in the kernel and in user space, as published (most \
           calls were published as a slowdown only); solid: this machine, tmpfs and FUSE. \
           Whiskers: 95 % confidence intervals."
                .to_string(),
        ],
    );
    let _ = (signed, value_text);
    vec![Plot {
        name: format!("study.{NAME}"),
        svg: grid(&header, &panels, 3, 150.0, &keys(&refs)),
    }]
}

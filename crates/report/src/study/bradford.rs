//! Bradford's context-switch study: a ring of N threads, each holding its own lock and taking
//! its neighbour's (csfast5), one extra lock as the token; two threads passing a byte through
//! two pipes (cspipe2a); and Table 1, each primitive's own cost with no switch. Time per
//! switch = elapsed / hand-overs; switch cost = that − the lock's own cost.
//!
//! oscost's counterparts: `lockring` (the same ring of pthread mutexes, the pipe pair, the
//! mutex's own cost in the same run) and `primitives` (Table 1's Linux rows). The Win32 rows
//! have no Linux counterpart.

use super::{
    baseline, case, derived, keys, line, published, published_style, this_label, this_machine_note,
    this_style, value_text, x_values, y_values, StudyFigure, StudyInfo,
};
use crate::format::fmt_ns;
use crate::plot::chart::{grid, Axis, Fit, Header, Panel, Reference, Unit};
use crate::plot::Plot;
use crate::views::View;
use oscost_model::ids::lockring::{self, Id, CRITICAL_SECTION, MUTEX};
use oscost_model::ids::primitives;
use oscost_model::{CaseResult, PublishedDoc, ResultDoc};

const NAME: &str = "bradford";

/// What `oscost study` says of it.
pub const INFO: StudyInfo = StudyInfo {
    name: NAME,
    citation: "Edward G. Bradford, \"Runtime: Context switching\", IBM developerWorks, 2002",
    ran_on: "Linux 2.4.2 (Red Hat 7.2), Windows 2000 Advanced Server SP2 and Windows XP \
             Professional on the same ThinkPad-class hardware",
    measured: "the time per switch in a ring of threads passing a lock (csfast5) and a pipe \
               token (cspipe2a), and each primitive's own cost with no switch (Table 1)",
    baselines: &["linux-2.4-2002", "windows-2000-2002", "windows-xp-2002"],
    experiments: &[lockring::NAME, primitives::NAME],
};

/// The published systems: (baseline, column head).
const SYSTEMS: [(&str, &str); 3] = [
    ("windows-2000-2002", "Win2k AS"),
    ("windows-xp-2002", "WinXP"),
    ("linux-2.4-2002", "Linux 2.4.2"),
];

/// The ring's lock in a run: oscost's rings of pthread mutexes on Linux, or the Windows agent's
/// rings of Critical Sections, the lock the study's csfast5 used on Windows. (the lock's part
/// of the ids, the lock's name)
fn lock_of(doc: &ResultDoc) -> (&'static str, &'static str) {
    let has = |id: Id| case(doc, &id.to_string()).is_some();
    let windows = has(Id::Own {
        lock: CRITICAL_SECTION,
    }) || (1..=16).any(|k| has(ring_case(CRITICAL_SECTION, 1 << k)));
    if windows {
        (CRITICAL_SECTION, "Critical Sections")
    } else {
        (MUTEX, "pthread mutexes")
    }
}

/// A ring of `tasks` threads and one token.
fn ring_case(lock: &str, tasks: usize) -> Id<'_> {
    Id::Case {
        lock,
        tasks,
        tokens: 1,
    }
}

/// The ring sizes a run measured with one token, by N, with their switch-cost figure.
fn ring(doc: &ResultDoc) -> Vec<(u64, &CaseResult)> {
    let lock = lock_of(doc).0;
    let mut v: Vec<(u64, &CaseResult)> = (1..=16)
        .map(|k| 1usize << k)
        .filter_map(|n| Some((n as u64, case(doc, &ring_case(lock, n).to_string())?)))
        .collect();
    v.sort_by_key(|p| p.0);
    v
}

/// The study's figures for this machine: the ring's time per switch (the median over the ring
/// sizes measured, as the study gave one figure for its chart) and the switch cost.
pub fn figures(doc: &ResultDoc) -> Vec<StudyFigure> {
    let ring = ring(doc);
    let mut out = Vec::new();
    let cases: Vec<&CaseResult> = ring.iter().map(|p| p.1).collect();
    if ring.is_empty() {
        return out;
    }
    let per_switch = oscost_stats::median(&ring.iter().map(|p| p.1.median_ns).collect::<Vec<_>>());
    let flagged = super::flag_of(&cases);
    let doubt = super::doubt_of(&cases);
    let (lock_id, lock) = lock_of(doc);
    out.push(StudyFigure {
        id: format!("study.{NAME}.ring.time_per_switch"),
        description: format!(
            "time per switch in the ring of {lock}, one token: the median over the ring sizes \
             measured"
        ),
        value: per_switch,
        ci95: None,
        unit: "ns".into(),
        flagged: flagged.clone(),
        doubt: doubt.clone(),
    });
    if let Some(own) = case(doc, &Id::Own { lock: lock_id }.to_string()) {
        out.push(StudyFigure {
            id: format!("study.{NAME}.ring.switch_cost"),
            description: format!(
                "switch cost: the time per switch less the lock's own cost ({} of {lock})",
                own.id
            ),
            value: per_switch - own.median_ns,
            ci95: None,
            unit: "ns".into(),
            flagged,
            doubt: super::doubt_of(&[&cases[..], &[own]].concat()),
        });
    }
    if let (Some(pipe), Some(_)) = (case(doc, &Id::Pipe { tasks: 2 }.to_string()), ring.first()) {
        out.push(StudyFigure {
            id: format!("study.{NAME}.pipe_over_lock"),
            description: "the pipe token's time per switch over the lock ring's: what the \
                          primitive adds"
                .into(),
            value: pipe.median_ns / per_switch,
            ci95: None,
            unit: "x".into(),
            flagged: super::flag_of(&[pipe]),
            doubt: super::doubt_of(&[&cases[..], &[pipe]].concat()),
        });
    }
    out
}

/// Table 1 with this machine's Linux rows, and the ring's figures per system and per N.
pub fn tables(doc: Option<&ResultDoc>) -> Vec<View> {
    let docs: Vec<_> = SYSTEMS.iter().map(|(b, _)| baseline(b)).collect();
    let figs = doc.map(figures).unwrap_or_default();
    let mut views = vec![table1(doc, &docs), ring_table(doc, &docs, &figs)];
    if let Some(doc) = doc {
        views.extend(by_size_table(doc, &figs));
    }
    views
}

/// A published figure in µs, empty when the study has none.
fn us(v: Option<f64>) -> String {
    v.map_or(String::new(), |v| format!("{v} µs"))
}

/// This machine's median for a case, marked when its checks failed; "-" when not measured.
fn this_cell(doc: Option<&ResultDoc>, id: &str) -> String {
    doc.and_then(|d| case(d, id)).map_or("-".into(), |c| {
        let v = fmt_ns(c.median_ns);
        if c.checks_passed {
            v
        } else {
            format!("{v} !")
        }
    })
}

/// The head of a table comparing the study's systems with this machine.
fn systems_head(first: &str) -> Vec<String> {
    let mut head = vec![first.to_string()];
    head.extend(SYSTEMS.iter().map(|(_, h)| h.to_string()));
    head.push("this machine".into());
    head
}

/// Table 1: each primitive's own cost with no switch.
fn table1(doc: Option<&ResultDoc>, docs: &[PublishedDoc]) -> View {
    // Short, so that the published columns and this machine's fit 80 columns in one table.
    let none = "none on Linux";
    // The Windows agent measures the Win32 rows; a Linux run has none of them.
    let win = |id: &'static str| {
        if doc.and_then(|d| case(d, id)).is_some() {
            id
        } else {
            ""
        }
    };
    let mut t1_rows = vec![
        ("Mutex (Win32)", "mutex", win(primitives::WIN32_MUTEX), none),
        (
            "Semaphore (Win32)",
            "semaphore",
            win(primitives::WIN32_SEMAPHORE),
            none,
        ),
        (
            "Critical Section (Win32)",
            "critical_section",
            win(primitives::CRITICAL_SECTION),
            none,
        ),
        ("SVR5 semaphore", "sysv_sem", primitives::SYSV_SEM, ""),
        ("POSIX semaphore", "posix_sem", primitives::POSIX_SEM, ""),
        (
            "pthread_mutex",
            "pthread_mutex",
            primitives::PTHREAD_MUTEX,
            "",
        ),
    ];
    if !win(primitives::SRWLOCK).is_empty() {
        t1_rows.push((
            "SRWLock (Win32, not in the study)",
            "",
            primitives::SRWLOCK,
            "",
        ));
    }
    let mut rows = Vec::new();
    for (label, fig, id, why) in t1_rows {
        let mut row = vec![label.to_string()];
        row.extend(docs.iter().map(|d| us(published(d, fig))));
        row.push(if id.is_empty() {
            why.into()
        } else {
            this_cell(doc, id)
        });
        rows.push(row);
    }
    let from_windows = !win(primitives::CRITICAL_SECTION).is_empty();
    let mut notes = vec![if from_windows {
        "µs per call with no switch. This machine times the pair (wait + release, enter + \
         leave); the study does not say whether its figure is the pair or one call. This run \
         came from oscost's Windows agent: its Win32 rows are this machine's and its Linux rows \
         stay empty (compare it with a Linux run of the same machine for both)."
            .to_string()
    } else {
        "µs per call with no switch. This machine times the pair (lock + unlock, post + wait); \
         the study does not say whether its figure is the pair or one call. A Win32 Mutex or \
         Semaphore is a kernel object reached by a handle and a Critical Section a user-space \
         lock over a kernel event: Linux has neither, so those rows stay empty here (the nearest \
         Linux figures are the SysV semaphore and the pthread mutex rows)."
            .to_string()
    }];
    notes.extend(this_machine_note(doc));
    View {
        detail: Vec::new(),
        title: format!("{NAME}: Table 1, each primitive's own cost with no switch"),
        head: systems_head("primitive"),
        rows,
        notes,
    }
}

/// The ring of locks with one token: time per switch, the lock's own cost and the switch cost,
/// per published system and on this machine.
fn ring_table(doc: Option<&ResultDoc>, docs: &[PublishedDoc], figs: &[StudyFigure]) -> View {
    let fig = |id: &str| super::cell(super::get(figs, id));
    let mut rows = Vec::new();
    for (label, what, mine) in [
        (
            "per switch, one token",
            "ring.time_per_switch",
            fig(&format!("study.{NAME}.ring.time_per_switch")),
        ),
        (
            "the lock's own cost",
            "",
            this_cell(
                doc,
                &Id::Own {
                    lock: doc.map_or(MUTEX, |d| lock_of(d).0),
                }
                .to_string(),
            ),
        ),
        (
            "switch cost",
            "ring.switch_cost",
            fig(&format!("study.{NAME}.ring.switch_cost")),
        ),
    ] {
        let mut row = vec![label.to_string()];
        for (d, (b, _)) in docs.iter().zip(SYSTEMS) {
            row.push(if what.is_empty() {
                let lock = if b.starts_with("linux") {
                    "pthread_mutex"
                } else {
                    "critical_section"
                };
                us(published(d, lock))
            } else {
                us(published(d, what))
            });
        }
        row.push(mine);
        rows.push(row);
    }
    let twice = |w: &str| -> String {
        let l = published(&docs[2], "ring.switch_cost");
        let x = docs
            .iter()
            .find(|d| d.name == w)
            .and_then(|d| published(d, "ring.switch_cost"));
        match (l, x) {
            (Some(l), Some(x)) => format!("{:.2}", l / x),
            _ => "-".into(),
        }
    };
    // A Windows agent's run has the other half of the study's comparison.
    let other_half = if doc.is_some_and(|d| lock_of(d).0 == CRITICAL_SECTION) {
        "this run is the Windows half: `oscost compare` with a Linux run of the same machine sets \
         each ring beside the other"
    } else {
        "that needs Windows on this machine, so it has no figure here"
    };
    let mut notes = vec![
        format!(
            "The study reads one time per switch off its chart for an unstated N; this machine's \
             is the median over the ring sizes it measured (each below). Its switch cost subtracts \
             the same run's lock + unlock. The study found Linux spending about twice Windows' \
             switch cost ({} x Windows 2000, {} x XP): {other_half}.",
            twice("windows-2000-2002"),
            twice("windows-xp-2002")
        ),
        "The study prints Linux's switch cost as 3.56 − 0.262 = 3.2 µs; the subtraction gives \
         3.298."
            .to_string(),
    ];
    notes.extend(this_machine_note(doc));
    View {
        detail: Vec::new(),
        title: format!("{NAME}: the ring of locks, one token"),
        head: systems_head("ring of locks (csfast5)"),
        rows,
        notes,
    }
}

/// A check cell: passed or failed.
fn checks_cell(c: &CaseResult) -> String {
    if c.checks_passed {
        "✓".into()
    } else {
        "FAILED".into()
    }
}

/// A case's context switches per hand-over, as the kernel counted them.
fn switches_per(c: &CaseResult) -> Option<String> {
    c.counters
        .iter()
        .find(|(k, _)| k.contains("switches_per"))
        .map(|(_, v)| format!("{v:.2}"))
}

/// This machine's time per switch for each ring size, the pipe pair and their ratio; none when
/// the run measured none of them.
fn by_size_table(doc: &ResultDoc, figs: &[StudyFigure]) -> Option<View> {
    let mut rows = Vec::new();
    for (n, c) in ring(doc) {
        let cost = derived(doc, &lockring::switch_cost(&c.id));
        rows.push(vec![
            format!("lock ring, N = {n}"),
            fmt_ns(c.median_ns),
            cost.map_or("-".into(), |d| fmt_ns(d.estimate_ns)),
            switches_per(c).unwrap_or("-".into()),
            checks_cell(c),
        ]);
    }
    if let Some(p) = case(doc, &Id::Pipe { tasks: 2 }.to_string()) {
        rows.push(vec![
            "pipe token (cspipe2a), 2 threads".into(),
            fmt_ns(p.median_ns),
            "-".into(),
            switches_per(p).unwrap_or("-".into()),
            checks_cell(p),
        ]);
    }
    if let Some(f) = super::get(figs, &format!("study.{NAME}.pipe_over_lock")) {
        rows.push(vec![
            "pipe over lock".into(),
            value_text(f.value, &f.unit),
            "".into(),
            "".into(),
            "".into(),
        ]);
    }
    if rows.is_empty() {
        return None;
    }
    Some(View {
        detail: Vec::new(),
        title: format!("{NAME}: this machine's time per switch by ring size"),
        head: [
            "ring",
            "per switch",
            "switch cost",
            "switches/hand-over",
            "checks",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        notes: vec![
            "switches/hand-over: context switches the kernel counted per lock hand-over \
             (1 expected with one token on one CPU)."
                .into(),
        ],
    })
}

/// Time per switch against the ring's size: this machine's rings and pipe pair, the study's
/// three systems as levels (the study does not give N).
pub fn plots(doc: Option<&ResultDoc>) -> Vec<Plot> {
    let mut lines = Vec::new();
    let mut refs = Vec::new();
    for (i, (b, label)) in SYSTEMS.iter().enumerate() {
        let d = baseline(b);
        if let Some(v) = published(&d, "ring.time_per_switch") {
            refs.push(Reference {
                label: format!("{label} (2002): {v} µs, N not given"),
                y: v * 1e3,
                band: None,
                colour: published_style(i).colour,
                dash: "5 3",
            });
        }
    }
    if let Some(doc) = doc {
        let ring = ring(doc);
        lines.push(line(
            &format!("{}: lock ring", this_label(doc)),
            this_style(),
            ring.iter()
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
        if let Some(p) = case(doc, &Id::Pipe { tasks: 2 }.to_string()) {
            let mut st = this_style().points(5.0);
            st.marker = Some(crate::plot::chart::Marker::Square);
            lines.push(line(
                &format!("{}: pipe token", this_label(doc)),
                st,
                vec![(
                    2.0,
                    p.median_ns,
                    Some(p.ci95_ns),
                    format!("{}: {}", p.id, fmt_ns(p.median_ns)),
                )],
            ));
        }
    }
    let mut xs = x_values(&lines);
    if xs.is_empty() {
        xs = vec![2.0, 128.0];
    }
    let mut ys = y_values(&lines);
    ys.extend(refs.iter().map(|r| r.y));
    let panel = Panel {
        title: "time per switch, one token".into(),
        x: Axis::fit("threads in the ring (N)", Unit::Plain, &xs, Fit::AtData),
        y: Axis::fit("time per switch", Unit::Ns, &ys, Fit::Auto { zero: true }),
        lines: lines.clone(),
        refs: refs.clone(),
        bars: Vec::new(),
    };
    let line_refs: Vec<&crate::plot::chart::Line> = lines.iter().collect();
    let mut k = keys(&line_refs);
    k.extend(
        refs.iter()
            .map(|r| crate::plot::chart::Key::Level(r.label.clone(), r.colour, r.dash)),
    );
    let header = Header::new(
        "bradford: context switches through a ring of locks (csfast5) and a pipe token (cspipe2a)",
        &["Dashed levels: the study's systems as published, read off its chart for an unstated N; \
           solid: this machine, each ring size. Whiskers: 95 % confidence intervals."
            .to_string()],
    );
    vec![Plot {
        name: format!("study.{NAME}"),
        svg: grid(&header, &[panel], 1, 260.0, &k),
    }]
}

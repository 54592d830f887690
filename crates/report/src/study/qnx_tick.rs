//! The QNX tick study: the same work as one flow, N threads and N processes while the system
//! tick shrinks from 1 ms to 9.2 µs; the time and cycles of each, ≈ 1256 cycles per extra tick,
//! a switch (374 cycles between threads, 617 between processes) every fourth tick, so switching
//! is "under 10 %" of servicing the clock, and the useful work's share falling as the tick
//! shrinks (its Fig. 2.7).
//!
//! Linux cannot change its tick at run time: oscost's `tick-forms` runs the three forms under
//! periodic timer events at chosen periods, counts the events and the switches where they
//! happen, and does the study's subtraction on them.

use super::{
    baseline, case, get, keys, line, published, published_style, signed, this_label,
    this_machine_note, this_style, x_values, y_values, StudyFigure, StudyInfo,
};
use crate::format::fmt_ns;
use crate::plot::chart::{grid, Axis, Fit, Header, Line, Panel, Unit};
use crate::plot::Plot;
use crate::views::View;
use oscost_model::ids::tick::period_name;
use oscost_model::ids::tick_forms::{self, Case, Id};
use oscost_model::{CaseResult, PublishedDoc, ResultDoc};

const NAME: &str = "qnx-tick";

/// What `oscost study` says of it.
pub const INFO: StudyInfo = StudyInfo {
    name: NAME,
    citation: "An untitled text on QNX (in Russian; author and date not given)",
    ran_on: "QNX (version not given) on a processor whose cycle counter ran at about 534.65 MHz, \
             at nice −19",
    measured: "the same work as one flow, N threads and N forked processes at five system-tick \
               periods from 0.9998 ms to 9.2 µs: time and cycles, cycles per extra tick, and \
               the share of switching in servicing the clock",
    baselines: &["qnx-tick"],
    experiments: &[tick_forms::NAME],
};

/// The study's ticks: (figure infix, period in ns).
const TICKS: [(&str, f64); 5] = [
    ("tick1ms", 999_847.5),
    ("tick49us", 49_447.0),
    ("tick19us", 19_276.0),
    ("tick11us", 10_895.0),
    ("tick9us", 9_219.0),
];
/// The policies the summary figures are taken from, first measured first: QNX's default is
/// round-robin.
const SUMMARY_POLICIES: [&str; 3] = ["rr", "fifo", "other"];
/// The study's forms and oscost's names for them.
const FORMS: [(&str, &str); 3] = [
    ("single", "single"),
    ("threads", "threads"),
    ("forks", "processes"),
];

/// The periods a run measured for `policy`, shortest last, as (name, ns).
fn periods(doc: &ResultDoc, policy: &str) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = doc
        .experiments
        .iter()
        .filter(|e| e.name == tick_forms::NAME)
        .flat_map(|e| &e.cases)
        .filter_map(|c| match Id::parse(&c.id)? {
            Id::Case(Case {
                form: "single",
                policy: p,
                period_ns: Some(ns),
            }) if p == policy => Some((period_name(ns), ns)),
            _ => None,
        })
        .collect();
    v.sort_by_key(|p| std::cmp::Reverse(p.1));
    v.dedup_by(|a, b| a.0 == b.0);
    v
}

/// The policy the summary figures and the chart are taken from: the first of
/// [`SUMMARY_POLICIES`] the run measured.
fn summary_policy(doc: &ResultDoc) -> &'static str {
    SUMMARY_POLICIES
        .into_iter()
        .find(|p| !periods(doc, p).is_empty())
        .unwrap_or("other")
}

/// The point of `form` under `policy` with a timer of `period_ns`, or with none.
fn point<'a>(
    doc: &'a ResultDoc,
    form: &str,
    policy: &str,
    period_ns: Option<u64>,
) -> Option<&'a CaseResult> {
    case(doc, &tick_forms::case(form, policy, period_ns))
}

fn counter(c: &CaseResult, key: &str) -> Option<f64> {
    c.counters.get(key).copied()
}

/// `(cycles(P) − cycles(none)) / (events(P) − events(none))`: the study's subtraction.
/// What a cell of cycles per event says when the run with the events took no more cycles than
/// the run without: no cost this run could tell from its noise, not a negative cost.
const NO_EXTRA: &str = "none seen";

/// The note under a table with a [`NO_EXTRA`] cell.
const NO_EXTRA_NOTE: &str = "none seen: the run with the timer events took no more cycles than the run without them, so what the events cost is within this run's noise, not below zero (the study's sizes, --full, run longer)";

fn per_extra(loaded: &CaseResult, base: &CaseResult, what: &str) -> Option<f64> {
    let de = counter(loaded, "events")? - counter(base, "events").unwrap_or(0.0);
    let dv = counter(loaded, what)? - counter(base, what)?;
    (de > 0.0).then(|| dv / de)
}

fn fig(
    id: String,
    description: String,
    value: f64,
    unit: &str,
    cases: &[&CaseResult],
) -> StudyFigure {
    StudyFigure {
        id,
        description,
        value,
        ci95: None,
        unit: unit.into(),
        flagged: super::flag_of(cases),
        doubt: super::doubt_of(cases),
    }
}

/// The study's figures for this machine, per form, policy and period, and the study's summary
/// figures at the shortest period measured.
pub fn figures(doc: &ResultDoc) -> Vec<StudyFigure> {
    let mut out = Vec::new();
    for policy in ["other", "fifo", "rr"] {
        for (name, ns) in periods(doc, policy) {
            for (_, form) in FORMS {
                let (Some(base), Some(c)) = (
                    point(doc, form, policy, None),
                    point(doc, form, policy, Some(ns)),
                ) else {
                    continue;
                };
                let stem = format!("study.{NAME}.{form}.{policy}.{name}");
                if let Some(v) = per_extra(c, base, "cycles") {
                    out.push(fig(
                        format!("{stem}.cycles_per_event"),
                        format!("{form}, {policy}: extra cycles per extra timer event at {name}"),
                        v,
                        "cycles",
                        &[c, base],
                    ));
                }
                if let Some(v) = per_extra(c, base, "switches") {
                    out.push(fig(
                        format!("{stem}.switches_per_event"),
                        format!("{form}, {policy}: extra switches per extra timer event at {name}"),
                        v,
                        "x",
                        &[c, base],
                    ));
                }
                if c.median_ns > 0.0 {
                    out.push(fig(
                        format!("{stem}.useful_share"),
                        format!("{form}, {policy}: the work's share of the time at {name}"),
                        base.median_ns / c.median_ns * 100.0,
                        "% of time",
                        &[c, base],
                    ));
                }
            }
        }
    }
    // The study's own summary: the single flow at the shortest period against no events,
    // under round-robin (QNX's default policy, whose rescheduling interval the study gives)
    // where it was measured, else FIFO, else the default policy.
    let policy = summary_policy(doc);
    let ps = periods(doc, policy);
    if let Some((short, _)) = ps.last() {
        let stem = format!("study.{NAME}.single.{policy}.{short}");
        if let Some(f) = get(&out, &format!("{stem}.cycles_per_event")).cloned() {
            out.push(StudyFigure {
                id: format!("study.{NAME}.cycles_per_event"),
                description: format!(
                    "extra cycles per extra timer event, one flow at the shortest period \
                     measured ({short}, {policy}) against none"
                ),
                ..f
            });
        }
        for form in ["threads", "processes"] {
            let sw = case(doc, &tick_forms::switch(form));
            let per = get(
                &out,
                &format!("study.{NAME}.{form}.{policy}.{short}.switches_per_event"),
            )
            .map(|f| f.value);
            let cpe = get(
                &out,
                &format!("study.{NAME}.{form}.{policy}.{short}.cycles_per_event"),
            )
            .map(|f| f.value);
            if let Some(sw) = sw {
                out.push(fig(
                    format!("study.{NAME}.switch.{form}"),
                    format!("a switch between two {form} on one CPU, in counter cycles"),
                    sw.median_cycles,
                    "cycles",
                    &[sw],
                ));
                if let Some(per) = per {
                    let v = sw.median_cycles * per;
                    out.push(fig(
                        format!("study.{NAME}.switch_per_event.{form}"),
                        format!(
                            "cycles of switching per timer event for {form}: a switch's cycles × \
                             the switches counted per event at {short}"
                        ),
                        v,
                        "cycles",
                        &[sw],
                    ));
                    if let Some(cpe) = cpe.filter(|c| *c > 0.0) {
                        out.push(fig(
                            format!("study.{NAME}.switch_share.{form}"),
                            format!(
                                "switching's share of what a timer event costs {form} at {short}"
                            ),
                            v / cpe * 100.0,
                            "% of event",
                            &[sw],
                        ));
                    }
                }
            }
        }
    }
    for policy in ["other", "fifo", "rr"] {
        for (name, ns) in periods(doc, policy) {
            let t: Vec<f64> = FORMS
                .iter()
                .filter_map(|(_, f)| point(doc, f, policy, Some(ns)).map(|c| c.median_ns))
                .collect();
            if t.len() == FORMS.len() {
                let (lo, hi) = t
                    .iter()
                    .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
                out.push(fig(
                    format!("study.{NAME}.form_spread.{policy}.{name}"),
                    format!(
                        "how far apart the three forms' times are at {name} ({policy}): \
                         (max − min) / min"
                    ),
                    (hi / lo - 1.0) * 100.0,
                    "%",
                    &[],
                ));
            }
        }
    }
    out
}

/// The study's table as published with what it derives, this machine's grid beside it, and
/// the derived figures side by side.
pub fn tables(doc: Option<&ResultDoc>) -> Vec<View> {
    let b = baseline(NAME);
    let mut views = vec![published_table(&b)];
    let Some(doc) = doc else {
        return views;
    };
    let figs = figures(doc);
    views.extend(
        ["other", "fifo", "rr"]
            .into_iter()
            .flat_map(|policy| forms_tables(doc, &figs, policy)),
    );
    views.push(derived_table(doc, &b, &figs));
    views
}

/// The study's own table, with what it derives from it.
fn published_table(b: &PublishedDoc) -> View {
    let t_long = |form: &str| published(b, &format!("{form}.tick1ms.time"));
    let mut rows = Vec::new();
    for (tick, ns) in TICKS {
        let t = |form: &str| published(b, &format!("{form}.{tick}.time"));
        let (s, th, fk) = (t("single"), t("threads"), t("forks"));
        let spread = match (s, th, fk) {
            (Some(a), Some(b2), Some(c)) => {
                let lo = a.min(b2).min(c);
                format!("{:.1} %", (a.max(b2).max(c) / lo - 1.0) * 100.0)
            }
            _ => "-".into(),
        };
        let growth = match (s, t_long("single")) {
            (Some(a), Some(b0)) => format!("{} %", signed((a / b0 - 1.0) * 100.0)),
            _ => "-".into(),
        };
        let share = match (s, t_long("single")) {
            (Some(a), Some(b0)) => format!("{:.1} %", b0 / a * 100.0),
            _ => "-".into(),
        };
        let f = |v: Option<f64>| v.map_or("-".into(), |v| v.to_string());
        rows.push(vec![
            format!("{} µs", crate::plot::chart::sig(ns / 1e3)),
            f(s),
            f(th),
            f(fk),
            spread,
            growth,
            share,
        ]);
    }
    View {
        detail: Vec::new(),
        title: format!("{NAME}: the study's table (QNX, as published) and what it derives"),
        head: [
            "tick",
            "single ms",
            "threads ms",
            "forks ms",
            "apart",
            "vs 1 ms",
            "useful",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        notes: vec![
            "apart: how far the three forms are apart, (slowest − fastest) / fastest at each \
             tick. The study says they differ by only 0.5–2 %: its own table bears that out at \
             1 ms (0.7 %) and 19 µs (1.7 %), not at 49 µs (6.6 %), 11 µs (2.1 %) or 9.2 µs \
             (3.0 %). vs 1 ms: the single flow's time against its time at the 1 ms tick. \
             useful: the useful share, the time at the longest tick over the time at this one \
             (its Fig. 2.7)."
                .into(),
        ],
    }
}

/// This machine's grids under one scheduling policy, each whole at 80 columns: the forms'
/// times at each period, then what each timer event cost them; none when the run measured no
/// period under it.
fn forms_tables(doc: &ResultDoc, figs: &[StudyFigure], policy: &str) -> Vec<View> {
    let ps = periods(doc, policy);
    if ps.is_empty() {
        return Vec::new();
    }
    let (mut times, mut costs) = (Vec::new(), Vec::new());
    let none = ("none".to_string(), None);
    for (name, ns) in std::iter::once(none).chain(ps.into_iter().map(|(n, ns)| (n, Some(ns)))) {
        let t = |form: &str| point(doc, form, policy, ns);
        let cell = |c: Option<&CaseResult>| {
            c.map_or("-".into(), |c| {
                let v = fmt_ns(c.median_ns);
                if c.checks_passed {
                    v
                } else {
                    format!("{v} !")
                }
            })
        };
        let fig = |form: &str, what: &str| {
            get(figs, &format!("study.{NAME}.{form}.{policy}.{name}.{what}"))
        };
        let cycles = |form: &str| match fig(form, "cycles_per_event") {
            None => "-".into(),
            Some(f) if f.value <= 0.0 => NO_EXTRA.into(),
            Some(f) => crate::plot::chart::sig(f.value),
        };
        times.push(vec![
            name.clone(),
            cell(t("single")),
            cell(t("threads")),
            cell(t("processes")),
            t("single")
                .and_then(|c| counter(c, "events"))
                .map_or("-".into(), |e| format!("{e:.0}")),
            fig("single", "useful_share").map_or("-".into(), |f| {
                format!("{} %", crate::plot::chart::sig(f.value))
            }),
        ]);
        costs.push(vec![
            name.clone(),
            cycles("single"),
            cycles("threads"),
            cycles("processes"),
            fig("threads", "switches_per_event")
                .map_or("-".into(), |f| crate::plot::chart::sig(f.value)),
            get(figs, &format!("study.{NAME}.form_spread.{policy}.{name}"))
                .map_or("-".into(), |f| format!("{:.1} %", f.value)),
        ]);
    }
    let policy_name = format!("SCHED_{}", policy.to_uppercase());
    let mut notes = vec![format!(
        "{policy_name}: the same work as one flow, N threads and N processes on one CPU under \
         periodic timer events (none: undisturbed). events: timer events counted in the \
         single flow's run; useful: the time undisturbed over the time at this period."
    )];
    notes.extend(this_machine_note(Some(doc)));
    let mut cost_notes = vec![format!(
        "{policy_name}: counter cycles per extra timer event, (cycles − cycles with none) / \
         (events − events with none), for each form; switches: extra switches per extra event \
         for the threads; apart: (slowest − fastest) / fastest of the three forms' times."
    )];
    if costs.iter().flatten().any(|c| c == NO_EXTRA) {
        cost_notes.push(NO_EXTRA_NOTE.into());
    }
    cost_notes.extend(this_machine_note(Some(doc)));
    vec![
        View {
            detail: Vec::new(),
            title: format!("{NAME}: this machine, the forms under timer events ({policy})"),
            head: [
                "period",
                "single",
                "threads",
                "processes",
                "events",
                "useful",
            ]
            .map(String::from)
            .to_vec(),
            rows: times,
            notes,
        },
        View {
            detail: Vec::new(),
            title: format!("{NAME}: this machine, cycles per timer event ({policy})"),
            head: [
                "period",
                "single",
                "threads",
                "processes",
                "switches",
                "apart",
            ]
            .map(String::from)
            .to_vec(),
            rows: costs,
            notes: cost_notes,
        },
    ]
}

/// The study's derived figures (cycles per tick, the switches, switching's share) beside this
/// machine's.
fn derived_table(doc: &ResultDoc, b: &PublishedDoc, figs: &[StudyFigure]) -> View {
    let f = |id: &str| match get(figs, &format!("study.{NAME}.{id}")) {
        Some(f) if id == "cycles_per_event" && f.value <= 0.0 => NO_EXTRA.to_owned(),
        f => super::cell(f),
    };
    let p = |id: &str| published(b, id).map_or("-".into(), |v| format!("{v}"));
    // (figure, the study's value, this machine's study figure(s)).
    let derived: [(&str, String, &[&str]); 6] = [
        (
            "cycles per extra tick / event",
            format!("{} cycles", p("cycles_per_tick")),
            &["cycles_per_event"],
        ),
        (
            "switch between threads",
            format!("{} cycles", p("switch.threads")),
            &["switch.threads"],
        ),
        (
            "switch between processes",
            format!("{} cycles", p("switch.processes")),
            &["switch.processes"],
        ),
        (
            "switching per tick / event, threads",
            format!("{} cycles (374 / 4)", p("switch_per_tick.threads")),
            &["switch_per_event.threads"],
        ),
        (
            "switching per tick / event, processes",
            format!("{} cycles (617 / 4)", p("switch_per_tick.processes")),
            &["switch_per_event.processes"],
        ),
        (
            "switching's share of servicing the clock (threads, processes)",
            format!("under {} %", p("switch_share_of_tick")),
            &["switch_share.threads", "switch_share.processes"],
        ),
    ];
    let rows: Vec<Vec<String>> = derived
        .into_iter()
        .map(|(what, study, ids)| {
            let mine: Vec<String> = ids.iter().map(|id| f(id)).collect();
            vec![what.to_owned(), study, mine.join(", ")]
        })
        .collect();
    let mut notes = Vec::new();
    if rows.iter().flatten().any(|c: &String| c.contains(NO_EXTRA)) {
        notes.push(NO_EXTRA_NOTE.to_owned());
    }
    notes.push(
        "The study: 1 073 880 378 extra cycles over 855 048 extra ticks ≈ 1256 cycles per tick, \
         from one flow at 1 ms and at 9.2 µs; a switch every fourth tick costs 90–150 cycles a \
         tick. This machine: the same subtraction at its shortest period, under SCHED_RR (QNX's \
         default policy) where it could be set, switches counted rather than assumed. Its cycles are the counter's (the TSC's reference cycles); the \
         study's were its processor's cycle counter."
            .to_string(),
    );
    notes.extend(this_machine_note(Some(doc)));
    View {
        detail: Vec::new(),
        title: format!("{NAME}: the study's derived figures beside this machine's"),
        head: ["figure", "study (QNX)", "this machine"]
            .map(String::from)
            .to_vec(),
        rows,
        notes,
    }
}

/// Time and cycles per event against the period: the study's forms dashed, this machine's
/// solid; and the useful work's share against the period (its Fig. 2.7).
pub fn plots(doc: Option<&ResultDoc>) -> Vec<Plot> {
    let mut lines = published_lines(&baseline(NAME));
    if let Some(doc) = doc {
        push_this_lines(doc, &mut lines);
    }
    let panels = panels(&lines);
    let all: Vec<&Line> = lines.time.iter().chain(lines.cpe.iter()).collect();
    let header = Header::new(
        "qnx-tick: the same work as one flow, threads and processes as the events come faster",
        &[
            "Dashed: QNX as published, its system tick shortened (time against its 1 ms tick); \
             solid: this machine under timer events at each period (time against none), under \
             SCHED_RR where it could be set. Cycles per event: the study's subtraction."
                .to_string(),
        ],
    );
    vec![Plot {
        name: format!("study.{NAME}"),
        svg: grid(&header, &panels, 3, 200.0, &keys(&all)),
    }]
}

/// The lines of the figure's three panels.
struct Lines {
    /// Time against the least disturbed run.
    time: Vec<Line>,
    /// The useful work's share of the time.
    share: Vec<Line>,
    /// Cycles per extra event.
    cpe: Vec<Line>,
}

/// The study's forms as published: time and share per tick, and its one cycles-per-tick figure.
fn published_lines(b: &PublishedDoc) -> Lines {
    let mut time_lines = Vec::new();
    let mut share_lines = Vec::new();
    for (i, (pf, form)) in FORMS.iter().enumerate() {
        let base = published(b, &format!("{pf}.tick1ms.time"));
        let pts: Vec<_> = TICKS
            .iter()
            .filter_map(|(t, ns)| {
                let v = published(b, &format!("{pf}.{t}.time"))?;
                Some((*ns, v / base?, None, format!("QNX {pf} at {ns} ns: {v} ms")))
            })
            .collect();
        let share: Vec<_> = pts
            .iter()
            .map(|(x, r, _, tip)| (*x, 100.0 / r, None, tip.clone()))
            .collect();
        time_lines.push(line(
            &format!("QNX {form}, as published"),
            published_style(i),
            pts,
        ));
        share_lines.push(line(
            &format!("QNX {form}, as published"),
            published_style(i),
            share,
        ));
    }
    let mut cpe_lines = Vec::new();
    if let Some(pub_cpe) = published(b, "cycles_per_tick") {
        cpe_lines.push(line(
            "QNX, as published (1 ms against 9.2 µs)",
            published_style(0),
            vec![(9_219.0, pub_cpe, None, format!("{pub_cpe} cycles per tick"))],
        ));
    }
    Lines {
        time: time_lines,
        share: share_lines,
        cpe: cpe_lines,
    }
}

/// This machine's forms under the summary's policy, one line per form in each panel.
fn push_this_lines(doc: &ResultDoc, lines: &mut Lines) {
    let figs = figures(doc);
    let policy = summary_policy(doc);
    for (i, (_, form)) in FORMS.iter().enumerate() {
        let Some(base) = point(doc, form, policy, None) else {
            continue;
        };
        let mut st = this_style();
        st.colour = crate::plot::chart::colour(i + 1);
        let ps = periods(doc, policy);
        let label = format!("{}: {form} ({policy})", this_label(doc));
        lines.time.push(line(
            &label,
            st,
            ps.iter()
                .filter_map(|(_, ns)| {
                    let c = point(doc, form, policy, Some(*ns))?;
                    Some((
                        *ns as f64,
                        c.median_ns / base.median_ns,
                        None,
                        format!("{}: {}", c.id, fmt_ns(c.median_ns)),
                    ))
                })
                .collect(),
        ));
        lines.share.push(line(
            &label,
            st,
            figure_points(&figs, &ps, form, policy, "useful_share", |f| {
                format!("{}: {:.1} %", f.id, f.value)
            }),
        ));
        lines.cpe.push(line(
            &label,
            st,
            figure_points(&figs, &ps, form, policy, "cycles_per_event", |f| {
                format!("{}: {:.0} cycles", f.id, f.value)
            }),
        ));
    }
}

/// A line's points: one study figure of a form at each period that has it, against the period.
fn figure_points(
    figs: &[StudyFigure],
    periods: &[(String, u64)],
    form: &str,
    policy: &str,
    what: &str,
    tip: impl Fn(&StudyFigure) -> String,
) -> Vec<(f64, f64, Option<[f64; 2]>, String)> {
    periods
        .iter()
        .filter_map(|(n, ns)| {
            let f = get(figs, &format!("study.{NAME}.{form}.{policy}.{n}.{what}"))?;
            Some((*ns as f64, f.value, None, tip(f)))
        })
        .collect()
}

/// The three panels on one period axis: time, cycles per event, useful share.
fn panels(lines: &Lines) -> Vec<Panel> {
    let xs: Vec<f64> = x_values(&lines.time)
        .into_iter()
        .chain(x_values(&lines.cpe))
        .collect();
    let x = Axis::fit("timer period", Unit::Ns, &xs, Fit::Auto { zero: false });
    let mut ty = y_values(&lines.time);
    ty.push(1.0);
    vec![
        Panel {
            title: "time against the least disturbed run".into(),
            x: x.clone(),
            y: Axis::fit("time", Unit::Ratio, &ty, Fit::Auto { zero: false }),
            lines: lines.time.clone(),
            refs: Vec::new(),
            bars: Vec::new(),
        },
        Panel {
            title: "cycles per extra event".into(),
            x: x.clone(),
            y: Axis::fit(
                "cycles",
                Unit::Count,
                &y_values(&lines.cpe),
                Fit::Auto { zero: true },
            ),
            lines: lines.cpe.clone(),
            refs: Vec::new(),
            bars: Vec::new(),
        },
        Panel {
            title: "useful share of the time (Fig. 2.7)".into(),
            x,
            y: Axis::fit(
                "share",
                Unit::Percent,
                &y_values(&lines.share)
                    .into_iter()
                    .chain([0.0, 100.0])
                    .collect::<Vec<_>>(),
                Fit::Linear { zero: true },
            ),
            lines: lines.share.clone(),
            refs: Vec::new(),
            bars: Vec::new(),
        },
    ]
}

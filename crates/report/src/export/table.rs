//! The case and derived-figure rows the terminal and Markdown exporters share: the same
//! columns and the same notes, so the two never tell a case differently.

use crate::format::fmt_ns;
use crate::format::{ci_pct as fmt_ci_pct, cycles as fmt_cycles};
use oscost_model::schema::{CaseResult, ExperimentResult};

/// Checks shown only when they fail: every one-task case's thread count, and split's work
/// and task counts, which are either exact or wrong.
pub(crate) const QUIET_WHEN_PASSED: &[&str] = &[
    oscost_model::case::SINGLE_THREAD_CHECK,
    "work_units_done",
    "distinct_tasks",
];

/// How much a notes column says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Notes {
    /// Every check with its figures and the kind of every warning and note (a file's notes,
    /// `--verbose`'s, and `--quiet`'s, which prints no warning lines under the table).
    Whole,
    /// Each failed check with its figures, the passed ones counted (`✓ 2 checks`), and the
    /// kinds of warning: the terminal's default, whose lines under the table name each kind of
    /// note once. A terminal's column: a warning of no known kind is cut to its room.
    Brief,
}

/// Notes for a case: failed checks, noise, and the kind of each warning (`warm-up did not
/// settle`), in words that stand on their own when the warnings themselves are not printed.
/// `cut`: a warning of no known kind is cut to a column's room (a terminal's).
fn notes(c: &CaseResult, cut: bool, how: Notes) -> String {
    let brief = how == Notes::Brief;
    let mut n = Vec::new();
    let mut passed = 0;
    for k in &c.checks {
        // Checks that must come out exact are news only when they fail.
        if k.passed && QUIET_WHEN_PASSED.contains(&k.name.as_str()) {
            continue;
        }
        if k.passed && brief {
            passed += 1;
            continue;
        }
        n.push(crate::format::check(k));
    }
    if passed > 0 {
        n.push(format!(
            "✓ {passed} check{}",
            if passed == 1 { "" } else { "s" }
        ));
    }
    if c.noisy {
        n.push("noisy".into());
    }
    for t in super::warnings::tags(c, cut, !brief) {
        if !n.contains(&t) {
            n.push(t);
        }
    }
    n.join("; ")
}

/// The head and rows of an experiment's table of cases; `tick_unit` names the counter column.
/// `cut`: notes are cut to fit a terminal's column; a file (Markdown) keeps them whole. `how`:
/// how much the notes say.
pub(super) fn rows<'a>(
    e: &ExperimentResult,
    tick_unit: &'a str,
    cut: bool,
    how: Notes,
) -> (Vec<&'a str>, Vec<Vec<String>>) {
    let with_rate = e.cases.iter().any(|c| c.at_rate.is_some());
    let mut head = vec!["case", "median", "95% CI", tick_unit, "min", "p95"];
    if with_rate {
        head.push("share at rate");
    }
    head.push("notes");
    let mut out = Vec::new();
    for c in &e.cases {
        let mut r = vec![
            c.id.clone(),
            fmt_ns(c.median_ns),
            fmt_ci_pct(c.median_ns, c.ci95_ns),
            fmt_cycles(c.median_cycles),
            fmt_ns(c.min_ns),
            fmt_ns(c.p95_ns),
        ];
        if with_rate {
            r.push(
                c.at_rate
                    .as_ref()
                    .map_or("-".into(), |a| format!("{:.3} %", a.share_pct)),
            );
        }
        r.push(notes(c, cut, how));
        out.push(r);
    }
    (head, out)
}

/// The rows of an experiment's derived figures; with [`Notes::Brief`], a wide interval's note
/// gives its cause without the figures behind it.
pub(super) fn derived_rows(e: &ExperimentResult, how: Notes) -> Vec<Vec<String>> {
    e.derived
        .iter()
        .map(|d| {
            vec![
                d.id.clone(),
                fmt_ns(d.estimate_ns),
                format!("{} .. {}", fmt_ns(d.ci95_ns[0]), fmt_ns(d.ci95_ns[1])),
                fmt_cycles(d.estimate_cycles),
                [
                    d.flagged.as_ref().map(|f| format!("FLAGGED: {f}")),
                    below_zero(d),
                ]
                .into_iter()
                .flatten()
                .chain(d.warnings.iter().map(|w| match how {
                    Notes::Whole => derived_note(w),
                    Notes::Brief => brief_derived_note(w),
                }))
                .collect::<Vec<_>>()
                .join("; "),
            ]
        })
        .collect()
}

/// A derived figure's warning as its notes column says it: a wide interval by the tag cases
/// use and its cause (the interval itself stands in the next column but one).
pub(crate) fn derived_note(w: &oscost_model::Message) -> String {
    let wide = w.kind() == oscost_model::MessageKind::WideInterval;
    match wide.then(|| w.rest().split_once(" %: ")).flatten() {
        Some((_, cause)) => format!("noisy: {cause}"),
        None => w.to_string(),
    }
}

/// [`derived_note`] without the figures behind a wide interval's cause: `noisy: terms nearly
/// cancel`, not what is left of which case.
fn brief_derived_note(w: &oscost_model::Message) -> String {
    let note = derived_note(w);
    match note.strip_prefix("noisy: ") {
        Some(cause) => format!(
            "noisy: {}",
            cause.split_once(": ").map_or(cause, |(c, _)| c)
        ),
        None => note,
    }
}

/// What a derived figure below zero means, so it is not read as a negative cost: a
/// difference whose interval reaches zero is within its noise; one wholly below zero says the
/// term subtracted cost more than the whole here.
fn below_zero(d: &oscost_model::DerivedResult) -> Option<String> {
    if d.estimate_ns >= 0.0 || !d.estimate_ns.is_finite() {
        None
    } else if d.ci95_ns[1] >= 0.0 {
        Some("below zero but its interval reaches zero: no cost told apart from noise".into())
    } else {
        Some("below zero: the term subtracted cost more than the whole here".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_derived_figure_below_zero_says_why() {
        let d = |estimate_ns: f64, ci95_ns: [f64; 2]| oscost_model::DerivedResult {
            id: "tick.rr.1ms.per_rescheduling".into(),
            description: String::new(),
            terms: Vec::new(),
            estimate_ns,
            ci95_ns,
            estimate_cycles: 0.0,
            flagged: None,
            warnings: Vec::new(),
        };
        assert_eq!(below_zero(&d(5.0, [1.0, 9.0])), None);
        assert!(below_zero(&d(-7390.0, [-9000.0, 800.0]))
            .unwrap()
            .contains("reaches zero"));
        assert!(below_zero(&d(-7390.0, [-9000.0, -100.0]))
            .unwrap()
            .contains("cost more"));
    }
}

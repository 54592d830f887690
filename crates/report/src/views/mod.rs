//! Experiment-specific readings of a result: tables that only make sense for one experiment
//! (a sweep's overhead against its baseline, a timeline's CPU shares), computed from the
//! summarised cases and shown under the experiment's case table.
//!
//! Adding one is a file here with a `views(&ExperimentResult) -> Vec<View>` function, named in
//! the experiment's entry of the experiments table (`experiments::entry`). A view reads the model only; it
//! never measures.

pub mod fs;
pub mod net;
pub mod noise;
pub mod spawn;
pub mod split;
pub mod switch;
#[cfg(test)]
pub(crate) mod testkit;
pub mod tick;
pub mod tick_forms;
pub mod timeline;
pub mod wakeup;

/// Lines saying how the traced cases among `cases` had their tracepoints recorded and what
/// that cost (the same thing measured untraced and traced in the same run), one per
/// mechanism and measure; each case by `label`. Empty when none is traced.
pub fn trace_lines<'a>(
    cases: impl IntoIterator<Item = &'a oscost_model::CaseResult>,
    label: impl Fn(&oscost_model::CaseResult) -> String,
) -> Vec<String> {
    let mut groups: Vec<((String, String), Vec<String>, u64)> = Vec::new();
    for c in cases {
        let (key, part, lost) = match &c.trace {
            Some(t) => (
                (t.mechanism.clone(), t.per.clone()),
                format!(
                    "{} {} against {} untraced (x{:.2})",
                    label(c),
                    crate::format::fmt_ns(t.traced_ns),
                    crate::format::fmt_ns(t.untraced_ns),
                    t.ratio()
                ),
                t.lost,
            ),
            None => match c.params.get("trace_mechanism").and_then(|v| v.as_str()) {
                Some(m) => (
                    (m.to_owned(), String::new()),
                    format!("{} (no untraced figure beside it)", label(c)),
                    c.counters.get("trace_records_lost").copied().unwrap_or(0.0) as u64,
                ),
                None => continue,
            },
        };
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => {
                g.1.push(part);
                g.2 += lost;
            }
            None => groups.push((key, vec![part], lost)),
        }
    }
    groups
        .into_iter()
        .map(|((m, per), parts, lost)| {
            let per = if per.is_empty() {
                String::new()
            } else {
                format!("; per {per}, traced against untraced")
            };
            format!(
                "tracepoints recorded by {m} ({lost} record{} lost){per}: {}",
                if lost == 1 { "" } else { "s" },
                parts.join("; ")
            )
        })
        .collect()
}

/// One extra table: a title, a header, rows of already formatted cells, and lines of notes
/// printed under it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct View {
    /// Printed above the table.
    pub title: String,
    /// Column names; the first column is left-aligned, the others right-aligned.
    pub head: Vec<String>,
    /// Rows, each as long as `head`.
    pub rows: Vec<Vec<String>>,
    /// Lines printed under the table (what the columns mean, what was left out).
    pub notes: Vec<String>,
    /// Lines printed after the notes where the detail is shown (`--verbose`, the report,
    /// `--markdown`): how a figure was worked out, what a column's words mean in full.
    pub detail: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traced_cases_are_grouped_by_mechanism_with_their_cost() {
        let mut a = testkit::case("t.n1.kernel", "worker", 1.0);
        a.trace = Some(oscost_model::TraceCost {
            mechanism: "bpf".into(),
            per: "round".into(),
            untraced_ns: 100_000.0,
            traced_ns: 125_000.0,
            lost: 2,
        });
        let mut b = a.clone();
        b.id = "t.n2.kernel".into();
        let mut c = testkit::case("t.n4.kernel", "worker", 1.0);
        c.params.insert("trace_mechanism".into(), "perf".into());
        let plain = testkit::case("t.n1", "worker", 1.0);
        let lines = trace_lines([&a, &b, &c, &plain], |c| c.id.clone());
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("tracepoints recorded by bpf (4 records lost); per round"));
        assert!(lines[0].contains("t.n2.kernel 125.0 µs against 100.0 µs untraced (x1.25)"));
        assert!(lines[1].contains("perf (0 records lost): t.n4.kernel (no untraced"));
    }
}

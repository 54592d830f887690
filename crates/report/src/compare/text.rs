//! The comparison for people: terminal tables and Markdown.

use super::verdict::P_SIGNIFICANT;
use super::*;

use crate::format::{fmt_ns, fmt_ns_signed, ns_with_ci, p_value, pct_signed, plain, ratio};
use crate::layout::{fit, Col, Overflow};
use crate::mdtext;

fn fmt_rate(ns_per_s: f64) -> String {
    // ns of CPU per second of wall time, and the same as a share of one CPU.
    format!("{}/s ({:.2} %)", fmt_ns(ns_per_s), ns_per_s / 1e7)
}

/// The columns of the figures table. In a narrow terminal the difference goes first, then the
/// p-value, A, B and the percentage; the case, the ratio and the verdict stay, and where even
/// they do not fit as a table, each row becomes a block that shows A and B again.
fn cols(c: &Comparison) -> Vec<Col> {
    let mut h = vec![
        Col::keep("case", false),
        Col::drop("A", true, 3).listed(),
        Col::drop("B", true, 4).listed(),
        Col::drop("B − A", true, 1),
        Col::drop("%", true, 5),
        Col::keep("B / A (95 % CI)", true),
    ];
    if c.published.is_none() {
        h.push(Col::drop("p", true, 2));
    }
    h.push(Col::keep("verdict", false));
    if let Some(r) = c.settings.rate_per_s {
        h.push(Col::drop(&format!("B − A at {} /s", plain(r)), false, 6));
    }
    h
}

fn cells(c: &Comparison, r: &Row) -> Vec<String> {
    let mut v = vec![
        r.id.clone(),
        ns_with_ci(r.baseline.median_ns, r.baseline.ci95_ns),
        ns_with_ci(r.other.median_ns, r.other.ci95_ns),
        fmt_ns_signed(r.diff_ns),
        pct_signed(r.diff_pct),
        ratio(r.ratio, r.ratio_ci95),
    ];
    if c.published.is_none() {
        v.push(p_value(r.mann_whitney_p));
    }
    let mut verdict = r.verdict.text().to_string();
    // Net of a control that moved, the verdict can differ: both are shown, the net one counts.
    if let Some(n) = r.net.as_ref().filter(|n| n.verdict != r.verdict) {
        verdict = format!("{verdict}; net {}", n.verdict.text());
    }
    if !r.baseline.checks_passed || !r.other.checks_passed {
        verdict.push_str(" (!)");
    }
    v.push(verdict);
    if let Some(a) = &r.at_rate {
        v.push(fmt_rate(a.diff_ns_per_s));
    }
    v
}

/// A measured case row whose file's summary disagrees with its raw samples: its note is shown
/// under the table (the row's figures come from the samples, without the summary's interval).
fn inconsistent(r: &Row) -> bool {
    r.kind == "case" && (r.baseline.ci95_ns.is_none() || r.other.ci95_ns.is_none())
}

fn intro(c: &Comparison) -> Vec<String> {
    let mut lines = vec![format!("B = {} against A = {}", c.other, c.baseline)];
    if let Some(p) = &c.published {
        lines.push(format!(
            "The published figures are from {} on {}. They were not measured here: no \
             samples, no confidence interval, so only the ratio is shown and no verdict is \
             given.",
            p.citation, p.machine
        ));
    }
    lines
}

fn explanation(c: &Comparison) -> String {
    let rate = c
        .settings
        .rate_per_s
        .map(|r| {
            format!(
                " The last column is the difference as CPU time per second at {} operations a \
                 second, and as a share of one CPU.",
                plain(r)
            )
        })
        .unwrap_or_default();
    if c.published.is_some() {
        return rate.trim_start().to_string();
    }
    rate_after(
        format!(
            "A verdict of faster or slower needs all three: the bootstrap 95 % CI of the ratio of \
         medians excludes 1, Mann-Whitney p < {P_SIGNIFICANT} on the raw samples once adjusted \
         for every figure compared (Benjamini-Hochberg: at most 5 % of the verdicts false), and \
         a change beyond ±{} % (--threshold), the noise between runs of one machine. \"No difference\" \
         needs the whole interval within ±{0} %; an interval reaching past it, without a \
         change the test confirms: too few samples to tell (run more rounds). (!) marks a \
         row with a failed mechanism check.",
            plain(c.settings.threshold_pct)
        ) + net_explained(c),
        &rate,
    )
}

/// Whose spread the intervals include: the history's comparable runs, or the machine's
/// wander within A and B when it held too few.
fn spread_line(c: &Comparison) -> Option<String> {
    if let Some(w) = c.spread_wander {
        return Some(format!(
            "Too few earlier runs of this machine in the history to tell how far each figure \
             moves between runs: the intervals of {} figure{} include how far the machine's own \
             speed wandered within A and B instead (syscall(-1) ±{:.1} %, the user-space loop \
             ±{:.1} %, from {} bursts of its controls).",
            c.spread_rows,
            if c.spread_rows == 1 { "" } else { "s" },
            100.0 * w.kernel_entry.exp_m1(),
            100.0 * w.user_loop.exp_m1(),
            w.bursts
        ));
    }
    let n = c.spread_runs?;
    Some(format!(
        "The intervals of {} figure{} include how much each moved between {n} earlier runs of \
         this machine in the history (a random effect of each run, never less than the \
         machine's own speed wandered within A and B), not only the spread within A and B.",
        c.spread_rows,
        if c.spread_rows == 1 { "" } else { "s" }
    ))
}

/// How a verdict net of the machine's controls is made, when the runs have controls.
fn net_explained(c: &Comparison) -> &'static str {
    if c.machine.is_empty() {
        return "";
    }
    " Each run timed two controls around every experiment, the system-call floor \
     (syscall(-1)) and a fixed user-space loop: where one moved (its ratio's 95 % CI excludes \
     1, by 1 % or more), the machine itself changed, and each figure is also judged net of \
     the control it moves with (divided by its ratio, the interval widened by the \
     control's), a change called net only where the raw figure calls it too; \"net\" marks \
     a verdict that differs, and the counts are the net verdicts."
}

fn rate_after(mut s: String, rate: &str) -> String {
    s.push_str(rate);
    s
}

fn summary(c: &Comparison) -> String {
    let t = tally(c);
    let mut parts: Vec<String> = [
        "slower",
        "faster",
        "no difference",
        "too few samples to tell",
        "not comparable",
        "not measured here",
    ]
    .iter()
    .filter_map(|k| t.get(k).map(|n| format!("{n} {k}")))
    .collect();
    if !c.study_rows.is_empty() {
        parts.push(format!(
            "{} figure{} the study derived set beside this run's",
            c.study_rows.len(),
            if c.study_rows.len() == 1 { "" } else { "s" }
        ));
    }
    if parts.is_empty() {
        parts.push("no common figure".into());
    }
    let n = c.rows.len() + c.study_rows.len();
    let unmatched = if c.unmatched_published.is_empty() {
        String::new()
    } else {
        format!(
            "; {} published figure{} with no counterpart here, each saying why (below)",
            c.unmatched_published.len(),
            if c.unmatched_published.len() == 1 {
                ""
            } else {
                "s"
            }
        )
    };
    format!(
        "{n} figure{} compared: {}{unmatched}",
        if n == 1 { "" } else { "s" },
        parts.join(", ")
    )
}

fn leftovers(c: &Comparison) -> Vec<String> {
    let mut v = Vec::new();
    let names = |ids: &[String]| {
        let shown: Vec<&str> = ids.iter().take(12).map(String::as_str).collect();
        let more = ids.len().saturating_sub(shown.len());
        format!(
            "{}{}",
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        )
    };
    if !c.only_in_baseline.is_empty() {
        v.push(format!(
            "Only in {} ({}): {}",
            c.baseline,
            c.only_in_baseline.len(),
            names(&c.only_in_baseline)
        ));
    }
    if !c.only_in_other.is_empty() {
        v.push(format!(
            "Only in {} ({}): {}",
            c.other,
            c.only_in_other.len(),
            names(&c.only_in_other)
        ));
    }
    v
}

/// The one line that says two inputs have nothing to compare: no figure in common, nothing the
/// study derived, no percentile, no published figure or foreign id to explain; `None` when
/// there is something. It names what each side holds instead, by experiment.
pub fn nothing_in_common(c: &Comparison) -> Option<String> {
    let nothing = c.rows.is_empty()
        && c.study_rows.is_empty()
        && c.percentiles.is_empty()
        && c.unmatched_published.is_empty()
        && c.foreign_ids.is_empty();
    if !nothing {
        return None;
    }
    // A figure's id starts with its experiment's name.
    let holds = |ids: &[String]| {
        if ids.is_empty() {
            return "no figure".to_string();
        }
        let mut experiments: Vec<&str> = Vec::new();
        for id in ids {
            let name = id.split('.').next().unwrap_or(id);
            if !experiments.contains(&name) {
                experiments.push(name);
            }
        }
        let more = experiments.len().saturating_sub(6);
        experiments.truncate(6);
        format!(
            "{} figure{} of {}{}",
            ids.len(),
            if ids.len() == 1 { "" } else { "s" },
            experiments.join(", "),
            if more > 0 {
                format!(" and {more} more experiments")
            } else {
                String::new()
            }
        )
    };
    Some(format!(
        "B = {} against A = {}: no common figure, so nothing to compare (A has {}; B has {}): \
         give runs of the same experiments",
        c.other,
        c.baseline,
        holds(&c.only_in_baseline),
        holds(&c.only_in_other)
    ))
}

/// How the terminal shows a comparison.
#[derive(Debug, Clone, Copy, Default)]
pub struct View {
    /// The terminal's width; `None`: tables at their natural width (a pipe, a file).
    pub width: Option<u16>,
    /// Only the rows called slower or faster (`--only-changed`).
    pub only_changed: bool,
}

/// Comparisons as `compare` writes them: the tables, `--only-changed` or not, and the JSON,
/// CSV and Markdown files.
#[derive(Debug, Clone, Copy)]
pub struct Compared<'a> {
    /// Each input against the first.
    pub comparisons: &'a [Comparison],
    /// Only the rows called slower or faster in the tables (`--only-changed`).
    pub only_changed: bool,
}

impl crate::export::Render for Compared<'_> {
    fn table(&self, width: Option<u16>) -> String {
        terminal_view(
            self.comparisons,
            View {
                width,
                only_changed: self.only_changed,
            },
        )
    }

    fn file(&self, format: crate::export::Format) -> Option<anyhow::Result<String>> {
        use crate::export::Format;
        Some(match format {
            Format::Json => super::json(self.comparisons),
            Format::Csv => super::csv(self.comparisons),
            Format::Markdown => Ok(markdown(self.comparisons)),
            Format::Html | Format::Terminal => return None,
        })
    }
}

/// The comparison as terminal tables at their natural width.
pub fn terminal(comparisons: &[Comparison]) -> String {
    terminal_view(comparisons, View::default())
}

/// The comparison as terminal tables laid out for `width` columns (see [`terminal_view`]).
pub fn terminal_with(comparisons: &[Comparison], width: Option<u16>) -> String {
    terminal_view(
        comparisons,
        View {
            width,
            only_changed: false,
        },
    )
}

fn changed(r: &Row) -> bool {
    matches!(counted(r), Verdict::Slower | Verdict::Faster)
}

/// The comparison as terminal tables: a table too wide for `view.width` drops its difference,
/// p-value and A and B columns first, then shows each row as a block of lines that starts
/// with its verdict; prose is wrapped.
pub fn terminal_view(comparisons: &[Comparison], view: View) -> String {
    let width = view.width;
    let mut s = String::new();
    let line = |text: &str, indent: usize| crate::layout::wrap(text, width, indent);
    for c in comparisons {
        // Environments and every id of both sides would be six lines saying nothing here.
        if let Some(l) = nothing_in_common(c) {
            s += &line(&l, 0);
            s.push('\n');
            continue;
        }
        for l in intro(c) {
            s += &line(&l, 0);
        }
        if let Some(m) = super::machine::line(c) {
            s += &line(&m, 0);
        }
        s.push('\n');
        if c.environment.is_empty() {
            s += "Environment: nothing that can explain a difference differs.\n\n";
        } else {
            let rows: Vec<Vec<String>> = c
                .environment
                .iter()
                .map(|d| vec![d.field.clone(), d.baseline.clone(), d.other.clone()])
                .collect();
            let env_cols = [
                Col::keep("environment differs", false),
                Col::keep("A", false),
                Col::keep("B", false),
            ];
            s += &fit(&env_cols, &rows, width, Overflow::List { headline: None });
            s.push('\n');
        }
        let shown: Vec<&Row> = c
            .rows
            .iter()
            .filter(|r| !view.only_changed || changed(r))
            .collect();
        if !shown.is_empty() {
            let cols = cols(c);
            let rows: Vec<Vec<String>> = shown.iter().map(|r| cells(c, r)).collect();
            let verdict = cols.iter().position(|k| k.head == "verdict");
            s += &fit(&cols, &rows, width, Overflow::List { headline: verdict });
        }
        s += &line(&summary(c), 2);
        if let Some(l) = spread_line(c) {
            s += &line(&l, 2);
        }
        if view.only_changed && shown.len() < c.rows.len() {
            s += &line(
                &format!(
                    "{} figure{} neither slower nor faster not shown (--only-changed).",
                    c.rows.len() - shown.len(),
                    if c.rows.len() - shown.len() == 1 {
                        ""
                    } else {
                        "s"
                    }
                ),
                2,
            );
        }
        if let Some(d) = &c.drift {
            s += &line(&format!("Warning: {d}"), 2);
        }
        for f in &c.foreign_ids {
            s += &line(&format!("Warning: {f}"), 2);
        }
        let e = explanation(c);
        if !e.is_empty() {
            s += &line(&e, 0);
        }
        for r in c
            .rows
            .iter()
            .filter(|r| r.kind == "published" || inconsistent(r))
        {
            if let Some(n) = &r.note {
                s += &line(&format!("  {}: {n}", r.id), 4);
            }
        }
        if !c.study_rows.is_empty() {
            let study_cols = [
                Col::keep("figure", false),
                Col::keep("published", true),
                Col::keep("this machine", true),
                Col::drop("95 % CI", true, 1),
                Col::keep("difference", true),
            ];
            let rows: Vec<Vec<String>> =
                c.study_rows.iter().map(|r| study_cells(r).into()).collect();
            s += &line(
                "Figures the study derived, computed from this run as the study computed them \
                 (ratios, percentages, cycles per event: no verdict):",
                0,
            );
            s += &fit(&study_cols, &rows, width, Overflow::List { headline: None });
            for r in &c.study_rows {
                s += &line(&format!("  {} (= {}): {}", r.id, r.measured_id, r.note), 4);
            }
        }
        if !c.percentiles.is_empty() {
            s += &line(PERCENTILES_HEAD, 0);
            let cols = PERCENTILE_COLS.map(|(head, right)| Col::keep(head, right));
            let rows: Vec<Vec<String>> = c.percentiles.iter().map(percentile_cells).collect();
            s += &fit(&cols, &rows, width, Overflow::List { headline: None });
        }
        for u in &c.unmatched_published {
            s += &line(
                &format!(
                    "  not compared: {} = {} ({}): {}",
                    u.id, u.value, u.meaning, u.why
                ),
                4,
            );
        }
        for l in leftovers(c) {
            s += &line(&l, 2);
        }
        s.push('\n');
    }
    s
}

/// The line above the percentiles' table, in every rendering that shows it.
const PERCENTILES_HEAD: &str = "Percentiles side by side, each with its 95 % interval (order \
     statistics of the raw samples; none where too few samples lie beyond it):";

/// The percentiles' table's columns: heading and whether it is right-aligned.
const PERCENTILE_COLS: [(&str, bool); 6] = [
    ("case", false),
    ("", false),
    ("A (95 % CI)", true),
    ("B (95 % CI)", true),
    ("B / A", true),
    ("intervals", false),
];

/// A percentile and its interval's ends (a tail's interval is lopsided: no ± half-width).
fn with_interval(ns: f64, ci: Option<[f64; 2]>) -> String {
    match ci {
        Some([lo, hi]) => format!("{} [{} – {}]", fmt_ns(ns), fmt_ns(lo), fmt_ns(hi)),
        None => fmt_ns(ns),
    }
}

/// A percentile row's cells: the case (on its first percentile), the percentile, both sides
/// with their intervals, the ratio and whether the intervals are apart.
fn percentile_cells(r: &PercentileRow) -> Vec<String> {
    vec![
        if r.percentile == "p50" {
            r.id.clone()
        } else {
            String::new()
        },
        r.percentile.to_owned(),
        with_interval(r.baseline_ns, r.baseline_ci95_ns),
        with_interval(r.other_ns, r.other_ci95_ns),
        format!("{:.3}", r.ratio),
        match (r.baseline_ci95_ns, r.other_ci95_ns, r.apart) {
            (Some(_), Some(_), true) => "apart".into(),
            (Some(_), Some(_), false) => "overlap".into(),
            _ => "-".into(),
        },
    ]
}

/// A study row's cells: the figure, both values, the interval and the difference.
fn study_cells(r: &StudyRow) -> [String; 5] {
    use crate::study::value_text;
    let diff = if r.unit == "%" {
        format!("{} points", crate::study::signed(r.difference))
    } else {
        format!(
            "{}{}",
            if r.difference > 0.0 { "+" } else { "" },
            value_text(r.difference, &r.unit)
        )
    };
    [
        r.id.clone(),
        value_text(r.published, &r.unit),
        value_text(r.measured, &r.unit),
        r.measured_ci95.map_or("-".into(), |c| {
            format!(
                "{} to {}",
                value_text(c[0], &r.unit),
                value_text(c[1], &r.unit)
            )
        }),
        diff,
    ]
}

/// One Markdown table row of `cells`, each escaped.
fn md_row(cells: &[String]) -> String {
    let cells: Vec<String> = cells.iter().map(|x| mdtext::cell(x)).collect();
    format!("| {} |\n", cells.join(" | "))
}

/// The comparison as Markdown.
pub fn markdown(comparisons: &[Comparison]) -> String {
    let mut s = String::new();
    for c in comparisons {
        if let Some(l) = nothing_in_common(c) {
            s += &format!("{}\n\n", mdtext::cell(&l));
            continue;
        }
        let mut lines = intro(c).into_iter();
        s += &format!("## {}\n\n", mdtext::cell(&lines.next().unwrap_or_default()));
        for l in lines.chain(super::machine::line(c)) {
            s += &format!("{}\n\n", mdtext::cell(&l));
        }
        if !c.environment.is_empty() {
            s += "| environment differs | A | B |\n|---|---|---|\n";
            for d in &c.environment {
                s += &format!(
                    "| {} | {} | {} |\n",
                    mdtext::cell(&d.field),
                    mdtext::cell(&d.baseline),
                    mdtext::cell(&d.other)
                );
            }
            s.push('\n');
        }
        if !c.rows.is_empty() {
            let h = cols(c);
            s += &format!(
                "| {} |\n|{}\n",
                h.iter()
                    .map(|x| mdtext::cell(&x.head))
                    .collect::<Vec<_>>()
                    .join(" | "),
                h.iter()
                    .map(|x| if x.right { "---:|" } else { "---|" })
                    .collect::<String>()
            );
            for r in &c.rows {
                s += &md_row(&cells(c, r));
            }
            s.push('\n');
        }
        s += &format!("{}\n\n", summary(c));
        if let Some(l) = spread_line(c) {
            s += &format!("{}\n\n", mdtext::cell(&l));
        }
        if let Some(d) = &c.drift {
            s += &format!("**Warning:** {}\n\n", mdtext::cell(d));
        }
        for f in &c.foreign_ids {
            s += &format!("**Warning:** {}\n\n", mdtext::cell(f));
        }
        let e = explanation(c);
        if !e.is_empty() {
            s += &format!("{}\n\n", mdtext::cell(&e));
        }
        if !c.study_rows.is_empty() {
            s += "| figure | published | this machine | 95 % CI | difference |\n|---|---:|---:|---:|---:|\n";
            for r in &c.study_rows {
                s += &md_row(&study_cells(r));
            }
            s.push('\n');
        }
        if !c.percentiles.is_empty() {
            s += &format!("{PERCENTILES_HEAD}\n\n");
            s += &format!(
                "| {} |\n|{}\n",
                PERCENTILE_COLS.map(|(h, _)| h).join(" | "),
                PERCENTILE_COLS
                    .map(|(_, right)| if right { "---:|" } else { "---|" })
                    .concat()
            );
            for r in &c.percentiles {
                s += &md_row(&percentile_cells(r));
            }
            s.push('\n');
        }
        for r in c.rows.iter().filter(|r| inconsistent(r)) {
            if let Some(n) = &r.note {
                s += &format!("- `{}`: {}\n", r.id, mdtext::cell(n));
            }
        }
        for u in &c.unmatched_published {
            s += &format!(
                "- not compared: `{}` = {} ({}): {}\n",
                u.id,
                mdtext::cell(&u.value),
                mdtext::cell(&u.meaning),
                mdtext::cell(&u.why)
            );
        }
        for l in leftovers(c) {
            s += &format!("- {}\n", mdtext::cell(&l));
        }
        s.push('\n');
    }
    s
}

/// The change since the last comparable run, as a run ends (criterion's "change" line): one
/// line naming that run, counting the verdicts and giving the command that lists them, so the
/// datasheet above it stays on the last screen; `None` when no figure is common to both.
/// Judged as `compare` judges, at the default threshold.
pub fn since_last(
    previous: &ResultDoc,
    label: &str,
    current: &ResultDoc,
    spread: Option<&super::RunSpread>,
    width: Option<u16>,
) -> Option<String> {
    let settings = Settings::default();
    let mut c = super::compare(
        &[
            (label.to_string(), Source::Measured(previous)),
            ("this run".to_string(), Source::Measured(current)),
        ],
        settings,
    )
    .pop()?;
    if c.rows.is_empty() {
        return None;
    }
    // Between two runs of one machine the spread of its earlier runs (or, too few of them,
    // its wander within the two) belongs in every interval, as `compare` puts it there:
    // without it a quiet machine's own swings read as dozens of changes.
    let spread = spread
        .cloned()
        .unwrap_or_default()
        .or_wander(previous, current);
    super::with_spread(&mut c, &spread);
    let spread_said = match (c.spread_runs, c.spread_wander) {
        (Some(n), _) => format!(" (with the spread of {n} earlier runs)"),
        (None, Some(_)) => " (with the machine's own wander, too few earlier runs)".into(),
        (None, None) => String::new(),
    };
    let moved = c.rows.iter().filter(|r| changed(r)).count();
    Some(crate::layout::wrap(
        &format!(
            // Which run is comparable (the same machine, settings and experiments) is said
            // in the README and docs/history.md: here, the counts and the command.
            "Change since run {label}{spread_said}: {}{}{}",
            super::machine::moved_in_words(&c)
                .map(|m| format!("net of a machine that ran {m}, "))
                .unwrap_or_default(),
            summary(&c),
            if moved == 0 {
                String::new()
            } else {
                format!("; oscost compare {label} latest --only-changed lists them")
            }
        ),
        width,
        2,
    ))
}

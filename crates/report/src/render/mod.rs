//! Renderers for people and for other programs: terminal table, Markdown, CSV, JSON.
//!
//! All output is deterministic for a given document (no timestamps, fixed number formats), so
//! it can be pinned in tests.

use comfy_table::{presets, Cell, CellAlignment, ContentArrangement, Table};
use oscost_model::schema::{CaseResult, ExperimentResult, ResultDoc};

mod warnings;

pub use crate::format::fmt_ns;
use crate::format::{ci_pct as fmt_ci_pct, cycles as fmt_cycles};

/// Checks shown only when they fail: every one-task case's thread count, and split's work
/// and task counts, which are either exact or wrong.
const QUIET_WHEN_PASSED: &[&str] = &[
    oscost_model::case::SINGLE_THREAD_CHECK,
    "work_units_done",
    "distinct_tasks",
];

/// Notes for a case: failed checks, noise, and the kind of each warning (`warm-up did not
/// settle`), in words that stand on their own when the warnings themselves are not printed.
fn notes(c: &CaseResult) -> String {
    let mut n = Vec::new();
    for k in &c.checks {
        // Checks that must come out exact are news only when they fail.
        if k.passed && QUIET_WHEN_PASSED.contains(&k.name.as_str()) {
            continue;
        }
        n.push(crate::format::check(k));
    }
    if c.noisy {
        n.push("noisy".into());
    }
    for t in warnings::tags(c) {
        if !n.contains(&t) {
            n.push(t);
        }
    }
    n.join("; ")
}

fn rows<'a>(e: &ExperimentResult, tick_unit: &'a str) -> (Vec<&'a str>, Vec<Vec<String>>) {
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
        r.push(notes(c));
        out.push(r);
    }
    (head, out)
}

fn derived_rows(e: &ExperimentResult) -> Vec<Vec<String>> {
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
                .chain(d.warnings.iter().map(|w| derived_note(w)))
                .collect::<Vec<_>>()
                .join("; "),
            ]
        })
        .collect()
}

/// What a derived figure below zero means, so it is not read as a negative cost: a
/// difference whose interval reaches zero is within its noise; one wholly below zero says the
/// term subtracted cost more than the whole here.
/// A derived figure's warning as its notes column says it: a wide interval by the tag cases
/// use and its cause (the interval itself stands in the next column but one).
pub(crate) fn derived_note(w: &str) -> String {
    match w
        .strip_prefix(crate::summarise::WIDE_CI)
        .and_then(|rest| rest.split_once(" %: "))
    {
        Some((_, cause)) => format!("noisy: {cause}"),
        None => w.to_owned(),
    }
}

fn below_zero(d: &oscost_model::DerivedResult) -> Option<String> {
    if d.estimate_ns >= 0.0 || !d.estimate_ns.is_finite() {
        None
    } else if d.ci95_ns[1] >= 0.0 {
        Some("below zero but its interval reaches zero: no cost told apart from noise".into())
    } else {
        Some("below zero: the term subtracted cost more than the whole here".into())
    }
}

/// Columns the terminal drops when it is too narrow, first to go first: `min`, `p95`,
/// `share at rate`, the tick column, then `95% CI`. The id, the median and the notes always
/// stay; an empty notes column goes before anything else.
fn drop_rank(head: &str, tick_unit: &str) -> Option<u8> {
    match head {
        "min" => Some(1),
        "p95" => Some(2),
        "share at rate" => Some(3),
        h if h == tick_unit => Some(4),
        "95% CI" => Some(LAST_RANK),
        _ => None,
    }
}

const LAST_RANK: u8 = 5;

/// Notes are wrapped down to this width before a column is dropped to make room for them...
const NOTES_WANTED: usize = 32;
/// ...and down to this one before `95% CI` is...
const NOTES_BESIDE_CI: usize = 16;
/// ...and below this width (or their longest word's) they leave the table for lines of their
/// own under it.
const NOTES_NARROWEST: usize = 12;

fn text_width(s: &str) -> usize {
    s.chars().count()
}

/// `text` in lines of at most `width` columns, broken between words (a longer word keeps a
/// line of its own).
pub fn wrap_words(text: &str, width: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(line) if text_width(line) + 1 + text_width(word) <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_owned()),
        }
    }
    lines.join("\n")
}

/// A table laid out for `width` columns, or at its natural width (`None`). The first column (a
/// case or figure id) is never wrapped, nor is any figure: when the table is too wide, columns
/// are dropped in [`drop_rank`] order, then the notes (the last column) are wrapped, and when
/// even that leaves them too little room they are returned to be printed under the table, as
/// `(id, notes)`, with the headers of the columns kept.
fn table(
    head: &[&str],
    rows: Vec<Vec<String>>,
    tick_unit: &str,
    width: Option<u16>,
) -> (Table, Vec<(String, String)>, Vec<String>) {
    let cols = head.len();
    let notes = cols - 1;
    let natural: Vec<usize> = (0..cols)
        .map(|i| {
            rows.iter()
                .map(|r| text_width(&r[i]))
                .chain([text_width(head[i])])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut shown = vec![true; cols];
    let mut notes_width = None;
    let mut notes_below = false;
    if let Some(width) = width.map(usize::from) {
        let notes_empty = rows.iter().all(|r| r[notes].is_empty());
        // Notes are wrapped between words, never inside one (an id they name stays whole).
        let longest_word = rows
            .iter()
            .flat_map(|r| r[notes].split(' '))
            .map(text_width)
            .max()
            .unwrap_or(0);
        let rank = |i: usize| {
            if i == notes {
                notes_empty.then_some(0)
            } else {
                drop_rank(head[i], tick_unit)
            }
        };
        // Each column takes its text, a space either side and the border on its right; the
        // table's left border is the 1.
        let others = |shown: &[bool]| {
            1 + (0..notes)
                .filter(|&i| shown[i])
                .map(|i| natural[i] + 3)
                .sum::<usize>()
        };
        while let Some((r, next)) = (0..cols)
            .filter(|&i| shown[i])
            .filter_map(|i| rank(i).map(|r| (r, i)))
            .min()
        {
            // The interval goes only when the notes could not be read beside it.
            let wanted = natural[notes]
                .min(if r < LAST_RANK {
                    NOTES_WANTED
                } else {
                    NOTES_BESIDE_CI
                })
                .max(longest_word);
            if others(&shown) + if shown[notes] { wanted + 3 } else { 0 } <= width {
                break;
            }
            shown[next] = false;
        }
        if shown[notes] {
            let room = width.saturating_sub(others(&shown) + 3);
            if room < natural[notes] {
                if room >= NOTES_NARROWEST.max(longest_word) {
                    notes_width = Some(room);
                } else {
                    notes_below = true;
                    shown[notes] = false;
                }
            }
        }
    }
    let below = if notes_below {
        rows.iter()
            .filter(|r| !r[notes].is_empty())
            .map(|r| (r[0].clone(), r[notes].clone()))
            .collect()
    } else {
        Vec::new()
    };

    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED);
    // Laid out here, not by the terminal: the same width gives the same table everywhere.
    t.force_no_tty();
    t.set_content_arrangement(ContentArrangement::Disabled);
    let keep = |r: Vec<String>| -> Vec<String> {
        r.into_iter()
            .zip(&shown)
            .filter_map(|(c, &s)| s.then_some(c))
            .collect()
    };
    let right: Vec<bool> = (0..cols)
        .filter(|&i| shown[i])
        .map(|i| i > 0 && i < notes)
        .collect();
    t.set_header(keep(head.iter().map(|h| h.to_string()).collect()));
    for mut r in rows {
        // Wrapped here, between words: the table is laid out by oscost, not by comfy-table.
        if let Some(w) = notes_width {
            r[notes] = wrap_words(&r[notes], w);
        }
        t.add_row(keep(r).into_iter().zip(&right).map(|(s, &right)| {
            let c = Cell::new(s);
            if right {
                c.set_alignment(CellAlignment::Right)
            } else {
                c
            }
        }));
    }
    let kept = keep(head.iter().map(|h| h.to_string()).collect());
    (t, below, kept)
}

/// `text` wrapped at spaces to `width` columns, continuation lines indented by `indent`
/// spaces (a word longer than a line is left whole); unchanged without a width. Ends in a
/// newline.
pub fn wrap(text: &str, width: Option<u16>, indent: usize) -> String {
    let Some(width) = width.map(usize::from) else {
        return format!("{text}\n");
    };
    let body = text.trim_start_matches(' ');
    let mut out = String::new();
    let mut line = " ".repeat(text.len() - body.len());
    let mut words = 0;
    for word in body.split(' ').filter(|w| !w.is_empty()) {
        if words > 0 && text_width(&line) + 1 + text_width(word) > width {
            out += &line;
            out.push('\n');
            line = " ".repeat(indent);
            words = 0;
        }
        if words > 0 {
            line.push(' ');
        }
        line += word;
        words += 1;
    }
    out += &line;
    out.push('\n');
    out
}

/// How much of an experiment's warnings its terminal view prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Warnings {
    /// None (`--quiet`); the notes column still names each case's kinds of warning.
    Hidden,
    /// Experiment-wide warnings, and one line per kind of per-case warning saying how many
    /// cases it touched, what it means, what to do and where the methodology explains it.
    #[default]
    Summary,
    /// The summary, and under each kind every case's own text (`--verbose`).
    Full,
}

/// The terminal view of one experiment: its table, derived figures, unavailable cases and
/// warnings summarised by kind. `tick_unit` names the counter column (`ref-cycles` for the
/// TSC); `width` is the terminal's width (`None`: the tables' natural width).
pub fn terminal(e: &ExperimentResult, tick_unit: &str, width: Option<u16>) -> String {
    terminal_with(e, tick_unit, width, Warnings::Summary)
}

/// [`terminal`] with the warnings printed as `warnings` says.
///
/// In a narrow terminal columns are dropped, `min` first, then `p95`, `share at rate`, the tick
/// column and `95% CI`, before the notes are wrapped; a case id is never split.
pub fn terminal_with(
    e: &ExperimentResult,
    tick_unit: &str,
    width: Option<u16>,
    warnings: Warnings,
) -> String {
    let mut s = format!("{}\n", e.name);
    let mut notes_below = Vec::new();
    let mut shares = false;
    let (head, r) = rows(e, tick_unit);
    if !r.is_empty() {
        let (t, below, kept) = table(&head, r, tick_unit, width);
        s += &t.to_string();
        s.push('\n');
        notes_below.extend(below);
        shares = kept.iter().any(|h| h == "share at rate");
    }
    if let Some(rate) = e.params.get("rate_per_s").and_then(|v| v.as_f64()) {
        if shares {
            s += &wrap(
                &format!("share at rate: part of each second spent in the call at {rate} calls/s"),
                width,
                2,
            );
        }
    }
    let d = derived_rows(e);
    if !d.is_empty() {
        s += "derived\n";
        let (t, below, _) = table(
            &["figure", "estimate", "95% CI", tick_unit, "notes"],
            d,
            tick_unit,
            width,
        );
        s += &t.to_string();
        s.push('\n');
        notes_below.extend(below);
    }
    for (id, n) in notes_below {
        s += &wrap(&format!("note: {id}: {n}"), width, 2);
    }
    for v in crate::views::views(e) {
        s += &view_table(&v, width);
    }
    for u in &e.unavailable {
        s += &wrap(&format!("not measured: {}: {}", u.id, u.reason), width, 2);
    }
    if warnings == Warnings::Hidden {
        return s;
    }
    // One warning per experiment: a single problem on one line, several as a list under one
    // line, so a run never buries its tables under a wall of warnings.
    let full = warnings == Warnings::Full;
    let mut items: Vec<(String, Vec<String>)> =
        e.warnings.iter().map(|w| (w.clone(), Vec::new())).collect();
    items.extend(warnings::summary(e, warnings::Of::Warnings, full));
    match items.len() {
        0 => {}
        1 => {
            let (line, detail) = &items[0];
            s += &wrap(&format!("warning: {line}"), width, 2);
            for d in detail {
                s += &wrap(&format!("  {d}"), width, 4);
            }
        }
        n => {
            s += &wrap(
                &format!("warning: {n} things may have moved the {} figures:", e.name),
                width,
                2,
            );
            for (line, detail) in &items {
                s += &wrap(&format!("  - {line}"), width, 4);
                for d in detail {
                    s += &wrap(&format!("    {d}"), width, 6);
                }
            }
        }
    }
    // Notes are context, not problems: one plain line per kind, after the warnings, so the
    // eye that looks for `warning:` finds only what is worth acting on.
    let mut notes: Vec<(String, Vec<String>)> =
        e.notes.iter().map(|w| (w.clone(), Vec::new())).collect();
    notes.extend(warnings::summary(e, warnings::Of::Notes, full));
    for (line, detail) in &notes {
        s += &wrap(&format!("note: {line}"), width, 2);
        for d in detail {
            s += &wrap(&format!("  {d}"), width, 4);
        }
    }
    s
}

/// An experiment's extra table (see [`crate::views`]) for the terminal: its title, the table
/// and its notes, wrapped to `width`. A table wider than `width` is folded into several, each
/// repeating the first column, so every figure stays whole and in view.
pub fn view_table(v: &crate::views::View, width: Option<u16>) -> String {
    use crate::layout::{fit, Col, Overflow};
    // Numbers (and `-` for none) line up on the right, words on the left.
    let cols: Vec<Col> = v
        .head
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let numeric = v.rows.iter().filter_map(|r| r.get(i)).all(|c| {
                c == "-"
                    || c.is_empty()
                    || c.starts_with(|ch: char| ch.is_ascii_digit() || "+-±<≈".contains(ch))
            });
            Col::keep(h, numeric)
        })
        .collect();
    let mut s = wrap(&v.title, width, 2);
    s += &fit(&cols, &v.rows, width, Overflow::Fold);
    for n in &v.notes {
        s += &wrap(n, width, 2);
    }
    s
}

/// The width text is laid out to: `COLUMNS` when it is set to a number (it overrides the
/// terminal), else the width of the terminal standard output (or standard error) is; none
/// (natural width) for a pipe or a file.
pub fn layout_width(stderr: bool) -> Option<u16> {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<u16>().ok())
        .filter(|&c| c > 0)
        .or_else(|| terminal_width(stderr))
}

/// The width of the terminal that standard output (or standard error) is, if it is one.
pub fn terminal_width(stderr: bool) -> Option<u16> {
    let mut t = Table::new();
    if stderr {
        t.use_stderr();
    }
    t.width().filter(|&w| w > 0)
}

/// The whole document as Markdown tables.
pub fn markdown(doc: &ResultDoc) -> String {
    let mut s = format!(
        "# oscost results\n\n{}, clock: {} at {:.1} MHz ({}).\n",
        match &doc.environment.os {
            Some(os) => os.describe(),
            None => format!("Kernel {}", doc.environment.kernel_release),
        },
        doc.environment.clock.tick_unit,
        doc.environment.clock.frequency_hz / 1e6,
        doc.environment.clock.frequency_source
    );
    for e in &doc.experiments {
        s += &format!("\n## {}\n\n", e.name);
        let unit = doc.environment.clock.tick_unit.as_str();
        let (head, r) = rows(e, unit);
        s += &md_table(&head, &r);
        let d = derived_rows(e);
        if !d.is_empty() {
            s += "\n### derived\n\n";
            s += &md_table(&["figure", "estimate", "95% CI", unit, "notes"], &d);
        }
        for v in crate::views::views(e) {
            s += &format!("\n### {}\n\n", v.title);
            let head: Vec<&str> = v.head.iter().map(String::as_str).collect();
            s += &md_table(&head, &v.rows);
            for n in &v.notes {
                s += &format!("\n{n}\n");
            }
        }
        for u in &e.unavailable {
            s += &format!("\n- not measured: `{}`: {}", u.id, u.reason);
        }
        for w in &e.warnings {
            s += &format!("\n- warning: {w}");
        }
        for c in &e.cases {
            for w in &c.warnings {
                s += &format!("\n- warning: `{}`: {w}", c.id);
            }
        }
        for n in &e.notes {
            s += &format!("\n- note: {n}");
        }
        for c in &e.cases {
            for n in &c.notes {
                s += &format!("\n- note: `{}`: {n}", c.id);
            }
        }
        s.push('\n');
    }
    s
}

fn md_table(head: &[&str], rows: &[Vec<String>]) -> String {
    let esc = |x: &str| x.replace('|', "\\|");
    let mut s = format!("| {} |\n", head.join(" | "));
    s += &format!("|{}\n", head.iter().map(|_| "---|").collect::<String>());
    for r in rows {
        s += &format!(
            "| {} |\n",
            r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
        );
    }
    s
}

/// One CSV row per case.
pub fn csv(doc: &ResultDoc) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "experiment",
        "id",
        "unit",
        "median_ns",
        "mad_ns",
        "min_ns",
        "max_ns",
        "p5_ns",
        "p95_ns",
        "ci95_low_ns",
        "ci95_high_ns",
        "median_cycles",
        "samples",
        "iterations_per_sample",
        "loop_overhead_ns",
        "checks_passed",
        "noisy",
        "warnings",
        "flagged",
    ])?;
    for e in &doc.experiments {
        for c in &e.cases {
            w.write_record([
                e.name.clone(),
                c.id.clone(),
                c.unit.clone(),
                format!("{:.3}", c.median_ns),
                format!("{:.3}", c.mad_ns),
                format!("{:.3}", c.min_ns),
                format!("{:.3}", c.max_ns),
                format!("{:.3}", c.p5_ns),
                format!("{:.3}", c.p95_ns),
                format!("{:.3}", c.ci95_ns[0]),
                format!("{:.3}", c.ci95_ns[1]),
                format!("{:.1}", c.median_cycles),
                c.samples.to_string(),
                c.iterations_per_sample.to_string(),
                format!("{:.3}", c.loop_overhead_ns),
                c.checks_passed.to_string(),
                c.noisy.to_string(),
                c.warnings.join("; "),
                String::new(),
            ])?;
        }
        // Derived figures follow their experiment's cases: unit `derived`, the estimate in the
        // median column, and why it is not trusted in `flagged` (empty when it is).
        for d in &e.derived {
            let blank = String::new;
            w.write_record([
                e.name.clone(),
                d.id.clone(),
                "derived".into(),
                format!("{:.3}", d.estimate_ns),
                blank(),
                blank(),
                blank(),
                blank(),
                blank(),
                format!("{:.3}", d.ci95_ns[0]),
                format!("{:.3}", d.ci95_ns[1]),
                format!("{:.1}", d.estimate_cycles),
                blank(),
                blank(),
                blank(),
                blank(),
                blank(),
                blank(),
                d.flagged.clone().unwrap_or_default(),
            ])?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// The document as pretty JSON.
pub fn json(doc: &ResultDoc) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(doc)? + "\n")
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

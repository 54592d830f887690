//! The terminal exporter: each experiment's tables laid out for the terminal's width, its
//! derived figures, what was not measured, and its warnings summarised by kind.

use super::table::{derived_rows, rows, Notes};
use super::warnings::{summary, Of};
use super::{ExportOptions, Exporter};
use crate::layout::text_width;
pub use crate::layout::{layout_width, terminal_width, wrap, wrap_words};
use comfy_table::{presets, Cell, CellAlignment, ContentArrangement, Table};
use oscost_model::schema::{ExperimentResult, ResultDoc};

/// Tables for a person at a terminal (extension `txt` when written to a file).
#[derive(Debug, Clone, Copy, Default)]
pub struct Terminal;

impl Exporter for Terminal {
    fn name(&self) -> &'static str {
        "terminal"
    }

    fn extension(&self) -> &'static str {
        "txt"
    }

    /// Every experiment's view in turn, as a run prints them one after the other.
    fn export(&self, doc: &ResultDoc, opts: &ExportOptions) -> anyhow::Result<String> {
        let unit = doc.environment.clock.tick_unit.as_str();
        Ok(doc
            .experiments
            .iter()
            .map(|e| experiment(e, unit, opts))
            .collect())
    }
}

/// Columns the terminal drops when it is too narrow, first to go first: `min`, `p95`,
/// `share at rate`, the tick column, then `95% CI`. The id, the median and the notes always
/// stay; an empty notes column is not shown in a terminal.
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
        // A column of no notes at all says nothing.
        if notes_empty {
            shown[notes] = false;
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
/// warnings, laid out for `opts.width` (`None`: the tables' natural width) and with the
/// warnings printed as `opts.warnings` says. `tick_unit` names the counter column
/// (`ref-cycles` for the TSC).
///
/// In a narrow terminal columns are dropped, `min` first, then `p95`, `share at rate`, the tick
/// column and `95% CI`, before the notes are wrapped; a case id is never split.
pub fn experiment(e: &ExperimentResult, tick_unit: &str, opts: &ExportOptions) -> String {
    let (width, warnings) = (opts.width, opts.warnings);
    // By default the detail (each passed check's figures, each case's kinds of note, a wide
    // derived interval's figures, every row of a view) is left to --verbose, the report and
    // `history show --verbose`; failed checks, figures and warnings all stay.
    let how = if warnings == Warnings::Summary {
        Notes::Brief
    } else {
        Notes::Whole
    };
    let mut s = format!("{}\n", e.name);
    let mut notes_below = Vec::new();
    let mut shares = false;
    let (head, r) = rows(e, tick_unit, true, how);
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
    let mut d = derived_rows(e, how);
    if !d.is_empty() {
        // In a terminal, brief notes go under the table, a line each, leaving the table its
        // interval (they would be wrapped a few words a line beside a long figure id).
        let mut brief_below = Vec::new();
        if how == Notes::Brief && width.is_some() {
            // A flagged figure keeps its notes beside it, as a failed check does.
            for r in d
                .iter_mut()
                .filter(|r| !r[r.len() - 1].starts_with("FLAGGED"))
            {
                let n = r.last_mut().map(std::mem::take).unwrap_or_default();
                if !n.is_empty() {
                    brief_below.push((r[0].clone(), n));
                }
            }
        }
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
        notes_below.extend(brief_below);
    }
    for (id, n) in notes_below {
        s += &wrap(&format!("note: {id}: {n}"), width, 2);
    }
    for mut v in crate::experiments::views(e) {
        if warnings == Warnings::Full {
            s += &view(&v, width);
        } else {
            v.detail.clear();
            s += &view(&first_of_each_group(v, GROUP_ROWS), width);
        }
    }
    s += &not_measured(&e.unavailable, width, "");
    if warnings == Warnings::Hidden {
        return s;
    }
    // One warning per experiment: a single problem on one line, several as a list under one
    // line, so a run never buries its tables under a wall of warnings.
    let full = warnings == Warnings::Full;
    let mut items: Vec<(String, Vec<String>)> =
        e.warnings.iter().map(|w| (w.into(), Vec::new())).collect();
    items.extend(summary(e, Of::Warnings, full));
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
        e.notes.iter().map(|w| (w.into(), Vec::new())).collect();
    notes.extend(summary(e, Of::Notes, full));
    for (line, detail) in &notes {
        s += &wrap(&format!("note: {line}"), width, 2);
        for d in detail {
            s += &wrap(&format!("  {d}"), width, 4);
        }
    }
    s
}

/// The lines saying which cases were not measured and why, each starting with `lead`. Cases
/// refused for one reason (a helper's policy at every period) share one line; reasons that
/// end in one fix (`; run as root, or …`, cgroup's v1 and v2 refusals) say it once, after them.
pub(super) fn not_measured(
    unavailable: &[oscost_model::schema::UnavailableCase],
    width: Option<u16>,
    lead: &str,
) -> String {
    let mut refused: Vec<(Vec<&str>, &str)> = Vec::new();
    for u in unavailable {
        match refused.iter_mut().find(|(_, why)| *why == u.reason) {
            Some((ids, _)) => ids.push(&u.id),
            None => refused.push((vec![&u.id], &u.reason)),
        }
    }
    // The fix is what follows a reason's last `; `, when every reason has the same one.
    let fix = |why: &str| why.rsplit_once("; ").map(|(_, fix)| fix.to_owned());
    let shared = match refused.as_slice() {
        [_, _, ..] => {
            fix(refused[0].1).filter(|f| refused.iter().all(|r| fix(r.1).as_ref() == Some(f)))
        }
        _ => None,
    };
    let indent = lead.len() + 2;
    let mut s = String::new();
    for (ids, why) in &refused {
        let why = match &shared {
            Some(f) => why
                .strip_suffix(f.as_str())
                .map_or(*why, |w| w.trim_end_matches("; ")),
            None => why,
        };
        s += &wrap(
            &format!("{lead}not measured: {}: {why}", ids.join(", ")),
            width,
            indent,
        );
    }
    if let Some(f) = shared {
        let each = if refused.len() == 2 { "both" } else { "each" };
        s += &wrap(&format!("{lead}  for {each}: {f}"), width, indent + 2);
    }
    s
}

/// How many rows of each case a view that gives a case several rows (wakeup's worst
/// wake-ups) shows without `--verbose`.
pub const GROUP_ROWS: usize = 1;

/// `v` with only the first `n` rows of each group: a row naming its case in the first cell
/// and the rows after it that leave that cell empty. A view whose rows each name their case
/// is returned whole; one cut says so in a note, and where the rest is.
pub fn first_of_each_group(mut v: crate::views::View, n: usize) -> crate::views::View {
    let named = |r: &Vec<String>| r.first().is_some_and(|c| !c.is_empty());
    if v.rows.iter().all(named) {
        return v;
    }
    let total = v.rows.len();
    let mut in_group = 0;
    v.rows.retain(|r| {
        in_group = if named(r) { 1 } else { in_group + 1 };
        in_group <= n
    });
    if v.rows.len() < total {
        let first = if n == 1 {
            "the first row".to_owned()
        } else {
            format!("the first {n} rows")
        };
        v.notes.push(format!(
            "{first} of each case ({} of {total}): --verbose and the report show all",
            v.rows.len()
        ));
    }
    v
}

/// An experiment's extra table (see [`crate::views`]) for the terminal: its title, the table,
/// its notes and its detail, wrapped to `width`. A table wider than `width` is folded into several, each
/// repeating the first column, so every figure stays whole and in view.
pub fn view(v: &crate::views::View, width: Option<u16>) -> String {
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
    for n in v.notes.iter().chain(&v.detail) {
        s += &wrap(n, width, 2);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::View;

    #[test]
    fn refusals_that_end_in_one_fix_say_it_once() {
        let u = |id: &str, reason: &str| oscost_model::schema::UnavailableCase {
            id: id.into(),
            description: String::new(),
            reason: reason.into(),
        };
        let fix = "run as root, or in a delegated cgroup";
        let list = [
            u("cgroup.a", &format!("v2 refused: EACCES; {fix}")),
            u("cgroup.b", &format!("v2 refused: EACCES; {fix}")),
            u("cgroup.c", &format!("v1 refused: EACCES; {fix}")),
        ];
        let text = not_measured(&list, Some(100), "");
        assert_eq!(text.matches(fix).count(), 1, "{text}");
        assert!(text.contains("not measured: cgroup.a, cgroup.b: v2 refused: EACCES\n"));
        assert!(text.contains("not measured: cgroup.c: v1 refused: EACCES\n"));
        assert!(text.ends_with(&format!("  for both: {fix}\n")), "{text}");
        // One reason: said whole.
        let text = not_measured(&list[..2], Some(100), "  ");
        assert_eq!(
            text,
            format!("  not measured: cgroup.a, cgroup.b: v2 refused: EACCES; {fix}\n")
        );
    }

    #[test]
    fn by_default_passed_checks_are_counted_and_the_views_detail_left_to_verbose() {
        use crate::views::testkit;
        let mut timed = testkit::case("wakeup.fifo.1ms", "wake-up", 20_000.0);
        for (name, passed) in [("a_count", true), ("b_count", true), ("c_count", false)] {
            timed.checks.push(oscost_model::case::Check {
                name: name.into(),
                expected: 1.0,
                counted: if passed { 1.0 } else { 3.0 },
                bound: Some(oscost_model::case::Bound::Within(0.05)),
                passed,
                detail: String::new(),
            });
        }
        timed.notes.push("a note of its own kind: detail".into());
        let e = testkit::experiment(
            "wakeup",
            vec![timed, crate::views::wakeup::tests::split_case()],
        );
        let text = |warnings| {
            let opts = ExportOptions {
                width: Some(200),
                warnings,
                label: None,
            };
            experiment(&e, "ref-cycles", &opts)
        };
        let brief = text(Warnings::Summary);
        // The failed check with its figures, the passed ones counted; the note said once below.
        assert!(brief.contains("3.00 c count"), "{brief}");
        assert!(
            !brief.contains("a count") && brief.contains("✓ 2 checks"),
            "{brief}"
        );
        assert_eq!(
            brief.matches("a note of its own kind").count(),
            1,
            "{brief}"
        );
        assert!(brief.contains("Traced in a second run") && !brief.contains("added up"));
        let full = text(Warnings::Full);
        assert!(
            full.contains("1.00 a count") && !full.contains("✓ 2 checks"),
            "{full}"
        );
        assert!(full.contains("each wake-up's parts added up"), "{full}");
    }

    #[test]
    fn a_view_with_several_rows_per_case_keeps_the_first_of_each_and_says_so() {
        let row = |id: &str, x: &str| vec![id.to_owned(), x.to_owned()];
        let v = View {
            detail: Vec::new(),
            title: "worst".into(),
            head: vec!["case".into(), "lateness".into()],
            rows: vec![
                row("a", "9"),
                row("", "8"),
                row("", "7"),
                row("", "6"),
                row("b", "5"),
                row("", "4"),
            ],
            notes: vec![],
        };
        let cut = first_of_each_group(v.clone(), 2);
        let kept: Vec<&str> = cut.rows.iter().map(|r| r[1].as_str()).collect();
        assert_eq!(kept, ["9", "8", "5", "4"]);
        assert!(cut.notes[0].contains("(4 of 6)"), "{:?}", cut.notes);
        // Nothing to cut: the view as it was, without a note.
        assert_eq!(first_of_each_group(v.clone(), 4), v);
        let plain = View {
            rows: vec![row("a", "1"), row("b", "2")],
            ..v
        };
        assert_eq!(first_of_each_group(plain.clone(), 1), plain);
    }
}

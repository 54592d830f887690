//! Tables that fit the terminal: columns of low priority are dropped first; then a table that
//! is still too wide is folded into several narrower ones (each repeating the first column)
//! or shown as one block of lines per row. A figure or an id is never cut or wrapped.
//!
//! Without a width every table keeps its natural width. The commands always give one
//! ([`layout_width`]: 80 columns for a pipe or a file), so that what is read on a terminal
//! after `| less` or from a saved file fits too; a program reads every column from
//! `--csv` or `--json` instead.
//!
//! Text around the tables is wrapped between words ([`wrap`]), never inside one, to the width
//! [`layout_width`] finds.

use comfy_table::{presets, Cell, CellAlignment, ContentArrangement, Table};

/// One column of a table to fit.
#[derive(Debug, Clone)]
pub(crate) struct Col {
    /// Header.
    pub head: String,
    /// Whether its cells line up on the right (figures).
    pub right: bool,
    /// When it is dropped to make room, lowest first; `None`: kept.
    pub drop: Option<u8>,
    /// Shown again when the table becomes one block of lines per row, where width is no
    /// longer short (a comparison's two figures beside their ratio).
    pub listed: bool,
}

impl Col {
    /// A column that stays, aligned right when `right`.
    pub fn keep(head: &str, right: bool) -> Col {
        Col {
            head: head.into(),
            right,
            drop: None,
            listed: false,
        }
    }

    /// A column dropped at rank `rank` when the table is too wide.
    pub fn drop(head: &str, right: bool, rank: u8) -> Col {
        Col {
            head: head.into(),
            right,
            drop: Some(rank),
            listed: false,
        }
    }

    /// The same column, shown again in the one-block-per-row form after it was dropped.
    pub fn listed(mut self) -> Col {
        self.listed = true;
        self
    }
}

/// What a table does when even its kept columns do not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Overflow {
    /// Several tables of fewer columns, each starting with the first column.
    Fold,
    /// One block per row: the first cell (and the `headline` column beside it), then every
    /// other column as `head value`, wrapped.
    List {
        /// A column shown on the row's first line, beside its id.
        headline: Option<usize>,
    },
}

/// The width a line of text takes on a terminal (every character here is one column wide).
pub(crate) fn text_width(s: &str) -> usize {
    s.chars().count()
}

/// Width of a table of these columns: each takes its text, a space either side and a border
/// on its right; the left border is the 1.
fn table_width(natural: &[usize], shown: &[bool]) -> usize {
    1 + natural
        .iter()
        .zip(shown)
        .filter(|(_, &s)| s)
        .map(|(w, _)| w + 3)
        .sum::<usize>()
}

/// The table laid out for `width` columns (natural width without one). Ends in a newline.
pub(crate) fn fit(
    cols: &[Col],
    rows: &[Vec<String>],
    width: Option<u16>,
    overflow: Overflow,
) -> String {
    let natural: Vec<usize> = (0..cols.len())
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| text_width(c))
                .chain([text_width(&cols[i].head)])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut shown = vec![true; cols.len()];
    let Some(width) = width.map(usize::from) else {
        return table(cols, rows, &shown);
    };
    while table_width(&natural, &shown) > width {
        let next = (0..cols.len())
            .filter(|&i| shown[i])
            .filter_map(|i| cols[i].drop.map(|r| (r, i)))
            .min();
        match next {
            Some((_, i)) => shown[i] = false,
            None => break,
        }
    }
    if table_width(&natural, &shown) <= width {
        return table(cols, rows, &shown);
    }
    let kept: Vec<usize> = (0..cols.len()).filter(|&i| shown[i]).collect();
    if overflow == Overflow::Fold && kept.len() > 1 {
        // Groups of the columns after the first, each as wide as fits beside the first.
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let base = 1 + natural[0] + 3;
        let mut used = base;
        for &i in &kept[1..] {
            if groups.is_empty() || used + natural[i] + 3 > width {
                groups.push(Vec::new());
                used = base;
            }
            groups.last_mut().expect("pushed").push(i);
            used += natural[i] + 3;
        }
        let all_fit = groups
            .iter()
            .all(|g| g.iter().map(|&i| natural[i] + 3).sum::<usize>() + base <= width);
        if all_fit {
            return groups
                .iter()
                .map(|g| {
                    let mut s = vec![false; cols.len()];
                    s[0] = true;
                    for &i in g {
                        s[i] = true;
                    }
                    table(cols, rows, &s)
                })
                .collect();
        }
    }
    let headline = match overflow {
        Overflow::List { headline } => headline.filter(|&h| shown[h]),
        Overflow::Fold => None,
    };
    for (s, c) in shown.iter_mut().zip(cols) {
        *s |= c.listed;
    }
    list(cols, rows, &shown, headline, width)
}

fn table(cols: &[Col], rows: &[Vec<String>], shown: &[bool]) -> String {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED);
    // Laid out here, not by the terminal: the same width gives the same table everywhere.
    t.force_no_tty();
    t.set_content_arrangement(ContentArrangement::Disabled);
    let idx: Vec<usize> = (0..cols.len()).filter(|&i| shown[i]).collect();
    t.set_header(idx.iter().map(|&i| cols[i].head.clone()));
    for r in rows {
        t.add_row(idx.iter().map(|&i| {
            let c = Cell::new(r.get(i).map_or("", String::as_str));
            if cols[i].right {
                c.set_alignment(CellAlignment::Right)
            } else {
                c
            }
        }));
    }
    format!("{t}\n")
}

fn list(
    cols: &[Col],
    rows: &[Vec<String>],
    shown: &[bool],
    headline: Option<usize>,
    width: usize,
) -> String {
    let mut s = String::new();
    for r in rows {
        let cell = |i: usize| r.get(i).map_or("", String::as_str);
        let first = match headline {
            Some(h) if !cell(h).is_empty() => format!("{}: {}", cell(0), cell(h)),
            _ => cell(0).to_string(),
        };
        let items: Vec<String> = (1..cols.len())
            .filter(|&i| shown[i] && Some(i) != headline && !cell(i).is_empty())
            .map(|i| format!("{} {}", cols[i].head, cell(i)))
            .collect();
        // One line when it fits; else the id line and the items under it.
        let one = std::iter::once(first.clone())
            .chain(items.iter().cloned())
            .collect::<Vec<_>>()
            .join("; ");
        if text_width(&one) <= width {
            s += &one;
            s.push('\n');
            continue;
        }
        s += &wrap(&first, Some(width as u16), 4);
        if !items.is_empty() {
            s += &wrap_items(&items, width);
        }
    }
    s
}

/// `items` on lines indented by two spaces, separated by `; `, a line broken between items
/// (or, for an item longer than a line, between its words).
fn wrap_items(items: &[String], width: usize) -> String {
    let mut out = String::new();
    let mut line = String::from(" ");
    for (n, it) in items.iter().enumerate() {
        let sep = if n + 1 < items.len() { ";" } else { "" };
        let piece = format!(" {it}{sep}");
        if text_width(&line) > 2 && text_width(&line) + text_width(&piece) > width {
            out += &line;
            out.push('\n');
            line = String::from(" ");
        }
        if text_width(&line) + text_width(&piece) > width {
            let w = wrap(&format!("{line}{piece}"), Some(width as u16), 4);
            let mut lines: Vec<&str> = w.lines().collect();
            line = lines.pop().unwrap_or("").to_string();
            for l in lines {
                out += l;
                out.push('\n');
            }
        } else {
            line += &piece;
        }
    }
    out += &line;
    out.push('\n');
    out
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

/// `text` wrapped at spaces to `width` columns, continuation lines indented by `indent`
/// spaces (a word longer than a line is left whole); unchanged without a width. The spaces
/// between two words on one line are kept as they were (a name padded to a column stays in
/// its column); a line ends where they were. Ends in a newline.
pub fn wrap(text: &str, width: Option<u16>, indent: usize) -> String {
    let Some(width) = width.map(usize::from) else {
        return format!("{text}\n");
    };
    let body = text.trim_start_matches(' ');
    let mut out = String::new();
    let mut line = " ".repeat(text.len() - body.len());
    let mut words = 0;
    let mut rest = body;
    while !rest.is_empty() {
        let word_at = rest.len() - rest.trim_start_matches(' ').len();
        let (gap, after) = rest.split_at(word_at);
        let (word, after) = after.split_at(after.find(' ').unwrap_or(after.len()));
        rest = after;
        if word.is_empty() {
            break;
        }
        if words > 0 && text_width(&line) + gap.len() + text_width(word) > width {
            out += &line;
            out.push('\n');
            line = " ".repeat(indent);
            words = 0;
        }
        if words > 0 {
            line += gap;
        }
        line += word;
        words += 1;
    }
    out += &line;
    out.push('\n');
    out
}

/// Width text goes to a pipe or a file with: a pager or an editor shows lines this long
/// whole, where a row of several hundred columns wraps into noise.
pub const PIPED_WIDTH: u16 = 80;

/// The width text is laid out to: `COLUMNS` when it is set to a number (it overrides the
/// terminal), else the width of the terminal standard output (or standard error) is, else
/// [`PIPED_WIDTH`] for a pipe or a file. Always `Some`; the `Option` is what the layout
/// functions take, where `None` keeps a table's natural width.
pub fn layout_width(stderr: bool) -> Option<u16> {
    Some(width_from(
        std::env::var("COLUMNS").ok().as_deref(),
        terminal_width(stderr),
    ))
}

/// [`layout_width`] from the value of `COLUMNS` and the terminal's width.
fn width_from(columns: Option<&str>, terminal: Option<u16>) -> u16 {
    columns
        .and_then(|c| c.trim().parse::<u16>().ok())
        .filter(|&c| c > 0)
        .or(terminal)
        .unwrap_or(PIPED_WIDTH)
}

/// The width of the terminal that standard output (or standard error) is, if it is one.
pub fn terminal_width(stderr: bool) -> Option<u16> {
    let mut t = Table::new();
    if stderr {
        t.use_stderr();
    }
    t.width().filter(|&w| w > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widest(s: &str) -> usize {
        s.lines().map(text_width).max().unwrap_or(0)
    }

    fn sample() -> (Vec<Col>, Vec<Vec<String>>) {
        let cols = vec![
            Col::keep("case", false),
            Col::drop("min", true, 1),
            Col::keep("median", true),
            Col::keep("verdict", false),
        ];
        let rows = vec![
            vec![
                "timeline.processes.n1".into(),
                "1.000 s".into(),
                "2.350 s".into(),
                "too few samples to tell".into(),
            ],
            vec![
                "x".into(),
                "1.0 ns".into(),
                "1.0 ns".into(),
                "no difference".into(),
            ],
        ];
        (cols, rows)
    }

    #[test]
    fn columns_else_the_terminal_else_80() {
        assert_eq!(width_from(Some("60"), Some(120)), 60);
        assert_eq!(width_from(Some(" 200 "), None), 200);
        assert_eq!(width_from(None, Some(120)), 120);
        assert_eq!(width_from(Some("wide"), Some(120)), 120);
        assert_eq!(width_from(Some("0"), None), PIPED_WIDTH);
        assert_eq!(width_from(None, None), PIPED_WIDTH);
    }

    #[test]
    fn wrapping_keeps_the_padding_between_words_on_a_line() {
        let s = wrap("ring     a token passed round a ring of tasks", Some(30), 9);
        assert_eq!(
            s,
            "ring     a token passed round\n         a ring of tasks\n"
        );
        // Where a line breaks, the spaces go with it.
        assert_eq!(wrap("  ab   cd", Some(6), 4), "  ab\n    cd\n");
        assert_eq!(wrap("ab  ", Some(6), 0), "ab\n");
    }

    #[test]
    fn without_a_width_every_column_stays() {
        let (cols, rows) = sample();
        let s = fit(&cols, &rows, None, Overflow::Fold);
        assert!(s.contains("min") && s.contains("verdict"));
    }

    #[test]
    fn low_priority_columns_go_first() {
        let (cols, rows) = sample();
        let natural = widest(&fit(&cols, &rows, None, Overflow::Fold));
        let s = fit(&cols, &rows, Some(natural as u16 - 1), Overflow::Fold);
        assert!(!s.contains("min") && s.contains("verdict"));
        assert!(widest(&s) < natural);
    }

    #[test]
    fn folded_and_listed_tables_fit_and_keep_every_figure() {
        let (cols, rows) = sample();
        for w in [40u16, 30, 24] {
            for o in [Overflow::Fold, Overflow::List { headline: Some(3) }] {
                let s = fit(&cols, &rows, Some(w), o);
                assert!(widest(&s) <= w as usize, "{w} {o:?}:\n{s}");
                assert!(s.contains("2.350 s") && s.contains("too few"), "{s}");
            }
        }
        let s = fit(&cols, &rows, Some(30), Overflow::List { headline: Some(3) });
        assert!(s.starts_with("timeline.processes.n1: too few"), "{s}");
    }

    #[test]
    fn a_listed_column_dropped_from_the_table_comes_back_in_the_blocks() {
        let (mut cols, rows) = sample();
        let s = fit(&cols, &rows, Some(30), Overflow::List { headline: Some(3) });
        assert!(!s.contains("min 1.000 s"), "{s}");
        cols[1] = cols[1].clone().listed();
        let s = fit(&cols, &rows, Some(30), Overflow::List { headline: Some(3) });
        assert!(s.contains("min 1.000 s") && widest(&s) <= 30, "{s}");
        let natural = widest(&fit(&cols, &rows, None, Overflow::Fold));
        let s = fit(&cols, &rows, Some(natural as u16 - 1), Overflow::Fold);
        assert!(!s.contains("min"), "a table still drops it:\n{s}");
    }
}

//! The published baselines oscost ships: what studies of operating-system costs printed, as
//! `oscost-published/1` documents (`crates/report/baselines/*.json`), for `oscost baselines`
//! and `oscost compare published:<name>`.
//!
//! The documents are compiled in, so a baseline needs no file beside the binary. A document
//! that does not read is a bug in oscost, not a user error: the tests read every one.

use oscost_model::published::{read_published, Citation, PublishedDoc, PublishedFigure};

/// Every shipped document, by name, in the order `oscost baselines` lists them (study by
/// study).
const FILES: &[(&str, &str)] = &[
    (
        "minix3-kernel-drivers",
        include_str!("../baselines/minix3-kernel-drivers.json"),
    ),
    (
        "minix3-user-drivers",
        include_str!("../baselines/minix3-user-drivers.json"),
    ),
    (
        "linux-2.4-2002",
        include_str!("../baselines/linux-2.4-2002.json"),
    ),
    (
        "windows-2000-2002",
        include_str!("../baselines/windows-2000-2002.json"),
    ),
    (
        "windows-xp-2002",
        include_str!("../baselines/windows-xp-2002.json"),
    ),
    (
        "windows-yield-nt4-2cpu",
        include_str!("../baselines/windows-yield-nt4-2cpu.json"),
    ),
    (
        "windows-yield-2000-2cpu",
        include_str!("../baselines/windows-yield-2000-2cpu.json"),
    ),
    (
        "windows-yield-2000-1cpu",
        include_str!("../baselines/windows-yield-2000-1cpu.json"),
    ),
    (
        "windows-yield-xp-1cpu",
        include_str!("../baselines/windows-yield-xp-1cpu.json"),
    ),
    (
        "windows-yield-98se-1cpu",
        include_str!("../baselines/windows-yield-98se-1cpu.json"),
    ),
    (
        "windows-yield-summary",
        include_str!("../baselines/windows-yield-summary.json"),
    ),
    ("qnx-tick", include_str!("../baselines/qnx-tick.json")),
    (
        "linux-timeslice",
        include_str!("../baselines/linux-timeslice.json"),
    ),
];

/// Long text is wrapped at this width, as `oscost env` does.
const LINE_WIDTH: usize = 100;
/// Column where the values of a baseline's description start.
const LABEL_WIDTH: usize = 9;
const NOT_STATED: &str = "not stated";

fn parse(name: &str, text: &str) -> PublishedDoc {
    read_published(text)
        .unwrap_or_else(|e| panic!("shipped baseline `{name}` does not read (a bug): {e}"))
}

/// The names of the shipped baselines, in listing order.
pub fn names() -> Vec<&'static str> {
    FILES.iter().map(|(name, _)| *name).collect()
}

/// Every shipped baseline, in listing order.
pub fn all() -> Vec<PublishedDoc> {
    FILES.iter().map(|(name, text)| parse(name, text)).collect()
}

/// The shipped baseline called `name`, if there is one.
pub fn find(name: &str) -> Option<PublishedDoc> {
    FILES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(n, text)| parse(n, text))
}

/// A citation's short form, `Authors (year)`: one surname, two joined by "and", or the first
/// and "et al."; `(undated)` when the work carries no date.
pub fn short_citation(c: &Citation) -> String {
    let year = c
        .year
        .map_or_else(|| "undated".to_owned(), |y| y.to_string());
    let who = if c.authors.trim().eq_ignore_ascii_case("unknown") {
        "author unknown".to_owned()
    } else {
        let surnames: Vec<&str> = c
            .authors
            .split([',', ';'])
            .flat_map(|a| a.split(" and "))
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(|a| a.split_whitespace().last().unwrap_or(a))
            .collect();
        match surnames.as_slice() {
            [] => "author unknown".to_owned(),
            [one] => (*one).to_owned(),
            [a, b] => format!("{a} and {b}"),
            [first, ..] => format!("{first} et al."),
        }
    };
    format!("{who} ({year})")
}

/// A citation in full: authors, "title", venue, year.
pub fn full_citation(c: &Citation) -> String {
    let mut parts = vec![c.authors.clone(), format!("\"{}\"", c.title)];
    parts.extend(c.venue.clone());
    parts.push(
        c.year
            .map_or_else(|| "undated".to_owned(), |y| y.to_string()),
    );
    parts.join(", ")
}

fn mapped(doc: &PublishedDoc) -> usize {
    doc.figures.iter().filter(|f| f.case_id.is_some()).count()
}

/// Pads `s` to `width` characters (not bytes: titles hold `µ` and quotes).
fn pad(s: &str, width: usize) -> String {
    let n = s.chars().count();
    format!("{s}{}", " ".repeat(width.saturating_sub(n)))
}

/// The text of `oscost baselines`: one row per shipped baseline, then how to use one.
pub fn list_text() -> String {
    list_text_to(None)
}

/// [`list_text`] fitted to a terminal's `width`: the prose wrapped, each OS continued under
/// its column.
pub fn list_text_to(width: Option<u16>) -> String {
    let docs = all();
    let head = ["NAME", "CITATION", "FIGURES", "MAPPED", "OS"];
    let rows: Vec<[String; 5]> = docs
        .iter()
        .map(|d| {
            [
                d.name.clone(),
                short_citation(&d.citation),
                d.figures.len().to_string(),
                mapped(d).to_string(),
                d.machine.os.clone(),
            ]
        })
        .collect();
    let col_width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([head[i].len()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..head.len()).map(col_width).collect();
    let line = |cells: [&str; 5]| {
        let start = format!(
            "{}  {}  {:>w2$}  {:>w3$}  ",
            pad(cells[0], widths[0]),
            pad(cells[1], widths[1]),
            cells[2],
            cells[3],
            w2 = widths[2],
            w3 = widths[3],
        );
        let indent = start.chars().count();
        let w = width.map_or(usize::MAX, usize::from);
        if indent + cells[4].chars().count() <= w {
            return format!("{}\n", format!("{start}{}", cells[4]).trim_end());
        }
        // Too narrow for the OS beside the figures: under them, wrapped.
        let os = crate::layout::wrap(&format!("    {}", cells[4]), width, 4);
        format!("{}\n{os}", start.trim_end())
    };
    let mut out = crate::layout::wrap(
        "Published baselines: figures as their studies printed them, none measured by oscost.",
        width,
        0,
    );
    out += &crate::layout::wrap(
        "MAPPED figures stand beside an oscost figure of the same meaning (a case, or one \
         computed from a run as the study did: `oscost study`); the others say why none exists.",
        width,
        0,
    );
    out.push('\n');
    out.push_str(&line(head));
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
    }
    out.push_str(
        "\nCompare a result with one:  oscost compare published:<name> my.json\n\
         Show one in full:           oscost baselines <name>\n",
    );
    out
}

/// The words of `text`, a number kept together with the short unit after it (`12 %`,
/// `64 KiB`, `10 000`), so no line starts with a lone unit.
fn glued_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match words.last_mut() {
            Some(prev)
                if prev.ends_with(|c: char| c.is_ascii_digit()) && word.chars().count() <= 3 =>
            {
                prev.push(' ');
                prev.push_str(word);
            }
            _ => words.push(word.to_owned()),
        }
    }
    words
}

/// `text` wrapped at [`LINE_WIDTH`] at spaces: the first line after `first`, the others
/// after `rest`.
fn wrap(text: &str, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_owned();
    let mut words = 0;
    for word in glued_words(text) {
        let word = word.as_str();
        if words > 0 && line.chars().count() + 1 + word.chars().count() > LINE_WIDTH {
            out.push_str(line.trim_end());
            out.push('\n');
            line = rest.to_owned();
            words = 0;
        }
        if words > 0 {
            line.push(' ');
        }
        line.push_str(word);
        words += 1;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// One `label  value` row of a description, wrapped under the value column.
fn row(out: &mut String, label: &str, value: &str) {
    let first = format!("  {} ", pad(label, LABEL_WIDTH));
    let rest = " ".repeat(first.chars().count());
    out.push_str(&wrap(value, &first, &rest));
}

fn params_text(f: &PublishedFigure) -> String {
    f.params
        .iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k} = {s}"),
            other => format!("{k} = {other}"),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The text of `oscost baselines NAME`: the citation, the machine and method as the study
/// gave them, the caveats, and every figure with its unit, meaning and the oscost case it maps
/// to (or why none).
pub fn describe(doc: &PublishedDoc) -> String {
    let mut out = wrap(&format!("{}: {}", doc.name, doc.title), "", "  ");
    out.push('\n');
    row(&mut out, "citation", &full_citation(&doc.citation));
    let m = &doc.machine;
    row(&mut out, "os", &m.os);
    row(&mut out, "cpu", m.cpu.as_deref().unwrap_or(NOT_STATED));
    row(
        &mut out,
        "cpus",
        &m.cpus
            .map_or_else(|| NOT_STATED.to_owned(), |n| n.to_string()),
    );
    if let Some(d) = &m.details {
        row(&mut out, "machine", d);
    }
    row(&mut out, "method", &doc.method);
    for (i, note) in doc.notes.iter().enumerate() {
        let label = if i == 0 { "notes" } else { "" };
        let first = format!("  {} - ", pad(label, LABEL_WIDTH));
        let rest = " ".repeat(first.chars().count());
        out.push_str(&wrap(note, &first, &rest));
    }
    out.push('\n');
    out.push_str(&format!(
        "Figures: {}, {} set beside an oscost figure of the same meaning\n",
        doc.figures.len(),
        mapped(doc)
    ));
    let id_width = doc
        .figures
        .iter()
        .map(|f| f.id.chars().count())
        .max()
        .unwrap_or(0);
    for f in &doc.figures {
        out.push('\n');
        let per_op = f
            .per_op_ns
            .map_or_else(String::new, |ns| format!(" = {ns} ns per op"));
        let case = f.case_id.as_deref().unwrap_or("not mapped");
        // The documents spell microseconds `us`, as the schema's units do; people read µs.
        let unit = if f.unit == "us" {
            "µs"
        } else {
            f.unit.as_str()
        };
        out.push_str(&format!(
            "  {}  {} {unit}{per_op}  -> {case}\n",
            pad(&f.id, id_width),
            f.value,
        ));
        out.push_str(&wrap(&f.meaning, "      ", "      "));
        if !f.params.is_empty() {
            out.push_str(&wrap(&params_text(f), "      params: ", "        "));
        }
        if let Some(note) = &f.mapping_note {
            let label = if f.case_id.is_some() {
                "      mapping: "
            } else {
                "      not mapped: "
            };
            out.push_str(&wrap(note, label, "        "));
        }
        if let Some(n) = &f.nearest {
            out.push_str(&wrap(
                &format!("{n} (not the same meaning, never set beside it)"),
                "      nearest: ",
                "        ",
            ));
        }
    }
    out
}

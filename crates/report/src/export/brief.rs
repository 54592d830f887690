//! The brief terminal view a suite prints: each experiment's figures with their median, 95 %
//! interval and one check mark, as a grid where the ids form one (`pipe` × `threads.same`) and
//! as a plain list where they do not; its failed checks on lines of their own; and, once for
//! the whole run, the warnings every experiment shared and the notes by kind. The full tables,
//! views and per-case notes stay in the result document, the report and `--verbose`.

use super::warnings::{kinds, Of};
use crate::format::{check, ci_pct, fmt_ns};
use crate::layout::{text_width, wrap};
use oscost_model::schema::ExperimentResult;
use oscost_model::Held;

/// Widest a brief table may be without a terminal to fit (a file or a pipe).
const NATURAL_WIDTH: usize = 100;

/// One figure as the brief view shows it.
#[derive(Debug, Clone, PartialEq)]
struct Figure {
    /// Its id without the experiment's name, split at the dots.
    key: Vec<String>,
    /// `5.095 µs`.
    median: String,
    /// `±1.0%`.
    ci: String,
    /// `✓` every check held, `✗` one failed (or the figure is flagged), `?` one failed while
    /// others held the CPUs, empty: none.
    mark: &'static str,
}

impl Figure {
    fn cell(&self) -> String {
        let mut s = format!("{} {}", self.median, self.ci);
        if !self.mark.is_empty() {
            s.push(' ');
            s.push_str(self.mark);
        }
        s
    }
}

/// `±1.0 %` without its space, as a brief cell shows it.
fn short_ci(median: f64, ci: [f64; 2]) -> String {
    ci_pct(median, ci).replace(" %", "%")
}

fn key(experiment: &str, id: &str) -> Vec<String> {
    let rest = id
        .strip_prefix(experiment)
        .and_then(|r| r.strip_prefix('.'))
        .unwrap_or(id);
    rest.split('.').map(str::to_owned).collect()
}

/// How a failed check is marked: `?` where others held the CPUs, as the datasheet does.
fn failed_mark(e: &ExperimentResult) -> &'static str {
    if e.held().is_some() {
        "?"
    } else {
        "✗"
    }
}

/// Each failed check of `e` on a line of its own, marked as [`failed_mark`] says, then, where
/// others held the CPUs, one line saying who: not the OS's doing.
fn failed_checks(e: &ExperimentResult, width: Option<u16>, indent: &str) -> String {
    let mark = failed_mark(e);
    let mut s = String::new();
    for c in &e.cases {
        for k in c.checks.iter().filter(|k| !k.passed) {
            s += &wrap(
                &format!("{indent}{mark} {}: {}", c.id, check(k)),
                width,
                indent.len() + 4,
            );
        }
    }
    if let Some(h) = e.held().filter(|_| !s.is_empty()) {
        s += &wrap(
            &format!(
                "{indent}? failed while {}: not the OS's doing, run again when the machine is \
                 quiet",
                Held::words(&[h])
            ),
            width,
            indent.len() + 2,
        );
    }
    s
}

fn cases(e: &ExperimentResult) -> Vec<Figure> {
    let failed = failed_mark(e);
    e.cases
        .iter()
        .map(|c| Figure {
            key: key(&e.name, &c.id),
            median: fmt_ns(c.median_ns),
            ci: short_ci(c.median_ns, c.ci95_ns),
            mark: if c.checks.iter().any(|k| !k.passed) {
                failed
            } else if c.checks.is_empty() {
                ""
            } else {
                "✓"
            },
        })
        .collect()
}

/// Figures laid out as rows × columns: each figure's (row, column).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Grid {
    rows: Vec<String>,
    cols: Vec<String>,
    at: Vec<(usize, usize)>,
}

/// Splits each key into a row and a column part, `at` segments from its start (or, with
/// `from_end`, from its end); a key too short to split is a row of its own in the column
/// with no name. `None` when two figures would share a cell.
fn split(keys: &[Vec<String>], at: usize, from_end: bool) -> Option<Grid> {
    let mut g = Grid {
        rows: Vec::new(),
        cols: Vec::new(),
        at: Vec::new(),
    };
    fn index(list: &mut Vec<String>, s: String) -> usize {
        list.iter().position(|x| *x == s).unwrap_or_else(|| {
            list.push(s);
            list.len() - 1
        })
    }
    for k in keys {
        let (row, col) = if k.len() <= at {
            (k.join("."), String::new())
        } else {
            let p = if from_end { k.len() - at } else { at };
            (k[..p].join("."), k[p..].join("."))
        };
        let cell = (index(&mut g.rows, row), index(&mut g.cols, col));
        if g.at.contains(&cell) {
            return None;
        }
        g.at.push(cell);
    }
    Some(g)
}

/// The best grid for `figures` that fits `width`: the fewest rows, then the fewest columns,
/// among the splits with at least two columns that fill at least 60 % of their cells and
/// take at most two thirds of the lines a list would. `None`: a list reads better.
fn grid(figures: &[Figure], width: usize) -> Option<Grid> {
    let keys: Vec<Vec<String>> = figures.iter().map(|f| f.key.clone()).collect();
    let depth = keys.iter().map(Vec::len).max().unwrap_or(0);
    let n = figures.len();
    (1..depth)
        .flat_map(|at| [split(&keys, at, false), split(&keys, at, true)])
        .flatten()
        .filter(|g| {
            let (r, c) = (g.rows.len(), g.cols.len());
            c >= 2 && r * 3 <= n * 2 && n * 10 >= r * c * 6 && grid_width(g, figures) <= width
        })
        .min_by_key(|g| (g.rows.len(), g.cols.len()))
}

fn column_widths(g: &Grid, figures: &[Figure]) -> (usize, Vec<usize>) {
    let label = g.rows.iter().map(|r| text_width(r)).max().unwrap_or(0);
    let mut cols: Vec<usize> = g.cols.iter().map(|c| text_width(c)).collect();
    for (f, &(_, c)) in figures.iter().zip(&g.at) {
        cols[c] = cols[c].max(text_width(&f.cell()));
    }
    (label, cols)
}

fn grid_width(g: &Grid, figures: &[Figure]) -> usize {
    let (label, cols) = column_widths(g, figures);
    2 + label + cols.iter().map(|w| w + 2).sum::<usize>()
}

// Every character here is one column wide (see `text_width`), so std's padding, which counts
// characters, lines them up.
fn pad_left(s: &str, w: usize) -> String {
    format!("{s:>w$}")
}

fn pad_right(s: &str, w: usize) -> String {
    format!("{s:<w$}")
}

/// The grid's lines under a header naming `title` and the columns.
fn render_grid(title: &str, g: &Grid, figures: &[Figure]) -> String {
    let (label, cols) = column_widths(g, figures);
    let mut cells = vec![vec![String::new(); g.cols.len()]; g.rows.len()];
    for (f, &(r, c)) in figures.iter().zip(&g.at) {
        cells[r][c] = f.cell();
    }
    let mut s = pad_right(title, label + 2);
    for (c, w) in g.cols.iter().zip(&cols) {
        s += &format!("  {}", pad_left(c, *w));
    }
    s = s.trim_end().to_owned() + "\n";
    for (row, line) in g.rows.iter().zip(&cells) {
        let mut l = format!("  {}", pad_right(row, label));
        for (cell, w) in line.iter().zip(&cols) {
            l += &format!("  {}", pad_left(cell, *w));
        }
        s += l.trim_end();
        s.push('\n');
    }
    s
}

/// The widths of a list's columns over `figures`: the key (at least `least`), the median and
/// the interval.
fn list_widths(figures: &[Figure], least: usize) -> [usize; 3] {
    let most = |f: &dyn Fn(&Figure) -> usize, at_least: usize| {
        figures.iter().map(f).chain([at_least]).max().unwrap_or(0)
    };
    [
        most(&|f| text_width(&f.key.join(".")), least),
        most(&|f| text_width(&f.median), 6),
        most(&|f| text_width(&f.ci), 6),
    ]
}

/// One figure of a list, its columns `w` wide, its mark (or a space) last.
fn list_cell(f: &Figure, w: [usize; 3]) -> String {
    format!(
        "{}  {}  {} {}",
        pad_right(&f.key.join("."), w[0]),
        pad_left(&f.median, w[1]),
        pad_left(&f.ci, w[2]),
        if f.mark.is_empty() { " " } else { f.mark }
    )
}

/// The header over a list's column of figures `w` wide, its first `lead` columns `title`.
fn list_head(title: &str, w: [usize; 3]) -> String {
    format!(
        "{}  {}  {}  ",
        pad_right(title, w[0] + 2),
        pad_left("median", w[1]),
        pad_left("95% CI", w[2])
    )
}

/// The figures under a header naming `title`, the median and the interval: in two columns
/// side by side (the first half down the left, the rest down the right) when they fit `width`,
/// else one a line. Two columns halve a suite's longest lists (syscall's seventeen cases).
fn render_list(title: &str, figures: &[Figure], width: usize) -> String {
    let half = figures.len().div_ceil(2);
    let (left, right) = figures.split_at(half);
    let lw = list_widths(left, text_width(title).saturating_sub(2));
    let rw = list_widths(right, 0);
    let cell_width = |w: [usize; 3]| w[0] + w[1] + w[2] + 6;
    let gap = "   ";
    let two = !right.is_empty() && 2 + cell_width(lw) + gap.len() + cell_width(rw) <= width;
    let mut s = String::new();
    if two {
        let mut head = list_head(title, lw);
        head += gap;
        head += &list_head("", rw);
        s += head.trim_end();
        s.push('\n');
        for (i, l) in left.iter().enumerate() {
            let mut line = format!("  {}", list_cell(l, lw));
            if let Some(r) = right.get(i) {
                line += gap;
                line += &list_cell(r, rw);
            }
            s += line.trim_end();
            s.push('\n');
        }
        return s;
    }
    let w = list_widths(figures, text_width(title).saturating_sub(2));
    s += list_head(title, w).trim_end();
    s.push('\n');
    for f in figures {
        s += format!("  {}", list_cell(f, w)).trim_end();
        s.push('\n');
    }
    s
}

fn block(title: &str, figures: &[Figure], width: usize) -> String {
    if figures.is_empty() {
        return String::new();
    }
    match grid(figures, width) {
        Some(g) => render_grid(title, &g, figures),
        None => render_list(title, figures, width),
    }
}

/// One experiment, briefly: its cases' figures (a grid where their ids form one), then each
/// failed check and flagged figure on a line of its own, and what was not measured. Warnings,
/// notes and the refusals a privileged run would not meet are left to [`run_tail`], which says
/// each kind once for the run.
pub fn experiment(e: &ExperimentResult, width: Option<u16>) -> String {
    let room = width.map_or(NATURAL_WIDTH, usize::from);
    // Derived figures are left to the full view: in a suite they doubled the lines, and the
    // ones a reader wants first are on the datasheet.
    let mut s = block(&e.name, &cases(e), room);
    if s.is_empty() {
        s = format!("{}\n", e.name);
    }
    s += &failed_checks(e, width, "  ");
    let mark = failed_mark(e);
    // A figure flagged for a case's failed check says nothing the line above did not.
    let failed: Vec<&str> = e
        .cases
        .iter()
        .filter(|c| c.checks.iter().any(|k| !k.passed))
        .map(|c| c.id.as_str())
        .collect();
    for d in &e.derived {
        if let Some(f) = &d.flagged {
            if !failed.iter().any(|id| f.starts_with(&format!("{id}:"))) {
                s += &wrap(&format!("  {mark} {}: {f}", d.id), width, 6);
            }
        }
    }
    // Refusals a privileged run would not meet are said once for the run, by [`unprivileged`].
    let own: Vec<_> = e
        .unavailable
        .iter()
        .filter(|u| needs_privilege(&u.reason).is_none())
        .cloned()
        .collect();
    s += &super::terminal::not_measured(&own, width, "  ");
    s
}

/// The words a run as root would not have met, when `reason` ends in a fix that starts
/// `run as root` (`…: run as root, or …`, `…; run as root …`): the refusal before it, without
/// the OS's words for "not allowed" (which every such refusal has) and without the path it
/// was refused at (` in /sys/fs/cgroup/cpu/`), which `--verbose` says. `None` for any other
/// reason, one whose first fix is another (`raise it with ulimit -l …, or run as root`).
fn needs_privilege(reason: &str) -> Option<String> {
    let at = [": run as root", "; run as root"]
        .iter()
        .filter_map(|fix| reason.find(fix))
        .min()?;
    let head = &reason[..at];
    let denied = [
        " (Operation not permitted)",
        ": Operation not permitted",
        ": Permission denied",
    ];
    let mut head = denied
        .iter()
        .find_map(|d| head.strip_suffix(d))
        .unwrap_or(head)
        .to_owned();
    while let Some(at) = head.find(" in /") {
        let end = head[at + 4..].find(' ').map_or(head.len(), |n| at + 4 + n);
        head.replace_range(at..end, "");
    }
    Some(head)
}

/// `ids` with those that differ only in their last part said once: `tick.helper.{1ms,50us}`.
fn brace(ids: &[&str]) -> String {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for id in ids {
        let (stem, last) = id.rsplit_once('.').unwrap_or(("", id));
        match groups.iter_mut().find(|(s, _)| !s.is_empty() && *s == stem) {
            Some((_, lasts)) => lasts.push(last),
            None => groups.push((stem, vec![last])),
        }
    }
    let said: Vec<String> = groups
        .iter()
        .map(|(stem, lasts)| match lasts.as_slice() {
            [one] if stem.is_empty() => (*one).to_owned(),
            [one] => format!("{stem}.{one}"),
            _ => format!("{stem}.{{{}}}", lasts.join(",")),
        })
        .collect();
    said.join(", ")
}

/// The cases of a run not measured for want of privilege, said once for the run in one
/// paragraph: each refusal with the cases it stopped, and the fix they share (the other ways
/// to give the privilege are the experiment's `--verbose`, the report's and `history show`'s).
/// Empty when there are none (a run as root).
pub fn unprivileged(experiments: &[ExperimentResult], width: Option<u16>) -> String {
    let mut refused: Vec<(String, Vec<&str>)> = Vec::new();
    for u in experiments.iter().flat_map(|e| &e.unavailable) {
        let Some(why) = needs_privilege(&u.reason) else {
            continue;
        };
        match refused.iter_mut().find(|(w, _)| *w == why) {
            Some((_, ids)) => ids.push(&u.id),
            None => refused.push((why, vec![&u.id])),
        }
    }
    if refused.is_empty() {
        return String::new();
    }
    let each: Vec<String> = refused
        .iter()
        .map(|(why, ids)| format!("{}: {why}", brace(ids)))
        .collect();
    wrap(
        &format!(
            "not measured without root (other ways: --verbose): {}",
            each.join("; ")
        ),
        width,
        2,
    )
}

/// What a study's run says under the study's tables, which show none of it: each experiment's
/// failed checks and kinds of warning (a wide interval included, which no study cell shows),
/// then what [`run_tail`] says.
pub fn quality(experiments: &[ExperimentResult], width: Option<u16>) -> String {
    let mut s = String::new();
    for e in experiments {
        s += &failed_checks(e, width, "");
        let warned: Vec<String> = kinds(e, Of::Warnings)
            .into_iter()
            .map(|k| format!("{} ({} of {})", k.tag, k.cases, e.cases.len()))
            .collect();
        if !warned.is_empty() {
            s += &wrap(
                &format!("! {}: {}; --verbose says more", e.name, warned.join(", ")),
                width,
                2,
            );
        }
    }
    s + &tail(experiments, width, false)
}

/// What a brief run says once, after its last experiment: the cases not measured for want of
/// privilege ([`unprivileged`]), each experiment-wide warning (the
/// same kind met in several experiments once, at its worst, with how many it touched), the
/// experiments' own notes, and the per-case notes by kind with where they occurred.
pub fn run_tail(experiments: &[ExperimentResult], width: Option<u16>) -> String {
    tail(experiments, width, true)
}

/// [`run_tail`], with the kinds of case warning (`case_kinds`) or without them (a study's
/// [`quality`] has said them by experiment).
fn tail(experiments: &[ExperimentResult], width: Option<u16>, case_kinds: bool) -> String {
    let mut s = if case_kinds {
        unprivileged(experiments, width)
    } else {
        String::new()
    };
    // A warning's kind is its words before the first figure or parenthesis: the load one
    // reads "other processes used 57.4 % …" in every experiment it touched, the machine's
    // "speed changed while this experiment ran (…)" whichever control moved.
    let lead = |w: &str| -> String {
        w.split(|c: char| c.is_ascii_digit() || c == '(')
            .next()
            .unwrap_or(w)
            .trim_end()
            .to_owned()
    };
    let first_number = |w: &str| -> f64 {
        let t = w.trim_start_matches(|c: char| !c.is_ascii_digit());
        let end = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        t[..end].parse().unwrap_or(0.0)
    };
    let mut shared: Vec<(String, Vec<&str>, String)> = Vec::new();
    for e in experiments {
        for w in &e.warnings {
            let text = w.as_str();
            let k = lead(text);
            match shared.iter_mut().find(|(key, _, _)| *key == k) {
                Some((_, names, worst)) => {
                    if !names.contains(&e.name.as_str()) {
                        names.push(&e.name);
                    }
                    if first_number(text) > first_number(worst) {
                        *worst = text.to_owned();
                    }
                }
                None => shared.push((k, vec![&e.name], text.to_owned())),
            }
        }
    }
    for (_, names, worst) in &shared {
        let line = if names.len() == 1 {
            format!("warning: {}: {worst}", names[0])
        } else {
            format!(
                "warning: in {} of {} experiments, at worst: {worst}",
                names.len(),
                experiments.len()
            )
        };
        s += &wrap(&line, width, 2);
    }
    // The kinds of warning cases carry besides a wide interval (which the interval shows),
    // each once for the run, with where and how many.
    let mut case_warnings: Vec<(String, Vec<String>)> = Vec::new();
    for e in experiments.iter().filter(|_| case_kinds) {
        for k in kinds(e, Of::Warnings).into_iter().filter(|k| !k.noisy) {
            let at = format!("{} ({} of {})", e.name, k.cases, e.cases.len());
            match case_warnings.iter_mut().find(|(tag, _)| *tag == k.tag) {
                Some((_, wh)) => wh.push(at),
                None => case_warnings.push((k.tag, vec![at])),
            }
        }
    }
    for (tag, wh) in case_warnings {
        s += &wrap(
            &format!("! {tag}: cases in {}; --verbose says more", wh.join(", ")),
            width,
            2,
        );
    }
    // An experiment's own note said by several (tracefs mounted for each traced pass) is said
    // once, naming them: its kind is its words before the first colon.
    let mut own: Vec<(&str, Vec<&str>, &str)> = Vec::new();
    for e in experiments {
        for n in &e.notes {
            let text = n.as_str();
            let k = text.split(':').next().unwrap_or(text);
            match own.iter_mut().find(|(key, _, _)| *key == k) {
                Some((_, names, _)) if !names.contains(&e.name.as_str()) => names.push(&e.name),
                Some(_) => {}
                None => own.push((k, vec![&e.name], text)),
            }
        }
    }
    for (_, names, text) in own {
        s += &wrap(&format!("note: {}: {text}", names.join(", ")), width, 2);
    }
    let mut notes: Vec<(String, Vec<String>, Option<String>)> = Vec::new();
    for e in experiments {
        for k in kinds(e, Of::Notes) {
            let at = format!("{} ({})", e.name, k.cases);
            match notes.iter_mut().find(|(tag, _, _)| *tag == k.tag) {
                Some((_, wh, _)) => wh.push(at),
                None => notes.push((k.tag, vec![at], k.doc)),
            }
        }
    }
    for (tag, wh, doc) in notes {
        let doc = doc.map_or(String::new(), |d| format!(" ({d})"));
        s += &wrap(
            &format!("note: {tag}: cases in {}{doc}", wh.join(", ")),
            width,
            2,
        );
    }
    if !experiments.is_empty() {
        let derived: usize = experiments.iter().map(|e| e.derived.len()).sum();
        // One line at 80 columns: the screen's last lines belong to the datasheet.
        let lead = if derived > 0 {
            format!("{derived} derived figures, full tables")
        } else {
            "full tables".to_owned()
        };
        s += &wrap(
            &format!("{lead}: --verbose, the report, `oscost history show`"),
            width,
            2,
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(id: &str) -> Figure {
        Figure {
            key: id.split('.').map(str::to_owned).collect(),
            median: "5.095 µs".into(),
            ci: "±1.0%".into(),
            mark: "✓",
        }
    }

    #[test]
    fn ids_that_form_a_grid_are_laid_out_as_one() {
        let ids = [
            "pipe.control",
            "pipe.threads.same",
            "pipe.processes.same",
            "futex.control",
            "futex.threads.same",
            "futex.processes.same",
            "yield.control",
            "yield.threads.same",
            "yield.processes.same",
        ];
        let figs: Vec<Figure> = ids.iter().map(|i| fig(i)).collect();
        let g = grid(&figs, 80).expect("a grid");
        assert_eq!(g.rows, ["pipe", "futex", "yield"]);
        assert_eq!(g.cols, ["control", "threads.same", "processes.same"]);
        let text = render_grid("switch", &g, &figs);
        assert_eq!(text.lines().count(), 4);
        assert!(text.lines().all(|l| text_width(l) <= 80), "{text}");
        assert!(text.lines().nth(1).unwrap().starts_with("  pipe "));
    }

    #[test]
    fn the_last_part_of_the_id_makes_the_columns_when_it_repeats() {
        let ids = [
            "fork.p1mib",
            "vfork.p1mib",
            "posix-spawn.static.p1mib",
            "posix-spawn.dynamic.p1mib",
            "fork.p64mib",
            "vfork.p64mib",
            "posix-spawn.static.p64mib",
            "posix-spawn.dynamic.p64mib",
            "thread",
        ];
        let figs: Vec<Figure> = ids.iter().map(|i| fig(i)).collect();
        let g = grid(&figs, 80).expect("a grid");
        assert_eq!(g.cols, ["p1mib", "p64mib", ""]);
        assert_eq!(
            g.rows,
            [
                "fork",
                "vfork",
                "posix-spawn.static",
                "posix-spawn.dynamic",
                "thread"
            ]
        );
    }

    #[test]
    fn ids_with_nothing_in_common_stay_a_list() {
        let ids = ["enosys", "getpid", "read1", "lseek", "lseek.mt", "fstat"];
        let figs: Vec<Figure> = ids.iter().map(|i| fig(i)).collect();
        assert_eq!(grid(&figs, 80), None);
        // One a line where two columns do not fit, else side by side.
        let text = block("syscall", &figs, 50);
        assert_eq!(text.lines().count(), 7);
        assert!(text.starts_with("syscall"));
        assert!(text.contains("  lseek.mt  5.095 µs   ±1.0% ✓"), "{text}");
        let text = block("syscall", &figs, 80);
        assert_eq!(text.lines().count(), 4, "{text}");
        assert!(text.lines().all(|l| text_width(l) <= 80), "{text}");
        let first = text.lines().nth(1).unwrap();
        assert!(
            first.starts_with("  enosys") && first.contains("   lseek "),
            "{text}"
        );
    }

    fn refused(name: &str, ids: &[(&str, &str)]) -> ExperimentResult {
        ExperimentResult {
            name: name.into(),
            params: Default::default(),
            cases: vec![],
            unavailable: ids
                .iter()
                .map(|(id, why)| oscost_model::schema::UnavailableCase {
                    id: (*id).into(),
                    description: String::new(),
                    reason: (*why).into(),
                })
                .collect(),
            derived: vec![],
            warnings: vec![],
            notes: vec![],
            load: None,
            controls: None,
        }
    }

    #[test]
    fn cases_refused_for_one_reason_share_a_line() {
        let why = "not on this kernel: CONFIG_X is off";
        let e = refused(
            "cgroup",
            &[("cgroup.fork-procs", why), ("cgroup.clone3", why)],
        );
        let text = experiment(&e, Some(120));
        assert_eq!(text.matches(why).count(), 1, "{text}");
        assert!(text.contains("cgroup.fork-procs, cgroup.clone3"), "{text}");
        assert_eq!(unprivileged(&[e], Some(80)), "");
    }

    #[test]
    fn refusals_for_want_of_privilege_are_said_once_for_the_run() {
        let fifo = "SCHED_FIFO 1 refused (Operation not permitted): run as root, or grant \
                    CAP_SYS_NICE";
        let v2 = "making a cgroup in /x/ (cgroup v2) refused: Permission denied; run as root, \
                  or in a delegated cgroup";
        let odd = "SCHED_FIFO 1 refused (the thread panicked): run as root or with CAP_SYS_NICE";
        let limit = "no memory for the ring: raise it with `ulimit -l 65536`, or run as root";
        assert_eq!(needs_privilege(limit), None);
        let run = [
            refused(
                "tick",
                &[("tick.helper.1ms", fifo), ("tick.helper.50us", fifo)],
            ),
            refused("wakeup", &[("wakeup.fifo.1ms", odd)]),
            refused("cgroup", &[("cgroup.a", v2), ("cgroup.pipe.same", v2)]),
        ];
        // Not under each experiment: once, after them, every case named with its refusal.
        for e in &run {
            assert!(!experiment(e, Some(80)).contains("not measured"), "{e:?}");
        }
        let text = unprivileged(&run, Some(400));
        assert_eq!(
            text,
            "not measured without root (other ways: --verbose): \
             tick.helper.{1ms,50us}: SCHED_FIFO 1 refused; wakeup.fifo.1ms: SCHED_FIFO 1 \
             refused (the thread panicked); cgroup.a, cgroup.pipe.same: making a cgroup \
             (cgroup v2) refused\n"
        );
        assert!(run_tail(&run, Some(80)).starts_with("not measured without root"));
    }

    #[test]
    fn a_grid_too_wide_for_the_terminal_is_not_used() {
        let ids = [
            "a.threads.same.one_way",
            "a.threads.same.switch_cost",
            "a.processes.same.one_way",
            "a.processes.same.switch_cost",
            "b.threads.same.one_way",
            "b.threads.same.switch_cost",
            "b.processes.same.one_way",
            "b.processes.same.switch_cost",
        ];
        let figs: Vec<Figure> = ids.iter().map(|i| fig(i)).collect();
        // Four columns do not fit in 60: the rows take the first three parts instead.
        let g = grid(&figs, 60).expect("a grid");
        assert_eq!(g.cols, ["one_way", "switch_cost"]);
        assert_eq!(grid(&figs, 20), None);
    }

    #[test]
    fn two_figures_in_one_cell_are_no_grid() {
        let keys: Vec<Vec<String>> = [["a", "x"], ["a", "x"]]
            .iter()
            .map(|k| k.iter().map(|s| s.to_string()).collect())
            .collect();
        assert_eq!(split(&keys, 1, false), None);
    }

    #[test]
    fn a_warning_every_experiment_shared_is_said_once_at_its_worst() {
        let experiment = |name: &str| ExperimentResult {
            name: name.into(),
            params: Default::default(),
            cases: vec![crate::views::testkit::case(
                &format!("{name}.a"),
                "op",
                100.0,
            )],
            unavailable: vec![],
            derived: vec![],
            warnings: vec![],
            notes: vec![],
            load: None,
            controls: None,
        };
        let (mut a, mut b) = (experiment("syscall"), experiment("switch"));
        a.warnings.push(
            "other processes used 12.5 % of the CPUs during the run: figures may be inflated"
                .into(),
        );
        b.warnings.push(
            "other processes used 57.4 % of the CPUs during the run: figures may be inflated"
                .into(),
        );
        let tail = run_tail(&[a, b], Some(80));
        assert_eq!(tail.matches("warning:").count(), 1, "{tail}");
        assert!(tail.contains("in 2 of 2 experiments, at worst: other processes used 57.4 %"));
        // A note several experiments made alike is said once, naming them.
        let (mut a, mut b) = (experiment("tick"), experiment("noise"));
        a.notes
            .push("tracefs was not mounted: mounted for the traced pass".into());
        b.notes
            .push("tracefs was not mounted: mounted for the traced passes".into());
        let tail = run_tail(&[a, b], Some(80));
        assert_eq!(tail.matches("tracefs was not mounted").count(), 1, "{tail}");
        assert!(
            tail.contains("note: tick, noise: tracefs was not mounted"),
            "{tail}"
        );
    }

    #[test]
    fn a_failed_check_has_a_line_of_its_own_and_is_not_repeated_for_its_figures() {
        let mut bad = crate::views::testkit::case("tick.signal.1ms", "run", 100.0);
        bad.checks.push(oscost_model::case::Check {
            name: "events_per_run".into(),
            expected: 13.5,
            counted: 10.0,
            passed: false,
            detail: String::new(),
            bound: None,
        });
        let e = ExperimentResult {
            name: "tick".into(),
            params: Default::default(),
            cases: vec![bad],
            unavailable: vec![],
            derived: vec![oscost_model::DerivedResult {
                id: "tick.signal.1ms.per_event".into(),
                description: String::new(),
                terms: Vec::new(),
                estimate_ns: 50.0,
                ci95_ns: [40.0, 60.0],
                estimate_cycles: 50.0,
                flagged: Some(
                    "tick.signal.1ms: events_per_run counted 10.000, expected 13.5".into(),
                ),
                warnings: Vec::new(),
            }],
            warnings: vec![],
            notes: vec![],
            load: None,
            controls: None,
        };
        let text = experiment(&e, Some(80));
        assert_eq!(text.matches("✗ tick.").count(), 1, "{text}");
        assert!(text.contains("  ✗ tick.signal.1ms: FAILED"), "{text}");
        assert!(text
            .lines()
            .any(|l| l.starts_with("  signal.1ms ") && l.ends_with('✗')));
        // The same run while the host took a fifth of the CPUs: not the OS's doing.
        let mut held = e.clone();
        let mut load = oscost_model::example::quiet_load(2.0);
        load.steal_s = Some(0.8);
        held.load = Some(load);
        let text = experiment(&held, Some(80));
        assert!(!text.contains('✗'), "{text}");
        assert!(text.contains("  ? tick.signal.1ms: FAILED"), "{text}");
        assert!(
            text.contains(
                "  ? failed while the host took 20 % of the CPUs (steal): not the OS's doing, \
                 run\n    again when the machine is quiet"
            ),
            "{text}"
        );
        assert!(text
            .lines()
            .any(|l| l.starts_with("  signal.1ms ") && l.ends_with('?')));
    }

    #[test]
    fn derived_figures_and_case_warnings_wait_for_the_tail_which_says_each_kind_once() {
        let make = |name: &str, warned: bool| {
            let mut c = crate::views::testkit::case(&format!("{name}.a"), "op", 100.0);
            if warned {
                c.warnings
                    .push("warm-up did not settle: the first samples ran slower".into());
            }
            ExperimentResult {
                name: name.into(),
                params: Default::default(),
                cases: vec![
                    c,
                    crate::views::testkit::case(&format!("{name}.b"), "op", 90.0),
                ],
                unavailable: vec![],
                derived: vec![oscost_model::DerivedResult {
                    id: format!("{name}.a.minus_b"),
                    description: String::new(),
                    terms: Vec::new(),
                    estimate_ns: 10.0,
                    ci95_ns: [8.0, 12.0],
                    estimate_cycles: 10.0,
                    flagged: None,
                    warnings: Vec::new(),
                }],
                warnings: vec![],
                notes: vec![],
                load: None,
                controls: None,
            }
        };
        let (a, b, c) = (
            make("syscall", true),
            make("switch", false),
            make("ring", true),
        );
        let text = experiment(&a, Some(80));
        assert!(!text.contains("minus_b"), "{text}");
        assert!(!text.contains("warm-up"), "{text}");
        let tail = run_tail(&[a, b, c], Some(80));
        assert_eq!(tail.matches("warm-up did not settle").count(), 1, "{tail}");
        assert!(
            tail.contains("! warm-up did not settle: cases in syscall (1 of 2), ring (1 of 2)"),
            "{tail}"
        );
        assert!(tail.contains("3 derived figures, full tables"), "{tail}");
    }
}

//! `oscost man`: manual pages in roff, oscost's own or a subcommand's.
//!
//! clap_mangen renders each part; oscost's page adds what clap does not know: a one-line
//! NAME, the examples kept as written (clap_mangen's EXTRA section is reflowed), and the
//! ENVIRONMENT, FILES and EXIT STATUS sections.

use crate::args::Cli;
use crate::stdout::print_stdout;
use anyhow::Context as _;
use clap::{Command, CommandFactory};
use clap_mangen::Man;
use std::path::Path;
use std::process::ExitCode;

/// oscost's NAME line: the whole about is the page's DESCRIPTION.
const NAME_LINE: &str = "measure what the operating system costs a program";

/// The environment variables oscost reads, each with what it does (roff text).
const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "OSCOST_HISTORY",
        "The history when --history is not given: an SQLite file or a postgres:// URL.",
    ),
    (
        "OSCOST_HISTORY_FILE",
        "A file holding the history's path or URL on one line, when neither --history nor \
         OSCOST_HISTORY is given (the URL, and its password, stay out of the command line).",
    ),
    (
        "COLUMNS",
        "The width tables and text are laid out to. Without it: the terminal's width, else 80 \
         columns when the output is piped or redirected. --csv and --json keep every row whole \
         at any width.",
    ),
    (
        "OSCOST_OUTPUT_TIMEOUT",
        "Seconds output waits for a pipe or FIFO that nobody reads before giving up with an \
         error (default 30).",
    ),
    (
        "XDG_DATA_HOME",
        "Where the default history is kept (see FILES).",
    ),
];

/// The exit statuses, each with when (roff text).
const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "Success: the run or command completed (a failed check or a warning is reported in the output, not in the status)."),
    ("1", "compare --fail-above: a figure is slower than the threshold allows."),
    ("2", "An error: a refused option or value, an input that cannot be read or is inconsistent, a limit or permission that stops the run, a history named by --history that cannot be written; one line starting with \\(lqoscost: \\(rq says which."),
    ("130", "Interrupted (SIGINT or SIGTERM): what finished before is kept and named."),
    ("N", "oscost bill \\-\\- COMMAND: the command's own status (127: not found; 128 + N: killed by signal N)."),
];

/// Escapes `text` for a roff text line: backslashes and hyphens, and a leading `.` or `'`.
fn roff(text: &str) -> String {
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with(['.', '\'']) {
        format!("\\&{t}")
    } else {
        t
    }
}

/// Adds the text sections oscost's top page has beyond clap's.
fn top_sections(out: &mut String) {
    out.push_str(".SH ENVIRONMENT\n");
    for (name, what) in ENVIRONMENT {
        out.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(name), roff(what)));
    }
    out.push_str(".SH FILES\n.TP\n");
    out.push_str(&roff(
        "$XDG_DATA_HOME/oscost/history.sqlite3 (or ~/.local/share/oscost/history.sqlite3)",
    ));
    out.push('\n');
    out.push_str(&roff(
        "The history every run is saved in, unless --no-save, --history, OSCOST_HISTORY or \
         OSCOST_HISTORY_FILE says otherwise.",
    ));
    out.push_str("\n.TP\n");
    out.push_str(&roff("runs/ beside the history file"));
    out.push('\n');
    out.push_str(&roff(
        "The default suite's result file and HTML report, named after the day and the run, \
         when --json and --report are not given.",
    ));
    out.push_str("\n.SH \"EXIT STATUS\"\n");
    for (code, when) in EXIT_STATUS {
        // The texts hold roff escapes of their own (quotes, `--`): only a hyphen is escaped.
        out.push_str(&format!(".TP\n\\fB{code}\\fR\n{when}\n"));
    }
}

/// The SYNOPSIS section: the command, then each visible option with its argument
/// (`[--json FILE]`; clap_mangen's leaves the argument out), the operands, and `SUBCOMMAND`.
fn synopsis(cmd: &Command) -> String {
    let name = cmd.get_bin_name().unwrap_or(cmd.get_name());
    let mut s = format!(".SH SYNOPSIS\n\\fB{}\\fR", roff(name));
    let value = |a: &clap::Arg| {
        a.get_value_names()
            .map(|v| v.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|| a.get_id().as_str().to_uppercase())
    };
    let visible = || cmd.get_arguments().filter(|a| !a.is_hide_set());
    for a in visible().filter(|a| !a.is_positional()) {
        let mut flag = match (a.get_short(), a.get_long()) {
            (Some(c), Some(l)) => format!("\\fB\\-{c}\\fR|\\fB\\-\\-{}\\fR", roff(l)),
            (Some(c), None) => format!("\\fB\\-{c}\\fR"),
            (None, Some(l)) => format!("\\fB\\-\\-{}\\fR", roff(l)),
            (None, None) => continue,
        };
        if a.get_action().takes_values() {
            flag += &format!(" \\fI{}\\fR", roff(&value(a)));
        }
        if a.is_required_set() {
            s += &format!(" {flag}");
        } else {
            s += &format!(" [{flag}]");
        }
    }
    for a in visible().filter(|a| a.is_positional()) {
        let many = a.get_num_args().is_some_and(|n| n.max_values() > 1);
        let operand = format!(
            "\\fI{}\\fR{}",
            roff(&value(a)),
            if many { "..." } else { "" }
        );
        if a.is_required_set() {
            s += &format!(" {operand}");
        } else {
            s += &format!(" [{operand}]");
        }
    }
    if cmd.get_subcommands().any(|c| !c.is_hide_set()) {
        s += " [\\fISUBCOMMAND\\fR]";
    }
    s + "\n"
}

/// `cmd`'s page: clap_mangen's sections, the after-help as EXAMPLES (or NOTES) kept line for
/// line, and for oscost itself ([`top_sections`]).
fn render(cmd: Command, top: bool) -> anyhow::Result<String> {
    let cmd = if top {
        let about = cmd.get_about().map(|a| a.to_string()).unwrap_or_default();
        cmd.about(NAME_LINE).long_about(about)
    } else {
        cmd
    };
    let after = cmd
        .get_after_long_help()
        .or_else(|| cmd.get_after_help())
        .map(|a| a.to_string());
    let man = Man::new(cmd.clone());
    let mut raw = Vec::new();
    man.render_title(&mut raw)?;
    man.render_name_section(&mut raw)?;
    raw.extend_from_slice(synopsis(&cmd).as_bytes());
    man.render_description_section(&mut raw)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut raw)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut raw)?;
    }
    let mut out = once_preamble(&String::from_utf8_lossy(&raw));
    if let Some(after) = after {
        let (head, body) = match after.strip_prefix("Examples:\n") {
            Some(rest) => ("EXAMPLES", rest),
            None => ("NOTES", after.as_str()),
        };
        // No fill: the examples' columns are kept as written.
        out.push_str(&format!(".SH {head}\n.nf\n"));
        for line in body.lines() {
            out.push_str(&roff(line));
            out.push('\n');
        }
        out.push_str(".fi\n");
    }
    if top {
        top_sections(&mut out);
    }
    if cmd.get_version().is_some() {
        let mut v = Vec::new();
        man.render_version_section(&mut v)?;
        out.push_str(&String::from_utf8_lossy(&v).replace(PREAMBLE, ""));
    }
    Ok(out)
}

/// The lines clap_mangen puts before each part it renders (a quote for groff): needed once.
const PREAMBLE: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";

/// `parts` with [`PREAMBLE`] only at the start.
fn once_preamble(parts: &str) -> String {
    format!("{PREAMBLE}{}", parts.replace(PREAMBLE, ""))
}

/// Writes `cmd`'s page and each visible subcommand's, as `NAME.1`, into `dir`.
fn write_pages(cmd: &Command, dir: &Path, top: bool) -> anyhow::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, false)?;
    }
    let path = dir.join(Man::new(cmd.clone()).get_filename());
    std::fs::write(&path, render(cmd.clone(), top)?)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// The `oscost*.1` files in `dir`.
fn man_pages(dir: &Path) -> std::collections::BTreeSet<std::ffi::OsString> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name())
                .filter(|n| {
                    let n = n.to_string_lossy();
                    n.starts_with("oscost") && n.ends_with(".1")
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `oscost man`: oscost's page or subcommand `name`'s on stdout, or every page into `dir`.
pub fn run(name: Option<&str>, dir: Option<&Path>) -> anyhow::Result<ExitCode> {
    let mut cmd = crate::args::hide_unused_options(Cli::command().disable_help_subcommand(true));
    // Built, so that a subcommand's page carries its full name and the global options it uses.
    cmd.build();
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--dir {}: cannot create it", dir.display()))?;
        let before = man_pages(dir);
        write_pages(&cmd, dir, true).with_context(|| format!("--dir {}", dir.display()))?;
        // What was written, said: a command that writes files names where.
        let after = man_pages(dir);
        eprintln!(
            "wrote {} manual pages to {} ({} new; `man {}/oscost.1`)",
            after.len(),
            dir.display(),
            after.difference(&before).count(),
            dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let page = match name {
        None => render(cmd, true)?,
        Some(name) => {
            let visible: Vec<&str> = cmd
                .get_subcommands()
                .filter(|c| !c.is_hide_set())
                .map(|c| c.get_name())
                .collect();
            if !visible.contains(&name) {
                anyhow::bail!(
                    "man {name}: no such subcommand (choose from: {})",
                    visible.join(", ")
                );
            }
            let sub = cmd
                .find_subcommand(name)
                .cloned()
                .expect("a visible subcommand is found");
            render(sub, false)?
        }
    };
    print_stdout(&page)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn top() -> String {
        let mut cmd = Cli::command().disable_help_subcommand(true);
        cmd.build();
        render(cmd, true).unwrap()
    }

    #[test]
    fn the_page_has_a_one_line_name_and_the_sections_clap_lacks() {
        let page = top();
        let name = page.split(".SH NAME\n").nth(1).unwrap();
        assert!(name.starts_with("oscost \\- measure what"), "{name}");
        assert!(
            name.lines().nth(1).unwrap().starts_with(".SH SYNOPSIS"),
            "{name}"
        );
        for section in [
            ".SH EXAMPLES\n.nf\n",
            ".SH ENVIRONMENT",
            ".SH FILES",
            ".SH \"EXIT STATUS\"",
        ] {
            assert!(page.contains(section), "{section} missing");
        }
        for var in [
            "OSCOST_HISTORY",
            "OSCOST_HISTORY_FILE",
            "COLUMNS",
            "OSCOST_OUTPUT_TIMEOUT",
        ] {
            assert!(page.contains(&format!("\\fB{}\\fR", roff(var))), "{var}");
        }
        assert!(!page.contains(".SH EXTRA"), "clap's reflowed examples");
    }

    #[test]
    fn the_synopsis_gives_each_option_its_argument() {
        let page = top();
        let synopsis = page.split(".SH SYNOPSIS\n").nth(1).unwrap();
        let synopsis = synopsis.lines().next().unwrap();
        assert!(synopsis.starts_with("\\fBoscost\\fR "), "{synopsis}");
        assert!(
            synopsis.contains("[\\fB\\-\\-json\\fR \\fIFILE\\fR]"),
            "{synopsis}"
        );
        assert!(synopsis.contains("[\\fB\\-q\\fR|\\fB\\-\\-quiet\\fR]"));
        assert!(synopsis.ends_with("[\\fISUBCOMMAND\\fR]"), "{synopsis}");
        assert!(!synopsis.contains("scripted"), "{synopsis}");
    }

    #[test]
    fn list_env_and_datasheet_pages_leave_out_the_sampling_options() {
        let mut cmd = crate::args::hide_unused_options(Cli::command());
        cmd.build();
        for name in ["list", "env", "datasheet"] {
            let page = render(cmd.find_subcommand(name).unwrap().clone(), false).unwrap();
            for unused in ["samples", "warmup", "budget", "quick"] {
                assert!(
                    !page.contains(&format!("\\-\\-{unused}")),
                    "{name}: --{unused}"
                );
            }
        }
        let page = render(cmd.find_subcommand("datasheet").unwrap().clone(), false).unwrap();
        assert!(page.contains("\\-\\-history"), "datasheet uses --history");
        let page = render(cmd.find_subcommand("syscall").unwrap().clone(), false).unwrap();
        assert!(
            page.contains("\\-\\-samples"),
            "an experiment uses them all"
        );
    }

    #[test]
    fn roff_escapes_what_roff_would_read() {
        assert_eq!(roff("--json"), "\\-\\-json");
        assert_eq!(roff(".hidden"), "\\&.hidden");
        assert_eq!(roff("a\\b"), "a\\eb");
    }
}

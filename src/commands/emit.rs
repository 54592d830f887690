//! Writing what a command made ([`Render`]): every file the command line named, then the
//! table — on standard output, or on standard error when standard output carries a file.

use crate::config::{Config, Sink};
use crate::stdout::print_stdout;
use oscost_report::export::{Format, Render};

/// Writes `view`'s files to the sinks `cfg` names, every file staged before any is replaced
/// (a failure leaves the old files whole), then its table at the terminal's width: shown,
/// never sent to the terminal raw, since labels and names come from result files. A file
/// `view` does not offer is refused by `what`, in one line, before anything is written.
pub fn emit(cfg: &Config, what: &str, view: &dyn Render) -> anyhow::Result<()> {
    let sinks = [
        (&cfg.json, Format::Json, "--json"),
        (&cfg.csv, Format::Csv, "--csv"),
        (&cfg.markdown, Format::Markdown, "--markdown"),
        (&cfg.report, Format::Html, "--report"),
    ];
    let mut texts = Vec::new();
    for (sink, format, option) in sinks {
        if let Some(sink) = sink {
            let Some(text) = view.file(format) else {
                anyhow::bail!("{what} is not written by {option}");
            };
            texts.push((sink, text?));
        }
    }
    let mut staged = Vec::new();
    for (sink, text) in &texts {
        if let Sink::File(p) = sink {
            staged.push(oscost_report::output::stage(p, text)?);
        }
    }
    for s in staged {
        s.commit()?;
    }
    let width = oscost_report::export::terminal::layout_width(cfg.stdout_taken());
    let table = oscost_report::termtext::for_terminal(&view.table(width));
    if cfg.stdout_taken() {
        for (sink, text) in &texts {
            if let Sink::Stdout = sink {
                print_stdout(text)?;
            }
        }
        if !cfg.quiet {
            eprint!("{table}");
        }
    } else {
        print_stdout(&table)?;
    }
    Ok(())
}

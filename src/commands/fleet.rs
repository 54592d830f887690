//! `oscost compare --group-by FIELD`: runs of many machines, one column per group.

use crate::config::{Config, Sink};
use crate::inputs::{load, HistoryAt, Loaded};
use crate::run_id::short_id;
use crate::stdout::print_stdout;
use crate::store::open_read_only;
use oscost_model::ResultDoc;
use oscost_report::compare::Settings;
use oscost_report::fleet::{self, GroupBy};
use std::process::ExitCode;

/// Runs `compare --group-by`: `inputs` are result files or history runs; none means every
/// run of the history.
pub fn run(
    inputs: &[String],
    field: &str,
    reference: Option<&str>,
    settings: Settings,
    cfg: &Config,
    history: HistoryAt,
) -> anyhow::Result<ExitCode> {
    let by = GroupBy::parse(field).map_err(|e| anyhow::anyhow!(e))?;
    let runs: Vec<(String, ResultDoc)> = if inputs.is_empty() {
        every_run(history)?
    } else {
        inputs
            .iter()
            .map(|a| match load(a, history)? {
                Loaded::Measured(d) => Ok((a.clone(), *d)),
                Loaded::Published(_) => anyhow::bail!(
                    "{a}: a published baseline has no environment to group by (give measured \
                     runs; compare it with `oscost compare {a} RUN`)"
                ),
            })
            .collect::<anyhow::Result<_>>()?
    };
    let refs: Vec<(String, &ResultDoc)> = runs.iter().map(|(l, d)| (l.clone(), d)).collect();
    let f = fleet::build(&refs, &by, reference, settings)?;
    type Render = fn(&fleet::Fleet) -> anyhow::Result<String>;
    let outputs: [(&Option<Sink>, Render); 4] = [
        (&cfg.json, fleet::json),
        (&cfg.csv, fleet::csv),
        (&cfg.markdown, |f| Ok(fleet::markdown(f))),
        (&cfg.report, |f| Ok(fleet::html(f))),
    ];
    // Every file staged before any is replaced: a failure leaves the old files whole.
    let mut staged = Vec::new();
    for (sink, render) in &outputs {
        if let Some(Sink::File(p)) = sink {
            staged.push(oscost_report::output::stage(p, &render(&f)?)?);
        }
    }
    for s in staged {
        s.commit()?;
    }
    // Group names and machines come from result files: shown, never sent to the terminal raw.
    let table = oscost_report::termtext::for_terminal(&fleet::terminal(&f));
    if cfg.stdout_taken() {
        for (sink, render) in &outputs {
            if let Some(Sink::Stdout) = sink {
                print_stdout(&render(&f)?)?;
            }
        }
        if !cfg.quiet {
            eprint!("{table}");
        }
    } else {
        print_stdout(&table)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Every run of the history, labelled by its short id.
fn every_run(history: HistoryAt) -> anyhow::Result<Vec<(String, ResultDoc)>> {
    let hint = "give result files, or --history with the runs";
    let Some((location, explicit)) = history else {
        anyhow::bail!("no history to read ({hint})");
    };
    if let oscost_history::Location::File(path) = location {
        if !path.exists() {
            anyhow::bail!("no history at {} ({hint})", path.display());
        }
    }
    let history = open_read_only(location, *explicit, "give --history the store to read")?;
    history
        .list()?
        .into_iter()
        .map(|r| {
            let doc = history.get(&r.run_id)?;
            Ok((short_id(&r.run_id).to_owned(), doc))
        })
        .collect()
}

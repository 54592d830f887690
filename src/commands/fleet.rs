//! `oscost compare --group-by FIELD`: runs of many machines, one column per group.

use crate::config::{Config, Sink};
use crate::inputs::{load, HistoryAt, Loaded};
use crate::run_id::short_id;
use crate::stdout::print_stdout;
use crate::store::open_read_only;
use oscost_model::ResultDoc;
use oscost_report::compare::Settings;
use oscost_report::fleet::{self, GroupBy};
use std::collections::BTreeMap;
use std::process::ExitCode;

/// Runs `compare --group-by`: `inputs` are result files or history runs; none means the
/// history's runs: by host or kernel only each group's newest is read (chosen in the
/// database), by another field each run's document read in turn and only its group's newest kept.
pub fn run(
    inputs: &[String],
    field: &str,
    reference: Option<&str>,
    settings: Settings,
    cfg: &Config,
    history: HistoryAt,
) -> anyhow::Result<ExitCode> {
    let by = GroupBy::parse(field).map_err(|e| anyhow::anyhow!(e))?;
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let runs: Vec<(String, ResultDoc)> = if inputs.is_empty() {
        from_history(history, &by, &mut counts)?
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
    let mut f = fleet::build(&refs, &by, reference, settings)?;
    for g in &mut f.groups {
        if let Some(n) = counts.get(&g.name) {
            g.older_runs = n.saturating_sub(1);
        }
    }
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

/// The runs of the history that `by` needs, labelled by their short ids: by host or kernel each
/// group's newest, chosen in the database so that no other document is read (a store of ten
/// thousand runs costs as much as its hundred hosts), with every group's count of runs in
/// `counts`; by any other field every run's document is read, since the field is only there,
/// but only each group's newest kept.
fn from_history(
    history: HistoryAt,
    by: &GroupBy,
    counts: &mut BTreeMap<String, usize>,
) -> anyhow::Result<Vec<(String, ResultDoc)>> {
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
    let ids: Vec<String> = match by {
        GroupBy::Host | GroupBy::Kernel => {
            let newest = if *by == GroupBy::Host {
                history.newest_per_host()?
            } else {
                history.newest_per_kernel()?
            };
            for n in &newest {
                let name = n
                    .group
                    .clone()
                    .unwrap_or_else(|| fleet::NOT_RECORDED.into());
                *counts.entry(name).or_default() += n.runs;
            }
            newest.into_iter().map(|n| n.run_id).collect()
        }
        GroupBy::Field(_) => {
            // The field is only in the documents: each is read in turn, newest first, and only
            // the first of its group kept, so memory holds one document per group.
            let mut kept: BTreeMap<Option<String>, (String, ResultDoc)> = BTreeMap::new();
            for r in history.list()? {
                let doc = history.get(&r.run_id)?;
                let key = by.key(&doc.environment);
                if let Some(name) = &key {
                    *counts.entry(name.clone()).or_default() += 1;
                }
                kept.entry(key)
                    .or_insert_with(|| (short_id(&r.run_id).to_owned(), doc));
            }
            return Ok(kept.into_values().collect());
        }
    };
    ids.iter()
        .map(|id| Ok((short_id(id).to_owned(), history.get(id)?)))
        .collect()
}

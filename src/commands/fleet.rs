//! `oscost compare --group-by FIELD`: runs of many machines, one column per group.
//!
//! Runs are read twice, so that memory holds a few documents whatever their number: once for
//! their heads (run, start time, machine), which choose the groups' runs, then each chosen
//! run whole when its comparison starts, dropped when it ends.

use crate::config::Config;
use crate::inputs::{self, load, HistoryAt, PUBLISHED_PREFIX};
use crate::run_id::short_id;
use crate::store::open_read_only;
use oscost_history::History;
use oscost_model::{ResultDoc, ResultHead};
use oscost_report::compare::Settings;
use oscost_report::fleet::{self, BuildError, GroupBy, RunHead};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;

/// Runs `compare --group-by`: `inputs` are result files or history runs; none means the
/// history's runs: by host or kernel only each group's newest is read (chosen in the
/// database), by another field each run's head read in turn and only its group's newest kept.
/// `jobs` comparisons run at once (default: the CPUs this process may use), each holding one
/// run's document.
pub fn run(
    inputs: &[String],
    field: &str,
    reference: Option<&str>,
    settings: Settings,
    jobs: Option<usize>,
    cfg: &Config,
    history: HistoryAt,
) -> anyhow::Result<ExitCode> {
    let by = GroupBy::parse(field).map_err(|e| anyhow::anyhow!(e))?;
    let jobs = jobs.unwrap_or_else(fleet::available_jobs);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut f = if inputs.is_empty() {
        from_history(history, &by, reference, settings, jobs, &mut counts)?
    } else {
        from_inputs(inputs, history, &by, reference, settings, jobs)?
    };
    for g in &mut f.groups {
        if let Some(n) = counts.get(&g.name) {
            g.older_runs = n.saturating_sub(1);
        }
    }
    super::emit::emit(cfg, "a fleet", &f)?;
    Ok(ExitCode::SUCCESS)
}

/// Where a command-line input's document is read again from once it is chosen.
enum Stored {
    /// A result file, and the digest of its bytes when its head was read.
    File(PathBuf, String),
    /// A run of the history, by its full id.
    Run(String),
}

/// The fleet of the runs named on the command line: files or history runs, each head read in
/// turn, then each chosen run read whole by the worker comparing it.
fn from_inputs(
    inputs: &[String],
    history: HistoryAt,
    by: &GroupBy,
    reference: Option<&str>,
    settings: Settings,
    jobs: usize,
) -> anyhow::Result<fleet::Fleet> {
    let mut heads = Vec::with_capacity(inputs.len());
    let mut stored = Vec::with_capacity(inputs.len());
    for a in inputs {
        if a.starts_with(PUBLISHED_PREFIX) {
            // An unknown baseline is named as such first.
            load(a, history)?;
            anyhow::bail!(
                "{a}: a published baseline has no environment to group by (give measured \
                 runs; compare it with `oscost compare {a} RUN`)"
            );
        }
        let (head, digest, at) = if inputs::names_a_file(a) {
            let path = PathBuf::from(a);
            let (head, digest) = inputs::read_result_head(&path)?;
            (head, Some(digest.clone()), Stored::File(path, digest))
        } else {
            let (head, id) = inputs::run_head(a, history)?;
            (head, None, Stored::Run(id))
        };
        heads.push(run_head(a.clone(), head, digest));
        stored.push(at);
    }
    let load = |i: usize| -> anyhow::Result<Cow<'static, ResultDoc>> {
        let doc = match &stored[i] {
            Stored::File(path, digest) => inputs::read_result_file_again(path, digest)?,
            Stored::Run(id) => {
                inputs::load_run(id, history).map_err(|e| inputs::not_found(&inputs[i], e))?
            }
        };
        Ok(Cow::Owned(doc))
    };
    let plan = fleet::plan(&heads, by, reference, &load).map_err(unbuilt)?;
    drop(heads);
    fleet::build_planned(&plan, load, settings, jobs).map_err(unbuilt)
}

/// A head for the fleet, labelled.
fn run_head(label: String, head: ResultHead, digest: Option<String>) -> RunHead {
    RunHead {
        label,
        run_id: head.run_id,
        started_at: head.started_at,
        environment: head.environment,
        digest,
    }
}

/// The error of a fleet that could not be built, as one error.
fn unbuilt(e: BuildError<anyhow::Error>) -> anyhow::Error {
    match e {
        BuildError::Fleet(e) => e.into(),
        BuildError::Load(e) => e,
    }
}

/// The fleet of the history's runs that `by` needs, labelled by their short ids: by host or
/// kernel each group's newest, chosen in the database so that no other document is read (a
/// store of ten thousand runs costs as much as its hundred hosts), with every group's count of
/// runs in `counts`; by any other field every run's head is read, since the field is only
/// there, and only each group's newest kept. The chosen runs are read whole by the workers
/// comparing them, each on a connection of its own.
fn from_history(
    history: HistoryAt,
    by: &GroupBy,
    reference: Option<&str>,
    settings: Settings,
    jobs: usize,
    counts: &mut BTreeMap<String, usize>,
) -> anyhow::Result<fleet::Fleet> {
    let hint = "give result files, or --history with the runs";
    let Some((location, explicit)) = history else {
        anyhow::bail!("no history to read ({hint})");
    };
    if let oscost_history::Location::File(path) = location {
        if !path.exists() {
            anyhow::bail!("no history at {} ({hint})", path.display());
        }
    }
    let open = || open_read_only(location, *explicit, "give --history the store to read");
    let history = open()?;
    let (heads, ids) = history_heads(&history, by, counts)?;
    // A connection is used by one thread at a time: each worker takes one from the pool, or
    // opens one when none is free, and puts it back.
    let pool: Mutex<Vec<History>> = Mutex::new(vec![history]);
    let load = |i: usize| -> anyhow::Result<Cow<'static, ResultDoc>> {
        let taken = pool.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let history = match taken {
            Some(h) => h,
            None => open()?,
        };
        let doc = history.get(&ids[i]);
        pool.lock().unwrap_or_else(|p| p.into_inner()).push(history);
        Ok(Cow::Owned(doc?))
    };
    let plan = fleet::plan(&heads, by, reference, &load).map_err(unbuilt)?;
    drop(heads);
    fleet::build_planned(&plan, load, settings, jobs).map_err(unbuilt)
}

/// The heads of the history's runs that `by` needs (see [`from_history`]) and their full ids.
fn history_heads(
    history: &History,
    by: &GroupBy,
    counts: &mut BTreeMap<String, usize>,
) -> anyhow::Result<(Vec<RunHead>, Vec<String>)> {
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
            // The field is only in the documents: each head is read in turn, newest first, and
            // only the first of its group kept.
            let mut kept: BTreeMap<Option<String>, (RunHead, String)> = BTreeMap::new();
            for r in history.list()? {
                let head = history.head(&r.run_id)?;
                let key = by.key(&head.environment);
                if let Some(name) = &key {
                    *counts.entry(name.clone()).or_default() += 1;
                }
                kept.entry(key).or_insert_with(|| {
                    let label = short_id(&r.run_id).to_owned();
                    (run_head(label, head, None), r.run_id)
                });
            }
            return Ok(kept.into_values().unzip());
        }
    };
    let heads = ids
        .iter()
        .map(|id| Ok(run_head(short_id(id).to_owned(), history.head(id)?, None)))
        .collect::<anyhow::Result<_>>()?;
    Ok((heads, ids))
}

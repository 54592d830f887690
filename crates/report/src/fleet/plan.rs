//! The groups of runs and the run that stands for each, chosen from the runs' heads alone, so
//! that a thousand documents are never in memory together to be grouped.

use super::{machine, natural, FleetError, Group, GroupBy, NOT_RECORDED};
use oscost_model::env::Environment;
use oscost_model::schema::ResultDoc;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// What grouping needs of one run: where it came from, which run it is, when it started and the
/// machine; its results stay where they are until its comparison reads them.
#[derive(Debug, Clone)]
pub struct RunHead {
    /// Where the run came from (a file name, a history run), as messages name it.
    pub label: String,
    /// The run's id.
    pub run_id: Option<String>,
    /// When it started.
    pub started_at: Option<String>,
    /// The machine and the run's settings.
    pub environment: Environment,
    /// A digest of the document's bytes, when they were read as bytes: two inputs of one run
    /// id with the same digest are one document, and neither is read again to tell.
    pub digest: Option<String>,
}

impl RunHead {
    /// The head of a document in memory.
    pub fn of(label: &str, doc: &ResultDoc) -> RunHead {
        RunHead {
            label: label.to_owned(),
            run_id: doc.run_id.clone(),
            started_at: doc.started_at.clone(),
            environment: doc.environment.clone(),
            digest: None,
        }
    }
}

/// Why runs could not be compared by group when their documents are read on demand: the runs
/// themselves, or reading one.
#[derive(Debug)]
pub enum BuildError<E> {
    /// What is wrong with the runs as a fleet.
    Fleet(FleetError),
    /// Reading a run's document failed.
    Load(E),
}

impl<E> From<FleetError> for BuildError<E> {
    fn from(e: FleetError) -> Self {
        BuildError::Fleet(e)
    }
}

impl<E: std::fmt::Display> std::fmt::Display for BuildError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::Fleet(e) => e.fmt(f),
            BuildError::Load(e) => e.fmt(f),
        }
    }
}

impl<E: std::fmt::Debug + std::fmt::Display> std::error::Error for BuildError<E> {}

/// The groups, in name order, the reference among them and the run chosen for each: all that
/// [`super::build_planned`] needs besides the chosen runs' documents.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The field grouped by, as given.
    pub(super) group_by: String,
    /// Index of the reference group in `groups`.
    pub(super) reference: usize,
    /// The groups, each described by its chosen run's head.
    pub(super) groups: Vec<Group>,
    /// The index (among the heads planned from) of each group's chosen run.
    pub(super) chosen: Vec<usize>,
}

impl Plan {
    /// The groups, in name order.
    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// Index of the reference group in [`Plan::groups`].
    pub fn reference(&self) -> usize {
        self.reference
    }

    /// For each group, the index among the heads of the run chosen to stand for it: the
    /// documents [`super::build_planned`] asks its loader for.
    pub fn chosen(&self) -> &[usize] {
        &self.chosen
    }
}

/// Groups runs by `by` from their heads, takes each group's latest run, and names the reference
/// group (`reference`, else the first in name order), with [`super::build`]'s errors.
/// `load(i)` is the document of `heads[i]`: asked for only when two heads carry one run id
/// and their digests do not show them one document, to tell a run given twice from two
/// documents that disagree under one id.
pub fn plan<'d, E>(
    heads: &[RunHead],
    by: &GroupBy,
    reference: Option<&str>,
    load: &impl Fn(usize) -> Result<Cow<'d, ResultDoc>, E>,
) -> Result<Plan, BuildError<E>> {
    let by_name = group_runs(heads, by, load)?;
    let mut names: Vec<String> = by_name.keys().cloned().collect();
    names.sort_by(|a, b| natural(a, b));
    let reference = match reference {
        None => 0,
        Some(r) => {
            names
                .iter()
                .position(|n| n == r)
                .ok_or_else(|| FleetError::NoSuchReference {
                    name: r.to_owned(),
                    field: by.name().to_owned(),
                    choices: names.join(", "),
                })?
        }
    };
    let chosen: Vec<usize> = names.iter().map(|n| latest(heads, &by_name[n])).collect();
    let groups: Vec<Group> = names
        .iter()
        .zip(&chosen)
        .map(|(n, &i)| {
            let head = &heads[i];
            Group {
                name: n.clone(),
                source: head.label.clone(),
                run_id: head.run_id.clone(),
                started_at: head.started_at.clone(),
                older_runs: by_name[n].len() - 1,
                machine: machine(&head.environment),
                runner: head
                    .environment
                    .fleet
                    .as_ref()
                    .and_then(|f| f.runner.clone()),
            }
        })
        .collect();
    Ok(Plan {
        group_by: by.name().to_owned(),
        reference,
        groups,
        chosen,
    })
}

/// Group name → indexes of its runs; an error when there are no runs, none records the field,
/// or all fall in one group.
fn group_runs<'d, E>(
    heads: &[RunHead],
    by: &GroupBy,
    load: &impl Fn(usize) -> Result<Cow<'d, ResultDoc>, E>,
) -> Result<BTreeMap<String, Vec<usize>>, BuildError<E>> {
    if heads.is_empty() {
        return Err(FleetError::NoRuns.into());
    }
    let keys: Vec<Option<String>> = heads.iter().map(|h| by.key(&h.environment)).collect();
    if keys.iter().all(Option::is_none) {
        return Err(FleetError::NoSuchField(by.name().to_owned()).into());
    }
    // One run given twice (two copies, or one file named twice) counts once; two documents of
    // one id that differ are named, never grouped as if they were two runs.
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_name: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, k) in keys.into_iter().enumerate() {
        let head = &heads[i];
        if let Some(id) = head.run_id.as_deref() {
            if let Some(&first) = seen.get(id) {
                if !one_document(heads, first, i, load)? {
                    return Err(FleetError::Disagree {
                        first: heads[first].label.clone(),
                        second: head.label.clone(),
                        run_id: id.to_owned(),
                    }
                    .into());
                }
                continue;
            }
            seen.insert(id, i);
        }
        if let Some(name) = &k {
            let blank = name.trim().is_empty();
            if blank || name.chars().any(char::is_control) {
                return Err(FleetError::BadName {
                    source: head.label.clone(),
                    field: by.name().to_owned(),
                    path: name_path(by, &head.environment),
                    name: if blank {
                        String::new()
                    } else {
                        name.escape_debug().to_string()
                    },
                }
                .into());
            }
        }
        by_name
            .entry(k.unwrap_or_else(|| NOT_RECORDED.to_owned()))
            .or_default()
            .push(i);
    }
    if by_name.len() == 1 {
        let group = by_name.into_keys().next().unwrap_or_default();
        return Err(FleetError::OneGroup {
            field: by.name().to_owned(),
            group,
        }
        .into());
    }
    Ok(by_name)
}

/// Whether runs `a` and `b` (one id) are one document: the same bytes, else the same document
/// once both are read (another writer's spacing changes the bytes, not the run).
fn one_document<'d, E>(
    heads: &[RunHead],
    a: usize,
    b: usize,
    load: &impl Fn(usize) -> Result<Cow<'d, ResultDoc>, E>,
) -> Result<bool, BuildError<E>> {
    if let (Some(x), Some(y)) = (&heads[a].digest, &heads[b].digest) {
        if x == y {
            return Ok(true);
        }
    }
    // The heads alone tell most differences without reading either document.
    if heads[a].started_at != heads[b].started_at || heads[a].environment != heads[b].environment {
        return Ok(false);
    }
    let first = load(a).map_err(BuildError::Load)?;
    let second = load(b).map_err(BuildError::Load)?;
    Ok(*first == *second)
}

/// Where in a result document the group name of `by` is, as `oscost env --json` names it.
fn name_path(by: &GroupBy, env: &Environment) -> String {
    match by {
        GroupBy::Host if env.fleet.as_ref().is_some_and(|f| f.host_name.is_some()) => {
            "environment.fleet.host_name".into()
        }
        GroupBy::Host => "environment.hostname".into(),
        GroupBy::Kernel => "environment.kernel_release".into(),
        GroupBy::Field(f) => format!("environment.{f}"),
    }
}

/// The index of a group's latest run.
fn latest(heads: &[RunHead], members: &[usize]) -> usize {
    // The latest start wins; a run without a start time loses to one with.
    *members
        .iter()
        .max_by(|&&a, &&b| {
            heads[a]
                .started_at
                .cmp(&heads[b].started_at)
                .then(a.cmp(&b))
        })
        .unwrap_or(&members[0])
}

//! `compare --group-by`: runs from many machines in one table, one column per group (a host, a
//! kernel, any environment field), every figure as its ratio to a reference group.
//!
//! The statistics are `compare`'s own: each group's run is compared against the reference
//! group's run with [`compare::compare_measured`], so a cell's ratio, its bootstrap 95 % CI
//! and its verdict are exactly what `oscost compare REFERENCE OTHER` would print for that
//! pair. Each run's laws of its cases' bootstrap medians are made once, so the reference's
//! serve every pair. A group
//! with several runs is represented by its latest (by start time); the others are counted and
//! named, never averaged in silently. Its renderings (terminal, Markdown, CSV, JSON, HTML) are
//! in [`render`].

mod render;

pub use render::{csv, html, json, markdown, terminal};

use crate::compare::{self, Comparison, Laws, Prepared, Settings, Verdict};
use crate::format::fmt_ns;
use oscost_model::env::Environment;
use oscost_model::schema::ResultDoc;
use serde::Serialize;
use std::collections::BTreeMap;

/// Schema of `compare --group-by ... --json`.
pub const FLEET_SCHEMA: &str = "oscost-fleet/1";

/// The group name of a run whose environment lacks the field grouped by.
pub const NOT_RECORDED: &str = "(not recorded)";

/// What runs are grouped by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupBy {
    /// The fleet's name for the host (`--host-name`), else the machine's host name.
    Host,
    /// The kernel release.
    Kernel,
    /// Any environment field, by its path in the result document's `environment` object
    /// (`scheduler.preempt_model`).
    Field(String),
}

impl GroupBy {
    /// Reads `--group-by`: `host`, `kernel`, or a dotted field path.
    pub fn parse(s: &str) -> Result<GroupBy, String> {
        let s = s.trim();
        match s {
            "" => Err("--group-by: empty (give host, kernel or an environment field)".into()),
            "host" => Ok(GroupBy::Host),
            "kernel" => Ok(GroupBy::Kernel),
            f if f.split('.').any(str::is_empty) => Err(format!(
                "--group-by {f}: not a field path (give host, kernel, or a field of \
                 `oscost env --json` such as scheduler.preempt_model)"
            )),
            f => Ok(GroupBy::Field(f.to_owned())),
        }
    }

    /// The name as given on the command line.
    pub fn name(&self) -> &str {
        match self {
            GroupBy::Host => "host",
            GroupBy::Kernel => "kernel",
            GroupBy::Field(f) => f,
        }
    }

    /// The group of one run's environment; `None` when the field does not exist in this
    /// environment's document at all (a misspelt field), `Some(NOT_RECORDED)` when it exists
    /// but holds nothing.
    pub fn key(&self, env: &Environment) -> Option<String> {
        match self {
            GroupBy::Host => Some(env.host().unwrap_or(NOT_RECORDED).to_owned()),
            GroupBy::Kernel => Some(if env.kernel_release.is_empty() {
                NOT_RECORDED.to_owned()
            } else {
                env.kernel_release.clone()
            }),
            GroupBy::Field(path) => {
                let value = serde_json::to_value(env).ok()?;
                let mut at = &value;
                for (i, part) in path.split('.').enumerate() {
                    at = match at.get(part) {
                        Some(v) => v,
                        // Optional fields left out of the document are fields all the same.
                        None if i == 0 && KNOWN_OPTIONAL.contains(&part) => {
                            return Some(NOT_RECORDED.to_owned())
                        }
                        None if at.is_null() => return Some(NOT_RECORDED.to_owned()),
                        None => return None,
                    };
                }
                Some(match at {
                    serde_json::Value::Null => NOT_RECORDED.to_owned(),
                    serde_json::Value::String(s) if s.is_empty() => NOT_RECORDED.to_owned(),
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
            }
        }
    }
}

/// Top-level environment fields a document leaves out when they are empty.
const KNOWN_OPTIONAL: &[&str] = &["hostname", "fleet"];

/// Why runs cannot be compared by group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FleetError {
    /// No runs were given.
    NoRuns,
    /// The field exists in no run's environment.
    NoSuchField(String),
    /// Every run falls in one group.
    OneGroup {
        /// The field.
        field: String,
        /// The one group.
        group: String,
    },
    /// A run's group name is empty or holds a control character: no column can carry it.
    BadName {
        /// Where the run came from.
        source: String,
        /// The field grouped by.
        field: String,
        /// Where in the document the name is.
        path: String,
        /// The name, escaped.
        name: String,
    },
    /// Two inputs are one run (one id) with different content.
    Disagree {
        /// The first input.
        first: String,
        /// The second.
        second: String,
        /// The run id both carry.
        run_id: String,
    },
    /// The reference group shares no figure with any other.
    NothingShared {
        /// The field grouped by.
        field: String,
        /// The reference group.
        reference: String,
        /// The other groups.
        others: String,
    },
    /// `--reference` names no group.
    NoSuchReference {
        /// The name given.
        name: String,
        /// The field grouped by.
        field: String,
        /// The groups there are.
        choices: String,
    },
}

impl std::fmt::Display for FleetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FleetError::NoRuns => write!(
                f,
                "no runs to compare (give result files, or a history that holds runs)"
            ),
            FleetError::NoSuchField(field) => write!(
                f,
                "--group-by {field}: no such environment field (give host, kernel, or a field \
                 of `oscost env --json`, such as kernel_release, scheduler.preempt_model or \
                 power.cpufreq_governor)"
            ),
            FleetError::OneGroup { field, group } => write!(
                f,
                "--group-by {field}: every run has the same value ({group}), so there is \
                 nothing to compare (give runs of two values or more)"
            ),
            FleetError::BadName {
                source,
                field,
                path,
                name,
            } if name.is_empty() => write!(
                f,
                "{source}: its {field} ({path}) is empty, so no group can be named after it \
                 (correct {path} in the file, or leave the run out)"
            ),
            FleetError::BadName {
                source,
                field,
                path,
                name,
            } => write!(
                f,
                "{source}: its {field} `{name}` ({path}) holds a control character, which \
                 would break the table's rows (correct {path} in the file to one line of \
                 text, or leave the run out)"
            ),
            FleetError::Disagree {
                first,
                second,
                run_id,
            } => write!(
                f,
                "{first} and {second} are both run {run_id} but differ: two documents \
                 disagree under one id (give the one that is right)"
            ),
            FleetError::NothingShared {
                field,
                reference,
                others,
            } => write!(
                f,
                "--group-by {field}: {reference} shares no figure with {others}, so there is \
                 nothing to compare (give runs of the same experiments, or choose another \
                 --reference)"
            ),
            FleetError::NoSuchReference {
                name,
                field,
                choices,
            } => write!(
                f,
                "--reference {name}: no such {field} among the runs (choose from: {choices})"
            ),
        }
    }
}

impl std::error::Error for FleetError {}

/// One group: the run that stands for it and the machine it ran on.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// The group's value (a host name, a kernel release...).
    pub name: String,
    /// Where its run came from (a file name, a history run).
    pub source: String,
    /// The run standing for the group.
    pub run_id: Option<String>,
    /// When that run started.
    pub started_at: Option<String>,
    /// Runs of this group that were given but not used (older than the one used).
    pub older_runs: usize,
    /// The machine, in one line: CPU, CPUs online, kernel, virtualisation.
    pub machine: String,
    /// What started the run, when a fleet tool did.
    pub runner: Option<String>,
}

/// An environment field whose value differs between groups.
#[derive(Debug, Clone, Serialize)]
pub struct FleetEnvDiff {
    /// What the field is.
    pub field: String,
    /// Its value in each group, in the groups' order.
    pub values: Vec<String>,
}

/// One group's figure against the reference group's.
#[derive(Debug, Clone, Serialize)]
pub struct FleetCell {
    /// Median per operation, ns.
    pub median_ns: f64,
    /// This group's figure over the reference group's.
    pub ratio: Option<f64>,
    /// Bootstrap 95 % CI of that ratio.
    pub ratio_ci95: Option<[f64; 2]>,
    /// What the statistics say.
    pub verdict: Verdict,
}

/// One figure across the groups.
#[derive(Debug, Clone, Serialize)]
pub struct FleetRow {
    /// Case or derived figure id.
    pub id: String,
    /// What one operation is.
    pub unit: String,
    /// The reference group's median, ns.
    pub reference_ns: f64,
    /// Every group's cell, in the groups' order; `None` for the reference group itself and
    /// for a group whose run lacks the figure.
    pub cells: Vec<Option<FleetCell>>,
}

/// Runs compared by group.
#[derive(Debug, Clone, Serialize)]
pub struct Fleet {
    /// Always [`FLEET_SCHEMA`].
    pub schema: &'static str,
    /// The field grouped by.
    pub group_by: String,
    /// Index of the reference group in `groups`.
    pub reference: usize,
    /// The groups, in name order.
    pub groups: Vec<Group>,
    /// Environment fields that differ between groups: what can explain a difference.
    pub environment: Vec<FleetEnvDiff>,
    /// One row per figure the reference group has and at least one other group shares.
    pub rows: Vec<FleetRow>,
    /// The judging settings.
    pub settings: Settings,
}

/// Groups `runs` (label, document) by `by`, takes each group's latest run, and compares every
/// group against the reference (`reference`, else the first group in name order).
pub fn build(
    runs: &[(String, &ResultDoc)],
    by: &GroupBy,
    reference: Option<&str>,
    settings: Settings,
) -> Result<Fleet, FleetError> {
    let by_name = group_runs(runs, by)?;
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
    let chosen: Vec<usize> = names.iter().map(|n| latest(runs, &by_name[n])).collect();
    let groups: Vec<Group> = names
        .iter()
        .zip(&chosen)
        .map(|(n, &i)| {
            let (label, doc) = &runs[i];
            Group {
                name: n.clone(),
                source: label.clone(),
                run_id: doc.run_id.clone(),
                started_at: doc.started_at.clone(),
                older_runs: by_name[n].len() - 1,
                machine: machine(&doc.environment),
                runner: doc
                    .environment
                    .fleet
                    .as_ref()
                    .and_then(|f| f.runner.clone()),
            }
        })
        .collect();

    // The reference first, then the others in group order.
    let order: Vec<usize> = std::iter::once(reference)
        .chain((0..names.len()).filter(|&g| g != reference))
        .collect();
    let sources: Vec<(String, &ResultDoc)> = order
        .iter()
        .map(|&g| (names[g].clone(), runs[chosen[g]].1))
        .collect();
    let comparisons = compare_in_parallel(&sources, settings);
    let (mut rows, environment) = merge(&comparisons, &order, names.len());
    if rows.is_empty() {
        return Err(FleetError::NothingShared {
            field: by.name().to_owned(),
            reference: names[reference].clone(),
            others: order[1..]
                .iter()
                .map(|&g| names[g].as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    sort_as_in(&mut rows, runs[chosen[reference]].1);
    Ok(Fleet {
        schema: FLEET_SCHEMA,
        group_by: by.name().to_owned(),
        reference,
        groups,
        environment,
        rows,
        settings,
    })
}

/// Group name → indexes of its runs; an error when there are no runs, none records the field,
/// or all fall in one group.
fn group_runs(
    runs: &[(String, &ResultDoc)],
    by: &GroupBy,
) -> Result<BTreeMap<String, Vec<usize>>, FleetError> {
    if runs.is_empty() {
        return Err(FleetError::NoRuns);
    }
    let keys: Vec<Option<String>> = runs.iter().map(|(_, d)| by.key(&d.environment)).collect();
    if keys.iter().all(Option::is_none) {
        return Err(FleetError::NoSuchField(by.name().to_owned()));
    }
    // One run given twice (two copies, or one file named twice) counts once; two documents of
    // one id that differ are named, never grouped as if they were two runs.
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_name: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, k) in keys.into_iter().enumerate() {
        let (source, doc) = &runs[i];
        if let Some(id) = doc.run_id.as_deref() {
            if let Some(&first) = seen.get(id) {
                if runs[first].1 != *doc {
                    return Err(FleetError::Disagree {
                        first: runs[first].0.clone(),
                        second: source.clone(),
                        run_id: id.to_owned(),
                    });
                }
                continue;
            }
            seen.insert(id, i);
        }
        if let Some(name) = &k {
            let blank = name.trim().is_empty();
            if blank || name.chars().any(char::is_control) {
                return Err(FleetError::BadName {
                    source: source.clone(),
                    field: by.name().to_owned(),
                    path: name_path(by, &doc.environment),
                    name: if blank {
                        String::new()
                    } else {
                        name.escape_debug().to_string()
                    },
                });
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
        });
    }
    Ok(by_name)
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
fn latest(runs: &[(String, &ResultDoc)], members: &[usize]) -> usize {
    // The latest start wins; a run without a start time loses to one with.
    *members
        .iter()
        .max_by(|&&a, &&b| {
            runs[a]
                .1
                .started_at
                .cmp(&runs[b].1.started_at)
                .then(a.cmp(&b))
        })
        .unwrap_or(&members[0])
}

/// The pairwise comparisons as one row per figure and one line per differing environment
/// field, a cell per group; `comparisons[k]` is group `order[k + 1]` against the reference.
fn merge(
    comparisons: &[Comparison],
    order: &[usize],
    groups: usize,
) -> (Vec<FleetRow>, Vec<FleetEnvDiff>) {
    let mut rows: Vec<FleetRow> = Vec::new();
    let mut row_at: BTreeMap<String, usize> = BTreeMap::new();
    let mut env_at: BTreeMap<String, usize> = BTreeMap::new();
    let mut environment: Vec<FleetEnvDiff> = Vec::new();
    for (k, c) in comparisons.iter().enumerate() {
        let g = order[k + 1];
        for r in &c.rows {
            let at = *row_at.entry(r.id.clone()).or_insert_with(|| {
                rows.push(FleetRow {
                    id: r.id.clone(),
                    unit: r.unit.clone(),
                    reference_ns: r.baseline.median_ns,
                    cells: vec![None; groups],
                });
                rows.len() - 1
            });
            rows[at].cells[g] = Some(FleetCell {
                median_ns: r.other.median_ns,
                ratio: r.ratio,
                ratio_ci95: r.ratio_ci95,
                verdict: r.verdict,
            });
        }
        for d in &c.environment {
            let at = *env_at.entry(d.field.clone()).or_insert_with(|| {
                environment.push(FleetEnvDiff {
                    field: d.field.clone(),
                    // Groups that do not differ hold the reference's value.
                    values: vec![d.baseline.clone(); groups],
                });
                environment.len() - 1
            });
            environment[at].values[g] = d.other.clone();
        }
    }
    (rows, environment)
}

/// Sorts the rows in the reference run's order of cases and derived figures.
fn sort_as_in(rows: &mut [FleetRow], reference: &ResultDoc) {
    // In the reference's order: the first comparison lists the rows in it.
    let reference_order: BTreeMap<&str, usize> = reference
        .experiments
        .iter()
        .flat_map(|e| {
            e.cases
                .iter()
                .map(|c| c.id.as_str())
                .chain(e.derived.iter().map(|d| d.id.as_str()))
        })
        .enumerate()
        .map(|(i, id)| (id, i))
        .collect();
    rows.sort_by_key(|r| reference_order.get(r.id.as_str()).copied());
}

/// `compare::compare` of every source after the first against the first, the work shared out
/// among the CPUs: the reference's laws (one per case) made once for every pair, each other
/// run's made for its pair alone and dropped with it, so that the laws in memory are the
/// reference's and one run's per CPU, not every run's (they outweigh the documents).
/// Nothing random is drawn, so the result is the same as one call's.
fn compare_in_parallel(sources: &[(String, &ResultDoc)], settings: Settings) -> Vec<Comparison> {
    let Some(((first_label, first), others)) = sources.split_first() else {
        return Vec::new();
    };
    let first_laws = Laws::of(first);
    let reference = Prepared {
        doc: first,
        laws: &first_laws,
    };
    in_parallel(others, |(label, doc)| {
        let laws = Laws::of(doc);
        compare::compare_measured(
            first_label,
            reference,
            label,
            Prepared { doc, laws: &laws },
            settings,
        )
    })
}

/// `f` of every item, in order, the items shared out among the CPUs in contiguous parts.
fn in_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(items.len())
        .max(1);
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let chunk = items.len().div_ceil(threads);
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(f).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| match h.join() {
                Ok(c) => c,
                // A panic in a part is a bug: carry it to the caller as one would have been.
                Err(p) => std::panic::resume_unwind(p),
            })
            .collect()
    })
}

/// Orders `host2` before `host10`: digit runs compare as numbers.
fn natural(a: &str, b: &str) -> std::cmp::Ordering {
    fn parts(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = s.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    let (pa, pb) = (parts(a), parts(b));
    for (x, y) in pa.iter().zip(&pb) {
        let o = match (x, y) {
            ((true, x), (true, y)) => {
                let (x, y) = (x.trim_start_matches('0'), y.trim_start_matches('0'));
                x.len().cmp(&y.len()).then(x.cmp(y))
            }
            ((_, x), (_, y)) => x.cmp(y),
        };
        if o.is_ne() {
            return o;
        }
    }
    pa.len().cmp(&pb.len()).then(a.cmp(b))
}

/// The machine in one line.
fn machine(env: &Environment) -> String {
    let cpus = env
        .cpus_online
        .as_ref()
        .map_or_else(|| "? CPUs".to_owned(), |c| format!("{} CPUs", c.len()));
    let virt = match (
        &env.virtualisation.cpuid_signature,
        env.virtualisation.hypervisor_flag,
    ) {
        (Some(sig), _) => format!("virtual ({sig})"),
        (None, Some(true)) => "virtual".to_owned(),
        (None, Some(false)) => "bare metal".to_owned(),
        (None, None) => "virtualisation unknown".to_owned(),
    };
    format!(
        "{}, {cpus}, kernel {}, {virt}",
        env.cpu_model.as_deref().unwrap_or("unknown CPU"),
        if env.kernel_release.is_empty() {
            "unknown"
        } else {
            &env.kernel_release
        }
    )
}

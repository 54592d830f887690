//! `compare --group-by`: runs from many machines in one table, one column per group (a host, a
//! kernel, any environment field), every figure as its ratio to a reference group.
//!
//! The statistics are `compare`'s own: each group's run is compared against the reference
//! group's run with [`compare::compare_machines`], so a cell's ratio, its bootstrap 95 % CI
//! and its verdict are exactly what `oscost compare REFERENCE OTHER` would print for that
//! pair. Each run's laws of its cases' bootstrap medians are made once, so the reference's
//! serve every pair. A group
//! with several runs is represented by its latest (by start time); the others are counted and
//! named, never averaged in silently. Its renderings (terminal, Markdown, CSV, JSON, HTML) are
//! in [`render`].
//!
//! Runs by the thousand do not fit in memory together (a document of the default suite is
//! megabytes, its laws more), so the work is in two steps that need not hold them: [`plan`]
//! groups the runs and chooses each group's from their heads ([`RunHead`]) alone, and
//! [`build_planned`] reads each chosen run's document when its comparison starts and drops it
//! when that ends. [`build`] is both over documents already in memory.

mod build;
mod plan;
mod render;

pub use build::build_planned;
pub use plan::{plan, BuildError, Plan, RunHead};
pub use render::{csv, html, json, markdown, terminal};

use crate::compare::{Settings, Verdict};
use crate::format::fmt_ns;
use oscost_model::env::Environment;
use oscost_model::schema::ResultDoc;
use serde::Serialize;
use std::borrow::Cow;

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
/// group against the reference (`reference`, else the first group in name order), the pairs
/// shared out among the CPUs this process may use: [`plan`] and [`build_planned`] over
/// documents already in memory.
pub fn build(
    runs: &[(String, &ResultDoc)],
    by: &GroupBy,
    reference: Option<&str>,
    settings: Settings,
) -> Result<Fleet, FleetError> {
    let heads: Vec<RunHead> = runs.iter().map(|(l, d)| RunHead::of(l, d)).collect();
    let load = |i: usize| Ok::<_, std::convert::Infallible>(Cow::Borrowed(runs[i].1));
    let never = |e: BuildError<std::convert::Infallible>| match e {
        BuildError::Fleet(e) => e,
        BuildError::Load(never) => match never {},
    };
    let plan = plan(&heads, by, reference, &load).map_err(never)?;
    build_planned(&plan, load, settings, available_jobs()).map_err(never)
}

/// How many comparisons to run at once by default: the CPUs this process may use (its
/// affinity and its cgroup's quota), one when that cannot be known.
pub fn available_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
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

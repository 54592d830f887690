//! The comparisons of a [`Plan`]: every chosen run against the reference's, each run's
//! document read by its worker, compared and dropped before the worker reads the next, so that
//! memory holds the reference and one run per worker whatever the number of runs.

use super::plan::{BuildError, Plan};
use super::{Fleet, FleetCell, FleetEnvDiff, FleetError, FleetRow, FLEET_SCHEMA};
use crate::compare::{self, Laws, Prepared, Settings};
use oscost_model::schema::ResultDoc;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Compares the run chosen for every group of `plan` against the reference group's, `jobs`
/// comparisons at a time (at least one). `load(i)` is the document of the `i`-th head the plan
/// was made from ([`Plan::chosen`] says which are asked for): the reference's is read first and
/// kept, with its laws, for every pair; each other run's is read in a worker and dropped with
/// its laws once compared. The result does not depend on `jobs`: nothing random is drawn.
/// When reads fail, the error is that of the first group in the plan's order that failed.
pub fn build_planned<'d, E: Send>(
    plan: &Plan,
    load: impl Fn(usize) -> Result<Cow<'d, ResultDoc>, E> + Sync,
    settings: Settings,
    jobs: usize,
) -> Result<Fleet, BuildError<E>> {
    let reference = load(plan.chosen[plan.reference]).map_err(BuildError::Load)?;
    let reference_laws = Laws::of(&reference);
    let prepared = Prepared {
        doc: &reference,
        laws: &reference_laws,
    };
    let names: Vec<&str> = plan.groups.iter().map(|g| g.name.as_str()).collect();
    // The others in group order.
    let others: Vec<usize> = (0..names.len()).filter(|&g| g != plan.reference).collect();
    let columns = in_workers(others.len(), jobs, |k| {
        let g = others[k];
        let doc = load(plan.chosen[g])?;
        let laws = Laws::of(&doc);
        let c = compare::compare_machines(
            names[plan.reference],
            prepared,
            names[g],
            Prepared {
                doc: &doc,
                laws: &laws,
            },
            settings,
        );
        Ok(Column::of(c))
    })
    .map_err(BuildError::Load)?;
    let (mut rows, environment) = merge(&columns, &others, names.len());
    if rows.is_empty() {
        return Err(FleetError::NothingShared {
            field: plan.group_by.clone(),
            reference: names[plan.reference].to_owned(),
            others: others
                .iter()
                .map(|&g| names[g])
                .collect::<Vec<_>>()
                .join(", "),
        }
        .into());
    }
    sort_as_in(&mut rows, &reference);
    Ok(Fleet {
        schema: FLEET_SCHEMA,
        group_by: plan.group_by.clone(),
        reference: plan.reference,
        groups: plan.groups.clone(),
        environment,
        rows,
        settings,
    })
}

/// What a fleet keeps of one run's comparison with the reference: a comparison holds much more
/// (both sides' figures, the tests' statistics, percentiles), kept by the thousand for nothing.
struct Column {
    /// Per figure: id, unit, the reference's median and this run's cell.
    rows: Vec<(String, String, f64, FleetCell)>,
    /// Per differing environment field: what it is, the reference's value and this run's.
    environment: Vec<(String, String, String)>,
}

impl Column {
    fn of(c: compare::Comparison) -> Column {
        Column {
            rows: c
                .rows
                .into_iter()
                .map(|r| {
                    let cell = FleetCell {
                        median_ns: r.other.median_ns,
                        ratio: r.ratio,
                        ratio_ci95: r.ratio_ci95,
                        verdict: r.verdict,
                    };
                    (r.id, r.unit, r.baseline.median_ns, cell)
                })
                .collect(),
            environment: c
                .environment
                .into_iter()
                .map(|d| (d.field, d.baseline, d.other))
                .collect(),
        }
    }
}

/// `f` of `0..n`, in order, `jobs` at a time on worker threads that each take the next index
/// when done with one (runs differ in size, so fixed shares would leave workers idle). An
/// index after one that failed is not started: only the first failure is reported, and every
/// index before it is done, so which failure that is does not depend on the workers' timing.
fn in_workers<R: Send, E: Send>(
    n: usize,
    jobs: usize,
    f: impl Fn(usize) -> Result<R, E> + Sync,
) -> Result<Vec<R>, E> {
    let next = AtomicUsize::new(0);
    let failed = AtomicUsize::new(usize::MAX);
    let work = || {
        let mut done: Vec<(usize, Result<R, E>)> = Vec::new();
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            if k >= n || k > failed.load(Ordering::Relaxed) {
                return done;
            }
            let r = f(k);
            if r.is_err() {
                failed.fetch_min(k, Ordering::Relaxed);
            }
            done.push((k, r));
        }
    };
    let threads = jobs.min(n).max(1);
    let mut done: Vec<(usize, Result<R, E>)> = if threads == 1 {
        work()
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads).map(|_| scope.spawn(work)).collect();
            handles
                .into_iter()
                .flat_map(|h| match h.join() {
                    Ok(d) => d,
                    // A panic in a worker is a bug: carry it to the caller as one would have been.
                    Err(p) => std::panic::resume_unwind(p),
                })
                .collect()
        })
    };
    done.sort_by_key(|(k, _)| *k);
    done.into_iter().map(|(_, r)| r).collect()
}

/// The columns as one row per figure and one line per differing environment field, a cell
/// per group; `columns[k]` is group `others[k]` against the reference.
fn merge(
    columns: &[Column],
    others: &[usize],
    groups: usize,
) -> (Vec<FleetRow>, Vec<FleetEnvDiff>) {
    let mut rows: Vec<FleetRow> = Vec::new();
    let mut row_at: BTreeMap<&str, usize> = BTreeMap::new();
    let mut env_at: BTreeMap<&str, usize> = BTreeMap::new();
    let mut environment: Vec<FleetEnvDiff> = Vec::new();
    for (c, &g) in columns.iter().zip(others) {
        for (id, unit, reference_ns, cell) in &c.rows {
            let at = *row_at.entry(id).or_insert_with(|| {
                rows.push(FleetRow {
                    id: id.clone(),
                    unit: unit.clone(),
                    reference_ns: *reference_ns,
                    cells: vec![None; groups],
                });
                rows.len() - 1
            });
            rows[at].cells[g] = Some(cell.clone());
        }
        for (field, baseline, other) in &c.environment {
            let at = *env_at.entry(field).or_insert_with(|| {
                environment.push(FleetEnvDiff {
                    field: field.clone(),
                    // Groups that do not differ hold the reference's value.
                    values: vec![baseline.clone(); groups],
                });
                environment.len() - 1
            });
            environment[at].values[g] = other.clone();
        }
    }
    (rows, environment)
}

/// Sorts the rows in the reference run's order of cases and derived figures.
fn sort_as_in(rows: &mut [FleetRow], reference: &ResultDoc) {
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

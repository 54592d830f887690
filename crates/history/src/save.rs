//! Saving runs into the history, and removing them: each in one transaction.

use crate::store::{real, Cell};
use crate::{env_fingerprint, History, HistoryError, Saved};
use oscost_model::{ResultDoc, SCHEMA};
use std::collections::HashSet;

/// Namespace of the ids given to documents that carry none (`oscost/1`): a UUID v5 of the
/// document's canonical JSON in it, so the same document always gets the same id.
const RUN_NAMESPACE: uuid::Uuid = uuid::uuid!("afcbae2c-4a80-4653-a8c4-617d4961ebf9");

impl History {
    /// Saves `doc` in one transaction: all of it or nothing. A document without a `run_id`
    /// (read from `oscost/1`) is stored under [`derived_run_id`], so importing it twice
    /// changes nothing either. A run already in the history is left as it is
    /// (`new == false`).
    pub fn save(&mut self, doc: &ResultDoc) -> Result<Saved, HistoryError> {
        self.write(|h| h.save_in(doc))
    }

    /// Saves every document of `docs` as [`History::save`] does, in one transaction: all of
    /// them or none. Much faster than one save each where a commit waits for the disk.
    pub fn save_all(&mut self, docs: &[ResultDoc]) -> Result<Vec<Saved>, HistoryError> {
        self.write(|h| docs.iter().map(|d| h.save_in(d)).collect())
    }

    /// [`History::save`] inside a transaction already begun.
    fn save_in(&self, doc: &ResultDoc) -> Result<Saved, HistoryError> {
        let run_id = match &doc.run_id {
            Some(id) => id.clone(),
            None => derived_run_id(doc)?,
        };
        // A run already there costs one look-up, not the whole document sent and parsed.
        let there = self.query(
            "SELECT run_id FROM runs WHERE run_id = $1",
            &[(&run_id).into()],
        )?;
        let mut stored = doc.clone();
        stored.schema = SCHEMA.into();
        stored.run_id = Some(run_id.clone());
        if !there.is_empty() {
            let differs = self.differs_from_stored(&stored)?;
            return Ok(Saved {
                run_id,
                new: false,
                differs,
            });
        }
        let document = serde_json::to_string(&stored)?;
        let env = &doc.environment;
        let rows = case_rows(doc);
        let saved_at = humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string();
        let run = vec![
            Cell::from(&run_id),
            doc.started_at.as_ref().into(),
            saved_at.into(),
            (&env.oscost_version).into(),
            (&env.kernel_release).into(),
            env.cpu_model.as_ref().into(),
            env_fingerprint(env).into(),
            env.command_line.join(" ").into(),
            (rows.len() as i64).into(),
            document.into(),
        ];
        let mut rest: Vec<(&str, Vec<Cell>)> = Vec::new();
        // The name a fleet gives the host, else its own: loopback "hosts" share one hostname.
        if let Some(host) = env.host() {
            rest.push((
                "INSERT INTO run_hosts (run_id, hostname) VALUES ($1, $2)",
                vec![(&run_id).into(), host.into()],
            ));
        }
        for (i, e) in doc.experiments.iter().enumerate() {
            rest.push((
                "INSERT INTO experiments (run_id, position, name) VALUES ($1, $2, $3)",
                vec![(&run_id).into(), (i as i64).into(), (&e.name).into()],
            ));
        }
        for r in &rows {
            rest.push((
                "INSERT INTO cases (run_id, case_id, experiment, kind, unit, median_ns, \
                 ci_low_ns, ci_high_ns, median_cycles, samples, checks_passed) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                vec![
                    (&run_id).into(),
                    r.case_id.into(),
                    r.experiment.into(),
                    r.kind.into(),
                    r.unit.into(),
                    real(r.median_ns),
                    real(r.ci95_ns[0]),
                    real(r.ci95_ns[1]),
                    real(r.median_cycles),
                    r.samples.into(),
                    (r.checks_passed as i64).into(),
                ],
            ));
        }
        // ON CONFLICT: another oscost may have saved the run since the look-up.
        let inserted = self.execute(&[(
            "INSERT INTO runs (run_id, started_at, saved_at, oscost_version, kernel, \
                 cpu_model, env_fingerprint, command_line, case_count, document) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
                 ON CONFLICT (run_id) DO NOTHING",
            run,
        )])?;
        if inserted.first().copied().unwrap_or(0) == 0 {
            let differs = self.differs_from_stored(&stored)?;
            return Ok(Saved {
                run_id,
                new: false,
                differs,
            });
        }
        self.execute(&rest)?;
        Ok(Saved {
            run_id,
            new: true,
            differs: false,
        })
    }

    /// Whether the run stored under `doc`'s id (given as it would be stored) holds other
    /// content: compared as JSON values, so the text's layout does not count.
    fn differs_from_stored(&self, doc: &ResultDoc) -> Result<bool, HistoryError> {
        let rows = self.query(
            "SELECT document FROM runs WHERE run_id = $1",
            &[doc.run_id.as_ref().into()],
        )?;
        let Some(text) = rows.into_iter().next().and_then(|r| r.into_iter().next()) else {
            return Ok(false);
        };
        let stored: serde_json::Value =
            serde_json::from_str(&text.text().unwrap_or_default()).unwrap_or_default();
        Ok(stored != serde_json::to_value(doc)?)
    }

    /// Removes the run `run` names (as [`History::resolve`] reads it), with its experiments
    /// and cases.
    pub fn remove(&mut self, run: &str) -> Result<(), HistoryError> {
        let run_id = self.resolve(run)?;
        self.write(|h| {
            // Spelled out rather than left to ON DELETE CASCADE alone, so a database opened
            // without foreign keys enforced loses no less.
            h.execute(&[
                (
                    "DELETE FROM cases WHERE run_id = $1",
                    vec![(&run_id).into()],
                ),
                (
                    "DELETE FROM experiments WHERE run_id = $1",
                    vec![(&run_id).into()],
                ),
                ("DELETE FROM runs WHERE run_id = $1", vec![(&run_id).into()]),
            ])
        })?;
        Ok(())
    }
}

/// The id [`History::save`] gives a document that carries none: a UUID v5 of its canonical
/// JSON (compact, fields in the model's order, maps sorted), so the same document read from
/// any file gets the same id.
pub fn derived_run_id(doc: &ResultDoc) -> Result<String, HistoryError> {
    let mut canonical = doc.clone();
    canonical.schema = SCHEMA.into();
    canonical.run_id = None;
    let json = serde_json::to_string(&canonical)?;
    Ok(uuid::Uuid::new_v5(&RUN_NAMESPACE, json.as_bytes()).to_string())
}

/// One row of the `cases` table.
struct CaseRow<'a> {
    case_id: &'a str,
    experiment: &'a str,
    kind: &'static str,
    unit: &'a str,
    median_ns: f64,
    ci95_ns: [f64; 2],
    median_cycles: f64,
    samples: Option<i64>,
    checks_passed: bool,
}

/// The cases and derived figures of `doc`, each id once (the first wins: ids are unique in
/// any document oscost writes, and the primary key needs them to be).
fn case_rows(doc: &ResultDoc) -> Vec<CaseRow<'_>> {
    let mut seen = HashSet::new();
    let mut rows = Vec::new();
    for e in &doc.experiments {
        for c in &e.cases {
            if seen.insert(c.id.as_str()) {
                rows.push(CaseRow {
                    case_id: &c.id,
                    experiment: &e.name,
                    kind: "case",
                    unit: &c.unit,
                    median_ns: c.median_ns,
                    ci95_ns: c.ci95_ns,
                    median_cycles: c.median_cycles,
                    samples: Some(c.samples as i64),
                    checks_passed: c.checks_passed,
                });
            }
        }
        for d in &e.derived {
            if seen.insert(d.id.as_str()) {
                rows.push(CaseRow {
                    case_id: &d.id,
                    experiment: &e.name,
                    kind: "derived",
                    // As the CSV output names them.
                    unit: "derived",
                    median_ns: d.estimate_ns,
                    ci95_ns: d.ci95_ns,
                    median_cycles: d.estimate_cycles,
                    samples: None,
                    checks_passed: d.flagged.is_none(),
                });
            }
        }
    }
    rows
}

/// How many rows of the `cases` table `doc` gives: its distinct case and derived-figure ids.
pub fn case_count(doc: &ResultDoc) -> usize {
    case_rows(doc).len()
}

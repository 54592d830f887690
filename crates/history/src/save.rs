//! Saving runs into the history, and removing them: each in one transaction.

use crate::encode::{Encoded, LZ4};
use crate::store::{first as first_cell, next, real, Cell};
use crate::{env_fingerprint, History, HistoryError, Saved};
use oscost_model::{ResultDoc, SCHEMA};
use std::collections::{HashMap, HashSet};

/// Runs per multi-row insert: ten parameters each, well under SQLite's and PostgreSQL's
/// limits.
const RUNS_PER_INSERT: usize = 100;

/// Namespace of the ids given to documents that carry none (`oscost/1`): a UUID v5 of the
/// document's canonical JSON in it, so the same document always gets the same id.
const RUN_NAMESPACE: uuid::Uuid = uuid::uuid!("afcbae2c-4a80-4653-a8c4-617d4961ebf9");

impl History {
    /// Saves `doc` in one transaction: all of it or nothing. A document without a `run_id`
    /// (read from `oscost/1`) is stored under [`derived_run_id`], so importing it twice
    /// changes nothing either. A run already in the history is left as it is
    /// (`new == false`).
    pub fn save(&mut self, doc: &ResultDoc) -> Result<Saved, HistoryError> {
        let encoded = Encoded::from_doc(doc)?;
        let mut saved = self.save_encoded(vec![encoded])?;
        Ok(saved.remove(0))
    }

    /// Saves every document of `docs` as [`History::save`] does, in one transaction: all of
    /// them or none. Much faster than one save each where a commit waits for the disk.
    pub fn save_all(&mut self, docs: &[ResultDoc]) -> Result<Vec<Saved>, HistoryError> {
        let encoded = docs
            .iter()
            .map(Encoded::from_doc)
            .collect::<Result<Vec<_>, _>>()?;
        self.save_encoded(encoded)
    }

    /// Saves documents already read and compressed ([`Encoded`]) in one transaction, in
    /// bulk: their runs in one statement per hundred, their documents, hosts, experiments and
    /// cases in one `COPY` each on PostgreSQL. A run already there (before, or saved by
    /// another oscost meanwhile, or twice in `docs`) is left as it is; `differs` says whether
    /// its stored document holds other content.
    pub fn save_encoded(&mut self, mut docs: Vec<Encoded>) -> Result<Vec<Saved>, HistoryError> {
        self.write(|h| h.save_in(&mut docs))
    }

    /// [`History::save_encoded`] inside a transaction already begun. The compressed texts of
    /// the runs stored are moved out of `docs`.
    fn save_in(&self, docs: &mut [Encoded]) -> Result<Vec<Saved>, HistoryError> {
        let saved_at = humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string();
        // Each id once: a later copy in the same batch is "already there".
        let mut first = HashSet::new();
        let fresh: Vec<&Encoded> = docs
            .iter()
            .filter(|d| first.insert(d.run_id.as_str()))
            .collect();
        let mut inserted: HashSet<String> = HashSet::new();
        // ON CONFLICT: a run stored before, or by another oscost since anyone looked.
        for group in fresh.chunks(RUNS_PER_INSERT) {
            let mut values = Vec::with_capacity(group.len());
            let mut params = Vec::with_capacity(group.len() * 10);
            for (i, e) in group.iter().enumerate() {
                let marks: Vec<String> = (1..=10).map(|k| format!("${}", i * 10 + k)).collect();
                values.push(format!("({})", marks.join(", ")));
                let env = &e.doc.environment;
                params.extend([
                    Cell::from(&e.run_id),
                    e.doc.started_at.as_ref().into(),
                    (&saved_at).into(),
                    (&env.oscost_version).into(),
                    (&env.kernel_release).into(),
                    env.cpu_model.as_ref().into(),
                    env_fingerprint(env).into(),
                    env.command_line.join(" ").into(),
                    (case_count(&e.doc) as i64).into(),
                    self.no_document(),
                ]);
            }
            let rows = self.query(
                &format!(
                    "INSERT INTO runs (run_id, started_at, saved_at, oscost_version, kernel, \
                     cpu_model, env_fingerprint, command_line, case_count, document) VALUES {} \
                     ON CONFLICT (run_id) DO NOTHING RETURNING run_id",
                    values.join(", ")
                ),
                &params,
            )?;
            inserted.extend(rows.into_iter().map(|r| first_cell(r).string()));
        }
        let mut first_copy = HashSet::new();
        let new: Vec<usize> = (0..docs.len())
            .filter(|&i| {
                inserted.contains(&docs[i].run_id) && first_copy.insert(docs[i].run_id.clone())
            })
            .collect();
        let (mut documents, mut hosts, mut experiments, mut cases) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for &i in &new {
            documents.push(vec![
                Cell::from(&docs[i].run_id),
                LZ4.into(),
                (&docs[i].digest).into(),
                Cell::Blob(std::mem::take(&mut docs[i].body)),
            ]);
        }
        for e in new.iter().map(|&i| &docs[i]) {
            // The name a fleet gives the host, else its own: loopback "hosts" share one
            // hostname.
            if let Some(host) = e.doc.environment.host() {
                hosts.push(vec![(&e.run_id).into(), host.into()]);
            }
            for (i, x) in e.doc.experiments.iter().enumerate() {
                experiments.push(vec![
                    (&e.run_id).into(),
                    (i as i64).into(),
                    (&x.name).into(),
                ]);
            }
            for r in case_rows(&e.doc) {
                cases.push(vec![
                    (&e.run_id).into(),
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
                ]);
            }
        }
        self.bulk(
            "documents",
            &["run_id", "encoding", "digest", "body"],
            &documents,
        )?;
        self.bulk("run_hosts", &["run_id", "hostname"], &hosts)?;
        self.bulk("experiments", &["run_id", "position", "name"], &experiments)?;
        self.bulk(
            "cases",
            &[
                "run_id",
                "case_id",
                "experiment",
                "kind",
                "unit",
                "median_ns",
                "ci_low_ns",
                "ci_high_ns",
                "median_cycles",
                "samples",
                "checks_passed",
            ],
            &cases,
        )?;
        let new: HashSet<usize> = new.into_iter().collect();
        docs.iter()
            .enumerate()
            .map(|(i, e)| {
                let new = new.contains(&i);
                Ok(Saved {
                    run_id: e.run_id.clone(),
                    new,
                    differs: !new && self.differs_from_stored(e)?,
                })
            })
            .collect()
    }

    /// Which of `ids` the store holds, each with the digest of its stored text (`None` for a
    /// run saved before schema 3, whose document is not digested): one query, no document
    /// read. Ids not there are absent from the map.
    pub fn stored_digests(
        &self,
        ids: &[&str],
    ) -> Result<HashMap<String, Option<String>>, HistoryError> {
        let mut out = HashMap::new();
        for group in ids.chunks(RUNS_PER_INSERT * 10) {
            let marks: Vec<String> = (1..=group.len()).map(|i| format!("${i}")).collect();
            let params: Vec<Cell> = group.iter().map(|id| Cell::from(*id)).collect();
            for row in self.query(
                &format!(
                    "SELECT r.run_id, d.digest FROM runs r LEFT JOIN documents d \
                     ON d.run_id = r.run_id WHERE r.run_id IN ({})",
                    marks.join(", ")
                ),
                &params,
            )? {
                let mut r = row.into_iter();
                out.insert(next(&mut r).string(), next(&mut r).text());
            }
        }
        Ok(out)
    }

    /// Whether the run stored under `e`'s id holds other content: the same text (by its
    /// digest) does not; other texts are compared as JSON values of the documents they read
    /// as, so layout, key order and the id's case do not count.
    fn differs_from_stored(&self, e: &Encoded) -> Result<bool, HistoryError> {
        let stored = self.stored_digests(&[e.run_id.as_str()])?;
        match stored.get(&e.run_id) {
            None => return Ok(false),
            Some(Some(d)) if *d == e.digest => return Ok(false),
            Some(_) => {}
        }
        let there = self.get(&e.run_id)?;
        Ok(serde_json::to_value(&there)? != serde_json::to_value(&e.doc)?)
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
                (
                    "DELETE FROM documents WHERE run_id = $1",
                    vec![(&run_id).into()],
                ),
                (
                    "DELETE FROM run_hosts WHERE run_id = $1",
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

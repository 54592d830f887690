//! Saving runs into the history, and removing them: each in one transaction.

use crate::encode::{Encoded, LZ4};
use crate::rows::case_rows;
use crate::store::{first as first_cell, next, real, Cell};
use crate::{History, HistoryError, Saved};
use oscost_model::ResultDoc;
use std::collections::{HashMap, HashSet};

/// Runs per multi-row insert: ten parameters each, well under SQLite's and PostgreSQL's
/// limits.
const RUNS_PER_INSERT: usize = 100;

impl History {
    /// Saves `doc` in one transaction: all of it or nothing. A document without a `run_id`
    /// (read from `oscost/1`) is stored under [`derived_run_id`], so importing it twice
    /// changes nothing either. A run already in the history is left as it is
    /// (`new == false`).
    pub fn save(&mut self, doc: &ResultDoc) -> Result<Saved, HistoryError> {
        let encoded = Encoded::from_doc(doc)?;
        let mut saved = self.save_encoded(&[encoded])?;
        Ok(saved.remove(0))
    }

    /// Saves every document of `docs` as [`History::save`] does, in one transaction: all of
    /// them or none. Much faster than one save each where a commit waits for the disk.
    pub fn save_all(&mut self, docs: &[ResultDoc]) -> Result<Vec<Saved>, HistoryError> {
        let encoded = docs
            .iter()
            .map(Encoded::from_doc)
            .collect::<Result<Vec<_>, _>>()?;
        self.save_encoded(&encoded)
    }

    /// Saves documents already read and compressed ([`Encoded`]) in one transaction, in
    /// bulk: their runs in one statement per hundred, their documents, hosts, experiments and
    /// cases in one `COPY` each on PostgreSQL. A run already there (before, or saved by
    /// another oscost meanwhile, or twice in `docs`) is left as it is; `differs` says whether
    /// its stored document holds other content.
    pub fn save_encoded(&mut self, docs: &[Encoded]) -> Result<Vec<Saved>, HistoryError> {
        self.write(|h| h.save_in(docs, &now(), &mut HashSet::new()))
    }

    /// Saves documents in one transaction as [`History::save_encoded`] does, taking them part
    /// by part as `next` gives them (`None`: no more), each part stored before the next is
    /// asked for: the server works on the first documents while later ones are still being
    /// read, rather than waiting for the whole transaction's. Each part, once stored, is handed
    /// to `stored` (a push frees it on another thread, where the store does not wait for the
    /// frees). Returns what became of every document, in the order given.
    pub fn save_parts(
        &mut self,
        mut next: impl FnMut() -> Option<Vec<Encoded>>,
        mut stored: impl FnMut(Vec<Encoded>),
    ) -> Result<Vec<Saved>, HistoryError> {
        self.write(|h| {
            let saved_at = now();
            let mut seen = HashSet::new();
            let mut out = Vec::new();
            while let Some(part) = next() {
                out.extend(h.save_in(&part, &saved_at, &mut seen)?);
                stored(part);
            }
            Ok(out)
        })
    }

    /// Saves `docs` inside a transaction already begun; `seen` holds the ids saved before in
    /// the same transaction, to which those of `docs` are added.
    fn save_in(
        &self,
        docs: &[Encoded],
        saved_at: &str,
        seen: &mut HashSet<String>,
    ) -> Result<Vec<Saved>, HistoryError> {
        // Each id once: a later copy, in `docs` or in an earlier part, is "already there".
        let fresh: Vec<&Encoded> = docs
            .iter()
            .filter(|d| seen.insert(d.run_id.clone()))
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
                    saved_at.into(),
                    (&env.oscost_version).into(),
                    (&env.kernel_release).into(),
                    env.cpu_model.as_ref().into(),
                    (&e.fingerprint).into(),
                    env.command_line.join(" ").into(),
                    (e.rows.cases.rows() as i64).into(),
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
        // PostgreSQL takes the rows the parse made, as they are; SQLite inserts them from the
        // documents (only worked out if it is the store).
        let new_docs: Vec<&Encoded> = new.iter().map(|&i| &docs[i]).collect();
        let cells = std::cell::OnceCell::new();
        let cells = || cells.get_or_init(|| cell_rows(&new_docs));
        self.append(
            "documents",
            &["run_id", "encoding", "digest", "body"],
            new_docs.iter().map(|e| &e.rows.document),
            || &cells()[0],
        )?;
        self.append(
            "run_hosts",
            &["run_id", "hostname"],
            new_docs.iter().map(|e| &e.rows.hosts),
            || &cells()[1],
        )?;
        self.append(
            "experiments",
            &["run_id", "position", "name"],
            new_docs.iter().map(|e| &e.rows.experiments),
            || &cells()[2],
        )?;
        self.append(
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
            new_docs.iter().map(|e| &e.rows.cases),
            || &cells()[3],
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

/// The time a save is recorded at.
fn now() -> String {
    humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string()
}

/// The same rows as [`table_rows`](crate::rows::table_rows), and the `documents` rows, as values to bind: how SQLite
/// takes them. Each table's rows, in the order `documents`, `run_hosts`, `experiments`,
/// `cases`.
fn cell_rows(docs: &[&Encoded]) -> [Vec<Vec<Cell>>; 4] {
    let (mut documents, mut hosts, mut experiments, mut cases) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for e in docs {
        documents.push(vec![
            Cell::from(&e.run_id),
            LZ4.into(),
            (&e.digest).into(),
            Cell::Blob(e.body().to_vec()),
        ]);
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
    [documents, hosts, experiments, cases]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::copy::CopyMessage;
    use crate::rows::case_count;

    /// The payload of a binary `COPY` of `rows`, as the store wrote it from values before the
    /// rows were written where the documents are parsed: the reference.
    fn old_payload(rows: &[Vec<Cell>]) -> Vec<u8> {
        let mut data = Vec::new();
        data.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
        data.extend_from_slice(&[0; 8]);
        for row in rows {
            data.extend_from_slice(&(row.len() as i16).to_be_bytes());
            for cell in row {
                cell.copy_binary(&mut data);
            }
        }
        data.extend_from_slice(&(-1i16).to_be_bytes());
        data
    }

    /// The payload the server reads from the messages written at parse.
    fn new_payload<'a>(messages: impl Iterator<Item = &'a CopyMessage>) -> Vec<u8> {
        let mut data = Vec::new();
        data.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
        data.extend_from_slice(&[0; 8]);
        for m in messages {
            data.extend_from_slice(m.rows_bytes());
        }
        data.extend_from_slice(&(-1i16).to_be_bytes());
        data
    }

    #[test]
    fn the_rows_written_at_parse_are_the_bytes_the_values_gave() {
        // A document under 64 KiB and one over (LZ4's two tables), one with a host (from a
        // run, serialised here), one read from text.
        let small = include_str!("../../../tests/golden/oscost-2.json");
        let large = include_str!("../../report/tests/fixtures/suite.json");
        let mut hosted = oscost_model::read(small).unwrap();
        hosted.run_id = Some("0f6a7c1e-5b1d-4a61-9a53-3c7e0d8a1b22".into());
        hosted.environment.hostname = Some("host-7".into());
        let docs = [
            Encoded::from_text(small).unwrap(),
            Encoded::from_text(large).unwrap(),
            Encoded::from_doc(&hosted).unwrap(),
        ];
        let texts = [
            small.to_owned(),
            large.to_owned(),
            serde_json::to_string(&docs[2].doc).unwrap(),
        ];
        assert!(texts[0].len() < 65_535 && texts[1].len() > 65_535);
        let refs: Vec<&Encoded> = docs.iter().collect();
        let [_, hosts, experiments, cases] = cell_rows(&refs);
        // The documents as they were stored: `lz4_flex::compress_prepend_size` of the text.
        let documents: Vec<Vec<Cell>> = docs
            .iter()
            .zip(&texts)
            .map(|(e, t)| {
                vec![
                    Cell::from(&e.run_id),
                    LZ4.into(),
                    crate::encode::digest(t.as_bytes()).into(),
                    Cell::Blob(lz4_flex::compress_prepend_size(t.as_bytes())),
                ]
            })
            .collect();
        for (e, t) in docs.iter().zip(&texts) {
            // What the runs' insert takes from the parse.
            assert_eq!(e.rows.cases.rows(), case_count(&e.doc));
            assert_eq!(e.fingerprint, crate::env_fingerprint(&e.doc.environment));
            assert_eq!(e.body(), lz4_flex::compress_prepend_size(t.as_bytes()));
            assert_eq!(crate::encode::decode(&e.run_id, LZ4, e.body()).unwrap(), *t);
        }
        assert_eq!(hosts.len(), 1);
        assert!(cases.len() > 100 && !experiments.is_empty());
        let rows = |f: fn(&Encoded) -> &CopyMessage| new_payload(docs.iter().map(f));
        assert_eq!(rows(|e| &e.rows.document), old_payload(&documents));
        assert_eq!(rows(|e| &e.rows.hosts), old_payload(&hosts));
        assert_eq!(rows(|e| &e.rows.experiments), old_payload(&experiments));
        assert_eq!(rows(|e| &e.rows.cases), old_payload(&cases));
    }
}

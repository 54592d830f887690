//! What a document adds to the tables besides its own text: the id it is kept under when it
//! carries none, and its rows of `run_hosts`, `experiments` and `cases`. Read by the encoder
//! (a push's parse threads) and by the store's writer alike.

use crate::copy::{CopyMessage, CopyRows};
use crate::HistoryError;
use oscost_model::{ResultDoc, SCHEMA};
use std::collections::HashSet;

/// Namespace of the ids given to documents that carry none (`oscost/1`): a UUID v5 of the
/// document's canonical JSON in it, so the same document always gets the same id.
const RUN_NAMESPACE: uuid::Uuid = uuid::uuid!("afcbae2c-4a80-4653-a8c4-617d4961ebf9");

/// The id [`History::save`](crate::History::save) gives a document that carries none: a UUID v5 of its canonical
/// JSON (compact, fields in the model's order, maps sorted), so the same document read from
/// any file gets the same id.
pub fn derived_run_id(doc: &ResultDoc) -> Result<String, HistoryError> {
    let mut canonical = doc.clone();
    canonical.schema = SCHEMA.into();
    canonical.run_id = None;
    let json = serde_json::to_string(&canonical)?;
    Ok(uuid::Uuid::new_v5(&RUN_NAMESPACE, json.as_bytes()).to_string())
}

/// The rows `doc` adds to `run_hosts`, `experiments` and `cases` under `run_id`, in the binary
/// `COPY` form, each table's one message: written by the thread that parsed the document, so
/// the store's thread only sends them.
pub(crate) fn table_rows(doc: &ResultDoc, run_id: &str) -> (CopyMessage, CopyMessage, CopyMessage) {
    let mut hosts = CopyRows::with_capacity(64 + run_id.len());
    // The name a fleet gives the host, else its own: loopback "hosts" share one hostname.
    if let Some(host) = doc.environment.host() {
        hosts.row(2);
        hosts.text(run_id);
        hosts.text(host);
    }
    let mut experiments = CopyRows::with_capacity(doc.experiments.len() * (48 + run_id.len()));
    for (i, x) in doc.experiments.iter().enumerate() {
        experiments.row(3);
        experiments.text(run_id);
        experiments.int4(i as i64);
        experiments.text(&x.name);
    }
    let rows = case_rows(doc);
    // About what a row takes (ids and names of a few dozen bytes): grown if short.
    let mut cases = CopyRows::with_capacity(rows.len() * (160 + run_id.len()));
    for r in rows {
        cases.row(11);
        cases.text(run_id);
        cases.text(r.case_id);
        cases.text(r.experiment);
        cases.text(r.kind);
        cases.text(r.unit);
        cases.real(r.median_ns);
        cases.real(r.ci95_ns[0]);
        cases.real(r.ci95_ns[1]);
        cases.real(r.median_cycles);
        cases.opt_int4(r.samples);
        cases.int4(r.checks_passed as i64);
    }
    (hosts.finish(), experiments.finish(), cases.finish())
}

/// One row of the `cases` table.
pub(crate) struct CaseRow<'a> {
    pub(crate) case_id: &'a str,
    pub(crate) experiment: &'a str,
    pub(crate) kind: &'static str,
    pub(crate) unit: &'a str,
    pub(crate) median_ns: f64,
    pub(crate) ci95_ns: [f64; 2],
    pub(crate) median_cycles: f64,
    pub(crate) samples: Option<i64>,
    pub(crate) checks_passed: bool,
}

/// The cases and derived figures of `doc`, each id once (the first wins: ids are unique in
/// any document oscost writes, and the primary key needs them to be).
pub(crate) fn case_rows(doc: &ResultDoc) -> Vec<CaseRow<'_>> {
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

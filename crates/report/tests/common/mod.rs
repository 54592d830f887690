//! Helpers the report crate's tests share.

use oscost_model::ResultDoc;

/// `doc` with one case's samples scaled by `factor`, as a slower or faster run of that case
/// would give.
pub fn scaled(mut doc: ResultDoc, case: &str, factor: f64) -> ResultDoc {
    let c = doc
        .experiments
        .iter_mut()
        .flat_map(|e| e.cases.iter_mut())
        .find(|c| c.id == case)
        .unwrap();
    c.raw_ns.iter_mut().for_each(|x| *x *= factor);
    c.median_ns *= factor;
    c.ci95_ns = c.ci95_ns.map(|x| x * factor);
    doc
}

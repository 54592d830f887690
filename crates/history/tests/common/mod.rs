//! Documents for the history tests, made from the golden `oscost/2` file (a fictional machine).
#![allow(dead_code)] // each test binary uses a different part

use oscost_model::ResultDoc;

#[path = "../../../../xtask/src/skip.rs"]
mod skip;

/// A test that cannot run here says so, and `cargo xtask test` counts it as skipped:
/// `return common::skip("needs root");`.
pub fn skip(reason: &str) {
    skip::skip(reason);
}

/// The golden `oscost/2` document of the repository's own tests.
pub const GOLDEN_2: &str = include_str!("../../../../tests/golden/oscost-2.json");
/// The golden `oscost/1` document.
pub const GOLDEN_1: &str = include_str!("../../../../tests/golden/oscost-1.json");

/// The golden document as run `tag`/`n`: its own id, a start `n` minutes after the golden
/// one's, and every median scaled by `1 + n / 100`, so runs differ.
pub fn run(tag: &str, n: u32) -> ResultDoc {
    let mut doc = oscost_model::read(GOLDEN_2).expect("the golden document reads");
    let name = format!("{tag}/{n}");
    doc.run_id = Some(uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, name.as_bytes()).to_string());
    doc.started_at = Some(format!(
        "2026-11-{:02}T{:02}:{:02}:00Z",
        1 + n / 1440,
        n / 60 % 24,
        n % 60
    ));
    let scale = 1.0 + f64::from(n) / 100.0;
    for e in &mut doc.experiments {
        for c in &mut e.cases {
            // Every time of the case, samples and their summary alike: a stored document
            // whose median its own samples contradict does not read back.
            for t in [
                &mut c.median_ns,
                &mut c.min_ns,
                &mut c.max_ns,
                &mut c.mean_ns,
                &mut c.p5_ns,
                &mut c.p95_ns,
            ] {
                *t *= scale;
            }
            c.raw_ns.iter_mut().for_each(|t| *t *= scale);
            c.ci95_ns = [c.ci95_ns[0] * scale, c.ci95_ns[1] * scale];
        }
    }
    doc
}

/// [`run`] with `extra` more cases in its first experiment, so that saving it takes a while.
pub fn big_run(tag: &str, n: u32, extra: usize) -> ResultDoc {
    let mut doc = run(tag, n);
    let e = &mut doc.experiments[0];
    let template = e.cases[0].clone();
    for k in 0..extra {
        let mut c = template.clone();
        c.id = format!("{}.extra{k}", template.id);
        e.cases.push(c);
    }
    doc
}
pub mod pgcluster;

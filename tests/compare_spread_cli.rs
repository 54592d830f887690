//! `oscost compare` with a history of earlier runs of the same machine: the intervals include
//! how much each figure moved from run to run, and the comparison says how many runs told it.

mod common;
use common::oscost;

use std::path::{Path, PathBuf};

fn golden() -> serde_json::Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/oscost-2.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The golden run of day `day` with `example.cost250` scaled by `scale`, written to `dir`.
fn run_of_day(dir: &Path, day: u32, scale: f64) -> PathBuf {
    let mut doc = golden();
    doc["run_id"] = format!("00000000-0000-4000-8000-0000000000{day:02}").into();
    doc["started_at"] = format!("2026-11-{day:02}T01:00:00Z").into();
    for e in doc["experiments"].as_array_mut().unwrap() {
        for c in e["cases"].as_array_mut().unwrap() {
            if c["id"] != "example.cost250" {
                continue;
            }
            for x in c["raw_ns"].as_array_mut().unwrap() {
                *x = (x.as_f64().unwrap() * scale).into();
            }
            for t in ["median_ns", "min_ns", "max_ns"] {
                c[t] = (c[t].as_f64().unwrap() * scale).into();
            }
            c["ci95_ns"] = c["ci95_ns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap() * scale)
                .collect::<Vec<_>>()
                .into();
        }
    }
    let path = dir.join(format!("day{day}.json"));
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

fn compare_json(history: &Path, a: &Path, b: &Path) -> serde_json::Value {
    let out = oscost()
        .arg("--history")
        .arg(history)
        .arg("compare")
        .arg(a)
        .arg(b)
        .args(["--json", "-"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

fn row<'a>(v: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    v["comparisons"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap()
}

#[test]
fn a_figure_that_moves_between_runs_is_not_called_slower_for_moving_as_much() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("h.sqlite3");
    let a = run_of_day(dir.path(), 1, 1.0);
    let b = run_of_day(dir.path(), 2, 1.3);
    // No earlier runs: the interval is the two runs' own, and 30 % reads slower.
    let alone = compare_json(&history, &a, &b);
    assert_eq!(row(&alone, "example.cost250")["verdict"], "slower");
    assert!(alone["comparisons"][0].get("spread_runs").is_none());
    // Earlier runs of this machine in which the figure moved by as much.
    let earlier: Vec<PathBuf> = [(3, 0.75), (4, 1.3), (5, 0.8), (6, 1.25)]
        .iter()
        .map(|&(d, s)| run_of_day(dir.path(), d, s))
        .collect();
    oscost()
        .arg("--history")
        .arg(&history)
        .args(["history", "import"])
        .args(&earlier)
        .arg(&a)
        .arg(&b)
        .assert()
        .success();
    let v = compare_json(&history, &a, &b);
    let c = &v["comparisons"][0];
    // A and B themselves are not among the earlier runs.
    assert_eq!(c["spread_runs"], 4, "{c}");
    let r = row(&v, "example.cost250");
    assert_eq!(r["verdict"], "too_few_samples", "{r}");
    let ci = r["ratio_ci95"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() < 1.0, "{r}");
    // A figure that held in every run keeps its verdict.
    assert_eq!(row(&v, "example.cost100")["verdict"], "no_difference");
    let text = oscost()
        .arg("--history")
        .arg(&history)
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("between 4 earlier runs of this machine"),
        "{text}"
    );
}

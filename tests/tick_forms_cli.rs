//! `oscost tick-forms` as a user drives it: bad input refused in one line, and a tiny real run
//! whose output must be self-consistent. No timing assertions: only what was counted.

mod common;
use common::{assert_args_refused, oscost};

use oscost_model::{CaseResult, ResultDoc};

#[test]
fn bad_values_exit_2_with_one_line() {
    for (args, needle) in [
        (&["tick-forms", "--tasks", "0"][..], "--tasks"),
        (&["tick-forms", "--periods", "0"][..], "--periods"),
        (&["tick-forms", "--periods", "0us"][..], "below 1us"),
        (&["tick-forms", "--rounds", "0"][..], "--rounds"),
        (&["tick-forms", "--policies", "deadline"][..], "--policies"),
        (
            &["tick-forms", "--periods", "5ms", "--work", "20ms"][..],
            "fewer than 10",
        ),
    ] {
        assert_args_refused(args, needle);
    }
}

fn counter(c: &CaseResult, key: &str) -> f64 {
    *c.counters
        .get(key)
        .unwrap_or_else(|| panic!("{}: no counter {key}: {:?}", c.id, c.counters))
}

/// One period, every form, the fair policy, two rounds: every id there, events counted at
/// the period and none undisturbed, switches counted, the work summed to W, nothing left.
#[test]
fn a_tiny_run_is_self_consistent() {
    if !common::is_root() {
        return common::skip(
            "needs root: the helper's SCHED_FIFO brings its events into a 10 ms run",
        );
    }
    let cpu = oscost_sys::affinity().unwrap()[0].to_string();
    let out = oscost()
        .args(["--quiet", "--cpus", &cpu, "tick-forms", "--work", "10ms"])
        .args(["--periods", "500us", "--policies", "other", "--rounds", "2"])
        .args(["--json", "-"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let doc: ResultDoc = serde_json::from_slice(&out).expect("a result document");
    let e = &doc.experiments[0];
    assert_eq!(e.name, "tick-forms");
    let units = e.params["work_units"].as_f64().unwrap();
    for form in ["single", "threads", "processes"] {
        for period in ["none", "500us"] {
            let id = format!("tick-forms.{form}.other.{period}");
            let c = e
                .cases
                .iter()
                .find(|c| c.id == id)
                .unwrap_or_else(|| panic!("{id} missing"));
            assert_eq!(c.unit, "run");
            assert!(c.median_ns > 0.0 && c.median_cycles > 0.0, "{id}");
            assert_eq!(counter(c, "work_units"), units, "{id}");
            assert!(counter(c, "cycles") > 0.0, "{id}");
            let done = c.checks.iter().find(|k| k.name == "work_units_done");
            assert!(done.is_some_and(|k| k.passed), "{id}: {:?}", c.checks);
            if period == "none" {
                assert_eq!(counter(c, "events"), 0.0, "{id}");
            } else {
                assert!(counter(c, "events") > 0.0, "{id}");
                assert!(counter(c, "switches") > 0.0, "{id}");
                assert!(c.checks.iter().any(|k| k.name == "events"), "{id}");
                assert!(e.derived.iter().any(|d| d.id == format!("{id}.extra")));
            }
        }
    }
    for kind in ["threads", "processes"] {
        let id = format!("tick-forms.switch.{kind}");
        let c = e.cases.iter().find(|c| c.id == id).expect("switch case");
        assert_eq!(c.unit, "switch");
        assert!(c.median_ns > 0.0);
        assert!(counter(c, "switches_per_handover") > 0.5, "{id}");
    }
    // Only the fair policy was asked for: nothing is listed as not measured.
    assert!(e.unavailable.is_empty(), "{:?}", e.unavailable);
}

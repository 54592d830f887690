//! `oscost lockring` as a user drives it: bad input, and a tiny run whose output must be
//! complete and consistent with itself. No timing assertions: only ids, what the kernel and the
//! ring counted, and the arithmetic of the derived figures.

mod common;
use common::read_doc;
use common::{assert_refused, oscost};

use oscost_model::case::SINGLE_THREAD_CHECK;
use oscost_model::CaseResult;

/// The first online CPU, as `--cpus` takes it.
fn first_cpu() -> String {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| s.split([',', '-']).next()?.trim().parse::<usize>().ok())
        .unwrap_or(0)
        .to_string()
}

#[test]
fn bad_input_exits_2_with_one_line_and_no_result() {
    let cases: [(&[&str], &str); 7] = [
        (
            &["--tasks", "1"],
            "--tasks 1: a lock ring needs at least 2 threads",
        ),
        (&["--tasks", "0..4"], "--tasks"),
        (&["--tasks", "-4"], "`-4` is not a list"),
        (&["--tokens", "0"], "--tokens 0"),
        (&["--tokens", "-1"], "`-1` is not a whole number"),
        (
            &["--tasks", "2,8", "--tokens", "2"],
            "--tokens 2: must be less",
        ),
        (&["--forms", "semaphore"], "--forms"),
    ];
    for (args, needle) in cases {
        assert_refused(
            oscost().args(["--quick", "--quiet", "lockring"]).args(args),
            needle,
        );
    }
}

fn case<'a>(cases: &'a [CaseResult], id: &str) -> &'a CaseResult {
    cases
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no case {id}"))
}

fn check<'a>(c: &'a CaseResult, name: &str) -> &'a oscost_model::case::Check {
    c.checks
        .iter()
        .find(|k| k.name == name)
        .unwrap_or_else(|| panic!("{}: no check {name}", c.id))
}

#[test]
fn a_tiny_run_is_complete_and_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let cpu = first_cpu();
    oscost()
        .args(["--quick", "--quiet", "--samples", "5", "--cpus", &cpu])
        .args(["lockring", "--tasks", "2,3", "--verify-order"])
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    let doc = read_doc(&json);
    let e = &doc.experiments[0];
    assert_eq!(e.name, "lockring");
    let ids: Vec<&str> = e.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "lockring.mutex.own",
            "lockring.mutex.n2.k1",
            "lockring.mutex.n3.k1",
            "lockring.pipe.n2"
        ]
    );

    // The mutex's own cost was taken in a single-threaded process, before any ring.
    let own = case(&e.cases, "lockring.mutex.own");
    let single = check(own, SINGLE_THREAD_CHECK);
    assert!(single.passed && single.counted == 1.0, "{single:?}");
    assert!(own.median_ns > 0.0);

    for n in [2usize, 3] {
        let c = case(&e.cases, &format!("lockring.mutex.n{n}.k1"));
        assert_eq!(c.unit, "switch");
        assert!(c.median_ns > 0.0, "{}", c.id);
        assert_eq!(c.params["tasks"], serde_json::json!(n));
        assert_eq!(c.params["mutexes"], serde_json::json!(n + 1));
        assert_eq!(
            c.params["cpus"],
            serde_json::json!([cpu.parse::<u64>().unwrap()])
        );
        // The ring ran in the ring's order, every thread moving with the measuring one.
        let order = check(c, "acquisition_order_violations");
        assert!(order.passed, "{}: {}", c.id, order.detail);
        assert!(!c.series[0].points.is_empty());
        let per_turn = check(c, "hand_overs_per_turn");
        assert!(per_turn.passed, "{}: {per_turn:?}", c.id);
        assert!(c.counters["switches_per_hand_over"] > 0.0, "{}", c.id);
        check(c, "switches_per_hand_over");

        // switch_cost = per hand-over − own, from the medians.
        let d = e
            .derived
            .iter()
            .find(|d| d.id == format!("{}.switch_cost", c.id))
            .unwrap_or_else(|| panic!("no switch_cost for {}", c.id));
        assert_eq!(
            d.terms,
            vec![(c.id.clone(), 1.0), ("lockring.mutex.own".to_owned(), -1.0)]
        );
        let want = c.median_ns - own.median_ns;
        assert!(
            (d.estimate_ns - want).abs() <= 1e-6 * want.abs().max(1.0),
            "{}: {} != {want}",
            d.id,
            d.estimate_ns
        );
    }

    let pipe = case(&e.cases, "lockring.pipe.n2");
    assert_eq!(pipe.unit, "switch");
    assert!(check(pipe, "token_counted").passed);
    assert!(pipe.counters["switches_per_pass"] > 0.0);
}

//! The studies read from fixed documents: each study figure computed from cases of known
//! values, exactly as the study computed its own, its tables filled and its charts drawn.

use oscost_model::{CaseResult, DerivedResult, ExperimentResult, ResultDoc};
use oscost_report::study::{self, StudyFigure};
use std::path::PathBuf;

fn golden() -> ResultDoc {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/oscost-2.json");
    oscost_model::read(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A case `id` whose every sample is `ns`, with `counters` and `params`.
fn case(
    id: &str,
    ns: f64,
    counters: &[(&str, f64)],
    params: &[(&str, serde_json::Value)],
) -> CaseResult {
    let mut c = golden().experiments[0].cases[0].clone();
    c.id = id.into();
    c.raw_ns = vec![ns; 9];
    c.median_ns = ns;
    c.mean_ns = ns;
    c.ci95_ns = [ns, ns];
    c.median_cycles = ns * 2.0;
    c.checks_passed = true;
    c.counters = counters.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    c.params = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    c
}

fn doc(experiments: Vec<ExperimentResult>) -> ResultDoc {
    let mut d = golden();
    d.experiments = experiments;
    d
}

fn experiment(
    name: &str,
    cases: Vec<CaseResult>,
    params: &[(&str, serde_json::Value)],
) -> ExperimentResult {
    let mut e = golden().experiments[0].clone();
    e.name = name.into();
    e.cases = cases;
    e.derived = Vec::new();
    e.params = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    e
}

fn fig<'a>(figs: &'a [StudyFigure], id: &str) -> &'a StudyFigure {
    figs.iter().find(|f| f.id == id).unwrap_or_else(|| {
        panic!(
            "{id} missing from {:?}",
            figs.iter().map(|f| &f.id).collect::<Vec<_>>()
        )
    })
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn yield_run(with_yield: bool) -> ResultDoc {
    let p = |cpus: u64| vec![("cpu_count", serde_json::json!(cpus))];
    let mut cases = Vec::new();
    for (n, one, two) in [
        (1u64, 100.0, 98.0),
        (2, 101.0, 55.0),
        (4, 110.0, 60.0),
        (8, 150.0, 80.0),
    ] {
        cases.push(case(
            &format!("split.threads.one.{n}.yield"),
            one * 1e6,
            &[],
            &p(1),
        ));
        cases.push(case(
            &format!("split.threads.two.{n}.yield"),
            two * 1e6,
            &[],
            &p(2),
        ));
    }
    doc(vec![experiment(
        "split",
        cases,
        &[("yield", serde_json::json!(with_yield))],
    )])
}

#[test]
fn the_yield_study_s_overheads_and_gains_are_its_own_ratios() {
    let s = study::find("windows-yield").unwrap();
    let figs = s.figures(&yield_run(true));
    // Against the study's baselines: N = 1 on one CPU, N = 2 on two.
    assert!(close(
        fig(&figs, "study.windows-yield.one.n8.overhead").value,
        50.0
    ));
    assert!(close(
        fig(&figs, "study.windows-yield.two.n4.overhead").value,
        (60.0 / 55.0 - 1.0) * 100.0
    ));
    assert!(figs
        .iter()
        .all(|f| f.id != "study.windows-yield.two.n1.overhead"));
    assert!(close(
        fig(&figs, "study.windows-yield.n8.gain").value,
        (150.0 / 80.0 - 1.0) * 100.0
    ));
    // The mean over N = 2 and up, as the study's 85 %.
    let want = [(101.0, 55.0), (110.0, 60.0), (150.0, 80.0)]
        .iter()
        .map(|(a, b)| (a / b - 1.0) * 100.0)
        .sum::<f64>()
        / 3.0;
    assert!(close(
        fig(&figs, "study.windows-yield.mean_gain").value,
        want
    ));
    assert!(close(
        fig(&figs, "study.windows-yield.one.max_overhead").value,
        50.0
    ));
    // Without --yield the cases mean something else: no figure.
    assert!(s.figures(&yield_run(false)).is_empty());
    let tables = s.tables(Some(&yield_run(true)));
    // The time and the overhead on one CPU and on two, and the gain.
    assert_eq!(tables.len(), 5);
    assert!(
        tables[1].rows[3].iter().any(|c| c == "+50 %"),
        "{:?}",
        tables[1].rows[3]
    );
}

#[test]
fn the_qnx_subtraction_is_extra_cycles_over_extra_events() {
    let mut cases = Vec::new();
    for form in ["single", "threads", "processes"] {
        cases.push(case(
            &format!("tick-forms.{form}.other.none"),
            1e9,
            &[("events", 0.0), ("cycles", 2.0e9), ("switches", 10.0)],
            &[],
        ));
        cases.push(case(
            &format!("tick-forms.{form}.other.1ms"),
            1.01e9,
            &[("events", 1000.0), ("cycles", 2.02e9), ("switches", 2010.0)],
            &[],
        ));
        cases.push(case(
            &format!("tick-forms.{form}.other.20us"),
            1.25e9,
            &[
                ("events", 50_000.0),
                ("cycles", 2.5e9),
                ("switches", 100_010.0),
            ],
            &[],
        ));
    }
    cases.push(case("tick-forms.switch.threads", 500.0, &[], &[]));
    cases.push(case("tick-forms.switch.processes", 700.0, &[], &[]));
    let d = doc(vec![experiment("tick-forms", cases, &[])]);
    let s = study::find("qnx-tick").unwrap();
    let figs = s.figures(&d);
    // (2.5e9 − 2e9) / 50 000 at the shortest period.
    assert!(close(
        fig(&figs, "study.qnx-tick.cycles_per_event").value,
        10_000.0
    ));
    assert!(close(
        fig(&figs, "study.qnx-tick.single.other.1ms.cycles_per_event").value,
        20_000.0
    ));
    assert!(close(
        fig(
            &figs,
            "study.qnx-tick.threads.other.20us.switches_per_event"
        )
        .value,
        2.0
    ));
    // A switch is 1000 counter cycles (the fixture's cycles are twice its ns), two per event.
    assert!(close(
        fig(&figs, "study.qnx-tick.switch_per_event.threads").value,
        2000.0
    ));
    assert!(close(
        fig(&figs, "study.qnx-tick.switch_share.threads").value,
        20.0
    ));
    assert!(close(
        fig(&figs, "study.qnx-tick.single.other.20us.useful_share").value,
        80.0
    ));
    assert!(close(
        fig(&figs, "study.qnx-tick.form_spread.other.20us").value,
        0.0
    ));
    let t = s.tables(Some(&d));
    assert!(t.iter().any(|v| v.title.contains("this machine")));
}

/// Fewer cycles with the events than without (a quick run's noise) is no finding: the
/// tables say `none seen` and why, never a negative cost.
#[test]
fn no_extra_cycles_read_as_none_seen_not_a_negative_cost() {
    let mut cases = Vec::new();
    for form in ["single", "threads", "processes"] {
        cases.push(case(
            &format!("tick-forms.{form}.other.none"),
            1e9,
            &[("events", 0.0), ("cycles", 2.0e9), ("switches", 10.0)],
            &[],
        ));
        cases.push(case(
            &format!("tick-forms.{form}.other.1ms"),
            0.99e9,
            &[("events", 1000.0), ("cycles", 1.98e9), ("switches", 1010.0)],
            &[],
        ));
    }
    let d = doc(vec![experiment("tick-forms", cases, &[])]);
    let s = study::find("qnx-tick").unwrap();
    let tables = s.tables(Some(&d));
    let text: Vec<&String> = tables
        .iter()
        .flat_map(|v| v.rows.iter().flatten().chain(&v.notes))
        .collect();
    assert!(text.iter().any(|c| *c == "none seen"), "{text:?}");
    assert!(
        text.iter()
            .any(|c| c.starts_with("none seen: the run with the timer events")),
        "{text:?}"
    );
    assert!(!text.iter().any(|c| c.starts_with("-20")), "{text:?}");
}

#[test]
fn the_time_slice_ratios_and_the_minix_overall_are_the_studies_own() {
    let mut cases = Vec::new();
    for (n, thr, own) in [(1u64, 10.0, 100.0), (2, 11.0, 160.0), (4, 10.5, 290.0)] {
        let total = n as f64 / thr * 1e9;
        cases.push(case(
            &format!("timeline.processes.n{n}"),
            total / n as f64,
            &[("throughput_workers_per_s", thr), ("total_ns", total)],
            &[],
        ));
        cases.push(case(
            &format!("timeline.processes.n{n}.own_latency"),
            own * 1e6,
            &[],
            &[],
        ));
    }
    let d = doc(vec![experiment("timeline", cases, &[])]);
    let figs = study::find("linux-timeslice").unwrap().figures(&d);
    assert!(close(
        fig(&figs, "study.linux-timeslice.n4.latency_vs_n1").value,
        2.9
    ));
    assert!(close(
        fig(&figs, "study.linux-timeslice.n2.throughput_vs_n1").value,
        1.1
    ));
    assert!(close(
        fig(&figs, "study.linux-timeslice.n2.latency_over_total").value,
        160e6 / (2.0 / 11.0 * 1e9)
    ));

    let mut cases = Vec::new();
    for (call, k, u) in [
        ("getpid", 100.0, 100.0),
        ("lseek", 200.0, 220.0),
        ("open-close", 1000.0, 1500.0),
        ("read64k", 4000.0, 6000.0),
        ("write64k", 5000.0, 5500.0),
    ] {
        cases.push(case(&format!("fs.tmpfs.{call}"), k, &[], &[]));
        cases.push(case(&format!("fs.fuse.{call}"), u, &[], &[]));
    }
    let mut e = experiment("fs", cases, &[("rate_per_s", serde_json::json!(10_000.0))]);
    e.derived.push(DerivedResult {
        id: "fs.diff.getpid".into(),
        description: "fuse − tmpfs".into(),
        terms: vec![],
        estimate_ns: 180.0,
        ci95_ns: [170.0, 190.0],
        estimate_cycles: 360.0,
        flagged: None,
        warnings: Vec::new(),
    });
    let d = doc(vec![e]);
    let figs = study::find("minix3").unwrap().figures(&d);
    assert!(close(fig(&figs, "study.minix3.lseek.slowdown").value, 10.0));
    assert!(close(
        fig(&figs, "study.minix3.overall.slowdown").value,
        (0.0 + 10.0 + 50.0 + 50.0 + 10.0) / 5.0
    ));
    // 180 ns at 10 000 calls a second: 1.8 ms per second.
    assert!(close(
        fig(&figs, "study.minix3.getpid.extra_at_rate").value,
        1.8
    ));
}

#[test]
fn bradford_s_ring_is_the_median_over_ring_sizes_less_the_lock() {
    let cases = vec![
        case("lockring.mutex.n2.k1", 2000.0, &[], &[]),
        case("lockring.mutex.n8.k1", 3000.0, &[], &[]),
        case("lockring.mutex.n32.k1", 5000.0, &[], &[]),
        case("lockring.mutex.own", 20.0, &[], &[]),
        case("lockring.pipe.n2", 4500.0, &[], &[]),
    ];
    let d = doc(vec![experiment("lockring", cases, &[])]);
    let s = study::find("bradford").unwrap();
    let figs = s.figures(&d);
    assert!(close(
        fig(&figs, "study.bradford.ring.time_per_switch").value,
        3000.0
    ));
    assert!(close(
        fig(&figs, "study.bradford.ring.switch_cost").value,
        2980.0
    ));
    assert!(close(
        fig(&figs, "study.bradford.pipe_over_lock").value,
        1.5
    ));
    // Every study's charts are well-formed SVG, with a run and without one.
    for st in study::STUDIES {
        for p in st.plots(Some(&d)).into_iter().chain(st.plots(None)) {
            roxmltree::Document::parse(&p.svg).unwrap_or_else(|e| panic!("{}: {e}", p.name));
        }
    }
    assert!(study::applying_to(&d)
        .iter()
        .any(|s| s.info.name == "bradford"));
}

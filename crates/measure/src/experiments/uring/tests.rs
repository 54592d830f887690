//! `uring`'s tests: tiny runs and the plan's parsing.

use super::*;
use crate::context::testing;
use oscost_model::case::SINGLE_THREAD_CHECK;

fn level(around: f64) -> oscost_stats::Summary {
    let v: Vec<f64> = (0..21)
        .map(|i| around + 2.0 * f64::from(i % 7 - 3))
        .collect();
    oscost_stats::summarize(&v).unwrap()
}

/// Rings whose intervals meet the case's: the medians and their spread, no warning. One
/// apart: the warning, with the range a rerun may land in.
#[test]
fn ring_levels_warn_only_where_a_fresh_ring_reads_apart() {
    let blank = || Case::new(SQPOLL_ID, "d", "operation", Samples::default());
    let mut c = blank();
    ring_levels(&mut c, &level(300.0), &[level(300.0), level(300.5)]);
    assert_eq!(
        c.params["ring_medians_ns"],
        serde_json::json!([300.0, 300.0, 300.5])
    );
    assert!((c.counters["ring_level_spread_pct"] - 0.5 / 3.0).abs() < 1e-9);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let mut c = blank();
    ring_levels(&mut c, &level(300.0), &[level(330.0), level(301.0)]);
    assert!((c.counters["ring_level_spread_pct"] - 10.0).abs() < 1e-9);
    assert_eq!(c.warnings.len(), 1);
    let w = &c.warnings[0];
    assert_eq!(w.kind(), MessageKind::LevelMovesBetweenRings);
    assert!(
        w.as_str().contains("1 of 2 fresh SQPOLL rings")
            && w.as_str().contains("from 300.0 to 330.0 ns (+10.0 %)"),
        "{w:?}"
    );
}

fn opts(extra: &[&str]) -> Options {
    engine::defaults(extra)
}

#[test]
fn plans_name_every_case_and_refuse_bad_batches() {
    let p = plan(&opts(&[])).unwrap();
    let ids: Vec<String> = p.kinds.iter().map(|&k| case_id(k)).collect();
    assert_eq!(
        ids,
        [
            "uring.nop.b1",
            "uring.nop.b8",
            "uring.nop.b32",
            "uring.read1.b1",
            "uring.read1.b32",
            "uring.read1.fixed.b1",
            "uring.read1.fixed.b32",
            "uring.syscall-read1",
            "uring.read64k.b1",
            "uring.read64k.b32",
            "uring.read64k.fixed.b1",
            "uring.read64k.fixed.b32",
            "uring.syscall-pread64k"
        ]
    );
    assert!(p.sqpoll);
    let suite = plan(&opts(<Options as engine::Experiment>::SUITE_ARGS)).unwrap();
    let quick = plan(&opts(<Options as engine::Experiment>::QUICK_SUITE_ARGS)).unwrap();
    for k in suite.kinds.iter().chain(&quick.kinds) {
        assert!(!matches!(k, Kind::Fixed(..)), "{} in a suite", case_id(*k));
    }
    assert!(!plan(&opts(&["--ops", "read1"])).unwrap().sqpoll);
    for bad in ["0", "65"] {
        let e = plan(&opts(&["--batches", bad])).unwrap_err().to_string();
        assert!(e.contains(&format!("--batches {bad}")), "{e}");
    }
}

#[test]
fn per_batch_samples_become_per_operation() {
    let s = Samples {
        per_op_ns: vec![320.0],
        per_op_ticks: vec![640.0],
        iterations_per_sample: 10,
        loop_overhead_ns: 3.2,
    };
    let p = per_op(s, 32);
    assert_eq!(p.per_op_ns, [10.0]);
    assert_eq!(p.per_op_ticks, [20.0]);
    assert_eq!(p.iterations_per_sample, 320);
    assert!((p.loop_overhead_ns - 0.1).abs() < 1e-12);
}

/// The SQPOLL case at a tiny size: its ring's median and two fresh rings', their spread,
/// the poller's CPU share; or one line saying why not.
#[test]
fn a_tiny_sqpoll_run_reads_three_rings_or_says_why_not() {
    testing::with_tiny_ctx(|ctx| {
        let out = run(
            &opts(&["--ops", "nop", "--batches", "1", "--no-fixed"]),
            ctx,
        )
        .unwrap();
        if let Some(u) = out.unavailable.iter().find(|u| u.id.starts_with(NAME)) {
            assert!(!u.reason.contains('\n') && !u.reason.is_empty(), "{u:?}");
            return;
        }
        let c = out.cases.iter().find(|c| c.id == SQPOLL_ID).unwrap();
        let medians = c.params["ring_medians_ns"].as_array().unwrap();
        assert_eq!(medians.len(), 1 + SQPOLL_MORE_RINGS);
        assert!(
            medians.iter().all(|m| m.as_f64().unwrap() > 0.0),
            "{medians:?}"
        );
        assert_eq!(
            medians[0].as_f64().unwrap(),
            oscost_stats::median(&c.samples.per_op_ns)
        );
        // The spread is the slowest ring's median over the fastest's, less one.
        let m: Vec<f64> = medians.iter().map(|m| m.as_f64().unwrap()).collect();
        let (lo, hi) = (
            m.iter().copied().fold(f64::INFINITY, f64::min),
            m.iter().copied().fold(0.0, f64::max),
        );
        let spread = c.counters["ring_level_spread_pct"];
        assert!(
            (spread - (hi / lo - 1.0) * 100.0).abs() < 1e-9 * spread.max(1.0),
            "{spread} {m:?}"
        );
        assert!(c.counters["poller_cpu_share"] > 0.0);
    });
}

#[test]
fn a_tiny_run_gives_positive_figures_or_says_why_not() {
    testing::with_tiny_ctx(|ctx| {
        let out = run(
            &opts(&[
                "--ops",
                "nop,read1,read64k",
                "--batches",
                "1,4",
                "--no-sqpoll",
            ]),
            ctx,
        )
        .unwrap();
        if !out.unavailable.is_empty() {
            assert!(out.cases.is_empty());
            return;
        }
        let ids: Vec<&str> = out.cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "uring.nop.b1",
                "uring.nop.b4",
                "uring.read1.b1",
                "uring.read1.b4",
                "uring.read1.fixed.b1",
                "uring.read1.fixed.b4",
                "uring.syscall-read1",
                "uring.read64k.b1",
                "uring.read64k.b4",
                "uring.read64k.fixed.b1",
                "uring.read64k.fixed.b4",
                "uring.syscall-pread64k"
            ]
        );
        for c in out.cases.iter().filter(|c| c.id.contains(".fixed.")) {
            let r = c.counters["ratio_to_unregistered"];
            let (lo, hi) = (
                c.counters["ratio_to_unregistered_ci_lo"],
                c.counters["ratio_to_unregistered_ci_hi"],
            );
            assert!(r > 0.0 && lo <= r && r <= hi, "{}: {r} [{lo}, {hi}]", c.id);
            assert!(
                c.notes
                    .iter()
                    .any(|n| n.to_string().contains("registering")),
                "{}",
                c.id
            );
        }
        for c in &out.cases {
            assert!(
                c.samples.per_op_ns.len() >= sampler::MIN_SAMPLES,
                "{}",
                c.id
            );
            // The harness's threads share the process, so the thread count may not be
            // one; and the test harness's other threads make calls of their own, which
            // a per-thread count never sees.
            for k in c.checks.iter().filter(|k| k.name != SINGLE_THREAD_CHECK) {
                assert!(k.passed, "{}: {k:?}", c.id);
            }
        }
        // minus_syscall for the four plain reads, minus_unregistered for the four fixed.
        assert_eq!(out.derived.len(), 8);
    });
}

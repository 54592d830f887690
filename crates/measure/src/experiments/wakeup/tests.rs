//! The wake-up experiment at tiny sizes: plans, refusals and self-consistent cases.

use super::*;
use crate::context::testing;
use crate::sampler::SamplerConfig;

fn opts(extra: &[&str]) -> Options {
    engine::defaults(extra)
}

#[test]
fn a_refusal_names_the_policy_and_the_kernel_s_answer_once() {
    assert_eq!(
        refused_reason(
            90,
            "sched_setscheduler(SCHED_FIFO, 90): Operation not permitted (os error 1)"
        ),
        "SCHED_FIFO 90 refused (Operation not permitted): run as root or with CAP_SYS_NICE"
    );
    // Another text is kept whole.
    assert_eq!(
        refused_reason(1, "the thread asking for SCHED_FIFO panicked"),
        "SCHED_FIFO 1 refused (the thread asking for SCHED_FIFO panicked): run as root or \
         with CAP_SYS_NICE"
    );
}

#[test]
fn ids_name_what_is_not_the_default() {
    let p = plan(&opts(&[]), &[3, 5], false).unwrap();
    let ids: Vec<String> = p.points.iter().map(|&x| case_id(x, p.period_ns)).collect();
    assert_eq!(ids, ["wakeup.other.1ms", "wakeup.fifo.1ms"]);
    assert_eq!(p.points[0].cpu, 3);
    assert_eq!(p.wakeups, DEFAULT_WAKEUPS);
    let p = plan(
        &opts(&[
            "--period",
            "500us",
            "--policies",
            "fifo",
            "--modes",
            "timerfd,relative",
            "--load",
            "--each-cpu",
        ]),
        &[0, 1],
        true,
    )
    .unwrap();
    let ids: Vec<String> = p.points.iter().map(|&x| case_id(x, p.period_ns)).collect();
    assert_eq!(ids.len(), 8);
    assert_eq!(ids[0], "wakeup.fifo.500us.timerfd.cpu0");
    assert_eq!(ids[3], "wakeup.fifo.500us.relative.cpu0.load");
    assert_eq!(ids[7], "wakeup.fifo.500us.relative.cpu1.load");
    assert_eq!(p.wakeups, QUICK_WAKEUPS);
    assert_eq!(period_name(1_500_000), "1500us");
    assert_eq!(period_name(12_345), "12345ns");
    // The mode a case id leaves out is the command line's default.
    assert_eq!(value_name(&Mode::Abstime), ids::DEFAULT_MODE);
}

#[test]
fn bad_input_is_refused_by_the_parsers() {
    assert!(parse_period("5us").is_err());
    assert!(parse_period("2s").is_err());
    assert!(parse_period("1000").is_err());
    assert_eq!(parse_period("250us"), Ok(250_000));
    assert!(parse_wakeups("0").is_err());
    assert!(parse_wakeups("x").is_err());
    assert!(plan(&opts(&[]), &[], false).is_err());
}

/// A short run on the first CPU: ordered percentiles, a histogram that counts every
/// wake-up, passing checks, and SCHED_FIFO measured or refused in one line.
#[test]
fn a_short_run_gives_ordered_self_consistent_figures() {
    let cpu = oscost_sys::affinity().unwrap()[0];
    testing::with_ctx(SamplerConfig::quick(), vec![cpu], false, |ctx| {
        let out = run(
            &opts(&[
                "--wakeups",
                "40",
                "--period",
                "200us",
                "--load",
                "--no-kernel-view",
            ]),
            ctx,
        )
        .unwrap();
        assert_eq!(out.params["kernel_view"], "off (--no-kernel-view)");
        assert_eq!(out.cases.len() + out.unavailable.len(), 4, "{out:?}");
        for u in &out.unavailable {
            assert!(u.id.starts_with("wakeup.fifo."), "{u:?}");
            assert!(!u.reason.contains('\n') && u.reason.contains("SCHED_FIFO"));
        }
        assert!(out.cases.iter().any(|c| c.id == "wakeup.other.200us"));
        for c in &out.cases {
            assert_eq!(c.counters["wakeups"], 40.0, "{}", c.id);
            assert_eq!(c.samples.per_op_ns.len(), 40);
            let v: Vec<f64> = PERCENTILES.iter().map(|(k, _)| c.counters[*k]).collect();
            assert!(v.windows(2).all(|w| w[0] <= w[1]), "{}: {v:?}", c.id);
            // 40 wake-ups bound the median, never the p99.
            let (lo, hi) = (
                c.counters["lateness_p50_ci95_lo_ns"],
                c.counters["lateness_p50_ci95_hi_ns"],
            );
            assert!(lo <= c.counters["lateness_p50_ns"] && c.counters["lateness_p50_ns"] <= hi);
            assert!(!c.counters.contains_key("lateness_p99_ci95_lo_ns"));
            let h: f64 = c.series[0].points.iter().map(|p| p[2]).sum();
            assert_eq!(h, 40.0, "{}: the histogram counts every wake-up", c.id);
            for k in &c.checks {
                // Whether the spinner got half the CPU is the machine's business.
                if k.name != "load_cpu_share" {
                    assert!(k.passed, "{}: {k:?}", c.id);
                }
            }
            assert_eq!(
                c.id.ends_with(".load"),
                c.counters.contains_key("load_cpu_share")
            );
        }
    });
}

/// The traced pass gives each timed case a split case whose parts were found for its
/// wake-ups, or one line says why the kernel's view is not to be had; the timed cases
/// are there either way.
#[test]
fn the_traced_pass_splits_or_says_why_not_in_one_line() {
    let cpu = oscost_sys::affinity().unwrap()[0];
    testing::with_ctx(SamplerConfig::quick(), vec![cpu], false, |ctx| {
        let out = run(
            &opts(&[
                "--wakeups",
                "30",
                "--period",
                "200us",
                "--policies",
                "other",
            ]),
            ctx,
        )
        .unwrap();
        assert_eq!(out.cases[0].id, "wakeup.other.200us");
        match out.cases.get(1) {
            Some(k) => {
                assert_eq!(k.id, "wakeup.other.200us.kernel");
                assert_eq!(k.counters["wakeups"], 30.0);
                assert!(k.counters["wakeups_split"] > 0.0, "{:?}", k.warnings);
                assert!(k.checks.iter().any(|c| c.name == "parts_vs_measured"));
                assert!(k.trace.is_some());
                for (key, _) in kernel::PARTS {
                    assert!(k.counters[&format!("part.{key}.median_ns")] >= 0.0);
                }
                let worst = k.params["worst"].as_array().unwrap();
                assert!(!worst.is_empty() && worst.len() <= kernel::WORST);
                assert!(worst[0]["between"].as_str().is_some());
            }
            None => {
                assert_eq!(out.unavailable.len(), 1, "{out:?}");
                let why = &out.unavailable[0].reason;
                assert!(!why.contains('\n'), "{why}");
                assert_eq!(out.params["kernel_view"], why.as_str());
            }
        }
    });
}

#[test]
fn cancel_stops_the_run() {
    let cpu = oscost_sys::affinity().unwrap()[0];
    testing::with_ctx(SamplerConfig::quick(), vec![cpu], true, |ctx| {
        let e = run(&opts(&["--period", "1s", "--wakeups", "3600"]), ctx).unwrap_err();
        assert!(e.downcast_ref::<Cancelled>().is_some(), "{e}");
    });
}

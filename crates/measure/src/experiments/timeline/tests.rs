use super::*;
use crate::context::testing;
use oscost_model::case::Case;
use oscost_model::case::SINGLE_THREAD_CHECK;

fn opts(args: &[&str]) -> Options {
    use clap::{Args, FromArgMatches};
    let cmd = Options::augment_args(clap::Command::new("timeline").no_binary_name(true));
    Options::from_arg_matches(&cmd.try_get_matches_from(args).unwrap()).unwrap()
}

fn with_ctx<T>(f: impl FnOnce(&Context) -> T) -> T {
    let cpu = oscost_sys::affinity().unwrap()[0];
    testing::with_ctx(testing::tiny_sampler(), vec![cpu], false, f)
}

#[test]
fn bad_options_are_refused_before_anything_starts() {
    with_ctx(|ctx| {
        let e = |args: &[&str]| run(&opts(args), ctx).unwrap_err().to_string();
        assert_eq!(
            e(&["--workers", "2", "--worker-nice", "0,5,7"]),
            "--worker-nice gives 3 values for 2 workers: give one per worker (e.g. \
                 --workers 2 --worker-nice 0,5)"
        );
        assert!(e(&["--worker-nice", "0,5", "--workers", "1,2"])
            .starts_with("--worker-nice needs a single --workers value"));
        assert!(e(&["--rr-slice-ms", "10"]).starts_with("--rr-slice-ms sets"));
    });
    use clap::{Args, FromArgMatches as _};
    let cmd = Options::augment_args(clap::Command::new("timeline").no_binary_name(true));
    for bad in [
        &["--workers", "0"][..],
        &["--chunks", "0"],
        &["--worker-nice", "0,20"],
        &["--worker-nice", "-21"],
    ] {
        let err = cmd.clone().try_get_matches_from(bad);
        assert!(err.is_err(), "{bad:?} accepted");
    }
    let o = opts(&["--worker-nice", "-5,0"]);
    assert_eq!(o.worker_nice, vec![-5, 0]);
    let _ = Options::from_arg_matches(&cmd.try_get_matches_from(["--rounds", "2"]).unwrap());
}

#[test]
fn a_tiny_run_gives_a_whole_trace_and_self_consistent_figures() {
    with_ctx(|ctx| {
        for kind in ["processes", "threads"] {
            let o = opts(&[
                "--workers",
                "1,3",
                "--chunks",
                "12",
                "--chunk-us",
                "200",
                "--rounds",
                "2",
                "--kind",
                kind,
            ]);
            let out = run(&o, ctx).unwrap();
            let ids: Vec<&str> = out
                .cases
                .iter()
                .map(|c| c.id.as_str())
                .filter(|id| !id.ends_with(".kernel"))
                .collect();
            let n3 = format!("timeline.{kind}.n3");
            traced_round_is_consistent(&out, kind);
            assert_eq!(
                ids,
                vec![
                    format!("timeline.{kind}.n1"),
                    format!("timeline.{kind}.n1.latency"),
                    format!("timeline.{kind}.n1.own_latency"),
                    n3.clone(),
                    format!("{n3}.latency"),
                    format!("{n3}.own_latency")
                ]
            );
            let c = out.cases.iter().find(|c| c.id == n3).unwrap();
            assert_eq!(c.samples.per_op_ns.len(), 2);
            let s = &c.series[0];
            assert_eq!(s.columns, ["elapsed_ns", "worker", "chunk"]);
            assert_eq!(s.points.len(), 3 * 12);
            for w in 1..=3 {
                let row: Vec<&Vec<f64>> = s.points.iter().filter(|p| p[1] == w as f64).collect();
                assert_eq!(row.len(), 12);
                assert!(row
                    .windows(2)
                    .all(|p| p[0][0] <= p[1][0] && p[0][2] < p[1][2]));
            }
            let shares: f64 = (1..=3)
                .map(|w| c.counters[&format!("share_worker{w}_pct")])
                .sum();
            // Medians of shares need not add up exactly; each round's do.
            assert!((shares - 100.0).abs() < 20.0, "{shares}");
            let tp = c.counters["throughput_workers_per_s"];
            let total = c.counters["total_ns"];
            assert!((tp - 3.0 / total * 1e9).abs() / tp < 0.5, "{tp} {total}");
            assert!(c.counters["latency_avg_ns"] <= total * 1.0001);
            assert!(c
                .checks
                .iter()
                .any(|k| k.name == "workers_as_requested" && k.passed));
            assert!(c
                .checks
                .iter()
                .any(|k| k.name == "involuntary_switches_vs_turns" && k.passed));
            assert!(!c.checks.iter().any(|k| k.name == SINGLE_THREAD_CHECK));
            let lat = out
                .cases
                .iter()
                .find(|c| c.id == format!("{n3}.latency"))
                .unwrap();
            assert_eq!(lat.samples.per_op_ns.len(), 6);
            // The study's latency starts at each worker's own start, never before the
            // common one: per worker it is at most the latency from the common start.
            let own = out
                .cases
                .iter()
                .find(|c| c.id == format!("{n3}.own_latency"))
                .unwrap();
            assert_eq!(own.unit, "worker");
            assert_eq!(own.samples.per_op_ns.len(), 6);
            assert!(own.samples.per_op_ns.iter().all(|&v| v > 0.0));
            for w in 1..=3 {
                let mine = own.counters[&format!("own_latency_worker{w}_ns")];
                let common = c.counters[&format!("latency_worker{w}_ns")];
                assert!(
                    mine > 0.0 && mine <= common,
                    "worker {w}: {mine} > {common}"
                );
            }
            assert!(own.counters["own_latency_avg_ns"] <= c.counters["latency_avg_ns"]);
        }
    });
}

/// The traced round gives a `.kernel` case per worker count whose figures agree with the
/// workers' own, or one line saying why there is none.
fn traced_round_is_consistent(out: &ExperimentOutput, kind: &str) {
    let kernel: Vec<&Case> = out
        .cases
        .iter()
        .filter(|c| c.id.ends_with(".kernel"))
        .collect();
    if out.params["kernel_view"] != "traced" {
        assert!(kernel.is_empty());
        assert_eq!(out.unavailable.len(), 1, "{out:?}");
        assert!(!out.unavailable[0].reason.contains('\n'));
        return;
    }
    assert_eq!(
        kernel.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        [
            format!("timeline.{kind}.n1.kernel"),
            format!("timeline.{kind}.n3.kernel")
        ]
    );
    for c in kernel {
        let n = c.params["workers"].as_u64().unwrap() as usize;
        assert_eq!(c.samples.per_op_ns.len(), n);
        // The kernel's run time and the worker's CPU clock are two counts of one thing, but
        // a host that holds the vCPU adds to the first alone: the run lies between the CPU
        // clock and the worker's wall time, and one far from its CPU clock fails the check.
        let check = c
            .checks
            .iter()
            .find(|k| k.name == "kernel_run_vs_cpu_clock")
            .unwrap();
        for w in 1..=n {
            let run = c.counters[&format!("run_worker{w}_ns")];
            let cpu = c.counters[&format!("cpu_worker{w}_ns")];
            let wall = c.counters[&format!("wall_worker{w}_ns")];
            assert!(
                run > 0.5 * cpu && run <= wall + 1.0,
                "{run} {cpu} {wall} {c:?}"
            );
            if (run / cpu - 1.0).abs() > 0.05 {
                assert!(!check.passed, "{run} {cpu} {c:?}");
            }
        }
        // A record lost now and then (the kernel's ring) is said on the case, never hidden.
        if c.counters["trace_records_lost"] > 0.0 {
            assert!(
                c.warnings
                    .iter()
                    .any(|w| w.contains("trace records were lost")),
                "{c:?}"
            );
        }
        let runs = c.series.iter().find(|s| s.name == "kernel_runs").unwrap();
        assert!(runs.points.iter().any(|p| p[2] >= 1.0));
        assert!(runs.points.iter().all(|p| p[0] <= p[1]));
        let trace = c.series.iter().find(|s| s.name == "trace").unwrap();
        assert_eq!(trace.points.len(), n * 12);
        // Whether a worker was woken while traced depends on how the scheduler ran it (one
        // that never blocked after the trace began has no wake-up): the figures agree with
        // the count either way.
        let latency = c.counters.get("wake_latency_median_ns");
        if c.counters["wakeups"] > 0.0 {
            assert!(latency.is_some_and(|l| *l >= 0.0), "{c:?}");
        } else {
            assert!(latency.is_none(), "{c:?}");
        }
    }
}

#[test]
fn no_kernel_view_means_no_traced_round() {
    with_ctx(|ctx| {
        let o = opts(&[
            "--workers",
            "2",
            "--chunks",
            "3",
            "--chunk-us",
            "100",
            "--rounds",
            "1",
            "--no-kernel-view",
        ]);
        let out = run(&o, ctx).unwrap();
        assert!(out.cases.iter().all(|c| !c.id.ends_with(".kernel")));
        assert!(out.unavailable.is_empty());
        assert_eq!(out.params["kernel_view"], "off (--no-kernel-view)");
    });
}

#[test]
fn a_chunk_in_iterations_is_run_as_given() {
    with_ctx(|ctx| {
        let o = opts(&[
            "--workers",
            "1",
            "--chunks",
            "4",
            "--chunk-iterations",
            "20000",
            "--rounds",
            "1",
        ]);
        let out = run(&o, ctx).unwrap();
        assert_eq!(out.params["chunk_iterations"], json!(20000));
        let c = &out.cases[0];
        assert_eq!(c.params["chunk_iterations"], json!(20000));
        assert!(!c.params.contains_key("chunk_us"));
        assert!(
            c.description.contains("20000 iterations"),
            "{}",
            c.description
        );
    });
    // Alone, the option gives the study's chunk.
    assert_eq!(
        opts(&["--chunk-iterations"]).chunk_iterations,
        Some(100_000)
    );
    assert_eq!(opts(&[]).chunk_iterations, None);
    use clap::Args;
    let cmd = Options::augment_args(clap::Command::new("timeline").no_binary_name(true));
    for bad in [
        &["--chunk-iterations", "0"][..],
        &["--chunk-iterations", "100", "--chunk-us", "200"],
    ] {
        assert!(cmd.clone().try_get_matches_from(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn nice_values_show_in_the_id_and_in_the_kernel() {
    with_ctx(|ctx| {
        let inherited = oscost_sys::nice().unwrap();
        let a = (inherited + 1).min(19);
        let b = (inherited + 4).min(19);
        let o = opts(&[
            "--worker-nice",
            &format!("{a},{b}"),
            "--chunks",
            "5",
            "--chunk-us",
            "100",
            "--rounds",
            "1",
        ]);
        let out = run(&o, ctx).unwrap();
        let c = &out.cases[0];
        assert_eq!(c.id, format!("timeline.processes.n2.nice{a}_{b}"));
        assert_eq!(c.params["nice"], json!([a, b]));
        let k = c
            .checks
            .iter()
            .find(|k| k.name == "workers_as_requested")
            .unwrap();
        assert!(k.passed, "{k:?}");
        assert!(c.counters.contains_key("share_predicted_worker2_pct"));
    });
}

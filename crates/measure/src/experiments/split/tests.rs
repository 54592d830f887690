use super::runs::{cpu_ticks, overlap_of};
use super::seen::withheld;
use super::*;
use crate::context::testing::{tiny_sampler, with_ctx};
use crate::cpuset::online;

fn opts(args: &[&str]) -> Options {
    use clap::{Args, FromArgMatches};
    let cmd = Options::augment_args(clap::Command::new("t").no_binary_name(true));
    Options::from_arg_matches(&cmd.try_get_matches_from(args).unwrap()).unwrap()
}

#[test]
fn times_parse_and_bad_ones_are_refused() {
    use crate::engine::parse_duration as parse_time;
    assert_eq!(parse_time("1s"), Ok(1_000_000_000));
    assert_eq!(parse_time("250ms"), Ok(250_000_000));
    assert_eq!(parse_time("20us"), Ok(20_000));
    assert_eq!(parse_time("1.5s"), Ok(1_500_000_000));
    assert_eq!(parse_time("7ns"), Ok(7));
    for bad in ["", "0", "0s", "1", "x", "1h", "-1s", "0.1ns"] {
        assert!(parse_time(bad).is_err(), "{bad}");
    }
}

#[test]
fn points_start_with_the_baseline_and_skip_what_cannot_differ() {
    let o = opts(&["--tasks", "1,2,4"]);
    let p = points(&o, &[1, 2, 4], 2);
    assert_eq!(
        p[0],
        Point {
            form: Form::Single,
            set: CpuSet::One,
            tasks: 1
        }
    );
    assert!(!p
        .iter()
        .any(|p| p.form == Form::Single && p.set != CpuSet::One));
    assert!(!p.iter().any(|p| p.set == CpuSet::Balanced && p.tasks < 2));
    // single 3 + threads/processes: one 3 + all 3 + balanced 2 each
    assert_eq!(p.len(), 3 + 2 * (3 + 3 + 2));
    let ids: std::collections::BTreeSet<String> = p.iter().map(|p| p.id(false)).collect();
    assert_eq!(ids.len(), p.len());
    // One CPU: only the `one` set.
    assert!(points(&o, &[1, 2, 4], 1)
        .iter()
        .all(|p| p.set == CpuSet::One));
}

#[test]
fn the_two_set_runs_with_two_cpus_and_is_unrunnable_with_one() {
    let o = opts(&["--form", "threads", "--sets", "one,two", "--tasks", "1,2"]);
    let p = points(&o, &[1, 2], 4);
    let ids: Vec<String> = p.iter().map(|p| p.id(true)).collect();
    assert_eq!(
        ids,
        [
            "split.single.one.1.yield",
            "split.threads.one.1.yield",
            "split.threads.one.2.yield",
            "split.threads.two.1.yield",
            "split.threads.two.2.yield"
        ]
    );
    assert!(unrunnable(&o, &[1, 2], 4).is_empty());
    assert!(points(&o, &[1, 2], 1).iter().all(|p| p.set == CpuSet::One));
    let u: Vec<String> = unrunnable(&o, &[1, 2], 1)
        .iter()
        .map(|p| p.id(false))
        .collect();
    assert_eq!(u, ["split.threads.two.1", "split.threads.two.2"]);
    // Without `two` nothing is named unavailable.
    assert!(unrunnable(&opts(&["--sets", "one,all"]), &[1, 2], 1).is_empty());
}

#[test]
fn every_form_does_exactly_the_work() {
    let cpus = online();
    let o = opts(&[
        "--work",
        "2ms",
        "--step",
        "100us",
        "--tasks",
        "1,3",
        "--repeats",
        "2",
        "--yield",
    ]);
    let out = with_ctx(tiny_sampler(), cpus.clone(), false, |ctx| run(&o, ctx)).unwrap();
    let units = out.params["work_units"].as_u64().unwrap();
    assert!(units > 0);
    assert!(!out.cases.is_empty());
    for c in &out.cases {
        // The test harness runs other tests in threads of this process, so the
        // single-thread check cannot pass here; the binary's tests cover it.
        let failed = c
            .checks
            .iter()
            .filter(|k| !k.passed && k.name != oscost_model::case::SINGLE_THREAD_CHECK);
        assert_eq!(failed.count(), 0, "{}: {:?}", c.id, c.checks);
        let runs = &c.series[0];
        assert_eq!(runs.points.len(), 2);
        let col = runs.columns.iter().position(|n| n == "units").unwrap();
        assert!(runs.points.iter().all(|r| r[col] == units as f64));
        assert!(c.samples.per_op_ns.iter().all(|&t| t > 0.0));
        assert!(c.counters["work_ns"] <= c.samples.per_op_ns.iter().cloned().fold(0.0, f64::max));
    }
}

#[test]
fn sizes_follow_the_suite_and_quick_unless_given() {
    let plain = opts(&[]);
    let suite = opts(&["--suite-size"]);
    assert_eq!(sweep(&plain, false).len(), 11);
    assert_eq!(sweep(&suite, false), [1, 2, 8]);
    assert_eq!(sweep(&plain, true), [1, 2, 8]);
    assert_eq!(work_ns(&suite, false), 30_000_000);
    assert_eq!(work_ns(&suite, true), 5_000_000);
    assert_eq!(
        (
            repeats(&plain, false),
            repeats(&suite, false),
            repeats(&suite, true)
        ),
        (5, 9, 3)
    );
    let given = opts(&[
        "--suite-size",
        "--repeats",
        "2",
        "--work",
        "5ms",
        "--tasks",
        "4",
    ]);
    assert_eq!(
        (
            repeats(&given, true),
            work_ns(&given, true),
            sweep(&given, true)
        ),
        (2, 5_000_000, vec![4])
    );
}

#[test]
fn proc_stat_gives_busy_and_steal_of_the_chosen_cpus() {
    let text = "cpu  9 9 9 9 9 9 9 9 0 0\n\
                    cpu0 10 1 5 100 2 1 1 7 0 0\n\
                    cpu1 20 0 10 100 0 0 0 30 0 0\n\
                    cpu2 1 1 1\n\
                    cpu3 1 1 1 1 1 1 1\n";
    assert_eq!(
        cpu_ticks(text, &[0, 1]),
        Some(CpuTicks {
            busy: 18 + 30,
            steal: 37
        })
    );
    assert_eq!(cpu_ticks(text, &[1]).map(|c| c.steal), Some(30));
    // Too short for steal, or missing: not invented.
    assert_eq!(cpu_ticks(text, &[2]), None);
    assert_eq!(cpu_ticks(text, &[3]), None);
    assert_eq!(cpu_ticks(text, &[0, 5]), None);
}

#[test]
fn overlap_counts_only_time_with_two_at_work() {
    assert_eq!(overlap_of(&[(0, 10), (5, 20)]), 5);
    assert_eq!(overlap_of(&[(0, 10), (10, 20)]), 0);
    assert_eq!(overlap_of(&[(0, 10), (2, 4), (3, 12)]), 8);
    assert_eq!(overlap_of(&[(0, 10)]), 0);
}

/// Two runs of 2 tasks on 2 CPUs, each 100 ms of wall time, 90 ms of work.
fn runs(steal_ms: f64, foreign_ms: f64, overlap_ms: f64, late_ms: f64) -> Vec<Seen> {
    let ms = 1e6;
    vec![
        Seen {
            wall_ns: 100.0 * ms,
            cpus: 2,
            steal_ns: Some(steal_ms * ms),
            foreign_ns: Some(foreign_ms * ms),
            work_ns: 90.0 * ms,
            overlap_ns: Some(overlap_ms * ms),
            late_start_ns: Some(late_ms * ms),
            cpu_ns: 100.0 * ms,
            speed: Some(1.0),
        };
        2
    ]
}

#[test]
fn runs_that_shared_their_cpus_are_counted_with_their_times() {
    let ms = 1e6;
    let run = |wall: f64, foreign: f64, steal: f64| Seen {
        wall_ns: wall * ms,
        cpus: 1,
        steal_ns: Some(steal * ms),
        foreign_ns: Some(foreign * ms),
        work_ns: wall * ms,
        overlap_ns: None,
        late_start_ns: None,
        cpu_ns: 30.0 * ms,
        speed: Some(30.0 / wall),
    };
    let quiet = vec![run(30.0, 0.0, 0.0); 5];
    assert_eq!(shared_runs(&quiet, "CPU 0"), None);
    // Shared, but no slower than the rest: the figure was not moved.
    let mut runs = quiet.clone();
    runs.push(run(31.0, 9.0, 0.0));
    assert_eq!(shared_runs(&runs, "CPU 0"), None);
    let mut runs = quiet.clone();
    runs.extend([
        run(60.0, 30.0, 0.0),
        run(62.0, 31.0, 0.0),
        run(40.0, 0.0, 4.0),
    ]);
    assert_eq!(
        shared_runs(&runs, "CPU 0").unwrap(),
        "CPUs shared during some runs: in 2 of 8 runs other tasks held 50 % of CPU 0; in 1 \
             of 8 runs the host stole 10 % of CPU 0 (those runs: median 60.0 ms, the rest 30.0 ms)"
    );
    // Twice as long with nothing else seen: the work itself ran at half speed.
    let mut runs = quiet.clone();
    runs.push(run(60.0, 0.0, 0.0));
    assert_eq!(
        shared_runs(&runs, "CPU 0").unwrap(),
        "CPUs shared during some runs: in 1 of 6 runs the work ran at 50 % of its calibrated \
             speed with no steal or other task seen (the host ran CPU 0 slower) (those runs: \
             median 60.0 ms, the rest 30.0 ms)"
    );
}

#[test]
fn a_withheld_speedup_names_what_was_seen() {
    let place = "CPUs 0-1";
    // Half of what was possible or more: nothing to say.
    assert_eq!(
        withheld(60.0, 100.0, &runs(80.0, 0.0, 0.0, 0.0), place),
        None
    );
    let w = withheld(3.0, 100.0, &runs(82.0, 0.0, 10.0, 0.0), place).unwrap();
    assert!(
        w.starts_with("speed-up withheld: +3 % of a possible +100 %"),
        "{w}"
    );
    assert!(w.contains("steal 41 % of CPUs 0-1"), "{w}");
    assert!(w.contains("(2 of 2 over 5 %)"), "{w}");
    let w = withheld(3.0, 100.0, &runs(0.0, 60.0, 10.0, 0.0), place).unwrap();
    assert!(
        w.contains("other tasks held the CPUs: 30 % of CPUs 0-1"),
        "{w}"
    );
    let w = withheld(3.0, 100.0, &runs(0.0, 0.0, 10.0, 45.0), place).unwrap();
    assert!(w.contains("slow to start: 50 %"), "{w}");
    let w = withheld(3.0, 100.0, &runs(0.0, 0.0, 27.0, 0.0), place).unwrap();
    assert!(w.contains("together for only 30 %"), "{w}");
    let w = withheld(3.0, 100.0, &runs(0.0, 0.0, 80.0, 0.0), place).unwrap();
    assert!(w.contains("no cause seen: steal 0 %"), "{w}");
    let mut slow = runs(0.0, 0.0, 80.0, 0.0);
    slow.iter_mut().for_each(|r| r.speed = Some(0.55));
    let w = withheld(3.0, 100.0, &slow, place).unwrap();
    assert!(w.contains("ran at 55 % of its calibrated speed"), "{w}");
    // Unread figures are said to be unread.
    let mut r = runs(0.0, 0.0, 80.0, 0.0);
    r[0].steal_ns = None;
    let w = withheld(3.0, 100.0, &r, place).unwrap();
    assert!(w.contains("steal not read"), "{w}");
}

#[test]
fn bad_options_are_refused_before_any_task() {
    let cpus = online();
    for (args, msg) in [
        (&["--tasks", "0"][..], "--tasks 0"),
        (&["--tasks", "70000"][..], "at most"),
        (
            &["--work", "1ms", "--step", "2ms"][..],
            "--step 2ms is larger",
        ),
    ] {
        let o = opts(args);
        let e = with_ctx(tiny_sampler(), cpus.clone(), false, |ctx| run(&o, ctx))
            .unwrap_err()
            .to_string();
        assert!(e.contains(msg), "{args:?}: {e}");
    }
}

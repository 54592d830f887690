use super::*;
use std::time::Duration;

#[test]
fn load_probe_around_sleep() {
    let probe = LoadProbe::start();
    std::thread::sleep(Duration::from_millis(30));
    let load = probe.finish();
    assert!(load.wall_s > 0.0);
    assert!((0.0..=1.0).contains(&load.foreign_cpu_share));
    assert!(load.foreign_cpu_s >= 0.0);
    assert_eq!(load.own_forks, 0);
    // Quiet is at most QUIET_SHARE of the CPUs' time taken by others, and as much stolen.
    if load.quiet {
        assert!(load.foreign_cpu_share <= QUIET_SHARE, "{load:?}");
        let steal = load.steal_s.expect("steal is read when quiet");
        assert!(
            steal <= QUIET_SHARE * load.wall_s * load.cpus_online as f64,
            "{load:?}"
        );
    }
    // Both estimates can be made on Linux.
    assert!(
        load.warnings.iter().all(|w| !w.starts_with("could not")),
        "{:?}",
        load.warnings
    );
    let json = serde_json::to_string(&load).unwrap();
    let back: RunLoad = serde_json::from_str(&json).unwrap();
    assert_eq!(back, load);
}

#[test]
fn own_children_are_not_foreign() {
    // A child burning CPU during the run must not be counted as foreign load.
    let probe = LoadProbe::start();
    let mut child = std::process::Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .expect("sh");
    std::thread::sleep(Duration::from_millis(100));
    let load = probe.finish_with_own_forks(1);
    let _ = child.kill();
    let _ = child.wait();
    let me = std::process::id();
    assert!(load.busiest_foreign.iter().all(|p| p.pid != me));
    assert!(
        load.busiest_foreign.iter().all(|p| p.pid != child.id()),
        "{:?}",
        load.busiest_foreign
    );
}

#[test]
fn compare_counts_new_tasks_from_zero_and_flags_load() {
    let t0 = Instant::now();
    let mut a = Snapshot {
        at: Some(t0),
        stat: Some(parse_proc_stat(
            "cpu0 0 0 0 0 0 0 0 5\ncpu1 0 0 0 0 0 0 0 5\nprocesses 10",
        )),
        ..Snapshot::default()
    };
    a.tasks.insert(100, (100, 1_000_000_000));
    a.tasks.insert(200, (200, 5_000_000_000)); // exits: lost
    let mut b = Snapshot {
        at: Some(t0 + Duration::from_secs(1)),
        stat: Some(parse_proc_stat(
            "cpu0 0 0 0 0 0 0 0 5\ncpu1 0 0 0 0 0 0 0 5\nprocesses 13",
        )),
        ..Snapshot::default()
    };
    b.tasks.insert(100, (100, 1_100_000_000)); // +0.1 s
    b.tasks.insert(300, (300, 50_000_000)); // new: +0.05 s
    b.comms.insert(100, "busy".into());
    let load = compare(&a, &b, 1, None, &[]);
    assert!((load.wall_s - 1.0).abs() < 1e-9);
    assert_eq!(load.cpus_online, 2);
    assert!((load.foreign_cpu_s - 0.15).abs() < 1e-9);
    assert!((load.foreign_cpu_share - 0.075).abs() < 1e-9);
    assert_eq!(load.steal_s, Some(0.0));
    assert_eq!(load.forks, Some(3));
    assert_eq!(load.foreign_forks, Some(2));
    assert!(!load.quiet);
    assert_eq!(load.busiest_foreign[0].comm, "busy");
    assert!(load.warnings[0].starts_with("other processes used 7.5 % of the CPUs"));
    assert!(load
        .warnings
        .iter()
        .any(|w| w.starts_with("2 processes or threads")));
    // Without its own CPU time the busy-time estimate cannot be made: said, and then the
    // forks are worth a warning since exited tasks went uncounted.
    assert!(load
        .warnings
        .iter()
        .any(|w| w.starts_with("could not compare the CPUs' busy time")));
    // Judged against the one CPU a run used, the same foreign time is twice the share.
    let one = compare(&a, &b, 1, Some(1), &[]);
    assert!((one.foreign_cpu_share - 0.15).abs() < 1e-9);
}

/// USER_HZ 100 and HZ 250, as on most x86 kernels.
const TICKS: Ticks = Ticks {
    user_hz: 100,
    jiffy_s: 0.004,
};

/// A snapshot `at_s` seconds after `t0`: one `cpuN` line per (user, system, softirq)
/// triple in ticks, no steal, `own_ms` of oscost's own CPU time, and one idle foreign
/// task (so that /proc reads as readable).
fn snap(t0: Instant, at_s: f64, cpus: &[(u64, u64, u64)], own_ms: u64) -> Snapshot {
    let mut text = String::from("cpu  0 0 0 0 0 0 0 0 0 0\n");
    for (i, (user, system, softirq)) in cpus.iter().enumerate() {
        text += &format!("cpu{i} {user} 0 {system} 5000 3 0 {softirq} 0 0 0\n");
    }
    text += "processes 10\n";
    let mut s = Snapshot {
        at: Some(t0 + Duration::from_secs_f64(at_s)),
        stat: Some(parse_proc_stat(&text)),
        busy_ticks: parse_busy_ticks(&text),
        own_ns: Some(own_ms * 1_000_000),
        ..Snapshot::default()
    };
    s.tasks.insert(1, (1, 1_000_000));
    s
}

#[test]
fn busy_ticks_are_user_nice_system_irq_softirq_per_cpu() {
    let t = parse_busy_ticks(
        "cpu  10 20 30 40 50 60 70 80 0 0\n\
             cpu0 1 2 3 1000 5 6 7 8 9 10\n\
             cpu1 100 0 50 1000 5 0 1 0 0 0\n\
             cpu2 1 2 3\n\
             intr 5 6 7\n",
    );
    // No aggregate line, no CPU whose line lacks the fields.
    assert_eq!(t.len(), 2);
    assert_eq!(t[&0], [1, 2, 3, 6, 7]);
    assert_eq!(t[&1], [100, 0, 50, 0, 1]);
}

#[test]
fn cpu_times_hold_steal_only_when_the_line_reaches_it() {
    let t = parse_cpu_times(
        "cpu  10 20 30 40 50 60 70 80 0 0\n\
             cpu0 1 2 3 1000 5 6 7 8 9 10\n\
             cpu1 100 0 50 1000 5 0 1\n\
             cpu2 1 2 3\n",
    );
    assert_eq!(t.len(), 2);
    assert_eq!(
        t[&0],
        CpuTimes {
            user: 1,
            nice: 2,
            system: 3,
            irq: 6,
            softirq: 7,
            steal: Some(8),
        }
    );
    assert_eq!(t[&1].busy(), [100, 0, 50, 0, 1]);
    assert_eq!(t[&1].steal, None);
}

#[test]
fn a_competitor_that_exited_is_still_seen() {
    // `oscost syscall --cpus 0` for 5 s; a CPU hog on CPU 0 got 1.5 s of it and exited
    // before the end, so the per-task estimate sees nothing of it.
    let t0 = Instant::now();
    let mut a = snap(t0, 0.0, &[(1000, 2000, 10), (50, 50, 0)], 100);
    a.cpus = Some(vec![0]);
    a.tasks.insert(4242, (4242, 7_000_000_000));
    let b = snap(t0, 5.0, &[(1150, 2350, 10), (52, 51, 0)], 3600);
    let load = compare_in(&a, &b, 1, Some(1), Some(TICKS), &[]);
    assert!(load.busiest_foreign.is_empty());
    assert!(!load.quiet);
    assert!((load.foreign_cpu_s - 1.5).abs() < 1e-9, "{load:?}");
    assert!((load.foreign_cpu_share - 0.3).abs() < 1e-9);
    assert_eq!(
        load.warnings,
        [
            "other processes used 30.0 % of CPU 0 during the run (seen in the CPUs' busy time; \
              some had exited before its end): figures may be inflated"
        ]
    );
    // The same with no --cpus on a two-CPU machine: 1.5 s of the 10 s both CPUs had.
    let mut all = snap(t0, 0.0, &[(1000, 2000, 10), (50, 50, 0)], 100);
    all.cpus = None;
    let load = compare_in(&all, &b, 1, Some(2), Some(TICKS), &[]);
    assert!(!load.quiet);
    assert!((load.foreign_cpu_s - 1.53).abs() < 1e-9, "{load:?}");
    assert!(load.warnings[0].starts_with("other processes used 15.3 % of CPUs 0-1"));
}

#[test]
fn a_tick_of_steal_is_no_warning_a_share_of_the_cpus_is() {
    // 10 s on two CPUs, the run's own time on CPU 0.
    let t0 = Instant::now();
    let mut a = snap(t0, 0.0, &[(1000, 2000, 10), (50, 50, 0)], 0);
    a.cpus = Some(vec![0]);
    let with_steal = |ticks: u64| {
        let mut b = snap(t0, 10.0, &[(2000, 2000, 10), (50, 50, 0)], 10_000);
        let stat = b.stat.as_mut().unwrap();
        stat.steal_ticks.insert(0, ticks);
        stat.steal_ticks.insert(1, 0);
        compare_in(&a, &b, 0, Some(1), Some(TICKS), &[])
    };
    // One tick (10 ms, 0.05 % of the CPUs' 20 s): recorded, not warned of, still quiet.
    let one = with_steal(1);
    assert_eq!(one.steal_s, Some(0.01));
    assert!(one.warnings.is_empty(), "{:?}", one.warnings);
    assert!(one.quiet, "{one:?}");
    // One second (5 %): warned of, with its share, and not quiet.
    let much = with_steal(100);
    assert!(!much.quiet);
    assert_eq!(
        much.warnings,
        [
            "steal time 1.00 s (5.0 % of the CPUs' time; CPUs 0): the hypervisor ran \
              something else on these vCPUs"
        ]
    );
}

#[test]
fn tick_rounding_alone_does_not_make_a_run_noisy() {
    let t0 = Instant::now();
    // A 0.2 s experiment keeping CPU 0 busy: 0.2 s of own time, but user, system and
    // softirq each read a tick high and a jiffy from before the start was accounted in
    // it: 0.23 s of busy time, 15 % more, and still nothing foreign.
    let mut a = snap(t0, 0.0, &[(1000, 2000, 10)], 0);
    a.cpus = Some(vec![0]);
    let b = snap(t0, 0.2, &[(1008, 2014, 11)], 200);
    let load = compare_in(&a, &b, 0, Some(1), Some(TICKS), &[]);
    assert!(load.quiet, "{load:?}");
    assert!(load.warnings.is_empty(), "{:?}", load.warnings);
    assert!(load.foreign_cpu_s < 0.01);
    // One more tick is more than rounding can explain.
    let c = snap(t0, 0.2, &[(1009, 2014, 11)], 200);
    assert!(!compare_in(&a, &c, 0, Some(1), Some(TICKS), &[]).quiet);

    // Two CPUs each half busy for 1 s with oscost's own ping-pong: a busy time read at
    // ticks is off by a few jiffies either way, here +0.1 s, and that is not load.
    let mut a = snap(t0, 0.0, &[(1000, 2000, 10), (1000, 2000, 10)], 0);
    a.cpus = Some(vec![0, 1]);
    let b = snap(t0, 1.0, &[(1010, 2045, 10), (1010, 2045, 10)], 1000);
    let busy = busy_excess(&a, &b, 1.0, TICKS).unwrap();
    assert!((busy.excess_s - 0.1).abs() < 1e-9);
    assert!(!busy.significant(), "{busy:?}");
    assert!(compare_in(&a, &b, 0, Some(2), Some(TICKS), &[]).quiet);

    // Busy time that reads low (bursts between idle periods escape the tick) is quiet.
    let b = snap(t0, 1.0, &[(1010, 2030, 10), (1005, 2030, 10)], 1000);
    let load = compare_in(&a, &b, 0, Some(2), Some(TICKS), &[]);
    assert!(load.quiet);
    assert_eq!(load.foreign_cpu_share, 0.0);

    // A long experiment with 0.8 % more busy time than its own is quiet too.
    let b = snap(t0, 10.0, &[(1008, 2996, 10), (1010, 2000, 10)], 9_980);
    let load = compare_in(&a, &b, 0, Some(2), Some(TICKS), &[]);
    assert!(load.quiet, "{load:?}");
}

#[test]
fn two_estimates_of_one_load_are_one_line() {
    let t0 = Instant::now();
    let mut a = snap(t0, 0.0, &[(1000, 2000, 10)], 0);
    a.cpus = Some(vec![0]);
    a.tasks.insert(4242, (4242, 0));
    let mut b = snap(t0, 5.0, &[(1150, 2350, 10)], 3500);
    // The hog seen by its tasks used 0.2 s; the CPU's busy time shows 1.5 s not oscost's.
    b.tasks.insert(4242, (4242, 200_000_000));
    b.comms.insert(4242, "hog".into());
    let load = compare_in(&a, &b, 0, Some(1), Some(TICKS), &[]);
    let lines: Vec<&String> = load
        .warnings
        .iter()
        .filter(|w| w.starts_with("other processes used"))
        .collect();
    assert_eq!(
        lines,
        [
            "other processes used 4.0 % of the CPUs during the run (busiest: hog pid 4242) by \
                 their tasks' CPU time, and 30.0 % of CPU 0 by the CPUs' busy time; some had \
                 exited before its end: figures may be inflated"
        ],
        "{:?}",
        load.warnings
    );
}

#[test]
fn a_hog_seen_by_both_estimates_is_named_once() {
    let t0 = Instant::now();
    let mut a = snap(t0, 0.0, &[(1000, 2000, 10)], 0);
    a.cpus = Some(vec![0]);
    a.tasks.insert(4242, (4242, 0));
    let mut b = snap(t0, 5.0, &[(1150, 2350, 10)], 3500);
    b.tasks.insert(4242, (4242, 1_500_000_000));
    b.comms.insert(4242, "hog".into());
    let load = compare_in(&a, &b, 0, Some(1), Some(TICKS), &[]);
    assert!(!load.quiet);
    assert!((load.foreign_cpu_s - 1.5).abs() < 1e-6);
    assert_eq!(
        load.warnings,
        [
            "other processes used 30.0 % of the CPUs during the run (busiest: hog pid 4242): \
              figures may be inflated"
        ]
    );
}

#[test]
fn another_oscost_is_named() {
    let t0 = Instant::now();
    // Run 500 (with its measuring process 501) was there at the start, run 900 at the end.
    let mut a = snap(t0, 0.0, &[(1000, 2000, 10)], 0);
    a.oscost.insert(500, 1);
    a.oscost.insert(501, 500);
    let mut b = snap(t0, 1.0, &[(1000, 2100, 10)], 1000);
    b.oscost.insert(501, 500);
    b.oscost.insert(900, 77);
    let load = compare_in(&a, &b, 0, Some(1), Some(TICKS), &[]);
    assert!(!load.quiet);
    assert_eq!(
        load.warnings,
        [
            "another oscost (pid 500) ran at the same time: both runs' figures are suspect",
            "another oscost (pid 900) ran at the same time: both runs' figures are suspect"
        ]
    );
}

#[test]
fn a_kernel_worker_finishing_the_runs_own_work_is_not_another_program() {
    assert!(own_worker("kworker/u8:3+netns", &["netns"]));
    assert!(own_worker("kworker/u8:3-netns", &["netns"]));
    assert!(!own_worker("kworker/u8:3+events_unbound", &["netns"]));
    assert!(!own_worker("netns-daemon", &["netns"]));
    assert!(!own_worker("kworker/u8:3+netns", &[]));
}

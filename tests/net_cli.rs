//! `oscost net` as a user drives it: tiny runs whose switches, bytes and connections the kernel
//! counted, a refused placement, and a network namespace without loopback. No timing
//! assertions: only what the kernel counted and what the command did.

mod common;
use common::{assert_args_refused, is_root, isolate, read_doc};

use common::tiny_run as run;

#[test]
fn round_trips_bandwidth_and_a_connection_are_counted() {
    let e = run(&[
        "--cpus",
        &oscost_sys::affinity().unwrap()[0].to_string(),
        "net",
        "--cases",
        "tcp.connect,tcp.rtt,tcp.connect.rst,unix-dgram.rtt,pipe.bw",
    ]);
    let ids: Vec<&str> = e.cases.iter().map(|c| c.id.as_str()).collect();
    // The one-thread case first, then the one with an accepting thread.
    assert_eq!(
        ids,
        [
            "net.tcp.connect.rst",
            "net.tcp.connect",
            "net.tcp.rtt.same",
            "net.unix-dgram.rtt.same",
            "net.pipe.bw.same"
        ]
    );
    for c in &e.cases {
        assert!(c.median_ns > 0.0, "{}", c.id);
    }
    // Namespace-wide counts: other programs' connections can only add to them.
    let (rst, fin) = (&e.cases[0], &e.cases[1]);
    for k in [
        "tcp_active_opens_per_connection",
        "tcp_passive_opens_per_connection",
    ] {
        assert!(rst.counters[k] >= 0.95, "{k}: {:?}", rst.counters);
        assert!(fin.counters[k] >= 0.95, "{k}: {:?}", fin.counters);
    }
    assert!(rst.counters["tcp_resets_per_connection"] >= 0.95);
    assert!(rst.counters["time_wait_left_per_connection"] < 0.05);
    let single = rst
        .checks
        .iter()
        .find(|k| k.name == "threads_in_process")
        .unwrap();
    assert!(single.passed, "{single:?}");
    // A FIN each way: the accepting side's close leaves one TIME_WAIT socket (none expire
    // within the run's few seconds, though other programs' could).
    assert!(
        fin.counters["time_wait_left_per_connection"] > 0.5,
        "{:?}",
        fin.counters
    );
    assert!(fin.checks.iter().all(|k| k.name != "threads_in_process"));
    for c in &e.cases[2..4] {
        let sw = c.counters["switches_per_round_trip"];
        assert!((1.9..=2.1).contains(&sw), "{}: {sw}", c.id);
    }
    let bw = &e.cases[4];
    assert_eq!(bw.counters["bytes_drained"], bw.counters["bytes_written"]);
    assert!(bw.counters["mb_per_s"] > 0.0);
}

#[test]
fn cross_on_one_cpu_is_refused() {
    assert_args_refused(
        &["--cpus", "0", "net", "--placement", "cross"],
        "--placement cross needs two CPUs in the CPU set (have: 0)",
    );
}

/// In a new network namespace the loopback interface is down: the TCP case says so in one
/// line, the AF_UNIX case is still measured.
#[test]
fn without_loopback_the_inet_cases_say_why_and_the_others_run() {
    if !is_root()
        || std::process::Command::new("unshare")
            .arg("--help")
            .output()
            .is_err()
    {
        return common::skip("needs root and unshare");
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut cmd = std::process::Command::new("unshare");
    cmd.arg("-n")
        .arg(assert_cmd::cargo::cargo_bin("oscost"))
        .args(["--quick", "--quiet", "--samples", "5", "net", "--cases"])
        .args(["tcp.rtt,unix.rtt", "--placement", "same", "--json"])
        .arg(&json);
    let out = isolate(&mut cmd).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let e = read_doc(&json).experiments.remove(0);
    assert_eq!(e.unavailable.len(), 1, "{:?}", e.unavailable);
    assert_eq!(e.unavailable[0].id, "net.tcp.rtt.same");
    let why = &e.unavailable[0].reason;
    assert!(why.contains("no loopback interface"), "{why}");
    assert!(!why.contains('\n'));
    let ids: Vec<&str> = e.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["net.unix.rtt.same"]);
}

//! `net`'s tests: tiny runs and the plan's parsing.

use super::*;
use crate::context::testing;
use crate::skip::skip;

fn opts(args: &[&str]) -> Options {
    engine::defaults(args)
}

fn with_ctx<T>(cpus: Vec<usize>, f: impl FnOnce(&Context) -> T) -> T {
    testing::with_ctx(testing::tiny_sampler(), cpus, false, f)
}

#[test]
fn plans_refuse_cross_on_one_cpu_and_default_to_what_fits() {
    let e = plan(&opts(&["--placement", "cross"]), &[3]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--placement cross needs two CPUs in the CPU set (have: 3)"
    );
    assert_eq!(
        plan(&opts(&[]), &[0]).unwrap().placements,
        [Placement::Same]
    );
    let p = plan(&opts(&["--cases", "pipe.bw,pipe.bw"]), &[0, 1]).unwrap();
    assert_eq!(p.measures, [Measure::PipeBw]);
    assert_eq!(p.placements.len(), 2);
    assert_eq!(
        case_id(Measure::UnixDgramRtt, Some(Placement::Cross)),
        "net.unix-dgram.rtt.cross"
    );
    assert_eq!(case_id(Measure::TcpConnect, None), "net.tcp.connect");
}

#[test]
fn proc_net_counters_parse() {
    let snmp = "Tcp: RtoAlgorithm ActiveOpens PassiveOpens OutRsts\nTcp: 1 10 20 30\n";
    assert_eq!(snmp_field(snmp, "Tcp:", "PassiveOpens"), Some(20.0));
    assert_eq!(snmp_field(snmp, "Tcp:", "Nope"), None);
    let ss = "sockets: used 5\nTCP: inuse 3 orphan 0 tw 7 alloc 4 mem 1\n";
    assert_eq!(sockstat_tw(ss), Some(7.0));
    // Two TIME_WAIT sockets on port 0x9272, one on another port, one listening on it.
    let tcp = "  sl  local_address rem_address   st tx_queue\n\
   0: 0100007F:9272 00000000:0000 0A 00000000:00000000\n\
   1: 0100007F:9272 0100007F:8993 06 00000000:00000000\n\
   2: 0100007F:9272 0100007F:8994 06 00000000:00000000\n\
   3: 0100007F:8993 0100007F:9272 06 00000000:00000000\n";
    assert_eq!(time_wait_on_port(tcp, 0x9272), 2.0);
    assert_eq!(time_wait_on_port(tcp, 0x8993), 1.0);
    assert_eq!(time_wait_on_port(tcp, 1), 0.0);
}

/// Tiny runs of every case on one CPU: positive figures, 2 switches per round trip
/// counted, every byte drained; the connection counts are the CLI test's (process-wide).
#[test]
fn every_pair_case_measures_and_is_verified_on_one_cpu() {
    let cpu = oscost_sys::affinity().unwrap()[0];
    with_ctx(vec![cpu], |ctx| {
        let o = opts(&[
            "--cases",
            "tcp.rtt,udp.rtt,unix.rtt,unix-dgram.rtt,tcp.bw,unix.bw,pipe.bw",
        ]);
        let out = run(&o, ctx).unwrap();
        let loopback = net::loopback_available().is_ok();
        assert_eq!(out.cases.len() + out.unavailable.len(), 7);
        if !loopback {
            assert_eq!(out.unavailable.len(), 3, "{:?}", out.unavailable);
        }
        for c in &out.cases {
            assert!(c.samples.per_op_ns.iter().all(|&v| v > 0.0), "{}", c.id);
            assert!(c.id.ends_with(".same"), "{}", c.id);
            if c.unit == "round trip" {
                assert!(c.counters["switches_per_round_trip"] >= 1.9, "{c:?}");
            } else {
                assert_eq!(c.counters["bytes_drained"], c.counters["bytes_written"]);
                assert!(c.counters["mb_per_s"] > 0.0);
                assert!(c.checks.iter().all(|k| k.passed), "{c:?}");
            }
        }
    });
}

/// Two CPUs with --idle-poll: the request is held (root) or said not to be, the idle
/// configuration recorded, each idle state's entries counted per operation, and none into
/// a halting state while the CPUs were held polling.
#[test]
fn cross_cases_count_idle_entries_and_idle_poll_keeps_cpus_polling() {
    let cpus = oscost_sys::affinity().unwrap();
    if cpus.len() < 2 {
        return skip("needs two CPUs for the cross placement");
    }
    with_ctx(cpus[..2].to_vec(), |ctx| {
        let o = opts(&[
            "--cases",
            "unix-dgram.rtt,pipe.bw",
            "--placement",
            "cross",
            "--idle-poll",
        ]);
        let out = run(&o, ctx).unwrap();
        let held = out.params["idle"]["idle_poll_held"].as_bool().unwrap();
        assert_eq!(
            held,
            !out.warnings
                .iter()
                .any(|w| w.as_str().starts_with("--idle-poll not in force")),
            "{:?}",
            out.warnings
        );
        assert_eq!(out.cases.len(), 2);
        for c in &out.cases {
            let what = if c.unit == "round trip" {
                "round_trip"
            } else {
                "64k"
            };
            let idle: Vec<(&String, &f64)> = c
                .counters
                .iter()
                .filter(|(k, _)| k.starts_with("idle_") && k.ends_with(&format!("_per_{what}")))
                .collect();
            let has_cpuidle =
                std::path::Path::new("/sys/devices/system/cpu/cpu0/cpuidle/state0").exists();
            assert_eq!(!idle.is_empty(), has_cpuidle, "{c:?}");
            if held {
                for (k, v) in idle.iter().filter(|(k, _)| !k.starts_with("idle_poll_")) {
                    assert_eq!(**v, 0.0, "{k} while held polling: {c:?}");
                }
                assert!(
                    c.notes
                        .iter()
                        .all(|n| n.kind() != MessageKind::HaltedCpuWoken),
                    "{c:?}"
                );
            }
        }
    });
}

/// The notes say what moved a cross-CPU figure only where it happened.
#[test]
fn cross_notes_name_halted_cpus_and_answerless_wake_ups() {
    let per = |n: u64| n as f64 / 100.0;
    let halted = [("haltpoll_idle".to_string(), 150), ("poll".to_string(), 10)];
    let notes = cross_notes(Measure::UnixRtt, &halted, per, 3.04, "round trip");
    let kinds: Vec<MessageKind> = notes.iter().map(Message::kind).collect();
    assert_eq!(
        kinds,
        [MessageKind::HaltedCpuWoken, MessageKind::WokenWithoutAnswer]
    );
    assert!(
        notes[0]
            .as_str()
            .starts_with("woke a halted CPU 1.50 times per round trip (haltpoll_idle)"),
        "{}",
        notes[0]
    );
    assert!(notes[1].as_str().contains("3.04 switches per round trip"));
    let polled = [("haltpoll_idle".to_string(), 0), ("poll".to_string(), 200)];
    assert!(cross_notes(Measure::UnixRtt, &polled, per, 2.0, "round trip").is_empty());
    // Answerless wake-ups are an AF_UNIX stream's; other kinds' extra switches are not.
    assert!(cross_notes(Measure::UdpRtt, &polled, per, 3.0, "round trip").is_empty());
}

/// LEBench's send and recv, one thread: every byte received back, no switch needed.
#[test]
fn sendrecv_receives_every_byte_without_a_switch() {
    let cpu = oscost_sys::affinity().unwrap()[0];
    with_ctx(vec![cpu], |ctx| {
        let out = run(
            &opts(&["--cases", "unix.sendrecv.b1,unix.sendrecv.b96000"]),
            ctx,
        )
        .unwrap();
        let ids: Vec<&str> = out.cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["net.unix.sendrecv.b1", "net.unix.sendrecv.b96000"]);
        for c in &out.cases {
            assert!(c.samples.per_op_ns.iter().all(|&v| v > 0.0), "{}", c.id);
            let bytes = c.params["bytes"].as_f64().unwrap();
            assert!(c.counters["bytes_received"] >= bytes, "{c:?}");
            let k = |name: &str| c.checks.iter().find(|k| k.name == name).unwrap();
            assert!(k("bytes_received_per_byte_sent").passed, "{c:?}");
            assert_eq!(k("voluntary_switches_per_op").expected, 0.0);
        }
    });
}

/// Two CPUs: a round trip now and then whose answer was already there (1.86 a round trip) is
/// still a cross-CPU round trip; readers that rarely sleep are not. One CPU keeps 2 ± 0.1.
#[test]
fn cross_round_trips_may_find_an_answer_waiting_but_most_must_sleep() {
    let cross = |n| switch_check(Measure::TcpRtt, Placement::Cross, n, "x").passed;
    assert!(cross(2.0) && cross(1.86) && cross(1.5));
    assert!(!cross(1.4) && !cross(0.2));
    assert!(!switch_check(Measure::TcpRtt, Placement::Same, 1.86, "x").passed);
}

//! Signals and kills mid-run: Ctrl-C, SIGTERM, SIGHUP, GNU timeout, a worker killed, a run
//! stopped and continued. Each measures for real, so each runs alone.

use std::time::Duration;

use crate::runner::{case, expect_json, kill, measuring_of, wait_for, workers_of, QUICK_SYS};

/// A sweep of ring sizes, interrupted once a ring of 32 processes or more runs.
const RING_SWEEP: &[&str] = &[
    "ring",
    "--kind",
    "processes",
    "--tasks",
    "2..1024",
    "--samples",
    "5",
    "--json",
    "r.json",
];

/// Which process gets the signal, and how often.
#[derive(PartialEq)]
enum Target {
    Oscost,
    Twice,
    Measuring,
}

/// `sig` mid-sweep: exit 130, saying interrupted, and no result file (no experiment ended).
fn signal(sig: &str, target: Target) {
    case(true, |c| {
        let bg = c.spawn_osc(RING_SWEEP);
        let pid = bg.pid();
        // Not required: a signal earlier in the sweep must end it just the same.
        if !wait_for(20, || workers_of(pid).len() >= 31) {
            eprintln!("no ring of 32 seen in 20 s");
        }
        let to = if target == Target::Measuring {
            measuring_of(pid).expect("no measuring process found")
        } else {
            pid
        };
        kill(sig, to);
        if target == Target::Twice {
            kill(sig, to);
        }
        let out = bg.collect();
        out.rc(130);
        assert!(
            out.err.contains("interrupted"),
            "stderr does not say interrupted: {}",
            out.err
        );
        assert!(
            !c.at("r.json").exists(),
            "r.json written, although no experiment finished"
        );
    });
}

#[test]
fn sigint_ring_processes() {
    signal("INT", Target::Oscost);
}

#[test]
fn sigint_twice() {
    signal("INT", Target::Twice);
}

#[test]
fn sigterm() {
    signal("TERM", Target::Oscost);
}

#[test]
fn sighup() {
    signal("HUP", Target::Oscost);
}

#[test]
fn sigint_measuring_process() {
    signal("INT", Target::Measuring);
}

/// Ctrl-C right after the start: exit 130 whether or not oscost has its handler yet.
#[test]
fn sigint_at_start() {
    case(true, |c| {
        let mut args = QUICK_SYS.to_vec();
        args.extend(["--json", "r.json"]);
        let bg = c.spawn_osc(&args);
        std::thread::sleep(Duration::from_millis(20));
        kill("INT", bg.pid());
        bg.collect().rc(130);
    });
}

/// A SysV ping-pong long enough to be cut short.
const SYSV_LONG: &[&str] = &[
    "switch",
    "--via",
    "sysv-sem",
    "--kind",
    "processes",
    "--samples",
    "3000",
    "-q",
];

/// GNU timeout's SIGTERM to a run holding a SysV set: the run is cut short (124) and leaves no
/// set (the runner's check).
#[test]
fn gnu_timeout_sysv_sem() {
    case(true, |c| {
        let mut cmd = c.wrapped(&["timeout", "-s", "TERM", "3"]);
        cmd.args(SYSV_LONG);
        let bg = c.spawn(&mut cmd);
        assert!(
            wait_for(10, || !c.new_sems().is_empty()),
            "no SysV set appeared within 10 s"
        );
        let out = bg.collect();
        assert_eq!(
            out.rc, 124,
            "the run was not cut short by timeout: {}",
            out.err
        );
    });
}

/// `sig` to one worker of the ring: the run fails (2), naming that worker.
fn signal_worker(sig: &str) {
    case(true, |c| {
        let bg = c.spawn_osc(RING_SWEEP);
        let pid = bg.pid();
        let mut hit = None;
        for _ in 0..5 {
            if !wait_for(20, || !workers_of(pid).is_empty()) {
                break;
            }
            // A worker can end between the look and the signal: look again.
            if let Some(&w) = workers_of(pid).first() {
                if kill(sig, w) {
                    hit = Some(w);
                    break;
                }
            }
        }
        let w = hit.expect("found no worker to signal");
        let out = bg.collect();
        out.rc(2);
        assert!(
            out.err.contains(&format!("worker process {w}")),
            "stderr does not name worker {w}: {}",
            out.err
        );
    });
}

#[test]
fn sigterm_one_worker() {
    signal_worker("TERM");
}

#[test]
fn sigkill_one_worker() {
    signal_worker("KILL");
}

/// Stopped and continued mid-run: the run goes on and succeeds.
#[test]
fn sigstop_sigcont() {
    case(true, |c| {
        let bg = c.spawn_osc(&[
            "ring",
            "--kind",
            "processes",
            "--tasks",
            "2..256",
            "--samples",
            "5",
            "-q",
            "--json",
            "r.json",
        ]);
        let pid = bg.pid();
        assert!(
            wait_for(20, || !workers_of(pid).is_empty()),
            "no worker appeared in 20 s"
        );
        kill("STOP", pid);
        std::thread::sleep(Duration::from_millis(500));
        kill("CONT", pid);
        bg.collect().rc(0);
        expect_json(&c.at("r.json"), "ring");
    });
}

/// The measuring process's helpers (a seccomp-notify supervisor, `signal`'s partner process)
/// stopped with SIGSTOP, then Ctrl-C: the run ends at once (130), not after the coordinator's
/// 5 s grace, and leaves none of them behind (the runner's checks).
fn helpers_stopped_then_sigint(args: &[&str]) {
    case(true, |c| {
        let bg = c.spawn_osc(args);
        let pid = bg.pid();
        assert!(
            wait_for(60, || !workers_of(pid).is_empty()),
            "no helper process appeared in 60 s"
        );
        // Mid-sample, not while the helpers start.
        std::thread::sleep(Duration::from_millis(300));
        for w in workers_of(pid) {
            kill("STOP", w);
        }
        std::thread::sleep(Duration::from_millis(300));
        let sent = std::time::Instant::now();
        kill("INT", pid);
        let out = bg.collect();
        let took = sent.elapsed();
        out.rc(130);
        assert!(
            !out.err.contains("did not stop within"),
            "the run waited for its grace: {}",
            out.err
        );
        assert!(
            took < Duration::from_secs(3),
            "the run took {took:?} to end"
        );
    });
}

#[test]
fn seccomp_supervisor_stopped_sigint() {
    helpers_stopped_then_sigint(&["--no-save", "seccomp", "--samples", "3000"]);
}

#[test]
fn signal_partner_stopped_sigint() {
    helpers_stopped_then_sigint(&["--no-save", "signal", "--samples", "100000"]);
}

//! `oscost uring` and `oscost poll` as a user drives them: tiny runs whose every check passes
//! in oscost's single-threaded measuring process (the calls counted by the kernel where it
//! lets them be counted), bad input refused, and a size beyond the open-file limit refused.
//! No timing assertions.

mod common;
use common::{assert_args_refused, assert_every_check_passed, run_limited, tiny_run};

/// Runs `oscost --quick --quiet --samples 5 ARGS --json FILE` and returns the experiment's
/// result, with every case's checks passed.
fn tiny(args: &[&str]) -> oscost_model::ExperimentResult {
    let e = tiny_run(args);
    assert_every_check_passed(&e);
    for c in &e.cases {
        assert!(c.median_ns > 0.0, "{}", c.id);
    }
    e
}

#[test]
fn uring_counts_one_enter_a_batch_or_says_why_it_cannot_run() {
    let e = tiny(&[
        "uring",
        "--ops",
        "nop,read1",
        "--batches",
        "1,32",
        "--no-sqpoll",
    ]);
    if let Some(u) = e.unavailable.first() {
        // io_uring disabled or missing: one line, nothing measured.
        assert_eq!(e.unavailable.len(), 1);
        assert!(u.reason.contains("io_uring"), "{}", u.reason);
        assert!(e.cases.is_empty());
        return;
    }
    let ids: Vec<&str> = e.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "uring.nop.b1",
            "uring.nop.b32",
            "uring.read1.b1",
            "uring.read1.b32",
            "uring.read1.fixed.b1",
            "uring.read1.fixed.b32",
            "uring.syscall-read1"
        ]
    );
    for c in e.cases.iter().filter(|c| c.id.contains(".fixed.")) {
        assert_eq!(c.params["registered"], "file", "{}", c.id);
        let (r, lo, hi) = (
            c.counters["ratio_to_unregistered"],
            c.counters["ratio_to_unregistered_ci_lo"],
            c.counters["ratio_to_unregistered_ci_hi"],
        );
        assert!(lo <= r && r <= hi && r > 0.0, "{}: {r} [{lo}, {hi}]", c.id);
    }
    for c in &e.cases {
        // Counted where the kernel's tracepoints can be read (root, or perf allowed).
        if let Some(&n) = c.counters.get("system_calls_per_op") {
            let want = match c.params["batch"].as_u64() {
                Some(32) => 1.0 / 32.0,
                _ => 1.0,
            };
            assert!((n - want).abs() < 1e-9, "{}: {n}", c.id);
        }
    }
    let d: Vec<&str> = e.derived.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(
        d,
        [
            "uring.read1.b1.minus_syscall",
            "uring.read1.b32.minus_syscall",
            "uring.read1.fixed.b1.minus_unregistered",
            "uring.read1.fixed.b32.minus_unregistered"
        ]
    );
}

#[test]
fn poll_finds_one_ready_and_fits_a_slope_per_descriptor() {
    let e = tiny(&["poll", "--fds", "4,64"]);
    let ids: Vec<&str> = e.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "poll.select.4",
            "poll.select.64",
            "poll.poll.4",
            "poll.poll.64",
            "poll.epoll.4",
            "poll.epoll.64",
            "poll.epoll-ctl"
        ]
    );
    for c in &e.cases {
        // Every call of the counted pass found the one readable socket (epoll-ctl: each pair
        // of calls succeeded).
        if let Some(&r) = c.counters.get("ready_per_op") {
            assert_eq!(r, 1.0, "{}", c.id);
        }
    }
    let d: Vec<&str> = e.derived.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(
        d,
        [
            "poll.select.per_fd",
            "poll.poll.per_fd",
            "poll.epoll.per_fd"
        ]
    );
}

#[test]
fn bad_sizes_are_refused_in_one_line() {
    assert_args_refused(&["uring", "--batches", "65"], "--batches 65");
    assert_args_refused(&["uring", "--batches", "0"], "--batches 0");
    assert_args_refused(&["poll", "--fds", "0"], "at least 1 socket");
}

#[test]
fn more_sockets_than_the_open_file_limit_are_refused_before_measuring() {
    let (code, err, written) = run_limited(
        "--nofile=64",
        false,
        &["--quiet", "poll", "--fds", "10,1000"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("RLIMIT_NOFILE") && err.contains("--fds 10,1000"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!written);
}

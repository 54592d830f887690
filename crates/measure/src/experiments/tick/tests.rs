use super::*;
use crate::context::NoProgress;
use crate::sampler::SamplerConfig;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// One tick run at a time: a process has one signal timer, and the checks below count the
/// process's timers and helper threads.
static SERIAL: Mutex<()> = Mutex::new(());

fn opts(args: &[&str]) -> Options {
    use clap::{Args, FromArgMatches};
    let cmd = Options::augment_args(clap::Command::new("tick").no_binary_name(true));
    Options::from_arg_matches(&cmd.try_get_matches_from(args).unwrap()).unwrap()
}

fn with_ctx<T>(cancel: &AtomicBool, f: impl FnOnce(&Context) -> T) -> T {
    let clock = Clock::monotonic("test".into());
    let ctx = Context {
        clock: &clock,
        sampler: SamplerConfig::quick(),
        quick: true,
        cpus: vec![oscost_sys::affinity().unwrap()[0]],
        progress: &NoProgress,
        cancel,
        controls: &Default::default(),
    };
    f(&ctx)
}

/// What a run may leave behind: POSIX timers, helper threads, timerfds.
fn leftovers() -> (usize, usize, usize) {
    let timers = std::fs::read_to_string("/proc/self/timers")
        .map(|t| t.lines().filter(|l| l.starts_with("ID:")).count())
        .unwrap_or(0);
    let helpers = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == "oscost-tick")
        })
        .count();
    let timerfds = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().contains("timerfd"))
        })
        .count();
    (timers, helpers, timerfds)
}

fn nothing_left() -> bool {
    (0..1000).any(|_| {
        let l = leftovers();
        std::thread::sleep(Duration::from_millis(1));
        l == (0, 0, 0)
    })
}

#[test]
fn a_period_too_long_for_the_work_is_refused_before_anything_runs() {
    let _g = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let cancel = AtomicBool::new(false);
    with_ctx(&cancel, |ctx| {
        let e = run(&opts(&["--work", "5ms", "--periods", "1ms"]), ctx).unwrap_err();
        assert!(e.to_string().contains("fewer than 10 events"), "{e}");
    });
}

/// A tiny run of every source: events counted, rows per period, the slope and the
/// per-event figures, and nothing left armed afterwards.
#[test]
fn a_tiny_run_counts_events_and_leaves_nothing_armed() {
    if let Some(why) = oscost_sys::timer::fifo_refused(1) {
        return crate::skip::skip(&format!("needs SCHED_FIFO for the helper source: {why}"));
    }
    let _g = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let cancel = AtomicBool::new(false);
    let out = with_ctx(&cancel, |ctx| {
        run(
            // Periods a busy machine still keeps (the tests run side by side): the probe
            // refuses a period it cannot deliver, which another test checks.
            &opts(&["--work", "40ms", "--periods", "4ms,2ms", "--runs", "3"]),
            ctx,
        )
        .unwrap()
    });
    assert!(nothing_left(), "{:?}", leftovers());
    let (kernel, timed): (Vec<&Case>, Vec<&Case>) =
        out.cases.iter().partition(|c| c.id.ends_with(".kernel"));
    assert_eq!(timed.len(), 1 + 3 * 2, "{out:#?}");
    assert_eq!(timed[0].id, undisturbed_id());
    traced_runs_are_consistent(&out, &kernel);
    for c in &timed[1..] {
        assert_eq!(c.samples.per_op_ns.len(), 3, "{}", c.id);
        assert!(c.counters["events_per_run"] > 0.0, "{}", c.id);
        assert!(
            c.counters["expirations_per_run"] >= c.counters["events_per_run"],
            "{}",
            c.id
        );
        assert_eq!(c.series[0].points.len(), 3);
        assert!(out
            .derived
            .iter()
            .any(|d| d.id == format!("{}.per_event", c.id)));
    }
    for s in ["signal", "helper", "timerfd"] {
        let fit = &out.params["slope"][s];
        assert_eq!(fit["runs"], json!(3 + 3 * 2), "{s}: {fit}");
        let ci = fit["ci95_cycles"].as_array().unwrap();
        let v = fit["cycles_per_event"].as_f64().unwrap();
        assert!(ci[0].as_f64().unwrap() <= v && v <= ci[1].as_f64().unwrap());
    }
    assert!(out.cases.iter().any(|c| c.id == "tick.signal.2ms"));
}

/// One traced run per source at its shortest period (2 ms here), whose kernel time adds up
/// by part; or one line saying why there is none.
fn traced_runs_are_consistent(out: &ExperimentOutput, kernel: &[&Case]) {
    if out.params["kernel_view"] != "traced" {
        assert!(kernel.is_empty());
        assert_eq!(out.unavailable.len(), 1, "{out:?}");
        assert!(!out.unavailable[0].reason.contains('\n'));
        return;
    }
    let ids: Vec<&str> = kernel.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "tick.signal.2ms.kernel",
            "tick.helper.2ms.kernel",
            "tick.timerfd.2ms.kernel"
        ]
    );
    for c in kernel {
        let k = &c.counters;
        assert!(k["events"] >= 1.0, "{c:?}");
        assert!(!c.samples.per_op_ns.is_empty(), "{c:?}");
        let parts: f64 = kernel::PARTS
            .iter()
            .map(|(p, _)| k[&format!("{p}_ns_per_event")])
            .sum();
        assert!((parts - k["kernel_ns_per_event"]).abs() < 1e-6 * parts.max(1.0));
        let rest = k["lost_ns_per_event"] - k["kernel_ns_per_event"];
        assert!((rest - k["outside_ns_per_event"]).abs() < 1e-6 * rest.abs().max(1.0));
        if c.id.starts_with("tick.signal") {
            assert!(k["signals_per_event"] > 0.0, "{c:?}");
        }
    }
}

/// A period no machine keeps, asked for: refused from what the probe saw, before any
/// run, and the probe's timer or helper is gone.
#[test]
fn an_undeliverable_period_is_refused_and_leaves_nothing_armed() {
    if let Some(why) = oscost_sys::timer::fifo_refused(1) {
        return crate::skip::skip(&format!("needs SCHED_FIFO for the helper source: {why}"));
    }
    let _g = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let cancel = AtomicBool::new(false);
    for source in ["signal", "helper"] {
        let e = with_ctx(&cancel, |ctx| {
            run(
                &opts(&["--work", "10ms", "--periods", "1us", "--source", source]),
                ctx,
            )
            .unwrap_err()
        });
        let e = e.to_string();
        assert!(
            e.starts_with("--periods 1us: ") && e.contains("cannot keep that period"),
            "{e}"
        );
        assert!(nothing_left(), "{source}: {:?}", leftovers());
    }
}

/// Ctrl-C in the middle of the runs: the run stops with `Cancelled`, and no timer, helper
/// or timerfd is left.
#[test]
fn an_interrupted_run_leaves_nothing_armed() {
    let _g = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let cancel = AtomicBool::new(false);
    let e = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            cancel.store(true, Ordering::SeqCst);
        });
        with_ctx(&cancel, |ctx| {
            run(&opts(&["--work", "10ms", "--runs", "1000"]), ctx).unwrap_err()
        })
    });
    assert!(
        e.downcast_ref::<crate::context::Cancelled>().is_some(),
        "{e:#}"
    );
    assert!(nothing_left(), "{:?}", leftovers());
}

//! `compare` with the machine's controls: a machine that changed is said first and each
//! figure judged net of the control it moves with; a run without controls is judged as before.

mod common;
use common::scaled;
use oscost_model::{ControlKind, MachineControls, ResultDoc};
use oscost_report::compare::{self, Settings, Source, Verdict};
use std::path::PathBuf;

fn golden() -> ResultDoc {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/oscost-2.json");
    oscost_model::read(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Controls around every experiment: 24 samples spread ±2 % about `kernel` and `user` ns.
fn with_controls(mut doc: ResultDoc, kernel: f64, user: f64) -> ResultDoc {
    let spread = |base: f64| -> Vec<f64> {
        (0..24)
            .map(|i| base * (1.0 + (f64::from(i % 9) - 4.0) * 0.005))
            .collect()
    };
    for e in &mut doc.experiments {
        e.controls = Some(MachineControls {
            kernel_entry_ns: spread(kernel),
            user_loop_ns: spread(user),
            ..Default::default()
        });
    }
    doc
}

fn run(a: &ResultDoc, b: &ResultDoc) -> compare::Comparison {
    compare::compare(
        &[
            ("a".into(), Source::Measured(a)),
            ("b".into(), Source::Measured(b)),
        ],
        Settings::default(),
    )
    .pop()
    .unwrap()
}

fn row<'a>(c: &'a compare::Comparison, id: &str) -> &'a compare::Row {
    c.rows.iter().find(|r| r.id == id).unwrap()
}

#[test]
fn a_machine_slower_at_entering_the_kernel_is_said_and_the_figures_judged_net_of_it() {
    let mut a = with_controls(golden(), 100.0, 40_000.0);
    // B: the kernel entry 35 % slower, every kernel figure with it, user space as it was; one
    // figure slower by far more than the machine.
    let mut b = with_controls(golden(), 135.0, 40_000.0);
    for id in ["example.cost100", "example.cost250", "example-more.cost60"] {
        b = scaled(b, id, 1.35);
    }
    b = scaled(b, "example.cost400", 2.7);
    b.experiments[1].cases[1].control = ControlKind::UserLoop;
    a.experiments[1].cases[1].control = ControlKind::UserLoop;
    let c = run(&a, &b);
    let kernel = c
        .machine
        .iter()
        .find(|s| s.control == ControlKind::KernelEntry)
        .unwrap();
    assert!(
        kernel.moved && (kernel.ratio - 1.35).abs() < 0.01,
        "{kernel:?}"
    );
    let user = c
        .machine
        .iter()
        .find(|s| s.control == ControlKind::UserLoop)
        .unwrap();
    assert!(!user.moved, "{user:?}");
    // Raw: slower; net of the kernel entry: no difference.
    let moved_with = row(&c, "example.cost250");
    assert_eq!(moved_with.verdict, Verdict::Slower);
    let net = moved_with.net.as_ref().unwrap();
    assert_eq!(net.verdict, Verdict::NoDifference, "{net:?}");
    assert!((net.ratio - 1.0).abs() < 0.02);
    // Twice the machine's change: slower either way.
    let real = row(&c, "example.cost400").net.as_ref().unwrap();
    assert_eq!(real.verdict, Verdict::Slower);
    assert!((real.ratio - 2.0).abs() < 0.03, "{real:?}");
    // A user-space figure that did not move: divided by nothing.
    let user_row = row(&c, "example-more.cost150").net.as_ref().unwrap();
    assert_eq!(user_row.control, ControlKind::UserLoop);
    assert_eq!(user_row.control_ratio, 1.0);
    assert_eq!(user_row.verdict, Verdict::NoDifference);
    // Said first, in one line; the counts are the net verdicts; the table shows both.
    let text = compare::terminal_with(std::slice::from_ref(&c), Some(200));
    let said = text
        .lines()
        .position(|l| l.contains("The machine itself ran 35 % slower at entering the kernel"))
        .unwrap();
    let table = text
        .lines()
        .position(|l| l.contains("example.cost250"))
        .unwrap();
    assert!(said < table, "{text}");
    assert!(text.contains("unchanged at user-space work"), "{text}");
    assert!(text.contains("slower; net no difference"), "{text}");
    let t = compare::tally(&c);
    assert_eq!(t.get("slower"), Some(&1), "{t:?}");
    // The CSV carries the net figure; the JSON the controls.
    let csv = compare::csv(std::slice::from_ref(&c)).unwrap();
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .ends_with("net_ratio,net_verdict"));
    let json = compare::json(std::slice::from_ref(&c)).unwrap();
    assert!(json.contains("\"machine\"") && json.contains("\"kernel_entry\""));
}

/// `doc` with `kernel` ns of kernel entry between every experiment's rounds (12 samples, ±2 %),
/// its bursts left as they are.
fn with_during(mut doc: ResultDoc, kernel: f64, samples: usize) -> ResultDoc {
    for e in &mut doc.experiments {
        let c = e.controls.as_mut().unwrap();
        c.kernel_entry_during_ns = (0..samples)
            .map(|i| kernel * (1.0 + (i % 5) as f64 * 0.005))
            .collect();
        c.user_loop_during_ns = vec![40_000.0; samples];
    }
    doc
}

#[test]
fn a_machine_that_changed_between_the_bursts_is_judged_by_the_samples_between_rounds() {
    // The bursts before and after each experiment read alike in both runs, but between B's
    // rounds (when its figures were taken) the kernel entry was 35 % slower: that is the
    // machine the figures met, and the figures moved with it.
    let a = with_during(with_controls(golden(), 100.0, 40_000.0), 100.0, 12);
    let mut b = with_during(with_controls(golden(), 100.0, 40_000.0), 135.0, 12);
    for id in ["example.cost100", "example.cost250", "example-more.cost60"] {
        b = scaled(b, id, 1.35);
    }
    let c = run(&a, &b);
    let kernel = c
        .machine
        .iter()
        .find(|s| s.control == ControlKind::KernelEntry)
        .unwrap();
    assert!(
        kernel.moved && (kernel.ratio - 1.35).abs() < 0.01,
        "{kernel:?}"
    );
    let r = row(&c, "example.cost250");
    assert_eq!(r.verdict, Verdict::Slower);
    assert_eq!(r.net.as_ref().unwrap().verdict, Verdict::NoDifference);
    // Too few samples between one experiment's rounds on one side: its bursts stand for
    // both, and they held.
    let b_few = with_during(b.clone(), 135.0, 3);
    let c = run(&a, &b_few);
    assert_eq!(
        row(&c, "example.cost250").net.as_ref().unwrap().verdict,
        Verdict::Slower
    );
}

#[test]
fn a_control_that_moved_alone_makes_no_change_of_figures_that_held() {
    // Between B's rounds the kernel entry read 25 % faster (the machine caught in a passing
    // mode by the control's few samples), while every figure held: netted, each would read
    // 1.33x; no figure is called slower, the raw verdicts stand.
    let a = with_during(with_controls(golden(), 100.0, 40_000.0), 100.0, 12);
    let b = with_during(with_controls(golden(), 100.0, 40_000.0), 75.0, 12);
    let c = run(&a, &b);
    let r = row(&c, "example.cost250");
    let net = r.net.as_ref().unwrap();
    assert!(net.ratio > 1.3, "{net:?}");
    assert_eq!(net.verdict, r.verdict, "{r:?}");
    assert!(
        c.rows
            .iter()
            .all(|r| compare::counted(r) != Verdict::Slower),
        "{:?}",
        c.rows
    );
}

#[test]
fn controls_that_held_change_no_verdict() {
    let a = with_controls(golden(), 100.0, 40_000.0);
    let b = with_controls(scaled(golden(), "example.cost250", 1.3), 100.0, 40_000.0);
    let c = run(&a, &b);
    assert!(c.machine.iter().all(|s| !s.moved));
    for r in &c.rows {
        if let Some(n) = &r.net {
            assert_eq!(n.verdict, r.verdict, "{}", r.id);
            assert_eq!(n.control_ratio, 1.0);
        }
    }
    assert_eq!(row(&c, "example.cost250").verdict, Verdict::Slower);
    assert!(!compare::terminal(std::slice::from_ref(&c)).contains("The machine itself"));
}

#[test]
fn a_run_without_controls_is_judged_raw() {
    let a = golden();
    let b = with_controls(scaled(golden(), "example.cost250", 1.35), 135.0, 40_000.0);
    let c = run(&a, &b);
    assert!(c.machine.is_empty());
    assert!(c.rows.iter().all(|r| r.net.is_none()));
    assert_eq!(row(&c, "example.cost250").verdict, Verdict::Slower);
}

#[test]
fn controls_round_trip_through_the_document() {
    let a = with_controls(golden(), 100.0, 40_000.0);
    let text = serde_json::to_string(&a).unwrap();
    let back = oscost_model::read(&text).unwrap();
    assert_eq!(back.experiments[0].controls, a.experiments[0].controls);
    // A document without them still reads.
    let old = serde_json::to_string(&golden()).unwrap();
    assert!(oscost_model::read(&old).unwrap().experiments[0]
        .controls
        .is_none());
}

#[test]
fn the_change_line_after_a_run_names_only_the_control_that_moved() {
    let a = with_controls(golden(), 100.0, 40_000.0);
    let b = with_controls(scaled(golden(), "example.cost250", 1.35), 135.0, 40_000.0);
    let text = compare::since_last(&a, "abcd1234", &b, None, Some(200)).unwrap();
    assert!(
        text.contains("net of a machine that ran 35 % slower at entering the kernel, "),
        "{text}"
    );
    assert!(!text.contains("unchanged"), "{text}");
}

#[test]
fn the_change_line_after_a_run_takes_the_machine_s_run_to_run_spread() {
    // Four earlier runs where one figure swung by ±25–30 %: a 1.3× change of it is within what
    // this machine does between runs, so it is not called slower once the spread is in.
    let earlier: Vec<ResultDoc> = [0.75, 1.3, 0.8, 1.25]
        .iter()
        .map(|&f| scaled(golden(), "example.cost250", f))
        .collect();
    let spread = compare::spread_of(&earlier);
    let (a, b) = (golden(), scaled(golden(), "example.cost250", 1.3));
    let without = compare::since_last(&a, "abcd1234", &b, None, Some(200)).unwrap();
    assert!(without.contains("1 slower"), "{without}");
    let with = compare::since_last(&a, "abcd1234", &b, Some(&spread), Some(200)).unwrap();
    assert!(
        with.contains("(with the spread of 4 earlier runs)"),
        "{with}"
    );
    assert!(
        !with.contains("slower,") && !with.contains("1 slower"),
        "{with}"
    );
}

#[test]
fn a_machine_that_moved_by_under_3_percent_is_not_news_in_the_change_line() {
    let a = with_controls(golden(), 100.0, 40_000.0);
    let b = with_controls(golden(), 102.0, 40_000.0);
    // compare still sees the move and nets of it ...
    let c = run(&a, &b);
    assert!(
        c.machine
            .iter()
            .any(|s| s.control == ControlKind::KernelEntry && s.moved),
        "{:?}",
        c.machine
    );
    // ... but the line a run ends on does not make news of it.
    let text = compare::since_last(&a, "abcd1234", &b, None, Some(200)).unwrap();
    assert!(!text.contains("machine itself"), "{text}");
}

/// `doc` with each experiment's kernel-entry bursts at its own level: experiment `i` before
/// at `levels[i].0` ns and after at `levels[i].1` (12 samples each, ±1 %), user space steady.
fn wandering(mut doc: ResultDoc, levels: &[(f64, f64)]) -> ResultDoc {
    let burst = |base: f64| (0..12).map(move |i| base * (1.0 + f64::from(i % 3 - 1) * 0.01));
    for (e, &(before, after)) in doc.experiments.iter_mut().zip(levels.iter().cycle()) {
        e.controls = Some(MachineControls {
            kernel_entry_ns: burst(before).chain(burst(after)).collect(),
            user_loop_ns: vec![40_000.0; 24],
            ..Default::default()
        });
    }
    doc
}

#[test]
fn with_too_few_earlier_runs_the_machine_s_wander_within_the_runs_stands_for_the_spread() {
    // Kernel entry wandering 85–125 ns from burst to burst within each run: a figure 20 %
    // slower in B is within what this machine does between two moments, so not a verdict.
    let levels = [(100.0, 125.0), (85.0, 110.0)];
    let a = wandering(golden(), &levels);
    let b = wandering(scaled(golden(), "example.cost250", 1.2), &levels);
    let raw = run(&a, &b);
    assert_eq!(row(&raw, "example.cost250").verdict, Verdict::Slower);
    let w = compare::wander_of(&a, &b).unwrap();
    // Each run's four bursts about their run's mean, pooled: both runs alike, so one run's sd.
    let logs = [100f64, 125.0, 85.0, 110.0].map(f64::ln);
    let mean = logs.iter().sum::<f64>() / 4.0;
    let sd = (logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 3.0).sqrt();
    assert!(
        (w.kernel_entry - sd).abs() < 1e-12 && w.user_loop == 0.0,
        "{w:?}"
    );
    assert_eq!(w.bursts, 2 * 2 * 2 * a.experiments.len());
    let mut c = run(&a, &b);
    compare::with_spread(&mut c, &compare::RunSpread::default().or_wander(&a, &b));
    let r = row(&c, "example.cost250");
    assert_ne!(r.net.as_ref().unwrap().verdict, Verdict::Slower, "{r:?}");
    assert_eq!(c.spread_wander, Some(w));
    assert!(c.spread_rows > 0 && c.spread_runs.is_none());
    let text = compare::terminal(std::slice::from_ref(&c));
    assert!(text.contains("wandered within A and B"), "{text}");
    let line = compare::since_last(&a, "abcd1234", &b, None, Some(200)).unwrap();
    assert!(line.contains("with the machine's own wander"), "{line}");
    assert!(!line.contains("1 slower"), "{line}");

    // A steady machine: the wander is near nothing, and a change beyond it is still one.
    let steady = [(100.0, 100.5), (99.5, 100.0)];
    let (a, b) = (
        wandering(golden(), &steady),
        wandering(scaled(golden(), "example.cost250", 1.2), &steady),
    );
    let line = compare::since_last(&a, "abcd1234", &b, None, Some(200)).unwrap();
    assert!(line.contains("1 slower"), "{line}");
    // Earlier runs enough: their spread is used, the wander its floor. Three earlier runs
    // that agreed exactly leave a steady machine's change a change ...
    let earlier = vec![golden(), golden(), golden()];
    let s = compare::spread_of(&earlier).or_wander(&a, &b);
    let mut c = run(&a, &b);
    compare::with_spread(&mut c, &s);
    assert_eq!(c.spread_runs, Some(3));
    assert_eq!(row(&c, "example.cost250").verdict, Verdict::Slower);
    // ... and on a wandering one the figure's spread is no narrower than the wander.
    let (a, b) = (
        wandering(golden(), &levels),
        wandering(scaled(golden(), "example.cost250", 1.2), &levels),
    );
    let s = compare::spread_of(&earlier).or_wander(&a, &b);
    let mut c = run(&a, &b);
    compare::with_spread(&mut c, &s);
    assert_eq!((c.spread_runs, c.spread_wander), (Some(3), None));
    assert_ne!(row(&c, "example.cost250").verdict, Verdict::Slower);
}

#[test]
fn a_figure_that_moved_further_than_its_machine_but_within_three_times_is_not_called() {
    // The kernel entry 25 % slower; one figure 1.6x (twice the entry's change on the log
    // scale, as heavier kernel paths move), one 2.5x (beyond three times: 1.25^3 is 1.95).
    let a = with_controls(golden(), 100.0, 40_000.0);
    let mut b = with_controls(golden(), 125.0, 40_000.0);
    b = scaled(b, "example.cost250", 1.6);
    b = scaled(b, "example.cost400", 2.5);
    let c = run(&a, &b);
    let heavier = row(&c, "example.cost250");
    assert_eq!(heavier.verdict, Verdict::Slower);
    let net = heavier.net.as_ref().unwrap();
    assert!((net.ratio - 1.28).abs() < 0.01, "{net:?}");
    assert!(net.span_ci95[0] < 1.0, "{net:?}");
    assert_eq!(net.verdict, Verdict::TooFewSamples, "{net:?}");
    let beyond = row(&c, "example.cost400").net.as_ref().unwrap();
    assert!(beyond.span_ci95[0] > 1.0, "{beyond:?}");
    assert_eq!(beyond.verdict, Verdict::Slower, "{beyond:?}");
}

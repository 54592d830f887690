//! The bill's assembly and rendering on fixed bills, and the fixture other views' tests use.

use super::*;
use oscost_model::bill::{CallLine, Events, FaultCounts, Mechanism, Sched, TaskLine, Usage};

pub(crate) fn fixture() -> Bill {
    let call = |name: &str, count: u64, ns: u64| CallLine {
        name: name.into(),
        nr: 0,
        count,
        errors: Some(0),
        time_ns: Some(ns),
        median_ns: Some(ns as f64 / count as f64),
        p99_ns: None,
        price: None,
    };
    Bill {
        target: Target::Command {
            argv: vec!["prog".into(), "x".into()],
        },
        under: None,
        wall_ns: 10_000_000,
        ending: Ending::Exited(0),
        mechanism: Mechanism {
            name: Counter::Bpf,
            depth: CallDepth::Time,
            refused: None,
            missing: vec![],
        },
        probe_cost: None,
        usage: Some(Usage {
            source: "getrusage".into(),
            user_ns: 2_000_000,
            system_ns: 6_000_000,
            minor_faults: 100,
            major_faults: 0,
            voluntary: 10,
            involuntary: 0,
            max_rss_kib: 0,
            first_task_wait_ns: None,
        }),
        calls: vec![
            call("getppid", 10_000, 3_000_000),
            call("read", 10, 1_000_000),
        ],
        faults_user: FaultCounts {
            write_missing: 100,
            ..FaultCounts::default()
        },
        faults_kernel: FaultCounts::default(),
        sched: Some(Sched {
            voluntary: 10,
            involuntary: 0,
            wakeups: 10,
            oncpu_ns: 8_000_000,
            wait_ns: 500_000,
            blocked_ns: 1_500_000,
            wake_latency_p50_ns: Some(1000.0),
            wake_latency_p99_ns: Some(5000.0),
            cross_cpu_wakeups: None,
        }),
        interrupts: vec![],
        events: Events::default(),
        tasks: vec![TaskLine {
            tid: 1,
            pid: 1,
            comm: "prog".into(),
            lifetime_ns: 10_000_000,
            oncpu_ns: 8_000_000,
            wait_ns: 500_000,
            blocked_ns: 1_500_000,
            calls: 10_010,
            call_ns: 4_000_000,
            faults: 100,
            irq_ns: 0,
            voluntary: 10,
            involuntary: 0,
        }],
        task_time_ns: 10_000_000,
        parts: vec![],
        residual_ns: 0.0,
        explained_pct: 0.0,
        prices_from: None,
        prices: vec![],
        checks: vec![],
        notes: vec![],
    }
}

pub(crate) fn doc_with(cases: &[(&str, f64)]) -> ResultDoc {
    use crate::views::testkit;
    let cases = cases
        .iter()
        .map(|(id, ns)| {
            let mut c = testkit::case(id, "call", *ns);
            c.ci95_ns = [ns * 0.98, ns * 1.02];
            c
        })
        .collect();
    testkit::doc(vec![testkit::experiment("syscall", cases)])
}

#[test]
fn the_parts_sum_to_the_task_time_and_prices_multiply_counts() {
    let mut b = fixture();
    let mut book = PriceBook::default();
    book.add_run(
        &doc_with(&[
            ("syscall.getppid", 300.0),
            ("syscall.enosys", 100.0),
            ("fault.anon-write", 1000.0),
        ]),
        "run1",
    );
    assert_eq!(book.runs, ["run1"]);
    assemble(&mut b, Some(&book), Some("run1".into()));
    let top: f64 = b
        .parts
        .iter()
        .filter(|p| p.level == 0)
        .map(|p| p.time_ns)
        .sum();
    assert!((top + b.residual_ns - 10_000_000.0).abs() < 1e-6);
    assert!(
        (b.explained_pct - 100.0).abs() < 1e-9,
        "{}",
        b.explained_pct
    );
    // user : kernel in getrusage's 1 : 3 of the probe's 8 ms on a CPU.
    assert_eq!(b.parts[0].time_ns, 2_000_000.0);
    assert_eq!(b.parts[1].time_ns, 6_000_000.0);
    let getppid = b.parts.iter().find(|p| p.name == "getppid").unwrap();
    assert_eq!(getppid.priced_ns, Some(3_000_000.0));
    let read = b.parts.iter().find(|p| p.name == "read").unwrap();
    assert_eq!(read.priced_ns, Some(1000.0));
    assert!(read.price.as_ref().unwrap().floor);
    let rest = b
        .parts
        .iter()
        .find(|p| p.name.starts_with("faults"))
        .unwrap();
    assert_eq!(rest.time_ns, 6_000_000.0 - 4_000_000.0);
    assert_eq!(rest.priced_ns, Some(100_000.0));
    // 300 ns a call here, 300 on the datasheet: no note.
    assert!(b.notes.is_empty(), "{:?}", b.notes);
    let text = render(&b, 80);
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    assert!(text.contains("bill of prog x"), "{text}");
    assert!(text.contains("explained 100.0 %"), "{text}");
    assert!(text.contains("≥1.000 µs"), "{text}");
}

#[test]
fn a_call_dearer_than_its_price_is_named() {
    let mut b = fixture();
    let mut book = PriceBook::default();
    book.add_run(&doc_with(&[("syscall.getppid", 150.0)]), "run1");
    assemble(&mut b, Some(&book), None);
    assert_eq!(b.notes.len(), 2, "{:?}", b.notes);
    assert!(
        b.notes[0].starts_with("faults without a price"),
        "{:?}",
        b.notes
    );
    assert!(b.notes[1].starts_with("getppid: 300.0 ns a call here against 150.0 ns"));
}

#[test]
fn without_a_price_nothing_is_priced() {
    let mut b = fixture();
    assemble(&mut b, None, Some("none".into()));
    assert!(b.parts.iter().all(|p| p.priced_ns.is_none()));
    assert!(render(&b, 80).contains("prices: none"));
}

#[test]
fn a_tick_sampled_split_never_puts_less_in_the_kernel_than_the_probe_timed() {
    // Every tick of a short run landed in user mode: getrusage says 0 system time, the
    // probe timed 4 ms of system calls.
    let mut b = fixture();
    let u = b.usage.as_mut().unwrap();
    (u.user_ns, u.system_ns) = (8_000_000, 0);
    assemble(&mut b, None, None);
    assert_eq!(b.parts[0].time_ns, 4_000_000.0, "user CPU");
    assert_eq!(b.parts[1].time_ns, 4_000_000.0, "kernel CPU");
    // A part of the task's time is none of it at least and all of it at most.
    let task = b.task_time_ns as f64;
    assert!(
        b.parts.iter().all(|p| (0.0..=task).contains(&p.time_ns)),
        "{:?}",
        b.parts
    );
    assert!((b.explained_pct - 100.0).abs() < 1e-9);
}

#[test]
fn the_pages_tables_and_figures_hold_every_part() {
    let mut b = fixture();
    assemble(&mut b, None, None);
    let v = views(&b);
    assert_eq!(v[0].title, "The bill of prog x");
    // Each part, then the residual and the task time.
    assert_eq!(v[0].rows.len(), b.parts.len() + 2);
    assert!(v[0].rows.iter().all(|r| r.len() == v[0].head.len()));
    assert_eq!(v.last().unwrap().title, "Its checks");
    let plots = crate::plot::bill::plots(&b);
    let names: Vec<&str> = plots.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["bill.split", "bill.top"]);
    assert!(plots[0].svg.contains("user CPU") && plots[0].svg.contains("blocked"));
    assert!(plots[1].svg.contains("getppid") && plots[1].svg.contains("read"));
}

/// The fixture as perf counts it: calls by name, no times, no switches, no tasks.
fn perf_fixture() -> Bill {
    let mut b = fixture();
    b.mechanism.name = Counter::Perf;
    b.mechanism.depth = CallDepth::Count;
    b.sched = None;
    b.tasks.clear();
    for c in &mut b.calls {
        (c.time_ns, c.median_ns, c.errors) = (None, None, None);
    }
    b
}

#[test]
fn a_bill_counted_by_perf_shows_counts_and_prices_but_no_call_times() {
    let mut b = perf_fixture();
    assemble(&mut b, None, None);
    let text = render(&b, 80);
    assert!(text.contains("counted in the kernel by perf"), "{text}");
    let getppid = text.lines().find(|l| l.contains("getppid")).expect(&text);
    assert!(
        getppid.contains("10 000") && getppid.contains('—'),
        "{getppid}"
    );
    // Faults: the kernel's own count, as perf has none.
    let rest = text
        .lines()
        .find(|l| l.contains("calls, faults"))
        .expect(&text);
    assert!(rest.contains("100"), "{rest}");
}

#[test]
fn without_the_probes_switches_the_first_tasks_wait_is_the_kernels() {
    let mut b = perf_fixture();
    assemble(&mut b, None, None);
    let unexplained = b.residual_ns;
    assert!(!b.parts.iter().any(|p| p.name.starts_with("waiting")));

    b.usage.as_mut().unwrap().first_task_wait_ns = Some(1_500_000);
    assemble(&mut b, None, None);
    let w = b
        .parts
        .iter()
        .find(|p| p.name.starts_with("waiting"))
        .unwrap();
    assert_eq!((w.level, w.count, w.time_ns), (0, None, 1.5e6));
    assert_eq!(b.residual_ns, unexplained - 1.5e6);
}

#[test]
fn calls_counted_without_the_kernels_accounting_are_still_shown() {
    // An attached process that ended before its counters were read again: no CPU known.
    let mut b = perf_fixture();
    b.usage = None;
    assemble(&mut b, None, None);
    let text = render(&b, 80);
    let getppid = text.lines().find(|l| l.contains("getppid")).expect(&text);
    assert!(
        getppid.contains("10 000") && getppid.contains('—'),
        "{getppid}"
    );
    assert!(!text.contains("user CPU"), "{text}");
    let parts: f64 = b
        .parts
        .iter()
        .filter(|p| p.level == 0)
        .map(|p| p.time_ns)
        .sum();
    assert_eq!(parts + b.residual_ns, b.task_time_ns as f64);
}

#[test]
fn a_short_perf_bill_puts_the_counters_cost_in_the_kernel_even_when_the_ticks_did_not() {
    let mut b = perf_fixture();
    if let Some(u) = b.usage.as_mut() {
        (u.user_ns, u.system_ns) = (2_000_000, 0);
    }
    b.probe_cost = Some(oscost_model::bill::ProbeCost {
        per_call_ns: 100.0,
        range_ns: [90.0, 110.0],
        bare_call_ns: 50.0,
        in_window_ns: 0.0,
        total_ns: 1_001_000.0,
        setup_ns: 0,
    });
    for c in &mut b.calls {
        (c.time_ns, c.median_ns, c.errors) = (None, None, None);
    }
    assemble(&mut b, None, None);
    let time = |name: &str| {
        b.parts
            .iter()
            .find(|p| p.name.starts_with(name))
            .unwrap()
            .time_ns
    };
    assert_eq!(time("kernel CPU"), 1_001_000.0);
    assert_eq!(time("user CPU"), 999_000.0);
    assert!(b.parts.iter().all(|p| p.time_ns >= 0.0), "{:?}", b.parts);
}

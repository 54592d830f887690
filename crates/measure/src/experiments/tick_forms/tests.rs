use super::*;
use crate::context::testing::{tiny_sampler, with_ctx};
use std::collections::BTreeSet;

fn opts(args: &[&str]) -> Options {
    use clap::{Args, FromArgMatches};
    let cmd = Options::augment_args(clap::Command::new("t").no_binary_name(true));
    Options::from_arg_matches(&cmd.try_get_matches_from(args).unwrap()).unwrap()
}

fn refused(args: &[&str]) -> String {
    use clap::Args;
    let cmd = Options::augment_args(clap::Command::new("t").no_binary_name(true));
    cmd.try_get_matches_from(args).unwrap_err().to_string()
}

#[test]
fn ids_name_form_policy_and_period() {
    assert_eq!(
        case_id(Form::Threads, Policy::Rr, Some(200_000)),
        "tick-forms.threads.rr.200us"
    );
    assert_eq!(
        case_id(Form::Single, Policy::Other, None),
        "tick-forms.single.other.none"
    );
    assert_eq!(
        case_id(Form::Processes, Policy::Fifo, Some(9_200)),
        "tick-forms.processes.fifo.9200ns"
    );
    assert_eq!(switch_id(Kind::Processes), "tick-forms.switch.processes");
}

#[test]
fn bad_values_are_refused_by_the_parser() {
    assert!(refused(&["--tasks", "0"]).contains("from 1 to 256"));
    assert!(refused(&["--periods", "0us"]).contains("below 1us"));
    assert!(refused(&["--periods", "0"]).contains("no unit"));
    assert!(refused(&["--rounds", "0"]).contains("rounds"));
    assert!(refused(&["--policies", "deadline"]).contains("deadline"));
}

#[test]
fn a_period_too_long_for_the_work_is_refused_before_anything_runs() {
    let cpus = vec![oscost_sys::affinity().unwrap()[0]];
    let e = with_ctx(tiny_sampler(), cpus, false, |ctx| {
        run(&opts(&["--work", "5ms", "--periods", "1ms"]), ctx)
    })
    .unwrap_err();
    assert!(e.to_string().contains("fewer than 10 events"), "{e}");
}

/// A tiny grid: every id present once, events counted at the periodic points and none at
/// the undisturbed ones, switches counted, the work summed to W, the switch cases there.
#[test]
fn a_tiny_grid_is_complete_and_self_consistent() {
    if let Some(why) = oscost_sys::timer::fifo_refused(1) {
        return crate::skip::skip(&format!("needs SCHED_FIFO for the helper: {why}"));
    }
    let cpus = vec![oscost_sys::affinity().unwrap()[0]];
    let o = opts(&[
        "--work",
        "10ms",
        "--periods",
        "1ms,200us",
        "--rounds",
        "2",
        "--tasks",
        "3",
    ]);
    let out = with_ctx(tiny_sampler(), cpus, false, |ctx| run(&o, ctx)).unwrap();
    let units = out.params["work_units"].as_f64().unwrap();
    let measured: Vec<Policy> = [Policy::Other, Policy::Fifo, Policy::Rr]
        .into_iter()
        .filter(|p| {
            !out.unavailable
                .iter()
                .any(|u| u.id == case_id(Form::Single, *p, None))
        })
        .collect();
    assert!(measured.contains(&Policy::Other));
    let ids: BTreeSet<&str> = out.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids.len(), out.cases.len(), "duplicate ids");
    for form in [Form::Single, Form::Threads, Form::Processes] {
        for &policy in &measured {
            for period in [None, Some(1_000_000), Some(200_000)] {
                let id = case_id(form, policy, period);
                let c = out
                    .cases
                    .iter()
                    .find(|c| c.id == id)
                    .unwrap_or_else(|| panic!("{id} missing"));
                assert_eq!(c.unit, "run");
                assert_eq!(c.samples.per_op_ns.len(), 2, "{id}");
                assert!(c.samples.per_op_ns.iter().all(|&t| t > 0.0), "{id}");
                assert_eq!(c.counters["work_units"], units, "{id}");
                assert!(c.counters["cycles"] > 0.0, "{id}");
                let done = c.checks.iter().find(|k| k.name == "work_units_done");
                assert!(done.is_some_and(|k| k.passed), "{id}: {:?}", c.checks);
                if period.is_some() {
                    assert!(c.counters["events"] > 0.0, "{id}");
                    assert!(c.counters["switches"] > 0.0, "{id}: {:?}", c.counters);
                    assert!(out.derived.iter().any(|d| d.id == format!("{id}.extra")));
                } else {
                    assert_eq!(c.counters["events"], 0.0, "{id}");
                }
                if form != Form::Single {
                    let k = c.checks.iter().find(|k| k.name == "distinct_tasks");
                    assert!(k.is_some_and(|k| k.passed), "{id}: {:?}", c.checks);
                }
            }
        }
    }
    for kind in Kind::ALL {
        let c = out
            .cases
            .iter()
            .find(|c| c.id == switch_id(kind))
            .expect("switch case");
        assert_eq!(c.unit, "switch");
        assert!(c.samples.per_op_ns.iter().all(|&t| t > 0.0));
        assert!(
            c.counters["switches_per_handover"] > 0.5,
            "{:?}",
            c.counters
        );
        assert!(out.derived.iter().any(|d| d.id == format!("{}.cost", c.id)));
    }
    assert!(out.cases.iter().any(|c| c.id == control_id()));
}

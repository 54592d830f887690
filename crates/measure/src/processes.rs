//! A figure drawn from several processes. On some machines a process keeps one of two costs
//! for an operation for its whole life (a page fault of ~620 or ~790 ns, by where its memory
//! landed), so a figure from one process is one draw of two. An experiment that says so
//! ([`crate::engine::Experiment::processes`]) runs in that many measuring processes one after
//! another, each taking its share of the samples, and their outputs are merged here: each
//! case's samples joined, each process's median kept, and two modes said where they appear:
//! between the processes, or, where the cost switches between two levels within a process's
//! life, among the samples themselves.

use crate::engine::fmt_ns;
use oscost_model::case::{Case, Check, ExperimentOutput};
use oscost_model::{Message, MessageKind};
use oscost_stats::modes::{sample_modes, two_modes, ProcessMedian};

/// Fewest samples a process takes: enough for its median's 95 % interval.
pub const MIN_SAMPLES_PER_PROCESS: usize = 8;

/// Processes to draw `samples` from when `wanted` are asked for: as many as keep
/// [`MIN_SAMPLES_PER_PROCESS`] each, at least one.
pub fn processes_for(wanted: usize, samples: usize) -> usize {
    wanted.min(samples / MIN_SAMPLES_PER_PROCESS).max(1)
}

/// Each process's share of `samples` over `processes`.
pub fn samples_each(samples: usize, processes: usize) -> usize {
    samples.div_ceil(processes.max(1))
}

fn push_unique(into: &mut Vec<Message>, more: &[Message]) {
    for m in more {
        if !into.contains(m) {
            into.push(m.clone());
        }
    }
}

/// One check of a name from every process: a failed one if any failed, else the first.
fn merge_checks(all: &[&[Check]]) -> Vec<Check> {
    let mut out: Vec<Check> = Vec::new();
    for checks in all {
        for c in *checks {
            match out.iter_mut().find(|o| o.name == c.name) {
                Some(o) if o.passed && !c.passed => *o = c.clone(),
                Some(_) => {}
                None => out.push(c.clone()),
            }
        }
    }
    out
}

/// One case from its copies in several processes (in the order they ran).
fn merge_case(copies: &[&Case]) -> Case {
    let mut case = copies[0].clone();
    case.samples.per_op_ns = copies
        .iter()
        .flat_map(|c| c.samples.per_op_ns.iter().copied())
        .collect();
    case.samples.per_op_ticks = copies
        .iter()
        .flat_map(|c| c.samples.per_op_ticks.iter().copied())
        .collect();
    // Counters are per operation or per sample in every experiment that splits: their mean
    // over the processes.
    for (key, value) in case.counters.iter_mut() {
        let v: Vec<f64> = copies
            .iter()
            .filter_map(|c| c.counters.get(key))
            .copied()
            .collect();
        *value = v.iter().sum::<f64>() / v.len() as f64;
    }
    let checks: Vec<&[Check]> = copies.iter().map(|c| c.checks.as_slice()).collect();
    case.checks = merge_checks(&checks);
    for c in &copies[1..] {
        push_unique(&mut case.warnings, &c.warnings);
        push_unique(&mut case.notes, &c.notes);
    }
    let medians: Vec<ProcessMedian> = copies
        .iter()
        .filter_map(|c| ProcessMedian::of(&c.samples.per_op_ns))
        .collect();
    case.process_medians_ns = medians.iter().map(|m| m.median).collect();
    if let Some(m) = two_modes(&medians) {
        case.warnings.push(Message::new(
            MessageKind::ProcessModes,
            format!(
                ": {} of {} processes at {}, {} at {} (a process keeps its mode for its life); \
                 the median mixes them",
                m.low.len(),
                medians.len(),
                fmt_ns(m.low_median),
                m.high.len(),
                fmt_ns(m.high_median)
            ),
        ));
    } else if let Some(m) = sample_modes(&case.samples.per_op_ns) {
        case.warnings.push(Message::new(
            MessageKind::SampleModes,
            format!(
                ": {} of {} samples at {}, {} at {} (within its processes, not a level each \
                 process keeps); the median mixes them",
                m.low,
                m.low + m.high,
                fmt_ns(m.low_median),
                m.high,
                fmt_ns(m.high_median)
            ),
        ));
    }
    case
}

/// The outputs of one experiment's processes, merged: a case measured in several processes
/// becomes one, its samples joined in the order the processes ran; the rest (unavailable
/// cases, derived figures, parameters, controls) is the first process's, and warnings and
/// notes are every process's, each once.
pub fn merge(outputs: Vec<ExperimentOutput>) -> Option<ExperimentOutput> {
    let mut iter = outputs.iter();
    let first = iter.next()?;
    let mut merged = first.clone();
    merged.cases = first
        .cases
        .iter()
        .map(|c| {
            let copies: Vec<&Case> = outputs
                .iter()
                .filter_map(|o| o.cases.iter().find(|d| d.id == c.id))
                .collect();
            merge_case(&copies)
        })
        .collect();
    for o in iter {
        push_unique(&mut merged.warnings, &o.warnings);
        push_unique(&mut merged.notes, &o.notes);
    }
    Some(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use oscost_model::case::Samples;

    fn case(id: &str, samples: &[f64], faults: f64, passed: bool) -> Case {
        let mut c = Case::new(
            id,
            "a fault",
            "page",
            Samples {
                per_op_ns: samples.to_vec(),
                per_op_ticks: samples.iter().map(|s| s * 2.0).collect(),
                iterations_per_sample: 512,
                loop_overhead_ns: 1.0,
            },
        );
        c.counters.insert("minor_faults_per_op".into(), faults);
        c.checks.push(Check {
            name: "faults".into(),
            expected: 1.0,
            counted: faults,
            passed,
            detail: String::new(),
            bound: None,
        });
        c
    }

    fn output(cases: Vec<Case>) -> ExperimentOutput {
        ExperimentOutput {
            cases,
            unavailable: Vec::new(),
            derived: Vec::new(),
            warnings: Vec::new(),
            notes: Vec::new(),
            params: Default::default(),
            controls: None,
        }
    }

    /// Samples around `centre`, ±1 %.
    fn around(centre: f64) -> Vec<f64> {
        (0..10)
            .map(|i| centre * (0.99 + 0.002 * i as f64))
            .collect()
    }

    #[test]
    fn copies_join_their_samples_and_two_modes_are_said() {
        let centres = [620.0, 790.0, 618.0, 792.0, 622.0];
        let outs: Vec<ExperimentOutput> = centres
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                output(vec![case(
                    "fault.anon-read",
                    &around(c),
                    1.0 + i as f64,
                    i != 3,
                )])
            })
            .collect();
        let m = merge(outs).unwrap();
        let c = &m.cases[0];
        assert_eq!(c.samples.per_op_ns.len(), 50);
        assert_eq!(c.samples.per_op_ns[10], around(790.0)[0]);
        assert_eq!(c.process_medians_ns.len(), 5);
        // The mean of 1..=5.
        assert_eq!(c.counters["minor_faults_per_op"], 3.0);
        // One check of the name, the failed one.
        assert_eq!(c.checks.len(), 1);
        assert!(!c.checks[0].passed);
        let w: Vec<String> = c.warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("the processes fell into two modes: 3 of 5 processes at"),
            "{w:?}"
        );
        assert!(w[0].contains("2 at 79"), "{w:?}");
    }

    #[test]
    fn a_machine_switching_within_every_process_is_said_as_two_modes_of_samples() {
        // Each process's samples half at ~620, half at ~790: alike medians, two modes within.
        let outs: Vec<ExperimentOutput> = (0..5)
            .map(|_| {
                let mut v = around(620.0);
                v.extend(around(790.0));
                output(vec![case("fault.anon-read", &v, 1.0, true)])
            })
            .collect();
        let m = merge(outs).unwrap();
        let w: Vec<String> = m.cases[0].warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("the samples fell into two modes: 50 of 100 samples at 619 ns"),
            "{w:?}"
        );
        assert!(w[0].contains("50 at 789 ns"), "{w:?}");
    }

    #[test]
    fn one_mode_is_merged_without_a_word_and_the_split_keeps_enough_samples() {
        let outs: Vec<ExperimentOutput> = (0..5)
            .map(|_| output(vec![case("fault.anon-write", &around(1000.0), 1.0, true)]))
            .collect();
        let m = merge(outs).unwrap();
        assert!(m.cases[0].warnings.is_empty());
        assert!(merge(Vec::new()).is_none());
        assert_eq!(processes_for(5, 81), 5);
        assert_eq!(processes_for(5, 10), 1);
        assert_eq!(processes_for(5, 24), 3);
        assert_eq!(samples_each(81, 5), 17);
    }
}

//! `timeline`'s cases from its rounds: each worker's time slices, latency and throughput, the
//! CPU shares against what the nice values give, and the checks on them.

use super::rounds::{Applied, Chunk, Round};
use super::{case_id, Options, Plan, MIN_SLICES_FOR_SHARES, SHARE_TOLERANCE_PCT};
use crate::cpuset;
use oscost_model::case::{Case, Check, Samples, Series};
use oscost_model::{Message, MessageKind};
use oscost_stats::sched::{
    predicted_shares, preemptions, slices_ns, weight, SliceRule, IDLE_WEIGHT,
};
use oscost_sys::clock::Clock;
use oscost_sys::task::Kind;
use oscost_sys::timeline::Sched;
use serde_json::json;

pub(super) fn ms(ns: f64) -> String {
    format!("{:.2} ms", ns / 1e6)
}

// ---------------------------------------------------------------------------------------
// The cases.

pub(super) fn p95(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    oscost_stats::percentile(&s, 95.0)
}

pub(super) fn samples(ns: Vec<f64>, clock: &Clock, per_sample: u64) -> Samples {
    Samples {
        per_op_ticks: ns.iter().map(|&v| clock.ns_to_ticks(v)).collect(),
        per_op_ns: ns,
        iterations_per_sample: per_sample,
        loop_overhead_ns: 0.0,
    }
}

/// The case of `n` workers (total time / N per round, with every figure of the view), its
/// latency case (every worker's finish time in every round) and its own-latency case (every
/// worker's time from its own start to its finish in every round, the study's latency).
pub(super) fn cases(
    opts: &Options,
    plan: &Plan,
    clock: &Clock,
    n: usize,
    rounds: &[Round],
    rule: &SliceRule,
    chunk: &Chunk,
) -> [Case; 3] {
    let id = case_id(opts, n, plan.nice.as_deref());
    let kind = opts.kind.name();
    let cpus = cpuset::format(&plan.cpus);
    let totals: Vec<f64> = rounds.iter().map(Round::total_ns).collect();
    let chunk_text = if chunk.given_in_iterations {
        format!(
            "{} iterations (about {} µs here)",
            chunk.iterations, chunk.us
        )
    } else {
        format!("{} µs", opts.chunk_us)
    };
    let mut main = Case::new(
        id.clone(),
        format!(
            "{n} {kind} of {} chunks of {chunk_text} on CPU {cpus}: total time / {n} (1 / \
             throughput)",
            opts.chunks
        ),
        "worker",
        samples(
            totals.iter().map(|t| t / n as f64).collect(),
            clock,
            n as u64,
        ),
    )
    .param("workers", n as u64)
    .param("kind", kind)
    .param("policy", opts.policy.name())
    .param("chunks", opts.chunks as u64)
    .param("cpus", json!(plan.cpus))
    .param("rounds", rounds.len() as u64);
    // A chunk given in iterations has no time asked for; its count is the parameter.
    if chunk.given_in_iterations {
        main.params
            .insert("chunk_iterations".into(), json!(chunk.iterations));
    } else {
        main.params.insert("chunk_us".into(), json!(opts.chunk_us));
    }
    let nice: Vec<Option<i32>> = rounds
        .first()
        .map(|r| r.applied.iter().map(|a| a.nice).collect())
        .unwrap_or_default();
    main.params.insert("nice".into(), json!(nice));
    main.params
        .insert("expected_slice".into(), json!(rule.how.clone()));
    let c = &mut main.counters;
    c.insert("total_ns".into(), oscost_stats::median(&totals));
    c.insert(
        "throughput_workers_per_s".into(),
        oscost_stats::median(
            &totals
                .iter()
                .map(|t| n as f64 / t * 1e9)
                .collect::<Vec<_>>(),
        ),
    );
    let finishes: Vec<Vec<f64>> = rounds.iter().map(Round::finishes_ns).collect();
    c.insert(
        "latency_avg_ns".into(),
        oscost_stats::median(
            &finishes
                .iter()
                .map(|f| f.iter().sum::<f64>() / n as f64)
                .collect::<Vec<_>>(),
        ),
    );
    for w in 0..n {
        let of = |f: &Vec<f64>| f.get(w).copied().unwrap_or(f64::NAN);
        c.insert(
            format!("latency_worker{}_ns", w + 1),
            oscost_stats::median(&finishes.iter().map(of).collect::<Vec<_>>()),
        );
    }
    c.insert(
        "chunk_cpu_ns".into(),
        oscost_stats::median(
            &rounds
                .iter()
                .flat_map(|r| r.chunk_cpu_ns.iter().copied())
                .collect::<Vec<_>>(),
        ),
    );
    // Slices, pooled over the rounds; on several CPUs the workers run side by side and the
    // trace's interleaving says nothing about turns.
    let one_cpu = plan.cpus.len() == 1;
    let slices: Vec<f64> = if one_cpu {
        rounds.iter().flat_map(|r| slices_ns(&r.ends_ns)).collect()
    } else {
        Vec::new()
    };
    c.insert("turns_counted".into(), slices.len() as f64);
    if !slices.is_empty() {
        c.insert("slice_median_ns".into(), oscost_stats::median(&slices));
        c.insert("slice_p95_ns".into(), p95(&slices));
    }
    if let Some(e) = rule.expected_ns {
        c.insert("expected_slice_ns".into(), e);
    }
    add_shares(&mut main, opts, plan, n, rounds, rule);
    add_checks(&mut main, opts, n, rounds, one_cpu);
    main.series.push(trace_series(rounds, &totals));
    let mut finish_all: Vec<f64> = finishes.into_iter().flatten().collect();
    finish_all.retain(|v| v.is_finite());
    let latency = Case::new(
        oscost_model::ids::timeline::reading(&id, oscost_model::ids::timeline::Reading::Latency),
        format!(
            "{n} {kind} on CPU {cpus}: each worker's finish time from the common start (its \
             latency)"
        ),
        "worker",
        samples(finish_all, clock, 1),
    )
    .param("workers", n as u64)
    .param("kind", kind)
    .param("policy", opts.policy.name());
    [
        main,
        latency,
        own_latency_case(opts, clock, n, rounds, &id, &cpus),
    ]
}

/// The study's latency: each worker's time from its own first progress record (just before
/// its first chunk) to its last; samples every worker of every round, counters the average
/// over the workers and each worker's, medians over the rounds.
pub(super) fn own_latency_case(
    opts: &Options,
    clock: &Clock,
    n: usize,
    rounds: &[Round],
    id: &str,
    cpus: &str,
) -> Case {
    let kind = opts.kind.name();
    let own: Vec<Vec<f64>> = rounds.iter().map(Round::own_latencies_ns).collect();
    let mut all: Vec<f64> = own.iter().flatten().copied().collect();
    all.retain(|v| v.is_finite());
    let mut case = Case::new(
        oscost_model::ids::timeline::reading(id, oscost_model::ids::timeline::Reading::OwnLatency),
        format!(
            "{n} {kind} on CPU {cpus}: each worker's time from its own start (before its first \
             chunk) to its finish (the study's latency)"
        ),
        "worker",
        samples(all, clock, 1),
    )
    .param("workers", n as u64)
    .param("kind", kind)
    .param("policy", opts.policy.name());
    let c = &mut case.counters;
    c.insert(
        "own_latency_avg_ns".into(),
        oscost_stats::median(
            &own.iter()
                .map(|v| v.iter().sum::<f64>() / n as f64)
                .collect::<Vec<_>>(),
        ),
    );
    for w in 0..n {
        let of = |v: &Vec<f64>| v.get(w).copied().unwrap_or(f64::NAN);
        c.insert(
            format!("own_latency_worker{}_ns", w + 1),
            oscost_stats::median(&own.iter().map(of).collect::<Vec<_>>()),
        );
    }
    case
}

/// Measured shares (median over the rounds) beside the predicted ones, checked ±2 points.
pub(super) fn add_shares(
    case: &mut Case,
    opts: &Options,
    plan: &Plan,
    n: usize,
    rounds: &[Round],
    rule: &SliceRule,
) {
    if n < 2 {
        return;
    }
    let shares: Vec<Vec<f64>> = rounds.iter().map(Round::shares_pct).collect();
    let measured: Vec<f64> = (0..n)
        .map(|w| oscost_stats::median(&shares.iter().map(|s| s[w]).collect::<Vec<_>>()))
        .collect();
    let common =
        oscost_stats::median(&rounds.iter().map(|r| r.first_finish_ns).collect::<Vec<_>>());
    case.counters.insert("all_runnable_ns".into(), common);
    for (w, m) in measured.iter().enumerate() {
        case.counters
            .insert(format!("share_worker{}_pct", w + 1), *m);
    }
    let nice: Option<Vec<i32>> = match &plan.nice {
        Some(v) => Some(v.clone()),
        None => rounds
            .first()
            .and_then(|r| r.applied.iter().map(|a| a.nice).collect()),
    };
    let predicted = if plan.cpus.len() > 1 {
        case.notes.push(Message::new(
            MessageKind::NoSharePredicted,
            format!(
                ": the workers had {} CPUs (--spread), and the weights share one CPU",
                plan.cpus.len()
            ),
        ));
        None
    } else {
        nice.as_deref()
            .and_then(|v| predicted_shares(opts.policy.rule(), v))
    };
    let Some(predicted) = predicted else {
        return;
    };
    let mut miss: f64 = 0.0;
    for (w, (&p, &m)) in predicted.iter().zip(&measured).enumerate() {
        case.counters
            .insert(format!("share_predicted_worker{}_pct", w + 1), p);
        miss = miss.max((m - p).abs());
    }
    // The kernel keeps each share within about a slice of its weight at any moment, so a share
    // over a few slices says nothing about the weights: it is compared only over enough.
    let slice = rule.expected_ns.filter(|s| *s > 0.0);
    if let Some(slice) = slice.filter(|s| common < MIN_SLICES_FOR_SHARES * s) {
        case.warnings.push(Message::from(format!(
            "shares not compared with the weights: the workers were all runnable for only {} \
             ({:.1} slices of {}), and a share says something about the weights only over at \
             least {MIN_SLICES_FOR_SHARES:.0} slices; give more --chunks or a longer --chunk-us",
            ms(common),
            common / slice,
            ms(slice)
        )));
        return;
    }
    let pairs: Vec<String> = measured
        .iter()
        .zip(&predicted)
        .map(|(m, p)| format!("{m:.1} % vs {p:.1} %"))
        .collect();
    case.checks.push(Check::near(
        "largest_share_miss_pct",
        0.0,
        miss,
        SHARE_TOLERANCE_PCT,
        &format!(
            "the largest gap, in percentage points, between a worker's measured and predicted \
             CPU share ({}). Measured: its CPU time from its start until the first worker \
             finished (every CPU clock read at that instant), over all the workers' (median of \
             {} rounds); predicted: its weight under {} with nice {:?} (sched_prio_to_weight) \
             over the sum; bound {SHARE_TOLERANCE_PCT} points",
            pairs.join(", "),
            rounds.len(),
            opts.policy.sys().kernel_name(),
            nice.as_deref().unwrap_or_default()
        ),
    ));
    let unequal = predicted.iter().any(|p| (p - predicted[0]).abs() > 1e-9);
    // Equal weights take turns slice by slice; unequal ones can be a slice off at the end.
    if let Some(slice) = slice.filter(|_| unequal) {
        let spread_pct = slice / common * 100.0;
        if spread_pct > SHARE_TOLERANCE_PCT {
            case.warnings.push(Message::from(format!(
                "the workers were all runnable for only {} ({:.0} slices of {}): shares over \
                 so few slices can miss the kernel's weights by about a slice ({spread_pct:.1} \
                 points); for a ±{SHARE_TOLERANCE_PCT}-point comparison give more --chunks \
                 (e.g. --chunks 500)",
                ms(common),
                common / slice,
                ms(slice)
            )));
        }
    }
}

/// The mechanism checks: the kernel shows every worker with the policy and weight asked
/// for, in one autogroup, and counted at least every switch the trace shows.
pub(super) fn add_checks(
    case: &mut Case,
    opts: &Options,
    n: usize,
    rounds: &[Round],
    one_cpu: bool,
) {
    let p = opts.policy.sys();
    let readings: Vec<&Applied> = rounds.iter().flat_map(|r| r.applied.iter()).collect();
    if readings.iter().all(|a| a.policy.is_some()) {
        let expected_weight = |a: &Applied| -> Option<u64> {
            match p {
                Sched::Idle => Some(u64::from(IDLE_WEIGHT)),
                Sched::Other | Sched::Batch => a.nice.and_then(weight).map(u64::from),
                Sched::Rr | Sched::Fifo => None,
            }
        };
        // The kernel prints weights scaled by 1024 on 64-bit kernels.
        let weight_ok = |a: &Applied| match (expected_weight(a), a.weight) {
            (None, _) => true,
            (Some(e), Some(w)) => w == e || w == e << 10,
            (Some(_), None) => false,
        };
        let ok = readings
            .iter()
            .filter(|a| a.policy == Some(p.number()) && weight_ok(a))
            .count();
        case.checks.push(Check::near(
            "workers_as_requested",
            readings.len() as f64,
            ok as f64,
            0.0,
            &format!(
                "workers whose `policy` and `se.load.weight` in /proc/<pid>/sched, read after \
                 their settings and before the start, are {} (policy {}) and the weight of their \
                 nice value ({} readings: every worker of every round)",
                p.kernel_name(),
                p.number(),
                readings.len()
            ),
        ));
    } else {
        case.warnings.push(
            "the workers' policy and weight could not be read from /proc/<pid>/sched, so \
             whether the kernel applied them is not checked"
                .into(),
        );
    }
    let groups: std::collections::BTreeSet<&str> = readings
        .iter()
        .filter_map(|a| a.autogroup.as_deref())
        .collect();
    if opts.kind == Kind::Processes && !groups.is_empty() {
        case.checks.push(Check::near(
            "autogroups_of_workers",
            1.0,
            groups.len() as f64,
            0.0,
            "distinct /proc/<pid>/autogroup lines of the workers (one session, one autogroup, \
             so nice values compete with each other instead of being hidden inside groups)",
        ));
    }
    let shown: usize = rounds.iter().map(|r| preemptions(&r.ends_ns)).sum();
    let counted: u64 = rounds.iter().flat_map(|r| r.involuntary.iter()).sum();
    if n >= 2 && one_cpu {
        case.counters
            .insert("involuntary_switches".into(), counted as f64);
        case.checks.push(Check::at_least(
            "involuntary_switches_vs_turns",
            shown as f64,
            counted as f64,
            0.0,
            &format!(
                "involuntary switches the kernel counted (getrusage nivcsw of every worker from \
                 its start to its last chunk) against the switches between workers the traces \
                 show ({shown} over {} rounds): each turn that did not end its worker is a \
                 preemption, so the count must be at least that",
                rounds.len()
            ),
        ));
    }
}

/// The trace of the median round (by total time): (elapsed_ns, worker, chunk) in time order,
/// workers and chunks counted from 1, times in whole ns.
pub(super) fn trace_series(rounds: &[Round], totals: &[f64]) -> Series {
    let mut order: Vec<usize> = (0..rounds.len()).collect();
    order.sort_by(|&a, &b| totals[a].total_cmp(&totals[b]));
    let pick = order.get(order.len().saturating_sub(1) / 2).copied();
    let mut points: Vec<Vec<f64>> = Vec::new();
    if let Some(r) = pick.and_then(|i| rounds.get(i)) {
        for (w, row) in r.ends_ns.iter().enumerate() {
            for (c, &t) in row.iter().enumerate() {
                points.push(vec![t.round(), (w + 1) as f64, (c + 1) as f64]);
            }
        }
        points.sort_by(|a, b| a[0].total_cmp(&b[0]).then(a[1].total_cmp(&b[1])));
    }
    Series {
        name: "trace".into(),
        columns: vec!["elapsed_ns".into(), "worker".into(), "chunk".into()],
        points,
    }
}

//! Two hidden experiments that run only on the scripted clock (`oscost --scripted`): chosen
//! costs pushed through the real sampler, so tests can drive the whole path (command line,
//! measuring process, summaries, every renderer) and pin the output, on any machine.
//!
//! `example` (and `example-more`, at other costs) yields every shape a result can take: plain
//! cases, a passed and a failed check, a derived figure and a flagged one, an unavailable case,
//! a series, warnings. `example-fails` fails on purpose, to show that what ran before it is
//! kept.

use crate::context::Context;
use crate::engine;
use crate::sampler::{counting_threads, measure, single_task_check};
use crate::timesource::Scripted;
use oscost_model::case::{Case, Check, DerivedSpec, ExperimentOutput, Series, Unavailable};
use oscost_model::ExperimentId;

/// Subcommand name.
pub const NAME: &str = ExperimentId::Example.as_str();

/// Options of the hidden `oscost example`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// Cost of the cheap case, scripted ticks (ns) per operation
    #[arg(long, default_value_t = 100)]
    pub cost: u64,
}

/// Options of the hidden `oscost example-more`: the same shapes at other costs, so one
/// document can hold several experiments.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct More {
    /// Cost of the cheap case, scripted ticks (ns) per operation
    #[arg(long, default_value_t = 60)]
    pub cost: u64,
}

/// Options of the hidden `oscost example-fails`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct Failing {}

fn scripted<'a>(ctx: &'a Context) -> anyhow::Result<&'a Scripted> {
    ctx.clock.scripted().ok_or_else(|| {
        anyhow::anyhow!("the example experiments run only on the scripted clock (--scripted)")
    })
}

/// Samples an operation that costs `cost` ticks plus a deterministic wobble of 0..=15, so
/// samples differ a little and the statistics have something to do.
fn sample(ctx: &Context, clock: &Scripted, name: &str, cost: u64) -> anyhow::Result<Case> {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let (measured, threads) = counting_threads(|| {
        measure(ctx, || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            clock.spend(cost + (state >> 60));
        })
    });
    let (samples, warnings) = measured?;
    let mut case = Case::new(
        format!("{name}.cost{cost}"),
        format!("a scripted operation of {cost} ticks and a wobble of up to 15"),
        "op",
        samples,
    )
    .param("cost_ticks", cost);
    case.checks.extend(single_task_check(threads));
    case.add_messages(warnings);
    Ok(case)
}

/// Three cases, two derived figures (one flagged), an unavailable case, a series, warnings.
fn every_shape(ctx: &Context, name: &str, cost: u64) -> anyhow::Result<ExperimentOutput> {
    let clock = scripted(ctx)?;
    let mut out = ExperimentOutput::default();
    out.params.insert("rate_per_s".into(), 10_000.0.into());
    ctx.progress.start(3, name);
    let cheap = sample(ctx, clock, name, cost)?;
    ctx.progress.inc(1);
    let mut dear = sample(ctx, clock, name, cost * 5 / 2)?;
    dear.checks.push(Check::near(
        "events_per_op",
        1.0,
        1.0,
        0.05,
        "a scripted count that agrees with what was claimed",
    ));
    dear.series.push(Series {
        name: "trace".into(),
        columns: vec!["step".into(), "ticks".into()],
        points: (0..4).map(|i| vec![i as f64, (i * i) as f64]).collect(),
    });
    ctx.progress.inc(1);
    let mut wrong = sample(ctx, clock, name, cost * 4)?;
    wrong.checks.push(Check::near(
        "events_per_op",
        2.0,
        1.5,
        0.05,
        "a scripted count that disagrees with what was claimed",
    ));
    wrong.warnings.push("a scripted warning on one case".into());
    ctx.progress.inc(1);
    ctx.progress.finish();
    let flagged = engine::failed_checks(&wrong);
    out.derived.push(DerivedSpec {
        id: format!("{name}.difference"),
        description: "the dearer case minus the cheap one".into(),
        terms: vec![(dear.id.clone(), 1.0), (cheap.id.clone(), -1.0)],
        flagged: None,
    });
    out.derived.push(DerivedSpec {
        id: format!("{name}.flagged_difference"),
        description: "a figure built on a case whose check failed".into(),
        terms: vec![(wrong.id.clone(), 1.0), (cheap.id.clone(), -1.0)],
        flagged,
    });
    out.cases.extend([cheap, dear, wrong]);
    out.unavailable.push(Unavailable {
        id: format!("{name}.missing"),
        description: "a case this machine cannot measure".into(),
        reason: "the scripted machine lacks it".into(),
    });
    out.warnings
        .push("a scripted warning on the whole experiment".into());
    Ok(out)
}

impl engine::Experiment for Options {
    const ID: ExperimentId = ExperimentId::Example;
    const SUMMARY: &'static str = "Scripted costs on the scripted clock (tests only)";
    const ABOUT: &'static str = "Scripted costs on the scripted clock (tests only).";
    const IN_DEFAULT_SUITE: bool = false;
    const HIDDEN: bool = true;

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        every_shape(ctx, NAME, self.cost)
    }
}

impl engine::Experiment for More {
    const ID: ExperimentId = ExperimentId::ExampleMore;
    const SUMMARY: &'static str = "The example's shapes at other costs (tests only)";
    const ABOUT: &'static str = "The example's shapes at other costs (tests only).";
    const IN_DEFAULT_SUITE: bool = false;
    const HIDDEN: bool = true;

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        every_shape(ctx, Self::ID.as_str(), self.cost)
    }
}

impl engine::Experiment for Failing {
    const ID: ExperimentId = ExperimentId::ExampleFails;
    const SUMMARY: &'static str = "Fails on purpose after a scripted case (tests only)";
    const ABOUT: &'static str = "Fails on purpose after a scripted case (tests only).";
    const IN_DEFAULT_SUITE: bool = false;
    const HIDDEN: bool = true;

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        let clock = scripted(ctx)?;
        sample(ctx, clock, Self::ID.as_str(), 10)?;
        anyhow::bail!("example-fails failed on purpose after measuring")
    }
}

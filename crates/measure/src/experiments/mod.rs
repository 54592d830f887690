//! The registry of experiments, in display order.
//!
//! Each experiment is one module whose `Options` type implements [`Experiment`]. Adding one is a
//! new file plus one line in the `registry!` call below (and its `pub mod`).

use crate::context::Context;
use crate::limits::Limits;
use clap::builder::TypedValueParser as _;
use clap::FromArgMatches;
use oscost_model::case::{Case, ExperimentOutput};
use oscost_sys::ipc::Via;
use oscost_sys::task::Kind;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub mod example;
pub mod fault;
pub mod fs;
pub mod lockring;
pub mod mmap;
pub mod noise;
pub mod primitives;
pub mod ring;
pub mod shootdown;
pub mod spawn;
pub mod split;
pub mod switch;
pub mod syscall;
pub mod tick;
pub mod tick_forms;
pub mod timeline;

/// Each value once, in the order first given: a repeated value would produce two cases with
/// one id.
pub(crate) fn first_occurrences<T: Copy + PartialEq>(values: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(values.len());
    for &v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// Task counts from `--tasks` (ring sizes, split's N).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TaskList(pub Vec<usize>);

/// Parses `5`, `2,4,16` or `2..1024` (powers of two from 2 up to 1024; both ends included).
/// Only the syntax is checked here; `run` checks the values so the message names the flag.
pub(crate) fn parse_tasks(s: &str) -> Result<TaskList, String> {
    let num = |t: &str| {
        t.trim()
            .parse::<usize>()
            .map_err(|_| format!("`{s}` is not a list like `2,4,16` or a range like `2..1024`"))
    };
    if let Some((a, b)) = s.split_once("..") {
        let (a, b) = (num(a)?, num(b)?);
        if a == 0 || a > b {
            return Err(format!("`{s}`: a range needs 1 <= start <= end"));
        }
        let mut v = Vec::new();
        let mut n = a;
        while n < b {
            v.push(n);
            n = n.saturating_mul(2);
        }
        v.push(b);
        return Ok(TaskList(v));
    }
    let sizes: Vec<usize> = s.split(',').map(num).collect::<Result<_, _>>()?;
    Ok(TaskList(first_occurrences(&sizes)))
}

/// A time with its unit (`5s`, `300ms`, `49us`, `9.2µs`, `500ns`), in ns.
pub fn parse_time(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "" => return Err(format!("`{s}` has no unit: add one, e.g. 5s, 300ms, 49us")),
        _ => {
            return Err(format!(
                "`{s}` is not a time (a number and one of ns, us, ms, s)"
            ))
        }
    };
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v * scale < 1e13 => Ok((v * scale).round() as u64),
        _ => Err(format!(
            "`{s}` is not a time (a number and one of ns, us, ms, s)"
        )),
    }
}

/// A run length: above 0, at most an hour.
pub(crate) fn parse_duration(s: &str) -> Result<u64, String> {
    match parse_time(s)? {
        0 => Err(format!("`{s}` is not a duration above 0 (e.g. 5s, 300ms)")),
        ns if ns > 3_600_000_000_000 => Err(format!("`{s}` is longer than an hour")),
        ns => Ok(ns),
    }
}

/// The command-line spelling of an option value, which is also its part of a case id.
pub(crate) fn value_name<T: clap::ValueEnum>(value: &T) -> String {
    value
        .to_possible_value()
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default()
}

/// Why a case's derived figure cannot be trusted: its failed checks, or `None`.
pub(crate) fn failed_checks(case: &Case) -> Option<String> {
    let failed: Vec<String> = case
        .checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| {
            format!(
                "{} counted {:.3}, expected {}",
                c.name, c.counted, c.expected
            )
        })
        .collect();
    (!failed.is_empty()).then(|| format!("{}: {}", case.id, failed.join("; ")))
}

/// Parses the kinds of [`Via`] for clap, listing each with its summary in `--help`.
pub(crate) fn via_parser() -> impl clap::builder::TypedValueParser<Value = Via> {
    let names = Via::ALL
        .into_iter()
        .map(|v| clap::builder::PossibleValue::new(v.name()).help(v.summary()));
    clap::builder::PossibleValuesParser::new(names)
        .map(|s| Via::from_name(&s).expect("clap accepted only known names"))
}

/// Parses the kinds of [`Kind`] for clap, listing each with its summary in `--help`.
pub(crate) fn kind_parser() -> impl clap::builder::TypedValueParser<Value = Kind> {
    let names = Kind::ALL
        .into_iter()
        .map(|k| clap::builder::PossibleValue::new(k.name()).help(k.summary()));
    clap::builder::PossibleValuesParser::new(names)
        .map(|s| Kind::from_name(&s).expect("clap accepted only known names"))
}

/// What every experiment is: its options (clap arguments whose defaults are the experiment's
/// stand-alone size, serialisable so a fresh measuring process can be handed them), its names,
/// and how it runs. The compiler checks each experiment against it.
pub trait Experiment:
    clap::Args + FromArgMatches + Serialize + DeserializeOwned + Clone + std::fmt::Debug
{
    /// Subcommand name and case-id prefix.
    const NAME: &'static str;
    /// One line for `oscost list` and `--help`.
    const SUMMARY: &'static str;
    /// The paragraph of `oscost NAME --help`.
    const ABOUT: &'static str;
    /// Whether `oscost run` with no names runs it.
    const IN_DEFAULT_SUITE: bool;
    /// The arguments a suite run (`oscost run`) gives it, when its stand-alone default is too
    /// large for a suite.
    const SUITE_ARGS: &'static [&'static str] = &[];
    /// The arguments `oscost --quick` gives it on top of its `--quick` size: what a quick look
    /// at the whole suite leaves out (the kernel's traced passes, which would double it).
    const QUICK_SUITE_ARGS: &'static [&'static str] = &[];
    /// Hidden from `oscost list`, `--help` and the default suite (the scripted examples).
    const HIDDEN: bool = false;
    /// The measuring process starts with glibc's cache of thread stacks off, so a joined
    /// thread's stack is unmapped at once. An experiment that forks after it has run threads
    /// needs it: every cached stack is two mappings a fork must copy and an exit tear down,
    /// which made forks after a 1024-thread point several times slower.
    const NO_THREAD_STACK_CACHE: bool = false;

    /// Measures, handing up raw samples and evidence; never a made-up figure.
    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput>;

    /// Checks, before any experiment of the run starts measuring, that what this one will
    /// need at its largest (open files, tasks, memory mappings, memory) fits the machine's
    /// `limits`: an error is one line naming the limit, what the run needs and how to raise
    /// it. `quick` is `--quick`. Options that `run` would refuse are left to it.
    fn preflight(&self, quick: bool, limits: &Limits) -> anyhow::Result<()> {
        let _ = (quick, limits);
        Ok(())
    }
}

/// One value of a `--multi-threaded` list: a case to measure again with one idle extra thread,
/// or `none` (`Mt(None)`), which turns the variants off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mt<T>(pub Option<T>);

/// Parses one value of a `--multi-threaded` list; an unknown name lists the choices.
pub(crate) fn parse_mt<T: clap::ValueEnum>(s: &str, what: &str) -> Result<Mt<T>, String> {
    if s == "none" {
        return Ok(Mt(None));
    }
    T::from_str(s, false).map(|v| Mt(Some(v))).map_err(|_| {
        let names: Vec<String> = T::value_variants().iter().map(value_name).collect();
        format!("`{s}` is not a {what} (one of: none, {})", names.join(", "))
    })
}

/// The values of a `--multi-threaded` list that are among `measured`, each once; none when
/// the list says `none` anywhere.
pub(crate) fn pick_mt<T: Copy + PartialEq>(list: &[Mt<T>], measured: &[T]) -> Vec<T> {
    if list.iter().any(|m| m.0.is_none()) {
        return Vec::new();
    }
    let named: Vec<T> = list.iter().filter_map(|m| m.0).collect();
    first_occurrences(&named)
        .into_iter()
        .filter(|v| measured.contains(v))
        .collect()
}

/// What `oscost list` shows of an experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExperimentInfo {
    /// Subcommand name and id prefix.
    pub name: &'static str,
    /// One line.
    pub summary: &'static str,
    /// Whether `oscost run` with no names runs it.
    pub in_default_suite: bool,
    /// Hidden from `oscost list` and `--help` (tests only).
    pub hidden: bool,
}

/// An experiment's options from `args`, every other flag at its default (the suite's sizes,
/// and the experiments' tests).
pub(crate) fn defaults<T: Experiment>(args: &[&str]) -> T {
    let cmd = T::augment_args(clap::Command::new("defaults").no_binary_name(true));
    let matches = cmd
        .try_get_matches_from(args)
        .expect("every experiment option has a default and suite arguments parse");
    T::from_arg_matches(&matches).expect("defaults parse")
}

/// Checks a sweep of ring sizes (`ring`, `lockring`): one size at least, each from 2 to
/// `max_tasks`, and fewer tokens than the smallest ring. `(ring, members)` name the ring and
/// its tasks in the messages; `no_token` says why zero tokens are refused.
pub(crate) fn check_ring_sweep(
    sizes: &[usize],
    tokens: usize,
    max_tasks: usize,
    (ring, members): (&str, &str),
    no_token: &str,
) -> anyhow::Result<()> {
    let (Some(&min), Some(&max)) = (sizes.iter().min(), sizes.iter().max()) else {
        anyhow::bail!("--tasks: no ring size given");
    };
    if min < 2 {
        anyhow::bail!("--tasks {min}: {ring} needs at least 2 {members}");
    }
    if max > max_tasks {
        anyhow::bail!("--tasks {max}: at most {max_tasks} {members}");
    }
    if tokens == 0 {
        anyhow::bail!("--tokens 0: {no_token}");
    }
    if tokens >= min {
        anyhow::bail!(
            "--tokens {tokens}: must be less than the number of {members} (smallest --tasks: \
             {min})"
        );
    }
    Ok(())
}

macro_rules! registry {
    ($($variant:ident => $options:ty),* $(,)?) => {
        /// One subcommand per experiment, holding its options.
        #[derive(Debug, Clone, clap::Subcommand, Serialize, Deserialize)]
        pub enum ExperimentArgs {
            $(
                #[doc = concat!("The `", stringify!($variant), "` experiment.")]
                #[command(
                    name = <$options as Experiment>::NAME,
                    about = <$options as Experiment>::SUMMARY,
                    long_about = <$options as Experiment>::ABOUT,
                    hide = <$options as Experiment>::HIDDEN
                )]
                $variant($options),
            )*
        }

        /// Every registered experiment, in display order.
        pub const REGISTRY: &[ExperimentInfo] = &[
            $(ExperimentInfo {
                name: <$options as Experiment>::NAME,
                summary: <$options as Experiment>::SUMMARY,
                in_default_suite: <$options as Experiment>::IN_DEFAULT_SUITE,
                hidden: <$options as Experiment>::HIDDEN,
            },)*
        ];

        impl ExperimentArgs {
            /// The experiment's name.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => <$options as Experiment>::NAME,)*
                }
            }

            /// Whether its measuring process must start with glibc's thread-stack cache off
            /// (see [`Experiment::NO_THREAD_STACK_CACHE`]).
            pub fn no_thread_stack_cache(&self) -> bool {
                match self {
                    $(Self::$variant(_) => <$options as Experiment>::NO_THREAD_STACK_CACHE,)*
                }
            }

            /// Runs the experiment.
            pub fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
                match self {
                    $(Self::$variant(o) => o.run(ctx),)*
                }
            }

            /// Checks the experiment's needs against the machine's limits before the run
            /// measures anything (see [`Experiment::preflight`]).
            pub fn preflight(&self, quick: bool, limits: &Limits) -> anyhow::Result<()> {
                match self {
                    $(Self::$variant(o) => o.preflight(quick, limits),)*
                }
            }

            /// The experiment called `name` at its suite size (`oscost run`).
            pub fn with_defaults(name: &str) -> Option<ExperimentArgs> {
                Self::in_suite(name, false)
            }

            /// The experiment called `name` as a suite runs it: at its suite size, or with
            /// `quick` at its own `--quick` size less what a quick suite leaves out, so that
            /// `oscost --quick` is every experiment's quick look (the suite sizes are larger).
            pub fn in_suite(name: &str, quick: bool) -> Option<ExperimentArgs> {
                $(if name == <$options as Experiment>::NAME {
                    let args = if quick {
                        <$options as Experiment>::QUICK_SUITE_ARGS
                    } else {
                        <$options as Experiment>::SUITE_ARGS
                    };
                    return Some(Self::$variant(defaults::<$options>(args)));
                })*
                None
            }
        }
    };
}

registry! {
    Syscall => syscall::Options,
    Fs => fs::Options,
    Primitives => primitives::Options,
    Switch => switch::Options,
    Ring => ring::Options,
    Lockring => lockring::Options,
    Split => split::Options,
    Spawn => spawn::Options,
    Fault => fault::Options,
    Mmap => mmap::Options,
    Shootdown => shootdown::Options,
    Timeline => timeline::Options,
    Tick => tick::Options,
    TickForms => tick_forms::Options,
    Noise => noise::Options,
    Example => example::Options,
    ExampleMore => example::More,
    ExampleFails => example::Failing,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quick_suite_runs_each_experiment_at_its_quick_size() {
        // The suite's own sizes are given as options, which --quick would not shrink.
        let Some(ExperimentArgs::Noise(suite)) = ExperimentArgs::in_suite(noise::NAME, false)
        else {
            panic!("noise")
        };
        assert_eq!(suite.duration_ns, Some(1_000_000_000));
        let Some(ExperimentArgs::Noise(quick)) = ExperimentArgs::in_suite(noise::NAME, true) else {
            panic!("noise")
        };
        assert_eq!(quick.duration_ns, None);
        let Some(ExperimentArgs::Ring(quick)) = ExperimentArgs::in_suite(ring::NAME, true) else {
            panic!("ring")
        };
        assert!(quick.tasks.is_none());
        assert!(ExperimentArgs::in_suite("nosuch", true).is_none());
    }

    #[test]
    fn names_are_unique_well_formed_and_documented() {
        let mut seen = std::collections::BTreeSet::new();
        for e in REGISTRY {
            assert!(seen.insert(e.name), "duplicate {}", e.name);
            assert!(e.name.chars().all(|c| c.is_ascii_lowercase() || c == '-'));
            assert!(!e.summary.is_empty());
            assert!(ExperimentArgs::with_defaults(e.name).is_some());
            let doc = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/methodology.md");
            let text = std::fs::read_to_string(doc).expect("docs/methodology.md");
            assert!(
                e.hidden || text.contains(&format!("## `{}`", e.name)),
                "{} undocumented",
                e.name
            );
            assert!(
                !(e.hidden && e.in_default_suite),
                "{} hidden but in the suite",
                e.name
            );
        }
    }
}

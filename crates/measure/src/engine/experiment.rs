//! What an experiment is (the [`Experiment`] trait), what `oscost list` shows of it, and the
//! `registry!` macro that turns the list of experiments into the command line's subcommands.

use crate::context::Context;
use crate::limits::Limits;
use clap::FromArgMatches;
use oscost_model::case::ExperimentOutput;
use oscost_model::ExperimentId;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// What every experiment is: its options (clap arguments whose defaults are the experiment's
/// stand-alone size, serialisable so a fresh measuring process can be handed them), which
/// experiment it is, and how it runs. The compiler checks each experiment against it.
pub trait Experiment:
    clap::Args + FromArgMatches + Serialize + DeserializeOwned + Clone + std::fmt::Debug
{
    /// Which experiment: its name (`ID.as_str()`) is the subcommand and the case-id prefix.
    const ID: ExperimentId;
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
    /// Whether it warms up by a count of untimed runs rather than for `--warmup`'s time, when
    /// it takes the sampler's options (what `--warmup`'s help lists follow).
    const WARMS_UP_BY_COUNT: bool = false;

    /// Measures, handing up raw samples and evidence; never a made-up figure.
    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput>;

    /// Measuring processes to draw the samples from, one after another (see
    /// [`crate::processes`]): more than one where a process keeps its own level of cost.
    fn processes(&self) -> usize {
        1
    }

    /// Checks, before any experiment of the run starts measuring, that what this one will
    /// need at its largest (open files, tasks, memory mappings, memory) fits the machine's
    /// `limits`: an error is one line naming the limit, what the run needs and how to raise
    /// it. `quick` is `--quick`. Options that `run` would refuse are left to it.
    fn preflight(&self, quick: bool, limits: &Limits) -> anyhow::Result<()> {
        let _ = (quick, limits);
        Ok(())
    }
}

/// What `oscost list` shows of an experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExperimentInfo {
    /// Which experiment.
    pub id: ExperimentId,
    /// Subcommand name and id prefix (`id.as_str()`).
    pub name: &'static str,
    /// One line.
    pub summary: &'static str,
    /// Whether `oscost run` with no names runs it.
    pub in_default_suite: bool,
    /// Hidden from `oscost list` and `--help` (tests only).
    pub hidden: bool,
    /// Warms up by a count of untimed runs, not for `--warmup`'s time.
    pub warms_up_by_count: bool,
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

/// Builds, from `Variant => options type` pairs, the `ExperimentArgs` subcommand enum (one
/// variant per experiment, dispatching to its [`Experiment`] impl) and the `REGISTRY` list.
///
/// Each `Variant` is an [`ExperimentId`] variant too, and the compiler holds the two together:
/// an `ExperimentId` left out is a non-exhaustive match, an options type whose `ID` is not its
/// variant or a list out of `ExperimentId::ALL`'s order fails a constant assertion.
macro_rules! registry {
    ($($variant:ident => $options:ty),* $(,)?) => {
        // Every experiment registered, none twice: a missing or repeated variant fails here.
        const _: fn(oscost_model::ExperimentId) = |id| match id {
            $(oscost_model::ExperimentId::$variant => {})*
        };

        // Each options type is its variant's experiment, and the list is in display order.
        const _: () = {
            $(assert!(
                matches!(
                    <$options as $crate::engine::Experiment>::ID,
                    oscost_model::ExperimentId::$variant
                ),
                concat!(stringify!($options), "::ID is not ExperimentId::", stringify!($variant))
            );)*
            let all = oscost_model::ExperimentId::ALL;
            assert!(REGISTRY.len() == all.len());
            let mut i = 0;
            while i < all.len() {
                assert!(
                    REGISTRY[i].id as usize == all[i] as usize,
                    "registry! lists the experiments in ExperimentId::ALL's order"
                );
                i += 1;
            }
        };

        /// One subcommand per experiment, holding its options.
        #[derive(Debug, Clone, clap::Subcommand, serde::Serialize, serde::Deserialize)]
        pub enum ExperimentArgs {
            $(
                #[doc = concat!("The `", stringify!($variant), "` experiment.")]
                #[command(
                    name = <$options as $crate::engine::Experiment>::ID.as_str(),
                    about = <$options as $crate::engine::Experiment>::SUMMARY,
                    long_about = <$options as $crate::engine::Experiment>::ABOUT,
                    hide = <$options as $crate::engine::Experiment>::HIDDEN
                )]
                $variant($options),
            )*
        }

        /// Every registered experiment, in display order.
        pub const REGISTRY: &[$crate::engine::ExperimentInfo] = &[
            $($crate::engine::ExperimentInfo {
                id: <$options as $crate::engine::Experiment>::ID,
                name: <$options as $crate::engine::Experiment>::ID.as_str(),
                summary: <$options as $crate::engine::Experiment>::SUMMARY,
                in_default_suite: <$options as $crate::engine::Experiment>::IN_DEFAULT_SUITE,
                hidden: <$options as $crate::engine::Experiment>::HIDDEN,
                warms_up_by_count: <$options as $crate::engine::Experiment>::WARMS_UP_BY_COUNT,
            },)*
        ];

        impl ExperimentArgs {
            /// Which experiment.
            pub fn id(&self) -> oscost_model::ExperimentId {
                match self {
                    $(Self::$variant(_) => <$options as $crate::engine::Experiment>::ID,)*
                }
            }

            /// The experiment's name.
            pub fn name(&self) -> &'static str {
                self.id().as_str()
            }

            /// Whether its measuring process must start with glibc's thread-stack cache off
            /// (see [`Experiment::NO_THREAD_STACK_CACHE`](crate::engine::Experiment::NO_THREAD_STACK_CACHE)).
            pub fn no_thread_stack_cache(&self) -> bool {
                match self {
                    $(Self::$variant(_) => <$options as $crate::engine::Experiment>::NO_THREAD_STACK_CACHE,)*
                }
            }

            /// Measuring processes to draw its samples from
            /// (see [`Experiment::processes`](crate::engine::Experiment::processes)).
            pub fn processes(&self) -> usize {
                match self {
                    $(Self::$variant(o) => <$options as $crate::engine::Experiment>::processes(o),)*
                }
            }

            /// Runs the experiment.
            pub fn run(&self, ctx: &$crate::context::Context) -> anyhow::Result<oscost_model::case::ExperimentOutput> {
                match self {
                    $(Self::$variant(o) => o.run(ctx),)*
                }
            }

            /// Checks the experiment's needs against the machine's limits before the run
            /// measures anything (see [`Experiment::preflight`](crate::engine::Experiment::preflight)).
            pub fn preflight(&self, quick: bool, limits: &$crate::limits::Limits) -> anyhow::Result<()> {
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
                $(if name == <$options as $crate::engine::Experiment>::ID.as_str() {
                    let args = if quick {
                        <$options as $crate::engine::Experiment>::QUICK_SUITE_ARGS
                    } else {
                        <$options as $crate::engine::Experiment>::SUITE_ARGS
                    };
                    return Some(Self::$variant($crate::engine::defaults::<$options>(args)));
                })*
                None
            }
        }
    };
}

pub(crate) use registry;

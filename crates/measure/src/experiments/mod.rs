//! The registry of experiments, in display order.
//!
//! Each experiment is one module exposing `NAME`, `SUMMARY`, `IN_DEFAULT_SUITE`, an `Options`
//! type (clap arguments, whose defaults are the experiment's default size) and
//! `run(&Options, &Context) -> Result<ExperimentOutput>`. Adding one is a new file plus one line
//! in the `registry!` call below; the line may end with the arguments a suite run (`oscost run`)
//! gives it, when its stand-alone default is too large for a suite.

use crate::context::Context;
use clap::builder::TypedValueParser as _;
use clap::{Args, FromArgMatches};
use oscost_model::case::ExperimentOutput;
use oscost_sys::ipc::Via;
use oscost_sys::task::Kind;

pub mod primitives;
pub mod ring;
pub mod switch;
pub mod syscall;

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

/// The command-line spelling of an option value, which is also its part of a case id.
pub(crate) fn value_name<T: clap::ValueEnum>(value: &T) -> String {
    value
        .to_possible_value()
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default()
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

/// What `oscost list` shows of an experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExperimentInfo {
    /// Subcommand name and id prefix.
    pub name: &'static str,
    /// One line.
    pub summary: &'static str,
    /// Whether `oscost run` with no names runs it.
    pub in_default_suite: bool,
}

/// An experiment's options from `args`, every other flag at its default.
fn defaults<T: Args + FromArgMatches>(args: &[&str]) -> T {
    let cmd = T::augment_args(clap::Command::new("defaults").no_binary_name(true));
    let matches = cmd
        .try_get_matches_from(args)
        .expect("every experiment option has a default and suite arguments parse");
    T::from_arg_matches(&matches).expect("defaults parse")
}

macro_rules! registry {
    ($($variant:ident => $module:ident $([$($arg:expr),*])?),* $(,)?) => {
        /// One subcommand per experiment, holding its options.
        #[derive(Debug, Clone, clap::Subcommand)]
        pub enum ExperimentArgs {
            $(
                #[doc = concat!("The `", stringify!($module), "` experiment.")]
                #[command(about = $module::SUMMARY, long_about = $module::ABOUT)]
                $variant($module::Options),
            )*
        }

        /// Every registered experiment, in display order.
        pub const REGISTRY: &[ExperimentInfo] = &[
            $(ExperimentInfo {
                name: $module::NAME,
                summary: $module::SUMMARY,
                in_default_suite: $module::IN_DEFAULT_SUITE,
            },)*
        ];

        impl ExperimentArgs {
            /// The experiment's name.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => $module::NAME,)*
                }
            }

            /// Runs the experiment.
            pub fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
                match self {
                    $(Self::$variant(o) => $module::run(o, ctx),)*
                }
            }

            /// The experiment called `name` at its suite size (`oscost run`).
            pub fn with_defaults(name: &str) -> Option<ExperimentArgs> {
                $(if name == $module::NAME {
                    let args: &[&str] = &[$($($arg),*)?];
                    return Some(Self::$variant(defaults::<$module::Options>(args)));
                })*
                None
            }
        }
    };
}

registry! {
    Syscall => syscall,
    Primitives => primitives,
    Switch => switch,
    Ring => ring ["--tasks", "2,4,16,64"],
}

#[cfg(test)]
mod tests {
    use super::*;

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
                text.contains(&format!("## `{}`", e.name)),
                "{} undocumented",
                e.name
            );
        }
    }
}

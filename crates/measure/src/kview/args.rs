//! The kernel-view options every experiment with a traced pass takes (tick, switch, noise,
//! timeline, wakeup): one definition flattened into each one's options, so that their names,
//! value, conflict and serde defaults cannot drift apart between experiments.

use super::{Passes, TraceWith};
use oscost_sys::kseam::Mechanism;

/// `--no-kernel-view` and `--trace-with`, flattened into an experiment's options with
/// `#[command(flatten)]` and `#[serde(flatten)]`: on the command line and in the options'
/// JSON they stay two options of the experiment's own. Their help here is generic; each
/// experiment words it for its own traced pass with [`ViewHelp::view_help`].
///
/// `M` is the experiment's own options about its traced pass, placed between the two so that
/// its help, man page and completions list them where they always were (switch's
/// `--trace-via`); [`NoMore`] for the experiments without any.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct ViewArgs<M: clap::Args = NoMore> {
    /// No traced pass: skip the runs that record the kernel's tracepoints
    #[arg(long)]
    #[serde(default)]
    pub no_kernel_view: bool,

    /// The experiment's own options about its traced pass, if any.
    #[command(flatten)]
    #[serde(flatten)]
    pub more: M,

    /// How the traced pass records the kernel's tracepoints (default: the lightest this kernel
    /// allows); one refused is said, and the next one used
    #[arg(
        long,
        value_enum,
        value_name = "MECHANISM",
        conflicts_with = "no_kernel_view"
    )]
    #[serde(default)]
    pub trace_with: Option<TraceWith>,
}

/// No option of an experiment's own between [`ViewArgs`]' two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct NoMore {}

impl<M: clap::Args> ViewArgs<M> {
    /// The mechanisms the traced pass tries, in order (see [`TraceWith::order`]).
    pub fn order(&self) -> Vec<Mechanism> {
        TraceWith::order(self.trace_with)
    }

    /// The record of a run's traced passes, before the first (see [`Passes::new`]).
    pub fn passes(&self) -> Passes {
        Passes::new(self.no_kernel_view, self.trace_with)
    }
}

/// The help of [`ViewArgs`]' two options in one experiment's words, set on its command:
/// `#[command(view_help(NO_KERNEL_VIEW, TRACE_WITH))]` on its options. The traced pass is a
/// different thing in each experiment (a second ping-pong, a second spin, an extra round), and
/// so is what it records and which mechanisms can, so each says its own.
pub trait ViewHelp {
    /// The command with the help of `--no-kernel-view` and `--trace-with` replaced.
    fn view_help(self, no_kernel_view: &'static str, trace_with: &'static str) -> Self;
}

impl ViewHelp for clap::Command {
    fn view_help(self, no_kernel_view: &'static str, trace_with: &'static str) -> Self {
        // In place: `mut_arg` would move each to the end of the list the man page's synopsis
        // and the completions read, past the experiment's options that follow them.
        self.mut_args(|a| match a.get_id().as_str() {
            "no_kernel_view" => a.help(no_kernel_view),
            "trace_with" => a.help(trace_with),
            _ => a,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::experiments::ExperimentArgs;
    use clap::{FromArgMatches, Subcommand};

    const WITH_VIEW: [&str; 5] = ["tick", "switch", "noise", "timeline", "wakeup"];

    fn command() -> clap::Command {
        ExperimentArgs::augment_subcommands(clap::Command::new("oscost"))
    }

    /// Each experiment words both options' help itself, and switch's `--trace-via` stays
    /// between them, where the man page's synopsis and the completions have always listed it.
    #[test]
    fn each_experiment_words_the_help_and_keeps_the_order() {
        let cmd = command();
        let generic = |id: &str| {
            let args = <super::ViewArgs as clap::Args>::augment_args(clap::Command::new("x"));
            let a = args.get_arguments().find(|a| a.get_id() == id).unwrap();
            a.get_help().unwrap().to_string()
        };
        for name in WITH_VIEW {
            let sub = cmd.find_subcommand(name).unwrap();
            for id in ["no_kernel_view", "trace_with"] {
                let a = sub.get_arguments().find(|a| a.get_id() == id).unwrap();
                assert_ne!(
                    a.get_help().unwrap().to_string(),
                    generic(id),
                    "{name} {id}"
                );
            }
        }
        let switch: Vec<&str> = cmd
            .find_subcommand("switch")
            .unwrap()
            .get_arguments()
            .map(|a| a.get_id().as_str())
            .collect();
        assert!(switch.ends_with(&["no_kernel_view", "trace_via", "trace_with"]));
    }

    /// Flattened, the two options are keys of the experiment's own in its options' JSON, and
    /// parsed as they always were, `--trace-with` refused beside `--no-kernel-view`.
    #[test]
    fn the_options_stay_flat_and_parse_as_before() {
        for name in WITH_VIEW {
            let parse = |extra: &[&str]| {
                let argv = [&["oscost", name][..], extra].concat();
                let m = command().try_get_matches_from(argv)?;
                ExperimentArgs::from_arg_matches(&m)
            };
            let args = parse(&["--trace-with", "perf"]).unwrap();
            let json = serde_json::to_value(&args).unwrap();
            let opts = json.as_object().unwrap().values().next().unwrap();
            assert_eq!(opts["trace_with"], "perf", "{name}");
            assert_eq!(opts["no_kernel_view"], false, "{name}");
            let back: ExperimentArgs = serde_json::from_value(json.clone()).unwrap();
            assert_eq!(serde_json::to_value(&back).unwrap(), json, "{name}");
            assert!(parse(&["--no-kernel-view", "--trace-with", "perf"]).is_err());
        }
    }
}

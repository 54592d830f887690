//! The lists of experiments that help texts and messages name, made from the experiment
//! registry and report's figures, so that a new or renamed experiment cannot leave one behind.
//! `tests/experiment_lists.rs` holds every list in the help and the documentation against
//! the same sources.

use clap::{FromArgMatches as _, Subcommand as _};
use oscost_measure::experiments::{ExperimentArgs, REGISTRY};

/// Options by which an experiment sizes its own measurement: one that has any of them takes
/// none of the sampler's (`--samples`, `--min-runs`, `--warmup`, `--budget`).
const OWN_SIZE: &[&str] = &["rounds", "runs", "duration", "repeats", "wakeups"];

/// Whether the experiment called `name` warms up by a count of runs, not for `--warmup`'s
/// time (its `Experiment::WARMS_UP_BY_COUNT`).
fn warms_up_by_count(name: &str) -> bool {
    REGISTRY
        .iter()
        .any(|e| e.name == name && e.warms_up_by_count)
}

/// The experiments a user sees, in the registry's order.
fn visible() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().filter(|e| !e.hidden).map(|e| e.name)
}

/// The experiments that draw figures of their own (`--svg`), in the registry's order.
pub fn with_figures() -> Vec<&'static str> {
    let drawn: Vec<&str> = oscost_report::experiments::with_figures().collect();
    visible().filter(|n| drawn.contains(n)).collect()
}

/// The experiments that take `--samples`, `--min-runs` and `--budget`: those without an
/// option that sizes them otherwise ([`OWN_SIZE`]).
pub fn sampled() -> Vec<&'static str> {
    let cmd = ExperimentArgs::augment_subcommands(clap::Command::new("oscost"));
    visible()
        .filter(|n| {
            cmd.find_subcommand(n).is_some_and(|c| {
                !c.get_arguments()
                    .any(|a| a.get_long().is_some_and(|l| OWN_SIZE.contains(&l)))
            })
        })
        .collect()
}

/// The sampled experiments that warm up for `--warmup`'s time.
pub fn warmed_for_a_time() -> Vec<&'static str> {
    sampled()
        .into_iter()
        .filter(|n| !warms_up_by_count(n))
        .collect()
}

/// The sampled experiments that warm up by a count of runs.
fn warmed_by_count() -> Vec<&'static str> {
    sampled()
        .into_iter()
        .filter(|n| warms_up_by_count(n))
        .collect()
}

/// The experiments a quick suite runs with less than their own `--quick` size (the kernel's
/// traced passes left out): those whose quick-suite options differ from their defaults.
pub fn cut_in_a_quick_suite() -> Vec<&'static str> {
    let cmd = ExperimentArgs::augment_subcommands(
        clap::Command::new("oscost")
            .no_binary_name(true)
            .subcommand_required(true),
    );
    visible()
        .filter(|n| {
            let own = cmd
                .clone()
                .try_get_matches_from([*n])
                .ok()
                .and_then(|m| ExperimentArgs::from_arg_matches(&m).ok());
            let quick = ExperimentArgs::in_suite(n, true);
            serde_json::to_value(own).ok() != serde_json::to_value(quick).ok()
        })
        .collect()
}

/// `a, b and c`.
fn and(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// `--svg`'s help.
pub fn svg_help() -> String {
    format!(
        "Write each figure of the run into the existing directory DIR, as `<name>.svg`: every \
         experiment's samples case by case, and the figures of {}",
        and(&with_figures())
    )
}

/// `--samples`'s help.
pub fn samples_help() -> String {
    let by_count = warmed_by_count();
    let also = if by_count.is_empty() {
        String::new()
    } else {
        format!(" and by {}", and(&by_count))
    };
    format!(
        "Samples per case, 3 or more (default 81, or 10 with --quick). Taken by the experiments \
         that sample a repeated operation ({}){also}; the others size themselves by their own \
         options (--rounds, --runs, --duration, --wakeups)",
        warmed_for_a_time().join(", ")
    )
}

/// `--warmup`'s help.
pub fn warmup_help() -> String {
    format!(
        "Minimum warm-up per case before its samples, e.g. 40ms: warm-up goes on until three \
         batches agree within 2 %, at most four times this (default 40ms, or 4ms with --quick; \
         1us to 60s). The experiments that sample a repeated operation ({})",
        warmed_for_a_time().join(", ")
    )
}

/// The note a quick suite prints before it starts: how many experiments it cuts, and with
/// `verbose` which.
pub fn quick_suite_note(verbose: bool) -> String {
    let cut = cut_in_a_quick_suite();
    if verbose {
        format!(
            "note: a quick suite runs these without the kernel's traced passes or at fewer cases \
             ({}), which would double its time: `oscost NAME --quick` runs them whole",
            cut.join(", ")
        )
    } else {
        format!(
            "note: a quick suite runs {} experiments without the kernel's traced passes or at \
             fewer cases (--verbose names them): `oscost NAME --quick` runs one whole",
            cut.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exceptions_name_sampled_experiments() {
        for e in REGISTRY.iter().filter(|e| e.warms_up_by_count) {
            assert!(
                sampled().contains(&e.name),
                "`{}` warms up by a count but is not a sampled experiment of the registry",
                e.name
            );
        }
    }

    #[test]
    fn lists_are_joined_as_prose() {
        assert_eq!(and(&["a"]), "a");
        assert_eq!(and(&["a", "b", "c"]), "a, b and c");
    }
}

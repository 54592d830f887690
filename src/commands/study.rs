//! `oscost study`: each study's protocol as oscost experiments, at three sizes.
//!
//! A study run is an ordinary run of those experiments (history, `--json`, `--report`,
//! `compare`); only its terminal output differs: the study's own tables, from
//! `oscost_report::study`, instead of each experiment's.

use crate::stdout::print_stdout;
use clap::{FromArgMatches as _, Subcommand as _};
use oscost_measure::experiments::ExperimentArgs;

/// How large a study run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Size {
    /// `--quick`: seconds (qnx-tick, the longest, about 8 s on a 2-CPU virtual machine).
    Quick,
    /// The default: up to about a minute and a half (windows-yield).
    Default,
    /// `--full`: the study's own sizes.
    Full,
}

/// One experiment of a study's protocol: its command line, then what each size adds to it
/// (quick, default, full).
type Step = (&'static [&'static str], [&'static [&'static str]; 3]);

/// Each study's experiments.
const PROTOCOLS: &[(&str, &[Step])] = &[
    ("minix3", &[(&["fs"], [&[], &[], &[]])]),
    (
        "bradford",
        &[
            (
                &["primitives", "--only", "sysv-sem,posix-sem,pthread-mutex"],
                [&[], &[], &[]],
            ),
            (
                &["lockring"],
                [
                    &["--tasks", "2,8,32,128"],
                    &["--tasks", "2,4,8,16,32,64,128"],
                    &["--tasks", "2,4,8,16,32,64,128"],
                ],
            ),
        ],
    ),
    (
        "windows-yield",
        &[(
            &["split", "--form", "threads", "--yield", "--sets", "one,two"],
            [
                &["--tasks", "1..256", "--work", "30ms", "--repeats", "3"],
                &["--tasks", "1..8192", "--work", "250ms", "--repeats", "3"],
                &["--tasks", "1..8192", "--work", "1s", "--repeats", "5"],
            ],
        )],
    ),
    ("qnx-tick", &[(&["tick-forms"], [&[], &[], &[]])]),
    (
        "linux-timeslice",
        &[(
            &[
                "timeline",
                "--workers",
                "1,2,4",
                "--kind",
                "processes",
                "--chunk-iterations",
                "100000",
            ],
            [&["--rounds", "2"], &["--rounds", "5"], &["--rounds", "10"]],
        )],
    ),
];

/// One experiment's command line (its name, then its options), read by the experiments' own
/// option types: a protocol names experiments only, never oscost's global options.
fn parse(line: &[&str]) -> Result<ExperimentArgs, clap::Error> {
    let cmd = ExperimentArgs::augment_subcommands(
        clap::Command::new("study")
            .no_binary_name(true)
            .subcommand_required(true),
    );
    ExperimentArgs::from_arg_matches(&cmd.try_get_matches_from(line)?)
}

/// The study called `name` and its experiments at `size`, or one line naming the choices.
fn experiments(name: &str, size: Size) -> anyhow::Result<(&'static str, Vec<ExperimentArgs>)> {
    let Some((study, steps)) = PROTOCOLS.iter().find(|p| p.0 == name) else {
        let names: Vec<&str> = PROTOCOLS.iter().map(|p| p.0).collect();
        let meant = names
            .iter()
            .map(|n| (strsim::damerau_levenshtein(name, n), n))
            .filter(|(d, _)| *d <= 2)
            .min_by_key(|(d, _)| *d)
            .map(|(_, n)| format!("did you mean {n}? "))
            .unwrap_or_default();
        anyhow::bail!(
            "no study named `{name}` ({meant}choose from: {}; `oscost study` lists them)",
            names.join(", ")
        );
    };
    let at = match size {
        Size::Quick => 0,
        Size::Default => 1,
        Size::Full => 2,
    };
    let mut out = Vec::new();
    for (base, extra) in steps.iter() {
        let line: Vec<&str> = base.iter().chain(extra[at].iter()).copied().collect();
        out.push(parse(&line).map_err(|e| {
            anyhow::anyhow!(
                "study {study}: `{}` does not parse (a bug): {e}",
                line.join(" ")
            )
        })?);
    }
    Ok((study, out))
}

/// `oscost study`: the list of studies printed (`None`, nothing to measure), or the experiments
/// of the study named and its name; `quick` is `--quick`.
pub fn plan(
    name: Option<String>,
    full: bool,
    quick: bool,
) -> anyhow::Result<Option<(Vec<ExperimentArgs>, &'static str)>> {
    let Some(name) = name else {
        if full {
            anyhow::bail!("--full needs a study to run (`oscost study NAME --full`)");
        }
        print_stdout(&oscost_report::study::list_text(
            oscost_report::export::terminal::layout_width(false),
        ))?;
        return Ok(None);
    };
    let size = if full {
        Size::Full
    } else if quick {
        Size::Quick
    } else {
        Size::Default
    };
    let (name, exps) = experiments(&name, size)?;
    Ok(Some((exps, name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_study_has_a_protocol_that_parses_at_every_size() {
        for s in oscost_report::study::STUDIES {
            for size in [Size::Quick, Size::Default, Size::Full] {
                let (name, exps) = experiments(s.info.name, size).unwrap();
                assert_eq!(name, s.info.name);
                assert!(!exps.is_empty());
                for e in &exps {
                    assert!(
                        s.info.experiments.contains(&e.name()),
                        "{name} runs {} but reads {:?}",
                        e.name(),
                        s.info.experiments
                    );
                }
            }
        }
        assert!(experiments("nope", Size::Quick).is_err());
    }
}

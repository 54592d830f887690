//! Every list of experiments a reader meets (in README.md, CONTRIBUTING.md, docs/*.md, the
//! help texts and the quick suite's note) is the list the registry makes: a new, renamed or
//! removed experiment fails here, naming the file, the line and the names missing or extra.
//!
//! A list is three or more experiment names joined by `, `, ` and ` or ` or ` (backticks
//! allowed), or a Markdown table whose first column holds only experiment names. Each is held
//! against the list it is nearest to of those the registry and report's figures give.

mod common;

use clap::{FromArgMatches as _, Subcommand as _};
use oscost_measure::experiments::{ExperimentArgs, REGISTRY};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// Options by which an experiment sizes its own measurement instead of the sampler's
/// `--samples` (the binary's `lists` module reads the same).
const OWN_SIZE: &[&str] = &["rounds", "runs", "duration", "repeats", "wakeups"];

/// Sampled experiments that warm up by a count of runs, not for `--warmup`'s time.
fn warm_up_by_count() -> BTreeSet<&'static str> {
    REGISTRY
        .iter()
        .filter(|e| e.warms_up_by_count)
        .map(|e| e.name)
        .collect()
}

/// One list the registry makes: what it is, and its names.
struct Truth {
    what: &'static str,
    names: BTreeSet<&'static str>,
}

fn visible() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().filter(|e| !e.hidden).map(|e| e.name)
}

fn sampled() -> BTreeSet<&'static str> {
    let cmd = ExperimentArgs::augment_subcommands(clap::Command::new("oscost"));
    visible()
        .filter(|n| {
            let c = cmd
                .find_subcommand(n)
                .expect("every experiment is a subcommand");
            !c.get_arguments()
                .any(|a| a.get_long().is_some_and(|l| OWN_SIZE.contains(&l)))
        })
        .collect()
}

fn cut_in_a_quick_suite() -> BTreeSet<&'static str> {
    let cmd = ExperimentArgs::augment_subcommands(
        clap::Command::new("oscost")
            .no_binary_name(true)
            .subcommand_required(true),
    );
    visible()
        .filter(|n| {
            let m = cmd.clone().try_get_matches_from([*n]).expect("parses");
            let own = ExperimentArgs::from_arg_matches(&m).expect("parses");
            let quick = ExperimentArgs::in_suite(n, true).expect("registered");
            serde_json::to_value(own).unwrap() != serde_json::to_value(quick).unwrap()
        })
        .collect()
}

fn truths() -> Vec<Truth> {
    let drawn: BTreeSet<&str> = oscost_report::experiments::with_figures().collect();
    let sampled = sampled();
    let by_count = warm_up_by_count();
    for n in &by_count {
        assert!(
            sampled.contains(n),
            "`{n}` warms up by a count but is no sampled experiment"
        );
    }
    vec![
        Truth {
            what: "every experiment of the registry",
            names: visible().collect(),
        },
        Truth {
            what: "the default suite (IN_DEFAULT_SUITE)",
            names: REGISTRY
                .iter()
                .filter(|e| !e.hidden && e.in_default_suite)
                .map(|e| e.name)
                .collect(),
        },
        Truth {
            what: "the experiments with figures of their own (report's plots)",
            names: visible().filter(|n| drawn.contains(n)).collect(),
        },
        Truth {
            what: "the experiments that take --samples (no --rounds, --runs, --duration, --wakeups or \
                   --repeats of their own)",
            names: sampled.clone(),
        },
        Truth {
            what: "the experiments that warm up for --warmup's time",
            names: sampled
                .iter()
                .copied()
                .filter(|n| !by_count.contains(n))
                .collect(),
        },
        Truth {
            what: "the experiments that warm up by a count of runs (WARM_UP_BY_COUNT)",
            names: by_count.clone(),
        },
        Truth {
            what: "the experiments a quick suite cuts (QUICK_SUITE_ARGS)",
            names: cut_in_a_quick_suite(),
        },
    ]
}

/// The lists of experiment names in `text` (lines joined, whitespace collapsed, so a list
/// wrapped over lines is one): each with the line it starts on.
fn comma_lists(text: &str, names: &BTreeSet<&str>) -> Vec<(usize, Vec<String>)> {
    // Words with the line each starts on, and what separates each from the next.
    let mut words: Vec<(usize, String, String)> = Vec::new();
    let mut line = 1;
    let mut word = String::new();
    let mut sep = String::new();
    let mut start = 1;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            if word.is_empty() {
                if let Some(last) = words.last_mut() {
                    last.2 = std::mem::take(&mut sep);
                }
                sep.clear();
                start = line;
            }
            word.push(c);
        } else {
            let conjunction = word == "and" || word == "or";
            match words.last_mut() {
                // `and` and `or` join names: part of the separator.
                Some(last) if conjunction => sep = std::mem::take(&mut last.2) + &word,
                _ if !word.is_empty() => words.push((start, word.clone(), String::new())),
                _ => {}
            }
            word.clear();
            if c == '\n' {
                line += 1;
            }
            if c != '`' && !(c.is_whitespace() && sep.ends_with(' ')) {
                sep.push(if c.is_whitespace() { ' ' } else { c });
            }
        }
    }
    if !word.is_empty() {
        words.push((start, word, String::new()));
    }
    let joins = [", ", " and ", ", and ", " or ", ", or "];
    let mut out = Vec::new();
    let mut run: Vec<&(usize, String, String)> = Vec::new();
    let mut flush = |run: &mut Vec<&(usize, String, String)>| {
        if run.len() >= 3 {
            out.push((run[0].0, run.iter().map(|w| w.1.clone()).collect()));
        }
        run.clear();
    };
    for w in &words {
        if !names.contains(w.1.as_str()) {
            flush(&mut run);
            continue;
        }
        let joined = run.last().is_some_and(|p| joins.contains(&p.2.as_str()));
        if !joined {
            flush(&mut run);
        }
        run.push(w);
    }
    flush(&mut run);
    out
}

/// The Markdown tables of `text` whose first column holds only experiment names (three or
/// more, each once): each with its first row's line.
fn experiment_tables(text: &str, names: &BTreeSet<&str>) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].starts_with('|') {
            i += 1;
            continue;
        }
        let first = i;
        while i < lines.len() && lines[i].starts_with('|') {
            i += 1;
        }
        // The header and the rule under it are not rows.
        let cells: Vec<String> = lines[(first + 2).min(i)..i]
            .iter()
            .map(|l| {
                l.trim_start_matches('|')
                    .split('|')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .trim_matches('`')
                    .to_owned()
            })
            .collect();
        let distinct: BTreeSet<&str> = cells.iter().map(String::as_str).collect();
        if cells.len() >= 3
            && distinct.len() == cells.len()
            && cells.iter().all(|c| names.contains(c.as_str()))
        {
            out.push((first + 3, cells));
        }
    }
    out
}

/// What is wrong with `list` (found at `place`): nothing when it is one of `truths`, else the
/// names missing from and extra to the nearest.
fn judge(place: &str, list: &[String], truths: &[Truth]) -> Option<String> {
    let found: BTreeSet<&str> = list.iter().map(String::as_str).collect();
    let nearest = truths
        .iter()
        .min_by_key(|t| t.names.symmetric_difference(&found).count())
        .expect("truths");
    let missing: Vec<&str> = nearest.names.difference(&found).copied().collect();
    let extra: Vec<&str> = found.difference(&nearest.names).copied().collect();
    if missing.is_empty() && extra.is_empty() {
        return None;
    }
    let mut why = format!("{place}: `{}` reads as {}:", list.join(", "), nearest.what);
    if !missing.is_empty() {
        why += &format!(" missing {}", missing.join(", "));
    }
    if !extra.is_empty() {
        why += &format!(" extra {}", extra.join(", "));
    }
    Some(why)
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every text a reader meets that may list experiments, by where it comes from.
fn texts() -> Vec<(String, String)> {
    let mut files = vec![root().join("README.md"), root().join("CONTRIBUTING.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut out: Vec<(String, String)> = files
        .iter()
        .map(|p| {
            let shown = p.strip_prefix(root()).unwrap_or(p).display().to_string();
            (shown, std::fs::read_to_string(p).expect("readable"))
        })
        .collect();
    let mut commands: Vec<Vec<&str>> = vec![vec!["--help"], vec!["run", "--help"]];
    commands.extend(visible().map(|n| vec![n, "--help"]));
    for args in commands {
        let o = common::oscost().args(&args).output().expect("runs");
        assert!(o.status.success(), "oscost {}", args.join(" "));
        let text = String::from_utf8(o.stdout).expect("UTF-8");
        out.push((format!("`oscost {}`", args.join(" ")), text));
    }
    // The note a quick suite starts with (the scripted clock refuses the suite right after it);
    // --verbose names the experiments.
    let o = common::oscost()
        .args(["--quick", "--verbose", "--scripted", "--no-save"])
        .output()
        .expect("runs");
    let note = String::from_utf8(o.stderr).expect("UTF-8");
    assert!(note.starts_with("note: a quick suite"), "{note}");
    out.push(("the quick suite's note".into(), note));
    out
}

#[test]
fn every_list_of_experiments_is_the_registrys() {
    let truths = truths();
    let names: BTreeSet<&str> = visible().collect();
    let mut wrong = Vec::new();
    let mut seen = 0;
    for (source, text) in texts() {
        for (line, list) in comma_lists(&text, &names) {
            seen += 1;
            let place = format!("{source}:{line}");
            wrong.extend(judge(&place, &list, &truths));
        }
        for (line, list) in experiment_tables(&text, &names) {
            seen += 1;
            let place = format!("{source}:{line} (a table)");
            wrong.extend(judge(&place, &list, &truths[..1]));
        }
    }
    // The README's table, its option lists and the help's: a detector that finds none is broken.
    assert!(seen >= 6, "only {seen} lists of experiments found");
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

#[test]
fn the_detector_reads_lists_as_prose_and_markdown_write_them() {
    let names: BTreeSet<&str> = ["ring", "split", "spawn", "tick", "noise", "switch"].into();
    let text = "figures of `ring`, split,\n   spawn and noise; a ring, a split\n";
    assert_eq!(
        comma_lists(text, &names),
        [(
            1,
            vec![
                "ring".into(),
                "split".into(),
                "spawn".into(),
                "noise".into()
            ]
        )]
    );
    let table = "| a | b |\n|---|---|\n| `tick` | x |\n| `noise` | y |\n| `ring` | z |\n";
    assert_eq!(
        experiment_tables(table, &names),
        [(3, vec!["tick".into(), "noise".into(), "ring".into()])]
    );
    let truths = [Truth {
        what: "these",
        names: ["ring", "split", "switch"].into(),
    }];
    assert_eq!(
        judge(
            "f:1",
            &["ring".into(), "split".into(), "spawn".into()],
            &truths
        )
        .as_deref(),
        Some("f:1: `ring, split, spawn` reads as these: missing switch extra spawn")
    );
}

//! The product speaks only of itself: nothing a user can see (the binary's strings, `--help`,
//! `oscost list`, the documentation, the shipped sources and scripts) may point at documents
//! users do not have. Published studies are cited by author, title and year instead, and a
//! methodology rule is either stated in place or found in `docs/methodology.md`.
//!
//! The phrases below are chosen so that legitimate text cannot match them: the bootstrap's
//! random seed ("a fixed seed", `DEFAULT_SEED`, "seeded") is fine, so bare "seed" is not listed.

mod common;
use common::oscost;

use oscost_measure::experiments::REGISTRY;
use std::path::{Path, PathBuf};

/// Forbidden anywhere in product text, compared case-insensitively.
const FORBIDDEN: &[&str] = &[
    "method.md",
    "experiments.md",
    "shared/docs",
    "shared/seeds",
    "../shared",
    "seed document",
    "seed 00",
    "reference vm",
    "this vm",
    "development vm",
    "method §",
];

/// Every forbidden phrase in `text`, plus any numbered section reference ("§3.3", "§ 8.4"):
/// oscost's documents have no numbered sections, so such a reference points at someone else's.
/// The reference must be digit, dot, digit, so that stray bytes in the binary do not match.
fn offences(text: &str) -> Vec<String> {
    let lower = text.to_ascii_lowercase();
    let mut found: Vec<String> = FORBIDDEN
        .iter()
        .filter(|p| lower.contains(*p))
        .map(|p| format!("{p:?}"))
        .collect();
    for (i, _) in lower.match_indices('§') {
        let after = lower[i + '§'.len_utf8()..]
            .trim_start_matches(' ')
            .as_bytes();
        let digits = after.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0
            && after.get(digits) == Some(&b'.')
            && after.get(digits + 1).is_some_and(u8::is_ascii_digit)
        {
            let reference = String::from_utf8_lossy(&after[..digits + 2]);
            found.push(format!("section reference \"§{reference}\""));
        }
    }
    found
}

/// `text` as one line of prose: comment markers, heading and list marks and string-continuation
/// backslashes dropped, every run of white space one space, so that a phrase wrapped over two
/// lines (by `--help`, a paragraph or a doc comment) is still found.
fn prose(text: &str) -> String {
    text.lines()
        .map(|l| {
            l.trim()
                .trim_start_matches(['/', '!', '#', '*', '>'])
                .trim_end_matches('\\')
        })
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ")
}

/// [`offences`] in `text` read as prose (see [`prose`]).
fn offences_in_prose(text: &str) -> Vec<String> {
    offences(&prose(text))
}

/// Lines of `text` holding an offence, for a failure message that says where.
fn offending_lines(text: &str) -> Vec<String> {
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !offences(l).is_empty())
        .map(|(n, l)| format!("  line {}: {}", n + 1, l.trim()))
        .collect();
    if lines.is_empty() {
        vec!["  (the phrase is wrapped over two lines)".to_string()]
    } else {
        lines
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` (recursively) whose name ends with one of `exts`.
fn files_under(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, exts, out);
        } else if exts.iter().any(|e| path.to_string_lossy().ends_with(e)) {
            out.push(path);
        }
    }
}

/// Checks each file; returns one message per offending file.
fn check_files(files: &[PathBuf]) -> Vec<String> {
    let mut bad = Vec::new();
    for path in files {
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
        let found = offences_in_prose(&text);
        if !found.is_empty() {
            bad.push(format!(
                "{}: {}\n{}",
                path.strip_prefix(root()).unwrap_or(path).display(),
                found.join(", "),
                offending_lines(&text).join("\n")
            ));
        }
    }
    bad
}

#[test]
fn the_detector_catches_internal_references_and_spares_the_bootstrap_seed() {
    for bad in [
        "see method.md 3.3 rule 6",
        "(method §8.3)",
        "as §2.2 rule 4 says",
        "in ../shared/docs/experiments.md",
        "the seed documents ran at -19",
        "seed 003's Table 1",
        "on the reference VM",
        "on this VM a halted vCPU",
    ] {
        assert!(!offences(bad).is_empty(), "not caught: {bad:?}");
    }
    for wrapped in [
        "switches per round trip on the reference\n         VM, so only",
        "/// ran as the seed\n/// documents did",
        "\"on the reference \\\n                 VM (see\"",
        "as in method\n§3.3 rule 4",
    ] {
        assert!(
            !offences_in_prose(wrapped).is_empty(),
            "not caught: {wrapped:?}"
        );
    }
    for good in [
        "a bootstrap interval with a fixed seed and a portable PRNG",
        "Summarises with the default seed and resample count",
        "the parent seeds tokens only after starting its count",
        "DEFAULT_SEED, seeded and deterministic",
        "the method of Herder et al., \"MINIX 3\" (2006)",
        "Table 1 of Edward G. Bradford, \"Runtime: Context switching\", 2002",
        "a halted vCPU on a virtual machine; shared memory; percentile method",
    ] {
        assert_eq!(offences(good), Vec::<String>::new(), "{good:?}");
    }
}

#[test]
fn the_binary_holds_no_internal_reference() {
    let bin = assert_cmd::cargo::cargo_bin("oscost");
    let bytes = std::fs::read(&bin).unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
    // Lossy: the phrases are valid UTF-8 wherever they were compiled in, so none is lost.
    let text = String::from_utf8_lossy(&bytes);
    let found = offences(&text);
    assert!(
        found.is_empty(),
        "{} contains {}",
        bin.display(),
        found.join(", ")
    );
}

#[test]
fn the_documentation_holds_no_internal_reference() {
    let mut files = vec![
        root().join("README.md"),
        root().join("CONTRIBUTING.md"),
        root().join("CHANGELOG.md"),
    ];
    files.retain(|p| p.exists());
    files_under(&root().join("docs"), &[""], &mut files);
    assert!(
        files.iter().any(|p| p.ends_with("docs/methodology.md")),
        "docs/ not found: {files:?}"
    );
    let bad = check_files(&files);
    assert!(bad.is_empty(), "internal references:\n{}", bad.join("\n"));
}

#[test]
fn the_shipped_sources_and_scripts_hold_no_internal_reference() {
    let mut files = vec![root().join("build.rs")];
    files.retain(|p| p.exists());
    files_under(&root().join("src"), &[".rs"], &mut files);
    files_under(&root().join("crates"), &[".rs", ".toml"], &mut files);
    files_under(&root().join("scripts"), &[""], &mut files);
    files_under(&root().join("benches"), &[""], &mut files);
    files_under(&root().join("ansible"), &[""], &mut files);
    // A play's fetched results are the user's, not shipped.
    files.retain(|p| {
        !p.components()
            .any(|c| c.as_os_str() == "target" || c.as_os_str() == "results")
    });
    assert!(files.len() > 10, "sources not found: {files:?}");
    let bad = check_files(&files);
    assert!(bad.is_empty(), "internal references:\n{}", bad.join("\n"));
}

#[test]
fn help_and_list_hold_no_internal_reference() {
    let mut commands: Vec<Vec<&str>> = vec![vec!["--help"], vec!["-h"], vec!["list"]];
    for sub in ["run", "list", "env"]
        .into_iter()
        .chain(REGISTRY.iter().map(|e| e.name))
    {
        commands.push(vec![sub, "--help"]);
        commands.push(vec![sub, "-h"]);
    }
    let mut bad = Vec::new();
    for args in &commands {
        let out = oscost().args(args).output().unwrap();
        assert!(out.status.success(), "oscost {args:?}: {out:?}");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!text.trim().is_empty(), "oscost {args:?} printed nothing");
        let found = offences_in_prose(&text);
        if !found.is_empty() {
            bad.push(format!(
                "oscost {}: {}\n{}",
                args.join(" "),
                found.join(", "),
                offending_lines(&text).join("\n")
            ));
        }
    }
    assert!(bad.is_empty(), "internal references:\n{}", bad.join("\n"));
}

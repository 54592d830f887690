//! Every experiment a user can run is documented where the README says it is: a section of
//! `docs/methodology.md` headed by its name, saying what is timed and how. A new experiment
//! without one fails here, and the message says what to write; a section whose experiment
//! is gone fails too.

use oscost_measure::experiments::REGISTRY;
use std::path::PathBuf;

/// The paragraphs every experiment's section opens with its own words, as `*What.*`.
const REQUIRED: &[(&str, &str)] = &[
    ("*What.*", "what is timed"),
    ("*How.*", "how it is timed and what is subtracted"),
];

/// The sections of `text` headed ``## `name` ``: each name with the section's text.
fn sections(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            let name = h.strip_prefix('`').and_then(|h| h.strip_suffix('`'));
            out.push((name.unwrap_or("").to_owned(), String::new()));
        } else if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out.retain(|(name, _)| !name.is_empty());
    out
}

/// What `sections` lacks for `experiments`: one line each, saying what to write.
fn missing(sections: &[(String, String)], experiments: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for name in experiments {
        match sections.iter().find(|(n, _)| n == name) {
            None => out.push(format!(
                "docs/methodology.md: no section ``## `{name}` `` (write one: {})",
                REQUIRED
                    .iter()
                    .map(|(mark, what)| format!("{mark} {what}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
            Some((_, body)) => {
                for (mark, what) in REQUIRED {
                    if !body.lines().any(|l| l.starts_with(mark)) {
                        out.push(format!(
                            "docs/methodology.md, ``## `{name}` ``: no paragraph opening with \
                             {mark} ({what})"
                        ));
                    }
                }
            }
        }
    }
    for (name, _) in sections {
        if !experiments.contains(&name.as_str()) {
            out.push(format!(
                "docs/methodology.md: ``## `{name}` `` documents no registered experiment \
                 (renamed or removed?)"
            ));
        }
    }
    out
}

#[test]
fn every_experiment_has_its_methodology_section() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/methodology.md");
    let text = std::fs::read_to_string(&path).expect("docs/methodology.md");
    let experiments: Vec<&str> = REGISTRY
        .iter()
        .filter(|e| !e.hidden)
        .map(|e| e.name)
        .collect();
    let wrong = missing(&sections(&text), &experiments);
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

#[test]
fn a_missing_section_or_paragraph_is_named() {
    let text = "## Common\n\n## `a`\n\n*What.* x\n\n*How.* y\n\n## `b`\n\n*What.* x\n\n## `gone`\n";
    assert_eq!(
        missing(&sections(text), &["a", "b", "c"]),
        [
            "docs/methodology.md, ``## `b` ``: no paragraph opening with *How.* (how it is timed \
             and what is subtracted)",
            "docs/methodology.md: no section ``## `c` `` (write one: *What.* what is timed; \
             *How.* how it is timed and what is subtracted)",
            "docs/methodology.md: ``## `gone` `` documents no registered experiment (renamed or \
             removed?)",
        ]
    );
}

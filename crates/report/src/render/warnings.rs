//! Per-case warnings grouped by kind, for the terminal: one plain-words line per kind under an
//! experiment's tables instead of one line per case. The kind is read from the warning's stable
//! prefix (the texts are written by the sampler and the experiments); the full per-case texts
//! stay in the result document.

use oscost_model::schema::{CaseResult, ExperimentResult};

/// A kind of per-case warning this oscost writes.
struct Kind {
    /// How every warning of this kind starts; the rest varies from case to case.
    prefix: &'static str,
    /// The few words the notes column shows, and the start of the summary line.
    tag: &'static str,
    /// What it means and what to do, in plain words.
    explain: &'static str,
    /// Where `docs/methodology.md` explains it: section names, outermost first.
    doc: &'static [&'static str],
}

/// Every kind, in no particular order (lines are printed in the order the kinds first occur).
const KINDS: &[Kind] = &[
    Kind {
        prefix: "wide interval",
        tag: "noisy",
        explain: "a 95 % interval wider than ±5 %; --verbose names what each case's samples \
                  showed; a quieter machine narrows it",
        doc: &["Samples"],
    },
    Kind {
        prefix: "CPUs shared during some runs",
        tag: "CPUs shared",
        explain: "other programs (or the host) took a share of the point's CPUs during some \
                  runs, which then took longer; --verbose says in how many runs and how much; a \
                  quieter machine gives steadier figures",
        doc: &["split"],
    },
    Kind {
        prefix: "speed-up withheld",
        tag: "speed-up withheld",
        explain: "these CPUs gave less than half the speed-up they could over one CPU; the \
                  speed-up table names, under it, what was seen in those runs (steal, other \
                  tasks on the CPUs, a late start, workers apart)",
        doc: &["split"],
    },
    Kind {
        prefix: "warm-up did not settle",
        tag: "warm-up did not settle",
        explain: "timings kept changing by more than 2 % during warm-up and the samples after \
                  it drifted too (the machine's speed drifted, something else ran, or the \
                  operation's own cost moved as it repeated; --verbose says by how much); \
                  medians are still comparable within this run, compare across runs with care",
        doc: &["Samples"],
    },
    Kind {
        prefix: "batches still varied",
        tag: "warm-up varied, samples steady",
        explain: "the operation's batches kept varying by more than 2 % through the longest \
                  warm-up, as a file created and removed does, but the samples after it did not \
                  drift: the figure stands",
        doc: &["Samples"],
    },
    Kind {
        prefix: "an operation of ",
        tag: "under 10 ns",
        explain: "so short an operation overlaps the timing loop inside the CPU, so subtracting \
                  the loop's own cost is exact only to about ±1 ns; read a difference of a \
                  nanosecond or two as no difference",
        doc: &["Samples"],
    },
    Kind {
        prefix: "time budget of ",
        tag: "time budget reached",
        explain: "sampling stopped early (at least 5 samples are kept), so the intervals are \
                  wider; a quieter machine gives the full count",
        doc: &["Samples"],
    },
    Kind {
        prefix: "wakeup preemption",
        tag: "wakeup preemption",
        explain: "the scheduler often switched a task out right after it woke the next one, so \
                  a hop holds more than one switch (see switches per hop); that time is real and \
                  part of the hop, and `--policy batch` measures hops without it",
        doc: &["ring", "Verification"],
    },
    Kind {
        prefix: "expected with ",
        tag: "hops without a switch",
        explain: "with several tokens or free placement a task often passes a token on without \
                  blocking, so the hop time is not a switch cost and its switch_cost and \
                  per_switch are flagged; use --tokens 1 --placement same for one switch per hop",
        doc: &["ring", "Verification"],
    },
    Kind {
        prefix: "expected for yield on separate CPUs",
        tag: "yield did not switch",
        explain: "with a CPU each, sched_yield finds nothing else to run and returns at once, so \
                  the round trip is two yields, not two switches, and its switch cost is \
                  flagged; use --placement same for a yield switch",
        doc: &["switch", "Verification"],
    },
    Kind {
        prefix: "peak memory could not be reset",
        tag: "peak memory not reset",
        explain: "/proc/self/clear_refs could not be written, so the peak memory recorded \
                  may be an earlier, larger ring's; the times are not affected",
        doc: &["ring", "Verification"],
    },
    Kind {
        prefix: "--verify-order",
        tag: "--verify-order",
        explain: "every hop also wrote to a shared log inside the timed loop, so the hop times \
                  are a little high; measure without --verify-order for the figures",
        doc: &["ring", "Verification"],
    },
    Kind {
        prefix: "migrations not counted",
        tag: "migrations not counted",
        explain: "this kernel does not report se.nr_migrations in /proc/<pid>/sched, so pinned \
                  tasks cannot be shown to have stayed on their CPUs; the times are not affected",
        doc: &["switch", "Verification"],
    },
];

/// Longest note an unknown kind of warning gets in the notes column.
const UNKNOWN_TAG_CHARS: usize = 40;

fn kind_of(text: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|k| text.starts_with(k.prefix))
}

/// The kind a warning belongs to: a known kind's tag, or for a text this oscost does not know,
/// what comes before its first colon (the whole text if it has none).
fn key(text: &str) -> &str {
    match kind_of(text) {
        Some(k) => k.tag,
        None => text.split_once(": ").map_or(text, |(head, _)| head),
    }
}

/// What the notes column says of a case's warnings and notes: each kind's tag, once.
pub(super) fn tags(c: &CaseResult) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in c.warnings.iter().chain(&c.notes) {
        let k = key(w);
        let tag = if k.chars().count() > UNKNOWN_TAG_CHARS {
            let cut: String = k.chars().take(UNKNOWN_TAG_CHARS - 1).collect();
            format!("{}…", cut.trim_end())
        } else {
            k.to_owned()
        };
        if !out.contains(&tag) {
            out.push(tag);
        }
    }
    out
}

/// Which of a case's messages a summary is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Of {
    /// What makes a figure less trustworthy.
    Warnings,
    /// Context.
    Notes,
}

impl Of {
    fn of(self, c: &CaseResult) -> &[String] {
        match self {
            Of::Warnings => &c.warnings,
            Of::Notes => &c.notes,
        }
    }
}

/// The experiment's per-case messages by kind, in the order the kinds first occur: the key and
/// every (case id, full text) of that kind.
fn groups(e: &ExperimentResult, of: Of) -> Vec<(&str, Vec<(&str, &str)>)> {
    let mut out: Vec<(&str, Vec<(&str, &str)>)> = Vec::new();
    for c in &e.cases {
        for w in of.of(c) {
            let k = key(w);
            let item = (c.id.as_str(), w.as_str());
            match out.iter_mut().find(|(key, _)| *key == k) {
                Some((_, items)) => items.push(item),
                None => out.push((k, vec![item])),
            }
        }
    }
    out
}

/// "3 of 16 cases", "all 4 cases".
fn count(n: usize, of: usize) -> String {
    match (n, of) {
        (n, of) if n == of && n > 1 => format!("all {n} cases"),
        (n, of) => format!("{n} of {of} case{}", if of == 1 { "" } else { "s" }),
    }
}

/// Where in `docs/methodology.md` a kind is explained: `docs/methodology.md, "ring",
/// "Verification"`.
fn doc_pointer(doc: &[&str]) -> String {
    let mut s = "docs/methodology.md".to_owned();
    for d in doc {
        s += &format!(", \"{d}\"");
    }
    s
}

/// One line per kind of per-case warning or note (without the `warning: ` mark), each
/// followed, when `full`, by every case's own text.
pub(super) fn summary(e: &ExperimentResult, of: Of, full: bool) -> Vec<(String, Vec<String>)> {
    let cases = e.cases.len();
    let mut out = Vec::new();
    for (key, items) in groups(e, of) {
        // A case with two warnings of one kind counts once.
        let mut ids: Vec<&str> = items.iter().map(|(id, _)| *id).collect();
        ids.dedup();
        let n = count(ids.len(), cases);
        let line = match kind_of(items[0].1) {
            Some(k) => format!("{key} for {n}: {} ({})", k.explain, doc_pointer(k.doc)),
            None => {
                let named = if ids.len() <= 3 {
                    format!(" ({})", ids.join(", "))
                } else {
                    String::new()
                };
                let more = if full || (ids.len() <= 3 && items.iter().all(|(_, w)| *w == key)) {
                    ""
                } else {
                    "; --verbose prints each case's text"
                };
                format!("{key} for {n}{named}{more}")
            }
        };
        let detail = if full {
            items.iter().map(|(id, w)| format!("{id}: {w}")).collect()
        } else {
            Vec::new()
        };
        out.push((line, detail));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_points_at_a_section_of_the_methodology() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/methodology.md");
        let text = std::fs::read_to_string(path).unwrap();
        for k in KINDS {
            let mut rest = text.as_str();
            for (depth, name) in k.doc.iter().enumerate() {
                // A section is a `## `name`` heading or a `**Name.**`/`*Name.*` paragraph.
                let marks = [
                    format!("## `{name}`"),
                    format!("**{name}.**"),
                    format!("*{name}.*"),
                ];
                let at = marks
                    .iter()
                    .filter_map(|m| rest.find(m.as_str()))
                    .min()
                    .unwrap_or_else(|| panic!("{}: no section {name:?} (level {depth})", k.tag));
                rest = &rest[at..];
                // A paragraph must be inside its section, before the next heading.
                if depth + 1 < k.doc.len() {
                    let end = rest[2..].find("\n## ").map_or(rest.len(), |i| i + 2);
                    rest = &rest[..end];
                }
            }
        }
    }

    #[test]
    fn the_texts_oscost_writes_are_known_kinds() {
        for text in [
            "warm-up did not settle: the last three batches differed by more than 2 % after 160 ms",
            "an operation of 2.6 ns overlaps the loop around it",
            "batches still varied by more than 2 % after 160 ms of warm-up, but the samples held",
            "time budget of 300 ms reached: 9 of 15 samples taken",
            "wakeup preemption: 0.34 involuntary switches per hop",
            "expected with 4 tokens: 0.62 switches per hop instead of at least 1",
            "expected for yield on separate CPUs: 0.01 switches per round trip instead of 2",
            "peak memory could not be reset (/proc/self/clear_refs): it may be an earlier ring's",
            "--verify-order: every hop also appended to a shared log",
            "migrations not counted: se.nr_migrations is missing from /proc/<pid>/sched",
            "wide interval: CI ±8.0 %: only 5 samples",
            "speed-up withheld: +3 % of a possible +100 %: no cause seen",
            "CPUs shared during some runs: in 2 of 8 runs other tasks held 50 % of CPU 0",
        ] {
            assert!(kind_of(text).is_some(), "{text}");
        }
        // The prefixes are still how the measuring layer starts its texts.
        let sources = [
            include_str!("../../../measure/src/sampler.rs"),
            include_str!("../../../measure/src/experiments/ring.rs"),
            include_str!("../../../measure/src/engine/checks.rs"),
            include_str!("../../../measure/src/experiments/switch/mod.rs"),
            include_str!("../summarise.rs"),
            include_str!("../../../measure/src/experiments/split/mod.rs"),
            include_str!("../../../measure/src/experiments/split/seen.rs"),
        ];
        for k in KINDS {
            let literal = format!("\"{}", k.prefix);
            assert!(
                sources.iter().any(|s| s.contains(&literal)),
                "no warning text starts with {:?} any more",
                k.prefix
            );
        }
        assert_eq!(key("something new: 3.5 of them"), "something new");
        assert_eq!(key("no colon here"), "no colon here");
    }

    #[test]
    fn counts_read_as_words() {
        assert_eq!(count(1, 1), "1 of 1 case");
        assert_eq!(count(4, 4), "all 4 cases");
        assert_eq!(count(5, 13), "5 of 13 cases");
    }
}

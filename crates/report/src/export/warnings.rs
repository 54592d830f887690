//! Per-case warnings grouped by kind, for the terminal: one plain-words line per kind under an
//! experiment's tables instead of one line per case. The kind is the message's own
//! ([`MessageKind`]); the full per-case texts stay in the result document.

use oscost_model::schema::{CaseResult, ExperimentResult};
use oscost_model::{Message, MessageKind};

/// What the terminal says of a kind of message.
#[derive(Debug, Clone, Copy)]
struct About {
    /// The few words the notes column shows, and the start of the summary line.
    tag: &'static str,
    /// What it means and what to do, in plain words.
    explain: &'static str,
    /// Where `docs/methodology.md` explains it: section names, outermost first.
    doc: &'static [&'static str],
}

/// What the terminal says of `kind`; `None` for a kind it names by the text's own words, as
/// it does a text this oscost does not know.
fn about(kind: MessageKind) -> Option<About> {
    Some(match kind {
        MessageKind::WideInterval => About {
            tag: "noisy",
            explain: "a 95 % interval wider than ±5 %; --verbose names what each case's samples \
                      showed; a quieter machine narrows it",
            doc: &["Samples"],
        },
        MessageKind::CpusShared => About {
            tag: "CPUs shared",
            explain: "other programs (or the host) took a share of the point's CPUs during some \
                      runs, which then took longer; --verbose says in how many runs and how much; a \
                      quieter machine gives steadier figures",
            doc: &["split"],
        },
        MessageKind::SpeedUpWithheld => About {
            tag: "speed-up withheld",
            explain: "these CPUs gave less than half the speed-up they could over one CPU; the \
                      speed-up table names, under it, what was seen in those runs (steal, other \
                      tasks on the CPUs, a late start, workers apart)",
            doc: &["split"],
        },
        MessageKind::WarmUpUnsettled => About {
            tag: "warm-up did not settle",
            explain: "timings kept changing by more than 2 % during warm-up and the samples after \
                      it drifted too (the machine's speed drifted, something else ran, or the \
                      operation's own cost moved as it repeated; --verbose says by how much); \
                      medians are still comparable within this run, compare across runs with care",
            doc: &["Samples"],
        },
        MessageKind::BatchesVaried => About {
            tag: "warm-up varied, samples steady",
            explain: "the operation's batches kept varying by more than 2 % through the longest \
                      warm-up, as a file created and removed does, but the samples after it did not \
                      drift: the figure stands",
            doc: &["Samples"],
        },
        MessageKind::ShortOperation => About {
            tag: "under 10 ns",
            explain: "so short an operation overlaps the timing loop inside the CPU, so subtracting \
                      the loop's own cost is exact only to about ±1 ns; read a difference of a \
                      nanosecond or two as no difference",
            doc: &["Samples"],
        },
        MessageKind::TimeBudget => About {
            tag: "time budget reached",
            explain: "sampling stopped early (at least 5 samples are kept), so the intervals are \
                      wider; a quieter machine gives the full count",
            doc: &["Samples"],
        },
        MessageKind::WakeupPreemption => About {
            tag: "wakeup preemption",
            explain: "the scheduler often switched a task out right after it woke the next one, so \
                      a hop holds more than one switch (see switches per hop); that time is real and \
                      part of the hop, and `--policy batch` measures hops without it",
            doc: &["ring", "Verification"],
        },
        MessageKind::HopsWithoutSwitch => About {
            tag: "hops without a switch",
            explain: "with several tokens or free placement a task often passes a token on without \
                      blocking, so the hop time is not a switch cost and its switch_cost and \
                      per_switch are flagged; use --tokens 1 --placement same for one switch per hop",
            doc: &["ring", "Verification"],
        },
        MessageKind::YieldWithoutSwitch => About {
            tag: "yield did not switch",
            explain: "with a CPU each, sched_yield finds nothing else to run and returns at once, so \
                      the round trip is two yields, not two switches, and its switch cost is \
                      flagged; use --placement same for a yield switch",
            doc: &["switch", "Verification"],
        },
        MessageKind::PeakMemoryNotReset => About {
            tag: "peak memory not reset",
            explain: "/proc/self/clear_refs could not be written, so the peak memory recorded \
                      may be an earlier, larger ring's; the times are not affected",
            doc: &["ring", "Verification"],
        },
        MessageKind::VerifyOrder => About {
            tag: "--verify-order",
            explain: "every hop also wrote to a shared log inside the timed loop, so the hop times \
                      are a little high; measure without --verify-order for the figures",
            doc: &["ring", "Verification"],
        },
        MessageKind::MigrationsNotCounted => About {
            tag: "migrations not counted",
            explain: "this kernel does not report se.nr_migrations in /proc/<pid>/sched, so pinned \
                      tasks cannot be shown to have stayed on their CPUs; the times are not affected",
            doc: &["switch", "Verification"],
        },
        MessageKind::FlushWithoutInterrupt => About {
            tag: "flushed without an interrupt",
            explain: "fewer shootdown interrupts reached the other CPUs than operations were \
                      made, although a thread of the process ran there: the kernel flushed their \
                      translations another way (a hypervisor's paravirtual remote flush does so \
                      for a virtual CPU that is not running); the counts are in the result",
            doc: &["shootdown", "Verification"],
        },
        MessageKind::HaltedCpuWoken => About {
            tag: "woke a halted CPU",
            explain: "on two CPUs, a CPU in an idle state that halts it was woken at least every \
                      other operation, so the figure is mostly how fast a halted CPU wakes, which \
                      moves between runs; --idle-poll keeps the CPUs polling",
            doc: &["net", "Idle"],
        },
        MessageKind::WokenWithoutAnswer => About {
            tag: "woken without its answer",
            explain: "a thread waiting in read was woken before its answer came and slept again \
                      (an AF_UNIX stream wakes a socket's sleepers when the peer frees the bytes \
                      it sent), more than 2 switches per round trip; how often moves between \
                      runs, and the figure with it",
            doc: &["net", "Idle"],
        },
        MessageKind::LevelMovesBetweenRings => About {
            tag: "level moves between rings",
            explain: "a fresh SQPOLL ring read outside the case's 95 % interval, which holds one \
                      ring's samples: each ring keeps a level of its own, so a rerun may land \
                      anywhere in the range the warning gives",
            doc: &["uring", "Rings"],
        },
        MessageKind::ProcessModes => About {
            tag: "two modes across processes",
            explain: "the figure was drawn from several processes and they fell into two groups \
                      of cost, each process keeping one for its life: the median mixes them, so \
                      read the two modes the warning gives, not the median alone",
            doc: &["fault", "Processes"],
        },
        MessageKind::SampleModes => About {
            tag: "two modes in the samples",
            explain: "the samples fell into two groups of cost within the processes, not a \
                      level each process kept: the median mixes them, so read the two modes the \
                      warning gives, not the median alone",
            doc: &["fault", "Processes"],
        },
        // Context whose own words say enough.
        MessageKind::GapsThinned
        | MessageKind::SamplesThinned
        | MessageKind::NoSharePredicted
        | MessageKind::MeasuredTwice
        | MessageKind::Other => return None,
    })
}

/// Longest note an unknown kind of warning gets in the notes column.
const UNKNOWN_TAG_CHARS: usize = 40;

/// What a message is grouped by: a kind the terminal explains, or the text's own words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Group<'a> {
    /// A kind with a tag and an explanation.
    Kind(MessageKind),
    /// What comes before the text's first colon (the whole text if it has none).
    Words(&'a str),
}

impl<'a> Group<'a> {
    fn of(m: &'a Message) -> Group<'a> {
        match about(m.kind()) {
            Some(_) => Group::Kind(m.kind()),
            None => Group::Words(m.split_once(": ").map_or(m.as_str(), |(head, _)| head)),
        }
    }

    /// The words that name the group: the kind's tag, or the text's own.
    fn key(self) -> &'a str {
        match self {
            Group::Kind(k) => about(k).map_or("", |a| a.tag),
            Group::Words(w) => w,
        }
    }
}

/// What the notes column says of a case's warnings and, with `notes`, its notes: each kind's
/// tag, once; with `cut`, a text of no known kind longer than [`UNKNOWN_TAG_CHARS`] cut there
/// with `…`.
pub(super) fn tags(c: &CaseResult, cut: bool, notes: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let shown: &[Message] = if notes { &c.notes } else { &[] };
    for w in c.warnings.iter().chain(shown) {
        let k = Group::of(w).key();
        let tag = if cut && k.chars().count() > UNKNOWN_TAG_CHARS {
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
    fn of(self, c: &CaseResult) -> &[Message] {
        match self {
            Of::Warnings => &c.warnings,
            Of::Notes => &c.notes,
        }
    }
}

/// The experiment's per-case messages by kind, in the order the kinds first occur: the group
/// and every (case id, full text) in it.
fn groups(e: &ExperimentResult, of: Of) -> Vec<(Group<'_>, Vec<(&str, &str)>)> {
    let mut out: Vec<(Group, Vec<(&str, &str)>)> = Vec::new();
    for c in &e.cases {
        for w in of.of(c) {
            let g = Group::of(w);
            let item = (c.id.as_str(), w.as_str());
            match out.iter_mut().find(|(group, _)| *group == g) {
                Some((_, items)) => items.push(item),
                None => out.push((g, vec![item])),
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
    for (group, items) in groups(e, of) {
        // A case with two warnings of one kind counts once.
        let mut ids: Vec<&str> = items.iter().map(|(id, _)| *id).collect();
        ids.dedup();
        let n = count(ids.len(), cases);
        let key = group.key();
        let known = match group {
            Group::Kind(k) => about(k),
            Group::Words(_) => None,
        };
        let line = match known {
            Some(a) => format!("{key} for {n}: {} ({})", a.explain, doc_pointer(a.doc)),
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

/// One kind of an experiment's per-case messages, as a brief run names it once: its tag (or
/// the text's own words), how many cases carry it, and where the methodology explains it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Kind {
    /// The tag (`under 10 ns`) or, for a kind the terminal does not explain, the text's words.
    pub tag: String,
    /// Whether it is a wide interval, which a brief table shows by the interval itself.
    pub noisy: bool,
    /// Cases that carry it.
    pub cases: usize,
    /// `docs/methodology.md, "Samples"`, for a kind the methodology explains.
    pub doc: Option<String>,
}

/// The kinds of `e`'s per-case warnings or notes, in the order they first occur.
pub(super) fn kinds(e: &ExperimentResult, of: Of) -> Vec<Kind> {
    groups(e, of)
        .into_iter()
        .map(|(group, items)| {
            let mut ids: Vec<&str> = items.iter().map(|(id, _)| *id).collect();
            ids.dedup();
            let known = match group {
                Group::Kind(k) => about(k),
                Group::Words(_) => None,
            };
            Kind {
                tag: group.key().to_owned(),
                noisy: group == Group::Kind(MessageKind::WideInterval),
                cases: ids.len(),
                doc: known.map(|a| doc_pointer(a.doc)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_points_at_a_section_of_the_methodology() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/methodology.md");
        let text = std::fs::read_to_string(path).unwrap();
        for (kind, k) in MessageKind::KNOWN
            .into_iter()
            .filter_map(|kind| Some((kind, about(kind)?)))
        {
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
                    .unwrap_or_else(|| panic!("{kind:?}: no section {name:?} (level {depth})"));
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
    fn a_kind_is_grouped_by_its_tag_and_any_other_text_by_its_words() {
        for kind in MessageKind::KNOWN {
            let m = Message::new(kind, ": 3.5 of them");
            match about(kind) {
                Some(a) => assert_eq!(Group::of(&m), Group::Kind(kind), "{kind:?}: {}", a.tag),
                None => assert_eq!(Group::of(&m), Group::Words(m.split_once(": ").unwrap().0)),
            }
        }
        // Every warning has its explanation: only context may speak for itself.
        for kind in MessageKind::KNOWN.into_iter().filter(|k| !k.is_note()) {
            assert!(about(kind).is_some(), "{kind:?}");
        }
        let new = Message::from("something new: 3.5 of them");
        assert_eq!(Group::of(&new).key(), "something new");
        let plain = Message::from("no colon here");
        assert_eq!(Group::of(&plain).key(), "no colon here");
    }

    #[test]
    fn counts_read_as_words() {
        assert_eq!(count(1, 1), "1 of 1 case");
        assert_eq!(count(4, 4), "all 4 cases");
        assert_eq!(count(5, 13), "5 of 13 cases");
    }
}

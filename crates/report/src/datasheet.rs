//! The datasheet: one screen of what the OS costs a program on the machine of a run, each cost
//! one line with its median, its interval and the case it comes from; then the checks that
//! failed and how many figures are noisy. Only what the run measured is shown.

use crate::format::fmt_ns;
use crate::layout::{text_width, wrap_words};
use oscost_model::schema::{CaseResult, DerivedResult, ExperimentResult};
use oscost_model::ResultDoc;

/// Where a headline's figure comes from, the first one present in the run winning.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// A case's median.
    Case(&'static str),
    /// A derived figure's estimate.
    Derived(&'static str),
    /// A counter of a case, ns (a percentile the case computed): no interval.
    Counter(&'static str, &'static str),
    /// `tick`'s fitted slope for one source of timer events (`params.slope.<source>`).
    TickSlope(&'static str),
    /// The largest share of a CPU lost to interruptions among `noise`'s cases.
    NoiseLost,
}

/// One cost of the sheet.
struct Headline {
    label: &'static str,
    sources: &'static [Source],
}

/// The sheet's costs, in the order a program meets them.
const HEADLINES: &[Headline] = &[
    Headline {
        label: "system call (getpid)",
        sources: &[Source::Case("syscall.getpid")],
    },
    Headline {
        label: "1-byte read",
        sources: &[Source::Case("syscall.read1")],
    },
    Headline {
        label: "seccomp filter, a call",
        sources: &[
            Source::Derived("seccomp.args-1.getpid.over_none"),
            Source::Derived("seccomp.allow-1.getpid.over_none"),
        ],
    },
    Headline {
        label: "io_uring NOP, 1/enter",
        sources: &[Source::Case("uring.nop.b1")],
    },
    Headline {
        label: "page fault, anon write",
        sources: &[Source::Case("fault.anon-write")],
    },
    Headline {
        // The whole invalidation with the process running on a second CPU, its flush
        // included: `shootdown.madvise.others0` beside it is the same without.
        label: "TLB shootdown, 2 CPUs",
        sources: &[Source::Case("shootdown.madvise.others1.spin")],
    },
    Headline {
        label: "switch, same CPU",
        sources: &[
            Source::Derived("switch.pipe.threads.same.switch_cost"),
            Source::Derived("switch.futex.threads.same.switch_cost"),
        ],
    },
    Headline {
        label: "wake-up, other CPU",
        sources: &[
            Source::Derived("switch.pipe.threads.cross.one_way"),
            Source::Derived("switch.futex.threads.cross.one_way"),
        ],
    },
    Headline {
        label: "loopback round trip",
        sources: &[Source::Case("net.tcp.rtt.same")],
    },
    Headline {
        label: "thread create + join",
        sources: &[Source::Case("spawn.thread")],
    },
    Headline {
        label: "process, posix_spawn",
        sources: &[Source::Case("spawn.posix-spawn.static.p1mib")],
    },
    Headline {
        label: "process, fork + wait",
        sources: &[Source::Case("spawn.fork.p1mib")],
    },
    Headline {
        label: "container namespaces",
        sources: &[
            Source::Derived("ns.container.over_none"),
            Source::Derived("ns.container.in-user.over_none"),
        ],
    },
    Headline {
        label: "signal to own handler",
        sources: &[Source::Case("signal.catch")],
    },
    Headline {
        label: "wake-up late, p99",
        sources: &[Source::Counter("wakeup.other.1ms", "lateness_p99_ns")],
    },
    Headline {
        label: "timer event",
        sources: &[
            Source::TickSlope("timerfd"),
            Source::TickSlope("signal"),
            Source::TickSlope("helper"),
        ],
    },
    Headline {
        label: "CPU lost to noise",
        sources: &[Source::NoiseLost],
    },
];

/// A headline's figure.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A time, ns, with its 95 % interval.
    Ns {
        /// The median (or estimate).
        ns: f64,
        /// Its bootstrap 95 % interval.
        ci95: [f64; 2],
    },
    /// A share, %.
    Pct(f64),
}

/// One line of the sheet.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// What the cost is.
    pub label: &'static str,
    /// The figure.
    pub value: Value,
    /// The case or figure it comes from.
    pub source: String,
    /// Whether a check of that case failed (the figure is not trusted).
    pub failed: bool,
}

/// The sheet of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Datasheet {
    /// The machine, in one line.
    pub machine: String,
    /// The costs the run measured.
    pub lines: Vec<Line>,
    /// Ids of the cases with a failed check, in run order.
    pub failed: Vec<String>,
    /// Figures (cases and derived) whose interval is wider than ±5 %.
    pub noisy: usize,
    /// Figures in all.
    pub figures: usize,
}

fn cases(doc: &ResultDoc) -> impl Iterator<Item = &CaseResult> {
    doc.experiments.iter().flat_map(|e| e.cases.iter())
}

fn derived(doc: &ResultDoc) -> impl Iterator<Item = &DerivedResult> {
    doc.experiments.iter().flat_map(|e| e.derived.iter())
}

fn experiment<'a>(doc: &'a ResultDoc, name: &str) -> Option<&'a ExperimentResult> {
    doc.experiments.iter().find(|e| e.name == name)
}

/// A derived figure is noisy as its cases are: an interval wider than ±5 % of the estimate.
fn derived_noisy(d: &DerivedResult) -> bool {
    let half = (d.ci95_ns[1] - d.ci95_ns[0]) / 2.0;
    d.estimate_ns != 0.0 && half / d.estimate_ns.abs() > oscost_stats::NOISY_REL_HALF_WIDTH
}

fn pick(doc: &ResultDoc, source: Source) -> Option<(Value, String, bool)> {
    match source {
        Source::Case(id) => cases(doc).find(|c| c.id == id).map(|c| {
            let v = Value::Ns {
                ns: c.median_ns,
                ci95: c.ci95_ns,
            };
            (v, c.id.clone(), !c.checks_passed)
        }),
        Source::Derived(id) => derived(doc).find(|d| d.id == id).map(|d| {
            let v = Value::Ns {
                ns: d.estimate_ns,
                ci95: d.ci95_ns,
            };
            (v, d.id.clone(), d.flagged.is_some())
        }),
        Source::Counter(id, key) => {
            let c = cases(doc).find(|c| c.id == id)?;
            let ns = *c.counters.get(key)?;
            let v = Value::Ns {
                ns,
                ci95: [f64::NAN; 2],
            };
            let what = key.trim_end_matches("_ns").replace('_', " ");
            Some((v, format!("{id} ({what})"), !c.checks_passed))
        }
        Source::TickSlope(form) => {
            let tick = experiment(doc, "tick")?;
            let s = tick.params.get("slope")?.get(form)?;
            let ns = s.get("ns_per_event")?.as_f64()?;
            let ci = s.get("ci95_ns")?;
            let ci95 = [ci.get(0)?.as_f64()?, ci.get(1)?.as_f64()?];
            let failed = tick.cases.iter().any(|c| !c.checks_passed);
            Some((
                Value::Ns { ns, ci95 },
                format!("tick {form} (fitted slope)"),
                failed,
            ))
        }
        Source::NoiseLost => {
            let noise = experiment(doc, "noise")?;
            let worst = noise
                .cases
                .iter()
                // The untraced spins: a traced one's loss includes tracing's.
                .filter(|c| c.params.get("kernel_view").and_then(|v| v.as_bool()) != Some(true))
                .filter_map(|c| Some((c, *c.counters.get("cpu_lost_pct")?)))
                .max_by(|a, b| a.1.total_cmp(&b.1))?;
            Some((
                Value::Pct(worst.1),
                format!("{} (the worst CPU)", worst.0.id),
                !worst.0.checks_passed,
            ))
        }
    }
}

/// The machine in one line: CPU, CPUs, kernel, and the hypervisor when there is one.
fn machine(doc: &ResultDoc) -> String {
    let env = &doc.environment;
    let mut parts = vec![env
        .cpu_model
        .clone()
        .unwrap_or_else(|| "unknown CPU".to_owned())];
    if let Some(cpus) = &env.cpus_online {
        parts.push(format!("{} CPUs", cpus.len()));
    }
    parts.push(format!("Linux {}", env.kernel_release));
    let v = &env.virtualisation;
    if let Some(sig) = v.cpuid_signature.as_deref().filter(|s| !s.is_empty()) {
        parts.push(format!("virtual ({sig})"));
    } else if v.hypervisor_flag == Some(true) {
        parts.push("virtual".to_owned());
    }
    parts.join(", ")
}

/// The datasheet of `doc`: every headline the run measured.
pub fn datasheet(doc: &ResultDoc) -> Datasheet {
    let lines = HEADLINES
        .iter()
        .filter_map(|h| {
            let (value, source, failed) = h.sources.iter().find_map(|&s| pick(doc, s))?;
            Some(Line {
                label: h.label,
                value,
                source,
                failed,
            })
        })
        .collect();
    let failed = cases(doc)
        .filter(|c| !c.checks_passed)
        .map(|c| c.id.clone())
        .collect();
    let noisy =
        cases(doc).filter(|c| c.noisy).count() + derived(doc).filter(|d| derived_noisy(d)).count();
    Datasheet {
        machine: machine(doc),
        lines,
        failed,
        noisy,
        figures: cases(doc).count() + derived(doc).count(),
    }
}

/// How many costs a sheet can hold: a run that measured every headline shows them all.
pub fn most_lines() -> usize {
    HEADLINES.len()
}

/// Failed cases named on the sheet before the rest are only counted.
const FAILED_NAMED: usize = 4;

impl Datasheet {
    /// The sheet as text for `width` columns (80 when unknown): a title line, the machine,
    /// one line per cost, then the checks and the noisy figures.
    pub fn render(&self, width: Option<u16>) -> String {
        let width = usize::from(width.unwrap_or(80)).max(40);
        let mut out = String::new();
        out += &wrap_words(
            "What the OS costs a program here (median, 95 % CI, source)",
            width,
        );
        out.push('\n');
        out += &wrap_words(&self.machine, width);
        out.push('\n');
        if self.lines.is_empty() {
            out += "  no headline cost was measured by this run\n";
        }
        for l in &self.lines {
            let (value, ci) = match l.value {
                Value::Ns { ns, ci95 } => {
                    let half = (ci95[1] - ci95[0]) / 2.0 / ns.abs().max(f64::MIN_POSITIVE);
                    let ci = if half.is_finite() {
                        format!("±{:.1}%", half * 100.0)
                    } else {
                        String::new()
                    };
                    (fmt_ns(ns), ci)
                }
                Value::Pct(p) => (format!("{p:.2} %"), String::new()),
            };
            let mark = if l.failed { "✗" } else { " " };
            let head = format!("{mark} {:<22} {value:>9} {ci:>7}", l.label);
            // A source that does not fit beside its figure goes on a line of its own.
            if text_width(&head) + 2 + text_width(&l.source) <= width {
                out += &format!("{head}  {}\n", l.source);
            } else {
                out += &format!("{}\n    {}\n", head.trim_end(), l.source);
            }
        }
        if self.failed.is_empty() {
            let s = if self.figures == 1 { "" } else { "s" };
            out += &format!("✓ every check passed ({} figure{s})\n", self.figures);
        } else {
            let mut named = self.failed[..self.failed.len().min(FAILED_NAMED)].join(", ");
            if self.failed.len() > FAILED_NAMED {
                named += &format!(" and {} more", self.failed.len() - FAILED_NAMED);
            }
            let text = match self.failed.len() {
                1 => format!("✗ 1 case failed a check, its figure not to be trusted: {named}"),
                n => {
                    format!("✗ {n} cases failed a check, their figures not to be trusted: {named}")
                }
            };
            out += &wrap_words(&text, width);
            out.push('\n');
        }
        if self.noisy > 0 {
            let text = format!(
                "~ {} of {} figures have a 95 % CI wider than ±5 %; more --samples (on a quieter \
                 machine) narrows them",
                self.noisy, self.figures
            );
            out += &wrap_words(&text, width);
            out.push('\n');
        }
        out
    }
}

/// Two runs' sheets side by side, `a` the reference: each headline either measured, with both
/// medians and B / A, marked `~` where the two 95 % intervals overlap (no difference this
/// sheet can tell: `oscost compare` tests it), `✗` where a check failed on either side.
pub fn side_by_side(a: &Datasheet, b: &Datasheet, width: Option<u16>) -> String {
    let width = usize::from(width.unwrap_or(80)).max(40);
    let mut out = wrap_words("What the OS costs a program: A against B (medians)", width);
    out.push('\n');
    out += &wrap_words(&format!("A: {}", a.machine), width);
    out.push('\n');
    out += &wrap_words(&format!("B: {}", b.machine), width);
    out.push('\n');
    let text = |v: &Value| match *v {
        Value::Ns { ns, .. } => fmt_ns(ns),
        Value::Pct(p) => format!("{p:.2} %"),
    };
    let number = |v: &Value| match *v {
        Value::Ns { ns, .. } => ns,
        Value::Pct(p) => p,
    };
    let mut overlapping = false;
    out += &format!("  {:<22} {:>9} {:>9} {:>7}\n", "", "A", "B", "B / A");
    for h in HEADLINES {
        let find = |d: &Datasheet| d.lines.iter().find(|l| l.label == h.label).cloned();
        let (la, lb) = (find(a), find(b));
        if la.is_none() && lb.is_none() {
            continue;
        }
        let shown = |l: &Option<Line>| l.as_ref().map_or("-".to_owned(), |l| text(&l.value));
        let (ratio, mark) = match (&la, &lb) {
            (Some(x), Some(y)) if number(&x.value) != 0.0 => {
                let r = number(&y.value) / number(&x.value);
                let overlap = match (&x.value, &y.value) {
                    (Value::Ns { ci95: p, .. }, Value::Ns { ci95: q, .. }) => {
                        p[0] <= q[1] && q[0] <= p[1]
                    }
                    _ => false,
                };
                overlapping |= overlap;
                (format!("{r:.3}"), if overlap { "~" } else { "" })
            }
            _ => ("-".to_owned(), ""),
        };
        let failed = la.as_ref().is_some_and(|l| l.failed) || lb.as_ref().is_some_and(|l| l.failed);
        out += &format!(
            "{} {:<22} {:>9} {:>9} {:>7}{mark}\n",
            if failed { "✗" } else { " " },
            h.label,
            shown(&la),
            shown(&lb),
            ratio
        );
    }
    if overlapping {
        out += &wrap_words(
            "~ the two 95 % intervals overlap: no difference told apart here; `oscost compare A \
             B` tests every figure",
            width,
        );
        out.push('\n');
    }
    for (name, d) in [("A", a), ("B", b)] {
        if !d.failed.is_empty() {
            out += &wrap_words(
                &format!(
                    "✗ {name}: {} case(s) failed a check: {}",
                    d.failed.len(),
                    d.failed[..d.failed.len().min(FAILED_NAMED)].join(", ")
                ),
                width,
            );
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::testkit::{self, doc, experiment};

    #[test]
    fn only_what_the_run_measured_is_on_the_sheet() {
        let mut getpid = testkit::case("syscall.getpid", "call", 150.0);
        getpid.ci95_ns = [147.0, 153.0];
        let mut fault = testkit::case("fault.anon-write", "page", 1200.0);
        fault.checks_passed = false;
        fault.noisy = true;
        let mut noise = experiment(
            "noise",
            vec![
                testkit::case("noise.cpu0", "interruption", 4000.0),
                testkit::case("noise.cpu1", "interruption", 4000.0),
            ],
        );
        noise.cases[0].counters.insert("cpu_lost_pct".into(), 0.25);
        noise.cases[1].counters.insert("cpu_lost_pct".into(), 1.5);
        let d = doc(vec![
            experiment("syscall", vec![getpid]),
            experiment("fault", vec![fault]),
            noise,
        ]);
        let sheet = datasheet(&d);
        let labels: Vec<&str> = sheet.lines.iter().map(|l| l.label).collect();
        assert_eq!(
            labels,
            [
                "system call (getpid)",
                "page fault, anon write",
                "CPU lost to noise"
            ]
        );
        assert_eq!(sheet.lines[2].value, Value::Pct(1.5));
        assert_eq!(sheet.lines[2].source, "noise.cpu1 (the worst CPU)");
        assert!(sheet.lines[1].failed && !sheet.lines[0].failed);
        assert_eq!(sheet.failed, ["fault.anon-write"]);
        assert_eq!((sheet.noisy, sheet.figures), (1, 4));
        let text = sheet.render(Some(80));
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        let narrow = sheet.render(Some(50));
        assert!(narrow.lines().all(|l| l.chars().count() <= 50), "{narrow}");
        assert!(narrow.contains("\n    syscall.getpid\n"), "{narrow}");
        assert!(
            text.contains("  system call (getpid)    150.0 ns   ±2.0%  syscall.getpid\n"),
            "{text}"
        );
        assert!(text.contains("✗ page fault, anon write"), "{text}");
        assert!(text.contains("1.50 %"), "{text}");
        assert!(
            text.contains(
                "✗ 1 case failed a check, its figure not to be trusted: fault.anon-write"
            ),
            "{text}"
        );
        assert!(text.contains("~ 1 of 4 figures"), "{text}");
    }

    #[test]
    fn two_sheets_side_by_side_give_both_medians_and_their_ratio() {
        let run = |ns: f64, half: f64, with_fault: bool| {
            let mut getpid = testkit::case("syscall.getpid", "call", ns);
            getpid.ci95_ns = [ns - half, ns + half];
            let mut exps = vec![experiment("syscall", vec![getpid])];
            if with_fault {
                exps.push(experiment(
                    "fault",
                    vec![testkit::case("fault.anon-write", "page", 1000.0)],
                ));
            }
            datasheet(&doc(exps))
        };
        // Clearly apart: a ratio without a mark.
        let text = side_by_side(&run(100.0, 1.0, true), &run(150.0, 1.0, false), Some(80));
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        let line = text
            .lines()
            .find(|l| l.contains("system call (getpid)"))
            .unwrap();
        assert!(
            line.contains("100.0 ns") && line.contains("150.0 ns"),
            "{line}"
        );
        assert!(line.trim_end().ends_with("1.500"), "{line}");
        // Measured in A only: B's side and the ratio are dashes.
        let fault = text.lines().find(|l| l.contains("page fault")).unwrap();
        assert!(fault.trim_end().ends_with('-'), "{fault}");
        assert!(!text.contains("intervals overlap"), "{text}");
        // Overlapping intervals: marked, and the mark explained.
        let text = side_by_side(&run(100.0, 10.0, false), &run(105.0, 10.0, false), Some(80));
        assert!(text.contains("1.050~"), "{text}");
        assert!(text.contains("intervals overlap"), "{text}");
    }

    #[test]
    fn the_first_source_present_wins_and_slopes_are_read_from_params() {
        let mut tick = experiment("tick", vec![]);
        tick.params.insert(
            "slope".into(),
            serde_json::json!({"signal": {"ns_per_event": 900.0, "ci95_ns": [850.0, 950.0]}}),
        );
        let sheet = datasheet(&doc(vec![tick]));
        assert_eq!(sheet.lines.len(), 1);
        assert_eq!(sheet.lines[0].label, "timer event");
        assert_eq!(sheet.lines[0].source, "tick signal (fitted slope)");
        assert_eq!(
            sheet.lines[0].value,
            Value::Ns {
                ns: 900.0,
                ci95: [850.0, 950.0]
            }
        );
        let text = sheet.render(None);
        assert!(text.contains("✓ every check passed (0 figures)"), "{text}");
    }

    #[test]
    fn a_percentile_is_read_from_its_counter_without_an_interval() {
        let mut w = testkit::case("wakeup.other.1ms", "wake-up", 20_000.0);
        w.counters.insert("lateness_p99_ns".into(), 85_000.0);
        let sheet = datasheet(&doc(vec![experiment("wakeup", vec![w])]));
        assert_eq!(sheet.lines.len(), 1);
        assert_eq!(sheet.lines[0].source, "wakeup.other.1ms (lateness p99)");
        let text = sheet.render(Some(80));
        assert!(
            text.contains(
                "  wake-up late, p99       85.00 µs          wakeup.other.1ms (lateness p99)\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn an_empty_run_says_so() {
        let text = datasheet(&doc(vec![])).render(Some(80));
        assert!(text.contains("no headline cost was measured"), "{text}");
        assert!(text.lines().count() <= 5, "{text}");
    }
}

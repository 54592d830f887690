//! The datasheet: one screen of what the OS costs a program on the machine of a run, each cost
//! one line with its median, its interval and the case it comes from; then the checks that
//! failed and how many figures are noisy. Only what the run measured is shown.

use crate::format::fmt_ns;
use crate::layout::{text_width, wrap_words};
use oscost_model::ids::{
    fault, net, noise, ns, seccomp, shootdown, signal, spawn, switch, syscall, tick, uring, wakeup,
};
use oscost_model::schema::{CaseResult, DerivedResult, ExperimentResult};
use oscost_model::{Held, ResultDoc};

/// Where a headline's figure comes from, the first one present in the run winning.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// A case's median.
    Case(&'static str),
    /// A derived figure's estimate.
    Derived(&'static str),
    /// A counter of a case, ns (a percentile the case computed), with its interval where the
    /// case gives one (`<name>_ci95_lo_ns`, `<name>_ci95_hi_ns` beside `<name>_ns`).
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
        sources: &[Source::Case(syscall::GETPID)],
    },
    Headline {
        label: "1-byte read",
        sources: &[Source::Case(syscall::READ1)],
    },
    Headline {
        label: "seccomp filter, a call",
        sources: &[
            Source::Derived(seccomp::ARGS_1_GETPID_OVER_NONE),
            Source::Derived(seccomp::ALLOW_1_GETPID_OVER_NONE),
        ],
    },
    Headline {
        label: "io_uring NOP, 1/enter",
        sources: &[Source::Case(uring::NOP_B1)],
    },
    Headline {
        label: "page fault, anon write",
        sources: &[Source::Case(fault::ANON_WRITE)],
    },
    Headline {
        // The whole invalidation with the process running on a second CPU, its flush
        // included: `shootdown.madvise.others0` beside it is the same without.
        label: "TLB shootdown, 2 CPUs",
        sources: &[Source::Case(shootdown::MADVISE_ONE_SPINNING)],
    },
    Headline {
        label: "switch, same CPU",
        sources: &[
            Source::Derived(switch::PIPE_SAME_SWITCH_COST),
            Source::Derived(switch::FUTEX_SAME_SWITCH_COST),
        ],
    },
    Headline {
        label: "wake-up, other CPU",
        sources: &[
            Source::Derived(switch::PIPE_CROSS_ONE_WAY),
            Source::Derived(switch::FUTEX_CROSS_ONE_WAY),
        ],
    },
    Headline {
        label: "loopback round trip",
        sources: &[Source::Case(net::TCP_RTT_SAME)],
    },
    Headline {
        label: "thread create + join",
        sources: &[Source::Case(spawn::THREAD)],
    },
    Headline {
        label: "process, posix_spawn",
        sources: &[Source::Case(spawn::POSIX_SPAWN_STATIC_P1MIB)],
    },
    Headline {
        label: "process, fork + wait",
        sources: &[Source::Case(spawn::FORK_P1MIB)],
    },
    Headline {
        label: "container namespaces",
        sources: &[
            Source::Derived(ns::CONTAINER_OVER_NONE),
            Source::Derived(ns::CONTAINER_IN_USER_OVER_NONE),
        ],
    },
    Headline {
        label: "signal to own handler",
        sources: &[Source::Case(signal::CATCH)],
    },
    Headline {
        label: "wake-up late, p99",
        sources: &[Source::Counter(wakeup::OTHER_1MS, "lateness_p99_ns")],
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
    /// A share, %, with its 95 % interval (`NaN` ends where it has none).
    Pct {
        /// The share.
        pct: f64,
        /// Its 95 % interval.
        ci95: [f64; 2],
    },
}

impl Value {
    /// The figure, whatever its unit.
    pub fn number(&self) -> f64 {
        match *self {
            Value::Ns { ns, .. } => ns,
            Value::Pct { pct, .. } => pct,
        }
    }

    /// Its 95 % interval, in its own unit.
    pub fn ci95(&self) -> [f64; 2] {
        match *self {
            Value::Ns { ci95, .. } | Value::Pct { ci95, .. } => ci95,
        }
    }

    /// The figure as shown: `118.7 ns`, `68.00 %`.
    pub fn text(&self) -> String {
        match *self {
            Value::Ns { ns, .. } => fmt_ns(ns),
            Value::Pct { pct, .. } => format!("{pct:.2} %"),
        }
    }

    /// The interval's half-width relative to the figure, `±4.3%`; empty where there is none.
    pub fn half_width_text(&self) -> String {
        let [lo, hi] = self.ci95();
        let x = self.number();
        let half = (hi - lo) / 2.0 / x.abs().max(f64::MIN_POSITIVE);
        if half.is_finite() {
            format!("±{:.1}%", half * 100.0)
        } else {
            String::new()
        }
    }
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
    /// Who else held the CPUs while its experiment ran, where enough to fail a check that is
    /// not the OS's doing: its mark is then `?`, not `✗`.
    pub held: Option<Held>,
    /// Whose time the figure is, where the run can tell (the OS's, other programs', the
    /// host's), in words: shown under the line.
    pub whose: Option<String>,
}

/// The sheet of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Datasheet {
    /// The machine, in one line.
    pub machine: String,
    /// The costs the run measured.
    pub lines: Vec<Line>,
    /// Ids of the cases with a failed check, in run order, on CPUs no one else held.
    pub failed: Vec<String>,
    /// Ids of the cases with a failed check while the host or other programs held the CPUs,
    /// in run order, and how much they held.
    pub failed_held: Vec<(String, Held)>,
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

/// What [`pick`] found: the figure, where it comes from, whether a check failed, and whose
/// time it is.
type Picked = (Value, String, bool, Option<String>);

fn pick(doc: &ResultDoc, source: Source) -> Option<Picked> {
    match source {
        Source::Case(id) => cases(doc).find(|c| c.id == id).map(|c| {
            let v = Value::Ns {
                ns: c.median_ns,
                ci95: c.ci95_ns,
            };
            (v, c.id.clone(), !c.checks_passed, None)
        }),
        Source::Derived(id) => derived(doc).find(|d| d.id == id).map(|d| {
            let v = Value::Ns {
                ns: d.estimate_ns,
                ci95: d.ci95_ns,
            };
            (v, d.id.clone(), d.flagged.is_some(), None)
        }),
        Source::Counter(id, key) => {
            let (e, c) = experiment_case(doc, id)?;
            let ns = *c.counters.get(key)?;
            let name = key.trim_end_matches("_ns");
            let end = |which: &str| {
                c.counters
                    .get(&format!("{name}_ci95_{which}_ns"))
                    .copied()
                    .unwrap_or(f64::NAN)
            };
            let v = Value::Ns {
                ns,
                ci95: [end("lo"), end("hi")],
            };
            let what = name.replace('_', " ");
            // A wake-up's tail: whose time its traced pass's slowest wake-ups were late by.
            let whose = (e.name == wakeup::NAME && key == "lateness_p99_ns")
                .then(|| {
                    let traced = wakeup::traced(id);
                    e.cases.iter().find(|c| c.id == traced).and_then(wake_whose)
                })
                .flatten()
                .or_else(|| others_meanwhile(e));
            Some((v, format!("{id} ({what})"), !c.checks_passed, whose))
        }
        Source::TickSlope(form) => {
            let tick = experiment(doc, tick::NAME)?;
            let s = tick.params.get("slope")?.get(form)?;
            let ns = s.get("ns_per_event")?.as_f64()?;
            let ci = s.get("ci95_ns")?;
            let ci95 = [ci.get(0)?.as_f64()?, ci.get(1)?.as_f64()?];
            let failed = tick.cases.iter().any(|c| !c.checks_passed);
            Some((
                Value::Ns { ns, ci95 },
                format!("tick {form} (fitted slope)"),
                failed,
                None,
            ))
        }
        Source::NoiseLost => {
            let noise = experiment(doc, noise::NAME)?;
            let worst = noise
                .cases
                .iter()
                // The untraced spins: a traced one's loss includes tracing's.
                .filter(|c| c.params.get("kernel_view").and_then(|v| v.as_bool()) != Some(true))
                .filter_map(|c| Some((c, *c.counters.get("cpu_lost_pct")?)))
                .max_by(|a, b| a.1.total_cmp(&b.1))?;
            let end = |k: &str| worst.0.counters.get(k).copied().unwrap_or(f64::NAN);
            // The same CPU's traced spin, found by the typed id rather than a built string.
            let traced = match noise::Id::parse(&worst.0.id) {
                Some(noise::Id::Cpu(cpu)) => {
                    let id = noise::Id::Traced(cpu).to_string();
                    noise.cases.iter().find(|c| c.id == id)
                }
                _ => None,
            };
            let whose = traced
                .and_then(noise_whose)
                .or_else(|| others_meanwhile(noise));
            Some((
                Value::Pct {
                    pct: worst.1,
                    ci95: [end("cpu_lost_ci95_lo_pct"), end("cpu_lost_ci95_hi_pct")],
                },
                format!("{} (the worst CPU)", worst.0.id),
                !worst.0.checks_passed,
                whose,
            ))
        }
    }
}

/// A case by id, with its experiment.
fn experiment_case<'a>(
    doc: &'a ResultDoc,
    id: &str,
) -> Option<(&'a ExperimentResult, &'a CaseResult)> {
    doc.experiments
        .iter()
        .find_map(|e| Some((e, e.cases.iter().find(|c| c.id == id)?)))
}

/// A share and its interval in words: `0.32 % (0.27–0.37)`, the interval left out where it
/// is missing or nothing was lost.
fn share_text(pct: f64, lo: Option<f64>, hi: Option<f64>) -> String {
    match (lo, hi) {
        (Some(lo), Some(hi)) if hi > 0.0 => format!("{pct:.2} % ({lo:.2}–{hi:.2})"),
        _ => format!("{pct:.2} %"),
    }
}

/// The OS's, other programs' and outside-the-view shares of a traced case in words, each with
/// its interval: counters `{prefix}{who}{suffix}_pct` and their `_ci95_lo_pct`, `_ci95_hi_pct`.
fn whose_split(traced: &CaseResult, prefix: &str, suffix: &str) -> Option<String> {
    let get = |k: String| traced.counters.get(&k).copied();
    let part = |who: &str| {
        let at = format!("{prefix}{who}{suffix}");
        Some(share_text(
            get(format!("{at}_pct"))?,
            get(format!("{at}_ci95_lo_pct")),
            get(format!("{at}_ci95_hi_pct")),
        ))
    };
    Some(format!(
        "the OS {}, other programs {}, outside the guest kernel's view {}",
        part("os")?,
        part("programs")?,
        part("outside")?
    ))
}

/// Whose the time a traced noise spin lost was: the OS's, other programs' and the host's
/// shares, each with its interval; `None` for a case from before the split.
fn noise_whose(traced: &CaseResult) -> Option<String> {
    let lost = traced.counters.get("cpu_lost_pct")?;
    Some(format!(
        "traced again ({lost:.2} % lost): {}",
        whose_split(traced, "", "_lost")?
    ))
}

/// Whose time a traced wake-up pass's slowest wake-ups were late by: the OS's, other
/// programs' and outside the guest kernel's view, each with its interval; `None` for a case
/// from before the split.
fn wake_whose(traced: &CaseResult) -> Option<String> {
    let get = |k: &str| traced.counters.get(k).copied();
    Some(format!(
        "traced again, its slowest {:.0} wake-ups ({} late on average): {}",
        get("tail.wakeups")?,
        fmt_ns(get("tail.lateness_mean_ns")?),
        whose_split(traced, "tail.", "")?
    ))
}

/// Other programs' share of the CPUs while `e` ran, where it was above the quiet threshold
/// (2 %): time that was theirs, not the OS's.
fn others_meanwhile(e: &ExperimentResult) -> Option<String> {
    let share = e.load.as_ref()?.foreign_cpu_share;
    (share > 0.02).then(|| {
        format!(
            "other programs used {:.0} % of the CPUs meanwhile (their time, not the OS's)",
            share * 100.0
        )
    })
}

/// The experiment a headline's figure comes from.
fn experiment_of(doc: &ResultDoc, source: Source) -> Option<&ExperimentResult> {
    match source {
        Source::Case(id) | Source::Counter(id, _) => experiment_case(doc, id).map(|(e, _)| e),
        Source::Derived(id) => doc
            .experiments
            .iter()
            .find(|e| e.derived.iter().any(|d| d.id == id)),
        Source::TickSlope(_) => experiment(doc, tick::NAME),
        Source::NoiseLost => experiment(doc, noise::NAME),
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
            let (from, (value, source, failed, whose)) =
                h.sources.iter().find_map(|&s| Some((s, pick(doc, s)?)))?;
            let held = failed
                .then(|| experiment_of(doc, from).and_then(ExperimentResult::held))
                .flatten();
            Some(Line {
                label: h.label,
                value,
                source,
                failed,
                held,
                whose,
            })
        })
        .collect();
    let (mut failed, mut failed_held) = (Vec::new(), Vec::new());
    for e in &doc.experiments {
        let held = e.held();
        for c in e.cases.iter().filter(|c| !c.checks_passed) {
            match &held {
                Some(h) => failed_held.push((c.id.clone(), *h)),
                None => failed.push(c.id.clone()),
            }
        }
    }
    let noisy =
        cases(doc).filter(|c| c.noisy).count() + derived(doc).filter(|d| derived_noisy(d)).count();
    Datasheet {
        machine: machine(doc),
        lines,
        failed,
        failed_held,
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
            let (value, ci) = (l.value.text(), l.value.half_width_text());
            let mark = match (l.failed, &l.held) {
                (false, _) => " ",
                (true, None) => "✗",
                (true, Some(_)) => "?",
            };
            let head = format!("{mark} {:<22} {value:>9} {ci:>7}", l.label);
            // A source that does not fit beside its figure goes on a line of its own.
            if text_width(&head) + 2 + text_width(&l.source) <= width {
                out += &format!("{head}  {}\n", l.source);
            } else {
                out += &format!("{}\n    {}\n", head.trim_end(), l.source);
            }
            if let Some(w) = &l.whose {
                for line in wrap_words(w, width.saturating_sub(4)).lines() {
                    out += &format!("    {line}\n");
                }
            }
        }
        if !self.failed_held.is_empty() {
            let ids: Vec<&str> = self.failed_held.iter().map(|(id, _)| id.as_str()).collect();
            let mut named = ids[..ids.len().min(FAILED_NAMED)].join(", ");
            if ids.len() > FAILED_NAMED {
                named += &format!(" and {} more", ids.len() - FAILED_NAMED);
            }
            let held: Vec<Held> = self.failed_held.iter().map(|(_, h)| *h).collect();
            let text = format!(
                "? {} failed a check while {}: not the OS's doing, run again when the machine \
                 is quiet: {named}",
                match ids.len() {
                    1 => "1 case".to_owned(),
                    n => format!("{n} cases"),
                },
                Held::words(&held)
            );
            out += &wrap_words(&text, width);
            out.push('\n');
        }
        if self.failed.is_empty() && self.failed_held.is_empty() {
            let s = if self.figures == 1 { "" } else { "s" };
            out += &format!("✓ every check passed ({} figure{s})\n", self.figures);
        } else if !self.failed.is_empty() {
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
                "~ {} of {} figures' 95 % CI is wider than ±5 %: more --samples narrows it",
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
    let text = |v: &Value| v.text();
    let number = |v: &Value| v.number();
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
                let (p, q) = (x.value.ci95(), y.value.ci95());
                // NaN ends (no interval) compare false: no overlap claimed.
                let overlap = p[0] <= q[1] && q[0] <= p[1];
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
        assert_eq!(sheet.lines[2].value.number(), 1.5);
        assert!(sheet.lines[2].value.ci95().iter().all(|v| v.is_nan()));
        assert_eq!(sheet.lines[2].whose, None);
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
    fn a_check_failed_while_the_host_held_the_cpus_is_not_laid_at_the_os_door() {
        let mut fault = testkit::case("fault.anon-write", "page", 1200.0);
        fault.checks_passed = false;
        let mut rtt = testkit::case("net.udp.rtt.cross", "round trip", 660_000.0);
        rtt.checks_passed = false;
        let mut getpid = testkit::case("syscall.getpid", "call", 150.0);
        getpid.checks_passed = false;
        let load = |steal_s: f64, foreign: f64| oscost_model::env::RunLoad {
            steal_s: Some(steal_s),
            foreign_cpu_share: foreign,
            quiet: false,
            ..oscost_model::example::quiet_load(0.8)
        };
        let mut f = experiment("fault", vec![fault]);
        f.load = Some(load(0.4, 0.01));
        let mut n = experiment("net", vec![rtt]);
        n.load = Some(load(0.35, 0.3));
        let mut q = experiment("syscall", vec![getpid]);
        q.load = Some(load(0.0, 0.02));
        let sheet = datasheet(&doc(vec![q, f, n]));
        assert_eq!(sheet.failed, ["syscall.getpid"]);
        let held: Vec<&str> = sheet
            .failed_held
            .iter()
            .map(|(id, _)| id.as_str())
            .collect();
        assert_eq!(held, ["fault.anon-write", "net.udp.rtt.cross"]);
        assert!(sheet.lines[0].held.is_none());
        assert_eq!(
            sheet.lines[1].held,
            Some(Held {
                host: 0.25,
                programs: 0.01
            })
        );
        let text = sheet.render(Some(80));
        assert!(text.contains("✗ system call (getpid)"), "{text}");
        assert!(text.contains("? page fault, anon write"), "{text}");
        assert!(
            text.contains(
                "? 2 cases failed a check while the host took 22–25 % of the CPUs (steal) and\n\
                 other programs took 30 % of the CPUs: not the OS's doing, run again when the\n\
                 machine is quiet: fault.anon-write, net.udp.rtt.cross"
            ),
            "{text}"
        );
        assert!(text.contains("✗ 1 case failed a check"), "{text}");
        // Only held ones: no line says every check passed.
        let mut only = datasheet(&doc(vec![experiment("net", vec![sheet_case()])]));
        only.failed_held = vec![(
            "net.udp.rtt.cross".into(),
            Held {
                host: 0.3,
                programs: 0.0,
            },
        )];
        let text = only.render(Some(80));
        assert!(!text.contains("every check passed"), "{text}");
        assert!(!text.contains("✗"), "{text}");
    }

    fn sheet_case() -> CaseResult {
        testkit::case("net.udp.rtt.cross", "round trip", 60_000.0)
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
    fn a_percentile_shows_its_interval_and_other_programs_load_where_the_case_gives_them() {
        let mut w = testkit::case("wakeup.other.1ms", "wake-up", 20_000.0);
        w.counters.insert("lateness_p99_ns".into(), 80_000.0);
        w.counters
            .insert("lateness_p99_ci95_lo_ns".into(), 72_000.0);
        w.counters
            .insert("lateness_p99_ci95_hi_ns".into(), 88_000.0);
        let mut e = experiment("wakeup", vec![w]);
        let mut load = oscost_model::example::quiet_load(1.0);
        load.foreign_cpu_share = 0.34;
        e.load = Some(load);
        let sheet = datasheet(&doc(vec![e]));
        assert_eq!(sheet.lines[0].value.ci95(), [72_000.0, 88_000.0]);
        let text = sheet.render(Some(80));
        assert!(text.contains("80.00 µs  ±10.0%"), "{text}");
        assert!(
            text.contains("    other programs used 34 % of the CPUs meanwhile"),
            "{text}"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    }

    #[test]
    fn the_wake_up_line_says_whose_time_its_slowest_traced_wake_ups_were_late_by() {
        let mut w = testkit::case("wakeup.other.1ms", "wake-up", 20_000.0);
        w.counters.insert("lateness_p99_ns".into(), 80_000.0);
        let mut traced = testkit::case("wakeup.other.1ms.kernel", "wake-up", 21_000.0);
        for (k, v) in [
            ("tail.wakeups", 20.0),
            ("tail.lateness_mean_ns", 1_250_000.0),
            ("tail.os_pct", 30.0),
            ("tail.os_ci95_lo_pct", 15.0),
            ("tail.os_ci95_hi_pct", 45.0),
            ("tail.programs_pct", 0.0),
            ("tail.programs_ci95_lo_pct", 0.0),
            ("tail.programs_ci95_hi_pct", 0.0),
            ("tail.outside_pct", 70.0),
            ("tail.outside_ci95_lo_pct", 55.0),
            ("tail.outside_ci95_hi_pct", 85.0),
        ] {
            traced.counters.insert(k.into(), v);
        }
        let mut e = experiment("wakeup", vec![w, traced]);
        let mut load = oscost_model::example::quiet_load(1.0);
        load.foreign_cpu_share = 0.34;
        e.load = Some(load);
        let sheet = datasheet(&doc(vec![e.clone()]));
        // The trace's split, not the load's share, where the trace gave one.
        assert_eq!(
            sheet.lines[0].whose.as_deref(),
            Some(
                "traced again, its slowest 20 wake-ups (1.250 ms late on average): the OS \
                 30.00 % (15.00–45.00), other programs 0.00 %, outside the guest kernel's \
                 view 70.00 % (55.00–85.00)"
            )
        );
        let text = sheet.render(Some(80));
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        // A traced case from before the split: the load's share, as before.
        e.cases[1].counters.retain(|k, _| !k.starts_with("tail."));
        let sheet = datasheet(&doc(vec![e]));
        assert_eq!(
            sheet.lines[0].whose.as_deref(),
            Some("other programs used 34 % of the CPUs meanwhile (their time, not the OS's)")
        );
    }

    #[test]
    fn the_noise_line_says_whose_time_was_lost() {
        let mut plain = testkit::case("noise.cpu1", "interruption", 4000.0);
        plain.counters.insert("cpu_lost_pct".into(), 2.0);
        plain.counters.insert("cpu_lost_ci95_lo_pct".into(), 1.5);
        plain.counters.insert("cpu_lost_ci95_hi_pct".into(), 2.5);
        let mut traced = testkit::case("noise.cpu1.kernel", "interruption", 4000.0);
        traced
            .params
            .insert("kernel_view".into(), serde_json::json!(true));
        for (k, v) in [
            ("cpu_lost_pct", 2.1),
            ("os_lost_pct", 0.3),
            ("os_lost_ci95_lo_pct", 0.25),
            ("os_lost_ci95_hi_pct", 0.35),
            ("programs_lost_pct", 0.0),
            ("programs_lost_ci95_lo_pct", 0.0),
            ("programs_lost_ci95_hi_pct", 0.0),
            ("outside_lost_pct", 1.8),
            ("outside_lost_ci95_lo_pct", 1.6),
            ("outside_lost_ci95_hi_pct", 2.0),
        ] {
            traced.counters.insert(k.into(), v);
        }
        let sheet = datasheet(&doc(vec![experiment("noise", vec![plain, traced])]));
        let l = &sheet.lines[0];
        assert_eq!(l.value.number(), 2.0);
        assert_eq!(l.value.half_width_text(), "±25.0%");
        let text = sheet.render(Some(80));
        assert!(
            text.contains("CPU lost to noise         2.00 %  ±25.0%"),
            "{text}"
        );
        let said = text.replace("\n    ", " ");
        assert!(
            said.contains(
                "traced again (2.10 % lost): the OS 0.30 % (0.25–0.35), other programs 0.00 %, \
                 outside the guest kernel's view 1.80 % (1.60–2.00)"
            ),
            "{text}"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    }

    #[test]
    fn an_empty_run_says_so() {
        let text = datasheet(&doc(vec![])).render(Some(80));
        assert!(text.contains("no headline cost was measured"), "{text}");
        assert!(text.lines().count() <= 5, "{text}");
    }
}

//! The bill priced, summed and rendered: each measured part of a program's time beside its
//! price (count × the datasheet's figure for that operation), the residual the parts leave,
//! and one screen at 80 columns. Reads the model only.

use crate::format::{fmt_ns, grouped};
use oscost_model::bill::{Bill, CallDepth, Counter, Ending, Part, Price, Target};
use oscost_model::ids::{fault, ns, seccomp, switch, syscall};
use oscost_model::schema::ResultDoc;
use std::collections::BTreeMap;

mod compare;
mod cpus;
mod fleet;
mod predict;
mod reprice;
pub use compare::{
    compare_bills, render_bill_comparison, BillComparison, BillRow, BillVerdict,
    BILL_COMPARE_SCHEMA,
};
pub use cpus::{predict_cpus, several_cpus, wake_price, NO_CROSS_COUNT, WAKE_PRICED_BY};
pub use fleet::{bill_fleet, render_bill_fleet, BillFleet, FleetBillRow, BILL_FLEET_SCHEMA};
pub use predict::{
    check_under, predict_container, predict_seccomp, render_check, render_prediction, Paid,
    PartChange, Prediction, UnderCheck, WITHIN,
};
pub use reprice::{render_repricing, reprice, RepricedLine, Repricing};

/// What a price is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priced {
    /// One system call by name (the datasheet measured exactly that call).
    Call(&'static str),
    /// Any system call's entry and exit, no work: a floor.
    CallFloor,
    /// A write to a page not mapped yet (the price is the anonymous kind's).
    FaultWriteMissing,
    /// A read of a page not mapped yet (the anonymous kind's: the zero page).
    FaultReadMissing,
    /// A write to a write-protected page (copy-on-write).
    FaultWritePresent,
    /// A switch between two tasks on one CPU.
    Switch,
    /// What a container runtime's default seccomp profile adds to an allowed call (the
    /// kernel's action cache answering it).
    SeccompProfile,
    /// What a container's namespaces add to a program's life, made and taken down once.
    ContainerSetup,
}

/// The datasheet's cases behind each price, in the order tried.
const SOURCES: &[(Priced, &[(&str, bool)])] = &[
    (Priced::Call("getpid"), &[(syscall::GETPID, false)]),
    (Priced::Call("getppid"), &[(syscall::GETPPID, false)]),
    (Priced::Call("lseek"), &[(syscall::LSEEK, false)]),
    (
        Priced::Call("clock_gettime"),
        &[(syscall::CLOCK_GETTIME_SYSCALL, false)],
    ),
    (Priced::CallFloor, &[(syscall::ENOSYS, false)]),
    (Priced::FaultWriteMissing, &[(fault::ANON_WRITE, false)]),
    (Priced::FaultReadMissing, &[(fault::ANON_READ, false)]),
    (Priced::FaultWritePresent, &[(fault::COW, false)]),
    (
        Priced::Switch,
        &[
            (switch::PIPE_SAME_SWITCH_COST, true),
            (switch::FUTEX_SAME_SWITCH_COST, true),
        ],
    ),
    (
        Priced::SeccompProfile,
        &[(seccomp::PROFILE_GETPID_OVER_NONE, true)],
    ),
    (Priced::ContainerSetup, &[(ns::CONTAINER_OVER_NONE, true)]),
];

/// What the profile file of SHA-256 `digest` adds to an allowed call, from `doc` (run `run`):
/// its `seccomp.file.getpid.over_none`, when the run's `seccomp --profile` measured a file of
/// that content and the figure is not flagged.
pub fn seccomp_file_price(doc: &ResultDoc, run: &str, digest: &str) -> Option<Price> {
    doc.experiments
        .iter()
        .filter(|e| {
            e.name == seccomp::NAME
                && e.params
                    .get(seccomp::PROFILE_DIGEST)
                    .and_then(|d| d.as_str())
                    == Some(digest)
        })
        .flat_map(|e| e.derived.iter())
        .find(|d| {
            d.id == seccomp::FILE_GETPID_OVER_NONE
                && d.flagged.is_none()
                && d.estimate_ns.is_finite()
        })
        .map(|d| Price {
            case: d.id.clone(),
            run: run.to_owned(),
            ns: d.estimate_ns,
            ci95: d.ci95_ns,
            floor: false,
        })
}

/// Prices read from datasheet runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceBook {
    prices: BTreeMap<Priced, Price>,
    /// The runs they come from.
    pub runs: Vec<String>,
}

impl PriceBook {
    /// Adds, from `doc` (run `run`), every price the book lacks yet: fed the newest run
    /// first, each price comes from the newest run that measured it.
    pub fn add_run(&mut self, doc: &ResultDoc, run: &str) {
        let mut used = false;
        for (what, sources) in SOURCES {
            if self.prices.contains_key(what) {
                continue;
            }
            for (id, derived) in *sources {
                let found = if *derived {
                    doc.experiments
                        .iter()
                        .flat_map(|e| e.derived.iter())
                        .find(|d| d.id == *id && d.flagged.is_none())
                        .map(|d| (d.estimate_ns, d.ci95_ns))
                } else {
                    doc.experiments
                        .iter()
                        .flat_map(|e| e.cases.iter())
                        .find(|c| c.id == *id && c.checks_passed)
                        .map(|c| (c.median_ns, c.ci95_ns))
                };
                // A difference (what a filter adds) may come out at or below zero: still a
                // price. Every other price is a positive time.
                let difference = matches!(what, Priced::SeccompProfile | Priced::ContainerSetup);
                if let Some((ns, ci95)) =
                    found.filter(|(ns, _)| ns.is_finite() && (difference || *ns > 0.0))
                {
                    self.prices.insert(
                        *what,
                        Price {
                            case: (*id).to_owned(),
                            run: run.to_owned(),
                            ns,
                            ci95,
                            floor: *what == Priced::CallFloor,
                        },
                    );
                    used = true;
                    break;
                }
            }
        }
        if used {
            self.runs.push(run.to_owned());
        }
    }

    /// The book a bill was priced with, from the prices it keeps (`Bill::prices`).
    pub fn from_prices(prices: &[Price]) -> PriceBook {
        let mut book = PriceBook::default();
        for p in prices {
            let what = SOURCES
                .iter()
                .find(|(_, ids)| ids.iter().any(|(id, _)| *id == p.case))
                .map(|(w, _)| *w);
            if let Some(w) = what {
                book.prices.entry(w).or_insert_with(|| p.clone());
                if !book.runs.contains(&p.run) {
                    book.runs.push(p.run.clone());
                }
            }
        }
        book
    }

    /// Every price, in the order of [`Priced`].
    pub fn prices(&self) -> impl Iterator<Item = &Price> {
        self.prices.values()
    }

    /// Whether every price is there.
    pub fn complete(&self) -> bool {
        SOURCES.iter().all(|(w, _)| self.prices.contains_key(w))
    }

    /// The price of `what`.
    pub fn get(&self, what: Priced) -> Option<&Price> {
        self.prices.get(&what)
    }

    /// The price of system call `name`: its own, else the floor.
    pub fn call(&self, name: &str) -> Option<&Price> {
        SOURCES
            .iter()
            .find_map(|(w, _)| match w {
                Priced::Call(n) if *n == name => self.prices.get(w),
                _ => None,
            })
            .or_else(|| self.prices.get(&Priced::CallFloor))
    }
}

/// System calls shown by name; the rest are summed on one line.
const CALL_LINES: usize = 8;

fn share(ns: f64, of: f64) -> f64 {
    if of > 0.0 {
        100.0 * ns / of
    } else {
        0.0
    }
}

/// Prices the bill's lines with `book`, sums its parts, and names where the measured time
/// and the price part by more than the price's interval allows (an indirect cost).
pub fn assemble(bill: &mut Bill, book: Option<&PriceBook>, prices_from: Option<String>) {
    bill.prices_from = prices_from;
    bill.prices = book.map_or_else(Vec::new, |b| b.prices().cloned().collect());
    if let Some(b) = book {
        for c in &mut bill.calls {
            c.price = b.call(&c.name).cloned();
        }
    }
    let total = bill.task_time_ns as f64;
    let mut parts = Vec::new();
    let timed = bill.mechanism.depth == CallDepth::Time && bill.mechanism.name == Counter::Bpf;
    let part = |name: &str, level: u8, count: Option<u64>, ns: f64| Part {
        name: name.to_owned(),
        level,
        count,
        time_ns: ns,
        share_pct: share(ns, total),
        priced_ns: None,
        price: None,
    };
    let calls_ns: f64 = bill.calls.iter().filter_map(|c| c.time_ns).sum::<u64>() as f64;
    let irq_ns: f64 = bill.interrupts.iter().map(|i| i.time_ns).sum::<u64>() as f64;
    let probe_ns = bill.probe_cost.as_ref().map_or(0.0, |p| p.total_ns);
    let sched = bill.sched.clone();
    // With the probe, the time on a CPU is its own (the kernel's figure also holds the
    // wake-ups' latency, which the bill counts as waiting), split into user and kernel in the
    // kernel's proportions; without it, the kernel's accounting as it is.
    let (user, kernel) = match (&bill.usage, &sched) {
        (Some(u), Some(s)) if u.user_ns + u.system_ns > 0 => {
            let on = s.oncpu_ns as f64;
            let sampled = on * u.system_ns as f64 / (u.user_ns + u.system_ns) as f64;
            // The kernel splits user from system time by where its ticks landed: over a
            // short run that can put less in the kernel than the probe timed there, which is
            // then the better figure.
            let timed_kernel = if timed { calls_ns } else { 0.0 } + irq_ns + probe_ns;
            let kernel = sampled.max(timed_kernel.min(on));
            (on - kernel, kernel)
        }
        // Without the probe's times (perf counts), the kernel's split, but never less in the
        // kernel than the counter's own measured cost, which a short run's ticks can miss.
        (Some(u), _) => {
            let cpu = (u.user_ns + u.system_ns) as f64;
            let kernel = (u.system_ns as f64).max(probe_ns.min(cpu));
            (cpu - kernel, kernel)
        }
        (None, Some(s)) => {
            let k = calls_ns + irq_ns;
            (s.oncpu_ns as f64 - k, k)
        }
        (None, None) => (f64::NAN, f64::NAN),
    };
    let mut explained = 0.0;
    let mut unpriced_notes: Vec<String> = Vec::new();
    // Without the kernel's accounting (an attached process that ended first) and without the
    // probe's times, the CPU is not known: the calls counted are still shown, on their own.
    let known = user.is_finite();
    if known {
        parts.push(part("user CPU", 0, None, user));
        parts.push(part("kernel CPU", 0, None, kernel));
        explained += user + kernel;
    }
    if bill.mechanism.name != Counter::None {
        let level = u8::from(known);
        let mut rest = kernel;
        let n_shown = bill.calls.len().min(CALL_LINES);
        for c in &bill.calls[..n_shown] {
            let ns = c.time_ns.unwrap_or(0) as f64;
            let mut p = part(&c.name, level, Some(c.count), ns);
            if let Some(pr) = &c.price {
                p.priced_ns = Some(pr.ns * c.count as f64);
                p.price = Some(pr.clone());
            }
            if timed {
                rest -= ns;
            }
            parts.push(p);
        }
        if bill.calls.len() > n_shown {
            let others = &bill.calls[n_shown..];
            let n: u64 = others.iter().map(|c| c.count).sum();
            let ns: f64 = others.iter().filter_map(|c| c.time_ns).sum::<u64>() as f64;
            let mut p = part(
                &format!("{} other system calls", others.len()),
                level,
                Some(n),
                ns,
            );
            let priced: Option<f64> = others
                .iter()
                .map(|c| c.price.as_ref().map(|pr| pr.ns * c.count as f64))
                .sum();
            p.priced_ns = priced;
            // Any of them priced at the floor makes the sum a floor.
            p.price = others
                .iter()
                .filter_map(|c| c.price.as_ref())
                .find(|pr| pr.floor)
                .cloned();
            if timed {
                rest -= ns;
            }
            parts.push(p);
        }
        // The rest of the kernel's time is split only where that time is known.
        if known {
            if !bill.interrupts.is_empty() {
                let n = bill.interrupts.iter().map(|i| i.count).sum();
                parts.push(part("interrupts while it ran", 1, Some(n), irq_ns));
                rest -= irq_ns;
            }
            if probe_ns > 0.0 {
                let n = bill.calls.iter().map(|c| c.count).sum();
                parts.push(part("the probe's own cost", 1, Some(n), probe_ns));
                rest -= probe_ns;
            }
            // perf counts no faults: the kernel's own count of them, where it is beside the bill.
            let faults = match (bill.mechanism.name, &bill.usage) {
                (Counter::Perf, Some(u)) => u.minor_faults + u.major_faults,
                _ => bill.faults_user.total() + bill.faults_kernel.total(),
            };
            let name = if timed {
                "faults, exec, exit, the rest"
            } else {
                "calls, faults, exec, the rest"
            };
            let mut p = part(name, 1, Some(faults), rest);
            if let Some(b) = book {
                let fu = bill.faults_user;
                let fk = bill.faults_kernel;
                let kinds = [
                    (
                        Priced::FaultWriteMissing,
                        fu.write_missing + fk.write_missing,
                        "first writes",
                    ),
                    (
                        Priced::FaultReadMissing,
                        fu.read_missing + fk.read_missing,
                        "first reads",
                    ),
                    (
                        Priced::FaultWritePresent,
                        fu.write_present + fk.write_present,
                        "copy-on-write",
                    ),
                ];
                let mut priced = 0.0;
                let mut unpriced = Vec::new();
                for (w, n, name) in kinds.iter().filter(|k| k.1 > 0) {
                    match b.get(*w) {
                        Some(pr) => {
                            priced += pr.ns * *n as f64;
                            p.price.get_or_insert_with(|| pr.clone());
                        }
                        None => unpriced.push(format!("{} {name}", grouped(*n as f64))),
                    }
                }
                if p.price.is_some() {
                    p.priced_ns = Some(priced);
                }
                if !unpriced.is_empty() {
                    unpriced_notes.push(format!(
                        "faults without a price (`oscost fault` measures them): {}",
                        unpriced.join(", ")
                    ));
                }
            }
            parts.push(p);
        }
    }
    if let Some(s) = &sched {
        let switches = s.involuntary + s.wakeups;
        let mut w = part("waiting for a CPU", 0, Some(switches), s.wait_ns as f64);
        let mut b = part(
            "blocked (sleep, I/O, locks)",
            0,
            Some(s.voluntary),
            s.blocked_ns as f64,
        );
        if let Some(pr) = book.and_then(|b| b.get(Priced::Switch)) {
            b.priced_ns = Some(pr.ns * s.voluntary as f64);
            b.price = Some(pr.clone());
            w.priced_ns = Some(pr.ns * s.involuntary as f64);
            w.price = Some(pr.clone());
        }
        explained += (s.wait_ns + s.blocked_ns) as f64;
        parts.push(w);
        parts.push(b);
    } else if let Some(wait) = bill.usage.as_ref().and_then(|u| u.first_task_wait_ns) {
        // Without the probe's switches, the kernel's own run-queue wait, of the first task
        // only (a command of one process: all of it); the time blocked stays in the residual.
        parts.push(part("waiting for a CPU (first task)", 0, None, wait as f64));
        explained += wait as f64;
    }
    bill.residual_ns = total - explained;
    bill.explained_pct = if total > 0.0 && explained.is_finite() {
        share(explained, total)
    } else {
        0.0
    };
    bill.parts = parts;
    if book.is_some() {
        bill.notes.extend(unpriced_notes);
    }
    indirect_notes(bill);
}

/// One line per priced system call whose time a call differs from its price by more than
/// the price's interval and the histogram's ±10 % allow.
fn indirect_notes(bill: &mut Bill) {
    for c in &bill.calls {
        let (Some(t), Some(pr)) = (c.time_ns, &c.price) else {
            continue;
        };
        if pr.floor || c.count == 0 {
            continue;
        }
        let each = t as f64 / c.count as f64;
        let lo = pr.ci95[0].min(pr.ns) * 0.9;
        let hi = pr.ci95[1].max(pr.ns) * 1.1;
        if each > hi {
            bill.notes.push(format!(
                "{}: {} a call here against {} on the datasheet ({}): the difference is what \
                 the datasheet's warm loop cannot see (cold caches, contention, the \
                 arguments), this program's own indirect cost",
                c.name,
                fmt_ns(each),
                fmt_ns(pr.ns),
                pr.case
            ));
        } else if each < lo {
            bill.notes.push(format!(
                "{}: {} a call here against {} on the datasheet ({}): cheaper than the \
                 datasheet's run, which was taken at another time (a machine's speed drifts: \
                 `oscost syscall` now gives a price of this moment)",
                c.name,
                fmt_ns(each),
                fmt_ns(pr.ns),
                pr.case
            ));
        }
    }
}

fn ending(e: Ending) -> String {
    match e {
        Ending::Exited(c) => format!("exit {c}"),
        Ending::Killed(s) => format!("killed by signal {s}"),
        Ending::Running => "still running".into(),
        Ending::Gone => "ended".into(),
    }
}

fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// What was billed, in a few words: the command line, or the process and its name.
pub fn subject(bill: &Bill) -> String {
    let what = match &bill.target {
        Target::Command { argv } => argv.join(" "),
        Target::Process { pid, comm } => format!("process {pid} ({comm})"),
    };
    match &bill.under {
        Some(setting) => format!("{what} under {setting}"),
        None => what,
    }
}

/// The bill as tables for a page: its parts beside their prices, its tasks (when several)
/// and its checks; what `render` prints, cell by cell.
pub fn views(bill: &Bill) -> Vec<crate::views::View> {
    use crate::views::View;
    let total = bill.task_time_ns as f64;
    let mut rows: Vec<Vec<String>> = bill
        .parts
        .iter()
        .map(|p| {
            let indent = if p.level > 0 { "· " } else { "" };
            let priced = match (&p.priced_ns, &p.price) {
                (Some(ns), Some(pr)) if pr.floor => format!("≥{} ({})", fmt_ns(*ns), pr.case),
                (Some(ns), Some(pr)) => format!("{} ({})", fmt_ns(*ns), pr.case),
                _ => "-".into(),
            };
            vec![
                format!("{indent}{}", p.name),
                p.count.map_or("-".into(), |c| grouped(c as f64)),
                fmt_ns(p.time_ns),
                format!("{:.1} %", p.share_pct),
                priced,
            ]
        })
        .collect();
    rows.push(vec![
        "residual (not explained)".into(),
        "-".into(),
        fmt_ns(bill.residual_ns),
        format!("{:.1} %", share(bill.residual_ns, total)),
        "-".into(),
    ]);
    rows.push(vec![
        "task time".into(),
        "-".into(),
        fmt_ns(total),
        "100.0 %".into(),
        "-".into(),
    ]);
    let mut notes = vec![format!(
        "{}; the parts explain {:.1} % of the task time (the tasks' lifetimes summed). Prices: {}.",
        ending(bill.ending),
        bill.explained_pct,
        bill.prices_from.as_deref().unwrap_or("none")
    )];
    notes.extend(bill.notes.iter().cloned());
    let mut v = vec![View {
        detail: Vec::new(),
        title: format!("The bill of {}", subject(bill)),
        head: ["part", "count", "time", "share", "priced (from)"]
            .map(String::from)
            .to_vec(),
        rows,
        notes,
    }];
    if bill.tasks.len() > 1 {
        v.push(View {
            detail: Vec::new(),
            title: "Its tasks".into(),
            head: [
                "task", "tid", "life", "on CPU", "waiting", "blocked", "faults",
            ]
            .map(String::from)
            .to_vec(),
            rows: bill
                .tasks
                .iter()
                .map(|t| {
                    vec![
                        t.comm.clone(),
                        t.tid.to_string(),
                        fmt_ns(t.lifetime_ns as f64),
                        fmt_ns(t.oncpu_ns as f64),
                        fmt_ns(t.wait_ns as f64),
                        fmt_ns(t.blocked_ns as f64),
                        grouped(t.faults as f64),
                    ]
                })
                .collect(),
            notes: Vec::new(),
        });
    }
    v.push(View {
        detail: Vec::new(),
        title: "Its checks".into(),
        head: ["check", "held", "detail"].map(String::from).to_vec(),
        rows: bill
            .checks
            .iter()
            .map(|c| {
                let held = match c.ok {
                    Some(true) => "✓ yes",
                    Some(false) => "✗ no",
                    None => "not checked",
                };
                vec![c.name.clone(), held.into(), c.detail.clone()]
            })
            .collect(),
        notes: Vec::new(),
    });
    v
}

/// A bill's first line at `width` columns (at least 72): what was billed, how it ended, its
/// wall time and tasks.
pub fn headline(bill: &Bill, width: usize) -> String {
    let tasks = bill.tasks.len();
    let head = format!(
        "{}, wall {}, {} task{}",
        ending(bill.ending),
        fmt_ns(bill.wall_ns as f64),
        tasks.max(1),
        if tasks == 1 || tasks == 0 { "" } else { "s" }
    );
    format!(
        "bill of {}  ({head})",
        cut(
            &subject(bill),
            width.max(72).saturating_sub(head.len() + 13)
        )
    )
}

/// The bill on one screen, `width` columns (at least 72 used).
pub fn render(bill: &Bill, width: usize) -> String {
    let width = width.max(72);
    let tasks = bill.tasks.len();
    let mut out = headline(bill, width) + "\n";
    let timed = bill.mechanism.name == Counter::Bpf && bill.mechanism.depth == CallDepth::Time;
    let how = match (bill.mechanism.name, bill.mechanism.depth) {
        (Counter::Bpf, CallDepth::Time) => "counted in the kernel by BPF, each system call timed",
        (Counter::Bpf, _) => "counted in the kernel by BPF, system calls counted (not timed)",
        (Counter::Perf, _) => "system calls counted in the kernel by perf (no BPF: not timed)",
        (Counter::None, _) => "the kernel's accounting only (no BPF)",
    };
    out.push_str(how);
    if let Some(p) = &bill.probe_cost {
        out.push_str(&format!(
            "; the probe adds {} a call ({} in all)",
            fmt_ns(p.per_call_ns),
            fmt_ns(p.total_ns)
        ));
    }
    out.push_str("\n\n");
    let name_w = 30;
    out.push_str(&format!(
        "{:<name_w$} {:>11} {:>10} {:>6} {:>11}\n",
        "", "count", "time", "share", "priced"
    ));
    for p in &bill.parts {
        let indent = if p.level > 0 { "  " } else { "" };
        let name = cut(&format!("{indent}{}", p.name), name_w);
        let count = p.count.map_or(String::new(), |c| grouped(c as f64));
        let priced = match (&p.priced_ns, &p.price) {
            (Some(ns), Some(pr)) if pr.floor => format!("≥{}", fmt_ns(*ns)),
            (Some(ns), _) => fmt_ns(*ns),
            (None, _) => String::new(),
        };
        // A call counted but not timed has no time to show, rather than a zero.
        let untimed = !timed
            && (bill.calls.iter().any(|c| c.name == p.name)
                || p.name.ends_with(" other system calls"));
        let (time, pct) = if untimed {
            ("—".to_owned(), "—".to_owned())
        } else {
            (fmt_ns(p.time_ns), format!("{:.1}%", p.share_pct))
        };
        out.push_str(&format!(
            "{name:<name_w$} {count:>11} {time:>10} {pct:>6} {priced:>11}\n"
        ));
    }
    let total = bill.task_time_ns as f64;
    out.push_str(&format!(
        "{:<name_w$} {:>11} {:>10} {:>5.1}%\n",
        "residual (not explained)",
        "",
        fmt_ns(bill.residual_ns),
        share(bill.residual_ns, total)
    ));
    let label = if tasks > 1 {
        format!("task time ({tasks} tasks' lives)")
    } else {
        "task time".to_owned()
    };
    out.push_str(&format!(
        "{:<name_w$} {:>11} {:>10} {:>5.1}%  explained {:.1} %\n",
        cut(&label, name_w),
        "",
        fmt_ns(total),
        100.0,
        bill.explained_pct
    ));
    let e = &bill.events;
    let mut ev = Vec::new();
    for (n, what) in [
        (e.processes, "processes made"),
        (e.threads, "threads made"),
        (e.execs, "programs executed"),
        (e.signals, "signals"),
        (e.tlb_sent, "TLB shootdowns sent"),
        (e.tlb_received, "received"),
    ] {
        if n > 0 {
            ev.push(format!("{} {what}", grouped(n as f64)));
        }
    }
    let f = bill.faults_user;
    let k = bill.faults_kernel;
    let faults = f.total() + k.total();
    if faults > 0 {
        ev.push(format!(
            "faults: {} first writes, {} first reads, {} copy-on-write ({} in system calls)",
            grouped((f.write_missing + k.write_missing) as f64),
            grouped((f.read_missing + k.read_missing) as f64),
            grouped((f.write_present + k.write_present) as f64),
            grouped(k.total() as f64)
        ));
    }
    if let Some(s) = &bill.sched {
        if let (Some(p50), Some(p99)) = (s.wake_latency_p50_ns, s.wake_latency_p99_ns) {
            ev.push(format!(
                "woken → running: median {}, p99 {}",
                fmt_ns(p50),
                fmt_ns(p99)
            ));
        }
        if let Some(n) = s.cross_cpu_wakeups.filter(|n| *n > 0) {
            ev.push(format!("{} woken by it on another CPU", grouped(n as f64)));
        }
    }
    if !ev.is_empty() {
        out.push('\n');
        out.push_str(&crate::layout::wrap_words(&ev.join(" · "), width));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    if tasks > 1 {
        out.push_str(&format!(
            "\n{:>8} {:<15} {:>10} {:>10} {:>10} {:>10} {:>9}\n",
            "tid", "task", "life", "on CPU", "waiting", "blocked", "faults"
        ));
        for t in bill.tasks.iter().take(8) {
            out.push_str(&format!(
                "{:>8} {:<15} {:>10} {:>10} {:>10} {:>10} {:>9}\n",
                t.tid,
                cut(&t.comm, 15),
                fmt_ns(t.lifetime_ns as f64),
                fmt_ns(t.oncpu_ns as f64),
                fmt_ns(t.wait_ns as f64),
                fmt_ns(t.blocked_ns as f64),
                grouped(t.faults as f64)
            ));
        }
        if tasks > 8 {
            out.push_str(&format!("{:>8} and {} more tasks\n", "", tasks - 8));
        }
    }
    out.push('\n');
    for c in &bill.checks {
        let mark = match c.ok {
            Some(true) => "✓",
            Some(false) => "✗",
            None => "-",
        };
        out.push_str(&crate::layout::wrap_words(
            &format!("{mark} {}: {}", c.name, c.detail),
            width,
        ));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    let prices = match &bill.prices_from {
        Some(p) => format!("prices: {p}"),
        None => "prices: none".into(),
    };
    out.push_str(&crate::layout::wrap_words(&prices, width));
    if !out.ends_with('\n') {
        out.push('\n');
    }
    for n in &bill.notes {
        out.push_str(&crate::layout::wrap_words(&format!("! {n}"), width));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests;

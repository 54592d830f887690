//! A bill predicted under a setting it did not run under: its counts times what the setting
//! adds per operation, as the datasheet measured it. For a seccomp profile every system call
//! passes the filter, so the prediction is the calls times what the profile adds to a call,
//! and the calls the profile would refuse are named: the program would not make them as it did.
//! A container is paid once, in the wall time: its namespaces made when the program is born
//! and taken down when it ends, as `ns.container.over_none` prices them; nothing the program
//! does inside them is dearer by any price the datasheet holds.

use super::share;
use crate::format::{fmt_ns, grouped};
use oscost_model::bill::{Bill, Price};

/// How a setting's price is paid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paid {
    /// By every system call, in the time on a CPU (a seccomp filter).
    PerCall,
    /// Once, in the wall time (a container's namespaces, made and taken down).
    Once,
    /// By every wake-up that crossed CPUs, in the wall time (pinned to one CPU: see
    /// [`super::cpus`]).
    PerWakeUp,
}

/// What a setting is predicted to add to a bill.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// The setting, as the user named it.
    pub setting: String,
    /// How its price is paid, and so which time the check holds it against.
    pub paid: Paid,
    /// What it adds to one system call ([`Paid::PerCall`]), or once ([`Paid::Once`]).
    pub per_call: Price,
    /// The calls priced: every call the program made (1 for [`Paid::Once`]).
    pub calls: u64,
    /// calls × the price, ns, and its 95 % interval.
    pub added_ns: f64,
    /// See `added_ns`.
    pub added_ci95: [f64; 2],
    /// Calls the setting refuses, by name, with their counts.
    pub refused: Vec<(String, u64)>,
    /// Calls whose arguments the filter reads (so it runs in full, where the price is that of
    /// a call the kernel's cache answers): a floor for them.
    pub in_full: Vec<(String, u64)>,
    /// The bill's task time, ns.
    pub task_time_ns: f64,
}

/// The bill under a seccomp profile: `allowed` says whether the profile allows a call by
/// name, `reads_arguments` whether its filter reads that call's arguments; `per_call` is
/// what the profile adds to an allowed call.
pub fn predict_seccomp(
    bill: &Bill,
    setting: &str,
    per_call: &Price,
    allowed: &dyn Fn(&str) -> bool,
    reads_arguments: &dyn Fn(&str) -> bool,
) -> Prediction {
    let calls: u64 = bill.calls.iter().map(|c| c.count).sum();
    let n = calls as f64;
    let named = |keep: &dyn Fn(&str) -> bool| -> Vec<(String, u64)> {
        bill.calls
            .iter()
            .filter(|c| c.count > 0 && keep(&c.name))
            .map(|c| (c.name.clone(), c.count))
            .collect()
    };
    Prediction {
        setting: setting.to_owned(),
        paid: Paid::PerCall,
        per_call: per_call.clone(),
        calls,
        added_ns: n * per_call.ns,
        added_ci95: [n * per_call.ci95[0], n * per_call.ci95[1]],
        refused: named(&|c| !allowed(c)),
        in_full: named(&|c| allowed(c) && reads_arguments(c)),
        task_time_ns: bill.task_time_ns as f64,
    }
}

/// The bill in a container: `price` (`ns.container.over_none`) paid once, in the wall time.
pub fn predict_container(bill: &Bill, setting: &str, price: &Price) -> Prediction {
    Prediction {
        setting: setting.to_owned(),
        paid: Paid::Once,
        per_call: price.clone(),
        calls: 1,
        added_ns: price.ns,
        added_ci95: price.ci95,
        refused: Vec::new(),
        in_full: Vec::new(),
        task_time_ns: bill.wall_ns as f64,
    }
}

/// A run as a line names it: an id's first eight characters, a file's name whole.
pub(super) fn run_label(run: &str) -> String {
    if run.contains('/') || run.contains('.') {
        run.to_owned()
    } else {
        run.chars().take(8).collect()
    }
}

/// The prediction's line for [`Paid::PerWakeUp`] (`--under cpus=N`).
fn per_wake_up_line(p: &Prediction) -> String {
    format!(
        "{} wake-ups by the program that crossed CPUs, each a same-CPU one instead: {} a \
         wake-up ({}, run {}; 95 % CI {} to {}) = {} (95 % CI {} to {}), {} % of the wall \
         time of {}; its tasks then share one CPU, and what that costs (no longer running side \
         by side) is the scheduler's, in no price",
        grouped(p.calls as f64),
        signed(p.per_call.ns),
        p.per_call.case,
        run_label(&p.per_call.run),
        signed(p.per_call.ci95[0]),
        signed(p.per_call.ci95[1]),
        signed(p.added_ns),
        signed(p.added_ci95[0]),
        signed(p.added_ci95[1]),
        format!("{:+.1}", share(p.added_ns, p.task_time_ns)).replace('-', "−"),
        fmt_ns(p.task_time_ns)
    )
}

fn listed(calls: &[(String, u64)]) -> String {
    calls
        .iter()
        .map(|(name, n)| format!("{name} ×{}", grouped(*n as f64)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The prediction in a few lines at `width` columns.
pub fn render_prediction(p: &Prediction, width: usize) -> String {
    let priced = match p.paid {
        Paid::PerCall => format!(
            "{} system calls × {} a call ({}, run {}; 95 % CI {} to {}) = {} added (95 % CI \
             {} to {}), {:.1} % of the task time of {}",
            grouped(p.calls as f64),
            fmt_ns(p.per_call.ns),
            p.per_call.case,
            run_label(&p.per_call.run),
            fmt_ns(p.per_call.ci95[0]),
            fmt_ns(p.per_call.ci95[1]),
            fmt_ns(p.added_ns),
            fmt_ns(p.added_ci95[0]),
            fmt_ns(p.added_ci95[1]),
            share(p.added_ns, p.task_time_ns),
            fmt_ns(p.task_time_ns)
        ),
        Paid::Once => format!(
            "its namespaces made at the start and taken down at the end, once: {} ({}, run {}; \
             95 % CI {} to {}), {:.1} % of the wall time of {}; a system call or a fault inside \
             them costs what it costs outside (no price of the datasheet differs)",
            fmt_ns(p.added_ns),
            p.per_call.case,
            run_label(&p.per_call.run),
            fmt_ns(p.added_ci95[0]),
            fmt_ns(p.added_ci95[1]),
            share(p.added_ns, p.task_time_ns),
            fmt_ns(p.task_time_ns)
        ),
        Paid::PerWakeUp => per_wake_up_line(p),
    };
    let mut lines = vec![format!("predicted under {}:", p.setting)];
    if p.refused.is_empty() {
        lines.push(priced);
    } else {
        // No figure: the program would not make the calls it was billed for, so the calls
        // times a price is the cost of a run that cannot happen.
        lines.push(format!(
            "no prediction: the profile refuses calls this program made ({}): under it they \
             fail (an error returned, or the program killed), so the program would fail there \
             and not run as billed",
            listed(&p.refused)
        ));
    }
    if !p.in_full.is_empty() {
        lines.push(format!(
            "! the filter reads the arguments of {}: it runs in full for them, where the price \
             is a call its cache answers, so for these calls the prediction is a floor",
            listed(&p.in_full)
        ));
    }
    let mut out = String::new();
    for l in lines {
        out.push_str(&crate::layout::wrap_words(&l, width.max(60)));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// The part a filter's cost lands in: the time on a CPU, user and kernel together.
const ON_CPU: &str = "on a CPU";

/// The share of the measured change a prediction may miss by and still hold.
pub const WITHIN: f64 = 0.10;

/// One of the bill's top-level parts, its median over the rounds plain and under the setting.
#[derive(Debug, Clone, PartialEq)]
pub struct PartChange {
    /// The part (`kernel CPU`, `waiting for a CPU`, …).
    pub name: String,
    /// Its median over the plain rounds, ns.
    pub plain_ns: f64,
    /// Its median over the rounds under the setting, ns.
    pub under_ns: f64,
}

/// A prediction held against the same program billed plain and under the setting, in
/// interleaved rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct UnderCheck {
    /// The prediction, from the plain bill of median task time.
    pub predicted: Prediction,
    /// Rounds of each.
    pub rounds: usize,
    /// The time on a CPU, median over the plain rounds, ns.
    pub plain_ns: f64,
    /// The same under the setting, ns.
    pub under_ns: f64,
    /// under ÷ plain time on a CPU, the median of the rounds' ratios (each round's run under
    /// the setting over its plain run), and its 95 % bootstrap interval.
    pub ratio: f64,
    /// See `ratio`.
    pub ratio_ci95: [f64; 2],
    /// The top-level parts, plain and under (user and kernel CPU as one, "on a CPU").
    pub parts: Vec<PartChange>,
    /// The filter's installation under the setting (median), ns: taken out of `under_ns`.
    pub installing_ns: f64,
}

impl UnderCheck {
    /// The measured change, ns, and its interval: the ratio's, in the plain median's units.
    pub fn measured(&self) -> (f64, [f64; 2]) {
        let p = self.plain_ns;
        (
            (self.ratio - 1.0) * p,
            [
                (self.ratio_ci95[0] - 1.0) * p,
                (self.ratio_ci95[1] - 1.0) * p,
            ],
        )
    }

    /// Whether the prediction is within [`WITHIN`] of the measured change.
    pub fn within(&self) -> bool {
        let (m, _) = self.measured();
        (self.predicted.added_ns - m).abs() <= WITHIN * m.abs()
    }

    /// Whether the prediction's and the measurement's intervals meet.
    pub fn intervals_meet(&self) -> bool {
        let (_, [m_lo, m_hi]) = self.measured();
        let [p_lo, p_hi] = self.predicted.added_ci95;
        p_lo <= m_hi && m_lo <= p_hi
    }

    /// Whether the prediction holds: within [`WITHIN`] of the measured change, or each
    /// inside the other's interval.
    pub fn holds(&self) -> bool {
        self.within() || self.intervals_meet()
    }
}

/// Resamples of the rounds' ratios, and the generator's fixed start: the same rounds give the
/// same interval every time.
const RESAMPLES: usize = 10_000;
const SEED: u64 = 0x0b11;

/// Holds `predicted` against the bills: `plain` and `under`, one per round each.
pub fn check_under(predicted: Prediction, plain: &[Bill], under: &[Bill]) -> Option<UnderCheck> {
    use oscost_stats::{bootstrap_median_ci, median, CONFIDENCE_95};
    // Time on a CPU: what a filter adds to every call lands there, while time waiting for a
    // CPU moves with whatever else the machine runs. Under the setting, less the filter's
    // installation: oscost's, in the program's process before it executed.
    // A container's price lands in the wall time: its namespaces are made before the program
    // runs its first instruction and taken down after its last. So does a wake-up's, on one
    // CPU: a latency, not work.
    let time = |b: &Bill| match predicted.paid {
        Paid::PerCall => on_cpu_ns(b),
        Paid::Once | Paid::PerWakeUp => b.wall_ns as f64,
    };
    let a: Vec<f64> = plain.iter().map(time).collect();
    // Under a seccomp setting, less the filter's installation (a container installs none).
    let installing_ns = |b: &Bill| match predicted.paid {
        Paid::PerCall => installing_ns(b),
        Paid::Once | Paid::PerWakeUp => 0.0,
    };
    let b: Vec<f64> = under.iter().map(|u| time(u) - installing_ns(u)).collect();
    let installing = median(&under.iter().map(installing_ns).collect::<Vec<_>>());
    // Round by round: the machine's drift between rounds moves both of a round's runs.
    let ratios: Vec<f64> = a
        .iter()
        .zip(&b)
        .filter(|(p, u)| **p > 0.0 && u.is_finite())
        .map(|(p, u)| u / p)
        .collect();
    if ratios.is_empty() {
        return None;
    }
    let ratio_ci95 = bootstrap_median_ci(&ratios, RESAMPLES, CONFIDENCE_95, SEED);
    // User and kernel CPU as one: the kernel splits them by where its ticks landed, which
    // over a short program moves more between runs than a filter adds.
    let merged = |name: &str| -> String {
        match name {
            "user CPU" | "kernel CPU" => ON_CPU.into(),
            n => n.into(),
        }
    };
    let mut names: Vec<String> = Vec::new();
    for p in plain.iter().chain(under).flat_map(|b| &b.parts) {
        let n = merged(&p.name);
        if p.level == 0 && !names.contains(&n) {
            names.push(n);
        }
    }
    let part = |bills: &[Bill], name: &str| {
        let v: Vec<f64> = bills
            .iter()
            .map(|b| {
                b.parts
                    .iter()
                    .filter(|p| p.level == 0 && merged(&p.name) == name)
                    .map(|p| p.time_ns)
                    .sum::<f64>()
            })
            .collect();
        median(&v)
    };
    Some(UnderCheck {
        predicted,
        rounds: plain.len().min(under.len()),
        plain_ns: median(&a),
        under_ns: median(&b),
        ratio: median(&ratios),
        ratio_ci95,
        installing_ns: installing,
        parts: names
            .iter()
            .map(|n| PartChange {
                name: n.clone(),
                plain_ns: part(plain, n),
                under_ns: part(under, n),
            })
            .collect(),
    })
}

/// The time of a bill's `seccomp` calls, ns: under a seccomp setting, the filter's
/// installation (a program that installs filters of its own has them counted here too).
fn installing_ns(b: &Bill) -> f64 {
    b.calls
        .iter()
        .filter(|c| c.name == "seccomp")
        .filter_map(|c| c.time_ns)
        .sum::<u64>() as f64
}

/// A bill's time on a CPU, ns: the probe's, else the kernel's accounting.
fn on_cpu_ns(b: &Bill) -> f64 {
    match (&b.sched, &b.usage) {
        (Some(s), _) => s.oncpu_ns as f64,
        (None, Some(u)) => (u.user_ns + u.system_ns) as f64,
        (None, None) => f64::NAN,
    }
}

/// A signed time.
fn signed(ns: f64) -> String {
    if ns < 0.0 {
        format!("−{}", fmt_ns(-ns))
    } else {
        format!("+{}", fmt_ns(ns))
    }
}

/// The check at `width` columns: the measured change beside the predicted one, each part's
/// change, and whether the prediction holds, and how.
pub fn render_check(c: &UnderCheck, width: usize) -> String {
    let (m, [m_lo, m_hi]) = c.measured();
    let p = &c.predicted;
    let mut out = format!(
        "\nchecked under {}: {} rounds, plain and under it in turn\n",
        p.setting, c.rounds
    );
    let (what, label) = match p.paid {
        Paid::PerCall => ("time on a CPU", "on a CPU (median)   "),
        Paid::Once | Paid::PerWakeUp => ("wall time", "wall time (median)  "),
    };
    out.push_str(&format!(
        "  {label} plain {}   under {}\n",
        fmt_ns(c.plain_ns),
        fmt_ns(c.under_ns)
    ));
    if c.installing_ns > 0.0 {
        out.push_str(&format!(
            "                       (under it, less {} installing the filter)\n",
            fmt_ns(c.installing_ns)
        ));
    }
    out.push_str(&format!(
        "  measured change      {} (95 % CI {} to {})\n",
        signed(m),
        signed(m_lo),
        signed(m_hi)
    ));
    out.push_str(&format!(
        "  predicted change     {} (95 % CI {} to {})\n",
        signed(p.added_ns),
        signed(p.added_ci95[0]),
        signed(p.added_ci95[1])
    ));
    for part in &c.parts {
        out.push_str(&format!(
            "    {:<28} {:>10} → {:>10}  {}\n",
            part.name,
            fmt_ns(part.plain_ns),
            fmt_ns(part.under_ns),
            signed(part.under_ns - part.plain_ns)
        ));
    }
    let verdict = if c.within() {
        format!(
            "✓ the prediction holds: within ±{:.0} % of the measured change",
            WITHIN * 100.0
        )
    } else if c.intervals_meet() {
        format!(
            "✓ the prediction holds within the measurement's interval, {} wide: as far as {} \
             rounds can tell (more rounds narrow it)",
            fmt_ns(m_hi - m_lo),
            c.rounds
        )
    } else {
        // What the setting adds lands in `what`; the other parts are listed above.
        format!(
            "✗ the prediction misses: the {what} moved {} beyond it, an indirect cost the \
             datasheet's price cannot know (or a machine that changed between rounds)",
            signed(m - p.added_ns)
        )
    };
    out.push_str(&crate::layout::wrap_words(&verdict, width.max(60)));
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bill::tests::fixture;

    fn price(ns: f64) -> Price {
        Price {
            case: "seccomp.profile.getpid.over_none".into(),
            run: "run1".into(),
            ns,
            ci95: [ns - 1.0, ns + 1.0],
            floor: false,
        }
    }

    #[test]
    fn every_call_pays_what_the_profile_adds_and_refusals_are_named() {
        let b = fixture();
        let p = predict_seccomp(
            &b,
            "seccomp=default",
            &price(5.0),
            &|c| c != "read",
            &|_| false,
        );
        // 10 000 getppid and 10 reads.
        assert_eq!(p.calls, 10_010);
        assert_eq!(p.added_ns, 50_050.0);
        assert_eq!(p.added_ci95, [40_040.0, 60_060.0]);
        assert_eq!(p.refused, [("read".to_owned(), 10)]);
        let text = render_prediction(&p, 80);
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        assert!(
            text.contains("no prediction: the profile refuses calls this program made (read ×10)"),
            "{text}"
        );
        assert!(
            !text.contains("added"),
            "no figure for a run that fails: {text}"
        );
        let allowed = predict_seccomp(&b, "seccomp=default", &price(5.0), &|_| true, &|_| false);
        let text = render_prediction(&allowed, 80);
        assert!(text.contains("50.05 µs added"), "{text}");
    }

    /// The fixture assembled, its time on a CPU (and its kernel CPU) grown by `extra_ns`.
    fn round(extra_ns: u64, jitter_ns: u64) -> Bill {
        let mut b = fixture();
        let s = b.sched.as_mut().unwrap();
        s.oncpu_ns += extra_ns + jitter_ns;
        b.task_time_ns += extra_ns + jitter_ns;
        crate::bill::assemble(&mut b, None, None);
        b
    }

    /// A container is paid once, in the wall time: the check holds the wall times, and a
    /// program whose time on a CPU moved but whose wall time did not is judged by the latter.
    #[test]
    fn a_container_is_paid_once_and_checked_in_the_wall_time() {
        let b = fixture();
        let p = predict_container(&b, "container", &price(400_000.0));
        assert_eq!((p.paid, p.calls, p.added_ns), (Paid::Once, 1, 400_000.0));
        let text = render_prediction(&p, 80);
        assert!(
            text.contains("taken down at the end, once: 400.0 µs"),
            "{text}"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        let walled = |extra: u64, jitter: u64| {
            let mut b = round(0, 0);
            b.wall_ns += extra + jitter;
            b
        };
        let plain: Vec<Bill> = (0..5).map(|i| walled(0, i * 1_000)).collect();
        let under: Vec<Bill> = (0..5).map(|i| walled(400_000, i * 1_000)).collect();
        let c = check_under(p.clone(), &plain, &under).unwrap();
        let (m, _) = c.measured();
        assert!((m - 400_000.0).abs() < 2_000.0, "{m}");
        assert!(c.holds());
        let text = render_check(&c, 80);
        assert!(text.contains("wall time (median)"), "{text}");
        // Four times the price in the wall time: it misses, and says where.
        let under: Vec<Bill> = (0..5).map(|i| walled(1_600_000, i * 1_000)).collect();
        let c = check_under(p, &plain, &under).unwrap();
        assert!(!c.holds());
        assert!(render_check(&c, 80).contains("the wall time moved"));
    }

    #[test]
    fn a_change_as_predicted_holds_and_one_beyond_it_names_the_part() {
        let plain: Vec<Bill> = (0..5).map(|i| round(0, i * 1_000)).collect();
        let predicted = predict_seccomp(
            &plain[0],
            "seccomp=default",
            &price(50.0),
            &|_| true,
            &|_| false,
        );
        // 10 010 calls × 50 ns: about 500 µs.
        let under: Vec<Bill> = (0..5).map(|i| round(500_000, i * 1_000)).collect();
        let c = check_under(predicted.clone(), &plain, &under).unwrap();
        let (m, _) = c.measured();
        assert!((m - 500_000.0).abs() < 1_000.0, "{m}");
        assert!(c.holds());
        assert!(render_check(&c, 80).contains("✓ the prediction holds: within ±10 %"));

        let under: Vec<Bill> = (0..5).map(|i| round(5_000_000, i * 1_000)).collect();
        let c = check_under(predicted, &plain, &under).unwrap();
        assert!(!c.holds());
        let text = render_check(&c, 80);
        assert!(
            text.contains("✗ the prediction misses: the time on a CPU moved"),
            "{text}"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    }
}

//! `shootdown`: what invalidating one touched page costs while other threads of the same
//! process run on other CPUs, each of which may hold the page's translation and must be made
//! to forget it (a TLB shootdown).
//!
//! The measuring thread stays on the first CPU of the set; 0, 1, … other threads of its
//! process are pinned one to each further CPU, spinning (their CPU keeps the process's address
//! space loaded) or asleep (it need not). Each operation touches one page outside the timing,
//! then times one `madvise(MADV_DONTNEED)`, `munmap` or `mprotect(PROT_READ)` of it. The
//! kernel's own counts are read around every sample: the shootdown and function-call
//! interrupts each CPU received (`/proc/interrupts`, TLB and CAL) and the faults of the
//! measuring thread, so each figure carries the interrupts that really happened per operation.

use crate::context::Context;
use crate::cpuset;
use crate::engine::{self, first_occurrences, value_name};
use crate::sampler::{self, thread_check};
use anyhow::Context as _;
use oscost_model::case::{Case, Check, ExperimentOutput, Samples, Unavailable};
use oscost_model::ids::shootdown as ids;
use oscost_model::{Message, MessageKind};
use oscost_sys::pages::{Mapping, PAGE};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Subcommand name and id prefix.
pub const NAME: &str = ids::NAME;

/// Operations a sample times.
const OPS_PER_SAMPLE: u64 = 256;

/// The invalidations.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Op {
    /// madvise(MADV_DONTNEED) of one written page
    Madvise,
    /// munmap of one written page
    Munmap,
    /// mprotect(PROT_READ) of one written page (made writable again outside the timing)
    Mprotect,
}

impl Op {
    const ALL: [Op; 3] = [Op::Madvise, Op::Munmap, Op::Mprotect];

    fn description(self) -> &'static str {
        match self {
            Op::Madvise => "madvise(MADV_DONTNEED) of one page written just before",
            Op::Munmap => "munmap of a one-page mapping written just before",
            Op::Mprotect => "mprotect(PROT_READ) of one page written just before",
        }
    }
}

/// What the other threads do.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Mode {
    /// spin on their CPUs: the process's address space stays loaded there
    Spin,
    /// sleep (blocked): their CPUs go idle and need no interrupt
    Sleep,
}

/// Options of `oscost shootdown`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// Operations, comma-separated (default: all)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "OP,...")]
    pub ops: Vec<Op>,

    /// Numbers of other CPUs running a thread of the process, comma-separated [default: 0 to
    /// all other CPUs of the set]
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pub others: Vec<usize>,

    /// What the other threads do, comma-separated (default: spin,sleep)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "MODE,...")]
    pub modes: Vec<Mode>,
}

/// One group of cases measured with the same other threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Group {
    others: usize,
    /// `None` with no other thread.
    mode: Option<Mode>,
}

/// What a run measures, resolved once.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plan {
    ops: Vec<Op>,
    groups: Vec<Group>,
}

fn plan(opts: &Options, cpus: usize) -> anyhow::Result<Plan> {
    let ops = if opts.ops.is_empty() {
        Op::ALL.to_vec()
    } else {
        first_occurrences(&opts.ops)
    };
    let modes = if opts.modes.is_empty() {
        vec![Mode::Spin, Mode::Sleep]
    } else {
        first_occurrences(&opts.modes)
    };
    let others = if opts.others.is_empty() {
        (0..cpus).collect()
    } else {
        first_occurrences(&opts.others)
    };
    let mut groups = Vec::new();
    for n in others {
        if n + 1 > cpus {
            anyhow::bail!(
                "--others {n}: the CPU set has {cpus} CPU(s), so at most {} other CPU(s) can \
                 run a thread beside the measuring one; use --cpus with more CPUs or a smaller \
                 --others",
                cpus.saturating_sub(1)
            );
        }
        if n == 0 {
            groups.push(Group {
                others: 0,
                mode: None,
            });
        } else {
            groups.extend(modes.iter().map(|&m| Group {
                others: n,
                mode: Some(m),
            }));
        }
    }
    Ok(Plan { ops, groups })
}

fn case_id(op: Op, g: Group) -> String {
    let mode = g.mode.map(|m| value_name(&m));
    ids::Case {
        op: &value_name(&op),
        others: mode.as_deref().map(|m| (g.others, m)),
    }
    .to_string()
}

/// The per-CPU counts of the `/proc/interrupts` line named `name` (`TLB`, `CAL`), in CPU
/// order, or `None` when the kernel has no such line.
fn interrupt_counts(text: &str, name: &str) -> Option<Vec<u64>> {
    let mut lines = text.lines();
    let cpus = lines.next()?.split_whitespace().count();
    let line = lines.find(|l| l.trim_start().starts_with(&format!("{name}:")))?;
    let counts: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(cpus)
        .map_while(|v| v.parse().ok())
        .collect();
    (counts.len() == cpus).then_some(counts)
}

/// The CPU numbers of the columns of `/proc/interrupts` (`CPU0 CPU3 …`).
fn interrupt_cpus(text: &str) -> Vec<usize> {
    text.lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|c| c.strip_prefix("CPU")?.parse().ok())
        .collect()
}

/// Shootdown and function-call interrupts received by each CPU so far.
#[derive(Debug, Clone, Default)]
struct Irqs {
    cpus: Vec<usize>,
    tlb: Option<Vec<u64>>,
    cal: Option<Vec<u64>>,
}

fn read_irqs() -> Irqs {
    let text = std::fs::read_to_string("/proc/interrupts").unwrap_or_default();
    Irqs {
        cpus: interrupt_cpus(&text),
        tlb: interrupt_counts(&text, "TLB"),
        cal: interrupt_counts(&text, "CAL"),
    }
}

/// Interrupts of one kind the CPUs in `on` received between `a` and `b`.
fn received(
    a: &Option<Vec<u64>>,
    b: &Option<Vec<u64>>,
    cpus: &[usize],
    on: &[usize],
) -> Option<u64> {
    let (a, b) = (a.as_ref()?, b.as_ref()?);
    Some(
        cpus.iter()
            .enumerate()
            .filter(|(_, c)| on.contains(c))
            .map(|(i, _)| {
                b.get(i)
                    .copied()
                    .unwrap_or(0)
                    .saturating_sub(a.get(i).copied().unwrap_or(0))
            })
            .sum(),
    )
}

/// The other threads of a group, stopped and joined on drop.
struct Others {
    stop: Arc<AtomicBool>,
    wake: Vec<std::sync::mpsc::Sender<()>>,
    spins: Vec<Arc<AtomicU64>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Others {
    fn start(g: Group, cpus: &[usize]) -> anyhow::Result<Others> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut o = Others {
            stop: stop.clone(),
            wake: Vec::new(),
            spins: Vec::new(),
            threads: Vec::new(),
        };
        for &cpu in cpus.iter().skip(1).take(g.others) {
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let spins = Arc::new(AtomicU64::new(0));
            let (stop, count, mode) = (stop.clone(), spins.clone(), g.mode);
            let (ready_tx, ready_rx) = std::sync::mpsc::channel::<std::io::Result<()>>();
            let t = std::thread::Builder::new()
                .name(format!("oscost-other-{cpu}"))
                .spawn(move || {
                    let pinned = oscost_sys::set_affinity(&[cpu]);
                    let ok = pinned.is_ok();
                    let _ = ready_tx.send(pinned);
                    if !ok {
                        return;
                    }
                    if mode == Some(Mode::Spin) {
                        while !stop.load(Ordering::Relaxed) {
                            count.fetch_add(1, Ordering::Relaxed);
                        }
                    } else {
                        let _ = rx.recv();
                    }
                })
                .with_context(|| format!("starting a thread for CPU {cpu}"))?;
            o.threads.push(t);
            o.wake.push(tx);
            o.spins.push(spins);
            ready_rx
                .recv()
                .context("a thread ended before it was pinned")?
                .with_context(|| format!("pinning a thread to CPU {cpu}"))?;
        }
        Ok(o)
    }

    fn spins(&self) -> Vec<u64> {
        self.spins
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .collect()
    }
}

impl Drop for Others {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.wake.clear();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// One case's samples and counts.
struct Slot {
    op: Op,
    ticks: Vec<f64>,
    faults: u64,
    tlb_others: Option<u64>,
    cal_others: Option<u64>,
    tlb_self: Option<u64>,
    /// Samples in which every spinning thread advanced.
    all_spun: u64,
    timed: u64,
}

fn timed_ops(ctx: &Context, op: Op, page: &mut Mapping) -> anyhow::Result<u64> {
    let mut total = 0u64;
    for _ in 0..OPS_PER_SAMPLE {
        match op {
            Op::Madvise => {
                page.write_each(PAGE, 1);
                let t0 = ctx.clock.now();
                page.dont_need()?;
                total += ctx.clock.now().wrapping_sub(t0);
            }
            Op::Munmap => {
                let mut m = Mapping::isolated(PAGE)?;
                m.write_each(PAGE, 1);
                total += m.time_unmap(|| ctx.clock.now());
            }
            Op::Mprotect => {
                page.write_each(PAGE, 1);
                total += page.time_write_protect(|| ctx.clock.now())?;
            }
        }
    }
    Ok(total)
}

fn sample(
    ctx: &Context,
    s: &mut Slot,
    page: &mut Mapping,
    others: &Others,
    other_cpus: &[usize],
) -> anyhow::Result<()> {
    let me = [ctx.first_cpu()];
    let spins0 = others.spins();
    let irq0 = read_irqs();
    let u0 = oscost_sys::spawn::thread_usage();
    let ticks = timed_ops(ctx, s.op, page)?;
    let faults = oscost_sys::spawn::thread_usage().since(u0).minor_faults;
    let irq1 = read_irqs();
    let spins1 = others.spins();
    s.ticks.push(ticks as f64 / OPS_PER_SAMPLE as f64);
    s.faults += faults;
    let add = |acc: &mut Option<u64>, v: Option<u64>| {
        *acc = match (*acc, v) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        }
    };
    add(
        &mut s.tlb_others,
        received(&irq0.tlb, &irq1.tlb, &irq1.cpus, other_cpus),
    );
    add(
        &mut s.cal_others,
        received(&irq0.cal, &irq1.cal, &irq1.cpus, other_cpus),
    );
    add(
        &mut s.tlb_self,
        received(&irq0.tlb, &irq1.tlb, &irq1.cpus, &me),
    );
    if spins0.iter().zip(&spins1).all(|(a, b)| b > a) {
        s.all_spun += 1;
    }
    s.timed += 1;
    Ok(())
}

fn finish(ctx: &Context, s: Slot, g: Group, overhead: f64, threads: Option<u64>) -> Case {
    let per_op: Vec<f64> = s.ticks.iter().map(|t| t - overhead).collect();
    let samples = Samples {
        per_op_ns: per_op.iter().map(|&t| ctx.clock.ticks_to_ns(t)).collect(),
        per_op_ticks: per_op,
        iterations_per_sample: OPS_PER_SAMPLE,
        loop_overhead_ns: ctx.clock.ticks_to_ns(overhead),
    };
    let mut case = Case::new(case_id(s.op, g), s.op.description(), "call", samples)
        .param("op", value_name(&s.op))
        .param("other_cpus", g.others as u64)
        .param("cpu", ctx.first_cpu() as u64);
    if let Some(m) = g.mode {
        case = case.param("others", value_name(&m));
    }
    let ops = (s.timed * OPS_PER_SAMPLE).max(1) as f64;
    let faults = s.faults as f64 / ops;
    case.counters.insert("minor_faults_per_op".into(), faults);
    let mut said = Vec::new();
    for (name, v) in [
        ("tlb_interrupts_other_cpus_per_op", s.tlb_others),
        ("call_interrupts_other_cpus_per_op", s.cal_others),
        ("tlb_interrupts_own_cpu_per_op", s.tlb_self),
    ] {
        if let Some(v) = v {
            case.counters.insert(name.into(), v as f64 / ops);
            said.push(format!("{name} {:.3}", v as f64 / ops));
        }
    }
    if s.tlb_others.is_none() {
        case.notes.push(Message::from(
            "no TLB line in /proc/interrupts: this kernel does not count shootdown \
                 interrupts, so none is reported",
        ));
    } else if g.others > 0
        && g.mode == Some(Mode::Spin)
        && s.tlb_others.unwrap_or(0) as f64 / ops < 0.5
    {
        case.notes.push(Message::new(
            MessageKind::FlushWithoutInterrupt,
            format!(
                " reached the other CPUs ({}): the kernel flushed their translations without \
                 an interrupt for most operations (a hypervisor's paravirtual remote flush does \
                 so for a virtual CPU not running)",
                said.join(", ")
            ),
        ));
    }
    match s.op {
        Op::Madvise | Op::Munmap => case.checks.push(Check::near(
            "minor_faults_per_op",
            1.0,
            faults,
            0.05,
            &format!(
                "getrusage(RUSAGE_THREAD) over the samples: {} minor faults in {} operations; \
                 the page written before each one must fault in again, so the invalidation \
                 really dropped it",
                s.faults, ops as u64
            ),
        )),
        Op::Mprotect => {}
    }
    if g.mode == Some(Mode::Spin) {
        let share = s.all_spun as f64 / s.timed.max(1) as f64;
        case.checks.push(Check::at_least(
            "samples_with_every_other_thread_running",
            1.0,
            share,
            0.1,
            &format!(
                "{} of {} samples saw every spinning thread advance on its own CPU while the \
                 operations ran",
                s.all_spun, s.timed
            ),
        ));
    }
    if let Some(c) = thread_check(threads, 1 + g.others as u64) {
        case.checks.push(c);
    }
    case
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Shootdown;
    const SUMMARY: &'static str =
        "What invalidating a page costs while other threads of the process run on other CPUs";
    const ABOUT: &'static str =
        "What invalidating one touched page costs - madvise(MADV_DONTNEED), \
munmap, mprotect(PROT_READ) - while 0, 1, ... other threads of the same process run on the \
other CPUs of the set, spinning (their CPU keeps the address space loaded, so its translations \
must be flushed) or asleep (it need not be).

Each operation writes one page outside the timing and times the invalidation alone. Around \
every sample the shootdown (TLB) and function-call (CAL) interrupts each CPU received are read \
from /proc/interrupts, and the measuring thread's faults from getrusage: every figure carries \
the interrupts that really reached the other CPUs per operation. A virtual machine may flush \
another virtual CPU's translations through the hypervisor instead of an interrupt; the counts \
say what happened.\n\nTakes about 2 s; --quick about 0.5 s on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = true;
    const WARMS_UP_BY_COUNT: bool = true;
    const SUITE_ARGS: &'static [&'static str] = &["--ops", "madvise,munmap"];
    const QUICK_SUITE_ARGS: &'static [&'static str] = &["--ops", "madvise", "--modes", "spin"];

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }
}

/// Rounds of a spinning group taken at most this many times before a case whose spinners did
/// not run is given up.
const SPIN_TRIES: usize = 2;

/// The share of samples in which every spinning thread must have advanced.
const MIN_SPUN_SHARE: f64 = 0.9;

/// Whether every spinning thread ran in enough of the slot's samples.
fn spun_enough(s: &Slot) -> bool {
    s.all_spun as f64 >= MIN_SPUN_SHARE * s.timed.max(1) as f64
}

/// One group's rounds: its other threads started, every op sampled, the threads stopped.
fn group_rounds(
    ctx: &Context,
    p: &Plan,
    g: Group,
    other_cpus: &[usize],
) -> anyhow::Result<(Vec<Slot>, Option<Message>, Option<u64>)> {
    let others = Others::start(g, &ctx.cpus)?;
    let mut page = Mapping::isolated(PAGE)?;
    let mut slots: Vec<Slot> = p
        .ops
        .iter()
        .map(|&op| Slot {
            op,
            ticks: Vec::new(),
            faults: 0,
            tlb_others: Some(0),
            cal_others: Some(0),
            tlb_self: Some(0),
            all_spun: 0,
            timed: 0,
        })
        .collect();
    let (cut, threads) = sampler::warm_then_rounds(ctx, slots.len(), |k, record| {
        if record {
            sample(ctx, &mut slots[k], &mut page, &others, other_cpus)
        } else {
            timed_ops(ctx, slots[k].op, &mut page).map(drop)
        }
    })?;
    drop(others);
    Ok((slots, cut, threads))
}

fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    // First: an empty CPU set is refused as such, before the plan counts other CPUs.
    ctx.pin_first_cpu()?;
    let p = plan(opts, ctx.cpus.len())?;
    let overhead = engine::clock::clock_overhead(ctx);
    let mut out = ExperimentOutput::default();
    ctx.progress.start(
        (ctx.sampler.samples * p.ops.len() * p.groups.len()) as u64,
        NAME,
    );
    // The one-thread group first: once a thread has existed, the process stays multi-threaded
    // in glibc's eyes.
    for &g in &p.groups {
        let other_cpus: Vec<usize> = ctx.cpus.iter().skip(1).take(g.others).copied().collect();
        // A spinning group whose threads did not run while the operations did measured a
        // machine busy with something else: its rounds are taken again, a bounded number of
        // times, and a case that still falls short is not measured, with the reason.
        let tries = if g.mode == Some(Mode::Spin) {
            SPIN_TRIES
        } else {
            1
        };
        let mut attempt = 1;
        let (slots, cut, threads) = loop {
            let taken = group_rounds(ctx, &p, g, &other_cpus)?;
            let short = taken.0.iter().any(|s| !spun_enough(s));
            if g.mode != Some(Mode::Spin) || !short || attempt == tries {
                break taken;
            }
            attempt += 1;
        };
        for s in slots {
            if g.mode == Some(Mode::Spin) && !spun_enough(&s) {
                let (case, spun, timed) = (case_id(s.op, g), s.all_spun, s.timed);
                out.unavailable.push(Unavailable {
                    description: s.op.description().into(),
                    reason: format!(
                        "the spinning thread{} on CPU {} advanced in only {spun} of {timed} \
                         samples (at least {:.0} % needed) in the last of {attempt} tries: \
                         something else held {} (another program, or the host not running the \
                         virtual CPU); not a cost of the OS, so no figure",
                        if g.others == 1 { "" } else { "s" },
                        cpuset::format(&other_cpus),
                        MIN_SPUN_SHARE * 100.0,
                        if g.others == 1 {
                            "that CPU"
                        } else {
                            "those CPUs"
                        },
                    ),
                    id: case,
                });
                continue;
            }
            let mut c = finish(ctx, s, g, overhead, threads);
            if let Some(w) = &cut {
                c.warnings.push(w.clone());
            }
            out.cases.push(c);
        }
    }
    ctx.progress.finish();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::testing;
    use oscost_model::case::SINGLE_THREAD_CHECK;

    fn opts(extra: &[&str]) -> Options {
        engine::defaults(extra)
    }

    const INTERRUPTS: &str = "           CPU0       CPU1       \n\
  0:         38          0   IO-APIC    2-edge      timer\n\
LOC:     383867     339310   Local timer interrupts\n\
CAL:      68086      72588   Function call interrupts\n\
TLB:      45857      49076   TLB shootdowns\n";

    #[test]
    fn interrupts_are_read_per_cpu() {
        assert_eq!(interrupt_cpus(INTERRUPTS), [0, 1]);
        assert_eq!(
            interrupt_counts(INTERRUPTS, "TLB"),
            Some(vec![45857, 49076])
        );
        assert_eq!(
            interrupt_counts(INTERRUPTS, "CAL"),
            Some(vec![68086, 72588])
        );
        assert_eq!(interrupt_counts(INTERRUPTS, "NMI"), None);
        let later = INTERRUPTS.replace("49076", "49100");
        let (a, b) = (
            interrupt_counts(INTERRUPTS, "TLB"),
            interrupt_counts(&later, "TLB"),
        );
        assert_eq!(received(&a, &b, &[0, 1], &[1]), Some(24));
        assert_eq!(received(&a, &b, &[0, 1], &[0]), Some(0));
    }

    #[test]
    fn plans_cover_every_count_of_other_cpus_and_refuse_too_many() {
        let p = plan(&opts(&[]), 2).unwrap();
        assert_eq!(p.ops, Op::ALL);
        let ids: Vec<String> = p.groups.iter().map(|&g| case_id(Op::Madvise, g)).collect();
        assert_eq!(
            ids,
            [
                "shootdown.madvise.others0",
                "shootdown.madvise.others1.spin",
                "shootdown.madvise.others1.sleep"
            ]
        );
        let e = plan(&opts(&["--others", "2"]), 2).unwrap_err().to_string();
        assert!(e.contains("--others 2") && e.contains("at most 1"), "{e}");
    }

    #[test]
    fn a_tiny_run_drops_each_page_and_counts_its_threads() {
        testing::with_tiny_ctx(|ctx| {
            let out = run(&opts(&["--others", "0"]), ctx).unwrap();
            assert_eq!(out.cases.len(), 3);
            for c in &out.cases {
                assert!(
                    c.samples.per_op_ns.len() >= sampler::MIN_SAMPLES,
                    "{}",
                    c.id
                );
                // The test harness's own threads share the process: every check but the
                // thread count must pass (no thread spins in this group).
                for k in c.checks.iter().filter(|k| k.name != SINGLE_THREAD_CHECK) {
                    assert!(k.passed, "{}: {k:?}", c.id);
                }
            }
            if ctx.cpus.len() > 1 {
                let out = run(&opts(&["--others", "1", "--ops", "madvise"]), ctx).unwrap();
                let ids: Vec<&str> = out.cases.iter().map(|c| c.id.as_str()).collect();
                // Whether the spinner ran is the machine's business: a spinning case whose
                // spinner did not is not measured, and says why.
                let spin = "shootdown.madvise.others1.spin";
                match out.unavailable.iter().find(|u| u.id == spin) {
                    Some(u) => {
                        assert_eq!(ids, ["shootdown.madvise.others1.sleep"]);
                        assert!(u.reason.contains("advanced in only"), "{}", u.reason);
                    }
                    None => {
                        assert_eq!(ids, [spin, "shootdown.madvise.others1.sleep"]);
                        let ran = out.cases[0]
                            .checks
                            .iter()
                            .find(|k| k.name == "samples_with_every_other_thread_running")
                            .unwrap();
                        assert!(ran.passed, "{ran:?}");
                    }
                }
                let threads = out
                    .cases
                    .last()
                    .unwrap()
                    .checks
                    .iter()
                    .find(|k| k.name == SINGLE_THREAD_CHECK)
                    .unwrap();
                assert_eq!(threads.expected, 2.0);
            }
        });
    }
}

//! The probe's totals into the bill's measured fields, and the bill's counts held against
//! the kernel's own accounting and an independent counter.

use oscost_model::bill::{
    Bill, BillCheck, CallLine, Events, FaultCounts, Interrupt, Sched, Target, TaskLine,
};
use oscost_sys::bill::{self as probe, Totals};

/// Percentile `q` (0–1) of a bucketed distribution, read at the bucket's middle.
pub(super) fn hist_quantile(hist: &[u64], q: f64) -> Option<f64> {
    let n: u64 = hist.iter().sum();
    if n == 0 {
        return None;
    }
    let want = (q * n as f64).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (b, &c) in hist.iter().enumerate() {
        seen += c;
        if seen >= want {
            let (lo, hi) = probe::bucket_bounds(b);
            return Some((lo + hi) / 2.0);
        }
    }
    None
}

/// The probe's totals into the bill's measured fields. A call's time is as the program sees
/// it: the probe's timing of it between the kernel's entry and exit, less `in_window` (ns, the
/// probe's own time inside that timing), plus `floor` (ns, the entry and exit themselves: a
/// call that does nothing, timed untraced when billing started).
pub(super) fn fill(bill: &mut Bill, t: &Totals, end: u64, in_window: f64, floor: f64) {
    let timed = bill.mechanism.depth == oscost_model::bill::CallDepth::Time;
    let net = |ns: f64| (ns - in_window).max(0.0) + floor;
    let total = |ns: u64, n: u64| (n as f64 * net(ns as f64 / n.max(1) as f64)) as u64;
    bill.calls = t
        .calls
        .iter()
        .map(|c| CallLine {
            name: probe::call_name(c.nr),
            nr: c.nr,
            count: c.count,
            errors: timed.then_some(c.errors),
            time_ns: timed.then(|| total(c.time_ns, c.count)),
            median_ns: if timed {
                hist_quantile(&c.hist, 0.5).map(net)
            } else {
                None
            },
            p99_ns: if timed {
                hist_quantile(&c.hist, 0.99).map(net)
            } else {
                None
            },
            price: None,
        })
        .collect();
    bill.calls
        .sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then(b.count.cmp(&a.count)));
    let f = |a: &[u64]| FaultCounts {
        read_missing: a[0],
        write_missing: a[2],
        read_present: a[1],
        write_present: a[3],
    };
    bill.faults_user = f(&t.faults[0..4]);
    bill.faults_kernel = f(&t.faults[4..8]);
    bill.interrupts = probe::IRQ_KINDS
        .iter()
        .zip(t.irqs)
        .filter(|(_, (n, _))| *n > 0)
        .map(|(k, (n, ns))| Interrupt {
            kind: (*k).into(),
            count: n,
            time_ns: ns,
        })
        .collect();
    bill.events = Events {
        signals: t.signals,
        threads: t.threads,
        processes: t.processes,
        execs: t.execs,
        tlb_sent: t.tlb[4],
        tlb_received: t.tlb[1],
        tlb_local: t.tlb[2] + t.tlb[3],
        tasks_missed: t.missed_tasks,
    };
    bill.tasks = t
        .tasks
        .iter()
        .map(|k| TaskLine {
            tid: k.tid,
            pid: k.pid,
            comm: k.comm.clone(),
            lifetime_ns: (if k.exit_ns > 0 { k.exit_ns } else { end }).saturating_sub(k.first_ns),
            oncpu_ns: k.oncpu_ns,
            wait_ns: k.wait_ns,
            blocked_ns: k.blocked_ns,
            calls: k.calls,
            call_ns: total(k.call_ns, k.calls),
            faults: k.faults,
            irq_ns: k.irq_ns,
            voluntary: k.voluntary,
            involuntary: k.involuntary,
        })
        .collect();
    bill.tasks.sort_by_key(|k| std::cmp::Reverse(k.lifetime_ns));
    bill.task_time_ns = bill.tasks.iter().map(|k| k.lifetime_ns).sum();
    let sum = |f: fn(&TaskLine) -> u64| bill.tasks.iter().map(f).sum::<u64>();
    bill.sched = Some(Sched {
        voluntary: sum(|k| k.voluntary),
        involuntary: sum(|k| k.involuntary),
        wakeups: t.wakeups,
        oncpu_ns: sum(|k| k.oncpu_ns),
        wait_ns: sum(|k| k.wait_ns),
        blocked_ns: sum(|k| k.blocked_ns),
        wake_latency_p50_ns: hist_quantile(&t.wake_latency, 0.5),
        wake_latency_p99_ns: hist_quantile(&t.wake_latency, 0.99),
        cross_cpu_wakeups: Some(t.cross_cpu_wakeups),
    });
}

/// How far, at most, the kernel's clocks of a task's run time and wait (its run queue's clock,
/// which it may leave stale across a wake-up) part from the tracepoints' in a run, whatever its
/// length: 164 µs seen on a 2 ms pipe ping-pong (`bill_work pipe 100`).
const CLOCKS_PART_NS: f64 = 200_000.0;

/// The scheduler's sums over the tasks whose kernel accounting a check reads.
struct Own {
    voluntary: u64,
    involuntary: u64,
    oncpu_ns: u64,
    wait_ns: u64,
}

/// The bill's calls held against an independent count of `raw_syscalls:sys_enter`.
pub(super) fn call_check(bill: &Bill, independent_calls: Result<u64, String>) -> BillCheck {
    let calls: u64 = bill.calls.iter().map(|c| c.count).sum();
    let name = "system calls = perf's count of raw_syscalls:sys_enter".to_string();
    match independent_calls {
        Ok(n) => BillCheck {
            name,
            ok: Some(n == calls),
            detail: format!("{calls} counted, perf {n}"),
        },
        Err(e) => BillCheck {
            name,
            ok: None,
            detail: format!("not checked: {e}"),
        },
    }
}

/// The bill's counts held against the kernel's own accounting and an independent counter.
pub(super) fn checks(
    bill: &Bill,
    t: &Totals,
    independent_calls: Result<u64, String>,
    leader: Option<(u32, (u64, u64))>,
) -> Vec<BillCheck> {
    let mut out = vec![call_check(bill, independent_calls)];
    let lost: u64 = t.skipped.values().sum::<u64>() + t.missed_tasks;
    out.push(BillCheck {
        name: "no event lost".into(),
        ok: Some(lost == 0),
        detail: if lost == 0 {
            "every program ran at every event; every task followed".into()
        } else {
            format!(
                "{} program runs skipped ({:?}), {} tasks not followed",
                t.skipped.values().sum::<u64>(),
                t.skipped,
                t.missed_tasks
            )
        },
    });
    let Some(u) = &bill.usage else {
        return out;
    };
    // An attached process's counters in /proc are its own: the children it made while billed
    // are held out of the comparisons below (not out of the bill).
    let own = |k: &&TaskLine| match &bill.target {
        Target::Process { pid, .. } => k.pid == *pid,
        Target::Command { .. } => true,
    };
    let children = bill.tasks.iter().filter(|k| !own(k)).count();
    let of_whom = match (&bill.target, children) {
        (Target::Process { pid, .. }, 1..) => {
            format!(" (process {pid}'s own tasks; {children} of its children's are not in /proc)")
        }
        _ => String::new(),
    };
    let own_sum = |f: fn(&TaskLine) -> u64| bill.tasks.iter().filter(own).map(f).sum::<u64>();
    let faults = if children > 0 {
        own_sum(|k| k.faults)
    } else {
        bill.faults_user.total() + bill.faults_kernel.total()
    };
    let theirs = u.minor_faults + u.major_faults;
    let within = |a: f64, b: f64, rel: f64, abs: f64| (a - b).abs() <= (rel * b.abs()).max(abs);
    // execve sets up the new program's stack through get_user_pages: faults the kernel
    // accounts to the task but no exception tracepoint sees (one or two pages of strings).
    let exec_pages = 2 * bill.events.execs;
    let slack = (theirs as f64 * 0.001).max(1.0);
    out.push(BillCheck {
        name: format!(
            "page faults = {}'s minor + major (±0.1 %, and up to 2 a program executed)",
            u.source
        ),
        ok: Some(
            faults as f64 <= theirs as f64 + slack
                && theirs as f64 <= (faults + exec_pages) as f64 + slack,
        ),
        detail: format!(
            "{faults} counted, {theirs} accounted ({} programs executed){of_whom}",
            bill.events.execs
        ),
    });
    if bill.sched.is_some() {
        let s = Own {
            voluntary: own_sum(|k| k.voluntary),
            involuntary: own_sum(|k| k.involuntary),
            oncpu_ns: own_sum(|k| k.oncpu_ns),
            wait_ns: own_sum(|k| k.wait_ns),
        };
        // A thread that is not a process's first leaves getrusage's sums before its last
        // switch (a voluntary one, into death).
        let threads_gone = bill
            .tasks
            .iter()
            .filter(own)
            .filter(|k| k.tid != k.pid && k.tid != 0)
            .count() as u64;
        let vol = if u.source == "getrusage" {
            s.voluntary.saturating_sub(threads_gone)
        } else {
            s.voluntary
        };
        out.push(BillCheck {
            name: format!(
                "switches = {}'s voluntary and involuntary (threads' last switch out)",
                u.source
            ),
            ok: Some(
                within(vol as f64, u.voluntary as f64, 0.001, 1.0)
                    && within(s.involuntary as f64, u.involuntary as f64, 0.001, 1.0),
            ),
            detail: format!(
                "{} + {} counted ({} threads' last), {} + {} accounted{of_whom}",
                s.voluntary, s.involuntary, threads_gone, u.voluntary, u.involuntary
            ),
        });
        let cpu = u.user_ns + u.system_ns;
        // /proc's times are in ticks of 10 ms.
        let tick: f64 = if u.source == "/proc" {
            10_000_000.0
        } else {
            0.0
        };
        let slack = (cpu as f64 * 0.01).max(tick).max(CLOCKS_PART_NS);
        // The kernel starts a woken task's run time at the clock it read when it queued it (it
        // skips the update when the wake-up preempts), so its figure may hold up to the time
        // the bill counts as waiting.
        out.push(BillCheck {
            name: format!(
                "on-CPU time = {}'s user + system (±1 %, which may hold the waits)",
                u.source
            ),
            ok: Some(
                s.oncpu_ns as f64 <= cpu as f64 + slack
                    && cpu as f64 <= (s.oncpu_ns + s.wait_ns) as f64 + slack,
            ),
            detail: format!(
                "{:.3} ms counted (and {:.3} ms waiting), {:.3} ms accounted{of_whom}",
                s.oncpu_ns as f64 / 1e6,
                s.wait_ns as f64 / 1e6,
                cpu as f64 / 1e6
            ),
        });
    }
    if let Some((tid, (run, wait))) = leader {
        if let Some(k) = bill.tasks.iter().find(|k| k.tid == tid) {
            let ours = (k.oncpu_ns + k.wait_ns) as f64;
            let theirs = (run + wait) as f64;
            out.push(BillCheck {
                name: "the first task's run-queue wait ≥ its schedstat's, and with its on-CPU \
                       time = schedstat's sum (±2 %)"
                    .into(),
                ok: Some(
                    within(ours, theirs, 0.02, CLOCKS_PART_NS)
                        && wait as f64 <= k.wait_ns as f64 * 1.05 + CLOCKS_PART_NS,
                ),
                detail: format!(
                    "{:.3} + {:.3} ms counted, {:.3} + {:.3} ms in /proc/{tid}/schedstat (on \
                     CPU + waiting)",
                    k.oncpu_ns as f64 / 1e6,
                    k.wait_ns as f64 / 1e6,
                    run as f64 / 1e6,
                    wait as f64 / 1e6
                ),
            });
        }
    }
    out
}

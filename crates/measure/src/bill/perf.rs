//! The bill's second counter: where BPF is refused, perf's counting events on each system
//! call's tracepoint still count the program's calls by name in the kernel (no times, no
//! faults by kind, no scheduling; those stay the kernel's own accounting).

use super::{now_ns, per_call, Calibration};
use oscost_model::bill::CallLine;
use oscost_sys::syscount::{self, CallCounts};

/// The `syscalls:sys_enter_*` tracepoints, or why perf cannot count calls here.
pub(super) fn tracepoints() -> Result<Vec<(String, u64)>, String> {
    let fs = oscost_sys::ktrace::Tracefs::open().map_err(|e| e.0)?;
    syscount::enter_tracepoints(&fs).map_err(|e| e.to_string())
}

/// Opens perf's counts with `open` on the tracepoints `tps`, or says why not.
pub(super) fn start(
    tps: &[(String, u64)],
    open: impl FnOnce(&[(String, u64)]) -> std::io::Result<CallCounts>,
) -> Result<CallCounts, String> {
    open(tps).map_err(|e| match e.raw_os_error() {
        Some(libc::EMFILE) => format!(
            "{e}: perf needs a descriptor per system call ({}) and per thread: raise `ulimit -n`",
            tps.len()
        ),
        Some(libc::EACCES | libc::EPERM) => {
            format!("{e}: tracepoints need root, CAP_PERFMON or kernel.perf_event_paranoid = -1")
        }
        _ => e.to_string(),
    })
}

/// The thread removing the last bill's events, if one is.
static REMOVING: std::sync::Mutex<Option<std::thread::JoinHandle<()>>> =
    std::sync::Mutex::new(None);

/// Removes `events` on a thread of their own (the kernel takes seconds for a few hundred), so
/// the bill is printed meanwhile; [`removed`] waits for it.
pub(super) fn remove_later(events: CallCounts) {
    let handle = std::thread::spawn(move || drop(events));
    *REMOVING.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
}

/// Waits until the last bill's events are removed: a command started while they are on this
/// thread would inherit them (`bill --rounds` bills one command after another).
pub(super) fn removed() {
    let handle = REMOVING.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(h) = handle {
        let _ = h.join();
    }
}

/// What perf's counting adds to a system call, measured on this thread before billing: rounds
/// of getppid untraced and with its tracepoint's counting event on this thread, interleaved.
/// Counting happens at the call's entry, outside any time the bill takes, so nothing falls in
/// a window.
pub(super) fn calibrate(tracepoints: &[(String, u64)]) -> Option<Calibration> {
    const CALLS: u32 = 20_000;
    const ROUNDS: usize = 5;
    let event: Vec<(String, u64)> = tracepoints
        .iter()
        .filter(|(n, _)| n == "getppid")
        .cloned()
        .collect();
    let tid = [oscost_sys::gettid()];
    let timed = |call: fn() -> i64| per_call(CALLS, call);
    let getppid = || timed(oscost_sys::calls::raw_getppid);
    // One event for every round: opening and removing one costs the kernel far more than a
    // call (see `removal_ns`).
    let counting = CallCounts::threads(&event, &tid).ok()?;
    counting.set_enabled(false).ok()?;
    getppid();
    let (mut bare, mut added) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        // The bill's bare call is one that does nothing (ENOSYS), as BPF's calibration has it.
        bare.push(timed(oscost_sys::calls::invalid_syscall));
        let b = getppid();
        counting.set_enabled(true).ok()?;
        let t = getppid();
        counting.set_enabled(false).ok()?;
        added.push(t - b);
    }
    let counted: u64 = counting.read().iter().map(|c| c.1).sum();
    // The event must have seen the calls it was timed on, or it measured nothing.
    if counted < u64::from(CALLS) * ROUNDS as u64 {
        return None;
    }
    let t = now_ns();
    drop(counting);
    let removal_ns = (now_ns() - t) as f64;
    Some(Calibration::of(&added, &bare, 0.0, removal_ns))
}

/// The bill's call lines from perf's counts: counted, not timed; the most made first.
pub(super) fn calls(counts: &[(String, u64)]) -> Vec<CallLine> {
    let mut lines: Vec<CallLine> = counts
        .iter()
        .map(|(name, n)| CallLine {
            name: name.clone(),
            nr: syscount::number(name).unwrap_or(u32::MAX),
            count: *n,
            errors: None,
            time_ns: None,
            median_ns: None,
            p99_ns: None,
            price: None,
        })
        .collect();
    lines.sort_by(|a, b| b.count.cmp(&a.count).then(a.name.cmp(&b.name)));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_s_counts_become_lines_the_most_made_first_with_their_numbers() {
        let lines = calls(&[
            ("read".into(), 3),
            ("getppid".into(), 10),
            ("write".into(), 3),
        ]);
        let got: Vec<(&str, u64)> = lines.iter().map(|c| (c.name.as_str(), c.count)).collect();
        assert_eq!(got, [("getppid", 10), ("read", 3), ("write", 3)]);
        assert_eq!(lines[0].nr, libc::SYS_getppid as u32);
        assert!(lines
            .iter()
            .all(|c| c.time_ns.is_none() && c.errors.is_none()));
    }
}

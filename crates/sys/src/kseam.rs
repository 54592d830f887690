//! The tracing seam: the kernel's tracepoints recorded by whichever mechanism this kernel
//! allows, lightest first. BPF programs on raw tracepoints ([`crate::bpf`]) add the least to
//! each event, an ftrace instance of oscost's own ([`crate::ftrace`]) less than perf;
//! `perf_event_open` ([`crate::ktrace`]) is the last resort. Every mechanism hands
//! back the same [`Record`]s, laid out as the events' tracefs `format` files say, so one
//! decoder reads them all.

use crate::ktrace::{self, Format, Record, Tracefs, Unavailable};
use std::collections::BTreeMap;
use std::io;

/// How the tracepoints are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mechanism {
    /// BPF programs on raw tracepoints writing into a mapped array, read at the end.
    Bpf,
    /// An ftrace instance of oscost's own, read from `trace_pipe_raw` at the end.
    Ftrace,
    /// `perf_event_open` tracepoints, every event sampled with its raw record.
    Perf,
}

impl Mechanism {
    /// Every mechanism, in the order tried: the lightest first.
    pub const ALL: [Mechanism; 3] = [Mechanism::Bpf, Mechanism::Ftrace, Mechanism::Perf];

    /// Its name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Bpf => "bpf",
            Mechanism::Ftrace => "ftrace",
            Mechanism::Perf => "perf",
        }
    }

    /// The mechanism called `name`.
    pub fn from_name(name: &str) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.name() == name)
    }

    /// What it is, in a few words.
    pub fn describe(self) -> &'static str {
        match self {
            Mechanism::Bpf => "BPF programs on raw tracepoints",
            Mechanism::Ftrace => "an ftrace instance of oscost's own",
            Mechanism::Perf => "perf_event_open",
        }
    }
}

impl std::fmt::Display for Mechanism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

enum Inner {
    Bpf(crate::bpf::Tracer),
    Ftrace(crate::ftrace::Tracer),
    Perf(ktrace::Tracer),
}

/// Tracepoints being recorded on a set of CPUs by one mechanism; everything is closed on drop.
pub struct Tracer {
    inner: Inner,
    /// Tracepoints asked for that this kernel lacks (BPF and ftrace; perf keeps its own).
    missing: Vec<String>,
    /// Mechanisms tried before the one used, each with why it was not (a refusal of this
    /// machine), in the order tried.
    passed_over: Vec<(Mechanism, String)>,
}

impl Tracer {
    /// Opens `events` (`sys`, `event`) on `cpus`, disabled, with the first mechanism of
    /// `order` this kernel allows for all of them. A mechanism that cannot record an event by
    /// design is passed over without a word; one this machine refuses is named by
    /// [`Tracer::passed_over`]. When every one fails, the last one's reason is the error.
    /// `made` is told of anything made on the machine that must go after a kill (an ftrace
    /// instance's directory) as soon as it exists. `fields` names, by tracepoint
    /// (`sys:event`), the fields the reader needs: a mechanism whose records would leave any
    /// of them at zero (BPF's, for fields its programs do not record) is passed over, and
    /// [`Tracer::passed_over`] says which fields.
    pub fn open(
        fs: &Tracefs,
        events: &[(&str, &str)],
        cpus: &[usize],
        order: &[Mechanism],
        fields: &[(&str, &[&str])],
        made: &mut dyn FnMut(&std::path::Path),
    ) -> Result<Tracer, Unavailable> {
        let mut passed_over = Vec::new();
        let mut last = Unavailable("no tracing mechanism was allowed".into());
        // The tracepoints this kernel lacks are skipped (and named by `missing`), as perf does.
        let has = |&(s, e): &(&str, &str)| fs.format(s, e).is_some();
        let present: Vec<(&str, &str)> = events.iter().copied().filter(has).collect();
        let missing: Vec<String> = events
            .iter()
            .filter(|ev| !has(ev))
            .map(|(s, e)| format!("{s}:{e}"))
            .collect();
        for &m in order {
            let inner = match m {
                _ if present.is_empty() && m != Mechanism::Perf => {
                    continue;
                }
                Mechanism::Bpf => {
                    // Passed over with the reason, never silently: `--trace-with bpf` would
                    // otherwise trace with another mechanism without a word.
                    let unrecordable: Vec<String> = present
                        .iter()
                        .filter(|&&(s, e)| !crate::bpf::can_record(s, e))
                        .map(|(s, e)| format!("{s}:{e}"))
                        .collect();
                    if !unrecordable.is_empty() {
                        Err(Unavailable(format!(
                            "oscost's BPF programs cannot record {}, which this pass reads",
                            unrecordable.join(", ")
                        )))
                    } else {
                        match bpf_lacks(fs, &present, fields) {
                            Some(why) => Err(why),
                            None => crate::bpf::Tracer::open(
                                fs,
                                &present,
                                cpus,
                                crate::bpf::DEFAULT_SLOTS,
                            )
                            .map(Inner::Bpf),
                        }
                    }
                }
                Mechanism::Ftrace => {
                    crate::ftrace::Tracer::open(fs, &present, cpus, made).map(Inner::Ftrace)
                }
                Mechanism::Perf => {
                    ktrace::Tracer::open(fs, events, cpus, ktrace::DEFAULT_RING_PAGES)
                        .map(Inner::Perf)
                }
            };
            match inner {
                Ok(inner) => {
                    let missing = match inner {
                        Inner::Perf(_) => Vec::new(),
                        _ => missing,
                    };
                    return Ok(Tracer {
                        inner,
                        missing,
                        passed_over,
                    });
                }
                Err(u) => {
                    passed_over.push((m, u.0.clone()));
                    last = u;
                }
            }
        }
        Err(last)
    }

    /// The mechanism recording.
    pub fn mechanism(&self) -> Mechanism {
        match self.inner {
            Inner::Bpf(_) => Mechanism::Bpf,
            Inner::Ftrace(_) => Mechanism::Ftrace,
            Inner::Perf(_) => Mechanism::Perf,
        }
    }

    /// Mechanisms tried first that this machine refused, with why.
    pub fn passed_over(&self) -> &[(Mechanism, String)] {
        &self.passed_over
    }

    /// The clock of the records' times.
    pub fn clock(&self) -> libc::clockid_t {
        match self.inner {
            Inner::Bpf(_) => crate::bpf::CLOCK,
            Inner::Ftrace(_) => crate::ftrace::CLOCK,
            Inner::Perf(_) => libc::CLOCK_MONOTONIC_RAW,
        }
    }

    /// The formats of the tracepoints opened.
    pub fn formats(&self) -> &[Format] {
        match &self.inner {
            Inner::Bpf(t) => t.formats(),
            Inner::Ftrace(t) => t.formats(),
            Inner::Perf(t) => t.formats(),
        }
    }

    /// Tracepoints asked for that are not recorded (this kernel lacks them).
    pub fn missing(&self) -> &[String] {
        match &self.inner {
            Inner::Bpf(_) | Inner::Ftrace(_) => &self.missing,
            Inner::Perf(t) => t.missing(),
        }
    }

    /// Keeps only the records of threads `tids` for the system-call tracepoints (every task
    /// fires them; the others keep every record).
    pub fn keep_threads(&self, tids: &[u32]) -> io::Result<()> {
        match &self.inner {
            Inner::Bpf(t) => t.keep_threads(tids),
            Inner::Ftrace(t) => t.keep_threads(tids),
            Inner::Perf(t) => {
                let only = tids
                    .iter()
                    .map(|t| format!("common_pid == {t}"))
                    .collect::<Vec<_>>()
                    .join(" || ");
                for f in t.formats() {
                    if f.name.starts_with("raw_syscalls:") {
                        t.set_filter(&f.name.clone(), &only)?;
                    }
                }
                Ok(())
            }
        }
    }

    /// Starts recording.
    pub fn enable(&mut self) -> io::Result<()> {
        match &mut self.inner {
            Inner::Bpf(t) => t.enable(),
            Inner::Ftrace(t) => t.enable(),
            Inner::Perf(t) => t.enable(),
        }
    }

    /// Stops recording.
    pub fn disable(&mut self) -> io::Result<()> {
        match &mut self.inner {
            Inner::Bpf(t) => t.disable(),
            Inner::Ftrace(t) => t.disable(),
            Inner::Perf(t) => t.disable(),
        }
    }

    /// Every record, in time order.
    pub fn drain(&mut self) -> Vec<Record> {
        match &mut self.inner {
            Inner::Bpf(t) => t.drain(),
            Inner::Ftrace(t) => t.drain(),
            Inner::Perf(t) => t.drain(),
        }
    }

    /// Removes what the mechanism made on the machine (an ftrace instance); an error leaves
    /// it there.
    pub fn remove(&mut self) -> io::Result<()> {
        match &mut self.inner {
            Inner::Ftrace(t) => t.remove(),
            Inner::Bpf(_) | Inner::Perf(_) => Ok(()),
        }
    }

    /// Records lost (a full buffer, or a program that could not run).
    pub fn lost(&self) -> u64 {
        match &self.inner {
            Inner::Bpf(t) => t.lost(),
            Inner::Ftrace(t) => t.lost(),
            Inner::Perf(t) => t.lost(),
        }
    }

    /// The records of [`Tracer::lost`] the kernel counted by tracepoint (`sys:event`): BPF's
    /// programs it did not run; empty for the other mechanisms, whose losses are by CPU.
    pub fn lost_by_event(&self) -> BTreeMap<String, u64> {
        match &self.inner {
            Inner::Bpf(t) => t.lost_by_event().clone(),
            Inner::Ftrace(_) | Inner::Perf(_) => BTreeMap::new(),
        }
    }

    /// Events counted but never sampled, none lost (perf only: see
    /// [`ktrace::Tracer::unsampled`]).
    pub fn unsampled(&self) -> u64 {
        match &self.inner {
            Inner::Bpf(_) | Inner::Ftrace(_) => 0,
            Inner::Perf(t) => t.unsampled(),
        }
    }

    /// [`Tracer::unsampled`] by CPU and tracepoint.
    pub fn unsampled_by(&self) -> BTreeMap<(u32, String), u64> {
        match &self.inner {
            Inner::Bpf(_) | Inner::Ftrace(_) => BTreeMap::new(),
            Inner::Perf(t) => t.unsampled_by().clone(),
        }
    }
}

/// Why BPF's records would not do for a reader needing `fields` (by `sys:event`) of the
/// tracepoints `present`: the fields its programs leave at zero, or `None` when it records
/// every one. No reader is handed a zero it takes for a value.
fn bpf_lacks(
    fs: &Tracefs,
    present: &[(&str, &str)],
    fields: &[(&str, &[&str])],
) -> Option<Unavailable> {
    let lacking: Vec<String> = present
        .iter()
        .filter_map(|&(s, e)| {
            let name = format!("{s}:{e}");
            let wanted = fields.iter().find(|(n, _)| *n == name)?.1;
            let lacks = crate::bpf::lacking_fields(&fs.format(s, e)?, wanted);
            (!lacks.is_empty()).then(|| format!("{name}'s {}", lacks.join(", ")))
        })
        .collect();
    (!lacking.is_empty()).then(|| {
        Unavailable(format!(
            "oscost's BPF programs do not record {}, which this pass reads",
            lacking.join("; ")
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skip::skip;

    #[test]
    fn names_round_trip() {
        for m in Mechanism::ALL {
            assert_eq!(Mechanism::from_name(m.name()), Some(m));
        }
        assert_eq!(Mechanism::from_name("dtrace"), None);
    }

    #[test]
    fn an_event_bpf_cannot_record_goes_to_perf_with_the_event_named() {
        let _serial = crate::ktrace::tests::tracefs_serial();
        let fs = match Tracefs::open() {
            Ok(fs) => fs,
            Err(e) => return skip(&format!("needs tracefs: {e}")),
        };
        let cpu = crate::affinity().unwrap()[0];
        let events = [("sched", "sched_process_fork")];
        match Tracer::open(
            &fs,
            &events,
            &[cpu],
            &[Mechanism::Bpf, Mechanism::Perf],
            &[],
            &mut |_| {},
        ) {
            Ok(t) => {
                assert_eq!(t.mechanism(), Mechanism::Perf);
                let over = t.passed_over();
                assert!(
                    matches!(over, [(Mechanism::Bpf, why)]
                        if why.contains("cannot record sched:sched_process_fork")),
                    "{over:?}"
                );
            }
            Err(u) => assert!(!u.0.contains('\n'), "{u}"),
        }
    }

    /// A reader that needs a field BPF's programs leave at zero is not handed BPF's records:
    /// the next mechanism records, and the reason names the field.
    #[test]
    fn bpf_lacking_a_field_asked_for_is_passed_over_with_the_field_named() {
        let _serial = crate::ktrace::tests::tracefs_serial();
        let fs = match Tracefs::open() {
            Ok(fs) => fs,
            Err(e) => return skip(&format!("needs tracefs: {e}")),
        };
        if fs.format("timer", "hrtimer_expire_entry").is_none() {
            return skip("needs the timer:hrtimer_expire_entry tracepoint");
        }
        let cpu = crate::affinity().unwrap()[0];
        let events = [("timer", "hrtimer_expire_entry")];
        let needs: [(&str, &[&str]); 1] = [("timer:hrtimer_expire_entry", &["hrtimer", "now"])];
        let why = bpf_lacks(&fs, &events, &needs).expect("now is not recorded");
        assert!(why.0.contains("timer:hrtimer_expire_entry's now"), "{why}");
        assert!(!why.0.contains("hrtimer,"), "{why}");
        let fine: [(&str, &[&str]); 1] = [("timer:hrtimer_expire_entry", &["hrtimer"])];
        assert!(bpf_lacks(&fs, &events, &fine).is_none());
        match Tracer::open(
            &fs,
            &events,
            &[cpu],
            &[Mechanism::Bpf, Mechanism::Perf],
            &needs,
            &mut |_| {},
        ) {
            Ok(t) => {
                assert_eq!(t.mechanism(), Mechanism::Perf);
                let (m, why) = &t.passed_over()[0];
                assert_eq!(*m, Mechanism::Bpf);
                assert!(why.contains("'s now"), "{why}");
            }
            Err(u) => assert!(!u.0.contains('\n'), "{u}"),
        }
    }
}

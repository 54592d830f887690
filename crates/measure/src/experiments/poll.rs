//! `poll`: what asking "which descriptor is ready?" costs as the descriptors grow: `select`,
//! `poll` and `epoll_wait` with a zero timeout over N connected sockets of which exactly one
//! holds a byte, and `epoll_ctl` add + delete (as LEBench, Ren et al., "An Analysis of
//! Performance Evolution of Linux's Core Operations", SOSP 2019, measures them).
//!
//! `select` and `poll` look at every descriptor on every call, `epoll_wait` only at the ready
//! list: the cost per descriptor is fitted over the sizes measured, with its interval. Each
//! call must find exactly one descriptor ready, and the kernel's count of the calls (the
//! `raw_syscalls` tracepoint, over a separate untimed pass) checks one call per operation.

use crate::context::Context;
use crate::engine::{self, first_occurrences, value_name};
use crate::limits::{Limits, Needs, FILES_MARGIN};
use crate::sampler::{self, Job};
use anyhow::Context as _;
use oscost_model::case::{Case, Check, DerivedSpec, ExperimentOutput, Unavailable};
use oscost_model::ids::poll as ids;
use oscost_model::Message;
use oscost_sys::ktrace::{SyscallCounter, Tracefs};
use oscost_sys::readiness::{Epoll, Poll, Select, Sockets, FD_SETSIZE};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

/// Samples per case at most with `--suite-size`.
const SUITE_SAMPLES: usize = 41;

/// Subcommand name and id prefix.
pub const NAME: &str = ids::NAME;

/// Calls of the counted pass.
const COUNTED_CALLS: u64 = 256;

/// The calls.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Call {
    /// select(nfds, read set, NULL, NULL, {0, 0}), the set copied before each call
    Select,
    /// poll(fds, N, 0)
    Poll,
    /// epoll_wait(epfd, events, 16, 0) on an epoll instance watching the N sockets
    Epoll,
    /// epoll_ctl ADD then DEL of one more socket on the instance watching the most sockets
    EpollCtl,
    /// select over the same sockets numbered just below 1024 (FD_SETSIZE), as in a process
    /// with many files open: `poll.select.N.high` (not in the default list)
    SelectHigh,
}

impl Call {
    /// The calls measured when `--calls` names none.
    const DEFAULT: [Call; 4] = [Call::Select, Call::Poll, Call::Epoll, Call::EpollCtl];

    fn description(self, n: usize) -> String {
        match self {
            Call::Select => format!(
                "select over {n} connected sockets on the lowest free descriptors, one readable, \
                 zero timeout (the read set copied before each call)"
            ),
            Call::SelectHigh => format!(
                "select over {n} connected sockets numbered just below 1024 (FD_SETSIZE), one \
                 readable, zero timeout: the kernel copies and scans every bit up to the highest"
            ),
            Call::Poll => format!("poll over {n} connected sockets, one readable, zero timeout"),
            Call::Epoll => format!(
                "epoll_wait on an instance watching {n} connected sockets, one readable, zero \
                 timeout"
            ),
            Call::EpollCtl => format!(
                "epoll_ctl ADD + DEL of one socket on an instance watching {n} sockets (2 calls)"
            ),
        }
    }

    /// System calls one operation makes.
    fn calls(self) -> u64 {
        if self == Call::EpollCtl {
            2
        } else {
            1
        }
    }
}

/// Options of `oscost poll`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// Calls to measure, comma-separated (default: select,poll,epoll,epoll-ctl)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "CALL,...")]
    pub calls: Vec<Call>,

    /// Numbers of watched sockets, comma-separated, each at least 1 (two or more sizes give
    /// the fitted cost per descriptor)
    #[arg(long, value_delimiter = ',', value_name = "N,...", default_value = "10,1000",
          value_parser = parse_fds)]
    pub fds: Vec<usize>,

    /// At most 41 samples of 1 ms after at least 10 ms of warm-up, as the default suite takes
    /// them
    #[arg(long)]
    pub suite_size: bool,
}

fn parse_fds(s: &str) -> Result<usize, String> {
    match engine::parse_count(s)? {
        0 => Err(format!("`{s}`: watch at least 1 socket")),
        n => Ok(n),
    }
}

/// What a run measures, resolved once.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plan {
    calls: Vec<Call>,
    /// Ascending.
    fds: Vec<usize>,
}

fn plan(opts: &Options) -> Plan {
    let calls = if opts.calls.is_empty() {
        Call::DEFAULT.to_vec()
    } else {
        first_occurrences(&opts.calls)
    };
    let mut fds = first_occurrences(&opts.fds);
    fds.sort_unstable();
    Plan { calls, fds }
}

/// Descriptors a run holds at once: every size's sockets and their peers (all sizes stay open
/// for the interleaved rounds; with `select-high` the peers start at 1024, above the copies),
/// two epoll instances per size, the pair `epoll-ctl` adds, and the margin.
fn files_needed(p: &Plan) -> u64 {
    let sockets: u64 = p.fds.iter().map(|&n| n as u64).sum();
    let watched_and_peers = if p.calls.contains(&Call::SelectHigh) {
        FD_SETSIZE as u64 + sockets
    } else {
        2 * sockets
    };
    watched_and_peers + 2 * p.fds.len() as u64 + 2 + FILES_MARGIN
}

fn needs(p: &Plan) -> Needs {
    let list: Vec<String> = p.fds.iter().map(|n| n.to_string()).collect();
    let sockets: usize = p.fds.iter().sum();
    Needs {
        what: format!("{NAME} --fds {}", list.join(",")),
        instead: Some("use a smaller --fds".into()),
        files: Some((
            files_needed(p),
            format!("{sockets} connected socket pairs, each end a descriptor"),
        )),
        ..Needs::default()
    }
}

fn case_id(call: Call, n: usize) -> String {
    match call {
        Call::EpollCtl => ids::Id::EpollCtl.to_string(),
        Call::SelectHigh => ids::Id::SelectHigh(n).to_string(),
        c => ids::Id::Call(&value_name(&c), n).to_string(),
    }
}

/// One case's call, bound to its size's sockets.
enum Runner<'a> {
    Select(Select),
    Poll(Poll),
    Epoll(Epoll),
    Ctl(&'a Epoll, i32),
}

impl Runner<'_> {
    /// One operation; the ready descriptors it found (`epoll-ctl`: 1).
    #[inline]
    fn once(&mut self) -> std::io::Result<usize> {
        match self {
            Runner::Select(s) => s.ready(),
            Runner::Poll(p) => p.ready(),
            Runner::Epoll(e) => e.ready(),
            Runner::Ctl(e, fd) => e.add_delete(*fd).map(|()| 1),
        }
    }
}

/// The sockets of one size, with the epoll instance the `epoll-ctl` case may share.
struct Size {
    n: usize,
    sockets: Sockets,
    epoll: Epoll,
    /// With `select-high`: copies of the watched ends just below FD_SETSIZE, or why not.
    high: Option<Result<Vec<OwnedFd>, String>>,
}

/// The sockets of every size, smallest first: its watched ends take the lowest free
/// descriptors, as a program's first sockets do (select's cost grows with the highest
/// descriptor, not the count), each larger size's the next ones, every peer above them all and
/// with `high` at 1024 or above, leaving the numbers below FD_SETSIZE to the copies
/// `select-high` watches (made first, the smallest size's highest); in the plan's (ascending)
/// order.
fn open_sizes(fds: &[usize], high: bool) -> anyhow::Result<Vec<Size>> {
    let total: usize = fds.iter().sum();
    let peers_from = if high { FD_SETSIZE as i32 } else { 0 };
    let sets = Sockets::sets(fds, peers_from).map_err(|e| {
        let (soft, hard) = oscost_sys::rlimit(libc::RLIMIT_NOFILE).unwrap_or((None, None));
        let show = |v: Option<u64>| v.map_or("unlimited".to_owned(), |v| v.to_string());
        anyhow::anyhow!(
            "--fds: opening {total} socket pairs failed ({e}); RLIMIT_NOFILE is {} (hard {}): \
             raise it with ulimit -n, or use a smaller --fds",
            show(soft),
            show(hard)
        )
    })?;
    // Before anything else takes a number below FD_SETSIZE.
    let copies: Vec<_> = sets
        .iter()
        .map(|s| high.then(|| s.copies_below(FD_SETSIZE as i32).map_err(|e| e.to_string())))
        .collect();
    let mut sizes = Vec::with_capacity(fds.len());
    for ((sockets, &n), high) in sets.into_iter().zip(fds).zip(copies) {
        // The last one: select and poll look at every descriptor up to it anyway.
        sockets.make_readable(n - 1)?;
        let epoll = Epoll::new(&sockets.watched()).context("filling an epoll instance")?;
        sizes.push(Size {
            n,
            sockets,
            epoll,
            high,
        });
    }
    Ok(sizes)
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Poll;
    const SUMMARY: &'static str =
        "select, poll and epoll_wait over N sockets, one ready, and their cost per descriptor";
    const ABOUT: &'static str = "What asking which descriptor is ready costs as the descriptors \
grow: select, poll and epoll_wait with a zero timeout over N connected UNIX stream sockets of \
which exactly one holds a byte (10 and 1000 by default, --fds to choose), and epoll_ctl ADD + \
DEL of one more socket, as LEBench (Ren et al., \"An Analysis of Performance Evolution of \
Linux's Core Operations\", SOSP 2019) measures them.

select and poll look at every descriptor on every call; epoll_wait looks only at its ready \
list. Each kind's cost per watched descriptor is a least-squares slope over the sizes, with its \
interval. The sockets take the lowest free descriptors, the smallest size's first (3 to 12 for \
10 sockets in a process with only 0, 1 and 2 open), as a program's first sockets do: select's \
cost grows with the highest descriptor, not the count, and each case records its highest as \
highest_fd. --calls select-high adds poll.select.N.high, select over copies of the same \
sockets on the highest descriptors below 1024, as a process with many files open numbers them. \
Every call must report exactly one descriptor ready, and a separate untimed pass counts the \
calls the kernel saw (the raw_syscalls:sys_enter tracepoint, per thread). select watches only \
descriptors below 1024 (FD_SETSIZE): a larger size has no select case. A size beyond the \
open-file limit is refused before anything runs.\n\nTakes about 3 s (the default \
suite's five cases about 0.5 s); --quick about 0.45 s (the quick suite's two cases about 0.15 s) \
on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = true;
    const SUITE_ARGS: &'static [&'static str] =
        &["--suite-size", "--calls", "select,epoll,epoll-ctl"];
    const QUICK_SUITE_ARGS: &'static [&'static str] = &["--calls", "poll"];

    fn preflight(&self, _quick: bool, limits: &Limits) -> anyhow::Result<()> {
        limits.check(&needs(&plan(self)))
    }

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }
}

fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    let p = plan(opts);
    let sampler = if opts.suite_size {
        // No budget of its own: the samples and their length bound the time.
        let s = ctx.sampler;
        s.for_suite(SUITE_SAMPLES, Duration::from_millis(10), s.budget)
    } else {
        ctx.sampler
    };
    let ctx = &ctx.with_sampler(sampler);
    ctx.pin_first_cpu()?;
    let mut out = ExperimentOutput::default();
    // Copies just below FD_SETSIZE need the numbers there free: the peers go above it.
    let high = p.calls.contains(&Call::SelectHigh);
    let sizes = open_sizes(&p.fds, high)?;
    let extra = Sockets::new(1).context("opening the socket epoll-ctl adds")?;
    let extra_fd = extra.watched()[0];

    // (call, size, the highest descriptor watched) per case.
    let mut kinds: Vec<(Call, usize, Option<i32>)> = Vec::new();
    let mut runners: Vec<Runner> = Vec::new();
    for &call in &p.calls {
        if call == Call::EpollCtl {
            let big = sizes.last().expect("at least one size");
            kinds.push((call, big.n, None));
            runners.push(Runner::Ctl(&big.epoll, extra_fd));
            continue;
        }
        for s in &sizes {
            let fds = if call == Call::SelectHigh {
                match &s.high {
                    Some(Ok(copies)) => copies.iter().map(|f| f.as_raw_fd()).collect(),
                    None => unreachable!("copies are made when select-high is planned"),
                    Some(Err(e)) => {
                        out.unavailable.push(Unavailable {
                            id: case_id(call, s.n),
                            description: call.description(s.n),
                            reason: format!(
                                "{e}: the sizes' own sockets hold the rest (use a smaller --fds)"
                            ),
                        });
                        continue;
                    }
                }
            } else {
                s.sockets.watched()
            };
            let r = match call {
                Call::Select | Call::SelectHigh => match Select::new(&fds) {
                    Ok(sel) => Runner::Select(sel),
                    Err(e) => {
                        out.unavailable.push(Unavailable {
                            id: case_id(call, s.n),
                            description: call.description(s.n),
                            reason: format!("{e} (FD_SETSIZE is {FD_SETSIZE})"),
                        });
                        continue;
                    }
                },
                Call::Poll => Runner::Poll(Poll::new(&fds)),
                Call::Epoll => {
                    Runner::Epoll(Epoll::new(&fds).context("filling an epoll instance")?)
                }
                Call::EpollCtl => unreachable!("handled above"),
            };
            kinds.push((call, s.n, fds.iter().max().copied()));
            runners.push(r);
        }
    }
    ctx.progress
        .start((runners.len() + ctx.sampler.samples) as u64, NAME);
    let jobs: Vec<Job> = runners
        .iter_mut()
        .map(|r| {
            Job::new(ctx, move || {
                let ready = r.once()?;
                if ready != 1 {
                    anyhow::bail!("{ready} descriptors ready, not the 1 made readable");
                }
                Ok(())
            })
        })
        .collect();
    let (results, threads) = sampler::counting_threads(|| {
        sampler::measure_interleaved(ctx, jobs, &|| ctx.progress.inc(1))
    });
    let results = results?;
    let counter = Tracefs::open().and_then(|fs| SyscallCounter::open(&fs, None).map(|c| (c, fs)));
    for ((r, (samples, said)), &(call, n, highest)) in runners.iter_mut().zip(results).zip(&kinds) {
        let unit = if call == Call::EpollCtl {
            "add+delete"
        } else {
            "call"
        };
        let mut case = Case::new(case_id(call, n), call.description(n), unit, samples)
            .param("call", value_name(&call))
            .param("fds", n as u64)
            .param("ready", 1u64)
            .param("cpu", ctx.first_cpu() as u64);
        if let Some(fd) = highest {
            case = case.param("highest_fd", fd as u64);
        }
        match &counter {
            Ok((c, _)) => {
                let (ready, calls) = c.count(|| -> std::io::Result<u64> {
                    let mut ready = 0;
                    for _ in 0..COUNTED_CALLS {
                        ready += r.once()? as u64;
                    }
                    Ok(ready)
                })?;
                let ready = ready?;
                let per = calls as f64 / COUNTED_CALLS as f64;
                case.counters.insert("system_calls_per_op".into(), per);
                case.counters
                    .insert("ready_per_op".into(), ready as f64 / COUNTED_CALLS as f64);
                case.checks.push(Check::near(
                    "system_calls_per_op",
                    call.calls() as f64,
                    per,
                    1e-9,
                    &format!(
                        "raw_syscalls:sys_enter counted by the kernel for this thread over \
                         {COUNTED_CALLS} operations of the same code, untimed: {calls} calls; \
                         every timed call also reported exactly 1 descriptor ready"
                    ),
                ));
            }
            Err(why) => case.notes.push(Message::from(
                format!("system calls not counted: {why}").as_str(),
            )),
        }
        case.checks.extend(sampler::single_task_check(threads));
        case.add_messages(said);
        out.cases.push(case);
    }
    drop(counter);
    for call in [Call::Select, Call::Poll, Call::Epoll] {
        let points: Vec<(usize, String)> = kinds
            .iter()
            .filter(|k| k.0 == call)
            .map(|&(c, n, _)| (n, case_id(c, n)))
            .collect();
        if let Some(terms) = slope_terms(&points) {
            let flagged = points.iter().find_map(|(_, id)| {
                out.cases
                    .iter()
                    .find(|c| &c.id == id)
                    .and_then(engine::failed_checks)
            });
            out.derived.push(DerivedSpec {
                id: ids::per_fd(&value_name(&call)),
                description: format!(
                    "{}'s cost per watched descriptor: the least-squares slope of its median \
                     over {} sizes",
                    value_name(&call),
                    points.len()
                ),
                terms,
                flagged,
            });
        }
    }
    drop(runners);
    drop(extra);
    drop(sizes);
    ctx.progress.finish();
    Ok(out)
}

/// The least-squares slope of cost against size as a weighted sum of the cases' medians:
/// weight `(n - mean) / Σ(n - mean)²` each. `None` with fewer than two distinct sizes.
fn slope_terms(points: &[(usize, String)]) -> Option<Vec<(String, f64)>> {
    if points.len() < 2 {
        return None;
    }
    let mean = points.iter().map(|p| p.0 as f64).sum::<f64>() / points.len() as f64;
    let sxx: f64 = points.iter().map(|p| (p.0 as f64 - mean).powi(2)).sum();
    (sxx > 0.0).then(|| {
        points
            .iter()
            .map(|(n, id)| (id.clone(), (*n as f64 - mean) / sxx))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::testing;
    use oscost_model::case::SINGLE_THREAD_CHECK;

    fn opts(extra: &[&str]) -> Options {
        engine::defaults(extra)
    }

    #[test]
    fn the_slope_of_two_sizes_is_their_difference_over_the_gap() {
        let t = slope_terms(&[(10, "a".into()), (1000, "b".into())]).unwrap();
        assert_eq!(t[0].0, "a");
        assert!((t[0].1 + 1.0 / 990.0).abs() < 1e-15);
        assert!((t[1].1 - 1.0 / 990.0).abs() < 1e-15);
        // Exact on a line: 5 + 2n.
        let pts = [(1usize, 7.0), (4, 13.0), (10, 25.0)];
        let t = slope_terms(
            &pts.iter()
                .map(|&(n, _)| (n, n.to_string()))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let slope: f64 = t.iter().zip(&pts).map(|((_, w), (_, y))| w * y).sum();
        assert!((slope - 2.0).abs() < 1e-12, "{slope}");
        assert!(slope_terms(&[(5, "a".into())]).is_none());
    }

    #[test]
    fn plans_sort_sizes_and_need_two_descriptors_each() {
        let p = plan(&opts(&["--fds", "1000,10,10"]));
        assert_eq!(p.fds, [10, 1000]);
        assert_eq!(p.calls, Call::DEFAULT);
        assert_eq!(files_needed(&p), 2020 + 4 + 2 + FILES_MARGIN);
        assert_eq!(case_id(Call::Epoll, 10), "poll.epoll.10");
        assert_eq!(case_id(Call::EpollCtl, 10), "poll.epoll-ctl");
        let limits = Limits {
            nofile: Some((Some(64), Some(64))),
            ..Limits::default()
        };
        let e = limits.check(&needs(&p)).unwrap_err().to_string();
        assert!(e.contains("RLIMIT_NOFILE") && e.contains("--fds"), "{e}");
    }

    #[test]
    fn high_copies_sit_just_below_fd_setsize_and_plain_sets_low() {
        // As every run does at its start: the peers go above FD_SETSIZE, past a soft 1024.
        oscost_sys::raise_open_file_limit().unwrap();
        testing::with_tiny_ctx(|ctx| {
            let out = run(
                &opts(&["--fds", "3,40", "--calls", "select,select-high"]),
                ctx,
            )
            .unwrap();
            let highest = |id: &str| {
                let c = out.cases.iter().find(|c| c.id == id).unwrap();
                for k in c.checks.iter().filter(|k| k.name != SINGLE_THREAD_CHECK) {
                    assert!(k.passed, "{id}: {k:?}");
                }
                c.params["highest_fd"].as_u64().unwrap()
            };
            // The smallest size's copies take the very top; the plain sets stay low.
            assert_eq!(highest("poll.select.3.high"), FD_SETSIZE as u64 - 1);
            assert!(highest("poll.select.40.high") < FD_SETSIZE as u64 - 3);
            assert!(highest("poll.select.40.high") >= FD_SETSIZE as u64 - 43);
            assert!(highest("poll.select.3") < highest("poll.select.40"));
            assert!(
                highest("poll.select.40") < 512,
                "the test process holds few files"
            );
            assert!(out.derived.iter().all(|d| d.id == "poll.select.per_fd"));
        });
    }

    #[test]
    fn a_tiny_run_finds_one_ready_and_one_call_each() {
        testing::with_tiny_ctx(|ctx| {
            let out = run(&opts(&["--fds", "3,40"]), ctx).unwrap();
            let ids: Vec<&str> = out.cases.iter().map(|c| c.id.as_str()).collect();
            assert_eq!(
                ids,
                [
                    "poll.select.3",
                    "poll.select.40",
                    "poll.poll.3",
                    "poll.poll.40",
                    "poll.epoll.3",
                    "poll.epoll.40",
                    "poll.epoll-ctl"
                ]
            );
            for c in &out.cases {
                assert!(
                    c.samples.per_op_ns.len() >= sampler::MIN_SAMPLES,
                    "{}",
                    c.id
                );
                for k in c.checks.iter().filter(|k| k.name != SINGLE_THREAD_CHECK) {
                    assert!(k.passed, "{}: {k:?}", c.id);
                }
            }
            let slopes: Vec<&str> = out.derived.iter().map(|d| d.id.as_str()).collect();
            assert_eq!(
                slopes,
                [
                    "poll.select.per_fd",
                    "poll.poll.per_fd",
                    "poll.epoll.per_fd"
                ]
            );
        });
    }
}

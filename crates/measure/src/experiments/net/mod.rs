//! `net`: loopback sockets between two threads (lmbench's `lat_tcp`, `lat_udp`, `lat_unix`,
//! `lat_connect`, `bw_tcp`, `bw_unix` and `bw_pipe`, Larry McVoy and Carl Staelin, "lmbench:
//! Portable tools for performance analysis", 1996).
//!
//! A round trip is one byte written by the measuring thread and written back by a partner
//! thread, both pinned to one CPU or to two; the switches both threads made are counted
//! (getrusage) and checked as `switch` checks them. A connection is made as programs make it
//! (the listener's thread accepts and closes, the client reads to end of file and closes, a FIN
//! each way) and, as its own case, made, accepted and reset in the measuring thread alone; the
//! kernel's own TCP counters (`/proc/net/snmp`, `/proc/net/tcp`) prove what each was. Bandwidth is 64 KiB writes to a partner that drains them, every byte counted
//! on arrival. LEBench's send and recv (Ren et al., "An Analysis of Performance Evolution of
//! Linux's Core Operations", SOSP 2019) are one thread's send and recv through a socketpair.

use crate::context::Context;
use crate::cpuset::{self, AffinityRestore};
use crate::engine::{self, first_occurrences, value_name};
use crate::sampler::{self, measure_fallible};
use anyhow::Context as _;
use oscost_model::case::{Case, Check, ExperimentOutput, Unavailable};
use oscost_model::ids::net as ids;
use oscost_model::{Message, MessageKind};
use oscost_sys::net::{self, Acceptor, Kind, Peer, Role};
use oscost_sys::task::{CpuMask, Kind as TaskKind, Team};
use oscost_sys::Switches;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Subcommand name and id prefix.
pub const NAME: &str = ids::NAME;

/// Bytes of one bandwidth write.
const CHUNK: usize = 64 * 1024;

/// Connections of the batch the kernel's TCP counters are read around.
const VERIFY_CONNECTIONS: u64 = 500;

/// What is measured; the name is the middle of the case id (`net.tcp.rtt.same`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Measure {
    /// 1-byte round trip over TCP on 127.0.0.1 (TCP_NODELAY)
    #[value(name = "tcp.rtt")]
    TcpRtt,
    /// 1-byte round trip over UDP on 127.0.0.1 (connected sockets)
    #[value(name = "udp.rtt")]
    UdpRtt,
    /// 1-byte round trip over an AF_UNIX stream socketpair
    #[value(name = "unix.rtt")]
    UnixRtt,
    /// 1-byte round trip over an AF_UNIX datagram socketpair
    #[value(name = "unix-dgram.rtt")]
    UnixDgramRtt,
    /// connect, read to end of file and close of one TCP connection on 127.0.0.1 that another
    /// thread accepts and closes (a FIN each way, lmbench's lat_connect)
    #[value(name = "tcp.connect")]
    TcpConnect,
    /// connect + accept + close with SO_LINGER 0 (a reset) of one TCP connection on 127.0.0.1,
    /// one thread
    #[value(name = "tcp.connect.rst")]
    TcpConnectRst,
    /// 64 KiB writes over TCP on 127.0.0.1 to a draining thread
    #[value(name = "tcp.bw")]
    TcpBw,
    /// 64 KiB writes over an AF_UNIX stream socketpair to a draining thread
    #[value(name = "unix.bw")]
    UnixBw,
    /// 64 KiB writes into a pipe to a draining thread
    #[value(name = "pipe.bw")]
    PipeBw,
    /// send + recv of 1 byte through an AF_UNIX stream socketpair, one thread (LEBench's small
    /// send and recv)
    #[value(name = "unix.sendrecv.b1")]
    SendRecvSmall,
    /// send + recv of 96 000 bytes through an AF_UNIX stream socketpair, one thread (LEBench's
    /// big send and recv)
    #[value(name = "unix.sendrecv.b96000")]
    SendRecvBig,
}

impl Measure {
    const ALL: [Measure; 11] = [
        Measure::TcpRtt,
        Measure::UdpRtt,
        Measure::UnixRtt,
        Measure::UnixDgramRtt,
        Measure::TcpConnect,
        Measure::TcpConnectRst,
        Measure::TcpBw,
        Measure::UnixBw,
        Measure::PipeBw,
        Measure::SendRecvSmall,
        Measure::SendRecvBig,
    ];

    fn kind(self) -> Kind {
        match self {
            Measure::TcpRtt | Measure::TcpConnect | Measure::TcpConnectRst | Measure::TcpBw => {
                Kind::Tcp
            }
            Measure::UdpRtt => Kind::Udp,
            Measure::UnixRtt | Measure::UnixBw | Measure::SendRecvSmall | Measure::SendRecvBig => {
                Kind::Unix
            }
            Measure::UnixDgramRtt => Kind::UnixDgram,
            Measure::PipeBw => Kind::Pipe,
        }
    }

    fn role(self) -> Option<Role> {
        match self {
            Measure::TcpConnect
            | Measure::TcpConnectRst
            | Measure::SendRecvSmall
            | Measure::SendRecvBig => None,
            Measure::TcpBw | Measure::UnixBw | Measure::PipeBw => Some(Role::Sink),
            _ => Some(Role::Echo),
        }
    }

    /// Bytes of one send + recv (the one-thread socketpair cases).
    fn sendrecv_bytes(self) -> Option<usize> {
        match self {
            Measure::SendRecvSmall => Some(1),
            Measure::SendRecvBig => Some(96_000),
            _ => None,
        }
    }

    fn needs_loopback(self) -> bool {
        matches!(self.kind(), Kind::Tcp | Kind::Udp)
    }

    fn describe(self) -> &'static str {
        match self {
            Measure::TcpRtt => "1-byte write/read round trip over TCP on 127.0.0.1 (TCP_NODELAY)",
            Measure::UdpRtt => {
                "1-byte write/read round trip over connected UDP sockets on 127.0.0.1"
            }
            Measure::UnixRtt => {
                "1-byte write/read round trip over an AF_UNIX SOCK_STREAM socketpair"
            }
            Measure::UnixDgramRtt => {
                "1-byte write/read round trip over an AF_UNIX SOCK_DGRAM socketpair"
            }
            Measure::TcpConnect => {
                "socket + connect + read to end of file + close of one TCP connection on \
                 127.0.0.1 that a thread on the same CPU accepts and closes at once (a FIN each \
                 way; the accepting side left in TIME_WAIT)"
            }
            Measure::TcpConnectRst => {
                "socket + connect + accept4 + close (SO_LINGER 0) + close of one TCP connection \
                 on 127.0.0.1, one thread (a reset, no TIME_WAIT)"
            }
            Measure::TcpBw => "64 KiB write over TCP on 127.0.0.1 to a thread draining it",
            Measure::UnixBw => {
                "64 KiB write over an AF_UNIX SOCK_STREAM socketpair to a thread draining it"
            }
            Measure::PipeBw => "64 KiB write into a pipe to a thread draining it",
            Measure::SendRecvSmall => {
                "write of 1 byte into an AF_UNIX SOCK_STREAM socketpair and read of it from the \
                 other end, one thread"
            }
            Measure::SendRecvBig => {
                "write of 96 000 bytes into an AF_UNIX SOCK_STREAM socketpair and read of them \
                 from the other end, one thread"
            }
        }
    }
}

/// Where the two threads run.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Placement {
    /// both pinned to the first CPU of the set
    Same,
    /// pinned to the first two CPUs of the set, one each
    Cross,
}

/// Options of `oscost net`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// What to measure, comma-separated (default: all)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "CASE,...")]
    pub cases: Vec<Measure>,

    /// Placements of the two threads, comma-separated (default: same,cross; same alone on one
    /// CPU)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "WHERE,...")]
    pub placement: Vec<Placement>,

    /// Hold /dev/cpu_dma_latency at 0 during the run so idle CPUs poll instead of halting
    /// (needs root; a warning is recorded where not permitted)
    #[arg(long)]
    #[serde(default)]
    pub idle_poll: bool,

    /// The suite's shorter sampling (`oscost run` passes it)
    #[arg(long, hide = true)]
    #[serde(default)]
    pub suite_size: bool,
}

/// What a run measures, resolved once.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plan {
    measures: Vec<Measure>,
    placements: Vec<Placement>,
}

fn plan(opts: &Options, cpus: &[usize]) -> anyhow::Result<Plan> {
    if cpus.is_empty() {
        anyhow::bail!("--cpus: the CPU set is empty");
    }
    let measures = if opts.cases.is_empty() {
        Measure::ALL.to_vec()
    } else {
        first_occurrences(&opts.cases)
    };
    let placements = match (opts.placement.is_empty(), cpus.len()) {
        (true, 1) => vec![Placement::Same],
        (true, _) => vec![Placement::Same, Placement::Cross],
        (false, n) => {
            let p = first_occurrences(&opts.placement);
            if p.contains(&Placement::Cross) && n < 2 {
                anyhow::bail!(
                    "--placement cross needs two CPUs in the CPU set (have: {})",
                    cpuset::format(cpus)
                );
            }
            p
        }
    };
    Ok(Plan {
        measures,
        placements,
    })
}

fn case_id(m: Measure, p: Option<Placement>) -> String {
    let placement = p.map(|p| value_name(&p));
    ids::case(&value_name(&m), placement.as_deref())
}

/// The CPU of each thread: the measuring one first.
fn cpus_of(p: Placement, cpus: &[usize]) -> [usize; 2] {
    match p {
        Placement::Same => [cpus[0], cpus[0]],
        Placement::Cross => [cpus[0], cpus[1]],
    }
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Net;
    const SUMMARY: &'static str =
        "Loopback sockets: round trips, a connection, bandwidth, with counted switches";
    const ABOUT: &'static str = "Loopback sockets between two threads: 1-byte round trips over \
TCP (TCP_NODELAY), UDP, AF_UNIX stream and AF_UNIX datagram sockets; one TCP connection made, \
accepted and closed as programs do it (tcp.connect) and reset (tcp.connect.rst); and the \
bandwidth of 64 KiB writes over TCP, an AF_UNIX stream and a pipe \
to a thread that drains them (MB/s beside the time per 64 KiB); and LEBench's send and recv \
(1 and 96 000 bytes sent into an AF_UNIX stream socketpair and received from its other end by \
the same thread, no switch needed and none counted).

The measuring thread and one partner thread are pinned to the same CPU or to two (--placement); \
every address is 127.0.0.1 with a port the kernel picks, so a port in use does not matter. \
Each round trip carries the switches both threads made (getrusage), checked: 2 on one CPU, at \
least 2 on two. tcp.connect connects, reads to end of file and closes while a thread on the \
same CPU accepts and closes each connection at once: a FIN each way, the accepting side left in \
TIME_WAIT. tcp.connect.rst makes, accepts and closes the connection in the measuring thread \
alone, the client with SO_LINGER 0 (a reset, no TIME_WAIT). The kernel's TCP counters \
(/proc/net/snmp, /proc/net/tcp) over a batch of connections check one active open and one \
passive open each, and the resets and TIME_WAIT sockets each close leaves. Every byte a bandwidth case wrote is \
counted as the partner drains it. Without a loopback interface the TCP and UDP cases say so \
and the others still run.

On two CPUs a case mostly measures how fast the partner's idle CPU wakes up: the idle states \
both CPUs entered per operation are counted, the idle configuration is recorded with the \
result, and --idle-poll holds /dev/cpu_dma_latency at 0 so the CPUs poll instead of halting.\n\nTakes about 0.7 s in the suite (about 8.5 s on its own, at the standard sampling); --quick about 0.7 s on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = true;
    const SUITE_ARGS: &'static [&'static str] = &[
        "--suite-size",
        "--cases",
        "tcp.rtt,udp.rtt,unix.rtt,tcp.connect,tcp.bw,pipe.bw",
    ];
    const QUICK_SUITE_ARGS: &'static [&'static str] =
        &["--cases", "tcp.rtt,unix.rtt", "--placement", "same"];

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }
}

/// The suite's sampling: fewer and shorter samples, so every case fits its share of time.
fn suite_sampler(s: sampler::SamplerConfig) -> sampler::SamplerConfig {
    s.for_suite(15, Duration::from_millis(5), Duration::from_millis(60))
}

fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    let p = plan(opts, &ctx.cpus)?;
    let ctx = &ctx.with_sampler(if opts.suite_size {
        suite_sampler(ctx.sampler)
    } else {
        ctx.sampler
    });
    let mut out = ExperimentOutput::default();
    // Withdrawn on every way out of this function.
    let hold = crate::idle::hold(opts.idle_poll, &mut out);
    out.params
        .insert("idle".into(), crate::idle::config(hold.is_some()));
    // Said once per case it stops, in the unavailable list.
    let loopback = net::loopback_available().map_err(|e| e.to_string());
    let threaded = p.measures.iter().filter(|m| m.role().is_some()).count();
    ctx.progress.start(
        (threaded * p.placements.len() + (p.measures.len() - threaded)) as u64,
        NAME,
    );
    // The one-thread cases first: once a thread has existed, glibc stays in its
    // multi-threaded mode for good. The accepting thread's case comes after them.
    let mut unpaired: Vec<Measure> = p
        .measures
        .iter()
        .copied()
        .filter(|m| m.role().is_none())
        .collect();
    unpaired.sort_by_key(|&m| m == Measure::TcpConnect);
    for m in unpaired {
        ctx.check_cancel()?;
        ctx.progress.message(&case_id(m, None));
        match (&loopback, m.sendrecv_bytes()) {
            (_, Some(bytes)) => out
                .cases
                .push(sendrecv_case(m, bytes, ctx).context(case_id(m, None))?),
            (Err(why), None) => out.unavailable.push(unavailable(m, None, why)),
            (Ok(()), None) => out
                .cases
                .push(connect_case(m, ctx).context(case_id(m, None))?),
        }
        ctx.progress.inc(1);
    }
    for &m in p.measures.iter().filter(|m| m.role().is_some()) {
        for &pl in &p.placements {
            ctx.check_cancel()?;
            ctx.progress.message(&case_id(m, Some(pl)));
            match (&loopback, m.needs_loopback()) {
                (Err(why), true) => out.unavailable.push(unavailable(m, Some(pl), why)),
                _ => out
                    .cases
                    .push(pair_case(m, pl, ctx).with_context(|| case_id(m, Some(pl)))?),
            }
            ctx.progress.inc(1);
        }
    }
    ctx.progress.finish();
    Ok(out)
}

fn unavailable(m: Measure, p: Option<Placement>, why: &str) -> Unavailable {
    Unavailable {
        id: case_id(m, p),
        description: m.describe().into(),
        reason: why.into(),
    }
}

/// The kernel's TCP counters of this network namespace (`/proc/net/snmp`) and the TIME_WAIT
/// sockets on the listener's port (`/proc/net/tcp`).
#[derive(Debug, Clone, Copy, Default)]
struct TcpCounts {
    active_opens: f64,
    passive_opens: f64,
    out_rsts: f64,
    time_wait: f64,
    /// Every TIME_WAIT socket of the namespace (`/proc/net/sockstat`): what
    /// `net.ipv4.tcp_max_tw_buckets` bounds.
    time_wait_all: f64,
}

/// The value of `field` in the `prefix` lines of a `/proc/net/snmp`-like text (a header line
/// of names, then a line of values).
fn snmp_field(text: &str, prefix: &str, field: &str) -> Option<f64> {
    let mut lines = text.lines().filter(|l| l.starts_with(prefix));
    let names = lines.next()?;
    let values = lines.next()?;
    let i = names.split_whitespace().position(|n| n == field)?;
    values.split_whitespace().nth(i)?.parse().ok()
}

/// The sockets in TIME_WAIT (state `06`) whose local port is `port`, in a `/proc/net/tcp`
/// text. Counted by port, not from `/proc/net/sockstat`'s total: other programs' (or an
/// earlier run's) TIME_WAIT sockets expiring during the batch would take from a total.
fn time_wait_on_port(text: &str, port: u16) -> f64 {
    let mine = format!(":{port:04X}");
    text.lines()
        .skip(1)
        .filter(|l| {
            let mut f = l.split_whitespace().skip(1);
            let local = f.next().unwrap_or("");
            let state = f.nth(1).unwrap_or("");
            state == "06" && local.ends_with(&mine)
        })
        .count() as f64
}

/// `tw N` of the `TCP:` line of `/proc/net/sockstat`.
fn sockstat_tw(text: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with("TCP:"))?;
    let mut words = line.split_whitespace();
    while let Some(w) = words.next() {
        if w == "tw" {
            return words.next()?.parse().ok();
        }
    }
    None
}

fn tcp_counts(port: u16) -> Option<TcpCounts> {
    let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
    let tcp = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let sockstat = std::fs::read_to_string("/proc/net/sockstat").ok()?;
    Some(TcpCounts {
        active_opens: snmp_field(&snmp, "Tcp:", "ActiveOpens")?,
        passive_opens: snmp_field(&snmp, "Tcp:", "PassiveOpens")?,
        out_rsts: snmp_field(&snmp, "Tcp:", "OutRsts")?,
        time_wait: time_wait_on_port(&tcp, port),
        time_wait_all: sockstat_tw(&sockstat)?,
    })
}

/// Whether the kernel can keep one more TIME_WAIT socket per connection for `more`
/// connections (`net.ipv4.tcp_max_tw_buckets`; beyond it a closing socket skips TIME_WAIT).
fn time_wait_room(now: f64, more: u64) -> Option<bool> {
    let max: f64 = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_max_tw_buckets")
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(now + more as f64 <= max)
}

/// `net.tcp.connect` (a thread accepting and closing, FIN both ways) or `net.tcp.connect.rst`
/// (one thread, a reset), with the kernel's counts of what each connection was.
fn connect_case(m: Measure, ctx: &Context) -> anyhow::Result<Case> {
    let cpu = ctx.first_cpu();
    let _pin = AffinityRestore::pin(&[cpu])?;
    let acceptor = Acceptor::new()?;
    let one = || match m {
        Measure::TcpConnect => acceptor.connect_read_close(),
        _ => acceptor.connect_accept_close(),
    };
    let (measured, threads, before, after) = if m == Measure::TcpConnect {
        std::thread::scope(|scope| -> anyhow::Result<_> {
            let accepting = scope.spawn(|| -> anyhow::Result<u64> {
                let _pin = AffinityRestore::pin(&[cpu])?;
                Ok(acceptor.accept_and_close()?)
            });
            let measured = measure_fallible(ctx, one);
            let counted = measured.as_ref().ok().map(|_| -> std::io::Result<_> {
                let before = tcp_counts(acceptor.port());
                for _ in 0..VERIFY_CONNECTIONS {
                    one()?;
                }
                Ok((before, tcp_counts(acceptor.port())))
            });
            acceptor.stop();
            let accepted = accepting
                .join()
                .map_err(|_| anyhow::anyhow!("the accepting thread panicked"))?;
            let (before, after) = match counted {
                Some(c) => c?,
                None => (None, None),
            };
            accepted.context("the accepting thread")?;
            Ok((measured, None, before, after))
        })?
    } else {
        let (measured, threads) = sampler::counting_threads(|| measure_fallible(ctx, one));
        let counted = if measured.is_ok() {
            let before = tcp_counts(acceptor.port());
            for _ in 0..VERIFY_CONNECTIONS {
                one()?;
            }
            (before, tcp_counts(acceptor.port()))
        } else {
            (None, None)
        };
        (measured, threads, counted.0, counted.1)
    };
    let (samples, said) = measured?;
    ctx.check_cancel()?;
    let fin = m == Measure::TcpConnect;
    let mut case = Case::new(case_id(m, None), m.describe(), "connection", samples)
        .param("cpu", cpu as u64)
        .param("port", u64::from(acceptor.port()))
        .param(
            "close",
            if fin {
                "the accepting thread closes at once, the client after reading end of file: a \
                 FIN each way, the accepting side in TIME_WAIT"
            } else {
                "SO_LINGER 0 on the client: a reset, no TIME_WAIT"
            },
        );
    case.add_messages(said);
    if fin {
        case = case.param("accepting_thread_cpu", cpu as u64);
    } else {
        case.checks.extend(sampler::single_task_check(threads));
    }
    match (before, after) {
        (Some(b), Some(a)) => {
            let n = VERIFY_CONNECTIONS as f64;
            let detail = |what: &str| {
                format!(
                    "{what} in this network namespace over a batch of {VERIFY_CONNECTIONS} \
                     connections run after the samples, per connection (other processes' \
                     connections in the namespace would add to it; bound ±0.05)"
                )
            };
            let resets = if fin {
                "/proc/net/snmp Tcp OutRsts (none: both sides close with a FIN)"
            } else {
                "/proc/net/snmp Tcp OutRsts (the SO_LINGER 0 close)"
            };
            let mut counts = vec![
                (
                    "tcp_active_opens_per_connection",
                    1.0,
                    (a.active_opens - b.active_opens) / n,
                    "/proc/net/snmp Tcp ActiveOpens",
                ),
                (
                    "tcp_passive_opens_per_connection",
                    1.0,
                    (a.passive_opens - b.passive_opens) / n,
                    "/proc/net/snmp Tcp PassiveOpens",
                ),
                (
                    "tcp_resets_per_connection",
                    if fin { 0.0 } else { 1.0 },
                    (a.out_rsts - b.out_rsts) / n,
                    resets,
                ),
            ];
            let tw = (a.time_wait - b.time_wait) / n;
            match (fin, time_wait_room(b.time_wait_all, VERIFY_CONNECTIONS)) {
                (false, _) => counts.push((
                    "time_wait_left_per_connection",
                    0.0,
                    tw,
                    "/proc/net/tcp sockets in TIME_WAIT on the listener's port",
                )),
                (true, Some(true)) => counts.push((
                    "time_wait_left_per_connection",
                    1.0,
                    tw,
                    "/proc/net/tcp sockets in TIME_WAIT on the listener's port (the accepting \
                     side's active close)",
                )),
                (true, _) => {
                    case.counters
                        .insert("time_wait_left_per_connection".into(), tw);
                    case.notes.push(
                        "TIME_WAIT not checked: net.ipv4.tcp_max_tw_buckets unreadable or \
                         nearly full, so a closing socket may skip TIME_WAIT"
                            .into(),
                    );
                }
            }
            for (name, expected, counted, what) in counts {
                case.counters.insert(name.into(), counted);
                case.checks
                    .push(Check::near(name, expected, counted, 0.05, &detail(what)));
            }
        }
        _ => case.notes.push(
            "/proc/net/snmp or /proc/net/tcp unreadable: the connections were not counted".into(),
        ),
    }
    Ok(case)
}

/// LEBench's send and recv: `bytes` sent into one end of an AF_UNIX stream socketpair and
/// received from the other by the same thread, so no switch is needed and none may happen.
fn sendrecv_case(m: Measure, bytes: usize, ctx: &Context) -> anyhow::Result<Case> {
    use std::io::{Read, Write};
    let cpu = ctx.first_cpu();
    let _pin = AffinityRestore::pin(&[cpu])?;
    // As files: plain write(2) and read(2), as the C reference calls them (a UnixStream reads
    // with recv(2), a path of its own).
    let (tx, rx) = std::os::unix::net::UnixStream::pair()?;
    let mut tx = std::fs::File::from(std::os::fd::OwnedFd::from(tx));
    let mut rx = std::fs::File::from(std::os::fd::OwnedFd::from(rx));
    let data = vec![0x5au8; bytes];
    let mut back = vec![0u8; bytes];
    let (mut ops, mut received) = (0u64, 0u64);
    let start = oscost_sys::thread_switches();
    let (measured, threads) = sampler::counting_threads(|| {
        measure_fallible(ctx, || -> std::io::Result<()> {
            tx.write_all(&data)?;
            rx.read_exact(&mut back)?;
            ops += 1;
            received += bytes as u64;
            Ok(())
        })
    });
    let sw = oscost_sys::thread_switches().since(start);
    let (samples, said) = measured?;
    let mut case = Case::new(
        case_id(m, None),
        m.describe(),
        &format!("send + recv of {bytes} B"),
        samples,
    )
    .param("cpu", cpu as u64)
    .param("bytes", bytes as u64);
    case.add_messages(said);
    case.checks.extend(sampler::single_task_check(threads));
    let per = |v: u64| v as f64 / ops.max(1) as f64;
    case.counters
        .insert("voluntary_per_op".into(), per(sw.voluntary));
    case.counters
        .insert("bytes_received".into(), received as f64);
    case.checks.push(Check::near(
        "bytes_received_per_byte_sent",
        1.0,
        received as f64 / (ops * bytes as u64).max(1) as f64,
        0.0,
        "bytes read back from the other end over the bytes sent (calibration and warm-up \
         included): every send was received whole",
    ));
    case.checks.push(Check::near(
        "voluntary_switches_per_op",
        0.0,
        per(sw.voluntary),
        0.01,
        &format!(
            "getrusage nvcsw of the thread over the measured span ({} in {ops} operations): the \
             buffer holds what was sent, so neither call blocks",
            sw.voluntary
        ),
    ));
    Ok(case)
}

/// A partner thread on the far end of a new pair, pinned, ready for the first byte.
struct Partnered {
    peer: Arc<Peer>,
    team: Team,
    _pin: AffinityRestore,
}

fn partnered(kind: Kind, role: Role, cpus: [usize; 2], ctx: &Context) -> anyhow::Result<Partnered> {
    let pin = AffinityRestore::pin(&[cpus[0]])?;
    let peer = Arc::new(Peer::new(kind, role)?);
    let halt = Arc::clone(&peer);
    let mut team = Team::new(TaskKind::Threads, 2, 1, move || halt.halt());
    team.spawn(Some(&CpuMask::new(&[cpus[1]])?), &peer, 1)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !peer.ready() {
        team.check()?;
        ctx.check_cancel()?;
        anyhow::ensure!(
            Instant::now() < deadline,
            "the partner thread did not start"
        );
        std::thread::sleep(Duration::from_micros(100));
    }
    Ok(Partnered {
        peer,
        team,
        _pin: pin,
    })
}

fn pair_case(m: Measure, pl: Placement, ctx: &Context) -> anyhow::Result<Case> {
    let role = m.role().expect("a two-thread case");
    let cpus = cpus_of(pl, &ctx.cpus);
    let Partnered { peer, team, _pin } = partnered(m.kind(), role, cpus, ctx)?;
    // Page-aligned, as the partner's read buffer is: a copy's speed depends on its alignment.
    let mut data = oscost_sys::buf::PageBuffer::new(CHUNK).context("mapping the write buffer")?;
    data.as_mut_slice().fill(0x5a);
    let data = &data.as_slice()[..CHUNK];
    let mut ops = 0u64;
    let case_cpus = first_occurrences(&cpus);
    let idle_before = crate::idle::usage(&case_cpus);
    let start = oscost_sys::thread_switches();
    let measured = match role {
        Role::Echo => measure_fallible(ctx, || {
            peer.round_trip()?;
            ops += 1;
            team.check()
        }),
        Role::Sink => measure_fallible(ctx, || {
            peer.send(data)?;
            ops += 1;
            team.check()
        }),
    };
    let own = oscost_sys::thread_switches().since(start);
    let idle_after = crate::idle::usage(&case_cpus);
    let (samples, said) = measured?;
    if role == Role::Sink {
        // Every byte written must arrive before the partner is stopped.
        let want = ops * CHUNK as u64;
        let deadline = Instant::now() + Duration::from_secs(5);
        while peer.partner_bytes() < want && Instant::now() < deadline {
            team.check()?;
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    let drained = peer.partner_bytes();
    team.finish()?;
    let sw = Switches {
        voluntary: own.voluntary + peer.partner_switches().voluntary,
        involuntary: own.involuntary + peer.partner_switches().involuntary,
    };
    let unit = if role == Role::Echo {
        "round trip"
    } else {
        "64 KiB"
    };
    let median = oscost_stats::median(&samples.per_op_ns);
    let mut case = Case::new(
        case_id(m, Some(pl)),
        format!(
            "{}, {}",
            m.describe(),
            match pl {
                Placement::Same => "both threads pinned to one CPU",
                Placement::Cross => "the threads pinned to two CPUs",
            }
        ),
        unit,
        samples,
    )
    .param("placement", value_name(&pl))
    .param("cpus", json!(cpus));
    case.add_messages(said);
    let per = |v: u64| v as f64 / ops.max(1) as f64;
    let what = if role == Role::Echo {
        "round_trip"
    } else {
        "64k"
    };
    case.counters
        .insert(format!("switches_per_{what}"), per(sw.total()));
    case.counters
        .insert(format!("voluntary_per_{what}"), per(sw.voluntary));
    case.counters
        .insert(format!("involuntary_per_{what}"), per(sw.involuntary));
    // Entries into each idle state of the case's CPUs over the same span: on two CPUs, how
    // often a wake-up had to bring a halted CPU back.
    let entries = crate::idle::delta(&idle_before, &idle_after);
    for (state, n) in &entries {
        case.counters
            .insert(format!("idle_{state}_per_{what}"), per(*n));
    }
    if pl == Placement::Cross {
        case.notes
            .extend(cross_notes(m, &entries, per, per(sw.total()), unit));
    }
    let detail = format!(
        "getrusage nvcsw + nivcsw of both threads over the measured span ({} voluntary + {} \
         involuntary) / {ops} operations (calibration and warm-up included)",
        sw.voluntary, sw.involuntary
    );
    match role {
        Role::Echo => {
            case.counters
                .insert("round_trips_counted".into(), ops as f64);
            case.checks
                .push(switch_check(m, pl, per(sw.total()), &detail));
        }
        Role::Sink => {
            let written = ops * CHUNK as u64;
            case.counters.insert("bytes_written".into(), written as f64);
            case.counters.insert("bytes_drained".into(), drained as f64);
            if median > 0.0 {
                case.counters
                    .insert("mb_per_s".into(), CHUNK as f64 / median * 1e3);
            }
            case.checks.push(Check::near(
                "bytes_drained_per_byte_written",
                1.0,
                drained as f64 / written.max(1) as f64,
                0.0,
                "bytes the partner read, counted as they arrived, over the bytes written \
                 (calibration and warm-up included): every byte must have crossed",
            ));
        }
    }
    Ok(case)
}

/// What moves a cross-CPU figure between runs, where it happened: halted idle CPUs woken,
/// and an AF_UNIX stream's reader woken without its answer.
fn cross_notes(
    m: Measure,
    entries: &[(String, u64)],
    per: impl Fn(u64) -> f64,
    switches: f64,
    unit: &str,
) -> Vec<Message> {
    let mut notes = Vec::new();
    let halting: Vec<&(String, u64)> = entries
        .iter()
        .filter(|(state, n)| state != "poll" && *n > 0)
        .collect();
    let halts = per(halting.iter().map(|(_, n)| n).sum());
    if halts >= 0.5 {
        let names: Vec<&str> = halting.iter().map(|(s, _)| s.as_str()).collect();
        notes.push(Message::new(
            MessageKind::HaltedCpuWoken,
            format!(
                " {halts:.2} times per {unit} ({}): the figure is mostly how fast a halted CPU \
                 wakes, which moves between runs; --idle-poll keeps the CPUs polling",
                names.join(", ")
            ),
        ));
    }
    if m == Measure::UnixRtt && switches > 2.2 {
        notes.push(Message::new(
            MessageKind::WokenWithoutAnswer,
            format!(
                ": {switches:.2} switches per round trip; a thread waiting in read was woken \
                 before its answer came and slept again (an AF_UNIX stream wakes a socket's \
                 sleepers when the peer frees the bytes it sent); how often moves between \
                 runs, and the figure with it"
            ),
        ));
    }
    notes
}

/// Same CPU: exactly 2 per round trip (each thread blocks once), but for an AF_UNIX stream,
/// where wake-ups preempt more often. Two CPUs: at least 2; fewer means an answer was already
/// there when its reader asked, so no switch happened.
fn switch_check(m: Measure, p: Placement, counted: f64, detail: &str) -> Check {
    const NAME: &str = "switches_per_round_trip";
    match p {
        Placement::Same if m == Measure::UnixRtt => Check::at_least(
            NAME,
            2.0,
            counted,
            0.05,
            &format!(
                "{detail}; same CPU over one AF_UNIX stream socketpair used both ways: each \
                 thread blocks once per round trip (2 voluntary switches), and wake-ups preempt \
                 the waker in about half of them (2.4 to 2.5 counted in all on a 2-vCPU virtual \
                 machine, the extra ones involuntary), so at least 2 is required"
            ),
        ),
        Placement::Same => Check::near(
            NAME,
            2.0,
            counted,
            0.1,
            &format!("{detail}; same CPU: 2 switches per round trip (bound ±0.1)"),
        ),
        // A reader finds its answer already there now and then: over loopback the writer's own
        // system call carries the segment up the stack and wakes the reader, whose reply can
        // come before the writer reaches its read (1.86 a round trip was counted on an idle
        // machine). Every round trip still crosses the CPUs; a mechanism broken so that
        // readers rarely sleep (both on one CPU, a poll loop) falls far below the bound.
        Placement::Cross => Check::at_least(
            NAME,
            2.0,
            counted,
            0.25,
            &format!(
                "{detail}; two CPUs: 2 when every reader sleeps for its answer, fewer when an \
                 answer was already there when its reader asked (no switch); at least 1.5 \
                 required, most round trips waking both sides"
            ),
        ),
    }
}

#[cfg(test)]
mod tests;

//! `cgroup`: what a cgroup costs a task. Starting a child inside a new cgroup, by
//! `clone3(CLONE_INTO_CGROUP)` or by the child writing itself into `cgroup.procs` after a fork,
//! against a plain fork; and a pipe round trip between two processes on one CPU in one cgroup
//! with CPU control, against the same across two sibling cgroups (the switch walks both groups'
//! scheduling entities).
//!
//! Every cgroup directory is recorded in the settings directory before it is made and removed
//! on every way out; one left by a killed run is removed by the next run's sweep, which says so.

use crate::context::Context;
use crate::engine;
use crate::sampler::{self, measure_interleaved, Job};
use crate::sysctl::{self, CgroupRecord, Holder};
use anyhow::Context as _;
use oscost_model::case::{Case, Check, DerivedSpec, ExperimentOutput, Unavailable};
use oscost_model::ids::cgroup as ids;
use oscost_sys::cgroup::{move_self, run_child, Into, Outcome, Partner};
use std::cell::Cell;
use std::fs;
use std::hint::black_box;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Subcommand name and id prefix.
pub const NAME: &str = ids::NAME;

/// Options of `oscost cgroup`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// The suite's shorter sampling (`oscost run` passes it)
    #[arg(long, hide = true)]
    pub suite_size: bool,
}

/// A mounted cgroup hierarchy and this process's cgroup in it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hierarchy {
    /// Cgroup v2 (the unified hierarchy), else v1.
    v2: bool,
    /// The directory of this process's cgroup.
    own: PathBuf,
}

impl Hierarchy {
    fn version(&self) -> &'static str {
        if self.v2 {
            "v2"
        } else {
            "v1"
        }
    }
}

/// The v2 hierarchy, and the hierarchy whose cgroups have the CPU controller (v2 when this
/// process's cgroup hands `cpu` to its children, else v1's `cpu`), from the mount table and
/// `/proc/self/cgroup`.
fn hierarchies(mounts: &str, own: &str) -> (Option<Hierarchy>, Option<Hierarchy>) {
    let own_path = |pred: &dyn Fn(&str) -> bool| -> Option<String> {
        own.lines().find_map(|l| {
            let mut p = l.splitn(3, ':');
            let (_, ctl, path) = (p.next()?, p.next()?, p.next()?);
            pred(ctl).then(|| path.to_owned())
        })
    };
    let join = |mnt: &str, rel: &str| Path::new(mnt).join(rel.trim_start_matches('/'));
    let mut v2 = None;
    let mut cpu = None;
    for l in mounts.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (Some(mnt), Some(fstype), Some(opts)) = (f.get(1), f.get(2), f.get(3)) else {
            continue;
        };
        if *fstype == "cgroup2" && v2.is_none() {
            if let Some(rel) = own_path(&|c| c.is_empty()) {
                v2 = Some(Hierarchy {
                    v2: true,
                    own: join(mnt, &rel),
                });
            }
        } else if *fstype == "cgroup" && cpu.is_none() && opts.split(',').any(|o| o == "cpu") {
            if let Some(rel) = own_path(&|c| c.split(',').any(|c| c == "cpu")) {
                cpu = Some(Hierarchy {
                    v2: false,
                    own: join(mnt, &rel),
                });
            }
        }
    }
    if let Some(h) = &v2 {
        let controls = fs::read_to_string(h.own.join("cgroup.subtree_control")).unwrap_or_default();
        if controls.split_whitespace().any(|c| c == "cpu") {
            cpu = Some(h.clone());
        }
    }
    (v2, cpu)
}

/// A cgroup directory this run made, removed when dropped (then its record).
struct Made {
    path: PathBuf,
    _record: Option<CgroupRecord>,
}

impl Made {
    /// Records, then makes `<parent>/oscost-<pid>-<tag>`.
    fn new(parent: &Path, tag: &str) -> std::io::Result<Made> {
        let path = parent.join(format!("oscost-{}-{tag}", std::process::id()));
        // Not being able to record it only loses the clean-up after a kill.
        let record = Holder::this_process()
            .and_then(|me| sysctl::record_cgroup(&sysctl::settings_dir(), &path, me).ok());
        fs::create_dir(&path)?;
        Ok(Made {
            path,
            _record: record,
        })
    }

    fn name(&self) -> Vec<u8> {
        self.path
            .file_name()
            .map(|n| n.as_encoded_bytes().to_vec())
            .unwrap_or_default()
    }

    fn procs(&self) -> std::io::Result<fs::File> {
        fs::OpenOptions::new()
            .write(true)
            .open(self.path.join("cgroup.procs"))
    }
}

impl Drop for Made {
    fn drop(&mut self) {
        // Failing leaves the record: the next run's sweep tries again.
        if sysctl::remove_cgroup(&self.path).is_err() {
            std::mem::forget(self._record.take());
        }
    }
}

/// This process moved into a cgroup; moved back to where it was when dropped.
struct Moved {
    back: fs::File,
}

impl Drop for Moved {
    fn drop(&mut self) {
        let _ = move_self(self.back.as_fd());
    }
}

fn refused_mkdir(h: &Hierarchy, e: &std::io::Error) -> String {
    format!(
        "making a cgroup in {} (cgroup {}) refused: {}; run as root, or in a cgroup \
         delegated to this user (systemd-run --user --scope -p Delegate=yes)",
        h.own.display(),
        h.version(),
        crate::engine::checks::without_errno(&e.to_string())
    )
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Cgroup;
    const SUMMARY: &'static str =
        "What starting a task in a cgroup costs, and a switch across two cgroups";
    const ABOUT: &'static str = "What a cgroup costs a task. Creation: a child started inside \
a new cgroup by clone3(CLONE_INTO_CGROUP) (cgroup.clone3, cgroup v2 only) or forked and writing \
itself into the cgroup's cgroup.procs (cgroup.fork-procs), against a plain fork (cgroup.fork); \
each child ends at once and is waited for. Switching: a pipe round trip between this process \
and a partner process on the same CPU, both in one cgroup with the CPU controller \
(cgroup.pipe.same), against the partner in a sibling cgroup (cgroup.pipe.cross), switches \
counted. The derived figures give each over its plain counterpart.

cgroup v2 is used where mounted, v1's cpu hierarchy for the CPU controller where v2 does not \
have it; which is said in the run's parameters and the case descriptions. Every cgroup made \
is recorded before it is made and removed on every way out; one a killed run left is removed by \
the next oscost run, which says so. A checking child before and after the sampling reads its \
own /proc/self/cgroup; the partner's and this process's are read too. Without permission to \
make cgroups (a normal user with no delegated cgroup) those cases are listed as not \
measured, with the reason, and cgroup.fork is still measured.\n\nTakes about 6 s (0.3 s as \
`oscost run cgroup`); --quick about 0.6 s on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = true;
    const SUITE_ARGS: &'static [&'static str] = &["--suite-size"];

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }
}

/// A creation case's counts.
struct Creation<'a> {
    id: &'static str,
    description: String,
    into: Into<'a>,
    check: Option<Vec<u8>>,
    made: Cell<u64>,
    failed: Cell<u64>,
    checks: Vec<Outcome>,
}

fn unavailable(out: &mut ExperimentOutput, id: &str, description: &str, reason: &str) {
    out.unavailable.push(Unavailable {
        id: id.to_owned(),
        description: description.to_owned(),
        reason: reason.to_owned(),
    });
}

fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    if ctx.clock.scripted().is_some() {
        anyhow::bail!("{NAME} needs the real clock: it times real children");
    }
    let cpu = ctx.pin_first_cpu()?;
    let sampler_cfg = if opts.suite_size {
        ctx.sampler
            .for_suite(21, Duration::from_millis(10), Duration::from_millis(150))
    } else {
        ctx.sampler
    };
    let ctx = &ctx.with_sampler(sampler_cfg);
    let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let own = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let (v2, cpu_h) = hierarchies(&mounts, &own);
    let mut out = ExperimentOutput::default();
    out.params.insert(
        "create_hierarchy".into(),
        v2.as_ref()
            .or(cpu_h.as_ref())
            .map_or("none".into(), |h| h.version().into()),
    );
    out.params.insert(
        "cpu_hierarchy".into(),
        cpu_h.as_ref().map_or("none".into(), |h| h.version().into()),
    );

    // Creation: in the v2 hierarchy where there is one, else in v1's cpu hierarchy.
    let create_h = v2.as_ref().or(cpu_h.as_ref());
    let d_procs = |v: &str| {
        format!("a forked child that writes itself into a new cgroup's cgroup.procs (cgroup {v}), ends and is waited for")
    };
    let d_clone3 = "a child started inside a new cgroup by clone3(CLONE_INTO_CGROUP) (cgroup v2), \
                    ends and is waited for";
    let made_new = match create_h {
        None => {
            let why = "no cgroup hierarchy is mounted (neither cgroup2 nor v1's cpu)";
            unavailable(&mut out, ids::FORK_PROCS, &d_procs("v1 or v2"), why);
            unavailable(&mut out, ids::CLONE3, d_clone3, why);
            None
        }
        Some(h) => match Made::new(&h.own, "new") {
            Ok(m) => Some((m, h.clone())),
            Err(e) => {
                let why = refused_mkdir(h, &e);
                unavailable(&mut out, ids::FORK_PROCS, &d_procs(h.version()), &why);
                unavailable(&mut out, ids::CLONE3, d_clone3, &why);
                None
            }
        },
    };
    let new_files = match &made_new {
        Some((m, _)) => Some((
            m.procs().context("opening cgroup.procs")?,
            fs::File::open(&m.path).context("opening the new cgroup")?,
        )),
        None => None,
    };
    let mut creations = vec![Creation {
        id: ids::FORK,
        description: "a plain fork-like child in this process's cgroup, ending at once, waited \
                      for"
        .into(),
        into: Into::Stays,
        check: None,
        made: Cell::new(0),
        failed: Cell::new(0),
        checks: Vec::new(),
    }];
    if let (Some((m, h)), Some((procs, dir))) = (&made_new, &new_files) {
        creations.push(Creation {
            id: ids::FORK_PROCS,
            description: d_procs(h.version()),
            into: Into::WritesProcs(procs.as_fd()),
            check: Some(m.name()),
            made: Cell::new(0),
            failed: Cell::new(0),
            checks: Vec::new(),
        });
        if h.v2 {
            creations.push(Creation {
                id: ids::CLONE3,
                description: d_clone3.into(),
                into: Into::Clone3(dir.as_fd()),
                check: Some(m.name()),
                made: Cell::new(0),
                failed: Cell::new(0),
                checks: Vec::new(),
            });
        } else {
            unavailable(
                &mut out,
                ids::CLONE3,
                d_clone3,
                "no cgroup v2 hierarchy is mounted, and CLONE_INTO_CGROUP takes a v2 cgroup only",
            );
        }
    }
    let mut kept = Vec::new();
    for mut c in creations {
        let first = run_child(c.into, c.check.as_deref()).context("making a child")?;
        if let Outcome::Refused(errno) = first {
            let what = if c.id == ids::CLONE3 {
                "clone3(CLONE_INTO_CGROUP)"
            } else {
                "writing cgroup.procs"
            };
            let reason = format!(
                "{what} refused: {}{}",
                std::io::Error::from_raw_os_error(errno),
                if errno == libc::ENOSYS || errno == libc::E2BIG || errno == libc::EINVAL {
                    " (clone3 with CLONE_INTO_CGROUP needs Linux 5.7 or later)"
                } else {
                    ""
                }
            );
            unavailable(&mut out, c.id, &c.description, &reason);
            continue;
        }
        c.checks.push(first);
        kept.push(c);
    }
    let creations = kept;

    // The pipe cases: two sibling cgroups with the CPU controller.
    let pair = match &cpu_h {
        None => {
            let why = "no cgroup hierarchy has the CPU controller (v1's cpu is not mounted, and \
                       this process's v2 cgroup does not hand cpu to its children)";
            unavailable(&mut out, ids::PIPE_SAME, &d("v1 or v2", false), why);
            unavailable(&mut out, ids::PIPE_CROSS, &d("v1 or v2", true), why);
            None
        }
        Some(h) => match Made::new(&h.own, "a").and_then(|a| Ok((a, Made::new(&h.own, "b")?))) {
            Ok(pair) => Some((pair, h.clone())),
            Err(e) => {
                let why = refused_mkdir(h, &e);
                unavailable(&mut out, ids::PIPE_SAME, &d(h.version(), false), &why);
                unavailable(&mut out, ids::PIPE_CROSS, &d(h.version(), true), &why);
                None
            }
        },
    };

    let total = creations.len() + if pair.is_some() { 2 } else { 0 };
    ctx.progress
        .start((total * (ctx.sampler.samples + 1)) as u64, NAME);
    let jobs: Vec<Job> = creations
        .iter()
        .map(|c| {
            Job::new(ctx, move || -> std::io::Result<()> {
                let o = run_child(c.into, None)?;
                c.made.set(c.made.get() + 1);
                if o != Outcome::Done {
                    c.failed.set(c.failed.get() + 1);
                }
                Ok(())
            })
        })
        .collect();
    let (results, threads) =
        sampler::counting_threads(|| measure_interleaved(ctx, jobs, &|| ctx.progress.inc(1)));
    let results = results?;
    for (mut c, (samples, said)) in creations.into_iter().zip(results) {
        if c.check.is_some() {
            c.checks
                .push(run_child(c.into, c.check.as_deref()).context("making a child")?);
        }
        let mut case =
            Case::new(c.id, c.description.clone(), "child", samples).param("cpu", cpu as u64);
        if let Some((_, h)) = &made_new {
            if c.id != ids::FORK {
                case = case.param("cgroup_version", h.version());
            }
        }
        case.add_messages(said);
        let (made, failed) = (c.made.get(), c.failed.get());
        case.checks.push(Check::near(
            "failed_children",
            0.0,
            failed as f64,
            0.0,
            &format!("{failed} of the {made} timed children did not get in and end cleanly"),
        ));
        if c.check.is_some() {
            let there = c.checks.iter().filter(|o| **o == Outcome::Done).count();
            case.checks.push(Check::near(
                "in_cgroup",
                c.checks.len() as f64,
                there as f64,
                0.0,
                &format!(
                    "{there} of {} checking children (before and after the sampling) found the \
                     new cgroup in their /proc/self/cgroup",
                    c.checks.len()
                ),
            ));
        }
        if let Some(k) = sampler::single_task_check(threads) {
            case.checks.push(k);
        }
        out.cases.push(case);
    }
    // The new cgroup goes now: the pipe cases do not need it.
    drop(new_files);
    drop(made_new);

    if let Some(((a, b), h)) = &pair {
        pipe_cases(ctx, &mut out, a, b, h, cpu)?;
    }
    drop(pair);
    ctx.progress.finish();
    out.derived = derived(&out.cases);
    Ok(out)
}

/// One pipe case's partner and counts.
struct Pipe {
    id: &'static str,
    description: String,
    partner: Partner,
    trips: Cell<u64>,
    /// This process's switches, voluntary and involuntary.
    switches: Cell<u64>,
    partner_there: bool,
}

fn pipe_cases(
    ctx: &Context,
    out: &mut ExperimentOutput,
    a: &Made,
    b: &Made,
    h: &Hierarchy,
    cpu: usize,
) -> anyhow::Result<()> {
    let a_procs = a.procs().context("opening cgroup.procs")?;
    let b_procs = b.procs().context("opening cgroup.procs")?;
    let back = fs::OpenOptions::new()
        .write(true)
        .open(h.own.join("cgroup.procs"))
        .context("opening this process's cgroup.procs")?;
    let start = |procs: &fs::File| -> anyhow::Result<Result<Partner, String>> {
        Ok(Partner::start(procs.as_fd())
            .context("starting the pipe partner")?
            .map_err(|errno| {
                format!(
                    "the partner could not join its cgroup: {}",
                    std::io::Error::from_raw_os_error(errno)
                )
            }))
    };
    // Both partners first, from this process's own cgroup; then this process joins a.
    let partners = (start(&a_procs)?, start(&b_procs)?);
    let (pa, pb) = match partners {
        (Ok(pa), Ok(pb)) => (pa, pb),
        (Err(why), _) | (_, Err(why)) => {
            unavailable(out, ids::PIPE_SAME, &d(h.version(), false), &why);
            unavailable(out, ids::PIPE_CROSS, &d(h.version(), true), &why);
            return Ok(());
        }
    };
    let moved = match move_self(a_procs.as_fd()) {
        Ok(()) => Moved { back },
        Err(e) => {
            let why = format!("this process could not join the cgroup: {e}");
            unavailable(out, ids::PIPE_SAME, &d(h.version(), false), &why);
            unavailable(out, ids::PIPE_CROSS, &d(h.version(), true), &why);
            return Ok(());
        }
    };
    let in_proc = |pid: &str, m: &Made| {
        let name = String::from_utf8_lossy(&m.name()).into_owned();
        fs::read_to_string(format!("/proc/{pid}/cgroup"))
            .unwrap_or_default()
            .lines()
            .any(|l| l.ends_with(&format!("/{name}")))
    };
    let self_there = in_proc("self", a);
    let pipes = vec![
        Pipe {
            id: ids::PIPE_SAME,
            description: d(h.version(), false),
            partner_there: in_proc(&pa.pid().to_string(), a),
            partner: pa,
            trips: Cell::new(0),
            switches: Cell::new(0),
        },
        Pipe {
            id: ids::PIPE_CROSS,
            description: d(h.version(), true),
            partner_there: in_proc(&pb.pid().to_string(), b),
            partner: pb,
            trips: Cell::new(0),
            switches: Cell::new(0),
        },
    ];
    let clock = ctx.clock;
    let jobs: Vec<Job> = pipes
        .iter()
        .map(|p| {
            Job::from_batches(
                move |n| {
                    let u0 = oscost_sys::spawn::thread_usage();
                    let t0 = clock.now();
                    for _ in 0..n {
                        p.partner.round_trip()?;
                    }
                    let t = clock.now().wrapping_sub(t0);
                    let u = oscost_sys::spawn::thread_usage().since(u0);
                    p.trips.set(p.trips.get() + n);
                    p.switches
                        .set(p.switches.get() + u.voluntary + u.involuntary);
                    Ok(t)
                },
                move |n| {
                    let t0 = clock.now();
                    for i in 0..n {
                        black_box(i);
                    }
                    Ok(clock.now().wrapping_sub(t0))
                },
            )
        })
        .collect();
    let (results, threads) =
        sampler::counting_threads(|| measure_interleaved(ctx, jobs, &|| ctx.progress.inc(1)));
    drop(moved);
    let results = results?;
    for (p, (samples, said)) in pipes.into_iter().zip(results) {
        let mut case = Case::new(p.id, p.description.clone(), "round trip", samples)
            .param("cpu", cpu as u64)
            .param("cgroup_version", h.version());
        case.add_messages(said);
        let trips = p.trips.get().max(1);
        let sw = p.switches.get() as f64 / trips as f64;
        case.counters.insert("switches_per_round_trip".into(), sw);
        case.checks.push(Check::at_least(
            "switches_per_round_trip",
            1.0,
            sw,
            0.1,
            &format!(
                "getrusage(RUSAGE_THREAD) around each batch: {} switches (blocked or preempted \
                 by the woken partner) in {trips} round trips; with its partner on the same CPU \
                 this process must give the CPU up once for each answer",
                p.switches.get()
            ),
        ));
        let both = self_there && p.partner_there;
        case.checks.push(Check::near(
            "in_cgroups",
            1.0,
            f64::from(u8::from(both)),
            0.0,
            &format!(
                "/proc/self/cgroup and the partner's /proc/PID/cgroup named {} and {}",
                a.path.display(),
                if p.id == ids::PIPE_SAME {
                    &a.path
                } else {
                    &b.path
                }
                .display()
            ),
        ));
        // This process and the partner: the round trip's two tasks, nothing else of oscost's.
        if let Some(k) = sampler::single_task_check(threads) {
            case.checks.push(k);
        }
        out.cases.push(case);
        drop(p.partner);
    }
    Ok(())
}

/// A pipe case's description, in cgroup version `v`.
fn d(v: &str, cross: bool) -> String {
    if cross {
        format!(
            "a pipe round trip between this process and a partner on the same CPU, in two \
             sibling cgroups with the CPU controller (cgroup {v})"
        )
    } else {
        format!(
            "a pipe round trip between this process and a partner on the same CPU, both in \
             one cgroup with the CPU controller (cgroup {v})"
        )
    }
}

/// Each creation over the plain fork, the round trip across cgroups over the one within.
fn derived(cases: &[Case]) -> Vec<DerivedSpec> {
    let find = |id: &str| cases.iter().find(|c| c.id == id);
    let mut out = Vec::new();
    for (case, base) in [
        (ids::FORK_PROCS, ids::FORK),
        (ids::CLONE3, ids::FORK),
        (ids::PIPE_CROSS, ids::PIPE_SAME),
    ] {
        let (Some(c), Some(b), Some(id)) = (find(case), find(base), ids::derived(case)) else {
            continue;
        };
        let f: Vec<String> = [c, b]
            .into_iter()
            .filter_map(|x| engine::failed_checks(x).map(|f| format!("{}: {f}", x.id)))
            .collect();
        out.push(DerivedSpec {
            id,
            description: format!("{}, less {}", c.description, b.id),
            terms: vec![(c.id.clone(), 1.0), (b.id.clone(), -1.0)],
            flagged: (!f.is_empty()).then(|| f.join("; ")),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::testing;
    use oscost_model::case::SINGLE_THREAD_CHECK;

    #[test]
    fn hierarchies_are_read_from_the_mount_table() {
        let mounts = "tmpfs /sys/fs/cgroup tmpfs rw 0 0\n\
                      cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n\
                      cgroup /sys/fs/cgroup/cpuacct cgroup rw,relatime,cpuacct 0 0\n\
                      cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
        let own = "4:memory:/x\n2:cpuacct:/\n1:cpu:/a/b\n0::/u\n";
        let (v2, cpu) = hierarchies(mounts, own);
        assert_eq!(
            v2,
            Some(Hierarchy {
                v2: true,
                own: "/sys/fs/cgroup/unified/u".into()
            })
        );
        assert_eq!(
            cpu,
            Some(Hierarchy {
                v2: false,
                own: "/sys/fs/cgroup/cpu/a/b".into()
            })
        );
        assert_eq!(hierarchies("", own), (None, None));
        // cpuacct alone is not the cpu controller.
        let (_, cpu) = hierarchies("cgroup /c cgroup rw,cpuacct 0 0\n", "2:cpuacct:/\n");
        assert_eq!(cpu, None);
    }

    #[test]
    fn a_tiny_run_measures_or_says_why_and_leaves_no_cgroup() {
        testing::with_tiny_ctx(|ctx| {
            let out = run(&Options { suite_size: false }, ctx).unwrap();
            let mut all: Vec<&str> = out.cases.iter().map(|c| c.id.as_str()).collect();
            all.extend(out.unavailable.iter().map(|u| u.id.as_str()));
            all.sort_unstable();
            let mut want = ids::CASES.to_vec();
            want.sort_unstable();
            assert_eq!(all, want);
            assert_eq!(out.cases[0].id, ids::FORK);
            for c in &out.cases {
                assert!(c.samples.per_op_ns.iter().all(|v| *v > 0.0), "{}", c.id);
                for k in c.checks.iter().filter(|k| k.name != SINGLE_THREAD_CHECK) {
                    assert!(k.passed, "{}: {k:?}", c.id);
                }
            }
            for u in &out.unavailable {
                assert!(!u.reason.is_empty());
            }
            let pid = std::process::id();
            let left = std::process::Command::new("find")
                .args(["/sys/fs/cgroup", "-maxdepth", "3", "-name"])
                .arg(format!("oscost-{pid}-*"))
                .output()
                .unwrap();
            assert!(
                left.stdout.is_empty(),
                "{}",
                String::from_utf8_lossy(&left.stdout)
            );
        });
    }
}

//! `ns`: what each kind of namespace costs to make and tear down, as a container runtime makes
//! them: a fresh child calls `unshare` with one kind and ends, the parent waits; against the
//! same child with no `unshare`. A network namespace also with its loopback brought up, and a
//! child cloned straight into a runtime's set of namespaces.
//!
//! Without CAP_SYS_ADMIN every kind but the user namespace is made together with a new user
//! namespace, which owns it and gives the child the privilege to make it: a normal user's only
//! way, and the ids say so (`.in-user`).

use crate::context::Context;
use crate::engine::{self, first_occurrences, value_name};
use crate::sampler::{self, measure_interleaved, Job};
use anyhow::Context as _;
use oscost_model::case::{Case, Check, DerivedSpec, ExperimentOutput, Unavailable};
use oscost_model::ids::ns::{self as ids, Derived, Id};
use oscost_model::Message;
use oscost_sys::ns::{run_child, Kind, Outcome, Parent, Recipe};
use std::cell::Cell;
use std::time::Duration;

/// Subcommand name and id prefix.
pub const NAME: &str = ids::NAME;

/// The cases besides the bare child, which is always measured.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum What {
    /// unshare(CLONE_NEWNS): a copy of the mount table
    Mount,
    /// unshare(CLONE_NEWUTS): host and domain name
    Uts,
    /// unshare(CLONE_NEWIPC): System V IPC, POSIX message queues
    Ipc,
    /// unshare(CLONE_NEWPID): a PID namespace for the children after
    Pid,
    /// unshare(CLONE_NEWNET): a network namespace, its loopback down
    Net,
    /// unshare(CLONE_NEWNET), then the loopback brought up
    #[value(name = "net-lo")]
    NetLo,
    /// unshare(CLONE_NEWUSER): a user namespace
    User,
    /// unshare(CLONE_NEWCGROUP): a cgroup namespace
    Cgroup,
    /// unshare(CLONE_NEWTIME): a time namespace for the children after
    Time,
    /// clone() straight into new mount, UTS, IPC, PID, network and cgroup namespaces
    Container,
}

impl What {
    const ALL: [What; 10] = [
        What::Mount,
        What::Uts,
        What::Ipc,
        What::Pid,
        What::Net,
        What::NetLo,
        What::User,
        What::Cgroup,
        What::Time,
        What::Container,
    ];

    /// The part of the id after `ns.`.
    fn id_part(self) -> &'static str {
        match self {
            What::NetLo => "net.lo",
            w => ids::WHATS
                .iter()
                .find(|p| **p == value_name(&w))
                .copied()
                .unwrap_or("none"),
        }
    }

    /// The kinds it makes.
    fn kinds(self) -> Vec<Kind> {
        match self {
            What::Mount => vec![Kind::Mount],
            What::Uts => vec![Kind::Uts],
            What::Ipc => vec![Kind::Ipc],
            What::Pid => vec![Kind::Pid],
            What::Net | What::NetLo => vec![Kind::Net],
            What::User => vec![Kind::User],
            What::Cgroup => vec![Kind::Cgroup],
            What::Time => vec![Kind::Time],
            // runc's default set (the cgroup namespace on cgroup v2 hosts).
            // The same set `oscost bill --under container` runs a command in.
            What::Container => oscost_sys::ns::CONTAINER.to_vec(),
        }
    }
}

/// One case: what it makes, and whether a user namespace comes with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Unit {
    what: Option<What>,
    in_user: bool,
}

impl Unit {
    fn case(self) -> ids::Case<'static> {
        ids::Case {
            what: self.what.map_or("none", What::id_part),
            in_user: self.in_user,
        }
    }

    fn id(self) -> String {
        self.case().to_string()
    }

    fn recipe(self) -> Recipe {
        let mut kinds = self.what.map(What::kinds).unwrap_or_default();
        if self.in_user {
            kinds.push(Kind::User);
        }
        Recipe {
            flags: kinds.iter().fold(0, |f, k| f | k.flag()),
            cloned: self.what == Some(What::Container),
            loopback_up: self.what == Some(What::NetLo),
        }
    }

    fn description(self) -> String {
        let user = if self.in_user {
            ", made together with a new user namespace that owns it"
        } else {
            ""
        };
        let Some(what) = self.what else {
            return "a child made by a fork-like clone that ends at once, waited for: the \
                    bare child every case adds to"
                .into();
        };
        let body = match what {
            What::Container => "a child cloned straight into new mount, UTS, IPC, PID, network \
                                and cgroup namespaces (a container runtime's set)"
                .to_owned(),
            What::NetLo => "a child that unshares a network namespace and brings its \
                            loopback up"
                .to_owned(),
            w => format!(
                "a child that unshares a new {} namespace",
                match w {
                    What::Mount => "mount",
                    What::Uts => "UTS",
                    What::Ipc => "IPC",
                    What::Pid => "PID",
                    What::Net => "network",
                    What::User => "user",
                    What::Cgroup => "cgroup",
                    _ => "time",
                }
            ),
        };
        format!("{body}{user}, ends and is waited for (made and torn down)")
    }
}

/// Options of `oscost ns`.
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// Namespace cases, comma-separated (default: all); the bare child is always measured
    #[arg(long, value_enum, value_delimiter = ',', value_name = "CASE,...")]
    pub cases: Vec<What>,

    /// The suite's shorter sampling (`oscost run` passes it)
    #[arg(long, hide = true)]
    pub suite_size: bool,
}

/// What a run measures, resolved once.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plan {
    units: Vec<Unit>,
}

fn plan(opts: &Options, privileged: bool) -> Plan {
    let whats = if opts.cases.is_empty() {
        What::ALL.to_vec()
    } else {
        first_occurrences(&opts.cases)
    };
    let mut units = vec![Unit {
        what: None,
        in_user: false,
    }];
    units.extend(whats.into_iter().map(|w| Unit {
        what: Some(w),
        in_user: !privileged && w != What::User,
    }));
    Plan { units }
}

/// Whether this process holds CAP_SYS_ADMIN, which every kind but the user namespace needs.
fn has_sys_admin() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        // CAP_SYS_ADMIN is capability 21.
        .is_some_and(|c| c & (1 << 21) != 0)
}

/// Sampling that keeps the network namespaces made in the hundreds: each one's teardown is
/// queued to a kernel worker, and thousands queued would load the machine after the run.
fn own_sampler(s: sampler::SamplerConfig, suite: bool) -> sampler::SamplerConfig {
    if suite {
        s.for_suite(31, Duration::from_millis(10), Duration::from_millis(300))
    } else {
        sampler::SamplerConfig {
            min_sample: s.min_sample.min(Duration::from_millis(2)),
            warmup: s.warmup.min(Duration::from_millis(20)),
            ..s
        }
    }
}

/// Why user namespaces are refused, from the settings that refuse them.
fn userns_refusal(errno: i32) -> String {
    let read = |p: &str| crate::sysctl::read_trim(std::path::Path::new(p));
    let mut why = vec![format!(
        "unshare(CLONE_NEWUSER) refused: {}",
        std::io::Error::from_raw_os_error(errno)
    )];
    if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        why.push("/proc/sys/user/max_user_namespaces is 0".into());
    }
    if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        why.push("/proc/sys/kernel/unprivileged_userns_clone is 0".into());
    }
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        why.push("/proc/sys/kernel/apparmor_restrict_unprivileged_userns is 1".into());
    }
    format!(
        "{}; run as root, or where the kernel lets a normal user make user namespaces",
        why.join(", ")
    )
}

fn refusal(u: Unit, errno: i32) -> String {
    let e = std::io::Error::from_raw_os_error(errno);
    match (u.what, errno) {
        (Some(What::Time), libc::EINVAL) => {
            "unshare(CLONE_NEWTIME) refused (EINVAL): this kernel has no time namespaces \
             (Linux 5.6 and later, CONFIG_TIME_NS)"
                .into()
        }
        (_, libc::EPERM) if !u.in_user => format!(
            "refused ({e}): making this namespace needs CAP_SYS_ADMIN; run as root (a normal \
             user gets the .in-user cases)"
        ),
        _ if u.in_user || u.what == Some(What::User) => userns_refusal(errno),
        _ => format!("refused: {e}"),
    }
}

impl engine::Experiment for Options {
    const ID: oscost_model::ExperimentId = oscost_model::ExperimentId::Ns;
    const SUMMARY: &'static str =
        "What each kind of namespace costs to make and tear down, and a container's set";
    const ABOUT: &'static str = "What each kind of namespace costs to make and tear down: a \
fresh child unshares one kind (mount, UTS, IPC, PID, network, user, cgroup, time), ends and is \
waited for, against the same child with no unshare (ns.none); a network namespace also with its \
loopback brought up (ns.net.lo); and a child cloned straight into a container runtime's set \
(mount, UTS, IPC, PID, network, cgroup: ns.container). The derived figures give each over the \
bare child.

Every child is a fork-like clone of the single-threaded measuring process pinned to the first \
CPU; the parent times the whole life, in interleaved rounds. Every child's exit is counted (a \
refused unshare flags its figure), and a checking child before and after the sampling compares \
each new namespace's /proc/self/ns link with the parent's (and reads the loopback back up). A \
network namespace's last steps (cleanup_net) run later on a kernel worker and are not in its \
figure; the sampling is kept short so a run makes hundreds of them, not thousands, and their \
number is given. Without CAP_SYS_ADMIN every kind is made together with a new user namespace \
(ids ending .in-user, with their cost over ns.user), where the kernel allows it; where it does \
not, one line says which setting refuses it.\n\nTakes about 6 s (0.4 s as `oscost run ns`, at four kinds); \
--quick about 0.8 s on a 2-vCPU virtual machine.";
    const IN_DEFAULT_SUITE: bool = true;
    // The kinds a container makes that cost most (mount, network) or own the rest (user), and
    // the container's set; last in the suite, so that the network namespaces' cleanup on a
    // kernel worker falls on no other experiment.
    const SUITE_ARGS: &'static [&'static str] =
        &["--suite-size", "--cases", "mount,net,user,container"];
    const QUICK_SUITE_ARGS: &'static [&'static str] = &["--cases", "net,container"];

    fn run(&self, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
        run(self, ctx)
    }
}

/// One case being sampled and what its children did.
struct Slot {
    unit: Unit,
    recipe: Recipe,
    made: Cell<u64>,
    failed: Cell<u64>,
    first_failure: Cell<Option<Outcome>>,
    /// The checking children's outcomes, before and after the sampling.
    checks: Vec<Outcome>,
}

fn run(opts: &Options, ctx: &Context) -> anyhow::Result<ExperimentOutput> {
    if ctx.clock.scripted().is_some() {
        anyhow::bail!("{NAME} needs the real clock: it times real children");
    }
    let cpu = ctx.pin_first_cpu()?;
    let privileged = has_sys_admin();
    let p = plan(opts, privileged);
    let ctx = &ctx.with_sampler(own_sampler(ctx.sampler, opts.suite_size));
    let mut out = ExperimentOutput::default();
    out.params.insert("cap_sys_admin".into(), privileged.into());
    if !privileged {
        // One line at 80 columns after `warning: ns: `; the .in-user cases' descriptions
        // and the methodology say why (a normal user's container is made so).
        out.warnings.push(Message::from(
            "no CAP_SYS_ADMIN: each namespace made in a new user one (.in-user)",
        ));
    }

    let mut slots = Vec::new();
    for &u in &p.units {
        let recipe = u.recipe();
        let parent = Parent::read(recipe.cloned);
        let first = run_child(&recipe, Some(&parent)).context("making a namespace child")?;
        match first {
            Outcome::Refused(errno) => {
                out.unavailable.push(Unavailable {
                    id: u.id(),
                    description: u.description(),
                    reason: refusal(u, errno),
                });
                continue;
            }
            Outcome::LoopbackFailed => {
                out.unavailable.push(Unavailable {
                    id: u.id(),
                    description: u.description(),
                    reason: "bringing the new network namespace's loopback up failed \
                             (SIOCSIFFLAGS)"
                        .into(),
                });
                continue;
            }
            _ => {}
        }
        slots.push(Slot {
            unit: u,
            recipe,
            made: Cell::new(0),
            failed: Cell::new(0),
            first_failure: Cell::new(None),
            checks: vec![first],
        });
    }
    // A normal user whose user namespaces are refused gets one line, not one per case.
    if !privileged && out.unavailable.len() > 1 {
        let reasons: Vec<&str> = out.unavailable.iter().map(|u| u.reason.as_str()).collect();
        if reasons.iter().all(|r| *r == reasons[0]) {
            out.warnings.push(Message::from(format!(
                "no namespace case can be measured: {}",
                reasons[0]
            )));
        }
    }

    ctx.progress
        .start((slots.len() * (ctx.sampler.samples + 1)) as u64, NAME);
    let jobs: Vec<Job> = slots
        .iter()
        .map(|s| {
            Job::new(ctx, move || -> std::io::Result<()> {
                let o = run_child(&s.recipe, None)?;
                s.made.set(s.made.get() + 1);
                if o != Outcome::Done {
                    s.failed.set(s.failed.get() + 1);
                    if s.first_failure.get().is_none() {
                        s.first_failure.set(Some(o));
                    }
                }
                Ok(())
            })
        })
        .collect();
    let (results, threads) =
        sampler::counting_threads(|| measure_interleaved(ctx, jobs, &|| ctx.progress.inc(1)));
    let results = results?;
    ctx.progress.finish();

    let mut net_made = 0;
    for (mut s, (samples, said)) in slots.into_iter().zip(results) {
        let parent = Parent::read(s.recipe.cloned);
        s.checks
            .push(run_child(&s.recipe, Some(&parent)).context("making a checking child")?);
        if s.recipe.flags & Kind::Net.flag() != 0 {
            net_made += s.made.get();
        }
        let mut case = Case::new(s.unit.id(), s.unit.description(), "child", samples)
            .param("flags", format!("{:#x}", s.recipe.flags))
            .param("cloned", s.recipe.cloned)
            .param("in_user", s.unit.in_user)
            .param("cpu", cpu as u64);
        case.add_messages(said);
        finish_case(&mut case, &s, threads);
        out.cases.push(case);
    }
    out.params
        .insert("net_namespaces_made".into(), net_made.into());
    if net_made > 0 {
        // One line at 80 columns after `note: ns: `; docs/methodology.md says what
        // cleanup_net does and why it falls outside a case's figure.
        out.notes.push(Message::from(format!(
            "{net_made} network namespaces: cleanup_net runs later, outside the figures"
        )));
    }
    out.derived = derived(&out.cases);
    Ok(out)
}

/// The checks of one case: every child made its namespaces, the checking children ran in new
/// ones, one thread.
fn finish_case(case: &mut Case, s: &Slot, threads: Option<u64>) {
    let made = s.made.get();
    let failed = s.failed.get();
    case.counters.insert(
        "failed_children_per_child".into(),
        failed as f64 / made.max(1) as f64,
    );
    let first = s
        .first_failure
        .get()
        .map(|o| format!(" (the first: {o:?})"))
        .unwrap_or_default();
    case.checks.push(Check::near(
        "failed_children",
        0.0,
        failed as f64,
        0.0,
        &format!(
            "{failed} of the {made} timed children did not make their namespaces and end \
             cleanly{first}"
        ),
    ));
    if s.recipe.flags != 0 {
        let new = s.checks.iter().filter(|o| **o == Outcome::Done).count();
        let links = if s.recipe.loopback_up {
            "its /proc/self/ns links differed from the parent's and its loopback read back up"
        } else {
            "its /proc/self/ns links differed from the parent's"
        };
        case.checks.push(Check::near(
            "in_new_namespaces",
            s.checks.len() as f64,
            new as f64,
            0.0,
            &format!(
                "{new} of {} checking children (before and after the sampling) found each \
                 namespace new: {links}",
                s.checks.len()
            ),
        ));
    }
    if let Some(c) = sampler::single_task_check(threads) {
        case.checks.push(c);
    }
}

/// Each case over the bare child, and a case made inside a user namespace over `ns.user`.
fn derived(cases: &[Case]) -> Vec<DerivedSpec> {
    let find = |id: &str| cases.iter().find(|c| c.id == id);
    let none_id = Unit {
        what: None,
        in_user: false,
    }
    .id();
    let user_id = Unit {
        what: Some(What::User),
        in_user: false,
    }
    .id();
    let flag = |a: &Case, b: &Case| {
        let f: Vec<String> = [a, b]
            .into_iter()
            .filter_map(|c| engine::failed_checks(c).map(|f| format!("{}: {f}", c.id)))
            .collect();
        (!f.is_empty()).then(|| f.join("; "))
    };
    let mut out = Vec::new();
    for c in cases {
        let Some(Id::Case(case)) = Id::parse(&c.id) else {
            continue;
        };
        if case.what == "none" {
            continue;
        }
        let mut against = vec![(Derived::OverNone, &none_id, "the bare child")];
        if case.in_user {
            against.push((
                Derived::OverUser,
                &user_id,
                "a child that makes a user namespace only",
            ));
        }
        for (d, base_id, what) in against {
            let Some(base) = find(base_id) else { continue };
            out.push(DerivedSpec {
                id: Id::Derived(case, d).to_string(),
                description: format!("{}, less {what}", c.description),
                terms: vec![(c.id.clone(), 1.0), (base.id.clone(), -1.0)],
                flagged: flag(c, base),
            });
        }
    }
    out
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
    fn plans_and_ids() {
        let root = plan(&opts(&[]), true);
        let ids: Vec<String> = root.units.iter().map(|u| u.id()).collect();
        assert_eq!(
            ids,
            [
                "ns.none",
                "ns.mount",
                "ns.uts",
                "ns.ipc",
                "ns.pid",
                "ns.net",
                "ns.net.lo",
                "ns.user",
                "ns.cgroup",
                "ns.time",
                "ns.container"
            ]
        );
        let user = plan(&opts(&["--cases", "net-lo,user,net-lo"]), false);
        let ids: Vec<String> = user.units.iter().map(|u| u.id()).collect();
        assert_eq!(ids, ["ns.none", "ns.net.lo.in-user", "ns.user"]);
        let lo = user.units[1].recipe();
        assert_eq!(lo.flags, libc::CLONE_NEWNET | libc::CLONE_NEWUSER);
        assert!(lo.loopback_up && !lo.cloned);
        let c = root.units[10].recipe();
        assert!(c.cloned);
        assert_eq!(c.flags & libc::CLONE_NEWUSER, 0);
        for u in root.units.iter().chain(&user.units) {
            assert!(
                matches!(Id::parse(&u.id()), Some(Id::Case(_))),
                "{}",
                u.id()
            );
        }
    }

    #[test]
    fn refusals_name_the_fix() {
        let time = Unit {
            what: Some(What::Time),
            in_user: false,
        };
        assert!(refusal(time, libc::EINVAL).contains("time namespaces"));
        let mount = Unit {
            what: Some(What::Mount),
            in_user: false,
        };
        assert!(refusal(mount, libc::EPERM).contains("CAP_SYS_ADMIN"));
        let user = Unit {
            what: Some(What::Mount),
            in_user: true,
        };
        assert!(refusal(user, libc::EPERM).contains("user namespaces"));
    }

    #[test]
    fn a_tiny_run_makes_new_namespaces_and_derives_their_cost() {
        testing::with_tiny_ctx(|ctx| {
            let out = run(&opts(&["--cases", "uts,user,net-lo"]), ctx).unwrap();
            let measured: Vec<&str> = out.cases.iter().map(|c| c.id.as_str()).collect();
            assert_eq!(measured[0], "ns.none");
            // Whatever this machine allows is measured, the rest said with a reason.
            assert_eq!(measured.len() + out.unavailable.len(), 4);
            for u in &out.unavailable {
                assert!(!u.reason.is_empty(), "{}", u.id);
            }
            for c in &out.cases {
                assert!(
                    c.samples.per_op_ns.len() >= sampler::MIN_SAMPLES,
                    "{}",
                    c.id
                );
                assert!(c.samples.per_op_ns.iter().all(|v| *v > 0.0), "{}", c.id);
                // The test harness runs threads: only the one-task check may fail here.
                for k in c.checks.iter().filter(|k| k.name != SINGLE_THREAD_CHECK) {
                    assert!(k.passed, "{}: {k:?}", c.id);
                }
                if c.id != "ns.none" {
                    assert!(c.checks.iter().any(|k| k.name == "in_new_namespaces"));
                }
            }
            for c in out.cases.iter().skip(1) {
                let id = format!("{}.over_none", c.id);
                assert!(out.derived.iter().any(|d| d.id == id), "{id}");
            }
        });
    }
}

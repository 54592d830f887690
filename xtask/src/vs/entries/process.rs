//! References of processes and what isolates them: seccomp filters, namespaces, cgroups,
//! process creation.

use super::super::entry::{Cpus, Entry, Helper, Needs, Read, Reference, Run, BASE, RUN};
use super::value;

/// `cargo xtask vs seccomp`.
pub const SECCOMP: Entry = Entry {
    name: "seccomp",
    about: "system calls under no filter, an allow-all filter, Docker's profile and a user \
            notifier (benches/seccomp_ref.c)",
    reference: Reference::C("benches/seccomp_ref.c"),
    cpus: Cpus::Two,
    taskset: false,
    runs: &[Run {
        c: &[&["-c", "{a}", "-C", "{b}", "-s", "{s}", "-m", "{q:4000:1000}"]],
        oscost: &["seccomp"],
        ..RUN
    }],
    derive: Some(seccomp_over_none),
    ..BASE
};

/// `cargo xtask vs ns`.
pub const NS: Entry = Entry {
    name: "ns",
    about: "a child created in no new namespace and in each kind, and all at once \
            (benches/ns_ref.c)",
    reference: Reference::C("benches/ns_ref.c"),
    needs: &[Needs::Root],
    taskset: false,
    runs: &[Run {
        c: &[&["-c", "{a}", "-s", "{s}", "-m", "{q:2000:1000}"]],
        oscost: &["ns"],
        ..RUN
    }],
    derive: Some(ns_over_none),
    ..BASE
};

fn seccomp_over_none(figures: &[(String, f64)]) -> Vec<(String, f64)> {
    figures
        .iter()
        .filter_map(|(id, v)| {
            let mut parts = id.split('.').skip(1);
            let (profile, call) = (parts.next()?, parts.next()?);
            let base = match profile {
                "none" => return None,
                "notify" => "seccomp.none.getpid".to_string(),
                _ => format!("seccomp.none.{call}"),
            };
            Some((format!("{id}.over_none"), v - value(figures, &base)?))
        })
        .collect()
}

fn ns_over_none(figures: &[(String, f64)]) -> Vec<(String, f64)> {
    let Some(none) = value(figures, "ns.none") else {
        return Vec::new();
    };
    figures
        .iter()
        .filter(|(id, _)| id != "ns.none" && id.starts_with("ns."))
        .map(|(id, v)| (format!("{id}.over_none"), v - none))
        .collect()
}

/// `cargo xtask vs cgroup`.
pub const CGROUP: Entry = Entry {
    name: "cgroup",
    about: "a child forked, written into a new cgroup, or cloned into it, and pipe round trips \
            within a cgroup and across two (benches/cgroup_ref.c)",
    reference: Reference::C("benches/cgroup_ref.c"),
    // It makes and removes cgroups (the C program its own, beside oscost's).
    needs: &[Needs::Root],
    taskset: false,
    runs: &[Run {
        c: &[&["-c", "{a}", "-s", "{s}", "-m", "{q:4000:1000}"]],
        oscost: &["cgroup"],
        ..RUN
    }],
    derive: Some(cgroup_over_fork),
    ..BASE
};

/// `cargo xtask vs spawn`.
pub const SPAWN: Entry = Entry {
    name: "spawn",
    about: "fork, vfork, posix_spawn and fork + exec of a static and a dynamic program from \
            parents of 1 to 1 024 MiB and thousands of mappings, and a thread \
            (benches/spawn_ref.c)",
    reference: Reference::C("benches/spawn_ref.c"),
    cflags: &["-pthread"],
    // The program takes 81 samples, or 15 under -q.
    c_samples: [81, 15],
    c_quick: &["-q"],
    // The program does not pin itself: its children and thread inherit taskset's CPU.
    runs: &[Run {
        c: &[&["-h", "{tmp}/exit0", "-m", "1,64,1024", "-M", "6000,12000"]],
        oscost: &[
            "spawn",
            "--parent-mib",
            "1,64,1024",
            "--mappings",
            "6000,12000",
        ],
        ..RUN
    }],
    // The parent's memory while it forked, beside the times: a fork copies the page tables of
    // the whole process, so a larger program forks slower with the same extra memory.
    read: &[
        Read::Medians,
        Read::Counter("rss_kib"),
        Read::Counter("vm_pte_kib"),
    ],
    // The helper oscost execs, built with crates/sys/build.rs's flags: the smallest static
    // build, else the plain one.
    helpers: &[Helper {
        source: "crates/sys/helper/exit0.c",
        name: "exit0",
        flags: &[
            &[
                "-static",
                "-nostdlib",
                "-O2",
                "-s",
                "-fno-asynchronous-unwind-tables",
                "-Wl,--build-id=none",
                "-Wl,-n",
            ],
            &["-static", "-nostdlib", "-O2", "-s"],
        ],
    }],
    ..BASE
};

/// Joining a cgroup and cloning into it over the plain child (`cgroup.CASE.over_fork`), and
/// the round trip across two cgroups over the one within one.
fn cgroup_over_fork(figures: &[(String, f64)]) -> Vec<(String, f64)> {
    let over = |id: &str, base: &str| {
        Some((
            format!("{id}.over_{}", base.rsplit('.').next()?),
            value(figures, id)? - value(figures, base)?,
        ))
    };
    [
        over("cgroup.fork-procs", "cgroup.fork"),
        over("cgroup.clone3", "cgroup.fork"),
        over("cgroup.pipe.cross", "cgroup.pipe.same"),
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[cfg(test)]
mod tests {
    use super::super::figures;
    use super::*;

    #[test]
    fn derived_figures_are_the_differences_the_names_say() {
        let s = seccomp_over_none(&figures(&[
            ("seccomp.none.getpid", 100.0),
            ("seccomp.none.read", 200.0),
            ("seccomp.allow.read", 230.0),
            ("seccomp.notify.getpid", 5100.0),
        ]));
        assert_eq!(
            s,
            figures(&[
                ("seccomp.allow.read.over_none", 30.0),
                ("seccomp.notify.getpid.over_none", 5000.0)
            ])
        );
        let n = ns_over_none(&figures(&[("ns.none", 50.0), ("ns.net", 250.0)]));
        assert_eq!(n, figures(&[("ns.net.over_none", 200.0)]));
        assert!(ns_over_none(&figures(&[("ns.net", 1.0)])).is_empty());
        // v1: no clone3, so no figure over fork for it.
        let c = cgroup_over_fork(&figures(&[
            ("cgroup.fork", 70.0),
            ("cgroup.fork-procs", 80.0),
            ("cgroup.pipe.same", 3.0),
            ("cgroup.pipe.cross", 3.5),
        ]));
        assert_eq!(
            c,
            figures(&[
                ("cgroup.fork-procs.over_fork", 10.0),
                ("cgroup.pipe.cross.over_same", 0.5)
            ])
        );
    }
}

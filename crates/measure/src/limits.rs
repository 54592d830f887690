//! The machine's limits an experiment can run into (open files, tasks, memory mappings,
//! memory, address space), read once before anything is measured, and the pre-flight check of what an
//! experiment needs against them: a run that cannot fit is refused with one line naming the
//! limit and how to raise it, before any experiment of the run starts measuring.
//!
//! Every figure here comes from `/proc`, `/sys/fs/cgroup` or `getrlimit`; anything unreadable
//! is `None` and not checked (the mid-run [`oscost_sys::task::LimitError`] stays the
//! backstop). The check itself ([`Limits::check`]) is pure arithmetic on these numbers.

use std::path::{Path, PathBuf};

/// Descriptors a measuring process holds beside an experiment's links: the standard
/// streams, the progress pipe and the files it reads while measuring.
pub const FILES_MARGIN: u64 = 16;
/// Mappings a measuring process may add beside the ones counted (its own heap arenas,
/// libraries loaded late, the working set of the one-task control).
pub const MAPS_MARGIN: u64 = 64;

/// Address space, KiB, a measuring process may add beside what is counted: the mid-run check's
/// room for the next threads, the run's shared memory, the heap's growth with the tasks.
pub const ADDRESS_MARGIN_KIB: u64 = 16 << 10;

/// `getrlimit` values: (soft, hard), `None` meaning unlimited.
pub type Rlimit = (Option<u64>, Option<u64>);

/// A cgroup's `pids.max` and `pids.current`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupPids {
    /// The `pids.max` file.
    pub path: PathBuf,
    /// `None`: `max`.
    pub max: Option<u64>,
    /// Tasks in the cgroup now.
    pub current: u64,
}

/// The limits as they are now, for this user and this process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    /// RLIMIT_NOFILE. The coordinator raises the soft limit to the hard one before measuring,
    /// so the hard limit is the one a run meets.
    pub nofile: Option<Rlimit>,
    /// RLIMIT_NPROC.
    pub nproc: Option<Rlimit>,
    /// Whether RLIMIT_NPROC applies to this process (not to root, CAP_SYS_ADMIN or
    /// CAP_SYS_RESOURCE).
    pub nproc_enforced: bool,
    /// Processes and threads of this process's real user now.
    pub user_tasks: Option<u64>,
    /// `kernel.threads-max`.
    pub threads_max: Option<u64>,
    /// `kernel.pid_max`.
    pub pid_max: Option<u64>,
    /// Processes and threads on the whole machine now (`/proc/loadavg`).
    pub tasks_now: Option<u64>,
    /// The tightest `pids.max` of this process's cgroup and its ancestors, if readable.
    pub cgroup_pids: Option<CgroupPids>,
    /// `vm.max_map_count`.
    pub max_map_count: Option<u64>,
    /// Mappings of this process now: what a fresh measuring process of the same binary starts
    /// with, about.
    pub maps_now: u64,
    /// `MemAvailable` of `/proc/meminfo`, KiB.
    pub mem_available_kib: Option<u64>,
    /// RLIMIT_AS, bytes.
    pub address_space: Option<Rlimit>,
    /// Address space this process maps now, KiB (`/proc/self/statm`): what a fresh measuring
    /// process of the same binary starts with, about.
    pub mapped_now_kib: u64,
}

/// What an experiment will need at its largest, at once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    /// The experiment and the options that set the size (`ring --tasks 8192`).
    pub what: String,
    /// What to do instead of raising the limit (`use fewer --tasks`), if anything.
    pub instead: Option<String>,
    /// Open files in the measuring process (the margin included) and why.
    pub files: Option<(u64, String)>,
    /// Processes and threads started at once (the measuring process included) and why.
    pub tasks: Option<(u64, String)>,
    /// Memory mappings added to one process and why (the margin and what the process starts
    /// with are added by the check).
    pub maps: Option<(u64, String)>,
    /// Memory, KiB, and why.
    pub memory_kib: Option<(u64, String)>,
    /// Address space added to one process, KiB, and why (what the process maps already is
    /// added by the check).
    pub address_space_kib: Option<(u64, String)>,
}

/// The address space `n` worker threads map, KiB, and why: each one's stack, signal stack
/// and their guard pages ([`oscost_sys::task::thread_address_space`]).
pub fn thread_stacks(n: u64) -> (u64, String) {
    (
        n * oscost_sys::task::thread_address_space() / 1024,
        format!(
            "a {} KiB stack, a signal stack and their guard pages for each of {n} threads",
            oscost_sys::task::THREAD_STACK_BYTES / 1024
        ),
    )
}

/// A round number somewhat above `n` to suggest as a new limit.
pub fn suggest(n: u64) -> u64 {
    let step = if n >= 1000 { 1000 } else { 100 };
    (n / step + 1) * step
}

fn show(v: Option<u64>) -> String {
    v.map_or_else(|| "unlimited".into(), |v| v.to_string())
}

/// `n` KiB in the largest binary unit that keeps it at 1 or more.
fn kib_text(kib: u64) -> String {
    let units = [
        ("KiB", 1u64),
        ("MiB", 1 << 10),
        ("GiB", 1 << 20),
        ("TiB", 1 << 30),
    ];
    let (name, size) = units
        .iter()
        .rev()
        .find(|(_, s)| kib >= *s)
        .copied()
        .unwrap_or(units[0]);
    if size == 1 {
        format!("{kib} KiB")
    } else {
        format!("{:.1} {name}", kib as f64 / size as f64)
    }
}

impl Limits {
    /// Reads every limit; what cannot be read is `None`.
    pub fn read() -> Limits {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let real_uid = status_field(&status, "Uid:").and_then(|v| v.parse::<u32>().ok());
        let cap_eff =
            status_field(&status, "CapEff:").and_then(|v| u64::from_str_radix(v, 16).ok());
        // The kernel skips the RLIMIT_NPROC check for root's user and for CAP_SYS_ADMIN (21)
        // or CAP_SYS_RESOURCE (24).
        let privileged =
            real_uid == Some(0) || cap_eff.is_some_and(|c| c & (1 << 21 | 1 << 24) != 0);
        Limits {
            nofile: oscost_sys::rlimit(libc::RLIMIT_NOFILE).ok(),
            nproc: oscost_sys::rlimit(libc::RLIMIT_NPROC).ok(),
            nproc_enforced: !privileged,
            user_tasks: real_uid.and_then(user_tasks),
            threads_max: read_u64("/proc/sys/kernel/threads-max"),
            pid_max: read_u64("/proc/sys/kernel/pid_max"),
            tasks_now: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|s| s.split_whitespace().nth(3)?.split('/').nth(1)?.parse().ok()),
            cgroup_pids: cgroup_pids(),
            max_map_count: read_u64("/proc/sys/vm/max_map_count"),
            maps_now: std::fs::read_to_string("/proc/self/maps")
                .map_or(0, |s| s.lines().count() as u64),
            mem_available_kib: std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("MemAvailable:"))?
                    .split_whitespace()
                    .nth(1)?
                    .parse()
                    .ok()
            }),
            address_space: oscost_sys::rlimit(libc::RLIMIT_AS).ok(),
            mapped_now_kib: std::fs::read_to_string("/proc/self/statm")
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
                .map_or(0, |pages| {
                    pages * oscost_sys::sysinfo::page_size() as u64 / 1024
                }),
        }
    }

    /// `Ok` when `needs` fits every limit that could be read; else one line naming the first
    /// limit that does not fit, its value, what the run needs and how to raise it.
    pub fn check(&self, needs: &Needs) -> anyhow::Result<()> {
        let what = &needs.what;
        let instead = needs
            .instead
            .as_ref()
            .map_or_else(String::new, |i| format!(", or {i}"));
        if let (Some((files, why)), Some((soft, hard))) = (&needs.files, self.nofile) {
            // The coordinator raises the soft limit to the hard one before measuring.
            if hard.is_some_and(|h| h < *files) {
                anyhow::bail!(
                    "{what} needs about {files} open files ({why}); RLIMIT_NOFILE is {} (hard \
                     {}): raise it with ulimit -n {}{instead}",
                    show(soft),
                    show(hard),
                    suggest(*files)
                );
            }
        }
        if let Some((tasks, why)) = &needs.tasks {
            if let (true, Some((Some(soft), hard))) = (self.nproc_enforced, self.nproc) {
                let now = self.user_tasks.unwrap_or(0);
                let need = now + tasks;
                if soft < need {
                    anyhow::bail!(
                        "{what} needs about {need} processes and threads of this user at once \
                         ({why}; {now} running now); RLIMIT_NPROC is {soft} (hard {}): raise it \
                         with ulimit -u {}{instead}",
                        show(hard),
                        suggest(need)
                    );
                }
            }
            let now = self.tasks_now.unwrap_or(0);
            for (name, max) in [
                ("kernel.threads-max", self.threads_max),
                ("kernel.pid_max", self.pid_max),
            ] {
                if let Some(max) = max.filter(|&m| m < now + tasks) {
                    anyhow::bail!(
                        "{what} needs about {tasks} more processes and threads ({why}); {name} \
                         is {max} with {now} running: raise it with sysctl -w {name}={}{instead}",
                        suggest(now + tasks)
                    );
                }
            }
            if let Some(cg) = &self.cgroup_pids {
                if let Some(max) = cg.max.filter(|&m| m < cg.current + tasks) {
                    anyhow::bail!(
                        "{what} needs about {tasks} more processes and threads ({why}); the \
                         cgroup's pids.max is {max} with {} in use: raise it by writing {} to \
                         {}{instead}",
                        cg.current,
                        suggest(cg.current + tasks),
                        cg.path.display()
                    );
                }
            }
        }
        if let (Some((maps, why)), Some(max)) = (&needs.maps, self.max_map_count) {
            let need = self.maps_now + MAPS_MARGIN + maps;
            if max < need {
                anyhow::bail!(
                    "{what} needs about {need} memory mappings in one process ({why}, and about \
                     {} for the program itself); vm.max_map_count is {max}: raise it with \
                     sysctl -w vm.max_map_count={}{instead}",
                    self.maps_now + MAPS_MARGIN,
                    suggest(need)
                );
            }
        }
        if let (Some((kib, why)), Some((Some(soft), hard))) =
            (&needs.address_space_kib, self.address_space)
        {
            let own = self.mapped_now_kib + ADDRESS_MARGIN_KIB;
            let need = own + kib;
            if soft / 1024 < need {
                anyhow::bail!(
                    "{what} needs about {} of address space ({why}, and about {} for the \
                     program itself); RLIMIT_AS is {} (hard {}): raise it with ulimit -v {}\
                     {instead}",
                    kib_text(need),
                    kib_text(own),
                    kib_text(soft / 1024),
                    hard.map_or_else(|| "unlimited".into(), |h| kib_text(h / 1024)),
                    suggest(need)
                );
            }
        }
        if let (Some((kib, why)), Some(avail)) = (&needs.memory_kib, self.mem_available_kib) {
            if avail < *kib {
                anyhow::bail!(
                    "{what} needs about {} of memory ({why}); MemAvailable is {}: free memory \
                     first{instead}",
                    kib_text(*kib),
                    kib_text(avail)
                );
            }
        }
        Ok(())
    }
}

/// The first value of a `/proc/self/status` field (`Uid:` → the real uid).
fn status_field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status
        .lines()
        .find(|l| l.starts_with(name))?
        .split_whitespace()
        .nth(1)
}

fn read_u64(path: impl AsRef<Path>) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Processes and threads whose real user is `uid` (what RLIMIT_NPROC counts), as far as
/// `/proc` shows them.
fn user_tasks(uid: u32) -> Option<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        if !name
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        if status_field(&status, "Uid:").and_then(|v| v.parse::<u32>().ok()) == Some(uid) {
            total += status_field(&status, "Threads:")
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(1);
        }
    }
    Some(total)
}

/// The tightest `pids.max` (the least room left) of this process's cgroup and its
/// ancestors, v2 or the v1 `pids` controller.
fn cgroup_pids() -> Option<CgroupPids> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut best: Option<CgroupPids> = None;
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(ctrl), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let roots: &[&str] = match ctrl {
            "" => &["/sys/fs/cgroup", "/sys/fs/cgroup/unified"],
            c if c.split(',').any(|c| c == "pids") => &["/sys/fs/cgroup/pids"],
            _ => continue,
        };
        for root in roots {
            let mut dir = PathBuf::from(format!("{root}{path}"));
            loop {
                let max = std::fs::read_to_string(dir.join("pids.max")).ok();
                let current = read_u64(dir.join("pids.current"));
                if let (Some(max), Some(current)) = (max, current) {
                    let max = max.trim().parse::<u64>().ok();
                    let room =
                        |c: &CgroupPids| c.max.map_or(u64::MAX, |m| m.saturating_sub(c.current));
                    let here = CgroupPids {
                        path: dir.join("pids.max"),
                        max,
                        current,
                    };
                    if best.as_ref().is_none_or(|b| room(&here) < room(b)) {
                        best = Some(here);
                    }
                }
                if dir.as_os_str().len() <= root.len() || !dir.pop() {
                    break;
                }
            }
        }
    }
    best.filter(|b| b.max.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roomy() -> Limits {
        Limits {
            nofile: Some((Some(1024), Some(1 << 20))),
            nproc: Some((Some(100_000), Some(100_000))),
            nproc_enforced: true,
            user_tasks: Some(10),
            threads_max: Some(100_000),
            pid_max: Some(4_194_304),
            tasks_now: Some(200),
            cgroup_pids: None,
            max_map_count: Some(65530),
            maps_now: 100,
            mem_available_kib: Some(8 << 20),
            address_space: None,
            mapped_now_kib: 0,
        }
    }

    fn needs(files: u64, tasks: u64, maps: u64, kib: u64) -> Needs {
        Needs {
            what: "ring --tasks 8192".into(),
            instead: Some("use fewer --tasks".into()),
            files: Some((files, "why".into())),
            tasks: Some((tasks, "why".into())),
            maps: Some((maps, "why".into())),
            memory_kib: Some((kib, "why".into())),
            address_space_kib: None,
        }
    }

    #[test]
    fn suggestions_are_round_and_above() {
        assert_eq!(suggest(16402), 17000);
        assert_eq!(suggest(144), 200);
        assert_eq!(suggest(1000), 2000);
    }

    #[test]
    fn the_hard_open_file_limit_counts_not_the_soft_one() {
        let l = roomy();
        assert!(l.check(&needs(16402, 10, 10, 0)).is_ok());
        let l = Limits {
            nofile: Some((Some(60), Some(60))),
            ..roomy()
        };
        let e = l.check(&needs(16402, 10, 10, 0)).unwrap_err().to_string();
        assert_eq!(
            e,
            "ring --tasks 8192 needs about 16402 open files (why); RLIMIT_NOFILE is 60 (hard \
             60): raise it with ulimit -n 17000, or use fewer --tasks"
        );
    }

    #[test]
    fn the_process_limit_counts_the_users_tasks_unless_privileged() {
        let l = Limits {
            nproc: Some((Some(48), Some(48))),
            user_tasks: Some(3),
            ..roomy()
        };
        assert!(l.check(&needs(10, 45, 10, 0)).is_ok());
        let e = l.check(&needs(10, 46, 10, 0)).unwrap_err().to_string();
        assert!(e.contains("about 49 processes and threads"), "{e}");
        assert!(e.contains("RLIMIT_NPROC is 48 (hard 48)"), "{e}");
        assert!(e.contains("ulimit -u 100"), "{e}");
        let root = Limits {
            nproc_enforced: false,
            ..l
        };
        assert!(root.check(&needs(10, 46, 10, 0)).is_ok());
    }

    #[test]
    fn system_task_caps_are_checked() {
        let l = Limits {
            threads_max: Some(1000),
            ..roomy()
        };
        let e = l.check(&needs(10, 900, 10, 0)).unwrap_err().to_string();
        assert!(
            e.contains("kernel.threads-max is 1000 with 200 running"),
            "{e}"
        );
        let l = Limits {
            cgroup_pids: Some(CgroupPids {
                path: "/sys/fs/cgroup/x/pids.max".into(),
                max: Some(500),
                current: 20,
            }),
            ..roomy()
        };
        let e = l.check(&needs(10, 481, 10, 0)).unwrap_err().to_string();
        assert!(e.contains("pids.max is 500 with 20 in use"), "{e}");
        assert!(l.check(&needs(10, 480, 10, 0)).is_ok());
    }

    #[test]
    fn mappings_add_what_the_process_has_and_a_margin() {
        // 100 now + 64 margin + 30000 needed = 30164.
        let l = Limits {
            max_map_count: Some(30164),
            ..roomy()
        };
        assert!(l.check(&needs(10, 10, 30000, 0)).is_ok());
        let e = l.check(&needs(10, 10, 30001, 0)).unwrap_err().to_string();
        assert!(
            e.contains("about 30165 memory mappings") && e.contains("vm.max_map_count is 30164"),
            "{e}"
        );
        assert!(e.contains("sysctl -w vm.max_map_count=31000"), "{e}");
    }

    #[test]
    fn working_sets_are_checked_against_available_memory() {
        let l = roomy();
        assert!(l.check(&needs(10, 10, 10, 8 << 20)).is_ok());
        let e = l
            .check(&needs(10, 10, 10, 9 << 20))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("about 9.0 GiB of memory") && e.contains("MemAvailable is 8.0 GiB"),
            "{e}"
        );
    }

    #[test]
    fn thread_stacks_add_what_the_process_maps_against_the_address_space_limit() {
        // 8192 threads of 80 KiB each (a 64 KiB stack, an 8 KiB signal stack and two guard
        // pages) = 640 MiB, 24 MiB mapped already and the 16 MiB margin: 680 MiB against
        // 300 MB (286.1 MiB).
        let need = Needs {
            what: "split --tasks 8192".into(),
            instead: Some("use fewer --tasks".into()),
            address_space_kib: Some((8192 * 80, "stacks".into())),
            ..Needs::default()
        };
        let l = Limits {
            address_space: Some((Some(300_000_000), Some(300_000_000))),
            mapped_now_kib: 24 << 10,
            ..roomy()
        };
        let e = l.check(&need).unwrap_err().to_string();
        assert_eq!(
            e,
            "split --tasks 8192 needs about 680.0 MiB of address space (stacks, and about \
             40.0 MiB for the program itself); RLIMIT_AS is 286.1 MiB (hard 286.1 MiB): raise \
             it with ulimit -v 697000, or use fewer --tasks"
        );
        // 3000 threads: 234.4 MiB + 40 MiB fits; no limit, or no threads, is no check.
        let fewer = Needs {
            address_space_kib: Some((3000 * 80, "stacks".into())),
            ..need.clone()
        };
        assert!(l.check(&fewer).is_ok());
        assert!(roomy().check(&need).is_ok());
        assert!(l.check(&Needs::default()).is_ok());
    }

    #[test]
    fn unreadable_limits_are_not_checked() {
        let l = Limits::default();
        assert!(l
            .check(&needs(u64::MAX / 2, 1 << 40, 1 << 40, 1 << 50))
            .is_ok());
    }

    #[test]
    fn this_machine_reads() {
        let l = Limits::read();
        assert!(l.nofile.is_some() && l.maps_now > 0);
    }
}

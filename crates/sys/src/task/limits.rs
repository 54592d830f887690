//! A task that could not be created: which limit stopped it, in words a user acts on.

use std::io;

/// A task could not be created because a limit was reached. Every task started before it has
/// already been stopped and reaped when this is returned; the CLI exits 2 with the message.
#[derive(Debug, thiserror::Error)]
pub enum LimitError {
    /// fork or clone failed with EAGAIN.
    #[error(
        "cannot create task {index} of {total}: the process limit was reached \
         (RLIMIT_NPROC soft={soft}, hard={hard}, raise it with `ulimit -u`; \
         the kernel also caps tasks at {system})"
    )]
    Tasks {
        /// 1-based number of the task that failed.
        index: usize,
        /// Tasks the experiment needed.
        total: usize,
        /// Soft limit, or `unlimited`.
        soft: String,
        /// Hard limit, or `unlimited`.
        hard: String,
        /// The system-wide caps (threads-max, pid_max, cgroup pids.max).
        system: String,
    },
    /// A thread's stack could not be mapped under the address-space limit (glibc reports it
    /// as EAGAIN, the process limit's errno).
    #[error(
        "cannot create task {index} of {total}: the address-space limit was reached \
         (RLIMIT_AS soft={soft}, hard={hard}: each thread's stack is a mapping; raise it with \
         `ulimit -v` or prlimit --as)"
    )]
    AddressSpace {
        /// 1-based number of the task that failed.
        index: usize,
        /// Tasks the experiment needed.
        total: usize,
        /// Soft limit, or `unlimited`.
        soft: String,
        /// Hard limit, or `unlimited`.
        hard: String,
    },
    /// A descriptor could not be created: EMFILE.
    #[error(
        "cannot create {what} for task {index} of {total}: the open-file limit was reached \
         (RLIMIT_NOFILE soft={soft}, hard={hard}, raise it with `ulimit -n`)"
    )]
    Files {
        /// What was being created (`a pipe link`).
        what: String,
        /// 1-based task number.
        index: usize,
        /// Tasks the experiment needed.
        total: usize,
        /// Soft limit, or `unlimited`.
        soft: String,
        /// Hard limit, or `unlimited`.
        hard: String,
    },
    /// ENFILE: the whole system's file table is full.
    #[error(
        "cannot create {what} for task {index} of {total}: the system-wide file table is full \
         (fs.file-max={max})"
    )]
    SystemFiles {
        /// What was being created.
        what: String,
        /// 1-based task number.
        index: usize,
        /// Tasks the experiment needed.
        total: usize,
        /// `/proc/sys/fs/file-max`.
        max: String,
    },
    /// fork, clone or a stack mapping failed with ENOMEM.
    #[error(
        "cannot create task {index} of {total}: out of memory or address-space mappings \
         (vm.max_map_count={max_map_count}, vm.overcommit_memory={overcommit})"
    )]
    Memory {
        /// 1-based task number.
        index: usize,
        /// Tasks the experiment needed.
        total: usize,
        /// `/proc/sys/vm/max_map_count`.
        max_map_count: String,
        /// `/proc/sys/vm/overcommit_memory`.
        overcommit: String,
    },
}

pub(super) fn limit_text(resource: libc::__rlimit_resource_t) -> (String, String) {
    let show = |v: Option<u64>| v.map_or_else(|| "unlimited".to_string(), |v| v.to_string());
    match crate::rlimit(resource) {
        Ok((soft, hard)) => (show(soft), show(hard)),
        Err(_) => ("unknown".into(), "unknown".into()),
    }
}

pub(super) fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path).map_or_else(|_| "unknown".into(), |s| s.trim().to_string())
}

/// The cgroup v1/v2 `pids.max` of this process, if it has one.
pub(super) fn cgroup_pids_max() -> Option<String> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    cgroups.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, ctrl, path) = (parts.next()?, parts.next()?, parts.next()?);
        let dir = match ctrl {
            "" => format!("/sys/fs/cgroup{path}"),
            c if c.split(',').any(|c| c == "pids") => format!("/sys/fs/cgroup/pids{path}"),
            _ => return None,
        };
        std::fs::read_to_string(format!("{dir}/pids.max"))
            .ok()
            .map(|s| s.trim().to_string())
    })
}

/// The soft address-space limit (RLIMIT_AS) of this process, bytes, when one is set.
pub fn address_space_limit() -> Option<u64> {
    crate::rlimit(libc::RLIMIT_AS)
        .ok()
        .and_then(|(soft, _)| soft)
}

/// Address space one worker thread maps, bytes: its stack and guard page, and the signal stack
/// and guard page Rust's runtime maps inside every new thread (`SIGSTKSZ`, or the larger
/// minimum the kernel asks for in the auxiliary vector). glibc's thread block and the
/// thread's TLS come on top, so this is what a thread takes at least.
pub fn thread_address_space() -> u64 {
    let page = crate::sysinfo::page_size() as u64;
    let pages = |bytes: u64| bytes.div_ceil(page) * page;
    // SAFETY: getauxval reads this process's auxiliary vector; an entry not there is 0.
    let asked = unsafe { libc::getauxval(libc::AT_MINSIGSTKSZ) } as u64;
    let signal_stack = asked.max(libc::SIGSTKSZ as u64);
    pages(super::THREAD_STACK_BYTES as u64 + page) + pages(signal_stack + page)
}

/// Whether the address-space limit (RLIMIT_AS) refuses a mapping of `bytes` now: a new
/// thread's stack is such a mapping, and glibc reports its refusal as EAGAIN, the errno of the
/// process limit, so the two are told apart by trying one.
fn address_space_full(bytes: usize) -> bool {
    matches!(crate::rlimit(libc::RLIMIT_AS), Ok((Some(_), _)))
        && crate::calls::mmap_munmap(bytes).is_err()
}

/// Under an address-space limit (RLIMIT_AS), whether task `index` of `total`, a thread, still
/// fits: its stack, and the signal stack Rust's runtime maps inside the new thread, which it
/// cannot refuse in words (it panics). Tried with one mapping of both, before the thread is
/// made; without such a limit nothing is tried.
pub(crate) fn room_for_thread(index: usize, total: usize) -> anyhow::Result<()> {
    // The stack, its guard page, glibc's thread block and a signal stack with its guard, for
    // this thread and for the few started before it that may still be mapping theirs.
    let room = 8 * (super::THREAD_STACK_BYTES + 128 * 1024);
    if address_space_limit().is_some() && address_space_full(room) {
        let (soft, hard) = limit_text(libc::RLIMIT_AS);
        return Err(LimitError::AddressSpace {
            index,
            total,
            soft,
            hard,
        }
        .into());
    }
    Ok(())
}

/// A helper thread (`what`: "the signal thread") that could not be started, in one line naming
/// the limit that stopped it, RLIMIT_NPROC or RLIMIT_AS, and how to raise it.
pub fn thread_error(err: io::Error, what: &str) -> anyhow::Error {
    if os_errno(&err) != Some(libc::EAGAIN) {
        return anyhow::anyhow!("cannot start {what}: {err}");
    }
    // Rust's default stack for a thread, its guard page and glibc's thread block beside it.
    if address_space_full(2 * 1024 * 1024 + 64 * 1024) {
        let (soft, hard) = limit_text(libc::RLIMIT_AS);
        return anyhow::anyhow!(
            "cannot start {what}: the address-space limit was reached (RLIMIT_AS soft={soft}, \
             hard={hard}: raise it with `ulimit -v` or prlimit --as)"
        );
    }
    let (soft, hard) = limit_text(libc::RLIMIT_NPROC);
    anyhow::anyhow!(
        "cannot start {what}: the process limit was reached (RLIMIT_NPROC soft={soft}, \
         hard={hard}, counted over all of this user's processes and threads: raise it with \
         `ulimit -u`)"
    )
}

/// Turns a failed task creation into a [`LimitError`] where the errno names a limit.
pub(crate) fn spawn_error(err: io::Error, index: usize, total: usize, what: &str) -> anyhow::Error {
    match os_errno(&err) {
        Some(libc::EAGAIN)
            if what.contains("thread")
                && address_space_full(super::THREAD_STACK_BYTES + 64 * 1024) =>
        {
            let (soft, hard) = limit_text(libc::RLIMIT_AS);
            LimitError::AddressSpace {
                index,
                total,
                soft,
                hard,
            }
            .into()
        }
        Some(libc::EAGAIN) => {
            let (soft, hard) = limit_text(libc::RLIMIT_NPROC);
            let mut system = format!(
                "kernel.threads-max={}, kernel.pid_max={}",
                read_trimmed("/proc/sys/kernel/threads-max"),
                read_trimmed("/proc/sys/kernel/pid_max")
            );
            if let Some(max) = cgroup_pids_max() {
                system.push_str(&format!(", cgroup pids.max={max}"));
            }
            LimitError::Tasks {
                index,
                total,
                soft,
                hard,
                system,
            }
            .into()
        }
        Some(libc::ENOMEM) => LimitError::Memory {
            index,
            total,
            max_map_count: read_trimmed("/proc/sys/vm/max_map_count"),
            overcommit: read_trimmed("/proc/sys/vm/overcommit_memory"),
        }
        .into(),
        _ => anyhow::anyhow!("cannot create task {index} of {total} ({what}): {err}"),
    }
}

/// The errno behind `err`: its raw code, or the `(os error N)` that a wrapped error (one
/// built by [`super::last_error`]) carries in its message.
pub(super) fn os_errno(err: &io::Error) -> Option<i32> {
    err.raw_os_error().or_else(|| {
        let text = err.to_string();
        let start = text.rfind("(os error ")? + "(os error ".len();
        text[start..].trim_end_matches(')').parse().ok()
    })
}

/// Turns a failure to create a descriptor-backed object (a link) for task `index` into a
/// [`LimitError`] naming RLIMIT_NOFILE or fs.file-max, or else an error naming `what`.
pub fn resource_error(err: io::Error, what: &str, index: usize, total: usize) -> anyhow::Error {
    match os_errno(&err) {
        Some(libc::EMFILE) => {
            let (soft, hard) = limit_text(libc::RLIMIT_NOFILE);
            LimitError::Files {
                what: what.into(),
                index,
                total,
                soft,
                hard,
            }
            .into()
        }
        Some(libc::ENFILE) => LimitError::SystemFiles {
            what: what.into(),
            index,
            total,
            max: read_trimmed("/proc/sys/fs/file-max"),
        }
        .into(),
        _ => anyhow::anyhow!("cannot create {what} for task {index} of {total}: {err}"),
    }
}

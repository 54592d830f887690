//! System calls counted by name with `perf_event_open`: one counting event on each system
//! call's own tracepoint (`syscalls:sys_enter_NAME`), where BPF is refused but perf's
//! tracepoints are not. The kernel adds up each count (no record per call); what it cannot
//! give is a call's time.

use crate::ktrace::Tracefs;
use crate::last_error;
use perf_event_open_sys as perf;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The `syscalls:sys_enter_*` tracepoints of this kernel: each call's name and tracepoint id,
/// by name.
pub fn enter_tracepoints(fs: &Tracefs) -> io::Result<Vec<(String, u64)>> {
    let dir = fs.root().join("events/syscalls");
    let closed = |e: io::Error| {
        io::Error::new(
            e.kind(),
            format!(
                "reading the system calls' tracepoints in tracefs: {e} (root's alone here: run \
                 as root)"
            ),
        )
    };
    let (mut out, mut unreadable) = (Vec::new(), None);
    for e in std::fs::read_dir(&dir).map_err(closed)?.flatten() {
        let Some(name) = e
            .file_name()
            .to_str()
            .and_then(|n| n.strip_prefix("sys_enter_"))
            .map(str::to_owned)
        else {
            continue;
        };
        match std::fs::read_to_string(e.path().join("id")) {
            Ok(id) => out.extend(id.trim().parse().ok().map(|id| (name, id))),
            Err(e) => unreadable = Some(e),
        }
    }
    if out.is_empty() {
        return Err(match unreadable {
            Some(e) => closed(e),
            None => io::Error::new(
                io::ErrorKind::NotFound,
                "this kernel has no syscalls:sys_enter_* tracepoints (CONFIG_FTRACE_SYSCALLS)",
            ),
        });
    }
    out.sort();
    Ok(out)
}

/// The number of the system call named `name` on this architecture, when it has one.
pub fn number(name: &str) -> Option<u32> {
    name.parse::<syscalls::Sysno>().ok().map(|s| s.id() as u32)
}

/// A counting event on tracepoint `id`: over task `pid` (on every CPU when `cpu` is -1) or,
/// with `PERF_FLAG_PID_CGROUP` in `flags`, over the cgroup whose directory `pid` is open as, on
/// `cpu`; `inherit`ed by the tasks counted ones create. On the calling thread (`pid` 0) it
/// starts off and turns on when a task that inherited it executes a program.
pub fn open_tracepoint(
    id: u64,
    pid: i32,
    cpu: i32,
    inherit: bool,
    flags: libc::c_ulong,
) -> io::Result<OwnedFd> {
    let mut attr = perf::bindings::perf_event_attr {
        type_: perf::bindings::PERF_TYPE_TRACEPOINT,
        size: std::mem::size_of::<perf::bindings::perf_event_attr>() as u32,
        config: id,
        ..Default::default()
    };
    attr.set_inherit(u64::from(inherit));
    if pid == 0 {
        attr.set_disabled(1);
        attr.set_enable_on_exec(1);
    }
    // SAFETY: attr is a fully initialised perf_event_attr of the size it states; the other
    // arguments are plain integers.
    let fd = unsafe {
        perf::perf_event_open(
            &mut attr,
            pid,
            cpu,
            -1,
            flags | perf::bindings::PERF_FLAG_FD_CLOEXEC as libc::c_ulong,
        )
    };
    if fd < 0 {
        return Err(last_error("perf_event_open(a tracepoint)"));
    }
    // SAFETY: fd was just returned by the kernel and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Counting events, one per system call's tracepoint, each inherited by the tasks the
/// counted ones create.
pub struct CallCounts {
    names: Vec<String>,
    /// Per name, one event per thread counted.
    fds: Vec<Vec<OwnedFd>>,
}

impl CallCounts {
    /// Events on each task of `pids` (0: the calling thread, see [`open_tracepoint`]).
    fn open(tracepoints: &[(String, u64)], pids: &[i32]) -> io::Result<CallCounts> {
        let mut names = Vec::with_capacity(tracepoints.len());
        let mut fds = Vec::with_capacity(tracepoints.len());
        for (name, id) in tracepoints {
            names.push(name.clone());
            fds.push(
                pids.iter()
                    .map(|&pid| open_tracepoint(*id, pid, -1, true, 0))
                    .collect::<io::Result<Vec<_>>>()?,
            );
        }
        Ok(CallCounts { names, fds })
    }

    /// Events on the calling thread, off, each turned on in a task that inherited it when that
    /// task executes a program: they count the calls of the command this thread starts next,
    /// from its `execve` on, and of every task it creates. The calling thread never counts (it
    /// executes nothing); open them on the thread that starts the command.
    pub fn on_exec(tracepoints: &[(String, u64)]) -> io::Result<CallCounts> {
        Self::open(tracepoints, &[0])
    }

    /// Events on threads `tids`, counting from now, and the tasks they create from now on.
    /// Needs `tracepoints.len() × tids.len()` descriptors.
    pub fn threads(tracepoints: &[(String, u64)], tids: &[i32]) -> io::Result<CallCounts> {
        Self::open(tracepoints, tids)
    }

    /// Turns every event on or off (an event opened [`CallCounts::threads`] starts on).
    pub fn set_enabled(&self, on: bool) -> io::Result<()> {
        crate::ktrace::set_enabled(self.fds.iter().flatten(), on)
    }

    /// How many events it holds.
    pub fn events(&self) -> usize {
        self.fds.iter().map(Vec::len).sum()
    }

    /// Each call's count so far (its tasks still running and those that ended, which the
    /// kernel folds into the event they inherited from), the calls never made left out.
    pub fn read(&self) -> Vec<(String, u64)> {
        self.names
            .iter()
            .zip(&self.fds)
            .map(|(name, fds)| (name.clone(), fds.iter().map(read_count).sum::<u64>()))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

fn read_count(fd: &OwnedFd) -> u64 {
    let mut v = 0u64;
    // SAFETY: reads 8 bytes into v, 8 bytes long and writable.
    let n = unsafe { libc::read(fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    if n == 8 {
        v
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_numbered_by_its_name() {
        assert_eq!(number("getppid"), Some(libc::SYS_getppid as u32));
        assert_eq!(number("no_such_call"), None);
    }

    /// A command started after `on_exec` is counted from its exec on, its creator never.
    #[test]
    fn a_command_started_after_opening_is_counted_and_its_creator_is_not() {
        let fs = match Tracefs::open() {
            Ok(fs) => fs,
            Err(e) => return crate::skip::skip(&format!("needs tracefs: {}", e.0)),
        };
        let want: Vec<(String, u64)> = enter_tracepoints(&fs)
            .expect("syscalls tracepoints")
            .into_iter()
            .filter(|(n, _)| ["getsid", "execve", "exit_group"].contains(&n.as_str()))
            .collect();
        assert_eq!(want.len(), 3, "{want:?}");
        let counts = match CallCounts::on_exec(&want) {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                return crate::skip::skip(&format!("needs perf tracepoints: {e}"));
            }
            Err(e) => panic!("{e}"),
        };
        // SAFETY: getsid(0) reads the calling process's session id.
        unsafe { libc::getsid(0) };
        // sh executes /bin/true in its own process: one execve after its own exec turned the
        // events on (that first execve entered before), and one exit_group.
        let status = std::process::Command::new("/bin/sh")
            .args(["-c", "exec /bin/true"])
            .status()
            .expect("sh ran");
        assert!(status.success());
        // SAFETY: as above.
        unsafe { libc::getsid(0) };
        let got = counts.read();
        let of = |name: &str| got.iter().find(|(n, _)| n == name).map_or(0, |c| c.1);
        assert_eq!(of("getsid"), 0, "the creator's calls counted: {got:?}");
        assert_eq!(of("execve"), 1, "{got:?}");
        assert_eq!(of("exit_group"), 1, "{got:?}");
    }
}

//! A user's command started as a shell would start it, for the bill: its terminal and
//! standard streams untouched, moved into a cgroup before it executes, every descendant
//! reaped by this process (a child subreaper), and the resource usage of all of them read
//! once they ended. Also the same readings of a process that is not a child (`/proc`).

use crate::last_error;
use crate::seccomp::Program;
use perf_event_open_sys as perf;
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;

/// Makes this process the reaper of its orphaned descendants, so their usage is counted in
/// its `RUSAGE_CHILDREN` when it reaps them.
pub fn become_subreaper() -> io::Result<()> {
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER, 1) takes no pointers.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(last_error("prctl(PR_SET_CHILD_SUBREAPER)"));
    }
    Ok(())
}

/// How a command is born, beyond a shell's way: what its process does to itself just before
/// it executes the command, and the namespaces it is born in.
#[derive(Debug, Clone, Copy, Default)]
pub struct Birth<'a> {
    /// A seccomp filter installed (with `no_new_privs`) just before exec.
    pub filter: Option<&'a Program>,
    /// `CLONE_NEW*` flags the child is born with (0: none; [`spawn_into`] only).
    pub namespaces: i32,
    /// The CPUs the command may run on, set (`sched_setaffinity`) just before exec, before
    /// any filter is installed.
    pub cpus: Option<&'a [usize]>,
}

/// Starts `argv` with this process's standard streams; when `procs` is given (a cgroup's
/// `cgroup.procs`, open for writing), the child moves itself into that cgroup before it
/// executes the command, so every event of the command is the cgroup's. `birth`'s filter and
/// CPUs are applied in the child just before exec (its namespaces are [`spawn_into`]'s).
pub fn spawn(
    argv: &[OsString],
    procs: Option<&File>,
    birth: &Birth,
) -> io::Result<std::process::Child> {
    let (first, rest) = argv
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no command given"))?;
    let mut cmd = std::process::Command::new(first);
    cmd.args(rest);
    if let Some(f) = procs {
        let fd = f.as_raw_fd();
        // SAFETY: the closure only calls write(2) on a descriptor the parent holds open and
        // builds an io::Error from errno: both async-signal-safe, as a forked child needs.
        unsafe {
            cmd.pre_exec(move || {
                // "0" moves the writing process (cgroup v2).
                if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            })
        };
    }
    if let Some(cpus) = birth.cpus {
        let set = crate::cpu_set(cpus)?;
        // SAFETY: the closure makes one system call on a set it owns and builds an io::Error
        // from errno: async-signal-safe, as a forked child needs.
        unsafe {
            cmd.pre_exec(move || {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            })
        };
    }
    if let Some(p) = birth.filter.cloned() {
        // SAFETY: the closure makes two raw system calls on memory it owns and builds an
        // io::Error from errno: async-signal-safe, as a forked child needs.
        unsafe {
            cmd.pre_exec(move || {
                if crate::seccomp::install_now(&p) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            })
        };
    }
    cmd.spawn()
}

/// The paths `execvp` would try for `program`: itself when it names a path, else each
/// directory of `PATH` (an empty one meaning the working directory) joined to it.
fn candidates(program: &std::ffi::OsStr) -> Vec<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    if program.as_bytes().contains(&b'/') {
        return vec![program.into()];
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    path.as_bytes()
        .split(|&b| b == b':')
        .map(|d| {
            let d = if d.is_empty() { b"." as &[u8] } else { d };
            std::path::Path::new(std::ffi::OsStr::from_bytes(d)).join(program)
        })
        .collect()
}

/// Starts `argv` as [`spawn`] does, but born inside the cgroup whose directory `cgroup` is
/// (`clone3` with `CLONE_INTO_CGROUP`, Linux 5.7): every event of the child, from its first,
/// is the cgroup's, so the kernel's per-cgroup counts and its own accounting of the child
/// cover the same events. Returns the child's pid; a command that cannot be executed is an
/// error of its `execve` (`NotFound`, `PermissionDenied`), the child already reaped. `Ok(None)`:
/// this kernel has no `clone3` or no `CLONE_INTO_CGROUP` (use [`spawn`]). `birth`'s CPUs and
/// filter as [`spawn`]; its namespaces (`CLONE_NEW*` flags, 0 for none) have the child born in
/// new namespaces too, as a container runtime starts one.
pub fn spawn_into(argv: &[OsString], cgroup: &File, birth: &Birth) -> io::Result<Option<i32>> {
    let (filter, namespaces) = (birth.filter, birth.namespaces);
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let cstr = |b: &[u8]| {
        CString::new(b).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte"))
    };
    let (first, _) = argv
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no command given"))?;
    // Everything the child needs is made here: between clone3 and execve it may only make
    // async-signal-safe calls (this process has other threads).
    let paths = candidates(first)
        .iter()
        .map(|p| cstr(p.as_os_str().as_bytes()))
        .collect::<io::Result<Vec<_>>>()?;
    let args = argv
        .iter()
        .map(|a| cstr(a.as_bytes()))
        .collect::<io::Result<Vec<_>>>()?;
    let env = std::env::vars_os()
        .map(|(k, v)| {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            cstr(&kv)
        })
        .collect::<io::Result<Vec<_>>>()?;
    let mut arg_ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    arg_ptrs.push(std::ptr::null());
    let mut env_ptrs: Vec<*const libc::c_char> = env.iter().map(|a| a.as_ptr()).collect();
    env_ptrs.push(std::ptr::null());
    let cpus = birth.cpus.map(crate::cpu_set).transpose()?;
    let mut fds = [0; 2];
    // SAFETY: fds is two writable ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(last_error("pipe2"));
    }
    // SAFETY: both were just returned by the kernel and are owned by no one else.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // struct clone_args: flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size,
    // tls, set_tid, set_tid_size, cgroup (Linux 5.7: 88 bytes).
    let mut ca = [0u64; 11];
    ca[0] = 0x2_0000_0000 | namespaces as u32 as u64; // CLONE_INTO_CGROUP
    ca[4] = libc::SIGCHLD as u64;
    ca[10] = cgroup.as_raw_fd() as u64;
    // SAFETY: ca is a valid clone_args of the size passed; without CLONE_VM the child gets a
    // copy of this address space and returns here with 0, as from fork.
    let pid = unsafe { libc::syscall(libc::SYS_clone3, ca.as_mut_ptr(), 88usize) };
    if pid < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOSYS) | Some(libc::E2BIG) | Some(libc::EINVAL) => Ok(None),
            _ => Err(io::Error::new(e.kind(), format!("clone3: {e}"))),
        };
    }
    if pid == 0 {
        // The child: only async-signal-safe calls until execve or _exit.
        // SAFETY: sigset is plain data; the calls take valid pointers to it and to the CPU
        // set, strings and arrays built before the clone, which this copy of memory still holds.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
            if let Some(c) = &cpus {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), c) != 0 {
                    let e = *libc::__errno_location();
                    libc::write(wr.as_raw_fd(), (&e as *const i32).cast(), 4);
                    libc::_exit(127);
                }
            }
            if let Some(p) = filter {
                if crate::seccomp::install_now(p) != 0 {
                    let e = *libc::__errno_location();
                    libc::write(wr.as_raw_fd(), (&e as *const i32).cast(), 4);
                    libc::_exit(127);
                }
            }
            let mut err = libc::ENOENT;
            for p in &paths {
                libc::execve(p.as_ptr(), arg_ptrs.as_ptr(), env_ptrs.as_ptr());
                let e = *libc::__errno_location();
                // As execvp: a path that is not there lets the next one be tried; any other
                // error is the one to report if nothing runs.
                if e != libc::ENOENT && e != libc::ENOTDIR {
                    err = e;
                }
            }
            libc::write(wr.as_raw_fd(), (&err as *const i32).cast(), 4);
            libc::_exit(127);
        }
    }
    drop(wr);
    let pid = pid as i32;
    let mut err = 0i32;
    // The read ends with 0 bytes when the child's copy of the write end closed on execve.
    let n = loop {
        // SAFETY: reads at most 4 bytes into err, 4 bytes long and writable.
        let n = unsafe { libc::read(rd.as_raw_fd(), (&mut err as *mut i32).cast(), 4) };
        if n >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            break n;
        }
    };
    if n == 4 {
        let _ = reap(pid);
        return Err(io::Error::from_raw_os_error(err));
    }
    Ok(Some(pid))
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this status.
    Exited(i32),
    /// A signal killed it.
    Killed(i32),
}

impl Ended {
    fn from_status(s: libc::c_int) -> Ended {
        if libc::WIFSIGNALED(s) {
            Ended::Killed(libc::WTERMSIG(s))
        } else {
            Ended::Exited(libc::WEXITSTATUS(s))
        }
    }
}

/// Waits for `pid` to end without reaping it (`waitid(WNOWAIT)`): its `/proc` entry stays
/// readable until [`reap`]. Retries when a signal interrupts the wait.
pub fn wait_unreaped(pid: i32) -> io::Result<()> {
    loop {
        // SAFETY: siginfo_t is plain data; zeroed is valid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: info is writable; WNOWAIT leaves the child waitable.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(io::Error::new(e.kind(), format!("waitid: {e}")));
        }
    }
}

/// Reaps `pid` (after [`wait_unreaped`]) and says how it ended.
pub fn reap(pid: i32) -> io::Result<Ended> {
    let mut status = 0;
    loop {
        // SAFETY: status is a writable int.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return Ok(Ended::from_status(status));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(io::Error::new(e.kind(), format!("waitpid: {e}")));
        }
    }
}

/// Reaps every descendant that already ended (orphans handed to this subreaper); returns
/// how many, and whether some are still running.
pub fn reap_ended() -> (usize, bool) {
    let mut n = 0;
    loop {
        let mut status = 0;
        // SAFETY: status is a writable int.
        let r = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        match r {
            0 => return (n, true),
            r if r > 0 => n += 1,
            _ => return (n, false),
        }
    }
}

/// Sends `sig` to `pid`; a process already gone is not an error.
pub fn signal(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: kill takes no pointers.
    if unsafe { libc::kill(pid, sig) } != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ESRCH) {
            return Err(e);
        }
    }
    Ok(())
}

/// What `getrusage` says of a set of tasks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rusage {
    /// Time in user mode, ns.
    pub user_ns: u64,
    /// Time in the kernel, ns.
    pub system_ns: u64,
    /// Page faults served without I/O.
    pub minor_faults: u64,
    /// Page faults that read from a device.
    pub major_faults: u64,
    /// Switches away while blocking.
    pub voluntary: u64,
    /// Switches away while runnable.
    pub involuntary: u64,
    /// The largest resident set of any one of them, KiB.
    pub max_rss_kib: u64,
}

impl Rusage {
    /// What was counted since `earlier` (the largest resident set kept as it is).
    pub fn since(&self, earlier: &Rusage) -> Rusage {
        Rusage {
            user_ns: self.user_ns.saturating_sub(earlier.user_ns),
            system_ns: self.system_ns.saturating_sub(earlier.system_ns),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
            voluntary: self.voluntary.saturating_sub(earlier.voluntary),
            involuntary: self.involuntary.saturating_sub(earlier.involuntary),
            max_rss_kib: self.max_rss_kib,
        }
    }
}

/// The usage of every descendant reaped so far (`RUSAGE_CHILDREN`).
pub fn children_rusage() -> Rusage {
    // SAFETY: rusage is plain data; zeroed is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid, writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    Rusage {
        user_ns: ns(ru.ru_utime),
        system_ns: ns(ru.ru_stime),
        minor_faults: ru.ru_minflt as u64,
        major_faults: ru.ru_majflt as u64,
        voluntary: ru.ru_nvcsw as u64,
        involuntary: ru.ru_nivcsw as u64,
        max_rss_kib: ru.ru_maxrss as u64,
    }
}

/// A count of `raw_syscalls:sys_enter` by `perf_event_open`, independent of BPF: over a
/// cgroup on every CPU, or over threads and what they create after it was opened.
pub struct CallCounter {
    fds: Vec<OwnedFd>,
}

impl CallCounter {
    /// Counts the calls of every task in the cgroup whose directory is `cgroup` (open), on
    /// each CPU of `cpus`; `id` is the tracepoint's id.
    pub fn cgroup(id: u64, cgroup: &File, cpus: &[usize]) -> io::Result<CallCounter> {
        let fds = cpus
            .iter()
            .map(|&c| {
                crate::syscount::open_tracepoint(
                    id,
                    cgroup.as_raw_fd(),
                    c as i32,
                    false,
                    perf::bindings::PERF_FLAG_PID_CGROUP as libc::c_ulong,
                )
            })
            .collect::<io::Result<Vec<_>>>()?;
        Ok(CallCounter { fds })
    }

    /// Counts the calls of threads `tids` and of the tasks they create from now on.
    pub fn threads(id: u64, tids: &[i32]) -> io::Result<CallCounter> {
        let fds = tids
            .iter()
            .map(|&t| crate::syscount::open_tracepoint(id, t, -1, true, 0))
            .collect::<io::Result<Vec<_>>>()?;
        Ok(CallCounter { fds })
    }

    /// Counts the calls of the command the calling thread starts next, from its `execve` on,
    /// and of every task it creates (see [`crate::syscount::CallCounts::on_exec`]).
    pub fn on_exec(id: u64) -> io::Result<CallCounter> {
        Ok(CallCounter {
            fds: vec![crate::syscount::open_tracepoint(id, 0, -1, true, 0)?],
        })
    }

    /// The calls counted so far.
    pub fn read(&self) -> u64 {
        self.fds
            .iter()
            .map(|fd| {
                let mut v = 0u64;
                // SAFETY: reads 8 bytes into v, 8 bytes long and writable.
                let n = unsafe { libc::read(fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
                if n == 8 {
                    v
                } else {
                    0
                }
            })
            .sum()
    }
}

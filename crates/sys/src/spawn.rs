//! Creating one task and waiting for it to end, for the `spawn` experiment: fork, vfork (as
//! `clone(CLONE_VM | CLONE_VFORK)`), posix_spawn, fork + execve, and a POSIX thread; the
//! touched parent memory whose page tables a fork copies; and the minimal static helper
//! program the exec cases start.
//!
//! A forked child here calls only `_exit`, or `execve` and `_exit` if that fails: no
//! allocation, no lock, no unwinding, no return into Rust code. That is sound even in a
//! process with other threads (a child of a multi-threaded process may only make
//! async-signal-safe calls, and these are), though the experiment creates them from its
//! single-threaded measuring process so that the figure is the one-task cost. Every child is
//! waited for by its own pid, never by "any child", so nothing else this process started can
//! be reaped by mistake.

use crate::last_error;
use std::ffi::{c_char, c_int, c_void, CString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::NonNull;

/// Exit status of a fork + execve child whose execve failed (the shell's "cannot execute").
const EXEC_FAILED: c_int = 127;

/// Stack of the vfork child: it runs one call (`_exit`) on it, so a few hundred bytes would
/// do; one small mapping made once per [`Creator`] and reused.
const VFORK_STACK_BYTES: usize = 64 * 1024;

/// The helper's bytes as the build made them (empty when it could not).
const EXIT0: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/exit0"));
/// Why the build could not make the helper (empty when it could).
const EXIT0_REASON: &str = env!("OSCOST_EXIT0_REASON");

/// The static helper program: `helper/exit0.c` (whose whole code is `exit_group(0)`) built with
/// `cc -static -nostdlib` when oscost was built, or why the toolchain could not build it.
pub fn static_helper() -> Result<&'static [u8], &'static str> {
    if EXIT0.is_empty() {
        Err(if EXIT0_REASON.is_empty() {
            "the build did not make it"
        } else {
            EXIT0_REASON
        })
    } else {
        Ok(EXIT0)
    }
}

/// How a task is created and waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `fork`; the child calls `_exit(0)`; `waitpid`.
    Fork,
    /// `clone(CLONE_VM | CLONE_VFORK | SIGCHLD)` (what `vfork` does) on a stack of its own; the
    /// child calls `_exit(0)`; `waitpid`.
    Vfork,
    /// `posix_spawn` of a program; `waitpid`.
    PosixSpawn,
    /// `fork`; the child calls `execve` of a program; `waitpid`.
    ForkExec,
    /// `pthread_create` (64 KiB stack) of a thread that returns at once; `pthread_join`.
    Thread,
}

impl Method {
    /// Whether the method starts a program (and so needs one).
    pub fn execs(self) -> bool {
        matches!(self, Method::PosixSpawn | Method::ForkExec)
    }

    fn call(self) -> &'static str {
        match self {
            Method::Fork | Method::ForkExec => "fork",
            Method::Vfork => "clone(CLONE_VM|CLONE_VFORK)",
            Method::PosixSpawn => "posix_spawn",
            Method::Thread => "pthread_create",
        }
    }
}

/// A program to start, with its argument and environment vectors built before any fork so a
/// child only reads them. The environment is empty: what the caller's environment holds would
/// otherwise be part of the figure.
struct Program {
    path: CString,
    /// `[path, NULL]`: points into `path`'s heap buffer, which does not move when the
    /// `CString` value does.
    argv: [*mut c_char; 2],
    envp: [*mut c_char; 1],
    shown: String,
}

impl Program {
    fn new(path: &Path) -> io::Result<Program> {
        let path_c = CString::new(path.as_os_str().as_bytes()).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "program path holds a NUL byte")
        })?;
        let argv0 = path_c.as_ptr().cast_mut();
        Ok(Program {
            path: path_c,
            argv: [argv0, std::ptr::null_mut()],
            envp: [std::ptr::null_mut()],
            shown: path.display().to_string(),
        })
    }
}

/// Anonymous private memory, unmapped on drop.
struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mapping {
    fn new(len: usize) -> io::Result<Mapping> {
        let len = len.max(1);
        Ok(Mapping {
            ptr: crate::map_anonymous(len, false)?,
            len,
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping made in `new`, unmapped once; nothing borrows into it
        // beyond the owner's life (a vfork child that ran on it has ended before `once`
        // returned).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// The vfork child's whole life.
extern "C" fn vfork_child(_: *mut c_void) -> c_int {
    // SAFETY: _exit (exit_group) ends the child at once; it touches none of the parent's
    // memory, which the child shares.
    unsafe { libc::_exit(0) }
}

/// The thread's whole life.
extern "C" fn thread_body(_: *mut c_void) -> *mut c_void {
    std::ptr::null_mut()
}

/// Creates tasks one at a time by one [`Method`] and waits for each to end, counting them.
/// Not `Send`: it is used by the thread that made it.
pub struct Creator {
    method: Method,
    program: Option<Program>,
    stack: Option<Mapping>,
    attr: Option<Box<libc::pthread_attr_t>>,
    created: u64,
    waited: u64,
}

impl Creator {
    /// A creator for `method`; `program` is the program [`Method::PosixSpawn`] and
    /// [`Method::ForkExec`] start (ignored by the others).
    pub fn new(method: Method, program: Option<&Path>) -> io::Result<Creator> {
        let program = if method.execs() {
            let p = program.ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, "no program to start")
            })?;
            Some(Program::new(p)?)
        } else {
            None
        };
        let stack = (method == Method::Vfork)
            .then(|| Mapping::new(VFORK_STACK_BYTES))
            .transpose()?;
        let attr = if method == Method::Thread {
            // SAFETY: pthread_attr_t is plain data; pthread_attr_init initialises it.
            let mut attr: Box<libc::pthread_attr_t> = Box::new(unsafe { std::mem::zeroed() });
            // SAFETY: attr points to writable pthread_attr_t storage.
            let r = unsafe { libc::pthread_attr_init(&mut *attr) };
            if r != 0 {
                return Err(io::Error::from_raw_os_error(r));
            }
            // SAFETY: attr was initialised above.
            let r = unsafe {
                libc::pthread_attr_setstacksize(&mut *attr, crate::task::THREAD_STACK_BYTES)
            };
            if r != 0 {
                // SAFETY: initialised above, destroyed once.
                unsafe { libc::pthread_attr_destroy(&mut *attr) };
                return Err(io::Error::from_raw_os_error(r));
            }
            Some(attr)
        } else {
            None
        };
        Ok(Creator {
            method,
            program,
            stack,
            attr,
            created: 0,
            waited: 0,
        })
    }

    /// The method.
    pub fn method(&self) -> Method {
        self.method
    }

    /// Tasks created so far.
    pub fn created(&self) -> u64 {
        self.created
    }

    /// Tasks waited for (reaped, or joined) so far, however they ended.
    pub fn waited(&self) -> u64 {
        self.waited
    }

    /// Creates one task and waits for it to end. `Ok` only when it was created, waited for
    /// and ended with status 0. `index` (1-based) and `total` name it in a limit error: EAGAIN
    /// becomes a [`crate::task::LimitError`] naming RLIMIT_NPROC, ENOMEM one naming memory.
    /// On every error the task, if it was created, has been waited for.
    #[inline]
    pub fn once(&mut self, index: usize, total: usize) -> anyhow::Result<()> {
        match self.method {
            Method::Fork => self.fork(index, total),
            Method::Vfork => self.vfork(index, total),
            Method::PosixSpawn => self.posix_spawn(index, total),
            Method::ForkExec => self.fork_exec(index, total),
            Method::Thread => self.thread(index, total),
        }
    }

    #[cold]
    #[inline(never)]
    fn create_error(&self, err: io::Error, index: usize, total: usize) -> anyhow::Error {
        crate::task::spawn_error(err, index, total, self.method.call())
    }

    fn fork(&mut self, index: usize, total: usize) -> anyhow::Result<()> {
        // SAFETY: the child calls only _exit, which is async-signal-safe: no allocation, no
        // lock, no unwinding, no return into the parent's Rust code.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: see above; ends the child.
            unsafe { libc::_exit(0) }
        }
        if pid < 0 {
            return Err(self.create_error(io::Error::last_os_error(), index, total));
        }
        self.created += 1;
        self.reap(pid)
    }

    fn vfork(&mut self, index: usize, total: usize) -> anyhow::Result<()> {
        let Some(stack) = &self.stack else {
            anyhow::bail!("no stack for the vfork child");
        };
        // The stack grows down: the child starts at the top of its mapping (page aligned, so
        // 16-byte aligned as the ABI wants).
        // SAFETY: len is the mapping's length, so the pointer is one past its end, in bounds
        // for `add`.
        let top = unsafe { stack.ptr.as_ptr().add(stack.len) };
        // SAFETY: CLONE_VM | CLONE_VFORK is vfork on a stack of the child's own: the child
        // shares this address space but runs only `vfork_child` on its own stack, which calls
        // _exit at once, so it writes none of the parent's memory (not even the parent's
        // stack, as a plain vfork child would). CLONE_VFORK suspends this thread until the
        // child has exited, so nothing runs concurrently on shared memory, and the stack is
        // not reused or unmapped while the child is on it. A signal the child takes runs the
        // process's handlers on the child's stack; oscost's handlers only set an atomic flag,
        // which is harmless. Without CLONE_THREAD or CLONE_SETTLS the kernel gives the child
        // no rseq area, as for vfork.
        let pid = unsafe {
            libc::clone(
                vfork_child,
                top.cast(),
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                std::ptr::null_mut(),
            )
        };
        if pid < 0 {
            return Err(self.create_error(io::Error::last_os_error(), index, total));
        }
        self.created += 1;
        self.reap(pid)
    }

    fn posix_spawn(&mut self, index: usize, total: usize) -> anyhow::Result<()> {
        let Some(p) = &self.program else {
            anyhow::bail!("no program to start");
        };
        let mut pid: libc::pid_t = 0;
        // SAFETY: pid is writable; path, argv and envp are NUL-terminated strings and
        // NULL-terminated arrays that live in `p` for the call's duration; no file actions or
        // attributes. glibc reaps the child itself when the exec fails and reports the error.
        let r = unsafe {
            libc::posix_spawn(
                &mut pid,
                p.path.as_ptr(),
                std::ptr::null(),
                std::ptr::null(),
                p.argv.as_ptr(),
                p.envp.as_ptr(),
            )
        };
        if r != 0 {
            return Err(self.exec_error(io::Error::from_raw_os_error(r), index, total));
        }
        self.created += 1;
        self.reap(pid)
    }

    fn fork_exec(&mut self, index: usize, total: usize) -> anyhow::Result<()> {
        let Some(p) = &self.program else {
            anyhow::bail!("no program to start");
        };
        let (path, argv, envp) = (p.path.as_ptr(), p.argv.as_ptr(), p.envp.as_ptr());
        // SAFETY: the child calls only execve and, if that fails, _exit: both async-signal-safe.
        // Its arguments were built before the fork and are only read.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: see above; execve replaces the child or returns, and _exit ends it.
            unsafe {
                libc::execve(path, argv.cast(), envp.cast());
                libc::_exit(EXEC_FAILED)
            }
        }
        if pid < 0 {
            return Err(self.create_error(io::Error::last_os_error(), index, total));
        }
        self.created += 1;
        self.reap(pid)
    }

    fn thread(&mut self, index: usize, total: usize) -> anyhow::Result<()> {
        let Some(attr) = &self.attr else {
            anyhow::bail!("no thread attributes");
        };
        // SAFETY: pthread_t is plain data, written by pthread_create.
        let mut t: libc::pthread_t = unsafe { std::mem::zeroed() };
        // SAFETY: t is writable; attr was initialised in `new`; the thread runs `thread_body`,
        // which touches nothing and returns; no argument.
        let r = unsafe { libc::pthread_create(&mut t, &**attr, thread_body, std::ptr::null_mut()) };
        if r != 0 {
            return Err(self.create_error(io::Error::from_raw_os_error(r), index, total));
        }
        self.created += 1;
        // SAFETY: t is the joinable thread just created, joined once; no result wanted.
        let r = unsafe { libc::pthread_join(t, std::ptr::null_mut()) };
        if r != 0 {
            anyhow::bail!("pthread_join: {}", io::Error::from_raw_os_error(r));
        }
        self.waited += 1;
        Ok(())
    }

    /// A failed posix_spawn: a limit, or the program that could not be started.
    #[cold]
    #[inline(never)]
    fn exec_error(&self, err: io::Error, index: usize, total: usize) -> anyhow::Error {
        match err.raw_os_error() {
            Some(libc::EAGAIN | libc::ENOMEM) => self.create_error(err, index, total),
            _ => {
                let shown = self.program.as_ref().map_or("", |p| p.shown.as_str());
                // The errno stays reachable (`root_cause`) for a caller that retries.
                anyhow::Error::new(err).context(format!("posix_spawn of {shown}"))
            }
        }
    }

    /// Waits for exactly `pid` and checks it ended with status 0.
    fn reap(&mut self, pid: libc::pid_t) -> anyhow::Result<()> {
        let mut status: c_int = 0;
        loop {
            // SAFETY: status is writable; pid is the child just created and not yet waited for.
            let r = unsafe { libc::waitpid(pid, &mut status, 0) };
            if r == pid {
                break;
            }
            let e = io::Error::last_os_error();
            if r < 0 && e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            anyhow::bail!("waitpid({pid}): {e}");
        }
        self.waited += 1;
        if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
            return Ok(());
        }
        Err(self.status_error(pid, status))
    }

    #[cold]
    #[inline(never)]
    fn status_error(&self, pid: libc::pid_t, status: c_int) -> anyhow::Error {
        let shown = self.program.as_ref().map_or("", |p| p.shown.as_str());
        if libc::WIFSIGNALED(status) {
            return anyhow::anyhow!(
                "child {pid} ({}) was killed by signal {}",
                self.method.call(),
                libc::WTERMSIG(status)
            );
        }
        let code = libc::WEXITSTATUS(status);
        if self.method == Method::ForkExec && code == EXEC_FAILED {
            return anyhow::anyhow!(
                "execve of {shown} failed in the child (exit status {EXEC_FAILED})"
            );
        }
        let what = if shown.is_empty() {
            self.method.call().to_owned()
        } else {
            shown.to_owned()
        };
        anyhow::anyhow!("child {pid} ({what}) exited with status {code}, not 0")
    }
}

impl Drop for Creator {
    fn drop(&mut self) {
        if let Some(attr) = &mut self.attr {
            // SAFETY: initialised in `new`, destroyed once; no thread uses it any more.
            unsafe { libc::pthread_attr_destroy(&mut **attr) };
        }
    }
}

/// Touched private memory of the parent: every page written once, so it is resident and has a
/// page-table entry that a fork must copy (and write-protect, for copy-on-write).
pub struct ParentMemory {
    map: Mapping,
    advised: bool,
}

impl ParentMemory {
    /// Maps `bytes` of private anonymous memory, advises the kernel to back it with
    /// transparent huge pages (`huge_pages`, MADV_HUGEPAGE) or not (MADV_NOHUGEPAGE), and
    /// writes one byte in every page.
    pub fn new(bytes: usize, huge_pages: bool) -> io::Result<ParentMemory> {
        let map = Mapping::new(bytes)?;
        let advice = if huge_pages {
            libc::MADV_HUGEPAGE
        } else {
            libc::MADV_NOHUGEPAGE
        };
        // SAFETY: the range is exactly the mapping just made; advice changes no contents.
        let advised = unsafe { libc::madvise(map.ptr.as_ptr().cast(), map.len, advice) } == 0;
        let page = crate::sysinfo::page_size();
        let base = map.ptr.as_ptr();
        for off in (0..map.len).step_by(page) {
            // SAFETY: off < len, inside the mapping this value owns; volatile so the write
            // (which faults the page in) is not removed.
            unsafe { base.add(off).write_volatile(1) };
        }
        Ok(ParentMemory { map, advised })
    }

    /// Its size, bytes.
    pub fn len(&self) -> usize {
        self.map.len
    }

    /// Whether it is empty (never: a mapping holds at least one byte).
    pub fn is_empty(&self) -> bool {
        self.map.len == 0
    }

    /// Whether the kernel accepted the huge-page advice (it refuses it when it has no
    /// transparent huge pages).
    pub fn advised(&self) -> bool {
        self.advised
    }
}

/// What `getrusage` counted for a task or set of tasks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Voluntary context switches (blocked).
    pub voluntary: u64,
    /// Involuntary context switches (preempted).
    pub involuntary: u64,
    /// Minor page faults (no I/O: a copy-on-write copy, a zero page, a page-table update).
    pub minor_faults: u64,
    /// Major page faults (the page read from a device).
    pub major_faults: u64,
}

impl Usage {
    /// What was counted since `earlier`.
    pub fn since(&self, earlier: Usage) -> Usage {
        Usage {
            voluntary: self.voluntary.saturating_sub(earlier.voluntary),
            involuntary: self.involuntary.saturating_sub(earlier.involuntary),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
        }
    }

    /// Adds `other`.
    pub fn add(&mut self, other: Usage) {
        self.voluntary += other.voluntary;
        self.involuntary += other.involuntary;
        self.minor_faults += other.minor_faults;
        self.major_faults += other.major_faults;
    }
}

fn usage(who: c_int) -> Usage {
    // SAFETY: rusage is plain data; zeroed is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid, writable rusage; `who` is one of the RUSAGE_* constants.
    unsafe { libc::getrusage(who, &mut ru) };
    Usage {
        voluntary: ru.ru_nvcsw as u64,
        involuntary: ru.ru_nivcsw as u64,
        minor_faults: ru.ru_minflt as u64,
        major_faults: ru.ru_majflt as u64,
    }
}

/// The calling thread's usage so far (`RUSAGE_THREAD`).
pub fn thread_usage() -> Usage {
    usage(libc::RUSAGE_THREAD)
}

/// The usage of every child waited for so far (`RUSAGE_CHILDREN`): a child counts once it has
/// been reaped.
pub fn children_usage() -> Usage {
    usage(libc::RUSAGE_CHILDREN)
}

/// Whether this process has a child not yet waited for, running or ended, found without
/// reaping it (`waitid(P_ALL, WNOHANG | WNOWAIT)`).
pub fn has_unwaited_children() -> io::Result<bool> {
    // SAFETY: siginfo_t is plain data; zeroed is valid.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: info is writable; WNOWAIT leaves any child it finds in its waitable state.
    let r = unsafe {
        libc::waitid(
            libc::P_ALL,
            0,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    if r == 0 {
        // A child exists: an ended one is reported, a running one leaves si_pid 0.
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ECHILD) {
        Ok(false)
    } else {
        Err(last_error("waitid"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gone(pid: i32) -> bool {
        // SAFETY: getpid has no arguments.
        let me = unsafe { libc::getpid() };
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                let rest = &s[s.rfind(')')? + 2..];
                rest.split_whitespace().nth(1)?.parse::<i32>().ok()
            })
            != Some(me)
    }

    #[test]
    fn every_method_creates_and_waits() {
        for method in [Method::Fork, Method::Vfork, Method::Thread] {
            let mut c = Creator::new(method, None).unwrap();
            for i in 0..20 {
                c.once(i + 1, 20).unwrap();
            }
            assert_eq!((c.created(), c.waited()), (20, 20), "{method:?}");
        }
        for method in [Method::PosixSpawn, Method::ForkExec] {
            let mut c = Creator::new(method, Some(Path::new("/bin/true"))).unwrap();
            for i in 0..5 {
                c.once(i + 1, 5).unwrap();
            }
            assert_eq!((c.created(), c.waited()), (5, 5), "{method:?}");
        }
    }

    #[test]
    fn a_program_that_cannot_start_is_named_and_its_child_reaped() {
        let missing = Path::new("/nonexistent/oscost-helper");
        let mut c = Creator::new(Method::ForkExec, Some(missing)).unwrap();
        let e = c.once(1, 1).unwrap_err().to_string();
        assert_eq!(
            e,
            "execve of /nonexistent/oscost-helper failed in the child (exit status 127)"
        );
        assert_eq!((c.created(), c.waited()), (1, 1));
        let mut c = Creator::new(Method::PosixSpawn, Some(missing)).unwrap();
        let e = format!("{:#}", c.once(1, 1).unwrap_err());
        assert!(
            e.starts_with("posix_spawn of /nonexistent/oscost-helper: No such file"),
            "{e}"
        );
        assert_eq!(c.created(), 0);
        // A child that ends with another status is reaped and named.
        let mut c = Creator::new(Method::ForkExec, Some(Path::new("/bin/false"))).unwrap();
        let e = c.once(1, 1).unwrap_err().to_string();
        assert!(e.contains("exited with status 1, not 0"), "{e}");
        let pid: i32 = e
            .strip_prefix("child ")
            .and_then(|s| s.split_whitespace().next())
            .and_then(|s| s.parse().ok())
            .unwrap();
        assert!(gone(pid), "child {pid} left");
        assert!(Creator::new(Method::PosixSpawn, None).is_err());
    }

    #[test]
    fn a_limit_becomes_the_limit_error() {
        let c = Creator::new(Method::Fork, None).unwrap();
        let e = c.create_error(io::Error::from_raw_os_error(libc::EAGAIN), 3, 90);
        let msg = e.to_string();
        assert!(
            msg.starts_with(
                "cannot create task 3 of 90: the process limit was reached (RLIMIT_NPROC soft="
            ),
            "{msg}"
        );
        assert!(msg.contains("`ulimit -u`"), "{msg}");
        assert!(e.downcast_ref::<crate::task::LimitError>().is_some());
        let t = Creator::new(Method::Thread, None).unwrap();
        let e = t.create_error(io::Error::from_raw_os_error(libc::EAGAIN), 1, 5);
        assert!(e.downcast_ref::<crate::task::LimitError>().is_some());
        let e = t.create_error(io::Error::from_raw_os_error(libc::EINVAL), 1, 5);
        assert!(e.to_string().contains("pthread_create"), "{e}");
    }

    #[test]
    fn parent_memory_is_mapped_and_touched() {
        // Other tests run alongside, so the process's RSS says little; the experiment records
        // it from a single-threaded process.
        let m = ParentMemory::new(8 << 20, false).unwrap();
        assert_eq!(m.len(), 8 << 20);
        assert!(!m.is_empty());
        let m = ParentMemory::new(0, true).unwrap();
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn usage_counts_a_reaped_child() {
        let before = children_usage();
        let mut c = Creator::new(Method::ForkExec, Some(Path::new("/bin/true"))).unwrap();
        c.once(1, 1).unwrap();
        let d = children_usage().since(before);
        assert!(d.minor_faults > 0, "{d:?}");
    }

    #[test]
    fn the_static_helper_is_built_or_explained() {
        match static_helper() {
            Ok(bytes) => assert!(bytes.starts_with(b"\x7fELF")),
            Err(reason) => assert!(!reason.is_empty()),
        }
    }
}

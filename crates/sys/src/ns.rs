//! Namespaces: a child process that makes new ones, optionally brings a network namespace's
//! loopback up or checks it runs in new ones, and ends; the parent waits for it.
//!
//! The child is made with the raw `clone` system call, fork-like (no new stack), so the bare
//! child, the child that calls `unshare` and the child cloned straight into new namespaces all
//! take the same path; it makes only raw calls and `_exit`s, so it never allocates or locks.
//! Its exit status says what happened: 0 done, an errno from `unshare`, or one of the codes
//! below for the loopback and the checks.

use std::ffi::CStr;
use std::io;

/// A namespace kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Mount points (`CLONE_NEWNS`).
    Mount,
    /// Host and domain name (`CLONE_NEWUTS`).
    Uts,
    /// System V IPC and POSIX message queues (`CLONE_NEWIPC`).
    Ipc,
    /// Process ids, for the children made after (`CLONE_NEWPID`).
    Pid,
    /// Network devices, addresses, ports (`CLONE_NEWNET`).
    Net,
    /// User and group ids, capabilities (`CLONE_NEWUSER`).
    User,
    /// The cgroup root seen (`CLONE_NEWCGROUP`).
    Cgroup,
    /// The monotonic and boot clocks' offsets, for the children made after (`CLONE_NEWTIME`).
    Time,
}

/// A container runtime's set: what `ns.container`'s child is cloned into and what
/// `oscost bill --under container` runs a command in (no user namespace: made by root).
pub const CONTAINER: [Kind; 6] = [
    Kind::Mount,
    Kind::Uts,
    Kind::Ipc,
    Kind::Pid,
    Kind::Net,
    Kind::Cgroup,
];

/// The `CLONE_NEW*` flags of `kinds`, or-ed.
pub fn flags(kinds: &[Kind]) -> i32 {
    kinds.iter().fold(0, |f, k| f | k.flag())
}

impl Kind {
    /// Every kind, in the order the kernel's `clone` documentation lists them.
    pub const ALL: [Kind; 8] = [
        Kind::Mount,
        Kind::Uts,
        Kind::Ipc,
        Kind::Pid,
        Kind::Net,
        Kind::User,
        Kind::Cgroup,
        Kind::Time,
    ];

    /// Its `CLONE_NEW*` flag.
    pub fn flag(self) -> i32 {
        match self {
            Kind::Mount => libc::CLONE_NEWNS,
            Kind::Uts => libc::CLONE_NEWUTS,
            Kind::Ipc => libc::CLONE_NEWIPC,
            Kind::Pid => libc::CLONE_NEWPID,
            Kind::Net => libc::CLONE_NEWNET,
            Kind::User => libc::CLONE_NEWUSER,
            Kind::Cgroup => libc::CLONE_NEWCGROUP,
            Kind::Time => libc::CLONE_NEWTIME,
        }
    }

    /// The flag's name, for messages.
    pub fn flag_name(self) -> &'static str {
        match self {
            Kind::Mount => "CLONE_NEWNS",
            Kind::Uts => "CLONE_NEWUTS",
            Kind::Ipc => "CLONE_NEWIPC",
            Kind::Pid => "CLONE_NEWPID",
            Kind::Net => "CLONE_NEWNET",
            Kind::User => "CLONE_NEWUSER",
            Kind::Cgroup => "CLONE_NEWCGROUP",
            Kind::Time => "CLONE_NEWTIME",
        }
    }

    /// The `/proc/self/ns` link that names the namespace a process made with `unshare` lives
    /// in: for PID and time namespaces, which only the children made after enter, the
    /// `_for_children` link.
    fn link(self, cloned: bool) -> &'static CStr {
        match (self, cloned) {
            (Kind::Mount, _) => c"/proc/self/ns/mnt",
            (Kind::Uts, _) => c"/proc/self/ns/uts",
            (Kind::Ipc, _) => c"/proc/self/ns/ipc",
            (Kind::Pid, true) => c"/proc/self/ns/pid",
            (Kind::Pid, false) => c"/proc/self/ns/pid_for_children",
            (Kind::Net, _) => c"/proc/self/ns/net",
            (Kind::User, _) => c"/proc/self/ns/user",
            (Kind::Cgroup, _) => c"/proc/self/ns/cgroup",
            (Kind::Time, true) => c"/proc/self/ns/time",
            (Kind::Time, false) => c"/proc/self/ns/time_for_children",
        }
    }
}

/// The inode of `path` (a namespace link), or `None` when it cannot be read (a kernel without
/// that kind).
fn inode(path: &CStr) -> Option<u64> {
    // SAFETY: an all-zero stat is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: path is NUL-terminated and st is writable.
    let r = unsafe { libc::stat(path.as_ptr(), &mut st) };
    (r == 0).then_some(st.st_ino)
}

/// How the child makes its namespaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recipe {
    /// `CLONE_NEW*` flags; 0: a bare child.
    pub flags: i32,
    /// Made by `clone` with the flags (the child starts in them, as a container runtime's
    /// first process does) rather than by `unshare` in the child.
    pub cloned: bool,
    /// Brings the new network namespace's loopback up (`SIOCSIFFLAGS` with `IFF_UP`).
    pub loopback_up: bool,
}

/// Exit code: bringing the loopback up failed.
const LOOPBACK_FAILED: i32 = 200;
/// Exit code: a namespace link had the parent's inode.
const SAME_NAMESPACE: i32 = 201;
/// Exit code: the loopback was not up when read back.
const LOOPBACK_DOWN: i32 = 202;

/// What became of one child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It made its namespaces (and did its checks) and ended.
    Done,
    /// `unshare` or `clone` refused, with this errno.
    Refused(i32),
    /// Bringing the loopback up failed.
    LoopbackFailed,
    /// A check failed: the child ran in its parent's namespace of a kind, or its loopback
    /// read down.
    CheckFailed,
    /// It ended another way (a signal, an unknown status): the raw wait status.
    Other(i32),
}

/// The parent's namespaces, read once: what a checking child compares its own with.
#[derive(Debug, Clone, Copy)]
pub struct Parent {
    inodes: [Option<u64>; 8],
}

impl Parent {
    /// Reads the calling process's namespace links, as a child made with `cloned` names them.
    pub fn read(cloned: bool) -> Parent {
        let mut inodes = [None; 8];
        for (i, k) in Kind::ALL.into_iter().enumerate() {
            // For the `_for_children` links the parent's own namespace is what they name too.
            inodes[i] = inode(k.link(cloned));
        }
        Parent { inodes }
    }
}

/// Brings `lo` up in the calling process's network namespace; reads it back when `check`.
/// Raw calls only: safe in a forked child.
fn loopback_up(check: bool) -> i32 {
    // SAFETY: socket has no memory arguments.
    let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if s < 0 {
        return LOOPBACK_FAILED;
    }
    // SAFETY: ifreq is plain data; all zeros is valid.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, &b) in ifr.ifr_name.iter_mut().zip(b"lo\0") {
        *d = b as libc::c_char;
    }
    // SAFETY: s is a socket and ifr a valid ifreq naming an interface; the kernel writes the
    // flags member of the union.
    let mut code = if unsafe { libc::ioctl(s, libc::SIOCGIFFLAGS, &mut ifr) } < 0 {
        LOOPBACK_FAILED
    } else {
        // SAFETY: SIOCGIFFLAGS filled the flags member.
        unsafe { ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short };
        // SAFETY: as above; the kernel reads the flags.
        if unsafe { libc::ioctl(s, libc::SIOCSIFFLAGS, &ifr) } < 0 {
            LOOPBACK_FAILED
        } else {
            0
        }
    };
    if code == 0 && check {
        // SAFETY: ifreq is plain data.
        let mut back: libc::ifreq = unsafe { std::mem::zeroed() };
        back.ifr_name = ifr.ifr_name;
        // SAFETY: as above.
        let up = unsafe { libc::ioctl(s, libc::SIOCGIFFLAGS, &mut back) } == 0
            // SAFETY: SIOCGIFFLAGS filled the flags member.
            && unsafe { back.ifr_ifru.ifru_flags } & libc::IFF_UP as libc::c_short != 0;
        if !up {
            code = LOOPBACK_DOWN;
        }
    }
    // SAFETY: s was opened above and is closed once.
    unsafe { libc::close(s) };
    code
}

/// Makes a grandchild and tells whether it was pid 1 (of a new PID namespace). Raw calls only.
fn first_child_is_init() -> bool {
    // SAFETY: the grandchild makes raw calls and _exits.
    let pid = unsafe { crate::raw::fork_like(0) };
    if pid == 0 {
        // SAFETY: getpid has no arguments; _exit ends the grandchild.
        unsafe { libc::_exit(i32::from(libc::getpid() != 1)) }
    }
    if pid < 0 {
        return false;
    }
    let mut status = 0;
    // SAFETY: status is writable; pid is this process's child.
    let r = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::__WALL) };
    r == pid as libc::pid_t && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
}

/// The forked child's whole life: raw calls, then `_exit`.
fn child(recipe: &Recipe, check: Option<&Parent>) -> ! {
    let mut code = 0;
    if !recipe.cloned && recipe.flags != 0 {
        // SAFETY: unshare takes flags only.
        if unsafe { libc::unshare(recipe.flags) } != 0 {
            code = io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(1)
                .clamp(1, 127);
        }
    }
    if code == 0 && recipe.loopback_up {
        code = loopback_up(check.is_some());
    }
    if let (0, Some(parent)) = (code, check) {
        for (i, k) in Kind::ALL.into_iter().enumerate() {
            if recipe.flags & k.flag() == 0 {
                continue;
            }
            // The pid_for_children link cannot be opened before the namespace has its first
            // process: that process is the check, pid 1 in it.
            if k == Kind::Pid && !recipe.cloned {
                if !first_child_is_init() {
                    code = SAME_NAMESPACE;
                }
                continue;
            }
            let own = inode(k.link(recipe.cloned));
            if own.is_none() || own == parent.inodes[i] {
                code = SAME_NAMESPACE;
            }
        }
    }
    // SAFETY: _exit ends the child without running the parent's exit handlers.
    unsafe { libc::_exit(code) }
}

/// Makes one child that follows `recipe` and waits for it to end; with `check`, the child also
/// compares each new namespace's link with the parent's (and reads the loopback back).
/// Call it from a single-threaded process: the child is a fork-like clone.
pub fn run_child(recipe: &Recipe, check: Option<&Parent>) -> io::Result<Outcome> {
    let flags = if recipe.cloned {
        recipe.flags as libc::c_long
    } else {
        0
    };
    // SAFETY: the child gets a copy of the address space and runs only `child`, raw calls
    // and _exit.
    let pid = unsafe { crate::raw::fork_like(flags) };
    if pid < 0 {
        let e = io::Error::last_os_error();
        return match (recipe.cloned, e.raw_os_error()) {
            (true, Some(errno)) if errno != libc::EAGAIN && errno != libc::ENOMEM => {
                Ok(Outcome::Refused(errno))
            }
            _ => Err(io::Error::new(e.kind(), format!("clone: {e}"))),
        };
    }
    if pid == 0 {
        child(recipe, check);
    }
    let pid = pid as libc::pid_t;
    let mut status = 0;
    loop {
        // SAFETY: status is writable; pid is our child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::__WALL) };
        if r == pid {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(io::Error::new(e.kind(), format!("waitpid: {e}")));
        }
    }
    Ok(if libc::WIFEXITED(status) {
        match libc::WEXITSTATUS(status) {
            0 => Outcome::Done,
            LOOPBACK_FAILED => Outcome::LoopbackFailed,
            SAME_NAMESPACE | LOOPBACK_DOWN => Outcome::CheckFailed,
            errno => Outcome::Refused(errno),
        }
    } else {
        Outcome::Other(status)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_child_ends_and_a_refused_flag_is_named() {
        let bare = Recipe {
            flags: 0,
            cloned: false,
            loopback_up: false,
        };
        assert_eq!(run_child(&bare, None).unwrap(), Outcome::Done);
        // A flag unshare does not take.
        let bogus = Recipe {
            flags: libc::CLONE_SETTLS,
            cloned: false,
            loopback_up: false,
        };
        assert_eq!(
            run_child(&bogus, None).unwrap(),
            Outcome::Refused(libc::EINVAL)
        );
    }

    #[test]
    fn a_new_namespace_has_its_own_link() {
        // Through a user namespace, so it runs as any user where the kernel allows them.
        let parent = Parent::read(false);
        let r = Recipe {
            flags: libc::CLONE_NEWUSER | libc::CLONE_NEWUTS,
            cloned: false,
            loopback_up: false,
        };
        match run_child(&r, Some(&parent)).unwrap() {
            Outcome::Done => {}
            Outcome::Refused(e) => eprintln!("user namespaces refused here (errno {e})"),
            o => panic!("{o:?}"),
        }
    }
}

//! Readiness calls over many descriptors: `select`, `poll` and `epoll_wait` with a zero
//! timeout, and `epoll_ctl`, over connected UNIX stream sockets of which exactly one holds a
//! byte to read.

use crate::last_error;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `FD_SETSIZE`: `select` watches only descriptors below it.
pub const FD_SETSIZE: usize = libc::FD_SETSIZE;

/// `n` connected socket pairs: the watched ends on the lowest free descriptors, their peers
/// moved above them, so the watched ones stay as low as `select` needs. Closed on drop.
pub struct Sockets {
    watched: Vec<OwnedFd>,
    peers: Vec<OwnedFd>,
}

/// The lowest descriptor number above the first `n` free ones of this process now: where the
/// peers go, so that the watched ends (which take the lowest free numbers) all stay below it.
fn above_first_free(n: usize) -> RawFd {
    let mut open: Vec<RawFd> = std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    open.sort_unstable();
    let (mut fd, mut free, mut next) = (0 as RawFd, 0usize, open.iter().peekable());
    while free < n {
        while next.next_if(|&&o| o < fd).is_some() {}
        if next.next_if(|&&o| o == fd).is_none() {
            free += 1;
        }
        fd += 1;
    }
    fd
}

fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: fds is a writable array of two descriptors.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r != 0 {
        return Err(last_error("socketpair"));
    }
    // SAFETY: both were just returned by the kernel and are owned by no one else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `fcntl(F_DUPFD_CLOEXEC, min)`: a copy of `fd` on the lowest free descriptor ≥ `min`.
fn dup_at_least(fd: &OwnedFd, min: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: fd is open; F_DUPFD_CLOEXEC returns a new descriptor or -1.
    let r = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, min) };
    if r < 0 {
        return Err(last_error("fcntl(F_DUPFD_CLOEXEC)"));
    }
    // SAFETY: r was just returned by the kernel and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(r) })
}

impl Sockets {
    /// Opens `n` pairs; none is readable yet.
    pub fn new(n: usize) -> io::Result<Sockets> {
        Sockets::with_peers_from(n, above_first_free(n))
    }

    /// Opens a set of `n` pairs for each of `sizes`, in that order, all their peers above all
    /// their watched ends and at `peers_from` or above: the watched ends of the first set take
    /// the lowest free numbers, the next set's the next ones.
    pub fn sets(sizes: &[usize], peers_from: RawFd) -> io::Result<Vec<Sockets>> {
        let base = above_first_free(sizes.iter().sum()).max(peers_from);
        sizes
            .iter()
            .map(|&n| Sockets::with_peers_from(n, base))
            .collect()
    }

    fn with_peers_from(n: usize, base: RawFd) -> io::Result<Sockets> {
        // Each peer moved up frees its slot for the next watched end, so the watched ends
        // fill the lowest free descriptors and stay below `base`.
        let mut s = Sockets {
            watched: Vec::with_capacity(n),
            peers: Vec::with_capacity(n),
        };
        for _ in 0..n {
            let (a, b) = socket_pair()?;
            s.peers.push(dup_at_least(&b, base)?);
            drop(b);
            s.watched.push(a);
        }
        Ok(s)
    }

    /// The watched descriptors.
    pub fn watched(&self) -> Vec<RawFd> {
        self.watched.iter().map(|f| f.as_raw_fd()).collect()
    }

    /// A copy of every watched end on the highest free descriptors below `end`, as a
    /// process with many files open numbers its sockets. The copies name the same sockets, so
    /// the readable one is readable through its copy. Fails when fewer than `n` numbers below
    /// `end` are free.
    pub fn copies_below(&self, end: RawFd) -> io::Result<Vec<OwnedFd>> {
        let mut copies = Vec::with_capacity(self.watched.len());
        let mut at = end;
        for fd in &self.watched {
            // F_DUPFD never replaces an open descriptor: a copy landing above `at` means the
            // number was taken, and the next lower one is tried.
            let copy = loop {
                at -= 1;
                if at < 0 {
                    return Err(io::Error::other(format!(
                        "fewer than {} descriptors below {end} are free",
                        self.watched.len()
                    )));
                }
                let copy = dup_at_least(fd, at)?;
                if copy.as_raw_fd() == at {
                    break copy;
                }
            };
            copies.push(copy);
        }
        copies.reverse();
        Ok(copies)
    }

    /// Writes one byte to the peer of watched socket `i`, which then stays readable (nothing
    /// reads it).
    pub fn make_readable(&self, i: usize) -> io::Result<()> {
        let fd = self.peers[i].as_raw_fd();
        // SAFETY: the byte is valid for one byte; fd is open.
        let r = unsafe { libc::write(fd, [1u8].as_ptr().cast(), 1) };
        if r != 1 {
            return Err(last_error("write to a socket"));
        }
        Ok(())
    }
}

/// `select` with a zero timeout over a fixed read set, copied before each call as the call
/// overwrites it.
pub struct Select {
    set: libc::fd_set,
    nfds: i32,
}

impl Select {
    /// The set of `fds`; every one must be below [`FD_SETSIZE`].
    pub fn new(fds: &[RawFd]) -> io::Result<Select> {
        // SAFETY: fd_set is plain data; all-zero is the empty set.
        let mut set: libc::fd_set = unsafe { std::mem::zeroed() };
        for &fd in fds {
            if fd < 0 || fd as usize >= FD_SETSIZE {
                return Err(io::Error::other(format!(
                    "select watches only descriptors below {FD_SETSIZE} (FD_SETSIZE), and \
                     descriptor {fd} is not"
                )));
            }
            // SAFETY: fd is within 0..FD_SETSIZE, so inside the set.
            unsafe { libc::FD_SET(fd, &mut set) };
        }
        let nfds = fds.iter().max().map_or(0, |m| m + 1);
        Ok(Select { set, nfds })
    }

    /// One `select(nfds, &read, NULL, NULL, {0, 0})`: the descriptors ready.
    #[inline]
    pub fn ready(&self) -> io::Result<usize> {
        let mut read = self.set;
        let mut tv = libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        };
        // SAFETY: read and tv are valid and writable; the other sets may be null.
        let r = unsafe {
            libc::select(
                self.nfds,
                &mut read,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut tv,
            )
        };
        if r < 0 {
            return Err(last_error("select"));
        }
        Ok(r as usize)
    }
}

/// Waits up to `timeout` for `fd` to have input (or its writer to have closed it): `true`
/// when it does, `false` when the time ran out. An exchange with a helper process bounds its
/// wait with this, so a stuck helper ends the wait instead of the run.
pub fn wait_readable(fd: impl AsFd, timeout: std::time::Duration) -> io::Result<bool> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let mut p = libc::pollfd {
            fd: fd.as_fd().as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: p is one valid, writable pollfd.
        let r = unsafe { libc::poll(&mut p, 1, ms) };
        if r > 0 {
            return Ok(true);
        }
        if r == 0 {
            return Ok(false);
        }
        let e = last_error("poll");
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// `poll` with a zero timeout over a fixed array (the kernel rewrites only `revents`).
pub struct Poll {
    fds: Vec<libc::pollfd>,
}

impl Poll {
    /// Watches `fds` for input.
    pub fn new(fds: &[RawFd]) -> Poll {
        Poll {
            fds: fds
                .iter()
                .map(|&fd| libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect(),
        }
    }

    /// One `poll(fds, n, 0)`: the descriptors ready.
    #[inline]
    pub fn ready(&mut self) -> io::Result<usize> {
        // SAFETY: fds is a valid, writable array of fds.len() pollfds.
        let r = unsafe { libc::poll(self.fds.as_mut_ptr(), self.fds.len() as libc::nfds_t, 0) };
        if r < 0 {
            return Err(last_error("poll"));
        }
        Ok(r as usize)
    }
}

/// Events one `epoll_wait` can return.
const EPOLL_EVENTS: usize = 16;

/// An epoll instance watching descriptors for input (level-triggered). Closed on drop.
pub struct Epoll {
    fd: OwnedFd,
    events: [libc::epoll_event; EPOLL_EVENTS],
}

impl Epoll {
    /// An instance watching `fds`.
    pub fn new(fds: &[RawFd]) -> io::Result<Epoll> {
        // SAFETY: no pointers; returns a new descriptor or -1.
        let r = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if r < 0 {
            return Err(last_error("epoll_create1"));
        }
        let e = Epoll {
            // SAFETY: r was just returned by the kernel and is owned by no one else.
            fd: unsafe { OwnedFd::from_raw_fd(r) },
            events: [libc::epoll_event { events: 0, u64: 0 }; EPOLL_EVENTS],
        };
        for &fd in fds {
            e.ctl(libc::EPOLL_CTL_ADD, fd)?;
        }
        Ok(e)
    }

    #[inline]
    fn ctl(&self, op: i32, fd: RawFd) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: fd as u64,
        };
        // SAFETY: ev is valid for the call; both descriptors are open.
        if unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut ev) } != 0 {
            return Err(last_error("epoll_ctl"));
        }
        Ok(())
    }

    /// One `epoll_wait(.., 16, 0)`: the descriptors ready.
    #[inline]
    pub fn ready(&mut self) -> io::Result<usize> {
        // SAFETY: events is a writable array of EPOLL_EVENTS entries.
        let r = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                EPOLL_EVENTS as i32,
                0,
            )
        };
        if r < 0 {
            return Err(last_error("epoll_wait"));
        }
        Ok(r as usize)
    }

    /// `EPOLL_CTL_ADD` then `EPOLL_CTL_DEL` of `fd` (not already watched).
    #[inline]
    pub fn add_delete(&self, fd: RawFd) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd)?;
        self.ctl(libc::EPOLL_CTL_DEL, fd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_for_input_ends_with_the_input_or_the_time() {
        let (mut a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let t = std::time::Duration::from_millis(20);
        assert!(!wait_readable(&b, t).unwrap());
        std::io::Write::write_all(&mut a, b"x").unwrap();
        assert!(wait_readable(&b, t).unwrap());
        // A closed writer is an end of input, not a wait.
        let (c, d) = std::os::unix::net::UnixStream::pair().unwrap();
        drop(c);
        assert!(wait_readable(&d, std::time::Duration::from_secs(5)).unwrap());
    }

    #[test]
    fn peers_go_above_the_first_free_descriptors() {
        // Whatever is open, n free numbers lie below the base.
        let base = above_first_free(5);
        assert!(base >= 5);
        assert_eq!(above_first_free(0), 0);
    }

    #[test]
    fn exactly_the_one_readable_socket_is_ready() {
        let s = Sockets::new(20).unwrap();
        let fds = s.watched();
        let sel = Select::new(&fds).unwrap();
        let mut poll = Poll::new(&fds);
        let mut ep = Epoll::new(&fds).unwrap();
        assert_eq!(
            (
                sel.ready().unwrap(),
                poll.ready().unwrap(),
                ep.ready().unwrap()
            ),
            (0, 0, 0)
        );
        s.make_readable(7).unwrap();
        for _ in 0..3 {
            assert_eq!(
                (
                    sel.ready().unwrap(),
                    poll.ready().unwrap(),
                    ep.ready().unwrap()
                ),
                (1, 1, 1)
            );
        }
        let extra = Sockets::new(1).unwrap();
        ep.add_delete(extra.watched()[0]).unwrap();
        let sets = Sockets::sets(&[3, 30], 0).unwrap();
        let (small, big) = (sets[0].watched(), sets[1].watched());
        let peers = sets
            .iter()
            .flat_map(|s| s.peers.iter().map(|p| p.as_raw_fd()));
        let top = *big.iter().chain(&small).max().unwrap();
        assert!(
            peers.clone().all(|p| p > top),
            "every peer above every watched end"
        );
        assert!(Select::new(&[FD_SETSIZE as RawFd]).is_err());
    }

    #[test]
    fn copies_just_below_a_number_name_the_same_sockets() {
        let sets = Sockets::sets(&[4], 900).unwrap();
        let s = &sets[0];
        assert!(s.peers.iter().all(|p| p.as_raw_fd() >= 900));
        let copies = s.copies_below(800).unwrap();
        let fds: Vec<RawFd> = copies.iter().map(|c| c.as_raw_fd()).collect();
        // The highest free numbers below 800, in the watched ends' order (another test's
        // descriptor may sit among them).
        assert!(fds.windows(2).all(|w| w[0] < w[1]), "{fds:?}");
        assert!(fds.iter().all(|&f| (700..800).contains(&f)), "{fds:?}");
        let sel = Select::new(&fds).unwrap();
        assert_eq!(sel.ready().unwrap(), 0);
        s.make_readable(3).unwrap();
        assert_eq!(sel.ready().unwrap(), 1);
    }
}

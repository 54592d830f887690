//! Loopback sockets for the `net` experiment: connected pairs of each kind (TCP, UDP, AF_UNIX
//! stream and datagram, and a pipe), the partner thread that answers or drains one end, and
//! loopback connections made, accepted and closed: in one thread with a reset, or as programs
//! make them, the listener's thread accepting and closing.
//!
//! Every address is 127.0.0.1 with a port the kernel picks (bind to port 0), so a port in use
//! elsewhere never matters; every descriptor is an [`OwnedFd`] closed on drop.

use crate::ipc::{read_one, write_one};
use crate::shm::SharedMap;
use crate::task::{Failure, TaskBody};
use crate::{last_error, Switches};
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// How long the measuring side waits for a datagram's answer before it calls it lost.
const DGRAM_TIMEOUT_S: libc::time_t = 2;

/// The largest write the partner drains at once (the bandwidth cases write 64 KiB).
pub const SINK_BYTES: usize = 128 * 1024;

/// The kinds of connected pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// TCP over 127.0.0.1, TCP_NODELAY on both ends
    Tcp,
    /// UDP over 127.0.0.1, both sockets connected to each other
    Udp,
    /// AF_UNIX SOCK_STREAM socketpair
    Unix,
    /// AF_UNIX SOCK_DGRAM socketpair
    UnixDgram,
    /// pipe: the measuring side writes, the partner reads (one way only)
    Pipe,
}

impl Kind {
    fn is_socket(self) -> bool {
        self != Kind::Pipe
    }

    fn is_dgram(self) -> bool {
        matches!(self, Kind::Udp | Kind::UnixDgram)
    }
}

/// Why loopback networking is missing, as one line, or `Ok` when a TCP connection to
/// 127.0.0.1 can be made (in a network namespace whose `lo` is down, binding may succeed and
/// connecting fails).
pub fn loopback_available() -> io::Result<()> {
    tcp_pair().map(drop).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("no loopback interface: {e}; bring it up with `ip link set lo up`"),
        )
    })
}

fn tcp_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let listener = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| io::Error::new(e.kind(), format!("binding 127.0.0.1:0: {e}")))?;
    let addr = listener.local_addr()?;
    let a = TcpStream::connect(addr)
        .map_err(|e| io::Error::new(e.kind(), format!("connecting to {addr}: {e}")))?;
    let (b, _) = listener.accept()?;
    a.set_nodelay(true)?;
    b.set_nodelay(true)?;
    let a: OwnedFd = a.into();
    // Closed first (it is dropped first), with a reset: no socket of the pair is left in
    // TIME_WAIT after the run.
    set_linger_zero(a.as_raw_fd())?;
    Ok((a, b.into()))
}

fn udp_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let bind = || {
        UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| io::Error::new(e.kind(), format!("binding 127.0.0.1:0 (UDP): {e}")))
    };
    let (a, b) = (bind()?, bind()?);
    a.connect(b.local_addr()?)?;
    b.connect(a.local_addr()?)?;
    Ok((a.into(), b.into()))
}

/// `SO_LINGER` 0 on `fd`: its close sends a reset instead of a FIN, so it leaves no TIME_WAIT.
fn set_linger_zero(fd: RawFd) -> io::Result<()> {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: linger is a valid value of the size passed; fd is an open socket.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(last_error("setsockopt(SO_LINGER)"));
    }
    Ok(())
}

/// A receive timeout on `fd`, so a lost datagram is an error instead of a hang.
fn set_recv_timeout(fd: RawFd, seconds: libc::time_t) -> io::Result<()> {
    let tv = libc::timeval {
        tv_sec: seconds,
        tv_usec: 0,
    };
    // SAFETY: tv is a valid timeval of the size passed; fd is an open socket.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(last_error("setsockopt(SO_RCVTIMEO)"));
    }
    Ok(())
}

/// `(measuring end, partner end)` of a new pair of `kind`; for a pipe the write end first.
pub fn pair(kind: Kind) -> io::Result<(OwnedFd, OwnedFd)> {
    let (a, b) = match kind {
        Kind::Tcp => tcp_pair()?,
        Kind::Udp => udp_pair()?,
        Kind::Unix => {
            let (a, b) = UnixStream::pair()?;
            (a.into(), b.into())
        }
        Kind::UnixDgram => {
            let (a, b) = UnixDatagram::pair()?;
            (a.into(), b.into())
        }
        Kind::Pipe => {
            let (rd, wr) = io::pipe()?;
            (wr.into(), rd.into())
        }
    };
    if kind.is_dgram() {
        set_recv_timeout(a.as_raw_fd(), DGRAM_TIMEOUT_S)?;
    }
    Ok((a, b))
}

/// What the partner does with its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Reads one byte and writes it back, until stopped.
    Echo,
    /// Reads whatever comes (up to [`SINK_BYTES`] at a time) and drops it, until stopped.
    Sink,
}

const W_STOP: usize = 0;
const W_READY: usize = 1;
const W_VOLUNTARY: usize = 2;
const W_INVOLUNTARY: usize = 3;
const W_BYTES: usize = 4;
const WORDS: usize = 5;

/// A connected pair and its partner thread's state: the measuring thread uses end `a`, the
/// partner (a [`TaskBody`], task index 1) end `b`.
pub struct Peer {
    kind: Kind,
    role: Role,
    a: OwnedFd,
    b: OwnedFd,
    words: SharedMap,
    buf: SharedMap,
}

impl Peer {
    /// A new pair of `kind` whose partner will play `role`. A pipe only sinks.
    pub fn new(kind: Kind, role: Role) -> io::Result<Peer> {
        if kind == Kind::Pipe && role == Role::Echo {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a pipe carries one way only: it cannot echo",
            ));
        }
        let (a, b) = pair(kind)?;
        Ok(Peer {
            kind,
            role,
            a,
            b,
            words: SharedMap::new(WORDS * 8)?,
            buf: SharedMap::new(if role == Role::Sink { SINK_BYTES } else { 1 })?,
        })
    }

    fn word(&self, i: usize) -> &AtomicU64 {
        debug_assert!(i < WORDS);
        // SAFETY: the mapping holds WORDS zeroed, page-aligned u64s, used only atomically, and
        // lives as long as the borrow of self.
        unsafe { &*self.words.at::<AtomicU64>().add(i) }
    }

    fn stopped(&self) -> bool {
        self.word(W_STOP).load(Ordering::Acquire) != 0
    }

    /// Whether the partner has started and waits for the first byte.
    pub fn ready(&self) -> bool {
        self.word(W_READY).load(Ordering::Acquire) != 0
    }

    /// One round trip from the measuring side: one byte written, the partner's answer read.
    #[inline(always)]
    pub fn round_trip(&self) -> io::Result<()> {
        let fd = self.a.as_raw_fd();
        write_one(fd, &[1u8], "write")?;
        match read_one(fd, &mut [0u8], "read") {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Err(io::Error::new(
                e.kind(),
                format!("no answer within {DGRAM_TIMEOUT_S} s (a datagram lost?)"),
            )),
            r => r,
        }
    }

    /// Writes all of `data` to the partner, which drains it.
    #[inline(always)]
    pub fn send(&self, data: &[u8]) -> io::Result<()> {
        let fd = self.a.as_raw_fd();
        let mut off = 0;
        while off < data.len() {
            let rest = &data[off..];
            // SAFETY: rest is valid for rest.len() bytes; fd is open for the borrow of self.
            let r = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
            if r < 0 {
                if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(last_error("write"));
            }
            off += r as usize;
        }
        Ok(())
    }

    /// Switches the partner counted from its first read to its stop.
    pub fn partner_switches(&self) -> Switches {
        Switches {
            voluntary: self.word(W_VOLUNTARY).load(Ordering::Acquire),
            involuntary: self.word(W_INVOLUNTARY).load(Ordering::Acquire),
        }
    }

    /// Bytes the partner drained (a sink).
    pub fn partner_bytes(&self) -> u64 {
        self.word(W_BYTES).load(Ordering::Acquire)
    }

    /// Makes the partner return soon: sets the stop word, then sends one byte each way
    /// without blocking, waking the partner blocked in a read and a measuring thread blocked
    /// on an answer that will not come (a full buffer needs no byte: its reader is not
    /// blocked).
    pub fn halt(&self) {
        self.word(W_STOP).store(1, Ordering::Release);
        nudge(self.a.as_raw_fd(), self.kind.is_socket());
        if self.kind.is_socket() {
            nudge(self.b.as_raw_fd(), true);
        }
    }

    fn echo(&self, fd: RawFd) -> Result<Switches, Failure> {
        let mut b = [0u8];
        read_one(fd, &mut b, "read").map_err(|_| Failure::Wait)?;
        let start = crate::thread_switches();
        while !self.stopped() {
            write_one(fd, &b, "write").map_err(|_| Failure::Post)?;
            read_one(fd, &mut b, "read").map_err(|_| Failure::Wait)?;
        }
        Ok(crate::thread_switches().since(start))
    }

    fn sink(&self, fd: RawFd) -> Result<Switches, Failure> {
        let mut start = None;
        while !self.stopped() {
            // SAFETY: buf maps SINK_BYTES writable bytes that only this task uses.
            let r = unsafe { libc::read(fd, self.buf.at::<u8>().cast(), SINK_BYTES) };
            if r < 0 {
                if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(Failure::Wait);
            }
            if r == 0 {
                break;
            }
            // Counted as it arrives, so the writer can see every byte crossed.
            self.word(W_BYTES).fetch_add(r as u64, Ordering::AcqRel);
            start.get_or_insert_with(crate::thread_switches);
        }
        Ok(start.map_or_else(Switches::default, |s| crate::thread_switches().since(s)))
    }
}

/// Writes one byte to `fd` without blocking (a full buffer or a closed peer is fine: then no
/// reader is blocked on it).
fn nudge(fd: RawFd, socket: bool) {
    let b = 1u8;
    if socket {
        // SAFETY: b is one readable byte; fd is open. MSG_NOSIGNAL: a closed peer must not
        // raise SIGPIPE.
        unsafe {
            libc::send(
                fd,
                (&b as *const u8).cast(),
                1,
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
    } else {
        // SAFETY: fcntl on an open descriptor with integer arguments; b is one readable byte.
        // The write end is only used again by this halt, so leaving it non-blocking is fine.
        unsafe {
            let fl = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
            libc::write(fd, (&b as *const u8).cast(), 1);
        }
    }
}

// SAFETY: run makes only read/write on descriptors made before the task started, getrusage
// and atomics on memory mapped before; failures are codes, nothing is allocated, and the halt
// (stop word and a byte on the partner's end) makes every loop return.
unsafe impl TaskBody for Peer {
    fn run(&self, _index: usize) -> Result<(), Failure> {
        self.word(W_READY).store(1, Ordering::Release);
        let fd = self.b.as_raw_fd();
        let sw = match self.role {
            Role::Echo => self.echo(fd)?,
            Role::Sink => self.sink(fd)?,
        };
        self.word(W_VOLUNTARY)
            .store(sw.voluntary, Ordering::Release);
        self.word(W_INVOLUNTARY)
            .store(sw.involuntary, Ordering::Release);
        Ok(())
    }
}

/// A listening TCP socket on 127.0.0.1 (port from the kernel) that connections are made to:
/// accepted and closed in the calling thread ([`Acceptor::connect_accept_close`]), or by
/// another thread running [`Acceptor::accept_and_close`] ([`Acceptor::connect_read_close`]).
pub struct Acceptor {
    listener: TcpListener,
    addr: libc::sockaddr_in,
    stopping: AtomicBool,
}

impl Acceptor {
    /// Listens on 127.0.0.1:0 with a backlog of 128.
    pub fn new() -> io::Result<Acceptor> {
        let listener = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| io::Error::new(e.kind(), format!("binding 127.0.0.1:0: {e}")))?;
        let port = listener.local_addr()?.port();
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(Ipv4Addr::LOCALHOST).to_be(),
            },
            sin_zero: [0; 8],
        };
        Ok(Acceptor {
            listener,
            addr,
            stopping: AtomicBool::new(false),
        })
    }

    /// A new TCP socket connected to the listener (on loopback the handshake completes before
    /// `connect` returns).
    #[inline(always)]
    fn connected(&self, linger_zero: bool) -> io::Result<OwnedFd> {
        // SAFETY: plain integer arguments.
        let c = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if c < 0 {
            return Err(last_error("socket(AF_INET, SOCK_STREAM)"));
        }
        // SAFETY: c was just returned by the kernel and is owned by no one else.
        let c = unsafe { OwnedFd::from_raw_fd(c) };
        if linger_zero {
            set_linger_zero(c.as_raw_fd())?;
        }
        // SAFETY: addr is a valid sockaddr_in of the size passed; c is open.
        let r = unsafe {
            libc::connect(
                c.as_raw_fd(),
                (&self.addr as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(last_error("connect to 127.0.0.1"));
        }
        Ok(c)
    }

    /// One connection as programs make one: `socket`, `connect`, `read` until end of file (the
    /// accepting thread's close, a FIN), `close` (a FIN back): the accepting side is left in
    /// TIME_WAIT. Needs a thread in [`Acceptor::accept_and_close`].
    #[inline(always)]
    pub fn connect_read_close(&self) -> io::Result<()> {
        let c = self.connected(false)?;
        let mut byte = [0u8];
        loop {
            // SAFETY: byte is valid for one byte; c is open.
            let r = unsafe { libc::read(c.as_raw_fd(), byte.as_mut_ptr().cast(), 1) };
            match r {
                0 => return Ok(()),
                r if r < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => {}
                r if r < 0 => return Err(last_error("read of the accepted connection's close")),
                _ => {
                    return Err(io::Error::other(
                        "the accepting thread sent a byte instead of closing",
                    ))
                }
            }
        }
    }

    /// Accepts connections and closes each at once, until [`Acceptor::stop`]: the number
    /// accepted. Shuts the listener down on any way out, so a connection waiting for it ends
    /// with an error instead of waiting for ever.
    pub fn accept_and_close(&self) -> io::Result<u64> {
        let mut accepted = 0;
        let result = loop {
            let s = self.accept();
            if s >= 0 {
                // SAFETY: s was just returned by the kernel; closed once, here.
                unsafe { libc::close(s) };
                accepted += 1;
            } else if self.stopping.load(Ordering::Acquire) {
                break Ok(accepted);
            } else if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break Err(last_error("accept4"));
            }
        };
        self.shut_down();
        result
    }

    /// Ends [`Acceptor::accept_and_close`] in whichever thread runs it.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        self.shut_down();
    }

    /// `accept4` on the listener: the new descriptor, or -1 with `errno` set.
    #[inline(always)]
    fn accept(&self) -> RawFd {
        // SAFETY: the listener is open; null address pointers are allowed.
        unsafe {
            libc::accept4(
                self.listener.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_CLOEXEC,
            )
        }
    }

    fn shut_down(&self) {
        // SAFETY: the listener is open; shutting a listening socket down wakes its accept.
        unsafe { libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR) };
    }

    /// The port the kernel gave the listener.
    pub fn port(&self) -> u16 {
        u16::from_be(self.addr.sin_port)
    }

    /// One connection in one thread: `socket`, `connect`, `accept4`, then `close` of the
    /// client with `SO_LINGER` 0 (a reset, so no socket is left in TIME_WAIT) and of the
    /// accepted socket.
    #[inline(always)]
    pub fn connect_accept_close(&self) -> io::Result<()> {
        let c = self.connected(true)?;
        let s = self.accept();
        if s < 0 {
            return Err(last_error("accept4"));
        }
        drop(c);
        // SAFETY: s was just returned by the kernel; closed once, here.
        unsafe { libc::close(s) };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skip::skip;
    use crate::task::{Kind as TaskKind, Team};
    use std::sync::Arc;

    fn with_partner(kind: Kind, role: Role, f: impl FnOnce(&Peer)) -> Switches {
        let peer = Arc::new(Peer::new(kind, role).unwrap());
        let h = Arc::clone(&peer);
        let mut team = Team::new(TaskKind::Threads, 2, 1, move || h.halt());
        team.spawn(None, &peer, 1).unwrap();
        while !peer.ready() {
            std::thread::yield_now();
        }
        f(&peer);
        team.check().unwrap();
        team.finish().unwrap();
        peer.partner_switches()
    }

    fn echoes_and_stops(kind: Kind) {
        with_partner(kind, Role::Echo, |p| {
            for _ in 0..200 {
                p.round_trip().unwrap();
            }
        });
    }

    #[test]
    fn unix_socket_kinds_echo_and_stop() {
        echoes_and_stops(Kind::Unix);
        echoes_and_stops(Kind::UnixDgram);
    }

    #[test]
    fn inet_socket_kinds_echo_and_stop() {
        if let Err(e) = loopback_available() {
            return skip(&format!("needs loopback: {e}"));
        }
        echoes_and_stops(Kind::Tcp);
        echoes_and_stops(Kind::Udp);
    }

    #[test]
    fn a_sink_drains_every_byte_and_a_pipe_cannot_echo() {
        let data = vec![7u8; 64 * 1024];
        for kind in [Kind::Unix, Kind::Pipe] {
            let peer = Arc::new(Peer::new(kind, Role::Sink).unwrap());
            let h = Arc::clone(&peer);
            let mut team = Team::new(TaskKind::Threads, 2, 1, move || h.halt());
            team.spawn(None, &peer, 1).unwrap();
            for _ in 0..20 {
                peer.send(&data).unwrap();
            }
            // Halting may stop the sink mid-read: give it the time to drain what was sent.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while peer.partner_bytes() < 20 * 64 * 1024 && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            team.finish().unwrap();
            assert!(peer.partner_bytes() >= 19 * 64 * 1024, "{kind:?}");
        }
        assert!(Peer::new(Kind::Pipe, Role::Echo).is_err());
    }

    #[test]
    fn connections_are_made_and_closed() {
        if let Err(e) = loopback_available() {
            return skip(&format!("needs loopback: {e}"));
        }
        let a = Acceptor::new().unwrap();
        assert_ne!(a.port(), 0);
        for _ in 0..50 {
            a.connect_accept_close().unwrap();
        }
        let accepted = std::thread::scope(|s| {
            let t = s.spawn(|| a.accept_and_close());
            for _ in 0..50 {
                a.connect_read_close().unwrap();
            }
            a.stop();
            t.join().unwrap()
        });
        assert_eq!(accepted.unwrap(), 50);
        // The listener is shut: a connection now fails rather than waits.
        assert!(a.connect_read_close().is_err());
    }
}

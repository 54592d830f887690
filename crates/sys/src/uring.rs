//! io_uring through the `io-uring` crate: one ring, batches of NOPs or reads submitted and
//! reaped together, and the SQPOLL variant whose kernel thread submits for the process.
//!
//! Every call here waits for all of its completions before it returns, so a buffer handed to
//! the kernel is never written after the borrow that lent it has ended. A registered (fixed)
//! file is held by the kernel until the ring goes; a registered buffer is owned by the ring
//! and unmapped only after the ring has been closed.

use crate::buf::PageBuffer;
use io_uring::{opcode, types, IoUring};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `/proc/sys/kernel/io_uring_disabled`: 0 allowed, 1 only for the `io_uring_group` (and
/// CAP_SYS_ADMIN), 2 disabled for everyone. `None` on a kernel without the setting.
pub fn disabled_setting() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// One io_uring instance; its kernel objects (and an SQPOLL thread) go when it is dropped.
pub struct Ring {
    // Declared first, so dropped (closed) before the registered buffer below is unmapped.
    ring: IoUring,
    sqpoll: bool,
    /// Registered buffer 0, if one was registered.
    fixed_buf: Option<PageBuffer>,
    /// Whether fixed file 0 is registered.
    fixed_file: bool,
}

/// Why a ring could not be made, in one line with what to do.
fn setup_error(e: io::Error) -> io::Error {
    let memlock = crate::rlimit(libc::RLIMIT_MEMLOCK).ok();
    let why = setup_why(&e, disabled_setting(), memlock);
    io::Error::new(e.kind(), why)
}

/// [`setup_error`]'s text from what it reads: `disabled`, the `io_uring_disabled` setting;
/// `memlock`, the locked-memory limit (soft, hard) in bytes, `None` for unlimited.
fn setup_why(
    e: &io::Error,
    disabled: Option<u32>,
    memlock: Option<(Option<u64>, Option<u64>)>,
) -> String {
    match (e.raw_os_error(), disabled) {
        (Some(libc::ENOSYS), _) => "this kernel has no io_uring (CONFIG_IO_URING)".to_owned(),
        (Some(libc::EPERM), Some(d)) if d > 0 => format!(
            "io_uring is disabled here (/proc/sys/kernel/io_uring_disabled is {d}): set it to 0 \
             to measure it"
        ),
        // The kernel counts memory a ring pins against the locked-memory limit of a process
        // without CAP_IPC_LOCK (the ring itself too, on kernels before 5.12), and `ulimit -l
        // 0` refused even one ring: the errno alone reads as the machine out of memory.
        (Some(libc::ENOMEM), _) => {
            let kib = |v: Option<u64>| {
                v.map_or_else(|| "unlimited".into(), |b| format!("{} KiB", b / 1024))
            };
            let (soft, hard) = memlock.map_or_else(
                || ("unknown".to_owned(), "unknown".to_owned()),
                |(s, h)| (kib(s), kib(h)),
            );
            format!(
                "io_uring_setup: cannot allocate memory for the ring: most likely the \
                 locked-memory limit (RLIMIT_MEMLOCK soft={soft}, hard={hard}), which counts \
                 what a ring pins for a user without CAP_IPC_LOCK; raise it with \
                 `ulimit -l 65536` (KiB) or `prlimit --memlock=67108864 --pid PID`, or run as \
                 root"
            )
        }
        _ => format!("io_uring_setup failed: {e}"),
    }
}

impl Ring {
    /// A ring of `entries` submission slots, submitted to by `io_uring_enter`.
    pub fn new(entries: u32) -> io::Result<Ring> {
        let ring = IoUring::new(entries).map_err(setup_error)?;
        Ok(Ring {
            ring,
            sqpoll: false,
            fixed_buf: None,
            fixed_file: false,
        })
    }

    /// A ring whose submissions a kernel thread polls for (SQPOLL), pinned to `cpu`, going to
    /// sleep after `idle_ms` without work.
    pub fn with_sqpoll(entries: u32, cpu: usize, idle_ms: u32) -> io::Result<Ring> {
        let ring = IoUring::builder()
            .setup_sqpoll(idle_ms)
            .setup_sqpoll_cpu(cpu as u32)
            .build(entries)
            .map_err(setup_error)?;
        Ok(Ring {
            ring,
            sqpoll: true,
            fixed_buf: None,
            fixed_file: false,
        })
    }

    /// Registers `fd` as the ring's fixed file 0 (IORING_REGISTER_FILES): operations then
    /// name it by index, and the kernel skips looking the descriptor up and taking a
    /// reference on the file for each of them. The kernel holds the file until the ring goes.
    pub fn register_file(&mut self, fd: BorrowedFd) -> io::Result<()> {
        self.ring
            .submitter()
            .register_files(&[fd.as_raw_fd()])
            .map_err(|e| io::Error::new(e.kind(), format!("registering a file: {e}")))?;
        self.fixed_file = true;
        Ok(())
    }

    /// Maps a page-aligned buffer of `len` bytes that the ring owns and registers it as
    /// buffer 0 (IORING_REGISTER_BUFFERS): its pages are pinned once, not per operation.
    pub fn register_buffer(&mut self, len: usize) -> io::Result<()> {
        let mut buf = PageBuffer::new(len)?;
        let s = buf.as_mut_slice();
        let iov = libc::iovec {
            iov_base: s.as_mut_ptr().cast(),
            iov_len: s.len(),
        };
        // SAFETY: the buffer is owned by the ring and unmapped only after the ring (declared
        // first) has been dropped, so it outlives the registration.
        unsafe { self.ring.submitter().register_buffers(&[iov]) }.map_err(|e| {
            let hint = if e.raw_os_error() == Some(libc::ENOMEM) {
                " (the locked-memory limit, RLIMIT_MEMLOCK: raise it with `ulimit -l`)"
            } else {
                ""
            };
            io::Error::new(e.kind(), format!("registering a buffer: {e}{hint}"))
        })?;
        self.fixed_buf = Some(buf);
        Ok(())
    }

    /// Submits what is queued and takes `n` completions, each of which must be `want` (or,
    /// with `want` `None`, not an error). Without SQPOLL it is one `io_uring_enter` that
    /// submits and waits; with SQPOLL the kernel thread submits and the completions are
    /// polled for here, so no call is made while the thread is awake.
    fn complete(&mut self, n: usize, want: Option<i32>) -> io::Result<()> {
        if self.sqpoll {
            // Enters only to wake a poller that fell asleep.
            self.ring.submit()?;
        } else {
            self.ring.submit_and_wait(n)?;
        }
        let mut got = 0;
        while got < n {
            for cqe in self.ring.completion() {
                got += 1;
                let r = cqe.result();
                if r < 0 {
                    return Err(io::Error::from_raw_os_error(-r));
                }
                if want.is_some_and(|w| w != r) {
                    return Err(io::Error::other(format!(
                        "an io_uring read returned {r} bytes, not {}",
                        want.unwrap_or(0)
                    )));
                }
            }
            if got < n {
                std::hint::spin_loop();
            }
        }
        Ok(())
    }

    /// Queues `n` entries made by `make` (`n` at most the ring's size).
    fn queue(&mut self, n: usize, make: impl Fn() -> io_uring::squeue::Entry) -> io::Result<()> {
        let mut sq = self.ring.submission();
        for _ in 0..n {
            let e = make();
            // SAFETY: a NOP points at nothing; a read's buffer stays borrowed until `complete`
            // has taken every completion (see the callers), or is the ring's own registered
            // buffer, which outlives the ring.
            unsafe { sq.push(&e) }
                .map_err(|_| io::Error::other("the io_uring submission queue is full"))?;
        }
        Ok(())
    }

    /// `n` NOPs submitted together and reaped together.
    pub fn nops(&mut self, n: usize) -> io::Result<()> {
        self.queue(n, || opcode::Nop::new().build())?;
        self.complete(n, None)
    }

    /// `n` reads of `buf.len()` bytes at `offset` of `fd`, all into `buf`, submitted together
    /// and reaped together; each must read the whole buffer.
    pub fn reads(
        &mut self,
        fd: BorrowedFd,
        buf: &mut [u8],
        offset: u64,
        n: usize,
    ) -> io::Result<()> {
        let len = u32::try_from(buf.len()).map_err(|_| io::Error::other("buffer too large"))?;
        let (raw, ptr) = (fd.as_raw_fd(), buf.as_mut_ptr());
        self.queue(n, || {
            opcode::Read::new(types::Fd(raw), ptr, len)
                .offset(offset)
                .build()
        })?;
        // `buf` stays borrowed until every read has completed here.
        self.complete(n, Some(len as i32))
    }
}

impl Ring {
    /// `n` reads of `buf.len()` bytes at `offset` of the registered file 0, all into `buf`
    /// (not registered), submitted together and reaped together.
    pub fn reads_fixed_file(&mut self, buf: &mut [u8], offset: u64, n: usize) -> io::Result<()> {
        if !self.fixed_file {
            return Err(io::Error::other("no file is registered with this ring"));
        }
        let len = u32::try_from(buf.len()).map_err(|_| io::Error::other("buffer too large"))?;
        let ptr = buf.as_mut_ptr();
        self.queue(n, || {
            opcode::Read::new(types::Fixed(0), ptr, len)
                .offset(offset)
                .build()
        })?;
        // `buf` stays borrowed until every read has completed here.
        self.complete(n, Some(len as i32))
    }

    /// `n` IORING_OP_READ_FIXED reads filling the registered buffer 0 from `offset` of the
    /// registered file 0, submitted together and reaped together.
    pub fn reads_fixed(&mut self, offset: u64, n: usize) -> io::Result<()> {
        if !self.fixed_file {
            return Err(io::Error::other("no file is registered with this ring"));
        }
        let Some(buf) = self.fixed_buf.as_mut() else {
            return Err(io::Error::other("no buffer is registered with this ring"));
        };
        let s = buf.as_mut_slice();
        let len = u32::try_from(s.len()).map_err(|_| io::Error::other("buffer too large"))?;
        let ptr = s.as_mut_ptr();
        self.queue(n, || {
            opcode::ReadFixed::new(types::Fixed(0), ptr, len, 0)
                .offset(offset)
                .build()
        })?;
        self.complete(n, Some(len as i32))
    }

    /// The registered buffer, to check what the reads put there.
    pub fn fixed_buffer(&self) -> Option<&[u8]> {
        self.fixed_buf.as_ref().map(|b| b.as_slice())
    }
}

/// The thread id of this process's SQPOLL thread (`iou-sqp-…`), if one runs.
pub fn sqpoll_thread() -> Option<i32> {
    std::fs::read_dir("/proc/self/task")
        .ok()?
        .flatten()
        .find_map(|e| {
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            comm.starts_with("iou-sqp")
                .then(|| e.file_name().to_str()?.parse().ok())?
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skip::skip;
    use std::os::fd::AsFd;

    #[test]
    fn a_ring_refused_for_memory_names_the_memory_lock_limit() {
        let e = io::Error::from_raw_os_error(libc::ENOMEM);
        let why = setup_why(&e, Some(0), Some((Some(0), Some(65536 * 1024))));
        assert!(
            why.contains("RLIMIT_MEMLOCK soft=0 KiB, hard=65536 KiB"),
            "{why}"
        );
        assert!(
            why.contains("ulimit -l") && why.contains("prlimit --memlock"),
            "{why}"
        );
        let unlimited = setup_why(&e, None, Some((None, None)));
        assert!(
            unlimited.contains("soft=unlimited, hard=unlimited"),
            "{unlimited}"
        );
        // Other refusals keep their own words.
        let off = setup_why(&io::Error::from_raw_os_error(libc::EPERM), Some(2), None);
        assert!(off.contains("io_uring_disabled is 2"), "{off}");
        let other = setup_why(&io::Error::from_raw_os_error(libc::EINVAL), Some(0), None);
        assert!(other.starts_with("io_uring_setup failed: "), "{other}");
    }

    #[test]
    fn nops_and_reads_complete_in_batches() {
        let mut ring = match Ring::new(64) {
            Ok(r) => r,
            // A kernel or container without io_uring: nothing to test here.
            Err(e) => return skip(&format!("needs io_uring: {e}")),
        };
        ring.nops(1).unwrap();
        ring.nops(32).unwrap();
        let zero = std::fs::File::open("/dev/zero").unwrap();
        let mut buf = vec![1u8; 16];
        ring.reads(zero.as_fd(), &mut buf, 0, 8).unwrap();
        assert!(buf.iter().all(|&b| b == 0));
        assert!(ring.nops(65).is_err(), "more entries than the ring holds");
    }

    #[test]
    fn registered_file_and_buffer_read_what_the_file_holds() {
        let mut ring = match Ring::new(64) {
            Ok(r) => r,
            Err(e) => return skip(&format!("needs io_uring: {e}")),
        };
        let mut buf = [1u8; 8];
        assert!(
            ring.reads_fixed_file(&mut buf, 0, 1).is_err(),
            "nothing registered"
        );
        let dir = std::env::temp_dir().join(format!("oscost-uring-test-{}", std::process::id()));
        std::fs::write(&dir, [7u8; 8192]).unwrap();
        let file = std::fs::File::open(&dir).unwrap();
        std::fs::remove_file(&dir).unwrap();
        ring.register_file(file.as_fd()).unwrap();
        ring.reads_fixed_file(&mut buf, 0, 4).unwrap();
        assert_eq!(buf, [7u8; 8]);
        assert!(ring.reads_fixed(0, 1).is_err(), "no buffer registered yet");
        if let Err(e) = ring.register_buffer(8192) {
            // A locked-memory limit too small for two pages: said, nothing more to test.
            return skip(&format!("needs two pages of locked memory: {e}"));
        }
        ring.reads_fixed(0, 32).unwrap();
        assert!(ring.fixed_buffer().unwrap().iter().all(|&b| b == 7));
    }
}

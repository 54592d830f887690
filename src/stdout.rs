//! Standard output for a slow or vanished reader: written a pipe's atomic write at a time,
//! waited for until the run is asked to stop, and a reader that left (`| head`) noted so the
//! run can stop early.

use oscost_sys as os;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Writes to stdout. A reader that went away (`| head`) is not an error; a full disk is. A
/// pipe nobody reads is waited for until the run is asked to stop (exit 130) or nothing was
/// taken for `OSCOST_OUTPUT_TIMEOUT` seconds (an error naming it).
pub fn print_stdout(text: &str) -> anyhow::Result<()> {
    use oscost_report::output::Stall;
    let mut out = std::io::stdout().lock();
    let written = out
        .flush()
        .map_err(Stall::Io)
        .and_then(|()| write_waiting(&out, text.as_bytes()));
    match written {
        Err(Stall::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            READER_GONE.store(true, Ordering::SeqCst);
            Ok(())
        }
        Err(e) => Err(e.into_error("to stdout")),
        Ok(()) => Ok(()),
    }
}

/// Writes all of `bytes` to `fd`, at most a pipe's atomic write (4096 bytes) at a time and
/// only when `poll` says it would not block; see [`print_stdout`].
fn write_waiting(
    fd: &impl std::os::fd::AsFd,
    mut bytes: &[u8],
) -> Result<(), oscost_report::output::Stall> {
    use os::Writable;
    use oscost_report::output::{reader_timeout, stop_asked, Stall};
    use std::os::fd::AsFd;
    let file = std::fs::File::from(fd.as_fd().try_clone_to_owned().map_err(Stall::Io)?);
    let timeout = reader_timeout();
    let mut deadline = std::time::Instant::now() + timeout;
    while !bytes.is_empty() {
        if stop_asked() {
            return Err(Stall::Interrupted);
        }
        match os::wait_writable(file.as_fd(), 100).map_err(Stall::Io)? {
            Writable::NotYet if std::time::Instant::now() >= deadline => {
                return Err(Stall::TimedOut(timeout))
            }
            Writable::NotYet => continue,
            Writable::Gone => return Err(Stall::Io(std::io::ErrorKind::BrokenPipe.into())),
            Writable::Ready => {}
        }
        match (&file).write(&bytes[..bytes.len().min(4096)]) {
            Ok(0) => return Err(Stall::Io(std::io::ErrorKind::WriteZero.into())),
            Ok(n) => {
                bytes = &bytes[n..];
                deadline = std::time::Instant::now() + timeout;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(Stall::Io(e)),
        }
    }
    Ok(())
}

/// Set once standard output's reader has gone: the run then stops at the next sample.
static READER_GONE: AtomicBool = AtomicBool::new(false);

/// Whether standard output's reader has gone (a write failed, or poll says so).
pub fn reader_gone() -> bool {
    if !READER_GONE.load(Ordering::SeqCst) && os::stdout_reader_gone() {
        READER_GONE.store(true, Ordering::SeqCst);
    }
    READER_GONE.load(Ordering::SeqCst)
}

//! Why a worker failed: its exit status or a thread's result, and the words for it.

use std::io;

/// Why a worker stopped before it was told to. Doubles as a child's exit status, so it must
/// stay a plain integer (no message can be built in a forked child).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Waiting on its link failed.
    Wait,
    /// Posting to its successor's link failed.
    Post,
    /// Its own setup (signal mask, working set) failed.
    Setup,
    /// Its own setup failed with this OS error (errno), named in the message.
    SetupOs(i32),
}

/// Exit statuses a child uses besides [`Failure`]'s.
pub(super) mod status {
    pub const WAIT: i32 = 10;
    pub const POST: i32 = 11;
    pub const SETUP: i32 = 12;
    pub const PIN: i32 = 13;
    pub const ORPHANED: i32 = 14;
    pub const UNWOUND: i32 = 15;
    /// [`super::Failure::SetupOs`]: this plus the errno, for an errno up to 255 − this.
    pub const SETUP_OS: i32 = 64;
}

pub(super) const SETUP_FAILED: &str = "its setup (signal mask or working set) failed";

impl Failure {
    /// A setup failure carrying `e`'s errno when it has one. Reads the error only: no
    /// allocation, so a forked child may call it.
    pub fn setup(e: &io::Error) -> Failure {
        match e.raw_os_error() {
            Some(n) if n > 0 => Failure::SetupOs(n),
            _ => Failure::Setup,
        }
    }

    pub(super) fn code(self) -> i32 {
        match self {
            Failure::Wait => status::WAIT,
            Failure::Post => status::POST,
            Failure::Setup => status::SETUP,
            Failure::SetupOs(n) if (1..=255 - status::SETUP_OS).contains(&n) => {
                status::SETUP_OS + n
            }
            Failure::SetupOs(_) => status::SETUP,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Wait => f.write_str("waiting on its link failed"),
            Failure::Post => f.write_str("posting to its successor failed"),
            Failure::Setup => f.write_str(SETUP_FAILED),
            Failure::SetupOs(n) => {
                write!(f, "{SETUP_FAILED}: {}", io::Error::from_raw_os_error(*n))
            }
        }
    }
}

/// What a child exit status means.
pub(super) fn describe_status(code: i32) -> String {
    match code {
        status::WAIT => "waiting on its link failed".into(),
        status::POST => "posting to its successor failed".into(),
        status::SETUP => SETUP_FAILED.into(),
        status::PIN => "pinning it to its CPU failed".into(),
        status::ORPHANED => "its parent was gone before it started".into(),
        status::UNWOUND => "it panicked".into(),
        c if c > status::SETUP_OS && c <= 255 => Failure::SetupOs(c - status::SETUP_OS).to_string(),
        _ => "unexpected status".into(),
    }
}

pub(super) fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGABRT => "SIGABRT",
        libc::SIGHUP => "SIGHUP",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        _ => "a signal",
    }
}

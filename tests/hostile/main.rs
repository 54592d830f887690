//! oscost run the way a careless or hostile user would: bad arguments, limits, kills and
//! signals, read-only directories, broken history stores, FUSE, system settings.
//!
//! Every case goes through one runner ([`runner`]): a private TMPDIR and working directory, a
//! time limit on every oscost invocation, and, besides the case's own expectation, the checks
//! every case gets: no panic (exit 101, `panicked` or `RUST_BACKTRACE` on stderr), no hang, no
//! process of the case left (found by a marker variable in /proc/PID/environ), no SysV
//! semaphore set left, no `oscost-*` directory in its TMPDIR, no `.tmp*` file in its working
//! directory. Bad input exits 2 with exactly one stderr line starting `oscost: `, prints
//! nothing on stdout and leaves the working directory exactly as it was.
//!
//! The cases that need root (they mount, change a setting, trace, run oscost as `nobody`) or
//! wait for a timeout (a stopped FUSE server's, oscost's own 30 s one) are `#[ignore]`d;
//! `.ci/run` runs them as root with `cargo xtask test --test hostile -- --ignored`. A case that
//! cannot run here (not root, no FUSE) is skipped through `common::skip`, never passed.
//!
//! The cases are those of the shell script this replaces, under the same names (`-` as `_`),
//! but for the ones other tests already cover.

#[path = "../common/mod.rs"]
mod common;

mod bad_input;
mod fuse;
mod history;
mod outputs;
mod refusals;
mod runner;
mod runner_checks;
mod settings;
mod signals;

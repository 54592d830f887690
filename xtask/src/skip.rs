//! A test that cannot run here says so, and `cargo xtask test` counts it as skipped rather
//! than passed. libtest knows only passed, failed and ignored (`#[ignore]` is decided at build
//! time, not by the machine), and it hides a passing test's output; so the test calls
//! [`skip`] and returns, and `cargo xtask test` names a file of its run in [`SKIPS_FILE`],
//! where [`skip`] writes one line. For plain `cargo test` the test is a pass that said why on
//! standard error.
//!
//! One file for both sides: xtask compiles it, and every crate whose tests may skip includes
//! it with `#[path]`.
#![allow(dead_code)] // each includer uses a different part

use std::io::Write as _;
use std::path::Path;

/// The environment variable `cargo xtask test` sets to its run's file of skips.
pub const SKIPS_FILE: &str = "OSCOST_TEST_SKIPS";

/// Says why this test cannot run here (`needs root`, `needs tracefs`): `skipped: REASON` on
/// standard error and, under `cargo xtask test`, a line in its run's file of skips. The test
/// returns right after: `return skip("needs root");`.
pub fn skip(reason: &str) {
    eprintln!("skipped: {reason}");
    let Some(file) = std::env::var_os(SKIPS_FILE) else {
        return;
    };
    // libtest runs each test on a thread named after it.
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    if let Err(e) = record(Path::new(&file), test, reason) {
        // A skip the total would miss would count as a pass: better a failure that says so.
        panic!("{SKIPS_FILE}={}: {e}", Path::new(&file).display());
    }
}

/// Appends `TEST: REASON` to `file` in one write, so that the lines of tests skipping at once
/// never mix.
pub fn record(file: &Path, test: &str, reason: &str) -> std::io::Result<()> {
    let line = format!("{test}: {}\n", reason.replace('\n', " "));
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)?
        .write_all(line.as_bytes())
}

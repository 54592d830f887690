//! `cargo xtask test [ARGS]`: runs `cargo test --no-fail-fast ARGS`, then prints one line with
//! the project's total, which cargo itself never does (it prints one summary per test binary,
//! the last of which is often a crate's empty doc-tests). Every binary runs even after one
//! fails, so the total is the whole project's; one that started and never gave its result (a
//! crash, a kill) is counted as such. A test that cannot run here (not root, no tracefs) says
//! so through [`skip::skip`] and is counted as skipped, not passed.
//!
//! `cargo xtask vs NAME…`: holds oscost against its independent C references ([`vs`]).
//!
//! `cargo xtask law-ref FILE…`: the exact-law program `compare --group-by` is held to
//! ([`lawref`]).

mod lawref;
mod skip;
mod vs;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

/// The counts of the test binaries that started (libtest's `running N tests`) and of their
/// `test result:` lines, and the tests that said they were skipped.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Tally {
    /// Passed by libtest's count, the skipped among them.
    passed: u64,
    failed: u64,
    ignored: u64,
    /// Tests that returned early through [`skip::skip`]: libtest counted them as passed.
    skipped: u64,
    /// Binaries that gave their result.
    binaries: u64,
    /// Binaries that started.
    started: u64,
}

impl Tally {
    /// Adds a libtest line: the start of a binary (`running 8 tests`) or its summary
    /// (`test result: ok. 8 passed; 0 failed; 1 ignored; …`); any other line is left alone.
    fn add(&mut self, line: &str) {
        if let Some(n) = line
            .strip_prefix("running ")
            .and_then(|r| r.strip_suffix(" tests").or_else(|| r.strip_suffix(" test")))
        {
            if n.parse::<u64>().is_ok() {
                self.started += 1;
            }
            return;
        }
        let Some(rest) = line.strip_prefix("test result: ") else {
            return;
        };
        self.binaries += 1;
        for part in rest.split(';') {
            let mut words = part.split_whitespace().rev();
            let (Some(what), Some(n)) = (words.next(), words.next()) else {
                continue;
            };
            let n: u64 = n.parse().unwrap_or(0);
            match what {
                "passed" => self.passed += n,
                "failed" => self.failed += n,
                "ignored" => self.ignored += n,
                _ => {}
            }
        }
    }

    /// The tests that passed and ran: libtest counts a skipped test as passed (it returned
    /// without failing), so the skips are taken from its passes, never counted as both.
    fn ran_and_passed(&self) -> u64 {
        self.passed.saturating_sub(self.skipped)
    }

    /// Binaries that started and never gave their result.
    fn unfinished(&self) -> u64 {
        self.started.saturating_sub(self.binaries)
    }

    /// The last line: the project's total, and what did not run to the end. `cargo_ok` is
    /// whether cargo itself succeeded: when it did not, with no test failed and no binary cut
    /// short, cargo stopped before running them all (a build error), which the line says.
    fn total(&self, cargo_ok: bool, secs: f64) -> String {
        let plural = |n: u64| if n == 1 { "y" } else { "ies" };
        let mut line = format!(
            "tests: {} passed, {} failed, {} ignored, {} skipped, in {} test binar{}",
            self.ran_and_passed(),
            self.failed,
            self.ignored,
            self.skipped,
            self.binaries,
            plural(self.binaries)
        );
        let unfinished = self.unfinished();
        if unfinished > 0 {
            line +=
                &format!(
                "; {unfinished} more test binar{} started and never finished (crashed or killed: \
                 see above), so {} not run to the end",
                plural(unfinished),
                if unfinished == 1 { "its tests were" } else { "their tests were" }
            );
        } else if !cargo_ok && self.failed == 0 {
            line += "; cargo test stopped before running every test binary (its error is above)";
        }
        line + &format!(" ({secs:.0} s)")
    }
}

/// The skips of a run's file of skips ([`skip::record`]: `TEST: REASON`, a line each), in
/// order of their test.
fn skips(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines.sort_unstable();
    lines
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: cargo xtask test [ARGS for cargo test]\n       cargo xtask vs [NAME…|all] [OPTIONS] (--help)\n       cargo xtask law-ref FILE…"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("test") => {}
        Some("vs") => return vs::main(args.collect()),
        Some("law-ref") => return lawref::main(args.collect()),
        _ => return usage(),
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let start = Instant::now();
    let args: Vec<String> = args.collect();
    // cargo test stops at the first failing binary: the total would leave the rest out.
    let fail_fast = !args.iter().any(|a| a == "--no-fail-fast");
    // This run's file of skips, which the tests append to (`skip::skip`).
    let skips_file = std::env::temp_dir().join(format!("oscost-test-skips-{}", std::process::id()));
    if let Err(e) = std::fs::write(&skips_file, "") {
        eprintln!("xtask: could not make {}: {e}", skips_file.display());
        return ExitCode::from(2);
    }
    let child = Command::new(cargo)
        .arg("test")
        .args(fail_fast.then_some("--no-fail-fast"))
        .args(&args)
        .env(skip::SKIPS_FILE, &skips_file)
        .current_dir(root)
        .stdout(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_file(&skips_file);
            eprintln!("xtask: could not start cargo: {e}");
            return ExitCode::from(2);
        }
    };
    let mut tally = Tally::default();
    let out = std::io::stdout();
    if let Some(pipe) = child.stdout.take() {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            tally.add(&line);
            let mut out = out.lock();
            // A closed standard output (`| head`) must not stop the tests half-way.
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }
    let status = child.wait();
    let skipped = std::fs::read_to_string(&skips_file);
    let _ = std::fs::remove_file(&skips_file);
    let status = match status {
        Ok(s) => s,
        Err(e) => {
            eprintln!("xtask: cargo test did not finish: {e}");
            return ExitCode::from(2);
        }
    };
    let skipped = match skipped {
        Ok(text) => text,
        Err(e) => {
            eprintln!("xtask: could not read {}: {e}", skips_file.display());
            return ExitCode::from(2);
        }
    };
    let skipped = skips(&skipped);
    tally.skipped = skipped.len() as u64;
    if !skipped.is_empty() {
        println!("\nskipped, as they cannot run here:");
        for line in skipped {
            println!("    {line}");
        }
    }
    println!(
        "\n{}",
        tally.total(status.success(), start.elapsed().as_secs_f64())
    );
    if !status.success() || tally.failed > 0 || tally.unfinished() > 0 {
        return ExitCode::FAILURE;
    }
    if tally.ran_and_passed() == 0 {
        eprintln!("xtask: no test ran");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_lines_add_up_and_others_are_ignored() {
        let mut t = Tally::default();
        for line in [
            "running 9 tests",
            "test result: ok. 8 passed; 0 failed; 1 ignored; 0 measured; 86 filtered out; finished in 0.00s",
            "running 3 tests",
            "test a ... ok",
            "test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.20s",
            "running 0 tests",
            "test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s",
        ] {
            t.add(line);
        }
        assert_eq!(
            t,
            Tally {
                passed: 10,
                failed: 1,
                ignored: 1,
                skipped: 0,
                binaries: 3,
                started: 3,
            }
        );
        assert_eq!(t.unfinished(), 0);
    }

    /// A binary that started and gave no result (it crashed) is counted and said in the
    /// total, beside the binaries that finished; a cargo that failed with no test failed
    /// (a build error) is said too.
    #[test]
    fn the_total_says_what_did_not_run_to_the_end() {
        let mut t = Tally::default();
        for line in [
            "running 2 tests",
            "test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.10s",
            "running 5 tests",
            "test a ... ok",
            "running 1 test",
            "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s",
        ] {
            t.add(line);
        }
        assert_eq!((t.binaries, t.started, t.unfinished()), (2, 3, 1));
        assert_eq!(
            t.total(false, 54.2),
            "tests: 3 passed, 0 failed, 0 ignored, 0 skipped, in 2 test binaries; 1 more test binary \
             started and never finished (crashed or killed: see above), so its tests were not \
             run to the end (54 s)"
        );
        let mut built_nothing = Tally::default();
        built_nothing.add("running 1 test");
        built_nothing.add(
            "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s",
        );
        assert!(built_nothing
            .total(false, 1.0)
            .contains("cargo test stopped before running every test binary"));
        assert_eq!(
            built_nothing.total(true, 1.0),
            "tests: 1 passed, 0 failed, 0 ignored, 0 skipped, in 1 test binary (1 s)"
        );
    }

    /// A skipping test: the total counts it as skipped and not as passed, and the file of
    /// skips names it with its reason. Run in a test process of its own, as a test binary is
    /// under `cargo xtask test`, with the file of skips named in the environment.
    #[test]
    fn a_skipping_test_is_counted_as_skipped_not_passed() {
        let file = std::env::temp_dir().join(format!("oscost-xtask-skips-{}", std::process::id()));
        std::fs::write(&file, "").unwrap();
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "tests::a_test_that_skips"])
            .env(skip::SKIPS_FILE, &file)
            .output()
            .unwrap();
        let text = std::fs::read_to_string(&file);
        std::fs::remove_file(&file).unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        let mut t = Tally::default();
        for line in stdout.lines() {
            t.add(line);
        }
        let text = text.unwrap();
        let skipped = skips(&text);
        assert_eq!(
            skipped,
            ["tests::a_test_that_skips: needs a reason to skip"]
        );
        t.skipped = skipped.len() as u64;
        assert_eq!(
            t.total(true, 0.2),
            "tests: 0 passed, 0 failed, 0 ignored, 1 skipped, in 1 test binary (0 s)"
        );
    }

    /// Run only by [`a_skipping_test_is_counted_as_skipped_not_passed`].
    #[test]
    #[ignore = "a test that skips, run by a_skipping_test_is_counted_as_skipped_not_passed"]
    fn a_test_that_skips() {
        skip::skip("needs a reason to skip");
    }

    /// Skips of tests running at once are a line each, read in order of their test; the
    /// passes of the total leave them out, and a skip is never counted twice.
    #[test]
    fn skips_are_taken_from_the_passes() {
        let file = std::env::temp_dir().join(format!("oscost-xtask-record-{}", std::process::id()));
        let threads: Vec<_> = ["b::late", "a::early", "c::last"]
            .into_iter()
            .map(|name| {
                let file = file.clone();
                std::thread::spawn(move || {
                    skip::record(&file, name, "needs root\nand tracefs").unwrap();
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::remove_file(&file).unwrap();
        assert_eq!(
            skips(&text),
            [
                "a::early: needs root and tracefs",
                "b::late: needs root and tracefs",
                "c::last: needs root and tracefs"
            ]
        );
        let mut t = Tally::default();
        t.add("running 5 tests");
        t.add(
            "test result: ok. 4 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.30s",
        );
        t.skipped = skips(&text).len() as u64;
        assert_eq!(t.ran_and_passed(), 1);
        assert_eq!(
            t.total(true, 3.0),
            "tests: 1 passed, 0 failed, 1 ignored, 3 skipped, in 1 test binary (3 s)"
        );
    }
}

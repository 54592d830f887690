//! `cargo xtask test [ARGS]`: runs `cargo test ARGS` as it is, then prints one line with the
//! project's total, which cargo itself never does (it prints one summary per test binary,
//! the last of which is often a crate's empty doc-tests).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

/// The counts of one or more `test result:` lines.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Tally {
    passed: u64,
    failed: u64,
    ignored: u64,
    binaries: u64,
}

impl Tally {
    /// Adds a libtest summary line (`test result: ok. 8 passed; 0 failed; 1 ignored; …`);
    /// any other line is left alone.
    fn add(&mut self, line: &str) {
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
}

fn usage() -> ExitCode {
    eprintln!("usage: cargo xtask test [ARGS for cargo test]");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() != Some("test") {
        return usage();
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let start = Instant::now();
    let child = Command::new(cargo)
        .arg("test")
        .args(args)
        .current_dir(root)
        .stdout(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
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
    let status = match child.wait() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("xtask: cargo test did not finish: {e}");
            return ExitCode::from(2);
        }
    };
    println!(
        "\ntests: {} passed, {} failed, {} ignored, in {} test binar{} ({:.0} s)",
        tally.passed,
        tally.failed,
        tally.ignored,
        tally.binaries,
        if tally.binaries == 1 { "y" } else { "ies" },
        start.elapsed().as_secs_f64()
    );
    if !status.success() || tally.failed > 0 {
        return ExitCode::FAILURE;
    }
    if tally.passed == 0 {
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
            "test result: ok. 8 passed; 0 failed; 1 ignored; 0 measured; 86 filtered out; finished in 0.00s",
            "running 3 tests",
            "test a ... ok",
            "test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.20s",
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
                binaries: 3
            }
        );
    }
}

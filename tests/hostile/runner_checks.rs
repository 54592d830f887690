//! The runner's own checks fail when what they look for is there: each test below provokes one
//! leftover or one broken promise with a stand-in for oscost (a shell), and expects the case to
//! fail saying so. Without these, a check that never fires would pass every case.

use std::process::Command;

use crate::runner::{case, Case};

/// `sh -c SCRIPT` set up as the case's processes.
fn sh(c: &Case, script: &str) -> Command {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", script]);
    c.prepare(&mut cmd);
    cmd
}

#[test]
#[should_panic(expected = "left temporary files in the working directory")]
fn a_temporary_file_left_in_the_working_directory_fails_the_case() {
    case(false, |c| c.write(".tmpAbC123", "half a document"));
}

#[test]
#[should_panic(expected = "left in TMPDIR")]
fn a_run_directory_left_in_tmpdir_fails_the_case() {
    case(false, |c| {
        std::fs::create_dir(c.tmp.join("oscost-run-1")).unwrap()
    });
}

#[test]
#[should_panic(expected = "left processes running")]
fn a_process_left_running_fails_the_case() {
    case(false, |c| {
        // Detached, as a helper that outlives its run would be; the case's end kills it.
        c.run(&mut sh(c, "sleep 30 </dev/null >/dev/null 2>&1 & exit 0"))
            .rc(0);
    });
}

#[test]
#[should_panic(expected = "left SysV semaphore sets")]
fn a_sysv_set_left_fails_the_case() {
    // Alone: the set this makes must be the only one that appears meanwhile.
    case(true, |c| {
        c.run(&mut sh(c, "ipcmk -S 1 >/dev/null")).rc(0);
    });
}

#[test]
#[should_panic(expected = "panic: exit 101")]
fn exit_101_is_a_panic() {
    case(false, |c| {
        c.run(&mut sh(c, "exit 101"));
    });
}

#[test]
#[should_panic(expected = "panic:")]
fn a_panic_message_is_a_panic() {
    case(false, |c| {
        c.run(&mut sh(
            c,
            "echo \"thread 'main' panicked at src/main.rs:1:1\" >&2; exit 2",
        ));
    });
}

#[test]
#[should_panic(expected = "working directory changed")]
fn a_refusal_that_wrote_a_file_fails_the_case() {
    case(false, |c| {
        c.refused_cmd(
            "no",
            &mut sh(c, "echo x >r.json; echo 'oscost: no' >&2; exit 2"),
        );
    });
}

#[test]
#[should_panic(expected = "printed on stdout before refusing")]
fn a_refusal_that_printed_fails_the_case() {
    case(false, |c| {
        c.refused_cmd(
            "no",
            &mut sh(c, "echo table; echo 'oscost: no' >&2; exit 2"),
        );
    });
}

#[test]
#[should_panic(expected = "stderr has not one line")]
fn a_refusal_in_two_lines_fails_the_case() {
    case(false, |c| {
        c.refused_cmd(
            "no",
            &mut sh(c, "printf 'oscost: no\\nmore\\n' >&2; exit 2"),
        );
    });
}

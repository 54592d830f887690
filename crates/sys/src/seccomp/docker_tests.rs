//! Docker-format profiles compiled and installed in forked children, each call's outcome
//! checked against what the profile says.

use super::*;
use crate::shm::SharedWords;
use oscost_model::seccomp_profile::{parse, Machine, Op};

/// What a child saw: each probe's return value or errno, and the signal that ended it.
#[derive(Debug)]
struct Seen {
    results: Vec<Result<u64, u32>>,
    signal: Option<i32>,
}

const UNSET: u64 = u64::MAX;
const ERR: u64 = 1 << 63;

fn machine() -> Machine {
    Machine {
        arches: vec!["amd64".into(), "x86_64".into()],
        caps: Vec::new(),
        kernel: (6, 1),
    }
}

fn compile(json: &str) -> Compiled {
    Program::from_docker(&parse(json).unwrap(), &machine()).unwrap()
}

/// Forks a child that installs `p` and makes each call of `probes` (number and six
/// arguments), writing what it got to shared words: `None` when the child could not install
/// the filter (no seccomp here).
fn run(p: &Program, probes: &[(i64, [u64; 6])]) -> Option<Seen> {
    let n = probes.len();
    let words = SharedWords::new(n + 2).unwrap();
    for i in 0..n + 2 {
        words.get(i).store(UNSET, Ordering::Relaxed);
    }
    // SAFETY: the child only makes raw calls (prctl, seccomp, the probes), stores to shared
    // atomics and leaves with _exit; the probes' arguments are plain integers that getpid and
    // the like ignore.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
    if pid == 0 {
        if install_now(p) != 0 {
            let e = io::Error::last_os_error().raw_os_error().unwrap_or(0);
            words.get(n).store(2, Ordering::Release);
            words.get(n + 1).store(e as u64, Ordering::Release);
            // SAFETY: ends the forked child at once.
            unsafe { libc::_exit(0) };
        }
        words.get(n).store(1, Ordering::Release);
        for (i, (nr, a)) in probes.iter().enumerate() {
            // SAFETY: see above: the calls probed take no pointers.
            let r = unsafe { libc::syscall(*nr, a[0], a[1], a[2], a[3], a[4], a[5]) };
            let v = if r < 0 {
                ERR | io::Error::last_os_error().raw_os_error().unwrap_or(0) as u64
            } else {
                r as u64
            };
            words.get(i).store(v, Ordering::Release);
        }
        // SAFETY: as above.
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: pid is our child; status is a valid int to fill.
    let r = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(r, pid);
    if words.get(n).load(Ordering::Acquire) == 2 {
        eprintln!(
            "installing the filter failed: errno {}",
            words.get(n + 1).load(Ordering::Acquire)
        );
        return None;
    }
    let results = (0..n)
        .map(|i| match words.get(i).load(Ordering::Acquire) {
            v if v & ERR != 0 && v != UNSET => Err((v & !ERR) as u32),
            v => Ok(v),
        })
        .collect();
    let signal = libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status));
    Some(Seen { results, signal })
}

fn call(nr: i64) -> (i64, [u64; 6]) {
    (nr, [0; 6])
}

/// The rules every test profile whose default refuses needs, so the child can leave.
const LEAVE: &str = r#"{"names": ["exit", "exit_group"], "action": "SCMP_ACT_ALLOW"}"#;

#[test]
fn a_small_profile_allows_and_refuses_as_it_says() {
    let c = compile(&format!(
        r#"{{
        "defaultAction": "SCMP_ACT_ERRNO",
        "syscalls": [
            {LEAVE},
            {{"names": ["getpid", "not_a_call_here"], "action": "SCMP_ACT_ALLOW"}},
            {{"names": ["getppid"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38}},
            {{"names": ["getuid"], "action": "SCMP_ACT_ALLOW",
              "args": [{{"index": 0, "value": 4294967295, "op": "SCMP_CMP_GT"}}]}},
            {{"names": ["gettid"], "action": "SCMP_ACT_ALLOW", "includes": {{"arches": ["arm64"]}}}},
            {{"names": ["getgid"], "action": "SCMP_ACT_ALLOW", "includes": {{"minKernel": "99.0"}}}},
            {{"names": ["getegid"], "action": "SCMP_ACT_ALLOW", "excludes": {{"caps": ["CAP_SYS_ADMIN"]}}}}
        ]}}"#
    ));
    assert_eq!(c.ignored, ["not_a_call_here"]);
    let Some(seen) = run(
        &c.program,
        &[
            call(libc::SYS_getpid),
            call(libc::SYS_getppid),
            (libc::SYS_getuid, [1 << 32, 0, 0, 0, 0, 0]),
            (libc::SYS_getuid, [0xffff_ffff, 0, 0, 0, 0, 0]),
            call(libc::SYS_gettid),
            call(libc::SYS_getgid),
            call(libc::SYS_getegid),
        ],
    ) else {
        return crate::skip::skip("needs seccomp filters");
    };
    assert_eq!(seen.signal, None);
    let r = &seen.results;
    assert!(r[0].is_ok(), "{r:?}");
    assert_eq!(r[1], Err(38));
    assert!(r[2].is_ok(), "{r:?}");
    assert_eq!(r[3], Err(1));
    assert_eq!(r[4], Err(1), "a rule for another architecture");
    assert_eq!(r[5], Err(1), "a rule for a newer kernel");
    assert!(
        r[6].is_ok(),
        "a rule excluded only with CAP_SYS_ADMIN: {r:?}"
    );
}

#[test]
fn comparisons_hold_over_both_halves_of_64_bits() {
    let value: u64 = 0x1_0000_0005;
    let args: [u64; 12] = [
        0,
        5,
        6,
        0xffff_ffff,
        0x1_0000_0004,
        0x1_0000_0005,
        0x1_0000_0006,
        0x2_0000_0000,
        0x2_0000_0005,
        0x1_ffff_ffff,
        0xffff_ffff_0000_0005,
        u64::MAX,
    ];
    let ops = [
        ("SCMP_CMP_EQ", Op::Eq, 0),
        ("SCMP_CMP_NE", Op::Ne, 0),
        ("SCMP_CMP_LT", Op::Lt, 0),
        ("SCMP_CMP_LE", Op::Le, 0),
        ("SCMP_CMP_GT", Op::Gt, 0),
        ("SCMP_CMP_GE", Op::Ge, 0),
        ("SCMP_CMP_MASKED_EQ", Op::MaskedEq, 0x1_0000_0004u64),
    ];
    for (name, op, two) in ops {
        // Argument 3, so the offsets of an argument other than the first are checked too.
        let c = compile(&format!(
            r#"{{"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 7, "syscalls": [{LEAVE},
              {{"names": ["getpid"], "action": "SCMP_ACT_ALLOW",
                "args": [{{"index": 3, "value": {value}, "valueTwo": {two}, "op": "{name}"}}]}}]}}"#
        ));
        let probes: Vec<_> = args
            .iter()
            .map(|&a| (libc::SYS_getpid, [0, 0, 0, a, 0, 0]))
            .collect();
        let Some(seen) = run(&c.program, &probes) else {
            return crate::skip::skip("needs seccomp filters");
        };
        for (a, got) in args.iter().zip(&seen.results) {
            let want = op.holds(*a, value, two);
            assert_eq!(
                got.is_ok(),
                want,
                "{name} {a:#x} against {value:#x}: {got:?}"
            );
            if !want {
                assert_eq!(*got, Err(7));
            }
        }
    }
}

#[test]
fn arguments_of_a_rule_are_anded_and_rules_of_a_call_tried_in_order() {
    let c = compile(
        r#"{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
          {"names": ["getpid"], "action": "SCMP_ACT_ERRNO", "errnoRet": 5,
           "args": [{"index": 0, "value": 1, "op": "SCMP_CMP_EQ"},
                    {"index": 1, "value": 2, "op": "SCMP_CMP_EQ"}]},
          {"names": ["getpid"], "action": "SCMP_ACT_ERRNO", "errnoRet": 6,
           "args": [{"index": 1, "value": 2, "op": "SCMP_CMP_EQ"}]},
          {"names": ["getppid"], "action": "SCMP_ACT_KILL_PROCESS"}
        ]}"#,
    );
    let a = |x: u64, y: u64| (libc::SYS_getpid, [x, y, 0, 0, 0, 0]);
    let Some(seen) = run(&c.program, &[a(1, 2), a(0, 2), a(1, 0), a(0, 0)]) else {
        return crate::skip::skip("needs seccomp filters");
    };
    let r = &seen.results;
    assert_eq!(r[0], Err(5));
    assert_eq!(r[1], Err(6));
    assert!(r[2].is_ok() && r[3].is_ok(), "{r:?}");
    let Some(seen) = run(
        &c.program,
        &[call(libc::SYS_getpid), call(libc::SYS_getppid)],
    ) else {
        return crate::skip::skip("needs seccomp filters");
    };
    assert_eq!(seen.signal, Some(libc::SIGSYS), "{seen:?}");
    assert!(seen.results[0].is_ok());
    assert_eq!(seen.results[1], Ok(UNSET), "killed before it could write");
}

/// A profile of `n` rules for getpid, rule `i` refusing argument 0 equal to `i` with errno
/// `i + 1` (mod 4000, to stay an errno).
fn many_rules(n: u64) -> String {
    let rules: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"names": ["getpid"], "action": "SCMP_ACT_ERRNO", "errnoRet": {},
                  "args": [{{"index": 0, "value": {i}, "op": "SCMP_CMP_EQ"}}]}}"#,
                i % 4000 + 1
            )
        })
        .collect();
    format!(
        r#"{{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{}]}}"#,
        rules.join(",")
    )
}

#[test]
fn a_long_block_is_jumped_over_and_a_too_long_profile_is_refused() {
    let c = compile(&many_rules(100));
    assert!(c.program.len() > 300, "{}", c.program.len());
    check_jumps(&c.program);
    let p = |x: u64| (libc::SYS_getpid, [x, 0, 0, 0, 0, 0]);
    let Some(seen) = run(&c.program, &[p(77), p(1000), call(libc::SYS_getppid)]) else {
        return crate::skip::skip("needs seccomp filters");
    };
    assert_eq!(seen.results[0], Err(78));
    assert!(
        seen.results[1].is_ok() && seen.results[2].is_ok(),
        "{seen:?}"
    );

    let e = Program::from_docker(&parse(&many_rules(1000)).unwrap(), &machine()).unwrap_err();
    assert!(
        matches!(e, CompileError::TooLong(n) if n > MAX_INSNS),
        "{e}"
    );
    assert!(e.to_string().contains("more than the kernel's 4096"), "{e}");

    let args: Vec<String> = (0..70)
        .map(|i| format!(r#"{{"index": 0, "value": {i}, "op": "SCMP_CMP_NE"}}"#))
        .collect();
    let long = format!(
        r#"{{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{{"names": ["getpid"],
          "action": "SCMP_ACT_ERRNO", "args": [{}]}}]}}"#,
        args.join(",")
    );
    let e = Program::from_docker(&parse(&long).unwrap(), &machine()).unwrap_err();
    assert_eq!(e, CompileError::RuleTooLong("getpid".into()));
}

fn check_jumps(p: &Program) {
    assert!(p.len() <= MAX_INSNS);
    for (i, ins) in p.0.iter().enumerate() {
        if ins.code & 0x07 == libc::BPF_JMP as u16 {
            let far = if ins.code == (libc::BPF_JMP | libc::BPF_JA) as u16 {
                i + 1 + ins.k as usize
            } else {
                i + 1 + usize::from(ins.jt.max(ins.jf))
            };
            assert!(far < p.len(), "jump at {i} leaves the program");
        }
    }
}

#[test]
fn the_test_fixture_compiles_and_runs_a_program() {
    let text = include_str!("../../../../tests/fixtures/seccomp/small.json");
    let c = Program::from_docker(&parse(text).unwrap(), &this_machine()).unwrap();
    check_jumps(&c.program);
    let Some(seen) = run(
        &c.program,
        &[
            call(libc::SYS_getpid),
            call(libc::SYS_mount),
            call(libc::SYS_uname),
        ],
    ) else {
        return crate::skip::skip("needs seccomp filters");
    };
    assert!(seen.results[0].is_ok(), "{seen:?}");
    assert_eq!(seen.results[1], Err(libc::EPERM as u32));
}

#[cfg(target_arch = "x86_64")]
#[test]
fn the_built_in_list_takes_its_numbers_from_the_name_table() {
    // One table of names and numbers: the built-in profile's list only picks names from it,
    // and the numbers are the C library's.
    for &name in PROFILE_CALLS {
        assert!(call_number(name).is_some(), "{name}");
    }
    assert_eq!(call_number("getpid"), Some(libc::SYS_getpid as u32));
    assert_eq!(
        call_number("personality"),
        Some(libc::SYS_personality as u32)
    );
    assert!(Program::profile().is_some());
    assert_eq!(call_number("clone3"), Some(libc::SYS_clone3 as u32));
    assert_eq!(call_number("riscv_flush_icache"), None);
}

/// A profile shaped as Docker's default one: every call of the built-in list allowed in one
/// rule, a few with argument rules of their own, names of other architectures among them,
/// everything else refused.
#[cfg(target_arch = "x86_64")]
#[test]
fn a_default_deny_profile_of_300_calls_compiles_short_and_runs() {
    let names: Vec<String> = PROFILE_CALLS
        .iter()
        .filter(|n| **n != "personality")
        .map(|n| format!("\"{n}\""))
        .chain(["\"arm_fadvise64_64\"".into(), "\"_llseek\"".into()])
        .collect();
    let c = compile(&format!(
        r#"{{"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
          "archMap": [{{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"]}}],
          "syscalls": [
            {{"names": [{}], "action": "SCMP_ACT_ALLOW", "args": [], "comment": "", "includes": {{}}, "excludes": {{}}}},
            {{"names": ["personality"], "action": "SCMP_ACT_ALLOW", "args": [{{"index": 0, "value": 0, "valueTwo": 0, "op": "SCMP_CMP_EQ"}}]}},
            {{"names": ["personality"], "action": "SCMP_ACT_ALLOW", "args": [{{"index": 0, "value": 8, "valueTwo": 0, "op": "SCMP_CMP_EQ"}}]}}
          ]}}"#,
        names.join(",")
    ));
    assert_eq!(c.ignored, ["arm_fadvise64_64", "_llseek"]);
    // Two instructions a call allowed whatever its arguments, plus the head and the rules.
    assert!(
        c.program.len() < 2 * PROFILE_CALLS.len() + 40,
        "{}",
        c.program.len()
    );
    check_jumps(&c.program);
    let Some(seen) = run(
        &c.program,
        &[
            call(libc::SYS_getpid),
            call(libc::SYS_mount),
            (libc::SYS_personality, [8, 0, 0, 0, 0, 0]),
            (libc::SYS_personality, [0x10_0000_0008, 0, 0, 0, 0, 0]),
            call(libc::SYS_getppid),
        ],
    ) else {
        return crate::skip::skip("needs seccomp filters");
    };
    let r = &seen.results;
    assert!(r[0].is_ok() && r[4].is_ok(), "{r:?}");
    assert_eq!(r[1], Err(libc::EPERM as u32));
    assert!(r[2].is_ok(), "{r:?}");
    assert_eq!(r[3], Err(libc::EPERM as u32), "the high half compared too");
}

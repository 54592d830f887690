//! A Docker-format seccomp profile compiled into one classic BPF filter.
//!
//! The filter is shaped as libseccomp's linear one: the architecture check, calls of the x32
//! ABI given the default action (oscost compiles the rules for the native ABI only), then one
//! block per named call, in the order the file first names it: the call's number, then each
//! of its rules in turn (its argument comparisons, all of which must hold, then its action),
//! and the default action when none applies. Names this architecture does not have are left
//! out, as libseccomp leaves them out. The numbers come from the `syscalls` crate's table, the
//! one that names the calls of a bill, so a profile and a bill spell every call alike.

use super::{op, stmt, Program, LD_ABS, OFF_NR, RET};
use oscost_model::seccomp_profile::{Action, Arg, Chosen, DockerProfile, Machine, Op};
use std::str::FromStr;

const JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JGT: u16 = (libc::BPF_JMP | libc::BPF_JGT | libc::BPF_K) as u16;
const JGE: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const AND: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
/// The kernel's limit on a filter's instructions (`BPF_MAXINSNS`).
pub const MAX_INSNS: usize = 4096;
/// The low half of argument 0 in `struct seccomp_data`; each argument takes 8 bytes.
const OFF_ARGS: u32 = 16;

/// The capabilities by bit, as `/proc/self/status` counts them (`linux/capability.h`).
const CAPS: [&str; 41] = [
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
];

/// This machine as a profile's `includes` and `excludes` see it: its architecture's names,
/// the capabilities this process holds (its effective set), the running kernel's version.
pub fn this_machine() -> Machine {
    let arches: &[&str] = if cfg!(target_arch = "x86_64") {
        &["amd64", "x86_64"]
    } else if cfg!(target_arch = "aarch64") {
        &["arm64", "aarch64"]
    } else {
        &[]
    };
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    Machine {
        arches: arches.iter().map(|a| (*a).to_owned()).collect(),
        caps: CAPS
            .iter()
            .enumerate()
            .filter(|(bit, _)| eff & (1 << bit) != 0)
            .map(|(_, c)| (*c).to_owned())
            .collect(),
        kernel: oscost_model::seccomp_profile::kernel_version(&release).unwrap_or((0, 0)),
    }
}

/// The number of call `name` on this architecture, `None` for a name it does not have.
pub fn call_number(name: &str) -> Option<u32> {
    syscalls::Sysno::from_str(name).ok().map(|s| s.id() as u32)
}

/// A profile compiled for one machine.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The filter.
    pub program: Program,
    /// The rules that apply on the machine, in the file's order.
    pub chosen: Vec<Chosen>,
    /// Names of those rules this architecture has no call of, left out.
    pub ignored: Vec<String>,
}

/// Why a profile does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// More instructions than the kernel takes.
    #[error("it compiles to {0} BPF instructions, more than the kernel's {MAX_INSNS}")]
    TooLong(usize),
    /// One rule's comparisons are too many for a jump of classic BPF.
    #[error("the rule for {0} has too many argument comparisons for one filter jump")]
    RuleTooLong(String),
    /// An action oscost cannot install.
    #[error("{0} cannot be installed here")]
    Action(&'static str),
}

/// Where a jump goes: the next instruction or a label.
#[derive(Debug, Clone, Copy)]
enum To {
    Next,
    L(usize),
}

/// Instructions with labelled jumps, resolved to the u8 offsets classic BPF takes.
#[derive(Default)]
struct Asm {
    ins: Vec<(u16, To, To, u32)>,
    labels: Vec<usize>,
}

impl Asm {
    fn label(&mut self) -> usize {
        self.labels.push(usize::MAX);
        self.labels.len() - 1
    }
    fn here(&mut self, l: usize) {
        self.labels[l] = self.ins.len();
    }
    fn stmt(&mut self, code: u16, k: u32) {
        self.ins.push((code, To::Next, To::Next, k));
    }
    fn jump(&mut self, code: u16, k: u32, jt: To, jf: To) {
        self.ins.push((code, jt, jf, k));
    }
    /// The instructions; `None` when a jump is beyond 255 instructions.
    fn finish(self) -> Option<Vec<libc::sock_filter>> {
        let off = |i: usize, t: To| -> Option<u8> {
            match t {
                To::Next => Some(0),
                To::L(l) => u8::try_from(self.labels[l].checked_sub(i + 1)?).ok(),
            }
        };
        self.ins
            .iter()
            .enumerate()
            .map(|(i, &(code, jt, jf, k))| Some(op(code, off(i, jt)?, off(i, jf)?, k)))
            .collect()
    }
}

/// The return value of `action` (with `errno` for the errno and trace actions).
fn ret(action: Action, errno: u32) -> Result<u32, CompileError> {
    let data = errno & libc::SECCOMP_RET_DATA;
    Ok(match action {
        Action::Allow => libc::SECCOMP_RET_ALLOW,
        Action::Errno => libc::SECCOMP_RET_ERRNO | data,
        Action::Kill | Action::KillThread => libc::SECCOMP_RET_KILL_THREAD,
        Action::KillProcess => libc::SECCOMP_RET_KILL_PROCESS,
        Action::Trap => libc::SECCOMP_RET_TRAP,
        Action::Trace => libc::SECCOMP_RET_TRACE | data,
        Action::Log => libc::SECCOMP_RET_LOG,
        Action::Notify => return Err(CompileError::Action(Action::Notify.name())),
    })
}

/// One comparison: falls through when it holds, jumps to `fail` when not. A 64-bit argument
/// is two 32-bit words, the high one at the higher offset (little-endian).
fn compare(a: &mut Asm, arg: &Arg, fail: usize) {
    let lo = OFF_ARGS + 8 * arg.index;
    let hi = lo + 4;
    let (vh, vl) = ((arg.value >> 32) as u32, arg.value as u32);
    let f = To::L(fail);
    let pass = a.label();
    let s = To::L(pass);
    let n = To::Next;
    match arg.op {
        Op::Eq => {
            a.stmt(LD_ABS, hi);
            a.jump(JEQ, vh, n, f);
            a.stmt(LD_ABS, lo);
            a.jump(JEQ, vl, n, f);
        }
        Op::Ne => {
            a.stmt(LD_ABS, hi);
            a.jump(JEQ, vh, n, s);
            a.stmt(LD_ABS, lo);
            a.jump(JEQ, vl, f, n);
        }
        Op::Gt | Op::Ge => {
            a.stmt(LD_ABS, hi);
            a.jump(JGT, vh, s, n);
            a.jump(JEQ, vh, n, f);
            a.stmt(LD_ABS, lo);
            a.jump(if arg.op == Op::Gt { JGT } else { JGE }, vl, n, f);
        }
        Op::Lt | Op::Le => {
            a.stmt(LD_ABS, hi);
            a.jump(JGT, vh, f, n);
            a.jump(JEQ, vh, n, s);
            a.stmt(LD_ABS, lo);
            a.jump(if arg.op == Op::Lt { JGE } else { JGT }, vl, f, n);
        }
        Op::MaskedEq => {
            let (mh, ml) = (vh, vl);
            let (wh, wl) = ((arg.value_two >> 32) as u32, arg.value_two as u32);
            a.stmt(LD_ABS, hi);
            a.stmt(AND, mh);
            a.jump(JEQ, wh, n, f);
            a.stmt(LD_ABS, lo);
            a.stmt(AND, ml);
            a.jump(JEQ, wl, n, f);
        }
    }
    a.here(pass);
}

/// One call's block: its rules in turn, then the default. Self-contained: every jump lands
/// inside it and it ends in a return.
fn block(
    name: &str,
    rules: &[&Chosen],
    default: u32,
) -> Result<Vec<libc::sock_filter>, CompileError> {
    let mut a = Asm::default();
    let mut falls_out = true;
    for r in rules {
        let fail = a.label();
        for arg in &r.args {
            compare(&mut a, arg, fail);
        }
        a.stmt(RET, ret(r.action, r.errno)?);
        a.here(fail);
        if r.args.is_empty() {
            // Always applies: the rules after it never would.
            falls_out = false;
            break;
        }
    }
    if falls_out {
        a.stmt(RET, default);
    }
    a.finish()
        .ok_or_else(|| CompileError::RuleTooLong(name.into()))
}

impl Program {
    /// Compiles `profile` for machine `m` (see [`this_machine`]).
    pub fn from_docker(profile: &DockerProfile, m: &Machine) -> Result<Compiled, CompileError> {
        let default = ret(profile.default_action, profile.default_errno())?;
        let chosen = profile.chosen(m);
        let mut ignored: Vec<String> = Vec::new();
        // Calls in the order the file first names them, each with its rules in order.
        let mut calls: Vec<(u32, &str, Vec<&Chosen>)> = Vec::new();
        for c in &chosen {
            let Some(nr) = call_number(&c.name) else {
                if !ignored.contains(&c.name) {
                    ignored.push(c.name.clone());
                }
                continue;
            };
            match calls.iter_mut().find(|(n, _, _)| *n == nr) {
                Some((_, _, rules)) => rules.push(c),
                None => calls.push((nr, &c.name, vec![c])),
            }
        }
        let mut p = Program::arch_check();
        p.push(stmt(LD_ABS, OFF_NR));
        #[cfg(target_arch = "x86_64")]
        p.extend([op(JGE, 0, 1, super::X32_BIT), stmt(RET, default)]);
        for (nr, name, rules) in &calls {
            let b = block(name, rules, default)?;
            if b.len() == 1 && b[0].k == default {
                // The call gets the default whatever it passes: no block needed.
                continue;
            }
            // A block returns on every path, so the accumulator still holds the number when
            // the next call's test is reached.
            match u8::try_from(b.len()) {
                Ok(len) => p.push(op(JEQ, 0, len, *nr)),
                Err(_) => {
                    p.push(op(JEQ, 1, 0, *nr));
                    p.push(stmt(JA, b.len() as u32));
                }
            }
            p.extend(b);
        }
        p.push(stmt(RET, default));
        if p.len() > MAX_INSNS {
            return Err(CompileError::TooLong(p.len()));
        }
        Ok(Compiled {
            program: Program(p),
            chosen,
            ignored,
        })
    }
}

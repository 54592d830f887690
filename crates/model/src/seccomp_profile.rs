//! A seccomp profile in Docker's JSON format (the format of moby's
//! `profiles/seccomp/default.json`), typed, checked, and its rules chosen for one machine.
//!
//! Pure data: the machine's facts (its architecture names, the capabilities the process holds,
//! the kernel's version) come from the caller, so the choice is the same on any machine given
//! the same facts. Compiling the chosen rules into a filter is `oscost_sys::seccomp`'s.

use serde::{Deserialize, Deserializer};

/// A whole profile file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DockerProfile {
    /// What a call no rule names gets.
    pub default_action: Action,
    /// The errno of an `SCMP_ACT_ERRNO` (or `SCMP_ACT_TRACE`) without one of its own;
    /// `EPERM` when absent.
    #[serde(default)]
    pub default_errno_ret: Option<u32>,
    /// The `SCMP_ARCH_*` architectures the filter covers besides the native one.
    #[serde(default, deserialize_with = "null_is_empty")]
    pub architectures: Vec<String>,
    /// Architectures by native one, with the ones that run on it.
    #[serde(default, deserialize_with = "null_is_empty")]
    pub arch_map: Vec<ArchMap>,
    /// The rules, in the file's order.
    #[serde(default, deserialize_with = "null_is_empty")]
    pub syscalls: Vec<Syscall>,
    /// A supervisor's socket (`SCMP_ACT_NOTIFY`): read, refused by [`DockerProfile::check`].
    #[serde(default)]
    pub listener_path: Option<String>,
    /// Metadata for that supervisor.
    #[serde(default)]
    pub listener_metadata: Option<String>,
    /// `SECCOMP_FILTER_FLAG_*` names to install with.
    #[serde(default, deserialize_with = "null_is_empty")]
    pub flags: Vec<String>,
}

/// One entry of `archMap`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ArchMap {
    /// The native architecture (`SCMP_ARCH_X86_64`).
    pub architecture: String,
    /// The architectures whose calls run on it (`SCMP_ARCH_X86`, `SCMP_ARCH_X32`).
    #[serde(default, deserialize_with = "null_is_empty")]
    pub sub_architectures: Vec<String>,
}

/// One rule: the calls it names, what they get, and when.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Syscall {
    /// One call (the older spelling); a rule has this or `names`, not both.
    #[serde(default)]
    pub name: Option<String>,
    /// The calls the rule names.
    #[serde(default, deserialize_with = "null_is_empty")]
    pub names: Vec<String>,
    /// What they get.
    pub action: Action,
    /// The errno of `SCMP_ACT_ERRNO` (the trace message of `SCMP_ACT_TRACE`).
    #[serde(default)]
    pub errno_ret: Option<u32>,
    /// Argument comparisons, all of which must hold for the rule to apply.
    #[serde(default, deserialize_with = "null_is_empty")]
    pub args: Vec<Arg>,
    /// Free text.
    #[serde(default)]
    pub comment: Option<String>,
    /// The rule applies only where all of these hold.
    #[serde(default)]
    pub includes: Option<Filter>,
    /// The rule does not apply where any of these holds.
    #[serde(default)]
    pub excludes: Option<Filter>,
}

/// The conditions of `includes` and `excludes`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Filter {
    /// Capability names (`CAP_SYS_ADMIN`).
    #[serde(default, deserialize_with = "null_is_empty")]
    pub caps: Vec<String>,
    /// Architecture names as Go spells them (`amd64`, `arm64`).
    #[serde(default, deserialize_with = "null_is_empty")]
    pub arches: Vec<String>,
    /// A kernel version, `MAJOR.MINOR`.
    #[serde(default)]
    pub min_kernel: Option<String>,
}

/// One argument comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Arg {
    /// The argument, 0 to 5.
    pub index: u32,
    /// The value compared with (the mask, for `SCMP_CMP_MASKED_EQ`).
    pub value: u64,
    /// The value the masked argument must equal (`SCMP_CMP_MASKED_EQ` only).
    #[serde(default)]
    pub value_two: u64,
    /// The comparison.
    pub op: Op,
}

/// What a call gets (libseccomp's `SCMP_ACT_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Action {
    /// Runs.
    #[serde(rename = "SCMP_ACT_ALLOW")]
    Allow,
    /// Fails with an errno.
    #[serde(rename = "SCMP_ACT_ERRNO")]
    Errno,
    /// Kills the thread (libseccomp's older name for `SCMP_ACT_KILL_THREAD`).
    #[serde(rename = "SCMP_ACT_KILL")]
    Kill,
    /// Kills the thread.
    #[serde(rename = "SCMP_ACT_KILL_THREAD")]
    KillThread,
    /// Kills the process.
    #[serde(rename = "SCMP_ACT_KILL_PROCESS")]
    KillProcess,
    /// Sends `SIGSYS`.
    #[serde(rename = "SCMP_ACT_TRAP")]
    Trap,
    /// Hands the call to a ptrace tracer (fails with `ENOSYS` without one).
    #[serde(rename = "SCMP_ACT_TRACE")]
    Trace,
    /// Runs, and the kernel logs it.
    #[serde(rename = "SCMP_ACT_LOG")]
    Log,
    /// Hands the call to a supervisor: read, refused by [`DockerProfile::check`].
    #[serde(rename = "SCMP_ACT_NOTIFY")]
    Notify,
}

impl Action {
    /// libseccomp's name.
    pub fn name(self) -> &'static str {
        match self {
            Action::Allow => "SCMP_ACT_ALLOW",
            Action::Errno => "SCMP_ACT_ERRNO",
            Action::Kill => "SCMP_ACT_KILL",
            Action::KillThread => "SCMP_ACT_KILL_THREAD",
            Action::KillProcess => "SCMP_ACT_KILL_PROCESS",
            Action::Trap => "SCMP_ACT_TRAP",
            Action::Trace => "SCMP_ACT_TRACE",
            Action::Log => "SCMP_ACT_LOG",
            Action::Notify => "SCMP_ACT_NOTIFY",
        }
    }

    /// Whether the call goes ahead (allowed or only logged).
    pub fn runs(self) -> bool {
        matches!(self, Action::Allow | Action::Log)
    }
}

/// An argument comparison (libseccomp's `SCMP_CMP_*`), unsigned and over all 64 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Op {
    /// Not equal.
    #[serde(rename = "SCMP_CMP_NE")]
    Ne,
    /// Less than.
    #[serde(rename = "SCMP_CMP_LT")]
    Lt,
    /// Less than or equal.
    #[serde(rename = "SCMP_CMP_LE")]
    Le,
    /// Equal.
    #[serde(rename = "SCMP_CMP_EQ")]
    Eq,
    /// Greater than or equal.
    #[serde(rename = "SCMP_CMP_GE")]
    Ge,
    /// Greater than.
    #[serde(rename = "SCMP_CMP_GT")]
    Gt,
    /// `(argument & value) == valueTwo`.
    #[serde(rename = "SCMP_CMP_MASKED_EQ")]
    MaskedEq,
}

impl Op {
    /// Whether `arg` passes the comparison with `value` (and `value_two`): the meaning the
    /// compiled filter must have.
    pub fn holds(self, arg: u64, value: u64, value_two: u64) -> bool {
        match self {
            Op::Ne => arg != value,
            Op::Lt => arg < value,
            Op::Le => arg <= value,
            Op::Eq => arg == value,
            Op::Ge => arg >= value,
            Op::Gt => arg > value,
            Op::MaskedEq => arg & value == value_two,
        }
    }
}

fn null_is_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// What the rules are chosen for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// The names of its architecture in `includes`/`excludes` (`amd64` and `x86_64`).
    pub arches: Vec<String>,
    /// The capabilities the process holds (`CAP_SYS_ADMIN`).
    pub caps: Vec<String>,
    /// The running kernel's major and minor version.
    pub kernel: (u32, u32),
}

/// A rule that applies on the machine, for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    /// The call's name.
    pub name: String,
    /// What it gets.
    pub action: Action,
    /// The errno (or trace message) of `SCMP_ACT_ERRNO` and `SCMP_ACT_TRACE`.
    pub errno: u32,
    /// The comparisons, all of which must hold.
    pub args: Vec<Arg>,
}

/// `EPERM`, what an errno action without one returns.
const EPERM: u32 = 1;

/// Reads a profile from its JSON text and checks it; the error says what is wrong (serde's
/// words, with the line and column, or the rule at fault).
pub fn parse(text: &str) -> Result<DockerProfile, String> {
    let p: DockerProfile = serde_json::from_str(text).map_err(|e| e.to_string())?;
    p.check()?;
    Ok(p)
}

/// A `MAJOR.MINOR` (or `MAJOR.MINOR.PATCH…`) version's first two numbers.
pub fn kernel_version(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.trim().split(['.', '-', '+']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

impl DockerProfile {
    /// Refuses what oscost cannot apply or what no runtime would accept: a rule with both
    /// `name` and `names` or with neither, an argument beyond the sixth, a `minKernel` that is
    /// not a version, and supervisors (`SCMP_ACT_NOTIFY`, `listenerPath`).
    pub fn check(&self) -> Result<(), String> {
        if self.default_action == Action::Notify {
            return Err(
                "defaultAction SCMP_ACT_NOTIFY needs a supervisor, which oscost does \
                        not run"
                    .into(),
            );
        }
        if self.listener_path.is_some() {
            return Err("listenerPath names a supervisor, which oscost does not run".into());
        }
        for (i, s) in self.syscalls.iter().enumerate() {
            let at = format!("syscalls[{i}]");
            match (&s.name, s.names.is_empty()) {
                (Some(_), false) => return Err(format!("{at} has both name and names")),
                (None, true) => return Err(format!("{at} names no system call")),
                _ => {}
            }
            if s.action == Action::Notify {
                return Err(format!(
                    "{at} is SCMP_ACT_NOTIFY, which needs a supervisor oscost does not run"
                ));
            }
            if let Some(a) = s.args.iter().find(|a| a.index > 5) {
                return Err(format!(
                    "{at} compares argument {} (a system call has arguments 0 to 5)",
                    a.index
                ));
            }
            for f in [&s.includes, &s.excludes].into_iter().flatten() {
                if let Some(k) = &f.min_kernel {
                    if kernel_version(k).is_none() {
                        return Err(format!(
                            "{at}: minKernel `{k}` is not a version (MAJOR.MINOR)"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The errno an errno action without its own returns.
    pub fn default_errno(&self) -> u32 {
        self.default_errno_ret.unwrap_or(EPERM)
    }

    /// The rules that apply on `m`, one per call named, in the file's order, as Docker
    /// chooses them: a rule is left out when an `excludes` condition holds (its architecture,
    /// any of its capabilities held, a kernel at least its `minKernel`) or an `includes` one
    /// does not (another architecture, a capability missing, an older kernel).
    pub fn chosen(&self, m: &Machine) -> Vec<Chosen> {
        let arch = |list: &[String]| list.iter().any(|a| m.arches.contains(a));
        let cap = |c: &String| m.caps.contains(c);
        let kernel =
            |k: &Option<String>| k.as_deref().and_then(kernel_version).map(|v| m.kernel >= v);
        let mut out = Vec::new();
        for s in &self.syscalls {
            if let Some(x) = &s.excludes {
                if (!x.arches.is_empty() && arch(&x.arches))
                    || x.caps.iter().any(cap)
                    || kernel(&x.min_kernel) == Some(true)
                {
                    continue;
                }
            }
            if let Some(i) = &s.includes {
                if (!i.arches.is_empty() && !arch(&i.arches))
                    || !i.caps.iter().all(cap)
                    || kernel(&i.min_kernel) == Some(false)
                {
                    continue;
                }
            }
            let errno = s.errno_ret.unwrap_or(self.default_errno());
            for name in s.name.iter().chain(&s.names) {
                out.push(Chosen {
                    name: name.clone(),
                    action: s.action,
                    errno,
                    args: s.args.clone(),
                });
            }
        }
        out
    }
}

/// What a profile does to one call, whatever its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It runs (allowed or logged), reaching the filter's end by its number alone.
    Runs,
    /// The filter reads its arguments: some values run, some may not.
    ReadsArguments,
    /// It never runs: refused with this action and errno (the errno of errno actions only).
    Refused(Action, u32),
}

/// What `chosen` (a profile's rules for a machine, [`DockerProfile::chosen`]) and the
/// profile's default do to call `name`: its rules in order, the first without comparisons
/// ending the list, as the compiled filter tries them.
pub fn verdict(profile: &DockerProfile, chosen: &[Chosen], name: &str) -> Verdict {
    let mut reads = false;
    let mut some_run = false;
    for c in chosen.iter().filter(|c| c.name == name) {
        if !c.args.is_empty() {
            reads = true;
            some_run |= c.action.runs();
            continue;
        }
        return match (c.action.runs(), reads) {
            (true, false) => Verdict::Runs,
            (_, true) if some_run || c.action.runs() => Verdict::ReadsArguments,
            _ => Verdict::Refused(c.action, c.errno),
        };
    }
    let d = profile.default_action;
    match (d.runs(), reads) {
        (true, false) => Verdict::Runs,
        (_, true) if some_run || d.runs() => Verdict::ReadsArguments,
        _ => Verdict::Refused(d, profile.default_errno()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"{
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": 1,
        "archMap": [{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86"]}],
        "syscalls": [
            {"names": ["getpid", "read"], "action": "SCMP_ACT_ALLOW", "args": null,
             "comment": "", "includes": {}, "excludes": {}},
            {"names": ["personality"], "action": "SCMP_ACT_ALLOW",
             "args": [{"index": 0, "value": 8, "op": "SCMP_CMP_EQ"}]},
            {"names": ["mount"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
            {"names": ["arm_only"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["arm64"]}},
            {"names": ["new_call"], "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": "5.6"}},
            {"names": ["clone"], "action": "SCMP_ACT_ALLOW",
             "args": [{"index": 0, "value": 2114060288, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}],
             "excludes": {"caps": ["CAP_SYS_ADMIN"], "arches": ["s390x"]}},
            {"name": "uname", "action": "SCMP_ACT_ERRNO", "errnoRet": 38}
        ]
    }"#;

    fn machine(caps: &[&str], kernel: (u32, u32)) -> Machine {
        Machine {
            arches: vec!["amd64".into(), "x86_64".into()],
            caps: caps.iter().map(|c| (*c).to_owned()).collect(),
            kernel,
        }
    }

    fn names(c: &[Chosen]) -> Vec<&str> {
        c.iter().map(|c| c.name.as_str()).collect()
    }

    #[test]
    fn rules_are_chosen_by_architecture_capability_and_kernel() {
        let p = parse(SMALL).unwrap();
        assert_eq!(p.default_action, Action::Errno);
        let plain = p.chosen(&machine(&[], (6, 1)));
        assert_eq!(
            names(&plain),
            [
                "getpid",
                "read",
                "personality",
                "new_call",
                "clone",
                "uname"
            ]
        );
        assert_eq!(plain[5].errno, 38);
        assert_eq!(plain[0].errno, 1);
        let admin = p.chosen(&machine(&["CAP_SYS_ADMIN"], (5, 4)));
        assert_eq!(
            names(&admin),
            ["getpid", "read", "personality", "mount", "uname"]
        );
    }

    #[test]
    fn verdicts_follow_the_rules_in_order_then_the_default() {
        let p = parse(SMALL).unwrap();
        let c = p.chosen(&machine(&[], (6, 1)));
        assert_eq!(verdict(&p, &c, "getpid"), Verdict::Runs);
        assert_eq!(verdict(&p, &c, "personality"), Verdict::ReadsArguments);
        assert_eq!(
            verdict(&p, &c, "uname"),
            Verdict::Refused(Action::Errno, 38)
        );
        assert_eq!(verdict(&p, &c, "mount"), Verdict::Refused(Action::Errno, 1));
    }

    #[test]
    fn bad_profiles_say_what_is_wrong() {
        let e = parse(r#"{"defaultAction": "SCMP_ACT_NOPE"}"#).unwrap_err();
        assert!(e.contains("unknown variant `SCMP_ACT_NOPE`"), "{e}");
        let e = parse(r#"{"defaultAction": "SCMP_ACT_ALLOW", "sycalls": []}"#).unwrap_err();
        assert!(e.contains("unknown field `sycalls`"), "{e}");
        let e = parse(r#"{"syscalls": []}"#).unwrap_err();
        assert!(e.contains("missing field `defaultAction`"), "{e}");
        let rule = |r: &str| {
            parse(&format!(
                r#"{{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{r}]}}"#
            ))
            .unwrap_err()
        };
        let e = rule(
            r#"{"names": ["read"], "action": "SCMP_ACT_ERRNO", "args": [{"index": 6, "value": 1, "op": "SCMP_CMP_EQ"}]}"#,
        );
        assert!(e.contains("syscalls[0] compares argument 6"), "{e}");
        let e = rule(r#"{"name": "read", "names": ["write"], "action": "SCMP_ACT_ERRNO"}"#);
        assert!(e.contains("both name and names"), "{e}");
        let e = rule(r#"{"names": [], "action": "SCMP_ACT_ERRNO"}"#);
        assert!(e.contains("names no system call"), "{e}");
        let e = rule(r#"{"names": ["read"], "action": "SCMP_ACT_NOTIFY"}"#);
        assert!(e.contains("supervisor"), "{e}");
        let e = rule(
            r#"{"names": ["read"], "action": "SCMP_ACT_ERRNO", "includes": {"minKernel": "new"}}"#,
        );
        assert!(e.contains("minKernel `new`"), "{e}");
        let e = parse("{").unwrap_err();
        assert!(e.contains("line 1"), "{e}");
    }

    #[test]
    fn comparisons_are_unsigned_over_64_bits() {
        let big = 0x1_0000_0000u64;
        assert!(Op::Gt.holds(big, 0xffff_ffff, 0));
        assert!(Op::Lt.holds(0xffff_ffff, big, 0));
        assert!(Op::Ne.holds(big, 0, 0));
        assert!(!Op::Eq.holds(big, 0, 0));
        assert!(Op::MaskedEq.holds(0x10_0000_00ff, 0xff, 0xff));
        assert!(!Op::MaskedEq.holds(0x10_0000_00ff, 0x10_0000_0000, 0));
        assert_eq!(kernel_version("6.1.0-18-amd64"), Some((6, 1)));
        assert_eq!(kernel_version("5.10"), Some((5, 10)));
        assert_eq!(kernel_version("five"), None);
    }
}

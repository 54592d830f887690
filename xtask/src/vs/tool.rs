//! Running a peer tool's steps (perf, cyclictest, lmbench) and reading their figures into the
//! same shape as a C reference's, `(case id, value)`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context as _};

use super::entry::{expand, Pin, Slots, Step, Tool};
use super::run::Figures;

/// `program`'s path on PATH, if it is there (the harness's own check of a peer tool).
pub fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|p| is_executable(p))
    })
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A process spinning on one CPU while it lives; killed and reaped when dropped.
struct Spinner(Child);

impl Spinner {
    fn start(cpu: usize) -> anyhow::Result<Spinner> {
        let child = Command::new("taskset")
            .arg("-c")
            .arg(cpu.to_string())
            .args(["sh", "-c", "while :; do :; done"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start the spinning process (taskset, sh)")?;
        Ok(Spinner(child))
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `tool`'s `steps` in order with `slots`' CPUs and sizes and returns the figures they
/// gave; the tool's `finally` commands run after them however they ended.
pub fn run(tool: &Tool, steps: &[Step], slots: &Slots) -> anyhow::Result<Figures> {
    let had_tracefs = !tracefs_mounts().is_empty();
    let result = run_steps(tool, steps, slots);
    if tool.mounts_tracefs && !had_tracefs {
        unmount_tracefs();
    }
    for command in tool.finally {
        let argv = expand(command, slots);
        if let Some((program, args)) = argv.split_first() {
            let _ = Command::new(program)
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
    result
}

/// Where tracefs is mounted, from /proc/self/mounts.
fn tracefs_mounts() -> Vec<String> {
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&"tracefs")).then(|| f[1].to_string())
        })
        .collect()
}

/// Unmounts every tracefs, so the machine is left as the steps found it. A perf that just
/// exited can keep it busy a moment: a few tries, then a lazy unmount (gone once free).
fn unmount_tracefs() {
    for dir in tracefs_mounts() {
        let mut done = false;
        for _ in 0..5 {
            done = Command::new("umount")
                .arg(&dir)
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if done {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        if !done {
            let _ = Command::new("umount").arg("-l").arg(&dir).status();
        }
    }
}

fn run_steps(tool: &Tool, steps: &[Step], slots: &Slots) -> anyhow::Result<Figures> {
    let mut figures = Figures::new();
    for step in steps {
        let argv = expand(step.argv, slots);
        let Some((program, args)) = argv.split_first() else {
            bail!("a step of {} has no program", tool.label);
        };
        let mut cmd = match step.pin {
            Some(pin) => {
                let cpu = if pin == Pin::A { slots.a } else { slots.b };
                let mut c = Command::new("taskset");
                c.arg("-c").arg(cpu.to_string()).arg(program);
                c
            }
            None => Command::new(program),
        };
        cmd.args(args);
        for (name, value) in tool.env.iter().chain(step.env) {
            cmd.env(name, expand(&[value], slots).concat());
        }
        let spinner = if step.spinner {
            Some(Spinner::start(slots.a)?)
        } else {
            None
        };
        let out = cmd
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("cannot start {program}"));
        drop(spinner);
        let out = out?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if !out.status.success() {
            let last = text.trim().lines().last().unwrap_or("");
            bail!("{} failed ({}): {last}", argv.join(" "), out.status);
        }
        if let Some(parse) = step.parse {
            let id = expand(&[step.id], slots).concat();
            let read = parse(&text)
                .with_context(|| format!("reading the output of {}", argv.join(" ")))?;
            for (name, v) in read {
                let id = if name.is_empty() {
                    id.clone()
                } else {
                    format!("{id}.{name}")
                };
                figures.push((id, v));
            }
        }
        if step.settle_ms > 0 {
            std::thread::sleep(Duration::from_millis(step.settle_ms));
        }
    }
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::super::entry::STEP;
    use super::*;

    fn two(_: &str) -> anyhow::Result<Vec<(String, f64)>> {
        Ok(vec![(String::new(), 1.0), ("p99".to_string(), 2.0)])
    }

    #[test]
    fn steps_run_in_order_their_ids_filled_and_a_failure_named() {
        let slots = Slots {
            a: 0,
            b: 0,
            samples: 5,
            tmp: "/tmp".into(),
            oscost: "oscost".into(),
            quick: true,
        };
        let tool = Tool {
            label: "sh",
            env: &[("WHICH", "{q:standard:quick}")],
            finally: &[&["true"]],
            mounts_tracefs: false,
        };
        let steps = [
            Step {
                argv: &["sh", "-c", "test \"$WHICH\" = quick"],
                ..STEP
            },
            Step {
                argv: &["true"],
                id: "x.cpu{a}",
                parse: Some(two),
                ..STEP
            },
        ];
        assert_eq!(
            run(&tool, &steps, &slots).unwrap(),
            [("x.cpu0".to_string(), 1.0), ("x.cpu0.p99".to_string(), 2.0)]
        );
        let failing = [Step {
            argv: &["sh", "-c", "echo no such server >&2; exit 3"],
            ..STEP
        }];
        let e = run(&tool, &failing, &slots).unwrap_err().to_string();
        assert!(e.contains("no such server"), "{e}");
        assert!(on_path("sh").is_some());
        assert!(on_path("no-such-program-here").is_none());
    }
}

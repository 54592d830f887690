//! Builds the `spawn` experiment's helper program (`helper/exit0.c`): a static executable whose
//! whole code is `exit_group(0)`. A toolchain that cannot build it never fails the build: the
//! helper is then empty and `OSCOST_EXIT0_REASON` says why, and the cases that start it are
//! reported as not measured with that reason.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=helper/exit0.c");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CC");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let dest = out.join("exit0");
    let reason = match build(&dest) {
        Ok(()) => String::new(),
        Err(reason) => {
            // An empty helper stands for "none"; the reason goes with it.
            let _ = std::fs::write(&dest, b"");
            reason
        }
    };
    // One line: cargo reads the value up to the end of the line.
    let reason: String = reason
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    println!("cargo:rustc-env=OSCOST_EXIT0_REASON={}", reason.trim());
}

fn build(dest: &Path) -> Result<(), String> {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let (target, host) = (var("TARGET"), var("HOST"));
    let (os, arch) = (var("CARGO_CFG_TARGET_OS"), var("CARGO_CFG_TARGET_ARCH"));
    if os != "linux" || !(arch == "x86_64" || arch == "aarch64") {
        return Err(format!(
            "the helper is written for Linux on x86_64 and aarch64, not {target}"
        ));
    }
    if target != host {
        return Err(format!(
            "cross-compiled for {target} on {host}: the helper is only built natively"
        ));
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("helper/exit0.c");
    let base = ["-static", "-nostdlib", "-O2", "-s"];
    // Smallest first: no unwind tables, no build id, no page-aligned padding (one segment of
    // a few bytes of code). A linker that refuses those options gets the plain static build.
    let small = [
        "-fno-asynchronous-unwind-tables",
        "-Wl,--build-id=none",
        "-Wl,-n",
    ];
    let mut last = String::new();
    for extra in [&small[..], &[]] {
        let out = Command::new(&cc)
            .args(base)
            .args(extra)
            .arg("-o")
            .arg(dest)
            .arg(&src)
            .output();
        match out {
            Err(e) => return Err(format!("the C compiler `{cc}` could not be run: {e}")),
            Ok(o) if o.status.success() => {
                let bytes = std::fs::read(dest).map_err(|e| format!("reading the helper: {e}"))?;
                if bytes.starts_with(b"\x7fELF") {
                    return Ok(());
                }
                last = format!("`{cc}` did not produce an ELF executable");
            }
            Ok(o) => {
                let err = String::from_utf8_lossy(&o.stderr);
                last = format!(
                    "`{cc} -static -nostdlib` failed: {}",
                    err.lines()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("no message")
                );
            }
        }
    }
    Err(last)
}

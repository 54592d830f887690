//! The programs the exec ops start: oscost's static helper, written to the run's private
//! directory, and a dynamically linked one; each probed once, so a program that cannot
//! start is a reason for its cases, not a failed run.

use super::*;

/// A program an exec op starts.
#[derive(Debug, Clone)]
pub(super) struct Program {
    pub(super) path: PathBuf,
    pub(super) bytes: u64,
    pub(super) linking: String,
}

/// The ELF interpreter named in `bytes` (`Some(None)`: none, a static program), or `None` when
/// `bytes` is not a 64-bit little-endian ELF file.
pub(super) fn elf_interpreter(bytes: &[u8]) -> Option<Option<String>> {
    let u16_at = |o: usize| Some(u16::from_le_bytes(bytes.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(bytes.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(bytes.get(o..o + 8)?.try_into().ok()?));
    // ELF magic, ELFCLASS64, ELFDATA2LSB.
    if bytes.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let phoff = usize::try_from(u64_at(0x20)?).ok()?;
    let phentsize = usize::from(u16_at(0x36)?);
    let phnum = usize::from(u16_at(0x38)?);
    for i in 0..phnum {
        let ph = phoff.checked_add(i.checked_mul(phentsize)?)?;
        const PT_INTERP: u32 = 3;
        if u32_at(ph)? == PT_INTERP {
            let off = usize::try_from(u64_at(ph + 0x08)?).ok()?;
            let len = usize::try_from(u64_at(ph + 0x20)?).ok()?;
            let raw = bytes.get(off..off.checked_add(len)?)?;
            let name = String::from_utf8_lossy(raw)
                .trim_end_matches('\0')
                .to_owned();
            return Some(Some(name));
        }
    }
    Some(None)
}

pub(super) fn linking_of(bytes: &[u8]) -> String {
    match elf_interpreter(bytes) {
        Some(None) => "static".into(),
        Some(Some(interp)) => format!("dynamic (interpreter {interp})"),
        None => "unknown (not a 64-bit little-endian ELF file)".into(),
    }
}

/// Writes the static helper into `dir`, owner-only (0700); `Err` is why there is none.
pub(super) fn write_helper(dir: &Path) -> Result<Program, String> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let bytes = sys::static_helper()
        .map_err(|r| format!("oscost was built without its static helper: {r}"))?;
    let path = dir.join(HELPER_NAME);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o700)
        .open(&path)
        .and_then(|mut f| f.write_all(bytes))
        // The umask may have taken bits away.
        .and_then(|()| std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)));
    written.map_err(|e| format!("writing the helper to {}: {e}", path.display()))?;
    Ok(Program {
        path,
        bytes: bytes.len() as u64,
        linking: linking_of(bytes),
    })
}

/// The dynamically linked program, or why it cannot be used.
fn dynamic_target() -> Result<Program, String> {
    let path = PathBuf::from(DYNAMIC_TARGET);
    let bytes = std::fs::read(&path).map_err(|e| format!("{DYNAMIC_TARGET}: {e}"))?;
    Ok(Program {
        bytes: bytes.len() as u64,
        linking: linking_of(&bytes),
        path,
    })
}

/// Starts `program` once (posix_spawn, waited for): a limit is an error; any other failure
/// (a directory mounted noexec, a program that fails) is the reason it is not measured. A
/// file just written may be busy for a moment if another thread forked while it was open
/// (only in the tests, which run threads side by side): ETXTBSY is retried for a while.
pub(super) fn probe(program: &Program) -> anyhow::Result<Result<(), String>> {
    let mut c =
        Creator::new(Method::PosixSpawn, Some(&program.path)).context("preparing a probe start")?;
    for _ in 0..200 {
        match c.once(1, 1) {
            Ok(()) => return Ok(Ok(())),
            Err(e) if e.downcast_ref::<LimitError>().is_some() => return Err(e),
            Err(e) => {
                let busy = e
                    .root_cause()
                    .downcast_ref::<std::io::Error>()
                    .and_then(|io| io.raw_os_error())
                    == Some(libc::ETXTBSY);
                if !busy {
                    return Ok(Err(format!(
                        "{} could not be started: {e:#}",
                        program.path.display()
                    )));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
    Ok(Err(format!(
        "{} stayed busy (ETXTBSY) for 2 s",
        program.path.display()
    )))
}

/// The programs of the chosen targets, each with its reason when it cannot be used.
pub(super) fn programs(
    p: &Plan,
    dir: Option<&ScratchDir>,
) -> anyhow::Result<Vec<(Target, Result<Program, String>)>> {
    let mut out = Vec::new();
    for &t in &p.targets {
        let program = match (t, dir) {
            (Target::Static, Some(d)) => write_helper(d.path()),
            (Target::Static, None) => Err("no private directory to write it to".into()),
            (Target::Dynamic, _) => dynamic_target(),
        };
        let program = match program {
            Ok(prog) => probe(&prog)?.map(|()| prog),
            Err(e) => Err(e),
        };
        out.push((t, program));
    }
    Ok(out)
}

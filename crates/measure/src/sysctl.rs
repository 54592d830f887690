//! Settings under /proc/sys that an experiment changes for its run: each written through a
//! guard that puts the old value back on every way out, after telling the coordinating
//! process the old value, so that it can put it back if the measuring process dies.

use crate::context::Context;
use oscost_model::case::ExperimentOutput;
use std::path::{Path, PathBuf};

/// The SCHED_RR time slice, ms.
pub(crate) const RR_TIMESLICE: &str = "/proc/sys/kernel/sched_rr_timeslice_ms";

/// A setting's value, without the trailing newline.
pub(crate) fn read_trim(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
}

/// Puts a `/proc/sys` setting back when dropped, and tells the coordinator it did.
pub(crate) struct SysctlRestore<'a> {
    path: PathBuf,
    original: String,
    ctx: &'a Context<'a>,
}

impl Drop for SysctlRestore<'_> {
    fn drop(&mut self) {
        if std::fs::write(&self.path, format!("{}\n", self.original)).is_ok() {
            self.ctx
                .progress
                .setting_restored(&self.path.to_string_lossy());
        }
    }
}

/// Writes `value` to the setting at `path` for the run; where that is not permitted, records
/// a warning and goes on with the setting as it is.
pub(crate) fn set_sysctl<'a>(
    path: &Path,
    value: u64,
    option: &str,
    ctx: &'a Context<'a>,
    out: &mut ExperimentOutput,
) -> Option<SysctlRestore<'a>> {
    let shown = path.display();
    let Some(original) = read_trim(path) else {
        out.warnings.push(format!(
            "{option} {value} not in force: {shown} cannot be read"
        ));
        return None;
    };
    let key = path.to_string_lossy();
    ctx.progress.setting_changed(&key, &original);
    match std::fs::write(path, format!("{value}\n")) {
        Ok(()) => Some(SysctlRestore {
            path: path.to_owned(),
            original,
            ctx,
        }),
        Err(e) => {
            ctx.progress.setting_restored(&key);
            out.warnings.push(format!(
                "{option} {value} not in force: writing {shown}: {e} (it needs root); \
                 the kernel's {original} ms was used"
            ));
            None
        }
    }
}

//! Turn-taking with another program, sample by sample: what lets the side-by-side harness
//! (`cargo xtask vs NAME --alternate`) hold a figure against a C reference whose samples
//! alternate with oscost's one by one, so that a drift of the machine (a halted CPU's wake-up
//! time moving with what ran before) touches both sides alike instead of landing in the ratio.
//!
//! When [`PACE_ENV`] names two FIFOs, `GO:DONE`, each [`turn`] writes one byte to `DONE` (this
//! side reached a point where the other may run) and waits for one byte on `GO` (its turn). The
//! sampler takes a turn before each job's calibration and before each sample; the conductor
//! grants turns to oscost and the reference alternately, so exactly one of them runs between
//! two turns. Unset, a turn costs one load of a `OnceLock`.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::sync::{Mutex, OnceLock};

/// The variable naming the FIFOs, `GO:DONE`.
pub const PACE_ENV: &str = "OSCOST_PACE";

/// The two ends this process holds.
struct Pace {
    go: File,
    done: File,
}

/// Opened on the first turn; `Err` keeps why it could not be, so every turn reports it.
static PACE: OnceLock<Option<Result<Mutex<Pace>, String>>> = OnceLock::new();

fn open() -> Option<Result<Mutex<Pace>, String>> {
    let spec = std::env::var_os(PACE_ENV)?;
    let spec = spec.to_string_lossy().into_owned();
    Some(open_spec(&spec).map(Mutex::new))
}

fn open_spec(spec: &str) -> Result<Pace, String> {
    let (go, done) = spec
        .split_once(':')
        .ok_or_else(|| format!("{PACE_ENV}={spec:?} is not two FIFOs as GO:DONE"))?;
    let named = |path: &str, e: std::io::Error| format!("{PACE_ENV}: cannot open {path}: {e}");
    Ok(Pace {
        go: File::open(go).map_err(|e| named(go, e))?,
        done: OpenOptions::new()
            .write(true)
            .open(done)
            .map_err(|e| named(done, e))?,
    })
}

/// Whether this process takes turns with another program ([`PACE_ENV`] is set).
pub(crate) fn active() -> bool {
    PACE.get_or_init(open).is_some()
}

/// Yields to the other side and waits for this side's turn; returns at once when
/// [`PACE_ENV`] is unset. Fails when the FIFOs cannot be opened or the conductor went away.
pub(crate) fn turn() -> anyhow::Result<()> {
    let Some(pace) = PACE.get_or_init(open) else {
        return Ok(());
    };
    let pace = pace.as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
    pace.lock().unwrap_or_else(|e| e.into_inner()).turn()
}

impl Pace {
    fn turn(&mut self) -> anyhow::Result<()> {
        self.done.write_all(b"d")?;
        let mut byte = [0u8];
        self.go
            .read_exact(&mut byte)
            .map_err(|e| anyhow::anyhow!("{PACE_ENV}: the conductor went away ({e})"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_without_two_paths_is_refused_by_name() {
        let e = open_spec("/tmp/only-one").err().unwrap();
        assert!(e.contains("GO:DONE"), "{e}");
        let e = open_spec("/nonexistent/go:/nonexistent/done")
            .err()
            .unwrap();
        assert!(e.contains("cannot open /nonexistent/go"), "{e}");
    }

    /// A turn writes one byte to DONE, then returns once one byte arrives on GO.
    #[test]
    fn a_turn_yields_then_waits_for_go() {
        let dir = std::env::temp_dir().join(format!("oscost-pace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (go, done) = (dir.join("go"), dir.join("done"));
        // Plain files stand in for the FIFOs: the protocol is the bytes, not the file type.
        std::fs::write(&go, b"g").unwrap();
        std::fs::write(&done, b"").unwrap();
        let mut p = open_spec(&format!("{}:{}", go.display(), done.display())).unwrap();
        p.turn().unwrap();
        assert_eq!(std::fs::read(&done).unwrap(), b"d");
        // No second byte on GO: the conductor is gone, said as such.
        let e = p.turn().unwrap_err().to_string();
        assert!(e.contains("conductor went away"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! The PM QoS CPU-latency request: keep idle CPUs polling while a switch is measured.

use std::io;

/// Holds `/dev/cpu_dma_latency` at 0 while alive: the PM QoS request that keeps every CPU in
/// polling idle (the cyclictest "latency trick", `Documentation/power/pm_qos_interface.rst`),
/// so a wake-up needs no IPI and no idle exit. Dropping it closes the file, which withdraws
/// the request.
#[derive(Debug)]
pub struct IdlePoll {
    _file: std::fs::File,
}

impl IdlePoll {
    /// Opens `/dev/cpu_dma_latency` and writes a 32-bit 0. Usually needs root (EACCES
    /// otherwise); the caller reports the error as an unavailable case.
    pub fn hold() -> io::Result<IdlePoll> {
        use std::io::Write;
        const PATH: &str = "/dev/cpu_dma_latency";
        let wrap =
            |e: io::Error, what: &str| io::Error::new(e.kind(), format!("{what} {PATH}: {e}"));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(PATH)
            .map_err(|e| wrap(e, "opening"))?;
        // The interface takes a binary s32 in microseconds; 0 forbids any idle state with an
        // exit latency, leaving only polling.
        file.write_all(&0i32.to_ne_bytes())
            .map_err(|e| wrap(e, "writing 0 to"))?;
        Ok(IdlePoll { _file: file })
    }
}

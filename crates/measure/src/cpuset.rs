//! The CPUs of this machine, in the kernel's list syntax (`0-3,8`).

pub use oscost_model::cpulist::{format, parse, CpuListError};

/// The online CPUs (`/sys/devices/system/cpu/online`), or CPU 0..available_parallelism.
pub fn online() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse(&s).ok())
        .unwrap_or_else(|| {
            (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect()
        })
}

/// Parses `text` and checks every CPU is online.
pub fn parse_online(text: &str) -> Result<Vec<usize>, CpuListError> {
    let cpus = parse(text)?;
    let on = online();
    if let Some(&cpu) = cpus.iter().find(|c| !on.contains(c)) {
        return Err(CpuListError::NotOnline {
            cpu,
            online: format(&on),
        });
    }
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_cpus_that_are_not_online() {
        assert!(matches!(
            parse_online("99999"),
            Err(CpuListError::NotOnline { cpu: 99999, .. })
        ));
    }
}

//! STUB (being written by the env helper): the machine's description recorded with every run.
#![allow(missing_docs)]
use crate::clock::ClockInfo;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub kernel_release: String,
    pub clock: ClockInfo,
    pub cpus_used: Vec<usize>,
    pub load: Option<RunLoad>,
}

impl Environment {
    pub fn collect(clock: &ClockInfo, cpus_used: &[usize]) -> Environment {
        Environment {
            kernel_release: std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().into(),
            clock: clock.clone(),
            cpus_used: cpus_used.to_vec(),
            load: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunLoad {
    pub wall_s: f64,
    pub foreign_cpu_share: f64,
    pub quiet: bool,
    pub warnings: Vec<String>,
}

pub struct LoadProbe {
    start: std::time::Instant,
}

impl LoadProbe {
    pub fn start() -> LoadProbe {
        LoadProbe { start: std::time::Instant::now() }
    }
    pub fn finish(self) -> RunLoad {
        RunLoad { wall_s: self.start.elapsed().as_secs_f64(), foreign_cpu_share: 0.0, quiet: true, warnings: vec![] }
    }
}

//! The machine a run measures on: the placement asked for (`--cpus`, `--nice`) applied to this
//! process, and the description recorded with every result.

use crate::config::Config;
use anyhow::Context as _;
use oscost_measure::env as envcollect;
use oscost_measure::{cpuset, Clock};
use oscost_model::Environment;
use oscost_sys as os;

/// Applies `--nice` and `--cpus` to this process; returns the CPUs experiments may use.
pub fn apply_placement(cfg: &Config) -> anyhow::Result<Vec<usize>> {
    if let Some(n) = cfg.nice {
        let inherited = os::nice().ok();
        os::set_nice(n).map_err(|e| {
            let hint = match inherited {
                // Raising priority needs privilege whatever the sign: from an inherited 10,
                // even 0 is a raise.
                Some(cur) if n < cur && cur > 0 => format!(
                    " (this process inherited nice {cur}; going below it needs root or \
                     CAP_SYS_NICE: use --nice {cur}..19, or start oscost at a lower nice)"
                ),
                _ if n < 0 => {
                    " (a negative nice needs root or CAP_SYS_NICE; drop --nice or use 0..19)"
                        .to_owned()
                }
                _ => String::new(),
            };
            anyhow::anyhow!("--nice {n}: {e}{hint}")
        })?;
    }
    match &cfg.cpus {
        Some(cpus) => {
            os::set_affinity(cpus)
                .with_context(|| format!("--cpus {}: cannot pin", cpuset::format(cpus)))?;
            Ok(cpus.clone())
        }
        None => Ok(os::affinity().unwrap_or_else(|_| cpuset::online())),
    }
}

/// The machine's description for a run on `cpus`, with what the build and `cfg` add to it.
pub fn environment(cfg: &Config, clock: &Clock, cpus: &[usize]) -> Environment {
    let mut env = envcollect::collect(clock.info(), cpus);
    env.git_commit = Some(env!("OSCOST_GIT_COMMIT").to_owned()).filter(|c| !c.is_empty());
    env.rustc_version = Some(env!("OSCOST_RUSTC_VERSION").to_owned()).filter(|c| !c.is_empty());
    // The nice value asked for; the one in force is `process_nice`.
    env.nice = cfg.nice;
    // A history URL given on the command line may hold a password: never recorded.
    for arg in &mut env.command_line {
        *arg = oscost_history::pg::mask_passwords(arg);
    }
    env.fleet = cfg.fleet.clone();
    env
}

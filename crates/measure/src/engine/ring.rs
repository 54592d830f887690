//! What the token rings of `ring`, `lockring` and `switch` share: where the ring's tasks run,
//! and the checks of a sweep of ring sizes.

/// Checks a sweep of ring sizes (`ring`, `lockring`): one size at least, each from 2 to
/// `max_tasks`, and fewer tokens than the smallest ring. `(ring, members)` name the ring and
/// its tasks in the messages; `no_token` says why zero tokens are refused.
pub(crate) fn check_ring_sweep(
    sizes: &[usize],
    tokens: usize,
    max_tasks: usize,
    (ring, members): (&str, &str),
    no_token: &str,
) -> anyhow::Result<()> {
    let (Some(&min), Some(&max)) = (sizes.iter().min(), sizes.iter().max()) else {
        anyhow::bail!("--tasks: no ring size given");
    };
    if min < 2 {
        anyhow::bail!("--tasks {min}: {ring} needs at least 2 {members}");
    }
    if max > max_tasks {
        anyhow::bail!("--tasks {max}: at most {max_tasks} {members}");
    }
    if tokens == 0 {
        anyhow::bail!("--tokens 0: {no_token}");
    }
    if tokens >= min {
        anyhow::bail!(
            "--tokens {tokens}: must be less than the number of {members} (smallest --tasks: \
             {min})"
        );
    }
    Ok(())
}

/// Where the ring's tasks run.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum RingPlacement {
    /// every task pinned to the first CPU of the set
    Same,
    /// no pinning within the CPU set: the scheduler places the tasks
    Free,
}

/// The placement's name in parameters, as the command line spells it.
pub(crate) fn placement_name(p: RingPlacement) -> &'static str {
    match p {
        RingPlacement::Same => "same",
        RingPlacement::Free => "free",
    }
}

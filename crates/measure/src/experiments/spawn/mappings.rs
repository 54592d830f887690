//! The fork cases against many small mappings: the mappings made, counted against the
//! kernel's limit, and the fork timed over them.

use super::*;

/// Mappings in this process's address space (lines of `/proc/self/maps`).
fn map_count() -> Option<u64> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    Some(maps.lines().count() as u64)
}

/// The kernel's limit on one process's mappings (`vm.max_map_count`).
fn max_map_count() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn mappings_description(n: u64, base_mib: u64) -> String {
    format!(
        "fork + _exit(0) in the child + waitpid; parent holds {n} one-page shared anonymous mappings, each written once, beside {base_mib} MiB of touched memory"
    )
}

/// Fork with the parent holding `n` one-page shared mappings beside `base_mib` MiB of touched
/// private memory: measured, or not measured with the reason (the kernel's mapping limit, an
/// address-space limit).
pub(super) fn mappings_group(
    ctx: &Context,
    n: u64,
    base_mib: u64,
    out: &mut ExperimentOutput,
) -> Result<()> {
    let id = oscost_model::ids::spawn::with_mappings(&Op::Fork.id(), n);
    let description = mappings_description(n, base_mib);
    let unavailable = |out: &mut ExperimentOutput, reason: String| {
        out.unavailable.push(Unavailable {
            id: id.clone(),
            description: description.clone(),
            reason,
        });
    };
    let before = map_count();
    if let (Some(max), Some(now)) = (max_map_count(), before) {
        // Room for the run's own few mappings besides (a thread's stack, a library).
        if now + n + 64 > max {
            unavailable(
                out,
                format!(
                    "{n} more mappings would pass the kernel's limit: vm.max_map_count is {max} \
                     and the process holds {now}; raise it (sysctl vm.max_map_count) or use \
                     fewer --mappings"
                ),
            );
            return Ok(());
        }
    }
    let base = usize::try_from(base_mib << 20)
        .ok()
        .map(|b| ParentMemory::new(b, false));
    let _base = match base {
        Some(Ok(m)) => m,
        Some(Err(e)) => {
            unavailable(out, format!("mapping {base_mib} MiB of parent memory: {e}"));
            return Ok(());
        }
        None => anyhow::bail!("{base_mib} MiB: too large"),
    };
    let mut maps = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
    // After the base memory and the list are made: only the mappings are counted.
    let before = map_count();
    for _ in 0..n {
        ctx.check_cancel()?;
        match Mapping::shared_anonymous(PAGE) {
            Ok(mut m) => {
                m.write_each(PAGE, 1);
                maps.push(m);
            }
            Err(e) => {
                let made = maps.len();
                drop(maps);
                unavailable(out, format!("mapping page {} of {n}: {e}", made + 1));
                return Ok(());
            }
        }
    }
    let after = map_count();
    let added = before.zip(after).map(|(b, a)| a.saturating_sub(b));
    let mut slots = vec![Slot {
        id,
        description,
        op: Op::Fork,
        creator: Creator::new(Method::Fork, None).context("preparing fork")?,
        ticks: Vec::new(),
        parent: Usage::default(),
        children: Usage::default(),
        warnings: Vec::new(),
    }];
    let state = ParentState::read();
    let (overhead, threads) = crate::sampler::counting_threads(|| sample_group(ctx, &mut slots));
    let left = sys::has_unwaited_children().ok();
    drop(maps);
    let overhead = overhead?;
    for s in slots {
        let mut case = finish(ctx, s, overhead, threads)
            .param("mappings", n)
            .param("mapping_bytes", PAGE as u64)
            .param("base_parent_mib", base_mib);
        for (key, v) in [
            ("rss_kib", state.rss_kib),
            ("vm_pte_kib", state.vm_pte_kib),
            ("map_count", after),
        ] {
            if let Some(v) = v {
                case.counters.insert(key.into(), v as f64);
            }
        }
        if let Some(added) = added {
            case.checks.push(Check::at_least(
                "mappings_added",
                n as f64,
                added as f64,
                0.0,
                "lines of /proc/self/maps before and after making the mappings: each one-page \
                 shared mapping is a mapping of its own (the kernel never merges two)",
            ));
        }
        if let Some(left) = left {
            case.checks.push(unreaped_check(left, ""));
        }
        out.cases.push(case);
    }
    Ok(())
}

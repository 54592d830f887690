//! The scheduler's rules and the reading of a timeline trace, pure: the kernel's nice weights,
//! the CPU shares and time slice they lead to, and the turns (who ran when) in the chunk ends
//! a worker noted. The timeline experiment measures with it; the report draws with it.

/// The scheduling policies the rules below tell apart (Linux's `SCHED_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// `SCHED_OTHER`: the CPU shared by weight (nice).
    Other,
    /// `SCHED_BATCH`: shared as `Other`, without wakeup preemption.
    Batch,
    /// `SCHED_IDLE`: the lowest weight, nice ignored.
    Idle,
    /// `SCHED_RR`: equal turns of `sched_rr_timeslice_ms`.
    Rr,
    /// `SCHED_FIFO`: each task runs until it blocks or finishes.
    Fifo,
}

/// The kernel's nice-to-weight table (`sched_prio_to_weight`, kernel/sched/core.c): nice −20
/// first. Each step of nice is about 10 % of CPU time between two tasks (×1.25 in weight).
pub const NICE_TO_WEIGHT: [u32; 40] = [
    /* -20 */ 88761, 71755, 56483, 46273, 36291, //
    /* -15 */ 29154, 23254, 18705, 14949, 11916, //
    /* -10 */ 9548, 7620, 6100, 4904, 3906, //
    /*  -5 */ 3121, 2501, 1991, 1586, 1277, //
    /*   0 */ 1024, 820, 655, 526, 423, //
    /*   5 */ 335, 272, 215, 172, 137, //
    /*  10 */ 110, 87, 70, 56, 45, //
    /*  15 */ 36, 29, 23, 18, 15,
];

/// The weight of every SCHED_IDLE task (`WEIGHT_IDLEPRIO`), whatever its nice value.
pub const IDLE_WEIGHT: u32 = 3;

/// The weight the kernel gives nice `nice` (−20..=19).
pub fn weight(nice: i32) -> Option<u32> {
    let i = usize::try_from(nice + 20).ok()?;
    NICE_TO_WEIGHT.get(i).copied()
}

/// A stretch of consecutive chunks of one worker in a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The worker (0-based).
    pub worker: usize,
    /// The end of the chunk before it (another worker's), or the common start for the first
    /// turn: the earliest the worker can have got the CPU.
    pub from_ns: f64,
    /// The end of its last chunk.
    pub to_ns: f64,
    /// Chunks it holds.
    pub chunks: usize,
    /// Chunks its worker had done before it.
    pub chunks_before: usize,
    /// The first turn of the trace (it began at the start, not at a switch).
    pub first: bool,
    /// Its worker's last turn (it ended because the worker finished, not at a switch).
    pub last_of_worker: bool,
}

impl Turn {
    /// Whether it began and ended with a switch between workers: a whole time slice.
    pub fn whole(&self) -> bool {
        !self.first && !self.last_of_worker
    }

    /// Its length, ns.
    pub fn len_ns(&self) -> f64 {
        self.to_ns - self.from_ns
    }
}

/// Every chunk end of a trace, `(time, worker)` in time order (ties by worker).
pub fn events(ends_ns: &[Vec<f64>]) -> Vec<(f64, usize)> {
    let mut ev: Vec<(f64, usize)> = ends_ns
        .iter()
        .enumerate()
        .flat_map(|(w, row)| row.iter().map(move |&t| (t, w)))
        .collect();
    ev.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    ev
}

/// The turns of a trace: maximal runs of consecutive chunk ends of one worker.
///
/// A turn's slice is measured from the previous turn's last chunk end to its own last chunk
/// end. The switch into it happened somewhere in the chunk after that previous end (the other
/// worker was preempted mid-chunk), and the switch out of it somewhere in the chunk after its
/// own last end; both offsets lie within one chunk and have the same spread, so the length is
/// right to within one chunk and unbiased over many turns.
pub fn turns(ends_ns: &[Vec<f64>]) -> Vec<Turn> {
    let ev = events(ends_ns);
    let last_end: Vec<f64> = ends_ns
        .iter()
        .map(|r| r.last().copied().unwrap_or(f64::NEG_INFINITY))
        .collect();
    let mut out: Vec<Turn> = Vec::new();
    let mut done = vec![0; ends_ns.len()];
    let mut prev_end = 0.0;
    let mut k = 0;
    while k < ev.len() {
        let w = ev[k].1;
        let mut j = k;
        while j + 1 < ev.len() && ev[j + 1].1 == w {
            j += 1;
        }
        let to = ev[j].0;
        out.push(Turn {
            worker: w,
            from_ns: prev_end,
            to_ns: to,
            chunks: j - k + 1,
            chunks_before: done[w],
            first: out.is_empty(),
            last_of_worker: to >= last_end[w],
        });
        done[w] += j - k + 1;
        prev_end = to;
        k = j + 1;
    }
    out
}

/// The lengths of every whole turn (see [`Turn::whole`]), ns.
pub fn slices_ns(ends_ns: &[Vec<f64>]) -> Vec<f64> {
    turns(ends_ns)
        .iter()
        .filter(|t| t.whole())
        .map(Turn::len_ns)
        .collect()
}

/// Switches between workers a trace shows, each a preemption of the worker that stopped
/// (every turn but its worker's last).
pub fn preemptions(ends_ns: &[Vec<f64>]) -> usize {
    turns(ends_ns).iter().filter(|t| !t.last_of_worker).count()
}

/// The shares, %, the kernel's weights give workers of `nice` values under `policy` while all
/// are runnable on one CPU; `None` under SCHED_FIFO (the first to run keeps the CPU).
pub fn predicted_shares(policy: Policy, nice: &[i32]) -> Option<Vec<f64>> {
    let weights: Vec<f64> = match policy {
        Policy::Other | Policy::Batch => nice
            .iter()
            .map(|&v| weight(v).map(f64::from))
            .collect::<Option<_>>()?,
        // Every SCHED_IDLE task weighs the same; RR gives every task of a priority the same
        // turns.
        Policy::Idle => vec![f64::from(IDLE_WEIGHT); nice.len()],
        Policy::Rr => vec![1.0; nice.len()],
        Policy::Fifo => return None,
    };
    let sum: f64 = weights.iter().sum();
    (sum > 0.0).then(|| weights.iter().map(|w| w / sum * 100.0).collect())
}

/// The slice this kernel is expected to give, and how that was worked out.
#[derive(Debug, Clone, PartialEq)]
pub struct SliceRule {
    /// The expected observed slice, ns; `None` when there is none to expect.
    pub expected_ns: Option<f64>,
    /// How it was derived, in words.
    pub how: String,
}

/// The EEVDF base slice of the kernel's default (`sysctl_sched_base_slice`): 0.75 ms before
/// Linux 6.15, 0.70 ms from it, times 1 + log2 of the CPUs (at most 8); `None` before 6.6
/// (CFS has no fixed slice).
pub fn default_base_slice_ns(release: (u32, u32), online_cpus: usize) -> Option<u64> {
    if release < (6, 6) {
        return None;
    }
    let unit = if release >= (6, 15) { 700_000 } else { 750_000 };
    let factor = 1 + u64::from(online_cpus.clamp(1, 8).ilog2());
    Some(unit * factor)
}

/// `(major, minor)` of a kernel release string such as `6.18.44-foo`.
pub fn parse_release(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(['.', '-']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

fn ms(ns: f64) -> String {
    format!("{:.2} ms", ns / 1e6)
}

/// The slice to expect under `policy`: a fair-class slice ends at the first tick after the
/// base slice is used up (a preemption is only considered at a tick while HRTICK is off, its
/// default), so it lasts the base slice rounded up to whole ticks; an RR slice is
/// `sched_rr_timeslice_ms` counted in ticks; FIFO has none.
pub fn expected_slice(
    policy: Policy,
    base: Option<(u64, String)>,
    tick_ns: Option<u64>,
    hrtick: Option<bool>,
    rr_ms: Option<u64>,
) -> SliceRule {
    let tick_text = |t: u64| format!("one tick {} (HZ {})", ms(t as f64), 1e9 / t as f64);
    let ticks_up = |ns: f64, t: u64| (ns / t as f64).ceil().max(1.0) * t as f64;
    match policy {
        Policy::Fifo => SliceRule {
            expected_ns: None,
            how: "SCHED_FIFO has no time slice: a worker keeps the CPU until it finishes".into(),
        },
        Policy::Rr => match (rr_ms, tick_ns) {
            (Some(r), Some(t)) => {
                let e = ticks_up(r as f64 * 1e6, t);
                SliceRule {
                    expected_ns: Some(e),
                    how: format!(
                        "SCHED_RR: sched_rr_timeslice_ms = {r}, counted down in ticks ({}): {}",
                        tick_text(t),
                        ms(e)
                    ),
                }
            }
            (Some(r), None) => SliceRule {
                expected_ns: Some(r as f64 * 1e6),
                how: format!("SCHED_RR: sched_rr_timeslice_ms = {r} (the tick is unknown)"),
            },
            _ => SliceRule {
                expected_ns: None,
                how: "SCHED_RR: sched_rr_timeslice_ms cannot be read".into(),
            },
        },
        Policy::Other | Policy::Batch | Policy::Idle => {
            let Some((b, source)) = base else {
                return SliceRule {
                    expected_ns: None,
                    how: "the base slice is unknown (a kernel before 6.6 shares a period among \
                          the runnable tasks instead of giving fixed slices)"
                        .into(),
                };
            };
            let b = b as f64;
            match (hrtick, tick_ns) {
                (Some(true), _) => SliceRule {
                    expected_ns: Some(b),
                    how: format!(
                        "base slice {} ({source}); HRTICK is on, so a slice ends on time",
                        ms(b)
                    ),
                },
                (_, Some(t)) => {
                    let e = ticks_up(b, t);
                    SliceRule {
                        expected_ns: Some(e),
                        how: format!(
                            "base slice {} ({source}), ended at the first tick after it is used \
                             up ({}; HRTICK {}): {}",
                            ms(b),
                            tick_text(t),
                            if hrtick == Some(false) {
                                "off"
                            } else {
                                "assumed off, its default"
                            },
                            ms(e)
                        ),
                    }
                }
                (_, None) => SliceRule {
                    expected_ns: Some(b),
                    how: format!(
                        "base slice {} ({source}); the tick is unknown, so not rounded to ticks",
                        ms(b)
                    ),
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predicted_shares_follow_the_weight_table() {
        let s = predicted_shares(Policy::Other, &[0, 5]).unwrap();
        assert!(
            (s[0] - 75.35).abs() < 0.01 && (s[1] - 24.65).abs() < 0.01,
            "{s:?}"
        );
        let s = predicted_shares(Policy::Batch, &[0, 19]).unwrap();
        assert!((s[0] - 1024.0 / 1039.0 * 100.0).abs() < 1e-9, "{s:?}");
        let s = predicted_shares(Policy::Other, &[0, 0, 0, 0]).unwrap();
        assert!(s.iter().all(|v| (v - 25.0).abs() < 1e-9));
        // One nice step is a factor of about 1.25: 55 % against 45 %.
        let s = predicted_shares(Policy::Other, &[0, 1]).unwrap();
        assert!((s[0] - 1024.0 / 1844.0 * 100.0).abs() < 1e-9);
        // SCHED_IDLE and RR ignore nice; FIFO has no shares.
        assert_eq!(
            predicted_shares(Policy::Idle, &[0, 19]).unwrap(),
            vec![50.0, 50.0]
        );
        assert_eq!(
            predicted_shares(Policy::Rr, &[-5, 5]).unwrap(),
            vec![50.0, 50.0]
        );
        assert_eq!(predicted_shares(Policy::Fifo, &[0, 0]), None);
        assert_eq!(weight(-20), Some(88761));
        assert_eq!(weight(19), Some(15));
        assert_eq!(weight(20), None);
        assert_eq!(weight(-21), None);
    }

    /// Two workers alternating in planted slices, chunk ends every `chunk` ns within them.
    fn planted(slices: &[(usize, f64)], chunk: f64) -> (Vec<Vec<f64>>, Vec<f64>) {
        let mut ends = vec![Vec::new(), Vec::new()];
        let mut t = 0.0;
        let mut next = [0.3 * chunk, 0.7 * chunk]; // each worker's progress into its chunk
        for &(w, len) in slices {
            let stop = t + len;
            let mut now = t;
            loop {
                let left = chunk - next[w];
                if now + left > stop {
                    next[w] += stop - now;
                    break;
                }
                now += left;
                ends[w].push(now);
                next[w] = 0.0;
            }
            t = stop;
        }
        (ends, slices.iter().map(|s| s.1).collect())
    }

    #[test]
    fn slice_extraction_finds_the_planted_slices() {
        let chunk = 0.25e6;
        let mut plan = Vec::new();
        for k in 0..20 {
            plan.push((k % 2, if k % 2 == 0 { 4e6 } else { 3e6 }));
        }
        let (ends, planted_len) = planted(&plan, chunk);
        let t = turns(&ends);
        assert_eq!(t.len(), plan.len());
        for (turn, (&(w, _), &len)) in t.iter().zip(plan.iter().zip(&planted_len)) {
            assert_eq!(turn.worker, w);
            if turn.whole() {
                assert!(
                    (turn.len_ns() - len).abs() <= chunk,
                    "{turn:?} planted {len}"
                );
            }
        }
        let s = slices_ns(&ends);
        // Neither the first turn nor a worker's last is a whole slice.
        assert_eq!(s.len(), plan.len() - 3);
        let of = |w: usize| -> Vec<f64> {
            t.iter()
                .filter(|t| t.whole() && t.worker == w)
                .map(Turn::len_ns)
                .collect()
        };
        let (a, b) = (of(0), of(1));
        assert!((crate::median(&a) - 4e6).abs() <= chunk, "{a:?}");
        assert!((crate::median(&b) - 3e6).abs() <= chunk, "{b:?}");
        assert_eq!(preemptions(&ends), plan.len() - 2);
    }

    #[test]
    fn a_lone_worker_has_one_turn_and_no_slice() {
        let ends = vec![vec![1.0, 2.0, 3.0]];
        let t = turns(&ends);
        assert_eq!(t.len(), 1);
        assert!(t[0].first && t[0].last_of_worker && !t[0].whole());
        assert!(slices_ns(&ends).is_empty());
        assert_eq!(preemptions(&ends), 0);
    }

    #[test]
    fn the_expected_slice_says_how_it_was_derived() {
        let tick = Some(4_000_000);
        let base = Some((1_400_000, "se.slice".to_string()));
        let r = expected_slice(Policy::Other, base.clone(), tick, None, None);
        assert_eq!(r.expected_ns, Some(4e6));
        assert!(
            r.how.contains("1.40 ms") && r.how.contains("HZ 250"),
            "{}",
            r.how
        );
        let r = expected_slice(
            Policy::Other,
            Some((6_000_000, "x".into())),
            tick,
            None,
            None,
        );
        assert_eq!(r.expected_ns, Some(8e6));
        let r = expected_slice(Policy::Batch, base.clone(), tick, Some(true), None);
        assert_eq!(r.expected_ns, Some(1.4e6));
        let r = expected_slice(Policy::Rr, None, tick, None, Some(10));
        assert_eq!(r.expected_ns, Some(12e6));
        assert_eq!(
            expected_slice(Policy::Fifo, base, tick, None, Some(100)).expected_ns,
            None
        );
        assert_eq!(
            expected_slice(Policy::Other, None, tick, None, None).expected_ns,
            None
        );
        assert_eq!(default_base_slice_ns((6, 18), 2), Some(1_400_000));
        assert_eq!(default_base_slice_ns((6, 6), 2), Some(1_500_000));
        assert_eq!(default_base_slice_ns((6, 12), 64), Some(3_000_000));
        assert_eq!(default_base_slice_ns((6, 15), 1), Some(700_000));
        assert_eq!(default_base_slice_ns((5, 15), 4), None);
        assert_eq!(parse_release("6.18.44-fc-v669"), Some((6, 18)));
    }

    #[test]
    fn a_turn_counts_the_chunks_its_worker_did_before() {
        let ends = vec![vec![1.0, 2.0, 5.0], vec![3.0, 4.0]];
        let seen: Vec<(usize, usize, usize)> = turns(&ends)
            .iter()
            .map(|t| (t.worker, t.chunks, t.chunks_before))
            .collect();
        assert_eq!(seen, vec![(0, 2, 0), (1, 2, 0), (0, 1, 2)]);
    }
}

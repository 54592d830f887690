//! The busy loop of `noise`: read the counter as fast as possible and record every gap between
//! two successive readings longer than a threshold, into memory prepared beforehand.
//!
//! Each iteration takes the previous reading (held in a register) before it reads the counter,
//! so an interruption anywhere in the loop lies between two readings and lengthens exactly one
//! interval. Nothing in the loop allocates, locks or calls the kernel; a full buffer only
//! counts further gaps.

use std::sync::atomic::{AtomicBool, Ordering};

/// One interruption of the loop: the reading before it and how long the loop was held up, both
/// in counter ticks (the length includes the one loop iteration it interrupted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Gap {
    /// Counter reading just before the gap.
    pub at: u64,
    /// Ticks from that reading to the next.
    pub len: u64,
}

/// What one spin recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Spin {
    /// First counter reading.
    pub start: u64,
    /// Last counter reading.
    pub end: u64,
    /// Loop iterations (counter readings after the first).
    pub iterations: u64,
    /// Gaps stored in the buffer (its first `stored` entries).
    pub stored: usize,
    /// Gaps seen after the buffer was full: counted, not stored.
    pub dropped: u64,
    /// Whether `stop` ended the spin before `until`.
    pub stopped: bool,
}

impl Spin {
    /// Every gap seen, stored or not.
    pub fn gaps(&self) -> u64 {
        self.stored as u64 + self.dropped
    }
}

/// How many iterations pass between two looks at the stop flag: about a millisecond's worth,
/// so Ctrl-C is noticed quickly while the loop stays a counter read and a compare.
const STOP_CHECK_EVERY: u64 = 1 << 16;

/// Reads `read` until it returns at least `until`, storing every interval above `threshold`
/// ticks into `buf` as a [`Gap`], and returns what it saw. `stop` is looked at every 65 536
/// iterations; once set, the spin ends early (`stopped`).
///
/// Generic and inlined, so the loop around a real counter has no indirect call; tests drive it
/// with a scripted series of readings.
#[inline(always)]
pub fn record_gaps(
    mut read: impl FnMut() -> u64,
    until: u64,
    threshold: u64,
    buf: &mut [Gap],
    stop: &AtomicBool,
) -> Spin {
    let start = read();
    let mut prev = start;
    let mut iterations: u64 = 0;
    let mut stored = 0usize;
    let mut dropped = 0u64;
    let mut stopped = false;
    loop {
        let before = prev;
        let now = read();
        iterations += 1;
        let len = now.wrapping_sub(before);
        if len > threshold {
            if let Some(slot) = buf.get_mut(stored) {
                *slot = Gap { at: before, len };
                stored += 1;
            } else {
                dropped += 1;
            }
        }
        prev = now;
        if now >= until {
            break;
        }
        if iterations & (STOP_CHECK_EVERY - 1) == 0 && stop.load(Ordering::Relaxed) {
            stopped = true;
            break;
        }
    }
    Spin {
        start,
        end: prev,
        iterations,
        stored,
        dropped,
        stopped,
    }
}

/// A buffer of `capacity` gaps whose pages are already written, so the loop never takes a page
/// fault on its first store into them (a zeroed allocation would map them lazily).
pub fn gap_buffer(capacity: usize) -> Vec<Gap> {
    vec![
        Gap {
            at: u64::MAX,
            len: u64::MAX,
        };
        capacity
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A counter that advances 10 ticks per read, with planted extra delays before chosen
    /// reads.
    fn scripted(delays: &[(u64, u64)]) -> impl FnMut() -> u64 + '_ {
        let mut t = 1_000u64;
        let mut n = 0u64;
        move || {
            n += 1;
            t += 10;
            if let Some(&(_, extra)) = delays.iter().find(|(at, _)| *at == n) {
                t += extra;
            }
            t
        }
    }

    #[test]
    fn finds_exactly_the_planted_gaps() {
        // Reads 50, 51 and 400 are held up by 500, 90 and 7000 ticks; a threshold of 95
        // catches the first and the last, not the 100-tick one (90 + the 10 of the iteration)
        // nor any normal 10-tick iteration.
        let planted = [(50, 500), (51, 90), (400, 7_000)];
        let mut buf = gap_buffer(8);
        let stop = AtomicBool::new(false);
        let spin = record_gaps(scripted(&planted), 20_000, 100, &mut buf, &stop);
        assert_eq!(spin.stored, 2);
        assert_eq!(spin.dropped, 0);
        // Read 49 returned 1000 + 49·10 = 1490; read 50 came 510 ticks later.
        assert_eq!(
            buf[0],
            Gap {
                at: 1_490,
                len: 510
            }
        );
        assert_eq!(buf[1].len, 7_010);
        assert_eq!(spin.start, 1_010);
        assert!(spin.end >= 20_000 && !spin.stopped);
        // Every read after the first is one iteration.
        let total_delay: u64 = planted.iter().map(|p| p.1).sum();
        assert_eq!(spin.iterations, (spin.end - spin.start - total_delay) / 10);
    }

    #[test]
    fn a_full_buffer_counts_what_it_cannot_store() {
        let planted: Vec<(u64, u64)> = (1..=10).map(|i| (i * 10, 1_000)).collect();
        let mut buf = gap_buffer(3);
        let stop = AtomicBool::new(false);
        let spin = record_gaps(scripted(&planted), 50_000, 100, &mut buf, &stop);
        assert_eq!((spin.stored, spin.dropped, spin.gaps()), (3, 7, 10));
    }

    #[test]
    fn stop_ends_the_spin() {
        let stop = AtomicBool::new(true);
        let mut buf = gap_buffer(1);
        let spin = record_gaps(scripted(&[]), u64::MAX, 100, &mut buf, &stop);
        assert!(spin.stopped);
        assert_eq!(spin.iterations, STOP_CHECK_EVERY);
    }
}

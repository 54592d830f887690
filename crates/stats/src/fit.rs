//! Cost per event from runs of the same work under different event rates: the arithmetic of a
//! tick-period study (fixed work timed at several clock-tick periods, the extra cycles divided
//! by the extra events) and the least-squares line through every run, with a bootstrap interval
//! of its slope.

use oorandom::Rand64;

use crate::order::{cmp_f64, percentile};
use crate::CONFIDENCE_95;

/// Periodic events that fall within `time` at one every `period` (same unit): whole events
/// only, as a tick counter would have counted them.
///
/// `0` when `period` is not positive or either value is not finite.
pub fn events_in(time: f64, period: f64) -> u64 {
    if !(time.is_finite() && period.is_finite()) || period <= 0.0 || time <= 0.0 {
        return 0;
    }
    (time / period).floor() as u64
}

/// One run, or one point of a study: the events it saw and the cycles it took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Events counted during the run.
    pub events: f64,
    /// Cycles (or any time unit) the run took.
    pub cycles: f64,
}

/// Cycles each extra event cost between two runs of the same work: the extra cycles over the
/// extra events. `None` when both runs saw the same number of events.
pub fn per_extra_event(base: Point, loaded: Point) -> Option<f64> {
    let de = loaded.events - base.events;
    (de != 0.0 && de.is_finite()).then(|| (loaded.cycles - base.cycles) / de)
}

/// A straight line `cycles = intercept + slope · events`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineFit {
    /// Cycles per event.
    pub slope: f64,
    /// Cycles at no event: the work itself.
    pub intercept: f64,
    /// Points fitted.
    pub n: usize,
}

/// The least-squares line through `points`. `None` with fewer than two points, when every
/// point has the same number of events (no slope to see), or when a value is not finite.
pub fn least_squares(points: &[Point]) -> Option<LineFit> {
    let n = points.len();
    if n < 2
        || points
            .iter()
            .any(|p| !p.events.is_finite() || !p.cycles.is_finite())
    {
        return None;
    }
    let nf = n as f64;
    let mx = points.iter().map(|p| p.events).sum::<f64>() / nf;
    let my = points.iter().map(|p| p.cycles).sum::<f64>() / nf;
    // Centred sums: the events span five orders of magnitude and the cycles run into the
    // billions, so raw sums of squares would lose the digits the slope lives in.
    let sxx: f64 = points.iter().map(|p| (p.events - mx).powi(2)).sum();
    let sxy: f64 = points
        .iter()
        .map(|p| (p.events - mx) * (p.cycles - my))
        .sum();
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    Some(LineFit {
        slope,
        intercept: my - slope * mx,
        n,
    })
}

/// Bootstrap 95 % interval of the least-squares slope: `resamples` times, draw `points.len()`
/// points with replacement (whole runs, so each keeps its own events and cycles) and fit
/// again; the interval is the central 95 % of those slopes, widened to contain the slope of
/// the points themselves. Resamples that drew no spread of events are skipped. Deterministic
/// for a given `seed`. `None` when the points have no slope ([`least_squares`]).
pub fn slope_ci(points: &[Point], resamples: usize, seed: u64) -> Option<[f64; 2]> {
    let point = least_squares(points)?.slope;
    let mut rng = Rand64::new(u128::from(seed));
    let mut buf = Vec::with_capacity(points.len());
    let mut slopes = Vec::with_capacity(resamples);
    let n = points.len() as u64;
    for _ in 0..resamples {
        buf.clear();
        for _ in 0..n {
            buf.push(points[rng.rand_range(0..n) as usize]);
        }
        if let Some(f) = least_squares(&buf) {
            slopes.push(f.slope);
        }
    }
    if slopes.is_empty() {
        return Some([point; 2]);
    }
    slopes.sort_unstable_by(cmp_f64);
    let tail = (1.0 - CONFIDENCE_95) / 2.0 * 100.0;
    Some([
        percentile(&slopes, tail).min(point),
        percentile(&slopes, 100.0 - tail).max(point),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two runs of the tick-period study oscost repeats: 5928.8 ms of work at a 0.9998475 ms
    /// tick in 3 169 850 746 cycles, and 7937.35 ms at a 0.009219 ms tick in 4 243 731 124.
    fn study() -> (Point, Point) {
        let slow = Point {
            events: events_in(5928.8, 0.9998475) as f64,
            cycles: 3_169_850_746.0,
        };
        let fast = Point {
            events: events_in(7937.35, 0.009219) as f64,
            cycles: 4_243_731_124.0,
        };
        (slow, fast)
    }

    #[test]
    fn the_studys_own_figures_give_its_events_and_cost_per_tick() {
        let (slow, fast) = study();
        assert_eq!(slow.events, 5929.0);
        assert_eq!(fast.events, 860_977.0);
        let per = per_extra_event(slow, fast).unwrap();
        assert!((per - 1255.93).abs() < 0.01, "{per}");
        assert_eq!(per.round(), 1256.0);
        // The line through the two points has the same slope.
        let fit = least_squares(&[slow, fast]).unwrap();
        assert!((fit.slope - per).abs() < 1e-6, "{fit:?}");
        assert_eq!(fit.n, 2);
    }

    #[test]
    fn events_in_is_whole_events_and_refuses_nonsense() {
        assert_eq!(events_in(10.0, 1.0), 10);
        assert_eq!(events_in(9.999, 1.0), 9);
        assert_eq!(events_in(1.0, 0.0), 0);
        assert_eq!(events_in(f64::NAN, 1.0), 0);
        assert_eq!(events_in(-5.0, 1.0), 0);
        assert_eq!(
            per_extra_event(
                Point {
                    events: 3.0,
                    cycles: 1.0
                },
                Point {
                    events: 3.0,
                    cycles: 9.0
                }
            ),
            None
        );
    }

    #[test]
    fn fit_recovers_a_planted_line_and_its_interval_contains_it() {
        // 1000 cycles of work per run plus 250 per event, with a deterministic wobble.
        let points: Vec<Point> = (0..40)
            .map(|i| {
                let events = [0.0, 100.0, 1000.0, 5000.0][i % 4];
                let wobble = ((i * 7919) % 13) as f64 - 6.0;
                Point {
                    events,
                    cycles: 1_000_000.0 + 250.0 * events + wobble * 100.0,
                }
            })
            .collect();
        let fit = least_squares(&points).unwrap();
        assert!((fit.slope - 250.0).abs() < 1.0, "{fit:?}");
        let ci = slope_ci(&points, 500, 7).unwrap();
        assert!(ci[0] <= fit.slope && fit.slope <= ci[1], "{ci:?}");
        assert!(ci[0] > 245.0 && ci[1] < 255.0, "{ci:?}");
        // Deterministic for one seed.
        assert_eq!(slope_ci(&points, 500, 7), Some(ci));
    }

    #[test]
    fn no_spread_of_events_has_no_slope() {
        let flat = [
            Point {
                events: 5.0,
                cycles: 1.0,
            },
            Point {
                events: 5.0,
                cycles: 2.0,
            },
        ];
        assert_eq!(least_squares(&flat), None);
        assert_eq!(slope_ci(&flat, 10, 1), None);
        assert_eq!(least_squares(&flat[..1]), None);
    }
}

//! The ratio search as it was before its quantiles were read from pairs in a narrow bracket:
//! walking both laws in full at every step. Kept as the reference the faster search is held to.

use super::*;

/// Bisection of a ratio's quantile stopped at this relative width.
const RATIO_PRECISION: f64 = 1e-10;

/// Ratio of medians `median(b) / median(a)` with its `confidence` interval from the exact
/// laws of the two bootstrap medians, drawn independently: the percentile interval an
/// unlimited number of resamples would give (the interval's ends are the law's quantiles,
/// widened to hold the estimate). `None` when a median is not positive, or when `a`'s
/// replicate median can never be positive (a ratio of such medians means nothing).
/// Replicates whose median of `a` is not positive have no ratio and are left out.
pub(super) fn ratio_of_medians(
    a: &MedianLaw,
    b: &MedianLaw,
    confidence: f64,
) -> Option<Combination> {
    if a.median <= 0.0 || b.median <= 0.0 {
        return None;
    }
    let estimate = b.median / a.median;
    let start = a.values.partition_point(|v| *v <= 0.0);
    let (a_values, a_mass): (&[f64], Vec<f64>) = (
        &a.values[start..],
        (start..a.values.len()).map(|i| a.mass(i)).collect(),
    );
    let positive: f64 = a_mass.iter().sum();
    if positive <= 0.0 {
        return None;
    }
    // P(ratio ≤ r): over a's positive values, ascending, b's law below r times each; the
    // points r·a rise with a, so one walk through b's values serves them all.
    let cdf = |r: f64| {
        let mut at = 0;
        let mut sum = 0.0;
        for (v, p) in a_values.iter().zip(&a_mass) {
            let limit = r * v;
            while at < b.values.len() && b.values[at] <= limit {
                at += 1;
            }
            if at > 0 {
                sum += p * b.cumulative[at - 1];
            }
        }
        sum / positive
    };
    // The smallest ratio b / a above r: for each of a's values, ascending, the first of b's
    // above r·a, found in one walk since r·a rises with a.
    let next_jump = |r: f64| {
        let mut at = 0;
        let mut best = f64::INFINITY;
        for v in a_values {
            let limit = r * v;
            while at < b.values.len() && b.values[at] <= limit {
                at += 1;
            }
            if let Some(w) = b.values.get(at) {
                best = best.min(w / v);
            }
        }
        best
    };
    let (b_lo, b_hi) = (b.values[0], b.values[b.values.len() - 1]);
    let (a_lo, a_hi) = (a_values[0], a_values[a_values.len() - 1]);
    let ends = [b_lo / a_lo, b_lo / a_hi, b_hi / a_lo, b_hi / a_hi];
    let lowest = ends.iter().copied().fold(f64::INFINITY, f64::min);
    let highest = ends.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // A narrower bracket from the two laws' own quantiles, when b is positive too (as times
    // are): P(ratio ≤ B(s) / A(1 − s)) ≥ s² for independent sides, and the ratio of b's
    // (q / 2)-quantile to a's (1 − q / 2)-quantile lies at or below the ratio's q-quantile
    // but for the weight of ties, which the check of each end by the law itself catches.
    let a_positive = MedianLaw {
        values: a_values.to_vec(),
        cumulative: a_mass
            .iter()
            .scan(0.0, |acc, p| {
                *acc += p / positive;
                Some(*acc)
            })
            .collect(),
        median: a.median,
    };
    let bracket = |q: f64| -> (f64, f64) {
        if b_lo <= 0.0 {
            return (lowest, highest);
        }
        let s = q.sqrt();
        let hi = b.quantile(s) / a_positive.quantile(1.0 - s);
        let lo = b.quantile(q / 2.0) / a_positive.quantile(1.0 - q / 2.0);
        (
            if lo.is_finite() { lo } else { lowest },
            if hi.is_finite() { hi } else { highest },
        )
    };
    // The smallest r with P(ratio ≤ r) ≥ q: false position (the Illinois variant), which
    // needs a few steps where the law is smooth, halving the bracket at least every other
    // step where it is not.
    let quantile = |q: f64| {
        let (mut lo, mut hi) = bracket(q);
        let mut f_lo = cdf(lo) - q;
        if f_lo >= 0.0 {
            lo = lowest;
            f_lo = cdf(lo) - q;
            if f_lo >= 0.0 {
                return lo;
            }
        }
        let mut f_hi = cdf(hi) - q;
        if f_hi < 0.0 {
            hi = highest;
            f_hi = cdf(hi) - q;
        }
        let mut side = 0;
        let mut halve = false;
        let mut widths = [hi - lo; 3];
        let candidates = (a_values.len() * b.values.len()) as f64 / (highest - lowest);
        while hi - lo > RATIO_PRECISION * hi.abs().max(lo.abs()) {
            // When the bracket likely holds only a few of the values the ratio can take, the
            // first of them above `lo`: if the law reaches q there, it is the quantile exactly
            // (a discrete law ends this way long before the bracket is narrow).
            if candidates * (hi - lo) < 4.0 {
                let jump = next_jump(lo);
                if jump > lo && jump <= hi {
                    // Rounding must not leave the jump's own weight out of its value.
                    let f = cdf(jump * (1.0 + 4.0 * f64::EPSILON)) - q;
                    if f >= 0.0 {
                        return jump;
                    }
                    lo = jump;
                    f_lo = f;
                    continue;
                }
            }
            let width = hi - lo;
            let mut mid = lo - f_lo * width / (f_hi - f_lo);
            if halve || !(mid > lo && mid < hi) {
                mid = 0.5 * lo + 0.5 * hi;
            }
            if mid <= lo || mid >= hi {
                break;
            }
            let f = cdf(mid) - q;
            if f >= 0.0 {
                hi = mid;
                f_hi = f;
                if side == 1 {
                    f_lo *= 0.5;
                }
                side = 1;
            } else {
                lo = mid;
                f_lo = f;
                if side == -1 {
                    f_hi *= 0.5;
                }
                side = -1;
            }
            // False position may creep from one side: halve when three steps did not.
            halve = hi - lo > 0.5 * widths[0];
            widths = [widths[1], widths[2], width];
        }
        hi
    };
    let confidence = if confidence.is_nan() {
        0.0
    } else {
        confidence.clamp(0.0, 1.0)
    };
    let tail = (1.0 - confidence) / 2.0;
    let (lo, hi) = (quantile(tail), quantile(1.0 - tail));
    Some(Combination {
        estimate,
        ci95: [lo.min(estimate), hi.max(estimate)],
    })
}

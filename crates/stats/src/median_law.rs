//! The exact law of a bootstrap median, and the ratio of two medians' interval from it.
//!
//! A bootstrap replicate's median is an order statistic (or the midpoint of two) of a resample
//! drawn with replacement, and the law of an order statistic of such a resample is known in
//! closed form: the `k`-th smallest of `n` draws is at most the `j`-th smallest sample exactly
//! when at least `k` of the `n` draws fall among the first `j`, a binomial count. So the
//! distribution the bootstrap estimates with thousands of resamples can be written down once
//! per set of samples, and an interval read from it without drawing anything: the same
//! interval an unlimited number of resamples would give, deterministic, and cheap enough that
//! a fleet of a hundred hosts compares in about a second. Maritz and Jarrett ("A note on
//! estimating the variance of the sample median", 1978) wrote down this law of the bootstrap
//! median.

use crate::order::{cmp_f64, median_of_sorted};
use crate::Combination;

/// Probability mass below which a tail of a law is dropped: far below anything a 95 %
/// interval can see.
const NEGLIGIBLE: f64 = 1e-15;

/// Bisection of a ratio's quantile stops at this relative width.
const RATIO_PRECISION: f64 = 1e-10;

/// The exact law of the bootstrap median of one set of samples: the values a replicate's median
/// can take, ascending, and the probability of each value or any below it.
#[derive(Debug, Clone, PartialEq)]
pub struct MedianLaw {
    values: Vec<f64>,
    cumulative: Vec<f64>,
    median: f64,
}

impl MedianLaw {
    /// The law of the bootstrap median of `samples` (resamples of the same size, drawn with
    /// replacement); `None` when there are no samples or one is not finite.
    pub fn new(samples: &[f64]) -> Option<MedianLaw> {
        if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_unstable_by(cmp_f64);
        let median = median_of_sorted(&sorted);
        let n = sorted.len();
        let ln_fact = ln_factorials(n);
        let mut points: Vec<(f64, f64)> = if n % 2 == 1 {
            odd_law(&sorted, &ln_fact)
        } else {
            even_law(&sorted, &ln_fact)
        };
        points.sort_unstable_by(|a, b| cmp_f64(&a.0, &b.0));
        let total: f64 = points.iter().map(|p| p.1).sum();
        let mut acc = 0.0;
        let mut values = Vec::with_capacity(points.len());
        let mut cumulative = Vec::with_capacity(points.len());
        for (v, p) in points {
            acc += p / total;
            values.push(v);
            cumulative.push(acc);
        }
        Some(MedianLaw {
            values,
            cumulative,
            median,
        })
    }

    /// The samples' own median.
    pub fn median(&self) -> f64 {
        self.median
    }

    /// The values a replicate's median can take (beyond a negligible tail), ascending.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// P(a replicate's median ≤ `x`).
    pub fn cdf(&self, x: f64) -> f64 {
        let above = self.values.partition_point(|v| *v <= x);
        if above == 0 {
            0.0
        } else {
            self.cumulative[above - 1]
        }
    }

    /// The smallest value v with P(a replicate's median ≤ v) ≥ `p`.
    fn quantile(&self, p: f64) -> f64 {
        let i = self.cumulative.partition_point(|c| *c < p);
        self.values[i.min(self.values.len() - 1)]
    }

    /// The probability of each value in [`MedianLaw::values`].
    fn mass(&self, i: usize) -> f64 {
        self.cumulative[i] - if i == 0 { 0.0 } else { self.cumulative[i - 1] }
    }
}

/// `ln k!` for k = 0..=n.
fn ln_factorials(n: usize) -> Vec<f64> {
    let mut t = Vec::with_capacity(n + 1);
    let mut acc = 0.0;
    t.push(0.0);
    for k in 1..=n {
        acc += (k as f64).ln();
        t.push(acc);
    }
    t
}

/// P(Binomial(n, p) ≥ m), summing from `m` outwards in whichever tail is the smaller, each
/// term from the one before (a product, no exponential), until the terms stop mattering.
fn binomial_at_least(n: usize, m: usize, p: f64, ln_fact: &[f64]) -> f64 {
    if m == 0 || p >= 1.0 {
        return 1.0;
    }
    if p <= 0.0 || m > n {
        return 0.0;
    }
    let ln_pmf = |k: usize| {
        ln_fact[n] - ln_fact[k] - ln_fact[n - k] + k as f64 * p.ln() + (n - k) as f64 * (-p).ln_1p()
    };
    let odds = p / (1.0 - p);
    if m as f64 > n as f64 * p {
        // The upper tail is the smaller one: m, m + 1, ... n.
        let mut term = ln_pmf(m).exp();
        let mut sum = 0.0;
        let mut k = m;
        loop {
            sum += term;
            if k == n || term <= sum * 1e-17 {
                return sum;
            }
            term *= (n - k) as f64 / (k + 1) as f64 * odds;
            k += 1;
        }
    } else {
        // The lower tail: m − 1, m − 2, ... 0.
        let mut k = m - 1;
        let mut term = ln_pmf(k).exp();
        let mut sum = 0.0;
        loop {
            sum += term;
            if k == 0 || term <= sum * 1e-17 {
                return 1.0 - sum;
            }
            term *= k as f64 / (n - k + 1) as f64 / odds;
            k -= 1;
        }
    }
}

/// P(the m-th smallest of n draws is among the first j samples) for every j, as
/// `(first, tails)`: `tails[j - first]` for j from `first`; below it the probability is
/// negligible, above the end of `tails` it is one.
fn order_statistic_cdf(n: usize, m: usize, ln_fact: &[f64]) -> (usize, Vec<f64>) {
    let at = |j: usize| binomial_at_least(n, m, j as f64 / n as f64, ln_fact);
    let mut first = m;
    while first > 1 && at(first - 1) > NEGLIGIBLE {
        first -= 1;
    }
    // Below `first` nothing matters; from it up until the rest is negligible.
    let mut tails = Vec::new();
    let mut j = first;
    loop {
        let t = at(j);
        tails.push(t);
        if j == n || 1.0 - t <= NEGLIGIBLE {
            break;
        }
        j += 1;
    }
    (first, tails)
}

/// Odd n: the median of a resample is its ((n + 1) / 2)-th smallest draw.
fn odd_law(sorted: &[f64], ln_fact: &[f64]) -> Vec<(f64, f64)> {
    let n = sorted.len();
    let (first, tails) = order_statistic_cdf(n, n.div_ceil(2), ln_fact);
    let mut below = if first > 1 {
        binomial_at_least(n, n.div_ceil(2), (first - 1) as f64 / n as f64, ln_fact)
    } else {
        0.0
    };
    let mut out = Vec::with_capacity(tails.len());
    for (k, t) in tails.iter().enumerate() {
        out.push((sorted[first + k - 1], (t - below).max(0.0)));
        below = *t;
    }
    out
}

/// Even n: the median of a resample is the midpoint of its (n / 2)-th and (n / 2 + 1)-th
/// smallest draws, whose joint law factorises: they are samples i < j exactly when n / 2
/// draws fall among the first i with at least one on i, and the others among j and above
/// with at least one on j.
fn even_law(sorted: &[f64], ln_fact: &[f64]) -> Vec<(f64, f64)> {
    let n = sorted.len();
    let m = n / 2;
    let (nf, mf, rest) = (n as f64, m as f64, (n - m) as f64);
    let ln_choose = ln_fact[n] - ln_fact[m] - ln_fact[n - m];
    // ln P(m draws ≤ i with one on i), without the choice of which draws.
    let ln_a = |i: usize| {
        mf * (i as f64 / nf).ln() + (-(mf * ((i - 1) as f64 / i as f64).ln()).exp()).ln_1p()
    };
    // ln P(n − m draws ≥ j with one on j).
    let ln_b = |j: usize| {
        let up = (n - j + 1) as f64;
        rest * (up / nf).ln() + (-(rest * ((n - j) as f64 / up).ln()).exp()).ln_1p()
    };
    let (first, tails) = order_statistic_cdf(n, m, ln_fact);
    let mut below = if first > 1 {
        binomial_at_least(n, m, (first - 1) as f64 / nf, ln_fact)
    } else {
        0.0
    };
    let mut out = Vec::new();
    for (k, t) in tails.iter().enumerate() {
        let i = first + k;
        let lower = (t - below).max(0.0);
        below = *t;
        if lower <= 0.0 {
            continue;
        }
        let base = ln_choose + ln_a(i);
        // P(the lower middle draw is i and the upper one above it): the sum over j > i.
        let above = if i == n {
            0.0
        } else {
            (base + rest * ((n - i) as f64 / nf).ln()).exp()
        };
        out.push((sorted[i - 1], (lower - above).max(0.0)));
        // The upper draw's chances fall about e-fold per sample above i: a few dozen matter.
        for j in i + 1..=n {
            let p = (base + ln_b(j)).exp();
            out.push((0.5 * sorted[i - 1] + 0.5 * sorted[j - 1], p));
            if p <= NEGLIGIBLE * above {
                break;
            }
        }
    }
    out
}

/// Ratio of medians `median(b) / median(a)` with its `confidence` interval from the exact
/// laws of the two bootstrap medians, drawn independently: the percentile interval an
/// unlimited number of resamples would give (the interval's ends are the law's quantiles,
/// widened to hold the estimate). `None` when a median is not positive, or when `a`'s
/// replicate median can never be positive (a ratio of such medians means nothing).
/// Replicates whose median of `a` is not positive have no ratio and are left out.
pub fn ratio_of_medians(a: &MedianLaw, b: &MedianLaw, confidence: f64) -> Option<Combination> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The law by brute force: every one of the n^n resamples, each as likely.
    fn enumerate(samples: &[f64]) -> Vec<(f64, f64)> {
        let n = samples.len();
        let total = n.pow(n as u32);
        let mut out: Vec<(f64, u64)> = Vec::new();
        let mut buf = vec![0.0; n];
        for code in 0..total {
            let mut c = code;
            for slot in buf.iter_mut() {
                *slot = samples[c % n];
                c /= n;
            }
            buf.sort_unstable_by(cmp_f64);
            let m = median_of_sorted(&buf);
            match out.iter_mut().find(|(v, _)| *v == m) {
                Some(e) => e.1 += 1,
                None => out.push((m, 1)),
            }
        }
        out.into_iter()
            .map(|(v, c)| (v, c as f64 / total as f64))
            .collect()
    }

    #[test]
    fn the_law_is_what_every_resample_gives() {
        for samples in [
            vec![5.0],
            vec![3.0, 1.0],
            vec![2.0, 7.0, 3.0],
            vec![1.0, 2.0, 4.0, 8.0],
            vec![1.0, 10.0, 100.0, 1000.0, 10000.0],
            vec![1.5, 2.5, 3.5, 4.5, 5.5, 6.5],
            vec![1.0, 1.0, 3.0, 3.0, 9.0],
            vec![1.0, 1.0, 2.0, 3.0, 3.0, 9.0],
        ] {
            let law = MedianLaw::new(&samples).unwrap();
            for (v, p) in enumerate(&samples) {
                let below: f64 = enumerate(&samples)
                    .iter()
                    .filter(|(w, _)| *w <= v)
                    .map(|(_, q)| q)
                    .sum();
                assert!(
                    (law.cdf(v) - below).abs() < 1e-12,
                    "{samples:?} at {v}: {} vs {below} (mass {p})",
                    law.cdf(v)
                );
            }
            assert!((law.cdf(f64::MAX) - 1.0).abs() < 1e-12);
            assert_eq!(law.cdf(-1.0), 0.0);
        }
    }

    #[test]
    fn a_large_law_holds_all_its_mass_near_the_median() {
        for n in [1999usize, 2000] {
            let samples: Vec<f64> = (0..n).map(|i| 100.0 + i as f64).collect();
            let law = MedianLaw::new(&samples).unwrap();
            assert!((law.cdf(f64::MAX) - 1.0).abs() < 1e-12, "{n}");
            // The bootstrap median's spread is about √n / 2 samples: 95 % within ± 2 of it.
            let half = 2.0 * (n as f64).sqrt() / 2.0;
            let inside = law.cdf(law.median() + half) - law.cdf(law.median() - half);
            assert!(inside > 0.93 && inside < 0.97, "{n}: {inside}");
            // Odd: an order statistic; even: midpoints of two, a few dozen apart at most.
            assert!(law.values().len() < 10 * n, "{n}: {}", law.values().len());
        }
    }

    #[test]
    fn bad_samples_have_no_law() {
        assert_eq!(MedianLaw::new(&[]), None);
        assert_eq!(MedianLaw::new(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn the_ratio_of_one_set_scaled_is_the_scale_and_holds_it() {
        let a: Vec<f64> = (0..81).map(|i| 100.0 + ((i * 37) % 81) as f64).collect();
        let b: Vec<f64> = a.iter().map(|x| x * 1.5).collect();
        let (la, lb) = (MedianLaw::new(&a).unwrap(), MedianLaw::new(&b).unwrap());
        let r = ratio_of_medians(&la, &lb, 0.95).unwrap();
        assert!((r.estimate - 1.5).abs() < 1e-12);
        assert!(r.ci95[0] < 1.5 && r.ci95[1] > 1.5, "{:?}", r.ci95);
        let same = ratio_of_medians(&la, &la, 0.95).unwrap();
        assert_eq!(same.estimate, 1.0);
        // The two sides resample independently: even one set against itself has a spread.
        assert!(same.ci95[0] < 1.0 && same.ci95[1] > 1.0, "{:?}", same.ci95);
        assert!(ratio_of_medians(&la, &MedianLaw::new(&[-1.0]).unwrap(), 0.95).is_none());
    }

    #[test]
    fn the_interval_is_what_many_resamples_give() {
        // Skewed samples with a tail, as timings are; one odd and one even count.
        let mut x: u64 = 7;
        let mut draw = || {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            100.0 - 20.0 * (1.0 - u).ln()
        };
        let a: Vec<f64> = (0..81).map(|_| draw()).collect();
        let b: Vec<f64> = (0..60).map(|_| 1.2 * draw()).collect();
        let exact = ratio_of_medians(
            &MedianLaw::new(&a).unwrap(),
            &MedianLaw::new(&b).unwrap(),
            0.95,
        )
        .unwrap();
        let drawn = crate::bootstrap_ratio_ci(&a, &b, 20_000, 3).unwrap();
        assert_eq!(exact.estimate, drawn.estimate);
        for k in 0..2 {
            let gap = (exact.ci95[k] - drawn.ci95[k]).abs() / exact.estimate;
            assert!(gap < 0.005, "{:?} vs {:?}", exact.ci95, drawn.ci95);
        }
    }
}

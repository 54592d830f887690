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

/// A probability summed in another order than the walk through every row sums it is trusted
/// to decide against a quantile's level only farther from it than this: orders of adding ten
/// thousand terms differ by about a thousand units of the last bit.
const NEAR: f64 = 1e-10;

/// The standard normal's p-quantile, to within 5e-4 (Abramowitz and Stegun 26.2.23): enough
/// for a guess that a walk through the law then checks.
fn normal_quantile(p: f64) -> f64 {
    let tail = p.min(1.0 - p);
    let t = (-2.0 * tail.ln()).sqrt();
    let z = t
        - (2.515517 + 0.802853 * t + 0.010328 * t * t)
            / (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t);
    if p < 0.5 {
        -z
    } else {
        z
    }
}

/// A ratio's quantile is read from the listed ratios once its bracket holds this many: fewer
/// cost more steps of the search, more a longer sort.
const FEW_RATIOS: usize = 256;

/// The exact law of the bootstrap median of one set of samples: the values a replicate's median
/// can take, ascending and each once, and the probability of each value or any below it.
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
        let mut values: Vec<f64> = Vec::with_capacity(points.len());
        let mut cumulative: Vec<f64> = Vec::with_capacity(points.len());
        for (v, p) in points {
            acc += p / total;
            // Timings tie (whole nanoseconds, and midpoints of them far more): each value once
            // leaves the law as it is and the ratio's grid, rows by columns, a fraction.
            match (values.last(), cumulative.last_mut()) {
                (Some(last), Some(c)) if *last == v => *c = acc,
                _ => {
                    values.push(v);
                    cumulative.push(acc);
                }
            }
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

    /// The values a replicate's median can take (beyond a negligible tail), ascending, each once.
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
    let (first, tails) = order_statistic_cdf(n, m, ln_fact);
    // ln P(n − m draws ≥ j with one on j) depends on j alone: once per j, not once per pair
    // (a law of 2 000 samples has some 15 000 pairs).
    let ln_b: Vec<f64> = (0..=n)
        .map(|j| {
            if j <= first {
                return f64::NEG_INFINITY;
            }
            let up = (n - j + 1) as f64;
            rest * (up / nf).ln() + (-(rest * ((n - j) as f64 / up).ln()).exp()).ln_1p()
        })
        .collect();
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
            let p = (base + ln_b[j]).exp();
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
    let law = RatioLaw::new(a, b)?;
    let confidence = if confidence.is_nan() {
        0.0
    } else {
        confidence.clamp(0.0, 1.0)
    };
    let tail = (1.0 - confidence) / 2.0;
    let (lo, hi) = (law.quantile(tail), law.quantile(1.0 - tail));
    Some(Combination {
        estimate,
        ci95: [lo.min(estimate), hi.max(estimate)],
    })
}

/// The law of `b / a` for two independent bootstrap medians, over `a`'s positive values: a
/// grid of ratios `b[j] / a[i]`, each row (one value of `a`) ascending in `j`.
struct RatioLaw<'l> {
    /// `a`'s positive values, ascending.
    a: &'l [f64],
    /// Their probabilities.
    a_mass: Vec<f64>,
    /// The probability that `a`'s replicate median is positive.
    positive: f64,
    /// `a`'s law, for the bracket.
    a_law: &'l MedianLaw,
    /// Where `a`'s positive values start in its law.
    start: usize,
    b: &'l MedianLaw,
}

/// The ratios between two cuts through the grid, `lo < ratio ≤ hi`: in each row still holding
/// one (`rows[k]`), b's values from `at_lo[k]` up to `at_hi[k]`. `weight_lo` is
/// `Σ P(a[i]) · P(b ≤ lo · a[i])` over every row, so P(ratio ≤ lo) is it over `positive`.
/// A cut through every row at a ratio: the ratio, each row's count of b's values at or below
/// it, and `Σ P(a[i]) · P(b ≤ r · a[i])`.
type Probe = (f64, Vec<usize>, f64);

struct Bracket {
    lo: f64,
    hi: f64,
    weight_lo: f64,
    rows: Vec<usize>,
    at_lo: Vec<usize>,
    at_hi: Vec<usize>,
}

impl Bracket {
    /// How many of the grid's ratios lie inside.
    fn inside(&self) -> usize {
        self.at_hi.iter().zip(&self.at_lo).map(|(h, l)| h - l).sum()
    }
}

impl<'l> RatioLaw<'l> {
    fn new(a: &'l MedianLaw, b: &'l MedianLaw) -> Option<RatioLaw<'l>> {
        let start = a.values.partition_point(|v| *v <= 0.0);
        let a_mass: Vec<f64> = (start..a.values.len()).map(|i| a.mass(i)).collect();
        let positive: f64 = a_mass.iter().sum();
        (positive > 0.0).then_some(RatioLaw {
            a: &a.values[start..],
            a_mass,
            positive,
            a_law: a,
            start,
            b,
        })
    }

    /// P(b ≤ the `at`-th smallest of b's values), `at` counted from one.
    fn b_below(&self, at: usize) -> f64 {
        if at == 0 {
            0.0
        } else {
            self.b.cumulative[at - 1]
        }
    }

    /// For every row, how many of b's values lie at or below `r · a[i]`, and
    /// `Σ P(a[i]) · P(b ≤ r · a[i])`: one walk up both laws where `r · a` rises with `a`.
    fn cut(&self, r: f64) -> (Vec<usize>, f64) {
        let mut at = Vec::with_capacity(self.a.len());
        let mut weight = 0.0;
        let mut j = 0;
        for i in 0..self.a.len() {
            let limit = r * self.a[i];
            if r >= 0.0 {
                while j < self.b.values.len() && self.b.values[j] <= limit {
                    j += 1;
                }
            } else {
                j = self.b.values.partition_point(|w| *w <= limit);
            }
            at.push(j);
            if j > 0 {
                weight += self.a_mass[i] * self.b.cumulative[j - 1];
            }
        }
        (at, weight)
    }

    /// P(ratio ≤ `r`), by a walk through every row.
    fn cdf(&self, r: f64) -> f64 {
        self.cut(r).1 / self.positive
    }

    /// The bracket between two cuts through every row, `lo` below `hi`.
    fn bracket(&self, (lo, at_lo, weight_lo): Probe, (hi, at_hi, _): Probe) -> Bracket {
        let rows: Vec<usize> = (0..self.a.len()).filter(|&i| at_lo[i] < at_hi[i]).collect();
        Bracket {
            lo,
            hi,
            weight_lo,
            at_lo: rows.iter().map(|&i| at_lo[i]).collect(),
            at_hi: rows.iter().map(|&i| at_hi[i]).collect(),
            rows,
        }
    }

    /// The cut through every row at `r`, with `r`.
    fn probe(&self, r: f64) -> Probe {
        let (at, weight) = self.cut(r);
        (r, at, weight)
    }

    /// A narrow bracket around the q-quantile where the ratio is near normal: its mean and
    /// spread from the two laws' (b over a to first order), a quarter of the spread either
    /// side. `None` where b's law reaches zero or the moments say nothing.
    fn guess(&self, q: f64) -> Option<(f64, f64)> {
        if self.b.values[0] <= 0.0 || !(q > 0.0 && q < 1.0) {
            return None;
        }
        let moments = |values: &[f64], mass: &mut dyn Iterator<Item = f64>, total: f64| {
            let (mut m1, mut m2) = (0.0, 0.0);
            for (v, p) in values.iter().zip(mass) {
                m1 += p * v;
                m2 += p * v * v;
            }
            let mean = m1 / total;
            (mean, (m2 / total - mean * mean).max(0.0))
        };
        let (ma, va) = moments(self.a, &mut self.a_mass.iter().copied(), self.positive);
        let b_mass = &mut (0..self.b.values.len()).map(|j| self.b.mass(j));
        let (mb, vb) = moments(&self.b.values, b_mass, 1.0);
        let ratio = mb / ma;
        let spread = ratio * (va / (ma * ma) + vb / (mb * mb)).sqrt();
        let g = ratio + normal_quantile(q) * spread;
        let half = 0.25 * spread + 1e-9 * ratio;
        (g.is_finite() && half.is_finite() && half > 0.0).then_some((g - half, g + half))
    }

    /// The smallest value v of `a`'s positive part with P(a ≤ v | a > 0) ≥ `p`.
    fn a_quantile(&self, p: f64) -> f64 {
        let before = if self.start == 0 {
            0.0
        } else {
            self.a_law.cumulative[self.start - 1]
        };
        let i = self.a_law.cumulative[self.start..]
            .partition_point(|c| (c - before) < p * self.positive);
        self.a[i.min(self.a.len() - 1)]
    }

    /// The smallest ratio r with P(ratio ≤ r) ≥ `q`: one of the grid's ratios.
    ///
    /// The bracket starts at a guess from the two laws' moments (else from their quantiles),
    /// each end checked by a walk through every row, and narrows by false position (the
    /// Illinois variant, halving where it creeps), each step searching only the rows with a
    /// ratio inside it and each only between its ends; once it holds a few hundred ratios they
    /// are listed, sorted and summed from its lower end. The old search walked both laws in
    /// full at every step down to a relative width of 1e-10 and could stop short of the ratio
    /// it converged on; this one always ends on it.
    fn quantile(&self, q: f64) -> f64 {
        let b = &self.b.values;
        let (b_lo, b_hi) = (b[0], b[b.len() - 1]);
        let (a_lo, a_hi) = (self.a[0], self.a[self.a.len() - 1]);
        let ends = [b_lo / a_lo, b_lo / a_hi, b_hi / a_lo, b_hi / a_hi];
        let lowest = ends.iter().copied().fold(f64::INFINITY, f64::min);
        let highest = ends.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        // A narrower bracket from the two laws' own quantiles, when b is positive too (as times
        // are): P(ratio ≤ B(s) / A(1 − s)) ≥ s² for independent sides, and the ratio of b's
        // (q / 2)-quantile to a's (1 − q / 2)-quantile lies at or below the ratio's q-quantile
        // but for the weight of ties, which the check of each end by the law itself catches.
        let (h_lo, h_hi) = if b_lo <= 0.0 {
            (lowest, highest)
        } else {
            let s = q.sqrt();
            let hi = self.b.quantile(s) / self.a_quantile(1.0 - s);
            let lo = self.b.quantile(q / 2.0) / self.a_quantile(1.0 - q / 2.0);
            (
                if lo.is_finite() { lo } else { lowest },
                if hi.is_finite() { hi } else { highest },
            )
        };
        // P(ratio ≤ r) ≥ q, decided as the walk through every row always decided it.
        let reaches = |p: &Probe| p.2 / self.positive - q >= 0.0;
        // Each end of the guess, once walked, is the bracket's lower or upper end.
        let (mut lo, mut hi): (Option<Probe>, Option<Probe>) = (None, None);
        for r in self.guess(q).map_or([f64::NAN; 2], |(l, h)| [l, h]) {
            if r.is_nan() {
                continue;
            }
            let p = self.probe(r);
            if reaches(&p) {
                hi = hi.filter(|h| h.0 < r).or(Some(p));
            } else {
                lo = lo.filter(|l| l.0 > r).or(Some(p));
            }
        }
        let lo = match lo {
            Some(lo) => lo,
            None => {
                let p = self.probe(h_lo);
                if !reaches(&p) {
                    p
                } else {
                    let p = self.probe(lowest);
                    if reaches(&p) {
                        return lowest;
                    }
                    p
                }
            }
        };
        let hi = match hi {
            Some(hi) => hi,
            None => {
                let p = self.probe(h_hi);
                if reaches(&p) {
                    p
                } else {
                    self.probe(highest)
                }
            }
        };
        let f = (lo.2 / self.positive - q, hi.2 / self.positive - q);
        let mut br = self.bracket(lo, hi);
        self.narrow(q, &mut br, f);
        // Rounding left the weight at the upper end short of q: the end itself, as the full
        // walk's bisection ended there.
        self.quantile_among(q, &br).unwrap_or(br.hi)
    }

    /// Whether P(ratio ≤ r) ≥ `q`, from its weight summed in another order than the walk
    /// through every row sums it; `None` when it lies so near q that the order could decide.
    fn decide(&self, weight: f64, q: f64) -> Option<bool> {
        let f = weight / self.positive - q;
        (f.abs() >= NEAR).then_some(f >= 0.0)
    }

    /// Narrows `br` until it holds [`FEW_RATIOS`] or fewer, or its ratios tie to the last bit;
    /// `f` is P(ratio ≤ r) − q at its ends.
    fn narrow(&self, q: f64, br: &mut Bracket, f: (f64, f64)) {
        let b = &self.b.values;
        let (mut f_lo, mut f_hi) = f;
        let mut at_mid = Vec::new();
        let mut side = 0;
        let mut halve = false;
        let mut widths = [br.hi - br.lo; 3];
        while br.inside() > FEW_RATIOS {
            let width = br.hi - br.lo;
            let mut mid = br.lo - f_lo * width / (f_hi - f_lo);
            if halve || !(mid > br.lo && mid < br.hi) {
                mid = 0.5 * br.lo + 0.5 * br.hi;
            }
            if mid <= br.lo || mid >= br.hi {
                // The ratios left tie to the last bit: list them all.
                break;
            }
            // The cut at mid, row by row between the bracket's ends: where mid · a rises with
            // a, each row's cut is at or beyond the one before, so one walk up b serves all.
            at_mid.clear();
            let mut weight = br.weight_lo;
            let mut j = 0;
            for (k, &i) in br.rows.iter().enumerate() {
                let (from, to) = (br.at_lo[k], br.at_hi[k]);
                let limit = mid * self.a[i];
                if mid >= 0.0 {
                    j = j.clamp(from, to);
                    while j < to && b[j] <= limit {
                        j += 1;
                    }
                } else {
                    j = from + b[from..to].partition_point(|w| *w <= limit);
                }
                weight += self.a_mass[i] * (self.b_below(j) - self.b_below(from));
                at_mid.push(j);
            }
            // Where the order of adding could decide, the walk through every row does, as it
            // always did.
            let reached = self.decide(weight, q).unwrap_or_else(|| self.cdf(mid) >= q);
            let f = weight / self.positive - q;
            if reached {
                let f = f.max(0.0);
                br.hi = mid;
                std::mem::swap(&mut br.at_hi, &mut at_mid);
                f_hi = f;
                if side == 1 {
                    f_lo *= 0.5;
                }
                side = 1;
            } else {
                let f = f.min(-f64::MIN_POSITIVE);
                br.lo = mid;
                br.weight_lo = weight;
                std::mem::swap(&mut br.at_lo, &mut at_mid);
                f_lo = f;
                if side == -1 {
                    f_hi *= 0.5;
                }
                side = -1;
            }
            // Rows whose ratios all left the bracket leave it.
            let mut kept = 0;
            for k in 0..br.rows.len() {
                if br.at_lo[k] < br.at_hi[k] {
                    br.rows[kept] = br.rows[k];
                    br.at_lo[kept] = br.at_lo[k];
                    br.at_hi[kept] = br.at_hi[k];
                    kept += 1;
                }
            }
            br.rows.truncate(kept);
            br.at_lo.truncate(kept);
            br.at_hi.truncate(kept);
            // False position may creep from one side: halve when three steps did not.
            halve = br.hi - br.lo > 0.5 * widths[0];
            widths = [widths[1], widths[2], width];
        }
    }

    /// The quantile among the ratios in the bracket, every one listed: the first whose
    /// probability, added to the weight at its lower end with those before it, reaches `q`;
    /// `None` when rounding leaves the weight at the bracket's upper end short of q.
    fn quantile_among(&self, q: f64, br: &Bracket) -> Option<f64> {
        let mut grid: Vec<(f64, f64)> = Vec::with_capacity(br.inside());
        for (k, &i) in br.rows.iter().enumerate() {
            let (v, p) = (self.a[i], self.a_mass[i]);
            for j in br.at_lo[k]..br.at_hi[k] {
                let mass = self.b.cumulative[j] - self.b_below(j);
                grid.push((self.b.values[j] / v, p * mass));
            }
        }
        grid.sort_unstable_by(|x, y| cmp_f64(&x.0, &y.0));
        let mut upto = 0;
        let mut reached = br.weight_lo;
        for &(r, _) in &grid {
            // Rounding must not leave the weight of a ratio a few bits above `r` (the same
            // ratio from another pair) out of its value.
            let reach = r + 4.0 * f64::EPSILON * r.abs();
            while upto < grid.len() && grid[upto].0 <= reach {
                reached += grid[upto].1;
                upto += 1;
            }
            // Near q the walk through every row decides, as it always did.
            if self
                .decide(reached, q)
                .unwrap_or_else(|| self.cdf(reach) >= q)
            {
                return Some(r);
            }
        }
        None
    }
}

#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

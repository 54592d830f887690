//! Rank test for "did this change the distribution", used by `compare`.

use std::f64::consts::SQRT_2;

use crate::order::cmp_f64;

/// Mann-Whitney U two-sided test (normal approximation with tie correction
/// and continuity correction, as scipy's asymptotic method), for `compare`.
///
/// A rank test suits timings because it assumes no distribution and a few
/// huge outliers cannot dominate it. Returns `None` if either side is empty or
/// holds a non-finite value. When every value is tied the samples cannot be
/// told apart and the result is 1.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.is_empty() || b.is_empty() || a.iter().chain(b).any(|x| !x.is_finite()) {
        return None;
    }
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    pooled.sort_unstable_by(|x, y| cmp_f64(&x.0, &y.0));

    let n = pooled.len();
    let mut rank_sum_a = 0.0;
    // Σ (t³ − t) over tie groups: ties shrink the variance of U.
    let mut tie_term = 0.0;
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && pooled[end].0 == pooled[start].0 {
            end += 1;
        }
        // Ranks start+1 ..= end share their average.
        let rank = (start + 1 + end) as f64 / 2.0;
        let in_a = pooled[start..end].iter().filter(|p| p.1).count();
        rank_sum_a += rank * in_a as f64;
        let t = (end - start) as f64;
        tie_term += t * t * t - t;
        start = end;
    }

    let (n1, n2, n) = (a.len() as f64, b.len() as f64, n as f64);
    let u = rank_sum_a - n1 * (n1 + 1.0) / 2.0;
    let mean_u = n1 * n2 / 2.0;
    let var_u = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if var_u <= 0.0 {
        return Some(1.0);
    }
    let z = ((u - mean_u).abs() - 0.5).max(0.0) / var_u.sqrt();
    Some(erfc(z / SQRT_2).min(1.0))
}

/// Complementary error function (Numerical Recipes' Chebyshev fit, relative
/// error below 1.2e-7 everywhere), since std has none. Relative accuracy
/// matters here: tiny p-values must stay meaningful, not round to 0.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::erfc;

    #[test]
    fn erfc_matches_reference_values() {
        // Reference values from a high-precision erfc (Python's math.erfc).
        let cases = [
            (0.0, 1.0),
            (0.5, 0.479_500_122_186_953_5),
            (1.0, 0.157_299_207_050_285_13),
            (2.0, 0.004_677_734_981_047_266),
            (5.0, 1.537_459_794_428_034_8e-12),
            (-1.0, 1.842_700_792_949_715),
        ];
        for (x, want) in cases {
            let got = erfc(x);
            assert!(
                ((got - want) / want).abs() < 2e-7,
                "erfc({x}) = {got}, want {want}"
            );
        }
    }
}

/// Benjamini–Hochberg adjusted p-values (q-values) of a family of tests, in the order given:
/// calling every test with `q < α` a discovery keeps the expected share of false discoveries
/// among them at or below α (for independent or positively dependent tests). `NaN` stays
/// `NaN` and is not counted in the family.
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..p.len()).filter(|&i| !p[i].is_nan()).collect();
    order.sort_unstable_by(|&a, &b| cmp_f64(&p[a], &p[b]));
    let m = order.len() as f64;
    let mut q = vec![f64::NAN; p.len()];
    // From the largest p down: each q is the smallest m·p/rank at or above its rank.
    let mut running = 1.0_f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        running = running.min(p[i] * m / (rank + 1) as f64);
        q[i] = running.clamp(0.0, 1.0);
    }
    q
}

#[cfg(test)]
mod bh_tests {
    use super::benjamini_hochberg;

    #[test]
    fn adjusted_as_the_procedure_defines_them() {
        // Known data (Benjamini & Hochberg's procedure by hand): m = 5.
        let p = [0.01, 0.04, 0.03, 0.005, 0.5];
        let q = benjamini_hochberg(&p);
        let want = [0.025, 0.05, 0.05, 0.025, 0.5];
        for (a, b) in q.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{q:?}");
        }
    }

    #[test]
    fn many_chance_results_at_five_percent_are_not_discoveries() {
        // 20 tests at p = 0.04 and 180 at p = 0.5: alone each would pass 0.05, together
        // none does.
        let p: Vec<f64> = std::iter::repeat_n(0.04, 20)
            .chain(std::iter::repeat_n(0.5, 180))
            .collect();
        assert!(benjamini_hochberg(&p).iter().all(|q| *q >= 0.05));
        // One overwhelming result stays one.
        let mut p = p;
        p[0] = 1e-9;
        assert!(benjamini_hochberg(&p)[0] < 0.05);
        assert!(benjamini_hochberg(&[f64::NAN, 0.01])[0].is_nan());
        assert!(benjamini_hochberg(&[]).is_empty());
    }
}

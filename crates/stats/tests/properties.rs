//! Randomised invariants over many generated data sets. The generator is
//! seeded, so a failure reproduces exactly; no proptest needed.

use oorandom::Rand64;
use oscost_stats::{bootstrap_median_ci, combine_medians, mad, median, percentile, summarize_with};

/// Shapes that timing data actually takes: flat, long right tail, heavy ties
/// from coarse clocks, and a few far outliers.
fn generate(rng: &mut Rand64) -> Vec<f64> {
    let n = 1 + rng.rand_range(0..120) as usize;
    let shape = rng.rand_range(0..4);
    (0..n)
        .map(|_| {
            let u = rng.rand_float();
            match shape {
                0 => 100.0 + 50.0 * u,
                1 => 200.0 - 40.0 * (1.0 - u).ln(),
                2 => (u * 6.0).floor() * 25.0,
                _ if u > 0.95 => 1e5 * u,
                _ => 500.0 + u,
            }
        })
        .collect()
}

#[test]
fn summary_invariants_hold_on_random_data() {
    let mut rng = Rand64::new(0x5eed);
    for case in 0..300 {
        let data = generate(&mut rng);
        let seed = rng.rand_u64();
        let s = summarize_with(&data, 200, seed).unwrap();
        let ctx = format!("case {case}: {s:?}");

        assert_eq!(s.n, data.len(), "{ctx}");
        assert_eq!(s.median, median(&data), "{ctx}");
        assert_eq!(s.mad, mad(&data), "{ctx}");
        assert!(s.min <= s.p5 && s.p5 <= s.median, "{ctx}");
        assert!(s.median <= s.p95 && s.p95 <= s.max, "{ctx}");
        assert!(s.min <= s.mean && s.mean <= s.max, "{ctx}");
        assert!(s.mad >= 0.0 && s.mad <= s.max - s.min, "{ctx}");
        // Popoviciu: no spread around the mean is wider than half the range, times
        // sqrt(n / (n - 1)) for the sample's divisor (half the values at each end).
        let n = s.n as f64;
        let widest = if s.n > 1 {
            (s.max - s.min) / 2.0 * (n / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        assert!(
            s.stddev >= 0.0 && s.stddev <= widest + 1e-9 * s.max.abs().max(1.0),
            "{ctx}"
        );
        assert!(s.ci95[0] <= s.median && s.median <= s.ci95[1], "{ctx}");
        assert!(s.min <= s.ci95[0] && s.ci95[1] <= s.max, "{ctx}");
        assert!(s.outliers.total() <= s.n, "{ctx}");

        let mut sorted = data.clone();
        sorted.sort_by(f64::total_cmp);
        let p50 = percentile(&sorted, 50.0);
        assert!(
            (p50 - s.median).abs() <= 1e-9 * s.median.abs().max(1.0),
            "{ctx}"
        );

        // The summary depends on the values, not on the order they came in.
        let reversed: Vec<f64> = data.iter().rev().copied().collect();
        assert_eq!(
            summarize_with(&reversed, 200, seed).as_ref(),
            Some(&s),
            "{ctx}"
        );
    }
}

#[test]
fn bootstrap_and_combination_invariants_hold_on_random_data() {
    let mut rng = Rand64::new(0xb007);
    for case in 0..150 {
        let a = generate(&mut rng);
        let b = generate(&mut rng);
        let seed = rng.rand_u64();

        let ci = bootstrap_median_ci(&a, 150, 0.95, seed);
        assert_eq!(ci, bootstrap_median_ci(&a, 150, 0.95, seed), "case {case}");
        let m = median(&a);
        assert!(ci[0] <= m && m <= ci[1], "case {case}: {ci:?} vs {m}");

        let coef = (rng.rand_float() - 0.5) * 4.0;
        let c = combine_medians(&[(&a, 1.0), (&b, coef)], 150, seed).unwrap();
        assert_eq!(c.estimate, median(&a) + coef * median(&b), "case {case}");
        assert!(
            c.ci95[0] <= c.estimate && c.estimate <= c.ci95[1],
            "case {case}: {c:?}"
        );
    }
}

use super::*;
use oscost_stats::{ratio_of_medians, MedianLaw};

/// Skewed samples with a tail, as timings are, from a fixed generator; some tied.
fn draws(seed: u64, n: usize, scale: f64) -> Vec<f64> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            (scale * (100.0 - 20.0 * (1.0 - u).ln())).round()
        })
        .collect()
}

/// oscost's interval, as `compare` reads it from its own laws.
fn oscost(a: &[f64], b: &[f64]) -> Option<(f64, f64, f64)> {
    let (la, lb) = (MedianLaw::new(a)?, MedianLaw::new(b)?);
    let c = ratio_of_medians(&la, &lb, CONFIDENCE)?;
    Some((c.estimate, c.ci95[0], c.ci95[1]))
}

fn mine(a: &[f64], b: &[f64]) -> Option<(f64, f64, f64)> {
    ratio_interval(&Law::of(a)?, &Law::of(b)?)
}

/// Equal but for the last bits a value computed in another order may differ by.
fn close(x: (f64, f64, f64), y: (f64, f64, f64)) -> bool {
    let near = |u: f64, v: f64| (u - v).abs() <= 1e-12 * u.abs().max(v.abs());
    near(x.0, y.0) && near(x.1, y.1) && near(x.2, y.2)
}

#[test]
fn the_interval_is_oscosts_on_odd_even_small_large_and_tied_samples() {
    let mut seed = 1;
    for (na, nb) in [
        (1, 1),
        (3, 5),
        (5, 5),
        (4, 6),
        (9, 20),
        (20, 20),
        (81, 81),
        (80, 85),
        (81, 1996),
        (1995, 1828),
    ] {
        for scale in [1.0, 1.03, 1.5, 0.2] {
            seed += 1;
            let a = draws(seed, na, 1.0);
            let b = draws(seed * 7919, nb, scale);
            let (x, y) = (mine(&a, &b), oscost(&a, &b));
            let same = match (x, y) {
                (Some(x), Some(y)) => close(x, y),
                (None, None) => true,
                _ => false,
            };
            assert!(same, "{na} vs {nb} × {scale}: {x:?} against oscost's {y:?}");
        }
    }
}

#[test]
fn a_law_of_one_value_and_medians_at_or_below_zero() {
    let one = Law::of(&[5.0]).unwrap();
    assert_eq!(
        (one.values.as_slice(), one.cum.as_slice()),
        (&[5.0][..], &[1.0][..])
    );
    assert!(Law::of(&[]).is_none());
    assert!(Law::of(&[1.0, f64::NAN]).is_none());
    let b = Law::of(&[2.0, 4.0, 6.0]).unwrap();
    assert!(ratio_interval(&Law::of(&[-1.0, 0.0, 1.0]).unwrap(), &b).is_none());
    assert_eq!(
        mine(&[-3.0, 1.0, 2.0, 3.0, 4.0], &[2.0, 4.0, 6.0]),
        oscost(&[-3.0, 1.0, 2.0, 3.0, 4.0], &[2.0, 4.0, 6.0])
    );
}

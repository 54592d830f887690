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

/// Skewed samples with a tail, as timings are, from a fixed generator.
fn skewed(n: usize, scale: f64, state: u64) -> Vec<f64> {
    let mut x = state;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            scale * (100.0 - 20.0 * (1.0 - u).ln())
        })
        .collect()
}

/// The same, rounded to whole nanoseconds out of a narrow range: many ties.
fn tied(n: usize, state: u64) -> Vec<f64> {
    skewed(n, 1.0, state)
        .into_iter()
        .map(|x| (x / 10.0).round())
        .collect()
}

/// Pairs of sample sets the faster search is held to the old one on: ties, tiny and very
/// unequal counts, one sample, the same set twice, one set scaled, odd and even counts.
fn datasets() -> Vec<(&'static str, Vec<f64>, Vec<f64>)> {
    vec![
        ("one against one", vec![5.0], vec![7.0]),
        (
            "one against five",
            vec![5.0],
            vec![4.0, 6.0, 7.0, 9.0, 30.0],
        ),
        ("two against three", vec![3.0, 1.0], vec![2.0, 7.0, 3.0]),
        ("all tied", vec![4.0; 6], vec![4.0; 9]),
        (
            "ties",
            vec![1.0, 1.0, 1.0, 2.0, 2.0, 3.0],
            vec![1.0, 2.0, 2.0, 2.0, 3.0, 3.0, 4.0],
        ),
        ("tied timings", tied(120, 3), tied(131, 4)),
        (
            "three against four hundred",
            skewed(3, 1.0, 5),
            skewed(400, 1.1, 6),
        ),
        ("one against a thousand", vec![120.0], skewed(1000, 1.0, 7)),
        (
            "a thousand against two",
            skewed(1000, 1.0, 8),
            skewed(2, 1.3, 9),
        ),
        ("odd against even", skewed(81, 1.0, 10), skewed(60, 1.2, 11)),
        (
            "even against even",
            skewed(124, 1.0, 12),
            skewed(124, 1.0, 13),
        ),
        ("the same set", skewed(125, 1.0, 14), skewed(125, 1.0, 14)),
        (
            "scaled",
            skewed(200, 1.0, 15),
            skewed(200, 1.0, 15)
                .iter()
                .map(|x| 1.5 * x)
                .collect::<Vec<_>>(),
        ),
        ("large", skewed(2000, 1.0, 16), skewed(1999, 0.9, 17)),
    ]
}

/// Whether `r` is the q-quantile of the ratio, by brute force: every pair of the two laws'
/// values listed and sorted, `r` one of them, the weight of those below it short of `q` and
/// with it (and any a few bits above it, as rounding cannot tell them apart) reaching `q`, both
/// up to the rounding of the sums (a law of two samples has steps of exactly a quarter).
fn is_quantile(a: &MedianLaw, b: &MedianLaw, q: f64, r: f64) -> Result<(), String> {
    let start = a.values.partition_point(|v| *v <= 0.0);
    let positive: f64 = (start..a.values.len()).map(|i| a.mass(i)).sum();
    let mut grid = Vec::new();
    for i in start..a.values.len() {
        for j in 0..b.values.len() {
            grid.push((b.values[j] / a.values[i], a.mass(i) * b.mass(j) / positive));
        }
    }
    grid.sort_by(|x, y| cmp_f64(&x.0, &y.0));
    if !grid.iter().any(|g| g.0 == r) {
        return Err(format!("{r} is no ratio of the laws' values"));
    }
    let below: f64 = grid.iter().filter(|g| g.0 < r).map(|g| g.1).sum();
    let reach = r + 4.0 * f64::EPSILON * r.abs();
    let with: f64 = grid.iter().filter(|g| g.0 <= reach).map(|g| g.1).sum();
    let rounding = 1e-12;
    if below >= q + rounding || with < q - rounding {
        return Err(format!(
            "{r}: weight {below} below it and {with} with it, against {q}"
        ));
    }
    Ok(())
}

/// Confidences a reader could ask for. Not 1: the interval's ends are then the last values
/// whose weight rounding has not yet summed to one, a matter of the last bit.
const CONFIDENCES: [f64; 5] = [0.95, 0.5, 0.99, 0.999, 0.0];

#[test]
fn the_interval_is_the_one_the_full_walk_finds() {
    for (name, a, b) in datasets() {
        let (la, lb) = (MedianLaw::new(&a).unwrap(), MedianLaw::new(&b).unwrap());
        for confidence in CONFIDENCES {
            for (x, y) in [(&la, &lb), (&lb, &la)] {
                let new = ratio_of_medians(x, y, confidence).unwrap();
                let old = reference::ratio_of_medians(x, y, confidence).unwrap();
                assert_eq!(new.estimate, old.estimate, "{name}");
                for k in 0..2 {
                    // The old search stopped at 1e-10 of the ratio when it did not land on
                    // one of the ratios the law can take; the new one always lands on one.
                    let gap = (new.ci95[k] - old.ci95[k]).abs() / old.ci95[k].abs();
                    assert!(
                        gap <= 1e-9,
                        "{name} at {confidence}: {:?} against {:?}",
                        new.ci95,
                        old.ci95
                    );
                }
            }
        }
    }
}

#[test]
fn the_interval_ends_are_the_laws_quantiles_listed_in_full() {
    for (name, a, b) in datasets() {
        let (la, lb) = (MedianLaw::new(&a).unwrap(), MedianLaw::new(&b).unwrap());
        // Every pair listed: only where the grid is small enough to list.
        let start = la.values.partition_point(|v| *v <= 0.0);
        if (la.values.len() - start) * lb.values.len() > 2_000_000 {
            continue;
        }
        for confidence in CONFIDENCES {
            let r = ratio_of_medians(&la, &lb, confidence).unwrap();
            let tail = (1.0 - confidence) / 2.0;
            // An end held at the estimate is not a quantile of the law.
            for (end, q) in [(r.ci95[0], tail), (r.ci95[1], 1.0 - tail)] {
                if end != r.estimate {
                    if let Err(e) = is_quantile(&la, &lb, q, end) {
                        panic!("{name} at {confidence}: {e}");
                    }
                }
            }
        }
    }
}

#[test]
fn a_law_with_values_at_or_below_zero_keeps_its_positive_ratios() {
    // b's law reaches below zero; a's is partly at zero: its replicates there have no ratio.
    let a = [0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 4.0];
    let b = [-2.0, -1.0, 1.0, 2.0, 3.0, 5.0];
    let (la, lb) = (MedianLaw::new(&a).unwrap(), MedianLaw::new(&b).unwrap());
    let r = ratio_of_medians(&la, &lb, 0.95).unwrap();
    for (end, q) in [(r.ci95[0], 0.025), (r.ci95[1], 0.975)] {
        if end != r.estimate {
            is_quantile(&la, &lb, q, end).unwrap();
        }
    }
}

#[test]
fn tied_samples_give_each_value_once_with_the_mass_of_all_its_ties() {
    // Whole nanoseconds, as timings are: many ties, and midpoints tie far more.
    let samples: Vec<f64> = (0..400).map(|i| 100.0 + ((i * 37) % 23) as f64).collect();
    let law = MedianLaw::new(&samples).unwrap();
    assert!(law.values().windows(2).all(|w| w[0] < w[1]));
    // Only the half-integers between 100 and 122 are possible medians.
    assert!(law.values().len() <= 45, "{}", law.values().len());
    assert!((law.cdf(f64::MAX) - 1.0).abs() < 1e-12);
    let small = [1.0, 1.0, 2.0, 3.0, 3.0, 9.0];
    let law = MedianLaw::new(&small).unwrap();
    for (v, _) in enumerate(&small) {
        let below: f64 = enumerate(&small)
            .iter()
            .filter(|(w, _)| *w <= v)
            .map(|(_, q)| q)
            .sum();
        assert!((law.cdf(v) - below).abs() < 1e-12);
    }
    assert_eq!(law.values().len(), enumerate(&small).len());
}

//! Why a median's confidence interval came out wide, read from the samples themselves: too
//! few of them, two clusters, a drift from the first half of the run to the second, or a wide
//! spread. The words go beside the figure, so a reader sees what was seen, not just "noisy".

use crate::order::{median, percentile, sorted_copy};

/// Below this many samples the bootstrap interval of a median spans most of them whatever
/// the machine did.
pub const FEW_SAMPLES: usize = 8;

/// What the samples of a figure whose interval is wide show, in a few words (`None` for no
/// samples or non-finite ones). The checks run in order and the first that holds is named:
/// few samples; two clusters (a gap between sorted neighbours over 10 % of the median with a
/// fifth of the samples on each side); a drift (the medians of the first and second halves, in
/// the order taken, over 5 % apart); otherwise the spread from the 5th to the 95th percentile.
pub fn wide_ci_cause(samples: &[f64]) -> Option<String> {
    if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let n = samples.len();
    let sorted = sorted_copy(samples);
    let med = median(&sorted);
    let scale = med.abs().max(f64::MIN_POSITIVE);
    if n < FEW_SAMPLES {
        return Some(format!(
            "only {n} samples: a median's interval from so few spans most of them"
        ));
    }
    let fifth = n.div_ceil(5);
    let split = (fifth..=n - fifth)
        .filter(|&i| i > 0 && i < n)
        .map(|i| (i, sorted[i] - sorted[i - 1]))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((i, _)) = split.filter(|&(_, gap)| gap > 0.10 * scale) {
        let low = median(&sorted[..i]);
        let high = median(&sorted[i..]);
        return Some(format!(
            "two clusters: {i} samples near {}, {} near {}",
            short(low),
            n - i,
            short(high)
        ));
    }
    let (first, second) = crate::summary::half_medians(samples);
    if (second - first).abs() > 0.05 * scale {
        return Some(format!(
            "the figure drifted during the run: {} in its first half, {} in its second",
            short(first),
            short(second)
        ));
    }
    Some(format!(
        "the samples spread widely: 5th percentile {}, 95th {} (median {})",
        short(percentile(&sorted, 5.0)),
        short(percentile(&sorted, 95.0)),
        short(med)
    ))
}

/// A value in ns with its unit, four significant figures at most.
fn short(ns: f64) -> String {
    let (v, unit) = match ns.abs() {
        a if a >= 1e9 => (ns / 1e9, "s"),
        a if a >= 1e6 => (ns / 1e6, "ms"),
        a if a >= 1e3 => (ns / 1e3, "µs"),
        _ => (ns, "ns"),
    };
    let digits = match v.abs() {
        a if a >= 100.0 => 1,
        a if a >= 10.0 => 2,
        _ => 3,
    };
    format!("{v:.digits$} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_samples_are_named_first() {
        let s = wide_ci_cause(&[10.0, 20.0, 30.0, 40.0, 50.0]).unwrap();
        assert!(s.starts_with("only 5 samples"), "{s}");
    }

    #[test]
    fn two_clusters_are_told_apart_with_their_sizes() {
        let mut v: Vec<f64> = (0..12).map(|i| 100.0 + i as f64 * 0.1).collect();
        v.extend((0..8).map(|i| 200.0 + i as f64 * 0.1));
        let s = wide_ci_cause(&v).unwrap();
        assert!(s.starts_with("two clusters: 12 samples near 100"), "{s}");
        assert!(s.contains("8 near 200"), "{s}");
    }

    #[test]
    fn a_drift_reads_as_first_and_second_half() {
        // A steady climb: no gap anywhere over 10 %, but the halves differ by far more than 5 %.
        let v: Vec<f64> = (0..40).map(|i| 100.0 + i as f64 * 2.0).collect();
        let s = wide_ci_cause(&v).unwrap();
        assert!(s.starts_with("the figure drifted"), "{s}");
        assert!(s.contains("119.0 ns in its first half"), "{s}");
    }

    #[test]
    fn otherwise_the_spread_is_given() {
        // Shuffled (no drift), no big gap: the spread is all that is left to name.
        let v: Vec<f64> = (0..40).map(|i| 100.0 + ((i * 17) % 40) as f64).collect();
        let s = wide_ci_cause(&v).unwrap();
        assert!(s.starts_with("the samples spread widely"), "{s}");
        assert!(wide_ci_cause(&[]).is_none());
        assert!(wide_ci_cause(&[1.0, f64::NAN]).is_none());
    }
}

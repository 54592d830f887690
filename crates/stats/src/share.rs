//! The share of a span that some stretches of it cover (time a CPU lost to interruptions),
//! with an interval from batch means: the span cut into equal windows, each window's share
//! one observation, the windows' mean and its Student interval. Interruptions come in bursts
//! (a program that runs for a while, then sleeps), so the windows, not the single gaps, are the
//! units that vary independently.

/// Student's t at 97.5 % for 1–29 degrees of freedom: the interval of a mean of few windows.
const T975: [f64; 29] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045,
];

/// A share with its 95 % interval, both as fractions of the span.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Share {
    /// The covered time over the span.
    pub share: f64,
    /// The batch means' 95 % interval, clamped to 0–1.
    pub ci95: [f64; 2],
}

/// The share of `[0, span)` covered by the stretches `(start, length)` (each counted whole in
/// the window its start falls in), with the interval of `windows` equal windows' mean (2–30).
/// `None` for an empty span, too few or too many windows, or a non-finite input.
pub fn covered_share(stretches: &[(f64, f64)], span: f64, windows: usize) -> Option<Share> {
    if !(span.is_finite() && span > 0.0 && (2..=30).contains(&windows)) {
        return None;
    }
    if stretches
        .iter()
        .any(|&(s, l)| !s.is_finite() || !l.is_finite())
    {
        return None;
    }
    let width = span / windows as f64;
    let mut covered = vec![0.0; windows];
    for &(start, len) in stretches {
        let w = ((start / width).floor().max(0.0) as usize).min(windows - 1);
        covered[w] += len;
    }
    let shares: Vec<f64> = covered.iter().map(|c| c / width).collect();
    mean_share(&shares)
}

/// The mean of some shares (each a fraction, one per observation: a late wake-up's part of
/// its own lateness) with the Student interval of that mean, clamped to 0–1 (1.96 beyond 30
/// observations). `None` for fewer than two shares or a non-finite one.
pub fn mean_share(shares: &[f64]) -> Option<Share> {
    let n = shares.len();
    if n < 2 || shares.iter().any(|s| !s.is_finite()) {
        return None;
    }
    let k = n as f64;
    let mean = shares.iter().sum::<f64>() / k;
    let var = shares.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (k - 1.0);
    let t = T975.get(n - 2).copied().unwrap_or(1.96);
    let half = t * (var / k).sqrt();
    Some(Share {
        share: mean,
        ci95: [(mean - half).max(0.0), (mean + half).min(1.0)],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mean_share_has_the_interval_of_its_few_observations() {
        let s = mean_share(&[0.5, 0.5, 0.5]).unwrap();
        assert_eq!((s.share, s.ci95), (0.5, [0.5, 0.5]));
        // Mean 0.5, sd 0.1: half = 4.303 · 0.1 / √3.
        let s = mean_share(&[0.4, 0.5, 0.6]).unwrap();
        let half = 4.303 * 0.1 / 3f64.sqrt();
        assert!((s.share - 0.5).abs() < 1e-12);
        assert!((s.ci95[0] - (0.5 - half)).abs() < 1e-9 && (s.ci95[1] - (0.5 + half)).abs() < 1e-9);
        // Clamped to what a share can be.
        assert_eq!(mean_share(&[0.0, 1.0]).unwrap().ci95, [0.0, 1.0]);
        assert!(mean_share(&[0.3]).is_none());
        assert!(mean_share(&[0.3, f64::NAN]).is_none());
    }

    #[test]
    fn an_even_loss_has_its_share_and_no_width() {
        // 1 unit lost every 10 units over 100: 10 %, the same in every window.
        let gaps: Vec<(f64, f64)> = (0..10).map(|i| (i as f64 * 10.0 + 2.0, 1.0)).collect();
        let s = covered_share(&gaps, 100.0, 10).unwrap();
        assert!((s.share - 0.1).abs() < 1e-12);
        assert!((s.ci95[0] - 0.1).abs() < 1e-12 && (s.ci95[1] - 0.1).abs() < 1e-12);
    }

    #[test]
    fn a_burst_widens_the_interval_and_keeps_the_share() {
        // The same 10 units lost in one window of ten: 10 % overall, but it could as well have
        // been none or twice as much: the interval says so.
        let s = covered_share(&[(51.0, 10.0)], 100.0, 10).unwrap();
        assert!((s.share - 0.1).abs() < 1e-12);
        // sd of [0,…,1,…,0] = sqrt(0.1); half = 2.262 * sqrt(0.1/10) = 0.2262.
        assert_eq!(s.ci95[0], 0.0);
        assert!((s.ci95[1] - (0.1 + 2.262 * 0.1)).abs() < 1e-9, "{s:?}");
    }

    #[test]
    fn nothing_lost_is_zero_and_bad_input_is_none() {
        let s = covered_share(&[], 100.0, 20).unwrap();
        assert_eq!((s.share, s.ci95), (0.0, [0.0, 0.0]));
        assert!(covered_share(&[], 0.0, 20).is_none());
        assert!(covered_share(&[], 100.0, 1).is_none());
        assert!(covered_share(&[(f64::NAN, 1.0)], 100.0, 20).is_none());
        // A stretch starting past the end counts in the last window.
        let s = covered_share(&[(150.0, 5.0)], 100.0, 5).unwrap();
        assert!((s.share - 0.05).abs() < 1e-12);
    }
}

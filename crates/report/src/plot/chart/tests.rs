//! Tests of `chart`.

use super::*;

#[test]
fn numbers_are_short_and_fixed() {
    assert_eq!(sig(1.5), "1.5");
    assert_eq!(sig(250.0), "250");
    assert_eq!(sig(12.345), "12.3");
    assert_eq!(sig(0.02), "0.02");
    assert_eq!(sig(-0.0), "0");
    assert_eq!(time(1500.0), "1.5 µs");
    assert_eq!(time(4e6), "4 ms");
    assert_eq!(time(50.0), "50 ns");
    assert_eq!(time(999.96), "1 µs");
    assert_eq!(time(0.5), "0.5 ns");
    assert_eq!(change(12.0), "+12 %");
    assert_eq!(change(-3.5), "-3.5 %");
    assert_eq!(change(0.0), "0 %");
}

#[test]
fn a_wide_range_gets_a_log_axis_and_a_narrow_one_starts_at_zero() {
    let a = Axis::fit("t", Unit::Ns, &[100.0, 1e6], Fit::Auto { zero: true });
    assert_eq!(a.scale, Scale::Log);
    assert_eq!(a.label, "t (log scale)");
    assert!(a.ticks.iter().any(|(_, l)| l == "1 ms"));
    let a = Axis::fit("t", Unit::Ns, &[1500.0, 4000.0], Fit::Auto { zero: true });
    assert_eq!(a.scale, Scale::Linear);
    assert_eq!(a.label, "t (µs)");
    assert_eq!(a.ticks.first().unwrap().1, "0");
    assert_eq!(a.ticks.last().unwrap().1, "4");
    assert_eq!(a.frac(0.0), 0.0);
    assert_eq!(a.frac(4000.0), 1.0);
}

#[test]
fn sweep_axes_tick_at_their_values_and_ratios_read_as_changes() {
    let a = Axis::fit("N", Unit::Plain, &[2.0, 4.0, 16.0, 64.0], Fit::AtData);
    let labels: Vec<&str> = a.ticks.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(labels, ["2", "4", "16", "64"]);
    assert!(a.frac(2.0) > 0.0 && a.frac(64.0) < 1.0);
    let r = Axis::fit(
        "change",
        Unit::Ratio,
        &[0.9, 1.0, 1.15],
        Fit::Auto { zero: false },
    );
    assert_eq!(r.scale, Scale::Linear);
    assert!(r
        .ticks
        .iter()
        .any(|(v, l)| l == "0 %" && (*v - 1.0).abs() < 1e-12));
    assert!(r.ticks.iter().any(|(_, l)| l == "+10 %"), "{:?}", r.ticks);
    let r = Axis::fit(
        "change",
        Unit::Ratio,
        &[0.01, 1.0, 3.0],
        Fit::Auto { zero: false },
    );
    assert_eq!(r.scale, Scale::Log);
    assert!(r.ticks.iter().any(|(_, l)| l == "+100 %"), "{:?}", r.ticks);
}

#[test]
fn log_ticks_stay_few() {
    for (lo, hi) in [(1.0, 1e9), (3.0, 5.0), (1e3, 2e4), (0.5, 0.6)] {
        let (a, b, t) = log_ticks(lo, hi);
        assert!(a <= lo && b >= hi, "{lo} {hi}: {a} {b}");
        assert!((2..=10).contains(&t.len()), "{lo} {hi}: {t:?}");
    }
}

#[test]
fn legends_wrap_within_their_width() {
    let keys: Vec<Key> = (0..12)
        .map(|i| Key::Series(format!("series number {i}"), Style::nth(i)))
        .collect();
    assert!(legend_height(&keys, 300.0) > legend_height(&keys, 800.0));
    assert_eq!(legend_height(&[], 300.0), 0.0);
}

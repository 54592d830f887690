//! A bill predicted pinned to CPUs (`cpus=LIST`). Pinned to one CPU, every wake-up the program
//! makes of its own tasks is a same-CPU one: each that crossed CPUs in the plain bill costs a
//! same-CPU wake-up instead of a cross-CPU one, as the datasheet measured the two —
//! `switch.pipe.threads.same.one_way` against `switch.pipe.threads.cross.one_way` (futex's when
//! the run has no pipe pair), each half a ping-pong's round trip: one post, one wait, one
//! blocked thread woken and run. The difference lands in the wall time, as a wake-up's latency.
//! Pinned to several CPUs, which wake-ups cross is the scheduler's choice as the program runs:
//! no count of the plain bill tells it, and no figure is given.

use super::predict::{Paid, Prediction};

use crate::format::fmt_ns;
use oscost_model::bill::{Bill, Price};
use oscost_model::ids::switch;
use oscost_model::schema::ResultDoc;

/// The datasheet's wake-up of a blocked thread, on one CPU and across two, in the order tried.
const PAIRS: [(&str, &str); 2] = [
    (switch::PIPE_SAME_ONE_WAY, switch::PIPE_CROSS_ONE_WAY),
    (switch::FUTEX_SAME_ONE_WAY, switch::FUTEX_CROSS_ONE_WAY),
];

/// The `oscost` run that measures the pair.
pub const WAKE_PRICED_BY: &str =
    "`oscost switch --via pipe --kind threads --placement same,cross` measures a wake-up on one \
     CPU and across two";

/// What a wake-up costs more on one CPU than across two (negative: less), from one run `doc`
/// (`run`): its same-CPU figure less its cross-CPU one, both from that run and unflagged, the
/// interval the two intervals combined as independent. `None`: the run lacks either.
pub fn wake_price(doc: &ResultDoc, run: &str) -> Option<Price> {
    let figure = |id: &str| {
        doc.experiments
            .iter()
            .flat_map(|e| e.derived.iter())
            .find(|d| {
                d.id == id
                    && d.flagged.is_none()
                    && d.estimate_ns.is_finite()
                    && d.estimate_ns > 0.0
            })
            .map(|d| (d.estimate_ns, d.ci95_ns))
    };
    PAIRS.iter().find_map(|(same_id, cross_id)| {
        let (same, [same_lo, same_hi]) = figure(same_id)?;
        let (cross, [cross_lo, cross_hi]) = figure(cross_id)?;
        let ns = same - cross;
        let below = ((same - same_lo).powi(2) + (cross_hi - cross).powi(2)).sqrt();
        let above = ((same_hi - same).powi(2) + (cross - cross_lo).powi(2)).sqrt();
        Some(Price {
            case: format!("{same_id} {} − {cross_id} {}", fmt_ns(same), fmt_ns(cross)),
            run: run.to_owned(),
            ns,
            ci95: [ns - below, ns + above],
            floor: false,
        })
    })
}

/// The bill pinned to one CPU: its wake-ups that crossed CPUs × `price` ([`wake_price`]), in
/// the wall time. `None`: the bill holds no count of them (made before oscost counted them,
/// without the probe, or on a kernel without `sched:sched_waking`).
pub fn predict_cpus(bill: &Bill, setting: &str, price: &Price) -> Option<Prediction> {
    let n = bill.sched.as_ref()?.cross_cpu_wakeups?;
    let k = n as f64;
    Some(Prediction {
        setting: setting.to_owned(),
        paid: Paid::PerWakeUp,
        per_call: price.clone(),
        calls: n,
        added_ns: k * price.ns,
        added_ci95: [k * price.ci95[0], k * price.ci95[1]],
        refused: Vec::new(),
        in_full: Vec::new(),
        task_time_ns: bill.wall_ns as f64,
    })
}

/// Why a bill without the count gives no prediction on one CPU.
pub const NO_CROSS_COUNT: &str =
    "holds no count of its wake-ups across CPUs (billed before oscost counted them, without \
     the probe, or on a kernel without sched:sched_waking): bill the program again";

/// Why no figure is given for several CPUs, in one line.
pub fn several_cpus(setting: &str) -> String {
    format!(
        "no prediction under {setting}: on several CPUs, which of its wake-ups cross CPUs is the \
         scheduler's choice as the program runs, which no count of a bill tells (pinned to one \
         CPU, cpus=N, every wake-up it makes is a same-CPU one: that is predicted)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bill::tests::fixture;
    use crate::bill::{check_under, render_check, render_prediction};
    use oscost_model::schema::DerivedResult;

    /// The golden result document, its first experiment's derived figures `figures` (id, ns,
    /// its interval, flagged).
    fn doc(figures: &[(&str, f64, [f64; 2], bool)]) -> ResultDoc {
        let mut d = oscost_model::read(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/golden/oscost-2.json"
        )))
        .unwrap();
        d.experiments[0].derived = figures
            .iter()
            .map(|(id, ns, ci, flagged)| DerivedResult {
                id: (*id).into(),
                description: String::new(),
                terms: Vec::new(),
                estimate_ns: *ns,
                ci95_ns: *ci,
                estimate_cycles: *ns,
                flagged: flagged.then(|| "a check failed".into()),
                warnings: Vec::new(),
            })
            .collect();
        d
    }

    #[test]
    fn the_price_is_one_runs_same_cpu_figure_less_its_cross_cpu_one() {
        let d = doc(&[
            (
                switch::PIPE_SAME_ONE_WAY,
                3_000.0,
                [2_970.0, 3_040.0],
                false,
            ),
            (
                switch::PIPE_CROSS_ONE_WAY,
                5_000.0,
                [4_997.0, 5_030.0],
                false,
            ),
            (switch::FUTEX_SAME_ONE_WAY, 1.0, [0.5, 1.5], false),
            (switch::FUTEX_CROSS_ONE_WAY, 9.0, [8.5, 9.5], false),
        ]);
        let p = wake_price(&d, "abcdef0123").unwrap();
        assert_eq!(p.ns, -2_000.0);
        // Below: the same-CPU figure's 30 and the cross-CPU one's 30 above, as independent.
        assert!(
            (p.ci95[0] - (-2_000.0 - 1_800f64.sqrt())).abs() < 1e-9,
            "{:?}",
            p.ci95
        );
        assert!(
            (p.ci95[1] - (-2_000.0 + 1_609f64.sqrt())).abs() < 1e-9,
            "{:?}",
            p.ci95
        );
        assert!(p.case.starts_with(switch::PIPE_SAME_ONE_WAY), "{}", p.case);
        assert!(p.case.contains(switch::PIPE_CROSS_ONE_WAY), "{}", p.case);
        // A flagged figure is no price: the futex pair stands in.
        let d = doc(&[
            (switch::PIPE_SAME_ONE_WAY, 3_000.0, [2_970.0, 3_040.0], true),
            (
                switch::PIPE_CROSS_ONE_WAY,
                5_000.0,
                [4_997.0, 5_030.0],
                false,
            ),
            (switch::FUTEX_SAME_ONE_WAY, 1_000.0, [990.0, 1_010.0], false),
            (switch::FUTEX_CROSS_ONE_WAY, 900.0, [890.0, 910.0], false),
        ]);
        let p = wake_price(&d, "r").unwrap();
        assert_eq!(p.ns, 100.0);
        assert!(p.case.starts_with(switch::FUTEX_SAME_ONE_WAY), "{}", p.case);
        // Half a pair is none.
        let d = doc(&[(
            switch::PIPE_CROSS_ONE_WAY,
            5_000.0,
            [4_990.0, 5_010.0],
            false,
        )]);
        assert_eq!(wake_price(&d, "r"), None);
    }

    fn price(ns: f64) -> Price {
        Price {
            case: "same − cross".into(),
            run: "run1".into(),
            ns,
            ci95: [ns - 10.0, ns + 10.0],
            floor: false,
        }
    }

    #[test]
    fn each_cross_cpu_wake_up_pays_the_difference_in_the_wall_time() {
        let mut b = fixture();
        assert_eq!(predict_cpus(&b, "cpus=0", &price(-2_000.0)), None);
        b.sched.as_mut().unwrap().cross_cpu_wakeups = Some(7);
        let p = predict_cpus(&b, "cpus=0", &price(-2_000.0)).unwrap();
        assert_eq!((p.paid, p.calls), (Paid::PerWakeUp, 7));
        assert_eq!(p.added_ns, -14_000.0);
        assert_eq!(p.added_ci95, [-14_070.0, -13_930.0]);
        assert_eq!(p.task_time_ns, b.wall_ns as f64);
        let text = render_prediction(&p, 80);
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        let text = text.replace('\n', " ");
        assert!(text.starts_with("predicted under cpus=0: "), "{text}");
        assert!(
            text.contains("−0.1 % of the wall time of 10.00 ms"),
            "{text}"
        );
        assert!(
            text.contains("7 wake-ups by the program that crossed CPUs"),
            "{text}"
        );
        assert!(text.contains("−2.000 µs a"), "{text}");
        assert!(text.contains("= −14.00 µs"), "{text}");
        // Checked in the wall time, as a container is.
        let walled = |extra: i64| {
            let mut b = fixture();
            crate::bill::assemble(&mut b, None, None);
            b.wall_ns = (b.wall_ns as i64 + extra) as u64;
            b
        };
        let plain: Vec<Bill> = (0..5).map(|i| walled(i * 10)).collect();
        let under: Vec<Bill> = (0..5).map(|i| walled(-14_000 + i * 10)).collect();
        let c = check_under(p, &plain, &under).unwrap();
        assert!(c.holds());
        assert!(render_check(&c, 80).contains("wall time (median)"));
        assert!(several_cpus("cpus=0-1").starts_with("no prediction under cpus=0-1"));
    }
}

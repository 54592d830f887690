//! `net`'s bandwidth cases read as lmbench's `bw_tcp`, `bw_unix` and `bw_pipe` report them: MB/s
//! beside the time per 64 KiB write.

use super::View;
use crate::format::fmt_ns;
use oscost_model::ExperimentResult;

/// One row per case that carries a bandwidth (`counters.mb_per_s`): its time per write and the
/// rate that time gives, with the rate's interval from the time's.
pub fn views(e: &ExperimentResult) -> Vec<View> {
    let rows: Vec<Vec<String>> = e
        .cases
        .iter()
        .filter_map(|c| {
            let mb = *c.counters.get("mb_per_s")?;
            // The rate is bytes over the time: the time's interval, upside down.
            let bytes = mb * c.median_ns / 1e3;
            let [lo, hi] = c.ci95_ns;
            let rate = |ns: f64| {
                if ns > 0.0 {
                    format!("{:.0}", bytes / ns * 1e3)
                } else {
                    "-".into()
                }
            };
            Some(vec![
                c.id.clone(),
                fmt_ns(c.median_ns),
                format!("{mb:.0}"),
                format!("{} .. {}", rate(hi), rate(lo)),
            ])
        })
        .collect();
    if rows.is_empty() {
        return Vec::new();
    }
    vec![View {
        detail: Vec::new(),
        title: "bandwidth: 64 KiB writes to a thread draining them".into(),
        head: ["case", "per 64 KiB", "MB/s", "95% CI"]
            .map(String::from)
            .to_vec(),
        rows,
        notes: vec!["MB/s is 65 536 bytes over the median time, in 10^6 bytes a second".into()],
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::testkit::{case, experiment};

    #[test]
    fn a_bandwidth_case_shows_its_rate_and_the_others_none() {
        let mut bw = case("net.pipe.bw.same", "64 KiB", 10_000.0);
        bw.counters.insert("mb_per_s".into(), 6553.6);
        bw.ci95_ns = [8_000.0, 12_500.0];
        let rtt = case("net.tcp.rtt.same", "round trip", 9_000.0);
        let e = experiment("net", vec![rtt, bw]);
        let v = views(&e);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].rows.len(), 1);
        assert_eq!(v[0].rows[0][0], "net.pipe.bw.same");
        assert_eq!(v[0].rows[0][2], "6554");
        // 65 536 B over 12.5 µs and over 8 µs.
        assert_eq!(v[0].rows[0][3], "5243 .. 8192");
        assert!(views(&experiment("net", vec![])).is_empty());
    }
}

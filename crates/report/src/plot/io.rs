//! `uring`, `poll` and `net`: I/O's OS bill. The uring figure draws each io_uring operation
//! against its batch per `io_uring_enter` (through a registered file and buffer as a line of
//! its own), the system call it replaces a dashed level beside it; the poll figure draws each
//! readiness call against the descriptors it watches; the net figure draws a round trip by
//! socket kind, on one CPU and across two.

use super::chart::{self, Axis, Fit, Header, Line, Panel, Reference, Style, Unit};
use super::{marks, Plot};
use oscost_model::ids::uring;
use oscost_model::{CaseResult, ExperimentResult};

/// Colours and dashes of the system-call levels, in order.
const LEVELS: [(&str, &str); 2] = [("#000000", "5 4"), ("#666666", "2 3")];

fn param<'a>(c: &'a CaseResult, key: &str) -> Option<&'a serde_json::Value> {
    c.params.get(key)
}

/// The uring figure: per-operation time against the batch, one line per op, the plain system
/// call of each read a level across.
pub fn uring_plots(e: &ExperimentResult) -> Vec<Plot> {
    // Each line: an op through a plain ring, or through a registered file (and buffer).
    let ring: Vec<(&CaseResult, String, f64)> = e
        .cases
        .iter()
        .filter_map(|c| {
            let registered = match param(c, "interface").and_then(|v| v.as_str())? {
                "io_uring" => false,
                "io_uring registered" => true,
                _ => return None,
            };
            let op = param(c, "op")?.as_str()?;
            let label = if registered {
                format!("{op}, registered")
            } else {
                op.to_owned()
            };
            Some((c, label, param(c, "batch")?.as_f64()?))
        })
        .collect();
    if ring.len() < 2 {
        return Vec::new();
    }
    let mut ops: Vec<&str> = Vec::new();
    for r in &ring {
        if !ops.contains(&r.1.as_str()) {
            ops.push(&r.1);
        }
    }
    let mut failed = false;
    let lines: Vec<Line> = ops
        .iter()
        .enumerate()
        .map(|(i, op)| {
            let mut of: Vec<&(&CaseResult, String, f64)> =
                ring.iter().filter(|r| r.1 == *op).collect();
            of.sort_by(|a, b| a.2.total_cmp(&b.2));
            Line {
                label: format!("io_uring {op}"),
                style: Style::nth(i),
                points: of
                    .iter()
                    .map(|(c, _, b)| {
                        failed |= !c.checks_passed;
                        marks::case_point(c, *b, 1.0)
                    })
                    .collect(),
            }
        })
        .collect();
    let refs: Vec<Reference> = e
        .cases
        .iter()
        .filter(|c| param(c, "interface").and_then(|v| v.as_str()) == Some("system call"))
        .zip(LEVELS.iter().cycle())
        .map(|(c, &(colour, dash))| Reference {
            label: uring::label(&c.id).to_owned(),
            y: c.median_ns,
            band: Some(c.ci95_ns),
            colour,
            dash,
        })
        .collect();
    let mut ys = marks::values(&lines);
    ys.extend(
        refs.iter()
            .flat_map(|r| [r.y, r.band.map_or(r.y, |b| b[0])]),
    );
    let mut batches: Vec<f64> = ring.iter().map(|r| r.2).collect();
    batches.sort_by(f64::total_cmp);
    batches.dedup();
    let mut keys = marks::keys(&lines, failed);
    keys.extend(
        refs.iter()
            .map(|r| chart::Key::Level(r.label.clone(), r.colour, r.dash)),
    );
    let mut x = Axis::fit(
        "operations per io_uring_enter",
        Unit::Plain,
        &batches,
        Fit::Auto { zero: false },
    );
    x.ticks = batches.iter().map(|&b| (b, format!("{b}"))).collect();
    let header = Header::new(
        &format!("{}: io_uring beside the system call it replaces", e.name),
        &[
            "Time per operation, B operations submitted and reaped per io_uring_enter; dashed: \
           the plain system call, one per operation. Whiskers and bands: 95 % confidence \
           intervals of the median."
                .to_owned(),
            "registered: the file registered with the ring (IORING_REGISTER_FILES) and, for \
             64 KiB, the buffer too (IORING_OP_READ_FIXED)."
                .to_owned(),
        ],
    );
    let panel = Panel {
        title: "time per operation (median)".into(),
        x,
        y: Axis::fit(
            "time per operation",
            Unit::Ns,
            &ys,
            Fit::Auto { zero: true },
        ),
        lines,
        refs,
        bars: Vec::new(),
    };
    vec![Plot {
        name: format!("{}.by-batch", e.name),
        svg: chart::grid(&header, &[panel], 1, 280.0, &keys),
    }]
}

/// The poll figure: time per call against the descriptors watched, one line per call.
pub fn poll_plots(e: &ExperimentResult) -> Vec<Plot> {
    let cases: Vec<(&CaseResult, &str, f64)> = e
        .cases
        .iter()
        .filter(|c| param(c, "call").and_then(|v| v.as_str()) != Some("epoll-ctl"))
        .filter_map(|c| Some((c, param(c, "call")?.as_str()?, param(c, "fds")?.as_f64()?)))
        .collect();
    let mut sizes: Vec<f64> = cases.iter().map(|c| c.2).collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    if sizes.len() < 2 {
        return Vec::new();
    }
    let mut calls: Vec<&str> = Vec::new();
    for c in &cases {
        if !calls.contains(&c.1) {
            calls.push(c.1);
        }
    }
    let mut failed = false;
    let lines: Vec<Line> = calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let mut of: Vec<&(&CaseResult, &str, f64)> =
                cases.iter().filter(|c| c.1 == *call).collect();
            of.sort_by(|a, b| a.2.total_cmp(&b.2));
            Line {
                label: (*call).to_owned(),
                style: Style::nth(i),
                points: of
                    .iter()
                    .map(|(c, _, n)| {
                        failed |= !c.checks_passed;
                        marks::case_point(c, *n, 1.0)
                    })
                    .collect(),
            }
        })
        .collect();
    let ys = marks::values(&lines);
    let keys = marks::keys(&lines, failed);
    let mut notes = vec![
        "Each call with a zero timeout, exactly one socket readable. Whiskers: \
                          95 % confidence intervals of the median."
            .to_owned(),
    ];
    let slopes: Vec<String> = e
        .derived
        .iter()
        .filter(|d| d.id.ends_with(".per_fd"))
        .map(|d| format!("{} {:.2} ns", d.id, d.estimate_ns))
        .collect();
    if !slopes.is_empty() {
        notes.push(format!(
            "Fitted cost per descriptor: {}.",
            slopes.join(", ")
        ));
    }
    let header = Header::new(
        &format!(
            "{}: readiness calls against the descriptors watched",
            e.name
        ),
        &notes,
    );
    let mut x = Axis::fit(
        "sockets watched",
        Unit::Plain,
        &sizes,
        Fit::Auto { zero: false },
    );
    x.ticks = sizes.iter().map(|&n| (n, format!("{n}"))).collect();
    let panel = Panel {
        title: "time per call (median)".into(),
        x,
        y: Axis::fit("time per call", Unit::Ns, &ys, Fit::Auto { zero: true }),
        lines,
        refs: Vec::new(),
        bars: Vec::new(),
    };
    vec![Plot {
        name: format!("{}.by-fds", e.name),
        svg: chart::grid(&header, &[panel], 1, 280.0, &keys),
    }]
}

/// The socket kinds of `net`'s round trips, in the figure's order.
const KINDS: [&str; 4] = ["tcp", "udp", "unix", "unix-dgram"];

/// The net figure: a 1-byte round trip's time by socket kind, one line per placement (both
/// threads on one CPU, or on two).
pub fn net_plots(e: &ExperimentResult) -> Vec<Plot> {
    let prefix = format!("{}.", e.name);
    let found: Vec<(&CaseResult, usize, &str)> = e
        .cases
        .iter()
        .filter_map(|c| {
            let rest = c.id.strip_prefix(&prefix)?;
            let (kind, placement) = rest.split_once(".rtt.")?;
            let x = KINDS.iter().position(|k| *k == kind)?;
            Some((c, x + 1, placement))
        })
        .collect();
    if found.len() < 2 {
        return Vec::new();
    }
    let mut failed = false;
    let lines: Vec<Line> = [("same", "same CPU"), ("cross", "across two CPUs")]
        .iter()
        .enumerate()
        .filter_map(|(i, &(placement, label))| {
            let mut of: Vec<&(&CaseResult, usize, &str)> =
                found.iter().filter(|f| f.2 == placement).collect();
            if of.is_empty() {
                return None;
            }
            of.sort_by_key(|f| f.1);
            Some(Line {
                label: label.to_owned(),
                style: Style::nth(i),
                points: of
                    .iter()
                    .map(|(c, x, _)| {
                        failed |= !c.checks_passed;
                        marks::case_point(c, *x as f64, 1.0)
                    })
                    .collect(),
            })
        })
        .collect();
    let ys = marks::values(&lines);
    let keys = marks::keys(&lines, failed);
    let mut shown: Vec<usize> = found.iter().map(|f| f.1).collect();
    shown.sort_unstable();
    shown.dedup();
    let mut x = Axis::fit(
        "socket kind",
        Unit::Plain,
        &[0.5, KINDS.len() as f64 + 0.5],
        Fit::Linear { zero: false },
    );
    x.ticks = shown
        .iter()
        .map(|&i| (i as f64, KINDS[i - 1].to_owned()))
        .collect();
    let header = Header::new(
        &format!("{}: a 1-byte round trip by socket kind", e.name),
        &[
            "A byte written and read back by a partner thread over loopback TCP \
             (TCP_NODELAY), UDP, an AF_UNIX stream or datagram socketpair; both threads on one \
             CPU, or on two. Whiskers: 95 % confidence intervals of the median."
                .to_owned(),
        ],
    );
    let panel = Panel {
        title: "time per round trip (median)".into(),
        x,
        y: Axis::fit(
            "time per round trip",
            Unit::Ns,
            &ys,
            Fit::Auto { zero: true },
        ),
        lines,
        refs: Vec::new(),
        bars: Vec::new(),
    };
    vec![Plot {
        name: format!("{}.by-kind", e.name),
        svg: chart::grid(&header, &[panel], 1, 280.0, &keys),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::testkit::case;

    fn experiment(name: &str, cases: Vec<CaseResult>) -> ExperimentResult {
        let e: ExperimentResult = serde_json::from_value(serde_json::json!({
            "name": name, "params": {}, "cases": [], "unavailable": [], "derived": [],
            "warnings": []
        }))
        .unwrap();
        ExperimentResult { cases, ..e }
    }

    #[test]
    fn round_trips_are_drawn_by_kind_and_placement() {
        let mut cases = Vec::new();
        for (i, kind) in KINDS.iter().enumerate() {
            for (pl, f) in [("same", 1.0), ("cross", 2.0)] {
                let mut c = case(&format!("net.{kind}.rtt.{pl}"), "round trip", 1e4 * f);
                c.ci95_ns = [c.median_ns * 0.9, c.median_ns * 1.1 + i as f64];
                cases.push(c);
            }
        }
        // Not round trips: left out of the figure.
        cases.push(case("net.tcp.bw.same", "64 KiB", 2e4));
        cases.push(case("net.tcp.connect", "connection", 3e4));
        let mut failed = case("net.udp.rtt.cross", "round trip", 5e4);
        failed.checks_passed = false;
        cases[3] = failed;
        let p = net_plots(&experiment("net", cases));
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].name, "net.by-kind");
        let svg = &p[0].svg;
        for kind in KINDS {
            assert!(svg.contains(&format!(">{kind}<")), "{kind} tick");
            for pl in ["same", "cross"] {
                assert!(svg.contains(&format!("net.{kind}.rtt.{pl}")), "{kind} {pl}");
            }
        }
        assert!(svg.contains("same CPU") && svg.contains("across two CPUs"));
        assert!(!svg.contains("net.tcp.bw.same") && !svg.contains("net.tcp.connect"));
        assert!(
            svg.contains("a check failed"),
            "a failed case drawn hollow and keyed"
        );
    }

    #[test]
    fn one_round_trip_draws_nothing_and_one_placement_one_line() {
        let one = vec![case("net.tcp.rtt.same", "round trip", 1e4)];
        assert!(net_plots(&experiment("net", one)).is_empty());
        let same = vec![
            case("net.tcp.rtt.same", "round trip", 1e4),
            case("net.unix.rtt.same", "round trip", 8e3),
        ];
        let p = net_plots(&experiment("net", same));
        assert_eq!(p.len(), 1);
        assert!(p[0].svg.contains("same CPU") && !p[0].svg.contains("across two CPUs"));
    }

    #[test]
    fn registered_reads_get_a_line_of_their_own() {
        let mut cases = Vec::new();
        for (iface, op) in [("io_uring", "read64k"), ("io_uring registered", "read64k")] {
            for b in [1u64, 32] {
                let id = if iface == "io_uring" {
                    format!("uring.{op}.b{b}")
                } else {
                    format!("uring.{op}.fixed.b{b}")
                };
                let mut c = case(&id, "operation", 2000.0 / b as f64 + 100.0);
                c.params.insert("interface".into(), iface.into());
                c.params.insert("op".into(), op.into());
                c.params.insert("batch".into(), b.into());
                cases.push(c);
            }
        }
        let p = uring_plots(&experiment("uring", cases));
        assert_eq!(p.len(), 1);
        assert!(p[0].svg.contains("io_uring read64k, registered"));
        assert!(p[0].svg.contains("uring.read64k.fixed.b32"));
    }
}

//! `net`: loopback sockets: round trips, a connection, bandwidth.

/// The experiment's name, the first part of its ids.
pub const NAME: &str = crate::ExperimentId::Net.as_str();

/// `net.tcp.rtt.same`: a 1-byte TCP round trip with both threads on one CPU, the datasheet's.
pub const TCP_RTT_SAME: &str = "net.tcp.rtt.same";

/// `net.<measure>` or, placed, `net.<measure>.<placement>`; the measure (`tcp.rtt`) and the
/// placement (`same`, `cross`) as the command line spells them.
pub fn case(measure: &str, placement: Option<&str>) -> String {
    match placement {
        None => format!("{NAME}.{measure}"),
        Some(p) => format!("{NAME}.{measure}.{p}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_are_built_as_the_datasheet_reads_them() {
        assert_eq!(case("tcp.rtt", Some("same")), TCP_RTT_SAME);
        assert_eq!(case("tcp.bw", None), "net.tcp.bw");
    }
}

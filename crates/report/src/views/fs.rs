//! `fs` in the shape of the MINIX 3 study's table (Herder, Bos, Gras, Homburg, Tanenbaum, "MINIX
//! 3: A Highly Reliable, Self-Repairing Operating System", 2006): per call, the time with the
//! file system in the kernel and in user space, the difference in ns and in %, beside the
//! study's own %, and the difference priced at the run's call rate.

use super::View;
use crate::format::{fmt_ns, pct_signed as pct};
use oscost_model::ids::fs::{self as ids, Id, FUSE, TMPFS};
use oscost_model::schema::{CaseResult, ExperimentResult};

/// The study's published slowdown of `call` (user-mode drivers over kernel-mode ones), %.
fn study_pct(call: &str) -> Option<f64> {
    let id = match call {
        "overall" => "overall.slowdown".to_owned(),
        c => format!("{}.slowdown", c.replace('-', "_")),
    };
    crate::baselines::find("minix3-user-drivers")?
        .figures
        .into_iter()
        .find(|f| f.id == id)
        .map(|f| f.value)
}

/// The table: one row per call measured on both sides, in the order measured, and the sum.
pub fn views(e: &ExperimentResult) -> Vec<View> {
    let find = |side: &str, call: &str| -> Option<&CaseResult> {
        let id = ids::case(side, call);
        e.cases.iter().find(|c| c.id == id)
    };
    let rate = e.params.get("rate_per_s").and_then(|v| v.as_f64());
    let mut calls: Vec<&str> = Vec::new();
    for c in &e.cases {
        if let Some(Id::Case { side: TMPFS, call }) = Id::parse(&c.id) {
            if find(FUSE, call).is_some() && !calls.contains(&call) {
                calls.push(call);
            }
        }
    }
    if calls.is_empty() {
        return Vec::new();
    }
    let row = |name: &str, study: &str, k: f64, u: f64, flagged: bool| {
        let d = u - k;
        let mut diff = fmt_ns(d);
        if flagged {
            diff.push_str(" (flagged)");
        }
        vec![
            name.to_owned(),
            fmt_ns(k),
            fmt_ns(u),
            diff,
            pct(100.0 * d / k),
            study_pct(study).map_or_else(|| "-".into(), |p| format!("+{p:.0} %")),
            rate.map_or_else(|| "-".into(), |r| fmt_ns(d * r) + "/s"),
        ]
    };
    let (mut sum_k, mut sum_u) = (0.0, 0.0);
    let mut rows = Vec::new();
    for call in &calls {
        let (k, u) = (find(TMPFS, call).unwrap(), find(FUSE, call).unwrap());
        let flagged = !k.checks_passed || !u.checks_passed;
        sum_k += k.median_ns;
        sum_u += u.median_ns;
        rows.push(row(call, call, k.median_ns, u.median_ns, flagged));
    }
    if calls.len() > 1 {
        // Not beside the study's overall 12 %: that is the mean of its slowdowns, not the
        // slowdown of a sum (`oscost study minix3` computes the mean).
        rows.push(row("all (sum)", "", sum_k, sum_u, false));
    }
    let at = rate.map_or_else(String::new, |r| format!(" at {r:.0} calls/s"));
    vec![View {
        detail: Vec::new(),
        title: "the MINIX 3 study's table: in the kernel (tmpfs) against in user space (FUSE)"
            .into(),
        head: [
            "call",
            "kernel (tmpfs)",
            "user (FUSE)",
            "difference",
            "difference %",
            "MINIX 3, 2006",
            &format!("difference{at}"),
        ]
        .map(String::from)
        .to_vec(),
        rows,
        notes: vec![
            "Medians, loop overhead subtracted. \"MINIX 3, 2006\": the slowdown Herder, Bos, Gras, \
             Homburg and Tanenbaum (\"MINIX 3: A Highly Reliable, Self-Repairing Operating \
             System\", 2006) published for user-mode against kernel-mode drivers, where the file \
             server was in user space in both; here the whole file system moves out of the \
             kernel, so every request is a round trip to another process."
                .into(),
            "The last column is the difference paid each second at the call rate (--rate). The \
             study's overall slowdown, about 12 %, is the mean of its five slowdowns, not that of \
             a sum: `oscost study minix3` computes it that way for this machine."
                .into(),
        ],
    }]
}

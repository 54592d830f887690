//! Pairing the two sides' figures round by round, and the table of medians over the rounds.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::run::Figures;

/// Every pair so far, by case id in the order first met.
#[derive(Debug)]
pub struct Pairs {
    /// What the two sides are called: the reference and the figure held against it.
    labels: [String; 2],
    ids: Vec<String>,
    c: BTreeMap<String, Vec<f64>>,
    oscost: BTreeMap<String, Vec<f64>>,
    ratios: BTreeMap<String, Vec<f64>>,
    shown: BTreeMap<(String, String), Vec<f64>>,
}

impl Default for Pairs {
    fn default() -> Pairs {
        Pairs::labelled(["C", "oscost"])
    }
}

impl Pairs {
    /// No pairs yet, the two sides called `labels` (the reference first).
    pub fn labelled(labels: [&str; 2]) -> Pairs {
        Pairs {
            labels: labels.map(str::to_string),
            ids: Vec::new(),
            c: BTreeMap::new(),
            oscost: BTreeMap::new(),
            ratios: BTreeMap::new(),
            shown: BTreeMap::new(),
        }
    }

    /// Pairs one round's figures by id (only ids containing `only`, when given) and returns
    /// the round's lines: each pair, and each C figure oscost did not measure, said and
    /// skipped, never invented.
    pub fn add_round(
        &mut self,
        round: usize,
        c: &Figures,
        oscost: &Figures,
        counters: &BTreeMap<String, BTreeMap<String, f64>>,
        show: &[&str],
        only: Option<&str>,
    ) -> Vec<String> {
        let mut lines = Vec::new();
        let w = c
            .iter()
            .map(|(id, _)| id.len())
            .max()
            .unwrap_or(0)
            .max(self.width());
        for (id, cv) in c {
            if only.is_some_and(|o| !id.contains(o)) {
                continue;
            }
            let Some(&(_, ov)) = oscost.iter().find(|(o, _)| o == id) else {
                lines.push(format!(
                    "  round {round}  {id}: not measured by {}, skipped",
                    self.labels[1]
                ));
                continue;
            };
            if !self.c.contains_key(id) {
                self.ids.push(id.clone());
            }
            self.c.entry(id.clone()).or_default().push(*cv);
            self.oscost.entry(id.clone()).or_default().push(ov);
            // A reference of 0 (a part neither side spent time in) has no ratio: said, not
            // printed as NaN or infinity.
            let ratio = (*cv != 0.0).then(|| ov / cv);
            let ratios = self.ratios.entry(id.clone()).or_default();
            ratios.extend(ratio);
            let ratio = ratio.map_or("—".to_string(), |r| format!("{r:.3}"));
            for key in show {
                if let Some(&v) = counters.get(id).and_then(|k| k.get(*key)) {
                    self.shown
                        .entry((id.clone(), key.to_string()))
                        .or_default()
                        .push(v);
                }
            }
            lines.push(format!(
                "  round {round}  {id:<w$} {} {:>10}  {} {:>10}  ratio {ratio}",
                self.labels[0],
                figure(*cv),
                self.labels[1],
                figure(ov)
            ));
        }
        lines
    }

    /// Cases paired at least once.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    fn width(&self) -> usize {
        self.ids.iter().map(String::len).max().unwrap_or(4).max(4)
    }

    /// Each case's median C figure, median oscost figure, median ratio, the counters shown,
    /// and the per-round ratios.
    pub fn table(&self, show: &[&str]) -> String {
        let w = self.width();
        let [a, b] = &self.labels;
        let mut out = format!("{:<w$} {a:>10} {b:>10} {:>8}", "case", "ratio");
        for key in show {
            let _ = write!(out, "  {key}");
        }
        out += "  per-round ratios\n";
        let median = |v: &[f64]| oscost_stats::median(v);
        for id in &self.ids {
            let ratios = &self.ratios[id];
            let ratio = if ratios.is_empty() {
                "—".to_string()
            } else {
                format!("{:.3}", median(ratios))
            };
            let _ = write!(
                out,
                "{id:<w$} {:>10} {:>10} {ratio:>8}",
                figure(median(&self.c[id])),
                figure(median(&self.oscost[id])),
            );
            for key in show {
                match self.shown.get(&(id.clone(), key.to_string())) {
                    Some(v) => {
                        let _ = write!(out, "  {:>w$.3}", median(v), w = key.len());
                    }
                    None => {
                        let _ = write!(out, "  {:>w$}", "n/a", w = key.len());
                    }
                }
            }
            let per_round: Vec<String> = ratios.iter().map(|r| format!("{r:.3}")).collect();
            let _ = writeln!(out, "  {}", per_round.join(" "));
        }
        out
    }
}

/// A figure at the precision its size needs: ns to a tenth, a ratio of figures (under 10)
/// to three places.
fn figure(v: f64) -> String {
    if v.abs() < 10.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(pairs: &[(&str, f64)]) -> Figures {
        pairs.iter().map(|&(i, v)| (i.to_string(), v)).collect()
    }

    /// A reference of 0 gives no ratio: a dash, never NaN, in the round's line and the table.
    #[test]
    fn a_zero_reference_has_no_ratio() {
        let mut p = Pairs::default();
        let lines = p.add_round(
            1,
            &figures(&[("a.slack", 0.0)]),
            &figures(&[("a.slack", 0.0)]),
            &BTreeMap::new(),
            &[],
            None,
        );
        assert!(lines[0].ends_with("ratio —"), "{lines:?}");
        let t = p.table(&[]);
        assert!(
            !t.contains("NaN") && t.lines().nth(1).unwrap().contains('—'),
            "{t}"
        );
    }

    /// Three rounds of known figures: the medians, the median ratio and the per-round ratios
    /// are those of the data; a case oscost lacks is said, not paired; `only` filters.
    #[test]
    fn rounds_pair_by_id_and_the_table_holds_the_medians() {
        let mut p = Pairs::default();
        let mut counters = BTreeMap::new();
        counters.insert(
            "a.x".to_string(),
            BTreeMap::from([("per_op".to_string(), 2.0)]),
        );
        let show = ["per_op"];
        for (round, (c, o)) in [(100.0, 110.0), (200.0, 180.0), (100.0, 100.0)]
            .into_iter()
            .enumerate()
        {
            let lines = p.add_round(
                round + 1,
                &figures(&[("a.x", c), ("a.gone", 1.0)]),
                &figures(&[("a.x", o), ("a.extra", 5.0)]),
                &counters,
                &show,
                None,
            );
            assert_eq!(lines.len(), 2);
            assert!(
                lines[1].contains("a.gone: not measured by oscost, skipped"),
                "{lines:?}"
            );
        }
        assert_eq!(p.len(), 1);
        let t = p.table(&show);
        let row = t.lines().nth(1).unwrap();
        assert!(row.starts_with("a.x"), "{t}");
        let words: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            words[1..],
            ["100.0", "110.0", "1.000", "2.000", "1.100", "0.900", "1.000"]
        );
        let lines = p.add_round(
            4,
            &figures(&[("a.x", 1.0), ("b.y", 1.0)]),
            &figures(&[("b.y", 2.0)]),
            &counters,
            &show,
            Some("b."),
        );
        assert_eq!(lines.len(), 1);
        assert_eq!(p.len(), 2);
    }
}

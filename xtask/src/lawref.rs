//! `cargo xtask law-ref FILE…`: the yardstick `compare --group-by host` is held to (issue 52).
//!
//! For every result file (one host each) and every case with raw samples it computes what a
//! group-by cell needs of the samples and nothing else: the exact law of the bootstrap median
//! of the host's samples, and the 95 % interval of the ratio of medians of the host against the
//! first file's, read from the two laws. It shares no code with oscost (only serde to read the
//! documents, and only each case's id and samples), so group-by's CPU can be set against the
//! cost of the exact law itself. One TSV line per case and host after the first: figure, host,
//! ratio, and the interval's ends, each as Rust writes an `f64` (shortest round trip), so that a
//! script can check group-by's cells against them.

use serde::Deserialize;
use std::io::Write;
use std::process::ExitCode;

/// What is read of a result document: the host and each case's samples.
#[derive(Deserialize)]
struct Doc {
    #[serde(default)]
    environment: Env,
    #[serde(default)]
    experiments: Vec<Experiment>,
}

#[derive(Deserialize, Default)]
struct Env {
    #[serde(default)]
    hostname: Option<String>,
    #[serde(default)]
    fleet: Option<Fleet>,
}

#[derive(Deserialize)]
struct Fleet {
    #[serde(default)]
    host_name: Option<String>,
}

#[derive(Deserialize)]
struct Experiment {
    #[serde(default)]
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    id: String,
    #[serde(default)]
    raw_ns: Vec<f64>,
}

/// The two-sided interval's confidence, and the tails it leaves, computed as a reader of
/// "95 %" computes them.
const CONFIDENCE: f64 = 0.95;

/// Probability below which a tail of a median's law is left out: far below what a 95 %
/// interval can see.
const TINY: f64 = 1e-16;

/// Candidates of a ratio's quantile few enough to be listed and sorted.
const LIST: usize = 256;

/// `cargo xtask law-ref FILE…`.
pub fn main(args: Vec<String>) -> ExitCode {
    if args.is_empty() || args.iter().any(|a| a.starts_with('-')) {
        eprintln!(
            "usage: cargo xtask law-ref FILE…\n  one result file per host, the first the baseline: \
             per case and host, the ratio of medians to the baseline's and its 95 % interval \
             from the exact laws of the bootstrap medians, as TSV"
        );
        return ExitCode::from(2);
    }
    match run(&args, &mut std::io::stdout().lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("law-ref: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A host's name and the laws of its cases by id, in its file's order.
type Host = (String, Vec<(String, Option<Law>)>);

/// The host and the laws of one file's cases.
fn read(path: &str) -> Result<Host, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let doc: Doc = serde_json::from_slice(&bytes).map_err(|e| format!("{path}: {e}"))?;
    drop(bytes);
    let env = doc.environment;
    let host = env
        .fleet
        .and_then(|f| f.host_name)
        .or(env.hostname)
        .unwrap_or_else(|| path.to_owned());
    let laws = doc
        .experiments
        .into_iter()
        .flat_map(|e| e.cases)
        .map(|c| (c.id, Law::of(&c.raw_ns)))
        .collect();
    Ok((host, laws))
}

/// Writes the TSV of `files`: the first the baseline, each other read, compared and dropped.
pub fn run(files: &[String], out: &mut impl Write) -> Result<(), String> {
    let (_, base) = read(&files[0])?;
    let base: std::collections::HashMap<&str, &Law> = base
        .iter()
        .filter_map(|(id, l)| l.as_ref().map(|l| (id.as_str(), l)))
        .collect();
    let w = |e: std::io::Error| e.to_string();
    writeln!(out, "figure\thost\tratio\tlo\thi").map_err(w)?;
    for f in &files[1..] {
        let (host, laws) = read(f)?;
        for (id, law) in &laws {
            let (Some(b), Some(a)) = (law, base.get(id.as_str())) else {
                continue;
            };
            if let Some((r, lo, hi)) = ratio_interval(a, b) {
                writeln!(out, "{id}\t{host}\t{r}\t{lo}\t{hi}").map_err(w)?;
            }
        }
    }
    Ok(())
}

/// The law of the bootstrap median of a set of samples: the values a resample's median takes
/// (ascending, each once) and the probability of each or any before it.
#[derive(Debug)]
pub struct Law {
    values: Vec<f64>,
    cum: Vec<f64>,
    median: f64,
}

impl Law {
    /// `None` without samples or with one not finite.
    pub fn of(samples: &[f64]) -> Option<Law> {
        if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let median = if n % 2 == 1 {
            s[n / 2]
        } else {
            0.5 * s[n / 2 - 1] + 0.5 * s[n / 2]
        };
        let lnf: Vec<f64> = std::iter::once(0.0)
            .chain((1..=n).scan(0.0, |acc, k| {
                *acc += (k as f64).ln();
                Some(*acc)
            }))
            .collect();
        let mut points = if n % 2 == 1 {
            odd(&s, &lnf)
        } else {
            even(&s, &lnf)
        };
        points.sort_unstable_by(|x, y| x.0.total_cmp(&y.0));
        let total: f64 = points.iter().map(|p| p.1).sum();
        // Samples tie (timings in whole nanoseconds), and so do midpoints: one value each,
        // which leaves the law as it is and its grid of ratios far smaller.
        let (mut values, mut cum): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
        let mut acc = 0.0;
        for (v, p) in points {
            acc += p / total;
            if values.last() == Some(&v) {
                *cum.last_mut().unwrap_or(&mut 0.0) = acc;
            } else {
                values.push(v);
                cum.push(acc);
            }
        }
        Some(Law {
            values,
            cum,
            median,
        })
    }

    /// P(median ≤ the `k`-th smallest value), counted from one; 0 for none.
    fn below(&self, k: usize) -> f64 {
        if k == 0 {
            0.0
        } else {
            self.cum[k - 1]
        }
    }
}

/// P(Binomial(n, p) ≥ m): the pmf at the tail's near end from the log factorials, the rest
/// by the ratio of successive terms, summing the smaller tail.
fn at_least(n: usize, m: usize, p: f64, lnf: &[f64]) -> f64 {
    if m == 0 || p >= 1.0 {
        return 1.0;
    }
    if m > n || p <= 0.0 {
        return 0.0;
    }
    let (lp, lq) = (p.ln(), (-p).ln_1p());
    let pmf = |k: usize| (lnf[n] - lnf[k] - lnf[n - k] + k as f64 * lp + (n - k) as f64 * lq).exp();
    let odds = p / (1.0 - p);
    let mut sum = 0.0;
    if m as f64 >= n as f64 * p {
        let (mut k, mut t) = (m, pmf(m));
        loop {
            sum += t;
            if k == n || t < sum * 1e-17 {
                return sum;
            }
            t *= (n - k) as f64 / (k + 1) as f64 * odds;
            k += 1;
        }
    }
    let (mut k, mut t) = (m - 1, pmf(m - 1));
    loop {
        sum += t;
        if k == 0 || t < sum * 1e-17 {
            return 1.0 - sum;
        }
        t *= k as f64 / (n - k + 1) as f64 / odds;
        k -= 1;
    }
}

/// The sorted samples' positions (from one) where the `m`-th smallest of `n` draws lands with
/// more than [`TINY`] probability, with P(it is at or below each) and at the one before.
fn order_statistic(n: usize, m: usize, lnf: &[f64]) -> Vec<(usize, f64, f64)> {
    let g = |j: usize| at_least(n, m, j as f64 / n as f64, lnf);
    let mut first = m;
    while first > 1 && g(first - 1) > TINY {
        first -= 1;
    }
    let mut out = Vec::new();
    let mut before = g(first - 1);
    for j in first..=n {
        let at = g(j);
        out.push((j, at, before));
        if 1.0 - at < TINY {
            break;
        }
        before = at;
    }
    out
}

/// Odd n: the resample's median is its ((n + 1) / 2)-th smallest draw.
fn odd(s: &[f64], lnf: &[f64]) -> Vec<(f64, f64)> {
    let n = s.len();
    order_statistic(n, n.div_ceil(2), lnf)
        .into_iter()
        .map(|(j, at, before)| (s[j - 1], (at - before).max(0.0)))
        .collect()
}

/// Even n: the midpoint of the (n / 2)-th and the next smallest draws, at positions i ≤ j.
/// For i < j, m = n / 2 draws lie at or below i (one at least on i) and the other n − m at or
/// above j (one at least on j): C(n, m) · ((i/n)^m − ((i−1)/n)^m) · (((n−j+1)/n)^(n−m) −
/// ((n−j)/n)^(n−m)); i = j takes what is left of P(the m-th is at i).
fn even(s: &[f64], lnf: &[f64]) -> Vec<(f64, f64)> {
    let n = s.len();
    let m = n / 2;
    let r = (n - m) as f64;
    let nf = n as f64;
    let ln_choose = lnf[n] - lnf[m] - lnf[n - m];
    let places = order_statistic(n, m, lnf);
    // The upper draw's factor, in logs (C(n, m) alone overflows), depends on j alone: once
    // per j, not once per pair.
    let first = places.first().map_or(n, |p| p.0);
    let ln_high: Vec<f64> = (0..=n)
        .map(|j| {
            if j <= first {
                return f64::NEG_INFINITY;
            }
            let up = (n - j + 1) as f64;
            r * (up / nf).ln() + (-(r * ((n - j) as f64 / up).ln()).exp_m1()).ln()
        })
        .collect();
    let mut out = Vec::new();
    for (i, at, before) in places {
        let here = at - before;
        if here <= 0.0 {
            continue;
        }
        let ln_low = m as f64 * (i as f64 / nf).ln()
            + (-(m as f64 * ((i - 1) as f64 / i as f64).ln()).exp_m1()).ln();
        let head = ln_choose + ln_low;
        let above = if i == n {
            0.0
        } else {
            (head + r * ((n - i) as f64 / nf).ln()).exp()
        };
        out.push((s[i - 1], (here - above).max(0.0)));
        for j in i + 1..=n {
            let p = (head + ln_high[j]).exp();
            out.push((0.5 * s[i - 1] + 0.5 * s[j - 1], p));
            if p <= TINY * above {
                break;
            }
        }
    }
    out
}

/// The standard normal's p-quantile to within 5e-4 (Abramowitz and Stegun 26.2.23): a
/// guess's, which the law then corrects.
fn normal_quantile(p: f64) -> f64 {
    let t = (-2.0 * p.min(1.0 - p).ln()).sqrt();
    let z = t
        - (2.515517 + 0.802853 * t + 0.010328 * t * t)
            / (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t);
    if p < 0.5 {
        -z
    } else {
        z
    }
}

/// The ratio of medians b / a and its 95 % interval, widened to hold it: each end the smallest
/// ratio of the two laws' values whose probability, over a's positive values, reaches the
/// tail. `None` when a median is not positive or a's law has no positive value.
pub fn ratio_interval(a: &Law, b: &Law) -> Option<(f64, f64, f64)> {
    if a.median <= 0.0 || b.median <= 0.0 {
        return None;
    }
    let ratio = b.median / a.median;
    let start = a.values.partition_point(|v| *v <= 0.0);
    let rows = Rows {
        a: &a.values[start..],
        mass: (start..a.values.len())
            .map(|i| a.cum[i] - a.below(i))
            .collect(),
        b,
    };
    let positive: f64 = rows.mass.iter().sum();
    if positive <= 0.0 {
        return None;
    }
    let tail = (1.0 - CONFIDENCE) / 2.0;
    let lo = rows.quantile(tail, positive);
    let hi = rows.quantile(1.0 - tail, positive);
    Some((ratio, lo.min(ratio), hi.max(ratio)))
}

/// The grid of ratios b[j] / a[i]: a row per positive value of a (ascending), each row
/// ascending in j since a[i] > 0.
struct Rows<'l> {
    a: &'l [f64],
    mass: Vec<f64>,
    b: &'l Law,
}

impl Rows<'_> {
    fn at(&self, i: usize, j: usize) -> f64 {
        self.b.values[j] / self.a[i]
    }

    /// How many of row `i`'s ratios among `from..to` lie at or below `r`, plus `from`.
    fn count(&self, i: usize, r: f64, from: usize, to: usize) -> usize {
        from + self.b.values[from..to].partition_point(|v| v / self.a[i] <= r)
    }

    /// [`Rows::count`] searched from `near` outwards: the row before's count, which differs
    /// from this row's by a few where the rows are close.
    fn count_near(&self, i: usize, r: f64, from: usize, to: usize, near: usize) -> usize {
        let s = near.clamp(from, to);
        if s > from && self.at(i, s - 1) > r {
            return self.count(i, r, from, s);
        }
        let mut step = 1;
        let mut at = s;
        while at + step <= to && self.at(i, at + step - 1) <= r {
            at += step;
            step *= 2;
        }
        self.count(i, r, at, (at + step).min(to))
    }

    /// Σ P(a[i]) · P(b[j] / a[i] ≤ r) summed over every row in order (the ratios before
    /// `lo[i]` known to lie at or below r, those from `hi[i]` above it): near q the sum an
    /// order of adding cannot change.
    fn weight(&self, r: f64, lo: &[usize], hi: &[usize]) -> f64 {
        (0..self.a.len())
            .map(|i| self.mass[i] * self.b.below(self.count(i, r, lo[i], hi[i])))
            .sum()
    }

    /// The smallest ratio r of the grid with P(ratio ≤ r) ≥ q. Each row keeps the ratios
    /// still in the bracket `r_lo < ratio ≤ r_hi` as `lo[i]..hi[i]`, and only rows holding one
    /// are searched. The bracket narrows by false position on P(ratio ≤ r) − q (Illinois,
    /// bisecting when two steps did not halve it), starting from the whole grid; once it holds
    /// few ratios they are listed and sorted.
    fn quantile(&self, q: f64, positive: f64) -> f64 {
        let (na, nb) = (self.a.len(), self.b.values.len());
        let ends = [
            self.at(0, 0),
            self.at(na - 1, 0),
            self.at(0, nb - 1),
            self.at(na - 1, nb - 1),
        ];
        let mut r_lo = ends.iter().copied().fold(f64::INFINITY, f64::min);
        let mut r_hi = ends.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        // Below the lowest ratio nothing is reached; at the highest everything is.
        let (mut f_lo, mut f_hi) = (-q, 1.0 - q);
        let mut lo = vec![0usize; na];
        let mut hi = vec![nb; na];
        let mut rows: Vec<usize> = (0..na).collect();
        let mut counts: Vec<usize> = Vec::with_capacity(na);
        // Σ P(a[i]) · P(b ≤ b[lo[i] − 1]): the weight at the bracket's lower end.
        let mut w_lo = 0.0;
        let (mut side, mut widths) = (0, [r_hi - r_lo; 2]);
        // The first probes from a guess where the law is smooth, then false position.
        let mut guesses = self.guesses(q).into_iter();
        loop {
            let left: usize = rows.iter().map(|&i| hi[i] - lo[i]).sum();
            let width = r_hi - r_lo;
            let mut r = r_lo - f_lo * width / (f_hi - f_lo);
            if width > 0.5 * widths[0] || !(r > r_lo && r < r_hi) {
                r = 0.5 * r_lo + 0.5 * r_hi;
            }
            if let Some(g) = guesses.by_ref().find(|g| *g > r_lo && *g < r_hi) {
                r = g;
            } else {
                widths = [widths[1], width];
            }
            // Listing costs about as much as a step through the rows once a few are left each.
            if left <= LIST.max(2 * rows.len()) || r <= r_lo || r >= r_hi {
                return self.listed(q, positive, &lo, &hi, &rows);
            }
            counts.clear();
            let mut w = w_lo;
            let mut near = 0;
            for &i in &rows {
                let c = self.count_near(i, r, lo[i], hi[i], near);
                near = c;
                w += self.mass[i] * (self.b.below(c) - self.b.below(lo[i]));
                counts.push(c);
            }
            let mut f = w / positive - q;
            if f.abs() < 1e-10 {
                f = self.weight(r, &lo, &hi) / positive - q;
            }
            if f >= 0.0 {
                for (&i, &c) in rows.iter().zip(&counts) {
                    hi[i] = c;
                }
                (r_hi, f_hi) = (r, f);
                if side == 1 {
                    f_lo *= 0.5;
                }
                side = 1;
            } else {
                for (&i, &c) in rows.iter().zip(&counts) {
                    lo[i] = c;
                }
                (r_lo, f_lo, w_lo) = (r, f.min(-f64::MIN_POSITIVE), w);
                if side == -1 {
                    f_hi *= 0.5;
                }
                side = -1;
            }
            rows.retain(|&i| lo[i] < hi[i]);
        }
    }

    /// Where a guess puts the q-quantile, and a little either side, when both laws are of
    /// positive values: log b − log a near normal, its mean and variance from the laws'.
    fn guesses(&self, q: f64) -> Vec<f64> {
        if self.b.values[0] <= 0.0 || !(q > 0.0 && q < 1.0) {
            return Vec::new();
        }
        let moments = |v: &mut dyn Iterator<Item = (f64, f64)>| {
            let (mut w, mut s1, mut s2) = (0.0, 0.0, 0.0);
            for (x, p) in v {
                let l = x.ln();
                w += p;
                s1 += p * l;
                s2 += p * l * l;
            }
            let mean = s1 / w;
            (mean, (s2 / w - mean * mean).max(0.0))
        };
        let (ma, va) = moments(&mut self.a.iter().copied().zip(self.mass.iter().copied()));
        let b = self.b;
        let (mb, vb) =
            moments(&mut (0..b.values.len()).map(|j| (b.values[j], b.cum[j] - b.below(j))));
        let sd = (va + vb).sqrt();
        let g = mb - ma + normal_quantile(q) * sd;
        let d = 0.2 * sd;
        [g - d, g + d, g - 4.0 * d, g + 4.0 * d]
            .into_iter()
            .map(f64::exp)
            .filter(|r| r.is_finite())
            .collect()
    }

    /// The answer among the ratios left in the bracket, listed in order: the first whose
    /// weight, added to the bracket's lower end's, reaches q (within 1e-10 of q the sum over
    /// every row decides, so that the order of adding does not); the last when rounding
    /// leaves them all short.
    fn listed(&self, q: f64, positive: f64, lo: &[usize], hi: &[usize], rows: &[usize]) -> f64 {
        let mut list: Vec<(f64, f64)> = Vec::new();
        for &i in rows {
            for j in lo[i]..hi[i] {
                list.push((
                    self.at(i, j),
                    self.mass[i] * (self.b.cum[j] - self.b.below(j)),
                ));
            }
        }
        list.sort_unstable_by(|x, y| x.0.total_cmp(&y.0));
        let mut w: f64 = (0..self.a.len())
            .map(|i| self.mass[i] * self.b.below(lo[i]))
            .sum();
        let mut k = 0;
        while k < list.len() {
            let r = list[k].0;
            while k < list.len() && list[k].0 == r {
                w += list[k].1;
                k += 1;
            }
            let f = w / positive - q;
            let reached = if f.abs() < 1e-10 {
                self.weight(r, lo, hi) / positive >= q
            } else {
                f >= 0.0
            };
            if reached {
                return r;
            }
        }
        list.last().map_or(f64::NAN, |l| l.0)
    }
}

#[cfg(test)]
mod tests;

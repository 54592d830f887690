//! Reading the history back: the runs listed, a run found by a prefix of its id or by
//! `latest~N`, a run's document, the comparable run before one, a case's trend.

use crate::store::{first, next, Cell};
use crate::{
    derived_run_id, env_differences, env_fingerprint, History, HistoryError, NewestRun, RunSummary,
    TrendPoint, Window, MIN_PREFIX,
};
use oscost_model::{ResultDoc, ResultHead};
use std::collections::HashMap;

/// The columns `list` and `resolve` sort by: newest first. A document without a start time
/// (`oscost/1`) counts from when it was saved.
// A run with no start time (imported from an `oscost/1` file) counts as older than every run
// that has one, so that importing old files does not make them `latest`.
const NEWEST_FIRST: &str = "ORDER BY CASE WHEN started_at IS NULL THEN 0 ELSE 1 END DESC, \
     started_at DESC, saved_at DESC, run_id DESC";

impl History {
    /// Every run, newest first.
    pub fn list(&self) -> Result<Vec<RunSummary>, HistoryError> {
        Ok(self.list_window(&Window::all())?.0)
    }

    /// The runs of `window`, newest first, and how many runs the window holds before its
    /// limit: only the rows of the runs returned are read.
    pub fn list_window(&self, window: &Window) -> Result<(Vec<RunSummary>, usize), HistoryError> {
        let (filter, params) = window_filter(window, "");
        let total = self
            .query(&format!("SELECT count(*) FROM runs {filter}"), &params)?
            .into_iter()
            .next()
            .map_or(0, |r| first(r).int() as usize);
        let limit = limit_clause(window);
        let chosen = format!("SELECT run_id FROM runs {filter} {NEWEST_FIRST} {limit}");
        let mut experiments: HashMap<String, Vec<String>> = HashMap::new();
        for row in self.query(
            &format!(
                "SELECT run_id, name FROM experiments WHERE run_id IN ({chosen}) \
                 ORDER BY run_id, position"
            ),
            &params,
        )? {
            let mut row = row.into_iter();
            let (id, name) = (next(&mut row).string(), next(&mut row).string());
            experiments.entry(id).or_default().push(name);
        }
        let runs = self.query(
            &format!(
                "SELECT run_id, started_at, saved_at, oscost_version, kernel, cpu_model, \
                 case_count, (SELECT hostname FROM run_hosts h WHERE h.run_id = runs.run_id), \
                 command_line FROM runs {filter} {NEWEST_FIRST} {limit}"
            ),
            &params,
        )?;
        let runs = runs
            .into_iter()
            .map(|r| {
                let mut r = r.into_iter();
                let run_id = next(&mut r).string();
                RunSummary {
                    experiments: experiments.remove(&run_id).unwrap_or_default(),
                    run_id,
                    started_at: next(&mut r).text(),
                    saved_at: next(&mut r).string(),
                    oscost_version: next(&mut r).string(),
                    kernel: next(&mut r).string(),
                    cpu_model: next(&mut r).text(),
                    case_count: next(&mut r).int() as usize,
                    hostname: next(&mut r).text(),
                    command_line: next(&mut r).string(),
                }
            })
            .collect();
        Ok((runs, total))
    }

    /// Each host's newest run (by start time, as [`History::list`] orders them) and how many
    /// runs the host has, chosen in the database: only ids and names are read, never a
    /// document, so a store of any size costs one short query. A run whose document names no
    /// host is under `None`. Hosts come in no particular order.
    pub fn newest_per_host(&self) -> Result<Vec<NewestRun>, HistoryError> {
        self.newest_per(
            "SELECT (SELECT hostname FROM run_hosts h WHERE h.run_id = runs.run_id), run_id \
             FROM runs",
        )
    }

    /// [`History::newest_per_host`] by kernel release instead of host.
    pub fn newest_per_kernel(&self) -> Result<Vec<NewestRun>, HistoryError> {
        self.newest_per("SELECT kernel, run_id FROM runs")
    }

    /// The first run of each group of `select` (a group column and a run id, from `runs`) in
    /// newest-first order, and the size of each group.
    fn newest_per(&self, select: &str) -> Result<Vec<NewestRun>, HistoryError> {
        // A run without figures (a bill) stands for no group: there is nothing to compare.
        let rows = self.query(
            &format!("{select} WHERE case_count > 0 {NEWEST_FIRST}"),
            &[],
        )?;
        let mut at: HashMap<Option<String>, usize> = HashMap::new();
        let mut out: Vec<NewestRun> = Vec::new();
        for row in rows {
            let mut r = row.into_iter();
            let group = next(&mut r).text().filter(|g| !g.is_empty());
            let run_id = next(&mut r).string();
            match at.get(&group) {
                Some(&i) => out[i].runs += 1,
                None => {
                    at.insert(group.clone(), out.len());
                    out.push(NewestRun {
                        group,
                        run_id,
                        runs: 1,
                    });
                }
            }
        }
        Ok(out)
    }

    /// The full id of the run `run` names: a whole id, a prefix of one id (at least
    /// [`MIN_PREFIX`] characters), `latest` for the newest run, or `latest~N` for the one N
    /// runs before it.
    pub fn resolve(&self, run: &str) -> Result<String, HistoryError> {
        let back = match run.strip_prefix("latest") {
            Some("") => Some(0),
            Some(rest) => rest
                .strip_prefix('~')
                .and_then(|n| n.parse::<u32>().ok())
                .map(i64::from),
            None => None,
        };
        if let Some(back) = back {
            let found = self.query(
                &format!("SELECT run_id FROM runs {NEWEST_FIRST} LIMIT 1 OFFSET $1"),
                &[back.into()],
            )?;
            return found
                .into_iter()
                .next()
                .map(|r| first(r).string())
                .ok_or_else(|| {
                    if back == 0 {
                        HistoryError::Empty
                    } else {
                        HistoryError::UnknownRun { run: run.into() }
                    }
                });
        }
        let exact = self.query("SELECT run_id FROM runs WHERE run_id = $1", &[run.into()])?;
        if let Some(row) = exact.into_iter().next() {
            return Ok(first(row).string());
        }
        if run.chars().count() < MIN_PREFIX {
            return Err(HistoryError::ShortPrefix { run: run.into() });
        }
        // Matched here rather than with LIKE, whose wildcards and case rules differ between
        // databases; listing ten thousand ids takes milliseconds.
        let mut matches: Vec<String> = self
            .query("SELECT run_id FROM runs", &[])?
            .into_iter()
            .map(|r| first(r).string())
            .filter(|id| id.starts_with(run))
            .collect();
        matches.sort();
        match matches.len() {
            0 => Err(HistoryError::UnknownRun { run: run.into() }),
            1 => Ok(matches.remove(0)),
            _ => Err(HistoryError::AmbiguousRun {
                run: run.into(),
                matches,
            }),
        }
    }

    /// The document of the run with the full id `run_id` (see [`History::resolve`]), read
    /// with [`oscost_model::read`] so that documents of older schemas load too.
    pub fn get(&self, run_id: &str) -> Result<ResultDoc, HistoryError> {
        let text = self.text(run_id)?;
        let doc = oscost_model::read(&text).map_err(|why| HistoryError::Document {
            run_id: run_id.into(),
            why,
        })?;
        own_run(run_id, doc.run_id.as_deref())?;
        Ok(doc)
    }

    /// The head of the run with the full id `run_id`: its id, start time and environment, read
    /// with [`oscost_model::read_head`] so that its experiments are not built. What
    /// [`History::get`] would refuse in the document's head is refused here alike.
    pub fn head(&self, run_id: &str) -> Result<ResultHead, HistoryError> {
        let text = self.text(run_id)?;
        let head = oscost_model::read_head(&text).map_err(|why| HistoryError::Document {
            run_id: run_id.into(),
            why,
        })?;
        own_run(run_id, head.run_id.as_deref())?;
        Ok(head)
    }

    /// The stored text of the run with the full id `run_id`, checked against its digest.
    fn text(&self, run_id: &str) -> Result<String, HistoryError> {
        // Since schema 3 the document is in `documents`, compressed; before, in `runs`.
        let row = self
            .query(
                "SELECT d.encoding, d.body, d.digest, r.document FROM runs r LEFT JOIN \
                 documents d ON d.run_id = r.run_id WHERE r.run_id = $1",
                &[run_id.into()],
            )?
            .into_iter()
            .next()
            .ok_or_else(|| HistoryError::UnknownRun { run: run_id.into() })?;
        let mut row = row.into_iter();
        let (encoding, body, digest, plain) = (
            next(&mut row).text(),
            next(&mut row),
            next(&mut row).text(),
            next(&mut row),
        );
        let altered = |why: String| HistoryError::Altered {
            run_id: run_id.into(),
            why,
        };
        let text = match encoding {
            Some(encoding) => {
                let bytes = body.bytes().ok_or_else(|| HistoryError::Stored {
                    run_id: run_id.into(),
                    why: "its stored document is not bytes".into(),
                })?;
                let text = crate::encode::decode(run_id, &encoding, &bytes)?;
                // Checked on every read: an edited store must not hand out another run's
                // document, nor a changed one, as this run's.
                if digest.as_deref() != Some(crate::encode::digest(text.as_bytes()).as_str()) {
                    return Err(altered(
                        "its stored document does not match its stored digest".into(),
                    ));
                }
                text
            }
            None => plain.string(),
        };
        Ok(text)
    }

    /// The newest other run comparable with `doc`: the same host (when `doc` names one), the
    /// same environment fingerprint, the same experiments in the same order, and the same size
    /// (both `--quick` or neither). Looks at the last 20 such runs at most.
    pub fn last_comparable(&self, doc: &ResultDoc) -> Result<Option<ResultDoc>, HistoryError> {
        Ok(self.comparable_runs(doc, &[], 1)?.pop())
    }

    /// Up to `max` runs comparable with `doc` as [`History::last_comparable`] judges, newest
    /// first, none of them `doc` itself nor a run in `besides`: the runs whose spread tells
    /// how much this machine's figures move from one run to the next.
    pub fn comparable_runs(
        &self,
        doc: &ResultDoc,
        besides: &[&str],
        max: usize,
    ) -> Result<Vec<ResultDoc>, HistoryError> {
        let quick = |words: &[&str]| words.contains(&"--quick");
        let line = doc.environment.command_line.join(" ");
        let mine: Vec<&str> = line.split(' ').collect();
        let names: Vec<&str> = doc.experiments.iter().map(|e| e.name.as_str()).collect();
        let own = match &doc.run_id {
            Some(id) => id.clone(),
            None => derived_run_id(doc)?,
        };
        let runs = self.alike(
            &doc.environment,
            &own,
            |words, experiments| {
                quick(words) == quick(&mine)
                    && experiments
                        .iter()
                        .map(String::as_str)
                        .eq(names.iter().copied())
            },
            max + besides.len(),
        )?;
        Ok(runs
            .into_iter()
            .filter(|d| {
                d.run_id
                    .as_deref()
                    .is_none_or(|id| !besides.iter().any(|b| b.eq_ignore_ascii_case(id)))
            })
            .take(max)
            .collect())
    }

    /// The newest run other than `own` on the machine `env` describes (the same host when it
    /// names one, the same environment fingerprint) that `accept` takes, judged by its command
    /// line (split at spaces, as it is kept) and its experiments' names in order; only that
    /// run's document is read. Looks at the last 20 such runs at most: a run about to start
    /// asks it before it has any results.
    pub fn newest_alike(
        &self,
        env: &oscost_model::Environment,
        own: &str,
        accept: impl Fn(&[&str], &[String]) -> bool,
    ) -> Result<Option<ResultDoc>, HistoryError> {
        Ok(self.alike(env, own, accept, 1)?.pop())
    }

    /// Up to `max` of the runs [`History::newest_alike`] looks at that `accept` takes, newest
    /// first.
    fn alike(
        &self,
        env: &oscost_model::Environment,
        own: &str,
        accept: impl Fn(&[&str], &[String]) -> bool,
        max: usize,
    ) -> Result<Vec<ResultDoc>, HistoryError> {
        let mut found = Vec::new();
        // On a store many machines share, twins of one fingerprint are still other hosts.
        let (host_filter, host) = match env.host() {
            Some(h) => (
                "AND run_id IN (SELECT run_id FROM run_hosts WHERE hostname = $3)",
                h.to_owned(),
            ),
            None => (
                "AND run_id NOT IN (SELECT run_id FROM run_hosts WHERE hostname != $3)",
                String::new(),
            ),
        };
        let candidates = self.query(
            &format!(
                "SELECT run_id, command_line FROM runs WHERE env_fingerprint = $1 AND run_id != $2 \
                 {host_filter} {NEWEST_FIRST} LIMIT 20"
            ),
            &[env_fingerprint(env).into(), own.into(), host.into()],
        )?;
        for row in candidates {
            let mut r = row.into_iter();
            let id = next(&mut r).string();
            let line = next(&mut r).string();
            let names: Vec<String> = self
                .query(
                    "SELECT name FROM experiments WHERE run_id = $1 ORDER BY position",
                    &[id.clone().into()],
                )?
                .into_iter()
                .map(|r| first(r).string())
                .collect();
            if accept(&line.split(' ').collect::<Vec<_>>(), &names) {
                found.push(self.get(&id)?);
                if found.len() >= max {
                    break;
                }
            }
        }
        Ok(found)
    }

    /// The figure of case (or derived figure) `case_id` in every run that has it, oldest
    /// first, each point saying whether the environment changed since the one before.
    pub fn trend(&self, case_id: &str) -> Result<Vec<TrendPoint>, HistoryError> {
        Ok(self.trend_window(case_id, &Window::all())?.0)
    }

    /// [`History::trend`] over the runs of `window` (its limit keeps the newest points), and
    /// how many points the window holds before its limit. Only the documents of the runs
    /// either side of an environment change among the points returned are read.
    pub fn trend_window(
        &self,
        case_id: &str,
        window: &Window,
    ) -> Result<(Vec<TrendPoint>, usize), HistoryError> {
        let (filter, mut params) = window_filter(window, "r.");
        let filter = filter.replacen("WHERE", "AND", 1).replace("$1", "$2");
        params.insert(0, case_id.into());
        let total = self
            .query(
                &format!(
                    "SELECT count(*) FROM cases c JOIN runs r ON r.run_id = c.run_id \
                     WHERE c.case_id = $1 {filter}"
                ),
                &params,
            )?
            .into_iter()
            .next()
            .map_or(0, |r| first(r).int() as usize);
        let limit = limit_clause(window);
        let rows = self.query(
            &format!(
                "SELECT r.run_id, r.started_at, r.env_fingerprint, c.unit, c.median_ns, \
                 c.ci_low_ns, c.ci_high_ns, c.checks_passed, r.command_line \
                 FROM cases c JOIN runs r ON r.run_id = c.run_id WHERE c.case_id = $1 {filter} \
                 ORDER BY CASE WHEN r.started_at IS NULL THEN 0 ELSE 1 END DESC, \
                 r.started_at DESC, r.saved_at DESC, r.run_id DESC {limit}"
            ),
            &params,
        )?;
        let mut points: Vec<TrendPoint> = rows
            .into_iter()
            .rev()
            .map(|r| {
                let mut r = r.into_iter();
                TrendPoint {
                    run_id: next(&mut r).string(),
                    started_at: next(&mut r).text(),
                    env_fingerprint: next(&mut r).string(),
                    unit: next(&mut r).string(),
                    median_ns: next(&mut r).real(),
                    ci95_ns: [next(&mut r).real(), next(&mut r).real()],
                    checks_passed: next(&mut r).int() != 0,
                    env_changed: false,
                    changes: Vec::new(),
                    quick: next(&mut r).string().split(' ').any(|a| a == "--quick"),
                }
            })
            .collect();
        if points.is_empty() && total == 0 {
            if window.since.is_some() && self.has_case(case_id)? {
                return Ok((points, total));
            }
            return Err(HistoryError::UnknownCase {
                case_id: case_id.into(),
                similar: self.similar_cases(case_id)?,
            });
        }
        for i in 1..points.len() {
            points[i].env_changed = points[i].env_fingerprint != points[i - 1].env_fingerprint;
            if points[i].env_changed {
                // Only the runs either side of a change are read whole.
                if let (Ok(a), Ok(b)) =
                    (self.get(&points[i - 1].run_id), self.get(&points[i].run_id))
                {
                    points[i].changes = env_differences(&a.environment, &b.environment);
                }
            }
        }
        Ok((points, total))
    }

    /// Whether any run has the case `case_id`.
    fn has_case(&self, case_id: &str) -> Result<bool, HistoryError> {
        Ok(!self
            .query(
                "SELECT 1 FROM cases WHERE case_id = $1 LIMIT 1",
                &[case_id.into()],
            )?
            .is_empty())
    }

    /// A few stored case ids that contain `case_id`, for an error message.
    fn similar_cases(&self, case_id: &str) -> Result<Vec<String>, HistoryError> {
        let needle = case_id.to_lowercase();
        let all: Vec<String> = self
            .query("SELECT DISTINCT case_id FROM cases", &[])?
            .into_iter()
            .map(|r| first(r).string())
            .collect();
        let mut ids: Vec<String> = all
            .iter()
            .filter(|id| !needle.is_empty() && id.to_lowercase().contains(&needle))
            .cloned()
            .collect();
        if ids.is_empty() {
            ids = near_misses(&needle, &all);
        }
        ids.sort();
        ids.truncate(5);
        Ok(ids)
    }
}

/// The `WHERE` clause choosing the runs of `window` by their start time (`prefix` names the
/// `runs` table: `r.`), with its parameter as `$1`; empty for every run.
fn window_filter(window: &Window, prefix: &str) -> (String, Vec<Cell>) {
    match &window.since {
        Some(at) => (
            format!("WHERE COALESCE({prefix}started_at, {prefix}saved_at) >= $1"),
            vec![at.into()],
        ),
        None => (String::new(), Vec::new()),
    }
}

/// The ids a typo of `wanted` may have meant: the fewest edits away (letters swapped, added,
/// dropped or changed), at most two and at most a quarter of its length.
fn near_misses(wanted: &str, ids: &[String]) -> Vec<String> {
    let limit = (wanted.chars().count() / 4).clamp(1, 2);
    let scored: Vec<(usize, &String)> = ids
        .iter()
        .map(|id| (strsim::damerau_levenshtein(wanted, &id.to_lowercase()), id))
        .filter(|(d, _)| *d <= limit)
        .collect();
    let best = scored.iter().map(|(d, _)| *d).min();
    scored
        .into_iter()
        .filter(|(d, _)| Some(*d) == best)
        .map(|(_, id)| id.clone())
        .collect()
}

/// `LIMIT n` for a window of at most n runs, else nothing.
fn limit_clause(window: &Window) -> String {
    window
        .limit
        .map(|n| format!("LIMIT {n}"))
        .unwrap_or_default()
}

/// A document with its digest moved along with it still names the run it belongs to: `own`,
/// the id in the document read for `run_id` (one first saved as `oscost/1` by an older oscost
/// may have no id in its text).
fn own_run(run_id: &str, own: Option<&str>) -> Result<(), HistoryError> {
    match own {
        Some(own) if own != run_id.to_ascii_lowercase() => Err(HistoryError::Altered {
            run_id: run_id.into(),
            why: format!("its stored document is the document of run {own}"),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod near_miss_tests {
    use super::near_misses;

    #[test]
    fn a_typo_finds_the_id_it_missed_and_nothing_far() {
        let ids: Vec<String> = ["syscall.getpid", "syscall.getppid", "fault.cow"]
            .map(String::from)
            .to_vec();
        assert_eq!(near_misses("syscall.getpdi", &ids), ["syscall.getpid"]);
        assert!(near_misses("switch.pipe", &ids).is_empty());
        assert!(near_misses("", &ids).is_empty());
    }
}

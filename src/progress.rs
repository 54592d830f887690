//! The progress bar: on stderr, and only when stderr is a terminal and `--quiet` is off.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use oscost_measure::Progress;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// An indicatif bar behind the measuring layer's [`Progress`] trait.
pub struct Bar {
    bar: ProgressBar,
    /// "[2/4] " while a suite of several experiments runs.
    stage: Mutex<String>,
    /// What the whole run has left, where the history knows how long its experiments took.
    suite: Arc<Mutex<Option<Suite>>>,
}

/// The run's expected time left, from what each experiment took the last time the same run
/// was made on this machine.
#[derive(Debug, Clone, Copy)]
struct Suite {
    /// When the experiment now measuring began.
    started: Instant,
    /// What it took last time, s.
    expected: f64,
    /// What the experiments after it took last time, s.
    rest: f64,
}

/// The run's time left: what the experiment now measuring has left (its time last run less
/// `elapsed`; once it has outrun that, the step's own estimate `step_left`) plus `rest`.
fn suite_left(elapsed: f64, expected: f64, rest: f64, step_left: f64) -> f64 {
    let now = if elapsed < expected {
        expected - elapsed
    } else {
        step_left
    };
    now + rest
}

/// `38s`, `2m05s`: as short as the bar's own estimate beside it.
fn short_secs(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s < 60 {
        format!("{s}s")
    } else {
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

impl Bar {
    /// A bar that draws only if `visible` and stderr is a terminal.
    pub fn new(visible: bool) -> Bar {
        let bar = ProgressBar::hidden();
        if visible && std::io::stderr().is_terminal() {
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        let suite: Arc<Mutex<Option<Suite>>> = Arc::default();
        let shared = Arc::clone(&suite);
        // The message last and cut to what is left of the line, so that the bar redraws in
        // place instead of scrolling: under 80 columns a shorter bar keeps the run's time left
        // on a line of 60 (a longer one is wrapped by the terminal and redrawn a line lower).
        let narrow = oscost_report::export::terminal::terminal_width(true).is_some_and(|w| w < 80);
        let template = if narrow {
            "{prefix:>16} [{bar:8}] {pos}/{len} ~{eta} left{suite} {wide_msg}"
        } else {
            "{prefix:>16} [{bar:16}] {pos}/{len} ~{eta} left{suite} {wide_msg}"
        };
        bar.set_style(
            ProgressStyle::with_template(template)
                .expect("static template")
                .with_key(
                    "suite",
                    move |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let Some(s) = *shared.lock().unwrap_or_else(|e| e.into_inner()) else {
                            return;
                        };
                        let elapsed = s.started.elapsed().as_secs_f64();
                        let left =
                            suite_left(elapsed, s.expected, s.rest, state.eta().as_secs_f64());
                        let _ = write!(w, ", all ~{}", short_secs(left));
                    },
                )
                .progress_chars("=> "),
        );
        Bar {
            bar,
            stage: Mutex::new(String::new()),
            suite,
        }
    }

    /// Says what the run has left from here: `expected` is what each experiment of the run
    /// took the last time this run was made here (`None` where unknown), and `index` (from 0)
    /// the one starting now. Shown only when every experiment from here on is known.
    pub fn suite(&self, expected: &[Option<f64>], index: usize) {
        *self.suite.lock().unwrap_or_else(|e| e.into_inner()) = known(expected, index);
    }

    /// Says which experiment of the run is measuring: `index` of `count` (from 1).
    pub fn stage(&self, index: usize, count: usize) {
        let text = if count > 1 {
            format!("[{index}/{count}] ")
        } else {
            String::new()
        };
        *self.stage.lock().unwrap_or_else(|e| e.into_inner()) = text;
    }

    /// Shows `what` while nothing is measured yet (calibrating the clock, describing the
    /// machine), so a run never starts with a blank screen.
    pub fn preparing(&self, what: &str) {
        self.bar.set_length(0);
        self.bar.set_prefix("oscost");
        self.bar.set_message(what.to_owned());
        self.bar.tick();
    }
}

impl Progress for Bar {
    fn start(&self, len: u64, what: &str) {
        self.bar.reset();
        self.bar.set_length(len);
        self.bar.set_position(0);
        let stage = self.stage.lock().unwrap_or_else(|e| e.into_inner()).clone();
        self.bar.set_prefix(format!("{stage}{what}"));
        // A step's message belongs to the step: "calibrating the clock" must not linger.
        self.bar.set_message(String::new());
    }
    fn inc(&self, n: u64) {
        self.bar.inc(n);
    }
    fn message(&self, msg: &str) {
        self.bar.set_message(msg.to_owned());
    }
    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// The run's time left from experiment `index` on, when every one from there is known; none
/// for a run of one experiment, whose step's own estimate already says it.
fn known(expected: &[Option<f64>], index: usize) -> Option<Suite> {
    if expected.len() < 2 {
        return None;
    }
    let now = (*expected.get(index)?)?;
    let rest: Option<f64> = expected.get(index + 1..)?.iter().copied().sum();
    Some(Suite {
        started: Instant::now(),
        expected: now,
        rest: rest?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_left_is_this_experiments_time_left_plus_the_rest() {
        // 4 s into an experiment that took 10 s last time, 30 s after it.
        assert_eq!(suite_left(4.0, 10.0, 30.0, 99.0), 36.0);
        // Outrunning last time's: the step's own estimate stands for what is left of it.
        assert_eq!(suite_left(12.0, 10.0, 30.0, 2.0), 32.0);
    }

    #[test]
    fn times_read_short() {
        assert_eq!(short_secs(0.4), "0s");
        assert_eq!(short_secs(38.4), "38s");
        assert_eq!(short_secs(125.0), "2m05s");
        assert_eq!(short_secs(-3.0), "0s");
    }

    #[test]
    fn the_run_left_is_shown_only_when_every_later_experiment_is_known() {
        let bar = Bar::new(false);
        let known = |b: &Bar| b.suite.lock().unwrap().is_some();
        bar.suite(&[Some(5.0), Some(10.0), Some(1.0)], 0);
        assert!(known(&bar));
        bar.suite(&[Some(5.0), None, Some(1.0)], 0);
        assert!(!known(&bar));
        // Past the unknown one, the rest is known again.
        bar.suite(&[Some(5.0), None, Some(1.0)], 2);
        assert!(known(&bar));
        let s = bar.suite.lock().unwrap().unwrap();
        assert_eq!((s.expected, s.rest), (1.0, 0.0));
        // No earlier run, or a run of one experiment: nothing.
        bar.suite(&[], 0);
        assert!(!known(&bar));
        bar.suite(&[Some(5.0)], 0);
        assert!(!known(&bar));
    }
}

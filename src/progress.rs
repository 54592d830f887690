//! The progress bar: on stderr, and only when stderr is a terminal and `--quiet` is off.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oscost_measure::Progress;
use std::io::IsTerminal;

/// An indicatif bar behind the measuring layer's [`Progress`] trait.
pub struct Bar {
    bar: ProgressBar,
    /// "[2/4] " while a suite of several experiments runs.
    stage: std::sync::Mutex<String>,
}

impl Bar {
    /// A bar that draws only if `visible` and stderr is a terminal.
    pub fn new(visible: bool) -> Bar {
        let bar = ProgressBar::hidden();
        if visible && std::io::stderr().is_terminal() {
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        bar.set_style(
            ProgressStyle::with_template(
                // The message last and cut to what is left of the line, so that the bar
                // fits a terminal of 60 columns and redraws in place instead of scrolling.
                "{prefix:>16} [{bar:16}] {pos}/{len} ~{eta} left {wide_msg}",
            )
            .expect("static template")
            .progress_chars("=> "),
        );
        Bar {
            bar,
            stage: std::sync::Mutex::new(String::new()),
        }
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

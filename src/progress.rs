//! The progress bar: on stderr, and only when stderr is a terminal and `--quiet` is off.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oscost_measure::Progress;
use std::io::IsTerminal;

/// An indicatif bar behind the measuring layer's [`Progress`] trait.
pub struct Bar {
    bar: ProgressBar,
}

impl Bar {
    /// A bar that draws only if `visible` and stderr is a terminal.
    pub fn new(visible: bool) -> Bar {
        let bar = ProgressBar::hidden();
        if visible && std::io::stderr().is_terminal() {
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        bar.set_style(
            ProgressStyle::with_template("{prefix:>10} [{bar:30}] {pos}/{len} {msg} ({elapsed})")
                .expect("static template")
                .progress_chars("=> "),
        );
        Bar { bar }
    }
}

impl Progress for Bar {
    fn start(&self, len: u64, what: &str) {
        self.bar.reset();
        self.bar.set_length(len);
        self.bar.set_position(0);
        self.bar.set_prefix(what.to_owned());
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

//! The lab's [`Progress`] as an indicatif bar on stderr, shown only when stderr is a terminal.

use indicatif::{ProgressBar, ProgressStyle};
use zmem_lab::Progress;

#[derive(Debug)]
pub struct Bar {
    bar: ProgressBar,
}

impl Bar {
    pub fn new() -> Self {
        // indicatif hides itself when stderr is not a terminal, so pipes and CI stay clean.
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template("{prefix:>12} [{bar:40}] {pos}/{len} pages {eta}")
                .expect("static template")
                .progress_chars("=> "),
        );
        Self { bar }
    }
}

impl Progress for Bar {
    fn start(&self, label: &str, total: u64) {
        self.bar.set_prefix(label.to_string());
        self.bar.set_length(total);
        self.bar.set_position(0);
        self.bar.reset_eta();
    }

    fn advance(&self, n: u64) {
        self.bar.inc(n);
    }

    fn finish(&self) {}
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

//! The lab's [`Progress`] as an indicatif bar on stderr, shown only when stderr is a terminal.

use indicatif::{ProgressBar, ProgressStyle};
use zmem_lab::Progress;

#[derive(Debug)]
pub struct Bar {
    bar: ProgressBar,
}

impl Bar {
    /// A bar counting pages.
    pub fn new() -> Self {
        Self::counting("pages")
    }

    /// A bar counting `unit` (pages, processes), followed by the latest [`Bar::message`].
    pub fn counting(unit: &str) -> Self {
        // indicatif hides itself when stderr is not a terminal, so pipes and CI stay clean.
        let bar = ProgressBar::new(0);
        let template =
            format!("{{prefix:>12}} [{{bar:40}}] {{pos}}/{{len}} {unit} {{msg}} {{eta}}");
        bar.set_style(
            ProgressStyle::with_template(&template)
                .expect("the template is valid for any unit")
                .progress_chars("=> "),
        );
        Self { bar }
    }

    /// Text shown after the count (`12345 pages` while capturing processes).
    pub fn message(&self, text: String) {
        self.bar.set_message(text);
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

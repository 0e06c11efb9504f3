/// Where long experiments report how far they are. The lab knows nothing of terminals; the CLI
/// implements this with a progress bar, tests with nothing.
pub trait Progress: Sync {
    /// A new phase of `total` units (pages, usually) begins.
    fn start(&self, label: &str, total: u64);
    /// `n` more units are done.
    fn advance(&self, n: u64);
    /// The phase is over.
    fn finish(&self);
}

/// Reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _label: &str, _total: u64) {}
    fn advance(&self, _n: u64) {}
    fn finish(&self) {}
}

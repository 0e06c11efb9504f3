use thiserror::Error;

/// Why an experiment could not produce a result.
#[derive(Debug, Error)]
pub enum LabError {
    /// A stream could not be built or failed on a page.
    #[error(transparent)]
    Comp(#[from] zmem_comp::CompError),
    /// An algorithm specification on the command line or in a config is malformed.
    #[error("bad algorithm spec {spec:?}: {why}")]
    BadSpec { spec: String, why: String },
    /// A page failed to compress (decompression failures are reported as `verified: false`).
    #[error("{algo}: page {page}: {err}")]
    Page { algo: String, page: u64, err: zmem_comp::CompError },
    /// The zram engine refused an operation.
    #[error("zram: {0}")]
    Zram(String),
    /// The live kernel could not be used as the oracle.
    #[error("kernel oracle unavailable: {0}")]
    Oracle(String),
    /// A worker thread panicked (a bug; reported instead of propagated).
    #[error("a worker thread panicked")]
    Panicked,
    /// The experiment was given nothing to work on.
    #[error("no pages to work on")]
    NoPages,
}

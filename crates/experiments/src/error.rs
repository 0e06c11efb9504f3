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
    /// The zram engine refused to be set up or to answer.
    #[error("zram: {0}")]
    Zram(#[from] zmem_zram::ZramError),
    /// A zram device refused one page.
    #[error("zram ({config}): write of page {page}: {err}")]
    ZramWrite { config: String, page: u64, err: zmem_zram::ZramError },
    /// zswap, the swap layer or its swap device failed.
    #[error("swap: {0}")]
    Swap(#[from] zmem_zswap::ZswapError),
    /// A worker thread panicked (a bug; reported instead of propagated).
    #[error("a worker thread panicked")]
    Panicked,
    /// A pool could not be built or refused an operation.
    #[error(transparent)]
    Pool(#[from] zmem_pool::PoolError),
    /// A replay or a device set-up failed.
    #[error(transparent)]
    Sim(#[from] zmem_sim::SimError),
    /// Something that touches the running kernel failed.
    #[error(transparent)]
    Kernel(#[from] zmem_kernel::KernelError),
    /// A page set or trace could not be read, generated or captured.
    #[error(transparent)]
    Pages(#[from] zmem_pages::PagesError),
    /// An experiment could not be set up as asked.
    #[error("{0}")]
    Setup(String),
    /// No configuration read every page back correctly, so none can be recommended.
    #[error("no configuration read every page back correctly; nothing to recommend")]
    NothingVerified,
    /// The experiment was given nothing to work on.
    #[error("no pages to work on")]
    NoPages,
    /// The experiment needs more pages than it was given.
    #[error("{what} needs at least {need} pages, got {have}")]
    TooFewPages { what: &'static str, need: u64, have: u64 },
}

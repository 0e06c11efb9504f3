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
    /// The live kernel could not be used as the oracle.
    #[error("kernel oracle unavailable: {0}")]
    Oracle(String),
    /// A worker thread panicked (a bug; reported instead of propagated).
    #[error("a worker thread panicked")]
    Panicked,
    /// A pool could not be built or refused an operation.
    #[error(transparent)]
    Pool(#[from] zmem_pool::PoolError),
    /// A page set or trace could not be read, generated or captured.
    #[error(transparent)]
    Workload(#[from] zmem_workload::WorkloadError),
    /// An experiment could not be set up as asked.
    #[error("{0}")]
    Setup(String),
    /// A live kernel run's player process failed: killed (the kernel's OOM killer), ended early
    /// or ran out of time. The set-up was sound; another run may succeed.
    #[error("the kernel's run failed: {0}")]
    PlayerFailed(String),
    /// SIGINT or SIGTERM arrived during a live run; everything the run made has been removed.
    #[error("interrupted by a signal; the run's cgroup, swap and zram device were removed")]
    Interrupted,
    /// Reclaim found nothing it could evict: every resident page was refused by zswap while
    /// writeback is disabled. The kernel would invoke the OOM killer here.
    #[error(
        "out of memory after {accesses} accesses: zswap rejects every page reclaim picks and \
         memory.zswap.writeback is 0, so nothing can leave RAM (the kernel would OOM-kill)"
    )]
    OutOfMemory { accesses: u64 },
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

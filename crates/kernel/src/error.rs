use thiserror::Error;
use zmem_pages::PagesError;

/// Why something that touches the running kernel failed.
#[derive(Debug, Error)]
pub enum KernelError {
    /// A page set or trace could not be read, captured or recorded.
    #[error(transparent)]
    Pages(#[from] PagesError),
    /// zmem's own zram engine refused (the kernel's counterpart of a live device).
    #[error("zram: {0}")]
    Zram(#[from] zmem_zram::ZramError),
    /// The live set-up could not be made as asked: not root, no zram, no memory cgroup, a
    /// sysfs write refused.
    #[error("{0}")]
    Setup(String),
    /// The live kernel could not be used as the oracle.
    #[error("kernel oracle unavailable: {0}")]
    Oracle(String),
    /// A live kernel run's player process failed: killed (the kernel's OOM killer), ended early
    /// or ran out of time. The set-up was sound; another run may succeed.
    #[error("the kernel's run failed: {0}")]
    PlayerFailed(String),
    /// SIGINT or SIGTERM arrived during a live run; everything the run made has been removed.
    #[error("interrupted by a signal; the run's cgroup, swap and zram device were removed")]
    Interrupted,
    /// A worker thread panicked (a bug; reported instead of propagated).
    #[error("a worker thread panicked")]
    Panicked,
}

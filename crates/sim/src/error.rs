use thiserror::Error;

/// Why a replay or a device set-up failed.
#[derive(Debug, Error)]
pub enum SimError {
    /// A stream could not be built or failed on a page.
    #[error(transparent)]
    Comp(#[from] zmem_comp::CompError),
    /// The zram engine refused to be set up or to answer. Its words are in the message, so it
    /// is not also a `source` (a chain printed whole would say them twice).
    #[error("zram: {0}")]
    Zram(zmem_zram::ZramError),
    /// A zram device refused one page.
    #[error("zram ({config}): write of page {page}: {err}")]
    ZramWrite { config: String, page: u64, err: zmem_zram::ZramError },
    /// zswap, the swap layer or its swap device failed (in the message, not a `source`, as
    /// for `Zram`).
    #[error("swap: {0}")]
    Swap(zmem_zswap::ZswapError),
    /// A pool could not be built or refused an operation.
    #[error(transparent)]
    Pool(#[from] zmem_pool::PoolError),
    /// A page set or trace could not be read or generated.
    #[error(transparent)]
    Pages(#[from] zmem_pages::PagesError),
    /// The replay could not be set up as asked.
    #[error("{0}")]
    Setup(String),
    /// Reclaim cannot make room for a fault: every resident page was refused by zswap while
    /// writeback is disabled, (cgroup v2) what reclaim swaps out into zswap is charged back
    /// as fast as it frees RAM, swappiness 0 lets reclaim scan no anonymous page, or the
    /// inactive list ran dry while the memcg's statistics, not flushed since, said it was not
    /// low, so nothing was deactivated (`StatsFlush`). The kernel would invoke the memcg OOM
    /// killer here.
    #[error(
        "out of memory after {accesses} accesses: reclaim cannot make room in the memcg (zswap \
         rejects every page reclaim picks with memory.zswap.writeback 0, on cgroup v2 its \
         charged pool fills the limit, swappiness 0 scans no anonymous page, or the inactive \
         list ran dry between two flushes of the memcg's statistics); the kernel would OOM-kill"
    )]
    OutOfMemory { accesses: u64 },
    /// The replay was given nothing to work on.
    #[error("no pages to work on")]
    NoPages,
}

impl From<zmem_zram::ZramError> for SimError {
    fn from(e: zmem_zram::ZramError) -> Self {
        Self::Zram(e)
    }
}

impl From<zmem_zswap::ZswapError> for SimError {
    fn from(e: zmem_zswap::ZswapError) -> Self {
        Self::Swap(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The audit saw `zram: EINVAL: x needs a value: EINVAL: x needs a value`: a printed chain
    /// says the engine's words once.
    #[test]
    fn an_engine_error_is_said_once() {
        let e =
            SimError::from(zmem_zram::ZramError::new(zmem_zram::Errno::EINVAL, "x needs a value"));
        assert_eq!(e.to_string(), "zram: EINVAL: x needs a value");
        assert!(std::error::Error::source(&e).is_none());
    }
}

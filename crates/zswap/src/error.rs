//! The one error type of the zswap crate.

use thiserror::Error;

/// Why a zswap operation failed. A *rejected* store is not an error (the page simply goes to the
/// swap device, as in the kernel); these are the failures a caller has to handle.
#[derive(Debug, Error)]
pub enum ZswapError {
    /// A configuration value or module parameter out of range, or unknown.
    #[error("invalid zswap configuration: {0}")]
    Config(String),
    /// No module parameter of that name.
    #[error(
        "no zswap parameter {0:?} (have: enabled, compressor, max_pool_percent, accept_threshold_percent, shrinker_enabled)"
    )]
    UnknownParam(String),
    /// The compressor could not be built.
    #[error(transparent)]
    Comp(#[from] zmem_comp::CompError),
    /// The allocator could not be built or failed on an object it issued.
    #[error(transparent)]
    Pool(#[from] zmem_pool::PoolError),
    /// A stored object did not decompress to a whole page (the kernel's `decompress_fail`, -EIO).
    #[error("swap offset {offset}: stored page does not decompress: {why}")]
    Decompress { offset: u64, why: String },
    /// A swap offset past the end of the swap device.
    #[error("swap offset {offset} is past the {slots}-slot swap device")]
    OffsetOutOfRange { offset: u64, slots: u64 },
    /// A buffer that is not exactly one page.
    #[error("buffer of {len} bytes is not one {page_size}-byte page")]
    BadLength { len: usize, page_size: usize },
    /// Reading or writing the swap device failed.
    #[error("swap device {op} at offset {offset}: {err}")]
    Io { op: &'static str, offset: u64, err: std::io::Error },
    /// A swap device the caller supplied (such as a zram device) failed.
    #[error("swap device {op} at offset {offset}: {err}")]
    Device { op: &'static str, offset: u64, err: Box<dyn std::error::Error + Send + Sync> },
}

//! The one error type of the pool crate.

use thiserror::Error;

/// Why a pool operation failed. Every failure of the library is one of these; nothing panics.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PoolError {
    /// `malloc(0)` (the kernel's `-EINVAL`).
    #[error("zero-size allocation")]
    ZeroSize,
    /// The request is larger than the allocator can hold (the kernel's `-ENOSPC`).
    #[error("object of {size} bytes is larger than the {max}-byte maximum of {allocator}")]
    TooLarge { allocator: &'static str, size: usize, max: usize },
    /// The handle was never issued by this pool, or its object has been freed.
    #[error("bad or stale handle {0:#x}")]
    BadHandle(u64),
    /// The page arena reached its frame limit (or the system refused memory).
    #[error("out of memory: page arena limit of {limit} frames reached")]
    NoMemory { limit: u64 },
    /// A write longer than the object, or a read buffer shorter than it.
    #[error("buffer of {len} bytes does not match the {size}-byte object")]
    BadLength { len: usize, size: usize },
    /// A configuration value out of range (page size, chain size, arena size).
    #[error("invalid pool configuration: {0}")]
    InvalidConfig(String),
    /// No allocator of that name.
    #[error("unknown allocator {name:?} (available: {available})")]
    UnknownAllocator { name: String, available: String },
    /// The operation needs something this pool was not built with (e.g. the mapped window
    /// needs the memfd arena).
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
    /// A system call failed (memfd_create, mmap, ftruncate).
    #[error("{call} failed: {errno}")]
    Os { call: &'static str, errno: String },
}

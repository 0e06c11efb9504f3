use thiserror::Error;

/// Everything that can go wrong in the compressor layer.
///
/// Decoders return [`CompError::Corrupt`] for any malformed input; they never panic and never
/// read or write outside the buffers they are given.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CompError {
    /// The name is not in the registry.
    #[error("unknown compression algorithm '{name}' (available: {available})")]
    UnknownAlgorithm { name: String, available: String },
    /// A parameter the algorithm does not take, or a value out of its range.
    #[error("{algo}: {msg}")]
    InvalidParam { algo: &'static str, msg: String },
    /// The destination buffer cannot hold the result.
    #[error("output buffer of {capacity} bytes is too small")]
    OutputTooSmall { capacity: usize },
    /// The input is longer than the algorithm's format can describe.
    #[error("{algo}: input of {len} bytes exceeds the maximum of {max}")]
    InputTooLarge { algo: &'static str, len: usize, max: usize },
    /// The compressed data is malformed; `at` is the input offset where decoding stopped.
    #[error("{algo}: corrupt compressed data at offset {at}: {what}")]
    Corrupt { algo: &'static str, at: usize, what: &'static str },
    /// A failure reported by a wrapped library (zstd, zlib, liblz4).
    #[error("{algo}: {msg}")]
    Backend { algo: &'static str, msg: String },
}

impl CompError {
    /// Shorthand used by the decoders.
    pub(crate) fn corrupt(algo: &'static str, at: usize, what: &'static str) -> Self {
        CompError::Corrupt { algo, at, what }
    }
}

//! The one error type of the crate. Every failure to read a file names where it happened: the
//! byte offset in the file (or, for zstd-compressed page sets, in the decompressed stream and,
//! where known, in the compressed file). Messages carry their causes inline (no `source()` chain),
//! so printing one error prints everything once.

use std::path::PathBuf;

/// Why reading, writing, capturing or generating a workload failed.
#[derive(Debug, thiserror::Error)]
pub enum PagesError {
    /// An operating-system error on a file.
    #[error("{}: {error}", path.display())]
    Io { path: PathBuf, error: std::io::Error },
    /// An operating-system error on a stream that has no path (a reader or writer).
    #[error("{0}")]
    Stream(std::io::Error),
    /// The input ends before the structure it started is complete.
    #[error("truncated at byte offset {offset}{}: {what} needs {needed} more bytes", where_suffix(*.compressed))]
    Truncated {
        /// Where the data ran out (offset of the first missing byte).
        offset: u64,
        /// What was being read.
        what: String,
        /// How many bytes were missing.
        needed: u64,
        /// Whether `offset` counts decompressed bytes of a zstd page set.
        compressed: bool,
    },
    /// The input is malformed at `offset`.
    #[error("corrupt at byte offset {offset}{}: {msg}", where_suffix(*.compressed))]
    Corrupt {
        /// Offset of the field or page that is wrong.
        offset: u64,
        /// What is wrong.
        msg: String,
        /// Whether `offset` counts decompressed bytes of a zstd page set.
        compressed: bool,
    },
    /// The zstd layer of a compressed page set failed.
    #[error("zstd stream corrupt or truncated near compressed byte offset {offset}: {error}")]
    Zstd {
        /// Compressed bytes consumed when the decoder failed.
        offset: u64,
        error: std::io::Error,
    },
    /// A caller-supplied argument is out of range.
    #[error("{0}")]
    Invalid(String),
    /// Any of the above, in a named file.
    #[error("{}: {error}", path.display())]
    File { path: PathBuf, error: Box<PagesError> },
    /// A declared size exceeds the limit the caller set.
    #[error(
        "the page set declares {declared} bytes of pages, more than the limit of {limit} (half \
         of MemAvailable by default; ZMEM_READ_CEILING=BYTES sets it)"
    )]
    TooLarge { declared: u64, limit: u64 },
    /// A zstd stream that expands far more than any page set does: a decompression bomb.
    #[error(
        "the zstd stream expands to more than {decompressed} bytes from {compressed}: refused as \
         a decompression bomb (ZMEM_READ_CEILING=BYTES reads up to BYTES whatever the ratio)"
    )]
    Bomb { decompressed: u64, compressed: u64 },
}

/// A refusal or failure of zmem-files, at the path it names.
impl From<zmem_files::FileError> for PagesError {
    fn from(e: zmem_files::FileError) -> Self {
        let path = e.path().to_path_buf();
        Self::io(path, e.into_io())
    }
}

fn where_suffix(compressed: bool) -> &'static str {
    if compressed { " of the decompressed page set" } else { "" }
}

impl PagesError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io { path: path.into(), error: source }
    }

    /// The byte offset this error names, if it is about a position in a file.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Self::Truncated { offset, .. }
            | Self::Corrupt { offset, .. }
            | Self::Zstd { offset, .. } => Some(*offset),
            Self::File { error, .. } => error.offset(),
            _ => None,
        }
    }

    /// Adds a file name to errors that lack one.
    pub fn in_file(self, path: &std::path::Path) -> Self {
        match self {
            Self::Stream(error) => Self::Io { path: path.to_path_buf(), error },
            e @ (Self::Io { .. } | Self::File { .. } | Self::Invalid(_)) => e,
            other => Self::File { path: path.to_path_buf(), error: Box::new(other) },
        }
    }
}

//! The one error: a path and what went wrong there, in one line.

use std::io;
use std::path::{Path, PathBuf};

/// A file or directory that could not be written or made, and why (`PATH: reason`).
#[derive(Debug)]
pub struct FileError {
    path: PathBuf,
    source: io::Error,
}

impl FileError {
    pub(crate) fn new(path: &Path, source: io::Error) -> Self {
        Self { path: path.to_path_buf(), source }
    }

    /// A refusal: nothing failed, the path is not one zmem writes to.
    pub(crate) fn refuse(path: &Path, kind: io::ErrorKind, why: impl Into<String>) -> Self {
        Self::new(path, io::Error::new(kind, why.into()))
    }

    /// The path (the one the caller named, never a temporary beside it).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The error without the path, for callers whose own error names the path already.
    pub fn into_io(self) -> io::Error {
        self.source
    }
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// The error as an `io::Error` of the same kind whose message names the path.
impl From<FileError> for io::Error {
    fn from(e: FileError) -> Self {
        io::Error::new(e.source.kind(), e.to_string())
    }
}

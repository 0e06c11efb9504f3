use std::path::{Path, PathBuf};

use thiserror::Error;
use zmem_pages::PagesError;

/// Why something that touches the running kernel failed: the one error type of this crate's
/// fallible API (readers, capture, recording, the live set-up, the kernel oracle).
#[derive(Debug, Error)]
pub enum KernelError {
    /// A kernel file (procfs, sysfs, debugfs, a device node) could not be read or written.
    #[error("{}: {error}", path.display())]
    Io { path: PathBuf, error: std::io::Error },
    /// A kernel file was read but its text is not what the kernel prints there (a garbled or
    /// unknown layout). `path` is the file as the kernel names it, or as read under a test's
    /// root.
    #[error("{}: {what}", path.display())]
    Parse { path: PathBuf, what: String },
    /// This kernel cannot do what was asked (a Kconfig option off, a compressor not built, no
    /// zram or zswap), in the user's terms.
    #[error("{0}")]
    Unsupported(String),
    /// What was asked cannot be done as given: no process to record, a zero interval, a path
    /// that is not a zram device.
    #[error("{0}")]
    Invalid(String),
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

/// A refusal or failure of zmem-files, at the path it names.
impl From<zmem_files::FileError> for KernelError {
    fn from(e: zmem_files::FileError) -> Self {
        let path = e.path().to_path_buf();
        Self::io(path, e.into_io())
    }
}

impl KernelError {
    /// [`KernelError::Io`] on `path`.
    pub fn io(path: impl Into<PathBuf>, error: std::io::Error) -> Self {
        Self::Io { path: path.into(), error }
    }

    /// [`KernelError::Parse`] of `path`.
    pub fn parse(path: impl Into<PathBuf>, what: impl Into<String>) -> Self {
        Self::Parse { path: path.into(), what: what.into() }
    }

    /// The same error, a [`KernelError::Parse`] naming `path` instead of the file's usual name
    /// (a reader under a test's root, or a device the parser could not know).
    pub fn at(self, path: &Path) -> Self {
        match self {
            Self::Parse { what, .. } => Self::Parse { path: path.to_path_buf(), what },
            other => other,
        }
    }

    /// The operating system's error, where this is one (for callers that compare errnos).
    pub fn io_error(&self) -> Option<&std::io::Error> {
        match self {
            Self::Io { error, .. } => Some(error),
            Self::Pages(PagesError::Io { error, .. }) => Some(error),
            _ => None,
        }
    }

    /// What went wrong, without the path (for a message that names the file already): the OS
    /// error of `Io`, what was wrong with the text of `Parse`, else the whole message.
    pub fn reason(&self) -> String {
        match self {
            Self::Io { error, .. } => error.to_string(),
            Self::Parse { what, .. } => what.clone(),
            other => other.to_string(),
        }
    }

    /// Whether this is a file that does not exist (`ENOENT`).
    pub fn is_not_found(&self) -> bool {
        self.io_error().is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    }
}

/// Reads a kernel file as text; the one way this crate opens one, so every failure names it.
pub(crate) fn read_text(path: &Path) -> Result<String, KernelError> {
    std::fs::read_to_string(path).map_err(|e| KernelError::io(path, e))
}

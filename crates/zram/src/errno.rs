//! Errors of the control surface and the I/O paths, in the kernel's errno vocabulary: a script
//! that checks `echo ... > attr` failures gets the same error from zmem as from the kernel.

use std::fmt;

/// The errno values zram's sysfs handlers and I/O paths return.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Errno {
    /// Operation not permitted on this attribute's mode (read of WO, write of RO).
    EACCES,
    /// Device or resource busy (changing what is fixed once the device is initialised).
    EBUSY,
    /// Try again (another post-processing operation is running).
    EAGAIN,
    /// Invalid argument.
    EINVAL,
    /// I/O error (a failed read or backing-device write, an exhausted writeback budget).
    EIO,
    /// No such attribute or file.
    ENOENT,
    /// No such device (writeback without a backing device).
    ENODEV,
    /// Out of memory (the memory limit, or the allocator could not grow).
    ENOMEM,
    /// No space left on the backing device.
    ENOSPC,
    /// Result out of range (a bad `page_indexes=` range, an index past the disk).
    ERANGE,
    /// Argument list too long (an algorithm name of 128 bytes or more).
    E2BIG,
    /// Block device required (`backing_dev` given anything but a block device).
    ENOTBLK,
}

impl Errno {
    /// The kernel's number for it (x86-64 / generic).
    pub fn code(self) -> i32 {
        match self {
            Errno::ENOENT => 2,
            Errno::EIO => 5,
            Errno::E2BIG => 7,
            Errno::ENOTBLK => 15,
            Errno::EAGAIN => 11,
            Errno::ENOMEM => 12,
            Errno::ENODEV => 19,
            Errno::EACCES => 13,
            Errno::EBUSY => 16,
            Errno::EINVAL => 22,
            Errno::ENOSPC => 28,
            Errno::ERANGE => 34,
        }
    }

    /// Maps an OS error number back, for comparing with the live kernel.
    pub fn from_code(code: i32) -> Option<Self> {
        [
            Errno::ENOENT,
            Errno::EIO,
            Errno::EAGAIN,
            Errno::ENOMEM,
            Errno::ENODEV,
            Errno::EACCES,
            Errno::EBUSY,
            Errno::EINVAL,
            Errno::ENOSPC,
            Errno::ERANGE,
            Errno::E2BIG,
            Errno::ENOTBLK,
        ]
        .into_iter()
        .find(|e| e.code() == code)
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// An errno and what caused it, for people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{errno}: {msg}")]
pub struct ZramError {
    pub errno: Errno,
    pub msg: String,
}

impl ZramError {
    pub fn new(errno: Errno, msg: impl Into<String>) -> Self {
        Self { errno, msg: msg.into() }
    }

    /// The same failure reported as `errno` (handlers that fold every parse error into one).
    pub fn with_errno(self, errno: Errno) -> Self {
        Self { errno, ..self }
    }
}

/// Shorthand for building an error.
pub(crate) fn err<T>(errno: Errno, msg: impl Into<String>) -> Result<T, ZramError> {
    Err(ZramError::new(errno, msg))
}

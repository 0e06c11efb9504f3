//! zmem-files: the one way zmem writes a file. zmem runs as root and reads every process's
//! memory, so what it writes (page sets, dictionaries, traces, swap scratch) can hold anyone's
//! secrets, and where it writes (`-o FILE`, `/tmp`) may be a place another user prepared. Every
//! crate that writes a file calls this one (a leaf: no zmem dependencies, so the engines use it
//! too); what it is not for: sysfs, procfs and cgroup files (kernel interfaces, not files).
//!
//! - [`write()`] and [`create()`] ([`SafeFile`]): an output at a path the user named. The bytes go
//!   to a new temporary file in the target's directory (`O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC`,
//!   a random name), its mode set with `fchmod` so no umask widens or narrows it, then
//!   `commit` syncs it and renames it over the target. Nothing is ever opened at the target
//!   itself, so a symbolic link there is never followed and an existing file is never written
//!   into; a target that is a symbolic link, not a regular file, or another user's file is
//!   refused, and so is a directory that others may write without the sticky bit (anyone there
//!   could swap the file after zmem wrote it) or that another user owns (its owner may move
//!   anything in it; root's and zmem's own uid's only, reached through links or not). The
//!   directory is opened once and checked on its descriptor, and the temporary is made
//!   (`openat`), the target checked again (`fstatat`), the rename done (`renameat`) and an
//!   uncommitted temporary removed (`unlinkat`) relative to it: a component of the path swapped
//!   for a link meanwhile changes nothing. Dropped without `commit`: the temporary is removed and
//!   the target is untouched.
//! - [`PrivateTempDir`]: scratch space (0700, files 0600 inside, made with `mkdirat` and
//!   `openat` relative to held descriptors) under `$TMPDIR` or `/tmp`, whose path, links
//!   resolved, must be root's or this uid's all the way down (so the paths it hands to other
//!   processes name what it made); removed on drop and on SIGINT/SIGTERM (see
//!   [`cleanup_registered`]); its name carries its owner's pid and start time, so what a SIGKILL
//!   or the OOM killer leaves is swept by the next one ([`sweep`]).
//! - [`ensure_dir`]: a directory the user named for outputs, made if missing, refused if it is
//!   a link or another user's.
//!
//! Modes ([`Kind`]): memory contents or addresses 0600; reports meant to be shared 0644; the
//! lab's scripts 0700 (root reviews and runs them; nobody else needs to read them).
//!
//! Errors are [`FileError`]: the path and an `std::io::Error` whose message is one line.

mod check;
mod dir;
mod error;
mod safe_file;
mod signals;
mod temp_dir;

pub use check::ensure_dir;
pub use error::FileError;
pub use safe_file::{SafeFile, create, write};
pub use signals::cleanup_registered;
pub use temp_dir::{PrivateTempDir, sweep};

/// Who may read a file zmem writes, which sets its mode whatever the umask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Memory contents or addresses (page sets, dictionaries, traces, captures, swap and oracle
    /// scratch, evidence): 0600, the owner only.
    Private,
    /// Meant to be read by others (reports, metrics): 0644.
    Shared,
    /// A shell script for root to review and run (the lab's apply and undo scripts): 0700.
    Script,
}

impl Kind {
    /// The file's mode.
    pub fn mode(self) -> u32 {
        match self {
            Kind::Private => 0o600,
            Kind::Shared => 0o644,
            Kind::Script => 0o700,
        }
    }

    /// The mode of a directory made for files of this kind.
    pub fn dir_mode(self) -> u32 {
        match self {
            Kind::Private | Kind::Script => 0o700,
            Kind::Shared => 0o755,
        }
    }
}

#[cfg(test)]
mod tests;

//! What may be written to: the checks on a target, its directory and an output directory.

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::Path;

use crate::{FileError, Kind};

/// This process's effective uid: files it may replace and directories it may sweep are its own.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Words for what a non-regular file is.
fn what(m: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Whether `path` may be replaced: nothing there, or a regular file of this uid's. A link is
/// refused rather than replaced: someone put it there, and the user should see that.
pub(crate) fn check_target(path: &Path) -> Result<(), FileError> {
    let m = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(FileError::new(path, e)),
    };
    let refuse = |why: String| Err(FileError::refuse(path, ErrorKind::PermissionDenied, why));
    if m.file_type().is_symlink() {
        return refuse(
            "is a symbolic link; zmem does not write through links (remove it or choose \
             another path)"
                .into(),
        );
    }
    if !m.is_file() {
        return refuse(format!("is {}; zmem writes only regular files", what(&m)));
    }
    if m.uid() != euid() {
        return refuse(format!(
            "exists and belongs to uid {} (zmem runs as uid {}); zmem does not replace another \
             user's file (remove it or choose another path)",
            m.uid(),
            euid()
        ));
    }
    Ok(())
}

/// Whether files may be put in `dir`: a directory that others may write only with the sticky
/// bit, which keeps them from renaming or removing what zmem put there (as in `/tmp`). Group-
/// writable counts as others: zmem cannot tell who is in the group.
pub(crate) fn check_dir(dir: &Path) -> Result<(), FileError> {
    let m = fs::metadata(dir).map_err(|e| FileError::new(dir, e))?;
    if !m.is_dir() {
        return Err(FileError::refuse(dir, ErrorKind::NotADirectory, "is not a directory"));
    }
    let mode = m.mode();
    if mode & 0o022 != 0 && mode & libc::S_ISVTX == 0 {
        return Err(FileError::refuse(
            dir,
            ErrorKind::PermissionDenied,
            format!(
                "is writable by other users without the sticky bit (mode {:o}); anyone could \
                 replace zmem's file there (choose another directory, or chmod +t it)",
                mode & 0o7777
            ),
        ));
    }
    Ok(())
}

/// The directory of `path`'s file (`.` for a bare name).
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Makes the output directory `path` (and its parents) where missing, the last one with
/// `kind`'s directory mode, and checks it as zmem's own: not a link, a directory, this uid's,
/// and not writable by others without the sticky bit. A directory another user made first is
/// refused: its owner could read or replace what zmem writes there.
pub fn ensure_dir(path: &Path, kind: Kind) -> Result<(), FileError> {
    if let Err(e) = fs::symlink_metadata(path) {
        if e.kind() != ErrorKind::NotFound {
            return Err(FileError::new(path, e));
        }
        fs::create_dir_all(parent_dir(path)).map_err(|e| FileError::new(path, e))?;
        match fs::DirBuilder::new().mode(kind.dir_mode()).create(path) {
            Ok(()) => {}
            // Made meanwhile: checked below as any existing one.
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(FileError::new(path, e)),
        }
    }
    let m = fs::symlink_metadata(path).map_err(|e| FileError::new(path, e))?;
    let refuse = |why: String| Err(FileError::refuse(path, ErrorKind::PermissionDenied, why));
    if m.file_type().is_symlink() {
        return refuse("is a symbolic link; zmem does not write through links".into());
    }
    if !m.is_dir() {
        return refuse(format!("is {}, not a directory", what(&m)));
    }
    if m.uid() != euid() {
        return refuse(format!(
            "belongs to uid {} (zmem runs as uid {}); zmem does not write into another user's \
             directory (remove it or choose another path)",
            m.uid(),
            euid()
        ));
    }
    check_dir(path)
}

//! What may be written to: the checks on a target, its directory and an output directory.

use std::fs;
use std::io::{self, ErrorKind};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use crate::dir::{Dir, Stat};
use crate::{FileError, Kind};

/// This process's effective uid: files it may replace and directories it may sweep are its own.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Whether `path`, found as `st` (`None`: nothing there), may be replaced: nothing there, or a
/// regular file of this uid's. A link is refused rather than replaced: someone put it there,
/// and the user should see that.
pub(crate) fn check_target(path: &Path, st: Option<Stat>) -> Result<(), FileError> {
    let Some(st) = st else { return Ok(()) };
    let refuse = |why: String| Err(FileError::refuse(path, ErrorKind::PermissionDenied, why));
    if st.is_symlink() {
        return refuse(
            "is a symbolic link; zmem does not write through links (remove it or choose \
             another path)"
                .into(),
        );
    }
    if !st.is_file() {
        return refuse(format!("is {}; zmem writes only regular files", st.what()));
    }
    if st.uid != euid() {
        return refuse(format!(
            "exists and belongs to uid {} (zmem runs as uid {}); zmem does not replace another \
             user's file (remove it or choose another path)",
            st.uid,
            euid()
        ));
    }
    Ok(())
}

/// The user who ran `sudo zmem ...` (`SUDO_UID`, read once), when zmem runs as root under sudo.
fn sudo_uid() -> Option<u32> {
    static UID: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *UID.get_or_init(|| std::env::var("SUDO_UID").ok()?.trim().parse().ok())
}

/// Whether a directory owned by `uid` is trusted to hold zmem's files: root's, this uid's, or,
/// under sudo as root, the invoking user's (`sudo zmem lab --apply-script apply.sh` in one's
/// own checkout: that user may become root anyway, so their directory gives nothing away).
pub(crate) fn trusted_owner(uid: u32) -> bool {
    owner_trusted(uid, euid(), sudo_uid())
}

fn owner_trusted(uid: u32, euid: u32, sudo: Option<u32>) -> bool {
    uid == 0 || uid == euid || (euid == 0 && sudo == Some(uid))
}

/// Whether files may be put in `dir`, found as `st`: a directory of a trusted owner's (the
/// owner of a directory may rename and replace anything in it, the sticky bit
/// notwithstanding), that others may write only with the sticky bit, which keeps them from
/// renaming or removing what zmem put there (as in `/tmp`). Group-writable counts as others:
/// zmem cannot tell who is in the group.
pub(crate) fn check_dir(dir: &Path, st: Stat) -> Result<(), FileError> {
    let refuse = |kind, why: String| Err(FileError::refuse(dir, kind, why));
    if !st.is_dir() {
        return refuse(ErrorKind::NotADirectory, "is not a directory".into());
    }
    if !trusted_owner(st.uid) {
        return refuse(
            ErrorKind::PermissionDenied,
            format!(
                "belongs to uid {} (zmem runs as uid {}); its owner could replace or move \
                 zmem's file there (choose a directory of root's or your own)",
                st.uid,
                euid()
            ),
        );
    }
    if st.mode & 0o022 != 0 && st.mode & libc::S_ISVTX == 0 {
        return refuse(
            ErrorKind::PermissionDenied,
            format!(
                "is writable by other users without the sticky bit (mode {:o}); anyone could \
                 replace zmem's file there (choose another directory, or chmod +t it)",
                st.mode & 0o7777
            ),
        );
    }
    Ok(())
}

/// Opens `dir` (links in its path followed, as the user named it), then checks what was
/// opened (fstat on the descriptor, [`check_dir`]): later calls in it go through the
/// descriptor, so the directory used is the one checked whatever its path becomes.
pub(crate) fn open_dir(dir: &Path) -> Result<Dir, FileError> {
    let d = Dir::open(dir, false).map_err(|e| FileError::new(dir, e))?;
    check_dir(dir, d.stat().map_err(|e| FileError::new(dir, e))?)?;
    Ok(d)
}

/// `dir` without links (`realpath`), each directory on it from `/` down checked as
/// [`check_dir`] checks one: then nobody but root and this uid can change what the path names,
/// and paths below it may be handed to other processes (`losetup`, `dd`, zram's `dict=`).
/// `dir` itself is checked on its open descriptor by the caller.
pub(crate) fn trusted_path(dir: &Path) -> Result<PathBuf, FileError> {
    let real = fs::canonicalize(dir).map_err(|e| FileError::new(dir, e))?;
    for a in real.ancestors().skip(1) {
        let m = fs::symlink_metadata(a).map_err(|e| FileError::new(a, e))?;
        check_dir(a, Stat::of(&m)).map_err(|e| {
            let inner = e.into_io();
            let why = format!("on its path, {}: {inner}", a.display());
            FileError::new(dir, io::Error::new(inner.kind(), why))
        })?;
    }
    Ok(real)
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
    let m = Stat::of(&fs::symlink_metadata(path).map_err(|e| FileError::new(path, e))?);
    let refuse = |why: String| Err(FileError::refuse(path, ErrorKind::PermissionDenied, why));
    if m.is_symlink() {
        return refuse("is a symbolic link; zmem does not write through links".into());
    }
    if !m.is_dir() {
        return refuse(format!("is {}, not a directory", m.what()));
    }
    if !trusted_owner(m.uid) {
        return refuse(format!(
            "belongs to uid {} (zmem runs as uid {}); zmem does not write into another user's \
             directory (remove it or choose another path)",
            m.uid,
            euid()
        ));
    }
    check_dir(path, m)
}

#[cfg(test)]
mod tests {
    use super::owner_trusted;

    /// Root's and one's own directories are trusted; the sudo user's only under sudo as root.
    #[test]
    fn whose_directories_are_trusted() {
        assert!(owner_trusted(0, 1000, None));
        assert!(owner_trusted(1000, 1000, None));
        assert!(!owner_trusted(1001, 0, None));
        assert!(owner_trusted(1001, 0, Some(1001)));
        assert!(!owner_trusted(1002, 0, Some(1001)));
        // Not root: SUDO_UID (the environment's word) trusts no one else.
        assert!(!owner_trusted(1001, 1000, Some(1001)));
    }
}

//! An output at a path the user named: written to a private temporary beside it, renamed over
//! it on commit.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, ErrorKind, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::check::{check_dir, check_target, parent_dir};
use crate::temp_dir::Owner;
use crate::{FileError, Kind, signals};

/// The longest piece of the target's name kept in the temporary's (names have at most 255
/// bytes, and the temporary adds a dot, a random part and a suffix).
const NAME_KEPT: usize = 128;

/// A file being written for `path`; [`SafeFile::commit`] puts it there, dropping it without
/// commit removes it. Writes go to the file unbuffered: wrap it in a `BufWriter` for small ones.
#[derive(Debug)]
pub struct SafeFile {
    target: PathBuf,
    tmp: Option<NamedTempFile>,
}

/// Starts writing `path` as `kind` (see the crate's documentation for what is refused).
pub fn create(path: &Path, kind: Kind) -> Result<SafeFile, FileError> {
    check_target(path)?;
    let dir = parent_dir(path);
    // The error names the file the user gave, and the directory as what is wrong with it.
    check_dir(dir).map_err(|e| {
        let inner = e.into_io();
        let why = format!("directory {}: {inner}", dir.display());
        FileError::new(path, io::Error::new(inner.kind(), why))
    })?;
    let name = path
        .file_name()
        .ok_or_else(|| FileError::refuse(path, ErrorKind::InvalidInput, "does not name a file"))?;
    let kept = &name.as_bytes()[..name.len().min(NAME_KEPT)];
    // `.NAME.zmem-tmp-PID.START-RANDOM`: a dot name, which collectors that read `*.prom`
    // (node_exporter) or `*.zpages` skip, with its owner as a PrivateTempDir's name has it.
    let mut ours = std::ffi::OsString::from(".");
    ours.push(std::ffi::OsStr::from_bytes(kept));
    ours.push(".");
    sweep_temporaries(dir, ours.as_bytes());
    let mut prefix = ours;
    prefix.push(format!("zmem-tmp-{}-", Owner::current().id()));
    let tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .rand_bytes(8)
        .make_in(dir, |p| open_new(p, 0))
        .map_err(|e| FileError::new(path, e))?;
    // fchmod: the umask narrowed the open's mode and must not decide a shared file's either.
    tmp.as_file()
        .set_permissions(Permissions::from_mode(kind.mode()))
        .map_err(|e| FileError::new(path, e))?;
    // SIGINT/SIGTERM remove it too, where they would otherwise end the process as it is.
    signals::protect();
    signals::register(tmp.path());
    Ok(SafeFile { target: path.to_path_buf(), tmp: Some(tmp) })
}

/// Removes the temporaries a killed run left for the same target name in `dir`
/// (`ours` is `.NAME.`): regular files of this uid whose owner no longer runs. Best effort.
fn sweep_temporaries(dir: &Path, ours: &[u8]) {
    use std::os::unix::fs::MetadataExt;
    // Without /proc every owner would look gone: sweep nothing.
    if Owner::current().start == 0 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.as_bytes().strip_prefix(ours) else { continue };
        let dead = std::str::from_utf8(rest)
            .ok()
            .filter(|r| r.starts_with("zmem-tmp-"))
            .and_then(Owner::from_name)
            .is_some_and(|o| !o.is_alive());
        if !dead {
            continue;
        }
        let Ok(m) = std::fs::symlink_metadata(entry.path()) else { continue };
        if m.is_file() && m.uid() == crate::check::euid() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A new file at `p`, 0600 (before any fchmod), never through a link and never an existing
/// one; read and write, with `flags` added (`O_DIRECT`). std adds `O_CLOEXEC`.
pub(crate) fn open_new(p: &Path, flags: i32) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | flags)
        .open(p)
}

/// Writes `bytes` to `path` as `kind`, all or nothing.
pub fn write(path: &Path, kind: Kind, bytes: &[u8]) -> Result<(), FileError> {
    let mut f = create(path, kind)?;
    f.write_all(bytes).map_err(|e| FileError::new(path, e))?;
    f.commit()
}

impl SafeFile {
    /// The path it will have (the target, never the temporary).
    pub fn path(&self) -> &Path {
        &self.target
    }

    /// The open file (for positioned writes or `set_len`).
    pub fn file(&self) -> &File {
        self.tmp().as_file()
    }

    fn tmp(&self) -> &NamedTempFile {
        self.tmp.as_ref().expect("a SafeFile holds its temporary until commit")
    }

    fn tmp_mut(&mut self) -> &mut NamedTempFile {
        self.tmp.as_mut().expect("a SafeFile holds its temporary until commit")
    }

    /// Syncs the file and renames it over the target. The target is checked again first (a link
    /// or another user's file planted while it was written is refused, the temporary removed);
    /// one planted between that check and the rename is replaced, never written through.
    pub fn commit(mut self) -> Result<(), FileError> {
        let tmp = self.tmp.take().expect("commit is called once");
        let tmp_path = tmp.path().to_path_buf();
        let err = |e| FileError::new(&self.target, e);
        let done = (|| {
            tmp.as_file().sync_all().map_err(err)?;
            check_target(&self.target)?;
            tmp.persist(&self.target).map(drop).map_err(|e| err(e.error))
        })();
        // Renamed, or removed with `tmp` on the error path: nothing left to clean up.
        signals::unregister(&tmp_path);
        done
    }
}

impl Drop for SafeFile {
    fn drop(&mut self) {
        // Uncommitted: `tmp`'s own drop removes the file.
        if let Some(tmp) = &self.tmp {
            signals::unregister(tmp.path());
        }
    }
}

impl Write for SafeFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tmp_mut().write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tmp_mut().flush()
    }
}

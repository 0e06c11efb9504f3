//! An output at a path the user named: written to a private temporary beside it, renamed over
//! it on commit.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, ErrorKind, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::check::{check_dir, check_target, parent_dir};
use crate::{FileError, Kind};

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
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(std::ffi::OsStr::from_bytes(kept));
    prefix.push(".");
    // A dot name: collectors that read `*.prom` (node_exporter) or `*.zpages` skip it.
    let tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".zmem-tmp")
        .rand_bytes(8)
        .make_in(dir, |p| open_new(p, 0))
        .map_err(|e| FileError::new(path, e))?;
    // fchmod: the umask narrowed the open's mode and must not decide a shared file's either.
    tmp.as_file()
        .set_permissions(Permissions::from_mode(kind.mode()))
        .map_err(|e| FileError::new(path, e))?;
    Ok(SafeFile { target: path.to_path_buf(), tmp: Some(tmp) })
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
        let err = |e| FileError::new(&self.target, e);
        tmp.as_file().sync_all().map_err(err)?;
        check_target(&self.target)?;
        tmp.persist(&self.target).map(drop).map_err(|e| err(e.error))
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

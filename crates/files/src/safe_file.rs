//! An output at a path the user named: written to a private temporary beside it, renamed over
//! it on commit, both relative to the directory opened and checked once.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, ErrorKind, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::check::{check_target, open_dir, parent_dir};
use crate::dir::{Dir, random_part};
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
    /// The target's directory, opened and checked once: the temporary is made, the target
    /// checked again and the rename done in it, whatever its path names meanwhile.
    dir: Dir,
    name: OsString,
    tmp_name: OsString,
    /// The temporary's path, for the signal-time clean-up only.
    tmp_path: PathBuf,
    /// `None` once committed.
    file: Option<File>,
}

/// Starts writing `path` as `kind` (see the crate's documentation for what is refused).
pub fn create(path: &Path, kind: Kind) -> Result<SafeFile, FileError> {
    let name = path
        .file_name()
        .ok_or_else(|| FileError::refuse(path, ErrorKind::InvalidInput, "does not name a file"))?;
    let dir_path = parent_dir(path);
    // The error names the file the user gave, and the directory as what is wrong with it.
    let dir = open_dir(dir_path).map_err(|e| {
        let inner = e.into_io();
        let why = format!("directory {}: {inner}", dir_path.display());
        FileError::new(path, io::Error::new(inner.kind(), why))
    })?;
    check_target(path, dir.stat_at(name).map_err(|e| FileError::new(path, e))?)?;
    let kept = &name.as_bytes()[..name.len().min(NAME_KEPT)];
    // `.NAME.zmem-tmp-PID.START-RANDOM`: a dot name, which collectors that read `*.prom`
    // (node_exporter) or `*.zpages` skip, with its owner as a PrivateTempDir's name has it.
    let mut ours = OsString::from(".");
    ours.push(OsStr::from_bytes(kept));
    ours.push(".");
    sweep_temporaries(&dir, ours.as_bytes());
    ours.push(format!("zmem-tmp-{}-", Owner::current().id()));
    let (file, tmp_name) = new_temporary(&dir, &ours, kind).map_err(|e| FileError::new(path, e))?;
    // SIGINT/SIGTERM remove it too, where they would otherwise end the process as it is.
    signals::protect();
    let tmp_path = dir_path.join(&tmp_name);
    signals::register(&tmp_path);
    let (target, name) = (path.to_path_buf(), name.to_os_string());
    Ok(SafeFile { target, dir, name, tmp_name, tmp_path, file: Some(file) })
}

/// A new file `PREFIX` + 8 random letters in `dir`, with `kind`'s mode; its name.
fn new_temporary(dir: &Dir, prefix: &OsStr, kind: Kind) -> io::Result<(File, OsString)> {
    loop {
        let mut name = prefix.to_os_string();
        name.push(random_part()?);
        match dir.create_file(&name, 0, kind.mode()) {
            Ok(f) => return Ok((f, name)),
            // 62^8 names: a clash is another writer's, or a planted name; draw again.
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
}

/// Removes the temporaries a killed run left for the same target name in `dir`
/// (`ours` is `.NAME.`): regular files of this uid whose owner no longer runs. Best effort.
fn sweep_temporaries(dir: &Dir, ours: &[u8]) {
    // Without /proc every owner would look gone: sweep nothing.
    if Owner::current().start == 0 {
        return;
    }
    let Ok(names) = dir.names() else { return };
    for name in names {
        let Some(rest) = name.as_bytes().strip_prefix(ours) else { continue };
        let dead = std::str::from_utf8(rest)
            .ok()
            .filter(|r| r.starts_with("zmem-tmp-"))
            .and_then(Owner::from_name)
            .is_some_and(|o| !o.is_alive());
        if !dead {
            continue;
        }
        let Ok(Some(st)) = dir.stat_at(&name) else { continue };
        if st.is_file() && st.uid == crate::check::euid() {
            let _ = dir.unlink(&name, false);
        }
    }
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
        self.file.as_ref().expect("a SafeFile holds its temporary until commit")
    }

    fn file_mut(&mut self) -> &mut File {
        self.file.as_mut().expect("a SafeFile holds its temporary until commit")
    }

    /// Syncs the file and renames it over the target, in the directory opened at `create`. The
    /// target is checked again first (a link or another user's file planted while it was
    /// written is refused, the temporary removed); one planted between that check and the
    /// rename is replaced, never written through.
    pub fn commit(mut self) -> Result<(), FileError> {
        let file = self.file.take().expect("commit is called once");
        let err = |e| FileError::new(&self.target, e);
        let done = (|| {
            file.sync_all().map_err(err)?;
            check_target(&self.target, self.dir.stat_at(&self.name).map_err(err)?)?;
            self.dir.rename(&self.tmp_name, &self.name).map_err(err)
        })();
        if done.is_err() {
            let _ = self.dir.unlink(&self.tmp_name, false);
        }
        // Renamed or removed: nothing left to clean up.
        signals::unregister(&self.tmp_path);
        done
    }
}

impl Drop for SafeFile {
    fn drop(&mut self) {
        // Uncommitted: the temporary goes.
        if self.file.take().is_some() {
            let _ = self.dir.unlink(&self.tmp_name, false);
            signals::unregister(&self.tmp_path);
        }
    }
}

impl Write for SafeFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file_mut().write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file_mut().flush()
    }
}

//! Private scratch directories: made 0700 under the temporary root, removed on drop and on
//! SIGINT/SIGTERM, swept by a later run when a kill left one.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{self, ErrorKind, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::check::{check_dir, euid, trusted_path};
use crate::dir::{Dir, random_part};
use crate::{FileError, signals};

/// A directory of this process's, 0700, named `PREFIX-PID.START-RANDOM` (START: the process's
/// start time in clock ticks since boot, so a reused pid is not taken for its owner). Removed
/// with everything in it when dropped, and on SIGINT or SIGTERM where zmem-files handles them
/// (see [`crate::cleanup_registered`]).
///
/// It is made with `mkdirat` in its parent, opened at once (`O_DIRECTORY|O_NOFOLLOW`) and checked
/// on that descriptor (a directory, this uid's, 0700), and its files are made with `openat` on
/// it: they land in the directory made whatever its path names later. The parent must be a
/// directory of root's or this uid's (another user may rename what is in a directory of theirs,
/// sticky or not), and so must every directory on its path, links resolved: so the paths this
/// hands out, which other processes open (`losetup`, `dd`, zram's `dict=`) and the clean-up
/// removes, name what was made, and no path through `/proc/self/fd` is needed.
#[derive(Debug)]
pub struct PrivateTempDir {
    path: PathBuf,
    dir: Dir,
}

impl PrivateTempDir {
    /// A new directory under `$TMPDIR` (else `/tmp`). `prefix` starts with `zmem-`.
    pub fn new(prefix: &str) -> Result<Self, FileError> {
        Self::new_in(&std::env::temp_dir(), prefix)
    }

    /// A new directory under `parent` (a swap file's directory the user chose, say), after
    /// sweeping what dead runs left there. `parent` may be writable by others only with the
    /// sticky bit, and it and the directories above it must be root's or this uid's.
    pub fn new_in(parent: &Path, prefix: &str) -> Result<Self, FileError> {
        assert!(
            prefix.starts_with("zmem-") && !prefix.contains('/'),
            "a PrivateTempDir's prefix is zmem-NAME, got {prefix:?}"
        );
        let real = trusted_path(parent)?;
        let at = |e| FileError::new(parent, e);
        let pdir = Dir::open(&real, true).map_err(at)?;
        check_dir(parent, pdir.stat().map_err(at)?)?;
        sweep(&real);
        signals::protect();
        let name = make_dir(&pdir, &format!("{prefix}-{}-", Owner::current().id())).map_err(at)?;
        let path = real.join(&name);
        signals::register(&path);
        match open_made(&pdir, OsStr::new(&name)) {
            Ok(dir) => Ok(Self { path, dir }),
            Err(e) => {
                let _ = pdir.unlink(OsStr::new(&name), true);
                signals::unregister(&path);
                Err(FileError::new(&path, e))
            }
        }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A new file `name` in it, 0600, open for reading and writing; its path beside it.
    pub fn create_file(&self, name: &str) -> Result<(File, PathBuf), FileError> {
        self.create_file_with(name, 0)
    }

    /// [`Self::create_file`] with `flags` added to the open (`O_DIRECT`).
    pub fn create_file_with(&self, name: &str, flags: i32) -> Result<(File, PathBuf), FileError> {
        assert!(!name.contains('/') && !name.is_empty(), "a file name, got {name:?}");
        let path = self.path.join(name);
        let f = self.dir.create_file(OsStr::new(name), flags, 0o600);
        Ok((f.map_err(|e| FileError::new(&path, e))?, path))
    }

    /// A new file `name` in it holding `bytes`; its path.
    pub fn write_file(&self, name: &str, bytes: &[u8]) -> Result<PathBuf, FileError> {
        let (mut f, path) = self.create_file(name)?;
        f.write_all(bytes).map_err(|e| FileError::new(&path, e))?;
        Ok(path)
    }

    /// Whether `m`, found at its path, is the directory made (only root or this uid could
    /// have moved it: its parent and the directories above are theirs).
    fn is_it(&self, m: &fs::Metadata) -> bool {
        let now = crate::dir::Stat::of(m);
        self.dir.stat().is_ok_and(|made| (now.dev, now.ino) == (made.dev, made.ino))
    }
}

/// `mkdirat` a new directory `PREFIX` + 8 random letters in `parent`, 0700; its name.
fn make_dir(parent: &Dir, prefix: &str) -> io::Result<String> {
    loop {
        let name = format!("{prefix}{}", random_part()?);
        match parent.mkdir(OsStr::new(&name), 0o700) {
            Ok(()) => return Ok(name),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
}

/// Opens the directory just made as `name` in `parent`, never through a link, sets it exactly
/// 0700 (the umask may have taken bits off; never let it decide) and checks that it is ours.
fn open_made(parent: &Dir, name: &OsStr) -> io::Result<Dir> {
    let dir = parent.open_dir_at(name)?;
    dir.set_mode(0o700)?;
    let st = dir.stat()?;
    if !st.is_dir() || st.uid != euid() || st.mode & 0o7777 != 0o700 {
        let why = format!("is not the private directory made (uid {}, mode {:o})", st.uid, st.mode);
        return Err(io::Error::new(ErrorKind::PermissionDenied, why));
    }
    Ok(dir)
}

impl Drop for PrivateTempDir {
    fn drop(&mut self) {
        signals::unregister(&self.path);
        match fs::symlink_metadata(&self.path) {
            // Removed already (cleanup_registered).
            Err(e) if e.kind() == ErrorKind::NotFound => return,
            Ok(m) if self.is_it(&m) => {}
            _ => {
                eprintln!("zmem: {} was moved or replaced; not removed", self.path.display());
                return;
            }
        }
        if let Err(e) = fs::remove_dir_all(&self.path)
            && e.kind() != ErrorKind::NotFound
        {
            eprintln!("zmem: could not remove {}: {e}", self.path.display());
        }
    }
}

/// A directory's owner as its name gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner {
    pid: u32,
    pub(crate) start: u64,
}

impl Owner {
    /// `PID.START`, as names carry it.
    pub(crate) fn id(self) -> String {
        format!("{}.{}", self.pid, self.start)
    }

    pub(crate) fn current() -> Self {
        let pid = std::process::id();
        Self { pid, start: start_time(pid).unwrap_or(0) }
    }

    /// `zmem-NAME-PID.START-RANDOM`, or `None` for any other name.
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        let rest = name.strip_prefix("zmem-")?;
        let (rest, random) = rest.rsplit_once('-')?;
        let (_, id) = rest.rsplit_once('-')?;
        let (pid, start) = id.split_once('.')?;
        // tempfile's random part (alphanumeric), or Python's `tempfile.mkdtemp`'s (also `_`).
        if random.len() != 8 || !random.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return None;
        }
        Some(Self { pid: pid.parse().ok()?, start: start.parse().ok()? })
    }

    /// Still running: its pid is there with the same start time. Where /proc cannot say, it is
    /// taken as alive (a directory kept too long costs little; one removed under a run, a run).
    pub(crate) fn is_alive(self) -> bool {
        match start_time(self.pid) {
            Ok(start) => start == self.start,
            Err(e) => e.kind() != ErrorKind::NotFound,
        }
    }
}

/// Field 22 of `/proc/PID/stat`: when the process started, in clock ticks after boot.
fn start_time(pid: u32) -> std::io::Result<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The name (field 2) is in parentheses and may hold anything; fields 3.. follow the last ')'.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    after
        .split_whitespace()
        .nth(22 - 3)
        .and_then(|f| f.parse().ok())
        .ok_or_else(|| std::io::Error::new(ErrorKind::InvalidData, "unreadable /proc/PID/stat"))
}

/// Removes from `parent` the [`PrivateTempDir`]s whose owner is gone (killed by SIGKILL or the
/// OOM killer, which run no code): directories (not links) named as ours, of this uid, whose pid
/// is not running with the start time the name gives. Another user's are never touched.
/// Returns how many were removed; what cannot be read or removed is left.
pub fn sweep(parent: &Path) -> usize {
    // Without /proc every owner would look gone: sweep nothing.
    if start_time(std::process::id()).is_err() {
        return 0;
    }
    let Ok(entries) = fs::read_dir(parent) else { return 0 };
    let me = euid();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name.to_str().and_then(Owner::from_name) else { continue };
        let Ok(m) = fs::symlink_metadata(entry.path()) else { continue };
        if !m.is_dir() || m.uid() != me || owner.is_alive() {
            continue;
        }
        if fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
pub(crate) fn name_for(pid: u32, start: u64) -> String {
    format!("zmem-test-{pid}.{start}-abcd1234")
}

#[cfg(test)]
pub(crate) fn own_start_time() -> u64 {
    Owner::current().start
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_as_made() {
        let o = Owner::from_name("zmem-dict-12.345-AbCd1234").unwrap();
        assert_eq!(o, Owner { pid: 12, start: 345 });
        let o = Owner::from_name("zmem-oracle-x-7.8-abcdefgh").unwrap();
        assert_eq!(o, Owner { pid: 7, start: 8 });
        // Python's mkdtemp (zmem-fleet's workers) adds `_` to the random part's letters.
        let o = Owner::from_name("zmem-fleet-9.10-ca6_tvdl").unwrap();
        assert_eq!(o, Owner { pid: 9, start: 10 });
        for bad in ["zmem-live.lock", "zmem-dict-12-abcd1234", "other-1.2-abcd1234", "zmem-a-1.2-x"]
        {
            assert_eq!(Owner::from_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn this_process_is_alive_and_a_reused_pid_is_not_its_owner() {
        let me = Owner::current();
        assert!(me.start > 0);
        assert!(me.is_alive());
        assert!(!Owner { start: me.start + 1, ..me }.is_alive());
    }
}

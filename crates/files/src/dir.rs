//! A directory held open. What zmem-files creates, checks, renames and removes in it is named
//! relative to this descriptor (`openat`, `fstatat`, `renameat`, `unlinkat`, `mkdirat`), so a
//! component of its path swapped for a link after it was opened and checked changes nothing:
//! the calls still land in the directory that was checked.

use std::ffi::{CString, OsStr};
use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind};
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What the checks read of a file: its type and permission bits, owner, and identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub(crate) mode: u32,
    pub(crate) uid: u32,
    pub(crate) dev: u64,
    pub(crate) ino: u64,
}

impl Stat {
    pub(crate) fn of(m: &fs::Metadata) -> Self {
        Self { mode: m.mode(), uid: m.uid(), dev: m.dev(), ino: m.ino() }
    }

    fn file_type(self) -> u32 {
        self.mode & libc::S_IFMT
    }

    pub(crate) fn is_dir(self) -> bool {
        self.file_type() == libc::S_IFDIR
    }

    pub(crate) fn is_file(self) -> bool {
        self.file_type() == libc::S_IFREG
    }

    pub(crate) fn is_symlink(self) -> bool {
        self.file_type() == libc::S_IFLNK
    }

    /// Words for what a file that is not a regular one is.
    pub(crate) fn what(self) -> &'static str {
        match self.file_type() {
            libc::S_IFDIR => "a directory",
            libc::S_IFCHR | libc::S_IFBLK => "a device",
            libc::S_IFIFO => "a FIFO",
            libc::S_IFSOCK => "a socket",
            libc::S_IFLNK => "a symbolic link",
            _ => "not a regular file",
        }
    }
}

/// `name` for a system call: one path component, without NUL.
fn c_name(name: &OsStr) -> io::Result<CString> {
    if name.is_empty() || name.as_bytes().contains(&b'/') {
        return Err(io::Error::new(ErrorKind::InvalidInput, "not a file name"));
    }
    CString::new(name.as_bytes()).map_err(|_| io::Error::new(ErrorKind::InvalidInput, "a NUL byte"))
}

/// A system call's return value as a result (`-1`: `errno`).
fn cvt(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc == -1 { Err(io::Error::last_os_error()) } else { Ok(rc) }
}

/// An open directory (`O_DIRECTORY|O_CLOEXEC`, read-only).
#[derive(Debug)]
pub(crate) struct Dir(File);

impl Dir {
    /// Opens `path`, a directory; with `nofollow`, its last component may not be a link.
    pub(crate) fn open(path: &Path, nofollow: bool) -> io::Result<Self> {
        let extra = if nofollow { libc::O_NOFOLLOW } else { 0 };
        // std adds O_CLOEXEC.
        let f = OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY | extra).open(path)?;
        Ok(Self(f))
    }

    /// The directory `name` in it, never through a link.
    pub(crate) fn open_dir_at(&self, name: &OsStr) -> io::Result<Self> {
        let c = c_name(name)?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: a valid descriptor and a NUL-terminated name; openat has no other preconditions.
        let fd = cvt(unsafe { libc::openat(self.fd(), c.as_ptr(), flags) })?;
        // SAFETY: openat succeeded: `fd` is an open descriptor owned by nothing else.
        Ok(Self(unsafe { File::from_raw_fd(fd) }))
    }

    fn fd(&self) -> libc::c_int {
        self.0.as_raw_fd()
    }

    /// The directory itself (fstat).
    pub(crate) fn stat(&self) -> io::Result<Stat> {
        self.0.metadata().map(|m| Stat::of(&m))
    }

    /// `name` in it, a link not followed; `None` where nothing is there.
    pub(crate) fn stat_at(&self, name: &OsStr) -> io::Result<Option<Stat>> {
        let c = c_name(name)?;
        let mut st = MaybeUninit::<libc::stat>::uninit();
        // SAFETY: a valid descriptor, a NUL-terminated name and room for one stat.
        let rc = unsafe {
            libc::fstatat(self.fd(), c.as_ptr(), st.as_mut_ptr(), libc::AT_SYMLINK_NOFOLLOW)
        };
        match cvt(rc) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        }
        // SAFETY: fstatat succeeded, so it filled `st`.
        let st = unsafe { st.assume_init() };
        let (mode, uid) = (st.st_mode, st.st_uid);
        Ok(Some(Stat { mode, uid, dev: st.st_dev, ino: st.st_ino }))
    }

    /// A new file `name` in it (`O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC|O_RDWR`, `flags` added:
    /// `O_DIRECT`), never an existing one or through a link; its mode `mode` by `fchmod`, so the
    /// umask decides nothing.
    pub(crate) fn create_file(&self, name: &OsStr, flags: i32, mode: u32) -> io::Result<File> {
        let c = c_name(name)?;
        let flags = libc::O_CREAT
            | libc::O_EXCL
            | libc::O_NOFOLLOW
            | libc::O_CLOEXEC
            | libc::O_RDWR
            | flags;
        // SAFETY: a valid descriptor and a NUL-terminated name; O_CREAT's mode is passed.
        let fd = cvt(unsafe { libc::openat(self.fd(), c.as_ptr(), flags, 0o600 as libc::c_uint) })?;
        // SAFETY: openat succeeded: `fd` is an open descriptor owned by nothing else.
        let f = unsafe { File::from_raw_fd(fd) };
        set_mode(&f, mode)?;
        Ok(f)
    }

    /// A new directory `name` in it, `mode` as the umask leaves it (see [`set_mode`]).
    pub(crate) fn mkdir(&self, name: &OsStr, mode: u32) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: a valid descriptor and a NUL-terminated name.
        cvt(unsafe { libc::mkdirat(self.fd(), c.as_ptr(), mode as libc::mode_t) }).map(drop)
    }

    /// Renames `from` over `to`, both in it.
    pub(crate) fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (f, t) = (c_name(from)?, c_name(to)?);
        // SAFETY: valid descriptors and NUL-terminated names.
        cvt(unsafe { libc::renameat(self.fd(), f.as_ptr(), self.fd(), t.as_ptr()) }).map(drop)
    }

    /// Removes `name` from it (an empty directory with `dir`).
    pub(crate) fn unlink(&self, name: &OsStr, dir: bool) -> io::Result<()> {
        let c = c_name(name)?;
        let flags = if dir { libc::AT_REMOVEDIR } else { 0 };
        // SAFETY: a valid descriptor and a NUL-terminated name.
        cvt(unsafe { libc::unlinkat(self.fd(), c.as_ptr(), flags) }).map(drop)
    }

    /// The names in it, read through `/proc/self/fd` (the descriptor, not the path).
    pub(crate) fn names(&self) -> io::Result<Vec<std::ffi::OsString>> {
        let me = PathBuf::from(format!("/proc/self/fd/{}", self.fd()));
        fs::read_dir(me)?.map(|e| e.map(|e| e.file_name())).collect()
    }

    /// Sets its own mode (fchmod).
    pub(crate) fn set_mode(&self, mode: u32) -> io::Result<()> {
        set_mode(&self.0, mode)
    }
}

/// fchmod: the umask narrowed the creating call's mode and must decide no mode of zmem's.
fn set_mode(f: &File, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    f.set_permissions(fs::Permissions::from_mode(mode))
}

/// Eight random letters and digits, as a temporary's or a [`crate::PrivateTempDir`]'s name
/// ends (and as [`crate::sweep`] reads it).
pub(crate) fn random_part() -> io::Result<String> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut b = [0u8; 8];
    // SAFETY: `b` has room for the 8 bytes asked for.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != b.len() as isize {
        return Err(if n < 0 { io::Error::last_os_error() } else { io::Error::other("getrandom") });
    }
    Ok(b.iter().map(|x| ALPHABET[usize::from(*x) % ALPHABET.len()] as char).collect())
}

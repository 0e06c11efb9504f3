//! SIGINT and SIGTERM remove the live [`crate::PrivateTempDir`]s, and the temporaries of
//! uncommitted [`crate::SafeFile`]s, before the process ends.
//!
//! A signal handler may only do async-signal-safe things, and removing a directory tree is not
//! one, so the handler writes the signal's number to a pipe and a thread of ours does the work:
//! it removes every registered directory, puts back the default action and raises the signal
//! again, so the process ends with the status it would have had without us.
//!
//! The handler is installed only where a signal still has its default action. A command that
//! handles SIGINT/SIGTERM itself (zmem-kernel's `SignalStop`: `trace record`, `validate`; the
//! Python interpreter's SIGINT) keeps its handler and its graceful stop, whose way out drops the
//! directories; a handler put in while ours was there saves ours and puts it back. Code that
//! ends the process without unwinding calls [`cleanup_registered`] first.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard, Once};

/// The live temporary directories and files, by path. A [`crate::PrivateTempDir`]'s path is
/// checked as one nobody but root and this uid can change (`check::trusted_path`). A
/// [`crate::SafeFile`]'s temporary is made and removed through its directory's descriptor, but
/// its path here may name another place by the time a signal comes (a link swapped on the way):
/// that is accepted, since the clean-up only removes what is at that path under the
/// temporary's own random name (`.NAME.zmem-tmp-PID.START-RANDOM`), which nothing holds but
/// zmem's temporary or a file its planter made for it, and `remove_dir_all` follows no link.
static REGISTRY: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// The pipe's write end (-1: no watcher thread, nothing installed).
static PIPE: AtomicI32 = AtomicI32::new(-1);
/// The process whose watcher thread reads the pipe (a forked child has no such thread).
static OWNER: AtomicI32 = AtomicI32::new(0);
static WATCHER: Once = Once::new();

fn registry() -> MutexGuard<'static, Vec<PathBuf>> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) fn register(p: &Path) {
    registry().push(p.to_path_buf());
}

pub(crate) fn unregister(p: &Path) {
    registry().retain(|q| q != p);
}

/// Removes every live [`crate::PrivateTempDir`] and uncommitted [`crate::SafeFile`]'s
/// temporary of this process now (their drops then find nothing to do): for a way out that runs
/// no destructors, such as `std::process::exit`.
pub fn cleanup_registered() {
    let paths = std::mem::take(&mut *registry());
    for p in paths {
        // A few tries: another thread may be adding a file to a directory meanwhile.
        for _ in 0..3 {
            let removed = match std::fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(&p),
                Ok(_) => std::fs::remove_file(&p),
                Err(e) => Err(e),
            };
            if removed.is_ok() || !p.exists() {
                break;
            }
        }
    }
}

/// Starts the watcher (once) and installs the handler for SIGINT and SIGTERM where either has
/// its default action. Best effort: where a pipe or a thread cannot be had, nothing is
/// installed and the next run's sweep removes what a signal leaves.
pub(crate) fn protect() {
    WATCHER.call_once(start_watcher);
    if PIPE.load(Ordering::Relaxed) < 0 {
        return;
    }
    for sig in [libc::SIGINT, libc::SIGTERM] {
        install_if_default(sig);
    }
}

fn start_watcher() {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return;
    }
    // SAFETY: pipe2 succeeded: fds[0] is an open descriptor owned by nothing else.
    let mut read_end = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fds[0]) });
    // The handler must never block: a full pipe drops the byte (one is enough).
    // SAFETY: fds[1] is an open descriptor; F_SETFL has no other preconditions.
    unsafe { libc::fcntl(fds[1], libc::F_SETFL, libc::O_NONBLOCK) };
    let spawned = std::thread::Builder::new().name("zmem-files-signals".into()).spawn(move || {
        let mut b = [0u8; 1];
        loop {
            match read_end.read(&mut b) {
                Ok(1) => end_by(i32::from(b[0])),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                _ => return,
            }
        }
    });
    if spawned.is_err() {
        // SAFETY: fds[1] is open and ours; the thread and its read end are gone.
        unsafe { libc::close(fds[1]) };
        return;
    }
    // SAFETY: getpid has no preconditions and cannot fail.
    OWNER.store(unsafe { libc::getpid() }, Ordering::Relaxed);
    PIPE.store(fds[1], Ordering::Relaxed);
}

/// The watcher's answer to `sig`: clean up, then end as `sig`'s default action would.
fn end_by(sig: i32) -> ! {
    cleanup_registered();
    default_and_raise(sig);
    // Not reached where the default action ends the process; the shell's status for it if so.
    std::process::exit(128 + sig)
}

/// Gives `sig` its default action back and raises it. Async-signal-safe.
fn default_and_raise(sig: libc::c_int) {
    // SAFETY: SIG_DFL is a valid disposition for SIGINT and SIGTERM; raise has no preconditions.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    // Async-signal-safe calls only: getpid, write, signal, raise.
    let fd = PIPE.load(Ordering::Relaxed);
    // SAFETY: getpid has no preconditions and cannot fail.
    let forked = unsafe { libc::getpid() } != OWNER.load(Ordering::Relaxed);
    if fd < 0 || forked {
        // A child between fork and exec has no watcher: end as without us.
        default_and_raise(sig);
        return;
    }
    let b = sig as u8;
    // SAFETY: `b` is one readable byte; a failed write (a full pipe) is dropped on purpose.
    unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
}

fn install_if_default(sig: libc::c_int) {
    // SAFETY: all zeros is a valid sigaction (SIG_DFL, empty mask, no flags).
    let mut now: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only reads the current one into `now`.
    if unsafe { libc::sigaction(sig, std::ptr::null(), &mut now) } != 0
        || now.sa_sigaction != libc::SIG_DFL
    {
        return;
    }
    // SAFETY: as above.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = on_signal as *const () as usize;
    act.sa_flags = libc::SA_RESTART;
    // SAFETY: `act` is fully initialised, its handler async-signal-safe.
    unsafe { libc::sigaction(sig, &act, std::ptr::null_mut()) };
}

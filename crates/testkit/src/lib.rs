//! zmem-testkit: the one way zmem's live tests (those that need root, kernel zram, a memory
//! cgroup, zswap, swap areas, or a tool such as Prometheus) re-execute a child, wait for it and
//! skip. Test support only (`publish = false`, a dev-dependency); it knows nothing of zmem's
//! crates, so any of them can use it, zmem-kernel's own unit tests included.
//!
//! **Skips.** libtest has no runtime skip: a test that returns early is counted as passed. So
//! every test that may skip is `#[ignore = "live: ..."]`, which `cargo test` reports as
//! ignored, and scripts/test runs them in a second pass (`cargo test --workspace --tests --
//! --ignored`). Each starts with [`live`] (which also takes the live lock) or [`may_skip`]:
//! where it cannot run here it prints `SKIPPED <test>: <reason>` on stderr (not captured by
//! libtest) and appends a line to the file `$ZMEM_LIVE_REPORT`, from which scripts/test prints
//! `live tests: N ran, M skipped, F failed` and each skip's reason. Where this machine can run
//! live tests ([`machine_can_run_live_tests`]: root, `/sys/class/zram-control`, a memory
//! cgroup), a skip is a failure, so CI on such a machine runs them all, unless
//! `ZMEM_LIVE_SKIP_OK=1` allows it. [`Live::skip_optional`] is the exception: a missing
//! optional tool (Prometheus, Chromium) or a state of the machine the test does not control is
//! reported as skipped but never fails.
//!
//! **One at a time.** [`live`] holds an exclusive `flock` on [`LOCK_PATH`] until the test ends,
//! so two live tests (of one binary run in parallel, of two workspaces, or a person's
//! `flock /tmp/zmem-live.lock ...` experiment) never make swap areas, cgroups or kdamonds at the
//! same time.
//!
//! **Children.** A live test that needs a program of its own re-executes its own test binary:
//! [`reexec`] builds `current_exe --include-ignored --exact <this test> --nocapture
//! --test-threads 1` with [`CHILD_ENV`] set to `role=arg`, and the test's first line,
//! [`child`], runs the child's body and exits in that process (no separate `#[test]` entry
//! point that passes at once). The child says it is ready with [`say_ready`]; the parent reads
//! that line with [`Ready`] (libtest may print `test NAME ... ` before it on the same line, so
//! the line is split on the marker, never on whitespace).

use std::cell::Cell;
use std::fmt::Display;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The environment variable that puts a re-executed test binary in child mode: `role=arg`.
pub const CHILD_ENV: &str = "ZMEM_TESTKIT_CHILD";
/// The file each test's outcome is appended to (one line each; scripts/test sets it).
pub const REPORT_ENV: &str = "ZMEM_LIVE_REPORT";
/// `1` allows skips where the machine could run live tests (they fail otherwise).
pub const SKIP_OK_ENV: &str = "ZMEM_LIVE_SKIP_OK";
/// The lock every live test holds while it runs (shared with people's live experiments).
pub const LOCK_PATH: &str = "/tmp/zmem-live.lock";
/// The marker of a child's ready line.
pub const READY: &str = "zmem-testkit-ready";

/// Whether this machine can run every live test: root, kernel zram and a memory cgroup. Where
/// it can, a skip is a failure (unless `ZMEM_LIVE_SKIP_OK=1`).
pub fn machine_can_run_live_tests() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    root && Path::new("/sys/class/zram-control").exists() && memory_cgroup()
}

fn memory_cgroup() -> bool {
    if Path::new("/sys/fs/cgroup/memory").is_dir() {
        return true;
    }
    std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers")
        .is_ok_and(|c| c.split_whitespace().any(|x| x == "memory"))
}

/// This test's name as libtest runs it (`module::name`), from the thread libtest names after it.
fn test_name() -> String {
    std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .expect("zmem-testkit runs inside a libtest test thread")
        .to_string()
}

/// `binary::test` for the report: the test binary's name without Cargo's hash.
fn qualified(name: &str) -> String {
    let exe = std::env::current_exe().ok();
    let stem = exe.as_deref().and_then(Path::file_stem).map(|s| s.to_string_lossy().into_owned());
    let bin = stem.as_deref().map(|s| s.rsplit_once('-').map_or(s, |(b, _)| b)).unwrap_or("?");
    format!("{bin}::{name}")
}

fn report(line: &str) {
    if let Some(path) = std::env::var_os(REPORT_ENV) {
        // O_APPEND: one write per line, so parallel tests' lines do not interleave.
        if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(path) {
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
    }
}

/// Where a test is in its run, and what it holds: the live lock, for a [`live`] test. Dropped
/// at the end of the test; the outcome (ran, or failed where the test panicked) is reported then.
#[derive(Debug)]
#[must_use = "the test is reported as run when this is dropped at its end"]
pub struct Live {
    name: String,
    _lock: Option<File>,
    /// Skipped (reported already).
    done: Cell<bool>,
}

/// A live test's start: `None` (the test returns) when `why_not` gives a reason, reported as a
/// skip (a failure where the machine can run live tests, see the crate's documentation); else
/// the guard that holds the live lock until the test ends.
pub fn live(why_not: Option<String>) -> Option<Live> {
    let mut t = may_skip();
    if let Some(why) = why_not {
        t.skip(&why);
        return None;
    }
    t._lock = Some(lock());
    Some(t)
}

/// The start of a test that may skip but touches nothing the live tests share (no lock).
pub fn may_skip() -> Live {
    Live { name: qualified(&test_name()), _lock: None, done: Cell::new(false) }
}

/// Takes the live lock, waiting for whoever holds it.
fn lock() -> File {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(LOCK_PATH)
        .or_else(|_| File::open(LOCK_PATH))
        .unwrap_or_else(|e| panic!("cannot open the live lock {LOCK_PATH}: {e}"));
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: flock on a descriptor this function owns; it blocks until the lock is ours.
        while unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            let e = std::io::Error::last_os_error();
            assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "flock {LOCK_PATH}: {e}");
        }
    }
    f
}

impl Live {
    /// The test cannot run here: reported as skipped. Where the machine can run live tests this
    /// panics instead (the test fails), unless `ZMEM_LIVE_SKIP_OK=1`.
    /// The guard keeps the lock until it is dropped, after what the test made is undone:
    /// `return live.skip(why)` with the other guards declared after it.
    pub fn skip(&self, why: impl Display) {
        self.done.set(true);
        let strict =
            machine_can_run_live_tests() && std::env::var(SKIP_OK_ENV).map_or(true, |v| v != "1");
        if strict {
            report(&format!("failed\t{}\tskipped where live tests can run: {why}", self.name));
            panic!(
                "SKIPPED {}: {why}\nThis machine can run live tests (root, zram, a memory \
                 cgroup), so a skip is a failure here; {SKIP_OK_ENV}=1 allows it.",
                self.name
            );
        }
        self.say_skipped(why);
    }

    /// The test cannot run here for want of an optional tool, or for a state of the machine it
    /// does not control: reported as skipped, never a failure.
    pub fn skip_optional(&self, why: impl Display) {
        self.done.set(true);
        self.say_skipped(why);
    }

    fn say_skipped(&self, why: impl Display) {
        let why = why.to_string().replace(['\n', '\t'], " ");
        // Straight to the stream: libtest captures only print!/eprint! of a test thread.
        let _ = writeln!(std::io::stderr(), "SKIPPED {}: {why}", self.name);
        report(&format!("skipped\t{}\t{why}", self.name));
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if !self.done.get() {
            let outcome = if std::thread::panicking() { "failed" } else { "ran" };
            report(&format!("{outcome}\t{}", self.name));
        }
    }
}

/// Child mode: where this process is the child [`reexec`] started for `role`, runs `body` with
/// its argument and exits (status 0 when `body` returns); else returns at once. The first line
/// of the test that re-executes itself.
pub fn child(role: &str, body: impl FnOnce(&str)) {
    let Ok(v) = std::env::var(CHILD_ENV) else { return };
    let (r, arg) = v.split_once('=').unwrap_or((v.as_str(), ""));
    assert_eq!(r, role, "{CHILD_ENV}={v} in a test whose child is {role}");
    body(arg);
    let _ = std::io::stdout().flush();
    std::process::exit(0);
}

/// The command that re-executes this test binary as the calling test's child `role` (see
/// [`child`]), `arg` passed to its body. stdin is null and stdout piped (for [`Ready`]), stderr
/// inherited; the caller may change any of them, and spawns it (in a cgroup, say).
pub fn reexec(role: &str, arg: &str) -> Command {
    reexec_fn(role, arg)()
}

/// [`reexec`] as a function that builds the command again at each call, from any thread (the
/// test's name is taken now, on the test's thread): for code that starts the child itself,
/// maybe several times (`zmem validate`'s player).
pub fn reexec_fn(role: &str, arg: &str) -> impl Fn() -> Command + Send + Sync + Clone + 'static {
    let (name, env) = (test_name(), format!("{role}={arg}"));
    move || command(&name, &env)
}

fn command(name: &str, env: &str) -> Command {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut c = Command::new(exe);
    c.args(["--include-ignored", "--exact", name, "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    default_signals(&mut c);
    c
}

/// Gives a child SIGINT's and SIGTERM's default actions back: tests run in the background of a
/// non-interactive shell inherit SIGINT ignored, and code that leaves an ignored signal ignored
/// (as zmem-files' handlers do) would then never see the signal a test sends.
pub fn default_signals(c: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec only signal(2), which is async-signal-safe, is called.
    unsafe {
        c.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        });
    }
}

/// The child's ready line: [`READY`] and `payload`, flushed (on a line of its own).
pub fn say_ready(payload: impl Display) {
    let mut out = std::io::stdout();
    writeln!(out, "\n{READY} {payload}").expect("stdout");
    out.flush().expect("stdout");
}

/// The parent's side of the handshake: a thread reads the child's stdout and hands over the
/// payload of each ready line (what follows [`READY`], trimmed).
#[derive(Debug)]
pub struct Ready {
    rx: mpsc::Receiver<String>,
}

impl Ready {
    /// Starts reading `stdout` (the child's, taken from it).
    pub fn watch(stdout: impl Read + Send + 'static) -> Self {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(payload) = ready_payload(&line)
                    && tx.send(payload).is_err()
                {
                    break;
                }
            }
        });
        Self { rx }
    }

    /// The payload of a ready line that came, if one did.
    pub fn try_take(&self) -> Option<String> {
        self.rx.try_recv().ok()
    }

    /// The payload of the next ready line; an error where none came within `timeout` or the
    /// child's stdout closed first.
    pub fn wait(&self, timeout: Duration) -> Result<String, String> {
        self.rx.recv_timeout(timeout).map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => {
                format!("no ready line from the child in {timeout:?}")
            }
            mpsc::RecvTimeoutError::Disconnected => {
                "the child's stdout closed before its ready line (did it exit?)".into()
            }
        })
    }
}

/// What follows the marker on a ready line (libtest's `test NAME ... ` may come before it).
pub fn ready_payload(line: &str) -> Option<String> {
    line.split_once(READY).map(|(_, rest)| rest.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_lines_are_split_on_the_marker() {
        let l = format!("test live_child ... {READY} 7f00 6000000");
        assert_eq!(ready_payload(&l).as_deref(), Some("7f00 6000000"));
        assert_eq!(ready_payload(READY).as_deref(), Some(""));
        assert_eq!(ready_payload("running 1 test"), None);
    }

    #[test]
    fn the_report_names_the_binary_without_its_hash() {
        let q = qualified("m::t");
        assert!(q.ends_with("::m::t") && q.starts_with("zmem_testkit"), "{q}");
    }

    #[test]
    fn a_ready_line_is_read_through_a_pipe() {
        let text = format!("running 1 test\ntest x ... {READY} paged-out\n");
        let r = Ready::watch(std::io::Cursor::new(text.into_bytes()));
        assert_eq!(r.wait(Duration::from_secs(5)).unwrap(), "paged-out");
        assert!(r.wait(Duration::from_secs(5)).unwrap_err().contains("closed"));
    }
}

/// Kills and reaps a child however the test ends (a failed assertion included).
#[derive(Debug)]
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A child's body for the reclaim tests: 64 MiB of numbered pages, the first tenth written
/// every 50 ms (a hot set), the rest left idle, for `arg` seconds; it says ready first.
pub fn hot_tenth(arg: &str) {
    let secs: u64 = arg.parse().expect("seconds");
    let mut buf = vec![0u8; 64 << 20];
    for (n, p) in buf.chunks_mut(4096).enumerate() {
        p[..8].copy_from_slice(&(n as u64).to_le_bytes());
        p[100] = 1;
    }
    say_ready(std::process::id());
    let end = std::time::Instant::now() + Duration::from_secs(secs);
    while std::time::Instant::now() < end {
        for p in buf[..(64 << 20) / 10].chunks_mut(4096) {
            p[200] = p[200].wrapping_add(1);
        }
        std::hint::black_box(&buf);
        std::thread::sleep(Duration::from_millis(50));
    }
}

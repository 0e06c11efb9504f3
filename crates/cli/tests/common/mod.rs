//! What the CLI's tests share: the binary run, a refusal checked, a scratch zram device, a
//! child process and a directory that clean themselves up, a free loopback port, one HTTP
//! GET, and writes that reach zram now.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// Why a test that reads every process's memory cannot run here: not root (the effective uid,
/// /proc/self/status's second `Uid:`).
pub fn not_root() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let uid = status.lines().find_map(|l| l.strip_prefix("Uid:"));
    let root = uid.and_then(|u| u.split_whitespace().nth(1)).is_some_and(|e| e == "0");
    (!root).then(|| "not root: the processes' memory cannot be read".to_string())
}

/// `zmem ARGS`, run to its end.
pub fn zmem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zmem")).args(args).output().expect("the zmem binary runs")
}

/// The reason a refused command gave (its one line without `zmem: `), checked to be a refusal
/// as every command makes one: exit status 2, no panic, one line starting `zmem: `.
#[track_caller]
pub fn fails_cleanly_with(out: &Output, what: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{what} panicked:\n{stderr}");
    assert_eq!(out.status.code(), Some(2), "{what}: exit status; stderr:\n{stderr}");
    assert!(stderr.starts_with("zmem: "), "{what}: stderr does not start with `zmem: `:\n{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{what}: more than one line:\n{stderr}");
    stderr["zmem: ".len()..].trim_end().to_string()
}

pub const CONTROL: &str = "/sys/class/zram-control";

/// A hot-added zram device, reset and removed when dropped (if still there).
pub struct ZramDevice(pub u32);

impl ZramDevice {
    pub fn add() -> Self {
        let id = std::fs::read_to_string(format!("{CONTROL}/hot_add")).expect("hot_add");
        Self(id.trim().parse().expect("hot_add gives a number"))
    }

    pub fn attr(&self, name: &str) -> PathBuf {
        PathBuf::from(format!("/sys/block/zram{}/{name}", self.0))
    }

    pub fn mm_stat(&self) -> Vec<u64> {
        std::fs::read_to_string(self.attr("mm_stat"))
            .unwrap()
            .split_whitespace()
            .map(|f| f.parse().unwrap())
            .collect()
    }

    pub fn name(&self) -> String {
        format!("zram{}", self.0)
    }

    /// The device's read I/Os (`stat`'s first field).
    pub fn read_ios(&self) -> u64 {
        let s = std::fs::read_to_string(self.attr("stat")).unwrap();
        s.split_whitespace().next().unwrap().parse().unwrap()
    }

    /// Reset then remove, retrying while the exporter has it open for a round (-EBUSY).
    pub fn remove(&self) -> bool {
        for _ in 0..100 {
            if !self.attr("reset").exists() {
                return true;
            }
            if std::fs::write(self.attr("reset"), "1").is_ok()
                && std::fs::write(format!("{CONTROL}/hot_remove"), self.0.to_string()).is_ok()
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for ZramDevice {
    fn drop(&mut self) {
        self.remove();
    }
}

/// A child process, killed and reaped when dropped.
pub struct Reaped(pub Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A directory of one test's own under the temporary directory, removed with everything in it
/// when dropped, the test passing or not.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A fresh directory, made 0700 with a name no other run has (never one found there).
    pub fn new(tag: &str) -> Self {
        use std::os::unix::fs::DirBuilderExt;
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        loop {
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |t| t.subsec_nanos());
            let name = format!("zmem-cli-{tag}-{}-{n}-{nanos:x}", std::process::id());
            let p = std::env::temp_dir().join(name);
            match std::fs::DirBuilder::new().mode(0o700).create(&p) {
                Ok(()) => return Self(p),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => panic!("{}: {e}", p.display()),
            }
        }
    }

    /// `name` in it.
    pub fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.0.join(name)
    }

    /// A file `name` in it holding `bytes`.
    pub fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn free_loopback_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// GET `path` from 127.0.0.1:`port` (with `Accept: accept`): the status code and the body.
pub fn get(port: u16, path: &str, accept: Option<&str>) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let accept = accept.map(|a| format!("Accept: {a}\r\n")).unwrap_or_default();
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n{accept}Connection: close\r\n\r\n")?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    Ok((code, body.to_string()))
}

pub fn on_path(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Writes `data` at the device's start with O_DIRECT, so the pages reach zram now (not the
/// block device's page cache).
pub fn write_direct(dev: &Path, data: &[u8]) {
    // O_DIRECT needs a page-aligned buffer.
    let mut buf = vec![0u8; data.len() + 4096];
    let off = buf.as_ptr().align_offset(4096);
    buf[off..off + data.len()].copy_from_slice(data);
    let mut f =
        std::fs::OpenOptions::new().write(true).custom_flags(libc::O_DIRECT).open(dev).unwrap();
    f.write_all(&buf[off..off + data.len()]).unwrap();
    f.sync_all().unwrap();
}

/// Why a live test that hot-adds a zram device cannot run here, if it cannot.
pub fn zram_why_not() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        Some("not root (hot-adding a zram device needs root)".to_string())
    } else if !Path::new(CONTROL).join("hot_add").exists() {
        Some(format!("no kernel zram ({CONTROL}/hot_add)"))
    } else {
        None
    }
}

/// Prometheus and promtool (an optional tool, `.ci/run` installs them): why not, if missing.
pub fn prometheus_missing() -> Option<&'static str> {
    (!on_path("prometheus") || !on_path("promtool"))
        .then_some("prometheus or promtool not installed (apt-get install prometheus)")
}

/// Asserts `text` passes `promtool check metrics` (Prometheus's own linter of the exposition;
/// the caller checks it is installed).
pub fn promtool_passes(text: &str) {
    let mut p = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool starts");
    p.stdin.take().expect("promtool's stdin").write_all(text.as_bytes()).expect("to promtool");
    let out = p.wait_with_output().expect("promtool ends");
    assert!(
        out.status.success(),
        "promtool check metrics failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

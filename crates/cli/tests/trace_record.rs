//! `zmem trace record` as a user runs it on the live kernel: a process recorded by page-out
//! sampling, ended by SIGTERM part way. It must exit 0 keeping what it saw (the trace and its
//! page set written, the early end said), and leave no swap device behind. A live test: skipped,
//! reported by zmem-testkit, without root or kernel zram. Bad arguments fail with one line and exit 2.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn zmem() -> Command {
    Command::new(env!("CARGO_BIN_EXE_zmem"))
}

/// The active swap areas' names (/proc/swaps' first column).
fn swaps() -> std::collections::BTreeSet<String> {
    let text = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    text.lines().skip(1).filter_map(|l| l.split_whitespace().next()).map(String::from).collect()
}

/// Kills and reaps a child when dropped, on panic too.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
#[ignore = "live: needs root and kernel zram (scripts/test runs it)"]
fn sigterm_ends_a_page_out_recording_through_its_cleanup() {
    // SAFETY: geteuid has no preconditions.
    let why = if unsafe { libc::geteuid() } != 0 {
        Some("not root")
    } else if !std::path::Path::new("/sys/class/zram-control").exists() {
        Some("no kernel zram (/sys/class/zram-control)")
    } else {
        None
    };
    let Some(_live) = zmem_testkit::live(why.map(String::from)) else { return };
    // Removed when dropped, the test passing or not.
    let dir = tempfile::Builder::new().prefix("zmem-cli-record-").tempdir().unwrap();
    let trace = dir.path().join("sleep.trace");
    let target = Reaped(Command::new("sleep").arg("120").spawn().expect("sleep runs"));
    let before = swaps();
    let rec = zmem()
        .args(["trace", "record", "--pid", &target.0.id().to_string(), "--duration", "120"])
        .args(["--interval", "50", "--method", "page-out", "-o"])
        .arg(&trace)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut rec = Reaped(rec);
    // Recording has begun once its swap device is on. Only the names count: a swap area of
    // another process (a build's live test, a validate run) may fill or go meanwhile.
    let t0 = Instant::now();
    let ours = loop {
        let new: Vec<String> = swaps().difference(&before).cloned().collect();
        if !new.is_empty() || t0.elapsed() > Duration::from_secs(20) {
            break new;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!ours.is_empty(), "no swap device appeared for the recording");
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signals our own child.
    unsafe { libc::kill(rec.0.id() as libc::pid_t, libc::SIGTERM) };
    let status = rec.0.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut rec.0.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{status}: {stderr}");
    assert!(stderr.contains("ended early: stopped by a signal"), "{stderr}");
    assert!(stderr.contains("recorded with page-out"), "{stderr}");
    let left = swaps();
    assert!(ours.iter().all(|d| !left.contains(d)), "the recording's {ours:?} is gone: {left:?}");

    let info = zmem().args(["trace", "info", "--json"]).arg(&trace).output().unwrap();
    assert!(info.status.success(), "{}", String::from_utf8_lossy(&info.stderr));
    let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(v["origin"], "page-out", "{v}");
    let mut pages = trace.into_os_string();
    pages.push(".pages");
    assert!(std::fs::metadata(&pages).unwrap().len() > 0, "the page set is written");
}

#[test]
fn bad_record_arguments_fail_with_one_line() {
    let me = std::process::id().to_string();
    for (args, want) in [
        (vec!["--method", "idle"], "unknown recording method"),
        (vec!["--interval", "0"], "interval must be above 0"),
    ] {
        let out = zmem()
            .args(["trace", "record", "--pid", &me, "--duration", "1", "-o", "/nonexistent/t"])
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

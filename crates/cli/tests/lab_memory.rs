//! The lab's stated memory bound: `zmem lab` on a page set far larger than its sample peaks
//! under [`BOUND`] of resident memory, as it does on a live device of any size (docs/BENCHMARKS.md,
//! "Bounded memory": 203 MB on 40,000 pages, 227 MB on a 148,455-page zram device). The sample
//! (6144 pages by default) is drawn while the input is read, so the input's size does not count.
//!
//! The peak is the child's own (`wait4`'s rusage), not the test process's.

use std::process::{Command, Stdio};

/// The bound the lab states for its default sample.
const BOUND: u64 = 256 << 20;

/// Spawns `zmem ARGS` and returns its exit status and peak resident bytes.
fn run_measured(args: &[&str]) -> (i32, u64) {
    let child = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("zmem starts");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet waited for (the `Child` handle is never waited
    // on); `status` and `usage` are valid for writes.
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(rc, pid, "wait4: {}", std::io::Error::last_os_error());
    std::mem::forget(child);
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 };
    (code, usage.ru_maxrss as u64 * 1024)
}

#[test]
fn the_lab_stays_under_its_bound_on_a_large_input() {
    // Removed when dropped, so on a failed run too.
    let dir = tempfile::Builder::new().prefix("zmem-lab-memory-").tempdir().unwrap();
    let set = dir.path().join("large.zps");
    let set = set.to_str().unwrap();
    // 40,000 pages (164 MB): more than six times the sample.
    let (code, _) = run_measured(&["gen", "--kind", "mixed", "--pages", "40000", "-o", set]);
    assert_eq!(code, 0, "zmem gen");
    let (code, peak) = run_measured(&["lab", "--observe", "0", "--min-time-ms", "0", set]);
    // The 164 MB go before the checks, as they did.
    dir.close().unwrap();
    assert_eq!(code, 0, "zmem lab");
    assert!(peak > 0, "the child's rusage was read");
    assert!(
        peak < BOUND,
        "zmem lab peaked at {} MB, over its {} MB bound",
        peak >> 20,
        BOUND >> 20
    );
}

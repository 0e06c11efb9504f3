//! `zmem damon` from the command line: bad input ends with one line on stderr starting
//! `zmem: ` and exit status 2, before anything is written to DAMON's interface (the numbers and
//! the cgroup paths are checked first; the scheme itself is zmem-kernel's `reclaim::damon`,
//! tested against fake sysfs trees). No test starts a kdamond on the machine: where DAMON's
//! admin interface is free it would run beside whatever the machine does.

mod common;

use common::{fails_cleanly_with, zmem};

/// `zmem ARGS` fails in one line (exit 2) that says `want`.
fn refused(args: &[&str], want: &str) {
    let out = zmem(args);
    let err = fails_cleanly_with(&out, &format!("{args:?}"));
    assert!(err.contains(want), "{args:?}: {err}");
}

#[test]
fn bad_input_is_refused_in_one_line_before_any_write() {
    let d = tempfile::tempdir().expect("tempdir");
    let bad_pid = d.path().join("damon.pid");
    std::fs::write(&bad_pid, "not a pid\n").expect("write");
    let bad_pid = bad_pid.to_str().expect("utf-8");
    let cases: [(&[&str], &str); 6] = [
        (&["start", "--cold-age", "0"], "cold"),
        (&["start", "--exclude", "system.slice"], "starts with /"),
        (&["start", "--cpu-budget", "0"], "CPU budget"),
        (&["start", "--psi-limit", "200"], "PSI limit"),
        (&["stop", "--pid-file", "/nonexistent/damon.pid"], "/nonexistent/damon.pid"),
        (&["stop", "--pid-file", bad_pid], "not a pid"),
    ];
    for (args, want) in cases {
        refused(&[&["damon"], args].concat(), want);
    }
}

/// `zmem memcg-reclaim`: bad targets refused in one line; on a machine whose memory controller
/// is not on cgroup v2 (this one: v1), refused saying so.
#[test]
fn memcg_reclaim_refuses_bad_targets_and_a_machine_without_v2_memory() {
    let cases: [(&[&str], &str); 4] = [
        (&["--target", "/app"], "not PATH=BYTES"),
        (&["--target", "/app=lots"], "not a number of bytes"),
        (&["--target", "/=5"], "not a cgroup path"),
        (&["--target", "/a=1", "--cpu-budget", "0"], "CPU budget"),
    ];
    for (args, want) in cases {
        refused(&[&["memcg-reclaim"], args].concat(), want);
    }
    if zmem_kernel::cgroups::memory_controller_version(std::path::Path::new("/")) == Some(2) {
        println!("skipped the v1 refusal: this machine's memory controller is on cgroup v2");
        return;
    }
    refused(
        &["memcg-reclaim", "--target", "/zmem-test-none=4096", "--duration", "1"],
        "memory.reclaim",
    );
}

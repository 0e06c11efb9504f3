//! `zmem damon` from the command line: bad input ends with one line on stderr starting
//! `zmem: ` and exit status 2, before anything is written to DAMON's interface (the numbers and
//! the cgroup paths are checked first; the scheme itself is zmem-kernel's `reclaim::damon`,
//! tested against fake sysfs trees). No test starts a kdamond on the machine: where DAMON's
//! admin interface is free it would run beside whatever the machine does.

use std::process::{Command, Output};

fn zmem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zmem")).args(args).output().expect("the zmem binary runs")
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
        let mut all = vec!["damon"];
        all.extend_from_slice(args);
        let out = zmem(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with("zmem: ") && err.lines().count() == 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

//! `zmem agent` from the command line. Bad input ends with one line on stderr starting `zmem: `
//! and exit status 2. Live: the agent run for a few seconds over a child holding 64 MiB (T =
//! 1 s, half a core, `--pid` the child, a zram swap device of the test's own): exit 0, its status file
//! written (0644, the schema, the child's idle memory paged out), a progress line at the end.

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output};
use std::time::Duration;

fn zmem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zmem")).args(args).output().expect("the zmem binary runs")
}

#[test]
fn bad_input_is_refused_in_one_line() {
    let cases: [(&[&str], &str); 4] = [
        (&["--cold-age", "0"], "cold"),
        (&["--exclude", "a name far too long for comm"], "--exclude"),
        (&["--cpu-budget", "-1"], "--cpu-budget"),
        (&["--config", "/nonexistent/agent.json"], "/nonexistent/agent.json"),
    ];
    for (args, want) in cases {
        let mut all = vec!["agent"];
        all.extend_from_slice(args);
        let out = zmem(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with("zmem: ") && err.lines().count() == 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
#[ignore = "live: needs root, kernel zram and process_madvise (scripts/test runs it)"]
fn the_agent_runs_pages_out_and_writes_its_status() {
    zmem_testkit::child("holder", zmem_testkit::hot_tenth);
    let why = zmem_kernel::harness::unavailable_reason()
        .or_else(zmem_kernel::record::page_out::unavailable_reason);
    let Some(_live) = zmem_testkit::live(why) else { return };
    // A swap area of the test's own, where page-outs go (removed when dropped).
    let _swap = zmem_kernel::harness::page_out_swap(256 << 20).expect("a swap area");
    let d = tempfile::tempdir().expect("tempdir");
    let status = d.path().join("agent.json");
    let mut child = zmem_testkit::reexec("holder", "30").spawn().unwrap();
    let ready = zmem_testkit::Ready::watch(child.stdout.take().unwrap());
    let child = zmem_testkit::Killed(child);
    let pid = ready.wait(Duration::from_secs(30)).unwrap();
    let out = zmem(&[
        "agent",
        "--cold-age",
        "1",
        "--period",
        "1",
        "--duration",
        "6",
        "--cpu-budget",
        "50",
        // Pausing on pressure is the agent's unit tests' (reclaim::agent); here any build or
        // test beside can lift memory PSI over 0.1 % and pause every tick of six.
        "--psi-limit",
        "100",
        "--pid",
        &pid,
        "--status",
        status.to_str().unwrap(),
    ]);
    drop(child);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("zmem agent: "), "a progress line at the end: {err}");
    let meta = std::fs::metadata(&status).expect("the status file");
    assert_eq!(meta.permissions().mode() & 0o777, 0o644);
    let s: zmem_kernel::reclaim::AgentStatus =
        serde_json::from_str(&std::fs::read_to_string(&status).unwrap()).expect("a status");
    assert_eq!(s.schema, zmem_kernel::reclaim::STATUS_SCHEMA);
    assert_eq!(s.config.pids, Some(vec![pid.parse().unwrap()]));
    // The child's idle nine tenths (57.6 MiB) are idle for far more than T: most went out.
    assert!(s.stats.paged_out_bytes > 32 << 20, "{:?}", s.stats);
}

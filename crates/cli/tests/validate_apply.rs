//! `zmem validate apply` from the command line. Bad input ends with one line on stderr starting
//! `zmem: `, exit status 2, no panic and nothing made (each fails before the set-up). Live: the
//! decision of the validate crate's fixture (zram lzo-rle, process_madvise at T = 3 s) applied
//! to a child holding 64 MiB for 10 s (the hidden `--seconds`), with `--json` and `--html`: exit
//! 0, the first line says what was applied against what was predicted, the last that the machine
//! is as it was, a progress line came on stderr, both files are written, and /proc/swaps reads
//! as before.

use std::time::Duration;

use tempfile::TempDir;

const FIXTURE: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../validate/tests/fixtures/apply-zram-proactive.json");

mod common;
use common::{fails_cleanly_with, zmem};

/// A directory of this test's own, removed when dropped, the test passing or not.
fn dir(name: &str) -> TempDir {
    tempfile::Builder::new().prefix(&format!("zmem-cli-apply-{name}-")).tempdir().unwrap()
}

#[test]
fn bad_input_is_refused_in_one_line_before_anything_is_made() {
    let dir = dir("bad");
    let d = dir.path();
    let not_a_report = d.join("r.json");
    std::fs::write(&not_a_report, "{\"decision\": 3}").unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["--pid", "x", FIXTURE], "\"x\" is not a pid"),
        (&["--pid", "4294967294", FIXTURE], "no such running process"),
        (&["--minutes", "0", FIXTURE], "--minutes"),
        (&["--exclude", "a,b\u{7}", FIXTURE], "--exclude"),
        (&[not_a_report.to_str().unwrap()], "not a zmem lab report"),
    ];
    for (args, want) in cases {
        let mut all = vec!["validate", "apply"];
        all.extend_from_slice(args);
        let msg = fails_cleanly_with(&zmem(&all), &format!("{args:?}"));
        assert!(msg.contains(want), "{args:?}: {msg}");
    }
    let missing = d.join("missing.json");
    let msg =
        fails_cleanly_with(&zmem(&["validate", "apply", missing.to_str().unwrap()]), "missing");
    assert!(msg.contains("missing.json"), "{msg}");
}

fn swap_areas() -> Vec<String> {
    let text = std::fs::read_to_string("/proc/swaps").unwrap();
    text.lines().skip(1).filter_map(|l| l.split_whitespace().next().map(str::to_string)).collect()
}

#[test]
#[ignore = "live: needs root, kernel zram and process_madvise (scripts/test runs it)"]
fn a_decision_is_applied_watched_undone_and_written() {
    zmem_testkit::child("holder", zmem_testkit::hot_tenth);
    let why = zmem_kernel::harness::unavailable_reason()
        .or_else(zmem_kernel::record::page_out::unavailable_reason);
    let Some(_live) = zmem_testkit::live(why) else { return };
    let dir = dir("live");
    let d = dir.path();
    let before = swap_areas();
    let mut child = zmem_testkit::reexec("holder", "30").spawn().unwrap();
    let ready = zmem_testkit::Ready::watch(child.stdout.take().unwrap());
    let child = zmem_testkit::Killed(child);
    let pid = ready.wait(Duration::from_secs(30)).unwrap();
    let (json, html) = (d.join("apply.json"), d.join("apply.html"));
    let out = zmem(&[
        "validate",
        "apply",
        FIXTURE,
        "--seconds",
        "10",
        "--pid",
        &pid,
        "--json",
        json.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    drop(child);
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with(
            "Applied zram lzo-rle with proactive reclaim (process_madvise) at T = 3 s for 0:10: \
             saved "
        ),
        "{stdout}"
    );
    assert!(stdout.ends_with("The machine is as it was.\n"), "{stdout}");
    assert!(stderr.contains("zmem validate apply: 0:10/0:10: moved out "), "{stderr}");
    let report = std::fs::read_to_string(&json).unwrap();
    assert!(report.contains("\"restored\": true") && report.contains("\"samples\""));
    assert!(std::fs::read_to_string(&html).unwrap().contains("<polyline"));
    assert_eq!(swap_areas(), before);
}

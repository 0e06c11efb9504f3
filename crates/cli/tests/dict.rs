//! `zmem dict train`: trains on a generated page file and writes a dictionary zram can load;
//! bad input fails with one line `zmem: ...` and exit status 2.

use std::process::Command;

mod common;
use common::{Scratch, fails_cleanly_with, zmem};

fn dir(test: &str) -> Scratch {
    Scratch::new(&format!("dict-{test}"))
}

fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

#[track_caller]
fn fails_cleanly(args: &[&str]) -> String {
    fails_cleanly_with(&zmem(args), &format!("{args:?}"))
}

/// `n` generated mixed pages in `d`'s `mixed.pages`.
fn mixed_pages(d: &Scratch, n: u32) -> std::path::PathBuf {
    let pages = d.join("mixed.pages");
    let out = zmem(&["gen", "--kind", "mixed", "--pages", &n.to_string(), "-o", s(&pages)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    pages
}

#[test]
fn trains_writes_and_reports() {
    let d = dir("train");
    let pages = mixed_pages(&d, 400);
    for algo in ["zstd", "lz4"] {
        let dict = d.join(format!("{algo}.dict"));
        let out = zmem(&[
            "dict",
            "train",
            "--algo",
            algo,
            "--size",
            "16K",
            "--holdout",
            "--json",
            s(&pages),
            "-o",
            s(&dict),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{algo}: {stderr}");
        let bytes = std::fs::read(&dict).unwrap();
        assert!(!bytes.is_empty() && bytes.len() <= 16 << 10, "{algo}: {} bytes", bytes.len());
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let e = &report["effect"];
        assert_eq!(e["algo"], algo);
        assert_eq!(e["dict_bytes"], bytes.len());
        assert_eq!(e["pages"], 200);
        assert_eq!(e["verified"], true);
        assert!(e["ratio_without"].as_f64().unwrap() > 1.0, "{report}");
        assert!(e["ratio_with"].as_f64().unwrap() > 1.0, "{report}");
        assert_eq!(report["trained_on_pages"], 200);
        assert_eq!(report["measured_on"], "other half");
        let params = report["algorithm_params"].as_str().unwrap();
        assert!(params.starts_with(&format!("algo={algo} dict=/")), "{params}");
    }
    // The text report names the file, both ratios and the line for zram.
    let dict = d.join("text.dict");
    let out = zmem(&["dict", "train", "--algo", "lz4", "--level", "2", s(&pages), "-o", s(&dict)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("without:") && stdout.contains("with:"), "{stdout}");
    assert!(stdout.contains("algo=lz4 level=2 dict=/"), "{stdout}");
}

/// A dictionary that could not be measured (its scratch directory refused: `$TMPDIR` writable
/// by all without the sticky bit) is not left behind: exit 2, one line, no file.
#[test]
fn a_failed_measurement_leaves_no_dictionary() {
    use std::os::unix::fs::PermissionsExt;
    let d = dir("refused-tmp");
    let pages = mixed_pages(&d, 64);
    let tmp = d.join("open-tmp");
    std::fs::create_dir(&tmp).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o777)).unwrap();
    let dict = d.join("out.dict");
    let out = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(["dict", "train", "--algo", "zstd", "--size", "4K", s(&pages), "-o", s(&dict)])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("sticky"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!dict.exists(), "a dictionary was left behind");
    let left: Vec<_> = std::fs::read_dir(&*d).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

#[test]
fn bad_input_fails_with_one_line() {
    let d = dir("bad");
    let pages = d.join("mixed.pages");
    assert!(zmem(&["gen", "--kind", "mixed", "--pages", "40", "-o", s(&pages)]).status.success());
    let dict = d.join("out.dict");
    let msg = fails_cleanly(&["dict", "train", "--algo", "lzo", s(&pages), "-o", s(&dict)]);
    assert!(msg.contains("unknown algorithm \"lzo\""), "{msg}");
    let empty = d.join("empty.pages");
    std::fs::write(&empty, b"").unwrap();
    let msg = fails_cleanly(&["dict", "train", "--algo", "zstd", s(&empty), "-o", s(&dict)]);
    assert!(msg.contains("an empty file: no pages"), "{msg}");
    let msg = fails_cleanly(&[
        "dict",
        "train",
        "--algo",
        "zstd",
        "--size",
        "lots",
        s(&pages),
        "-o",
        s(&dict),
    ]);
    assert!(msg.starts_with("--size: "), "{msg}");
    let msg = fails_cleanly(&[
        "dict",
        "train",
        "--algo",
        "zstd",
        "--size",
        "64K",
        "--samples",
        "2",
        s(&pages),
        "-o",
        s(&dict),
    ]);
    assert!(msg.contains("too few"), "{msg}");
    assert!(!dict.exists(), "no dictionary is written on failure");
}

/// `--live`: trained on this machine's processes' memory (what a decision from evidence's
/// apply script runs), written 0600, and nothing else written; without pages or `--live`,
/// refused.
#[test]
#[ignore = "live: reads every process's memory, needs root (scripts/test runs it)"]
fn a_dictionary_trains_on_this_machines_memory() {
    let Some(_live) = zmem_testkit::live(common::not_root()) else { return };
    let d = dir("live");
    let out = d.0.join("zram.dict");
    let o = zmem(&["dict", "train", "--live", "--algo", "zstd", "--json", "-o", s(&out)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(r["trained_on_pages"].as_u64().unwrap() > 0, "{r}");
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(&out).unwrap();
    assert!(meta.len() > 0 && meta.permissions().mode() & 0o777 == 0o600);
    let left: Vec<_> = std::fs::read_dir(&d.0).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, [std::ffi::OsString::from("zram.dict")]);
}

#[test]
fn training_needs_pages_or_live() {
    let why = fails_cleanly(&["dict", "train", "--algo", "zstd", "-o", "/tmp/never"]);
    assert!(why.contains("--live") || why.contains("PAGES"), "{why}");
}

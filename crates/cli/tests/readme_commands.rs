//! The README's commands as a newcomer runs them: `zmem lab` with no arguments (its first
//! command, `cargo run --release -- lab`), and the apply section's `zmem lab --apply-script
//! apply.sh --undo-script undo.sh`, taken from the README itself, so a changed flag or a broken
//! default fails here. The lab runs once with the apply section's arguments (the first command's
//! plus two output files): it must exit 0, open with its decision, and write two scripts that
//! are valid shell. Nothing is applied.

use std::path::Path;
use std::process::Command;

/// The `zmem lab` invocations the README shows, as argument lists after `lab`.
fn readme_lab_commands() -> Vec<Vec<String>> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .expect("README.md");
    readme
        .lines()
        .filter_map(|l| l.trim().strip_prefix("cargo run --release -- lab"))
        .map(|rest| {
            let rest = rest.split('#').next().unwrap_or("");
            rest.split_whitespace().map(str::to_string).collect()
        })
        .collect()
}

#[test]
fn the_readme_lab_commands_run_as_written() {
    let cmds = readme_lab_commands();
    // The first command (no arguments) and the apply section's.
    assert!(
        cmds.iter().any(|c| c.is_empty()),
        "README's first command is `cargo run --release -- lab`: {cmds:?}"
    );
    let apply = cmds
        .iter()
        .find(|c| c.iter().any(|a| a == "--apply-script"))
        .expect("the README shows how to write the apply script");
    // The scripts' directory, removed when dropped, the test passing or not.
    let dir = tempfile::Builder::new().prefix("zmem-readme-").tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .arg("lab")
        .args(apply)
        .current_dir(dir.path())
        .output()
        .expect("zmem runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "zmem lab {apply:?}: {}", String::from_utf8_lossy(&out.stderr));
    // The decision first (after the source and kernel lines), its evidence after it.
    let d = stdout.find("Decision: ").expect("a decision");
    assert!(d < stdout.find("The evidence:").expect("the evidence"), "{stdout}");
    // This machine's memory pressure, read (never changed) around the observation window.
    let p = stdout.find("Pressure now: memory is ").expect("the pressure line");
    assert!(p > d && stdout[p..].contains(" available, "), "{stdout}");
    for file in ["apply.sh", "undo.sh"] {
        let path = dir.path().join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(text.starts_with("#!/bin/sh\n"), "{file}");
        let check = Command::new("sh").arg("-n").arg(&path).output().unwrap();
        assert!(check.status.success(), "{file}: {}", String::from_utf8_lossy(&check.stderr));
    }
}

//! `zmem evidence`: the lab's findings without the pages, judged by `zmem lab EVIDENCE` to the
//! decision `zmem lab PAGES` makes; what does not belong with evidence is refused in one line.

mod common;
use common::{Scratch, fails_cleanly_with, zmem};

fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

fn json(out: &std::process::Output) -> serde_json::Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// What a candidate is, untimed: its name, pool and saving.
fn untimed(r: &serde_json::Value) -> Vec<(String, u64, i64)> {
    let c = r["candidates"].as_array().unwrap();
    c.iter()
        .map(|c| {
            let name = c["name"].as_str().unwrap().to_string();
            (name, c["pool_bytes"].as_u64().unwrap(), c["memory_saved_bytes"].as_i64().unwrap())
        })
        .collect()
}

/// The same page file judged from its pages and from its evidence: the same decision (kind and
/// configuration) and the same untimed figures for every candidate; the evidence file is 0600
/// and holds no page of the set.
#[test]
fn a_decision_from_evidence_is_the_decision_from_the_pages() {
    let d = Scratch::new("evidence-same");
    let (pages, ev) = (d.0.join("mixed.zpages"), d.0.join("host.evidence"));
    let made_pages = zmem(&["gen", "--kind", "mixed", "--pages", "1024", "-o", s(&pages)]);
    assert!(made_pages.status.success(), "{}", String::from_utf8_lossy(&made_pages.stderr));
    let made = zmem(&["evidence", "-o", s(&ev), "--min-time-ms", "0", s(&pages)]);
    let said = String::from_utf8_lossy(&made.stderr);
    assert!(made.status.success(), "{said}");
    assert!(said.contains("1024 pages") && said.contains("no page bytes"), "{said}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&ev).unwrap().permissions().mode() & 0o777, 0o600);
    // Generous budgets: every verified candidate fits, however busy the machine was.
    let budgets = ["--cpu-budget", "1000", "--latency-budget", "1000000"];
    let lab = |extra: &[&str], input: &std::path::Path| {
        let mut args = vec!["lab", "--json"];
        args.extend_from_slice(&budgets);
        args.extend_from_slice(extra);
        args.push(s(input));
        json(&zmem(&args))
    };
    let from_pages = lab(&["--min-time-ms", "0"], &pages);
    let from_evidence = lab(&[], &ev);
    let decision =
        |r: &serde_json::Value| (r["decision"]["kind"].clone(), r["decision"]["config"].clone());
    // Equal savings are broken by clearly less CPU, a clock's measure taken in each run: where
    // either decision rests on it, the two may differ; every other decision is the same.
    let by_cpu = |r: &serde_json::Value| r["decision"]["reason"]["by"] == "less_cpu";
    if !by_cpu(&from_pages) && !by_cpu(&from_evidence) {
        let why = |r: &serde_json::Value| r["decision"]["reason"].to_string();
        assert_eq!(
            decision(&from_evidence),
            decision(&from_pages),
            "{} / {}",
            why(&from_evidence),
            why(&from_pages)
        );
    }
    assert_eq!(untimed(&from_evidence), untimed(&from_pages));
    assert_eq!(from_evidence["source"]["pages"], 1024);
    // Not one page of the set is in the file (each mixed page is unlike the others).
    let set = std::fs::read(&pages).unwrap();
    let text = std::fs::read(&ev).unwrap();
    let body = &set[set.len() - 4096..];
    let probe =
        body.iter().position(|&b| b != 0).map_or(&body[..64], |i| &body[i..(i + 64).min(4096)]);
    assert!(!text.windows(probe.len()).any(|w| w == probe), "a page's bytes are in the evidence");
}

/// Options that measure cannot judge an evidence file, options that judge are not evidence's,
/// and a file that only looks like evidence is refused with why.
#[test]
fn what_does_not_belong_with_evidence_is_refused() {
    let d = Scratch::new("evidence-refused");
    let (pages, ev) = (d.0.join("mixed.zpages"), d.0.join("e.evidence"));
    assert!(zmem(&["gen", "--kind", "mixed", "--pages", "96", "-o", s(&pages)]).status.success());
    assert!(zmem(&["evidence", "-o", s(&ev), "--min-time-ms", "0", s(&pages)]).status.success());
    let why = fails_cleanly_with(&zmem(&["lab", "--max-pages", "10", s(&ev)]), "lab --max-pages");
    assert!(why.contains("max-pages") && why.contains("zmem evidence"), "{why}");
    let out = zmem(&["evidence", "-o", s(&d.0.join("x")), "--cpu-budget", "5", s(&pages)]);
    let why = fails_cleanly_with(&out, "evidence --cpu-budget");
    assert!(why.contains("--cpu-budget"), "{why}");
    // Judging options are the judge's: a budget changes the decision's budgets.
    let r = json(&zmem(&["lab", "--json", "--cpu-budget", "3", s(&ev)]));
    assert_eq!(r["budgets"]["cpu_percent_of_core"], 3.0);
    let fake = d.0.join("fake.evidence");
    std::fs::write(&fake, br#"{"format":"zmem-evidence","version":1,"#).unwrap();
    let why = fails_cleanly_with(&zmem(&["lab", s(&fake)]), "lab on a truncated file");
    assert!(why.contains("not zmem evidence"), "{why}");
    // Written never through a link someone planted.
    let link = d.0.join("planted");
    std::os::unix::fs::symlink(d.0.join("elsewhere"), &link).unwrap();
    let out = zmem(&["evidence", "-o", s(&link), "--min-time-ms", "0", s(&pages)]);
    fails_cleanly_with(&out, "evidence through a symlink");
    assert!(!d.0.join("elsewhere").exists());
}

/// From this machine's processes: the evidence names no process (no pid, no process name, no
/// cgroup path) unless asked, and `zmem lab` judges it.
#[test]
#[ignore = "live: reads every process's memory, needs root (scripts/test runs it)"]
fn evidence_from_this_machine_names_no_process() {
    let Some(_live) = zmem_testkit::live(common::not_root()) else { return };
    let d = Scratch::new("evidence-live");
    let ev = d.0.join("host.evidence");
    let args = ["--source", "processes", "--observe", "3", "--no-cold", "--max-pages", "2048"];
    let made = zmem(&[&["evidence", "-o", s(&ev), "--min-time-ms", "0"][..], &args].concat());
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let text = std::fs::read_to_string(&ev).unwrap();
    let me = std::process::id();
    for needle in [format!("\"pid\":{me},"), "\"comm\":\"evidence-".into(), ".slice".into()] {
        assert!(!text.contains(&needle), "{needle} is in the evidence");
    }
    let r = json(&zmem(&["lab", "--json", s(&ev)]));
    assert_eq!(r["source"]["kind"], "captured");
    assert!(r["decision"]["kind"].is_string());
    // Asked for, the ids stay.
    let kept = d.0.join("kept.evidence");
    let made =
        zmem(&[&["evidence", "-o", s(&kept), "--pids", "--min-time-ms", "0"][..], &args].concat());
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let f: serde_json::Value = serde_json::from_slice(&std::fs::read(&kept).unwrap()).unwrap();
    assert_eq!(f["identifies"]["pids"], true);
}

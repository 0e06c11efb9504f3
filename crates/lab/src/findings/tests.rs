use std::time::Duration;

use super::*;
use crate::judge::judge;
use crate::{LabOptions, NoProgress, Policy, measure_beside};
use zmem_kernel::cold::ProcessCold;

const MIB: u64 = 1 << 20;
const SECRET: &[u8] = b"SECRET-TOKEN-7f3a91 ";

/// The built-in set's first pages with every eighth one a page of a secret, repeated (what a
/// dictionary trained on them would hold).
fn pages(n: usize) -> Vec<u8> {
    let set = zmem_pages::builtin::default_set_with(4096).unwrap();
    let mut v = set.bytes()[..n * 4096].to_vec();
    for page in v.chunks_exact_mut(4096).step_by(8) {
        for (j, b) in page.iter_mut().enumerate() {
            *b = SECRET[j % SECRET.len()];
        }
    }
    v
}

fn source(n: u64) -> Source {
    Source {
        kind: "captured".into(),
        detail: "12 processes (postgres, sshd) on db-7".into(),
        pages: n,
        page_size: 4096,
        fallback_reason: None,
    }
}

/// Findings of `n` pages with what a capture of processes on a live machine carries: each
/// page's process, a cold curve by process, cgroups with their processes and a limit, and the
/// machine's proactive reclaim tools.
fn findings(n: usize, policies: Vec<Policy>) -> Findings {
    let mut c = crate::operating::tests::curve(
        &[10, 30, 60],
        &[300 * MIB, 290 * MIB, 280 * MIB],
        400 * MIB,
    );
    let proc_cold = |pid: u32, comm: &str, cgroup: &str, cold: u64| ProcessCold {
        mappings: 3,
        memory_cgroup: Some(cgroup.into()),
        ..ProcessCold::steady(pid, comm, 200 * MIB, vec![cold; 3])
    };
    c.per_process = vec![
        proc_cold(4242, "postgres", "/system.slice/postgres.service", 180 * MIB),
        proc_cold(777, "sshd", "/system.slice/ssh.service", 100 * MIB),
    ];
    c.skipped.reasons = vec!["31337: gone".into()];
    let mut opts =
        LabOptions { min_time: Duration::ZERO, threads: 2, policies, ..LabOptions::default() };
    opts.operating.cold = Some(c);
    opts.operating.this_machine = true;
    opts.operating.page_pids = Some((0..n).map(|i| if i % 3 == 0 { 777 } else { 4242 }).collect());
    opts.operating.cgroup_pids = vec![("/system.slice/postgres.service".into(), vec![4242])];
    opts.operating.cgroup_limits = vec![("/system.slice/postgres.service".into(), 512 * MIB)];
    opts.proactive.abilities = Some(crate::proactive::Abilities {
        damon: Some("taken".into()),
        memory_reclaim: Some("cgroup v1".into()),
        process_madvise: None,
        already: Vec::new(),
    });
    opts.host = [("host".to_string(), "db-7".to_string())].into();
    let p = pages(n);
    measure_beside(&p, source(n as u64), &mut opts, &NoProgress, |_| Ok(())).unwrap()
}

fn json(v: impl Serialize) -> serde_json::Value {
    serde_json::to_value(v).unwrap()
}

/// `v` with every `path` field taken out (cgroup paths, renamed in a file), and the cold bytes
/// by cgroup, keyed by them (their values are compared apart).
fn without_paths(mut v: serde_json::Value) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                // `cold_by_cgroup` is keyed by path.
                m.retain(|k, _| k != "path" && k != "cold_by_cgroup");
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

/// Judged where they were measured, or written to a file and read back elsewhere: the same
/// report, every figure, timings included (they are carried, not measured again).
#[test]
fn findings_read_back_from_a_file_judge_to_the_same_report() {
    let f = findings(384, Vec::new());
    let here = judge(&f).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("host.evidence");
    write(&f, &path).unwrap();
    assert!(is_evidence(&path));
    let back = read(&path).unwrap();
    assert_eq!(json(&back), json(&f), "what the file holds is what was measured");
    let there = judge(&back).unwrap();
    assert_eq!(json(&there), json(&here));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
}

/// The kernel's work is priced at the speed the findings carry, wherever they are judged: a
/// faster machine's findings cost less CPU (the same traffic, less kernel work per swap), and
/// findings from before the speed was measured are priced at the reference machine's.
#[test]
fn findings_are_priced_at_the_speed_they_carry() {
    let mut f = findings(384, Vec::new());
    let cpu = |f: &Findings| -> Vec<f64> {
        judge(f).unwrap().candidates.iter().map(|c| c.cpu_secs_per_sec).collect()
    };
    f.kernel_speed = crate::speed::KernelSpeed {
        probe_ns: Some(1000.0),
        overhead: crate::speed::overhead_at(1000.0),
    };
    let p50 = |f: &Findings| -> Vec<u64> {
        judge(f).unwrap().candidates.iter().map(|c| c.swap_in_p50_ns).collect()
    };
    let (fast, fast_p50) = (cpu(&f), p50(&f));
    f.kernel_speed.overhead = crate::speed::overhead_at(3000.0);
    let (slow, slow_p50) = (cpu(&f), p50(&f));
    // The fault's price reaches every swap-in end to end too: 2 us more per fault.
    let moved: Vec<_> = fast_p50.iter().zip(&slow_p50).filter(|(a, _)| **a > 0).collect();
    let two_us = (crate::speed::FAULT_PER_PROBE * 2000.0).round() as u64;
    assert!(moved.len() > 10, "{fast_p50:?}");
    assert!(moved.iter().all(|(a, b)| **b - **a == two_us), "{fast_p50:?} {slow_p50:?}");
    assert!(f.rates.swap_outs_per_sec + f.rates.swap_ins_per_sec > 0.0, "{:?}", f.rates);
    // Every candidate that swaps ("none" costs nothing either way).
    let pairs: Vec<_> = fast.iter().zip(&slow).filter(|(_, b)| **b > 0.0).collect();
    assert!(pairs.len() > 10 && pairs.iter().all(|(a, b)| a < b), "{fast:?} {slow:?}");
    let mut v = json(&f);
    v.as_object_mut().unwrap().remove("kernel_speed");
    let old: Findings = serde_json::from_value(v).unwrap();
    assert_eq!(old.kernel_speed, crate::speed::reference());
}

/// What could name a process or a service is replaced, consistently, so the decision is the
/// same: its kind, configuration, savings and operating point.
#[test]
fn findings_for_a_file_name_nobody_and_judge_the_same() {
    let f = findings(384, Vec::new());
    let plain = for_file(f.clone(), Identify::default());
    let text = serde_json::to_string(&plain).unwrap();
    for needle in ["postgres", "sshd", "ssh.service", "system.slice", "db-7 ("] {
        assert!(!text.contains(needle), "{needle} is in the file");
    }
    // Every pid the file holds is renumbered (a bare number in the text could be a timing's).
    let op = &plain.operating;
    let cold_pids = op.cold.iter().flat_map(|c| c.per_process.iter().map(|p| p.pid));
    let pids: Vec<u32> = op.page_pids.iter().flatten().copied().chain(cold_pids).collect();
    assert!(!pids.is_empty() && pids.iter().all(|&p| p == 1 || p == 2), "{pids:?}");
    let reasons = op.cold.as_ref().map(|c| c.skipped.reasons.clone());
    assert_eq!(reasons, Some(vec!["1 left out".to_string()]), "a reason names its pid");
    assert_eq!(plain.identifies, Identify::default());
    assert_eq!(plain.host.get("host").map(String::as_str), Some("db-7"), "the fleet's key");
    let (a, b) = (judge(&f).unwrap().decision, judge(&plain).unwrap().decision);
    assert_eq!((a.kind, &a.config), (b.kind, &b.config));
    assert_eq!(a.memory_saved_bytes, b.memory_saved_bytes);
    assert_eq!(a.memory_saved_ci, b.memory_saved_ci);
    assert_eq!(without_paths(json(&a.operating_point)), without_paths(json(&b.operating_point)));
    let by_cgroup = |d: &crate::decision::Decision| {
        let k = d.operating_point.as_ref().and_then(|o| o.cold.as_ref());
        let mut v: Vec<u64> =
            k.map_or(Vec::new(), |k| k.cold_by_cgroup.values().copied().collect());
        v.sort_unstable();
        v
    };
    assert_eq!(by_cgroup(&a), by_cgroup(&b), "the same bytes under renamed cgroups");
    assert_eq!(json(&a.proactive), json(&b.proactive));
    // Asked for, they stay.
    let all = for_file(f.clone(), Identify::ALL);
    assert_eq!(json(&all.operating), json(&f.operating));
    assert_eq!(all.source, f.source);
}

/// Paths renamed keep what the judge compares: equal paths stay equal, one below another stays
/// below it, and two different ones stay different.
#[test]
fn cgroup_paths_are_renamed_component_by_component() {
    let mut f = findings(64, vec![Policy::single("lz4")]);
    f.operating.cgroup_limits = vec![
        ("/system.slice".into(), 1),
        ("/system.slice/db.service".into(), 2),
        ("/user.slice/db.service".into(), 3),
        ("/system.slice".into(), 4),
    ];
    let p: Vec<String> =
        for_file(f, Identify::default()).operating.cgroup_limits.into_iter().map(|x| x.0).collect();
    assert_eq!(p[0], p[3]);
    assert!(p[1].starts_with(&format!("{}/", p[0])), "{p:?}");
    assert_ne!(p[1], p[2]);
    assert!(p.iter().all(|x| !x.contains("slice") && !x.contains("db")), "{p:?}");
}

/// No page's bytes reach the file, nor a dictionary trained on them.
#[test]
fn no_page_bytes_and_no_dictionary_reach_the_file() {
    let mut with_dict = Policy::single("zstd");
    with_dict.dict = true;
    with_dict.name = "zstd + dict".into();
    let f = findings(384, vec![Policy::single("zstd"), with_dict]);
    assert!(f.policies[1].dict.as_ref().is_some_and(|d| !d.is_empty()), "trained here");
    let text = serde_json::to_string(&for_file(f, Identify::ALL)).unwrap();
    assert!(!text.contains("SECRET-TOKEN"));
    let back = parse(text.as_bytes()).unwrap();
    assert!(back.policies[1].dict.is_none() && back.policies[1].dict_bytes > 0);
}

/// Bytes that are not evidence, or evidence that does not add up, are refused with what is
/// wrong; a file over the ceiling is refused before it is read.
#[test]
fn evidence_that_does_not_add_up_is_refused() {
    let f = findings(64, vec![Policy::single("lz4")]);
    assert!(parse(b"{\"format\":\"zmem-evidence\"").unwrap_err().starts_with("not zmem evidence"));
    assert!(parse(b"\x28\xb5\x2f\xfd").is_err());
    let refused = |edit: &dyn Fn(&mut Findings), says: &str| {
        let mut g = f.clone();
        edit(&mut g);
        let err = parse(&serde_json::to_vec(&g).unwrap()).unwrap_err();
        assert!(err.contains(says), "{err:?} does not say {says:?}");
    };
    refused(&|g| g.format = "zmem-pages".into(), "format");
    refused(&|g| g.version = 99, "version 99");
    refused(&|g| g.facts.flags.push(0), "lengths for");
    refused(&|g| g.facts.lengths[0].lengths[3] = 70_000, "page 3's length");
    refused(&|g| g.source.pages = 65, "source: 65 pages");
    refused(&|g| g.operating.page_pids = Some(vec![1; 10]), "operating.page_pids");
    refused(&|g| g.policies[0].pages = 65, "policies: lz4 measured on 65 of 64 pages");
    refused(&|g| g.policies.clear(), "none measured");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e");
    write(&f, &path).unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    let err = read_within(&path, len - 1).unwrap_err().to_string();
    assert!(err.contains("more than the read ceiling"), "{err}");
    assert!(read_within(&path, len).is_ok());
    let pages_file = dir.path().join("p");
    std::fs::write(&pages_file, vec![0u8; 8192]).unwrap();
    assert!(!is_evidence(&pages_file));
}

/// Findings whose figures were tampered with (a number set to 0, to a huge value, negated or
/// halved, anywhere in the file) are refused or judged, never a crash: the judge reads files
/// from other machines. (The fuzz target `parse_evidence` does the same from arbitrary bytes.)
#[test]
fn tampered_figures_are_refused_or_judged_never_a_crash() {
    let f = findings(64, vec![Policy::single("lz4"), Policy::single("zstd")]);
    let base = serde_json::to_value(&f).unwrap();
    let mut numbers = Vec::new();
    collect_numbers(&base, String::new(), &mut numbers);
    assert!(numbers.len() > 500, "{} numbers", numbers.len());
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let (mut judged, mut refused) = (0, 0);
    for round in 0..1000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let path = &numbers[(x % numbers.len() as u64) as usize];
        let mut v = base.clone();
        let leaf = v.pointer_mut(path).unwrap();
        *leaf = match round % 5 {
            0 => serde_json::json!(0),
            1 => serde_json::json!(u64::MAX),
            2 => serde_json::json!(-(leaf.as_f64().unwrap_or(1.0))),
            3 => serde_json::json!(leaf.as_f64().unwrap_or(0.0) / 2.0),
            _ => serde_json::json!(1e300),
        };
        match parse(&serde_json::to_vec(&v).unwrap()) {
            Ok(g) => {
                let _ = judge(&g);
                judged += 1;
            }
            Err(_) => refused += 1,
        }
    }
    assert!(judged > 100 && refused > 100, "judged {judged}, refused {refused}");
}

/// The JSON pointer of every number in `v`.
fn collect_numbers(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Number(_) => out.push(at),
        serde_json::Value::Object(m) => {
            let key = |k: &str| k.replace('~', "~0").replace('/', "~1");
            m.iter().for_each(|(k, x)| collect_numbers(x, format!("{at}/{}", key(k)), out))
        }
        serde_json::Value::Array(a) => {
            a.iter().enumerate().for_each(|(i, x)| collect_numbers(x, format!("{at}/{i}"), out))
        }
        _ => {}
    }
}

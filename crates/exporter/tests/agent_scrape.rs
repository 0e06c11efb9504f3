//! The reclaim agent's metrics (`zmem exporter --agent-status`), from the fixture status
//! tests/data/agent-status.json: every family with its name, type and value; `zmem_agent_up`
//! by the status's age; no file, no families; a corrupt file, `zmem_agent_status_error 1`; and
//! a whole scrape with them.

use std::path::{Path, PathBuf};

use zmem_exporter::agent::{self, MAX_BYTES, Read, Source};
use zmem_exporter::expose::{Format, encode};
use zmem_exporter::serve::Scrape;
use zmem_kernel::reclaim::AgentStatus;
use zmem_kernel::status::{Options, Roots};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/agent-status.json")
}

fn text(r: &Read, now: u64) -> String {
    encode(agent::families(r, now), Format::Prometheus).unwrap()
}

/// The value of the sample `name` (no labels) in `text`.
fn sample<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
}

#[test]
fn a_status_file_gives_every_agent_metric() {
    let r = agent::read(&fixture());
    assert!(matches!(r, Read::Status(_)), "{r:?}");
    // Updated at 1700000600, period 30 s: up until 90 s later.
    let t = text(&r, 1_700_000_690);
    for (name, want) in [
        ("zmem_agent_up", "1"),
        ("zmem_agent_status_error", "0"),
        ("zmem_agent_paged_out_bytes_total", "1073741824"),
        ("zmem_agent_came_back_bytes_total", "52428800"),
        ("zmem_agent_out_bytes", "1021313024"),
        ("zmem_agent_refused_bytes_total", "8192"),
        ("zmem_agent_cpu_seconds_total", "1.25"),
        ("zmem_agent_ticks_total", "20"),
        ("zmem_agent_paused_ticks_total", "3"),
        ("zmem_agent_cold_age_seconds", "120"),
        ("zmem_agent_processes", "42"),
        ("zmem_agent_predicted_moved_out_bytes", "2147483648"),
        ("zmem_agent_predicted_swap_ins_per_second", "12.5"),
        ("zmem_agent_predicted_memory_saved_bytes", "-4096"),
    ] {
        assert_eq!(sample(&t, name), Some(want), "{name} in\n{t}");
    }
    assert!(t.contains("# TYPE zmem_agent_paged_out_bytes_total counter"), "{t}");
    assert!(t.contains("# TYPE zmem_agent_out_bytes gauge"), "{t}");
    assert!(t.contains("# HELP zmem_agent_up 1 while the proactive-reclaim agent"), "{t}");
    // Three periods and a second later it is no longer up; nor long before it wrote.
    assert_eq!(sample(&text(&r, 1_700_000_691), "zmem_agent_up"), Some("0"));
    assert_eq!(sample(&text(&r, 1_600_000_000), "zmem_agent_up"), Some("0"));
}

#[test]
fn no_prediction_no_predicted_metrics() {
    let mut s: AgentStatus = serde_json::from_slice(&std::fs::read(fixture()).unwrap()).unwrap();
    s.config.predicted = None;
    let t = text(&Read::Status(Box::new(s)), 1_700_000_600);
    assert!(!t.contains("predicted"), "{t}");
    assert_eq!(sample(&t, "zmem_agent_up"), Some("1"));
}

#[test]
fn no_file_no_metrics_and_a_corrupt_one_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.json");
    assert_eq!(agent::read(&path), Read::Absent);
    assert!(agent::families(&Read::Absent, 0).is_empty());
    let good = std::fs::read(fixture()).unwrap();
    std::fs::write(&path, &good[..good.len() / 2]).unwrap();
    let r = agent::read(&path);
    assert!(matches!(&r, Read::Corrupt(why) if why.starts_with("not an agent status")), "{r:?}");
    let t = text(&r, 0);
    assert_eq!(sample(&t, "zmem_agent_status_error"), Some("1"));
    assert!(!t.contains("zmem_agent_up"), "{t}");
    std::fs::write(&path, vec![b' '; MAX_BYTES as usize + 1]).unwrap();
    assert!(matches!(agent::read(&path), Read::Corrupt(why) if why.starts_with("larger than")));
    // A directory where the file should be: corrupt too, not a failed scrape.
    let d = dir.path().join("dir.json");
    std::fs::create_dir(&d).unwrap();
    assert!(matches!(agent::read(&d), Read::Corrupt(_)));
    // A source answers the same, at every scrape (it logs the reason once).
    let src = Source::new(path);
    for _ in 0..2 {
        let t = encode(src.families(), Format::Prometheus).unwrap();
        assert_eq!(sample(&t, "zmem_agent_status_error"), Some("1"), "{t}");
    }
}

/// A scrape of a bare fixture system (no device, no swap) with the agent's status at `agent`.
fn scrape(root: &Path, agent: &Path) -> String {
    let proc = root.join("proc");
    std::fs::create_dir_all(&proc).unwrap();
    std::fs::write(proc.join("vmstat"), "pswpin 0\npswpout 0\n").unwrap();
    std::fs::write(proc.join("meminfo"), "MemTotal: 1024 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n")
        .unwrap();
    std::fs::write(proc.join("swaps"), "Filename\tType\tSize\tUsed\tPriority\n").unwrap();
    let roots = Roots { sys: root.join("sys"), proc, debug: root.join("debug") };
    let s = Scrape {
        status: Options { roots, ..Options::default() },
        lab: None,
        advice: None,
        agent: Some(Source::new(agent.to_path_buf())),
    };
    s.run(Format::OpenMetrics).unwrap()
}

#[test]
fn the_agents_metrics_join_the_scrape_where_its_status_exists() {
    let dir = tempfile::tempdir().unwrap();
    let t = scrape(dir.path(), &fixture());
    for line in [
        "zmem_agent_paged_out_bytes_total 1073741824",
        "zmem_agent_out_bytes 1021313024",
        "zmem_agent_cpu_seconds_total 1.25",
        "zmem_agent_paused_ticks_total 3",
        "zmem_agent_predicted_swap_ins_per_second 12.5",
        "zmem_agent_status_error 0",
        // The fixture was written long ago: the agent is not up.
        "zmem_agent_up 0",
    ] {
        assert!(t.lines().any(|l| l == line), "{line:?} not in\n{t}");
    }
    assert!(t.ends_with("# EOF\n"), "{t}");
    let t = scrape(dir.path(), &dir.path().join("absent.json"));
    assert!(!t.contains("zmem_agent"), "{t}");
    assert!(t.contains("zmem_unreadable_files"), "{t}");
}

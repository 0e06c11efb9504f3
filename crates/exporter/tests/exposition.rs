//! The exposition of a fixture system (a /sys, /proc and debugfs tree in a temporary directory):
//! names, units, types and values as Prometheus's conventions want them, and the HTTP endpoint.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use std::time::Instant;

use zmem_exporter::advise::{self, DeviceAdvice, Snapshot, estimate::Population, judge};
use zmem_exporter::expose::{self, Format};
use zmem_exporter::lab_report::{LabSavings, Point};
use zmem_exporter::serve::{self, Scrape};
use zmem_kernel::status::{self, Options, Roots};

/// An advisor's judgement of one device with two candidates, the first recommended.
fn advice() -> Snapshot {
    let i = zmem_lab::sample::Interval { estimate: 1e6, low: 9e5, high: 1.1e6 };
    let row = |c: &str| judge::Row {
        config: c.into(),
        is_current: c == "lzo-rle",
        pool_bytes: i,
        memory_saved_bytes: i,
        cpu_secs_per_sec: 0.001,
        within_budget: true,
    };
    Snapshot {
        devices: vec![DeviceAdvice {
            name: "zram2".into(),
            algorithm: "lzo-rle".into(),
            population: Population { pages: 2048, same_filled: 10 },
            sample_pages: 1024,
            panel_slots: 2048,
            oldest_read: Some(Instant::now()),
            filled: true,
            slots_read: 2048,
            read_failures: 0,
            readable: true,
            idle_capped: false,
            traffic: zmem_lab::cost::Traffic { swap_ins_per_sec: 1.0, swap_outs_per_sec: 2.0 },
            rows: vec![row("lzo-rle"), row("lz4")],
            recommended: Some(("lzo-rle".into(), judge::Basis::Tie)),
        }],
        zswap: Some(advise::ZswapAdvice {
            params: advise::zswap::Params { enabled: false, compressor: "lzo".into() },
            population_pages: 100_000,
            sample_pages: 1000,
            zero_pages: 100,
            oldest_read: Some(Instant::now()),
            filled: true,
            pages_read: 1200,
            skips: advise::anon::Skips { exited: 2, refused: 1, unreadable: 0, sparse: 3 },
            processes: 40,
            traffic: zmem_lab::cost::Traffic { swap_ins_per_sec: 5.0, swap_outs_per_sec: 6.0 },
            rows: vec![row("lzo"), row("lzo-rle")],
            recommended: Some(("lzo".into(), judge::Basis::MostSaved)),
        }),
        zswap_present: true,
        devices_lost: 0,
        cpu_seconds: 0.5,
        zram_present: true,
        judgements: 3,
    }
}

/// The advice families: every name once, the conventions' suffixes, one series per device and
/// candidate.
#[test]
fn the_advice_families_follow_the_conventions() {
    let fams = advise::metrics::families(&advice(), Instant::now());
    let text = expose::encode(fams, Format::Prometheus).unwrap();
    for line in [
        "zmem_advice_memory_saved_bytes{device=\"zram2\",config=\"lz4\"} 1000000",
        "zmem_advice_memory_saved_low_bytes{device=\"zram2\",config=\"lzo-rle\"} 900000",
        "zmem_advice_cpu_seconds_per_second{device=\"zram2\",config=\"lz4\"} 0.001",
        "zmem_advice_recommended_info{device=\"zram2\",config=\"lzo-rle\",current=\"lzo-rle\",basis=\"equal_within_uncertainty\"} 1",
        "zmem_advice_sample_pages{device=\"zram2\"} 1024",
        "# TYPE zmem_advice_slots_read_total counter",
        "zmem_advice_sampler_cpu_seconds_total 0.5",
        // zswap: one more device in the same families, its own where only it has them.
        "zmem_advice_memory_saved_high_bytes{device=\"zswap\",config=\"lzo-rle\"} 1100000",
        "zmem_advice_recommended_info{device=\"zswap\",config=\"lzo\",current=\"none\",basis=\"most_saved_within_budget\"} 1",
        "zmem_advice_sample_pages{device=\"zswap\"} 1000",
        "zmem_advice_population_pages{device=\"zswap\"} 100000",
        "zmem_advice_read_failures_total{device=\"zswap\"} 3",
        "zmem_advice_read_skips_total{device=\"zswap\",reason=\"sparse\"} 3",
        "zmem_advice_pages_read_total{device=\"zswap\"} 1200",
        "zmem_advice_swap_out_pages_per_second{device=\"zswap\"} 6.0",
        "zmem_advice_zswap_present 1",
    ] {
        assert!(text.contains(line), "no {line} in\n{text}");
    }
    assert!(text.contains("zmem_advice_sample_age_seconds{device=\"zram2\"} "), "{text}");
    // zram's own families carry no zswap series.
    assert!(!text.contains("zmem_advice_panel_slots{device=\"zswap\"}"), "{text}");
    assert!(!text.contains("zmem_advice_slots_read_total{device=\"zswap\"}"), "{text}");
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn fixture() -> (tempfile::TempDir, Options) {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    write(r, "proc/vmstat", "pswpin 10\npswpout 20\nzswpin 3\nzswpout 4\nzswpwb 5\n");
    write(r, "proc/swaps", "Filename Type Size Used Priority\n/dev/zram2 partition 1024 8 100\n");
    write(r, "proc/meminfo", "MemTotal: 1000000 kB\nZswap: 400 kB\nZswapped: 1200 kB\n");
    for (id, mm) in
        [(2, "8388608 2097152 2621440 0 2621440 10 3 5 7"), (5, "4096 100 12288 0 12288 0 0 0 0")]
    {
        let d = format!("sys/block/zram{id}");
        write(r, &format!("{d}/initstate"), "1\n");
        write(r, &format!("{d}/disksize"), "1073741824\n");
        write(r, &format!("{d}/comp_algorithm"), "lzo [lzo-rle] lz4\n");
        write(r, &format!("{d}/mm_stat"), &format!("{mm}\n"));
        write(r, &format!("{d}/io_stat"), "0 1 0 12\n");
    }
    write(r, "sys/module/zswap/parameters/enabled", "N\n");
    write(r, "sys/module/zswap/parameters/compressor", "lzo\n");
    write(r, "sys/module/zswap/parameters/max_pool_percent", "20\n");
    write(r, "debug/zswap/reject_compress_poor", "7\n");
    let roots = Roots { sys: r.join("sys"), proc: r.join("proc"), debug: r.join("debug") };
    (t, Options { roots, ..Options::default() })
}

fn lab() -> LabSavings {
    LabSavings {
        device: "zram2".into(),
        config: "zstd".into(),
        saved_vs_now_bytes: 1_000_000,
        expected_ratio: 3.5,
        candidates: vec![("lzo-rle".into(), 0), ("zstd".into(), 1_000_000)],
        point: Some(Point {
            named: "cold_age",
            saved_today_bytes: Some(250_000),
            saved_cold_age_bytes: Some(600_000),
            cold_bytes: Some(800_000),
            cold_age_secs: Some(120),
        }),
    }
}

fn sample<'a>(text: &'a str, series: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
}

#[test]
fn names_units_types_and_values() {
    let (_t, opts) = fixture();
    let s = status::read(&opts).unwrap();
    let text =
        expose::encode(expose::families(&s, Some(&lab()), None), Format::Prometheus).unwrap();
    assert_eq!(sample(&text, "zmem_zram_orig_data_bytes{device=\"zram2\"}"), "8388608");
    assert_eq!(sample(&text, "zmem_zram_compr_data_bytes{device=\"zram2\"}"), "2097152");
    assert_eq!(sample(&text, "zmem_zram_mem_used_bytes{device=\"zram2\"}"), "2621440");
    assert_eq!(sample(&text, "zmem_zram_mem_used_bytes{device=\"zram5\"}"), "12288");
    assert_eq!(sample(&text, "zmem_zram_compression_ratio{device=\"zram2\"}"), "4.0");
    assert_eq!(sample(&text, "zmem_zram_memory_saved_bytes{device=\"zram5\"}"), "-8192");
    assert_eq!(sample(&text, "zmem_zram_pages_compacted_total{device=\"zram2\"}"), "3");
    // mm_stat bound: mem_used_total less compr_data_size in whole pages (100 B -> one page).
    assert_eq!(sample(&text, "zmem_zram_compactable_bytes{device=\"zram5\"}"), "8192");
    assert_eq!(sample(&text, "zmem_zram_swap_priority{device=\"zram2\"}"), "100");
    assert_eq!(sample(&text, "zmem_swap_out_pages_total"), "20");
    assert_eq!(sample(&text, "zmem_zswap_reject_compress_poor_total"), "7");
    assert_eq!(sample(&text, "zmem_zswap_compression_ratio"), "3.0");
    assert_eq!(
        sample(&text, "zmem_lab_recommended_memory_saved_bytes{device=\"zram2\",config=\"zstd\"}"),
        "1000000"
    );
    let at = |p: &str| {
        format!(
            "zmem_lab_recommended_memory_saved_at_{p}_bytes{{device=\"zram2\",config=\"zstd\"}}"
        )
    };
    assert_eq!(sample(&text, &at("today")), "250000");
    assert_eq!(sample(&text, &at("cold_age")), "600000");
    assert_eq!(sample(&text, "zmem_lab_cold_bytes"), "800000");
    assert_eq!(sample(&text, "zmem_lab_cold_age_seconds"), "120");
    assert_eq!(sample(&text, "zmem_lab_operating_point_info{point=\"cold_age\"}"), "1");
    assert!(text.contains("# TYPE zmem_zram_orig_data_bytes gauge\n"), "{text}");
    assert!(text.contains("# TYPE zmem_swap_in_pages_total counter\n"), "{text}");
    assert!(text.contains("# HELP zmem_zram_mem_used_bytes "), "{text}");
    // Every sample is zmem_-prefixed and every family has HELP and TYPE.
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("# TYPE ") {
            let name = rest.split(' ').next().unwrap();
            assert!(text.contains(&format!("# HELP {name} ")), "no HELP for {name}");
        } else if !l.starts_with('#') {
            assert!(l.starts_with("zmem_"), "{l}");
        }
    }
    // One series per device in a per-device family.
    let n = text.lines().filter(|l| l.starts_with("zmem_zram_orig_data_bytes{")).count();
    assert_eq!(n, 2);
    let om = expose::encode(expose::families(&s, None, None), Format::OpenMetrics).unwrap();
    assert!(om.ends_with("# EOF\n"));
    assert!(om.contains("# UNIT zmem_zram_orig_data_bytes bytes\n"), "{om}");
    assert!(!om.contains("zmem_lab_"), "no lab gauges without a report");
}

/// Each gauge's HELP says which point it is at: the older one every page swapped.
#[test]
fn the_lab_gauges_say_which_operating_point_they_are_at() {
    let (_t, opts) = fixture();
    let s = status::read(&opts).unwrap();
    let text =
        expose::encode(expose::families(&s, Some(&lab()), None), Format::Prometheus).unwrap();
    let help = |name: &str| {
        let head = format!("# HELP {name} ");
        text.lines().find_map(|l| l.strip_prefix(head.as_str())).unwrap_or_else(|| panic!("{name}"))
    };
    assert!(help("zmem_lab_recommended_memory_saved_bytes").contains("every sampled page"));
    assert!(help("zmem_lab_candidate_memory_saved_bytes").contains("every sampled page"));
    assert!(help("zmem_lab_recommended_memory_saved_at_today_bytes").contains("today's pressure"));
    assert!(help("zmem_lab_recommended_memory_saved_at_cold_age_bytes").contains("cold age T"));
}

/// A report before schema 8 (no point), and one whose point read neither today's pressure
/// nor a cold curve: the older gauges only, no sample of a figure the lab did not read.
#[test]
fn without_a_point_there_are_no_operating_point_gauges() {
    let (_t, opts) = fixture();
    let s = status::read(&opts).unwrap();
    // The lab families exposed (a HELP line may name another family: names, not text).
    let lab_names = |point: Option<Point>| -> Vec<String> {
        let l = LabSavings { point, ..lab() };
        let fams = expose::families(&s, Some(&l), None);
        let mut names: Vec<String> =
            fams.iter().map(|f| f.full_name()).filter(|n| n.starts_with("zmem_lab_")).collect();
        names.sort();
        names
    };
    // In name order.
    let older = [
        "zmem_lab_candidate_memory_saved_bytes",
        "zmem_lab_recommended_memory_saved_bytes",
        "zmem_lab_recommended_ratio",
    ];
    assert_eq!(lab_names(None), older);
    // A point read away from its machine: its name only.
    let mut named = older.map(String::from).to_vec();
    named.insert(1, "zmem_lab_operating_point_info".into());
    assert_eq!(lab_names(Some(unread_point())), named);
    // Today's point read, no cold curve: today's saving beside them.
    let today = Point { named: "today", saved_today_bytes: Some(0), ..unread_point() };
    let mut with_today = named.clone();
    with_today.insert(2, "zmem_lab_recommended_memory_saved_at_today_bytes".into());
    assert_eq!(lab_names(Some(today)), with_today);
}

fn unread_point() -> Point {
    Point {
        named: "all_pages",
        saved_today_bytes: None,
        saved_cold_age_bytes: None,
        cold_bytes: None,
        cold_age_secs: None,
    }
}

fn get(addr: std::net::SocketAddr, path: &str, accept: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nAccept: {accept}\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn serves_metrics_by_content_negotiation() {
    let (t, opts) = fixture();
    let (tx, rx) = mpsc::channel();
    let scrape = Scrape { status: opts, lab: None, advice: None, agent: None };
    std::thread::spawn(move || {
        let _keep = t;
        serve::serve("127.0.0.1:0".parse().unwrap(), scrape, |a| tx.send(a).unwrap())
    });
    let addr = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(addr.ip().is_loopback());
    let text = get(addr, "/metrics", "text/plain");
    assert!(text.starts_with("HTTP/1.0 200") || text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("text/plain; version=0.0.4"), "{text}");
    assert!(text.contains("zmem_zram_orig_data_bytes{device=\"zram2\"} 8388608\n"), "{text}");
    let om = get(addr, "/metrics", "application/openmetrics-text;version=1.0.0,text/plain;q=0.5");
    assert!(om.contains("application/openmetrics-text"), "{om}");
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(get(addr, "/nope", "*/*").contains(" 404 "));
}

#[test]
fn the_dashboard_queries_only_metrics_the_exporter_exposes() {
    let (_t, opts) = fixture();
    let s = status::read(&opts).unwrap();
    let mut fams = expose::families(&s, Some(&lab()), None);
    fams.extend(advise::metrics::families(&advice(), Instant::now()));
    let names: Vec<String> = fams.iter().map(|f| f.full_name()).collect();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/grafana-zmem.json");
    let dash: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut used = 0;
    for p in dash["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            let expr = t["expr"].as_str().unwrap();
            for (i, _) in expr.match_indices("zmem_") {
                let name: String = expr[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                assert!(names.contains(&name), "the dashboard queries {name}, not exposed");
                used += 1;
            }
        }
    }
    assert!(used >= 10, "{used}");
    assert!(
        names.iter().filter(|n| n.starts_with("zmem_advice_")).count() >= 10,
        "every advice family is in the fixture's exposition"
    );
}

#[test]
fn the_systemd_unit_listens_on_the_default_loopback_port() {
    let unit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/zmem-exporter.service"
    ))
    .unwrap();
    let exec = unit.lines().find(|l| l.starts_with("ExecStart=")).unwrap();
    assert!(exec.ends_with(&format!("--listen 127.0.0.1:{}", serve::DEFAULT_PORT)), "{exec}");
}

/// A real `zmem lab --source builtin --observe 0 --json` report (schema 7, 2026-12-06): its
/// decision's candidate, on the decision's basis (the 6,144 pages uncompressed).
#[test]
fn reads_a_real_lab_report() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lab-report.json");
    let l = zmem_exporter::lab_report::read(&path).unwrap();
    assert_eq!(l.device, "zram0");
    assert_eq!(l.config, "zram lzo");
    assert_eq!(l.saved_vs_now_bytes, 15_228_928);
    assert!(l.candidates.contains(&("zram lz4".to_string(), 14_278_656)));
    assert!(l.candidates.contains(&("none".to_string(), 0)));
    assert_eq!(l.point, None, "a schema 7 report has no operating point");
}

//! `zmem exporter` against the real parts: a kernel zram device hot-added and filled with pages,
//! the exporter serving it on a free loopback port, and a real Prometheus server scraping it.
//! The values Prometheus's query API returns must equal the device's `mm_stat`, `promtool check
//! metrics` must pass on the exposition, and `zmem status --json` must show the same numbers.
//! The device and both processes are gone afterwards, on failure too (Drop guards).
//!
//! A live test (`#[ignore]`, run by scripts/test's live pass): skipped, reported by
//! zmem-testkit, without root, kernel zram, or Prometheus (`.ci/run` installs Debian's
//! `prometheus` package, which brings `promtool`; its absence is never a failure).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::*;

fn wait_for<T>(what: &str, secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(t0.elapsed() < Duration::from_secs(secs), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// 1 MiB of pages the kernel stores every way: compressible text, incompressible (huge) noise,
/// and same-filled pages.
fn pages() -> Vec<u8> {
    let mut out = Vec::with_capacity(256 * 4096);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for p in 0..256u64 {
        for i in 0..4096u64 {
            let b = match p % 4 {
                0 | 1 => b"zram holds compressed pages; "[(i % 29) as usize] ^ (p as u8 & 1),
                2 => {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                }
                _ => 0x5a,
            };
            out.push(b);
        }
    }
    out
}

/// One instant query through Prometheus's HTTP API: the sample's value, once there is one.
fn query(port: u16, expr: &str) -> Option<f64> {
    let enc: String = expr
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let (code, body) = get(port, &format!("/api/v1/query?query={enc}"), None).ok()?;
    if code != 200 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    let r = v["data"]["result"].as_array()?;
    r.first()?["value"][1].as_str()?.parse().ok()
}

#[test]
#[ignore = "live: needs root, kernel zram, prometheus and promtool (scripts/test runs it)"]
fn prometheus_scrapes_what_mm_stat_says() {
    let Some(live) = zmem_testkit::live(zram_why_not()) else { return };
    if let Some(why) = prometheus_missing() {
        // An optional tool: a skip, never a failure.
        return live.skip_optional(why);
    }
    let scratch = Scratch::new("exporter");
    std::fs::create_dir_all(&scratch.0).unwrap();

    let dev = ZramDevice::add();
    let name = format!("zram{}", dev.0);
    std::fs::write(dev.attr("disksize"), "16M").unwrap();
    write_direct(Path::new(&format!("/dev/{name}")), &pages());
    let mm = dev.mm_stat();
    assert_eq!(mm[0], 256 * 4096, "every page stored: {mm:?}");
    assert!(mm[5] > 0 && mm[7] > 0, "same and huge pages among them: {mm:?}");

    let port = free_loopback_port();
    let exporter = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(["exporter", "--listen", &format!("127.0.0.1:{port}")])
        .stderr(Stdio::null())
        .spawn()
        .expect("zmem exporter starts");
    let exporter = Reaped(exporter);
    let text = wait_for("the exporter", 20, || {
        get(port, "/metrics", None).ok().filter(|(c, _)| *c == 200).map(|(_, b)| b)
    });
    let line = |metric: &str| {
        let want = format!("{metric}{{device=\"{name}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&want))
            .unwrap_or_else(|| panic!("no {want} in\n{text}"))
            .parse::<f64>()
            .unwrap()
    };
    assert_eq!(line("zmem_zram_orig_data_bytes"), mm[0] as f64);
    assert_eq!(line("zmem_zram_compr_data_bytes"), mm[1] as f64);
    assert_eq!(line("zmem_zram_mem_used_bytes"), mm[2] as f64);
    assert_eq!(line("zmem_zram_same_pages"), mm[5] as f64);
    assert_eq!(line("zmem_zram_huge_pages"), mm[7] as f64);
    assert_eq!(line("zmem_zram_compression_ratio"), mm[0] as f64 / mm[1] as f64);

    // promtool's linter reads the classic text format, the one served without an Accept header.
    promtool_passes(&text);
    // OpenMetrics when asked for, as Prometheus does.
    let (_, om) =
        get(port, "/metrics", Some("application/openmetrics-text;version=1.0.0")).unwrap();
    assert!(om.ends_with("# EOF\n"), "not OpenMetrics:\n{om}");
    assert!(om.contains("# TYPE zmem_zram_pages_compacted counter"), "{om}");

    let prom_port = free_loopback_port();
    let config = scratch.0.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: zmem\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
        ),
    )
    .unwrap();
    let log = std::fs::File::create(scratch.0.join("prometheus.log")).unwrap();
    let prometheus = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", scratch.0.join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("prometheus starts");
    let prometheus = Reaped(prometheus);
    let scraped = |m: &str| {
        let expr = format!("{m}{{device=\"{name}\"}}");
        let log = scratch.0.join("prometheus.log");
        let t0 = Instant::now();
        loop {
            if let Some(v) = query(prom_port, &expr) {
                return v;
            }
            if t0.elapsed() > Duration::from_secs(90) {
                panic!(
                    "Prometheus never had {expr}; its log:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    };
    let mm = dev.mm_stat();
    assert_eq!(scraped("zmem_zram_orig_data_bytes"), mm[0] as f64);
    assert_eq!(scraped("zmem_zram_compr_data_bytes"), mm[1] as f64);
    assert_eq!(scraped("zmem_zram_mem_used_bytes"), mm[2] as f64);
    assert_eq!(scraped("zmem_zram_huge_pages"), mm[7] as f64);
    assert_eq!(scraped("zmem_zram_disksize_bytes"), (16u64 << 20) as f64);

    // zmem status --json: the same parsers, the same numbers.
    let out = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(["status", "--json", "--interval", "0"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let d = v["zram"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == name.as_str())
        .expect("the device in zmem status");
    assert_eq!(d["mm_stat"]["orig_data_size"], mm[0]);
    assert_eq!(d["mm_stat"]["compr_data_size"], mm[1]);
    assert_eq!(d["mm_stat"]["mem_used_total"], mm[2]);
    assert_eq!(d["disksize_bytes"], 16u64 << 20);

    // Everything goes, and is gone.
    let (exp_pid, prom_pid) = (exporter.0.id(), prometheus.0.id());
    drop(prometheus);
    drop(exporter);
    drop(dev);
    assert!(!Path::new(&format!("/sys/block/{name}")).exists(), "{name} still there");
    for pid in [exp_pid, prom_pid] {
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "process {pid} still there");
    }
}

/// `--textfile`: one atomic write of the classic text format, which promtool (and so
/// node_exporter's textfile collector) accepts. Needs no root.
#[test]
#[ignore = "live: needs promtool (scripts/test runs it)"]
fn textfile_is_written_once_and_passes_promtool() {
    let live = zmem_testkit::may_skip();
    let scratch = Scratch::new("textfile");
    std::fs::create_dir_all(&scratch.0).unwrap();
    let file = scratch.0.join("zmem.prom");
    let out = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(["exporter", "--textfile"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("# TYPE zmem_swap_in_pages_total counter\n"), "{text}");
    assert!(!text.contains("# EOF"), "the textfile collector reads the classic format");
    let names: Vec<_> =
        std::fs::read_dir(&scratch.0).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["zmem.prom"], "no temporary file left");
    // Both at once is refused.
    let out = Command::new(env!("CARGO_BIN_EXE_zmem"))
        .args(["exporter", "--listen", "127.0.0.1:1", "--textfile"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    if !on_path("promtool") {
        return live.skip_optional("promtool not installed: the file was checked without it");
    }
    let out = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&file).unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

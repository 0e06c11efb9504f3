//! `zmem exporter --advise`'s zswap part on the running kernel: where zswap is built
//! (`/sys/module/zswap/parameters`), the advisor samples the processes' resident anonymous
//! pages (no swap and no zswap needed: it reads pages in RAM) and, once its sample is full,
//! exports a row per compressor zswap can use here (`device="zswap"`), each with bounds around
//! its estimate, the sample's size, and the recommendation; the exposition passes `promtool
//! check metrics` where promtool is installed. zswap's parameters are only read: the test
//! checks they are as they were.
//!
//! Live (`#[ignore]`): root (reading other processes' memory), kernel zswap. It takes the live
//! lock: the exporter also samples any zram device present, and another live test's idle marks
//! must not be cleared under it.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::*;

const PARAMS: &str = "/sys/module/zswap/parameters";

fn why_not() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        Some("not root (reading other processes' /proc/PID/mem needs root)".to_string())
    } else if !Path::new(PARAMS).is_dir() {
        Some(format!("no kernel zswap ({PARAMS})"))
    } else {
        None
    }
}

fn params() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(PARAMS)
        .unwrap()
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(e.path()).unwrap_or_default())
        })
        .collect();
    v.sort();
    v
}

/// The value of `metric{labels}` (labels as written) in an exposition.
fn value(text: &str, metric: &str, labels: &str) -> Option<f64> {
    let want = format!("{metric}{{{labels}}} ");
    text.lines().find_map(|l| l.strip_prefix(&want)).and_then(|v| v.trim().parse().ok())
}

#[test]
#[ignore = "live: needs root and kernel zswap (scripts/test runs it)"]
fn the_zswap_rows_appear_with_bounds_once_the_sample_fills() {
    let Some(_live) = zmem_testkit::live(why_not()) else { return };
    let before = params();
    let port = free_loopback_port();
    // More CPU than the default and a small sample: a test cannot wait for 1 % of a core.
    let _ex = Reaped(
        Command::new(env!("CARGO_BIN_EXE_zmem"))
            .args(["exporter", "--listen", &format!("127.0.0.1:{port}"), "--advise"])
            .args(["--advise-cpu", "50", "--advise-sample", "400"])
            .stderr(Stdio::null())
            .spawn()
            .expect("zmem exporter starts"),
    );
    let d = "device=\"zswap\"";
    let t0 = Instant::now();
    let text = loop {
        if let Ok((200, body)) = get(port, "/metrics", None) {
            if value(&body, "zmem_advice_sample_filled", d) == Some(1.0)
                && body.contains("zmem_advice_recommended_info{device=\"zswap\"")
            {
                break body;
            }
            assert!(t0.elapsed() < Duration::from_secs(180), "no full zswap sample:\n{body}");
        }
        assert!(t0.elapsed() < Duration::from_secs(180), "the exporter does not answer");
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(value(&text, "zmem_advice_sample_pages", d), Some(400.0));
    assert!(text.contains("zmem_advice_zswap_present 1"), "{text}");
    let population = value(&text, "zmem_advice_population_pages", d).unwrap();
    assert!(population > 0.0, "{text}");

    // One row per compressor zswap can use here (/proc/crypto's that our codecs play), each
    // with bounds that hold its estimate.
    let crypto = std::fs::read_to_string("/proc/crypto").unwrap();
    let offered = zmem_kernel::caps::parse_crypto_compressors(&crypto);
    let configs: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("zmem_advice_memory_saved_bytes{device=\"zswap\",config=\""))
        .filter_map(|l| l.split('"').next().map(str::to_string))
        .collect();
    assert!(!configs.is_empty(), "{text}");
    for c in &configs {
        assert!(offered.contains(c), "{c} is not among /proc/crypto's {offered:?}");
        let l = format!("{d},config=\"{c}\"");
        let get = |m: &str| value(&text, m, &l).unwrap_or_else(|| panic!("no {m}{{{l}}}"));
        let (e, lo, hi) = (
            get("zmem_advice_memory_saved_bytes"),
            get("zmem_advice_memory_saved_low_bytes"),
            get("zmem_advice_memory_saved_high_bytes"),
        );
        eprintln!("zswap {c}: saved {e:.0} [{lo:.0}, {hi:.0}] of {population} pages");
        assert!(lo <= e && e <= hi && lo < hi, "{c}: {lo} {e} {hi}");
        let pool = get("zmem_advice_pool_bytes");
        assert!(pool > 0.0 && pool < population * 4096.0 * 1.01, "{c}: pool {pool}");
        assert!(get("zmem_advice_cpu_seconds_per_second") >= 0.0);
    }

    // promtool's linter, where installed (an optional tool: its absence is no failure).
    if on_path("promtool") {
        promtool_passes(&text);
    } else {
        eprintln!("promtool not installed: the exposition's lint is left out");
    }
    assert_eq!(params(), before, "zswap's parameters are only read");
}

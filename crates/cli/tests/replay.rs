//! `zmem replay`'s readahead flags: a sequential second pass over zswap reads ahead with
//! `--readahead vma|cluster` (6.18 `swapin_readahead()`), nothing with `--readahead none` or
//! `--page-cluster 0`, and never on zram (`SWP_SYNCHRONOUS_IO`); bad values fail cleanly.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;
use zmem_pages::trace::{Access, Op, Trace};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zmem")).args(args).output().expect("the zmem binary runs")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const PAGES: u32 = 256;

/// 256 compressible pages, no two alike, and two sequential passes over them, in a directory
/// of test `name`'s own (the tests run at once in one process), removed when the returned
/// `TempDir` drops.
fn inputs(name: &str) -> (TempDir, PathBuf, PathBuf) {
    let dir =
        tempfile::Builder::new().prefix(&format!("zmem-cli-replay-{name}-")).tempdir().unwrap();
    let d = dir.path();
    let pages = d.join("pages.bin");
    let bytes: Vec<u8> = (0..PAGES as usize * 4096)
        .map(|j| b"sequential readahead "[(j + j / 4096) % 21] ^ (j / 4096) as u8 | 1)
        .collect();
    std::fs::write(&pages, bytes).unwrap();
    let trace = d.join("two-passes.trc");
    let accesses = (0..2 * PAGES)
        .map(|k| Access { time_ns: u64::from(k) * 1000, page: k % PAGES, op: Op::Read })
        .collect();
    Trace { page_count: u64::from(PAGES), file_pages: 0, accesses }.save(&trace).unwrap();
    (dir, pages, trace)
}

fn replay(pages: &Path, trace: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["replay", "--json", "--ram", "256K", "--swap-in-memory"];
    args.extend_from_slice(extra);
    args.extend([s(pages), s(trace)]);
    let out = run(&args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn readahead_flags_choose_the_kernels_readahead() {
    let (_dir, pages, trace) = inputs("readahead");
    let n = u64::from(PAGES);
    for mode in ["vma", "cluster"] {
        let v = replay(&pages, &trace, &["--readahead", mode, "--page-cluster", "3"]);
        assert_eq!(v["readahead"], mode, "{v}");
        assert_eq!(v["page_cluster"], 3);
        let (ra, hit, ins) = (
            v["swap_ra"].as_u64().unwrap(),
            v["swap_ra_hit"].as_u64().unwrap(),
            v["swap_ins"].as_u64().unwrap(),
        );
        assert!(ra > n / 2 && hit > n / 2, "{mode}: swap_ra {ra}, swap_ra_hit {hit}");
        assert_eq!(ins + hit, n, "{mode}: every page of the second pass faulted or hit");
        assert_eq!(v["verified"], true);
    }
    let none = replay(&pages, &trace, &["--readahead", "none"]);
    let zero = replay(&pages, &trace, &["--readahead", "vma", "--page-cluster", "0"]);
    let zram = replay(&pages, &trace, &["--swap", "zram", "--readahead", "vma"]);
    for v in [&none, &zero, &zram] {
        assert_eq!((v["swap_ra"].as_u64(), v["swap_ra_hit"].as_u64()), (Some(0), Some(0)), "{v}");
        assert_eq!(v["swap_ins"].as_u64(), Some(n));
        assert_eq!(v["readahead"], "none");
    }
    // The text report says what was read ahead.
    let out = run(&["replay", "--ram", "256K", "--readahead", "cluster", s(&pages), s(&trace)]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("readahead cluster (page-cluster"), "{text}");

    for bad in [&["--readahead", "sideways"][..], &["--page-cluster", "32"]] {
        let mut args = vec!["replay", "--ram", "256K"];
        args.extend_from_slice(bad);
        args.extend([s(&pages), s(&trace)]);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    }
}

/// `--swappiness`: what the memcg's reclaim ran with is in the JSON and the report; at 0 it
/// scans no anonymous page, so the replay ends in one line as the memcg runs out of memory;
/// 201 is refused.
#[test]
fn swappiness_is_the_memcgs_and_0_swaps_nothing() {
    let (_dir, pages, trace) = inputs("swappiness");
    let v = replay(&pages, &trace, &["--swappiness", "200"]);
    assert_eq!(v["swappiness"], 200, "{v}");
    assert!(v["swap_outs"].as_u64().unwrap() > 0);
    let args = ["replay", "--ram", "256K", "--swappiness", "100", s(&pages), s(&trace)];
    let out = run(&args);
    assert!(String::from_utf8_lossy(&out.stdout).contains("swappiness 100; readahead"));
    let out = run(&["replay", "--ram", "256K", "--swappiness", "0", s(&pages), s(&trace)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("out of memory") && err.contains("swappiness 0"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let out = run(&["replay", "--ram", "256K", "--swappiness", "201", s(&pages), s(&trace)]);
    assert_eq!(out.status.code(), Some(2));
}

/// `--total-ram`: zswap's pool limit is a share of the machine's RAM; 1 % of a machine the
/// size of the memcg (2.56 KiB: no page) is hit at once, 1 % of 1 GiB never; under a page is
/// refused.
#[test]
fn total_ram_sets_what_zswaps_pool_limit_is_a_share_of() {
    let (_dir, pages, trace) = inputs("total-ram");
    let hits = |total: &str| {
        let v = replay(&pages, &trace, &["--max-pool-percent", "1", "--total-ram", total]);
        let c = v["counters"].as_array().unwrap();
        c.iter().find(|c| c["name"] == "pool_limit_hit").unwrap()["value"].as_u64().unwrap()
    };
    assert!(hits("256K") > 0);
    assert_eq!(hits("1G"), 0);
    let out = run(&["replay", "--ram", "256K", "--total-ram", "0", s(&pages), s(&trace)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--total-ram 0: less than a page"));
}

/// Page cache end to end: `trace gen --file-pages` writes file reads, `trace info` counts them,
/// and `zmem replay` reads them into its page cache: each file fault is a first read or a
/// refault, and a file bigger than RAM refaults; with `--watermarks` kswapd reclaims both.
#[test]
fn a_trace_with_file_pages_replays_through_the_page_cache() {
    let (_dir, pages, _) = inputs("file-pages");
    let trace = pages.with_file_name("file.trace");
    let make = [
        "trace",
        "gen",
        "--pages",
        "256",
        "--accesses",
        "20000",
        "--file-pages",
        "512",
        "--file-fraction",
        "0.5",
        "--seed",
        "3",
        "-o",
        s(&trace),
    ];
    let out = run(&make);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let info = run(&["trace", "info", "--json", s(&trace)]);
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(info["file_pages"], 512);
    let reads = info["file_reads"].as_u64().unwrap();
    assert!((9000..11000).contains(&reads), "{reads} of 20000 at a fraction of 0.5");
    let v = replay(&pages, &trace, &["--swap", "zram"]);
    assert_eq!(v["file_reads"].as_u64(), Some(reads));
    let (faults, refaults) =
        (v["file_faults"].as_u64().unwrap(), v["file_refaults"].as_u64().unwrap());
    assert_eq!(faults, info["file_pages_used"].as_u64().unwrap() + refaults);
    assert!(refaults > 0, "512 file pages do not fit 64 pages of RAM");
    // Machine-wide: kswapd keeps the node's free pages past the high mark, from the page cache
    // and the anon lists alike.
    let v = replay(&pages, &trace, &["--swap", "zram", "--watermarks", "16K,64K,96K"]);
    assert_eq!(v["file_reads"].as_u64(), Some(reads));
    let (kswapd, evicted) =
        (v["kswapd_reclaimed"].as_u64().unwrap(), v["file_evictions"].as_u64().unwrap());
    assert!(kswapd > 0 && evicted > 0 && v["swap_outs"].as_u64() > Some(0), "{v}");
    assert_eq!(v["verified"], true);
    let out = run(&["trace", "gen", "--file-pages", "8", "--file-fraction", "2", "-o", s(&trace)]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("file fraction") && err.lines().count() == 1, "{err}");
}

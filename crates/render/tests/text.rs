//! The measuring subcommands' text: what each renderer shows of a real result.

use zmem_experiments::NoProgress;
use zmem_experiments::comp_bench::{self, AlgoSpec, Options};
use zmem_experiments::study::{self, StudyConfig};
use zmem_pages::prng::SplitMix64;
use zmem_render::{experiments, replay as text};
use zmem_sim::latency::LatencyRecorder;
use zmem_zswap::Incompressible;

const PS: usize = 4096;

/// Pages of five kinds: zero, text-like, half noise, noise, small noise.
fn pages(n: usize, seed: u64) -> Vec<u8> {
    let mut r = SplitMix64::new(seed);
    let mut v = vec![0u8; n * PS];
    for (i, p) in v.chunks_mut(PS).enumerate() {
        let noisy = match i % 5 {
            0 => 0,
            1 => {
                for (j, b) in p.iter_mut().enumerate() {
                    *b = b"the quick brown fox "[(j + i) % 20];
                }
                0
            }
            2 => PS / 2 + 200,
            3 => PS,
            _ => 500,
        };
        for b in &mut p[..noisy] {
            *b = r.next_u64() as u8;
        }
    }
    v
}

/// Skewed accesses: half of them to the first eighth of the pages.

#[test]
fn allocator_study_matches_the_seed_shape() {
    let p = pages(300, 8);
    let cfg = StudyConfig { rounds: 1, ..StudyConfig::default() };
    let rows = study::allocators(&p, None, &cfg, &NoProgress).unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r.allocator.as_str()).collect();
    assert_eq!(names, ["zsmalloc", "zbud", "z3fold"]);
    assert_eq!(rows[0].pool_vs_zsmalloc_pct, 0.0);
    for r in &rows {
        assert!(r.verified, "{}", r.allocator);
        // 240 non-zero pages; the 60 noise pages are rejected by the 6.8-era policy.
        assert_eq!((r.stored, r.rejected), (180, 60), "{}", r.allocator);
        assert_eq!(r.store_hist.count, 240);
        assert_eq!(r.load_hist.count, 240);
    }
    // zbud holds at most two objects per page: never denser than zsmalloc.
    assert!(rows[1].max_pool_bytes > rows[0].max_pool_bytes);
    let json = serde_json::to_value(&rows).unwrap();
    for key in ["allocator", "max_pool_bytes", "store_hist", "load_hist"] {
        assert!(json[0].get(key).is_some(), "{key}");
    }
    // The table prints the measured difference beside the seed's.
    let text = zmem_render::experiments::study(&rows);
    let zbud_line = text.lines().find(|l| l.starts_with("zbud")).expect("a zbud row");
    let measured = format!("{:+.1}%", rows[1].pool_vs_zsmalloc_pct);
    assert!(zbud_line.contains(&measured), "{measured} not in {zbud_line:?}");
    assert!(text.contains("@load_ns:"), "{text}");
}

#[test]
fn study_with_as_is_storage_counts_zbud_rejections() {
    let p = pages(100, 9);
    let cfg = StudyConfig {
        rounds: 1,
        incompressible: Incompressible::StoreAsIs,
        ..StudyConfig::default()
    };
    let rows = study::allocators(&p, None, &cfg, &NoProgress).unwrap();
    // 20 noise pages: stored as-is by zsmalloc and z3fold, too large for zbud.
    assert_eq!(rows[0].rejected, 0);
    assert_eq!(rows[1].rejected, 20);
    assert_eq!(rows[2].rejected, 0);
}

#[test]
fn the_compressor_table_has_a_line_per_row() {
    let p = pages(2, 1);
    let opts = Options { min_time: std::time::Duration::ZERO, max_passes: 1, ..Options::default() };
    let rows =
        comp_bench::run(&[&p], &[AlgoSpec::parse("zstd").unwrap()], &opts, &NoProgress).unwrap();
    let table = experiments::comp_table(&rows);
    assert_eq!(table.lines().count(), 3);
    assert!(table.lines().nth(2).unwrap().starts_with("zstd"));
}

#[test]
fn log2_buckets_print_like_bpftrace() {
    let mut r = LatencyRecorder::new();
    for ns in [1000, 1023, 1024, 2047, 2048, 9000, 16383] {
        r.record(ns);
    }
    let text = text::latency_hist("store_ns", &r.finish());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "@store_ns:");
    assert_eq!(lines[1], format!("{:<16}{:>8} |{}|", "[512, 1K)", 2, "@".repeat(52)));
    let half_bar = format!("{:<52}", "@".repeat(26));
    assert_eq!(lines[3], format!("{:<16}{:>8} |{half_bar}|", "[2K, 4K)", 1));
    assert_eq!(lines[4], format!("[4K, 8K){}0 |{}|", " ".repeat(15), " ".repeat(52)));
    assert_eq!(text::latency_hist("x", &LatencyRecorder::new().finish()), "@x:\n");
}

/// A zswap replay whose misses read the device shows that source of swap-ins.
#[test]
fn a_zswap_replay_shows_its_device_misses() {
    use zmem_sim::replay::{self, Access, ReplayConfig, SwapKind};
    let p = pages(60, 3);
    let trace: Vec<Access> = (0..600u64)
        .map(|i| Access { page: (i * 7) % 60, write: i % 3 == 0, file: false, time_ns: i * 1000 })
        .collect();
    let d = ReplayConfig::default();
    let cfg = ReplayConfig {
        swap: SwapKind::Zswap,
        ram_pages: 10,
        zswap: zmem_zswap::ZswapParams { max_pool_percent: 1, ..d.zswap.clone() },
        ..d
    };
    let r = replay::run(&p, &trace, &cfg, &NoProgress).unwrap();
    assert!(r.swap_in_hists.zswap_miss.count > 0, "the test needs misses");
    assert!(text::replay(&r).contains("zswap miss + device"));
}

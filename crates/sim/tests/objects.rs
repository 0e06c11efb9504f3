//! Replays whose swap-outs take their compressed objects from a source (the lab's compressor
//! table's, `Simulator::with_objects`) against replays that compress: the same counters, pools
//! and pages for zswap and zram, each store charged its object's cost.

mod common;

use common::{PS, counts, pages, trace, zswap_pool};
use std::cell::Cell;

use zmem_comp::{ObjectSource, Params};
use zmem_sim::NoProgress;
use zmem_sim::cputime::{Charge, ChargedObjects};
use zmem_sim::replay::{self, ReplayConfig, ReplayResult, SwapKind};
use zmem_zswap::ZswapParams;

/// Every page's object made by its own stream of `algo` (default parameters), in page order,
/// each charged `CHARGE_NS` of CPU and wall time.
struct Table {
    algo: &'static str,
    objects: Vec<Vec<u8>>,
    charge: Cell<Charge>,
}

const CHARGE_NS: f64 = 1e6;

impl Table {
    fn new(algo: &'static str, pages: &[u8]) -> Self {
        let mut c = zmem_comp::create(algo, &Params::default(), PS).unwrap();
        let mut out = vec![0u8; zmem_comp::compress_bound(PS)];
        let objects = pages
            .chunks(PS)
            .map(|p| {
                let n = c.compress(p, &mut out).unwrap();
                out[..n].to_vec()
            })
            .collect();
        Self { algo, objects, charge: Cell::new(Charge::default()) }
    }
}

impl ObjectSource for Table {
    fn object(&self, index: u64, algo: &str, params: &Params) -> Option<&[u8]> {
        if algo != self.algo || *params != Params::default() {
            return None;
        }
        let o = self.objects.get(usize::try_from(index).ok()?)?;
        let mut c = self.charge.get();
        c.objects += 1;
        c.cpu_secs += CHARGE_NS / 1e9;
        c.wall_secs += CHARGE_NS / 1e9;
        self.charge.set(c);
        Some(o)
    }
}

impl ChargedObjects for Table {
    fn take(&self) -> Charge {
        self.charge.take()
    }
}

/// Replays `cfg` compressing and taking objects; returns both results.
fn both(cfg: &ReplayConfig, algo: &'static str) -> (ReplayResult, ReplayResult) {
    let n = 400;
    let p = pages(n, 11);
    let t = trace(n as u64, 8000, 12);
    let table = Table::new(algo, &p);
    let made = replay::run(&p, &t, cfg, &NoProgress).unwrap();
    let given = replay::run_with(&p, &t, cfg, Some(&table), &NoProgress).unwrap();
    let left = table.take();
    assert_eq!(left, Charge::default(), "every charge reached the replay");
    (made, given)
}

#[test]
fn zswap_replays_taking_objects_are_replays_that_compress() {
    for algo in ["lzo-rle", "lzo", "lz4", "zstd", "deflate", "842"] {
        // The last keeps the noise pages (a fifth) in RAM: RAM must hold them.
        let cases = [(100, 400, false, true), (100, 10, true, true), (200, 400, false, false)];
        for (ram_pages, pct, shrinker, writeback) in cases {
            let cfg = ReplayConfig {
                ram_pages,
                swap: SwapKind::Zswap,
                zswap: ZswapParams {
                    compressor: algo.into(),
                    shrinker_enabled: shrinker,
                    ..zswap_pool(pct)
                },
                writeback,
                ..ReplayConfig::default()
            };
            let (made, given) = both(&cfg, algo);
            assert_eq!(counts(&made), counts(&given), "{algo} {pct} {shrinker} {writeback}");
            assert!(given.verified && given.stored > 0, "{algo}");
            if !writeback {
                assert!(given.kept_in_ram > 0, "{algo}: the case keeps pages in RAM");
            } else if pct == 10 {
                assert!(counts(&given).contains("zswpwb") && given.counter("zswpwb") > 0);
            }
        }
    }
}

/// With a pool that takes every page, every store compresses, so every store took an object
/// and its time includes the object's charge; the replay's CPU and wall time include them all.
#[test]
fn each_store_is_charged_its_object() {
    let cfg = ReplayConfig {
        ram_pages: 100,
        swap: SwapKind::Zswap,
        zswap: ZswapParams { compressor: "lzo".into(), ..zswap_pool(1000) },
        ..ReplayConfig::default()
    };
    let (made, given) = both(&cfg, "lzo");
    assert_eq!(counts(&made), counts(&given));
    assert_eq!(given.rejected, 0);
    let stores = given.store_hist.count;
    assert!(stores > 0);
    // Every store was charged 1 ms (measured time only adds to it); the histogram's buckets
    // are coarse, so the bound is the power of two below.
    assert!(given.store_hist.p50_ns >= 1 << 19, "{:?}", given.store_hist);
    let charged = stores as f64 * CHARGE_NS / 1e9;
    assert!(given.cpu_secs >= charged && given.wall_secs >= charged, "{given:?}");
}

#[test]
fn zram_replays_taking_objects_are_replays_that_compress() {
    for algo in ["lzo-rle", "zstd", "lz4"] {
        let cfg = ReplayConfig {
            ram_pages: 100,
            swap: SwapKind::Zram,
            algo: algo.into(),
            ..ReplayConfig::default()
        };
        let (made, given) = both(&cfg, algo);
        assert_eq!(counts(&made), counts(&given), "{algo}");
        assert!(given.store_hist.p50_ns >= 1 << 19, "{algo}: {:?}", given.store_hist);
    }
}

/// Objects of another algorithm are not taken (the replay compresses), and charge nothing.
#[test]
fn objects_of_another_algorithm_are_not_taken() {
    let cfg = ReplayConfig {
        ram_pages: 100,
        swap: SwapKind::Zswap,
        zswap: ZswapParams { compressor: "lz4".into(), ..zswap_pool(1000) },
        ..ReplayConfig::default()
    };
    let n = 400;
    let p = pages(n, 11);
    let t = trace(n as u64, 8000, 12);
    let table = Table::new("lzo", &p);
    let made = replay::run(&p, &t, &cfg, &NoProgress).unwrap();
    let given = replay::run_with(&p, &t, &cfg, Some(&table), &NoProgress).unwrap();
    assert_eq!(counts(&made), counts(&given));
    assert_eq!(table.take(), Charge::default());
}

//! Behaviour pinned to Linux 6.18's mm/zswap.c where zmem used to differ. Each test names the
//! kernel function it follows.

use std::sync::Arc;

use zmem_zswap::{StoreOutcome, SwapFile, Zswap, ZswapConfig, ZswapParams};

const PS: usize = 4096;

fn zswap(cfg: ZswapConfig) -> Zswap {
    Zswap::new(&cfg, Arc::new(SwapFile::in_memory(PS, 256))).unwrap()
}

/// `random` noise bytes, then zeros.
fn page(seed: u64, random: usize) -> Vec<u8> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut p = vec![0u8; PS];
    for b in &mut p[..random] {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        *b = s as u8;
    }
    p
}

/// `__zswap_param_set` + `zswap_pool_find_get`: switching back to a compressor whose pool still
/// holds entries makes that pool current again instead of creating another.
#[test]
fn zswap_pool_find_get_reuses_a_pool_that_still_has_entries() {
    let z = zswap(ZswapConfig::default());
    z.store(0, &page(1, 800)).unwrap();
    z.set_param("compressor", "lz4").unwrap();
    z.store(1, &page(2, 800)).unwrap();
    assert_eq!(z.nr_pools(), 2);
    z.set_param("compressor", "lzo").unwrap();
    assert_eq!(z.param("compressor").unwrap(), "lzo");
    assert_eq!(z.nr_pools(), 2, "the lzo pool came back; no third pool");
    z.store(2, &page(3, 800)).unwrap();
    let mut out = vec![0u8; PS];
    for (off, seed) in [(0, 1), (1, 2), (2, 3)] {
        assert!(z.load(off, &mut out).unwrap());
        assert_eq!(out, page(seed, 800));
    }
    // Emptied, the lz4 pool goes; switching to it again builds a fresh one.
    assert_eq!(z.nr_pools(), 1);
    z.set_param("compressor", "lz4").unwrap();
    assert_eq!(z.nr_pools(), 1);
}

/// `shrink_worker`: `do { ... } while (zswap_total_pages() > thr)` measures the pool only after
/// an iteration, and each iteration takes the next `mem_cgroup_iter()` step from the cursor
/// `zswap_next_shrink`, which persists across runs. With one memcg the walk is memcg, end,
/// memcg, end, ...: the first run ever starts at the memcg, so it visits the LRU head while the
/// pool is below the threshold (the second chance clears the referenced bit); that run stopped
/// after the memcg, so the next one starts at the end of the walk, shrinks nothing and stops
/// there; the third starts at the memcg again and writes the entry back.
#[test]
fn shrink_worker_follows_the_mem_cgroup_iter_cursor() {
    let z = zswap(ZswapConfig { total_ram_pages: 1 << 20, ..ZswapConfig::default() });
    z.store(0, &page(1, 800)).unwrap();
    assert!(z.total_pages() <= z.accept_thr_pages());
    assert_eq!(z.shrink_worker(), 0, "the first visit only rotates the referenced entry");
    assert_eq!(z.shrink_worker(), 0, "the end of the walk, then the pool is measured");
    assert!(z.contains(0));
    assert_eq!(z.shrink_worker(), 1, "the memcg again: written back");
    assert!(!z.contains(0));
    assert_eq!(z.stats().written_back_pages, 1);
}

/// `zswap_compress()` with `memory.zswap.writeback=0` rejects an incompressible page with the
/// compressor's errno: crypto/deflate.c and lib/842 return -ENOSPC when the output overflows
/// the one-page buffer (`reject_compress_poor`), crypto/lzo.c -EINVAL (`reject_compress_fail`).
#[test]
fn an_overflowing_page_without_writeback_counts_the_compressors_errno() {
    for (alg, poor, fail) in [("deflate", 1, 0), ("842", 1, 0), ("lzo", 0, 1), ("lz4", 0, 1)] {
        let module = ZswapParams { compressor: alg.into(), ..ZswapParams::default() };
        let cfg = ZswapConfig { module, writeback: false, ..ZswapConfig::default() };
        let z = zswap(cfg);
        assert!(matches!(z.store(0, &page(7, PS)).unwrap(), StoreOutcome::Rejected(_)), "{alg}");
        let s = z.stats();
        assert_eq!((s.reject_compress_poor, s.reject_compress_fail), (poor, fail), "{alg}");
    }
}

/// `zswap_shrinker_count` with memcg: the scale is `MEMCG_ZSWAP_B >> PAGE_SHIFT` (the entries'
/// compressed bytes in whole pages) over `MEMCG_ZSWAPPED`, not the pool's pages.
#[test]
fn zswap_shrinker_count_scales_by_compressed_bytes_as_memcg() {
    let module = ZswapParams { shrinker_enabled: true, ..ZswapParams::default() };
    let z = zswap(ZswapConfig { module, ..ZswapConfig::default() });
    let mut comp = zmem_comp::create("lzo", &Default::default(), PS).unwrap();
    let mut buf = vec![0u8; 2 * PS];
    let mut bytes = 0u64;
    let n = 40u64;
    for i in 0..n {
        let p = page(i + 10, 1000);
        bytes += comp.compress(&p, &mut buf).unwrap() as u64;
        z.store(i, &p).unwrap();
    }
    let want = n * (bytes >> 12) / n;
    assert_ne!(want, z.total_pages(), "the two scales differ for this set");
    assert_eq!(z.shrinker_count(), want);
}

/// 6.18's module parameters: `max_pool_percent` and `accept_threshold_percent` are plain
/// `uint`s (`param_set_uint`, no upper bound, base 0); the bools go through `kstrtobool`, which
/// also takes t/T/e/E and f/F/d/D (checked on a live 6.18.44 kernel).
#[test]
fn module_parameters_parse_as_param_set_uint_and_kstrtobool() {
    let z = zswap(ZswapConfig::default());
    z.set_param("max_pool_percent", "150").unwrap();
    assert_eq!(z.param("max_pool_percent").unwrap(), "150");
    z.set_param("accept_threshold_percent", "0x65\n").unwrap();
    assert_eq!(z.param("accept_threshold_percent").unwrap(), "101");
    assert!(z.set_param("max_pool_percent", "-1").is_err());
    assert!(z.set_param("max_pool_percent", "4294967296").is_err());
    for (text, want) in [("e", "Y"), ("d", "N"), ("true", "Y"), ("F", "N"), ("on", "Y")] {
        z.set_param("shrinker_enabled", text).unwrap();
        assert_eq!(z.param("shrinker_enabled").unwrap(), want, "{text:?}");
    }
    assert!(z.set_param("enabled", "x").is_err());
    let module = ZswapParams { max_pool_percent: 300, ..ZswapParams::default() };
    let big = zswap(ZswapConfig { module, ..ZswapConfig::default() });
    assert_eq!(big.max_pages(), 3 * ZswapConfig::default().total_ram_pages);
}

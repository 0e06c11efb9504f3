//! The cache's semantics: integrity, exclusive loads, hysteresis, LRU order and second chance,
//! the shrink worker, the shrinker, rejection paths and their counters, parameters.

mod common;

use std::io;
use std::sync::Arc;

use common::*;
use zmem_zswap::{
    Incompressible, MAX_RECLAIM_RETRIES, Reject, SlotStore, StoreOutcome, SwapFile, SwapIn,
    SwapOut, Zswap, ZswapConfig, ZswapError,
};

fn stored(z: &Zswap, offset: u64, page: &[u8]) -> bool {
    matches!(z.store(offset, page).unwrap(), StoreOutcome::Stored { .. })
}

#[test]
fn pages_come_back_intact_and_loads_are_exclusive() {
    let z = build(&config("zsmalloc", 1 << 20, 20, 90), 64);
    let pages: Vec<Vec<u8>> = (0..32)
        .map(|i| match i % 3 {
            0 => small(i),
            1 => half_page(i),
            _ => noise(i),
        })
        .collect();
    for (i, p) in pages.iter().enumerate() {
        assert!(stored(&z, i as u64, p), "page {i} stored");
    }
    let s = z.stats();
    assert_eq!((s.stored_pages, s.zswpout, s.stored_incompressible_pages), (32, 32, 10));
    assert_eq!(z.meminfo().zswapped, 32 * PS as u64);
    assert!(s.pool_total_size > 0 && s.pool_total_size == z.meminfo().zswap);
    let mut out = vec![0u8; PS];
    for (i, p) in pages.iter().enumerate() {
        assert!(z.load(i as u64, &mut out).unwrap());
        assert_eq!(&out, p, "page {i}");
        assert!(!z.load(i as u64, &mut out).unwrap(), "second load of {i} misses");
    }
    let s = z.stats();
    assert_eq!((s.stored_pages, s.stored_incompressible_pages, s.zswpin), (0, 0, 32));
    assert_eq!(s.pool_total_size, 0, "an empty zsmalloc pool holds no pages");
    assert_eq!(z.swap_file().writes() + z.swap_file().reads(), 0, "nothing touched the disk");
}

#[test]
fn a_restore_replaces_the_old_entry() {
    let z = build(&config("zsmalloc", 1 << 20, 20, 90), 4);
    assert!(stored(&z, 1, &small(1)));
    assert!(stored(&z, 1, &small(2)));
    assert_eq!(z.stats().stored_pages, 1);
    let mut out = vec![0u8; PS];
    assert!(z.load(1, &mut out).unwrap());
    assert_eq!(out, small(2));
}

#[test]
fn hysteresis_rejects_until_below_the_accept_threshold() {
    // 200 pages of RAM at 10 %: cap 20 pages; accept threshold 50 % of it: 10 pages. zbud keeps
    // each half page in a page of its own, so pages == entries.
    let z = build(&config("zbud", 200, 10, 50), 64);
    assert_eq!((z.max_pages(), z.accept_thr_pages()), (20, 10));
    for i in 0..20 {
        assert!(stored(&z, i, &half_page(i)));
    }
    assert_eq!(z.total_pages(), 20);
    assert_eq!(z.store(20, &half_page(20)).unwrap(), StoreOutcome::Rejected(Reject::PoolLimit));
    assert_eq!(z.stats().pool_limit_hit, 1);
    assert!(z.is_full());
    // Below the cap but above the threshold: still rejected, and not a new limit hit.
    for i in 0..5 {
        assert!(z.invalidate(i));
    }
    assert_eq!(z.total_pages(), 15);
    assert_eq!(z.store(21, &half_page(21)).unwrap(), StoreOutcome::Rejected(Reject::PoolLimit));
    assert_eq!(z.stats().pool_limit_hit, 1);
    // At the threshold: accepted again.
    for i in 5..10 {
        assert!(z.invalidate(i));
    }
    assert_eq!(z.total_pages(), 10);
    assert!(stored(&z, 22, &half_page(22)));
    assert!(!z.is_full());
    // Nothing was written back: the worker only runs when asked.
    assert_eq!(z.stats().written_back_pages, 0);
}

#[test]
fn accept_threshold_100_disables_the_hysteresis() {
    let z = build(&config("zbud", 100, 10, 100), 64);
    for i in 0..10 {
        assert!(stored(&z, i, &half_page(i)));
    }
    assert!(!stored(&z, 10, &half_page(10)));
    z.invalidate(0);
    assert!(stored(&z, 11, &half_page(11)), "one page below the cap is enough");
}

/// `log_writeback()`: the offsets written back, in order, taken once; none kept before it was
/// asked for (the replay puts each in its swap cache, as `zswap_writeback_entry()` does).
#[test]
fn written_back_offsets_are_logged_once_asked_for() {
    let swap = build_layer(&config("zbud", 1 << 20, 20, 90), 16);
    let z = swap.zswap().unwrap();
    for i in 0..4 {
        assert!(stored(z, i, &half_page(i)));
    }
    assert!(z.writeback_one());
    assert_eq!(z.take_written_back(), Vec::<u64>::new(), "not asked for: nothing kept");
    z.log_writeback();
    assert!(z.writeback_one() && z.writeback_one());
    assert_eq!(z.take_written_back(), vec![1, 2]);
    assert_eq!(z.take_written_back(), Vec::<u64>::new(), "taken once");
}

#[test]
fn writeback_follows_store_order_with_a_second_chance() {
    let swap = build_layer(&config("zbud", 1 << 20, 20, 90), 16);
    let z = swap.zswap().unwrap();
    for i in 0..5 {
        assert!(stored(z, i, &half_page(i)));
    }
    // Everything is referenced: the first pass rotates all five, then 0 goes.
    assert!(z.writeback_one());
    assert!(!z.contains(0) && z.contains(1));
    // A new entry is referenced: 1..4 (now unreferenced) go before it.
    assert!(stored(z, 5, &half_page(5)));
    let mut order = Vec::new();
    while z.writeback_one() {
        let gone: Vec<u64> = (1..6).filter(|&o| !z.contains(o) && !order.contains(&o)).collect();
        assert_eq!(gone.len(), 1, "one entry per writeback");
        order.push(gone[0]);
    }
    assert_eq!(order, vec![1, 2, 3, 4, 5]);
    let s = z.stats();
    assert_eq!((s.written_back_pages, s.zswpwb, s.stored_pages), (6, 6, 0));
    assert_eq!(z.swap_file().writes(), 6);
    let mut out = vec![0u8; PS];
    for i in 0..6 {
        assert_eq!(swap.read(i, &mut out, &mut ()).unwrap(), SwapIn::Device);
        assert_eq!(out, half_page(i), "page {i} read back from the swap device");
    }
}

#[test]
fn the_shrink_worker_writes_back_to_the_threshold_after_a_rejection() {
    let swap = build_layer(&config("zbud", 100, 10, 50), 64);
    let z = swap.zswap().unwrap();
    for i in 0..10 {
        assert_eq!(swap.swap_out(i, &half_page(i), &mut ()).unwrap(), SwapOut::Zswap);
    }
    // The 11th is rejected and written to disk; the worker then rotates the ten referenced
    // entries (ten failures, below the limit of 16) and writes back the oldest five.
    assert_eq!(swap.swap_out(10, &half_page(10), &mut ()).unwrap(), SwapOut::Device);
    let s = z.stats();
    assert_eq!((s.written_back_pages, s.pool_limit_hit, z.total_pages()), (5, 1, 5));
    assert!((0..5).all(|o| !z.contains(o)) && (5..10).all(|o| z.contains(o)));
    assert_eq!(z.swap_file().writes(), 6);
    let mut out = vec![0u8; PS];
    for i in 0..11 {
        let w = swap.read(i, &mut out, &mut ()).unwrap();
        assert_eq!(w, if (5..10).contains(&i) { SwapIn::Zswap } else { SwapIn::Device });
        assert_eq!(out, half_page(i));
    }
}

#[test]
fn the_shrink_worker_gives_up_after_max_reclaim_retries() {
    let swap = build_layer(&config("zbud", 200, 10, 50), 64);
    let z = swap.zswap().unwrap();
    for i in 0..20 {
        swap.swap_out(i, &half_page(i), &mut ()).unwrap();
    }
    assert_eq!(MAX_RECLAIM_RETRIES, 16);
    swap.swap_out(20, &half_page(20), &mut ()).unwrap();
    assert_eq!(z.stats().written_back_pages, 0, "16 rotations, then the worker gives up");
    swap.swap_out(21, &half_page(21), &mut ()).unwrap();
    // The rest are rotated (4 failures) and the oldest ten written back.
    assert_eq!(z.stats().written_back_pages, 10);
    assert_eq!(z.total_pages(), 10);
    assert!((0..10).all(|o| !z.contains(o)));
}

/// 6.18's worker is queued work (`queue_work(shrink_wq, ...)`): stores rejected before it runs
/// queue it once, so where each rejected store ran it (the test above: two runs, ten written
/// back) the queued worker runs once and only rotates.
#[test]
fn queued_shrink_work_runs_once_for_every_store_rejected_before_it() {
    let cfg = ZswapConfig { queued_shrink_work: Some(4), ..config("zbud", 200, 10, 50) };
    let swap = build_layer(&cfg, 64);
    let z = swap.zswap().unwrap();
    for i in 0..20 {
        swap.swap_out(i, &half_page(i), &mut ()).unwrap();
    }
    for i in 20..23 {
        assert_eq!(swap.swap_out(i, &half_page(i), &mut ()).unwrap(), SwapOut::Device);
    }
    assert_eq!(z.shrink_worker_runs(), 0, "queued, not run, by three stores");
    z.run_queued_work();
    z.run_queued_work();
    assert_eq!(z.shrink_worker_runs(), 1, "three rejections, one run");
    assert_eq!(z.stats().written_back_pages, 0, "16 rotations, then it gave up");
    assert_eq!(z.stats().pool_limit_hit, 3);
    // Queued again: it runs at the fourth rejected store, rotates the four left and writes the
    // oldest ten back.
    for i in 23..26 {
        swap.swap_out(i, &half_page(i), &mut ()).unwrap();
    }
    assert_eq!(z.shrink_worker_runs(), 1);
    swap.swap_out(26, &half_page(26), &mut ()).unwrap();
    assert_eq!((z.shrink_worker_runs(), z.stats().written_back_pages), (2, 10));
}

#[test]
fn incompressible_pages_are_stored_as_is_or_rejected() {
    let mut out = vec![0u8; PS];
    // 6.18 on zsmalloc: as-is.
    let swap = build_layer(&config("zsmalloc", 1 << 20, 20, 90), 4);
    let z = swap.zswap().unwrap();
    assert_eq!(z.store(0, &noise(1)).unwrap(), StoreOutcome::Stored { length: PS });
    assert_eq!(z.stats().stored_incompressible_pages, 1);
    assert!(z.load(0, &mut out).unwrap());
    assert_eq!(out, noise(1));
    // Older kernels: reject_compress_poor, and the page goes to disk.
    let cfg = ZswapConfig {
        incompressible: Incompressible::Reject,
        ..config("zsmalloc", 1 << 20, 20, 90)
    };
    let swap = build_layer(&cfg, 4);
    let z = swap.zswap().unwrap();
    assert_eq!(swap.swap_out(0, &noise(1), &mut ()).unwrap(), SwapOut::Device);
    assert_eq!(z.stats().reject_compress_poor, 1);
    assert_eq!(swap.read(0, &mut out, &mut ()).unwrap(), SwapIn::Device);
    assert_eq!(out, noise(1));
    // 6.18 with memory.zswap.writeback=0: rejected as a compressor failure (-EINVAL).
    let cfg = ZswapConfig { writeback: false, ..config("zsmalloc", 1 << 20, 20, 90) };
    let swap = build_layer(&cfg, 4);
    let z = swap.zswap().unwrap();
    assert_eq!(z.store(0, &noise(1)).unwrap(), StoreOutcome::Rejected(Reject::CompressFail));
    assert_eq!(z.stats().reject_compress_fail, 1);
    // zbud cannot hold a whole page: the allocator's -ENOSPC is reject_compress_poor.
    let swap = build_layer(&config("zbud", 1 << 20, 20, 90), 4);
    let z = swap.zswap().unwrap();
    assert_eq!(z.store(0, &noise(1)).unwrap(), StoreOutcome::Rejected(Reject::CompressPoor));
    assert_eq!(z.stats().reject_compress_poor, 1);
    assert_eq!(z.stats().stored_pages, 0);
}

#[test]
fn a_rejected_store_drops_the_stale_entry() {
    let cfg = ZswapConfig {
        incompressible: Incompressible::Reject,
        ..config("zsmalloc", 1 << 20, 20, 90)
    };
    let swap = build_layer(&cfg, 4);
    let z = swap.zswap().unwrap();
    assert!(stored(z, 2, &small(1)));
    assert_eq!(swap.swap_out(2, &noise(2), &mut ()).unwrap(), SwapOut::Device);
    assert!(!z.contains(2));
    assert_eq!(z.stats().stored_pages, 0);
    let mut out = vec![0u8; PS];
    assert_eq!(swap.read(2, &mut out, &mut ()).unwrap(), SwapIn::Device);
    assert_eq!(out, noise(2), "the newer page, not the stale zswap copy");
}

#[test]
fn allocation_failure_is_reject_alloc_fail() {
    let swap = Arc::new(SwapFile::in_memory(PS, 256));
    let z = Zswap::with_alloc_limit(&config("zbud", 1 << 20, 20, 90), swap, Some(2)).unwrap();
    // Three entries in one allocator pool of two frames (zbud: one frame each).
    let (a, b, c) = (0, 1, 2);
    assert!(stored(&z, a, &half_page(0)));
    assert!(stored(&z, b, &half_page(1)));
    assert_eq!(z.store(c, &half_page(2)).unwrap(), StoreOutcome::Rejected(Reject::AllocFail));
    let s = z.stats();
    assert_eq!((s.reject_alloc_fail, s.pool_limit_hit, s.stored_pages), (1, 0, 2));
}

#[test]
fn disabling_stops_stores_and_drops_old_entries() {
    let z = build(&config("zsmalloc", 1 << 20, 20, 90), 4);
    assert!(stored(&z, 0, &small(0)));
    assert!(stored(&z, 1, &small(1)));
    z.set_param("enabled", "N").unwrap();
    assert_eq!(z.store(0, &small(5)).unwrap(), StoreOutcome::Rejected(Reject::Disabled));
    assert!(!z.contains(0) && z.contains(1), "existing entries stay, the rewritten one goes");
    let mut out = vec![0u8; PS];
    assert!(z.load(1, &mut out).unwrap());
    assert_eq!(out, small(1));
}

#[derive(Debug)]
struct FailingWrites;
impl SlotStore for FailingWrites {
    fn write_at(&self, _: &[u8], _: u64) -> io::Result<()> {
        Err(io::Error::other("injected write failure"))
    }
    fn read_at(&self, out: &mut [u8], _: u64) -> io::Result<()> {
        out.fill(0);
        Ok(())
    }
}

#[test]
fn a_failed_writeback_keeps_the_entry() {
    let swap = Arc::new(SwapFile::new(Box::new(FailingWrites), PS, 8));
    let z = Zswap::new(&config("zbud", 1 << 20, 20, 90), swap).unwrap();
    assert!(stored(&z, 3, &half_page(3)));
    assert!(!z.writeback_one());
    let s = z.stats();
    assert_eq!((s.reject_reclaim_fail, s.written_back_pages, s.stored_pages), (1, 0, 1));
    let mut out = vec![0u8; PS];
    assert!(z.load(3, &mut out).unwrap());
    assert_eq!(out, half_page(3));
}

#[test]
fn the_shrinker_counts_scaled_entries_and_scans_with_a_second_chance() {
    let swap = build_layer(&config("zbud", 1 << 20, 20, 90), 16);
    let z = swap.zswap().unwrap();
    for i in 0..4 {
        assert!(stored(z, i, &half_page(i)));
    }
    assert_eq!((z.shrinker_count(), z.shrinker_scan(100)), (0, 0), "disabled by default");
    z.set_param("shrinker_enabled", "Y").unwrap();
    // With memcg, 6.18 scales by MEMCG_ZSWAP_B >> PAGE_SHIFT: 4 objects of ~2.2 KiB are 2
    // whole pages of compressed bytes.
    assert_eq!(z.shrinker_count(), 2, "4 entries x 2 compressed pages / 4 stored");
    // A disk swap-in is subtracted once.
    let mut out = vec![0u8; PS];
    z.swap_file().write_page(9, &half_page(9)).unwrap();
    assert_eq!(swap.read(9, &mut out, &mut ()).unwrap(), SwapIn::Device);
    assert_eq!(z.shrinker_count(), 1, "3 x 2 / 4");
    assert_eq!(z.shrinker_count(), 2);
    // Scanning four rotates everything; the next two write back the two oldest.
    assert_eq!(z.shrinker_scan(4), 0);
    assert_eq!(z.shrinker_scan(2), 2);
    assert!(!z.contains(0) && !z.contains(1) && z.contains(2));
}

#[test]
fn parameters_read_and_write_like_the_module_parameters() {
    let z = build(&ZswapConfig::default(), 4);
    for (name, value) in [
        ("enabled", "Y"),
        ("compressor", "lzo"),
        ("max_pool_percent", "20"),
        ("accept_threshold_percent", "90"),
        ("shrinker_enabled", "N"),
    ] {
        assert_eq!(z.param(name).unwrap(), value, "{name}");
    }
    z.set_param("max_pool_percent", "35").unwrap();
    assert_eq!(z.param("max_pool_percent").unwrap(), "35");
    // A plain uint in 6.18 (`param_set_uint`): 101 is taken, a negative number is not.
    z.set_param("max_pool_percent", "101").unwrap();
    assert!(matches!(z.set_param("max_pool_percent", "-1"), Err(ZswapError::Config(_))));
    assert!(matches!(z.set_param("enabled", "maybe"), Err(ZswapError::Config(_))));
    assert!(matches!(z.set_param("zpool", "zbud"), Err(ZswapError::UnknownParam(_))));
    assert!(z.set_param("compressor", "nonesuch").is_err());
    assert_eq!(z.param("compressor").unwrap(), "lzo");
}

#[test]
fn a_compressor_change_keeps_the_old_pool_until_its_entries_are_gone() {
    let z = build(&ZswapConfig::default(), 8);
    assert!(stored(&z, 0, &small(0)));
    z.set_param("compressor", "lz4").unwrap();
    assert!(stored(&z, 1, &small(1)));
    assert_eq!((z.param("compressor").unwrap().as_str(), z.nr_pools()), ("lz4", 2));
    let mut out = vec![0u8; PS];
    assert!(z.load(0, &mut out).unwrap());
    assert_eq!(out, small(0), "decompressed by the old pool's lzo");
    assert_eq!(z.nr_pools(), 1);
    assert!(z.load(1, &mut out).unwrap());
    assert_eq!(out, small(1));
}

#[test]
fn bad_offsets_and_buffers_are_errors() {
    let z = build(&ZswapConfig::default(), 4);
    assert!(matches!(z.store(4, &small(0)), Err(ZswapError::OffsetOutOfRange { .. })));
    assert!(matches!(z.store(0, &[0u8; 100]), Err(ZswapError::BadLength { .. })));
    let mut short = vec![0u8; 10];
    assert!(matches!(z.load(0, &mut short), Err(ZswapError::BadLength { .. })));
    assert_eq!(z.stats(), zmem_zswap::ZswapStats::default());
}

#[test]
fn debugfs_lists_the_kernel_files_in_order() {
    let z = build(&ZswapConfig::default(), 4);
    z.store(0, &small(0)).unwrap();
    let s = z.stats();
    let names: Vec<&str> = s.debugfs().iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            "pool_limit_hit",
            "reject_reclaim_fail",
            "reject_alloc_fail",
            "reject_kmemcache_fail",
            "reject_compress_fail",
            "reject_compress_poor",
            "decompress_fail",
            "written_back_pages",
            "pool_total_size",
            "stored_pages",
            "stored_incompressible_pages",
        ]
    );
    assert_eq!(s.debugfs_value("stored_pages"), Some(1));
    assert_eq!(s.debugfs_value("pool_total_size"), Some(z.total_pages() * PS as u64));
}

/// `memory.zswap.max` (mm/zswap.c `zswap_store()` → mm/memcontrol.c `obj_cgroup_may_zswap()`):
/// while the memcg's `MEMCG_ZSWAP_B / PAGE_SIZE` is at the limit, a store first asks
/// `shrink_memcg()` for one entry of the memcg's LRU (`shrink_memcg_cb()`, second chance). A
/// rotation (-EAGAIN) rejects the store, counted by no debugfs counter; a writeback lets it go
/// on. Half-page objects: four of them are two pages' worth of compressed bytes.
#[test]
fn memory_zswap_max_rejects_until_shrink_memcg_writes_one_back() {
    let cfg = ZswapConfig { zswap_max_pages: Some(2), ..config("zsmalloc", 1 << 20, 20, 90) };
    let swap = build_layer(&cfg, 64);
    let z = swap.zswap().unwrap();
    for i in 0..4 {
        assert_eq!(swap.swap_out(i, &half_page(i), &mut ()).unwrap(), SwapOut::Zswap, "{i}");
    }
    assert_eq!(z.compressed_bytes() / PS as u64, 2, "at the limit");
    // The four entries are referenced: each store rotates one and is rejected to the device.
    for i in 4..8 {
        let r = z.store(i, &half_page(i)).unwrap();
        assert_eq!(r, StoreOutcome::Rejected(Reject::ZswapMax), "{i}");
    }
    let s = z.stats();
    assert_eq!((s.stored_pages, s.zswpout, s.written_back_pages), (4, 4, 0));
    let rejects = s.reject_compress_poor + s.reject_compress_fail + s.reject_alloc_fail;
    assert_eq!((rejects, s.pool_limit_hit), (0, 0), "no counter counts the memcg's limit");
    // Now the LRU head (0) is unreferenced: it is written back and the store goes on.
    assert!(stored(z, 8, &half_page(8)));
    let s = z.stats();
    assert_eq!((s.written_back_pages, s.zswpwb, s.stored_pages), (1, 1, 4));
    assert!(!z.contains(0) && z.contains(8));
    let mut out = vec![0u8; PS];
    assert_eq!(swap.read(0, &mut out, &mut ()).unwrap(), SwapIn::Device);
    assert_eq!(out, half_page(0));
}

/// `memory.zswap.max` of 0 with an empty LRU, or at the limit with `memory.zswap.writeback=0`:
/// `shrink_memcg()` returns -ENOENT and the store is rejected; with writeback off the page
/// stays in RAM (mm/page_io.c `swap_writeout()`).
#[test]
fn memory_zswap_max_without_writeback_keeps_pages_in_ram() {
    let zero = ZswapConfig { zswap_max_pages: Some(0), ..config("zsmalloc", 1 << 20, 20, 90) };
    let z = build(&zero, 4);
    assert_eq!(z.store(0, &small(0)).unwrap(), StoreOutcome::Rejected(Reject::ZswapMax));
    let cfg = ZswapConfig { writeback: false, zswap_max_pages: Some(1), ..zero };
    let swap = build_layer(&cfg, 64);
    let mut outs = Vec::new();
    for i in 0..3 {
        outs.push(swap.swap_out(i, &half_page(i), &mut ()).unwrap());
    }
    assert_eq!(outs, [SwapOut::Zswap, SwapOut::Zswap, SwapOut::KeptInRam]);
    assert_eq!(swap.zswap().unwrap().stats().written_back_pages, 0);
}

/// No limit (`max`, or cgroup v1, where `obj_cgroup_may_zswap()` always passes): only the
/// pool's own limit rejects.
#[test]
fn without_memory_zswap_max_the_memcg_never_rejects() {
    let z = build(&config("zsmalloc", 1 << 20, 20, 90), 64);
    assert!((0..32).all(|i| stored(&z, i, &half_page(i))));
    assert!(z.compressed_bytes() > 16 * PS as u64);
}

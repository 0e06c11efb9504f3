//! Reclaim's shrinkers on a swap area, with 6.18 `do_shrink_slab()`'s arithmetic
//! (mm/shrinker.c): zswap's shrinker ("mm-zswap") and the zsmalloc shrinkers of its pools
//! ("mm-zspool:..."), and a device's shrinker.
//!
//! Incompressible pages are stored as-is, so the compressed bytes are a page per entry and
//! zswap's count (the LRU scaled by compressed pages per stored page) is the entry count.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use common::*;
use zmem_zswap::{
    DEF_PRIORITY, Shrinker, SlabReclaim, SlabScope, SwapDevice, SwapFile, SwapLayer, SwapOut,
    ZswapConfig, ZswapError,
};

fn shrinking(zpool: &str) -> ZswapConfig {
    let mut cfg = config(zpool, 1 << 22, 100, 90);
    cfg.module.shrinker_enabled = true;
    cfg
}

/// A layer holding `n` incompressible entries at offsets 0..n, stored without any shrinker
/// pass, their `referenced` bits already cleared (one rotation each), so every entry the
/// shrinker reaches is written back.
fn filled(n: u64) -> SwapLayer {
    let mut s = build_layer(&shrinking("zsmalloc"), n + 8);
    s.set_slab_reclaim(None);
    for i in 0..n {
        assert_eq!(s.swap_out(i, &noise(i), &mut ()).unwrap(), SwapOut::Zswap);
    }
    let z = s.zswap().unwrap();
    assert_eq!(z.shrinker_scan(n), 0, "the first visit only rotates");
    assert_eq!(z.shrinker_count(), n);
    s
}

/// Today's default: one pass per swap-out at `DEF_PRIORITY`. Under 4096 entries the new work
/// `(count >> 12) * 4 / 2` is 0; from 4096 to 5000 it is 2 a pass, and the deferred work
/// enters as `nr >> 12`, so the target never reaches a batch of 128 (or the count). Nothing is
/// written back, where accumulating `count * 4 / 2` without the shift wrote back thousands.
#[test]
fn at_def_priority_swap_outs_never_run_a_small_lru_through_the_shrinker() {
    let s = build_layer(&shrinking("zsmalloc"), 5000);
    assert_eq!(s.slab_reclaim(), Some(SlabReclaim::default()));
    for i in 0..5000 {
        assert_eq!(s.swap_out(i, &noise(i), &mut ()).unwrap(), SwapOut::Zswap);
    }
    let z = s.zswap().unwrap();
    assert_eq!(z.nr_entries(), 5000);
    assert_eq!((z.stats().written_back_pages, z.stats().zswpwb), (0, 0));
}

#[test]
fn at_priority_12_an_lru_under_4096_entries_is_never_scanned() {
    let s = filled(4000);
    for _ in 0..10_000 {
        let r = s.shrink_slab(DEF_PRIORITY, SlabScope::Memcg);
        assert_eq!((r.zswap.freeable, r.zswap.delta, r.zswap.scanned), (4000, 0, 0));
    }
    assert_eq!(s.zswap().unwrap().stats().written_back_pages, 0);
}

/// 10,000 entries: at priority 12 each pass adds `(10_000 >> 12) * 4 / 2 = 4` of work and
/// defers it (target `(nr >> 12) + 4` <= 8); the deferred work stops at `2 * 10_000`. A pass
/// at priority 4 then takes it: delta `(10_000 >> 4) * 4 / 2 = 1250`, target
/// `(20_000 >> 4) + 1250 = 2500`: 19 batches of 128 (2432 written back), 68 left over, and
/// `20_000 + 1250 - 2432 = 18_818` deferred to the next pass.
#[test]
fn ten_thousand_entries_scan_the_hand_computed_count_and_carry_the_rest() {
    let s = filled(10_000);
    for i in 1..=6000u64 {
        let r = s.shrink_slab(DEF_PRIORITY, SlabScope::Memcg);
        assert_eq!((r.zswap.delta, r.zswap.scanned), (4, 0));
        assert_eq!(r.zswap.new_nr, (4 * i).min(20_000));
    }
    let z = s.zswap().unwrap();
    assert_eq!(z.stats().written_back_pages, 0);

    let r = s.shrink_slab(4, SlabScope::Memcg).zswap;
    assert_eq!((r.freeable, r.nr, r.delta, r.total_scan), (10_000, 20_000, 1250, 2500));
    assert_eq!((r.scanned, r.freed, r.new_nr), (2432, 2432, 18_818));
    let st = z.stats();
    assert_eq!((st.written_back_pages, st.zswpwb), (2432, 2432));
    assert_eq!(z.swap_file().writes(), 2432);

    // The carried work is taken by the next pass: 7568 entries, delta (7568 >> 4) * 2 = 946,
    // target (18_818 >> 4) + 946 = 2122: 16 batches (2048); 18_818 + 946 - 2048 = 17_716 is
    // more than twice the new count, so the deferred work is capped at 15_136.
    let r = s.shrink_slab(4, SlabScope::Memcg).zswap;
    assert_eq!((r.freeable, r.nr, r.delta, r.total_scan), (7568, 18_818, 946, 2122));
    assert_eq!((r.scanned, r.new_nr), (2048, 2 * 7568));
    assert_eq!(z.stats().written_back_pages, 2432 + 2048);
}

/// The target is capped at twice the count, and a target at or above the count scans even
/// below a batch: 100 entries at priority 0 give delta 200 = the cap; one batch of 128 writes
/// back all 100 (the walk stops at the empty LRU), the 72 left are under both 128 and 100.
#[test]
fn the_target_is_capped_at_twice_the_count() {
    let s = filled(100);
    let r = s.shrink_slab(0, SlabScope::Memcg).zswap;
    assert_eq!((r.freeable, r.delta, r.total_scan, r.scanned, r.freed), (100, 200, 200, 128, 100));
    assert_eq!(r.new_nr, 72, "200 - 128, under the cap of 200");
    assert_eq!(s.zswap().unwrap().nr_entries(), 0);
}

/// `zswap_shrinker_scan()` answers `SHRINK_STOP` when a batch writes nothing back (every entry
/// referenced): the pass ends there, the batch is not counted, and its work is deferred.
#[test]
fn a_batch_that_only_rotates_stops_the_pass() {
    let mut s = build_layer(&shrinking("zsmalloc"), 300);
    s.set_slab_reclaim(None);
    for i in 0..300 {
        s.swap_out(i, &noise(i), &mut ()).unwrap();
    }
    let r = s.shrink_slab(0, SlabScope::Memcg).zswap;
    assert_eq!((r.total_scan, r.scanned, r.freed, r.new_nr), (600, 0, 0, 600));
    // The next pass meets the next 128 referenced entries and stops the same way.
    let r = s.shrink_slab(0, SlabScope::Memcg).zswap;
    assert_eq!((r.nr, r.total_scan, r.scanned, r.new_nr), (600, 600, 0, 600));
    // The third: 44 referenced entries rotate and 84 are written back in the first batch, then
    // 128 and the last 88; the fourth batch finds the LRU empty and stops. 384 scanned.
    let r = s.shrink_slab(0, SlabScope::Memcg).zswap;
    assert_eq!((r.scanned, r.freed, r.new_nr), (384, 300, 600));
    assert_eq!(s.zswap().unwrap().nr_entries(), 0);
}

/// Pages that compress to about 1000 bytes, a fragmented zsmalloc pool (every second entry
/// swapped back in), and reclaim under pressure: the pool's shrinker compacts it. A memcg's own
/// reclaim does not run it (zsmalloc's shrinker is not memcg-aware), nor does priority 12.
#[test]
fn global_reclaim_compacts_a_fragmented_zswap_pool() {
    let mut s = build_layer(&shrinking("zsmalloc"), 2000);
    s.set_slab_reclaim(None);
    for i in 0..2000 {
        assert_eq!(s.swap_out(i, &page_with_noise(i, 950), &mut ()).unwrap(), SwapOut::Zswap);
    }
    let mut out = vec![0u8; PS];
    for i in (0..2000).step_by(2) {
        s.swap_in(i, &mut out, &mut ()).unwrap();
    }
    let z = s.zswap().unwrap();
    z.set_param("shrinker_enabled", "N").unwrap(); // leave the entries where they are
    let before = z.total_pages();

    for _ in 0..100 {
        let r = s.shrink_slab(DEF_PRIORITY, SlabScope::Global);
        assert_eq!(r.zswap_pools.len(), 1, "one zsmalloc pool per zswap pool, as 6.18");
        assert!(r.zswap_pools.iter().all(|p| p.scanned == 0), "fewer than 4096 pages to free");
        let r = s.shrink_slab(0, SlabScope::Memcg);
        assert!(r.zswap_pools.is_empty(), "not memcg-aware");
    }
    assert_eq!(z.total_pages(), before, "nothing compacted so far");

    let r = s.shrink_slab(0, SlabScope::Global);
    assert!(r.zswap_pools.iter().any(|p| p.freeable > 0));
    for p in &r.zswap_pools {
        assert_eq!(
            p.scanned,
            128.min(2 * p.freeable),
            "one batch: a second compaction frees nothing"
        );
        assert!(p.freed <= p.freeable, "{p:?}");
    }
    let freed: u64 = r.zswap_pools.iter().map(|p| p.freed).sum();
    assert!(freed > 0);
    assert_eq!(z.total_pages(), before - freed);
    assert_eq!(r.freed(), freed);
    // Every entry still reads back.
    for i in (1..2000).step_by(2) {
        s.swap_in(i, &mut out, &mut ()).unwrap();
        assert_eq!(out, page_with_noise(i, 950));
    }
}

/// zbud has no shrinker: its pools are counted 0 and never scanned.
#[test]
fn zbud_pools_offer_nothing_to_the_shrinker() {
    let mut s = build_layer(&shrinking("zbud"), 400);
    s.set_slab_reclaim(None);
    for i in 0..400 {
        s.swap_out(i, &page_with_noise(i, 950), &mut ()).unwrap();
    }
    let mut out = vec![0u8; PS];
    for i in (0..400).step_by(2) {
        s.swap_in(i, &mut out, &mut ()).unwrap();
    }
    let r = s.shrink_slab(0, SlabScope::Global);
    assert_eq!((r.zswap_pools[0].freeable, r.zswap_pools[0].scanned), (0, 0));
}

/// A device can offer its own shrinker (zram's zsmalloc pool); the swap layer keeps its
/// deferred work and runs it in global reclaim only, unless it says it is memcg-aware.
#[test]
fn a_device_shrinker_runs_with_the_same_arithmetic() {
    struct Dev {
        file: SwapFile,
        count: u64,
        scanned: AtomicU64,
    }
    impl Shrinker for Dev {
        fn count_objects(&self) -> u64 {
            self.count
        }
        fn scan_objects(&self, n: u64) -> Option<u64> {
            self.scanned.fetch_add(n, Ordering::Relaxed);
            Some(1)
        }
    }
    impl SwapDevice for Dev {
        fn write_page(&self, o: u64, p: &[u8]) -> Result<(), ZswapError> {
            self.file.write_page(o, p)
        }
        fn read_page(&self, o: u64, out: &mut [u8]) -> Result<(), ZswapError> {
            self.file.read_page(o, out)
        }
        fn shrinker(&self) -> Option<&dyn Shrinker> {
            Some(self)
        }
    }
    let dev =
        Arc::new(Dev { file: SwapFile::in_memory(PS, 64), count: 300, scanned: AtomicU64::new(0) });
    let mut s = SwapLayer::new(Box::new(Arc::clone(&dev)), PS, 64);
    // The default pass after each swap-out, at priority 12: 300 objects give no work.
    s.swap_out(0, &noise(0), &mut ()).unwrap();
    assert_eq!(dev.scanned.load(Ordering::Relaxed), 0);
    s.set_slab_reclaim(Some(SlabReclaim { priority: 1, scope: SlabScope::Global }));
    // delta (300 >> 1) * 2 = 300 >= 300: batches 128, 128, then 44 < 128 and < 300: deferred.
    s.swap_out(1, &noise(1), &mut ()).unwrap();
    assert_eq!(dev.scanned.load(Ordering::Relaxed), 256);
    let r = s.shrink_slab(1, SlabScope::Memcg);
    assert_eq!((r.device.scanned, dev.scanned.load(Ordering::Relaxed)), (0, 256));
    // Next global pass: nr 44 enters as 44 >> 1 = 22; target 322: batches 128, 128, then 66.
    let r = s.shrink_slab(1, SlabScope::Global);
    assert_eq!((r.device.nr, r.device.total_scan, r.device.scanned), (44, 322, 256));
    assert_eq!(r.device.new_nr, 44 + 300 - 256);
}

/// cgroup v1: 6.18 charges nothing to the memcg (`obj_cgroup_charge_zswap()` returns on
/// `!cgroup_subsys_on_dfl()`), so `zswap_shrinker_count()` reads 0 stored pages and returns 0:
/// however low the priority, the shrinker writes nothing back. The same entries on v2 are
/// counted and written back.
#[test]
fn on_cgroup_v1_the_shrinker_counts_and_writes_back_nothing() {
    let written_back = |charged: bool| {
        let mut cfg = shrinking("zsmalloc");
        cfg.memcg_charged = charged;
        let mut s = build_layer(&cfg, 5000);
        s.set_slab_reclaim(None);
        for i in 0..5000 {
            assert_eq!(s.swap_out(i, &noise(i), &mut ()).unwrap(), SwapOut::Zswap);
        }
        let z = s.zswap().unwrap();
        let count = z.shrinker_count();
        // A batch that only rotates referenced entries ends its pass: 5000 / 128 passes
        // clear them, the rest write back.
        for _ in 0..100 {
            s.shrink_slab(0, SlabScope::Memcg);
        }
        (count, z.stats().written_back_pages)
    };
    assert_eq!(written_back(false), (0, 0));
    let (count, wb) = written_back(true);
    assert_eq!(count, 5000);
    assert!(wb > 1000, "{wb}");
}

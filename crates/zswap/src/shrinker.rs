//! vmscan's shrinkers: the interface (`struct shrinker`'s `count_objects` / `scan_objects` /
//! `seeks` / `batch`) and `do_shrink_slab()` (6.18 mm/shrinker.c), the arithmetic that turns a
//! shrinker's count and the reclaim priority into how much it is asked to scan.
//!
//! Per call, for a shrinker with `freeable = count_objects()` (nothing happens at 0, and the
//! deferred work is left alone):
//!
//! - `nr` = the work deferred by earlier calls, taken (`xchg_nr_deferred`: reset to 0);
//! - `delta = (freeable >> priority) * 4 / seeks` (shift first, then multiply, then divide:
//!   the truncations are the kernel's), or `freeable / 2` for `seeks == 0`;
//! - `total_scan = min((nr >> priority) + delta, 2 * freeable)`;
//! - batches of `min(batch_size, total_scan)` (`batch_size` = the shrinker's `batch`, or
//!   `SHRINK_BATCH` 128 when 0) while `total_scan >= batch_size || total_scan >= freeable`; a
//!   batch answered with `SHRINK_STOP` ends the loop and is not counted as scanned;
//! - `nr + delta - scanned`, at least 0 and at most `2 * freeable`, is added back to the
//!   deferred work (`add_nr_deferred`).
//!
//! So at `DEF_PRIORITY` (12) a shrinker counting fewer than 4096 objects gets `delta` 0 and,
//! since `nr >> 12` stays 0 under the `2 * freeable` cap, is never scanned: only a lower
//! priority (reclaim that keeps failing) reaches small caches.
//!
//! The priority is the reclaim pass's `sc->priority`: mm/vmscan.c `shrink_node_memcgs()`
//! (classic LRU, under `shrink_node()`) and MGLRU's `shrink_one()` call `shrink_slab(...,
//! sc->priority)` after each pass over a memcg's LRU; `do_try_to_free_pages()` and kswapd's
//! `balance_pgdat()` start `sc->priority` at `DEF_PRIORITY` and lower it by one for each pass
//! that fails to reclaim enough.

use std::sync::atomic::{AtomicU64, Ordering};

/// `DEF_PRIORITY`: the priority every reclaim starts at.
pub const DEF_PRIORITY: u32 = 12;
/// `DEFAULT_SEEKS`: what mm/shrinker.c `shrinker_alloc()` gives every shrinker (zswap's and
/// zsmalloc's keep it).
pub const DEFAULT_SEEKS: u32 = 2;
/// `SHRINK_BATCH`: the scan batch of a shrinker whose `batch` is 0 (zswap's and zsmalloc's).
pub const SHRINK_BATCH: u64 = 128;

/// A memory-pressure shrinker, as vmscan sees it.
pub trait Shrinker {
    /// `count_objects`: how many objects could be freed now (0: nothing to do).
    fn count_objects(&self) -> u64;
    /// `scan_objects`: scan up to `nr_to_scan` objects; `Some(freed)`, or `None` for
    /// `SHRINK_STOP` (the caller stops asking this time).
    fn scan_objects(&self, nr_to_scan: u64) -> Option<u64>;
    /// `shrinker->seeks`.
    fn seeks(&self) -> u32 {
        DEFAULT_SEEKS
    }
    /// `shrinker->batch` (0: [`SHRINK_BATCH`]).
    fn batch(&self) -> u64 {
        0
    }
    /// `SHRINKER_MEMCG_AWARE`: only such shrinkers run in a memcg's own reclaim
    /// (`shrink_slab_memcg()`); the others run only when reclaim targets the root memcg
    /// (global reclaim: kswapd, or direct reclaim of a machine out of memory).
    fn memcg_aware(&self) -> bool {
        false
    }
}

/// zswap's shrinker, "mm-zswap" (mm/zswap.c `zswap_alloc_shrinker()`: NUMA- and memcg-aware,
/// batch 0, `DEFAULT_SEEKS`). `zswap_shrinker_scan()` answers `SHRINK_STOP` when it wrote
/// nothing back (or is disabled), so a batch that only rotates referenced entries ends the
/// pass. It also stops when a writeback finds the folio already in the swap cache (-EEXIST,
/// a race with swap-in), which cannot happen here: the tree lock covers the writeback.
impl Shrinker for crate::Zswap {
    fn count_objects(&self) -> u64 {
        self.shrinker_count()
    }
    fn scan_objects(&self, nr_to_scan: u64) -> Option<u64> {
        match self.shrinker_scan(nr_to_scan) {
            0 => None,
            freed => Some(freed),
        }
    }
    fn memcg_aware(&self) -> bool {
        true
    }
}

/// A zpool's shrinker: zsmalloc's "mm-zspool:<name>" (mm/zsmalloc.c `zs_register_shrinker()`:
/// not memcg-aware, batch 0, `DEFAULT_SEEKS` from `shrinker_alloc()`); `zs_shrinker_count()`
/// sums `zs_can_compact()` over the classes and `zs_shrinker_scan()` compacts the whole pool
/// (`zs_compact()`) whatever `nr_to_scan` asks, `SHRINK_STOP` when it freed nothing. zbud and
/// z3fold (older kernels) have none (count 0).
#[derive(Debug, Clone, Copy)]
pub struct ZPoolShrinker<'a>(pub &'a dyn zmem_pool::ZPool);

impl Shrinker for ZPoolShrinker<'_> {
    fn count_objects(&self) -> u64 {
        self.0.shrinker_count()
    }
    fn scan_objects(&self, _nr_to_scan: u64) -> Option<u64> {
        self.0.shrinker_scan()
    }
}

/// A shrinker's `nr_deferred`: the scan work earlier calls owed and did not do. Atomic, taken
/// and given back as the kernel's `atomic_long_xchg` / `atomic_long_add_return`, so concurrent
/// reclaimers do not both do the same deferred work.
#[derive(Debug, Default)]
pub struct NrDeferred(AtomicU64);

impl NrDeferred {
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// What one `do_shrink_slab()` call did (the fields of the `mm_shrink_slab_start` / `_end`
/// tracepoints).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ShrinkSlab {
    /// `count_objects()`.
    pub freeable: u64,
    /// The deferred work taken at the start.
    pub nr: u64,
    /// This call's new work.
    pub delta: u64,
    /// The scan target, `min((nr >> priority) + delta, 2 * freeable)`.
    pub total_scan: u64,
    /// Objects asked for in batches the shrinker did not stop (`SLABS_SCANNED`).
    pub scanned: u64,
    /// Objects the shrinker freed.
    pub freed: u64,
    /// The deferred work after the call (`new_nr`).
    pub new_nr: u64,
}

/// `do_shrink_slab()` for `shrinker` with its `nr_deferred` at reclaim priority `priority`
/// (0 = most pressure, [`DEF_PRIORITY`] = least).
pub fn do_shrink_slab(shrinker: &dyn Shrinker, deferred: &NrDeferred, priority: u32) -> ShrinkSlab {
    let freeable = shrinker.count_objects();
    if freeable == 0 {
        return ShrinkSlab { new_nr: deferred.get(), ..ShrinkSlab::default() };
    }
    let nr = deferred.0.swap(0, Ordering::Relaxed);
    // `priority` is at most DEF_PRIORITY in the kernel; a larger one only shifts everything
    // away (checked_shr would wrap the shift amount instead).
    let shr = |x: u64| if priority >= 64 { 0 } else { x >> priority };
    let delta = match shrinker.seeks() {
        0 => freeable / 2,
        seeks => shr(freeable).saturating_mul(4) / u64::from(seeks),
    };
    let cap = freeable.saturating_mul(2);
    let mut total_scan = shr(nr).saturating_add(delta).min(cap);
    let batch_size = match shrinker.batch() {
        0 => SHRINK_BATCH,
        b => b,
    };
    let start_scan = total_scan;
    let (mut scanned, mut freed) = (0u64, 0u64);
    while total_scan >= batch_size || total_scan >= freeable {
        let nr_to_scan = batch_size.min(total_scan);
        let Some(f) = shrinker.scan_objects(nr_to_scan) else { break };
        freed += f;
        total_scan -= nr_to_scan;
        scanned += nr_to_scan;
    }
    let next_deferred = nr.saturating_add(delta).saturating_sub(scanned).min(cap);
    let new_nr = deferred.0.fetch_add(next_deferred, Ordering::Relaxed) + next_deferred;
    ShrinkSlab { freeable, nr, delta, total_scan: start_scan, scanned, freed, new_nr }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};

    /// `count` objects; each scan frees what it is asked for (or stops when told to).
    struct Fake {
        count: Cell<u64>,
        seeks: u32,
        batch: u64,
        stop: bool,
        asked: RefCell<Vec<u64>>,
    }

    impl Fake {
        fn new(count: u64) -> Self {
            Self { count: Cell::new(count), seeks: 2, batch: 0, stop: false, asked: vec![].into() }
        }
    }

    impl Shrinker for Fake {
        fn count_objects(&self) -> u64 {
            self.count.get()
        }
        fn scan_objects(&self, n: u64) -> Option<u64> {
            self.asked.borrow_mut().push(n);
            (!self.stop).then_some(n)
        }
        fn seeks(&self) -> u32 {
            self.seeks
        }
        fn batch(&self) -> u64 {
            self.batch
        }
    }

    #[test]
    fn under_4096_objects_priority_12_scans_nothing_ever() {
        let f = Fake::new(4000);
        let d = NrDeferred::default();
        for _ in 0..10_000 {
            let s = do_shrink_slab(&f, &d, DEF_PRIORITY);
            assert_eq!((s.delta, s.scanned), (0, 0));
        }
        assert!(f.asked.borrow().is_empty());
        assert_eq!(d.get(), 0, "no new work, nothing deferred");
    }

    #[test]
    fn delta_shifts_before_it_multiplies() {
        // (8191 >> 12) * 4 / 2 = 2, where (8191 * 4 / 2) >> 12 would be 3.
        let d = NrDeferred::default();
        assert_eq!(do_shrink_slab(&Fake::new(8191), &d, 12).delta, 2);
        let f = Fake { seeks: 3, ..Fake::new(8191) };
        assert_eq!(do_shrink_slab(&f, &NrDeferred::default(), 12).delta, 1, "4 / 3");
        let f = Fake { seeks: 0, ..Fake::new(8191) };
        assert_eq!(do_shrink_slab(&f, &NrDeferred::default(), 12).delta, 4095, "freeable / 2");
    }

    #[test]
    fn scans_in_batches_and_defers_the_remainder() {
        // priority 6: delta = (10_000 >> 6) * 4 / 2 = 156 * 2 = 312 -> batches 128, 128; 56
        // left (< 128 and < freeable) is deferred: 0 + 312 - 256 = 56.
        let f = Fake::new(10_000);
        let d = NrDeferred::default();
        let s = do_shrink_slab(&f, &d, 6);
        assert_eq!((s.delta, s.total_scan, s.scanned, s.freed), (312, 312, 256, 256));
        assert_eq!(*f.asked.borrow(), [128, 128]);
        assert_eq!((s.new_nr, d.get()), (56, 56));
        // Next call: nr = 56, total_scan = (56 >> 6) + 312 = 312 again; deferred 56 + 312 - 256.
        let s = do_shrink_slab(&f, &d, 6);
        assert_eq!((s.nr, s.total_scan, s.scanned, s.new_nr), (56, 312, 256, 112));
    }

    #[test]
    fn the_scan_target_is_capped_at_twice_freeable_and_small_caches_are_scanned_whole() {
        // Priority 0, 100 objects, a million deferred: the target is capped at 200. One batch
        // of 128; the 72 left are under both the batch and freeable, so the pass ends.
        let f = Fake::new(100);
        let d = NrDeferred(AtomicU64::new(1_000_000));
        let s = do_shrink_slab(&f, &d, 0);
        assert_eq!((s.nr, s.delta, s.total_scan), (1_000_000, 200, 200));
        assert_eq!(*f.asked.borrow(), [128]);
        // Deferred: 1_000_000 + 200 - 128, capped at 200.
        assert_eq!(s.new_nr, 200);
        // 40 objects at priority 1: delta (40 >> 1) * 2 = 40 >= freeable: one batch of 40.
        let f = Fake::new(40);
        let s = do_shrink_slab(&f, &NrDeferred::default(), 1);
        assert_eq!((s.scanned, s.new_nr), (40, 0));
    }

    #[test]
    fn deferred_work_is_shifted_by_the_priority_and_carried() {
        // 70_000 objects at priority 12: delta (70_000 >> 12 = 17) * 2 = 34 per call. The
        // deferred work grows by 34 a call; it is added as nr >> 12, so the first batch comes
        // when (nr >> 12) + 34 >= 128: nr >= 94 << 12 -- past the 140_000 cap, never.
        let f = Fake::new(70_000);
        let d = NrDeferred::default();
        for i in 1..=5000u64 {
            let s = do_shrink_slab(&f, &d, 12);
            assert_eq!(s.scanned, 0);
            assert_eq!(s.new_nr, (34 * i).min(140_000));
        }
        // 300_000 objects: delta (73) * 2 = 146 >= 128: one batch per call, 18 deferred each
        // time, which adds (nr >> 12) once nr reaches 4096.
        let f = Fake::new(300_000);
        let d = NrDeferred::default();
        let mut nr = 0u64;
        for _ in 0..300 {
            let s = do_shrink_slab(&f, &d, 12);
            let total = (nr >> 12) + 146;
            assert_eq!(s.total_scan, total);
            let scanned = total / 128 * 128;
            assert_eq!(s.scanned, scanned);
            nr = (nr + 146 - scanned).min(600_000);
            assert_eq!(s.new_nr, nr);
        }
        assert!(nr >= 4096, "the carried work reached the shifted term ({nr})");
    }

    #[test]
    fn a_stop_ends_the_pass_and_nothing_counts_as_scanned() {
        let f = Fake { stop: true, ..Fake::new(1000) };
        let d = NrDeferred::default();
        let s = do_shrink_slab(&f, &d, 0);
        assert_eq!((s.scanned, s.freed), (0, 0));
        assert_eq!(*f.asked.borrow(), [128]);
        assert_eq!(s.new_nr, 2000, "all of delta deferred, capped at 2 * freeable");
    }

    #[test]
    fn nothing_to_count_leaves_the_deferred_work_alone() {
        let d = NrDeferred(AtomicU64::new(77));
        let s = do_shrink_slab(&Fake::new(0), &d, 0);
        assert_eq!((s.scanned, s.new_nr, d.get()), (0, 77, 77));
    }

    #[test]
    fn a_shrinker_batch_replaces_shrink_batch() {
        let f = Fake { batch: 10, ..Fake::new(10_000) };
        let s = do_shrink_slab(&f, &NrDeferred::default(), 10);
        // delta = 9 * 2 = 18: one batch of 10, 8 deferred.
        assert_eq!((s.scanned, s.new_nr), (10, 8));
    }
}

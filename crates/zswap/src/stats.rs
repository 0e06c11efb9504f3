//! The counters: debugfs `/sys/kernel/debug/zswap/*` by their names and in their order
//! (mm/zswap.c `zswap_debugfs_init()`), the `/proc/vmstat` events (ZSWPIN, ZSWPOUT, ZSWPWB) and
//! the two `/proc/meminfo` lines (fs/proc/meminfo.c `meminfo_proc_show()`: `Zswap` is
//! `zswap_total_pages()`, `Zswapped` is `zswap_stored_pages`).
//!
//! mm/zswap.c keeps most debugfs values as plain u64s updated racily and `zswap_stored_pages` /
//! `zswap_stored_incompressible_pages` as atomics that `zswap_store_page()` raises and
//! `zswap_entry_free()` lowers (gauges, not event counts). `pool_total_size` is computed on read
//! (`debugfs_get_total_size()`: `zswap_total_pages() * PAGE_SIZE`).

use std::sync::atomic::{AtomicU64, Ordering};

/// Live counters.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub pool_limit_hit: AtomicU64,
    pub reject_reclaim_fail: AtomicU64,
    pub reject_alloc_fail: AtomicU64,
    pub reject_kmemcache_fail: AtomicU64,
    pub reject_compress_fail: AtomicU64,
    pub reject_compress_poor: AtomicU64,
    pub decompress_fail: AtomicU64,
    pub written_back_pages: AtomicU64,
    pub stored_pages: AtomicU64,
    pub stored_incompressible_pages: AtomicU64,
    pub zswpin: AtomicU64,
    pub zswpout: AtomicU64,
    pub zswpwb: AtomicU64,
}

pub(crate) fn inc(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn dec(c: &AtomicU64) {
    c.fetch_sub(1, Ordering::Relaxed);
}

/// A snapshot of debugfs, vmstat and meminfo.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZswapStats {
    pub pool_limit_hit: u64,
    pub reject_reclaim_fail: u64,
    pub reject_alloc_fail: u64,
    /// Entry allocation (`zswap_entry_cache_alloc()` in `zswap_store_page()`) never fails here;
    /// kept so the file list matches the kernel's.
    pub reject_kmemcache_fail: u64,
    pub reject_compress_fail: u64,
    pub reject_compress_poor: u64,
    pub decompress_fail: u64,
    pub written_back_pages: u64,
    /// Pool pages over all pools x page size, in bytes.
    pub pool_total_size: u64,
    /// Entries now stored.
    pub stored_pages: u64,
    /// Entries now stored uncompressed.
    pub stored_incompressible_pages: u64,
    /// vmstat ZSWPIN: loads that hit (`zswap_load()`).
    pub zswpin: u64,
    /// vmstat ZSWPOUT: pages of folios stored whole (`zswap_store()`, counted only on success).
    pub zswpout: u64,
    /// vmstat ZSWPWB: entries written back (`zswap_writeback_entry()`).
    pub zswpwb: u64,
}

impl ZswapStats {
    pub(crate) fn snapshot(c: &Counters, pool_total_size: u64) -> Self {
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Self {
            pool_limit_hit: r(&c.pool_limit_hit),
            reject_reclaim_fail: r(&c.reject_reclaim_fail),
            reject_alloc_fail: r(&c.reject_alloc_fail),
            reject_kmemcache_fail: r(&c.reject_kmemcache_fail),
            reject_compress_fail: r(&c.reject_compress_fail),
            reject_compress_poor: r(&c.reject_compress_poor),
            decompress_fail: r(&c.decompress_fail),
            written_back_pages: r(&c.written_back_pages),
            pool_total_size,
            stored_pages: r(&c.stored_pages),
            stored_incompressible_pages: r(&c.stored_incompressible_pages),
            zswpin: r(&c.zswpin),
            zswpout: r(&c.zswpout),
            zswpwb: r(&c.zswpwb),
        }
    }

    /// The debugfs files in creation order, as (name, value).
    pub fn debugfs(&self) -> [(&'static str, u64); 11] {
        [
            ("pool_limit_hit", self.pool_limit_hit),
            ("reject_reclaim_fail", self.reject_reclaim_fail),
            ("reject_alloc_fail", self.reject_alloc_fail),
            ("reject_kmemcache_fail", self.reject_kmemcache_fail),
            ("reject_compress_fail", self.reject_compress_fail),
            ("reject_compress_poor", self.reject_compress_poor),
            ("decompress_fail", self.decompress_fail),
            ("written_back_pages", self.written_back_pages),
            ("pool_total_size", self.pool_total_size),
            ("stored_pages", self.stored_pages),
            ("stored_incompressible_pages", self.stored_incompressible_pages),
        ]
    }

    /// One debugfs file by name.
    pub fn debugfs_value(&self, name: &str) -> Option<u64> {
        self.debugfs().into_iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

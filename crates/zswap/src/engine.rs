//! The cache: store, load, invalidate and writeback by swap offset, the pool limit with its
//! hysteresis, and the two reclaim paths (the limit's shrink worker and the memory-pressure
//! shrinker).
//!
//! Data structures: 6.18 indexes entries in one xarray per `1 << ZSWAP_ADDRESS_SPACE_SHIFT`
//! (16384) swap slots, 64 MiB of 4 KiB pages (mm/zswap.c `swap_zswap_tree()`, `zswap_swapon()`);
//! here one `HashMap<offset, Entry>` (the "tree") plays that role, and the [`Lru`] beside it
//! orders the same entries for reclaim (the kernel's global `zswap_list_lru`). Both sit under
//! one mutex, which also covers a writeback from start to end, so a load racing with the
//! writeback of the same offset finds either the entry or the page on the swap device, never
//! neither (the kernel gets that from the locked swap-cache folio `zswap_writeback_entry()`
//! allocates, and the `xa_load()` check that the entry is still the tree's). Compression runs
//! outside the lock (into the stream's buffer), as `zswap_store_page()` compresses
//! (`zswap_compress()`) before its `xa_store()`; the allocator locks itself.
//!
//! An entry is what mm/zswap.c `struct zswap_entry` holds: the pool it was compressed with, the
//! object handle, the stored length (`length == page_size` marks a page stored as-is) and the
//! `referenced` bit of the second chance, set by `zswap_store_page()` and cleared by the first
//! `shrink_memcg_cb()` visit.
//!
//! The shrink worker, which `zswap_store()` queues on `shrink_wq` when a store fails while
//! `zswap_pool_reached_full` is set, runs here when the caller asks
//! ([`Zswap::run_pending_work`], called by [`crate::SwapLayer::swap_out`] after the store), so
//! store latency does not include it, as in the kernel; or, with
//! [`crate::ZswapConfig::queued_shrink_work`], once at the owner's scheduling point
//! ([`Zswap::run_queued_work`]) for every store rejected before it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use zmem_comp::{CompError, ObjectSource};
use zmem_pool::{Handle, PoolConfig, PoolError};

use crate::config::{parse_bool, parse_percent};
use crate::lru::Lru;
use crate::pool::ZswapPool;
use crate::stats::{Counters, dec, inc};
use crate::{Incompressible, SwapFile, ZswapConfig, ZswapError, ZswapStats};

/// `MAX_RECLAIM_RETRIES` of mm/internal.h: the failures after which mm/zswap.c
/// `shrink_worker()` gives up.
pub const MAX_RECLAIM_RETRIES: u32 = 16;

/// Why a store did not keep the page (it then goes to the swap device).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// zswap is disabled.
    Disabled,
    /// `zswap_check_limits()` said no: the pool is at or over `zswap_max_pages()` (each such
    /// store counts `pool_limit_hit`), or refilling after being full and still above the accept
    /// threshold (not counted).
    PoolLimit,
    /// `-ENOSPC` from the compressor or the allocator (`zswap_compress()`:
    /// `reject_compress_poor`); with [`Incompressible::Reject`], a page that does not compress.
    CompressPoor,
    /// Any other compressor error, or in 6.18 an incompressible page while writeback is
    /// disabled (`-EINVAL`; `reject_compress_fail`).
    CompressFail,
    /// The allocator is out of memory (`zs_malloc()` fails: `reject_alloc_fail`).
    AllocFail,
    /// The memcg is at its `memory.zswap.max` (mm/memcontrol.c `obj_cgroup_may_zswap()`) and
    /// `shrink_memcg()` wrote nothing back to make room: no debugfs counter counts it.
    ZswapMax,
}

/// What a store did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreOutcome {
    /// Kept, as an object of `length` bytes (`length == page_size`: stored as-is).
    Stored {
        length: usize,
    },
    Rejected(Reject),
}

/// `/proc/meminfo`'s zswap lines, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meminfo {
    /// `Zswap`: the pool's memory.
    pub zswap: u64,
    /// `Zswapped`: the original size of the stored pages.
    pub zswapped: u64,
}

#[derive(Debug)]
struct Entry {
    pool: Arc<ZswapPool>,
    handle: Handle,
    length: usize,
    referenced: bool,
    /// The entry's live LRU ticket.
    seq: u64,
}

#[derive(Debug, Default)]
struct Tree {
    index: HashMap<u64, Entry>,
    lru: Lru,
}

impl Tree {
    fn live(index: &HashMap<u64, Entry>) -> impl Fn(u64, u64) -> bool + '_ {
        move |o, s| index.get(&o).is_some_and(|e| e.seq == s)
    }
}

/// One step of a shrinker walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Empty,
    Rotated,
    WrittenBack,
    Failed,
}

/// The zswap cache in front of one swap device.
#[derive(Debug)]
pub struct Zswap {
    page_size: usize,
    zpool: String,
    pool_config: PoolConfig,
    total_ram_pages: u64,
    incompressible: Incompressible,
    writeback: bool,
    /// The memcg's `memory.zswap.max` in pages ([`ZswapConfig::zswap_max_pages`]).
    zswap_max_pages: Option<u64>,
    /// [`ZswapConfig::memcg_charged`]: without it the shrinker counts nothing.
    memcg_charged: bool,
    enabled: AtomicBool,
    shrinker_enabled: AtomicBool,
    max_pool_percent: AtomicU32,
    accept_threshold_percent: AtomicU32,
    /// All pools with entries, the current one last.
    pools: Mutex<Vec<Arc<ZswapPool>>>,
    tree: Mutex<Tree>,
    swap: Arc<SwapFile>,
    reached_full: AtomicBool,
    shrink_pending: AtomicBool,
    /// [`crate::ZswapConfig::queued_shrink_work`], and the stores rejected since the worker
    /// was queued.
    queued_shrink_work: Option<u32>,
    rejected_while_queued: AtomicU32,
    /// Times the shrink worker ran.
    worker_runs: AtomicU64,
    /// `zswap_next_shrink` of the one-memcg walk: true when `shrink_worker()`'s next
    /// `mem_cgroup_iter()` returns the memcg, false when it returns NULL (the end of the walk).
    shrink_cursor_at_memcg: AtomicBool,
    nr_disk_swapins: AtomicU64,
    max_pool_pages: AtomicU64,
    /// Compressed bytes of the stored entries: the memcg's `MEMCG_ZSWAP_B`, which
    /// `zswap_store_page()` charges with each entry's length (`obj_cgroup_charge_zswap()`,
    /// mm/memcontrol.c) and `zswap_entry_free()` uncharges.
    compressed_bytes: AtomicU64,
    /// Offsets written back since the last [`Zswap::take_written_back`], kept only once
    /// [`Zswap::log_writeback`] asked (`None` otherwise, so nothing grows unread).
    written_back: Mutex<Option<Vec<u64>>>,
    counters: Counters,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// x * n / d, exact (in u128, saturated to u64). 6.18's `zswap_max_pages()` and
/// `zswap_accept_thr_pages()` compute `x * n / 100` in `unsigned long`: the same value whenever
/// the product fits in 64 bits (any percentage up to 100 on any 64-bit machine); past that the
/// kernel's product wraps and ours does not.
fn mult_frac(x: u64, n: u32, d: u64) -> u64 {
    u64::try_from(u128::from(x) * u128::from(n) / u128::from(d)).unwrap_or(u64::MAX)
}

/// How 6.18 counts, while writeback is disabled, a page whose compressed output is not smaller
/// than a page (`overflow`: larger, so it overflows the one-page destination of
/// `zswap_compress()`): by the errno the crypto driver returns. On overflow crypto/deflate.c
/// `deflate_compress_one()` (no destination left) and lib/842/842_compress.c `sw842_compress()`
/// return -ENOSPC (`reject_compress_poor`); crypto/lzo.c `__lzo_compress()`, crypto/lzo-rle.c,
/// crypto/lz4.c, crypto/lz4hc.c and crypto/zstd.c `zstd_compress_one()` return -EINVAL
/// (`reject_compress_fail`). An empty output or one of exactly a page gets -EINVAL from
/// `zswap_compress()` itself.
fn overflow_reject(compressor: &str, overflow: bool) -> Reject {
    match compressor {
        "deflate" | "842" if overflow => Reject::CompressPoor,
        _ => Reject::CompressFail,
    }
}

impl Zswap {
    /// Builds the cache in front of `swap`. The swap device's page size must match.
    pub fn new(config: &ZswapConfig, swap: Arc<SwapFile>) -> Result<Self, ZswapError> {
        Self::with_alloc_limit(config, swap, None)
    }

    /// As [`Zswap::new`], with each allocator pool limited to `alloc_limit_pages` frames: past
    /// it allocations fail as the kernel's `GFP_NOWAIT` ones do under pressure
    /// (`reject_alloc_fail`).
    pub fn with_alloc_limit(
        config: &ZswapConfig,
        swap: Arc<SwapFile>,
        alloc_limit_pages: Option<u64>,
    ) -> Result<Self, ZswapError> {
        if swap.page_size() != config.page_size {
            return Err(ZswapError::Config(format!(
                "swap device page size {} differs from zswap's {}",
                swap.page_size(),
                config.page_size
            )));
        }
        // Both are plain `uint` parameters in 6.18: every u32 is a valid value.
        let (max_pct, accept_pct) =
            (config.module.max_pool_percent, config.module.accept_threshold_percent);
        let pool_config = PoolConfig {
            page_size: config.page_size,
            chain_size: config.chain_size,
            max_pages: alloc_limit_pages,
            ..PoolConfig::default()
        };
        let first =
            ZswapPool::new(&config.module.compressor, &config.params, &config.zpool, &pool_config)?;
        Ok(Self {
            page_size: config.page_size,
            zpool: config.zpool.clone(),
            pool_config,
            total_ram_pages: config.total_ram_pages,
            incompressible: config.incompressible,
            writeback: config.writeback,
            memcg_charged: config.memcg_charged,
            zswap_max_pages: config.zswap_max_pages,
            enabled: AtomicBool::new(config.enabled),
            shrinker_enabled: AtomicBool::new(config.module.shrinker_enabled),
            max_pool_percent: AtomicU32::new(max_pct),
            accept_threshold_percent: AtomicU32::new(accept_pct),
            pools: Mutex::new(vec![first]),
            tree: Mutex::new(Tree::default()),
            swap,
            reached_full: AtomicBool::new(false),
            shrink_pending: AtomicBool::new(false),
            queued_shrink_work: config.queued_shrink_work,
            rejected_while_queued: AtomicU32::new(0),
            worker_runs: AtomicU64::new(0),
            shrink_cursor_at_memcg: AtomicBool::new(true),
            nr_disk_swapins: AtomicU64::new(0),
            max_pool_pages: AtomicU64::new(0),
            compressed_bytes: AtomicU64::new(0),
            written_back: Mutex::new(None),
            counters: Counters::default(),
        })
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// The swap device behind the cache.
    pub fn swap_file(&self) -> &Arc<SwapFile> {
        &self.swap
    }

    /// The memcg's `memory.zswap.writeback`: whether entries may be written back, and (in the
    /// swap layer) whether a rejected page may go to the device.
    pub fn writeback_enabled(&self) -> bool {
        self.writeback
    }

    // ---- module parameters ----

    /// Writes a module parameter (`/sys/module/zswap/parameters/<name>`).
    pub fn set_param(&self, name: &str, value: &str) -> Result<(), ZswapError> {
        let bad = || ZswapError::Config(format!("{name}={value:?}"));
        match name {
            "enabled" => self.enabled.store(parse_bool(value).ok_or_else(bad)?, Ordering::Relaxed),
            "shrinker_enabled" => {
                self.shrinker_enabled.store(parse_bool(value).ok_or_else(bad)?, Ordering::Relaxed)
            }
            "max_pool_percent" => {
                self.max_pool_percent.store(parse_percent(name, value)?, Ordering::Relaxed)
            }
            "accept_threshold_percent" => {
                self.accept_threshold_percent.store(parse_percent(name, value)?, Ordering::Relaxed)
            }
            "compressor" => {
                let name = value.trim();
                let mut pools = lock(&self.pools);
                if pools.last().is_some_and(|p| p.compressor == name) {
                    return Ok(());
                }
                // `__zswap_param_set`: a pool of that compressor that still holds entries
                // (`zswap_pool_find_get`) becomes current again; only without one is a new
                // pool made. The kernel's parameter names only the algorithm: a new pool gets
                // its defaults.
                Self::drop_unused_pools(&mut pools);
                match pools.iter().position(|p| p.compressor == name) {
                    Some(i) => {
                        let p = pools.remove(i);
                        pools.push(p);
                    }
                    None => {
                        let params = zmem_comp::Params::default();
                        let p = ZswapPool::new(name, &params, &self.zpool, &self.pool_config)?;
                        pools.push(p);
                    }
                }
                Self::drop_unused_pools(&mut pools);
            }
            _ => return Err(ZswapError::UnknownParam(name.to_string())),
        }
        Ok(())
    }

    /// Reads a module parameter as the kernel prints it (bools as `Y`/`N`).
    pub fn param(&self, name: &str) -> Result<String, ZswapError> {
        let yn = |b: &AtomicBool| if b.load(Ordering::Relaxed) { "Y" } else { "N" }.to_string();
        Ok(match name {
            "enabled" => yn(&self.enabled),
            "shrinker_enabled" => yn(&self.shrinker_enabled),
            "max_pool_percent" => self.max_pool_percent.load(Ordering::Relaxed).to_string(),
            "accept_threshold_percent" => {
                self.accept_threshold_percent.load(Ordering::Relaxed).to_string()
            }
            "compressor" => self.current_pool().compressor.clone(),
            _ => return Err(ZswapError::UnknownParam(name.to_string())),
        })
    }

    fn drop_unused_pools(pools: &mut Vec<Arc<ZswapPool>>) {
        let n = pools.len();
        let mut i = 0;
        pools.retain(|p| {
            i += 1;
            i == n || Arc::strong_count(p) > 1
        });
    }

    fn current_pool(&self) -> Arc<ZswapPool> {
        let pools = lock(&self.pools);
        // The list is never empty: `new` puts one pool in and only non-current ones are dropped.
        Arc::clone(&pools[pools.len() - 1])
    }

    /// The pools alive, the current one last: each one's allocator has its own shrinker.
    pub(crate) fn pools(&self) -> Vec<Arc<ZswapPool>> {
        let mut pools = lock(&self.pools);
        Self::drop_unused_pools(&mut pools);
        pools.clone()
    }

    /// Pools alive (the current one and older ones that still hold entries).
    pub fn nr_pools(&self) -> usize {
        let mut pools = lock(&self.pools);
        Self::drop_unused_pools(&mut pools);
        pools.len()
    }

    // ---- limits ----

    /// mm/zswap.c `zswap_total_pages()`: `zs_get_total_pages()` summed over the pools.
    pub fn total_pages(&self) -> u64 {
        lock(&self.pools).iter().map(|p| p.total_pages()).sum()
    }

    /// `zswap_max_pages()`: `totalram_pages() * max_pool_percent / 100` (see [`mult_frac`] for
    /// the overflow).
    pub fn max_pages(&self) -> u64 {
        mult_frac(self.total_ram_pages, self.max_pool_percent.load(Ordering::Relaxed), 100)
    }

    /// `zswap_accept_thr_pages()`: below this a full pool accepts stores again.
    pub fn accept_thr_pages(&self) -> u64 {
        mult_frac(self.max_pages(), self.accept_threshold_percent.load(Ordering::Relaxed), 100)
    }

    /// Whether the pool is in the "reached full" state of the hysteresis.
    pub fn is_full(&self) -> bool {
        self.reached_full.load(Ordering::Relaxed)
    }

    /// The stored entries' compressed bytes: what `zswap_store_page()` charges the memcg on
    /// cgroup v2 (mm/memcontrol.c `obj_cgroup_charge_zswap()`, `MEMCG_ZSWAP_B`, read by
    /// `memory.zswap.current`), each entry's length, not the allocator's pages.
    pub fn compressed_bytes(&self) -> u64 {
        self.compressed_bytes.load(Ordering::Relaxed)
    }

    /// The most pages the pools have held at once, sampled after every store.
    pub fn max_pool_pages(&self) -> u64 {
        self.max_pool_pages.load(Ordering::Relaxed)
    }

    /// mm/zswap.c `zswap_check_limits()`: true when the store must be rejected.
    fn check_limits(&self) -> bool {
        let cur = self.total_pages();
        if cur >= self.max_pages() {
            inc(&self.counters.pool_limit_hit);
            self.reached_full.store(true, Ordering::Relaxed);
        } else if self.is_full() && cur <= self.accept_thr_pages() {
            self.reached_full.store(false, Ordering::Relaxed);
        }
        self.is_full()
    }

    /// mm/memcontrol.c `obj_cgroup_may_zswap()`: false when the memcg is at its
    /// `memory.zswap.max` (`MEMCG_ZSWAP_B / PAGE_SIZE`, flushed, not below the limit; a limit of
    /// 0 always). Only a pre-check: the store that passes may take the memcg past the limit.
    fn may_zswap(&self) -> bool {
        let pages = self.compressed_bytes() / self.page_size as u64;
        self.zswap_max_pages.is_none_or(|max| max != 0 && pages < max)
    }

    /// mm/zswap.c `shrink_memcg()` for the one memcg: -ENOENT with writeback disabled or an
    /// empty LRU, else one `shrink_memcg_cb()` step from the LRU head (one node's
    /// `nr_to_walk = 1`): Ok when it wrote an entry back, -EAGAIN when it only rotated a
    /// referenced one or the writeback failed.
    fn shrink_memcg(&self) -> Result<(), Step> {
        if !self.writeback {
            return Err(Step::Empty);
        }
        match self.shrink_one() {
            Step::WrittenBack => Ok(()),
            other => Err(other),
        }
    }

    // ---- store / load / invalidate ----

    fn check_page(&self, offset: u64, len: usize) -> Result<(), ZswapError> {
        if len != self.page_size {
            return Err(ZswapError::BadLength { len, page_size: self.page_size });
        }
        if offset >= self.swap.nr_slots() {
            return Err(ZswapError::OffsetOutOfRange { offset, slots: self.swap.nr_slots() });
        }
        Ok(())
    }

    /// A folio of `len` bytes at `offset`: a power-of-two number of whole pages, all inside the
    /// swap device. Returns its number of pages.
    fn check_folio(&self, offset: u64, len: usize) -> Result<u64, ZswapError> {
        crate::folio_pages(offset, len, self.page_size, self.swap.nr_slots())
    }

    /// mm/zswap.c `zswap_store()`: tries to keep `page` for swap offset `offset`. A rejection is not an
    /// error: the caller writes the page to the swap device (see [`crate::SwapLayer::swap_out`]). Any
    /// older entry for the offset is replaced on success and dropped on rejection, so it can
    /// never shadow the newer page on the device.
    pub fn store(&self, offset: u64, page: &[u8]) -> Result<StoreOutcome, ZswapError> {
        self.check_page(offset, page.len())?;
        self.store_folio(offset, page)
    }

    /// `zswap_store()` of a folio of one or more pages (a large folio: 2, 4, ... 512 pages) at
    /// swap offsets `offset..offset + nr`, as 6.18 stores one (mm/zswap.c `zswap_store()`): the
    /// memcg's `memory.zswap.max` first (`obj_cgroup_may_zswap()`; at the limit `shrink_memcg()`
    /// must write one entry back or the store is [`Reject::ZswapMax`]), then the pool's limits
    /// once for the folio (`zswap_check_limits()`), then each page is
    /// compressed and stored on its own (`zswap_store_page()`, one entry per page); if any page
    /// fails, the folio is rejected whole and every entry at its offsets is erased, those this
    /// store made included (the `check_old` loop), so the device gets the folio whole. `zswpout`
    /// counts the folio's pages only when all were stored (`count_vm_events(ZSWPOUT,
    /// nr_pages)`). [`StoreOutcome::Stored`]'s `length` is then the sum of the entries' lengths.
    pub fn store_folio(&self, offset: u64, folio: &[u8]) -> Result<StoreOutcome, ZswapError> {
        self.store_folio_with(offset, folio, None)
    }

    /// [`Zswap::store_folio`], taking each page's compressed object from `objects` (asked for
    /// by the page's swap offset, with the current pool's compressor and parameters) instead
    /// of compressing the page, where it has one (see [`ObjectSource`]); everything else is the
    /// same store: the size checks of `zswap_compress()`, the allocation, the entry and the
    /// counters, so the pool, the entries and the pages loaded back are those of a store that
    /// compressed, provided the objects are what the pool's stream would have made.
    pub fn store_folio_with(
        &self,
        offset: u64,
        folio: &[u8],
        objects: Option<&dyn ObjectSource>,
    ) -> Result<StoreOutcome, ZswapError> {
        let nr = self.check_folio(offset, folio.len())?;
        let outcome = if !self.enabled.load(Ordering::Relaxed) {
            StoreOutcome::Rejected(Reject::Disabled)
        } else if !self.may_zswap() && self.shrink_memcg().is_err() {
            StoreOutcome::Rejected(Reject::ZswapMax)
        } else if self.check_limits() {
            StoreOutcome::Rejected(Reject::PoolLimit)
        } else {
            let mut total = 0;
            let mut outcome = StoreOutcome::Stored { length: 0 };
            for (i, page) in folio.chunks_exact(self.page_size).enumerate() {
                match self.compress_and_insert(offset + i as u64, page, objects)? {
                    StoreOutcome::Stored { length } => total += length,
                    rejected => {
                        outcome = rejected;
                        break;
                    }
                }
            }
            if let StoreOutcome::Stored { .. } = outcome {
                outcome = StoreOutcome::Stored { length: total };
            }
            outcome
        };
        match outcome {
            StoreOutcome::Stored { .. } => {
                self.counters.zswpout.fetch_add(nr, Ordering::Relaxed);
            }
            StoreOutcome::Rejected(why) => {
                for o in offset..offset + nr {
                    self.invalidate(o);
                }
                match why {
                    Reject::CompressPoor => inc(&self.counters.reject_compress_poor),
                    Reject::CompressFail => inc(&self.counters.reject_compress_fail),
                    Reject::AllocFail => inc(&self.counters.reject_alloc_fail),
                    Reject::Disabled | Reject::PoolLimit | Reject::ZswapMax => {}
                }
                if why != Reject::Disabled && self.is_full() {
                    self.shrink_pending.store(true, Ordering::Relaxed);
                    self.rejected_while_queued.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        Ok(outcome)
    }

    fn compress_and_insert(
        &self,
        offset: u64,
        page: &[u8],
        objects: Option<&dyn ObjectSource>,
    ) -> Result<StoreOutcome, ZswapError> {
        let pool = self.current_pool();
        let ps = self.page_size;
        // The object from `objects` where it has one for this pool's compressor, else the
        // pool's stream compresses the page; both then go through the same checks below.
        let given = objects.and_then(|o| o.object(offset, &pool.compressor, pool.params()));
        let mut stream = None;
        let compressed: Result<&[u8], CompError> = match given {
            Some(object) => Ok(object),
            None => {
                let s = stream.insert(pool.get()?);
                s.comp.compress(page, &mut s.buffer).map(|dlen| &s.buffer[..dlen])
            }
        };
        // mm/zswap.c `zswap_compress()`: a compressor error, an empty output or one of a page or
        // more is stored as-is while writeback is allowed, and otherwise rejected with the
        // compressor's errno (-EINVAL when it had none): -ENOSPC counts `reject_compress_poor`,
        // anything else `reject_compress_fail`.
        let data: Result<&[u8], Reject> = match compressed {
            Ok(d) if !d.is_empty() && d.len() < ps => Ok(d),
            failed => match (self.incompressible, self.writeback, failed) {
                (Incompressible::StoreAsIs, true, _) => Ok(page),
                // 6.18 with writeback disabled: our buffer (two pages, see `crate::pool`) may
                // hold an output 6.18's one-page buffer would have refused, so the errno is the
                // one the kernel's compressor returns on overflow (`overflow_reject`).
                (Incompressible::StoreAsIs, false, Err(CompError::OutputTooSmall { .. })) => {
                    Err(overflow_reject(&pool.compressor, true))
                }
                (Incompressible::StoreAsIs, false, Ok(d)) => {
                    Err(overflow_reject(&pool.compressor, d.len() > ps))
                }
                // Older kernels: an object of a page or more does not fit (-ENOSPC).
                (Incompressible::Reject, _, Err(CompError::OutputTooSmall { .. })) => {
                    Err(Reject::CompressPoor)
                }
                (_, _, Err(_)) => Err(Reject::CompressFail),
                (Incompressible::Reject, _, Ok(_)) => Err(Reject::CompressPoor),
            },
        };
        let stored = match data {
            Ok(d) => match pool.zpool.store(d) {
                Ok(h) => Ok((h, d.len())),
                Err(PoolError::TooLarge { .. }) => Err(Reject::CompressPoor),
                Err(_) => Err(Reject::AllocFail),
            },
            Err(r) => Err(r),
        };
        if let Some(s) = stream {
            pool.put(s);
        }
        let (handle, length) = match stored {
            Ok(x) => x,
            Err(r) => return Ok(StoreOutcome::Rejected(r)),
        };

        let old = {
            let mut tree = lock(&self.tree);
            let seq = tree.lru.push_tail(offset);
            let entry = Entry { pool, handle, length, referenced: true, seq };
            let old = tree.index.insert(offset, entry);
            let Tree { index, lru } = &mut *tree;
            lru.maybe_compact(index.len(), Tree::live(index));
            old
        };
        if let Some(old) = old {
            self.free_entry(old);
        }
        inc(&self.counters.stored_pages);
        self.compressed_bytes.fetch_add(length as u64, Ordering::Relaxed);
        if length == ps {
            inc(&self.counters.stored_incompressible_pages);
        }
        self.max_pool_pages.fetch_max(self.total_pages(), Ordering::Relaxed);
        Ok(StoreOutcome::Stored { length })
    }

    fn free_entry(&self, e: Entry) {
        // The handle came from this pool and is freed once: an error here would be a bug in the
        // allocator, and the entry is gone either way.
        let _ = e.pool.zpool.free(e.handle);
        dec(&self.counters.stored_pages);
        self.compressed_bytes.fetch_sub(e.length as u64, Ordering::Relaxed);
        if e.length == self.page_size {
            dec(&self.counters.stored_incompressible_pages);
        }
    }

    /// Decompresses an entry into `out` (a page).
    fn decompress(&self, offset: u64, e: &Entry, out: &mut [u8]) -> Result<(), ZswapError> {
        let fail = |why: String| {
            inc(&self.counters.decompress_fail);
            ZswapError::Decompress { offset, why }
        };
        if e.length == self.page_size {
            return e.pool.zpool.read(e.handle, out).map(|_| ()).map_err(|x| fail(x.to_string()));
        }
        let mut stream = e.pool.get()?;
        let src = &mut stream.buffer[..e.length];
        let r = match e.pool.zpool.read(e.handle, src) {
            Ok(_) => match stream.comp.decompress(src, out) {
                Ok(n) if n == self.page_size => Ok(()),
                Ok(n) => Err(fail(format!("{n} bytes instead of a page"))),
                Err(x) => Err(fail(x.to_string())),
            },
            Err(x) => Err(fail(x.to_string())),
        };
        e.pool.put(stream);
        r
    }

    /// mm/zswap.c `zswap_load()`: if zswap holds `offset`, decompresses it into `out`, erases
    /// the entry and returns true; false (-ENOENT) means the page is on the swap device. 6.18
    /// erases the entry only when the folio is in the swap cache, which every swap-in from a
    /// swap file is (the exception, a `SWP_SYNCHRONOUS_IO` device's singleton fault, is not
    /// modelled). A decompression failure keeps the entry and returns
    /// [`ZswapError::Decompress`] (-EIO).
    pub fn load(&self, offset: u64, out: &mut [u8]) -> Result<bool, ZswapError> {
        self.check_page(offset, out.len())?;
        let Some(e) = lock(&self.tree).index.remove(&offset) else {
            return Ok(false);
        };
        if let Err(err) = self.decompress(offset, &e, out) {
            let mut tree = lock(&self.tree);
            if let std::collections::hash_map::Entry::Vacant(v) = tree.index.entry(offset) {
                v.insert(e);
            } else {
                self.free_entry(e);
            }
            return Err(err);
        }
        self.free_entry(e);
        inc(&self.counters.zswpin);
        Ok(true)
    }

    /// mm/zswap.c `zswap_invalidate()` (called by mm/swapfile.c `swap_range_free()`):
    /// drops the entry if there is one.
    pub fn invalidate(&self, offset: u64) -> bool {
        let e = lock(&self.tree).index.remove(&offset);
        match e {
            Some(e) => {
                self.free_entry(e);
                true
            }
            None => false,
        }
    }

    /// Whether zswap holds `offset`.
    pub fn contains(&self, offset: u64) -> bool {
        lock(&self.tree).index.contains_key(&offset)
    }

    /// Entries stored (the LRU's length).
    pub fn nr_entries(&self) -> usize {
        lock(&self.tree).index.len()
    }

    /// mm/zswap.c `zswap_folio_swapin()`, which mm/page_io.c `swap_read_folio()` calls for
    /// every read that `zswap_load()` did not serve: a page came from the swap device, so
    /// zswap wrote back (or rejected) something still in use. `zswap_shrinker_count()` consumes
    /// these from its count (`nr_disk_swapins`).
    pub fn note_disk_swapin(&self) {
        self.nr_disk_swapins.fetch_add(1, Ordering::Relaxed);
    }

    // ---- writeback and reclaim ----

    /// Keeps the offset of every entry written back from now on, for
    /// [`Zswap::take_written_back`]: mm/zswap.c `zswap_writeback_entry()` decompresses into a
    /// folio `__read_swap_cache_async()` allocated in the swap cache, charged to the entry's
    /// memcg and put on the LRU, and the caller that keeps RAM (the replay) puts the page
    /// there.
    pub fn log_writeback(&self) {
        lock(&self.written_back).get_or_insert_with(Vec::new);
    }

    /// The offsets written back since the last call, in order (none unless
    /// [`Zswap::log_writeback`] was called).
    pub fn take_written_back(&self) -> Vec<u64> {
        lock(&self.written_back).as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// One step from the LRU head, as mm/zswap.c `shrink_memcg_cb()`: rotate a referenced entry
    /// to the tail with the bit cleared (`LRU_ROTATE`), or write an unreferenced one back
    /// (`zswap_writeback_entry()`); a failed writeback leaves the entry at the tail (the kernel
    /// rotates it before trying) and counts `reject_reclaim_fail`.
    fn shrink_one(&self) -> Step {
        let mut tree = lock(&self.tree);
        let Tree { index, lru } = &mut *tree;
        let Some(offset) = lru.pop_head(Tree::live(index)) else {
            return Step::Empty;
        };
        let Some(e) = index.get_mut(&offset) else {
            return Step::Empty;
        };
        if e.referenced {
            e.referenced = false;
            e.seq = lru.push_tail(offset);
            return Step::Rotated;
        }
        let Some(e) = index.remove(&offset) else {
            return Step::Empty;
        };
        // The tree lock is held through the write, so a load of this offset waits and then
        // finds the page on the device.
        let mut page = vec![0u8; self.page_size];
        let written = self
            .decompress(offset, &e, &mut page)
            .and_then(|()| self.swap.write_page(offset, &page));
        match written {
            Ok(()) => {
                self.free_entry(e);
                if let Some(log) = lock(&self.written_back).as_mut() {
                    log.push(offset);
                }
                inc(&self.counters.written_back_pages);
                inc(&self.counters.zswpwb);
                Step::WrittenBack
            }
            Err(_) => {
                let mut e = e;
                e.seq = lru.push_tail(offset);
                index.insert(offset, e);
                inc(&self.counters.reject_reclaim_fail);
                Step::Failed
            }
        }
    }

    /// Writes back the LRU head entry (second chance applies); true if one was written back.
    /// A lab helper: no kernel path loops like this.
    pub fn writeback_one(&self) -> bool {
        loop {
            match self.shrink_one() {
                Step::WrittenBack => return true,
                Step::Rotated => continue,
                Step::Empty | Step::Failed => return false,
            }
        }
    }

    /// Runs the shrink worker if a rejected store queued it, unless the work waits for the
    /// owner or for more rejected stores ([`crate::ZswapConfig::queued_shrink_work`]).
    pub fn run_pending_work(&self) {
        let due = match self.queued_shrink_work {
            None => true,
            Some(n) => self.rejected_while_queued.load(Ordering::Relaxed) >= n,
        };
        if due {
            self.run_queued_work();
        }
    }

    /// Runs the shrink worker once if a rejected store queued it since it last ran: however
    /// many stores were rejected meanwhile, it runs once (`WORK_STRUCT_PENDING`).
    pub fn run_queued_work(&self) {
        if self.shrink_pending.swap(false, Ordering::Relaxed) {
            self.rejected_while_queued.store(0, Ordering::Relaxed);
            self.shrink_worker();
        }
    }

    /// How many times the shrink worker ran (a count the kernel keeps only in its trace
    /// events: `workqueue_execute_start` of `shrink_worker`).
    pub fn shrink_worker_runs(&self) -> u64 {
        self.worker_runs.load(Ordering::Relaxed)
    }

    /// mm/zswap.c `shrink_worker()`, for the one memcg this model has. Returns the pages
    /// written back.
    ///
    /// The kernel's loop, `do { ... } while (zswap_total_pages() > thr)` with `thr` the accept
    /// threshold taken once at the start, visits one memcg per iteration, round-robin through
    /// `mem_cgroup_iter()` from a cursor (`zswap_next_shrink`) that persists across runs. A memcg
    /// is shrunk by `shrink_memcg()`: one LRU entry per node (`shrink_memcg_cb()`), so one
    /// [`Zswap::shrink_one`] here; it fails (-EAGAIN) when it only rotated a referenced entry
    /// or the writeback failed, and has nothing to shrink (-ENOENT: empty LRU, or writeback
    /// disabled) otherwise. An iteration where `mem_cgroup_iter()` returns NULL, the end of
    /// a tree walk, shrinks nothing. Failures are counted for a failed shrink, and for an end of
    /// walk only when no memcg was tried (`attempts`) in that walk; the worker gives up at
    /// [`MAX_RECLAIM_RETRIES`].
    ///
    /// With one memcg holding entries (memcgs with an empty LRU return -ENOENT and change no
    /// count), the walk is memcg, end, memcg, end, ... and the counts are the kernel's: a failed
    /// shrink is one failure, and the end of a walk after a tried memcg none. Where a run starts
    /// is the cursor's: the first run ever starts at the memcg (`zswap_next_shrink` is NULL, so
    /// the walk begins), and a run that stopped after shrinking the memcg leaves the next one to
    /// start at the end of the walk, which costs that run one failure (no memcg tried yet) and
    /// measures the pool before any writeback. An empty LRU ends the run here: the pool is then
    /// empty, so the kernel's loop ends at its next test as well.
    pub fn shrink_worker(&self) -> u64 {
        self.worker_runs.fetch_add(1, Ordering::Relaxed);
        if !self.writeback {
            // Every visit is -ENOENT: the kernel gives up after MAX_RECLAIM_RETRIES walks.
            return 0;
        }
        let thr = self.accept_thr_pages();
        let (mut failures, mut attempts, mut written) = (0, 0, 0);
        loop {
            if self.shrink_cursor_at_memcg.swap(false, Ordering::Relaxed) {
                match self.shrink_one() {
                    Step::Empty => break,
                    Step::WrittenBack => {
                        attempts += 1;
                        written += 1;
                    }
                    Step::Rotated | Step::Failed => {
                        attempts += 1;
                        failures += 1;
                        if failures == MAX_RECLAIM_RETRIES {
                            break;
                        }
                    }
                }
            } else {
                // `mem_cgroup_iter()` returned NULL: the walk ended; the next one starts at the
                // memcg.
                self.shrink_cursor_at_memcg.store(true, Ordering::Relaxed);
                if attempts == 0 {
                    failures += 1;
                    if failures == MAX_RECLAIM_RETRIES {
                        break;
                    }
                }
                attempts = 0;
            }
            if self.total_pages() <= thr {
                break;
            }
        }
        written
    }

    /// Whether reclaim's `shrink_slab()` flushes the memcg's statistics through this shrinker:
    /// 6.18's `zswap_shrinker_count()` calls `mem_cgroup_flush_stats()` (not the rate-limited
    /// flush) once the shrinker and writeback are on, before it reads the memcg's stored pages,
    /// and `shrink_slab_memcg()` calls it while the memcg has entries on zswap's `list_lru`
    /// (the shrinker's bit, set by `list_lru_add()`). The flush happens when more than
    /// `MEMCG_CHARGE_BATCH` updates per CPU are pending; a reclaim's own isolations, putbacks
    /// and frees are a few updates per page scanned, so the replay takes each call as a flush.
    pub fn shrinker_flushes_stats(&self) -> bool {
        self.shrinker_enabled.load(Ordering::Relaxed) && self.writeback && self.nr_entries() > 0
    }

    /// `zswap_shrinker_count()`: the LRU length less the disk swap-ins since the last count
    /// (consumed), scaled by the memcg's compressed pages per stored page. 0 when the shrinker
    /// or writeback is disabled. With memcg (6.18's usual build, and the kernel this models),
    /// the "backing" pages are `MEMCG_ZSWAP_B >> PAGE_SHIFT`, the entries' compressed bytes in
    /// whole pages, not the pool's pages (that is the `!memcg` branch). On cgroup v1 the
    /// memcg's stored pages read 0 ([`ZswapConfig::memcg_charged`]): nothing to count.
    pub fn shrinker_count(&self) -> u64 {
        if !self.shrinker_enabled.load(Ordering::Relaxed) || !self.writeback {
            return 0;
        }
        let stored =
            if self.memcg_charged { self.counters.stored_pages.load(Ordering::Relaxed) } else { 0 };
        if stored == 0 {
            return 0;
        }
        let mut freeable = self.nr_entries() as u64;
        let swapins = self.nr_disk_swapins.load(Ordering::Relaxed);
        let used = swapins.min(freeable);
        self.nr_disk_swapins.fetch_sub(used, Ordering::Relaxed);
        freeable -= used;
        let backing =
            self.compressed_bytes.load(Ordering::Relaxed) >> self.page_size.trailing_zeros();
        (u128::from(freeable) * u128::from(backing) / u128::from(stored)) as u64
    }

    /// `zswap_shrinker_scan()`: walks up to `nr_to_scan` LRU entries with the second chance and
    /// writes back the unreferenced ones; returns the number written back.
    pub fn shrinker_scan(&self, nr_to_scan: u64) -> u64 {
        if !self.shrinker_enabled.load(Ordering::Relaxed) || !self.writeback {
            return 0;
        }
        let mut freed = 0;
        for _ in 0..nr_to_scan {
            match self.shrink_one() {
                Step::Empty => break,
                Step::WrittenBack => freed += 1,
                Step::Rotated | Step::Failed => {}
            }
        }
        freed
    }

    // ---- statistics ----

    /// The debugfs counters, vmstat events and pool size now.
    pub fn stats(&self) -> ZswapStats {
        ZswapStats::snapshot(&self.counters, self.total_pages() * self.page_size as u64)
    }

    /// `/proc/meminfo`'s Zswap and Zswapped.
    pub fn meminfo(&self) -> Meminfo {
        Meminfo {
            zswap: self.total_pages() * self.page_size as u64,
            zswapped: self.counters.stored_pages.load(Ordering::Relaxed) * self.page_size as u64,
        }
    }
}

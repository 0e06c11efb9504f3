//! The device: configuration before `disksize`, the live state after it, and the page I/O paths.
//!
//! Lifecycle as in the kernel: a fresh device takes its algorithm, parameters, backing device
//! and limits; writing `disksize` builds the slot table, the pool and one [`Zcomp`] per
//! configured priority (the "live" state; drivers/block/zram/zram_drv.c `disksize_store()`);
//! `reset` throws the live state away (`zram_reset_device()`). I/O on a device without live
//! state fails with EIO (its capacity is 0, so the block layer's end-of-device check fails the
//! bio).
//!
//! Concurrency: the live state sits behind an `RwLock<Option<Arc<Live>>>`; page I/O and the
//! other operations on it hold it read-locked ([`LiveRef`]), so pages contend only on their own
//! slot lock, and `reset` waits for operations in flight.
//! Compression runs outside the slot lock, as in the kernel (zram_drv.c `zram_write_page()`): a
//! write compresses into its stream's buffer, allocates and fills the object, and only then
//! locks the slot to swap the old object for the new one.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

use zmem_comp::Params;
use zmem_pool::{Handle, PoolConfig, ZPool};

use crate::backing::{Backing, BackingStore};
use crate::errno::{Errno, ZramError, err};
use crate::slot::{Flag, SlotGuard, SlotTable};
use crate::zcomp::{Stream, Zcomp};
use crate::{BdStat, IoStat, MmStat};

/// zram_drv.h `ZRAM_MAX_COMPS` with CONFIG_ZRAM_MULTI_COMP (1 without): the primary and three
/// secondaries.
pub const MAX_COMPS: usize = 4;

/// The kernel's `CONFIG_ZRAM_DEF_COMP` at its Kconfig default (drivers/block/zram/Kconfig:
/// `ZRAM_DEF_COMP_LZORLE`).
pub const DEFAULT_ALGORITHM: &str = "lzo-rle";

/// The build options of the kernel's zram that change its interface. All on by default; the
/// conformance tests turn them off to match a kernel built without them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    /// CONFIG_ZRAM_WRITEBACK: `backing_dev`, `writeback*`, `bd_stat`.
    pub writeback: bool,
    /// CONFIG_ZRAM_MULTI_COMP: `recomp_algorithm`, `recompress`, priorities 1..3.
    pub multi_comp: bool,
    /// CONFIG_ZRAM_TRACK_ENTRY_ACTIME: `idle=<seconds>`.
    pub track_actime: bool,
}

impl Default for Features {
    fn default() -> Self {
        Self { writeback: true, multi_comp: true, track_actime: true }
    }
}

/// What a device is built with; fixed for its lifetime.
#[derive(Debug, Clone)]
pub struct ZramConfig {
    /// 4096, 16384 or 65536.
    pub page_size: usize,
    /// Allocator name from `zmem_pool::allocators()`; the kernel always uses zsmalloc.
    pub pool: String,
    /// zsmalloc chain size (4..=16).
    pub chain_size: usize,
    pub features: Features,
    /// The algorithms `comp_algorithm` offers (the kernel's CONFIG_ZRAM_BACKEND_* choice);
    /// empty means every kernel backend of the registry.
    pub backends: Vec<String>,
    /// Also offer the registry's research codecs (`lz4m`, `wkdm`), which no kernel has. Off by
    /// default, so a default device lists and accepts exactly 6.18's backends; the lab turns
    /// it on to run them.
    pub research_codecs: bool,
    /// Most page frames the pool's arena may hold (`None`: as many as the system gives). The
    /// kernel has no such knob (zsmalloc takes pages until the system refuses); it stands in for
    /// a machine out of memory, so tests can drive the allocation-failure paths.
    pub pool_max_pages: Option<u64>,
    /// zmem extension: let `backing_dev` take a regular file as well as a block device. Off by
    /// default, so `backing_dev` is 6.18's: ENOTBLK for anything but a block device (opened
    /// exclusively, EBUSY when busy). A regular file, which needs no root, no loop device and
    /// no spare disk, is what tests and experiments without a block device use.
    pub allow_regular_backing_file: bool,
}

impl ZramConfig {
    /// Whether `name` is an offered backend.
    pub fn offers(&self, name: &str) -> bool {
        zmem_comp::find(name).is_ok_and(|a| a.in_kernel || self.research_codecs)
            && (self.backends.is_empty() || self.backends.iter().any(|b| b == name))
    }

    /// The offered backends in the kernel's order.
    pub fn offered(&self) -> Vec<&'static str> {
        zmem_comp::algorithms().iter().map(|a| a.name).filter(|n| self.offers(n)).collect()
    }
}

impl Default for ZramConfig {
    fn default() -> Self {
        Self {
            page_size: 4096,
            pool: "zsmalloc".into(),
            chain_size: 8,
            features: Features::default(),
            backends: Vec::new(),
            research_codecs: false,
            pool_max_pages: None,
            allow_regular_backing_file: false,
        }
    }
}

/// Nanoseconds for slot access times. The kernel uses boot time; tests use a clock they can
/// move.
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now_ns(&self) -> u64;
}

/// Boot time in nanoseconds, as 6.18's `ktime_get_boottime()` stamps `ac_time`: `idle=<age>`
/// then compares to the nanosecond, so a slot touched a moment before the `idle` write is
/// older than a cutoff of "now" (7.0 keeps whole seconds and would not mark it).
///
/// Read from `CLOCK_BOOTTIME` through the vDSO: one full-resolution clock read per page I/O,
/// as the kernel's, and only on devices that track access times.
#[derive(Debug, Default)]
pub struct MonotonicClock;

impl Clock for MonotonicClock {
    fn now_ns(&self) -> u64 {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a live, writable timespec, the only memory clock_gettime writes.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
        // CLOCK_BOOTTIME exists since Linux 2.6.39; should it fail, time stands still, which
        // only makes every slot look freshly accessed.
        if rc != 0 {
            return 0;
        }
        (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
    }
}

/// Counters behind the stat files (zram_drv.h `struct zram_stats`).
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub compr_data_size: AtomicU64,
    pub pages_stored: AtomicU64,
    pub same_pages: AtomicU64,
    pub huge_pages: AtomicU64,
    pub huge_pages_since: AtomicU64,
    pub failed_reads: AtomicU64,
    pub failed_writes: AtomicU64,
    pub notify_free: AtomicU64,
    pub miss_free: AtomicU64,
    pub max_used_pages: AtomicU64,
    pub bd_count: AtomicU64,
    pub bd_reads: AtomicU64,
    pub bd_writes: AtomicU64,
}

impl Stats {
    fn zero(&self) {
        for c in [
            &self.compr_data_size,
            &self.pages_stored,
            &self.same_pages,
            &self.huge_pages,
            &self.huge_pages_since,
            &self.failed_reads,
            &self.failed_writes,
            &self.notify_free,
            &self.miss_free,
            &self.max_used_pages,
            &self.bd_count,
            &self.bd_reads,
            &self.bd_writes,
        ] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

fn inc(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

fn dec(c: &AtomicU64) {
    c.fetch_sub(1, Ordering::Relaxed);
}

/// Settings made before `disksize` (and the writeback budget, which may change any time).
#[derive(Debug, Default)]
pub(crate) struct Control {
    pub comp_algs: [Option<String>; MAX_COMPS],
    pub params: [Params; MAX_COMPS],
    pub backing: Option<(PathBuf, Box<dyn BackingStore>)>,
}

/// Everything that exists between `disksize` and `reset`.
#[derive(Debug)]
pub(crate) struct Live {
    pub disksize: u64,
    pub table: SlotTable,
    pub pool: Arc<dyn ZPool>,
    pub comps: [Option<Zcomp>; MAX_COMPS],
    /// The kernel's `num_active_comps`: the primary plus configured secondaries.
    pub num_active_comps: usize,
    pub huge_class_size: usize,
    pub backing: Option<Backing>,
}

/// A zram device.
#[derive(Debug)]
pub struct Zram {
    pub(crate) config: ZramConfig,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) control: Mutex<Control>,
    pub(crate) live: RwLock<Option<Arc<Live>>>,
    pub(crate) limit_pages: AtomicU64,
    pub(crate) stats: Stats,
    /// 6.18 runs one writeback or recompression at a time (`zram->pp_in_progress`).
    pub(crate) pp_in_progress: AtomicBool,
    pub(crate) wb_limit_enable: AtomicBool,
    /// Writeback budget in 4 KiB units (`zram->bd_wb_limit`, under `wb_limit_lock`).
    pub(crate) wb_limit: Mutex<u64>,
    /// The disk's openers and zram's `claim` (under the disk's `open_mutex` in the kernel).
    pub(crate) opened: Mutex<OpenState>,
}

/// Who holds the disk: the kernel's `disk_openers()` count and `zram->claim`.
#[derive(Debug, Default)]
pub(crate) struct OpenState {
    openers: usize,
    claimed: bool,
}

/// The device held open, as `swapon` or a mount holds the kernel's block device: while one
/// exists, `reset` is EBUSY. Dropping it closes the device.
#[derive(Debug)]
#[must_use = "the device is open only while the guard lives"]
pub struct OpenGuard<'a>(&'a Zram);

impl Drop for OpenGuard<'_> {
    fn drop(&mut self) {
        self.0.opened().openers -= 1;
    }
}

/// The device claimed, as `reset` and `hot_remove` claim the kernel's (`zram->claim`): while
/// one exists, opening the device and `reset` are EBUSY. Dropping it releases the claim.
#[derive(Debug)]
#[must_use = "the device is claimed only while the guard lives"]
pub struct ClaimGuard<'a>(&'a Zram);

impl Drop for ClaimGuard<'_> {
    fn drop(&mut self) {
        self.0.opened().claimed = false;
    }
}

/// The live state, read-locked for one operation on it. `reset` and `disksize` wait for the
/// operations in flight (in the kernel both take `init_lock` for writing), so no page I/O (or
/// writeback, or recompression) finishes on a reset device and counts in its fresh stats. For
/// page I/O it is also cheaper: holding the read lock is two atomic operations where cloning
/// the `Arc` out of it is four, and a request of many pages (`write_pages`, `read_pages`)
/// takes it once. No code holding a `LiveRef` takes the lock again (a second read could wait
/// behind a queued `reset` and deadlock).
pub(crate) struct LiveRef<'a>(RwLockReadGuard<'a, Option<Arc<Live>>>);

impl std::ops::Deref for LiveRef<'_> {
    type Target = Live;
    fn deref(&self) -> &Live {
        match self.0.as_deref() {
            Some(live) => live,
            // `live_or` builds a `LiveRef` only over live state, and the read lock keeps it.
            None => unreachable!("a LiveRef over an uninitialised device"),
        }
    }
}

/// Where a device's writes and recompressions take objects made elsewhere
/// ([`Zram::write_page_with`], [`Zram::recompress_with`]): the index is the slot's.
pub use zmem_comp::ObjectSource;

/// zram_drv.c `page_same_filled()`: the fill word when every `unsigned long` (8 bytes on
/// 64-bit) of the page is equal.
pub fn same_filled(page: &[u8]) -> Option<u64> {
    let (words, rest) = page.as_chunks::<8>();
    debug_assert!(rest.is_empty());
    let first = *words.first()?;
    words.iter().all(|w| *w == first).then(|| u64::from_ne_bytes(first))
}

impl Zram {
    /// A fresh, uninitialised device.
    pub fn new(config: ZramConfig) -> Result<Self, ZramError> {
        Self::with_clock(config, Arc::new(MonotonicClock))
    }

    /// A fresh device whose access times come from `clock`.
    pub fn with_clock(config: ZramConfig, clock: Arc<dyn Clock>) -> Result<Self, ZramError> {
        if !zmem_pool::PAGE_SIZES.contains(&config.page_size) {
            return err(Errno::EINVAL, format!("unsupported page size {}", config.page_size));
        }
        zmem_pool::registry::find(&config.pool)
            .map_err(|e| ZramError::new(Errno::EINVAL, e.to_string()))?;
        let control = Control { comp_algs: default_algs(), ..Control::default() };
        Ok(Self {
            config,
            clock,
            control: Mutex::new(control),
            live: RwLock::new(None),
            limit_pages: AtomicU64::new(0),
            stats: Stats::default(),
            pp_in_progress: AtomicBool::new(false),
            wb_limit_enable: AtomicBool::new(false),
            wb_limit: Mutex::new(0),
            opened: Mutex::new(OpenState::default()),
        })
    }

    fn opened(&self) -> std::sync::MutexGuard<'_, OpenState> {
        self.opened.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens the device (zram_drv.c `zram_open()`: EBUSY while it is claimed). Any number may
    /// hold it open at once.
    pub fn open(&self) -> Result<OpenGuard<'_>, ZramError> {
        let mut state = self.opened();
        if state.claimed {
            return err(Errno::EBUSY, "the device is claimed (reset in progress)");
        }
        state.openers += 1;
        Ok(OpenGuard(self))
    }

    /// Claims the device, as zram_drv.c `reset_store()` (and `zram_remove()`) does before
    /// resetting it: EBUSY while it is open or already claimed.
    pub fn claim(&self) -> Result<ClaimGuard<'_>, ZramError> {
        let mut state = self.opened();
        if state.openers > 0 || state.claimed {
            return err(Errno::EBUSY, "the device is open or claimed");
        }
        state.claimed = true;
        Ok(ClaimGuard(self))
    }

    /// Whether the device is held open (by [`Zram::open`]).
    pub fn is_open(&self) -> bool {
        self.opened().openers > 0
    }

    pub fn page_size(&self) -> usize {
        self.config.page_size
    }

    pub(crate) fn max_comps(&self) -> usize {
        if self.config.features.multi_comp { MAX_COMPS } else { 1 }
    }

    pub(crate) fn control(&self) -> std::sync::MutexGuard<'_, Control> {
        self.control.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn live(&self) -> Option<Arc<Live>> {
        self.live.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The live state, read-locked for one operation on it (page I/O, discard, compaction,
    /// idle marking, writeback, recompression: what the kernel does under `init_lock` held for
    /// reading), or `errno` on an uninitialised device.
    pub(crate) fn live_or(&self, errno: Errno) -> Result<LiveRef<'_>, ZramError> {
        let guard = self.live.read().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            return err(errno, "device is not initialised");
        }
        Ok(LiveRef(guard))
    }

    pub fn is_initialised(&self) -> bool {
        self.live().is_some()
    }

    /// Pages on the disk (0 before `disksize`).
    pub fn nr_pages(&self) -> u64 {
        self.live().map_or(0, |l| l.table.len() as u64)
    }

    /// Attaches a backing store directly (what `backing_dev` does with a path). Tests use it to
    /// inject a store that fails. EBUSY once initialised; EINVAL for a store of less than a
    /// page (zram_drv.c `backing_dev_store()`: `nr_pages == 0`), which leaves the previous one
    /// in place.
    pub fn set_backing_store(
        &self,
        path: PathBuf,
        store: Box<dyn BackingStore>,
    ) -> Result<(), ZramError> {
        let mut control = self.control();
        if self.is_initialised() {
            return err(Errno::EBUSY, "backing_dev must be set before disksize");
        }
        if store.capacity() < self.config.page_size as u64 {
            return err(
                Errno::EINVAL,
                format!("backing device {} is under one page", path.display()),
            );
        }
        control.backing = Some((path, store));
        Ok(())
    }

    /// `disksize` (zram_drv.c `disksize_store()`): EBUSY once initialised, then the table and
    /// pool (`zram_meta_alloc()`), then a `zcomp_create()` per configured priority
    /// (`num_active_comps`).
    pub(crate) fn init(&self, disksize: u64) -> Result<(), ZramError> {
        let mut control = self.control();
        let mut live = self.live.write().unwrap_or_else(|p| p.into_inner());
        if live.is_some() {
            return err(Errno::EBUSY, "cannot change disksize of an initialised device");
        }
        let ps = self.config.page_size as u64;
        // `disksize_store`: `PAGE_ALIGN(disksize)` wraps to 0 from 2^64 - PAGE_SIZE + 1 on, and
        // `zram_meta_alloc`'s `vzalloc` of a 0-entry table fails: ENOMEM, as for a table too
        // large to allocate.
        let disksize = page_align(disksize, ps);
        let nr_pages = usize::try_from(disksize / ps)
            .ok()
            .filter(|&n| n != 0 && n <= u32::MAX as usize)
            .ok_or_else(|| ZramError::new(Errno::ENOMEM, "disksize too large"))?;
        let pool_config = PoolConfig {
            page_size: self.config.page_size,
            chain_size: self.config.chain_size,
            max_pages: self.config.pool_max_pages,
            ..PoolConfig::default()
        };
        let pool = zmem_pool::create(&self.config.pool, &pool_config)
            .map_err(|e| ZramError::new(Errno::EINVAL, e.to_string()))?;
        let mut comps: [Option<Zcomp>; MAX_COMPS] = Default::default();
        for (prio, comp) in comps.iter_mut().enumerate().take(self.max_comps()) {
            if let Some(name) = &control.comp_algs[prio] {
                *comp = Some(Zcomp::new(name, &control.params[prio], self.config.page_size)?);
            }
        }
        let num_active_comps = comps.iter().filter(|c| c.is_some()).count();
        // Taken last, so a `disksize` that fails before keeps the backing device
        // (`backing_dev` still shows it), as the kernel's; `set_backing_store` refused stores
        // under a page, the one thing `Backing::new` checks.
        let backing = match control.backing.take() {
            Some((path, store)) => Some(Backing::new(path, store, self.config.page_size)?),
            None => None,
        };
        *live = Some(Arc::new(Live {
            disksize,
            table: SlotTable::with_actime(
                nr_pages,
                self.config.page_size,
                self.config.features.track_actime,
            ),
            huge_class_size: pool.huge_class_size(),
            pool,
            comps,
            num_active_comps,
            backing,
        }));
        Ok(())
    }

    /// `reset`: frees everything and returns to the fresh state (zram_drv.c
    /// `zram_reset_device()`: `limit_pages` 0, every slot freed, the streams and algorithms
    /// dropped (`zram_destroy_comps()`, parameters too), the stats zeroed, the backing device
    /// released (`reset_bdev()`), the primary back to `default_compressor`).
    pub(crate) fn reset(&self) {
        let mut control = self.control();
        let mut live = self.live.write().unwrap_or_else(|p| p.into_inner());
        // Dropping the live state frees every object with the pool and closes the backing file.
        *live = None;
        self.limit_pages.store(0, Ordering::Relaxed);
        self.stats.zero();
        *control = Control { comp_algs: default_algs(), ..Control::default() };
    }

    fn check_io(&self, index: u64, len: usize) -> Result<LiveRef<'_>, ZramError> {
        let live = self.live_or(Errno::EIO)?;
        self.check_page(&live, index, len)?;
        Ok(live)
    }

    /// Whether page `index` is on the disk and `len` is one page.
    fn check_page(&self, live: &Live, index: u64, len: usize) -> Result<(), ZramError> {
        if index >= live.table.len() as u64 {
            return err(Errno::EIO, format!("page {index} is beyond the disk"));
        }
        if len != self.config.page_size {
            return err(Errno::EINVAL, format!("buffer of {len} bytes is not one page"));
        }
        Ok(())
    }

    /// Writes `pages` at page indices `first`, `first + 1`, ... as one request, the way the
    /// kernel serves a bio of many pages (dd's 1 MiB): the device's state is checked and held
    /// once for the request, where [`Zram::write_page`] takes it for every page (two atomic
    /// operations on a line every writer shares). Each page is written exactly as
    /// `write_page` writes it, taking its object from `objects` where given
    /// ([`Zram::write_page_with`]); `done` hears each page's result in order and stops the
    /// request by returning `false`. A short last page is an `EINVAL` for that page. The
    /// request fails as a whole only on a device that is not initialised. `done` must not call
    /// back into the device: a `reset` queued meanwhile would wait for the request, and the
    /// request for it.
    pub fn write_pages(
        &self,
        first: u64,
        pages: &[u8],
        objects: Option<&dyn ObjectSource>,
        done: &mut dyn FnMut(u64, Result<(), ZramError>) -> bool,
    ) -> Result<(), ZramError> {
        let live = self.live_or(Errno::EIO)?;
        for (k, page) in pages.chunks(self.config.page_size).enumerate() {
            let index = first + k as u64;
            let r = self.check_page(&live, index, page.len()).and_then(|()| {
                self.write_page_inner(&live, index as usize, page, objects).inspect_err(|_| {
                    inc(&self.stats.failed_writes);
                })
            });
            if !done(index, r) {
                break;
            }
        }
        Ok(())
    }

    /// Reads pages `first`, `first + 1`, ... into `out` as one request, as
    /// [`Zram::write_pages`] writes them; each page as [`Zram::read_page`] reads it.
    pub fn read_pages(
        &self,
        first: u64,
        out: &mut [u8],
        done: &mut dyn FnMut(u64, Result<(), ZramError>) -> bool,
    ) -> Result<(), ZramError> {
        let live = self.live_or(Errno::EIO)?;
        for (k, page) in out.chunks_mut(self.config.page_size).enumerate() {
            let index = first + k as u64;
            let r = self
                .check_page(&live, index, page.len())
                .and_then(|()| self.read_page_inner(&live, index, page));
            if !done(index, r) {
                break;
            }
        }
        Ok(())
    }

    /// Writes one page at page index `index`.
    pub fn write_page(&self, index: u64, page: &[u8]) -> Result<(), ZramError> {
        self.write_page_from(index, page, None)
    }

    /// [`Zram::write_page`], taking the compressed object from `objects` instead of compressing
    /// the page where it has one for the primary algorithm and its parameters (see
    /// [`ObjectSource`]); everything else is the same write.
    pub fn write_page_with(
        &self,
        index: u64,
        page: &[u8],
        objects: &dyn ObjectSource,
    ) -> Result<(), ZramError> {
        self.write_page_from(index, page, Some(objects))
    }

    fn write_page_from(
        &self,
        index: u64,
        page: &[u8],
        objects: Option<&dyn ObjectSource>,
    ) -> Result<(), ZramError> {
        let live = self.check_io(index, page.len())?;
        match self.write_page_inner(&live, index as usize, page, objects) {
            Ok(()) => Ok(()),
            Err(e) => {
                inc(&self.stats.failed_writes);
                Err(e)
            }
        }
    }

    fn write_page_inner(
        &self,
        live: &Live,
        index: usize,
        page: &[u8],
        objects: Option<&dyn ObjectSource>,
    ) -> Result<(), ZramError> {
        if let Some(word) = same_filled(page) {
            let slot = live.table.lock(index);
            self.free_slot(live, &slot);
            slot.set(Flag::Same);
            slot.set_handle(word);
            inc(&self.stats.same_pages);
            inc(&self.stats.pages_stored);
            self.accessed(&slot);
            return Ok(());
        }
        let primary = live.comps[0]
            .as_ref()
            .ok_or_else(|| ZramError::new(Errno::EIO, "no primary compression stream"))?;
        let given = objects.and_then(|o| o.object(index as u64, primary.name(), &primary.params()));
        let (handle, len, huge) = match given {
            Some(compressed) => self.store_compressed(live, page, compressed)?,
            None => {
                let mut strm = primary.get()?;
                let result = (|| {
                    let Stream { comp: codec, buffer, .. } = &mut *strm;
                    let len = codec.compress(page, buffer).map_err(|e| {
                        ZramError::new(Errno::EIO, format!("compression failed: {e}"))
                    })?;
                    self.store_compressed(live, page, &buffer[..len])
                })();
                drop(strm);
                result?
            }
        };
        let slot = live.table.lock(index);
        self.free_slot(live, &slot);
        slot.set_handle(handle.0);
        slot.set_size(len);
        if huge {
            slot.set(Flag::Huge);
            inc(&self.stats.huge_pages);
            inc(&self.stats.huge_pages_since);
        }
        self.stats.compr_data_size.fetch_add(len as u64, Ordering::Relaxed);
        inc(&self.stats.pages_stored);
        self.accessed(&slot);
        Ok(())
    }

    /// The huge rule, then the allocation: `compressed` (what the primary made of `page`) is
    /// stored, or the page itself when the object reaches `huge_class_size`. Returns the
    /// handle, the stored length and whether the page is huge. One function for both write
    /// paths, so a write from an [`ObjectSource`] stores exactly what a compressing one does.
    fn store_compressed(
        &self,
        live: &Live,
        page: &[u8],
        compressed: &[u8],
    ) -> Result<(Handle, usize, bool), ZramError> {
        let huge = compressed.len() >= live.huge_class_size;
        let object = if huge { page } else { compressed };
        let handle = self.alloc_object(live, object)?;
        Ok((handle, object.len(), huge))
    }

    /// `zs_malloc()` + the memory-limit check + `zs_obj_write()`, in 6.18's
    /// `zram_write_page()` order. The pool allocates and writes
    /// under one lock, before the check rather than after it: a write the limit refuses frees
    /// its object either way, and the check sees the same page count.
    fn alloc_object(&self, live: &Live, object: &[u8]) -> Result<Handle, ZramError> {
        let handle = live.pool.store(object).map_err(pool_error)?;
        if !self.can_store_page(live) {
            let _ = live.pool.free(handle);
            return err(Errno::ENOMEM, "mem_limit reached");
        }
        Ok(handle)
    }

    /// zram_drv.c `zram_can_store_page()`: tracks the maximum and applies the limit, after the allocation.
    fn can_store_page(&self, live: &Live) -> bool {
        let used = live.pool.total_pages();
        if used > self.stats.max_used_pages.load(Ordering::Relaxed) {
            self.stats.max_used_pages.fetch_max(used, Ordering::Relaxed);
        }
        let limit = self.limit_pages.load(Ordering::Relaxed);
        limit == 0 || used <= limit
    }

    /// drivers/block/zram/zram_drv.c `zram_free_page()`: releases whatever the slot holds and clears it (the lock stays held).
    pub(crate) fn free_slot(&self, live: &Live, slot: &SlotGuard<'_>) {
        let size = slot.size() as u64;
        let (same, wb, huge) = (slot.test(Flag::Same), slot.test(Flag::Wb), slot.test(Flag::Huge));
        let allocated = slot.allocated();
        if huge {
            dec(&self.stats.huge_pages);
        }
        if wb {
            if let Some(b) = &live.backing {
                b.free_block(slot.handle());
            }
            dec(&self.stats.bd_count);
        } else if same {
            dec(&self.stats.same_pages);
        } else if size != 0 {
            let _ = live.pool.free(Handle(slot.handle()));
            self.stats.compr_data_size.fetch_sub(size, Ordering::Relaxed);
        }
        if allocated {
            dec(&self.stats.pages_stored);
        }
        slot.reset();
    }

    /// zram_drv.c `zram_accessed()`: an access clears IDLE and PP_SLOT and stamps the time.
    /// 6.18 calls it from `zram_bio_read()`/`zram_bio_write()` after the page, under a second
    /// hold of the slot lock; here under the same hold.
    pub(crate) fn accessed(&self, slot: &SlotGuard<'_>) {
        slot.clear(Flag::Idle);
        slot.clear(Flag::PpSlot);
        // As the kernel: only a CONFIG_ZRAM_TRACK_ENTRY_ACTIME build reads the clock here.
        if self.config.features.track_actime {
            slot.set_ac_time(self.clock.now_ns());
        }
    }

    /// Reads one page at page index `index` into `out`. A page never written reads as zeros.
    ///
    /// zram_drv.c `zram_bio_read()` → `zram_read_page()`: a failed read counts `failed_reads`
    /// and leaves the slot as it was. A written-back page is read as 6.18 reads it:
    /// `read_from_bdev()` counts `bd_reads` before the I/O and chains an asynchronous bio to
    /// the caller's (`read_from_bdev_async()`), so the read "succeeds" for zram (the slot is
    /// marked accessed) and a device error reaches only the caller, never `failed_reads`.
    pub fn read_page(&self, index: u64, out: &mut [u8]) -> Result<(), ZramError> {
        let live = self.check_io(index, out.len())?;
        self.read_page_inner(&live, index, out)
    }

    fn read_page_inner(&self, live: &Live, index: u64, out: &mut [u8]) -> Result<(), ZramError> {
        let slot = live.table.lock(index as usize);
        let from_backing = slot.test(Flag::Wb);
        let r = self.read_slot(live, &slot, out);
        if r.is_ok() || from_backing {
            self.accessed(&slot);
        } else {
            inc(&self.stats.failed_reads);
        }
        r
    }

    /// Reads a locked slot's page (zram_drv.c `zram_read_from_zspool()`: SAME or no handle is
    /// the fill word, HUGE a page copy (`read_incompressible_page()`), else a decompression on
    /// the slot's priority's stream (`read_compressed_page()`)). Unlike 6.18's
    /// `zram_read_page()`, a WB slot is read with its lock held, so a concurrent free cannot
    /// hand its block to another page mid-read.
    pub(crate) fn read_slot(
        &self,
        live: &Live,
        slot: &SlotGuard<'_>,
        out: &mut [u8],
    ) -> Result<(), ZramError> {
        if slot.test(Flag::Wb) {
            // `read_from_bdev`: counted before the I/O, whatever its outcome.
            inc(&self.stats.bd_reads);
            let backing = live.backing.as_ref().ok_or_else(|| {
                ZramError::new(Errno::EIO, "written-back slot without a backing device")
            })?;
            backing
                .read_block(slot.handle(), out)
                .map_err(|e| ZramError::new(Errno::EIO, format!("backing device read: {e}")))?;
            return Ok(());
        }
        let size = slot.size();
        if slot.test(Flag::Same) || size == 0 {
            let word = slot.handle().to_ne_bytes();
            for chunk in out.as_chunks_mut::<8>().0 {
                *chunk = word;
            }
            return Ok(());
        }
        let handle = Handle(slot.handle());
        if size == self.config.page_size {
            live.pool.read(handle, out).map_err(pool_error)?;
            return Ok(());
        }
        let comp = live.comps[slot.priority()].as_ref().ok_or_else(|| {
            ZramError::new(Errno::EIO, format!("no stream for priority {}", slot.priority()))
        })?;
        let mut strm = comp.get()?;
        let Stream { comp: codec, local_copy, .. } = &mut *strm;
        // Decompress straight from the pool where the object is contiguous there (zsmalloc:
        // inside one page), else from `local_copy`, as the kernel's `zs_obj_read_begin`.
        let mut decoded = None;
        let read = live.pool.read_with(handle, local_copy, &mut |object| {
            decoded = Some(match codec.decompress(object, out) {
                Ok(len) if len == out.len() => Ok(()),
                Ok(len) => err(Errno::EIO, format!("decompressed to {len} bytes, not a page")),
                Err(e) => err(Errno::EIO, format!("decompression failed: {e}")),
            });
        });
        drop(strm);
        read.map_err(pool_error)?;
        decoded.unwrap_or_else(|| err(Errno::EIO, "the pool never handed out the object"))
    }

    /// A discard or write-zeroes of `len` bytes at byte `offset` (zram_drv.c
    /// `zram_bio_discard()`): a partial first page is skipped, every whole page is freed and
    /// counted in `notify_free`, a partial last page is ignored. A range past the disk is EIO,
    /// as block/blk-core.c `bio_check_eod()` fails such a bio before zram sees it.
    pub fn discard(&self, offset: u64, len: u64) -> Result<(), ZramError> {
        let live = self.live_or(Errno::EIO)?;
        let ps = self.config.page_size as u64;
        let (mut index, mut n) = (offset / ps, len);
        let within = offset % ps;
        if within != 0 {
            if n <= ps - within {
                return Ok(());
            }
            n -= ps - within;
            index += 1;
        }
        if index.saturating_add(n / ps) > live.table.len() as u64 {
            return err(Errno::EIO, "discard beyond the disk");
        }
        while n >= ps {
            let slot = live.table.lock(index as usize);
            self.free_slot(&live, &slot);
            drop(slot);
            inc(&self.stats.notify_free);
            index += 1;
            n -= ps;
        }
        Ok(())
    }

    /// The block device's `swap_slot_free_notify`, zram_drv.c `zram_slot_free_notify()`:
    /// counts `notify_free`, then frees the slot unless its lock is busy (`zram_slot_trylock()`
    /// fails: `miss_free`).
    pub fn slot_free_notify(&self, index: u64) {
        let Ok(live) = self.live_or(Errno::EIO) else { return };
        if index >= live.table.len() as u64 {
            return;
        }
        inc(&self.stats.notify_free);
        match live.table.try_lock(index as usize) {
            Some(slot) => self.free_slot(&live, &slot),
            None => inc(&self.stats.miss_free),
        }
    }

    /// The pages the device's pool holds now (`mm_stat`'s `mem_used_total` in pages): memory
    /// the machine has given the device.
    pub fn pool_pages(&self) -> u64 {
        self.live().map_or(0, |l| l.pool.total_pages())
    }

    /// The `mm_stat` values (zram_drv.c `mm_stat_show()`).
    pub fn mm_stat(&self) -> MmStat {
        let ps = self.config.page_size as u64;
        let live = self.live();
        let s = &self.stats;
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        MmStat {
            orig_data_size: r(&s.pages_stored) * ps,
            compr_data_size: r(&s.compr_data_size),
            mem_used_total: live.as_ref().map_or(0, |l| l.pool.total_pages()) * ps,
            // `limit_pages << PAGE_SHIFT`; `mem_limit_store` keeps the page count small
            // enough that this never wraps.
            mem_limit: self.limit_pages.load(Ordering::Relaxed).wrapping_mul(ps),
            mem_used_max: r(&s.max_used_pages) * ps,
            same_pages: r(&s.same_pages),
            pages_compacted: live.as_ref().map_or(0, |l| l.pool.pages_compacted()),
            huge_pages: r(&s.huge_pages),
            huge_pages_since: r(&s.huge_pages_since),
        }
    }

    pub fn io_stat(&self) -> IoStat {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        IoStat {
            failed_reads: r(&self.stats.failed_reads),
            failed_writes: r(&self.stats.failed_writes),
            notify_free: r(&self.stats.notify_free),
        }
    }

    /// `bd_stat`, converted to 4 KiB units as zram_drv.c `bd_stat_show()`'s `FOUR_K()`.
    pub fn bd_stat(&self) -> BdStat {
        let four_k =
            |c: &AtomicU64| c.load(Ordering::Relaxed) * (self.config.page_size as u64 / 4096);
        BdStat {
            bd_count: four_k(&self.stats.bd_count),
            bd_reads: four_k(&self.stats.bd_reads),
            bd_writes: four_k(&self.stats.bd_writes),
        }
    }

    /// The debugfs `block_state` file (CONFIG_ZRAM_MEMORY_TRACKING; zram_drv.c
    /// `read_block_state()`): one line per allocated
    /// slot, `index ac_time flags`, the flags `s`ame `w`b `h`uge `i`dle `r`ecompressed
    /// i`n`compressible, `.` when unset. The access time is printed as 6.18 prints its
    /// nanosecond `ktime_t`: seconds, a dot, six digits of microseconds (7.0 keeps seconds
    /// and always prints `.000000`). EINVAL before `disksize`, as `read_block_state`'s
    /// `init_done` check.
    pub fn block_state(&self) -> Result<String, ZramError> {
        let Some(live) = self.live() else {
            return err(Errno::EINVAL, "block_state of an uninitialised device");
        };
        let mut out = String::new();
        for index in 0..live.table.len() {
            let slot = live.table.lock(index);
            if !slot.allocated() {
                continue;
            }
            let flag = |f: Flag, c: char| if slot.test(f) { c } else { '.' };
            let ns = slot.ac_time();
            out += &format!(
                "{index:12} {:12}.{:06} {}{}{}{}{}{}\n",
                ns / 1_000_000_000,
                ns % 1_000_000_000 / 1_000,
                flag(Flag::Same, 's'),
                flag(Flag::Wb, 'w'),
                flag(Flag::Huge, 'h'),
                flag(Flag::Idle, 'i'),
                if slot.priority() != 0 { 'r' } else { '.' },
                flag(Flag::Incompressible, 'n'),
            );
        }
        Ok(out)
    }

    /// Test hook: passes the bytes of slot `index`'s pool object to `f` and writes back what
    /// it leaves there, to simulate memory corruption of a compressed object. Returns `false`
    /// (and calls nothing) when the slot holds no pool object (empty, same-filled or written
    /// back).
    #[doc(hidden)]
    pub fn corrupt_object_for_test(
        &self,
        index: u64,
        f: impl FnOnce(&mut [u8]),
    ) -> Result<bool, ZramError> {
        let live = self.check_io(index, self.config.page_size)?;
        let slot = live.table.lock(index as usize);
        if slot.test(Flag::Wb) || slot.test(Flag::Same) || slot.size() == 0 {
            return Ok(false);
        }
        let handle = Handle(slot.handle());
        let mut bytes = vec![0u8; slot.size()];
        let n = live.pool.read(handle, &mut bytes).map_err(pool_error)?;
        f(&mut bytes[..n]);
        live.pool.write(handle, &bytes[..n]).map_err(pool_error)?;
        Ok(true)
    }

    pub(crate) fn miss_free(&self) -> u64 {
        self.stats.miss_free.load(Ordering::Relaxed)
    }
}

/// The kernel's `PAGE_ALIGN()`: rounds up to a multiple of the page size in u64 arithmetic, which
/// wraps to 0 for the last `page_size - 1` values (`disksize_store`, `mem_limit_store`).
pub(crate) fn page_align(bytes: u64, page_size: u64) -> u64 {
    bytes.wrapping_add(page_size - 1) & !(page_size - 1)
}

fn default_algs() -> [Option<String>; MAX_COMPS] {
    [Some(DEFAULT_ALGORITHM.to_string()), None, None, None]
}

/// Allocation failures as the kernel reports them from mm/zsmalloc.c `zs_malloc()`: ENOMEM
/// when no handle or page can be had, EINVAL for a size of 0, ENOSPC for one over
/// `ZS_MAX_ALLOC_SIZE` (zram never asks for more than a page).
pub(crate) fn pool_error(e: zmem_pool::PoolError) -> ZramError {
    let errno = match e {
        zmem_pool::PoolError::NoMemory { .. } => Errno::ENOMEM,
        zmem_pool::PoolError::TooLarge { .. } => Errno::ENOSPC,
        zmem_pool::PoolError::ZeroSize => Errno::EINVAL,
        _ => Errno::EIO,
    };
    ZramError::new(errno, e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// mm/zsmalloc.c `zs_malloc()` (6.18): a size of 0 is EINVAL, one over
    /// `ZS_MAX_ALLOC_SIZE` is ENOSPC, a failed handle or page allocation ENOMEM.
    #[test]
    fn pool_errors_carry_zs_mallocs_errnos() {
        let too_large =
            zmem_pool::PoolError::TooLarge { allocator: "zsmalloc", size: 4097, max: 4096 };
        assert_eq!(pool_error(too_large).errno, Errno::ENOSPC);
        assert_eq!(pool_error(zmem_pool::PoolError::ZeroSize).errno, Errno::EINVAL);
    }

    /// 6.18's `zram_accessed` stamps `ktime_get_boottime()`: nanoseconds of boot time, which
    /// advance between two reads a moment apart (whole seconds would not).
    #[test]
    fn the_device_clock_is_boot_time_in_nanoseconds() {
        let clock = MonotonicClock;
        let first = clock.now_ns();
        assert!(first > 0);
        std::thread::sleep(std::time::Duration::from_millis(2));
        let later = clock.now_ns();
        assert!(later >= first + 2_000_000, "{first} then {later}");
        assert!(later - first < 1_000_000_000, "{first} then {later}");
    }
}

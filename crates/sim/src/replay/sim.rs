//! The simulator: RAM ([`Ram`]) in front of a swap area ([`SwapLayer`]), one access at a time.
//!
//! Takes a page set and a [`ReplayConfig`]; gives, access by access, the swap traffic and, at
//! the end, a [`ReplayResult`]. A page's first touch is a fault from outside (no swap I/O); a
//! touch of a swapped page brings it back through the swap layer and checks it is the page
//! that went out. Writes mark nothing: a page's content is its page-set content throughout, so
//! every swap-in can be verified.

use std::sync::Arc;
use std::time::Instant;

use zmem_zram::Zram;
use zmem_zswap::{
    ObjectSource, Shrinker, Stage, SwapDevice, SwapHook, SwapIn, SwapLayer, SwapOut, ZswapError,
};

use super::lru::Lru;
use super::memcg::zswap_charge_pages;
use super::page_slots::PageSlots;
use super::readahead::{RaWindow, SwapRa};
use super::{Access, Counter, ReplayConfig, ReplayResult, SwapInHists, SwapKind, build_zswap};
use crate::SimError;
use crate::cputime::{Charge, ChargedObjects, Elapsed};
use crate::device::{ZramRunConfig, build_device_with_backing};
use crate::latency::LatencyRecorder;
use crate::swap_device::{DeviceSampler, SwapDevice as DeviceCost};

mod kswapd;
mod reclaim;

/// A zram device as the swap layer's device: zram swap (`swapon /dev/zram0`).
struct ZramSwap(Arc<Zram>);

/// zram's error on `op` of slot `offset`, as the swap layer reports a device's.
fn device_error(op: &'static str, offset: u64) -> impl FnOnce(zmem_zram::ZramError) -> ZswapError {
    move |e| ZswapError::Device { op, offset, err: Box::new(e) }
}

impl SwapDevice for ZramSwap {
    fn write_page(&self, offset: u64, page: &[u8]) -> Result<(), ZswapError> {
        self.0.write_page(offset, page).map_err(device_error("write", offset))
    }
    fn read_page(&self, offset: u64, out: &mut [u8]) -> Result<(), ZswapError> {
        self.0.read_page(offset, out).map_err(device_error("read", offset))
    }
    /// The source is asked for the page by the index it is given: [`Simulator`] hands the
    /// swap layer a source that answers for the page being swapped out whatever the slot
    /// ([`AtPage`]).
    fn write_page_with(
        &self,
        offset: u64,
        page: &[u8],
        objects: Option<&dyn ObjectSource>,
    ) -> Result<(), ZswapError> {
        let Some(objects) = objects else { return self.write_page(offset, page) };
        self.0.write_page_with(offset, page, objects).map_err(device_error("write", offset))
    }
    fn free_slot(&self, offset: u64) {
        self.0.slot_free_notify(offset);
    }
    /// zram's pool registers zsmalloc's shrinker ("mm-zspool:zramN", mm/zsmalloc.c
    /// `zs_register_shrinker()`): when `shrink_slab()` runs for the root memcg the swap layer
    /// runs it with mm/shrinker.c `do_shrink_slab()`'s arithmetic, and it compacts the
    /// device's pool (`zs_shrinker_scan()`), which `mm_stat`'s `pages_compacted` counts.
    fn shrinker(&self) -> Option<&dyn Shrinker> {
        Some(self)
    }
    /// zram's disk is `BLK_FEAT_SYNCHRONOUS` (zram_drv.c `zram_add()`), so its swap area is
    /// `SWP_SYNCHRONOUS_IO` (mm/swapfile.c swapon, `bdev_synchronous()`): a swap-in fault
    /// reads only its own page (mm/memory.c `do_swap_page()`; [`super::readahead`]).
    fn synchronous_io(&self) -> bool {
        true
    }
}

impl Shrinker for ZramSwap {
    fn count_objects(&self) -> u64 {
        self.0.shrinker_count()
    }
    fn scan_objects(&self, _nr_to_scan: u64) -> Option<u64> {
        self.0.shrinker_scan()
    }
}

/// An object source asked for one page whatever the index: a page's swap slot is not its id
/// (the slot allocator decides it, [`super::slots`]), while the compressor table's objects are
/// by page id.
struct AtPage<'a> {
    objects: &'a dyn ObjectSource,
    page: u64,
}

impl ObjectSource for AtPage<'_> {
    fn object(&self, _slot: u64, algo: &str, params: &zmem_comp::Params) -> Option<&[u8]> {
        self.objects.object(self.page, algo, params)
    }
}

/// Times each swap stage as seed 001 traced it with bpftrace (`zswap_store` / `zswap_load`, or
/// with zram as the swap device, zram's page write and read) and charges every I/O of the
/// device behind the swap file with a latency drawn from [`DeviceCost`] (the swap file itself
/// is memory or page cache here, so its own time is not what a swap-in would wait for and is
/// left out). Swap-ins are end to end, by where the page came from: a zswap hit is
/// `zswap_load`; a miss is `zswap_load` plus one device read; a zram read is the read; a read
/// of a slot zram had written back is the read plus one device read. Device writes (a page
/// zswap rejects, zswap's and zram's writeback) are charged to their own histogram, not to the
/// store: the kernel submits them asynchronously and reclaim does not wait for them.
///
/// **Objects taken from elsewhere.** A store (`zswap_store`, or zram's page write) that took its
/// compressed object from a [`ChargedObjects`] source ([`SwapTimer::charging`]) skipped the
/// compression it would have timed; the source's charge for that object (what compressing the
/// page cost where the object was made) is added to the store's measured time, so the store
/// histogram keeps its meaning, and the charges are summed ([`SwapTimer::charged`]) for the
/// replay's CPU and wall time.
#[allow(missing_debug_implementations)]
pub struct SwapTimer<'o> {
    time_device: bool,
    device: DeviceSampler,
    /// The zram device, whose backing-device read counter tells a written-back slot's read.
    zram: Option<Arc<Zram>>,
    /// `zswap_load`'s time, until the swap-in says whether it hit.
    pending_load_ns: Option<u64>,
    pub store: LatencyRecorder,
    /// Every timed swap-in, end to end.
    pub load: LatencyRecorder,
    pub(crate) zswap_hit: LatencyRecorder,
    pub(crate) zswap_miss: LatencyRecorder,
    pub(crate) zram_read: LatencyRecorder,
    pub(crate) zram_written_back: LatencyRecorder,
    pub(crate) device_write: LatencyRecorder,
    /// Read-ahead pages' loads ([`ReadaheadTimer`]), and a read-ahead `zswap_load`'s time until
    /// its read says whether it hit.
    pub(crate) readahead: LatencyRecorder,
    pending_ra_ns: Option<u64>,
    /// Device I/Os charged, and their total charge.
    pub(crate) device_reads: u64,
    pub(crate) device_writes: u64,
    pub(crate) device_ns: u64,
    /// The source stores take objects from, whose charges are added to theirs.
    objects: Option<&'o dyn ChargedObjects>,
    charged: Charge,
}

/// The device sampler's seed: the same replay charges the same latencies.
const DEVICE_SEED: u64 = 0x0022_de71_ce00_0002;

impl<'o> SwapTimer<'o> {
    pub fn new(kind: SwapKind, device: &DeviceCost, zram: Option<Arc<Zram>>) -> Self {
        Self {
            time_device: kind == SwapKind::Zram,
            device: device.sampler(DEVICE_SEED),
            zram,
            pending_load_ns: None,
            store: LatencyRecorder::new(),
            load: LatencyRecorder::new(),
            zswap_hit: LatencyRecorder::new(),
            zswap_miss: LatencyRecorder::new(),
            zram_read: LatencyRecorder::new(),
            zram_written_back: LatencyRecorder::new(),
            device_write: LatencyRecorder::new(),
            readahead: LatencyRecorder::new(),
            pending_ra_ns: None,
            device_reads: 0,
            device_writes: 0,
            device_ns: 0,
            objects: None,
            charged: Charge::default(),
        }
    }

    /// The timer of stores that take their objects from `objects` (module doc above): each
    /// store is charged what `objects` charged during it.
    pub fn charging(mut self, objects: Option<&'o dyn ChargedObjects>) -> Self {
        self.objects = objects;
        self
    }

    /// The charges of every object the stores took so far.
    pub fn charged(&self) -> Charge {
        self.charged
    }

    /// A store's time: `ns` measured, plus the charge of the object it took, if any.
    fn store_ns(&mut self, ns: u64) -> u64 {
        let Some(o) = self.objects else { return ns };
        let c = o.take();
        self.charged.objects += c.objects;
        self.charged.cpu_secs += c.cpu_secs;
        self.charged.wall_secs += c.wall_secs;
        ns + (c.wall_secs * 1e9).round() as u64
    }

    fn charge_read(&mut self) -> u64 {
        let ns = self.device.read_ns();
        self.device_reads += 1;
        self.device_ns += ns;
        ns
    }

    /// Charges `n` device writes that happened outside any stage (writeback).
    pub(crate) fn charge_writes(&mut self, n: u64) {
        for _ in 0..n {
            let ns = self.device.write_ns();
            self.device_write.record(ns);
            self.device_writes += 1;
            self.device_ns += ns;
        }
    }

    fn backing_reads(&self) -> u64 {
        self.zram.as_ref().map_or(0, |z| z.bd_stat().bd_reads)
    }
}

fn timed<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed().as_nanos() as u64)
}

impl SwapHook for SwapTimer<'_> {
    fn around<R>(&mut self, stage: Stage, f: impl FnOnce() -> R) -> R {
        match stage {
            Stage::ZswapStore => {
                let (r, ns) = timed(f);
                let ns = self.store_ns(ns);
                self.store.record(ns);
                r
            }
            Stage::DeviceWrite if self.time_device => {
                let (r, ns) = timed(f);
                let ns = self.store_ns(ns);
                self.store.record(ns);
                r
            }
            Stage::DeviceWrite => {
                let r = f();
                // A swap file stores pages as they are: nothing to charge, but a source's
                // charge (none expected) is still counted rather than lost.
                self.store_ns(0);
                self.charge_writes(1);
                r
            }
            Stage::ZswapLoad => {
                let (r, ns) = timed(f);
                self.pending_load_ns = Some(ns);
                r
            }
            Stage::DeviceRead if self.time_device => {
                let before = self.backing_reads();
                let (r, ns) = timed(f);
                if self.backing_reads() > before {
                    let total = ns + self.charge_read();
                    self.zram_written_back.record(total);
                    self.load.record(total);
                } else {
                    self.zram_read.record(ns);
                    self.load.record(ns);
                }
                r
            }
            Stage::DeviceRead => {
                let r = f();
                let total = self.pending_load_ns.take().unwrap_or(0) + self.charge_read();
                self.zswap_miss.record(total);
                self.load.record(total);
                r
            }
        }
    }

    fn swapped_in(&mut self, from: SwapIn) {
        if from == SwapIn::Zswap
            && let Some(ns) = self.pending_load_ns.take()
        {
            self.zswap_hit.record(ns);
            self.load.record(ns);
        }
    }
}

/// The hook for the pages a swap-in fault reads ahead: a read-ahead page's `zswap_load` is
/// timed, and its device read (a zswap miss) charged as every device read is, into
/// [`SwapTimer::readahead`], not into the swap-in histograms: those are what faults waited for
/// their own page. (The fault does the read-ahead `zswap_load`s itself, in
/// `swap_read_folio()`, before its own page is mapped; device reads are queued together.)
struct ReadaheadTimer<'t, 'o>(&'t mut SwapTimer<'o>);

impl SwapHook for ReadaheadTimer<'_, '_> {
    fn around<R>(&mut self, stage: Stage, f: impl FnOnce() -> R) -> R {
        let t = &mut *self.0;
        match stage {
            Stage::ZswapLoad => {
                let (r, ns) = timed(f);
                t.pending_ra_ns = Some(ns);
                r
            }
            Stage::DeviceRead => {
                let r = f();
                let total = t.pending_ra_ns.take().unwrap_or(0) + t.charge_read();
                t.readahead.record(total);
                r
            }
            // Reads ahead never write.
            Stage::ZswapStore | Stage::DeviceWrite => f(),
        }
    }

    fn swapped_in(&mut self, from: SwapIn) {
        let t = &mut *self.0;
        if from == SwapIn::Zswap
            && let Some(ns) = t.pending_ra_ns.take()
        {
            t.readahead.record(ns);
        }
    }
}

/// A swapped page without a slot: the simulator's books are wrong (never expected).
fn no_slot(p: u32) -> SimError {
    SimError::Setup(format!("page {p} is out of RAM without a swap slot"))
}

/// What reclaim did with one victim ([`Simulator::reclaim_page`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reclaimed {
    /// It left RAM; `pageout`: written out (`pageout()` returned `PAGE_SUCCESS`), not dropped.
    Freed { pageout: bool },
    /// It stays in RAM, activated.
    Kept,
}

/// Where a resident page stands with the swap cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cached {
    /// Mapped by the process (faulted in, or first touched): not in the swap cache.
    Mapped,
    /// Read ahead, not faulted yet (`PG_readahead`), clean: read from the device or the
    /// zeromap, its slot still holds it, and reclaim drops it without a write.
    Clean,
    /// Read ahead from zswap: `zswap_load()` freed the entry and marked the folio dirty, so
    /// reclaim must store it again.
    Dirty,
    /// Written back by zswap (`zswap_writeback_entry()` decompresses into a swap-cache folio,
    /// marks it `PG_reclaim` and writes it): clean, its slot holding it on the device, no
    /// `PG_readahead`, at the inactive tail once the write ends.
    Written,
}

#[derive(Debug, Default)]
struct Counts {
    accesses: u64,
    reads: u64,
    writes: u64,
    first_touches: u64,
    swap_outs: u64,
    zero_swap_outs: u64,
    swap_ins: u64,
    zero_swap_ins: u64,
    stored: u64,
    rejected: u64,
    kept_in_ram: u64,
    swap_ra: u64,
    swap_ra_hit: u64,
    ra_reclaimed: u64,
    ra_dropped: u64,
    clean_dropped: u64,
    activation_freed: u64,
    kswapd_reclaimed: u64,
    direct_reclaimed: u64,
    kswapd_wakes: u64,
    file_reads: u64,
    file_faults: u64,
    file_refaults: u64,
    file_evictions: u64,
    writeback_cached: u64,
    writeback_cache_hits: u64,
}

/// RAM, the swap area behind it, and what has happened so far.
pub struct Simulator<'p> {
    pages: &'p [u8],
    page_size: usize,
    cfg: ReplayConfig,
    swap: SwapLayer,
    zram: Option<Arc<Zram>>,
    ram: Lru,
    touched: Vec<bool>,
    /// Each file page read before: its next fault out of RAM is a refault.
    file_read: Vec<bool>,
    /// Each resident page's place in the swap cache.
    cached: Vec<Cached>,
    /// Each page's swap slot and each slot's page ([`super::page_slots`]).
    slots: PageSlots,
    /// Readahead on swap-in faults, unless the device is synchronous (zram).
    ra: Option<SwapRa>,
    timer: SwapTimer<'p>,
    /// Where swap-outs take their compressed objects ([`Simulator::with_objects`]).
    objects: Option<&'p dyn ChargedObjects>,
    counts: Counts,
    /// Slots zswap wrote back during this access's reclaims, for the swap cache.
    written_back: Vec<u64>,
    /// `pgdat->kswapd_failures`: `balance_pgdat()` runs in a row that reclaimed nothing.
    kswapd_failures: u32,
    /// When the periodic statistics flusher runs next, in the trace's ns
    /// ([`super::StatsFlush::Periodic`]); `u64::MAX` where the statistics are always current or
    /// wait for RAM to fill.
    next_stats_flush_ns: u64,
    /// The trace's time of the access being replayed.
    now_ns: u64,
    buf: Vec<u8>,
    verified: bool,
}

impl std::fmt::Debug for Simulator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator")
            .field("cfg", &self.cfg)
            .field("swap", &self.swap)
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

impl<'p> Simulator<'p> {
    /// RAM of `cfg.ram_pages` frames (at most the page count) in front of a fresh swap area
    /// of `cfg.swap` over `pages` (whole pages of `cfg.page_size`).
    pub fn new(pages: &'p [u8], cfg: &ReplayConfig) -> Result<Self, SimError> {
        Self::with_objects(pages, cfg, None)
    }

    /// [`Simulator::new`], every swap-out taking its page's compressed object from `objects`
    /// where zswap, or the zram device, would compress it ([`SwapLayer::swap_out_with`]),
    /// asked for by the page's id in `pages` whatever slot the page goes to ([`AtPage`]):
    /// `objects` must hold the objects of these pages in this order. Each store that takes one is charged its cost ([`SwapTimer`]), and the replay's
    /// CPU and wall time the sum of the charges, so the timings keep their meaning; the
    /// counters, pools and pages are those of a replay that compressed.
    pub fn with_objects(
        pages: &'p [u8],
        cfg: &ReplayConfig,
        objects: Option<&'p dyn ChargedObjects>,
    ) -> Result<Self, SimError> {
        let ps = cfg.page_size;
        let n = pages.len() / ps;
        if n == 0 {
            return Err(SimError::NoPages);
        }
        if n >= u32::MAX as usize {
            return Err(SimError::Setup(format!("{n} pages: at most 2^32 - 2 supported")));
        }
        if cfg.ram_pages == 0 {
            return Err(SimError::Setup("RAM of 0 pages".into()));
        }
        if let Some(w) = cfg.watermarks {
            w.check(cfg.ram_pages.min(n as u64)).map_err(SimError::Setup)?;
        }
        if cfg.file_pages > u64::from(u32::MAX) - n as u64 {
            return Err(SimError::Setup(format!("{} file pages: too many", cfg.file_pages)));
        }
        if cfg.zswap_max.is_some() && cfg.cgroup != super::CgroupVersion::V2 {
            return Err(SimError::Setup("memory.zswap.max is a cgroup v2 file".into()));
        }
        let area = cfg.swap_area_pages(n as u64);
        if area >= u64::from(u32::MAX) {
            return Err(SimError::Setup(format!("a swap area of {area} pages: at most 2^32 - 2")));
        }
        let (swap, zram) = match cfg.swap {
            SwapKind::Zram => {
                let zc = ZramRunConfig {
                    algo: cfg.algo.clone(),
                    params: cfg.algo_params.clone(),
                    pool: cfg.pool.clone(),
                    page_size: ps,
                    ..ZramRunConfig::default()
                };
                let backing = cfg.zram_backing.then(|| {
                    let store: Box<dyn zmem_zram::BackingStore> =
                        Box::new(zmem_zram::MemStore::new(n * ps));
                    (std::path::PathBuf::from("(memory)"), store)
                });
                let z = Arc::new(build_device_with_backing(&zc, area, backing)?);
                let dev = Box::new(ZramSwap(Arc::clone(&z)));
                (SwapLayer::new(dev, ps, area), Some(z))
            }
            SwapKind::Zswap => (SwapLayer::with_zswap(build_zswap(cfg, area)?), None),
        };
        let mut swap = swap;
        // Reclaim runs the shrinkers once per priority it walks (`reclaim`), not per swap-out.
        swap.set_slab_reclaim(None);
        if let Some(z) = swap.zswap() {
            // Each page zswap writes back goes into the swap cache (`reclaim`).
            z.log_writeback();
        }
        let timer = SwapTimer::new(cfg.swap, &cfg.device, zram.clone()).charging(objects);
        // mm/memory.c `do_swap_page()`: a `SWP_SYNCHRONOUS_IO` device's faults with
        // `__swap_count() == 1` skip the swap cache and read only their own page (every entry
        // here has a swap count of 1: one process, no fork).
        let ra = Some(SwapRa::new(cfg.readahead, cfg.page_cluster, n as u64, area, ps))
            .filter(|r| r.reads_ahead() && !swap.synchronous_io());
        let mut ram = Lru::with_file(
            cfg.ram_pages.min(n as u64 + cfg.file_pages) as usize,
            n,
            cfg.file_pages as usize,
            ps,
        );
        ram.set_file_recency(cfg.file_recency);
        let next_stats_flush_ns = match cfg.stats_flush {
            super::StatsFlush::Periodic { first_ns: Some(first), .. } => {
                ram.stale_stats();
                first
            }
            // A running workload's warm-up reads current statistics
            // ([`Self::flush_stats_at_first_fill`]).
            super::StatsFlush::Periodic { first_ns: None, .. } | super::StatsFlush::Always => {
                u64::MAX
            }
        };
        Ok(Self {
            pages: &pages[..n * ps],
            page_size: ps,
            cfg: cfg.clone(),
            swap,
            zram,
            ram,
            touched: vec![false; n],
            file_read: vec![false; cfg.file_pages as usize],
            cached: vec![Cached::Mapped; n],
            slots: PageSlots::new(n, area, ps),
            ra,
            timer,
            objects,
            counts: Counts::default(),
            written_back: Vec::new(),
            kswapd_failures: 0,
            next_stats_flush_ns,
            now_ns: 0,
            buf: vec![0u8; ps],
            verified: true,
        })
    }

    /// zram's `idle=all` then `writeback=idle` (zram_drv.c `idle_store()`,
    /// `writeback_store()`), as a periodic writeback would after the pages aged: every slot zram holds moves to the backing device (needs
    /// [`ReplayConfig::zram_backing`]). Returns the pages written; each is charged a device
    /// write when the replay finishes, and each later swap-in of one a device read.
    pub fn zram_writeback_idle(&self) -> Result<u64, SimError> {
        let Some(z) = &self.zram else {
            return Err(SimError::Setup("zram writeback needs zram as the swap".into()));
        };
        let before = z.bd_stat().bd_writes;
        z.store("idle", "all")?;
        z.store("writeback", "idle")?;
        Ok(z.bd_stat().bd_writes - before)
    }

    /// The swap area (zswap's entries and counters, the device).
    pub fn swap_layer(&self) -> &SwapLayer {
        &self.swap
    }

    /// Pages in the page set.
    pub fn pages(&self) -> u64 {
        self.touched.len() as u64
    }

    /// Whether page `page` is in swap now: touched, and not in RAM (zero pages in the zeromap
    /// included).
    pub fn in_swap(&self, page: u64) -> bool {
        let Ok(p) = u32::try_from(page) else { return false };
        self.touched.get(p as usize).copied().unwrap_or(false) && !self.ram.is_resident(p)
    }

    /// Pages zswap has written back into the swap cache so far (`ReplayResult::writeback_cached`):
    /// each charged over the limit when its access ends ([`Self::install_written_back`]).
    pub fn writeback_cached(&self) -> u64 {
        self.counts.writeback_cached
    }

    /// The memcg's usage in pages, what `memory.current` reads ([`super::memcg`]): resident
    /// pages, plus on cgroup v2 the pages zswap's entries are charged.
    pub fn memcg_pages(&self) -> u64 {
        let zswap = self.swap.zswap().map_or(0, |z| z.compressed_bytes());
        self.ram.len() as u64 + zswap_charge_pages(self.cfg.cgroup, zswap, self.page_size)
    }

    fn page(&self, i: usize) -> &'p [u8] {
        &self.pages[i * self.page_size..(i + 1) * self.page_size]
    }

    /// One access: a hit, or a fault that may reclaim a frame first and may swap the page in
    /// (or, for a file page, read it into the page cache); then the pages zswap wrote back
    /// meanwhile go into the swap cache ([`Self::install_written_back`]).
    pub fn access(&mut self, a: Access) -> Result<(), SimError> {
        self.flush_stats_due(a.time_ns);
        let done = self.access_page(a);
        self.install_written_back();
        done
    }

    /// The periodic statistics flusher ([`super::StatsFlush::Periodic`]) runs where the trace's
    /// clock has reached it; a flush that came during an idle stretch is the same as one at its
    /// end, since nothing changed meanwhile.
    fn flush_stats_due(&mut self, now_ns: u64) {
        self.now_ns = now_ns;
        let super::StatsFlush::Periodic { interval_ns, .. } = self.cfg.stats_flush else {
            return;
        };
        if now_ns < self.next_stats_flush_ns {
            return;
        }
        // A running workload's statistics go stale from the first flush after its warm-up.
        self.ram.stale_stats();
        self.ram.flush_stats();
        let interval = interval_ns.max(1);
        let behind = (now_ns - self.next_stats_flush_ns) / interval;
        self.next_stats_flush_ns =
            self.next_stats_flush_ns.saturating_add((behind + 1).saturating_mul(interval));
    }

    /// A workload that ran before the trace ([`super::StatsFlush::Periodic`] without
    /// `first_ns`) reclaims in its steady state with statistics at most a period old, while
    /// the replay starts from empty RAM: a snapshot of its warm-up (every page still inactive)
    /// would stand for no state the workload is in. So the warm-up reads current statistics,
    /// and the periodic flusher takes over from the first reclaim (RAM full), its first pass
    /// half a period later (its phase is unknown).
    pub(super) fn flush_stats_at_first_fill(&mut self) {
        let super::StatsFlush::Periodic { interval_ns, first_ns: None } = self.cfg.stats_flush
        else {
            return;
        };
        if self.next_stats_flush_ns == u64::MAX {
            self.next_stats_flush_ns = self.now_ns.saturating_add(interval_ns / 2);
        }
    }

    fn access_page(&mut self, a: Access) -> Result<(), SimError> {
        if a.file {
            return self.file_access(a.page);
        }
        let Some(p) = u32::try_from(a.page).ok().filter(|&p| (p as usize) < self.touched.len())
        else {
            return Err(SimError::Setup(format!(
                "trace touches page {} but the page set has {} pages",
                a.page,
                self.touched.len()
            )));
        };
        self.counts.accesses += 1;
        if a.write {
            self.counts.writes += 1;
        } else {
            self.counts.reads += 1;
        }
        if self.ram.is_resident(p) {
            if self.cached[p as usize] != Cached::Mapped {
                self.swap_cache_hit(p, a.write);
            } else if a.write {
                // The page differs from its slot's copy from now on.
                self.slots.set_clean(p, false);
            }
            self.ram.touch(p);
            return Ok(());
        }
        let i = p as usize;
        if self.touched[i] && self.ra.is_some() {
            return self.swapin_readahead(p, a.write);
        }
        let woken = self.allocate()?;
        self.charge_fault()?;
        let refault = self.touched[i];
        if !self.touched[i] {
            self.touched[i] = true;
            self.counts.first_touches += 1;
        } else {
            self.fault_in(p, a.write)?;
        }
        self.ram.install(p, refault);
        if woken {
            self.kswapd()?;
        }
        Ok(())
    }

    /// A read of file page `f` (mapped, as the player maps the file): a hit sets its accessed
    /// bit (seen by reclaim only where the mapping has recency, `ReplayConfig::file_recency`);
    /// a miss is a major fault of its page alone (mm/filemap.c `filemap_fault()`: the replay
    /// models no read-around, as for the player's `MADV_RANDOM` mapping) that charges a frame
    /// to the memcg (`filemap_add_folio()`) and puts the page on the inactive file list, or on
    /// the active one where `workingset_refault()` finds its shadow recent.
    fn file_access(&mut self, f: u64) -> Result<(), SimError> {
        let Some(i) = usize::try_from(f).ok().filter(|&i| i < self.file_read.len()) else {
            return Err(SimError::Setup(format!(
                "trace reads file page {f} but the replay's file has {} pages",
                self.file_read.len()
            )));
        };
        self.counts.accesses += 1;
        self.counts.file_reads += 1;
        let p = (self.touched.len() + i) as u32;
        if self.ram.is_resident(p) {
            self.ram.touch(p);
            return Ok(());
        }
        let woken = self.allocate()?;
        self.charge_fault()?;
        let refault = std::mem::replace(&mut self.file_read[i], true);
        self.counts.file_faults += 1;
        self.counts.file_refaults += u64::from(refault);
        self.ram.install(p, refault);
        if woken {
            self.kswapd()?;
        }
        Ok(())
    }

    /// The node's free pages with [`ReplayConfig::watermarks`]: RAM less its resident pages
    /// and the swap's pool, which takes its pages from the same node whatever cgroup is
    /// charged (zsmalloc allocates them from the page allocator). Without watermarks, RAM less
    /// what is charged to the memcg.
    pub fn free_pages(&self) -> u64 {
        let used = if self.cfg.watermarks.is_some() {
            self.ram.len() as u64 + self.pool_pages()
        } else {
            self.memcg_pages()
        };
        (self.ram.capacity() as u64).saturating_sub(used)
    }

    /// The pages the swap's pool holds now: zram's `mem_used_total`, zswap's
    /// `zswap_total_pages()`.
    fn pool_pages(&self) -> u64 {
        match (&self.zram, self.swap.zswap()) {
            (Some(z), _) => z.pool_pages(),
            (None, Some(z)) => z.total_pages(),
            (None, None) => 0,
        }
    }

    /// The faulting page's own read from its slot (mm/page_io.c `swap_read_folio()`). A
    /// `SWP_SYNCHRONOUS_IO` device (zram) reads it outside the swap cache and frees the slot
    /// (`swap_free_nr()` drops the last reference). Through the swap cache the slot is freed
    /// only where mm/memory.c `should_try_to_free_swap()` says so: a write fault (the
    /// process is the page's only user), or swap more than half full (`vm_swap_full()`, what
    /// `mem_cgroup_swap_full()` reads on cgroup v1 and on v2 without a swap limit). Otherwise
    /// the page keeps it: `SWAP_HAS_CACHE` only, clean where the read came from the device or
    /// the zeromap (zswap's load marks the folio dirty).
    fn fault_in(&mut self, p: u32, write: bool) -> Result<(), SimError> {
        self.counts.swap_ins += 1;
        let slot = self.slots.slot(p).ok_or_else(|| no_slot(p))?;
        let from = if self.swap.synchronous_io() {
            let from = self.swap.swap_in(slot, &mut self.buf, &mut self.timer)?;
            self.slots.release(p);
            from
        } else {
            let from = self.swap.read(slot, &mut self.buf, &mut self.timer)?;
            self.slots.set_clean(p, from != SwapIn::Zswap);
            self.mapped_from_swap_cache(p, write);
            from
        };
        if from == SwapIn::Zeromap {
            self.counts.zero_swap_ins += 1;
        }
        self.verified &= self.buf == self.page(p as usize);
        Ok(())
    }

    /// `do_swap_page()` mapped `p` from the swap cache: `swap_free_nr()` drops the page
    /// table's count, and `should_try_to_free_swap()` (see [`Self::fault_in`]) frees the slot
    /// or leaves it to the swap cache.
    fn mapped_from_swap_cache(&mut self, p: u32, write: bool) {
        if write || self.slots.vm_swap_full() {
            if let Some(slot) = self.slots.slot(p) {
                self.swap.free(slot);
            }
            self.slots.release(p);
        } else {
            self.slots.keep_in_cache(p);
        }
    }

    /// A fault on a page read ahead, or written back by zswap, and not faulted since
    /// (`do_swap_page()` finds it with `swap_cache_get_folio()`): a minor fault.
    /// `swap_update_readahead()` clears a read-ahead page's `PG_readahead` and counts a
    /// `swap_ra_hit` (a written-back page has none to clear); the page is mapped and its slot freed or
    /// kept as on any fault through the swap cache ([`Self::mapped_from_swap_cache`]). It stays
    /// where it is on the LRU; the caller marks the access.
    fn swap_cache_hit(&mut self, p: u32, write: bool) {
        let readahead = self.cached[p as usize] != Cached::Written;
        self.cached[p as usize] = Cached::Mapped;
        if readahead {
            self.counts.swap_ra_hit += 1;
        } else {
            self.counts.writeback_cache_hits += 1;
        }
        if let Some(ra) = &mut self.ra {
            ra.cache_hit(u64::from(p), readahead);
        }
        self.mapped_from_swap_cache(p, write);
        if write {
            self.slots.set_clean(p, false);
        }
    }

    /// `swapin_readahead()` for a fault on swapped page `p` (see [`super::readahead`]): the
    /// window's pages (by address, or by slot) in ascending order, each one that is in swap
    /// and not in the swap cache charged (reclaiming first when RAM is full), put on the
    /// inactive LRU unmapped (or the active one, as `workingset_refault()` decides) and read
    /// through the swap layer keeping its slot; a page other than `p` is a read-ahead page
    /// (`swap_ra`). `p` itself is read and mapped as without readahead, and stays out of
    /// reclaim's reach until the window is done (its folio is locked during the fault).
    fn swapin_readahead(&mut self, p: u32, write: bool) -> Result<(), SimError> {
        let slot = self.slots.slot(p).ok_or_else(|| no_slot(p))?;
        let window = self.ra.as_mut().expect("readahead").window(u64::from(p), slot);
        let woken = self.allocate()?;
        let result = self.read_window(p, write, window);
        self.ram.pin(None);
        result?;
        if woken {
            self.kswapd()?;
        }
        Ok(())
    }

    /// The window's pages in ascending order of what the window is in: `(page, slot)` of
    /// each one `__read_swap_cache_async()` would read (in swap: a slot whose page is not
    /// resident), the faulting page always.
    fn window_pages(&self, p: u32, window: RaWindow) -> Vec<(u32, u64)> {
        let in_swap = |q: u32| {
            let slot = self.slots.slot(q)?;
            (q == p || !self.ram.is_resident(q)).then_some((q, slot))
        };
        match window {
            RaWindow::Pages(r) => r.filter_map(|q| in_swap(q as u32)).collect(),
            RaWindow::Slots(r) => r.filter_map(|slot| in_swap(self.slots.page_at(slot)?)).collect(),
        }
    }

    fn read_window(&mut self, p: u32, write: bool, window: RaWindow) -> Result<(), SimError> {
        for (q, slot) in self.window_pages(p, window) {
            if q == p {
                self.charge_fault()?;
                self.fault_in(p, write)?;
                self.ram.install(p, true);
                self.ram.pin(Some(p));
                continue;
            }
            // Reclaim for an earlier page of the window may have moved this one.
            if self.ram.is_resident(q) || self.slots.slot(q) != Some(slot) {
                continue;
            }
            if !self.try_charge()? {
                // Reclaim cannot make room (RAM holds only the faulting page): the charge
                // fails and the page is skipped (`mem_cgroup_swapin_charge_folio()`).
                continue;
            }
            let i = q as usize;
            let from = self.swap.read(slot, &mut self.buf, &mut ReadaheadTimer(&mut self.timer))?;
            self.verified &= self.buf == self.page(i);
            self.slots.set_clean(q, from != SwapIn::Zswap);
            self.cached[i] = if from == SwapIn::Zswap { Cached::Dirty } else { Cached::Clean };
            self.ram.install_unmapped(q, true);
            self.counts.swap_ra += 1;
        }
        Ok(())
    }

    /// Whether a page's charge finds no margin: RAM full, or (cgroup v2) resident pages plus
    /// zswap's charged pool at the limit (mm/memcontrol.c `mem_cgroup_margin()` below 1).
    fn memcg_full(&self) -> bool {
        self.ram.len() >= self.ram.capacity() || self.memcg_pages() >= self.cfg.ram_pages
    }

    /// mm/memcontrol.c `try_charge_memcg()` for one page: while there is no margin, reclaim
    /// ([`Self::reclaim_memcg`]) and retry; a reclaim that frees nothing is retried
    /// `MAX_RECLAIM_RETRIES` times (16, `nr_retries`) before the charge fails. On cgroup v2 a
    /// batch swapped out to zswap frees less than a batch of the limit (the pool's charge
    /// grows), so more batches may be needed. False when reclaim cannot make room.
    fn try_charge(&mut self) -> Result<bool, SimError> {
        let mut retries = zmem_zswap::MAX_RECLAIM_RETRIES;
        while self.memcg_full() {
            if self.ram.evictable() == 0 {
                return Ok(false);
            }
            if self.reclaim_memcg()? == 0 {
                if retries == 0 {
                    return Ok(false);
                }
                retries -= 1;
            }
        }
        Ok(true)
    }

    /// A fault's charge: without room the kernel's memcg OOM killer ends the process.
    fn charge_fault(&mut self) -> Result<(), SimError> {
        if self.try_charge()? {
            Ok(())
        } else {
            Err(SimError::OutOfMemory { accesses: self.counts.accesses })
        }
    }

    /// `shrink_folio_list()` on one victim. A page whose slot still holds it (read ahead and
    /// never faulted, or swapped in through the swap cache and not written since) is dropped
    /// without a write (a clean swap-cache folio goes by `__remove_mapping()`); any other gets
    /// a slot if it has none and is written out (`pageout()`). A victim with no slot to be had
    /// (`folio_alloc_swap()` failed) or that the swap layer keeps in RAM (`pageout()`'s
    /// `PAGE_ACTIVATE`) is activated.
    fn reclaim_page(&mut self, victim: u32) -> Result<Reclaimed, SimError> {
        let v = victim as usize;
        if v >= self.touched.len() {
            // A file page: clean (only read), unmapped and dropped with its shadow.
            self.counts.file_evictions += 1;
            self.ram.evict(victim);
            return Ok(Reclaimed::Freed { pageout: false });
        }
        let data = self.page(v);
        if self.slots.slot(victim).is_some() && self.slots.is_clean(victim) {
            match self.cached[v] {
                Cached::Mapped => self.counts.clean_dropped += 1,
                // Written back: the write is done, the folio goes.
                Cached::Written => {}
                Cached::Clean | Cached::Dirty => {
                    self.counts.ra_reclaimed += 1;
                    self.counts.ra_dropped += 1;
                }
            }
            // Unmapped: the page table holds the swap entry again.
            self.slots.reuse(victim);
            self.cached[v] = Cached::Mapped;
            self.slots.set_clean(victim, false);
            self.ram.evict(victim);
            return Ok(Reclaimed::Freed { pageout: false });
        }
        let slot = match self.slots.slot(victim) {
            Some(slot) => slot,
            None => match self.slots.alloc(victim, &self.swap) {
                Some(slot) => slot,
                None => {
                    self.ram.activate(victim);
                    return Ok(Reclaimed::Kept);
                }
            },
        };
        let objects = self.objects.map(|o| AtPage { objects: o, page: u64::from(victim) });
        let objects = objects.as_ref().map(|o| o as &dyn ObjectSource);
        let out = self.swap.swap_out_with(slot, data, objects, &mut self.timer)?;
        match out {
            SwapOut::KeptInRam => {
                // Still in the swap cache, its slot held by the cache alone.
                self.slots.keep_in_cache(victim);
                self.counts.kept_in_ram += 1;
                self.counts.rejected += 1;
                self.ram.activate(victim);
                return Ok(Reclaimed::Kept);
            }
            SwapOut::Zeromap => self.counts.zero_swap_outs += 1,
            SwapOut::Zswap => self.counts.stored += 1,
            SwapOut::Device if self.swap.zswap().is_some() => self.counts.rejected += 1,
            SwapOut::Device => self.counts.stored += 1,
        }
        self.slots.reuse(victim);
        self.counts.swap_outs += 1;
        if self.cached[v] == Cached::Dirty {
            self.counts.ra_reclaimed += 1;
            self.cached[v] = Cached::Mapped;
        }
        self.slots.set_clean(victim, false);
        self.ram.evict(victim);
        Ok(Reclaimed::Freed { pageout: true })
    }

    /// The result, with the time the caller measured around the accesses.
    pub fn finish(mut self, time: Elapsed) -> ReplayResult {
        let ps = self.page_size as u64;
        // Device writes no stage saw: zswap's writeback (the shrink worker and the shrinker
        // write straight to the swap file) and zram's writeback to its backing device.
        let unseen = match (&self.zram, self.swap.zswap()) {
            (Some(z), _) => z.bd_stat().bd_writes,
            (None, Some(z)) => z.swap_file().writes().saturating_sub(self.timer.device_writes),
            (None, None) => 0,
        };
        self.timer.charge_writes(unseen);
        let (max_pool_bytes, disk_reads, disk_writes, counters) =
            match (&self.zram, self.swap.zswap()) {
                (Some(z), _) => {
                    let mm = z.mm_stat();
                    let counters = zmem_zram::MmStat::FIELDS
                        .iter()
                        .zip(mm.values())
                        .map(|(n, v)| Counter { name: n.to_string(), value: v });
                    (mm.mem_used_max, 0, 0, counters.collect())
                }
                (None, Some(z)) => {
                    let s = z.stats();
                    let vmstat =
                        [("zswpin", s.zswpin), ("zswpout", s.zswpout), ("zswpwb", s.zswpwb)];
                    let c: Vec<Counter> = s
                        .debugfs()
                        .into_iter()
                        .chain(vmstat)
                        .map(|(n, v)| Counter { name: n.to_string(), value: v })
                        .collect();
                    let f = z.swap_file();
                    (z.max_pool_pages() * ps, f.reads(), f.writes(), c)
                }
                (None, None) => (0, 0, 0, Vec::new()),
            };
        let c = self.counts;
        // The compressions the stores took from `objects`, counted where they were made.
        let time = time.plus(self.timer.charged());
        ReplayResult {
            swap: self.cfg.swap,
            algo: self.cfg.compressor().to_string(),
            pool: self.cfg.pool.clone(),
            ram_pages: self.cfg.ram_pages,
            pages: self.touched.len() as u64,
            accesses: c.accesses,
            reads: c.reads,
            writes: c.writes,
            first_touches: c.first_touches,
            swap_outs: c.swap_outs,
            zero_swap_outs: c.zero_swap_outs,
            swap_ins: c.swap_ins,
            zero_swap_ins: c.zero_swap_ins,
            stored: c.stored,
            rejected: c.rejected,
            kept_in_ram: c.kept_in_ram,
            readahead: self.ra.as_ref().map_or(super::Readahead::None, |_| self.cfg.readahead),
            page_cluster: self.cfg.page_cluster,
            swappiness: self.cfg.swappiness,
            swap_ra: c.swap_ra,
            swap_ra_hit: c.swap_ra_hit,
            ra_reclaimed: c.ra_reclaimed,
            ra_dropped: c.ra_dropped,
            clean_dropped: c.clean_dropped,
            writeback_cached: c.writeback_cached,
            writeback_cache_hits: c.writeback_cache_hits,
            shrink_worker_runs: self.swap.zswap().map_or(0, |z| z.shrink_worker_runs()),
            activation_freed: c.activation_freed,
            kswapd_reclaimed: c.kswapd_reclaimed,
            direct_reclaimed: c.direct_reclaimed,
            kswapd_wakes: c.kswapd_wakes,
            file_pages: self.file_read.len() as u64,
            file_reads: c.file_reads,
            file_faults: c.file_faults,
            file_refaults: c.file_refaults,
            file_evictions: c.file_evictions,
            max_pool_bytes,
            disk_reads,
            disk_writes,
            counters,
            store_hist: self.timer.store.finish(),
            load_hist: self.timer.load.finish(),
            swap_in_hists: SwapInHists {
                zswap_hit: self.timer.zswap_hit.finish(),
                zswap_miss: self.timer.zswap_miss.finish(),
                zram: self.timer.zram_read.finish(),
                zram_written_back: self.timer.zram_written_back.finish(),
                readahead: self.timer.readahead.finish(),
            },
            device: self.cfg.device.clone(),
            device_write_hist: self.timer.device_write.finish(),
            device_reads_charged: self.timer.device_reads,
            device_writes_charged: self.timer.device_writes,
            device_secs: self.timer.device_ns as f64 / 1e9,
            cpu_secs: time.cpu_secs,
            wall_secs: time.wall_secs,
            verified: self.verified,
        }
    }
}

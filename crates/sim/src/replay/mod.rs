//! `zmem replay`: a memory-pressure simulator. An access trace touches pages of a page set; RAM
//! holds at most `ram_pages` of them, and what does not fit goes to swap: a zram device, or
//! zswap in front of a swap file. Touching a swapped page brings it back.
//!
//! Model: RAM is the kernel's two anonymous LRU lists with accessed bits (`lru.rs`: the
//! classic, non-MGLRU reclaim of Linux 6.18, as a memory cgroup at its limit runs it), reclaimed
//! when a fault finds RAM full as the memcg's reclaim does: priority by priority from 12 until
//! at least 32 pages (`SWAP_CLUSTER_MAX`) are freed, each priority scanning its share of the
//! lists (`get_scan_count()`, [`scan`], swappiness [`ReplayConfig::swappiness`]) and running
//! the memcg-aware shrinkers (zswap's). Checked against the
//! live kernel by `zmem validate replay` (docs/BENCHMARKS.md); it replaced a CLOCK, which
//! swapped 2-6 % less at tight budgets. A victim is swapped out at its page id as swap offset
//! through zmem's swap layer ([`zmem_zswap::SwapLayer`], the same path for zram and zswap): an
//! all-zero page only sets a bit in the zeromap (Linux 6.12+); any other page goes to zswap, else
//! the device (zram's device is the zram device); a page zswap rejects while
//! `memory.zswap.writeback` is 0 stays in RAM, activated. A swap-in reads the page back (zswap's loads are exclusive) and
//! frees the slot (a zram slot is freed, as `swap_slot_free_notify` does), and checks it is the
//! page that went out. RAM is the memcg's limit ([`ReplayConfig::ram_pages`]): on cgroup v1
//! (the default) it holds only resident pages and the swap pool is reported separately (its
//! maximum); on cgroup v2 zswap's compressed bytes are charged against it as well, zram's
//! never ([`memcg`], [`ReplayConfig::cgroup`]); on v1, where nothing is charged, zswap's
//! shrinker counts no stored pages and writes nothing back (`ZswapConfig::memcg_charged`). zsmalloc's own shrinker compacts zswap's pools and
//! a zram device's pool under global reclaim with the kernel's `do_shrink_slab()` arithmetic
//! (zmem-zswap's `shrinker`); it is not memcg-aware, so a memcg's own reclaim never runs it
//! (only the machine-wide reclaim of [`ReplayConfig::watermarks`] does, once per priority each
//! reclaim walks, as the root memcg's `shrink_slab()`).
//!
//! Swap-in faults read ahead as 6.18's `do_swap_page()` does ([`readahead`], each rule cited
//! there): on zram (a `SWP_SYNCHRONOUS_IO` device; every entry here has a swap count of 1) only
//! the faulting page is read; on zswap's swap file `swapin_readahead()` reads a window of pages
//! around it, VMA-based (the default: the page set is one VMA, page id = virtual page) or
//! cluster-based, at most `1 << vm.page-cluster` pages ([`ReplayConfig::readahead`],
//! [`ReplayConfig::page_cluster`]). A read-ahead page comes from the zeromap, zswap (whose entry
//! `zswap_load()` frees, as for every folio in the swap cache) or the device, and is counted in
//! `swap_ra`. It is then in the swap cache: resident, charged to RAM's budget and on the LRU as
//! the kernel charges it to the memcg and adds it there (inactive unless its refault distance
//! activates it), but not mapped, so not accessed: reclaim takes it at its first scan. A fault
//! that finds it there is a minor fault and a `swap_ra_hit`; the page is mapped and its slot
//! freed. Reclaimed before any fault, a page read from zswap (dirty: its entry is gone) is
//! stored again; one read from the device or the zeromap (clean) is dropped without a write, its
//! slot still holding it.
//!
//! The flow: [`run`] checks the trace, builds a [`Simulator`], feeds it every access and times
//! the whole; [`Simulator::access`] is one step, for callers that interleave their own work.
//!
//! What is timed: each zram page write / read, and each `zswap_store` / `zswap_load` (the
//! functions seed 001, docs/REFERENCES.md [seed-001], traced with bpftrace). The swap file
//! stands for a block device ([`ReplayConfig::device`], `--swap-device`: a profile or a
//! measured device, [`crate::swap_device`]): each of its reads and writes (a zswap miss, a page
//! zswap rejects, zswap's writeback; a read of a slot zram wrote back, zram's writeback) is
//! charged one latency drawn from the device's distribution, added to the time, never slept.
//! Swap-ins are end to end and also reported by where the page came from ([`SwapInHists`]:
//! zswap hit, zswap miss + device read, zram, zram written back + device read); device writes
//! go to their own histogram, as the kernel does not make reclaim wait for them.
//! Everything else is deterministic: the same pages, trace and device give the same counters
//! and the same charges.

mod lru;
pub mod memcg;
mod page_slots;
pub mod readahead;
pub mod scan;
mod sim;
pub mod slots;

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use serde::Serialize;
use zmem_zswap::{FileSlots, Incompressible, SwapFile, Zswap, ZswapConfig, ZswapParams};

use crate::cputime::{ChargedObjects, Stopwatch};
use crate::latency::LatencyHist;
use crate::swap_device::SwapDevice;
use crate::{Progress, SimError};

pub use memcg::CgroupVersion;
pub use readahead::{DEFAULT_PAGE_CLUSTER, Readahead};
pub use sim::Simulator;
pub use sim::SwapTimer;

pub use zmem_pages::access::{Access, accesses};

/// The swap behind RAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SwapKind {
    Zram,
    Zswap,
}

impl FromStr for SwapKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "zram" => Ok(Self::Zram),
            "zswap" => Ok(Self::Zswap),
            _ => Err(format!("unknown swap {s:?} (zram or zswap)")),
        }
    }
}

/// The text [`SwapKind::from_str`] reads back.
impl std::fmt::Display for SwapKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Zram => "zram",
            Self::Zswap => "zswap",
        })
    }
}

/// How to replay.
#[derive(Debug, Clone)]
pub struct ReplayConfig {
    /// Resident pages.
    pub ram_pages: u64,
    pub swap: SwapKind,
    /// zram's algorithm (zswap's compressor is `zswap.compressor`).
    pub algo: String,
    /// zram's `algorithm_params` for the algorithm (`level=3 dict=F`), if any; zswap's
    /// compressors take none.
    pub algo_params: Option<String>,
    /// Allocator of the zram device or the zswap pool.
    pub pool: String,
    pub page_size: usize,
    /// zswap's four module parameters: its `compressor`, `max_pool_percent` (of
    /// [`ReplayConfig::total_ram_pages`]),
    /// `accept_threshold_percent` and `shrinker_enabled` (reclaim also runs the zswap
    /// shrinker).
    pub zswap: ZswapParams,
    pub incompressible: Incompressible,
    /// `memory.zswap.writeback` of the memcg: with it off, zswap never writes back and a page
    /// it rejects stays in RAM. The effective value: off if the memcg or any ancestor has it
    /// at 0 ([`memcg::ZswapFiles::effective`]). A cgroup v2 file; on v1 it does not exist and
    /// 6.18 keeps it on, so off with [`CgroupVersion::V1`] is a what-if.
    pub writeback: bool,
    /// The memcg's cgroup version ([`memcg`]): on v2 zswap's compressed bytes are charged to
    /// the memcg, so the pool counts against `ram_pages`; on v1 (the default) they are not.
    pub cgroup: CgroupVersion,
    /// `memory.zswap.max` in bytes (cgroup v2 only; `None`: `max`), the tightest of the memcg's
    /// and its ancestors' ([`memcg::ZswapFiles::effective`]): at it, a zswap store must first
    /// write one of the memcg's entries back or be rejected.
    pub zswap_max: Option<u64>,
    /// The machine's RAM in pages, `totalram_pages()`, of which zswap's `max_pool_percent` is
    /// a share (mm/zswap.c `zswap_max_pages()`): the whole machine's, not the memcg's. `None`:
    /// `ram_pages`, the replay's RAM taken as the whole machine.
    pub total_ram_pages: Option<u64>,
    /// Directory for zswap's swap file (an unlinked temporary file); `None` keeps it in memory.
    pub swap_dir: Option<PathBuf>,
    /// The block device behind the swap file, whose latency every device I/O is charged.
    pub device: SwapDevice,
    /// zram only: give the device a backing device (`backing_dev`; held in memory, charged
    /// as `device`), so [`Simulator::zram_writeback_idle`] can write slots back to it.
    pub zram_backing: bool,
    /// Swap readahead on swap-in faults ([`readahead`]): VMA-based (the kernel's default,
    /// `/sys/kernel/mm/swap/vma_ra_enabled`), cluster-based, or none. zram never reads ahead.
    pub readahead: Readahead,
    /// `vm.page-cluster`: readahead reads at most `1 << page_cluster` pages (VMA readahead at
    /// most 32); 0 reads only the faulting page. The kernel's default is 3.
    pub page_cluster: u32,
    /// The swap area's size in pages, its header's included (`si->max`): where the slot
    /// allocator puts each page ([`slots`]) and when swap counts as full (`vm_swap_full()`,
    /// which frees a swapped-in page's slot). `None`: the page count plus
    /// [`SWAP_AREA_SLACK`], the size `zmem validate` makes its swap file and zram device.
    pub swap_pages: Option<u64>,
    /// The memcg's swappiness (cgroup v1's `memory.swappiness`, v2's `vm.swappiness`; 0 to
    /// [`scan::MAX_SWAPPINESS`]): how much of each priority's scan reclaim gives the anon
    /// lists (mm/vmscan.c `get_scan_count()`, [`scan`]). The kernel's default is 60.
    pub swappiness: u32,
    /// Machine-wide reclaim ([`Watermarks`], `--watermarks`): RAM is a node whose free pages
    /// (RAM less resident pages and the swap's pool, which zsmalloc takes from the same node)
    /// kswapd keeps between the low and high marks and allocations below the min mark reclaim
    /// directly, each priority by priority with the page cache balanced as 6.18 does
    /// (`sim::kswapd`, `sim::reclaim`). `None`: a memory cgroup at its limit, reclaiming only
    /// when full (the default).
    pub watermarks: Option<Watermarks>,
    /// Pages of the file the trace reads (its page cache: [`Access::file`] ids are below
    /// it); charged to RAM and reclaimed from the file LRU lists as 6.18 balances them
    /// against the anon lists (`lru`, [`scan`]). [`run`] takes at least the trace's.
    pub file_pages: u64,
    /// Whether the file's mapping has recency (6.18 include/linux/mm_inline.h
    /// `vma_has_recency()`): true for a plain mapping, whose accessed bits reclaim reads as
    /// the anon pages'; false for one advised `MADV_RANDOM` (as `zmem validate`'s player maps
    /// its file, to keep readahead out) or `MADV_SEQUENTIAL`, whose references
    /// `folio_referenced()` ignores: its pages are reclaimed at their first scan unless a
    /// refault activated them.
    pub file_recency: bool,
    /// When the memcg's statistics, which reclaim's deactivation and workingset decisions
    /// read, catch up with its lists ([`lru`]). The default, [`StatsFlush::Always`], is the
    /// model `zmem validate` checks against the kernel (its harness flushes them); the
    /// kernel's own flushes are [`StatsFlush::KERNEL`] and [`StatsFlush::KERNEL_NEW_MEMCG`].
    pub stats_flush: StatsFlush,
}

/// When the statistics reclaim reads catch up with the lists (6.18 mm/memcontrol.c:
/// `lruvec_page_state()` reads `lruvec_stats->state`, which only `css_rstat_flush()` updates).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum StatsFlush {
    /// Before every reclaim: what `zmem validate`'s harness makes happen by reading the
    /// memcg's `memory.stat` every 2 ms (each read flushes: mm/memcontrol-v1.c
    /// `memcg1_stat_format()` → `mem_cgroup_flush_stats()`).
    Always,
    /// The kernel's own flushes: the periodic flusher every `interval_ns` of the trace's time
    /// (`flush_memcg_stats_dwork()`, `FLUSH_TIME` 2 s) and zswap's shrinker wherever reclaim
    /// calls it (`zswap_shrinker_count()` → `mem_cgroup_flush_stats()`). The rate-limited
    /// flushes of reclaim and of a refault (`mem_cgroup_flush_stats_ratelimited()`) act only
    /// when the flusher is two periods late, which it is not on the trace's clock.
    /// `first_ns`: a memcg made for the trace (`zmem validate`'s player), whose statistics read
    /// empty until the flusher first runs, that far in; `None`: a workload that ran before
    /// the trace (what the lab replays), in a steady state its statistics are never more than
    /// a period behind: the replay, which starts from empty RAM, reads them current through
    /// its warm-up and hands them to the flusher at the first reclaim, whose first pass comes
    /// half a period later (its phase is unknown).
    Periodic { interval_ns: u64, first_ns: Option<u64> },
}

/// 6.18's `FLUSH_TIME`: the memcg statistics flusher's period, 2 s.
pub const FLUSH_TIME_NS: u64 = 2_000_000_000;

impl StatsFlush {
    /// The kernel's flushes for a workload that was running before the trace.
    pub const KERNEL: Self = Self::Periodic { interval_ns: FLUSH_TIME_NS, first_ns: None };

    /// The kernel's flushes for a memcg made for the trace, the flusher's phase unknown: its
    /// first run half a period in.
    pub const KERNEL_NEW_MEMCG: Self =
        Self::Periodic { interval_ns: FLUSH_TIME_NS, first_ns: Some(FLUSH_TIME_NS / 2) };
}

/// `always`, `kernel` or `new-memcg`, as [`StatsFlush::from_str`] reads them.
impl std::fmt::Display for StatsFlush {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Self::Always => f.write_str("always"),
            Self::KERNEL => f.write_str("kernel"),
            Self::KERNEL_NEW_MEMCG => f.write_str("new-memcg"),
            Self::Periodic { interval_ns, first_ns } => {
                write!(f, "every {interval_ns} ns, first at {first_ns:?} ns")
            }
        }
    }
}

impl FromStr for StatsFlush {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "always" => Ok(Self::Always),
            "kernel" => Ok(Self::KERNEL),
            "new-memcg" => Ok(Self::KERNEL_NEW_MEMCG),
            _ => Err(format!("unknown statistics flush {s:?} (always, kernel or new-memcg)")),
        }
    }
}

/// The watermarks of the replay's RAM, in pages (zmem-kernel's `pressure::wmarks` computes a
/// machine's from its zones; scale them to the replay's RAM). One node with one zone: 6.18's
/// per-zone balance (`pgdat_balanced()` takes any zone eligible for the allocation that meets
/// its mark), watermark boosts and high-order allocations are not modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Watermarks {
    pub min: u64,
    pub low: u64,
    pub high: u64,
}

impl Watermarks {
    /// The marks checked: ascending and under RAM's size.
    pub fn check(&self, ram_pages: u64) -> Result<(), String> {
        if !(self.min <= self.low && self.low <= self.high && self.high < ram_pages) {
            return Err(format!(
                "watermarks min {} <= low {} <= high {} < RAM {} pages do not hold",
                self.min, self.low, self.high, ram_pages
            ));
        }
        Ok(())
    }
}

/// mm/vmscan.c `vm_swappiness`'s default, which a new memcg inherits.
pub const DEFAULT_SWAPPINESS: u32 = 60;

/// Pages a swap area has beyond the page set's by default ([`ReplayConfig::swap_pages`]).
pub const SWAP_AREA_SLACK: u64 = 1024;

impl ReplayConfig {
    /// The compressor of the swap replayed: zram's `algo` or zswap's `compressor`.
    pub fn compressor(&self) -> &str {
        match self.swap {
            SwapKind::Zram => &self.algo,
            SwapKind::Zswap => &self.zswap.compressor,
        }
    }

    /// The swap area's size for a page set of `pages` pages: [`ReplayConfig::swap_pages`], at
    /// least room for every page and the header.
    pub fn swap_area_pages(&self, pages: u64) -> u64 {
        self.swap_pages.unwrap_or(pages + SWAP_AREA_SLACK).max(pages + 1)
    }
}

impl Default for ReplayConfig {
    fn default() -> Self {
        Self {
            ram_pages: 1024,
            swap: SwapKind::Zswap,
            algo: zmem_zram::DEFAULT_ALGORITHM.into(),
            algo_params: None,
            pool: "zsmalloc".into(),
            page_size: 4096,
            zswap: ZswapParams {
                compressor: zmem_zram::DEFAULT_ALGORITHM.into(),
                ..ZswapParams::default()
            },
            incompressible: Incompressible::StoreAsIs,
            writeback: true,
            cgroup: CgroupVersion::V1,
            zswap_max: None,
            total_ram_pages: None,
            swap_dir: None,
            device: SwapDevice::default(),
            zram_backing: false,
            readahead: Readahead::Vma,
            page_cluster: DEFAULT_PAGE_CLUSTER,
            swap_pages: None,
            swappiness: DEFAULT_SWAPPINESS,
            watermarks: None,
            file_pages: 0,
            file_recency: true,
            stats_flush: StatsFlush::Always,
        }
    }
}

/// Swap-in latencies, end to end, by where the page came from.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SwapInHists {
    /// `zswap_load` that found the page.
    pub zswap_hit: LatencyHist,
    /// `zswap_load` that did not, plus the device read.
    pub zswap_miss: LatencyHist,
    /// zram's page read from memory.
    pub zram: LatencyHist,
    /// zram's read of a slot written back to its backing device, plus the device read.
    pub zram_written_back: LatencyHist,
    /// Pages read ahead (not a fault's own page; not in `load_hist`): `zswap_load`, plus the
    /// device read's charge where zswap missed; zero pages are not timed.
    pub readahead: LatencyHist,
}

/// What a replay measured. All fields but the histograms of measured times, `cpu_secs` and
/// `wall_secs` are deterministic (the device's charges are seeded).
#[derive(Debug, Clone, Serialize)]
pub struct ReplayResult {
    pub swap: SwapKind,
    pub algo: String,
    pub pool: String,
    pub ram_pages: u64,
    pub pages: u64,
    pub accesses: u64,
    pub reads: u64,
    pub writes: u64,
    /// First touches (faults that read nothing from swap).
    pub first_touches: u64,
    /// Pages written out of RAM to swap (zeromap, zswap or the device); pages whose slot
    /// still held them were dropped instead (`ra_dropped`, `clean_dropped`).
    pub swap_outs: u64,
    /// Of those, zero pages caught by the zeromap.
    pub zero_swap_outs: u64,
    /// Faults that read their page from swap (major faults).
    pub swap_ins: u64,
    /// Of those, zero pages (the zeromap's: no device read).
    pub zero_swap_ins: u64,
    /// The readahead the replay did: [`Readahead::None`] where the swap is zram (synchronous)
    /// or `page_cluster` is 0.
    pub readahead: Readahead,
    pub page_cluster: u32,
    /// The memcg's swappiness the reclaim ran with ([`ReplayConfig::swappiness`]).
    pub swappiness: u32,
    /// Pages read ahead into the swap cache with a fault's own page (/proc/vmstat `swap_ra`);
    /// not in `swap_ins`.
    pub swap_ra: u64,
    /// Faults that found a read-ahead page in the swap cache (/proc/vmstat `swap_ra_hit`):
    /// minor faults, not in `swap_ins`.
    pub swap_ra_hit: u64,
    /// Read-ahead pages reclaimed before any fault on them; those read from zswap were
    /// stored again (in `swap_outs`), the others dropped (`ra_dropped`).
    pub ra_reclaimed: u64,
    /// Of those, clean pages dropped without a write (read from the device or the zeromap; the
    /// slot still holds them): not in `swap_outs`.
    pub ra_dropped: u64,
    /// Swapped-in pages reclaim dropped without a write: they kept their slot through the swap
    /// cache and were not written since (`Simulator`'s `fault_in`); not in `swap_outs`.
    #[serde(default)]
    pub clean_dropped: u64,
    /// Slots given back when reclaim activated a swapped-in page that kept one, swap being
    /// more than half full (`shrink_folio_list()`'s `activate_locked`: `folio_free_swap()`).
    #[serde(default)]
    pub activation_freed: u64,
    /// Pages zswap wrote back, each put in the swap cache as 6.18's `zswap_writeback_entry()`
    /// does (charged, on the inactive tail once written), and faults that found one still
    /// there (minor faults; the others read the page back from the swap device).
    #[serde(default)]
    pub writeback_cached: u64,
    #[serde(default)]
    pub writeback_cache_hits: u64,
    /// Times zswap's shrink worker ran: every [`SHRINK_WORK_REJECTED_STORES`] stores rejected at
    /// the pool limit, and at the end of a reclaim that left it queued
    /// ([`zmem_zswap::ZswapConfig::queued_shrink_work`]).
    #[serde(default)]
    pub shrink_worker_runs: u64,
    /// With [`ReplayConfig::watermarks`]: pages kswapd reclaimed (vmstat `pgsteal_kswapd`),
    /// pages allocations reclaimed directly under the min mark (`pgsteal_direct`), and how
    /// often kswapd was woken (free pages at or under the low mark). All 0 without.
    #[serde(default)]
    pub kswapd_reclaimed: u64,
    #[serde(default)]
    pub direct_reclaimed: u64,
    #[serde(default)]
    pub kswapd_wakes: u64,
    /// Pages of the trace's file (0: no page cache).
    pub file_pages: u64,
    /// Accesses that read a file page.
    pub file_reads: u64,
    /// File reads that found their page out of RAM (major faults: a read from the file).
    pub file_faults: u64,
    /// File faults of pages read before and evicted: `workingset_refault_file`.
    pub file_refaults: u64,
    /// File pages reclaim dropped.
    pub file_evictions: u64,
    /// Stores the swap kept (zswap: zswpout; zram: every non-zero swap-out).
    pub stored: u64,
    /// zswap stores rejected (written to the swap file instead, or kept in RAM).
    pub rejected: u64,
    /// Of those, pages kept in RAM because writeback is disabled (reclaim moved on).
    pub kept_in_ram: u64,
    pub max_pool_bytes: u64,
    pub disk_reads: u64,
    pub disk_writes: u64,
    /// zswap's debugfs counters and vmstat events, or zram's mm_stat fields, by name.
    pub counters: Vec<Counter>,
    /// `zswap_store`, or zram's page write (device writes are in `device_write_hist`).
    pub store_hist: LatencyHist,
    /// Every swap-in from zswap or the device, end to end (zero pages are not timed).
    pub load_hist: LatencyHist,
    /// The same swap-ins by where the page came from.
    pub swap_in_hists: SwapInHists,
    /// The device the swap file stands for.
    pub device: SwapDevice,
    /// Latency charged to each device write (rejected stores, writeback).
    pub device_write_hist: LatencyHist,
    /// Device reads and writes charged (for zswap, `disk_reads` and `disk_writes`).
    pub device_reads_charged: u64,
    pub device_writes_charged: u64,
    /// Sum of every latency charged: the seconds the device is busy with the replay's swap.
    pub device_secs: f64,
    pub cpu_secs: f64,
    pub wall_secs: f64,
    /// Every swapped-in page equalled the page that went out.
    pub verified: bool,
}

/// Stores rejected at zswap's pool limit per run of its shrink worker, which 6.18 runs on a
/// kworker beside the reclaiming task (mm/zswap.c `zswap_store()` -> `queue_work()`, queued
/// once while pending): the time it takes to wake and run, counted in the storing task's
/// rejected stores. Measured, not read from the source: on the 2-core EPYC VM (Linux 6.18.44,
/// 2026-12-07, `zmem validate lab --ram 64M --zswap lzo-rle,max_pool_percent=1` on 360,000
/// mixed pages) `perf stat -e workqueue:workqueue_execute_start --filter 'function ==
/// shrink_worker'` counted 5,705 runs for 24,904 rejected stores, 4.4 each
/// (docs/BENCHMARKS.md, "zswap's shrink worker is queued work"). The replay also runs it at the
/// end of each reclaim, when the storing stops.
pub const SHRINK_WORK_REJECTED_STORES: u32 = 4;

/// The zswap engine a replay or study uses, in front of a swap file of `nr_slots` pages.
pub fn build_zswap(cfg: &ReplayConfig, nr_slots: u64) -> Result<Zswap, SimError> {
    let store: Box<dyn zmem_zswap::SlotStore> = match &cfg.swap_dir {
        Some(dir) => Box::new(
            FileSlots::temporary(dir, nr_slots * cfg.page_size as u64)
                .map_err(|e| SimError::Setup(format!("swap file in {}: {e}", dir.display())))?,
        ),
        None => Box::new(zmem_zswap::MemSlots::default()),
    };
    let swap = Arc::new(SwapFile::new(store, cfg.page_size, nr_slots));
    let zcfg = ZswapConfig {
        page_size: cfg.page_size,
        module: cfg.zswap.clone(),
        zpool: cfg.pool.clone(),
        total_ram_pages: cfg.total_ram_pages.unwrap_or(cfg.ram_pages),
        incompressible: cfg.incompressible,
        writeback: cfg.writeback,
        zswap_max_pages: match cfg.cgroup {
            CgroupVersion::V1 => None,
            CgroupVersion::V2 => cfg.zswap_max.map(|b| memcg::zswap_max_pages(b, cfg.page_size)),
        },
        memcg_charged: cfg.cgroup == CgroupVersion::V2,
        queued_shrink_work: Some(SHRINK_WORK_REJECTED_STORES),
        ..ZswapConfig::default()
    };
    Ok(Zswap::new(&zcfg, swap)?)
}

/// Replays `trace` over `pages` (whole pages of `cfg.page_size`).
pub fn run(
    pages: &[u8],
    trace: &[Access],
    cfg: &ReplayConfig,
    progress: &dyn Progress,
) -> Result<ReplayResult, SimError> {
    run_with(pages, trace, cfg, None, progress)
}

/// [`run`], the swap-outs taking the pages' compressed objects from `objects`
/// ([`Simulator::with_objects`]: the objects of `pages`, in page order).
pub fn run_with(
    pages: &[u8],
    trace: &[Access],
    cfg: &ReplayConfig,
    objects: Option<&dyn ChargedObjects>,
    progress: &dyn Progress,
) -> Result<ReplayResult, SimError> {
    if trace.is_empty() {
        return Err(SimError::NoPages);
    }
    let file_pages = cfg.file_pages.max(zmem_pages::access::file_pages(trace));
    let cfg = &ReplayConfig { file_pages, ..cfg.clone() };
    let mut sim = Simulator::with_objects(pages, cfg, objects)?;
    // A trace that leaves the page set fails before any work, not part-way through.
    if let Some(a) = trace.iter().find(|a| !a.file && a.page >= sim.pages()) {
        return Err(SimError::Setup(format!(
            "trace touches page {} but the page set has {} pages",
            a.page,
            sim.pages()
        )));
    }
    progress.start("replay", trace.len() as u64);
    let clock = Stopwatch::start();
    for chunk in trace.chunks(4096) {
        for &a in chunk {
            sim.access(a)?;
        }
        progress.advance(chunk.len() as u64);
    }
    let time = clock.elapsed();
    progress.finish();
    Ok(sim.finish(time))
}

/// One named counter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Counter {
    pub name: String,
    pub value: u64,
}

impl ReplayResult {
    /// A counter by name (0 if the swap kind has no such counter).
    pub fn counter(&self, name: &str) -> u64 {
        self.counters.iter().find(|c| c.name == name).map_or(0, |c| c.value)
    }
}

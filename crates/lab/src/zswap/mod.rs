//! zswap's half of the advice: its "Now" (the live state beside zmem's prediction for the same
//! compressor and pages), zswap candidates on the cost model zram's are judged with, one
//! zram-or-zswap verdict for the machine, and the rest of the swap stack (vm.swappiness,
//! vm.page-cluster, the swap device behind zswap).
//!
//! **Now.** The live state is `zmem_kernel::zswap_state` (module parameters, debugfs counters,
//! meminfo, vmstat, memory cgroups). The pages zswap stores cannot be read without faulting
//! them in, so the prediction is made from the pages the lab measured (the processes' captured
//! pages, or whatever the source was): each non-zero page stored into zmem's zswap with the live
//! compressor, scaled to the live `stored_pages` (a ratio estimator, as the zram "Now"), and
//! packed as 6.18 packs them, into one zsmalloc pool. Where the pages are a capture of
//! processes, each process weighs as much as it has in swap (`VmSwap`, [`swap_weights`]): zswap
//! holds the swapped pages of the processes that swapped, not a mix of everyone's resident ones.
//! Zero-filled pages are left out: since 6.12 the swap core keeps them in its zeromap and never
//! offers them to zswap (mm/page_io.c `swap_writeout()` -> `is_folio_zero_filled()`).
//!
//! **Candidates.** Each configuration (compressor the kernel offers x max_pool_percent x
//! shrinker_enabled, at the live accept_threshold_percent; and, where that replay's pool hit its
//! limit, at each other [`ACCEPT_THRESHOLDS`] value: below the limit the threshold never acts,
//! since mm/zswap.c `zswap_check_limits()` consults it only once the limit was reached and
//! `zswap_pool_reached_full` has latched) is replayed on the lab's trace with
//! RAM for a quarter of the pages, in front of the swap device the lab measured or profiled,
//! beside one zram replay of the current zram configuration on the same trace and RAM:
//! - pool: the current zram candidate's projected pool x (zswap replay's peak pool / zram
//!   replay's peak pool): a ratio on identical traffic, so the sample's bias cancels as it does
//!   for zram's candidates; memory saved against now is now's bytes less that pool;
//! - CPU seconds per second: zram's cost model on the replay's traffic (`cpu_secs_per_sec` in
//!   candidates.rs): the compressor's measured CPU per page for each page compressed, loaded
//!   from the pool or written back, at the swap rates, and the kernel's own swap work;
//! - swap-in p50/p99: end to end, misses read from the device included;
//! - device writes per second: pages written to the device per swap-out x swap-outs/s x page
//!   size (flash wear); swap-in microseconds per second: swap-ins/s x the mean of the hit and
//!   miss p50s weighted by their counts.
//!
//! Which of them (or a zram candidate) to run is the judge's (`decision`); [`stack`] then
//! gives the rest of the swap stack for that decision.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use zmem_experiments::objects::Objects;
use zmem_kernel::zswap_state::{ZswapRates, ZswapState};
use zmem_sim::replay::{Access, CgroupVersion, ReplayConfig, SwapKind};
use zmem_sim::swap_device::SwapDevice;

use crate::candidate::{Candidate, Config, DeviceTraffic, OverBudget};
use crate::cost::{self, Budgets, SwapOverhead};
use crate::facts::PageFacts;
use crate::measure::SwapRow;
use crate::now::Rates;
use crate::{LabError, NoProgress};
use zmem_pool::zsmalloc::class::ClassTable;
use zmem_zswap::{DEFAULT_ACCEPT_THRESHOLD, ZswapParams};

mod candidates;
mod now;
mod stack;

pub use candidates::*;
pub use now::*;
pub use stack::*;

/// zswap's max_pool_percent values tried (the kernel default is 20: mm/zswap.c
/// `zswap_max_pool_percent`).
pub const MAX_POOL_PERCENTS: [u32; 3] = [10, 20, 30];
/// accept_threshold_percent values tried besides the live one, for configurations whose pool
/// hit its limit: 100 accepts again as soon as the pool is under the limit (no hysteresis),
/// 70 waits until it has shrunk by 30 % (fewer limit hits, more pages rejected to the device):
/// mm/zswap.c `zswap_check_limits()` clears `zswap_pool_reached_full` only at or below
/// `zswap_accept_thr_pages()`.
pub const ACCEPT_THRESHOLDS: [u32; 2] = [70, 100];
/// Compressors zmem implements that zswap could ask the crypto API for.
pub const ZMEM_COMPRESSORS: [&str; 6] = ["lzo", "lzo-rle", "lz4", "lz4hc", "zstd", "deflate"];
/// The replays' RAM: a quarter of the pages (the tightest budget of the lab's swap table).
const RAM_FRACTION: u64 = 4;

/// zswap as the kernel is configured, read before the lab runs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ZswapLive {
    /// Whether the kernel has zswap at all (`/sys/module/zswap/parameters`).
    pub present: bool,
    /// Compressors zswap can use on this kernel (`/proc/crypto`, `caps`).
    pub offered: Vec<String>,
    /// The live state (parameters, debugfs, meminfo, vmstat, memory cgroups).
    pub state: ZswapState,
    /// The active swap areas (`/proc/swaps`).
    pub swaps: Vec<SwapAreaNow>,
    /// `/proc/sys/vm/swappiness` and `/proc/sys/vm/page-cluster`, when readable.
    pub swappiness: Option<u32>,
    pub page_cluster: Option<u32>,
    /// `/proc/meminfo` MemTotal: what max_pool_percent is a percentage of.
    #[serde(default)]
    pub mem_total_bytes: Option<u64>,
    /// The hierarchy the memory controller is on (`cgroups::memory_controller_version`): on
    /// v2 zswap's pool is charged to the memcg, and the grid's replays charge it
    /// (zmem-sim's `CgroupVersion`); absent where neither is mounted (then v1's, no charge).
    #[serde(default)]
    pub memory_cgroup_version: Option<u8>,
    /// With no disk swap active: the file system zswap's new swap file would be made on, and
    /// its room (one too full for the file rules zswap out: the apply could not make it).
    #[serde(default)]
    pub swap_file_room: Option<SwapFileRoom>,
}

/// The directory a new swap file goes in, and the bytes free there.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SwapFileRoom {
    pub dir: String,
    pub free_bytes: u64,
}

/// One active swap area and what it holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SwapAreaNow {
    pub filename: String,
    /// `zram`, `file` or `partition`.
    pub kind: String,
    pub size_bytes: u64,
    pub used_bytes: u64,
    pub priority: i32,
}

/// One counter, live against predicted (predicted scaled to the live stored pages).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ZswapField {
    pub field: String,
    pub live: Option<u64>,
    pub predicted: Option<u64>,
}

/// `now.zswap`: the live zswap beside zmem's prediction, with the observed rates.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ZswapNow {
    pub enabled: bool,
    /// The four module parameters as the kernel runs them.
    #[serde(flatten)]
    pub module: ZswapParams,
    pub params: BTreeMap<String, String>,
    /// debugfs counters (pool_total_size, stored_pages, written_back_pages, reject_*,
    /// pool_limit_hit, ...); absent when debugfs is not readable (`debugfs_note`).
    pub debugfs: Option<BTreeMap<String, u64>>,
    pub debugfs_note: Option<String>,
    pub meminfo_zswap_bytes: Option<u64>,
    pub meminfo_zswapped_bytes: Option<u64>,
    /// zswpin, zswpout, zswpwb, pswpin, pswpout (pages since boot).
    pub vmstat: BTreeMap<String, u64>,
    /// Memory cgroups' zswap/zswapped and memory.zswap.max/.writeback.
    pub cgroups: Vec<zmem_kernel::zswap_state::ZswapCgroup>,
    /// Pages zswap holds now: debugfs stored_pages, else meminfo Zswapped / page size.
    pub stored_pages: Option<u64>,
    /// Live original bytes over pool bytes.
    pub live_ratio: Option<f64>,
    /// zmem's prediction for the live compressor on the measured pages.
    pub prediction: Option<ZswapPrediction>,
    /// Predicted ratio (stored bytes over pool bytes).
    pub predicted_ratio: Option<f64>,
    /// Live against predicted, the prediction scaled to the live stored pages.
    pub fields: Vec<ZswapField>,
    /// Live pool_total_size less the predicted one: partly filled zspages and fragmentation
    /// of the live pool (and other pages' difference from the measured ones).
    pub pool_difference_bytes: Option<i64>,
    /// Rates over the --observe window (pages per second), when observed.
    pub rates: Option<ZswapRates>,
    pub observed_secs: f64,
    pub notes: Vec<String>,
}

/// vm.swappiness, vm.page-cluster and the swap device behind zswap, for the decision
/// ([`stack`]); render says why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StackAdvice {
    pub swappiness_now: Option<u32>,
    pub swappiness: u32,
    pub page_cluster_now: Option<u32>,
    pub page_cluster: u32,
    /// The decision runs zswap (chosen, or kept).
    pub zswap: bool,
    /// Most swap-ins are served from compressed memory (zram, or zswap hits at least half).
    pub from_memory: bool,
    /// Fraction of the replay's swap-ins served from compressed memory (1 for zram).
    pub hit_fraction: f64,
    /// Pages the kernel read ahead since boot (`swap_ra`), and the fraction used
    /// (`swap_ra_hit / swap_ra`) where enough were read ahead to judge.
    pub read_ahead_pages: Option<u64>,
    pub read_ahead_used: Option<f64>,
    pub swap_ins_per_sec: f64,
    /// The device zswap's misses read.
    pub device: String,
    /// Bytes of swap device zswap needs behind it: each stored page keeps its swap slot, so
    /// `pages` of `page_size`.
    pub swap_device_bytes: u64,
    pub pages: u64,
    pub page_size: u64,
    /// Active disk swap now.
    pub disk_swap_bytes: u64,
    /// Pages zswap stores now (enabled only).
    pub zswap_stored_pages: Option<u64>,
}

/// Everything zswap in one report besides its candidates (JSON: `zswap`; also `now.zswap`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ZswapAdvice {
    pub now: Option<ZswapNow>,
    pub stack: StackAdvice,
    /// The live zswap as read (parameters to restore, swap areas).
    pub live: ZswapLive,
}

/// What the front door read of the live zswap for a run: the state before the observation
/// window, the state after it (none without a window), and the window's length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ZswapInput {
    pub live: ZswapLive,
    pub after: Option<ZswapState>,
    pub secs: f64,
    /// Each measured page's weight where the pages are a capture of processes: its process's
    /// pages in swap at the window's end per page of it measured ([`swap_weights`]), so the
    /// Now's prediction is for the pages in swap. None: every page weighs the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights: Option<Vec<f64>>,
}

/// What the lab's one measuring phase replayed for zswap: the grid (and the sweep's variants
/// that ran) and the zram references, one per algorithm of `ref_algos`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ZswapMeasured {
    pub replayed: Vec<Replayed>,
    pub refs: Vec<SwapRow>,
    pub ref_algos: Vec<String>,
    /// `pool_scale` the replays ran with ([`replay_percent`]).
    pub scale: f64,
}

impl ZswapMeasured {
    /// The zram reference of `algo`, else the first (the current configuration's).
    fn reference(&self, algo: &str) -> Option<&SwapRow> {
        self.ref_algos
            .iter()
            .position(|a| a == algo)
            .and_then(|i| self.refs.get(i))
            .or(self.refs.first())
    }
}

/// zswap's Now and candidates for a run, projected on what the measuring phase replayed,
/// beside the zram candidates (`zram_algo`: the reference zram configuration's algorithm).
#[allow(clippy::too_many_arguments)]
pub fn candidates(
    input: &ZswapInput,
    facts: &PageFacts,
    measured: &ZswapMeasured,
    zram_candidates: &[Candidate],
    zram_algo: &str,
    rates: &Rates,
    budgets: &Budgets,
    kernel_work: SwapOverhead,
) -> Result<(Option<ZswapNow>, Vec<Candidate>), LabError> {
    let (live, ps) = (&input.live, facts.page_size);
    let weights = input.weights.as_deref();
    let now = live.present.then(|| now(live, input.after.as_ref(), input.secs, facts, weights));
    let Some(zram_ref) = measured.reference(zram_algo) else {
        return Err(LabError::Setup("no zram replay beside zswap's".into()));
    };
    // In front of the disk swap there is, else the swap file the apply script makes.
    let behind = live
        .swaps
        .iter()
        .find(|s| s.kind != "zram")
        .map_or(crate::decision::SWAP_FILE, |s| s.filename.as_str());
    let cands = project(
        &measured.replayed,
        behind,
        zram_ref,
        zram_candidates,
        now.as_ref(),
        (rates, kernel_work),
        budgets,
        ps,
        measured.scale,
    );
    Ok((now, cands))
}

#[cfg(test)]
mod tests;

//! zswap's half of the advice: its "Now" (the live state beside zmem's prediction for the same
//! compressor and pages), zswap candidates on the cost model zram's are judged with, one
//! zram-or-zswap verdict for the machine, and the rest of the swap stack (vm.swappiness,
//! vm.page-cluster, the swap device behind zswap).
//!
//! **Now.** The live state is `zmem_kernel::zswap_state` (module parameters, debugfs counters,
//! meminfo, vmstat, memory cgroups). The pages zswap stores cannot be read without faulting
//! them in, so the prediction is made from the pages the lab measured (the processes' captured
//! pages, or whatever the source was): each non-zero page stored into zmem's zswap with the live
//! compressor, scaled to the live `stored_pages` (a ratio estimator, as the zram "Now").
//! Zero-filled pages are left out: since 6.12 the swap core keeps them in its zeromap and never
//! offers them to zswap (`page_io.c: swap_writeout` -> `is_folio_zero_filled`).
//!
//! **Candidates.** Each configuration (compressor the kernel offers x max_pool_percent x
//! shrinker_enabled, at the live accept_threshold_percent; and, where that replay's pool hit its
//! limit, at each other [`ACCEPT_THRESHOLDS`] value: below the limit the threshold never acts,
//! since zswap_store only consults it once `pool_limit_hit` has latched) is replayed on the lab's trace with
//! RAM for a quarter of the pages, in front of the swap device the lab measured or profiled,
//! beside one zram replay of the current zram configuration on the same trace and RAM:
//! - pool: the current zram candidate's projected pool x (zswap replay's peak pool / zram
//!   replay's peak pool): a ratio on identical traffic, so the sample's bias cancels as it does
//!   for zram's candidates; memory saved against now is now's bytes less that pool;
//! - CPU seconds per second: the replay's CPU per swap operation x the swap rates;
//! - swap-in p50/p99: end to end, misses read from the device included;
//! - device writes per second: pages written to the device per swap-out x swap-outs/s x page
//!   size (flash wear); swap-in microseconds per second: swap-ins/s x the mean of the hit and
//!   miss p50s weighted by their counts.
//!
//! **Verdict** ([`verdict`]): zswap when its best configuration within the budgets (CPU and
//! added p99 swap-in latency, as zram's rule) saves more memory than zram's recommendation;
//! otherwise zram (also when zswap is absent, or no zswap configuration fits the budgets).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use zmem_kernel::zswap_state::{ZswapRates, ZswapState};
use zmem_sim::replay::{Access, ReplayConfig, SwapKind};
use zmem_sim::swap_device::SwapDevice;

use crate::cost::{self, Budgets, Candidate};
use crate::now::Rates;
use crate::{LabError, NoProgress, Progress, SwapRow};
use zmem_pool::zsmalloc::class::ClassTable;

/// zswap's max_pool_percent values tried (the kernel default is 20).
pub const MAX_POOL_PERCENTS: [u32; 3] = [10, 20, 30];
/// accept_threshold_percent values tried besides the live one, for configurations whose pool
/// hit its limit: 100 accepts again as soon as the pool is under the limit (no hysteresis),
/// 70 waits until it has shrunk by 30 % (fewer limit hits, more pages rejected to the device).
pub const ACCEPT_THRESHOLDS: [u32; 2] = [70, 100];
/// The kernel's default accept_threshold_percent (left out of the candidates' names).
const DEFAULT_ACCEPT: u32 = 90;
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

/// zmem's prediction of zswap's pool for the measured pages with one compressor.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ZswapPrediction {
    pub compressor: String,
    /// Pages measured, and those among them zswap would be offered (not zero-filled).
    pub pages: u64,
    pub offered_pages: u64,
    /// Of those, stored (compressed, or as-is) and rejected.
    pub stored_pages: u64,
    pub rejected_pages: u64,
    /// Sum of the stored objects' lengths (what memory.stat `zswap` charges).
    pub compressed_bytes: u64,
    /// zsmalloc's pages for them (debugfs `pool_total_size`), in zswap's 32 allocator pools.
    pub pool_total_size: u64,
    /// Where the pages came from, and that the live pool's pages were not read.
    pub note: String,
    /// The stored objects per zsmalloc size class (what the pool is computed from at any
    /// scale, [`zswap_pool_bytes`]).
    #[serde(skip)]
    pub class_counts: Vec<u64>,
}

/// zsmalloc's size classes as zswap's pools use them (zswap's chain size).
fn zswap_classes(ps: usize) -> Result<ClassTable, LabError> {
    ClassTable::new(ps, zmem_zswap::ZswapConfig::default().chain_size)
        .map_err(|e| LabError::Setup(format!("size classes: {e}")))
}

/// The pool zswap needs for `counts[k]` objects of each size class `k`, written one after
/// another and spread evenly over its [`zmem_zswap::NR_ZPOOLS`] allocator pools: per pool and
/// class `ceil(objects / objs_per_zspage)` zspages of `pages_per_zspage` pages. Each pool has
/// its own partly filled zspage per class, which a single packing does not: 16,574 objects of
/// class 352 take 192 zspages so, 179 in one pool (the kernel: 196; the live test).
pub fn zswap_pool_bytes(classes: &ClassTable, counts: &[u64], ps: usize) -> u64 {
    let pools = zmem_zswap::NR_ZPOOLS as u64;
    let pages: u64 = counts
        .iter()
        .zip(classes.classes())
        .map(|(&k, c)| {
            let (per, extra) = (k / pools, k % pools);
            let objs = c.objs_per_zspage as u64;
            let zspages = extra * (per + 1).div_ceil(objs) + (pools - extra) * per.div_ceil(objs);
            zspages * c.pages_per_zspage as u64
        })
        .sum();
    pages * ps as u64
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
    pub compressor: String,
    pub max_pool_percent: u32,
    pub accept_threshold_percent: u32,
    pub shrinker_enabled: bool,
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

/// One zswap configuration projected onto the machine (JSON `candidates[]` with kind zswap).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ZswapCandidate {
    /// Always `zswap`.
    pub kind: String,
    pub name: String,
    pub compressor: String,
    pub max_pool_percent: u32,
    pub accept_threshold_percent: u32,
    pub shrinker_enabled: bool,
    /// Whether this kernel can run it (its compressor offered to zswap).
    pub available: bool,
    pub unavailable_reason: Option<String>,
    /// The configuration zswap runs now (enabled, same parameters).
    pub is_current: bool,
    pub verified: bool,
    pub pool_bytes: u64,
    pub memory_saved_bytes_vs_now: i64,
    pub cpu_secs_per_sec: f64,
    /// Less the zram replay of the current zram configuration on the same trace.
    pub added_cpu_secs_per_sec: f64,
    /// Every swap-in, end to end (misses read from the device included).
    pub load_p50_ns: u64,
    pub load_p99_ns: u64,
    pub added_load_p99_ns: i64,
    /// Fraction of the replay's swap-ins served from the pool.
    pub hit_fraction: f64,
    /// The max_pool_percent the replay ran with: the same share of the pages measured as
    /// max_pool_percent of this machine's RAM is of the pages projected ([`replay_percent`]).
    pub replay_max_pool_percent: u32,
    /// Bytes per second written to the swap device at the swap rates (flash wear).
    pub device_write_bytes_per_sec: f64,
    /// Microseconds per second spent in swap-ins at the swap rates.
    pub swap_in_us_per_sec: f64,
    pub within_budgets: bool,
    pub over_budget: Vec<String>,
}

/// The zram side of the verdict, replayed on the same trace.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ZramSide {
    pub name: String,
    pub memory_saved_bytes_vs_now: i64,
    pub cpu_secs_per_sec: f64,
    pub load_p99_ns: u64,
    pub swap_in_us_per_sec: f64,
}

/// The machine's zram-or-zswap verdict.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Verdict {
    /// `zram` or `zswap`.
    pub choice: String,
    /// The configuration chosen (a zram candidate's or a zswap candidate's name).
    pub config: String,
    /// Why, in the user's units.
    pub reason: String,
    pub zram: Option<ZramSide>,
    /// The best zswap candidate within the budgets, if any.
    pub zswap: Option<String>,
}

/// vm.swappiness, vm.page-cluster and the swap device behind zswap.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StackAdvice {
    pub swappiness_now: Option<u32>,
    pub swappiness: u32,
    pub swappiness_reason: String,
    pub page_cluster_now: Option<u32>,
    pub page_cluster: u32,
    pub page_cluster_reason: String,
    /// Bytes of swap device zswap needs behind it (each stored page keeps its swap slot).
    pub swap_device_bytes: u64,
    pub swap_device_reason: String,
    /// What each active swap area holds, in words (zram and disk swap together, zswap's slots).
    pub holds: Vec<String>,
}

/// Everything zswap in one report (JSON: `zswap`; also `now.zswap`, `candidates[]` of kind
/// zswap and `verdict`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ZswapAdvice {
    pub now: Option<ZswapNow>,
    pub candidates: Vec<ZswapCandidate>,
    pub verdict: Verdict,
    pub stack: StackAdvice,
    /// The live zswap as read (parameters to restore, swap areas).
    pub live: ZswapLive,
}

/// zswap's live state with its debugfs counters: where debugfs is not mounted, zswap is built
/// and this process is root, debugfs is mounted for the read and unmounted again (what was
/// mounted stays as it was; `notes` say so). Otherwise a plain read, debugfs or not.
pub fn read_state() -> ZswapState {
    const DEBUGFS: &str = "/sys/kernel/debug";
    let mounted = || {
        std::fs::read_to_string("/proc/self/mounts")
            .map(|m| zmem_kernel::zswap_state::debugfs_mounted(&m, DEBUGFS))
            .unwrap_or(true)
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root || mounted() || !std::path::Path::new("/sys/module/zswap/parameters").exists() {
        return zmem_kernel::zswap_state::read();
    }
    let mut state = zmem_kernel::zswap_state::read_opts(true);
    if mounted() {
        let undone =
            std::process::Command::new("umount").arg(DEBUGFS).status().is_ok_and(|s| s.success());
        state.notes.push(if undone {
            "debugfs was mounted for this read and unmounted again".into()
        } else {
            "debugfs was mounted for this read; unmounting it failed".into()
        });
    }
    state
}

/// Reads zswap's live configuration and the swap areas (never fails: what cannot be read is a
/// note in the state); with `mount_debugfs`, the state through [`read_state`].
pub fn read_live(mount_debugfs: bool) -> ZswapLive {
    let caps = zmem_kernel::caps::read();
    let state = if mount_debugfs { read_state() } else { zmem_kernel::zswap_state::read() };
    let swaps = zmem_kernel::stat::swaps()
        .map(|v| {
            v.into_iter()
                .map(|a| SwapAreaNow {
                    kind: if a.zram_id().is_some() { "zram".into() } else { a.kind.clone() },
                    filename: a.filename,
                    size_bytes: a.size_kib * 1024,
                    used_bytes: a.used_kib * 1024,
                    priority: a.priority,
                })
                .collect()
        })
        .unwrap_or_default();
    let sysctl = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/vm/{name}")).ok()?.trim().parse().ok()
    };
    let mem_total_bytes = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        let kib = t.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
        kib.trim().trim_end_matches("kB").trim().parse::<u64>().ok().map(|k| k * 1024)
    });
    ZswapLive {
        mem_total_bytes,
        present: caps.zswap_present,
        offered: caps.zswap_compressors,
        state,
        swaps,
        swappiness: sysctl("swappiness"),
        page_cluster: sysctl("page-cluster"),
    }
}

/// zmem's zswap pool for `pages` (whole pages of `ps`) with `compressor`: every non-zero page
/// stored once into a pool with no limit.
pub fn predict(pages: &[u8], ps: usize, compressor: &str) -> Result<ZswapPrediction, LabError> {
    let n = (pages.len() / ps) as u64;
    let cfg = ReplayConfig {
        ram_pages: n.max(1) * 4,
        max_pool_percent: 100,
        accept_threshold_percent: 100,
        swap: SwapKind::Zswap,
        algo: compressor.into(),
        page_size: ps,
        // The objects' lengths are what counts here; the pool is computed from them.
        zswap_zpools: 1,
        ..ReplayConfig::default()
    };
    let z = zmem_sim::replay::build_zswap(&cfg, n.max(1))
        .map_err(|e| LabError::Setup(format!("zswap with {compressor}: {e}")))?;
    let classes = zswap_classes(ps)?;
    let mut class_counts = vec![0u64; classes.classes().len()];
    let (mut offered, mut rejected, mut compressed) = (0u64, 0u64, 0u64);
    for (i, page) in pages.chunks_exact(ps).enumerate() {
        if page.iter().all(|&b| b == 0) {
            continue;
        }
        offered += 1;
        match z
            .store(i as u64, page)
            .map_err(|e| LabError::Setup(format!("zswap store with {compressor}: {e}")))?
        {
            zmem_zswap::StoreOutcome::Stored { length } => {
                compressed += length as u64;
                class_counts[classes.slot_for_request(length)] += 1;
            }
            zmem_zswap::StoreOutcome::Rejected(_) => rejected += 1,
        }
    }
    let s = z.stats();
    Ok(ZswapPrediction {
        compressor: compressor.into(),
        pages: n,
        offered_pages: offered,
        stored_pages: s.stored_pages,
        rejected_pages: rejected,
        compressed_bytes: compressed,
        pool_total_size: zswap_pool_bytes(&classes, &class_counts, ps),
        class_counts,
        note: "predicted from the pages the lab measured: the pages zswap stores cannot be read \
               without faulting them in"
            .into(),
    })
}

/// `now.zswap` from the live state, the prediction for its compressor on the measured pages,
/// and the rates between two snapshots (`after` taken `secs` after `live.state`).
pub fn now(
    live: &ZswapLive,
    after: Option<&ZswapState>,
    secs: f64,
    pages: &[u8],
    ps: usize,
) -> ZswapNow {
    let st = after.unwrap_or(&live.state);
    let mut notes = st.notes.clone();
    let prediction = if st.compressor.is_empty() {
        None
    } else {
        match predict(pages, ps, &st.compressor) {
            Ok(p) => Some(p),
            Err(e) => {
                notes.push(format!("no prediction with {}: {e}", st.compressor));
                None
            }
        }
    };
    let page = st.page_size.max(1);
    let dbg = |k: &str| st.debugfs.as_ref().and_then(|d| d.get(k).copied());
    let stored_pages = dbg("stored_pages").or(st.meminfo_zswapped_bytes.map(|b| b / page));
    let predicted_ratio = prediction.as_ref().and_then(|p| {
        (p.pool_total_size > 0)
            .then(|| (p.stored_pages * ps as u64) as f64 / p.pool_total_size as f64)
    });
    // The prediction scaled to the pages zswap holds now.
    let scale = |v: u64| -> Option<u64> {
        let p = prediction.as_ref()?;
        let live = stored_pages?;
        (p.stored_pages > 0)
            .then(|| (v as f64 * live as f64 / p.stored_pages as f64).round() as u64)
    };
    let fields = vec![
        ZswapField { field: "stored_pages".into(), live: stored_pages, predicted: stored_pages },
        ZswapField {
            field: "pool_total_size".into(),
            live: dbg("pool_total_size").or(st.meminfo_zswap_bytes),
            // Each class's objects scaled to the live stored pages, then packed as zswap's 32
            // pools pack them: their partly filled zspages do not scale with the pages.
            predicted: prediction.as_ref().and_then(|p| {
                let live = stored_pages?;
                let classes = zswap_classes(ps).ok()?;
                let f = live as f64 / p.stored_pages.max(1) as f64;
                let counts: Vec<u64> =
                    p.class_counts.iter().map(|&k| (k as f64 * f).round() as u64).collect();
                (p.stored_pages > 0).then(|| zswap_pool_bytes(&classes, &counts, ps))
            }),
        },
        ZswapField {
            field: "compressed_bytes".into(),
            live: top_level_zswap_bytes(&st.cgroups),
            predicted: prediction.as_ref().and_then(|p| scale(p.compressed_bytes)),
        },
    ];
    let pool_difference_bytes = match (fields[1].live, fields[1].predicted) {
        (Some(l), Some(p)) => Some(l as i64 - p as i64),
        _ => None,
    };
    let rates = after.map(|a| zmem_kernel::zswap_state::rates(&live.state, a, secs));
    ZswapNow {
        enabled: st.enabled,
        compressor: st.compressor.clone(),
        max_pool_percent: st.max_pool_percent,
        accept_threshold_percent: st.accept_threshold_percent,
        shrinker_enabled: st.shrinker_enabled,
        params: st.params.clone(),
        debugfs: st.debugfs.clone(),
        debugfs_note: st.debugfs_note.clone(),
        meminfo_zswap_bytes: st.meminfo_zswap_bytes,
        meminfo_zswapped_bytes: st.meminfo_zswapped_bytes,
        vmstat: st.vmstat.clone(),
        cgroups: st.cgroups.clone(),
        stored_pages,
        live_ratio: st.ratio(),
        prediction,
        predicted_ratio,
        fields,
        pool_difference_bytes,
        rates,
        observed_secs: if after.is_some() { secs } else { 0.0 },
        notes,
    }
}

/// memory.stat `zswap` summed over the cgroups no other listed cgroup contains (a parent's
/// figure already counts its children's); `None` without cgroup v2 accounting.
fn top_level_zswap_bytes(cgroups: &[zmem_kernel::zswap_state::ZswapCgroup]) -> Option<u64> {
    let top = cgroups.iter().filter(|c| {
        !cgroups.iter().any(|d| d.path != c.path && c.path.starts_with(&format!("{}/", d.path)))
    });
    top.filter_map(|c| c.zswap_bytes).fold(None, |acc, b| Some(acc.unwrap_or(0) + b))
}

/// The swap rates with zswap's own traffic: with zswap enabled a page it stores or loads is in
/// zswpout/zswpin and not in pswpout/pswpin (`page_io.c: swap_writeout` returns after a
/// successful `zswap_store`), so the swap traffic is their sum.
pub fn with_zswap_traffic(rates: Rates, z: &ZswapRates) -> Rates {
    if rates.source != "observed" {
        return rates;
    }
    let (zin, zout) = (z.zswpin_per_sec.unwrap_or(0.0), z.zswpout_per_sec.unwrap_or(0.0));
    if zin == 0.0 && zout == 0.0 {
        return rates;
    }
    Rates {
        swap_ins_per_sec: rates.swap_ins_per_sec + zin,
        swap_outs_per_sec: rates.swap_outs_per_sec + zout,
        note: format!("{}; zswap zswpin {zin:.1}/s, zswpout {zout:.1}/s added", rates.note),
        ..rates
    }
}

/// One zswap configuration to replay.
#[derive(Debug, Clone, PartialEq)]
pub struct ZswapConfigChoice {
    pub compressor: String,
    pub max_pool_percent: u32,
    pub accept_threshold_percent: u32,
    pub shrinker_enabled: bool,
    pub available: bool,
    pub unavailable_reason: Option<String>,
}

impl ZswapConfigChoice {
    pub fn name(&self) -> String {
        let accept = if self.accept_threshold_percent == DEFAULT_ACCEPT {
            String::new()
        } else {
            format!(" accept_threshold_percent={}", self.accept_threshold_percent)
        };
        format!(
            "zswap {} max_pool_percent={} shrinker={}{accept}",
            self.compressor,
            self.max_pool_percent,
            if self.shrinker_enabled { "on" } else { "off" }
        )
    }

    /// The same configuration at accept_threshold_percent `accept`.
    fn at_accept(&self, accept: u32) -> Self {
        Self { accept_threshold_percent: accept, ..self.clone() }
    }
}

/// The grid: every compressor zmem implements, available when the kernel offers it to zswap
/// (only the available ones are tried at every max_pool_percent and shrinker setting; an
/// unavailable one is listed once, at the kernel defaults, not replayed).
pub fn grid(present: bool, offered: &[String], accept: u32) -> Vec<ZswapConfigChoice> {
    let accept = if accept == 0 { 90 } else { accept };
    let mut out = Vec::new();
    for algo in ZMEM_COMPRESSORS {
        let available = present && offered.iter().any(|o| o == algo);
        if available {
            for mpp in MAX_POOL_PERCENTS {
                for shrinker in [false, true] {
                    out.push(ZswapConfigChoice {
                        compressor: algo.into(),
                        max_pool_percent: mpp,
                        accept_threshold_percent: accept,
                        shrinker_enabled: shrinker,
                        available: true,
                        unavailable_reason: None,
                    });
                }
            }
        } else {
            let reason = if !present {
                "this kernel has no zswap (no /sys/module/zswap: CONFIG_ZSWAP off)".to_string()
            } else {
                format!(
                    "this kernel's crypto API does not offer {algo} to zswap (offers: {})",
                    if offered.is_empty() { "none found".to_string() } else { offered.join(", ") }
                )
            };
            out.push(ZswapConfigChoice {
                compressor: algo.into(),
                max_pool_percent: 20,
                accept_threshold_percent: accept,
                shrinker_enabled: false,
                available: false,
                unavailable_reason: Some(reason),
            });
        }
    }
    out
}

/// What the replays give, per configuration (kept for the projection).
#[derive(Debug, Clone)]
pub struct Replayed {
    pub config: ZswapConfigChoice,
    pub row: Option<SwapRow>,
}

/// The max_pool_percent of the replay's RAM that holds the same share of the pages as
/// `percent` of the machine's RAM holds of the pages it projects to: `pool_scale` is (the
/// machine's RAM pages / projected pages) x (pages measured / the replay's RAM pages). Within
/// 1..=[`MAX_REPLAY_PERCENT`]. The pool is memory besides the replay's resident pages (as
/// max_pool_percent may exceed 100 in the kernel: a plain uint).
pub fn replay_percent(percent: u32, pool_scale: f64) -> u32 {
    if !(pool_scale.is_finite() && pool_scale > 0.0) {
        return percent;
    }
    (percent as f64 * pool_scale).round().clamp(1.0, MAX_REPLAY_PERCENT as f64) as u32
}

/// A pool of `RAM_FRACTION` x 100 % of the replay's RAM holds every page measured even
/// uncompressed: a larger limit changes nothing.
pub const MAX_REPLAY_PERCENT: u32 = RAM_FRACTION as u32 * 100;

/// `pool_scale` of [`replay_percent`] for `n` pages measured standing for `projected` pages on
/// a machine of `mem_total_bytes`; 1 (the replay's RAM taken as the machine's) when unknown.
pub fn pool_scale(mem_total_bytes: Option<u64>, ps: usize, n: u64, projected: u64) -> f64 {
    let ram = (n / RAM_FRACTION).max(1) as f64;
    match mem_total_bytes {
        Some(m) if m > 0 && projected > 0 => {
            m as f64 / ps as f64 / projected as f64 * n as f64 / ram
        }
        _ => 1.0,
    }
}

/// One replay of `accesses` with RAM for a quarter of the pages.
#[allow(clippy::too_many_arguments)]
fn replay(
    pages: &[u8],
    ps: usize,
    accesses: &[Access],
    device: &SwapDevice,
    kind: SwapKind,
    c: &ZswapConfigChoice,
    scale: f64,
) -> Result<SwapRow, LabError> {
    let n = (pages.len() / ps) as u64;
    let cfg = ReplayConfig {
        ram_pages: (n / RAM_FRACTION).max(1),
        swap: kind,
        algo: c.compressor.clone(),
        page_size: ps,
        device: device.clone(),
        max_pool_percent: replay_percent(c.max_pool_percent, scale),
        accept_threshold_percent: c.accept_threshold_percent,
        shrinker: c.shrinker_enabled,
        // A scaled-down machine: the 32 allocator pools' partly filled zspages would be most
        // of a sample's pool and are a sliver of a machine's (`ZswapConfig::nr_zpools`).
        zswap_zpools: 1,
        ..ReplayConfig::default()
    };
    crate::measure::swap_row_with(pages, ps, accesses, &cfg, &NoProgress)
}

/// Replays `jobs` on `threads` threads, in order.
#[allow(clippy::too_many_arguments)]
fn replay_all(
    pages: &[u8],
    ps: usize,
    accesses: &[Access],
    device: &SwapDevice,
    jobs: &[(SwapKind, &ZswapConfigChoice)],
    scale: f64,
    threads: usize,
    progress: &dyn Progress,
) -> Vec<Result<SwapRow, LabError>> {
    if jobs.is_empty() {
        return Vec::new();
    }
    progress.start("zswap candidates", jobs.len() as u64);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: std::sync::Mutex<Vec<Option<Result<SwapRow, LabError>>>> =
        std::sync::Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1).min(jobs.len()) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&(kind, c)) = jobs.get(i) else { break };
                    let r = replay(pages, ps, accesses, device, kind, c, scale);
                    if let Ok(mut v) = results.lock() {
                        v[i] = Some(r);
                    }
                    progress.advance(1);
                }
            });
        }
    });
    progress.finish();
    match results.into_inner() {
        Ok(v) => v
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(LabError::Setup("a zswap replay did not run".into()))))
            .collect(),
        Err(_) => {
            jobs.iter().map(|_| Err(LabError::Setup("a zswap replay panicked".into()))).collect()
        }
    }
}

/// Replays every available configuration and the zram references (`zram_algos`: the current
/// zram configuration's algorithm, then the recommended one's) on `threads` threads.
#[allow(clippy::too_many_arguments)]
pub fn measure(
    pages: &[u8],
    ps: usize,
    accesses: &[Access],
    device: &SwapDevice,
    grid: &[ZswapConfigChoice],
    zram_algos: &[&str],
    scale: f64,
    threads: usize,
    progress: &dyn Progress,
) -> Result<(Vec<Replayed>, Vec<SwapRow>), LabError> {
    let zram_choices: Vec<ZswapConfigChoice> = zram_algos
        .iter()
        .map(|a| ZswapConfigChoice {
            compressor: (*a).into(),
            max_pool_percent: 20,
            accept_threshold_percent: 90,
            shrinker_enabled: false,
            available: true,
            unavailable_reason: None,
        })
        .collect();
    // The zram references first; then the available zswap configurations.
    let jobs: Vec<(SwapKind, &ZswapConfigChoice)> = zram_choices
        .iter()
        .map(|c| (SwapKind::Zram, c))
        .chain(grid.iter().filter(|c| c.available).map(|c| (SwapKind::Zswap, c)))
        .collect();
    let run = |jobs: &[(SwapKind, &ZswapConfigChoice)]| {
        replay_all(pages, ps, accesses, device, jobs, scale, threads, progress)
    };
    let mut rows = run(&jobs).into_iter();
    let zram = rows.by_ref().take(zram_algos.len()).collect::<Result<Vec<_>, _>>()?;
    if zram.len() != zram_algos.len() || zram.is_empty() {
        return Err(LabError::Setup("no zram replay".into()));
    }
    let mut measured = Vec::new();
    for c in grid {
        let row = if c.available {
            Some(
                rows.next()
                    .transpose()?
                    .ok_or_else(|| LabError::Setup("missing zswap replay".into()))?,
            )
        } else {
            None
        };
        measured.push(Replayed { config: c.clone(), row });
    }
    // Where the pool hit its limit, the accept threshold decides when zswap stores again.
    let sweep: Vec<ZswapConfigChoice> = measured
        .iter()
        .filter(|m| m.row.as_ref().is_some_and(|r| r.pool_limit_hit > 0))
        .flat_map(|m| {
            ACCEPT_THRESHOLDS
                .iter()
                .filter(|&&a| a != m.config.accept_threshold_percent)
                .map(|&a| m.config.at_accept(a))
        })
        .collect();
    let jobs: Vec<(SwapKind, &ZswapConfigChoice)> =
        sweep.iter().map(|c| (SwapKind::Zswap, c)).collect();
    for (c, row) in sweep.iter().zip(run(&jobs)) {
        measured.push(Replayed { config: c.clone(), row: Some(row?) });
    }
    Ok((measured, zram))
}

/// Swap-in microseconds per second at `rates` for a replay row.
fn swap_in_us_per_sec(r: &SwapRow, rates: &Rates) -> f64 {
    let ins = (r.hit_swap_ins + r.device_swap_ins).max(1) as f64;
    let mean_ns = (r.hit_swap_ins as f64 * r.hit_p50_ns as f64
        + r.device_swap_ins as f64 * r.device_p50_ns as f64)
        / ins;
    let mean_ns =
        if r.hit_swap_ins + r.device_swap_ins == 0 { r.load_p50_ns as f64 } else { mean_ns };
    rates.swap_ins_per_sec * mean_ns / 1e3
}

/// CPU seconds per second at `rates` for a replay row: its CPU per swap operation, and the
/// kernel's own reclaim and fault work ([`cost::SWAP_OVERHEAD`]), which a swap-out to zswap, to
/// zram or to the device behind zswap costs alike.
fn cpu_secs_per_sec(r: &SwapRow, rates: &Rates) -> f64 {
    let ops = (r.swap_ins + r.swap_outs) as f64;
    if ops == 0.0 {
        return 0.0;
    }
    let traffic = cost::Traffic {
        swap_ins_per_sec: rates.swap_ins_per_sec,
        swap_outs_per_sec: rates.swap_outs_per_sec,
    };
    r.cpu_seconds / ops * (rates.swap_ins_per_sec + rates.swap_outs_per_sec)
        + cost::SWAP_OVERHEAD.cpu_secs_per_sec(traffic)
}

/// Projects the replays onto the machine (module doc), beside the zram candidates.
#[allow(clippy::too_many_arguments)]
pub fn project(
    measured: &[Replayed],
    zram_ref: &SwapRow,
    zram_candidates: &[Candidate],
    live: Option<&ZswapNow>,
    rates: &Rates,
    budgets: &Budgets,
    ps: usize,
    scale: f64,
) -> Vec<ZswapCandidate> {
    let current = zram_candidates.iter().find(|c| c.is_current).or(zram_candidates.first());
    let (cur_pool, now_bytes) = current
        .map_or((0, 0), |c| (c.pool_bytes, c.pool_bytes as i64 + c.memory_saved_bytes_vs_now));
    let zram_cpu = cpu_secs_per_sec(zram_ref, rates);
    measured
        .iter()
        .map(|m| {
            let c = &m.config;
            let is_current = live.is_some_and(|l| {
                l.enabled
                    && l.compressor == c.compressor
                    && l.max_pool_percent == c.max_pool_percent
                    && l.accept_threshold_percent == c.accept_threshold_percent
                    && l.shrinker_enabled == c.shrinker_enabled
            });
            let mut cand = ZswapCandidate {
                kind: "zswap".into(),
                name: c.name(),
                compressor: c.compressor.clone(),
                max_pool_percent: c.max_pool_percent,
                accept_threshold_percent: c.accept_threshold_percent,
                shrinker_enabled: c.shrinker_enabled,
                available: c.available,
                unavailable_reason: c.unavailable_reason.clone(),
                is_current,
                verified: false,
                pool_bytes: 0,
                memory_saved_bytes_vs_now: 0,
                cpu_secs_per_sec: 0.0,
                added_cpu_secs_per_sec: 0.0,
                load_p50_ns: 0,
                load_p99_ns: 0,
                added_load_p99_ns: 0,
                hit_fraction: 0.0,
                replay_max_pool_percent: replay_percent(c.max_pool_percent, scale),
                device_write_bytes_per_sec: 0.0,
                swap_in_us_per_sec: 0.0,
                within_budgets: false,
                over_budget: Vec::new(),
            };
            let Some(r) = &m.row else {
                cand.over_budget.push("not available on this kernel".into());
                return cand;
            };
            let pool = if zram_ref.max_pool_bytes > 0 {
                (cur_pool as f64 * r.max_pool_bytes as f64 / zram_ref.max_pool_bytes as f64) as u64
            } else {
                r.max_pool_bytes
            };
            cand.verified = r.verified;
            cand.pool_bytes = pool;
            cand.memory_saved_bytes_vs_now = now_bytes - pool as i64;
            cand.cpu_secs_per_sec = cpu_secs_per_sec(r, rates);
            cand.added_cpu_secs_per_sec = cand.cpu_secs_per_sec - zram_cpu;
            cand.load_p50_ns = r.load_p50_ns;
            cand.load_p99_ns = r.load_p99_ns;
            cand.added_load_p99_ns = r.load_p99_ns as i64 - zram_ref.load_p99_ns as i64;
            cand.hit_fraction =
                if r.swap_ins == 0 { 1.0 } else { r.hit_swap_ins as f64 / r.swap_ins as f64 };
            cand.device_write_bytes_per_sec = if r.swap_outs == 0 {
                0.0
            } else {
                r.disk_writes as f64 / r.swap_outs as f64 * rates.swap_outs_per_sec * ps as f64
            };
            cand.swap_in_us_per_sec = swap_in_us_per_sec(r, rates);
            if !r.verified {
                cand.over_budget.push("did not read every page back".into());
            }
            let cpu_budget = budgets.cpu_percent_of_core / 100.0;
            if cand.cpu_secs_per_sec > cpu_budget {
                cand.over_budget.push(format!(
                    "{:.3}% of a core > {:.3}% budget",
                    cand.cpu_secs_per_sec * 100.0,
                    budgets.cpu_percent_of_core
                ));
            }
            if cand.added_load_p99_ns as f64 > budgets.added_load_p99_us * 1e3 {
                cand.over_budget.push(format!(
                    "adds {:.1} us to the p99 swap-in > {:.1} us budget",
                    cand.added_load_p99_ns as f64 / 1e3,
                    budgets.added_load_p99_us
                ));
            }
            cand.within_budgets = cand.over_budget.is_empty();
            cand
        })
        .collect()
}

/// Bytes in the user's units (GiB above 1 GiB, else MiB).
pub fn human_bytes(b: f64) -> String {
    let a = b.abs();
    if a >= (1u64 << 30) as f64 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    }
}

/// The machine's verdict (module doc): `zram_choice` is zram's recommended candidate, replayed
/// as `zram_row` on the same trace.
pub fn verdict(
    present: bool,
    candidates: &[ZswapCandidate],
    zram_choice: Option<&Candidate>,
    zram_row: &SwapRow,
    rates: &Rates,
    device: &SwapDevice,
) -> Verdict {
    let zram = zram_choice.map(|c| ZramSide {
        name: c.name.clone(),
        memory_saved_bytes_vs_now: c.memory_saved_bytes_vs_now,
        cpu_secs_per_sec: c.cpu_secs_per_sec,
        load_p99_ns: zram_row.load_p99_ns,
        swap_in_us_per_sec: swap_in_us_per_sec(zram_row, rates),
    });
    let zram_name =
        zram.as_ref().map_or_else(|| "zram".to_string(), |z| format!("zram {}", z.name));
    let best = candidates.iter().filter(|c| c.available && c.within_budgets).max_by(|a, b| {
        a.memory_saved_bytes_vs_now.cmp(&b.memory_saved_bytes_vs_now).then_with(|| {
            if a.compressor != b.compressor {
                b.cpu_secs_per_sec.total_cmp(&a.cpu_secs_per_sec)
            } else {
                // The same compressor does the same work: a CPU difference between its
                // configurations is the machine's noise, so the tie goes to the smaller pool
                // limit (less RAM promised) and no shrinker, the same on every run.
                b.max_pool_percent
                    .cmp(&a.max_pool_percent)
                    .then(b.shrinker_enabled.cmp(&a.shrinker_enabled))
            }
        })
    });
    let zram_saved = zram.as_ref().map_or(0, |z| z.memory_saved_bytes_vs_now);
    let (choice, config, reason): (&str, String, String) = match best {
        _ if !present => (
            "zram",
            zram_name.clone(),
            "this kernel has no zswap (CONFIG_ZSWAP off): zram is the compressed swap it has"
                .into(),
        ),
        None => {
            let why = candidates
                .iter()
                .find(|c| c.available)
                .map_or("no compressor zmem implements is offered to zswap".to_string(), |c| {
                    format!("e.g. {}: {}", c.name, c.over_budget.join("; "))
                });
            ("zram", zram_name.clone(), format!("no zswap configuration fits the budgets ({why})"))
        }
        Some(b) => {
            let zus = zram.as_ref().map_or(0.0, |z| z.swap_in_us_per_sec);
            let times = if zus > 0.0 { b.swap_in_us_per_sec / zus } else { 0.0 };
            let faults = if zus > 0.0 {
                format!(
                    "{times:.1}x the swap-in microseconds per second ({:.0} vs {:.0} us/s)",
                    b.swap_in_us_per_sec, zus
                )
            } else {
                format!("{:.0} swap-in microseconds per second", b.swap_in_us_per_sec)
            };
            let diff = b.memory_saved_bytes_vs_now - zram_saved;
            let more = if diff >= 0 { "more" } else { "less" };
            let line = format!(
                "{} in front of your {}: {} {more} saved than {zram_name}, {faults}, {:.1} MB/s of device writes",
                b.name,
                device.name,
                human_bytes(diff.abs() as f64),
                b.device_write_bytes_per_sec / 1e6
            );
            if diff > 0 {
                ("zswap", b.name.clone(), line)
            } else {
                (
                    "zram",
                    zram_name.clone(),
                    format!(
                        "{zram_name} saves at least as much with no device writes; the best zswap: {line}"
                    ),
                )
            }
        }
    };
    Verdict { choice: choice.into(), config, reason, zram, zswap: best.map(|b| b.name.clone()) }
}

/// The kernel's swap read-ahead since boot (`/proc/vmstat`): pages read ahead and, of those,
/// pages then asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadAhead {
    pub pages: u64,
    pub hits: u64,
}

impl ReadAhead {
    /// Fewer pages read ahead than this say nothing about the workload.
    pub const MIN_PAGES: u64 = 1000;

    pub fn of(vmstat: &BTreeMap<String, u64>) -> Option<Self> {
        Some(Self { pages: *vmstat.get("swap_ra")?, hits: *vmstat.get("swap_ra_hit")? })
    }

    /// The fraction of pages read ahead that were used, where enough were read ahead.
    pub fn used(&self) -> Option<f64> {
        (self.pages >= Self::MIN_PAGES)
            .then(|| self.hits.min(self.pages) as f64 / self.pages as f64)
    }
}

/// vm.page-cluster, from where swap-ins are served (`from_memory`: zram, or zswap hits; `hit`
/// their fraction in the replay) and how much of the kernel's read-ahead was used
/// (`swap_ra_hit / swap_ra` since boot): from memory, a page read ahead costs a decompression,
/// worth it only when the pages are mostly used (3 in 4: 1, two pages a fault; else 0); from a
/// device it saves a device read, and is cut only when it is mostly wasted (1 in 4 used: 1;
/// else the kernel's 3). Without enough read-ahead to judge, 0 from memory and 3 from a device.
fn page_cluster(
    from_memory: bool,
    hit: f64,
    ra: Option<ReadAhead>,
    rates: &Rates,
    device: &str,
) -> (u32, String) {
    let used = ra.and_then(|r| r.used());
    let measured = match (ra, used) {
        (Some(r), Some(u)) => format!(
            "; the kernel read {} pages ahead since boot and {:.0}% of them were used \
             (/proc/vmstat swap_ra_hit / swap_ra)",
            r.pages,
            u * 100.0
        ),
        (Some(r), None) => format!(
            "; the kernel read only {} pages ahead since boot, too few to judge its read-ahead",
            r.pages
        ),
        (None, _) => "; /proc/vmstat has no swap_ra counters".to_string(),
    };
    let rate = if rates.swap_ins_per_sec > 0.0 {
        format!(", {:.0} swap-ins/s at the rates used", rates.swap_ins_per_sec)
    } else {
        String::new()
    };
    if from_memory {
        match used {
            Some(u) if u >= 0.75 => (
                1,
                format!(
                    "most swap-ins are served from compressed memory ({:.0}% in the replay{rate}), \
                     and read-ahead pages are mostly used: one neighbour per fault keeps most of \
                     that and decompresses fewer unused pages{measured}",
                    hit * 100.0
                ),
            ),
            _ => (
                0,
                format!(
                    "most swap-ins are served from compressed memory ({:.0}% in the replay{rate}), \
                     where reading 2^page-cluster neighbours ahead only decompresses pages not \
                     asked for{measured}",
                    hit * 100.0
                ),
            ),
        }
    } else {
        match used {
            Some(u) if u < 0.25 => (
                1,
                format!(
                    "most swap-ins miss zswap and read the {device} ({:.0}% hits), but the \
                     kernel's read-ahead is mostly wasted: two pages a fault instead of \
                     eight{measured}",
                    hit * 100.0
                ),
            ),
            _ => (
                3,
                format!(
                    "most swap-ins miss zswap and read the {device} ({:.0}% hits): the kernel's \
                     read-ahead of 8 pages amortises the device reads{measured}",
                    hit * 100.0
                ),
            ),
        }
    }
}

/// vm.swappiness, vm.page-cluster and the swap device size for the verdict.
pub fn stack(
    live: &ZswapLive,
    verdict: &Verdict,
    candidates: &[ZswapCandidate],
    rates: &Rates,
    projected_pages: u64,
    ps: usize,
    device: &SwapDevice,
) -> StackAdvice {
    let chosen = candidates.iter().find(|c| c.name == verdict.config);
    let hit = chosen.map_or(1.0, |c| c.hit_fraction);
    let from_memory = verdict.choice == "zram" || hit >= 0.5;
    let (page_cluster, page_cluster_reason) =
        page_cluster(from_memory, hit, ReadAhead::of(&live.state.vmstat), rates, &device.name);
    let (swappiness, swappiness_reason) = if verdict.choice == "zram" {
        (
            150,
            "a swap-in from zram costs microseconds of CPU, less than re-reading a file page from \
             the device: favour swapping anonymous memory over dropping page cache"
                .to_string(),
        )
    } else {
        (
            100,
            format!(
                "zswap's misses read the same {} file pages come from: weigh anonymous and file \
                 memory equally",
                device.name
            ),
        )
    };
    let disk: u64 = live.swaps.iter().filter(|s| s.kind != "zram").map(|s| s.size_bytes).sum();
    let need = projected_pages * ps as u64;
    let swap_device_reason = format!(
        "every page zswap stores keeps its slot on the swap device: {} pages of {} B need {} \
         (active disk swap now: {})",
        projected_pages,
        ps,
        human_bytes(need as f64),
        human_bytes(disk as f64)
    );
    let stored = live
        .state
        .debugfs
        .as_ref()
        .and_then(|d| d.get("stored_pages").copied())
        .or(live.state.meminfo_zswapped_bytes.map(|b| b / live.state.page_size.max(1)));
    let holds = live
        .swaps
        .iter()
        .map(|s| {
            let base = format!(
                "{} ({}, priority {}): {} used of {}",
                s.filename,
                s.kind,
                s.priority,
                human_bytes(s.used_bytes as f64),
                human_bytes(s.size_bytes as f64)
            );
            match (s.kind.as_str(), stored) {
                ("zram", _) => format!("{base}, compressed in RAM"),
                (_, Some(n)) if live.state.enabled => format!(
                    "{base}, of which slots of zswap's {n} stored pages ({}; the rest written to the device)",
                    human_bytes((n * live.state.page_size) as f64)
                ),
                _ => format!("{base}, on the device"),
            }
        })
        .collect();
    StackAdvice {
        swappiness_now: live.swappiness,
        swappiness,
        swappiness_reason,
        page_cluster_now: live.page_cluster,
        page_cluster,
        page_cluster_reason,
        swap_device_bytes: need,
        swap_device_reason,
        holds,
    }
}

/// What the front door read of the live zswap for a run: the state before the observation
/// window, the state after it (none without a window), and the window's length.
#[derive(Debug, Clone)]
pub struct ZswapInput {
    pub live: ZswapLive,
    pub after: Option<ZswapState>,
    pub secs: f64,
}

/// The whole zswap advice for a run: Now, candidates, verdict and the rest of the stack.
/// `zram_algos`: the current zram configuration's algorithm and the recommended one's.
#[allow(clippy::too_many_arguments)]
pub fn advise(
    input: &ZswapInput,
    pages: &[u8],
    ps: usize,
    accesses: &[Access],
    device: &SwapDevice,
    zram_candidates: &[Candidate],
    zram_algos: (&str, &str),
    recommended: &str,
    rates: &Rates,
    budgets: &Budgets,
    projected_pages: u64,
    threads: usize,
    progress: &dyn Progress,
) -> Result<ZswapAdvice, LabError> {
    let live = &input.live;
    let now = live.present.then(|| now(live, input.after.as_ref(), input.secs, pages, ps));
    let grid = grid(live.present, &live.offered, live.state.accept_threshold_percent);
    let n = (pages.len() / ps) as u64;
    let scale = pool_scale(live.mem_total_bytes, ps, n, projected_pages.max(n));
    let algos = [zram_algos.0, zram_algos.1];
    let (measured, zram_rows) =
        measure(pages, ps, accesses, device, &grid, &algos, scale, threads, progress)?;
    let candidates =
        project(&measured, &zram_rows[0], zram_candidates, now.as_ref(), rates, budgets, ps, scale);
    let zram_choice = zram_candidates.iter().find(|c| c.name == recommended);
    let verdict = verdict(live.present, &candidates, zram_choice, &zram_rows[1], rates, device);
    let stack = stack(live, &verdict, &candidates, rates, projected_pages, ps, device);
    Ok(ZswapAdvice { now, candidates, verdict, stack, live: live.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_page(seed: u8) -> Vec<u8> {
        let mut p = Vec::with_capacity(4096);
        let mut i = 0u32;
        while p.len() < 4096 {
            p.extend_from_slice(
                format!("page {seed} line {i}: some text zswap compresses. ").as_bytes(),
            );
            i += 1;
        }
        p.truncate(4096);
        p
    }

    pub(crate) fn fake_live(present: bool, offered: &[&str], enabled: bool) -> ZswapLive {
        let mut debugfs = BTreeMap::new();
        debugfs.insert("stored_pages".to_string(), 1000);
        debugfs.insert("pool_total_size".to_string(), 1000 * 1024);
        debugfs.insert("written_back_pages".to_string(), 3);
        debugfs.insert("pool_limit_hit".to_string(), 0);
        ZswapLive {
            present,
            offered: offered.iter().map(|s| s.to_string()).collect(),
            state: ZswapState {
                params: BTreeMap::new(),
                enabled,
                compressor: if present { "lzo".into() } else { String::new() },
                max_pool_percent: 20,
                accept_threshold_percent: 90,
                shrinker_enabled: false,
                debugfs: Some(debugfs),
                debugfs_note: None,
                meminfo_zswap_bytes: Some(1000 * 1024),
                meminfo_zswapped_bytes: Some(1000 * 4096),
                vmstat: BTreeMap::new(),
                cgroups: Vec::new(),
                page_size: 4096,
                notes: Vec::new(),
            },
            swaps: vec![SwapAreaNow {
                filename: "/swapfile".into(),
                kind: "file".into(),
                size_bytes: 1 << 30,
                used_bytes: 4000 * 1024,
                priority: -2,
            }],
            swappiness: Some(60),
            page_cluster: Some(3),
            mem_total_bytes: None,
        }
    }

    #[test]
    fn the_prediction_leaves_zero_pages_out_and_sums_the_stored_lengths() {
        let page = text_page(1);
        let mut pages = Vec::new();
        for i in 0..40 {
            if i % 4 == 0 {
                pages.extend_from_slice(&[0u8; 4096]);
            } else {
                pages.extend_from_slice(&page);
            }
        }
        let p = predict(&pages, 4096, "lzo").unwrap();
        assert_eq!((p.pages, p.offered_pages, p.stored_pages, p.rejected_pages), (40, 30, 30, 0));
        // Every stored page is the same page: one length, 30 times.
        let one = predict(&page, 4096, "lzo").unwrap();
        assert_eq!(one.stored_pages, 1);
        assert!(one.compressed_bytes > 0 && one.compressed_bytes < 4096);
        assert_eq!(p.compressed_bytes, 30 * one.compressed_bytes);
        assert!(p.pool_total_size >= p.compressed_bytes);
    }

    #[test]
    fn now_scales_the_prediction_to_the_live_pages() {
        let page = text_page(2);
        let pages: Vec<u8> = page.iter().copied().cycle().take(100 * 4096).collect();
        let live = fake_live(true, &["lzo", "lzo-rle"], true);
        let n = now(&live, None, 0.0, &pages, 4096);
        let p = n.prediction.clone().unwrap();
        let pool = n.fields.iter().find(|f| f.field == "pool_total_size").unwrap();
        assert_eq!(pool.live, Some(1000 * 1024));
        // 100 copies of one object stand for the live 1000: 1000 objects of its class in
        // zswap's 32 pools, not the sample's pool times ten (its partly filled zspages, one
        // per pool, do not scale with the pages).
        let classes = zswap_classes(4096).unwrap();
        let mut counts = vec![0u64; classes.classes().len()];
        counts[classes.slot_for_request((p.compressed_bytes / 100) as usize)] = 1000;
        assert_eq!(pool.predicted, Some(zswap_pool_bytes(&classes, &counts, 4096)));
        assert!(pool.predicted.unwrap() < 10 * p.pool_total_size);
        assert_eq!(n.stored_pages, Some(1000));
        assert_eq!(n.live_ratio, Some(4.0));
        assert!(n.rates.is_none() && n.observed_secs == 0.0);
    }

    #[test]
    fn the_grid_tries_only_what_the_kernel_offers() {
        let g = grid(true, &["lzo".into(), "lzo-rle".into(), "deflate".into()], 90);
        let avail: Vec<_> = g.iter().filter(|c| c.available).collect();
        assert_eq!(avail.len(), 3 * MAX_POOL_PERCENTS.len() * 2);
        assert!(
            avail.iter().all(|c| ["lzo", "lzo-rle", "deflate"].contains(&c.compressor.as_str()))
        );
        let un: Vec<_> = g.iter().filter(|c| !c.available).collect();
        assert_eq!(
            un.iter().map(|c| c.compressor.as_str()).collect::<Vec<_>>(),
            ["lz4", "lz4hc", "zstd"]
        );
        assert!(
            un[0].unavailable_reason.as_deref().unwrap().contains("offers: lzo, lzo-rle, deflate")
        );
        let none = grid(false, &[], 0);
        assert!(none.iter().all(|c| !c.available && c.accept_threshold_percent == 90));
    }

    #[test]
    fn the_pool_limit_is_scaled_to_the_pages_measured() {
        // 2048 pages measured standing for themselves on a 24 GiB machine: 20 % of its RAM
        // holds them all many times over, so the replay's pool holds every page (400 % of its
        // RAM, a quarter of the pages).
        let big = pool_scale(Some(24 << 30), 4096, 2048, 2048);
        assert_eq!(replay_percent(20, big), 400);
        // 2048 pages standing for 4 GiB of pages (1 Mi pages) on an 8 GiB machine: 20 % of
        // the RAM is 40 % of the pages' bytes; the replay's RAM is a quarter of the pages, so
        // that is 160 % of it; 5 % of the RAM is 40 % of the replay's.
        let s = pool_scale(Some(8 << 30), 4096, 2048, 1 << 20);
        assert!((s - 8.0).abs() < 1e-9, "{s}");
        assert_eq!((replay_percent(20, s), replay_percent(5, s)), (160, 40));
        // Unknown RAM: the replay's RAM is the machine's.
        assert_eq!(replay_percent(20, pool_scale(None, 4096, 2048, 2048)), 20);
    }

    #[test]
    fn observed_rates_gain_zswaps_own_traffic() {
        let r = Rates {
            swap_ins_per_sec: 1.0,
            swap_outs_per_sec: 2.0,
            observed_secs: 10.0,
            source: "observed".into(),
            note: "x".into(),
        };
        let z = ZswapRates {
            zswpin_per_sec: Some(10.0),
            zswpout_per_sec: Some(20.0),
            zswpwb_per_sec: None,
            pswpin_per_sec: None,
            pswpout_per_sec: None,
        };
        let w = with_zswap_traffic(r.clone(), &z);
        assert_eq!((w.swap_ins_per_sec, w.swap_outs_per_sec), (11.0, 22.0));
        let replay = Rates { source: "replay".into(), ..r };
        assert_eq!(with_zswap_traffic(replay.clone(), &z), replay);
    }

    fn cand(name: &str, saved: i64, within: bool) -> ZswapCandidate {
        ZswapCandidate {
            kind: "zswap".into(),
            name: name.into(),
            compressor: "lzo".into(),
            max_pool_percent: 20,
            accept_threshold_percent: 90,
            shrinker_enabled: false,
            available: true,
            unavailable_reason: None,
            is_current: false,
            verified: true,
            pool_bytes: 0,
            memory_saved_bytes_vs_now: saved,
            cpu_secs_per_sec: 0.001,
            added_cpu_secs_per_sec: 0.0,
            load_p50_ns: 3000,
            load_p99_ns: 90_000,
            added_load_p99_ns: 0,
            hit_fraction: 0.5,
            replay_max_pool_percent: 20,
            device_write_bytes_per_sec: 12e6,
            swap_in_us_per_sec: 300.0,
            within_budgets: within,
            over_budget: if within { vec![] } else { vec!["adds 80.0 us".into()] },
        }
    }

    fn zram_cand(saved: i64) -> Candidate {
        let set = zmem_pages::builtin::default_set_with(4096).unwrap();
        let pages = &set.bytes()[..64 * 4096];
        let source = crate::Source {
            kind: "builtin".into(),
            detail: String::new(),
            pages: 64,
            page_size: 4096,
            fallback_reason: None,
        };
        let opts = crate::LabOptions {
            min_time: std::time::Duration::ZERO,
            policies: crate::candidates("lzo-rle")[..1].to_vec(),
            threads: 1,
            ..crate::LabOptions::default()
        };
        let r = crate::run(pages, source, &opts, &NoProgress).unwrap();
        Candidate { memory_saved_bytes_vs_now: saved, ..r.candidates[0].clone() }
    }

    fn row() -> SwapRow {
        SwapRow {
            swap: "zram".into(),
            ram_pages: 10,
            pages: 40,
            accesses: 100,
            swap_outs: 30,
            swap_ins: 20,
            max_pool_bytes: 1,
            disk_reads: 0,
            disk_writes: 0,
            store_p99_ns: 0,
            load_p50_ns: 1000,
            load_p99_ns: 2000,
            hit_swap_ins: 20,
            hit_p50_ns: 1000,
            hit_p99_ns: 2000,
            device_swap_ins: 0,
            device_p50_ns: 0,
            device_p99_ns: 0,
            device_seconds: 0.0,
            cpu_seconds: 0.0,
            pool_limit_hit: 0,
            trace_secs: 1.0,
            verified: true,
        }
    }

    #[test]
    fn the_verdict_takes_zswap_only_when_it_saves_more_within_the_budgets() {
        let rates = Rates {
            swap_ins_per_sec: 100.0,
            swap_outs_per_sec: 100.0,
            observed_secs: 0.0,
            source: "replay".into(),
            note: String::new(),
        };
        let dev = SwapDevice::default();
        let z = zram_cand(1 << 30);
        // zswap saves 0.5 GiB more, within budgets: zswap, with the units in the reason.
        let cs =
            [cand("zswap lzo a", (1 << 30) + (1 << 29), true), cand("zswap lzo b", 5 << 30, false)];
        let v = verdict(true, &cs, Some(&z), &row(), &rates, &dev);
        assert_eq!((v.choice.as_str(), v.config.as_str()), ("zswap", "zswap lzo a"));
        assert!(v.reason.contains("512.0 MiB more saved than zram"), "{}", v.reason);
        assert!(
            v.reason.contains("3.0x the swap-in microseconds") && v.reason.contains("12.0 MB/s"),
            "{}",
            v.reason
        );
        // Saving less: zram.
        let cs = [cand("zswap lzo a", 1 << 29, true)];
        let v = verdict(true, &cs, Some(&z), &row(), &rates, &dev);
        assert_eq!(v.choice, "zram");
        assert!(v.reason.contains("512.0 MiB less saved"), "{}", v.reason);
        // Nothing within budgets, or no zswap: zram, saying why.
        let cs = [cand("zswap lzo b", 5 << 30, false)];
        let v = verdict(true, &cs, Some(&z), &row(), &rates, &dev);
        assert_eq!(v.choice, "zram");
        assert!(v.reason.contains("no zswap configuration fits the budgets"), "{}", v.reason);
        let v = verdict(false, &[], Some(&z), &row(), &rates, &dev);
        assert!(v.choice == "zram" && v.reason.contains("no zswap"), "{}", v.reason);
    }

    /// The live test's pages by hand: 16,574 objects of 343 bytes (class 352: 93 to a zspage
    /// of 8 pages) over 32 pools of 517 or 518 take 6 zspages each, 192 in all (1,536 pages;
    /// the kernel had 196); one pool would take 179.
    #[test]
    fn page_cluster_follows_the_measured_read_ahead() {
        let rates = Rates {
            swap_ins_per_sec: 0.0,
            swap_outs_per_sec: 0.0,
            observed_secs: 0.0,
            source: "replay".into(),
            note: String::new(),
        };
        let ra = |pages, hits| Some(ReadAhead { pages, hits });
        let pc = |mem, r| page_cluster(mem, 0.9, r, &rates, "nvme").0;
        // From memory: 0 unless read-ahead pages are mostly used.
        assert_eq!(pc(true, None), 0);
        assert_eq!(pc(true, ra(333_274, 239_957)), 0, "72 % used: not enough");
        assert_eq!(pc(true, ra(10_000, 8_000)), 1);
        assert_eq!(pc(true, ra(500, 500)), 0, "too few to judge");
        // From a device: the kernel's 3 unless read-ahead is mostly wasted.
        assert_eq!(pc(false, None), 3);
        assert_eq!(pc(false, ra(10_000, 8_000)), 3);
        assert_eq!(pc(false, ra(10_000, 1_000)), 1);
        assert_eq!(pc(false, ra(999, 0)), 3);
        let (_, why) = page_cluster(true, 0.9, ra(333_274, 239_957), &rates, "nvme");
        assert!(
            why.contains("333274 pages ahead") && why.contains("72% of them were used"),
            "{why}"
        );
        let (_, why) = page_cluster(false, 0.1, None, &rates, "nvme");
        assert!(why.contains("no swap_ra"), "{why}");
    }

    #[test]
    fn zswaps_pool_is_32_packings() {
        let classes = zswap_classes(4096).unwrap();
        let k = classes.slot_for_request(343);
        let c = &classes.classes()[k];
        assert_eq!((c.size, c.objs_per_zspage, c.pages_per_zspage), (352, 93, 8));
        let mut counts = vec![0u64; classes.classes().len()];
        counts[k] = 16_574;
        assert_eq!(zswap_pool_bytes(&classes, &counts, 4096), 192 * 8 * 4096);
        // A few objects: each pool that holds one has a zspage of its own.
        counts[k] = 40;
        assert_eq!(zswap_pool_bytes(&classes, &counts, 4096), 32 * 8 * 4096);
        counts[k] = 0;
        assert_eq!(zswap_pool_bytes(&classes, &counts, 4096), 0);
    }

    #[test]
    fn the_accept_threshold_is_swept_only_where_the_pool_hit_its_limit() {
        let set = zmem_pages::builtin::default_set_with(4096).unwrap();
        let pages = &set.bytes()[..256 * 4096];
        let accesses = crate::evidence::trace_for(256).unwrap();
        let choice = |mpp| ZswapConfigChoice {
            compressor: "lzo".into(),
            max_pool_percent: mpp,
            accept_threshold_percent: 90,
            shrinker_enabled: false,
            available: true,
            unavailable_reason: None,
        };
        // 25 % of the replay's RAM (16 pages) fills soon.
        let grid = [choice(25)];
        let dev = SwapDevice::default();
        let run = |pages: &[u8]| {
            measure(pages, 4096, &accesses, &dev, &grid, &["lzo-rle"], 1.0, 2, &NoProgress)
                .unwrap()
                .0
                .iter()
                .map(|r| {
                    (r.config.accept_threshold_percent, r.row.as_ref().unwrap().pool_limit_hit)
                })
                .collect::<Vec<_>>()
        };
        let full = run(pages);
        let accepts: Vec<u32> = full.iter().map(|x| x.0).collect();
        assert_eq!(accepts, [90, 70, 100], "{full:?}");
        assert!(full.iter().all(|x| x.1 > 0), "{full:?}");
        // The threshold changes what zswap does: at 70 % a full pool refuses stores without
        // trying until it has shrunk, at 100 % it tries (and counts a hit) at every store.
        assert!(full[1].1 < full[2].1, "{full:?}");
        // Zero-filled pages never reach zswap (the swap core's zeromap): the pool stays empty,
        // never at its limit, and there is nothing to sweep.
        let zeros = vec![0u8; 256 * 4096];
        assert_eq!(run(&zeros), [(90, 0)]);
        assert_eq!(
            grid[0].at_accept(70).name(),
            "zswap lzo max_pool_percent=25 shrinker=off accept_threshold_percent=70"
        );
    }

    #[test]
    fn advise_replays_every_available_configuration() {
        let set = zmem_pages::builtin::default_set_with(4096).unwrap();
        let pages = &set.bytes()[..256 * 4096];
        let source = crate::Source {
            kind: "builtin".into(),
            detail: String::new(),
            pages: 256,
            page_size: 4096,
            fallback_reason: None,
        };
        let opts = crate::LabOptions {
            min_time: std::time::Duration::ZERO,
            policies: crate::candidates("lzo-rle")[..2].to_vec(),
            threads: 2,
            zswap: Some(ZswapInput {
                live: fake_live(true, &["lzo", "lzo-rle"], true),
                after: None,
                secs: 0.0,
            }),
            ..crate::LabOptions::default()
        };
        let r = crate::run(pages, source, &opts, &NoProgress).unwrap();
        let a = r.zswap.expect("zswap advice");
        let avail: Vec<_> = a.candidates.iter().filter(|c| c.available).collect();
        // The grid at the live threshold, and the sweep's variants where a pool hit its limit.
        let at_live = avail.iter().filter(|c| c.accept_threshold_percent == 90).count();
        assert_eq!(at_live, 2 * 3 * 2);
        assert!(avail.iter().all(|c| [70, 90, 100].contains(&c.accept_threshold_percent)));
        assert!(avail.iter().all(|c| c.verified && c.pool_bytes > 0 && c.kind == "zswap"));
        // One of them is what the live zswap runs (lzo, 20 %, shrinker off).
        let cur: Vec<_> = a.candidates.iter().filter(|c| c.is_current).collect();
        assert_eq!(cur.len(), 1);
        assert_eq!(cur[0].name, "zswap lzo max_pool_percent=20 shrinker=off");
        assert!(a.candidates.iter().any(|c| c.compressor == "zstd" && !c.available));
        assert!(["zram", "zswap"].contains(&a.verdict.choice.as_str()));
        assert!(!a.verdict.reason.is_empty());
        assert!(a.now.unwrap().prediction.is_some());
        assert!(a.stack.swap_device_bytes >= 256 * 4096);
        assert!(a.stack.holds[0].contains("/swapfile"));
    }
}

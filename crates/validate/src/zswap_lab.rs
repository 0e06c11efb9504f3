//! zswap configurations in `zmem validate lab`: for each configuration asked for, the kernel's
//! runs ([`crate::zswap_kernel`]: the same player, pages and trace under the same memory limit,
//! zswap set to the configuration in front of a swap area of ours) beside the lab's prediction
//! for it (zmem's replay with [`SwapKind::Zswap`], as `zmem lab`'s zswap candidates are
//! measured: `zmem_lab::zswap::measure`), and the zram-or-zswap verdict on both sides.
//!
//! The prediction's replay: the RAM the cgroup leaves the player's pages (as for zram), the
//! configuration's compressor, accept threshold and shrinker, the machine's readahead settings,
//! and a `max_pool_percent` of the replay's RAM that gives the pool limit the kernel has
//! (`zswap_max_pages()`: `max_pool_percent` of `totalram_pages()`, /proc/meminfo `MemTotal`).
//! Its CPU seconds are the lab's (`zmem_lab::zswap` candidates' cost): the compressor's CPU
//! per page measured on the pages, for each page stored, loaded or written back, plus the cost
//! model's kernel work per swap-out and swap-in (this machine's, [`zmem_lab::speed::kernel_speed`]). The
//! kernel's CPU seconds are the player's CPU in faulting accesses less a baseline run's (no
//! memory pressure), as for zram (`crate::lab`'s module doc). Its swap-in latencies are end to end, as
//! zram's prediction is (`cost::swap_in_end_to_end`: the fault, the load, and at the p99 the
//! reclaim a fault does at the cgroup's limit).
//!
//! **Served better** (the verdict check): of zram and zswap, the one whose compressed pages take
//! less RAM (the peak pool: the resident pages are the same under one limit, and zswap's pages
//! on disk take none), unless its swap-in wait is more than [`SWAP_IN_TOLERANCE`] above the
//! other's (then the one with the shorter wait); peak pools within [`POOL_TIE`] of each other at
//! comparable waits are a tie. The swap-in wait is the swap-ins times their p50 latency: a
//! zswap that writes everything to the disk (max_pool_percent=0) takes no pool, and pays for it
//! in its swap-ins' latency (34 us here against zram's 9 us). The lab's pick applies this to its
//! predictions for its smallest-pool zram configuration and its best zswap configuration (by
//! the same rule against that zram one, then the smaller pool; where zram beats them all, the
//! shortest wait), the kernel's to its own figures
//! for the same two configurations. They agree when they pick the same, or when either calls
//! it a tie. This is the validation's rule, not `zmem lab`'s verdict (which projects the sample
//! onto the machine's memory and weighs the budgets).

use std::process::Command;
use std::sync::atomic::AtomicBool;

use serde::Serialize;

use crate::check::{ConfigCheck, NotRun, RunLatency};
use crate::replay::{self as validate, ValidateConfig, relative_error, replay_ram_pages};
use crate::zswap_kernel::{self, ZswapKernelRun, ZswapRunConfig};
use zmem_kernel::KernelError;
use zmem_kernel::caps::KernelCaps;
use zmem_lab::ZswapParams;
use zmem_lab::cost::{self, Traffic};
use zmem_lab::{LabError, Progress};
use zmem_sim::replay::{self, Access, Readahead, ReplayConfig, SwapKind};

/// Swap-in waits within this (relative) of each other are comparable.
pub const SWAP_IN_TOLERANCE: f64 = 0.20;
/// Peak pools closer than this (relative) are a tie.
pub const POOL_TIE: f64 = 0.01;

/// One side's figures for a zswap configuration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ZswapFigures {
    /// Pages zswap holds after the last access (debugfs `stored_pages`).
    pub stored_pages: u64,
    /// zswap's pool after the last access, and its peak (debugfs `pool_total_size`).
    pub pool_total_size: u64,
    pub peak_pool_total_size: u64,
    /// Pages written back to the swap area (debugfs `written_back_pages`).
    pub written_back_pages: u64,
    /// /proc/vmstat events over the accesses.
    pub zswpin: u64,
    pub zswpout: u64,
    pub zswpwb: u64,
    /// Pages read from and written to the swap area.
    pub disk_reads: u64,
    pub disk_writes: u64,
    /// Faults that read their page from swap (zero pages included): the kernel's are the
    /// player's timed swap-ins.
    pub swap_ins: u64,
    /// Pages read ahead into the swap cache, and faults that found one (/proc/vmstat
    /// `swap_ra`, `swap_ra_hit`; system-wide on the kernel's side): how much of `zswpin` is
    /// readahead rather than faults.
    #[serde(default)]
    pub swap_ra: u64,
    #[serde(default)]
    pub swap_ra_hit: u64,
    pub cpu_seconds: f64,
    pub swap_in_p50_ns: u64,
    pub swap_in_p99_ns: u64,
    /// File faults of pages evicted before (`workingset_refault_file`): page cache only.
    #[serde(default)]
    pub file_refaults: u64,
}

/// The prediction's relative error on each figure, `(predicted - kernel) / kernel`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ZswapErrors {
    pub stored_pages: Option<f64>,
    pub pool_total_size: Option<f64>,
    pub peak_pool_total_size: Option<f64>,
    pub written_back_pages: Option<f64>,
    pub zswpin: Option<f64>,
    pub zswpout: Option<f64>,
    pub zswpwb: Option<f64>,
    pub disk_reads: Option<f64>,
    pub disk_writes: Option<f64>,
    pub swap_ins: Option<f64>,
    pub cpu_seconds: Option<f64>,
    pub swap_in_p50_ns: Option<f64>,
    pub swap_in_p99_ns: Option<f64>,
    pub file_refaults: Option<f64>,
}

impl ZswapErrors {
    pub fn between(p: &ZswapFigures, k: &ZswapFigures) -> Self {
        let cpu = if k.cpu_seconds == 0.0 {
            (p.cpu_seconds == 0.0).then_some(0.0)
        } else {
            Some((p.cpu_seconds - k.cpu_seconds) / k.cpu_seconds)
        };
        Self {
            stored_pages: relative_error(p.stored_pages, k.stored_pages),
            pool_total_size: relative_error(p.pool_total_size, k.pool_total_size),
            peak_pool_total_size: relative_error(p.peak_pool_total_size, k.peak_pool_total_size),
            written_back_pages: relative_error(p.written_back_pages, k.written_back_pages),
            zswpin: relative_error(p.zswpin, k.zswpin),
            zswpout: relative_error(p.zswpout, k.zswpout),
            zswpwb: relative_error(p.zswpwb, k.zswpwb),
            disk_reads: relative_error(p.disk_reads, k.disk_reads),
            disk_writes: relative_error(p.disk_writes, k.disk_writes),
            swap_ins: relative_error(p.swap_ins, k.swap_ins),
            cpu_seconds: cpu,
            swap_in_p50_ns: relative_error(p.swap_in_p50_ns, k.swap_in_p50_ns),
            swap_in_p99_ns: relative_error(p.swap_in_p99_ns, k.swap_in_p99_ns),
            file_refaults: relative_error(p.file_refaults, k.file_refaults),
        }
    }
}

/// One zswap configuration checked.
#[derive(Debug, Clone, Serialize)]
pub struct ZswapCheck {
    pub config: String,
    pub settings: ZswapParams,
    pub predicted: ZswapFigures,
    pub kernel: ZswapFigures,
    pub error: ZswapErrors,
    /// The replay's resident pages and the max_pool_percent of them it was given.
    pub replay_ram_pages: u64,
    pub replay_max_pool_percent: u32,
    /// The median run (by the player's swap-ins), every run's, and each run's CPU in faulting
    /// accesses less its baseline's.
    pub kernel_run: ZswapKernelRun,
    pub kernel_runs_swap_ins: Vec<u64>,
    pub kernel_runs_cpu_secs: Vec<f64>,
    /// Every run's `stored_pages` and `pool_total_size` at its end (in run order, as the two
    /// above): levels the kernel's reclaim sets, which vary from run to run at small sizes.
    pub kernel_runs_stored_pages: Vec<u64>,
    pub kernel_runs_pool_total_size: Vec<u64>,
    /// Every run's `zswpin`, `zswpout` and `swap_ra` (/proc/vmstat deltas, in run order): the
    /// kernel's cluster readahead (a rotational swap area) settles in a run either near no
    /// readahead or in a wide window that reads tens of thousands of pages ahead, and which
    /// one varies from run to run of one configuration (docs/BENCHMARKS.md, issue 43).
    #[serde(default)]
    pub kernel_runs_zswpin: Vec<u64>,
    #[serde(default)]
    pub kernel_runs_zswpout: Vec<u64>,
    #[serde(default)]
    pub kernel_runs_swap_ra: Vec<u64>,
    /// Each run's swap-in latency (the medians are `kernel.swap_in_p50_ns` and `_p99_ns`).
    pub kernel_runs_latency: Vec<RunLatency>,
    pub kernel_failures: Vec<String>,
    pub verified: bool,
}

/// Which of zram and zswap serves these pages better, by [`served_better`], on each side.
#[derive(Debug, Clone, Serialize)]
pub struct VerdictCheck {
    pub zram_config: String,
    pub zswap_config: String,
    /// `zram`, `zswap` or `tie`.
    pub lab_pick: String,
    pub kernel_served_better: String,
    pub agree: bool,
    /// The figures each side was judged by, zram then zswap.
    pub lab_figures: [Served; 2],
    pub kernel_figures: [Served; 2],
    pub rule: String,
}

/// The zswap part of `zmem validate lab`'s result.
#[derive(Debug, Clone, Serialize)]
pub struct ZswapValidation {
    pub configurations: Vec<ZswapCheck>,
    pub not_run: Vec<NotRun>,
    /// `None` where no zram or no zswap configuration ran.
    pub verdict: Option<VerdictCheck>,
    /// What each kernel figure counts (the player's own, or system-wide).
    pub scope: Vec<String>,
}

/// One side's figures the verdict check judges by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Served {
    pub peak_pool_bytes: u64,
    pub swap_ins: u64,
    pub swap_in_p50_ns: u64,
}

impl Served {
    /// The swap-in wait: swap-ins times their p50, in nanoseconds.
    pub fn wait_ns(&self) -> f64 {
        self.swap_ins as f64 * self.swap_in_p50_ns as f64
    }
}

/// `zram`, `zswap` or `tie` (module doc).
pub fn served_better(zram: Served, zswap: Served) -> &'static str {
    // A microsecond of slack: tiny waits are not compared by ratio.
    let longer = |a: f64, b: f64| a > b * (1.0 + SWAP_IN_TOLERANCE) + 1000.0;
    if longer(zswap.wait_ns(), zram.wait_ns()) {
        return "zram";
    }
    if longer(zram.wait_ns(), zswap.wait_ns()) {
        return "zswap";
    }
    let (a, b) = (zram.peak_pool_bytes as f64, zswap.peak_pool_bytes as f64);
    if (a - b).abs() <= POOL_TIE * a.max(b) {
        "tie"
    } else if a < b {
        "zram"
    } else {
        "zswap"
    }
}

/// `Ok` when the kernel can run `s`, else why not.
pub fn runnable(s: &ZswapParams, caps: &KernelCaps) -> Result<(), String> {
    if !caps.zswap_present {
        return Err("this kernel has no zswap (CONFIG_ZSWAP off)".into());
    }
    caps.zswap_can_use(&s.compressor).map_err(|e| e.to_string())
}

/// The machine's RAM in pages (`MemTotal`, what `totalram_pages()` is within reserved pages).
fn total_ram_pages(ps: usize) -> Result<u64, LabError> {
    let m = zmem_kernel::stat::meminfo().map_err(|e| LabError::Setup(e.to_string()))?;
    m.get("MemTotal")
        .map(|bytes| bytes / ps as u64)
        .ok_or_else(|| LabError::Setup("/proc/meminfo has no MemTotal".into()))
}

/// The replay's max_pool_percent of `ram_pages` that gives the kernel's pool limit
/// (`percent` of `total_pages`), rounded up; the kernel takes any uint.
pub fn replay_pool_percent(percent: u32, total_pages: u64, ram_pages: u64) -> u32 {
    let limit = total_pages as u128 * percent as u128;
    limit.div_ceil(ram_pages.max(1) as u128).min(u32::MAX as u128) as u32
}

/// What the zswap part needs from the run around it.
#[derive(Debug)]
pub struct Context<'a> {
    pub pages: &'a [u8],
    pub trace: &'a [Access],
    pub page_size: usize,
    pub ram_bytes: u64,
    pub base_ram: u64,
    pub touched: u64,
    pub kernel_runs: usize,
    pub flush_stats: bool,
    pub timeout: std::time::Duration,
    pub swap_dir: std::path::PathBuf,
    pub zram_algo: String,
    /// The file of the trace's file reads, if it has any.
    pub file: Option<std::sync::Arc<crate::page_cache::TraceFile>>,
}

fn median_index(v: &[u64]) -> usize {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by_key(|&i| (v[i], i));
    order.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0)
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
}

/// Checks every configuration of `settings` the kernel can run, then the verdict against the
/// zram configurations `zram` checked before.
#[allow(clippy::too_many_arguments)]
pub fn run(
    cx: &Context,
    settings: &[ZswapParams],
    caps: &KernelCaps,
    zram: &[ConfigCheck],
    player: &dyn Fn() -> Command,
    stop: &AtomicBool,
    progress: &dyn Progress,
) -> Result<ZswapValidation, LabError> {
    let (mut checks, mut not_run) = (Vec::new(), Vec::new());
    let params_dir = match zswap_kernel::params_dir() {
        Ok(d) => Some(d),
        Err(reason) => {
            not_run.extend(
                settings.iter().map(|s| NotRun { config: s.label(), reason: reason.clone() }),
            );
            None
        }
    };
    for s in settings.iter().filter(|_| params_dir.is_some()) {
        if let Err(reason) = runnable(s, caps) {
            not_run.push(NotRun { config: s.label(), reason });
            continue;
        }
        let dir = params_dir.clone().unwrap_or_default();
        // A configuration whose every kernel run the OOM killer ended is listed as not run,
        // with why; the others' checks, zram's among them, still come back.
        match check_one(cx, s, dir, player, stop, progress)? {
            Ok(c) => checks.push(c),
            Err(reason) => not_run.push(NotRun { config: s.label(), reason }),
        }
    }
    let verdict = verdict_check(zram, &checks);
    Ok(ZswapValidation {
        configurations: checks,
        not_run,
        verdict,
        scope: vec![
            "the player's own: swap_ins (its timed accesses to pages out of RAM), cpu_seconds, \
             swap-in p50/p99, kernel_run.cgroup_major_faults and cgroup_swap_pages"
                .into(),
            "system-wide (cgroup v1 memory.stat has no zswap counters; ours is the only swap \
             area): stored_pages, pool_total_size, written_back_pages, zswpin, zswpout, zswpwb \
             (debugfs and /proc/vmstat), disk_reads and disk_writes (our loop device: every \
             page any process swapped to it); kernel_run.foreign_pages_bound is how many of \
             the stored pages cannot be the player's"
                .into(),
        ],
    })
}

fn check_one(
    cx: &Context,
    s: &ZswapParams,
    params_dir: std::path::PathBuf,
    player: &dyn Fn() -> Command,
    stop: &AtomicBool,
    progress: &dyn Progress,
) -> Result<Result<ZswapCheck, String>, LabError> {
    let ps = cx.page_size;
    let zcfg = ZswapRunConfig {
        memory_limit: cx.ram_bytes,
        page_size: ps,
        timeout: cx.timeout,
        flush_stats: cx.flush_stats,
        settings: s.clone(),
        swap_dir: cx.swap_dir.clone(),
        params_dir,
        file: cx.file.clone(),
    };
    let base_cfg = ValidateConfig {
        ram_bytes: cx.base_ram,
        algorithm: cx.zram_algo.clone(),
        page_size: ps,
        timeout: cx.timeout,
        kernel_runs: 1,
        flush_stats: cx.flush_stats,
        flush_through_warm_up: false,
        file: cx.file.clone(),
    };
    let wanted = cx.kernel_runs.max(1);
    let (mut runs, mut cpus, mut failures) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..wanted {
        // A baseline without memory pressure right before each run (as for zram): its CPU in
        // faulting accesses is what the run's is net of.
        let (mut base, _) =
            validate::kernel_runs(cx.pages, cx.trace, &base_cfg, player, stop, progress)?;
        let base = base.remove(0);
        progress.start(&format!("{}: kernel run {} of {wanted}", s.label(), i + 1), 1);
        let r = zswap_kernel::run(cx.pages, cx.trace, &zcfg, player(), stop);
        progress.finish();
        match r {
            Ok(k) => {
                cpus.push(k.fault_cpu_secs - base.fault_cpu_secs);
                runs.push(k);
            }
            Err(KernelError::PlayerFailed(why)) => failures.push(why),
            Err(e) => return Err(e.into()),
        }
    }
    if runs.is_empty() {
        return Ok(Err(format!(
            "all {wanted} kernel runs failed; the first: {}",
            failures.first().map_or("", String::as_str)
        )));
    }
    let ins: Vec<u64> = runs.iter().map(|k| k.timed_swap_ins).collect();
    let stored: Vec<u64> = runs.iter().map(stored_pages).collect();
    let pools: Vec<u64> = runs.iter().map(|k| k.pool_total_size.unwrap_or(0)).collect();
    let vmstat = |key: &str| -> Vec<u64> {
        runs.iter().map(|k| k.vmstat_deltas.get(key).copied().unwrap_or(0)).collect()
    };
    let (zswpins, zswpouts, swap_ras) = (vmstat("zswpin"), vmstat("zswpout"), vmstat("swap_ra"));
    let overhead = runs.iter().map(|k| k.player_overhead_bytes).min().unwrap_or_default();
    let latencies: Vec<RunLatency> = runs
        .iter()
        .map(|k| RunLatency { p50_ns: k.swap_in_p50_ns, p99_ns: k.swap_in_p99_ns })
        .collect();
    let latency = RunLatency::median(&latencies);
    let k = runs.swap_remove(median_index(&ins));
    let kernel = ZswapFigures {
        stored_pages: stored_pages(&k),
        pool_total_size: k.pool_total_size.unwrap_or(0),
        peak_pool_total_size: k.peak_pool_total_size.unwrap_or(0),
        written_back_pages: k
            .debugfs_deltas
            .get("written_back_pages")
            .or(k.vmstat_deltas.get("zswpwb"))
            .copied()
            .unwrap_or(0),
        zswpin: k.vmstat_deltas.get("zswpin").copied().unwrap_or(0),
        swap_ra: k.vmstat_deltas.get("swap_ra").copied().unwrap_or(0),
        swap_ra_hit: k.vmstat_deltas.get("swap_ra_hit").copied().unwrap_or(0),
        zswpout: k.vmstat_deltas.get("zswpout").copied().unwrap_or(0),
        zswpwb: k.vmstat_deltas.get("zswpwb").copied().unwrap_or(0),
        disk_reads: k.disk_read_pages,
        disk_writes: k.disk_write_pages,
        swap_ins: k.timed_swap_ins,
        cpu_seconds: median(&cpus).max(0.0),
        swap_in_p50_ns: latency.p50_ns,
        swap_in_p99_ns: latency.p99_ns,
        file_refaults: k.file_refaults,
    };

    // The lab's side.
    let mapped = cx.touched + crate::replay::distinct_file_pages(cx.trace);
    let ram_pages = replay_ram_pages(cx.ram_bytes, overhead, mapped, ps);
    let mpp = replay_pool_percent(s.max_pool_percent, total_ram_pages(ps)?, ram_pages);
    // The kernel's runs read ahead by cluster, not by VMA, when the swap area is rotational:
    // swapon counts it in `nr_rotate_swap` (mm/swapfile.c) and `swap_use_vma_readahead()`
    // (mm/swap_state.c) is then false. The loop device over the swap file is rotational where
    // the file's disk is (drivers/block/loop.c `loop_update_limits()`).
    let rotational = std::path::Path::new(&k.swap_file)
        .parent()
        .and_then(zmem_kernel::stat::rotational)
        .unwrap_or(false);
    let (readahead, page_cluster) =
        readahead_mode(zmem_kernel::stat::swap_readahead().ok(), rotational);
    let (stats_flush, replayed) =
        crate::replay::as_the_kernel_flushed(cx.trace, (cx.flush_stats, false), k.play_secs);
    let rcfg = ReplayConfig {
        // The player maps the file MADV_RANDOM (`player.rs`): no recency.
        file_recency: false,
        ram_pages,
        swap: SwapKind::Zswap,
        zswap: ZswapParams { max_pool_percent: mpp, ..s.clone() },
        pool: "zsmalloc".into(),
        page_size: ps,
        readahead,
        page_cluster,
        // The kernel run's memcg, made under the root, reclaims at vm.swappiness.
        swappiness: zmem_experiments::machine::swappiness(None),
        stats_flush,
        ..ReplayConfig::default()
    };
    let r = replay::run(cx.pages, &replayed, &rcfg, progress)?;
    let traffic =
        Traffic { swap_outs_per_sec: r.swap_outs as f64, swap_ins_per_sec: r.swap_ins as f64 };
    // The CPU on the lab's cost model for zswap (`zmem_lab::zswap` candidates, as for zram):
    // the compressor's CPU per page measured on these pages, a compression per page stored
    // (zswpout) and a decompression per page loaded or written back (zswpin, zswpwb), and the
    // kernel's own swap work. Not the replay's thread CPU, which also counts the simulator's
    // work over every access.
    let codec = codec_cost(cx.pages, ps, &s.compressor)?;
    // Priced at this machine's speed: the kernel's runs are measured here.
    let kernel_work = zmem_lab::speed::kernel_speed().overhead;
    let end_to_end = cost::swap_in_end_to_end_beside_cache(
        kernel_work,
        r.load_hist.p50_ns,
        r.load_hist.p99_ns,
        codec.compress_ns,
        crate::check::anon_share(&r),
    );
    let codec_secs = (r.counter("zswpout") as f64 * codec.compress_ns
        + (r.counter("zswpin") + r.counter("zswpwb")) as f64 * codec.decompress_ns)
        / 1e9;
    let predicted = ZswapFigures {
        stored_pages: r.counter("stored_pages"),
        pool_total_size: r.counter("pool_total_size"),
        peak_pool_total_size: r.max_pool_bytes,
        written_back_pages: r.counter("written_back_pages"),
        zswpin: r.counter("zswpin"),
        zswpout: r.counter("zswpout"),
        zswpwb: r.counter("zswpwb"),
        disk_reads: r.disk_reads,
        disk_writes: r.disk_writes,
        swap_ins: r.swap_ins,
        swap_ra: r.swap_ra,
        swap_ra_hit: r.swap_ra_hit,
        cpu_seconds: codec_secs
            + kernel_work.cpu_secs_per_sec(traffic)
            + crate::check::file_refault_secs(&r),
        // As the player times it, and as zram's prediction is: the fault, the load (a miss
        // with its device read), and at the p99 the reclaim the fault does at the cgroup's
        // limit (`cost::swap_in_end_to_end`). Before, the load alone: the verdict then weighed
        // zswap's loads against zram's whole faults.
        swap_in_p50_ns: end_to_end.0,
        swap_in_p99_ns: end_to_end.1,
        file_refaults: r.file_refaults,
    };
    Ok(Ok(ZswapCheck {
        config: s.label(),
        settings: s.clone(),
        error: ZswapErrors::between(&predicted, &kernel),
        predicted,
        kernel,
        replay_ram_pages: ram_pages,
        replay_max_pool_percent: mpp,
        kernel_run: k,
        kernel_runs_swap_ins: ins,
        kernel_runs_cpu_secs: cpus,
        kernel_runs_stored_pages: stored,
        kernel_runs_pool_total_size: pools,
        kernel_runs_zswpin: zswpins,
        kernel_runs_zswpout: zswpouts,
        kernel_runs_swap_ra: swap_ras,
        kernel_runs_latency: latencies,
        kernel_failures: failures,
        verified: r.verified,
    }))
}

/// The replay's readahead for kernel runs over a swap area that is `rotational` or not, given
/// the machine's settings (`None`: unreadable; 6.18's defaults, VMA readahead and page-cluster 3).
fn readahead_mode(
    settings: Option<zmem_kernel::stat::SwapReadahead>,
    rotational: bool,
) -> (Readahead, u32) {
    let (vma, page_cluster) = settings.map_or((true, 3), |l| (l.vma_ra_enabled, l.page_cluster));
    let mode = if vma && !rotational { Readahead::Vma } else { Readahead::Cluster };
    (mode, page_cluster)
}

/// `algo`'s CPU per page on `pages`, as the lab measures a zram candidate's (the same
/// compressor into the same zsmalloc): what the zswap prediction's CPU is made of.
fn codec_cost(pages: &[u8], ps: usize, algo: &str) -> Result<zmem_lab::zswap::CodecCost, LabError> {
    let row = zmem_lab::policy::measure(
        &zmem_lab::Policy::single(algo),
        pages,
        ps,
        &[],
        &mut Vec::new(),
        &zmem_lab::NoProgress,
    )?;
    Ok(zmem_lab::zswap::CodecCost {
        compress_ns: row.compress_cpu_ns_per_page,
        decompress_ns: row.decompress_cpu_ns_per_page,
    })
}

/// The pages zswap stores at a run's end: debugfs's count, else meminfo's `Zswapped`.
fn stored_pages(k: &ZswapKernelRun) -> u64 {
    k.stored_pages.or(k.stored_pages_meminfo).unwrap_or(0)
}

/// The verdict check (module doc) from the zram and zswap configurations checked.
pub fn verdict_check(zram: &[ConfigCheck], zswap: &[ZswapCheck]) -> Option<VerdictCheck> {
    let z = zram.iter().min_by_key(|c| (c.predicted.peak_pool_bytes, c.config.clone()))?;
    // Swap-ins as each side counts them for both: the replays' (zram's without zero pages,
    // zswap's with them: zero-page swap-ins take no decompression, a small bias towards zram,
    // said in `rule`), and the player's timed swap-ins for both kernel runs.
    let lab_z = Served {
        peak_pool_bytes: z.predicted.peak_pool_bytes,
        swap_ins: z.predicted.swap_ins,
        swap_in_p50_ns: z.predicted.swap_in_p50_ns,
    };
    let lab_w = |w: &ZswapCheck| Served {
        peak_pool_bytes: w.predicted.peak_pool_total_size,
        swap_ins: w.predicted.swap_ins,
        swap_in_p50_ns: w.predicted.swap_in_p50_ns,
    };
    let rank = |w: &ZswapCheck| match served_better(lab_z, lab_w(w)) {
        "zswap" => 0,
        "tie" => 1,
        _ => 2,
    };
    // Among those zram serves better, the one that comes closest: the shortest wait.
    let key = |w: &ZswapCheck| match rank(w) {
        2 => (2, lab_w(w).wait_ns() as u64, w.config.clone()),
        r => (r, w.predicted.peak_pool_total_size, w.config.clone()),
    };
    let w = zswap.iter().min_by_key(|w| key(w))?;
    let lab = [lab_z, lab_w(w)];
    let kernel = [
        Served {
            peak_pool_bytes: z.kernel.peak_pool_bytes,
            swap_ins: z.kernel_run.timed_swap_ins,
            swap_in_p50_ns: z.kernel.swap_in_p50_ns,
        },
        Served {
            peak_pool_bytes: w.kernel.peak_pool_total_size,
            swap_ins: w.kernel.swap_ins,
            swap_in_p50_ns: w.kernel.swap_in_p50_ns,
        },
    ];
    let lab_pick = served_better(lab[0], lab[1]);
    let kernel_pick = served_better(kernel[0], kernel[1]);
    Some(VerdictCheck {
        zram_config: z.config.clone(),
        zswap_config: w.config.clone(),
        lab_pick: lab_pick.into(),
        kernel_served_better: kernel_pick.into(),
        agree: lab_pick == kernel_pick || lab_pick == "tie" || kernel_pick == "tie",
        lab_figures: lab,
        kernel_figures: kernel,
        rule: format!(
            "served better: the smaller peak pool (RAM the compressed pages take), unless its \
             swap-in wait (swap-ins x p50) is more than {:.0} % (plus 1 us) above the other's, \
             then the shorter wait; peak pools within {:.0} % at comparable waits are a tie. \
             zram: the lab's smallest predicted peak pool; zswap: the lab's best by this rule \
             against that zram, then the smaller pool (the shortest wait where zram beats every \
             one); each side judged on its own figures. \
             Lab swap-ins: the replays' (zram's without zero pages, zswap's with them) and \
             latencies the lab's; kernel: the player's timed swap-ins and their p50",
            SWAP_IN_TOLERANCE * 100.0,
            POOL_TIE * 100.0
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rotational swap area turns VMA readahead off, as `nr_rotate_swap` does in 6.18.
    #[test]
    fn a_rotational_swap_area_reads_ahead_by_cluster() {
        let set = |vma| zmem_kernel::stat::SwapReadahead { page_cluster: 2, vma_ra_enabled: vma };
        assert_eq!(readahead_mode(Some(set(true)), false), (Readahead::Vma, 2));
        assert_eq!(readahead_mode(Some(set(true)), true), (Readahead::Cluster, 2));
        assert_eq!(readahead_mode(Some(set(false)), false), (Readahead::Cluster, 2));
        assert_eq!(readahead_mode(None, false), (Readahead::Vma, 3));
        assert_eq!(readahead_mode(None, true), (Readahead::Cluster, 3));
    }

    #[test]
    fn served_better_is_less_memory_at_a_comparable_swap_in_wait() {
        let f =
            |pool, ins, p50| Served { peak_pool_bytes: pool, swap_ins: ins, swap_in_p50_ns: p50 };
        assert_eq!(served_better(f(1000, 100, 10_000), f(800, 110, 10_000)), "zswap");
        assert_eq!(served_better(f(800, 100, 10_000), f(1000, 100, 10_000)), "zram");
        assert_eq!(served_better(f(1000, 100, 10_000), f(995, 100, 10_000)), "tie");
        // zswap saves memory but waits 50 % longer: zram.
        assert_eq!(served_better(f(1000, 100, 10_000), f(500, 150, 10_000)), "zram");
        assert_eq!(served_better(f(500, 150, 10_000), f(1000, 100, 10_000)), "zswap");
        // Everything on the disk: no pool, the same swap-ins at 34 us instead of 9 us.
        assert_eq!(served_better(f(117_297_152, 102_046, 9418), f(0, 101_786, 33_943)), "zram");
        // Tiny waits are not compared by ratio.
        assert_eq!(served_better(f(1000, 0, 0), f(500, 1, 900)), "zswap");
    }

    fn zswap_check(name: &str, pool: u64, ins: u64, p50: u64) -> ZswapCheck {
        let fig = ZswapFigures {
            peak_pool_total_size: pool,
            swap_ins: ins,
            swap_in_p50_ns: p50,
            ..Default::default()
        };
        ZswapCheck {
            config: name.into(),
            settings: crate::zswap_params::parse("lzo").unwrap(),
            predicted: fig,
            kernel: fig,
            error: ZswapErrors::default(),
            replay_ram_pages: 1,
            replay_max_pool_percent: 1,
            kernel_run: ZswapKernelRun::default(),
            kernel_runs_swap_ins: vec![ins],
            kernel_runs_cpu_secs: vec![0.0],
            kernel_runs_stored_pages: vec![0],
            kernel_runs_pool_total_size: vec![0],
            kernel_runs_zswpin: vec![0],
            kernel_runs_zswpout: vec![0],
            kernel_runs_swap_ra: vec![0],
            kernel_runs_latency: Vec::new(),
            kernel_failures: Vec::new(),
            verified: true,
        }
    }

    #[test]
    fn the_verdict_weighs_zswaps_best_against_zrams_smallest() {
        let zram = |name: &str, pool: u64| ConfigCheck {
            config: name.into(),
            attributes: Vec::new(),
            lab_pool_bytes: pool,
            kernel_set_pool_bytes: pool,
            lab_pool_error: None,
            kernel_pool_bytes_per_page: 0.0,
            predicted: crate::lab::Figures {
                peak_pool_bytes: pool,
                swap_ins: 100,
                swap_in_p50_ns: 10_000,
                ..Default::default()
            },
            kernel: crate::lab::Figures {
                peak_pool_bytes: pool,
                swap_in_p50_ns: 10_000,
                ..Default::default()
            },
            error: crate::lab::FigureErrors::default(),
            replay_ram_pages: 1,
            kernel_run: crate::replay::KernelRun { timed_swap_ins: 100, ..Default::default() },
            kernel_runs: Vec::new(),
            kernel_runs_latency: Vec::new(),
            kernel_runs_cpu_secs: Vec::new(),
            baseline_runs_fault_cpu_secs: Vec::new(),
            kernel_failures: Vec::new(),
            verified: true,
        };
        let zr = [zram("lz4", 1200), zram("lzo", 1000)];
        // The all-disk zswap has no pool but a long wait: the one that beats zram is chosen.
        let zs = [zswap_check("disk", 0, 100, 60_000), zswap_check("pool", 900, 100, 10_000)];
        let v = verdict_check(&zr, &zs).unwrap();
        assert_eq!((v.zram_config.as_str(), v.zswap_config.as_str()), ("lzo", "pool"));
        assert_eq!((v.lab_pick.as_str(), v.kernel_served_better.as_str()), ("zswap", "zswap"));
        assert!(v.agree);
        // Both lose to zram: the one with the shorter wait stands for zswap.
        let zs2 = [zswap_check("disk", 0, 100, 60_000), zswap_check("slow", 900, 100, 30_000)];
        assert_eq!(verdict_check(&zr, &zs2).unwrap().zswap_config, "slow");
        // Only the all-disk one: zram on both sides.
        let v = verdict_check(&zr, &zs[..1]).unwrap();
        assert_eq!((v.lab_pick.as_str(), v.kernel_served_better.as_str()), ("zram", "zram"));
        assert!(verdict_check(&zr, &[]).is_none() && verdict_check(&[], &zs).is_none());
    }

    #[test]
    fn the_replays_pool_limit_is_the_kernels() {
        // 20 % of 6,000,000 pages over 10,000 replay pages: 12,000 % of them.
        assert_eq!(replay_pool_percent(20, 6_000_000, 10_000), 12_000);
        assert_eq!(replay_pool_percent(1, 101, 100), 2, "rounded up");
        assert_eq!(replay_pool_percent(0, 101, 100), 0);
        let e = ZswapErrors::between(
            &ZswapFigures { stored_pages: 110, cpu_seconds: 1.0, ..Default::default() },
            &ZswapFigures { stored_pages: 100, cpu_seconds: 2.0, ..Default::default() },
        );
        assert_eq!(e.stored_pages, Some(0.1));
        assert_eq!(e.cpu_seconds, Some(-0.5));
        assert_eq!(e.zswpwb, Some(0.0));
        assert_eq!(median_index(&[5, 1, 3]), 2);
    }
}

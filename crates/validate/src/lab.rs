//! `zmem validate lab`: the lab's prediction for each configuration it would recommend, checked
//! against the running kernel on the same pages and trace.
//!
//! For every configuration of the lab's candidate list ([`zmem_lab::candidates`]) that the running
//! kernel can run ([`runnable`], from `zmem_kernel::caps`), the kernel's side plays the trace
//! with `zmem validate replay`'s player on a fresh zram device of that configuration, in a memory
//! cgroup limited to the RAM budget (`crate::replay::kernel_runs`: the same RAII
//! set-up, so the same clean-up: the player, the cgroup and the device are removed whatever
//! happens, on a signal too), `kernel_runs` times, its figures those of the run with the median
//! swap-outs. The lab's side is what the lab itself computes for that configuration:
//!
//! - pool (peak and final), swap-outs and swap-ins: zmem's replay of the trace with the
//!   configuration's algorithm and the RAM the cgroup leaves the player's pages (exactly `zmem
//!   validate replay`'s zmem side);
//! - CPU seconds: the lab's cost model ([`zmem_lab::cost::project`]) with the configuration's
//!   measured CPU per page ([`zmem_lab::policy`]'s measurement on these pages) and, as traffic, the
//!   replay's swap-outs and swap-ins over the whole run;
//! - swap-in latency p50 / p99, end to end as the player times it: the lab's measured read
//!   latency of the configuration (read and decompression) with the kernel's fault path, and
//!   at the p99 the reclaim a fault does when its charge finds the cgroup at its limit
//!   (`zmem_lab::cost::swap_in_end_to_end`, from mm/memcontrol.c `try_charge_memcg()`).
//!
//! **The kernel's CPU seconds** are the player's thread CPU time in the accesses that fault (its
//! first touches and its swap-ins: `crate::player`) less the same in a baseline run of the
//! same player, pages and trace with a limit that never reclaims (the page set plus 256 MiB): a
//! cgroup at its limit reclaims in the faulting task (LRU scans, unmapping, zram's compression),
//! and a swap-in reads and decompresses in its fault, so what the faults cost beyond the
//! baseline's is the kernel's swap work. The player's whole CPU time (reading the pipe, about
//! half a second for 64 MiB) is kept too (`player_cpu_secs`), but the difference of two of
//! those drowns the swap work (tens of milliseconds) in a shared machine's noise. The
//! baseline's runs are `kernel_runs` too, its figure their median.
//!
//! **The kernel's swap-in latency** is the player's timing of each access to a page that
//! `mincore` said was out of RAM (fault, read and decompression, mapping), p50 and p99: each the
//! median of the runs' own ([`RunLatency::median`]), not the median-swap-out run's.
//!
//! **Order**: the lab orders the configurations by the pool its policy measurement gives for
//! the whole page set (what it recommends by); the kernel by the pool its own zram device of the
//! configuration takes for the same pages, all written to a fresh device
//! (`zmem_kernel::zram_device::mm_stat_of`, `kernel_set_pool_bytes`, beside the lab's figure and
//! its error). The trace's runs are not what orders: they end with 1,100-1,300 pages in swap,
//! a different number from run to run, and at a 2 MB pool zsmalloc's partly filled zspages (one
//! per size class in use) move the pool per page stored by several percent, more than lzo and
//! lzo-rle differ. They agree (`same_order`) unless a pair is ordered one way by the lab and the
//! other by the kernel, each by more than [`ORDER_TOLERANCE`] (closer than that is a tie, which
//! agrees with either order).
//!
//! **zswap** (`LabValidateConfig::zswap`, the CLI's `--zswap`): after the zram configurations,
//! each zswap configuration asked for is played the same way with zswap in front of a swap
//! area of ours, beside the lab's zswap replay, and the zram-or-zswap verdict is checked on
//! both sides ([`crate::zswap_lab`]). With any asked for, the run refuses before anything is
//! made while a swap area it did not make is active. Without, nothing here changes.

use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde::Serialize;

use crate::check::relative_error_f;
pub use crate::check::{ConfigCheck, FigureErrors, Figures, NotRun, RunLatency};
use crate::replay::{
    self as validate, KernelRun, Side, ValidateConfig, check_input, distinct_pages, median_run,
    relative_error, replay_ram_pages,
};
use zmem_kernel::KernelError;
use zmem_kernel::caps::KernelCaps;
use zmem_lab::cost::{self, Budgets, Measured, Projection, SwapOverhead, Traffic};
use zmem_lab::policy::{self, Policy};
use zmem_lab::{LabError, Progress};
use zmem_sim::replay::{self, Access, ReplayConfig, SwapKind};

/// Lab pools closer than this (relative) are a tie: the kernel may order them either way.
pub const ORDER_TOLERANCE: f64 = 0.01;

/// Bytes the baseline run's limit adds to the page set: enough that nothing is reclaimed.
const BASELINE_HEADROOM: u64 = 256 << 20;

/// How to validate the lab.
#[derive(Debug, Clone)]
pub struct LabValidateConfig {
    /// The memory cgroup's limit (the RAM budget) in bytes.
    pub ram_bytes: u64,
    pub page_size: usize,
    /// The longest each kernel run may take.
    pub timeout: Duration,
    /// Runs of the kernel's side per configuration (and of the baseline).
    pub kernel_runs: usize,
    /// Flush the cgroup's statistics while the player runs (`validate replay`'s default).
    pub flush_stats: bool,
    /// The primary algorithm the candidate list is built for (the lab's current one).
    pub primary: String,
    /// zswap configurations to check too (`crate::zswap_lab`); none: zram only.
    pub zswap: Vec<zmem_lab::ZswapParams>,
    /// Where the zswap runs' swap file goes.
    pub swap_dir: std::path::PathBuf,
}

/// The runs without memory pressure whose CPU time the kernel's figures are net of (one before
/// each kernel run, all of them here).
#[derive(Debug, Clone, Serialize)]
pub struct Baseline {
    pub ram_bytes: u64,
    /// The median of the runs' CPU seconds in faulting accesses (what the kernel's figures are
    /// net of), and each run's.
    pub fault_cpu_secs: f64,
    pub runs_fault_cpu_secs: Vec<f64>,
    /// The median of the runs' whole player CPU seconds.
    pub player_cpu_secs: f64,
    /// Swap-outs of the median run (0 unless something else pressed on the cgroup).
    pub swap_outs: u64,
}

/// The kernel's own swap work (reclaim per swap-out, fault per swap-in) measured on this
/// machine, beside what the lab's cost model prices it at here ([`zmem_lab::speed`]: the
/// reference ratios at this machine's first-touch fault, `probe_ns`): the trace
/// played over same-filled pages (page `i` filled with one word of its own), which zram stores
/// as a flag without compressing or allocating, at the same limit. A swap-in's fault is its
/// p50 latency (zram reads synchronously, so that is CPU; a same-filled read is a memset); a
/// swap-out's reclaim is the run's CPU in faulting accesses less its baseline run's and the
/// swap-ins' faults, over the swap-outs. Each run gives its own figure; the median counts.
#[derive(Debug, Clone, Serialize)]
pub struct OverheadCheck {
    pub model: SwapOverhead,
    /// This machine's first-touch fault, ns ([`zmem_lab::speed::fault_probe_ns`]), which
    /// `model` is priced at; `None`: the reference constants ([`cost::SWAP_OVERHEAD`]).
    pub probe_ns: Option<f64>,
    /// `None` when no run swapped anything out.
    pub measured: Option<SwapOverhead>,
    /// The model's relative error on the reclaim per swap-out.
    pub reclaim_error: Option<f64>,
    /// Each run's swap-outs and swap-ins, and its CPU in faulting accesses less its
    /// baseline's.
    pub runs: Vec<Side>,
    pub runs_cpu_secs: Vec<f64>,
}

/// Kernel runs, each after a baseline run of its own.
#[derive(Debug, Clone, Default)]
struct Paired {
    runs: Vec<KernelRun>,
    base: Vec<KernelRun>,
    /// Each run's CPU seconds in faulting accesses less its baseline's.
    net_cpu_secs: Vec<f64>,
    /// Why the pairs that failed failed.
    failures: Vec<String>,
}

/// `subject_cfg.kernel_runs` pairs: a baseline run of `pages` and `trace` under a limit of
/// `base_ram` (nothing reclaimed), then a run under `subject_cfg`. A pair whose player failed
/// is noted and left out (a test beside us may switch zswap on); none left is an error.
fn paired_runs(
    pages: &[u8],
    trace: &[Access],
    subject_cfg: &ValidateConfig,
    base_ram: u64,
    player: &dyn Fn() -> Command,
    stop: &AtomicBool,
    progress: &dyn Progress,
) -> Result<Paired, LabError> {
    let one = ValidateConfig { kernel_runs: 1, ..subject_cfg.clone() };
    let base_cfg = ValidateConfig { ram_bytes: base_ram, ..one.clone() };
    let wanted = subject_cfg.kernel_runs.max(1);
    let mut out = Paired::default();
    for _ in 0..wanted {
        let pair = validate::kernel_runs(pages, trace, &base_cfg, player, stop, progress).and_then(
            |(b, _)| {
                let (r, _) = validate::kernel_runs(pages, trace, &one, player, stop, progress)?;
                Ok((b, r))
            },
        );
        match pair {
            Ok((mut b, mut r)) => {
                let (b, r) = (b.remove(0), r.remove(0));
                out.net_cpu_secs.push(r.fault_cpu_secs - b.fault_cpu_secs);
                out.base.push(b);
                out.runs.push(r);
            }
            Err(LabError::Kernel(KernelError::PlayerFailed(why))) if wanted > 1 => {
                out.failures.push(why)
            }
            Err(e) => return Err(e),
        }
    }
    if out.runs.is_empty() {
        return Err(KernelError::PlayerFailed(format!(
            "all {wanted} kernel runs failed; the first: {}",
            out.failures.first().map_or("", String::as_str)
        ))
        .into());
    }
    Ok(out)
}

/// [`OverheadCheck`] from the same-filled pairs.
fn overhead_of(p: &Paired) -> OverheadCheck {
    let speed = zmem_lab::speed::kernel_speed();
    let model = speed.overhead;
    let (mut reclaim, mut fault) = (Vec::new(), Vec::new());
    for (k, net) in p.runs.iter().zip(&p.net_cpu_secs).filter(|(k, _)| k.swap_outs > 0) {
        let f = k.swap_in_p50_ns as f64;
        let net_ns = net * 1e9 - k.swap_ins as f64 * f;
        reclaim.push(net_ns.max(0.0) / k.swap_outs as f64);
        fault.push(f);
    }
    let measured = (!reclaim.is_empty()).then(|| SwapOverhead {
        reclaim_ns_per_swap_out: median(&reclaim),
        fault_ns_per_swap_in: median(&fault),
    });
    OverheadCheck {
        model,
        probe_ns: speed.probe_ns,
        reclaim_error: measured.and_then(|m| {
            relative_error_f(model.reclaim_ns_per_swap_out, m.reclaim_ns_per_swap_out)
        }),
        measured,
        runs: p.runs.iter().map(side_of).collect(),
        runs_cpu_secs: p.net_cpu_secs.clone(),
    }
}

/// `n` pages of `ps` bytes, page `i` filled with a word of its own (never zero): zram's
/// same-filled pages.
fn same_filled_pages(n: usize, ps: usize) -> Vec<u8> {
    let mut v = vec![0u8; n * ps];
    for (i, page) in v.chunks_exact_mut(ps).enumerate() {
        let word = (0x5a5a_0000_0000_0000u64 | (i as u64 + 1)).to_le_bytes();
        for w in page.chunks_exact_mut(8) {
            w.copy_from_slice(&word);
        }
    }
    v
}

/// What was replayed.
#[derive(Debug, Clone, Serialize)]
pub struct LabSetup {
    pub pages: u64,
    pub touched_pages: u64,
    pub accesses: u64,
    pub ram_bytes: u64,
    pub kernel_runs: usize,
    pub primary: String,
}

/// `zmem validate lab`'s result.
#[derive(Debug, Clone, Serialize)]
pub struct LabValidation {
    pub configurations: Vec<ConfigCheck>,
    /// Candidates not run, with the reason.
    pub not_run: Vec<NotRun>,
    /// Configurations by the lab's pool for the page set, smallest first, and by the kernel's.
    pub lab_order: Vec<String>,
    pub kernel_order: Vec<String>,
    /// The kernel orders the configurations by memory as the lab does (ties: see the module doc).
    pub same_order: bool,
    pub order_tolerance: f64,
    pub baseline: Baseline,
    /// The kernel's own swap work measured here against the cost model's figure.
    pub swap_overhead: OverheadCheck,
    pub setup: LabSetup,
    /// How each side's CPU seconds and latencies were obtained, in words.
    pub method: Vec<String>,
    /// The zswap configurations asked for, the kernel's figures beside the lab's, and the
    /// zram-or-zswap verdict on both sides (absent where none was asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zswap: Option<crate::zswap_lab::ZswapValidation>,
}

/// `Ok` when `zmem validate lab` can run `p` on this kernel, else why not.
pub fn runnable(p: &Policy, caps: &KernelCaps) -> Result<(), String> {
    let why_not = |e: zmem_kernel::KernelError| e.to_string();
    caps.zram_can_run(&p.algo).map_err(why_not)?;
    if p.dict {
        return Err("a dictionary needs the trained file on the kernel's side, which `validate \
                    lab` does not write (not run)"
            .into());
    }
    if !p.recomp.is_empty() || p.recompresses() {
        caps.can_recompress().map_err(why_not)?;
        for a in &p.recomp {
            caps.zram_can_run(a).map_err(why_not)?;
        }
        return Err("the kernel's side of recompression (recomp_algorithm, idle, recompress \
                    while the player holds its pages) is not driven by `validate lab` yet"
            .into());
    }
    Ok(())
}

/// Indices of `pools` in increasing order (ties: the earlier first).
fn order(pools: &[f64]) -> Vec<usize> {
    let mut o: Vec<usize> = (0..pools.len()).collect();
    o.sort_by(|&a, &b| pools[a].total_cmp(&pools[b]).then(a.cmp(&b)));
    o
}

/// Whether `kernel` orders every pair the way `lab` does: a pair disagrees only when each side
/// separates it by more than `tolerance` (relative to the smaller value), in opposite ways.
pub fn same_order(lab: &[f64], kernel: &[f64], tolerance: f64) -> bool {
    let apart = |a: f64, b: f64| (b - a) > tolerance * a.min(b).abs();
    for i in 0..lab.len() {
        for j in 0..lab.len() {
            if apart(lab[i], lab[j]) && apart(kernel[j], kernel[i]) {
                return false;
            }
        }
    }
    true
}

/// The pool per page stored at the end of a kernel run: the final pool over `mm_stat`'s
/// `orig_data_size` in pages, less the swap header's page (0 when nothing else is stored).
fn pool_per_page(k: &KernelRun, page_size: usize) -> f64 {
    let orig: u64 =
        k.mm_stat.split_whitespace().next().and_then(|f| f.parse().ok()).unwrap_or_default();
    let stored = (orig / page_size as u64).saturating_sub(1);
    if stored == 0 { 0.0 } else { k.final_pool_bytes as f64 / stored as f64 }
}

fn side_of(k: &KernelRun) -> Side {
    Side {
        swap_outs: k.swap_outs,
        swap_ins: k.swap_ins,
        peak_pool_bytes: k.peak_pool_bytes,
        final_pool_bytes: k.final_pool_bytes,
        file_faults: k.file_faults,
        file_refaults: k.file_refaults,
    }
}

/// The median of `v` (the lower middle for an even count); 0 for none.
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
}

/// Validates the lab against the kernel. `caps` is what the running kernel offers
/// (`zmem_kernel::caps::read()`); `player` makes the command that starts a player; `stop`
/// interrupts the kernel's runs.
pub fn run(
    pages: &[u8],
    trace: &[Access],
    cfg: &LabValidateConfig,
    caps: &KernelCaps,
    player: &dyn Fn() -> Command,
    stop: &AtomicBool,
    progress: &dyn Progress,
) -> Result<LabValidation, LabError> {
    let ps = cfg.page_size;
    let n = check_input(pages, trace, ps)?;
    zmem_kernel::harness::check_available()?;
    // zswap stores in front of every swap area: refuse before anything runs (the CLI says it
    // in one line and exits 2 before calling this).
    if !cfg.zswap.is_empty()
        && let Some(line) = crate::zswap_swap::refusal(
            &crate::zswap_swap::foreign_swaps(&[]).map_err(LabError::from)?,
        )
    {
        return Err(LabError::Setup(line));
    }
    let touched = distinct_pages(trace, n);
    let (mut run_these, mut not_run) = (Vec::new(), Vec::new());
    for p in policy::candidates(&cfg.primary) {
        match runnable(&p, caps) {
            Ok(()) => run_these.push(p),
            Err(reason) => not_run.push(NotRun { config: p.name.clone(), reason }),
        }
    }
    if run_these.is_empty() {
        return Err(LabError::Setup(format!(
            "the running kernel can run none of the lab's candidates: {}",
            not_run
                .iter()
                .map(|r| format!("{}: {}", r.config, r.reason))
                .collect::<Vec<_>>()
                .join("; ")
        )));
    }
    let file = crate::page_cache::TraceFile::for_trace(trace, &cfg.swap_dir, ps)?;
    let file_bytes = file.as_ref().map_or(0, |f| f.pages() * ps as u64);
    let vcfg = |algo: &str, ram_bytes: u64| ValidateConfig {
        ram_bytes,
        algorithm: algo.to_string(),
        page_size: ps,
        timeout: cfg.timeout,
        kernel_runs: cfg.kernel_runs.max(1),
        flush_stats: cfg.flush_stats,
        flush_through_warm_up: false,
        file: file.clone(),
    };

    // Every run of a configuration (and of the same-filled pages) comes right after a baseline
    // run of the same pages without reclaim, and its CPU is net of that one's: the machine's
    // speed drifts over a validation by as much as the swap work being measured.
    let base_ram = pages.len() as u64 + file_bytes + BASELINE_HEADROOM;
    let paired = |subject: &[u8], algo: &str| {
        paired_runs(subject, trace, &vcfg(algo, cfg.ram_bytes), base_ram, player, stop, progress)
    };
    let fill = paired(&same_filled_pages(n as usize, ps), &run_these[0].algo)?;
    let swap_overhead = overhead_of(&fill);
    let mut base_runs: Vec<KernelRun> = fill.base.clone();

    let mut back = Vec::new();
    let mut checks = Vec::new();
    for p in &run_these {
        let Paired { mut runs, base, net_cpu_secs: cpus, failures: kernel_failures } =
            paired(pages, &p.algo)?;
        let base_cpus: Vec<f64> = base.iter().map(|k| k.fault_cpu_secs).collect();
        base_runs.extend(base);
        let sides: Vec<Side> = runs.iter().map(side_of).collect();
        let latencies: Vec<RunLatency> = runs.iter().map(RunLatency::of).collect();
        let latency = RunLatency::median(&latencies);
        // The player's charge before its first access, read as the cgroup's usage, includes
        // what the memcg's per-CPU stock has precharged (up to 64 pages, MEMCG_CHARGE_BATCH):
        // the same player read 768 KiB in one run and 1 MiB in the next, and the replay given
        // 64 pages less swapped 8 % more. The least of this configuration's and the baseline's
        // runs is the player's own.
        let overhead = runs
            .iter()
            .chain(&base_runs)
            .map(|k| k.player_overhead_bytes)
            .min()
            .unwrap_or_default();
        let k = runs.swap_remove(median_run(&sides).expect("kernel_runs gives at least one run"));
        let kernel_pool_bytes_per_page = pool_per_page(&k, ps);
        let kernel_set_pool_bytes = zmem_kernel::zram_device::mm_stat_of(&p.algo, pages)
            .map_err(|e| {
                LabError::Setup(format!("the page set on a kernel {} device: {e}", p.algo))
            })?
            .mem_used_total;
        let kernel = Figures {
            pool_bytes: k.peak_pool_bytes,
            peak_pool_bytes: k.peak_pool_bytes,
            final_pool_bytes: k.final_pool_bytes,
            swap_outs: k.swap_outs,
            swap_ins: k.swap_ins,
            cpu_seconds: median(&cpus).max(0.0),
            swap_in_p50_ns: latency.p50_ns,
            swap_in_p99_ns: latency.p99_ns,
            file_refaults: k.file_refaults,
        };

        // The lab's side: its measurement of the configuration, its replay, its cost model.
        let row = policy::measure(p, pages, ps, &[], &mut back, progress)?;
        let mapped = touched + validate::distinct_file_pages(trace);
        let ram_pages = replay_ram_pages(cfg.ram_bytes, overhead, mapped, ps);
        let (stats_flush, replayed) =
            validate::as_the_kernel_flushed(trace, (cfg.flush_stats, false), k.play_secs);
        let rcfg = ReplayConfig {
            // The player maps the file MADV_RANDOM (`player.rs`): no recency.
            file_recency: false,
            ram_pages,
            swap: SwapKind::Zram,
            algo: p.algo.clone(),
            pool: "zsmalloc".into(),
            page_size: ps,
            // The kernel run's memcg, made under the root, reclaims at vm.swappiness.
            swappiness: zmem_experiments::machine::swappiness(None),
            stats_flush,
            ..ReplayConfig::default()
        };
        let r = replay::run(pages, &replayed, &rcfg, progress)?;
        let (outs, ins) = (r.swap_outs - r.zero_swap_outs, r.swap_ins - r.zero_swap_ins);
        let m = Measured {
            policy: p.clone(),
            is_current: true,
            verified: row.verified,
            recompresses: p.recompresses(),
            pages: row.pages,
            pool_bytes: row.pool_bytes,
            extra_bytes: row.dict_bytes,
            compress_ns: row.compress_cpu_ns_per_page,
            decompress_ns: row.decompress_cpu_ns_per_page,
            recompress_ns: row.recompress_cpu_ns_per_page,
            load_p50_ns: row.load_latency.p50_ns,
            load_p99_ns: row.load_latency.p99_ns,
            estimated_pool: None,
        };
        // The traffic of the whole run in one "second": the projection's CPU seconds per
        // second are then the run's CPU seconds.
        let traffic = Traffic { swap_outs_per_sec: outs as f64, swap_ins_per_sec: ins as f64 };
        // Priced at this machine's speed: the kernel's runs are measured here.
        let kernel_work = zmem_lab::speed::kernel_speed().overhead;
        let proj = Projection {
            pages: row.pages,
            live_bytes: None,
            current_pool: None,
            kernel: kernel_work,
        };
        let c = cost::project(std::slice::from_ref(&m), proj, traffic, &Budgets::default(), false);
        let c = c.first().ok_or_else(|| LabError::Setup("the projection gave nothing".into()))?;
        let end_to_end = cost::swap_in_end_to_end_beside_cache(
            kernel_work,
            c.load_p50_ns,
            c.load_p99_ns,
            row.compress_cpu_ns_per_page,
            crate::check::anon_share(&r),
        );
        let predicted = Figures {
            pool_bytes: r.max_pool_bytes,
            peak_pool_bytes: r.max_pool_bytes,
            final_pool_bytes: r.counter("mem_used_total"),
            swap_outs: outs,
            swap_ins: ins,
            // The swap work, and the page cache's refaults (`cost::FILE_REFAULT_NS`).
            cpu_seconds: c.cpu_secs_per_sec + crate::check::file_refault_secs(&r),
            // As the player times it: the fault, the read, and at the p99 the reclaim the
            // fault does at the cgroup's limit (`cost::swap_in_end_to_end`).
            swap_in_p50_ns: end_to_end.0,
            swap_in_p99_ns: end_to_end.1,
            file_refaults: r.file_refaults,
        };
        checks.push(ConfigCheck {
            config: p.name.clone(),
            attributes: attributes(p),
            lab_pool_bytes: row.pool_bytes,
            kernel_set_pool_bytes,
            lab_pool_error: relative_error(row.pool_bytes, kernel_set_pool_bytes),
            kernel_pool_bytes_per_page,
            error: FigureErrors::between(&predicted, &kernel),
            predicted,
            kernel,
            replay_ram_pages: ram_pages,
            kernel_run: k,
            kernel_runs: sides,
            kernel_runs_latency: latencies,
            kernel_runs_cpu_secs: cpus,
            baseline_runs_fault_cpu_secs: base_cpus,
            kernel_failures,
            verified: r.verified && row.verified,
        });
    }

    let base_cpu: Vec<f64> = base_runs.iter().map(|k| k.fault_cpu_secs).collect();
    let base_player: Vec<f64> = base_runs.iter().map(|k| k.player_cpu_secs).collect();
    let base_sides: Vec<Side> = base_runs.iter().map(side_of).collect();
    let baseline = Baseline {
        ram_bytes: base_ram,
        fault_cpu_secs: median(&base_cpu),
        runs_fault_cpu_secs: base_cpu,
        player_cpu_secs: median(&base_player),
        swap_outs: median_run(&base_sides).map_or(0, |i| base_sides[i].swap_outs),
    };
    let lab: Vec<f64> = checks.iter().map(|c| c.lab_pool_bytes as f64).collect();
    let kern: Vec<f64> = checks.iter().map(|c| c.kernel_set_pool_bytes as f64).collect();
    let names = |o: Vec<usize>| o.into_iter().map(|i| checks[i].config.clone()).collect();
    let zswap = if cfg.zswap.is_empty() {
        None
    } else {
        let cx = crate::zswap_lab::Context {
            pages,
            trace,
            page_size: ps,
            ram_bytes: cfg.ram_bytes,
            base_ram,
            touched,
            kernel_runs: cfg.kernel_runs.max(1),
            flush_stats: cfg.flush_stats,
            timeout: cfg.timeout,
            swap_dir: cfg.swap_dir.clone(),
            zram_algo: run_these[0].algo.clone(),
            file: file.clone(),
        };
        Some(crate::zswap_lab::run(&cx, &cfg.zswap, caps, &checks, player, stop, progress)?)
    };
    Ok(LabValidation {
        zswap,
        lab_order: names(order(&lab)),
        kernel_order: names(order(&kern)),
        same_order: same_order(&lab, &kern, ORDER_TOLERANCE),
        order_tolerance: ORDER_TOLERANCE,
        baseline,
        swap_overhead,
        setup: LabSetup {
            pages: n,
            touched_pages: touched,
            accesses: trace.len() as u64,
            ram_bytes: cfg.ram_bytes,
            kernel_runs: cfg.kernel_runs.max(1),
            primary: cfg.primary.clone(),
        },
        method: vec![
            "kernel cpu_seconds: the player's thread CPU time in its faulting accesses (first \
             touches, swap-ins) less the baseline run's (same pages and trace, no memory \
             pressure): direct reclaim, compression and swap-in faults run in the player"
                .into(),
            "predicted cpu_seconds: the lab's cost model ((compress CPU per page + the kernel's \
             reclaim per swap-out) x replay swap-outs + (decompress CPU per page + the kernel's \
             fault per swap-in) x replay swap-ins)"
                .into(),
            "swap_overhead.measured: the trace over same-filled pages (stored by zram without \
             compressing), CPU in faulting accesses less the baseline's and the swap-ins' p50, \
             over the swap-outs"
                .into(),
            "kernel swap-in latency: the player's timing of accesses to pages mincore said were \
             out of RAM (fault + read + decompress); predicted: the lab's measured read latency"
                .into(),
            "pool_bytes: the peak pool (mm_stat mem_used_total less the swap header's)".into(),
        ],
        configurations: checks,
        not_run,
    })
}

/// The configuration as zram attribute writes, for the report.
fn attributes(p: &Policy) -> Vec<String> {
    let mut v = vec![format!("echo {} > comp_algorithm", p.algo)];
    if p.dict {
        v.push(format!("echo 'algo={} dict=/path/to/dictionary' > algorithm_params", p.algo));
    }
    for (i, a) in p.recomp.iter().enumerate() {
        v.push(format!("echo 'algo={a} priority={}' > recomp_algorithm", i + 1));
    }
    if p.mark_idle {
        v.push("echo all > idle   # (after the pages have aged)".into());
    }
    if let Some(r) = &p.recompress {
        v.push(format!("echo '{r}' > recompress"));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(algos: &[&str]) -> KernelCaps {
        KernelCaps {
            release: "6.18".into(),
            zram_present: true,
            zram_algorithms: algos.iter().map(|a| a.to_string()).collect(),
            zram_recompress: false,
            zram_writeback: false,
            zram_algorithm_params: true,
            zswap_present: true,
            zswap_compressors: Vec::new(),
            zswap_params: Default::default(),
            source: "test".into(),
        }
    }

    #[test]
    fn the_order_check_ignores_ties_and_catches_swaps() {
        assert!(same_order(&[100.0, 200.0, 300.0], &[10.0, 20.0, 30.0], 0.01));
        assert!(!same_order(&[100.0, 200.0, 300.0], &[10.0, 30.0, 20.0], 0.01));
        // 100 and 100.5 are a tie to the lab: either kernel order agrees.
        assert!(same_order(&[100.5, 100.0, 300.0], &[10.0, 11.0, 30.0], 0.01));
        assert!(!same_order(&[100.5, 100.0, 300.0], &[10.0, 11.0, 3.0], 0.01));
        // A kernel tie (1740.4 and 1741.3 per page) agrees with the lab's 1.1 % apart.
        assert!(same_order(&[19_013_632.0, 18_800_640.0], &[1740.4, 1741.3], 0.01));
        let k = |mm: &str, fin| KernelRun {
            mm_stat: mm.into(),
            final_pool_bytes: fin,
            ..KernelRun::default()
        };
        assert_eq!(pool_per_page(&k("12288 100 200", 4096), 4096), 4096.0 / 2.0);
        assert_eq!(pool_per_page(&k("4096 1 1", 0), 4096), 0.0);
        assert_eq!(order(&[3.0, 1.0, 2.0, 1.0]), vec![1, 3, 2, 0]);
    }

    #[test]
    fn only_what_the_kernel_offers_runs() {
        let caps = caps(&["lzo-rle", "lzo", "lz4"]);
        let runs: Vec<String> = policy::candidates("lzo-rle")
            .into_iter()
            .filter(|p| runnable(p, &caps).is_ok())
            .map(|p| p.name)
            .collect();
        assert_eq!(runs, ["lzo-rle", "lzo", "lz4"]);
        let zstd = runnable(&Policy::single("zstd"), &caps).unwrap_err();
        assert!(zstd.contains("zstd"), "{zstd}");
        let huge = &policy::candidates("lzo-rle")[7];
        assert!(huge.recompresses());
        assert!(runnable(huge, &caps).unwrap_err().contains("recompress"));
    }

    #[test]
    fn errors_are_against_the_kernel() {
        let k = Figures { pool_bytes: 100, cpu_seconds: 2.0, swap_ins: 0, ..Figures::default() };
        let p = Figures { pool_bytes: 95, cpu_seconds: 2.5, swap_ins: 0, ..Figures::default() };
        let e = FigureErrors::between(&p, &k);
        assert_eq!(e.pool_bytes, Some(-0.05));
        assert_eq!(e.cpu_seconds, Some(0.25));
        assert_eq!(e.swap_ins, Some(0.0));
        assert_eq!(relative_error_f(1.0, 0.0), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[]), 0.0);
    }

    #[test]
    fn the_kernels_own_work_by_hand() {
        // Two runs: 0.020 s and 0.030 s of faulting CPU more than their baselines, 1000
        // swap-outs and 100 swap-ins at a 6 us p50 each: (20 ms - 0.6 ms) / 1000 = 19.4 us and
        // (30 ms - 0.6 ms) / 1000 = 29.4 us per swap-out; a run that swapped nothing is left out.
        let run = |outs: u64| KernelRun {
            swap_outs: outs,
            swap_ins: 100,
            swap_in_p50_ns: 6000,
            ..KernelRun::default()
        };
        let paired = |nets: &[f64], outs: &[u64]| Paired {
            runs: outs.iter().map(|&o| run(o)).collect(),
            net_cpu_secs: nets.to_vec(),
            ..Paired::default()
        };
        let o = overhead_of(&paired(&[0.020, 0.030, 0.49], &[1000, 1000, 0]));
        let m = o.measured.unwrap();
        assert!((m.reclaim_ns_per_swap_out - 19_400.0).abs() < 1e-6, "{m:?}");
        assert_eq!(m.fault_ns_per_swap_in, 6000.0);
        assert_eq!(o.runs.len(), 3);
        let want = (o.model.reclaim_ns_per_swap_out - 19_400.0) / 19_400.0;
        assert_eq!(o.model, zmem_lab::speed::kernel_speed().overhead);
        assert!((o.reclaim_error.unwrap() - want).abs() < 1e-9);
        assert!(overhead_of(&paired(&[0.5], &[0])).measured.is_none());
    }

    #[test]
    fn same_filled_pages_are_same_filled_and_distinct() {
        let v = same_filled_pages(3, 4096);
        let pages: Vec<&[u8]> = v.chunks_exact(4096).collect();
        for p in &pages {
            assert!(p.chunks_exact(8).all(|w| w == &p[..8]));
            assert!(p.iter().any(|&b| b != 0));
        }
        assert!(pages[0] != pages[1] && pages[1] != pages[2]);
    }

    #[test]
    fn bad_input_fails_before_the_kernel_is_touched() {
        let cfg = LabValidateConfig {
            ram_bytes: 8192,
            page_size: 4096,
            timeout: Duration::from_secs(1),
            kernel_runs: 1,
            flush_stats: true,
            primary: "lzo-rle".into(),
            zswap: Vec::new(),
            swap_dir: std::path::PathBuf::from("/var/tmp"),
        };
        let pages = vec![1u8; 4 * 4096];
        let far = [Access { page: 9, write: false, file: false, time_ns: 0 }];
        let cmd = || Command::new("/nonexistent/zmem-player");
        let go = AtomicBool::new(false);
        let caps = caps(&["lzo-rle"]);
        let e = run(&pages, &far, &cfg, &caps, &cmd, &go, &zmem_sim::NoProgress).unwrap_err();
        assert!(e.to_string().contains("page 9"), "{e}");
    }
}

//! `zmem validate replay`: the replay checked against the live kernel on the same pages and
//! accesses. The kernel's side ([`kernel`]) runs a player process ([`player`]) that performs the
//! trace in real memory inside a memory cgroup limited to the RAM budget, with a fresh kernel
//! zram device as its swap; zmem's side is [`crate::replay`] with zram, the same algorithm, the
//! same pages and trace, and the RAM the cgroup leaves the player's pages. Both give swap-outs,
//! swap-ins, and the zram pool's peak and final size; [`Errors`] is zmem's relative error on each.
//!
//! The two sides count the same things: swap-outs are pages written to the zram device (zero
//! pages stop at the swap layer's zeromap on both sides), swap-ins pages read from it, the pool
//! is `mm_stat`'s `mem_used_total` (the kernel's less what the swap header alone took).
//!
//! The kernel does not repeat itself exactly: at tight budgets the same run swaps tens of percent
//! more or less from one time to the next (reclaim races the player's faults, and the per-CPU
//! LRU batches and charge stocks differ). `kernel_runs` repeats the kernel's side; its figures
//! are then those of the run with the median swap-outs, and every run's figures are kept. A run
//! the kernel's OOM killer ends counts as a failed run (listed) when another one succeeded.
//!
//! The kernel's reclaim decides with flushed statistics; by default the kernel's side keeps them
//! current while the player runs, as the replay's model assumes ([`kernel`] says why and what
//! happens without).
//!
//! The replay's RAM is the limit less what the player itself is charged before its first access
//! (its binary's pages, stack, heap: `player_overhead_bytes`) and less one page-table page per
//! 512 pages of the region (x86-64's page tables, charged to the cgroup as the region fills).

pub use crate::player;

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Serialize;

use crate::kernel_replay as kernel;
pub use crate::kernel_replay::{KernelRun, KernelRunConfig};
use std::borrow::Cow;

use zmem_kernel::KernelError;

use zmem_experiments::LabError;
pub use zmem_kernel::stat::ReadaheadCounters;
use zmem_sim::Progress;
use zmem_sim::replay::{self, Access, Readahead, ReplayConfig, StatsFlush, SwapKind};

/// How to validate.
#[derive(Debug, Clone)]
pub struct ValidateConfig {
    /// The memory cgroup's limit (the RAM budget) in bytes.
    pub ram_bytes: u64,
    /// The zram algorithm, on both sides.
    pub algorithm: String,
    pub page_size: usize,
    /// The longest the player may take.
    pub timeout: Duration,
    /// Runs of the kernel's side (at least one): its figures are the median run's.
    pub kernel_runs: usize,
    /// Flush the cgroup's statistics while the player runs, so the kernel's reclaim sees the
    /// current LRU sizes ([`KernelRunConfig::flush_stats`]).
    pub flush_stats: bool,
    /// Without `flush_stats`, flush through the warm-up only
    /// ([`KernelRunConfig::flush_through_warm_up`]).
    pub flush_through_warm_up: bool,
    /// The file of the trace's file reads ([`KernelRunConfig::file`]); [`run`] makes it
    /// where the trace has file reads and this is `None`.
    pub file: Option<std::sync::Arc<crate::page_cache::TraceFile>>,
}

/// One side's figures: the keys of `--json`'s `kernel` and `zmem` objects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Side {
    pub swap_outs: u64,
    pub swap_ins: u64,
    pub peak_pool_bytes: u64,
    pub final_pool_bytes: u64,
    /// File reads that faulted (major), and those of pages evicted before
    /// (`workingset_refault_file`): 0 for a trace without page cache.
    pub file_faults: u64,
    pub file_refaults: u64,
}

/// zmem's relative error on each figure, `(zmem - kernel) / kernel`; `None` (JSON `null`) where
/// the kernel's figure is 0 and zmem's is not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Errors {
    pub swap_outs: Option<f64>,
    pub swap_ins: Option<f64>,
    pub peak_pool_bytes: Option<f64>,
    pub final_pool_bytes: Option<f64>,
    pub file_faults: Option<f64>,
    pub file_refaults: Option<f64>,
}

/// `(ours - theirs) / theirs`: 0 when both are 0, `None` when only the reference is 0.
pub fn relative_error(ours: u64, theirs: u64) -> Option<f64> {
    match (ours, theirs) {
        (0, 0) => Some(0.0),
        (_, 0) => None,
        _ => Some((ours as f64 - theirs as f64) / theirs as f64),
    }
}

impl Errors {
    /// zmem's error against the kernel on each figure.
    pub fn between(zmem: &Side, kernel: &Side) -> Self {
        Self {
            swap_outs: relative_error(zmem.swap_outs, kernel.swap_outs),
            swap_ins: relative_error(zmem.swap_ins, kernel.swap_ins),
            peak_pool_bytes: relative_error(zmem.peak_pool_bytes, kernel.peak_pool_bytes),
            final_pool_bytes: relative_error(zmem.final_pool_bytes, kernel.final_pool_bytes),
            file_faults: relative_error(zmem.file_faults, kernel.file_faults),
            file_refaults: relative_error(zmem.file_refaults, kernel.file_refaults),
        }
    }
}

/// The run's circumstances: what was replayed and how each side was set up.
#[derive(Debug, Clone, Serialize)]
pub struct Setup {
    pub algorithm: String,
    pub pages: u64,
    /// Distinct pages the trace touches.
    pub touched_pages: u64,
    pub accesses: u64,
    pub ram_bytes: u64,
    /// The replay's resident pages (the limit less the player's own charge and page tables).
    pub replay_ram_pages: u64,
}

/// Swap readahead on both sides: the kernel's `/proc/vmstat` `swap_ra` and `swap_ra_hit` over
/// the median run's accesses beside the replay's. The replay runs with this machine's
/// settings (`vm.page-cluster`, `vma_ra_enabled`), but on zram neither side's faults read
/// ahead (`SWP_SYNCHRONOUS_IO`, 6.18 `do_swap_page()`): zmem's counts are 0, and the kernel's
/// are other processes' (its counters are system-wide; `memory.stat` has none).
#[derive(Debug, Clone, Serialize)]
pub struct ReadaheadSides {
    /// The machine's readahead (`vma` or `cluster`), which the replay was given.
    pub mode: Readahead,
    /// The machine's `vm.page-cluster`, which the replay was given.
    pub page_cluster: u32,
    /// System-wide deltas; `None` where /proc/vmstat has no readahead counters.
    pub kernel: Option<ReadaheadCounters>,
    pub zmem: ReadaheadCounters,
    /// What the kernel's figures count.
    pub kernel_scope: &'static str,
}

/// What [`ReadaheadSides::kernel`] counts.
pub const KERNEL_RA_SCOPE: &str = "system-wide /proc/vmstat deltas over the player's accesses (every process's readahead; \
     memory.stat has no swap_ra)";

/// `zmem validate replay`'s result: `kernel`, `zmem` and `error` are the comparison; the rest
/// says how it was obtained.
#[derive(Debug, Clone, Serialize)]
pub struct Validation {
    pub kernel: Side,
    pub zmem: Side,
    pub error: Errors,
    pub setup: Setup,
    /// The details of the kernel run whose figures `kernel` gives (cross-checks, other swap
    /// areas seen).
    pub kernel_run: KernelRun,
    /// Every successful kernel run's figures, in the order they ran.
    pub kernel_runs: Vec<Side>,
    /// Why the kernel runs that failed failed (OOM kills, timeouts), in the order they ran.
    pub kernel_failures: Vec<String>,
    /// Swap readahead counts on both sides (not compared: the kernel's are system-wide).
    pub readahead: ReadaheadSides,
    /// Every page the replay swapped in equalled the page that went out.
    pub verified: bool,
}

/// Pages of the region `pages` span that the kernel needs page-table pages for: one per 512
/// (a 4 KiB page of 8-byte PTEs on x86-64 and arm64 with 4 KiB pages), counted over the touched
/// range.
fn page_table_pages(touched_pages: u64, page_size: usize) -> u64 {
    let per_table = (page_size / 8) as u64;
    touched_pages.div_ceil(per_table)
}

/// What the default memory limit allows for the player's own charge beside the pages: its
/// binary's pages, stack and heap (`player_overhead_bytes`, 0.75 MiB on this machine kind) and
/// its page tables, with room to spare. Without it, half of a small trace's pages left the
/// player no room of its own and the kernel's OOM killer ended every run.
pub const PLAYER_ALLOWANCE_BYTES: u64 = 2 << 20;

/// The memory limit `zmem validate` runs under without `--ram`: half the pages the trace
/// touches, and the player's own [`PLAYER_ALLOWANCE_BYTES`].
pub fn default_ram_bytes(touched_pages: u64, page_size: usize) -> u64 {
    (touched_pages / 2).max(1) * page_size as u64 + PLAYER_ALLOWANCE_BYTES
}

/// The replay's resident pages for a cgroup limit: the limit less the player's own charge and
/// its page tables, in whole pages (at least one).
pub fn replay_ram_pages(limit: u64, overhead: u64, touched_pages: u64, page_size: usize) -> u64 {
    let pages = limit.saturating_sub(overhead) / page_size as u64;
    pages.saturating_sub(page_table_pages(touched_pages, page_size)).max(1)
}

impl Side {
    fn of(k: &KernelRun) -> Self {
        Self {
            swap_outs: k.swap_outs,
            swap_ins: k.swap_ins,
            peak_pool_bytes: k.peak_pool_bytes,
            final_pool_bytes: k.final_pool_bytes,
            file_faults: k.file_faults,
            file_refaults: k.file_refaults,
        }
    }
}

/// The run with the median swap-outs (the lower of the two middle ones for an even count), so
/// that every figure of the kernel's side comes from one run. `None` for no runs.
pub fn median_run(runs: &[Side]) -> Option<usize> {
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by_key(|&i| (runs[i].swap_outs, i));
    order.get(runs.len().saturating_sub(1) / 2).copied()
}

/// Runs the kernel's side `cfg.kernel_runs` times (see the module doc): the successful runs and
/// the failures' reasons. Set-up failures and interruptions end it at once; a failed player
/// does too when it was the only run asked for.
pub fn kernel_runs(
    pages: &[u8],
    trace: &[Access],
    cfg: &ValidateConfig,
    player: &dyn Fn() -> Command,
    stop: &AtomicBool,
    progress: &dyn Progress,
) -> Result<(Vec<KernelRun>, Vec<String>), LabError> {
    let kcfg = KernelRunConfig {
        memory_limit: cfg.ram_bytes,
        algorithm: cfg.algorithm.clone(),
        page_size: cfg.page_size,
        timeout: cfg.timeout,
        flush_stats: cfg.flush_stats,
        flush_through_warm_up: cfg.flush_through_warm_up,
        file: cfg.file.clone(),
    };
    let wanted = cfg.kernel_runs.max(1);
    let (mut runs, mut failures) = (Vec::new(), Vec::new());
    for i in 0..wanted {
        if stop.load(Ordering::Relaxed) {
            return Err(KernelError::Interrupted.into());
        }
        progress.start(&format!("kernel run {} of {wanted}", i + 1), 1);
        let r = kernel::run(pages, trace, &kcfg, player(), stop);
        progress.finish();
        match r {
            Ok(k) => runs.push(k),
            Err(KernelError::PlayerFailed(why)) if wanted > 1 => failures.push(why),
            Err(e) => return Err(e.into()),
        }
    }
    if runs.is_empty() {
        return Err(KernelError::PlayerFailed(format!(
            "all {wanted} kernel runs failed; the first: {}",
            failures.first().map_or("", String::as_str)
        ))
        .into());
    }
    Ok((runs, failures))
}

/// The number of pages in `pages`, after checking that there are some, that the trace is not
/// empty and that it touches no page past the set: what every validation refuses before the
/// kernel is touched.
pub fn check_input(pages: &[u8], trace: &[Access], page_size: usize) -> Result<u64, LabError> {
    let n = (pages.len() / page_size) as u64;
    if n == 0 || trace.is_empty() {
        return Err(LabError::NoPages);
    }
    if let Some(a) = trace.iter().find(|a| !a.file && a.page >= n) {
        return Err(LabError::Setup(format!(
            "trace touches page {} but the page set has {n} pages",
            a.page
        )));
    }
    Ok(n)
}

/// How many distinct pages of an `n`-page set `trace` touches.
pub fn distinct_pages(trace: &[Access], n: u64) -> u64 {
    let mut seen = vec![false; n as usize];
    let anon = trace.iter().filter(|a| !a.file);
    anon.filter(|a| !std::mem::replace(&mut seen[a.page as usize], true)).count() as u64
}

/// Distinct pages of the trace's file it reads (0 without page cache): mapped by the player
/// beside its region, so their page tables are charged too.
pub fn distinct_file_pages(trace: &[Access]) -> u64 {
    let mut seen = std::collections::HashSet::new();
    trace.iter().filter(|a| a.file && seen.insert(a.page)).count() as u64
}

/// Validates the replay of `trace` over `pages` against the kernel. `player` makes the command
/// that starts a player (the caller's binary in its player mode); each kernel run starts one
/// inside its cgroup. `stop` (a signal handler's flag) interrupts the kernel's runs.
pub fn run(
    pages: &[u8],
    trace: &[Access],
    cfg: &ValidateConfig,
    player: &dyn Fn() -> Command,
    stop: &AtomicBool,
    progress: &dyn Progress,
) -> Result<Validation, LabError> {
    let ps = cfg.page_size;
    let n = check_input(pages, trace, ps)?;
    let touched_pages = distinct_pages(trace, n);
    let dir = std::path::Path::new(crate::zswap_swap::DEFAULT_SWAP_DIR);
    let file = match &cfg.file {
        Some(f) => Some(f.clone()),
        None => crate::page_cache::TraceFile::for_trace(trace, dir, ps)?,
    };
    let cfg = &ValidateConfig { file, ..cfg.clone() };
    let (mut runs, kernel_failures) = kernel_runs(pages, trace, cfg, player, stop, progress)?;
    let sides: Vec<Side> = runs.iter().map(Side::of).collect();
    let k = runs.swap_remove(median_run(&sides).expect("at least one run"));

    // Page tables: the region's touched pages and the file's.
    let mapped = touched_pages + distinct_file_pages(trace);
    let ram_pages = replay_ram_pages(cfg.ram_bytes, k.player_overhead_bytes, mapped, ps);
    // The machine's readahead settings (the kernel's defaults where unreadable), so both sides
    // run the same; with zram as the swap neither side's faults read ahead.
    let (readahead, page_cluster) = match zmem_kernel::stat::swap_readahead() {
        Ok(l) if !l.vma_ra_enabled => (Readahead::Cluster, l.page_cluster),
        Ok(l) => (Readahead::Vma, l.page_cluster),
        Err(_) => (Readahead::Vma, replay::DEFAULT_PAGE_CLUSTER),
    };
    let (stats_flush, replayed) =
        as_the_kernel_flushed(trace, (cfg.flush_stats, cfg.flush_through_warm_up), k.play_secs);
    let rcfg = ReplayConfig {
        // The player maps the file MADV_RANDOM (`player.rs`): no recency.
        file_recency: false,
        ram_pages,
        swap: SwapKind::Zram,
        algo: cfg.algorithm.clone(),
        pool: "zsmalloc".into(),
        page_size: ps,
        readahead,
        page_cluster,
        // The kernel run's memcg, made under the root, reclaims at vm.swappiness.
        swappiness: zmem_experiments::machine::swappiness(None),
        stats_flush,
        ..ReplayConfig::default()
    };
    let r = replay::run(pages, &replayed, &rcfg, progress)?;
    let kernel = Side::of(&k);
    let kernel_ra = k.readahead;
    let zmem = Side {
        swap_outs: r.swap_outs - r.zero_swap_outs,
        swap_ins: r.swap_ins - r.zero_swap_ins,
        peak_pool_bytes: r.max_pool_bytes,
        final_pool_bytes: r.counter("mem_used_total"),
        file_faults: r.file_faults,
        file_refaults: r.file_refaults,
    };
    Ok(Validation {
        kernel,
        zmem,
        error: Errors::between(&zmem, &kernel),
        setup: Setup {
            algorithm: cfg.algorithm.clone(),
            pages: n,
            touched_pages,
            accesses: trace.len() as u64,
            ram_bytes: cfg.ram_bytes,
            replay_ram_pages: ram_pages,
        },
        kernel_run: k,
        kernel_runs: sides,
        kernel_failures,
        readahead: ReadaheadSides {
            mode: readahead,
            page_cluster,
            kernel: kernel_ra,
            zmem: ReadaheadCounters { swap_ra: r.swap_ra, swap_ra_hit: r.swap_ra_hit },
            kernel_scope: KERNEL_RA_SCOPE,
        },
        verified: r.verified,
    })
}

/// How the replay reads the memcg's statistics to match the kernel's runs, and the trace it
/// takes: flushed at every sample (`flush_stats`), the model as it is, on the trace as it is;
/// else the kernel's own flushes, on the player's clock (the player runs flat out, not at the
/// trace's times: the trace at the median run's pace, `play_secs`), as for a new memcg or,
/// flushed through the warm-up (`warm_up`), for a running workload.
pub(crate) fn as_the_kernel_flushed(
    trace: &[Access],
    (flush_stats, warm_up): (bool, bool),
    play_secs: f64,
) -> (StatsFlush, Cow<'_, [Access]>) {
    match (flush_stats, warm_up) {
        (true, _) => (StatsFlush::Always, Cow::Borrowed(trace)),
        (false, true) => (StatsFlush::KERNEL, Cow::Owned(paced(trace, play_secs))),
        (false, false) => (StatsFlush::KERNEL_NEW_MEMCG, Cow::Owned(paced(trace, play_secs))),
    }
}

/// `trace` at an even pace over `secs`: access `i` of `n` at `i * secs / n`.
pub(crate) fn paced(trace: &[Access], secs: f64) -> Vec<Access> {
    let step = secs.max(0.0) * 1e9 / trace.len().max(1) as f64;
    trace
        .iter()
        .enumerate()
        .map(|(i, a)| Access { time_ns: (i as f64 * step) as u64, ..*a })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paced_trace_keeps_its_accesses_and_spreads_them_over_the_run() {
        let t: Vec<Access> =
            (0..4).map(|p| Access { page: p, write: p == 2, file: false, time_ns: 7 }).collect();
        let p = paced(&t, 2.0);
        assert_eq!(
            p.iter().map(|a| a.time_ns).collect::<Vec<_>>(),
            [0, 500_000_000, 1_000_000_000, 1_500_000_000]
        );
        assert!(
            p.iter().zip(&t).all(|(a, b)| (a.page, a.write, a.file) == (b.page, b.write, b.file))
        );
    }

    #[test]
    fn relative_errors_are_against_the_kernel() {
        assert_eq!(relative_error(110, 100), Some(0.1));
        assert_eq!(relative_error(75, 100), Some(-0.25));
        assert_eq!(relative_error(0, 0), Some(0.0));
        assert_eq!(relative_error(5, 0), None);
        assert_eq!(relative_error(0, 8), Some(-1.0));
        let side = |swap_outs, swap_ins| Side {
            swap_outs,
            swap_ins,
            peak_pool_bytes: 4096,
            ..Side::default()
        };
        let (k, z) = (side(200, 50), side(210, 40));
        let e = Errors::between(&z, &k);
        assert_eq!(e.swap_outs, Some(0.05));
        assert_eq!(e.swap_ins, Some(-0.2));
        assert_eq!(e.peak_pool_bytes, Some(0.0));
        assert_eq!(e.final_pool_bytes, Some(0.0));
    }

    #[test]
    fn the_replay_gets_the_limit_less_the_player_and_its_page_tables() {
        // 4 MiB limit, 256 KiB of player, 1000 pages touched: two page-table pages.
        assert_eq!(replay_ram_pages(4 << 20, 256 << 10, 1000, 4096), 1024 - 64 - 2);
        assert_eq!(replay_ram_pages(4 << 20, 0, 512, 4096), 1023);
        // Never below one page.
        assert_eq!(replay_ram_pages(4096, 1 << 20, 10, 4096), 1);
    }

    #[test]
    fn the_kernel_side_is_the_run_with_the_median_swap_outs() {
        let side = |swap_outs, swap_ins| Side { swap_outs, swap_ins, ..Side::default() };
        assert_eq!(median_run(&[]), None);
        assert_eq!(median_run(&[side(5, 1)]), Some(0));
        // The whole run is taken, not each figure's median: run 2 has the median swap-outs.
        let runs = [side(28_665, 900), side(16_667, 5_000), side(16_700, 10)];
        assert_eq!(median_run(&runs), Some(2));
        // An even count takes the lower middle; ties keep the earlier run.
        assert_eq!(median_run(&[side(9, 0), side(3, 0), side(7, 0), side(1, 0)]), Some(1));
        assert_eq!(median_run(&[side(4, 0), side(4, 1), side(4, 2)]), Some(1));
    }

    #[test]
    fn bad_input_fails_before_the_kernel_is_touched() {
        let pages = vec![1u8; 4 * 4096];
        let cfg = ValidateConfig {
            ram_bytes: 8192,
            algorithm: "lzo-rle".into(),
            page_size: 4096,
            timeout: Duration::from_secs(1),
            kernel_runs: 1,
            flush_stats: true,
            flush_through_warm_up: false,
            file: None,
        };
        let cmd = || Command::new("/nonexistent/zmem-player");
        let far = [Access { page: 9, write: false, file: false, time_ns: 0 }];
        let go = AtomicBool::new(false);
        let e = run(&pages, &far, &cfg, &cmd, &go, &zmem_sim::NoProgress).unwrap_err().to_string();
        assert!(e.contains("page 9"), "{e}");
        let e = run(&pages, &[], &cfg, &cmd, &go, &zmem_sim::NoProgress).unwrap_err();
        assert!(matches!(e, LabError::NoPages), "{e}");
        // A file read's id is a file page's: not checked against the page set, not counted
        // among its touched pages (it was an index past them), counted among the file's.
        let file = [Access { page: 9, write: false, file: true, time_ns: 0 }];
        assert_eq!(check_input(&pages, &file, 4096).unwrap(), 4);
        let anon = Access { page: 1, file: false, ..file[0] };
        let mixed = [file[0], anon, anon, Access { page: 1, ..file[0] }];
        assert_eq!((distinct_pages(&mixed, 4), distinct_file_pages(&mixed)), (1, 2));
    }
}

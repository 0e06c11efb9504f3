//! What `zmem validate lab` reports for one configuration, the lab's side beside the kernel's:
//! the figures, their relative errors, and the configurations it could not run. Shared by the
//! zram checks (`lab`) and the zswap ones (`zswap_lab`).

use serde::Serialize;

use crate::replay::{KernelRun, Side, relative_error};

/// One side's figures for one configuration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Figures {
    /// The pool the configuration costs: its peak.
    pub pool_bytes: u64,
    pub peak_pool_bytes: u64,
    pub final_pool_bytes: u64,
    pub swap_outs: u64,
    pub swap_ins: u64,
    /// CPU seconds of the swap work over the run (see the module doc for each side's).
    pub cpu_seconds: f64,
    pub swap_in_p50_ns: u64,
    pub swap_in_p99_ns: u64,
    /// File faults of pages evicted before (`workingset_refault_file`): page cache only.
    pub file_refaults: u64,
}

/// One kernel run's swap-in latency as its player timed it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RunLatency {
    pub p50_ns: u64,
    pub p99_ns: u64,
}

impl RunLatency {
    pub(crate) fn of(k: &KernelRun) -> Self {
        Self { p50_ns: k.swap_in_p50_ns, p99_ns: k.swap_in_p99_ns }
    }

    /// The kernel's figures from its runs: the median of the runs' p50s and, apart, of their
    /// p99s (the lower middle for an even count). A run's p50 moves by 10-20 % between two
    /// back-to-back runs of the same configuration here, and the run with the median swap-outs
    /// (whose counts the kernel's side gives) is no likelier than another to hold the median
    /// latency, so one run's figure would be noise.
    pub(crate) fn median(runs: &[Self]) -> Self {
        let mid = |mut v: Vec<u64>| {
            v.sort_unstable();
            v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0)
        };
        Self {
            p50_ns: mid(runs.iter().map(|r| r.p50_ns).collect()),
            p99_ns: mid(runs.iter().map(|r| r.p99_ns).collect()),
        }
    }
}

/// The prediction's relative error on each figure, `(predicted - kernel) / kernel`; `None`
/// where the kernel's figure is 0 and the prediction's is not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct FigureErrors {
    pub pool_bytes: Option<f64>,
    pub peak_pool_bytes: Option<f64>,
    pub final_pool_bytes: Option<f64>,
    pub swap_outs: Option<f64>,
    pub swap_ins: Option<f64>,
    pub cpu_seconds: Option<f64>,
    pub swap_in_p50_ns: Option<f64>,
    pub swap_in_p99_ns: Option<f64>,
    pub file_refaults: Option<f64>,
}

/// The share of the pages the replay's reclaim freed that were swap-outs, not file pages
/// dropped (1 without page cache): what a fault's reclaim batch swaps out
/// (`zmem_lab::cost::swap_in_end_to_end_beside_cache`).
pub(crate) fn anon_share(r: &zmem_sim::replay::ReplayResult) -> f64 {
    let all = r.swap_outs + r.file_evictions;
    if all == 0 { 1.0 } else { r.swap_outs as f64 / all as f64 }
}

/// The kernel's CPU seconds for the replay's file refaults
/// (`zmem_lab::cost::FILE_REFAULT_NS` each).
pub(crate) fn file_refault_secs(r: &zmem_sim::replay::ReplayResult) -> f64 {
    r.file_refaults as f64 * zmem_lab::cost::FILE_REFAULT_NS / 1e9
}

/// [`relative_error`] for real numbers.
pub(crate) fn relative_error_f(ours: f64, theirs: f64) -> Option<f64> {
    if theirs == 0.0 {
        return (ours == 0.0).then_some(0.0);
    }
    Some((ours - theirs) / theirs)
}

impl FigureErrors {
    pub fn between(predicted: &Figures, kernel: &Figures) -> Self {
        let (p, k) = (predicted, kernel);
        Self {
            pool_bytes: relative_error(p.pool_bytes, k.pool_bytes),
            peak_pool_bytes: relative_error(p.peak_pool_bytes, k.peak_pool_bytes),
            final_pool_bytes: relative_error(p.final_pool_bytes, k.final_pool_bytes),
            swap_outs: relative_error(p.swap_outs, k.swap_outs),
            swap_ins: relative_error(p.swap_ins, k.swap_ins),
            cpu_seconds: relative_error_f(p.cpu_seconds, k.cpu_seconds),
            swap_in_p50_ns: relative_error(p.swap_in_p50_ns, k.swap_in_p50_ns),
            swap_in_p99_ns: relative_error(p.swap_in_p99_ns, k.swap_in_p99_ns),
            file_refaults: relative_error(p.file_refaults, k.file_refaults),
        }
    }
}

/// One configuration checked.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigCheck {
    /// The candidate's name (`lzo-rle`, `lzo-rle + zstd(huge)`, ...).
    pub config: String,
    /// The zram attribute writes that make it.
    pub attributes: Vec<String>,
    /// The lab's pool for every page of the set (its policy measurement: what it orders by).
    pub lab_pool_bytes: u64,
    /// The kernel's pool for every page of the set, written to a fresh kernel zram device of
    /// the configuration (what the kernel is ordered by), and the lab's error on it.
    pub kernel_set_pool_bytes: u64,
    pub lab_pool_error: Option<f64>,
    /// The kernel's final pool per page stored at the end of the trace's median run.
    pub kernel_pool_bytes_per_page: f64,
    pub predicted: Figures,
    pub kernel: Figures,
    pub error: FigureErrors,
    /// The replay's resident pages (the limit less the player's charge, the least of the runs',
    /// and its page tables).
    pub replay_ram_pages: u64,
    /// The median kernel run's details.
    pub kernel_run: KernelRun,
    /// Every successful kernel run's figures, the player's CPU seconds in its faulting
    /// accesses in each less those of the baseline run just before it (the median is
    /// `kernel.cpu_seconds`), and the baseline runs' own, in order.
    pub kernel_runs: Vec<Side>,
    /// Each of those runs' swap-in latency (the medians are `kernel.swap_in_p50_ns` and
    /// `_p99_ns`: [`RunLatency::median`]).
    pub kernel_runs_latency: Vec<RunLatency>,
    pub kernel_runs_cpu_secs: Vec<f64>,
    pub baseline_runs_fault_cpu_secs: Vec<f64>,
    /// Why the runs that failed failed.
    pub kernel_failures: Vec<String>,
    /// The replay read back every page it swapped out, and the lab's measurement every page.
    pub verified: bool,
}

/// A candidate the kernel cannot run here, and why.
#[derive(Debug, Clone, Serialize)]
pub struct NotRun {
    pub config: String,
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::RunLatency;

    /// Each figure is its own median: p50 and p99 may come from different runs, and neither
    /// from the first run or the last.
    #[test]
    fn the_kernels_latency_is_the_median_of_its_runs() {
        let run = |p50_ns, p99_ns| RunLatency { p50_ns, p99_ns };
        let runs = [run(9, 100), run(4, 300), run(6, 200), run(5, 500), run(8, 400)];
        assert_eq!(RunLatency::median(&runs), run(6, 300));
        assert_eq!(RunLatency::median(&runs[..2]), run(4, 100), "the lower middle of two");
        assert_eq!(RunLatency::median(&[]), run(0, 0));
    }
}

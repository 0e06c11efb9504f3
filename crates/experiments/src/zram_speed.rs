//! `zmem zram-speed`: zmem's zram against the kernel's on the same pages and algorithm, one
//! thread each, in one run; and zmem's zram against its bare compressor. Ratios only: absolute
//! speeds on a shared machine mean little, ratios measured minutes apart mean more.

use std::time::Instant;

use serde::Serialize;

use crate::comp_bench::{self, AlgoSpec, Options};
use crate::zram_run;
use crate::{LabError, NoProgress};
use zmem_sim::device::ZramRunConfig;

/// Rounds `zmem zram-speed` runs unless told otherwise.
pub const DEFAULT_ROUNDS: usize = 5;

/// One round: the kernel, zmem's zram and the bare compressor, back to back.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Round {
    pub zmem_write_mbps: f64,
    pub zmem_read_mbps: f64,
    /// None where the kernel oracle is unavailable.
    pub kernel_write_mbps: Option<f64>,
    pub kernel_read_mbps: Option<f64>,
    pub compressor_mbps: f64,
}

impl Round {
    pub fn write_ratio(&self) -> Option<f64> {
        self.kernel_write_mbps.map(|k| self.zmem_write_mbps / k)
    }
    pub fn read_ratio(&self) -> Option<f64> {
        self.kernel_read_mbps.map(|k| self.zmem_read_mbps / k)
    }
    /// zram write speed over the bare compressor's: the engine's overhead.
    pub fn engine_ratio(&self) -> f64 {
        self.zmem_write_mbps / self.compressor_mbps
    }
}

/// Every round, and the median of each speed and of each per-round ratio. Medians of ratios
/// taken within a round, because the machine's load drifts between rounds and both sides of a
/// ratio see the same load only when measured back to back.
#[derive(Debug, Clone, Serialize)]
pub struct ZramSpeed {
    pub algo: String,
    pub pages: u64,
    pub zmem_write_mbps: f64,
    pub zmem_read_mbps: f64,
    pub kernel_write_mbps: Option<f64>,
    pub kernel_read_mbps: Option<f64>,
    pub compressor_mbps: f64,
    pub write_ratio: Option<f64>,
    pub read_ratio: Option<f64>,
    pub engine_ratio: f64,
    pub rounds: Vec<Round>,
    pub verified: bool,
}

/// The median of `xs` (the mean of the middle two for an even count); NaN for none.
fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    let m = xs.len() / 2;
    if xs.len().is_multiple_of(2) { (xs[m - 1] + xs[m]) / 2.0 } else { xs[m] }
}

impl ZramSpeed {
    fn from_rounds(algo: &str, pages: u64, rounds: Vec<Round>, verified: bool) -> Self {
        let med = |f: &dyn Fn(&Round) -> f64| median(rounds.iter().map(f).collect());
        let med_opt = |f: &dyn Fn(&Round) -> Option<f64>| {
            let xs: Option<Vec<f64>> = rounds.iter().map(f).collect();
            xs.map(median)
        };
        Self {
            algo: algo.into(),
            pages,
            zmem_write_mbps: med(&|r| r.zmem_write_mbps),
            zmem_read_mbps: med(&|r| r.zmem_read_mbps),
            kernel_write_mbps: med_opt(&|r| r.kernel_write_mbps),
            kernel_read_mbps: med_opt(&|r| r.kernel_read_mbps),
            compressor_mbps: med(&|r| r.compressor_mbps),
            write_ratio: med_opt(&|r| r.write_ratio()),
            read_ratio: med_opt(&|r| r.read_ratio()),
            engine_ratio: med(&|r| r.engine_ratio()),
            rounds,
            verified,
        }
    }
}

/// The kernel's write and read MB/s for `pages` (dd, 1 MiB blocks, direct I/O, as
/// `kernel-zram-speed` does, docs/REFERENCES.md [live-zram-oracle]).
fn kernel_speed(algo: &str, pages: &[u8]) -> Result<(f64, f64), LabError> {
    use zmem_kernel::zram_device::KernelZram;
    fn oracle(e: impl std::fmt::Display) -> zmem_kernel::KernelError {
        zmem_kernel::KernelError::Oracle(e.to_string())
    }
    // A private directory (zmem-files): the pages are memory contents.
    let dir = zmem_files::PrivateTempDir::new("zmem-speed").map_err(oracle)?;
    let file = dir.write_file("pages", pages).map_err(oracle)?;
    let result = (|| {
        let dev = KernelZram::hot_add().map_err(oracle)?;
        dev.init(algo, pages.len() as u64).map_err(oracle)?;
        let t = Instant::now();
        dev.write_file(&file).map_err(oracle)?;
        let write = pages.len() as f64 / t.elapsed().as_secs_f64() / 1e6;
        let mib = pages.len() / (1 << 20);
        let t = Instant::now();
        dev.read_to_null(mib).map_err(oracle)?;
        let read = (mib << 20) as f64 / t.elapsed().as_secs_f64() / 1e6;
        Ok((write, read))
    })();
    drop(dir);
    result
}

/// Runs `rounds` rounds (at least one). In each, the kernel's device (where the oracle is
/// available), zmem's and the bare compressor run back to back, the kernel first in even rounds
/// and last in odd ones, so neither side always runs on a warmer or busier machine.
pub fn run(
    algo: &str,
    pages: &[u8],
    rounds: usize,
    progress: &dyn crate::Progress,
) -> Result<ZramSpeed, LabError> {
    let whole = &pages[..pages.len() / 4096 * 4096];
    if whole.len() < 1 << 20 {
        let have = (whole.len() / 4096) as u64;
        return Err(LabError::TooFewPages { what: "zram-speed (1 MiB)", need: 256, have });
    }
    let oracle = zmem_kernel::zram_device::unavailable_reason().is_none();
    let cfg = ZramRunConfig { algo: algo.into(), ..ZramRunConfig::default() };
    let spec = AlgoSpec::parse(algo)?;
    // Two passes, the faster counts: the first also pays the page faults of comp-bench's
    // freshly allocated output slots, which are no part of the compressor's cost.
    let opts = Options { min_time: std::time::Duration::MAX, max_passes: 2, ..Options::default() };
    let rounds = rounds.max(1);
    let mut done = Vec::with_capacity(rounds);
    let mut verified = true;
    let mut n_pages = 0;
    progress.start("rounds", rounds as u64);
    for k in 0..rounds {
        let kernel_first = k % 2 == 0;
        let mut kernel = None;
        if oracle && kernel_first {
            kernel = Some(kernel_speed(algo, whole)?);
        }
        let ours = zram_run::run(whole, &cfg, &NoProgress)?;
        let rows = comp_bench::run(&[whole], std::slice::from_ref(&spec), &opts, &NoProgress)?;
        if oracle && !kernel_first {
            kernel = Some(kernel_speed(algo, whole)?);
        }
        verified &= ours.verified && rows[1].verified;
        n_pages = ours.pages;
        done.push(Round {
            zmem_write_mbps: ours.write_mbps,
            zmem_read_mbps: ours.read_mbps,
            kernel_write_mbps: kernel.map(|k| k.0),
            kernel_read_mbps: kernel.map(|k| k.1),
            compressor_mbps: rows[1].comp_mbps,
        });
        progress.advance(1);
    }
    progress.finish();
    Ok(ZramSpeed::from_rounds(algo, n_pages, done, verified))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_takes_the_middle_and_averages_an_even_pair() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(Vec::new()).is_nan());
    }

    #[test]
    fn ratios_are_medians_of_per_round_ratios() {
        let round = |zw: f64, kw: f64| Round {
            zmem_write_mbps: zw,
            zmem_read_mbps: 2.0 * zw,
            kernel_write_mbps: Some(kw),
            kernel_read_mbps: Some(kw),
            compressor_mbps: zw,
        };
        // Per-round write ratios 3, 1 and 0.5: their median is 1, where the ratio of the
        // median speeds (150 / 100) would say 1.5.
        let r = ZramSpeed::from_rounds(
            "lz4",
            1,
            vec![round(300.0, 100.0), round(100.0, 100.0), round(150.0, 300.0)],
            true,
        );
        assert_eq!(r.write_ratio, Some(1.0));
        assert_eq!(r.read_ratio, Some(2.0));
        assert_eq!(r.engine_ratio, 1.0);
        assert_eq!(r.zmem_write_mbps, 150.0);
        assert_eq!(r.kernel_write_mbps, Some(100.0));
        let no_kernel = Round { kernel_write_mbps: None, ..round(1.0, 1.0) };
        let r = ZramSpeed::from_rounds("lz4", 1, vec![no_kernel], true);
        assert_eq!(r.write_ratio, None);
    }
}

//! `zmem lab`: the main job. Given a page set (this machine's memory, or the built-in one), it
//! measures every compressor, every allocator and a set of zram multi-compression policies on
//! those pages, then recommends a configuration with the numbers behind it.
//!
//! Measuring is here; [`crate::report`] turns a [`LabReport`] into the terminal summary, JSON and
//! the HTML report. The report's JSON shape is documented by `docs/lab-report.schema.json`.

mod latency;
mod policy;
mod recommend;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::comp_bench::{self, AlgoSpec, Options};
use crate::{LabError, Progress};

pub use latency::LatencySummary;
pub use policy::{Policy, PolicyRow, default_policies};
pub use recommend::{Recommendation, recommend};

/// Bumped whenever a field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 1;

/// Where the pages came from, for the report's first line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Source {
    /// `captured`, `file` or `builtin`.
    pub kind: String,
    /// Human description: what was captured, which file, or why the built-in set was used.
    pub detail: String,
    pub pages: u64,
    pub page_size: usize,
}

/// One allocator holding the pages zram stored with the default algorithm.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AllocatorRow {
    pub allocator: String,
    /// Pages the pool holds after every page was written, in bytes (mm_stat mem_used_total).
    pub pool_bytes: u64,
    /// pool_bytes relative to zsmalloc's (1.0 = zsmalloc).
    pub relative_to_zsmalloc: f64,
    /// Pages the allocator could not hold (zbud cannot hold a raw 4 KiB page).
    pub rejected_pages: u64,
    pub write_mbps: f64,
}

/// Everything one lab run measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LabReport {
    pub schema_version: u32,
    pub zmem_version: String,
    pub source: Source,
    pub compressors: Vec<comp_bench::Row>,
    pub allocators: Vec<AllocatorRow>,
    pub policies: Vec<PolicyRow>,
    pub recommendation: Recommendation,
}

/// Knobs of a lab run.
#[derive(Debug, Clone)]
pub struct LabOptions {
    /// Minimum time per compressor pass (the comp-bench `min_time`).
    pub min_time: Duration,
    /// Policies to compare; [`default_policies`] unless set.
    pub policies: Vec<Policy>,
}

impl Default for LabOptions {
    fn default() -> Self {
        Self { min_time: Duration::from_millis(50), policies: default_policies() }
    }
}

/// Runs every experiment on `pages` (whole pages of `source.page_size`).
pub fn run(
    pages: &[u8],
    source: Source,
    opts: &LabOptions,
    progress: &dyn Progress,
) -> Result<LabReport, LabError> {
    let ps = source.page_size;
    let pages = &pages[..pages.len() / ps * ps];
    if pages.is_empty() {
        return Err(LabError::NoPages);
    }
    let bench =
        Options { page_size: ps, min_time: opts.min_time, max_passes: 20, ..Options::default() };
    let compressors = comp_bench::run(&[pages], &AlgoSpec::all(), &bench, progress)?;
    let allocators = allocator_table(pages, ps, progress)?;
    let policies = opts
        .policies
        .iter()
        .map(|p| policy::measure(p, pages, ps, progress))
        .collect::<Result<Vec<_>, _>>()?;
    let recommendation = recommend(&policies)?;
    Ok(LabReport {
        schema_version: SCHEMA_VERSION,
        zmem_version: env!("CARGO_PKG_VERSION").into(),
        source,
        compressors,
        allocators,
        policies,
        recommendation,
    })
}

/// zram with the default algorithm over each allocator: the pool each needs for the same pages.
fn allocator_table(
    pages: &[u8],
    ps: usize,
    progress: &dyn Progress,
) -> Result<Vec<AllocatorRow>, LabError> {
    let mut rows = Vec::new();
    for alloc in zmem_pool::allocators() {
        let cfg = crate::zram_run::ZramRunConfig {
            pool: alloc.name.into(),
            page_size: ps,
            ..Default::default()
        };
        let n = pages.len() / ps;
        let z = crate::zram_run::build_device(&cfg, n as u64)?;
        progress.start(&format!("pool {}", alloc.name), n as u64);
        let start = std::time::Instant::now();
        let mut rejected = 0;
        for (i, page) in pages.chunks_exact(ps).enumerate() {
            if z.write_page(i as u64, page).is_err() {
                rejected += 1;
            }
            if i % 256 == 255 {
                progress.advance(256);
            }
        }
        let secs = start.elapsed().as_secs_f64();
        progress.finish();
        rows.push(AllocatorRow {
            allocator: alloc.name.into(),
            pool_bytes: z.mm_stat().mem_used_total,
            relative_to_zsmalloc: 0.0,
            rejected_pages: rejected,
            write_mbps: pages.len() as f64 / secs / 1e6,
        });
    }
    let base = rows.iter().find(|r| r.allocator == "zsmalloc").map_or(0, |r| r.pool_bytes);
    for r in &mut rows {
        r.relative_to_zsmalloc = if base == 0 { 0.0 } else { r.pool_bytes as f64 / base as f64 };
    }
    Ok(rows)
}

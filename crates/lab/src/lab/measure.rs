//! Step 2 of the lab, the measurements that are not a table of their own elsewhere: the
//! allocators under zram, and zram against zswap under memory pressure.
//!
//! Takes the pages of step 1; gives [`PoolRow`]s and [`SwapRow`]s.

use crate::cputime::Stopwatch;
use crate::replay::{self, ReplayConfig, SwapKind};
use crate::zram_run::{OnRefusal, ZramRunConfig, build_device, write_pages};
use crate::{LabError, Progress};

use super::{PoolRow, SwapRow};

/// zram and zswap (default algorithm, zsmalloc) replaying one trace (the generated one, or the
/// user's) at RAM budgets of a quarter and a half of the page set.
pub(super) fn swap(
    pages: &[u8],
    ps: usize,
    accesses: &[replay::Access],
    progress: &dyn Progress,
) -> Result<Vec<SwapRow>, LabError> {
    let n = (pages.len() / ps) as u64;
    // The trace's span: what its swap-ins and swap-outs are per second of.
    let trace_secs = accesses.last().map_or(0.0, |a| a.time_ns as f64 / 1e9);
    let mut rows = Vec::new();
    for fraction in [4, 2] {
        for swap in [SwapKind::Zram, SwapKind::Zswap] {
            let cfg = ReplayConfig {
                ram_pages: (n / fraction).max(1),
                swap,
                algo: zmem_zram::DEFAULT_ALGORITHM.into(),
                page_size: ps,
                ..ReplayConfig::default()
            };
            let r = replay::run(pages, accesses, &cfg, progress)?;
            rows.push(SwapRow {
                swap: format!("{swap:?}").to_lowercase(),
                ram_pages: r.ram_pages,
                pages: r.pages,
                accesses: r.accesses,
                swap_outs: r.swap_outs,
                swap_ins: r.swap_ins,
                max_pool_bytes: r.max_pool_bytes,
                disk_reads: r.disk_reads,
                disk_writes: r.disk_writes,
                store_p99_ns: r.store_hist.p99_ns,
                load_p50_ns: r.load_hist.p50_ns,
                load_p99_ns: r.load_hist.p99_ns,
                cpu_seconds: r.cpu_secs,
                trace_secs,
                verified: r.verified,
            });
        }
    }
    Ok(rows)
}

/// zram with the default algorithm over each allocator: the pool each needs for the same pages.
pub(super) fn pools(
    pages: &[u8],
    ps: usize,
    progress: &dyn Progress,
) -> Result<Vec<PoolRow>, LabError> {
    let mut rows = Vec::new();
    for alloc in zmem_pool::allocators() {
        let cfg = ZramRunConfig { pool: alloc.name.into(), page_size: ps, ..Default::default() };
        let n = pages.len() / ps;
        let z = build_device(&cfg, n as u64)?;
        progress.start(&format!("pool {}", alloc.name), n as u64);
        let clock = Stopwatch::start();
        let label = format!("{} on {}", cfg.algo, alloc.name);
        let rejected = write_pages(&z, pages, ps, 0, OnRefusal::Count, &label, progress)?;
        let secs = clock.elapsed().wall_secs;
        progress.finish();
        rows.push(PoolRow {
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

//! Step 2 of the lab, the measurements that are not a table of their own elsewhere: the
//! allocators under zram, and zram against zswap under memory pressure.
//!
//! Takes the pages of step 1; gives [`PoolRow`]s and [`SwapRow`]s.

use serde::{Deserialize, Serialize};

use crate::{LabError, Progress};
use zmem_experiments::objects::{Charged, Objects};
use zmem_sim::cputime::Stopwatch;
use zmem_sim::device::{OnRefusal, ZramRunConfig, build_device, write_pages_with};
use zmem_sim::replay::{self, Access, ReplayConfig, SwapKind};
use zmem_sim::swap_device::SwapDevice;

#[cfg(test)]
use crate::evidence::trace_for;
use crate::policy::{Policy, PolicyRow};

/// One allocator holding the pages zram stored with the default algorithm.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PoolRow {
    pub allocator: String,
    /// Pages the pool holds after every page was written, in bytes (mm_stat mem_used_total).
    pub pool_bytes: u64,
    /// pool_bytes relative to zsmalloc's (1.0 = zsmalloc).
    pub relative_to_zsmalloc: f64,
    /// Pages the allocator could not hold (zbud cannot hold a raw 4 KiB page).
    pub rejected_pages: u64,
    pub write_mbps: f64,
}

/// One replay of a generated access trace with RAM smaller than the page set: what each kind of
/// swap costs when memory is short.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SwapRow {
    /// `zram` or `zswap` (zswap in front of a swap file, max_pool_percent 20).
    pub swap: String,
    pub ram_pages: u64,
    pub pages: u64,
    pub accesses: u64,
    pub swap_outs: u64,
    pub swap_ins: u64,
    pub max_pool_bytes: u64,
    /// Pages read from / written to the swap file (always 0 for zram, which has no disk here).
    pub disk_reads: u64,
    pub disk_writes: u64,
    pub store_p99_ns: u64,
    /// Every swap-in, end to end (a zswap miss includes its device read).
    pub load_p50_ns: u64,
    pub load_p99_ns: u64,
    /// Swap-ins served from memory (a zswap hit; zram's read) and their latency.
    #[serde(default)]
    pub hit_swap_ins: u64,
    #[serde(default)]
    pub hit_p50_ns: u64,
    #[serde(default)]
    pub hit_p99_ns: u64,
    /// Swap-ins that read the device (a zswap miss; a zram slot written back), end to end.
    #[serde(default)]
    pub device_swap_ins: u64,
    #[serde(default)]
    pub device_p50_ns: u64,
    #[serde(default)]
    pub device_p99_ns: u64,
    /// Seconds the swap device is busy with the replay's reads and writes (charged latencies).
    #[serde(default)]
    pub device_seconds: f64,
    pub cpu_seconds: f64,
    /// Times zswap's pool hit its limit (debugfs `pool_limit_hit`; 0 for zram): where it
    /// did, accept_threshold_percent matters and the lab tries other values.
    #[serde(default)]
    pub pool_limit_hit: u64,
    /// Pages zswap wrote back to the device (`zswpwb`; 0 for zram): each decompressed first.
    #[serde(default)]
    pub written_back: u64,
    /// Seconds the trace spans (its last access's time): swap-ins / trace_secs is a rate.
    pub trace_secs: f64,
    pub verified: bool,
}

/// The replays of [`swap`]: RAM of a quarter, then a half of the page set, zram then zswap.
pub(super) const SWAP_CASES: [(u64, SwapKind); 4] =
    [(4, SwapKind::Zram), (4, SwapKind::Zswap), (2, SwapKind::Zram), (2, SwapKind::Zswap)];

/// zram and zswap (default algorithm, zsmalloc) replaying one generated trace at RAM budgets of
/// a quarter and a half of the page set ([`SWAP_CASES`], one [`swap_row`] each), zswap's swap
/// file charged with `device`'s latencies.
#[cfg(test)]
pub(super) fn swap(
    pages: &[u8],
    ps: usize,
    device: &SwapDevice,
    progress: &dyn Progress,
) -> Result<Vec<SwapRow>, LabError> {
    let accesses = trace_for((pages.len() / ps) as u64)?;
    SWAP_CASES
        .iter()
        .map(|&(fraction, kind)| {
            swap_row(pages, ps, &accesses, fraction, kind, device, &[], progress)
        })
        .collect()
}

/// One replay of `accesses` ([`super::evidence::trace_for`] of the page set) with RAM of `1 / fraction` of the pages,
/// its stores taking their objects from `objects` ([`swap_row_with`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn swap_row(
    pages: &[u8],
    ps: usize,
    accesses: &[Access],
    fraction: u64,
    swap: SwapKind,
    device: &SwapDevice,
    objects: &[&Objects],
    progress: &dyn Progress,
) -> Result<SwapRow, LabError> {
    let n = (pages.len() / ps) as u64;
    let cfg = ReplayConfig {
        ram_pages: (n / fraction).max(1),
        swap,
        algo: zmem_zram::DEFAULT_ALGORITHM.into(),
        page_size: ps,
        device: device.clone(),
        ..ReplayConfig::default()
    };
    swap_row_with(pages, ps, accesses, &cfg, objects, progress)
}

/// One replay of `accesses` as `cfg` says (the zswap candidates' replays, [`crate::zswap`]).
///
/// zswap's stores, and the zram device's writes, take the compressed object of each page from
/// `objects` (the compressor table's, [`crate::objects`]) where one was made with the replay's
/// algorithm at the same parameters, instead of compressing the page again: what is stored,
/// and so every count, pool and page of the row, is the same (zmem-sim's `tests/objects.rs`).
/// The timings keep their meaning: each store that took an object is charged what compressing
/// that page cost in the table's pass (its wall time in the store latency, `store_p99_ns`; its
/// CPU and wall time in the replay's, `cpu_seconds`), as [`Charged`] charges a zram device's
/// writes.
pub(super) fn swap_row_with(
    pages: &[u8],
    _ps: usize,
    accesses: &[Access],
    cfg: &ReplayConfig,
    objects: &[&Objects],
    progress: &dyn Progress,
) -> Result<SwapRow, LabError> {
    let swap = cfg.swap;
    // The trace's span: what its swap-ins and swap-outs are per second of.
    let trace_secs = accesses.last().map_or(0.0, |a| a.time_ns as f64 / 1e9);
    let source = Charged::new(objects.to_vec());
    let r = replay::run_with(pages, accesses, cfg, Some(&source), progress)?;
    let h = &r.swap_in_hists;
    // Served from memory, and from the device: one kind of each per swap.
    let (hit, dev) = match swap {
        SwapKind::Zram => (&h.zram, &h.zram_written_back),
        SwapKind::Zswap => (&h.zswap_hit, &h.zswap_miss),
    };
    Ok(SwapRow {
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
        hit_swap_ins: hit.count,
        hit_p50_ns: hit.p50_ns,
        hit_p99_ns: hit.p99_ns,
        device_swap_ins: dev.count,
        device_p50_ns: dev.p50_ns,
        device_p99_ns: dev.p99_ns,
        device_seconds: r.device_secs,
        cpu_seconds: r.cpu_secs,
        pool_limit_hit: r.counter("pool_limit_hit"),
        written_back: r.counter("zswpwb"),
        trace_secs,
        verified: r.verified,
    })
}

/// zram with the default algorithm over one allocator: the pool it needs for the pages. The
/// device takes the objects in `objects` instead of compressing ([`crate::objects`]); the write
/// speed then counts each such compression with the wall time it took where it was made.
pub(super) fn pool(
    alloc: &str,
    pages: &[u8],
    ps: usize,
    objects: &[&Objects],
    progress: &dyn Progress,
) -> Result<PoolRow, LabError> {
    let cfg = ZramRunConfig { pool: alloc.into(), page_size: ps, ..Default::default() };
    let n = pages.len() / ps;
    let z = build_device(&cfg, n as u64)?;
    progress.start(&format!("pool {alloc}"), n as u64);
    let source = Charged::new(objects.to_vec());
    let clock = Stopwatch::start();
    let label = format!("{} on {alloc}", cfg.algo);
    let rejected =
        write_pages_with(&z, pages, ps, 0, OnRefusal::Count, &label, Some(&source), progress)?;
    let secs = clock.elapsed().plus(source.take()).wall_secs;
    progress.finish();
    Ok(PoolRow {
        allocator: alloc.into(),
        pool_bytes: z.mm_stat().mem_used_total,
        relative_to_zsmalloc: 0.0,
        rejected_pages: rejected,
        write_mbps: pages.len() as f64 / secs / 1e6,
    })
}

/// Whether `p`'s device is the one [`pool`] builds for `alloc`: the default algorithm alone on
/// the default allocator, so its measurement gives that row without writing the pages again.
pub(super) fn is_pool_run(p: &Policy, alloc: &str) -> bool {
    let d = ZramRunConfig::default();
    alloc == d.pool
        && p.algo == d.algo
        && p.recomp.is_empty()
        && !p.mark_idle
        && p.recompress.is_none()
        && !p.dict
}

/// The row [`pool`] would give, from a policy that wrote the same pages to the same device
/// ([`is_pool_run`]): the pool is the policy's before any recompression, the write speed its
/// write's. A policy that refuses a page fails, so none was rejected.
pub(super) fn pool_from_policy(alloc: &str, p: &PolicyRow) -> PoolRow {
    PoolRow {
        allocator: alloc.into(),
        pool_bytes: p.pool_bytes_before_recompress,
        relative_to_zsmalloc: 0.0,
        rejected_pages: 0,
        write_mbps: p.orig_bytes as f64 / p.write_seconds / 1e6,
    }
}

/// Fills in each row's pool relative to zsmalloc's.
pub(super) fn relate_to_zsmalloc(rows: &mut [PoolRow]) {
    let base = rows.iter().find(|r| r.allocator == "zsmalloc").map_or(0, |r| r.pool_bytes);
    for r in rows {
        r.relative_to_zsmalloc = if base == 0 { 0.0 } else { r.pool_bytes as f64 / base as f64 };
    }
}

//! The cost model: what a measured zram configuration would cost and save on the user's whole
//! device, in the user's units (bytes of RAM, CPU seconds per second, microseconds of swap-in
//! latency), and whether it fits the user's budgets. Pure arithmetic: the measured
//! per-page costs come in ([`Measured`]), projected [`Candidate`]s come out.
//!
//! **Projection.** The lab measures `n` pages; the live device stores `N`
//! (`Now::stored_pages`; without a live device `N = n`). Every size scales by `N / n`:
//! `pool = pool_measured x N / n + extra` (`extra`: bytes a configuration keeps besides the
//! pool, e.g. a dictionary, counted once).
//!
//! **Memory saved against now**: `now_bytes - pool`, where `now_bytes` is the live device's
//! `mem_used_total` when there is one (fragmentation included, so the current configuration's
//! own row shows what re-packing the pool would give), else the projected pool of the current
//! configuration (which then saves exactly 0).
//!
//! **CPU seconds per second**:
//! `swap_outs/s x (compress + reclaim) + swap_ins/s x (decompress + fault) + recompressed/s x
//! recompress`, `compress`, `decompress` and `recompress` the thread CPU time per page measured
//! for the configuration, `reclaim` and `fault` the kernel's own work per swap-out and per
//! swap-in whatever the configuration (LRU scans, reverse-map walks, unmapping and TLB
//! flushes, swap slots and a bio per page; a fault, a page allocated and charged, mapped;
//! measured, not read from the source: [`SWAP_OVERHEAD`], priced at the measuring machine's
//! speed, [`Projection::kernel`] from [`crate::speed::KernelSpeed`]), and
//! `recompressed/s = min(swap_outs/s, N / period)`: a background pass every `period` seconds
//! recompresses each page at most once (6.18's drivers/block/zram/zram_drv.c
//! `scan_slots_for_recompress()` skips slots already at the last priority and INCOMPRESSIBLE
//! ones, and `recompress_slot()` marks INCOMPRESSIBLE a slot the last priority could not
//! shrink), so it can do no more than the pages swapped out since the last pass and no
//! more than the pages stored. The first pass over what the device holds already costs
//! `N x recompress` once (reported apart).
//!
//! **Latency**: the candidate's read p50/p99 less the current configuration's, both measured;
//! the p99 end to end ([`added_swap_in_p99`]), as the faulting task feels it where memory is
//! full: the read, and the reclaim batch the fault does, each page compressed by the candidate.
//!
//! **The budgets** ([`over_budget`]): a candidate is within them when it reads every page back,
//! uses at most the CPU budget (CPU seconds per second <= budget % / 100) and adds at most the
//! latency budget to the p99 swap-in. Which candidate to run is the judge's (`decision`), not
//! this module's.

use serde::{Deserialize, Serialize};

use crate::candidate::{Candidate, Config, OverBudget};

/// The limits the user sets.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Budgets {
    /// Most CPU the configuration may use, in percent of one core (`--cpu-budget`).
    pub cpu_percent_of_core: f64,
    /// Most the configuration may add to the p99 swap-in latency, in microseconds
    /// (`--latency-budget`).
    pub added_load_p99_us: f64,
    /// Seconds between two background recompression passes (the timer's period).
    pub recompress_period_secs: f64,
    /// Most memory idle for the cold age may come back, in percent of the working set (the
    /// bytes touched within T) per minute (`--promotion-budget`): Google's far memory holds
    /// its promotion under 0.2 % a minute (ASPLOS 2019).
    #[serde(default = "default_promotion")]
    pub promotion_percent_per_min: f64,
}

fn default_promotion() -> f64 {
    0.2
}

impl Default for Budgets {
    fn default() -> Self {
        Self {
            cpu_percent_of_core: 1.0,
            added_load_p99_us: 50.0,
            recompress_period_secs: 3600.0,
            promotion_percent_per_min: default_promotion(),
        }
    }
}

/// What was measured of one configuration on `pages` pages.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    pub policy: crate::policy::Policy,
    pub is_current: bool,
    pub verified: bool,
    /// Whether it recompresses in the background.
    pub recompresses: bool,
    pub pages: u64,
    /// Pool after every page was written (and recompressed), bytes.
    pub pool_bytes: u64,
    /// Bytes kept besides the pool, not scaled (a dictionary).
    pub extra_bytes: u64,
    /// Thread CPU ns per page: write (compress + store), read (load + decompress),
    /// recompression (idle marking, recompress, compact; per page stored).
    pub compress_ns: f64,
    pub decompress_ns: f64,
    pub recompress_ns: f64,
    pub load_p50_ns: u64,
    pub load_p99_ns: u64,
    /// Its pool for every page projected onto, estimated apart (a sample's estimate for its
    /// algorithm, `fit::Population`); none: projected from `pool_bytes`.
    pub estimated_pool: Option<u64>,
}

pub use crate::speed::{SWAP_OVERHEAD, SwapOverhead};

impl SwapOverhead {
    /// CPU seconds per second the kernel's own swap work takes at `t`.
    pub fn cpu_secs_per_sec(&self, t: Traffic) -> f64 {
        (t.swap_outs_per_sec * self.reclaim_ns_per_swap_out
            + t.swap_ins_per_sec * self.fault_ns_per_swap_in)
            / 1e9
    }
}

/// The kernel's CPU per file refault where reclaim keeps taking page cache: the major fault
/// (mm/filemap.c `filemap_fault()`: a folio allocated and charged, added to the page cache and
/// the LRU with its shadow's `workingset_refault()`, the read submitted and completed) and the
/// eviction that made room for it (`shrink_folio_list()`: the reverse-map walk and unmapping of
/// a mapped page, `__remove_mapping()` leaving a shadow). Measured, not read from the source,
/// on the machine kind [`SWAP_OVERHEAD`] was (2-core AMD EPYC VM, Linux 6.18, virtio disk):
/// `zmem validate lab`'s CPU seconds less the lab's swap work, over the file refaults, 14.1 us
/// on a trace a quarter file reads and 13.1 us on one 95 % file reads (docs/BENCHMARKS.md,
/// "Page cache").
pub const FILE_REFAULT_NS: f64 = 13_500.0;

/// The part of [`FILE_REFAULT_NS`] a reclaim spends dropping one mapped, clean file page (the
/// reverse-map walk, the unmapping and TLB flush, `__remove_mapping()`): what each file page of
/// a fault's reclaim batch adds to that fault ([`swap_in_end_to_end_beside_cache`]). Measured on
/// the same machine kind: the kernel's swap-in p99 less the batch's swap-outs, over its file
/// pages, 5-7 us where a quarter of the accesses read the file and 4-5 us where 95 % do
/// (docs/BENCHMARKS.md, "Page cache").
pub const FILE_EVICT_NS: f64 = 5_000.0;

/// Pages a fault's memory-cgroup charge reclaims when the cgroup is at its limit: mm/memcontrol.c
/// `try_charge_memcg()` calls mm/vmscan.c `try_to_free_mem_cgroup_pages()` with the charge's
/// pages, and that reclaims `max(nr_pages, SWAP_CLUSTER_MAX)`: 32 for a one-page swap-in.
pub const RECLAIM_BATCH: u64 = 32;

/// A swap-in as the faulting task feels it where memory is full (where swap-ins happen), p50
/// and p99 in ns, from the read's measured p50 and p99 (read and decompression) and the
/// configuration's compression CPU per page: every fault pays the kernel's fault path besides
/// the read (`fault_ns_per_swap_in` of `k`, [`crate::speed::KernelSpeed`]'s: the fault, the page
/// allocated and charged, the mapping); the fault whose charge finds the cgroup full reclaims
/// [`RECLAIM_BATCH`] pages itself, each a swap-out (`reclaim_ns_per_swap_out` and a
/// compression), and the faults after it take the pages it freed, so one fault in
/// `RECLAIM_BATCH` pays it: more than one in a hundred, so in the p99, not in the p50. The
/// parts are the model's, priced at this machine's speed ([`crate::speed`]; `zmem validate
/// lab` prints what it measures of this machine's beside them).
pub fn swap_in_end_to_end(
    k: SwapOverhead,
    read_p50_ns: u64,
    read_p99_ns: u64,
    compress_ns: f64,
) -> (u64, u64) {
    swap_in_end_to_end_beside_cache(k, read_p50_ns, read_p99_ns, compress_ns, 1.0)
}

/// [`swap_in_end_to_end`] where reclaim also takes page cache: of the [`RECLAIM_BATCH`] pages a
/// full cgroup's fault reclaims, only the share `anon_share` are swap-outs (what
/// `get_scan_count()` gave the anon lists over the run: the replay's swap-outs over its swap-outs
/// and file evictions); the others are clean file pages, dropped without a compression or a
/// write, at [`FILE_EVICT_NS`] each.
pub fn swap_in_end_to_end_beside_cache(
    k: SwapOverhead,
    read_p50_ns: u64,
    read_p99_ns: u64,
    compress_ns: f64,
    anon_share: f64,
) -> (u64, u64) {
    let fault = k.fault_ns_per_swap_in;
    let swap_outs = RECLAIM_BATCH as f64 * anon_share.clamp(0.0, 1.0);
    let file_pages = RECLAIM_BATCH as f64 - swap_outs;
    let reclaim =
        swap_outs * (k.reclaim_ns_per_swap_out + compress_ns) + file_pages * FILE_EVICT_NS;
    let p50 = read_p50_ns as f64 + fault;
    let p99 = read_p99_ns as f64 + fault + reclaim;
    (p50.round() as u64, p99.round() as u64)
}

/// What a candidate adds to the end-to-end p99 swap-in ([`swap_in_end_to_end`]) over the
/// configuration running now, in ns (negative: faster), from each one's read p99 and
/// compression CPU per page: the latency budget is checked on this, what the faulting task
/// feels, not on the read alone. The fault's own path is the same for both and cancels; the
/// reclaim batch a fault does at a full memory is [`RECLAIM_BATCH`] compressions of the
/// candidate's, so a slower compressor adds 32 times its extra CPU per page at the p99.
///
/// Measured compression CPU moves between two runs of the same pages by several per cent
/// ([`CPU_NOISE`]), and 32 times that is enough to flip a 50 us budget between two runs. So
/// only the part of the compression difference beyond the noise counts (the difference less
/// [`CPU_NOISE`] of the larger of the two, never past zero): continuous in the measurements, so
/// two runs that differ by noise give figures that differ by less than the noise, and a
/// compressor twice as slow still pays most of its difference.
pub fn added_swap_in_p99(read_p99_ns: u64, compress_ns: f64, now: (u64, f64)) -> i64 {
    let (now_read_p99, now_compress) = now;
    let diff = compress_ns - now_compress;
    let beyond = (diff.abs() - CPU_NOISE * compress_ns.max(now_compress)).max(0.0);
    let reclaim = RECLAIM_BATCH as f64 * beyond.copysign(diff);
    read_p99_ns as i64 - now_read_p99 as i64 + reclaim.round() as i64
}

/// Swap traffic the CPU cost is projected with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Traffic {
    pub swap_ins_per_sec: f64,
    pub swap_outs_per_sec: f64,
}

/// The scale of the projection and the baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Projection {
    /// Pages the device stores (N).
    pub pages: u64,
    /// The live device's mem_used_total, if there is one.
    pub live_bytes: Option<u64>,
    /// zmem's pool for every page of the live device in the current configuration (the
    /// prediction of "Now"), if there is one. Then pools are projected as ratios to the current
    /// configuration's on the same sample (a ratio estimator: the sample's bias cancels, and the
    /// current configuration's projection is exactly the prediction) rather than by page count.
    pub current_pool: Option<u64>,
    /// The kernel's swap work, priced at the speed of the machine the findings were measured on
    /// ([`crate::speed::KernelSpeed`], carried in the findings).
    pub kernel: SwapOverhead,
}

/// Projects every measured configuration onto `proj.pages` (module doc). `m` must hold exactly
/// one current configuration (if it holds none, the first one is taken as now). Savings are
/// against the reference's pool (or the live device's bytes) until [`crate::candidate::on_basis`]
/// puts them on the decision's basis; `live`: a live zram device runs the current one.
pub fn project(
    m: &[Measured],
    proj: Projection,
    traffic: Traffic,
    budgets: &Budgets,
    live: bool,
) -> Vec<Candidate> {
    let cur = m.iter().position(|x| x.is_current).unwrap_or(0);
    let scale = |x: &Measured| match (proj.current_pool, m.get(cur)) {
        (Some(whole), Some(now)) if now.pool_bytes > 0 => whole as f64 / now.pool_bytes as f64,
        _ => proj.pages as f64 / x.pages.max(1) as f64,
    };
    let pool = |x: &Measured| -> u64 {
        let scaled =
            x.estimated_pool.unwrap_or_else(|| (x.pool_bytes as f64 * scale(x)).round() as u64);
        scaled + x.extra_bytes
    };
    let reclaim_cpu = proj.kernel.cpu_secs_per_sec(traffic);
    let recompressed_per_sec = |x: &Measured| {
        if x.recompresses {
            let per_pass = proj.pages as f64 / budgets.recompress_period_secs.max(1e-9);
            traffic.swap_outs_per_sec.min(per_pass)
        } else {
            0.0
        }
    };
    let cpu = |x: &Measured| {
        (traffic.swap_outs_per_sec * x.compress_ns
            + traffic.swap_ins_per_sec * x.decompress_ns
            + recompressed_per_sec(x) * x.recompress_ns)
            / 1e9
            + reclaim_cpu
    };
    let Some(now) = m.get(cur) else { return Vec::new() };
    let now_bytes = proj.live_bytes.unwrap_or_else(|| pool(now));
    let (now_cpu, now_p50, now_p99) = (cpu(now), now.load_p50_ns, now.load_p99_ns);
    m.iter()
        .enumerate()
        .map(|(i, x)| {
            let cpu_secs_per_sec = cpu(x);
            let added_load_p99_ns =
                added_swap_in_p99(x.load_p99_ns, x.compress_ns, (now_p99, now.compress_ns));
            let over = over_budget(x.verified, cpu_secs_per_sec, added_load_p99_ns, budgets);
            let (p50, p99) =
                swap_in_end_to_end(proj.kernel, x.load_p50_ns, x.load_p99_ns, x.compress_ns);
            let saved = now_bytes as i64 - pool(x) as i64;
            Candidate {
                name: format!("zram {}", x.policy.name),
                config: Config::Zram { policy: x.policy.clone() },
                available: true,
                unavailable_reason: None,
                kernel_needs: Vec::new(),
                is_reference: i == cur,
                runs_now: live && i == cur,
                verified: x.verified,
                pool_bytes: pool(x),
                memory_saved_bytes: saved,
                memory_saved_ci: [saved, saved],
                compress_cpu_ns_per_page: x.compress_ns,
                decompress_cpu_ns_per_page: x.decompress_ns,
                recompress_cpu_ns_per_page: x.recompress_ns,
                cpu_secs_per_sec,
                reclaim_cpu_secs_per_sec: reclaim_cpu,
                added_cpu_secs_per_sec: cpu_secs_per_sec - now_cpu,
                first_pass_cpu_secs: if x.recompresses {
                    proj.pages as f64 * x.recompress_ns / 1e9
                } else {
                    0.0
                },
                load_p50_ns: x.load_p50_ns,
                load_p99_ns: x.load_p99_ns,
                added_load_p50_ns: x.load_p50_ns as i64 - now_p50 as i64,
                added_load_p99_ns,
                swap_in_p50_ns: p50,
                swap_in_p99_ns: p99,
                device: None,
                at_today: Default::default(),
                at_cold_age: None,
                within_budgets: over.is_empty(),
                over_budget: over,
            }
        })
        .collect()
}

/// The one budget check every candidate passes, zram's and zswap's: why it is not within the
/// budgets (empty: within): it must read every page back, use at most the CPU budget and add
/// at most the latency budget to the p99 swap-in.
pub fn over_budget(
    verified: bool,
    cpu_secs_per_sec: f64,
    added_load_p99_ns: i64,
    budgets: &Budgets,
) -> Vec<OverBudget> {
    let mut over = Vec::new();
    if !verified {
        over.push(OverBudget::NotVerified);
    }
    if cpu_secs_per_sec > budgets.cpu_percent_of_core / 100.0 {
        over.push(OverBudget::Cpu {
            cpu_secs_per_sec,
            budget_percent: budgets.cpu_percent_of_core,
        });
    }
    if added_load_p99_ns as f64 > budgets.added_load_p99_us * 1000.0 {
        over.push(OverBudget::Latency {
            added_p99_ns: added_load_p99_ns,
            budget_us: budgets.added_load_p99_us,
        });
    }
    over
}

/// CPU figures closer than this fraction of the larger are the machine's noise, not a
/// difference between two configurations: the CPU a replay measures moves by several per cent
/// between two runs of the same pages on a shared machine (docs/BENCHMARKS.md, the replay's
/// run-to-run spread), so at equal memory a smaller gap decides nothing.
pub const CPU_NOISE: f64 = 0.10;

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, pool: u64, comp: f64, decomp: f64, recomp: f64, p99: u64) -> Measured {
        Measured {
            policy: crate::policy::Policy::single(name),
            is_current: false,
            verified: true,
            recompresses: recomp > 0.0,
            pages: 1000,
            pool_bytes: pool,
            extra_bytes: 0,
            compress_ns: comp,
            decompress_ns: decomp,
            recompress_ns: recomp,
            load_p50_ns: p99 / 2,
            load_p99_ns: p99,
            estimated_pool: None,
        }
    }

    const TRAFFIC: Traffic = Traffic { swap_ins_per_sec: 100.0, swap_outs_per_sec: 200.0 };
    /// The reference machine's price: the arithmetic below does not depend on this machine.
    const K: SwapOverhead = crate::speed::SWAP_OVERHEAD;

    #[test]
    fn cpu_and_memory_by_hand() {
        let mut now = m("lzo-rle", 1_500_000, 5000.0, 2000.0, 0.0, 4000);
        now.is_current = true;
        // 15 us more compression per page than now, 13 us beyond the noise (10 % of 20 us): at
        // the p99, a fault's reclaim batch of 32 pages takes 416 us more.
        let mut dict = m("zstd + dict", 1_000_000, 20_000.0, 6000.0, 0.0, 9000);
        dict.extra_bytes = 65536;
        let idle = m("lzo-rle + zstd(idle)", 1_100_000, 5000.0, 5000.0, 30_000.0, 12_000);
        let b = Budgets::default();
        // 10x the pages: N = 10,000, no live device.
        let c = project(
            &[now, dict, idle],
            Projection { pages: 10_000, live_bytes: None, current_pool: None, kernel: K },
            TRAFFIC,
            &b,
            false,
        );
        // The kernel's own work: 200 swap-outs and 100 swap-ins a second, on every row.
        let k = K;
        let kernel = (200.0 * k.reclaim_ns_per_swap_out + 100.0 * k.fault_ns_per_swap_in) / 1e9;
        assert!(c.iter().all(|x| (x.reclaim_cpu_secs_per_sec - kernel).abs() < 1e-15));
        // now: pool 15,000,000; CPU (200 x 5000 + 100 x 2000) ns/s = 1.2 ms/s, and the kernel's.
        assert_eq!(c[0].pool_bytes, 15_000_000);
        assert_eq!(c[0].memory_saved_bytes, 0);
        assert!((c[0].cpu_secs_per_sec - 0.0012 - kernel).abs() < 1e-12);
        assert!(c[0].is_reference && c[0].within_budgets);
        // dict: 10,000,000 + 65,536; CPU 200 x 20 us + 100 x 6 us = 4.6 ms/s.
        assert_eq!(c[1].pool_bytes, 10_065_536);
        assert_eq!(c[1].memory_saved_bytes, 4_934_464);
        assert!((c[1].cpu_secs_per_sec - 0.0046 - kernel).abs() < 1e-12);
        assert!((c[1].added_cpu_secs_per_sec - 0.0034).abs() < 1e-12);
        assert_eq!((c[1].added_load_p50_ns, c[1].added_load_p99_ns), (2500, 5000 + 32 * 13_000));
        assert!(!c[1].within_budgets);
        assert_eq!(
            c[1].over_budget,
            [OverBudget::Latency { added_p99_ns: 421_000, budget_us: 50.0 }]
        );
        // idle: recompressed/s = min(200, 10,000 / 3600) = 2.777..; CPU = 200 x 5 us + 100 x
        // 5 us + 2.777.. x 30 us = 1.5 ms + 83.33 us.
        let want = 0.0015 + 10_000.0 / 3600.0 * 30e-6 + kernel;
        assert!((c[2].cpu_secs_per_sec - want).abs() < 1e-12, "{}", c[2].cpu_secs_per_sec);
        assert!((c[2].first_pass_cpu_secs - 0.3).abs() < 1e-12);
        assert_eq!(c[2].memory_saved_bytes, 4_000_000);
        // idle compresses as now does: its p99 adds the read's 8 us only.
        assert_eq!(c[2].added_load_p99_ns, 8000);
    }

    #[test]
    fn a_live_device_is_the_baseline_and_its_fragmentation_shows_on_the_current_row() {
        let mut now = m("lzo-rle", 1_500_000, 5000.0, 2000.0, 0.0, 4000);
        now.is_current = true;
        let c = project(
            &[now],
            Projection { pages: 2000, live_bytes: Some(3_100_000), current_pool: None, kernel: K },
            TRAFFIC,
            &Budgets::default(),
            false,
        );
        assert_eq!(c[0].pool_bytes, 3_000_000);
        assert_eq!(c[0].memory_saved_bytes, 100_000);
    }

    /// With the whole device's predicted pool known, pools scale as ratios to the current
    /// configuration's on the sample: a sample that packs 10 % better than the whole device
    /// does not make every candidate look 10 % better than now.
    #[test]
    fn a_predicted_whole_device_pool_projects_by_ratio_to_the_current() {
        let mut now = m("lzo-rle", 1_000_000, 5000.0, 2000.0, 0.0, 4000);
        now.is_current = true;
        let zstd = m("zstd", 800_000, 20_000.0, 6000.0, 0.0, 9000);
        // 1000 pages measured; the device stores 2000, and zmem packed all of them into
        // 2,200,000 bytes (not the 2,000,000 page scaling would say); the live pool is 2,300,000.
        let p = Projection {
            pages: 2000,
            live_bytes: Some(2_300_000),
            current_pool: Some(2_200_000),
            kernel: K,
        };
        let c = project(&[now, zstd], p, TRAFFIC, &Budgets::default(), false);
        assert_eq!(c[0].pool_bytes, 2_200_000, "the current one is the prediction");
        assert_eq!(c[0].memory_saved_bytes, 100_000, "the live fragmentation");
        assert_eq!(c[1].pool_bytes, 1_760_000, "0.8 of the current one");
        assert_eq!(c[1].memory_saved_bytes, 540_000);
    }

    #[test]
    fn slow_recompression_is_bounded_by_the_swap_outs() {
        // Few swap-outs, many pages: a pass recompresses only what came in since the last one.
        let x = m("idle", 1000, 0.0, 0.0, 1e6, 1);
        let t = Traffic { swap_ins_per_sec: 0.0, swap_outs_per_sec: 0.5 };
        let c = project(
            &[x],
            Projection { pages: 1_000_000, live_bytes: None, current_pool: None, kernel: K },
            t,
            &Budgets { recompress_period_secs: 60.0, ..Budgets::default() },
            false,
        );
        // 0.5 recompressions a second at 1 ms, and the kernel's reclaim of 0.5 swap-outs.
        assert!(
            (c[0].cpu_secs_per_sec - 0.5e-3 - 0.5 * K.reclaim_ns_per_swap_out / 1e9).abs() < 1e-12
        );
    }

    #[test]
    fn budgets_exclude_and_say_why() {
        let mut now = m("lzo-rle", 1_500_000, 5000.0, 2000.0, 0.0, 4000);
        now.is_current = true;
        // 200 x 60 us + 100 x 2 us = 12.2 ms/s, and the kernel's own work: over a 1 % budget.
        let hungry = m("deflate", 900_000, 60_000.0, 2000.0, 0.0, 4000);
        // Adds 60 us to p99: over 50 us.
        let slow = m("842", 1_000_000, 5000.0, 2000.0, 0.0, 64_000);
        let mid = m("lz4hc", 1_200_000, 5500.0, 2000.0, 0.0, 5000);
        // Reads as fast as now but compresses 3 us a page slower, 2.2 us beyond the noise: its
        // reclaim batch adds 70.4 us.
        let batch = m("zstd", 1_100_000, 8000.0, 2000.0, 0.0, 4000);
        let c = project(
            &[now, hungry, slow, mid, batch],
            Projection { pages: 1000, live_bytes: None, current_pool: None, kernel: K },
            TRAFFIC,
            &Budgets::default(),
            false,
        );
        let k = K;
        let kernel = (200.0 * k.reclaim_ns_per_swap_out + 100.0 * k.fault_ns_per_swap_in) / 1e9;
        let cpu = |o: &OverBudget| match o {
            OverBudget::Cpu { cpu_secs_per_sec, budget_percent } => {
                (cpu_secs_per_sec - 0.0122 - kernel).abs() < 1e-12 && *budget_percent == 1.0
            }
            _ => false,
        };
        assert!(!c[1].within_budgets && cpu(&c[1].over_budget[0]), "{:?}", c[1]);
        let late = |ns| vec![OverBudget::Latency { added_p99_ns: ns, budget_us: 50.0 }];
        assert!(!c[2].within_budgets && c[2].over_budget == late(60_000));
        assert!(!c[4].within_budgets && c[4].over_budget == late(70_400), "{:?}", c[4]);
        // mid: the read's 1 us; its 0.5 us more compression is within the noise (0.55 us).
        assert_eq!(c[3].added_load_p99_ns, 1000);
        assert!(c[3].within_budgets && c[0].within_budgets);
        // Not verified: outside the budgets whatever its figures.
        let mut broken = m("broken", 10, 1.0, 0.0, 0.0, 1);
        broken.verified = false;
        let p = Projection { pages: 1000, live_bytes: None, current_pool: None, kernel: K };
        let c = project(&[broken], p, TRAFFIC, &Budgets::default(), false);
        assert_eq!(c[0].over_budget, [OverBudget::NotVerified]);
    }

    /// The end-to-end swap-in: the fault path on every swap-in, a reclaim batch of 32
    /// swap-outs (each the kernel's reclaim work and a compression) in the p99 only.
    #[test]
    fn the_budgets_p99_counts_the_compression_difference_beyond_the_noise() {
        // 10 us now; 20 us: 10 us more, 8 us beyond the noise (2 us), 32 times.
        assert_eq!(added_swap_in_p99(5000, 20_000.0, (4000, 10_000.0)), 1000 + 32 * 8000);
        // Faster by 10 us: the same, the other way.
        assert_eq!(added_swap_in_p99(4000, 10_000.0, (5000, 20_000.0)), -1000 - 32 * 8000);
        // Within the noise: the read's difference alone.
        assert_eq!(added_swap_in_p99(4500, 10_500.0, (4000, 10_000.0)), 500);
        assert_eq!(added_swap_in_p99(4500, 9_500.0, (4000, 10_000.0)), 500);
        // Continuous: a step of 1 ns in the compression moves the figure by at most 32 ns.
        let mut last = added_swap_in_p99(4000, 10_000.0, (4000, 10_000.0));
        for ns in 10_001..14_000 {
            let now = added_swap_in_p99(4000, ns as f64, (4000, 10_000.0));
            assert!((0..=33).contains(&(now - last)), "{ns}: {last} -> {now}");
            last = now;
        }
        // Equal to the difference of the two end-to-end p99s beyond the noise band.
        let (_, a) = swap_in_end_to_end(K, 0, 5000, 20_000.0);
        let (_, b) = swap_in_end_to_end(K, 0, 4000, 10_000.0);
        let band = (32.0 * CPU_NOISE * 20_000.0) as i64;
        assert_eq!(added_swap_in_p99(5000, 20_000.0, (4000, 10_000.0)), a as i64 - b as i64 - band);
    }

    #[test]
    fn a_swap_in_end_to_end_pays_the_fault_and_at_p99_a_reclaim_batch() {
        let k = K;
        let (f, r) = (k.fault_ns_per_swap_in, k.reclaim_ns_per_swap_out);
        let (p50, p99) = swap_in_end_to_end(K, 2_000, 4_000, 10_000.0);
        assert_eq!(p50, (2_000.0 + f).round() as u64);
        assert_eq!(p99, (4_000.0 + f + 32.0 * (r + 10_000.0)).round() as u64);
        // A dearer compressor costs the p99 32 times its extra compression, the p50 nothing.
        let (q50, q99) = swap_in_end_to_end(K, 2_000, 4_000, 30_000.0);
        assert_eq!((q50, q99 - p99), (p50, 32 * 20_000));
        // Beside page cache a quarter of the batch is swap-outs: 8 of them at the p99, and 24
        // file pages dropped.
        let (r50, r99) = swap_in_end_to_end_beside_cache(K, 2_000, 4_000, 10_000.0, 0.25);
        let want = 4_000.0 + f + 8.0 * (r + 10_000.0) + 24.0 * 5_000.0;
        assert_eq!((r50, r99), (p50, want.round() as u64));
    }
}

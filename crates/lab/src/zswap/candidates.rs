//! zswap's candidates: the grid of configurations, their replays on the lab's trace (a
//! scaled-down machine), and their projection onto the machine on zram's cost model.

use super::*;

/// One zswap configuration to replay, and whether this kernel can run it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ZswapConfigChoice {
    pub params: ZswapParams,
    pub available: bool,
    pub unavailable_reason: Option<String>,
}

impl ZswapConfigChoice {
    pub(crate) fn new(
        compressor: &str,
        max_pool_percent: u32,
        accept: u32,
        shrinker: bool,
    ) -> Self {
        Self {
            params: ZswapParams {
                compressor: compressor.into(),
                max_pool_percent,
                accept_threshold_percent: accept,
                shrinker_enabled: shrinker,
            },
            available: true,
            unavailable_reason: None,
        }
    }

    pub fn name(&self) -> String {
        self.params.label()
    }

    /// The same configuration at accept_threshold_percent `accept`.
    pub(crate) fn at_accept(&self, accept: u32) -> Self {
        let mut c = self.clone();
        c.params.accept_threshold_percent = accept;
        c
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
                    out.push(ZswapConfigChoice::new(algo, mpp, accept, shrinker));
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
                available: false,
                unavailable_reason: Some(reason),
                ..ZswapConfigChoice::new(algo, 20, accept, false)
            });
        }
    }
    out
}

/// zswap's candidates made unavailable where no disk swap is active and the file system its
/// new swap file goes on has no room for `need` bytes of it (at least the apply's smallest):
/// the apply could not make the file.
pub fn without_room(cands: &mut [Candidate], live: &ZswapLive, need: u64) {
    let Some(room) = &live.swap_file_room else {
        return;
    };
    let need = need.max(crate::decision::MIN_SWAP_FILE_BYTES);
    if room.free_bytes >= need {
        return;
    }
    let why = format!(
        "no room for zswap's swap file: it needs {} MiB and {} has {} MiB free",
        need.div_ceil(1 << 20),
        room.dir,
        room.free_bytes >> 20
    );
    for c in cands.iter_mut().filter(|c| c.available && matches!(c.config, Config::Zswap { .. })) {
        c.unavailable(why.clone(), Vec::new());
    }
}

/// What the replays give, per configuration (kept for the projection).
#[derive(Debug, Clone, Serialize, Deserialize)]
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

/// The zram reference replayed beside zswap's grid: `algo` on zram, at the same trace and RAM.
pub fn zram_reference(algo: &str) -> ZswapConfigChoice {
    ZswapConfigChoice::new(algo, 20, DEFAULT_ACCEPT_THRESHOLD, false)
}

/// One replay of `accesses` with RAM for a quarter of the pages (a job of the lab's one
/// measuring phase, `jobs`), its stores taking the compressor table's objects of `pages` where
/// it has them for the replay's compressor (`measure::swap_row_with`, which charges their cost).
/// `on`: the access trace and the device behind the swap file; `at`: the pool's scale and the
/// machine's memory cgroup version (v2 charges the pool to the replay's memcg).
pub(crate) fn replay(
    pages: &[u8],
    ps: usize,
    on: (&[Access], &SwapDevice),
    kind: SwapKind,
    c: &ZswapConfigChoice,
    at: (f64, CgroupVersion),
    objects: &[&Objects],
) -> Result<SwapRow, LabError> {
    let ((accesses, device), (scale, cgroup)) = (on, at);
    let n = (pages.len() / ps) as u64;
    let cfg = ReplayConfig {
        ram_pages: (n / RAM_FRACTION).max(1),
        swap: kind,
        algo: c.params.compressor.clone(),
        page_size: ps,
        device: device.clone(),
        zswap: ZswapParams {
            max_pool_percent: replay_percent(c.params.max_pool_percent, scale),
            ..c.params.clone()
        },
        cgroup,
        ..ReplayConfig::default()
    };
    crate::measure::swap_row_with(pages, ps, accesses, &cfg, objects, &NoProgress)
}

/// Swap-in microseconds per second at `rates` for a replay row.
pub(super) fn swap_in_us_per_sec(r: &SwapRow, rates: &Rates) -> f64 {
    let ins = (r.hit_swap_ins + r.device_swap_ins).max(1) as f64;
    let mean_ns = (r.hit_swap_ins as f64 * r.hit_p50_ns as f64
        + r.device_swap_ins as f64 * r.device_p50_ns as f64)
        / ins;
    let mean_ns =
        if r.hit_swap_ins + r.device_swap_ins == 0 { r.load_p50_ns as f64 } else { mean_ns };
    rates.swap_ins_per_sec * mean_ns / 1e3
}

/// A compressor's CPU per page: compression and decompression, in ns, as the lab measured it
/// on the pages (the zram candidate of the same algorithm: the same compressor into the same
/// zsmalloc).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CodecCost {
    pub compress_ns: f64,
    pub decompress_ns: f64,
}

/// CPU seconds per second at `rates` for a replay row, on the cost model zram's candidates
/// have (`cost::project`): the compressions and decompressions the row's traffic takes, at the
/// compressor's measured CPU per page, and the kernel's own reclaim and fault work
/// (`kernel_work`, [`crate::speed::KernelSpeed`]'s; measured on zram swap, docs/BENCHMARKS.md "The kernel's
/// own swap work (issue 31)", taken as the same for zswap: the swap-cache path zswap takes, 6.18
/// mm/memory.c `do_swap_page()` without `SWP_SYNCHRONOUS_IO`, was not measured apart). Per
/// swap-out: a compression, unless the page went to the device uncompressed (stores the pool
/// refused: the row's device writes less its writebacks), and a decompression per page
/// written back; per swap-in: a decompression where the pool served it (a miss reads the
/// device). Without `codec` (a compressor the zram candidates did not measure), the replay's
/// own thread CPU per swap operation, which also counts the simulator's work.
pub(super) fn cpu_secs_per_sec(
    r: &SwapRow,
    rates: &Rates,
    codec: Option<CodecCost>,
    kernel_work: SwapOverhead,
) -> f64 {
    let traffic = cost::Traffic {
        swap_ins_per_sec: rates.swap_ins_per_sec,
        swap_outs_per_sec: rates.swap_outs_per_sec,
    };
    let kernel = kernel_work.cpu_secs_per_sec(traffic);
    let per = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 / of as f64 };
    let Some(c) = codec else {
        let ops = r.swap_ins + r.swap_outs;
        if ops == 0 {
            return 0.0;
        }
        return per(1, ops) * r.cpu_seconds * (rates.swap_ins_per_sec + rates.swap_outs_per_sec)
            + kernel;
    };
    let refused = r.disk_writes.saturating_sub(r.written_back);
    let compressed = per(r.swap_outs.saturating_sub(refused), r.swap_outs);
    let written_back = per(r.written_back, r.swap_outs);
    let hits = if r.swap_ins == 0 { 1.0 } else { per(r.hit_swap_ins, r.swap_ins) };
    (rates.swap_outs_per_sec * (compressed * c.compress_ns + written_back * c.decompress_ns)
        + rates.swap_ins_per_sec * hits * c.decompress_ns)
        / 1e9
        + kernel
}

/// Projects the replays onto the machine (module doc), beside the zram candidates (whose
/// reference configuration zram's replay `zram_ref` is): pools for the same pages, CPU on the
/// same cost model (the kernel's work priced at `kernel_work`), the added figures against the
/// same reference.
#[allow(clippy::too_many_arguments)]
pub fn project(
    measured: &[Replayed],
    behind: &str,
    zram_ref: &SwapRow,
    zram_candidates: &[Candidate],
    live: Option<&ZswapNow>,
    (rates, kernel_work): (&Rates, SwapOverhead),
    budgets: &Budgets,
    ps: usize,
    scale: f64,
) -> Vec<Candidate> {
    let reference = zram_candidates.iter().find(|c| c.is_reference).or(zram_candidates.first());
    let cur_pool = reference.map_or(0, |c| c.pool_bytes);
    // CPU per page by algorithm, from the zram candidates' measurements of plain policies: the
    // traffic's cost, and the reclaim batch's in the end-to-end p99.
    let codec = |algo: &str| {
        zram_candidates
            .iter()
            .find(|c| c.config.is_plain_zram() && c.config.compressor() == Some(algo))
            .map(|c| CodecCost {
                compress_ns: c.compress_cpu_ns_per_page,
                decompress_ns: c.decompress_cpu_ns_per_page,
            })
    };
    let now_codec = reference.map(|c| CodecCost {
        compress_ns: c.compress_cpu_ns_per_page,
        decompress_ns: c.decompress_cpu_ns_per_page,
    });
    let zram_cpu = cpu_secs_per_sec(zram_ref, rates, now_codec, kernel_work);
    let runs_now = |p: &ZswapParams| live.is_some_and(|l| l.enabled && l.module == *p);
    measured
        .iter()
        .map(|m| {
            let c = &m.config;
            let mut cand = Candidate::none(0);
            cand.name = c.name();
            cand.config = Config::Zswap { params: c.params.clone(), behind: behind.to_string() };
            cand.runs_now = runs_now(&c.params);
            cand.verified = false;
            cand.within_budgets = false;
            let Some(r) = &m.row else {
                cand.unavailable(c.unavailable_reason.clone().unwrap_or_default(), Vec::new());
                return cand;
            };
            if !c.available {
                cand.unavailable(c.unavailable_reason.clone().unwrap_or_default(), Vec::new());
            }
            cand.pool_bytes = if zram_ref.max_pool_bytes > 0 {
                (cur_pool as f64 * r.max_pool_bytes as f64 / zram_ref.max_pool_bytes as f64) as u64
            } else {
                r.max_pool_bytes
            };
            let codec = codec(&c.params.compressor).or(now_codec);
            let zram = (zram_ref, now_codec, zram_cpu);
            fill(&mut cand, r, codec, zram, (rates, kernel_work), budgets, ps, scale);
            cand
        })
        .collect()
}

/// The figures of a replayed zswap candidate (module doc). A compressor the zram candidates did
/// not measure (a policy list without it) is taken at the reference's costs.
#[allow(clippy::too_many_arguments)]
fn fill(
    cand: &mut Candidate,
    r: &SwapRow,
    codec: Option<CodecCost>,
    (zram_ref, now_codec, zram_cpu): (&SwapRow, Option<CodecCost>, f64),
    (rates, kernel_work): (&Rates, SwapOverhead),
    budgets: &Budgets,
    ps: usize,
    scale: f64,
) {
    let compress = codec.map_or(0.0, |c| c.compress_ns);
    let now_compress = now_codec.map_or(0.0, |c| c.compress_ns);
    cand.verified = r.verified;
    cand.compress_cpu_ns_per_page = compress;
    cand.decompress_cpu_ns_per_page = codec.map_or(0.0, |c| c.decompress_ns);
    cand.cpu_secs_per_sec = cpu_secs_per_sec(r, rates, codec, kernel_work);
    cand.reclaim_cpu_secs_per_sec = kernel_work.cpu_secs_per_sec(cost::Traffic {
        swap_ins_per_sec: rates.swap_ins_per_sec,
        swap_outs_per_sec: rates.swap_outs_per_sec,
    });
    cand.added_cpu_secs_per_sec = cand.cpu_secs_per_sec - zram_cpu;
    cand.load_p50_ns = r.load_p50_ns;
    cand.load_p99_ns = r.load_p99_ns;
    cand.added_load_p50_ns = r.load_p50_ns as i64 - zram_ref.load_p50_ns as i64;
    cand.added_load_p99_ns =
        cost::added_swap_in_p99(r.load_p99_ns, compress, (zram_ref.load_p99_ns, now_compress));
    // The replay's swap-in is already end to end for the device (a miss reads it).
    (cand.swap_in_p50_ns, cand.swap_in_p99_ns) =
        cost::swap_in_end_to_end(kernel_work, r.load_p50_ns, r.load_p99_ns, compress);
    let outs = r.swap_outs.max(1) as f64;
    cand.device = Some(DeviceTraffic {
        hit_fraction: if r.swap_ins == 0 { 1.0 } else { r.hit_swap_ins as f64 / r.swap_ins as f64 },
        replay_max_pool_percent: replay_percent(
            match &cand.config {
                Config::Zswap { params, .. } => params.max_pool_percent,
                _ => 0,
            },
            scale,
        ),
        device_write_bytes_per_sec: r.disk_writes as f64 / outs
            * rates.swap_outs_per_sec
            * ps as f64,
        swap_in_us_per_sec: swap_in_us_per_sec(r, rates),
    });
    let mut over =
        cost::over_budget(r.verified, cand.cpu_secs_per_sec, cand.added_load_p99_ns, budgets);
    if !cand.available {
        over.insert(0, OverBudget::Unavailable);
    }
    cand.within_budgets = over.is_empty();
    cand.over_budget = over;
}

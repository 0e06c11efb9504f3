//! The one candidate type: every configuration the lab can advise (a zram device with its
//! policy, zswap with its parameters in front of a disk swap, or no compressed swap at all) is
//! a [`Candidate`]: its [`Config`], its projection onto the machine (memory, CPU, swap-in
//! latency, device traffic) on one [`Basis`], and its one budget check ([`OverBudget`]). The
//! engines that project them (`cost` for zram, `zswap` for zswap) fill the same fields; the
//! judge (`decision`) reads nothing else. Data only: render writes the words.
//!
//! **Basis.** Every saving is against now, for the pages the projection is for (the live
//! device's stored pages, else every page of the input: the sample's population): `now_bytes`
//! is what those pages take in RAM today: the live zram device's `mem_used_total`; else the
//! pool of the zswap configuration that runs now; else, with no compressed swap running, the
//! pages themselves, uncompressed. A candidate saves `now_bytes - pool`.
//!
//! **Uncertainty.** A saving's 95 % interval is its pool's: the sample's interval for the
//! candidate's compressor ([`crate::sample`]) carried to the candidate's projected pool (0 when
//! every page was measured). A zswap pool is the current zram configuration's scaled by the
//! replays' ratio, so it carries the wider of its compressor's and the current one's.

use serde::{Deserialize, Serialize};
use zmem_zswap::ZswapParams;

use crate::policy::Policy;
use crate::sample::Estimates;

/// What a candidate configures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Config {
    /// A zram swap device running this policy (zswap off).
    Zram { policy: Policy },
    /// zswap with these module parameters in front of the disk swap `behind` (an active swap
    /// area, or the swap file the apply script makes where there is none), and no zram swap.
    Zswap { params: ZswapParams, behind: String },
    /// No compressed swap: what the machine runs when nothing does. Listed only then; it saves
    /// nothing and costs nothing.
    None,
}

impl Config {
    /// The compressor whose pages the pool holds (none for [`Config::None`]).
    pub fn compressor(&self) -> Option<&str> {
        match self {
            Config::Zram { policy } => Some(&policy.algo),
            Config::Zswap { params, .. } => Some(&params.compressor),
            Config::None => None,
        }
    }

    /// A zram device with one algorithm: no secondary, no recompression, no dictionary.
    pub fn is_plain_zram(&self) -> bool {
        matches!(self, Config::Zram { policy }
            if policy.recomp.is_empty() && policy.recompress.is_none() && !policy.dict)
    }

    /// The work a configuration takes to set up and keep (0 simplest): nothing or a zram
    /// device with one algorithm; zswap's module parameters over a disk swap that exists; a
    /// dictionary to install or zswap needing a swap file made; a recompression timer.
    pub fn setup_rank(&self, disk_swap: bool) -> u32 {
        match self {
            Config::Zram { policy } if policy.recompresses() || !policy.recomp.is_empty() => 3,
            Config::Zram { policy } if policy.dict => 2,
            Config::Zram { .. } | Config::None => 0,
            Config::Zswap { .. } if disk_swap => 1,
            Config::Zswap { .. } => 2,
        }
    }
}

/// Why a candidate is not within the budgets (render says it in words).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum OverBudget {
    /// This kernel cannot run it (`unavailable_reason` says why).
    Unavailable,
    /// It did not read every page back.
    NotVerified,
    /// CPU seconds per second over the budget (percent of one core).
    Cpu { cpu_secs_per_sec: f64, budget_percent: f64 },
    /// What it adds to the p99 swap-in over the budget.
    Latency { added_p99_ns: i64, budget_us: f64 },
}

/// zswap's figures that zram's have no counterpart for: its traffic to the device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceTraffic {
    /// Fraction of the replay's swap-ins served from the pool.
    pub hit_fraction: f64,
    /// The max_pool_percent the replay ran with: the same share of the pages measured as
    /// max_pool_percent of this machine's RAM is of the pages projected.
    pub replay_max_pool_percent: u32,
    /// Bytes per second written to the swap device at the swap rates (flash wear).
    pub device_write_bytes_per_sec: f64,
    /// Microseconds per second spent in swap-ins at the swap rates.
    pub swap_in_us_per_sec: f64,
}

/// A candidate at one operating point ([`crate::operating`]): bytes moved out, its pool for them, and its saving against now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct AtPoint {
    pub moved_out_bytes: u64,
    pub pool_bytes: u64,
    pub memory_saved_bytes: i64,
    pub memory_saved_ci: [i64; 2],
}

/// One configuration projected onto the machine (JSON `candidates[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// `zram lzo-rle`, `zswap lz4 max_pool_percent=20 shrinker=off`, `none`.
    pub name: String,
    #[serde(flatten)]
    pub config: Config,
    /// Whether this kernel can run it; an unavailable candidate is never chosen.
    pub available: bool,
    /// Why this kernel cannot run it (absent when available).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    /// Kernel options (or versions) that would let this kernel run it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_needs: Vec<String>,
    /// The configuration the `added_*` figures are against: the live zram device's, else the
    /// kernel's default zram algorithm (zswap's are against the same zram configuration
    /// replayed on the same trace).
    pub is_reference: bool,
    /// It is what the machine runs now: choosing it is "keep".
    pub runs_now: bool,
    pub verified: bool,
    /// Projected pool for the basis' pages (a dictionary's bytes included).
    pub pool_bytes: u64,
    /// The basis' `now_bytes` less `pool_bytes` (negative: it needs more memory than now),
    /// and its 95 % interval.
    pub memory_saved_bytes: i64,
    pub memory_saved_ci: [i64; 2],
    /// Thread CPU nanoseconds per page measured: compress + store, load + decompress, and
    /// background recompression per page stored (0 without).
    pub compress_cpu_ns_per_page: f64,
    pub decompress_cpu_ns_per_page: f64,
    pub recompress_cpu_ns_per_page: f64,
    /// CPU seconds per second at the swap rates (1.0 = one core busy), the kernel's own
    /// reclaim and fault work (`reclaim_cpu_secs_per_sec`) included.
    pub cpu_secs_per_sec: f64,
    pub reclaim_cpu_secs_per_sec: f64,
    /// `cpu_secs_per_sec` less the reference's.
    pub added_cpu_secs_per_sec: f64,
    /// CPU seconds of the first recompression pass over the pages stored now (0 without).
    pub first_pass_cpu_secs: f64,
    /// The read (load and decompression; a zswap miss's device read included), p50 and p99.
    pub load_p50_ns: u64,
    pub load_p99_ns: u64,
    pub added_load_p50_ns: i64,
    /// The end-to-end p99 swap-in less the reference's ([`crate::cost::added_swap_in_p99`]):
    /// what the latency budget is checked on.
    pub added_load_p99_ns: i64,
    /// A swap-in end to end where memory is full ([`crate::cost::swap_in_end_to_end`]).
    pub swap_in_p50_ns: u64,
    pub swap_in_p99_ns: u64,
    /// zswap's device traffic (absent for zram and none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceTraffic>,
    /// At the operating points ([`crate::operating`]): today's pressure, and the cold age
    /// where one was read. `memory_saved_bytes` above is every page of the basis swapped.
    #[serde(default)]
    pub at_today: AtPoint,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_cold_age: Option<AtPoint>,
    /// Available, verified, within the CPU budget and within the latency budget.
    pub within_budgets: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub over_budget: Vec<OverBudget>,
}

impl Candidate {
    /// "No compressed swap", for `pages` that take `now_bytes` uncompressed.
    pub fn none(now_bytes: u64) -> Self {
        Self {
            name: "none".into(),
            config: Config::None,
            available: true,
            unavailable_reason: None,
            kernel_needs: Vec::new(),
            is_reference: false,
            runs_now: true,
            verified: true,
            pool_bytes: now_bytes,
            memory_saved_bytes: 0,
            memory_saved_ci: [0, 0],
            compress_cpu_ns_per_page: 0.0,
            decompress_cpu_ns_per_page: 0.0,
            recompress_cpu_ns_per_page: 0.0,
            cpu_secs_per_sec: 0.0,
            reclaim_cpu_secs_per_sec: 0.0,
            added_cpu_secs_per_sec: 0.0,
            first_pass_cpu_secs: 0.0,
            load_p50_ns: 0,
            load_p99_ns: 0,
            added_load_p50_ns: 0,
            added_load_p99_ns: 0,
            swap_in_p50_ns: 0,
            swap_in_p99_ns: 0,
            device: None,
            at_today: AtPoint::default(),
            at_cold_age: None,
            within_budgets: true,
            over_budget: Vec::new(),
        }
    }

    /// Marks it unavailable on this kernel, and why.
    pub fn unavailable(&mut self, reason: String, needs: Vec<String>) {
        self.available = false;
        self.within_budgets = false;
        self.over_budget.insert(0, OverBudget::Unavailable);
        self.unavailable_reason = Some(reason);
        self.kernel_needs = needs;
    }
}

/// What every candidate's saving is against (module doc), and what the judge needs besides
/// the candidates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Basis {
    /// What runs now: `zram lzo-rle`, a zswap candidate's name, or `none`.
    pub now_config: String,
    /// What the basis' pages take in RAM now.
    pub now_bytes: u64,
    pub now_source: NowSource,
    /// Pages every figure is for.
    pub pages: u64,
}

/// Where `now_bytes` comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NowSource {
    /// The live zram device's `mem_used_total`.
    LiveZram,
    /// The projected pool of the zswap configuration that runs now.
    LiveZswap,
    /// No compressed swap runs: the pages themselves, uncompressed.
    Uncompressed,
}

/// The basis for `cands` (zram's and zswap's, projected for `pages` of `page_size`):
/// `live_zram_bytes` is the live device's `mem_used_total`, if there is one.
pub fn basis(cands: &[Candidate], live_zram_bytes: Option<u64>, pages: u64, ps: usize) -> Basis {
    let zram_now = cands.iter().find(|c| c.runs_now && matches!(c.config, Config::Zram { .. }));
    let zswap_now = cands.iter().find(|c| c.runs_now && matches!(c.config, Config::Zswap { .. }));
    match (zram_now, zswap_now) {
        (Some(c), _) => Basis {
            now_config: c.name.clone(),
            // Without the live figure (a report that lacks it), zmem's packed pool.
            now_bytes: live_zram_bytes.unwrap_or(c.pool_bytes),
            now_source: NowSource::LiveZram,
            pages,
        },
        (None, Some(c)) => Basis {
            now_config: c.name.clone(),
            now_bytes: c.pool_bytes,
            now_source: NowSource::LiveZswap,
            pages,
        },
        (None, None) => Basis {
            now_config: "none".into(),
            now_bytes: pages * ps as u64,
            now_source: NowSource::Uncompressed,
            pages,
        },
    }
}

/// Relative half-width of the sample's 95 % interval of `algo`'s pool (0 without a sample).
pub fn relative_half_width(estimates: Option<&Estimates>, algo: &str) -> f64 {
    estimates.and_then(|e| e.row(algo)).map_or(0.0, |r| {
        let p = r.pool_bytes;
        if p.estimate > 0.0 { (p.high - p.low) / 2.0 / p.estimate } else { 0.0 }
    })
}

/// Puts every candidate's saving on `basis`, with its interval (module doc); adds "none" where
/// nothing runs now. `reference_algo`: the compressor of the configuration zswap's pools are
/// scaled from.
pub fn on_basis(
    cands: &mut Vec<Candidate>,
    basis: &Basis,
    estimates: Option<&Estimates>,
    reference_algo: &str,
) {
    if basis.now_source == NowSource::Uncompressed {
        for c in cands.iter_mut() {
            c.runs_now = false;
        }
        cands.push(Candidate::none(basis.now_bytes));
    }
    let reference = relative_half_width(estimates, reference_algo);
    for c in cands.iter_mut() {
        let saved = basis.now_bytes as i64 - c.pool_bytes as i64;
        let rel = match &c.config {
            Config::Zram { policy } => relative_half_width(estimates, &policy.algo),
            Config::Zswap { params, .. } => {
                relative_half_width(estimates, &params.compressor).max(reference)
            }
            Config::None => 0.0,
        };
        let hw = (rel * c.pool_bytes as f64).round() as i64;
        c.memory_saved_bytes = saved;
        c.memory_saved_ci = [saved - hw, saved + hw];
    }
}

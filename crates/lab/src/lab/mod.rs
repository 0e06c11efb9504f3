//! `zmem lab`: the main job. Given a page set (what the kernel holds in zram now, this
//! machine's processes, a file, or the built-in set), it measures every compressor, every
//! allocator and every candidate zram configuration on those pages, projects each onto the
//! user's device, and recommends one with the numbers behind it.
//!
//! The flow, one module per step, each a function from what the step before gave:
//!
//! 1. [`evidence`]: where the pages (and the access trace) come from: a page set the user
//!    named, the active zram swap devices, this machine's processes, or the built-in set,
//!    sampled to size; a [`Source`] says which and why. [`now`]: the live device beside zmem's
//!    prediction, and the swap rates.
//! 2. `measure` and `policy`: what is measured on those pages: the compressor table
//!    ([`crate::comp_bench`]), the allocators under zram, each candidate [`Policy`], zram
//!    against zswap under memory pressure ([`crate::replay`]).
//! 3. `recommend`, with [`cost`]: how candidates are judged: the projection onto the user's
//!    device and the rule that picks one within the budgets, stated in the report; [`apply`]
//!    turns the choice into the lines that set it up.
//! 4. [`crate::report`]: how results are rendered: the terminal summary, the HTML report; the
//!    [`LabReport`] itself is the JSON (schema: `docs/lab-report.schema.json`).
//!
//! [`run`] is steps 2 and 3 on what step 1 gave; the CLI (and any other front end) calls
//! [`evidence::gather`], [`now::watch`], then [`run`], then a renderer. Nothing here prints.

pub mod apply;
pub mod cost;
pub mod evidence;
mod measure;
pub mod now;
mod policy;
mod recommend;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::comp_bench::{self, AlgoSpec, Options};
use crate::{LabError, Progress, replay};

pub use apply::Apply;
pub use cost::{Budgets, Candidate};
pub use evidence::{Evidence, Input, Source, TraceSource};
pub use now::{FieldComparison, LiveConfig, Now, Rates};
pub use policy::{Policy, PolicyRow, candidates, default_policies};
pub use recommend::{Recommendation, recommend};

/// Bumped whenever a field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 1;

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
    pub load_p50_ns: u64,
    pub load_p99_ns: u64,
    pub cpu_seconds: f64,
    /// Seconds the trace spans (its last access's time): swap-ins / trace_secs is a rate.
    pub trace_secs: f64,
    pub verified: bool,
}

/// Everything one lab run measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LabReport {
    pub schema_version: u32,
    pub zmem_version: String,
    pub source: Source,
    pub compressors: Vec<comp_bench::Row>,
    pub allocators: Vec<PoolRow>,
    pub policies: Vec<PolicyRow>,
    /// zram against zswap under memory pressure, at a few RAM budgets.
    pub swap: Vec<SwapRow>,
    /// The access trace those replays ran (absent from reports before `--trace`: generated).
    #[serde(default)]
    pub trace: TraceSource,
    /// The live zram swap device the pages came from (source kind `zram`), else none.
    pub now: Option<Now>,
    /// The swap rates CPU costs are projected with.
    pub rates: Rates,
    /// Every policy projected onto the device in the user's units ([`cost`]).
    pub candidates: Vec<Candidate>,
    /// The budgets and the recompression period the candidates were judged with.
    pub budgets: Budgets,
    pub recommendation: Recommendation,
}

/// Knobs of a lab run.
#[derive(Debug, Clone)]
pub struct LabOptions {
    /// Minimum time per compressor pass (the comp-bench `min_time`).
    pub min_time: Duration,
    /// Policies to compare; empty (the default): [`candidates`] for the current primary.
    pub policies: Vec<Policy>,
    /// The CPU and latency budgets, and the background recompression period.
    pub budgets: Budgets,
    /// The live device the pages were captured from ([`now`]), if they were.
    pub now: Option<Now>,
    /// Rates observed on the live system, or why there are none (then the trace replay's are
    /// used, saying why).
    pub rates: Result<Rates, String>,
    /// The trace the replays run, fitted to the pages ([`evidence::fit_trace`]); none: the
    /// generated one ([`evidence::trace_for`]).
    pub trace: Option<(Vec<replay::Access>, TraceSource)>,
}

impl Default for LabOptions {
    fn default() -> Self {
        Self {
            min_time: Duration::from_millis(50),
            policies: Vec::new(),
            budgets: Budgets::default(),
            now: None,
            rates: Err("not observed".into()),
            trace: None,
        }
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
    let allocators = measure::pools(pages, ps, progress)?;
    let current =
        opts.now.as_ref().map_or(zmem_zram::DEFAULT_ALGORITHM, |n| &n.config.comp_algorithm);
    let list = if opts.policies.is_empty() { candidates(current) } else { opts.policies.clone() };
    let policies = list
        .iter()
        .map(|p| policy::measure(p, pages, ps, progress))
        .collect::<Result<Vec<_>, _>>()?;
    let (accesses, trace) = match &opts.trace {
        Some((a, t)) => (a.clone(), t.clone()),
        None => {
            let a = evidence::trace_for((pages.len() / ps) as u64)?;
            (a.clone(), TraceSource { accesses: a.len() as u64, ..TraceSource::default() })
        }
    };
    let swap = measure::swap(pages, ps, &accesses, progress)?;
    let rates = match &opts.rates {
        Ok(r) => r.clone(),
        Err(why) => now::replay_rates(&swap, why),
    };
    let (candidates, recommendation) =
        recommend(&policies, opts.now.as_ref(), &rates, &opts.budgets)?;
    Ok(LabReport {
        schema_version: SCHEMA_VERSION,
        zmem_version: env!("CARGO_PKG_VERSION").into(),
        source,
        compressors,
        allocators,
        policies,
        swap,
        trace,
        now: opts.now.clone(),
        rates,
        candidates,
        budgets: opts.budgets,
        recommendation,
    })
}

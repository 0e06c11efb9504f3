//! zmem-lab: zmem's main job (`zmem lab`, `zmem.lab`). Given a page set (what the kernel holds
//! in zram now, this machine's processes, a file, or the built-in set), it measures every
//! compressor, every allocator and every candidate zram configuration on those pages, projects
//! each onto the user's device, and recommends one with the numbers behind it, as a
//! [`LabReport`] value: data only, no prose for the recommendation and no shell text
//! (zmem-render writes those).
//!
//! The flow, one module per step, each a function from what the step before gave:
//!
//! 1. [`evidence`]: where the pages (and the access trace) come from: a page set the user
//!    named, the active zram swap devices, this machine's processes, or the built-in set,
//!    sampled to size; a [`Source`] says which and why. [`now`]: the live device beside zmem's
//!    prediction, and the swap rates.
//! 2. `measure` and `policy`: what is measured on those pages: the compressor table
//!    (zmem-experiments' `comp_bench`), the allocators under zram, each candidate [`Policy`],
//!    zram against zswap under memory pressure (zmem-sim's replay).
//! 3. `recommend`, with [`cost`]: how candidates are judged: the projection onto the user's
//!    device and the rule that picks one within the budgets, stated in the report.
//! 4. [`zswap`]: zswap's live state beside zmem's prediction, its candidates on the same cost
//!    model, and the zram-or-zswap verdict.
//!
//! `zmem validate lab` (zmem-validate, above this crate) checks the advice against the kernel:
//! each candidate the running kernel can run, played by the kernel beside the lab's prediction.
//!
//! [`run_lab`] is the one entry point both front ends call with [`LabRequest`] (the CLI's
//! flags, Python's keyword arguments): steps 1 to 3. [`run`] is steps 2 and 3 on what step 1
//! gave. Nothing here prints.
//!
//! Not for: printing or writing files (zmem-render, the front ends), or measuring outside the
//! main job (zmem-experiments).

pub mod cost;
pub mod decision;
pub mod evidence;
mod jobs;
mod measure;
pub mod now;
pub mod policy;
mod recommend;
pub mod request;
pub mod sample;
pub mod zswap;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use zmem_experiments::comp_bench::{self, AlgoSpec, Options};
use zmem_sim::replay;
use zmem_sim::swap_device::SwapDevice;

pub use zmem_experiments::LabError;
pub use zmem_sim::{NoProgress, Progress};
// What the front ends need of the engines, so that they depend on this crate, not on them.
pub use zmem_zram::DEFAULT_ALGORITHM;
pub use zmem_zram::parse::parse_size;
pub use zmem_zswap::Incompressible;

pub use cost::{Budgets, Candidate};
pub use evidence::{Coverage, Evidence, Input, Source, TraceSource};
pub use now::{FieldComparison, LiveConfig, Now, Rates};
pub use policy::{Policy, PolicyRow, candidates, default_policies};
pub use recommend::{
    BetterKernel, Recommendation, RunnerUpReason, UncertainReason, Unfit, kernel_fit, recommend,
    uncertainty,
};
pub use request::{
    ArgError, CaptureRequest, CaptureSummary, Captured, CompBenchRequest, GenerateRequest,
    LabRequest, ReplayRequest, StudyRequest, ZramRequest, auto_device, parse_max_pages, parse_ram,
    parse_source, parse_swap_device, run_lab, swap_device_text,
};
pub use zmem_kernel::caps::KernelCaps;

/// Bumped whenever a field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 6;

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

/// Everything one lab run measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LabReport {
    pub schema_version: u32,
    pub zmem_version: String,
    pub source: Source,
    /// What the kernel the advice is for can run (zram's compressors, recompression, writeback,
    /// zswap's compressors), and how each fact was learned: read once, when the evidence was
    /// gathered (this machine's, or the one a capture's metadata records). Every candidate is
    /// judged against it ([`kernel_fit`]).
    #[serde(default)]
    pub kernel: KernelCaps,
    pub compressors: Vec<comp_bench::Row>,
    pub allocators: Vec<PoolRow>,
    pub policies: Vec<PolicyRow>,
    /// zram against zswap under memory pressure, at a few RAM budgets.
    pub swap: Vec<SwapRow>,
    /// The block device behind the swap file whose latency the replays charge
    /// (`--swap-device`).
    pub swap_device: SwapDevice,
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
    /// Estimates for every page of the input, with 95 % confidence intervals, when the pages
    /// measured are a random sample of it ([`sample`]); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimates: Option<sample::Estimates>,
    /// Candidates left out, and why (a dictionary with too few pages to train on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_policies: Vec<SkippedPolicy>,
    /// zswap's Now, candidates, the zram-or-zswap verdict and the swap stack ([`zswap`]);
    /// absent when the run was given no live zswap reading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zswap: Option<zswap::ZswapAdvice>,
    /// The one answer for this machine, judged over every candidate, zram and zswap
    /// ([`decision`]); absent from reports before schema 5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<decision::Decision>,
}

/// A candidate the lab did not measure: a dictionary whose training half
/// ([`policy::held_out`]) has fewer pages that are not same-filled than it needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedPolicy {
    pub name: String,
    /// Pages that are not same-filled in the training half.
    pub train_pages: u64,
    /// Pages it needs.
    pub need: u64,
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
    /// The device behind the swap file (a profile or a measurement).
    pub device: SwapDevice,
    /// Threads the measurements run on (each row on one of them); 0: one per core.
    pub threads: usize,
    /// How the pages were sampled from the input, when at random ([`Evidence::sample`]): the
    /// report then estimates every page's pool with confidence intervals.
    pub sample: Option<sample::Design>,
    /// The trace the replays run, fitted to the pages ([`evidence::fit_trace`]); none: the
    /// generated one ([`evidence::trace_for`]).
    pub trace: Option<(Vec<replay::Access>, TraceSource)>,
    /// What the kernel can run ([`run_lab`] reads it with the evidence; tests give their own).
    /// None: not checked, every candidate available, and the report's `kernel.source` says so.
    pub kernel: Option<KernelCaps>,
    /// The live zswap read around the observation window: with it the report gains zswap's
    /// advice ([`zswap::advise`]).
    pub zswap: Option<zswap::ZswapInput>,
}

impl Default for LabOptions {
    fn default() -> Self {
        Self {
            min_time: Duration::from_millis(50),
            policies: Vec::new(),
            budgets: Budgets::default(),
            now: None,
            rates: Err("not observed".into()),
            device: SwapDevice::default(),
            threads: 0,
            sample: None,
            trace: None,
            kernel: None,
            zswap: None,
        }
    }
}

/// Input bytes per batch of the compressor table. Each worker holds a batch's buffers (its
/// objects at two pages' room each, and the batch decompressed), so comp-bench's 32 MiB batches
/// cost the lab 200 MB with two workers; 4 MiB cost 25 MB, and the lab's peak memory stays
/// under its stated bound (docs/BENCHMARKS.md, "Bounded memory").
const BATCH_BYTES: usize = 4 << 20;

/// The compressor table's time per batch: `min_time` over the whole input. A small input (one
/// batch) gets the best of several passes, as `zmem comp-bench` does; a large one is timed over
/// so many pages that one pass per batch is enough, and each page is compressed once.
fn per_batch(min_time: Duration, input_bytes: usize) -> Duration {
    let batches = input_bytes.div_ceil(BATCH_BYTES).max(1);
    min_time / batches as u32
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
    let bench = Options {
        page_size: ps,
        min_time: per_batch(opts.min_time, pages.len()),
        max_passes: 20,
        batch_bytes: BATCH_BYTES,
    };
    let current =
        opts.now.as_ref().map_or(zmem_zram::DEFAULT_ALGORITHM, |n| &n.config.comp_algorithm);
    let list = if opts.policies.is_empty() { candidates(current) } else { opts.policies.clone() };
    // A dictionary needs pages to train on besides those it is measured on: with too few it is
    // left out, and the report says so.
    let (list, skipped_policies): (Vec<Policy>, Vec<SkippedPolicy>) = {
        let mut kept = Vec::new();
        let mut skipped = Vec::new();
        for p in list {
            match (p.dict, policy::dict_trainable(pages, ps)) {
                (true, Err((train_pages, need))) => {
                    skipped.push(SkippedPolicy { name: p.name, train_pages, need })
                }
                _ => kept.push(p),
            }
        }
        (kept, skipped)
    };
    if list.is_empty() {
        return Err(LabError::Setup(
            "no policy left to measure: a dictionary needs more pages to train on".into(),
        ));
    }
    let (accesses, trace) = match &opts.trace {
        Some((a, t)) => (a.clone(), t.clone()),
        None => {
            let a = evidence::trace_for((pages.len() / ps) as u64)?;
            (a.clone(), TraceSource { accesses: a.len() as u64, ..TraceSource::default() })
        }
    };
    let threads = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let n = (pages.len() / ps) as u64;
    // The pages the projection is for: the live device's, else the whole input's.
    let projected_pages = opts
        .now
        .as_ref()
        .map(|x| x.stored_pages)
        .or(opts.sample.map(|d| d.population_pages))
        .unwrap_or(n)
        .max(n);
    // zswap's grid and its zram references (the current algorithm first, then every other
    // plain algorithm the kernel runs: the recommended one is among them), measured in the one
    // phase below with everything else.
    let zswap_plan = opts.zswap.as_ref().map(|z| {
        let live = &z.live;
        let mut refs = vec![current.to_string()];
        for p in list.iter().filter(|p| p.recomp.is_empty() && p.recompress.is_none() && !p.dict) {
            let runs = opts.kernel.as_ref().is_none_or(|k| k.zram_can_run(&p.algo).is_ok());
            if runs && !refs.contains(&p.algo) {
                refs.push(p.algo.clone());
            }
        }
        jobs::ZswapPlan {
            grid: zswap::grid(live.present, &live.offered, live.state.accept_threshold_percent),
            refs,
            scale: zswap::pool_scale(live.mem_total_bytes, ps, n, projected_pages),
        }
    });
    let plan = jobs::Plan {
        pages,
        page_size: ps,
        bench,
        specs: AlgoSpec::all(),
        policies: &list,
        accesses: &accesses,
        device: &opts.device,
        threads,
        zswap: zswap_plan.as_ref(),
    };
    let jobs::Measured { compressors, allocators, policies, swap, zswap: zswap_rows } =
        jobs::run(&plan, progress)?;
    let rates = match &opts.rates {
        Ok(r) => r.clone(),
        Err(why) => now::replay_rates(&swap, why),
    };
    // Every algorithm measured alone gets its estimate.
    let plain: Vec<&str> = list
        .iter()
        .filter(|p| p.recomp.is_empty() && p.recompress.is_none() && !p.dict)
        .map(|p| p.algo.as_str())
        .collect();
    let estimates =
        opts.sample.map(|design| sample::estimate(pages, ps, design, &plain)).transpose()?;
    let now_algo = opts
        .now
        .as_ref()
        .map_or(zmem_zram::DEFAULT_ALGORITHM, |n| n.config.comp_algorithm.as_str());
    let population = estimates.as_ref().and_then(|e| {
        let row = e.row(now_algo)?;
        Some(recommend::Population {
            pages: e.design.population_pages,
            current_pool: row.pool_bytes.estimate.round().max(0.0) as u64,
        })
    });
    let (candidates, mut recommendation) = recommend::recommend_for(
        &policies,
        opts.now.as_ref(),
        opts.kernel.as_ref(),
        &rates,
        &opts.budgets,
        population,
    )?;
    if let Some(why) = uncertainty((pages.len() / ps) as u64) {
        recommendation.uncertain = true;
        recommendation.uncertain_reason = Some(why);
    }
    let mut zswap = match (&opts.zswap, zswap_rows, &zswap_plan) {
        (Some(z), Some((replayed, refs)), Some(zp)) => {
            let algo_of = |name: &str| list.iter().find(|p| p.name == name).map(|p| p.algo.clone());
            let current_name = candidates.iter().find(|c| c.is_current).map(|c| c.name.clone());
            let cur =
                current_name.as_deref().and_then(algo_of).unwrap_or_else(|| current.to_string());
            let rec = algo_of(&recommendation.config).unwrap_or_else(|| cur.clone());
            let measured = zswap::ZswapMeasured {
                replayed,
                refs,
                ref_algos: zp.refs.clone(),
                scale: zp.scale,
            };
            Some(zswap::advise(
                z,
                pages,
                ps,
                &opts.device,
                &measured,
                &candidates,
                (&cur, &rec),
                &recommendation.config,
                &rates,
                &opts.budgets,
                // A random sample stands for its whole input: the pages zswap would hold.
                recommendation.projected_pages.max(projected_pages),
            )?)
        }
        _ => None,
    };
    // Input too small to advise on gets no zram-or-zswap verdict either.
    if let (Some(z), Some(UncertainReason::TooFewPages { measured_pages, min_pages })) =
        (zswap.as_mut(), &recommendation.uncertain_reason)
    {
        z.verdict = zswap::Verdict::none(format!(
            "no verdict: the input is too small to advise on ({measured_pages} pages measured, \
             fewer than the {min_pages} the lab needs)"
        ));
    }
    let decision = decision::decide(&decision::Inputs {
        candidates: &candidates,
        policies: &policies,
        recommendation: &recommendation,
        zswap: zswap.as_ref().map_or(&[], |z| &z.candidates),
        swaps: zswap.as_ref().map_or(&[], |z| &z.live.swaps),
        zswap_swap_bytes: zswap.as_ref().map_or(0, |z| z.stack.swap_device_bytes),
        estimates: estimates.as_ref(),
        live_zram: opts.now.is_some(),
        page_size: ps,
    });
    // One answer: the zram-or-zswap verdict is the decision's, and the swap stack follows it.
    if let Some(z) = zswap.as_mut()
        && !z.verdict.is_none()
    {
        z.verdict = z.verdict.clone().following(&decision);
        z.stack = zswap::stack(
            &z.live,
            &z.verdict,
            &z.candidates,
            &rates,
            decision.pages,
            ps,
            &opts.device,
        );
    }
    Ok(LabReport {
        schema_version: SCHEMA_VERSION,
        zmem_version: env!("CARGO_PKG_VERSION").into(),
        source,
        kernel: opts.kernel.clone().unwrap_or_else(|| KernelCaps {
            source: "not read: the caller gave no kernel capabilities, so every candidate \
                     counts as available"
                .into(),
            ..KernelCaps::default()
        }),
        compressors,
        allocators,
        policies,
        swap,
        swap_device: opts.device.clone(),
        trace,
        now: opts.now.clone(),
        rates,
        candidates,
        budgets: opts.budgets,
        recommendation,
        estimates,
        skipped_policies,
        zswap,
        decision: Some(decision),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoProgress;

    /// Timings: every field that is not a function of the pages alone.
    const TIMED: [&str; 19] = [
        "comp_mbps",
        "decomp_mbps",
        "freeing_mbps",
        "write_mbps",
        "write_seconds",
        "recompress_seconds",
        "cpu_seconds_per_gb",
        "load_latency",
        "compress_cpu_ns_per_page",
        "decompress_cpu_ns_per_page",
        "recompress_cpu_ns_per_page",
        "store_p99_ns",
        "load_p50_ns",
        "load_p99_ns",
        "hit_p50_ns",
        "hit_p99_ns",
        "device_p50_ns",
        "device_p99_ns",
        "cpu_seconds",
    ];

    fn untimed(v: impl Serialize) -> serde_json::Value {
        fn strip(v: &mut serde_json::Value) {
            match v {
                serde_json::Value::Object(m) => {
                    m.retain(|k, _| !TIMED.contains(&k.as_str()));
                    m.values_mut().for_each(strip);
                }
                serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
                _ => {}
            }
        }
        let mut v = serde_json::to_value(v).unwrap();
        strip(&mut v);
        v
    }

    /// The lab's rows, measured as jobs on two threads with the zsmalloc row taken from the
    /// default policy's device, equal (every field but the timings) each step computed on its
    /// own, one after another, as the lab did before.
    #[test]
    fn the_jobs_give_what_each_step_gives_alone() {
        let set = zmem_pages::builtin::default_set_with(4096).unwrap();
        let pages = &set.bytes()[..384 * 4096];
        let source = Source {
            kind: "builtin".into(),
            detail: String::new(),
            pages: 384,
            page_size: 4096,
            fallback_reason: None,
        };
        let opts = LabOptions { min_time: Duration::ZERO, threads: 2, ..LabOptions::default() };
        let r = run(pages, source, &opts, &NoProgress).unwrap();

        let bench = Options { min_time: Duration::ZERO, max_passes: 1, ..Options::default() };
        let compressors = comp_bench::run(&[pages], &AlgoSpec::all(), &bench, &NoProgress).unwrap();
        let mut allocators: Vec<PoolRow> = zmem_pool::allocators()
            .iter()
            .map(|a| measure::pool(a.name, pages, 4096, &[], &NoProgress).unwrap())
            .collect();
        measure::relate_to_zsmalloc(&mut allocators);
        let policies: Vec<PolicyRow> = default_policies()
            .iter()
            .map(|p| policy::measure(p, pages, 4096, &[], &mut Vec::new(), &NoProgress).unwrap())
            .collect();
        let swap = measure::swap(pages, 4096, &SwapDevice::default(), &NoProgress).unwrap();

        assert_eq!(r.compressors.len(), AlgoSpec::all().len() + 1);
        assert_eq!(untimed(&r.compressors), untimed(&compressors));
        assert_eq!(untimed(&r.allocators), untimed(&allocators));
        assert_eq!(untimed(&r.policies), untimed(&policies));
        assert_eq!(untimed(&r.swap), untimed(&swap));
        // The candidates' pools and savings follow from the rows alone.
        let rates = now::replay_rates(&swap, "not observed");
        let (candidates, _) = recommend(&policies, None, None, &rates, &opts.budgets).unwrap();
        let sizes = |c: &[Candidate]| -> Vec<(String, u64, i64)> {
            c.iter().map(|x| (x.name.clone(), x.pool_bytes, x.memory_saved_bytes_vs_now)).collect()
        };
        assert_eq!(sizes(&r.candidates), sizes(&candidates));
        assert!(r.estimates.is_none(), "no sample, no estimates");
    }

    /// One worker runs every job, each after the rows it waits for (no wait with nobody to
    /// end it), and gives what two do.
    #[test]
    fn one_thread_gives_what_two_give() {
        let set = zmem_pages::builtin::default_set_with(4096).unwrap();
        let pages = &set.bytes()[..256 * 4096];
        let source = Source {
            kind: "builtin".into(),
            detail: String::new(),
            pages: 256,
            page_size: 4096,
            fallback_reason: None,
        };
        let policies = candidates("lzo-rle")[7..].to_vec();
        let run_on = |threads| {
            let opts = LabOptions {
                min_time: Duration::ZERO,
                threads,
                policies: policies.clone(),
                ..LabOptions::default()
            };
            run(pages, source.clone(), &opts, &NoProgress).unwrap()
        };
        let (one, two) = (run_on(1), run_on(2));
        assert_eq!(untimed(&one.compressors), untimed(&two.compressors));
        assert_eq!(untimed(&one.allocators), untimed(&two.allocators));
        assert_eq!(untimed(&one.policies), untimed(&two.policies));
        assert!(one.policies.iter().all(|p| p.verified));
    }

    #[test]
    fn a_large_input_is_timed_in_one_pass_per_batch_and_a_small_one_in_several() {
        let ms50 = Duration::from_millis(50);
        assert_eq!(per_batch(ms50, 1024 * 4096), ms50);
        assert_eq!(per_batch(ms50, 6144 * 4096), ms50 / 6);
        assert_eq!(per_batch(ms50, 100 << 20), ms50 / 25);
    }

    /// 1, 10 and 16 pages: a result, not an error and not advice. The recommendation is marked
    /// uncertain with its reason, and the dictionary, which needs 16 pages to train on besides
    /// those it is measured on, is skipped and listed. (Before: 10 pages failed in dictionary
    /// training, 16 recommended zstd with "memory saved -318.8 %".)
    #[test]
    fn too_few_pages_give_an_uncertain_result() {
        let set = zmem_pages::builtin::default_set_with(4096).unwrap();
        for n in [1usize, 10, 16] {
            let source = Source {
                kind: "file".into(),
                detail: String::new(),
                pages: n as u64,
                page_size: 4096,
                fallback_reason: None,
            };
            let opts = LabOptions { min_time: Duration::ZERO, threads: 2, ..LabOptions::default() };
            let r = run(&set.bytes()[..n * 4096], source, &opts, &NoProgress)
                .unwrap_or_else(|e| panic!("{n} pages: {e}"));
            let rec = &r.recommendation;
            assert!(rec.uncertain, "{n} pages");
            assert_eq!(
                rec.uncertain_reason,
                Some(UncertainReason::TooFewPages {
                    measured_pages: n as u64,
                    min_pages: sample::MIN_PAGES
                })
            );
            let skipped: Vec<&str> = r.skipped_policies.iter().map(|p| p.name.as_str()).collect();
            assert_eq!(skipped, ["zstd + dict"], "{n} pages");
            assert!(r.policies.iter().all(|p| !p.policy.dict && p.verified));
        }
        assert_eq!(uncertainty(sample::MIN_PAGES), None);
        assert!(uncertainty(sample::MIN_PAGES - 1).is_some());
    }

    /// A sampled run carries estimates for every plain algorithm it measured.
    #[test]
    fn a_sampled_run_estimates_every_plain_algorithm() {
        let set = zmem_pages::builtin::default_set_with(4096).unwrap();
        let whole =
            zmem_pages::PageSet::from_raw(set.bytes()[..1024 * 4096].to_vec(), 4096).unwrap();
        let (pages, design) = sample::draw(&whole, 128, 1);
        let source = Source {
            kind: "builtin".into(),
            detail: String::new(),
            pages: 128,
            page_size: 4096,
            fallback_reason: None,
        };
        let policies = vec![Policy::single("lz4"), Policy::single("zstd")];
        let opts = LabOptions {
            min_time: Duration::ZERO,
            policies,
            sample: Some(design),
            ..LabOptions::default()
        };
        let r = run(&pages, source, &opts, &NoProgress).unwrap();
        let e = r.estimates.expect("estimates");
        assert_eq!(e.design.population_pages, 1024);
        let algos: Vec<&str> = e.rows.iter().map(|x| x.algo.as_str()).collect();
        assert_eq!(algos, ["lz4", "zstd"]);
        for x in &e.rows {
            assert!(x.pool_bytes.low <= x.pool_bytes.estimate);
            assert!(x.pool_bytes.estimate <= x.pool_bytes.high);
            assert!(x.ratio.low <= x.ratio.estimate && x.ratio.estimate <= x.ratio.high);
        }
    }
}

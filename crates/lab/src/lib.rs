//! zmem-lab: zmem's main job (`zmem lab`, `zmem.lab`). Given a page set (what the kernel holds
//! in zram now, this machine's processes, a file, or the built-in set), it measures every
//! compressor, every allocator and every candidate configuration (zram's and zswap's) on those
//! pages, projects each onto the user's machine, and decides once, with the numbers behind it,
//! as a [`LabReport`] value: data only, no prose and no shell text (zmem-render writes those).
//!
//! The flow, one module per step, each a function from what the step before gave:
//!
//! 1. [`evidence`]: where the pages (and the access trace) come from: a page set the user
//!    named, the active zram swap devices, this machine's processes, or the built-in set,
//!    sampled to size; a [`Source`] says which and why. [`now`]: the live device beside zmem's
//!    prediction, and the swap rates.
//! 2. `jobs` (`measure`, `policy`): what is measured on those pages, in one phase: the
//!    compressor table (zmem-experiments' `comp_bench`), the allocators under zram, each zram
//!    [`Policy`], zswap's grid and zram under memory pressure (zmem-sim's replay).
//! 3. [`fit`] with [`cost`], and [`zswap`]: every configuration projected onto the machine as
//!    one [`Candidate`] type ([`candidate`]: zram's, zswap's, and "none" where nothing runs), on
//!    one basis, with one budget check.
//! 4. [`decision`]: the one judge. It alone ranks candidates and breaks ties; [`zswap::stack`]
//!    then gives the companion settings for what it chose.
//!
//! `zmem validate lab` (zmem-validate, above this crate) checks the advice against the kernel:
//! each candidate the running kernel can run, played by the kernel beside the lab's prediction.
//!
//! [`run_lab`] is the one entry point both front ends call with [`LabRequest`] (the CLI's
//! flags, Python's keyword arguments): steps 1 to 4. [`run`] is steps 2 to 4 on what step 1
//! gave. Nothing here prints.
//!
//! Not for: printing or writing files (zmem-render, the front ends), or measuring outside the
//! main job (zmem-experiments).

pub mod candidate;
pub mod cost;
pub mod decision;
pub mod evidence;
pub mod facts;
pub mod findings;
pub mod fit;
mod jobs;
pub mod judge;
mod measure;
pub mod now;
pub mod operating;
pub mod policy;
pub mod proactive;
pub mod report;
pub mod request;
pub mod sample;
pub mod speed;
pub mod zswap;

use std::time::Duration;
use zmem_experiments::comp_bench::{AlgoSpec, Options};

pub use zmem_experiments::LabError;
pub use zmem_sim::{NoProgress, Progress};
// What the front ends need of the engines, so that they depend on this crate, not on them.
pub use zmem_zram::DEFAULT_ALGORITHM;
pub use zmem_zram::parse::parse_size;
pub use zmem_zswap::{Incompressible, ZswapParams};

pub use candidate::{Basis, Candidate, Config, NowSource, OverBudget};
pub use cost::Budgets;
pub use decision::{Decision, Kind};
pub use evidence::{Coverage, Evidence, Input, Source, TraceSource};
pub use facts::PageFacts;
pub use findings::Findings;
pub use fit::{UncertainReason, kernel_fit, uncertainty};
pub use measure::{PoolRow, SwapRow};
pub use now::{FieldComparison, LiveConfig, Now, Rates};
pub use policy::{Policy, PolicyRow, candidates, default_policies};
pub use report::{LabOptions, LabReport, PressureReading, SCHEMA_VERSION, SkippedPolicy};
pub use request::{
    ArgError, CaptureRequest, CaptureSummary, Captured, CompBenchRequest, GenerateRequest,
    LabRequest, ReplayRequest, StudyRequest, ZramRequest, auto_device, measure_lab,
    parse_max_pages, parse_ram, parse_source, parse_swap_device, run_lab, swap_device_text,
};
pub use zmem_kernel::caps::KernelCaps;

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

/// Runs every experiment on `pages` (whole pages of `source.page_size`): measures, projects
/// every candidate, and judges once.
pub fn run(
    pages: &[u8],
    source: Source,
    opts: &LabOptions,
    progress: &dyn Progress,
) -> Result<LabReport, LabError> {
    let mut opts = opts.clone();
    run_beside(pages, source, &mut opts, progress, |_| Ok(()))
}

/// [`run`], with the observation window beside the measurements: `window` runs once they are
/// done, waits for what it observes (the live swap's rates, the pressure, the cold curve) and
/// sets it on `opts` before the judgement reads it.
pub fn run_beside(
    pages: &[u8],
    source: Source,
    opts: &mut LabOptions,
    progress: &dyn Progress,
    window: impl FnOnce(&mut LabOptions) -> Result<(), LabError>,
) -> Result<LabReport, LabError> {
    judge::judge(&measure_beside(pages, source, opts, progress, window)?)
}

/// Steps 1 and 2 of [`run_beside`]: everything measured on `pages` and observed beside them,
/// as [`Findings`] (what `zmem evidence` writes), before any judgement.
pub fn measure_beside(
    pages: &[u8],
    source: Source,
    opts: &mut LabOptions,
    progress: &dyn Progress,
    window: impl FnOnce(&mut LabOptions) -> Result<(), LabError>,
) -> Result<Findings, LabError> {
    let ps = source.page_size;
    let pages = &pages[..pages.len() / ps * ps];
    if pages.is_empty() {
        return Err(LabError::NoPages);
    }
    let n = (pages.len() / ps) as u64;
    let current =
        opts.now.as_ref().map_or(zmem_zram::DEFAULT_ALGORITHM, |n| &n.config.comp_algorithm);
    let (list, skipped_policies) = policies_to_measure(pages, ps, opts, current)?;
    // Taken out of the options (the report keeps its source): no copy of a long trace.
    let (accesses, trace) = match opts.trace.take() {
        Some(given) => given,
        None => {
            let a = evidence::trace_for(n)?;
            let accesses = a.len() as u64;
            (a, TraceSource { accesses, ..TraceSource::default() })
        }
    };
    // The pages the projection is for: the live device's, else the whole input's.
    let projected_pages = opts
        .now
        .as_ref()
        .map(|x| x.stored_pages)
        .or(opts.sample.map(|d| d.population_pages))
        .unwrap_or(n)
        .max(n);
    let zswap_plan = zswap_plan(opts, &list, current, ps, n, projected_pages);
    let threads = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let plan = jobs::Plan {
        pages,
        page_size: ps,
        bench: Options {
            page_size: ps,
            min_time: per_batch(opts.min_time, pages.len()),
            max_passes: 20,
            batch_bytes: BATCH_BYTES,
        },
        specs: AlgoSpec::all(),
        policies: &list,
        accesses: &accesses,
        device: &opts.device,
        threads,
        zswap: zswap_plan.as_ref(),
    };
    let m = jobs::run(&plan, progress)?;
    window(opts)?;
    let opts = &*opts;
    let rates = match &opts.rates {
        Ok(r) => r.clone(),
        Err(why) => now::replay_rates(&m.swap, why),
    };
    // Every algorithm measured alone gets its estimate.
    let plain: Vec<&str> = list.iter().filter(|p| p.is_plain()).map(|p| p.algo.as_str()).collect();
    let facts = PageFacts { lengths: m.lengths, ..PageFacts::new(pages, ps) };
    let estimates = opts
        .sample
        .map(|design| sample::estimate_from_facts(&facts, design, &plain))
        .transpose()?;
    let zswap_measured = m.zswap.zip(zswap_plan).map(|((replayed, refs), zp)| {
        zswap::ZswapMeasured { replayed, refs, ref_algos: zp.refs, scale: zp.scale }
    });
    Ok(Findings {
        format: findings::FORMAT.into(),
        version: findings::VERSION,
        zmem_version: env!("CARGO_PKG_VERSION").into(),
        identifies: findings::Identify::ALL,
        host: opts.host.clone(),
        source,
        facts,
        kernel: opts.kernel.clone(),
        compressors: m.compressors,
        allocators: m.allocators,
        policies: m.policies,
        swap: m.swap,
        zswap_measured,
        skipped_policies,
        estimates,
        swap_device: opts.device.clone(),
        trace,
        now: opts.now.clone(),
        rates,
        budgets: opts.budgets,
        pressure: opts.pressure.clone(),
        operating: opts.operating.clone(),
        proactive: opts.proactive.clone(),
        zswap: opts.zswap.clone(),
        kernel_speed: speed::kernel_speed(),
    })
}

/// The policies to measure: the caller's, else [`candidates`] for the current primary; a
/// dictionary needs pages to train on besides those it is measured on, so with too few it is
/// left out, and the report says so.
fn policies_to_measure(
    pages: &[u8],
    ps: usize,
    opts: &LabOptions,
    current: &str,
) -> Result<(Vec<Policy>, Vec<SkippedPolicy>), LabError> {
    let list = if opts.policies.is_empty() { candidates(current) } else { opts.policies.clone() };
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
    if kept.is_empty() {
        return Err(LabError::Setup(
            "no policy left to measure: a dictionary needs more pages to train on".into(),
        ));
    }
    Ok((kept, skipped))
}

/// zswap's grid and its zram references (the current algorithm first, then every other plain
/// algorithm the kernel runs), measured in the one phase with everything else.
fn zswap_plan(
    opts: &LabOptions,
    list: &[Policy],
    current: &str,
    ps: usize,
    n: u64,
    projected_pages: u64,
) -> Option<jobs::ZswapPlan> {
    let live = &opts.zswap.as_ref()?.live;
    let mut refs = vec![current.to_string()];
    for p in list.iter().filter(|p| p.is_plain()) {
        let runs = opts.kernel.as_ref().is_none_or(|k| k.zram_can_run(&p.algo).is_ok());
        if runs && !refs.contains(&p.algo) {
            refs.push(p.algo.clone());
        }
    }
    Some(jobs::ZswapPlan {
        grid: zswap::grid(live.present, &live.offered, live.state.module.accept_threshold_percent),
        refs,
        scale: zswap::pool_scale(live.mem_total_bytes, ps, n, projected_pages),
        cgroup: match live.memory_cgroup_version {
            Some(2) => zmem_sim::replay::CgroupVersion::V2,
            _ => zmem_sim::replay::CgroupVersion::V1,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoProgress;
    use serde::Serialize;
    use zmem_experiments::comp_bench;
    use zmem_sim::swap_device::SwapDevice;

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
        let candidates = fit::zram_candidates(
            &policies,
            None,
            None,
            &rates,
            &opts.budgets,
            None,
            speed::kernel_speed().overhead,
        )
        .unwrap();
        let pools = |c: &[Candidate]| -> Vec<(String, u64)> {
            c.iter().map(|x| (x.name.clone(), x.pool_bytes)).collect()
        };
        assert_eq!(pools(&r.candidates[..candidates.len()]), pools(&candidates));
        // And "none" last: nothing runs; every saving is against the pages uncompressed.
        assert_eq!(r.candidates.len(), candidates.len() + 1);
        let orig = 384 * 4096;
        assert!(r.candidates.iter().all(|c| c.memory_saved_bytes == orig - c.pool_bytes as i64));
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
            assert_eq!(r.decision.kind, Kind::None, "{n} pages");
            assert_eq!(
                r.decision.reason,
                decision::Reason::TooFewPages {
                    measured_pages: n as u64,
                    min_pages: sample::MIN_PAGES
                }
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
            // Each plain candidate's pool is its own estimate, not the sample device's pool
            // scaled by the current one's ratio (which carries each device's partly filled
            // zspages as many times over as the sample is smaller).
            let c = r.candidates.iter().find(|c| c.name == format!("zram {}", x.algo)).unwrap();
            assert_eq!(c.pool_bytes, x.pool_bytes.estimate.round() as u64, "{}", x.algo);
        }
    }

    /// A process that ended before T weighs nothing in the cold bytes' compressibility; a
    /// live one its share idle at T; one the curve did not watch, the curve's overall share.
    #[test]
    fn a_process_gone_before_t_holds_no_cold_bytes() {
        use zmem_kernel::cold::ProcessCold;
        let mib = 1u64 << 20;
        let proc_cold = |pid: u32, anon: u64, cold: u64, exited: Option<u64>| ProcessCold {
            exited_before_secs: exited,
            ..ProcessCold::steady(pid, "p", anon, vec![cold])
        };
        let mut c = crate::operating::tests::curve(&[60], &[900 * mib], 1000 * mib);
        c.per_process = vec![
            proc_cold(1, 1000 * mib, 900 * mib, None),
            proc_cold(2, 200 * mib, 50 * mib, Some(10)),
        ];
        let (by_pid, overall) = judge::cold_shares(&c, 60).expect("T read");
        assert_eq!(by_pid.get(&1), Some(&0.9));
        assert_eq!(by_pid.get(&2), Some(&0.0), "ended before T");
        assert!(!by_pid.contains_key(&3) && (overall - 0.9).abs() < 1e-9);
    }
}

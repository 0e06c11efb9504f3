//! Step 2's measurements as independent jobs spread over the machine's cores.
//!
//! Every row of step 2 (a compressor, an allocator, a policy, a replay) is measured on its own
//! stream or device, so the rows do not depend on each other: they are jobs, taken from one list
//! by a few worker threads, the slowest first (so no core idles at the end waiting on one long
//! job), and put back in the report's order. Each job runs on one thread, so a row means what it
//! meant when the lab ran on one thread: CPU costs are that thread's CPU time; wall-clock speeds
//! and latencies can come out a little lower, as two jobs share the caches and the memory
//! bandwidth (as the machine's other load could always slow them).
//!
//! Work done once is not done twice: the zsmalloc row of the allocator table is the device the
//! default-algorithm policy already wrote ([`measure::is_pool_run`]), so those pages are not
//! compressed a second time.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::comp_bench::{self, AlgoSpec, Options, Row};
use crate::replay::Access;
use crate::swap_device::SwapDevice;
use crate::{LabError, Progress};

use super::measure::{self, SWAP_CASES};
use super::policy::{self, Policy, PolicyRow};
use super::{PoolRow, SwapRow};

/// What step 2 measured, each table in the report's order.
#[derive(Debug)]
pub(super) struct Measured {
    pub compressors: Vec<Row>,
    pub allocators: Vec<PoolRow>,
    pub policies: Vec<PolicyRow>,
    pub swap: Vec<SwapRow>,
}

/// What step 2 measures on the pages.
pub(super) struct Plan<'a> {
    pub pages: &'a [u8],
    pub page_size: usize,
    /// The compressor table's options and algorithms.
    pub bench: Options,
    pub specs: Vec<AlgoSpec>,
    pub policies: &'a [Policy],
    /// The trace the swap replays run.
    pub accesses: &'a [Access],
    /// The device behind the swap file, whose latencies the swap replays charge.
    pub device: &'a SwapDevice,
    /// Worker threads (at least one).
    pub threads: usize,
}

#[derive(Debug, Clone, Copy)]
enum Job {
    Memcpy,
    Compressor(usize),
    Allocator(usize),
    Policy(usize),
    Swap(usize),
}

enum Done {
    Compressor(usize, Row),
    Allocator(usize, PoolRow),
    // Boxed: a policy's row (its latency histogram) is much the largest.
    Policy(usize, Box<PolicyRow>),
    Swap(usize, SwapRow),
}

/// A rough cost of compressing a page with `algo`, relative to lzo-rle's: only the order of the
/// jobs depends on it.
fn weight(algo: &str) -> f64 {
    match algo {
        "deflate" => 12.0,
        "lz4hc" => 8.0,
        "842" => 6.0,
        "zstd" => 3.0,
        _ => 1.0,
    }
}

/// The jobs of `plan`, slowest first (ties keep the report's order).
fn jobs(plan: &Plan, allocators: &[&str], reused: &[Option<usize>]) -> Vec<Job> {
    let mut v: Vec<(f64, Job)> = vec![(0.1, Job::Memcpy)];
    for (i, s) in plan.specs.iter().enumerate() {
        v.push((weight(&s.name) + 0.3, Job::Compressor(i)));
    }
    for (i, _) in allocators.iter().enumerate().filter(|(i, _)| reused[*i].is_none()) {
        v.push((1.2, Job::Allocator(i)));
    }
    for (i, p) in plan.policies.iter().enumerate() {
        let second: f64 = p.recomp.iter().map(|a| weight(a)).sum();
        let recompressed = if p.mark_idle {
            second
        } else if p.recompresses() {
            0.1 * second
        } else {
            0.0
        };
        let dict = if p.dict { 1.0 } else { 0.0 };
        v.push((weight(&p.algo) + 0.6 + recompressed + dict, Job::Policy(i)));
    }
    for i in 0..SWAP_CASES.len() {
        v.push((0.5, Job::Swap(i)));
    }
    // A stable sort: equal weights stay in the report's order.
    v.sort_by(|a, b| b.0.total_cmp(&a.0));
    v.into_iter().map(|(_, j)| j).collect()
}

/// Forwards the jobs' progress into one phase: jobs run at once, so their own phases would
/// overwrite each other.
struct Overall<'a>(&'a dyn Progress);

impl Progress for Overall<'_> {
    fn start(&self, _label: &str, _total: u64) {}
    fn advance(&self, n: u64) {
        self.0.advance(n);
    }
    fn finish(&self) {}
}

fn run_job(plan: &Plan, allocators: &[&str], job: Job, p: &dyn Progress) -> Result<Done, LabError> {
    let (pages, ps) = (plan.pages, plan.page_size);
    Ok(match job {
        Job::Memcpy => Done::Compressor(0, comp_bench::memcpy_row(&[pages], &plan.bench, p)?),
        Job::Compressor(i) => {
            Done::Compressor(i + 1, comp_bench::algo_row(&[pages], &plan.specs[i], &plan.bench, p)?)
        }
        Job::Allocator(i) => Done::Allocator(i, measure::pool(allocators[i], pages, ps, p)?),
        Job::Policy(i) => {
            Done::Policy(i, Box::new(policy::measure(&plan.policies[i], pages, ps, p)?))
        }
        Job::Swap(i) => {
            let (fraction, kind) = SWAP_CASES[i];
            Done::Swap(
                i,
                measure::swap_row(pages, ps, plan.accesses, fraction, kind, plan.device, p)?,
            )
        }
    })
}

/// Measures everything in `plan` on `plan.threads` threads. The first error (in the jobs'
/// order) is returned; after an error no new job starts.
pub(super) fn run(plan: &Plan, progress: &dyn Progress) -> Result<Measured, LabError> {
    let allocators: Vec<&str> = zmem_pool::allocators().iter().map(|a| a.name).collect();
    // The allocator rows a policy's device gives without a run of their own.
    let reused: Vec<Option<usize>> = allocators
        .iter()
        .map(|a| plan.policies.iter().position(|p| measure::is_pool_run(p, a)))
        .collect();
    let jobs = jobs(plan, &allocators, &reused);
    let n = (plan.pages.len() / plan.page_size) as u64;
    let units = |j: &Job| match j {
        Job::Policy(_) => 2 * n,
        Job::Swap(_) => plan.accesses.len() as u64,
        _ => n,
    };
    let threads = plan.threads.clamp(1, jobs.len());
    progress.start(&format!("measuring on {threads} threads"), jobs.iter().map(units).sum());
    let overall = Overall(progress);
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Mutex<Vec<(usize, Result<Done, LabError>)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while !failed.load(Ordering::Relaxed) {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&job) = jobs.get(k) else { break };
                    let r = run_job(plan, &allocators, job, &overall);
                    failed.fetch_or(r.is_err(), Ordering::Relaxed);
                    // A poisoned lock only means another worker panicked, which the scope
                    // re-raises anyway.
                    results.lock().unwrap_or_else(|e| e.into_inner()).push((k, r));
                }
            });
        }
    });
    progress.finish();
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|(k, _)| *k);
    let mut compressors = vec![None; plan.specs.len() + 1];
    let mut pools = vec![None; allocators.len()];
    let mut policies = vec![None; plan.policies.len()];
    let mut swap = vec![None; SWAP_CASES.len()];
    for (_, r) in results {
        match r? {
            Done::Compressor(i, row) => compressors[i] = Some(row),
            Done::Allocator(i, row) => pools[i] = Some(row),
            Done::Policy(i, row) => policies[i] = Some(*row),
            Done::Swap(i, row) => swap[i] = Some(row),
        }
    }
    let policies: Vec<PolicyRow> =
        policies.into_iter().map(|r| r.expect("every job ran")).collect();
    let mut allocators: Vec<PoolRow> = pools
        .into_iter()
        .zip(&reused)
        .zip(&allocators)
        .map(|((row, by), name)| match by {
            Some(p) => measure::pool_from_policy(name, &policies[*p]),
            None => row.expect("every job ran"),
        })
        .collect();
    measure::relate_to_zsmalloc(&mut allocators);
    Ok(Measured {
        compressors: compressors.into_iter().map(|r| r.expect("every job ran")).collect(),
        allocators,
        policies,
        swap: swap.into_iter().map(|r| r.expect("every job ran")).collect(),
    })
}

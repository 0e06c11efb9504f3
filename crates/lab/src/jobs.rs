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
//! compressed a second time; and the compressor table's row of an algorithm a policy, an
//! allocator row or a replay (zswap's candidates and references, the swap table) uses keeps
//! the objects it made ([`crate::objects`]), which those devices and replays then store instead
//! of compressing every page again. Such a job waits for the rows whose objects
//! it takes: a worker takes the first job in the list whose objects are made, and waits only
//! when every job left waits for a row still running.

use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};

use zmem_comp::Params;

use crate::{LabError, Progress};
use zmem_experiments::comp_bench::{self, AlgoSpec, Options, Row};
use zmem_experiments::objects::Objects;
use zmem_sim::device::ZramRunConfig;
use zmem_sim::replay::{Access, CgroupVersion, SwapKind};
use zmem_sim::swap_device::SwapDevice;

use crate::facts::CodecLengths;
use crate::measure::{self, SWAP_CASES};
use crate::measure::{PoolRow, SwapRow};
use crate::policy::{self, Policy, PolicyRow};
use crate::zswap::{Replayed, ZswapConfigChoice};

/// What step 2 measured, each table in the report's order.
#[derive(Debug)]
pub(super) struct Measured {
    pub compressors: Vec<Row>,
    pub allocators: Vec<PoolRow>,
    pub policies: Vec<PolicyRow>,
    pub swap: Vec<SwapRow>,
    /// zswap's grid replayed (in the grid's order, then the accept-threshold sweep's
    /// configurations that ran), and the zram references, in [`ZswapPlan::refs`]' order.
    pub zswap: Option<(Vec<Replayed>, Vec<SwapRow>)>,
    /// Each page's compressed length with every algorithm the table measured at its default
    /// parameters, from the table's own pass, in the table's order.
    pub lengths: Vec<CodecLengths>,
}

/// zswap's candidates, measured in the same phase as every other row: each available
/// configuration of the grid replayed on the lab's trace with RAM for a quarter of the pages,
/// beside zram references (one per algorithm) on the same trace and RAM, and, where a
/// configuration's pool hit its limit, the same configuration at each other accept threshold
/// (a job that waits for that replay, and does nothing where the pool never filled).
pub(super) struct ZswapPlan {
    pub grid: Vec<ZswapConfigChoice>,
    /// Algorithms of the zram references.
    pub refs: Vec<String>,
    /// `pool_scale` of [`crate::zswap::replay_percent`].
    pub scale: f64,
    /// The machine's memory cgroup version: v2 charges zswap's pool to the replay's memcg.
    pub cgroup: CgroupVersion,
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
    /// zswap's grid, where the run has a zswap reading.
    pub zswap: Option<&'a ZswapPlan>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Job {
    Memcpy,
    Compressor(usize),
    Allocator(usize),
    Policy(usize),
    Swap(usize),
    /// A zram reference replay (index into `ZswapPlan::refs`).
    ZswapRef(usize),
    /// A grid configuration's replay (index into the grid).
    Zswap(usize),
    /// An accept-threshold variant (index into the sweep list).
    ZswapSweep(usize),
}

enum Done {
    /// A row, and its pages' lengths where the row is at the default parameters.
    Compressor(usize, Row, Option<CodecLengths>),
    Allocator(usize, PoolRow),
    // Boxed: a policy's row (its latency histogram) is much the largest.
    Policy(usize, Box<PolicyRow>),
    Swap(usize, SwapRow),
    ZswapRef(usize, SwapRow),
    Zswap(usize, SwapRow),
    /// None: its base configuration's pool never hit its limit, so the threshold never acts.
    ZswapSweep(usize, Option<SwapRow>),
}

/// The accept-threshold variants of `grid`'s available configurations: (the grid index it
/// varies, the variant).
pub(super) fn sweeps(grid: &[ZswapConfigChoice]) -> Vec<(usize, ZswapConfigChoice)> {
    grid.iter()
        .enumerate()
        .filter(|(_, c)| c.available)
        .flat_map(|(g, c)| {
            crate::zswap::ACCEPT_THRESHOLDS
                .iter()
                .filter(move |&&a| a != c.params.accept_threshold_percent)
                .map(move |&a| (g, c.at_accept(a)))
        })
        .collect()
}

/// Rough costs of compressing and of decompressing a page with `algo`, relative to compressing
/// it with lzo-rle (measured on real pages, docs/BENCHMARKS.md): only the order of the jobs
/// depends on them.
fn weight(algo: &str) -> (f64, f64) {
    match algo {
        "lz4hc" => (12.0, 0.2),
        "842" => (9.0, 3.0),
        "deflate" => (8.5, 1.0),
        "zstd" => (3.5, 0.8),
        _ => (1.0, 0.3),
    }
}

/// The algorithms whose objects a job's device takes (a policy's primary, unless it has a
/// dictionary, and its secondaries; an allocator row's default algorithm; a replay's
/// compressor, zswap's or the zram device's): the compressor rows it waits for, where those
/// keep their objects. A replay asks for page `i`'s object by its swap offset, which is `i`
/// (zmem-sim's `Simulator::with_objects`), and replays `plan.pages`, the pages the rows
/// compressed, in the same order.
fn uses(plan: &Plan<'_>, job: Job) -> Vec<String> {
    let zswap = |f: &dyn Fn(&ZswapPlan) -> Option<String>| plan.zswap.and_then(f);
    match job {
        Job::Policy(i) => {
            let p = &plan.policies[i];
            let primary = (!p.dict).then(|| p.algo.clone());
            primary.into_iter().chain(p.recomp.iter().cloned()).collect()
        }
        Job::Allocator(_) | Job::Swap(_) => vec![default_algo().into()],
        Job::ZswapRef(k) => zswap(&|z| z.refs.get(k).cloned()).into_iter().collect(),
        Job::Zswap(g) => {
            zswap(&|z| Some(z.grid.get(g)?.params.compressor.clone())).into_iter().collect()
        }
        Job::ZswapSweep(s) => zswap(&|z| Some(sweeps(&z.grid).get(s)?.1.params.compressor.clone()))
            .into_iter()
            .collect(),
        Job::Memcpy | Job::Compressor(_) => Vec::new(),
    }
}

fn default_algo() -> &'static str {
    zmem_zram::DEFAULT_ALGORITHM
}

/// The compressor rows whose objects some job takes: a row at the default parameters (the
/// devices' own, [`ZramRunConfig`]) of an algorithm a job uses.
fn kept(plan: &Plan, jobs: &[Job]) -> Vec<bool> {
    debug_assert!(ZramRunConfig::default().params.is_none());
    plan.specs
        .iter()
        .map(|s| {
            s.params == Params::default() && jobs.iter().any(|&j| uses(plan, j).contains(&s.name))
        })
        .collect()
}

/// What job `job` waits for: the compressor rows whose objects it takes (product `i`: row
/// `i`), and, for an accept-threshold variant, its base configuration's replay (product
/// `specs.len() + g`: grid entry `g`).
fn needs(plan: &Plan, kept: &[bool], job: Job) -> Vec<usize> {
    let used = uses(plan, job);
    let mut rows: Vec<usize> =
        (0..plan.specs.len()).filter(|&i| kept[i] && used.contains(&plan.specs[i].name)).collect();
    if let (Job::ZswapSweep(s), Some(z)) = (job, plan.zswap) {
        rows.extend(sweeps(&z.grid).get(s).map(|(g, _)| plan.specs.len() + g));
    }
    rows
}

/// The product job `job` makes when it ends, if any (see [`needs`]).
fn makes(plan: &Plan, kept: &[bool], job: Job) -> Option<usize> {
    match job {
        Job::Compressor(i) if kept[i] => Some(i),
        Job::Zswap(g) => Some(plan.specs.len() + g),
        _ => None,
    }
}

/// The jobs of `plan`, slowest first (ties keep the report's order). A policy or allocator row
/// whose compressions come from the compressor table costs its stores and reads (and the
/// reads' decompression) only.
fn jobs(plan: &Plan, allocators: &[&str], reused: &[Option<usize>]) -> Vec<Job> {
    let mut v: Vec<(f64, Job)> = vec![(0.4, Job::Memcpy)];
    for (i, s) in plan.specs.iter().enumerate() {
        let (c, d) = weight(&s.name);
        v.push((c + d, Job::Compressor(i)));
    }
    let table =
        |algo: &str| plan.specs.iter().any(|s| s.name == algo && s.params == Params::default());
    let compress = |algo: &str| if table(algo) { 0.0 } else { weight(algo).0 };
    for (i, _) in allocators.iter().enumerate().filter(|(i, _)| reused[*i].is_none()) {
        v.push((0.4 + compress(default_algo()), Job::Allocator(i)));
    }
    for (i, p) in plan.policies.iter().enumerate() {
        let second: f64 = p.recomp.iter().map(|a| compress(a) + weight(a).1).sum();
        let recompressed = if p.mark_idle {
            0.5 + second
        } else if p.recompresses() {
            0.1 * second
        } else {
            0.0
        };
        // Training the dictionary, and compressing every page with it.
        let primary = if p.dict { 2.0 + weight(&p.algo).0 } else { compress(&p.algo) };
        v.push((0.6 + primary + weight(&p.algo).1 + recompressed, Job::Policy(i)));
    }
    // zswap in front of a swap file at the smaller RAM swaps and reads the most; with half the
    // pages in RAM few accesses swap at all.
    for (i, &(fraction, kind)) in SWAP_CASES.iter().enumerate() {
        let w = match (fraction, kind) {
            (4, SwapKind::Zswap) => 1.7,
            (4, _) => 0.6,
            _ => 0.1,
        };
        v.push((w, Job::Swap(i)));
    }
    if let Some(z) = plan.zswap {
        for k in 0..z.refs.len() {
            v.push((0.6, Job::ZswapRef(k)));
        }
        for (g, _) in z.grid.iter().enumerate().filter(|(_, c)| c.available) {
            v.push((1.7, Job::Zswap(g)));
        }
        // Last: each waits for its base replay, and most do nothing.
        for s in 0..sweeps(&z.grid).len() {
            v.push((0.05, Job::ZswapSweep(s)));
        }
    }
    // A stable sort: equal weights stay in the report's order.
    v.sort_by(|a, b| b.0.total_cmp(&a.0));
    v.into_iter().map(|(_, j)| j).collect()
}

/// Which jobs are taken, and which compressor rows have made their objects: what the workers
/// share to pick their next job.
struct Board {
    needs: Vec<Vec<usize>>,
    state: Mutex<BoardState>,
    changed: Condvar,
}

struct BoardState {
    taken: Vec<bool>,
    made: Vec<bool>,
    failed: bool,
}

impl Board {
    fn new(needs: Vec<Vec<usize>>, specs: usize) -> Self {
        let state =
            BoardState { taken: vec![false; needs.len()], made: vec![false; specs], failed: false };
        Self { needs, state: Mutex::new(state), changed: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, BoardState> {
        // A poisoned lock only means another worker panicked, which the scope re-raises anyway.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next job: the first one not taken whose objects are made. Waits while every job
    /// left waits for a row still running; `None` when no job is left or one failed.
    fn next(&self) -> Option<usize> {
        let mut s = self.lock();
        loop {
            if s.failed {
                return None;
            }
            let ready = (0..self.needs.len())
                .find(|&k| !s.taken[k] && self.needs[k].iter().all(|&i| s.made[i]));
            if let Some(k) = ready {
                s.taken[k] = true;
                return Some(k);
            }
            if s.taken.iter().all(|&t| t) {
                return None;
            }
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// A job ended: `made` is the compressor row whose objects it made, if any.
    fn finish(&self, ok: bool, made: Option<usize>) {
        let mut s = self.lock();
        s.failed |= !ok;
        if let Some(i) = made {
            s.made[i] = true;
        }
        drop(s);
        self.changed.notify_all();
    }
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

/// What a worker keeps from job to job: the buffers of a compressor row and a policy's pages
/// read back, faulted in once per worker rather than once per row.
#[derive(Default)]
struct Scratch {
    bench: comp_bench::Scratch,
    back: Vec<u8>,
}

/// The objects of the compressor rows a job waits for, and what it shares with the others.
struct Shared<'a> {
    allocators: &'a [&'a str],
    kept: &'a [bool],
    needs: &'a [usize],
    objects: &'a [OnceLock<Objects>],
    /// The grid's replays as they end: what an accept-threshold variant reads of its base.
    zswap_rows: &'a [OnceLock<SwapRow>],
    sweeps: &'a [(usize, ZswapConfigChoice)],
}

fn run_job(
    plan: &Plan,
    sh: &Shared,
    job: Job,
    scratch: &mut Scratch,
    p: &dyn Progress,
) -> Result<Done, LabError> {
    let (pages, ps) = (plan.pages, plan.page_size);
    // Every row waited for has made its objects before the job starts (the products past the
    // compressor rows are zswap replays, read from `zswap_rows`).
    let objects: Vec<&Objects> =
        sh.needs.iter().filter_map(|&i| sh.objects.get(i)?.get()).collect();
    Ok(match job {
        Job::Memcpy => Done::Compressor(0, comp_bench::memcpy_row(&[pages], &plan.bench, p)?, None),
        Job::Compressor(i) => {
            let (spec, bench) = (&plan.specs[i], &mut scratch.bench);
            let plain = spec.params == Params::default();
            let (row, lengths) = if sh.kept[i] {
                let (row, made) =
                    comp_bench::algo_row_keeping(&[pages], spec, &plan.bench, bench, p)?;
                let lengths = made.lengths();
                // Set once: each row is one job.
                let _ = sh.objects[i].set(made);
                (row, lengths)
            } else if plain {
                comp_bench::algo_row_lengths(&[pages], spec, &plan.bench, bench, p)?
            } else {
                (comp_bench::algo_row(&[pages], spec, &plan.bench, bench, p)?, Vec::new())
            };
            let lengths = plain.then(|| CodecLengths { algo: spec.name.clone(), lengths });
            Done::Compressor(i + 1, row, lengths)
        }
        Job::Allocator(i) => {
            Done::Allocator(i, measure::pool(sh.allocators[i], pages, ps, &objects, p)?)
        }
        Job::Policy(i) => Done::Policy(
            i,
            Box::new(policy::measure(
                &plan.policies[i],
                pages,
                ps,
                &objects,
                &mut scratch.back,
                p,
            )?),
        ),
        Job::Swap(i) => {
            let (fraction, kind) = SWAP_CASES[i];
            let (acc, dev) = (plan.accesses, plan.device);
            Done::Swap(i, measure::swap_row(pages, ps, acc, fraction, kind, dev, &objects, p)?)
        }
        Job::ZswapRef(k) | Job::Zswap(k) | Job::ZswapSweep(k) => {
            let Some(z) = plan.zswap else {
                return Err(LabError::Setup("a zswap job without zswap's plan".into()));
            };
            let replay = |kind, c: &ZswapConfigChoice| {
                let (acc, dev) = (plan.accesses, plan.device);
                let r = crate::zswap::replay(
                    pages,
                    ps,
                    (acc, dev),
                    kind,
                    c,
                    (z.scale, z.cgroup),
                    &objects,
                );
                p.advance(plan.accesses.len() as u64);
                r
            };
            match job {
                Job::ZswapRef(k) => Done::ZswapRef(
                    k,
                    replay(SwapKind::Zram, &crate::zswap::zram_reference(&z.refs[k]))?,
                ),
                Job::Zswap(g) => {
                    let row = replay(SwapKind::Zswap, &z.grid[g])?;
                    let _ = sh.zswap_rows[g].set(row.clone());
                    Done::Zswap(g, row)
                }
                _ => {
                    let (g, c) = &sh.sweeps[k];
                    // The threshold acts only once the pool reached its limit (mm/zswap.c
                    // zswap_check_limits()): below it, this variant is its base.
                    let hit = sh.zswap_rows[*g].get().is_some_and(|r| r.pool_limit_hit > 0);
                    if hit {
                        Done::ZswapSweep(k, Some(replay(SwapKind::Zswap, c)?))
                    } else {
                        p.advance(plan.accesses.len() as u64);
                        Done::ZswapSweep(k, None)
                    }
                }
            }
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
    let kept = kept(plan, &jobs);
    let needs: Vec<Vec<usize>> = jobs.iter().map(|&j| needs(plan, &kept, j)).collect();
    let objects: Vec<OnceLock<Objects>> = plan.specs.iter().map(|_| OnceLock::new()).collect();
    let grid_len = plan.zswap.map_or(0, |z| z.grid.len());
    let zswap_rows: Vec<OnceLock<SwapRow>> = (0..grid_len).map(|_| OnceLock::new()).collect();
    let sweeps = plan.zswap.map(|z| sweeps(&z.grid)).unwrap_or_default();
    let n = (plan.pages.len() / plan.page_size) as u64;
    let units = |j: &Job| match j {
        Job::Policy(_) => 2 * n,
        Job::Swap(_) | Job::ZswapRef(_) | Job::Zswap(_) | Job::ZswapSweep(_) => {
            plan.accesses.len() as u64
        }
        _ => n,
    };
    let threads = plan.threads.clamp(1, jobs.len());
    progress.start(&format!("measuring on {threads} threads"), jobs.iter().map(units).sum());
    let overall = Overall(progress);
    let board = Board::new(needs.clone(), plan.specs.len() + grid_len);
    let results: Mutex<Vec<(usize, Result<Done, LabError>)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut scratch = Scratch::default();
                while let Some(k) = board.next() {
                    let job = jobs[k];
                    let sh = Shared {
                        allocators: &allocators,
                        kept: &kept,
                        needs: &needs[k],
                        objects: &objects,
                        zswap_rows: &zswap_rows,
                        sweeps: &sweeps,
                    };
                    let r = run_job(plan, &sh, job, &mut scratch, &overall);
                    board.finish(r.is_ok(), makes(plan, &kept, job));
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
    let mut lengths = vec![None; plan.specs.len() + 1];
    let mut pools = vec![None; allocators.len()];
    let mut policies = vec![None; plan.policies.len()];
    let mut swap = vec![None; SWAP_CASES.len()];
    let mut refs = vec![None; plan.zswap.map_or(0, |z| z.refs.len())];
    let mut grid_rows: Vec<Option<SwapRow>> = vec![None; grid_len];
    let mut sweep_rows: Vec<Option<SwapRow>> = vec![None; sweeps.len()];
    for (_, r) in results {
        match r? {
            Done::Compressor(i, row, l) => {
                compressors[i] = Some(row);
                lengths[i] = l;
            }
            Done::Allocator(i, row) => pools[i] = Some(row),
            Done::Policy(i, row) => policies[i] = Some(*row),
            Done::Swap(i, row) => swap[i] = Some(row),
            Done::ZswapRef(k, row) => refs[k] = Some(row),
            Done::Zswap(g, row) => grid_rows[g] = Some(row),
            Done::ZswapSweep(k, row) => sweep_rows[k] = row,
        }
    }
    let zswap = plan.zswap.map(|z| {
        let mut measured: Vec<Replayed> = z
            .grid
            .iter()
            .zip(grid_rows)
            .map(|(c, row)| Replayed { config: c.clone(), row })
            .collect();
        measured.extend(
            sweeps
                .iter()
                .zip(sweep_rows)
                .filter_map(|((_, c), row)| Some(Replayed { config: c.clone(), row: Some(row?) })),
        );
        let refs: Vec<SwapRow> = refs.into_iter().map(|r| r.expect("every job ran")).collect();
        (measured, refs)
    });
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
        zswap,
        lengths: lengths.into_iter().flatten().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::candidates;

    fn plan<'a>(policies: &'a [Policy], pages: &'a [u8]) -> Plan<'a> {
        Plan {
            pages,
            page_size: 4096,
            bench: Options::default(),
            specs: AlgoSpec::all(),
            policies,
            accesses: &[],
            device: Box::leak(Box::new(SwapDevice::default())),
            threads: 2,
            zswap: None,
        }
    }

    /// The rows that keep their objects are those of the kernel algorithms the policies and the
    /// allocator rows store; a policy waits for its primary's and secondaries' rows, a
    /// dictionary's for none.
    #[test]
    fn jobs_wait_for_the_rows_whose_objects_they_take() {
        let policies = candidates("lzo-rle");
        let plan = plan(&policies, &[]);
        let allocators = ["zsmalloc", "zbud", "z3fold"];
        let jobs = jobs(&plan, &allocators, &[Some(0), None, None]);
        let kept = kept(&plan, &jobs);
        let names: Vec<&str> = (0..plan.specs.len())
            .filter(|&i| kept[i])
            .map(|i| plan.specs[i].name.as_str())
            .collect();
        assert_eq!(names, ["lzo-rle", "lzo", "lz4", "lz4hc", "zstd", "deflate", "842"]);
        let waits = |job: Job| -> Vec<&str> {
            needs(&plan, &kept, job).iter().map(|&i| plan.specs[i].name.as_str()).collect()
        };
        assert_eq!(waits(Job::Policy(10)), ["lzo-rle", "deflate"], "{}", policies[10].name);
        assert_eq!(waits(Job::Policy(3)), ["lz4hc"]);
        assert!(waits(Job::Policy(11)).is_empty(), "{}", policies[11].name);
        assert_eq!(waits(Job::Allocator(1)), ["lzo-rle"]);
        assert_eq!(waits(Job::Swap(0)), ["lzo-rle"]);
        // Every row a job waits for is a job of the list: no job waits on one that never runs.
        for &j in &jobs {
            for i in needs(&plan, &kept, j) {
                assert!(jobs.contains(&Job::Compressor(i)), "{j:?} waits for row {i}, not a job");
            }
        }
    }

    /// zswap's replays, and their zram references, wait for the row of their compressor and
    /// take its objects; an accept-threshold variant also waits for its base replay. The
    /// replays of the swap table take the default algorithm's.
    #[test]
    fn replays_wait_for_their_compressors_rows() {
        let policies = candidates("lzo-rle");
        let offered: Vec<String> = ["lzo", "deflate", "zstd"].map(String::from).to_vec();
        let z = ZswapPlan {
            grid: crate::zswap::grid(true, &offered, 90),
            refs: vec!["lzo-rle".into(), "zstd".into()],
            scale: 1.0,
            cgroup: CgroupVersion::V1,
        };
        let plan = Plan { zswap: Some(&z), ..plan(&policies, &[]) };
        let jobs = jobs(&plan, &["zsmalloc"], &[Some(0)]);
        let kept = kept(&plan, &jobs);
        let waits = |job: Job| -> Vec<String> {
            needs(&plan, &kept, job)
                .iter()
                .map(|&i| match plan.specs.get(i) {
                    Some(s) => s.name.clone(),
                    None => format!("replay {}", i - plan.specs.len()),
                })
                .collect()
        };
        let g =
            z.grid.iter().position(|c| c.available && c.params.compressor == "deflate").unwrap();
        assert_eq!(waits(Job::Zswap(g)), ["deflate"]);
        assert_eq!(waits(Job::ZswapRef(1)), ["zstd"]);
        assert_eq!(waits(Job::Swap(1)), ["lzo-rle"]);
        let all = sweeps(&z.grid);
        let s = all.iter().position(|(base, _)| *base == g).unwrap();
        assert_eq!(waits(Job::ZswapSweep(s)), ["deflate".to_string(), format!("replay {g}")]);
        // Unavailable configurations are no jobs; every wait is on a job of the list.
        for &j in &jobs {
            for i in needs(&plan, &kept, j) {
                let maker = match i.checked_sub(plan.specs.len()) {
                    None => Job::Compressor(i),
                    Some(g) => Job::Zswap(g),
                };
                assert!(jobs.contains(&maker), "{j:?} waits for {i}, not a job");
            }
        }
    }

    /// The board hands out only jobs whose rows are made, in the list's order otherwise, and
    /// none after a failure.
    #[test]
    fn the_board_gives_ready_jobs_in_order_and_stops_on_failure() {
        // Job 0 makes row 0; jobs 1 and 3 need it; job 2 needs nothing.
        let board = Board::new(vec![vec![], vec![0], vec![], vec![0]], 1);
        assert_eq!(board.next(), Some(0));
        // Row 0 is not made yet: job 2 is the one ready.
        assert_eq!(board.next(), Some(2));
        board.finish(true, Some(0));
        assert_eq!(board.next(), Some(1));
        assert_eq!(board.next(), Some(3));
        assert_eq!(board.next(), None);
        let board = Board::new(vec![vec![], vec![], vec![]], 0);
        assert_eq!(board.next(), Some(0));
        board.finish(false, None);
        assert_eq!(board.next(), None);
    }

    /// A worker with nothing ready waits for the row a running job makes, then takes the job
    /// that waited for it.
    #[test]
    fn a_worker_waits_for_the_row_it_needs() {
        let board = Board::new(vec![vec![], vec![0]], 1);
        assert_eq!(board.next(), Some(0));
        std::thread::scope(|s| {
            let waiter = s.spawn(|| board.next());
            std::thread::sleep(std::time::Duration::from_millis(20));
            board.finish(true, Some(0));
            assert_eq!(waiter.join().unwrap(), Some(1));
        });
        assert_eq!(board.next(), None);
    }

    /// The lab's one measuring phase with only zswap's plan (and the rows it always measures).
    fn zswap_only(
        pages: &[u8],
        accesses: &[Access],
        dev: &SwapDevice,
        zp: &ZswapPlan,
        threads: usize,
    ) -> (Vec<crate::zswap::Replayed>, Vec<SwapRow>) {
        let plan = Plan {
            pages,
            page_size: 4096,
            bench: zmem_experiments::comp_bench::Options {
                min_time: std::time::Duration::ZERO,
                ..Default::default()
            },
            specs: Vec::new(),
            policies: &[],
            accesses,
            device: dev,
            threads,
            zswap: Some(zp),
        };
        run(&plan, &crate::NoProgress).unwrap().zswap.unwrap()
    }

    #[test]
    fn the_accept_threshold_is_swept_only_where_the_pool_hit_its_limit() {
        let set = zmem_pages::builtin::default_set_with(4096).unwrap();
        let pages = &set.bytes()[..256 * 4096];
        let accesses = crate::evidence::trace_for(256).unwrap();
        let choice = |mpp| crate::zswap::ZswapConfigChoice::new("lzo", mpp, 90, false);
        // 25 % of the replay's RAM (16 pages) fills soon.
        let grid = [choice(25)];
        let dev = SwapDevice::default();
        // The lab's one measuring phase with only this grid (and the rows it always measures).
        let run = |pages: &[u8]| {
            let zp = ZswapPlan {
                grid: grid.to_vec(),
                refs: vec!["lzo-rle".into()],
                scale: 1.0,
                cgroup: CgroupVersion::V1,
            };
            let (replayed, refs) = zswap_only(pages, &accesses, &dev, &zp, 2);
            assert_eq!(refs.len(), 1);
            replayed
                .iter()
                .map(|r| {
                    (
                        r.config.params.accept_threshold_percent,
                        r.row.as_ref().unwrap().pool_limit_hit,
                    )
                })
                .collect::<Vec<_>>()
        };
        let full = run(pages);
        let accepts: Vec<u32> = full.iter().map(|x| x.0).collect();
        assert_eq!(accepts, [90, 70, 100], "{full:?}");
        assert!(full.iter().all(|x| x.1 > 0), "{full:?}");
        // The threshold changes what zswap does: at 70 % a full pool refuses stores without
        // trying until it has shrunk, at 100 % it tries (and counts a hit) at every store.
        assert!(full[1].1 < full[2].1, "{full:?}");
        // Zero-filled pages never reach zswap (the swap core's zeromap): the pool stays empty,
        // never at its limit, and there is nothing to sweep.
        let zeros = vec![0u8; 256 * 4096];
        assert_eq!(run(&zeros), [(90, 0)]);
        assert_eq!(
            grid[0].at_accept(70).name(),
            "zswap lzo max_pool_percent=25 shrinker=off accept_threshold_percent=70"
        );
    }

    /// On cgroup v2 zswap's pool is charged to the memcg (mm/memcontrol.c
    /// `obj_cgroup_charge_zswap()`), so the same replay has less room for pages and swaps more;
    /// the plan's version reaches the grid's replays.
    #[test]
    fn a_v2_machine_charges_the_grids_pool() {
        // Mixed pages (the built-in set's first pages are mostly same-filled: charged nothing).
        let set = zmem_pages::generate::generate(zmem_pages::generate::Kind::Mixed, 256, 4096, 3)
            .unwrap();
        let pages = set.bytes();
        let accesses = crate::evidence::trace_for(256).unwrap();
        let grid = [crate::zswap::ZswapConfigChoice::new("lzo", 100, 90, false)];
        let dev = SwapDevice::default();
        let outs = |cgroup| {
            let zp =
                ZswapPlan { grid: grid.to_vec(), refs: vec!["lzo".into()], scale: 1.0, cgroup };
            let (replayed, _) = zswap_only(pages, &accesses, &dev, &zp, 1);
            replayed[0].row.as_ref().unwrap().swap_outs
        };
        let (v1, v2) = (outs(CgroupVersion::V1), outs(CgroupVersion::V2));
        assert!(v2 > v1, "v1 {v1}, v2 {v2}");
    }
}

//! mapbench: the zsmapbench experiment (seed 000, docs/REFERENCES.md [seed-000],
//! [zsmapbench-module]) in user space.
//!
//! zsmapbench (a kernel module) starts one thread per CPU; each creates its own zsmalloc pool,
//! allocates three 1632-byte objects so that the third straddles two pages, then maps and unmaps
//! that third object (`ZS_MM_RW`) in a loop for about a second, and prints the elapsed counter
//! ticks, the number of mappings and ticks per mapping. Here each thread does the same with a
//! [`ZsPool`] on the memfd arena (so both methods see the same frames), through
//! [`ZsPool::map_object`] with either the copy method or the side-by-side window.
//!
//! Cycles come from `rdtsc` on x86_64 (the TSC, constant-rate on current CPUs: reference
//! cycles, not core cycles). Elsewhere they are estimated as nanoseconds at an assumed 1 GHz
//! (`cycle_source` says which). Note that the seed's "cycles" on its Cortex-A35 were arm64
//! `get_cycles()`, the architected timer (about 8 MHz there: 8.1 M "cycles" per second), so its
//! "9 cycles/map" is about 1.1 µs per mapping; compare mappings per second, not cycles.

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde::Serialize;
use zmem_pool::{ArenaKind, MapMethod, MapMode, PoolConfig, ZPool, ZsPool};

use crate::LabError;

/// The seed's object size: "roughly 40% of PAGE_SIZE"; the third one straddles.
pub const OBJECT_SIZE: usize = 1632;
/// Mappings between two looks at the clock.
const BATCH: u64 = 256;

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Copy through the per-thread buffer, or map the two frames side by side.
    pub method: MapMethod,
    /// Threads, each with its own pool (zsmapbench: one per online CPU).
    pub threads: usize,
    /// How long each thread maps (zsmapbench: 1000 ms).
    pub duration: Duration,
    /// Page size of the pools.
    pub page_size: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            method: MapMethod::Copy,
            threads: 1,
            duration: Duration::from_secs(1),
            page_size: 4096,
        }
    }
}

/// One thread's figures (the three numbers zsmapbench prints per thread).
#[derive(Debug, Clone, Serialize)]
pub struct ThreadResult {
    /// Counter ticks over the loop.
    pub cycles: u64,
    /// Map + unmap round trips.
    pub mappings: u64,
    /// `cycles / mappings`, integer division as the seed prints it.
    pub cycles_per_map: u64,
    /// Wall-clock seconds of the loop.
    pub seconds: f64,
}

/// The experiment's result.
#[derive(Debug, Clone, Serialize)]
pub struct MapbenchResult {
    /// `copy` or `map`.
    pub method: &'static str,
    /// Threads that ran.
    pub threads: usize,
    /// Mean over threads of cycles per map + unmap (fractional).
    pub cycles_per_map: f64,
    /// Mean over threads of one thread's mappings per second.
    pub maps_per_sec: f64,
    /// Where cycles come from: `rdtsc` or `ns@1GHz`.
    pub cycle_source: &'static str,
    /// Slot size of the class the object landed in (bytes copied in per map by `copy`).
    pub class_size: usize,
    /// Per-thread figures.
    pub per_thread: Vec<ThreadResult>,
}

/// The summary `zmem mapbench --json` prints: exactly these four fields.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub method: &'static str,
    pub threads: usize,
    pub cycles_per_map: f64,
    pub maps_per_sec: f64,
}

impl MapbenchResult {
    /// The four-field summary.
    pub fn summary(&self) -> Summary {
        Summary {
            method: self.method,
            threads: self.threads,
            cycles_per_map: self.cycles_per_map,
            maps_per_sec: self.maps_per_sec,
        }
    }
}

#[cfg(target_arch = "x86_64")]
const CYCLE_SOURCE: &str = "rdtsc";
#[cfg(not(target_arch = "x86_64"))]
const CYCLE_SOURCE: &str = "ns@1GHz";

#[cfg(target_arch = "x86_64")]
fn cycles(_origin: Instant) -> u64 {
    // SAFETY: `rdtsc` has no preconditions on x86_64; it only reads the time-stamp counter.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
fn cycles(origin: Instant) -> u64 {
    origin.elapsed().as_nanos() as u64
}

/// Parses `copy` or `map`.
pub fn parse_method(s: &str) -> Result<MapMethod, LabError> {
    match s {
        "copy" => Ok(MapMethod::Copy),
        "map" => Ok(MapMethod::Window),
        _ => Err(LabError::BadSpec { spec: s.to_string(), why: "method is copy or map".into() }),
    }
}

/// Sets up one thread's pool: objects of [`OBJECT_SIZE`] until one straddles two frames (the
/// third at 4 KiB, as in zsmapbench; later at larger pages).
fn setup(opts: &Options) -> Result<(ZsPool, zmem_pool::Handle, usize), LabError> {
    let cfg =
        PoolConfig { page_size: opts.page_size, arena: ArenaKind::Memfd, ..PoolConfig::default() };
    let pool = ZsPool::new(&cfg)?;
    let table = pool.class_table();
    let class = table.classes()[table.slot_for_request(OBJECT_SIZE)];
    for i in 0..class.objs_per_zspage {
        let h = pool.malloc(OBJECT_SIZE)?;
        pool.write(h, &vec![i as u8; OBJECT_SIZE])?;
        if pool.is_straddling(h)? {
            return Ok((pool, h, class.size));
        }
    }
    Err(LabError::Setup(format!(
        "no {OBJECT_SIZE}-B object straddles pages at page size {}",
        opts.page_size
    )))
}

fn run_thread(opts: &Options, start: &Barrier) -> Result<(ThreadResult, usize), LabError> {
    let setup = setup(opts);
    start.wait();
    let (pool, h, class_size) = setup?;
    let origin = Instant::now();
    let c0 = cycles(origin);
    let mut mappings = 0u64;
    loop {
        for _ in 0..BATCH {
            pool.map_object(h, opts.method, MapMode::ReadWrite, |obj| {
                black_box(obj);
            })?;
        }
        mappings += BATCH;
        if origin.elapsed() >= opts.duration {
            break;
        }
    }
    let c1 = cycles(origin);
    let seconds = origin.elapsed().as_secs_f64();
    let cycles = c1.wrapping_sub(c0);
    let r = ThreadResult { cycles, mappings, cycles_per_map: cycles / mappings, seconds };
    Ok((r, class_size))
}

/// Runs the experiment.
pub fn run(opts: &Options) -> Result<MapbenchResult, LabError> {
    if opts.threads == 0 || opts.threads > 1024 {
        return Err(LabError::Setup(format!("{} threads (use 1..=1024)", opts.threads)));
    }
    let start = Arc::new(Barrier::new(opts.threads));
    let results: Vec<Result<(ThreadResult, usize), LabError>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..opts.threads)
            .map(|_| {
                let start = start.clone();
                s.spawn(move || run_thread(opts, &start))
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Err(LabError::Setup("thread panicked".into()))))
            .collect()
    });
    let mut per_thread = Vec::new();
    let mut class_size = 0;
    for r in results {
        let (t, c) = r?;
        per_thread.push(t);
        class_size = c;
    }
    let n = per_thread.len() as f64;
    let cycles_per_map =
        per_thread.iter().map(|t| t.cycles as f64 / t.mappings as f64).sum::<f64>() / n;
    let maps_per_sec = per_thread.iter().map(|t| t.mappings as f64 / t.seconds).sum::<f64>() / n;
    Ok(MapbenchResult {
        method: opts.method.name(),
        threads: opts.threads,
        cycles_per_map,
        maps_per_sec,
        cycle_source: CYCLE_SOURCE,
        class_size,
        per_thread,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_methods_run_and_count() {
        for method in [MapMethod::Copy, MapMethod::Window] {
            let opts = Options {
                method,
                threads: 2,
                duration: Duration::from_millis(20),
                page_size: 4096,
            };
            let r = run(&opts).unwrap();
            assert_eq!((r.method, r.threads, r.per_thread.len()), (method.name(), 2, 2));
            assert_eq!(r.class_size, 1680);
            for t in &r.per_thread {
                assert!(t.mappings >= BATCH && t.mappings % BATCH == 0);
                assert_eq!(t.cycles_per_map, t.cycles / t.mappings);
            }
            assert!(r.maps_per_sec > 0.0 && r.cycles_per_map > 0.0);
            let json = serde_json::to_value(r.summary()).unwrap();
            let mut keys: Vec<_> = json.as_object().unwrap().keys().cloned().collect();
            keys.sort();
            assert_eq!(keys, ["cycles_per_map", "maps_per_sec", "method", "threads"]);
        }
    }

    #[test]
    fn a_straddling_object_is_found_at_every_page_size() {
        for page_size in zmem_pool::PAGE_SIZES {
            let (pool, h, _) = setup(&Options { page_size, ..Options::default() }).unwrap();
            assert!(pool.is_straddling(h).unwrap());
            if page_size == 4096 {
                assert_eq!(pool.objects(), 3, "zsmapbench maps the third object");
            }
        }
    }

    #[test]
    fn bad_arguments_are_errors() {
        assert!(parse_method("pgtable").is_err());
        assert_eq!(parse_method("map").unwrap(), MapMethod::Window);
        assert!(run(&Options { threads: 0, ..Options::default() }).is_err());
    }
}

//! `zmem zram`: a page set through one zram device. Writes every page (split across threads),
//! optionally recompresses, reads everything back and compares, and returns the stat files in
//! the kernel's formats with the write and read throughput.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use serde::Serialize;
use zmem_sim::device::{OnRefusal, ZramRunConfig, build_device, write_pages};

use crate::{LabError, Progress};
use zmem_sim::cputime::{Stopwatch, thread_minor_faults};

/// What the run measured. `mm_stat`, `io_stat`, `bd_stat` and `debug_stat` are the kernel-format
/// lines (without the newline).
#[derive(Debug, Clone, Serialize)]
pub struct ZramRunResult {
    pub algo: String,
    pub pool: String,
    pub pages: u64,
    pub threads: usize,
    pub mm_stat: String,
    pub io_stat: String,
    pub bd_stat: String,
    pub debug_stat: String,
    pub write_mbps: f64,
    pub read_mbps: f64,
    /// CPU seconds (user + system) the writer threads used, summed: unlike the MB/s, not
    /// moved by other processes competing for the CPUs.
    pub write_cpu_secs: f64,
    /// CPU seconds the reader threads used in their reads, summed.
    pub read_cpu_secs: f64,
    /// Minor page faults the writer threads took, summed: fresh pool memory faulted in on the
    /// write path (the input is faulted in before the timer).
    pub write_faults: u64,
    pub verified: bool,
}

/// Pages a thread claims at a time, writing or reading: dd's `bs=1M` of 4 KiB pages.
const BATCH_BYTES: usize = 1 << 20;

/// Hands out consecutive batches of `0..n` to whichever thread asks next: threads share the
/// work by what each gets done, not by a fixed half of the input, which a page file of
/// contiguous processes (one zero-filled, one dense) splits unevenly.
struct Batches {
    next: AtomicUsize,
    n: usize,
    size: usize,
}

impl Batches {
    fn new(n: usize, size: usize) -> Self {
        Self { next: AtomicUsize::new(0), n, size: size.max(1) }
    }

    /// The next unclaimed range of page indices, or `None` when all are claimed.
    fn claim(&self) -> Option<std::ops::Range<usize>> {
        let first = self.next.fetch_add(self.size, Ordering::Relaxed);
        (first < self.n).then(|| first..(first + self.size).min(self.n))
    }
}

/// Maps every page of `pages` in before a timer starts, reading one byte of each. A page file
/// is mapped, not read, so its first pass would otherwise pay a page fault per page (or per
/// fault-around block) inside the timed write: a cost of loading the input, not of the device,
/// whose pages in the kernel are resident in the writer's memory (and which `dd` reads from a
/// page cache `kernel-zram-speed` has already filled). Returns a value derived from every byte
/// read, so the reads cannot be optimised away.
fn fault_in(pages: &[u8], ps: usize) -> u8 {
    pages.iter().step_by(ps).fold(0u8, |acc, &b| acc ^ std::hint::black_box(b))
}

/// Runs `work(k)` on `threads` threads that start at once: they are spawned first and spin
/// (yielding) until every one of them is running, and only then is the clock started. A thread
/// that was asleep would otherwise start late by the time its CPU takes to wake (on the VM of
/// docs/BENCHMARKS.md up to milliseconds, as long as a whole 64 MiB read), and the one already
/// running would take most of the batches alone. The caller's thread only starts and joins
/// them: as a worker itself (tried), its reads were 2 % slower than a fresh thread's.
/// Returns each worker's result and the wall time from the start until the last one finished;
/// a worker that panicked gives `None`.
fn together<T: Send>(threads: usize, work: impl Fn(usize) -> T + Sync) -> (Vec<Option<T>>, f64) {
    let ready = AtomicUsize::new(0);
    let go = AtomicBool::new(false);
    std::thread::scope(|s| {
        let (ready, go, work) = (&ready, &go, &work);
        let helpers: Vec<_> = (0..threads)
            .map(|k| {
                s.spawn(move || {
                    ready.fetch_add(1, Ordering::AcqRel);
                    while !go.load(Ordering::Acquire) {
                        std::thread::yield_now();
                    }
                    work(k)
                })
            })
            .collect();
        while ready.load(Ordering::Acquire) < threads {
            std::thread::yield_now();
        }
        let start = Instant::now();
        go.store(true, Ordering::Release);
        let all: Vec<_> = helpers.into_iter().map(|h| h.join().ok()).collect();
        (all, start.elapsed().as_secs_f64())
    })
}

/// Runs the page set (whole pages; a short tail is ignored) through a fresh device.
pub fn run(
    pages: &[u8],
    cfg: &ZramRunConfig,
    progress: &dyn Progress,
) -> Result<ZramRunResult, LabError> {
    let ps = cfg.page_size;
    let n = pages.len() / ps;
    if n == 0 {
        return Err(LabError::NoPages);
    }
    let z = build_device(cfg, n as u64)?;
    let threads = cfg.threads.clamp(1, n);
    let batch = (BATCH_BYTES / ps).max(1);
    let label = &format!("{} on {}", cfg.algo, cfg.pool);
    std::hint::black_box(fault_in(&pages[..n * ps], ps));

    // Each thread claims 1 MiB batches until none are left; the write time is the wall time
    // until the last thread is done, the CPU time the sum of the writers' own.
    progress.start("write", n as u64);
    let work = Batches::new(n, batch);
    let (writes, write_secs) = together(threads, |_| -> Result<(f64, u64), LabError> {
        let cpu = Stopwatch::start();
        let faults = thread_minor_faults().unwrap_or(0);
        while let Some(r) = work.claim() {
            let mine = &pages[r.start * ps..r.end * ps];
            write_pages(&z, mine, ps, r.start as u64, OnRefusal::Fail, label, progress)?;
        }
        let faults = thread_minor_faults().unwrap_or(0).saturating_sub(faults);
        Ok((cpu.elapsed().cpu_secs, faults))
    });
    progress.finish();
    let writes = writes
        .into_iter()
        .map(|w| w.unwrap_or(Err(LabError::Panicked)))
        .collect::<Result<Vec<_>, LabError>>()?;
    let write_cpu_secs = writes.iter().map(|w| w.0).sum();
    let write_faults = writes.iter().map(|w| w.1).sum();

    if let Some(args) = &cfg.recompress {
        z.store("recompress", args)?;
    }

    // Read everything back as `dd bs=1M` reads the kernel's device: each thread claims 1 MiB
    // at a time and reads it into one reused buffer. Only the reads are timed; each block is
    // compared with the pages written between reads, so the comparison costs nothing in the
    // read speed.
    progress.start("read", n as u64);
    let work = Batches::new(n, batch);
    let (reads, _) = together(threads, |_| {
        let mut buf = vec![0u8; batch * ps];
        let mut me = Read { ok: true, secs: 0.0, cpu_secs: 0.0 };
        while let Some(r) = work.claim() {
            let dst = &mut buf[..r.len() * ps];
            let start = Instant::now();
            let cpu = Stopwatch::start();
            let mut each = |_, read: Result<(), _>| {
                me.ok &= read.is_ok();
                true
            };
            me.ok &= z.read_pages(r.start as u64, dst, &mut each).is_ok();
            me.cpu_secs += cpu.elapsed().cpu_secs;
            me.secs += start.elapsed().as_secs_f64();
            me.ok &= *dst == pages[r.start * ps..r.end * ps];
            progress.advance(r.len() as u64);
        }
        me
    });
    let reads: Vec<Read> = reads
        .into_iter()
        .map(|r| r.unwrap_or(Read { ok: false, secs: 0.0, cpu_secs: 0.0 }))
        .collect();
    progress.finish();
    let verified = reads.iter().all(|r| r.ok);
    let read_cpu_secs = reads.iter().map(|r| r.cpu_secs).sum();
    // The slowest reader's time: the threads read at once, as `--threads` writers do.
    let read_secs = reads.iter().map(|r| r.secs).fold(f64::MIN_POSITIVE, f64::max);

    let bytes = (n * ps) as f64;
    let show = |attr: &str| z.show(attr).map(|s| s.trim_end().to_string());
    Ok(ZramRunResult {
        algo: cfg.algo.clone(),
        pool: cfg.pool.clone(),
        pages: n as u64,
        threads,
        mm_stat: show("mm_stat")?,
        io_stat: show("io_stat")?,
        bd_stat: show("bd_stat")?,
        debug_stat: show("debug_stat")?.replace('\n', " | "),
        write_mbps: bytes / write_secs / 1e6,
        read_mbps: bytes / read_secs / 1e6,
        write_cpu_secs,
        read_cpu_secs,
        write_faults,
        verified,
    })
}

/// What one reader thread measured.
#[derive(Debug, Clone, Copy)]
struct Read {
    ok: bool,
    /// Wall seconds spent in reads (comparisons excluded).
    secs: f64,
    /// CPU seconds spent in reads.
    cpu_secs: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoProgress;
    use zmem_pages::generate::mixed;

    #[test]
    fn batches_hand_out_every_page_once_across_threads() {
        for (n, size) in [(0, 256), (1, 256), (255, 256), (256, 256), (1000, 7), (4097, 256)] {
            let work = Batches::new(n, size);
            let mut seen: Vec<usize> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..3)
                    .map(|_| {
                        s.spawn(|| {
                            let mut mine = Vec::new();
                            while let Some(r) = work.claim() {
                                assert!(!r.is_empty() && r.len() <= size, "{r:?}");
                                mine.extend(r);
                            }
                            mine
                        })
                    })
                    .collect();
                hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
            });
            seen.sort_unstable();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n {n}, batch {size}");
        }
    }

    #[test]
    fn any_thread_count_stores_the_same_device() {
        // 700 pages: not a multiple of the 256-page batch, so threads get unequal shares.
        let set = mixed::generate(700, 4096, 11).unwrap();
        let one = run(set.bytes(), &ZramRunConfig::default(), &NoProgress).unwrap();
        assert!(one.verified);
        assert_eq!(one.pages, 700);
        assert!(one.write_cpu_secs > 0.0 && one.read_cpu_secs >= 0.0, "{one:?}");
        for threads in [2, 3] {
            let cfg = ZramRunConfig { threads, ..ZramRunConfig::default() };
            let r = run(set.bytes(), &cfg, &NoProgress).unwrap();
            assert!(r.verified, "{threads} threads");
            assert_eq!(r.threads, threads);
            // Without frees, zsmalloc's pages depend only on which objects were stored, not on
            // the order: the accounting is the same whoever wrote which page.
            assert_eq!(r.mm_stat, one.mm_stat, "{threads} threads");
        }
    }
}

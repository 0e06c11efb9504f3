//! `zmem zram`: a page set through one zram device. Writes every page (split across threads),
//! optionally recompresses, reads everything back and compares, and returns the stat files in
//! the kernel's formats with the write and read throughput.

use std::time::Instant;

use serde::Serialize;
use zmem_zram::{Features, Zram, ZramConfig};

use crate::{LabError, Progress};

/// How to build and drive the device.
#[derive(Debug, Clone)]
pub struct ZramRunConfig {
    pub algo: String,
    /// `algorithm_params` line for the primary (e.g. `level=3`), if any.
    pub params: Option<String>,
    pub pool: String,
    pub page_size: usize,
    pub threads: usize,
    /// Secondary algorithms, priority 1, 2, 3 in order.
    pub recomp: Vec<String>,
    /// Written to `recompress` after the writes (e.g. `type=huge`), if given.
    pub recompress: Option<String>,
}

impl Default for ZramRunConfig {
    fn default() -> Self {
        Self {
            algo: zmem_zram::DEFAULT_ALGORITHM.into(),
            params: None,
            pool: "zsmalloc".into(),
            page_size: 4096,
            threads: 1,
            recomp: Vec::new(),
            recompress: None,
        }
    }
}

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
    pub verified: bool,
}

/// Bytes each reader reads at a time into its one buffer: dd's `bs=1M`, as
/// `kernel-zram-speed` reads the kernel's device (docs/REFERENCES.md [live-zram-oracle]).
const READ_BLOCK_BYTES: usize = 1 << 20;

/// What [`write_pages`] does when the device refuses a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnRefusal {
    /// Stop with [`LabError::ZramWrite`].
    Fail,
    /// Count it and go on (an allocator that cannot hold some objects, such as zbud a whole
    /// page, is measured with what it holds).
    Count,
}

/// Writes `pages` (whole pages of `ps`) to slots `first`, `first + 1`, ... of `z`, in order,
/// advancing `progress` by one per page. Returns the pages the device refused (always 0 with
/// [`OnRefusal::Fail`]). `config` names the device in errors. This is the one loop every
/// experiment that fills a device uses.
pub fn write_pages(
    z: &Zram,
    pages: &[u8],
    ps: usize,
    first: u64,
    on_refusal: OnRefusal,
    config: &str,
    progress: &dyn Progress,
) -> Result<u64, LabError> {
    const STEP: u64 = 256;
    let mut refused = 0;
    let mut done = 0;
    for (k, page) in pages.chunks_exact(ps).enumerate() {
        let index = first + k as u64;
        if let Err(err) = z.write_page(index, page) {
            match on_refusal {
                OnRefusal::Fail => {
                    return Err(LabError::ZramWrite { config: config.into(), page: index, err });
                }
                OnRefusal::Count => refused += 1,
            }
        }
        done += 1;
        if done == STEP {
            progress.advance(STEP);
            done = 0;
        }
    }
    progress.advance(done);
    Ok(refused)
}

/// Builds a device for `pages` pages with the run's configuration.
pub fn build_device(cfg: &ZramRunConfig, nr_pages: u64) -> Result<Zram, LabError> {
    build_device_with_backing(cfg, nr_pages, None)
}

/// [`build_device`] with a backing device (`backing_dev`, set before `disksize` as the kernel
/// requires), so `writeback` can move slots to it.
pub fn build_device_with_backing(
    cfg: &ZramRunConfig,
    nr_pages: u64,
    backing: Option<(std::path::PathBuf, Box<dyn zmem_zram::BackingStore>)>,
) -> Result<Zram, LabError> {
    let z = Zram::new(ZramConfig {
        page_size: cfg.page_size,
        pool: cfg.pool.clone(),
        features: Features::default(),
        // The lab runs the research codecs (lz4m, wkdm) too; a kernel device does not offer them.
        research_codecs: true,
        ..ZramConfig::default()
    })?;
    z.store("comp_algorithm", &cfg.algo)?;
    if let Some(p) = &cfg.params {
        z.store("algorithm_params", p)?;
    }
    for (i, algo) in cfg.recomp.iter().enumerate() {
        z.store("recomp_algorithm", &format!("algo={algo} priority={}", i + 1))?;
    }
    if let Some((path, store)) = backing {
        z.set_backing_store(path, store)?;
    }
    z.store("disksize", &(nr_pages.max(1) * cfg.page_size as u64).to_string())?;
    Ok(z)
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
    let per = n.div_ceil(threads);
    let label = &format!("{} on {}", cfg.algo, cfg.pool);

    progress.start("write", n as u64);
    let start = Instant::now();
    let write_result: Result<(), LabError> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let z = &z;
                s.spawn(move || -> Result<(), LabError> {
                    let (first, end) = (t * per, ((t + 1) * per).min(n));
                    let mine = &pages[first.min(end) * ps..end * ps];
                    write_pages(z, mine, ps, first as u64, OnRefusal::Fail, label, progress)
                        .map(|_| ())
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| h.join().unwrap_or(Err(LabError::Panicked)))
    });
    let write_secs = start.elapsed().as_secs_f64();
    progress.finish();
    write_result?;

    if let Some(args) = &cfg.recompress {
        z.store("recompress", args)?;
    }

    // Read everything back as `dd bs=1M` reads the kernel's device: each thread reads 1 MiB
    // at a time into one reused buffer. Only the reads are timed; each block is compared with
    // the pages written between reads, so the comparison costs nothing in the read speed.
    progress.start("read", n as u64);
    let block_pages = (READ_BLOCK_BYTES / ps).max(1);
    let reads: Vec<(bool, f64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let z = &z;
                s.spawn(move || {
                    let (first, end) = (t * per, ((t + 1) * per).min(n));
                    let mut buf = vec![0u8; block_pages * ps];
                    let (mut ok, mut secs) = (true, 0.0);
                    for block in (first..end).step_by(block_pages) {
                        let count = block_pages.min(end - block);
                        let dst = &mut buf[..count * ps];
                        let start = Instant::now();
                        for (k, page) in dst.chunks_mut(ps).enumerate() {
                            ok &= z.read_page((block + k) as u64, page).is_ok();
                        }
                        secs += start.elapsed().as_secs_f64();
                        ok &= *dst == pages[block * ps..(block + count) * ps];
                        progress.advance(count as u64);
                    }
                    (ok, secs)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or((false, 0.0))).collect()
    });
    progress.finish();
    let verified = reads.iter().all(|r| r.0);
    // The slowest reader's time: the threads read at once, as `--threads` writers do.
    let read_secs = reads.iter().map(|r| r.1).fold(f64::MIN_POSITIVE, f64::max);

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
        verified,
    })
}

/// Human-readable report of a run.
pub fn render(r: &ZramRunResult) -> String {
    format!(
        "zram: {} pages, algo {}, pool {}, {} thread(s)\n\
         mm_stat    {}\nio_stat    {}\nbd_stat    {}\ndebug_stat {}\n\
         write {:.0} MB/s, read {:.0} MB/s, verified: {}\n",
        r.pages,
        r.algo,
        r.pool,
        r.threads,
        r.mm_stat,
        r.io_stat,
        r.bd_stat,
        r.debug_stat,
        r.write_mbps,
        r.read_mbps,
        if r.verified { "yes" } else { "NO" }
    )
}

//! `zmem replay`: a memory-pressure simulator. An access trace touches pages of a page set; RAM
//! holds at most `ram_pages` of them, and what does not fit goes to swap: a zram device, or
//! zswap in front of a swap file. Touching a swapped page brings it back.
//!
//! Model: RAM is a CLOCK (second-chance) list of frames, the classic approximation of the
//! kernel's active/inactive LRU: an access sets the frame's referenced bit, and reclaim sweeps
//! the hand, clearing bits until it finds an unreferenced victim. A victim is swapped out at its
//! page id as swap offset: an all-zero page only sets a bit in the swap layer's zeromap (Linux
//! 6.12+, for zram and zswap alike); any other page is stored. A swap-in loads the page (zswap's
//! loads are exclusive; zram's slot is freed after the read, as swap_free does) and checks it is
//! the page that went out. The first touch of a page is a fault from outside (no swap I/O).
//! Writes mark nothing: a page's content is its page-set content throughout, so every swap-in
//! can be verified. RAM is only the resident budget; the swap pool is reported separately
//! (its maximum), not charged against it. Not modelled yet: zsmalloc's own shrinker, which in
//! the kernel compacts the pool under memory pressure (so zsmalloc's maximum here includes the
//! fragmentation that loads leave behind).
//!
//! What is timed: each zram `write_page` / `read_page`, and each `zswap_store` / `zswap_load`
//! (the functions seed 001 traced with bpftrace); a rejected store's write to the swap file, a
//! miss's read from it and the shrink worker run outside the timed part, as the kernel's do.
//! Everything else is deterministic: the same pages and trace give the same counters.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use zmem_zram::Zram;
use zmem_zswap::{FileSlots, Incompressible, StoreOutcome, SwapFile, Zswap, ZswapConfig};

use crate::latency::{LatencyHist, LatencyRecorder, render_hist};
use crate::zram_run::{ZramRunConfig, build_device};
use crate::{LabError, Progress};

/// One access of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// Page id: an index into the page set.
    pub page: u64,
    pub write: bool,
    /// Nanoseconds since the trace start.
    pub time_ns: u64,
}

/// The swap behind RAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SwapKind {
    Zram,
    Zswap,
}

impl FromStr for SwapKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "zram" => Ok(Self::Zram),
            "zswap" => Ok(Self::Zswap),
            _ => Err(format!("unknown swap {s:?} (zram or zswap)")),
        }
    }
}

/// How to replay.
#[derive(Debug, Clone)]
pub struct ReplayConfig {
    /// Resident pages.
    pub ram_pages: u64,
    pub swap: SwapKind,
    pub algo: String,
    /// Allocator of the zram device or the zswap pool.
    pub pool: String,
    pub page_size: usize,
    /// zswap's `max_pool_percent` (of `ram_pages`).
    pub max_pool_percent: u32,
    pub accept_threshold_percent: u32,
    /// zswap's `shrinker_enabled`: reclaim also runs the zswap shrinker.
    pub shrinker: bool,
    pub incompressible: Incompressible,
    /// Directory for zswap's swap file (an unlinked temporary file); `None` keeps it in memory.
    pub swap_dir: Option<PathBuf>,
}

impl Default for ReplayConfig {
    fn default() -> Self {
        Self {
            ram_pages: 1024,
            swap: SwapKind::Zswap,
            algo: "lzo".into(),
            pool: "zsmalloc".into(),
            page_size: 4096,
            max_pool_percent: 20,
            accept_threshold_percent: 90,
            shrinker: false,
            incompressible: Incompressible::StoreAsIs,
            swap_dir: None,
        }
    }
}

/// What a replay measured. All fields but `store_hist`, `load_hist`, `cpu_secs` and
/// `wall_secs` are deterministic.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayResult {
    pub swap: SwapKind,
    pub algo: String,
    pub pool: String,
    pub ram_pages: u64,
    pub pages: u64,
    pub accesses: u64,
    pub reads: u64,
    pub writes: u64,
    /// First touches (faults that read nothing from swap).
    pub first_touches: u64,
    /// Pages evicted from RAM.
    pub swap_outs: u64,
    /// Of those, zero pages caught by the zeromap.
    pub zero_swap_outs: u64,
    /// Pages brought back from swap.
    pub swap_ins: u64,
    /// Stores the swap kept (zswap: zswpout; zram: every non-zero swap-out).
    pub stored: u64,
    /// zswap stores rejected (written to the swap file instead).
    pub rejected: u64,
    pub max_pool_bytes: u64,
    pub disk_reads: u64,
    pub disk_writes: u64,
    /// zswap's debugfs counters and vmstat events, or zram's mm_stat fields, by name.
    pub counters: Vec<Counter>,
    pub store_hist: LatencyHist,
    pub load_hist: LatencyHist,
    pub cpu_secs: f64,
    pub wall_secs: f64,
    /// Every swapped-in page equalled the page that went out.
    pub verified: bool,
}

const UNTOUCHED: u8 = 0;
const RESIDENT: u8 = 1;
const SWAPPED: u8 = 2;
const ZEROMAP: u8 = 3;

/// RAM: frames in a CLOCK.
#[derive(Debug)]
struct Ram {
    frames: Vec<u32>,
    referenced: Vec<bool>,
    frame_of: Vec<u32>,
    hand: usize,
    capacity: usize,
}

impl Ram {
    fn new(capacity: usize, pages: usize) -> Self {
        Self {
            frames: Vec::with_capacity(capacity),
            referenced: Vec::with_capacity(capacity),
            frame_of: vec![u32::MAX; pages],
            hand: 0,
            capacity,
        }
    }

    /// A frame for a new page: a free one, or the CLOCK's victim (whose page id is returned).
    fn take_frame(&mut self) -> (usize, Option<u32>) {
        if self.frames.len() < self.capacity {
            self.frames.push(u32::MAX);
            self.referenced.push(false);
            return (self.frames.len() - 1, None);
        }
        loop {
            let f = self.hand;
            self.hand = (self.hand + 1) % self.frames.len();
            if self.referenced[f] {
                self.referenced[f] = false;
            } else {
                let victim = self.frames[f];
                self.frame_of[victim as usize] = u32::MAX;
                return (f, Some(victim));
            }
        }
    }

    fn install(&mut self, frame: usize, page: u32) {
        self.frames[frame] = page;
        self.referenced[frame] = true;
        self.frame_of[page as usize] = frame as u32;
    }
}

#[derive(Debug)]
enum Backend {
    Zram(Zram),
    Zswap { z: Zswap, shrink_work: u64 },
}

fn zram_err(e: zmem_zram::ZramError) -> LabError {
    LabError::Zram(e.to_string())
}

fn zswap_err(e: zmem_zswap::ZswapError) -> LabError {
    LabError::Setup(format!("zswap: {e}"))
}

/// `SHRINK_BATCH` and the reclaim priority vmscan's shrinker calls use (DEF_PRIORITY 12,
/// DEFAULT_SEEKS 2): each reclaim asks for `count * 4 / seeks >> 12` objects, scanned in
/// batches of 128 once enough have accumulated.
const SHRINK_BATCH: u64 = 128;

/// The zswap engine a replay or study uses, in front of a swap file of `nr_slots` pages.
pub fn build_zswap(cfg: &ReplayConfig, nr_slots: u64) -> Result<Zswap, LabError> {
    let store: Box<dyn zmem_zswap::SlotStore> = match &cfg.swap_dir {
        Some(dir) => Box::new(
            FileSlots::temporary(dir, nr_slots * cfg.page_size as u64)
                .map_err(|e| LabError::Setup(format!("swap file in {}: {e}", dir.display())))?,
        ),
        None => Box::new(zmem_zswap::MemSlots::default()),
    };
    let swap = Arc::new(SwapFile::new(store, cfg.page_size, nr_slots));
    let zcfg = ZswapConfig {
        page_size: cfg.page_size,
        compressor: cfg.algo.clone(),
        zpool: cfg.pool.clone(),
        total_ram_pages: cfg.ram_pages,
        max_pool_percent: cfg.max_pool_percent,
        accept_threshold_percent: cfg.accept_threshold_percent,
        shrinker_enabled: cfg.shrinker,
        incompressible: cfg.incompressible,
        ..ZswapConfig::default()
    };
    Zswap::new(&zcfg, swap).map_err(zswap_err)
}

/// Replays `trace` over `pages` (whole pages of `cfg.page_size`).
pub fn run(
    pages: &[u8],
    trace: &[Access],
    cfg: &ReplayConfig,
    progress: &dyn Progress,
) -> Result<ReplayResult, LabError> {
    let ps = cfg.page_size;
    let n = pages.len() / ps;
    if n == 0 || trace.is_empty() {
        return Err(LabError::NoPages);
    }
    if n > u32::MAX as usize {
        return Err(LabError::Setup(format!("{n} pages: at most 2^32 - 1 supported")));
    }
    if cfg.ram_pages == 0 {
        return Err(LabError::Setup("RAM of 0 pages".into()));
    }
    if let Some(a) = trace.iter().find(|a| a.page >= n as u64) {
        return Err(LabError::Setup(format!(
            "trace touches page {} but the page set has {n} pages",
            a.page
        )));
    }
    let page = |i: usize| &pages[i * ps..(i + 1) * ps];

    let mut backend = match cfg.swap {
        SwapKind::Zram => {
            let zc = ZramRunConfig {
                algo: cfg.algo.clone(),
                pool: cfg.pool.clone(),
                page_size: ps,
                ..ZramRunConfig::default()
            };
            Backend::Zram(build_device(&zc, n as u64)?)
        }
        SwapKind::Zswap => Backend::Zswap { z: build_zswap(cfg, n as u64)?, shrink_work: 0 },
    };

    let mut ram = Ram::new(cfg.ram_pages.min(n as u64) as usize, n);
    let mut state = vec![UNTOUCHED; n];
    let (mut store_rec, mut load_rec) = (LatencyRecorder::new(), LatencyRecorder::new());
    let mut r = Counts::default();
    let mut verified = true;
    let mut buf = vec![0u8; ps];

    progress.start("replay", trace.len() as u64);
    let cpu0 = crate::cputime::thread_cpu_secs();
    let start = Instant::now();
    for (k, a) in trace.iter().enumerate() {
        if a.write {
            r.writes += 1;
        } else {
            r.reads += 1;
        }
        let p = a.page as usize;
        if state[p] == RESIDENT {
            ram.referenced[ram.frame_of[p] as usize] = true;
            continue;
        }
        let (frame, victim) = ram.take_frame();
        if let Some(v) = victim {
            let v = v as usize;
            r.swap_outs += 1;
            let data = page(v);
            if data.iter().all(|&b| b == 0) {
                r.zero_swap_outs += 1;
                state[v] = ZEROMAP;
            } else {
                backend_store(&mut backend, v as u64, data, &mut store_rec, &mut r, cfg)?;
                state[v] = SWAPPED;
            }
        }
        match state[p] {
            UNTOUCHED => r.first_touches += 1,
            ZEROMAP => r.swap_ins += 1,
            _ => {
                r.swap_ins += 1;
                backend_load(&mut backend, p as u64, &mut buf, &mut load_rec)?;
                verified &= buf == page(p);
            }
        }
        state[p] = RESIDENT;
        ram.install(frame, p as u32);
        if k % 4096 == 4095 {
            progress.advance(4096);
        }
    }
    let wall_secs = start.elapsed().as_secs_f64();
    let cpu_secs = match (cpu0, crate::cputime::thread_cpu_secs()) {
        (Some(a), Some(b)) => b - a,
        _ => 0.0,
    };
    progress.finish();

    let (max_pool_bytes, disk_reads, disk_writes, counters) = match &backend {
        Backend::Zram(z) => {
            let mm = z.mm_stat();
            let counters = zmem_zram::MmStat::FIELDS
                .iter()
                .zip(mm.values())
                .map(|(n, v)| Counter { name: n.to_string(), value: v });
            (mm.mem_used_max, 0, 0, counters.collect())
        }
        Backend::Zswap { z, .. } => {
            let s = z.stats();
            let vmstat = [("zswpin", s.zswpin), ("zswpout", s.zswpout), ("zswpwb", s.zswpwb)];
            let c: Vec<Counter> = s
                .debugfs()
                .into_iter()
                .chain(vmstat)
                .map(|(n, v)| Counter { name: n.to_string(), value: v })
                .collect();
            let f = z.swap_file();
            (z.max_pool_pages() * ps as u64, f.reads(), f.writes(), c)
        }
    };
    Ok(ReplayResult {
        swap: cfg.swap,
        algo: cfg.algo.clone(),
        pool: cfg.pool.clone(),
        ram_pages: cfg.ram_pages,
        pages: n as u64,
        accesses: trace.len() as u64,
        reads: r.reads,
        writes: r.writes,
        first_touches: r.first_touches,
        swap_outs: r.swap_outs,
        zero_swap_outs: r.zero_swap_outs,
        swap_ins: r.swap_ins,
        stored: r.stored,
        rejected: r.rejected,
        max_pool_bytes,
        disk_reads,
        disk_writes,
        counters,
        store_hist: store_rec.finish(),
        load_hist: load_rec.finish(),
        cpu_secs,
        wall_secs,
        verified,
    })
}

/// One named counter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Counter {
    pub name: String,
    pub value: u64,
}

impl ReplayResult {
    /// A counter by name (0 if the swap kind has no such counter).
    pub fn counter(&self, name: &str) -> u64 {
        self.counters.iter().find(|c| c.name == name).map_or(0, |c| c.value)
    }
}

#[derive(Debug, Default)]
struct Counts {
    reads: u64,
    writes: u64,
    first_touches: u64,
    swap_outs: u64,
    zero_swap_outs: u64,
    swap_ins: u64,
    stored: u64,
    rejected: u64,
}

fn backend_store(
    b: &mut Backend,
    offset: u64,
    data: &[u8],
    rec: &mut LatencyRecorder,
    r: &mut Counts,
    cfg: &ReplayConfig,
) -> Result<(), LabError> {
    match b {
        Backend::Zram(z) => {
            let t = Instant::now();
            z.write_page(offset, data).map_err(zram_err)?;
            rec.record(t.elapsed().as_nanos() as u64);
            r.stored += 1;
        }
        Backend::Zswap { z, shrink_work } => {
            let t = Instant::now();
            let outcome = z.store(offset, data).map_err(zswap_err)?;
            rec.record(t.elapsed().as_nanos() as u64);
            if let StoreOutcome::Stored { .. } = outcome {
                r.stored += 1;
            } else {
                r.rejected += 1;
                z.swap_file().write_page(offset, data).map_err(zswap_err)?;
            }
            z.run_pending_work();
            if cfg.shrinker {
                *shrink_work += z.shrinker_count() * 4 / 2;
                while *shrink_work >= SHRINK_BATCH << 12 {
                    z.shrinker_scan(SHRINK_BATCH);
                    *shrink_work -= SHRINK_BATCH << 12;
                }
            }
        }
    }
    Ok(())
}

fn backend_load(
    b: &mut Backend,
    offset: u64,
    out: &mut [u8],
    rec: &mut LatencyRecorder,
) -> Result<(), LabError> {
    match b {
        Backend::Zram(z) => {
            let t = Instant::now();
            z.read_page(offset, out).map_err(zram_err)?;
            rec.record(t.elapsed().as_nanos() as u64);
            z.slot_free_notify(offset);
        }
        Backend::Zswap { z, .. } => {
            let t = Instant::now();
            let hit = z.load(offset, out).map_err(zswap_err)?;
            rec.record(t.elapsed().as_nanos() as u64);
            if !hit {
                z.swap_file().read_page(offset, out).map_err(zswap_err)?;
                z.note_disk_swapin();
            }
            z.invalidate(offset);
        }
    }
    Ok(())
}

/// Human-readable report.
pub fn render(r: &ReplayResult) -> String {
    let mut s = format!(
        "replay: {} accesses ({} reads, {} writes) over {} pages, RAM {} pages, swap {} ({}, {})\n",
        r.accesses,
        r.reads,
        r.writes,
        r.pages,
        r.ram_pages,
        match r.swap {
            SwapKind::Zram => "zram",
            SwapKind::Zswap => "zswap",
        },
        r.algo,
        r.pool
    );
    s += &format!(
        "first touches {}, swap-outs {} ({} zero pages to the zeromap), swap-ins {}\n\
         stored {}, rejected {}, max pool {} bytes, swap file reads {} writes {}\n",
        r.first_touches,
        r.swap_outs,
        r.zero_swap_outs,
        r.swap_ins,
        r.stored,
        r.rejected,
        r.max_pool_bytes,
        r.disk_reads,
        r.disk_writes
    );
    s += &r
        .counters
        .iter()
        .map(|c| format!("{} {}", c.name, c.value))
        .collect::<Vec<_>>()
        .join(", ");
    s += "\n";
    s += &format!(
        "CPU {:.3} s, wall {:.3} s, verified: {}\n",
        r.cpu_secs,
        r.wall_secs,
        if r.verified { "yes" } else { "NO" }
    );
    s += &render_hist("store_ns", &r.store_hist);
    s += &render_hist("load_ns", &r.load_hist);
    s
}

//! The simulator: RAM ([`Ram`]) in front of a swap area ([`SwapLayer`]), one access at a time.
//!
//! Takes a page set and a [`ReplayConfig`]; gives, access by access, the swap traffic and, at
//! the end, a [`ReplayResult`]. A page's first touch is a fault from outside (no swap I/O); a
//! touch of a swapped page brings it back through the swap layer and checks it is the page
//! that went out. Writes mark nothing: a page's content is its page-set content throughout, so
//! every swap-in can be verified.

use std::sync::Arc;
use std::time::Instant;

use zmem_zram::Zram;
use zmem_zswap::{Stage, SwapDevice, SwapHook, SwapIn, SwapLayer, SwapOut, ZswapError};

use super::lru::{Lru, SWAP_CLUSTER_MAX};
use super::{Access, Counter, ReplayConfig, ReplayResult, SwapKind, build_zswap};
use crate::LabError;
use crate::cputime::Elapsed;
use crate::latency::LatencyRecorder;
use crate::zram_run::{ZramRunConfig, build_device};

/// A zram device as the swap layer's device: zram swap (`swapon /dev/zram0`).
struct ZramSwap(Arc<Zram>);

impl SwapDevice for ZramSwap {
    fn write_page(&self, offset: u64, page: &[u8]) -> Result<(), ZswapError> {
        self.0.write_page(offset, page).map_err(|e| ZswapError::Device {
            op: "write",
            offset,
            err: Box::new(e),
        })
    }
    fn read_page(&self, offset: u64, out: &mut [u8]) -> Result<(), ZswapError> {
        self.0.read_page(offset, out).map_err(|e| ZswapError::Device {
            op: "read",
            offset,
            err: Box::new(e),
        })
    }
    fn free_slot(&self, offset: u64) {
        self.0.slot_free_notify(offset);
    }
}

/// Times what seed 001 traced with bpftrace: `zswap_store` / `zswap_load`, or with zram as the
/// swap device, zram's page write and read. A zswap miss's device I/O is not timed.
pub(crate) struct SwapTimer {
    time_device: bool,
    pub(crate) store: LatencyRecorder,
    pub(crate) load: LatencyRecorder,
}

impl SwapTimer {
    pub(crate) fn new(kind: SwapKind) -> Self {
        Self {
            time_device: kind == SwapKind::Zram,
            store: LatencyRecorder::new(),
            load: LatencyRecorder::new(),
        }
    }
}

impl SwapHook for SwapTimer {
    fn around<R>(&mut self, stage: Stage, f: impl FnOnce() -> R) -> R {
        let rec = match stage {
            Stage::ZswapStore => &mut self.store,
            Stage::ZswapLoad => &mut self.load,
            Stage::DeviceWrite if self.time_device => &mut self.store,
            Stage::DeviceRead if self.time_device => &mut self.load,
            Stage::DeviceWrite | Stage::DeviceRead => return f(),
        };
        let t = Instant::now();
        let r = f();
        rec.record(t.elapsed().as_nanos() as u64);
        r
    }
}

#[derive(Debug, Default)]
struct Counts {
    accesses: u64,
    reads: u64,
    writes: u64,
    first_touches: u64,
    swap_outs: u64,
    zero_swap_outs: u64,
    swap_ins: u64,
    zero_swap_ins: u64,
    stored: u64,
    rejected: u64,
    kept_in_ram: u64,
}

/// RAM, the swap area behind it, and what has happened so far.
pub struct Simulator<'p> {
    pages: &'p [u8],
    page_size: usize,
    cfg: ReplayConfig,
    swap: SwapLayer,
    zram: Option<Arc<Zram>>,
    ram: Lru,
    touched: Vec<bool>,
    timer: SwapTimer,
    counts: Counts,
    buf: Vec<u8>,
    verified: bool,
}

impl std::fmt::Debug for Simulator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator")
            .field("cfg", &self.cfg)
            .field("swap", &self.swap)
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

impl<'p> Simulator<'p> {
    /// RAM of `cfg.ram_pages` frames (at most the page count) in front of a fresh swap area
    /// of `cfg.swap` over `pages` (whole pages of `cfg.page_size`).
    pub fn new(pages: &'p [u8], cfg: &ReplayConfig) -> Result<Self, LabError> {
        let ps = cfg.page_size;
        let n = pages.len() / ps;
        if n == 0 {
            return Err(LabError::NoPages);
        }
        if n >= u32::MAX as usize {
            return Err(LabError::Setup(format!("{n} pages: at most 2^32 - 2 supported")));
        }
        if cfg.ram_pages == 0 {
            return Err(LabError::Setup("RAM of 0 pages".into()));
        }
        let (swap, zram) = match cfg.swap {
            SwapKind::Zram => {
                let zc = ZramRunConfig {
                    algo: cfg.algo.clone(),
                    pool: cfg.pool.clone(),
                    page_size: ps,
                    ..ZramRunConfig::default()
                };
                let z = Arc::new(build_device(&zc, n as u64)?);
                let dev = Box::new(ZramSwap(Arc::clone(&z)));
                (SwapLayer::new(dev, ps, n as u64), Some(z))
            }
            SwapKind::Zswap => (SwapLayer::with_zswap(build_zswap(cfg, n as u64)?), None),
        };
        Ok(Self {
            pages: &pages[..n * ps],
            page_size: ps,
            cfg: cfg.clone(),
            swap,
            zram,
            ram: Lru::new(cfg.ram_pages.min(n as u64) as usize, n),
            touched: vec![false; n],
            timer: SwapTimer::new(cfg.swap),
            counts: Counts::default(),
            buf: vec![0u8; ps],
            verified: true,
        })
    }

    /// Pages in the page set.
    pub fn pages(&self) -> u64 {
        self.touched.len() as u64
    }

    fn page(&self, i: usize) -> &'p [u8] {
        &self.pages[i * self.page_size..(i + 1) * self.page_size]
    }

    /// One access: a hit, or a fault that may reclaim a frame first and may swap the page in.
    pub fn access(&mut self, a: Access) -> Result<(), LabError> {
        let Some(p) = u32::try_from(a.page).ok().filter(|&p| (p as usize) < self.touched.len())
        else {
            return Err(LabError::Setup(format!(
                "trace touches page {} but the page set has {} pages",
                a.page,
                self.touched.len()
            )));
        };
        self.counts.accesses += 1;
        if a.write {
            self.counts.writes += 1;
        } else {
            self.counts.reads += 1;
        }
        if self.ram.is_resident(p) {
            self.ram.touch(p);
            return Ok(());
        }
        if self.ram.len() >= self.ram.capacity() {
            self.reclaim()?;
        }
        let i = p as usize;
        let refault = self.touched[i];
        if !self.touched[i] {
            self.touched[i] = true;
            self.counts.first_touches += 1;
        } else {
            self.counts.swap_ins += 1;
            if self.swap.swap_in(a.page, &mut self.buf, &mut self.timer)? == SwapIn::Zeromap {
                self.counts.zero_swap_ins += 1;
            }
            self.verified &= self.buf == self.page(i);
        }
        self.ram.install(p, refault);
        Ok(())
    }

    /// A memcg charge that finds RAM full: reclaim swaps out up to a batch of victims
    /// (`try_to_free_mem_cgroup_pages()` asks for `SWAP_CLUSTER_MAX` pages), as the LRU picks
    /// them. A victim the swap layer keeps in RAM is activated and reclaim moves on; when more
    /// than twice RAM's worth in a row is kept, nothing can leave RAM and the replay stops as
    /// the kernel would OOM.
    fn reclaim(&mut self) -> Result<(), LabError> {
        let want = SWAP_CLUSTER_MAX.min(self.ram.len());
        let mut freed = 0;
        let mut kept_in_a_row = 0;
        while freed < want {
            let victim = self.ram.victim();
            let data = self.page(victim as usize);
            let out = self.swap.swap_out(u64::from(victim), data, &mut self.timer)?;
            match out {
                SwapOut::KeptInRam => {
                    self.counts.kept_in_ram += 1;
                    self.counts.rejected += 1;
                    self.ram.activate(victim);
                    kept_in_a_row += 1;
                    if kept_in_a_row > 2 * self.ram.capacity() {
                        return Err(LabError::OutOfMemory { accesses: self.counts.accesses });
                    }
                    continue;
                }
                SwapOut::Zeromap => self.counts.zero_swap_outs += 1,
                SwapOut::Zswap => self.counts.stored += 1,
                SwapOut::Device if self.swap.zswap().is_some() => self.counts.rejected += 1,
                SwapOut::Device => self.counts.stored += 1,
            }
            kept_in_a_row = 0;
            self.counts.swap_outs += 1;
            self.ram.evict(victim);
            freed += 1;
        }
        Ok(())
    }

    /// The result, with the time the caller measured around the accesses.
    pub fn finish(self, time: Elapsed) -> ReplayResult {
        let ps = self.page_size as u64;
        let (max_pool_bytes, disk_reads, disk_writes, counters) =
            match (&self.zram, self.swap.zswap()) {
                (Some(z), _) => {
                    let mm = z.mm_stat();
                    let counters = zmem_zram::MmStat::FIELDS
                        .iter()
                        .zip(mm.values())
                        .map(|(n, v)| Counter { name: n.to_string(), value: v });
                    (mm.mem_used_max, 0, 0, counters.collect())
                }
                (None, Some(z)) => {
                    let s = z.stats();
                    let vmstat =
                        [("zswpin", s.zswpin), ("zswpout", s.zswpout), ("zswpwb", s.zswpwb)];
                    let c: Vec<Counter> = s
                        .debugfs()
                        .into_iter()
                        .chain(vmstat)
                        .map(|(n, v)| Counter { name: n.to_string(), value: v })
                        .collect();
                    let f = z.swap_file();
                    (z.max_pool_pages() * ps, f.reads(), f.writes(), c)
                }
                (None, None) => (0, 0, 0, Vec::new()),
            };
        let c = self.counts;
        ReplayResult {
            swap: self.cfg.swap,
            algo: self.cfg.algo.clone(),
            pool: self.cfg.pool.clone(),
            ram_pages: self.cfg.ram_pages,
            pages: self.touched.len() as u64,
            accesses: c.accesses,
            reads: c.reads,
            writes: c.writes,
            first_touches: c.first_touches,
            swap_outs: c.swap_outs,
            zero_swap_outs: c.zero_swap_outs,
            swap_ins: c.swap_ins,
            zero_swap_ins: c.zero_swap_ins,
            stored: c.stored,
            rejected: c.rejected,
            kept_in_ram: c.kept_in_ram,
            max_pool_bytes,
            disk_reads,
            disk_writes,
            counters,
            store_hist: self.timer.store.finish(),
            load_hist: self.timer.load.finish(),
            cpu_secs: time.cpu_secs,
            wall_secs: time.wall_secs,
            verified: self.verified,
        }
    }
}

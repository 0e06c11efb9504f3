//! The kernel's side of a zswap configuration in `zmem validate lab`: the player
//! (`player.rs`) performs the trace in a memory cgroup limited to the RAM budget, with zswap set
//! to the configuration ([`ParamsGuard`]) in front of a swap file of ours on a loop device of
//! ours ([`LoopSwap`]), while this side streams the work to it and samples zswap's pool.
//!
//! Set-up and clean-up: refuses where any swap area it did not make is active (zswap stores in
//! front of every swap area); makes the swap area, then writes zswap's parameters, then the
//! cgroup and the player; undone in the reverse order on every path (the player killed, the
//! cgroup removed, zswap's parameters and `enabled` written back, the swap area swapped off,
//! detached and removed). After the guards have dropped, the parameters are read again and
//! compared with the ones saved: [`ZswapKernelRun::params_restored`].
//!
//! What is counted, and its scope (cgroup v1's `memory.stat` has no zswap counters, and
//! /proc/vmstat and debugfs are system-wide, so only some figures are the player's alone):
//! - the player's own: swap-ins it timed (accesses to pages `mincore` said were out of RAM),
//!   their p50 and p99, its CPU in faulting accesses, the cgroup's `pgmajfault` and `swap`;
//! - global (every process's, ours the only swap area): debugfs `stored_pages`,
//!   `pool_total_size` (levels, less those before the player's first access; the peak is
//!   sampled), `written_back_pages`, `pool_limit_hit` and the `reject_*` counters (deltas);
//!   `/proc/vmstat` `zswpin`, `zswpout`, `zswpwb`, `pswpin`, `pswpout` (deltas); `/proc/meminfo`
//!   `Zswap`/`Zswapped` (where debugfs is not mounted, the pool and the stored pages come from
//!   there); the loop device's sectors read and written (every page any process swapped to our
//!   area: the boot's kdamond pages other processes' cold memory out to any swap there is).
//!   `foreign_pages_bound` is how many of the pages zswap stores cannot be the player's (more
//!   than the cgroup has in swap).
//!
//! Kernel facts relied on (6.18): zero-filled pages never reach zswap (mm/page_io.c
//! `swap_writeout()` -> `is_folio_zero_filled()` sets the zeromap bit); zswap has one zsmalloc
//! pool per compressor (mm/zswap.c `zswap_pool_create()`), `pool_total_size` is
//! `zswap_total_pages()` in bytes; `zswap_store()` rejects past `zswap_check_limits()` (the pool
//! at `zswap_max_pages()`, `max_pool_percent` of `totalram_pages()`, until it shrinks below the
//! accept threshold) and the page goes to the swap area; with `shrinker_enabled` the shrinker
//! (`zswap_shrinker_scan()` -> `shrink_memcg_cb()` -> `zswap_writeback_entry()`) writes stored
//! pages to the swap area (`zswpwb`, `written_back_pages`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::kernel_replay::process_cpu_secs;
use crate::kernel_replay::{FILE_REFAULTS, files_said, player_header};
use crate::player::{self, DONE, FILES, READY, SWAPINS};
use crate::zswap_params::{self, ParamsGuard};
use crate::zswap_swap::{self, LoopSwap};
use zmem_kernel::KernelError;
use zmem_kernel::harness::{CgroupChild, MemCgroup};
use zmem_lab::ZswapParams;
use zmem_pages::access::Access;

/// debugfs's zswap directory.
pub const DEBUGFS_ZSWAP: &str = "/sys/kernel/debug/zswap";

/// debugfs counters read (levels: `stored_pages`, `pool_total_size`; the rest events).
const DEBUGFS_KEYS: [&str; 9] = [
    "stored_pages",
    "pool_total_size",
    "written_back_pages",
    "pool_limit_hit",
    "reject_reclaim_fail",
    "reject_alloc_fail",
    "reject_compress_fail",
    "reject_compress_poor",
    "reject_kmemcache_fail",
];

/// `/proc/vmstat` counters read (events).
const VMSTAT_KEYS: [&str; 7] =
    ["zswpin", "zswpout", "zswpwb", "pswpin", "pswpout", "swap_ra", "swap_ra_hit"];

/// How a zswap run is set up.
#[derive(Debug, Clone)]
pub struct ZswapRunConfig {
    pub memory_limit: u64,
    pub page_size: usize,
    pub timeout: Duration,
    pub flush_stats: bool,
    pub settings: ZswapParams,
    /// Where the swap file goes ([`zswap_swap::DEFAULT_SWAP_DIR`] by default).
    pub swap_dir: PathBuf,
    /// zswap's parameter directory ([`zswap_params::PARAMS_DIR`]; a test may point elsewhere).
    pub params_dir: PathBuf,
    /// The file the trace's file reads read (`KernelRunConfig::file`).
    pub file: Option<std::sync::Arc<crate::page_cache::TraceFile>>,
}

/// One reading of the global counters.
#[derive(Debug, Clone, Default)]
struct Counters {
    debugfs: Option<BTreeMap<String, u64>>,
    vmstat: BTreeMap<String, u64>,
    meminfo_zswap: Option<u64>,
    meminfo_zswapped: Option<u64>,
}

impl Counters {
    fn read() -> Self {
        let debug = Path::new(DEBUGFS_ZSWAP).parent().unwrap_or(Path::new("/"));
        let debugfs = zmem_kernel::zswap_state::debugfs_counters_at(debug).ok().map(|c| {
            c.values.into_iter().filter(|(k, _)| DEBUGFS_KEYS.contains(&k.as_str())).collect()
        });
        let mut vmstat = zmem_kernel::stat::vmstat().unwrap_or_default();
        vmstat.retain(|k, _| VMSTAT_KEYS.contains(&k.as_str()));
        let m = zmem_kernel::stat::meminfo().unwrap_or_default();
        let (meminfo_zswap, meminfo_zswapped) =
            (m.get("Zswap").copied(), m.get("Zswapped").copied());
        Self { debugfs, vmstat, meminfo_zswap, meminfo_zswapped }
    }

    /// zswap's pool now: debugfs `pool_total_size`, else meminfo `Zswap` (kB granularity).
    fn pool(&self) -> Option<u64> {
        self.debugfs.as_ref().and_then(|d| d.get("pool_total_size").copied()).or(self.meminfo_zswap)
    }
}

/// What the kernel did under one zswap configuration.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ZswapKernelRun {
    /// What it made (all removed since).
    pub swap_file: String,
    pub loop_device: String,
    pub cgroup: String,
    /// zswap's parameters before the run, and whether they read the same after it.
    pub params_before: Vec<(String, String)>,
    pub params_restored: bool,
    // The player's own.
    pub player_overhead_bytes: u64,
    pub resident_pages: u64,
    pub play_secs: f64,
    pub player_cpu_secs: f64,
    pub fault_cpu_secs: f64,
    pub timed_swap_ins: u64,
    pub swap_in_p50_ns: u64,
    pub swap_in_p99_ns: u64,
    pub cgroup_major_faults: u64,
    pub cgroup_swap_pages: u64,
    /// File reads, their major faults and the cgroup's file refaults (`KernelRun`'s).
    pub file_reads: u64,
    pub file_faults: u64,
    pub file_refaults: u64,
    // Global (module doc).
    /// debugfs `stored_pages` after the last access less before the first; `None` without
    /// debugfs, where `stored_pages_meminfo` (meminfo `Zswapped` / page size) stands in.
    pub stored_pages: Option<u64>,
    pub stored_pages_meminfo: Option<u64>,
    /// `pool_total_size` (debugfs, else meminfo `Zswap`) after the last access, and its peak,
    /// less the pool before the first access.
    pub pool_total_size: Option<u64>,
    pub peak_pool_total_size: Option<u64>,
    pub pool_source: String,
    pub pool_samples: u64,
    /// debugfs event deltas over the accesses (`written_back_pages`, `pool_limit_hit`,
    /// `reject_*`); empty without debugfs.
    pub debugfs_deltas: BTreeMap<String, u64>,
    /// /proc/vmstat deltas over the accesses.
    pub vmstat_deltas: BTreeMap<String, u64>,
    /// Pages read from and written to our swap area's loop device (its sectors).
    pub disk_read_pages: u64,
    pub disk_write_pages: u64,
    /// Pages zswap stores beyond all the cgroup has in swap: others', at least.
    pub foreign_pages_bound: u64,
    /// Figures that could not be read, and why.
    pub missing: Vec<String>,
}

fn cgroup_stat(cg: &MemCgroup, key: &str) -> Result<u64, KernelError> {
    let text = cg.read("memory.stat")?;
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
        .ok_or_else(|| KernelError::Setup(format!("memory.stat has no {key}")))
}

fn delta(after: &BTreeMap<String, u64>, before: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    after.iter().filter_map(|(k, a)| Some((k.clone(), a.saturating_sub(*before.get(k)?)))).collect()
}

/// Runs `trace` over `pages` under zswap configured as `cfg.settings` (module doc). The caller
/// checked the page ids. `stop` (a signal handler's flag) ends the run with
/// [`KernelError::Interrupted`] after everything made is undone and zswap restored.
pub fn run(
    pages: &[u8],
    trace: &[Access],
    cfg: &ZswapRunConfig,
    player_cmd: Command,
    stop: &AtomicBool,
) -> Result<ZswapKernelRun, KernelError> {
    if let Some(line) = zswap_swap::refusal(&zswap_swap::foreign_swaps(&[])?) {
        return Err(KernelError::Setup(line));
    }
    if stop.load(Ordering::Relaxed) {
        return Err(KernelError::Interrupted);
    }
    let mut out = ZswapKernelRun {
        params_before: zswap_params::snapshot(&cfg.params_dir).map_err(KernelError::Setup)?,
        ..ZswapKernelRun::default()
    };
    let r = guarded(pages, trace, cfg, player_cmd, stop, &mut out);
    // Every guard has dropped: zswap must read as it did.
    let after = zswap_params::snapshot(&cfg.params_dir).map_err(KernelError::Setup)?;
    out.params_restored = after == out.params_before;
    r?;
    if !out.params_restored {
        return Err(KernelError::Setup(format!(
            "zswap's parameters were {:?} before the run and are {after:?} after it",
            out.params_before
        )));
    }
    Ok(out)
}

fn guarded(
    pages: &[u8],
    trace: &[Access],
    cfg: &ZswapRunConfig,
    mut player_cmd: Command,
    stop: &AtomicBool,
    out: &mut ZswapKernelRun,
) -> Result<(), KernelError> {
    let ps = cfg.page_size;
    let n = (pages.len() / ps) as u64;
    if let Some(f) = &cfg.file {
        f.drop_cached()?;
    }
    // Room for every page, the header, and slack for the swap allocator's clusters. Dropped
    // last of the guards below (locals drop in reverse order).
    let swap = LoopSwap::create(&cfg.swap_dir, (n + 1024) * ps as u64, 32767)?;
    out.swap_file = swap.file().display().to_string();
    out.loop_device = swap.device().display().to_string();
    let dev_path = swap.device().to_path_buf();
    if let Some(line) = zswap_swap::refusal(&zswap_swap::foreign_swaps(&[&dev_path])?) {
        return Err(KernelError::Setup(line));
    }
    let _params = ParamsGuard::apply(&cfg.params_dir, &cfg.settings).map_err(KernelError::Setup)?;
    let cgroup = MemCgroup::create(cfg.memory_limit)?;
    out.cgroup = cgroup.path().display().to_string();
    player_cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
    let mut spawned = CgroupChild::spawn(player_cmd, &cgroup)?;
    let stdin = spawned.child_mut().stdin.take().ok_or(KernelError::Panicked)?;
    let stdout = spawned.child_mut().stdout.take().ok_or(KernelError::Panicked)?;
    let pid = spawned.pid();
    let mut child = Some(spawned);
    let (rx, reader) = crate::kernel_replay::line_reader(stdout);
    let r = std::thread::scope(|s| {
        let w = Work { pages, trace, cfg, stop, swap: &swap, cgroup: &cgroup, pid };
        let r = measure(s, stdin, &rx, w, out);
        if r.is_err() {
            // Killing the player breaks the pipe, so the writer thread ends before the scope.
            child = None;
        }
        r
    });
    // The player exits once stdin is closed; the guard kills it otherwise.
    if let Some(c) = child.as_mut() {
        let until = Instant::now() + Duration::from_secs(2);
        while c.try_wait()?.is_none() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    drop(child);
    let _ = reader.join();
    r
}

struct Work<'a> {
    pages: &'a [u8],
    trace: &'a [Access],
    cfg: &'a ZswapRunConfig,
    stop: &'a AtomicBool,
    swap: &'a LoopSwap,
    cgroup: &'a MemCgroup,
    pid: u32,
}

fn measure<'scope, 'env>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    mut stdin: std::process::ChildStdin,
    rx: &mpsc::Receiver<String>,
    w: Work<'env>,
    out: &mut ZswapKernelRun,
) -> Result<(), KernelError> {
    let Work { pages, trace, cfg, stop, swap, cgroup, pid } = w;
    let ps = cfg.page_size;
    let header = player_header(ps, (pages.len() / ps) as u64, trace, cfg.file.as_deref());
    std::io::Write::write_all(&mut stdin, &header.encode())
        .map_err(|e| KernelError::Setup(format!("player: {e}")))?;
    let deadline = Instant::now() + cfg.timeout;
    let check = || -> Result<(), KernelError> {
        if stop.load(Ordering::Relaxed) {
            return Err(KernelError::Interrupted);
        }
        if Instant::now() > deadline {
            return Err(KernelError::PlayerFailed(format!(
                "the player took more than {} s",
                cfg.timeout.as_secs()
            )));
        }
        Ok(())
    };
    loop {
        match rx.recv_timeout(Duration::from_millis(5)) {
            Ok(l) if l.contains(READY) => break,
            Ok(_) | Err(mpsc::RecvTimeoutError::Timeout) => check()?,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(KernelError::PlayerFailed("the player ended before \"ready\"".into()));
            }
        }
    }
    out.player_overhead_bytes = cgroup.usage()?;
    let faults0 = cgroup_stat(cgroup, "pgmajfault")?;
    let refaults0 = cgroup_stat(cgroup, FILE_REFAULTS)?;
    let c0 = Counters::read();
    let disk0 = swap.block_stat()?;
    let pool0 = c0.pool().unwrap_or(0);
    let started = Instant::now();
    let writer = s.spawn(move || {
        let mut bw = std::io::BufWriter::with_capacity(1 << 16, stdin);
        player::write_stream_records(&mut bw, pages, ps, trace)
            .and_then(|()| bw.into_inner().map_err(|e| e.into_error()))
    });
    let mut peak = pool0;
    let done = loop {
        if cfg.flush_stats {
            cgroup.read("memory.stat")?;
        }
        if let Some(p) = Counters::read().pool() {
            peak = peak.max(p);
        }
        out.pool_samples += 1;
        match rx.recv_timeout(Duration::from_millis(2)) {
            Ok(l) if l.contains(SWAPINS) => {
                let mut f = l[l.find(SWAPINS).unwrap_or(0)..].split_whitespace().skip(1);
                let mut next = || f.next().and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
                (out.timed_swap_ins, out.swap_in_p50_ns, out.swap_in_p99_ns) =
                    (next(), next(), next());
                out.fault_cpu_secs = next() as f64 / 1e9;
            }
            Ok(l) if l.contains(FILES) => (out.file_reads, out.file_faults) = files_said(&l),
            Ok(l) if l.contains(DONE) => {
                out.player_cpu_secs = process_cpu_secs(pid)?;
                break l[l.find(DONE).unwrap_or(0)..].to_string();
            }
            Ok(_) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(KernelError::PlayerFailed(
                    "the player ended before \"done\" (the OOM killer, where the budget is too \
                     tight for the trace)"
                        .into(),
                ));
            }
        }
        check()?;
    };
    out.play_secs = started.elapsed().as_secs_f64();
    let c1 = Counters::read();
    let disk1 = swap.block_stat()?;
    let stdin = writer
        .join()
        .map_err(|_| KernelError::Panicked)?
        .map_err(|e| KernelError::Setup(format!("writing to the player: {e}")))?;
    let mut said = done.split_whitespace().skip(1).map(str::parse::<u64>);
    match (said.next(), said.next()) {
        (Some(Ok(a)), Some(Ok(resident))) if a == trace.len() as u64 => {
            out.resident_pages = resident
        }
        _ => return Err(KernelError::Setup(format!("the player said {done:?}"))),
    }
    out.cgroup_major_faults = cgroup_stat(cgroup, "pgmajfault")?.saturating_sub(faults0);
    out.file_refaults = cgroup_stat(cgroup, FILE_REFAULTS)?.saturating_sub(refaults0);
    out.cgroup_swap_pages = cgroup_stat(cgroup, "swap")? / ps as u64;
    fill_globals(out, &c0, &c1, peak, ps);
    out.disk_read_pages =
        zswap_swap::sectors_to_pages(disk1.read_sectors.saturating_sub(disk0.read_sectors), ps);
    out.disk_write_pages =
        zswap_swap::sectors_to_pages(disk1.write_sectors.saturating_sub(disk0.write_sectors), ps);
    drop(stdin);
    Ok(())
}

/// The global figures from the readings before the first access and after the last.
fn fill_globals(out: &mut ZswapKernelRun, c0: &Counters, c1: &Counters, peak: u64, ps: usize) {
    let pool0 = c0.pool().unwrap_or(0);
    out.pool_total_size = c1.pool().map(|p| p.saturating_sub(pool0));
    out.peak_pool_total_size = c1.pool().map(|p| peak.max(p).saturating_sub(pool0));
    out.pool_source = if c1.debugfs.is_some() {
        "debugfs pool_total_size".into()
    } else {
        "/proc/meminfo Zswap (debugfs not mounted)".into()
    };
    out.stored_pages_meminfo =
        c1.meminfo_zswapped.map(|b| b.saturating_sub(c0.meminfo_zswapped.unwrap_or(0)) / ps as u64);
    match (&c0.debugfs, &c1.debugfs) {
        (Some(d0), Some(d1)) => {
            out.stored_pages = d1
                .get("stored_pages")
                .map(|s| s.saturating_sub(d0.get("stored_pages").copied().unwrap_or(0)));
            out.debugfs_deltas = delta(d1, d0);
            out.debugfs_deltas.remove("stored_pages");
            out.debugfs_deltas.remove("pool_total_size");
        }
        _ => out.missing.push(format!(
            "stored_pages, pool_limit_hit, reject_* and written_back_pages: {DEBUGFS_ZSWAP} is \
             not there (debugfs not mounted: pass --mount-debugfs to mount it for the run); the \
             pool is meminfo's Zswap, the stored pages meminfo's Zswapped, written back vmstat's \
             zswpwb"
        )),
    }
    out.vmstat_deltas = delta(&c1.vmstat, &c0.vmstat);
    for k in VMSTAT_KEYS {
        if !out.vmstat_deltas.contains_key(k) {
            out.missing.push(format!("/proc/vmstat has no {k}"));
        }
    }
    let stored = out.stored_pages.or(out.stored_pages_meminfo).unwrap_or(0);
    out.foreign_pages_bound = stored.saturating_sub(out.cgroup_swap_pages);
}

/// The directory of zswap's parameters on this kernel, or why there is none.
pub fn params_dir() -> Result<PathBuf, String> {
    let p = Path::new(zswap_params::PARAMS_DIR);
    if p.is_dir() {
        Ok(p.to_path_buf())
    } else {
        Err("this kernel has no zswap (no /sys/module/zswap/parameters: CONFIG_ZSWAP off)".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(kv: &[(&str, u64)]) -> BTreeMap<String, u64> {
        kv.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn globals_are_differences_and_missing_debugfs_is_said() {
        let c0 = Counters {
            debugfs: Some(m(&[
                ("stored_pages", 5),
                ("pool_total_size", 8192),
                ("written_back_pages", 10),
            ])),
            vmstat: m(&[
                ("zswpout", 100),
                ("zswpin", 7),
                ("zswpwb", 10),
                ("pswpin", 0),
                ("pswpout", 3),
                ("swap_ra", 5),
                ("swap_ra_hit", 1),
            ]),
            meminfo_zswap: Some(8192),
            meminfo_zswapped: Some(5 * 4096),
        };
        let c1 = Counters {
            debugfs: Some(m(&[
                ("stored_pages", 1005),
                ("pool_total_size", 2_008_192),
                ("written_back_pages", 60),
            ])),
            vmstat: m(&[
                ("zswpout", 1200),
                ("zswpin", 107),
                ("zswpwb", 60),
                ("pswpin", 20),
                ("pswpout", 53),
                ("swap_ra", 25),
                ("swap_ra_hit", 4),
            ]),
            meminfo_zswap: Some(2_008_192),
            meminfo_zswapped: Some(1005 * 4096),
        };
        let mut out = ZswapKernelRun { cgroup_swap_pages: 990, ..Default::default() };
        fill_globals(&mut out, &c0, &c1, 2_500_000, 4096);
        assert_eq!(out.stored_pages, Some(1000));
        assert_eq!(out.stored_pages_meminfo, Some(1000));
        assert_eq!(out.pool_total_size, Some(2_000_000));
        assert_eq!(out.peak_pool_total_size, Some(2_500_000 - 8192));
        assert_eq!(out.debugfs_deltas, m(&[("written_back_pages", 50)]));
        assert_eq!(out.vmstat_deltas["zswpout"], 1100);
        assert_eq!(out.vmstat_deltas["zswpwb"], 50);
        assert_eq!((out.vmstat_deltas["swap_ra"], out.vmstat_deltas["swap_ra_hit"]), (20, 3));
        assert_eq!(out.foreign_pages_bound, 10);
        assert!(out.missing.is_empty(), "{:?}", out.missing);

        let strip = |c: &Counters| Counters { debugfs: None, ..c.clone() };
        let mut out = ZswapKernelRun::default();
        fill_globals(&mut out, &strip(&c0), &strip(&c1), 0, 4096);
        assert_eq!(out.stored_pages, None);
        assert_eq!(out.stored_pages_meminfo, Some(1000));
        assert_eq!(out.pool_total_size, Some(2_000_000));
        assert!(out.pool_source.contains("meminfo"));
        assert!(out.missing[0].contains("--mount-debugfs"), "{:?}", out.missing);
    }
}

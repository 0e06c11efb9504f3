//! The system's compressed-memory state in one struct, read from the kernel's files: every zram
//! device, zswap, the swap areas and the swap/zswap counters (and their rates over a window).
//! `zmem status` prints it and `zmem exporter` exposes it: both read it through [`read`], so
//! the numbers they show come from the same parsers ([`parse`]).
//!
//! Nothing here needs root for what the kernel lets anyone read (zram's sysfs attributes,
//! /proc/swaps, /proc/vmstat, /proc/meminfo, zswap's module parameters). The debugfs files
//! (zswap's counters, zsmalloc's class statistics, zram's `block_state`) need root or
//! CAP_DAC_READ_SEARCH and a mounted debugfs: what could not be read is listed in
//! [`Status::unreadable`] with the reason, never silently left out.
//!
//! The roots (`/sys`, `/proc`, the debugfs mount) are parameters ([`Roots`]) so that the whole
//! reader runs in tests on a fixture tree.

pub use crate::parse;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

pub use parse::{BdStat, BlockStateCounts, ClassTotals, IoStat, MmStat, Secondary};

use crate::KernelError;
use crate::zswap_state::{debugfs_counters_at, params_at};

/// Where the kernel's files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    /// sysfs, `/sys`.
    pub sys: PathBuf,
    /// procfs, `/proc`.
    pub proc: PathBuf,
    /// debugfs, `/sys/kernel/debug`.
    pub debug: PathBuf,
}

impl Default for Roots {
    fn default() -> Self {
        Self { sys: "/sys".into(), proc: "/proc".into(), debug: "/sys/kernel/debug".into() }
    }
}

/// What to read.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub roots: Roots,
    /// Sample the counters twice this far apart and report rates (None: no rates).
    pub rate_window: Option<Duration>,
    /// Count idle and written-back slots in zram's debugfs `block_state` (one line per stored
    /// slot: cheap for `zmem status`, skipped by the exporter's scrapes of large devices).
    pub block_state: bool,
}

/// Something that could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unreadable {
    /// What it would have given (`zswap counters`, `zram1 zsmalloc classes`, ...).
    pub what: String,
    pub path: String,
    pub why: String,
}

/// The whole state.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// Unix time of the reading, seconds.
    pub time_unix: u64,
    /// The kernel's page size in bytes.
    pub page_size: u64,
    /// Every zram device, by number.
    pub zram: Vec<ZramDevice>,
    pub zswap: Zswap,
    /// The active swap areas, in /proc/swaps order.
    pub swaps: Vec<SwapArea>,
    /// Swap and zswap counters since boot (/proc/vmstat).
    pub counters: Counters,
    /// Rates over the window, when one was asked for.
    pub rates: Option<Rates>,
    /// Memory pressure now (`crate::pressure`), where /proc and /sys share a root.
    pub pressure: Option<crate::pressure::Pressure>,
    pub unreadable: Vec<Unreadable>,
}

/// One zram device.
#[derive(Debug, Clone, Serialize)]
pub struct ZramDevice {
    /// `zramN`.
    pub name: String,
    pub id: u32,
    /// `initstate`: a disksize has been set.
    pub initialized: bool,
    pub disksize_bytes: u64,
    /// The primary algorithm, and every one this kernel's zram offers.
    pub algorithm: Option<String>,
    pub algorithms_offered: Vec<String>,
    /// Recompression algorithms (CONFIG_ZRAM_MULTI_COMP), by priority.
    pub secondaries: Vec<Secondary>,
    pub mm_stat: Option<MmStat>,
    pub io_stat: Option<IoStat>,
    /// CONFIG_ZRAM_WRITEBACK only.
    pub bd_stat: Option<BdStat>,
    /// Pages written back to the backing device (bd_stat's `bd_count`, 4 KiB units).
    pub written_back_pages: Option<u64>,
    /// Slots marked idle (debugfs `block_state`, CONFIG_ZRAM_MEMORY_TRACKING).
    pub idle_pages: Option<u64>,
    /// orig_data_size / compr_data_size (None while nothing compressed is stored).
    pub compression_ratio: Option<f64>,
    /// orig_data_size - mem_used_total: what the device saves (negative when it costs).
    pub memory_saved_bytes: Option<i64>,
    /// What `compact` would give back, in bytes (see [`Compactable`]).
    pub compactable: Option<Compactable>,
    /// zsmalloc's class statistics, when debugfs is readable.
    pub zs_classes: Option<ClassTotals>,
    /// Its swap area, when it is one.
    pub swap: Option<SwapArea>,
}

/// The estimate of what writing `compact` would free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Compactable {
    pub bytes: u64,
    /// `zsmalloc_classes`: exact, the sum of zsmalloc.c `zs_can_compact` over the classes
    /// (debugfs `freeable` column) at the time read. `mm_stat_bound`: an upper bound when
    /// debugfs cannot be read, `mem_used_total` less `compr_data_size` rounded up to whole
    /// pages (compaction cannot pack objects tighter than their sizes; it can do worse, as
    /// objects keep their size class's slot size and zspages are freed whole).
    pub source: &'static str,
}

/// zswap.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Zswap {
    /// /sys/module/zswap exists (built in or loaded).
    pub present: bool,
    pub enabled: Option<bool>,
    pub compressor: Option<String>,
    pub max_pool_percent: Option<u64>,
    pub accept_threshold_percent: Option<u64>,
    pub shrinker_enabled: Option<bool>,
    /// MemTotal x max_pool_percent / 100 (zswap.c `zswap_max_pages`).
    pub pool_limit_bytes: Option<u64>,
    /// The pool's memory (meminfo `Zswap`, or debugfs `pool_total_size`).
    pub pool_bytes: Option<u64>,
    /// The original size of what it stores (meminfo `Zswapped`).
    pub stored_bytes: Option<u64>,
    /// Pages stored (debugfs `stored_pages`, else `Zswapped` / page size).
    pub stored_pages: Option<u64>,
    /// stored_bytes / pool_bytes.
    pub compression_ratio: Option<f64>,
    /// Pages written back to swap (debugfs `written_back_pages`, else vmstat `zswpwb`).
    pub written_back_pages: Option<u64>,
    /// Every debugfs counter read (`reject_compress_poor`, `pool_limit_hit`, ...).
    pub debugfs: BTreeMap<String, u64>,
}

impl Zswap {
    /// Sum of the `reject_*` counters, when debugfs was read.
    pub fn rejects(&self) -> Option<u64> {
        if self.debugfs.is_empty() {
            return None;
        }
        Some(self.debugfs.iter().filter(|(k, _)| k.starts_with("reject_")).map(|(_, v)| v).sum())
    }
}

/// One active swap area (/proc/swaps), sizes in bytes: the crate's one type of it.
pub use crate::stat::SwapArea;

/// /proc/vmstat's swap counters, pages since boot (the zswap ones are absent without zswap):
/// the crate's one type of them.
pub use crate::stat::SwapCounters as Counters;

/// Pages per second over a window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rates {
    pub window_seconds: f64,
    pub pswpin_per_sec: f64,
    pub pswpout_per_sec: f64,
    pub zswpin_per_sec: Option<f64>,
    pub zswpout_per_sec: Option<f64>,
    pub zswpwb_per_sec: Option<f64>,
}

/// The kernel's page size.
pub fn page_size() -> u64 {
    // SAFETY: sysconf reads a constant of the running system; no memory is passed.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 { n as u64 } else { 4096 }
}

struct Reader<'a> {
    roots: &'a Roots,
    unreadable: Vec<Unreadable>,
}

impl Reader<'_> {
    /// What one of the crate's readers gave; a failure is recorded (what, the path it names,
    /// why) and gives None.
    fn take<T>(&mut self, what: &str, read: Result<T, KernelError>) -> Option<T> {
        match read {
            Ok(v) => Some(v),
            Err(e) => {
                self.fail(what, &e);
                None
            }
        }
    }

    fn fail(&mut self, what: &str, e: &KernelError) {
        let (path, why) = match e {
            KernelError::Io { path, error } => (path.clone(), why(error, path, self.roots)),
            KernelError::Parse { path, what } => {
                (path.clone(), format!("unexpected contents: {what}"))
            }
            e => (PathBuf::new(), e.to_string()),
        };
        self.unreadable.push(Unreadable {
            what: what.to_string(),
            path: path.display().to_string(),
            why,
        });
    }

    /// Reads and parses a file only this module reads (zsmalloc's and zram's debugfs files).
    fn parse<T>(
        &mut self,
        what: &str,
        path: &Path,
        f: impl FnOnce(&str) -> Result<T, KernelError>,
    ) -> Option<T> {
        let read = crate::error::read_text(path).and_then(|t| f(&t).map_err(|e| e.at(path)));
        self.take(what, read)
    }

    fn note(&mut self, what: &str, path: &Path, why: impl Into<String>) {
        self.unreadable.push(Unreadable {
            what: what.into(),
            path: path.display().to_string(),
            why: why.into(),
        });
    }
}

/// Why a read failed, in words that say what to do.
fn why(e: &std::io::Error, path: &Path, roots: &Roots) -> String {
    let debug = &roots.debug;
    let under_debug = path.starts_with(debug);
    match e.kind() {
        std::io::ErrorKind::PermissionDenied if under_debug => {
            "permission denied: debugfs is root-only (run as root, or grant CAP_DAC_READ_SEARCH)"
                .into()
        }
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        std::io::ErrorKind::NotFound if under_debug && !debugfs_mounted(debug) => format!(
            "not readable: debugfs is not mounted at {} (zmem mounts nothing; `zmem status \
             --mount-debugfs` as root mounts it and says so)",
            debug.display()
        ),
        std::io::ErrorKind::NotFound if under_debug => {
            "not present: debugfs is mounted, but this kernel does not have this file".into()
        }
        std::io::ErrorKind::NotFound => match removed_device(path, &roots.sys) {
            Some(dev) => format!("{dev} was removed while it was read"),
            None => "not present in this kernel".into(),
        },
        _ => e.to_string(),
    }
}

/// Whether debugfs is mounted at `debug`: its mount point is an empty directory when it is not
/// (and debugfs's own root always lists something).
fn debugfs_mounted(debug: &Path) -> bool {
    match std::fs::read_dir(debug) {
        Ok(mut entries) => entries.next().is_some(),
        // Unlistable (debugfs is root-only): something is mounted there.
        Err(e) => e.kind() == std::io::ErrorKind::PermissionDenied,
    }
}

/// The block device `path` belongs to (`sys/block/zramN/...`), when that device is gone now.
fn removed_device(path: &Path, sys: &Path) -> Option<String> {
    let rel = path.strip_prefix(sys.join("block")).ok()?;
    let dev = rel.components().next()?.as_os_str().to_string_lossy().into_owned();
    (!sys.join("block").join(&dev).exists()).then_some(dev)
}

/// Reads the whole state. Fails only when /proc/vmstat or /proc/swaps cannot be read (no procfs);
/// everything else that cannot be read is listed in [`Status::unreadable`].
pub fn read(opts: &Options) -> Result<Status, KernelError> {
    let roots = &opts.roots;
    let first = read_counters(&roots.proc)?;
    let t0 = Instant::now();
    let mut r = Reader { roots, unreadable: Vec::new() };
    let page = page_size();

    let swaps: Vec<SwapArea> = crate::stat::swaps_at(&roots.proc)?;

    let meminfo = r.take("memory totals", crate::stat::meminfo_at(&roots.proc));

    let mut zram = Vec::new();
    for id in zram_ids(&roots.sys) {
        zram.push(read_zram(&mut r, id, page, &swaps, opts.block_state));
    }
    let zswap = read_zswap(&mut r, page, meminfo.as_ref(), &first);

    let (counters, rates) = match opts.rate_window {
        Some(w) => {
            let spent = t0.elapsed();
            if w > spent {
                std::thread::sleep(w - spent);
            }
            let second = read_counters(&roots.proc)?;
            let secs = t0.elapsed().as_secs_f64();
            (second, Some(rates(&first, &second, secs)))
        }
        None => (first, None),
    };
    let time_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    Ok(Status {
        time_unix,
        page_size: page,
        zram,
        zswap,
        swaps,
        counters,
        rates,
        pressure: pressure_at(roots),
        unreadable: r.unreadable,
    })
}

/// The pressure reading under the roots' common directory (`/` live, a test's fake tree).
fn pressure_at(roots: &Roots) -> Option<crate::pressure::Pressure> {
    let root = roots.proc.parent()?;
    (roots.sys.parent() == Some(root)).then(|| crate::pressure::read_at(root))
}

fn read_counters(proc: &Path) -> Result<Counters, KernelError> {
    Ok(Counters::from_vmstat(&crate::stat::vmstat_at(proc)?))
}

fn rates(a: &Counters, b: &Counters, secs: f64) -> Rates {
    let per = |x: u64, y: u64| y.saturating_sub(x) as f64 / secs;
    let opt = |x: Option<u64>, y: Option<u64>| Some(per(x?, y?));
    Rates {
        window_seconds: secs,
        pswpin_per_sec: per(a.pswpin, b.pswpin),
        pswpout_per_sec: per(a.pswpout, b.pswpout),
        zswpin_per_sec: opt(a.zswpin, b.zswpin),
        zswpout_per_sec: opt(a.zswpout, b.zswpout),
        zswpwb_per_sec: opt(a.zswpwb, b.zswpwb),
    }
}

pub use crate::stat::zram_ids;

fn read_zram(
    r: &mut Reader<'_>,
    id: u32,
    page: u64,
    swaps: &[SwapArea],
    block_state: bool,
) -> ZramDevice {
    let name = format!("zram{id}");
    let sys = r.roots.sys.clone();
    let dir = crate::stat::zram_sysfs_at(&sys, id);
    let attr = |r: &mut Reader<'_>, file: &str| {
        r.take(&format!("{name} {file}"), crate::stat::zram_attr_at(&sys, id, file))
    };
    let num = |r: &mut Reader<'_>, file: &str| {
        let t = attr(r, file)?;
        let n = t
            .trim()
            .parse::<u64>()
            .map_err(|_| KernelError::parse(dir.join(file), format!("not a number: {t:?}")));
        r.take(&format!("{name} {file}"), n)
    };
    let initialized = num(r, "initstate") == Some(1);
    let disksize_bytes = num(r, "disksize").unwrap_or(0);
    let (algorithms_offered, algorithm) = r
        .take(&format!("{name} algorithm"), crate::stat::zram_attr_at(&sys, id, "comp_algorithm"))
        .map(|t| parse::parse_algorithms(&t))
        .unwrap_or_default();
    // Optional attributes: absent when their Kconfig option is off, which is not a failure
    // worth listing for every device; only a file that exists and cannot be read is.
    let optional = |file: &str| dir.join(file).exists();
    let secondaries = if optional("recomp_algorithm") {
        attr(r, "recomp_algorithm")
            .and_then(|t| parse::parse_recomp_algorithm(&t).ok())
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let mm_stat = r.take(&format!("{name} mm_stat"), crate::stat::zram_mm_stat_at(&sys, id));
    let io_stat = r.take(&format!("{name} io_stat"), crate::stat::zram_io_stat_at(&sys, id));
    let bd_stat = if optional("bd_stat") {
        // Unparsable: left out, as before (the exporter scrapes it every few seconds).
        match crate::stat::zram_bd_stat_at(&sys, id) {
            Ok(b) => Some(b),
            Err(e @ KernelError::Io { .. }) => {
                r.fail(&format!("{name} bd_stat"), &e);
                None
            }
            Err(_) => None,
        }
    } else {
        None
    };

    let debug_dir = r.roots.debug.join("zsmalloc").join(&name);
    let zs_classes = if initialized {
        r.parse(&format!("{name} zsmalloc classes"), &debug_dir.join("classes"), |t| {
            parse::parse_zs_classes(t)
        })
    } else {
        None
    };
    let block = if block_state && initialized {
        let p = r.roots.debug.join("zram").join(&name).join("block_state");
        r.parse(&format!("{name} idle pages"), &p, parse::parse_block_state)
    } else {
        None
    };

    let compression_ratio = mm_stat
        .filter(|m| m.compr_data_size > 0)
        .map(|m| m.orig_data_size as f64 / m.compr_data_size as f64);
    let memory_saved_bytes = mm_stat.map(|m| m.orig_data_size as i64 - m.mem_used_total as i64);
    let compactable = match (zs_classes, mm_stat) {
        (Some(c), _) => {
            Some(Compactable { bytes: c.freeable_pages * page, source: "zsmalloc_classes" })
        }
        (None, Some(m)) => Some(Compactable {
            bytes: m.mem_used_total.saturating_sub(m.compr_data_size.div_ceil(page) * page),
            source: "mm_stat_bound",
        }),
        (None, None) => None,
    };
    let dev = format!("/dev/{name}");
    let swap = swaps.iter().find(|a| a.filename == dev).cloned();
    ZramDevice {
        name,
        id,
        initialized,
        disksize_bytes,
        algorithm,
        algorithms_offered,
        secondaries,
        mm_stat,
        io_stat,
        bd_stat,
        written_back_pages: bd_stat.map(|b| b.bd_count),
        idle_pages: block.map(|b| b.idle),
        compression_ratio,
        memory_saved_bytes,
        compactable,
        zs_classes,
        swap,
    }
}

/// zswap's debugfs counters, in zswap.c's creation order.
pub const ZSWAP_DEBUGFS: [&str; 11] = [
    "pool_limit_hit",
    "reject_reclaim_fail",
    "reject_alloc_fail",
    "reject_kmemcache_fail",
    "reject_compress_fail",
    "reject_compress_poor",
    "decompress_fail",
    "written_back_pages",
    "pool_total_size",
    "stored_pages",
    "stored_incompressible_pages",
];

fn read_zswap(
    r: &mut Reader<'_>,
    page: u64,
    meminfo: Option<&BTreeMap<String, u64>>,
    counters: &Counters,
) -> Zswap {
    let params = r.roots.sys.join("module/zswap/parameters");
    let mut z = Zswap { present: params.exists(), ..Zswap::default() };
    if !z.present {
        return z;
    }
    let read = params_at(&r.roots.sys);
    let Some(p) = r.take("zswap parameters", read) else { return z };
    for (file, e) in &p.unreadable {
        r.fail(&format!("zswap {file}"), e);
    }
    // A parameter this kernel lacks is listed like a file that could not be read, as before
    // (`shrinker_enabled` only where the file exists: kernels before 6.8 have none).
    let value = |r: &mut Reader<'_>, file: &str| {
        let v = p.values.get(file).cloned();
        if v.is_none() && !p.unreadable.iter().any(|(f, _)| f == file) {
            r.note(&format!("zswap {file}"), &params.join(file), "not present in this kernel");
        }
        v
    };
    z.enabled = value(r, "enabled").and_then(|t| parse::parse_bool_param(&t));
    z.compressor = value(r, "compressor");
    z.max_pool_percent = value(r, "max_pool_percent").and_then(|t| t.parse().ok());
    z.accept_threshold_percent = value(r, "accept_threshold_percent").and_then(|t| t.parse().ok());
    if params.join("shrinker_enabled").exists() {
        z.shrinker_enabled = value(r, "shrinker_enabled").and_then(|t| parse::parse_bool_param(&t));
    }
    if let (Some(m), Some(pct)) = (meminfo, z.max_pool_percent) {
        // zswap.c zswap_max_pages: totalram_pages() * max_pool_percent / 100, in pages.
        z.pool_limit_bytes = m.get("MemTotal").map(|t| t / page * pct / 100 * page);
    }
    z.pool_bytes = meminfo.and_then(|m| m.get("Zswap").copied());
    z.stored_bytes = meminfo.and_then(|m| m.get("Zswapped").copied());

    match debugfs_counters_at(&r.roots.debug) {
        Ok(c) => {
            // Only the counters zswap.c makes are reported; one that is not a number is left
            // out, one that could not be read is listed.
            for (name, e) in &c.odd {
                if ZSWAP_DEBUGFS.contains(&name.as_str()) && matches!(e, KernelError::Io { .. }) {
                    r.fail(&format!("zswap {name}"), e);
                }
            }
            z.debugfs = c
                .values
                .into_iter()
                .filter(|(name, _)| ZSWAP_DEBUGFS.contains(&name.as_str()))
                .collect();
        }
        Err(e) => r.fail("zswap counters (rejects, writeback, stored pages)", &e),
    }
    if let Some(&p) = z.debugfs.get("pool_total_size") {
        z.pool_bytes = z.pool_bytes.or(Some(p));
    }
    z.stored_pages = z.debugfs.get("stored_pages").copied().or(z.stored_bytes.map(|b| b / page));
    z.written_back_pages = z.debugfs.get("written_back_pages").copied().or(counters.zswpwb);
    z.compression_ratio = match (z.stored_bytes, z.pool_bytes) {
        (Some(s), Some(p)) if p > 0 => Some(s as f64 / p as f64),
        _ => None,
    };
    z
}

#[cfg(test)]
mod tests;

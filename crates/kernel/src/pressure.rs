//! How short memory is now, as the kernel measures it, read without changing anything: memory
//! PSI (`/proc/pressure/memory`), `MemAvailable` against the zones' watermarks
//! (`/proc/zoneinfo`), workingset refaults and swap traffic (`/proc/vmstat`), and every memory
//! cgroup with a limit: its usage against `memory.max`/`memory.high` (v2) or
//! `memory.limit_in_bytes` (v1), its refaults, and its PSI where the kernel keeps one (v2).
//!
//! Kernel facts this follows (6.18): kswapd is woken when an allocation finds a zone's free
//! pages under its low watermark and reclaims until they are over its high one
//! (mm/page_alloc.c `wake_all_kswapds()`, mm/vmscan.c `balance_pgdat()`,
//! `pgdat_balanced()`); the watermarks are set by `__setup_per_zone_wmarks()` from
//! `min_free_kbytes` and `watermark_scale_factor`. A refault is a page read back that reclaim
//! had evicted (mm/workingset.c `workingset_refault()`). PSI `some` is the share of wall time
//! in which at least one task stalled on memory, `full` the share in which every non-idle task
//! did; `total` is microseconds stalled since boot (kernel/sched/psi.c).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::KernelError;
use crate::cgroups::{self, V2Root};
use crate::stat::SwapCounters;

/// A limit at or above this is no limit (v1 prints `PAGE_COUNTER_MAX` pages in bytes,
/// 9223372036854771712 on 4 KiB pages).
const V1_UNLIMITED: u64 = 1 << 62;

/// One PSI line: the running averages in percent and the total stall in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PsiLine {
    pub avg10: f64,
    pub avg60: f64,
    pub avg300: f64,
    pub total_us: u64,
}

/// A PSI file: `some` and, for memory and io, `full`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Psi {
    pub some: PsiLine,
    pub full: Option<PsiLine>,
}

/// Parses a PSI file (`some avg10=0.00 avg60=0.00 avg300=0.00 total=172133`, then `full ...`).
pub fn parse_psi(text: &str) -> Result<Psi, String> {
    let mut some = None;
    let mut full = None;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut f = line.split_whitespace();
        let kind = f.next().unwrap_or_default();
        let mut l = PsiLine::default();
        for kv in f {
            let (k, v) =
                kv.split_once('=').ok_or_else(|| format!("{line:?}: {kv:?} is not KEY=VALUE"))?;
            let bad = || format!("{line:?}: {k}={v:?} is not a number");
            match k {
                "avg10" => l.avg10 = v.parse().map_err(|_| bad())?,
                "avg60" => l.avg60 = v.parse().map_err(|_| bad())?,
                "avg300" => l.avg300 = v.parse().map_err(|_| bad())?,
                "total" => l.total_us = v.parse().map_err(|_| bad())?,
                _ => {}
            }
        }
        match kind {
            "some" => some = Some(l),
            "full" => full = Some(l),
            _ => return Err(format!("{line:?}: neither a some nor a full line")),
        }
    }
    Ok(Psi { some: some.ok_or("no some line")?, full })
}

/// One zone of `/proc/zoneinfo`, in pages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Zone {
    pub node: u32,
    pub name: String,
    pub free: u64,
    pub min: u64,
    pub low: u64,
    pub high: u64,
    pub managed: u64,
}

/// Parses `/proc/zoneinfo`: each `Node N, zone NAME` block's `pages free`, `min`, `low`, `high`
/// and `managed`. A block missing one of them is skipped.
pub fn parse_zoneinfo(text: &str) -> Vec<Zone> {
    let mut zones = Vec::new();
    let mut cur: Option<(u32, String, BTreeMap<&str, u64>)> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Node ") {
            zones.extend(cur.take().and_then(zone_of));
            let (node, zone) = rest.split_once(", zone").unwrap_or((rest, ""));
            cur = node.trim().parse().ok().map(|n| (n, zone.trim().to_string(), BTreeMap::new()));
            continue;
        }
        let Some((_, _, fields)) = cur.as_mut() else { continue };
        let t = line.trim();
        let (key, value) = match t.strip_prefix("pages free") {
            Some(v) => ("free", v),
            None => match t.split_once(char::is_whitespace) {
                Some((k @ ("min" | "low" | "high" | "managed"), v)) => (k, v),
                _ => continue,
            },
        };
        if let Ok(n) = value.trim().parse() {
            fields.entry(key).or_insert(n);
        }
    }
    zones.extend(cur.and_then(zone_of));
    zones
}

fn zone_of((node, name, f): (u32, String, BTreeMap<&str, u64>)) -> Option<Zone> {
    Some(Zone {
        node,
        name,
        free: *f.get("free")?,
        min: *f.get("min")?,
        low: *f.get("low")?,
        high: *f.get("high")?,
        managed: *f.get("managed")?,
    })
}

/// The watermarks summed over the zones that hold memory, in bytes: kswapd wakes when free
/// memory in a zone falls under its low mark, and stops over its high mark.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watermarks {
    pub free_bytes: u64,
    pub min_bytes: u64,
    pub low_bytes: u64,
    pub high_bytes: u64,
}

impl Watermarks {
    pub fn of(zones: &[Zone], page_size: u64) -> Self {
        let sum = |f: fn(&Zone) -> u64| {
            zones.iter().filter(|z| z.managed > 0).map(f).sum::<u64>() * page_size
        };
        Self {
            free_bytes: sum(|z| z.free),
            min_bytes: sum(|z| z.min),
            low_bytes: sum(|z| z.low),
            high_bytes: sum(|z| z.high),
        }
    }
}

/// Workingset refaults and activations since boot, in pages (`/proc/vmstat`, or a cgroup's
/// `memory.stat`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refaults {
    pub anon: u64,
    pub file: u64,
    pub activate_anon: u64,
    pub activate_file: u64,
}

impl Refaults {
    /// From `workingset_*` counters (absent counters count 0: kernels before 5.9 had one
    /// `workingset_refault` for both lists, read here as file refaults).
    pub fn from_counters(c: &BTreeMap<String, u64>) -> Self {
        let get = |k: &str| c.get(k).copied();
        Self {
            anon: get("workingset_refault_anon").unwrap_or(0),
            file: get("workingset_refault_file").or(get("workingset_refault")).unwrap_or(0),
            activate_anon: get("workingset_activate_anon").unwrap_or(0),
            activate_file: get("workingset_activate_file")
                .or(get("workingset_activate"))
                .unwrap_or(0),
        }
    }
}

/// A memory cgroup with a limit, and how close it is to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CgroupPressure {
    /// Its directory from `/`.
    pub path: String,
    /// 1 or 2.
    pub version: u8,
    /// `memory.current` (v2) or `memory.usage_in_bytes` (v1).
    pub usage_bytes: Option<u64>,
    /// `memory.max` (v2) or `memory.limit_in_bytes` (v1); `None`: no limit.
    pub max_bytes: Option<u64>,
    /// `memory.high` (v2 only); `None`: no limit.
    pub high_bytes: Option<u64>,
    /// Its `memory.stat` workingset counters (hierarchical in v2; v1's `total_*`).
    pub refaults: Refaults,
    /// `memory.pressure` (v2 only).
    pub psi: Option<Psi>,
    /// Anonymous bytes charged to it (`memory.stat` `anon`; v1 `total_rss`).
    #[serde(default)]
    pub anon_bytes: Option<u64>,
    /// Inactive page cache (`inactive_file`; v1 `total_inactive_file`): what its reclaim takes
    /// before anonymous memory while there is enough of it (mm/vmscan.c
    /// `prepare_scan_control()`'s `cache_trim_mode`, then `get_scan_count()` scans file only).
    #[serde(default)]
    pub inactive_file_bytes: Option<u64>,
}

/// Memory pressure now.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Pressure {
    /// `/proc/pressure/memory` (`None`: PSI off or unreadable; `notes` says which).
    pub psi: Option<Psi>,
    /// `MemAvailable` from /proc/meminfo.
    pub mem_available_bytes: Option<u64>,
    /// `Inactive(file)` from /proc/meminfo: the page cache kswapd trims first.
    #[serde(default)]
    pub inactive_file_bytes: Option<u64>,
    /// `AnonPages` from /proc/meminfo.
    #[serde(default)]
    pub anon_bytes: Option<u64>,
    pub watermarks: Watermarks,
    pub refaults: Refaults,
    pub swap: SwapCounters,
    /// Memory cgroups with a limit, in walk order.
    pub cgroups: Vec<CgroupPressure>,
    /// What could not be read, and why.
    pub notes: Vec<String>,
}

/// Reads the live system.
pub fn read() -> Pressure {
    read_at(Path::new("/"))
}

/// Reads `proc/` and `sys/` under `root` (a test's fake tree, or `/`).
pub fn read_at(root: &Path) -> Pressure {
    let mut p = Pressure::default();
    let proc = root.join("proc");
    match std::fs::read_to_string(proc.join("pressure/memory")) {
        Ok(t) => match parse_psi(&t) {
            Ok(psi) => p.psi = Some(psi),
            Err(e) => p.notes.push(format!("/proc/pressure/memory: {e}")),
        },
        Err(e) => {
            p.notes.push(format!("/proc/pressure/memory: {e} (PSI off: psi=0 or CONFIG_PSI unset)"))
        }
    }
    match crate::stat::meminfo_at(&proc) {
        Ok(m) => {
            p.mem_available_bytes = m.get("MemAvailable").copied();
            p.inactive_file_bytes = m.get("Inactive(file)").copied();
            p.anon_bytes = m.get("AnonPages").copied();
        }
        Err(e) => p.notes.push(e.to_string()),
    }
    match std::fs::read_to_string(proc.join("zoneinfo")) {
        Ok(t) => p.watermarks = Watermarks::of(&parse_zoneinfo(&t), page_size()),
        Err(e) => p.notes.push(format!("/proc/zoneinfo: {e}")),
    }
    match crate::stat::vmstat_at(&proc) {
        Ok(v) => {
            p.refaults = Refaults::from_counters(&v);
            p.swap = SwapCounters::from_vmstat(&v);
        }
        Err(e) => p.notes.push(e.to_string()),
    }
    p.cgroups = limited_cgroups(root, &mut p.notes);
    p
}

fn page_size() -> u64 {
    crate::capture::system_page_size() as u64
}

/// Every memory cgroup with a limit: v2's hierarchy, then v1's.
fn limited_cgroups(root: &Path, notes: &mut Vec<String>) -> Vec<CgroupPressure> {
    let mut out = Vec::new();
    for v2 in cgroups::v2_roots(root) {
        if let V2Root::Memory(dir) = v2 {
            let capped = cgroups::walk(&dir, &mut |d| out.extend(v2_cgroup(root, d)));
            if capped {
                notes.push(cgroups::stopped(root, &dir));
            }
        }
    }
    let v1 = root.join(cgroups::V1_MEMORY);
    if v1.join("memory.limit_in_bytes").exists() {
        let capped = cgroups::walk(&v1, &mut |d| out.extend(v1_cgroup(root, d)));
        if capped {
            notes.push(cgroups::stopped(root, &v1));
        }
    }
    out
}

fn read_u64(dir: &Path, file: &str) -> Option<u64> {
    std::fs::read_to_string(dir.join(file)).ok()?.trim().parse().ok()
}

fn stat(dir: &Path) -> BTreeMap<String, u64> {
    std::fs::read_to_string(dir.join("memory.stat"))
        .map(|t| crate::zswap_state::parse_key_values(&t))
        .unwrap_or_default()
}

fn v2_cgroup(root: &Path, dir: &Path) -> Option<CgroupPressure> {
    let c = v2_read(root, dir);
    (c.max_bytes.is_some() || c.high_bytes.is_some()).then_some(c)
}

fn v2_read(root: &Path, dir: &Path) -> CgroupPressure {
    // A v2 limit is a number, or `max` for none (which does not parse: `None`).
    let psi =
        std::fs::read_to_string(dir.join("memory.pressure")).ok().and_then(|t| parse_psi(&t).ok());
    let st = stat(dir);
    CgroupPressure {
        path: cgroups::shown(root, dir),
        version: 2,
        usage_bytes: read_u64(dir, "memory.current"),
        max_bytes: read_u64(dir, "memory.max"),
        high_bytes: read_u64(dir, "memory.high"),
        refaults: Refaults::from_counters(&st),
        psi,
        anon_bytes: st.get("anon").copied(),
        inactive_file_bytes: st.get("inactive_file").copied(),
    }
}

fn v1_cgroup(root: &Path, dir: &Path) -> Option<CgroupPressure> {
    let c = v1_read(root, dir);
    c.max_bytes.is_some().then_some(c)
}

fn v1_read(root: &Path, dir: &Path) -> CgroupPressure {
    let max = read_u64(dir, "memory.limit_in_bytes").filter(|&l| l < V1_UNLIMITED);
    // v1's hierarchical counters are `total_*`.
    let totals: BTreeMap<String, u64> = stat(dir)
        .into_iter()
        .filter_map(|(k, v)| k.strip_prefix("total_").map(|k| (k.to_string(), v)))
        .collect();
    CgroupPressure {
        path: cgroups::shown(root, dir),
        version: 1,
        usage_bytes: read_u64(dir, "memory.usage_in_bytes"),
        max_bytes: max,
        high_bytes: None,
        refaults: Refaults::from_counters(&totals),
        psi: None,
        anon_bytes: totals.get("rss").copied(),
        inactive_file_bytes: totals.get("inactive_file").copied(),
    }
}

/// One memory cgroup, limited or not: `dir` is its directory under `root` as a user names it
/// (`/sys/fs/cgroup/memory/app`). An error where it is no memory cgroup.
pub fn read_cgroup(root: &Path, dir: &str) -> Result<CgroupPressure, KernelError> {
    let full = root.join(dir.trim_start_matches('/'));
    if full.join("memory.current").is_file() {
        Ok(v2_read(root, &full))
    } else if full.join("memory.usage_in_bytes").is_file() {
        Ok(v1_read(root, &full))
    } else {
        Err(KernelError::Invalid(format!(
            "{dir} is no memory cgroup (neither memory.current nor memory.usage_in_bytes)"
        )))
    }
}

/// What changed between two readings `seconds` apart: the share of the window stalled on
/// memory (from PSI totals), and refaults and swap traffic per second.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Window {
    pub seconds: f64,
    /// Percent of the window some task stalled on memory (`None` without PSI).
    pub psi_some_percent: Option<f64>,
    pub psi_full_percent: Option<f64>,
    pub refaults_anon_per_sec: f64,
    pub refaults_file_per_sec: f64,
    pub pswpin_per_sec: f64,
    pub pswpout_per_sec: f64,
}

impl Pressure {
    /// The window from `before` to `self`; counters that went backwards count 0.
    pub fn since(&self, before: &Pressure, seconds: f64) -> Window {
        let per_sec =
            |a: u64, b: u64| if seconds > 0.0 { a.saturating_sub(b) as f64 / seconds } else { 0.0 };
        let stalled = |a: Option<PsiLine>, b: Option<PsiLine>| {
            let (a, b) = (a?, b?);
            (seconds > 0.0).then(|| a.total_us.saturating_sub(b.total_us) as f64 / (seconds * 1e4))
        };
        let (now, then) = (self.psi, before.psi);
        Window {
            seconds,
            psi_some_percent: stalled(now.map(|p| p.some), then.map(|p| p.some)),
            psi_full_percent: stalled(now.and_then(|p| p.full), then.and_then(|p| p.full)),
            refaults_anon_per_sec: per_sec(self.refaults.anon, before.refaults.anon),
            refaults_file_per_sec: per_sec(self.refaults.file, before.refaults.file),
            pswpin_per_sec: per_sec(self.swap.pswpin, before.swap.pswpin),
            pswpout_per_sec: per_sec(self.swap.pswpout, before.swap.pswpout),
        }
    }
}

pub mod wmarks;

#[cfg(test)]
mod tests;

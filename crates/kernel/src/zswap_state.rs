//! zswap's live state ("Now"), read only: its module parameters, its debugfs counters
//! (`/sys/kernel/debug/zswap`), `Zswap`/`Zswapped` from `/proc/meminfo`, the swap counters of
//! `/proc/vmstat`, and each memory cgroup's zswap usage and limits. Derived: the compression ratio
//! and per-second rates between two snapshots.
//!
//! [`params_at`] and [`debugfs_counters_at`] are the one reader of zswap's parameters and of its
//! debugfs counters (caps, status and validation call them); meminfo and vmstat come from
//! `stat`'s readers.
//!
//! Not for: learning what the kernel could do (see `caps`), or changing zswap. The one side
//! effect is opt-in: `read_opts(true)` mounts debugfs when it is not mounted. Whatever cannot be
//! read becomes a note (`notes`, `debugfs_note`), never a panic. Parsers are pure functions over
//! the files' text; `read_at` reads `sys/` and `proc/` under a root so tests can use fake trees.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::KernelError;
use crate::error::read_text;

/// The `/proc/vmstat` counters kept (pages, since boot): zswap's and the swap devices'
/// traffic, and the swap read-ahead (`swap_ra`: pages read ahead; `swap_ra_hit`: of those,
/// pages then asked for), which the page-cluster advice is judged with.
pub const VMSTAT_KEYS: [&str; 7] =
    ["zswpin", "zswpout", "zswpwb", "pswpin", "pswpout", "swap_ra", "swap_ra_hit"];

/// Page size assumed when `/proc/self/auxv` cannot tell (noted in `notes`).
const FALLBACK_PAGE_SIZE: u64 = 4096;

/// One snapshot of zswap's state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ZswapState {
    /// `/sys/module/zswap/parameters/*`, file name -> trimmed contents (empty when zswap absent).
    pub params: BTreeMap<String, String>,
    /// `enabled` is `Y`.
    pub enabled: bool,
    /// The four module parameters, serialised as four fields of this object: `compressor`
    /// (empty when unknown), `max_pool_percent` and `accept_threshold_percent` (0 when
    /// unknown), `shrinker_enabled` (`Y`).
    #[serde(flatten)]
    pub module: zmem_zswap::ZswapParams,
    /// `/sys/kernel/debug/zswap/*` counters, name -> value; `None` when not readable (see
    /// `debugfs_note`).
    pub debugfs: Option<BTreeMap<String, u64>>,
    /// Why `debugfs` is `None`, or what was odd while reading it.
    pub debugfs_note: Option<String>,
    /// `/proc/meminfo` `Zswap` (the pool's compressed bytes), kB converted to bytes.
    pub meminfo_zswap_bytes: Option<u64>,
    /// `/proc/meminfo` `Zswapped` (the original bytes stored), kB converted to bytes.
    pub meminfo_zswapped_bytes: Option<u64>,
    /// `/proc/vmstat` keys of `VMSTAT_KEYS` that exist, in pages.
    pub vmstat: BTreeMap<String, u64>,
    /// Memory cgroups with zswap accounting (cgroup v2 only: v1's `memory.stat` has none).
    pub cgroups: Vec<ZswapCgroup>,
    /// The page size used for `ratio()` (from `/proc/self/auxv` `AT_PAGESZ`, else 4096).
    pub page_size: u64,
    /// One sentence per thing that could not be read or was assumed.
    pub notes: Vec<String>,
}

/// One memory cgroup's zswap usage and limits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZswapCgroup {
    /// The cgroup's directory as seen from the root, e.g. `/sys/fs/cgroup/unified/user.slice`.
    pub path: String,
    /// `memory.stat` `zswap`: compressed bytes this cgroup holds in zswap.
    pub zswap_bytes: Option<u64>,
    /// `memory.stat` `zswapped`: original bytes of the pages stored.
    pub zswapped_bytes: Option<u64>,
    /// `memory.zswap.max`, as written (`max` or a byte count).
    pub zswap_max: Option<String>,
    /// `memory.zswap.writeback` (`1` -> true).
    pub zswap_writeback: Option<bool>,
}

/// Per-second rates between two snapshots, in pages per second. `None` when the counter is
/// missing from either snapshot or the interval is not positive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ZswapRates {
    /// Pages loaded back from zswap.
    pub zswpin_per_sec: Option<f64>,
    /// Pages stored into zswap.
    pub zswpout_per_sec: Option<f64>,
    /// Pages written back from zswap to the swap device.
    pub zswpwb_per_sec: Option<f64>,
    /// Pages read from swap devices.
    pub pswpin_per_sec: Option<f64>,
    /// Pages written to swap devices.
    pub pswpout_per_sec: Option<f64>,
}

impl ZswapState {
    /// Original bytes over compressed bytes: debugfs `stored_pages` × page size /
    /// `pool_total_size` when both are there and the pool is not empty, else meminfo
    /// `Zswapped` / `Zswap`. `None` when neither gives a non-empty pool.
    ///
    /// `pool_total_size` counts the allocator's pages, so this includes zsmalloc's overhead
    /// (`zswap.c: zswap_total_pages`), as the kernel's own `Zswapped/Zswap` does.
    pub fn ratio(&self) -> Option<f64> {
        if let Some(d) = &self.debugfs
            && let (Some(&stored), Some(&pool)) = (d.get("stored_pages"), d.get("pool_total_size"))
            && pool > 0
        {
            return Some(stored as f64 * self.page_size as f64 / pool as f64);
        }
        match (self.meminfo_zswapped_bytes, self.meminfo_zswap_bytes) {
            (Some(orig), Some(pool)) if pool > 0 => Some(orig as f64 / pool as f64),
            _ => None,
        }
    }
}

/// Rates of the `/proc/vmstat` counters between `before` and `after`, `secs` apart. A counter
/// that went backwards (it cannot, short of a reboot between the snapshots) gives `None`.
pub fn rates(before: &ZswapState, after: &ZswapState, secs: f64) -> ZswapRates {
    let rate = |key: &str| -> Option<f64> {
        if !(secs.is_finite() && secs > 0.0) {
            return None;
        }
        let b = *before.vmstat.get(key)?;
        let a = *after.vmstat.get(key)?;
        a.checked_sub(b).map(|d| d as f64 / secs)
    };
    ZswapRates {
        zswpin_per_sec: rate("zswpin"),
        zswpout_per_sec: rate("zswpout"),
        zswpwb_per_sec: rate("zswpwb"),
        pswpin_per_sec: rate("pswpin"),
        pswpout_per_sec: rate("pswpout"),
    }
}

/// `name value` lines (a cgroup's `memory.stat`) as a map; lines that are not exactly a
/// name and an unsigned number are skipped.
pub fn parse_key_values(text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        if let (Some(k), Some(v), None) = (parts.next(), parts.next(), parts.next())
            && let Ok(v) = v.parse::<u64>()
        {
            out.insert(k.to_string(), v);
        }
    }
    out
}

/// zswap's module parameters as read: file name -> trimmed contents, and the files that could
/// not be read.
#[derive(Debug, Default)]
pub struct ZswapParams {
    pub values: BTreeMap<String, String>,
    pub unreadable: Vec<(String, KernelError)>,
}

/// `module/zswap/parameters/*` under `sys` (`/sys`, or a test's fake root): the one reader of
/// zswap's parameters, for caps, status, zswap_state and the exporter. `Err` (`Io`, `ENOENT`
/// when this kernel has no zswap) when the directory cannot be listed.
pub fn params_at(sys: &Path) -> Result<ZswapParams, KernelError> {
    params_in(&sys.join("module/zswap/parameters"))
}

/// [`params_at`] of the parameters' directory itself (`/sys/module/zswap/parameters`, or the
/// directory a test's fake kernel writes them in).
pub fn params_in(dir: &Path) -> Result<ZswapParams, KernelError> {
    let rd = fs::read_dir(dir).map_err(|e| KernelError::io(dir, e))?;
    let mut out = ZswapParams::default();
    for entry in rd.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        match read_text(&entry.path()) {
            Ok(v) => {
                out.values.insert(name, v.trim().to_string());
            }
            Err(e) => out.unreadable.push((name, e)),
        }
    }
    Ok(out)
}

/// zswap's debugfs counters as read: name -> value, and the files that could not be read
/// (`Io`) or were not a number (`Parse`).
#[derive(Debug, Default)]
pub struct DebugfsCounters {
    pub values: BTreeMap<String, u64>,
    pub odd: Vec<(String, KernelError)>,
}

/// `zswap/*` under `debug` (the debugfs mount, `/sys/kernel/debug`): the one reader of zswap's
/// debugfs counters (zswap.c `zswap_debugfs_init`: one number per file), for status and
/// zswap_state. `Err` (`Io`) when the directory cannot be listed: debugfs not mounted, not
/// root, or no zswap.
pub fn debugfs_counters_at(debug: &Path) -> Result<DebugfsCounters, KernelError> {
    let dir = debug.join("zswap");
    let rd = fs::read_dir(&dir).map_err(|e| KernelError::io(&dir, e))?;
    let mut out = DebugfsCounters::default();
    for entry in rd.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        match read_text(&path) {
            Ok(t) => match t.trim().parse::<u64>() {
                Ok(v) => {
                    out.values.insert(name, v);
                }
                Err(_) => out.odd.push((
                    name,
                    KernelError::parse(&path, format!("is not a number ({:?})", t.trim())),
                )),
            },
            Err(e) => out.odd.push((name, e)),
        }
    }
    Ok(out)
}

/// A boolean module parameter as the kernel prints it (`param_get_bool`: `Y`/`N`); `1`/`0`
/// accepted too. Anything else is `None`.
pub fn parse_bool_param(text: &str) -> Option<bool> {
    match text.trim() {
        "Y" | "y" | "1" => Some(true),
        "N" | "n" | "0" => Some(false),
        _ => None,
    }
}

/// Whether `/proc/self/mounts` (or `/proc/mounts`) has a `debugfs` mount at `mountpoint`.
pub fn debugfs_mounted(mounts: &str, mountpoint: &str) -> bool {
    mounts.lines().any(|line| {
        let mut f = line.split_whitespace();
        let _dev = f.next();
        let (Some(dir), Some(fstype)) = (f.next(), f.next()) else {
            return false;
        };
        fstype == "debugfs" && dir == mountpoint
    })
}

/// `AT_PAGESZ` from `/proc/self/auxv`: native-endian (type, value) pairs of machine words,
/// ended by `AT_NULL`. `None` when absent or the data is short.
pub fn parse_auxv_page_size(auxv: &[u8]) -> Option<u64> {
    const AT_NULL: u64 = 0;
    const AT_PAGESZ: u64 = 6;
    let word = std::mem::size_of::<usize>();
    let read = |chunk: &[u8]| -> Option<u64> {
        Some(match word {
            8 => u64::from_ne_bytes(chunk.try_into().ok()?),
            4 => u64::from(u32::from_ne_bytes(chunk.try_into().ok()?)),
            _ => return None,
        })
    };
    for pair in auxv.chunks_exact(2 * word) {
        let key = read(&pair[..word])?;
        let value = read(&pair[word..])?;
        match key {
            AT_NULL => return None,
            AT_PAGESZ if value > 0 => return Some(value),
            _ => {}
        }
    }
    None
}

/// Whether debugfs is mounted at `/sys/kernel/debug`, from `self/mounts` under `proc` (`/proc`,
/// or a test's fake root): the one reader of that fact.
pub fn debugfs_mounted_at(proc: &Path) -> Result<bool, KernelError> {
    Ok(debugfs_mounted(&read_text(&proc.join("self/mounts"))?, "/sys/kernel/debug"))
}

/// Runs `f` with debugfs mounted at `/sys/kernel/debug`: when it is not mounted, mounts it
/// first and unmounts it after (what was mounted stays as it was). The notes say what was done
/// or why it failed. Only callers given the user's explicit `--mount-debugfs` call this.
pub fn with_debugfs_mounted<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
    const DEBUGFS: &str = "/sys/kernel/debug";
    if debugfs_mounted_at(Path::new("/proc")).unwrap_or(true) {
        return (f(), Vec::new());
    }
    let mut notes = Vec::new();
    let result =
        std::process::Command::new("mount").args(["-t", "debugfs", "none", DEBUGFS]).output();
    let ours = match result {
        Ok(o) if o.status.success() => true,
        Ok(o) => {
            notes.push(format!(
                "mounting debugfs at {DEBUGFS} failed ({}): {}",
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            ));
            false
        }
        Err(e) => {
            notes.push(format!("mounting debugfs failed: could not run mount ({e})"));
            false
        }
    };
    let out = f();
    if ours {
        let undone =
            std::process::Command::new("umount").arg(DEBUGFS).status().is_ok_and(|s| s.success());
        notes.push(if undone {
            format!("debugfs was mounted at {DEBUGFS} for this read (--mount-debugfs) and unmounted again")
        } else {
            format!("debugfs was mounted at {DEBUGFS} for this read (--mount-debugfs); unmounting it failed")
        });
    }
    (out, notes)
}

/// Reads the live system without mounting anything.
pub fn read() -> ZswapState {
    read_opts(false)
}

/// Reads the live system; with `mount_debugfs`, first mounts debugfs at `/sys/kernel/debug`
/// (`mount -t debugfs none /sys/kernel/debug`) when it is not mounted, and says so in `notes`.
pub fn read_opts(mount_debugfs: bool) -> ZswapState {
    let root = Path::new("/");
    let mut pre_notes = Vec::new();
    if mount_debugfs && !debugfs_mounted_at(Path::new("/proc")).unwrap_or(false) {
        let result = std::process::Command::new("mount")
            .args(["-t", "debugfs", "none", "/sys/kernel/debug"])
            .output();
        pre_notes.push(match result {
            Ok(o) if o.status.success() => {
                "mounted debugfs at /sys/kernel/debug (mount_debugfs was given)".to_string()
            }
            Ok(o) => format!(
                "mounting debugfs at /sys/kernel/debug failed ({}): {}",
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => format!("mounting debugfs failed: could not run mount ({e})"),
        });
    }
    let mut state = read_at(root);
    pre_notes.append(&mut state.notes);
    state.notes = pre_notes;
    state
}

/// Reads `sys/` and `proc/` under `root` (`/` for the live system). Never mounts anything.
pub fn read_at(root: &Path) -> ZswapState {
    let mut notes = Vec::new();

    let params = read_params(root, &mut notes);
    let flag = |name: &str, notes: &mut Vec<String>| -> bool {
        match params.get(name).map(|v| parse_bool_param(v)) {
            Some(Some(b)) => b,
            Some(None) => {
                notes.push(format!("parameter {name} is not Y/N: {:?}", params[name]));
                false
            }
            None => false,
        }
    };
    let number = |name: &str, notes: &mut Vec<String>| -> u32 {
        match params.get(name).map(|v| v.parse::<u32>()) {
            Some(Ok(n)) => n,
            Some(Err(_)) => {
                notes.push(format!("parameter {name} is not a number: {:?}", params[name]));
                0
            }
            None => 0,
        }
    };
    let enabled = flag("enabled", &mut notes);
    let shrinker_enabled = flag("shrinker_enabled", &mut notes);
    let module = zmem_zswap::ZswapParams {
        max_pool_percent: number("max_pool_percent", &mut notes),
        accept_threshold_percent: number("accept_threshold_percent", &mut notes),
        compressor: params.get("compressor").cloned().unwrap_or_default(),
        shrinker_enabled,
    };
    if !params.is_empty() {
        for name in [
            "enabled",
            "compressor",
            "max_pool_percent",
            "accept_threshold_percent",
            "shrinker_enabled",
        ] {
            if !params.contains_key(name) {
                notes.push(format!("parameter {name} missing from /sys/module/zswap/parameters"));
            }
        }
    }

    let (debugfs, debugfs_note) = read_debugfs(root);

    let proc = root.join("proc");
    let (meminfo_zswap_bytes, meminfo_zswapped_bytes) = match crate::stat::meminfo_at(&proc) {
        Ok(m) => {
            let (z, zd) = (m.get("Zswap").copied(), m.get("Zswapped").copied());
            if z.is_none() || zd.is_none() {
                notes.push(
                    "/proc/meminfo has no Zswap/Zswapped line (kernel without CONFIG_ZSWAP)"
                        .to_string(),
                );
            }
            (z, zd)
        }
        Err(e) => {
            notes.push(format!("/proc/meminfo unreadable: {}", e.reason()));
            (None, None)
        }
    };

    let vmstat = match crate::stat::vmstat_at(&proc) {
        Ok(mut v) => {
            v.retain(|k, _| VMSTAT_KEYS.contains(&k.as_str()));
            let missing: Vec<&str> =
                VMSTAT_KEYS.iter().copied().filter(|k| !v.contains_key(*k)).collect();
            if !missing.is_empty() {
                notes.push(format!("/proc/vmstat lacks {}", missing.join(", ")));
            }
            v
        }
        Err(e) => {
            notes.push(format!("/proc/vmstat unreadable: {}", e.reason()));
            BTreeMap::new()
        }
    };

    let cgroups = read_cgroups(root, &mut notes);

    let page_size =
        match fs::read(root.join("proc/self/auxv")).ok().and_then(|b| parse_auxv_page_size(&b)) {
            Some(p) => p,
            None => {
                notes.push(format!(
                    "page size from /proc/self/auxv unavailable; assumed {FALLBACK_PAGE_SIZE}"
                ));
                FALLBACK_PAGE_SIZE
            }
        };

    ZswapState {
        params,
        enabled,
        module,
        debugfs,
        debugfs_note,
        meminfo_zswap_bytes,
        meminfo_zswapped_bytes,
        vmstat,
        cgroups,
        page_size,
        notes,
    }
}

fn read_params(root: &Path, notes: &mut Vec<String>) -> BTreeMap<String, String> {
    match params_at(&root.join("sys")) {
        Ok(p) => {
            for (name, e) in p.unreadable {
                notes.push(format!("parameter {name} unreadable: {}", e.reason()));
            }
            p.values
        }
        Err(e) if e.is_not_found() => {
            notes.push(
                "no /sys/module/zswap/parameters: this kernel has no zswap (CONFIG_ZSWAP off)"
                    .to_string(),
            );
            BTreeMap::new()
        }
        Err(e) => {
            notes.push(format!("/sys/module/zswap/parameters unreadable: {}", e.reason()));
            BTreeMap::new()
        }
    }
}

/// The debugfs counters, or why there are none.
fn read_debugfs(root: &Path) -> (Option<BTreeMap<String, u64>>, Option<String>) {
    match debugfs_counters_at(&root.join("sys/kernel/debug")) {
        Ok(c) => {
            let odd: Vec<String> = c
                .odd
                .iter()
                .map(|(name, e)| match e {
                    KernelError::Parse { what, .. } => format!("{name} {what}"),
                    e => format!("{name} unreadable ({})", e.reason()),
                })
                .collect();
            let note =
                (!odd.is_empty()).then(|| format!("/sys/kernel/debug/zswap: {}", odd.join(", ")));
            (Some(c.values), note)
        }
        Err(KernelError::Io { error: e, .. }) if e.kind() == io::ErrorKind::PermissionDenied => {
            (None, Some(format!("/sys/kernel/debug/zswap unreadable: {e} (debugfs is root-only)")))
        }
        Err(e) => {
            let e = e.reason();
            let why = match debugfs_mounted_at(&root.join("proc")) {
                Ok(false) => "zswap's debugfs counters are not readable: debugfs is not mounted \
                              at /sys/kernel/debug (zmem mounts nothing unless asked: \
                              `--mount-debugfs`, as root, mounts it for the read and unmounts it)"
                    .to_string(),
                Ok(true) => format!(
                    "debugfs is mounted but /sys/kernel/debug/zswap is not there ({e}): zswap \
                     not built, or not initialised"
                ),
                Err(_) => format!(
                    "/sys/kernel/debug/zswap not readable ({e}) and /proc/self/mounts unreadable"
                ),
            };
            (None, Some(why))
        }
    }
}

/// Memory cgroups with zswap accounting, from the v2 hierarchy (at `sys/fs/cgroup` or
/// `sys/fs/cgroup/unified`) and, for a note only, the v1 memory hierarchy.
fn read_cgroups(root: &Path, notes: &mut Vec<String>) -> Vec<ZswapCgroup> {
    use crate::cgroups::{self, V2Root};
    let mut out = Vec::new();
    let found = cgroups::v2_roots(root);
    for v2 in &found {
        match v2 {
            V2Root::NoMemory { rel, controllers } => notes.push(format!(
                "cgroup v2 at /{rel} has no memory controller (controllers: {controllers})"
            )),
            V2Root::Memory(dir) => {
                let capped = cgroups::walk(dir, &mut |d| {
                    let stat = fs::read_to_string(d.join("memory.stat"))
                        .map(|t| parse_key_values(&t))
                        .unwrap_or_default();
                    let entry = cgroup_entry(root, d, &stat);
                    if entry.zswap_bytes.is_some()
                        || entry.zswapped_bytes.is_some()
                        || entry.zswap_max.is_some()
                        || entry.zswap_writeback.is_some()
                    {
                        out.push(entry);
                    }
                });
                if capped {
                    notes.push(cgroups::stopped(root, dir));
                }
            }
        }
    }
    if found.is_empty() {
        notes.push("no cgroup v2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified".into());
    }
    // v1's memory.stat has no zswap keys (`memcontrol-v1.c: memcg1_stat_format` lists none);
    // check the root's file rather than assume, and walk no further when it has none.
    let v1 = root.join(cgroups::V1_MEMORY);
    if let Ok(stat) = fs::read_to_string(v1.join("memory.stat")) {
        let stat = parse_key_values(&stat);
        if stat.contains_key("zswap") || stat.contains_key("zswapped") {
            out.push(cgroup_entry(root, &v1, &stat));
        } else {
            notes.push(
                "cgroup v1 memory at /sys/fs/cgroup/memory: memory.stat has no zswap keys (the \
                 kernel accounts zswap per cgroup in v2 only)"
                    .to_string(),
            );
        }
    }
    out
}

fn cgroup_entry(root: &Path, dir: &Path, stat: &BTreeMap<String, u64>) -> ZswapCgroup {
    let read_trim =
        |name: &str| fs::read_to_string(dir.join(name)).ok().map(|t| t.trim().to_string());
    ZswapCgroup {
        path: crate::cgroups::shown(root, dir),
        zswap_bytes: stat.get("zswap").copied(),
        zswapped_bytes: stat.get("zswapped").copied(),
        zswap_max: read_trim("memory.zswap.max"),
        zswap_writeback: read_trim("memory.zswap.writeback").and_then(|t| match t.as_str() {
            "1" => Some(true),
            "0" => Some(false),
            _ => None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // This project's machine's files (6.18.44, zswap built in and off, cgroup v1 memory).
    const MEMINFO: &str = include_str!("zswap_state_fixtures/meminfo.txt");
    const VMSTAT: &str = include_str!("zswap_state_fixtures/vmstat.txt");
    const V1_MEMORY_STAT: &str = include_str!("zswap_state_fixtures/v1_memory.stat");
    const MOUNTS: &str = include_str!("zswap_state_fixtures/mounts.txt");

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// The project's machine as fake tree: params, meminfo, vmstat, v1 memory, v2 without
    /// memory, debugfs not mounted.
    fn machine_tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        for (k, v) in [
            ("accept_threshold_percent", "90"),
            ("compressor", "lzo"),
            ("enabled", "N"),
            ("max_pool_percent", "20"),
            ("shrinker_enabled", "N"),
        ] {
            write(r, &format!("sys/module/zswap/parameters/{k}"), &format!("{v}\n"));
        }
        write(r, "proc/meminfo", MEMINFO);
        write(r, "proc/vmstat", VMSTAT);
        write(r, "proc/self/mounts", MOUNTS);
        write(r, "sys/fs/cgroup/memory/memory.stat", V1_MEMORY_STAT);
        write(r, "sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n");
        fs::create_dir_all(r.join("sys/kernel/debug")).unwrap();
        dir
    }

    #[test]
    fn meminfo_and_vmstat_come_from_the_one_reader() {
        let dir = machine_tree();
        let r = dir.path();
        write(r, "proc/meminfo", "MemTotal: 100 kB\nZswap:   162328 kB\nZswapped:  754468 kB\n");
        let s = read_at(r);
        assert_eq!(s.meminfo_zswap_bytes, Some(162328 * 1024));
        assert_eq!(s.meminfo_zswapped_bytes, Some(754468 * 1024));
        assert_eq!(
            s.vmstat.keys().map(String::as_str).collect::<Vec<_>>(),
            ["pswpin", "pswpout", "swap_ra", "swap_ra_hit", "zswpin", "zswpout", "zswpwb"]
        );
        // A garbled file is unreadable as a whole, and the note says what was wrong.
        write(r, "proc/meminfo", "Zswap: x kB\n");
        write(r, "proc/vmstat", "zswpin 5\nzswpout 7 extra\n");
        let s = read_at(r);
        assert_eq!((s.meminfo_zswap_bytes, s.meminfo_zswapped_bytes), (None, None));
        assert!(s.vmstat.is_empty());
        let notes = s.notes.join("\n");
        assert!(notes.contains("/proc/meminfo unreadable: \"Zswap: x kB\""), "{notes}");
        assert!(notes.contains("/proc/vmstat unreadable: line 2: \"zswpout 7 extra\""), "{notes}");
    }

    #[test]
    fn params_and_debugfs_readers_name_what_failed() {
        let dir = machine_tree();
        let r = dir.path();
        let p = params_at(&r.join("sys")).unwrap();
        assert_eq!(p.values.len(), 5);
        assert!(p.unreadable.is_empty());
        // No debugfs zswap directory: an Io error naming it.
        match debugfs_counters_at(&r.join("sys/kernel/debug")).unwrap_err() {
            KernelError::Io { path, error } => {
                assert_eq!(path, r.join("sys/kernel/debug/zswap"));
                assert_eq!(error.kind(), io::ErrorKind::NotFound);
            }
            e => panic!("{e:?}"),
        }
        write(r, "sys/kernel/debug/zswap/stored_pages", "12\n");
        write(r, "sys/kernel/debug/zswap/pool_total_size", "lots\n");
        let c = debugfs_counters_at(&r.join("sys/kernel/debug")).unwrap();
        assert_eq!(c.values.get("stored_pages"), Some(&12));
        let [(name, KernelError::Parse { path, .. })] = &c.odd[..] else { panic!("{:?}", c.odd) };
        assert_eq!(
            (name.as_str(), path),
            ("pool_total_size", &r.join("sys/kernel/debug/zswap/pool_total_size"))
        );
        // No zswap: the parameters' directory is missing, ENOENT.
        let empty = tempfile::tempdir().unwrap();
        assert!(params_at(&empty.path().join("sys")).unwrap_err().is_not_found());
    }

    #[test]
    fn bool_params() {
        assert_eq!(parse_bool_param("Y\n"), Some(true));
        assert_eq!(parse_bool_param("N"), Some(false));
        assert_eq!(parse_bool_param("maybe"), None);
    }

    #[test]
    fn mounts_detect_debugfs() {
        assert!(!debugfs_mounted(MOUNTS, "/sys/kernel/debug"));
        let m = format!("{MOUNTS}debugfs /sys/kernel/debug debugfs rw,relatime 0 0\n");
        assert!(debugfs_mounted(&m, "/sys/kernel/debug"));
        assert!(!debugfs_mounted("debugfs /mnt/dbg debugfs rw 0 0", "/sys/kernel/debug"));
        assert!(!debugfs_mounted("garbage\n\n", "/sys/kernel/debug"));
    }

    #[test]
    fn auxv_page_size() {
        let w = std::mem::size_of::<usize>();
        let mut b = Vec::new();
        for (k, v) in [(33usize, 0xdead_usize), (6, 16384), (0, 0)] {
            b.extend_from_slice(&k.to_ne_bytes());
            b.extend_from_slice(&v.to_ne_bytes());
        }
        assert_eq!(parse_auxv_page_size(&b), Some(16384));
        assert_eq!(parse_auxv_page_size(&b[..2 * w]), None);
        assert_eq!(parse_auxv_page_size(&[1, 2, 3]), None);
    }

    #[test]
    fn machine_tree_reads_params_and_explains_gaps() {
        let dir = machine_tree();
        let s = read_at(dir.path());
        assert!(!s.enabled);
        assert_eq!(s.module.compressor, "lzo");
        assert_eq!(s.module.max_pool_percent, 20);
        assert_eq!(s.module.accept_threshold_percent, 90);
        assert!(!s.module.shrinker_enabled);
        assert_eq!(s.params.len(), 5);
        assert_eq!(s.debugfs, None);
        assert_eq!(
            s.debugfs_note.as_deref(),
            Some(
                "zswap's debugfs counters are not readable: debugfs is not mounted at \
                 /sys/kernel/debug (zmem mounts nothing unless asked: `--mount-debugfs`, as root, \
                 mounts it for the read and unmounts it)"
            )
        );
        assert_eq!(s.meminfo_zswap_bytes, Some(0));
        assert_eq!(s.vmstat.len(), 7);
        assert!(s.cgroups.is_empty());
        let notes = s.notes.join("\n");
        assert!(notes.contains("memory.stat has no zswap keys"), "{notes}");
        assert!(notes.contains("/sys/fs/cgroup/unified has no memory controller"), "{notes}");
        assert_eq!(s.page_size, FALLBACK_PAGE_SIZE);
        // An empty pool has no ratio.
        assert_eq!(s.ratio(), None);
    }

    #[test]
    fn debugfs_counters_and_ratio() {
        let dir = machine_tree();
        let r = dir.path();
        let counters = [
            ("pool_limit_hit", "0"),
            ("reject_reclaim_fail", "1"),
            ("reject_alloc_fail", "0"),
            ("reject_kmemcache_fail", "0"),
            ("reject_compress_fail", "0"),
            ("reject_compress_poor", "3"),
            ("decompress_fail", "0"),
            ("written_back_pages", "12"),
            ("pool_total_size", "1048576"),
            ("stored_pages", "1024"),
            ("stored_incompressible_pages", "2"),
        ];
        for (k, v) in counters {
            write(r, &format!("sys/kernel/debug/zswap/{k}"), &format!("{v}\n"));
        }
        write(r, "sys/kernel/debug/zswap/odd", "abc\n");
        write(r, "proc/meminfo", "Zswap: 2048 kB\nZswapped: 4096 kB\n");
        let s = read_at(r);
        let d = s.debugfs.as_ref().unwrap();
        assert_eq!(d.len(), counters.len());
        assert_eq!(d["written_back_pages"], 12);
        assert_eq!(d["stored_incompressible_pages"], 2);
        assert!(s.debugfs_note.as_deref().unwrap().contains("odd is not a number"));
        // debugfs wins: 1024 pages × 4096 / 1 MiB = 4.0 (meminfo would say 2.0).
        assert_eq!(s.ratio(), Some(4.0));
        let mut s2 = s.clone();
        s2.debugfs = None;
        assert_eq!(s2.ratio(), Some(2.0));
        let mut s3 = s.clone();
        s3.page_size = 16384;
        assert_eq!(s3.ratio(), Some(16.0));
    }

    #[test]
    fn debugfs_mounted_without_zswap() {
        let dir = machine_tree();
        let r = dir.path();
        write(
            r,
            "proc/self/mounts",
            &format!("{MOUNTS}debugfs /sys/kernel/debug debugfs rw,relatime 0 0\n"),
        );
        let s = read_at(r);
        assert!(s.debugfs.is_none());
        assert!(s.debugfs_note.unwrap().contains("debugfs is mounted but"));
    }

    #[test]
    fn v2_cgroups_with_zswap() {
        let dir = machine_tree();
        let r = dir.path();
        let v2 = "sys/fs/cgroup/unified";
        write(r, &format!("{v2}/cgroup.controllers"), "cpu io memory pids\n");
        write(r, &format!("{v2}/memory.stat"), "anon 100\nzswap 8192\nzswapped 32768\n");
        write(
            r,
            &format!("{v2}/app.slice/memory.stat"),
            "anon 5\nzswap 4096\nzswapped 16384\nzswpin 3\n",
        );
        write(r, &format!("{v2}/app.slice/memory.zswap.max"), "max\n");
        write(r, &format!("{v2}/app.slice/memory.zswap.writeback"), "0\n");
        // A cgroup without the memory controller enabled: no memory files, left out.
        fs::create_dir_all(r.join(format!("{v2}/app.slice/nomem"))).unwrap();
        let s = read_at(r);
        assert_eq!(
            s.cgroups,
            vec![
                ZswapCgroup {
                    path: "/sys/fs/cgroup/unified".into(),
                    zswap_bytes: Some(8192),
                    zswapped_bytes: Some(32768),
                    zswap_max: None,
                    zswap_writeback: None,
                },
                ZswapCgroup {
                    path: "/sys/fs/cgroup/unified/app.slice".into(),
                    zswap_bytes: Some(4096),
                    zswapped_bytes: Some(16384),
                    zswap_max: Some("max".into()),
                    zswap_writeback: Some(false),
                },
            ]
        );
    }

    #[test]
    fn rates_between_snapshots() {
        let dir = machine_tree();
        let before = read_at(dir.path());
        let mut after = before.clone();
        after.vmstat.insert("zswpout".into(), before.vmstat["zswpout"] + 300);
        after.vmstat.insert("pswpout".into(), before.vmstat["pswpout"] + 30);
        after.vmstat.remove("zswpwb");
        let r = rates(&before, &after, 2.0);
        assert_eq!(r.zswpout_per_sec, Some(150.0));
        assert_eq!(r.pswpout_per_sec, Some(15.0));
        assert_eq!(r.zswpin_per_sec, Some(0.0));
        assert_eq!(r.zswpwb_per_sec, None);
        // Backwards counters and a bad interval give no rate.
        assert_eq!(rates(&after, &before, 2.0).zswpout_per_sec, None);
        assert_eq!(rates(&before, &after, 0.0).zswpout_per_sec, None);
        assert_eq!(rates(&before, &after, f64::NAN).zswpout_per_sec, None);
    }

    #[test]
    fn zswap_absent_and_empty_root() {
        let dir = tempfile::tempdir().unwrap();
        let s = read_at(dir.path());
        assert!(s.params.is_empty() && !s.enabled && s.module.compressor.is_empty());
        assert!(s.notes.iter().any(|n| n.contains("CONFIG_ZSWAP off")));
        assert!(s.notes.iter().any(|n| n.contains("/proc/meminfo unreadable")));
        assert!(s.debugfs.is_none() && s.debugfs_note.is_some());
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<ZswapState>(&json).unwrap(), s);
    }

    #[test]
    fn odd_param_values_become_notes() {
        let dir = machine_tree();
        let r = dir.path();
        write(r, "sys/module/zswap/parameters/enabled", "perhaps\n");
        write(r, "sys/module/zswap/parameters/max_pool_percent", "-3\n");
        fs::remove_file(r.join("sys/module/zswap/parameters/compressor")).unwrap();
        let s = read_at(r);
        assert!(!s.enabled);
        assert_eq!(s.module.max_pool_percent, 0);
        let notes = s.notes.join("\n");
        assert!(notes.contains("enabled is not Y/N"), "{notes}");
        assert!(notes.contains("max_pool_percent is not a number"), "{notes}");
        assert!(notes.contains("compressor missing"), "{notes}");
    }

    /// The live kernel: parameters, meminfo and vmstat must match the files read here directly.
    #[test]
    #[ignore = "live: needs zswap (scripts/test runs it)"]
    fn live_read_matches_files() {
        let params = Path::new("/sys/module/zswap/parameters");
        let why = (!params.exists())
            .then(|| "/sys/module/zswap is missing (no zswap in this kernel)".to_string());
        // The live lock: the zswap test changes these parameters while it runs.
        let Some(_live) = zmem_testkit::live(why) else { return };
        let s = read();
        println!("{s:#?}");
        let raw = |n: &str| fs::read_to_string(params.join(n)).unwrap().trim().to_string();
        assert_eq!(s.module.compressor, raw("compressor"));
        assert_eq!(s.enabled, raw("enabled") == "Y");
        assert_eq!(s.module.max_pool_percent.to_string(), raw("max_pool_percent"));
        assert_eq!(s.module.accept_threshold_percent.to_string(), raw("accept_threshold_percent"));
        let page = std::process::Command::new("getconf")
            .arg("PAGESIZE")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|t| t.trim().parse::<u64>().ok());
        if let Some(p) = page {
            assert_eq!(s.page_size, p);
        }
        // vmstat's swap counters only grow: the snapshot lies between two direct reads.
        let vm: BTreeMap<String, u64> = fs::read_to_string("/proc/vmstat")
            .unwrap()
            .lines()
            .filter_map(|l| {
                let (k, v) = l.split_once(' ')?;
                Some((k.to_string(), v.parse().ok()?))
            })
            .collect();
        for k in VMSTAT_KEYS {
            if let Some(v) = vm.get(k) {
                assert!(s.vmstat[k] <= *v, "{k}");
            }
        }
        let mounted =
            debugfs_mounted(&fs::read_to_string("/proc/self/mounts").unwrap(), "/sys/kernel/debug");
        assert_eq!(s.debugfs.is_some(), mounted && Path::new("/sys/kernel/debug/zswap").exists());
        if s.debugfs.is_none() {
            assert!(s.debugfs_note.is_some());
        }
    }
}

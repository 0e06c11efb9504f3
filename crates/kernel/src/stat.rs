//! Reading the live system's swap and zram state: parsers for `/proc/swaps`, `/proc/vmstat`,
//! `/sys/block/NAME/stat` and zram's sysfs attributes, each a pure function over the file's text
//! (unit-tested on fixture text), with a reader beside it that opens the live file.
//!
//! Each kernel fact has one reader here, taking the root it reads under (`/proc`, `/sys`, or a
//! test's fake tree) beside a plain one for the live system: caps, status, zswap_state, the
//! harness and the lab all call these. zram's stat attributes are read into the engine's own
//! types (`zmem_zram::{MmStat, IoStat, BdStat}`, parsed by [`crate::parse`], which also
//! takes older kernels' shorter `mm_stat`); [`read_zram_attr`] gives an attribute's raw line
//! (captures record them as set metadata).
//!
//! Every failure is a [`KernelError`]: `Io` naming the file that could not be read, `Parse`
//! naming the file whose text was not the kernel's layout.

use std::collections::BTreeMap;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use zmem_zram::{BdStat, IoStat, MmStat};

use crate::KernelError;
use crate::error::read_text;

/// One line of `/proc/swaps`: an active swap area (sizes in bytes; the file shows KiB).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SwapArea {
    /// The device or file (octal escapes such as `\040` undone).
    pub filename: String,
    /// `partition` or `file`.
    pub kind: String,
    /// Size in bytes (the usable pages, without the header page).
    pub size_bytes: u64,
    /// Used in bytes.
    pub used_bytes: u64,
    /// Priority: higher is used first; negative ones are the kernel's defaults.
    pub priority: i32,
}

impl SwapArea {
    /// The zram device number when this area is `/dev/zramN`.
    pub fn zram_id(&self) -> Option<u32> {
        let name = self.filename.strip_prefix("/dev/")?;
        name.strip_prefix("zram")?.parse().ok()
    }
}

/// An active zram swap device (see [`active_zram_swaps`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZramSwap {
    /// N of `/dev/zramN`.
    pub id: u32,
    /// `/dev/zramN`.
    pub path: PathBuf,
    /// Swap priority.
    pub priority: i32,
    /// Swap area size in bytes.
    pub size_bytes: u64,
    /// Bytes of the area in use.
    pub used_bytes: u64,
}

/// `/proc/meminfo` in bytes, by name (`MemTotal`, `Zswap`, `Zswapped`, ...).
pub fn meminfo() -> Result<BTreeMap<String, u64>, KernelError> {
    meminfo_at(Path::new("/proc"))
}

/// `meminfo` under `proc` in bytes, by name: the one reader of the file, for the lab, status,
/// zswap_state and validation ([`crate::parse::parse_meminfo`]).
pub fn meminfo_at(proc: &Path) -> Result<BTreeMap<String, u64>, KernelError> {
    let path = proc.join("meminfo");
    crate::parse::parse_meminfo(&read_text(&path)?).map_err(|e| e.at(&path))
}

/// `vm.NAME` (`/proc/sys/vm/NAME`) as a number.
pub fn vm_sysctl(name: &str) -> Result<u64, KernelError> {
    vm_sysctl_at(Path::new("/proc"), name)
}

/// `sys/vm/NAME` under `proc` as a number: the one reader of the vm sysctls (`page-cluster`,
/// `swappiness`, `watermark_scale_factor`, ...).
pub fn vm_sysctl_at(proc: &Path, name: &str) -> Result<u64, KernelError> {
    let path = proc.join("sys/vm").join(name);
    let text = read_text(&path)?;
    text.trim().parse().map_err(|_| KernelError::parse(&path, format!("not a number: {text:?}")))
}

/// Parses the text of `/proc/swaps`: a header line, then one line per area
/// (`Filename Type Size Used Priority`, whitespace-separated, sizes in KiB).
pub fn parse_proc_swaps(text: &str) -> Result<Vec<SwapArea>, KernelError> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if n == 0 && line.starts_with("Filename") || line.trim().is_empty() {
            continue;
        }
        let bad = || KernelError::parse("/proc/swaps", format!("line {}: {line:?}", n + 1));
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 5 {
            return Err(bad());
        }
        let kib = |f: &str| f.parse::<u64>().ok().and_then(|k| k.checked_mul(1024)).ok_or_else(bad);
        out.push(SwapArea {
            filename: unescape_octal(f[0]),
            kind: f[1].to_string(),
            size_bytes: kib(f[2])?,
            used_bytes: kib(f[3])?,
            priority: f[4].parse().map_err(|_| bad())?,
        });
    }
    Ok(out)
}

/// Undoes the kernel's `\ooo` escapes of space, tab, newline and backslash in a path.
fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..=i + 3].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') as u32 * 64
                + (b[i + 2] - b'0') as u32 * 8
                + (b[i + 3] - b'0') as u32;
            if let Ok(v) = u8::try_from(v) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The active swap areas, from `/proc/swaps`.
pub fn swaps() -> Result<Vec<SwapArea>, KernelError> {
    swaps_at(Path::new("/proc"))
}

/// The active swap areas, from `swaps` under `proc` (`/proc`, or a test's fake root): the one
/// reader of this fact, for the lab, the harness and `zmem status`.
pub fn swaps_at(proc: &Path) -> Result<Vec<SwapArea>, KernelError> {
    let path = proc.join("swaps");
    parse_proc_swaps(&read_text(&path)?).map_err(|e| e.at(&path))
}

/// The zram device numbers under `sys/block` (`sys`: `/sys`, or a test's fake root), sorted:
/// the one reader of which devices exist, for caps and `zmem status`.
pub fn zram_ids(sys: &Path) -> Vec<u32> {
    let mut ids: Vec<u32> = std::fs::read_dir(sys.join("block"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("zram")?.parse().ok())
        .collect();
    ids.sort_unstable();
    ids
}

/// The zram devices among `areas`, in their `/proc/swaps` order.
pub fn zram_swaps_in(areas: &[SwapArea]) -> Vec<ZramSwap> {
    areas
        .iter()
        .filter_map(|a| {
            Some(ZramSwap {
                id: a.zram_id()?,
                path: PathBuf::from(&a.filename),
                priority: a.priority,
                size_bytes: a.size_bytes,
                used_bytes: a.used_bytes,
            })
        })
        .collect()
}

/// The active zram swap devices of this system, with their priority and used size.
pub fn active_zram_swaps() -> Result<Vec<ZramSwap>, KernelError> {
    Ok(zram_swaps_in(&swaps()?))
}

/// The system-wide swap counters of `/proc/vmstat` (pages since boot); zswap's are absent
/// without zswap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SwapCounters {
    /// Pages swapped in.
    pub pswpin: u64,
    /// Pages swapped out.
    pub pswpout: u64,
    /// Pages loaded back from zswap.
    pub zswpin: Option<u64>,
    /// Pages stored into zswap.
    pub zswpout: Option<u64>,
    /// Pages zswap wrote back to the swap device.
    pub zswpwb: Option<u64>,
}

impl SwapCounters {
    /// The counters of a parsed `/proc/vmstat`, a missing `pswpin`/`pswpout` read as 0.
    pub fn from_vmstat(map: &BTreeMap<String, u64>) -> Self {
        Self {
            pswpin: map.get("pswpin").copied().unwrap_or(0),
            pswpout: map.get("pswpout").copied().unwrap_or(0),
            zswpin: map.get("zswpin").copied(),
            zswpout: map.get("zswpout").copied(),
            zswpwb: map.get("zswpwb").copied(),
        }
    }
}

/// Parses `/proc/vmstat` (`name value` lines) into a map.
pub fn parse_vmstat(text: &str) -> Result<BTreeMap<String, u64>, KernelError> {
    let mut out = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = || KernelError::parse("/proc/vmstat", format!("line {}: {line:?}", n + 1));
        let (k, v) = line.split_once(' ').ok_or_else(bad)?;
        out.insert(k.to_string(), v.trim().parse().map_err(|_| bad())?);
    }
    Ok(out)
}

/// The live `/proc/vmstat`, every counter by name.
pub fn vmstat() -> Result<BTreeMap<String, u64>, KernelError> {
    vmstat_at(Path::new("/proc"))
}

/// `vmstat` under `proc`, every counter by name: the one reader of the file, for status,
/// zswap_state, the counters below and validation.
pub fn vmstat_at(proc: &Path) -> Result<BTreeMap<String, u64>, KernelError> {
    let path = proc.join("vmstat");
    parse_vmstat(&read_text(&path)?).map_err(|e| e.at(&path))
}

/// Counter `k` of a parsed `/proc/vmstat`, an error naming it where the kernel has none.
fn vmstat_get(map: &BTreeMap<String, u64>, k: &str) -> Result<u64, KernelError> {
    map.get(k).copied().ok_or_else(|| KernelError::parse("/proc/vmstat", format!("no {k}")))
}

/// `pswpin` and `pswpout` from the text of `/proc/vmstat`.
pub fn parse_swap_counters(text: &str) -> Result<SwapCounters, KernelError> {
    swap_counters_in(&parse_vmstat(text)?)
}

/// [`SwapCounters::from_vmstat`], but a kernel without `pswpin`/`pswpout` is an error.
fn swap_counters_in(map: &BTreeMap<String, u64>) -> Result<SwapCounters, KernelError> {
    vmstat_get(map, "pswpin")?;
    vmstat_get(map, "pswpout")?;
    Ok(SwapCounters::from_vmstat(map))
}

/// The live swap counters from `/proc/vmstat`.
pub fn swap_counters() -> Result<SwapCounters, KernelError> {
    swap_counters_in(&vmstat()?)
}

/// One live `/proc/vmstat` counter by name; `None` where this kernel has no such counter.
pub fn vmstat_counter(name: &str) -> Result<Option<u64>, KernelError> {
    Ok(vmstat()?.get(name).copied())
}

/// The system-wide swap readahead events of `/proc/vmstat` (since boot): `swap_ra`, pages read
/// ahead into the swap cache with a fault's own page, and `swap_ra_hit`, faults that found a
/// read-ahead page there (mm/swap_state.c: `swap_vma_readahead()` / `swap_cluster_readahead()`
/// and `swap_update_readahead()`). 6.18's `memory.stat` has neither (`memcg_vm_event_stat[]`,
/// mm/memcontrol.c), so a cgroup's own readahead can only be read system-wide: the deltas
/// include every other process's swap-ins over the same time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReadaheadCounters {
    pub swap_ra: u64,
    pub swap_ra_hit: u64,
}

impl ReadaheadCounters {
    /// `self - before`, each saturating at 0.
    pub fn since(&self, before: &Self) -> Self {
        Self {
            swap_ra: self.swap_ra.saturating_sub(before.swap_ra),
            swap_ra_hit: self.swap_ra_hit.saturating_sub(before.swap_ra_hit),
        }
    }
}

/// `swap_ra` and `swap_ra_hit` from the text of `/proc/vmstat` (a kernel built without
/// `CONFIG_SWAP` has neither: an error).
pub fn parse_readahead_counters(text: &str) -> Result<ReadaheadCounters, KernelError> {
    readahead_counters_in(&parse_vmstat(text)?)
}

fn readahead_counters_in(map: &BTreeMap<String, u64>) -> Result<ReadaheadCounters, KernelError> {
    Ok(ReadaheadCounters {
        swap_ra: vmstat_get(map, "swap_ra")?,
        swap_ra_hit: vmstat_get(map, "swap_ra_hit")?,
    })
}

/// The live readahead counters from `/proc/vmstat`.
pub fn readahead_counters() -> Result<ReadaheadCounters, KernelError> {
    readahead_counters_in(&vmstat()?)
}

/// The running kernel's swap readahead settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SwapReadahead {
    /// `vm.page-cluster` (`/proc/sys/vm/page-cluster`).
    pub page_cluster: u32,
    /// `/sys/kernel/mm/swap/vma_ra_enabled` (mm/swap_state.c `enable_vma_readahead`): VMA-based
    /// readahead, else cluster-based. (The kernel also falls back to cluster readahead while a
    /// rotational swap area is active, `nr_rotate_swap`, which it does not show.)
    pub vma_ra_enabled: bool,
}

/// `vma_ra_enabled`'s text: `true` or `false` (`str_true_false()`; older kernels wrote the
/// same).
pub fn parse_vma_ra_enabled(text: &str) -> Result<bool, KernelError> {
    match text.trim() {
        "true" | "1" | "Y" | "y" => Ok(true),
        "false" | "0" | "N" | "n" => Ok(false),
        t => Err(KernelError::parse(VMA_RA_ENABLED, format!("{t:?}"))),
    }
}

const VMA_RA_ENABLED: &str = "/sys/kernel/mm/swap/vma_ra_enabled";

/// The live `vm.page-cluster` and `vma_ra_enabled`.
pub fn swap_readahead() -> Result<SwapReadahead, KernelError> {
    let pc = vm_sysctl("page-cluster")?;
    let page_cluster = u32::try_from(pc).map_err(|_| {
        KernelError::parse("/proc/sys/vm/page-cluster", format!("{pc} is out of range"))
    })?;
    let vma_ra_enabled = parse_vma_ra_enabled(&read_text(Path::new(VMA_RA_ENABLED))?)?;
    Ok(SwapReadahead { page_cluster, vma_ra_enabled })
}

/// Whether the block device holding `path` is rotational
/// (`/sys/dev/block/MAJ:MIN/queue/rotational`, a partition's from its disk); `None` where that
/// cannot be read (a file system without a block device, such as tmpfs). 6.18 counts a swap
/// area on such a device in `nr_rotate_swap` (mm/swapfile.c, swapon without `bdev_nonrot()`),
/// which turns VMA readahead off (`swap_use_vma_readahead()`, mm/swap_state.c).
pub fn rotational(path: &Path) -> Option<bool> {
    let base = sys_dev_block(path)?;
    [base.join("queue/rotational"), base.join("../queue/rotational")]
        .iter()
        .find_map(|f| std::fs::read_to_string(f).ok())
        .and_then(|t| match t.trim() {
            "1" => Some(true),
            "0" => Some(false),
            _ => None,
        })
}

/// The block device's name holding `path` as sysfs links it (`nvme0n1p2`, `sda1`, `vda`);
/// `None` without a block device (tmpfs, overlay's anonymous device).
pub fn block_device_name(path: &Path) -> Option<String> {
    let link = std::fs::read_link(sys_dev_block(path)?).ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

/// `/sys/dev/block/MAJ:MIN` of the device holding `path`.
fn sys_dev_block(path: &Path) -> Option<PathBuf> {
    let dev = std::fs::metadata(path).ok()?.dev();
    Some(PathBuf::from(format!("/sys/dev/block/{}:{}", libc::major(dev), libc::minor(dev))))
}

/// Bytes an unprivileged writer may still take on the file system holding `path`
/// (`statvfs`'s `f_bavail * f_frsize`): what a swap file can be laid down in, leaving the
/// blocks reserved for root to the system.
pub fn free_bytes(path: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in path"))?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path that outlives the call, and `st` is a writable
    // `statvfs` the kernel fills; it is read only after the call returned success.
    if unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: statvfs returned 0, so it wrote the whole struct.
    let st = unsafe { st.assume_init() };
    // Both are 32 bits wide on some 32-bit targets.
    #[allow(clippy::useless_conversion)]
    Ok(u64::from(st.f_bavail).saturating_mul(u64::from(st.f_frsize)))
}

/// `/sys/block/NAME/stat`, the block layer's counters (Documentation/block/stat.rst). Sectors
/// are 512 bytes; times are milliseconds. Kernels before 4.18 have no discard fields and before
/// 5.5 no flush fields: those read 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockStat {
    pub read_ios: u64,
    pub read_merges: u64,
    pub read_sectors: u64,
    pub read_ticks: u64,
    pub write_ios: u64,
    pub write_merges: u64,
    pub write_sectors: u64,
    pub write_ticks: u64,
    pub in_flight: u64,
    pub io_ticks: u64,
    pub time_in_queue: u64,
    pub discard_ios: u64,
    pub discard_merges: u64,
    pub discard_sectors: u64,
    pub discard_ticks: u64,
    pub flush_ios: u64,
    pub flush_ticks: u64,
}

/// Parses the one line of a block device's `stat` file (11, 15 or 17 numbers).
pub fn parse_block_stat(text: &str) -> Result<BlockStat, KernelError> {
    let bad = || KernelError::parse("stat", format!("block stat: {:?}", text.trim()));
    let v: Vec<u64> =
        text.split_whitespace().map(|f| f.parse().map_err(|_| bad())).collect::<Result<_, _>>()?;
    if !matches!(v.len(), 11 | 15 | 17) {
        return Err(bad());
    }
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    Ok(BlockStat {
        read_ios: at(0),
        read_merges: at(1),
        read_sectors: at(2),
        read_ticks: at(3),
        write_ios: at(4),
        write_merges: at(5),
        write_sectors: at(6),
        write_ticks: at(7),
        in_flight: at(8),
        io_ticks: at(9),
        time_in_queue: at(10),
        discard_ios: at(11),
        discard_merges: at(12),
        discard_sectors: at(13),
        discard_ticks: at(14),
        flush_ios: at(15),
        flush_ticks: at(16),
    })
}

/// `/sys/block/zramN/stat` of a live device.
pub fn zram_block_stat(id: u32) -> Result<BlockStat, KernelError> {
    block_stat_at(Path::new("/sys"), &format!("zram{id}"))
}

/// `block/NAME/stat` under `sys` (`/sys`, or a test's fake root): the one reader of a block
/// device's counters (zram's, a loop device's).
pub fn block_stat_at(sys: &Path, name: &str) -> Result<BlockStat, KernelError> {
    let path = sys.join("block").join(name).join("stat");
    parse_block_stat(&read_text(&path)?).map_err(|e| e.at(&path))
}

/// The sysfs directory of zram device `id`.
pub fn zram_sysfs(id: u32) -> PathBuf {
    zram_sysfs_at(Path::new("/sys"), id)
}

/// The directory of zram device `id` under `sys` (`/sys`, or a test's fake root).
pub fn zram_sysfs_at(sys: &Path, id: u32) -> PathBuf {
    sys.join("block").join(format!("zram{id}"))
}

/// Reads one sysfs attribute of zram device `id` (`mm_stat`, `io_stat`, `comp_algorithm`,
/// `disksize`, ...), its text with the trailing newline removed.
pub fn read_zram_attr(id: u32, attr: &str) -> Result<String, KernelError> {
    zram_attr_at(Path::new("/sys"), id, attr)
}

/// One sysfs attribute of zram device `id` under `sys`, its text with the trailing newline
/// removed: the one reader of zram's attributes, for status, caps, capture and the harness.
pub fn zram_attr_at(sys: &Path, id: u32, attr: &str) -> Result<String, KernelError> {
    let text = read_text(&zram_sysfs_at(sys, id).join(attr))?;
    Ok(text.trim_end_matches('\n').to_string())
}

/// Attribute `attr` of zram device `id` under `sys`, parsed by `parse`; a parse error names the
/// device's file.
fn zram_parsed_at<T>(
    sys: &Path,
    id: u32,
    attr: &str,
    parse: impl FnOnce(&str) -> Result<T, KernelError>,
) -> Result<T, KernelError> {
    parse(&zram_attr_at(sys, id, attr)?).map_err(|e| e.at(&zram_sysfs_at(sys, id).join(attr)))
}

/// `mm_stat` of zram device `id` (any device, ours or not: reading is harmless), as the
/// engine's [`MmStat`].
pub fn zram_mm_stat(id: u32) -> Result<MmStat, KernelError> {
    zram_mm_stat_at(Path::new("/sys"), id)
}

/// `mm_stat` of zram device `id` under `sys`.
pub fn zram_mm_stat_at(sys: &Path, id: u32) -> Result<MmStat, KernelError> {
    zram_parsed_at(sys, id, "mm_stat", crate::parse::parse_mm_stat)
}

/// `io_stat` of zram device `id` under `sys`, as the engine's [`IoStat`].
pub fn zram_io_stat_at(sys: &Path, id: u32) -> Result<IoStat, KernelError> {
    zram_parsed_at(sys, id, "io_stat", crate::parse::parse_io_stat)
}

/// `bd_stat` of zram device `id` under `sys` (CONFIG_ZRAM_WRITEBACK), as the engine's
/// [`BdStat`].
pub fn zram_bd_stat_at(sys: &Path, id: u32) -> Result<BdStat, KernelError> {
    zram_parsed_at(sys, id, "bd_stat", crate::parse::parse_bd_stat)
}

/// The selected algorithm of a `comp_algorithm` line (`lzo [lzo-rle] lz4` gives `lzo-rle`), by
/// the one parser of that attribute ([`crate::parse::parse_comp_algorithm`]).
pub fn selected_algorithm(line: &str) -> Option<String> {
    crate::parse::parse_comp_algorithm(line).current
}

/// Which zram device a path names: the block device's number, through `/sys/dev/block/MAJ:MIN`
/// (so `/dev/zram1` and any link to it both work). Fails, saying why, for a path that is not a
/// block device or a block device that is not zram.
pub fn zram_id_of(path: &Path) -> Result<u32, KernelError> {
    let md = std::fs::metadata(path).map_err(|e| KernelError::io(path, e))?;
    if !md.file_type().is_block_device() {
        return Err(KernelError::Invalid(format!(
            "{} is not a block device (give /dev/zramN)",
            path.display()
        )));
    }
    let rdev = md.rdev();
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    let link = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let target = std::fs::read_link(&link).map_err(|e| KernelError::io(&link, e))?;
    let name = target.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let id = name.strip_prefix("zram").and_then(|n| n.parse().ok());
    match id {
        Some(id) if zram_sysfs(id).join("mm_stat").exists() => Ok(id),
        _ => Err(KernelError::Invalid(format!(
            "{} is not a zram device (it is {name:?}, block device {major}:{minor})",
            path.display()
        ))),
    }
}

/// The running kernel's release (`uname -r`).
pub fn kernel_release() -> Result<String, KernelError> {
    kernel_release_at(Path::new("/proc"))
}

/// `sys/kernel/osrelease` under `proc`: the one reader of the release, for caps and captures.
pub fn kernel_release_at(proc: &Path) -> Result<String, KernelError> {
    Ok(read_text(&proc.join("sys/kernel/osrelease"))?.trim().to_string())
}

/// A Unix time as RFC 3339 UTC (`2026-11-24T10:31:07Z`).
pub fn rfc3339_utc(unix_secs: u64) -> String {
    let days = (unix_secs / 86_400) as i64;
    let secs = unix_secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWAPS: &str = "\
Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority
/dev/zram1                              partition\t1048572\t\t262144\t\t32000
/swap\\040file                           file\t\t2097148\t\t0\t\t-2
/dev/zram12                             partition\t524284\t\t4\t\t100
";

    /// procfs has no blocks and no block device; a path that is not there is an error, not 0.
    #[test]
    fn free_bytes_and_block_device_of_a_file_system_without_blocks() {
        assert_eq!(free_bytes(Path::new("/proc")).unwrap(), 0);
        assert_eq!(block_device_name(Path::new("/proc")), None);
        let e = free_bytes(Path::new("/proc/zmem-not-there")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn proc_swaps_parses_with_priorities_and_escapes() {
        let areas = parse_proc_swaps(SWAPS).unwrap();
        assert_eq!(areas.len(), 3);
        assert_eq!(
            areas[0],
            SwapArea {
                filename: "/dev/zram1".into(),
                kind: "partition".into(),
                size_bytes: 1_048_572 * 1024,
                used_bytes: 262_144 * 1024,
                priority: 32000,
            }
        );
        assert_eq!(areas[1].filename, "/swap file");
        assert_eq!(areas[1].priority, -2);
        assert_eq!(areas[1].zram_id(), None);
        let z = zram_swaps_in(&areas);
        assert_eq!(z.len(), 2);
        assert_eq!((z[0].id, z[0].priority, z[0].used_bytes), (1, 32000, 262_144 * 1024));
        assert_eq!((z[1].id, z[1].path.to_str().unwrap()), (12, "/dev/zram12"));
        // Only the header: no swap.
        assert!(parse_proc_swaps(SWAPS.lines().next().unwrap()).unwrap().is_empty());
        assert!(parse_proc_swaps("Filename\n/dev/x partition 1 2\n").is_err());
    }

    #[test]
    fn vmstat_parses_swap_counters() {
        let text = "nr_free_pages 12345\npswpin 17\npswpout 4242\nswap_ra 3\n";
        let c = parse_swap_counters(text).unwrap();
        assert_eq!(c, SwapCounters { pswpin: 17, pswpout: 4242, ..SwapCounters::default() });
        let z = parse_swap_counters("pswpin 1\npswpout 2\nzswpin 3\nzswpwb 5\n").unwrap();
        assert_eq!((z.zswpin, z.zswpout, z.zswpwb), (Some(3), None, Some(5)));
        assert_eq!(parse_vmstat(text).unwrap()["nr_free_pages"], 12345);
        assert!(parse_swap_counters("pswpin 1\n").is_err());
        assert!(parse_vmstat("pswpin x\n").is_err());
    }

    #[test]
    fn vmstat_parses_readahead_counters_and_settings() {
        let text = "pswpin 17\nswap_ra 300\nswap_ra_hit 250\n";
        let c = parse_readahead_counters(text).unwrap();
        assert_eq!(c, ReadaheadCounters { swap_ra: 300, swap_ra_hit: 250 });
        let before = ReadaheadCounters { swap_ra: 100, swap_ra_hit: 260 };
        assert_eq!(c.since(&before), ReadaheadCounters { swap_ra: 200, swap_ra_hit: 0 });
        assert!(parse_readahead_counters("swap_ra 1\n").is_err());
        assert!(parse_vma_ra_enabled("true\n").unwrap());
        assert!(!parse_vma_ra_enabled("false\n").unwrap());
        assert!(parse_vma_ra_enabled("maybe").is_err());
    }

    #[test]
    fn block_stat_parses_every_field() {
        let text = "    1234        0     9872       15    56789        0   454312      200        0      300      215        0        0        0        0        0        0\n";
        let s = parse_block_stat(text).unwrap();
        assert_eq!((s.read_ios, s.read_sectors, s.read_ticks), (1234, 9872, 15));
        assert_eq!((s.write_ios, s.write_sectors, s.write_ticks), (56789, 454_312, 200));
        assert_eq!((s.io_ticks, s.time_in_queue, s.flush_ios), (300, 215, 0));
        let old = parse_block_stat("1 2 3 4 5 6 7 8 9 10 11").unwrap();
        assert_eq!((old.time_in_queue, old.discard_ios), (11, 0));
        assert!(parse_block_stat("1 2 3").is_err());
        assert!(parse_block_stat("").is_err());
    }

    #[test]
    fn attribute_helpers() {
        assert_eq!(selected_algorithm("lzo [lzo-rle] lz4 zstd").as_deref(), Some("lzo-rle"));
        assert_eq!(selected_algorithm("lzo lz4"), None);
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// Every reader under a fake root, each fact's file missing: `Io`, naming the file.
    #[test]
    fn a_missing_file_is_io_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let (proc, sys) = (dir.path().join("proc"), dir.path().join("sys"));
        std::fs::create_dir_all(sys.join("block/zram3")).unwrap();
        let cases: [(Result<(), KernelError>, PathBuf); 9] = [
            (meminfo_at(&proc).map(drop), proc.join("meminfo")),
            (vmstat_at(&proc).map(drop), proc.join("vmstat")),
            (swaps_at(&proc).map(drop), proc.join("swaps")),
            (vm_sysctl_at(&proc, "swappiness").map(drop), proc.join("sys/vm/swappiness")),
            (kernel_release_at(&proc).map(drop), proc.join("sys/kernel/osrelease")),
            (zram_attr_at(&sys, 3, "disksize").map(drop), sys.join("block/zram3/disksize")),
            (zram_mm_stat_at(&sys, 3).map(drop), sys.join("block/zram3/mm_stat")),
            (zram_io_stat_at(&sys, 3).map(drop), sys.join("block/zram3/io_stat")),
            (zram_bd_stat_at(&sys, 3).map(drop), sys.join("block/zram3/bd_stat")),
        ];
        for (got, want) in cases {
            let e = got.unwrap_err();
            assert!(e.is_not_found(), "{e:?}");
            let KernelError::Io { path, .. } = &e else { panic!("{e:?}") };
            assert_eq!(path, &want);
            assert!(e.to_string().starts_with(&format!("{}: ", want.display())), "{e}");
        }
    }

    /// The same readers over garbled files: `Parse`, naming the file read (not the file's usual
    /// name) and saying what was wrong.
    #[test]
    fn a_garbled_file_is_parse_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let (proc, sys) = (dir.path().join("proc"), dir.path().join("sys"));
        write(&proc, "meminfo", "MemTotal:  8000 kB\nZswap 3 kB\n");
        write(&proc, "vmstat", "pswpin 1\npswpout many\n");
        write(&proc, "swaps", "Filename Type Size Used Priority\n/dev/zram0 partition 1 2\n");
        write(&proc, "sys/vm/swappiness", "sixty\n");
        write(&sys, "block/zram3/mm_stat", "1 2 3\n");
        write(&sys, "block/zram3/io_stat", "0 0 x 0\n");
        write(&sys, "block/zram3/bd_stat", "1 2\n");
        let cases: [(Result<(), KernelError>, PathBuf, &str); 7] = [
            (meminfo_at(&proc).map(drop), proc.join("meminfo"), "\"Zswap 3 kB\""),
            (vmstat_at(&proc).map(drop), proc.join("vmstat"), "line 2: \"pswpout many\""),
            (swaps_at(&proc).map(drop), proc.join("swaps"), "line 2:"),
            (vm_sysctl_at(&proc, "swappiness").map(drop), proc.join("sys/vm/swappiness"), "sixty"),
            (zram_mm_stat_at(&sys, 3).map(drop), sys.join("block/zram3/mm_stat"), "3 fields"),
            (zram_io_stat_at(&sys, 3).map(drop), sys.join("block/zram3/io_stat"), "\"x\""),
            (zram_bd_stat_at(&sys, 3).map(drop), sys.join("block/zram3/bd_stat"), "3 fields"),
        ];
        for (got, want, says) in cases {
            let e = got.unwrap_err();
            let KernelError::Parse { path, what } = &e else { panic!("{e:?}") };
            assert_eq!(path, &want);
            assert!(what.contains(says), "{what}");
            assert_eq!(e.reason(), *what);
        }
        // A missing counter of a readable file is a Parse error naming it.
        write(&proc, "vmstat", "pswpin 1\n");
        assert!(matches!(
            swap_counters_in(&vmstat_at(&proc).unwrap()),
            Err(KernelError::Parse { what, .. }) if what == "no pswpout"
        ));
    }

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_utc(1_795_000_000), "2026-11-18T11:06:40Z");
    }

    #[test]
    fn not_a_zram_device_is_refused() {
        let e = zram_id_of(Path::new("/proc/swaps")).unwrap_err();
        assert!(e.to_string().contains("not a block device"), "{e}");
        assert!(zram_id_of(Path::new("/nonexistent/zram9")).is_err());
    }
}

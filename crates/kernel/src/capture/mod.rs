//! Live capture: the resident anonymous pages of running processes.
//!
//! For each process: /proc/PID/maps lists its mappings; the readable private anonymous ones
//! (`[heap]`, `[stack]`, no pathname, `[anon:NAME]`) are the pages that zram and zswap would see
//! as swap candidates. /proc/PID/pagemap has one 64-bit entry per virtual page: bit 63 = present
//! in RAM, bit 62 = swapped out. Only present, not swapped pages are taken (a swapped page is
//! already compressed or on disk; an absent one has never been touched). Their contents come from
//! /proc/PID/mem at the page's virtual address, read in runs of consecutive present pages.
//!
//! A process is a moving target: it may exit, or a read may be refused (permissions, a kernel
//! thread, a mapping torn down under us). Such a process is skipped and counted, never fatal,
//! and pages already taken from it are dropped so that a capture holds whole processes only.
//! The snapshot is not atomic: a process keeps running while it is read.

use std::fs::File;
use std::io::BufRead;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use zmem_pages::PageSetBuilder;
use zmem_pages::{MappingKind, PageMeta};

pub mod zram;
use crate::KernelError;
use zmem_pages::PageSet;

/// pagemap entry bit: the page is present in RAM.
const PM_PRESENT: u64 = 1 << 63;
/// pagemap entry bit: the page is in swap.
const PM_SWAPPED: u64 = 1 << 62;
/// Most pages read from /proc/PID/mem in one call.
const MAX_RUN: usize = 64;

/// One line of /proc/PID/maps that capture cares about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub kind: MappingKind,
}

/// Parses one line of /proc/PID/maps; `None` for mappings that are not readable private
/// anonymous memory (and for lines that do not parse).
pub fn parse_maps_line(line: &str) -> Option<Mapping> {
    // start-end perms offset dev inode [pathname]
    let mut fields = line.splitn(6, ' ');
    let range = fields.next()?;
    let perms = fields.next()?.as_bytes();
    let _offset = fields.next()?;
    let _dev = fields.next()?;
    let inode = fields.next()?;
    let path = fields.next().unwrap_or("").trim_start();
    let (start, end) = range.split_once('-')?;
    let start = u64::from_str_radix(start, 16).ok()?;
    let end = u64::from_str_radix(end, 16).ok()?;
    if perms.len() < 4 || perms[0] != b'r' || perms[3] != b'p' || inode != "0" || end <= start {
        return None;
    }
    let kind = if path == "[heap]" {
        MappingKind::Heap
    } else if path.starts_with("[stack") {
        MappingKind::Stack
    } else if path.is_empty() || path.starts_with("[anon:") {
        MappingKind::Anon
    } else {
        return None;
    };
    Some(Mapping { start, end, kind })
}

/// The system's page size.
pub fn system_page_size() -> usize {
    // SAFETY: sysconf has no preconditions; it reads a constant of the running system.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|n| n.is_power_of_two()).unwrap_or(4096)
}

/// Every process id in /proc, ascending, without the calling process.
pub fn all_pids() -> Result<Vec<u32>, KernelError> {
    let me = std::process::id();
    let dir = std::fs::read_dir("/proc").map_err(|e| KernelError::io("/proc", e))?;
    let mut pids: Vec<u32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&p| p != me)
        .collect();
    pids.sort_unstable();
    Ok(pids)
}

/// The processes of a cgroup (v2: its `cgroup.procs`). `path` is the cgroup directory, either
/// absolute or relative to /sys/fs/cgroup.
pub fn cgroup_pids(path: &Path) -> Result<Vec<u32>, KernelError> {
    let dir = if path.is_absolute() && path.exists() {
        path.to_path_buf()
    } else {
        Path::new("/sys/fs/cgroup").join(path.strip_prefix("/").unwrap_or(path))
    };
    let procs = dir.join("cgroup.procs");
    let text = std::fs::read_to_string(&procs).map_err(|e| KernelError::io(&procs, e))?;
    let mut pids = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let pid = line.trim().parse().map_err(|_| {
            KernelError::Invalid(format!("{} line {}: not a pid: {line:?}", procs.display(), n + 1))
        })?;
        pids.push(pid);
    }
    Ok(pids)
}

/// What capture reports while it runs.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    /// About to read this many processes.
    Start { processes: usize },
    /// One process is done: `pages` taken (0 for kernel threads and the like).
    Captured { pid: u32, comm: &'a str, pages: usize },
    /// One process was skipped.
    Skipped { pid: u32, reason: &'a str },
}

/// The outcome of a capture besides the pages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Processes with at least one page in the set.
    pub processes: usize,
    /// Processes read successfully that had no resident anonymous page (kernel threads...).
    pub empty: usize,
    /// Pages in the set.
    pub pages: usize,
    /// Processes skipped: (pid, why).
    pub skipped: Vec<(u32, String)>,
    /// Present pages whose contents could not be read (left out).
    pub unreadable_pages: u64,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "captured {} pages from {} processes; {} skipped, {} without anonymous pages, {} unreadable pages",
            self.pages,
            self.processes,
            self.skipped.len(),
            self.empty,
            self.unreadable_pages
        )
    }
}

/// Captures the resident anonymous pages of `pids` into a page set with metadata: per page,
/// where it came from; for the set, this host's name, kernel release and what its kernel
/// offers for compressed memory ([`crate::caps::set_meta`]), and the capture's time.
///
/// Fails only for a bad page size; every per-process problem is a skip in the [`Summary`].
pub fn capture(
    pids: &[u32],
    progress: &mut dyn FnMut(Event<'_>),
) -> Result<(PageSet, Summary), KernelError> {
    let (set, summary) = capture_in(Path::new("/proc"), pids, progress)?;
    Ok((set.with_set_meta(host_meta())?, summary))
}

/// The set-level metadata of a capture of this host's processes.
fn host_meta() -> zmem_pages::SetMeta {
    let mut meta: zmem_pages::SetMeta =
        crate::caps::set_meta(&crate::caps::read(), &crate::caps::host_name())
            .into_iter()
            .collect();
    meta.insert("source".into(), "processes".into());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    meta.insert("capture.time".into(), crate::stat::rfc3339_utc(now));
    meta.insert("capture.unix_time".into(), now.to_string());
    meta.insert("capture.zmem_version".into(), env!("CARGO_PKG_VERSION").to_string());
    meta
}

/// [`capture`] with another procfs root (tests).
pub fn capture_in(
    proc_root: &Path,
    pids: &[u32],
    progress: &mut dyn FnMut(Event<'_>),
) -> Result<(PageSet, Summary), KernelError> {
    let page_size = system_page_size();
    zmem_pages::private::hold_captured_memory()
        .map_err(|e| KernelError::io("prctl(PR_SET_DUMPABLE)", e))?;
    let mut builder = PageSetBuilder::new(page_size, true)?;
    let mut summary = Summary::default();
    progress(Event::Start { processes: pids.len() });
    for &pid in pids {
        let before = builder.len();
        let mut unreadable = 0u64;
        match capture_process(proc_root, pid, page_size, &mut builder, &mut unreadable) {
            Ok(comm) => {
                let pages = builder.len() - before;
                if pages == 0 {
                    summary.empty += 1;
                } else {
                    summary.processes += 1;
                }
                summary.unreadable_pages += unreadable;
                progress(Event::Captured { pid, comm: &comm, pages });
            }
            Err(reason) => {
                builder.truncate(before);
                progress(Event::Skipped { pid, reason: &reason });
                summary.skipped.push((pid, reason));
            }
        }
    }
    let set = builder.finish();
    summary.pages = set.len();
    Ok((set, summary))
}

/// Reads one process into `builder`; returns its name, or why it was skipped.
fn capture_process(
    proc_root: &Path,
    pid: u32,
    page_size: usize,
    builder: &mut PageSetBuilder,
    unreadable: &mut u64,
) -> Result<String, String> {
    let dir: PathBuf = proc_root.join(pid.to_string());
    let why = |what: &str, e: std::io::Error| format!("{what}: {e}");
    let comm = std::fs::read_to_string(dir.join("comm")).map_err(|e| why("comm", e))?;
    let comm = comm.trim_end_matches('\n').to_string();
    let mappings = anon_mappings(proc_root, pid).map_err(|e| format!("maps: {}", e.reason()))?;
    if mappings.is_empty() {
        return Ok(comm);
    }
    let pagemap = File::open(dir.join("pagemap")).map_err(|e| why("pagemap", e))?;
    let mem = File::open(dir.join("mem")).map_err(|e| why("mem", e))?;
    let name: Arc<str> = Arc::from(comm.as_str());
    let ps = page_size as u64;
    let mut entries = vec![0u8; 8 * 512];
    // Cleared when dropped: it held the process's pages.
    let mut run = zeroize::Zeroizing::new(vec![0u8; MAX_RUN * page_size]);
    for m in &mappings {
        let first = m.start / ps;
        let last = m.end / ps; // exclusive
        let mut vpn = first;
        // The pending run of present pages: [run_start, run_start + run_len).
        let mut run_start = 0u64;
        let mut run_len = 0usize;
        while vpn < last {
            let n = ((last - vpn) as usize).min(512);
            let buf = &mut entries[..8 * n];
            pagemap.read_exact_at(buf, vpn * 8).map_err(|e| why("pagemap", e))?;
            for (k, e) in buf.chunks_exact(8).enumerate() {
                let mut b = [0u8; 8];
                b.copy_from_slice(e);
                let entry = u64::from_le_bytes(b);
                let page = vpn + k as u64;
                let take = resident_not_swapped(entry);
                if take && run_len > 0 && run_start + run_len as u64 == page && run_len < MAX_RUN {
                    run_len += 1;
                    continue;
                }
                if run_len > 0 {
                    read_run(
                        &mem, run_start, run_len, ps, &mut run, m.kind, pid, &name, builder,
                        unreadable,
                    )?;
                    run_len = 0;
                }
                if take {
                    run_start = page;
                    run_len = 1;
                }
            }
            vpn += n as u64;
        }
        if run_len > 0 {
            read_run(
                &mem, run_start, run_len, ps, &mut run, m.kind, pid, &name, builder, unreadable,
            )?;
        }
    }
    Ok(comm)
}

/// The readable private anonymous mappings of `pid` (its /proc/PID/maps under `proc_root`), as
/// [`parse_maps_line`] keeps them; the error is [`KernelError::Io`] on the maps file, with the
/// system's error (ESRCH or ENOENT: the process has exited, see [`process_gone`]).
pub fn anon_mappings(proc_root: &Path, pid: u32) -> Result<Vec<Mapping>, KernelError> {
    let path = proc_root.join(pid.to_string()).join("maps");
    let io = |e| KernelError::io(&path, e);
    let maps = File::open(&path).map_err(io)?;
    let mut mappings = Vec::new();
    for line in std::io::BufReader::new(maps).lines() {
        mappings.extend(parse_maps_line(&line.map_err(io)?));
    }
    Ok(mappings)
}

/// Whether an error reading a process's /proc files means it has exited (ESRCH: its mm or
/// task went while the file was open; ENOENT: its directory went).
pub fn process_gone(e: &std::io::Error) -> bool {
    gone(e) || e.kind() == std::io::ErrorKind::NotFound
}

/// Whether a /proc/PID/pagemap entry is a page capture takes: present in RAM, not in swap.
pub fn resident_not_swapped(entry: u64) -> bool {
    entry & PM_PRESENT != 0 && entry & PM_SWAPPED == 0
}

/// Why one page could not be read from /proc/PID/mem ([`read_page`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageReadError {
    /// The process has gone (ESRCH, or its memory ended): nothing more can be read from it.
    Gone(String),
    /// This page was refused (a mapping torn down under us, an I/O error): others may read.
    Unreadable(String),
}

/// Reads the page at `vaddr` from an open /proc/PID/mem into `buf` (one page), as capture
/// reads its runs.
pub fn read_page(mem: &File, vaddr: u64, buf: &mut [u8]) -> Result<(), PageReadError> {
    match mem.read_exact_at(buf, vaddr) {
        Ok(()) => Ok(()),
        Err(e) if gone(&e) => Err(PageReadError::Gone(format!("mem: {e}"))),
        Err(e) => Err(PageReadError::Unreadable(format!("mem: {e}"))),
    }
}

/// Reads `len` consecutive pages from virtual page `vpn` and adds them to `builder`. A run the
/// kernel refuses is retried page by page; pages that still fail are counted, not fatal. A
/// process that has gone (ESRCH, or mem reading 0 bytes) is an error: the whole process is
/// skipped.
#[allow(clippy::too_many_arguments)]
fn read_run(
    mem: &File,
    vpn: u64,
    len: usize,
    ps: u64,
    buf: &mut [u8],
    kind: MappingKind,
    pid: u32,
    comm: &Arc<str>,
    builder: &mut PageSetBuilder,
    unreadable: &mut u64,
) -> Result<(), String> {
    let page_size = ps as usize;
    let buf = &mut buf[..len * page_size];
    let push = |builder: &mut PageSetBuilder, page: &[u8], vaddr: u64| {
        let meta = PageMeta { pid, comm: comm.clone(), vaddr, kind };
        builder.push(page, Some(meta)).map_err(|e| e.to_string())
    };
    match mem.read_exact_at(buf, vpn * ps) {
        Ok(()) => {
            for (i, page) in buf.chunks_exact(page_size).enumerate() {
                push(builder, page, (vpn + i as u64) * ps)?;
            }
            Ok(())
        }
        Err(e) if gone(&e) => Err(format!("mem: {e}")),
        Err(_) => {
            for i in 0..len as u64 {
                let page = &mut buf[..page_size];
                match mem.read_exact_at(page, (vpn + i) * ps) {
                    Ok(()) => push(builder, page, (vpn + i) * ps)?,
                    Err(e) if gone(&e) => return Err(format!("mem: {e}")),
                    Err(_) => *unreadable += 1,
                }
            }
            Ok(())
        }
    }
}

/// Whether an error means the process no longer exists (or its memory is gone).
fn gone(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ESRCH) || e.kind() == std::io::ErrorKind::UnexpectedEof
}

/// The test pattern of page `index` (see the `zmem-fillpat` helper): "ZMEMFILL", the index, then
/// SplitMix64 bytes seeded with the index.
pub fn fill_pattern(index: u64, page: &mut [u8]) {
    let mut rng = zmem_pages::prng::SplitMix64::new(index);
    rng.fill(page);
    let head = page.len().min(8);
    page[..head].copy_from_slice(&b"ZMEMFILL"[..head]);
    if page.len() >= 16 {
        page[8..16].copy_from_slice(&index.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_classify_by_pathname_and_permissions() {
        let heap = parse_maps_line(
            "55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0                          [heap]",
        );
        assert_eq!(
            heap,
            Some(Mapping { start: 0x55d0c0a00000, end: 0x55d0c0a21000, kind: MappingKind::Heap })
        );
        let stack = parse_maps_line("7ffc1000-7ffc3000 rw-p 00000000 00:00 0 [stack]").unwrap();
        assert_eq!(stack.kind, MappingKind::Stack);
        let anon = parse_maps_line("7f0000000000-7f0000001000 rw-p 00000000 00:00 0 ").unwrap();
        assert_eq!(anon.kind, MappingKind::Anon);
        let named =
            parse_maps_line("7f00-7f10 rw-p 00000000 00:00 0 [anon:dalvik-main space]").unwrap();
        assert_eq!(named.kind, MappingKind::Anon);
        // File-backed, shared, unreadable, vdso-like: not taken.
        assert_eq!(parse_maps_line("7f00-7f10 r-xp 00000000 08:01 1234 /usr/lib/libc.so.6"), None);
        assert_eq!(parse_maps_line("7f00-7f10 rw-s 00000000 00:01 0 /dev/zero (deleted)"), None);
        assert_eq!(parse_maps_line("7f00-7f10 ---p 00000000 00:00 0 "), None);
        assert_eq!(parse_maps_line("7f00-7f10 r--p 00000000 00:00 0 [vvar]"), None);
        assert_eq!(parse_maps_line("garbage"), None);
    }

    #[test]
    fn a_missing_process_is_skipped_not_fatal() {
        // pid 0 never exists in /proc.
        let mut events = 0;
        let (set, summary) = capture(&[0], &mut |_| events += 1).unwrap();
        assert!(set.is_empty());
        assert_eq!(summary.skipped.len(), 1);
        assert_eq!(summary.processes, 0);
        assert_eq!(events, 2);
    }
}

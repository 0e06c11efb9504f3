//! Cold memory by age, from the machine's own accesses: for a set of processes, how many bytes
//! of their anonymous memory have gone untouched since a start time t0, read at each age, and
//! the rate at which idle memory comes back (bytes referenced again between two ages).
//!
//! **Method** ([`Method::ClearRefsReferenced`], the finest grain this machine kind allows: no
//! free DAMON admin interface, no `page_idle`, no soft-dirty, no accessed bit in pagemap): at
//! t0, `1` is written to each process's `/proc/PID/clear_refs`, then `/proc/PID/smaps` is read
//! at each age; a mapping's `Referenced:` is the bytes touched since t0. Cold at age a is the
//! anonymous bytes resident at t0 less the referenced bytes read at a ([`mapping_cold`]).
//!
//! **What it does to the machine** (Linux 6.18): `clear_refs_write()` (fs/proc/task_mmu.c)
//! walks every VMA's page tables under the mmap read lock; `clear_refs_pte_range()` clears
//! each present page's PTE young bit (`ptep_test_and_clear_young()`), its `PG_young`
//! (`test_and_clear_page_young()`) and `PG_referenced` (`folio_clear_referenced()`), then
//! `flush_tlb_mm()`. Those are the bits reclaim ages pages by (mm/vmscan.c
//! `folio_check_references()` -> mm/rmap.c `folio_referenced()`): until a page is touched
//! again it looks idle, so under memory pressure these processes' pages are deactivated and
//! reclaimed a little sooner than they would have been; with memory not short nothing reclaims
//! and nothing changes. Each touched page then costs the MMU one page-table walk to set the bit
//! again. Each read of smaps walks the process's page tables again (`show_smap()` ->
//! `smaps_pte_entry()`), O(resident pages) of kernel time under the mmap read lock: for a
//! process of 1 GiB about a millisecond. [`Cost`] measures both.
//!
//! **What `Referenced` counts**: `smaps_account()` adds a page's size when `pte_young()` (or
//! `pmd_young()` for a THP, counted whole), `folio_test_young()` (DAMON's and page_idle's
//! saved young bit) or `folio_test_referenced()` is set. These are counts per mapping, not
//! which pages: which pages are cold is not known from them. Where it is needed it can only be
//! estimated (e.g. spread the mapping's cold bytes over its pages evenly, or read the mapping's
//! pages' compressibility as a whole) or found by page-out sampling (`record::page_out`).
//!
//! Reclaim (and nothing else here) clears young bits between reads, so a mapping's
//! `Referenced` may fall: the highest reading is kept (a page touched since t0 stays touched)
//! and the curve's notes say so. Processes that exit or refuse (EPERM, EACCES) are skipped and
//! counted, never fatal; kernel threads and zmem itself are never written to.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::KernelError;

#[cfg(test)]
mod tests;

/// The ages read by default, in seconds: 10 s, 30 s, 1, 2, 5 and 10 minutes (issue 54's).
pub const DEFAULT_AGES_SECS: [u64; 6] = [10, 30, 60, 120, 300, 600];

/// `PF_KTHREAD` (include/linux/sched.h): the process-flags bit of a kernel thread.
pub(crate) const PF_KTHREAD: u64 = 0x0020_0000;

/// The longest smaps line read: the kernel prints at most a `PATH_MAX` path after ~80
/// characters of header, so a longer line is not smaps.
const MAX_LINE: u64 = 8192;

/// At most this many skip reasons are kept (the counts are exact).
const MAX_REASONS: usize = 32;

/// How the cold bytes were measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// `1` to `/proc/PID/clear_refs` at t0, then `/proc/PID/smaps`' `Referenced:` per mapping
    /// at each age.
    ClearRefsReferenced,
}

/// One mapping of a smaps file, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SmapsEntry {
    /// The mapping's start address (its identity from one read to the next).
    pub start: u64,
    /// Its end address (exclusive).
    pub end: u64,
    /// No file behind it: no path, `[heap]`, `[stack]` or `[anon:NAME]`.
    pub anonymous_mapping: bool,
    pub rss: u64,
    pub anonymous: u64,
    pub referenced: u64,
}

impl SmapsEntry {
    /// Its anonymous resident bytes: `Anonymous:`, or `Rss:` where a kernel prints no
    /// `Anonymous:` (before 2.6.34).
    pub(crate) fn anon_bytes(&self, has_anonymous: bool) -> u64 {
        if has_anonymous { self.anonymous } else { self.rss }
    }
}

/// A parsed smaps file: its mappings, and whether the kernel printed `Anonymous:` lines.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Smaps {
    pub mappings: Vec<SmapsEntry>,
    pub has_anonymous: bool,
}

impl Smaps {
    /// Anonymous resident bytes per anonymous mapping, by start address.
    pub fn anon_by_start(&self) -> BTreeMap<u64, (u64, u64)> {
        self.mappings
            .iter()
            .filter(|m| m.anonymous_mapping)
            .map(|m| (m.start, (m.anon_bytes(self.has_anonymous), m.referenced)))
            .collect()
    }

    /// `Referenced:` summed over every mapping, file-backed ones included.
    pub fn referenced_total(&self) -> u64 {
        self.mappings.iter().map(|m| m.referenced).sum()
    }
}

/// Whether a smaps header's path names no file.
fn is_anonymous_path(path: &str) -> bool {
    path.is_empty() || path == "[heap]" || path.starts_with("[stack") || path.starts_with("[anon:")
}

/// A header line (`start-end perms offset dev inode [path]`) as (start, end, anonymous), or
/// `None` where the line is a field line.
fn parse_header(line: &str) -> Option<(u64, u64, bool)> {
    let (range, rest) = line.split_once(' ')?;
    let (start, end) = range.split_once('-')?;
    let start = u64::from_str_radix(start, 16).ok()?;
    let end = u64::from_str_radix(end, 16).ok()?;
    // perms, offset, dev and inode, then the path (which may hold spaces).
    let mut rest = rest.trim_start();
    for _ in 0..4 {
        rest = rest.split_once(' ').map_or("", |(_, r)| r).trim_start();
    }
    Some((start, end, is_anonymous_path(rest.trim_end())))
}

/// A `Key:   N kB` field's bytes.
fn kb_field(line: &str, key: &str) -> Result<Option<u64>, String> {
    let Some(rest) = line.strip_prefix(key).and_then(|r| r.strip_prefix(':')) else {
        return Ok(None);
    };
    let kb = rest.trim().strip_suffix("kB").map(str::trim);
    let n = kb.and_then(|n| n.parse::<u64>().ok()).ok_or(format!("{line:?}: not N kB"))?;
    Ok(Some(n.saturating_mul(1024)))
}

/// Parses smaps text as it is read, one bounded line at a time (a process with a million
/// mappings is streamed, never held whole). Text that is not smaps is an `InvalidData` error.
pub fn parse_smaps(mut r: impl BufRead) -> std::io::Result<Smaps> {
    let bad = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
    let mut s = Smaps::default();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = r.by_ref().take(MAX_LINE).read_until(b'\n', &mut buf)?;
        if n == 0 {
            return Ok(s);
        }
        if n as u64 == MAX_LINE && buf.last() != Some(&b'\n') {
            return Err(bad(format!("a line longer than {MAX_LINE} bytes")));
        }
        let line = String::from_utf8_lossy(&buf);
        let line = line.trim_end();
        if let Some((start, end, anonymous_mapping)) = parse_header(line) {
            s.mappings.push(SmapsEntry { start, end, anonymous_mapping, ..Default::default() });
            continue;
        }
        let Some(m) = s.mappings.last_mut() else {
            return Err(bad(format!("{line:?} before any mapping's header")));
        };
        if let Some(b) = kb_field(line, "Rss").map_err(bad)? {
            m.rss = b;
        } else if let Some(b) = kb_field(line, "Anonymous").map_err(bad)? {
            m.anonymous = b;
            s.has_anonymous = true;
        } else if let Some(b) = kb_field(line, "Referenced").map_err(bad)? {
            m.referenced = b;
        }
    }
}

/// Reads `proc/PID/smaps` under `root`, streamed.
pub fn read_smaps(root: &Path, pid: u32) -> Result<Smaps, KernelError> {
    let path = pid_dir(root, pid).join("smaps");
    let f = std::fs::File::open(&path).map_err(|e| KernelError::io(&path, e))?;
    parse_smaps(BufReader::with_capacity(64 << 10, f)).map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidData {
            KernelError::parse(&path, e.to_string())
        } else {
            KernelError::io(&path, e)
        }
    })
}

/// A process's `stat` as (comm, flags, starttime).
pub(crate) fn parse_stat(text: &str) -> Option<(String, u64, u64)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    // After the comm: state (3), ppid ... flags (9) ... starttime (22); field 3 is index 0.
    let f: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    Some((comm, f.get(6)?.parse().ok()?, f.get(19)?.parse().ok()?))
}

/// Whether `pid` under `root` is a kernel thread (its `stat` flags hold `PF_KTHREAD`).
pub fn is_kernel_thread(root: &Path, pid: u32) -> Result<bool, KernelError> {
    Ok(identity(root, pid)?.kernel_thread)
}

/// Who a pid is now: its name, whether a kernel thread, and when it started (a pid reused by
/// another process starts at another time).
struct Identity {
    comm: String,
    kernel_thread: bool,
    start_time: u64,
}

fn identity(root: &Path, pid: u32) -> Result<Identity, KernelError> {
    let path = pid_dir(root, pid).join("stat");
    let text = std::fs::read_to_string(&path).map_err(|e| KernelError::io(&path, e))?;
    let (comm, flags, start_time) =
        parse_stat(&text).ok_or_else(|| KernelError::parse(&path, "not a stat line"))?;
    Ok(Identity { comm, kernel_thread: flags & PF_KTHREAD != 0, start_time })
}

/// Every user process under `root` (every numbered directory of `proc` that is not a kernel
/// thread nor this process), ascending: `zmem cold --all`. Which of them hold anonymous memory
/// is learned by [`ColdObserver::start`], which skips the others without writing to them.
pub fn user_processes(root: &Path) -> Result<Vec<u32>, KernelError> {
    let proc = root.join("proc");
    let dir = std::fs::read_dir(&proc).map_err(|e| KernelError::io(&proc, e))?;
    let me = std::process::id();
    let mut pids: Vec<u32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&p| p != me && is_kernel_thread(root, p).is_ok_and(|k| !k))
        .collect();
    pids.sort_unstable();
    Ok(pids)
}

/// One mapping's cold and vanished bytes at an age, from its anonymous bytes at t0 (`at_t0`),
/// now (`now`, `None`: the mapping is gone) and the highest `Referenced` read since t0.
///
/// A mapping that shrank lost pages that are neither cold nor resident: they count as
/// vanished. A mapping that grew holds pages faulted in since t0, each referenced by its fault:
/// the growth is taken off `referenced` before it is taken off the t0 bytes, so new pages
/// never hide old cold ones (where the growth replaced freed pages this counts a little too
/// much cold; the notes say when any mapping changed size).
pub fn mapping_cold(at_t0: u64, now: Option<u64>, referenced: u64) -> (u64, u64) {
    let Some(now) = now else { return (0, at_t0) };
    let grown = now.saturating_sub(at_t0);
    let old_referenced = referenced.saturating_sub(grown);
    let kept = at_t0.min(now);
    (kept.saturating_sub(old_referenced), at_t0 - kept)
}

/// What a process holds, and its cold bytes at each age read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessCold {
    pub pid: u32,
    /// Its `comm` (as read from the machine: untrusted text).
    pub comm: String,
    /// Anonymous resident bytes in its anonymous mappings at t0.
    pub anon_bytes: u64,
    /// Its anonymous mappings at t0.
    pub mappings: usize,
    /// Of `anon_bytes`, those not referenced since t0, at each age read.
    pub cold_bytes_at_age: Vec<u64>,
    /// Of `anon_bytes`, those in mappings gone or shrunk by each age (neither cold nor hot).
    pub vanished_bytes_at_age: Vec<u64>,
    /// `Referenced:` summed over all its mappings (file-backed ones too) at each age.
    pub referenced_total_bytes_at_age: Vec<u64>,
    /// It ended (or its pid was reused) before this age, in seconds; then it is left out of
    /// the curve's totals.
    pub exited_before_secs: Option<u64>,
    /// Its memory cgroup at t0, as the pressure reading names cgroups (`cgroups::memory_cgroup`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_cgroup: Option<String>,
}

impl ProcessCold {
    /// A process still running with `cold_bytes_at_age` idle of `anon_bytes` in one mapping,
    /// nothing vanished, nothing else referenced, its cgroup unknown: what a reading of a
    /// steady process holds (the fields left are set over it).
    pub fn steady(pid: u32, comm: &str, anon_bytes: u64, cold_bytes_at_age: Vec<u64>) -> Self {
        let n = cold_bytes_at_age.len();
        Self {
            pid,
            comm: comm.into(),
            anon_bytes,
            mappings: 1,
            cold_bytes_at_age,
            vanished_bytes_at_age: vec![0; n],
            referenced_total_bytes_at_age: vec![0; n],
            exited_before_secs: None,
            memory_cgroup: None,
        }
    }
}

/// Processes asked for that were not watched, by reason.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    /// Gone before t0 (ENOENT, ESRCH).
    pub exited: u32,
    /// Refused (EPERM, EACCES): another user's process without the privilege.
    pub refused: u32,
    /// Kernel threads: never written to.
    pub kernel_threads: u32,
    /// zmem itself: never written to.
    pub itself: u32,
    /// No anonymous resident memory: nothing to measure, not written to.
    pub no_anonymous: u32,
    /// The first reasons, one line each (pid: error).
    pub reasons: Vec<String>,
}

/// What measuring cost, in wall-clock seconds of this process's system calls (the kernel's
/// page-table walks are most of it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// Writing `clear_refs` of every watched process at t0.
    pub clear_secs: f64,
    /// Reading `smaps`, every process at t0 and at every age.
    pub read_secs: f64,
    /// smaps files read.
    pub reads: u64,
}

/// The result: cold bytes at each age read, over the processes watched to the last one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColdCurve {
    pub method: Method,
    /// The ages read so far, in seconds from t0 (a prefix of the ages asked for).
    pub ages_secs: Vec<u64>,
    /// The ages asked for.
    pub asked_ages_secs: Vec<u64>,
    /// When each age was actually read, in seconds from t0 (a late poll reads late).
    pub read_at_secs: Vec<f64>,
    /// Anonymous resident bytes at t0 of the processes in the totals.
    pub anon_bytes: u64,
    /// Of `anon_bytes`, the bytes not referenced since t0, at each age.
    pub cold_bytes_at_age: Vec<u64>,
    /// Of `anon_bytes`, the bytes in mappings gone or shrunk by each age.
    pub vanished_bytes_at_age: Vec<u64>,
    /// The rate at which idle memory came back: bytes idle at age i and referenced by age
    /// i+1, per second between the two reads (one less than the ages).
    pub returned_bytes_per_sec: Vec<f64>,
    pub per_process: Vec<ProcessCold>,
    pub skipped: Skipped,
    pub cost: Cost,
    pub notes: Vec<String>,
}

/// One memory cgroup's share of a curve: its processes watched to the last age.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CgroupCold {
    pub path: String,
    pub processes: usize,
    pub anon_bytes: u64,
    pub cold_bytes_at_age: Vec<u64>,
}

impl ColdCurve {
    /// The curve per memory cgroup (the processes in the totals, by their cgroup at t0), in
    /// path order; processes whose cgroup was not read are left out.
    pub fn by_cgroup(&self) -> Vec<CgroupCold> {
        let mut out: BTreeMap<&str, CgroupCold> = BTreeMap::new();
        let n = self.ages_secs.len();
        let kept = self.per_process.iter().filter(|p| p.exited_before_secs.is_none());
        for p in kept {
            let Some(path) = p.memory_cgroup.as_deref() else { continue };
            let c = out.entry(path).or_insert_with(|| CgroupCold {
                path: path.to_string(),
                processes: 0,
                anon_bytes: 0,
                cold_bytes_at_age: vec![0; n],
            });
            c.processes += 1;
            c.anon_bytes += p.anon_bytes;
            for (sum, cold) in c.cold_bytes_at_age.iter_mut().zip(&p.cold_bytes_at_age) {
                *sum += cold;
            }
        }
        out.into_values().collect()
    }

    /// `cold_bytes_at_age[i]` as a fraction of `anon_bytes` (0 where there is none).
    pub fn cold_fraction(&self, i: usize) -> f64 {
        let cold = self.cold_bytes_at_age.get(i).copied().unwrap_or(0);
        if self.anon_bytes == 0 { 0.0 } else { cold as f64 / self.anon_bytes as f64 }
    }
}

mod observer;
pub use observer::ColdObserver;

/// Checks ages: at least one, each over 0 s, strictly increasing.
pub fn check_ages(ages: &[u64]) -> Result<(), KernelError> {
    if ages.is_empty() {
        return Err(KernelError::Invalid("no age to read cold memory at".into()));
    }
    if ages[0] == 0 || ages.windows(2).any(|w| w[1] <= w[0]) {
        return Err(KernelError::Invalid(format!(
            "ages {ages:?}: each must be over 0 s and longer than the one before"
        )));
    }
    Ok(())
}

/// Where `pid`'s files are under `root`.
fn pid_dir(root: &Path, pid: u32) -> PathBuf {
    root.join("proc").join(pid.to_string())
}

/// Seconds since `t`, for [`Cost`].
fn secs_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// `age` seconds as a duration.
fn age(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

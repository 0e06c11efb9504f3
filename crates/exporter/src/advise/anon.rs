//! Which processes' anonymous pages the advisor reads for zswap, one page at a time, each a
//! uniform draw from the resident (present, not swapped) anonymous pages of every process: the
//! pages zswap would be offered when reclaim swaps them out.
//!
//! The draw is in two stages, each uniform so that their product is:
//! 1. a process, with probability proportional to its resident anonymous pages (`RssAnon` of
//!    /proc/PID/status, the kernel's `MM_ANONPAGES` counter), the list read again every
//!    [`LIST_EVERY`];
//! 2. a page of that process, by rejection: a virtual page drawn uniformly over its private
//!    anonymous mappings (/proc/PID/maps as `zmem capture` reads it:
//!    `zmem_kernel::capture::anon_mappings`), kept when its pagemap entry says present and not
//!    swapped (`zmem_kernel::record::pagemap::entries`, `capture::resident_not_swapped`). Draws
//!    go [`PROBES`] at a time (one pagemap open); a process none of whose draws hit is tried
//!    again next round, and given up after [`MAX_BATCHES`] batches until the next list
//!    (counted `sparse`: a process whose anonymous address space is almost all unpopulated, as
//!    a runtime's huge reservations, is under-represented by that much).
//!
//! The page is then read from /proc/PID/mem (`capture::read_page`, capture's own reader).
//! Everything a moving process can do is counted, never fatal: it exits (its files vanish
//! (ENOENT), its reads fail with ESRCH or end early, or it is a zombie: `exited`), refuses
//! (permissions: `refused`), or a page fails alone (a mapping torn down under the read:
//! `unreadable`). A process that exited or refused leaves the list until the next one.
//!
//! Pages shared copy-on-write after a fork count once in each process's `RssAnon` and can be
//! drawn through each: the sample is of (process, page) pairs, the population (`AnonPages` of
//! /proc/meminfo) of distinct pages; on a host of few forked workers the two differ little.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use zmem_kernel::capture::{self, Mapping, PageReadError};
use zmem_kernel::record::pagemap;
use zmem_pages::prng::SplitMix64;

/// How often the process list and its weights are read again.
pub const LIST_EVERY: Duration = Duration::from_secs(30);
/// Virtual pages drawn per pagemap read.
pub const PROBES: usize = 64;
/// Batches of draws a process gets before it is given up (`sparse`).
pub const MAX_BATCHES: u32 = 16;

/// What could not be read, by why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skips {
    /// The process exited before or while it was read.
    pub exited: u64,
    /// The process's files could not be opened or read (permissions, a kernel thread).
    pub refused: u64,
    /// One page could not be read (the process is still there).
    pub unreadable: u64,
    /// A process whose draws found no resident page ([`MAX_BATCHES`] x [`PROBES`]).
    pub sparse: u64,
}

impl Skips {
    /// Every reason with its label value, for the metric.
    pub fn labelled(&self) -> [(&'static str, u64); 4] {
        [
            ("process_exited", self.exited),
            ("refused", self.refused),
            ("page_unreadable", self.unreadable),
            ("sparse", self.sparse),
        ]
    }

    /// Reads that failed (everything but `sparse`, which read nothing).
    pub fn failures(&self) -> u64 {
        self.exited + self.refused + self.unreadable
    }
}

/// The processes and the draws in progress.
#[derive(Debug)]
pub struct Procs {
    proc_root: PathBuf,
    page_size: u64,
    pids: Vec<u32>,
    /// Cumulative resident anonymous pages of `pids`, for the weighted draw.
    cum: Vec<u64>,
    listed_at: Option<Instant>,
    maps: HashMap<u32, Vec<Mapping>>,
    rng: SplitMix64,
    /// The process being drawn from, and the batches it has had.
    pending: Option<(u32, u32)>,
    pub skips: Skips,
    /// The last error, for the log.
    pub last_error: Option<String>,
}

/// `RssAnon` of a /proc/PID/status text, in pages; `None` without one (kernel threads).
pub fn rss_anon_pages(status: &str, page_size: u64) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("RssAnon:"))?;
    let kb: u64 = line["RssAnon:".len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024 / page_size.max(1))
}

impl Procs {
    pub fn new(proc_root: &Path, page_size: usize, seed: u64) -> Self {
        Self {
            proc_root: proc_root.to_path_buf(),
            page_size: page_size as u64,
            pids: Vec::new(),
            cum: Vec::new(),
            listed_at: None,
            maps: HashMap::new(),
            rng: SplitMix64::new(seed ^ 0x5a5a_5a5a),
            pending: None,
            skips: Skips::default(),
            last_error: None,
        }
    }

    /// Reads the process list and weights again when [`LIST_EVERY`] has passed.
    pub fn refresh_if_due(&mut self, now: Instant) {
        if self.listed_at.is_some_and(|t| now.duration_since(t) < LIST_EVERY) {
            return;
        }
        self.listed_at = Some(now);
        self.maps.clear();
        self.pids.clear();
        self.cum.clear();
        let me = std::process::id();
        let Ok(dir) = std::fs::read_dir(&self.proc_root) else { return };
        let mut pids: Vec<u32> = dir
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .filter(|&p| p != me)
            .collect();
        pids.sort_unstable();
        let mut total = 0u64;
        for pid in pids {
            let path = self.proc_root.join(pid.to_string()).join("status");
            // A process that exits meanwhile, or a kernel thread (no RssAnon): not listed.
            let Ok(text) = std::fs::read_to_string(path) else { continue };
            let Some(w) = rss_anon_pages(&text, self.page_size).filter(|&w| w > 0) else {
                continue;
            };
            total += w;
            self.pids.push(pid);
            self.cum.push(total);
        }
        if self.pending.is_some_and(|(p, _)| !self.pids.contains(&p)) {
            self.pending = None;
        }
    }

    /// Processes listed with resident anonymous pages.
    pub fn listed(&self) -> usize {
        self.pids.len()
    }

    fn pick(&mut self) -> Option<u32> {
        let total = *self.cum.last()?;
        let r = self.rng.below(total);
        let i = self.cum.partition_point(|&c| c <= r);
        self.pids.get(i).copied()
    }

    /// Drops `pid` from the list (it exited): its weight goes with it.
    fn drop_pid(&mut self, pid: u32) {
        self.maps.remove(&pid);
        if self.pending.is_some_and(|(p, _)| p == pid) {
            self.pending = None;
        }
        if let Some(i) = self.pids.iter().position(|&p| p == pid) {
            let w = self.cum[i] - if i == 0 { 0 } else { self.cum[i - 1] };
            self.pids.remove(i);
            self.cum.remove(i);
            for c in &mut self.cum[i..] {
                *c -= w;
            }
        }
    }

    /// A failure reading `pid`'s files: the process exited when the error says so (ESRCH,
    /// ENOENT), or it is gone or a zombie ([`Procs::exited`]); else it refused. Either way it
    /// leaves the list until the next one ([`LIST_EVERY`]), so a process that refuses costs
    /// one try per list, not one per draw.
    fn fail(&mut self, pid: u32, e: Option<&std::io::Error>, why: String) {
        if e.is_some_and(capture::process_gone) || self.exited(pid) {
            self.skips.exited += 1;
        } else {
            self.skips.refused += 1;
        }
        self.drop_pid(pid);
        self.last_error = Some(format!("pid {pid}: {why}"));
    }

    /// Whether `pid` has exited: its /proc directory is gone, or it is a zombie or dead
    /// (/proc/PID/stat state `Z` or `X`: the directory stays until the parent reaps it, and
    /// its memory files fail).
    fn exited(&self, pid: u32) -> bool {
        let stat = std::fs::read_to_string(self.proc_root.join(pid.to_string()).join("stat"));
        let Ok(stat) = stat else {
            return !self.proc_root.join(pid.to_string()).exists();
        };
        // pid (comm) STATE ...: comm may hold spaces and parentheses, so after the last ')'.
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
        matches!(state, Some("Z" | "X"))
    }

    /// Reads one uniformly drawn resident anonymous page into `buf` (one page); its process
    /// and address, or `None` when this round read none (no process, a miss, a failure:
    /// counted in [`Procs::skips`]).
    pub fn read_one(&mut self, buf: &mut [u8]) -> Option<(u32, u64)> {
        let (pid, batches) = match self.pending {
            Some(p) => p,
            None => (self.pick()?, 0),
        };
        let ps = self.page_size;
        if !self.maps.contains_key(&pid) {
            match capture::anon_mappings(&self.proc_root, pid) {
                Ok(m) => {
                    self.maps.insert(pid, m);
                }
                Err(e) => {
                    self.fail(pid, e.io_error(), format!("maps: {}", e.reason()));
                    return None;
                }
            }
        }
        let maps = self.maps.get(&pid)?;
        let total: u64 = maps.iter().map(|m| (m.end - m.start) / ps).sum();
        if total == 0 {
            // Its anonymous mappings went since it was listed: left until the next list.
            self.pending = None;
            self.drop_pid(pid);
            return None;
        }
        let draws: Vec<u64> = (0..PROBES)
            .map(|_| {
                let mut i = self.rng.below(total);
                let mut addr = 0;
                for m in maps {
                    let n = (m.end - m.start) / ps;
                    if i < n {
                        addr = m.start + i * ps;
                        break;
                    }
                    i -= n;
                }
                addr
            })
            .collect();
        let mut sorted = draws.clone();
        sorted.sort_unstable();
        let entries = match pagemap::entries(&self.proc_root, pid, &sorted, ps) {
            Ok(e) => e,
            Err(e) => {
                let io = e.io_error();
                self.fail(pid, io, e.to_string());
                return None;
            }
        };
        // The first draw, in the order drawn, that hit a resident page: uniform among them.
        let hit = draws.iter().find(|&&a| {
            let i = sorted.partition_point(|&s| s < a);
            entries.get(i).is_some_and(|&e| capture::resident_not_swapped(e))
        });
        let Some(&vaddr) = hit else {
            if batches + 1 >= MAX_BATCHES {
                // Given up until the next list: drawn again, it would cost as much again.
                self.skips.sparse += 1;
                self.drop_pid(pid);
            } else {
                self.pending = Some((pid, batches + 1));
            }
            return None;
        };
        self.pending = None;
        if let Err(e) = zmem_pages::private::hold_captured_memory() {
            self.last_error = Some(format!("prctl(PR_SET_DUMPABLE): {e}"));
            return None;
        }
        let path = self.proc_root.join(pid.to_string()).join("mem");
        let mem = match File::open(&path) {
            Ok(f) => f,
            Err(e) => {
                self.fail(pid, Some(&e), format!("mem: {e}"));
                return None;
            }
        };
        match capture::read_page(&mem, vaddr, buf) {
            Ok(()) => Some((pid, vaddr)),
            Err(PageReadError::Gone(why)) => {
                // Exited mid-read: its directory may linger until it is reaped.
                self.skips.exited += 1;
                self.drop_pid(pid);
                self.last_error = Some(format!("pid {pid}: {why}"));
                None
            }
            Err(PageReadError::Unreadable(why)) => {
                self.skips.unreadable += 1;
                self.last_error = Some(format!("pid {pid} at {vaddr:#x}: {why}"));
                None
            }
        }
    }
}

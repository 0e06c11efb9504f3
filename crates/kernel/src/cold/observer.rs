//! [`ColdObserver`]: clears the young bits of the processes asked for at t0, then reads their
//! smaps at each age as it passes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{
    ColdCurve, Cost, MAX_REASONS, Method, ProcessCold, Skipped, age, check_ages, identity,
    mapping_cold, pid_dir, read_smaps, secs_since,
};
use crate::KernelError;

/// A process being watched.
#[derive(Debug)]
struct Watched {
    pid: u32,
    comm: String,
    /// `stat`'s starttime at t0: a pid reused by another process has another.
    start_time: u64,
    /// Anonymous resident bytes per anonymous mapping at t0, by start address.
    at_t0: BTreeMap<u64, u64>,
    /// The highest `Referenced` read per mapping since t0 (reclaim may clear bits between).
    max_referenced: BTreeMap<u64, u64>,
    cold: Vec<u64>,
    vanished: Vec<u64>,
    referenced_total: Vec<u64>,
    exited_before: Option<u64>,
    memory_cgroup: Option<String>,
}

/// What the reads found worth saying, counted over every mapping and age.
#[derive(Debug, Default)]
struct Seen {
    /// Mapping readings whose `Referenced` fell below an earlier one.
    fell: u64,
    /// Mapping readings whose anonymous bytes differed from t0's (grown, shrunk or gone).
    resized: u64,
}

/// Cold memory by age for a set of processes: [`ColdObserver::start`] clears their referenced
/// bits (t0), [`ColdObserver::poll`] reads every age that has passed, [`ColdObserver::curve`]
/// gives what was read so far (a run stopped early keeps its ages read).
#[derive(Debug)]
pub struct ColdObserver {
    root: PathBuf,
    ages: Vec<u64>,
    t0: Instant,
    watched: Vec<Watched>,
    skipped: Skipped,
    /// Seconds from t0 of each age's read (ages read = its length).
    read_at: Vec<f64>,
    cost: Cost,
    seen: Seen,
}

impl ColdObserver {
    /// Starts watching `pids` on the running kernel, to be read at `ages` (seconds from t0).
    pub fn start(pids: &[u32], ages: &[u64]) -> Result<Self, KernelError> {
        Self::start_at(Path::new("/"), pids, ages)
    }

    /// [`ColdObserver::start`] with the kernel's files under `root` (`root/proc/PID/...`).
    /// Each process is read (its anonymous bytes per mapping) and then has `1` written to its
    /// `clear_refs`; t0 is when the last write ended, so every process is at least as old as
    /// each age when it is read. Only `ages` or `pids` as given can fail this: a process that
    /// is gone, refuses, is a kernel thread or is zmem is skipped and counted.
    pub fn start_at(root: &Path, pids: &[u32], ages: &[u64]) -> Result<Self, KernelError> {
        check_ages(ages)?;
        if pids.is_empty() {
            return Err(KernelError::Invalid("no process to measure cold memory of".into()));
        }
        let mut o = Self {
            root: root.to_path_buf(),
            ages: ages.to_vec(),
            t0: Instant::now(),
            watched: Vec::new(),
            skipped: Skipped::default(),
            read_at: Vec::new(),
            cost: Cost::default(),
            seen: Seen::default(),
        };
        for &pid in pids {
            o.begin(pid);
        }
        o.t0 = Instant::now();
        Ok(o)
    }

    fn begin(&mut self, pid: u32) {
        if pid == std::process::id() {
            self.skipped.itself += 1;
            return;
        }
        match self.watch(pid) {
            Ok(Some(w)) => self.watched.push(w),
            Ok(None) => {}
            Err(e) => {
                let gone = is_gone(&e);
                if gone {
                    self.skipped.exited += 1
                } else {
                    self.skipped.refused += 1
                }
                if self.skipped.reasons.len() < MAX_REASONS {
                    self.skipped.reasons.push(format!("{pid}: {e}"));
                }
            }
        }
    }

    /// Reads `pid`'s anonymous mappings and clears its referenced bits; `None`: not to be
    /// watched (a kernel thread, or no anonymous memory), counted.
    fn watch(&mut self, pid: u32) -> Result<Option<Watched>, KernelError> {
        let id = identity(&self.root, pid)?;
        if id.kernel_thread {
            self.skipped.kernel_threads += 1;
            return Ok(None);
        }
        let t = Instant::now();
        let smaps = read_smaps(&self.root, pid);
        self.cost.read_secs += secs_since(t);
        self.cost.reads += 1;
        let at_t0: BTreeMap<u64, u64> = smaps?
            .anon_by_start()
            .into_iter()
            .filter(|(_, (a, _))| *a > 0)
            .map(|(s, (a, _))| (s, a))
            .collect();
        if at_t0.is_empty() {
            self.skipped.no_anonymous += 1;
            return Ok(None);
        }
        let path = pid_dir(&self.root, pid).join("clear_refs");
        let t = Instant::now();
        let written = std::fs::write(&path, "1");
        self.cost.clear_secs += secs_since(t);
        written.map_err(|e| KernelError::io(&path, e))?;
        // The pid could have been reused between the read and the write: then this watches
        // nothing (the write only cleared bits of another process, which reclaim sets again).
        if identity(&self.root, pid)?.start_time != id.start_time {
            return Err(KernelError::io(path, std::io::Error::from_raw_os_error(libc::ESRCH)));
        }
        Ok(Some(Watched {
            pid,
            comm: id.comm,
            start_time: id.start_time,
            at_t0,
            max_referenced: BTreeMap::new(),
            cold: Vec::new(),
            vanished: Vec::new(),
            referenced_total: Vec::new(),
            exited_before: None,
            memory_cgroup: std::fs::read_to_string(pid_dir(&self.root, pid).join("cgroup"))
                .ok()
                .and_then(|t| crate::cgroups::memory_cgroup(&self.root, &t)),
        }))
    }

    /// When t0 was.
    pub fn t0(&self) -> Instant {
        self.t0
    }

    /// The ages asked for, in seconds.
    pub fn ages(&self) -> &[u64] {
        &self.ages
    }

    /// How many ages have been read.
    pub fn ages_read(&self) -> usize {
        self.read_at.len()
    }

    /// When the next age is due to be read; `None` when every age has been.
    pub fn next_due(&self) -> Option<Instant> {
        self.ages.get(self.read_at.len()).map(|&a| self.t0 + age(a))
    }

    /// How many processes are watched now (started, and not ended since).
    pub fn watching(&self) -> usize {
        self.watched.iter().filter(|w| w.exited_before.is_none()).count()
    }

    /// Reads every age that has passed by `now` (one read of each process serves them all when
    /// a poll comes late); whether anything was read.
    pub fn poll(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.t0);
        let first = self.read_at.len();
        let due = self.ages[first..].iter().take_while(|&&a| age(a) <= elapsed).count();
        if due == 0 {
            return false;
        }
        let age_secs = self.ages[first];
        for w in self.watched.iter_mut().filter(|w| w.exited_before.is_none()) {
            match observe(&self.root, w, &mut self.cost, &mut self.seen) {
                Some((cold, vanished, total)) => {
                    w.cold.extend(std::iter::repeat_n(cold, due));
                    w.vanished.extend(std::iter::repeat_n(vanished, due));
                    w.referenced_total.extend(std::iter::repeat_n(total, due));
                }
                None => w.exited_before = Some(age_secs),
            }
        }
        self.read_at.extend(std::iter::repeat_n(elapsed.as_secs_f64(), due));
        true
    }

    /// The curve over the ages read so far.
    pub fn curve(&self) -> ColdCurve {
        let n = self.read_at.len();
        let kept: Vec<&Watched> =
            self.watched.iter().filter(|w| w.exited_before.is_none()).collect();
        let sum = |f: fn(&Watched) -> &Vec<u64>| -> Vec<u64> {
            (0..n).map(|i| kept.iter().map(|w| f(w)[i]).sum()).collect()
        };
        let cold = sum(|w| &w.cold);
        let vanished = sum(|w| &w.vanished);
        let returned = returned_per_sec(&cold, &vanished, &self.read_at);
        ColdCurve {
            method: Method::ClearRefsReferenced,
            ages_secs: self.ages[..n].to_vec(),
            asked_ages_secs: self.ages.clone(),
            read_at_secs: self.read_at.clone(),
            anon_bytes: kept.iter().map(|w| w.at_t0.values().sum::<u64>()).sum(),
            cold_bytes_at_age: cold,
            vanished_bytes_at_age: vanished,
            returned_bytes_per_sec: returned,
            per_process: self.watched.iter().map(process_cold).collect(),
            skipped: self.skipped.clone(),
            cost: self.cost,
            notes: self.notes(n),
        }
    }

    fn notes(&self, n: usize) -> Vec<String> {
        let mut notes = Vec::new();
        if self.watched.is_empty() {
            notes.push("no process could be watched (see skipped)".to_string());
        }
        let ended = self.watched.len() - self.watching();
        if ended > 0 {
            notes.push(format!(
                "{ended} process(es) ended before the last age read and are left out of the totals"
            ));
        }
        if self.seen.fell > 0 {
            notes.push(format!(
                "Referenced fell in {} mapping reading(s): reclaim cleared young bits \
                 (mm/rmap.c folio_referenced()); each mapping's highest reading is kept",
                self.seen.fell
            ));
        }
        if self.seen.resized > 0 {
            notes.push(format!(
                "{} mapping reading(s) found a mapping grown, shrunk or gone since t0: growth \
                 counts as new referenced pages, the rest as vanished bytes",
                self.seen.resized
            ));
        }
        if n < self.ages.len() {
            notes.push(format!(
                "stopped after {n} of {} ages: ages from {} s on were not read",
                self.ages.len(),
                self.ages[n]
            ));
        }
        notes
    }
}

/// Reads one process at an age: (cold, vanished, referenced total), or `None` where it ended
/// (or its pid now names another process, or its smaps can no longer be read).
fn observe(
    root: &Path,
    w: &mut Watched,
    cost: &mut Cost,
    seen: &mut Seen,
) -> Option<(u64, u64, u64)> {
    if identity(root, w.pid).ok()?.start_time != w.start_time {
        return None;
    }
    let t = Instant::now();
    let smaps = read_smaps(root, w.pid);
    cost.read_secs += secs_since(t);
    cost.reads += 1;
    let smaps = smaps.ok()?;
    let now = smaps.anon_by_start();
    let (mut cold, mut vanished) = (0, 0);
    for (start, &at_t0) in &w.at_t0 {
        let cur = now.get(start).copied();
        let max = w.max_referenced.entry(*start).or_insert(0);
        if let Some((_, referenced)) = cur {
            seen.fell += u64::from(referenced < *max);
            *max = (*max).max(referenced);
        }
        seen.resized += u64::from(cur.map(|(a, _)| a) != Some(at_t0));
        let (c, v) = mapping_cold(at_t0, cur.map(|(a, _)| a), *max);
        cold += c;
        vanished += v;
    }
    Some((cold, vanished, smaps.referenced_total()))
}

/// Bytes idle at one age and referenced by the next, per second between the two reads: the
/// fall of the cold bytes less what vanished meanwhile (freed memory did not come back).
pub(super) fn returned_per_sec(cold: &[u64], vanished: &[u64], read_at: &[f64]) -> Vec<f64> {
    (1..cold.len())
        .map(|i| {
            let fell = cold[i - 1].saturating_sub(cold[i]);
            let back = fell.saturating_sub(vanished[i].saturating_sub(vanished[i - 1]));
            let dt = read_at[i] - read_at[i - 1];
            if dt > 0.0 { back as f64 / dt } else { 0.0 }
        })
        .collect()
}

fn process_cold(w: &Watched) -> ProcessCold {
    ProcessCold {
        pid: w.pid,
        comm: w.comm.clone(),
        anon_bytes: w.at_t0.values().sum(),
        mappings: w.at_t0.len(),
        cold_bytes_at_age: w.cold.clone(),
        vanished_bytes_at_age: w.vanished.clone(),
        referenced_total_bytes_at_age: w.referenced_total.clone(),
        exited_before_secs: w.exited_before,
        memory_cgroup: w.memory_cgroup.clone(),
    }
}

/// Whether an error says the process is gone (ENOENT, ESRCH) rather than refusing.
fn is_gone(e: &KernelError) -> bool {
    e.io_error()
        .and_then(std::io::Error::raw_os_error)
        .is_some_and(|n| n == libc::ENOENT || n == libc::ESRCH)
}

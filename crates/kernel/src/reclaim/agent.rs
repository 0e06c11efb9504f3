//! The agent: which processes it watches, when it pauses, and one look ([`Agent::tick`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::cpu::{Budget, CpuClock, process_cpu_seconds};
use super::look::Proc;
use super::{AgentConfig, AgentStats, AgentStatus, procfs};
use crate::KernelError;
use crate::record::page_out::{self, Madvise, Pager};

/// The proactive-reclaim agent (see the module doc).
pub struct Agent<P: Pager = Madvise> {
    pub(super) config: AgentConfig,
    pub(super) pager: P,
    pub(super) proc_root: PathBuf,
    pub(super) page_size: u64,
    /// This process: never watched.
    me: u32,
    pub(super) procs: BTreeMap<u32, Proc>,
    pub(super) stats: AgentStats,
    last_pause: Option<String>,
    pub(super) last_error: Option<String>,
    started_unix: u64,
    updated_unix: u64,
    pub(super) budget: Budget,
    /// Whether this tick drained the LRU batches already.
    pub(super) drained: bool,
    /// Why draining failed, from the first failure on (not tried again).
    pub(super) drain_error: Option<String>,
}

impl Agent<Madvise> {
    /// The agent on this machine's /proc with the kernel's pager. Refused without root (paging
    /// out another process's memory needs CAP_SYS_NICE), without process_madvise, or without
    /// an active swap area.
    pub fn new(config: AgentConfig) -> Result<Self, KernelError> {
        if let Some(why) = page_out::unavailable_reason() {
            return Err(KernelError::Unsupported(format!("the reclaim agent cannot run: {why}")));
        }
        if crate::stat::swaps()?.is_empty() {
            return Err(KernelError::Unsupported(
                "the reclaim agent needs an active swap area (zram or a disk): none is".into(),
            ));
        }
        let ps = crate::capture::system_page_size() as u64;
        Self::with(config, Madvise::new(ps), PathBuf::from("/proc"))
    }
}

impl<P: Pager> Agent<P> {
    /// The agent over `proc_root` (`/proc`, or a test's fake tree) with `pager`.
    pub fn with(config: AgentConfig, pager: P, proc_root: PathBuf) -> Result<Self, KernelError> {
        config.check()?;
        let per_tick = config.cpu_budget_percent / 100.0 * config.period_secs as f64;
        let period = config.period_secs as f64;
        Ok(Self {
            config,
            pager,
            proc_root,
            page_size: crate::capture::system_page_size() as u64,
            me: std::process::id(),
            procs: BTreeMap::new(),
            stats: AgentStats::default(),
            last_pause: None,
            last_error: None,
            started_unix: unix_now(),
            updated_unix: 0,
            budget: Budget::new(Box::new(process_cpu_seconds), per_tick, period),
            drained: false,
            drain_error: None,
        })
    }

    /// Measures the CPU budget on `clock` (seconds) instead of this process's CPU clock: for
    /// tests, and for a caller that runs the agent beside other work on a thread of its own
    /// ([`super::thread_cpu_seconds`], set on that thread).
    pub fn set_cpu_clock(&mut self, clock: CpuClock) {
        self.budget.set_clock(clock);
    }

    /// The page size pages are counted in (the machine's by default; a test's fake /proc may
    /// use another).
    pub fn set_page_size(&mut self, page_size: u64) {
        self.page_size = page_size.max(1);
    }

    /// One look: pages that came back are counted; unless paused, processes whose last look is
    /// T old are looked at again and their idle mappings paged out, within the CPU budget. A
    /// process that exits is dropped, never an error; other failures on a process leave it
    /// alone this tick and are counted ([`AgentStatus::last_error`]).
    pub fn tick(&mut self, now: Instant) -> Result<(), KernelError> {
        self.budget.begin_tick();
        self.drained = false;
        self.stats.ticks += 1;
        self.updated_unix = unix_now();
        let pids = self.select()?;
        self.stats.processes = pids.len() as u64;
        for &pid in &pids {
            if let Err(e) = self.came_back(pid) {
                self.process_failed(pid, e);
            }
            self.rest_due(pid);
        }
        match self.pause_reason()? {
            Some(why) => {
                self.stats.paused_ticks += 1;
                self.last_pause = Some(why);
            }
            None => self.reclaim(&pids, now),
        }
        let out: u64 = self.procs.values().map(Proc::out_pages).sum();
        self.stats.out_bytes = out * self.page_size;
        self.budget.end_tick();
        self.stats.cpu_seconds = self.budget.total();
        Ok(())
    }

    /// Unless the budget is spent: first the page-outs a spent budget cut short (their
    /// mappings were found idle at the last look), then the processes due a look, the longest
    /// unlooked first.
    fn reclaim(&mut self, pids: &[u32], now: Instant) {
        let t = Duration::from_secs(self.config.cold_age_secs);
        let pending: Vec<u32> =
            pids.iter().copied().filter(|p| self.procs.get(p).is_some_and(Proc::pending)).collect();
        let mut due: Vec<(Option<Instant>, u32)> = pids
            .iter()
            .filter_map(|&pid| {
                self.procs.get(&pid).filter(|p| !p.refused).map(|p| (p.cleared_at, pid))
            })
            .filter(|(at, _)| at.is_none_or(|at| now.saturating_duration_since(at) >= t))
            .collect();
        due.sort();
        for pid in pending {
            if self.budget.exhausted() {
                return;
            }
            if let Err(e) = self.page_out_pending(pid) {
                self.process_failed(pid, e);
            }
        }
        for (_, pid) in due {
            if self.budget.exhausted() {
                return;
            }
            if let Err(e) = self.look(pid, now).and_then(|()| self.page_out_pending(pid)) {
                self.process_failed(pid, e);
            }
        }
    }

    /// The processes to watch now, ascending; the state of any other is dropped (exited,
    /// reused pid, excluded since).
    fn select(&mut self) -> Result<Vec<u32>, KernelError> {
        let candidates = match &self.config.pids {
            Some(p) => p.clone(),
            None => procfs::pids(&self.proc_root)?,
        };
        let watched: BTreeMap<u32, u64> =
            candidates.into_iter().filter_map(|pid| Some((pid, self.watchable(pid)?))).collect();
        let dropped: Vec<u32> = self
            .procs
            .iter()
            .filter(|(pid, p)| watched.get(pid) != Some(&p.start_time))
            .map(|(&pid, _)| pid)
            .collect();
        for pid in dropped {
            self.drop_process(pid);
        }
        for (&pid, &start_time) in &watched {
            self.procs.entry(pid).or_insert_with(|| Proc::new(start_time));
        }
        Ok(watched.into_keys().collect())
    }

    /// The start time of `pid` if the agent may page it out: a user process, not this one,
    /// not excluded. A process whose cgroup cannot be read while cgroups are excluded is left
    /// alone (it might be in one).
    fn watchable(&self, pid: u32) -> Option<u64> {
        let ex = &self.config.exclude;
        if pid == self.me || ex.pids.contains(&pid) {
            return None;
        }
        let id = procfs::identity(&self.proc_root, pid).ok()?;
        if id.kernel_thread || ex.comms.contains(&id.comm) {
            return None;
        }
        if !ex.cgroups.is_empty() {
            let cg = procfs::memory_cgroup(&self.proc_root, pid).ok()??;
            if ex.cgroups.iter().any(|prefix| procfs::under(&cg, prefix)) {
                return None;
            }
        }
        Some(id.start_time)
    }

    fn drop_process(&mut self, pid: u32) {
        self.procs.remove(&pid);
        self.pager.forget(pid);
    }

    /// A failure on `pid`: dropped if it exited (or is exiting: its memory is gone), else
    /// counted; a refusal (EACCES, EPERM) leaves it alone while it lives, anything else until
    /// the next tick.
    pub(super) fn process_failed(&mut self, pid: u32, e: KernelError) {
        let known = self.procs.get(&pid).map(|p| p.start_time);
        let alive =
            procfs::identity(&self.proc_root, pid).is_ok_and(|id| Some(id.start_time) == known);
        let gone = e.io_error().is_some_and(|io| {
            io.kind() == std::io::ErrorKind::UnexpectedEof || io.raw_os_error() == Some(libc::ESRCH)
        });
        if !alive || gone {
            self.drop_process(pid);
            return;
        }
        self.stats.errors += 1;
        self.last_error = Some(format!("process {pid}: {e}"));
        let refused =
            e.io_error().is_some_and(|io| io.kind() == std::io::ErrorKind::PermissionDenied);
        if let Some(p) = self.procs.get_mut(&pid) {
            p.drop_pending();
            p.refused = refused;
        }
    }

    /// Why not to page out now, if not: memory pressure over the limit, or no room in swap.
    fn pause_reason(&mut self) -> Result<Option<String>, KernelError> {
        if let Some(avg10) = procfs::psi_some_avg10(&self.proc_root)? {
            self.stats.last_psi_some_avg10 = avg10;
            let limit = self.config.psi_some_avg10_limit;
            if avg10 > limit {
                return Ok(Some(format!(
                    "memory pressure: PSI some avg10 {avg10:.2} % is over the limit {limit} %"
                )));
            }
        }
        procfs::swap_full(&self.proc_root)
    }

    /// What the agent has done since it started.
    pub fn stats(&self) -> AgentStats {
        self.stats
    }

    /// What it was asked to do.
    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The status file's contents.
    pub fn status(&self) -> AgentStatus {
        AgentStatus {
            schema: super::STATUS_SCHEMA,
            mechanism: "process_madvise".into(),
            started_unix: self.started_unix,
            updated_unix: self.updated_unix,
            config: self.config.clone(),
            stats: self.stats,
            last_pause: self.last_pause.clone(),
            last_error: self.last_error.clone(),
        }
    }
}

impl<P: Pager> std::fmt::Debug for Agent<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("config", &self.config)
            .field("proc_root", &self.proc_root)
            .field("processes", &self.procs.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// Seconds since the Unix epoch (0 on a clock before it).
pub(super) fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

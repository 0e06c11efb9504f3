//! Proactive reclaim by `memory.reclaim` on cgroup v2 (`zmem memcg-reclaim`), as Meta's Senpai
//! drives it under TMO: the kernel picks the pages (the coldest of the cgroup's LRUs), zmem
//! says how much and when. Facts below are Linux 6.18's.
//!
//! Writing `"<bytes> swappiness=max"` to a cgroup's `memory.reclaim` reclaims up to that much
//! from it and its descendants, anonymous pages only (mm/memcontrol.c `memory_reclaim()`, the
//! token table in mm/vmscan.c: `swappiness=max` is `MEMORY_RECLAIM_SWAPPINESS_MAX`), in the
//! writer's context, so the driver's CPU clock counts the reclaim and the compression; the
//! write fails with EAGAIN where less was reclaimed than asked. A kernel without the token
//! refuses it (EINVAL) and gets the bare amount, which reclaims file pages too.
//!
//! Each cgroup has a target: the bytes idle for T that the lab measured in it (the cold curve's
//! processes, by memory cgroup). Every period, for each cgroup whose own memory PSI `some
//! avg10` is under the limit, and while the CPU budget lasts (the agent's bucket, `cpu.rs`), the
//! driver asks for what is still to move: the target less the growth of the cgroup's
//! `memory.swap.current` since it started, at most a quarter of the target a period (a first
//! pass over a few periods, not one burst). What came back is the growth of `memory.stat`'s
//! `workingset_refault_anon` (pages), counted in pages of the machine's size. Swap nearly full or
//! none pauses every cgroup, as the agent does.
//!
//! Processes cannot be excluded (the cgroup is the unit), so the lab uses this only where
//! nothing is excluded by pid or name; excluded cgroups get no target.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::cpu::{Budget, CpuClock, process_cpu_seconds};
use super::{AgentStats, Predicted, procfs};
use crate::KernelError;

/// The most of a cgroup's target asked for in one period: a quarter.
const STEP_SHARE: f64 = 0.25;

/// One cgroup and the bytes to move out of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemcgTarget {
    /// Its path from the v2 hierarchy's root (`/system.slice/app.service`).
    pub path: String,
    pub bytes: u64,
}

/// What the driver does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemcgReclaim {
    /// T: the targets are the bytes idle for T.
    pub cold_age_secs: u64,
    pub period_secs: u64,
    /// Of one core, in percent.
    pub cpu_budget_percent: f64,
    /// Percent; a cgroup whose memory PSI some avg10 is over it is left alone that period.
    pub psi_some_avg10_limit: f64,
    pub targets: Vec<MemcgTarget>,
    /// The lab's prediction, carried into the status.
    #[serde(default)]
    pub predicted: Option<Predicted>,
}

impl MemcgReclaim {
    pub fn check(&self) -> Result<(), KernelError> {
        let bad = |m: String| Err(KernelError::Invalid(format!("memory.reclaim driver: {m}")));
        if self.cold_age_secs == 0 || self.cold_age_secs > super::MAX_COLD_AGE_SECS {
            return bad(format!("the cold age {} s is not 1 s to a week", self.cold_age_secs));
        }
        if self.period_secs == 0 || self.period_secs > self.cold_age_secs {
            return bad(format!("the period {} s is not 1 s to the cold age", self.period_secs));
        }
        for (what, v) in
            [("CPU budget", self.cpu_budget_percent), ("PSI limit", self.psi_some_avg10_limit)]
        {
            if !(v > 0.0 && v <= 100.0) {
                return bad(format!("the {what} {v} % is not above 0 and at most 100"));
            }
        }
        if let Some(t) = self.targets.iter().find(|t| !valid_path(&t.path)) {
            return bad(format!("{:?} is not a cgroup path below the root", t.path));
        }
        if self.targets.is_empty() {
            return bad("no cgroup to reclaim from".into());
        }
        Ok(())
    }
}

/// `/a/b`: absolute, no `.` or `..` part, not the root itself (its memory.reclaim would take
/// from every cgroup, excluded ones too).
fn valid_path(p: &str) -> bool {
    p.starts_with('/')
        && p.len() > 1
        && p[1..].split('/').all(|part| !part.is_empty() && part != "." && part != "..")
}

/// What one cgroup has shown since the driver started.
#[derive(Debug, Clone, Default)]
struct Seen {
    swap_at_start: Option<u64>,
    refaults_at_start: Option<u64>,
    moved: u64,
    came_back_pages: u64,
}

/// The driver over a v2 hierarchy mounted at `cgroup_root`.
#[derive(Debug)]
pub struct Driver {
    config: MemcgReclaim,
    cgroup_root: PathBuf,
    proc_root: PathBuf,
    page_size: u64,
    budget: Budget,
    seen: Vec<Seen>,
    stats: AgentStats,
    /// The kernel refused `swappiness=max`: the bare amount from then on.
    bare: bool,
    started_unix: u64,
    pub last_error: Option<String>,
}

impl Driver {
    /// The driver on this machine's v2 hierarchy (the one that offers the memory controller).
    pub fn new(config: MemcgReclaim) -> Result<Self, KernelError> {
        let root = crate::cgroups::v2_memory_root(Path::new("/")).ok_or_else(|| {
            KernelError::Unsupported(
                "no cgroup v2 hierarchy offers the memory controller here (memory.reclaim is \
                 v2's)"
                    .into(),
            )
        })?;
        let ps = crate::capture::system_page_size() as u64;
        Self::with(config, &root, Path::new("/proc"), ps, Box::new(process_cpu_seconds))
    }

    /// The driver over given roots (a test's fake trees), page size and CPU clock.
    pub fn with(
        config: MemcgReclaim,
        cgroup_root: &Path,
        proc_root: &Path,
        page_size: u64,
        clock: CpuClock,
    ) -> Result<Self, KernelError> {
        config.check()?;
        for t in &config.targets {
            let f = cgroup_root.join(&t.path[1..]).join("memory.reclaim");
            if !f.is_file() {
                return Err(KernelError::Unsupported(format!(
                    "{}: no memory.reclaim (not a cgroup v2 memory cgroup)",
                    f.display()
                )));
            }
        }
        let per_tick = config.cpu_budget_percent / 100.0 * config.period_secs as f64;
        let budget = Budget::new(clock, per_tick, config.period_secs as f64);
        let seen = vec![Seen::default(); config.targets.len()];
        Ok(Self {
            config,
            cgroup_root: cgroup_root.to_path_buf(),
            proc_root: proc_root.to_path_buf(),
            page_size: page_size.max(1),
            budget,
            seen,
            stats: AgentStats::default(),
            bare: false,
            started_unix: unix_now(),
            last_error: None,
        })
    }

    pub fn stats(&self) -> AgentStats {
        self.stats
    }

    pub fn config(&self) -> &MemcgReclaim {
        &self.config
    }

    /// One period: what moved and came back is read; unless swap is full, each cgroup under
    /// its PSI limit is asked for what is still to move, within the CPU budget. A cgroup that
    /// went away is left, counted as an error.
    pub fn tick(&mut self) -> Result<(), KernelError> {
        self.budget.begin_tick();
        self.stats.ticks += 1;
        // This period's highest among the cgroups asked.
        self.stats.last_psi_some_avg10 = 0.0;
        let full = procfs::swap_full(&self.proc_root)?;
        if full.is_some() {
            self.stats.paused_ticks += 1;
        }
        for i in 0..self.config.targets.len() {
            if let Err(e) = self.cgroup(i, full.is_none()) {
                self.stats.errors += 1;
                self.last_error = Some(format!("{}: {e}", self.config.targets[i].path));
            }
        }
        self.stats.processes = self.config.targets.len() as u64;
        self.stats.paged_out_bytes = self.seen.iter().map(|s| s.moved).sum();
        self.stats.out_bytes = self.stats.paged_out_bytes;
        let back: u64 = self.seen.iter().map(|s| s.came_back_pages).sum();
        self.stats.came_back_bytes = back * self.page_size;
        self.budget.end_tick();
        self.stats.cpu_seconds = self.budget.total();
        Ok(())
    }

    fn cgroup(&mut self, i: usize, may_reclaim: bool) -> Result<(), KernelError> {
        let t = self.config.targets[i].clone();
        let dir = self.cgroup_root.join(&t.path[1..]);
        let swap = read_u64(&dir.join("memory.swap.current"))?;
        let refaults = refaults(&dir)?;
        let s = &mut self.seen[i];
        let swap0 = *s.swap_at_start.get_or_insert(swap);
        let ref0 = *s.refaults_at_start.get_or_insert(refaults);
        s.moved = s.moved.max(swap.saturating_sub(swap0));
        s.came_back_pages = refaults.saturating_sub(ref0);
        let need = t.bytes.saturating_sub(swap.saturating_sub(swap0));
        if !may_reclaim || need < self.page_size || self.budget.exhausted() {
            return Ok(());
        }
        let psi = std::fs::read_to_string(dir.join("memory.pressure"))
            .map_err(|e| KernelError::io(dir.join("memory.pressure"), e))?;
        let avg10 = crate::pressure::parse_psi(&psi).map_err(KernelError::Invalid)?.some.avg10;
        self.stats.last_psi_some_avg10 = self.stats.last_psi_some_avg10.max(avg10);
        if avg10 > self.config.psi_some_avg10_limit {
            return Ok(());
        }
        let step = need.min(((t.bytes as f64 * STEP_SHARE) as u64).max(self.page_size));
        self.reclaim(&dir.join("memory.reclaim"), step)
    }

    /// Asks for `bytes`; EAGAIN (less reclaimed) is the kernel's answer, not an error.
    fn reclaim(&mut self, file: &Path, bytes: u64) -> Result<(), KernelError> {
        let ask = |text: String| match write(file, &text) {
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => Ok(()),
            r => r,
        };
        if !self.bare {
            match ask(format!("{bytes} swappiness=max")) {
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => self.bare = true,
                r => return r.map_err(|e| KernelError::io(file, e)),
            }
        }
        ask(bytes.to_string()).map_err(|e| KernelError::io(file, e))
    }
}

impl super::Reclaimer for Driver {
    fn tick(&mut self, _now: std::time::Instant) -> Result<(), KernelError> {
        Driver::tick(self)
    }

    fn period_secs(&self) -> u64 {
        self.config.period_secs
    }

    fn stats(&self) -> AgentStats {
        self.stats
    }

    /// The agent's status format (`mechanism` `memory_reclaim`), so `zmem exporter` shows what
    /// the driver moved and what came back beside the prediction, as it does the agent's.
    fn status_json(&self) -> Result<Vec<u8>, KernelError> {
        let c = &self.config;
        let config = super::AgentConfig {
            period_secs: c.period_secs,
            cpu_budget_percent: c.cpu_budget_percent,
            psi_some_avg10_limit: c.psi_some_avg10_limit,
            min_idle_bytes: 0,
            predicted: c.predicted,
            ..super::AgentConfig::new(c.cold_age_secs)
        };
        let s = super::AgentStatus {
            schema: super::STATUS_SCHEMA,
            mechanism: "memory_reclaim".into(),
            started_unix: self.started_unix,
            updated_unix: unix_now(),
            config,
            stats: self.stats,
            last_pause: None,
            last_error: self.last_error.clone(),
        };
        serde_json::to_vec_pretty(&s)
            .map_err(|e| KernelError::Invalid(format!("memory.reclaim status as JSON: {e}")))
    }

    fn set_cpu_clock(&mut self, clock: CpuClock) {
        self.budget.set_clock(clock);
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn write(file: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open(file)?;
    f.write_all(text.as_bytes())
}

fn read_u64(p: &Path) -> Result<u64, KernelError> {
    let s = std::fs::read_to_string(p).map_err(|e| KernelError::io(p, e))?;
    s.trim()
        .parse()
        .map_err(|_| KernelError::Invalid(format!("{}: not a number: {:?}", p.display(), s.trim())))
}

/// `memory.stat`'s `workingset_refault_anon`.
fn refaults(dir: &Path) -> Result<u64, KernelError> {
    let p = dir.join("memory.stat");
    let s = std::fs::read_to_string(&p).map_err(|e| KernelError::io(&p, e))?;
    s.lines()
        .find_map(|l| l.strip_prefix("workingset_refault_anon ")?.trim().parse().ok())
        .ok_or_else(|| KernelError::Invalid(format!("{}: no workingset_refault_anon", p.display())))
}

#[cfg(test)]
mod tests;

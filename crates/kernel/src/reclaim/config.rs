//! What the agent is asked to do ([`AgentConfig`]) and its checks.

use serde::{Deserialize, Serialize};

use crate::KernelError;

/// What the proactive-reclaim agent does: page out anonymous memory idle for `cold_age_secs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentConfig {
    /// T: page out anonymous memory idle for at least T.
    pub cold_age_secs: u64,
    /// How often it looks (default: T/4 clamped to 5..=60).
    pub period_secs: u64,
    /// Of one core, in percent (default 0.5).
    pub cpu_budget_percent: f64,
    /// Percent; above it the agent pauses (default 0.1, TMO's operating point).
    pub psi_some_avg10_limit: f64,
    /// Never paged out.
    #[serde(default)]
    pub exclude: Exclude,
    /// Only these processes (`None`: every user process).
    #[serde(default)]
    pub pids: Option<Vec<u32>>,
    /// A process with less idle than this is left alone (default 1 MiB).
    pub min_idle_bytes: u64,
    /// The lab's prediction, carried into the status for the exporter.
    #[serde(default)]
    pub predicted: Option<Predicted>,
}

/// What the agent never pages out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Exclude {
    #[serde(default)]
    pub pids: Vec<u32>,
    /// Process names (`comm`, as /proc/PID/stat shows them).
    #[serde(default)]
    pub comms: Vec<String>,
    /// Path prefixes, as /proc/PID/cgroup's memory line shows them (`/system.slice`).
    #[serde(default)]
    pub cgroups: Vec<String>,
}

impl Exclude {
    /// Adds one `--exclude` entry: a number is a pid, a value starting with `/` a cgroup path
    /// prefix, anything else a process name (`comm`: at most 15 printable bytes, as the kernel
    /// keeps it). What is none of them is refused with one line.
    pub fn add(&mut self, item: &str) -> Result<(), String> {
        if let Ok(pid) = item.parse::<u32>() {
            self.pids.push(pid);
        } else if item.starts_with('/') {
            self.cgroups.push(item.to_string());
        } else if item.len() <= 15 && item.chars().all(|c| c.is_ascii_graphic()) {
            self.comms.push(item.to_string());
        } else {
            return Err(format!(
                "{item:?} is not a pid, a cgroup path (/...) or a process name (at most 15 \
                 printable characters)"
            ));
        }
        Ok(())
    }

    /// A comma-separated `--exclude` list ([`Exclude::add`] for each entry; blanks skipped).
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut e = Self::default();
        for item in list.split(',').map(str::trim).filter(|v| !v.is_empty()) {
            e.add(item)?;
        }
        Ok(e)
    }
}

/// The lab's prediction for the configuration the agent runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Predicted {
    pub moved_out_bytes: u64,
    pub swap_ins_per_sec: f64,
    pub memory_saved_bytes: i64,
}

/// Default T for a caller that has none (`zmem agent`): a minute.
pub const DEFAULT_COLD_AGE_SECS: u64 = 60;
/// Default CPU budget, percent of one core.
pub const DEFAULT_CPU_BUDGET_PERCENT: f64 = 0.5;
/// Default PSI `some avg10` limit, percent (TMO's operating point).
pub const DEFAULT_PSI_LIMIT: f64 = 0.1;
/// Default smallest idle size of a mapping worth paging out.
pub const DEFAULT_MIN_IDLE_BYTES: u64 = 1 << 20;
/// Longest T accepted: a week (longer is a typo, and 4·T must not overflow).
pub const MAX_COLD_AGE_SECS: u64 = 7 * 24 * 3600;

impl AgentConfig {
    /// T with every default: period T/4 within 5..=60 s, 0.5 % of a core, PSI limit 0.1 %,
    /// mappings with at least 1 MiB idle, every user process.
    pub fn new(cold_age_secs: u64) -> Self {
        Self {
            cold_age_secs,
            period_secs: default_period(cold_age_secs),
            cpu_budget_percent: DEFAULT_CPU_BUDGET_PERCENT,
            psi_some_avg10_limit: DEFAULT_PSI_LIMIT,
            exclude: Exclude::default(),
            pids: None,
            min_idle_bytes: DEFAULT_MIN_IDLE_BYTES,
            predicted: None,
        }
    }

    /// Refuses what cannot run as asked, with one line saying why.
    pub fn check(&self) -> Result<(), KernelError> {
        let bad = |s: String| Err(KernelError::Invalid(s));
        if !(1..=MAX_COLD_AGE_SECS).contains(&self.cold_age_secs) {
            return bad(format!(
                "cold age {} s: must be 1 to {MAX_COLD_AGE_SECS} s",
                self.cold_age_secs
            ));
        }
        if self.period_secs == 0 || self.period_secs > self.cold_age_secs {
            return bad(format!(
                "period {} s: must be 1 s to the cold age ({} s)",
                self.period_secs, self.cold_age_secs
            ));
        }
        let c = self.cpu_budget_percent;
        if !c.is_finite() || c <= 0.0 || c > 100.0 {
            return bad(format!("CPU budget {c} %: must be above 0 and at most 100"));
        }
        let p = self.psi_some_avg10_limit;
        if !p.is_finite() || !(0.0..=100.0).contains(&p) {
            return bad(format!("PSI limit {p} %: must be 0 to 100"));
        }
        if self.pids.as_ref().is_some_and(|p| p.is_empty()) {
            return bad("an empty process list: name at least one pid, or none for all".into());
        }
        if let Some(c) = self.exclude.cgroups.iter().find(|c| !c.starts_with('/')) {
            return bad(format!("excluded cgroup {c:?}: must be a path starting with /"));
        }
        self.predicted.map_or(Ok(()), |p| p.check())
    }
}

impl Predicted {
    fn check(&self) -> Result<(), KernelError> {
        let s = self.swap_ins_per_sec;
        if !s.is_finite() || s < 0.0 {
            return Err(KernelError::Invalid(format!(
                "predicted swap-ins {s} /s: must be a number at least 0"
            )));
        }
        Ok(())
    }
}

/// T/4 within 5..=60 s, but never longer than T (a T under 5 s is looked at every T).
pub fn default_period(cold_age_secs: u64) -> u64 {
    (cold_age_secs / 4).clamp(5, 60).min(cold_age_secs.max(1))
}

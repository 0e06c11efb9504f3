//! The decision's proactive reclaim by DAMON during the watch: a kdamond of the run's own with
//! the decision's pageout scheme (zmem-kernel's `reclaim::damon`), on the [`UndoStack`] like
//! every other change so it stops before its swap area goes. Its CPU is the kdamond thread's
//! own (its `/proc/PID/stat`): the scanning, and the reclaim and compression it does in its
//! own context.
//!
//! [`UndoStack`]: super::undo::UndoStack

use std::path::Path;

use zmem_kernel::reclaim::damon::{self, DamonPageout};
use zmem_kernel::record::damon::ADMIN;

use super::undo::Undo;

/// The kdamond started for the run.
#[derive(Debug, Clone, Copy)]
pub struct Running {
    pub pid: i64,
    /// Its CPU seconds when started.
    cpu_at_start: f64,
}

impl Running {
    /// Starts `scheme` in a kdamond of the run's own: what runs, the undo that stops it, and
    /// the line for the report's changes.
    pub fn start(scheme: &DamonPageout) -> Result<(Self, Box<dyn Undo>, String), String> {
        let iomem = damon::iomem().map_err(|e| e.to_string())?;
        let pid = scheme.start(Path::new(ADMIN), &iomem).map_err(|e| e.to_string())?;
        let cpu_at_start = damon::task_cpu_seconds(Path::new("/proc"), pid).unwrap_or(0.0);
        let line = format!(
            "started kdamond 0 (pid {pid}), the run's own, with a DAMON pageout scheme: \
             anonymous memory idle for T = {} s paged out, a CPU quota of {} % of a core, the \
             quota tuned to keep memory PSI some under {} %{}",
            scheme.cold_age_secs,
            scheme.cpu_budget_percent,
            scheme.psi_some_limit_percent,
            if scheme.exclude_cgroups.is_empty() {
                String::new()
            } else {
                format!("; never cgroups {}", scheme.exclude_cgroups.join(", "))
            }
        );
        Ok((Self { pid, cpu_at_start }, Box::new(Stop(pid)), line))
    }

    /// The kdamond's CPU seconds since it started (None once it is gone).
    pub fn cpu_seconds(&self) -> Option<f64> {
        damon::task_cpu_seconds(Path::new("/proc"), self.pid).map(|c| c - self.cpu_at_start)
    }
}

/// Stops the kdamond with this pid, only while it is still ours.
struct Stop(i64);

impl Undo for Stop {
    fn what(&self) -> String {
        format!("kdamond 0 (pid {})", self.0)
    }

    fn undo(self: Box<Self>) -> Result<String, String> {
        match damon::stop(Path::new(ADMIN), self.0) {
            Ok(true) => Ok(format!("stopped and removed kdamond 0 (pid {})", self.0)),
            Ok(false) => Err(format!(
                "kdamond 0 is no longer pid {} (stopped, or another since): nothing was changed",
                self.0
            )),
            Err(e) => Err(format!("stopping kdamond 0 (pid {}): {e}", self.0)),
        }
    }
}

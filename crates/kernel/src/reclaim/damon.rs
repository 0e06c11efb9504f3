//! Proactive reclaim by a DAMON scheme in a kdamond of zmem's own: the kernel's own tool, for
//! machines whose DAMON admin interface is free (no kdamond at all: adding one to a list that has
//! any disturbs its owner, [`crate::record::damon`] says why). Facts below are Linux 6.18's
//! (Documentation/admin-guide/mm/damon/usage.rst, mm/damon/sysfs*.c, mm/damon/paddr.c).
//!
//! The kdamond monitors the physical address space (`paddr`: every process, and memory no
//! process maps, with no target list to keep current) over the machine's System RAM ranges from
//! /proc/iomem (usage.rst, `targets/<N>/regions`: `paddr` needs them set). One scheme:
//!
//! ```text
//! action                        pageout
//! access_pattern/nr_accesses    0 .. 0         not accessed in an aggregation interval
//! access_pattern/age            T / aggr ..    for at least T (age counts aggregation intervals)
//! quotas/ms, reset_interval_ms  budget × 1000 ms a second of CPU (at least 1 ms)
//! quotas/goals/0                some_mem_psi_us, the PSI limit's share of each second in us:
//!                               the quota is tuned up while memory PSI is under it and down
//!                               over it (mm/damon/core.c `damos_set_effective_quota()`), as
//!                               Senpai and TMO do
//! filters/<i>                   memcg, matching, reject: each excluded cgroup
//! filters/<last>                anon, matching, allow: the last filter allows, so a page it does
//!                               not match (file-backed) is rejected (mm/damon/core.c
//!                               `damos_filters_default_reject()`, mm/damon/paddr.c
//!                               `damos_pa_filter_out()`)
//! ```
//!
//! It runs until [`stop`]: the apply script starts it (and a unit at boot), the undo stops it.
//! Processes cannot be excluded (a physical page's filters know its memory cgroup, not its
//! process): the lab uses this only where nothing is excluded by pid or name.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::KernelError;
use crate::record::damon::{self, Attrs, remove_ours, sysfs};

/// The quota's reset interval: the CPU budget and the PSI goal are per this many ms.
pub const QUOTA_RESET_MS: u64 = 1000;

/// A DAMON pageout scheme for anonymous memory idle for at least `cold_age_secs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DamonPageout {
    pub cold_age_secs: u64,
    /// CPU, in percent of a core, the scheme may take (its time quota).
    pub cpu_budget_percent: f64,
    /// Memory PSI `some`, in percent of time, the quota is tuned to stay under.
    pub psi_some_limit_percent: f64,
    /// Memory cgroups (paths from the controller's root) never paged out.
    pub exclude_cgroups: Vec<String>,
}

/// The monitoring attributes: DAMON's defaults (5 ms sampling, 100 ms aggregation, regions
/// updated every second, 10 to 1000 regions; usage.rst), the recorder's for 100 ms.
pub fn attrs() -> Attrs {
    Attrs::for_interval(std::time::Duration::from_millis(100))
}

/// /proc/iomem's text (its addresses are shown to root only).
pub fn iomem() -> Result<String, KernelError> {
    let p = Path::new("/proc/iomem");
    std::fs::read_to_string(p).map_err(|e| KernelError::io(p, e))
}

/// The top-level `System RAM` ranges of /proc/iomem's text, as `[start, end)`. Ranges reading
/// 0-0 (what a reader without CAP_SYS_ADMIN sees) are left out.
pub fn system_ram(iomem: &str) -> Vec<(u64, u64)> {
    iomem
        .lines()
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| {
            let (range, name) = l.split_once(" : ")?;
            (name.trim() == "System RAM").then_some(())?;
            let (a, b) = range.split_once('-')?;
            let a = u64::from_str_radix(a.trim(), 16).ok()?;
            let b = u64::from_str_radix(b.trim(), 16).ok()?;
            (b > a).then(|| (a, b.saturating_add(1)))
        })
        .collect()
}

impl DamonPageout {
    /// The scheme's numbers checked: a cold age of at least a second, a budget and a limit
    /// above 0 and at most 100 %.
    fn check(&self) -> Result<(), KernelError> {
        let bad = |m: String| Err(KernelError::Invalid(format!("DAMON pageout scheme: {m}")));
        if self.cold_age_secs == 0 || self.cold_age_secs > super::MAX_COLD_AGE_SECS {
            return bad(format!("the cold age {} s is not 1 s to a week", self.cold_age_secs));
        }
        for (what, v) in
            [("CPU budget", self.cpu_budget_percent), ("PSI limit", self.psi_some_limit_percent)]
        {
            if !(v > 0.0 && v <= 100.0) {
                return bad(format!("the {what} {v} % is not above 0 and at most 100"));
            }
        }
        Ok(())
    }

    /// Makes, configures and starts kdamond 0 under `admin` (the sysfs directory) with the
    /// System RAM ranges of `iomem` (/proc/iomem's text), and returns its pid. Refused where a
    /// kdamond exists already, where `paddr` is not in `avail_operations`, or where the text has
    /// no System RAM. Any failure after `nr_kdamonds` was written removes ours again.
    pub fn start(&self, admin: &Path, iomem: &str) -> Result<i64, KernelError> {
        self.check()?;
        let ram = system_ram(iomem);
        if ram.is_empty() {
            return Err(KernelError::Invalid(
                "/proc/iomem shows no System RAM range (its addresses are shown to root only)"
                    .into(),
            ));
        }
        if let Some(why) = damon::unavailable_reason(admin) {
            return Err(KernelError::Invalid(why));
        }
        let kdamonds = admin.join("kdamonds");
        sysfs::write(&kdamonds.join("nr_kdamonds"), 1)?;
        let started = self.configure(&kdamonds.join("0"), &ram).and_then(|()| {
            sysfs::write(&kdamonds.join("0/state"), "on")?;
            sysfs::read_num::<i64>(&kdamonds.join("0/pid"))
        });
        if started.is_err()
            && let Err(e) = remove_ours(&kdamonds)
        {
            eprintln!("zmem: {e}");
        }
        started
    }

    /// [`Self::start`], then the pid recorded in `pid_file` (0644; its directory made 0755
    /// where missing). A kdamond whose pid could not be recorded is stopped again: nothing
    /// could tell later that it is ours.
    pub fn start_recorded(
        &self,
        admin: &Path,
        iomem: &str,
        pid_file: &Path,
    ) -> Result<i64, KernelError> {
        let pid = self.start(admin, iomem)?;
        let recorded = pid_file
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map_or(Ok(()), |d| zmem_files::ensure_dir(d, zmem_files::Kind::Shared))
            .and_then(|()| {
                zmem_files::write(pid_file, zmem_files::Kind::Shared, format!("{pid}\n").as_bytes())
            });
        if let Err(e) = recorded {
            let _ = stop(admin, pid);
            return Err(KernelError::Invalid(format!(
                "{}: {e} (the kdamond was stopped again)",
                pid_file.display()
            )));
        }
        Ok(pid)
    }

    /// Everything under `kdamonds/0` but its state (module doc).
    fn configure(&self, kd: &Path, ram: &[(u64, u64)]) -> Result<(), KernelError> {
        sysfs::write(&kd.join("contexts/nr_contexts"), 1)?;
        let ctx = kd.join("contexts/0");
        let ops = sysfs::read(&ctx.join("avail_operations"))?;
        if !ops.split_whitespace().any(|o| o == "paddr") {
            return Err(KernelError::Invalid(format!(
                "DAMON has no paddr operations here (avail_operations: {ops})"
            )));
        }
        sysfs::write(&ctx.join("operations"), "paddr")?;
        let a = attrs();
        a.write(&ctx)?;
        sysfs::write(&ctx.join("targets/nr_targets"), 1)?;
        let regions = ctx.join("targets/0/regions");
        sysfs::write(&regions.join("nr_regions"), ram.len())?;
        for (i, (start, end)) in ram.iter().enumerate() {
            sysfs::write(&regions.join(format!("{i}/start")), start)?;
            sysfs::write(&regions.join(format!("{i}/end")), end)?;
        }
        sysfs::write(&ctx.join("schemes/nr_schemes"), 1)?;
        self.scheme(&ctx.join("schemes/0"), &a)
    }

    /// The scheme's action, pattern, quota and filters (module doc).
    fn scheme(&self, s: &Path, a: &Attrs) -> Result<(), KernelError> {
        sysfs::write(&s.join("action"), "pageout")?;
        let p = s.join("access_pattern");
        let age = (self.cold_age_secs.saturating_mul(1_000_000)).div_ceil(a.aggr_us);
        for (what, min, max) in [
            ("sz", 0, u64::MAX),
            ("nr_accesses", 0, 0),
            ("age", age.min(u32::MAX.into()), u32::MAX.into()),
        ] {
            sysfs::write(&p.join(format!("{what}/min")), min)?;
            sysfs::write(&p.join(format!("{what}/max")), max)?;
        }
        let q = s.join("quotas");
        let ms = (self.cpu_budget_percent / 100.0 * QUOTA_RESET_MS as f64).round().max(1.0);
        sysfs::write(&q.join("ms"), ms as u64)?;
        sysfs::write(&q.join("bytes"), 0)?;
        sysfs::write(&q.join("reset_interval_ms"), QUOTA_RESET_MS)?;
        sysfs::write(&q.join("goals/nr_goals"), 1)?;
        let psi_us =
            (self.psi_some_limit_percent / 100.0 * QUOTA_RESET_MS as f64 * 1000.0).round().max(1.0);
        sysfs::write(&q.join("goals/0/target_metric"), "some_mem_psi_us")?;
        sysfs::write(&q.join("goals/0/target_value"), psi_us as u64)?;
        let f = s.join("filters");
        sysfs::write(&f.join("nr_filters"), self.exclude_cgroups.len() + 1)?;
        for (i, cg) in self.exclude_cgroups.iter().enumerate() {
            let d = f.join(i.to_string());
            sysfs::write(&d.join("type"), "memcg")?;
            sysfs::write(&d.join("memcg_path"), cg)?;
            sysfs::write(&d.join("matching"), "Y")?;
            sysfs::write(&d.join("allow"), "N")?;
        }
        let d = f.join(self.exclude_cgroups.len().to_string());
        sysfs::write(&d.join("type"), "anon")?;
        sysfs::write(&d.join("matching"), "Y")?;
        sysfs::write(&d.join("allow"), "Y")
    }
}

/// Stops and removes the kdamond [`DamonPageout::start`] started, known by its pid: only where
/// kdamond 0 still has that pid and is the only one. `Ok(false)` where it is not there (stopped
/// already, or another kdamond since): nothing is touched.
pub fn stop(admin: &Path, pid: i64) -> Result<bool, KernelError> {
    let kdamonds = admin.join("kdamonds");
    let nr = sysfs::read_num::<u64>(&kdamonds.join("nr_kdamonds"))?;
    if nr != 1 || sysfs::read_num::<i64>(&kdamonds.join("0/pid"))? != pid || pid <= 0 {
        return Ok(false);
    }
    remove_ours(&kdamonds)?;
    Ok(true)
}

/// The CPU time, in seconds, task `pid` (a kdamond: a kernel thread) has run, from its
/// `/proc/PID/stat` (`utime` and `stime`, fields 14 and 15, in clock ticks; proc(5)). None where
/// it is gone or the line does not parse.
pub fn task_cpu_seconds(proc_root: &Path, pid: i64) -> Option<f64> {
    let stat = std::fs::read_to_string(proc_root.join(pid.to_string()).join("stat")).ok()?;
    // The name, field 2, is in parentheses and may hold spaces: fields count after its `)`.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf reads a constant of the running system; no memory is passed.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| ticks as f64 / hz as f64)
}

/// The pid [`DamonPageout::start_recorded`] recorded in `pid_file`.
pub fn recorded_pid(pid_file: &Path) -> Result<i64, KernelError> {
    let text = std::fs::read_to_string(pid_file).map_err(|e| KernelError::io(pid_file, e))?;
    text.trim().parse::<i64>().ok().filter(|&p| p > 0).ok_or_else(|| {
        KernelError::Invalid(format!("{}: not a pid: {:?}", pid_file.display(), text.trim()))
    })
}

#[cfg(test)]
mod tests;

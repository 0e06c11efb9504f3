//! `zmem damon`: proactive reclaim by a DAMON pageout scheme in a kdamond of zmem's own, for
//! machines whose DAMON admin interface is free (zmem_kernel::reclaim::damon documents the
//! scheme). `start` leaves it running and records its pid; `stop` stops only that kdamond.

use std::path::{Path, PathBuf};

use zmem_kernel::reclaim::{self, damon::DamonPageout};
use zmem_kernel::record::damon::ADMIN;

use super::args::count;

/// Where `start` records the kdamond's pid and `stop` reads it, by default.
const PID_FILE: &str = "/run/zmem/damon.pid";

#[derive(Debug, clap::Subcommand)]
pub enum Damon {
    /// Start a kdamond that pages out anonymous memory idle for the cold age; print its pid.
    Start(StartArgs),
    /// Stop and remove the kdamond `start` started (only that one).
    Stop(StopArgs),
}

#[derive(Debug, clap::Args)]
pub struct StartArgs {
    /// T: page out anonymous memory idle for at least SECS.
    #[arg(long, value_name = "SECS", default_value_t = reclaim::DEFAULT_COLD_AGE_SECS,
          value_parser = count::<u64>(1, reclaim::MAX_COLD_AGE_SECS))]
    cold_age: u64,
    /// The scheme's CPU quota, in percent of one core.
    #[arg(long, value_name = "PERCENT", default_value_t = reclaim::DEFAULT_CPU_BUDGET_PERCENT)]
    cpu_budget: f64,
    /// Memory PSI `some`, in percent of time, that DAMON tunes its quota to stay under.
    #[arg(long, value_name = "PERCENT", default_value_t = reclaim::DEFAULT_PSI_LIMIT)]
    psi_limit: f64,
    /// Memory cgroups never paged out, comma-separated paths from the controller's root.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    exclude: Vec<String>,
    /// Where to record the kdamond's pid (its directory is made 0755 if missing).
    #[arg(long, value_name = "FILE", default_value = PID_FILE)]
    pid_file: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct StopArgs {
    /// The kdamond's pid (default: the one recorded in --pid-file).
    #[arg(long, value_name = "PID", value_parser = count::<i64>(1, i32::MAX as u64))]
    pid: Option<i64>,
    /// Where `start` recorded the pid; removed where it names the pid stopped.
    #[arg(long, value_name = "FILE", default_value = PID_FILE)]
    pid_file: PathBuf,
}

pub fn run(cmd: &Damon) -> anyhow::Result<()> {
    match cmd {
        Damon::Start(a) => start(a),
        Damon::Stop(a) => stop(a),
    }
}

fn start(a: &StartArgs) -> anyhow::Result<()> {
    let exclude: Vec<String> =
        a.exclude.iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    if let Some(bad) = exclude.iter().find(|c| !c.starts_with('/')) {
        anyhow::bail!("--exclude {bad}: a memory cgroup path starts with /");
    }
    let scheme = DamonPageout {
        cold_age_secs: a.cold_age,
        cpu_budget_percent: a.cpu_budget,
        psi_some_limit_percent: a.psi_limit,
        exclude_cgroups: exclude,
    };
    let iomem = reclaim::damon::iomem()?;
    let pid = scheme.start_recorded(Path::new(ADMIN), &iomem, &a.pid_file)?;
    super::note(&format!(
        "zmem: kdamond 0 (pid {pid}) pages out anonymous memory idle for {} s (DAMON pageout \
         scheme, CPU quota {} % of a core, memory PSI goal {} %); `zmem damon stop` stops it",
        a.cold_age, a.cpu_budget, a.psi_limit
    ));
    println!("{pid}");
    Ok(())
}

fn stop(a: &StopArgs) -> anyhow::Result<()> {
    let pid = match a.pid {
        Some(p) => p,
        None => reclaim::damon::recorded_pid(&a.pid_file)?,
    };
    if reclaim::damon::stop(Path::new(ADMIN), pid)? {
        super::note(&format!("zmem: kdamond 0 (pid {pid}) stopped and removed"));
    } else {
        super::note(&format!(
            "zmem: no kdamond of ours with pid {pid} runs (stopped already, or another since): \
             nothing changed"
        ));
    }
    // The record goes with the kdamond it names (a record of another pid stays).
    if reclaim::damon::recorded_pid(&a.pid_file).is_ok_and(|p| p == pid) {
        let _ = std::fs::remove_file(&a.pid_file);
    }
    Ok(())
}

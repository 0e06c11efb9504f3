//! `zmem memcg-reclaim`: proactive reclaim by cgroup v2's `memory.reclaim`, each cgroup asked
//! for the bytes idle for T the lab measured in it, backing off on its memory PSI, within a
//! CPU budget (zmem_kernel::reclaim::memcg documents it); writes a status file.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use zmem_kernel::reclaim::memcg::{Driver, MemcgReclaim, MemcgTarget};
use zmem_kernel::reclaim::{self, AgentConfig, AgentStats};
use zmem_kernel::record::SignalStop;

use super::args::{MAX_SECS, count};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// T: the targets are bytes idle for at least SECS (they set the period's default).
    #[arg(long, value_name = "SECS", default_value_t = reclaim::DEFAULT_COLD_AGE_SECS,
          value_parser = count::<u64>(1, reclaim::MAX_COLD_AGE_SECS))]
    cold_age: u64,
    /// How often each cgroup is asked, in seconds (default: the agent's for the cold age).
    #[arg(long, value_name = "SECS", value_parser = count::<u64>(1, reclaim::MAX_COLD_AGE_SECS))]
    period: Option<u64>,
    /// Most CPU the reclaim uses, in percent of one core.
    #[arg(long, value_name = "PERCENT", default_value_t = reclaim::DEFAULT_CPU_BUDGET_PERCENT)]
    cpu_budget: f64,
    /// Leave a cgroup alone while its memory PSI `some avg10` is above PERCENT.
    #[arg(long, value_name = "PERCENT", default_value_t = reclaim::DEFAULT_PSI_LIMIT)]
    psi_limit: f64,
    /// A cgroup and the bytes to move out of it, PATH=BYTES (its path from the v2 root),
    /// comma-separated or repeated.
    #[arg(long = "target", value_name = "PATH=BYTES", value_delimiter = ',', required = true)]
    targets: Vec<String>,
    /// Where to write the status after every period, in the agent's format (`zmem exporter
    /// --agent-status` reads it; its directory is made 0755 if missing).
    #[arg(long, value_name = "FILE", default_value = reclaim::DEFAULT_STATUS_PATH)]
    status: PathBuf,
    /// Stop after SECS (default: run until SIGINT or SIGTERM).
    #[arg(long, value_name = "SECS", value_parser = count::<u64>(1, MAX_SECS))]
    duration: Option<u64>,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let config = MemcgReclaim {
        cold_age_secs: args.cold_age,
        period_secs: args.period.unwrap_or(AgentConfig::new(args.cold_age).period_secs),
        cpu_budget_percent: args.cpu_budget,
        psi_some_avg10_limit: args.psi_limit,
        targets: args.targets.iter().map(|t| target(t)).collect::<anyhow::Result<_>>()?,
        predicted: None,
    };
    config.check()?;
    let mut driver = Driver::new(config)?;
    let stop = SignalStop::install()?;
    let start = Instant::now();
    let duration = args.duration.map(Duration::from_secs);
    let stats = reclaim::run(&mut driver, stop.flag(), duration, Some(&args.status), &mut |_| {})?;
    drop(stop);
    super::note(&progress(&stats, start.elapsed()));
    Ok(())
}

/// `PATH=BYTES`.
fn target(text: &str) -> anyhow::Result<MemcgTarget> {
    let (path, bytes) = text
        .trim()
        .split_once('=')
        .ok_or_else(|| anyhow::anyhow!("--target {text}: not PATH=BYTES"))?;
    let bytes = bytes
        .parse::<u64>()
        .map_err(|_| anyhow::anyhow!("--target {text}: {bytes:?} is not a number of bytes"))?;
    Ok(MemcgTarget { path: path.to_string(), bytes })
}

fn progress(s: &AgentStats, elapsed: Duration) -> String {
    let mib = |b: u64| b as f64 / f64::from(1 << 20);
    format!(
        "zmem memcg-reclaim: {}s: moved out {:.1} MiB, came back {:.1} MiB, CPU {:.2} % of a \
         core, {} cgroups, {} errors",
        elapsed.as_secs(),
        mib(s.paged_out_bytes),
        mib(s.came_back_bytes),
        100.0 * s.cpu_seconds / elapsed.as_secs_f64().max(1e-3),
        s.processes,
        s.errors
    )
}

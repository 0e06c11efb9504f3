//! `zmem validate`: zmem's models checked against the live kernel. `replay` runs a trace in real
//! memory under a memory cgroup with a kernel zram swap and compares with `zmem replay`; `lab`
//! does so for every configuration of the lab's candidate list the kernel runs, beside the lab's
//! prediction; `apply` applies the lab's decision on this machine, watches, compares and undoes;
//! `play` (hidden) is the player process they start, this same binary.

use std::path::PathBuf;
use std::time::Duration;

use zmem_kernel::record::SignalStop;
use zmem_validate::apply::request::parse_pids;
use zmem_validate::apply::{ApplyConfig, ValidateApplyRequest};
use zmem_validate::replay as validate;
use zmem_validate::request::{
    MAX_KERNEL_RUNS, MAX_TIMEOUT_SECS, PAGE_SIZE, ValidateLabRequest, ValidateReplayRequest,
};

#[derive(Debug, clap::Subcommand)]
pub enum Validate {
    /// Replay a trace against the live kernel (memory cgroup + fresh zram swap) and compare
    /// swap-outs, swap-ins and the zram pool with `zmem replay`. Needs root.
    Replay(ReplayArgs),
    /// Check the lab's prediction for every configuration of its candidate list that the running
    /// kernel can run: the same pages and trace played in a memory cgroup on a fresh kernel zram
    /// device of each configuration, beside the lab's pool, swap traffic, CPU and swap-in
    /// latency for it. Needs root.
    Lab(LabArgs),
    /// Prove the lab's decision on this machine: apply it with a set-up of its own (a zram swap
    /// device, or zswap's parameters and a swap file behind them) and its proactive reclaim,
    /// watch, compare what the machine saved, moved out and swapped in with the prediction,
    /// then undo everything and check the machine is as it was. Needs root.
    #[command(
        after_help = "Example:\n  zmem lab --json > report.json && sudo zmem validate apply report.json --minutes 5"
    )]
    Apply(ApplyArgs),
    /// The player process of `validate replay` (reads its work on stdin).
    #[command(hide = true)]
    Play,
}

#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// RAM budget (the memory cgroup's limit): bytes with an optional K, M or G suffix
    /// (1024-based). Default: half the pages the trace touches, and 2 MiB for the player itself.
    #[arg(long)]
    ram: Option<String>,
    /// zram compression algorithm, on both sides (one the kernel's zram offers).
    #[arg(long, default_value_t = ValidateReplayRequest::default().algo, value_parser = super::args::algo)]
    algo: zmem_comp::AlgoSpec,
    /// The longest each kernel run may take, in seconds.
    #[arg(long, default_value_t = ValidateReplayRequest::default().timeout.as_secs(), value_parser = super::args::duration("s"))]
    timeout: u64,
    /// Runs of the kernel's side: the kernel does not repeat itself exactly at tight budgets, so
    /// its figures are the run with the median swap-outs (every run's are printed). A run the
    /// OOM killer ends is listed and the others are used.
    #[arg(long, default_value_t = ValidateReplayRequest::default().kernel_runs, value_parser = clap::value_parser!(u64).range(1..=MAX_KERNEL_RUNS))]
    kernel_runs: u64,
    /// Leave the kernel's reclaim to its own statistics flushes (every 2 s) instead of flushing
    /// the cgroup's statistics at every sample: runs shorter than a few seconds then deactivate
    /// nothing until a flush comes, and swap more, by chance. The replay does the same
    /// (`zmem replay --stats-flush new-memcg`) on the player's clock: the trace at the median
    /// run's pace, the flusher's first pass 1 s in.
    #[arg(long)]
    stale_stats: bool,
    /// Flush the cgroup's statistics at every sample until 1 s after the first swap-out, then
    /// leave them to the kernel's own flushes: the replay's model of a workload that ran before
    /// its trace (`zmem replay --stats-flush kernel`), which it runs on the player's clock.
    #[arg(long, conflicts_with = "stale_stats")]
    stale_stats_from_reclaim: bool,
    /// Print a JSON object `{"kernel": .., "zmem": .., "error": .., ...}` instead of the table.
    #[arg(long)]
    json: bool,
    /// Page set.
    pages: PathBuf,
    /// Access trace (`zmem trace gen`).
    trace: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct LabArgs {
    /// RAM budget (the memory cgroup's limit): bytes with an optional K, M or G suffix
    /// (1024-based). Default: half the pages the trace touches, and 2 MiB for the player itself.
    #[arg(long)]
    ram: Option<String>,
    /// Runs of the kernel's side per configuration, each right after a baseline run without
    /// reclaim: pool and swap figures are the run with the median swap-outs, CPU seconds the
    /// median of the runs' CPU net of their baselines (one run's varies by about 40 % here),
    /// swap-in p50 and p99 each the median of the runs' (one run's p50 by 10-20 %).
    #[arg(long, default_value_t = ValidateLabRequest::default().kernel_runs, value_parser = clap::value_parser!(u64).range(1..=MAX_KERNEL_RUNS))]
    kernel_runs: u64,
    /// The primary algorithm the lab's candidate list is built for (its current configuration).
    #[arg(long, default_value_t = ValidateLabRequest::default().primary)]
    primary: String,
    /// The longest each kernel run may take, in seconds.
    #[arg(long, default_value_t = ValidateLabRequest::default().timeout.as_secs(), value_parser = super::args::duration("s"))]
    timeout: u64,
    /// Print a JSON object `{"configurations": [..], "same_order": .., ...}` instead of the
    /// table.
    #[arg(long)]
    json: bool,
    /// Also check this zswap configuration (repeatable):
    /// `COMPRESSOR[,max_pool_percent=N][,accept_threshold_percent=N][,shrinker=on|off]`
    /// (defaults 20, 90, off). Each is played with zswap set so, in front of a swap file of
    /// this run's on a loop device; zswap's parameters are written back as they were after
    /// each run, on SIGINT/SIGTERM too. Refused (exit 2) while a swap area this run did not
    /// make is active.
    #[arg(long = "zswap", value_name = "CONFIG", value_parser = zswap_spec)]
    zswap: Vec<zmem_lab::ZswapParams>,
    /// The directory (the filesystem) for the zswap runs' swap file.
    #[arg(long, default_value_os_t = ValidateLabRequest::default().swap_dir)]
    swap_dir: PathBuf,
    /// As root, mount debugfs at /sys/kernel/debug for the zswap runs where it is not mounted
    /// (unmounted after), so stored_pages, pool_total_size and written_back_pages are read
    /// from zswap's debugfs counters; without it, and debugfs not mounted, /proc/meminfo and
    /// /proc/vmstat stand in (the output says which).
    #[arg(long)]
    mount_debugfs: bool,
    /// Page set.
    pages: PathBuf,
    /// Access trace (`zmem trace gen`). Default: the lab's own generated trace for the pages.
    trace: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct ApplyArgs {
    /// Watch this many minutes (a sample every 5 s, a progress line every 10 s).
    #[arg(long, default_value_t = ApplyConfig::default().seconds / 60, value_parser = clap::value_parser!(u64).range(1..=MAX_TIMEOUT_SECS / 60))]
    minutes: u64,
    /// Watch this many seconds instead (tests).
    #[arg(long, hide = true, value_parser = clap::value_parser!(u64).range(1..=MAX_TIMEOUT_SECS))]
    seconds: Option<u64>,
    /// Only these processes are paged out and watched (pids, comma-separated); the watch ends
    /// early once all have exited. Default: every user process but the excluded.
    #[arg(long, value_name = "PID,...", value_parser = pids)]
    pid: Option<Pids>,
    /// Processes the proactive reclaim never pages out: pids, process names (comm) and memory
    /// cgroup path prefixes (/system.slice), comma-separated, as the lab's --exclude. zmem
    /// itself is always excluded.
    #[arg(long, value_name = "PID|NAME|/CGROUP,...", value_parser = zmem_kernel::reclaim::Exclude::parse)]
    exclude: Option<zmem_kernel::reclaim::Exclude>,
    /// Do not run the decision's proactive reclaim: the prediction is then today's pressure.
    #[arg(long)]
    no_proactive: bool,
    /// The directory (the filesystem) for a zswap decision's swap file.
    #[arg(long, default_value_os_t = ApplyConfig::default().swap_dir)]
    swap_dir: PathBuf,
    /// Also write the result as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also write the result as an HTML page (with a plot of the watch) to this file.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// The lab's report (`zmem lab --json > REPORT.json`, or `zmem lab -o DIR`'s
    /// report.json). Default: run the lab first with its defaults (about a minute).
    #[arg(value_name = "REPORT.json")]
    report: Option<PathBuf>,
}

/// `--pid`'s list (a type of its own: clap reads an `Option<Vec<_>>` as a repeated flag).
#[derive(Debug, Clone)]
struct Pids(Vec<u32>);

fn pids(list: &str) -> Result<Pids, String> {
    parse_pids(list).map(Pids)
}

pub fn run(v: &Validate) -> anyhow::Result<()> {
    match v {
        Validate::Replay(args) => replay(args),
        Validate::Lab(args) => lab(args),
        Validate::Apply(args) => apply(args),
        Validate::Play => Ok(validate::player::run_stdio()?),
    }
}

/// `--ram`, parsed (the request checks it is at least a page).
fn ram(ram: Option<&str>) -> anyhow::Result<Option<u64>> {
    ram.map(|r| super::args::size("--ram", r)).transpose()
}

/// The request `validate replay`'s flags make (each flag maps onto one field).
fn replay_request(args: &ReplayArgs) -> anyhow::Result<ValidateReplayRequest> {
    Ok(ValidateReplayRequest {
        ram: ram(args.ram.as_deref())?,
        algo: args.algo.clone(),
        timeout: Duration::from_secs(args.timeout),
        kernel_runs: args.kernel_runs,
        stale_stats: args.stale_stats,
        stale_stats_from_reclaim: args.stale_stats_from_reclaim,
        ..ValidateReplayRequest::default()
    })
}

/// The request `validate lab`'s flags make.
fn lab_request(args: &LabArgs) -> anyhow::Result<ValidateLabRequest> {
    Ok(ValidateLabRequest {
        ram: ram(args.ram.as_deref())?,
        kernel_runs: args.kernel_runs,
        primary: args.primary.clone(),
        timeout: Duration::from_secs(args.timeout),
        zswap: args.zswap.clone(),
        swap_dir: args.swap_dir.clone(),
        mount_debugfs: args.mount_debugfs,
        ..ValidateLabRequest::default()
    })
}

fn replay(args: &ReplayArgs) -> anyhow::Result<()> {
    let req = replay_request(args)?;
    req.check().map_err(|e| anyhow::anyhow!(e.flag()))?;
    let inputs = super::pages::load(std::slice::from_ref(&args.pages), PAGE_SIZE)?;
    let trace = super::pages::load_trace(&args.trace)?;
    // SIGINT and SIGTERM end the kernel's run through its error path, which removes the
    // cgroup, the swap area and the zram device it made.
    let stop = SignalStop::install()?;
    let progress = super::progress::Bar::new();
    let v = req.run(inputs[0].bytes(), &trace, stop.flag(), &progress)?;
    super::emit(args.json, &v, zmem_render::experiments::validation)?;
    ValidateReplayRequest::verified(&v)?;
    Ok(())
}

fn zswap_spec(s: &str) -> Result<zmem_lab::ZswapParams, String> {
    zmem_validate::zswap_params::parse(s)
}

fn lab(args: &LabArgs) -> anyhow::Result<()> {
    let req = lab_request(args)?;
    req.check().map_err(|e| anyhow::anyhow!(e.flag()))?;
    // One line and exit 2 (main's error path), before anything is read or made.
    req.refuse_foreign_swaps()?;
    let inputs = super::pages::load(std::slice::from_ref(&args.pages), PAGE_SIZE)?;
    let trace = args.trace.as_deref().map(super::pages::load_trace).transpose()?;
    // SIGINT and SIGTERM end the kernel's run through its error path, which removes the
    // cgroup, the swap area and the zram device it made.
    let stop = SignalStop::install()?;
    let progress = super::progress::Bar::new();
    let (v, notes) = req.run(inputs[0].bytes(), trace.as_deref(), stop.flag(), &progress)?;
    for n in notes {
        super::note(&n);
    }
    super::emit(args.json, &v, zmem_render::validate_lab::lab_validation)?;
    ValidateLabRequest::verified(&v)?;
    Ok(())
}

/// The request `validate apply`'s flags make.
fn apply_request(args: &ApplyArgs) -> ValidateApplyRequest {
    ValidateApplyRequest {
        report: args.report.clone(),
        apply: ApplyConfig {
            seconds: args.seconds.unwrap_or(args.minutes * 60),
            pids: args.pid.as_ref().map(|p| p.0.clone()),
            exclude: args.exclude.clone().unwrap_or_default(),
            no_proactive: args.no_proactive,
            swap_dir: args.swap_dir.clone(),
            ..ApplyConfig::default()
        },
    }
}

fn apply(args: &ApplyArgs) -> anyhow::Result<()> {
    let req = apply_request(args);
    req.check().map_err(|e| anyhow::anyhow!(e.flag()))?;
    let bar = super::progress::Bar::new();
    let plan = req.plan(&bar)?;
    drop(bar);
    // SIGINT and SIGTERM end the watch early; the set-up is undone and the result printed.
    let stop = SignalStop::install()?;
    let r = req.apply(&plan, stop.flag(), &mut |line| super::note(line))?;
    drop(stop);
    let (json, html) = (args.json.as_deref(), args.html.as_deref());
    zmem_render::validate_apply::write_files(&r, json, html).map_err(|e| anyhow::anyhow!(e))?;
    print!("{}", zmem_render::validate_apply::text(&r));
    if !r.restored {
        anyhow::bail!("not everything was undone: see the events and what differs above");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_defaults_are_the_requests() {
        let cli: ReplayArgs = super::super::args::parse_flags(&["replay", "pages", "trace"]);
        assert_eq!(replay_request(&cli).unwrap(), ValidateReplayRequest::default());
        let cli: LabArgs = super::super::args::parse_flags(&["lab", "pages"]);
        assert_eq!(lab_request(&cli).unwrap(), ValidateLabRequest::default());
        let cli: ApplyArgs = super::super::args::parse_flags(&["apply"]);
        assert_eq!(apply_request(&cli), ValidateApplyRequest::default());
    }
}

//! `zmem validate`: zmem's models checked against the live kernel. `replay` runs a trace in real
//! memory under a memory cgroup with a kernel zram swap and compares with `zmem replay`; `lab`
//! does so for every configuration of the lab's candidate list the kernel runs, beside the lab's
//! prediction; `play` (hidden) is the player process they start, this same binary.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use zmem_kernel::record::SignalStop;
use zmem_validate::replay::{self as validate, ValidateConfig};

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
    #[arg(long, default_value = zmem_lab::DEFAULT_ALGORITHM, value_parser = super::args::algo)]
    algo: zmem_comp::AlgoSpec,
    /// The longest each kernel run may take, in seconds.
    #[arg(long, default_value_t = 600, value_parser = super::args::duration("s"))]
    timeout: u64,
    /// Runs of the kernel's side: the kernel does not repeat itself exactly at tight budgets, so
    /// its figures are the run with the median swap-outs (every run's are printed). A run the
    /// OOM killer ends is listed and the others are used.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=99))]
    kernel_runs: u64,
    /// Leave the kernel's reclaim to its own statistics flushes (every 2 s) instead of flushing
    /// the cgroup's statistics at every sample: runs shorter than a few seconds then deactivate
    /// nothing until a flush comes, and swap more, by chance.
    #[arg(long)]
    stale_stats: bool,
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
    /// median of the runs' CPU net of their baselines (one run's varies by about 40 % here).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=99))]
    kernel_runs: u64,
    /// The primary algorithm the lab's candidate list is built for (its current configuration).
    #[arg(long, default_value = "lzo-rle")]
    primary: String,
    /// The longest each kernel run may take, in seconds.
    #[arg(long, default_value_t = 600, value_parser = super::args::duration("s"))]
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
    zswap: Vec<zmem_validate::zswap_params::ZswapSettings>,
    /// The directory (the filesystem) for the zswap runs' swap file.
    #[arg(long, default_value = zmem_validate::zswap_swap::DEFAULT_SWAP_DIR)]
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

pub fn run(v: &Validate) -> anyhow::Result<()> {
    match v {
        Validate::Replay(args) => replay(args),
        Validate::Lab(args) => lab(args),
        Validate::Play => Ok(validate::player::run_stdio()?),
    }
}

fn replay(args: &ReplayArgs) -> anyhow::Result<()> {
    let page_size = 4096;
    if let Some(r) = args.ram.as_deref() {
        ram_budget(Some(r), &[], page_size)?;
    }
    let inputs = super::pages::load(std::slice::from_ref(&args.pages), page_size)?;
    let trace = super::pages::load_trace(&args.trace)?;
    let cfg = ValidateConfig {
        ram_bytes: ram_budget(args.ram.as_deref(), &trace, page_size)?,
        algorithm: super::args::plain_algo(
            &args.algo,
            "the kernel's device runs at its default parameters here",
        )?,
        page_size,
        timeout: Duration::from_secs(args.timeout),
        kernel_runs: args.kernel_runs as usize,
        flush_stats: !args.stale_stats,
    };
    // The library checks the trace against the page set, then refuses (one line) where this
    // machine cannot run the live set-up: not root, no kernel zram, no memory cgroup.
    let exe = std::env::current_exe()?;
    let player = || {
        let mut c = std::process::Command::new(&exe);
        c.args(["validate", "play"]);
        c
    };
    // SIGINT and SIGTERM end the kernel's run through its error path, which removes the
    // cgroup, the swap area and the zram device it made.
    let stop = SignalStop::install()?;
    let progress = super::progress::Bar::new();
    let v = validate::run(inputs[0].bytes(), &trace, &cfg, &player, stop.flag(), &progress)?;
    super::emit(args.json, &v, zmem_render::experiments::validation)?;
    anyhow::ensure!(v.verified, "pages swapped in differ from the pages swapped out");
    Ok(())
}

/// The RAM budget: `--ram`, or half the pages the trace touches and the player's own room
/// ([`zmem_validate::replay::default_ram_bytes`]).
fn ram_budget(
    ram: Option<&str>,
    trace: &[zmem_sim::replay::Access],
    page_size: usize,
) -> anyhow::Result<u64> {
    if let Some(r) = ram {
        let r = super::args::size("--ram", r)?;
        if r < page_size as u64 {
            bail!("--ram {r} is less than one page");
        }
        return Ok(r);
    }
    let mut seen = std::collections::HashSet::new();
    let touched = trace.iter().filter(|a| seen.insert(a.page)).count() as u64;
    Ok(zmem_validate::replay::default_ram_bytes(touched, page_size))
}

fn zswap_spec(s: &str) -> Result<zmem_validate::zswap_params::ZswapSettings, String> {
    zmem_validate::zswap_params::ZswapSettings::parse(s)
}

fn lab(args: &LabArgs) -> anyhow::Result<()> {
    let page_size = 4096;
    if !args.zswap.is_empty() {
        // zswap stores in front of every swap area: another area's pages would be counted as
        // the player's. One line and exit 2 (main's error path), before anything is read or made.
        let foreign = zmem_validate::zswap_swap::foreign_swaps(&[])?;
        if let Some(line) = zmem_validate::zswap_swap::refusal(&foreign) {
            bail!("{line}");
        }
    }
    let inputs = super::pages::load(std::slice::from_ref(&args.pages), page_size)?;
    let pages = inputs[0].bytes();
    let trace = match &args.trace {
        Some(t) => super::pages::load_trace(t)?,
        None => zmem_lab::evidence::trace_for((pages.len() / page_size) as u64)?,
    };
    let cfg = zmem_validate::lab::LabValidateConfig {
        ram_bytes: ram_budget(args.ram.as_deref(), &trace, page_size)?,
        page_size,
        timeout: Duration::from_secs(args.timeout),
        kernel_runs: args.kernel_runs as usize,
        flush_stats: true,
        primary: args.primary.clone(),
        zswap: args.zswap.clone(),
        swap_dir: args.swap_dir.clone(),
    };
    let exe = std::env::current_exe()?;
    let player = || {
        let mut c = std::process::Command::new(&exe);
        c.args(["validate", "play"]);
        c
    };
    let caps = zmem_kernel::caps::read();
    // SIGINT and SIGTERM end the kernel's run through its error path, which removes the
    // cgroup, the swap area and the zram device it made.
    let stop = SignalStop::install()?;
    let progress = super::progress::Bar::new();
    let go =
        || zmem_validate::lab::run(pages, &trace, &cfg, &caps, &player, stop.flag(), &progress);
    let v = if args.mount_debugfs && !args.zswap.is_empty() {
        let (v, notes) = zmem_kernel::zswap_state::with_debugfs_mounted(go);
        for n in notes {
            eprintln!("{n}");
        }
        v?
    } else {
        go()?
    };
    super::emit(args.json, &v, zmem_render::validate_lab::lab_validation)?;
    anyhow::ensure!(
        v.configurations.iter().all(|c| c.verified),
        "pages read back differ from the pages written"
    );
    Ok(())
}

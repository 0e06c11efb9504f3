//! `zmem status`: every zram device, zswap, the swap areas and the swap/zswap rates over a short
//! window, on one screen (or as JSON, exact bytes). Reads what the kernel lets this user read and
//! lists what it could not, with the reason.

use std::time::Duration;

use zmem_kernel::status;
use zmem_render::status as render;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON (sizes in exact bytes) instead of the terminal view.
    #[arg(long)]
    json: bool,
    /// Seconds between the two samples of /proc/vmstat the rates come from (0: no rates).
    #[arg(long, default_value_t = 1.0, value_name = "SECS", value_parser = super::args::seconds)]
    interval: f64,
    /// As root, mount debugfs at /sys/kernel/debug for this read where it is not mounted, and
    /// unmount it after (zswap's counters, zsmalloc's classes, zram's block_state live there;
    /// without this flag zmem changes nothing and lists what it could not read).
    #[arg(long)]
    mount_debugfs: bool,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    if !(args.interval.is_finite() && args.interval >= 0.0) {
        anyhow::bail!("--interval must be a number of seconds >= 0");
    }
    let opts = status::Options {
        rate_window: (args.interval > 0.0).then(|| Duration::from_secs_f64(args.interval)),
        block_state: true,
        ..status::Options::default()
    };
    let s = if args.mount_debugfs {
        let (s, notes) = zmem_kernel::zswap_state::with_debugfs_mounted(|| status::read(&opts));
        for n in notes {
            eprintln!("zmem status: {n}");
        }
        s?
    } else {
        status::read(&opts)?
    };
    super::emit(args.json, &s, render::render)
}

//! `zmem status`: every zram device, zswap, the swap areas and the swap/zswap rates over a short
//! window, on one screen (or as JSON, exact bytes). Reads what the kernel lets this user read and
//! lists what it could not, with the reason.

use zmem_lab::request::StatusRequest;
use zmem_render::status as render;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON (sizes in exact bytes) instead of the terminal view.
    #[arg(long)]
    json: bool,
    /// Seconds between the two samples of /proc/vmstat the rates come from (0: no rates).
    #[arg(long, default_value_t = StatusRequest::default().interval, value_name = "SECS", value_parser = super::args::seconds)]
    interval: f64,
    /// As root, mount debugfs at /sys/kernel/debug for this read where it is not mounted, and
    /// unmount it after (zswap's counters, zsmalloc's classes, zram's block_state live there;
    /// without this flag zmem changes nothing and lists what it could not read).
    #[arg(long)]
    mount_debugfs: bool,
}

/// The request the flags make.
fn request(args: &Args) -> StatusRequest {
    StatusRequest { interval: args.interval, mount_debugfs: args.mount_debugfs }
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let req = request(args);
    req.check().map_err(|e| anyhow::anyhow!(e.flag()))?;
    let (s, notes) = req.run()?;
    for n in notes {
        super::note(&format!("zmem status: {n}"));
    }
    super::emit(args.json, &s, render::render)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_defaults_are_the_requests() {
        let cli: Args = super::super::args::parse_flags(&["status"]);
        assert_eq!(request(&cli), StatusRequest::default());
    }
}

//! `zmem exporter`: the state `zmem status` shows, as OpenMetrics/Prometheus text, served over
//! HTTP on a loopback address by default, or written once to a node_exporter textfile.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use zmem_exporter::expose::Format;
use zmem_exporter::serve::{self, DEFAULT_PORT, Scrape};
use zmem_exporter::{advise, lab_report, textfile};
use zmem_kernel::status;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("to").args(["listen", "textfile"])))]
pub struct Args {
    /// Serve /metrics on ADDR, HOST:PORT (default 127.0.0.1:9863; give 0.0.0.0:PORT only if
    /// every host that can reach it may read it).
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// Write the metrics once to FILE, atomically (node_exporter's textfile collector reads
    /// DIR/*.prom), and exit.
    #[arg(long, value_name = "FILE")]
    textfile: Option<PathBuf>,
    /// A `zmem lab --json` report: export what its recommended configuration would save.
    #[arg(long, value_name = "FILE")]
    lab_report: Option<PathBuf>,
    /// Also count idle pages from debugfs block_state on every scrape (one line per stored
    /// page: costly on large devices).
    #[arg(long)]
    idle_pages: bool,
    /// Keep a rolling sample of the pages each live zram device stores (a few random slots at
    /// a time, in the background) and, where the kernel has zswap, of the processes' resident
    /// anonymous pages (/proc/PID/mem, a few random pages at a time), and export what every
    /// configuration the kernel's zram and zswap offer would save and cost (zmem_advice_*,
    /// zswap as device="zswap"), judged as `zmem lab` judges. Needs --listen's server (not
    /// --textfile).
    #[arg(long, conflicts_with = "textfile")]
    advise: bool,
    /// Most CPU the exporter uses with the advisor (zram and zswap sampling, scrapes and
    /// start-up together: the advisor yields), in percent of one core.
    #[arg(long, value_name = "PCT", default_value_t = 1.0, requires = "advise", value_parser = percent)]
    advise_cpu: f64,
    /// Pages the advisor's sample aims at per device (zram: stored pages; zswap: resident
    /// anonymous pages, the most its rolling sample holds).
    #[arg(long, value_name = "PAGES", default_value_t = 10_000, requires = "advise", value_parser = clap::value_parser!(u64).range(2..))]
    advise_sample: u64,
    /// Most of a device's stored pages the sample may hold, in percent (never fewer than 1024
    /// pages): every slot sampled is read once every --advise-refresh, which clears its idle mark, so
    /// this is the most an idle writeback or recompression pass can lose to the advisor.
    /// `auto`: 1 on a device with a backing device or a secondary algorithm, no cap on one
    /// with neither (nothing there acts on idle marks).
    #[arg(long, value_name = "PCT|auto", default_value = "auto", requires = "advise", value_parser = idle_share)]
    advise_idle_share: IdleShare,
    /// Seconds between two reads of one sampled slot; zswap's full sample is renewed once in
    /// this time.
    #[arg(long, value_name = "SECS", default_value_t = 600, requires = "advise", value_parser = clap::value_parser!(u64).range(1..))]
    advise_refresh: u64,
    /// The proactive-reclaim agent's status file (`zmem agent --status`), read on every scrape
    /// where it exists: zmem_agent_* metrics.
    #[arg(long, value_name = "PATH", default_value = zmem_kernel::reclaim::DEFAULT_STATUS_PATH)]
    agent_status: PathBuf,
}

/// `--advise-idle-share`: a percentage, or `auto` (None).
#[derive(Debug, Clone, Copy)]
struct IdleShare(Option<f64>);

fn idle_share(text: &str) -> Result<IdleShare, String> {
    if text == "auto" {
        return Ok(IdleShare(None));
    }
    percent(text).map(|p| IdleShare(Some(p)))
}

/// A percentage: a number above 0 and at most 100.
fn percent(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 100.0 => Ok(v),
        _ => Err(format!("{text:?}: give a percentage above 0 and at most 100")),
    }
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let lab = args.lab_report.as_deref().map(lab_report::read).transpose()?;
    let advice = if args.advise {
        let opts = advise::Options {
            cpu_percent: args.advise_cpu,
            sample_pages: args.advise_sample,
            idle_share_percent: args.advise_idle_share.0,
            refresh: std::time::Duration::from_secs(args.advise_refresh),
            ..advise::Options::default()
        };
        Some(advise::spawn(opts).map_err(|e| anyhow::anyhow!("starting the advisor: {e}"))?)
    } else {
        None
    };
    let scrape = Scrape {
        status: status::Options { block_state: args.idle_pages, ..status::Options::default() },
        lab,
        advice,
        agent: Some(zmem_exporter::agent::Source::new(args.agent_status.clone())),
    };
    if let Some(file) = &args.textfile {
        let text = scrape.run(Format::Prometheus)?;
        textfile::write_atomically(file, &text)?;
        return Ok(());
    }
    let addr = match &args.listen {
        Some(a) => resolve(a)?,
        None => SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)),
    };
    serve::serve(addr, scrape, |bound| {
        // One line, so a supervisor (or a test) knows when and where it listens.
        eprintln!("zmem exporter: listening on http://{bound}/metrics");
    })?;
    Ok(())
}

/// `--listen`'s address: an IP and port, or a host name and port (its first address).
fn resolve(addr: &str) -> anyhow::Result<SocketAddr> {
    if let Ok(a) = addr.parse() {
        return Ok(a);
    }
    addr.to_socket_addrs()
        .map_err(|e| {
            anyhow::anyhow!("--listen {addr}: {e} (give HOST:PORT, e.g. 127.0.0.1:{DEFAULT_PORT})")
        })?
        .next()
        .ok_or_else(|| anyhow::anyhow!("--listen {addr}: the name has no address"))
}

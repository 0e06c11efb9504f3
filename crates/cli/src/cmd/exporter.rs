//! `zmem exporter`: the state `zmem status` shows, as OpenMetrics/Prometheus text, served over
//! HTTP on a loopback address by default, or written once to a node_exporter textfile.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use zmem_exporter::expose::Format;
use zmem_exporter::serve::{self, DEFAULT_PORT, Scrape};
use zmem_exporter::{lab_report, textfile};
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
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let lab = args.lab_report.as_deref().map(lab_report::read).transpose()?;
    let scrape = Scrape {
        status: status::Options { block_state: args.idle_pages, ..status::Options::default() },
        lab,
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

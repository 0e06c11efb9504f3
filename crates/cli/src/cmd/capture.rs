//! `zmem capture`: the resident anonymous pages of live processes, or the pages a zram device
//! stores (`--zram`), into a page set.

use std::path::PathBuf;

use zmem_kernel::capture::Event;
use zmem_lab::{CaptureRequest, CaptureSummary, Captured, Progress};

use super::progress::Bar;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Process to capture (repeatable).
    #[arg(long = "pid", value_name = "P", value_parser = super::args::count::<u32>(0, u32::MAX.into()))]
    pids: Vec<u32>,
    /// Capture every process (except zmem itself).
    #[arg(long)]
    all: bool,
    /// Capture the processes of this cgroup (v2 directory, absolute or under /sys/fs/cgroup).
    #[arg(long, value_name = "PATH")]
    cgroup: Option<PathBuf>,
    /// Capture the pages a zram device stores (/dev/zramN, read with O_DIRECT): page 0, every
    /// slot that is not all zeros and the zero pages written to it (as many as its same_pages
    /// says), with slot indices and the device's state.
    #[arg(long, value_name = "DEV", conflicts_with_all = ["pids", "all", "cgroup"])]
    zram: Option<PathBuf>,
    /// With --zram: keep at most N pages, a uniform random sample drawn while the device is
    /// read, so memory stays at N pages whatever the device's size.
    #[arg(long, value_name = "N", requires = "zram", value_parser = super::args::count::<usize>(1, u64::MAX))]
    max_pages: Option<usize>,
    /// Compress the page set with zstd at this level (also chosen by an output name ending .zst).
    #[arg(long, value_name = "LEVEL")]
    zstd: Option<i32>,
    /// List each skipped process and why.
    #[arg(short, long)]
    verbose: bool,
    /// Output page-set file.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
}

/// The request the flags make (where the set goes, how it is compressed and what is printed
/// are the CLI's own).
fn request(args: &Args) -> CaptureRequest {
    CaptureRequest {
        pids: args.pids.clone(),
        all: args.all,
        cgroup: args.cgroup.clone(),
        zram: args.zram.clone(),
        max_pages: args.max_pages,
    }
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let req = request(args);
    req.validate().map_err(|e| match e.arg {
        // The request as a whole names nothing: said with the flags that name something.
        "" => {
            anyhow::anyhow!("nothing to capture: give --pid P, --all, --cgroup PATH or --zram DEV")
        }
        _ => anyhow::anyhow!(e.flag()),
    })?;
    let bar = Bar::counting(if req.zram.is_some() { "MiB" } else { "processes" });
    let mut pages = 0usize;
    let mut on_process = |e: Event<'_>| match e {
        Event::Start { processes } => bar.start("capture", processes as u64),
        Event::Captured { pages: n, .. } => {
            pages += n;
            bar.message(format!("{pages} pages"));
            bar.advance(1);
        }
        Event::Skipped { .. } => bar.advance(1),
    };
    let mut shown = None;
    let mut on_bytes = |done: u64, total: u64| {
        let last = *shown.get_or_insert_with(|| {
            bar.start("capture", total >> 20);
            0
        });
        bar.advance((done >> 20) - last);
        shown = Some(done >> 20);
    };
    let captured = req.run(&mut on_process, &mut on_bytes);
    // Cleared before anything else is printed.
    drop(bar);
    // Nothing captured (no such process, every one gone or unreadable): an error, and no file.
    let Captured { set, summary } = match captured {
        Err(zmem_lab::LabError::Setup(nothing)) => anyhow::bail!("{nothing}; no file written"),
        other => other?,
    };
    let compression = super::pages::compression(&args.output, args.zstd);
    set.save(&args.output, compression)?;
    if let (true, CaptureSummary::Processes(s)) = (args.verbose, &summary) {
        for (pid, why) in &s.skipped {
            super::note(&format!("skipped {pid}: {why}"));
        }
    }
    super::note(&summary.to_string());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(argv: &[&str]) -> Args {
        super::super::args::parse_flags(argv)
    }

    #[test]
    fn the_flags_map_onto_the_request() {
        let cli = flags(&["capture", "-o", "out"]);
        assert_eq!(request(&cli), CaptureRequest::default());
        let cli = flags(&["capture", "--pid", "7", "--pid", "3", "--all", "-o", "out"]);
        let want = CaptureRequest { pids: vec![7, 3], all: true, ..CaptureRequest::default() };
        assert_eq!(request(&cli), want);
    }
}

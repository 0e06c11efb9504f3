//! `zmem capture`: the resident anonymous pages of live processes, or the pages a zram device
//! stores (`--zram`), into a page set.

use std::path::PathBuf;

use anyhow::bail;
use zmem_kernel::capture::{self, Event};
use zmem_lab::Progress;

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

pub fn run(args: &Args) -> anyhow::Result<()> {
    if let Some(dev) = &args.zram {
        return run_zram(args, dev);
    }
    let mut pids = args.pids.clone();
    if args.all {
        pids.extend(capture::all_pids()?);
    }
    if let Some(cg) = &args.cgroup {
        pids.extend(capture::cgroup_pids(cg)?);
    }
    if pids.is_empty() {
        bail!("nothing to capture: give --pid P, --all, --cgroup PATH or --zram DEV");
    }
    pids.sort_unstable();
    pids.dedup();

    let bar = Bar::counting("processes");
    bar.start("capture", pids.len() as u64);
    let mut pages = 0usize;
    let (set, summary) = capture::capture(&pids, &mut |e| match e {
        Event::Start { .. } => {}
        Event::Captured { pages: n, .. } => {
            pages += n;
            bar.message(format!("{pages} pages"));
            bar.advance(1);
        }
        Event::Skipped { .. } => bar.advance(1),
    })?;
    // Cleared before anything else is printed.
    drop(bar);
    // Nothing captured (no such process, every one gone or unreadable): an error, and no file.
    if set.is_empty() {
        let why: Vec<String> =
            summary.skipped.iter().map(|(pid, why)| format!("{pid}: {why}")).collect();
        bail!(
            "nothing captured, no file written ({})",
            if why.is_empty() { "no resident anonymous pages".to_string() } else { why.join("; ") }
        );
    }
    let compression = super::pages::compression(&args.output, args.zstd);
    set.save(&args.output, compression)?;
    if args.verbose {
        for (pid, why) in &summary.skipped {
            eprintln!("skipped {pid}: {why}");
        }
    }
    eprintln!("{summary}");
    Ok(())
}

fn run_zram(args: &Args, dev: &std::path::Path) -> anyhow::Result<()> {
    let bar = Bar::counting("MiB");
    let mut shown = None;
    let mut progress = |done: u64, total: u64| {
        let last = *shown.get_or_insert_with(|| {
            bar.start("capture", total >> 20);
            0
        });
        bar.advance((done >> 20) - last);
        shown = Some(done >> 20);
    };
    let (set, summary) = match args.max_pages {
        Some(n) => capture::zram::capture_device_sampled(dev, n, 1, &mut progress)?,
        None => capture::zram::capture_device(dev, &mut progress)?,
    };
    drop(bar);
    let compression = super::pages::compression(&args.output, args.zstd);
    set.save(&args.output, compression)?;
    match args.max_pages {
        Some(_) => eprintln!("{summary}; a random sample of {} of them kept", set.len()),
        None => eprintln!("{summary}"),
    }
    Ok(())
}

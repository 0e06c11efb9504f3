//! `zmem capture`: the resident anonymous pages of live processes, into a page set.

use std::path::PathBuf;

use anyhow::bail;
use indicatif::{ProgressBar, ProgressStyle};
use zmem_workload::capture::{self, Event};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Process to capture (repeatable).
    #[arg(long = "pid", value_name = "P")]
    pids: Vec<u32>,
    /// Capture every process (except zmem itself).
    #[arg(long)]
    all: bool,
    /// Capture the processes of this cgroup (v2 directory, absolute or under /sys/fs/cgroup).
    #[arg(long, value_name = "PATH")]
    cgroup: Option<PathBuf>,
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
    let mut pids = args.pids.clone();
    if args.all {
        pids.extend(capture::all_pids()?);
    }
    if let Some(cg) = &args.cgroup {
        pids.extend(capture::cgroup_pids(cg)?);
    }
    if pids.is_empty() {
        bail!("nothing to capture: give --pid P, --all or --cgroup PATH");
    }
    pids.sort_unstable();
    pids.dedup();

    // indicatif draws only when stderr is a terminal.
    let bar = ProgressBar::new(pids.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{prefix:>8} [{bar:40}] {pos}/{len} processes {msg}")
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.set_prefix("capture");
    let mut pages = 0usize;
    let (set, summary) = capture::capture(&pids, &mut |e| match e {
        Event::Start { .. } => {}
        Event::Captured { pages: n, .. } => {
            pages += n;
            bar.set_message(format!("{pages} pages"));
            bar.inc(1);
        }
        Event::Skipped { .. } => bar.inc(1),
    })?;
    bar.finish_and_clear();
    let compression = super::generate::compression(&args.output, args.zstd);
    set.save(&args.output, compression)?;
    if args.verbose {
        for (pid, why) in &summary.skipped {
            eprintln!("skipped {pid}: {why}");
        }
    }
    eprintln!("{summary}");
    Ok(())
}

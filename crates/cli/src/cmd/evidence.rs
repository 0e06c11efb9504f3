//! `zmem evidence`: what the lab's judgement needs of this machine's memory (or of a page
//! file), without the memory: each page's flags and compressed lengths, the measured rows, the
//! kernel's abilities and what the window observed (zmem-lab's `findings`). `zmem lab FILE`
//! and zmem-fleet judge it anywhere, with their own budgets.

use std::path::PathBuf;

use zmem_lab::findings::{self, Identify};
use zmem_lab::{self as lab};

use super::lab::{LabFlags, MEASURING_OPTIONS};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to write the evidence (JSON, mode 0600; never through a link).
    #[arg(short = 'o', long, value_name = "FILE")]
    output: PathBuf,
    /// Keep the processes' ids (else each is numbered in order of appearance).
    #[arg(long)]
    pids: bool,
    /// Keep process names, cgroup paths and the source's own words (else neutral ones).
    #[arg(long)]
    names: bool,
    #[command(flatten)]
    options: LabFlags<MEASURING_OPTIONS>,
    /// Page file (raw pages or a page set); none: see --source.
    #[arg(conflicts_with_all = ["source", "no_capture"])]
    pages: Option<PathBuf>,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let mut req =
        super::lab::given(&args.options)?.finish().map_err(|e| anyhow::anyhow!(e.flag()))?;
    if let Some(path) = &args.pages {
        req.input = super::lab::page_input(path)?;
    }
    let bar = super::progress::Bar::new();
    let f = lab::measure_lab(req, &bar)?;
    drop(bar);
    let keep = Identify { pids: args.pids, names: args.names };
    let f = findings::for_file(f, keep);
    findings::write(&f, &args.output)?;
    let kept = match (keep.pids, keep.names) {
        (false, false) => "no process ids or names",
        (true, false) => "process ids kept, no names",
        (false, true) => "names kept, no process ids",
        (true, true) => "process ids and names kept",
    };
    eprintln!(
        "zmem evidence: wrote {} ({} pages: flags and {} compressors' lengths, no page bytes; \
         {kept})",
        args.output.display(),
        f.facts.pages(),
        f.facts.lengths.len()
    );
    Ok(())
}

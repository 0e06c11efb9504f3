//! `zmem conform`: zmem's zram against the live kernel's, field by field.

use std::path::PathBuf;

use zmem_experiments::conform;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Algorithm (one the running kernel's zram offers: see /sys/block/zram0/comp_algorithm).
    #[arg(long, default_value = zmem_lab::DEFAULT_ALGORITHM, value_parser = super::args::algo)]
    algo: zmem_comp::AlgoSpec,
    /// Print a JSON object instead of the report.
    #[arg(long)]
    json: bool,
    /// Page file (raw pages or a page set).
    file: PathBuf,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let inputs = super::pages::load(std::slice::from_ref(&args.file), 4096)?;
    let algo = super::args::plain_algo(
        &args.algo,
        "conform compares both devices at the algorithm's default parameters",
    )?;
    let r = conform::run(&algo, inputs[0].bytes())?;
    super::emit(args.json, &r, zmem_render::experiments::conform)?;
    anyhow::ensure!(
        r.identical(),
        "mm_stat differs from the kernel's in {} field(s)",
        r.differing.len()
    );
    Ok(())
}

//! `zmem zram-speed`: zmem's zram against the kernel's and against its bare compressor.

use std::path::PathBuf;

use zmem_experiments::zram_speed;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Algorithm, on both devices (its default parameters; one the kernel's zram offers).
    #[arg(long, default_value = zmem_lab::DEFAULT_ALGORITHM, value_parser = super::args::algo)]
    algo: zmem_comp::AlgoSpec,
    /// Rounds of kernel, zmem and bare compressor, back to back; medians are reported.
    #[arg(long, default_value_t = zram_speed::DEFAULT_ROUNDS as u16, value_parser = clap::value_parser!(u16).range(1..=100))]
    rounds: u16,
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
        "zram-speed runs both devices at the algorithm's default parameters",
    )?;
    let r = zram_speed::run(
        &algo,
        inputs[0].bytes(),
        usize::from(args.rounds),
        &super::progress::Bar::new(),
    )?;
    super::emit(args.json, &r, zmem_render::experiments::zram_speed)?;
    anyhow::ensure!(r.verified, "pages read back differ from the pages written");
    Ok(())
}

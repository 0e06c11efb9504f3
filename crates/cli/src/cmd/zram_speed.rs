//! `zmem zram-speed`: zmem's zram against the kernel's and against its bare compressor.

use std::path::PathBuf;

use zmem_experiments::zram_speed;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[arg(long, default_value = zmem_lab::DEFAULT_ALGORITHM)]
    algo: String,
    /// Rounds of kernel, zmem and bare compressor, back to back; medians are reported.
    #[arg(long, default_value_t = zram_speed::DEFAULT_ROUNDS as u16, value_parser = clap::value_parser!(u16).range(1..=100))]
    rounds: u16,
    #[arg(long)]
    json: bool,
    /// Page file (raw pages or a page set).
    file: PathBuf,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let inputs = super::pages::load(std::slice::from_ref(&args.file), 4096)?;
    let r = zram_speed::run(
        &args.algo,
        inputs[0].bytes(),
        usize::from(args.rounds),
        &super::progress::Bar::new(),
    )?;
    super::emit(args.json, &r, zmem_render::experiments::zram_speed)?;
    anyhow::ensure!(r.verified, "pages read back differ from the pages written");
    Ok(())
}

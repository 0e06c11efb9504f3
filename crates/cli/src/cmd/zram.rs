//! `zmem zram`: a page set through one zram device.

use std::path::PathBuf;

use zmem_experiments::zram_run;
use zmem_sim::device::ZramRunConfig;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Primary compression algorithm.
    #[arg(long, default_value = zmem_lab::DEFAULT_ALGORITHM)]
    algo: String,
    /// `algorithm_params` for the primary, e.g. "level=3".
    #[arg(long)]
    params: Option<String>,
    /// Allocator: zsmalloc, zbud or z3fold.
    #[arg(long, default_value = "zsmalloc")]
    pool: String,
    #[arg(long, default_value_t = 4096)]
    page_size: usize,
    /// Writer and reader threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Secondary algorithms for recompression, in priority order (repeat or comma-separate).
    #[arg(long, value_delimiter = ',')]
    recomp: Vec<String>,
    /// Arguments written to `recompress` after the writes, e.g. "type=huge".
    #[arg(long)]
    recompress: Option<String>,
    /// Print a JSON object instead of the report.
    #[arg(long)]
    json: bool,
    /// Page file (raw pages or a page set).
    file: PathBuf,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let inputs = super::pages::load(std::slice::from_ref(&args.file), args.page_size)?;
    let cfg = ZramRunConfig {
        algo: args.algo.clone(),
        params: args.params.clone(),
        pool: args.pool.clone(),
        page_size: args.page_size,
        threads: args.threads,
        recomp: args.recomp.clone(),
        recompress: args.recompress.clone(),
    };
    let r = zram_run::run(inputs[0].bytes(), &cfg, &super::progress::Bar::new())?;
    super::emit(args.json, &r, zmem_render::experiments::zram_run)?;
    anyhow::ensure!(r.verified, "pages read back differ from the pages written");
    Ok(())
}

//! `zmem zram`: a page set through one zram device.

use std::path::PathBuf;

use zmem_experiments::zram_run;
use zmem_sim::device::ZramRunConfig;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Primary compression algorithm: NAME, NAME:LEVEL or NAME:level=L,dict=FILE (the
    /// kernel's default, lzo-rle, unless given).
    #[arg(long, default_value = zmem_lab::DEFAULT_ALGORITHM, value_parser = super::args::algo)]
    algo: zmem_comp::AlgoSpec,
    /// `algorithm_params` for the primary, e.g. "level=3" (the same as `--algo NAME:level=3`;
    /// added to what --algo gives).
    #[arg(long)]
    params: Option<String>,
    /// Allocator: zsmalloc, zbud or z3fold.
    #[arg(long, default_value = "zsmalloc")]
    pool: String,
    /// Page size of the device and of a raw page file.
    #[arg(long, default_value_t = 4096, value_parser = super::args::count::<usize>(0, zmem_pages::format::MAX_PAGE_SIZE as u64))]
    page_size: usize,
    /// Writer and reader threads.
    #[arg(long, default_value_t = 1, value_parser = super::args::count::<usize>(1, super::args::MAX_THREADS))]
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
    super::args::pool(&args.pool)?;
    let inputs = super::pages::load(std::slice::from_ref(&args.file), args.page_size)?;
    let cfg = ZramRunConfig {
        algo: args.algo.name.clone(),
        params: match (args.algo.algorithm_params(), &args.params) {
            (Some(a), Some(b)) => Some(format!("{a} {b}")),
            (a, b) => a.or_else(|| b.clone()),
        },
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

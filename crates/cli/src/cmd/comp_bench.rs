//! `zmem comp-bench`: the compressor table.

use std::path::PathBuf;
use std::time::Duration;

use zmem_experiments::comp_bench::{self, AlgoSpec, Options};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Algorithms to run, comma-separated or repeated, each NAME, NAME:LEVEL or NAME:level=L,dict=FILE (default: all).
    #[arg(long)]
    algo: Vec<String>,
    /// Print a JSON array of records instead of the table.
    #[arg(long)]
    json: bool,
    /// List the algorithms and exit.
    #[arg(long)]
    list: bool,
    /// Page size to cut the inputs into.
    #[arg(long, default_value_t = 4096, value_parser = super::args::count::<usize>(0, zmem_pages::format::MAX_PAGE_SIZE as u64))]
    page_size: usize,
    /// Minimum time per timed pass over each batch, in milliseconds; the best pass counts.
    #[arg(long, default_value_t = 200, value_parser = super::args::duration("ms"))]
    min_time_ms: u64,
    /// Page files (raw pages or page sets); none: the built-in page set.
    files: Vec<PathBuf>,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    if args.list {
        for a in zmem_comp::algorithms() {
            let kernel = if a.in_kernel { "kernel" } else { "research" };
            println!("{:<10} {:<8} {}", a.name, kernel, a.summary);
        }
        return Ok(());
    }
    let specs =
        if args.algo.is_empty() { AlgoSpec::all() } else { super::args::algo_list(&args.algo)? };
    let inputs = super::pages::load(&args.files, args.page_size)?;
    let opts = Options {
        page_size: args.page_size,
        min_time: Duration::from_millis(args.min_time_ms),
        ..Options::default()
    };
    let slices: Vec<&[u8]> = inputs.iter().map(|s| s.bytes()).collect();
    let rows = comp_bench::run(&slices, &specs, &opts, &super::progress::Bar::new())?;
    super::emit(args.json, &rows, |x| zmem_render::experiments::comp_table(x))?;
    Ok(())
}

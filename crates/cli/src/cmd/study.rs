//! `zmem study`: studies that reproduce the seeds on zmem's engines.

use std::path::PathBuf;

use zmem_experiments::study::{self, StudyConfig};
use zmem_lab::Incompressible;

#[derive(Debug, clap::Subcommand)]
pub enum Study {
    /// The zpool RFC's comparison: zsmalloc, zbud and z3fold under zswap (pool size, store/load
    /// latency, time).
    Allocators(AllocatorsArgs),
}

#[derive(Debug, clap::Args)]
pub struct AllocatorsArgs {
    /// zswap's compressor (its crypto API takes no parameters, so a name alone).
    #[arg(long, default_value = zmem_lab::DEFAULT_ALGORITHM, value_parser = super::args::algo)]
    algo: zmem_comp::AlgoSpec,
    /// Page size.
    #[arg(long, default_value_t = 4096, value_parser = super::args::count::<usize>(0, zmem_pages::format::MAX_PAGE_SIZE as u64))]
    page_size: usize,
    /// Rounds; allocators are interleaved per round and each keeps its fastest round.
    #[arg(long, default_value_t = 3, value_parser = super::args::count::<usize>(1, 1000))]
    rounds: usize,
    /// Store incompressible pages as-is (6.18) instead of rejecting them (the seed's 6.8).
    #[arg(long)]
    as_is: bool,
    /// With a trace: RAM for resident pages (bytes, K/M/G suffix; default a quarter of the
    /// page set).
    #[arg(long)]
    ram: Option<String>,
    /// With a trace: zswap's max_pool_percent.
    #[arg(long, default_value_t = 20, value_parser = super::args::count::<u32>(0, u32::MAX.into()))]
    max_pool_percent: u32,
    /// Print the rows as a JSON list instead of the table.
    #[arg(long)]
    json: bool,
    /// Page set.
    pages: PathBuf,
    /// Access trace; without one every page is stored once and loaded once.
    trace: Option<PathBuf>,
}

pub fn run(cmd: &Study) -> anyhow::Result<()> {
    match cmd {
        Study::Allocators(args) => allocators(args),
    }
}

fn allocators(args: &AllocatorsArgs) -> anyhow::Result<()> {
    let inputs = super::pages::load(std::slice::from_ref(&args.pages), args.page_size)?;
    let trace = args.trace.as_deref().map(super::pages::load_trace).transpose()?;
    let ram_pages = match &args.ram {
        Some(s) => Some(super::args::size("--ram", s)? / args.page_size as u64),
        None => None,
    };
    let cfg = StudyConfig {
        algo: super::args::plain_algo(
            &args.algo,
            "zswap's compressors (the kernel's crypto API) take no parameters",
        )?,
        page_size: args.page_size,
        rounds: args.rounds,
        incompressible: if args.as_is { Incompressible::StoreAsIs } else { Incompressible::Reject },
        ram_pages,
        max_pool_percent: args.max_pool_percent,
        swap_dir: Some(std::env::temp_dir()),
    };
    let rows =
        study::allocators(inputs[0].bytes(), trace.as_deref(), &cfg, &super::progress::Bar::new())?;
    super::emit(args.json, &rows, |x| zmem_render::experiments::study(x))?;
    anyhow::ensure!(rows.iter().all(|r| r.verified), "pages came back different");
    Ok(())
}

//! `zmem study`: studies that reproduce the seeds on zmem's engines.

use std::path::PathBuf;

use zmem_lab::StudyRequest;

#[derive(Debug, clap::Subcommand)]
pub enum Study {
    /// The zpool RFC's comparison: zsmalloc, zbud and z3fold under zswap (pool size, store/load
    /// latency, time).
    Allocators(AllocatorsArgs),
}

#[derive(Debug, clap::Args)]
pub struct AllocatorsArgs {
    /// zswap's compressor (its crypto API takes no parameters, so a name alone).
    #[arg(long, default_value_t = StudyRequest::default().algo, value_parser = super::args::algo)]
    algo: zmem_comp::AlgoSpec,
    /// Page size.
    #[arg(long, default_value_t = StudyRequest::default().page_size, value_parser = super::args::count::<usize>(0, zmem_pages::format::MAX_PAGE_SIZE as u64))]
    page_size: usize,
    /// Rounds; allocators are interleaved per round and each keeps its fastest round.
    #[arg(long, default_value_t = StudyRequest::default().rounds, value_parser = super::args::count::<usize>(1, zmem_lab::request::MAX_ROUNDS as u64))]
    rounds: usize,
    /// Store incompressible pages as-is (6.18) instead of rejecting them (the seed's 6.8).
    #[arg(long)]
    as_is: bool,
    /// With a trace: RAM for resident pages (bytes, K/M/G suffix; default a quarter of the
    /// page set).
    #[arg(long)]
    ram: Option<String>,
    /// With a trace: zswap's max_pool_percent.
    #[arg(long, default_value_t = StudyRequest::default().max_pool_percent, value_parser = super::args::count::<u32>(0, u32::MAX.into()))]
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

/// The request the flags make (each flag maps onto one field).
fn request(args: &AllocatorsArgs) -> anyhow::Result<StudyRequest> {
    let ram = args.ram.as_deref().map(|s| super::args::size("--ram", s)).transpose()?;
    Ok(StudyRequest {
        algo: args.algo.clone(),
        page_size: args.page_size,
        rounds: args.rounds,
        as_is: args.as_is,
        ram,
        max_pool_percent: args.max_pool_percent,
    })
}

fn allocators(args: &AllocatorsArgs) -> anyhow::Result<()> {
    let req = request(args)?;
    req.config().map_err(|e| anyhow::anyhow!(e.flag()))?;
    let inputs = super::pages::load(std::slice::from_ref(&args.pages), args.page_size)?;
    let trace = args.trace.as_deref().map(super::pages::load_trace).transpose()?;
    let rows = req.run(&inputs[0], trace.as_deref(), &super::progress::Bar::new())?;
    super::emit(args.json, &rows, |x| zmem_render::experiments::study(x))?;
    StudyRequest::check(&rows)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(argv: &[&str]) -> AllocatorsArgs {
        super::super::args::parse_flags(argv)
    }

    #[test]
    fn the_flags_defaults_are_the_requests() {
        let cli = flags(&["allocators", "pages"]);
        assert_eq!(request(&cli).unwrap(), StudyRequest::default());
    }
}

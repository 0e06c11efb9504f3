//! `zmem comp-bench`: the compressor table.

use std::path::PathBuf;
use std::time::Duration;

use zmem_lab::CompBenchRequest;

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
    #[arg(long, default_value_t = CompBenchRequest::default().page_size, value_parser = super::args::count::<usize>(0, zmem_pages::format::MAX_PAGE_SIZE as u64))]
    page_size: usize,
    /// Minimum time per timed pass over each batch, in milliseconds; the best pass counts.
    #[arg(long, default_value_t = CompBenchRequest::default().min_time.as_millis() as u64, value_parser = super::args::duration("ms"))]
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
    let req = request(args)?;
    let inputs = super::pages::load(&args.files, args.page_size)?;
    let sets: Vec<&zmem_pages::PageSet> = inputs.iter().collect();
    let rows = req.run(&sets, &super::progress::Bar::new())?;
    super::emit(args.json, &rows, |x| zmem_render::experiments::comp_table(x))?;
    Ok(())
}

/// The request the flags make (each flag maps onto one field).
fn request(args: &Args) -> anyhow::Result<CompBenchRequest> {
    Ok(CompBenchRequest {
        algos: super::args::algo_list(&args.algo)?,
        page_size: args.page_size,
        min_time: Duration::from_millis(args.min_time_ms),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(argv: &[&str]) -> Args {
        super::super::args::parse_flags(argv)
    }

    #[test]
    fn the_flags_defaults_are_the_requests() {
        let cli = flags(&["comp-bench"]);
        assert_eq!(request(&cli).unwrap(), CompBenchRequest::default());
    }
}

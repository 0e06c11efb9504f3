//! `zmem mapbench`: the zsmapbench experiment (copy vs mapped window for a straddling object).

use std::time::Duration;

use anyhow::Context;
use zmem_experiments::mapbench::{self, Options};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// How a straddling object is read: `copy` (per-thread buffer) or `map` (two frames side by
    /// side in a virtual window).
    #[arg(long, default_value = "copy")]
    method: String,
    /// Threads, each with its own pool (default: one per CPU, as zsmapbench).
    #[arg(long, value_parser = super::args::count::<usize>(1, super::args::MAX_THREADS))]
    threads: Option<usize>,
    /// Milliseconds each thread maps.
    #[arg(long, default_value_t = 1000, value_parser = super::args::duration("ms"))]
    duration_ms: u64,
    /// Page size of the pools.
    #[arg(long, default_value_t = 4096, value_parser = super::args::count::<usize>(0, zmem_pages::format::MAX_PAGE_SIZE as u64))]
    page_size: usize,
    /// Print `{method, threads, cycles_per_map, maps_per_sec}` as JSON instead of the log.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let threads = match args.threads {
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let opts = Options {
        method: mapbench::parse_method(&args.method)?,
        threads,
        duration: Duration::from_millis(args.duration_ms),
        page_size: args.page_size,
    };
    let result = mapbench::run(&opts)?;
    if args.json {
        println!("{}", serde_json::to_string(&result.summary()).context("encoding JSON")?);
    } else {
        print!("{}", zmem_render::experiments::mapbench_log(&result));
    }
    Ok(())
}

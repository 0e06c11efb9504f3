//! `zmem gen`: generated page sets (seed 004's zram-perf pattern, docs/REFERENCES.md [seed-004],
//! or typical anonymous memory).

use std::path::PathBuf;

use zmem_pages::generate::{self, Kind};

use super::pages::compression;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Generator: perf (val + i words) or mixed (typical anonymous memory).
    #[arg(long, default_value = "mixed")]
    kind: String,
    /// Number of pages.
    #[arg(long, default_value_t = 4096, value_parser = super::args::count::<usize>(0, u64::MAX))]
    pages: usize,
    /// Page size.
    #[arg(long, default_value_t = 4096, value_parser = super::args::count::<usize>(0, zmem_pages::format::MAX_PAGE_SIZE as u64))]
    page_size: usize,
    /// Seed: the same seed gives the same bytes in every version.
    #[arg(long, default_value_t = 0, value_parser = super::args::count::<u64>(0, u64::MAX))]
    seed: u64,
    /// Write bare pages instead of a page set.
    #[arg(long, conflicts_with = "zstd")]
    raw: bool,
    /// Compress the page set with zstd at this level (also chosen by an output name ending .zst).
    #[arg(long, value_name = "LEVEL")]
    zstd: Option<i32>,
    /// Output file.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let kind = Kind::parse(&args.kind)?;
    zmem_pages::format::check_page_size(args.page_size)
        .map_err(|e| anyhow::anyhow!("--page-size: {e}"))?;
    super::args::fits_in_memory("--pages", args.pages as u64, args.page_size as u64)?;
    let set = generate::generate(kind, args.pages, args.page_size, args.seed)?;
    let written = if args.raw {
        set.save_raw(&args.output)
    } else {
        set.save(&args.output, compression(&args.output, args.zstd))
    };
    // Library errors name the file already.
    Ok(written?)
}

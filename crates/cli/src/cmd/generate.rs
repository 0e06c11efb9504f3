//! `zmem gen`: generated page sets (seed 004's zram-perf pattern, docs/REFERENCES.md [seed-004],
//! or typical anonymous memory).

use std::path::PathBuf;

use zmem_lab::GenerateRequest;

use super::pages::compression;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Generator: perf (val + i words) or mixed (typical anonymous memory).
    #[arg(long, default_value_t = GenerateRequest::default().kind)]
    kind: String,
    /// Number of pages.
    #[arg(long, default_value_t = GenerateRequest::default().pages, value_parser = super::args::count::<usize>(0, u64::MAX))]
    pages: usize,
    /// Page size.
    #[arg(long, default_value_t = GenerateRequest::default().page_size, value_parser = super::args::count::<usize>(0, zmem_pages::format::MAX_PAGE_SIZE as u64))]
    page_size: usize,
    /// Seed: the same seed gives the same bytes in every version.
    #[arg(long, default_value_t = GenerateRequest::default().seed, value_parser = super::args::count::<u64>(0, u64::MAX))]
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

/// The request the flags make (where the set goes is the CLI's own).
fn request(args: &Args) -> GenerateRequest {
    GenerateRequest {
        kind: args.kind.clone(),
        pages: args.pages,
        page_size: args.page_size,
        seed: args.seed,
    }
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let req = request(args);
    req.validate().map_err(|e| anyhow::anyhow!(e.flag()))?;
    let set = req.run()?;
    let written = if args.raw {
        set.save_raw(&args.output)
    } else {
        set.save(&args.output, compression(&args.output, args.zstd))
    };
    // Library errors name the file already.
    Ok(written?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(argv: &[&str]) -> Args {
        super::super::args::parse_flags(argv)
    }

    #[test]
    fn the_flags_defaults_are_the_requests() {
        let cli = flags(&["gen", "-o", "out"]);
        assert_eq!(request(&cli), GenerateRequest::default());
    }
}

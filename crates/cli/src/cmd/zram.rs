//! `zmem zram`: a page set through one zram device.

use std::path::PathBuf;

use zmem_lab::ZramRequest;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Primary compression algorithm: NAME, NAME:LEVEL or NAME:level=L,dict=FILE (the
    /// kernel's default, lzo-rle, unless given).
    #[arg(long, default_value_t = ZramRequest::default().algo, value_parser = super::args::algo)]
    algo: zmem_comp::AlgoSpec,
    /// `algorithm_params` for the primary, e.g. "level=3" (the same as `--algo NAME:level=3`;
    /// added to what --algo gives).
    #[arg(long)]
    params: Option<String>,
    /// Allocator: zsmalloc, zbud or z3fold.
    #[arg(long, default_value_t = ZramRequest::default().pool)]
    pool: String,
    /// Page size of the device and of a raw page file.
    #[arg(long, default_value_t = ZramRequest::default().page_size, value_parser = super::args::count::<usize>(0, zmem_pages::format::MAX_PAGE_SIZE as u64))]
    page_size: usize,
    /// Writer and reader threads.
    #[arg(long, default_value_t = ZramRequest::default().threads, value_parser = super::args::count::<usize>(1, super::args::MAX_THREADS))]
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

/// The request the flags make (each flag maps onto one field).
fn request(args: &Args) -> ZramRequest {
    ZramRequest {
        algo: args.algo.clone(),
        params: args.params.clone(),
        pool: args.pool.clone(),
        page_size: args.page_size,
        threads: args.threads,
        recomp: args.recomp.clone(),
        recompress: args.recompress.clone(),
    }
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let req = request(args);
    req.validate().map_err(|e| anyhow::anyhow!(e.flag()))?;
    let inputs = super::pages::load(std::slice::from_ref(&args.file), args.page_size)?;
    let r = req.run(&inputs[0], &super::progress::Bar::new())?;
    super::emit(args.json, &r, zmem_render::experiments::zram_run)?;
    ZramRequest::check(&r)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(argv: &[&str]) -> Args {
        super::super::args::parse_flags(argv)
    }

    #[test]
    fn the_flags_defaults_are_the_requests() {
        let cli = flags(&["zram", "pages"]);
        assert_eq!(request(&cli), ZramRequest::default());
    }
}

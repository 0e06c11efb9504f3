//! `zmem export`: rewrite a page file as bare pages or as a page set.

use std::path::PathBuf;

use zmem_pages::ReadOptions;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("to").required(true).args(["raw", "page_set"])))]
pub struct Args {
    /// Write the bare pages, back to back (no header, no metadata).
    #[arg(long)]
    raw: bool,
    /// Write the page-set format (plain, or zstd with --zstd or an output name ending .zst).
    #[arg(long)]
    page_set: bool,
    /// zstd level for --page-set.
    #[arg(long, value_name = "LEVEL", requires = "page_set")]
    zstd: Option<i32>,
    /// Page size of a raw input file (page sets carry their own).
    #[arg(long, default_value_t = 4096, value_parser = super::args::count::<usize>(0, zmem_pages::format::MAX_PAGE_SIZE as u64))]
    page_size: usize,
    /// Output file.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: PathBuf,
    /// Input: a page set (plain or zstd) or a raw page file.
    file: PathBuf,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let opts = ReadOptions { page_size: args.page_size, ..ReadOptions::default() };
    let set = super::pages::map(&args.file, &opts)?;
    let written = if args.raw {
        set.save_raw(&args.output)
    } else {
        set.save(&args.output, super::pages::compression(&args.output, args.zstd))
    };
    written?;
    eprintln!(
        "wrote {} pages of {} bytes to {}",
        set.len(),
        set.page_size(),
        args.output.display()
    );
    Ok(())
}

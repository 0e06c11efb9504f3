//! `zmem compress` and `zmem decompress`: one buffer through one stream, stdin to stdout.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use zmem_comp::{Params, compress_bound};

/// Arguments shared by both directions: which stream to build.
#[derive(Debug, clap::Args)]
pub struct StreamArgs {
    /// Algorithm, by the kernel's name (`zmem comp-bench --list` shows them).
    #[arg(long)]
    algo: String,
    /// Compression level (acceleration for lz4).
    #[arg(long, allow_hyphen_values = true)]
    level: Option<i32>,
    /// Dictionary file (zstd, lz4, lz4hc), as zram's `algorithm_params dict=`.
    #[arg(long)]
    dict: Option<PathBuf>,
    /// Raw deflate window bits, as zram's `deflate.winbits=`.
    #[arg(long = "deflate-winbits", allow_hyphen_values = true)]
    deflate_winbits: Option<i32>,
    /// Page size the stream is set up for; the buffer may be up to two pages.
    #[arg(long, default_value_t = 4096, value_parser = super::args::count::<usize>(0, zmem_pages::format::MAX_PAGE_SIZE as u64))]
    page_size: usize,
}

/// `zmem compress`.
#[derive(Debug, clap::Args)]
pub struct CompressArgs {
    #[command(flatten)]
    stream: StreamArgs,
}

/// `zmem decompress`.
#[derive(Debug, clap::Args)]
pub struct DecompressArgs {
    #[command(flatten)]
    stream: StreamArgs,
}

impl StreamArgs {
    fn build(&self) -> anyhow::Result<Box<dyn zmem_comp::Compressor>> {
        let dict = match &self.dict {
            Some(path) => {
                let bytes = std::fs::read(path)
                    .with_context(|| format!("reading dictionary {}", path.display()))?;
                Some(Arc::<[u8]>::from(bytes))
            }
            None => None,
        };
        let params = Params { level: self.level, dict, deflate_winbits: self.deflate_winbits };
        Ok(zmem_comp::create(&self.algo, &params, self.page_size)?)
    }

    /// The most a buffer may hold: two pages, as zram's compression buffer.
    fn max_buffer(&self) -> usize {
        2 * self.page_size
    }
}

/// Reads all of stdin, refusing more than `limit` bytes.
fn read_stdin(limit: usize) -> anyhow::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(limit.min(1 << 16));
    std::io::stdin()
        .lock()
        .take(limit as u64 + 1)
        .read_to_end(&mut buf)
        .context("reading stdin")?;
    if buf.len() > limit {
        bail!(
            "input is larger than {limit} bytes; this command takes one buffer of up to two pages"
        );
    }
    Ok(buf)
}

fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes).and_then(|()| out.flush()).context("writing stdout")
}

pub fn compress(args: &CompressArgs) -> anyhow::Result<()> {
    let mut stream = args.stream.build()?;
    let src = read_stdin(args.stream.max_buffer())?;
    let mut dst = vec![0u8; compress_bound(src.len())];
    let n = stream.compress(&src, &mut dst)?;
    write_stdout(&dst[..n])
}

pub fn decompress(args: &DecompressArgs) -> anyhow::Result<()> {
    let mut stream = args.stream.build()?;
    let max = args.stream.max_buffer();
    let src = read_stdin(compress_bound(max))?;
    let mut dst = vec![0u8; max];
    let n = stream.decompress(&src, &mut dst)?;
    write_stdout(&dst[..n])
}

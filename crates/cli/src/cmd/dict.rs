//! `zmem dict`: dictionaries for zram's `algorithm_params dict=` (zstd, lz4).

use std::path::PathBuf;

use anyhow::Context;
use serde::Serialize;
use zmem_experiments::dict::{self, DictEffect};

#[derive(Debug, clap::Subcommand)]
pub enum Dict {
    /// Train a dictionary on a page set, write it, and print its effect on a zram device.
    Train(TrainArgs),
}

#[derive(Debug, clap::Args)]
pub struct TrainArgs {
    /// Algorithm the dictionary is for: zstd or lz4 (lz4 uses at most the last 64 KiB).
    #[arg(long)]
    algo: String,
    /// Largest dictionary size (bytes, K/M suffix).
    #[arg(long, default_value = "64K")]
    size: String,
    /// Pages sampled (evenly) for training.
    #[arg(long, default_value_t = dict::DEFAULT_SAMPLES, value_parser = super::args::count::<usize>(1, 1 << 24))]
    samples: usize,
    /// Level (zstd) or acceleration (lz4) of the measuring devices, as `algorithm_params level=`.
    #[arg(long, allow_negative_numbers = true)]
    level: Option<i32>,
    /// Train on the first half of the pages and measure on the second (else both are all pages,
    /// which flatters the dictionary).
    #[arg(long)]
    holdout: bool,
    /// Page size of the pages and the devices.
    #[arg(long, default_value_t = 4096, value_parser = super::args::count::<usize>(0, zmem_pages::format::MAX_PAGE_SIZE as u64))]
    page_size: usize,
    /// Print a JSON object instead of the report.
    #[arg(long)]
    json: bool,
    /// Page file (raw pages or a page set).
    pages: PathBuf,
    /// Where to write the dictionary.
    #[arg(short = 'o', long = "output", value_name = "DICT")]
    output: PathBuf,
}

/// What `--json` prints.
#[derive(Debug, Serialize)]
struct TrainReport<'a> {
    dict: &'a std::path::Path,
    /// The `algorithm_params` line that gives zram the dictionary.
    algorithm_params: String,
    trained_on_pages: u64,
    /// "other half" with `--holdout`, else "training pages".
    measured_on: &'static str,
    effect: DictEffect,
}

pub fn run(cmd: &Dict) -> anyhow::Result<()> {
    match cmd {
        Dict::Train(args) => train(args),
    }
}

fn train(args: &TrainArgs) -> anyhow::Result<()> {
    let size = super::args::size("--size", &args.size)?;
    let size = usize::try_from(size).context("--size: too large")?;
    let inputs = super::pages::load(std::slice::from_ref(&args.pages), args.page_size)?;
    let pages = inputs[0].bytes();
    let (train_on, measure_on) =
        if args.holdout { dict::halves(pages, args.page_size) } else { (pages, pages) };
    let d = dict::train(train_on, args.page_size, &args.algo, size, args.samples)?;
    std::fs::write(&args.output, &d)
        .with_context(|| format!("writing {}", args.output.display()))?;
    let effect = dict::evaluate(
        measure_on,
        args.page_size,
        &args.algo,
        &d,
        args.level,
        &super::progress::Bar::new(),
    )?;
    let path = std::path::absolute(&args.output).unwrap_or_else(|_| args.output.clone());
    let report = TrainReport {
        algorithm_params: format!("algo={} {}", args.algo, dict::params_line(&path, args.level)?),
        dict: &path,
        trained_on_pages: (train_on.len() / args.page_size) as u64,
        measured_on: if args.holdout { "other half" } else { "training pages" },
        effect,
    };
    super::emit(args.json, &report, |r| {
        format!(
            "wrote {}: trained on {} pages, measured on the {}\n{}\
             zram: echo '{}' > /sys/block/zramN/algorithm_params (before disksize)\n",
            r.dict.display(),
            r.trained_on_pages,
            r.measured_on,
            zmem_render::experiments::dict_effect(&r.effect),
            r.algorithm_params
        )
    })?;
    anyhow::ensure!(report.effect.verified, "pages read back differ from the pages written");
    Ok(())
}

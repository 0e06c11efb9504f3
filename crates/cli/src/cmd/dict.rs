//! `zmem dict`: dictionaries for zram's `algorithm_params dict=` (zstd, lz4).

use std::path::PathBuf;

use zmem_lab::request::{DictTrainRequest, MAX_SAMPLES, shown_size};

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
    #[arg(long, default_value_t = shown_size(DictTrainRequest::default().size))]
    size: String,
    /// Pages sampled (evenly) for training.
    #[arg(long, default_value_t = DictTrainRequest::default().samples, value_parser = super::args::count::<usize>(1, MAX_SAMPLES as u64))]
    samples: usize,
    /// Level (zstd) or acceleration (lz4) of the measuring devices, as `algorithm_params level=`.
    #[arg(long, allow_negative_numbers = true)]
    level: Option<i32>,
    /// Train on the first half of the pages and measure on the second (else both are all pages,
    /// which flatters the dictionary).
    #[arg(long)]
    holdout: bool,
    /// Page size of the pages and the devices.
    #[arg(long, default_value_t = DictTrainRequest::default().page_size, value_parser = super::args::count::<usize>(0, zmem_pages::format::MAX_PAGE_SIZE as u64))]
    page_size: usize,
    /// Print a JSON object instead of the report.
    #[arg(long)]
    json: bool,
    /// Page file (raw pages or a page set).
    #[arg(required_unless_present = "live", conflicts_with = "live")]
    pages: Option<PathBuf>,
    /// Train on this machine's processes' resident anonymous pages instead of a page file
    /// (as root; read as `zmem lab` reads them, nothing written but the dictionary).
    #[arg(long)]
    live: bool,
    /// Where to write the dictionary.
    #[arg(short = 'o', long = "output", value_name = "DICT")]
    output: PathBuf,
}

/// The request the flags make (each flag maps onto one field).
fn request(args: &TrainArgs) -> anyhow::Result<DictTrainRequest> {
    Ok(DictTrainRequest {
        algo: args.algo.clone(),
        size: super::args::size("--size", &args.size)?,
        samples: args.samples,
        level: args.level,
        holdout: args.holdout,
        page_size: args.page_size,
        output: args.output.clone(),
    })
}

pub fn run(cmd: &Dict) -> anyhow::Result<()> {
    match cmd {
        Dict::Train(args) => train(args),
    }
}

fn train(args: &TrainArgs) -> anyhow::Result<()> {
    let req = request(args)?;
    req.check().map_err(|e| anyhow::anyhow!(e.flag()))?;
    let report = match &args.pages {
        Some(pages) => {
            let inputs = super::pages::load(std::slice::from_ref(pages), args.page_size)?;
            req.run(inputs[0].bytes(), &super::progress::Bar::new())?
        }
        None => req.run_live(&super::progress::Bar::new())?,
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
    DictTrainRequest::verified(&report)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_defaults_are_the_requests() {
        let cli: TrainArgs =
            super::super::args::parse_flags(&["train", "--algo", "zstd", "-o", "d", "pages"]);
        let want =
            DictTrainRequest { algo: "zstd".into(), output: "d".into(), ..Default::default() };
        assert_eq!(request(&cli).unwrap(), want);
    }
}

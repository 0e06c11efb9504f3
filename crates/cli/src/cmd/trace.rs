//! `zmem trace`: access traces (generate, describe).

use std::path::PathBuf;

use zmem_workload::trace::generate::{self, Options};
use zmem_workload::trace::{Summary, Trace};

/// How many of the most accessed pages `trace info` lists.
const HOTTEST: usize = 5;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Generate a trace: a Zipf-popular working set with phase changes and idle periods.
    Gen(GenArgs),
    /// Print a trace's size, span, write share and hottest pages.
    Info {
        /// Print a JSON object instead of the text.
        #[arg(long)]
        json: bool,
        /// Trace file.
        file: PathBuf,
    },
}

#[derive(Debug, clap::Args)]
struct GenArgs {
    /// Page ids are below this (the page set the trace will be replayed on).
    #[arg(long, default_value_t = 65536)]
    pages: u64,
    /// Number of accesses.
    #[arg(long, default_value_t = 1_000_000)]
    accesses: u64,
    /// Pages in each phase's working set (default: a quarter of --pages).
    #[arg(long)]
    working_set: Option<u64>,
    /// Number of phases; each has its own working set and ranking.
    #[arg(long, default_value_t = 4)]
    phases: u32,
    /// Zipf exponent of page popularity.
    #[arg(long, default_value_t = 0.99)]
    zipf: f64,
    /// Share of accesses that are writes.
    #[arg(long, default_value_t = 0.3)]
    write_fraction: f64,
    /// Mean gap between accesses within a burst, in microseconds.
    #[arg(long, default_value_t = 10)]
    gap_us: u64,
    /// Bursts per phase, separated by idle periods.
    #[arg(long, default_value_t = 4)]
    bursts: u32,
    /// Base idle period between bursts, in milliseconds (each is 1-4 times this).
    #[arg(long, default_value_t = 2000)]
    idle_ms: u64,
    /// Seed: the same seed gives the same trace in every version.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output trace file.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    match &args.command {
        Sub::Gen(g) => {
            let o = Options {
                pages: g.pages,
                accesses: g.accesses,
                working_set: g.working_set.unwrap_or((g.pages / 4).max(1)),
                phases: g.phases,
                zipf: g.zipf,
                write_fraction: g.write_fraction,
                mean_gap_ns: g.gap_us.saturating_mul(1000),
                bursts_per_phase: g.bursts,
                idle_ns: g.idle_ms.saturating_mul(1_000_000),
                seed: g.seed,
            };
            let t = generate::generate(&o)?;
            Ok(t.save(&g.output)?)
        }
        Sub::Info { json, file } => {
            let summary = Trace::open(file)?.summary(HOTTEST);
            super::emit(*json, &summary, render_summary)
        }
    }
}

fn render_summary(s: &Summary) -> String {
    let top: Vec<String> = s.hottest.iter().map(|h| format!("{}:{}", h.page, h.accesses)).collect();
    format!(
        "accesses     {}\npage count   {}\npages used   {}\nwrites       {} ({:.1} %)\n\
         span         {:.3} s\nhottest      {}\n",
        s.accesses,
        s.page_count,
        s.pages_used,
        s.writes,
        100.0 * s.write_fraction,
        s.span_ns as f64 / 1e9,
        top.join(" ")
    )
}

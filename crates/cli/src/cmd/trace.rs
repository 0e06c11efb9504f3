//! `zmem trace`: access traces (generate, record from live processes, describe).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use zmem_kernel::capture;
use zmem_kernel::record::{self, SignalStop};
use zmem_pages::trace::generate::{self, Options};
use zmem_pages::trace::{Summary, Trace};
use zmem_pages::{Compression, PageSet};

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
    /// Record what live processes touch: their pages now into a page set, then their accesses
    /// for a while into a trace over it (DAMON where usable, else soft-dirty bits: writes
    /// only, else page-out sampling into a zram swap device made for the recording).
    Record(RecordArgs),
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
    #[arg(long, default_value_t = 65536, value_parser = super::args::count::<u64>(1, 1 << 32))]
    pages: u64,
    /// Number of accesses.
    #[arg(long, default_value_t = 1_000_000, value_parser = super::args::count::<u64>(0, u64::MAX))]
    accesses: u64,
    /// Pages in each phase's working set (default: a quarter of --pages).
    #[arg(long, value_parser = super::args::count::<u64>(1, 1 << 26))]
    working_set: Option<u64>,
    /// Number of phases; each has its own working set and ranking.
    #[arg(long, default_value_t = 4, value_parser = super::args::count::<u32>(1, 1 << 20))]
    phases: u32,
    /// Zipf exponent of page popularity.
    #[arg(long, default_value_t = 0.99)]
    zipf: f64,
    /// Share of accesses that are writes.
    #[arg(long, default_value_t = 0.3)]
    write_fraction: f64,
    /// Mean gap between accesses within a burst, in microseconds.
    #[arg(long, default_value_t = 10, value_parser = super::args::count::<u64>(0, super::args::MAX_SECS * 1_000_000))]
    gap_us: u64,
    /// Bursts per phase, separated by idle periods.
    #[arg(long, default_value_t = 4, value_parser = super::args::count::<u32>(1, 1 << 20))]
    bursts: u32,
    /// Base idle period between bursts, in milliseconds (each is 1-4 times this).
    #[arg(long, default_value_t = 2000, value_parser = super::args::count::<u64>(0, super::args::MAX_SECS * 1000))]
    idle_ms: u64,
    /// Seed: the same seed gives the same trace in every version.
    #[arg(long, default_value_t = 0, value_parser = super::args::count::<u64>(0, u64::MAX))]
    seed: u64,
    /// Pages of a file the trace also reads (page cache); 0 for none.
    #[arg(long, default_value_t = 0, value_parser = super::args::count::<u64>(0, 1 << 26))]
    file_pages: u64,
    /// Share of accesses that are file reads (with --file-pages).
    #[arg(long, default_value_t = 0.2)]
    file_fraction: f64,
    /// Output trace file.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
}

#[derive(Debug, clap::Args)]
struct RecordArgs {
    /// Process to record (repeatable).
    #[arg(long = "pid", value_name = "P", required_unless_present = "cgroup", value_parser = super::args::count::<u32>(0, u32::MAX.into()))]
    pids: Vec<u32>,
    /// Record the processes of this cgroup (its directory, absolute or under /sys/fs/cgroup).
    #[arg(long, value_name = "PATH", conflicts_with = "pids")]
    cgroup: Option<PathBuf>,
    /// How long to record, in seconds (fractions allowed).
    #[arg(long, value_name = "S", value_parser = super::args::seconds)]
    duration: f64,
    /// Time between two observations, in milliseconds: the trace's time resolution.
    #[arg(long, value_name = "MS", default_value_t = 100, value_parser = super::args::count::<u64>(0, super::args::MAX_SECS * 1000))]
    interval: u64,
    /// How to watch the pages: damon, soft-dirty (writes only) or page-out (reads and writes;
    /// every page touched in an interval costs the process a major fault). Default: the first
    /// of these that works here.
    #[arg(long, value_name = "METHOD")]
    method: Option<record::Method>,
    /// Where to write the page set the trace's page ids index (default: TRACE.pages).
    #[arg(long, value_name = "FILE")]
    pages: Option<PathBuf>,
    /// Output trace file.
    #[arg(short = 'o', long = "output", value_name = "TRACE")]
    output: PathBuf,
}

fn run_record(a: &RecordArgs) -> anyhow::Result<()> {
    if !(a.duration.is_finite() && a.duration > 0.0 && a.duration <= 1e6) {
        bail!("--duration must be a number of seconds above 0 (and at most 1000000)");
    }
    let mut pids = a.pids.clone();
    if let Some(cg) = &a.cgroup {
        pids.extend(capture::cgroup_pids(cg)?);
        if pids.is_empty() {
            bail!("cgroup {} has no process", cg.display());
        }
    }
    pids.sort_unstable();
    pids.dedup();
    let opts = record::Options {
        pids,
        duration: Duration::from_secs_f64(a.duration),
        interval: Duration::from_millis(a.interval),
        method: a.method,
    };
    record::check(&opts)?;
    let pages_path = a.pages.clone().unwrap_or_else(|| {
        let mut p = a.output.clone().into_os_string();
        p.push(".pages");
        p.into()
    });
    // SIGINT and SIGTERM end the recording early, keeping what it saw.
    let stop = SignalStop::install()?;
    let mut make_swap = zmem_kernel::harness::page_out_swap;
    let bar = super::progress::Bar::counting("intervals");
    let intervals = (opts.duration.as_nanos() / opts.interval.as_nanos()) as u64;
    zmem_lab::Progress::start(&bar, "recording", intervals);
    let r = record::record(
        &opts,
        stop.flag(),
        &mut |_| zmem_lab::Progress::advance(&bar, 1),
        &mut make_swap,
    )?;
    drop(bar);
    drop(stop);
    super::note(&format!("zmem trace record: recorded with {}: {}", r.origin.name(), r.note));
    if let Some(why) = &r.ended_early {
        super::note(&format!("zmem trace record: ended early: {why}"));
    }
    save_pages(&r.pages, &pages_path)?;
    r.trace.save_as(&a.output, r.origin)?;
    eprintln!(
        "zmem trace record: {}; {} accesses in {} intervals of {} ms to {} (pages: {})",
        r.capture,
        r.trace.accesses.len(),
        r.intervals,
        a.interval,
        a.output.display(),
        pages_path.display()
    );
    Ok(())
}

fn save_pages(set: &PageSet, path: &std::path::Path) -> anyhow::Result<()> {
    Ok(set.save(path, Compression::None)?)
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    match &args.command {
        Sub::Record(a) => run_record(a),
        Sub::Gen(g) => {
            let access = std::mem::size_of::<zmem_pages::trace::Access>() as u64;
            super::args::fits_in_memory("--accesses", g.accesses, access)?;
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
                file_pages: g.file_pages,
                file_fraction: g.file_fraction,
            };
            let t = generate::generate(&o)?;
            Ok(t.save(&g.output)?)
        }
        Sub::Info { json, file } => {
            let (trace, origin) = Trace::open_with_origin(file)?;
            let info = Info { origin: origin.name(), summary: trace.summary(HOTTEST) };
            super::emit(*json, &info, render_info)
        }
    }
}

/// `trace info`: how the trace was made (its header's origin), then its summary.
#[derive(serde::Serialize)]
struct Info {
    origin: &'static str,
    #[serde(flatten)]
    summary: Summary,
}

fn render_info(i: &Info) -> String {
    let s = &i.summary;
    let top: Vec<String> = s.hottest.iter().map(|h| format!("{}:{}", h.page, h.accesses)).collect();
    let mut out = format!(
        "origin       {}\naccesses     {}\npage count   {}\npages used   {}\n\
         writes       {} ({:.1} %)\nspan         {:.3} s\nhottest      {}\n",
        i.origin,
        s.accesses,
        s.page_count,
        s.pages_used,
        s.writes,
        100.0 * s.write_fraction,
        s.span_ns as f64 / 1e9,
        top.join(" ")
    );
    if s.file_pages > 0 {
        out += &format!(
            "file pages   {} ({} read)\nfile reads   {}\n",
            s.file_pages, s.file_pages_used, s.file_reads
        );
    }
    out
}

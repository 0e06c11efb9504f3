//! `zmem lab`: this machine's memory (or a page file, or the built-in set) through every
//! configuration, a report and a recommendation.

use std::path::PathBuf;

use zmem_lab::{self as lab, Coverage, Input, LabRequest};
use zmem_render as report;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the report as JSON (schema: docs/lab-report.schema.json) instead of the summary.
    #[arg(long)]
    json: bool,
    /// Also write report.html and report.json into this directory (`--out` works too).
    #[arg(short = 'o', long, visible_alias = "out", value_name = "DIR")]
    output: Option<PathBuf>,
    /// Where the pages come from: `zram` (the active zram swap devices: what the kernel
    /// compresses now), `processes` (this machine's processes' anonymous memory) or `builtin`
    /// (a generated set). Default: zram if any is active and readable, else processes, else
    /// builtin, and the report says which and why (its first line says a fallback). A source
    /// named never falls back: if it cannot be used, zmem says why and exits with status 2.
    #[arg(long, value_name = "SOURCE", value_parser = ["zram", "processes", "builtin"])]
    source: Option<String>,
    /// Same as `--source builtin`.
    #[arg(long, conflicts_with = "source")]
    no_capture: bool,
    /// As root, mount debugfs at /sys/kernel/debug for the read of zswap's counters where it is
    /// not mounted, and unmount it after (without this flag zmem changes nothing and says which
    /// counters it could not read).
    #[arg(long)]
    mount_debugfs: bool,
    /// Seconds to watch the live system's swap traffic for the CPU cost projection (0 skips;
    /// with no swap active there is nothing to watch and the trace replay's rates are used).
    #[arg(long, default_value_t = LabRequest::default().observe_secs, value_name = "SECONDS", value_parser = super::args::duration("s"))]
    observe: u64,
    /// Most pages to run on: a number (a larger capture or file is sampled evenly down to it)
    /// or `all` (every page). Without it (and without --sample) a larger input is sampled at
    /// random as by `--sample 6144`.
    #[arg(long, value_name = "N|all", value_parser = max_pages, conflicts_with = "sample")]
    max_pages: Option<Coverage>,
    /// Run on a stratified random sample of N pages and estimate the pool, ratio and memory
    /// saved of every page of the input, with 95 % confidence intervals (docs/BENCHMARKS.md,
    /// "Sampling"). Default for inputs of more than 6144 pages: 6144.
    #[arg(long, value_name = "N", value_parser = super::args::count::<u64>(2, 1 << 32))]
    sample: Option<u64>,
    /// CPU the recommended configuration may use, in percent of one core (compression of the
    /// swap-outs, decompression of the swap-ins, background recompression).
    #[arg(long, default_value_t = lab::Budgets::default().cpu_percent_of_core, value_name = "PERCENT")]
    cpu_budget: f64,
    /// Most the recommended configuration may add to the p99 swap-in latency end to end, in
    /// microseconds: the read's, and where memory is full the 32 pages a fault reclaims, each
    /// compressed by the candidate.
    #[arg(long, default_value_t = lab::Budgets::default().added_load_p99_us, value_name = "MICROSECONDS")]
    latency_budget: f64,
    /// The block device behind a swap file, whose 4 KiB latency the zram-vs-zswap replays
    /// charge to every device read and write: `auto` (this machine's: its swap file's
    /// directory or the one zswap's swap file would go in, measured for about a second with
    /// O_DIRECT; a swap partition's kind), a profile (nvme, ssd, emmc, hdd) or a path on the
    /// device to measure.
    #[arg(long, default_value_t = lab::swap_device_text(&LabRequest::default().swap_device), value_name = "auto|PATH|nvme|ssd|emmc|hdd")]
    swap_device: String,
    /// Write the shell script that applies the decision (and nothing else) from this
    /// machine's state, for you to review and run as root; zmem runs none of it.
    #[arg(long, value_name = "FILE")]
    apply_script: Option<PathBuf>,
    /// Write the shell script that undoes what the apply script changed (it reads the state
    /// the apply saved in /var/lib/zmem/undo).
    #[arg(long, value_name = "FILE")]
    undo_script: Option<PathBuf>,
    /// Replay this access trace (`zmem trace record`'s, `zmem trace gen`'s, any) instead of
    /// the generated one; its page ids index the page set (before sampling to --max-pages).
    #[arg(long, value_name = "TRACE")]
    trace: Option<PathBuf>,
    /// Threads the measurements run on (0: one per core).
    #[arg(long, default_value_t = LabRequest::default().threads, value_name = "N", value_parser = super::args::count::<usize>(0, super::args::MAX_THREADS))]
    threads: usize,
    /// Least time each compressor pass is timed for, in milliseconds.
    #[arg(long, default_value_t = LabRequest::default().min_time.as_millis() as u64, value_name = "MS", value_parser = super::args::duration("ms"))]
    min_time_ms: u64,
    /// Page file (raw pages or a page set, such as `zmem capture --zram`'s); none: see --source.
    #[arg(conflicts_with_all = ["source", "no_capture"])]
    pages: Option<PathBuf>,
}

/// `--max-pages`: a positive number of pages, or `all` (the library's parser).
fn max_pages(text: &str) -> Result<Coverage, String> {
    lab::parse_max_pages(text).map_err(|e| e.to_string())
}

/// The request the flags make (each flag maps onto one field of [`LabRequest`]).
fn request(args: &Args) -> anyhow::Result<LabRequest> {
    let input = if let Some(path) = &args.pages {
        // The lab has no --page-size: a page set of another size is refused in its own words.
        let opts = zmem_pages::ReadOptions { page_size: 4096, ..Default::default() };
        let set = super::pages::map(path, &opts)?;
        if set.page_size() != 4096 {
            anyhow::bail!(
                "{} holds {}-byte pages; zmem lab FILE measures 4096-byte pages only",
                path.display(),
                set.page_size()
            );
        }
        Input::Pages { set, label: path.display().to_string() }
    } else if args.no_capture {
        Input::Builtin
    } else {
        match args.source.as_deref() {
            Some(s) => lab::parse_source(s)?,
            None => Input::Auto,
        }
    };
    let sample = args.sample.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    Ok(LabRequest {
        input,
        coverage: lab::coverage(args.max_pages, sample)?,
        observe_secs: args.observe,
        budgets: lab::Budgets::checked(args.cpu_budget, args.latency_budget)?,
        swap_device: lab::parse_swap_device(&args.swap_device)
            .map_err(|e| anyhow::anyhow!("--swap-device: {e}"))?,
        trace: args.trace.clone(),
        threads: args.threads,
        min_time: std::time::Duration::from_millis(args.min_time_ms),
        mount_debugfs: args.mount_debugfs,
    })
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let req = request(args)?;
    let bar = super::progress::Bar::new();
    let r = lab::run_lab(req, &bar)?;
    drop(bar);
    // The source's words can come from a page set's metadata: no control character passes.
    let clean = report::script::terminal;
    eprintln!(
        "zmem lab: {} pages ({}: {})",
        r.source.pages,
        clean(&r.source.kind),
        clean(&r.source.detail)
    );
    if r.trace.kind == "file" {
        eprintln!("zmem lab: replayed {}", clean(&r.trace.detail));
    }
    let outputs = report::LabOutputs {
        apply_script: args.apply_script.clone(),
        undo_script: args.undo_script.clone(),
        dir: args.output.clone(),
    };
    // The error's own line (`writing PATH: why`) without its source again (`{:#}` adds it).
    let json = report::write_lab_outputs(&r, &outputs).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(path) = &outputs.apply_script {
        eprintln!("zmem lab: wrote {} (review it; nothing was run)", path.display());
    }
    if let Some(path) = &outputs.undo_script {
        eprintln!("zmem lab: wrote {} (it undoes what the apply script did)", path.display());
    }
    if let Some(dir) = &outputs.dir {
        let (html, json) = (dir.join("report.html"), dir.join("report.json"));
        eprintln!("zmem lab: wrote {} and {}", html.display(), json.display());
    }
    if args.json {
        println!("{json}");
    } else {
        print!("{}", report::render_summary(&r));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_swap_devices_default_is_the_requests() {
        let cli: Args = super::super::args::parse_flags(&["lab"]);
        assert_eq!(cli.swap_device, "auto");
        let req = request(&cli).unwrap();
        assert_eq!(req.swap_device, LabRequest::default().swap_device);
    }

    #[test]
    fn max_pages_is_a_positive_count_or_all() {
        assert_eq!(max_pages("all"), Ok(Coverage::All));
        assert_eq!(max_pages("6144"), Ok(Coverage::Even(6144)));
        for bad in ["0", "-1", "ALL", "", "1e6", "many"] {
            let e = max_pages(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{bad:?}: {e}");
        }
    }
}

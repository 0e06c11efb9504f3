//! `zmem lab`: this machine's memory (or a page file, or the built-in set) through every
//! configuration, a report and a recommendation.

use std::path::PathBuf;

use anyhow::Context;
use zmem_lab::lab::{self, LabOptions, Source};
use zmem_lab::report;
use zmem_workload::PageSet;
use zmem_workload::capture;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the report as JSON (schema: docs/lab-report.schema.json) instead of the summary.
    #[arg(long)]
    json: bool,
    /// Also write report.html and report.json into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Use the built-in generated page set instead of capturing this machine's processes.
    #[arg(long)]
    no_capture: bool,
    /// Most pages to run on (a capture or file is sampled evenly down to this).
    #[arg(long, default_value_t = 6144)]
    max_pages: usize,
    /// Page file (raw pages or a page set); none: capture this machine, else the built-in set.
    pages: Option<PathBuf>,
}

/// Fewer captured pages than this say little about a machine: use the built-in set instead.
const MIN_CAPTURE_PAGES: usize = 1024;

/// Every `len / max`-th page, so a sample spans all processes of a capture.
fn sample(set: &PageSet, max: usize) -> Vec<u8> {
    let n = set.len();
    if n <= max {
        return set.bytes().to_vec();
    }
    (0..max).flat_map(|k| set.page(k * n / max).iter().copied()).collect()
}

fn pages(args: &Args) -> anyhow::Result<(Vec<u8>, Source)> {
    let source = |kind: &str, detail: String, set: &PageSet, bytes: &[u8]| Source {
        kind: kind.into(),
        detail,
        pages: (bytes.len() / set.page_size()) as u64,
        page_size: set.page_size(),
    };
    if let Some(path) = &args.pages {
        let set = super::pages::load(std::slice::from_ref(path), 4096)?.remove(0);
        let bytes = sample(&set, args.max_pages);
        let detail =
            format!("{} ({} pages, {} used)", path.display(), set.len(), bytes.len() / 4096);
        let src = source("file", detail, &set, &bytes);
        return Ok((bytes, src));
    }
    let why_builtin = if args.no_capture {
        "capture not requested (--no-capture)".to_string()
    } else {
        // all_pids leaves zmem itself out.
        let pids = capture::all_pids()?;
        eprintln!("zmem lab: capturing the anonymous memory of {} processes...", pids.len());
        match capture::capture(&pids, &mut |_| {}) {
            Ok((set, summary)) if set.len() >= MIN_CAPTURE_PAGES => {
                let bytes = sample(&set, args.max_pages);
                let detail = format!(
                    "this machine: {summary}; {} pages sampled",
                    bytes.len() / set.page_size()
                );
                let src = source("captured", detail, &set, &bytes);
                return Ok((bytes, src));
            }
            Ok((set, summary)) => {
                format!("capture gave only {} pages ({summary})", set.len())
            }
            Err(e) => format!("capture failed: {e}"),
        }
    };
    let set = zmem_workload::builtin::default_set_with(4096)?;
    let bytes = sample(&set, args.max_pages);
    let src = source("builtin", format!("built-in generated set; {why_builtin}"), &set, &bytes);
    Ok((bytes, src))
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let (bytes, source) = pages(args)?;
    eprintln!("zmem lab: {} pages ({}: {})", source.pages, source.kind, source.detail);
    let r = lab::run(&bytes, source, &LabOptions::default(), &super::progress::Bar::new())?;
    let json = serde_json::to_string_pretty(&r).context("encoding JSON")?;
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let html = dir.join("report.html");
        std::fs::write(&html, report::render_html(&r))
            .with_context(|| format!("writing {}", html.display()))?;
        let path = dir.join("report.json");
        std::fs::write(&path, &json).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("zmem lab: wrote {} and {}", html.display(), path.display());
    }
    if args.json {
        println!("{json}");
    } else {
        print!("{}", report::render_summary(&r));
    }
    Ok(())
}

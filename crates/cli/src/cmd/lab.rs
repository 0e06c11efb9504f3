//! `zmem lab`: this machine's memory (or a page file, or the built-in set) through every
//! configuration, a report and a recommendation.

use std::path::PathBuf;

use anyhow::Context;
use zmem_lab::lab::{self, Input, LabOptions, evidence};
use zmem_lab::report;

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

/// What the user asked for: a page file, the built-in set, or this machine (the lab decides
/// the fallback).
fn input(args: &Args) -> anyhow::Result<Input> {
    if let Some(path) = &args.pages {
        let set = super::pages::load(std::slice::from_ref(path), 4096)?.remove(0);
        return Ok(Input::Pages { set, label: path.display().to_string() });
    }
    Ok(if args.no_capture { Input::Builtin } else { Input::Capture })
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let bar = super::progress::Bar::new();
    let e = evidence::gather(input(args)?, args.max_pages, &bar)?;
    eprintln!("zmem lab: {} pages ({}: {})", e.source.pages, e.source.kind, e.source.detail);
    let r = lab::run(&e.pages, e.source, &LabOptions::default(), &bar)?;
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

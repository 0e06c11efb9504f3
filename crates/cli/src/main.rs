//! `zmem`: the command line. Thin by design: it parses arguments, calls the library crates and
//! prints. Every failure ends as one line on stderr (`zmem: ...`) and exit status 2.

// No `unsafe` but one: `cmd::pages::map`, which maps the page files the user names (allowed
// there, with its contract stated). `deny` rather than `forbid` so that one can be allowed.
#![deny(unsafe_code)]

mod cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "zmem",
    version,
    about = "Linux compressed memory (zram, zswap, zpool, compressors) in user space, and a lab to choose its configuration"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The main job: measure this machine's memory (or PAGES) under every configuration and
    /// recommend one.
    Lab(cmd::lab::Args),
    /// Compress pages with each algorithm and print ratio, speeds and memory-freeing speed.
    CompBench(cmd::comp_bench::Args),
    /// Compress stdin (one buffer of up to two pages) to stdout.
    Compress(cmd::codec::CompressArgs),
    /// Decompress stdin to stdout (the inverse of `zmem compress`).
    Decompress(cmd::codec::DecompressArgs),
    /// Write a page set through a zram device, read it back, print the stat files and speeds.
    Zram(cmd::zram::Args),
    /// Compare zmem's zram mm_stat with the live kernel's for the same pages.
    Conform(cmd::conform::Args),
    /// zmem's zram write/read speed against the kernel's zram and the bare compressor.
    ZramSpeed(cmd::zram_speed::Args),
    /// zsmapbench: cycles per map of a page-straddling zsmalloc object, copy vs mapped window.
    Mapbench(cmd::mapbench::Args),
    /// Capture the resident anonymous pages of live processes into a page set.
    Capture(cmd::capture::Args),
    /// Rewrite a page file as bare pages (--raw) or as a page set (--page-set).
    Export(cmd::export::Args),
    /// Generate a page set: perf (seed 004's zram-perf pattern) or mixed (typical memory).
    Gen(cmd::generate::Args),
    /// Access traces: generate and describe.
    Trace(cmd::trace::Args),
    /// Replay an access trace under a RAM budget with zram or zswap as swap: latency
    /// histograms, pool size, swap file I/O, CPU time.
    Replay(cmd::replay::Args),
    /// zmem's models checked against the live kernel: `validate replay`.
    #[command(subcommand)]
    Validate(cmd::validate::Validate),
    /// Studies that reproduce the seeds on zmem's engines.
    #[command(subcommand)]
    Study(cmd::study::Study),
    /// Every zram device, zswap, the swap areas and their rates, on one screen (or --json).
    Status(cmd::status::Args),
    /// Serve the state `zmem status` shows as OpenMetrics (or write a node_exporter textfile).
    Exporter(cmd::exporter::Args),
    /// Dictionaries for zram's `algorithm_params dict=` (zstd, lz4): train and measure.
    #[command(subcommand)]
    Dict(cmd::dict::Dict),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Lab(args) => cmd::lab::run(&args),
        Command::CompBench(args) => cmd::comp_bench::run(&args),
        Command::Compress(args) => cmd::codec::compress(&args),
        Command::Decompress(args) => cmd::codec::decompress(&args),
        Command::Zram(args) => cmd::zram::run(&args),
        Command::Conform(args) => cmd::conform::run(&args),
        Command::ZramSpeed(args) => cmd::zram_speed::run(&args),
        Command::Mapbench(args) => cmd::mapbench::run(&args),
        Command::Replay(args) => cmd::replay::run(&args),
        Command::Validate(v) => cmd::validate::run(&v),
        Command::Study(study) => cmd::study::run(&study),
        Command::Dict(dict) => cmd::dict::run(&dict),
        Command::Capture(args) => cmd::capture::run(&args),
        Command::Export(args) => cmd::export::run(&args),
        Command::Gen(args) => cmd::generate::run(&args),
        Command::Trace(args) => cmd::trace::run(&args),
        Command::Status(args) => cmd::status::run(&args),
        Command::Exporter(args) => cmd::exporter::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // `{:#}` joins the context chain with ": ", so the message stays on one line.
            let line = format!("{err:#}").replace('\n', " ");
            eprintln!("zmem: {line}");
            ExitCode::from(2)
        }
    }
}

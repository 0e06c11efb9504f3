//! `zmem`: the command line. Thin by design: it parses arguments, calls the library crates and
//! prints. Every failure ends as one line on stderr (`zmem: ...`) and exit status 2.

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::CompBench(args) => cmd::comp_bench::run(&args),
        Command::Compress(args) => cmd::codec::compress(&args),
        Command::Decompress(args) => cmd::codec::decompress(&args),
        Command::Zram(args) => cmd::zram::run(&args),
        Command::Conform(args) => cmd::conform::run(&args),
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

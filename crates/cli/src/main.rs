//! `zmem`: the command line. Thin by design: it parses arguments, calls the library crates and
//! prints. Every failure ends as one line on stderr (`zmem: ...`) and exit status 2.

// No `unsafe` but one: `cmd::pages::map`, which maps the page files the user names (allowed
// there, with its contract stated). `deny` rather than `forbid` so that one can be allowed.
#![deny(unsafe_code)]

mod cmd;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

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
    /// The lab's measurements of this machine's memory (or PAGES) without the memory: page
    /// facts and measured rows for `zmem lab FILE` or zmem-fleet to judge elsewhere.
    Evidence(cmd::evidence::Args),
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
    /// Generate a page set: perf (the vivo study's zram-perf pattern) or mixed (typical memory).
    Gen(cmd::generate::Args),
    /// Access traces: generate and describe.
    Trace(cmd::trace::Args),
    /// Replay an access trace under a RAM budget with zram or zswap as swap: latency
    /// histograms, pool size, swap file I/O, CPU time.
    Replay(cmd::replay::Args),
    /// zmem's models checked against the live kernel: `validate replay`.
    #[command(subcommand)]
    Validate(cmd::validate::Validate),
    /// Studies that reproduce published measurements on zmem's engines.
    #[command(subcommand)]
    Study(cmd::study::Study),
    /// Every zram device, zswap, the swap areas and their rates, on one screen (or --json).
    Status(cmd::status::Args),
    /// Cold memory by age: how much of the processes' anonymous memory goes untouched for 10 s
    /// to 10 min (clears their referenced bits, then reads smaps at each age).
    Cold(cmd::cold::Args),
    /// Serve the state `zmem status` shows as OpenMetrics (or write a node_exporter textfile).
    Exporter(cmd::exporter::Args),
    /// Proactive reclaim: page out anonymous memory untouched for the cold age
    /// (process_madvise), pausing under memory pressure, within a CPU budget.
    Agent(cmd::agent::Args),
    /// Proactive reclaim by DAMON: a kdamond of zmem's own whose scheme pages out anonymous
    /// memory idle for the cold age (where DAMON's admin interface is free).
    #[command(subcommand)]
    Damon(cmd::damon::Damon),
    /// Proactive reclaim by cgroup v2's memory.reclaim: each cgroup asked for its bytes idle
    /// for the cold age, backing off on its memory pressure, within a CPU budget.
    MemcgReclaim(cmd::memcg_reclaim::Args),
    /// Dictionaries for zram's `algorithm_params dict=` (zstd, lz4): train and measure.
    #[command(subcommand)]
    Dict(cmd::dict::Dict),
}

/// One example line for every command's `--help` (path of subcommand names, the line).
const EXAMPLES: &[(&[&str], &str)] = &[
    (&["lab"], "zmem lab --source builtin --observe 0 --apply-script apply.sh"),
    (&["evidence"], "sudo zmem evidence -o host.evidence && zmem lab host.evidence"),
    (&["comp-bench"], "zmem comp-bench --algo lz4,zstd:3 pages.zpages"),
    (&["compress"], "zmem compress --algo zstd:3 < page.bin > page.zst"),
    (&["decompress"], "zmem decompress --algo zstd < page.zst > page.bin"),
    (&["zram"], "zmem zram --algo zstd:level=3 --recomp zstd --recompress type=huge pages.zpages"),
    (&["conform"], "sudo zmem conform --algo lz4 pages.zpages"),
    (&["zram-speed"], "sudo zmem zram-speed --algo lzo-rle pages.zpages"),
    (&["mapbench"], "zmem mapbench --method map --threads 2"),
    (&["capture"], "sudo zmem capture --pid 1234 -o app.zpages"),
    (&["export"], "zmem export --raw -o pages.raw app.zpages"),
    (&["gen"], "zmem gen --kind mixed --pages 8192 -o mixed.zpages"),
    (&["trace", "gen"], "zmem trace gen --pages 16384 --accesses 400000 -o zipf.trace"),
    (&["trace", "record"], "sudo zmem trace record --pid 1234 --duration 30 -o app.trace"),
    (&["trace", "info"], "zmem trace info app.trace"),
    (&["replay"], "zmem replay --ram 64M --swap zswap --swap-device ssd app.zpages app.trace"),
    (&["validate", "replay"], "sudo zmem validate replay --ram 32M app.zpages app.trace"),
    (&["validate", "lab"], "sudo zmem validate lab --ram 40M --kernel-runs 3 app.zpages app.trace"),
    (&["study", "allocators"], "zmem study allocators app.zpages"),
    (&["dict", "train"], "zmem dict train --algo zstd -o zram.dict app.zpages"),
    (&["status"], "zmem status --json"),
    (&["cold"], "sudo zmem cold --pid 1234 --ages 10s,1m,2m"),
    (&["exporter"], "zmem exporter --listen 127.0.0.1:9863"),
    (&["agent"], "sudo zmem agent --cold-age 120 --exclude sshd,/system.slice"),
    (&["damon", "start"], "sudo zmem damon start --cold-age 120 --exclude /system.slice"),
    (&["damon", "stop"], "sudo zmem damon stop"),
    (&["memcg-reclaim"], "sudo zmem memcg-reclaim --cold-age 120 --target /app.slice=1073741824"),
];

/// The command line with every command's example line added to its help.
fn command() -> clap::Command {
    fn add(c: clap::Command, path: &[&str], line: &str) -> clap::Command {
        match path.split_first() {
            Some((first, [])) => {
                c.mut_subcommand(*first, |s| s.after_help(format!("Example:\n  {line}")))
            }
            Some((first, rest)) => c.mut_subcommand(*first, |s| add(s, rest, line)),
            None => c,
        }
    }
    let c = EXAMPLES.iter().fold(Cli::command(), |c, (path, line)| add(c, path, line));
    negatives_reach_checks(c)
}

/// Lets every option that takes a value take a negative number as it (`--cpu-budget -1`, as
/// `--cpu-budget=-1`), so the option's own check says what is wrong with the number instead of
/// clap calling `-1` an unexpected argument.
fn negatives_reach_checks(c: clap::Command) -> clap::Command {
    c.mut_args(|a| if a.get_action().takes_values() { a.allow_negative_numbers(true) } else { a })
        .mut_subcommands(negatives_reach_checks)
}

fn main() -> ExitCode {
    let parsed = command().try_get_matches().and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind::{DisplayHelp, DisplayVersion};
            if matches!(e.kind(), DisplayHelp | DisplayVersion) || !e.use_stderr() {
                e.exit();
            }
            // A refused argument is one line, like every other error.
            // clap's message runs until its usage block; its lines are joined into one.
            let text = e.to_string();
            let words: Vec<&str> = text
                .lines()
                .take_while(|l| !l.trim().is_empty() && !l.starts_with("Usage:"))
                .map(str::trim)
                .collect();
            eprintln!("zmem: {}", words.join(" ").trim_start_matches("error: "));
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Lab(args) => cmd::lab::run(&args),
        Command::Evidence(args) => cmd::evidence::run(&args),
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
        Command::Cold(args) => cmd::cold::run(&args),
        Command::Exporter(args) => cmd::exporter::run(&args),
        Command::Agent(args) => cmd::agent::run(&args),
        Command::Damon(cmd) => cmd::damon::run(&cmd),
        Command::MemcgReclaim(args) => cmd::memcg_reclaim::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // `{:#}` joins the context chain with ": ", so the message stays on one line; no
            // control character (a path or name from a page set can hold escapes) reaches the
            // terminal.
            let line = format!("{err:#}").replace('\n', " ");
            eprintln!("zmem: {}", zmem_render::script::terminal(&line));
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command a user can run (hidden ones aside), with its path of names.
    fn leaves(c: &clap::Command, path: Vec<String>, out: &mut Vec<(Vec<String>, clap::Command)>) {
        if c.get_subcommands().next().is_none() {
            out.push((path.clone(), c.clone()));
        }
        for s in c.get_subcommands().filter(|s| !s.is_hide_set()) {
            let mut p = path.clone();
            p.push(s.get_name().to_string());
            leaves(s, p, out);
        }
    }

    #[test]
    fn every_command_has_an_example_and_every_option_a_description() {
        let mut all = Vec::new();
        leaves(&command(), Vec::new(), &mut all);
        assert!(all.len() >= 20, "{}", all.len());
        let mut missing = Vec::new();
        for (path, c) in &all {
            let help = c.get_after_help().map(|h| h.to_string()).unwrap_or_default();
            let want = format!("zmem {}", path.join(" "));
            if !help.contains(&want) {
                missing.push(format!("`{want} --help` has no example line"));
            }
            for a in c.get_arguments().filter(|a| !a.is_hide_set()) {
                let id = a.get_id().as_str();
                if id == "help" || id == "version" {
                    continue;
                }
                if a.get_help().is_none() {
                    missing.push(format!("`{want}`: {id} has no description"));
                }
            }
        }
        assert!(missing.is_empty(), "{missing:#?}");
    }

    #[test]
    fn no_user_facing_text_names_internal_documents() {
        let mut all = Vec::new();
        leaves(&command(), Vec::new(), &mut all);
        for (path, mut c) in all {
            let text = c.render_long_help().to_string().to_lowercase();
            assert!(!text.contains("seed 00"), "zmem {}: {text}", path.join(" "));
        }
    }

    #[test]
    fn every_output_flag_is_spelled_output_with_o() {
        let mut all = Vec::new();
        leaves(&command(), Vec::new(), &mut all);
        for (path, c) in &all {
            for a in c.get_arguments() {
                let long = a.get_long().unwrap_or_default();
                if long == "out" || long == "output" {
                    assert_eq!(
                        (long, a.get_short()),
                        ("output", Some('o')),
                        "zmem {}",
                        path.join(" ")
                    );
                }
            }
        }
    }
}

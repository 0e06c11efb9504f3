//! `zmem cold`: how much of the processes' anonymous memory has gone untouched for each age,
//! from the machine's own accesses. Writes `1` to each measured process's `/proc/PID/clear_refs`
//! (clearing the referenced bits reclaim ages pages by), then reads its smaps at each age.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use zmem_kernel::cold::ColdObserver;
use zmem_kernel::record::SignalStop;
use zmem_lab::request::{ColdRequest, parse_ages};
use zmem_render::cold as render;

/// How often the progress line is repeated while nothing is read.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A process to measure (repeat for more). Its referenced bits are cleared at the start:
    /// under memory pressure reclaim then takes its idle pages a little sooner.
    #[arg(long = "pid", value_name = "PID")]
    pids: Vec<u32>,
    /// Every user process with anonymous memory (not kernel threads, not zmem).
    #[arg(long)]
    all: bool,
    /// The ages to read, increasing: seconds, or with s, m or h (10s,30s,1m).
    #[arg(long, value_name = "AGES", default_value_t = default_ages())]
    ages: String,
    /// Print JSON (exact bytes, per process) instead of one line per age.
    #[arg(long)]
    json: bool,
}

fn default_ages() -> String {
    ColdRequest::default().shown_defaults()[0].1.clone()
}

/// The request the flags make.
fn request(args: &Args) -> anyhow::Result<ColdRequest> {
    let ages_secs = parse_ages(&args.ages).map_err(|e| anyhow::anyhow!(e.flag()))?;
    Ok(ColdRequest { pids: args.pids.clone(), all: args.all, ages_secs })
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let req = request(args)?;
    req.check().map_err(|e| anyhow::anyhow!(e.flag()))?;
    // Installed before t0, so a Ctrl-C at any point still prints what was measured.
    let stop = SignalStop::install()?;
    let mut obs = req.start()?;
    let stopped = wait(&mut obs, stop.flag());
    drop(stop);
    let curve = obs.curve();
    if stopped {
        super::note(&render::stopped(&curve));
    }
    super::emit(args.json, &curve, render::render)
}

/// Reads every age as it passes, with a progress line on stderr after each read and every
/// [`PROGRESS_EVERY`]; whether a signal stopped it first.
fn wait(obs: &mut ColdObserver, stop: &AtomicBool) -> bool {
    let mut said = Instant::now();
    while let Some(due) = obs.next_due() {
        if stop.load(Ordering::Relaxed) {
            return true;
        }
        // Nothing left to watch (none could be, or every one ended): no later age can be read.
        if obs.watching() == 0 {
            return false;
        }
        let now = Instant::now();
        let read = now >= due && obs.poll(now);
        if read || now.duration_since(said) >= PROGRESS_EVERY {
            let elapsed = now.saturating_duration_since(obs.t0()).as_secs();
            super::note(&render::progress(elapsed, &obs.curve()));
            said = now;
        }
        // Short sleeps keep a Ctrl-C answered within a fifth of a second.
        std::thread::sleep(
            due.saturating_duration_since(Instant::now()).min(Duration::from_millis(200)),
        );
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_defaults_are_the_requests() {
        let cli: Args = super::super::args::parse_flags(&["cold", "--pid", "1"]);
        let want = ColdRequest { pids: vec![1], ..ColdRequest::default() };
        assert_eq!(request(&cli).unwrap(), want);
        let cli: Args = super::super::args::parse_flags(&["cold", "--all", "--ages", "1s,2m"]);
        let r = request(&cli).unwrap();
        assert!(r.all && r.pids.is_empty());
        assert_eq!(r.ages_secs, [1, 120]);
        let cli: Args = super::super::args::parse_flags(&["cold", "--pid", "1", "--ages", "2m,1m"]);
        assert!(request(&cli).unwrap().check().unwrap_err().flag().starts_with("--ages"));
    }
}

//! The watch: a [`Sample`] every few seconds for the time asked, a progress line every 10 s,
//! and the events the samples show ([`Judge`]): a watched process exits (the watch goes on, and
//! ends once none is left), the device fills (its `mem_limit`, or every slot of the swap area),
//! memory runs short (`MemAvailable` under the low watermark, or memory PSI some avg10 over
//! [`PSI_SHORT`] %: the watch ends, so the set-up goes before it makes things worse), a signal
//! (SIGINT/SIGTERM set the stop flag: the watch ends). None of them is an error: each is said,
//! and the undo runs whatever happened.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::report::Sample;
use super::sample::Reader;

/// Memory PSI some avg10 above this (percent) ends the watch: programs stall on memory a
/// tenth of the time.
pub const PSI_SHORT: f64 = 10.0;
/// A progress line this often.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(10);
/// How long the loop sleeps at most before it looks at the stop flag again.
const POLL: Duration = Duration::from_millis(100);
/// The swap area counts as full with fewer free slots than this.
const FULL_SLACK_PAGES: u64 = 16;

/// `m:ss`.
pub fn clock(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    format!("{}:{:02}", s / 60, s % 60)
}

fn mib(b: f64) -> String {
    // No "-0.0": a few bytes under nothing are nothing.
    let m = b / (1u64 << 20) as f64;
    format!("{:.1} MiB", if m.abs() < 0.05 { 0.0 } else { m })
}

/// What the samples have shown so far.
#[derive(Debug, Clone, Default)]
pub struct Judge {
    /// The processes `--pid` named.
    pub watched: Vec<u32>,
    /// The low watermark summed over the zones, bytes (0: unknown).
    pub low_watermark: u64,
    pub page_size: u64,
    gone: BTreeSet<u32>,
    limit_said: bool,
    full_said: bool,
}

impl Judge {
    pub fn new(watched: Vec<u32>, low_watermark: u64, page_size: u64) -> Self {
        Self { watched, low_watermark, page_size, ..Self::default() }
    }

    /// The events `s` shows that were not said before, and why the watch ends, if it does.
    pub fn judge(&mut self, s: &Sample) -> (Vec<String>, Option<String>) {
        let at = clock(s.t_secs);
        let mut events = Vec::new();
        let mut end = None;
        for &pid in &self.watched {
            if !s.watched_alive.contains(&pid) && self.gone.insert(pid) {
                events.push(format!("at {at} process {pid} exited"));
            }
        }
        if !self.watched.is_empty() && s.watched_alive.is_empty() {
            end = Some(format!("at {at} every process watched had exited"));
        }
        if s.mem_limit_bytes > 0
            && s.pool_bytes + self.page_size >= s.mem_limit_bytes
            && !self.limit_said
        {
            self.limit_said = true;
            events.push(format!(
                "at {at} the device reached its mem_limit ({}): it takes no more pages, and \
                 reclaim moves on to the next swap area",
                mib(s.mem_limit_bytes as f64)
            ));
        }
        let free = s.swap_size_bytes.saturating_sub(s.swap_used_bytes);
        if s.swap_size_bytes > 0 && free < FULL_SLACK_PAGES * self.page_size && !self.full_said {
            self.full_said = true;
            events.push(format!(
                "at {at} the swap area is full ({} of {} used)",
                mib(s.swap_used_bytes as f64),
                mib(s.swap_size_bytes as f64)
            ));
        }
        let short = if self.low_watermark > 0 && s.mem_available_bytes < self.low_watermark {
            Some(format!(
                "at {at} memory ran short: MemAvailable {} under the low watermark {}",
                mib(s.mem_available_bytes as f64),
                mib(self.low_watermark as f64)
            ))
        } else if s.psi_some_avg10 > PSI_SHORT {
            Some(format!(
                "at {at} memory ran short: PSI some avg10 {:.2} % over {PSI_SHORT} %",
                s.psi_some_avg10
            ))
        } else {
            None
        };
        if let Some(why) = short {
            events.push(why.clone());
            end = Some(why);
        }
        (events, end)
    }
}

/// The progress line at `s`, `before` the sample [`PROGRESS_EVERY`] earlier (the rate's start).
pub fn progress_line(s: &Sample, before: Option<&Sample>, total_secs: u64) -> String {
    let rate = before
        .filter(|b| s.t_secs > b.t_secs)
        .map_or(0.0, |b| s.swap_ins.saturating_sub(b.swap_ins) as f64 / (s.t_secs - b.t_secs));
    format!(
        "zmem validate apply: {}/{}: moved out {}, held in {}, saves {}, {rate:.1} swap-ins/s, \
         PSI some {:.2} %",
        clock(s.t_secs),
        clock(total_secs as f64),
        mib(s.moved_out_bytes as f64),
        mib(s.pool_bytes as f64),
        mib(s.saved_bytes() as f64),
        s.psi_some_avg10
    )
}

/// What a watch saw.
#[derive(Debug, Clone, Default)]
pub struct Watched {
    pub samples: Vec<Sample>,
    pub events: Vec<String>,
    pub ended_early: Option<String>,
}

/// How to watch.
#[derive(Debug)]
pub struct Watch<'a> {
    pub reader: &'a Reader,
    pub judge: Judge,
    pub seconds: u64,
    pub every: Duration,
    pub stop: &'a AtomicBool,
    /// Why the agent stopped, once it has.
    pub agent_failed: Option<Arc<Mutex<Option<String>>>>,
}

impl Watch<'_> {
    /// Samples until the time asked is up or an event ends it; `line` gets each progress line.
    pub fn run(mut self, line: &mut dyn FnMut(&str)) -> Watched {
        let t0 = Instant::now();
        let total = Duration::from_secs(self.seconds);
        let mut w = Watched::default();
        let mut next = t0;
        let mut next_line = t0 + PROGRESS_EVERY;
        let mut agent_said = false;
        loop {
            while Instant::now() < next && !self.stop.load(Ordering::Relaxed) {
                std::thread::sleep(POLL.min(next.saturating_duration_since(Instant::now())));
            }
            if self.stop.load(Ordering::Relaxed) {
                w.ended_early = Some("stopped by a signal (SIGINT or SIGTERM)".into());
                w.samples.push(self.reader.read());
                break;
            }
            let s = self.reader.read();
            let (events, end) = self.judge.judge(&s);
            w.events.extend(events);
            if let Some(why) = self.agent_failed.as_ref().and_then(|f| f.lock().ok()?.clone())
                && !agent_said
            {
                agent_said = true;
                w.events.push(format!("at {} the reclaim agent stopped: {why}", clock(s.t_secs)));
            }
            let now = Instant::now();
            if now >= next_line {
                let before = w.samples.iter().rev().find(|b| s.t_secs - b.t_secs >= 9.5);
                line(&progress_line(&s, before, self.seconds));
                next_line += PROGRESS_EVERY;
            }
            w.samples.push(s);
            let up = now.duration_since(t0) >= total;
            let ends = end.is_some();
            if !up {
                w.ended_early = end;
            }
            if ends || up {
                break;
            }
            next = (next + self.every).min(t0 + total);
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: f64) -> Sample {
        Sample { t_secs: t, mem_available_bytes: 8 << 30, ..Sample::default() }
    }

    #[test]
    fn a_process_that_exits_is_said_once_and_the_last_ends_the_watch() {
        let mut j = Judge::new(vec![10, 11], 64 << 20, 4096);
        let (e, end) = j.judge(&Sample { watched_alive: vec![10, 11], ..s(0.0) });
        assert!(e.is_empty() && end.is_none());
        let (e, end) = j.judge(&Sample { watched_alive: vec![10], ..s(5.0) });
        assert_eq!(e, ["at 0:05 process 11 exited"]);
        assert!(end.is_none());
        let (e, end) = j.judge(&Sample { watched_alive: vec![10], ..s(10.0) });
        assert!(e.is_empty() && end.is_none(), "said once");
        let (e, end) = j.judge(&s(15.0));
        assert_eq!(e, ["at 0:15 process 10 exited"]);
        assert_eq!(end.as_deref(), Some("at 0:15 every process watched had exited"));
        // Without --pid nothing is watched, and nothing ends for it.
        assert_eq!(Judge::new(vec![], 0, 4096).judge(&s(0.0)), (vec![], None));
    }

    #[test]
    fn a_full_device_is_said_once_and_the_watch_goes_on() {
        let mut j = Judge::new(vec![], 0, 4096);
        let at_limit = Sample { mem_limit_bytes: 64 << 20, pool_bytes: 64 << 20, ..s(20.0) };
        let (e, end) = j.judge(&at_limit);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("reached its mem_limit (64.0 MiB)"), "{e:?}");
        assert!(end.is_none());
        assert!(j.judge(&at_limit).0.is_empty());
        let full =
            Sample { swap_size_bytes: 256 << 20, swap_used_bytes: (256 << 20) - 4096, ..s(25.0) };
        let (e, end) = j.judge(&full);
        assert!(e[0].contains("the swap area is full (256.0 MiB of 256.0 MiB used)"), "{e:?}");
        assert!(end.is_none());
        let half = Sample { swap_size_bytes: 256 << 20, swap_used_bytes: 128 << 20, ..s(0.0) };
        assert!(Judge::new(vec![], 0, 4096).judge(&half).0.is_empty());
    }

    #[test]
    fn short_memory_ends_the_watch() {
        let mut j = Judge::new(vec![], 64 << 20, 4096);
        let low = Sample { mem_available_bytes: 32 << 20, ..s(65.0) };
        let (e, end) = j.judge(&low);
        assert_eq!(end.as_deref(), Some(e[0].as_str()));
        assert!(e[0].starts_with("at 1:05 memory ran short: MemAvailable 32.0 MiB under"));
        let stalled = Sample { psi_some_avg10: 12.5, ..s(70.0) };
        let (_, end) = j.judge(&stalled);
        assert!(end.unwrap().contains("PSI some avg10 12.50 % over 10 %"));
        let (e, end) = j.judge(&Sample { psi_some_avg10: 9.0, ..s(75.0) });
        assert!(e.is_empty() && end.is_none());
        // An unknown watermark is not a shortage.
        let mut j = Judge::new(vec![], 0, 4096);
        assert!(j.judge(&Sample { mem_available_bytes: 0, ..s(0.0) }).1.is_none());
    }

    #[test]
    fn the_progress_line_says_where_the_watch_is() {
        let a = Sample { swap_ins: 100, ..s(10.0) };
        let b = Sample {
            swap_ins: 150,
            moved_out_bytes: 120 << 20,
            pool_bytes: 40 << 20,
            psi_some_avg10: 0.25,
            ..s(20.0)
        };
        assert_eq!(
            progress_line(&b, Some(&a), 300),
            "zmem validate apply: 0:20/5:00: moved out 120.0 MiB, held in 40.0 MiB, saves \
             80.0 MiB, 5.0 swap-ins/s, PSI some 0.25 %"
        );
        assert_eq!(clock(3599.6), "60:00");
    }
}

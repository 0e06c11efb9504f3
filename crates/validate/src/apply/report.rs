//! What `zmem validate apply` returns ([`ApplyReport`]): the decision's prediction, what the
//! machine realized, the time series it was read from, what was set up and undone, and the
//! comparisons ([`Within`]).

use serde::{Deserialize, Serialize};
use zmem_kernel::reclaim::AgentStats;

/// Realized within this share of the predicted saving counts as "within 10 %".
pub const SAVED_TOLERANCE: f64 = 0.10;
/// Realized within this share of the predicted swap-ins counts as "within 25 %".
pub const SWAP_INS_TOLERANCE: f64 = 0.25;
/// Below this, in bytes, a saving is nothing: a prediction of 0 is met by a realized saving
/// under it, and a saving this close to the interval is inside it (one MiB: the device's own
/// metadata and a few pages of other processes, below what the lab resolves).
pub const SMALL_BYTES: i64 = 1 << 20;
/// Below this, in pages a second, swap-ins are none (a prediction of 0 is met under it).
pub const SMALL_SWAP_INS: f64 = 0.5;
/// TMO's operating point: memory PSI some avg60 under this (percent) is a machine that does
/// not feel the reclaim.
pub const PSI_TARGET: f64 = 0.1;

/// Said wherever the agent's CPU is given: what it holds and what it cannot.
pub const CPU_NOTE: &str = "the agent's own CPU time: finding idle memory, and reclaim with the \
     compression of every page it pages out (process_madvise runs them in its context); the \
     decompression at each swap-in is charged to the program that faulted, and the kernel's own \
     reclaim (kswapd) to no one here, so neither is counted";

/// The whole result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApplyReport {
    /// `zram`, `zswap`, `keep`, `none`.
    pub decision_kind: String,
    /// The decision's configuration (`zram lz4`, ...).
    pub config: String,
    /// The proactive reclaim run (`process_madvise`), none where none ran.
    pub mechanism: Option<String>,
    /// T, where proactive reclaim ran.
    pub cold_age_secs: Option<u64>,
    /// What was asked, and what was watched (less where it ended early).
    pub seconds_asked: u64,
    pub seconds: f64,
    /// Why the watch ended before its time, if it did.
    pub ended_early: Option<String>,
    /// What happened during the watch and the undo, in order.
    pub events: Vec<String>,
    /// What was set up, in order (undone in the opposite order).
    pub changes: Vec<String>,
    /// Every change was undone, and nothing of this run's reads differently from before.
    pub restored: bool,
    /// What reads differently from before (empty: the machine is as it was); a line that
    /// names nothing this run made ends in `machine::NOT_OURS`.
    pub differs: Vec<String>,
    pub predicted: Predicted,
    pub realized: Realized,
    /// Every sample of the watch, in order.
    pub samples: Vec<Sample>,
    pub within: Within,
}

/// What the decision predicts for the watch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Predicted {
    /// Against now, with its 95 % interval, at `operating_point`.
    pub memory_saved_bytes: i64,
    pub memory_saved_ci: [i64; 2],
    pub moved_out_bytes: u64,
    /// Pages a second coming back (0 without proactive reclaim).
    pub swap_ins_per_sec: f64,
    /// `today`, `cold_age`, `all_pages` (the lab's point names), or `none`.
    pub operating_point: String,
    /// Where the figures are not the decision's headline, why (one line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What the machine did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Realized {
    /// What the pages moved out took before less what holds them, at the end:
    /// `moved_out_bytes` less zram's `mem_used_total` (zswap: its pool).
    pub memory_saved_bytes: i64,
    /// Our swap area's slots in use at the end (/proc/swaps `Used`): zram's `orig_data_size`
    /// (zswap's stored pages) and the zero-filled pages the swap layer keeps in its zeromap
    /// without writing them (6.18 mm/page_io.c `swap_writeout()`), which leave RAM for no pool
    /// (and, for zswap, pages written back to the file); where the area cannot be read, zram's
    /// `orig_data_size` (zswap's stored pages x page size) alone.
    pub moved_out_bytes: u64,
    /// The most held during the watch.
    pub moved_out_max_bytes: u64,
    /// The second of the watch the figures are at: its end, or where the processes `--pid`
    /// named had all exited, the last sample before (their memory left the store with them).
    pub at_secs: f64,
    /// Pages a second read back from the store from `swap_ins_from_secs` to the end: the
    /// promotion once the agent's first pass is over (T and two of its periods: the pages its
    /// sample took from the hot groups, a sixteenth of them, come back once before that; the
    /// agent's `came_back_bytes` counts them).
    pub swap_ins_per_sec: f64,
    pub swap_ins_from_secs: f64,
    /// Memory PSI some avg60, percent, at the end and the most sampled.
    pub psi_some_avg60: f64,
    pub psi_some_avg60_max: f64,
    /// The agent's CPU seconds a second ([`CPU_NOTE`]; 0 without an agent).
    pub cpu_seconds_per_second: f64,
    pub cpu_note: String,
    /// The swapped bytes of the processes `--pid` named (`VmSwap`), at the end; none without.
    pub watched_swapped_bytes: Option<u64>,
    /// The zram device's figures at the end, or zswap's pool's.
    pub zram: Option<ZramFigures>,
    pub zswap: Option<ZswapFigures>,
    /// The agent's counters at the end.
    pub agent: Option<AgentStats>,
}

/// The zram device's `mm_stat` at the end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ZramFigures {
    pub orig_data_size: u64,
    pub compr_data_size: u64,
    pub mem_used_total: u64,
    pub mem_limit: u64,
    pub same_pages: u64,
    pub huge_pages: u64,
    /// Pages read back from it during the watch.
    pub pages_read: u64,
}

/// zswap's pool at the end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ZswapFigures {
    pub stored_pages: u64,
    pub pool_total_size: u64,
    /// Where they were read: `debugfs`, or `meminfo` (Zswapped, Zswap).
    pub source: String,
    /// zswpin and zswpout during the watch, and pages read from our swap file.
    pub zswpin: u64,
    pub zswpout: u64,
    pub disk_reads: u64,
}

/// One reading of the watch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds since the watch began.
    pub t_secs: f64,
    /// Held by the store (orig_data_size; zswap: stored pages x page size), and what holds it
    /// (mem_used_total; zswap: pool_total_size).
    pub moved_out_bytes: u64,
    pub pool_bytes: u64,
    /// Pages read back from the store since the watch began.
    pub swap_ins: u64,
    pub psi_some_avg10: f64,
    pub psi_some_avg60: f64,
    pub psi_full_avg10: f64,
    pub psi_full_avg60: f64,
    pub mem_available_bytes: u64,
    /// Our swap area's used and usable bytes (/proc/swaps), and zram's mem_limit (0: none).
    pub swap_used_bytes: u64,
    pub swap_size_bytes: u64,
    pub mem_limit_bytes: u64,
    /// The agent's bytes out now, and its CPU seconds so far.
    pub agent_out_bytes: u64,
    pub agent_cpu_seconds: f64,
    /// The `--pid` processes still running, and their `VmSwap` summed.
    pub watched_alive: Vec<u32>,
    pub watched_swapped_bytes: u64,
}

impl Sample {
    /// What the store saves now: held less what holds it.
    pub fn saved_bytes(&self) -> i64 {
        self.moved_out_bytes as i64 - self.pool_bytes as i64
    }
}

/// Realized against predicted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Within {
    pub saved_within_10_percent: bool,
    pub saved_inside_ci: bool,
    pub swap_ins_within_25_percent: bool,
    /// PSI some avg60 at the end under [`PSI_TARGET`].
    pub psi_below_0_1: bool,
}

/// `realized` within `share` of `predicted`; a prediction under `small` is met by a realized
/// figure under `small`.
fn near(realized: f64, predicted: f64, share: f64, small: f64) -> bool {
    if predicted.abs() < small {
        return realized.abs() < small;
    }
    (realized - predicted).abs() <= share * predicted.abs()
}

/// The comparisons of the report.
pub fn within(p: &Predicted, r: &Realized) -> Within {
    let saved = r.memory_saved_bytes;
    Within {
        saved_within_10_percent: near(
            saved as f64,
            p.memory_saved_bytes as f64,
            SAVED_TOLERANCE,
            SMALL_BYTES as f64,
        ),
        saved_inside_ci: (p.memory_saved_ci[0] - SMALL_BYTES..=p.memory_saved_ci[1] + SMALL_BYTES)
            .contains(&saved),
        swap_ins_within_25_percent: near(
            r.swap_ins_per_sec,
            p.swap_ins_per_sec,
            SWAP_INS_TOLERANCE,
            SMALL_SWAP_INS,
        ),
        psi_below_0_1: r.psi_some_avg60 < PSI_TARGET,
    }
}

/// Realized over predicted, where the prediction is not 0.
pub fn ratio(realized: f64, predicted: f64) -> Option<f64> {
    (predicted != 0.0 && predicted.is_finite()).then(|| realized / predicted)
}

/// The figures the samples give (the rest are the caller's): at the last sample, or with
/// `watched` processes, at the last sample that saw one running ([`Realized::at_secs`]);
/// swap-ins from the first sample at or after `settled_secs` (T and two of the agent's
/// periods: its first pass and the return of the pages it sampled are over) to there.
pub fn from_samples(samples: &[Sample], watched: bool, settled_secs: f64) -> Realized {
    let end = samples
        .iter()
        .rposition(|s| !watched || !s.watched_alive.is_empty())
        .unwrap_or(samples.len().saturating_sub(1));
    let upto = &samples[..(end + 1).min(samples.len())];
    let Some(at) = upto.last() else { return Realized::default() };
    let (rate, from) = swap_in_rate(upto, settled_secs);
    Realized {
        memory_saved_bytes: at.saved_bytes(),
        moved_out_bytes: at.moved_out_bytes,
        moved_out_max_bytes: upto.iter().map(|s| s.moved_out_bytes).max().unwrap_or(0),
        at_secs: at.t_secs,
        swap_ins_per_sec: rate,
        swap_ins_from_secs: from,
        psi_some_avg60: at.psi_some_avg60,
        psi_some_avg60_max: upto.iter().map(|s| s.psi_some_avg60).fold(0.0, f64::max),
        watched_swapped_bytes: watched.then_some(at.watched_swapped_bytes),
        cpu_note: CPU_NOTE.into(),
        ..Realized::default()
    }
}

/// Pages a second read back from `start` on: the first sample at or after `from_secs` to the
/// last (the whole watch where none is, or the watch ends there). Returns the rate and the
/// second it is measured from.
pub fn swap_in_rate(samples: &[Sample], from_secs: f64) -> (f64, f64) {
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        return (0.0, 0.0);
    };
    let start =
        samples.iter().find(|s| s.t_secs >= from_secs && s.t_secs < last.t_secs).unwrap_or(first);
    let span = last.t_secs - start.t_secs;
    if span <= 0.0 {
        return (0.0, start.t_secs);
    }
    (last.swap_ins.saturating_sub(start.swap_ins) as f64 / span, start.t_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn predicted(saved: i64, ci: [i64; 2], swap_ins: f64) -> Predicted {
        Predicted {
            memory_saved_bytes: saved,
            memory_saved_ci: ci,
            moved_out_bytes: 0,
            swap_ins_per_sec: swap_ins,
            operating_point: "cold_age".into(),
            note: None,
        }
    }

    fn realized(saved: i64, swap_ins: f64, psi: f64) -> Realized {
        Realized {
            memory_saved_bytes: saved,
            swap_ins_per_sec: swap_ins,
            psi_some_avg60: psi,
            ..Realized::default()
        }
    }

    #[test]
    fn savings_compare_within_ten_percent_and_inside_the_interval() {
        let mib = 1 << 20;
        let p = predicted(430 * mib, [380 * mib, 480 * mib], 10.0);
        let w = within(&p, &realized(412 * mib, 11.0, 0.02));
        assert!(w.saved_within_10_percent && w.saved_inside_ci);
        assert!(w.swap_ins_within_25_percent && w.psi_below_0_1);
        let w = within(&p, &realized(370 * mib, 14.0, 0.5));
        // 370 is 14 % under 430 and under the interval; 14 is 40 % over 10.
        assert!(!w.saved_within_10_percent && !w.saved_inside_ci);
        assert!(!w.swap_ins_within_25_percent && !w.psi_below_0_1);
        // Inside the interval but more than 10 % off.
        let w = within(&p, &realized(475 * mib, 10.0, 0.0));
        assert!(!w.saved_within_10_percent && w.saved_inside_ci);
    }

    #[test]
    fn a_prediction_of_nothing_is_met_by_nearly_nothing() {
        let p = predicted(0, [0, 0], 0.0);
        // An empty device costs a few KiB: nothing, and inside [0, 0].
        let w = within(&p, &realized(-8192, 0.2, 0.0));
        assert!(w.saved_within_10_percent && w.swap_ins_within_25_percent && w.saved_inside_ci);
        let w = within(&p, &realized(SMALL_BYTES * 3, 2.0, 0.0));
        assert!(!w.saved_within_10_percent && !w.swap_ins_within_25_percent);
        assert!(!w.saved_inside_ci);
        assert_eq!(ratio(5.0, 0.0), None);
        assert_eq!(ratio(5.0, 10.0), Some(0.5));
    }

    fn at(t: f64, swap_ins: u64) -> Sample {
        Sample { t_secs: t, swap_ins, ..Sample::default() }
    }

    #[test]
    fn swap_ins_are_counted_after_the_first_t() {
        let s = [at(0.0, 0), at(5.0, 500), at(10.0, 520), at(15.0, 540), at(20.0, 560)];
        // From T = 10 s: 40 pages over 10 s, the 500 of the first page-outs left out.
        assert_eq!(swap_in_rate(&s, 10.0), (4.0, 10.0));
        // A T past the watch's end: the whole watch.
        assert_eq!(swap_in_rate(&s, 60.0), (28.0, 0.0));
        assert_eq!(swap_in_rate(&s[..1], 0.0), (0.0, 0.0));
        assert_eq!(swap_in_rate(&[], 0.0), (0.0, 0.0));
    }

    #[test]
    fn figures_stop_where_the_processes_watched_exited() {
        let mut s: Vec<Sample> = (0..5)
            .map(|i| Sample {
                t_secs: i as f64 * 5.0,
                moved_out_bytes: 60 << 20,
                pool_bytes: 5 << 20,
                swap_ins: i * 10,
                psi_some_avg60: i as f64 / 100.0,
                watched_alive: vec![7],
                watched_swapped_bytes: 50 << 20,
                ..Sample::default()
            })
            .collect();
        // The process exits: its memory leaves the store, and its exit reads some back.
        s.push(Sample { t_secs: 25.0, swap_ins: 900, ..Sample::default() });
        let r = from_samples(&s, true, 5.0);
        assert_eq!(
            (r.at_secs, r.moved_out_bytes, r.memory_saved_bytes),
            (20.0, 60 << 20, 55 << 20)
        );
        assert_eq!((r.swap_ins_per_sec, r.swap_ins_from_secs), (2.0, 5.0));
        assert_eq!((r.psi_some_avg60, r.watched_swapped_bytes), (0.04, Some(50 << 20)));
        // Unwatched: the end, whatever it holds.
        let r = from_samples(&s, false, 5.0);
        assert_eq!((r.at_secs, r.moved_out_bytes, r.moved_out_max_bytes), (25.0, 0, 60 << 20));
        assert_eq!(r.watched_swapped_bytes, None);
        assert_eq!(from_samples(&[], true, 0.0), Realized::default());
    }
}

//! The live system as the lab found it: the zram swap device the pages were captured from (its
//! configuration, its mm_stat beside zmem's prediction from the captured pages, the pool's
//! fragmentation) and the swap rates the candidates' CPU cost is projected with.

use serde::{Deserialize, Serialize};

use super::SwapRow;

/// A live zram swap device's configuration, as read from sysfs and /proc/swaps.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LiveConfig {
    /// `/dev/zramN`.
    pub device: String,
    /// The selected primary algorithm (the bracketed one of `comp_algorithm`).
    pub comp_algorithm: String,
    /// `recomp_algorithm`, where the kernel has it.
    pub recomp_algorithm: Option<String>,
    /// `algorithm_params`, where readable.
    pub algorithm_params: Option<String>,
    pub disksize_bytes: u64,
    /// `mem_limit` (0: none).
    pub mem_limit_bytes: u64,
    /// Priority in /proc/swaps.
    pub swap_priority: Option<i32>,
}

/// One mm_stat field, live against predicted.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FieldComparison {
    pub field: String,
    pub live: u64,
    pub predicted: u64,
}

/// The "Now" section: what the kernel holds, and what zmem predicts for the same pages.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Now {
    pub config: LiveConfig,
    /// The device's mm_stat line at capture time (kernel format).
    pub live_mm_stat: String,
    /// zmem's mm_stat for the captured pages written in slot order to a device configured as
    /// the live one (kernel format).
    pub predicted_mm_stat: String,
    pub fields: Vec<FieldComparison>,
    /// Whether orig, compr and huge agree exactly (the system was quiet during the read).
    pub exact: bool,
    /// What moved while the device was read, when not exact.
    pub drift: Option<String>,
    /// Live `mem_used_total` less zmem's freshly packed pool: the live pool's fragmentation.
    pub fragmentation_bytes: i64,
    /// What `echo 1 > compact` would give back: zmem's pool before and after compaction of a
    /// device that went through the same pages, or the fragmentation when no better estimate.
    pub compact_gain_bytes: u64,
    /// Pages the live device stores (orig_data_size / page size): what projections scale to.
    pub stored_pages: u64,
}

/// Swap traffic per second: observed on the live system, or taken from the trace replay.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Rates {
    pub swap_ins_per_sec: f64,
    pub swap_outs_per_sec: f64,
    /// Length of the observation window (0 when not observed).
    pub observed_secs: f64,
    /// `observed` (pswpin/pswpout and the zram device's I/O over the window) or `replay` (the
    /// generated trace's replay, when there was nothing to watch).
    pub source: String,
    /// Why this source, in words.
    pub note: String,
}

/// The rates of the lab's own replay, for a system with nothing to observe: zram's swap-ins and
/// swap-outs at the tightest RAM budget, per second of the generated trace.
pub fn replay_rates(rows: &[SwapRow]) -> Rates {
    let row =
        rows.iter().filter(|r| r.swap == "zram" && r.trace_secs > 0.0).min_by_key(|r| r.ram_pages);
    match row {
        Some(r) => Rates {
            swap_ins_per_sec: r.swap_ins as f64 / r.trace_secs,
            swap_outs_per_sec: r.swap_outs as f64 / r.trace_secs,
            observed_secs: 0.0,
            source: "replay".into(),
            note: format!(
                "no live swap to observe: the generated trace's replay with zram and RAM for {} \
                 of {} pages ({} swap-ins, {} swap-outs in {:.3} s of trace)",
                r.ram_pages, r.pages, r.swap_ins, r.swap_outs, r.trace_secs
            ),
        },
        None => Rates {
            swap_ins_per_sec: 0.0,
            swap_outs_per_sec: 0.0,
            observed_secs: 0.0,
            source: "replay".into(),
            note: "no live swap to observe and no replay with a timed trace".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(swap: &str, ram_pages: u64, swap_ins: u64, swap_outs: u64, secs: f64) -> SwapRow {
        SwapRow {
            swap: swap.into(),
            ram_pages,
            pages: 1000,
            accesses: 8000,
            swap_outs,
            swap_ins,
            max_pool_bytes: 0,
            disk_reads: 0,
            disk_writes: 0,
            store_p99_ns: 0,
            load_p50_ns: 0,
            load_p99_ns: 0,
            cpu_seconds: 0.0,
            trace_secs: secs,
            verified: true,
        }
    }

    #[test]
    fn replay_rates_use_zram_at_the_tightest_budget() {
        let rows = [
            row("zram", 250, 400, 500, 2.0),
            row("zswap", 250, 999, 999, 2.0),
            row("zram", 500, 100, 150, 2.0),
        ];
        let r = replay_rates(&rows);
        assert_eq!((r.swap_ins_per_sec, r.swap_outs_per_sec), (200.0, 250.0));
        assert_eq!(r.source, "replay");
        assert!(r.note.contains("250 of 1000 pages"), "{}", r.note);
        assert_eq!(replay_rates(&[]).swap_ins_per_sec, 0.0);
    }
}

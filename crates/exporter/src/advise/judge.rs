//! The lab's judgement on the rolling sample, at the kernel's own swap rates: for every
//! candidate the running kernel's zram offers, the pool it would need for every page the
//! device stores (with the sample's 95 % interval), the memory that saves against the live
//! pool, and the CPU it would cost; and the one to recommend.
//!
//! - **Memory saved** = live `mem_used_total` (mm_stat) - the candidate's estimated pool; its
//!   bounds are the pool's interval carried through (as the lab's `memory_saved_bytes`).
//! - **CPU seconds per second** = `swap_outs/s x compress + swap_ins/s x decompress` (the thread
//!   CPU our codec spent per page of this device's sample) + the kernel's own work per swap
//!   operation at this machine's speed ([`zmem_lab::speed::kernel_speed`]), as the lab's cost
//!   model (`cost::project`) counts a plain algorithm.
//! - **The recommendation**: the lab's one judge (`zmem_lab::decision::decide`): among candidates
//!   within the CPU budget (default 1 % of one core, `Budgets::default()`), the one saving the
//!   most memory; candidates whose savings differ by less than the uncertainty (the two
//!   intervals' half-widths in quadrature, and at least `decision::MIN_CHANGE` of the live
//!   pool) are equal, and the tie rule picks among them (clearly less CPU, then what runs now,
//!   then the kernel's order). When none fits (the kernel's own swap work alone can exceed 1 %
//!   of a core), the current algorithm is kept, as the lab keeps what runs.

use zmem_lab::cost::Traffic;
use zmem_lab::sample::Interval;

use super::estimate::PoolEstimate;

/// One candidate, judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub config: String,
    pub is_current: bool,
    pub pool_bytes: Interval,
    /// Live mem_used_total less the pool: estimate, low, high.
    pub memory_saved_bytes: Interval,
    pub cpu_secs_per_sec: f64,
    pub within_budget: bool,
}

/// What a candidate measured: its pool estimate and CPU per page (compress, decompress).
#[derive(Debug, Clone)]
pub struct Measured {
    pub config: String,
    pub estimate: PoolEstimate,
    pub compress_ns: f64,
    pub decompress_ns: f64,
}

/// Judges `measured` against the live pool at `traffic`, within `cpu_budget` CPU seconds per
/// second.
pub fn judge(
    measured: &[Measured],
    current: &str,
    live_mem_used: u64,
    traffic: Traffic,
    cpu_budget: f64,
) -> Vec<Row> {
    let live = live_mem_used as f64;
    // The live what-if judges this machine: its kernel's work at this machine's speed.
    let kernel = zmem_lab::speed::kernel_speed().overhead.cpu_secs_per_sec(traffic);
    measured
        .iter()
        .map(|m| {
            let cpu = (traffic.swap_outs_per_sec * m.compress_ns
                + traffic.swap_ins_per_sec * m.decompress_ns)
                / 1e9
                + kernel;
            let p = m.estimate.pool_bytes;
            Row {
                config: m.config.clone(),
                is_current: m.config == current,
                pool_bytes: p,
                memory_saved_bytes: Interval {
                    estimate: live - p.estimate,
                    low: live - p.high,
                    high: live - p.low,
                },
                cpu_secs_per_sec: cpu,
                within_budget: cpu <= cpu_budget,
            }
        })
        .collect()
}

/// Why the recommendation is what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// The most memory saved within the budget, beyond the uncertainty.
    MostSaved,
    /// Equal to others within the uncertainty: the tie rule picked it.
    Tie,
    /// Nothing fits the budget: the current algorithm is kept.
    NoneFits,
}

impl Basis {
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::MostSaved => "most_saved_within_budget",
            Basis::Tie => "equal_within_uncertainty",
            Basis::NoneFits => "none_within_budget_keep_current",
        }
    }
}

/// The recommended row, and why, by the lab's one judge (`zmem_lab::decision::decide`, over
/// the rows as zram candidates on the live pool's basis); `None` without rows.
pub fn recommend(rows: &[Row]) -> Option<(usize, Basis)> {
    use zmem_lab::decision::{Context, Reason, decide};
    use zmem_lab::{Candidate, Config, NowSource, Policy};
    // The live pool: saved + pool, the same for every row (zswap disabled: the pages
    // themselves, uncompressed).
    let first = rows.first()?;
    let live = first.memory_saved_bytes.estimate + first.pool_bytes.estimate;
    let current = rows.iter().find(|r| r.is_current);
    let cands: Vec<Candidate> = rows
        .iter()
        .map(|r| {
            let mut c = Candidate::none(0);
            c.name = r.config.clone();
            c.config = Config::Zram { policy: Policy::single(&r.config) };
            c.runs_now = r.is_current;
            c.is_reference = r.is_current;
            c.pool_bytes = r.pool_bytes.estimate.round().max(0.0) as u64;
            let m = r.memory_saved_bytes;
            c.memory_saved_bytes = m.estimate.round() as i64;
            c.memory_saved_ci = [m.low.round() as i64, m.high.round() as i64];
            c.cpu_secs_per_sec = r.cpu_secs_per_sec;
            c.within_budgets = r.within_budget;
            c
        })
        .collect();
    let basis = zmem_lab::Basis {
        now_config: current.map_or_else(|| "none".to_string(), |c| c.config.clone()),
        now_bytes: live.round().max(0.0) as u64,
        now_source: if current.is_some() { NowSource::LiveZram } else { NowSource::Uncompressed },
        pages: 0,
    };
    let ctx = Context {
        basis: &basis,
        estimates: None,
        too_few_pages: None,
        disk_swap: None,
        zswap_swap_bytes: 0,
        zram_swap_bytes: 0,
        operating: None,
        mem_total_bytes: None,
    };
    let d = decide(&cands, &ctx);
    let basis = match d.reason {
        Reason::SavesMost => Basis::MostSaved,
        Reason::Tie { .. } => Basis::Tie,
        _ => Basis::NoneFits,
    };
    Some((d.chosen?, basis))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(config: &str, pool: f64, half: f64, c: f64, d: f64) -> Measured {
        let i = Interval { estimate: pool, low: pool - half, high: pool + half };
        Measured {
            config: config.into(),
            estimate: PoolEstimate { pool_bytes: i, compressed_bytes: i },
            compress_ns: c,
            decompress_ns: d,
        }
    }

    const T: Traffic = Traffic { swap_ins_per_sec: 100.0, swap_outs_per_sec: 200.0 };

    #[test]
    fn saved_and_cpu_by_hand() {
        let rows = judge(&[m("lzo-rle", 1e6, 1e4, 5000.0, 2000.0)], "lzo-rle", 1_100_000, T, 0.01);
        let r = &rows[0];
        assert_eq!(r.memory_saved_bytes, Interval { estimate: 1e5, low: 9e4, high: 1.1e5 });
        // 200 x 5 us + 100 x 2 us = 1.2 ms/s, and the kernel's work at this machine's speed.
        let k = zmem_lab::speed::kernel_speed().overhead;
        let kernel = (200.0 * k.reclaim_ns_per_swap_out + 100.0 * k.fault_ns_per_swap_in) / 1e9;
        assert!((r.cpu_secs_per_sec - 0.0012 - kernel).abs() < 1e-12);
        assert!(r.is_current && r.within_budget);
    }

    #[test]
    fn the_labs_rule_ties_within_the_uncertainty_and_keeps_what_runs() {
        // zstd saves 50 kB more than lzo-rle, inside the uncertainty (two +-60 kB intervals:
        // +-85 kB together): equal, and the tie rule takes lzo-rle, which runs now and costs
        // about as much CPU as zstd at these rates (the kernel's own work dominates).
        let ms = [
            m("lzo-rle", 1e6, 6e4, 5000.0, 2000.0),
            m("lz4", 1.2e6, 6e4, 3000.0, 1000.0),
            m("zstd", 0.95e6, 6e4, 5200.0, 2100.0),
        ];
        let rows = judge(&ms, "lzo-rle", 1_500_000, T, 0.01);
        assert_eq!(recommend(&rows), Some((0, Basis::Tie)));
        // Clearly better (200 kB, beyond the uncertainty): zstd.
        let ms2 = [ms[0].clone(), ms[1].clone(), m("zstd", 0.8e6, 6e4, 9000.0, 4000.0)];
        let rows = judge(&ms2, "lzo-rle", 1_500_000, T, 0.01);
        assert_eq!(recommend(&rows), Some((2, Basis::MostSaved)));
        // zstd over a tight budget: lzo-rle (most saved among those that fit).
        let b = zmem_lab::speed::kernel_speed().overhead.cpu_secs_per_sec(T) + 0.0015;
        let rows = judge(&ms2, "lzo-rle", 1_500_000, T, b);
        assert!(!rows[2].within_budget);
        assert_eq!(recommend(&rows), Some((0, Basis::MostSaved)));
        // Nothing fits: what runs now is kept, as the lab keeps it.
        let rows = judge(&ms2, "lzo-rle", 1_500_000, T, 0.0);
        assert_eq!(recommend(&rows), Some((0, Basis::NoneFits)));
        assert_eq!(recommend(&[]), None);
    }
}

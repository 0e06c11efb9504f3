//! Latency recording and bpftrace-style printing.
//!
//! Latencies go into an HDR histogram (3 significant digits, so exact below 2048 ns and with
//! power-of-two-aligned sub-buckets above), which gives exact counts for the log2 buckets
//! bpftrace's `hist()` prints and, unlike a log2 histogram, percentiles as well. The printed
//! form is bpftrace's: `[lo, hi)` with 1024-based K/M/G suffixes, left-aligned in 16 columns, the
//! count right-aligned in 8, and a bar of `@` up to 52 wide scaled to the largest bucket, as in
//! seed 001's `@load_ns` / `@store_ns` output (docs/REFERENCES.md [seed-001]).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// One log2 bucket: `count` values in `[lo, hi)` nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    pub lo: u64,
    pub hi: u64,
    pub count: u64,
}

/// A finished latency distribution: summary numbers and the log2 buckets from the first
/// non-empty one to the last.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyHist {
    pub count: u64,
    pub min_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
    pub buckets: Vec<Bucket>,
}

/// Records latencies in nanoseconds.
#[derive(Debug, Clone)]
pub struct LatencyRecorder(Histogram<u64>);

impl Default for LatencyRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyRecorder {
    pub fn new() -> Self {
        // 1 ns .. 1 hour at 3 significant digits; the bounds are constants, so this cannot fail.
        Self(Histogram::new_with_bounds(1, 3_600_000_000_000, 3).unwrap_or_else(|_| {
            Histogram::new(3).unwrap_or_else(|_| unreachable!("3 significant digits is valid"))
        }))
    }

    /// Records one latency (0 counts as 1 ns; past an hour saturates).
    pub fn record(&mut self, ns: u64) {
        self.0.saturating_record(ns.max(1));
    }

    pub fn finish(&self) -> LatencyHist {
        let h = &self.0;
        let mut buckets: Vec<Bucket> = (0..63)
            .map(|k| {
                let (lo, hi) = (1u64 << k, 1u64 << (k + 1));
                Bucket { lo, hi, count: if h.is_empty() { 0 } else { h.count_between(lo, hi - 1) } }
            })
            .collect();
        let last = buckets.iter().rposition(|b| b.count > 0).map_or(0, |i| i + 1);
        buckets.truncate(last);
        let first = buckets.iter().position(|b| b.count > 0).unwrap_or(buckets.len());
        buckets.drain(..first);
        LatencyHist {
            count: h.len(),
            min_ns: if h.is_empty() { 0 } else { h.min() },
            p50_ns: h.value_at_quantile(0.5),
            p99_ns: h.value_at_quantile(0.99),
            max_ns: h.max(),
            mean_ns: if h.is_empty() { 0.0 } else { h.mean() },
            buckets,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_buckets_count_exactly_and_print_like_bpftrace() {
        let mut r = LatencyRecorder::new();
        for ns in [1000, 1023, 1024, 2047, 2048, 9000, 16383] {
            r.record(ns);
        }
        let h = r.finish();
        let got: Vec<(u64, u64, u64)> = h.buckets.iter().map(|b| (b.lo, b.hi, b.count)).collect();
        assert_eq!(
            got,
            vec![
                (512, 1024, 2),
                (1024, 2048, 2),
                (2048, 4096, 1),
                (4096, 8192, 0),
                (8192, 16384, 2)
            ]
        );
        assert_eq!((h.count, h.min_ns), (7, 1000));
    }

    #[test]
    fn an_empty_histogram_has_no_buckets() {
        let h = LatencyRecorder::new().finish();
        assert!(h.buckets.is_empty() && h.count == 0);
    }
}

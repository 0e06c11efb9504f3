//! Load latency: one read per page timed into an HDR histogram, summarised as percentiles and
//! as the log2 buckets bpftrace prints (seed 001's histograms).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Percentiles and log2 buckets of one latency distribution, in nanoseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LatencySummary {
    pub count: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    /// (bucket lower bound in ns, count): bucket k holds [2^k, 2^(k+1)).
    pub log2_buckets: Vec<(u64, u64)>,
}

/// Records nanosecond samples.
#[derive(Debug)]
pub struct Recorder(Histogram<u64>);

impl Default for Recorder {
    fn default() -> Self {
        // 1 ns .. 10 s at 3 significant digits; new_with_bounds only fails on bad bounds.
        Self(Histogram::new_with_bounds(1, 10_000_000_000, 3).expect("static bounds are valid"))
    }
}

impl Recorder {
    pub fn record(&mut self, ns: u64) {
        self.0.saturating_record(ns.max(1));
    }

    pub fn summary(&self) -> LatencySummary {
        let h = &self.0;
        let mut buckets: Vec<(u64, u64)> = Vec::new();
        for v in h.iter_recorded() {
            let lo = 1u64 << (63 - v.value_iterated_to().max(1).leading_zeros());
            match buckets.last_mut() {
                Some((b, c)) if *b == lo => *c += v.count_at_value(),
                _ => buckets.push((lo, v.count_at_value())),
            }
        }
        LatencySummary {
            count: h.len(),
            p50_ns: h.value_at_quantile(0.5),
            p99_ns: h.value_at_quantile(0.99),
            max_ns: h.max(),
            log2_buckets: buckets,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_powers_of_two_and_sum_to_the_count() {
        let mut r = Recorder::default();
        for ns in [1, 2, 3, 900, 1000, 1023, 1024, 5000] {
            r.record(ns);
        }
        let s = r.summary();
        assert_eq!(s.count, 8);
        assert_eq!(s.log2_buckets.iter().map(|b| b.1).sum::<u64>(), 8);
        assert!(s.log2_buckets.iter().all(|b| b.0.is_power_of_two()));
        assert_eq!(s.log2_buckets[0], (1, 1));
        assert_eq!(s.log2_buckets[1], (2, 2));
        assert!(s.log2_buckets.contains(&(512, 3)), "{:?}", s.log2_buckets);
        assert!(s.p50_ns >= 900 && s.p50_ns <= 1024);
    }
}

//! The advisor: which measured policy to use, and the runner-up.
//!
//! The rule, stated in every report: among policies that read every page back correctly, take
//! those whose load p99 is within 2x of the fastest and whose CPU cost is within 3x of the
//! cheapest (a page-fault path and a reclaim budget are what such limits protect), and choose
//! the one that saves the most memory. The runner-up is the next best by memory saved among all
//! verified policies, with why it lost. If no policy passes both limits, the one saving the most
//! memory per CPU second wins.

use serde::{Deserialize, Serialize};

use super::policy::PolicyRow;
use crate::LabError;

/// The recommended configuration and what it is expected to give.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Recommendation {
    /// Policy name.
    pub config: String,
    /// The zram attribute writes that set it up.
    pub attributes: Vec<String>,
    pub expected_ratio: f64,
    pub memory_saved_bytes: i64,
    pub memory_saved_percent: f64,
    pub cpu_seconds_per_gb: f64,
    pub load_latency_p50_ns: u64,
    pub load_latency_p99_ns: u64,
    pub runner_up: Option<String>,
    /// Why the choice, and why not the runner-up, with the numbers.
    pub why: String,
    /// The rule applied (so the report says how it decided).
    pub rule: String,
}

const P99_LIMIT: f64 = 2.0;
const CPU_LIMIT: f64 = 3.0;

pub fn recommend(rows: &[PolicyRow]) -> Result<Recommendation, LabError> {
    let ok: Vec<&PolicyRow> = rows.iter().filter(|r| r.verified).collect();
    if ok.is_empty() {
        return Err(LabError::NothingVerified);
    }
    let best_p99 = ok.iter().map(|r| r.load_latency.p99_ns).min().unwrap_or(1).max(1) as f64;
    let best_cpu = ok.iter().map(|r| r.cpu_seconds_per_gb).fold(f64::INFINITY, f64::min);
    let within = |r: &&PolicyRow| {
        r.load_latency.p99_ns as f64 <= P99_LIMIT * best_p99
            && r.cpu_seconds_per_gb <= CPU_LIMIT * best_cpu
    };
    let mut ranked = ok.clone();
    ranked.sort_by_key(|r| std::cmp::Reverse(r.memory_saved_bytes));
    let efficiency = |r: &PolicyRow| r.memory_saved_bytes as f64 / r.cpu_seconds_per_gb.max(1e-9);
    let chosen = match ranked.iter().find(|r| within(r)) {
        Some(r) => *r,
        None => *ok
            .iter()
            .max_by(|a, b| efficiency(a).total_cmp(&efficiency(b)))
            .expect("ok is not empty"),
    };
    let runner = ranked.iter().find(|r| r.policy.name != chosen.policy.name).copied();
    let mib = |b: i64| b as f64 / (1 << 20) as f64;
    let mut why = format!(
        "{} saves {:.1} MiB of {:.1} MiB ({:.1} %) at {:.2} CPU s/GB, load p99 {} ns",
        chosen.policy.name,
        mib(chosen.memory_saved_bytes),
        mib(chosen.orig_bytes as i64),
        100.0 * chosen.memory_saved_bytes as f64 / chosen.orig_bytes as f64,
        chosen.cpu_seconds_per_gb,
        chosen.load_latency.p99_ns
    );
    if let Some(r) = runner {
        let reason = if !within(&r) {
            format!(
                "outside the limits (p99 {:.1}x the fastest, CPU {:.1}x the cheapest)",
                r.load_latency.p99_ns as f64 / best_p99,
                r.cpu_seconds_per_gb / best_cpu
            )
        } else {
            format!("saves {:.1} MiB less", mib(chosen.memory_saved_bytes - r.memory_saved_bytes))
        };
        why += &format!("; runner-up {}: {reason}", r.policy.name);
    }
    Ok(Recommendation {
        config: chosen.policy.name.clone(),
        attributes: chosen.policy.as_attributes(),
        expected_ratio: chosen.effective_ratio,
        memory_saved_bytes: chosen.memory_saved_bytes,
        memory_saved_percent: 100.0 * chosen.memory_saved_bytes as f64 / chosen.orig_bytes as f64,
        cpu_seconds_per_gb: chosen.cpu_seconds_per_gb,
        load_latency_p50_ns: chosen.load_latency.p50_ns,
        load_latency_p99_ns: chosen.load_latency.p99_ns,
        runner_up: runner.map(|r| r.policy.name.clone()),
        why,
        rule: format!(
            "among verified policies with load p99 <= {P99_LIMIT}x the fastest and CPU <= \
             {CPU_LIMIT}x the cheapest, the one saving the most memory"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::policy::{Policy, PolicyRow};
    use crate::latency::LatencyHist;

    fn row(name: &str, saved: i64, cpu: f64, p99: u64, verified: bool) -> PolicyRow {
        PolicyRow {
            policy: Policy {
                name: name.into(),
                algo: "lz4".into(),
                recomp: vec![],
                mark_idle: false,
                recompress: None,
            },
            pages: 100,
            orig_bytes: 409600,
            compressed_bytes: 0,
            pool_bytes: (409600 - saved) as u64,
            effective_ratio: 409600.0 / (409600 - saved) as f64,
            memory_saved_bytes: saved,
            pool_bytes_before_recompress: 0,
            write_seconds: 0.0,
            recompress_seconds: 0.0,
            cpu_seconds_per_gb: cpu,
            load_latency: LatencyHist { p99_ns: p99, ..Default::default() },
            verified,
        }
    }

    #[test]
    fn most_memory_within_the_limits_wins() {
        let rows = [
            row("fast", 200_000, 1.0, 1000, true),
            row("dense", 260_000, 2.5, 1800, true),
            row("densest-but-slow", 300_000, 9.0, 1500, true),
            row("broken", 400_000, 1.0, 100, false),
        ];
        let r = recommend(&rows).unwrap();
        assert_eq!(r.config, "dense");
        assert_eq!(r.runner_up.as_deref(), Some("densest-but-slow"));
        assert!(r.why.contains("outside the limits"), "{}", r.why);
    }

    #[test]
    fn nothing_verified_is_an_error() {
        assert!(recommend(&[row("x", 1, 1.0, 1, false)]).is_err());
    }
}

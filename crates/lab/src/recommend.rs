//! The advisor: which measured configuration to use, in the user's units, and how to apply it.
//!
//! Every measured policy becomes a [`Candidate`] projected onto the user's device by the cost
//! model ([`super::cost`]: memory saved against now, CPU seconds per second at the swap rates,
//! added swap-in latency), and the rule of [`cost::choose`] picks one within the user's budgets
//! (`--cpu-budget`, `--latency-budget`); the rule is stated in every report. "Now" is the live
//! device's configuration (its primary algorithm, no recompression) when there is a live device,
//! else the kernel's default (lzo-rle). The runner-up is the next candidate by the same rule.

use serde::{Deserialize, Serialize};

use crate::LabError;
use crate::cost::{self, Budgets, Candidate, Measured, Projection, Traffic};
use crate::now::{Now, Rates};
use crate::policy::PolicyRow;

/// The recommended configuration and what it is expected to give.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Recommendation {
    /// Policy name (a candidate's name).
    pub config: String,
    /// On the measured pages: orig / pool.
    pub expected_ratio: f64,
    /// On the measured pages: orig - pool.
    pub memory_saved_bytes: i64,
    pub memory_saved_percent: f64,
    pub cpu_seconds_per_gb: f64,
    pub load_latency_p50_ns: u64,
    pub load_latency_p99_ns: u64,
    pub runner_up: Option<String>,
    /// Why the runner-up was not chosen (zmem-render says it in words, with the numbers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_up_reason: Option<RunnerUpReason>,
    /// The rule applied (so the report says how it decided).
    pub rule: String,
    /// The configuration "now" is: the live device's primary, or the kernel default.
    pub now_config: String,
    /// What now costs in RAM: the live mem_used_total, or the projected pool of now's
    /// configuration without a live device.
    pub now_bytes: u64,
    /// Where now_bytes comes from, in words.
    pub now_source: String,
    /// Pages the projection is for (the live device's stored pages, else the pages measured).
    pub projected_pages: u64,
    /// The chosen candidate is the current configuration: keep it.
    pub keep_current: bool,
    /// Whether the choice fits the budgets (false: nothing fitted, the fallback chose).
    pub within_budgets: bool,
    pub memory_saved_bytes_vs_now: i64,
    pub cpu_secs_per_sec: f64,
    pub added_load_p99_ns: i64,
    /// The measurement is too uncertain to act on ([`crate::sample::MIN_PAGES`]): the choice
    /// above is what the pages measured gave, not advice, and no apply lines go with it.
    #[serde(default)]
    pub uncertain: bool,
    /// Why it is uncertain (zmem-render says it in words), when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertain_reason: Option<UncertainReason>,
}

/// Why a recommendation is too uncertain to act on, as data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum UncertainReason {
    /// Fewer pages measured than the lab needs to say anything about a device
    /// ([`crate::sample::MIN_PAGES`], where the reasoning is).
    TooFewPages { measured_pages: u64, min_pages: u64 },
}

/// Why a measurement of `measured_pages` pages is too uncertain to act on, if it is.
pub fn uncertainty(measured_pages: u64) -> Option<UncertainReason> {
    (measured_pages < crate::sample::MIN_PAGES).then_some(UncertainReason::TooFewPages {
        measured_pages,
        min_pages: crate::sample::MIN_PAGES,
    })
}

/// Why the runner-up lost, as data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum RunnerUpReason {
    /// It is outside the budgets, for these reasons.
    OutsideBudgets { over_budget: Vec<String> },
    /// It saves this many bytes less than the choice.
    SavesLess { bytes: i64 },
    /// It saves as much and costs more CPU.
    SavesAsMuchCostsMore,
    /// It saves as much; the current configuration is kept.
    SavesAsMuchKeepCurrent,
    /// Nothing fitted the budgets and it costs more CPU than the fallback.
    CostsMoreCpu,
}

/// Whether `r` is the configuration named by `algo` alone (no secondary, no dictionary).
fn is_plain(r: &PolicyRow, algo: &str) -> bool {
    r.policy.algo == algo && r.policy.recomp.is_empty() && !r.policy.dict
}

/// Projects every policy row, applies the rule, and says why. Returns the candidates (in the
/// rows' order) and the recommendation.
/// Why the live kernel cannot run `p`, if it cannot: an algorithm its `comp_algorithm` does not
/// offer, or recompression where it has none (CONFIG_ZRAM_MULTI_COMP off).
fn unavailable(p: &crate::Policy, live: &crate::LiveConfig) -> Option<String> {
    if live.offered.is_empty() {
        return None;
    }
    let missing: Vec<&str> = std::iter::once(p.algo.as_str())
        .chain(p.recomp.iter().map(String::as_str))
        .filter(|a| !live.offered.iter().any(|o| o == a))
        .collect();
    if !missing.is_empty() {
        return Some(format!(
            "this kernel offers no {} (comp_algorithm: {})",
            missing.join(", "),
            live.offered.join(" ")
        ));
    }
    (p.recompresses() && !live.recompress)
        .then(|| "this kernel has no recompression (CONFIG_ZRAM_MULTI_COMP off)".to_string())
}

pub fn recommend(
    rows: &[PolicyRow],
    now: Option<&Now>,
    rates: &Rates,
    budgets: &Budgets,
) -> Result<(Vec<Candidate>, Recommendation), LabError> {
    if !rows.iter().any(|r| r.verified) {
        return Err(LabError::NothingVerified);
    }
    let now_algo = now.map_or(zmem_zram::DEFAULT_ALGORITHM, |n| n.config.comp_algorithm.as_str());
    let cur = rows.iter().position(|r| is_plain(r, now_algo)).unwrap_or(0);
    let measured: Vec<Measured> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| Measured {
            name: r.policy.name.clone(),
            is_current: i == cur,
            verified: r.verified,
            recompresses: r.policy.recompresses(),
            pages: r.pages,
            pool_bytes: r.pool_bytes,
            extra_bytes: r.dict_bytes,
            compress_ns: r.compress_cpu_ns_per_page,
            decompress_ns: r.decompress_cpu_ns_per_page,
            recompress_ns: r.recompress_cpu_ns_per_page,
            load_p50_ns: r.load_latency.p50_ns,
            load_p99_ns: r.load_latency.p99_ns,
        })
        .collect();
    let live_bytes =
        now.and_then(|n| n.fields.iter().find(|f| f.field == "mem_used_total").map(|f| f.live));
    let measured_pages = rows[cur].pages;
    let proj = Projection {
        pages: now.map_or(measured_pages, |n| n.stored_pages).max(1),
        live_bytes,
        current_pool: now.and_then(|n| {
            n.fields.iter().find(|f| f.field == "mem_used_total").map(|f| f.predicted)
        }),
    };
    let traffic = Traffic {
        swap_ins_per_sec: rates.swap_ins_per_sec,
        swap_outs_per_sec: rates.swap_outs_per_sec,
    };
    let mut cands = cost::project(&measured, proj, traffic, budgets);
    if let Some(n) = now {
        for (c, r) in cands.iter_mut().zip(rows) {
            if let Some(why) = unavailable(&r.policy, &n.config) {
                c.available = false;
                c.within_budgets = false;
                c.over_budget.push(why);
            }
        }
    }
    let choice = cost::choose(&cands).ok_or(LabError::NothingVerified)?;
    let (c, r) = (&cands[choice.index], &rows[choice.index]);
    let now_bytes = (c.memory_saved_bytes_vs_now + c.pool_bytes as i64).max(0) as u64;

    // The runner-up: the best of the others by the same rule.
    let others: Vec<Candidate> = cands
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != choice.index)
        .map(|(_, x)| x.clone())
        .collect();
    let runner = cost::choose(&others).map(|ch| &others[ch.index]);

    let runner_up_reason = runner.map(|x| {
        if !x.within_budgets {
            RunnerUpReason::OutsideBudgets { over_budget: x.over_budget.clone() }
        } else if choice.fits && x.memory_saved_bytes_vs_now < c.memory_saved_bytes_vs_now {
            RunnerUpReason::SavesLess {
                bytes: c.memory_saved_bytes_vs_now - x.memory_saved_bytes_vs_now,
            }
        } else if choice.fits && x.cpu_secs_per_sec > c.cpu_secs_per_sec {
            RunnerUpReason::SavesAsMuchCostsMore
        } else if choice.fits {
            RunnerUpReason::SavesAsMuchKeepCurrent
        } else {
            RunnerUpReason::CostsMoreCpu
        }
    });
    let now_source = match live_bytes {
        Some(_) => format!(
            "the live device's mem_used_total ({} pages stored; its fragmentation included, so \
             the current configuration's row shows what a fresh pool would give back)",
            proj.pages
        ),
        None => format!(
            "no live device: the kernel default {now_algo} on the {} pages measured",
            proj.pages
        ),
    };
    Ok((
        cands.clone(),
        Recommendation {
            config: r.policy.name.clone(),
            expected_ratio: r.effective_ratio,
            memory_saved_bytes: r.memory_saved_bytes,
            memory_saved_percent: 100.0 * r.memory_saved_bytes as f64 / r.orig_bytes.max(1) as f64,
            cpu_seconds_per_gb: r.cpu_seconds_per_gb,
            load_latency_p50_ns: r.load_latency.p50_ns,
            load_latency_p99_ns: r.load_latency.p99_ns,
            runner_up: runner.map(|x| x.name.clone()),
            runner_up_reason,
            rule: cost::rule(budgets),
            now_config: rows[cur].policy.name.clone(),
            now_bytes,
            now_source,
            projected_pages: proj.pages,
            keep_current: c.is_current,
            within_budgets: choice.fits,
            memory_saved_bytes_vs_now: c.memory_saved_bytes_vs_now,
            cpu_secs_per_sec: c.cpu_secs_per_sec,
            added_load_p99_ns: c.added_load_p99_ns,
            uncertain: false,
            uncertain_reason: None,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Policy, PolicyRow};
    use zmem_sim::latency::LatencyHist;

    fn row(
        name: &str,
        algo: &str,
        saved: i64,
        comp_ns: f64,
        p99: u64,
        verified: bool,
    ) -> PolicyRow {
        PolicyRow {
            policy: Policy {
                name: name.into(),
                algo: algo.into(),
                recomp: vec![],
                mark_idle: false,
                recompress: None,
                dict: false,
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
            cpu_seconds_per_gb: comp_ns / 4096.0,
            load_latency: LatencyHist { p99_ns: p99, ..Default::default() },
            verified,
            compress_cpu_ns_per_page: comp_ns,
            decompress_cpu_ns_per_page: comp_ns / 4.0,
            recompress_cpu_ns_per_page: 0.0,
            dict_bytes: 0,
            dict: None,
        }
    }

    fn rates() -> Rates {
        Rates {
            swap_ins_per_sec: 100.0,
            swap_outs_per_sec: 100.0,
            observed_secs: 0.0,
            source: "replay".into(),
            note: String::new(),
        }
    }

    #[test]
    fn most_memory_within_the_budgets_wins_and_the_default_is_now() {
        let rows = [
            row("lz4", "lz4", 150_000, 3000.0, 1000, true),
            row("lzo-rle", "lzo-rle", 200_000, 5000.0, 1000, true),
            row("zstd", "zstd", 260_000, 20_000.0, 1800, true),
            // 100 x 120 us + 100 x 30 us = 15 ms/s: 1.5 % of a core.
            row("deflate", "deflate", 300_000, 120_000.0, 1500, true),
            row("broken", "lz4hc", 400_000, 1.0, 100, false),
        ];
        let (c, r) = recommend(&rows, None, &rates(), &Budgets::default()).unwrap();
        assert_eq!(c.len(), 5);
        assert!(c[1].is_current && !c[0].is_current);
        assert_eq!(r.now_config, "lzo-rle");
        assert_eq!(r.now_bytes, 409_600 - 200_000);
        assert_eq!(r.config, "zstd");
        assert_eq!(r.memory_saved_bytes_vs_now, 60_000);
        assert!(r.within_budgets && !r.keep_current);
        assert_eq!(r.runner_up.as_deref(), Some("lzo-rle"));
        assert_eq!(r.runner_up_reason, Some(RunnerUpReason::SavesLess { bytes: 60_000 }));
        assert!(r.rule.contains("1 % of one core"), "{}", r.rule);
    }

    #[test]
    fn nothing_fits_is_said() {
        let rows = [
            row("lzo-rle", "lzo-rle", 200_000, 5000.0, 1000, true),
            row("zstd", "zstd", 260_000, 20_000.0, 1800, true),
        ];
        let b = Budgets { cpu_percent_of_core: 0.001, ..Budgets::default() };
        let (_, r) = recommend(&rows, None, &rates(), &b).unwrap();
        assert_eq!(r.config, "lzo-rle");
        assert!(r.keep_current && !r.within_budgets);
        assert!(
            matches!(r.runner_up_reason, Some(RunnerUpReason::OutsideBudgets { .. })),
            "{:?}",
            r.runner_up_reason
        );
    }

    /// A live kernel that offers only lzo-rle, lzo and lz4 and has no recompression: zstd
    /// saves more but cannot be applied there, so lz4's saving wins among what can.
    #[test]
    fn what_the_live_kernel_cannot_run_is_never_chosen() {
        let rows = [
            row("lzo-rle", "lzo-rle", 200_000, 5000.0, 1000, true),
            row("lzo", "lzo", 210_000, 5000.0, 1000, true),
            row("zstd", "zstd", 260_000, 20_000.0, 1800, true),
        ];
        let live = crate::LiveConfig {
            device: "/dev/zram1".into(),
            comp_algorithm: "lzo-rle".into(),
            recomp_algorithm: None,
            algorithm_params: None,
            disksize_bytes: 1 << 30,
            mem_limit_bytes: 0,
            swap_priority: Some(100),
            offered: vec!["lzo-rle".into(), "lzo".into(), "lz4".into()],
            recompress: false,
        };
        let now = Now {
            config: live,
            live_mm_stat: String::new(),
            predicted_mm_stat: String::new(),
            fields: Vec::new(),
            exact: true,
            drift: None,
            fragmentation_bytes: 0,
            compact_gain_bytes: 0,
            stored_pages: 100,
        };
        let (c, r) = recommend(&rows, Some(&now), &rates(), &Budgets::default()).unwrap();
        assert_eq!(r.config, "lzo");
        assert!(!c[2].available && !c[2].within_budgets);
        assert!(c[2].over_budget.iter().any(|w| w.contains("offers no zstd")), "{:?}", c[2]);
        let mut p = rows[0].policy.clone();
        p.recomp = vec!["lzo".into()];
        p.recompress = Some("type=huge".into());
        let why = unavailable(&p, &now.config).unwrap();
        assert!(why.contains("no recompression"), "{why}");
    }

    #[test]
    fn nothing_verified_is_an_error() {
        let rows = [row("x", "lz4", 1, 1.0, 1, false)];
        assert!(recommend(&rows, None, &rates(), &Budgets::default()).is_err());
    }
}

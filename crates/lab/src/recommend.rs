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
use crate::policy::{Policy, PolicyRow};
use zmem_kernel::caps::KernelCaps;

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
    /// Whether the kernel runs it: false only when it runs no candidate at all (no zram).
    #[serde(default = "yes")]
    pub available: bool,
    /// Why the kernel cannot run it (absent when available).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    /// What a better-equipped kernel would add: candidates this kernel cannot run that would fit
    /// the budgets and save more than the recommendation, the best per kernel option, most
    /// saving first.
    #[serde(default)]
    pub better_kernel: Vec<BetterKernel>,
    /// The measurement is too uncertain to act on ([`crate::sample::MIN_PAGES`]): the choice
    /// above is what the pages measured gave, not advice, and no apply lines go with it.
    #[serde(default)]
    pub uncertain: bool,
    /// Why it is uncertain (zmem-render says it in words), when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertain_reason: Option<UncertainReason>,
}

fn yes() -> bool {
    true
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

/// Why a kernel cannot run a configuration, and the kernel options that would let it.
#[derive(Debug, Clone, PartialEq)]
pub struct Unfit {
    /// In the user's terms ("this kernel's zram offers lzo-rle, lzo, lz4; zstd needs ...").
    pub reason: String,
    /// Kernel options (or kernel versions) it needs, e.g. `CONFIG_ZRAM_BACKEND_ZSTD`.
    pub needs: Vec<String>,
}

/// Whether `k` can run `p`. The rule, when the kernel is only partly known:
///
/// - zram absent (no `/sys/class/zram-control`, no `/sys/block/zram*`): nothing can run;
///   every candidate is unavailable with that reason.
/// - zram present but its compressor list unknown (`k.zram_algorithms` empty: no device could
///   be read, e.g. not root and no device exists): every candidate stays available, and
///   `k.source` says the list is unknown; the apply script checks the attributes before
///   writing them.
/// - otherwise the primary and every secondary must be in the device's `comp_algorithm`,
///   recompression needs `recomp_algorithm` (CONFIG_ZRAM_MULTI_COMP) and a dictionary
///   `algorithm_params` (Linux 6.12 or later).
pub fn kernel_fit(p: &Policy, k: &KernelCaps) -> Result<(), Unfit> {
    if !k.zram_present {
        let reason = k.zram_can_run(&p.algo).err().map(|e| e.to_string()).unwrap_or_default();
        return Err(Unfit { reason, needs: vec!["CONFIG_ZRAM".into()] });
    }
    if k.zram_algorithms.is_empty() {
        return Ok(());
    }
    let mut reasons = Vec::new();
    let mut needs = Vec::new();
    let mut seen = Vec::new();
    for a in std::iter::once(&p.algo).chain(&p.recomp) {
        if seen.contains(&a) {
            continue;
        }
        seen.push(a);
        if let Err(why) = k.zram_can_run(a) {
            reasons.push(why.to_string());
            needs.push(
                zmem_kernel::caps::zram_backend_config(a)
                    .map_or_else(|| format!("a zram compressor named {a}"), str::to_string),
            );
        }
    }
    if (p.recompresses() || !p.recomp.is_empty())
        && let Err(why) = k.can_recompress()
    {
        reasons.push(why.to_string());
        needs.push("CONFIG_ZRAM_MULTI_COMP".into());
    }
    if p.dict && !k.zram_algorithm_params {
        reasons.push(
            "this kernel's zram has no algorithm_params attribute, so no dictionary (Linux 6.12 \
             or later)"
                .into(),
        );
        needs.push("Linux 6.12 (zram algorithm_params)".into());
    }
    if reasons.is_empty() { Ok(()) } else { Err(Unfit { reason: reasons.join("; "), needs }) }
}

/// A configuration a better-equipped kernel could run that saves more than the one chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BetterKernel {
    /// The candidate's name.
    pub config: String,
    /// The kernel options it needs, joined with " + " (e.g. `CONFIG_ZRAM_BACKEND_ZSTD`).
    pub needs: String,
    /// How much more it saves than the recommendation, bytes (projected like the candidates).
    pub extra_saved_bytes: i64,
}

/// Why the live device's kernel cannot run `p`, if it cannot: an algorithm its `comp_algorithm`
/// does not offer, or recompression where it has none (CONFIG_ZRAM_MULTI_COMP off). Applies when
/// the pages (and so the device) come from a capture whose kernel may not be this one.
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

/// Projects every policy row, applies the rule, and says why. Returns the candidates (in the
/// rows' order) and the recommendation. `kernel`: what the kernel the configuration is for can
/// run ([`kernel_fit`]); `None`: not checked (every candidate available). The recommendation is
/// one the kernel runs whenever it runs any; when it runs none (no zram), the rule picks among
/// all and the recommendation says it is unavailable, and why.
pub fn recommend(
    rows: &[PolicyRow],
    now: Option<&Now>,
    kernel: Option<&KernelCaps>,
    rates: &Rates,
    budgets: &Budgets,
) -> Result<(Vec<Candidate>, Recommendation), LabError> {
    recommend_for(rows, now, kernel, rates, budgets, None)
}

/// The whole input the measured pages are a random sample of: without a live device the
/// candidates are projected onto all of it, not onto the pages measured, so the
/// recommendation's figures and the sample's estimates are on one basis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Population {
    pub pages: u64,
    /// The sample's estimate of the current configuration's pool for every page
    /// ([`crate::sample::estimate`]): the other candidates are projected as ratios to it.
    pub current_pool: u64,
}

/// [`recommend`], projecting onto `population` where there is no live device.
pub fn recommend_for(
    rows: &[PolicyRow],
    now: Option<&Now>,
    kernel: Option<&KernelCaps>,
    rates: &Rates,
    budgets: &Budgets,
    population: Option<Population>,
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
    let population = population.filter(|_| now.is_none());
    let proj = Projection {
        pages: now
            .map(|n| n.stored_pages)
            .or(population.map(|p| p.pages))
            .unwrap_or(measured_pages)
            .max(1),
        live_bytes,
        current_pool: now
            .and_then(|n| {
                n.fields.iter().find(|f| f.field == "mem_used_total").map(|f| f.predicted)
            })
            .or(population.map(|p| p.current_pool)),
    };
    let traffic = Traffic {
        swap_ins_per_sec: rates.swap_ins_per_sec,
        swap_outs_per_sec: rates.swap_outs_per_sec,
    };
    let mut cands = cost::project(&measured, proj, traffic, budgets);
    // What every candidate would do on a kernel that runs them all.
    let unrestricted = cands.clone();
    let mut needs: Vec<Vec<String>> = vec![Vec::new(); cands.len()];
    for (i, (c, r)) in cands.iter_mut().zip(rows).enumerate() {
        let why = match kernel.map(|k| kernel_fit(&r.policy, k)) {
            Some(Err(unfit)) => {
                needs[i] = unfit.needs;
                Some(unfit.reason)
            }
            _ => now.and_then(|n| unavailable(&r.policy, &n.config)),
        };
        if let Some(why) = why {
            // Kept among the reasons it is not within the budgets too, as before.
            c.available = false;
            c.within_budgets = false;
            c.over_budget.push(why.clone());
            c.unavailable_reason = Some(why);
        }
    }
    let (choice, runs) = match cost::choose(&cands) {
        Some(ch) => (ch, true),
        None => (cost::choose(&unrestricted).ok_or(LabError::NothingVerified)?, false),
    };
    let chosen_saved = cands[choice.index].memory_saved_bytes_vs_now;
    // Unavailable candidates that would fit the budgets and save more, best per kernel option.
    let mut better_kernel: Vec<BetterKernel> = Vec::new();
    for (i, c) in cands.iter().enumerate() {
        let u = &unrestricted[i];
        if c.available || !u.within_budgets || needs[i].is_empty() || !runs {
            continue;
        }
        let extra = u.memory_saved_bytes_vs_now - chosen_saved;
        if extra <= 0 {
            continue;
        }
        let need = needs[i].join(" + ");
        match better_kernel.iter_mut().find(|b| b.needs == need) {
            Some(b) if b.extra_saved_bytes >= extra => {}
            Some(b) => {
                *b = BetterKernel { config: c.name.clone(), needs: need, extra_saved_bytes: extra }
            }
            None => better_kernel.push(BetterKernel {
                config: c.name.clone(),
                needs: need,
                extra_saved_bytes: extra,
            }),
        }
    }
    better_kernel.sort_by_key(|b| std::cmp::Reverse(b.extra_saved_bytes));
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
        None if population.is_some() => format!(
            "no live device: the kernel default {now_algo} holding the {} pages of the input \
             (estimated from the sample)",
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
            // On the projection's basis (every page of the device or the input), as every
            // other figure of the recommendation and the sample's estimates.
            expected_ratio: if c.pool_bytes > 0 {
                (proj.pages * r.orig_bytes / r.pages.max(1)) as f64 / c.pool_bytes as f64
            } else {
                r.effective_ratio
            },
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
            available: c.available,
            unavailable_reason: c.unavailable_reason.clone(),
            better_kernel,
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
            // 1 us more CPU per page than lzo-rle: its reclaim batch adds 32 us to the p99.
            row("zstd", "zstd", 260_000, 6_000.0, 1800, true),
            // 100 x 120 us + 100 x 30 us = 15 ms/s: 1.5 % of a core.
            row("deflate", "deflate", 300_000, 120_000.0, 1500, true),
            row("broken", "lz4hc", 400_000, 1.0, 100, false),
        ];
        let (c, r) = recommend(&rows, None, None, &rates(), &Budgets::default()).unwrap();
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
        let (_, r) = recommend(&rows, None, None, &rates(), &b).unwrap();
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
            disksize_bytes: 1 << 30,
            swap_priority: Some(100),
            offered: vec!["lzo-rle".into(), "lzo".into(), "lz4".into()],
            ..Default::default()
        };
        let now = Now { config: live, exact: true, stored_pages: 100, ..Default::default() };
        let (c, r) = recommend(&rows, Some(&now), None, &rates(), &Budgets::default()).unwrap();
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
        assert!(recommend(&rows, None, None, &rates(), &Budgets::default()).is_err());
    }

    /// This machine in issue 29: zram offers lzo-rle, lzo and lz4, no recompression, and no
    /// zram swap is active (no "Now"). zstd and recompression save more but the kernel cannot
    /// run them: they are unavailable with the kernel option they need, never recommended, and
    /// what they would add is `better_kernel`.
    fn small_kernel() -> KernelCaps {
        KernelCaps {
            release: "6.18.0".into(),
            zram_present: true,
            zram_algorithms: vec!["lzo-rle".into(), "lzo".into(), "lz4".into()],
            source: "test".into(),
            ..KernelCaps::default()
        }
    }

    fn issue_rows() -> Vec<PolicyRow> {
        let mut idle = row("lzo-rle + zstd(idle)", "lzo-rle", 280_000, 5000.0, 1000, true);
        idle.policy.recomp = vec!["zstd".into()];
        idle.policy.mark_idle = true;
        idle.policy.recompress = Some("type=idle".into());
        let mut huge = row("lzo-rle + lz4(huge)", "lzo-rle", 205_000, 5000.0, 1000, true);
        huge.policy.recomp = vec!["lz4".into()];
        huge.policy.recompress = Some("type=huge".into());
        vec![
            row("lzo-rle", "lzo-rle", 200_000, 5000.0, 1000, true),
            row("lz4", "lz4", 190_000, 3000.0, 1000, true),
            row("zstd", "zstd", 260_000, 6000.0, 1000, true),
            idle,
            huge,
        ]
    }

    #[test]
    fn without_a_live_device_the_kernel_still_decides_what_is_available() {
        let rows = issue_rows();
        let k = small_kernel();
        let (c, r) = recommend(&rows, None, Some(&k), &rates(), &Budgets::default()).unwrap();
        assert_eq!(r.config, "lzo-rle", "{r:?}");
        assert!(r.available && r.unavailable_reason.is_none());
        let by = |n: &str| c.iter().find(|x| x.name == n).unwrap();
        assert!(by("lzo-rle").available && by("lz4").available);
        assert!(by("lzo-rle").unavailable_reason.is_none());
        let zstd = by("zstd");
        assert!(!zstd.available && !zstd.within_budgets);
        let why = zstd.unavailable_reason.as_deref().unwrap();
        assert!(why.contains("CONFIG_ZRAM_BACKEND_ZSTD") && why.contains("lzo-rle, lzo, lz4"));
        assert!(zstd.over_budget.iter().any(|w| w == why), "{zstd:?}");
        // lz4 is offered, but recompression is not.
        let huge = by("lzo-rle + lz4(huge)");
        assert!(!huge.available);
        assert!(huge.unavailable_reason.as_deref().unwrap().contains("CONFIG_ZRAM_MULTI_COMP"));
        assert_eq!(
            r.better_kernel,
            [
                BetterKernel {
                    config: "lzo-rle + zstd(idle)".into(),
                    needs: "CONFIG_ZRAM_BACKEND_ZSTD + CONFIG_ZRAM_MULTI_COMP".into(),
                    extra_saved_bytes: 80_000,
                },
                BetterKernel {
                    config: "zstd".into(),
                    needs: "CONFIG_ZRAM_BACKEND_ZSTD".into(),
                    extra_saved_bytes: 60_000,
                },
                BetterKernel {
                    config: "lzo-rle + lz4(huge)".into(),
                    needs: "CONFIG_ZRAM_MULTI_COMP".into(),
                    extra_saved_bytes: 5_000,
                },
            ]
        );
        // A kernel with everything runs zstd's idle recompression, and nothing is missing.
        let full = KernelCaps {
            zram_algorithms: vec!["lzo-rle".into(), "lz4".into(), "zstd".into()],
            zram_recompress: true,
            ..small_kernel()
        };
        let (_, r) = recommend(&rows, None, Some(&full), &rates(), &Budgets::default()).unwrap();
        assert_eq!(r.config, "lzo-rle + zstd(idle)");
        assert!(r.better_kernel.is_empty());
    }

    /// The rule for a partly known kernel (kernel_fit's doc): no zram, nothing runs; zram with
    /// an unknown compressor list, everything stays available.
    #[test]
    fn no_zram_runs_nothing_and_an_unknown_list_keeps_every_candidate() {
        let rows = issue_rows();
        let none = KernelCaps { source: "zram absent".into(), ..KernelCaps::default() };
        let (c, r) = recommend(&rows, None, Some(&none), &rates(), &Budgets::default()).unwrap();
        assert!(c.iter().all(|x| !x.available));
        assert!(c[0].unavailable_reason.as_deref().unwrap().contains("no zram"));
        assert!(!r.available);
        assert!(r.unavailable_reason.as_deref().unwrap().contains("no zram"));
        assert!(r.better_kernel.is_empty());
        let unknown = KernelCaps { zram_present: true, ..none };
        let (c, r) = recommend(&rows, None, Some(&unknown), &rates(), &Budgets::default()).unwrap();
        assert!(c.iter().all(|x| x.available && x.unavailable_reason.is_none()));
        assert!(r.available);
        assert_eq!(r.config, "lzo-rle + zstd(idle)");
        // A dictionary needs algorithm_params, where the list is known.
        let mut d = Policy::single("lz4");
        d.dict = true;
        let unfit = kernel_fit(&d, &small_kernel()).unwrap_err();
        assert!(unfit.reason.contains("algorithm_params"), "{unfit:?}");
    }
}

//! What this kernel can run, and the zram candidates: every measured policy projected onto the
//! user's device by the cost model ([`crate::cost`]) and marked unavailable where the kernel the
//! advice is for cannot run it ([`kernel_fit`]). "Now" for zram's `added_*` figures is the live
//! device's configuration (its primary algorithm, no recompression) when there is a live
//! device, else the kernel's default (lzo-rle). Which candidate to run is the judge's.

use serde::{Deserialize, Serialize};

use crate::LabError;
use crate::candidate::Candidate;
use crate::cost::{self, Budgets, Measured, Projection, SwapOverhead, Traffic};
use crate::now::{Now, Rates};
use crate::policy::{Policy, PolicyRow};
use zmem_kernel::caps::KernelCaps;

/// Why a measurement is too uncertain to act on, as data.
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

/// Whether `r` is the configuration named by `algo` alone (no secondary, no dictionary).
fn is_plain(r: &PolicyRow, algo: &str) -> bool {
    r.policy.algo == algo && r.policy.recomp.is_empty() && !r.policy.dict
}

/// A plain configuration's pool for every page of the population, from the sample's estimate
/// of its algorithm ([`Population::estimates`]); none with a live device (its Now projects) or
/// for other configurations.
fn estimated_pool(r: &PolicyRow, now: Option<&Now>, p: Option<Population<'_>>) -> Option<u64> {
    let e = p.filter(|_| now.is_none())?.estimates?;
    let row = e.row(&r.policy.algo).filter(|_| is_plain(r, &r.policy.algo))?;
    Some(row.pool_bytes.estimate.round().max(0.0) as u64)
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

/// The whole input the measured pages are a random sample of: without a live device the
/// candidates are projected onto all of it, not onto the pages measured, so the candidates'
/// figures and the sample's estimates are on one basis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Population<'a> {
    pub pages: u64,
    /// The sample's estimate of the current configuration's pool for every page
    /// ([`crate::sample::estimate`]), where it measured that configuration: the candidates
    /// without an estimate of their own are projected as ratios to it (else by page count).
    pub current_pool: Option<u64>,
    /// The sample's estimates, by algorithm: a plain configuration takes its own. Its device's
    /// pool on the sample, scaled, would carry that device's partly filled zspages (up to one
    /// per size class, a fixed cost) as many times over as the sample is smaller than the whole,
    /// and each algorithm's share of them differs, so no one ratio serves every algorithm (the
    /// closed form the estimates use counts them once).
    pub estimates: Option<&'a crate::sample::Estimates>,
}

/// The pages the candidates are projected onto: the live device's stored pages, else the
/// sample's population, else the `measured` pages.
pub fn projected_pages(
    now: Option<&Now>,
    population: Option<Population<'_>>,
    measured: u64,
) -> u64 {
    let population = population.filter(|_| now.is_none());
    now.map(|n| n.stored_pages).or(population.map(|p| p.pages)).unwrap_or(measured).max(1)
}

/// Projects every policy row (module doc), in the rows' order, for the live device's pages,
/// else `population`'s, else the pages measured. `kernel`: what the kernel the configuration
/// is for can run ([`kernel_fit`]); `None`: not checked (every candidate available).
pub fn zram_candidates(
    rows: &[PolicyRow],
    now: Option<&Now>,
    kernel: Option<&KernelCaps>,
    rates: &Rates,
    budgets: &Budgets,
    population: Option<Population<'_>>,
    kernel_work: SwapOverhead,
) -> Result<Vec<Candidate>, LabError> {
    if !rows.iter().any(|r| r.verified) {
        return Err(LabError::NothingVerified);
    }
    let now_algo = now.map_or(zmem_zram::DEFAULT_ALGORITHM, |n| n.config.comp_algorithm.as_str());
    let cur = rows.iter().position(|r| is_plain(r, now_algo)).unwrap_or(0);
    let measured: Vec<Measured> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| Measured {
            policy: r.policy.clone(),
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
            estimated_pool: estimated_pool(r, now, population),
        })
        .collect();
    let mm = |n: &Now, live: bool| {
        n.field("mem_used_total").map(|f| if live { f.live } else { f.predicted })
    };
    let population = population.filter(|_| now.is_none());
    let proj = Projection {
        pages: projected_pages(now, population, rows[cur].pages),
        live_bytes: now.and_then(|n| mm(n, true)),
        current_pool: now.and_then(|n| mm(n, false)).or(population.and_then(|p| p.current_pool)),
        kernel: kernel_work,
    };
    let traffic = Traffic {
        swap_ins_per_sec: rates.swap_ins_per_sec,
        swap_outs_per_sec: rates.swap_outs_per_sec,
    };
    let mut cands = cost::project(&measured, proj, traffic, budgets, now.is_some());
    for (c, r) in cands.iter_mut().zip(rows) {
        match kernel.map(|k| kernel_fit(&r.policy, k)) {
            Some(Err(unfit)) => c.unavailable(unfit.reason, unfit.needs),
            _ => {
                if let Some(why) = now.and_then(|n| unavailable(&r.policy, &n.config)) {
                    c.unavailable(why, Vec::new());
                }
            }
        }
    }
    Ok(cands)
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

    /// The zram candidates of `rows` on one basis, and the judge's decision over them (as the
    /// lab's run does without zswap).
    fn judged(
        rows: &[PolicyRow],
        now: Option<&Now>,
        kernel: Option<&KernelCaps>,
        budgets: &Budgets,
    ) -> (Vec<Candidate>, crate::decision::Decision) {
        let mut c = zram_candidates(
            rows,
            now,
            kernel,
            &rates(),
            budgets,
            None,
            crate::speed::SWAP_OVERHEAD,
        )
        .unwrap();
        let pages = projected_pages(now, None, rows[0].pages);
        let live = now.and_then(|n| n.field("mem_used_total")).map(|f| f.live);
        let basis = crate::candidate::basis(&c, live, pages, 4096);
        crate::candidate::on_basis(&mut c, &basis, None, "lzo-rle");
        let ctx = crate::decision::Context {
            basis: &basis,
            estimates: None,
            too_few_pages: None,
            disk_swap: None,
            zswap_swap_bytes: 0,
            zram_swap_bytes: 0,
            operating: None,
            mem_total_bytes: None,
        };
        let d = crate::decision::decide(&c, &ctx);
        (c, d)
    }

    #[test]
    fn most_memory_within_the_budgets_wins_and_the_default_is_the_reference() {
        let rows = [
            row("lz4", "lz4", 150_000, 3000.0, 1000, true),
            row("lzo-rle", "lzo-rle", 200_000, 5000.0, 1000, true),
            // 1 us more CPU per page than lzo-rle: its reclaim batch adds 32 us to the p99.
            row("zstd", "zstd", 260_000, 6_000.0, 1800, true),
            // 100 x 120 us + 100 x 30 us = 15 ms/s: 1.5 % of a core.
            row("deflate", "deflate", 300_000, 120_000.0, 1500, true),
            row("broken", "lz4hc", 400_000, 1.0, 100, false),
        ];
        let (c, d) = judged(&rows, None, None, &Budgets::default());
        // The five, and "none": nothing runs, the pages are now uncompressed.
        assert_eq!(c.len(), 6);
        assert!(c[1].is_reference && !c[0].is_reference && !c[1].runs_now);
        assert_eq!((d.basis.now_config.as_str(), d.basis.now_bytes), ("none", 409_600));
        assert_eq!(d.config, "zram zstd");
        assert_eq!(d.memory_saved_bytes, 260_000);
        assert_eq!(d.kind, crate::decision::Kind::Zram);
        assert_eq!(d.runner_up.map(|i| c[i].name.as_str()), Some("zram lzo-rle"));
        assert_eq!(d.margin_bytes, 60_000);
        assert!(!c[3].within_budgets && !c[4].within_budgets);
    }

    /// Nothing that compresses fits the budgets: nothing runs, and nothing is set up.
    #[test]
    fn nothing_fits_keeps_what_runs() {
        let rows = [
            row("lzo-rle", "lzo-rle", 200_000, 5000.0, 1000, true),
            row("zstd", "zstd", 260_000, 20_000.0, 1800, true),
        ];
        let b = Budgets { cpu_percent_of_core: 0.001, ..Budgets::default() };
        let (c, d) = judged(&rows, None, None, &b);
        assert!(c[..2].iter().all(|x| !x.within_budgets));
        assert_eq!((d.kind, d.config.as_str()), (crate::decision::Kind::Keep, "none"));
        assert_eq!(d.reason, crate::decision::Reason::NothingFits);
    }

    /// A live kernel that offers only lzo-rle, lzo and lz4 and has no recompression: zstd
    /// saves more but cannot be applied there, so lzo's saving wins among what can.
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
        let (c, d) = judged(&rows, Some(&now), None, &Budgets::default());
        assert_eq!(d.config, "zram lzo");
        assert_eq!(d.basis.now_config, "zram lzo-rle");
        assert!(c[0].runs_now && c.len() == 3, "a live device runs: no \"none\"");
        assert!(!c[2].available && !c[2].within_budgets);
        assert!(c[2].unavailable_reason.as_deref().unwrap().contains("offers no zstd"));
        assert_eq!(c[2].over_budget[0], crate::candidate::OverBudget::Unavailable);
        let mut p = rows[0].policy.clone();
        p.recomp = vec!["lzo".into()];
        p.recompress = Some("type=huge".into());
        let why = unavailable(&p, &now.config).unwrap();
        assert!(why.contains("no recompression"), "{why}");
    }

    #[test]
    fn nothing_verified_is_an_error() {
        let rows = [row("x", "lz4", 1, 1.0, 1, false)];
        let r = zram_candidates(
            &rows,
            None,
            None,
            &rates(),
            &Budgets::default(),
            None,
            crate::speed::SWAP_OVERHEAD,
        );
        assert!(r.is_err());
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
        use crate::decision::BetterKernel;
        let rows = issue_rows();
        let k = small_kernel();
        let (c, d) = judged(&rows, None, Some(&k), &Budgets::default());
        assert_eq!(d.config, "zram lzo-rle", "{d:?}");
        let by = |n: &str| c.iter().find(|x| x.name == format!("zram {n}")).unwrap();
        assert!(by("lzo-rle").available && by("lz4").available);
        assert!(by("lzo-rle").unavailable_reason.is_none());
        let zstd = by("zstd");
        assert!(!zstd.available && !zstd.within_budgets);
        let why = zstd.unavailable_reason.as_deref().unwrap();
        assert!(why.contains("CONFIG_ZRAM_BACKEND_ZSTD") && why.contains("lzo-rle, lzo, lz4"));
        // lz4 is offered, but recompression is not.
        let huge = by("lzo-rle + lz4(huge)");
        assert!(!huge.available);
        assert!(huge.unavailable_reason.as_deref().unwrap().contains("CONFIG_ZRAM_MULTI_COMP"));
        assert_eq!(
            d.better_kernel,
            [
                BetterKernel {
                    config: "zram lzo-rle + zstd(idle)".into(),
                    needs: "CONFIG_ZRAM_BACKEND_ZSTD + CONFIG_ZRAM_MULTI_COMP".into(),
                    extra_saved_bytes: 80_000,
                },
                BetterKernel {
                    config: "zram zstd".into(),
                    needs: "CONFIG_ZRAM_BACKEND_ZSTD".into(),
                    extra_saved_bytes: 60_000,
                },
                BetterKernel {
                    config: "zram lzo-rle + lz4(huge)".into(),
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
        let (_, d) = judged(&rows, None, Some(&full), &Budgets::default());
        assert_eq!(d.config, "zram lzo-rle + zstd(idle)");
        assert!(d.better_kernel.is_empty());
    }

    /// The rule for a partly known kernel (kernel_fit's doc): no zram, nothing runs; zram with
    /// an unknown compressor list, everything stays available.
    #[test]
    fn no_zram_runs_nothing_and_an_unknown_list_keeps_every_candidate() {
        let rows = issue_rows();
        let none = KernelCaps { source: "zram absent".into(), ..KernelCaps::default() };
        let (c, d) = judged(&rows, None, Some(&none), &Budgets::default());
        assert!(c.iter().filter(|x| x.config != crate::Config::None).all(|x| !x.available));
        assert!(c[0].unavailable_reason.as_deref().unwrap().contains("no zram"));
        assert_eq!(d.kind, crate::decision::Kind::None);
        assert_eq!(d.reason, crate::decision::Reason::NothingRuns);
        let unknown = KernelCaps { zram_present: true, ..none };
        let (c, d) = judged(&rows, None, Some(&unknown), &Budgets::default());
        assert!(c.iter().all(|x| x.available && x.unavailable_reason.is_none()));
        assert_eq!(d.config, "zram lzo-rle + zstd(idle)");
        // A dictionary needs algorithm_params, where the list is known.
        let mut d = Policy::single("lz4");
        d.dict = true;
        let unfit = kernel_fit(&d, &small_kernel()).unwrap_err();
        assert!(unfit.reason.contains("algorithm_params"), "{unfit:?}");
    }
}

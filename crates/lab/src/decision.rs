//! The one answer: what this machine should run, judged once over every candidate, zram and
//! zswap alike, with one budget check (each candidate's `within_budgets`, made by the cost
//! model) and one rule. Data only: the chosen candidate by identity ([`Pick`]), the numbers on
//! one basis, and why; zmem-render writes the words and the scripts.
//!
//! **Basis.** Every saving is against now, for the pages the projection is for (the live
//! device's stored pages, else every page of the input: the sample's population): `now_bytes`
//! is what those pages take in RAM today: the live zram device's `mem_used_total`; else the
//! pool of the zswap configuration that runs now; else, with no compressed swap running, the
//! pages themselves, uncompressed. A candidate saves `now_bytes - pool`.
//!
//! **Uncertainty.** A saving's 95 % interval is its pool's: the sample's interval for the
//! candidate's compressor ([`crate::sample`]) carried to the candidate's projected pool (0
//! when every page was measured). Two candidates are **equal** when the difference of their
//! savings lies within the difference's interval (the paired interval where both are plain
//! zram algorithms estimated on the same pages, else the two intervals' half-widths added in
//! quadrature), or is smaller than [`MIN_CHANGE`] of `now_bytes`: a change that saves less is
//! not worth a swapoff and a reset, and the pages themselves move by more than that between two
//! runs minutes apart. That threshold is zmem's judgement, not a kernel rule.
//!
//! **The rule.** Among candidates the kernel runs and that fit the budgets, take the one
//! saving the most memory; every candidate equal to it is a contender, and among contenders the
//! tie rule picks ([`TieBreak`]): clearly less CPU (by more than [`crate::cost::CPU_NOISE`]),
//! then the simpler setup ([`setup_rank`]), then what runs now, then the kernel's order of
//! compressors. If the pick is what runs now, the answer is **keep**. With nothing within the
//! budgets: keep what runs (if something does), else the zram fallback of [`crate::cost`].
//! Too few pages to advise on: no answer (`none`).

use serde::{Deserialize, Serialize};

use crate::cost::{CPU_NOISE, Candidate};
use crate::policy::PolicyRow;
use crate::sample::Estimates;
use crate::zswap::{SwapAreaNow, ZswapCandidate};
use crate::{Recommendation, UncertainReason};

/// Savings closer than this fraction of `now_bytes` are equal (module doc).
pub const MIN_CHANGE: f64 = 0.01;

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A zram swap device with this configuration (zswap off).
    Zram,
    /// zswap with this configuration in front of a disk swap (no zram swap).
    Zswap,
    /// What runs now: nothing beats it beyond the uncertainty.
    Keep,
    /// No answer: the input is too small, or the kernel runs no candidate.
    None,
}

/// A candidate by identity: its index in the report's `candidates` (zram) or in
/// `zswap.candidates`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "index")]
pub enum Pick {
    Zram(usize),
    Zswap(usize),
}

/// Which step of the tie rule decided between equal candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TieBreak {
    LessCpu,
    Simpler,
    RunsNow,
    KernelOrder,
}

/// Why the decision is what it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Reason {
    /// The most memory saved within the budgets, beyond the uncertainty.
    SavesMost,
    /// Equal to others within the uncertainty; the tie rule picked.
    Tie { by: TieBreak },
    /// Nothing within the budgets: what runs now is kept.
    NothingFits,
    /// Nothing within the budgets and nothing runs: the cheapest zram configuration that keeps
    /// the memory (the cost model's fallback).
    NothingFitsFallback,
    /// The input is too small to advise on.
    TooFewPages { measured_pages: u64, min_pages: u64 },
    /// The kernel runs no candidate (no zram, no zswap).
    NothingRuns,
}

/// One candidate in the decision's terms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Contender {
    pub pick: Pick,
    /// `zram lzo-rle`, `zswap lz4 max_pool_percent=20 shrinker=off`, ...
    pub config: String,
    pub memory_saved_bytes: i64,
    /// 95 % interval of `memory_saved_bytes` ([low, high]).
    pub memory_saved_ci: [i64; 2],
    pub cpu_seconds_per_second: f64,
    /// A swap-in end to end where memory is full: the read and decompression measured, the
    /// kernel's fault path, and at the p99 the reclaim in the fault
    /// ([`crate::cost::swap_in_end_to_end`]).
    pub swap_in_p50_ns: u64,
    pub swap_in_p99_ns: u64,
    pub within_budgets: bool,
    pub runs_now: bool,
}

/// The swap device zswap needs behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwapBehind {
    /// An active disk swap area to keep (`/proc/swaps`), if there is one.
    pub existing: Option<String>,
    /// Bytes it must hold: every page zswap stores keeps its slot there, and at least the
    /// size of the zram swap devices it replaces.
    pub size_bytes: u64,
    /// The swap file to make where there is no disk swap (none when `existing`).
    pub new_file: Option<String>,
}

/// The machine's answer (JSON `decision`, with `apply_script` and `undo_script` rendered in).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub kind: Kind,
    /// What runs after it: the chosen candidate's configuration (for keep, what runs now).
    pub config: String,
    pub chosen: Option<Contender>,
    /// Against now (0 for keep), with its 95 % interval.
    pub memory_saved_bytes: i64,
    pub memory_saved_ci: [i64; 2],
    pub cpu_seconds_per_second: f64,
    pub swap_in_p99_ns: u64,
    /// The runner-up is equal to the choice within the uncertainty.
    pub tie: bool,
    pub runner_up: Option<Contender>,
    /// How far the runner-up is from the choice, and the uncertainty of that difference:
    /// a near-tie tips when the difference leaves the uncertainty.
    pub margin_bytes: i64,
    pub uncertainty_bytes: i64,
    pub reason: Reason,
    /// What runs now (`zram lzo-rle`, `zswap ...`, or `none`) and what its pages take in RAM.
    pub now_config: String,
    pub now_bytes: u64,
    /// Pages every figure is for.
    pub pages: u64,
    /// For zswap: the swap device behind it.
    pub swap_behind: Option<SwapBehind>,
}

/// The work a configuration takes to set up and keep (0 simplest): a zram device with one
/// algorithm; zswap's module parameters over a disk swap that exists; a dictionary to install
/// or zswap needing a swap file made; a recompression timer.
pub fn setup_rank(o: &Contender, policies: &[PolicyRow], disk_swap: bool) -> u32 {
    match o.pick {
        Pick::Zram(i) => policies.get(i).map_or(0, |p| {
            if p.policy.recompresses() || !p.policy.recomp.is_empty() {
                3
            } else if p.policy.dict {
                2
            } else {
                0
            }
        }),
        Pick::Zswap(_) if disk_swap => 1,
        Pick::Zswap(_) => 2,
    }
}

/// The parts of a report the decision reads.
#[derive(Debug)]
pub struct Inputs<'a> {
    pub candidates: &'a [Candidate],
    pub policies: &'a [PolicyRow],
    pub recommendation: &'a Recommendation,
    /// zswap's candidates (none where the run had no zswap reading).
    pub zswap: &'a [ZswapCandidate],
    /// The active swap areas (`/proc/swaps`) and the bytes of swap zswap needs behind it.
    pub swaps: &'a [SwapAreaNow],
    pub zswap_swap_bytes: u64,
    pub estimates: Option<&'a Estimates>,
    /// A live zram swap device the pages came from (the report's `now`).
    pub live_zram: bool,
    pub page_size: usize,
}

/// The decision (module doc).
pub fn decide(x: &Inputs) -> Decision {
    let rec = x.recommendation;
    let pages = rec.projected_pages;
    let zs = x.zswap;
    let swaps = x.swaps;
    let disk = swaps.iter().find(|s| s.kind != "zram").map(|s| s.filename.clone());
    let zram_runs = |c: &Candidate| x.live_zram && c.is_current;
    // What the pages take now.
    let now_zram = x.candidates.iter().find(|c| zram_runs(c));
    let now_zswap = zs.iter().find(|c| c.is_current && c.available);
    let (now_config, now_bytes) = match (now_zram, now_zswap) {
        (Some(c), _) => (format!("zram {}", c.name), rec.now_bytes),
        (None, Some(c)) => (c.name.clone(), c.pool_bytes),
        (None, None) => ("none".to_string(), pages * x.page_size as u64),
    };
    let rel = |algo: &str| -> f64 {
        x.estimates.and_then(|e| e.row(algo)).map_or(0.0, |r| {
            let p = r.pool_bytes;
            if p.estimate > 0.0 { (p.high - p.low) / 2.0 / p.estimate } else { 0.0 }
        })
    };
    let current_algo = x
        .candidates
        .iter()
        .zip(x.policies)
        .find(|(c, _)| c.is_current)
        .map(|(_, p)| p.policy.algo.clone())
        .unwrap_or_default();
    // Compression CPU per page of each plain algorithm measured: what the reclaim a full
    // memory makes a fault do costs per page swapped out (`cost::swap_in_end_to_end`).
    let compress_ns = |algo: &str| {
        x.policies
            .iter()
            .find(|p| p.policy.algo == algo && p.policy.recomp.is_empty() && !p.policy.dict)
            .map_or(0.0, |p| p.compress_cpu_ns_per_page)
    };
    let mut options: Vec<(Contender, bool, String)> = Vec::new(); // (option, available, algo)
    for (i, (c, p)) in x.candidates.iter().zip(x.policies).enumerate() {
        let saved = now_bytes as i64 - c.pool_bytes as i64;
        let hw = (rel(&p.policy.algo) * c.pool_bytes as f64).round() as i64;
        let (p50, p99) = crate::cost::swap_in_end_to_end(
            c.load_p50_ns,
            c.load_p99_ns,
            c.compress_cpu_ns_per_page,
        );
        options.push((
            Contender {
                pick: Pick::Zram(i),
                config: format!("zram {}", c.name),
                memory_saved_bytes: saved,
                memory_saved_ci: [saved - hw, saved + hw],
                cpu_seconds_per_second: c.cpu_secs_per_sec,
                swap_in_p50_ns: p50,
                swap_in_p99_ns: p99,
                within_budgets: c.within_budgets,
                runs_now: zram_runs(c),
            },
            c.available,
            p.policy.algo.clone(),
        ));
    }
    for (i, c) in zs.iter().enumerate() {
        let saved = now_bytes as i64 - c.pool_bytes as i64;
        // Its pool is the current zram configuration's scaled by the replays' ratio: the
        // sample's uncertainty is that of the current compressor's pool.
        let r = rel(&c.compressor).max(rel(&current_algo));
        let hw = (r * c.pool_bytes as f64).round() as i64;
        // The replay's swap-in is already end to end for the device (a miss reads it).
        let (p50, p99) = crate::cost::swap_in_end_to_end(
            c.load_p50_ns,
            c.load_p99_ns,
            compress_ns(&c.compressor),
        );
        options.push((
            Contender {
                pick: Pick::Zswap(i),
                config: c.name.clone(),
                memory_saved_bytes: saved,
                memory_saved_ci: [saved - hw, saved + hw],
                cpu_seconds_per_second: c.cpu_secs_per_sec,
                swap_in_p50_ns: p50,
                swap_in_p99_ns: p99,
                within_budgets: c.within_budgets,
                runs_now: c.is_current,
            },
            c.available,
            c.compressor.clone(),
        ));
    }
    let floor = (MIN_CHANGE * now_bytes as f64).round() as i64;
    // Half-width of the difference of two options' savings.
    let band = |a: &(Contender, bool, String), b: &(Contender, bool, String)| -> i64 {
        let plain = |o: &Contender| match o.pick {
            Pick::Zram(i) => x.policies.get(i).is_some_and(|p| {
                p.policy.recomp.is_empty() && !p.policy.recompresses() && !p.policy.dict
            }),
            Pick::Zswap(_) => false,
        };
        let paired = (plain(&a.0) && plain(&b.0))
            .then(|| x.estimates.and_then(|e| e.difference(&a.2, &b.2)))
            .flatten()
            .map(|d| {
                // Scaled from the estimate's pages to the projection's.
                let scale = x.estimates.map_or(1.0, |e| {
                    let pop = e.design.population_pages.max(1) as f64;
                    pages as f64 / pop
                });
                ((d.high - d.low) / 2.0 * scale).round() as i64
            });
        let hw = |o: &Contender| (o.memory_saved_ci[1] - o.memory_saved_ci[0]) / 2;
        let rss = (((hw(&a.0) as f64).powi(2) + (hw(&b.0) as f64).powi(2)).sqrt()).round() as i64;
        paired.unwrap_or(rss).max(floor)
    };
    let base = Decision {
        kind: Kind::None,
        config: "none".into(),
        chosen: None,
        memory_saved_bytes: 0,
        memory_saved_ci: [0, 0],
        cpu_seconds_per_second: 0.0,
        swap_in_p99_ns: 0,
        tie: false,
        runner_up: None,
        margin_bytes: 0,
        uncertainty_bytes: 0,
        reason: Reason::NothingRuns,
        now_config: now_config.clone(),
        now_bytes,
        pages,
        swap_behind: None,
    };
    if let Some(UncertainReason::TooFewPages { measured_pages, min_pages }) = rec.uncertain_reason {
        return Decision { reason: Reason::TooFewPages { measured_pages, min_pages }, ..base };
    }
    let rank = |i: usize| setup_rank(&options[i].0, x.policies, disk.is_some());
    let order = |i: usize| -> usize {
        let algo = &options[i].2;
        let k = zmem_comp::algorithms().iter().position(|a| a.name == *algo).unwrap_or(usize::MAX);
        // zram before zswap, then the kernel's order of compressors, then the grid's order.
        (matches!(options[i].0.pick, Pick::Zswap(_)) as usize) << 40 | k.min(1 << 20) << 20 | i
    };
    let entries: Vec<Entry> = options
        .iter()
        .enumerate()
        .map(|(i, (o, available, _))| Entry {
            saved: o.memory_saved_bytes,
            cpu: o.cpu_seconds_per_second,
            eligible: *available && o.within_budgets,
            // The cost model's fallback is among zram's configurations that read every page
            // back and that the kernel runs.
            fallback: *available && i < x.candidates.len() && x.candidates[i].verified,
            runs_now: o.runs_now,
            rank: rank(i),
            order: order(i),
        })
        .collect();
    let current = x.candidates.iter().position(|c| c.is_current);
    let Some((chosen, outcome, contenders)) =
        rule(&entries, |i, j| band(&options[i], &options[j]), current)
    else {
        return base;
    };
    let reason = match outcome {
        Outcome::SavesMost => Reason::SavesMost,
        Outcome::Tie(by) => Reason::Tie { by },
        Outcome::NothingFits => Reason::NothingFits,
        Outcome::Fallback => Reason::NothingFitsFallback,
    };
    let eligible: Vec<usize> = (0..entries.len()).filter(|&i| entries[i].eligible).collect();
    let (o, _, _) = &options[chosen];
    let keep = o.runs_now;
    // The runner-up: the best other eligible option by saving (else the best other available).
    let runner = eligible.iter().copied().filter(|&i| i != chosen).max_by(|&a, &b| {
        options[a]
            .0
            .memory_saved_bytes
            .cmp(&options[b].0.memory_saved_bytes)
            .then(order(b).cmp(&order(a)))
    });
    let (margin, uncertainty, tie) = match runner {
        Some(r) => {
            let m = o.memory_saved_bytes - options[r].0.memory_saved_bytes;
            let u = band(&options[chosen], &options[r]);
            (m, u, contenders.contains(&r) || m.abs() <= u)
        }
        None => (0, 0, false),
    };
    // The swap device must hold every page zswap stores (each keeps its slot there) and every
    // page the zram swap devices it replaces held room for.
    let zram_swap_bytes: u64 =
        swaps.iter().filter(|s| s.kind == "zram").map(|s| s.size_bytes).sum();
    let swap_behind = matches!(o.pick, Pick::Zswap(_)).then(|| SwapBehind {
        existing: disk.clone(),
        size_bytes: x.zswap_swap_bytes.max(zram_swap_bytes),
        new_file: disk.is_none().then(|| SWAP_FILE.to_string()),
    });
    let (saved, ci) = if keep { (0, [0, 0]) } else { (o.memory_saved_bytes, o.memory_saved_ci) };
    Decision {
        kind: if keep {
            Kind::Keep
        } else if matches!(o.pick, Pick::Zram(_)) {
            Kind::Zram
        } else {
            Kind::Zswap
        },
        config: o.config.clone(),
        chosen: Some(o.clone()),
        memory_saved_bytes: saved,
        memory_saved_ci: ci,
        cpu_seconds_per_second: o.cpu_seconds_per_second,
        swap_in_p99_ns: o.swap_in_p99_ns,
        tie,
        runner_up: runner.map(|r| options[r].0.clone()),
        margin_bytes: margin,
        uncertainty_bytes: uncertainty,
        reason,
        swap_behind,
        ..base
    }
}

/// Where the apply script makes zswap's swap file when the machine has no disk swap.
pub const SWAP_FILE: &str = "/var/lib/zmem/swapfile";

/// One candidate as [`rule`] sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Entry {
    /// Memory saved against now, bytes.
    pub saved: i64,
    pub cpu: f64,
    /// The kernel runs it and it is within the budgets.
    pub eligible: bool,
    /// It may be the fallback when nothing is within the budgets (the kernel runs it and it
    /// reads every page back).
    pub fallback: bool,
    pub runs_now: bool,
    /// [`setup_rank`]: smaller is simpler.
    pub rank: u32,
    /// The fixed order that decides last: smaller first.
    pub order: usize,
}

/// How [`rule`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    SavesMost,
    Tie(TieBreak),
    /// Nothing within the budgets; what runs now is kept.
    NothingFits,
    /// Nothing within the budgets and nothing runs: the cost model's fallback, with the tie
    /// rule.
    Fallback,
}

/// The rule of the module doc over `entries`, `band(i, j)` the half-width of the difference of
/// `i`'s and `j`'s savings within which they are equal, `current` the entry the cost model
/// takes as now (the fallback keeps at least its saving). Returns the chosen entry, how, and
/// the entries it was chosen among; none when nothing may be chosen. The lab's decision and
/// `zmem exporter --advise` both judge with it.
pub fn rule(
    entries: &[Entry],
    band: impl Fn(usize, usize) -> i64,
    current: Option<usize>,
) -> Option<(usize, Outcome, Vec<usize>)> {
    let eligible: Vec<usize> = (0..entries.len()).filter(|&i| entries[i].eligible).collect();
    let best = eligible.iter().copied().max_by(|&a, &b| {
        entries[a].saved.cmp(&entries[b].saved).then(entries[b].order.cmp(&entries[a].order))
    });
    if let Some(best) = best {
        let tied: Vec<usize> = eligible
            .iter()
            .copied()
            .filter(|&i| {
                i == best || (entries[best].saved - entries[i].saved).abs() <= band(best, i)
            })
            .collect();
        if tied.len() == 1 {
            return Some((best, Outcome::SavesMost, tied));
        }
        let (pick, by) = tie_break(&tied, entries);
        return Some((pick, Outcome::Tie(by), tied));
    }
    if let Some(r) = entries.iter().position(|e| e.runs_now) {
        return Some((r, Outcome::NothingFits, vec![r]));
    }
    // The cost model's fallback with the tie rule: among those saving at least as much as the
    // current one (within the uncertainty), clearly less CPU, then the simpler, then a fixed
    // order, so CPU noise does not flip it between runs.
    let set: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].fallback)
        .filter(|&i| current.is_none_or(|c| entries[i].saved >= entries[c].saved - band(i, c)))
        .collect();
    if set.is_empty() {
        return None;
    }
    let (pick, _) = tie_break(&set, entries);
    Some((pick, Outcome::Fallback, set))
}

/// The tie rule over equal entries (module doc).
fn tie_break(tied: &[usize], entries: &[Entry]) -> (usize, TieBreak) {
    let cpu = |i: usize| entries[i].cpu;
    let least = tied.iter().copied().min_by(|&a, &b| cpu(a).total_cmp(&cpu(b))).unwrap_or(tied[0]);
    // Clearly less CPU than every other contender.
    let clearly = tied
        .iter()
        .all(|&i| i == least || cpu(i) - cpu(least) > CPU_NOISE * cpu(i).max(cpu(least)));
    if clearly {
        return (least, TieBreak::LessCpu);
    }
    // Those within the noise of the least CPU go on.
    let near: Vec<usize> = tied
        .iter()
        .copied()
        .filter(|&i| cpu(i) - cpu(least) <= CPU_NOISE * cpu(i).max(cpu(least)))
        .collect();
    let simplest = near.iter().map(|&i| entries[i].rank).min().unwrap_or(0);
    let simple: Vec<usize> =
        near.iter().copied().filter(|&i| entries[i].rank == simplest).collect();
    if simple.len() == 1 {
        return (simple[0], TieBreak::Simpler);
    }
    if let Some(&r) = simple.iter().find(|&&i| entries[i].runs_now) {
        return (r, TieBreak::RunsNow);
    }
    let first = simple.iter().copied().min_by_key(|&i| entries[i].order).unwrap_or(simple[0]);
    (first, TieBreak::KernelOrder)
}

#[cfg(test)]
mod tests;

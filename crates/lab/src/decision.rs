//! The one judge: what this machine should run, decided once over every [`Candidate`] (zram,
//! zswap and "none" alike) on one [`Basis`], with the candidates' one budget check and one
//! rule. [`decide`] is the only code that ranks candidates or breaks ties: the lab's report,
//! `zmem exporter --advise` and `zmem-fleet` (which reads the report's decision) all take its
//! answer. Data only: the chosen candidate by its index, the numbers on one basis, and why;
//! zmem-render writes the words and the scripts.
//!
//! **Equal.** Two candidates are equal when the difference of their savings lies within the
//! difference's interval (the paired interval where both are plain zram algorithms estimated
//! on the same pages, else the two intervals' half-widths added in quadrature), or is smaller
//! than [`MIN_CHANGE`] of `now_bytes`: a change that saves less is not worth a swapoff and a
//! reset, and the pages themselves move by more than that between two runs minutes apart.
//! That threshold is zmem's judgement, not a kernel rule.
//!
//! **The rule.** Among candidates the kernel runs and that fit the budgets, take the one
//! saving the most memory; every candidate equal to it is a contender, and among contenders the
//! tie rule picks ([`TieBreak`]): clearly less CPU (by more than [`crate::cost::CPU_NOISE`]),
//! then the simpler setup ([`Config::setup_rank`]), then what runs now, then the kernel's order
//! of compressors (zram before zswap). If the pick is what runs now, the answer is **keep**.
//! With nothing within the budgets, what runs is kept ("none" is a candidate where nothing
//! runs, and always within them). Too few pages to advise on: no answer (`none`).
//!
//! **A new axis** of the decision (an operating point, a size) enters as a field of
//! [`Candidate`] filled by the engine that projects it, and, if it ranks, as a step here.

use serde::{Deserialize, Serialize};
use zmem_kernel::reclaim::{GROUP_PAGES, HELD_IDLE_MAX_T, Predicted};

use crate::candidate::{Basis, Candidate, Config, OverBudget};
use crate::cost::CPU_NOISE;
use crate::operating::{self, Named, OperatingPoint, Sizing};
use crate::proactive::{MIN_AGENT_CPU_PERCENT, Proactive};
use crate::sample::Estimates;

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
    /// What runs now: nothing beats it beyond the uncertainty (or nothing fits the budgets).
    Keep,
    /// No answer: the input is too small, or the kernel runs no candidate.
    None,
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
    /// The input is too small to advise on.
    TooFewPages { measured_pages: u64, min_pages: u64 },
    /// The kernel runs no candidate (no zram, no zswap).
    NothingRuns,
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

/// A candidate this kernel cannot run that would fit the budgets and save more than the
/// choice: the best per kernel option, most saving first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BetterKernel {
    pub config: String,
    /// Kernel options (or versions) it needs, joined by ` + `.
    pub needs: String,
    /// Bytes it would save beyond the choice.
    pub extra_saved_bytes: i64,
}

/// What the judge needs besides the candidates.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub basis: &'a Basis,
    /// The sample's estimates, for the paired interval of two plain zram algorithms.
    pub estimates: Option<&'a Estimates>,
    /// Fewer pages measured than the lab needs: (measured, needed).
    pub too_few_pages: Option<(u64, u64)>,
    /// An active disk swap area (`/proc/swaps`), if there is one.
    pub disk_swap: Option<&'a str>,
    /// Bytes of swap zswap needs behind it where nothing is known to move out: every page of
    /// the basis, and at least what the zram swap devices it replaces held room for.
    pub zswap_swap_bytes: u64,
    /// What those zram swap devices held room for (a sized swap area is never smaller).
    pub zram_swap_bytes: u64,
    /// Where the headline saving is figured ([`crate::operating`]); none: every page of the
    /// basis swapped (a caller with no operating point, e.g. the exporter's what-if).
    pub operating: Option<&'a OperatingPoint>,
    /// MemTotal, where known: zswap's max_pool_percent is a share of it.
    pub mem_total_bytes: Option<u64>,
}

/// The machine's answer (JSON `decision`, with `apply_script` and `undo_script` rendered in).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub kind: Kind,
    /// What runs after it: the chosen candidate's name (for keep, what runs now).
    pub config: String,
    /// The chosen candidate: its index in the report's `candidates`.
    pub chosen: Option<usize>,
    /// Against now (0 for keep), with its 95 % interval, at the operating point named in
    /// `operating_point` (every page of the basis swapped where there is none).
    pub memory_saved_bytes: i64,
    pub memory_saved_ci: [i64; 2],
    /// The chosen candidate with every page of the basis swapped: what it saves per byte
    /// moved, the figure the candidates are ranked on (0 for keep).
    #[serde(default)]
    pub all_pages_saved_bytes: i64,
    #[serde(default)]
    pub all_pages_saved_ci: [i64; 2],
    /// Where the headline is figured: today's pressure, the cold curve and T.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operating_point: Option<OperatingPoint>,
    /// The size of what it configures, from the operating point ([`crate::operating::size`]);
    /// none where nothing is known to move out (the script's default rule then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizing: Option<Sizing>,
    pub cpu_seconds_per_second: f64,
    pub swap_in_p99_ns: u64,
    /// The runner-up is equal to the choice within the uncertainty.
    pub tie: bool,
    /// The best other candidate within the budgets (else the best other available), by index.
    pub runner_up: Option<usize>,
    /// How far the runner-up is from the choice, and the uncertainty of that difference:
    /// a near-tie tips when the difference leaves the uncertainty.
    pub margin_bytes: i64,
    pub uncertainty_bytes: i64,
    pub reason: Reason,
    /// What runs now and what its pages take in RAM, and the pages every figure is for.
    #[serde(flatten)]
    pub basis: Basis,
    /// For zswap: the swap device behind it.
    pub swap_behind: Option<SwapBehind>,
    /// What a better-equipped kernel would add.
    #[serde(default)]
    pub better_kernel: Vec<BetterKernel>,
    /// The proactive reclaim that moves the memory idle for T out ([`crate::proactive`]);
    /// the headline is at the cold age with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proactive: Option<crate::proactive::Proactive>,
    /// Why there is none, where there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proactive_none: Option<String>,
}

impl Decision {
    /// The chosen candidate of `cands` (the list it was decided on).
    pub fn chosen<'a>(&self, cands: &'a [Candidate]) -> Option<&'a Candidate> {
        self.chosen.and_then(|i| cands.get(i))
    }

    /// The runner-up of `cands`.
    pub fn runner_up<'a>(&self, cands: &'a [Candidate]) -> Option<&'a Candidate> {
        self.runner_up.and_then(|i| cands.get(i))
    }
}

/// The decision (module doc).
pub fn decide(cands: &[Candidate], x: &Context) -> Decision {
    let basis = x.basis;
    let base = Decision {
        kind: Kind::None,
        config: "none".into(),
        chosen: None,
        memory_saved_bytes: 0,
        memory_saved_ci: [0, 0],
        all_pages_saved_bytes: 0,
        all_pages_saved_ci: [0, 0],
        operating_point: x.operating.cloned(),
        sizing: None,
        cpu_seconds_per_second: 0.0,
        swap_in_p99_ns: 0,
        tie: false,
        runner_up: None,
        margin_bytes: 0,
        uncertainty_bytes: 0,
        reason: Reason::NothingRuns,
        basis: basis.clone(),
        swap_behind: None,
        better_kernel: Vec::new(),
        proactive: None,
        proactive_none: None,
    };
    if let Some((measured_pages, min_pages)) = x.too_few_pages {
        return Decision { reason: Reason::TooFewPages { measured_pages, min_pages }, ..base };
    }
    if !cands.iter().any(|c| c.available && c.config != Config::None) {
        return base;
    }
    let entries: Vec<Entry> =
        cands.iter().enumerate().map(|(i, c)| entry(i, c, x.disk_swap.is_some())).collect();
    let band = |i: usize, j: usize| band(&cands[i], &cands[j], x);
    let Some((chosen, outcome, contenders)) = rule(&entries, band) else {
        return base;
    };
    let c = &cands[chosen];
    let alone = entries.iter().enumerate().all(|(i, e)| i == chosen || !e.eligible);
    let reason = match outcome {
        // "none" alone within the budgets: nothing that compresses fits them.
        Outcome::SavesMost if c.config == Config::None && contenders.len() == 1 && alone => {
            Reason::NothingFits
        }
        Outcome::SavesMost => Reason::SavesMost,
        Outcome::Tie(by) => Reason::Tie { by },
        Outcome::NothingFits => Reason::NothingFits,
    };
    let runner = runner_up(&entries, chosen);
    let (margin, uncertainty, tie) = match runner {
        Some(r) => {
            let m = c.memory_saved_bytes - cands[r].memory_saved_bytes;
            let u = band(chosen, r);
            (m, u, contenders.contains(&r) || m.abs() <= u)
        }
        None => (0, 0, false),
    };
    let keep = c.runs_now;
    let sizing =
        x.operating.and_then(|op| operating::size(c, op, x.mem_total_bytes)).filter(|_| !keep);
    let swap_behind = matches!(c.config, Config::Zswap { .. }).then(|| SwapBehind {
        existing: x.disk_swap.map(str::to_string),
        // Sized from the operating point where one moves memory out, as zram's disksize is.
        size_bytes: sizing.map_or(x.zswap_swap_bytes, |s| s.disksize_bytes.max(x.zram_swap_bytes)),
        new_file: x.disk_swap.is_none().then(|| SWAP_FILE.to_string()),
    });
    let (all, all_ci) = if keep { (0, [0, 0]) } else { (c.memory_saved_bytes, c.memory_saved_ci) };
    let (saved, ci) = match x.operating {
        _ if keep => (0, [0, 0]),
        Some(op) => match c.at_point(op.named) {
            Some(at) => (at.memory_saved_bytes, at.memory_saved_ci),
            None => (all, all_ci),
        },
        None => (all, all_ci),
    };
    Decision {
        kind: match (&c.config, keep) {
            (_, true) => Kind::Keep,
            (Config::Zswap { .. }, _) => Kind::Zswap,
            _ => Kind::Zram,
        },
        config: c.name.clone(),
        chosen: Some(chosen),
        memory_saved_bytes: saved,
        memory_saved_ci: ci,
        all_pages_saved_bytes: all,
        all_pages_saved_ci: all_ci,
        sizing,
        cpu_seconds_per_second: c.cpu_secs_per_sec,
        swap_in_p99_ns: c.swap_in_p99_ns,
        tie,
        runner_up: runner,
        margin_bytes: margin,
        uncertainty_bytes: uncertainty,
        reason,
        swap_behind,
        better_kernel: better_kernel(cands, c.memory_saved_bytes),
        ..base
    }
}

/// The `i`-th candidate as [`rule`] sees it.
fn entry(i: usize, c: &Candidate, disk_swap: bool) -> Entry {
    let algo = c.config.compressor().unwrap_or("");
    let k = zmem_comp::algorithms().iter().position(|a| a.name == algo).unwrap_or(usize::MAX);
    // zram (and none) before zswap, then the kernel's order of compressors, then the list's.
    let zswap = matches!(c.config, Config::Zswap { .. }) as usize;
    Entry {
        saved: c.memory_saved_bytes,
        cpu: c.cpu_secs_per_sec,
        eligible: c.available && c.within_budgets,
        runs_now: c.runs_now,
        rank: c.config.setup_rank(disk_swap),
        // Each part within its 20 bits: an unknown compressor (none's) sorts after the known.
        order: zswap << 40 | k.min(0xF_FFFF) << 20 | i.min(0xF_FFFF),
    }
}

/// Half-width of the difference of two candidates' savings (module doc), at least
/// [`MIN_CHANGE`] of `now_bytes`.
fn band(a: &Candidate, b: &Candidate, x: &Context) -> i64 {
    let floor = (MIN_CHANGE * x.basis.now_bytes as f64).round() as i64;
    let paired = (a.config.is_plain_zram() && b.config.is_plain_zram())
        .then(|| {
            let e = x.estimates?;
            let d = e.difference(a.config.compressor()?, b.config.compressor()?)?;
            // Scaled from the estimate's pages to the basis'.
            let scale = x.basis.pages as f64 / e.design.population_pages.max(1) as f64;
            Some(((d.high - d.low) / 2.0 * scale).round() as i64)
        })
        .flatten();
    let hw = |c: &Candidate| (c.memory_saved_ci[1] - c.memory_saved_ci[0]) as f64 / 2.0;
    let rss = (hw(a).powi(2) + hw(b).powi(2)).sqrt().round() as i64;
    paired.unwrap_or(rss).max(floor)
}

/// The best other eligible entry by saving (else none).
fn runner_up(entries: &[Entry], chosen: usize) -> Option<usize> {
    (0..entries.len()).filter(|&i| i != chosen && entries[i].eligible).max_by(|&a, &b| {
        entries[a].saved.cmp(&entries[b].saved).then(entries[b].order.cmp(&entries[a].order))
    })
}

/// Candidates this kernel cannot run that would fit the budgets and save more than `chosen`
/// saves: the best per kernel option, most saving first.
fn better_kernel(cands: &[Candidate], chosen_saved: i64) -> Vec<BetterKernel> {
    let mut out: Vec<BetterKernel> = Vec::new();
    for c in cands {
        let only_unavailable = c.over_budget.iter().all(|o| *o == OverBudget::Unavailable);
        let extra = c.memory_saved_bytes - chosen_saved;
        if c.available || !only_unavailable || c.kernel_needs.is_empty() || extra <= 0 {
            continue;
        }
        let needs = c.kernel_needs.join(" + ");
        let better = BetterKernel { config: c.name.clone(), needs, extra_saved_bytes: extra };
        match out.iter_mut().find(|b| b.needs == better.needs) {
            Some(b) if b.extra_saved_bytes >= extra => {}
            Some(b) => *b = better,
            None => out.push(better),
        }
    }
    out.sort_by_key(|b| std::cmp::Reverse(b.extra_saved_bytes));
    out
}

/// Where the apply script makes zswap's swap file when the machine has no disk swap.
pub const SWAP_FILE: &str = "/var/lib/zmem/swapfile";

/// The smallest swap file the apply script makes (it rounds a smaller size up to this).
pub const MIN_SWAP_FILE_BYTES: u64 = 64 << 20;

/// One candidate as [`rule`] sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Entry {
    /// Memory saved against now, bytes.
    saved: i64,
    cpu: f64,
    /// The kernel runs it and it is within the budgets.
    eligible: bool,
    runs_now: bool,
    /// [`Config::setup_rank`]: smaller is simpler.
    rank: u32,
    /// The fixed order that decides last: smaller first.
    order: usize,
}

/// How [`rule`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    SavesMost,
    Tie(TieBreak),
    /// Nothing within the budgets; what runs now is kept.
    NothingFits,
}

/// The rule of the module doc over `entries`, `band(i, j)` the half-width of the difference of
/// `i`'s and `j`'s savings within which they are equal. Returns the chosen entry, how, and the
/// entries it was chosen among; none when nothing may be chosen.
fn rule(
    entries: &[Entry],
    band: impl Fn(usize, usize) -> i64,
) -> Option<(usize, Outcome, Vec<usize>)> {
    let eligible: Vec<usize> = (0..entries.len()).filter(|&i| entries[i].eligible).collect();
    let best = eligible.iter().copied().max_by(|&a, &b| {
        entries[a].saved.cmp(&entries[b].saved).then(entries[b].order.cmp(&entries[a].order))
    });
    let Some(best) = best else {
        let r = entries.iter().position(|e| e.runs_now)?;
        return Some((r, Outcome::NothingFits, vec![r]));
    };
    let tied: Vec<usize> = eligible
        .iter()
        .copied()
        .filter(|&i| i == best || (entries[best].saved - entries[i].saved).abs() <= band(best, i))
        .collect();
    if tied.len() == 1 {
        return Some((best, Outcome::SavesMost, tied));
    }
    let (pick, by) = tie_break(&tied, entries);
    Some((pick, Outcome::Tie(by), tied))
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

/// Puts the proactive reclaim (or why there is none) into the decision: only a decision that
/// sets up a compressed swap gets one (where it keeps what runs, or sets up nothing, the
/// headline goes back to `named`, the point without proactive reclaim). The agent carries the
/// prediction the exporter shows beside what it moved.
pub fn attach_proactive(
    d: &mut Decision,
    cands: &[Candidate],
    chosen: Result<Proactive, String>,
    named: Named,
    page_size: u64,
    cpu_budget_percent: f64,
) {
    let mut p = match chosen {
        Ok(p) if matches!(d.kind, Kind::Zram | Kind::Zswap) => p,
        Ok(_) => {
            d.proactive_none = Some("the decision sets up no compressed swap of its own".into());
            if let Some(op) = d.operating_point.as_mut() {
                op.named = named;
            }
            return;
        }
        Err(why) => {
            d.proactive_none = Some(why);
            return;
        }
    };
    // The agent reclaims within what the decision's own CPU leaves of the budget.
    let left = cpu_budget_percent - 100.0 * d.cpu_seconds_per_second;
    if left < MIN_AGENT_CPU_PERCENT {
        d.proactive_none = Some(format!(
            "the configuration's CPU ({:.3} % of a core) leaves {left:.3} % of the {} % budget, \
             under the {MIN_AGENT_CPU_PERCENT} % reclaim needs",
            100.0 * d.cpu_seconds_per_second,
            cpu_budget_percent
        ));
        if let Some(op) = d.operating_point.as_mut() {
            op.named = named;
        }
        return;
    }
    if p.agent.is_some() {
        probe_holes(d, cands);
        held_back(d, &mut p, cands);
    }
    let saved = d.memory_saved_bytes;
    if let Some(damon) = p.damon.as_mut() {
        damon.cpu_budget_percent = left;
    }
    let predicted = Predicted {
        moved_out_bytes: p.moves_bytes,
        swap_ins_per_sec: p.promoted_bytes_per_sec / page_size.max(1) as f64,
        memory_saved_bytes: saved,
    };
    if let Some(m) = p.memory_reclaim.as_mut() {
        m.cpu_budget_percent = left;
        m.predicted = Some(predicted);
    }
    if let Some(agent) = p.agent.as_mut() {
        agent.cpu_budget_percent = left;
        agent.predicted = Some(predicted);
    }
    d.proactive = Some(p);
}

/// What the agent's first pass leaves in the pool: it samples a mapping with referenced pages
/// one page in [`GROUP_PAGES`] (zmem-kernel's `reclaim`), so up to that share of the working
/// set (the memory touched within T) is stored and comes back, and each leaves its object's
/// bytes as a hole in a zspage until the pool is compacted (zsmalloc frees an object without
/// moving the others: mm/zsmalloc.c `zs_free()`). The headline at the cold age is taken down
/// by those bytes, and its interval's low end too (all the working set in sampled mappings);
/// its high end stays (none of it is).
fn probe_holes(d: &mut Decision, cands: &[Candidate]) {
    let Some(op) = d.operating_point.as_ref().filter(|o| o.named == Named::ColdAge) else {
        return;
    };
    let Some((k, at)) = op.cold.as_ref().zip(d.chosen(cands).and_then(|c| c.at_cold_age)) else {
        return;
    };
    let per_byte = at.pool_bytes as f64 / at.moved_out_bytes.max(1) as f64;
    let hot = k.anon_bytes.saturating_sub(k.cold_bytes);
    let holes = (hot as f64 / GROUP_PAGES as f64 * per_byte).round() as i64;
    d.memory_saved_bytes -= holes;
    d.memory_saved_ci[0] -= holes;
}

/// What the agent holds resident of the memory that came back: a page that came back is
/// marked hot and not paged out again until the mark ages, even once it is idle for T again
/// (zmem-kernel's `reclaim`: hot for 4 T to 8 T). The point stays at the cold bytes (every
/// page that came back may stay hot); the interval's low end reaches down by the saving of the
/// most the agent can hold idle ([`HELD_IDLE_MAX_T`] T of the return, by Little's law).
fn held_back(d: &mut Decision, p: &mut Proactive, cands: &[Candidate]) {
    if d.operating_point.as_ref().is_none_or(|o| o.named != Named::ColdAge) {
        return;
    }
    let Some(at) = d.chosen(cands).and_then(|c| c.at_cold_age) else { return };
    let per_byte = at.pool_bytes as f64 / at.moved_out_bytes.max(1) as f64;
    let span = (HELD_IDLE_MAX_T as u64).saturating_mul(p.cold_age_secs) as f64;
    let held = (p.promoted_bytes_per_sec.max(0.0) * span).min(p.moves_bytes as f64);
    p.held_back_bytes = held.round() as u64;
    p.held_back_saved_bytes = (held * (1.0 - per_byte).max(0.0)).round() as i64;
    d.memory_saved_ci[0] -= p.held_back_saved_bytes;
}

#[cfg(test)]
mod tests;

//! Steps 3 and 4: the findings judged. Every candidate (zram's, zswap's, and "none" where
//! nothing runs) projected onto one basis, the operating point, the one decision
//! ([`crate::decision`]) and the proactive reclaim it adds, then the report.
//!
//! [`judge`] reads nothing but its [`Findings`]: no page, no file, nothing of the machine (the
//! kernel's speed too is the findings' [`Findings::kernel_speed`], passed to every price). So
//! findings judged where they were measured (`zmem lab`) and the same findings judged from an
//! evidence file elsewhere (`zmem lab FILE`, `zmem-fleet`) give the same report.

use std::collections::BTreeMap;

use zmem_kernel::caps::KernelCaps;

use crate::candidate::{self, Candidate};
use crate::decision::{self, Decision};
use crate::facts::PageFacts;
use crate::findings::Findings;
use crate::fit::{self, UncertainReason, uncertainty};
use crate::report::{LabReport, SCHEMA_VERSION};
use crate::{LabError, operating, proactive, zswap};

/// The report for `f`: its candidates, the decision and zswap's advice, with every figure the
/// findings carry.
pub fn judge(f: &Findings) -> Result<LabReport, LabError> {
    let judged = candidates_and_decision(f)?;
    Ok(LabReport {
        schema_version: SCHEMA_VERSION,
        zmem_version: env!("CARGO_PKG_VERSION").into(),
        source: f.source.clone(),
        kernel: f.kernel.clone().unwrap_or_else(|| KernelCaps {
            source: "not read: the caller gave no kernel capabilities, so every candidate \
                     counts as available"
                .into(),
            ..KernelCaps::default()
        }),
        compressors: f.compressors.clone(),
        allocators: f.allocators.clone(),
        policies: f.policies.clone(),
        swap: f.swap.clone(),
        swap_device: f.swap_device.clone(),
        trace: f.trace.clone(),
        now: f.now.clone(),
        rates: f.rates.clone(),
        candidates: judged.candidates,
        budgets: f.budgets,
        decision: judged.decision,
        estimates: f.estimates.clone(),
        skipped_policies: f.skipped_policies.clone(),
        pressure: f.pressure.clone(),
        cold: f.operating.cold.clone(),
        zswap: judged.zswap,
    })
}

/// The candidates on one basis, the one decision over them, and zswap's Now and stack.
struct Judged {
    candidates: Vec<Candidate>,
    decision: Decision,
    zswap: Option<zswap::ZswapAdvice>,
}

fn candidates_and_decision(f: &Findings) -> Result<Judged, LabError> {
    let (ps, n) = (f.facts.page_size, f.facts.pages() as u64);
    let estimates = f.estimates.as_ref();
    let now = f.now.as_ref();
    let now_algo = now.map_or(zmem_zram::DEFAULT_ALGORITHM, |n| n.config.comp_algorithm.as_str());
    let population = estimates.map(|e| fit::Population {
        pages: e.design.population_pages,
        current_pool: e.row(now_algo).map(|row| row.pool_bytes.estimate.round().max(0.0) as u64),
        estimates: Some(e),
    });
    let (rates, budgets) = (&f.rates, &f.budgets);
    // Priced at the speed the findings carry, not this machine's.
    let kernel_work = f.kernel_speed.overhead;
    let mut cands = fit::zram_candidates(
        &f.policies,
        now,
        f.kernel.as_ref(),
        rates,
        budgets,
        population,
        kernel_work,
    )?;
    let reference = cands
        .iter()
        .find(|c| c.is_reference)
        .and_then(|c| c.config.compressor())
        .unwrap_or(now_algo)
        .to_string();
    let mut zswap_now = None;
    if let (Some(z), Some(measured)) = (&f.zswap, &f.zswap_measured) {
        let (zn, zc) = zswap::candidates(
            z,
            &f.facts,
            measured,
            &cands,
            &reference,
            rates,
            budgets,
            kernel_work,
        )?;
        zswap_now = zn;
        cands.extend(zc);
    }
    let pages = fit::projected_pages(now, population, n);
    let swaps = f.zswap.as_ref().map_or(&[][..], |z| &z.live.swaps);
    let disk = swaps.iter().find(|s| s.kind != "zram").map(|s| s.filename.as_str());
    // zswap's swap device holds a slot for every page it stores, and at least what the zram
    // swap devices it replaces held room for.
    let zram_swap: u64 = swaps.iter().filter(|s| s.kind == "zram").map(|s| s.size_bytes).sum();
    let zswap_swap_bytes = (pages * ps as u64).max(zram_swap);
    if let Some(z) = &f.zswap {
        zswap::without_room(&mut cands, &z.live, zswap_swap_bytes);
    }
    let live_bytes = now.and_then(|n| n.field("mem_used_total")).map(|f| f.live);
    let basis = candidate::basis(&cands, live_bytes, pages, ps);
    candidate::on_basis(&mut cands, &basis, estimates, &reference);
    let pressure = f.pressure.as_ref().map(|p| &p.now);
    let promotion = budgets.promotion_percent_per_min;
    let own = own_pages(&f.facts, &cands, &f.operating, promotion)?;
    let mut op = operating::point(&basis, ps as u64, pressure, &f.operating, promotion, &own);
    let without = op.named;
    let proactive = proactive::choose(&op, &f.proactive);
    if proactive.is_ok() {
        op.named = operating::Named::ColdAge;
    }
    operating::at(&mut cands, &basis, &op, ps as u64);
    let mut decision = decision::decide(
        &cands,
        &decision::Context {
            basis: &basis,
            estimates,
            too_few_pages: uncertainty(n).map(
                |UncertainReason::TooFewPages { measured_pages, min_pages }| {
                    (measured_pages, min_pages)
                },
            ),
            disk_swap: disk,
            zswap_swap_bytes,
            zram_swap_bytes: zram_swap,
            operating: Some(&op),
            mem_total_bytes: f.zswap.as_ref().and_then(|z| z.live.mem_total_bytes),
        },
    );
    decision::attach_proactive(
        &mut decision,
        &cands,
        proactive,
        without,
        ps as u64,
        budgets.cpu_percent_of_core,
    );
    let zswap = f.zswap.as_ref().map(|z| zswap::ZswapAdvice {
        now: zswap_now,
        stack: zswap::stack(&z.live, &decision, &cands, rates, ps, &f.swap_device),
        live: z.live.clone(),
    });
    Ok(Judged { candidates: cands, decision, zswap })
}

/// What the sample tells of the pages each point moves out, where each sampled page's process
/// is known: each cgroup's own compressibility, and the cold bytes' told apart by process.
fn own_pages(
    facts: &PageFacts,
    cands: &[Candidate],
    x: &operating::OperatingInput,
    promotion_budget: f64,
) -> Result<operating::Own, LabError> {
    let Some(pids) = x.page_pids.as_deref() else {
        return Ok(operating::Own::default());
    };
    let mut algos: Vec<&str> =
        cands.iter().filter(|c| c.available).filter_map(|c| c.config.compressor()).collect();
    algos.sort_unstable();
    algos.dedup();
    let shares = x.cold.as_ref().and_then(|c| {
        let ps = facts.page_size as u64;
        let out = operating::over_budget(c, x.cold_age_secs, promotion_budget, ps);
        let mut shares = cold_shares(c, x.cold_age_secs)?;
        // A process left out moves nothing: its pages weigh nothing in the cold bytes.
        for p in &out {
            shares.0.insert(p.pid, 0.0);
        }
        Some(shares)
    });
    if x.cgroup_pids.is_empty() && shares.is_none() {
        return Ok(operating::Own::default());
    }
    let lens = operating::compressibility::lengths(facts, &algos)?;
    let cgroups = operating::compressibility::measure(&lens, pids, &x.cgroup_pids);
    let cold = shares.map_or_else(Default::default, |(by_pid, overall)| {
        let share = |p: u32| by_pid.get(&p).copied().unwrap_or(overall);
        operating::compressibility::cold_weighted(&lens, pids, share)
    });
    Ok(operating::Own { cgroups, cold })
}

/// Each watched process's share of its anonymous memory idle at `t`, and the whole curve's.
pub(crate) fn cold_shares(
    c: &zmem_kernel::cold::ColdCurve,
    t: u64,
) -> Option<(BTreeMap<u32, f64>, f64)> {
    let i = c.ages_secs.iter().position(|&a| a == t)?;
    // A process that ended before T holds nothing there: its sampled pages weigh nothing (not
    // the curve's overall share, which is for processes the curve did not watch).
    let by_pid = c
        .per_process
        .iter()
        .filter(|p| p.anon_bytes > 0)
        .filter_map(|p| {
            let cold = match p.exited_before_secs {
                Some(_) => 0,
                None => *p.cold_bytes_at_age.get(i)?,
            };
            Some((p.pid, cold as f64 / p.anon_bytes as f64))
        })
        .collect();
    Some((by_pid, c.cold_fraction(i)))
}

//! Fixtures the render crate's integration tests share (`mod common;`): a decision and its
//! contender, a zswap candidate, and the lab run on a small generated page set.
#![allow(dead_code)] // each test binary uses its own subset

use std::time::Duration;

use zmem_lab::decision::{Contender, Decision, Kind, Pick, Reason, SwapBehind};
use zmem_lab::zswap::ZswapCandidate;
use zmem_lab::{self as lab, LabOptions, LabReport, NoProgress, Source};

// ---- Decisions and candidates ------------------------------------------------------------

/// The contender `pick` named `config`: 1 MiB saved, within the budgets.
pub fn contender(pick: Pick, config: &str) -> Contender {
    Contender {
        pick,
        config: config.into(),
        memory_saved_bytes: 1 << 20,
        memory_saved_ci: [1 << 19, 3 << 19],
        cpu_seconds_per_second: 1e-4,
        swap_in_p50_ns: 2000,
        swap_in_p99_ns: 5000,
        within_budgets: true,
        runs_now: false,
    }
}

/// A decision of `kind` for `config`, its chosen contender `pick`, with `behind` as the swap
/// behind zswap.
pub fn decision(kind: Kind, pick: Pick, config: &str, behind: Option<SwapBehind>) -> Decision {
    let c = contender(pick, config);
    Decision {
        kind,
        config: config.into(),
        chosen: Some(c),
        memory_saved_bytes: 1 << 20,
        memory_saved_ci: [1 << 19, 3 << 19],
        cpu_seconds_per_second: 1e-4,
        swap_in_p99_ns: 5000,
        tie: false,
        runner_up: None,
        margin_bytes: 0,
        uncertainty_bytes: 0,
        reason: Reason::SavesMost,
        now_config: "none".into(),
        now_bytes: 2 << 20,
        pages: 512,
        swap_behind: behind,
    }
}

/// A zswap candidate of `compressor` at `max_pool_percent`, the shrinker on or off, named
/// `zswap <compressor> max_pool_percent=<n> shrinker=<on|off>`.
pub fn zswap_candidate(compressor: &str, max_pool_percent: u32, shrinker: bool) -> ZswapCandidate {
    let name = format!(
        "zswap {compressor} max_pool_percent={max_pool_percent} shrinker={}",
        if shrinker { "on" } else { "off" }
    );
    ZswapCandidate {
        kind: "zswap".into(),
        name,
        compressor: compressor.into(),
        max_pool_percent,
        accept_threshold_percent: 90,
        shrinker_enabled: shrinker,
        available: true,
        unavailable_reason: None,
        is_current: false,
        verified: true,
        pool_bytes: 1 << 20,
        memory_saved_bytes_vs_now: 0,
        cpu_secs_per_sec: 1e-4,
        added_cpu_secs_per_sec: 0.0,
        load_p50_ns: 3000,
        load_p99_ns: 9000,
        added_load_p99_ns: 0,
        hit_fraction: 1.0,
        replay_max_pool_percent: max_pool_percent,
        device_write_bytes_per_sec: 0.0,
        swap_in_us_per_sec: 0.0,
        within_budgets: true,
        over_budget: Vec::new(),
    }
}

// ---- Lab runs ------------------------------------------------------------------------------

/// The lab's options for a test run: the defaults, with no minimum measuring time.
pub fn quick() -> LabOptions {
    LabOptions { min_time: Duration::ZERO, ..LabOptions::default() }
}

/// The lab with `opts` on `pages` generated mixed 4 KiB pages from `seed`, the source named
/// the built-in test set.
pub fn lab_run(pages: usize, seed: u64, opts: &LabOptions) -> LabReport {
    let set = zmem_pages::generate::generate(zmem_pages::generate::Kind::Mixed, pages, 4096, seed)
        .expect("generator");
    let source = Source {
        kind: "builtin".into(),
        detail: "test set".into(),
        pages: set.len() as u64,
        page_size: 4096,
        fallback_reason: None,
    };
    lab::run(set.bytes(), source, opts, &NoProgress).expect("lab run")
}

/// One small lab run: 1,024 generated pages (seed 7), the lab's minimum for advice
/// (zmem_lab::sample::MIN_PAGES): fewer give an uncertain result with nothing to apply.
pub fn small_report() -> LabReport {
    lab_run(1024, 7, &quick())
}

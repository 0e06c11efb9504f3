//! Fixtures the render crate's integration tests share (`mod common;`): a decision, zram and
//! zswap candidates, and the lab run on a small generated page set.
#![allow(dead_code)] // each test binary uses its own subset

pub mod sandbox;

use std::time::Duration;
use zmem_kernel::cold::{ColdCurve, Cost, Method, Skipped};
use zmem_kernel::pressure::{Pressure, Psi, PsiLine, Watermarks};

use zmem_lab::candidate::DeviceTraffic;
use zmem_lab::decision::{Decision, Kind, Reason, SwapBehind};
use zmem_lab::{
    self as lab, Basis, Candidate, Config, LabOptions, LabReport, NoProgress, NowSource, Policy,
    Source, ZswapParams,
};

// ---- Decisions and candidates ------------------------------------------------------------

/// A decision of `kind` for `config`, its chosen candidate the first of its list, saving 1 MiB
/// against no compressed swap (512 pages, 2 MiB), with `behind` as the swap behind zswap.
pub fn decision(kind: Kind, config: &str, behind: Option<SwapBehind>) -> Decision {
    Decision {
        kind,
        config: config.into(),
        chosen: Some(0),
        memory_saved_bytes: 1 << 20,
        memory_saved_ci: [1 << 19, 3 << 19],
        all_pages_saved_bytes: 1 << 20,
        all_pages_saved_ci: [1 << 19, 3 << 19],
        operating_point: None,
        sizing: None,
        cpu_seconds_per_second: 1e-4,
        swap_in_p99_ns: 5000,
        tie: false,
        runner_up: None,
        margin_bytes: 0,
        uncertainty_bytes: 0,
        reason: Reason::SavesMost,
        basis: Basis {
            now_config: "none".into(),
            now_bytes: 2 << 20,
            now_source: NowSource::Uncompressed,
            pages: 512,
        },
        swap_behind: behind,
        better_kernel: Vec::new(),
        proactive: None,
        proactive_none: None,
    }
}

/// A zram decision with the agent at T = 60 s, never paging out `exclude`.
pub fn with_agent(exclude: zmem_kernel::reclaim::Exclude) -> Decision {
    let mut d = decision(Kind::Zram, "zram lzo-rle", None);
    let predicted = zmem_kernel::reclaim::Predicted {
        moved_out_bytes: 900 << 20,
        swap_ins_per_sec: 2.5,
        memory_saved_bytes: 600 << 20,
    };
    d.proactive = Some(zmem_lab::proactive::Proactive {
        mechanism: zmem_lab::proactive::Mechanism::ProcessMadvise,
        why: "DAMON: taken; memory.reclaim: cgroup v1".into(),
        cold_age_secs: 60,
        moves_bytes: 900 << 20,
        promoted_bytes_per_sec: 10240.0,
        held_back_bytes: 0,
        held_back_saved_bytes: 0,
        damon: None,
        memory_reclaim: None,
        agent: Some(zmem_kernel::reclaim::AgentConfig {
            exclude,
            predicted: Some(predicted),
            ..zmem_kernel::reclaim::AgentConfig::new(60)
        }),
    });
    d
}

/// A zram decision with a DAMON pageout scheme at T = 60 s, never paging out `cgroups`.
pub fn with_damon(cgroups: &[&str]) -> Decision {
    let mut d = with_agent(zmem_kernel::reclaim::Exclude::default());
    let p = d.proactive.as_mut().expect("proactive");
    p.mechanism = zmem_lab::proactive::Mechanism::Damon;
    p.agent = None;
    p.damon = Some(zmem_kernel::reclaim::damon::DamonPageout {
        cold_age_secs: 60,
        cpu_budget_percent: 0.5,
        psi_some_limit_percent: 0.1,
        exclude_cgroups: cgroups.iter().map(|c| c.to_string()).collect(),
    });
    d
}

/// A zram decision with the memory.reclaim driver at T = 60 s over `targets`.
pub fn with_memcg(targets: &[(&str, u64)]) -> Decision {
    use zmem_kernel::reclaim::memcg::{MemcgReclaim, MemcgTarget};
    let mut d = with_agent(zmem_kernel::reclaim::Exclude::default());
    let p = d.proactive.as_mut().expect("proactive");
    p.mechanism = zmem_lab::proactive::Mechanism::MemoryReclaim;
    p.agent = None;
    p.memory_reclaim = Some(MemcgReclaim {
        cold_age_secs: 60,
        period_secs: 15,
        cpu_budget_percent: 0.5,
        psi_some_avg10_limit: 0.1,
        targets: targets
            .iter()
            .map(|(p, b)| MemcgTarget { path: p.to_string(), bytes: *b })
            .collect(),
        predicted: None,
    });
    d
}

/// zswap's module parameters: `compressor` at `max_pool_percent`, the shrinker on or off, the
/// kernel's default accept_threshold_percent (90).
pub fn zswap_params(compressor: &str, max_pool_percent: u32, shrinker: bool) -> ZswapParams {
    ZswapParams {
        compressor: compressor.into(),
        max_pool_percent,
        accept_threshold_percent: 90,
        shrinker_enabled: shrinker,
    }
}

/// The name the lab gives a zswap candidate: `zswap <compressor> max_pool_percent=<n>
/// shrinker=<on|off>` (and accept_threshold_percent where not the default).
pub fn zswap_name(p: &ZswapParams) -> String {
    p.label()
}

/// A zram candidate for `policy`, named `zram <policy name>`: 1 MiB pool, within the budgets,
/// not what runs now.
pub fn zram_candidate(policy: &Policy) -> Candidate {
    Candidate {
        name: format!("zram {}", policy.name),
        config: Config::Zram { policy: policy.clone() },
        runs_now: false,
        pool_bytes: 1 << 20,
        memory_saved_bytes: 1 << 20,
        memory_saved_ci: [1 << 19, 3 << 19],
        cpu_secs_per_sec: 1e-4,
        load_p50_ns: 2000,
        load_p99_ns: 5000,
        swap_in_p50_ns: 2000,
        swap_in_p99_ns: 5000,
        ..Candidate::none(2 << 20)
    }
}

/// A zswap candidate of `compressor` at `max_pool_percent`, the shrinker on or off, named as
/// the lab names it ([`zswap_name`]): 1 MiB pool, every swap-in a hit, within the budgets.
pub fn zswap_candidate(compressor: &str, max_pool_percent: u32, shrinker: bool) -> Candidate {
    let params = zswap_params(compressor, max_pool_percent, shrinker);
    Candidate {
        name: zswap_name(&params),
        config: Config::Zswap { params, behind: "/swapfile".into() },
        runs_now: false,
        pool_bytes: 1 << 20,
        memory_saved_bytes: 1 << 20,
        memory_saved_ci: [1 << 19, 3 << 19],
        cpu_secs_per_sec: 1e-4,
        load_p50_ns: 3000,
        load_p99_ns: 9000,
        swap_in_p50_ns: 3000,
        swap_in_p99_ns: 9000,
        device: Some(DeviceTraffic {
            hit_fraction: 1.0,
            replay_max_pool_percent: max_pool_percent,
            device_write_bytes_per_sec: 0.0,
            swap_in_us_per_sec: 0.0,
        }),
        ..Candidate::none(2 << 20)
    }
}

/// The zswap parameters of a zswap candidate (panics on any other).
pub fn params_of(c: &Candidate) -> &ZswapParams {
    match &c.config {
        Config::Zswap { params, .. } => params,
        other => panic!("{} is no zswap candidate: {other:?}", c.name),
    }
}

/// `r` with its decision made candidate `i` of its list (zram or zswap, by its config), as
/// the judge would say it had it saved the most.
pub fn decide_for(r: &mut LabReport, i: usize) {
    let c = &r.candidates[i];
    let d = &mut r.decision;
    d.kind = match c.config {
        Config::Zswap { .. } => Kind::Zswap,
        Config::Zram { .. } => Kind::Zram,
        Config::None => Kind::Keep,
    };
    d.config = c.name.clone();
    d.chosen = Some(i);
    d.memory_saved_bytes = c.memory_saved_bytes;
    d.memory_saved_ci = c.memory_saved_ci;
    d.reason = Reason::SavesMost;
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
/// (zmem_lab::sample::MIN_PAGES): fewer give no decision and nothing to apply.
pub fn small_report() -> LabReport {
    lab_run(1024, 7, &quick())
}

/// The one answer, said once: the text names no configuration as the answer but the
/// decision's (no second "best" section, no recommendation, no zram-or-zswap verdict), and
/// the HTML shows no sysfs line or apply form outside the decision's apply script.
pub fn assert_one_answer(r: &LabReport, text: &str, html: &str) {
    for gone in
        ["zram's best configuration", "Recommendation:", "zram or zswap:", "How to apply it"]
    {
        assert!(!text.contains(gone), "the text says {gone:?}:\n{text}");
        assert!(!html.contains(gone), "the HTML says {gone:?}");
    }
    assert_eq!(text.matches("Decision:").count(), 1, "{text}");
    assert_eq!(html.matches("Decision:").count(), 1, "{html}");
    // The decision's block names what the decision names, and nothing else as the answer.
    let d = &r.decision;
    let head = text.lines().find(|l| l.starts_with("Decision:")).unwrap();
    match d.kind {
        Kind::Zram | Kind::Zswap => {
            assert!(head.starts_with(&format!("Decision: run {} ", d.config)), "{head}")
        }
        Kind::Keep if d.config == "none" => {
            assert!(head.starts_with("Decision: keep no compressed swap"), "{head}")
        }
        Kind::Keep => assert!(head.starts_with(&format!("Decision: keep {} ", d.config)), "{head}"),
        Kind::None => assert!(head.starts_with("Decision: none."), "{head}"),
    }
    // Only the decision's apply script (in its collapsed box) may write to sysfs or swap on.
    let outside = match (html.find("<details>"), html.find("</details>")) {
        (Some(a), Some(b)) => format!("{}{}", &html[..a], &html[b..]),
        _ => html.to_string(),
    };
    for line in ["/sys/block/", "/sys/module/zswap", "swapon", "zram-generator.conf.d"] {
        assert!(!text.contains(line), "the text has {line:?} outside a script:\n{text}");
        assert!(!outside.contains(line), "the HTML has {line:?} outside the apply script");
    }
    if !matches!(d.kind, Kind::Zram | Kind::Zswap) {
        assert!(!html.contains("<details>"), "an apply script for {:?}", d.kind);
    }
}

// ---- The operating point ------------------------------------------------------------------

pub const MIB: u64 = 1 << 20;

/// A machine whose memory is not short: 20 GiB available, 18 GiB free, PSI 0.
pub fn calm() -> Pressure {
    let line = PsiLine { avg10: 0.0, avg60: 0.0, avg300: 0.0, total_us: 5 };
    Pressure {
        psi: Some(Psi { some: line, full: Some(line) }),
        mem_available_bytes: Some(20 << 30),
        inactive_file_bytes: Some(100 * MIB),
        anon_bytes: Some(2 << 30),
        watermarks: Watermarks {
            free_bytes: 18 << 30,
            min_bytes: 50 * MIB,
            low_bytes: 60 * MIB,
            high_bytes: 70 * MIB,
        },
        ..Pressure::default()
    }
}

/// Idle 90 %, 80 %, 70 % of 4 MiB at 10 s, 30 s and 1 min.
pub fn curve() -> ColdCurve {
    let cold = vec![36 * MIB / 10, 32 * MIB / 10, 28 * MIB / 10];
    ColdCurve {
        method: Method::ClearRefsReferenced,
        ages_secs: vec![10, 30, 60],
        asked_ages_secs: vec![10, 30, 60],
        read_at_secs: vec![10.0, 30.0, 60.0],
        anon_bytes: 4 * MIB,
        cold_bytes_at_age: cold,
        vanished_bytes_at_age: vec![0; 3],
        returned_bytes_per_sec: vec![(MIB / 50) as f64, (MIB / 75) as f64],
        per_process: Vec::new(),
        skipped: Skipped::default(),
        cost: Cost::default(),
        notes: Vec::new(),
    }
}

use super::*;
use zmem_kernel::reclaim::AgentConfig;
use zmem_lab::candidate::AtPoint;
use zmem_lab::decision::Reason;
use zmem_lab::operating::{OperatingPoint, Sizing, Today, TodayReason};
use zmem_lab::proactive::Mechanism;
use zmem_lab::{Basis, NowSource, Policy};

/// The fixture the live test applies: zram lzo-rle with process_madvise at T = 3 s, moving
/// 57.6 MiB (nine tenths of the test child's 64 MiB) that zram would hold in a quarter.
const FIXTURE: &str = include_str!("../../../tests/fixtures/apply-zram-proactive.json");

const MIB: u64 = 1 << 20;

fn at(moved: u64) -> AtPoint {
    let pool = moved / 4;
    let saved = (moved - pool) as i64;
    AtPoint {
        moved_out_bytes: moved,
        pool_bytes: pool,
        memory_saved_bytes: saved,
        memory_saved_ci: [saved * 9 / 10, saved * 11 / 10],
    }
}

fn candidate() -> Candidate {
    Candidate {
        name: "zram lzo-rle".into(),
        config: Config::Zram { policy: Policy::single("lzo-rle") },
        runs_now: false,
        pool_bytes: 16 * MIB,
        memory_saved_bytes: 48 * MIB as i64,
        memory_saved_ci: [46 * MIB as i64, 50 * MIB as i64],
        at_today: at(0),
        at_cold_age: Some(at(576 * MIB / 10)),
        ..Candidate::none(64 * MIB)
    }
}

fn today() -> Today {
    Today {
        reason: TodayReason::NotShort,
        moved_out_bytes: 0,
        available_bytes: Some(16 << 30),
        free_bytes: 16 << 30,
        low_watermark_bytes: 64 * MIB,
        high_watermark_bytes: 80 * MIB,
        psi_some_avg10: Some(0.0),
        psi_some_avg60: Some(0.0),
        cgroups: Vec::new(),
    }
}

/// The fixture, built.
pub(crate) fn plan() -> Plan {
    let c = candidate();
    let cold = c.at_cold_age.unwrap_or_default();
    let mut agent = AgentConfig::new(3);
    agent.cpu_budget_percent = 50.0;
    let decision = Decision {
        kind: Kind::Zram,
        config: c.name.clone(),
        chosen: Some(0),
        memory_saved_bytes: cold.memory_saved_bytes,
        memory_saved_ci: cold.memory_saved_ci,
        all_pages_saved_bytes: c.memory_saved_bytes,
        all_pages_saved_ci: c.memory_saved_ci,
        operating_point: Some(OperatingPoint {
            named: Named::ColdAge,
            today: today(),
            cold: None,
            cold_unseen: None,
            compressibility: String::new(),
        }),
        sizing: Some(Sizing {
            at: Named::ColdAge,
            moved_out_bytes: cold.moved_out_bytes,
            pool_bytes: cold.pool_bytes,
            disksize_bytes: 128 * MIB,
            mem_limit_bytes: 64 * MIB,
            max_pool_percent: None,
        }),
        cpu_seconds_per_second: 0.0,
        swap_in_p99_ns: 0,
        tie: false,
        runner_up: None,
        margin_bytes: 0,
        uncertainty_bytes: 0,
        reason: Reason::SavesMost,
        basis: Basis {
            now_config: "none".into(),
            now_bytes: 64 * MIB,
            now_source: NowSource::Uncompressed,
            pages: 16384,
        },
        swap_behind: None,
        better_kernel: Vec::new(),
        proactive: Some(Proactive {
            mechanism: Mechanism::ProcessMadvise,
            why: "the test's".into(),
            cold_age_secs: 3,
            moves_bytes: cold.moved_out_bytes,
            promoted_bytes_per_sec: 40960.0,
            held_back_bytes: 0,
            held_back_saved_bytes: 0,
            damon: None,
            memory_reclaim: None,
            agent: Some(agent),
        }),
        proactive_none: None,
    };
    Plan { decision, candidates: vec![c], page_size: 4096, cold: None }
}

#[test]
fn the_fixture_is_the_plan_built_here() {
    // ZMEM_BLESS=1 writes the fixture from the plan above.
    if std::env::var_os("ZMEM_BLESS").is_some() {
        let p = plan();
        let doc = serde_json::json!({
            "decision": p.decision,
            "candidates": p.candidates,
            "source": { "page_size": p.page_size },
        });
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/apply-zram-proactive.json");
        std::fs::write(path, serde_json::to_string_pretty(&doc).unwrap() + "\n").unwrap();
        return;
    }
    assert_eq!(Plan::from_json(FIXTURE).unwrap(), plan());
}

#[test]
fn the_prediction_is_the_decisions_at_the_cold_age() {
    let p = plan().predicted(true);
    assert_eq!(p.operating_point, "cold_age");
    assert_eq!(p.moved_out_bytes, 576 * MIB / 10);
    assert_eq!(p.memory_saved_bytes, plan().decision.memory_saved_bytes);
    assert_eq!(p.swap_ins_per_sec, 10.0, "40960 bytes a second in 4096-byte pages");
    assert!(p.note.is_none());
}

/// The agent holds back only what came back and stayed idle for T: a watch shorter than T
/// holds nothing back yet, one of T + 7 T or longer all the decision's interval allows.
#[test]
fn a_short_watch_holds_back_less_than_the_steady_state() {
    let mut pl = plan();
    let k = pl.decision.proactive.as_mut().unwrap();
    (k.held_back_bytes, k.held_back_saved_bytes) = (7 * 3 * 40960, 700_000);
    pl.decision.memory_saved_ci[0] -= 700_000;
    let steady = pl.predicted(true);
    let t = 3;
    assert_eq!(pl.within(steady.clone(), t + 7 * t), steady, "8 T: the steady state");
    assert_eq!(pl.within(steady.clone(), 60 * t), steady);
    let none = pl.within(steady.clone(), t);
    assert_eq!(none.memory_saved_ci[0], steady.memory_saved_ci[0] + 700_000, "T: nothing yet");
    let half = pl.within(steady.clone(), t + 3 * t);
    let want = steady.memory_saved_ci[0] + 700_000 - 300_000;
    assert_eq!(half.memory_saved_ci[0], want, "3 of 7 T: 3/7 of it");
    assert_eq!(
        (half.memory_saved_bytes, half.memory_saved_ci[1]),
        (steady.memory_saved_bytes, steady.memory_saved_ci[1])
    );
}

/// A DAMON or memory.reclaim decision starts its kernel tool (not the agent), unless --no-proactive or the decision
/// sets up no compressed swap of its own.
#[test]
fn a_kernel_tools_decision_gives_its_configuration_and_no_agent() {
    let mut pl = plan();
    assert_eq!(pl.damon(false), None, "the agent's decision");
    let k = pl.decision.proactive.as_mut().unwrap();
    k.mechanism = Mechanism::Damon;
    k.agent = None;
    k.damon = Some(zmem_kernel::reclaim::damon::DamonPageout {
        cold_age_secs: 3,
        cpu_budget_percent: 0.5,
        psi_some_limit_percent: 0.1,
        exclude_cgroups: Vec::new(),
    });
    assert_eq!(pl.damon(false).map(|s| s.cold_age_secs), Some(3));
    assert_eq!(pl.damon(true), None, "--no-proactive");
    assert!(pl.agent(false).is_err());
    assert_eq!(pl.memory_reclaim(false), None, "DAMON's decision");
    let k = pl.decision.proactive.as_mut().unwrap();
    k.mechanism = Mechanism::MemoryReclaim;
    k.memory_reclaim = Some(zmem_kernel::reclaim::memcg::MemcgReclaim {
        cold_age_secs: 3,
        period_secs: 1,
        cpu_budget_percent: 0.5,
        psi_some_avg10_limit: 0.1,
        targets: vec![zmem_kernel::reclaim::memcg::MemcgTarget { path: "/a".into(), bytes: 1 }],
        predicted: None,
    });
    assert_eq!(pl.memory_reclaim(false).map(|m| m.targets.len()), Some(1));
    assert_eq!((pl.memory_reclaim(true), pl.damon(false)), (None, None));
    pl.decision.kind = Kind::Keep;
    assert_eq!((pl.damon(false), pl.memory_reclaim(false)), (None, None));
}

#[test]
fn without_proactive_reclaim_the_prediction_is_todays() {
    let p = plan().predicted(false);
    assert_eq!(p.operating_point, "today");
    assert_eq!((p.moved_out_bytes, p.memory_saved_bytes, p.swap_ins_per_sec), (0, 0, 0.0));
    assert!(p.note.is_some());
    assert_eq!(
        plan().agent(true).unwrap_err().unwrap(),
        "--no-proactive: the decision's proactive reclaim is not run"
    );
}

#[test]
fn moved_out_is_at_the_point_the_saving_is_at() {
    let mut pl = plan();
    pl.decision.proactive = None;
    pl.decision.operating_point.as_mut().unwrap().named = Named::Today;
    pl.candidates[0].at_today = at(5 * MIB);
    // Today's point: the chosen candidate's there, not the size's (which is at the cold age).
    let p = pl.predicted(true);
    assert_eq!((p.moved_out_bytes, p.operating_point.as_str()), (5 * MIB, "today"));
    // Every page: no point the candidate has figures at; the size's, then today's.
    pl.decision.operating_point.as_mut().unwrap().named = Named::AllPages;
    assert_eq!(pl.predicted(true).moved_out_bytes, 576 * MIB / 10, "the sizing's");
    pl.decision.sizing = None;
    pl.decision.operating_point.as_mut().unwrap().today.moved_out_bytes = 3 * MIB;
    assert_eq!(pl.predicted(true).moved_out_bytes, 3 * MIB);
    pl.decision.operating_point = None;
    let p = pl.predicted(true);
    assert_eq!((p.moved_out_bytes, p.operating_point.as_str()), (0, "none"));
    assert_eq!(pl.agent(false), Err(None));
}

#[test]
fn the_store_is_the_decisions_size_or_a_default() {
    let mut pl = plan();
    let want = Store::Zram {
        algorithm: "lzo-rle".into(),
        disksize: 128 * MIB,
        mem_limit: Some(64 * MIB),
        note: None,
    };
    assert_eq!(pl.store(), want);
    pl.decision.sizing = None;
    let Store::Zram { disksize, mem_limit, .. } = pl.store() else { panic!("zram") };
    assert_eq!((disksize, mem_limit), (DEFAULT_DISKSIZE, None));
    pl.decision.kind = Kind::Keep;
    assert!(matches!(pl.store(), Store::Nothing(w) if w.contains("keep zram lzo-rle")));
    let e = pl.agent(false).unwrap_err().unwrap();
    assert!(e.contains("not run for a keep decision"), "{e}");
    pl.decision.kind = Kind::None;
    pl.decision.reason = Reason::TooFewPages { measured_pages: 12, min_pages: 1024 };
    let Store::Nothing(why) = pl.store() else { panic!("nothing") };
    assert!(why.contains("12 pages measured, fewer than the 1024"), "{why}");
}

#[test]
fn a_zswap_decision_sets_its_parameters_and_a_swap_file() {
    let mut pl = plan();
    let params = ZswapParams { compressor: "lz4".into(), ..ZswapParams::default() };
    pl.candidates[0].config =
        Config::Zswap { params: params.clone(), behind: "/var/lib/zmem/swapfile".into() };
    pl.decision.kind = Kind::Zswap;
    pl.decision.sizing.as_mut().unwrap().max_pool_percent = Some(30);
    pl.decision.swap_behind = Some(zmem_lab::decision::SwapBehind {
        existing: None,
        size_bytes: 512 * MIB,
        new_file: Some("/var/lib/zmem/swapfile".into()),
    });
    let want = ZswapParams { max_pool_percent: 30, ..params };
    assert_eq!(pl.store(), Store::Zswap { params: want, swap_bytes: 512 * MIB });
}

#[test]
fn bad_reports_are_refused_in_one_line() {
    for bad in ["", "{}", "[1]", r#"{"decision": 1}"#] {
        let e = Plan::from_json(bad).unwrap_err();
        assert!(e.starts_with("not a zmem lab report") && !e.contains('\n'), "{e}");
    }
    let mut doc: serde_json::Value = serde_json::from_str(FIXTURE).unwrap();
    doc["decision"]["chosen"] = 7.into();
    let e = Plan::from_json(&doc.to_string()).unwrap_err();
    assert!(e.contains("does not list"), "{e}");
    doc["decision"]["chosen"] = 0.into();
    doc["source"]["page_size"] = 0.into();
    assert!(Plan::from_json(&doc.to_string()).is_err());
}

/// With `--pid`, the prediction is the named processes' share of the cold bytes at T.
#[test]
fn a_pid_subset_is_predicted_at_its_share_of_the_cold_bytes() {
    let mut pl = plan();
    let t = pl.proactive().expect("the fixture's proactive reclaim").cold_age_secs;
    let proc_at = |pid: u32, cold: u64, exited: Option<u64>| {
        serde_json::json!({"pid": pid, "comm": "x", "anon_bytes": cold, "mappings": 1,
            "cold_bytes_at_age": [cold], "vanished_bytes_at_age": [0],
            "referenced_total_bytes_at_age": [0], "exited_before_secs": exited})
    };
    let curve = serde_json::json!({
        "method": "clear_refs_referenced", "ages_secs": [t], "asked_ages_secs": [t],
        "read_at_secs": [t as f64], "anon_bytes": 400 * MIB, "cold_bytes_at_age": [400 * MIB],
        "vanished_bytes_at_age": [0], "returned_bytes_per_sec": [],
        "per_process": [proc_at(7, 100 * MIB, None), proc_at(8, 300 * MIB, None),
                        proc_at(9, 50 * MIB, Some(1))],
        "skipped": {"exited": 0, "refused": 0, "kernel_threads": 0, "itself": 0,
                    "no_anonymous": 0, "reasons": []},
        "cost": {"clear_secs": 0.0, "read_secs": 0.0, "reads": 0}, "notes": []
    });
    pl.cold = Some(serde_json::from_value(curve).expect("a cold curve"));
    assert_eq!(pl.share(&[7], t), Some(0.25));
    assert_eq!(pl.share(&[9], t), Some(0.0), "a process gone before T holds none");
    assert_eq!(pl.share(&[7], t + 1), None, "no such age");
    let whole = pl.predicted(true);
    let ours = pl.scoped(whole.clone(), &[7]);
    assert_eq!(ours.moved_out_bytes, (whole.moved_out_bytes as f64 * 0.25).round() as u64);
    assert_eq!(ours.memory_saved_bytes, (whole.memory_saved_bytes as f64 * 0.25).round() as i64);
    assert!(ours.note.is_some_and(|n| n.contains("25.0 %")));
    pl.cold = None;
    assert_eq!(pl.scoped(whole.clone(), &[7]), whole, "no curve: the whole machine's");
}

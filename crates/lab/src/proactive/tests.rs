use super::*;
use crate::candidate::NowSource;
use crate::decision::{Decision, Kind};
use crate::operating::Named;
use crate::operating::OperatingInput;
use crate::operating::tests::{MIB, PS, basis, calm, curve, run};

/// This machine kind: DAMON taken by the boot kdamond (whose filters reject anonymous
/// pages), cgroup v1, process_madvise there.
fn here() -> Abilities {
    Abilities {
        damon: Some("kdamond 0 is running and is not ours".into()),
        memory_reclaim: Some("the memory controller is cgroup v1".into()),
        process_madvise: None,
        already: vec![("kdamond 0 pages out some anonymous memory".into(), false)],
    }
}

/// A shell whose own idle memory comes back over the promotion budget (left out, pid 4321).
fn busy_shell() -> crate::operating::OverBudget {
    crate::operating::OverBudget {
        pid: 4321,
        comm: "bash".into(),
        anon_bytes: MIB,
        cold_bytes: MIB / 2,
        promoted_bytes_per_sec: 16e3,
        promotion_percent_per_min: 150.0,
    }
}

fn input() -> Input {
    let exclude = Exclude { comms: vec!["sshd".into()], ..Exclude::default() };
    Input { wanted: true, exclude, abilities: Some(here()) }
}

/// 900 MiB of 1000 idle at T = 60 s, nothing coming back.
fn point(cold: u64) -> OperatingPoint {
    let b = basis(NowSource::Uncompressed);
    let c = curve(&[60], &[cold], 1000 * MIB);
    let x = OperatingInput { cold: Some(c), ..OperatingInput::default() };
    run(&b, Some(&calm()), &x).0
}

#[test]
fn the_agent_is_chosen_where_damon_and_memory_reclaim_cannot_be_used() {
    let p = choose(&point(900 * MIB), &input()).expect("proactive reclaim");
    assert_eq!(p.mechanism, Mechanism::ProcessMadvise);
    assert_eq!((p.cold_age_secs, p.moves_bytes), (60, 900 * MIB));
    assert!(p.why.contains("kdamond 0 is running") && p.why.contains("cgroup v1"), "{}", p.why);
    let a = p.agent.expect("the agent's configuration");
    assert_eq!(a.cold_age_secs, 60);
    assert_eq!(a.exclude.comms, ["sshd"]);
}

#[test]
fn each_reason_for_none_is_said() {
    let op = point(900 * MIB);
    let no = |x: &Input, op: &OperatingPoint| choose(op, x).expect_err("none");
    assert!(no(&Input { wanted: false, ..input() }, &op).contains("--no-proactive"));
    assert!(no(&Input { abilities: None, ..input() }, &op).contains("not this machine's"));
    let mut a = here();
    a.already = vec![("kdamond 0 pages out all anonymous memory".into(), true)];
    let x = Input { abilities: Some(a), ..input() };
    assert!(no(&x, &op).contains("already: kdamond 0"));
    let mut a = here();
    a.process_madvise = Some("not root".into());
    let x = Input { abilities: Some(a), ..input() };
    assert!(no(&x, &op).contains("process_madvise: not root"));
    assert!(no(&input(), &point(8 * MIB)).contains("only 8 MiB"));
    let mut over = op.clone();
    over.cold.as_mut().expect("cold").over_promotion_budget = true;
    assert!(no(&input(), &over).contains("over the promotion budget"));
    let mut unseen = op;
    unseen.cold = None;
    unseen.cold_unseen = Some("--no-cold".into());
    assert_eq!(no(&input(), &unseen), "--no-cold");
}

fn decision(kind: Kind) -> Decision {
    let b = basis(NowSource::Uncompressed);
    let mut op = point(900 * MIB);
    op.named = Named::ColdAge;
    let cands = run(&b, Some(&calm()), &OperatingInput::default()).1;
    let x = crate::decision::Context {
        basis: &b,
        estimates: None,
        too_few_pages: None,
        disk_swap: None,
        zswap_swap_bytes: 0,
        zram_swap_bytes: 0,
        operating: Some(&op),
        mem_total_bytes: None,
    };
    Decision { kind, ..crate::decision::decide(&cands, &x) }
}

#[test]
fn only_a_compressed_swap_of_its_own_gets_it_and_carries_the_prediction() {
    let b = basis(NowSource::Uncompressed);
    let x =
        OperatingInput { cold: Some(curve(&[60], &[900 * MIB], 1000 * MIB)), ..Default::default() };
    let cands = run(&b, Some(&calm()), &x).1;
    let p = choose(&point(900 * MIB), &input());
    let mut d = decision(Kind::Zram);
    d.chosen = Some(0);
    let before = (d.memory_saved_bytes, d.memory_saved_ci);
    crate::decision::attach_proactive(&mut d, &cands, p.clone(), Named::Today, PS, 1.0);
    // The first pass's sample stores a sixteenth of the working set (100 MiB), which comes
    // back and leaves its pool bytes (a third) as holes: the headline and its low end go down.
    let holes = (100.0 * MIB as f64 / 16.0 / 3.0).round() as i64;
    let at = cands[0].at_cold_age.expect("cold figure");
    assert!((at.pool_bytes as f64 / at.moved_out_bytes as f64 - 1.0 / 3.0).abs() < 1e-3);
    assert!(
        (d.memory_saved_bytes - (before.0 - holes)).abs() <= 2048,
        "{:?}",
        d.memory_saved_bytes
    );
    assert!((d.memory_saved_ci[0] - (before.1[0] - holes)).abs() <= 2048);
    assert_eq!(d.memory_saved_ci[1], before.1[1]);
    let got = d.proactive.as_ref().expect("attached");
    let want = got.promoted_bytes_per_sec / PS as f64;
    let pred = got.agent.as_ref().and_then(|a| a.predicted).expect("a prediction");
    assert_eq!(pred.moved_out_bytes, 900 * MIB);
    assert_eq!(pred.swap_ins_per_sec, want);
    assert_eq!(pred.memory_saved_bytes, d.memory_saved_bytes, "the headline, holes counted");
    let mut d = decision(Kind::Keep);
    crate::decision::attach_proactive(&mut d, &cands, p.clone(), Named::Today, PS, 1.0);
    assert!(d.proactive.is_none());
    assert!(d.proactive_none.as_deref().is_some_and(|w| w.contains("no compressed swap")));
    assert_eq!(d.operating_point.map(|o| o.named), Some(Named::Today));
    // The agent gets what the configuration's CPU leaves of the budget; too little, none.
    let mut d = decision(Kind::Zram);
    d.chosen = Some(0);
    d.cpu_seconds_per_second = 0.004;
    crate::decision::attach_proactive(&mut d, &cands, p.clone(), Named::Today, PS, 1.0);
    let a = d.proactive.and_then(|p| p.agent).expect("an agent");
    assert!((a.cpu_budget_percent - 0.6).abs() < 1e-9, "{}", a.cpu_budget_percent);
    let mut d = decision(Kind::Zram);
    d.cpu_seconds_per_second = 0.0099;
    crate::decision::attach_proactive(&mut d, &cands, p, Named::Today, PS, 1.0);
    assert!(d.proactive.is_none());
    assert!(d.proactive_none.is_some_and(|w| w.contains("leaves 0.010 % of the 1 % budget")));
}

#[test]
fn exclude_lists_parse_by_kind_and_refuse_what_is_none() {
    let e = Exclude::parse("1, sshd,/system.slice, 42,").expect("parses");
    assert_eq!(e.pids, [1, 42]);
    assert_eq!(e.comms, ["sshd"]);
    assert_eq!(e.cgroups, ["/system.slice"]);
    assert!(Exclude::parse("a name far longer than fifteen").is_err());
    assert!(Exclude::parse("tab\there").is_err());
    assert_eq!(Exclude::parse("").expect("empty"), Exclude::default());
}

/// A process left out by the promotion budget is never paged out: the agent excludes it beside
/// what the owner named.
#[test]
fn the_agent_never_pages_out_a_process_left_out() {
    let mut op = point(900 * MIB);
    let k = op.cold.as_mut().expect("cold");
    k.left_out = vec![busy_shell()];
    let a = choose(&op, &input()).expect("proactive reclaim").agent.expect("the agent");
    assert_eq!(a.exclude.pids, [4321]);
    assert_eq!(a.exclude.comms, ["sshd"]);
}

/// Memory that comes back is held resident by the agent until its hot mark ages, idle or not:
/// the interval's low end reaches down by the most it can hold (the return times 7 T), the
/// point and the high end stay (every page that came back may stay hot).
#[test]
fn the_interval_reaches_down_by_what_the_agent_holds_back() {
    let b = basis(NowSource::Uncompressed);
    let x =
        OperatingInput { cold: Some(curve(&[60], &[900 * MIB], 1000 * MIB)), ..Default::default() };
    let cands = run(&b, Some(&calm()), &x).1;
    let attach = |promoted: f64| {
        let mut p = choose(&point(900 * MIB), &input()).expect("proactive reclaim");
        p.promoted_bytes_per_sec = promoted;
        let mut d = decision(Kind::Zram);
        d.chosen = Some(0);
        crate::decision::attach_proactive(&mut d, &cands, Ok(p), Named::Today, PS, 1.0);
        d
    };
    let (calm, back) = (attach(0.0), attach(10_000.0));
    let p = back.proactive.as_ref().expect("attached");
    assert_eq!(p.held_back_bytes, 10_000 * 7 * 60, "the return times 7 T");
    // The pool takes a third of each byte moved: a held byte would have saved two thirds.
    let saved = p.held_back_saved_bytes as f64 / p.held_back_bytes as f64;
    assert!((saved - 2.0 / 3.0).abs() < 1e-3, "{saved}");
    assert_eq!(back.memory_saved_ci[0], calm.memory_saved_ci[0] - p.held_back_saved_bytes);
    assert_eq!(back.memory_saved_bytes, calm.memory_saved_bytes);
    assert_eq!(back.memory_saved_ci[1], calm.memory_saved_ci[1]);
    let none = calm.proactive.as_ref().expect("attached");
    assert_eq!((none.held_back_bytes, none.held_back_saved_bytes), (0, 0));
}

/// Where DAMON's admin interface is free, the kernel's own tool comes first: a kdamond of
/// zmem's own with the cold age, the decision's CPU and the cgroups excluded. Exclusions by
/// process it cannot honour, so they send the decision to the agent, saying why.
#[test]
fn damon_comes_first_where_it_is_free_and_nothing_is_excluded_by_process() {
    let free = Abilities { damon: None, ..here() };
    let cg = Exclude { cgroups: vec!["/system.slice".into()], ..Exclude::default() };
    let x = Input { exclude: cg, abilities: Some(free.clone()), ..input() };
    let p = choose(&point(900 * MIB), &x).expect("proactive reclaim");
    assert_eq!(p.mechanism, Mechanism::Damon);
    assert!(p.agent.is_none());
    let s = p.damon.as_ref().expect("the scheme");
    assert_eq!((s.cold_age_secs, &s.exclude_cgroups[..]), (60, &["/system.slice".to_string()][..]));
    // The decision's CPU leaves it the rest of the budget, as it does the agent.
    let b = basis(NowSource::Uncompressed);
    let cands = run(&b, Some(&calm()), &OperatingInput::default()).1;
    let mut d = decision(Kind::Zram);
    d.chosen = Some(0);
    d.cpu_seconds_per_second = 0.004;
    crate::decision::attach_proactive(&mut d, &cands, Ok(p), Named::Today, PS, 1.0);
    let s = d.proactive.and_then(|p| p.damon).expect("a scheme");
    assert!((s.cpu_budget_percent - 0.6).abs() < 1e-9, "{}", s.cpu_budget_percent);
    // A name excluded (the input's sshd): the agent, and the reason names it.
    let x = Input { abilities: Some(free.clone()), ..input() };
    let p = choose(&point(900 * MIB), &x).expect("proactive reclaim");
    assert_eq!(p.mechanism, Mechanism::ProcessMadvise);
    assert!(p.damon.is_none());
    assert!(p.why.contains("not its process, and sshd must never be paged out"), "{}", p.why);
    // A process left out by the promotion budget counts as excluded by pid.
    let mut op = point(900 * MIB);
    op.cold.as_mut().expect("cold").left_out = vec![busy_shell()];
    let x = Input { exclude: Exclude::default(), abilities: Some(free), ..input() };
    let p = choose(&op, &x).expect("proactive reclaim");
    assert_eq!(p.mechanism, Mechanism::ProcessMadvise);
    assert!(p.why.contains("pid 4321"), "{}", p.why);
}

/// cgroup v2 with DAMON taken: memory.reclaim, each cgroup asked for its own cold bytes (paths
/// from the v2 root), the root cgroup's bytes unreached; too little reached, or a process
/// excluded, and the agent does it.
#[test]
fn memory_reclaim_comes_next_where_cgroups_hold_the_cold_bytes() {
    let v2 = Abilities { memory_reclaim: None, ..here() };
    let mut op = point(900 * MIB);
    let k = op.cold.as_mut().expect("cold");
    k.cold_by_cgroup = [
        ("/sys/fs/cgroup/app.slice/web.service".to_string(), 800 * MIB),
        ("/sys/fs/cgroup/user.slice".to_string(), 50 * MIB),
        ("/sys/fs/cgroup".to_string(), 50 * MIB),
    ]
    .into();
    let x = Input { exclude: Exclude::default(), abilities: Some(v2.clone()), ..input() };
    let p = choose(&op, &x).expect("proactive reclaim");
    assert_eq!(p.mechanism, Mechanism::MemoryReclaim);
    assert!(p.agent.is_none() && p.damon.is_none());
    let m = p.memory_reclaim.as_ref().expect("the driver's configuration");
    let got: Vec<(&str, u64)> = m.targets.iter().map(|t| (t.path.as_str(), t.bytes)).collect();
    assert_eq!(got, [("/app.slice/web.service", 800 * MIB), ("/user.slice", 50 * MIB)]);
    assert_eq!((m.cold_age_secs, m.period_secs), (60, 15));
    assert!(m.check().is_ok());
    // The decision's CPU and prediction reach it, as they reach the agent.
    let b = basis(NowSource::Uncompressed);
    let cands = run(&b, Some(&calm()), &OperatingInput::default()).1;
    let mut d = decision(Kind::Zram);
    d.chosen = Some(0);
    crate::decision::attach_proactive(&mut d, &cands, Ok(p), Named::Today, PS, 1.0);
    let m = d.proactive.and_then(|p| p.memory_reclaim).expect("attached");
    assert_eq!(m.predicted.map(|p| p.moved_out_bytes), Some(900 * MIB));
    // The web service excluded: 50 of 900 MiB reachable, under 90 %: the agent.
    let cg = Exclude { cgroups: vec!["/app.slice".into()], ..Exclude::default() };
    let x = Input { exclude: cg, abilities: Some(v2.clone()), ..input() };
    let p = choose(&op, &x).expect("proactive reclaim");
    assert_eq!(p.mechanism, Mechanism::ProcessMadvise);
    assert!(p.why.contains("memory.reclaim: only 6 % of the cold bytes"), "{}", p.why);
    // No process's cgroup known (a curve without them): nothing reachable, the agent.
    let mut unknown = op.clone();
    unknown.cold.as_mut().expect("cold").cold_by_cgroup.clear();
    let x = Input { exclude: Exclude::default(), abilities: Some(v2.clone()), ..input() };
    let p = choose(&unknown, &x).expect("proactive reclaim");
    assert!(p.why.contains("memory.reclaim: only 0 % of the cold bytes"), "{}", p.why);
    // A name excluded: the agent, saying why.
    let x = Input { abilities: Some(v2), ..input() };
    let p = choose(&op, &x).expect("proactive reclaim");
    assert_eq!(p.mechanism, Mechanism::ProcessMadvise);
    assert!(p.why.contains("reclaims a whole cgroup, and sshd must never"), "{}", p.why);
}

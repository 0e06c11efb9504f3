use zmem_kernel::cold::{ColdCurve, Cost, Method, Skipped};
use zmem_kernel::pressure::{CgroupPressure, Pressure, Psi, PsiLine, Watermarks};
use zmem_zswap::ZswapParams;

use super::*;
use crate::candidate::{Basis, Candidate, Config, NowSource};
use crate::policy::Policy;

pub(crate) const PS: u64 = 4096;
pub(crate) const MIB: u64 = 1 << 20;
/// 1000 pages, uncompressed now.
const PAGES: u64 = 1000;

pub(crate) fn basis(source: NowSource) -> Basis {
    let now_bytes = if source == NowSource::Uncompressed { PAGES * PS } else { PAGES * PS / 4 };
    Basis { now_config: "none".into(), now_bytes, now_source: source, pages: PAGES }
}

/// zram with its pool a third of the pages, the interval +-10 % of the pool.
pub(crate) fn zram(b: &Basis) -> Candidate {
    let pool = PAGES * PS / 3;
    let saved = b.now_bytes as i64 - pool as i64;
    let hw = pool as i64 / 10;
    Candidate {
        name: "zram lz4".into(),
        config: Config::Zram { policy: Policy::single("lz4") },
        pool_bytes: pool,
        memory_saved_bytes: saved,
        memory_saved_ci: [saved - hw, saved + hw],
        runs_now: false,
        ..Candidate::none(b.now_bytes)
    }
}

pub(crate) fn zswap(b: &Basis) -> Candidate {
    let params = ZswapParams { compressor: "lz4".into(), ..ZswapParams::default() };
    Candidate {
        name: "zswap lz4".into(),
        config: Config::Zswap { params, behind: "/swapfile".into() },
        ..zram(b)
    }
}

/// zram's saving per byte moved: 1 less its pool over the pages.
fn per_byte() -> f64 {
    1.0 - (PAGES * PS / 3) as f64 / (PAGES * PS) as f64
}

pub(crate) fn calm() -> Pressure {
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

fn cgroup(version: u8, usage: u64, limit: u64, anon: u64, file: u64) -> CgroupPressure {
    CgroupPressure {
        path: "/sys/fs/cgroup/memory/lab".into(),
        version,
        usage_bytes: Some(usage),
        max_bytes: Some(limit),
        high_bytes: None,
        refaults: Default::default(),
        psi: None,
        anon_bytes: Some(anon),
        inactive_file_bytes: Some(file),
    }
}

pub(crate) fn run(
    b: &Basis,
    p: Option<&Pressure>,
    x: &OperatingInput,
) -> (OperatingPoint, Vec<Candidate>) {
    let x = OperatingInput { this_machine: true, ..x.clone() };
    let op = point(b, PS, p, &x, 0.2, &Own::default());
    let mut cands = vec![zram(b), zswap(b), Candidate::none(b.now_bytes)];
    at(&mut cands, b, &op, PS);
    (op, cands)
}

/// Memory not short and no cgroup over its limit: nothing is moved, so nothing is saved, and
/// the interval is 0 too; every page swapped still gives the candidate's saving.
#[test]
fn memory_not_short_moves_and_saves_nothing_today() {
    let b = basis(NowSource::Uncompressed);
    let (op, cands) = run(&b, Some(&calm()), &OperatingInput::default());
    assert_eq!(op.named, Named::Today);
    assert_eq!(op.today.reason, TodayReason::NotShort);
    assert_eq!(op.today.moved_out_bytes, 0);
    assert_eq!(op.today.psi_some_avg10, Some(0.0));
    for c in &cands {
        assert_eq!(c.at_today, AtPoint::default(), "{}", c.name);
    }
    assert!(cands[0].memory_saved_bytes > 0);
    assert_eq!(op.cold_unseen.as_deref(), Some("no cold curve was read"));
}

/// Free memory under the low watermark: kswapd reclaims to the high one, page cache first.
#[test]
fn short_memory_moves_the_deficit_past_the_page_cache() {
    let b = basis(NowSource::Uncompressed);
    let mut p = calm();
    p.watermarks.free_bytes = 30 * MIB;
    p.inactive_file_bytes = Some(10 * MIB);
    let (op, cands) = run(&b, Some(&p), &OperatingInput::default());
    assert_eq!(op.today.reason, TodayReason::Short);
    assert_eq!(op.today.moved_out_bytes, 30 * MIB);
    let z = cands[0].at_today;
    assert_eq!(z.moved_out_bytes, 30 * MIB);
    // Two thirds of each byte saved, the interval scaled with the pool.
    assert_eq!(z.memory_saved_bytes, (30.0 * MIB as f64 * per_byte()).round() as i64);
    assert_eq!(z.pool_bytes + z.memory_saved_bytes as u64, 30 * MIB);
    let hw = (z.memory_saved_ci[1] - z.memory_saved_ci[0]) / 2;
    // (The candidate's +-10 % was rounded to whole bytes: a few bytes off at most.)
    assert!((hw - (z.pool_bytes as f64 / 10.0).round() as i64).abs() <= 4, "{hw}");
    assert_eq!(cands[2].at_today, AtPoint::default(), "none moves nothing");
}

/// A cgroup over the limit asked about moves its excess out; zram's pool is charged to no
/// cgroup, zswap's is charged on v2 (so it moves out more, and saves the excess) and not on v1.
#[test]
fn a_cgroup_limit_moves_its_excess_and_zswap_v2_pays_its_pool_under_it() {
    let b = basis(NowSource::Uncompressed);
    for version in [1, 2] {
        let mut p = calm();
        p.cgroups.push(cgroup(version, 1441 * MIB, 4096 * MIB, 1400 * MIB, 0));
        let x = OperatingInput {
            cgroup_limits: vec![("/sys/fs/cgroup/memory/lab".into(), 1024 * MIB)],
            ..OperatingInput::default()
        };
        let (op, cands) = run(&b, Some(&p), &x);
        assert_eq!(op.today.reason, TodayReason::Cgroups);
        let m = &op.today.cgroups[0];
        assert!(m.asked && m.limit_bytes == 1024 * MIB);
        assert_eq!(m.excess_bytes, 417 * MIB);
        assert_eq!(cands[0].at_today.moved_out_bytes, 417 * MIB, "zram");
        let zs = cands[1].at_today;
        if version == 2 {
            assert_eq!(zs.moved_out_bytes, (417.0 * MIB as f64 / per_byte()) as u64);
            assert!((zs.memory_saved_bytes - (417 * MIB) as i64).abs() <= 2);
        } else {
            assert_eq!(zs, cands[0].at_today);
        }
    }
    // Its own limit, with usage under it: not listed, nothing moved.
    let mut p = calm();
    p.cgroups.push(cgroup(1, 900 * MIB, 1024 * MIB, 800 * MIB, 0));
    let (op, _) = run(&b, Some(&p), &OperatingInput::default());
    assert!(op.today.cgroups.is_empty());
    assert_eq!(op.today.moved_out_bytes, 0);
    // Over it, but with page cache to trim first: only what the cache does not cover.
    let mut p = calm();
    p.cgroups.push(cgroup(1, 1100 * MIB, 1024 * MIB, 800 * MIB, 50 * MIB));
    let (op, _) = run(&b, Some(&p), &OperatingInput::default());
    assert_eq!(op.today.cgroups[0].excess_bytes, 26 * MIB);
}

pub(crate) fn curve(ages: &[u64], cold: &[u64], anon: u64) -> ColdCurve {
    let returned: Vec<f64> = cold.windows(2).map(|w| (w[0] - w[1]) as f64 / 20.0).collect();
    ColdCurve {
        method: Method::ClearRefsReferenced,
        ages_secs: ages.to_vec(),
        asked_ages_secs: ages.to_vec(),
        read_at_secs: ages.iter().map(|&a| a as f64).collect(),
        anon_bytes: anon,
        cold_bytes_at_age: cold.to_vec(),
        vanished_bytes_at_age: vec![0; ages.len()],
        returned_bytes_per_sec: returned,
        per_process: Vec::new(),
        skipped: Skipped::default(),
        cost: Cost::default(),
        notes: Vec::new(),
    }
}

/// An idle heap: nearly nothing touched within T, so a page coming back every 15 s is 3 % of
/// the working set a minute, over the 0.2 % budget by its share; under one page a second it is
/// within the budget all the same. Two pages a second of the same working set are over it.
#[test]
fn a_trickle_under_one_page_a_second_is_within_the_promotion_budget() {
    let b = basis(NowSource::Uncompressed);
    let cold = 640 * MIB;
    let idle = |returned_per_sec: u64| {
        let at30 = cold + 20 * returned_per_sec;
        curve(&[10, 30, 60], &[at30 + 1, at30, cold], cold + 512 * 1024)
    };
    let x = OperatingInput { cold: Some(idle(273)), ..OperatingInput::default() };
    let (op, _) = run(&b, Some(&calm()), &x);
    let k = op.cold.expect("T read");
    assert!(k.promotion_percent_per_min > 3.0, "{}", k.promotion_percent_per_min);
    assert!(k.promotion_under_floor && !k.over_promotion_budget);
    let x = OperatingInput { cold: Some(idle(2 * PS)), ..x };
    let (op, _) = run(&b, Some(&calm()), &x);
    let k = op.cold.expect("T read");
    assert!(!k.promotion_under_floor && k.over_promotion_budget);
}

/// An idle heap beside a shell that touches its memory: the machine-wide return (the shell's)
/// is far over the budget of the tiny working set, but the budget is each process's own (as
/// Google's is each job's): the shell is left out, the heap's 630 MiB move, nothing over.
#[test]
fn a_process_over_the_budget_on_its_own_is_left_out_the_rest_move() {
    use zmem_kernel::cold::ProcessCold;
    let b = basis(NowSource::Uncompressed);
    let proc_cold = |pid: u32, comm: &str, anon: u64, cold: [u64; 3]| ProcessCold {
        mappings: 4,
        ..ProcessCold::steady(pid, comm, anon, cold.to_vec())
    };
    let mut heap = proc_cold(10, "node", 631 * MIB, [631 * MIB; 3]);
    heap.memory_cgroup = Some("/sys/fs/cgroup/app.slice".into());
    // 0.46 MiB came back between 30 s and 60 s: 16 KB/s, four pages a second.
    let mut shell = proc_cold(20, "bash", 1152 * 1024, [1152 * 1024, 1152 * 1024, 676 * 1024]);
    shell.memory_cgroup = Some("/sys/fs/cgroup/app.slice".into());
    let cold: Vec<u64> =
        (0..3).map(|i| heap.cold_bytes_at_age[i] + shell.cold_bytes_at_age[i]).collect();
    let mut c = curve(&[10, 30, 60], &cold, heap.anon_bytes + shell.anon_bytes);
    // As the observer computes it: over each interval the curve's reads are apart.
    c.returned_bytes_per_sec = vec![0.0, (cold[1] - cold[2]) as f64 / 30.0];
    c.per_process = vec![heap.clone(), shell.clone()];
    let x = OperatingInput { cold: Some(c.clone()), ..OperatingInput::default() };
    let (op, cands) = run(&b, Some(&calm()), &x);
    let k = op.cold.expect("T read");
    let left: Vec<u32> = k.left_out.iter().map(|p| p.pid).collect();
    assert_eq!(left, [20], "{k:?}");
    assert_eq!(k.cold_bytes, 631 * MIB, "the heap's bytes, not the shell's");
    // By cgroup, as memory.reclaim would be asked: the shell's bytes are not there either.
    let by: Vec<(&str, u64)> = k.cold_by_cgroup.iter().map(|(c, &b)| (c.as_str(), b)).collect();
    assert_eq!(by, [("/sys/fs/cgroup/app.slice", 631 * MIB)]);
    assert!(k.promoted_bytes_per_sec < 1.0 && !k.over_promotion_budget, "{k:?}");
    assert_eq!(cands[0].at_cold_age.expect("a figure").moved_out_bytes, 631 * MIB);
    // Without the per-process reading, the machine-wide return is over the budget.
    c.per_process.clear();
    let x = OperatingInput { cold: Some(c), ..x };
    let (op, _) = run(&b, Some(&calm()), &x);
    assert!(op.cold.expect("T read").over_promotion_budget);
}

/// The cold age reads the curve at T: its bytes scaled by each candidate's saving per byte,
/// the promotion from the last interval before T (an upper bound) when the curve ends at T.
#[test]
fn the_cold_age_is_read_from_the_curve_at_t() {
    let b = basis(NowSource::Uncompressed);
    let c = curve(&[10, 30, 60], &[950 * MIB, 920 * MIB, 900 * MIB], 1000 * MIB);
    let x = OperatingInput { cold: Some(c.clone()), ..OperatingInput::default() };
    let (op, cands) = run(&b, Some(&calm()), &x);
    let k = op.cold.as_ref().expect("T = 60 s read");
    assert_eq!((k.age_secs, k.cold_bytes, k.anon_bytes), (60, 900 * MIB, 1000 * MIB));
    assert!(k.promotion_bound);
    let promoted = (20 * MIB) as f64 / 20.0;
    assert_eq!(k.promoted_bytes_per_sec, promoted);
    let expect = 100.0 * promoted * 60.0 / (100 * MIB) as f64;
    assert!((k.promotion_percent_per_min - expect).abs() < 1e-9);
    // 0.6 % a minute comes back: over the default budget of 0.2 %.
    assert!(k.over_promotion_budget && k.promotion_budget_percent_per_min == 0.2);
    let z = cands[0].at_cold_age.expect("a cold figure");
    assert_eq!(z.moved_out_bytes, 900 * MIB);
    assert_eq!(z.memory_saved_bytes, (900.0 * MIB as f64 * per_byte()).round() as i64);
    // The point names today's pressure (proactive reclaim names the cold age, in
    // crate::proactive); each candidate's figures at either point are there.
    assert_eq!(op.named, Named::Today);
    assert_eq!(cands[0].at_point(op.named), Some(cands[0].at_today));
    assert_eq!(cands[0].at_point(Named::ColdAge), Some(z));
    // A curve that stopped short of T gives no cold figure, and says so.
    let x = OperatingInput { cold: Some(curve(&[10, 30], &[9, 8], 10)), ..x };
    let (op, cands) = run(&b, Some(&calm()), &x);
    assert!(op.cold.is_none() && cands[0].at_cold_age.is_none());
    assert!(op.cold_unseen.unwrap().contains("read to 30 s, short of T = 60 s"));
    assert_eq!(op.named, Named::Today);
}

/// With a live swap, today is what it holds now: the basis itself; the cold age adds the
/// resident cold bytes to it.
#[test]
fn a_live_swap_is_today_and_the_cold_age_adds_to_it() {
    let b = basis(NowSource::LiveZram);
    let c = curve(&[60], &[300 * MIB], 400 * MIB);
    let x = OperatingInput { cold: Some(c), ..OperatingInput::default() };
    let (op, cands) = run(&b, None, &x);
    assert_eq!(op.today.reason, TodayReason::NoReading);
    assert_eq!((op.named, cands[0].at_point(op.named)), (Named::AllPages, None));
    // Pages from elsewhere: this machine's pressure says nothing of them.
    let elsewhere = point(&b, PS, Some(&calm()), &x, 0.2, &Own::default());
    assert_eq!(
        (elsewhere.named, elsewhere.today.reason),
        (Named::AllPages, TodayReason::NoReading)
    );
    let (op, cands2) = run(&b, Some(&calm()), &x);
    assert_eq!(op.today.reason, TodayReason::LiveSwap);
    assert_eq!(op.today.moved_out_bytes, PAGES * PS);
    let z = &cands2[0];
    assert_eq!(z.at_today.memory_saved_bytes, z.memory_saved_bytes);
    assert_eq!(z.at_today.memory_saved_ci, z.memory_saved_ci);
    let cold = z.at_cold_age.unwrap();
    assert_eq!(cold.moved_out_bytes, PAGES * PS + 300 * MIB);
    assert!(cold.memory_saved_bytes > z.memory_saved_bytes);
    // No reading: nothing known moves, not even the live swap's pages.
    assert_eq!(cands[0].at_today, AtPoint::default());
}

/// The size is for the point moving out the most, with headroom, in whole steps; none where
/// nothing moves.
#[test]
fn the_size_is_for_the_most_moved_out_with_headroom() {
    let b = basis(NowSource::Uncompressed);
    let c = curve(&[60], &[900 * MIB], 1000 * MIB);
    let x = OperatingInput { cold: Some(c), ..OperatingInput::default() };
    let (op, cands) = run(&b, Some(&calm()), &x);
    let s = size(&cands[0], &op, None).expect("a size");
    assert_eq!((s.at, s.moved_out_bytes), (Named::ColdAge, 900 * MIB));
    // 1.25 x 900 MiB = 1125 MiB, up to 1152 MiB; the pool (a third, 300 MiB) doubled: 640.
    assert_eq!(s.disksize_bytes, 1152 * MIB);
    assert_eq!(s.mem_limit_bytes, 640 * MIB);
    assert!(size(&cands[2], &op, None).is_none(), "none holds nothing");
    let (op, cands) = run(&b, Some(&calm()), &OperatingInput::default());
    assert!(size(&cands[0], &op, None).is_none(), "nothing moves today, no cold age");
}

/// zswap's max_pool_percent is the candidate's, raised where its pool at the point (doubled)
/// would pass it; zram has none; RAM unknown leaves it unset.
#[test]
fn zswap_pool_percent_is_raised_to_hold_the_point() {
    let b = basis(NowSource::Uncompressed);
    let c = curve(&[60], &[900 * MIB], 1000 * MIB);
    let x = OperatingInput { cold: Some(c), ..OperatingInput::default() };
    let (op, cands) = run(&b, Some(&calm()), &x);
    let z = cands.iter().find(|c| matches!(c.config, Config::Zswap { .. })).expect("zswap");
    let pool = size(z, &op, None).expect("a size").pool_bytes;
    // A pool of 300 MiB doubled is 60 % of 1000 MiB: over the default 20 %.
    assert!(pool.abs_diff(300 * MIB) < 1024, "{pool}");
    assert_eq!(size(z, &op, Some(1000 * MIB)).and_then(|s| s.max_pool_percent), Some(60));
    // 100 GiB of RAM: 0.6 % is needed, the judged 20 % stays.
    let big = Some(100 * 1024 * MIB);
    assert_eq!(size(z, &op, big).and_then(|s| s.max_pool_percent), Some(20));
    // A pool larger than RAM is capped at 100 %.
    assert_eq!(size(z, &op, Some(100 * MIB)).and_then(|s| s.max_pool_percent), Some(100));
    assert_eq!(size(&cands[0], &op, Some(1000 * MIB)).and_then(|s| s.max_pool_percent), None);
    assert_eq!(size(z, &op, None).and_then(|s| s.max_pool_percent), None);
}

/// A cgroup whose own pages were measured saves at their compressibility, not the sample's.
#[test]
fn a_cgroup_saves_at_its_own_compressibility() {
    let b = basis(NowSource::Uncompressed);
    let mut p = calm();
    p.cgroups.push(cgroup(1, 600 * MIB, 4096 * MIB, 600 * MIB, 0));
    let x = OperatingInput {
        cgroup_limits: vec![("/sys/fs/cgroup/memory/lab".into(), 400 * MIB)],
        this_machine: true,
        ..OperatingInput::default()
    };
    // Its pages take 1.5 times the sample's pool per page with lz4.
    let own = Own {
        cgroups: vec![CgroupPages {
            path: "/sys/fs/cgroup/memory/lab".into(),
            sampled_pages: 500,
            of_sampled_pages: 2000,
            pool_factor: [("lz4".to_string(), 1.5)].into(),
        }],
        cold: [("lz4".to_string(), 0.5)].into(),
    };
    let op = point(&b, PS, Some(&p), &x, 0.2, &own);
    assert_eq!(op.today.cgroups[0].sampled_pages, 500);
    let mut cands = vec![zram(&b)];
    at(&mut cands, &b, &op, PS);
    let z = cands[0].at_today;
    assert_eq!(z.moved_out_bytes, 200 * MIB);
    // Pool a third per byte in the sample, half in the cgroup: it saves half.
    let s = 1.0 - (1.0 - per_byte()) * 1.5;
    assert_eq!(z.memory_saved_bytes, (200.0 * MIB as f64 * s).round() as i64);
    // A quarter of the sample: the interval twice as wide relative to the pool.
    let rel = (z.memory_saved_ci[1] - z.memory_saved_ci[0]) as f64 / 2.0 / z.pool_bytes as f64;
    assert!((rel - 2.0 * 0.1).abs() < 1e-3, "{rel}");
}

/// Cold bytes told apart by process compress at their weighted factor, and the note says so.
#[test]
fn the_cold_bytes_compress_at_their_processes_factor() {
    let b = basis(NowSource::Uncompressed);
    let x = OperatingInput {
        cold: Some(curve(&[60], &[300 * MIB], 400 * MIB)),
        this_machine: true,
        ..OperatingInput::default()
    };
    let own = Own { cold: [("lz4".to_string(), 0.5)].into(), ..Own::default() };
    let op = point(&b, PS, Some(&calm()), &x, 0.2, &own);
    assert_eq!(op.compressibility, COLD_BY_PROCESS_NOTE);
    let mut cands = vec![zram(&b)];
    at(&mut cands, &b, &op, PS);
    let cold = cands[0].at_cold_age.unwrap();
    // Pool a third per byte in the sample, a sixth for the cold bytes.
    let s = 1.0 - (1.0 - per_byte()) * 0.5;
    assert_eq!(cold.memory_saved_bytes, (300.0 * MIB as f64 * s).round() as i64);
}

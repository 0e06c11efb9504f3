//! The operating point through the whole lab and its words: a run told this machine's memory
//! is not short saves nothing today, says so first, and gives the cold age beside it; short
//! memory and a cgroup's limit move memory out, and the headline follows.

mod common;

use common::{calm, curve, lab_run, quick};
use zmem_kernel::pressure::{CgroupPressure, Pressure};
use zmem_lab::operating::{Named, OperatingInput, TodayReason};
use zmem_lab::{Kind, PressureReading};
use zmem_render as report;

use common::MIB;

fn run(p: Pressure, operating: OperatingInput) -> zmem_lab::LabReport {
    let opts = zmem_lab::LabOptions {
        pressure: Some(PressureReading { now: p, window: None }),
        operating: OperatingInput { this_machine: true, ..operating },
        ..quick()
    };
    lab_run(1024, 7, &opts)
}

#[test]
fn memory_not_short_saves_nothing_today_and_says_so_first() {
    let r = run(calm(), OperatingInput { cold: Some(curve()), ..OperatingInput::default() });
    let d = &r.decision;
    assert!(matches!(d.kind, Kind::Zram | Kind::Zswap), "{:?}", d.kind);
    let op = d.operating_point.as_ref().expect("an operating point");
    assert_eq!((op.named, &op.today.reason), (Named::Today, &TodayReason::NotShort));
    assert_eq!((d.memory_saved_bytes, d.memory_saved_ci), (0, [0, 0]));
    assert!(d.all_pages_saved_bytes > 0);
    let chosen = d.chosen(&r.candidates).unwrap();
    let cold = chosen.at_cold_age.expect("a cold figure");
    assert_eq!(cold.moved_out_bytes, 28 * MIB / 10);
    assert!(cold.memory_saved_bytes > 0 && cold.memory_saved_bytes < cold.moved_out_bytes as i64);
    let text = report::decision::text(&r);
    let second = text.lines().nth(1).unwrap();
    assert!(second.contains("Memory is not short now (20.0 GiB available, PSI 0.00 %)"), "{text}");
    assert!(second.contains("will hold nothing until it is"), "{text}");
    assert!(second.contains("2.8 MiB has been idle for 1 min"), "{text}");
    assert!(text.contains("at today's pressure: 0.0 MiB moved out"), "{text}");
    assert!(text.contains("every page swapped: saves"), "{text}");
    let html = report::render_html(&r);
    assert!(html.contains("Cold memory by age"), "the cold curve's plot");
    // Sized for the cold age (today moves nothing): 1.25 x 2.8 MiB, one 64 MiB step.
    let size = d.sizing.expect("a size");
    assert_eq!((size.moved_out_bytes, size.disksize_bytes), (28 * MIB / 10, 64 * MIB));
    if d.kind == Kind::Zram {
        assert!(text.contains("size: disksize 64.0 MiB"), "{text}");
        let script = report::decision::apply_script(&r).unwrap();
        assert!(
            script.contains("ZMEM_SIZE_MIB=64") && script.contains("ZMEM_MEM_LIMIT_MIB=64"),
            "{script}"
        );
    }
    // 0.02 MiB/s back of a 1.2 MiB working set is far over 0.2 % a minute.
    assert!(text.contains("over the promotion budget of 0.2 %"), "{text}");
}

#[test]
fn short_memory_and_a_cgroup_limit_move_memory_out() {
    let mut p = calm();
    p.watermarks.free_bytes = 40 * MIB;
    p.inactive_file_bytes = Some(0);
    let r = run(p, OperatingInput::default());
    let d = &r.decision;
    let op = d.operating_point.as_ref().unwrap();
    assert_eq!(op.today.reason, TodayReason::Short);
    assert_eq!(op.today.moved_out_bytes, 30 * MIB);
    let at = d.chosen(&r.candidates).unwrap().at_today;
    assert_eq!(
        (at.memory_saved_bytes, at.memory_saved_ci),
        (d.memory_saved_bytes, d.memory_saved_ci)
    );
    assert!(d.memory_saved_bytes > 0 && d.memory_saved_ci[0] <= d.memory_saved_bytes);
    let text = report::decision::text(&r);
    let second = text.lines().nth(1).unwrap();
    assert!(second.contains("Memory is short now"), "{text}");
    assert!(second.contains("would hold that in") && second.contains("against now)"), "{text}");
    assert!(text.contains("no cold curve was read"), "{text}");

    let mut p = calm();
    p.cgroups.push(CgroupPressure {
        path: "/sys/fs/cgroup/memory/lab".into(),
        version: 1,
        usage_bytes: Some(600 * MIB),
        max_bytes: Some(1 << 30),
        high_bytes: None,
        refaults: Default::default(),
        psi: None,
        anon_bytes: Some(550 * MIB),
        inactive_file_bytes: Some(10 * MIB),
    });
    let limits = vec![("/sys/fs/cgroup/memory/lab".to_string(), 400 * MIB)];
    let r = run(p, OperatingInput { cgroup_limits: limits, ..OperatingInput::default() });
    let d = &r.decision;
    assert_eq!(d.operating_point.as_ref().unwrap().today.moved_out_bytes, 190 * MIB);
    let text = report::decision::text(&r);
    assert!(
        text.contains("the asked limit of 400.0 MiB, so its reclaim moves 190.0 MiB out"),
        "{text}"
    );
}

/// Pages that are not this machine's: its pressure says nothing of them, and the headline is
/// every page swapped, as before the operating point.
#[test]
fn pages_from_elsewhere_are_figured_with_every_page_swapped() {
    let opts = zmem_lab::LabOptions {
        pressure: Some(PressureReading { now: calm(), window: None }),
        ..quick()
    };
    let r = lab_run(1024, 7, &opts);
    let d = &r.decision;
    assert_eq!(d.operating_point.as_ref().unwrap().named, Named::AllPages);
    assert_eq!(d.memory_saved_bytes, d.all_pages_saved_bytes);
    assert!(d.memory_saved_bytes > 0);
    let text = report::decision::text(&r);
    assert!(text.contains("The pages are not this machine's"), "{text}");
}

/// An idle heap's trickle (a page every 15 s of a 1.2 MiB working set, several percent of it a
/// minute) is within the promotion budget, and the words say why.
#[test]
fn a_trickle_under_one_page_a_second_is_said_to_be_within_the_budget() {
    let mut c = curve();
    c.returned_bytes_per_sec = vec![273.0, 273.0];
    let r = run(calm(), OperatingInput { cold: Some(c), ..OperatingInput::default() });
    let k = r.decision.operating_point.as_ref().and_then(|o| o.cold.as_ref()).expect("T read");
    assert!(k.promotion_under_floor && !k.over_promotion_budget);
    let text = report::decision::text(&r);
    assert!(text.contains("0.07 pages a second: under one, within the budget"), "{text}");
    assert!(!text.contains("over the promotion budget"), "{text}");
}

/// The only process, its own idle memory coming back over the budget, is left out: its bytes
/// move nothing, and the rest (nothing) is not over the budget.
#[test]
fn a_process_over_the_budget_on_its_own_moves_nothing() {
    use zmem_kernel::cold::ProcessCold;
    let mut c = curve();
    c.per_process =
        vec![ProcessCold::steady(77, "busy", c.anon_bytes, c.cold_bytes_at_age.clone())];
    let r = run(calm(), OperatingInput { cold: Some(c), ..OperatingInput::default() });
    let k = r.decision.operating_point.as_ref().and_then(|o| o.cold.as_ref()).expect("T read");
    assert_eq!(k.left_out.iter().map(|p| p.pid).collect::<Vec<_>>(), [77]);
    assert_eq!(k.cold_bytes, 0, "its bytes are left out");
    assert!(!k.over_promotion_budget, "{k:?}");
}

/// With proactive reclaim, the processes left out by the budget are named as never paged out,
/// and the agent excludes them.
#[test]
fn the_proactive_words_name_the_processes_left_out() {
    use zmem_kernel::cold::ProcessCold;
    let p = |pid: u32, comm: &str, anon: u64, cold: [u64; 3]| {
        ProcessCold::steady(pid, comm, anon, cold.to_vec())
    };
    let heap = p(10, "heap", 101 * MIB, [100 * MIB; 3]);
    let busy = p(77, "busy", 2 * MIB, [2 * MIB, 2 * MIB, MIB]);
    let mut c = curve();
    c.anon_bytes = heap.anon_bytes + busy.anon_bytes;
    c.cold_bytes_at_age =
        (0..3).map(|i| heap.cold_bytes_at_age[i] + busy.cold_bytes_at_age[i]).collect();
    c.returned_bytes_per_sec = vec![0.0, MIB as f64 / 30.0];
    c.per_process = vec![heap, busy];
    let opts = zmem_lab::LabOptions {
        pressure: Some(PressureReading { now: calm(), window: None }),
        operating: OperatingInput {
            this_machine: true,
            cold: Some(c),
            ..OperatingInput::default()
        },
        proactive: zmem_lab::proactive::Input {
            abilities: Some(zmem_lab::proactive::Abilities::default()),
            ..zmem_lab::proactive::Input::default()
        },
        ..quick()
    };
    let r = lab_run(1024, 7, &opts);
    let p =
        r.decision.proactive.as_ref().unwrap_or_else(|| panic!("{:?}", r.decision.proactive_none));
    assert_eq!(p.moves_bytes, 100 * MIB);
    assert_eq!(p.agent.as_ref().expect("the agent").exclude.pids, [77]);
    let text = report::decision::text(&r);
    assert!(text.contains("never paged out, their own idle memory coming back over the promotion budget: busy (pid 77, 1.0 MiB idle)"), "{text}");
    // Nothing of the heap comes back, so the agent holds nothing back: no words for it.
    assert_eq!(p.held_back_bytes, 0);
    assert!(!text.contains("hot mark"), "{text}");
    let mut r = r;
    let q = r.decision.proactive.as_mut().expect("attached");
    (q.held_back_bytes, q.held_back_saved_bytes) = (21 * MIB, 14 * MIB as i64);
    let text = report::decision::text(&r);
    assert!(
        text.contains(
            "up to 21.0 MiB once it has run 8 times T: the saving's interval reaches 14.0 MiB lower"
        ),
        "{text}"
    );
}

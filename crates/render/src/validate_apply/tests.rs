use super::*;
use zmem_validate::apply::report::{Predicted, Realized, Within, ZramFigures};

const MIB: u64 = 1 << 20;

fn report() -> ApplyReport {
    let samples: Vec<Sample> = (0..=60)
        .step_by(5)
        .map(|t| Sample {
            t_secs: t as f64,
            moved_out_bytes: (t as u64).min(30) * 20 * MIB,
            pool_bytes: (t as u64).min(30) * 5 * MIB,
            ..Sample::default()
        })
        .collect();
    ApplyReport {
        decision_kind: "zram".into(),
        config: "zram lz4".into(),
        mechanism: Some("process_madvise".into()),
        cold_age_secs: Some(60),
        seconds_asked: 300,
        seconds: 300.0,
        ended_early: None,
        events: vec!["at 0:20 process 42 exited\u{1b}[2J".into()],
        changes: vec!["made /dev/zram1: lz4, disksize 640 MiB".into()],
        restored: true,
        differs: vec![],
        predicted: Predicted {
            memory_saved_bytes: 430 * MIB as i64,
            memory_saved_ci: [380 * MIB as i64, 480 * MIB as i64],
            moved_out_bytes: 540 * MIB,
            swap_ins_per_sec: 2.8,
            operating_point: "cold_age".into(),
            note: None,
        },
        realized: Realized {
            memory_saved_bytes: 412 * MIB as i64,
            moved_out_bytes: 520 * MIB,
            moved_out_max_bytes: 600 * MIB,
            at_secs: 300.0,
            swap_ins_per_sec: 3.1,
            swap_ins_from_secs: 60.0,
            psi_some_avg60: 0.02,
            psi_some_avg60_max: 0.05,
            cpu_seconds_per_second: 0.003,
            cpu_note: "note".into(),
            watched_swapped_bytes: None,
            zram: Some(ZramFigures { orig_data_size: 520 * MIB, ..ZramFigures::default() }),
            zswap: None,
            agent: None,
        },
        samples,
        within: Within {
            saved_within_10_percent: true,
            saved_inside_ci: true,
            swap_ins_within_25_percent: true,
            psi_below_0_1: true,
        },
    }
}

#[test]
fn the_first_line_says_realized_against_predicted() {
    assert_eq!(
        headline(&report()),
        "Applied zram lz4 with proactive reclaim (process_madvise) at T = 60 s for 5 min: saved \
         412.0 MiB, predicted 430.0 MiB [380.0, 480.0] (0.96, inside); moved out 520.0 MiB, \
         predicted 540.0 MiB; 3.10 swap-ins/s, predicted 2.80; PSI some avg60 0.02 % (under \
         0.1 %)."
    );
    let mut early = report();
    early.ended_early = Some("stopped by a signal".into());
    early.seconds = 42.0;
    early.mechanism = None;
    early.cold_age_secs = None;
    assert!(
        headline(&early)
            .starts_with("Applied zram lz4 without proactive reclaim for 0:42 of 5 min:")
    );
}

#[test]
fn the_text_has_the_table_the_changes_and_the_verdict() {
    let t = text(&report());
    assert!(!t.contains('\u{1b}'), "control characters removed");
    assert!(t.contains("memory saved") && t.contains("0.96") && t.contains("inside the interval"));
    assert!(t.contains("Changes made:\n  - made /dev/zram1"));
    assert!(t.contains("Events:\n  - at 0:20 process 42 exited"));
    assert!(t.ends_with("The machine is as it was.\n"), "{t}");
    let mut other = report();
    other.differs = vec!["zram10 exists and did not (not this run's)".into()];
    assert!(text(&other).contains("Everything this run made is undone; the machine differs"));
    let mut left = report();
    left.restored = false;
    left.differs = vec!["zram1 exists and did not".into()];
    assert!(text(&left).ends_with("The machine is NOT as it was: zram1 exists and did not\n"));
}

#[test]
fn the_page_escapes_and_draws_both_lines() {
    let mut r = report();
    r.changes.push("<script>alert(1)</script>".into());
    let h = html(&r);
    assert!(!h.contains("<script>") && h.contains("&lt;script&gt;"));
    assert_eq!(h.matches("<polyline").count(), 2);
    assert!(h.contains("stroke-dasharray") && h.contains("predicted saving"));
    assert!(h.contains(PLOT_COLORS[0]) && h.contains(PLOT_COLORS[1]));
    let back: ApplyReport = serde_json::from_str(&json(&r)).unwrap();
    assert_eq!(back, r);
}

#[test]
fn files_are_written_where_asked() {
    let dir = zmem_files::PrivateTempDir::new("zmem-apply-render").unwrap();
    let (j, h) = (dir.path().join("a.json"), dir.path().join("a.html"));
    write_files(&report(), Some(&j), Some(&h)).unwrap();
    assert!(std::fs::read_to_string(&j).unwrap().contains("\"decision_kind\": \"zram\""));
    assert!(std::fs::read_to_string(&h).unwrap().starts_with("<!DOCTYPE html>"));
}

//! `zmem lab --trace`: the replays run the trace given, and the report (text, JSON, HTML) says
//! which trace it was.

use zmem_lab::{self as lab, LabOptions, TraceSource, evidence};
use zmem_pages::trace::{Access, Op, Trace};
use zmem_render as report;

mod common;

fn run(trace: Option<(Vec<zmem_pages::access::Access>, TraceSource)>) -> lab::LabReport {
    common::lab_run(256, 3, &LabOptions { trace, ..common::quick() })
}

#[test]
fn a_given_trace_is_replayed_and_named() {
    // Writes cycling over every page of a 512-page set, sampled to the lab's 256: RAM for a
    // quarter or half of the pages must swap.
    let t = Trace {
        page_count: 512,
        file_pages: 0,
        accesses: (0..3000u32)
            .map(|i| Access { time_ns: u64::from(i) * 1000, page: i % 512, op: Op::Write })
            .collect(),
    };
    let accesses = evidence::fit_trace(&t, 512, 256).unwrap();
    assert!(accesses.iter().all(|a| a.page < 256));
    let source = TraceSource { kind: "file".into(), detail: "cycle.trace".into(), accesses: 3000 };
    let r = run(Some((accesses, source.clone())));
    assert_eq!(r.trace, source);
    for row in &r.swap {
        assert_eq!(row.accesses, 3000, "{}", row.swap);
        assert!(row.swap_outs > 0, "{}: a cycle over all pages swaps", row.swap);
        assert!((row.trace_secs - 2.999e-3).abs() < 1e-9, "{}", row.trace_secs);
    }
    let text = report::render_summary(&r);
    assert!(text.contains("(file trace, 3000 accesses;"), "{text}");
    assert!(report::render_html(&r).contains("Trace: file (3000 accesses): cycle.trace"));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["trace"]["kind"], "file");

    // Without one: the generated trace, and the report says so.
    let g = run(None);
    assert_eq!(g.trace.kind, "generated");
    assert_eq!(g.trace.accesses, g.swap[0].accesses);
    assert!(report::render_summary(&g).contains("(generated trace,"));
}

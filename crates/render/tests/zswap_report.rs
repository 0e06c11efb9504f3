//! The lab report with zswap's advice: the JSON document has `now.zswap`, zswap candidates of
//! kind `zswap` beside the zram ones in the one `candidates` list, and one decision over all
//! of them (no zram-or-zswap verdict beside it), and validates against
//! docs/lab-report.schema.json; the summary and the apply script carry the zswap lines.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use zmem_kernel::zswap_state::ZswapState;
use zmem_lab::decision::{Kind, Reason};
use zmem_lab::zswap::{SwapAreaNow, ZswapInput, ZswapLive};
use zmem_lab::{self as lab, Config, LabOptions, NoProgress, NowSource, Source};
use zmem_render as report;

mod common;

fn live() -> ZswapLive {
    let debugfs: BTreeMap<String, u64> =
        [("stored_pages", 900), ("pool_total_size", 900 * 1200), ("written_back_pages", 0)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
    ZswapLive {
        present: true,
        offered: vec!["lzo".into(), "lzo-rle".into()],
        state: ZswapState {
            params: BTreeMap::new(),
            enabled: true,
            module: zmem_lab::ZswapParams::default(),
            debugfs: Some(debugfs),
            debugfs_note: None,
            meminfo_zswap_bytes: Some(900 * 1200),
            meminfo_zswapped_bytes: Some(900 * 4096),
            vmstat: BTreeMap::new(),
            cgroups: Vec::new(),
            page_size: 4096,
            notes: Vec::new(),
        },
        swaps: vec![SwapAreaNow {
            filename: "/swapfile".into(),
            kind: "file".into(),
            size_bytes: 1 << 30,
            used_bytes: 900 * 4096,
            priority: -2,
        }],
        swappiness: Some(60),
        page_cluster: Some(3),
        mem_total_bytes: Some(1 << 30),
        swap_file_room: None,
        memory_cgroup_version: None,
    }
}

fn report() -> lab::LabReport {
    report_of(1024, "test set")
}

/// The lab on `n` generated pages with zswap's advice (a fake live zswap).
fn report_of(n: usize, detail: &str) -> lab::LabReport {
    let set = zmem_pages::generate::generate(zmem_pages::generate::Kind::Mixed, n, 4096, 7)
        .expect("generator");
    let source = Source {
        kind: "captured".into(),
        detail: detail.into(),
        pages: set.len() as u64,
        page_size: 4096,
        fallback_reason: None,
    };
    let opts = LabOptions {
        min_time: Duration::ZERO,
        policies: lab::candidates("lzo-rle")[..3].to_vec(),
        zswap: Some(ZswapInput { live: live(), after: None, secs: 0.0, weights: None }),
        ..LabOptions::default()
    };
    lab::run(set.bytes(), source, &opts, &NoProgress).expect("lab run")
}

/// docs/lab-report.schema.json, compiled.
fn schema_validator() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/lab-report.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

/// The document passes docs/lab-report.schema.json.
fn assert_valid(json: &serde_json::Value) {
    let errors: Vec<String> = schema_validator().iter_errors(json).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn the_zswap_document_validates_and_carries_now_candidates_and_one_decision() {
    let r = report();
    let json = report::json::lab_report(&r);
    assert_valid(&json);

    // now.zswap with the live counters and the prediction, though no zram device is live.
    let z = &json["now"]["zswap"];
    assert_eq!(z["debugfs"]["stored_pages"], 900);
    assert_eq!(z["stored_pages"], 900);
    assert!(z["prediction"]["stored_pages"].as_u64().unwrap() > 0);
    assert!(json["now"].get("config").is_none());
    // zram and zswap candidates side by side, zram's first, in one list; no "none": zswap
    // runs now.
    let cands = json["candidates"].as_array().unwrap();
    let kinds = |k: &str| cands.iter().filter(|c| c["kind"] == k).count();
    assert_eq!(kinds("zram"), 3);
    assert_eq!(kinds("zswap"), 2 * 3 * 2 + 4, "12 replayed, lz4/lz4hc/zstd/deflate unavailable");
    assert_eq!(kinds("none"), 0);
    assert!(cands[..3].iter().all(|c| c["kind"] == "zram"));
    assert!(cands.iter().any(|c| c["kind"] == "zswap" && c["available"] == false));
    // The basis: the pool of the zswap configuration that runs now (lzo, 20 %, shrinker off,
    // accept 90: the live parameters), the one candidate that runs now.
    let now: Vec<_> = r.candidates.iter().filter(|c| c.runs_now).collect();
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now[0].name, "zswap lzo max_pool_percent=20 shrinker=off");
    let b = &r.decision.basis;
    assert_eq!((b.now_config.as_str(), b.now_source), (now[0].name.as_str(), NowSource::LiveZswap));
    assert_eq!(b.now_bytes, now[0].pool_bytes);
    assert_eq!(json["decision"]["now_config"], now[0].name.as_str());
    assert_eq!(json["decision"]["now_source"], "live_zswap");
    // The schema rejects a zswap candidate without its device writes.
    let mut broken = json.clone();
    let i = cands.iter().position(|c| c["kind"] == "zswap" && c["available"] == true).unwrap();
    broken["candidates"][i]["device"].as_object_mut().unwrap().remove("device_write_bytes_per_sec");
    assert!(!schema_validator().is_valid(&broken));

    // One answer: the decision, judged over zram's and zswap's candidates alike; no verdict,
    // no recommendation, no zswap candidates or apply lines of zswap's own.
    for gone in ["verdict", "recommendation"] {
        assert!(json.get(gone).is_none(), "{gone}: {}", json[gone]);
    }
    for gone in ["verdict", "candidates", "apply", "now"] {
        assert!(json["zswap"].get(gone).is_none(), "zswap.{gone}: {}", json["zswap"]);
    }
    let d = &r.decision;
    assert!(matches!(d.kind, Kind::Zram | Kind::Zswap | Kind::Keep), "{d:?}");
    assert!(!matches!(d.reason, Reason::TooFewPages { .. } | Reason::NothingRuns), "{d:?}");
    let chosen = d.chosen(&r.candidates).expect("a chosen candidate");
    assert_eq!(chosen.name, d.config);
    assert_eq!(json["decision"]["chosen"], d.chosen.unwrap());
    assert_eq!(json["candidates"][d.chosen.unwrap()]["name"], json["decision"]["config"]);
    // Its kind is its candidate's: zram for a zram one, zswap for a zswap one, keep for what
    // runs now.
    match (&chosen.config, chosen.runs_now) {
        (_, true) => assert_eq!(d.kind, Kind::Keep),
        (Config::Zswap { .. }, false) => assert_eq!(d.kind, Kind::Zswap),
        (Config::Zram { .. }, false) => assert_eq!(d.kind, Kind::Zram),
        (Config::None, false) => panic!("none listed while zswap runs"),
    }
    assert!(!report::decision::reason_words(d).is_empty());
    // zswap's stack follows the decision: zswap's when the decision runs zswap.
    let st = &r.zswap.as_ref().unwrap().stack;
    assert_eq!(st.zswap, matches!(chosen.config, Config::Zswap { .. }));
    // The script applies the decision only; zswap's lines are no second answer.
    let d = &json["decision"];
    let script = report::render_apply_script(&r).expect("an apply script");
    assert_eq!(d["apply_script"], script.as_str());
    match d["kind"].as_str().unwrap() {
        "zswap" => {
            assert!(script.contains("zswap_set enabled Y"), "{script}");
            assert!(script.contains("/etc/tmpfiles.d/zmem-zswap.conf"), "{script}");
            assert!(!script.contains("zram-generator.conf.d/60-zmem.conf\n  sed"), "{script}");
            let p = common::params_of(chosen);
            assert!(
                script.contains(&format!("\nZMEM_COMPRESSOR={}\n", p.compressor))
                    && script
                        .contains(&format!("\nZMEM_MAX_POOL_PERCENT={}\n", p.max_pool_percent)),
                "{script}"
            );
        }
        "zram" => {
            assert!(!script.contains("zswap_set enabled Y"), "{script}");
            assert!(script.contains("zram-generator.conf.d/60-zmem.conf"), "{script}");
        }
        "keep" => {
            assert!(
                script.contains("Nothing to change") && script.ends_with("exit 0\n"),
                "{script}"
            );
            assert_eq!(d["undo_script"], "");
        }
        other => panic!("a decision for {} pages: {other}", r.source.pages),
    }
    assert!(!script.contains("vm.page-cluster"), "{script}");
    let summary = report::render_summary(&r);
    assert!(
        summary.contains("The swap stack for the decision")
            && summary.contains("Every candidate against now"),
        "{summary}"
    );
    // The zswap candidates are rows of the one table, not a table of their own.
    let available = r.candidates.iter().find(|c| c.available && c.device.is_some()).unwrap();
    assert!(summary.lines().any(|l| l.contains(&available.name)), "{summary}");
    assert_eq!(
        summary.matches("saved MiB").count(),
        2,
        "one table's header and legend:\n{summary}"
    );
    let html = report::render_html(&r);
    assert!(html.contains("zswap and the swap stack"));
    assert!(html.contains(&format!("<td>{}", available.name)));
    common::assert_one_answer(&r, &summary, &html);
}

/// `n` pages, with zswap's advice: below the lab's minimum, so no decision.
fn tiny(n: usize) -> lab::LabReport {
    report_of(n, "tiny")
}

/// A tiny run made to look like advice (a zram decision for its first candidate), for the
/// tables' layout.
fn advice(n: usize) -> lab::LabReport {
    let mut r = tiny(n);
    common::decide_for(&mut r, 0);
    r
}

/// The table of `text` whose header line contains every label of `labels` (in order): its
/// header and rows (up to the first line not starting with `indent` or empty).
fn table<'a>(text: &'a str, labels: &[&str]) -> (&'a str, Vec<&'a str>) {
    let mut lines = text.lines().skip_while(|l| {
        let mut from = 0;
        !labels.iter().all(|x| match l[from..].find(x) {
            Some(i) => {
                from += i + x.len();
                true
            }
            None => false,
        })
    });
    let head = lines.next().unwrap_or_else(|| panic!("no table {labels:?} in\n{text}"));
    let rows = lines.take_while(|l| !l.trim().is_empty() && !l.starts_with("  * runs now"));
    (head, rows.collect())
}

/// Where each label ends in the header (searching from the previous one's end).
fn ends(head: &str, labels: &[&str]) -> Vec<usize> {
    let mut from = 0;
    labels
        .iter()
        .map(|x| {
            from += head[from..].find(x).unwrap() + x.len();
            from
        })
        .collect()
}

/// Every row has a cell ending where each right-aligned header label ends, and its name
/// starting where the name column's label starts.
fn assert_aligned(head: &str, rows: &[&str], name: &str, right: &[&str]) {
    let start = head.find(name).unwrap();
    let ends = ends(head, right);
    for row in rows {
        let b = row.as_bytes();
        assert!(b[start] != b' ' && b[start - 1] == b' ', "name column moved:\n{head}\n{row}");
        for &e in &ends {
            assert!(
                b[e - 1] != b' ' && (e == b.len() || b[e] == b' '),
                "a column ending at {e} moved:\n{head}\n{row}"
            );
        }
    }
}

/// Issue 42: a long name no longer pushes its row's columns right, in the one table of every
/// candidate (zram's and zswap's rows alike); the HTML tables wrap long names within their box.
#[test]
fn tables_keep_their_columns_whatever_the_names_lengths() {
    let mut r = advice(3);
    let long = "zram lzo-rle + recompress zstd (idle, huge) every 3600 s, writeback off";
    r.candidates[0].name = long.into();
    let i = r.candidates.iter().position(|c| c.available && c.device.is_some()).unwrap();
    let long_zswap = "zswap lzo-rle max_pool_percent=10 shrinker=off accept=90 x";
    r.candidates[i].name = long_zswap.into();
    let text = report::render_summary(&r);

    let right = [
        "saved MiB",
        "CPU %",
        "dCPU %",
        "p50 us",
        "p99 us",
        "dp99 us",
        "1st pass s",
        "hits %",
        "dev MB/s",
    ];
    let (head, rows) = table(&text, &["candidate", "saved MiB", "1st pass s", "dev MB/s"]);
    assert_eq!(rows.len(), r.candidates.len(), "{text}");
    assert!(rows.iter().any(|l| l.contains(long)));
    assert!(rows.iter().any(|l| l.contains(long_zswap)));
    assert_aligned(head, &rows, "candidate", &right);
    // No second table of zswap's candidates.
    assert!(!text.lines().any(|l| l.trim_start().starts_with("zswap ") && l.contains("saved MiB")));

    let html = report::render_html(&r);
    let css = &html[html.find("<style>").unwrap()..html.find("</style>").unwrap()];
    assert!(
        css.contains("table-layout:fixed")
            || css.contains("td:first-child{text-align:left;overflow-wrap:anywhere"),
        "{css}"
    );
}

/// Issue 42: "fits" is within both budgets, as its legend says; whether this kernel runs the
/// candidate is the "available" column, with the reason in the notes.
#[test]
fn fits_is_the_budgets_and_available_a_column_of_its_own() {
    let mut r = advice(3);
    let i = r.candidates.iter().position(|c| c.within_budgets).expect("a candidate fits");
    let why = "this kernel offers no lzo-rle to zram (test)".to_string();
    let c = &mut r.candidates[i];
    // As the lab marks an unavailable candidate.
    c.unavailable(why.clone(), vec!["CONFIG_TEST".into()]);
    assert!(!c.within_budgets && c.over_budget == [lab::OverBudget::Unavailable]);
    let name = c.name.clone();

    let text = report::render_summary(&r);
    let labels = ["candidate", "saved MiB", "dev MB/s", "fits", "available"];
    let (head, rows) = table(&text, &labels);
    let e = ends(head, &labels);
    let row = rows[i];
    assert!(row.contains(&name), "{row}");
    assert_eq!(&row[e[2] + 1..e[3]].trim(), &"yes", "fits:\n{head}\n{row}");
    assert_eq!(&row[e[3] + 1..].trim(), &"no", "available:\n{head}\n{row}");
    assert!(text.contains(&format!("{name} is not available: {why}")), "{text}");
    assert!(text.contains("  available: "), "the legend says what the column is:\n{text}");

    let html = report::render_html(&r);
    assert!(html.contains("<th>fits</th><th>available</th>"));
    let table = &html[html.find("<th>available</th></tr>").unwrap()..];
    let tr = table.split("</tr>").nth(i + 1).unwrap();
    assert!(tr.starts_with(&format!("<tr><td>{name}")), "{tr}");
    assert!(tr.ends_with("<td>yes</td><td>no</td>"), "{tr}");
    assert!(html.contains(&format!("<li>{name} is not available: {why}</li>")));
}

/// Issue 42: input too small to advise on (3 pages, fewer than zmem_lab::sample::MIN_PAGES)
/// gets no decision in any format, zram or zswap (before: the JSON and HTML still said zram
/// or zswap), nor the swap stack that would follow from one.
#[test]
fn a_tiny_input_gets_no_decision_in_any_format() {
    let r = tiny(3);
    let d = &r.decision;
    assert_eq!(d.kind, Kind::None, "{d:?}");
    assert!(matches!(d.reason, Reason::TooFewPages { measured_pages: 3, .. }), "{d:?}");
    let json = report::json::lab_report(&r);
    assert_valid(&json);
    let jd = &json["decision"];
    assert_eq!(jd["kind"], "none", "{jd}");
    assert_eq!(jd["config"], "none", "{jd}");
    assert!(jd["chosen"].is_null() && jd["runner_up"].is_null(), "{jd}");
    assert!(jd["swap_behind"].is_null(), "{jd}");
    assert_eq!(jd["reason"]["kind"], "too_few_pages", "{jd}");
    assert_eq!(jd["undo_script"], "");
    assert!(json.get("verdict").is_none() && json.get("recommendation").is_none());
    assert!(json["zswap"].get("apply").is_none(), "{}", json["zswap"]);
    assert!(json["zswap"].get("verdict").is_none(), "{}", json["zswap"]);

    let text = report::render_summary(&r);
    assert!(text.contains("Decision: none. the input is too small"), "{text}");
    let html = report::render_html(&r);
    common::assert_one_answer(&r, &text, &html);
    assert!(!text.contains("vm.swappiness"), "a stack with no decision:\n{text}");
    assert!(!html.contains("vm.swappiness"), "a stack with no decision");
    let script = report::render_apply_script(&r).expect("an apply script");
    assert!(!script.contains("zswap_set") && script.ends_with("exit 1\n"), "{script}");
}

/// Issue 42: the HTML apply block wraps its long lines within its box.
#[test]
fn the_html_apply_block_fits_its_box() {
    let html = report::render_html(&advice(3));
    assert!(html.contains("<details><summary>apply.sh"), "no apply block");
    assert!(html.contains("<pre>"));
    let css = &html[html.find("<style>").unwrap()..html.find("</style>").unwrap()];
    assert!(css.contains("pre{white-space:pre-wrap;overflow-wrap:anywhere}"), "{css}");
}

/// A zswap decision sized at the cold age says its pool against max_pool_percent of RAM.
#[test]
fn a_zswap_decision_says_its_pool_against_max_pool_percent() {
    let mut r = report();
    let i = r
        .candidates
        .iter()
        .position(|c| matches!(c.config, lab::Config::Zswap { .. }))
        .expect("a zswap candidate");
    common::decide_for(&mut r, i);
    let c = &mut r.candidates[i];
    // 600 MiB moved out in a 300 MiB pool: 29.3 % of the 1 GiB machine.
    c.at_cold_age = Some(lab::operating::AtPoint {
        moved_out_bytes: 600 << 20,
        pool_bytes: 300 << 20,
        memory_saved_bytes: 300 << 20,
        memory_saved_ci: [290 << 20, 310 << 20],
    });
    // Figured at today's point (not every page swapped), so the decision is sized.
    let mut op = lab::operating::point(
        &r.decision.basis,
        4096,
        None,
        &lab::operating::OperatingInput::default(),
        0.2,
        &lab::operating::Own::default(),
    );
    op.named = lab::operating::Named::Today;
    r.decision.sizing = lab::operating::size(
        &r.candidates[i],
        &op,
        r.zswap.as_ref().and_then(|z| z.live.mem_total_bytes),
    );
    let max = common::params_of(&r.candidates[i]).max_pool_percent;
    let text = report::decision::text(&r);
    let want = "zswap's pool would hold 600.0 MiB in 300.0 MiB (29.3 % of RAM); ";
    assert!(text.contains(want), "{text}");
    // 29.3 % doubled for headroom: 59 %, over the judged percent, which the decision raises.
    assert!(max < 59, "the fixture's candidate is under the pool's share");
    let raised = format!("max_pool_percent is set to 59 % (the {max} % judged, raised");
    assert!(text.contains(&raised), "{text}");
    assert_eq!(r.decision.sizing.and_then(|s| s.max_pool_percent), Some(59));
    let script = report::decision::apply_script(&r).expect("a script");
    assert!(script.contains("ZMEM_MAX_POOL_PERCENT=59"), "{script}");
}

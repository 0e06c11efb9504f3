//! The lab report with zswap's advice: the JSON document has `now.zswap`, zswap candidates of
//! kind `zswap` beside the zram ones, and a verdict, and validates against
//! docs/lab-report.schema.json; the summary and the apply script carry the zswap lines.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use zmem_kernel::zswap_state::ZswapState;
use zmem_lab::zswap::{SwapAreaNow, ZswapInput, ZswapLive};
use zmem_lab::{self as lab, LabOptions, NoProgress, Source};
use zmem_render as report;

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
        zswap: Some(ZswapInput { live: live(), after: None, secs: 0.0, pids: None }),
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
fn the_zswap_document_validates_and_carries_now_candidates_and_verdict() {
    let r = report();
    let json = report::json::lab_report(&r);
    assert_valid(&json);

    // now.zswap with the live counters and the prediction, though no zram device is live.
    let z = &json["now"]["zswap"];
    assert_eq!(z["debugfs"]["stored_pages"], 900);
    assert_eq!(z["stored_pages"], 900);
    assert!(z["prediction"]["stored_pages"].as_u64().unwrap() > 0);
    assert!(json["now"].get("config").is_none());
    // zram and zswap candidates side by side.
    let cands = json["candidates"].as_array().unwrap();
    let kinds = |k: &str| cands.iter().filter(|c| c["kind"] == k).count();
    assert_eq!(kinds("zram"), 3);
    assert_eq!(kinds("zswap"), 2 * 3 * 2 + 4, "12 replayed, lz4/lz4hc/zstd/deflate unavailable");
    assert!(cands.iter().any(|c| c["kind"] == "zswap" && c["available"] == false));
    assert!(["zram", "zswap"].contains(&json["verdict"]["choice"].as_str().unwrap()));
    assert!(!json["verdict"]["reason"].as_str().unwrap().is_empty());
    // The schema rejects a zswap candidate without its device writes.
    let mut broken = json.clone();
    let i = cands.iter().position(|c| c["kind"] == "zswap").unwrap();
    broken["candidates"][i].as_object_mut().unwrap().remove("device_write_bytes_per_sec");
    assert!(!schema_validator().is_valid(&broken));

    // One answer: the verdict says what the decision says.
    let kind = json["decision"]["kind"].as_str().unwrap();
    if kind != "keep" {
        assert_eq!(json["verdict"]["choice"], kind);
    }
    assert_eq!(json["verdict"]["config"], json["decision"]["config"]);
    // The script applies the decision only; zswap's lines are no second answer.
    assert!(json["zswap"].get("apply").is_none(), "{}", json["zswap"]);
    let d = &json["decision"];
    let script = report::render_apply_script(&r).expect("an apply script");
    assert_eq!(d["apply_script"], script.as_str());
    match d["kind"].as_str().unwrap() {
        "zswap" => {
            assert!(script.contains("zswap_set enabled Y"), "{script}");
            assert!(script.contains("/etc/tmpfiles.d/zmem-zswap.conf"), "{script}");
            assert!(!script.contains("zram-generator.conf.d/60-zmem.conf\n  sed"), "{script}");
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
    assert!(summary.contains("zram or zswap:") && summary.contains("Candidates"), "{summary}");
    let html = report::render_html(&r);
    assert!(html.contains("zram or zswap:"));
}

/// `n` pages, with zswap's advice: below the lab's minimum, so uncertain.
fn tiny(n: usize) -> lab::LabReport {
    report_of(n, "tiny")
}

/// A tiny run made to look like advice, for the tables' layout.
fn advice(n: usize) -> lab::LabReport {
    let mut r = tiny(n);
    r.recommendation.uncertain = false;
    r.recommendation.uncertain_reason = None;
    let v = &mut r.zswap.as_mut().unwrap().verdict;
    v.choice = zmem_lab::zswap::VerdictKind::Zram;
    v.config = format!("zram {}", r.recommendation.config);
    v.reason = "test".into();
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
    let rows = lines.take_while(|l| !l.trim().is_empty() && !l.starts_with("  * now"));
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
        if row.contains("unavailable:") {
            continue;
        }
        for &e in &ends {
            assert!(
                b[e - 1] != b' ' && (e == b.len() || b[e] == b' '),
                "a column ending at {e} moved:\n{head}\n{row}"
            );
        }
    }
}

/// Issue 42: a long name no longer pushes its row's columns right, in the change-from-now
/// table and in zswap's candidates; the HTML tables wrap long names within their box.
#[test]
fn tables_keep_their_columns_whatever_the_names_lengths() {
    let mut r = advice(3);
    let long = "lzo-rle + recompress zstd (idle, huge) every 3600 s, writeback off";
    r.candidates[0].name = long.into();
    let z = r.zswap.as_mut().unwrap();
    let i = z.candidates.iter().position(|c| c.available).unwrap();
    z.candidates[i].name = "zswap lzo-rle max_pool_percent=10 shrinker=off accept=90 x".into();
    let text = report::render_summary(&r);

    let right = ["saved MiB", "CPU %", "dCPU %", "p50 us", "p99 us", "dp99 us", "1st pass s"];
    let (head, rows) = table(&text, &["candidate", "saved MiB", "1st pass s"]);
    assert_eq!(rows.len(), r.candidates.len(), "{text}");
    assert!(rows.iter().any(|l| l.contains(long)));
    assert_aligned(head, &rows, "candidate", &right);

    let right = ["saved MiB", "CPU %core", "p50 us", "p99 us", "hits %", "dev MB/s"];
    let (head, rows) = table(&text, &["zswap", "saved MiB", "dev MB/s"]);
    assert_eq!(rows.len(), r.zswap.as_ref().unwrap().candidates.len(), "{text}");
    assert_aligned(head, &rows, "zswap", &right);

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
    c.available = false;
    c.within_budgets = false;
    c.over_budget.push(why.clone());
    c.unavailable_reason = Some(why.clone());
    let name = c.name.clone();

    let text = report::render_summary(&r);
    let labels = ["candidate", "saved MiB", "1st pass s", "fits", "available"];
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
/// gets no zram-or-zswap verdict in any format (before: the JSON and HTML still said zram or
/// zswap).
#[test]
fn a_tiny_input_gets_no_verdict_in_any_format() {
    let r = tiny(3);
    assert!(r.recommendation.uncertain);
    let json = report::json::lab_report(&r);
    assert_valid(&json);
    let v = &json["verdict"];
    assert_eq!(v["choice"], "none", "{v}");
    assert!(v["reason"].as_str().unwrap().contains("too small"), "{v}");
    assert!(v["zram"].is_null() && v["zswap"].is_null(), "{v}");
    assert!(json["zswap"].get("apply").is_none(), "{}", json["zswap"]);
    assert_eq!(json["decision"]["kind"], "none");

    let text = report::render_summary(&r);
    assert!(!text.contains("zram or zswap:"), "{text}");
    assert!(text.contains("Recommendation: none, too uncertain"), "{text}");
    let html = report::render_html(&r);
    assert!(html.contains("<h2>zram or zswap: no verdict</h2>"));
    assert!(!html.contains("zram or zswap: zram") && !html.contains("zram or zswap: zswap"));
    assert!(!html.contains("vm.swappiness"));
    let script = report::render_apply_script(&r).expect("an apply script");
    assert!(!script.contains("zswap_set") && script.ends_with("exit 1\n"), "{script}");
}

/// Issue 42: the HTML apply block wraps its long lines within its box.
#[test]
fn the_html_apply_block_fits_its_box() {
    let html = report::render_html(&advice(3));
    assert!(html.contains("<pre>"));
    let css = &html[html.find("<style>").unwrap()..html.find("</style>").unwrap()];
    assert!(css.contains("pre{white-space:pre-wrap;overflow-wrap:anywhere}"), "{css}");
}

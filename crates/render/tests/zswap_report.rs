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
            compressor: "lzo".into(),
            max_pool_percent: 20,
            accept_threshold_percent: 90,
            shrinker_enabled: false,
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
    let set = zmem_pages::generate::generate(zmem_pages::generate::Kind::Mixed, 1024, 4096, 7)
        .expect("generator");
    let source = Source {
        kind: "captured".into(),
        detail: "test set".into(),
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

#[test]
fn the_zswap_document_validates_and_carries_now_candidates_and_verdict() {
    let r = report();
    let json = report::json::lab_report(&r);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/lab-report.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator.iter_errors(&json).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");

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
    assert!(!validator.is_valid(&broken));

    // The apply lines: module parameters, command line, tmpfiles.d.
    let ap = &json["zswap"]["apply"];
    let sysfs: Vec<&str> =
        ap["sysfs"].as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
    assert!(sysfs.iter().any(|l| l.ends_with("/sys/module/zswap/parameters/compressor")));
    assert_eq!(sysfs.last().unwrap(), &"echo Y > /sys/module/zswap/parameters/enabled");
    assert!(ap["cmdline"].as_str().unwrap().contains("zswap.enabled=Y"));
    let script = report::render_apply_script(&r);
    assert!(script.contains("/etc/tmpfiles.d/zmem-zswap.conf"), "{script}");
    assert!(script.contains("vm.page-cluster"), "{script}");
    let summary = report::render_summary(&r);
    assert!(summary.contains("zram or zswap:") && summary.contains("Candidates"), "{summary}");
    let html = report::render_html(&r);
    assert!(html.contains("zram or zswap:"));
}

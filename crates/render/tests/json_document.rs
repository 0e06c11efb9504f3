//! The typed JSON document (`zmem_render::json::LabDocument`) writes byte for byte what the
//! report serialised to a `serde_json::Value` and edited used to (the [`legacy`] path below,
//! kept here only as the reference): same keys, same order, same values, on reports with and
//! without zswap, with and without a live zram device or a zswap Now, uncertain, sampled, and
//! with every kind of decision or none.

use std::collections::BTreeMap;
use std::time::Duration;

use zmem_kernel::zswap_state::ZswapState;
use zmem_lab::decision::Kind;
use zmem_lab::zswap::{SwapAreaNow, ZswapInput, ZswapLive};
use zmem_lab::{
    self as lab, FieldComparison, LabOptions, LabReport, LiveConfig, NoProgress, Now,
    SkippedPolicy, Source,
};
use zmem_render::json;

/// The document as it was built before it was typed: the report as a `Value`, then edited.
mod legacy {
    use serde_json::{Map, Value};
    use zmem_lab::LabReport;
    use zmem_render as render;

    pub fn lab_report(r: &LabReport) -> Value {
        let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
        let a = render::apply::build(r);
        if let Some(rec) = v.get_mut("recommendation").and_then(Value::as_object_mut) {
            let mut out = Map::new();
            for (k, x) in std::mem::take(rec) {
                let after = k.clone();
                out.insert(k, x);
                match after.as_str() {
                    "config" => {
                        out.insert(
                            "attributes".into(),
                            serde_json::to_value(&a.sysfs).unwrap_or_default(),
                        );
                    }
                    "runner_up" => {
                        out.insert("why".into(), Value::String(render::advice::why(r)));
                    }
                    _ => {}
                }
            }
            if r.recommendation.uncertain {
                out.shift_remove("attributes");
            } else {
                out.insert("apply".into(), serde_json::to_value(&a).unwrap_or_default());
            }
            *rec = out;
        }
        json_into(r, &mut v);
        decision_first(r, v)
    }

    fn decision_first(r: &LabReport, v: Value) -> Value {
        let Value::Object(mut m) = v else { return v };
        let mut out = Map::new();
        if let Some(Value::Object(mut d)) = m.shift_remove("decision") {
            let script = render::decision::apply_script(r);
            let applies = script.is_ok()
                && r.decision.as_ref().is_some_and(|d| {
                    matches!(
                        d.kind,
                        zmem_lab::decision::Kind::Zram | zmem_lab::decision::Kind::Zswap
                    )
                });
            match script {
                Ok(s) => {
                    d.insert("apply_script".into(), Value::String(s));
                }
                Err(e) => {
                    d.insert("apply_script".into(), Value::Null);
                    d.insert("apply_refused".into(), Value::String(e.to_string()));
                }
            }
            let undo = if applies { render::decision::undo_script() } else { String::new() };
            d.insert("undo_script".into(), Value::String(undo));
            let files = render::decision::files_needed(r);
            d.insert("files_needed".into(), serde_json::to_value(files).unwrap_or_default());
            out.insert("decision".into(), Value::Object(d));
        }
        out.extend(m);
        Value::Object(out)
    }

    fn json_into(r: &LabReport, v: &mut Value) {
        let Some(a) = &r.zswap else { return };
        let obj = |x: &mut Value| {
            if !x.is_object() {
                *x = Value::Object(Default::default());
            }
        };
        if let Some(root) = v.as_object_mut() {
            let now = root.entry("now").or_insert(Value::Null);
            if a.now.is_some() || now.is_object() {
                obj(now);
                if let Some(m) = now.as_object_mut() {
                    m.insert("zswap".into(), serde_json::to_value(&a.now).unwrap_or(Value::Null));
                }
            }
            if let Some(list) = root.get_mut("candidates").and_then(Value::as_array_mut) {
                for c in list.iter_mut().filter_map(Value::as_object_mut) {
                    c.entry("kind").or_insert_with(|| "zram".into());
                }
                list.extend(a.candidates.iter().filter_map(|c| serde_json::to_value(c).ok()));
            }
            root.insert("verdict".into(), serde_json::to_value(&a.verdict).unwrap_or(Value::Null));
            // `remove` is `swap_remove` with serde_json's preserve_order: this left `zswap` as
            // {live, stack}, the order the typed document keeps.
            if let Some(z) = root.get_mut("zswap").and_then(Value::as_object_mut) {
                z.remove("now");
                z.remove("candidates");
                z.remove("verdict");
            }
        }
    }
}

fn live_zswap() -> ZswapLive {
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

/// The lab on `n` generated pages (a random sample of `sample` of them when given), with
/// zswap's advice from a fake live zswap when `zswap`.
fn run(n: usize, sample: Option<usize>, zswap: bool) -> LabReport {
    let set = zmem_pages::generate::generate(zmem_pages::generate::Kind::Mixed, n, 4096, 7)
        .expect("generator");
    let (pages, design) = match sample {
        Some(k) => {
            let (p, d) = lab::sample::draw(&set, k, 1);
            (p, Some(d))
        }
        None => (set.bytes().to_vec(), None),
    };
    let source = Source {
        kind: "captured".into(),
        detail: "json document".into(),
        pages: (pages.len() / 4096) as u64,
        page_size: 4096,
        fallback_reason: None,
    };
    let opts = LabOptions {
        min_time: Duration::ZERO,
        policies: lab::candidates("lzo-rle")[..3].to_vec(),
        zswap: zswap.then(|| ZswapInput { live: live_zswap(), after: None, secs: 0.0, pids: None }),
        sample: design,
        ..LabOptions::default()
    };
    lab::run(&pages, source, &opts, &NoProgress).expect("lab run")
}

/// A live zram device's Now (what a capture of a zram device gives the report).
fn zram_now() -> Now {
    Now {
        config: LiveConfig {
            device: "/dev/zram0".into(),
            comp_algorithm: "lzo-rle".into(),
            recomp_algorithm: None,
            algorithm_params: Some("lzo-rle".into()),
            disksize_bytes: 1 << 30,
            mem_limit_bytes: 0,
            swap_priority: Some(100),
            offered: vec!["lzo".into(), "lzo-rle".into(), "zstd".into()],
            recompress: true,
        },
        live_mm_stat: "4194304 1048576 1200000 0 1300000 12 0 3 0".into(),
        predicted_mm_stat: "4194304 1048576 1100000 0 1100000 12 0 3 0".into(),
        fields: vec![FieldComparison {
            field: "orig_data_size".into(),
            live: 4194304,
            predicted: 4194304,
        }],
        exact: false,
        drift: Some("same_pages moved".into()),
        fragmentation_bytes: 100_000,
        compact_gain_bytes: 50_000,
        stored_pages: 1024,
    }
}

/// Both ways, pretty-printed, byte for byte; returns the document for further checks.
fn same(what: &str, r: &LabReport) -> serde_json::Value {
    let old = serde_json::to_string_pretty(&legacy::lab_report(r)).unwrap();
    let new = json::lab_report_text(r);
    if old != new {
        // The first line that differs, with a few before it for its place in the document.
        let (o, n): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
        let i = o.iter().zip(&n).take_while(|(a, b)| a == b).count();
        let from = i.saturating_sub(5);
        panic!(
            "{what}: the typed document differs at line {}\n--- legacy\n{}\n--- typed\n{}",
            i + 1,
            o[from..(i + 1).min(o.len())].join("\n"),
            n[from..(i + 1).min(n.len())].join("\n")
        );
    }
    json::lab_report(r)
}

#[test]
fn the_typed_document_is_the_edited_value_byte_for_byte() {
    let base = run(1024, None, true);
    assert!(base.zswap.as_ref().is_some_and(|z| z.now.is_some()));
    assert!(base.now.is_none() && !base.recommendation.uncertain);
    let d = same("zswap, no live zram", &base);
    // The places the document moves things to are there (so the comparison compared them).
    assert!(d["now"]["zswap"].is_object() && d["now"].get("config").is_none());
    assert!(d["verdict"].is_object() && d["zswap"].get("verdict").is_none());
    let keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!((keys.first(), keys.last()), (Some(&"decision"), Some(&"verdict")));
    let zkeys: Vec<&String> = d["zswap"].as_object().unwrap().keys().collect();
    assert_eq!(zkeys, ["live", "stack"]);

    let mut r = base.clone();
    r.now = Some(zram_now());
    let d = same("zswap and a live zram device", &r);
    assert_eq!(d["now"]["config"]["device"], "/dev/zram0");
    assert!(d["now"]["zswap"].is_object());

    if let Some(z) = r.zswap.as_mut() {
        z.now = None;
    }
    let d = same("a live zram device, a kernel without zswap", &r);
    assert!(d["now"]["zswap"].is_null() && d["now"]["config"].is_object());

    r.now = None;
    let d = same("neither Now", &r);
    assert!(d["now"].is_null());

    let mut r = base.clone();
    r.zswap = None;
    let d = same("no zswap", &r);
    assert!(d.get("verdict").is_none() && d.get("zswap").is_none());
    r.now = Some(zram_now());
    same("no zswap, a live zram device", &r);

    let mut r = base.clone();
    r.skipped_policies =
        vec![SkippedPolicy { name: "zstd-dict".into(), train_pages: 10, need: 64 }];
    for kind in [Kind::Zram, Kind::Zswap, Kind::Keep, Kind::None] {
        if let Some(d) = r.decision.as_mut() {
            d.kind = kind;
        }
        let d = same(&format!("decision {kind:?}"), &r);
        let undo = d["decision"]["undo_script"].as_str().unwrap();
        assert_eq!(undo.is_empty(), matches!(kind, Kind::Keep | Kind::None), "{kind:?}");
    }
    r.decision = None;
    let d = same("no decision (before schema 5)", &r);
    assert!(d.get("decision").is_none());
}

#[test]
fn uncertain_and_sampled_documents_are_unchanged_too() {
    let tiny = run(16, None, false);
    assert!(tiny.recommendation.uncertain);
    let d = same("uncertain, no zswap", &tiny);
    assert!(d["recommendation"].get("apply").is_none());
    assert!(d["recommendation"].get("attributes").is_none());

    let sampled = run(1024, Some(128), true);
    assert!(sampled.estimates.is_some() && sampled.recommendation.uncertain);
    same("sampled, uncertain, zswap", &sampled);
}

//! The typed JSON document (`zmem_render::json::LabDocument`) writes byte for byte what the
//! report serialised to a `serde_json::Value` and edited gives (the [`reference`] path below,
//! kept here only as the reference): same keys, same order, same values, on reports with and
//! without zswap, with and without a live zram device or a zswap Now, too small to advise on,
//! sampled, and with every kind of decision. Schema 7: `decision` first and always there, with
//! its scripts; one `candidates` list; no `recommendation`, no `verdict`.

use std::collections::BTreeMap;
use std::time::Duration;

use zmem_kernel::zswap_state::ZswapState;
use zmem_lab::decision::{Kind, Reason};
use zmem_lab::zswap::{SwapAreaNow, ZswapInput, ZswapLive};
use zmem_lab::{
    self as lab, FieldComparison, LabOptions, LabReport, LiveConfig, NoProgress, Now,
    SkippedPolicy, Source,
};
use zmem_render::json;

/// The document built the other way: the report as a `Value`, then edited.
mod reference {
    use serde_json::{Map, Value};
    use zmem_lab::LabReport;
    use zmem_render as render;

    pub fn lab_report(r: &LabReport) -> Value {
        let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
        json_into(r, &mut v);
        decision_first(r, v)
    }

    /// `decision` moved first, with its scripts after its own fields.
    fn decision_first(r: &LabReport, v: Value) -> Value {
        let Value::Object(mut m) = v else { return v };
        let mut out = Map::new();
        let Some(Value::Object(mut d)) = m.shift_remove("decision") else {
            panic!("a report without its decision")
        };
        let script = render::decision::apply_script(r);
        let applies = script.is_ok()
            && matches!(
                r.decision.kind,
                zmem_lab::decision::Kind::Zram | zmem_lab::decision::Kind::Zswap
            );
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
        out.extend(m);
        Value::Object(out)
    }

    /// zswap's Now moved to `now.zswap` (`now` an object then, unless there is neither Now);
    /// `zswap` keeps the live reading and the stack, in that order.
    fn json_into(r: &LabReport, v: &mut Value) {
        let Some(a) = &r.zswap else { return };
        let Some(root) = v.as_object_mut() else { return };
        let now = root.entry("now").or_insert(Value::Null);
        if a.now.is_some() || now.is_object() {
            if !now.is_object() {
                *now = Value::Object(Map::new());
            }
            if let Some(m) = now.as_object_mut() {
                m.insert("zswap".into(), serde_json::to_value(&a.now).unwrap_or(Value::Null));
            }
        }
        if let Some(z) = root.get_mut("zswap").and_then(Value::as_object_mut) {
            let mut out = Map::new();
            for k in ["live", "stack"] {
                out.insert(k.into(), z.shift_remove(k).unwrap_or(Value::Null));
            }
            assert!(z.shift_remove("now").is_some() && z.is_empty(), "zswap: {z:?}");
            *z = out;
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
        swap_file_room: None,
        memory_cgroup_version: None,
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
        zswap: zswap.then(|| ZswapInput {
            live: live_zswap(),
            after: None,
            secs: 0.0,
            weights: None,
        }),
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
    let old = serde_json::to_string_pretty(&reference::lab_report(r)).unwrap();
    let new = json::lab_report_text(r);
    if old != new {
        // The first line that differs, with a few before it for its place in the document.
        let (o, n): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
        let i = o.iter().zip(&n).take_while(|(a, b)| a == b).count();
        let from = i.saturating_sub(5);
        panic!(
            "{what}: the typed document differs at line {}\n--- reference\n{}\n--- typed\n{}",
            i + 1,
            o[from..(i + 1).min(o.len())].join("\n"),
            n[from..(i + 1).min(n.len())].join("\n")
        );
    }
    json::lab_report(r)
}

/// What every document says once: one decision, first; no second answer anywhere.
fn assert_one_answer(d: &serde_json::Value) {
    let keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys.first(), Some(&"decision"), "{keys:?}");
    assert_eq!(d["schema_version"], 9);
    for gone in ["recommendation", "verdict"] {
        assert!(d.get(gone).is_none(), "{gone}: {}", d[gone]);
    }
    if let Some(z) = d.get("zswap") {
        let zkeys: Vec<&String> = z.as_object().unwrap().keys().collect();
        assert_eq!(zkeys, ["live", "stack"]);
    }
    let dec = &d["decision"];
    for k in ["apply_script", "undo_script", "files_needed", "now_config", "now_bytes", "pages"] {
        assert!(dec.get(k).is_some(), "decision.{k} missing: {dec}");
    }
    // `chosen` and `runner_up` index the one list.
    let cands = d["candidates"].as_array().unwrap();
    if let Some(i) = dec["chosen"].as_u64() {
        assert!((i as usize) < cands.len(), "{dec}");
    }
    if let Some(i) = dec["runner_up"].as_u64() {
        assert!((i as usize) < cands.len(), "{dec}");
    }
}

#[test]
fn the_typed_document_is_the_edited_value_byte_for_byte() {
    let base = run(1024, None, true);
    assert!(base.zswap.as_ref().is_some_and(|z| z.now.is_some()));
    assert!(base.now.is_none() && base.decision.kind != Kind::None);
    let d = same("zswap, no live zram", &base);
    assert_one_answer(&d);
    // The places the document moves things to are there (so the comparison compared them).
    assert!(d["now"]["zswap"].is_object() && d["now"].get("config").is_none());
    let keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!((keys.first(), keys.last()), (Some(&"decision"), Some(&"zswap")));
    // zswap's candidates are in the one list, after zram's.
    let kinds: Vec<&str> =
        d["candidates"].as_array().unwrap().iter().map(|c| c["kind"].as_str().unwrap()).collect();
    assert_eq!(&kinds[..3], ["zram"; 3]);
    assert!(kinds[3..].iter().all(|k| *k == "zswap") && kinds.len() > 3, "{kinds:?}");

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
    assert!(d.get("zswap").is_none());
    assert_one_answer(&d);
    r.now = Some(zram_now());
    same("no zswap, a live zram device", &r);

    let mut r = base.clone();
    r.skipped_policies =
        vec![SkippedPolicy { name: "zstd-dict".into(), train_pages: 10, need: 64 }];
    // A zram and a zswap candidate, each decided in turn, and keep and none.
    let zram = r.candidates.iter().position(|c| matches!(c.config, lab::Config::Zram { .. }));
    let zswap = r.candidates.iter().position(|c| c.available && c.device.is_some());
    for (kind, chosen) in
        [(Kind::Zram, zram), (Kind::Zswap, zswap), (Kind::Keep, zram), (Kind::None, None)]
    {
        r.decision.kind = kind;
        r.decision.chosen = chosen;
        if let Some(i) = chosen {
            r.decision.config = r.candidates[i].name.clone();
        }
        let d = same(&format!("decision {kind:?}"), &r);
        assert_one_answer(&d);
        let undo = d["decision"]["undo_script"].as_str().unwrap();
        assert_eq!(undo.is_empty(), matches!(kind, Kind::Keep | Kind::None), "{kind:?}");
        let script = d["decision"]["apply_script"].as_str().unwrap();
        match kind {
            Kind::Zswap => assert!(script.contains("zswap_set enabled Y"), "{script}"),
            Kind::Zram => assert!(script.contains("zram-generator.conf.d"), "{script}"),
            Kind::Keep => assert!(script.contains("Nothing to change"), "{script}"),
            Kind::None => assert!(script.contains("nothing to apply"), "{script}"),
        }
    }
}

#[test]
fn uncertain_and_sampled_documents_are_unchanged_too() {
    let tiny = run(16, None, false);
    assert_eq!(tiny.decision.kind, Kind::None);
    assert!(matches!(tiny.decision.reason, Reason::TooFewPages { .. }));
    let d = same("too small, no zswap", &tiny);
    assert_one_answer(&d);
    assert!(d["decision"]["chosen"].is_null());
    assert_eq!(d["decision"]["undo_script"], "");

    let sampled = run(1024, Some(128), true);
    assert!(sampled.estimates.is_some() && sampled.decision.kind == Kind::None);
    let d = same("sampled, too small, zswap", &sampled);
    assert_one_answer(&d);
}

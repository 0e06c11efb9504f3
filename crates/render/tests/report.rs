//! The lab report end to end on a small page set: the JSON validates against
//! docs/lab-report.schema.json, and the HTML report, rendered by headless Chromium, shows every
//! plot, the trade-off chart of memory saved against CPU first (each plot draws in its own
//! colour; the screenshot must contain each colour).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use zmem_lab::decision::{Kind, Reason};
use zmem_lab::{self as lab, LabOptions, NoProgress, Source};
use zmem_render as report;

mod common;
use common::small_report;

/// 16 pages: below the lab's minimum, so there is no decision.
fn tiny_report() -> lab::LabReport {
    let set = zmem_pages::generate::generate(zmem_pages::generate::Kind::Mixed, 16, 4096, 7)
        .expect("generator");
    let source = Source {
        kind: "builtin".into(),
        detail: "tiny".into(),
        pages: 16,
        page_size: 4096,
        fallback_reason: None,
    };
    let opts = LabOptions { min_time: Duration::ZERO, ..LabOptions::default() };
    lab::run(set.bytes(), source, &opts, &NoProgress).expect("lab run")
}

/// Too small an input validates too, says why in every form, and offers nothing to apply:
/// no configuration named as the answer, no sysfs lines, no generator file, a script that
/// only says so.
#[test]
fn an_uncertain_result_is_no_advice() {
    let r = tiny_report();
    let d = &r.decision;
    assert_eq!(d.kind, Kind::None, "{d:?}");
    assert!(d.chosen.is_none() && d.runner_up.is_none(), "{d:?}");
    assert_eq!(d.reason, Reason::TooFewPages { measured_pages: 16, min_pages: 1024 });
    let json = report::json::lab_report(&r);
    let validator = jsonschema::validator_for(&schema()).expect("the schema compiles");
    let errors: Vec<String> = validator.iter_errors(&json).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // One answer: no recommendation beside the decision, and the decision is none.
    assert!(json.get("recommendation").is_none() && json.get("verdict").is_none(), "{json}");
    assert_eq!(json["decision"]["kind"], "none");
    assert_eq!(json["decision"]["config"], "none");
    assert!(json["decision"]["chosen"].is_null(), "{}", json["decision"]);
    assert_eq!(json["decision"]["reason"]["kind"], "too_few_pages");
    assert_eq!(json["decision"]["undo_script"], "");
    assert_eq!(json["decision"]["files_needed"], serde_json::json!([]));
    let summary = report::render_summary(&r);
    assert!(summary.contains("Decision: none. the input is too small"), "{summary}");
    assert!(!summary.contains("Decision: run") && !summary.contains("apply:"), "{summary}");
    let html = report::render_html(&r);
    assert!(html.contains("Decision: none. the input is too small"), "{html}");
    common::assert_one_answer(&r, &summary, &html);
    let script = report::render_apply_script(&r).expect("an apply script");
    assert!(script.contains("nothing to apply") && script.ends_with("exit 1\n"), "{script}");
    assert!(!script.contains("swapon") && !script.contains("zswap_set"), "{script}");
    assert_eq!(json["decision"]["apply_script"], script.as_str());
}

fn schema() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/lab-report.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn json_validates_against_the_schema() {
    let r = small_report();
    // The document the front ends print: the report value and its rendered words and lines.
    let json = report::json::lab_report(&r);
    let validator = jsonschema::validator_for(&schema()).expect("the schema compiles");
    let errors: Vec<String> = validator.iter_errors(&json).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // The schema is strict enough to catch a broken report.
    let mut broken = json.clone();
    broken["decision"].as_object_mut().unwrap().remove("reason");
    assert!(!validator.is_valid(&broken));
    broken = json.clone();
    broken["decision"].as_object_mut().unwrap().remove("apply_script");
    assert!(!validator.is_valid(&broken));
    broken = json.clone();
    broken.as_object_mut().unwrap().remove("decision");
    assert!(!validator.is_valid(&broken));
    broken = json.clone();
    broken["source"]["kind"] = "guessed".into();
    assert!(!validator.is_valid(&broken));
    broken = json.clone();
    broken["candidates"][0].as_object_mut().unwrap().remove("cpu_secs_per_sec");
    assert!(!validator.is_valid(&broken));
    // Every policy read every page back.
    assert!(r.policies.iter().all(|p| p.verified));
    assert!(r.compressors.iter().all(|c| c.verified));
}

#[test]
fn every_candidate_is_projected_and_one_is_now() {
    let r = small_report();
    // zram's, in the order of the policies, then "none": nothing runs now (generated pages,
    // no live device, no zswap reading).
    assert_eq!(r.candidates.len(), r.policies.len() + 1);
    for (c, p) in r.candidates.iter().zip(&r.policies) {
        assert_eq!(c.name, format!("zram {}", p.policy.name));
        assert_eq!(c.config, lab::Config::Zram { policy: p.policy.clone() });
    }
    let none = r.candidates.last().unwrap();
    assert_eq!((none.name.as_str(), &none.config), ("none", &lab::Config::None));
    let now: Vec<_> = r.candidates.iter().filter(|c| c.runs_now).collect();
    assert_eq!(now.len(), 1);
    assert_eq!(now[0].name, "none");
    assert_eq!(now[0].memory_saved_bytes, 0);
    // The added_* figures are against the kernel's default zram algorithm.
    let reference: Vec<_> = r.candidates.iter().filter(|c| c.is_reference).collect();
    assert_eq!(reference.len(), 1);
    assert_eq!(reference[0].name, "zram lzo-rle");
    // Every saving on the decision's basis: the pages uncompressed.
    let b = &r.decision.basis;
    assert_eq!((b.now_config.as_str(), b.now_source), ("none", lab::NowSource::Uncompressed));
    assert_eq!(b.now_bytes, b.pages * 4096);
    for c in &r.candidates {
        assert_eq!(c.memory_saved_bytes, b.now_bytes as i64 - c.pool_bytes as i64, "{}", c.name);
    }
    // The kernel's seven, four recompressing policies and the dictionary.
    assert_eq!(r.policies.len(), 12);
    assert!(r.candidates.iter().any(|c| c.name == "zram zstd + dict"));
    let d = &r.decision;
    let chosen = d.chosen(&r.candidates).expect("a chosen candidate");
    assert!(chosen.within_budgets && chosen.available, "{chosen:?}");
    assert_eq!(chosen.name, d.config);
    assert_eq!(chosen.memory_saved_bytes, d.memory_saved_bytes);
    let summary = report::render_summary(&r);
    assert!(
        summary.contains("Every candidate against now") && summary.contains("saved MiB"),
        "{summary}"
    );
    // One row of the table is the decision: the chosen one.
    let marked: Vec<&str> =
        summary.lines().filter(|l| l.starts_with(" >") || l.starts_with("*>")).collect();
    assert_eq!(marked.len(), 1, "{summary}");
    assert!(marked[0][2..].trim_start().starts_with(&chosen.name), "{}", marked[0]);
    // Made from generated pages: said with the answer itself.
    let block =
        &summary[summary.find("Decision:").unwrap()..summary.find("The evidence:").unwrap()];
    assert!(block.contains("WARNING: made from zmem's built-in generated pages"), "{block}");
    let html = report::render_html(&r);
    common::assert_one_answer(&r, &summary, &html);
    let script = report::render_apply_script(&r).expect("an apply script");
    assert!(script.starts_with("#!/bin/sh\n") && script.contains("zram-generator.conf.d"));
    // Made from the built-in set: the first comment line says so.
    let first = script.lines().nth(1).unwrap();
    assert!(first.starts_with("# WARNING: made from zmem's built-in generated pages"), "{first}");
    // The decision's configuration, and a timer only where it recompresses.
    let lab::Config::Zram { policy } = &chosen.config else {
        panic!("built-in pages, no zswap reading: a zram decision, got {d:?}")
    };
    assert_eq!(d.kind, Kind::Zram);
    assert!(script.contains(&format!("zmem lab decision: run zram {}", policy.name)));
    // The timer's text is in every zram script; its value says whether it is written.
    let timer = !script.contains("\nZMEM_RECOMPRESS=''\n");
    assert_eq!(timer, policy.recompresses(), "{script}");
}

/// Issue 29's machine: zram offers lzo-rle, lzo and lz4, no recompression; no zram swap, so the
/// default order fell back. The fallback is the summary's and the HTML's first line and in the
/// JSON; zstd is unavailable with its reason; the decision is one the kernel runs and
/// what zstd would add is said as "with CONFIG_ZRAM_BACKEND_ZSTD: +N MiB".
#[test]
fn the_kernel_decides_and_a_fallback_is_said_first() {
    let set = zmem_pages::generate::generate(zmem_pages::generate::Kind::Mixed, 1024, 4096, 7)
        .expect("generator");
    let why = "no active zram swap (/proc/swaps); capture failed: EPERM";
    let source = Source {
        kind: "builtin".into(),
        detail: format!("built-in generated set; {why}"),
        pages: set.len() as u64,
        page_size: 4096,
        fallback_reason: Some(why.into()),
    };
    let kernel = lab::KernelCaps {
        release: "6.18.44".into(),
        zram_present: true,
        zram_algorithms: vec!["lzo-rle".into(), "lzo".into(), "lz4".into()],
        source: "test kernel".into(),
        ..lab::KernelCaps::default()
    };
    // Budgets nothing exceeds: only the kernel rules candidates out.
    let budgets = lab::Budgets::checked(1000.0, 1e6).unwrap();
    let opts = LabOptions {
        min_time: Duration::ZERO,
        kernel: Some(kernel),
        budgets,
        ..LabOptions::default()
    };
    let r = lab::run(set.bytes(), source, &opts, &NoProgress).expect("lab run");
    let d = &r.decision;
    assert_eq!(d.kind, Kind::Zram, "{d:?}");
    let chosen = d.chosen(&r.candidates).expect("a chosen candidate");
    assert!(chosen.available, "{chosen:?}");
    assert!(!d.config.contains("zstd") && !d.config.contains("+ "), "{}", d.config);
    let zstd = r.candidates.iter().find(|c| c.name == "zram zstd").unwrap();
    assert!(!zstd.available);
    assert!(zstd.unavailable_reason.as_deref().unwrap().contains("CONFIG_ZRAM_BACKEND_ZSTD"));
    assert!(zstd.over_budget.contains(&lab::OverBudget::Unavailable), "{zstd:?}");
    let zstd_gain = zstd.memory_saved_bytes - chosen.memory_saved_bytes;
    assert!(zstd_gain > 0, "zstd saves more on the mixed set");
    assert!(d.better_kernel.iter().any(|b| b.needs == "CONFIG_ZRAM_BACKEND_ZSTD"));
    // Nothing the kernel cannot run is chosen or the runner-up.
    assert!(d.runner_up(&r.candidates).is_none_or(|c| c.available));

    let summary = report::render_summary(&r);
    assert_eq!(
        summary.lines().next().unwrap(),
        format!("zmem lab: fell back to builtin pages: {why}")
    );
    let line = format!(
        "with CONFIG_ZRAM_BACKEND_ZSTD: +{:.1} MiB",
        d.better_kernel
            .iter()
            .find(|b| b.needs == "CONFIG_ZRAM_BACKEND_ZSTD")
            .unwrap()
            .extra_saved_bytes as f64
            / (1 << 20) as f64
    );
    assert!(summary.contains(&line), "{line} missing from\n{summary}");
    assert!(
        summary.contains("kernel 6.18.44: zram lzo-rle lzo lz4, no recompression"),
        "{summary}"
    );
    let html = report::render_html(&r);
    let body = &html[html.find("<body>").unwrap() + "<body>".len()..];
    assert!(body.starts_with("<p class=\"fallback\"><strong>Fell back to builtin pages:</strong>"));
    assert!(html.contains(&line));
    common::assert_one_answer(&r, &summary, &html);
    let json = report::json::lab_report(&r);
    assert_eq!(json["source"]["fallback_reason"], why);
    assert_eq!(json["kernel"]["zram_algorithms"], serde_json::json!(["lzo-rle", "lzo", "lz4"]));
    assert_eq!(json["kernel"]["zram_recompress"], false);
    // zram's candidates and "none" (nothing runs now): no zswap without a zswap reading.
    let kinds: Vec<&str> = json["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert!(kinds[..kinds.len() - 1].iter().all(|k| *k == "zram"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"none"));
    let validator = jsonschema::validator_for(&schema()).expect("the schema compiles");
    let errors: Vec<String> = validator.iter_errors(&json).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // An unavailable candidate without its reason, or a stray source field, is refused.
    let i = r.candidates.iter().position(|c| c.name == "zram zstd").unwrap();
    let mut broken = json.clone();
    broken["candidates"][i].as_object_mut().unwrap().remove("unavailable_reason");
    assert!(!validator.is_valid(&broken));
    broken = json.clone();
    broken["source"]["guess"] = true.into();
    assert!(!validator.is_valid(&broken));
    // The script never writes what the kernel lacks: no secondary, so no recomp_algorithm write.
    let script = report::render_apply_script(&r).expect("an apply script");
    assert!(script.contains("\nZMEM_RECOMP=''\n"), "{script}");
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"].iter().find_map(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|_| PathBuf::from(c))
    })
}

fn rgb(hex: &str) -> [u8; 3] {
    let v = u32::from_str_radix(&hex[1..], 16).unwrap();
    [(v >> 16) as u8, (v >> 8) as u8, v as u8]
}

#[test]
#[ignore = "live: needs chromium (scripts/test runs it)"]
fn html_report_shows_every_plot_in_chromium() {
    let live = zmem_testkit::may_skip();
    let r = small_report();
    let html = report::render_html(&r);
    // The trade-off chart, four plots and a latency histogram per policy.
    assert_eq!(html.matches("<svg").count(), 5 + r.policies.len());
    assert!(
        html.contains("Memory saved against CPU") && html.contains("Every candidate against now")
    );
    let Some(browser) = chromium() else {
        return live.skip_optional(
            "no chromium binary (apt-get install chromium); the HTML was checked only as text",
        );
    };
    let dir = std::env::temp_dir().join(format!("zmem-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("report.html");
    std::fs::write(&page, &html).unwrap();
    let shot = dir.join("shot.png");
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"])
        .arg("--window-size=800,6000")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        shot.exists(),
        "chromium wrote no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = match info.color_type {
        png::ColorType::Rgba => 4,
        png::ColorType::Rgb => 3,
        other => panic!("unexpected PNG colour type {other:?}"),
    };
    let pixels = &buf[..info.buffer_size()];
    for (plot, color) in report::PLOT_COLORS {
        let want = rgb(color);
        let n = pixels.chunks_exact(px).filter(|p| p[..3] == want).count();
        assert!(n > 200, "plot {plot:?} ({color}) shows {n} pixels in the screenshot");
    }
    // No two labels of a plot overlap, measured by the browser's own layout (getBBox).
    let probe = dir.join("labels.html");
    let script = "<script>let n=0,pairs=[];for(const svg of document.querySelectorAll('svg')){\
        const b=[...svg.querySelectorAll('text.label')].map(t=>[t.textContent,t.getBBox()]);\
        for(let i=0;i<b.length;i++)for(let j=i+1;j<b.length;j++){const p=b[i][1],q=b[j][1];\
        if(p.x<q.x+q.width&&q.x<p.x+p.width&&p.y<q.y+q.height&&q.y<p.y+p.height){n++;pairs.push(b[i][0]+' / '+b[j][0]);}}}\
        const m=document.createElement('pre');m.id='overlaps';m.textContent='overlaps='+n+' '+pairs.join('; ');\
        document.body.appendChild(m);</script>";
    std::fs::write(&probe, html.replace("</body>", &format!("{script}</body>"))).unwrap();
    let out = Command::new(chromium().unwrap())
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
        .arg(format!("file://{}", probe.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let labels = html.matches("class=\"label\"").count();
    assert!(labels >= r.compressors.len() - 1 + r.candidates.len(), "{labels} labels");
    let line = dom.split("id=\"overlaps\">").nth(1).and_then(|t| t.split('<').next());
    assert_eq!(line.map(|l| l.trim_end()), Some("overlaps=0"), "labels overlap in the browser");
    let _ = std::fs::remove_dir_all(&dir);
}

//! zswap in the lab's outputs: its "Now" beside zmem's prediction, the zswap candidates, the
//! zram-or-zswap verdict and the swap stack (terminal text and HTML; where they go in the JSON
//! document is [`crate::json`]'s), as evidence: the one answer and its script are
//! [`crate::decision`]'s.

use zmem_lab::LabReport;
use zmem_lab::zswap::human_bytes;

/// The terminal section: zswap now, the candidates, the verdict and the stack.
pub fn text(r: &LabReport) -> String {
    let Some(a) = &r.zswap else { return String::new() };
    let mib = |b: f64| b / (1 << 20) as f64;
    let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    let mut s = String::from("\nzswap\n");
    match &a.now {
        None => s += "  Now: this kernel has no zswap\n",
        Some(n) => {
            s += &format!(
                "  Now: enabled={} compressor={} max_pool_percent={} accept_threshold_percent={} shrinker_enabled={}\n",
                if n.enabled { "Y" } else { "N" },
                n.compressor,
                n.max_pool_percent,
                n.accept_threshold_percent,
                if n.shrinker_enabled { "Y" } else { "N" }
            );
            let rows: Vec<Vec<String>> = n
                .fields
                .iter()
                .map(|f| vec![f.field.clone(), opt(f.live), opt(f.predicted)])
                .collect();
            s += &crate::table::render("  ", "lrr", &["field", "live", "predicted"], &rows);
            if let Some(d) = &n.debugfs {
                let line: Vec<String> = ["written_back_pages", "pool_limit_hit"]
                    .iter()
                    .chain(&[
                        "reject_compress_poor",
                        "reject_compress_fail",
                        "reject_alloc_fail",
                        "reject_reclaim_fail",
                    ])
                    .filter_map(|k| d.get(*k).map(|v| format!("{k} {v}")))
                    .collect();
                s += &format!("  debugfs: {}\n", line.join(", "));
            } else if let Some(why) = &n.debugfs_note {
                s += &format!("  debugfs: {why}\n");
            }
            if let Some(p) = &n.prediction {
                s += &format!(
                    "  prediction: {} ({} of {} measured pages stored)\n",
                    p.note, p.stored_pages, p.pages
                );
            }
            if let Some(rt) = &n.rates {
                let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
                s += &format!(
                    "  rates over {:.1} s: zswpout {}/s, zswpin {}/s, zswpwb {}/s, pswpout {}/s, pswpin {}/s\n",
                    n.observed_secs,
                    f(rt.zswpout_per_sec),
                    f(rt.zswpin_per_sec),
                    f(rt.zswpwb_per_sec),
                    f(rt.pswpout_per_sec),
                    f(rt.pswpin_per_sec)
                );
            }
            for g in n.cgroups.iter().filter(|g| g.zswap_bytes.unwrap_or(0) > 0) {
                s += &format!(
                    "  cgroup {}: zswap {} B, zswapped {} B, zswap.max {}, writeback {}\n",
                    g.path,
                    opt(g.zswap_bytes),
                    opt(g.zswapped_bytes),
                    g.zswap_max.as_deref().unwrap_or("-"),
                    g.zswap_writeback.map_or("-", |w| if w { "1" } else { "0" })
                );
            }
        }
    }
    s += &format!(
        "  Candidates (replayed with RAM for a quarter of the pages, in front of {}):\n",
        r.swap_device.name
    );
    let rows: Vec<Vec<String>> = a
        .candidates
        .iter()
        .map(|c| {
            if !c.available {
                let why = c.unavailable_reason.as_deref().unwrap_or("");
                return vec![c.name.clone(), format!("unavailable: {why}")];
            }
            vec![
                c.name.clone(),
                format!("{:.1}", mib(c.memory_saved_bytes_vs_now as f64)),
                format!("{:.3}", c.cpu_secs_per_sec * 100.0),
                format!("{:.1}", c.load_p50_ns as f64 / 1e3),
                format!("{:.1}", c.load_p99_ns as f64 / 1e3),
                format!("{:.0}", c.hit_fraction * 100.0),
                format!("{:.2}", c.device_write_bytes_per_sec / 1e6),
                if c.within_budgets { "" } else { "(over budget)" }.to_string(),
            ]
        })
        .collect();
    s += &crate::table::render(
        "  ",
        "lrrrrrrl",
        &["zswap", "saved MiB", "CPU %core", "p50 us", "p99 us", "hits %", "dev MB/s", ""],
        &rows,
    );
    if a.verdict.is_none() {
        // No zram-or-zswap answer, nor the stack and lines that follow from one.
        return s + &format!("\n{}\n", a.verdict.reason);
    }
    s += &format!(
        "\nzram or zswap: {} ({})\n  {}\n",
        a.verdict.choice, a.verdict.config, a.verdict.reason
    );
    let st = &a.stack;
    let now = |v: Option<u32>| v.map_or("unknown".to_string(), |v| v.to_string());
    s += &format!(
        "  vm.swappiness {} (now {}): {}\n  vm.page-cluster {} (now {}): {}\n  swap device behind zswap: {} ({})\n",
        st.swappiness,
        now(st.swappiness_now),
        st.swappiness_reason,
        st.page_cluster,
        now(st.page_cluster_now),
        st.page_cluster_reason,
        human_bytes(st.swap_device_bytes as f64),
        st.swap_device_reason
    );
    for h in &st.holds {
        s += &format!("  holds: {h}\n");
    }
    s
}

/// The HTML section (inserted before the footer of `page`).
pub fn html_into(r: &LabReport, page: String) -> String {
    let Some(a) = &r.zswap else { return page };
    let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let mut rows = String::new();
    for c in a.candidates.iter().filter(|c| c.available) {
        rows += &format!(
            "<tr><td>{}</td><td>{:.1}</td><td>{:.3}</td><td>{:.1}</td><td>{:.1}</td><td>{:.2}</td></tr>",
            esc(&c.name),
            c.memory_saved_bytes_vs_now as f64 / (1 << 20) as f64,
            c.cpu_secs_per_sec * 100.0,
            c.load_p50_ns as f64 / 1e3,
            c.load_p99_ns as f64 / 1e3,
            c.device_write_bytes_per_sec / 1e6
        );
    }
    let now = a.now.as_ref().map_or("this kernel has no zswap".to_string(), |n| {
        let f: String = n
            .fields
            .iter()
            .map(|f| {
                format!(
                    "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                    f.field,
                    f.live.map_or("-".into(), |v| v.to_string()),
                    f.predicted.map_or("-".into(), |v| v.to_string())
                )
            })
            .collect();
        format!(
            "enabled={} compressor={} max_pool_percent={} shrinker_enabled={}\
             <table><tr><th>field</th><th>live</th><th>predicted</th></tr>{f}</table>",
            n.enabled,
            esc(&n.compressor),
            n.max_pool_percent,
            n.shrinker_enabled
        )
    });
    let (title, stack) = if a.verdict.is_none() {
        // No zram-or-zswap answer, nor the stack that follows from one.
        ("zram or zswap: no verdict".to_string(), String::new())
    } else {
        (
            format!("zram or zswap: {}", esc(&a.verdict.choice.to_string())),
            format!(
                "<p>vm.swappiness {}: {}. vm.page-cluster {}: {}.</p>",
                a.stack.swappiness,
                esc(&a.stack.swappiness_reason),
                a.stack.page_cluster,
                esc(&a.stack.page_cluster_reason)
            ),
        )
    };
    let section = format!(
        "<h2>{title}</h2><p>{}</p><h3>zswap now</h3><p>{now}</p>\
         <h3>zswap candidates</h3><table><tr><th>zswap</th><th>saved MiB</th><th>CPU % core</th>\
         <th>p50 &micro;s</th><th>p99 &micro;s</th><th>device MB/s</th></tr>{rows}</table>{stack}",
        esc(&a.verdict.reason),
    );
    match page.rfind("<p><small>zmem ") {
        Some(i) => format!("{}{section}{}", &page[..i], &page[i..]),
        None => page + &section,
    }
}

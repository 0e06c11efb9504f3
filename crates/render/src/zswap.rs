//! zswap in the lab's outputs: its "Now" beside zmem's prediction, and the swap stack that goes
//! with the decision, with why in words (terminal text and HTML; where they go in the JSON
//! document is [`crate::json`]'s), as evidence: the one answer and its script are
//! [`crate::decision`]'s, zswap's candidates are in the one candidate table.

use zmem_lab::LabReport;
use zmem_lab::zswap::{StackAdvice, ZswapAdvice};

use crate::units::human_bytes;

/// The terminal section: zswap now and the stack.
pub fn text(r: &LabReport) -> String {
    let Some(a) = &r.zswap else { return String::new() };
    let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    let mut s = String::from("\nzswap\n");
    match &a.now {
        None => s += "  Now: this kernel has no zswap\n",
        Some(n) => {
            s += &format!(
                "  Now: enabled={} compressor={} max_pool_percent={} accept_threshold_percent={} shrinker_enabled={}\n",
                if n.enabled { "Y" } else { "N" },
                n.module.compressor,
                n.module.max_pool_percent,
                n.module.accept_threshold_percent,
                if n.module.shrinker_enabled { "Y" } else { "N" }
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
    // No decision, no stack that would follow one.
    if r.decision.kind == zmem_lab::Kind::None {
        return s;
    }
    s + &stack_text(a)
}

/// The swap stack for the decision, with why.
fn stack_text(a: &ZswapAdvice) -> String {
    let st = &a.stack;
    let now = |v: Option<u32>| v.map_or("unknown".to_string(), |v| v.to_string());
    let mut s = format!(
        "\nThe swap stack for the decision\n  vm.swappiness {} (now {}): {}\n  vm.page-cluster {} \
         (now {}): {}\n",
        st.swappiness,
        now(st.swappiness_now),
        swappiness_reason(st),
        st.page_cluster,
        now(st.page_cluster_now),
        page_cluster_reason(st),
    );
    if st.zswap {
        s += &format!(
            "  swap device behind zswap: {} ({})\n",
            human_bytes(st.swap_device_bytes as f64),
            swap_device_reason(st)
        );
    }
    for h in holds(a) {
        s += &format!("  holds: {h}\n");
    }
    s
}

/// Why vm.swappiness.
pub fn swappiness_reason(st: &StackAdvice) -> String {
    if st.zswap {
        format!(
            "zswap's misses read the same {} file pages come from: weigh anonymous and file \
             memory equally",
            st.device
        )
    } else {
        "a swap-in from zram costs microseconds of CPU, less than re-reading a file page from \
         the device: favour swapping anonymous memory over dropping page cache"
            .into()
    }
}

/// Why vm.page-cluster (`zmem_lab::zswap::page_cluster` has the rule).
pub fn page_cluster_reason(st: &StackAdvice) -> String {
    let measured = match (st.read_ahead_pages, st.read_ahead_used) {
        (Some(p), Some(u)) => format!(
            "; the kernel read {p} pages ahead since boot and {:.0}% of them were used \
             (/proc/vmstat swap_ra_hit / swap_ra)",
            u * 100.0
        ),
        (Some(p), None) => {
            format!(
                "; the kernel read only {p} pages ahead since boot, too few to judge its read-ahead"
            )
        }
        (None, _) => "; /proc/vmstat has no swap_ra counters".to_string(),
    };
    let rate = if st.swap_ins_per_sec > 0.0 {
        format!(", {:.0} swap-ins/s at the rates used", st.swap_ins_per_sec)
    } else {
        String::new()
    };
    let hit = st.hit_fraction * 100.0;
    let device = &st.device;
    match (st.from_memory, st.page_cluster) {
        (true, 1) => format!(
            "most swap-ins are served from compressed memory ({hit:.0}% in the replay{rate}), and \
             read-ahead pages are mostly used: one neighbour per fault keeps most of that and \
             decompresses fewer unused pages{measured}"
        ),
        (true, _) => format!(
            "most swap-ins are served from compressed memory ({hit:.0}% in the replay{rate}), \
             where reading 2^page-cluster neighbours ahead only decompresses pages not asked \
             for{measured}"
        ),
        (false, 1) => format!(
            "most swap-ins miss zswap and read the {device} ({hit:.0}% hits), but the kernel's \
             read-ahead is mostly wasted: two pages a fault instead of eight{measured}"
        ),
        (false, _) => format!(
            "most swap-ins miss zswap and read the {device} ({hit:.0}% hits): the kernel's \
             read-ahead of 8 pages amortises the device reads{measured}"
        ),
    }
}

/// Why the swap device behind zswap is that size.
fn swap_device_reason(st: &StackAdvice) -> String {
    format!(
        "every page zswap stores keeps its slot on the swap device: {} pages of {} B need {} \
         (active disk swap now: {})",
        st.pages,
        st.page_size,
        human_bytes(st.swap_device_bytes as f64),
        human_bytes(st.disk_swap_bytes as f64)
    )
}

/// What each active swap area holds, in words (zram and disk swap together, zswap's slots).
fn holds(a: &ZswapAdvice) -> Vec<String> {
    let ps = a.live.state.page_size;
    a.live
        .swaps
        .iter()
        .map(|s| {
            let base = format!(
                "{} ({}, priority {}): {} used of {}",
                s.filename,
                s.kind,
                s.priority,
                human_bytes(s.used_bytes as f64),
                human_bytes(s.size_bytes as f64)
            );
            match (s.kind.as_str(), a.stack.zswap_stored_pages) {
                ("zram", _) => format!("{base}, compressed in RAM"),
                (_, Some(n)) => format!(
                    "{base}, of which slots of zswap's {n} stored pages ({}; the rest written to \
                     the device)",
                    human_bytes((n * ps) as f64)
                ),
                _ => format!("{base}, on the device"),
            }
        })
        .collect()
}

/// The HTML section (inserted before the footer of `page`).
pub fn html_into(r: &LabReport, page: String) -> String {
    let Some(a) = &r.zswap else { return page };
    let esc = crate::script::html_text;
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
            esc(&n.module.compressor),
            n.module.max_pool_percent,
            n.module.shrinker_enabled
        )
    });
    let st = &a.stack;
    // No decision, no stack that would follow one.
    let stack = if r.decision.kind == zmem_lab::Kind::None {
        String::new()
    } else {
        format!(
            "<p>vm.swappiness {}: {}. vm.page-cluster {}: {}.</p>",
            st.swappiness,
            esc(&swappiness_reason(st)),
            st.page_cluster,
            esc(&page_cluster_reason(st))
        )
    };
    let section = format!("<h2>zswap and the swap stack</h2><h3>zswap now</h3><p>{now}</p>{stack}");
    match page.rfind("<p><small>zmem ") {
        Some(i) => format!("{}{section}{}", &page[..i], &page[i..]),
        None => page + &section,
    }
}

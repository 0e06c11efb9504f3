//! The offline HTML report: one file, inline CSS and SVG, no scripts.

use zmem_lab::LabReport;

use crate::summary::{CHANGE_MEANINGS, fits, over_budget, trade_points};
use crate::svg;

/// The accent colour of each plot, in page order; the screenshot test looks for them.
pub const PLOT_COLORS: [(&str, &str); 6] = [
    ("memory saved vs CPU", "#17becf"),
    ("ratio vs compress speed", "#1f77b4"),
    ("memory-freeing speed", "#2ca02c"),
    ("pool size per allocator", "#d62728"),
    ("recompression gains", "#9467bd"),
    ("load latency", "#ff7f0e"),
];

// `s` as HTML text or a quoted attribute value: markup escaped, control characters (but line
// breaks and tabs, which `<pre>` shows) removed.
use crate::script::html_text as esc;

/// The whole report: the decision first, then the evidence, one section each.
pub fn render_html(r: &LabReport) -> String {
    let page = [
        head(),
        fallback(r),
        "<h1>zmem lab report</h1>".to_string(),
        crate::decision::html(r),
        kernel_notes(r),
        format!(
            "<p>{} pages of {} bytes &mdash; {}: {}</p><p>{}</p>",
            r.source.pages,
            r.source.page_size,
            esc(&r.source.kind),
            esc(&r.source.detail),
            esc(&crate::summary::kernel_line(&r.kernel))
        ),
        now_section(r),
        crate::operating::plot(r, PLOT_COLORS[0].1).unwrap_or_default(),
        estimates_section(r),
        svg::tradeoff(
            "Memory saved against CPU, per candidate (projected onto the device)",
            &trade_points(r),
            r.budgets.cpu_percent_of_core,
            PLOT_COLORS[0].1,
        ),
        change_section(r),
        compressors_section(r),
        swap_section(r),
        format!(
            "<p><small>zmem {} &middot; schema {}</small></p></body></html>\n",
            esc(&r.zmem_version),
            r.schema_version
        ),
    ]
    .concat();
    crate::zswap::html_into(r, page)
}

fn head() -> String {
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>zmem lab report</title>\
     <style>body{font-family:sans-serif;max-width:760px;margin:2em auto;color:#222}\
     table{border-collapse:collapse;max-width:100%}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}\
     td:first-child{text-align:left;overflow-wrap:anywhere;word-break:break-word}.rec{background:#f4f8ff;border:1px solid #9bd;padding:1em}\
     svg{display:block;margin:1em 0}pre{white-space:pre-wrap;overflow-wrap:anywhere}</style></head><body>"
        .to_string()
}

/// A fallback from the default order is the report's first line.
fn fallback(r: &LabReport) -> String {
    r.source.fallback_reason.as_ref().map_or(String::new(), |why| {
        format!(
            "<p class=\"fallback\"><strong>Fell back to {} pages:</strong> {}</p>",
            esc(&r.source.kind),
            esc(why)
        )
    })
}

/// What a better-equipped kernel would add.
fn kernel_notes(r: &LabReport) -> String {
    crate::summary::better_kernel_lines(r)
        .iter()
        .map(|l| format!("<p class=\"better-kernel\">{}</p>", esc(l)))
        .collect()
}

/// The compressor table and the charts of the measurements.
fn compressors_section(r: &LabReport) -> String {
    let c = |i: usize| PLOT_COLORS[i + 1].1;
    let algos: Vec<_> = r.compressors.iter().filter(|x| x.algo != "memcpy").collect();
    let rows: String = r
        .compressors
        .iter()
        .map(|x| {
            format!(
                "<tr><td>{}</td><td>{:.3}</td><td>{:.0}</td><td>{:.0}</td><td>{:.0}</td><td>{}</td></tr>",
                esc(&x.algo), x.ratio, x.comp_mbps, x.decomp_mbps, x.freeing_mbps, if x.verified { "yes" } else { "NO" }
            )
        })
        .collect();
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let hists: Vec<String> = r
        .policies
        .iter()
        .map(|p| {
            svg::log2_histogram(
                &format!("Load latency, {} (ns, log2 buckets)", p.policy.name),
                &p.load_latency.buckets.iter().map(|b| (b.lo, b.count)).collect::<Vec<_>>(),
                c(4),
            )
        })
        .collect();
    [
        format!(
            "<h2>Compressors</h2><table><tr><th>algo</th><th>ratio</th><th>comp MB/s</th>\
             <th>decomp MB/s</th><th>freeing MB/s</th><th>verified</th></tr>{rows}</table>"
        ),
        svg::scatter(
            "Compression ratio against compress speed",
            &algos.iter().map(|x| (x.algo.clone(), x.comp_mbps, x.ratio)).collect::<Vec<_>>(),
            "compress MB/s (log scale)",
            "ratio",
            true,
            c(0),
        ),
        svg::bars(
            "Memory-freeing speed per algorithm",
            &algos.iter().map(|x| (x.algo.clone(), x.freeing_mbps)).collect::<Vec<_>>(),
            "MB/s",
            c(1),
        ),
        "<h2>Allocators</h2>".into(),
        svg::bars(
            "Pool size per allocator (zram, same pages)",
            &r.allocators
                .iter()
                .map(|a| (a.allocator.clone(), mib(a.pool_bytes)))
                .collect::<Vec<_>>(),
            "MiB",
            c(2),
        ),
        "<h2>zram policies</h2>".into(),
        svg::bars(
            "Pool size per zram policy (recompression gains)",
            &r.policies
                .iter()
                .map(|p| (p.policy.name.clone(), mib(p.pool_bytes)))
                .collect::<Vec<_>>(),
            "MiB",
            c(3),
        ),
        hists.join("\n"),
    ]
    .join("\n")
}

/// zram against zswap under memory pressure: the replays' table.
fn swap_section(r: &LabReport) -> String {
    let swap_rows: String = r
        .swap
        .iter()
        .map(|w| {
            format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td></tr>",
                w.swap, w.ram_pages, w.swap_ins, w.max_pool_bytes as f64 / (1 << 20) as f64,
                w.disk_reads, w.disk_writes, w.load_p50_ns, w.load_p99_ns, w.hit_p50_ns,
                w.hit_p99_ns, w.device_p50_ns, w.device_p99_ns, w.device_seconds
            )
        })
        .collect();
    let d = &r.swap_device;
    format!(
        "<h2>zram vs zswap under memory pressure</h2>\
         <p>Swap device: {} ({}): 4 KiB read p50 {} &micro;s, p99 {} &micro;s; write p50 {} &micro;s, \
         p99 {} &micro;s. {}. Swap-in latencies are end to end: from memory (zswap hit, zram) and \
         from the device (zswap miss, zram written back).</p>\
         <table><tr><th>swap</th><th>RAM pages</th>\
         <th>swap-ins</th><th>max pool MiB</th><th>disk reads</th><th>disk writes</th><th>load p50 ns</th>\
         <th>load p99 ns</th><th>memory p50 ns</th><th>memory p99 ns</th><th>device p50 ns</th>\
         <th>device p99 ns</th><th>device busy s</th></tr>{swap_rows}</table><p>Trace: {} ({} accesses): {}</p>",
        esc(&d.name),
        esc(&d.kind),
        d.read.p50_ns / 1000,
        d.read.p99_ns / 1000,
        d.write.p50_ns / 1000,
        d.write.p99_ns / 1000,
        esc(&d.note),
        esc(&r.trace.kind),
        r.trace.accesses,
        esc(&r.trace.detail),
    )
}

/// The estimates for every page of the input with their confidence intervals, when the pages
/// measured are a random sample.
fn estimates_section(r: &LabReport) -> String {
    let Some(e) = &r.estimates else { return String::new() };
    let mib = |b: f64| b / (1 << 20) as f64;
    let rows: String = e
        .rows
        .iter()
        .map(|x| {
            format!(
                "<tr><td>{}</td><td>{:.2} [{:.2}, {:.2}]</td><td>{:.3} [{:.3}, {:.3}]</td><td>{:.2} [{:.2}, {:.2}]</td></tr>",
                esc(&x.algo),
                mib(x.pool_bytes.estimate), mib(x.pool_bytes.low), mib(x.pool_bytes.high),
                x.ratio.estimate, x.ratio.low, x.ratio.high,
                mib(x.memory_saved_bytes.estimate), mib(x.memory_saved_bytes.low), mib(x.memory_saved_bytes.high),
            )
        })
        .collect();
    format!(
        "<h2>Estimates for all {} pages</h2><p>From a random sample of {} pages ({} same-filled \
         pages counted on every page), with {:.0} % confidence intervals: {}.</p>\
         <table><tr><th>algorithm</th><th>pool MiB</th><th>ratio</th><th>memory saved MiB</th></tr>{}</table>",
        e.design.population_pages,
        e.design.sample_pages,
        e.design.population_same_filled,
        100.0 * e.confidence,
        esc(&e.method),
        rows
    )
}

/// Every candidate against now, in one table, and what each number means.
fn change_section(r: &LabReport) -> String {
    let d = &r.decision;
    let mib = |b: i64| b as f64 / (1 << 20) as f64;
    let rows: String = r
        .candidates
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mark = match (d.chosen == Some(i), c.runs_now) {
                (true, true) => " (now, the decision)",
                (true, false) => " (the decision)",
                (false, true) => " (now)",
                _ => "",
            };
            let dev = |f: &dyn Fn(&zmem_lab::candidate::DeviceTraffic) -> String| {
                c.device.as_ref().map_or("-".to_string(), f)
            };
            format!(
                "<tr><td>{}{}</td><td>{:.2}</td><td>{:.3}</td><td>{:+.3}</td><td>{:.2}</td>\
                 <td>{:.2}</td><td>{:+.2}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&c.name),
                mark,
                mib(c.memory_saved_bytes),
                100.0 * c.cpu_secs_per_sec,
                100.0 * c.added_cpu_secs_per_sec,
                c.load_p50_ns as f64 / 1000.0,
                c.load_p99_ns as f64 / 1000.0,
                c.added_load_p99_ns as f64 / 1000.0,
                c.first_pass_cpu_secs,
                dev(&|x| format!("{:.0}", 100.0 * x.hit_fraction)),
                dev(&|x| format!("{:.2}", x.device_write_bytes_per_sec / 1e6)),
                if fits(c) { "yes".to_string() } else { esc(&over_budget(c).collect::<Vec<_>>().join("; ")) },
                if c.available { "yes" } else { "no" }
            )
        })
        .collect();
    let notes: String = r
        .candidates
        .iter()
        .filter(|c| !c.available)
        .map(|c| {
            format!(
                "<li>{} is not available: {}</li>",
                esc(&c.name),
                esc(c.unavailable_reason.as_deref().unwrap_or("unknown reason"))
            )
        })
        .collect();
    let notes = if notes.is_empty() { notes } else { format!("<ul class=\"notes\">{notes}</ul>") };
    let meanings: String = CHANGE_MEANINGS
        .iter()
        .map(|(k, v)| format!("<li><b>{}</b>: {}</li>", esc(k), esc(v)))
        .collect();
    format!(
        "<h2>Every candidate against now</h2>\
         <p>Now is {} ({}). At {:.1} swap-ins/s and {:.1} swap-outs/s \
         ({}: {}); background recompression every {:.0} s. Budgets: {} % of one core, \
         +{} &micro;s p99 swap-in.</p><p><small>Rule: {}</small></p>\
         <table><tr><th>candidate</th><th>saved MiB</th><th>CPU %</th><th>&Delta;CPU %</th>\
         <th>p50 &micro;s</th><th>p99 &micro;s</th><th>&Delta;p99 &micro;s</th><th>1st pass s</th>\
         <th>hits %</th><th>dev MB/s</th><th>fits</th><th>available</th></tr>{}</table>{}<ul>{}</ul>",
        esc(&d.basis.now_config),
        esc(&crate::summary::now_source(r)),
        r.rates.swap_ins_per_sec,
        r.rates.swap_outs_per_sec,
        esc(&r.rates.source),
        esc(&r.rates.note),
        r.budgets.recompress_period_secs,
        r.budgets.cpu_percent_of_core,
        r.budgets.added_load_p99_us,
        esc(&crate::summary::rule(&r.budgets)),
        rows,
        notes,
        meanings,
    )
}

/// The live device beside zmem's prediction, and the rates.
fn now_section(r: &LabReport) -> String {
    let mut s = String::new();
    if let Some(n) = &r.now {
        let c = &n.config;
        let rows: String = n
            .fields
            .iter()
            .map(|f| {
                let mark = if f.live == f.predicted { "" } else { " style=\"color:#b00\"" };
                format!(
                    "<tr><td>{}</td><td>{}</td><td{mark}>{}</td></tr>",
                    esc(&f.field),
                    f.live,
                    f.predicted
                )
            })
            .collect();
        s += &format!(
            "<h2>Now: {} with {}</h2><p>Swap priority {}; disksize {} bytes; mem_limit {}.</p>\
             <table><tr><th>mm_stat field</th><th>live</th><th>zmem predicts</th></tr>{rows}</table>\
             <p>{}</p><p>Pool fragmentation: {} bytes (the live <code>mem_used_total</code> less \
             zmem's freshly packed pool); <code>echo 1 &gt; compact</code> gives back at most {} \
             bytes.</p>",
            esc(&c.device),
            esc(&c.comp_algorithm),
            c.swap_priority.map_or("-".into(), |p| p.to_string()),
            c.disksize_bytes,
            if c.mem_limit_bytes == 0 { "none".into() } else { c.mem_limit_bytes.to_string() },
            match &n.drift {
                None => "orig_data_size, compr_data_size and huge_pages agree exactly: the device \
                         was quiet while it was read."
                    .to_string(),
                Some(d) => format!("Drift: {}", esc(d)),
            },
            n.fragmentation_bytes,
            n.compact_gain_bytes
        );
    }
    s += &format!(
        "<p>Rates: {:.1} swap-ins/s, {:.1} swap-outs/s ({}: {}).</p>",
        r.rates.swap_ins_per_sec,
        r.rates.swap_outs_per_sec,
        esc(&r.rates.source),
        esc(&r.rates.note)
    );
    if let Some(p) = &r.pressure {
        let items: String =
            crate::pressure::lines(p).iter().map(|l| format!("<li>{}</li>", esc(l))).collect();
        s += &format!("<ul class=\"pressure\">{items}</ul>");
    }
    s
}

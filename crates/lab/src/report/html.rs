//! The offline HTML report: one file, inline CSS and SVG, no scripts.

use super::svg;
use crate::lab::LabReport;

/// The accent colour of each plot, in page order; the screenshot test looks for them.
pub const PLOT_COLORS: [(&str, &str); 5] = [
    ("ratio vs compress speed", "#1f77b4"),
    ("memory-freeing speed", "#2ca02c"),
    ("pool size per allocator", "#d62728"),
    ("recompression gains", "#9467bd"),
    ("load latency", "#ff7f0e"),
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

pub fn render_html(r: &LabReport) -> String {
    let c = |i: usize| PLOT_COLORS[i].1;
    let algos: Vec<_> = r.compressors.iter().filter(|x| x.algo != "memcpy").collect();
    let scatter = svg::scatter(
        "Compression ratio against compress speed",
        &algos.iter().map(|x| (x.algo.clone(), x.comp_mbps, x.ratio)).collect::<Vec<_>>(),
        "compress MB/s (log scale)",
        "ratio",
        true,
        c(0),
    );
    let freeing = svg::bars(
        "Memory-freeing speed per algorithm",
        &algos.iter().map(|x| (x.algo.clone(), x.freeing_mbps)).collect::<Vec<_>>(),
        "MB/s",
        c(1),
    );
    let pools = svg::bars(
        "Pool size per allocator (zram, same pages)",
        &r.allocators
            .iter()
            .map(|a| (a.allocator.clone(), a.pool_bytes as f64 / (1 << 20) as f64))
            .collect::<Vec<_>>(),
        "MiB",
        c(2),
    );
    let gains = svg::bars(
        "Pool size per zram policy (recompression gains)",
        &r.policies
            .iter()
            .map(|p| (p.policy.name.clone(), p.pool_bytes as f64 / (1 << 20) as f64))
            .collect::<Vec<_>>(),
        "MiB",
        c(3),
    );
    let hists: String = r
        .policies
        .iter()
        .map(|p| {
            svg::log2_histogram(
                &format!("Load latency, {} (ns, log2 buckets)", p.policy.name),
                &p.load_latency.log2_buckets,
                c(4),
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    let rec = &r.recommendation;
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
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>zmem lab report</title>\
         <style>body{{font-family:sans-serif;max-width:760px;margin:2em auto;color:#222}}\
         table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}\
         td:first-child{{text-align:left}}.rec{{background:#f4f8ff;border:1px solid #9bd;padding:1em}}\
         svg{{display:block;margin:1em 0}}</style></head><body>\
         <h1>zmem lab report</h1>\
         <p>{} pages of {} bytes &mdash; {}: {}</p>\
         <div class=\"rec\"><h2>Recommendation: {}</h2>\
         <p>Expected ratio {:.2}; memory saved {:.1} %; {:.2} CPU s per GB compressed; load p50 {} ns, p99 {} ns.</p>\
         <p>{}</p><p><small>Rule: {}</small></p><pre>{}</pre></div>\
         <h2>Compressors</h2><table><tr><th>algo</th><th>ratio</th><th>comp MB/s</th><th>decomp MB/s</th><th>freeing MB/s</th><th>verified</th></tr>{}</table>\
         {}\n{}\n<h2>Allocators</h2>{}\n<h2>zram policies</h2>{}\n{}\n\
         <p><small>zmem {} &middot; schema {}</small></p></body></html>\n",
        r.source.pages,
        r.source.page_size,
        esc(&r.source.kind),
        esc(&r.source.detail),
        esc(&rec.config),
        rec.expected_ratio,
        rec.memory_saved_percent,
        rec.cpu_seconds_per_gb,
        rec.load_latency_p50_ns,
        rec.load_latency_p99_ns,
        esc(&rec.why),
        esc(&rec.rule),
        esc(&rec.attributes.join("\n")),
        rows,
        scatter,
        freeing,
        pools,
        gains,
        hists,
        esc(&r.zmem_version),
        r.schema_version,
    )
}

//! Rendering a [`LabReport`]: the terminal summary, and the self-contained HTML report with SVG
//! plots. Nothing here measures.

mod html;
pub mod svg;

pub use html::{PLOT_COLORS, render_html};

use crate::comp_bench::render_table;
use crate::lab::LabReport;

/// The terminal summary: source, the three tables and the recommendation.
pub fn render_summary(r: &LabReport) -> String {
    let mib = |b: f64| b / (1 << 20) as f64;
    let mut s = format!(
        "zmem lab: {} pages of {} bytes ({}: {})\n\n",
        r.source.pages, r.source.page_size, r.source.kind, r.source.detail
    );
    s += "Compressors (one stream, one thread; freeing = compress speed x share of memory freed)\n";
    s += &render_table(&r.compressors);
    s += "\nAllocators (zram, default algorithm, same pages; rejected pages are not in the pool)\n";
    s += &format!(
        "{:<10} {:>12} {:>10} {:>10} {:>12}\n",
        "allocator", "pool MiB", "vs zsmalloc", "rejected", "write MB/s"
    );
    for a in &r.allocators {
        s += &format!(
            "{:<10} {:>12.2} {:>10.3} {:>10} {:>12.0}\n",
            a.allocator,
            mib(a.pool_bytes as f64),
            a.relative_to_zsmalloc,
            a.rejected_pages,
            a.write_mbps
        );
    }
    s += "\nzram policies (pool after the policy ran; load = one read of every page)\n";
    s += &format!(
        "{:<22} {:>9} {:>7} {:>11} {:>10} {:>10} {:>9}\n",
        "policy", "pool MiB", "ratio", "CPU s/GB", "p50 ns", "p99 ns", "verified"
    );
    for p in &r.policies {
        s += &format!(
            "{:<22} {:>9.2} {:>7.3} {:>11.2} {:>10} {:>10} {:>9}\n",
            p.policy.name,
            mib(p.pool_bytes as f64),
            p.effective_ratio,
            p.cpu_seconds_per_gb,
            p.load_latency.p50_ns,
            p.load_latency.p99_ns,
            if p.verified { "yes" } else { "NO" }
        );
    }
    let rec = &r.recommendation;
    s += &format!(
        "\nRecommendation: {}\n  expected ratio {:.2}, memory saved {:.1} %, {:.2} CPU s per GB compressed, load p50 {} ns / p99 {} ns\n  {}\n  rule: {}\n  set it up with:\n",
        rec.config,
        rec.expected_ratio,
        rec.memory_saved_percent,
        rec.cpu_seconds_per_gb,
        rec.load_latency_p50_ns,
        rec.load_latency_p99_ns,
        rec.why,
        rec.rule
    );
    for a in &rec.attributes {
        s += &format!("    {a}\n");
    }
    s
}

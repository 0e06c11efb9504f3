//! The lab's terminal summary and its apply script, from a [`LabReport`]. Nothing here
//! measures.

use zmem_lab::LabReport;

use crate::svg;

use crate::experiments::comp_table as render_table;

/// The terminal summary: source, the three tables and the recommendation.
pub fn render_summary(r: &LabReport) -> String {
    let mib = |b: f64| b / (1 << 20) as f64;
    let mut s = String::new();
    if let Some(why) = &r.source.fallback_reason {
        s += &format!("zmem lab: fell back to {} pages: {why}\n", r.source.kind);
    }
    s += &format!(
        "zmem lab: {} pages of {} bytes ({}: {})\n",
        r.source.pages, r.source.page_size, r.source.kind, r.source.detail
    );
    s += &format!("{}\n\n", kernel_line(&r.kernel));
    s += &now_text(r);
    s += &estimates_text(r);
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
    s += &format!(
        "\nzram vs zswap under memory pressure ({} trace, {} accesses; zswap: 20 % pool cap, \
         swap file)\n",
        r.trace.kind, r.trace.accesses
    );
    let d = &r.swap_device;
    s += &format!(
        "swap device: {} ({}), 4 KiB read p50 {} / p99 {} us, write p50 {} / p99 {} us; {}\n",
        d.name,
        d.kind,
        d.read.p50_ns / 1000,
        d.read.p99_ns / 1000,
        d.write.p50_ns / 1000,
        d.write.p99_ns / 1000,
        d.note
    );
    s += "swap-in latency end to end, ns: all; from memory (zswap hit, zram); from the device \
          (zswap miss, zram written back)\n";
    s += &format!(
        "{:<6} {:>9} {:>9} {:>9} {:>8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8}\n",
        "swap",
        "RAM pages",
        "swap-ins",
        "pool MiB",
        "disk rd",
        "disk wr",
        "all p50",
        "all p99",
        "mem p50",
        "mem p99",
        "dev p50",
        "dev p99",
        "dev s",
        "verified"
    );
    for w in &r.swap {
        s += &format!(
            "{:<6} {:>9} {:>9} {:>9.2} {:>8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8.3} {:>8}\n",
            w.swap,
            w.ram_pages,
            w.swap_ins,
            mib(w.max_pool_bytes as f64),
            w.disk_reads,
            w.disk_writes,
            w.load_p50_ns,
            w.load_p99_ns,
            w.hit_p50_ns,
            w.hit_p99_ns,
            dash(w.device_swap_ins, w.device_p50_ns),
            dash(w.device_swap_ins, w.device_p99_ns),
            w.device_seconds,
            if w.verified { "yes" } else { "NO" }
        );
    }
    s += &change_table(r);
    let rec = &r.recommendation;
    if let Some(u) = crate::advice::uncertain(r) {
        s += &format!(
            "\nRecommendation: none, {u}.\n  (On these pages alone {} came first: ratio {:.2}, \
             memory saved {:.1} %; not advice.)\n",
            rec.config, rec.expected_ratio, rec.memory_saved_percent
        );
        return s;
    }
    let apply = crate::apply::build(r);
    s += &format!(
        "\nRecommendation: {}\n  expected ratio {:.2}, memory saved {:.1} %, {:.2} CPU s per GB compressed, load p50 {} ns / p99 {} ns\n  {}\n  rule: {}\n  set it up with:\n",
        rec.config,
        rec.expected_ratio,
        rec.memory_saved_percent,
        rec.cpu_seconds_per_gb,
        rec.load_latency_p50_ns,
        rec.load_latency_p99_ns,
        crate::advice::why(r),
        rec.rule
    );
    if !rec.available {
        s += &format!(
            "  this kernel cannot run it: {}\n",
            rec.unavailable_reason.as_deref().unwrap_or("unknown reason")
        );
    }
    for line in better_kernel_lines(r) {
        s += &format!("  {line}\n");
    }
    for w in &apply.warnings {
        s += &format!("  WARNING: {w}\n");
    }
    for a in &apply.sysfs {
        s += &format!("    {a}\n");
    }
    s += &format!(
        "  or with zram-generator (/etc/systemd/zram-generator.conf.d/60-zmem.conf):\n{}",
        indent(&apply.generator_conf, "    ")
    );
    for v in &apply.generator_versions {
        s += &format!("    # {v}\n");
    }
    if let (Some(service), Some(timer)) = (&apply.service, &apply.timer) {
        s += &format!(
            "  and a systemd timer for the periodic recompression:\n    # {u}.service\n{}    # {u}.timer\n{}",
            indent(service, "    "),
            indent(timer, "    "),
            u = crate::apply::UNIT
        );
    }
    s += "  (zmem lab --apply-script FILE writes all of it as one script to review; nothing is run)\n";
    s += &crate::zswap::text(r);
    s
}

/// What the kernel offers, in one line: `kernel 6.18: zram lzo-rle lzo lz4, no recompression,
/// writeback; zswap lzo deflate`.
pub fn kernel_line(k: &zmem_lab::KernelCaps) -> String {
    let zram = if !k.zram_present {
        "no zram".to_string()
    } else if k.zram_algorithms.is_empty() {
        "zram with unknown compressors".to_string()
    } else {
        format!(
            "zram {}, {}recompression, {}writeback",
            k.zram_algorithms.join(" "),
            if k.zram_recompress { "" } else { "no " },
            if k.zram_writeback { "" } else { "no " }
        )
    };
    let zswap = if !k.zswap_present {
        "no zswap".to_string()
    } else if k.zswap_compressors.is_empty() {
        "zswap".to_string()
    } else {
        format!("zswap {}", k.zswap_compressors.join(" "))
    };
    let release = if k.release.is_empty() { "?" } else { &k.release };
    format!("kernel {release}: {zram}; {zswap} ({})", k.source)
}

/// What a better-equipped kernel would add: `with CONFIG_ZRAM_BACKEND_ZSTD: +12.3 MiB (zstd)`.
pub fn better_kernel_lines(r: &LabReport) -> Vec<String> {
    r.recommendation
        .better_kernel
        .iter()
        .map(|b| {
            format!(
                "with {}: +{:.1} MiB ({})",
                b.needs,
                b.extra_saved_bytes as f64 / (1 << 20) as f64,
                b.config
            )
        })
        .collect()
}

/// The estimates for every page of the input, when the pages measured are a random sample.
fn estimates_text(r: &LabReport) -> String {
    let Some(e) = &r.estimates else { return String::new() };
    let mib = |b: f64| b / (1 << 20) as f64;
    let d = &e.design;
    let mut s = format!(
        "Estimates for all {} pages from a random sample of {} ({} same-filled pages counted on every page; {:.0} % confidence intervals)\n",
        d.population_pages,
        d.sample_pages,
        d.population_same_filled,
        100.0 * e.confidence
    );
    s += &format!(
        "  {:<10} {:>28} {:>22} {:>28}\n",
        "algorithm", "pool MiB", "ratio", "memory saved MiB"
    );
    for x in &e.rows {
        s += &format!(
            "  {:<10} {:>10.2} [{:>7.2}, {:>7.2}] {:>6.3} [{:>5.3}, {:>5.3}] {:>10.2} [{:>7.2}, {:>7.2}]\n",
            x.algo,
            mib(x.pool_bytes.estimate),
            mib(x.pool_bytes.low),
            mib(x.pool_bytes.high),
            x.ratio.estimate,
            x.ratio.low,
            x.ratio.high,
            mib(x.memory_saved_bytes.estimate),
            mib(x.memory_saved_bytes.low),
            mib(x.memory_saved_bytes.high),
        );
    }
    s += &format!("  method: {}\n\n", e.method);
    s
}

/// The "Now" section (the live zram device, when the pages are one's) and the rates.
fn now_text(r: &LabReport) -> String {
    let mib = |b: f64| b / (1 << 20) as f64;
    let mut s = String::new();
    if let Some(n) = &r.now {
        let c = &n.config;
        s += &format!(
            "Now: {} with {}{} (swap priority {}, disksize {:.0} MiB, mem_limit {})\n",
            c.device,
            c.comp_algorithm,
            c.recomp_algorithm
                .as_deref()
                .map(|a| format!(", recompression {a}"))
                .unwrap_or_default(),
            c.swap_priority.map_or("-".into(), |p| p.to_string()),
            mib(c.disksize_bytes as f64),
            if c.mem_limit_bytes == 0 { "none".into() } else { format!("{} B", c.mem_limit_bytes) }
        );
        s += &format!("  {:<16} {:>14} {:>14}\n", "mm_stat field", "live", "zmem predicts");
        for f in &n.fields {
            s += &format!("  {:<16} {:>14} {:>14}\n", f.field, f.live, f.predicted);
        }
        s += &match &n.drift {
            None => {
                "  orig, compr and huge agree exactly: the device was quiet while it was read\n"
                    .to_string()
            }
            Some(d) => format!("  drift: {d}\n"),
        };
        s += &format!(
            "  pool fragmentation {:.2} MiB (live mem_used_total less zmem's packed pool); \
             `echo 1 > compact` gives back at most {:.2} MiB\n",
            mib(n.fragmentation_bytes as f64),
            mib(n.compact_gain_bytes as f64)
        );
    }
    s += &format!(
        "Rates: {:.1} swap-ins/s, {:.1} swap-outs/s ({}: {})\n\n",
        r.rates.swap_ins_per_sec, r.rates.swap_outs_per_sec, r.rates.source, r.rates.note
    );
    s
}

fn indent(text: &str, by: &str) -> String {
    text.lines().map(|l| format!("{by}{l}\n")).collect()
}

/// What every column of the change-from-now table means (terminal and HTML).
pub const CHANGE_MEANINGS: [(&str, &str); 7] = [
    (
        "saved MiB",
        "memory saved against now on the whole device: now's bytes less the candidate's pool, \
         measured on the sampled pages and scaled to the pages the device stores (a \
         dictionary's own bytes added once)",
    ),
    (
        "CPU %",
        "CPU time per second, in % of one core: swap-outs/s x compress CPU per page + \
         swap-ins/s x decompress CPU per page + recompressed pages/s x recompress CPU per page \
         (thread CPU time measured on the pages, not wall time) + the kernel's own reclaim and \
         fault work per swap-out and swap-in, the same for every row",
    ),
    ("dCPU %", "CPU % less now's"),
    ("p50 us / p99 us", "swap-in (read and decompress one page) latency measured on the pages"),
    ("dp99 us", "p99 less now's: what the candidate adds to a major fault"),
    ("1st pass s", "CPU seconds of the first recompression pass over what the device holds"),
    ("fits", "yes: read every page back, within the CPU budget and within the added-p99 budget"),
];

/// The candidates as changes from now, for the terminal.
fn change_table(r: &LabReport) -> String {
    let rec = &r.recommendation;
    let mib = |b: i64| b as f64 / (1 << 20) as f64;
    let mut s = format!(
        "\nChange from now ({}; now = {}: {}), at {:.1} swap-ins/s and {:.1} swap-outs/s ({}), \
         recompression every {:.0} s; budgets: {} % of one core, +{} us p99\n",
        if rec.keep_current { "keep now" } else { "change" },
        rec.now_config,
        rec.now_source,
        r.rates.swap_ins_per_sec,
        r.rates.swap_outs_per_sec,
        r.rates.source,
        r.budgets.recompress_period_secs,
        r.budgets.cpu_percent_of_core,
        r.budgets.added_load_p99_us,
    );
    s += &format!(
        "  {:<26} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>10} {:>5}\n",
        "candidate",
        "saved MiB",
        "CPU %",
        "dCPU %",
        "p50 us",
        "p99 us",
        "dp99 us",
        "1st pass s",
        "fits"
    );
    for c in &r.candidates {
        let mark = match (c.name == rec.config, c.is_current) {
            (true, true) => "*>",
            (true, false) => " >",
            (false, true) => "* ",
            _ => "  ",
        };
        s += &format!(
            "{mark}{:<26} {:>10.2} {:>8.3} {:>+8.3} {:>8.2} {:>8.2} {:>+8.2} {:>10.2} {:>5}\n",
            c.name,
            mib(c.memory_saved_bytes_vs_now),
            100.0 * c.cpu_secs_per_sec,
            100.0 * c.added_cpu_secs_per_sec,
            c.load_p50_ns as f64 / 1000.0,
            c.load_p99_ns as f64 / 1000.0,
            c.added_load_p99_ns as f64 / 1000.0,
            c.first_pass_cpu_secs,
            if c.within_budgets { "yes" } else { "no" }
        );
    }
    s += "  * now  > recommended\n";
    for (k, v) in CHANGE_MEANINGS {
        s += &format!("  {k}: {v}\n");
    }
    s
}

/// The trade-off chart's points: one per candidate.
pub(crate) fn trade_points(r: &LabReport) -> Vec<svg::TradePoint> {
    r.candidates
        .iter()
        .map(|c| svg::TradePoint {
            label: c.name.clone(),
            cpu_percent: 100.0 * c.cpu_secs_per_sec,
            saved_mib: c.memory_saved_bytes_vs_now as f64 / (1 << 20) as f64,
            is_current: c.is_current,
            is_chosen: c.name == r.recommendation.config,
            within_budgets: c.within_budgets,
        })
        .collect()
}

/// The shell script that applies the recommendation (`zmem lab --apply-script FILE`): the
/// zram-generator section, the recompression timer where needed, and the sysfs lines; for the
/// user to review, nothing is run.
pub fn render_apply_script(r: &LabReport) -> String {
    let rec = &r.recommendation;
    if let Some(u) = crate::advice::uncertain(r) {
        return format!("#!/bin/sh\n# zmem lab: no recommendation: {u}.\nexit 1\n");
    }
    let dict =
        r.policies.iter().find(|p| p.policy.name == rec.config).and_then(|p| p.dict.as_deref());
    crate::apply::script(&rec.config, &crate::apply::build(r), dict) + &crate::zswap::script(r)
}

/// A latency, or `-` where nothing was measured.
fn dash(count: u64, ns: u64) -> String {
    if count == 0 { "-".into() } else { ns.to_string() }
}

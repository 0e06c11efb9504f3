//! The lab's terminal summary and its apply script, from a [`LabReport`]. Nothing here
//! measures.

use zmem_lab::{Candidate, LabReport, NowSource, OverBudget};

use crate::svg;
use crate::table;

use crate::experiments::comp_table as render_table;

/// The terminal summary: source, the three tables and the recommendation.
pub fn render_summary(r: &LabReport) -> String {
    // Names, paths and reasons can come from a page set's metadata: no escape sequence passes.
    crate::script::terminal(&summary(r))
}

fn summary(r: &LabReport) -> String {
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
    // The answer first; everything after it is the evidence.
    s += &crate::decision::text(r);
    s += "The evidence:\n\n";
    s += &now_text(r);
    s += &estimates_text(r);
    s += "Compressors (one stream, one thread; freeing = compress speed x share of memory freed)\n";
    s += &render_table(&r.compressors);
    s += "\nAllocators (zram, default algorithm, same pages; rejected pages are not in the pool)\n";
    let rows: Vec<Vec<String>> = r
        .allocators
        .iter()
        .map(|a| {
            vec![
                a.allocator.clone(),
                format!("{:.2}", mib(a.pool_bytes as f64)),
                format!("{:.3}", a.relative_to_zsmalloc),
                a.rejected_pages.to_string(),
                format!("{:.0}", a.write_mbps),
            ]
        })
        .collect();
    s += &table::render(
        "",
        "lrrrr",
        &["allocator", "pool MiB", "vs zsmalloc", "rejected", "write MB/s"],
        &rows,
    );
    s += "\nzram policies (pool after the policy ran; load = one read of every page)\n";
    let rows: Vec<Vec<String>> = r
        .policies
        .iter()
        .map(|p| {
            vec![
                p.policy.name.clone(),
                format!("{:.2}", mib(p.pool_bytes as f64)),
                format!("{:.3}", p.effective_ratio),
                format!("{:.2}", p.cpu_seconds_per_gb),
                p.load_latency.p50_ns.to_string(),
                p.load_latency.p99_ns.to_string(),
                yes_no(p.verified, "NO").into(),
            ]
        })
        .collect();
    s += &table::render(
        "",
        "lrrrrrr",
        &["policy", "pool MiB", "ratio", "CPU s/GB", "p50 ns", "p99 ns", "verified"],
        &rows,
    );
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
    let rows: Vec<Vec<String>> = r
        .swap
        .iter()
        .map(|w| {
            vec![
                w.swap.to_string(),
                w.ram_pages.to_string(),
                w.swap_ins.to_string(),
                format!("{:.2}", mib(w.max_pool_bytes as f64)),
                w.disk_reads.to_string(),
                w.disk_writes.to_string(),
                w.load_p50_ns.to_string(),
                w.load_p99_ns.to_string(),
                w.hit_p50_ns.to_string(),
                w.hit_p99_ns.to_string(),
                dash(w.device_swap_ins, w.device_p50_ns),
                dash(w.device_swap_ins, w.device_p99_ns),
                format!("{:.3}", w.device_seconds),
                yes_no(w.verified, "NO").into(),
            ]
        })
        .collect();
    s += &table::render(
        "",
        "lrrrrrrrrrrrrr",
        &[
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
            "verified",
        ],
        &rows,
    );
    s += &change_table(r);
    for line in better_kernel_lines(r) {
        s += &format!("  {line}\n");
    }
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
    r.decision
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
    let iv = |x: &zmem_lab::sample::Interval, f: &dyn Fn(f64) -> f64, p: usize| {
        format!("{:.p$} [{:.p$}, {:.p$}]", f(x.estimate), f(x.low), f(x.high))
    };
    let rows: Vec<Vec<String>> = e
        .rows
        .iter()
        .map(|x| {
            vec![
                x.algo.clone(),
                iv(&x.pool_bytes, &mib, 2),
                iv(&x.ratio, &|v| v, 3),
                iv(&x.memory_saved_bytes, &mib, 2),
            ]
        })
        .collect();
    s += &table::render(
        "  ",
        "lrrr",
        &["algorithm", "pool MiB", "ratio", "memory saved MiB"],
        &rows,
    );
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
        let rows: Vec<Vec<String>> = n
            .fields
            .iter()
            .map(|f| vec![f.field.clone(), f.live.to_string(), f.predicted.to_string()])
            .collect();
        s += &table::render("  ", "lrr", &["mm_stat field", "live", "zmem predicts"], &rows);
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
        "Rates: {:.1} swap-ins/s, {:.1} swap-outs/s ({}: {})\n",
        r.rates.swap_ins_per_sec, r.rates.swap_outs_per_sec, r.rates.source, r.rates.note
    );
    for (i, l) in r.pressure.iter().flat_map(crate::pressure::lines).enumerate() {
        s += &format!("{}{l}\n", if i == 0 { "" } else { "  " });
    }
    if let Some(c) = &r.cold {
        s += &crate::cold::render(c);
    }
    s + "\n"
}

/// What every column of the change-from-now table means (terminal and HTML).
pub const CHANGE_MEANINGS: [(&str, &str); 10] = [
    (
        "saved MiB",
        "memory saved against now for every page: now's bytes less the candidate's pool, \
         measured on the sampled pages and scaled to the pages the device stores or the input \
         holds (a dictionary's own bytes added once; zswap's pool scaled from zram's by the \
         replays' ratio)",
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
    (
        "dp99 us",
        "what the candidate adds to a major fault's p99, end to end: the read's p99 less now's, \
         and where memory is full the 32 pages the fault reclaims, each compressed by the \
         candidate (the latency budget is checked on this)",
    ),
    ("1st pass s", "CPU seconds of the first recompression pass over what the device holds"),
    ("hits %", "zswap: the replay's swap-ins served from its pool (the rest read the device)"),
    ("dev MB/s", "zswap: bytes written to the swap device per second at the swap rates"),
    ("fits", "yes: read every page back, within the CPU budget and within the added-p99 budget"),
    ("available", "yes: this kernel can run it; no: it cannot, and the notes say why"),
];

/// Where now's bytes come from, in words.
pub fn now_source(r: &LabReport) -> String {
    let b = &r.decision.basis;
    match b.now_source {
        NowSource::LiveZram => format!(
            "the live device's mem_used_total ({} pages stored; its fragmentation included, so \
             the current configuration's row shows what a fresh pool would give back)",
            b.pages
        ),
        NowSource::LiveZswap => {
            format!("the pool of the zswap configuration that runs now, for {} pages", b.pages)
        }
        NowSource::Uncompressed if r.estimates.is_some() => format!(
            "no compressed swap runs: the {} pages of the input uncompressed (estimated from the \
             sample)",
            b.pages
        ),
        NowSource::Uncompressed => {
            format!("no compressed swap runs: the {} pages measured, uncompressed", b.pages)
        }
    }
}

/// The rule the judge applied, in words, for the report.
pub fn rule(b: &zmem_lab::Budgets) -> String {
    format!(
        "among configurations this kernel runs that read every page back, use at most {} % of \
         one core (CPU seconds per second at the swap rates, the kernel's reclaim and fault work \
         and background recompression every {:.0} s included) and add at most {} us to the p99 \
         swap-in end to end, the one saving the most memory against now; savings equal within \
         their uncertainty (or 1 % of now) are a tie, broken by clearly less CPU, then the \
         simpler setup, then what runs now, then the kernel's order; if none fits, keep what runs",
        b.cpu_percent_of_core, b.recompress_period_secs, b.added_load_p99_us
    )
}

/// The candidates as changes from now, for the terminal: zram's, zswap's and "none", one table.
fn change_table(r: &LabReport) -> String {
    let d = &r.decision;
    let mib = |b: i64| b as f64 / (1 << 20) as f64;
    let mut s = format!(
        "\nEvery candidate against now (now = {}: {}), at {:.1} swap-ins/s and {:.1} swap-outs/s \
         ({}), recompression every {:.0} s; budgets: {} % of one core, +{} us p99\n  rule: {}\n",
        d.basis.now_config,
        now_source(r),
        r.rates.swap_ins_per_sec,
        r.rates.swap_outs_per_sec,
        r.rates.source,
        r.budgets.recompress_period_secs,
        r.budgets.cpu_percent_of_core,
        r.budgets.added_load_p99_us,
        rule(&r.budgets),
    );
    let dev = |c: &Candidate, f: &dyn Fn(&zmem_lab::candidate::DeviceTraffic) -> String| {
        c.device.as_ref().map_or("-".to_string(), f)
    };
    let rows: Vec<Vec<String>> = r
        .candidates
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mark = match (d.chosen == Some(i), c.runs_now) {
                (true, true) => "*>",
                (true, false) => " >",
                (false, true) => "*",
                _ => "",
            };
            vec![
                mark.to_string(),
                c.name.clone(),
                format!("{:.2}", mib(c.memory_saved_bytes)),
                format!("{:.3}", 100.0 * c.cpu_secs_per_sec),
                format!("{:+.3}", 100.0 * c.added_cpu_secs_per_sec),
                format!("{:.2}", c.load_p50_ns as f64 / 1000.0),
                format!("{:.2}", c.load_p99_ns as f64 / 1000.0),
                format!("{:+.2}", c.added_load_p99_ns as f64 / 1000.0),
                format!("{:.2}", c.first_pass_cpu_secs),
                dev(c, &|x| format!("{:.0}", 100.0 * x.hit_fraction)),
                dev(c, &|x| format!("{:.2}", x.device_write_bytes_per_sec / 1e6)),
                yes_no(fits(c), "no").into(),
                yes_no(c.available, "no").into(),
            ]
        })
        .collect();
    s += &table::render(
        "",
        "llrrrrrrrrrrr",
        &[
            "",
            "candidate",
            "saved MiB",
            "CPU %",
            "dCPU %",
            "p50 us",
            "p99 us",
            "dp99 us",
            "1st pass s",
            "hits %",
            "dev MB/s",
            "fits",
            "available",
        ],
        &rows,
    );
    s += "  * runs now  > the decision\n";
    for c in r.candidates.iter().filter(|c| !c.available) {
        s += &format!(
            "  {} is not available: {}\n",
            c.name,
            c.unavailable_reason.as_deref().unwrap_or("unknown reason")
        );
    }
    for (k, v) in CHANGE_MEANINGS {
        s += &format!("  {k}: {v}\n");
    }
    s
}

/// The trade-off chart's points: one per candidate.
pub(crate) fn trade_points(r: &LabReport) -> Vec<svg::TradePoint> {
    r.candidates
        .iter()
        .enumerate()
        .map(|(i, c)| svg::TradePoint {
            label: c.name.clone(),
            cpu_percent: 100.0 * c.cpu_secs_per_sec,
            saved_mib: c.memory_saved_bytes as f64 / (1 << 20) as f64,
            is_current: c.runs_now,
            is_chosen: r.decision.chosen == Some(i),
            within_budgets: c.within_budgets,
        })
        .collect()
}

/// The shell script that applies the decision (`zmem lab --apply-script FILE`), for the user
/// to review; nothing is run ([`crate::decision::apply_script`]). An error names the value
/// that cannot go into a script.
pub fn render_apply_script(r: &LabReport) -> Result<String, crate::script::ScriptError> {
    crate::decision::apply_script(r)
}

/// Whether a candidate fits: read every page back, within the CPU budget and within the
/// added-p99 budget (the legend's "fits"), whether or not this kernel can run it (the
/// "available" column). The lab's `within_budgets` also requires availability.
pub(crate) fn fits(c: &Candidate) -> bool {
    c.verified && over_budget(c).next().is_none()
}

/// Why a candidate is not within the budgets, in words, its unavailability left out.
pub(crate) fn over_budget(c: &Candidate) -> impl Iterator<Item = String> + '_ {
    c.over_budget.iter().filter_map(|o| match o {
        OverBudget::Unavailable => None,
        OverBudget::NotVerified => Some("did not read every page back".to_string()),
        OverBudget::Cpu { cpu_secs_per_sec, budget_percent } => {
            Some(format!("CPU {:.3} % of a core > {budget_percent} %", 100.0 * cpu_secs_per_sec))
        }
        OverBudget::Latency { added_p99_ns, budget_us } => Some(format!(
            "adds {:.1} us to the p99 swap-in > {budget_us} us",
            *added_p99_ns as f64 / 1000.0
        )),
    })
}

fn yes_no(yes: bool, no: &'static str) -> &'static str {
    if yes { "yes" } else { no }
}

/// A latency, or `-` where nothing was measured.
fn dash(count: u64, ns: u64) -> String {
    if count == 0 { "-".into() } else { ns.to_string() }
}

//! `zmem validate lab`'s terminal table: for each configuration the kernel ran, the lab's
//! prediction beside the kernel's figures and the relative error, then the orders by memory.

use zmem_validate::lab::{ConfigCheck, LabValidation, RunLatency};
use zmem_validate::zswap_lab::{ZswapCheck, ZswapValidation};

fn percent(e: Option<f64>) -> String {
    e.map_or_else(|| "n/a".into(), |e| format!("{:+.1} %", e * 100.0))
}

fn config_table(c: &ConfigCheck) -> String {
    let (p, k, e) = (&c.predicted, &c.kernel, &c.error);
    let mut out = format!("{}\n", c.config);
    out += &format!("  {:<18} {:>14} {:>14} {:>9}\n", "", "lab", "kernel", "error");
    let ints = [
        ("peak pool bytes", p.peak_pool_bytes, k.peak_pool_bytes, e.peak_pool_bytes),
        ("final pool bytes", p.final_pool_bytes, k.final_pool_bytes, e.final_pool_bytes),
        ("swap-outs", p.swap_outs, k.swap_outs, e.swap_outs),
        ("swap-ins", p.swap_ins, k.swap_ins, e.swap_ins),
        ("swap-in p50 ns", p.swap_in_p50_ns, k.swap_in_p50_ns, e.swap_in_p50_ns),
        ("swap-in p99 ns", p.swap_in_p99_ns, k.swap_in_p99_ns, e.swap_in_p99_ns),
    ];
    let file = ("file refaults", p.file_refaults, k.file_refaults, e.file_refaults);
    // Page cache rows only where the trace has some (a refault on either side).
    let file = (p.file_refaults + k.file_refaults > 0).then_some(file);
    for (name, l, kv, err) in ints.into_iter().chain(file) {
        out += &format!("  {name:<18} {l:>14} {kv:>14} {:>9}\n", percent(err));
    }
    out += &format!(
        "  {:<18} {:>14} {:>14} {:>9}\n",
        "page set's pool",
        c.lab_pool_bytes,
        c.kernel_set_pool_bytes,
        percent(c.lab_pool_error)
    );
    out += &format!(
        "  {:<18} {:>14.3} {:>14.3} {:>9}\n",
        "CPU seconds",
        p.cpu_seconds,
        k.cpu_seconds,
        percent(e.cpu_seconds)
    );
    if c.kernel_runs.len() + c.kernel_failures.len() > 1 {
        let outs: Vec<String> = c.kernel_runs.iter().map(|r| r.swap_outs.to_string()).collect();
        out += &format!("  kernel runs' swap-outs: {} (the median's above)\n", outs.join(", "));
        out += &runs_latency(&c.kernel_runs_latency);
    }
    for f in &c.kernel_failures {
        out += &format!("  kernel: a run failed: {f}\n");
    }
    if !c.verified {
        out += "  lab: pages read back differ from the pages written\n";
    }
    out
}

/// The table `zmem validate lab` prints.
pub fn lab_validation(v: &LabValidation) -> String {
    let s = &v.setup;
    let mut out = format!(
        "validate lab: {} accesses over {} pages ({} touched), RAM {} bytes, {} kernel run(s) \
         per configuration\n",
        s.accesses, s.pages, s.touched_pages, s.ram_bytes, s.kernel_runs
    );
    for c in &v.configurations {
        out += &config_table(c);
    }
    out += &format!(
        "order by memory (the page set's pool): lab {} / kernel {} ({})\n",
        v.lab_order.join(" < "),
        v.kernel_order.join(" < "),
        if v.same_order { "the same" } else { "different" }
    );
    out += &format!(
        "baseline (no reclaim, RAM {} bytes): CPU in faulting accesses {:.3} s (the kernel's \
         CPU seconds are net of it), player CPU {:.3} s\n",
        v.baseline.ram_bytes, v.baseline.fault_cpu_secs, v.baseline.player_cpu_secs
    );
    let o = &v.swap_overhead;
    let us = |ns: f64| ns / 1000.0;
    let priced = match o.probe_ns {
        Some(p) => format!("at this machine's first-touch fault of {:.2} us", us(p)),
        None => "at the reference machine's speed (the fault probe failed)".into(),
    };
    out += &match o.measured {
        Some(m) => format!(
            "the kernel's own swap work (same-filled pages): {:.1} us per swap-out, {:.1} us per \
             swap-in fault measured here; the lab prices them {priced} at {:.1} and {:.1} ({} \
             on the swap-out)\n",
            us(m.reclaim_ns_per_swap_out),
            us(m.fault_ns_per_swap_in),
            us(o.model.reclaim_ns_per_swap_out),
            us(o.model.fault_ns_per_swap_in),
            percent(o.reclaim_error)
        ),
        None => format!(
            "the kernel's own swap work: not measured (the same-filled run swapped nothing out); \
             the lab prices it {priced} at {:.1} us per swap-out, {:.1} us per swap-in fault\n",
            us(o.model.reclaim_ns_per_swap_out),
            us(o.model.fault_ns_per_swap_in)
        ),
    };
    for n in &v.not_run {
        out += &format!("not run: {}: {}\n", n.config, n.reason);
    }
    if let Some(z) = &v.zswap {
        out += &zswap_tables(z);
    }
    out
}

fn zswap_table(c: &ZswapCheck) -> String {
    let (p, k, e) = (&c.predicted, &c.kernel, &c.error);
    let mut out = format!("{}\n", c.config);
    out += &format!("  {:<22} {:>14} {:>14} {:>9}\n", "", "lab", "kernel", "error");
    let ints = [
        ("stored_pages", p.stored_pages, k.stored_pages, e.stored_pages),
        ("pool_total_size", p.pool_total_size, k.pool_total_size, e.pool_total_size),
        (
            "peak pool_total_size",
            p.peak_pool_total_size,
            k.peak_pool_total_size,
            e.peak_pool_total_size,
        ),
        ("written_back_pages", p.written_back_pages, k.written_back_pages, e.written_back_pages),
        ("zswpout", p.zswpout, k.zswpout, e.zswpout),
        ("zswpin", p.zswpin, k.zswpin, e.zswpin),
        ("zswpwb", p.zswpwb, k.zswpwb, e.zswpwb),
        ("disk reads (pages)", p.disk_reads, k.disk_reads, e.disk_reads),
        ("disk writes (pages)", p.disk_writes, k.disk_writes, e.disk_writes),
        ("swap-ins", p.swap_ins, k.swap_ins, e.swap_ins),
        ("swap-in p50 ns", p.swap_in_p50_ns, k.swap_in_p50_ns, e.swap_in_p50_ns),
        ("swap-in p99 ns", p.swap_in_p99_ns, k.swap_in_p99_ns, e.swap_in_p99_ns),
    ];
    let file = ("file refaults", p.file_refaults, k.file_refaults, e.file_refaults);
    let file = (p.file_refaults + k.file_refaults > 0).then_some(file);
    for (name, l, kv, err) in ints.into_iter().chain(file) {
        out += &format!("  {name:<22} {l:>14} {kv:>14} {:>9}\n", percent(err));
    }
    out += &format!(
        "  {:<22} {:>14.3} {:>14.3} {:>9}\n",
        "CPU seconds",
        p.cpu_seconds,
        k.cpu_seconds,
        percent(e.cpu_seconds)
    );
    let r = &c.kernel_run;
    out += &format!(
        "  kernel: pool from {}; at least {} stored pages not the player's; zswap restored: {}\n",
        r.pool_source,
        r.foreign_pages_bound,
        if r.params_restored { "yes" } else { "NO" }
    );
    if c.kernel_runs_swap_ins.len() > 1 {
        let list = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
        out += &format!(
            "  kernel runs (the median's above): swap-ins {}; zswpin {}; swap_ra {} (the \
             replay's swap_ra {})\n",
            list(&c.kernel_runs_swap_ins),
            list(&c.kernel_runs_zswpin),
            list(&c.kernel_runs_swap_ra),
            p.swap_ra
        );
        out += &runs_latency(&c.kernel_runs_latency);
    }
    for m in &r.missing {
        out += &format!("  missing: {m}\n");
    }
    for f in &c.kernel_failures {
        out += &format!("  kernel: a run failed: {f}\n");
    }
    out
}

/// The zswap part: each configuration's table, the verdict on both sides, what is global.
fn zswap_tables(z: &ZswapValidation) -> String {
    let mut out = String::new();
    for c in &z.configurations {
        out += &zswap_table(c);
    }
    if let Some(v) = &z.verdict {
        out += &format!(
            "zram or zswap ({} vs {}): the lab picks {}, the kernel's better: {} ({})\n",
            v.zram_config,
            v.zswap_config,
            v.lab_pick,
            v.kernel_served_better,
            if v.agree { "agree" } else { "DISAGREE" }
        );
    }
    for n in &z.not_run {
        out += &format!("not run: {}: {}\n", n.config, n.reason);
    }
    for s in &z.scope {
        out += &format!("scope: {s}\n");
    }
    out
}

/// Each kernel run's swap-in p50 and p99, whose medians the kernel's figures are.
fn runs_latency(runs: &[RunLatency]) -> String {
    if runs.len() < 2 {
        return String::new();
    }
    let us = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
    let p50: Vec<String> = runs.iter().map(|r| us(r.p50_ns)).collect();
    let p99: Vec<String> = runs.iter().map(|r| us(r.p99_ns)).collect();
    format!(
        "  kernel runs' swap-in p50 {} us, p99 {} us (each figure above is its median)\n",
        p50.join(", "),
        p99.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmem_validate::zswap_kernel::ZswapKernelRun;
    use zmem_validate::zswap_lab::{Served, VerdictCheck, ZswapErrors, ZswapFigures};

    #[test]
    fn the_zswap_part_shows_both_sides_what_is_missing_and_the_verdict() {
        let fig = |stored| ZswapFigures { stored_pages: stored, ..ZswapFigures::default() };
        let (p, k) = (fig(95), fig(100));
        let c = ZswapCheck {
            config: "zswap lzo max_pool_percent=20 shrinker=off".into(),
            settings: zmem_validate::zswap_params::parse("lzo").unwrap(),
            error: ZswapErrors::between(&p, &k),
            predicted: p,
            kernel: k,
            replay_ram_pages: 1,
            replay_max_pool_percent: 1,
            kernel_run: ZswapKernelRun {
                params_restored: true,
                missing: vec!["debugfs not mounted".into()],
                ..ZswapKernelRun::default()
            },
            kernel_runs_swap_ins: vec![1, 2],
            kernel_runs_cpu_secs: vec![0.0; 2],
            kernel_runs_stored_pages: vec![0; 2],
            kernel_runs_pool_total_size: vec![0; 2],
            kernel_runs_zswpin: vec![0; 2],
            kernel_runs_zswpout: vec![0; 2],
            kernel_runs_swap_ra: vec![0; 2],
            kernel_runs_latency: vec![
                RunLatency { p50_ns: 8_140, p99_ns: 215_000 },
                RunLatency { p50_ns: 9_000, p99_ns: 230_600 },
            ],
            kernel_failures: Vec::new(),
            verified: true,
        };
        let z = ZswapValidation {
            configurations: vec![c],
            not_run: Vec::new(),
            verdict: Some(VerdictCheck {
                zram_config: "lzo".into(),
                zswap_config: "zswap lzo".into(),
                lab_pick: "zram".into(),
                kernel_served_better: "tie".into(),
                agree: true,
                lab_figures: [Served::default(); 2],
                kernel_figures: [Served::default(); 2],
                rule: String::new(),
            }),
            scope: vec!["global: stored_pages".into()],
        };
        let t = zswap_tables(&z);
        let row = t.lines().find(|l| l.trim_start().starts_with("stored_pages")).unwrap();
        assert!(row.contains("95") && row.contains("100") && row.contains("-5.0 %"), "{row}");
        assert!(t.contains("missing: debugfs not mounted"), "{t}");
        assert!(t.contains("the lab picks zram, the kernel's better: tie (agree)"), "{t}");
        assert!(t.contains("scope: global: stored_pages"), "{t}");
        assert!(t.contains("kernel runs' swap-in p50 8.1, 9.0 us, p99 215.0, 230.6 us"), "{t}");
    }
}

//! The measuring subcommands' results as terminal text: one function per experiment of
//! zmem-experiments, named after it.

use zmem_experiments::comp_bench::Row;
use zmem_experiments::conform::ConformResult;
use zmem_experiments::dict::DictEffect;
use zmem_experiments::mapbench::{MapbenchResult, OBJECT_SIZE};
use zmem_experiments::study::{AllocatorRow, SEED_001};
use zmem_experiments::zram_run::ZramRunResult;
use zmem_experiments::zram_speed::ZramSpeed;
use zmem_validate::replay::Validation;

use crate::replay::latency_hist as render_hist;

/// The table lzbench users know: one line per algorithm, fastest ceiling first.
pub fn comp_table(rows: &[Row]) -> String {
    let mut s = format!(
        "{:<14} {:>12} {:>12} {:>12} {:>13} {:>13} {:>7} {:>9} {:>8}\n",
        "Compressor",
        "Compress.",
        "Decompress.",
        "Freeing",
        "Orig. size",
        "Compr. size",
        "Ratio",
        "Pages",
        "Verified"
    );
    for r in rows {
        s += &format!(
            "{:<14} {:>7.0} MB/s {:>7.0} MB/s {:>7.0} MB/s {:>13} {:>13} {:>7.3} {:>9} {:>8}\n",
            r.algo,
            r.comp_mbps,
            r.decomp_mbps,
            r.freeing_mbps,
            r.input_bytes,
            r.compressed_bytes,
            r.ratio,
            r.pages,
            if r.verified { "yes" } else { "NO" }
        );
    }
    s
}

pub fn conform(r: &ConformResult) -> String {
    let mut s =
        format!("{} pages, algo {}\nzmem   {}\nkernel {}\n", r.pages, r.algo, r.ours, r.kernel);
    if r.identical() {
        s += "mm_stat identical in every field\n";
    } else {
        for (f, a, b) in &r.differing {
            s += &format!("differs: {f}: zmem {a}, kernel {b}\n");
        }
    }
    s
}

/// The terminal summary of [`evaluate`].
pub fn dict_effect(e: &DictEffect) -> String {
    let level = e.level.map_or(String::new(), |l| format!(" level={l}"));
    format!(
        "dictionary: {} bytes, {}{level}, {} pages ({} bytes)\n\
         without: compr_data_size {:>12}  mem_used_total {:>12}  ratio {:.2}\n\
         with:    compr_data_size {:>12}  mem_used_total {:>12}  ratio {:.2} ({:+.1} %)\n\
         verified: {}\n",
        e.dict_bytes,
        e.algo,
        e.pages,
        e.orig_data_size,
        e.compr_without,
        e.mem_used_without,
        e.ratio_without,
        e.compr_with,
        e.mem_used_with,
        e.ratio_with,
        e.gain_percent(),
        if e.verified { "yes" } else { "NO" }
    )
}

/// The seed's kernel-log style: per thread, `<N> cycles`, `<N> mappings`, `<N> cycles/map`.
pub fn mapbench_log(r: &MapbenchResult) -> String {
    let mut out = format!(
        "running zsmapbench... (method {}, {} thread{}, object {OBJECT_SIZE} B in class {} B, cycles: {})\n",
        r.method,
        r.threads,
        if r.threads == 1 { "" } else { "s" },
        r.class_size,
        r.cycle_source
    );
    for _ in &r.per_thread {
        out.push_str("starting zsmb_kthread\n");
    }
    for t in &r.per_thread {
        out.push_str(&format!(
            "{} cycles\n{} mappings\n{} cycles/map\nstopping zsmb_kthread\n",
            t.cycles, t.mappings, t.cycles_per_map
        ));
    }
    out.push_str(&format!(
        "zsmapbench complete: {:.1} cycles/map, {:.0} mappings/s per thread\n",
        r.cycles_per_map, r.maps_per_sec
    ));
    out
}

/// Human-readable report of a run.
pub fn zram_run(r: &ZramRunResult) -> String {
    format!(
        "zram: {} pages, algo {}, pool {}, {} thread(s)\n\
         mm_stat    {}\nio_stat    {}\nbd_stat    {}\ndebug_stat {}\n\
         write {:.0} MB/s ({:.3} CPU s, {} page faults), read {:.0} MB/s ({:.3} CPU s), \
         verified: {}\n",
        r.pages,
        r.algo,
        r.pool,
        r.threads,
        r.mm_stat,
        r.io_stat,
        r.bd_stat,
        r.debug_stat,
        r.write_mbps,
        r.write_cpu_secs,
        r.write_faults,
        r.read_mbps,
        r.read_cpu_secs,
        if r.verified { "yes" } else { "NO" }
    )
}

pub fn zram_speed(r: &ZramSpeed) -> String {
    let ratio =
        |x: Option<f64>| x.map_or("n/a (no kernel oracle)".to_string(), |v| format!("{v:.2}x"));
    let mbps = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.0}"));
    let mut out = format!(
        "{} pages, algo {}, {} rounds (medians; per round below)\n\
         zmem zram   write {:>7.0} MB/s  read {:>7.0} MB/s\n\
         kernel zram write {:>7} MB/s  read {:>7} MB/s\n\
         zmem/kernel write {}  read {}\n\
         compressor alone {:.0} MB/s; zram write / compressor = {:.2}\n\
         verified: {}\n",
        r.pages,
        r.algo,
        r.rounds.len(),
        r.zmem_write_mbps,
        r.zmem_read_mbps,
        mbps(r.kernel_write_mbps),
        mbps(r.kernel_read_mbps),
        ratio(r.write_ratio),
        ratio(r.read_ratio),
        r.compressor_mbps,
        r.engine_ratio,
        if r.verified { "yes" } else { "NO" }
    );
    out.push_str("round  zmem write  read  kernel write  read  write x  read x  engine\n");
    for (k, x) in r.rounds.iter().enumerate() {
        let rx = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
        out.push_str(&format!(
            "{:>5} {:>11.0} {:>5.0} {:>13} {:>5} {:>8} {:>7} {:>7.2}\n",
            k + 1,
            x.zmem_write_mbps,
            x.zmem_read_mbps,
            mbps(x.kernel_write_mbps),
            mbps(x.kernel_read_mbps),
            rx(x.write_ratio()),
            rx(x.read_ratio()),
            x.engine_ratio()
        ));
    }
    out
}

/// The table beside seed 001's numbers, then each allocator's histograms.
pub fn study(rows: &[AllocatorRow]) -> String {
    let mut s = format!(
        "{:<9} {:>14} {:>8} {:>7} {:>8} {:>9} {:>9} {:>9} {:>8} | {:>9} {:>9}\n",
        "allocator",
        "max pool B",
        "pool",
        "stored",
        "rejected",
        "store p50",
        "load p50",
        "total s",
        "time",
        "RFC pool",
        "RFC time"
    );
    for r in rows {
        let seed = SEED_001.iter().find(|(a, _, _)| *a == r.allocator);
        let (sp, st) = seed.map_or((String::new(), String::new()), |(_, p, t)| {
            (format!("{p:+.1}%"), format!("{t:+.1}%"))
        });
        s += &format!(
            "{:<9} {:>14} {:>+7.1}% {:>7} {:>8} {:>7}ns {:>7}ns {:>9.3} {:>+7.1}% | {:>9} {:>9}\n",
            r.allocator,
            r.max_pool_bytes,
            r.pool_vs_zsmalloc_pct,
            r.stored,
            r.rejected,
            r.store_hist.p50_ns,
            r.load_hist.p50_ns,
            r.total_secs,
            r.time_vs_zsmalloc_pct,
            sp,
            st
        );
    }
    if rows.iter().any(|r| !r.verified) {
        s += "WARNING: some pages did not come back intact\n";
    }
    for r in rows {
        s += &format!("\n*** {} ***\n", r.allocator);
        s += &render_hist("load_ns", &r.load_hist);
        s += &render_hist("store_ns", &r.store_hist);
    }
    s
}

/// The side-by-side report.
pub fn validation(v: &Validation) -> String {
    let s = &v.setup;
    let mut out = format!(
        "validate replay: {} accesses over {} pages ({} touched), RAM {} bytes, zram {}\n",
        s.accesses, s.pages, s.touched_pages, s.ram_bytes, s.algorithm
    );
    out += &format!("{:<18} {:>14} {:>14} {:>9}\n", "", "kernel", "zmem", "error");
    let rows = [
        ("swap-outs", v.kernel.swap_outs, v.zmem.swap_outs, v.error.swap_outs),
        ("swap-ins", v.kernel.swap_ins, v.zmem.swap_ins, v.error.swap_ins),
        (
            "peak pool bytes",
            v.kernel.peak_pool_bytes,
            v.zmem.peak_pool_bytes,
            v.error.peak_pool_bytes,
        ),
        (
            "final pool bytes",
            v.kernel.final_pool_bytes,
            v.zmem.final_pool_bytes,
            v.error.final_pool_bytes,
        ),
    ];
    let (k, z, e) = (&v.kernel, &v.zmem, &v.error);
    let file = [
        ("file faults", k.file_faults, z.file_faults, e.file_faults),
        ("file refaults", k.file_refaults, z.file_refaults, e.file_refaults),
    ];
    // Page cache rows only for a trace with file reads.
    let file = file.into_iter().filter(|_| k.file_faults + z.file_faults > 0);
    for (name, k, z, e) in rows.into_iter().chain(file) {
        out += &format!("{name:<18} {k:>14} {z:>14} {:>9}\n", percent(e));
    }
    let ra = &v.readahead;
    let kernel_ra = |f: fn(&zmem_validate::replay::ReadaheadCounters) -> u64| {
        ra.kernel.as_ref().map_or_else(|| "n/a".to_string(), |c| f(c).to_string())
    };
    for (name, k, z) in [
        ("swap_ra", kernel_ra(|c| c.swap_ra), ra.zmem.swap_ra),
        ("swap_ra_hit", kernel_ra(|c| c.swap_ra_hit), ra.zmem.swap_ra_hit),
    ] {
        out += &format!("{name:<18} {k:>14} {z:>14} {:>9}\n", "-");
    }
    out += &format!(
        "readahead: {} with page-cluster {} on both sides; zram is synchronous, so neither \
         side's faults read ahead; the kernel's swap_ra and swap_ra_hit are {}\n",
        ra.mode, ra.page_cluster, ra.kernel_scope
    );
    let k = &v.kernel_run;
    out += &format!(
        "kernel: player overhead {} bytes (replay RAM {} pages), {} major faults, {} pages in \
         swap at the end, {} pool samples, {:.2} s\n",
        k.player_overhead_bytes,
        s.replay_ram_pages,
        k.cgroup_major_faults,
        k.cgroup_swap_pages,
        k.pool_samples,
        k.play_secs
    );
    if v.kernel_runs.len() + v.kernel_failures.len() > 1 {
        let outs: Vec<String> = v.kernel_runs.iter().map(|r| r.swap_outs.to_string()).collect();
        out += &format!(
            "kernel: {} runs, the median's figures above; swap-outs of each: {}\n",
            v.kernel_runs.len(),
            outs.join(", ")
        );
    }
    for f in &v.kernel_failures {
        out += &format!("kernel: a run failed: {f}\n");
    }
    if !k.other_swaps.is_empty() {
        out += &format!(
            "note: other swap areas were active and may have shared the device: {}\n",
            k.other_swaps.join(", ")
        );
    }
    if !v.verified {
        out += "replay: pages swapped in differ from the pages swapped out\n";
    }
    out
}

fn percent(e: Option<f64>) -> String {
    e.map_or_else(|| "n/a".into(), |e| format!("{:+.1} %", e * 100.0))
}
